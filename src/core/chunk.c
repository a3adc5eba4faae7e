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

/* Bytes that rows sel[0..n) of c take in a chunk at most (narrowed values
 * take less). */
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

/* A column's first byte. */
enum { COL_VALIDITY = 1, COL_NARROW = 2 };

/* Whether values of type t may be written narrowed (as offsets from a base). */
static bool narrowable(em_type t) {
    switch (t.id) {
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
    case EM_TYPE_DECIMAL:
        return true;
    default:
        return false;
    }
}

/* Row i of an integer-like column as an int64; false for a decimal that
 * does not fit one. */
static inline bool int_at(const em_column *c, int64_t i, int64_t *v) {
    const uint8_t *p = c->values->data;
    switch (c->type.id) {
    case EM_TYPE_INT:
    case EM_TYPE_DATE: {
        int32_t x;
        memcpy(&x, p + 4 * i, 4);
        *v = x;
        return true;
    }
    case EM_TYPE_DECIMAL: {
        em_i128 x;
        memcpy(&x, p + 16 * i, 16);
        *v = (int64_t)x;
        return (em_i128)*v == x;
    }
    default:
        memcpy(v, p + 8 * i, 8);
        return true;
    }
}

/* The width (1, 2, 4 or 8 bytes, below the type's own) that rows sel[0..n)
 * of c take as unsigned offsets from their least value *base; 0 when they
 * take no less than the type's width. Shuffle keys, prices and dates span
 * little of their type's range, so blocks shrink by half or more before
 * Spark compresses them. Null rows do not count (they read back as base). */
static int narrow_width(const em_column *c, const int32_t *sel, int64_t n, int64_t *base) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int tw = em_type_width(c->type);
    const uint8_t *p = c->values->data;
    if (!c->validity && tw != 16) {
        /* the common case: a plain min/max pass over one width */
#define SPAN_OF(T)                                                                                 \
    for (int64_t k = 0; k < n; k++) {                                                              \
        T x;                                                                                       \
        memcpy(&x, p + sizeof x * (int64_t)sel[k], sizeof x);                                      \
        lo = x < lo ? x : lo;                                                                      \
        hi = x > hi ? x : hi;                                                                      \
    }
        if (tw == 4)
            SPAN_OF(int32_t)
        else
            SPAN_OF(int64_t)
#undef SPAN_OF
    } else {
        for (int64_t k = 0; k < n; k++) {
            int64_t v;
            if (c->validity && !em_bit_get(c->validity->data, sel[k]))
                continue;
            if (!int_at(c, sel[k], &v))
                return 0;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    if (lo > hi)
        lo = hi = 0;
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    int w = span <= UINT8_MAX ? 1 : span <= UINT16_MAX ? 2 : span <= UINT32_MAX ? 4 : 8;
    *base = lo;
    /* the width byte and base must pay for themselves */
    return w < tw && 9 + n * w < n * tw ? w : 0;
}

/* Rows sel[0..n) of c in the chunk layout at p; returns the end. */
static uint8_t *pack_column(const em_column *c, const int32_t *sel, int64_t n, uint8_t *p) {
    int64_t base = 0;
    int w = narrowable(c->type) ? narrow_width(c, sel, n, &base) : 0;
    *p++ = (uint8_t)((c->validity ? COL_VALIDITY : 0) | (w ? COL_NARROW : 0));
    if (c->validity)
        p = pack_bits(c->validity->data, sel, n, p);
    if (c->type.id == EM_TYPE_NULL)
        return p;
    const uint8_t *v = c->values->data;
    if (w) {
        *p++ = (uint8_t)w;
        memcpy(p, &base, 8);
        p += 8;
        int tw = em_type_width(c->type);
        if (c->validity || tw == 16) {
            for (int64_t k = 0; k < n; k++, p += w) {
                int64_t x = 0;
                if (!c->validity || em_bit_get(c->validity->data, sel[k]))
                    (void)int_at(c, sel[k], &x);
                uint64_t u = (uint64_t)x - (uint64_t)base;
                /* little-endian machines only (the layout is the machine's order) */
                memcpy(p, &u, (size_t)w);
            }
            return p;
        }
        /* no nulls: a loop per (type width, stored width) */
#define NARROW(IN_T, OUT_T)                                                                        \
    for (int64_t k = 0; k < n; k++) {                                                              \
        IN_T x;                                                                                    \
        memcpy(&x, v + sizeof x * (int64_t)sel[k], sizeof x);                                      \
        OUT_T u = (OUT_T)((uint64_t)(int64_t)x - (uint64_t)base);                                  \
        memcpy(p + sizeof u * k, &u, sizeof u);                                                    \
    }
#define NARROW_FROM(IN_T)                                                                          \
    switch (w) {                                                                                   \
    case 1: NARROW(IN_T, uint8_t) break;                                                           \
    case 2: NARROW(IN_T, uint16_t) break;                                                          \
    case 4: NARROW(IN_T, uint32_t) break;                                                          \
    default: NARROW(IN_T, uint64_t) break;                                                         \
    }
        if (tw == 4)
            NARROW_FROM(int32_t)
        else
            NARROW_FROM(int64_t)
#undef NARROW_FROM
#undef NARROW
        return p + n * w;
    }
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
    int tw = em_type_width(c->type);
    for (int64_t i = 0; i < n; i++, p += tw)
        memcpy(p, v + (int64_t)sel[i] * tw, (size_t)tw);
    return p;
}

int64_t em_chunk_bytes(const em_batch *b, const int32_t *sel, int64_t n) {
    int64_t size = (int64_t)sizeof(em_chunk_header);
    for (int c = 0; c < b->n_cols; c++)
        size += column_bytes(&b->cols[c], sel, n);
    return size;
}

uint8_t *em_chunk_pack(const em_batch *b, const int32_t *sel, int64_t n, uint8_t *p) {
    uint8_t *start = p;
    p += sizeof(em_chunk_header);
    for (int c = 0; c < b->n_cols; c++)
        p = pack_column(&b->cols[c], sel, n, p);
    em_chunk_header h = {EM_CHUNK_MAGIC, (uint32_t)b->n_cols, n,
                         (int64_t)(p - start) - (int64_t)sizeof(em_chunk_header)};
    memcpy(start, &h, sizeof h);
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

/* n narrowed values of c: a width, a base, then offsets from the base,
 * widened back into a fresh values buffer. */
static em_status take_narrowed(chunk_cursor *cur, em_column *c, int64_t n, em_pool *pool,
                               em_error *err) {
    if (cur->end - cur->p < 9)
        return short_chunk(cur, err);
    int w = *cur->p++;
    int64_t base;
    memcpy(&base, cur->p, 8);
    cur->p += 8;
    int tw = em_type_width(c->type);
    if ((w != 1 && w != 2 && w != 4 && w != 8) || w >= tw)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad width %d of narrowed values", cur->what, w);
    if (n > (cur->end - cur->p) / w)
        return short_chunk(cur, err);
    EM_TRY(em_buffer_create(pool, n * tw, &c->values, err));
    c->values->size = n * tw;
    uint8_t *out = c->values->data;
    const uint8_t *in = cur->p;
    /* a loop per (stored width, type width): each a plain widening loop */
#define WIDEN(IN_T, OUT_T)                                                                         \
    for (int64_t i = 0; i < n; i++) {                                                              \
        IN_T u;                                                                                    \
        memcpy(&u, in + sizeof u * i, sizeof u);                                                   \
        OUT_T y = (OUT_T)(int64_t)((uint64_t)base + u);                                            \
        memcpy(out + sizeof y * i, &y, sizeof y);                                                  \
    }
#define WIDEN_TO(OUT_T)                                                                            \
    switch (w) {                                                                                   \
    case 1: WIDEN(uint8_t, OUT_T) break;                                                           \
    case 2: WIDEN(uint16_t, OUT_T) break;                                                          \
    case 4: WIDEN(uint32_t, OUT_T) break;                                                          \
    default: WIDEN(uint64_t, OUT_T) break;                                                         \
    }
    if (tw == 4)
        WIDEN_TO(int32_t)
    else if (tw == 8)
        WIDEN_TO(int64_t)
    else
        WIDEN_TO(em_i128)
#undef WIDEN_TO
#undef WIDEN
    cur->p += n * w;
    return EM_OK;
}

static em_status take_column(chunk_cursor *cur, em_column *c, int64_t n, em_pool *pool,
                             em_error *err) {
    c->length = n;
    c->null_count = -1;
    if (cur->p >= cur->end)
        return short_chunk(cur, err);
    uint8_t flags = *cur->p++;
    if ((flags & ~(COL_VALIDITY | COL_NARROW)) || ((flags & COL_NARROW) && !narrowable(c->type)))
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: bad column flags %#x", cur->what, flags);
    if (flags & COL_VALIDITY)
        EM_TRY(take_buffer(cur, em_bitmap_bytes(n), pool, &c->validity, err));
    if (flags & COL_NARROW)
        return take_narrowed(cur, c, n, pool, err);
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
    uint8_t *end = em_chunk_pack(b, sel, n, p);
    out->len = (size_t)(end - (uint8_t *)out->data);
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
