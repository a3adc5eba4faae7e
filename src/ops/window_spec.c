/* SPDX-License-Identifier: Apache-2.0 */
#include "ops/window_spec.h"

#include <stdlib.h>
#include <string.h>

static bool is_call(const em_expr *e, const char *name) {
    return e && e->kind == EM_EXPR_CALL && e->name && strcmp(e->name, name) == 0;
}

em_status em_win_unsupported(const em_expr *e, const char *what, em_error *err) {
    char *text = NULL;
    size_t len = 0;
    em_status s = em_expr_print(e, NULL, &text, &len, NULL);
    EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s in window expression %s", what, s == EM_OK ? text : "?");
    free(text);
    return err ? err->code : EM_ERR_UNSUPPORTED;
}

/* An integer literal, possibly negated. */
static bool int_literal(const em_expr *e, int64_t *out) {
    bool neg = false;
    if (e->kind == EM_EXPR_NEGATE && e->n_args == 1) {
        neg = true;
        e = e->args[0];
    }
    if (e->kind != EM_EXPR_LITERAL || !e->text)
        return false;
    char *end = NULL;
    long long v = strtoll(e->text, &end, 10);
    if (end == e->text || (*end && strcmp(end, "L") != 0) || v == INT64_MIN)
        return false;
    *out = neg ? -v : v;
    return true;
}

static bool read_bound(const em_expr *e, em_win_bound *kind, int64_t *off) {
    if (is_call(e, "unboundedpreceding$") || is_call(e, "unboundedfollowing$"))
        *kind = EM_WIN_UNBOUNDED;
    else if (is_call(e, "currentrow$"))
        *kind = EM_WIN_CURRENT;
    else {
        *kind = EM_WIN_OFFSET;
        return int_literal(e, off);
    }
    return true;
}

static em_status read_frame(const em_expr *alias, const em_expr *frame, em_type order_type,
                            em_win_desc *out, em_error *err) {
    if (!is_call(frame, "specifiedwindowframe") || frame->n_args != 3)
        return EM_OK;
    const em_expr *ft = frame->args[0];
    out->rows = ft->text && strcmp(ft->text, "RowFrame") == 0;
    if (!read_bound(frame->args[1], &out->lo, &out->lo_off) ||
        !read_bound(frame->args[2], &out->hi, &out->hi_off))
        return em_win_unsupported(alias, "frame bound not an integer offset", err);
    if (is_call(frame->args[1], "unboundedfollowing$") ||
        is_call(frame->args[2], "unboundedpreceding$"))
        return em_win_unsupported(alias, "empty frame", err);
    if (!out->rows && (out->lo == EM_WIN_OFFSET || out->hi == EM_WIN_OFFSET)) {
        em_type_id t = order_type.id;
        bool addable = t == EM_TYPE_BYTE || t == EM_TYPE_SHORT || t == EM_TYPE_INT ||
                       t == EM_TYPE_LONG || t == EM_TYPE_DATE || t == EM_TYPE_FLOAT ||
                       t == EM_TYPE_DOUBLE || t == EM_TYPE_DECIMAL;
        if (!addable)
            return em_win_unsupported(alias, "RangeFrame offsets need one numeric or date order key",
                               err);
    }
    return EM_OK;
}

bool em_win_rank_like(const em_expr *fn, em_win_kind *kind) {
    static const struct {
        const char *name;
        em_win_kind kind;
    } names[] = {{"row_number", EM_WIN_ROW_NUMBER},
                 {"rank", EM_WIN_RANK},
                 {"dense_rank", EM_WIN_DENSE_RANK}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (is_call(fn, names[i].name)) {
            *kind = names[i].kind;
            return true;
        }
    return false;
}

/* lag/lead(input, offset, default[, ignoreNulls]), nth_value(input, n[, ignoreNulls]) */
static em_status read_value_fn(const em_expr *alias, const em_expr *fn, em_win_desc *out,
                               em_error *err) {
    bool nth = is_call(fn, "nth_value");
    out->kind = nth ? EM_WIN_NTH_VALUE : is_call(fn, "lag") ? EM_WIN_LAG : EM_WIN_LEAD;
    out->n = 1;
    if (fn->n_args >= 2 && !int_literal(fn->args[1], &out->n))
        return em_win_unsupported(alias, "offset not an integer literal", err);
    if (out->n < 0)
        out->n = -out->n;
    if (fn->n_args < 1 || (nth && out->n == 0))
        return em_win_unsupported(alias, "no input or a zero position", err);
    out->input = fn->args[0];
    const em_expr *d = !nth && fn->n_args >= 3 ? fn->args[2] : NULL;
    bool bare_null = d && d->kind == EM_EXPR_LITERAL && d->type_known &&
                     d->type.id == EM_TYPE_NULL;
    out->dflt = bare_null ? NULL : d;
    int flag = nth ? 2 : 3;
    const em_expr *ign = fn->n_args > flag ? fn->args[flag] : NULL;
    out->ignore_nulls = ign && ign->text && strcmp(ign->text, "true") == 0;
    return EM_OK;
}

const em_expr *em_win_default_as(em_win_desc *d, em_type t) {
    if (!d->dflt || (d->dflt->type_known && em_type_equal(d->dflt->type, t)))
        return d->dflt;
    em_expr *c = &d->dflt_cast;
    memset(c, 0, sizeof *c);
    d->dflt_cast_arg[0] = (em_expr *)d->dflt;
    c->kind = EM_EXPR_CAST;
    c->type = c->cast_type = t;
    c->type_known = c->cast_type_known = true;
    c->n_args = 1;
    c->args = d->dflt_cast_arg;
    return c;
}

em_status em_win_describe(const em_expr *alias, bool has_order, em_type order_type,
                          em_win_desc *out, em_error *err) {
    memset(out, 0, sizeof *out);
    const em_expr *w = alias->kind == EM_EXPR_ALIAS && alias->n_args == 1 ? alias->args[0] : alias;
    if (w->kind != EM_EXPR_WINDOW || w->n_args != 2)
        return em_win_unsupported(alias, "not a window function", err);
    const em_expr *fn = w->args[0], *spec = w->args[1];
    out->fn = fn;
    out->lo = EM_WIN_UNBOUNDED;
    out->hi = has_order ? EM_WIN_CURRENT : EM_WIN_UNBOUNDED;
    EM_TRY(read_frame(alias, spec->n_args > 0 ? spec->args[spec->n_args - 1] : NULL, order_type,
                      out, err));
    if (fn->kind == EM_EXPR_AGG)
        out->kind = EM_WIN_AGG;
    else if (em_win_rank_like(fn, &out->kind))
        return EM_OK;
    else if (is_call(fn, "percent_rank"))
        out->kind = EM_WIN_PERCENT_RANK;
    else if (is_call(fn, "cume_dist"))
        out->kind = EM_WIN_CUME_DIST;
    else if (is_call(fn, "ntile")) {
        out->kind = EM_WIN_NTILE;
        if (fn->n_args != 1 || !int_literal(fn->args[0], &out->n) || out->n <= 0)
            return em_win_unsupported(alias, "ntile without a positive literal", err);
    } else if (is_call(fn, "lag") || is_call(fn, "lead") || is_call(fn, "nth_value"))
        return read_value_fn(alias, fn, out, err);
    else
        return em_win_unsupported(alias, "unsupported function", err);
    return EM_OK;
}
