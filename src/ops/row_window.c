/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Window and WindowGroupLimit on rows.
 *
 * The input is stored and sorted by the partition keys (ASC NULLS FIRST)
 * then the order keys, stably; each partition (rows equal on the partition
 * keys) is then computed on its own, and rows are emitted in that order
 * with the function results after the input columns, as the native Window
 * does. Rows equal on the order keys are peers.
 *
 * Functions (`f(...) windowspecdefinition(partition..., order...,
 * frame) AS name`):
 *   row_number, rank, dense_rank    position, first peer's position,
 *                                   peer groups so far
 *   percent_rank, cume_dist         (rank - 1) / (n - 1) (0 for one row);
 *                                   rows up to the last peer / n
 *   ntile(k)                        Spark's NTile: buckets of n / k rows,
 *                                   the first n % k one row larger
 *   lag / lead(x, off, default)     x at the row off rows before / after,
 *                                   default (over the current row) when
 *                                   that row is outside the partition;
 *                                   IGNORE NULLS counts non-null x only
 *   nth_value(x, n)                 x at the frame's n-th row (null when
 *                                   the frame is shorter), IGNORE NULLS too
 *   aggregates                      over the frame: RowFrame with any
 *                                   bounds (unbounded, current row, or an
 *                                   offset), RangeFrame with unbounded or
 *                                   current-row bounds (the current row's
 *                                   peers) or value offsets from the one
 *                                   numeric or date order key (added for
 *                                   ASC, subtracted for DESC, as Spark
 *                                   does; a null key's frame is bounded
 *                                   by null); an empty frame gives the
 *                                   function's value over no rows.
 * Frames that start unbounded fold rows as the frame grows; others are
 * folded afresh for every row, which is simple and right, not fast.
 *
 * Without a frame: RangeFrame unbounded preceding .. current row with an
 * ORDER BY, the whole partition without one (Spark's defaults).
 *
 * WindowGroupLimit (`[partition], [order], fn, limit, mode`) keeps per
 * partition the rows whose rank, dense_rank or row_number is at most the
 * limit, adding no column.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/row_internal.h"
#include "ops/window_spec.h"

typedef struct wfn {
    em_win_desc d;
    em_rexpr *input;  /* lag/lead/nth_value */
    em_rexpr *dflt;   /* lag/lead default */
    em_ragg *agg;
    em_datum *buf;    /* the aggregate's buffers */
    em_type type;
} wfn;

typedef struct window_state {
    bool group_limit;
    int n_fns;
    wfn *fns;
    wfn limit_fn;
    int64_t limit;
    int n_part, n_order;
    sorted_rows s;
    int n_in;
    /* results: n_fns datums per sorted row (strings in res_arena) */
    em_datum *res;
    int64_t res_charged; /* res and keep, charged to the pool */
    em_row_arena res_arena, scratch;
    bool *keep; /* group limit: per sorted position */
    bool done_input;
    int64_t emitted;
    em_datum *out;
} window_state;

/* Reads one window expression (an ALIAS of a WINDOW) and binds it. */
static em_status wfn_bind(em_row_op *op, window_state *st, const em_expr *alias, wfn *f,
                          em_error *err) {
    const em_row_op *child = op->children[0];
    const em_expr_compile_options *opts = &op->ctx->expr_opts;
    em_type order_type = st->n_order == 1 ? st->s.spec.types[st->n_part]
                                          : em_type_make(EM_TYPE_NULL);
    EM_TRY(em_win_describe(alias, st->n_order > 0, order_type, &f->d, err));
    if (f->d.kind == EM_WIN_AGG) {
        EM_TRY(em_ragg_bind(f->d.fn, child->output, child->n_output, opts, &f->agg, err));
        if (!em_ragg_has_args(f->agg))
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "window expression %s#%lld: aggregate arguments not in the input",
                           alias->name ? alias->name : "?", (long long)alias->id);
        f->buf = calloc((size_t)em_ragg_n_buffers(f->agg) + 1, sizeof *f->buf);
        if (!f->buf)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        f->type = em_ragg_result_type(f->agg);
        return EM_OK;
    }
    bool dbl = f->d.kind == EM_WIN_PERCENT_RANK || f->d.kind == EM_WIN_CUME_DIST;
    f->type = em_type_make(dbl ? EM_TYPE_DOUBLE : EM_TYPE_INT);
    if (f->d.input) {
        EM_TRY(em_rexpr_bind(f->d.input, child->output, child->n_output, opts, &f->input, err));
        f->type = em_rexpr_type(f->input);
    }
    const em_expr *dflt = em_win_default_as(&f->d, f->type);
    if (dflt)
        EM_TRY(em_rexpr_bind(dflt, child->output, child->n_output, opts, &f->dflt, err));
    return EM_OK;
}

/* WindowGroupLimit's `[partition], [order], fn, limit, mode`: the first call
 * is the function and the literal after it the limit. */
static em_status group_limit_args(em_row_op *op, window_state *st, const em_expr *const *args,
                                  int n, em_error *err) {
    int at = 0;
    while (at < n && args[at]->kind != EM_EXPR_CALL)
        at++;
    if (at + 1 >= n || args[at + 1]->kind != EM_EXPR_LITERAL)
        return EM_FAIL(err, EM_ERR_PARSE, "expected `[partition], [order], function, limit, mode`");
    if (!em_win_rank_like(args[at], &st->limit_fn.d.kind))
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "group limit by %s",
                       args[at]->name ? args[at]->name : "?");
    return em_opu_int_arg(op->node, args[at + 1], "limit", &st->limit, err);
}

static em_status window_bind(em_row_op *op, window_state *st, em_error *err) {
    const em_row_op *child = op->children[0];
    int n = 0;
    const em_expr *const *args = em_rop_arguments(op->node, &n);
    if (st->group_limit)
        EM_TRY(group_limit_args(op, st, args, n, err));
    else if (n < 1 || args[0]->kind != EM_EXPR_LIST)
        return EM_FAIL(err, EM_ERR_PARSE, "no window expression list in Arguments");
    const em_expr *part = NULL, *order = NULL;
    for (int i = st->group_limit ? 0 : 1; i < n; i++) {
        if (args[i]->kind != EM_EXPR_LIST)
            continue;
        if (args[i]->n_args > 0 && args[i]->args[0]->kind == EM_EXPR_SORT_ORDER)
            order = args[i];
        else
            part = args[i];
    }
    st->n_part = part ? part->n_args : 0;
    st->n_order = order ? order->n_args : 0;
    int nk = st->n_part + st->n_order;
    const em_expr **keys = calloc((size_t)nk + 1, sizeof *keys);
    if (!keys)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < st->n_part; i++)
        keys[i] = part->args[i];
    for (int i = 0; i < st->n_order; i++)
        keys[st->n_part + i] = order->args[i];
    em_status s = em_sr_init(&st->s, op, keys, nk, err);
    free(keys);
    EM_TRY(s);
    st->n_in = child->n_output;
    if (st->group_limit) {
        if (op->n_output != st->n_in)
            return EM_FAIL(err, EM_ERR_BIND, "output and input differ in width");
        memcpy(op->types, child->types, sizeof *op->types * (size_t)st->n_in);
        return EM_OK;
    }
    const em_expr *list = args[0];
    st->n_fns = list->n_args;
    st->fns = calloc((size_t)st->n_fns + 1, sizeof *st->fns);
    if (!st->fns)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    if (op->n_output != st->n_in + st->n_fns)
        return EM_FAIL(err, EM_ERR_BIND, "Output has %d attributes, input %d plus %d functions",
                       op->n_output, st->n_in, st->n_fns);
    memcpy(op->types, child->types, sizeof *op->types * (size_t)st->n_in);
    for (int i = 0; i < st->n_fns; i++) {
        EM_TRY(wfn_bind(op, st, list->args[i], &st->fns[i], err));
        op->types[st->n_in + i] = st->fns[i].type;
    }
    return EM_OK;
}

static em_status window_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    window_state *st = op->state;
    st->group_limit = op->node->kind == EM_NODE_WINDOW_GROUP_LIMIT;
    em_row_arena_init(&st->res_arena, rop_pool(op));
    em_row_arena_init(&st->scratch, rop_pool(op));
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    if (window_bind(op, st, err) != EM_OK)
        return em_rop_fail(op, err);
    st->out = calloc((size_t)op->n_output + 1, sizeof *st->out);
    if (!st->out)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    return EM_OK;
}

/* The stored row at sorted position i. */
static inline const em_datum *wrow(const window_state *st, int64_t i) {
    return rs_row(&st->s.rows, st->s.idx[i]);
}

/* Rank-like values of positions [lo, hi) of one partition. */
static int64_t rank_like(const wfn *f, int64_t lo, int64_t i, const int64_t *peer_lo,
                         int64_t *dense) {
    if (f->d.kind == EM_WIN_ROW_NUMBER)
        return i - lo + 1;
    if (peer_lo[i] == i)
        (*dense)++;
    return f->d.kind == EM_WIN_DENSE_RANK ? *dense : peer_lo[i] - lo + 1;
}

static em_status set_result(window_state *st, int64_t i, int fi, const em_datum *v, em_type t,
                            em_error *err) {
    return em_datum_copy(&st->res[i * st->n_fns + fi], v, t, &st->res_arena, err);
}

static em_status set_int(window_state *st, int64_t i, int fi, int64_t v, em_error *err) {
    em_datum d = {.is_null = false};
    d.v.i64 = v;
    return set_result(st, i, fi, &d, em_type_make(EM_TYPE_INT), err);
}

/* Folds sorted positions [a, b) into the aggregate's buffers. */
static em_status agg_fold(window_state *st, wfn *f, int64_t a, int64_t b, em_row_arena *arena,
                          em_error *err) {
    for (int64_t j = a; j < b; j++)
        EM_TRY(em_ragg_update(f->agg, f->buf, wrow(st, j), arena, err));
    return EM_OK;
}

/* The order key of sorted position i (RangeFrame offsets: the only one). */
static inline const em_datum *order_key(const window_state *st, int64_t i) {
    return wrow(st, i) + st->n_in + st->n_part;
}

/* The first position of [lo, hi) past the value bound `off` from row i's
 * order key (past: after it in the sort order, or also at it when `at`):
 * Spark adds the offset for an ascending key and subtracts it for a
 * descending one; a null key's bound is null, compared as the order places
 * nulls. */
static int64_t range_edge(const window_state *st, int64_t i, int64_t off, bool at, int64_t lo,
                          int64_t hi) {
    int k = st->n_part;
    em_type t = st->s.spec.types[k];
    bool asc = st->s.spec.ascending[k], nf = st->s.spec.nulls_first[k];
    em_datum bound = *order_key(st, i);
    int64_t d = asc ? off : -off;
    if (!bound.is_null) {
        if (t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE)
            bound.v.f64 += (double)d;
        else if (t.id == EM_TYPE_DECIMAL) {
            em_i128 m = d;
            for (int s = 0; s < t.scale; s++)
                m *= 10;
            bound.v.dec += m;
        } else
            bound.v.i64 += d;
    }
    while (lo < hi) { /* binary search: keys are sorted */
        int64_t mid = lo + (hi - lo) / 2;
        int c = em_rop_compare_key(order_key(st, mid), &bound, t, asc, nf);
        if (c < 0 || (!at && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The frame [*fs, *fe) of position i in partition [lo, hi). */
static void frame_of(const window_state *st, const wfn *f, int64_t i, int64_t lo, int64_t hi,
                     const int64_t *peer_lo, const int64_t *peer_hi, int64_t *fs, int64_t *fe) {
    int64_t a, b;
    if (f->d.lo == EM_WIN_UNBOUNDED)
        a = lo;
    else if (f->d.lo == EM_WIN_CURRENT)
        a = f->d.rows ? i : peer_lo[i];
    else if (f->d.rows)
        a = i + f->d.lo_off;
    else
        a = range_edge(st, i, f->d.lo_off, true, lo, hi);
    if (f->d.hi == EM_WIN_UNBOUNDED)
        b = hi;
    else if (f->d.hi == EM_WIN_CURRENT)
        b = f->d.rows ? i + 1 : peer_hi[i];
    else if (f->d.rows)
        b = i + f->d.hi_off + 1;
    else
        b = range_edge(st, i, f->d.hi_off, false, lo, hi);
    *fs = a < lo ? lo : a > hi ? hi : a;
    *fe = b < lo ? lo : b > hi ? hi : b;
}

static em_status agg_partition(window_state *st, int fi, int64_t lo, int64_t hi,
                               const int64_t *peer_lo, const int64_t *peer_hi, em_error *err) {
    wfn *f = &st->fns[fi];
    em_row_arena run;
    em_row_arena_init(&run, st->res_arena.pool);
    em_status s = EM_OK;
    bool growing = f->d.lo == EM_WIN_UNBOUNDED;
    int64_t folded = lo;
    em_ragg_init(f->agg, f->buf);
    for (int64_t i = lo; s == EM_OK && i < hi; i++) {
        int64_t fs, fe;
        frame_of(st, f, i, lo, hi, peer_lo, peer_hi, &fs, &fe);
        if (growing) {
            if (fe > folded) {
                s = agg_fold(st, f, folded, fe, &run, err);
                folded = fe;
            }
        } else {
            em_row_arena_clear(&run);
            em_ragg_init(f->agg, f->buf);
            if (fs < fe)
                s = agg_fold(st, f, fs, fe, &run, err);
        }
        em_datum v;
        em_row_arena_clear(&st->scratch);
        if (s == EM_OK)
            s = em_ragg_eval(f->agg, f->buf, &st->scratch, &v, err);
        if (s == EM_OK)
            s = set_result(st, i, fi, &v, f->type, err);
    }
    em_row_arena_reset(&run);
    return s;
}

/* The input's value at the n-th row from `from` stepping by `step` within
 * [lo, hi) (rows with a null input not counted when nulls are ignored);
 * *found false when there is none. */
static em_status nth_row_value(window_state *st, const wfn *f, int64_t from, int step, int64_t lo,
                               int64_t hi, em_datum *v, bool *found, em_error *err) {
    *found = false;
    int64_t left = f->d.n;
    for (int64_t t = from; t >= lo && t < hi; t += step) {
        EM_TRY(em_rexpr_eval(f->input, wrow(st, t), &st->scratch, v, err));
        if (f->d.ignore_nulls && v->is_null)
            continue;
        if (--left == 0) {
            *found = true;
            return EM_OK;
        }
        if (!f->d.ignore_nulls) { /* jump straight to the n-th row */
            t += step * (left - 1);
            left = 1;
        }
    }
    return EM_OK;
}

static em_status offset_value(window_state *st, int fi, int64_t i, int64_t lo, int64_t hi,
                              em_error *err) {
    wfn *f = &st->fns[fi];
    int step = f->d.kind == EM_WIN_LAG ? -1 : 1;
    em_datum v = em_datum_null();
    bool found = false;
    em_row_arena_clear(&st->scratch);
    if (f->d.n == 0) /* offset 0: the current row itself */
        EM_TRY(em_rexpr_eval(f->input, wrow(st, i), &st->scratch, &v, err));
    else
        EM_TRY(nth_row_value(st, f, i + step, step, lo, hi, &v, &found, err));
    found |= f->d.n == 0;
    if (!found) {
        v = em_datum_null();
        if (f->dflt)
            EM_TRY(em_rexpr_eval(f->dflt, wrow(st, i), &st->scratch, &v, err));
    }
    return set_result(st, i, fi, &v, f->type, err);
}

/* nth_value over each row's frame: null when the frame has fewer rows. */
static em_status nth_value_partition(window_state *st, int fi, int64_t lo, int64_t hi,
                                     const int64_t *peer_lo, const int64_t *peer_hi,
                                     em_error *err) {
    wfn *f = &st->fns[fi];
    for (int64_t i = lo; i < hi; i++) {
        int64_t fs, fe;
        frame_of(st, f, i, lo, hi, peer_lo, peer_hi, &fs, &fe);
        em_datum v = em_datum_null();
        bool found = false;
        em_row_arena_clear(&st->scratch);
        EM_TRY(nth_row_value(st, f, fs, 1, fs, fe, &v, &found, err));
        if (!found)
            v = em_datum_null();
        EM_TRY(set_result(st, i, fi, &v, f->type, err));
    }
    return EM_OK;
}

/* Computes every function over partition [lo, hi). */
static em_status window_partition(window_state *st, int64_t lo, int64_t hi, const int64_t *peer_lo,
                                  const int64_t *peer_hi, em_error *err) {
    int64_t n = hi - lo;
    if (st->group_limit) {
        int64_t dense = 0;
        for (int64_t i = lo; i < hi; i++)
            st->keep[i] = rank_like(&st->limit_fn, lo, i, peer_lo, &dense) <= st->limit;
        return EM_OK;
    }
    for (int fi = 0; fi < st->n_fns; fi++) {
        wfn *f = &st->fns[fi];
        int64_t dense = 0;
        for (int64_t i = lo; i < hi && f->d.kind != EM_WIN_AGG && f->d.kind != EM_WIN_NTH_VALUE; i++) {
            switch (f->d.kind) {
            case EM_WIN_ROW_NUMBER:
            case EM_WIN_RANK:
            case EM_WIN_DENSE_RANK:
                EM_TRY(set_int(st, i, fi, rank_like(f, lo, i, peer_lo, &dense), err));
                break;
            case EM_WIN_PERCENT_RANK:
            case EM_WIN_CUME_DIST: {
                em_datum d = {.is_null = false};
                if (f->d.kind == EM_WIN_CUME_DIST)
                    d.v.f64 = (double)(peer_hi[i] - lo) / (double)n;
                else
                    d.v.f64 = n > 1 ? (double)(peer_lo[i] - lo) / (double)(n - 1) : 0.0;
                EM_TRY(set_result(st, i, fi, &d, f->type, err));
                break;
            }
            case EM_WIN_NTILE: {
                /* buckets of n / k rows; the first n % k hold one more */
                int64_t size = n / f->d.n, extra = n % f->d.n, r = i - lo;
                int64_t big = extra * (size + 1);
                int64_t b = r < big ? r / (size + 1) : extra + (size ? (r - big) / size : 0);
                EM_TRY(set_int(st, i, fi, b + 1, err));
                break;
            }
            case EM_WIN_LAG:
            case EM_WIN_LEAD:
                EM_TRY(offset_value(st, fi, i, lo, hi, err));
                break;
            default:
                break;
            }
        }
        if (f->d.kind == EM_WIN_AGG)
            EM_TRY(agg_partition(st, fi, lo, hi, peer_lo, peer_hi, err));
        if (f->d.kind == EM_WIN_NTH_VALUE)
            EM_TRY(nth_value_partition(st, fi, lo, hi, peer_lo, peer_hi, err));
    }
    return EM_OK;
}

/* Every function over the stored, sorted rows. */
static em_status window_compute(window_state *st, em_error *err) {
    int64_t n = st->s.n_idx;
    int nf = st->group_limit ? 0 : st->n_fns;
    int64_t charge = n * nf * (int64_t)sizeof *st->res + n;
    EM_TRY(em_pool_reserve(st->res_arena.pool, charge, err));
    st->res_charged = charge;
    st->res = calloc((size_t)(n * nf) + 1, sizeof *st->res);
    st->keep = calloc((size_t)n + 1, sizeof *st->keep);
    int64_t *peer_lo = malloc(sizeof *peer_lo * (size_t)(n + 1));
    int64_t *peer_hi = malloc(sizeof *peer_hi * (size_t)(n + 1));
    em_status s = EM_OK;
    if (!st->res || !st->keep || !peer_lo || !peer_hi)
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    int np = st->n_part, nk = st->n_part + st->n_order;
    for (int64_t lo = 0; s == EM_OK && lo < n;) {
        int64_t hi = lo + 1;
        while (hi < n && em_sr_compare_range(&st->s, st->s.idx[lo], st->s.idx[hi], 0, np) == 0)
            hi++;
        for (int64_t i = lo; i < hi; i++)
            peer_lo[i] = i > lo && em_sr_compare_range(&st->s, st->s.idx[i - 1], st->s.idx[i], np,
                                                    nk) == 0
                             ? peer_lo[i - 1]
                             : i;
        for (int64_t i = hi - 1; i >= lo; i--)
            peer_hi[i] = i + 1 < hi && peer_lo[i + 1] == peer_lo[i] ? peer_hi[i + 1] : i + 1;
        s = window_partition(st, lo, hi, peer_lo, peer_hi, err);
        lo = hi;
    }
    free(peer_lo);
    free(peer_hi);
    return s;
}

static em_status window_next(em_row_op *op, const em_datum **row, em_error *err) {
    window_state *st = op->state;
    if (!st->done_input) {
        st->done_input = true;
        EM_TRY(em_sr_drain(op, &st->s, err));
        em_status s = window_compute(st, err);
        rop_note_peak(op, rs_bytes(&st->s.rows) + st->res_arena.bytes + st->res_charged);
        if (s != EM_OK)
            return em_rop_fail(op, err);
        st->emitted = 0;
    }
    while (st->emitted < st->s.n_idx) {
        int64_t i = st->emitted++;
        if (st->group_limit && !st->keep[i])
            continue;
        memcpy(st->out, wrow(st, i), sizeof *st->out * (size_t)st->n_in);
        if (!st->group_limit)
            memcpy(st->out + st->n_in, st->res + i * st->n_fns,
                   sizeof *st->out * (size_t)st->n_fns);
        *row = st->out;
        return EM_OK;
    }
    return EM_DONE;
}

static void wfn_reset(wfn *f) {
    em_rexpr_destroy(f->input);
    em_rexpr_destroy(f->dflt);
    em_ragg_destroy(f->agg);
    free(f->buf);
    memset(f, 0, sizeof *f);
}

static void window_close(em_row_op *op) {
    window_state *st = op->state;
    if (st) {
        for (int i = 0; st->fns && i < st->n_fns; i++)
            wfn_reset(&st->fns[i]);
        free(st->fns);
        em_sr_reset(&st->s);
        if (st->res_charged)
            em_pool_release(st->res_arena.pool, st->res_charged);
        free(st->res);
        free(st->keep);
        free(st->out);
        em_row_arena_reset(&st->res_arena);
        em_row_arena_reset(&st->scratch);
        memset(st, 0, sizeof *st);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab WINDOW_VTAB = {
    .name = "Window", .open = window_open, .next = window_next, .close = window_close};
static const em_row_op_vtab GROUP_LIMIT_VTAB = {
    .name = "WindowGroupLimit", .open = window_open, .next = window_next, .close = window_close};

em_status em_rop_window_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                            em_error *err) {
    bool gl = node->kind == EM_NODE_WINDOW_GROUP_LIMIT;
    EM_TRY(em_rop_init(gl ? &GROUP_LIMIT_VTAB : &WINDOW_VTAB, node, &child, 1, sizeof(window_state),
                    out, err));
    return gl ? em_rop_inherit_output(out, child, err) : EM_OK;
}
