/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember lore`: replay one operator from a LORE dump (docs/lore.md).
 *
 *   ember lore replay DIR/loreId-N [--partition P] [--engine native|row|both]
 *                     [--output FILE] [--format table|csv|json|parquet] [--metrics]
 *   ember lore show DIR/loreId-N
 *   ember lore case DIR/loreId-N [--partition P] [--name NAME] [--output FILE]
 *
 * Replay runs every dumped partition (or only P), prints or writes the
 * output, reports timings on stderr, and when the output was dumped checks
 * that the replay reproduces it value for value (exit 1 when not). --engine
 * both runs the native operator and the row engine's and compares them.
 * Case writes one dumped partition as a tests/plans case (tables, plan and
 * the dumped output as the expected rows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ember/lore.h"
#include "ember/parquet.h"
#include "ember/value_text.h"

typedef enum { FMT_TABLE, FMT_CSV, FMT_JSON, FMT_PARQUET } lore_fmt;

typedef struct lore_args {
    const char *dir;
    int partition; /* -1: every dumped partition */
    const char *engine;
    const char *output;
    lore_fmt format;
    bool metrics;
    const char *name; /* case: the case's name */
} lore_args;

static void lore_usage(FILE *out) {
    fprintf(out,
            "usage: ember lore replay DIR/loreId-N [--partition P] [--engine native|row|both]\n"
            "                         [--output FILE] [--format table|csv|json|parquet] "
            "[--metrics]\n"
            "       ember lore show DIR/loreId-N\n"
            "       ember lore case DIR/loreId-N [--partition P] [--name NAME] [--output FILE]\n"
            "Replays one operator from a LORE dump, or writes one dumped partition as a\n"
            "tests/plans case (see docs/lore.md).\n");
}

static int lore_usage_error(const char *what, const char *arg) {
    fprintf(stderr, "ember lore: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    lore_usage(stderr);
    return 2;
}

/* Appends one batch's rows in the chosen text format. */
static em_status put_rows(FILE *f, lore_fmt fmt, const em_batch *b, em_strbuf *sb,
                          em_error *err) {
    for (int64_t k = 0; k < em_batch_rows(b); k++) {
        int64_t r = b->sel ? b->sel[k] : k;
        em_strbuf_clear(sb);
        if (fmt == FMT_JSON)
            em_strbuf_appends(sb, "{", NULL);
        for (int c = 0; c < b->n_cols; c++) {
            const em_column *col = &b->cols[c];
            if (fmt == FMT_JSON) {
                em_strbuf_appends(sb, c ? ", " : "", NULL);
                const char *name = b->schema.fields[c].name;
                EM_TRY(em_json_escape(sb, name, strlen(name), err));
                em_strbuf_appends(sb, ": ", NULL);
                EM_TRY(em_value_json(col, r, sb, err));
            } else if (fmt == FMT_CSV) {
                em_strbuf_appends(sb, c ? "," : "", NULL);
                EM_TRY(em_value_csv(col, r, ',', sb, err));
            } else {
                bool is_null = false;
                em_strbuf_appends(sb, c ? " | " : "", NULL);
                EM_TRY(em_value_text(col, r, sb, &is_null, err));
                if (is_null)
                    em_strbuf_appends(sb, "NULL", NULL);
            }
        }
        if (fmt == FMT_JSON)
            em_strbuf_appends(sb, "}", NULL);
        EM_TRY(em_strbuf_status(sb));
        fprintf(f, "%s\n", em_strbuf_cstr(sb));
    }
    return EM_OK;
}

static em_status put_header(FILE *f, lore_fmt fmt, const em_schema *sc) {
    if (fmt == FMT_JSON || fmt == FMT_PARQUET)
        return EM_OK;
    for (int c = 0; c < sc->n_fields; c++)
        fprintf(f, "%s%s", c ? (fmt == FMT_CSV ? "," : " | ") : "", sc->fields[c].name);
    fputc('\n', f);
    return EM_OK;
}

static em_status write_parquet_file(const char *path, const em_schema *sc,
                                    const em_batch_list *rows, em_error *err) {
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    em_pq_writer *w = NULL;
    EM_TRY(em_pq_writer_open(path, sc, &o, &w, err));
    for (int64_t i = 0; i < rows->n_batches; i++) {
        em_status s = em_pq_writer_write(w, rows->batches[i], err);
        if (s != EM_OK) {
            em_pq_writer_abort(w);
            return s;
        }
    }
    return em_pq_writer_close(w, err);
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

/* Runs one engine over one partition and reports its timings. */
static int run_engine(em_lore_dump *d, int part, em_lore_engine eng, const lore_args *a,
                      em_pool *pool, em_batch_list *got) {
    em_error err = {0};
    em_lore_replay_stats st;
    const char *name = eng == EM_LORE_ROW ? "row" : "native";
    if (em_lore_replay_on(d, part, eng, pool, got, &st, &err) != EM_OK) {
        fprintf(stderr, "ember lore: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "partition %d (%s): %lld rows in, %lld rows out; load %.3f ms, run %.3f ms\n",
            part, name, (long long)st.rows_in, (long long)st.rows_out, ms(st.load_ns),
            ms(st.run_ns));
    if (a->metrics)
        fprintf(stderr, "  metrics: batches_out=%lld peak_bytes=%lld\n",
                (long long)st.batches_out, (long long)st.peak_bytes);
    return 0;
}

/* Checks got against want; the native engine must reproduce the dump in
 * order, the row engine (which may order groups differently) as a multiset. */
static int verify(int part, const char *what, const em_batch_list *got,
                  const em_batch_list *want, bool ordered) {
    char diff[512];
    bool eq = ordered ? em_lore_results_equal(got, want, diff, sizeof diff)
                      : em_lore_results_equal_unordered(got, want, diff, sizeof diff);
    if (eq) {
        fprintf(stderr, "partition %d: verified: %s (%lld rows)\n", part, what,
                (long long)want->n_rows);
        return 0;
    }
    fprintf(stderr, "partition %d: MISMATCH: %s: %s\n", part, what, diff);
    return 1;
}

/* Replays one partition; appends its rows to all. Returns 0, or 1 on a
 * failure or mismatch (already reported). */
static int replay_partition(em_lore_dump *d, int part, const lore_args *a, em_pool *pool,
                            em_batch_list *all, FILE *out) {
    em_error err = {0};
    bool both = strcmp(a->engine, "both") == 0;
    em_lore_engine first = strcmp(a->engine, "row") == 0 ? EM_LORE_ROW : EM_LORE_NATIVE;
    em_batch_list got = {0}, other = {0};
    int rc = run_engine(d, part, first, a, pool, &got);
    if (rc == 0 && both) {
        rc = run_engine(d, part, EM_LORE_ROW, a, pool, &other);
        if (rc == 0)
            rc = verify(part, "the row engine's output equals the native one's", &other, &got,
                        false);
    }
    if (rc == 0 && em_lore_dump_has_output(d)) {
        em_batch_list want;
        if (em_lore_dump_read_output(d, part, pool, &want, &err) != EM_OK) {
            fprintf(stderr, "ember lore: %s\n", err.msg);
            rc = 1;
        } else {
            rc = verify(part, "equals the dumped output", &got, &want, first == EM_LORE_NATIVE);
            em_batch_list_reset(&want);
        }
    }
    em_batch_list_reset(&other);
    em_strbuf sb = {0};
    for (int64_t i = 0; rc == 0 && i < got.n_batches; i++) {
        if (a->format == FMT_PARQUET) {
            em_batch **nb = realloc(all->batches, sizeof *nb * (size_t)(all->n_batches + 1));
            if (!nb) {
                rc = 1;
                break;
            }
            all->batches = nb;
            all->batches[all->n_batches++] = got.batches[i];
            all->n_rows += em_batch_rows(got.batches[i]);
            got.batches[i] = NULL;
        } else if (put_rows(out, a->format, got.batches[i], &sb, &err) != EM_OK) {
            fprintf(stderr, "ember lore: %s\n", err.msg);
            rc = 1;
        }
    }
    em_strbuf_reset(&sb);
    em_batch_list_reset(&got);
    return rc;
}

static int parse_lore_args(int argc, char **argv, lore_args *a) {
    memset(a, 0, sizeof *a);
    a->partition = -1;
    a->engine = "native";
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--metrics") == 0) {
            a->metrics = true;
            continue;
        }
        if (o[0] != '-') {
            if (a->dir)
                return lore_usage_error("one dump folder only", o);
            a->dir = o;
            continue;
        }
        if (!v)
            return lore_usage_error("missing value after", o);
        i++;
        if (strcmp(o, "--partition") == 0) {
            char *end;
            long p = strtol(v, &end, 10);
            if (*v == '\0' || *end || p < 0 || p > 1 << 30)
                return lore_usage_error("--partition takes a partition number", v);
            a->partition = (int)p;
        } else if (strcmp(o, "--engine") == 0) {
            if (strcmp(v, "native") && strcmp(v, "row") && strcmp(v, "both"))
                return lore_usage_error("--engine takes native, row or both", v);
            a->engine = v;
        } else if (strcmp(o, "--output") == 0) {
            a->output = v;
        } else if (strcmp(o, "--name") == 0) {
            a->name = v;
        } else if (strcmp(o, "--format") == 0) {
            if (strcmp(v, "table") == 0)
                a->format = FMT_TABLE;
            else if (strcmp(v, "csv") == 0)
                a->format = FMT_CSV;
            else if (strcmp(v, "json") == 0)
                a->format = FMT_JSON;
            else if (strcmp(v, "parquet") == 0)
                a->format = FMT_PARQUET;
            else
                return lore_usage_error("--format takes table, csv, json or parquet", v);
        } else {
            return lore_usage_error("unknown option", o);
        }
    }
    if (!a->dir)
        return lore_usage_error("which dump? give DIR/loreId-N", NULL);
    const char *refused = a->output ? em_cli_output_refusal(a->output) : NULL;
    if (refused) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s %s", refused, a->output);
        return lore_usage_error(msg, NULL);
    }
    if (a->format == FMT_PARQUET && !a->output)
        return lore_usage_error("--format parquet needs --output FILE", NULL);
    return 0;
}

static int cmd_replay(int argc, char **argv) {
    lore_args a;
    int rc = parse_lore_args(argc, argv, &a);
    if (rc)
        return rc;
    em_error err = {0};
    em_lore_dump *d = NULL;
    if (em_lore_dump_open(a.dir, &d, &err) != EM_OK) {
        fprintf(stderr, "ember lore: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "replaying loreId %d: %s\n", em_lore_dump_id(d), em_lore_dump_operator(d));
    FILE *out = stdout;
    if (a.output && a.format != FMT_PARQUET && !(out = fopen(a.output, "w"))) {
        fprintf(stderr, "ember lore: cannot write %s\n", a.output);
        em_lore_dump_close(d);
        return 1;
    }
    em_pool *pool = em_pool_create("lore replay", NULL, -1);
    em_batch_list all = {0};
    int n = em_lore_dump_n_partitions(d), found = 0;
    for (int i = 0; i < n; i++)
        found += a.partition < 0 || em_lore_dump_partition_at(d, i) == a.partition;
    if (found == 0) {
        fprintf(stderr, "ember lore: partition %d was not dumped (dumped:", a.partition);
        for (int i = 0; i < n; i++)
            fprintf(stderr, " %d", em_lore_dump_partition_at(d, i));
        fprintf(stderr, ")\n");
        rc = 1;
    } else {
        put_header(out, a.format, em_lore_dump_schema(d));
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        int part = em_lore_dump_partition_at(d, i);
        if (a.partition < 0 || part == a.partition)
            rc = replay_partition(d, part, &a, pool, &all, out);
    }
    if (rc == 0 && a.format == FMT_PARQUET &&
        write_parquet_file(a.output, em_lore_dump_schema(d), &all, &err) != EM_OK) {
        fprintf(stderr, "ember lore: %s\n", err.msg);
        rc = 1;
    }
    if (out != stdout)
        fclose(out);
    em_batch_list_reset(&all);
    em_pool_destroy(pool);
    em_lore_dump_close(d);
    return rc;
}

static int cmd_show(int argc, char **argv) {
    if (argc != 1)
        return lore_usage_error("show takes one dump folder", NULL);
    em_error err = {0};
    em_lore_dump *d = NULL;
    if (em_lore_dump_open(argv[0], &d, &err) != EM_OK) {
        fprintf(stderr, "ember lore: %s\n", err.msg);
        return 1;
    }
    printf("loreId %d: %s\n", em_lore_dump_id(d), em_lore_dump_operator(d));
    printf("dumped partitions:");
    for (int i = 0; i < em_lore_dump_n_partitions(d); i++)
        printf(" %d", em_lore_dump_partition_at(d, i));
    printf("\noutput dumped: %s\n\n%s", em_lore_dump_has_output(d) ? "yes" : "no",
           em_lore_dump_plan_text(d));
    em_lore_dump_close(d);
    return 0;
}

static int cmd_case(int argc, char **argv) {
    lore_args a;
    int rc = parse_lore_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.metrics || strcmp(a.engine, "native") != 0 || a.format != FMT_TABLE)
        return lore_usage_error("case takes --partition, --name and --output only", NULL);
    em_error err = {0};
    em_lore_dump *d = NULL;
    if (em_lore_dump_open(a.dir, &d, &err) != EM_OK) {
        fprintf(stderr, "ember lore: %s\n", err.msg);
        return 1;
    }
    int part = a.partition;
    if (part < 0 && em_lore_dump_n_partitions(d) > 0)
        part = em_lore_dump_partition_at(d, 0);
    em_pool *pool = em_pool_create("lore case", NULL, -1);
    em_strbuf text = {0};
    em_status s = em_lore_case_write(d, part, a.name, pool, &text, &err);
    if (s == EM_OK) {
        FILE *out = a.output ? fopen(a.output, "w") : stdout;
        bool ok = out && fwrite(text.data, 1, text.len, out) == text.len;
        if (out && out != stdout && fclose(out) != 0)
            ok = false;
        if (!ok) {
            fprintf(stderr, "ember lore: cannot write %s\n", a.output ? a.output : "stdout");
            rc = 1;
        }
    } else {
        fprintf(stderr, "ember lore: %s\n", err.msg);
        rc = 1;
    }
    em_strbuf_reset(&text);
    em_pool_destroy(pool);
    em_lore_dump_close(d);
    return rc;
}

int em_cli_lore(int argc, char **argv) {
    if (argc < 1)
        return lore_usage_error("which subcommand?", NULL);
    if (strcmp(argv[0], "replay") == 0)
        return cmd_replay(argc - 1, argv + 1);
    if (strcmp(argv[0], "show") == 0)
        return cmd_show(argc - 1, argv + 1);
    if (strcmp(argv[0], "case") == 0)
        return cmd_case(argc - 1, argv + 1);
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "help") == 0) {
        lore_usage(stdout);
        return 0;
    }
    return lore_usage_error("unknown subcommand", argv[0]);
}
