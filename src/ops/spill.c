/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spill files (see spill.h). A spill is written once and read once by the
 * process that wrote it, so the format is the columns' own buffers, with
 * no encoding and no durability: no fsync, no temporary name, and nothing
 * held in memory between writes but the one chunk being written. An
 * operator may keep many spills open for writing at once (one per hash
 * partition) at no memory cost.
 *
 * File: chunks of at most EM_BATCH_CAP rows, each written and read with
 * one call:
 *   header   "EMSP", uint32 columns, int64 rows, int64 bytes that follow
 *   column   uint8 has-validity, [validity bitmap], values (booleans: a
 *            bitmap; strings: rows + 1 int32 offsets from 0; none for the
 *            NULL type), [string bytes: offsets[rows] of them]
 * in the machine's byte order. Reading checks every length against the
 * schema and the bytes left, so a damaged file fails with EM_ERR_CORRUPT
 * naming it instead of crashing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/op_util.h"
#include "ops/spill.h"

#define SPILL_MAGIC 0x50534D45u /* "EMSP" */

struct em_spill {
    char *path;
    em_schema schema;
    em_pool *pool;
    int fd;        /* writing, then reading; -1 between */
    bool created;  /* the file exists under path */
    bool finished; /* no more writes */
    em_batch *batch; /* the last batch read */
    uint8_t *rbuf;   /* the last chunk read */
    int64_t rcap;
    int64_t rows, bytes;
};

static atomic_long spill_seq;

em_status em_spill_create(const em_schema *schema, const char *dir, em_pool *pool, em_spill **out,
                          em_error *err) {
    *out = NULL;
    em_spill *s = calloc(1, sizeof *s);
    if (!s)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a spill file");
    s->pool = pool;
    s->fd = -1;
    em_status st = em_schema_init(&s->schema, schema->n_fields, err);
    for (int i = 0; st == EM_OK && i < schema->n_fields; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%d", i);
        st = em_schema_set(&s->schema, i, name, schema->fields[i].type, true, err);
    }
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/ember-spill-%ld-%ld", dir && *dir ? dir : "/tmp",
             (long)getpid(), (long)atomic_fetch_add(&spill_seq, 1));
    if (st == EM_OK && !(s->path = strdup(path)))
        st = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a spill file");
    if (st == EM_OK) {
        s->fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (s->fd < 0)
            st = EM_FAIL(err, EM_ERR_IO, "spill file '%s': cannot create: %s", s->path,
                         strerror(errno));
        s->created = s->fd >= 0;
    }
    if (st != EM_OK) {
        em_spill_free(s);
        return st;
    }
    *out = s;
    return EM_OK;
}

static em_status spill_put(em_spill *s, const void *p, int64_t n, em_error *err) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(s->fd, c, (size_t)n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return EM_FAIL(err, EM_ERR_IO, "spill file '%s': write failed: %s", s->path,
                           k < 0 ? strerror(errno) : "no progress");
        c += k;
        n -= k;
        s->bytes += k;
    }
    return EM_OK;
}

/* Bytes of the values buffer of n rows of type t. */
static int64_t spill_values_bytes(em_type t, int64_t n) {
    if (t.id == EM_TYPE_NULL)
        return 0;
    if (t.id == EM_TYPE_BOOLEAN)
        return em_bitmap_bytes(n);
    if (em_type_is_varlen(t))
        return (n + 1) * 4;
    return n * em_type_width(t);
}

/* Bytes that rows sel[0..n) of c take in a chunk. */
static int64_t spill_column_bytes(const em_column *c, const int32_t *sel, int64_t n) {
    int64_t bytes = 1 + (c->validity ? em_bitmap_bytes(n) : 0) + spill_values_bytes(c->type, n);
    if (em_type_is_varlen(c->type)) {
        const int32_t *o = em_column_offsets(c);
        for (int64_t i = 0; i < n; i++)
            bytes += o[sel[i] + 1] - o[sel[i]];
    }
    return bytes;
}

/* Bits sel[0..n) of a bitmap, packed at p. */
static uint8_t *spill_pack_bits(const uint8_t *bits, const int32_t *sel, int64_t n, uint8_t *p) {
    int64_t nb = em_bitmap_bytes(n);
    memset(p, 0, (size_t)nb);
    for (int64_t i = 0; i < n; i++)
        if (em_bit_get(bits, sel[i]))
            em_bit_set(p, i);
    return p + nb;
}

/* Rows sel[0..n) of c in the chunk layout at p; returns the end. */
static uint8_t *spill_pack_column(const em_column *c, const int32_t *sel, int64_t n, uint8_t *p) {
    *p++ = c->validity != NULL;
    if (c->validity)
        p = spill_pack_bits(c->validity->data, sel, n, p);
    if (c->type.id == EM_TYPE_NULL)
        return p;
    const uint8_t *v = c->values->data;
    if (c->type.id == EM_TYPE_BOOLEAN)
        return spill_pack_bits(v, sel, n, p);
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

typedef struct spill_chunk_header {
    uint32_t magic, n_cols;
    int64_t rows, bytes; /* bytes: the columns', after the header */
} spill_chunk_header;

em_status em_spill_write(em_spill *s, const em_batch *b, em_error *err) {
    if (s->finished || s->fd < 0)
        return EM_FAIL(err, EM_ERR_INTERNAL, "spill file '%s': write after the end", s->path);
    if (b->n_cols != s->schema.n_fields)
        return EM_FAIL(err, EM_ERR_INTERNAL, "spill file '%s': %d columns written, %d expected",
                       s->path, b->n_cols, s->schema.n_fields);
    int64_t rows = em_batch_rows(b);
    int32_t iota[EM_BATCH_CAP];
    uint8_t *buf = NULL; /* one chunk, packed: one write per chunk */
    int64_t cap = 0;
    em_status st = EM_OK;
    for (int64_t at = 0; st == EM_OK && at < rows; at += EM_BATCH_CAP) {
        int64_t n = rows - at < EM_BATCH_CAP ? rows - at : EM_BATCH_CAP;
        const int32_t *sel = b->sel ? b->sel + at : iota;
        if (!b->sel)
            for (int64_t i = 0; i < n; i++)
                iota[i] = (int32_t)(at + i);
        int64_t size = (int64_t)sizeof(spill_chunk_header);
        for (int c = 0; c < b->n_cols; c++)
            size += spill_column_bytes(&b->cols[c], sel, n);
        if (size > cap) {
            em_pool_free(s->pool, buf, cap);
            cap = 0;
            if (!(buf = em_pool_alloc(s->pool, size, err))) {
                st = err ? err->code : EM_ERR_NOMEM;
                break;
            }
            cap = size;
        }
        spill_chunk_header h = {SPILL_MAGIC, (uint32_t)b->n_cols, n,
                                size - (int64_t)sizeof(spill_chunk_header)};
        memcpy(buf, &h, sizeof h);
        uint8_t *p = buf + sizeof h;
        for (int c = 0; c < b->n_cols; c++)
            p = spill_pack_column(&b->cols[c], sel, n, p);
        st = spill_put(s, buf, size, err);
    }
    if (buf)
        em_pool_free(s->pool, buf, cap);
    if (st == EM_OK)
        s->rows += rows;
    return st;
}

em_status em_spill_finish(em_spill *s, int64_t *bytes, em_error *err) {
    if (!s->finished) {
        s->finished = true;
        int fd = s->fd;
        s->fd = -1;
        if (fd >= 0 && close(fd) != 0)
            return EM_FAIL(err, EM_ERR_IO, "spill file '%s': close failed: %s", s->path,
                           strerror(errno));
    }
    if (bytes)
        *bytes = s->bytes;
    return EM_OK;
}

/* Reads exactly n bytes. With eof, an end of file before the first byte
 * sets *eof instead of failing. */
static em_status spill_get(em_spill *s, void *p, int64_t n, bool *eof, em_error *err) {
    char *c = p;
    int64_t got = 0;
    while (got < n) {
        ssize_t k = read(s->fd, c + got, (size_t)(n - got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return EM_FAIL(err, EM_ERR_IO, "spill file '%s': read failed: %s", s->path,
                           strerror(errno));
        if (k == 0) {
            if (eof && got == 0) {
                *eof = true;
                return EM_OK;
            }
            return EM_FAIL(err, EM_ERR_CORRUPT, "spill file '%s': truncated", s->path);
        }
        got += k;
    }
    return EM_OK;
}

/* A chunk being parsed: the bytes left of it. */
typedef struct spill_cursor {
    const uint8_t *p, *end;
} spill_cursor;

/* A fresh buffer holding the chunk's next n bytes. */
static em_status spill_get_buffer(em_spill *s, spill_cursor *cur, int64_t n, em_buffer **out,
                                  em_error *err) {
    if (n < 0 || n > cur->end - cur->p)
        return EM_FAIL(err, EM_ERR_CORRUPT, "spill file '%s': a chunk is shorter than its columns",
                       s->path);
    EM_TRY(em_buffer_create(s->pool, n, out, err));
    if (n > 0)
        memcpy((*out)->data, cur->p, (size_t)n);
    (*out)->size = n;
    cur->p += n;
    return EM_OK;
}

static em_status spill_get_column(em_spill *s, spill_cursor *cur, em_column *c, int64_t n,
                                  em_error *err) {
    c->length = n;
    c->null_count = -1;
    if (cur->p >= cur->end)
        return EM_FAIL(err, EM_ERR_CORRUPT, "spill file '%s': a chunk is shorter than its columns",
                       s->path);
    if (*cur->p++)
        EM_TRY(spill_get_buffer(s, cur, em_bitmap_bytes(n), &c->validity, err));
    int64_t vb = spill_values_bytes(c->type, n);
    if (vb > 0)
        EM_TRY(spill_get_buffer(s, cur, vb, &c->values, err));
    if (!em_type_is_varlen(c->type))
        return EM_OK;
    const int32_t *off = em_column_offsets(c);
    bool ok = off[0] == 0;
    for (int64_t i = 0; ok && i < n; i++)
        ok = off[i + 1] >= off[i];
    if (!ok)
        return EM_FAIL(err, EM_ERR_CORRUPT, "spill file '%s': bad string offsets", s->path);
    return spill_get_buffer(s, cur, off[n], &c->data, err);
}

em_status em_spill_read(em_spill *s, em_batch **out, em_error *err) {
    *out = NULL;
    if (!s->finished)
        EM_TRY(em_spill_finish(s, NULL, err));
    if (!s->batch)
        EM_TRY(opu_shell_create(&s->schema, s->pool, &s->batch, err));
    opu_shell_release(s->batch);
    if (s->fd < 0) {
        if (!s->created)
            return EM_FAIL(err, EM_ERR_INTERNAL, "spill file '%s' was not created", s->path);
        s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0)
            return EM_FAIL(err, EM_ERR_IO, "spill file '%s': cannot open: %s", s->path,
                           strerror(errno));
    }
    spill_chunk_header h;
    bool eof = false;
    EM_TRY(spill_get(s, &h, sizeof h, &eof, err));
    if (eof)
        return EM_DONE;
    if (h.magic != SPILL_MAGIC || h.n_cols != (uint32_t)s->schema.n_fields || h.rows <= 0 ||
        h.rows > EM_BATCH_CAP || h.bytes < 0 || h.bytes > ((int64_t)1 << 40))
        return EM_FAIL(err, EM_ERR_CORRUPT, "spill file '%s': bad chunk header", s->path);
    /* the chunk in one read, then copied into the batch's buffers */
    if (h.bytes > s->rcap) {
        em_pool_free(s->pool, s->rbuf, s->rcap);
        s->rcap = 0;
        if (!(s->rbuf = em_pool_alloc(s->pool, h.bytes, err)))
            return err ? err->code : EM_ERR_NOMEM;
        s->rcap = h.bytes;
    }
    EM_TRY(spill_get(s, s->rbuf, h.bytes, NULL, err));
    spill_cursor cur = {s->rbuf, s->rbuf + h.bytes};
    em_batch *b = s->batch;
    for (int c = 0; c < b->n_cols; c++)
        EM_TRY(spill_get_column(s, &cur, &b->cols[c], h.rows, err));
    if (cur.p != cur.end)
        return EM_FAIL(err, EM_ERR_CORRUPT, "spill file '%s': a chunk is longer than its columns",
                       s->path);
    b->n_rows = h.rows;
    *out = b;
    return EM_OK;
}

int64_t em_spill_rows(const em_spill *s) { return s->rows; }

void em_spill_free(em_spill *s) {
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->created)
        unlink(s->path);
    em_batch_destroy(s->batch);
    em_pool_free(s->pool, s->rbuf, s->rcap);
    free(s->path);
    em_schema_reset(&s->schema);
    free(s);
}
