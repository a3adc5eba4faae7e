/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spill files (see spill.h). Parquet is used because it already round-trips
 * every type a column holds, compresses, and reads back batch by batch
 * without holding the file: a spill is written once and read once, so the
 * options favour small buffers over encoding effort.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember/parquet.h"
#include "ops/spill.h"

struct em_spill {
    char *path;
    em_schema schema; /* the caller's types under unique names */
    em_pool *pool;
    em_pq_writer *writer; /* while writing */
    bool written;         /* the file exists under path */
    em_pq_file *file;     /* while reading */
    em_pq_reader *reader;
    int64_t rows;
};

static atomic_long spill_seq;

em_status em_spill_create(const em_schema *schema, em_pool *pool, em_spill **out, em_error *err) {
    *out = NULL;
    em_spill *s = calloc(1, sizeof *s);
    if (!s)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a spill file");
    s->pool = pool;
    em_status st = em_schema_init(&s->schema, schema->n_fields, err);
    for (int i = 0; st == EM_OK && i < schema->n_fields; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%d", i);
        st = em_schema_set(&s->schema, i, name, schema->fields[i].type, true, err);
    }
    const char *dir = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/ember-spill-%ld-%ld.parquet", dir && *dir ? dir : "/tmp",
             (long)getpid(), (long)atomic_fetch_add(&spill_seq, 1));
    if (st == EM_OK && !(s->path = strdup(path)))
        st = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a spill file");
    if (st == EM_OK) {
        em_pq_write_options o;
        em_pq_write_options_init(&o);
        o.codec = EM_PQ_LZ4_RAW;
        o.dictionary = false;
        o.statistics = false;
        /* small pages and row groups: a reader holds one row group */
        o.page_bytes = 64 * 1024;
        o.row_group_rows = 4096;
        o.pool = pool;
        st = em_pq_writer_open(s->path, &s->schema, &o, &s->writer, err);
    }
    if (st != EM_OK) {
        em_spill_free(s);
        return st;
    }
    *out = s;
    return EM_OK;
}

em_status em_spill_write(em_spill *s, const em_batch *b, em_error *err) {
    if (!s->writer)
        return EM_FAIL(err, EM_ERR_INTERNAL, "spill '%s': write after the end", s->path);
    EM_TRY(em_pq_writer_write(s->writer, b, err));
    s->rows += em_batch_rows(b);
    return EM_OK;
}

em_status em_spill_finish(em_spill *s, int64_t *bytes, em_error *err) {
    if (s->writer) {
        em_pq_writer *w = s->writer;
        s->writer = NULL; /* closed either way */
        EM_TRY(em_pq_writer_close(w, err));
        s->written = true;
    }
    if (bytes) {
        struct stat sb;
        *bytes = stat(s->path, &sb) == 0 ? (int64_t)sb.st_size : 0;
    }
    return EM_OK;
}

em_status em_spill_read(em_spill *s, em_batch **out, em_error *err) {
    *out = NULL;
    if (!s->reader) {
        if (s->writer)
            EM_TRY(em_spill_finish(s, NULL, err));
        if (!s->written)
            return EM_FAIL(err, EM_ERR_INTERNAL, "spill '%s': read of a failed write", s->path);
        EM_TRY(em_pq_file_open(s->path, &s->file, err));
        em_pq_read_options ro = {.batch_rows = EM_BATCH_CAP, .pool = s->pool};
        EM_TRY(em_pq_reader_open(s->file, &ro, &s->reader, err));
    }
    return em_pq_reader_next(s->reader, out, err);
}

int64_t em_spill_rows(const em_spill *s) { return s->rows; }

void em_spill_free(em_spill *s) {
    if (!s)
        return;
    em_pq_writer_abort(s->writer);
    em_pq_reader_close(s->reader);
    em_pq_file_close(s->file);
    if (s->written)
        unlink(s->path);
    free(s->path);
    em_schema_reset(&s->schema);
    free(s);
}
