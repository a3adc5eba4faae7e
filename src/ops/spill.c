/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spill files (see spill.h). A spill is written once and read once by the
 * process that wrote it, so the format is the columns' own buffers, with
 * no encoding and no durability: no fsync, no temporary name, and nothing
 * held in memory between writes but the one chunk being written. An
 * operator may keep many spills open for writing at once (one per hash
 * partition) at no memory cost.
 *
 * The file has no name (O_TMPFILE; where the file system cannot, it is
 * unlinked as soon as it is created) and lives on through its descriptor,
 * which stays open from the first write to the last read: a process killed
 * at any point (SIGKILL included) leaves no spill behind.
 *
 * File: chunks (include/ember/chunk.h) of at most EM_BATCH_CAP rows, each
 * written and read with one call. Reading checks every length against the
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

#include "core/invariant.h"
#include "ember/chunk.h"
#include "ops/op_util.h"
#include "ops/spill.h"

struct em_spill {
    char *path;
    em_schema schema;
    em_pool *pool;
    int fd;        /* from creation to free (-1: not created); the file has no name */
    bool reading;  /* rewound for reading */
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
        /* without a name from the start where the file system can (a kill
         * between creating and unlinking would leave the name behind) */
        s->fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (s->fd < 0) {
            s->fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (s->fd >= 0)
                unlink(s->path);
        }
        if (s->fd < 0)
            st = EM_FAIL(err, EM_ERR_IO, "spill file '%s': cannot create: %s", s->path,
                         strerror(errno));
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

em_status em_spill_write(em_spill *s, const em_batch *b, em_error *err) {
    if (s->finished || s->fd < 0)
        return EM_UNREACHABLE(err, "spill file '%s': write after the end", s->path);
    if (b->n_cols != s->schema.n_fields)
        return EM_UNREACHABLE(err, "spill file '%s': %d columns written, %d expected",
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
        int64_t size = em_chunk_bytes(b, sel, n);
        if (size > cap) {
            em_pool_free(s->pool, buf, cap);
            cap = 0;
            if (!(buf = em_pool_alloc(s->pool, size, err))) {
                st = err ? err->code : EM_ERR_NOMEM;
                break;
            }
            cap = size;
        }
        st = spill_put(s, buf, em_chunk_pack(b, sel, n, buf) - buf, err);
    }
    if (buf)
        em_pool_free(s->pool, buf, cap);
    if (st == EM_OK)
        s->rows += rows;
    return st;
}

em_status em_spill_finish(em_spill *s, int64_t *bytes, em_error *err) {
    (void)err;
    s->finished = true;
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

em_status em_spill_read(em_spill *s, em_batch **out, em_error *err) {
    *out = NULL;
    if (!s->finished)
        EM_TRY(em_spill_finish(s, NULL, err));
    if (!s->batch)
        EM_TRY(em_opu_shell_create(&s->schema, s->pool, &s->batch, err));
    em_opu_shell_release(s->batch);
    if (!s->reading) {
        if (s->fd < 0)
            return EM_UNREACHABLE(err, "spill file '%s' was not created", s->path);
        if (lseek(s->fd, 0, SEEK_SET) != 0)
            return EM_FAIL(err, EM_ERR_IO, "spill file '%s': cannot rewind: %s", s->path,
                           strerror(errno));
        s->reading = true;
    }
    em_chunk_header h;
    bool eof = false;
    EM_TRY(spill_get(s, &h, sizeof h, &eof, err));
    if (eof)
        return EM_DONE;
    if (h.magic != EM_CHUNK_MAGIC || h.n_cols != (uint32_t)s->schema.n_fields || h.rows <= 0 ||
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
    char what[300];
    snprintf(what, sizeof what, "spill file '%s'", s->path);
    EM_TRY(em_chunk_unpack(&h, s->rbuf, s->batch, s->pool, what, err));
    *out = s->batch;
    return EM_OK;
}

int64_t em_spill_rows(const em_spill *s) { return s->rows; }

void em_spill_free(em_spill *s) {
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    em_batch_destroy(s->batch);
    em_pool_free(s->pool, s->rbuf, s->rcap);
    free(s->path);
    em_schema_reset(&s->schema);
    free(s);
}
