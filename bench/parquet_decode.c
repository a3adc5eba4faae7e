/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parquet_decode: how fast libember decodes Parquet. Every column of every row
 * group of the given files (or of the *.parquet files in the given folders) is
 * decoded into batches, which are discarded; nothing is filtered or skipped.
 *
 * Work is split into units of one row group each, handed out in file order
 * through an atomic counter to T threads (default 2, as DuckDB gets in
 * bench/peers_decode.mjs), so two threads share the files evenly whether there
 * is one large file or many. Each thread opens a file's footer the first time
 * it takes one of its row groups in a run: footer parsing is part of the
 * measured work, as it is for DuckDB, which reads the footers on every query.
 *
 * One untimed warm-up run brings the files into the page cache, then each of
 * the N timed runs prints its wall time and the CPU time of all its threads
 * (which other processes on a busy machine disturb less); the summary gives
 * the medians, rows, bytes on disk and throughput, and final
 * "median_s <seconds>" and "median_cpu_s <seconds>" lines for scripts. Rows
 * decoded are checked against the footers' row counts every run.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "ember/column.h"
#include "ember/memory.h"
#include "ember/parquet.h"

typedef struct unit {
    int file; /* index into bench.paths */
    int rg;   /* row group within that file */
} unit;

typedef struct bench {
    char **paths; /* owned */
    int n_paths;
    unit *units; /* owned; file-major order */
    int n_units;
    int n_threads;
    int64_t batch_rows; /* rows per batch asked of the reader; 0 = EM_BATCH_CAP */
    atomic_int next;    /* next unit to hand out in the current run */
    atomic_bool failed;
    pthread_mutex_t err_lock;
    em_error err; /* the first failure of the run */
} bench;

typedef struct worker {
    bench *b;
    em_pq_file **files; /* owned per run: this thread's open footers, by path index */
    em_pool *pool;      /* owned: this thread's allocations, for the peak figure */
    int64_t rows;       /* decoded in this run */
    int64_t string_bytes;
    pthread_t tid;
} worker;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) of every thread of the process so far. */
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool add_path(bench *b, const char *path) {
    char **p = realloc(b->paths, (size_t)(b->n_paths + 1) * sizeof *p);
    if (!p)
        return false;
    b->paths = p;
    b->paths[b->n_paths] = strdup(path);
    return b->paths[b->n_paths++] != NULL;
}

/* A file is taken as given; a folder contributes its *.parquet files, sorted. */
static bool collect(bench *b, const char *arg) {
    struct stat st;
    if (stat(arg, &st) != 0) {
        fprintf(stderr, "parquet_decode: %s: %s\n", arg, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode))
        return add_path(b, arg);
    DIR *d = opendir(arg);
    if (!d) {
        fprintf(stderr, "parquet_decode: %s: %s\n", arg, strerror(errno));
        return false;
    }
    int first = b->n_paths;
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, ".parquet"))
            continue;
        size_t n = strlen(arg) + strlen(e->d_name) + 2;
        char *full = malloc(n);
        ok = full != NULL;
        if (ok) {
            snprintf(full, n, "%s/%s", arg, e->d_name);
            ok = add_path(b, full);
        }
        free(full);
    }
    closedir(d);
    if (ok && b->n_paths == first) {
        fprintf(stderr, "parquet_decode: %s: no *.parquet files\n", arg);
        return false;
    }
    qsort(b->paths + first, (size_t)(b->n_paths - first), sizeof *b->paths, cmp_str);
    return ok;
}

static void record_error(bench *b, const em_error *err) {
    pthread_mutex_lock(&b->err_lock);
    if (!atomic_load(&b->failed)) {
        b->err = *err;
        atomic_store(&b->failed, true);
    }
    pthread_mutex_unlock(&b->err_lock);
}

/* Decodes one row group of one file: every column, every batch. */
static em_status decode_unit(worker *w, const unit *u, em_error *err) {
    bench *b = w->b;
    if (!w->files[u->file])
        EM_TRY(em_pq_file_open(b->paths[u->file], &w->files[u->file], err));
    em_pq_file *f = w->files[u->file];
    int n_rg = em_pq_file_num_row_groups(f);
    bool *mask = calloc((size_t)n_rg, sizeof *mask);
    if (!mask)
        return EM_FAIL(err, EM_ERR_NOMEM, "row group mask");
    mask[u->rg] = true;
    em_pq_read_options o;
    memset(&o, 0, sizeof o);
    o.row_groups = mask;
    o.batch_rows = b->batch_rows;
    o.pool = w->pool;
    em_pq_reader *r = NULL;
    em_status s = em_pq_reader_open(f, &o, &r, err);
    while (s == EM_OK) {
        em_batch *batch = NULL;
        s = em_pq_reader_next(r, &batch, err);
        if (s != EM_OK)
            break;
        w->rows += batch->n_rows;
        for (int c = 0; c < batch->n_cols; c++) {
            const em_column *col = &batch->cols[c];
            if (em_type_is_varlen(col->type) && col->length > 0)
                w->string_bytes += em_column_offsets(col)[col->length];
        }
    }
    em_pq_reader_close(r);
    free(mask);
    return s == EM_DONE ? EM_OK : s;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    bench *b = w->b;
    for (;;) {
        if (atomic_load(&b->failed))
            break;
        int i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n_units)
            break;
        em_error err;
        em_error_clear(&err);
        if (decode_unit(w, &b->units[i], &err) != EM_OK) {
            record_error(b, &err);
            break;
        }
    }
    return NULL;
}

/* One run: all units across the threads. Returns wall seconds, or -1 on
 * error; *cpu gets the CPU seconds all threads spent. */
static double run_once(bench *b, worker *ws, int64_t *rows, int64_t *string_bytes, double *cpu) {
    atomic_store(&b->next, 0);
    for (int t = 0; t < b->n_threads; t++) {
        ws[t].rows = 0;
        ws[t].string_bytes = 0;
    }
    double t0 = now_s(), c0 = cpu_s();
    int started = 0;
    for (int t = 0; t < b->n_threads; t++) {
        if (pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]) != 0) {
            em_error err;
            EM_FAIL(&err, EM_ERR_INTERNAL, "pthread_create failed");
            record_error(b, &err);
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(ws[t].tid, NULL);
    for (int t = 0; t < b->n_threads; t++)
        for (int i = 0; i < b->n_paths; i++) {
            em_pq_file_close(ws[t].files[i]);
            ws[t].files[i] = NULL;
        }
    double elapsed = now_s() - t0;
    *cpu = cpu_s() - c0;
    *rows = 0;
    *string_bytes = 0;
    for (int t = 0; t < b->n_threads; t++) {
        *rows += ws[t].rows;
        *string_bytes += ws[t].string_bytes;
    }
    return atomic_load(&b->failed) ? -1 : elapsed;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: parquet_decode [--runs N] [--threads T] [--warmup W] [--batch-rows R] "
            "PATH...\n"
            "  PATH: a Parquet file, or a folder whose *.parquet files are all read\n"
            "  defaults: --runs 5 --threads 2 --warmup 1 --batch-rows %d (EM_BATCH_CAP)\n",
            EM_BATCH_CAP);
}

static bool parse_int(const char *s, int min, int *out) {
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < min || v > 1000000)
        return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv) {
    int runs = 5, warmup = 1, threads = 2, batch_rows = 0;
    bench b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.err_lock, NULL);
    int rc = 1;
    worker *ws = NULL;
    double *times = NULL, *cpus = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool ok = true;
        if (strcmp(a, "--runs") == 0)
            ok = parse_int(i + 1 < argc ? argv[++i] : NULL, 1, &runs);
        else if (strcmp(a, "--threads") == 0)
            ok = parse_int(i + 1 < argc ? argv[++i] : NULL, 1, &threads);
        else if (strcmp(a, "--warmup") == 0)
            ok = parse_int(i + 1 < argc ? argv[++i] : NULL, 0, &warmup);
        else if (strcmp(a, "--batch-rows") == 0)
            ok = parse_int(i + 1 < argc ? argv[++i] : NULL, 1, &batch_rows);
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            ok = false;
        } else if (!collect(&b, a)) {
            goto out;
        }
        if (!ok) {
            fprintf(stderr, "parquet_decode: bad argument '%s'\n", a);
            usage(stderr);
            rc = 2;
            goto out;
        }
    }
    if (b.n_paths == 0) {
        usage(stderr);
        rc = 2;
        goto out;
    }
    b.n_threads = threads;
    b.batch_rows = batch_rows;

    /* Footers once, untimed: the unit list, expected rows and sizes. */
    int64_t expect_rows = 0, file_bytes = 0, uncompressed = 0;
    int n_cols = 0;
    for (int i = 0; i < b.n_paths; i++) {
        em_error err;
        em_error_clear(&err);
        em_pq_file *f = NULL;
        if (em_pq_file_open(b.paths[i], &f, &err) != EM_OK) {
            fprintf(stderr, "parquet_decode: %s\n", err.msg);
            goto out;
        }
        struct stat st;
        if (stat(b.paths[i], &st) == 0)
            file_bytes += st.st_size;
        expect_rows += em_pq_file_num_rows(f);
        n_cols = em_pq_file_schema(f)->n_fields;
        int n_rg = em_pq_file_num_row_groups(f);
        unit *u = realloc(b.units, (size_t)(b.n_units + n_rg) * sizeof *u);
        if (!u) {
            em_pq_file_close(f);
            fprintf(stderr, "parquet_decode: out of memory\n");
            goto out;
        }
        b.units = u;
        for (int rg = 0; rg < n_rg; rg++) {
            em_pq_chunk_info ci;
            for (int c = 0; c < n_cols; c++) {
                if (em_pq_file_chunk_info(f, rg, c, &ci, &err) != EM_OK) {
                    em_pq_file_close(f);
                    fprintf(stderr, "parquet_decode: %s\n", err.msg);
                    goto out;
                }
                uncompressed += ci.total_uncompressed_size;
            }
            b.units[b.n_units++] = (unit){i, rg};
        }
        em_pq_file_close(f);
    }

    ws = calloc((size_t)threads, sizeof *ws);
    times = calloc((size_t)runs, sizeof *times);
    cpus = calloc((size_t)runs, sizeof *cpus);
    if (!ws || !times || !cpus) {
        fprintf(stderr, "parquet_decode: out of memory\n");
        goto out;
    }
    for (int t = 0; t < threads; t++) {
        ws[t].b = &b;
        ws[t].files = calloc((size_t)b.n_paths, sizeof *ws[t].files);
        ws[t].pool = em_pool_create("bench", NULL, -1);
        if (!ws[t].files || !ws[t].pool) {
            fprintf(stderr, "parquet_decode: out of memory\n");
            goto out;
        }
    }

    printf(
        "files: %d, row groups: %d, columns: %d, rows: %" PRId64 ", threads: %d, batch rows: %d\n",
        b.n_paths, b.n_units, n_cols, expect_rows, threads, batch_rows ? batch_rows : EM_BATCH_CAP);
    printf("bytes: %.1f MB on disk, %.1f MB uncompressed pages\n", (double)file_bytes / 1e6,
           (double)uncompressed / 1e6);
    int64_t rows = 0, string_bytes = 0;
    for (int r = 0; r < warmup + runs; r++) {
        double cpu = 0;
        double s = run_once(&b, ws, &rows, &string_bytes, &cpu);
        if (s < 0) {
            fprintf(stderr, "parquet_decode: %s\n", b.err.msg);
            goto out;
        }
        if (rows != expect_rows) {
            fprintf(stderr, "parquet_decode: decoded %" PRId64 " rows, footers say %" PRId64 "\n",
                    rows, expect_rows);
            goto out;
        }
        if (r < warmup) {
            printf("warm-up %d: %.3f s (cpu %.3f s)\n", r + 1, s, cpu);
        } else {
            times[r - warmup] = s;
            cpus[r - warmup] = cpu;
            printf("run %d: %.3f s (cpu %.3f s)\n", r - warmup + 1, s, cpu);
        }
        fflush(stdout);
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    qsort(cpus, (size_t)runs, sizeof *cpus, cmp_double);
    double median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2.0;
    double median_cpu = runs % 2 ? cpus[runs / 2] : (cpus[runs / 2 - 1] + cpus[runs / 2]) / 2.0;
    int64_t peak = 0;
    for (int t = 0; t < threads; t++)
        peak += em_pool_peak(ws[t].pool);
    printf("median: %.3f s, %.1f M rows/s, %.1f MB/s on disk, %.1f MB/s uncompressed\n", median,
           (double)rows / median / 1e6, (double)file_bytes / median / 1e6,
           (double)uncompressed / median / 1e6);
    printf("string bytes decoded: %" PRId64 ", peak pool memory: %.1f MB\n", string_bytes,
           (double)peak / 1e6);
    printf("median_s %.6f\nmedian_cpu_s %.6f\n", median, median_cpu);
    rc = 0;

out:
    for (int t = 0; ws && t < threads; t++) {
        free(ws[t].files);
        if (ws[t].pool)
            em_pool_destroy(ws[t].pool);
    }
    free(ws);
    free(times);
    free(cpus);
    for (int i = 0; i < b.n_paths; i++)
        free(b.paths[i]);
    free(b.paths);
    free(b.units);
    pthread_mutex_destroy(&b.err_lock);
    return rc;
}
