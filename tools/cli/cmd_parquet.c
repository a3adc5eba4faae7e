/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember parquet schema|meta|head|stats FILE`: inspection in the manner of
 * parquet-tools and parquet-cli, through libember's public Parquet API only.
 *
 *   schema  one line per column: Spark type, nullability, the Parquet physical
 *           type (of the first column chunk) and the Parquet annotation that
 *           carries the Spark type
 *   meta    footer facts: created_by, rows, row groups, and per row group and
 *           column the codec, encodings, sizes, page offsets and value count
 *   stats   per row group and column: values, null count, min and max decoded
 *           to values of the column's Spark type
 *   head    the first N rows (default 10) as an aligned table, CSV (RFC 4180,
 *           header line) or JSON lines, optionally of chosen columns in the
 *           order given
 *
 * Values are printed in the canonical value text of ember/value_text.h, the
 * text the interop tests compare with DuckDB and Polars. In tables a NULL shows
 * as NULL and control characters are escaped (\n, \t, \xNN) so every row stays
 * on one line; CSV and JSON carry the text exactly.
 *
 * Output discipline: schema, meta, stats and the table form of head render into
 * a memory buffer that reaches stdout only once the whole command has succeeded,
 * so an error never leaves a half-printed report; csv and json stream batch by
 * batch (what was printed is correct, the error follows on stderr). Errors name
 * the file; the library's message adds the byte offset for corrupt input.
 * Exit codes: 0 success, 1 failure, 2 usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ember/column.h"
#include "ember/parquet.h"
#include "ember/value_text.h"

/* ---------------------------------------------------------------------------
 * A report under construction. The first failure sticks (as SQLite's
 * mallocFailed does): later appends are skipped and the caller checks st once.
 */
typedef struct report {
    em_strbuf sb; /* owned text */
    em_status st; /* EM_OK, or the first failure */
    em_error err; /* that failure */
} report;

static void rp_put(report *r, const char *p, size_t n) {
    if (r->st == EM_OK)
        r->st = em_strbuf_append(&r->sb, p, n, &r->err);
}

static void rp_puts(report *r, const char *s) { rp_put(r, s, strlen(s)); }

static void rp_printf(report *r, const char *fmt, ...) EM_PRINTF(2, 3);
static void rp_printf(report *r, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* Callers format numbers and short names only; longer text goes through rp_puts. */
    rp_put(r, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void rp_pad(report *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        rp_put(r, " ", 1);
}

/* Table cell text: control characters and backslashes escaped so a cell
 * stays on one line and the columns stay aligned. */
static void rp_cell_text(report *r, const char *s, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != 0x7f && ch != '\\')
            continue;
        rp_put(r, s + start, i - start);
        start = i + 1;
        switch (ch) {
        case '\n': rp_puts(r, "\\n"); break;
        case '\r': rp_puts(r, "\\r"); break;
        case '\t': rp_puts(r, "\\t"); break;
        case '\\': rp_puts(r, "\\\\"); break;
        default: rp_printf(r, "\\x%02x", ch); break;
        }
    }
    rp_put(r, s + start, n - start);
}

/* Display width of UTF-8 text: one column per code point (continuation bytes
 * take none). East Asian wide characters are not measured. */
static size_t display_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

/* ---------------------------------------------------------------------------
 * Aligned tables: rows of owned cell strings, row 0 the header, rendered with
 * two spaces between columns and a dashed rule under the header.
 */
typedef struct cell_table {
    int n_cols;
    int64_t n_rows;
    int64_t cap_rows;
    char **cells; /* owned strings, n_rows * n_cols, row-major */
    bool *right;  /* owned, per column: right-align the body (numbers) */
} cell_table;

static bool table_init(cell_table *t, int n_cols) {
    memset(t, 0, sizeof *t);
    t->n_cols = n_cols;
    t->right = calloc((size_t)n_cols + 1, sizeof *t->right);
    return t->right != NULL;
}

static void table_free(cell_table *t) {
    for (int64_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->right);
    memset(t, 0, sizeof *t);
}

/* Appends a row of n_cols strings (copied; NULL prints as empty). */
static bool table_add(cell_table *t, const char *const *row) {
    if (t->n_rows == t->cap_rows) {
        int64_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **p = realloc(t->cells, (size_t)cap * (size_t)t->n_cols * sizeof *p);
        if (!p)
            return false;
        t->cells = p;
        t->cap_rows = cap;
    }
    char **dst = t->cells + t->n_rows * t->n_cols;
    for (int c = 0; c < t->n_cols; c++) {
        dst[c] = strdup(row[c] ? row[c] : "");
        if (!dst[c]) {
            for (int k = 0; k < c; k++)
                free(dst[k]);
            return false;
        }
    }
    t->n_rows++;
    return true;
}

static void table_render(const cell_table *t, report *r, const char *indent) {
    size_t *w = calloc((size_t)t->n_cols + 1, sizeof *w);
    if (!w) {
        if (r->st == EM_OK)
            r->st = EM_FAIL(&r->err, EM_ERR_NOMEM, "out of memory");
        return;
    }
    for (int64_t i = 0; i < t->n_rows * t->n_cols; i++) {
        size_t cw = display_width(t->cells[i]);
        if (cw > w[i % t->n_cols])
            w[i % t->n_cols] = cw;
    }
    for (int64_t row = 0; row < t->n_rows; row++) {
        rp_puts(r, indent);
        for (int c = 0; c < t->n_cols; c++) {
            const char *s = t->cells[row * t->n_cols + c];
            size_t pad = w[c] - display_width(s);
            bool last = c + 1 == t->n_cols;
            bool right = t->right[c] && row > 0;
            if (right)
                rp_pad(r, pad);
            rp_puts(r, s);
            if (!last)
                rp_pad(r, (right ? 0 : pad) + 2);
        }
        rp_puts(r, "\n");
        if (row == 0) {
            rp_puts(r, indent);
            for (int c = 0; c < t->n_cols; c++) {
                for (size_t k = 0; k < w[c]; k++)
                    rp_puts(r, "-");
                if (c + 1 < t->n_cols)
                    rp_puts(r, "  ");
            }
            rp_puts(r, "\n");
        }
    }
    free(w);
}

static bool type_is_numeric(em_type t) {
    switch (t.id) {
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE:
    case EM_TYPE_DECIMAL: return true;
    default: return false;
    }
}

/* ---------------------------------------------------------------------------
 * Arguments and errors.
 */

typedef enum head_format { HEAD_TABLE, HEAD_CSV, HEAD_JSON } head_format;

typedef struct pq_args {
    const char *sub;     /* schema, meta, head or stats */
    const char *path;    /* the Parquet file */
    int64_t n_rows;      /* head: rows to print */
    const char *columns; /* head: comma-separated names, NULL = all */
    head_format format;  /* head: output form */
} pq_args;

static void usage(FILE *out) {
    fprintf(out, "usage: ember parquet <command> [options] FILE\n\n"
                 "commands:\n"
                 "  schema FILE       columns: Spark type, nullability, Parquet types\n"
                 "  meta FILE         footer: created_by, rows, row groups, column chunks\n"
                 "  stats FILE        per row group and column: values, nulls, min, max\n"
                 "  head [-n N] [--columns a,b] [--format table|csv|json] FILE\n"
                 "                    the first N rows (default 10)\n");
}

static int usage_error(const char *fmt, ...) EM_PRINTF(1, 2);
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ember parquet: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    usage(stderr);
    return 2;
}

/* Prints the library's error, making sure the file is named. */
static int file_error(const char *path, const em_error *err) {
    if (strstr(err->msg, path))
        fprintf(stderr, "ember parquet: %s\n", err->msg);
    else
        fprintf(stderr, "ember parquet: %s: %s\n", path, err->msg);
    return 1;
}

static bool option_is(const char *arg, const char *name) {
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* An option's value from "--opt=value" or from the next argument. */
static const char *option_value(int argc, char **argv, int *i) {
    const char *eq = strchr(argv[*i], '=');
    if (argv[*i][1] == '-' && eq)
        return eq + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

/* Returns -1 when parsed, else the exit code (0 after --help). */
static int parse_args(int argc, char **argv, pq_args *a) {
    memset(a, 0, sizeof *a);
    a->n_rows = 10;
    a->format = HEAD_TABLE;
    if (argc < 1)
        return usage_error("missing command");
    a->sub = argv[0];
    if (strcmp(a->sub, "-h") == 0 || strcmp(a->sub, "--help") == 0 || strcmp(a->sub, "help") == 0) {
        usage(stdout);
        return 0;
    }
    bool head = strcmp(a->sub, "head") == 0;
    if (!head && strcmp(a->sub, "schema") != 0 && strcmp(a->sub, "meta") != 0 &&
        strcmp(a->sub, "stats") != 0)
        return usage_error("unknown command '%s'", a->sub);
    bool only_files = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool opt = !only_files && arg[0] == '-' && arg[1] != '\0';
        if (opt && strcmp(arg, "--") == 0) {
            only_files = true;
        } else if (opt && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
            usage(stdout);
            return 0;
        } else if (opt && head && (strcmp(arg, "-n") == 0 || option_is(arg, "--rows"))) {
            const char *v = option_value(argc, argv, &i);
            char *end = NULL;
            errno = 0;
            long long n = v ? strtoll(v, &end, 10) : -1;
            if (!v || *v == '\0' || *end != '\0' || errno || n < 0)
                return usage_error("%s needs a row count >= 0", arg);
            a->n_rows = n;
        } else if (opt && head && option_is(arg, "--columns")) {
            a->columns = option_value(argc, argv, &i);
            if (!a->columns || !*a->columns)
                return usage_error("--columns needs a comma-separated list of names");
        } else if (opt && head && option_is(arg, "--format")) {
            const char *v = option_value(argc, argv, &i);
            if (v && strcmp(v, "table") == 0)
                a->format = HEAD_TABLE;
            else if (v && strcmp(v, "csv") == 0)
                a->format = HEAD_CSV;
            else if (v && strcmp(v, "json") == 0)
                a->format = HEAD_JSON;
            else
                return usage_error("--format must be table, csv or json");
        } else if (opt) {
            return usage_error("unknown option '%s' for %s", arg, a->sub);
        } else if (a->path) {
            return usage_error("one FILE expected, got '%s' and '%s'", a->path, arg);
        } else {
            a->path = arg;
        }
    }
    if (!a->path)
        return usage_error("%s: missing FILE", a->sub);
    return -1;
}

/* Writes a finished report to stdout; a failed write (full disk, closed
 * pipe) is an error too. */
static int emit(report *r) {
    if (r->st != EM_OK) {
        fprintf(stderr, "ember parquet: %s\n", r->err.msg);
        return 1;
    }
    if ((r->sb.len && fwrite(r->sb.data, 1, r->sb.len, stdout) != r->sb.len) ||
        fflush(stdout) != 0) {
        fprintf(stderr, "ember parquet: writing stdout: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * schema
 */

/* The Parquet annotation a Spark-compatible writer gives a Spark type; "-"
 * when the physical type alone carries it. (The public API exposes the
 * resulting Spark type and the physical type, not the footer's annotation.) */
static void implied_logical(em_type t, const char *physical, char *buf, size_t cap) {
    switch (t.id) {
    case EM_TYPE_BYTE: snprintf(buf, cap, "INT(8,true)"); break;
    case EM_TYPE_SHORT: snprintf(buf, cap, "INT(16,true)"); break;
    case EM_TYPE_STRING: snprintf(buf, cap, "STRING"); break;
    case EM_TYPE_DATE: snprintf(buf, cap, "DATE"); break;
    case EM_TYPE_DECIMAL: snprintf(buf, cap, "DECIMAL(%d,%d)", t.precision, t.scale); break;
    case EM_TYPE_TIMESTAMP:
        snprintf(buf, cap, "%s",
                 strcmp(physical, "INT96") == 0 ? "- (legacy INT96 timestamp)"
                                                : "TIMESTAMP(adjustedToUTC=true)");
        break;
    case EM_TYPE_TIMESTAMP_NTZ: snprintf(buf, cap, "TIMESTAMP(adjustedToUTC=false)"); break;
    case EM_TYPE_NULL: snprintf(buf, cap, "UNKNOWN"); break;
    default: snprintf(buf, cap, "-"); break;
    }
}

static em_status cmd_schema(em_pq_file *f, report *r, em_error *err) {
    const em_schema *s = em_pq_file_schema(f);
    int n_rg = em_pq_file_num_row_groups(f);
    rp_puts(r, "file: ");
    rp_puts(r, em_pq_file_path(f));
    rp_printf(r, "\ncolumns: %d\nrows: %" PRId64 "\n\n", s->n_fields, em_pq_file_num_rows(f));
    static const char *const heads[] = {"#",        "column",           "spark type",
                                        "nullable", "parquet physical", "parquet logical"};
    enum { N_COLS = sizeof heads / sizeof heads[0] };
    cell_table t;
    if (!table_init(&t, N_COLS) || !table_add(&t, heads))
        goto oom;
    t.right[0] = true;
    for (int i = 0; i < s->n_fields; i++) {
        const em_field *fl = &s->fields[i];
        char num[16], type[64], physical[32] = "-", logical[64];
        snprintf(num, sizeof num, "%d", i);
        em_type_format(fl->type, type, sizeof type);
        if (n_rg > 0) {
            em_pq_chunk_info ci;
            em_status st = em_pq_file_chunk_info(f, 0, i, &ci, err);
            if (st != EM_OK) {
                table_free(&t);
                return st;
            }
            snprintf(physical, sizeof physical, "%s", ci.physical_type);
        }
        implied_logical(fl->type, physical, logical, sizeof logical);
        const char *row[N_COLS] = {num,      fl->name, type, fl->nullable ? "true" : "false",
                                   physical, logical};
        if (!table_add(&t, row))
            goto oom;
    }
    table_render(&t, r, "");
    table_free(&t);
    return EM_OK;
oom:
    table_free(&t);
    return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
}

/* ---------------------------------------------------------------------------
 * meta
 */

static const char *codec_name(em_pq_codec c) {
    switch (c) {
    case EM_PQ_UNCOMPRESSED: return "UNCOMPRESSED";
    case EM_PQ_SNAPPY: return "SNAPPY";
    case EM_PQ_GZIP: return "GZIP";
    case EM_PQ_LZO: return "LZO";
    case EM_PQ_BROTLI: return "BROTLI";
    case EM_PQ_LZ4: return "LZ4";
    case EM_PQ_ZSTD: return "ZSTD";
    case EM_PQ_LZ4_RAW: return "LZ4_RAW";
    }
    return "UNKNOWN";
}

static em_status cmd_meta(em_pq_file *f, report *r, em_error *err) {
    const em_schema *s = em_pq_file_schema(f);
    int n_rg = em_pq_file_num_row_groups(f);
    const char *created_by = em_pq_file_created_by(f);
    struct stat st;
    rp_puts(r, "file: ");
    rp_puts(r, em_pq_file_path(f));
    rp_puts(r, "\n");
    if (stat(em_pq_file_path(f), &st) == 0)
        rp_printf(r, "size: %" PRId64 " bytes\n", (int64_t)st.st_size);
    rp_puts(r, "created_by: ");
    rp_cell_text(r, created_by ? created_by : "(not recorded)",
                 strlen(created_by ? created_by : "(not recorded)"));
    rp_printf(r, "\nrows: %" PRId64 "\nrow groups: %d\ncolumns: %d\n", em_pq_file_num_rows(f), n_rg,
              s->n_fields);
    static const char *const heads[] = {"column",     "type",         "codec", "encodings",
                                        "compressed", "uncompressed", "ratio", "data page",
                                        "dict page",  "values"};
    enum { N_COLS = sizeof heads / sizeof heads[0] };
    for (int rg = 0; rg < n_rg; rg++) {
        cell_table t;
        if (!table_init(&t, N_COLS) || !table_add(&t, heads)) {
            table_free(&t);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        }
        for (int c = 4; c < N_COLS; c++)
            t.right[c] = true;
        int64_t comp = 0, uncomp = 0;
        for (int col = 0; col < s->n_fields; col++) {
            em_pq_chunk_info ci;
            em_status status = em_pq_file_chunk_info(f, rg, col, &ci, err);
            if (status != EM_OK) {
                table_free(&t);
                return status;
            }
            comp += ci.total_compressed_size;
            uncomp += ci.total_uncompressed_size;
            char cs[24], us[24], ratio[24] = "-", dpo[24], dico[24] = "-", nv[24];
            snprintf(cs, sizeof cs, "%" PRId64, ci.total_compressed_size);
            snprintf(us, sizeof us, "%" PRId64, ci.total_uncompressed_size);
            if (ci.total_compressed_size > 0)
                snprintf(ratio, sizeof ratio, "%.2f",
                         (double)ci.total_uncompressed_size / (double)ci.total_compressed_size);
            snprintf(dpo, sizeof dpo, "%" PRId64, ci.data_page_offset);
            if (ci.dictionary_page_offset >= 0)
                snprintf(dico, sizeof dico, "%" PRId64, ci.dictionary_page_offset);
            snprintf(nv, sizeof nv, "%" PRId64, ci.num_values);
            const char *row[N_COLS] = {s->fields[col].name,
                                       ci.physical_type,
                                       codec_name(ci.codec),
                                       ci.encodings,
                                       cs,
                                       us,
                                       ratio,
                                       dpo,
                                       dico,
                                       nv};
            if (!table_add(&t, row)) {
                table_free(&t);
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
            }
        }
        rp_printf(r,
                  "\nrow group %d: %" PRId64 " rows, %" PRId64 " bytes compressed, %" PRId64
                  " uncompressed\n",
                  rg, em_pq_file_row_group_rows(f, rg), comp, uncomp);
        table_render(&t, r, "  ");
        table_free(&t);
    }
    return EM_OK;
}

/* ---------------------------------------------------------------------------
 * stats
 */

/* The canonical text of a statistics value: the widened value is narrowed
 * back into a one-row column of the Spark type and printed as any value is. */
static em_status stat_text(em_type t, const em_pq_stats *st, bool is_max, em_strbuf *raw,
                           em_error *err) {
    em_column c;
    memset(&c, 0, sizeof c);
    EM_TRY(em_column_init(&c, t, 1, NULL, err));
    em_status s = EM_OK;
    int64_t i = is_max ? st->max.i64 : st->min.i64;
    double d = is_max ? st->max.f64 : st->min.f64;
    switch (t.id) {
    case EM_TYPE_BOOLEAN: {
        bool b = i != 0;
        s = em_column_append_fixed(&c, &b, err);
        break;
    }
    case EM_TYPE_BYTE: {
        int8_t v = (int8_t)i;
        s = em_column_append_fixed(&c, &v, err);
        break;
    }
    case EM_TYPE_SHORT: {
        int16_t v = (int16_t)i;
        s = em_column_append_fixed(&c, &v, err);
        break;
    }
    case EM_TYPE_INT:
    case EM_TYPE_DATE: {
        int32_t v = (int32_t)i;
        s = em_column_append_fixed(&c, &v, err);
        break;
    }
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: s = em_column_append_fixed(&c, &i, err); break;
    case EM_TYPE_FLOAT: {
        float v = (float)d;
        s = em_column_append_fixed(&c, &v, err);
        break;
    }
    case EM_TYPE_DOUBLE: s = em_column_append_fixed(&c, &d, err); break;
    case EM_TYPE_DECIMAL: {
        em_i128 v = is_max ? st->max.i128 : st->min.i128;
        s = em_column_append_fixed(&c, &v, err);
        break;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY:
        s = em_column_append_bytes(&c, is_max ? st->max.bytes.ptr : st->min.bytes.ptr,
                                   is_max ? st->max.bytes.len : st->min.bytes.len, err);
        break;
    default: s = em_column_append_null(&c, err); break;
    }
    bool is_null = false;
    if (s == EM_OK)
        s = em_value_text(&c, 0, raw, &is_null, err);
    if (s == EM_OK && is_null)
        s = em_strbuf_appends(raw, "NULL", err);
    em_column_reset(&c);
    return s;
}

static em_status cmd_stats(em_pq_file *f, report *r, em_error *err) {
    const em_schema *s = em_pq_file_schema(f);
    int n_rg = em_pq_file_num_row_groups(f);
    rp_puts(r, "file: ");
    rp_puts(r, em_pq_file_path(f));
    rp_printf(r, "\nrows: %" PRId64 "\nrow groups: %d\n", em_pq_file_num_rows(f), n_rg);
    static const char *const heads[] = {"column", "type", "values", "nulls", "min", "max"};
    enum { N_COLS = sizeof heads / sizeof heads[0] };
    em_strbuf raw;
    em_strbuf_init(&raw);
    report mn = {0}, mx = {0};
    cell_table t;
    memset(&t, 0, sizeof t);
    em_status status = EM_OK;
    for (int rg = 0; rg < n_rg && status == EM_OK; rg++) {
        if (!table_init(&t, N_COLS) || !table_add(&t, heads)) {
            status = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
            break;
        }
        t.right[2] = t.right[3] = true;
        for (int col = 0; col < s->n_fields && status == EM_OK; col++) {
            em_type ty = s->fields[col].type;
            em_pq_stats st;
            status = em_pq_file_stats(f, rg, col, &st, err);
            if (status != EM_OK)
                break;
            char type[64], nv[24], nulls[24] = "-";
            em_type_format(ty, type, sizeof type);
            snprintf(nv, sizeof nv, "%" PRId64, st.num_values);
            if (st.has_null_count)
                snprintf(nulls, sizeof nulls, "%" PRId64, st.null_count);
            em_strbuf_clear(&mn.sb);
            em_strbuf_clear(&mx.sb);
            if (st.has_min_max) {
                for (int k = 0; k < 2 && status == EM_OK; k++) {
                    em_strbuf_clear(&raw);
                    status = stat_text(ty, &st, k == 1, &raw, err);
                    rp_cell_text(k ? &mx : &mn, raw.data ? raw.data : "", raw.len);
                }
                if (status == EM_OK && (mn.st != EM_OK || mx.st != EM_OK))
                    status = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
                if (status != EM_OK)
                    break;
            }
            const char *row[N_COLS] = {s->fields[col].name,
                                       type,
                                       nv,
                                       nulls,
                                       st.has_min_max ? em_strbuf_cstr(&mn.sb) : "-",
                                       st.has_min_max ? em_strbuf_cstr(&mx.sb) : "-"};
            if (!table_add(&t, row))
                status = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        }
        if (status == EM_OK) {
            rp_printf(r, "\nrow group %d: %" PRId64 " rows\n", rg,
                      em_pq_file_row_group_rows(f, rg));
            table_render(&t, r, "  ");
        }
        table_free(&t);
    }
    em_strbuf_reset(&raw);
    em_strbuf_reset(&mn.sb);
    em_strbuf_reset(&mx.sb);
    return status;
}

/* ---------------------------------------------------------------------------
 * head
 */

/* Resolves --columns to file column indices (*out owned by the caller).
 * Returns -1 when resolved, else the exit code. */
static int resolve_columns(const em_pq_file *f, const char *list, int **out, int *n_out) {
    const em_schema *s = em_pq_file_schema(f);
    *out = NULL;
    *n_out = 0;
    if (!list)
        return -1;
    int *idx = malloc((strlen(list) + 1) * sizeof *idx);
    char *copy = strdup(list);
    if (!idx || !copy) {
        free(idx);
        free(copy);
        fprintf(stderr, "ember parquet: out of memory\n");
        return 1;
    }
    int n = 0;
    char *save = NULL;
    for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        int i = em_schema_find(s, name);
        if (i < 0) {
            fprintf(stderr,
                    "ember parquet: %s has no column '%s'; its columns are:", em_pq_file_path(f),
                    name);
            for (int k = 0; k < s->n_fields; k++)
                fprintf(stderr, "%s %s", k ? "," : "", s->fields[k].name);
            fputc('\n', stderr);
            free(idx);
            free(copy);
            return 1;
        }
        idx[n++] = i;
    }
    free(copy);
    if (n == 0) {
        free(idx);
        return usage_error("--columns names no column");
    }
    *out = idx;
    *n_out = n;
    return -1;
}

/* State of one `head` run. */
typedef struct head_state {
    const pq_args *a;
    const em_schema *schema; /* borrowed from the reader */
    cell_table table;        /* HEAD_TABLE: the rows so far */
    const char **row;        /* HEAD_TABLE: one row's cell pointers */
    report *cells;           /* HEAD_TABLE: one row's cell texts */
    em_strbuf line;          /* HEAD_CSV/JSON: the line being built */
    em_strbuf raw;           /* a value's canonical text */
} head_state;

static em_status head_line_start(head_state *h, em_error *err) {
    em_strbuf_clear(&h->line);
    if (h->a->format != HEAD_CSV)
        return EM_OK;
    for (int c = 0; c < h->schema->n_fields; c++) {
        const char *name = h->schema->fields[c].name;
        if (c)
            EM_TRY(em_strbuf_append(&h->line, ",", 1, err));
        EM_TRY(em_csv_escape(&h->line, name, strlen(name), ',', err));
    }
    EM_TRY(em_strbuf_append(&h->line, "\n", 1, err));
    return EM_OK;
}

/* Formats row `i` of batch b into the table or onto stdout. */
static em_status head_row(head_state *h, const em_batch *b, int64_t i, em_error *err) {
    if (h->a->format == HEAD_TABLE) {
        for (int c = 0; c < b->n_cols; c++) {
            bool is_null = false;
            em_strbuf_clear(&h->raw);
            em_strbuf_clear(&h->cells[c].sb);
            EM_TRY(em_value_text(&b->cols[c], i, &h->raw, &is_null, err));
            if (is_null)
                rp_puts(&h->cells[c], "NULL");
            else
                rp_cell_text(&h->cells[c], em_strbuf_cstr(&h->raw), h->raw.len);
            if (h->cells[c].st != EM_OK)
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
            h->row[c] = em_strbuf_cstr(&h->cells[c].sb);
        }
        if (!table_add(&h->table, h->row))
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        return EM_OK;
    }
    em_strbuf_clear(&h->line);
    for (int c = 0; c < b->n_cols; c++) {
        if (h->a->format == HEAD_CSV) {
            if (c)
                EM_TRY(em_strbuf_append(&h->line, ",", 1, err));
            size_t mark = h->line.len;
            EM_TRY(em_value_csv(&b->cols[c], i, ',', &h->line, err));
            /* Any empty non-null text (an empty binary too) is written "" so
             * it differs from NULL, which is an empty field. */
            if (h->line.len == mark && b->cols[c].type.id != EM_TYPE_NULL &&
                em_column_is_valid(&b->cols[c], i))
                EM_TRY(em_strbuf_append(&h->line, "\"\"", 2, err));
            continue;
        }
        const char *name = b->schema.fields[c].name;
        EM_TRY(em_strbuf_append(&h->line, c ? "," : "{", 1, err));
        EM_TRY(em_json_escape(&h->line, name, strlen(name), err));
        EM_TRY(em_strbuf_append(&h->line, ":", 1, err));
        EM_TRY(em_value_json(&b->cols[c], i, &h->line, err));
    }
    if (h->a->format == HEAD_JSON)
        EM_TRY(em_strbuf_append(&h->line, "}", 1, err));
    EM_TRY(em_strbuf_append(&h->line, "\n", 1, err));
    if (fwrite(h->line.data, 1, h->line.len, stdout) != h->line.len)
        return EM_FAIL(err, EM_ERR_IO, "writing stdout: %s", strerror(errno));
    return EM_OK;
}

static em_status head_run(em_pq_reader *r, head_state *h, int64_t *printed, em_error *err) {
    const pq_args *a = h->a;
    int n = h->schema->n_fields;
    if (a->format == HEAD_TABLE) {
        if (!table_init(&h->table, n))
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        h->row = calloc((size_t)n + 1, sizeof *h->row);
        h->cells = calloc((size_t)n + 1, sizeof *h->cells);
        if (!h->row || !h->cells)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        for (int c = 0; c < n; c++) {
            h->row[c] = h->schema->fields[c].name;
            h->table.right[c] = type_is_numeric(h->schema->fields[c].type);
        }
        if (!table_add(&h->table, h->row))
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    }
    /* The CSV header waits for the first batch (or the end), so a file whose
     * first page is corrupt prints nothing at all. */
    bool header_due = a->format != HEAD_TABLE;
    for (;;) {
        em_batch *b = NULL;
        em_status s = a->n_rows > *printed ? em_pq_reader_next(r, &b, err) : EM_DONE;
        if (s != EM_OK && s != EM_DONE)
            return s;
        if (header_due) {
            header_due = false;
            EM_TRY(head_line_start(h, err));
            if (h->line.len && fwrite(h->line.data, 1, h->line.len, stdout) != h->line.len)
                return EM_FAIL(err, EM_ERR_IO, "writing stdout: %s", strerror(errno));
        }
        if (s == EM_DONE)
            break;
        int64_t rows = em_batch_rows(b);
        for (int64_t k = 0; k < rows && *printed < a->n_rows; k++, (*printed)++)
            EM_TRY(head_row(h, b, b->sel ? b->sel[k] : k, err));
    }
    return EM_OK;
}

static int cmd_head(em_pq_file *f, const pq_args *a) {
    int *cols = NULL, n_cols = 0;
    int rc = resolve_columns(f, a->columns, &cols, &n_cols);
    if (rc >= 0)
        return rc;

    em_error err;
    em_error_clear(&err);
    em_pq_read_options o;
    memset(&o, 0, sizeof o);
    o.columns = cols;
    o.n_columns = n_cols;
    /* Small heads decode small batches: fewer rows converted, same result. */
    o.batch_rows = a->n_rows > 0 && a->n_rows < EM_BATCH_CAP ? a->n_rows : 0;
    em_pq_reader *r = NULL;
    if (em_pq_reader_open(f, &o, &r, &err) != EM_OK) {
        free(cols);
        return file_error(a->path, &err);
    }
    head_state h;
    memset(&h, 0, sizeof h);
    h.a = a;
    h.schema = em_pq_reader_schema(r);
    int n_fields = h.schema->n_fields;
    int64_t printed = 0;
    em_status s = head_run(r, &h, &printed, &err);
    em_pq_reader_close(r);
    free(cols);
    for (int c = 0; h.cells && c < n_fields; c++)
        em_strbuf_reset(&h.cells[c].sb);
    free(h.cells);
    free(h.row);
    em_strbuf_reset(&h.line);
    em_strbuf_reset(&h.raw);

    if (s != EM_OK) {
        if (a->format == HEAD_TABLE)
            table_free(&h.table);
        fflush(stdout);
        return file_error(a->path, &err);
    }
    if (a->format != HEAD_TABLE) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "ember parquet: writing stdout: %s\n", strerror(errno));
            return 1;
        }
        return 0;
    }
    report out = {0};
    table_render(&h.table, &out, "");
    table_free(&h.table);
    rp_printf(&out, "(%" PRId64 " of %" PRId64 " rows)\n", printed, em_pq_file_num_rows(f));
    rc = emit(&out);
    em_strbuf_reset(&out.sb);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Entry point.
 */

int em_cli_parquet(int argc, char **argv) {
    pq_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;

    em_error err;
    em_error_clear(&err);
    em_pq_file *f = NULL;
    if (em_pq_file_open(a.path, &f, &err) != EM_OK)
        return file_error(a.path, &err);
    if (strcmp(a.sub, "head") == 0) {
        rc = cmd_head(f, &a);
        em_pq_file_close(f);
        return rc;
    }
    report r = {0};
    em_status s;
    if (strcmp(a.sub, "schema") == 0)
        s = cmd_schema(f, &r, &err);
    else if (strcmp(a.sub, "meta") == 0)
        s = cmd_meta(f, &r, &err);
    else
        s = cmd_stats(f, &r, &err);
    em_pq_file_close(f);
    rc = s != EM_OK ? file_error(a.path, &err) : emit(&r);
    em_strbuf_reset(&r.sb);
    return rc;
}
