/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember gen tpch`: parses the options, runs em_tpch_generate, prints a
 * summary (files, rows and bytes per table, seconds). A progress bar goes to
 * stderr when stderr is a terminal. SIGINT/SIGTERM stop the generator, which
 * removes what it staged. Exit codes: 0 success, 1 generation failed (nothing
 * half-written is left), 2 usage error, 130 interrupted.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ember/tpch.h"

/* Set by SIGINT/SIGTERM: the generator stops and removes what it staged. */
static volatile sig_atomic_t gen_interrupted;

static void gen_on_signal(int sig) {
    (void)sig;
    gen_interrupted = 1;
}

static void gen_usage(FILE *out) {
    fprintf(out,
            "usage: ember gen tpch --sf N --schema spark|standard --out DIR "
            "[options]\n\n"
            "  --sf N              scale factor, %g to %g (SF 1 is about 1 GB of "
            "text data)\n"
            "  --schema S          spark: Spark's TPCHBase DDL (money DECIMAL(10,0), "
            "values\n"
            "                      rounded half up); standard: money DECIMAL(15,2)\n"
            "  --out DIR           warehouse folder; tables go to "
            "DIR/<table>/part-NNNNN.parquet\n"
            "  --threads N         worker threads (default: the number of cores)\n"
            "  --codec C           snappy (default), zstd, gzip, lz4_raw or none\n"
            "  --rows-per-file N   lineitem rows per file (default 1000000; orders "
            "get N/4)\n"
            "  --force             DIR may be non-empty: its TPC-H table folders are "
            "replaced\n"
            "  --no-progress       no progress bar even on a terminal\n",
            EM_TPCH_SF_MIN, EM_TPCH_SF_MAX);
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "ember gen: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    gen_usage(stderr);
    return 2;
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_codec(const char *s, em_pq_codec *out) {
    static const struct {
        const char *name;
        em_pq_codec codec;
    } codecs[] = {{"snappy", EM_PQ_SNAPPY},     {"zstd", EM_PQ_ZSTD},
                  {"gzip", EM_PQ_GZIP},         {"lz4_raw", EM_PQ_LZ4_RAW},
                  {"none", EM_PQ_UNCOMPRESSED}, {"uncompressed", EM_PQ_UNCOMPRESSED}};
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        if (strcmp(s, codecs[i].name) == 0) {
            *out = codecs[i].codec;
            return true;
        }
    return false;
}

static void print_summary(const em_tpch_options *o, const em_tpch_summary *s) {
    printf("TPC-H SF %g (%s schema) in %s\n", o->sf,
           o->schema == EM_TPCH_SCHEMA_SPARK ? "spark" : "standard", o->out_dir);
    printf("%-10s %6s %12s %14s\n", "table", "files", "rows", "bytes");
    int64_t rows = 0, bytes = 0;
    int files = 0;
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        const em_tpch_table_summary *ts = &s->tables[t];
        printf("%-10s %6d %12lld %14lld\n", em_tpch_table_name((em_tpch_table)t), ts->n_files,
               (long long)ts->rows, (long long)ts->bytes);
        rows += ts->rows;
        bytes += ts->bytes;
        files += ts->n_files;
    }
    printf("%-10s %6d %12lld %14lld\n", "total", files, (long long)rows, (long long)bytes);
    printf("%.2f s with %d threads\n", s->seconds, s->threads);
}

int em_cli_gen(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "help") == 0 || strcmp(argv[0], "--help") == 0) {
        gen_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "tpch") != 0)
        return usage_error("unknown generator '%s' (only 'tpch')", argv[0]);
    em_tpch_options o;
    em_tpch_options_init(&o);
    bool have_sf = false, have_schema = false, progress = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--force") == 0) {
            o.force = true;
            continue;
        }
        if (strcmp(a, "--no-progress") == 0) {
            progress = false;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            gen_usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0)
            return usage_error("unexpected argument '%s'", a);
        if (i + 1 >= argc)
            return usage_error("%s needs a value", a);
        const char *v = argv[++i];
        int64_t n;
        if (strcmp(a, "--sf") == 0) {
            char *end;
            errno = 0;
            o.sf = strtod(v, &end);
            if (errno || end == v || *end || !(o.sf >= EM_TPCH_SF_MIN && o.sf <= EM_TPCH_SF_MAX))
                return usage_error("--sf '%s': expected a scale factor from 0.01 to 10", v);
            have_sf = true;
        } else if (strcmp(a, "--schema") == 0) {
            if (strcmp(v, "spark") == 0)
                o.schema = EM_TPCH_SCHEMA_SPARK;
            else if (strcmp(v, "standard") == 0)
                o.schema = EM_TPCH_SCHEMA_STANDARD;
            else
                return usage_error("--schema '%s': expected spark or standard", v);
            have_schema = true;
        } else if (strcmp(a, "--out") == 0) {
            o.out_dir = v;
        } else if (strcmp(a, "--threads") == 0) {
            if (!parse_i64(v, 1, 1024, &n))
                return usage_error("--threads '%s': expected 1 to 1024", v);
            o.threads = (int)n;
        } else if (strcmp(a, "--rows-per-file") == 0) {
            if (!parse_i64(v, 1, INT64_MAX, &n))
                return usage_error("--rows-per-file '%s': expected a positive number", v);
            o.rows_per_file = n;
        } else if (strcmp(a, "--codec") == 0) {
            if (!parse_codec(v, &o.codec))
                return usage_error("--codec '%s': expected snappy, zstd, gzip, lz4_raw or none", v);
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (!have_sf)
        return usage_error("%s", "--sf is required");
    if (!have_schema)
        return usage_error("%s", "--schema is required");
    if (!o.out_dir)
        return usage_error("%s", "--out is required");
    o.progress = progress && isatty(STDERR_FILENO);
    o.progress_out = stderr;
    em_tpch_summary summary;
    o.summary = &summary;
    o.cancel = &gen_interrupted;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = gen_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    em_error err;
    em_error_clear(&err);
    em_status st = em_tpch_generate(&o, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (st != EM_OK) {
        fprintf(stderr, "%sember gen: %s\n", o.progress ? "\n" : "", err.msg);
        if (st == EM_ERR_CANCELLED)
            return 130;
        return st == EM_ERR_INVALID ? 2 : 1;
    }
    print_summary(&o, &summary);
    return 0;
}
