/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structured plan reader, expressions: a Catalyst expression written as JSON
 * by the Spark plugin (spark/.../PlanJson.scala: "class", "pretty" = Spark's
 * prettyName, "type" = the resolved data type's catalogString, "nullable",
 * "exprId" for named expressions, literals' typed "value", every other
 * expression's constructor "fields" in order) -> the em_expr the text parser
 * (expr_parse.c) builds from the same expression's printed form.
 *
 * The rule that makes this possible is Spark's own: an expression prints as
 * prettyName(flatArguments), where flatArguments are its constructor fields
 * in order with sequences flattened, unless the class overrides toString,
 * flatArguments or stringArgs. So one generic rule (EM_EXPR_CALL named by
 * "pretty", every field an argument) covers most functions, and a table
 * (expr_classes) lists the classes Spark prints otherwise, each with the
 * shape the text parser gives that printed form:
 *
 *   AttributeReference, Alias    ATTR / ALIAS, `L` suffix for bigint
 *   Literal                      LITERAL, text = Literal.toString (dates
 *                                yyyy-mm-dd, timestamps in the session zone,
 *                                doubles as Java prints them), value_exact
 *   Add ... Or                   BINARY ("(l op r)", BinaryOperator.toString)
 *   Not, UnaryMinus              NOT, NEGATE
 *   In, InSet                    IN (list joined by ","), INSET (values
 *                                printed as literals, sorted as strings)
 *   Like, CaseWhen, Cast         LIKE, CASE, CAST; RLIKE prints as a call
 *   SortOrder, BoundReference    SORT_ORDER, BOUND_REF
 *   ScalarSubquery (execution)   SCALAR_SUBQUERY named by its SubqueryExec
 *   InSubqueryExec               IN_SUBQUERY
 *   GetStructField               FIELD
 *   WindowExpression             WINDOW (function, windowspecdefinition call)
 *   AggregateExpression          AGG: the function's name and arguments, the
 *                                mode, distinct (a FILTER clause: RAW, see
 *                                read_agg)
 *   StartsWith/EndsWith/Contains calls named by the class (nodeName)
 *   CheckOverflow, MakeDecimal,  calls in Spark's printed spelling
 *   UnscaledValue, Pmod, Lag...
 *   StaticInvoke                 CHAR columns' readSidePadding as the call
 *                                read_side_padding(str, n); others generic
 *   If                           CASE WHEN p THEN a ELSE b END (its printed
 *                                form "if (p) a else b" is one the text
 *                                parser cannot read; Spark's semantics)
 *   Sum, Average, Abs, Round,    generic calls whose flatArguments/stringArgs
 *   CreateArray, stddev ...      drop fields (evalMode, failOnError, ...)
 *
 * Values that are not expressions (numbers, strings, case objects such as
 * RowFrame, case classes such as HashedRelationBroadcastMode) become what
 * their toString parses as: literals, and case classes calls in Scala's
 * "Name(a,b)" form (compact). Data source filters (PushedFilters) are case
 * classes too, read with the text parser's reading of their values (a value
 * ending in #digits is an attribute there, as in `EqualTo(p_brand,Brand#45)`).
 *
 * Spark's own view is kept beside the text parser's: spark_type from "type",
 * eval_mode from evalMode/failOnError/ansiEnabled, value_exact/value_null on
 * literals. Every expression read is allocated in the plan's arena; errors
 * name the JSON path, and nesting is bounded (PLAN_READ_MAX_DEPTH).
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/tz.h"
#include "ember/value_text.h"
#include "plan/internal.h"

/* ------------------------------------------------------------------ common helpers */

static void segment_render(const rd_path *p, plan_buf *b) {
    if (p->key)
        em_plan_buf_printf(b, "%s%s", p->up ? "." : "", p->key);
    else if (p->index >= 0)
        em_plan_buf_printf(b, "[%d]", p->index);
    if (p->cls)
        em_plan_buf_printf(b, " (%s)", p->cls);
}

/* The path from the root; a deep one keeps its first and last segments around "...". */
static void path_render(const rd_path *p, plan_buf *b) {
    enum { HEAD = 6, TAIL = 14 };
    const rd_path *tail[TAIL];
    int n = 0;
    for (const rd_path *q = p; q; q = q->up)
        n++;
    if (n <= HEAD + TAIL) {
        const rd_path *all[HEAD + TAIL];
        int k = n;
        for (const rd_path *q = p; q; q = q->up)
            all[--k] = q;
        for (int i = 0; i < n; i++)
            segment_render(all[i], b);
        return;
    }
    const rd_path *head[HEAD];
    int k = 0;
    for (const rd_path *q = p; q; q = q->up, k++) {
        if (k < TAIL)
            tail[TAIL - 1 - k] = q;
        if (k >= n - HEAD)
            head[n - 1 - k] = q;
    }
    for (int i = 0; i < HEAD; i++)
        segment_render(head[i], b);
    em_plan_buf_printf(b, " ...(%d more)...", n - HEAD - TAIL);
    for (int i = 0; i < TAIL; i++)
        segment_render(tail[i], b);
}

void *em_plan_read_fail(plan_reader *rd, const rd_path *path, const char *fmt, ...) {
    if (rd->failed)
        return NULL;
    rd->failed = true;
    char msg[EM_ERROR_MSG_CAP / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    plan_buf b = {0};
    path_render(path, &b);
    EM_FAIL(rd->err, EM_ERR_PARSE, "%s: %s", b.data ? b.data : rd->src, msg);
    free(b.data);
    return NULL;
}

void *em_plan_read_nomem(plan_reader *rd) {
    if (!rd->failed || rd->err->code != EM_ERR_NOMEM) {
        rd->failed = true;
        EM_FAIL(rd->err, EM_ERR_NOMEM, "%s: out of memory while reading the plan", rd->src);
    }
    return NULL;
}

const char *em_plan_read_class(const json_t *j) {
    const char *c = json_string_value(json_object_get(j, "class"));
    if (!c)
        return "";
    static _Thread_local char buf[160];
    size_t n = strlen(c);
    if (n && c[n - 1] == '$')
        n--;
    size_t s = n;
    while (s > 0 && c[s - 1] != '.' && c[s - 1] != '$')
        s--;
    size_t m = n - s < sizeof buf - 1 ? n - s : sizeof buf - 1;
    memcpy(buf, c + s, m);
    buf[m] = '\0';
    return buf;
}

em_expr *em_plan_read_new_expr(plan_reader *rd, em_expr_kind kind) {
    em_expr *e = em_plan_arena_alloc(&rd->plan->arena, sizeof *e);
    if (!e)
        return em_plan_read_nomem(rd);
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->id = -1;
    e->plan_id = -1;
    return e;
}

static const char *rd_strdup(plan_reader *rd, const char *s) {
    char *d = em_plan_arena_strndup(&rd->plan->arena, s, strlen(s));
    if (!d)
        em_plan_read_nomem(rd);
    return d;
}

/* A growable argument list in the arena (old arrays are abandoned). */
typedef struct arg_list {
    em_expr **items;
    int n, cap;
} arg_list;

static bool args_push(plan_reader *rd, arg_list *l, em_expr *e) {
    if (!e)
        return false;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        em_expr **items = em_plan_arena_alloc(&rd->plan->arena, (size_t)cap * sizeof *items);
        if (!items) {
            em_plan_read_nomem(rd);
            return false;
        }
        if (l->n)
            memcpy(items, l->items, (size_t)l->n * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = e;
    return true;
}

static void args_take(em_expr *e, arg_list *l) {
    e->args = l->items;
    e->n_args = l->n;
}

static em_expr *make_literal(plan_reader *rd, const char *text) {
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_LITERAL);
    if (e && !(e->text = rd_strdup(rd, text)))
        return NULL;
    return e;
}

/* The text parser's reading of a bare printed value: text ending in "#digits[L]" after
 * some name is an attribute (`Brand#45`), anything else a literal. */
static em_expr *make_word(plan_reader *rd, const char *text) {
    size_t n = strlen(text), end = n;
    bool lsuf = false;
    if (end > 0 && text[end - 1] == 'L') {
        end--;
        lsuf = true;
    }
    size_t d = end;
    while (d > 0 && text[d - 1] >= '0' && text[d - 1] <= '9')
        d--;
    if (d < end && d > 1 && text[d - 1] == '#' && end - d <= 18) {
        em_expr *a = em_plan_read_new_expr(rd, EM_EXPR_ATTR);
        if (!a || !(a->name = em_plan_arena_strndup(&rd->plan->arena, text, d - 1)))
            return a ? em_plan_read_nomem(rd) : NULL;
        a->id = strtoll(text + d, NULL, 10);
        a->long_suffix = lsuf;
        return a;
    }
    em_expr *e = make_literal(rd, text);
    if (e)
        e->value_exact = true;
    return e;
}

static em_expr *make_unary(plan_reader *rd, em_expr_kind kind, em_expr *child) {
    if (!child)
        return NULL;
    em_expr *e = em_plan_read_new_expr(rd, kind);
    if (!e)
        return NULL;
    arg_list l = {0};
    if (!args_push(rd, &l, child))
        return NULL;
    args_take(e, &l);
    return e;
}

static bool is_expr_json(const json_t *v) {
    return json_is_object(v) && json_object_get(v, "class") && json_object_get(v, "pretty");
}

/* ------------------------------------------------------------------ printed values */

/* java.math.BigDecimal.toString of a plain decimal string: plain unless the adjusted
 * exponent is below -6 (then scientific). */
static void java_big_decimal(char *out, size_t cap, const char *plain) {
    const char *p = plain;
    bool neg = *p == '-';
    if (neg || *p == '+')
        p++;
    char digits[128];
    int nd = 0, scale = 0;
    bool dot = false;
    for (; *p; p++) {
        if (*p == '.') {
            dot = true;
            continue;
        }
        if (*p < '0' || *p > '9' || nd >= 127) {
            snprintf(out, cap, "%s", plain); /* not a plain decimal: as written */
            return;
        }
        digits[nd++] = *p;
        if (dot)
            scale++;
    }
    int lead = 0;
    while (lead < nd - 1 && digits[lead] == '0')
        lead++;
    int ulen = nd - lead;
    long adjusted = -(long)scale + (ulen - 1);
    if (nd == 0 || adjusted >= -6) {
        snprintf(out, cap, "%s", plain);
        return;
    }
    digits[nd] = '\0';
    const char *u = digits + lead;
    snprintf(out, cap, "%s%c%s%s%sE%ld", neg ? "-" : "", u[0], ulen > 1 ? "." : "", u + 1, "",
             adjusted);
}

static void format_date(char *out, size_t cap, int64_t days) {
    int64_t y;
    int m, d;
    em_civil_from_days(days, &y, &m, &d);
    snprintf(out, cap, "%04lld-%02d-%02d", (long long)y, m, d);
}

/* TimestampFormatter.getFractionFormatter: yyyy-MM-dd HH:mm:ss[.fraction without
 * trailing zeros], in the session zone (UTC when unknown). */
/* Literal.toString of a timestamp: the instant in the session time zone (Spark's
 * sessionLocalTimeZone, which the expression compilers read the text back in); a
 * timestamp_ntz as it is. The zone is loaded by the first timestamp literal, so a
 * zone the system lacks fails only plans that hold one. */
static bool format_timestamp(plan_reader *rd, char *out, size_t cap, int64_t us, bool ntz,
                             const rd_path *path) {
    if (!ntz && rd->zone && !rd->tz) {
        const em_tz *tz = NULL;
        em_error zerr = {0};
        if (em_tz_find(rd->zone, &tz, &zerr) != EM_OK) {
            em_plan_read_fail(rd, path, "a timestamp literal in session time zone %s: %s", rd->zone,
                           zerr.msg);
            return false;
        }
        rd->tz = tz;
    }
    if (!ntz && rd->tz && !em_tz_is_utc((const em_tz *)rd->tz))
        us = em_tz_utc_to_local_us((const em_tz *)rd->tz, us);
    int64_t day_us = 86400LL * 1000000LL;
    int64_t days = us / day_us, rem = us % day_us;
    if (rem < 0) {
        rem += day_us;
        days--;
    }
    char date[32];
    format_date(date, sizeof date, days);
    int64_t secs = rem / 1000000, frac = rem % 1000000;
    int n = snprintf(out, cap, "%s %02d:%02d:%02d", date, (int)(secs / 3600), (int)(secs / 60 % 60),
                     (int)(secs % 60));
    if (frac && n > 0 && (size_t)n < cap) {
        char f[8];
        snprintf(f, sizeof f, "%06lld", (long long)frac);
        int k = 6;
        while (k > 1 && f[k - 1] == '0')
            k--;
        f[k] = '\0';
        snprintf(out + n, cap - (size_t)n, ".%s", f);
    }
    return true;
}

static int b64_value(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes base64 (as PlanJson writes binary values) into out, which holds at least
 * strlen(base64) * 3 / 4 + 1 bytes; the byte count, or -1 when it is not base64. */
static int64_t b64_decode(const char *base64, uint8_t *out) {
    int64_t len = 0;
    unsigned acc = 0;
    int bits = 0;
    for (const char *p = base64; *p && *p != '='; p++) {
        int v = b64_value(*p);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[len++] = (uint8_t)((acc >> bits) & 0xFFu);
        }
    }
    return len;
}

/* A binary value's bytes in the plan's arena (*n of them); NULL when it is not
 * base64 or on running out of memory (then rd's error). */
static const uint8_t *binary_bytes(plan_reader *rd, const char *base64, int64_t *n) {
    uint8_t *bytes = em_plan_arena_alloc(&rd->plan->arena, strlen(base64) * 3 / 4 + 1);
    if (!bytes)
        return em_plan_read_nomem(rd);
    *n = b64_decode(base64, bytes);
    return *n < 0 ? NULL : bytes;
}

/* Binary literals print as 0x + upper-case hex of the bytes (the JSON has base64). */
static bool format_binary(plan_reader *rd, plan_buf *b, const char *base64) {
    int64_t n = 0;
    const uint8_t *bytes = binary_bytes(rd, base64, &n);
    if (!bytes)
        return false;
    em_plan_buf_puts(b, "0x");
    for (int64_t i = 0; i < n; i++)
        em_plan_buf_printf(b, "%02X", bytes[i]);
    return true;
}

/* The printed form of a JSON scalar written as a plain value (a field that is not an
 * expression): strings as they are, numbers as Java prints them. */
static bool scalar_text(const json_t *v, plan_buf *b) {
    char tmp[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        em_plan_buf_put(b, json_string_value(v), json_string_length(v));
        return true;
    case JSON_INTEGER:
        em_plan_buf_printf(b, "%lld", (long long)json_integer_value(v));
        return true;
    case JSON_REAL:
        em_java_floating(json_real_value(v), false, tmp, sizeof tmp);
        em_plan_buf_puts(b, tmp);
        return true;
    case JSON_TRUE:
        em_plan_buf_puts(b, "true");
        return true;
    case JSON_FALSE:
        em_plan_buf_puts(b, "false");
        return true;
    default:
        return false;
    }
}

/* GenericArrayData.toString: the elements' internal values joined by "," in brackets
 * (dates as day numbers, strings bare). */
static bool array_text(const json_t *arr, plan_buf *b) {
    em_plan_buf_putc(b, '[');
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *x = json_array_get(arr, i);
        const json_t *inner = json_is_object(x) ? json_object_get(x, "array") : NULL;
        if (i)
            em_plan_buf_putc(b, ',');
        if (json_is_null(x))
            em_plan_buf_puts(b, "null");
        else if (json_is_array(inner))
            array_text(inner, b);
        else if (!scalar_text(x, b))
            return false;
    }
    em_plan_buf_putc(b, ']');
    return true;
}

/* Literal.toString of a value of type t (type text as written). */
static bool literal_text(plan_reader *rd, const json_t *v, const char *type_text, plan_buf *b,
                         const rd_path *path) {
    char tmp[96];
    if (json_is_null(v)) {
        em_plan_buf_puts(b, "null");
        return true;
    }
    em_type t;
    bool known = type_text && em_plan_type_from_text(type_text, strlen(type_text), &t);
    if (known) {
        switch (t.id) {
        case EM_TYPE_DATE:
            if (!json_is_integer(v))
                break;
            format_date(tmp, sizeof tmp, json_integer_value(v));
            em_plan_buf_puts(b, tmp);
            return true;
        case EM_TYPE_TIMESTAMP:
        case EM_TYPE_TIMESTAMP_NTZ:
            if (!json_is_integer(v))
                break;
            if (!format_timestamp(rd, tmp, sizeof tmp, json_integer_value(v),
                                  t.id == EM_TYPE_TIMESTAMP_NTZ, path))
                return false;
            em_plan_buf_puts(b, tmp);
            return true;
        case EM_TYPE_FLOAT:
        case EM_TYPE_DOUBLE:
            if (json_is_number(v)) {
                em_java_floating(json_number_value(v), t.id == EM_TYPE_FLOAT, tmp, sizeof tmp);
                em_plan_buf_puts(b, tmp);
                return true;
            }
            break; /* "NaN", "Infinity": the strings as written */
        case EM_TYPE_DECIMAL:
            if (!json_is_string(v))
                break;
            java_big_decimal(tmp, sizeof tmp, json_string_value(v));
            em_plan_buf_puts(b, tmp);
            return true;
        case EM_TYPE_BINARY:
            if (json_is_string(v) && format_binary(rd, b, json_string_value(v)))
                return true;
            em_plan_read_fail(rd, path, "expected a base64 binary literal value");
            return false;
        default:
            break;
        }
    }
    if (scalar_text(v, b))
        return true;
    json_t *arr = json_is_object(v) ? json_object_get(v, "array") : NULL;
    if (json_is_array(arr))
        return array_text(arr, b);
    if (json_is_object(v) && json_object_get(v, "unsupported")) {
        em_plan_buf_puts(b, "[unsupported]");
        return true;
    }
    em_plan_read_fail(rd, path, "expected a literal value");
    return false;
}

/* ------------------------------------------------------------------ Spark's view */

static em_eval_mode eval_mode_of(const json_t *fields) {
    const char *m = json_string_value(json_object_get(fields, "evalMode"));
    if (m)
        return strcmp(m, "ANSI") == 0   ? EM_EVAL_ANSI
               : strcmp(m, "TRY") == 0  ? EM_EVAL_TRY
               : strcmp(m, "LEGACY") == 0 ? EM_EVAL_LEGACY
                                          : EM_EVAL_UNSPECIFIED;
    const json_t *f = json_object_get(fields, "failOnError");
    if (!f)
        f = json_object_get(fields, "ansiEnabled");
    if (json_is_boolean(f))
        return json_is_true(f) ? EM_EVAL_ANSI : EM_EVAL_LEGACY;
    return EM_EVAL_UNSPECIFIED;
}

/* Expressions Spark gives a data type that the model treats as no value: partitionings
 * (IntegerType, the partition id) and window frame boundaries (NullType). */
static bool not_a_value(const char *cls) {
    static const char *const classes[] = {
        "HashPartitioning",   "RangePartitioning", "SinglePartition",  "RoundRobinPartitioning",
        "UnknownPartitioning", "BroadcastPartitioning", "KeyGroupedPartitioning",
        "UnboundedPreceding", "UnboundedFollowing", "CurrentRow",       "SpecifiedWindowFrame",
        "WindowSpecDefinition",
    };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(classes[i], cls) == 0)
            return true;
    return false;
}

static void set_spark_view(plan_reader *rd, em_expr *e, const json_t *j, const char *cls) {
    const char *t = json_string_value(json_object_get(j, "type"));
    if (t && !not_a_value(cls)) {
        if (em_plan_type_from_text(t, strlen(t), &e->spark_type))
            e->spark_type_known = true;
        else
            e->spark_type_foreign = rd_strdup(rd, t); /* array<int>, interval day ... */
    }
    const json_t *fields = json_object_get(j, "fields");
    em_eval_mode m = fields ? eval_mode_of(fields) : EM_EVAL_UNSPECIFIED;
    if (m != EM_EVAL_UNSPECIFIED)
        e->eval_mode = m;
}

/* ------------------------------------------------------------------ generic arguments */

static em_expr *read_expr_at(plan_reader *rd, json_t *j, const rd_path *path);
static em_expr *product_call(plan_reader *rd, json_t *v, const rd_path *path, bool filter);

/* Scala's toString of a value that is not an expression (a case class field). */
static em_expr *value_expr(plan_reader *rd, json_t *v, const rd_path *path, bool filter) {
    if (is_expr_json(v))
        return read_expr_at(rd, v, path);
    if (json_is_array(v)) {
        /* a Seq inside a case class prints as List(a, b) */
        em_expr *c = em_plan_read_new_expr(rd, EM_EXPR_CALL);
        if (!c || !(c->name = rd_strdup(rd, "List")))
            return NULL;
        arg_list l = {0};
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            rd_path p = {path, NULL, (int)i, NULL};
            if (!args_push(rd, &l, value_expr(rd, x, &p, filter)))
                return NULL;
        }
        args_take(c, &l);
        return c;
    }
    if (json_is_object(v) && json_object_get(v, "fields") && json_object_get(v, "class")) {
        if (++rd->depth > PLAN_READ_MAX_DEPTH) {
            rd->depth--;
            return em_plan_read_fail(rd, path, "values nested deeper than %d levels",
                                  PLAN_READ_MAX_DEPTH);
        }
        em_expr *c = product_call(rd, v, path, filter);
        rd->depth--;
        return c;
    }
    if (json_is_object(v) && json_is_string(json_object_get(v, "string")))
        return make_literal(rd, json_string_value(json_object_get(v, "string")));
    if (json_is_object(v) && json_is_string(json_object_get(v, "class")))
        /* an object the writer names by class only (its toString may be costly): the
         * name stands for the text Spark would print */
        return make_literal(rd, em_plan_read_class(v));
    if (json_is_null(v))
        return make_literal(rd, "None");
    plan_buf b = {0};
    if (!scalar_text(v, &b)) {
        free(b.data);
        return em_plan_read_fail(rd, path, "expected a value");
    }
    if (b.failed) {
        free(b.data);
        return em_plan_read_nomem(rd);
    }
    const char *text = b.data ? b.data : "";
    em_expr *e = filter ? make_word(rd, text) : make_literal(rd, text);
    if (e && json_is_string(v))
        e->value_exact = true;
    free(b.data);
    return e;
}

/* Orders values by their printed text (literals' text, attributes' name#id). */
static int cmp_printed(const void *a, const void *b) {
    const em_expr *x = *(em_expr *const *)a, *y = *(em_expr *const *)b;
    char bx[512], by[512];
    const char *tx = x->text, *ty = y->text;
    if (x->kind == EM_EXPR_ATTR) {
        snprintf(bx, sizeof bx, "%s#%lld%s", x->name, (long long)x->id, x->long_suffix ? "L" : "");
        tx = bx;
    }
    if (y->kind == EM_EXPR_ATTR) {
        snprintf(by, sizeof by, "%s#%lld%s", y->name, (long long)y->id, y->long_suffix ? "L" : "");
        ty = by;
    }
    return strcmp(tx ? tx : "", ty ? ty : "");
}

/* A case class as its default toString, Name(a,b,...) with "," between the fields (the
 * text parser's compact call). Data source filters (filter true) read their string values
 * as the text parser reads them; sources.In prints "In(a, [v1,v2])". */
static em_expr *product_call(plan_reader *rd, json_t *v, const rd_path *path, bool filter) {
    const char *full = json_string_value(json_object_get(v, "class"));
    em_expr *c = em_plan_read_new_expr(rd, EM_EXPR_CALL);
    if (!c || !(c->name = rd_strdup(rd, em_plan_read_class(v))))
        return NULL;
    rd_path pc = {path, NULL, -1, c->name};
    rd_path pf = {&pc, "fields", -1, NULL};
    json_t *fields = json_object_get(v, "fields");
    if (!json_is_object(fields))
        return em_plan_read_fail(rd, &pf, "expected an object of fields");
    arg_list l = {0};
    if (filter && full && strcmp(full, "org.apache.spark.sql.sources.In") == 0) {
        json_t *attr = json_object_get(fields, "attribute");
        json_t *vals = json_object_get(fields, "values");
        rd_path pa = {&pf, "attribute", -1, NULL}, pv = {&pf, "values", -1, NULL};
        if (!json_is_string(attr))
            return em_plan_read_fail(rd, &pa, "expected a column name");
        if (!json_is_array(vals))
            return em_plan_read_fail(rd, &pv, "expected an array of values");
        if (!args_push(rd, &l, make_word(rd, json_string_value(attr))))
            return NULL;
        em_expr *list = em_plan_read_new_expr(rd, EM_EXPR_LIST);
        if (!list)
            return NULL;
        arg_list items = {0};
        size_t i;
        json_t *x;
        json_array_foreach(vals, i, x) {
            rd_path p = {&pv, NULL, (int)i, NULL};
            if (!args_push(rd, &items, value_expr(rd, x, &p, true)))
                return NULL;
        }
        /* sources.In.toString sorts the values' strings */
        if (items.n > 1)
            qsort(items.items, (size_t)items.n, sizeof *items.items, cmp_printed);
        args_take(list, &items);
        list->compact = items.n >= 2;
        if (!args_push(rd, &l, list))
            return NULL;
        args_take(c, &l);
        return c;
    }
    const char *key;
    json_t *x;
    json_object_foreach(fields, key, x) {
        rd_path p = {&pf, key, -1, NULL};
        if (!args_push(rd, &l, value_expr(rd, x, &p, filter)))
            return NULL;
    }
    args_take(c, &l);
    c->compact = l.n >= 2;
    return c;
}

/* DataType.toString of a catalogString ("decimal(10,2)" -> "DecimalType(10,2)"). */
static em_expr *data_type_arg(plan_reader *rd, const char *catalog) {
    static const struct {
        const char *catalog, *name;
    } names[] = {
        {"int", "IntegerType"},     {"bigint", "LongType"},     {"smallint", "ShortType"},
        {"tinyint", "ByteType"},    {"string", "StringType"},   {"double", "DoubleType"},
        {"float", "FloatType"},     {"boolean", "BooleanType"}, {"date", "DateType"},
        {"timestamp", "TimestampType"}, {"timestamp_ntz", "TimestampNTZType"},
        {"binary", "BinaryType"},   {"void", "NullType"},
    };
    em_type t;
    if (em_plan_type_from_text(catalog, strlen(catalog), &t) && t.id == EM_TYPE_DECIMAL) {
        char buf[40];
        snprintf(buf, sizeof buf, "DecimalType(%d,%d)", t.precision, t.scale);
        em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_TYPE);
        if (!e || !(e->text = rd_strdup(rd, buf)))
            return NULL;
        e->cast_type = t;
        e->cast_type_known = true;
        return e;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].catalog, catalog) == 0)
            return make_literal(rd, names[i].name);
    return make_literal(rd, catalog);
}

/* One field of an expression as flatArguments prints it, appended to l: expressions,
 * sequences flattened one level, Option[String] time zones as Some(z)/None, data types as
 * DataType.toString, other values as literals. */
static bool flat_field(plan_reader *rd, const char *key, json_t *v, arg_list *l,
                       const rd_path *path) {
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            rd_path p = {path, NULL, (int)i, NULL};
            if (!args_push(rd, l, value_expr(rd, x, &p, false)))
                return false;
        }
        return true;
    }
    if (strcmp(key, "timeZoneId") == 0 && (json_is_string(v) || json_is_null(v))) {
        if (json_is_null(v))
            return args_push(rd, l, make_literal(rd, "None"));
        em_expr *some = em_plan_read_new_expr(rd, EM_EXPR_CALL);
        if (!some || !(some->name = rd_strdup(rd, "Some")))
            return false;
        arg_list a = {0};
        if (!args_push(rd, &a, make_literal(rd, json_string_value(v))))
            return false;
        args_take(some, &a);
        return args_push(rd, l, some);
    }
    if (strcmp(key, "dataType") == 0 && json_is_string(v))
        return args_push(rd, l, data_type_arg(rd, json_string_value(v)));
    return args_push(rd, l, value_expr(rd, v, path, false));
}

/* Which fields a class prints (its flatArguments/stringArgs override). */
typedef enum args_rule {
    ARGS_ALL = 0,    /* every field (the default) */
    ARGS_CHILD,      /* Iterator(child): Sum, Average, Abs, Rand ... */
    ARGS_FIRST,      /* stringArgs.take(1): CreateArray, CreateMap, ArrayExists */
    ARGS_EXPRS,      /* expression fields only: stddev, covariance, correlation */
    ARGS_CHILD_SCALE /* Round, BRound */
} args_rule;

static const struct {
    const char *cls;
    args_rule rule;
} args_rules[] = {
    {"Sum", ARGS_CHILD},        {"Average", ARGS_CHILD},      {"Abs", ARGS_CHILD},
    {"Rand", ARGS_CHILD},       {"Randn", ARGS_CHILD},        {"TrySum", ARGS_CHILD},
    {"TryAverage", ARGS_CHILD}, {"CreateArray", ARGS_FIRST},  {"CreateMap", ARGS_FIRST},
    {"ArrayExists", ARGS_FIRST}, {"StddevSamp", ARGS_EXPRS},  {"StddevPop", ARGS_EXPRS},
    {"VarianceSamp", ARGS_EXPRS}, {"VariancePop", ARGS_EXPRS}, {"Skewness", ARGS_EXPRS},
    {"Kurtosis", ARGS_EXPRS},   {"CovPopulation", ARGS_EXPRS}, {"CovSample", ARGS_EXPRS},
    {"Corr", ARGS_EXPRS},       {"RegrR2", ARGS_EXPRS},       {"RegrSlope", ARGS_EXPRS},
    {"RegrIntercept", ARGS_EXPRS}, {"Round", ARGS_CHILD_SCALE}, {"BRound", ARGS_CHILD_SCALE},
};

/* The printed arguments of an expression (or an aggregate function) into l. */
static bool flat_args(plan_reader *rd, json_t *j, const char *cls, arg_list *l,
                      const rd_path *path) {
    args_rule rule = ARGS_ALL;
    for (size_t i = 0; i < sizeof args_rules / sizeof args_rules[0]; i++)
        if (strcmp(args_rules[i].cls, cls) == 0)
            rule = args_rules[i].rule;
    rd_path pf = {path, "fields", -1, NULL};
    json_t *fields = json_object_get(j, "fields");
    if (!fields)
        return true; /* case objects (unboundedpreceding$) */
    if (!json_is_object(fields)) {
        em_plan_read_fail(rd, &pf, "expected an object of fields");
        return false;
    }
    const char *key;
    json_t *v;
    int k = 0;
    json_object_foreach(fields, key, v) {
        int pos = k++;
        switch (rule) {
        case ARGS_CHILD:
            if (strcmp(key, "child") != 0)
                continue;
            break;
        case ARGS_FIRST:
            if (pos > 0)
                continue;
            break;
        case ARGS_EXPRS:
            if (!is_expr_json(v))
                continue;
            break;
        case ARGS_CHILD_SCALE:
            if (strcmp(key, "child") != 0 && strcmp(key, "scale") != 0)
                continue;
            break;
        default:
            break;
        }
        rd_path p = {&pf, key, -1, NULL};
        if (!flat_field(rd, key, v, l, &p))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ field access */

static json_t *field(plan_reader *rd, json_t *j, const char *key, const rd_path *path) {
    json_t *fields = json_object_get(j, "fields");
    rd_path pf = {path, "fields", -1, NULL};
    if (!json_is_object(fields))
        return em_plan_read_fail(rd, &pf, "expected an object of fields");
    json_t *v = json_object_get(fields, key);
    if (!v) {
        rd_path pk = {&pf, key, -1, NULL};
        return em_plan_read_fail(rd, &pk, "missing");
    }
    return v;
}

/* The expression in field key (an expression object). */
static em_expr *field_expr(plan_reader *rd, json_t *j, const char *key, const rd_path *path) {
    json_t *v = field(rd, j, key, path);
    if (!v)
        return NULL;
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pk = {&pf, key, -1, NULL};
    return read_expr_at(rd, v, &pk);
}

static const char *field_string(plan_reader *rd, json_t *j, const char *key, const rd_path *path) {
    json_t *v = field(rd, j, key, path);
    if (!v)
        return NULL;
    if (!json_is_string(v)) {
        rd_path pf = {path, "fields", -1, NULL};
        rd_path pk = {&pf, key, -1, NULL};
        return em_plan_read_fail(rd, &pk, "expected a string");
    }
    return json_string_value(v);
}

static int64_t expr_id_of(plan_reader *rd, json_t *j, const rd_path *path) {
    json_t *id = json_object_get(j, "exprId");
    if (!json_is_integer(id)) {
        rd_path p = {path, "exprId", -1, NULL};
        em_plan_read_fail(rd, &p, "expected an integer expression id");
        return -1;
    }
    return json_integer_value(id);
}

static bool type_is_bigint(const json_t *j) {
    const char *t = json_string_value(json_object_get(j, "type"));
    return t && strcmp(t, "bigint") == 0;
}

/* ------------------------------------------------------------------ classes */

typedef em_expr *(*expr_reader)(plan_reader *rd, json_t *j, const char *cls, const rd_path *path);

static em_expr *read_attribute(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_ATTR);
    const char *name = field_string(rd, j, "name", path);
    if (!e || !name || !(e->name = rd_strdup(rd, name)))
        return NULL;
    e->id = expr_id_of(rd, j, path);
    e->long_suffix = type_is_bigint(j);
    return rd->failed ? NULL : e;
}

static em_expr *read_alias(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = make_unary(rd, EM_EXPR_ALIAS, field_expr(rd, j, "child", path));
    const char *name = e ? field_string(rd, j, "name", path) : NULL;
    if (!name || !(e->name = rd_strdup(rd, name)))
        return NULL;
    e->id = expr_id_of(rd, j, path);
    e->long_suffix = type_is_bigint(j);
    return rd->failed ? NULL : e;
}

/* A literal of Spark's value v of type type_text: its printed text, exact, and what
 * the text cannot always give back: a timestamp's microseconds (text in the session
 * zone names one local time for the two instants of a DST overlap), a date's days (a
 * year before 1 prints as no date parser reads it), a binary value's bytes (printed
 * as their hex). */
static em_expr *exact_literal(plan_reader *rd, const json_t *v, const char *type_text,
                              const rd_path *path) {
    plan_buf b = {0};
    if (!literal_text(rd, v, type_text, &b, path)) {
        free(b.data);
        return NULL;
    }
    em_expr *e = b.failed ? em_plan_read_nomem(rd) : make_literal(rd, b.data ? b.data : "");
    free(b.data);
    if (!e)
        return NULL;
    e->value_exact = true;
    e->value_null = json_is_null(v);
    em_type t;
    bool known = type_text && em_plan_type_from_text(type_text, strlen(type_text), &t);
    if (known && json_is_integer(v) &&
        (t.id == EM_TYPE_TIMESTAMP || t.id == EM_TYPE_TIMESTAMP_NTZ || t.id == EM_TYPE_DATE)) {
        e->value_int_type = t.id;
        e->value_int = json_integer_value(v);
    } else if (known && t.id == EM_TYPE_BINARY && json_is_string(v)) {
        /* the text is the bytes' hex: the compilers take these instead */
        int64_t n = 0;
        if (!(e->value_bytes = binary_bytes(rd, json_string_value(v), &n)))
            return NULL; /* base64 already checked by the text: out of memory */
        e->value_len = (int32_t)n;
    }
    return e;
}

static em_expr *read_literal(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    json_t *v = json_object_get(j, "value");
    rd_path pv = {path, "value", -1, NULL};
    if (!v)
        return em_plan_read_fail(rd, &pv, "missing");
    return exact_literal(rd, v, json_string_value(json_object_get(j, "type")), &pv);
}

static const struct {
    const char *cls;
    em_binop op;
} binop_classes[] = {
    {"Add", EM_OP_ADD},
    {"Subtract", EM_OP_SUB},
    {"Multiply", EM_OP_MUL},
    {"Divide", EM_OP_DIV},
    {"Remainder", EM_OP_REM},
    {"IntegralDivide", EM_OP_INTDIV},
    {"BitwiseAnd", EM_OP_BITAND},
    {"BitwiseOr", EM_OP_BITOR},
    {"BitwiseXor", EM_OP_BITXOR},
    {"EqualTo", EM_OP_EQ},
    {"EqualNullSafe", EM_OP_NULLSAFE_EQ},
    {"LessThan", EM_OP_LT},
    {"LessThanOrEqual", EM_OP_LE},
    {"GreaterThan", EM_OP_GT},
    {"GreaterThanOrEqual", EM_OP_GE},
    {"And", EM_OP_AND},
    {"Or", EM_OP_OR},
};

static em_expr *read_generic(plan_reader *rd, json_t *j, const char *cls, const rd_path *path);

static em_expr *read_binary(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    const char *pretty = json_string_value(json_object_get(j, "pretty"));
    if (strcmp(cls, "Remainder") == 0 && pretty && strcmp(pretty, "mod") == 0)
        return read_generic(rd, j, cls, path); /* called as mod(a, b): prints so */
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_BINARY);
    if (!e)
        return NULL;
    for (size_t i = 0; i < sizeof binop_classes / sizeof binop_classes[0]; i++)
        if (strcmp(binop_classes[i].cls, cls) == 0)
            e->op = binop_classes[i].op;
    arg_list l = {0};
    if (!args_push(rd, &l, field_expr(rd, j, "left", path)) ||
        !args_push(rd, &l, field_expr(rd, j, "right", path)))
        return NULL;
    args_take(e, &l);
    return e;
}

static em_expr *read_not(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    return make_unary(rd, EM_EXPR_NOT, field_expr(rd, j, "child", path));
}

static em_expr *read_negate(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    return make_unary(rd, EM_EXPR_NEGATE, field_expr(rd, j, "child", path));
}

static em_expr *read_in(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_IN);
    arg_list l = {0};
    if (!e || !args_push(rd, &l, field_expr(rd, j, "value", path)))
        return NULL;
    json_t *list = field(rd, j, "list", path);
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pl = {&pf, "list", -1, NULL};
    if (!list)
        return NULL;
    if (!json_is_array(list))
        return em_plan_read_fail(rd, &pl, "expected an array of expressions");
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        rd_path p = {&pl, NULL, (int)i, NULL};
        if (!args_push(rd, &l, read_expr_at(rd, x, &p)))
            return NULL;
    }
    args_take(e, &l);
    e->compact = l.n - 1 >= 2; /* In.toString joins the list with "," */
    return e;
}

static int cmp_text(const void *a, const void *b) {
    return strcmp((*(em_expr *const *)a)->text, (*(em_expr *const *)b)->text);
}

/* InSet.toString: each value as Literal(v, child.dataType) prints, sorted as strings. */
static em_expr *read_inset(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    json_t *child = field(rd, j, "child", path);
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_INSET);
    arg_list l = {0};
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pc = {&pf, "child", -1, NULL};
    if (!child || !e || !args_push(rd, &l, read_expr_at(rd, child, &pc)))
        return NULL;
    json_t *hset = field(rd, j, "hset", path);
    rd_path ph = {&pf, "hset", -1, NULL};
    if (!hset)
        return NULL;
    if (!json_is_array(hset))
        return em_plan_read_fail(rd, &ph, "expected an array of values");
    const char *type = json_string_value(json_object_get(child, "type"));
    size_t i;
    json_t *x;
    json_array_foreach(hset, i, x) {
        rd_path p = {&ph, NULL, (int)i, NULL};
        if (!args_push(rd, &l, exact_literal(rd, x, type, &p)))
            return NULL;
    }
    if (l.n > 2)
        qsort(l.items + 1, (size_t)l.n - 1, sizeof *l.items, cmp_text);
    args_take(e, &l);
    return e;
}

/* "l LIKE r" with the default escape; another escape character prints " ESCAPE 'c'",
 * which no model kind holds: RAW with the printed text, the operands as arguments. */
static em_expr *read_like(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_LIKE);
    arg_list l = {0};
    if (!e || !args_push(rd, &l, field_expr(rd, j, "left", path)) ||
        !args_push(rd, &l, field_expr(rd, j, "right", path)))
        return NULL;
    args_take(e, &l);
    json_t *esc = json_object_get(json_object_get(j, "fields"), "escapeChar");
    const char *c = json_string_value(json_object_get(esc, "string"));
    if (!c)
        c = json_string_value(esc);
    if (c && strcmp(c, "\\") != 0) {
        plan_buf b = {0};
        em_plan_print_expr(&b, e, rd->shim);
        em_plan_buf_printf(&b, " ESCAPE '%s'", c);
        e->kind = EM_EXPR_RAW;
        e->text = b.failed ? NULL : rd_strdup(rd, b.data ? b.data : "");
        free(b.data);
        if (!e->text)
            return em_plan_read_nomem(rd);
    }
    return e;
}

/* Calls Spark prints with a fixed name other than prettyName, arguments ", "-separated. */
static em_expr *named_call(plan_reader *rd, const char *name, em_expr *a, em_expr *b,
                           em_expr *c) {
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_CALL);
    if (!e || !(e->name = rd_strdup(rd, name)))
        return NULL;
    arg_list l = {0};
    if (!args_push(rd, &l, a) || (b && !args_push(rd, &l, b)) || (c && !args_push(rd, &l, c)))
        return NULL;
    args_take(e, &l);
    return e;
}

static em_expr *read_rlike(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls; /* RLike.toString: RLIKE(l, r) */
    em_expr *l = field_expr(rd, j, "left", path);
    em_expr *r = l ? field_expr(rd, j, "right", path) : NULL;
    return r ? named_call(rd, "RLIKE", l, r, NULL) : NULL;
}

/* StringPredicate.toString: nodeName(l, r) */
static em_expr *read_string_predicate(plan_reader *rd, json_t *j, const char *cls,
                                      const rd_path *path) {
    em_expr *l = field_expr(rd, j, "left", path);
    em_expr *r = l ? field_expr(rd, j, "right", path) : NULL;
    return r ? named_call(rd, cls, l, r, NULL) : NULL;
}

static em_expr *read_pmod(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *l = field_expr(rd, j, "left", path);
    em_expr *r = l ? field_expr(rd, j, "right", path) : NULL;
    return r ? named_call(rd, "pmod", l, r, NULL) : NULL;
}

static em_expr *read_unscaled(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *c = field_expr(rd, j, "child", path);
    return c ? named_call(rd, "UnscaledValue", c, NULL, NULL) : NULL;
}

static em_expr *int_field_literal(plan_reader *rd, json_t *j, const char *key,
                                  const rd_path *path) {
    json_t *v = field(rd, j, key, path);
    if (!v)
        return NULL;
    if (!json_is_integer(v)) {
        rd_path pf = {path, "fields", -1, NULL};
        rd_path pk = {&pf, key, -1, NULL};
        return em_plan_read_fail(rd, &pk, "expected an integer");
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    return make_literal(rd, buf);
}

/* MakeDecimal.toString: MakeDecimal(child,p,s) (compact) */
static em_expr *read_make_decimal(plan_reader *rd, json_t *j, const char *cls,
                                  const rd_path *path) {
    (void)cls;
    em_expr *c = field_expr(rd, j, "child", path);
    em_expr *p = c ? int_field_literal(rd, j, "precision", path) : NULL;
    em_expr *s = p ? int_field_literal(rd, j, "scale", path) : NULL;
    em_expr *e = s ? named_call(rd, "MakeDecimal", c, p, s) : NULL;
    if (e)
        e->compact = true;
    return e;
}

/* CheckOverflow.toString: CheckOverflow(child, DecimalType(p,s)), and nullOnOverflow
 * after them in the lines that print three arguments (the shim says which). */
static em_expr *read_check_overflow(plan_reader *rd, json_t *j, const char *cls,
                                    const rd_path *path) {
    (void)cls;
    em_expr *c = field_expr(rd, j, "child", path);
    const char *t = c ? field_string(rd, j, "dataType", path) : NULL;
    em_expr *ty = t ? data_type_arg(rd, t) : NULL;
    em_expr *flag = NULL;
    if (ty && rd->shim && rd->shim->check_overflow_args == 3) {
        json_t *v = json_object_get(json_object_get(j, "fields"), "nullOnOverflow");
        if (!(flag = make_literal(rd, json_is_false(v) ? "false" : "true")))
            return NULL;
    }
    return ty ? named_call(rd, "CheckOverflow", c, ty, flag) : NULL;
}

/* If prints "if (p) a else b", a form the text parser cannot read (it keeps it as one
 * literal); Spark evaluates it as CaseWhen(Seq(p -> a), Some(b)), so the model's CASE WHEN
 * p THEN a ELSE b END, which every consumer knows and the typing rules type. */
static em_expr *read_if(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *p = field_expr(rd, j, "predicate", path);
    em_expr *a = p ? field_expr(rd, j, "trueValue", path) : NULL;
    em_expr *b = a ? field_expr(rd, j, "falseValue", path) : NULL;
    em_expr *e = b ? em_plan_read_new_expr(rd, EM_EXPR_CASE) : NULL;
    arg_list l = {0};
    if (!e || !args_push(rd, &l, p) || !args_push(rd, &l, a) || !args_push(rd, &l, b))
        return NULL;
    args_take(e, &l);
    e->has_else = true;
    return e;
}

static em_expr *read_case(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_CASE);
    json_t *branches = field(rd, j, "branches", path);
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pb = {&pf, "branches", -1, NULL};
    if (!e || !branches)
        return NULL;
    if (!json_is_array(branches) || json_array_size(branches) == 0)
        return em_plan_read_fail(rd, &pb, "expected a non-empty array of (condition, value)");
    arg_list l = {0};
    size_t i;
    json_t *br;
    json_array_foreach(branches, i, br) {
        rd_path p = {&pb, NULL, (int)i, NULL};
        json_t *bf = json_object_get(br, "fields");
        json_t *c = json_object_get(bf, "_1"), *v = json_object_get(bf, "_2");
        if (!c || !v)
            return em_plan_read_fail(rd, &p, "expected a pair {\"fields\": {\"_1\", \"_2\"}}");
        rd_path pbf = {&p, "fields", -1, NULL};
        rd_path p1 = {&pbf, "_1", -1, NULL}, p2 = {&pbf, "_2", -1, NULL};
        if (!args_push(rd, &l, read_expr_at(rd, c, &p1)) ||
            !args_push(rd, &l, read_expr_at(rd, v, &p2)))
            return NULL;
    }
    json_t *els = json_object_get(json_object_get(j, "fields"), "elseValue");
    if (els && !json_is_null(els)) {
        rd_path pe = {&pf, "elseValue", -1, NULL};
        if (!args_push(rd, &l, read_expr_at(rd, els, &pe)))
            return NULL;
        e->has_else = true;
    }
    args_take(e, &l);
    return e;
}

static em_expr *read_cast(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = make_unary(rd, EM_EXPR_CAST, field_expr(rd, j, "child", path));
    const char *t = e ? field_string(rd, j, "dataType", path) : NULL;
    if (!t || !(e->text = rd_strdup(rd, t)))
        return NULL;
    e->cast_type_known = em_plan_type_from_text(t, strlen(t), &e->cast_type);
    return e;
}

static em_expr *read_sort_order(plan_reader *rd, json_t *j, const char *cls,
                                const rd_path *path) {
    (void)cls;
    em_expr *e = make_unary(rd, EM_EXPR_SORT_ORDER, field_expr(rd, j, "child", path));
    const char *dir = e ? field_string(rd, j, "direction", path) : NULL;
    const char *nulls = dir ? field_string(rd, j, "nullOrdering", path) : NULL;
    if (!nulls)
        return NULL;
    e->ascending = strcmp(dir, "Ascending") == 0;
    e->nulls_first = strcmp(nulls, "NullsFirst") == 0;
    return e;
}

static em_expr *read_bound_ref(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_BOUND_REF);
    json_t *ord = e ? field(rd, j, "ordinal", path) : NULL;
    const char *t = ord ? field_string(rd, j, "dataType", path) : NULL;
    json_t *nul = t ? field(rd, j, "nullable", path) : NULL;
    if (!nul)
        return NULL;
    rd_path pf = {path, "fields", -1, NULL};
    if (!json_is_integer(ord)) {
        rd_path p = {&pf, "ordinal", -1, NULL};
        return em_plan_read_fail(rd, &p, "expected an integer");
    }
    if (!json_is_boolean(nul)) {
        rd_path p = {&pf, "nullable", -1, NULL};
        return em_plan_read_fail(rd, &p, "expected a boolean");
    }
    e->id = json_integer_value(ord);
    if (!(e->text = rd_strdup(rd, t)))
        return NULL;
    e->cast_type_known = em_plan_type_from_text(t, strlen(t), &e->cast_type);
    e->nullable_flag = json_is_true(nul);
    return e;
}

/* The subquery plan node a PlanExpression points at ({"plan": node}), or NULL. */
static json_t *subquery_node(json_t *j) {
    json_t *p = json_object_get(json_object_get(j, "fields"), "plan");
    p = json_object_get(p, "plan");
    return json_is_object(p) ? p : NULL;
}

/* A subquery node's name ("scalar-subquery#603"), seen through ReusedSubqueryExec. */
static const char *subquery_name(json_t *node, bool *reused, json_int_t *node_id) {
    *reused = false;
    for (int hop = 0; hop < 4 && node; hop++) {
        const char *cls = em_plan_read_class(node);
        json_t *fields = json_object_get(node, "fields");
        if (strcmp(cls, "ReusedSubqueryExec") == 0) {
            *reused = true;
            json_t *c = json_object_get(fields, "child");
            json_t *inner = json_object_get(c, "plan");
            if (!inner) { /* the child written as a child of the tree */
                json_t *kids = json_object_get(node, "children");
                json_int_t k = json_integer_value(json_object_get(c, "child"));
                inner = json_array_get(kids, (size_t)k);
            }
            node = inner;
            continue;
        }
        *node_id = json_integer_value(json_object_get(node, "id"));
        return json_string_value(json_object_get(fields, "name"));
    }
    return NULL;
}

static int64_t trailing_id(const char *name) {
    const char *h = strrchr(name, '#');
    return h && h[1] >= '0' && h[1] <= '9' ? strtoll(h + 1, NULL, 10) : -1;
}

/* execution.ScalarSubquery: "Subquery scalar-subquery#N, [id=#M]"; M is SparkPlan.id, which
 * the JSON lacks: the SubqueryExec node's JSON id stands for it (the reader makes a reused
 * subquery's agree with its original's). */
static em_expr *read_scalar_subquery(plan_reader *rd, json_t *j, const char *cls,
                                     const rd_path *path) {
    (void)cls;
    json_t *node = subquery_node(j);
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pp = {&pf, "plan", -1, NULL};
    if (!node)
        return em_plan_read_fail(rd, &pp, "expected {\"plan\": <subquery node>}");
    bool reused;
    json_int_t nid = -1;
    const char *name = subquery_name(node, &reused, &nid);
    if (!name)
        return em_plan_read_fail(rd, &pp, "expected a subquery node with a name");
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_SCALAR_SUBQUERY);
    if (!e || !(e->name = rd_strdup(rd, name)))
        return NULL;
    e->reused = reused;
    e->id = trailing_id(name);
    e->plan_id = nid;
    return e;
}

/* InSubqueryExec: "value IN dynamicpruning#N" */
static em_expr *read_in_subquery(plan_reader *rd, json_t *j, const char *cls,
                                 const rd_path *path) {
    (void)cls;
    em_expr *e = make_unary(rd, EM_EXPR_IN_SUBQUERY, field_expr(rd, j, "child", path));
    if (!e)
        return NULL;
    json_t *node = subquery_node(j);
    bool reused;
    json_int_t nid = -1;
    const char *name = node ? subquery_name(node, &reused, &nid) : NULL;
    if (!name) {
        rd_path pf = {path, "fields", -1, NULL};
        rd_path pp = {&pf, "plan", -1, NULL};
        return em_plan_read_fail(rd, &pp, "expected {\"plan\": <subquery node>} with a name");
    }
    if (!(e->name = rd_strdup(rd, name)))
        return NULL;
    e->id = trailing_id(name);
    return e;
}

/* The name of field `ordinal` of a struct type's catalogString, into buf. */
static bool struct_field_name(const char *type, long ordinal, char *buf, size_t cap) {
    if (!type || strncmp(type, "struct<", 7) != 0)
        return false;
    const char *p = type + 7;
    for (long k = 0;; k++) {
        const char *colon = strchr(p, ':');
        if (!colon)
            return false;
        if (k == ordinal) {
            snprintf(buf, cap, "%.*s", (int)(colon - p), p);
            return true;
        }
        int depth = 0;
        const char *q = colon + 1;
        for (; *q; q++) {
            if (*q == '<' || *q == '(')
                depth++;
            else if ((*q == '>' || *q == ')') && depth > 0)
                depth--;
            else if (depth == 0 && (*q == ',' || *q == '>'))
                break;
        }
        if (*q != ',')
            return false;
        p = q + 1;
    }
}

/* GetStructField.toString: child.name (name, else the child type's field at ordinal) */
static em_expr *read_struct_field(plan_reader *rd, json_t *j, const char *cls,
                                  const rd_path *path) {
    (void)cls;
    json_t *child = field(rd, j, "child", path);
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pc = {&pf, "child", -1, NULL};
    em_expr *e = child ? make_unary(rd, EM_EXPR_FIELD, read_expr_at(rd, child, &pc)) : NULL;
    if (!e)
        return NULL;
    const char *name = json_string_value(json_object_get(json_object_get(j, "fields"), "name"));
    char buf[256];
    if (!name) {
        json_t *ord = json_object_get(json_object_get(j, "fields"), "ordinal");
        long o = json_is_integer(ord) ? (long)json_integer_value(ord) : -1;
        if (struct_field_name(json_string_value(json_object_get(child, "type")), o, buf,
                              sizeof buf))
            name = buf;
        else {
            snprintf(buf, sizeof buf, "_%ld", o);
            name = buf;
        }
    }
    return (e->name = rd_strdup(rd, name)) ? e : NULL;
}

static em_expr *read_window(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_WINDOW);
    arg_list l = {0};
    if (!e || !args_push(rd, &l, field_expr(rd, j, "windowFunction", path)) ||
        !args_push(rd, &l, field_expr(rd, j, "windowSpec", path)))
        return NULL;
    args_take(e, &l);
    return e;
}

/* Lag/Lead (FrameLessOffsetWindowFunction.toString): name(input, offset, default); Lag's
 * printed offset is its inputOffset negated. Spark's print drops IGNORE NULLS (the
 * ignoreNulls field), which changes which row is read: it is kept as a fourth argument
 * `true`, the form the window functions read (ops/window_spec.c). */
static em_expr *read_offset_window(plan_reader *rd, json_t *j, const char *cls,
                                   const rd_path *path) {
    bool lag = strcmp(cls, "Lag") == 0;
    em_expr *input = field_expr(rd, j, "input", path);
    em_expr *off = input ? field_expr(rd, j, lag ? "inputOffset" : "offset", path) : NULL;
    em_expr *def = off ? field_expr(rd, j, "default", path) : NULL;
    if (!def)
        return NULL;
    if (lag) {
        if (off->kind == EM_EXPR_LITERAL && !off->value_null) {
            const char *t = off->text;
            char buf[48];
            snprintf(buf, sizeof buf, "%s%s", t[0] == '-' ? "" : "-", t[0] == '-' ? t + 1 : t);
            if (!(off->text = rd_strdup(rd, buf)))
                return NULL;
        } else {
            off = make_unary(rd, EM_EXPR_NEGATE, off);
        }
    }
    const char *pretty = json_string_value(json_object_get(j, "pretty"));
    em_expr *e = named_call(rd, pretty ? pretty : (lag ? "lag" : "lead"), input, off, def);
    if (!e || !json_is_true(json_object_get(json_object_get(j, "fields"), "ignoreNulls")))
        return e;
    arg_list l = {e->args, e->n_args, e->n_args};
    if (!args_push(rd, &l, make_literal(rd, "true")))
        return NULL;
    args_take(e, &l);
    return e;
}

/* AggregateExpression: [partial_|merge_]name([distinct ]args) [FILTER (WHERE c)]. A FILTER
 * clause has no place in the model: the expression becomes RAW with its printed text (what
 * no consumer evaluates), holding the aggregate and the condition as its arguments. */
static em_expr *read_agg(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    (void)cls;
    json_t *fn = field(rd, j, "aggregateFunction", path);
    const char *mode = fn ? field_string(rd, j, "mode", path) : NULL;
    if (!mode)
        return NULL;
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pa = {&pf, "aggregateFunction", -1, NULL};
    if (!is_expr_json(fn))
        return em_plan_read_fail(rd, &pa, "expected an expression object");
    const char *fcls = em_plan_read_class(fn);
    char fcls_copy[160];
    snprintf(fcls_copy, sizeof fcls_copy, "%s", fcls);
    rd_path pac = {&pa, NULL, -1, fcls_copy};
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_AGG);
    const char *pretty = json_string_value(json_object_get(fn, "pretty"));
    if (!e || !(e->name = rd_strdup(rd, pretty ? pretty : fcls_copy)))
        return NULL;
    e->mode = strcmp(mode, "Partial") == 0        ? EM_AGG_PARTIAL
              : strcmp(mode, "PartialMerge") == 0 ? EM_AGG_PARTIAL_MERGE
                                                  : EM_AGG_FINAL;
    e->distinct = json_is_true(json_object_get(json_object_get(j, "fields"), "isDistinct"));
    json_t *ff = json_object_get(fn, "fields");
    if (ff)
        e->eval_mode = eval_mode_of(ff);
    arg_list l = {0};
    if (++rd->depth > PLAN_READ_MAX_DEPTH) {
        rd->depth--;
        return em_plan_read_fail(rd, &pac, "expressions nested deeper than %d levels",
                              PLAN_READ_MAX_DEPTH);
    }
    bool ok = flat_args(rd, fn, fcls_copy, &l, &pac);
    rd->depth--;
    if (!ok)
        return NULL;
    args_take(e, &l);
    json_t *filter = json_object_get(json_object_get(j, "fields"), "filter");
    if (filter && !json_is_null(filter)) {
        rd_path pfl = {&pf, "filter", -1, NULL};
        em_expr *cond = read_expr_at(rd, filter, &pfl);
        if (!cond)
            return NULL;
        set_spark_view(rd, e, j, "AggregateExpression");
        em_expr *raw = em_plan_read_new_expr(rd, EM_EXPR_RAW);
        arg_list r = {0};
        if (!raw || !args_push(rd, &r, e) || !args_push(rd, &r, cond))
            return NULL;
        args_take(raw, &r);
        plan_buf b = {0};
        em_plan_print_expr(&b, e, rd->shim);
        em_plan_buf_puts(&b, " FILTER (WHERE ");
        em_plan_print_expr(&b, cond, rd->shim);
        em_plan_buf_putc(&b, ')');
        raw->text = b.failed ? NULL : rd_strdup(rd, b.data ? b.data : "");
        free(b.data);
        return raw->text ? raw : em_plan_read_nomem(rd);
    }
    return e;
}

/* Any other expression: prettyName(flatArguments). */
static em_expr *read_generic(plan_reader *rd, json_t *j, const char *cls, const rd_path *path) {
    const char *pretty = json_string_value(json_object_get(j, "pretty"));
    if (!pretty || !*pretty) {
        rd_path p = {path, "pretty", -1, NULL};
        return em_plan_read_fail(rd, &p, "expected the expression's printed name");
    }
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_CALL);
    if (!e || !(e->name = rd_strdup(rd, pretty)))
        return NULL;
    arg_list l = {0};
    if (!flat_args(rd, j, cls, &l, path))
        return NULL;
    args_take(e, &l);
    return e;
}

/* StaticInvoke: Spark's calls into Java helpers. CHAR(n) columns are read
 * through CharVarcharCodegenUtils.readSidePadding (spaces up to n characters):
 * read_side_padding(str, n), the text parser's reading of its printed form;
 * any other helper stays a call the engines refuse. */
static em_expr *read_static_invoke(plan_reader *rd, json_t *j, const char *cls,
                                   const rd_path *path) {
    json_t *fields = json_object_get(j, "fields");
    const char *fn = json_string_value(json_object_get(fields, "functionName"));
    const char *obj = json_string_value(json_object_get(fields, "staticObject"));
    json_t *args = json_object_get(fields, "arguments");
    if (!fn || !obj || strcmp(fn, "readSidePadding") != 0 ||
        !strstr(obj, "CharVarcharCodegenUtils") || !json_is_array(args) ||
        json_array_size(args) != 2)
        return read_generic(rd, j, cls, path);
    em_expr *e = em_plan_read_new_expr(rd, EM_EXPR_CALL);
    if (!e || !(e->name = rd_strdup(rd, "read_side_padding")))
        return NULL;
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pa = {&pf, "arguments", -1, NULL};
    arg_list l = {0};
    for (size_t i = 0; i < 2; i++) {
        rd_path pi = {&pa, NULL, (int)i, NULL};
        if (!args_push(rd, &l, read_expr_at(rd, json_array_get(args, i), &pi)))
            return NULL;
    }
    args_take(e, &l);
    return e;
}

static const struct {
    const char *cls;
    expr_reader read;
} expr_classes[] = {
    {"StaticInvoke", read_static_invoke},
    {"AttributeReference", read_attribute},
    {"Alias", read_alias},
    {"Literal", read_literal},
    {"Add", read_binary},
    {"Subtract", read_binary},
    {"Multiply", read_binary},
    {"Divide", read_binary},
    {"Remainder", read_binary},
    {"IntegralDivide", read_binary},
    {"BitwiseAnd", read_binary},
    {"BitwiseOr", read_binary},
    {"BitwiseXor", read_binary},
    {"EqualTo", read_binary},
    {"EqualNullSafe", read_binary},
    {"LessThan", read_binary},
    {"LessThanOrEqual", read_binary},
    {"GreaterThan", read_binary},
    {"GreaterThanOrEqual", read_binary},
    {"And", read_binary},
    {"Or", read_binary},
    {"Not", read_not},
    {"UnaryMinus", read_negate},
    {"In", read_in},
    {"InSet", read_inset},
    {"Like", read_like},
    {"RLike", read_rlike},
    {"CaseWhen", read_case},
    {"If", read_if},
    {"Cast", read_cast},
    {"SortOrder", read_sort_order},
    {"BoundReference", read_bound_ref},
    {"ScalarSubquery", read_scalar_subquery},
    {"InSubqueryExec", read_in_subquery},
    {"GetStructField", read_struct_field},
    {"WindowExpression", read_window},
    {"AggregateExpression", read_agg},
    {"StartsWith", read_string_predicate},
    {"EndsWith", read_string_predicate},
    {"Contains", read_string_predicate},
    {"Pmod", read_pmod},
    {"UnscaledValue", read_unscaled},
    {"MakeDecimal", read_make_decimal},
    {"CheckOverflow", read_check_overflow},
    {"Lag", read_offset_window},
    {"Lead", read_offset_window},
};

static em_expr *read_expr_at(plan_reader *rd, json_t *j, const rd_path *path) {
    if (rd->failed)
        return NULL;
    if (!is_expr_json(j))
        return em_plan_read_fail(rd, path, "expected an expression object");
    char cls[160];
    snprintf(cls, sizeof cls, "%s", em_plan_read_class(j));
    rd_path here = {path, NULL, -1, cls};
    if (++rd->depth > PLAN_READ_MAX_DEPTH) {
        rd->depth--;
        return em_plan_read_fail(rd, &here, "expressions nested deeper than %d levels",
                              PLAN_READ_MAX_DEPTH);
    }
    expr_reader read = read_generic;
    const char *full = json_string_value(json_object_get(j, "class"));
    for (size_t i = 0; i < sizeof expr_classes / sizeof expr_classes[0]; i++)
        if (strcmp(expr_classes[i].cls, cls) == 0)
            read = expr_classes[i].read;
    /* the logical ScalarSubquery (catalyst) never reaches a physical plan; only the
     * execution one has a subquery node */
    if (read == read_scalar_subquery && full && !strstr(full, ".execution."))
        read = read_generic;
    em_expr *e = read(rd, j, cls, &here);
    rd->depth--;
    if (!e)
        return rd->failed ? NULL : em_plan_read_fail(rd, &here, "cannot read the expression");
    if (e->kind != EM_EXPR_RAW)
        set_spark_view(rd, e, j, cls);
    return e;
}

em_expr *em_plan_read_expr(plan_reader *rd, json_t *j, const rd_path *path) {
    return read_expr_at(rd, j, path);
}

em_expr *em_plan_read_filter(plan_reader *rd, json_t *j, const rd_path *path) {
    if (rd->failed)
        return NULL;
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "class")))
        return em_plan_read_fail(rd, path, "expected a data source filter object");
    if (++rd->depth > PLAN_READ_MAX_DEPTH) {
        rd->depth--;
        return em_plan_read_fail(rd, path, "filters nested deeper than %d levels",
                              PLAN_READ_MAX_DEPTH);
    }
    em_expr *e = product_call(rd, j, path, true);
    rd->depth--;
    return e;
}

em_expr *em_plan_read_arg(plan_reader *rd, json_t *v, const rd_path *path, bool *skip) {
    *skip = false;
    if (rd->failed)
        return NULL;
    /* TreeNode.argString: children, None/null and empty sequences print nothing */
    if (json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
        (json_is_object(v) && (json_object_get(v, "child") || json_object_get(v, "plan")))) {
        *skip = true;
        return NULL;
    }
    if (json_is_array(v)) {
        bool all_children = true;
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!json_is_object(x) || !json_object_get(x, "child"))
                all_children = false;
        }
        if (all_children) {
            *skip = true;
            return NULL;
        }
        em_expr *list = em_plan_read_new_expr(rd, EM_EXPR_LIST);
        if (!list)
            return NULL;
        arg_list l = {0};
        json_array_foreach(v, i, x) {
            rd_path p = {path, NULL, (int)i, NULL};
            bool sk;
            em_expr *item = em_plan_read_arg(rd, x, &p, &sk);
            if (sk) /* inside a sequence nothing is omitted: an empty one prints "[]" */
                item = json_is_array(x) ? em_plan_read_new_expr(rd, EM_EXPR_LIST)
                                        : make_literal(rd, json_is_null(x) ? "null" : "None");
            if (!args_push(rd, &l, item))
                return NULL;
        }
        args_take(list, &l);
        return list;
    }
    if (++rd->depth > PLAN_READ_MAX_DEPTH) {
        rd->depth--;
        return em_plan_read_fail(rd, path, "values nested deeper than %d levels",
                              PLAN_READ_MAX_DEPTH);
    }
    em_expr *e = value_expr(rd, v, path, false);
    rd->depth--;
    return e;
}
