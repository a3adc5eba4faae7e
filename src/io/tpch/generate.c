/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_tpch_generate: the eight TPC-H tables as Parquet files, written by a pool
 * of threads, in Spark's warehouse layout OUT/<table>/part-NNNNN.parquet.
 *
 * Work is split by file. A job is one file of one table over a fixed row
 * range, except that an orders job writes an orders file and the lineitem
 * file of the same orders (an order's status and total price are computed
 * from its lines). The row ranges depend only on the scale factor and
 * rows_per_file, and every row is generated from its own random stream (see
 * tpch_internal.h), so the files are byte-identical for any thread count.
 * Threads take jobs from a shared counter, largest first.
 *
 * Nothing half-written: all files go to OUT/.ember-tpch-<pid>-<start>-<n>.tmp/<table>/
 * (each file itself is written under a temporary name by the Parquet writer
 * and renamed when complete). When every job has succeeded, each table
 * folder is renamed to OUT/<table> (with force, replacing an existing one
 * only at that point); on any failure the staging folder is removed and OUT
 * is left as it was (folders this call created, parents included, are removed).
 * A run killed outright leaves its staging folder, which the next run into
 * OUT removes once that owner is gone (core/leftovers.h).
 *
 * The calling thread draws the progress bar while the workers run.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/leftovers.h"
#include "io/tpch/tpch_internal.h"

#define GEN_BATCH_ROWS 8192
#define GEN_BATCH_ORDERS 2048
#define DEFAULT_ROWS_PER_FILE 1000000

void em_tpch_options_init(em_tpch_options *o) {
    memset(o, 0, sizeof *o);
    o->sf = 1.0;
    o->schema = EM_TPCH_SCHEMA_STANDARD;
    o->codec = EM_PQ_SNAPPY;
    o->progress_out = stderr;
}

typedef struct gen_job {
    em_tpch_table table; /* ORDERS jobs also write LINEITEM file `file` */
    int file;
    int64_t first, count;
} gen_job;

typedef struct gen_run {
    const em_tpch_options *opts;
    tpch_ctx ctx;
    em_schema schemas[EM_TPCH_TABLE_COUNT];
    char staging[4096];
    gen_job *jobs; /* owned */
    int n_jobs;
    atomic_int next_job;
    atomic_int finished_threads;
    atomic_llong rows_done;
    int64_t rows_expected;
    atomic_bool failed;
    pthread_mutex_t lock; /* guards err, tables */
    em_error err;         /* the first failure */
    em_tpch_table_summary tables[EM_TPCH_TABLE_COUNT];
} gen_run;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- file system helpers ------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

/* Removes a folder tree; returns 0 or -1 (errno set). A missing path is fine.
 */
static int rm_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p. top (PATH_MAX bytes) receives the highest folder this call
 * created, whose removal undoes the call; "" when the folder existed. */
static em_status mkdir_parents(const char *path, char *top, em_error *err) {
    top[0] = 0;
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return EM_FAIL(err, EM_ERR_INVALID, "output folder path '%s' is empty or too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0)
            continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) == 0) {
            if (!top[0])
                memcpy(top, buf, i + 1);
        } else if (errno != EEXIST) {
            em_status st =
                EM_FAIL(err, EM_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
            if (top[0])
                rm_tree(top);
            return st;
        }
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return EM_FAIL(err, EM_ERR_IO, "output path '%s' is not a folder", path);
    return EM_OK;
}

static em_status dir_is_empty(const char *path, bool *empty, em_error *err) {
    DIR *d = opendir(path);
    if (!d)
        return EM_FAIL(err, EM_ERR_IO, "cannot read folder '%s': %s", path, strerror(errno));
    *empty = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            *empty = false;
            break;
        }
    }
    closedir(d);
    return EM_OK;
}

/* ---- jobs ---------------------------------------------------------------- */

static void add_jobs(gen_job *jobs, int *n, em_tpch_table t, int64_t rows, int64_t per_file) {
    int file = 0;
    for (int64_t first = 0; first < rows; first += per_file) {
        int64_t count = rows - first < per_file ? rows - first : per_file;
        jobs[(*n)++] = (gen_job){t, file++, first, count};
    }
}

static int64_t files_for(int64_t rows, int64_t per_file) {
    return (rows + per_file - 1) / per_file;
}

static em_status plan_jobs(gen_run *run, em_error *err) {
    const tpch_ctx *c = &run->ctx;
    int64_t per_file =
        run->opts->rows_per_file > 0 ? run->opts->rows_per_file : DEFAULT_ROWS_PER_FILE;
    int64_t orders_per_file = per_file / 4 > 0 ? per_file / 4 : 1;
    int64_t n = files_for(c->n_orders, orders_per_file) + files_for(c->n_partsupp, per_file) +
                files_for(c->n_part, per_file) + files_for(c->n_customer, per_file) +
                files_for(c->n_supplier, per_file) + 2;
    if (n > 100000)
        return EM_FAIL(err, EM_ERR_INVALID, "rows_per_file %lld gives %lld files; too many",
                       (long long)per_file, (long long)n);
    run->jobs = em_pool_alloc(NULL, n * (int64_t)sizeof(gen_job), err);
    if (!run->jobs)
        return err ? err->code : EM_ERR_NOMEM;
    int k = 0;
    /* Largest jobs first, so the last job to finish is a small one. */
    add_jobs(run->jobs, &k, EM_TPCH_ORDERS, c->n_orders, orders_per_file);
    add_jobs(run->jobs, &k, EM_TPCH_PARTSUPP, c->n_partsupp, per_file);
    add_jobs(run->jobs, &k, EM_TPCH_PART, c->n_part, per_file);
    add_jobs(run->jobs, &k, EM_TPCH_CUSTOMER, c->n_customer, per_file);
    add_jobs(run->jobs, &k, EM_TPCH_SUPPLIER, c->n_supplier, per_file);
    add_jobs(run->jobs, &k, EM_TPCH_NATION, 25, per_file);
    add_jobs(run->jobs, &k, EM_TPCH_REGION, 5, per_file);
    run->n_jobs = k;
    run->rows_expected =
        c->n_orders * 5 + c->n_partsupp + c->n_part + c->n_customer + c->n_supplier + 30;
    return EM_OK;
}

/* ---- one job ------------------------------------------------------------- */

typedef struct gen_file {
    em_pq_writer *w;
    char path[4200];
    int64_t rows;
} gen_file;

static em_status file_open(gen_run *run, em_tpch_table t, int file, gen_file *f, em_error *err) {
    snprintf(f->path, sizeof f->path, "%s/%s/part-%05d.parquet", run->staging,
             em_tpch_table_name(t), file);
    f->rows = 0;
    em_pq_write_options wo;
    em_pq_write_options_init(&wo);
    wo.codec = run->opts->codec;
    return em_pq_writer_open(f->path, &run->schemas[t], &wo, &f->w, err);
}

static em_status file_write(gen_run *run, gen_file *f, em_batch *b, em_error *err) {
    if (b->n_rows == 0)
        return EM_OK;
    EM_TRY(em_pq_writer_write(f->w, b, err));
    f->rows += b->n_rows;
    atomic_fetch_add(&run->rows_done, b->n_rows);
    em_tpch_batch_rewind(b);
    return EM_OK;
}

/* Closes (renames into place) and records the file in the summary. */
static em_status file_close(gen_run *run, em_tpch_table t, gen_file *f, em_error *err) {
    em_pq_writer *w = f->w;
    f->w = NULL;
    EM_TRY(em_pq_writer_close(w, err));
    struct stat st;
    if (stat(f->path, &st) != 0)
        return EM_FAIL(err, EM_ERR_IO, "cannot stat '%s' after writing: %s", f->path,
                       strerror(errno));
    pthread_mutex_lock(&run->lock);
    run->tables[t].rows += f->rows;
    run->tables[t].n_files++;
    run->tables[t].bytes += st.st_size;
    pthread_mutex_unlock(&run->lock);
    return EM_OK;
}

static em_status run_job(gen_run *run, const gen_job *job, em_error *err) {
    em_tpch_table t = job->table;
    bool orders = t == EM_TPCH_ORDERS;
    gen_file f = {0}, lf = {0};
    em_batch *b = NULL, *lb = NULL;
    em_status st = em_batch_create(&run->schemas[t], GEN_BATCH_ROWS, NULL, &b, err);
    if (st == EM_OK && orders)
        st = em_batch_create(&run->schemas[EM_TPCH_LINEITEM], GEN_BATCH_ROWS, NULL, &lb, err);
    if (st == EM_OK)
        st = file_open(run, t, job->file, &f, err);
    if (st == EM_OK && orders)
        st = file_open(run, EM_TPCH_LINEITEM, job->file, &lf, err);
    int64_t step = orders ? GEN_BATCH_ORDERS : GEN_BATCH_ROWS;
    for (int64_t r = job->first; st == EM_OK && r < job->first + job->count; r += step) {
        if (atomic_load(&run->failed)) {
            st = EM_ERR_CANCELLED;
            break;
        }
        if (run->opts->cancel && *run->opts->cancel) {
            st = EM_FAIL(err, EM_ERR_CANCELLED, "TPC-H generation cancelled");
            break;
        }
        int64_t n = job->first + job->count - r < step ? job->first + job->count - r : step;
        st = em_tpch_gen_rows(&run->ctx, t, r, n, b, lb, err);
        if (st == EM_OK)
            st = file_write(run, &f, b, err);
        if (st == EM_OK && orders)
            st = file_write(run, &lf, lb, err);
    }
    if (st == EM_OK)
        st = file_close(run, t, &f, err);
    if (st == EM_OK && orders)
        st = file_close(run, EM_TPCH_LINEITEM, &lf, err);
    em_pq_writer_abort(f.w);
    em_pq_writer_abort(lf.w);
    em_batch_destroy(b);
    em_batch_destroy(lb);
    return st;
}

static void *worker_main(void *arg) {
    gen_run *run = arg;
    for (;;) {
        int i = atomic_fetch_add(&run->next_job, 1);
        if (i >= run->n_jobs || atomic_load(&run->failed))
            break;
        em_error err;
        em_error_clear(&err);
        const gen_job *job = &run->jobs[i];
        em_status st = run_job(run, job, &err);
        if (st != EM_OK && !atomic_load(&run->failed))
            em_error_prefix(&err, "TPC-H %s rows [%lld, %lld) (file part-%05d)",
                            em_tpch_table_name(job->table), (long long)job->first,
                            (long long)(job->first + job->count), job->file);
        if (st != EM_OK) {
            pthread_mutex_lock(&run->lock);
            /* The first failure wins; jobs stopped because of it add nothing. */
            if (!atomic_load(&run->failed)) {
                run->err = err;
                run->err.code = st;
                atomic_store(&run->failed, true);
            }
            pthread_mutex_unlock(&run->lock);
        }
    }
    atomic_fetch_add(&run->finished_threads, 1);
    return NULL;
}

/* ---- progress ------------------------------------------------------------ */

static void draw_progress(const gen_run *run, double elapsed, bool final) {
    FILE *out = run->opts->progress_out ? run->opts->progress_out : stderr;
    int64_t done = atomic_load(&run->rows_done);
    double frac = run->rows_expected > 0 ? (double)done / (double)run->rows_expected : 1;
    if (frac > 1 || final)
        frac = 1;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(out, "\rtpch sf=%g [%s] %3d%% %10lld rows %6.1fs%s", run->opts->sf, bar,
            (int)(frac * 100), (long long)done, elapsed, final ? "\n" : "");
    fflush(out);
}

/* ---- the whole run ------------------------------------------------------- */

static em_status check_options(const em_tpch_options *o, em_error *err) {
    if (!o->out_dir || !*o->out_dir)
        return EM_FAIL(err, EM_ERR_INVALID, "TPC-H generation needs an output folder");
    if (!(o->sf >= EM_TPCH_SF_MIN && o->sf <= EM_TPCH_SF_MAX))
        return EM_FAIL(err, EM_ERR_INVALID, "TPC-H scale factor %g out of range [%g, %g]", o->sf,
                       EM_TPCH_SF_MIN, EM_TPCH_SF_MAX);
    if (o->threads < 0 || o->threads > 1024)
        return EM_FAIL(err, EM_ERR_INVALID, "thread count %d out of range [0, 1024]", o->threads);
    if (o->rows_per_file < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative rows_per_file %lld",
                       (long long)o->rows_per_file);
    switch (o->codec) {
    case EM_PQ_UNCOMPRESSED:
    case EM_PQ_SNAPPY:
    case EM_PQ_GZIP:
    case EM_PQ_ZSTD:
    case EM_PQ_LZ4_RAW:
        break;
    default:
        return EM_FAIL(err, EM_ERR_INVALID, "unsupported Parquet codec %d", (int)o->codec);
    }
    return EM_OK;
}

/* Runs the jobs on the threads; returns the first failure. */
static em_status run_threads(gen_run *run, int threads, double t0, em_error *err) {
    pthread_t tids[1024];
    int started = 0;
    for (; started < threads; started++) {
        if (pthread_create(&tids[started], NULL, worker_main, run) != 0)
            break;
    }
    if (started == 0)
        return EM_FAIL(err, EM_ERR_INTERNAL, "cannot start generator threads: %s", strerror(errno));
    const em_tpch_options *o = run->opts;
    while (atomic_load(&run->finished_threads) < started) {
        if (o->progress)
            draw_progress(run, now_seconds() - t0, false);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (atomic_load(&run->failed)) {
        if (err)
            *err = run->err;
        return run->err.code;
    }
    if (o->progress)
        draw_progress(run, now_seconds() - t0, true);
    return EM_OK;
}

/* Moves the staged tables to OUT/<table>. */
static em_status publish(gen_run *run, em_error *err) {
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        char from[4200], to[4200];
        const char *name = em_tpch_table_name((em_tpch_table)t);
        snprintf(from, sizeof from, "%s/%s", run->staging, name);
        snprintf(to, sizeof to, "%s/%s", run->opts->out_dir, name);
        if (rm_tree(to) != 0)
            return EM_FAIL(err, EM_ERR_IO, "cannot replace '%s': %s", to, strerror(errno));
        if (rename(from, to) != 0)
            return EM_FAIL(err, EM_ERR_IO, "cannot move '%s' to '%s': %s", from, to,
                           strerror(errno));
    }
    return EM_OK;
}

static em_status generate_in(gen_run *run, double t0, em_error *err) {
    const em_tpch_options *o = run->opts;
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++)
        EM_TRY(em_tpch_table_schema((em_tpch_table)t, o->schema, &run->schemas[t], err));
    EM_TRY(em_tpch_ctx_init(&run->ctx, o->sf, o->schema, err));
    EM_TRY(plan_jobs(run, err));
    if (mkdir(run->staging, 0777) != 0)
        return EM_FAIL(err, EM_ERR_IO, "cannot create staging folder '%s': %s", run->staging,
                       strerror(errno));
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", run->staging, em_tpch_table_name((em_tpch_table)t));
        if (mkdir(path, 0777) != 0)
            return EM_FAIL(err, EM_ERR_IO, "cannot create folder '%s': %s", path, strerror(errno));
    }
    int threads = o->threads;
    if (threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (int)(cores < 1024 ? cores : 1024) : 1;
    }
    if (threads > run->n_jobs)
        threads = run->n_jobs;
    EM_TRY(run_threads(run, threads, t0, err));
    EM_TRY(publish(run, err));
    if (o->summary) {
        memcpy(o->summary->tables, run->tables, sizeof run->tables);
        o->summary->threads = threads;
        o->summary->seconds = now_seconds() - t0;
    }
    return EM_OK;
}

em_status em_tpch_generate(const em_tpch_options *o, em_error *err) {
    double t0 = now_seconds();
    EM_TRY(check_options(o, err));
    char created[4096]; /* the folder to remove on failure, "" if none */
    EM_TRY(mkdir_parents(o->out_dir, created, err));
    /* a run killed outright (SIGKILL) leaves its staging folder: the next run
     * removes it, before it decides whether the folder is empty */
    em_sweep_orphans(o->out_dir, ".ember-tpch-");
    if (!created[0] && !o->force) {
        bool empty = false;
        EM_TRY(dir_is_empty(o->out_dir, &empty, err));
        if (!empty)
            return EM_FAIL(err, EM_ERR_INVALID,
                           "output folder '%s' is not empty (force replaces its TPC-H tables)",
                           o->out_dir);
    }
    gen_run *run = em_pool_calloc(NULL, sizeof *run, err);
    if (!run) {
        if (created[0])
            rm_tree(created);
        return err ? err->code : EM_ERR_NOMEM;
    }
    run->opts = o;
    pthread_mutex_init(&run->lock, NULL);
    /* pid and a per-process counter: concurrent calls never share a staging folder. */
    static atomic_int calls;
    char owner[64];
    em_owner_tag(owner, sizeof owner);
    snprintf(run->staging, sizeof run->staging, "%s/.ember-tpch-%s-%d.tmp", o->out_dir, owner,
             atomic_fetch_add(&calls, 1));
    em_status st = generate_in(run, t0, err);
    rm_tree(run->staging);
    if (st != EM_OK && created[0])
        rm_tree(created);
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++)
        em_schema_reset(&run->schemas[t]);
    em_tpch_ctx_reset(&run->ctx);
    em_pool_free(NULL, run->jobs, run->n_jobs * (int64_t)sizeof(gen_job));
    pthread_mutex_destroy(&run->lock);
    em_pool_free(NULL, run, sizeof *run);
    return st;
}
