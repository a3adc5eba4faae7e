/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shuffle spill files (see internal.h).
 *
 * A file is Parquet, as the operators' spills (ops/spill.c) are, with the
 * same trade-offs (LZ4, no dictionary or statistics, small pages and row
 * groups): it round-trips every column type and reads back a row group at a
 * time. Unlike an operator's spill, a shuffle file may be read by several
 * tasks (a ReusedExchange reads the same partition again, maybe at the same
 * time), so readers open the file by path, each with its own reader, and
 * the file lives until the query's spill folder is removed.
 *
 * The folder is made on the first spill (mkdtemp under the configured
 * folder, $TMPDIR or /tmp), and removed with everything in it when the
 * query is destroyed, whether the query succeeded or not. A process killed
 * before that (SIGKILL) cannot remove it, so the folder's name records its
 * owner (ember-shuffle-<pid>-<start>-XXXXXX, core/leftovers.h) and each
 * query, as it starts, removes those whose owner is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/leftovers.h"
#include "ember/parquet.h"
#include "runtime/internal.h"

struct rt_spill_dir {
    pthread_mutex_t mu;
    char *base; /* where to make the folder */
    char *path; /* the folder, once made */
    int n_files, cap_files;
    char **files;
};

em_status em_rt_spill_dir_create(const char *base, rt_spill_dir **out, em_error *err) {
    *out = NULL;
    rt_spill_dir *d = calloc(1, sizeof *d);
    if (!base || !*base)
        base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    if (!d || !(d->base = strdup(base))) {
        free(d);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating the spill folder's state");
    }
    pthread_mutex_init(&d->mu, NULL);
    /* every query, spilling or not, clears what killed ones left */
    em_sweep_orphans(d->base, "ember-shuffle-");
    *out = d;
    return EM_OK;
}

void em_rt_spill_dir_destroy(rt_spill_dir *d) {
    if (!d)
        return;
    for (int i = 0; i < d->n_files; i++) {
        unlink(d->files[i]);
        free(d->files[i]);
    }
    if (d->path)
        rmdir(d->path);
    free(d->files);
    free(d->path);
    free(d->base);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

/* A fresh file name in the folder (made on first use), recorded for removal. */
static em_status new_file(rt_spill_dir *d, const char **out, em_error *err) {
    em_status s = EM_OK;
    pthread_mutex_lock(&d->mu);
    if (!d->path) {
        size_t n = strlen(d->base) + 80;
        char *p = malloc(n);
        if (!p) {
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory naming the spill folder");
        } else {
            char owner[64];
            em_owner_tag(owner, sizeof owner);
            snprintf(p, n, "%s/ember-shuffle-%s-XXXXXX", d->base, owner);
            if (!mkdtemp(p)) {
                s = EM_FAIL(err, EM_ERR_IO, "cannot make a spill folder in '%s'", d->base);
                free(p);
            } else {
                d->path = p;
            }
        }
    }
    if (s == EM_OK && d->n_files == d->cap_files) {
        int nc = d->cap_files ? d->cap_files * 2 : 16;
        char **nf = realloc(d->files, sizeof *nf * (size_t)nc);
        if (!nf)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory naming a spill file");
        else {
            d->files = nf;
            d->cap_files = nc;
        }
    }
    if (s == EM_OK) {
        size_t n = strlen(d->path) + 32;
        char *f = malloc(n);
        if (!f) {
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory naming a spill file");
        } else {
            snprintf(f, n, "%s/%d.parquet", d->path, d->n_files);
            d->files[d->n_files++] = f;
            *out = f;
        }
    }
    pthread_mutex_unlock(&d->mu);
    return s;
}

em_status em_rt_spill_write(rt_spill_dir *d, const em_batch_list *l, const char **path,
                            int64_t *bytes, em_error *err) {
    *path = NULL;
    *bytes = 0;
    if (l->n_batches == 0)
        return EM_FAIL(err, EM_ERR_INTERNAL, "spilling an empty list");
    const em_schema *src = &l->batches[0]->schema;
    em_schema schema;
    EM_TRY(em_schema_init(&schema, src->n_fields, err));
    em_status s = EM_OK;
    for (int i = 0; s == EM_OK && i < src->n_fields; i++) {
        char name[32]; /* the attributes' names need not be unique */
        snprintf(name, sizeof name, "c%d", i);
        s = em_schema_set(&schema, i, name, src->fields[i].type, true, err);
    }
    const char *f = NULL;
    if (s == EM_OK)
        s = new_file(d, &f, err);
    em_pq_writer *w = NULL;
    if (s == EM_OK) {
        em_pq_write_options o;
        em_pq_write_options_init(&o);
        o.codec = EM_PQ_LZ4_RAW;
        o.dictionary = false;
        o.statistics = false;
        o.page_bytes = 64 * 1024;
        /* the writer holds a row group encoded and compressed besides the
         * rows (about twice them): 1024 rows keep a spill cheap when memory
         * is already tight, and not per batch, whose rows may be few (the
         * footer's row group list grows with every group) */
        o.row_group_rows = 1024;
        /* Not charged to the task's pool: a spill is written because the
         * budget is nearly used up, and failing it for want of the writer's
         * few small buffers would fail the query it should save (Spark does
         * not count its spill writers' buffers as execution memory either). */
        o.pool = NULL;
        s = em_pq_writer_open(f, &schema, &o, &w, err);
    }
    for (int64_t i = 0; s == EM_OK && i < l->n_batches; i++)
        s = em_pq_writer_write(w, l->batches[i], err);
    if (s == EM_OK) {
        em_pq_writer *done = w;
        w = NULL;
        s = em_pq_writer_close(done, err);
    }
    em_pq_writer_abort(w);
    em_schema_reset(&schema);
    if (s != EM_OK) {
        em_error_prefix(err, "writing shuffle spill file '%s'", f ? f : "?");
        return s;
    }
    struct stat sb;
    *bytes = stat(f, &sb) == 0 ? (int64_t)sb.st_size : 0;
    *path = f;
    return EM_OK;
}

em_status em_rt_spill_scan(const char *path, em_pool *pool,
                        em_status (*fn)(void *arg, const em_batch *b, em_error *err), void *arg,
                        em_error *err) {
    em_pq_file *file = NULL;
    em_pq_reader *r = NULL;
    em_status s = em_pq_file_open(path, &file, err);
    if (s == EM_OK) {
        em_pq_read_options ro = {.batch_rows = EM_BATCH_CAP, .pool = pool};
        s = em_pq_reader_open(file, &ro, &r, err);
    }
    while (s == EM_OK) {
        em_batch *b = NULL;
        s = em_pq_reader_next(r, &b, err);
        if (s == EM_OK)
            s = fn(arg, b, err);
    }
    em_pq_reader_close(r);
    em_pq_file_close(file);
    if (s == EM_DONE)
        return EM_OK;
    em_error_prefix(err, "reading shuffle spill file '%s'", path);
    return s;
}

typedef struct read_into {
    em_pool *pool;
    em_batch_list *out;
} read_into;

em_status em_rt_list_append_copy(em_batch_list *out, const em_batch *b, em_pool *pool,
                              em_error *err) {
    em_batch *copy = NULL;
    em_status s = em_batch_create(&b->schema, em_batch_rows(b), pool, &copy, err);
    if (s == EM_OK)
        s = em_batch_append(copy, b, err);
    if (s == EM_OK && (out->n_batches & (out->n_batches - 1)) == 0) {
        int64_t nc = out->n_batches ? out->n_batches * 2 : 1;
        em_batch **nb = realloc(out->batches, sizeof *nb * (size_t)nc);
        if (!nb)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory copying rows");
        else
            out->batches = nb;
    }
    if (s != EM_OK) {
        em_batch_destroy(copy);
        return s;
    }
    out->batches[out->n_batches++] = copy;
    out->n_rows += copy->n_rows;
    return EM_OK;
}

static em_status append_copy(void *arg, const em_batch *b, em_error *err) {
    read_into *ri = arg;
    return em_rt_list_append_copy(ri->out, b, ri->pool, err);
}

em_status em_rt_spill_read(const char *path, em_pool *pool, em_batch_list *out, em_error *err) {
    read_into ri = {pool, out};
    return em_rt_spill_scan(path, pool, append_copy, &ri, err);
}
