/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Aggregate functions with Spark's buffers and semantics
 * (catalyst/expressions/aggregate/{Sum,Average,Count,Max,Min,First}.scala).
 *
 * State: one slot per group in two flat arrays, b0 (the first buffer
 * attribute as a scalar: sum, min, max, first) and b1 (the second as an
 * integer: isEmpty, count, valueSet). Strings kept by min/max/first are
 * copied into per-group heap strings owned by the state.
 *
 * Semantics, as Spark evaluates them on UnsafeRow buffers:
 *   sum(decimal)  sum starts at 0 and isEmpty at true; each non-null input
 *                 adds exactly; a sum that no longer fits the buffer type
 *                 decimal(min(38,p+10),s) becomes null and stays null (the
 *                 buffer row cannot hold it), or raises in ANSI mode. Final:
 *                 null when isEmpty, null (or error) when overflowed.
 *   sum(integral) long buffer, null until the first non-null input, Java
 *                 wraparound (or ARITHMETIC_OVERFLOW in ANSI). Double alike.
 *   avg           [sum, count]: sum as above but starting at 0, count of
 *                 non-null inputs. Final: null when count = 0; decimal avg
 *                 is Divide(sum, cast(count as decimal(20,0))) with Spark's
 *                 decimal division, then cast to decimal(p+4,s+4) HALF_UP;
 *                 other avg is sum / count in double.
 *   count         long, +1 per row whose arguments are all non-null.
 *   min, max      Spark ordering (NaN greatest), nulls ignored.
 *   first, last   [first|last, valueSet]; (x, true) skips nulls.
 *   stddev_samp, stddev_pop, var_samp, var_pop
 *                 CentralMomentAgg: [n, avg, m2] in double, updated as
 *                 n' = n + 1, delta = x - avg, avg' = avg + delta / n',
 *                 m2' = m2 + delta * (delta - delta / n'), merged with
 *                 Chan's formula; the sample forms are null for n <= 1
 *                 (spark.sql.legacy.statisticalAggregate=false).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/internal.h"
#include "shims/shim.h"

#define AGG_MAX_ARGS 8

struct em_agg_fn {
    em_agg_kind kind;
    em_agg_mode mode;
    bool ansi;
    bool ignore_nulls;  /* first(x, true) */
    em_type input_type; /* type of the (first) argument */
    em_type result_type;
    int n_buffers;
    em_type buf_types[3];
    const char *buf_names[3];
    int n_args;
    em_expr_prog *args[AGG_MAX_ARGS]; /* owned; PARTIAL mode only */
    const em_expr *src;               /* borrowed: messages */
    const em_shim *shim;
};

struct em_agg_state {
    const em_agg_fn *fn; /* borrowed */
    em_pool *pool;       /* borrowed */
    int64_t n, cap;
    ex_value *b0; /* owned */
    int64_t *b1;  /* owned */
    double *mom;  /* owned: n, avg, m2 per group (moment aggregates only) */
    /* groups each array has room for: cap, or more after a growth that
     * failed half way and could not be undone */
    int64_t cap0, cap1, cap_mom;
};

static bool is_moment(em_agg_kind k) {
    return k == EM_AGGFN_STDDEV_SAMP || k == EM_AGGFN_STDDEV_POP || k == EM_AGGFN_VAR_SAMP ||
           k == EM_AGGFN_VAR_POP;
}

static em_status agg_overflow(const em_agg_fn *fn, em_error *err) {
    char d[256];
    em_ex_describe(fn->src, d, sizeof d);
    return EM_FAIL(err, EM_ERR_OVERFLOW,
                   "[ARITHMETIC_OVERFLOW] overflow in aggregate %s (set "
                   "spark.sql.ansi.enabled=false to get null)",
                   d);
}

/* ------------------------------------------------------------------ compile */

static bool kind_of(const char *name, em_agg_kind *k) {
    static const struct {
        const char *n;
        em_agg_kind k;
    } names[] = {{"sum", EM_AGGFN_SUM},
                 {"avg", EM_AGGFN_AVG},
                 {"mean", EM_AGGFN_AVG},
                 {"count", EM_AGGFN_COUNT},
                 {"min", EM_AGGFN_MIN},
                 {"max", EM_AGGFN_MAX},
                 {"first", EM_AGGFN_FIRST},
                 {"first_value", EM_AGGFN_FIRST},
                 {"last", EM_AGGFN_LAST},
                 {"last_value", EM_AGGFN_LAST},
                 {"stddev_samp", EM_AGGFN_STDDEV_SAMP},
                 {"stddev", EM_AGGFN_STDDEV_SAMP},
                 {"std", EM_AGGFN_STDDEV_SAMP},
                 {"stddev_pop", EM_AGGFN_STDDEV_POP},
                 {"var_samp", EM_AGGFN_VAR_SAMP},
                 {"variance", EM_AGGFN_VAR_SAMP},
                 {"var_pop", EM_AGGFN_VAR_POP}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(name, names[i].n)) {
            *k = names[i].k;
            return true;
        }
    return false;
}

static bool attrs_present(const em_expr *e, const em_expr *const *in, int n) {
    if (e->kind == EM_EXPR_ATTR) {
        for (int i = 0; i < n; i++)
            if (in[i] && in[i]->id == e->id)
                return true;
        return false;
    }
    for (int i = 0; i < e->n_args; i++)
        if (!attrs_present(e->args[i], in, n))
            return false;
    return true;
}

em_status em_agg_compile(const em_expr *agg, const em_expr *const *input_attrs, int n_input,
                         const em_expr_compile_options *opts, em_agg_fn **out, em_error *err) {
    *out = NULL;
    if (!agg || agg->kind != EM_EXPR_AGG)
        return EM_FAIL(err, EM_ERR_INVALID, "not an aggregate expression");
    em_agg_kind kind;
    if (!agg->name || !kind_of(agg->name, &kind)) {
        char d[256];
        em_ex_describe(agg, d, sizeof d);
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "unsupported aggregate function: %s", d);
    }
    em_agg_fn *fn = calloc(1, sizeof *fn);
    if (!fn)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory compiling an aggregate");
    fn->kind = kind;
    fn->mode = agg->mode;
    fn->ansi = opts && opts->ansi;
    fn->shim = opts ? opts->shim : NULL;
    fn->src = agg;
    em_status st = EM_OK;
    int n_val_args = agg->n_args;
    if ((kind == EM_AGGFN_FIRST || kind == EM_AGGFN_LAST) && agg->n_args == 2 &&
        agg->args[1]->kind == EM_EXPR_LITERAL) {
        fn->ignore_nulls = !strcmp(agg->args[1]->text, "true");
        n_val_args = 1;
    }
    if (n_val_args < 1 || n_val_args > AGG_MAX_ARGS ||
        (kind != EM_AGGFN_COUNT && n_val_args != 1)) {
        st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "aggregate %s with %d arguments", agg->name,
                     agg->n_args);
        goto fail;
    }
    fn->n_args = n_val_args;
    /* the argument type: compiled in PARTIAL mode, from the tree otherwise */
    bool compile_args = agg->mode == EM_AGG_PARTIAL || attrs_present(agg, input_attrs, n_input);
    if (compile_args) {
        for (int i = 0; i < n_val_args; i++) {
            st = em_expr_compile(agg->args[i], input_attrs, n_input, opts, &fn->args[i], err);
            if (st != EM_OK)
                goto fail;
        }
        fn->input_type = em_expr_prog_type(fn->args[0]);
    } else if (agg->args[0]->type_known) {
        fn->input_type = agg->args[0]->type;
    } else if (kind != EM_AGGFN_COUNT) {
        st = EM_FAIL(err, EM_ERR_TYPE, "the argument type of aggregate %s is unknown", agg->name);
        goto fail;
    }
    em_type t = fn->input_type;
    em_type lng = em_type_make(EM_TYPE_LONG), dbl = em_type_make(EM_TYPE_DOUBLE);
    switch (kind) {
    case EM_AGGFN_SUM:
        if (t.id == EM_TYPE_DECIMAL) {
            fn->result_type = em_shim_decimal_adjust(t.precision + 10, t.scale, false);
            fn->n_buffers = 2;
            fn->buf_types[1] = em_type_make(EM_TYPE_BOOLEAN);
            fn->buf_names[1] = "isEmpty";
        } else if (em_ex_type_is_integral(t)) {
            fn->result_type = lng;
            fn->n_buffers = 1;
        } else if (t.id == EM_TYPE_DOUBLE || t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_NULL) {
            fn->result_type = dbl;
            fn->n_buffers = 1;
        } else {
            goto bad_type;
        }
        fn->buf_types[0] = fn->result_type;
        fn->buf_names[0] = "sum";
        break;
    case EM_AGGFN_AVG:
        if (t.id == EM_TYPE_DECIMAL) {
            fn->buf_types[0] = em_shim_decimal_adjust(t.precision + 10, t.scale, false);
            fn->result_type = em_shim_decimal_adjust(t.precision + 4, t.scale + 4, false);
        } else if (em_ex_type_is_numeric(t) || t.id == EM_TYPE_NULL) {
            fn->buf_types[0] = dbl;
            fn->result_type = dbl;
        } else {
            goto bad_type;
        }
        fn->n_buffers = 2;
        fn->buf_names[0] = "sum";
        fn->buf_types[1] = lng;
        fn->buf_names[1] = "count";
        break;
    case EM_AGGFN_COUNT:
        fn->result_type = lng;
        fn->n_buffers = 1;
        fn->buf_types[0] = lng;
        fn->buf_names[0] = "count";
        break;
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX:
        fn->result_type = t;
        fn->n_buffers = 1;
        fn->buf_types[0] = t;
        fn->buf_names[0] = kind == EM_AGGFN_MIN ? "min" : "max";
        break;
    case EM_AGGFN_FIRST:
    case EM_AGGFN_LAST:
        fn->result_type = t;
        fn->n_buffers = 2;
        fn->buf_types[0] = t;
        fn->buf_names[0] = kind == EM_AGGFN_FIRST ? "first" : "last";
        fn->buf_types[1] = em_type_make(EM_TYPE_BOOLEAN);
        fn->buf_names[1] = "valueSet";
        break;
    case EM_AGGFN_STDDEV_SAMP:
    case EM_AGGFN_STDDEV_POP:
    case EM_AGGFN_VAR_SAMP:
    case EM_AGGFN_VAR_POP:
        if (!em_ex_type_is_numeric(t) && t.id != EM_TYPE_NULL)
            goto bad_type;
        fn->result_type = dbl;
        fn->n_buffers = 3;
        for (int b = 0; b < 3; b++)
            fn->buf_types[b] = dbl;
        fn->buf_names[0] = "n";
        fn->buf_names[1] = "avg";
        fn->buf_names[2] = "m2";
        break;
    }
    *out = fn;
    return EM_OK;
bad_type : {
    char tn[32];
    em_type_format(t, tn, sizeof tn);
    st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "aggregate %s of %s", agg->name, tn);
}
fail:
    em_agg_fn_destroy(fn);
    return st;
}

void em_agg_fn_destroy(em_agg_fn *fn) {
    if (!fn)
        return;
    for (int i = 0; i < AGG_MAX_ARGS; i++)
        em_expr_prog_destroy(fn->args[i]);
    free(fn);
}

em_agg_kind em_agg_fn_kind(const em_agg_fn *fn) { return fn->kind; }
em_agg_mode em_agg_fn_mode(const em_agg_fn *fn) { return fn->mode; }
bool em_agg_fn_has_args(const em_agg_fn *fn) { return fn->args[0] != NULL; }
int em_agg_n_buffers(const em_agg_fn *fn) { return fn->n_buffers; }
em_type em_agg_buffer_type(const em_agg_fn *fn, int i) { return fn->buf_types[i]; }
const char *em_agg_buffer_name(const em_agg_fn *fn, int i) { return fn->buf_names[i]; }
em_type em_agg_result_type(const em_agg_fn *fn) { return fn->result_type; }

/* ------------------------------------------------------------------ state */

static bool owns_strings(const em_agg_fn *fn) { return em_type_is_varlen(fn->buf_types[0]); }

static void init_group(const em_agg_fn *fn, ex_value *b0, int64_t *b1) {
    memset(b0, 0, sizeof *b0);
    *b1 = 0;
    switch (fn->kind) {
    case EM_AGGFN_SUM:
        if (fn->buf_types[0].id == EM_TYPE_DECIMAL) {
            b0->dec = 0; /* sum = 0, isEmpty = true */
            *b1 = 1;
        } else {
            b0->null = true;
        }
        break;
    case EM_AGGFN_AVG:
    case EM_AGGFN_COUNT:
        break; /* zeros */
    default:
        b0->null = true;
        break;
    }
}

em_status em_agg_state_create(const em_agg_fn *fn, em_pool *pool, em_agg_state **out,
                              em_error *err) {
    *out = calloc(1, sizeof **out);
    if (!*out)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating aggregate state");
    (*out)->fn = fn;
    (*out)->pool = pool;
    return EM_OK;
}

static void free_string(ex_value *v) {
    free((void *)v->s);
    v->s = NULL;
    v->len = 0;
}

void em_agg_state_destroy(em_agg_state *st) {
    if (!st)
        return;
    if (owns_strings(st->fn))
        for (int64_t g = 0; g < st->n; g++)
            free_string(&st->b0[g]);
    em_pool_free(st->pool, st->b0, st->cap0 * (int64_t)sizeof *st->b0);
    em_pool_free(st->pool, st->b1, st->cap1 * (int64_t)sizeof *st->b1);
    em_pool_free(st->pool, st->mom, st->cap_mom * 3 * (int64_t)sizeof *st->mom);
    free(st);
}

int64_t em_agg_state_groups(const em_agg_state *st) { return st->n; }

/* Gives array *p (room for *have groups of `width` bytes) room for `want`;
 * false when refused. Large arrays grow in place (em_pool_realloc). */
static bool regrow(em_pool *pool, void **p, int64_t *have, int64_t want, int64_t width,
                   em_error *err) {
    if (*have == want)
        return true;
    void *q = em_pool_realloc(pool, *p, *have * width, want * width, err);
    if (!q)
        return false;
    *p = q;
    *have = want;
    return true;
}

em_status em_agg_state_resize(em_agg_state *st, int64_t n_groups, em_error *err) {
    if (n_groups > st->cap) {
        int64_t cap = st->cap ? st->cap : 16;
        while (cap < n_groups)
            cap *= 2;
        bool mom = is_moment(st->fn->kind);
        bool ok = regrow(st->pool, (void **)&st->b0, &st->cap0, cap, sizeof *st->b0, err) &&
                  regrow(st->pool, (void **)&st->b1, &st->cap1, cap, sizeof *st->b1, err) &&
                  (!mom || regrow(st->pool, (void **)&st->mom, &st->cap_mom, cap,
                                  3 * sizeof *st->mom, err));
        if (!ok) {
            /* as it was, so that what a spill frees is all the state held
             * (shrinking needs no more than the growth had) */
            em_status code = err ? err->code : EM_ERR_NOMEM;
            (void)regrow(st->pool, (void **)&st->b0, &st->cap0, st->cap, sizeof *st->b0, NULL);
            (void)regrow(st->pool, (void **)&st->b1, &st->cap1, st->cap, sizeof *st->b1, NULL);
            if (mom)
                (void)regrow(st->pool, (void **)&st->mom, &st->cap_mom, st->cap,
                             3 * sizeof *st->mom, NULL);
            return code;
        }
        st->cap = cap;
    }
    for (int64_t g = st->n; g < n_groups; g++) {
        init_group(st->fn, &st->b0[g], &st->b1[g]);
        if (st->mom) /* n = avg = m2 = 0.0 */
            st->mom[3 * g] = st->mom[3 * g + 1] = st->mom[3 * g + 2] = 0.0;
    }
    st->n = n_groups > st->n ? n_groups : st->n;
    return EM_OK;
}

/* ------------------------------------------------------------------ folding */

/* b0 += v in the buffer type; overflow -> null or error. */
static em_status add_into(const em_agg_fn *fn, ex_value *b0, const ex_value *v, em_type vt,
                          em_error *err) {
    em_type bt = fn->buf_types[0];
    switch (bt.id) {
    case EM_TYPE_DECIMAL: {
        if (b0->null)
            return EM_OK; /* overflowed earlier: stays null */
        em_i128 x = v->dec, r;
        bool ok;
        if (vt.scale == bt.scale)
            ok = !__builtin_add_overflow(b0->dec, x, &r) && em_dec_fits(r, bt.precision);
        else
            ok = em_dec_add(b0->dec, bt.scale, x, vt.scale, false, bt.precision, bt.scale, &r);
        if (!ok) {
            if (fn->ansi)
                return agg_overflow(fn, err);
            b0->null = true;
            return EM_OK;
        }
        b0->dec = r;
        return EM_OK;
    }
    case EM_TYPE_LONG: {
        int64_t r;
        int64_t base = b0->null ? 0 : b0->i;
        if (__builtin_add_overflow(base, v->i, &r) && fn->ansi)
            return agg_overflow(fn, err);
        b0->i = r;
        b0->null = false;
        return EM_OK;
    }
    default: {
        double x = vt.id == EM_TYPE_DOUBLE || vt.id == EM_TYPE_FLOAT ? v->d : (double)v->i;
        b0->d = (b0->null ? 0.0 : b0->d) + x;
        b0->null = false;
        return EM_OK;
    }
    }
}

static em_status keep_value(const em_agg_fn *fn, ex_value *b0, const ex_value *v, em_error *err) {
    if (owns_strings(fn)) {
        free_string(b0);
        if (!v->null) {
            char *copy = malloc((size_t)v->len + 1);
            if (!copy)
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory in aggregate state");
            memcpy(copy, v->s, (size_t)v->len);
            b0->s = copy;
            b0->len = v->len;
        }
        b0->null = v->null;
        return EM_OK;
    }
    *b0 = *v;
    return EM_OK;
}

/* Folds one input value (update) or one partial buffer (merge: v1 is the
 * second buffer) into group state. */
static em_status fold(const em_agg_fn *fn, ex_value *b0, int64_t *b1, const ex_value *v, em_type vt,
                      bool merge, int64_t v1, bool v1_null, em_error *err) {
    switch (fn->kind) {
    case EM_AGGFN_SUM:
        if (fn->buf_types[0].id == EM_TYPE_DECIMAL && merge) {
            /* bufferOverflow || inputOverflow -> null; isEmpty = l && r */
            bool in_empty = v1_null ? false : v1 != 0;
            if (!in_empty && v->null)
                b0->null = true;
            else if (!in_empty)
                EM_TRY(add_into(fn, b0, v, vt, err));
            *b1 = *b1 && in_empty;
            return EM_OK;
        }
        if (v->null)
            return EM_OK;
        EM_TRY(add_into(fn, b0, v, vt, err));
        if (fn->buf_types[0].id == EM_TYPE_DECIMAL)
            *b1 = 0;
        return EM_OK;
    case EM_AGGFN_AVG:
        if (merge) {
            /* sum.left + sum.right: null propagates; counts add */
            if (v->null && !v1_null && v1 > 0 && fn->buf_types[0].id == EM_TYPE_DECIMAL)
                b0->null = true;
            else if (!v->null)
                EM_TRY(add_into(fn, b0, v, vt, err));
            *b1 += v1_null ? 0 : v1;
            return EM_OK;
        }
        if (v->null)
            return EM_OK;
        EM_TRY(add_into(fn, b0, v, vt, err));
        (*b1)++;
        return EM_OK;
    case EM_AGGFN_COUNT:
        if (merge)
            b0->i += v->null ? 0 : v->i;
        else
            b0->i += !v->null;
        return EM_OK;
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX: {
        if (v->null)
            return EM_OK;
        if (!b0->null) {
            int c = em_ex_compare(v, vt, b0, fn->buf_types[0]);
            if (fn->kind == EM_AGGFN_MIN ? c >= 0 : c <= 0)
                return EM_OK;
        }
        return keep_value(fn, b0, v, err);
    }
    case EM_AGGFN_FIRST:
        if (*b1)
            return EM_OK;
        if (merge) {
            if (v1_null || !v1)
                return EM_OK;
        } else if (fn->ignore_nulls && v->null) {
            return EM_OK;
        }
        *b1 = 1;
        return keep_value(fn, b0, v, err);
    case EM_AGGFN_LAST:
        /* update: the latest row (non-null one when ignoring nulls);
         * merge: the right side's value when it has one */
        if (merge) {
            if (v1_null || !v1)
                return EM_OK;
        } else if (fn->ignore_nulls && v->null) {
            return EM_OK;
        }
        *b1 = 1;
        return keep_value(fn, b0, v, err);
    default: /* moments fold through moment_update / moment_merge */
        return EM_OK;
    }
}

/* CentralMomentAgg.updateExpressions for one non-null x. */
static void moment_update(double *m, double x) {
    double n = m[0] + 1.0;
    double delta = x - m[1];
    double delta_n = delta / n;
    m[1] = m[1] + delta_n;
    m[2] = m[2] + delta * (delta - delta_n);
    m[0] = n;
}

/* CentralMomentAgg.mergeExpressions (Chan et al.). */
static void moment_merge(double *m, double n2, double avg2, double m2_2) {
    double n1 = m[0];
    double n = n1 + n2;
    double delta = avg2 - m[1];
    double delta_n = n == 0.0 ? 0.0 : delta / n;
    m[1] = m[1] + delta_n * n2;
    m[2] = m[2] + m2_2 + delta * delta_n * n1 * n2;
    m[0] = n;
}

/* True when count's arguments are constants that are never null. */
static bool count_all_rows(const em_agg_fn *fn) {
    for (int a = 0; a < fn->n_args; a++) {
        const em_expr_prog *p = fn->args[a];
        const ex_step *root = &p->steps[p->n_steps - 1];
        if (root->op != EX_CONST || root->k.null)
            return false;
    }
    return true;
}

/* Typed loops for the hot cases (decimal, long and double sums and
 * averages, count of a column); *handled stays false for everything else,
 * which goes through the generic fold with the same results. */
#define AGG_PREFETCH 16
/* States of fewer groups stay in cache: no prefetching there. */
#define AGG_PREFETCH_MIN_GROUPS 16384

static em_status update_fast(const em_agg_fn *fn, em_agg_state *st, const int32_t *ids,
                             const em_batch *in, const em_column *c, bool *handled, em_error *err) {
    *handled = false;
    int64_t n = em_batch_rows(in);
    const int32_t *sel = in->sel;
    bool pf = st->n >= AGG_PREFETCH_MIN_GROUPS;
    em_type bt = fn->buf_types[0], vt = c->type;
    bool is_avg = fn->kind == EM_AGGFN_AVG;
    if (vt.id == EM_TYPE_NULL)
        return EM_OK;
    if (fn->kind == EM_AGGFN_COUNT) {
        for (int64_t k = 0; k < n; k++) {
            if (pf && k + AGG_PREFETCH < n)
                __builtin_prefetch(&st->b0[ids[k + AGG_PREFETCH]], 1);
            st->b0[ids[k]].i += em_column_is_valid(c, sel ? sel[k] : k);
        }
        *handled = true;
        return EM_OK;
    }
    if (fn->kind != EM_AGGFN_SUM && !is_avg)
        return EM_OK;
    if (bt.id == EM_TYPE_DECIMAL && vt.id == EM_TYPE_DECIMAL && vt.scale == bt.scale) {
        const em_i128 *v = (const em_i128 *)c->values->data;
        /* |sum| < 10^precision, as em_dec_fits says; 39 digits: anything in 128 bits */
        const em_i128 lim = bt.precision >= 39 ? 0 : em_dec_pow10(bt.precision);
        for (int64_t k = 0; k < n; k++) {
            int64_t i = sel ? sel[k] : k;
            /* many groups: the states miss the cache, ask ahead */
            if (pf && k + AGG_PREFETCH < n) {
                __builtin_prefetch(&st->b0[ids[k + AGG_PREFETCH]], 1);
                __builtin_prefetch(&st->b1[ids[k + AGG_PREFETCH]], 1);
            }
            if (!em_column_is_valid(c, i))
                continue;
            int32_t g = ids[k];
            ex_value *b = &st->b0[g];
            if (is_avg)
                st->b1[g]++;
            else
                st->b1[g] = 0; /* isEmpty = false */
            if (b->null)
                continue;
            em_i128 r;
            if (__builtin_add_overflow(b->dec, v[i], &r) || (lim && (r >= lim || r <= -lim))) {
                if (fn->ansi)
                    return agg_overflow(fn, err);
                b->null = true;
                continue;
            }
            b->dec = r;
        }
        *handled = true;
        return EM_OK;
    }
    if (bt.id == EM_TYPE_LONG && (vt.id == EM_TYPE_LONG || vt.id == EM_TYPE_INT)) {
        for (int64_t k = 0; k < n; k++) {
            int64_t i = sel ? sel[k] : k;
            if (!em_column_is_valid(c, i))
                continue;
            if (pf && k + AGG_PREFETCH < n)
                __builtin_prefetch(&st->b0[ids[k + AGG_PREFETCH]], 1);
            ex_value *b = &st->b0[ids[k]];
            int64_t x = vt.id == EM_TYPE_LONG ? ((const int64_t *)c->values->data)[i]
                                              : ((const int32_t *)c->values->data)[i];
            int64_t r;
            if (__builtin_add_overflow(b->null ? 0 : b->i, x, &r) && fn->ansi)
                return agg_overflow(fn, err);
            b->i = r;
            b->null = false;
        }
        *handled = true;
        return EM_OK;
    }
    if (bt.id == EM_TYPE_DOUBLE &&
        (vt.id == EM_TYPE_DOUBLE || vt.id == EM_TYPE_LONG || vt.id == EM_TYPE_INT)) {
        /* child.cast(DoubleType): avg(UnscaledValue(x)) feeds longs */
        const void *v = c->values->data;
        for (int64_t k = 0; k < n; k++) {
            int64_t i = sel ? sel[k] : k;
            if (!em_column_is_valid(c, i))
                continue;
            int32_t g = ids[k];
            if (pf && k + AGG_PREFETCH < n) {
                __builtin_prefetch(&st->b0[ids[k + AGG_PREFETCH]], 1);
                __builtin_prefetch(&st->b1[ids[k + AGG_PREFETCH]], 1);
            }
            ex_value *b = &st->b0[g];
            double x = vt.id == EM_TYPE_DOUBLE ? ((const double *)v)[i]
                       : vt.id == EM_TYPE_LONG ? (double)((const int64_t *)v)[i]
                                               : (double)((const int32_t *)v)[i];
            b->d = (b->null ? 0.0 : b->d) + x;
            b->null = false;
            if (is_avg)
                st->b1[g]++;
        }
        *handled = true;
        return EM_OK;
    }
    return EM_OK;
}

/* Group ids are checked before anything is folded, so a bad id leaves the
 * state untouched. */
static em_status check_groups(const em_agg_state *st, const int32_t *group_ids, int64_t n,
                              em_error *err) {
    /* every function of every batch checks its ids: a branch-free pass */
    int32_t lo = 0, hi = 0;
    for (int64_t k = 0; k < n; k++) {
        lo = group_ids[k] < lo ? group_ids[k] : lo;
        hi = group_ids[k] > hi ? group_ids[k] : hi;
    }
    if (n == 0 || (lo >= 0 && hi < st->n))
        return EM_OK;
    int32_t bad = lo < 0 ? lo : hi;
    return EM_FAIL(err, EM_ERR_INVALID, "group id %d outside the state's %lld groups", bad,
                   (long long)st->n);
}

em_status em_agg_update(const em_agg_fn *fn, em_agg_state *st, const int32_t *group_ids,
                        const em_batch *in, em_error *err) {
    EM_TRY(check_groups(st, group_ids, em_batch_rows(in), err));
    if (!fn->args[0])
        return EM_FAIL(err, EM_ERR_INVALID,
                       "aggregate update needs its arguments in the input (merge instead)");
    int64_t n = em_batch_rows(in);
    if (fn->kind == EM_AGGFN_COUNT && count_all_rows(fn)) {
        /* count(1), count(*): nothing to evaluate */
        for (int64_t k = 0; k < n; k++)
            st->b0[group_ids[k]].i++;
        return EM_OK;
    }
    em_column cols[AGG_MAX_ARGS];
    memset(cols, 0, sizeof cols);
    em_status rc = EM_OK;
    int done = 0;
    while (done < fn->n_args && rc == EM_OK) {
        /* a bare column is read where it lies: only the selected rows are */
        int c = em_expr_prog_input(fn->args[done]);
        if (c >= 0 && c < in->n_cols &&
            em_type_equal(in->cols[c].type, em_expr_prog_type(fn->args[done])))
            em_column_share(&cols[done], &in->cols[c]);
        else
            rc = em_expr_eval(fn->args[done], in, in->pool, &cols[done], err);
        done++;
    }
    em_type vt = cols[0].type;
    bool handled = false;
    if (rc == EM_OK && fn->n_args == 1)
        rc = update_fast(fn, st, group_ids, in, &cols[0], &handled, err);
    for (int64_t k = 0; k < n && rc == EM_OK && !handled; k++) {
        int64_t i = in->sel ? in->sel[k] : k;
        int32_t g = group_ids[k];
        ex_value v;
        em_ex_get(&cols[0], i, &v);
        if (is_moment(fn->kind)) {
            if (v.null)
                continue;
            ex_value dv;
            rc = em_ex_cast_value(&v, vt, em_type_make(EM_TYPE_DOUBLE), false, "aggregate input", &dv,
                               NULL, err);
            if (rc == EM_OK && !dv.null)
                moment_update(&st->mom[3 * g], dv.d);
            continue;
        }
        if (fn->kind == EM_AGGFN_COUNT) {
            /* counted only when every argument is non-null */
            for (int a = 1; a < fn->n_args && !v.null; a++)
                v.null = cols[a].type.id == EM_TYPE_NULL || !em_column_is_valid(&cols[a], i);
        }
        if (!v.null && fn->buf_types[0].id == EM_TYPE_DOUBLE && vt.id != EM_TYPE_DOUBLE &&
            (fn->kind == EM_AGGFN_SUM || fn->kind == EM_AGGFN_AVG)) {
            /* child.cast(DoubleType) */
            ex_value c;
            rc = em_ex_cast_value(&v, vt, fn->buf_types[0], false, "aggregate input", &c, NULL, err);
            v = c;
            if (rc != EM_OK)
                break;
            rc = fold(fn, &st->b0[g], &st->b1[g], &v, fn->buf_types[0], false, 0, false, err);
            continue;
        }
        if (!v.null && fn->kind == EM_AGGFN_SUM && fn->buf_types[0].id == EM_TYPE_LONG)
            vt = em_type_make(EM_TYPE_LONG); /* integral inputs widen to long */
        rc = fold(fn, &st->b0[g], &st->b1[g], &v, vt, false, 0, false, err);
    }
    for (int a = 0; a < done; a++)
        em_column_reset(&cols[a]);
    return rc;
}

em_status em_agg_merge(const em_agg_fn *fn, em_agg_state *st, const int32_t *group_ids,
                       const em_batch *in, int first_col, em_error *err) {
    if (first_col < 0 || first_col + fn->n_buffers > in->n_cols)
        return EM_FAIL(err, EM_ERR_INVALID, "buffer columns %d..%d are outside the input",
                       first_col, first_col + fn->n_buffers - 1);
    for (int j = 0; j < fn->n_buffers; j++) {
        em_type t = in->cols[first_col + j].type;
        if (!em_type_equal(t, fn->buf_types[j])) {
            char a[32], b[32];
            em_type_format(t, a, sizeof a);
            em_type_format(fn->buf_types[j], b, sizeof b);
            return EM_FAIL(err, EM_ERR_TYPE, "aggregate buffer %s is %s, expected %s",
                           fn->buf_names[j], a, b);
        }
    }
    const em_column *c0 = &in->cols[first_col];
    const em_column *c1 = fn->n_buffers > 1 ? &in->cols[first_col + 1] : NULL;
    int64_t n = em_batch_rows(in);
    EM_TRY(check_groups(st, group_ids, n, err));
    if (is_moment(fn->kind)) {
        const em_column *c2 = &in->cols[first_col + 2];
        for (int64_t k = 0; k < n; k++) {
            int64_t i = in->sel ? in->sel[k] : k;
            ex_value a, b, c;
            em_ex_get(c0, i, &a);
            em_ex_get(c1, i, &b);
            em_ex_get(c2, i, &c);
            if (!a.null && !b.null && !c.null)
                moment_merge(&st->mom[3 * group_ids[k]], a.d, b.d, c.d);
        }
        return EM_OK;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t i = in->sel ? in->sel[k] : k;
        int32_t g = group_ids[k];
        ex_value v, v1 = {0};
        em_ex_get(c0, i, &v);
        if (c1)
            em_ex_get(c1, i, &v1);
        EM_TRY(
            fold(fn, &st->b0[g], &st->b1[g], &v, c0->type, true, v1.i, c1 ? v1.null : true, err));
    }
    return EM_OK;
}

/* ------------------------------------------------------------------ output */

static em_status write_value(em_column *c, ex_strw *w, int64_t g, const ex_value *v,
                             em_error *err) {
    if (w)
        return em_ex_strw_put(w, g, v->s, v->len, v->null, err);
    em_ex_put_fixed(c, g, v);
    return EM_OK;
}

em_status em_agg_emit_buffers(const em_agg_fn *fn, const em_agg_state *st, em_pool *pool,
                              em_column *outs, em_error *err) {
    for (int j = 0; j < fn->n_buffers; j++)
        memset(&outs[j], 0, sizeof outs[j]);
    em_status rc = EM_OK;
    for (int j = 0; j < fn->n_buffers && rc == EM_OK; j++) {
        rc = em_ex_col_alloc(&outs[j], fn->buf_types[j], st->n, pool, err);
        if (rc != EM_OK)
            break;
        bool var = em_type_is_varlen(fn->buf_types[j]);
        ex_strw w = {&outs[j], 0};
        for (int64_t g = 0; g < st->n && rc == EM_OK; g++) {
            ex_value v;
            if (st->mom) {
                memset(&v, 0, sizeof v);
                v.d = st->mom[3 * g + j];
            } else if (j == 0) {
                v = st->b0[g];
            } else {
                memset(&v, 0, sizeof v);
                v.i = st->b1[g];
            }
            rc = write_value(&outs[j], var ? &w : NULL, g, &v, err);
        }
        if (rc == EM_OK && var)
            rc = em_ex_strw_finish(&w, st->n, err);
    }
    if (rc != EM_OK)
        for (int j = 0; j < fn->n_buffers; j++)
            em_column_reset(&outs[j]);
    return rc;
}

/* CentralMomentAgg.evaluateExpression: null without rows; the sample
 * forms are null (not NaN) for a single row. */
static void moment_final(em_agg_kind k, const double *m, ex_value *out) {
    double n = m[0];
    bool samp = k == EM_AGGFN_STDDEV_SAMP || k == EM_AGGFN_VAR_SAMP;
    if (n == 0.0 || (samp && n == 1.0)) {
        out->null = true;
        return;
    }
    double var = m[2] / (samp ? n - 1.0 : n);
    out->d = (k == EM_AGGFN_STDDEV_SAMP || k == EM_AGGFN_STDDEV_POP) ? sqrt(var) : var;
}

static em_status final_value(const em_agg_fn *fn, const ex_value *b0, int64_t b1, ex_value *out,
                             em_error *err) {
    memset(out, 0, sizeof *out);
    switch (fn->kind) {
    case EM_AGGFN_SUM:
        if (fn->buf_types[0].id == EM_TYPE_DECIMAL) {
            if (b1) { /* isEmpty */
                out->null = true;
                return EM_OK;
            }
            if (b0->null) { /* CheckOverflowInSum */
                if (fn->ansi)
                    return agg_overflow(fn, err);
                out->null = true;
                return EM_OK;
            }
        }
        *out = *b0;
        return EM_OK;
    case EM_AGGFN_AVG: {
        if (b1 == 0) {
            out->null = true;
            return EM_OK;
        }
        if (fn->buf_types[0].id != EM_TYPE_DECIMAL) {
            out->d = b0->d / (double)b1;
            return EM_OK;
        }
        if (b0->null) {
            if (fn->ansi)
                return agg_overflow(fn, err);
            out->null = true;
            return EM_OK;
        }
        /* DecimalDivideWithOverflowCheck: Decimal's own division (scale
         * 38, HALF_UP), then toPrecision(p + 4, s + 4) HALF_UP; overflow is
         * null, or an error under ANSI */
        em_i128 r;
        if (!em_dec_div(b0->dec, fn->buf_types[0].scale, (em_i128)b1, 0,
                        fn->result_type.precision, fn->result_type.scale, &r)) {
            if (fn->ansi)
                return agg_overflow(fn, err);
            out->null = true;
            return EM_OK;
        }
        out->dec = r;
        return EM_OK;
    }
    case EM_AGGFN_COUNT:
    case EM_AGGFN_MIN:
    case EM_AGGFN_MAX:
    case EM_AGGFN_FIRST:
    case EM_AGGFN_LAST:
        *out = *b0;
        return EM_OK;
    default: /* moments are finished by the caller */
        return EM_OK;
    }
}

em_status em_agg_finalize(const em_agg_fn *fn, const em_agg_state *st, em_pool *pool,
                          em_column *out, em_error *err) {
    EM_TRY(em_ex_col_alloc(out, fn->result_type, st->n, pool, err));
    bool var = em_type_is_varlen(fn->result_type);
    ex_strw w = {out, 0};
    em_status rc = EM_OK;
    for (int64_t g = 0; g < st->n && rc == EM_OK; g++) {
        ex_value v;
        rc = final_value(fn, &st->b0[g], st->b1[g], &v, err);
        if (st->mom)
            moment_final(fn->kind, &st->mom[3 * g], &v);
        if (rc == EM_OK)
            rc = write_value(out, var ? &w : NULL, g, &v, err);
    }
    if (rc == EM_OK && var)
        rc = em_ex_strw_finish(&w, st->n, err);
    if (rc != EM_OK)
        em_column_reset(out);
    return rc;
}
