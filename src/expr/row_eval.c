/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The row engine's expression evaluator (rowexpr.h): binding turns the plan
 * expression into a tree of typed nodes, with the casts Spark's coercion
 * would have inserted made explicit; evaluation walks that tree for one row.
 *
 * Typing follows the same rules as the vectorized compiler (they must agree
 * on result types): a literal takes the type inferred in the plan, else the
 * type of the value it meets (a decimal literal its own precision), else its
 * spelling; comparison operands meet in a common type; decimal operators
 * take the plan's type or the shim's DecimalPrecision rule; CheckOverflow
 * over an operator rounds the exact result once to its type.
 *
 * Conditional nodes (AND, OR, CASE, if, coalesce) evaluate operands only as
 * far as needed, as Spark does, so an untaken branch never raises.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ember/rowexpr.h"
#include "expr/row_cast.h"
#include "expr/row_eval.h"
#include "shims/shim.h"

/* ------------------------------------------------------------------ helpers */

static bool t_integral(em_type t) { return t.id >= EM_TYPE_BYTE && t.id <= EM_TYPE_LONG; }
static bool t_numeric(em_type t) { return t.id >= EM_TYPE_BYTE && t.id <= EM_TYPE_DECIMAL; }
static bool t_float(em_type t) { return t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE; }

static int rank(em_type t) {
    switch (t.id) {
    case EM_TYPE_BYTE:
        return 1;
    case EM_TYPE_SHORT:
        return 2;
    case EM_TYPE_INT:
        return 3;
    case EM_TYPE_LONG:
        return 4;
    case EM_TYPE_FLOAT:
        return 6;
    case EM_TYPE_DOUBLE:
        return 7;
    default:
        return 0;
    }
}

static em_type wider(em_type a, em_type b) { return rank(a) >= rank(b) ? a : b; }

/* DecimalType.forType of an integral type. */
static em_type dec_for(em_type t) {
    switch (t.id) {
    case EM_TYPE_BYTE:
        return em_type_decimal(3, 0);
    case EM_TYPE_SHORT:
        return em_type_decimal(5, 0);
    case EM_TYPE_INT:
        return em_type_decimal(10, 0);
    case EM_TYPE_LONG:
        return em_type_decimal(20, 0);
    default:
        return t;
    }
}

void em_row_describe(const em_expr *e, char *buf, size_t cap) {
    char *txt = NULL;
    size_t n = 0;
    em_error ig = {0};
    if (e && em_expr_print(e, NULL, &txt, &n, &ig) == EM_OK && txt) {
        snprintf(buf, cap, "%s", txt);
        free(txt);
    } else {
        snprintf(buf, cap, "(expression)");
    }
}

/* ------------------------------------------------------------------ binder */

typedef struct binder {
    em_rexpr *x;
    const em_expr *const *inputs;
    int n_inputs;
    bool ansi;
    const em_shim *shim;
    const char *tz_id; /* session time zone; NULL: UTC */
    const em_tz *tz;   /* tz_id loaded, once a node needed it */
    em_error *err;
} binder;

static rnode *new_node(binder *b, rkind k, em_type t, const em_expr *src, int n_kids) {
    em_rexpr *x = b->x;
    if (x->n_nodes == x->cap_nodes) {
        int cap = x->cap_nodes ? x->cap_nodes * 2 : 16;
        rnode **nn = realloc(x->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            goto nomem;
        x->nodes = nn;
        x->cap_nodes = cap;
    }
    rnode *n = calloc(1, sizeof *n);
    if (!n)
        goto nomem;
    if (n_kids > 0) {
        n->kids = calloc((size_t)n_kids, sizeof *n->kids);
        if (!n->kids) {
            free(n);
            goto nomem;
        }
    }
    n->n = n_kids;
    n->kind = k;
    n->type = t;
    n->src = src;
    n->null_on_error = !b->ansi;
    x->nodes[x->n_nodes++] = n;
    return n;
nomem:
    EM_FAIL(b->err, EM_ERR_NOMEM, "out of memory binding an expression");
    return NULL;
}

static rnode *fail_un(binder *b, const em_expr *e, const char *why) {
    char d[300];
    em_row_describe(e, d, sizeof d);
    EM_FAIL(b->err, EM_ERR_UNSUPPORTED, "row engine: %s: %s", why, d);
    return NULL;
}

/* The zone an instant is read in (NULL for UTC); false with the error set
 * when the session zone does not load. Loaded at the first use only, so an
 * unknown zone fails just the queries whose values depend on it. */
static bool zone_of(binder *b, const em_tz **out) {
    *out = NULL;
    if (!b->tz_id)
        return true;
    if (!b->tz) {
        em_error zerr = {0};
        em_status st = em_tz_find(b->tz_id, &b->tz, &zerr);
        if (st != EM_OK) {
            EM_FAIL(b->err, st, "session time zone (spark.sql.session.timeZone): %s", zerr.msg);
            return false;
        }
    }
    *out = em_tz_is_utc(b->tz) ? NULL : b->tz;
    return true;
}

static rnode *cast_node(binder *b, rnode *n, em_type to, const em_expr *src) {
    if (!n)
        return NULL;
    if (em_type_equal(n->type, to))
        return n;
    /* Cast.needsTimeZone: the instant type meets date, string or timestamp_ntz */
    em_type_id lo = n->type.id, hi = to.id;
    if (hi != EM_TYPE_TIMESTAMP) {
        lo = to.id;
        hi = n->type.id;
    }
    const em_tz *tz = NULL;
    if (hi == EM_TYPE_TIMESTAMP &&
        (lo == EM_TYPE_DATE || lo == EM_TYPE_STRING || lo == EM_TYPE_TIMESTAMP_NTZ) &&
        !zone_of(b, &tz))
        return NULL;
    if (!em_row_cast_supported(n->type, to)) {
        char a[40], c[40], m[128];
        em_type_format(n->type, a, sizeof a);
        em_type_format(to, c, sizeof c);
        snprintf(m, sizeof m, "cast from %s to %s", a, c);
        return fail_un(b, src, m);
    }
    rnode *c = new_node(b, RK_CAST, to, src, 1);
    if (c) {
        c->kids[0] = n;
        c->tz = tz;
    }
    return c;
}

static bool text_integer(const char *s) {
    if (*s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* The decimal type of a numeric literal as Spark's parser types it:
 * (significant integral+fraction digits, fraction digits). */
static bool text_decimal(const char *s, em_type *out) {
    if (*s == '-')
        s++;
    int sig = 0, frac = 0, exp = 0;
    bool dot = false, any = false, started = false;
    for (; *s; s++) {
        if (*s == '.' && !dot) {
            dot = true;
            continue;
        }
        if (*s == 'e' || *s == 'E') {
            exp = atoi(s + 1);
            break;
        }
        if (*s < '0' || *s > '9')
            return false;
        any = true;
        if (dot)
            frac++;
        if (*s != '0')
            started = true;
        if (started)
            sig++;
    }
    if (!any)
        return false;
    if (sig == 0)
        sig = 1;
    frac -= exp;
    if (frac < 0) {
        sig -= frac;
        frac = 0;
    }
    int p = sig > frac ? sig : frac;
    if (p > EM_DECIMAL_MAX_PRECISION)
        return false;
    *out = em_type_decimal(p, frac);
    return true;
}

static em_type lit_type(const em_expr *e, const em_type *hint) {
    const char *t = e->text ? e->text : "";
    if (e->type_known && e->type.id != EM_TYPE_NULL)
        return e->type;
    if (!strcmp(t, "null"))
        return hint ? *hint : em_type_make(EM_TYPE_NULL);
    em_type dt;
    if (hint) {
        if (hint->id == EM_TYPE_DECIMAL) {
            if (text_decimal(t, &dt))
                return dt;
        } else if (t_integral(*hint)) {
            if (text_integer(t))
                return *hint;
        } else if (hint->id != EM_TYPE_NULL) {
            return *hint;
        }
    }
    if (!strcmp(t, "true") || !strcmp(t, "false"))
        return em_type_make(EM_TYPE_BOOLEAN);
    if (text_integer(t)) {
        size_t n = strlen(t) - (t[0] == '-');
        if (n <= 9)
            return em_type_make(EM_TYPE_INT);
        if (n <= 18)
            return em_type_make(EM_TYPE_LONG);
    }
    if (text_decimal(t, &dt))
        return dt;
    int64_t days;
    if (strlen(t) == 10 && em_row_parse_date((const uint8_t *)t, 10, &days))
        return em_type_make(EM_TYPE_DATE);
    return em_type_make(EM_TYPE_STRING);
}

/* Parses literal text as a value of type t: strict, errors are EM_ERR_TYPE. */
static bool parse_lit(binder *b, const char *text, em_type t, em_datum *out) {
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "null") || t.id == EM_TYPE_NULL) {
        out->is_null = true;
        return true;
    }
    if (t.id == EM_TYPE_STRING || t.id == EM_TYPE_BINARY) {
        out->v.str.ptr = (const uint8_t *)text;
        out->v.str.len = (int32_t)strlen(text);
        return true;
    }
    if (t.id == EM_TYPE_BOOLEAN) {
        if (strcmp(text, "true") && strcmp(text, "false"))
            goto bad;
        out->v.b = text[0] == 't';
        return true;
    }
    em_datum in = {0};
    in.v.str.ptr = (const uint8_t *)text;
    in.v.str.len = (int32_t)strlen(text);
    row_cast_ctx c = {true, text};
    const em_tz *tz = NULL;
    if (t.id == EM_TYPE_TIMESTAMP && !zone_of(b, &tz)) /* printed in the session zone */
        return false;
    em_error sub = {0};
    if (em_row_cast_tz(&c, tz, &in, em_type_make(EM_TYPE_STRING), t, NULL, out, &sub) != EM_OK)
        goto bad;
    return true;
bad:;
    char tn[40];
    em_type_format(t, tn, sizeof tn);
    EM_FAIL(b->err, EM_ERR_TYPE, "literal '%s' is not a valid %s", text, tn);
    return false;
}

static rnode *bind(binder *b, const em_expr *e, const em_type *hint);

static rnode *bind_const(binder *b, const em_expr *src, const char *text, em_type t) {
    em_datum d;
    if (src && src->kind == EM_EXPR_LITERAL && src->value_int_type != EM_TYPE_NULL &&
        src->value_int_type == t.id) {
        memset(&d, 0, sizeof d); /* Spark's own days or microseconds: no reading of text */
        d.v.i64 = src->value_int;
    } else if (src && src->kind == EM_EXPR_LITERAL && src->value_bytes &&
               t.id == EM_TYPE_BINARY) {
        memset(&d, 0, sizeof d); /* Spark's bytes, not the 0x... they print as */
        d.v.str.ptr = src->value_bytes;
        d.v.str.len = src->value_len;
    } else if (!parse_lit(b, text, t, &d)) {
        return NULL;
    }
    rnode *n = new_node(b, RK_CONST, t, src, 0);
    if (n)
        n->k = d;
    return n;
}

static bool untyped_lit(const em_expr *e) {
    return e->kind == EM_EXPR_LITERAL && !(e->type_known && e->type.id != EM_TYPE_NULL);
}

/* Two operands; an untyped literal takes its partner's type. */
static bool bind_pair(binder *b, const em_expr *l, const em_expr *r, rnode **ln, rnode **rn_) {
    if (untyped_lit(l) && !untyped_lit(r)) {
        *rn_ = bind(b, r, NULL);
        if (!*rn_)
            return false;
        *ln = bind(b, l, &(*rn_)->type);
        return *ln != NULL;
    }
    *ln = bind(b, l, NULL);
    if (!*ln)
        return false;
    *rn_ = bind(b, r, &(*ln)->type);
    return *rn_ != NULL;
}

/* Comparison type; a DECIMAL with precision 0 means "decimals as they are,
 * integrals widened to decimal". */
static bool cmp_type(em_type a, em_type c, em_type *out) {
    if (em_type_equal(a, c) || c.id == EM_TYPE_NULL) {
        *out = a;
        return true;
    }
    if (a.id == EM_TYPE_NULL) {
        *out = c;
        return true;
    }
    if (t_numeric(a) && t_numeric(c)) {
        if (a.id == EM_TYPE_DECIMAL || c.id == EM_TYPE_DECIMAL) {
            em_type o = a.id == EM_TYPE_DECIMAL ? c : a;
            *out = t_float(o) ? em_type_make(EM_TYPE_DOUBLE) : em_type_make(EM_TYPE_DECIMAL);
            return true;
        }
        *out = wider(a, c);
        return true;
    }
    if ((a.id == EM_TYPE_DATE && c.id == EM_TYPE_STRING) ||
        (c.id == EM_TYPE_DATE && a.id == EM_TYPE_STRING)) {
        *out = em_type_make(EM_TYPE_DATE);
        return true;
    }
    if ((a.id == EM_TYPE_DATE && c.id == EM_TYPE_TIMESTAMP) ||
        (c.id == EM_TYPE_DATE && a.id == EM_TYPE_TIMESTAMP)) {
        *out = em_type_make(EM_TYPE_TIMESTAMP);
        return true;
    }
    return false;
}

static rnode *to_cmp(binder *b, rnode *n, em_type common, const em_expr *src) {
    if (common.id == EM_TYPE_DECIMAL && common.precision == 0)
        return n->type.id == EM_TYPE_DECIMAL ? n : cast_node(b, n, dec_for(n->type), src);
    return cast_node(b, n, common, src);
}

static bool dec_rule(binder *b, em_binop op, em_type l, em_type r, em_type *out) {
    if (b->shim && b->shim->decimal_binary_type)
        return b->shim->decimal_binary_type(b->shim, op, l, r, out);
    return em_shim_decimal_rule(op, l, r, true, out);
}

static rnode *bind_arith(binder *b, const em_expr *e, em_binop op, const em_type *forced,
                         bool forced_null) {
    rnode *l, *r;
    if (!bind_pair(b, e->args[0], e->args[1], &l, &r))
        return NULL;
    em_type lt = l->type, rt = r->type;
    if ((!t_numeric(lt) && lt.id != EM_TYPE_NULL) || (!t_numeric(rt) && rt.id != EM_TYPE_NULL))
        return fail_un(b, e, "arithmetic on non-numeric operands");
    if (lt.id == EM_TYPE_NULL)
        lt = rt;
    if (rt.id == EM_TYPE_NULL)
        rt = lt;
    bool dec = lt.id == EM_TYPE_DECIMAL || rt.id == EM_TYPE_DECIMAL;
    bool flt = t_float(lt) || t_float(rt);
    em_type res;
    if (op == EM_OP_INTDIV) {
        if (dec || flt)
            return fail_un(b, e, "div of non-integral operands");
        em_type c = wider(lt, rt);
        rnode *q = new_node(b, RK_ARITH, c, e, 2);
        if (!q)
            return NULL;
        q->op = op;
        q->kids[0] = cast_node(b, l, c, e);
        q->kids[1] = cast_node(b, r, c, e);
        if (!q->kids[0] || !q->kids[1])
            return NULL;
        return cast_node(b, q, em_type_make(EM_TYPE_LONG), e);
    }
    if (op >= EM_OP_BITAND && op <= EM_OP_BITXOR && (dec || flt))
        return fail_un(b, e, "bitwise operator on non-integral operands");
    if (flt || (op == EM_OP_DIV && !dec)) {
        /* Divide takes only double and decimal: floats divide as doubles */
        bool both_float = lt.id == EM_TYPE_FLOAT && rt.id == EM_TYPE_FLOAT && op != EM_OP_DIV;
        res = em_type_make(both_float ? EM_TYPE_FLOAT : EM_TYPE_DOUBLE);
        l = cast_node(b, l, res, e);
        r = cast_node(b, r, res, e);
    } else if (dec) {
        l = to_cmp(b, l, em_type_make(EM_TYPE_DECIMAL), e);
        r = to_cmp(b, r, em_type_make(EM_TYPE_DECIMAL), e);
        if (!l || !r)
            return NULL;
        if (forced)
            res = *forced;
        else if (e->type_known && e->type.id == EM_TYPE_DECIMAL)
            res = e->type;
        else if (!dec_rule(b, op, l->type, r->type, &res))
            return fail_un(b, e, "decimal operator without a result type rule");
    } else {
        res = wider(lt, rt);
        l = cast_node(b, l, res, e);
        r = cast_node(b, r, res, e);
    }
    if (!l || !r)
        return NULL;
    rnode *n = new_node(b, RK_ARITH, res, e, 2);
    if (!n)
        return NULL;
    n->op = op;
    n->kids[0] = l;
    n->kids[1] = r;
    if (forced)
        n->null_on_error = forced_null;
    return n;
}

static rnode *bind_binary(binder *b, const em_expr *e) {
    em_type bt = em_type_make(EM_TYPE_BOOLEAN);
    if (e->op == EM_OP_AND || e->op == EM_OP_OR) {
        rnode *n = new_node(b, e->op == EM_OP_AND ? RK_AND : RK_OR, bt, e, 2);
        if (!n || !(n->kids[0] = bind(b, e->args[0], &bt)) ||
            !(n->kids[1] = bind(b, e->args[1], &bt)))
            return NULL;
        return n;
    }
    if (e->op >= EM_OP_EQ && e->op <= EM_OP_GE) {
        rnode *l, *r;
        if (!bind_pair(b, e->args[0], e->args[1], &l, &r))
            return NULL;
        em_type c;
        if (!cmp_type(l->type, r->type, &c))
            return fail_un(b, e, "comparison of incompatible types");
        rnode *n = new_node(b, RK_CMP, bt, e, 2);
        if (!n || !(n->kids[0] = to_cmp(b, l, c, e)) || !(n->kids[1] = to_cmp(b, r, c, e)))
            return NULL;
        n->op = e->op;
        return n;
    }
    return bind_arith(b, e, e->op, NULL, false);
}

static rnode *bind_in(binder *b, const em_expr *e) {
    rnode *v = bind(b, e->args[0], NULL);
    if (!v)
        return NULL;
    int n = e->n_args - 1;
    bool all_lit = true;
    for (int i = 1; i < e->n_args; i++)
        if (e->args[i]->kind != EM_EXPR_LITERAL)
            all_lit = false;
    em_type bt = em_type_make(EM_TYPE_BOOLEAN);
    if (all_lit) {
        /* constant items, each typed on its own (a decimal item keeps its
         * digits) and compared exactly with the value */
        rnode *node = new_node(b, RK_IN, bt, e, 1 + n);
        if (!node)
            return NULL;
        node->kids[0] = v;
        for (int i = 0; i < n; i++) {
            const em_expr *it = e->args[i + 1];
            em_type t = v->type;
            if (t.id == EM_TYPE_DECIMAL && strcmp(it->text, "null") && !text_decimal(it->text, &t))
                return fail_un(b, e, "IN list item is not a decimal");
            if (!(node->kids[i + 1] = bind_const(b, it, it->text, t)))
                return NULL;
        }
        return node;
    }
    rnode **items = calloc((size_t)n + 1, sizeof *items);
    if (!items) {
        EM_FAIL(b->err, EM_ERR_NOMEM, "out of memory binding an expression");
        return NULL;
    }
    rnode *node = NULL;
    items[0] = v;
    em_type c = v->type;
    for (int i = 1; i <= n; i++)
        if (!(items[i] = bind(b, e->args[i], &v->type)))
            goto done;
    for (int i = 1; i <= n; i++)
        if (!cmp_type(c, items[i]->type, &c)) {
            fail_un(b, e, "IN list item of an incompatible type");
            goto done;
        }
    node = new_node(b, RK_IN, bt, e, 1 + n);
    if (!node)
        goto done;
    for (int i = 0; i <= n; i++)
        if (!(node->kids[i] = to_cmp(b, items[i], c, e))) {
            node = NULL;
            goto done;
        }
done:
    free(items);
    return node;
}

static bool is_value_arg(const em_expr *e, int i) {
    return (i % 2 == 1) || (e->has_else && i == e->n_args - 1);
}

static rnode *bind_case(binder *b, const em_expr *e) {
    em_type bt = em_type_make(EM_TYPE_BOOLEAN);
    bool known = e->type_known && e->type.id != EM_TYPE_NULL;
    em_type rt = e->type;
    for (int i = 0; i < e->n_args && !known; i++)
        if (is_value_arg(e, i) && e->args[i]->type_known && !untyped_lit(e->args[i])) {
            rt = e->args[i]->type;
            known = true;
        }
    rnode *n = new_node(b, RK_CASE, rt, e, e->n_args);
    if (!n)
        return NULL;
    n->has_else = e->has_else;
    for (int i = 0; i < e->n_args; i++) {
        bool val = is_value_arg(e, i);
        if (!(n->kids[i] = bind(b, e->args[i], val ? (known ? &rt : NULL) : &bt)))
            return NULL;
        if (val && !known) {
            rt = n->kids[i]->type;
            known = rt.id != EM_TYPE_NULL;
        }
    }
    if (!known)
        rt = em_type_make(EM_TYPE_NULL);
    n->type = rt;
    for (int i = 0; i < e->n_args; i++)
        if (is_value_arg(e, i) && !(n->kids[i] = cast_node(b, n->kids[i], rt, e)))
            return NULL;
    return n;
}

static em_type type_arg(const em_expr *a, bool *ok) {
    *ok = false;
    em_type t = {0};
    if (a->kind != EM_EXPR_TYPE)
        return t;
    if (a->cast_type_known) {
        *ok = true;
        return a->cast_type;
    }
    int p, s;
    if (a->text && sscanf(a->text, "DecimalType(%d,%d)", &p, &s) == 2) {
        *ok = true;
        return em_type_decimal(p, s);
    }
    return t;
}

static bool lit_int(const em_expr *a, int64_t *v) {
    if (a->kind != EM_EXPR_LITERAL || !a->text || !text_integer(a->text))
        return false;
    *v = strtoll(a->text, NULL, 10);
    return true;
}

static bool lit_bool(const em_expr *a, bool *v) {
    if (a->kind != EM_EXPR_LITERAL || !a->text)
        return false;
    if (!strcmp(a->text, "true") || !strcmp(a->text, "false")) {
        *v = a->text[0] == 't';
        return true;
    }
    return false;
}

/* The type a letter of the table stands for; NULL for '-' and '?'. */
static const em_type *letter_type(char c) {
    static const em_type str = {EM_TYPE_STRING, 0, 0}, i32 = {EM_TYPE_INT, 0, 0};
    static const em_type i64 = {EM_TYPE_LONG, 0, 0}, dbl = {EM_TYPE_DOUBLE, 0, 0};
    static const em_type date = {EM_TYPE_DATE, 0, 0}, boo = {EM_TYPE_BOOLEAN, 0, 0};
    switch (c) {
    case 'S':
        return &str;
    case 'I':
        return &i32;
    case 'L':
        return &i64;
    case 'D':
        return &dbl;
    case 'T':
        return &date;
    case 'B':
        return &boo;
    default:
        return NULL;
    }
}

static const em_type *fn_arg_want(const em_fn_info *f, int i) {
    size_t n = strlen(f->args);
    return letter_type(f->args[(size_t)i < n ? (size_t)i : n - 1]);
}

/* round/bround's result (RoundBase): a decimal keeps p - s integral digits
 * plus one (at least 1 - scale for a negative scale), with min(s, max(scale,
 * 0)) fraction digits (the plan's type when known); other numbers keep their
 * type. */
static em_type round_type(const em_expr *e, em_type t, int64_t sc) {
    if (t.id != EM_TYPE_DECIMAL)
        return t;
    if (e->type_known && e->type.id == EM_TYPE_DECIMAL)
        return e->type;
    int ns = (int)(sc < t.scale ? (sc > 0 ? sc : 0) : t.scale);
    int ip = t.precision - t.scale + 1;
    if (sc < 0 && 1 - sc > ip)
        ip = sc < -EM_DECIMAL_MAX_PRECISION ? EM_DECIMAL_MAX_PRECISION + 1 : (int)(1 - sc);
    return em_shim_decimal_adjust(ip + ns, ns, false);
}

/* The type greatest/least bring their arguments to: the widest numeric
 * (decimals: enough integral digits and scale for all, as Spark's wider
 * decimal type), else the first argument's. */
static bool greatest_type(rnode *const *kids, int n, em_type *out) {
    em_type t = kids[0]->type;
    for (int i = 1; i < n; i++) {
        em_type k = kids[i]->type;
        if (k.id == EM_TYPE_NULL || em_type_equal(t, k))
            continue;
        if (t.id == EM_TYPE_NULL) {
            t = k;
            continue;
        }
        if (!t_numeric(t) || !t_numeric(k))
            return false;
        if (t_float(t) || t_float(k)) {
            t = em_type_make(EM_TYPE_DOUBLE);
        } else if (t.id == EM_TYPE_DECIMAL || k.id == EM_TYPE_DECIMAL) {
            em_type a = dec_for(t), c = dec_for(k);
            int scale = a.scale > c.scale ? a.scale : c.scale;
            int ints = a.precision - a.scale > c.precision - c.scale ? a.precision - a.scale
                                                                     : c.precision - c.scale;
            t = em_shim_decimal_adjust(ints + scale, scale, false);
        } else {
            t = wider(t, k);
        }
    }
    *out = t;
    return true;
}

static rnode *bind_fn(binder *b, const em_expr *e, const em_fn_info *f) {
    if (e->n_args < f->min_args || e->n_args > f->max_args)
        return fail_un(b, e, "wrong number of arguments");
    int n_args = e->n_args;
    if ((f->id == EM_FN_TRIM || f->id == EM_FN_LTRIM || f->id == EM_FN_RTRIM) && n_args == 2) {
        /* StringTrim prints its Option trimStr; None means spaces */
        const em_expr *t = e->args[1];
        if (t->kind != EM_EXPR_LITERAL || !t->text || strcmp(t->text, "None") != 0)
            return fail_un(b, e, "trim with a set of characters to trim");
        n_args = 1;
    }
    const em_tz *own_zone = NULL;
    if ((f->id == EM_FN_HOUR || f->id == EM_FN_MINUTE || f->id == EM_FN_SECOND) && n_args == 2) {
        /* a time-zone aware expression prints the zone the analyzer gave it:
         * hour(ts#1, Some(Europe/Berlin)); it wins over the session's */
        const em_expr *o = e->args[1];
        em_error zerr = {0};
        if (o->kind != EM_EXPR_CALL || !o->name || strcmp(o->name, "Some") != 0 ||
            o->n_args != 1 || !o->args[0]->text)
            return fail_un(b, e, "a time zone argument other than Some(zone id)");
        if (em_tz_find(o->args[0]->text, &own_zone, &zerr) != EM_OK) {
            EM_FAIL(b->err, zerr.code, "%s", zerr.msg);
            return NULL;
        }
        n_args = 1;
    }
    rnode *n = new_node(b, RK_FN, em_type_make(EM_TYPE_STRING), e, n_args);
    if (!n)
        return NULL;
    n->fn = f->id;
    for (int i = 0; i < n_args; i++) {
        const em_type *want = fn_arg_want(f, i);
        rnode *a = bind(b, e->args[i], want);
        if (!a)
            return NULL;
        if (want && !(f->id == EM_FN_NORMALIZE && a->type.id == EM_TYPE_FLOAT)) {
            em_type w = *want;
            if ((f->id == EM_FN_DATE_ADD || f->id == EM_FN_DATE_SUB) && i == 1 && t_integral(a->type) &&
                a->type.id != EM_TYPE_LONG)
                w = a->type; /* tinyint/smallint/int days as they are */
            a = cast_node(b, a, w, e);
            if (!a)
                return NULL;
        }
        n->kids[i] = a;
    }
    em_type t0 = e->n_args > 0 ? n->kids[0]->type : em_type_make(EM_TYPE_NULL);
    if (letter_type(f->result))
        n->type = *letter_type(f->result);
    switch (f->id) {
    case EM_FN_NORMALIZE:
        n->type = t0;
        break;
    case EM_FN_UNSCALED:
        if (t0.id != EM_TYPE_DECIMAL || t0.precision > 18)
            return fail_un(b, e, "UnscaledValue of a non-decimal(p<=18) value");
        n->type = em_type_make(EM_TYPE_LONG);
        break;
    case EM_FN_SHIFTLEFT:
    case EM_FN_SHIFTRIGHT:
    case EM_FN_SHIFTRIGHTUNSIGNED:
        if (!t_integral(t0))
            return fail_un(b, e, "shift of a non-integral value");
        n->type = em_type_make(t0.id == EM_TYPE_LONG ? EM_TYPE_LONG : EM_TYPE_INT);
        if (!(n->kids[0] = cast_node(b, n->kids[0], n->type, e)))
            return NULL;
        break;
    case EM_FN_FLOOR:
    case EM_FN_CEIL:
        if (!em_shim_floor_ceil_type(t0, &n->type))
            return fail_un(b, e, "floor/ceil of a non-numeric value");
        if (t_integral(t0))
            n->kids[0] = cast_node(b, n->kids[0], n->type, e);
        else if (t0.id != EM_TYPE_DECIMAL)
            n->kids[0] = cast_node(b, n->kids[0], em_type_make(EM_TYPE_DOUBLE), e);
        if (!n->kids[0])
            return NULL;
        break;
    case EM_FN_GREATEST:
    case EM_FN_LEAST: {
        em_type t;
        if (!greatest_type(n->kids, n->n, &t))
            return fail_un(b, e, "greatest/least of incompatible types");
        n->type = t;
        for (int i = 0; i < n->n; i++)
            if (!(n->kids[i] = cast_node(b, n->kids[i], t, e)))
                return NULL;
        break;
    }
    case EM_FN_HOUR:
    case EM_FN_MINUTE:
    case EM_FN_SECOND:
    case EM_FN_OCTET_LENGTH:
    case EM_FN_BIT_LENGTH:
        if (f->id == EM_FN_HOUR || f->id == EM_FN_MINUTE || f->id == EM_FN_SECOND) {
            if (t0.id == EM_TYPE_DATE)
                n->kids[0] = cast_node(b, n->kids[0], em_type_make(EM_TYPE_TIMESTAMP), e);
            else if (t0.id != EM_TYPE_TIMESTAMP && t0.id != EM_TYPE_TIMESTAMP_NTZ)
                return fail_un(b, e, "hour/minute/second of a non-timestamp value");
            if (!n->kids[0])
                return NULL;
            /* an instant's local time of day; a timestamp_ntz is local already */
            if (t0.id != EM_TYPE_TIMESTAMP_NTZ && own_zone)
                n->tz = em_tz_is_utc(own_zone) ? NULL : own_zone;
            else if (t0.id != EM_TYPE_TIMESTAMP_NTZ && !zone_of(b, &n->tz))
                return NULL;
        }
        if ((f->id == EM_FN_OCTET_LENGTH || f->id == EM_FN_BIT_LENGTH) && t0.id != EM_TYPE_BINARY &&
            !(n->kids[0] = cast_node(b, n->kids[0], em_type_make(EM_TYPE_STRING), e)))
            return NULL;
        break;
    case EM_FN_BROUND:
    case EM_FN_POSITIVE:
        if (!t_numeric(t0))
            return fail_un(b, e, "a numeric function of a non-numeric value");
        n->type = t0;
        if (f->id == EM_FN_BROUND) {
            int64_t sc = 0;
            if (e->n_args == 2 && !lit_int(e->args[1], &sc))
                return fail_un(b, e, "bround(x[, literal scale])");
            n->iarg = sc;
            n->n = 1; /* the scale is folded in */
            n->type = round_type(e, t0, sc);
        }
        break;
    case EM_FN_PMOD: {
        em_type t1 = n->kids[1]->type;
        if (!t_integral(t0) || !t_integral(t1))
            return fail_un(b, e, "pmod of non-integral values");
        n->type = wider(t0, t1);
        if (!(n->kids[0] = cast_node(b, n->kids[0], n->type, e)) ||
            !(n->kids[1] = cast_node(b, n->kids[1], n->type, e)))
            return NULL;
        break;
    }
    default:
        break;
    }
    return n;
}

/* Spark's LIKE pattern check (StringUtils.escapeLikeRegex with '\\'). */
static bool like_pattern_ok(binder *b, const char *p) {
    for (size_t i = 0; p[i]; i++) {
        if (p[i] != '\\')
            continue;
        char c = p[i + 1];
        if (c == '\0') {
            EM_FAIL(b->err, EM_ERR_INVALID,
                    "the LIKE pattern '%s' is invalid: it ends with the escape character", p);
            return false;
        }
        if (c != '_' && c != '%' && c != '\\') {
            EM_FAIL(b->err, EM_ERR_INVALID,
                    "the LIKE pattern '%s' is invalid: the escape character precedes '%c'", p, c);
            return false;
        }
        i++;
    }
    return true;
}

static rnode *bind_call(binder *b, const em_expr *e) {
    const char *nm = e->name ? e->name : "";
    int na = e->n_args;
    em_type bt = em_type_make(EM_TYPE_BOOLEAN);
    if (!strcasecmp(nm, "promote_precision") || !strcasecmp(nm, "knownfloatingpointnormalized") ||
        !strcasecmp(nm, "knownnotnull")) {
        if (na != 1)
            return fail_un(b, e, "wrong number of arguments");
        return bind(b, e->args[0], NULL);
    }
    if (!strcasecmp(nm, "dynamicpruningexpression")) {
        /* the pruning subquery only repeats what the join checks */
        if (na != 1)
            return fail_un(b, e, "wrong number of arguments");
        if (e->args[0]->kind == EM_EXPR_IN_SUBQUERY)
            return bind_const(b, e, "true", bt);
        return bind(b, e->args[0], &bt);
    }
    if (!strcasecmp(nm, "CheckOverflow")) {
        bool ok, null_on = !b->ansi;
        if (na < 2)
            return fail_un(b, e, "wrong number of arguments");
        em_type t = type_arg(e->args[1], &ok);
        if (!ok || t.id != EM_TYPE_DECIMAL)
            return fail_un(b, e, "CheckOverflow without a DecimalType");
        if (na >= 3 && !lit_bool(e->args[2], &null_on))
            return fail_un(b, e, "CheckOverflow's third argument");
        const em_expr *ch = e->args[0];
        /* Spark 3.3: the operator's exact value is rounded once, by CheckOverflow */
        if (ch->kind == EM_EXPR_BINARY && ch->op >= EM_OP_ADD && ch->op <= EM_OP_REM)
            return bind_arith(b, ch, ch->op, &t, null_on);
        rnode *a = bind(b, ch, NULL);
        if (!a)
            return NULL;
        if (a->type.id != EM_TYPE_DECIMAL)
            return fail_un(b, e, "CheckOverflow of a non-decimal value");
        rnode *n = new_node(b, RK_CHECK, t, e, 1);
        if (!n)
            return NULL;
        n->kids[0] = a;
        n->null_on_error = null_on;
        return n;
    }
    if (!strcasecmp(nm, "MakeDecimal")) {
        int64_t p, s;
        bool null_on = !b->ansi;
        if (na < 3 || !lit_int(e->args[1], &p) || !lit_int(e->args[2], &s) || p < 1 || p > 18 ||
            s < 0 || s > p)
            return fail_un(b, e, "MakeDecimal(long, p <= 18, s)");
        if (na >= 4 && !lit_bool(e->args[3], &null_on))
            return fail_un(b, e, "MakeDecimal's nullOnOverflow argument");
        em_type lt = em_type_make(EM_TYPE_LONG);
        rnode *n = new_node(b, RK_FN, em_type_decimal((int)p, (int)s), e, 1);
        if (!n || !(n->kids[0] = cast_node(b, bind(b, e->args[0], &lt), lt, e)))
            return NULL;
        n->fn = EM_FN_MAKE_DECIMAL;
        n->null_on_error = null_on;
        return n;
    }
    if (!strcasecmp(nm, "isnull") || !strcasecmp(nm, "isnotnull")) {
        if (na != 1)
            return fail_un(b, e, "wrong number of arguments");
        rnode *n = new_node(b, !strcasecmp(nm, "isnull") ? RK_ISNULL : RK_ISNOTNULL, bt, e, 1);
        if (!n || !(n->kids[0] = bind(b, e->args[0], NULL)))
            return NULL;
        return n;
    }
    if (!strcasecmp(nm, "coalesce") || !strcasecmp(nm, "if") || !strcasecmp(nm, "nvl") ||
        !strcasecmp(nm, "ifnull")) {
        bool is_if = !strcasecmp(nm, "if");
        if (na < 1 || (is_if && na != 3))
            return fail_un(b, e, "wrong number of arguments");
        bool known = e->type_known && e->type.id != EM_TYPE_NULL;
        em_type rt = e->type;
        rnode *n = new_node(b, is_if ? RK_IF : RK_COALESCE, rt, e, na);
        if (!n)
            return NULL;
        for (int i = 0; i < na; i++) {
            if (is_if && i == 0) {
                n->kids[0] = bind(b, e->args[0], &bt);
            } else {
                n->kids[i] = bind(b, e->args[i], known ? &rt : NULL);
                if (n->kids[i] && !known && n->kids[i]->type.id != EM_TYPE_NULL) {
                    rt = n->kids[i]->type;
                    known = true;
                }
            }
            if (!n->kids[i])
                return NULL;
        }
        if (!known)
            rt = em_type_make(EM_TYPE_NULL);
        n->type = rt;
        for (int i = is_if ? 1 : 0; i < na; i++)
            if (!(n->kids[i] = cast_node(b, n->kids[i], rt, e)))
                return NULL;
        return n;
    }
    if (!strcasecmp(nm, "abs") || !strcasecmp(nm, "negative")) {
        if (na != 1)
            return fail_un(b, e, "wrong number of arguments");
        rnode *a = bind(b, e->args[0], NULL);
        if (!a)
            return NULL;
        if (!t_numeric(a->type))
            return fail_un(b, e, "abs of a non-numeric value");
        rnode *n = new_node(b, !strcasecmp(nm, "abs") ? RK_ABS : RK_NEG, a->type, e, 1);
        if (n)
            n->kids[0] = a;
        return n;
    }
    if (!strcasecmp(nm, "round")) {
        int64_t sc = 0;
        if (na < 1 || na > 2 || (na == 2 && !lit_int(e->args[1], &sc)))
            return fail_un(b, e, "round(x[, literal scale])");
        rnode *a = bind(b, e->args[0], NULL);
        if (!a)
            return NULL;
        em_type t = a->type;
        if (!t_numeric(t))
            return fail_un(b, e, "round of a non-numeric value");
        rnode *n = new_node(b, RK_FN, round_type(e, t, sc), e, 1);
        if (!n)
            return NULL;
        n->kids[0] = a;
        n->fn = EM_FN_ROUND;
        n->iarg = sc;
        return n;
    }
    const em_fn_info *fi = em_fn_lookup(nm);
    if (fi && fi->row)
        return bind_fn(b, e, fi);
    return fail_un(b, e, "unsupported function");
}

static int find_input(binder *b, int64_t id) {
    for (int i = 0; i < b->n_inputs; i++)
        if (b->inputs[i] && b->inputs[i]->id == id)
            return i;
    return -1;
}

static rnode *bind(binder *b, const em_expr *e, const em_type *hint) {
    if (!e) {
        EM_FAIL(b->err, EM_ERR_INVALID, "missing expression");
        return NULL;
    }
    for (int i = 0; i < e->n_args; i++)
        if (!e->args || !e->args[i])
            return fail_un(b, e, "malformed expression with a missing operand");
    switch (e->kind) {
    case EM_EXPR_ALIAS:
    case EM_EXPR_NOT:
    case EM_EXPR_NEGATE:
    case EM_EXPR_CAST:
    case EM_EXPR_IN:
    case EM_EXPR_INSET:
        if (e->n_args < 1)
            return fail_un(b, e, "malformed expression without an operand");
        break;
    default:
        break;
    }
    em_type bt = em_type_make(EM_TYPE_BOOLEAN);
    switch (e->kind) {
    case EM_EXPR_ATTR: {
        int i = find_input(b, e->id);
        if (i < 0) {
            EM_FAIL(b->err, EM_ERR_BIND, "attribute %s#%lld is not in the operator's input",
                    e->name ? e->name : "?", (long long)e->id);
            return NULL;
        }
        const em_expr *in = b->inputs[i];
        em_type t;
        if (in->type_known)
            t = in->type;
        else if (e->type_known)
            t = e->type;
        else {
            EM_FAIL(b->err, EM_ERR_TYPE, "the type of attribute %s#%lld is unknown",
                    e->name ? e->name : "?", (long long)e->id);
            return NULL;
        }
        rnode *n = new_node(b, RK_INPUT, t, e, 0);
        if (n)
            n->ordinal = i;
        return n;
    }
    case EM_EXPR_BOUND_REF: {
        if (e->id < 0 || e->id >= b->n_inputs) {
            EM_FAIL(b->err, EM_ERR_BIND, "input[%lld] is outside the operator's %d columns",
                    (long long)e->id, b->n_inputs);
            return NULL;
        }
        rnode *n = new_node(b, RK_INPUT, e->cast_type_known ? e->cast_type : e->type, e, 0);
        if (n)
            n->ordinal = (int)e->id;
        return n;
    }
    case EM_EXPR_LITERAL:
        return bind_const(b, e, e->text ? e->text : "", lit_type(e, hint));
    case EM_EXPR_ALIAS:
        return bind(b, e->args[0], hint);
    case EM_EXPR_BINARY:
        if (e->n_args != 2)
            return fail_un(b, e, "malformed binary expression");
        return bind_binary(b, e);
    case EM_EXPR_NOT: {
        rnode *n = new_node(b, RK_NOT, bt, e, 1);
        if (!n || !(n->kids[0] = bind(b, e->args[0], &bt)))
            return NULL;
        return n;
    }
    case EM_EXPR_NEGATE: {
        rnode *a = bind(b, e->args[0], hint);
        if (!a)
            return NULL;
        if (!t_numeric(a->type))
            return fail_un(b, e, "negation of a non-numeric value");
        rnode *n = new_node(b, RK_NEG, a->type, e, 1);
        if (n)
            n->kids[0] = a;
        return n;
    }
    case EM_EXPR_IN:
    case EM_EXPR_INSET:
        return bind_in(b, e);
    case EM_EXPR_LIKE: {
        if (e->rlike)
            return fail_un(b, e, "RLIKE is not supported");
        if (e->n_args != 2 || e->args[1]->kind != EM_EXPR_LITERAL)
            return fail_un(b, e, "LIKE with a non-literal pattern");
        const char *pat = e->args[1]->text ? e->args[1]->text : "";
        if (!like_pattern_ok(b, pat))
            return NULL;
        em_type st = em_type_make(EM_TYPE_STRING);
        rnode *n = new_node(b, RK_FN, bt, e, 2);
        if (!n || !(n->kids[0] = cast_node(b, bind(b, e->args[0], &st), st, e)) ||
            !(n->kids[1] = bind_const(b, e->args[1], pat, st)))
            return NULL;
        n->fn = EM_FN_LIKE;
        return n;
    }
    case EM_EXPR_CASE:
        return bind_case(b, e);
    case EM_EXPR_CAST: {
        em_type to;
        if (e->cast_type_known)
            to = e->cast_type;
        else if (!e->text || em_type_parse(e->text, strlen(e->text), &to, NULL) != EM_OK)
            return fail_un(b, e, "cast to an unknown type");
        rnode *a = bind(b, e->args[0], NULL);
        if (!a)
            return NULL;
        return cast_node(b, a, to, e);
    }
    case EM_EXPR_CALL:
        return bind_call(b, e);
    case EM_EXPR_SCALAR_SUBQUERY:
    case EM_EXPR_FIELD: {
        if (e->kind == EM_EXPR_FIELD &&
            (e->n_args < 1 || e->args[0]->kind != EM_EXPR_SCALAR_SUBQUERY))
            return fail_un(b, e, "struct field access");
        if (!b->x->subquery)
            return fail_un(b, e, "scalar subquery without a value provider");
        if (!e->type_known)
            return fail_un(b, e, "scalar subquery of unknown type");
        return new_node(b, RK_SUBQ, e->type, e, 0);
    }
    default:
        return fail_un(b, e, "unsupported expression");
    }
}

em_status em_rexpr_bind(const em_expr *e, const em_expr *const *input_attrs, int n_input,
                        const em_expr_compile_options *opts, em_rexpr **out, em_error *err) {
    *out = NULL;
    em_rexpr *x = calloc(1, sizeof *x);
    if (!x)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory binding an expression");
    binder b = {x, input_attrs, n_input, false, NULL, NULL, NULL, err};
    if (opts) {
        b.ansi = opts->ansi;
        b.shim = opts->shim;
        const char *tz = opts->time_zone;
        bool utc = !tz || !strcasecmp(tz, "UTC") || !strcmp(tz, "Etc/UTC") || !strcmp(tz, "Z") ||
                   !strcmp(tz, "+00:00") || !strcmp(tz, "GMT");
        b.tz_id = utc ? NULL : tz;
        x->subquery = opts->subquery;
        x->subquery_ctx = opts->subquery_ctx;
        x->pool = opts->pool;
    }
    x->ansi = b.ansi;
    x->root = bind(&b, e, NULL);
    if (!x->root) {
        em_status st = err && err->code != EM_OK ? err->code : EM_ERR_INTERNAL;
        em_rexpr_destroy(x);
        return st;
    }
    *out = x;
    return EM_OK;
}

void em_rexpr_destroy(em_rexpr *x) {
    if (!x)
        return;
    for (int i = 0; i < x->n_nodes; i++) {
        free(x->nodes[i]->kids);
        em_column_reset(&x->nodes[i]->subq);
        free(x->nodes[i]);
    }
    free(x->nodes);
    free(x);
}

em_type em_rexpr_type(const em_rexpr *x) { return x->root->type; }
