/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember demo`: the README's main job for now. Generates TPC-H (standard
 * schema, default SF 0.01) into a fresh folder, reads every table back with
 * Ember's Parquet reader, and prints per table: files, rows, bytes, read
 * time and a check; then runs the 22 TPC-H plans Spark 3.5 printed (from
 * ../shared/spark-plans, or $EMBER_SHARED) on that data with --retype, as
 * `ember run` would, printing each query's rows and time.
 * The checks: every table's row count read back equals the
 * count the generator wrote (and the files' footers agree), and for lineitem
 * every l_quantity is a whole number from 1 to 50 (its sum is printed).
 *
 * Without --dir the data goes to a new temporary folder that is removed at the
 * end (unless --keep); with --dir the folder's TPC-H tables are replaced and
 * kept. Exit codes: 0 all checks passed, 1 a failure, 2 usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ember/parquet.h"
#include "ember/runtime.h"
#include "ember/tpch.h"

static void demo_usage(FILE *out) {
    fprintf(out, "usage: ember demo [--sf N] [--dir DIR] [--threads N] [--keep]\n\n"
                 "  --sf N       TPC-H scale factor (default 0.01)\n"
                 "  --dir DIR    where to generate (default: a temporary folder, "
                 "removed after)\n"
                 "  --threads N  generator threads (default: the number of cores)\n"
                 "  --keep       keep the temporary folder\n");
}

static double demo_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs the 22 TPC-H plans of one Spark line over the generated data (retyped
 * to the files' DECIMAL(15,2) columns). Returns 0 when every plan ran. */
static int demo_run_plans(const char *warehouse, int threads) {
    const char *shared = getenv("EMBER_SHARED");
    char plans[4096];
    snprintf(plans, sizeof plans, "%s/spark-plans/tpch/spark-3.5",
             shared && *shared ? shared : "../shared");
    struct stat st;
    if (stat(plans, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ember demo: %s not found: set EMBER_SHARED to the shared folder\n", plans);
        return 1;
    }
    printf("\nrunning the TPC-H plans Spark 3.5 printed (%s), retyped to the data\n\n", plans);
    printf("%-6s %8s %9s  %s\n", "query", "rows", "ms", "status");
    em_error err;
    int failed = 0;
    double total_ms = 0;
    for (int q = 1; q <= 22; q++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/q%d.txt", plans, q);
        em_plan *plan = NULL;
        em_query *query = NULL;
        em_retype_ctx *retype = NULL; /* one per plan: it caches by the plan's scan nodes */
        em_runtime_options ro;
        em_runtime_options_init(&ro);
        ro.warehouse_dir = warehouse;
        ro.threads = threads;
        em_error_clear(&err);
        double t0 = demo_now();
        em_status s = em_retype_ctx_create(warehouse, true, &retype, &err);
        if (s == EM_OK)
            s = em_cli_load_plan(path, "3.5", retype, &plan, &err); /* the folder says */
        if (s == EM_OK)
            s = em_query_create(plan, &ro, &query, &err);
        if (s == EM_OK)
            s = em_query_run(query, &err);
        double ms = (demo_now() - t0) * 1e3;
        if (s == EM_OK) {
            total_ms += ms;
            printf("q%-5d %8lld %9.1f  ok\n", q, (long long)em_query_result(query)->n_rows, ms);
        } else {
            failed++;
            printf("q%-5d %8s %9s  FAILED: %s\n", q, "-", "-", err.msg);
        }
        em_query_destroy(query);
        em_plan_destroy(plan);
        em_retype_ctx_destroy(retype);
    }
    printf("\n22 plans: %d ran in %.1f ms in all, %d failed\n", 22 - failed, total_ms, failed);
    return failed ? 1 : 0;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct demo_table {
    int n_files;
    int64_t rows, footer_rows, bytes;
    double read_ms;
    em_i128 qty_sum; /* lineitem: sum of l_quantity (unscaled, scale 2) */
    int64_t qty_bad; /* lineitem: quantities outside 1..50 or fractional */
} demo_table;

/* Reads one file completely; accumulates into dt. */
static em_status demo_read_file(const char *path, bool lineitem, demo_table *dt, em_error *err) {
    em_pq_file *f = NULL;
    EM_TRY(em_pq_file_open(path, &f, err));
    dt->footer_rows += em_pq_file_num_rows(f);
    int qty = lineitem ? em_schema_find(em_pq_file_schema(f), "l_quantity") : -1;
    if (lineitem && qty < 0) {
        em_pq_file_close(f);
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: no l_quantity column", path);
    }
    em_pq_read_options ro;
    memset(&ro, 0, sizeof ro);
    em_pq_reader *r = NULL;
    em_status st = em_pq_reader_open(f, &ro, &r, err);
    em_batch *b;
    while (st == EM_OK && (st = em_pq_reader_next(r, &b, err)) == EM_OK) {
        int64_t n = em_batch_rows(b);
        dt->rows += n;
        if (qty < 0)
            continue;
        const em_column *c = &b->cols[qty];
        const em_i128 *v = (const em_i128 *)c->values->data;
        for (int64_t i = 0; i < n; i++) {
            int64_t row = b->sel ? b->sel[i] : i;
            em_i128 q = v[row];
            dt->qty_sum += q;
            dt->qty_bad += !em_column_is_valid(c, row) || q < 100 || q > 5000 || q % 100 != 0;
        }
    }
    em_pq_reader_close(r);
    em_pq_file_close(f);
    return st == EM_DONE ? EM_OK : st;
}

/* Reads every part-*.parquet of DIR/<table>. */
static em_status demo_read_table(const char *dir, em_tpch_table t, demo_table *dt, em_error *err) {
    char tdir[4200];
    snprintf(tdir, sizeof tdir, "%s/%s", dir, em_tpch_table_name(t));
    DIR *d = opendir(tdir);
    if (!d)
        return EM_FAIL(err, EM_ERR_IO, "cannot read folder '%s': %s", tdir, strerror(errno));
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 4096) {
        size_t len = strlen(e->d_name);
        if (len > 8 && strcmp(e->d_name + len - 8, ".parquet") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], name_cmp);
    em_status st = EM_OK;
    double t0 = demo_now();
    for (int i = 0; i < n && st == EM_OK; i++) {
        char path[4500];
        snprintf(path, sizeof path, "%s/%s", tdir, names[i]);
        struct stat sb;
        if (stat(path, &sb) == 0)
            dt->bytes += sb.st_size;
        st = demo_read_file(path, t == EM_TPCH_LINEITEM, dt, err);
    }
    dt->read_ms = (demo_now() - t0) * 1000;
    dt->n_files = n;
    for (int i = 0; i < n; i++)
        free(names[i]);
    return st;
}

int em_cli_demo(int argc, char **argv) {
    double sf = 0.01;
    const char *dir_arg = NULL;
    int threads = 0;
    bool keep = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            demo_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--keep") == 0) {
            keep = true;
            continue;
        }
        if (i + 1 >= argc ||
            (strcmp(a, "--sf") != 0 && strcmp(a, "--dir") != 0 && strcmp(a, "--threads") != 0)) {
            fprintf(stderr, "ember demo: %s '%s'\n",
                    i + 1 >= argc ? "missing value or unknown option" : "unknown option", a);
            demo_usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (strcmp(a, "--sf") == 0) {
            sf = strtod(v, &end);
            if (errno || end == v || *end || !(sf >= EM_TPCH_SF_MIN && sf <= EM_TPCH_SF_MAX)) {
                fprintf(stderr, "ember demo: --sf '%s': expected a scale factor from %g to %g\n", v,
                        EM_TPCH_SF_MIN, EM_TPCH_SF_MAX);
                return 2;
            }
        } else if (strcmp(a, "--threads") == 0) {
            long n = strtol(v, &end, 10);
            if (errno || end == v || *end || n < 1 || n > 1024) {
                fprintf(stderr, "ember demo: --threads '%s': expected 1 to 1024\n", v);
                return 2;
            }
            threads = (int)n;
        } else {
            dir_arg = v;
        }
    }

    char tmpdir[4096] = "", dir[4096];
    if (dir_arg) {
        snprintf(dir, sizeof dir, "%s", dir_arg);
    } else {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/ember-demo-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "ember demo: cannot create a temporary folder in %s: %s\n",
                    base && *base ? base : "/tmp", strerror(errno));
            return 1;
        }
        snprintf(dir, sizeof dir, "%s", tmpdir);
    }

    em_tpch_options o;
    em_tpch_options_init(&o);
    o.sf = sf;
    o.schema = EM_TPCH_SCHEMA_STANDARD;
    o.out_dir = dir;
    o.threads = threads;
    o.force = true;
    o.progress = isatty(STDERR_FILENO);
    em_tpch_summary gen;
    o.summary = &gen;
    em_error err;
    em_error_clear(&err);
    int rc = 0;
    printf("ember demo: TPC-H SF %g (standard schema) in %s\n", sf, dir);
    if (em_tpch_generate(&o, &err) != EM_OK) {
        fprintf(stderr, "ember demo: generation failed: %s\n", err.msg);
        rc = 1;
    } else {
        printf("generated in %.2f s with %d threads; reading back with Ember's "
               "Parquet reader\n\n",
               gen.seconds, gen.threads);
        printf("%-10s %6s %10s %12s %9s  %s\n", "table", "files", "rows", "bytes", "read ms",
               "check");
        for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
            demo_table dt;
            memset(&dt, 0, sizeof dt);
            em_error_clear(&err);
            em_status st = demo_read_table(dir, (em_tpch_table)t, &dt, &err);
            char check[256];
            bool good = st == EM_OK && dt.rows == gen.tables[t].rows && dt.footer_rows == dt.rows &&
                        dt.n_files == gen.tables[t].n_files;
            if (st != EM_OK)
                snprintf(check, sizeof check, "FAILED: %s", err.msg);
            else if (!good)
                snprintf(check, sizeof check,
                         "FAILED: read %lld rows in %d files, wrote %lld in %d", (long long)dt.rows,
                         dt.n_files, (long long)gen.tables[t].rows, gen.tables[t].n_files);
            else if (t == EM_TPCH_LINEITEM) {
                good = dt.qty_bad == 0;
                snprintf(check, sizeof check, "%s: rows as written; sum(l_quantity) = %lld%s",
                         good ? "ok" : "FAILED", (long long)(dt.qty_sum / 100),
                         good ? ", every quantity in 1..50" : ", quantities outside 1..50");
            } else
                snprintf(check, sizeof check, "ok: rows as written");
            printf("%-10s %6d %10lld %12lld %9.1f  %s\n", em_tpch_table_name((em_tpch_table)t),
                   dt.n_files, (long long)dt.rows, (long long)dt.bytes, dt.read_ms, check);
            if (!good)
                rc = 1;
        }
        if (rc == 0 && demo_run_plans(dir, threads) != 0)
            rc = 1;
        printf("\n%s\n", rc == 0 ? "demo ok" : "demo FAILED");
    }
    if (tmpdir[0] && !keep) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "ember demo: could not remove %s\n", tmpdir);
    } else if (tmpdir[0]) {
        printf("data kept in %s\n", tmpdir);
    }
    return rc;
}
