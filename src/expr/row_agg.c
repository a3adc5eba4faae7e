/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The row engine's aggregate functions (rowexpr.h), one input row or one
 * partial buffer at a time, written from the declarative definitions in
 * catalyst/expressions/aggregate/{Sum,Average,Count,Max,Min,First,Last,
 * CentralMomentAgg}.scala. Buffers are datums with the layouts of expr.h,
 * so a row partial aggregate merges into a native final one and back.
 *
 *   sum(decimal)  [sum = 0, isEmpty = true]; update adds exactly; a sum
 *                 that does not fit the buffer type becomes null (the
 *                 UnsafeRow buffer cannot hold it) and stays null; merge:
 *                 null when either side overflowed, isEmpty = l && r;
 *                 eval: null when empty, overflow -> null or ANSI error.
 *   sum(other)    [sum = null]: coalesce(sum, 0) + x, Java wraparound or
 *                 ANSI overflow for longs.
 *   avg           [sum = 0, count = 0]; eval: null for count 0, decimal
 *                 DecimalDivideWithOverflowCheck (sum / count at scale 38,
 *                 then HALF_UP to decimal(p+4, s+4)), double sum / count.
 *   count         non-null rows (every argument non-null).
 *   min, max      Spark's ordering, nulls skipped.
 *   first, last   [value, valueSet] with ignoreNulls.
 *   moments       [n, avg, m2] in double (Welford update, Chan merge).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/row_cast.h"
#include "expr/row_eval.h"
#include "shims/shim.h"

#define RAGG_MAX_ARGS 8

struct em_ragg {
    em_agg_kind kind;
    em_agg_mode mode;
    bool ansi;
    bool ignore_nulls;
    em_type in_type;
    em_type result;
    int n_buf;
    em_type buf[3];
    int n_args;
    em_rexpr *args[RAGG_MAX_ARGS]; /* owned; NULL when merging only */
    const em_expr *src;
};

static bool fn_kind(const char *name, em_agg_kind *k) {
    static const struct {
        const char *name;
        em_agg_kind kind;
    } table[] = {
        {"sum", EM_AGGFN_SUM},          {"avg", EM_AGGFN_AVG},
        {"mean", EM_AGGFN_AVG},         {"count", EM_AGGFN_COUNT},
        {"min", EM_AGGFN_MIN},          {"max", EM_AGGFN_MAX},
        {"first", EM_AGGFN_FIRST},      {"first_value", EM_AGGFN_FIRST},
        {"last", EM_AGGFN_LAST},        {"last_value", EM_AGGFN_LAST},
        {"stddev_samp", EM_AGGFN_STDDEV_SAMP}, {"stddev", EM_AGGFN_STDDEV_SAMP},
        {"std", EM_AGGFN_STDDEV_SAMP},  {"stddev_pop", EM_AGGFN_STDDEV_POP},
        {"var_samp", EM_AGGFN_VAR_SAMP}, {"variance", EM_AGGFN_VAR_SAMP},
        {"var_pop", EM_AGGFN_VAR_POP},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcasecmp(name, table[i].name)) {
            *k = table[i].kind;
            return true;
        }
    return false;
}

/* Every attribute the expression names is in the input. */
static bool in_input(const em_expr *e, const em_expr *const *in, int n) {
    if (e->kind == EM_EXPR_ATTR) {
        for (int i = 0; i < n; i++)
            if (in[i] && in[i]->id == e->id)
                return true;
        return false;
    }
    for (int i = 0; i < e->n_args; i++)
        if (!in_input(e->args[i], in, n))
            return false;
    return true;
}

em_status em_ragg_bind(const em_expr *agg, const em_expr *const *input_attrs, int n_input,
                       const em_expr_compile_options *opts, em_ragg **out, em_error *err) {
    *out = NULL;
    if (!agg || agg->kind != EM_EXPR_AGG)
        return EM_FAIL(err, EM_ERR_INVALID, "not an aggregate expression");
    char d[300];
    em_agg_kind kind;
    if (!agg->name || !fn_kind(agg->name, &kind)) {
        em_row_describe(agg, d, sizeof d);
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "row engine: unsupported aggregate function: %s",
                       d);
    }
    em_ragg *a = calloc(1, sizeof *a);
    if (!a)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory binding an aggregate");
    a->kind = kind;
    a->mode = agg->mode;
    a->ansi = opts && opts->ansi;
    a->src = agg;
    em_status st = EM_OK;
    int nv = agg->n_args;
    if ((kind == EM_AGGFN_FIRST || kind == EM_AGGFN_LAST) && nv == 2 &&
        agg->args[1]->kind == EM_EXPR_LITERAL) {
        a->ignore_nulls = agg->args[1]->text && !strcmp(agg->args[1]->text, "true");
        nv = 1;
    }
    if (nv < 1 || nv > RAGG_MAX_ARGS || (kind != EM_AGGFN_COUNT && nv != 1)) {
        st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "row engine: aggregate %s with %d arguments",
                     agg->name, agg->n_args);
        goto fail;
    }
    a->n_args = nv;
    if (agg->mode == EM_AGG_PARTIAL || in_input(agg, input_attrs, n_input)) {
        for (int i = 0; i < nv; i++) {
            st = em_rexpr_bind(agg->args[i], input_attrs, n_input, opts, &a->args[i], err);
            if (st != EM_OK)
                goto fail;
        }
        a->in_type = em_rexpr_type(a->args[0]);
    } else if (agg->args[0]->type_known) {
        a->in_type = agg->args[0]->type;
    } else if (kind != EM_AGGFN_COUNT) {
        st = EM_FAIL(err, EM_ERR_TYPE, "the argument type of aggregate %s is unknown", agg->name);
        goto fail;
    }
    em_type t = a->in_type, lng = em_type_make(EM_TYPE_LONG), dbl = em_type_make(EM_TYPE_DOUBLE);
    bool numeric = t.id >= EM_TYPE_BYTE && t.id <= EM_TYPE_DECIMAL;
    switch (kind) {
    case EM_AGGFN_SUM:
        if (t.id == EM_TYPE_DECIMAL) {
            a->result = em_shim_decimal_adjust(t.precision + 10, t.scale, false);
            a->n_buf = 2;
            a->buf[1] = em_type_make(EM_TYPE_BOOLEAN);
        } else if (t.id >= EM_TYPE_BYTE && t.id <= EM_TYPE_LONG) {
            a->result = lng;
            a->n_buf = 1;
        } else if (t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE || t.id == EM_TYPE_NULL) {
            a->result = dbl;
            a->n_buf = 1;
        } else {
            goto bad_type;
        }
        a->buf[0] = a->result;
        break;
    case EM_AGGFN_AVG:
        if (t.id == EM_TYPE_DECIMAL) {
            a->buf[0] = em_shim_decimal_adjust(t.precision + 10, t.scale, false);
            a->result = em_shim_decimal_adjust(t.precision + 4, t.scale + 4, false);
        } else if (numeric || t.id == EM_TYPE_NULL) {
            a->buf[0] = a->result = dbl;
        } else {
            goto bad_type;
        }
        a->n_buf = 2;
        a->buf[1] = lng;
        break;
    case EM_AGGFN_COUNT:
        a->result = a->buf[0] = lng;
        a->n_buf = 1;
        break;
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX:
        a->result = a->buf[0] = t;
        a->n_buf = 1;
        break;
    case EM_AGGFN_FIRST:
    case EM_AGGFN_LAST:
        a->result = a->buf[0] = t;
        a->buf[1] = em_type_make(EM_TYPE_BOOLEAN);
        a->n_buf = 2;
        break;
    default:
        if (!numeric && t.id != EM_TYPE_NULL)
            goto bad_type;
        a->result = a->buf[0] = a->buf[1] = a->buf[2] = dbl;
        a->n_buf = 3;
        break;
    }
    *out = a;
    return EM_OK;
bad_type : {
    char tn[40];
    em_type_format(t, tn, sizeof tn);
    st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "row engine: aggregate %s of %s", agg->name, tn);
}
fail:
    em_ragg_destroy(a);
    return st;
}

void em_ragg_destroy(em_ragg *a) {
    if (!a)
        return;
    for (int i = 0; i < RAGG_MAX_ARGS; i++)
        em_rexpr_destroy(a->args[i]);
    free(a);
}

int em_ragg_n_buffers(const em_ragg *a) { return a->n_buf; }
em_type em_ragg_buffer_type(const em_ragg *a, int i) { return a->buf[i]; }
em_type em_ragg_result_type(const em_ragg *a) { return a->result; }
bool em_ragg_has_args(const em_ragg *a) { return a->args[0] != NULL; }

void em_ragg_init(const em_ragg *a, em_datum *buf) {
    for (int i = 0; i < a->n_buf; i++)
        memset(&buf[i], 0, sizeof buf[i]);
    switch (a->kind) {
    case EM_AGGFN_SUM:
        if (a->buf[0].id == EM_TYPE_DECIMAL)
            buf[1].v.b = true; /* sum = 0, isEmpty = true */
        else
            buf[0].is_null = true;
        break;
    case EM_AGGFN_AVG:
    case EM_AGGFN_COUNT:
        break; /* zeros */
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX:
        buf[0].is_null = true;
        break;
    case EM_AGGFN_FIRST:
    case EM_AGGFN_LAST:
        buf[0].is_null = true; /* valueSet = false */
        break;
    default:
        break; /* n = avg = m2 = 0.0 */
    }
}

static em_status overflow(const em_ragg *a, em_error *err) {
    char d[300];
    em_row_describe(a->src, d, sizeof d);
    return EM_FAIL(err, EM_ERR_OVERFLOW,
                   "[ARITHMETIC_OVERFLOW] overflow in aggregate %s "
                   "(spark.sql.ansi.enabled=false gives null)",
                   d);
}

/* sum + x into the sum buffer (x of type xt, not null). */
static em_status add_to_sum(const em_ragg *a, em_datum *sum, const em_datum *x, em_type xt,
                            em_error *err) {
    em_type bt = a->buf[0];
    if (bt.id == EM_TYPE_DECIMAL) {
        if (sum->is_null)
            return EM_OK; /* overflowed: stays null */
        em_i128 quick;
        if (xt.scale == bt.scale && !__builtin_add_overflow(sum->v.dec, x->v.dec, &quick) &&
            em_rdec_fits_i128(quick, bt.precision)) {
            sum->v.dec = quick; /* same scale: the exact sum, which fits */
            return EM_OK;
        }
        rdec s, v, r;
        em_rdec_from_i128(&s, sum->v.dec, bt.scale);
        em_rdec_from_i128(&v, x->v.dec, xt.scale);
        em_rdec_add(&s, &v, false, &r);
        if (!em_rdec_to_precision(&r, bt.precision, bt.scale, &sum->v.dec)) {
            if (a->ansi)
                return overflow(a, err);
            *sum = em_datum_null();
        }
        return EM_OK;
    }
    if (bt.id == EM_TYPE_LONG) {
        __int128 r = (__int128)(sum->is_null ? 0 : sum->v.i64) + x->v.i64;
        if (r != (int64_t)r && a->ansi)
            return overflow(a, err);
        sum->is_null = false;
        sum->v.i64 = (int64_t)(uint64_t)(unsigned __int128)r;
        return EM_OK;
    }
    sum->v.f64 = (sum->is_null ? 0.0 : sum->v.f64) + x->v.f64;
    sum->is_null = false;
    return EM_OK;
}

static em_status keep(em_datum *slot, const em_datum *v, em_type t, em_row_arena *arena,
                      em_error *err) {
    return em_datum_copy(slot, v, t, arena, err);
}

static void moment_update(em_datum *b, double x) {
    double n = b[0].v.f64 + 1.0, delta = x - b[1].v.f64, delta_n = delta / n;
    b[1].v.f64 += delta_n;
    b[2].v.f64 += delta * (delta - delta_n);
    b[0].v.f64 = n;
}

em_status em_ragg_update(em_ragg *a, em_datum *buf, const em_datum *row, em_row_arena *arena,
                         em_error *err) {
    if (!a->args[0])
        return EM_FAIL(err, EM_ERR_INVALID,
                       "aggregate update needs its arguments in the input (merge instead)");
    em_datum x;
    EM_TRY(em_rexpr_eval(a->args[0], row, arena, &x, err));
    em_type xt = a->in_type;
    if (a->kind == EM_AGGFN_COUNT) {
        bool all = !x.is_null;
        for (int i = 1; i < a->n_args && all; i++) {
            em_datum y;
            EM_TRY(em_rexpr_eval(a->args[i], row, arena, &y, err));
            all = !y.is_null;
        }
        buf[0].v.i64 += all;
        return EM_OK;
    }
    if (a->kind == EM_AGGFN_FIRST || a->kind == EM_AGGFN_LAST) {
        if (a->ignore_nulls && x.is_null)
            return EM_OK;
        if (a->kind == EM_AGGFN_FIRST && buf[1].v.b)
            return EM_OK;
        buf[1].is_null = false;
        buf[1].v.b = true;
        return keep(&buf[0], &x, a->buf[0], arena, err);
    }
    if (x.is_null)
        return EM_OK;
    row_cast_ctx cc = {false, "aggregate input"};
    switch (a->kind) {
    case EM_AGGFN_SUM:
    case EM_AGGFN_AVG: {
        em_datum v = x;
        em_type vt = xt;
        if (a->buf[0].id != EM_TYPE_DECIMAL) {
            /* child.cast(sum type) */
            EM_TRY(em_row_cast(&cc, &x, xt, a->buf[0], arena, &v, err));
            vt = a->buf[0];
        }
        EM_TRY(add_to_sum(a, &buf[0], &v, vt, err));
        if (a->kind == EM_AGGFN_AVG)
            buf[1].v.i64++;
        else if (a->buf[0].id == EM_TYPE_DECIMAL)
            buf[1].v.b = false;
        return EM_OK;
    }
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX: {
        if (!buf[0].is_null) {
            int c = em_datum_compare(&x, &buf[0], xt);
            if (a->kind == EM_AGGFN_MIN ? c >= 0 : c <= 0)
                return EM_OK;
        }
        return keep(&buf[0], &x, xt, arena, err);
    }
    default: {
        em_datum dv;
        EM_TRY(em_row_cast(&cc, &x, xt, em_type_make(EM_TYPE_DOUBLE), arena, &dv, err));
        moment_update(buf, dv.v.f64);
        return EM_OK;
    }
    }
}

em_status em_ragg_merge(em_ragg *a, em_datum *buf, const em_datum *o, em_row_arena *arena,
                        em_error *err) {
    switch (a->kind) {
    case EM_AGGFN_SUM:
        if (a->buf[0].id == EM_TYPE_DECIMAL) {
            bool l_empty = buf[1].v.b, r_empty = o[1].is_null || o[1].v.b;
            bool overflowed = (!l_empty && buf[0].is_null) || (!r_empty && o[0].is_null);
            if (overflowed)
                buf[0] = em_datum_null();
            else if (!o[0].is_null)
                EM_TRY(add_to_sum(a, &buf[0], &o[0], a->buf[0], err));
            buf[1].v.b = l_empty && r_empty;
            return EM_OK;
        }
        if (!o[0].is_null)
            EM_TRY(add_to_sum(a, &buf[0], &o[0], a->buf[0], err));
        return EM_OK;
    case EM_AGGFN_AVG:
        /* Add(sum.left, sum.right): null on either side is null */
        if (o[0].is_null)
            buf[0] = em_datum_null();
        else if (!buf[0].is_null)
            EM_TRY(add_to_sum(a, &buf[0], &o[0], a->buf[0], err));
        buf[1].v.i64 += o[1].is_null ? 0 : o[1].v.i64;
        return EM_OK;
    case EM_AGGFN_COUNT:
        buf[0].v.i64 += o[0].is_null ? 0 : o[0].v.i64;
        return EM_OK;
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX:
        if (o[0].is_null)
            return EM_OK;
        if (!buf[0].is_null) {
            int c = em_datum_compare(&o[0], &buf[0], a->buf[0]);
            if (a->kind == EM_AGGFN_MIN ? c >= 0 : c <= 0)
                return EM_OK;
        }
        return keep(&buf[0], &o[0], a->buf[0], arena, err);
    case EM_AGGFN_FIRST:
    case EM_AGGFN_LAST: {
        bool r_set = !o[1].is_null && o[1].v.b;
        /* first: the left value once set; last: the right value when set */
        bool take = a->kind == EM_AGGFN_FIRST ? !buf[1].v.b && r_set : r_set;
        if (take) {
            EM_TRY(keep(&buf[0], &o[0], a->buf[0], arena, err));
            buf[1].v.b = true;
        }
        return EM_OK;
    }
    default: {
        double n1 = buf[0].v.f64, n2 = o[0].is_null ? 0 : o[0].v.f64;
        double n = n1 + n2, delta = o[1].v.f64 - buf[1].v.f64;
        double delta_n = n == 0.0 ? 0.0 : delta / n;
        buf[1].v.f64 += delta_n * n2;
        /* m2.left + m2.right + delta * deltaN * n1 * n2, left to right */
        buf[2].v.f64 = buf[2].v.f64 + o[2].v.f64 + delta * delta_n * n1 * n2;
        buf[0].v.f64 = n;
        return EM_OK;
    }
    }
}

em_status em_ragg_eval(em_ragg *a, const em_datum *buf, em_row_arena *arena, em_datum *out,
                       em_error *err) {
    (void)arena;
    *out = buf[0];
    switch (a->kind) {
    case EM_AGGFN_SUM:
        if (a->buf[0].id == EM_TYPE_DECIMAL) {
            if (buf[1].v.b)
                *out = em_datum_null();
            else if (buf[0].is_null && a->ansi)
                return overflow(a, err);
        }
        return EM_OK;
    case EM_AGGFN_AVG: {
        if (buf[1].v.i64 == 0) {
            *out = em_datum_null();
            return EM_OK;
        }
        if (a->buf[0].id != EM_TYPE_DECIMAL) {
            memset(out, 0, sizeof *out);
            out->v.f64 = buf[0].v.f64 / (double)buf[1].v.i64;
            return EM_OK;
        }
        if (buf[0].is_null) { /* CheckOverflowInSum */
            if (a->ansi)
                return overflow(a, err);
            return EM_OK;
        }
        /* DecimalDivideWithOverflowCheck: Decimal's division (scale 38,
         * HALF_UP), then toPrecision to the result type, null on overflow
         * unless ANSI */
        rdec s, c, q;
        em_rdec_from_i128(&s, buf[0].v.dec, a->buf[0].scale);
        em_rdec_from_i128(&c, buf[1].v.i64, 0);
        em_rdec_div(&s, &c, &q);
        memset(out, 0, sizeof *out);
        if (!em_rdec_to_precision(&q, a->result.precision, a->result.scale, &out->v.dec)) {
            if (a->ansi)
                return overflow(a, err);
            *out = em_datum_null();
        }
        return EM_OK;
    }
    case EM_AGGFN_STDDEV_SAMP:
    case EM_AGGFN_STDDEV_POP:
    case EM_AGGFN_VAR_SAMP:
    case EM_AGGFN_VAR_POP: {
        double n = buf[0].v.f64;
        bool samp = a->kind == EM_AGGFN_STDDEV_SAMP || a->kind == EM_AGGFN_VAR_SAMP;
        if (n == 0.0 || (samp && n == 1.0)) {
            *out = em_datum_null();
            return EM_OK;
        }
        double var = buf[2].v.f64 / (samp ? n - 1.0 : n);
        memset(out, 0, sizeof *out);
        out->v.f64 =
            a->kind == EM_AGGFN_STDDEV_SAMP || a->kind == EM_AGGFN_STDDEV_POP ? sqrt(var) : var;
        return EM_OK;
    }
    default:
        return EM_OK;
    }
}
