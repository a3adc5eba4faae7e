/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compilation of em_expr trees into flat programs of column steps.
 *
 * The compiler walks the tree depth first and appends one step per value it
 * needs, operands before users, so the step array is a post-order of the
 * tree and the root is the last step. While doing so it:
 *
 *   - binds ATTR references to input ordinals by expression id;
 *   - types literals: the type inferred in the tree when known, else the
 *     type of the value the literal meets (a date next to a date column, a
 *     decimal of the literal's own precision next to a decimal, as Spark's
 *     DecimalPrecision rule makes it), else by its spelling;
 *   - makes operand types agree where Spark would have inserted a cast
 *     (int + bigint, decimal + int, string compared with a date), by adding
 *     cast steps; decimals of different precision and scale are left alone
 *     because the decimal kernels rescale exactly;
 *   - folds Spark 3.3's CheckOverflow(op, DecimalType(p,s)[, nullOnOverflow])
 *     around a decimal operator into that operator, with result type (p,s),
 *     and drops promote_precision, so 3.3 and 3.4+ plans compute the same
 *     values the same way;
 *   - rejects what the interpreter cannot do, so that evaluation only fails
 *     on data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/internal.h"
#include "shims/shim.h"

typedef struct cctx {
    em_expr_prog *prog;
    const em_expr *const *inputs;
    int n_inputs;
    const em_expr_compile_options *opts;
    em_error *err;
} cctx;

static em_status fail_unsupported(cctx *c, const em_expr *e, const char *why) {
    char d[256];
    em_ex_describe(e, d, sizeof d);
    return EM_FAIL(c->err, EM_ERR_UNSUPPORTED, "%s: %s", why, d);
}

/* Appends a step; returns its index or -1 (NOMEM in err). */
static int add_step(cctx *c, ex_op op, em_type type, const em_expr *src, int n_args,
                    const int *args) {
    em_expr_prog *p = c->prog;
    if (p->n_steps == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        ex_step *s = realloc(p->steps, (size_t)cap * sizeof *s);
        if (!s) {
            EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
            return -1;
        }
        p->steps = s;
        p->cap = cap;
    }
    ex_step *st = &p->steps[p->n_steps];
    memset(st, 0, sizeof *st);
    st->op = op;
    st->type = type;
    st->src = src;
    st->null_on_error = !p->ansi;
    st->null_intolerant = true;
    if (n_args > 0) {
        st->args = malloc((size_t)n_args * sizeof *st->args);
        if (!st->args) {
            EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
            return -1;
        }
        memcpy(st->args, args, (size_t)n_args * sizeof *args);
    }
    st->n_args = n_args;
    return p->n_steps++;
}

static em_type step_type(cctx *c, int s) { return c->prog->steps[s].type; }

static char *own_string(cctx *c, const char *s, size_t n) {
    em_expr_prog *p = c->prog;
    if (p->n_owned == p->cap_owned) {
        int cap = p->cap_owned ? p->cap_owned * 2 : 8;
        char **o = realloc(p->owned, (size_t)cap * sizeof *o);
        if (!o)
            return NULL;
        p->owned = o;
        p->cap_owned = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, n);
    copy[n] = '\0';
    p->owned[p->n_owned++] = copy;
    return copy;
}

/* ------------------------------------------------------------------ literal types */

static bool text_is_integer(const char *s) {
    if (*s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* The decimal type of a numeric literal's text, as Spark's fromLiteral /
 * the SQL parser give it: integers get (digits, 0), "0.05" gets (2,2). */
static bool text_decimal_type(const char *s, em_type *out) {
    if (*s == '-')
        s++;
    int digits = 0, frac = 0;
    bool dot = false, any = false, lead = true;
    for (; *s; s++) {
        if (*s == '.' && !dot) {
            dot = true;
            continue;
        }
        if (*s == 'E' || *s == 'e') {
            frac -= atoi(s + 1);
            break;
        }
        if (*s < '0' || *s > '9')
            return false;
        any = true;
        if (dot)
            frac++;
        if (*s != '0' || !lead) {
            lead = false;
            digits++;
        }
    }
    if (!any)
        return false;
    if (digits == 0)
        digits = 1;
    if (frac < 0) {
        digits -= frac; /* 1E+2 -> 100 */
        frac = 0;
    }
    int p = digits > frac ? digits : frac;
    if (p > EM_DECIMAL_MAX_PRECISION)
        return false;
    *out = em_type_decimal(p, frac);
    return true;
}

static em_type literal_type(const em_expr *e, const em_type *hint) {
    const char *t = e->text ? e->text : "";
    if (e->type_known && e->type.id != EM_TYPE_NULL)
        return e->type;
    if (!strcmp(t, "null"))
        return hint ? *hint : em_type_make(EM_TYPE_NULL);
    em_type dt;
    if (hint) {
        switch (hint->id) {
        case EM_TYPE_DECIMAL:
            if (text_decimal_type(t, &dt))
                return dt;
            break;
        case EM_TYPE_STRING:
        case EM_TYPE_DATE:
        case EM_TYPE_BOOLEAN:
        case EM_TYPE_FLOAT:
        case EM_TYPE_DOUBLE:
        case EM_TYPE_TIMESTAMP:
        case EM_TYPE_TIMESTAMP_NTZ:
        case EM_TYPE_BINARY:
            return *hint;
        case EM_TYPE_BYTE:
        case EM_TYPE_SHORT:
        case EM_TYPE_INT:
        case EM_TYPE_LONG:
            if (text_is_integer(t))
                return *hint;
            break;
        default:
            break;
        }
    }
    if (!strcmp(t, "true") || !strcmp(t, "false"))
        return em_type_make(EM_TYPE_BOOLEAN);
    if (text_is_integer(t)) {
        size_t n = strlen(t) - (t[0] == '-');
        if (n <= 9)
            return em_type_make(EM_TYPE_INT);
        if (n <= 18)
            return em_type_make(EM_TYPE_LONG);
    }
    if (text_decimal_type(t, &dt))
        return dt;
    int32_t days;
    if (strlen(t) == 10 && em_ex_parse_date(t, 10, &days))
        return em_type_make(EM_TYPE_DATE);
    return em_type_make(EM_TYPE_STRING);
}

/* The session time zone, loaded when the first expression needs it (so a
 * session zone the database lacks only fails queries that depend on it);
 * NULL for UTC. */
static int session_zone(cctx *c, const em_tz **out) {
    *out = NULL;
    if (c->prog->tz_utc)
        return 0;
    if (!c->prog->tz) {
        em_error zerr = {0};
        em_status st = em_tz_find(c->opts->time_zone, &c->prog->tz, &zerr);
        if (st != EM_OK) {
            EM_FAIL(c->err, st, "spark.sql.session.timeZone: %s", zerr.msg);
            return -1;
        }
    }
    if (!em_tz_is_utc(c->prog->tz))
        *out = c->prog->tz;
    return 0;
}

/* A timestamp literal is printed in the session time zone. */
static em_status parse_literal(cctx *c, const char *text, em_type type, ex_value *v) {
    const em_tz *tz = NULL;
    if (type.id == EM_TYPE_TIMESTAMP && strcmp(text, "null") != 0 && session_zone(c, &tz) < 0)
        return c->err ? c->err->code : EM_ERR_INVALID;
    return em_ex_parse_literal_tz(text, type, tz, v, c->err);
}

static int compile_const(cctx *c, const em_expr *src, const char *text, em_type type) {
    ex_value v;
    if (src && src->kind == EM_EXPR_LITERAL && src->value_int_type != EM_TYPE_NULL &&
        src->value_int_type == type.id) {
        memset(&v, 0, sizeof v); /* Spark's own days or microseconds: no reading of text */
        v.i = src->value_int;
    } else if (src && src->kind == EM_EXPR_LITERAL && src->value_bytes &&
               type.id == EM_TYPE_BINARY) {
        memset(&v, 0, sizeof v); /* Spark's bytes, not the 0x... they print as */
        v.s = (const char *)src->value_bytes;
        v.len = src->value_len;
    } else if (parse_literal(c, text, type, &v) != EM_OK) {
        return -1;
    }
    int s = add_step(c, EX_CONST, type, src, 0, NULL);
    if (s < 0)
        return -1;
    if (!v.null && (type.id == EM_TYPE_STRING || type.id == EM_TYPE_BINARY)) {
        v.s = own_string(c, v.s, (size_t)v.len);
        if (!v.s) {
            EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
            return -1;
        }
    }
    c->prog->steps[s].k = v;
    return s;
}

/* ------------------------------------------------------------------ casts */

/* Spark's Cast.needsTimeZone: an instant meets a zone-less type. */
static bool cast_needs_zone(em_type from, em_type to) {
    em_type_id f = from.id, t = to.id;
    if (f == EM_TYPE_TIMESTAMP)
        return t == EM_TYPE_STRING || t == EM_TYPE_DATE || t == EM_TYPE_TIMESTAMP_NTZ;
    if (t == EM_TYPE_TIMESTAMP)
        return f == EM_TYPE_STRING || f == EM_TYPE_DATE || f == EM_TYPE_TIMESTAMP_NTZ;
    return false;
}

static int cast_to(cctx *c, int s, em_type to, const em_expr *src) {
    if (s < 0)
        return -1;
    em_type from = step_type(c, s);
    if (em_type_equal(from, to))
        return s;
    const em_tz *tz = NULL;
    if (cast_needs_zone(from, to) && session_zone(c, &tz) < 0)
        return -1;
    if (c->prog->steps[s].op == EX_CONST) {
        /* fold: re-type the constant through the cast */
        ex_value out;
        em_strbuf scratch = {0};
        em_status st = em_ex_cast_value_tz(&c->prog->steps[s].k, from, to, tz, c->prog->ansi,
                                        "literal", &out, &scratch, c->err);
        if (st == EM_OK && !out.null && to.id == EM_TYPE_STRING) {
            out.s = own_string(c, out.s, (size_t)out.len);
            if (!out.s)
                st = EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
        }
        em_strbuf_reset(&scratch);
        if (st != EM_OK)
            return -1;
        int k = add_step(c, EX_CONST, to, src, 0, NULL);
        if (k >= 0)
            c->prog->steps[k].k = out;
        return k;
    }
    int k = add_step(c, EX_CAST, to, src, 1, &s);
    if (k >= 0)
        c->prog->steps[k].tz = tz;
    return k;
}

/* Spark's DecimalType.forType for integral types. */
static em_type decimal_for(em_type t) {
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

static int rank_of(em_type_id id) {
    switch (id) {
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

/* The type both comparison operands are brought to (decimal pairs keep
 * their own types). Returns false when the pair cannot be compared. */
static bool common_type(em_type a, em_type b, em_type *out) {
    if (em_type_equal(a, b)) {
        *out = a;
        return true;
    }
    if (a.id == EM_TYPE_NULL) {
        *out = b;
        return true;
    }
    if (b.id == EM_TYPE_NULL) {
        *out = a;
        return true;
    }
    bool an = em_ex_type_is_numeric(a), bn = em_ex_type_is_numeric(b);
    if (an && bn) {
        if (a.id == EM_TYPE_DECIMAL || b.id == EM_TYPE_DECIMAL) {
            em_type o = a.id == EM_TYPE_DECIMAL ? b : a;
            if (o.id == EM_TYPE_FLOAT || o.id == EM_TYPE_DOUBLE) {
                *out = em_type_make(EM_TYPE_DOUBLE);
                return true;
            }
            *out = em_type_make(EM_TYPE_DECIMAL); /* marker: keep decimals, cast integrals */
            return true;
        }
        *out = rank_of(a.id) >= rank_of(b.id) ? a : b;
        return true;
    }
    if ((a.id == EM_TYPE_DATE && b.id == EM_TYPE_STRING) ||
        (b.id == EM_TYPE_DATE && a.id == EM_TYPE_STRING)) {
        *out = em_type_make(EM_TYPE_DATE);
        return true;
    }
    if ((a.id == EM_TYPE_DATE && b.id == EM_TYPE_TIMESTAMP) ||
        (b.id == EM_TYPE_DATE && a.id == EM_TYPE_TIMESTAMP)) {
        *out = em_type_make(EM_TYPE_TIMESTAMP);
        return true;
    }
    return false;
}

static int unify(cctx *c, int s, em_type common, const em_expr *src) {
    em_type t = step_type(c, s);
    if (common.id == EM_TYPE_DECIMAL && common.precision == 0) {
        if (t.id == EM_TYPE_DECIMAL)
            return s;
        return cast_to(c, s, decimal_for(t), src);
    }
    return cast_to(c, s, common, src);
}

/* ------------------------------------------------------------------ tree walk */

static int compile(cctx *c, const em_expr *e, const em_type *hint);

static bool is_untyped_literal(const em_expr *e) {
    return e->kind == EM_EXPR_LITERAL && !(e->type_known && e->type.id != EM_TYPE_NULL);
}

/* Compiles two operands, letting an untyped literal take its partner's type. */
static bool compile_pair(cctx *c, const em_expr *l, const em_expr *r, int *ls, int *rs) {
    if (is_untyped_literal(l) && !is_untyped_literal(r)) {
        *rs = compile(c, r, NULL);
        if (*rs < 0)
            return false;
        em_type h = step_type(c, *rs);
        *ls = compile(c, l, &h);
        return *ls >= 0;
    }
    *ls = compile(c, l, NULL);
    if (*ls < 0)
        return false;
    em_type h = step_type(c, *ls);
    *rs = compile(c, r, &h);
    return *rs >= 0;
}

static int find_input(cctx *c, const em_expr *e) {
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i] && c->inputs[i]->id == e->id)
            return i;
    return -1;
}

static int compile_attr(cctx *c, const em_expr *e) {
    int i = find_input(c, e);
    if (i < 0) {
        EM_FAIL(c->err, EM_ERR_BIND, "attribute %s#%lld is not in the operator's input",
                e->name ? e->name : "?", (long long)e->id);
        return -1;
    }
    const em_expr *in = c->inputs[i];
    em_type t;
    if (in->type_known)
        t = in->type;
    else if (e->type_known)
        t = e->type;
    else {
        EM_FAIL(c->err, EM_ERR_TYPE, "the type of attribute %s#%lld is unknown",
                e->name ? e->name : "?", (long long)e->id);
        return -1;
    }
    int s = add_step(c, EX_INPUT, t, e, 0, NULL);
    if (s >= 0)
        c->prog->steps[s].ordinal = i;
    return s;
}

/* Spark's result type of a decimal operator, by the plan's Spark line
 * (the 3.4+ rule with precision loss allowed when no shim is given). */
static bool decimal_result(cctx *c, em_binop op, em_type l, em_type r, em_type *out) {
    const em_shim *sh = c->opts ? c->opts->shim : NULL;
    if (sh && sh->decimal_binary_type)
        return sh->decimal_binary_type(sh, op, l, r, out);
    return em_shim_decimal_rule(op, l, r, true, out);
}

/* A decimal arithmetic result type: the tree's when known, else Spark's. */
static int compile_arith(cctx *c, const em_expr *e, em_binop op, const em_expr *l, const em_expr *r,
                         const em_type *forced, bool forced_null) {
    int ls, rs;
    if (!compile_pair(c, l, r, &ls, &rs))
        return -1;
    em_type lt = step_type(c, ls), rt = step_type(c, rs);
    if (!em_ex_type_is_numeric(lt) && lt.id != EM_TYPE_NULL)
        goto bad;
    if (!em_ex_type_is_numeric(rt) && rt.id != EM_TYPE_NULL)
        goto bad;
    if (lt.id == EM_TYPE_NULL)
        lt = rt;
    if (rt.id == EM_TYPE_NULL)
        rt = lt;
    em_type result;
    bool dec = lt.id == EM_TYPE_DECIMAL || rt.id == EM_TYPE_DECIMAL;
    bool flt = lt.id == EM_TYPE_DOUBLE || rt.id == EM_TYPE_DOUBLE || lt.id == EM_TYPE_FLOAT ||
               rt.id == EM_TYPE_FLOAT;
    if (op == EM_OP_INTDIV) {
        /* IntegralDivide: quot in the operands' type, then widened to long
         * (so int MIN div -1 wraps to MIN before the widening) */
        if (dec || flt)
            return fail_unsupported(c, e, "div of non-integral operands"), -1;
        em_type common = rank_of(lt.id) >= rank_of(rt.id) ? lt : rt;
        ls = cast_to(c, ls, common, e);
        rs = cast_to(c, rs, common, e);
        if (ls < 0 || rs < 0)
            return -1;
        int qargs[2] = {ls, rs};
        int q = add_step(c, EX_ARITH, common, e, 2, qargs);
        if (q < 0)
            return -1;
        c->prog->steps[q].bop = op;
        return cast_to(c, q, em_type_make(EM_TYPE_LONG), e);
    } else if (flt || (op == EM_OP_DIV && !dec)) {
        result = em_type_make((lt.id == EM_TYPE_FLOAT || !flt) &&
                                      (rt.id == EM_TYPE_FLOAT || !flt) && op != EM_OP_DIV
                                  ? EM_TYPE_FLOAT
                                  : EM_TYPE_DOUBLE);
        /* Divide takes double or decimal only: float / float is double */
        if (lt.id == EM_TYPE_FLOAT && rt.id == EM_TYPE_FLOAT && op != EM_OP_DIV)
            result = em_type_make(EM_TYPE_FLOAT);
        ls = cast_to(c, ls, result, e);
        rs = cast_to(c, rs, result, e);
    } else if (dec) {
        ls = unify(c, ls, em_type_make(EM_TYPE_DECIMAL), e);
        rs = unify(c, rs, em_type_make(EM_TYPE_DECIMAL), e);
        if (ls < 0 || rs < 0)
            return -1;
        if (forced)
            result = *forced;
        else if (e->type_known && e->type.id == EM_TYPE_DECIMAL &&
                 !(c->prog->steps[ls].type.id != EM_TYPE_DECIMAL))
            result = e->type;
        else if (!decimal_result(c, op, step_type(c, ls), step_type(c, rs), &result))
            return fail_unsupported(c, e, "decimal operator without a result type rule"), -1;
    } else {
        result = rank_of(lt.id) >= rank_of(rt.id) ? lt : rt;
        if (op >= EM_OP_BITAND && op <= EM_OP_BITXOR) {
            /* fine: same integral kernel */
        }
        ls = cast_to(c, ls, result, e);
        rs = cast_to(c, rs, result, e);
    }
    if (ls < 0 || rs < 0)
        return -1;
    int args[2] = {ls, rs};
    int s = add_step(c, EX_ARITH, result, e, 2, args);
    if (s >= 0) {
        c->prog->steps[s].bop = op;
        if (forced)
            c->prog->steps[s].null_on_error = forced_null;
    }
    return s;
bad:
    return fail_unsupported(c, e, "arithmetic on non-numeric operands"), -1;
}

static int compile_binary(cctx *c, const em_expr *e) {
    const em_expr *l = e->args[0], *r = e->args[1];
    if (e->op == EM_OP_AND || e->op == EM_OP_OR) {
        em_type b = em_type_make(EM_TYPE_BOOLEAN);
        int args[2];
        args[0] = compile(c, l, &b);
        if (args[0] < 0)
            return -1;
        args[1] = compile(c, r, &b);
        if (args[1] < 0)
            return -1;
        return add_step(c, e->op == EM_OP_AND ? EX_AND : EX_OR, b, e, 2, args);
    }
    if (e->op >= EM_OP_EQ && e->op <= EM_OP_GE) {
        int ls, rs;
        if (!compile_pair(c, l, r, &ls, &rs))
            return -1;
        em_type common;
        if (!common_type(step_type(c, ls), step_type(c, rs), &common))
            return fail_unsupported(c, e, "comparison of incompatible types"), -1;
        ls = unify(c, ls, common, e);
        rs = unify(c, rs, common, e);
        if (ls < 0 || rs < 0)
            return -1;
        int args[2] = {ls, rs};
        int s = add_step(c, EX_CMP, em_type_make(EM_TYPE_BOOLEAN), e, 2, args);
        if (s >= 0)
            c->prog->steps[s].bop = e->op;
        return s;
    }
    return compile_arith(c, e, e->op, l, r, NULL, false);
}

/* value IN (a, b, ...) with non-literal items: every item is compiled and
 * compared row by row; the result is that of the OR chain of equalities
 * (true if one is equal, else null if any side is null, else false). */
static int compile_in_dynamic(cctx *c, const em_expr *e, int v) {
    int n = e->n_args;
    int *args = malloc((size_t)n * sizeof *args);
    if (!args) {
        EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
        return -1;
    }
    em_type t = step_type(c, v);
    args[0] = v;
    int s = -1;
    for (int i = 1; i < n; i++) {
        args[i] = compile(c, e->args[i], &t);
        if (args[i] < 0)
            goto done;
    }
    /* every side is brought to the common type, as Spark's coercion does
     * (decimals of different scales compare exactly as they are) */
    em_type common = t;
    for (int i = 1; i < n; i++)
        if (!common_type(common, step_type(c, args[i]), &common)) {
            fail_unsupported(c, e, "IN list item of an incompatible type");
            goto done;
        }
    for (int i = 0; i < n; i++) {
        args[i] = unify(c, args[i], common, e);
        if (args[i] < 0)
            goto done;
    }
    s = add_step(c, EX_IN, em_type_make(EM_TYPE_BOOLEAN), e, n, args);
done:
    free(args);
    return s;
}

static int compile_in(cctx *c, const em_expr *e) {
    int v = compile(c, e->args[0], NULL);
    if (v < 0)
        return -1;
    for (int i = 1; i < e->n_args; i++)
        if (e->args[i]->kind != EM_EXPR_LITERAL)
            return compile_in_dynamic(c, e, v);
    em_type t = step_type(c, v);
    int s = add_step(c, EX_IN, em_type_make(EM_TYPE_BOOLEAN), e, 1, &v);
    if (s < 0)
        return -1;
    int n = e->n_args - 1;
    ex_value *list = calloc((size_t)(n > 0 ? n : 1), sizeof *list);
    if (!list) {
        EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
        return -1;
    }
    c->prog->steps[s].list = list;
    int k = 0;
    for (int i = 0; i < n; i++) {
        const em_expr *item = e->args[i + 1];
        if (item->kind != EM_EXPR_LITERAL)
            return fail_unsupported(c, e, "IN with a non-literal list item"), -1;
        ex_value val;
        em_type lt = t;
        if (t.id == EM_TYPE_DECIMAL && strcmp(item->text, "null") &&
            text_decimal_type(item->text, &lt)) {
            if (lt.scale < t.scale)
                lt.scale = t.scale;
            /* an item with more fractional digits than the value can only be
             * equal when the extra digits are zeros */
            em_i128 hi;
            bool bad;
            if (!em_dec_parse(item->text, (int64_t)strlen(item->text), 0, lt.scale, &hi, &bad))
                return fail_unsupported(c, e, "IN list item is not a decimal"), -1;
            em_i128 pw = em_dec_pow10(lt.scale - t.scale);
            if (hi % pw != 0)
                continue;
            memset(&val, 0, sizeof val);
            val.dec = hi / pw;
            list[k++] = val;
            continue;
        }
        if (parse_literal(c, item->text, t, &val) != EM_OK)
            return -1;
        if (val.null) {
            c->prog->steps[s].list_has_null = true;
            continue;
        }
        if (t.id == EM_TYPE_STRING || t.id == EM_TYPE_BINARY) {
            val.s = own_string(c, val.s, (size_t)val.len);
            if (!val.s) {
                EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
                return -1;
            }
        }
        list[k++] = val;
    }
    /* sorted for binary search */
    for (int i = 1; i < k; i++) {
        ex_value x = list[i];
        int j = i - 1;
        while (j >= 0 && em_ex_compare(&list[j], t, &x, t) > 0) {
            list[j + 1] = list[j];
            j--;
        }
        list[j + 1] = x;
    }
    c->prog->steps[s].n_list = k;
    return s;
}

static int compile_case(cctx *c, const em_expr *e) {
    int n = e->n_args;
    int *args = malloc((size_t)(n > 0 ? n : 1) * sizeof *args);
    if (!args) {
        EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
        return -1;
    }
    em_type b = em_type_make(EM_TYPE_BOOLEAN);
    bool known = e->type_known && e->type.id != EM_TYPE_NULL;
    em_type rt = e->type;
    /* values first pass: find the result type when the tree has none */
    if (!known) {
        for (int i = 0; i < n; i++) {
            bool is_value = (i % 2 == 1) || (e->has_else && i == n - 1);
            if (is_value && e->args[i]->type_known && !is_untyped_literal(e->args[i])) {
                rt = e->args[i]->type;
                known = true;
                break;
            }
        }
    }
    int status = 0;
    for (int i = 0; i < n && status == 0; i++) {
        bool is_value = (i % 2 == 1) || (e->has_else && i == n - 1);
        int s = compile(c, e->args[i], is_value ? (known ? &rt : NULL) : &b);
        if (s < 0) {
            status = -1;
            break;
        }
        if (is_value && !known) {
            rt = step_type(c, s);
            known = rt.id != EM_TYPE_NULL;
        }
        args[i] = s;
    }
    if (status == 0)
        for (int i = 0; i < n; i++) {
            bool is_value = (i % 2 == 1) || (e->has_else && i == n - 1);
            if (is_value) {
                args[i] = cast_to(c, args[i], rt, e);
                if (args[i] < 0) {
                    status = -1;
                    break;
                }
            }
        }
    int s = status == 0 ? add_step(c, EX_CASE, rt, e, n, args) : -1;
    if (s >= 0)
        c->prog->steps[s].iarg = e->has_else;
    free(args);
    return s;
}

static em_type type_arg(const em_expr *a, bool *ok) {
    *ok = false;
    em_type t = {0};
    if (a->kind == EM_EXPR_TYPE && a->cast_type_known) {
        *ok = true;
        return a->cast_type;
    }
    if (a->kind == EM_EXPR_TYPE && a->text) {
        int p, s;
        if (sscanf(a->text, "DecimalType(%d,%d)", &p, &s) == 2) {
            *ok = true;
            return em_type_decimal(p, s);
        }
    }
    return t;
}

static bool literal_int(const em_expr *a, int64_t *v) {
    if (a->kind != EM_EXPR_LITERAL || !text_is_integer(a->text))
        return false;
    *v = strtoll(a->text, NULL, 10);
    return true;
}

static bool literal_bool(const em_expr *a, bool *v) {
    if (a->kind != EM_EXPR_LITERAL)
        return false;
    if (!strcmp(a->text, "true"))
        *v = true;
    else if (!strcmp(a->text, "false"))
        *v = false;
    else
        return false;
    return true;
}

static int compile_scalar_fn(cctx *c, const em_expr *e, const em_fn_info *fd) {
    if (e->n_args < fd->min_args || e->n_args > fd->max_args)
        return fail_unsupported(c, e, "wrong number of arguments"), -1;
    int n_args = e->n_args;
    if ((fd->id == EM_FN_TRIM || fd->id == EM_FN_LTRIM || fd->id == EM_FN_RTRIM) && n_args == 2) {
        /* Spark prints StringTrim's optional trimStr: None is the default (spaces) */
        const em_expr *t = e->args[1];
        if (t->kind != EM_EXPR_LITERAL || strcmp(t->text, "None") != 0)
            return fail_unsupported(c, e, "trim with a set of characters to trim"), -1;
        n_args = 1;
    }
    int args[8];
    int *argv = n_args <= 8 ? args : malloc((size_t)n_args * sizeof *argv);
    if (!argv) {
        EM_FAIL(c->err, EM_ERR_NOMEM, "out of memory compiling an expression");
        return -1;
    }
    em_type str = em_type_make(EM_TYPE_STRING), i32 = em_type_make(EM_TYPE_INT);
    em_type dbl = em_type_make(EM_TYPE_DOUBLE), date = em_type_make(EM_TYPE_DATE);
    em_type result = em_type_make(EM_TYPE_STRING);
    const em_tz *zone = NULL, *stamped = NULL;
    int s = -1;
    if ((fd->id == EM_FN_HOUR || fd->id == EM_FN_MINUTE || fd->id == EM_FN_SECOND) && n_args == 2) {
        /* Spark prints the analyzer's zone of a TimeZoneAwareExpression as
         * Some(id); that zone, not the session's, is the expression's */
        const em_expr *z = e->args[1];
        bool some = z->kind == EM_EXPR_CALL && z->name && !strcmp(z->name, "Some") &&
                    z->n_args == 1 && z->args[0]->text;
        if (!some) {
            fail_unsupported(c, e, "a time zone argument other than Some(zone id)");
            goto done;
        }
        if (em_tz_find(z->args[0]->text, &stamped, c->err) != EM_OK)
            goto done;
        n_args = 1;
    }
    for (int i = 0; i < n_args; i++) {
        const em_type *want = NULL;
        switch (fd->id) {
        case EM_FN_SUBSTRING:
        case EM_FN_READ_SIDE_PADDING:
            want = i == 0 ? &str : &i32;
            break;
        case EM_FN_CONCAT:
        case EM_FN_UPPER:
        case EM_FN_LOWER:
        case EM_FN_LENGTH:
        case EM_FN_TRIM:
        case EM_FN_LTRIM:
        case EM_FN_RTRIM:
        case EM_FN_STARTS_WITH:
        case EM_FN_ENDS_WITH:
        case EM_FN_CONTAINS:
            want = &str;
            break;
        case EM_FN_YEAR:
        case EM_FN_MONTH:
        case EM_FN_DAY:
        case EM_FN_QUARTER:
        case EM_FN_DATEDIFF:
            want = &date;
            break;
        case EM_FN_DATE_ADD:
        case EM_FN_DATE_SUB:
            want = i == 0 ? &date : &i32;
            break;
        case EM_FN_ISNAN:
        case EM_FN_NORMALIZE:
        case EM_FN_SQRT:
        case EM_FN_EXP:
        case EM_FN_LN:
        case EM_FN_POWER:
            want = &dbl;
            break;
        case EM_FN_SHIFTLEFT:
        case EM_FN_SHIFTRIGHT:
            want = i == 1 ? &i32 : NULL;
            break;
        default:
            break;
        }
        int a = compile(c, e->args[i], want);
        if (a < 0)
            goto done;
        if (want && !(fd->id == EM_FN_NORMALIZE && step_type(c, a).id == EM_TYPE_FLOAT)) {
            em_type at = step_type(c, a);
            if ((fd->id == EM_FN_DATE_ADD || fd->id == EM_FN_DATE_SUB) && i == 1 &&
                em_ex_type_is_integral(at) && at.id != EM_TYPE_LONG)
                want = &at; /* tinyint/smallint/int days all accepted */
            a = cast_to(c, a, *want, e);
            if (a < 0)
                goto done;
        }
        argv[i] = a;
    }
    switch (fd->id) {
    case EM_FN_LENGTH:
    case EM_FN_YEAR:
    case EM_FN_MONTH:
    case EM_FN_DAY:
    case EM_FN_QUARTER:
    case EM_FN_DATEDIFF:
        result = i32;
        break;
    case EM_FN_DATE_ADD:
    case EM_FN_DATE_SUB:
        result = date;
        break;
    case EM_FN_STARTS_WITH:
    case EM_FN_ENDS_WITH:
    case EM_FN_CONTAINS:
    case EM_FN_ISNAN:
        result = em_type_make(EM_TYPE_BOOLEAN);
        break;
    case EM_FN_NORMALIZE:
        result = step_type(c, argv[0]);
        break;
    case EM_FN_UNSCALED:
        if (step_type(c, argv[0]).id != EM_TYPE_DECIMAL || step_type(c, argv[0]).precision > 18) {
            fail_unsupported(c, e, "UnscaledValue of a non-decimal(p<=18) value");
            goto done;
        }
        result = em_type_make(EM_TYPE_LONG);
        break;
    case EM_FN_SHIFTLEFT:
    case EM_FN_SHIFTRIGHT: {
        em_type t0 = step_type(c, argv[0]);
        result = t0.id == EM_TYPE_LONG ? t0 : i32;
        argv[0] = cast_to(c, argv[0], result, e);
        if (argv[0] < 0)
            goto done;
        break;
    }
    case EM_FN_SQRT:
    case EM_FN_EXP:
    case EM_FN_LN:
    case EM_FN_POWER:
        result = dbl;
        break;
    case EM_FN_FLOOR:
    case EM_FN_CEIL: {
        /* Spark: decimal(p,s) -> decimal(p-s+1, 0); integral stays; the
         * rest goes through double to bigint */
        em_type t0 = step_type(c, argv[0]);
        if (!em_shim_floor_ceil_type(t0, &result)) {
            fail_unsupported(c, e, "floor/ceil of a non-numeric value");
            goto done;
        }
        if (em_ex_type_is_integral(t0))
            argv[0] = cast_to(c, argv[0], result, e);
        else if (t0.id != EM_TYPE_DECIMAL)
            argv[0] = cast_to(c, argv[0], dbl, e);
        if (argv[0] < 0)
            goto done;
        break;
    }
    case EM_FN_PMOD: {
        em_type t0 = step_type(c, argv[0]), t1 = step_type(c, argv[1]);
        if (!em_ex_type_is_integral(t0) || !em_ex_type_is_integral(t1)) {
            fail_unsupported(c, e, "pmod of non-integral values");
            goto done;
        }
        result = rank_of(t0.id) >= rank_of(t1.id) ? t0 : t1;
        argv[0] = cast_to(c, argv[0], result, e);
        argv[1] = argv[0] < 0 ? -1 : cast_to(c, argv[1], result, e);
        if (argv[1] < 0)
            goto done;
        break;
    }
    case EM_FN_HOUR:
    case EM_FN_MINUTE:
    case EM_FN_SECOND: {
        /* a date is midnight in the session zone; a timestamp is read there */
        em_type ts = em_type_make(EM_TYPE_TIMESTAMP), t0 = step_type(c, argv[0]);
        if (t0.id == EM_TYPE_DATE)
            argv[0] = cast_to(c, argv[0], ts, e);
        else if (t0.id != EM_TYPE_TIMESTAMP && t0.id != EM_TYPE_TIMESTAMP_NTZ) {
            fail_unsupported(c, e, "hour/minute/second of a non-timestamp value");
            goto done;
        }
        if (argv[0] < 0)
            goto done;
        if (t0.id != EM_TYPE_TIMESTAMP_NTZ && stamped)
            zone = em_tz_is_utc(stamped) ? NULL : stamped;
        else if (t0.id != EM_TYPE_TIMESTAMP_NTZ && session_zone(c, &zone) < 0)
            goto done;
        result = i32;
        break;
    }
    default:
        break;
    }
    s = add_step(c, EX_SCALAR, result, e, n_args, argv);
    if (s >= 0) {
        c->prog->steps[s].fn = fd->id;
        c->prog->steps[s].tz = zone;
        /* date_add overflow wraps like Java int in non-ANSI mode */
    }
done:
    if (argv != args)
        free(argv);
    return s;
}

static int compile_call(cctx *c, const em_expr *e) {
    const char *n = e->name ? e->name : "";
    int na = e->n_args;
    if (!strcasecmp(n, "promote_precision") || !strcasecmp(n, "knownfloatingpointnormalized") ||
        !strcasecmp(n, "knownnotnull")) {
        if (na != 1)
            return fail_unsupported(c, e, "wrong number of arguments"), -1;
        return compile(c, e->args[0], NULL);
    }
    if (!strcasecmp(n, "dynamicpruningexpression")) {
        /* a dynamic partition pruning filter only repeats what the join
         * will check: its subquery form is always true here */
        if (na != 1)
            return fail_unsupported(c, e, "wrong number of arguments"), -1;
        if (e->args[0]->kind == EM_EXPR_IN_SUBQUERY)
            return compile_const(c, e, "true", em_type_make(EM_TYPE_BOOLEAN));
        em_type b = em_type_make(EM_TYPE_BOOLEAN);
        return compile(c, e->args[0], &b);
    }
    if (!strcasecmp(n, "CheckOverflow")) {
        bool ok;
        if (na < 2)
            return fail_unsupported(c, e, "wrong number of arguments"), -1;
        em_type t = type_arg(e->args[1], &ok);
        if (!ok || t.id != EM_TYPE_DECIMAL)
            return fail_unsupported(c, e, "CheckOverflow without a DecimalType"), -1;
        bool null_on = !c->prog->ansi;
        if (na >= 3 && !literal_bool(e->args[2], &null_on))
            return fail_unsupported(c, e, "CheckOverflow's third argument"), -1;
        const em_expr *ch = e->args[0];
        if (ch->kind == EM_EXPR_BINARY && ch->op >= EM_OP_ADD && ch->op <= EM_OP_REM) {
            /* fuse: compute the operator directly at (p,s), as CheckOverflow's
             * toPrecision of the exact result does */
            return compile_arith(c, ch, ch->op, ch->args[0], ch->args[1], &t, null_on);
        }
        int a = compile(c, ch, NULL);
        if (a < 0)
            return -1;
        if (step_type(c, a).id != EM_TYPE_DECIMAL)
            return fail_unsupported(c, e, "CheckOverflow of a non-decimal value"), -1;
        int s = add_step(c, EX_CHECK_OVERFLOW, t, e, 1, &a);
        if (s >= 0)
            c->prog->steps[s].null_on_error = null_on;
        return s;
    }
    if (!strcasecmp(n, "MakeDecimal")) {
        int64_t p, sc;
        if (na < 3 || !literal_int(e->args[1], &p) || !literal_int(e->args[2], &sc) || p < 1 ||
            p > 18 || sc < 0 || sc > p)
            return fail_unsupported(c, e, "MakeDecimal(long, p <= 18, s)"), -1;
        bool null_on = !c->prog->ansi;
        if (na >= 4 && !literal_bool(e->args[3], &null_on))
            return fail_unsupported(c, e, "MakeDecimal's nullOnOverflow argument"), -1;
        em_type l = em_type_make(EM_TYPE_LONG);
        int a = cast_to(c, compile(c, e->args[0], &l), l, e);
        if (a < 0)
            return -1;
        int s = add_step(c, EX_SCALAR, em_type_decimal((int)p, (int)sc), e, 1, &a);
        if (s >= 0) {
            c->prog->steps[s].fn = EM_FN_MAKE_DECIMAL;
            c->prog->steps[s].null_on_error = null_on;
        }
        return s;
    }
    if (!strcasecmp(n, "isnull") || !strcasecmp(n, "isnotnull")) {
        if (na != 1)
            return fail_unsupported(c, e, "wrong number of arguments"), -1;
        int a = compile(c, e->args[0], NULL);
        if (a < 0)
            return -1;
        return add_step(c, !strcasecmp(n, "isnotnull") ? EX_ISNOTNULL : EX_ISNULL,
                        em_type_make(EM_TYPE_BOOLEAN), e, 1, &a);
    }
    if (!strcasecmp(n, "coalesce") || !strcasecmp(n, "if") || !strcasecmp(n, "nvl") ||
        !strcasecmp(n, "ifnull")) {
        bool is_if = !strcasecmp(n, "if");
        if (na < 1 || (is_if && na != 3))
            return fail_unsupported(c, e, "wrong number of arguments"), -1;
        int args[64];
        if (na > 64)
            return fail_unsupported(c, e, "too many arguments"), -1;
        em_type b = em_type_make(EM_TYPE_BOOLEAN);
        bool known = e->type_known && e->type.id != EM_TYPE_NULL;
        em_type rt = e->type;
        for (int i = 0; i < na; i++) {
            if (is_if && i == 0) {
                args[0] = compile(c, e->args[0], &b);
            } else {
                args[i] = compile(c, e->args[i], known ? &rt : NULL);
                if (args[i] >= 0 && !known && step_type(c, args[i]).id != EM_TYPE_NULL) {
                    rt = step_type(c, args[i]);
                    known = true;
                }
            }
            if (args[i] < 0)
                return -1;
        }
        if (!known)
            rt = em_type_make(EM_TYPE_NULL);
        for (int i = is_if ? 1 : 0; i < na; i++) {
            args[i] = cast_to(c, args[i], rt, e);
            if (args[i] < 0)
                return -1;
        }
        int s = add_step(c, is_if ? EX_IF : EX_COALESCE, rt, e, na, args);
        if (s >= 0 && is_if)
            c->prog->steps[s].iarg = 1; /* if(c, a, b) runs as CASE WHEN c THEN a ELSE b */
        return s;
    }
    if (!strcasecmp(n, "abs") || !strcasecmp(n, "negative")) {
        if (na != 1)
            return fail_unsupported(c, e, "wrong number of arguments"), -1;
        int a = compile(c, e->args[0], NULL);
        if (a < 0)
            return -1;
        if (!em_ex_type_is_numeric(step_type(c, a)))
            return fail_unsupported(c, e, "abs of a non-numeric value"), -1;
        return add_step(c, !strcasecmp(n, "abs") ? EX_ABS : EX_NEGATE, step_type(c, a), e, 1, &a);
    }
    if (!strcasecmp(n, "round")) {
        int64_t sc = 0;
        if (na < 1 || na > 2 || (na == 2 && !literal_int(e->args[1], &sc)))
            return fail_unsupported(c, e, "round(x[, literal scale])"), -1;
        int a = compile(c, e->args[0], NULL);
        if (a < 0)
            return -1;
        em_type t = step_type(c, a);
        if (!em_ex_type_is_numeric(t))
            return fail_unsupported(c, e, "round of a non-numeric value"), -1;
        em_type rt = t;
        if (t.id == EM_TYPE_DECIMAL) {
            /* RoundBase: p - s + 1 integral digits (at least 1 - scale for a negative
             * scale), scale min(s, max(scale, 0)); the plan's type when known */
            int ns = (int)(sc < t.scale ? (sc > 0 ? sc : 0) : t.scale);
            int ip = t.precision - t.scale + 1;
            if (sc < 0 && 1 - sc > ip)
                ip = sc < -EM_DECIMAL_MAX_PRECISION ? EM_DECIMAL_MAX_PRECISION + 1 : (int)(1 - sc);
            rt = em_shim_decimal_adjust(ip + ns, ns, false);
            if (e->type_known && e->type.id == EM_TYPE_DECIMAL)
                rt = e->type;
        }
        int s = add_step(c, EX_SCALAR, rt, e, 1, &a);
        if (s >= 0) {
            c->prog->steps[s].fn = EM_FN_ROUND;
            c->prog->steps[s].iarg = sc;
        }
        return s;
    }
    const em_fn_info *fi = em_fn_lookup(n);
    if (fi && fi->native)
        return compile_scalar_fn(c, e, fi);
    return fail_unsupported(c, e, "unsupported function"), -1;
}

static int compile(cctx *c, const em_expr *e, const em_type *hint) {
    if (!e) {
        EM_FAIL(c->err, EM_ERR_INVALID, "missing expression");
        return -1;
    }
    switch (e->kind) {
    case EM_EXPR_ALIAS:
    case EM_EXPR_NOT:
    case EM_EXPR_NEGATE:
    case EM_EXPR_CAST:
    case EM_EXPR_IN:
    case EM_EXPR_INSET:
        if (e->n_args < 1 || !e->args || !e->args[0])
            return fail_unsupported(c, e, "malformed expression without an operand"), -1;
        break;
    default:
        break;
    }
    for (int i = 0; i < e->n_args; i++)
        if (!e->args || !e->args[i])
            return fail_unsupported(c, e, "malformed expression with a missing operand"), -1;
    switch (e->kind) {
    case EM_EXPR_ATTR:
        return compile_attr(c, e);
    case EM_EXPR_BOUND_REF: {
        if (e->id < 0 || e->id >= c->n_inputs) {
            EM_FAIL(c->err, EM_ERR_BIND, "input[%lld] is outside the operator's %d columns",
                    (long long)e->id, c->n_inputs);
            return -1;
        }
        em_type t = e->cast_type_known ? e->cast_type : e->type;
        int s = add_step(c, EX_INPUT, t, e, 0, NULL);
        if (s >= 0)
            c->prog->steps[s].ordinal = (int)e->id;
        return s;
    }
    case EM_EXPR_LITERAL:
        return compile_const(c, e, e->text ? e->text : "", literal_type(e, hint));
    case EM_EXPR_ALIAS:
        return compile(c, e->args[0], hint);
    case EM_EXPR_BINARY:
        if (e->n_args != 2)
            return fail_unsupported(c, e, "malformed binary expression"), -1;
        return compile_binary(c, e);
    case EM_EXPR_NOT: {
        em_type b = em_type_make(EM_TYPE_BOOLEAN);
        int a = compile(c, e->args[0], &b);
        if (a < 0)
            return -1;
        return add_step(c, EX_NOT, b, e, 1, &a);
    }
    case EM_EXPR_NEGATE: {
        int a = compile(c, e->args[0], hint);
        if (a < 0)
            return -1;
        if (!em_ex_type_is_numeric(step_type(c, a)))
            return fail_unsupported(c, e, "negation of a non-numeric value"), -1;
        return add_step(c, EX_NEGATE, step_type(c, a), e, 1, &a);
    }
    case EM_EXPR_IN:
    case EM_EXPR_INSET:
        return compile_in(c, e);
    case EM_EXPR_LIKE: {
        if (e->rlike)
            return fail_unsupported(c, e, "RLIKE is not supported"), -1;
        if (e->n_args != 2 || e->args[1]->kind != EM_EXPR_LITERAL)
            return fail_unsupported(c, e, "LIKE with a non-literal pattern"), -1;
        const char *pat = e->args[1]->text ? e->args[1]->text : "";
        if (em_ex_like_check(pat, (int32_t)strlen(pat), c->err) != EM_OK)
            return -1;
        em_type str = em_type_make(EM_TYPE_STRING);
        int args[2];
        args[0] = cast_to(c, compile(c, e->args[0], &str), str, e);
        if (args[0] < 0)
            return -1;
        args[1] = compile_const(c, e->args[1], pat, str);
        if (args[1] < 0)
            return -1;
        int s = add_step(c, EX_SCALAR, em_type_make(EM_TYPE_BOOLEAN), e, 2, args);
        if (s >= 0)
            c->prog->steps[s].fn = EM_FN_LIKE;
        return s;
    }
    case EM_EXPR_CASE:
        return compile_case(c, e);
    case EM_EXPR_CAST: {
        em_type to;
        if (e->cast_type_known)
            to = e->cast_type;
        else if (!e->text || em_type_parse(e->text, strlen(e->text), &to, NULL) != EM_OK)
            return fail_unsupported(c, e, "cast to an unknown type"), -1;
        int a = compile(c, e->args[0], NULL);
        if (a < 0)
            return -1;
        return cast_to(c, a, to, e);
    }
    case EM_EXPR_CALL:
        return compile_call(c, e);
    case EM_EXPR_SCALAR_SUBQUERY:
    case EM_EXPR_FIELD: {
        if (e->kind == EM_EXPR_FIELD &&
            (e->n_args < 1 || e->args[0]->kind != EM_EXPR_SCALAR_SUBQUERY))
            return fail_unsupported(c, e, "struct field access"), -1;
        if (!c->prog->subquery)
            return fail_unsupported(c, e, "scalar subquery without a value provider"), -1;
        if (!e->type_known)
            return fail_unsupported(c, e, "scalar subquery of unknown type"), -1;
        return add_step(c, EX_SUBQUERY, e->type, e, 0, NULL);
    }
    default:
        return fail_unsupported(c, e, "unsupported expression"), -1;
    }
}

/* ------------------------------------------------------------------ public */

em_status em_expr_compile(const em_expr *e, const em_expr *const *input_attrs, int n_input,
                          const em_expr_compile_options *opts, em_expr_prog **out, em_error *err) {
    *out = NULL;
    em_expr_prog *p = calloc(1, sizeof *p);
    if (!p)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory compiling an expression");
    if (opts) {
        p->ansi = opts->ansi;
        p->pool = opts->pool;
        p->subquery = opts->subquery;
        p->subquery_ctx = opts->subquery_ctx;
        p->tz_utc = !opts->time_zone || !strcasecmp(opts->time_zone, "UTC") ||
                    !strcmp(opts->time_zone, "Etc/UTC") || !strcmp(opts->time_zone, "Z") ||
                    !strcmp(opts->time_zone, "+00:00") || !strcmp(opts->time_zone, "GMT");
    } else {
        p->tz_utc = true;
    }
    cctx c = {p, input_attrs, n_input, opts, err};
    int root = compile(&c, e, NULL);
    if (root < 0) {
        em_status st = err && err->code != EM_OK ? err->code : EM_ERR_INTERNAL;
        em_expr_prog_destroy(p);
        return st;
    }
    (void)root; /* the root is the last step */
    p->regs = calloc((size_t)p->n_steps, sizeof *p->regs);
    if (!p->regs) {
        em_expr_prog_destroy(p);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory compiling an expression");
    }
    *out = p;
    return EM_OK;
}

void em_expr_prog_destroy(em_expr_prog *p) {
    if (!p)
        return;
    for (int i = 0; i < p->n_steps; i++) {
        free(p->steps[i].args);
        free(p->steps[i].list);
        em_column_reset(&p->steps[i].value);
        if (p->regs)
            em_column_reset(&p->regs[i]);
    }
    for (int i = 0; i < p->n_owned; i++)
        free(p->owned[i]);
    free(p->owned);
    free(p->steps);
    free(p->regs);
    free(p);
}

em_type em_expr_prog_type(const em_expr_prog *p) { return p->steps[p->n_steps - 1].type; }

int em_expr_prog_n_steps(const em_expr_prog *p) { return p->n_steps; }

int em_expr_prog_input(const em_expr_prog *p) {
    const ex_step *root = &p->steps[p->n_steps - 1];
    return root->op == EX_INPUT ? root->ordinal : -1;
}
