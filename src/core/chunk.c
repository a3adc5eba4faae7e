/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chunks and blocks (include/ember/chunk.h): packing a selection of a
 * batch's rows into the chunk layout, and reading it back with every length
 * checked. Spill files are sequences of chunks; a shuffle block is a chunk
 * behind its column types.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/chunk.h"

/* Bytes of the values buffer of n rows of type t. */
static int64_t values_bytes(em_type t, int64_t n) {
    if (t.id == EM_TYPE_NULL)
        return 0;
    if (t.id == EM_TYPE_BOOLEAN)
        return em_bitmap_bytes(n);
    if (em_type_is_varlen(t))
        return (n + 1) * 4;
    return n * em_type_width(t);
}

/* Bytes that rows sel[0..n) of c take in a chunk. */
static int64_t column_bytes(const em_column *c, const int32_t *sel, int64_t n) {
    int64_t bytes = 1 + (c->validity ? em_bitmap_bytes(n) : 0) + values_bytes(c->type, n);
    if (em_type_is_varlen(c->type)) {
        const int32_t *o = em_column_offsets(c);
        for (int64_t i = 0; i < n; i++)
            bytes += o[sel[i] + 1] - o[sel[i]];
    }
    return bytes;
}

/* Bits sel[0..n) of a bitmap, packed at p. */
static uint8_t *pack_bits(const uint8_t *bits, const int32_t *sel, int64_t n, uint8_t *p) {
    int64_t nb = em_bitmap_bytes(n);
    memset(p, 0, (size_t)nb);
    for (int64_t i = 0; i < n; i++)
        if (em_bit_get(bits, sel[i]))
            em_bit_set(p, i);
    return p + nb;
}

/* Rows sel[0..n) of c in the chunk layout at p; returns the end. */
static uint8_t *pack_column(const em_column *c, const int32_t *sel, int64_t n, uint8_t *p) {
    *p++ = c->validity != NULL;
    if (c->validity)
        p = pack_bits(c->validity->data, sel, n, p);
    if (c->type.id == EM_TYPE_NULL)
        return p;
    const uint8_t *v = c->values->data;
    if (c->type.id == EM_TYPE_BOOLEAN)
        return pack_bits(v, sel, n, p);
    if (em_type_is_varlen(c->type)) {
        const int32_t *o = em_column_offsets(c);
        int32_t at = 0;
        memcpy(p, &at, 4);
        for (int64_t i = 0; i < n; i++) {
            at += o[sel[i] + 1] - o[sel[i]];
            memcpy(p + 4 * (i + 1), &at, 4);
        }
        p += 4 * (n + 1);
        for (int64_t i = 0; i < n; i++) {
            int32_t len = o[sel[i] + 1] - o[sel[i]];
            memcpy(p, c->data->data + o[sel[i]], (size_t)len);
            p += len;
        }
        return p;
    }
    int w = em_type_width(c->type);
    for (int64_t i = 0; i < n; i++, p += w)
        memcpy(p, v + (int64_t)sel[i] * w, (size_t)w);
    return p;
}

int64_t em_chunk_bytes(const em_batch *b, const int32_t *sel, int64_t n) {
    int64_t size = (int64_t)sizeof(em_chunk_header);
    for (int c = 0; c < b->n_cols; c++)
        size += column_bytes(&b->cols[c], sel, n);
    return size;
}

uint8_t *em_chunk_pack(const em_batch *b, const int32_t *sel, int64_t n, uint8_t *p) {
    em_chunk_header h = {EM_CHUNK_MAGIC, (uint32_t)b->n_cols, n,
                         em_chunk_bytes(b, sel, n) - (int64_t)sizeof(em_chunk_header)};
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    for (int c = 0; c < b->n_cols; c++)
        p = pack_column(&b->cols[c], sel, n, p);
    return p;
}

/* The bytes left of a chunk being read. */
typedef struct chunk_cursor {
    const uint8_t *p, *end;
    const char *what;
} chunk_cursor;

static em_status short_chunk(const chunk_cursor *cur, em_error *err) {
    return EM_FAIL(err, EM_ERR_CORRUPT, "%s: a chunk is shorter than its columns", cur->what);
}

/* A fresh buffer holding the chunk's next n bytes. */
static em_status take_buffer(chunk_cursor *cur, int64_t n, em_pool *pool, em_buffer **out,
                             em_error *err) {
    if (n < 0 || n > cur->end - cur->p)
        return short_chunk(cur, err);
    EM_TRY(em_buffer_create(pool, n, out, err));
    if (n > 0)
        memcpy((*out)->data, cur->p, (size_t)n);
    (*out)->size = n;
    cur->p += n;
    return EM_OK;
}

static em_status take_column(chunk_cursor *cur, em_column *c, int64_t n, em_pool *pool,
                             em_error *err) {
    c->length = n;
    c->null_count = -1;
    if (cur->p >= cur->end)
        return short_chunk(cur, err);
    if (*cur->p++)
        EM_TRY(take_buffer(cur, em_bitmap_bytes(n), pool, &c->validity, err));
    /* every type but NULL has a values buffer, if empty (a block of no rows) */
    if (c->type.id != EM_TYPE_NULL)
        EM_TRY(take_buffer(cur, values_bytes(c->type, n), pool, &c->values, err));
    if (!em_type_is_varlen(c->type))
        return EM_OK;
    const int32_t *off = em_column_offsets(c);
    bool ok = off[0] == 0;
    for (int64_t i = 0; ok && i < n; i++)
        ok = off[i + 1] >= off[i];
    if (!ok)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad string offsets", cur->what);
    return take_buffer(cur, off[n], pool, &c->data, err);
}

em_status em_chunk_unpack(const em_chunk_header *h, const uint8_t *body, em_batch *into,
                          em_pool *pool, const char *what, em_error *err) {
    chunk_cursor cur = {body, body + h->bytes, what};
    for (int c = 0; c < into->n_cols; c++)
        EM_TRY(take_column(&cur, &into->cols[c], h->rows, pool, err));
    if (cur.p != cur.end)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: a chunk is longer than its columns", what);
    into->n_rows = h->rows;
    return EM_OK;
}

/* ------------------------------------------------------------------ blocks */

em_status em_block_append(const em_batch *b, const int32_t *sel, int64_t n, em_strbuf *out,
                          em_error *err) {
    uint32_t head[2] = {EM_BLOCK_MAGIC, (uint32_t)b->n_cols};
    int64_t types = 4 * (int64_t)b->n_cols;
    int64_t size = (int64_t)sizeof head + types + em_chunk_bytes(b, sel, n);
    EM_TRY(em_strbuf_reserve(out, (size_t)size, err));
    uint8_t *p = (uint8_t *)out->data + out->len;
    memcpy(p, head, sizeof head);
    p += sizeof head;
    for (int c = 0; c < b->n_cols; c++) {
        em_type t = b->cols[c].type;
        p[0] = (uint8_t)t.id;
        p[1] = (uint8_t)t.precision;
        p[2] = (uint8_t)t.scale;
        p[3] = 0;
        p += 4;
    }
    em_chunk_pack(b, sel, n, p);
    out->len += (size_t)size;
    out->data[out->len] = '\0';
    return EM_OK;
}

em_status em_block_read(const uint8_t *p, int64_t len, em_pool *pool, em_batch **out,
                        const char *what, em_error *err) {
    *out = NULL;
    uint32_t head[2];
    if (len < (int64_t)sizeof head)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: %lld bytes is no block", what, (long long)len);
    memcpy(head, p, sizeof head);
    int64_t n_cols = head[1];
    int64_t at = (int64_t)sizeof head + 4 * n_cols;
    if (head[0] != EM_BLOCK_MAGIC || n_cols > 100000 ||
        at + (int64_t)sizeof(em_chunk_header) > len)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad block header", what);
    em_schema schema = {0};
    EM_TRY(em_schema_init(&schema, (int)n_cols, err));
    em_status s = EM_OK;
    for (int64_t c = 0; s == EM_OK && c < n_cols; c++) {
        const uint8_t *t = p + sizeof head + 4 * c;
        em_type type = {(em_type_id)t[0], (int8_t)t[1], (int8_t)t[2]};
        bool ok = t[0] < EM_TYPE_COUNT_ &&
                  (type.id != EM_TYPE_DECIMAL ||
                   (type.precision >= 1 && type.precision <= EM_DECIMAL_MAX_PRECISION &&
                    type.scale >= 0 && type.scale <= type.precision));
        char name[24];
        snprintf(name, sizeof name, "c%lld", (long long)c);
        s = ok ? em_schema_set(&schema, (int)c, name, type, true, err)
               : EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad type of column %lld", what, (long long)c);
    }
    em_chunk_header h;
    if (s == EM_OK) {
        memcpy(&h, p + at, sizeof h);
        at += (int64_t)sizeof h;
        if (h.magic != EM_CHUNK_MAGIC || h.n_cols != (uint32_t)n_cols || h.rows < 0 ||
            h.rows > EM_BLOCK_MAX_ROWS || h.bytes != len - at)
            s = EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad chunk header", what);
    }
    em_batch *b = NULL;
    if (s == EM_OK)
        s = em_batch_create(&schema, 0, pool, &b, err);
    /* em_batch_create made empty columns: drop their buffers for the chunk's */
    for (int c = 0; s == EM_OK && c < b->n_cols; c++) {
        em_type t = b->cols[c].type;
        em_column_reset(&b->cols[c]);
        b->cols[c].type = t;
    }
    if (s == EM_OK)
        s = em_chunk_unpack(&h, p + at, b, pool, what, err);
    em_schema_reset(&schema);
    if (s != EM_OK) {
        em_batch_destroy(b);
        return s;
    }
    *out = b;
    return EM_OK;
}
