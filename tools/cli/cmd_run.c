/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember run PLAN`: parses a Spark physical plan (EXPLAIN FORMATTED text),
 * runs it with the local runtime over the warehouse's Parquet tables and
 * writes the rows as a table, CSV, JSON lines or Parquet.
 *
 * --retype re-infers the plan's types from the files' types (through the
 * plan parser's column-type hook), so a plan Spark printed for DECIMAL(10,0)
 * money columns runs on standard DECIMAL(15,2) data. The same switch is the
 * config spark.ember.sql.retype.
 *
 * Between parsing and running, the overrides decide per node whether it
 * runs natively or on the reference row engine (spark.ember.sql.enabled,
 * spark.ember.sql.exec.<Class>, ...), and the runtime builds each task's
 * mixed tree from those decisions. spark.ember.sql.explain prints their
 * report to stderr before the query runs, as spark-rapids logs it when the
 * plan is overridden. Test mode (spark.ember.sql.test.enabled) refuses to
 * run a plan with a node on the row engine whose class is not listed in
 * spark.ember.sql.test.allowedNonNative, as spark-rapids' test mode fails
 * the query at planning time.
 *
 * Output to --output is written to a temporary file beside it and renamed
 * into place only when complete, so a failed run leaves no partial file.
 * SIGINT/SIGTERM cancel the query (exit 130). Exit codes: 0 success, 1 the
 * plan failed to parse or run, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_profile.h"
#include "core/leftovers.h"
#include "ember/conf.h"
#include "ember/lore.h"
#include "ember/overrides.h"
#include "ember/parquet.h"
#include "ember/rowops.h"
#include "ember/runtime.h"
#include "ember/tz.h"
#include "ember/value_text.h"

static em_query *volatile run_query; /* the query SIGINT cancels */
static volatile sig_atomic_t run_interrupted;

static void run_on_signal(int sig) {
    (void)sig;
    run_interrupted = 1;
    if (run_query)
        em_query_cancel(run_query);
}

static void run_usage(FILE *out) {
    fprintf(out, "usage: ember run PLAN --warehouse DIR [options]\n\n"
                 "  PLAN                 EXPLAIN FORMATTED text of a Spark physical plan "
                 "('-': stdin)\n"
                 "  --warehouse DIR      tables are DIR/<table>/*.parquet\n"
                 "  --spark-version V    the Spark line that printed the plan (default: "
                 "detected)\n"
                 "  --conf k=v           any registered key (`ember conf` lists them), e.g.\n"
                 "                       spark.ember.sql.enabled=false (all on the row "
                 "engine),\n"
                 "                       spark.ember.sql.exec.<Class>=false, "
                 "spark.ember.sql.explain=ALL,\n"
                 "                       spark.ember.sql.test.enabled=true, "
                 "spark.sql.ansi.enabled (repeatable)\n"
                 "  --format F           table (default), csv, json (one object per "
                 "line), parquet\n"
                 "  --output PATH        write there (atomically) instead of stdout; a new\n"
                 "                       path or a regular file (- is stdout)\n"
                 "  --metrics            print stages, per-node engine and operator metrics, "
                 "and\n"
                 "                       the transitions between engines to stderr\n"
                 "  --threads N          worker threads (default: the number of cores)\n"
                 "  --memory SIZE        memory budget of the query, a positive size (512m, 4g);\n"
                 "                       a broadcast over it is planned again as a shuffle\n"
                 "  --retype             take the files' column types and re-infer the "
                 "plan's\n");
}

static char *read_all(const char *path, size_t *len, em_error *err) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        EM_FAIL(err, EM_ERR_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    bool failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf || failed) {
        free(buf);
        EM_FAIL(err, buf ? EM_ERR_IO : EM_ERR_NOMEM, "%s: cannot read", path);
        return NULL;
    }
    *len = n;
    return buf;
}

em_status em_cli_load_plan(const char *path, const char *version, em_retype_ctx *retype,
                           em_plan **out, em_error *err) {
    *out = NULL;
    em_plan_parse_options po;
    memset(&po, 0, sizeof po);
    po.source_name = strcmp(path, "-") == 0 ? "stdin" : path;
    if (version && !(po.shim = em_shim_for_version(version, err)))
        return err ? err->code : EM_ERR_INVALID;
    if (retype) {
        po.column_type = em_retype_column_type;
        po.column_type_ctx = retype;
    }
    size_t len = 0;
    char *text = read_all(path, &len, err);
    if (!text)
        return err ? err->code : EM_ERR_IO;
    em_status s = em_plan_parse(text, len, &po, out, err);
    free(text);
    if (s == EM_OK && em_plan_shim_uncertain(*out))
        fprintf(stderr, "ember: warning: %s: %s; pass --spark-version\n", po.source_name,
                em_plan_shim_reason(*out));
    return s;
}

/* Sizes as Spark writes them (digits and a binary unit, no fractions), read
 * by the one parser the configuration registry uses. */
static bool parse_bytes(const char *s, int64_t *out) {
    return em_conf_parse_bytes(s, 1, out);
}

static bool parse_bool(const char *s, bool *out) {
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else
        return false;
    return true;
}

typedef struct run_args {
    const char *plan, *warehouse, *version, *format, *output;
    char local_dir[1024]; /* spark.local.dir's first directory: shuffle spill goes there */
    bool metrics, retype;
    em_runtime_options ro;
    em_conf *conf; /* every --conf, validated; the overrides read it */
    em_lore_build_ctx lore; /* the build's context: the decisions and the LORE dump */
} run_args;

static int usage_error(const char *what, const char *arg) {
    fprintf(stderr, "ember run: %s%s%s\n", what, arg ? " " : "", arg ? arg : "");
    run_usage(stderr);
    return 2;
}

/* Keys the overrides (or test mode, the report and LORE) read: no warning. */
static bool overrides_key(const char *key) {
    static const char *const prefixes[] = {"spark.ember.sql.", "spark.rapids.sql."};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* spark.local.dir: Spark spreads its scratch files over a comma-separated
 * list of directories; the local runtime makes one spill folder per query,
 * so it takes the first. Checked here so a bad directory stops the run
 * before any task, not when the first spill happens. */
static int set_local_dir(run_args *a, const char *v) {
    size_t n = strcspn(v, ",");
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n == 0 || n >= sizeof a->local_dir)
        return usage_error("spark.local.dir wants a directory, got", v);
    memcpy(a->local_dir, v, n);
    a->local_dir[n] = '\0';
    struct stat st;
    if (stat(a->local_dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
        access(a->local_dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "ember run: --conf spark.local.dir: '%s' is not a writable directory\n",
                a->local_dir);
        return 2;
    }
    a->ro.spill_dir = a->local_dir;
    return 0;
}

static int apply_conf(run_args *a, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq)
        return usage_error("--conf wants key=value, got", kv);
    /* The registry validates every key first: a mistyped spark.ember.* key or
     * a value of the wrong type is an error with the nearest key suggested. */
    em_error cerr = {0};
    if (em_conf_set_kv(a->conf, kv, &cerr) != EM_OK) {
        fprintf(stderr, "ember run: --conf: %s\n", cerr.msg);
        return 2;
    }
    char key[256];
    size_t kl = (size_t)(eq - kv);
    while (kl && (kv[kl - 1] == ' ' || kv[kl - 1] == '\t'))
        kl--;
    const char *k0 = kv;
    while (kl && (*k0 == ' ' || *k0 == '\t'))
        k0++, kl--;
    snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1), k0);
    const em_conf_key *known = em_conf_lookup(key);
    const char *canon = known ? known->name : key; /* aliases act as their key */
    const char *v = eq + 1;
    bool b;
    if (strcmp(canon, "spark.sql.ansi.enabled") == 0) {
        if (!parse_bool(v, &b))
            return usage_error("spark.sql.ansi.enabled wants true or false, got", v);
        a->ro.ansi = b;
    } else if (strcmp(canon, "spark.sql.session.timeZone") == 0) {
        const em_tz *zone;
        em_error zerr = {0};
        if (em_tz_find(v, &zone, &zerr) != EM_OK) {
            /* refused when set, as Spark refuses the setting, not at the
             * first expression that reads it */
            fprintf(stderr, "ember run: --conf spark.sql.session.timeZone: %s\n", zerr.msg);
            return 2;
        }
        a->ro.time_zone = v;
    } else if (strcmp(canon, "spark.sql.files.maxPartitionBytes") == 0) {
        if (!parse_bytes(v, &a->ro.max_partition_bytes) || a->ro.max_partition_bytes == 0)
            return usage_error("spark.sql.files.maxPartitionBytes wants a size, got", v);
    } else if (strcmp(canon, "spark.sql.files.openCostInBytes") == 0) {
        if (!parse_bytes(v, &a->ro.open_cost_bytes))
            return usage_error("spark.sql.files.openCostInBytes wants a size, got", v);
    } else if (strcmp(canon, "spark.ember.sql.emptyTableFolders") == 0) {
        if (!parse_bool(v, &a->ro.empty_table_folders))
            return usage_error("spark.ember.sql.emptyTableFolders wants true or false, got", v);
    } else if (strcmp(canon, "spark.ember.sql.runtimeFilter.enabled") == 0) {
        if (!parse_bool(v, &a->ro.runtime_filters))
            return usage_error("spark.ember.sql.runtimeFilter.enabled wants true or false, got", v);
    } else if (strcmp(canon, "spark.ember.sql.retype") == 0) {
        if (!parse_bool(v, &a->retype))
            return usage_error("spark.ember.sql.retype wants true or false, got", v);
    } else if (strcmp(canon, "spark.local.dir") == 0) {
        return set_local_dir(a, v);
    } else if (strcmp(canon, "spark.ember.memory.budget") == 0) {
        if (!parse_bytes(v, &a->ro.memory_budget) || a->ro.memory_budget <= 0)
            return usage_error("spark.ember.memory.budget wants a positive size, got", v);
    } else if (!overrides_key(canon) && !em_cli_profile_key(canon)) {
        fprintf(stderr, "ember run: ignoring --conf %s (not used by the local runtime)\n", key);
    }
    return 0;
}

const char *em_cli_output_refusal(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? NULL : "--output cannot be examined:";
    if (S_ISREG(st.st_mode))
        return NULL;
    if (S_ISLNK(st.st_mode))
        return "--output is a symbolic link (give the file it names, or a new path):";
    if (S_ISDIR(st.st_mode))
        return "--output is a folder, not a file:";
    return "--output is not a regular file (a device, FIFO or socket):";
}

static int parse_args(int argc, char **argv, run_args *a) {
    memset(a, 0, sizeof *a);
    em_runtime_options_init(&a->ro);
    a->format = "table";
    em_error cerr = {0};
    if (em_conf_create(&a->conf, &cerr) != EM_OK) {
        fprintf(stderr, "ember run: %s\n", cerr.msg);
        return 1;
    }
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            run_usage(stdout);
            return -1;
        } else if (strcmp(o, "--metrics") == 0) {
            a->metrics = true;
        } else if (strcmp(o, "--retype") == 0) {
            a->retype = true;
        } else if (o[0] == '-' && o[1] == '-') {
            if (!has_value)
                return usage_error("missing value after", o);
            const char *v = argv[++i];
            if (strcmp(o, "--warehouse") == 0)
                a->warehouse = v;
            else if (strcmp(o, "--spark-version") == 0)
                a->version = v;
            else if (strcmp(o, "--format") == 0)
                a->format = v;
            else if (strcmp(o, "--output") == 0)
                a->output = v;
            else if (strcmp(o, "--threads") == 0) {
                char *end;
                long t = strtol(v, &end, 10);
                if (*end || t < 1 || t > 1024)
                    return usage_error("--threads wants 1..1024, got", v);
                a->ro.threads = (int)t;
            } else if (strcmp(o, "--memory") == 0) {
                if (!parse_bytes(v, &a->ro.memory_budget) || a->ro.memory_budget <= 0)
                    return usage_error("--memory wants a positive size (e.g. 512m, 4g), got", v);
            } else if (strcmp(o, "--conf") == 0) {
                int rc = apply_conf(a, v);
                if (rc)
                    return rc;
            } else
                return usage_error("unknown option", o);
        } else if (!a->plan) {
            a->plan = o;
        } else {
            return usage_error("unexpected argument", o);
        }
    }
    if (!a->plan)
        return usage_error("missing PLAN", NULL);
    if (strcmp(a->format, "table") && strcmp(a->format, "csv") && strcmp(a->format, "json") &&
        strcmp(a->format, "parquet"))
        return usage_error("--format wants table, csv, json or parquet, got", a->format);
    if (a->output && strcmp(a->output, "-") == 0)
        a->output = NULL;
    if (a->output) {
        const char *why = em_cli_output_refusal(a->output);
        if (why)
            return usage_error(why, a->output);
    }
    if (strcmp(a->format, "parquet") == 0 && !a->output)
        return usage_error("--format parquet needs --output PATH", NULL);
    a->ro.warehouse_dir = a->warehouse;
    return 0;
}

/* ------------------------------------------------------------------ output */

static em_status cell_text(const em_column *c, int64_t row, em_strbuf *sb, em_error *err) {
    bool is_null = false;
    em_strbuf_clear(sb);
    EM_TRY(em_value_text(c, row, sb, &is_null, err));
    if (is_null)
        EM_TRY(em_strbuf_appends(sb, "NULL", err));
    return EM_OK;
}

static em_status write_table(FILE *f, const em_schema *sc, const em_batch_list *rows,
                             em_error *err) {
    int nc = sc->n_fields;
    size_t *w = calloc((size_t)(nc ? nc : 1), sizeof *w);
    if (!w)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_status s = EM_OK;
    for (int c = 0; c < nc; c++)
        w[c] = strlen(sc->fields[c].name);
    /* two passes: widths, then lines */
    for (int pass = 0; pass < 2 && s == EM_OK; pass++) {
        if (pass == 1) {
            for (int c = 0; c < nc; c++)
                fprintf(f, "%s%-*s", c ? " | " : "", (int)w[c], sc->fields[c].name);
            fputc('\n', f);
            for (int c = 0; c < nc; c++) {
                fputs(c ? "-+-" : "", f);
                for (size_t k = 0; k < w[c]; k++)
                    fputc('-', f);
            }
            fputc('\n', f);
        }
        for (int64_t bi = 0; s == EM_OK && bi < rows->n_batches; bi++) {
            const em_batch *b = rows->batches[bi];
            for (int64_t k = 0; s == EM_OK && k < em_batch_rows(b); k++) {
                int64_t r = b->sel ? b->sel[k] : k;
                for (int c = 0; s == EM_OK && c < nc; c++) {
                    s = cell_text(&b->cols[c], r, &sb, err);
                    if (s != EM_OK)
                        break;
                    bool right =
                        em_type_width(b->cols[c].type) > 0 && b->cols[c].type.id != EM_TYPE_DATE;
                    if (pass == 0 && sb.len > w[c])
                        w[c] = sb.len;
                    else if (pass == 1)
                        fprintf(f, right ? "%s%*s" : "%s%-*s", c ? " | " : "", (int)w[c],
                                em_strbuf_cstr(&sb));
                }
                if (pass == 1)
                    fputc('\n', f);
            }
        }
    }
    if (s == EM_OK)
        fprintf(f, "(%lld row%s)\n", (long long)rows->n_rows, rows->n_rows == 1 ? "" : "s");
    em_strbuf_reset(&sb);
    free(w);
    return s;
}

static em_status write_csv_header(FILE *f, const em_schema *sc, em_strbuf *sb, em_error *err) {
    em_strbuf_clear(sb);
    for (int c = 0; c < sc->n_fields; c++) {
        if (c)
            em_strbuf_appends(sb, ",", err);
        em_csv_escape(sb, sc->fields[c].name, strlen(sc->fields[c].name), ',', err);
    }
    em_strbuf_appends(sb, "\n", err);
    EM_TRY(em_strbuf_status(sb));
    if (fwrite(sb->data, 1, sb->len, f) != sb->len)
        return EM_FAIL(err, EM_ERR_IO, "write failed: %s", strerror(errno));
    return EM_OK;
}

static em_status write_csv_json_rows(FILE *f, bool json, const em_schema *sc, const em_batch *b,
                                     em_strbuf *sb, em_error *err) {
    em_status s = EM_OK;
    int nc = sc->n_fields;
    for (int64_t k = 0; s == EM_OK && k < em_batch_rows(b); k++) {
        int64_t r = b->sel ? b->sel[k] : k;
        em_strbuf_clear(sb);
        if (json)
            em_strbuf_appends(sb, "{", err);
        for (int c = 0; s == EM_OK && c < nc; c++) {
            if (c)
                em_strbuf_appends(sb, ",", err);
            if (json) {
                em_json_escape(sb, sc->fields[c].name, strlen(sc->fields[c].name), err);
                em_strbuf_appends(sb, ":", err);
                s = em_value_json(&b->cols[c], r, sb, err);
            } else {
                s = em_value_csv(&b->cols[c], r, ',', sb, err);
            }
        }
        em_strbuf_appends(sb, json ? "}\n" : "\n", err);
        if (s == EM_OK)
            s = em_strbuf_status(sb);
        if (s == EM_OK && fwrite(sb->data, 1, sb->len, f) != sb->len)
            s = EM_FAIL(err, EM_ERR_IO, "write failed: %s", strerror(errno));
    }
    return s;
}

/*
 * Where the result goes. CSV, JSON and Parquet stream: the runtime hands
 * each batch over as the result stage produces it (em_runtime_options.
 * result_sink), so the result is never held whole. A table is laid out from
 * all rows' widths, so it is collected first. A file is written without a
 * name (or under PATH.tmp-<pid>) and named only when complete; a failed or
 * interrupted run leaves nothing. To stdout, rows appear as they come, and
 * a failure after some of them still exits non-zero.
 */
typedef struct run_output {
    const run_args *a;
    const em_schema *schema;
    bool json, parquet;
    FILE *f;            /* text: the file or stdout */
    int fd;             /* text to a file */
    bool unnamed;       /* fd has no name yet (O_TMPFILE) */
    char *tmp;          /* text to a file: its temporary name */
    em_pq_writer *pw;   /* parquet */
    em_strbuf sb;
    int64_t rows;       /* handed over so far */
} run_output;

static bool output_streams(const run_args *a) { return strcmp(a->format, "table") != 0; }

static em_status output_open(run_output *o, const run_args *a, const em_schema *schema,
                             em_error *err) {
    memset(o, 0, sizeof *o);
    o->a = a;
    o->schema = schema;
    o->fd = -1;
    o->json = strcmp(a->format, "json") == 0;
    o->parquet = strcmp(a->format, "parquet") == 0;
    em_strbuf_init(&o->sb);
    if (o->parquet) {
        em_pq_write_options wo;
        em_pq_write_options_init(&wo);
        /* the writer holds a row group until it is complete: under a budget,
         * one of about an eighth of it (from the columns' widths; 32 bytes
         * for a string) */
        if (a->ro.memory_budget > 0) {
            int64_t row = 1;
            for (int c = 0; c < schema->n_fields; c++) {
                int w = em_type_width(schema->fields[c].type);
                row += w > 0 ? w : 32;
            }
            int64_t rows = a->ro.memory_budget / 8 / row;
            wo.row_group_rows = rows < 4096 ? 4096 : rows > 1048576 ? 1048576 : rows;
        }
        return em_pq_writer_open(a->output, schema, &wo, &o->pw, err);
    }
    if (!a->output) {
        o->f = stdout;
    } else {
        size_t n = strlen(a->output) + 64;
        if (!(o->tmp = malloc(n)))
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        snprintf(o->tmp, n, "%s.tmp-%ld", a->output, (long)getpid());
        /* written without a name (O_TMPFILE in the output's folder) and named
         * only when complete, so even SIGKILL leaves nothing behind; where the
         * file system cannot, under tmp from the start */
        o->fd = em_file_create_unnamed(a->output);
        o->unnamed = o->fd >= 0;
        if (o->fd < 0)
            o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        o->f = o->fd >= 0 ? fdopen(o->fd, "wb") : NULL;
        if (!o->f)
            return EM_FAIL(err, EM_ERR_IO, "%s: %s", o->tmp, strerror(errno));
    }
    bool csv = strcmp(a->format, "csv") == 0;
    return csv ? write_csv_header(o->f, schema, &o->sb, err) : EM_OK;
}

/* The runtime's result sink. */
static em_status output_batch(void *ctx, const em_batch *b, em_error *err) {
    run_output *o = ctx;
    o->rows += em_batch_rows(b);
    if (o->pw)
        return em_pq_writer_write(o->pw, b, err);
    return write_csv_json_rows(o->f, o->json, o->schema, b, &o->sb, err);
}

/* Drops what was written (a file: removed; stdout: nothing to take back). */
static void output_abort(run_output *o) {
    em_pq_writer_abort(o->pw);
    o->pw = NULL;
    if (o->f && o->f != stdout) {
        fclose(o->f);
        if (!o->unnamed)
            unlink(o->tmp);
    } else if (!o->f && o->fd >= 0) {
        close(o->fd);
        if (!o->unnamed)
            unlink(o->tmp);
    }
    o->f = NULL;
    o->fd = -1;
    free(o->tmp);
    o->tmp = NULL;
    em_strbuf_reset(&o->sb);
}

static em_status output_finish(run_output *o, em_error *err) {
    em_status s = EM_OK;
    if (o->pw) {
        em_pq_writer *w = o->pw;
        o->pw = NULL;
        s = em_pq_writer_close(w, err);
    } else if (o->f == stdout) {
        if (fflush(stdout) != 0)
            s = EM_FAIL(err, EM_ERR_IO, "stdout: %s", strerror(errno));
        o->f = NULL;
    } else if (o->f) {
        const char *out = o->a->output;
        if (fflush(o->f) != 0)
            s = EM_FAIL(err, EM_ERR_IO, "%s: %s", out, strerror(errno));
        if (s == EM_OK && o->unnamed) {
            if (em_file_link_unnamed(o->fd, o->tmp) != 0)
                s = EM_FAIL(err, EM_ERR_IO, "%s: cannot name the finished output: %s", o->tmp,
                            strerror(errno));
            o->unnamed = s != EM_OK; /* named now: a failure below unlinks it */
        }
        if (fclose(o->f) != 0 && s == EM_OK)
            s = EM_FAIL(err, EM_ERR_IO, "%s: %s", o->tmp, strerror(errno));
        o->f = NULL;
        o->fd = -1;
        if (s == EM_OK && rename(o->tmp, out) != 0)
            s = EM_FAIL(err, EM_ERR_IO, "%s: %s", out, strerror(errno));
        if (s != EM_OK && !o->unnamed)
            unlink(o->tmp);
    }
    output_abort(o); /* frees what is left */
    return s;
}

/* A table, from the collected result: written as a streamed output is. */
static em_status write_table_output(const run_args *a, const em_schema *sc,
                                    const em_batch_list *rows, em_error *err) {
    run_output o;
    em_status s = output_open(&o, a, sc, err);
    if (s == EM_OK)
        s = write_table(o.f, sc, rows, err);
    if (s == EM_OK)
        return output_finish(&o, err);
    output_abort(&o);
    return s;
}

/* The operator column: row operators carry Spark's names, as the native
 * ones do, so the engine the overrides chose is shown as a "row:" prefix
 * (their metrics also count no batches). */
static const char *op_label(const em_exec_plan *xp, const em_node_metrics *m, char *buf,
                            size_t cap) {
    const em_node_decision *d = xp ? em_exec_plan_decision(xp, m->node) : NULL;
    if (!d || d->engine != EM_ENGINE_ROW)
        return m->op_name;
    snprintf(buf, cap, "row:%s", m->op_name);
    return buf;
}

static void print_metrics(const em_query *q, const em_exec_plan *xp, double seconds) {
    fprintf(stderr, "query: %.3f s, %d threads, peak memory %.1f MiB\n", seconds,
            em_query_threads(q), (double)em_query_peak_bytes(q) / 1048576.0);
    fprintf(stderr, "%-6s %-10s %-28s %6s %5s %10s %9s\n", "stage", "kind", "node", "tasks",
            "parts", "rows", "ms");
    for (int i = 0; i < em_query_n_stages(q); i++) {
        em_stage_info si;
        em_query_stage_info(q, i, &si);
        char node[64];
        snprintf(node, sizeof node, "%s (%d)", si.node->name ? si.node->name : "?", si.node->id);
        fprintf(stderr, "%-6d %-10s %-28s %6d %5d %10lld %9.1f\n", si.index,
                em_stage_kind_name(si.kind), node, si.n_tasks, si.n_out_partitions,
                (long long)si.rows_out, (double)si.time_ns / 1e6);
    }
    /* the runtime's resources per stage: task semaphore, shuffle spill, shared broadcast builds */
    fprintf(stderr, "%-6s %12s %12s %8s %10s %7s %14s\n", "stage", "sem wait ms", "sem hold ms",
            "holders", "spill MiB", "files", "shared built");
    for (int i = 0; i < em_query_n_stages(q); i++) {
        em_stage_info si;
        em_query_stage_info(q, i, &si);
        fprintf(stderr, "%-6d %12.1f %12.1f %8d %10.1f %7d %8d/%-5d\n", si.index,
                (double)si.native_wait_ns / 1e6, (double)si.native_hold_ns / 1e6,
                si.native_max_holders, (double)si.spill_bytes / 1048576.0, si.spill_files,
                si.shared_builds, si.shared_uses);
    }
    fprintf(stderr, "%-46s %-26s %6s %10s %8s %9s %10s\n", "node", "operator", "tasks", "rows",
            "batches", "ms", "peak KiB");
    for (int i = 0; i < em_query_n_metrics(q); i++) {
        const em_node_metrics *m = em_query_metrics_at(q, i);
        char node[80], op[64], lore[32] = "";
        /* the id to give spark.ember.sql.lore.idsToDump (absent with tagging off) */
        const em_node_decision *d = xp ? em_exec_plan_decision(xp, m->node) : NULL;
        if (d && d->engine == EM_ENGINE_NATIVE && d->lore_id >= 0)
            snprintf(lore, sizeof lore, " [loreId=%d]", d->lore_id);
        snprintf(node, sizeof node, "%s (%d)%s", m->node->name ? m->node->name : "?", m->node->id,
                 lore);
        fprintf(stderr, "%-46s %-26s %6d %10lld %8lld %9.1f %10.1f\n", node,
                op_label(xp, m, op, sizeof op), m->tasks, (long long)m->m.rows_out,
                (long long)m->m.batches_out, (double)m->m.time_ns / 1e6,
                (double)m->m.peak_bytes / 1024.0);
    }
    for (int i = 0; i < em_query_n_runtime_filters(q); i++) {
        const em_runtime_filter *f = em_query_runtime_filter_at(q, i);
        const em_expr *c = f->scan->output[f->scan_column];
        const em_expr *k = f->source->output[f->source_column];
        fprintf(stderr, "runtime filter: %s#%lld of %s (%d) in the keys %s#%lld of %s (%d), for %s (%d)\n",
                c->name ? c->name : "?", (long long)c->id, f->scan->name, f->scan->id,
                k->name ? k->name : "?", (long long)k->id, f->source->name, f->source->id,
                f->join->name, f->join->id);
    }
    /* A transition sits above the node it converts: columnar output read by
     * a row parent, or rows read by a native parent. */
    int n_trans = 0;
    for (int i = 0; xp && i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (!d || !d->transition_above)
            continue;
        if (n_trans++ == 0)
            fprintf(stderr, "transitions:\n");
        fprintf(stderr, "  %-13s above %s (%d)\n",
                d->engine == EM_ENGINE_ROW ? "RowToColumnar" : "ColumnarToRow",
                d->node->name ? d->node->name : "?", d->node->id);
    }
    if (xp && n_trans == 0)
        fprintf(stderr, "transitions: none\n");
}

/* The configured report, before the query runs. */
static em_status print_report(const em_exec_plan *xp, const em_conf *conf, em_error *err) {
    int mode = 0;
    EM_TRY(em_conf_get_enum(conf, "spark.ember.sql.explain", &mode, err));
    /* the registry lists the values in em_explain_mode's order */
    if (mode == EM_EXPLAIN_NONE)
        return EM_OK;
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_status s = em_exec_plan_report(xp, (em_explain_mode)mode, &sb, err);
    if (s == EM_OK && sb.len)
        fprintf(stderr, "ember run: overrides (spark.ember.sql.explain=%s):\n%s%s",
                em_conf_get_text(conf, "spark.ember.sql.explain"), em_strbuf_cstr(&sb),
                sb.data[sb.len - 1] == '\n' ? "" : "\n");
    em_strbuf_reset(&sb);
    return s;
}

/* The runtime options the overrides' settings imply. */
static em_status runtime_from_conf(run_args *a, em_exec_plan *xp, em_error *err) {
    int32_t slots = 0;
    EM_TRY(em_conf_get_int(a->conf, "spark.ember.sql.concurrentNativeTasks", &slots, err));
    a->ro.concurrent_native_tasks = slots;
    /* a pipeline run twice would write its operators' dump twice */
    const char *ids = em_conf_get_text(a->conf, "spark.ember.sql.lore.idsToDump");
    a->ro.prepass_filters = !(ids && ids[0]);
    a->lore.xp = xp;
    a->ro.build = em_lore_exec_build;
    a->ro.build_ctx = &a->lore; /* the session is set once the query is cut */
    return EM_OK;
}

static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How many broadcasts a run may plan again as shuffles when they do not fit
 * in its memory budget (each takes another attempt). */
#define RUN_MAX_UNBROADCASTS 8

/* Decides the engines and cuts the query. */
static em_status plan_query(run_args *a, em_plan *plan, em_exec_plan **xp, em_cli_profile *prof,
                            em_query **q, em_error *err) {
    EM_TRY(em_overrides_apply(plan, a->conf, xp, err));
    EM_TRY(print_report(*xp, a->conf, err));
    EM_TRY(em_exec_plan_check_test_mode(*xp, a->conf, EM_HOST_EMBER, err));
    EM_TRY(runtime_from_conf(a, *xp, err));
    EM_TRY(em_cli_profile_setup(a->conf, *xp, prof, &a->ro, err));
    EM_TRY(em_query_create(plan, &a->ro, q, err));
    /* LORE (spark.ember.sql.lore.*): its errors stop the run before any
     * task; the dump folder is only created once everything checked out */
    return em_lore_session_create_xp(a->conf, *xp, &a->lore.session, err);
}

/* Runs the query once, SIGINT and SIGTERM cancelling it. */
static em_status run_query_once(em_query *q, em_error *err) {
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = run_on_signal;
    sigemptyset(&sa.sa_mask);
    run_query = q;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    em_status s = em_query_run(q, err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    run_query = NULL;
    return s;
}

int em_cli_run(int argc, char **argv) {
    em_error err;
    memset(&err, 0, sizeof err);
    /* the expression classes' switches must be known before --conf is read */
    if (em_overrides_register_confs(&err) != EM_OK) {
        fprintf(stderr, "ember run: %s\n", err.msg);
        return 1;
    }
    run_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        em_conf_destroy(a.conf);
        return rc < 0 ? 0 : rc;
    }
    em_retype_ctx *rt = NULL;
    em_plan *plan = NULL;
    em_exec_plan *xp = NULL;
    em_query *q = NULL;
    em_status s = EM_OK;
    /* the process is held to the budget, not only its pools: few freed blocks
     * are kept resident for reuse, and the C library hands freed memory back
     * (its default thresholds grow to keep up to 32 MiB blocks in the heap) */
    if (a.ro.memory_budget > 0) {
        em_memory_set_cache_limit(a.ro.memory_budget / 16);
#ifdef __GLIBC__
        mallopt(M_MMAP_THRESHOLD, 512 * 1024);
        mallopt(M_TRIM_THRESHOLD, 4 * 1024 * 1024);
#endif
    }
    if (a.warehouse || a.retype)
        s = em_retype_ctx_create(a.warehouse, a.retype, &rt, &err);
    if (s == EM_OK)
        s = em_cli_load_plan(a.plan, a.version, rt, &plan, &err);
    if (s == EM_OK && rt && em_retype_ctx_error(rt))
        fprintf(stderr, "ember run: --retype: %s\n", em_retype_ctx_error(rt));
    em_cli_profile prof = {.enforced = false}; /* resource profiles, until em_query_create */
    run_output out = {.fd = -1};
    bool streams = output_streams(&a), out_open = false;
    if (streams) {
        a.ro.result_sink = output_batch;
        a.ro.result_sink_ctx = &out;
    }
    double t0 = wall_seconds();
    for (int attempt = 0; s == EM_OK; attempt++) {
        s = plan_query(&a, plan, &xp, &prof, &q, &err);
        if (s == EM_OK && streams && !out_open) {
            s = output_open(&out, &a, em_query_schema(q), &err);
            out_open = true;
        } else if (s == EM_OK && out_open) {
            out.schema = em_query_schema(q); /* stdout kept from the last attempt */
        }
        if (s == EM_OK)
            s = run_query_once(q, &err);
        /* a broadcast over the budget: planned as a shuffle, as Spark plans a
         * build side too big to broadcast, and the query runs again (not
         * with LORE, whose dump of the first attempt is already written, nor
         * after rows went to stdout, which cannot be taken back) */
        const em_plan_node *x = s == EM_ERR_OOM_BUDGET && !run_interrupted && !a.lore.session &&
                                        !(out.rows > 0 && out.f == stdout) &&
                                        attempt < RUN_MAX_UNBROADCASTS
                                    ? em_query_oom_broadcast(q)
                                    : NULL;
        if (!x)
            break;
        if (out_open && out.f != stdout) { /* stdout has its header, and no row yet */
            output_abort(&out);
            out_open = false;
        }
        int threads = em_query_threads(q);
        em_query_destroy(q); /* before the plan changes: its tasks read it */
        em_exec_plan_destroy(xp);
        q = NULL;
        xp = NULL;
#ifdef __GLIBC__
        malloc_trim(0); /* the next attempt starts from what the process needs */
#endif
        int parts = 0, n_joins = 0;
        em_error e2;
        memset(&e2, 0, sizeof e2);
        /* a few partitions per thread, so that the tasks beside each other
         * hold a small part of the build side each */
        if (em_plan_unbroadcast(plan, x, 16 * threads, &n_joins, &parts, &e2) != EM_OK) {
            fprintf(stderr, "ember run: cannot plan %s (%d) as a shuffle: %s\n", x->name, x->id,
                    e2.msg);
            break;
        }
        fprintf(stderr,
                "ember run: %s (%d) does not fit in the memory budget: %d join%s reading it "
                "run%s as shuffled hash join%s over %d partitions; running the query again\n",
                x->name, x->id, n_joins, n_joins == 1 ? "" : "s", n_joins == 1 ? "s" : "",
                n_joins == 1 ? "" : "s", parts);
        memset(&err, 0, sizeof err);
        s = EM_OK;
    }
    double secs = wall_seconds() - t0;
    if (s == EM_OK && run_interrupted)
        s = EM_FAIL(&err, EM_ERR_CANCELLED, "interrupted");
    if (s == EM_OK)
        s = streams ? output_finish(&out, &err)
                    : write_table_output(&a, em_query_schema(q), em_query_result(q), &err);
    else if (out_open)
        output_abort(&out);
    if (q && a.metrics) {
        print_metrics(q, xp, secs);
        em_cli_profile_print_metrics(q, stderr);
    }
    if (a.lore.session)
        fprintf(stderr, "ember run: LORE dump: %lld files, %lld bytes\n",
                (long long)em_lore_session_files(a.lore.session),
                (long long)em_lore_session_bytes(a.lore.session));
    if (s != EM_OK)
        fprintf(stderr, "ember run: %s\n", err.msg[0] ? err.msg : em_status_name(s));
    em_query_destroy(q);
    em_lore_session_destroy(a.lore.session); /* after the query: its tasks wrote through it */
    em_exec_plan_destroy(xp); /* after the query: its tasks read the decisions */
    em_plan_destroy(plan);
    em_retype_ctx_destroy(rt);
    em_conf_destroy(a.conf);
    if (run_interrupted)
        return 130;
    return s == EM_OK ? 0 : 1;
}
