/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs the plan tests: every tests/plans/NAME.plan file (format: tests/plans/README.md).
 *
 * Each file is one cmocka test; each of its cases writes its inline tables
 * as Parquet into a fresh warehouse folder, parses the plan text, runs it
 * with the local runtime in every setting of SETTINGS (native alone; native
 * through the overrides with 2 threads and a scan split per file; the row
 * engine; two mixed trees) and compares the result rows, as canonical value
 * text, with the expected rows: in order, or as multisets. A case may
 * instead expect an error whose message holds a given text, and may be an
 * expected failure of the native or the row engine (xfail, xfail-row): it
 * must then fail there, and the runner fails when it passes. Every failure
 * names the file, the case's line and name, the setting and the first row
 * that differs; all failing cases of a file are listed on stdout.
 *
 * EMBER_PLAN_CASE=<text> runs only the cases whose file name or case name
 * contains the text (for debugging).
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ember/conf.h"
#include "ember/overrides.h"
#include "ember/parquet.h"
#include "ember/plan.h"
#include "ember/rowops.h"
#include "ember/runtime.h"
#include "ember/value_text.h"

/* ------------------------------------------------------------ small lists */

typedef struct strlist {
    char **v;
    int *line; /* source line of each entry */
    int n, cap;
} strlist;

static void sl_push(strlist *l, const char *s, size_t n, int line) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = realloc(l->v, sizeof *l->v * (size_t)l->cap);
        l->line = realloc(l->line, sizeof *l->line * (size_t)l->cap);
        if (!l->v || !l->line)
            fail_msg("out of memory");
    }
    l->v[l->n] = strndup(s, n);
    l->line[l->n++] = line;
}

static void sl_free(strlist *l) {
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    free(l->line);
    memset(l, 0, sizeof *l);
}

/* One CSV field: text (unquoted), or null for an unquoted NULL. */
typedef struct field {
    char *text; /* NULL: SQL null */
} field;

typedef struct row {
    field *f;
    int n;
    int line;
} row;

static void row_free(row *r) {
    for (int i = 0; i < r->n; i++)
        free(r->f[i].text);
    free(r->f);
    r->f = NULL;
    r->n = 0;
}

/* Splits a line into fields: separated by ',', surrounding blanks dropped,
 * "..." quotes a field ("" inside is one quote); an unquoted NULL is null.
 * False (and *why) on an unterminated quote. */
static bool split_fields(const char *s, row *out, const char **why) {
    memset(out, 0, sizeof *out);
    int cap = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        em_strbuf sb = {0};
        em_error ig;
        bool quoted = false;
        if (*p == '"') {
            quoted = true;
            p++;
            for (;;) {
                if (!*p) {
                    em_strbuf_reset(&sb);
                    *why = "unterminated quote";
                    return false;
                }
                if (*p == '"' && p[1] == '"') {
                    (void)em_strbuf_append(&sb, "\"", 1, &ig);
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    (void)em_strbuf_append(&sb, p++, 1, &ig);
                }
            }
            while (*p == ' ' || *p == '\t')
                p++;
        } else {
            const char *b = p;
            while (*p && *p != ',')
                p++;
            const char *e = p;
            while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            (void)em_strbuf_append(&sb, b, (size_t)(e - b), &ig);
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 8;
            out->f = realloc(out->f, sizeof *out->f * (size_t)cap);
        }
        if (!quoted && strcmp(em_strbuf_cstr(&sb), "NULL") == 0)
            out->f[out->n++].text = NULL;
        else
            out->f[out->n++].text = strdup(em_strbuf_cstr(&sb));
        em_strbuf_reset(&sb);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p) {
            *why = "text after a quoted field";
            return false;
        }
        return true;
    }
}

/* ------------------------------------------------------------ the format */

typedef struct pf_table {
    char *name;
    em_schema schema;
    bool has_schema;
    int files;        /* Parquet files the rows are spread over; 0: empty folder */
    int64_t rowgroup; /* rows per row group; 0: the writer's default */
    int partitioned;  /* the last N columns are Hive partition folders */
    strlist rows;     /* raw lines (generators expanded when written) */
    int line;
} pf_table;

enum { EXPECT_NONE, EXPECT_ORDERED, EXPECT_UNORDERED, EXPECT_ERROR };

typedef struct pf_metric {
    int node_id;
    int64_t rows;
    int line;
} pf_metric;

typedef struct pf_case {
    char *name;
    int line;
    pf_table tables[16];
    int n_tables;
    em_strbuf plan;
    int plan_line;
    char *version;
    int ansi; /* -1: the shim's default */
    char *time_zone;
    bool empty_table_folders;
    bool no_runtime_filters;
    int expect;
    char *error_text;
    strlist expect_rows;
    char *xfail;     /* expected to fail natively */
    char *xfail_row; /* expected to fail on the row engine */
    strlist confs;   /* "key=value", for the overrides' configuration */
    pf_metric metrics[8];
    int n_metrics;
    char *bad; /* a format error found while reading the case */
} pf_case;

static void case_free(pf_case *c) {
    free(c->name);
    for (int i = 0; i < c->n_tables; i++) {
        free(c->tables[i].name);
        if (c->tables[i].has_schema)
            em_schema_reset(&c->tables[i].schema);
        sl_free(&c->tables[i].rows);
    }
    em_strbuf_reset(&c->plan);
    free(c->version);
    free(c->time_zone);
    free(c->error_text);
    sl_free(&c->expect_rows);
    free(c->xfail);
    free(c->xfail_row);
    sl_free(&c->confs);
    free(c->bad);
    memset(c, 0, sizeof *c);
}

static void case_bad(pf_case *c, int line, const char *fmt, const char *arg) {
    if (c->bad)
        return;
    char msg[512];
    char what[400];
    snprintf(what, sizeof what, fmt, arg);
    snprintf(msg, sizeof msg, "line %d: %s", line, what);
    c->bad = strdup(msg);
}

static char *trim_dup(const char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    return strndup(s, n);
}

/* "t (a int, b decimal(7,2)) files=2 rowgroup=100" */
static void parse_table_header(pf_case *c, const char *s, int line) {
    if (c->n_tables == (int)(sizeof c->tables / sizeof *c->tables)) {
        case_bad(c, line, "%s", "too many tables");
        return;
    }
    pf_table *t = &c->tables[c->n_tables++];
    memset(t, 0, sizeof *t);
    t->files = 1;
    t->line = line;
    while (*s == ' ')
        s++;
    const char *open = strchr(s, '(');
    if (!open) {
        case_bad(c, line, "%s", "table header wants: NAME (col type, ...)");
        return;
    }
    char *head = strndup(s, (size_t)(open - s));
    t->name = trim_dup(head);
    free(head);
    int depth = 0;
    const char *p = open, *close = NULL;
    for (; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && --depth == 0) {
            close = p;
            break;
        }
    }
    if (!close) {
        case_bad(c, line, "%s", "unbalanced parentheses in the table header");
        return;
    }
    /* columns: split at top-level commas */
    char *names[64];
    em_type types[64];
    int n = 0;
    const char *b = open + 1;
    depth = 0;
    for (p = open + 1; p <= close; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        else if ((*p == ',' && depth == 0) || p == close) {
            char *col = strndup(b, (size_t)(p - b));
            char *cname = col;
            while (*cname == ' ')
                cname++;
            char *sp = strchr(cname, ' ');
            if (!sp || n == 64) {
                case_bad(c, line, "column '%s' wants: NAME TYPE", cname);
                free(col);
                for (int i = 0; i < n; i++)
                    free(names[i]);
                return;
            }
            names[n] = strndup(cname, (size_t)(sp - cname));
            em_error err = {0};
            if (em_type_parse(sp + 1, strlen(sp + 1), &types[n], &err) != EM_OK) {
                case_bad(c, line, "%s", err.msg);
                free(col);
                for (int i = 0; i <= n; i++)
                    free(names[i]);
                return;
            }
            n++;
            free(col);
            b = p + 1;
        }
    }
    em_error err = {0};
    EM_ASSERT_OK(em_schema_init(&t->schema, n, &err), &err);
    t->has_schema = true;
    for (int i = 0; i < n; i++) {
        EM_ASSERT_OK(em_schema_set(&t->schema, i, names[i], types[i], true, &err), &err);
        free(names[i]);
    }
    /* options */
    for (p = close + 1; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char key[32];
        long long v = 0;
        int used = 0;
        if (sscanf(p, "%31[a-z]=%lld%n", key, &v, &used) != 2) {
            case_bad(c, line, "bad table option at '%s'", p);
            return;
        }
        if (strcmp(key, "files") == 0 && v >= 0 && v <= 64)
            t->files = (int)v;
        else if (strcmp(key, "rowgroup") == 0 && v > 0)
            t->rowgroup = v;
        else if (strcmp(key, "partitioned") == 0 && v > 0 && v < t->schema.n_fields)
            t->partitioned = (int)v;
        else {
            case_bad(c, line, "unknown table option '%s'", key);
            return;
        }
        p += used;
    }
}

static bool starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

enum { SEC_NONE, SEC_TABLE, SEC_PLAN, SEC_EXPECT };

/* Reads every case of a file. */
static pf_case *read_cases(const char *path, int *n_out) {
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    pf_case *cases = NULL;
    int n = 0, cap = 0, lineno = 0, sec = SEC_NONE;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    pf_case *c = NULL;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (starts(line, "### case:")) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                cases = realloc(cases, sizeof *cases * (size_t)cap);
            }
            c = &cases[n++];
            memset(c, 0, sizeof *c);
            c->name = trim_dup(line + 9);
            c->line = lineno;
            c->ansi = -1;
            sec = SEC_NONE;
            continue;
        }
        if (!c) {
            if (len > 0 && line[0] != '#')
                fail_msg("%s:%d: text before the first '### case:'", path, lineno);
            continue;
        }
        if (starts(line, "--- ")) {
            const char *a = line + 4;
            sec = SEC_NONE;
            if (starts(a, "table ")) {
                parse_table_header(c, a + 6, lineno);
                sec = SEC_TABLE;
            } else if (strcmp(a, "plan") == 0) {
                sec = SEC_PLAN;
                c->plan_line = lineno + 1;
            } else if (strcmp(a, "expect ordered") == 0 || strcmp(a, "expect unordered") == 0) {
                c->expect = a[7] == 'o' ? EXPECT_ORDERED : EXPECT_UNORDERED;
                sec = SEC_EXPECT;
            } else if (starts(a, "expect error ")) {
                c->expect = EXPECT_ERROR;
                c->error_text = trim_dup(a + 13);
            } else if (starts(a, "xfail ")) {
                c->xfail = trim_dup(a + 6);
            } else if (starts(a, "xfail-row ")) {
                c->xfail_row = trim_dup(a + 10);
            } else if (starts(a, "version ")) {
                c->version = trim_dup(a + 8);
            } else if (starts(a, "conf ")) {
                char *kv = trim_dup(a + 5);
                char *eq = strchr(kv, '=');
                if (eq)
                    *eq = '\0';
                if (eq && strcmp(kv, "spark.sql.ansi.enabled") == 0 &&
                    (strcmp(eq + 1, "true") == 0 || strcmp(eq + 1, "false") == 0))
                    c->ansi = eq[1] == 't';
                else if (eq && strcmp(kv, "spark.sql.session.timeZone") == 0)
                    c->time_zone = strdup(eq + 1);
                else if (eq && strcmp(kv, "spark.ember.sql.emptyTableFolders") == 0)
                    c->empty_table_folders = strcmp(eq + 1, "true") == 0;
                else if (eq && strcmp(kv, "spark.ember.sql.runtimeFilter.enabled") == 0)
                    c->no_runtime_filters = strcmp(eq + 1, "false") == 0;
                else if (!eq || strcmp(kv, "spark.sql.ansi.enabled") == 0)
                    case_bad(c, lineno, "conf '%s' wants KEY=VALUE", kv);
                if (eq)
                    *eq = '=';
                sl_push(&c->confs, kv, strlen(kv), lineno);
                free(kv);
            } else if (starts(a, "metric ")) {
                int id = 0;
                long long rows = 0;
                if (c->n_metrics < 8 && sscanf(a + 7, "%d rows %lld", &id, &rows) == 2)
                    c->metrics[c->n_metrics++] = (pf_metric){id, rows, lineno};
                else
                    case_bad(c, lineno, "metric wants: NODE_ID rows N (%s)", a);
            } else {
                case_bad(c, lineno, "unknown section '%s'", line);
            }
            continue;
        }
        switch (sec) {
        case SEC_PLAN: {
            em_error err = {0};
            EM_ASSERT_OK(em_strbuf_append(&c->plan, line, (size_t)len, &err), &err);
            EM_ASSERT_OK(em_strbuf_append(&c->plan, "\n", 1, &err), &err);
            break;
        }
        case SEC_TABLE:
        case SEC_EXPECT:
            if (len == 0 || line[0] == '#')
                break;
            sl_push(sec == SEC_TABLE ? &c->tables[c->n_tables - 1].rows : &c->expect_rows, line,
                    (size_t)len, lineno);
            break;
        default:
            if (len > 0 && line[0] != '#')
                case_bad(c, lineno, "text outside a section: '%s'", line);
            break;
        }
    }
    free(line);
    fclose(f);
    for (int i = 0; i < n; i++) {
        if (!cases[i].bad && cases[i].plan.len == 0)
            case_bad(&cases[i], cases[i].line, "%s", "no '--- plan' section");
        if (!cases[i].bad && cases[i].expect == EXPECT_NONE)
            case_bad(&cases[i], cases[i].line, "%s", "no '--- expect' section");
    }
    *n_out = n;
    return cases;
}

/* ------------------------------------------------------------ generators */

/*
 * "@rows A..B: tmpl, tmpl, ..." stands for one row per i in [A, B); in each
 * field "{i}" is replaced by i, and "{i OP K OP K ...}" (OP one of + - * / %,
 * applied left to right) by that arithmetic on i.
 */
static bool expand_template(const char *tmpl, int64_t i, em_strbuf *out, const char **why) {
    em_error ig;
    for (const char *p = tmpl; *p;) {
        if (*p != '{') {
            (void)em_strbuf_append(out, p++, 1, &ig);
            continue;
        }
        const char *q = p + 1;
        if (*q != 'i') {
            *why = "a generator's {...} must start with i";
            return false;
        }
        q++;
        int64_t v = i;
        while (*q && *q != '}') {
            char op = *q++;
            char *end;
            long long k = strtoll(q, &end, 10);
            if (end == q || !strchr("+-*/%", op) || ((op == '/' || op == '%') && k == 0)) {
                *why = "bad arithmetic in a generator's {...}";
                return false;
            }
            q = end;
            switch (op) {
            case '+': v += k; break;
            case '-': v -= k; break;
            case '*': v *= k; break;
            case '/': v /= k; break;
            default: v %= k; break;
            }
        }
        if (*q != '}') {
            *why = "unterminated {";
            return false;
        }
        (void)em_strbuf_appendf(out, &ig, "%lld", (long long)v);
        p = q + 1;
    }
    return true;
}

/* Calls fn for every row a line stands for (one, or a generator's). */
typedef bool (*row_fn)(void *ctx, const row *r, const char **why);

static bool for_rows(const char *line, int lineno, row_fn fn, void *ctx, const char **why) {
    if (line[0] != '@') {
        row r;
        if (!split_fields(line, &r, why))
            return false;
        r.line = lineno;
        bool ok = fn(ctx, &r, why);
        row_free(&r);
        return ok;
    }
    long long a, b;
    int used = 0;
    if (sscanf(line, "@rows %lld..%lld:%n", &a, &b, &used) != 2 || used == 0 || b < a) {
        *why = "generator wants: @rows A..B: field, field, ...";
        return false;
    }
    em_strbuf sb = {0};
    bool ok = true;
    for (long long i = a; ok && i < b; i++) {
        em_strbuf_clear(&sb);
        ok = expand_template(line + used, i, &sb, why);
        row r;
        if (ok)
            ok = split_fields(em_strbuf_cstr(&sb), &r, why);
        if (ok) {
            r.line = lineno;
            ok = fn(ctx, &r, why);
            row_free(&r);
        }
    }
    em_strbuf_reset(&sb);
    return ok;
}

/* ------------------------------------------------------------ values */

static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_decimal(const char *s, em_type t, em_i128 *out) {
    bool neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    em_i128 v = 0;
    int digits = 0, frac = 0;
    bool point = false, any = false;
    for (; *s; s++) {
        if (*s == '.' && !point) {
            point = true;
            continue;
        }
        if (*s < '0' || *s > '9')
            return false;
        any = true;
        if (point)
            frac++;
        if (v || *s != '0')
            digits++;
        v = v * 10 + (*s - '0');
        if (digits > 38)
            return false;
    }
    if (!any || frac > t.scale)
        return false;
    for (; frac < t.scale; frac++, digits += v != 0)
        v *= 10;
    if (digits > t.precision)
        return false;
    *out = neg ? -v : v;
    return true;
}

static bool parse_date(const char *s, int32_t *out) {
    int y, m, d, used = 0;
    if (sscanf(s, "%d-%d-%d%n", &y, &m, &d, &used) != 3 || s[used] || m < 1 || m > 12 || d < 1 ||
        d > 31)
        return false;
    *out = (int32_t)em_days_from_civil(y, m, d);
    return true;
}

static bool parse_timestamp(const char *s, int64_t *out) {
    int y, mo, d, h, mi, sec, used = 0;
    if (sscanf(s, "%d-%d-%d %d:%d:%d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6)
        return false;
    int64_t micros = 0;
    if (s[used] == '.') {
        int k = 0;
        for (s += used + 1; *s >= '0' && *s <= '9' && k < 6; s++, k++)
            micros = micros * 10 + (*s - '0');
        for (; k < 6; k++)
            micros *= 10;
        if (*s)
            return false;
    } else if (s[used]) {
        return false;
    }
    int64_t days = em_days_from_civil(y, mo, d);
    *out = ((days * 86400 + h * 3600 + mi * 60 + sec) * 1000000) + micros;
    return true;
}

/* Appends one field's value to a column of its type. */
static bool append_value(em_column *col, const field *fl, const char **why) {
    em_error err = {0};
    if (!fl->text)
        return em_column_append_null(col, &err) == EM_OK || (*why = err.msg, false);
    const char *s = fl->text;
    int64_t i = 0;
    bool ok = true;
    union {
        bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        float f;
        double d;
        em_i128 dec;
    } u;
    switch (col->type.id) {
    case EM_TYPE_BOOLEAN:
        ok = strcmp(s, "true") == 0 || strcmp(s, "false") == 0;
        u.b = s[0] == 't';
        break;
    case EM_TYPE_BYTE:
        ok = parse_int(s, INT8_MIN, INT8_MAX, &i);
        u.i8 = (int8_t)i;
        break;
    case EM_TYPE_SHORT:
        ok = parse_int(s, INT16_MIN, INT16_MAX, &i);
        u.i16 = (int16_t)i;
        break;
    case EM_TYPE_INT:
        ok = parse_int(s, INT32_MIN, INT32_MAX, &i);
        u.i32 = (int32_t)i;
        break;
    case EM_TYPE_LONG:
        ok = parse_int(s, INT64_MIN, INT64_MAX, &i);
        u.i64 = i;
        break;
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE: {
        double d;
        if (strcmp(s, "NaN") == 0)
            d = NAN;
        else if (strcmp(s, "Infinity") == 0)
            d = INFINITY;
        else if (strcmp(s, "-Infinity") == 0)
            d = -INFINITY;
        else {
            char *end;
            d = strtod(s, &end);
            ok = end != s && !*end;
        }
        if (col->type.id == EM_TYPE_FLOAT)
            u.f = (float)d;
        else
            u.d = d;
        break;
    }
    case EM_TYPE_DECIMAL:
        ok = parse_decimal(s, col->type, &u.dec);
        break;
    case EM_TYPE_DATE:
        ok = parse_date(s, &u.i32);
        break;
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        ok = parse_timestamp(s, &u.i64);
        break;
    case EM_TYPE_STRING:
        return em_column_append_bytes(col, s, (int32_t)strlen(s), &err) == EM_OK ||
               (*why = err.msg, false);
    case EM_TYPE_BINARY: {
        size_t n = strlen(s);
        uint8_t buf[256];
        if (n % 2 || n / 2 > sizeof buf) {
            *why = "binary wants an even number of hex digits (at most 512)";
            return false;
        }
        for (size_t k = 0; k < n / 2; k++) {
            unsigned v;
            if (sscanf(s + 2 * k, "%2x", &v) != 1) {
                *why = "binary wants hex digits";
                return false;
            }
            buf[k] = (uint8_t)v;
        }
        return em_column_append_bytes(col, buf, (int32_t)(n / 2), &err) == EM_OK ||
               (*why = err.msg, false);
    }
    default:
        *why = "a column type the runner cannot write";
        return false;
    }
    if (!ok) {
        *why = "a value that does not fit its column's type";
        return false;
    }
    return em_column_append_fixed(col, &u, &err) == EM_OK || (*why = err.msg, false);
}

/* ------------------------------------------------------------ tables */

typedef struct table_rows {
    const pf_table *t;
    em_batch *all;  /* every row, in order */
    strlist folder; /* partitioned tables: each row's `col=value/...` folder */
} table_rows;

static bool add_table_row(void *ctx, const row *r, const char **why) {
    table_rows *tr = ctx;
    if (r->n != tr->t->schema.n_fields) {
        *why = "a row with another number of fields than the table's columns";
        return false;
    }
    for (int c = 0; c < r->n; c++)
        if (!append_value(&tr->all->cols[c], &r->f[c], why))
            return false;
    tr->all->n_rows++;
    if (tr->t->partitioned) {
        /* Spark's layout: col=value folders, a null as __HIVE_DEFAULT_PARTITION__ */
        char folder[1024] = "";
        for (int c = r->n - tr->t->partitioned; c < r->n; c++) {
            size_t k = strlen(folder);
            snprintf(folder + k, sizeof folder - k, "%s=%s/", tr->t->schema.fields[c].name,
                     r->f[c].text ? r->f[c].text : "__HIVE_DEFAULT_PARTITION__");
        }
        sl_push(&tr->folder, folder, strlen(folder), r->line);
    }
    return true;
}

/* Writes rows [lo, hi) of b into path. */
static bool write_file(const char *path, const em_schema *s, const em_batch *b, int64_t lo,
                       int64_t hi, int64_t rowgroup, char *msg, size_t cap) {
    em_error err = {0};
    em_pq_write_options wo;
    em_pq_write_options_init(&wo);
    wo.row_group_rows = rowgroup;
    em_pq_writer *w = NULL;
    em_status st = em_pq_writer_open(path, s, &wo, &w, &err);
    em_batch *part = NULL;
    if (st == EM_OK && hi > lo) {
        st = em_batch_create(s, hi - lo, NULL, &part, &err);
        for (int c = 0; st == EM_OK && c < s->n_fields; c++) {
            int32_t *sel = malloc(sizeof *sel * (size_t)(hi - lo));
            for (int64_t k = lo; k < hi; k++)
                sel[k - lo] = (int32_t)k;
            st = em_column_append_rows(&part->cols[c], &b->cols[c], sel, hi - lo, &err);
            free(sel);
        }
        if (st == EM_OK) {
            part->n_rows = hi - lo;
            st = em_pq_writer_write(w, part, &err);
        }
        em_batch_destroy(part);
    }
    if (st == EM_OK)
        st = em_pq_writer_close(w, &err);
    else
        em_pq_writer_abort(w);
    if (st != EM_OK)
        snprintf(msg, cap, "writing %s: %s", path, err.msg);
    return st == EM_OK;
}

static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            int rc = mkdir(path, 0755);
            *p = '/';
            if (rc != 0 && errno != EEXIST)
                return -1;
        }
    return 0;
}

/* One file per partition folder (in order of first row), holding the
 * table's other columns, as Spark writes a partitioned table. */
static bool write_partitioned(const pf_table *t, const char *dir, const table_rows *tr, char *msg,
                              size_t cap) {
    em_error err = {0};
    em_schema fs = {0};
    int nf = t->schema.n_fields - t->partitioned;
    EM_ASSERT_OK(em_schema_init(&fs, nf, &err), &err);
    for (int c = 0; c < nf; c++)
        EM_ASSERT_OK(em_schema_set(&fs, c, t->schema.fields[c].name, t->schema.fields[c].type, true,
                                   &err),
                     &err);
    bool ok = true;
    int64_t n = tr->all->n_rows;
    bool *done = calloc((size_t)n + 1, sizeof *done);
    int32_t *sel = malloc(sizeof *sel * (size_t)(n + 1));
    for (int64_t r = 0; ok && r < n; r++) {
        if (done[r])
            continue;
        int64_t k = 0;
        for (int64_t q = r; q < n; q++)
            if (!done[q] && strcmp(tr->folder.v[q], tr->folder.v[r]) == 0) {
                done[q] = true;
                sel[k++] = (int32_t)q;
            }
        em_batch *part = NULL;
        EM_ASSERT_OK(em_batch_create(&fs, k, NULL, &part, &err), &err);
        for (int c = 0; c < nf; c++)
            EM_ASSERT_OK(em_column_append_rows(&part->cols[c], &tr->all->cols[c], sel, k, &err),
                         &err);
        part->n_rows = k;
        char path[4400];
        snprintf(path, sizeof path, "%s/%spart-00000.parquet", dir, tr->folder.v[r]);
        if (mkdirs(path) != 0) {
            snprintf(msg, cap, "line %d: cannot create the folders of %s", t->line, path);
            ok = false;
        } else {
            ok = write_file(path, &fs, part, 0, k, t->rowgroup, msg, cap);
        }
        em_batch_destroy(part);
    }
    free(done);
    free(sel);
    em_schema_reset(&fs);
    return ok;
}

static bool write_table(const pf_table *t, const char *wh, char *msg, size_t cap) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", wh, t->name);
    if (mkdir(dir, 0755) != 0) {
        snprintf(msg, cap, "line %d: cannot create %s: %s", t->line, dir, strerror(errno));
        return false;
    }
    em_error err = {0};
    table_rows tr = {.t = t};
    EM_ASSERT_OK(em_batch_create(&t->schema, 64, NULL, &tr.all, &err), &err);
    for (int i = 0; i < t->rows.n; i++) {
        const char *why = NULL;
        if (!for_rows(t->rows.v[i], t->rows.line[i], add_table_row, &tr, &why)) {
            snprintf(msg, cap, "line %d: table %s: %s", t->rows.line[i], t->name, why);
            em_batch_destroy(tr.all);
            return false;
        }
    }
    int64_t n = tr.all->n_rows;
    bool ok = true;
    if (t->files == 0 && n > 0) {
        snprintf(msg, cap, "line %d: files=0 wants a table without rows", t->line);
        ok = false;
    }
    if (ok && t->partitioned) {
        ok = write_partitioned(t, dir, &tr, msg, cap);
        em_batch_destroy(tr.all);
        sl_free(&tr.folder);
        return ok;
    }
    /* contiguous slices, the first files taking one row more */
    for (int k = 0; ok && k < t->files; k++) {
        int64_t lo = n * k / t->files, hi = n * (k + 1) / t->files;
        char path[4400];
        snprintf(path, sizeof path, "%s/part-%05d.parquet", dir, k);
        ok = write_file(path, &t->schema, tr.all, lo, hi, t->rowgroup, msg, cap);
    }
    em_batch_destroy(tr.all);
    return ok;
}

/* ------------------------------------------------------------ comparing */

typedef struct rowset {
    row *r;
    int n, cap;
} rowset;

static void rs_free(rowset *s) {
    for (int i = 0; i < s->n; i++)
        row_free(&s->r[i]);
    free(s->r);
    memset(s, 0, sizeof *s);
}

static void rs_push(rowset *s, row *r) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->r = realloc(s->r, sizeof *s->r * (size_t)s->cap);
    }
    s->r[s->n++] = *r;
    memset(r, 0, sizeof *r);
}

static bool add_expected(void *ctx, const row *r, const char **why) {
    (void)why;
    row copy = {calloc((size_t)r->n + 1, sizeof(field)), r->n, r->line};
    for (int i = 0; i < r->n; i++)
        copy.f[i].text = r->f[i].text ? strdup(r->f[i].text) : NULL;
    rs_push(ctx, &copy);
    return true;
}

static int field_cmp(const field *a, const field *b) {
    if (!a->text || !b->text)
        return (a->text != NULL) - (b->text != NULL);
    return strcmp(a->text, b->text);
}

static int row_cmp(const void *pa, const void *pb) {
    const row *a = pa, *b = pb;
    for (int i = 0; i < a->n && i < b->n; i++) {
        int c = field_cmp(&a->f[i], &b->f[i]);
        if (c)
            return c;
    }
    return (a->n > b->n) - (a->n < b->n);
}

static void row_show(const row *r, em_strbuf *out) {
    em_error ig;
    (void)em_strbuf_appends(out, "[", &ig);
    for (int i = 0; i < r->n; i++) {
        if (i)
            (void)em_strbuf_appends(out, ",", &ig);
        if (!r->f[i].text)
            (void)em_strbuf_appends(out, "NULL", &ig);
        else if (strcmp(r->f[i].text, "NULL") == 0 || !*r->f[i].text)
            (void)em_strbuf_appendf(out, &ig, "\"%s\"", r->f[i].text);
        else
            (void)em_csv_escape(out, r->f[i].text, strlen(r->f[i].text), ',', &ig);
    }
    (void)em_strbuf_appends(out, "]", &ig);
}

/* The query's rows as canonical text. */
static bool result_rows(const em_query *q, rowset *out, char *msg, size_t cap) {
    const em_batch_list *l = em_query_result(q);
    em_strbuf sb = {0};
    em_error err = {0};
    for (int64_t b = 0; b < l->n_batches; b++) {
        const em_batch *bt = l->batches[b];
        for (int64_t k = 0; k < em_batch_rows(bt); k++) {
            int64_t r = bt->sel ? bt->sel[k] : k;
            row rw = {calloc((size_t)bt->n_cols + 1, sizeof(field)), bt->n_cols, 0};
            for (int c = 0; c < bt->n_cols; c++) {
                bool is_null = false;
                em_strbuf_clear(&sb);
                if (em_value_text(&bt->cols[c], r, &sb, &is_null, &err) != EM_OK) {
                    snprintf(msg, cap, "value text: %s", err.msg);
                    row_free(&rw);
                    em_strbuf_reset(&sb);
                    return false;
                }
                rw.f[c].text = is_null ? NULL : strdup(em_strbuf_cstr(&sb));
            }
            rs_push(out, &rw);
        }
    }
    em_strbuf_reset(&sb);
    return true;
}

/* Compares got with want; on a difference writes it to msg. */
static bool compare_rows(rowset *got, rowset *want, bool ordered, char *msg, size_t cap) {
    if (!ordered && got->n > 1)
        qsort(got->r, (size_t)got->n, sizeof *got->r, row_cmp);
    if (!ordered && want->n > 1)
        qsort(want->r, (size_t)want->n, sizeof *want->r, row_cmp);
    em_strbuf a = {0}, b = {0};
    bool ok = true;
    for (int i = 0; ok && i < got->n && i < want->n; i++) {
        if (row_cmp(&got->r[i], &want->r[i]) != 0) {
            row_show(&got->r[i], &a);
            row_show(&want->r[i], &b);
            snprintf(msg, cap, "%s row %d: got %s, expected %s (line %d)",
                     ordered ? "ordered" : "sorted", i + 1, em_strbuf_cstr(&a),
                     em_strbuf_cstr(&b), want->r[i].line);
            ok = false;
        }
    }
    if (ok && got->n != want->n) {
        int i = got->n < want->n ? got->n : want->n;
        if (got->n > want->n)
            row_show(&got->r[i], &a);
        else
            row_show(&want->r[i], &b);
        snprintf(msg, cap, "got %d rows, expected %d; first %s row %d: %s", got->n, want->n,
                 got->n > want->n ? "extra" : "missing", i + 1,
                 got->n > want->n ? em_strbuf_cstr(&a) : em_strbuf_cstr(&b));
        ok = false;
    }
    em_strbuf_reset(&a);
    em_strbuf_reset(&b);
    return ok;
}

/* ------------------------------------------------------------ running */

enum { ENGINE_NATIVE, ENGINE_ROW, ENGINE_MIXED, N_ENGINES };
static const char *const ENGINE_NAMES[N_ENGINES] = {"native engine", "row engine", "mixed trees"};

typedef struct run_setting {
    const char *name;
    int engine;
    int threads;
    int64_t max_partition_bytes;
    bool overrides;    /* build through em_overrides_apply + em_exec_build */
    const char *conf; /* more "key=value,key=value" for the overrides */
} run_setting;

/* Mixed trees: one half of the operator classes on rows, then the other,
 * so that transitions sit between most pairs of nodes. */
#define ROW_LEAVES                                                                                 \
    "spark.ember.sql.exec.FileSourceScanExec=false,spark.ember.sql.exec.FilterExec=false,"        \
    "spark.ember.sql.exec.ProjectExec=false,spark.ember.sql.exec.SortExec=false,"                 \
    "spark.ember.sql.exec.LocalTableScanExec=false"
#define ROW_INNER                                                                                  \
    "spark.ember.sql.exec.HashAggregateExec=false,spark.ember.sql.exec.SortAggregateExec=false,"  \
    "spark.ember.sql.exec.BroadcastHashJoinExec=false,"                                           \
    "spark.ember.sql.exec.ShuffledHashJoinExec=false,spark.ember.sql.exec.SortMergeJoinExec=false," \
    "spark.ember.sql.exec.BroadcastNestedLoopJoinExec=false,spark.ember.sql.exec.WindowExec=false," \
    "spark.ember.sql.exec.WindowGroupLimitExec=false,spark.ember.sql.exec.ExpandExec=false,"      \
    "spark.ember.sql.exec.UnionExec=false,spark.ember.sql.exec.TakeOrderedAndProjectExec=false,"  \
    "spark.ember.sql.exec.CollectLimitExec=false,spark.ember.sql.exec.GlobalLimitExec=false,"     \
    "spark.ember.sql.exec.LocalLimitExec=false"

/* Every case runs in each; the native settings must agree with the row
 * engine (spark.ember.sql.enabled=false: every node on rows). */
static const run_setting SETTINGS[] = {
    {"native, 1 thread", ENGINE_NATIVE, 1, 0, false, NULL},
    {"native through the overrides, 2 threads, a split per file", ENGINE_NATIVE, 2, 1, true, NULL},
    {"row engine, 2 threads, a split per file", ENGINE_ROW, 2, 1, true, NULL},
    {"mixed: scans, filters, projects and sorts on rows, 2 threads", ENGINE_MIXED, 2, 1, true,
     ROW_LEAVES},
    {"mixed: aggregates, joins, windows, limits on rows, 1 thread", ENGINE_MIXED, 1, 0, true,
     ROW_INNER},
};

static bool check_metrics(const pf_case *c, const em_query *q, char *msg, size_t cap) {
    for (int i = 0; i < c->n_metrics; i++) {
        const pf_metric *want = &c->metrics[i];
        int64_t rows = -1;
        for (int k = 0; k < em_query_n_metrics(q); k++) {
            const em_node_metrics *m = em_query_metrics_at(q, k);
            if (m->node && m->node->id == want->node_id)
                rows = rows < 0 ? m->m.rows_out : rows + m->m.rows_out;
        }
        if (rows != want->rows) {
            snprintf(msg, cap, "line %d: node %d produced %lld rows, expected %lld", want->line,
                     want->node_id, (long long)rows, (long long)want->rows);
            return false;
        }
    }
    return true;
}

/* Runs one case in one setting; false with msg on a failure. */
static bool run_setting_once(const pf_case *c, const em_plan *plan, const char *wh,
                             const run_setting *rs, rowset *want, char *msg, size_t cap) {
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = wh;
    o.threads = rs->threads;
    o.max_partition_bytes = rs->max_partition_bytes;
    o.ansi = c->ansi;
    o.time_zone = c->time_zone;
    o.empty_table_folders = c->empty_table_folders;
    o.runtime_filters = !c->no_runtime_filters;
    em_error err = {0};
    em_query *q = NULL;
    em_exec_plan *xp = NULL;
    em_status st = EM_OK;
    if (rs->overrides) {
        em_conf *conf = NULL;
        st = em_conf_create(&conf, &err);
        for (int i = 0; st == EM_OK && i < c->confs.n; i++)
            st = em_conf_set_kv(conf, c->confs.v[i], &err);
        if (st == EM_OK && rs->engine == ENGINE_ROW)
            st = em_conf_set(conf, "spark.ember.sql.enabled", "false", &err);
        char kv[256];
        for (const char *p = rs->conf; st == EM_OK && p && *p;) {
            size_t n = strcspn(p, ",");
            snprintf(kv, sizeof kv, "%.*s", (int)n, p);
            st = em_conf_set_kv(conf, kv, &err);
            p += n + (p[n] == ',');
        }
        if (st == EM_OK)
            st = em_overrides_apply(plan, conf, &xp, &err);
        em_conf_destroy(conf);
        o.build = em_exec_build;
        o.build_ctx = xp;
    }
    if (st == EM_OK)
        st = em_query_create(plan, &o, &q, &err);
    if (st == EM_OK)
        st = em_query_run(q, &err);
    bool ok = true;
    if (c->expect == EXPECT_ERROR) {
        if (st == EM_OK) {
            snprintf(msg, cap, "expected an error containing '%s', the query succeeded",
                     c->error_text);
            ok = false;
        } else if (!strcasestr(err.msg, c->error_text)) {
            snprintf(msg, cap, "expected an error containing '%s', got: %s", c->error_text,
                     err.msg);
            ok = false;
        }
    } else if (st != EM_OK) {
        snprintf(msg, cap, "query failed: %s", err.msg);
        ok = false;
    } else {
        rowset got = {0};
        ok = result_rows(q, &got, msg, cap) &&
             compare_rows(&got, want, c->expect == EXPECT_ORDERED, msg, cap) &&
             check_metrics(c, q, msg, cap);
        rs_free(&got);
    }
    em_query_destroy(q);
    em_exec_plan_destroy(xp); /* after the query: its tasks read the decisions */
    return ok;
}

/* Runs a case in every setting: ok[engine] tells whether all of that
 * engine's settings gave the expected answer, msg[engine] the first
 * difference. False when the case cannot run at all (msg[0] says why). */
typedef struct case_result {
    bool ok[N_ENGINES];
    char msg[N_ENGINES][2048];
} case_result;

static bool run_case(const pf_case *c, const char *wh, case_result *res) {
    char *msg = res->msg[0];
    size_t cap = sizeof res->msg[0];
    if (c->bad) {
        snprintf(msg, cap, "%s", c->bad);
        return false;
    }
    for (int i = 0; i < c->n_tables; i++)
        if (!write_table(&c->tables[i], wh, msg, cap))
            return false;
    rowset want = {0};
    for (int i = 0; i < c->expect_rows.n; i++) {
        const char *why = NULL;
        if (!for_rows(c->expect_rows.v[i], c->expect_rows.line[i], add_expected, &want, &why)) {
            snprintf(msg, cap, "line %d: %s", c->expect_rows.line[i], why);
            rs_free(&want);
            return false;
        }
    }
    em_error err = {0};
    em_plan_parse_options po = {0};
    po.source_name = "plan";
    po.shim = em_shim_for_version(c->version ? c->version : "3.5", &err);
    if (!po.shim) {
        snprintf(msg, cap, "version: %s", err.msg);
        rs_free(&want);
        return false;
    }
    /* LocalTableScan columns take their types from the warehouse, as ember run does */
    em_retype_ctx *rt = NULL;
    EM_ASSERT_OK(em_retype_ctx_create(wh, false, &rt, &err), &err);
    po.column_type = em_retype_column_type;
    po.column_type_ctx = rt;
    em_plan *plan = NULL;
    em_status st = em_plan_parse(em_strbuf_cstr(&c->plan), c->plan.len, &po, &plan, &err);
    for (int e = 0; e < N_ENGINES; e++)
        res->ok[e] = true;
    if (st != EM_OK) {
        /* a parse error is an answer only when the case expects it */
        if (c->expect != EXPECT_ERROR || !strcasestr(err.msg, c->error_text)) {
            for (int e = 0; e < N_ENGINES; e++) {
                res->ok[e] = false;
                snprintf(res->msg[e], sizeof res->msg[e],
                         "plan (from line %d) does not parse: %s", c->plan_line, err.msg);
            }
        }
    } else {
        for (size_t s = 0; s < sizeof SETTINGS / sizeof *SETTINGS; s++) {
            const run_setting *rs = &SETTINGS[s];
            if (!res->ok[rs->engine])
                continue; /* report the first difference per engine */
            char sub[1800];
            res->ok[rs->engine] = run_setting_once(c, plan, wh, rs, &want, sub, sizeof sub);
            if (!res->ok[rs->engine])
                snprintf(res->msg[rs->engine], sizeof res->msg[rs->engine], "(%s) %s", rs->name,
                         sub);
        }
    }
    em_plan_destroy(plan);
    em_retype_ctx_destroy(rt);
    rs_free(&want);
    return true;
}

/* ------------------------------------------------------------ per file */

typedef struct pf_file {
    char path[4096];
    char stem[256];
} pf_file;

static void test_plan_file(void **state) {
    const pf_file *pf = *state;
    int n = 0;
    pf_case *cases = read_cases(pf->path, &n);
    const char *only = getenv("EMBER_PLAN_CASE");
    const char *base = em_test_tmpdir(pf->stem);
    char wh_root[4096];
    snprintf(wh_root, sizeof wh_root, "%s", base);
    em_strbuf failures = {0};
    em_error ig;
    int passed = 0, xfailed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n; i++) {
        pf_case *c = &cases[i];
        if (only && *only && !strstr(pf->stem, only) && !strstr(c->name, only)) {
            skipped++;
            continue;
        }
        char wh[4200];
        snprintf(wh, sizeof wh, "%s/case%d", wh_root, i + 1);
        if (mkdir(wh, 0755) != 0)
            fail_msg("cannot create %s: %s", wh, strerror(errno));
        case_result *res = calloc(1, sizeof *res);
        if (!run_case(c, wh, res)) {
            failed++;
            (void)em_strbuf_appendf(&failures, &ig, "\n  %s.plan:%d '%s': %s", pf->stem, c->line,
                                    c->name, res->msg[0]);
            free(res);
            continue;
        }
        bool bad = false, expected = false;
        for (int e = 0; e < N_ENGINES; e++) {
            const char *xf = e == ENGINE_NATIVE ? c->xfail : e == ENGINE_ROW ? c->xfail_row : NULL;
            if (e == ENGINE_MIXED && (c->xfail || c->xfail_row)) {
                /* a known gap of either engine may or may not show in a mixed tree */
                continue;
            }
            if (xf && !res->ok[e]) {
                expected = true;
                printf("[ XFAIL    ] %s:%d %s (%s): %s\n             because: %s\n", pf->stem,
                       c->line, c->name, ENGINE_NAMES[e], xf, res->msg[e]);
            } else if (xf) {
                bad = true;
                (void)em_strbuf_appendf(&failures, &ig,
                                        "\n  %s.plan:%d '%s': passes on the %s but is marked "
                                        "%s (%s): remove the mark",
                                        pf->stem, c->line, c->name, ENGINE_NAMES[e],
                                        e == ENGINE_NATIVE ? "xfail" : "xfail-row", xf);
            } else if (!res->ok[e] && e > 0 && !res->ok[0] &&
                       strcmp(res->msg[e], res->msg[0]) == 0) {
                bad = true; /* the same failure (e.g. the plan does not parse): said once */
            } else if (!res->ok[e]) {
                bad = true;
                (void)em_strbuf_appendf(&failures, &ig, "\n  %s.plan:%d '%s': %s", pf->stem,
                                        c->line, c->name, res->msg[e]);
            }
        }
        free(res);
        failed += bad;
        xfailed += !bad && expected;
        passed += !bad && !expected;
    }
    printf("[ PLANS    ] %s.plan: %d cases, %d passed, %d expected failures, %d failed%s\n",
           pf->stem, n, passed, xfailed, failed, skipped ? " (some filtered out)" : "");
    fflush(stdout);
    for (int i = 0; i < n; i++)
        case_free(&cases[i]);
    free(cases);
    if (n == 0)
        fail_msg("%s: no cases", pf->path);
    if (failed) {
        /* cmocka cuts long messages: the whole list goes to stdout */
        printf("[ FAILURES ] %s.plan:%s\n", pf->stem, em_strbuf_cstr(&failures));
        fflush(stdout);
        em_strbuf_reset(&failures);
        fail_msg("%s.plan: %d case%s failed (listed above)", pf->stem, failed,
                 failed == 1 ? "" : "s");
    }
    em_strbuf_reset(&failures);
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(((const pf_file *)a)->stem, ((const pf_file *)b)->stem);
}

/* Adds DIR/SUB's *.plan files (SUB "" for DIR itself); a missing SUB is none. */
static bool add_files(const char *dir, const char *sub, pf_file **files, int *n, int *cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s%s%s", dir, *sub ? "/" : "", sub);
    DIR *d = opendir(path);
    if (!d) {
        if (*sub)
            return true;
        fprintf(stderr, "test_plan_files: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".plan") != 0 || e->d_name[0] == '.')
            continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 32;
            *files = realloc(*files, sizeof **files * (size_t)*cap);
        }
        snprintf((*files)[*n].path, sizeof (*files)[*n].path, "%s/%s", path, e->d_name);
        snprintf((*files)[*n].stem, sizeof (*files)[*n].stem, "%s%s%.*s", sub, *sub ? "/" : "",
                 (int)(len - 5), e->d_name);
        (*n)++;
    }
    closedir(d);
    return true;
}

int main(void) {
    /* EMBER_PLAN_DIR: another folder of cases (e.g. ones `ember lore case` wrote) */
    const char *src = getenv("EMBER_SOURCE"), *other = getenv("EMBER_PLAN_DIR");
    char dir[4096];
    if (other && *other) {
        snprintf(dir, sizeof dir, "%s", other);
    } else if (src && *src) {
        snprintf(dir, sizeof dir, "%s/tests/plans", src);
    } else { /* beside this file: tests/unit/../plans */
        const char *slash = strrchr(__FILE__, '/');
        snprintf(dir, sizeof dir, "%.*s/../plans", slash ? (int)(slash - __FILE__) : 1,
                 slash ? __FILE__ : ".");
    }
    pf_file *files = NULL;
    int n = 0, cap = 0;
    if (!add_files(dir, "", &files, &n, &cap) || !add_files(dir, "regress", &files, &n, &cap)) {
        free(files);
        return 1;
    }
    if (n == 0) {
        fprintf(stderr, "test_plan_files: no *.plan files in %s\n", dir);
        free(files);
        return 1;
    }
    qsort(files, (size_t)n, sizeof *files, cmp_names);
    struct CMUnitTest *tests = calloc((size_t)n, sizeof *tests);
    void **states = calloc((size_t)n, sizeof *states);
    for (int i = 0; i < n; i++) {
        states[i] = &files[i];
        tests[i].name = files[i].stem;
        tests[i].test_func = test_plan_file;
        tests[i].initial_state = states[i];
    }
    em_error err = {0};
    if (em_overrides_register_confs(&err) != EM_OK) {
        fprintf(stderr, "test_plan_files: %s\n", err.msg);
        return 1;
    }
    int rc = _cmocka_run_group_tests("plan_files", tests, (size_t)n, NULL, NULL);
    free(tests);
    free(states);
    free(files);
    return rc;
}
