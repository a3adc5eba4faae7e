/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Window: appends window function results to every input row (Spark's
 * WindowExec). Arguments: `[window exprs], [partition spec], [order spec]`
 * (empty lists are not printed, so a list of sort orders is the order spec
 * and any other second list the partition spec).
 *
 * Algorithm: the task's input is accumulated, sorted by partition keys then
 * order keys (Spark puts a Sort below the Window already; sorting again is
 * stable and cheap on sorted input, and keeps the operator correct on its
 * own), gathered once into sorted order, and each function is computed
 * over contiguous ranges (rows equal on the order keys are peers). The
 * functions and frames are those ops/window_spec.h reads:
 *   row_number, rank,       position in the partition, first peer's
 *   dense_rank              position, peer groups so far
 *   percent_rank, cume_dist (rank - 1) / (n - 1) (0 for one row); rows up
 *                           to the last peer / n
 *   ntile(k)                buckets of n / k rows, the first n % k one row
 *                           larger (Spark's NTile)
 *   lag / lead(x, off, d)   x at the row off rows before / after, d (over
 *                           the current row) outside the partition; IGNORE
 *                           NULLS counts the rows with a non-null x only
 *   nth_value(x, n)         x at the frame's n-th row (IGNORE NULLS: n-th
 *                           non-null), null when the frame is shorter
 *   aggregates              em_agg_* in complete mode over each row's frame
 * A RowFrame offset counts rows; a RangeFrame offset is added to the one
 * order key for ASC and subtracted for DESC (as Spark does), and a null
 * key's bounds are null, so its frame is its null peers.
 *
 * Aggregates fold every row into its own group first (one vectorized
 * update), then combine those one-row buffers in row order, which is the
 * order Spark's frames update in, so double sums come out bit for bit as
 * Spark's (and the row engine's):
 *   - the whole partition: rows go straight into one group per partition;
 *   - frames starting unbounded (Spark's UnboundedPreceding frames) grow:
 *     one running state per partition merges the rows up to each distinct
 *     frame end and is finalized once per end;
 *   - other frames (Spark's sliding and unbounded-following frames
 *     recompute each frame): each distinct frame's rows are gathered, in
 *     chunks of bounded size, and merged afresh. That costs the frame's
 *     width per row, as in Spark.
 *
 * Output rows come in sorted order with the input's columns first, as the
 * node's Output lists them.
 *
 * WindowGroupLimit (Spark 3.5+, a rank filter pushed below a Window) shares
 * this machinery: `[partition spec], [order], rank-like fn, limit,
 * Partial|Final` keeps, per partition, the rows whose rank, dense_rank or
 * row_number is at most the limit, and adds no columns. Both modes filter
 * the same way; the Final one sees the Partial one's survivors.
 */
#include <stdlib.h>
#include <string.h>

#include "ember/datum.h"
#include "ops/op_util.h"
#include "ops/sort_keys.h"
#include "ops/window_spec.h"

typedef struct win_fn {
    em_win_desc d;
    em_agg_fn *agg;
    em_expr_prog *input, *dflt; /* lag/lead/nth_value's input, lag/lead's default */
    em_type type;
} win_fn;

typedef struct window_state {
    int n_fns;
    win_fn *fns;
    em_sort_spec all; /* partition keys (ASC NULLS FIRST) then order keys */
    int n_part, n_order;
    em_batch *sorted; /* input in window order, plus result columns */
    int64_t n, emitted;
    bool done_input;
    em_batch *chunk;
    bool group_limit; /* WindowGroupLimit */
    win_fn limit_fn;  /* its rank-like function */
    int64_t limit;
} window_state;

/* Partition and peer ranges of every sorted row: [part_lo, part_hi) and
 * [peer_lo, peer_hi). */
typedef struct win_ranges {
    int64_t n;
    int64_t *part_lo, *part_hi, *peer_lo, *peer_hi;
    const em_sort_key *order_key; /* the first order key (RangeFrame offsets) */
    bool ansi; /* a RangeFrame bound past an integral key's range fails, as Spark's Add does */
} win_ranges;

/* Reads one window expression (an ALIAS of a WINDOW) and compiles what it
 * evaluates against the input. */
static em_status win_compile(const em_expr *alias, const em_expr *const *attrs, int n_attrs,
                             const em_expr_compile_options *opts, bool has_order,
                             em_type order_type, win_fn *out, em_error *err) {
    EM_TRY(em_win_describe(alias, has_order, order_type, &out->d, err));
    const em_win_desc *d = &out->d;
    if (d->kind == EM_WIN_AGG) {
        EM_TRY(em_agg_compile(d->fn, attrs, n_attrs, opts, &out->agg, err));
        out->type = em_agg_result_type(out->agg);
        return EM_OK;
    }
    bool dbl = d->kind == EM_WIN_PERCENT_RANK || d->kind == EM_WIN_CUME_DIST;
    out->type = em_type_make(dbl ? EM_TYPE_DOUBLE : EM_TYPE_INT);
    if (!d->input)
        return EM_OK;
    EM_TRY(em_expr_compile(d->input, attrs, n_attrs, opts, &out->input, err));
    out->type = em_expr_prog_type(out->input);
    const em_expr *dflt = em_win_default_as(&out->d, out->type);
    if (dflt)
        EM_TRY(em_expr_compile(dflt, attrs, n_attrs, opts, &out->dflt, err));
    return EM_OK;
}

/* WindowGroupLimit's Arguments: the rank-like function and the limit (the
 * lists are read by window_open). */
static em_status group_limit_args(em_op *op, window_state *st, const em_expr *const *args, int n,
                                  em_error *err) {
    const em_expr *fn = NULL, *lim = NULL;
    for (int i = 0; i < n; i++) {
        if (args[i]->kind == EM_EXPR_CALL && !fn)
            fn = args[i];
        else if (args[i]->kind == EM_EXPR_LITERAL && fn && !lim)
            lim = args[i];
    }
    if (!fn || !lim) {
        EM_FAIL(err, EM_ERR_PARSE, "expected `[partition], [order], function, limit, mode`");
        return em_op_fail(op, err);
    }
    if (!em_win_rank_like(fn, &st->limit_fn.d.kind)) {
        EM_FAIL(err, EM_ERR_UNSUPPORTED, "group limit by %s", fn->name ? fn->name : "?");
        return em_op_fail(op, err);
    }
    return em_opu_int_arg(op->node, lim, "limit", &st->limit, err);
}

static em_status window_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    window_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    int n = 0;
    const em_expr *const *args = em_opu_arguments(op->node, &n);
    st->group_limit = op->node->kind == EM_NODE_WINDOW_GROUP_LIMIT;
    if (st->group_limit)
        EM_TRY(group_limit_args(op, st, args, n, err));
    else if (n < 1 || args[0]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "no window expression list in Arguments");
        return em_op_fail(op, err);
    }
    const em_expr *part = NULL, *order = NULL;
    for (int i = st->group_limit ? 0 : 1; i < n; i++) {
        if (args[i]->kind != EM_EXPR_LIST)
            continue;
        bool sorts = args[i]->n_args > 0 && args[i]->args[0]->kind == EM_EXPR_SORT_ORDER;
        if (sorts)
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
        keys[i] = part->args[i]; /* bare expressions: ASC NULLS FIRST */
    for (int i = 0; i < st->n_order; i++)
        keys[st->n_part + i] = order->args[i];
    em_status s = em_sort_spec_init(&st->all, keys, nk, em_op_child_attrs(op, 0), child->n_output,
                                    &ctx->expr_opts, err);
    free(keys);
    if (s != EM_OK)
        return em_op_fail(op, err);
    if (st->group_limit)
        return EM_OK;
    const em_expr *list = args[0];
    st->fns = calloc((size_t)list->n_args + 1, sizeof *st->fns);
    if (!st->fns)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    st->n_fns = list->n_args;
    if (op->n_output != child->n_output + st->n_fns) {
        EM_FAIL(err, EM_ERR_BIND, "Output has %d attributes, input %d plus %d functions",
                op->n_output, child->n_output, st->n_fns);
        return em_op_fail(op, err);
    }
    em_type order_type = em_type_make(EM_TYPE_NULL);
    if (st->n_order == 1) {
        int k = st->n_part, at = st->all.pass[k];
        order_type = at >= 0 ? child->schema.fields[at].type : em_expr_prog_type(st->all.progs[k]);
    }
    for (int i = 0; i < st->n_fns; i++)
        if (win_compile(list->args[i], em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts,
                        st->n_order > 0, order_type, &st->fns[i], err) != EM_OK)
            return em_op_fail(op, err);
    return EM_OK;
}

/* Rank-like and distribution functions: row_number, rank, dense_rank,
 * ntile (int) and percent_rank, cume_dist (double). */
static em_status win_rank(const win_fn *f, const win_ranges *r, em_pool *pool, em_column *out,
                          em_error *err) {
    bool dbl = f->d.kind == EM_WIN_PERCENT_RANK || f->d.kind == EM_WIN_CUME_DIST;
    EM_TRY(em_column_init(out, em_type_make(dbl ? EM_TYPE_DOUBLE : EM_TYPE_INT), r->n, pool, err));
    int64_t dense = 0;
    for (int64_t i = 0; i < r->n; i++) {
        int64_t lo = r->part_lo[i], rows = r->part_hi[i] - lo;
        if (i == lo)
            dense = 0;
        if (r->peer_lo[i] == i)
            dense++;
        int64_t v = 0;
        double d = 0.0;
        switch (f->d.kind) {
        case EM_WIN_ROW_NUMBER:
            v = i - lo + 1;
            break;
        case EM_WIN_RANK:
            v = r->peer_lo[i] - lo + 1;
            break;
        case EM_WIN_DENSE_RANK:
            v = dense;
            break;
        case EM_WIN_NTILE: {
            /* buckets of rows / k rows; the first rows % k hold one more */
            int64_t size = rows / f->d.n, extra = rows % f->d.n, at = i - lo;
            int64_t big = extra * (size + 1);
            v = 1 + (at < big ? at / (size + 1) : extra + (size ? (at - big) / size : 0));
            break;
        }
        case EM_WIN_PERCENT_RANK:
            d = rows > 1 ? (double)(r->peer_lo[i] - lo) / (double)(rows - 1) : 0.0;
            break;
        default: /* EM_WIN_CUME_DIST */
            d = (double)(r->peer_hi[i] - lo) / (double)rows;
            break;
        }
        int32_t v32 = (int32_t)v;
        EM_TRY(em_column_append_fixed(out, dbl ? (const void *)&d : (const void *)&v32, err));
    }
    return EM_OK;
}

/* i + off clamped to [lo, hi] (i within it), without overflowing. */
static int64_t clamp_offset(int64_t i, int64_t off, int64_t lo, int64_t hi) {
    int64_t span = hi - lo;
    off = off > span ? span : off < -span ? -span : off;
    int64_t v = i + off;
    return v < lo ? lo : v > hi ? hi : v;
}

/* Moves an order key by d (days for a date; whole units for a decimal),
 * saturating at the type's range instead of wrapping; false when an
 * integral key left its type's range (Spark's Add of the bound overflowed). */
static bool shift_key(em_datum *k, em_type t, int64_t d) {
    if (t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE) {
        k->v.f64 += (double)d;
    } else if (t.id == EM_TYPE_DECIMAL) {
        const em_i128 max = (em_i128)(((unsigned __int128)1 << 127) - 1), min = -max - 1;
        em_i128 unit = 1;
        for (int s = 0; s < t.scale; s++)
            unit *= 10;
        em_i128 lim = max / unit, m = (em_i128)d * unit;
        if (d > lim || d < -lim)
            k->v.dec = d > 0 ? max : min;
        else if (m > 0 ? k->v.dec > max - m : k->v.dec < min - m)
            k->v.dec = m > 0 ? max : min;
        else
            k->v.dec += m;
    } else if (__builtin_add_overflow(k->v.i64, d, &k->v.i64)) {
        k->v.i64 = d > 0 ? INT64_MAX : INT64_MIN;
        return t.id != EM_TYPE_LONG;
    } else {
        int64_t hi = t.id == EM_TYPE_BYTE ? INT8_MAX : t.id == EM_TYPE_SHORT ? INT16_MAX
                     : t.id == EM_TYPE_INT                                  ? INT32_MAX
                                                                            : INT64_MAX;
        return k->v.i64 <= hi && k->v.i64 >= -hi - 1;
    }
    return true;
}

/* Orders key value a against b as the sort key does, nulls included. */
static int key_compare(const em_datum *a, const em_datum *b, const em_sort_key *key) {
    if (a->is_null || b->is_null) {
        if (a->is_null && b->is_null)
            return 0;
        return a->is_null == key->nulls_first ? -1 : 1;
    }
    int c = em_datum_compare(a, b, key->col->type);
    return key->ascending ? c : -c;
}

/* The first position of [lo, hi) past row i's order key moved by off
 * (past: after it in the sort order, or also at it when `at`): Spark adds
 * the offset for an ascending key and subtracts it for a descending one; a
 * null key stays null, compared as the order places nulls. */
static int64_t range_edge(const em_sort_key *key, int64_t i, int64_t off, bool at, int64_t lo,
                          int64_t hi, bool *overflow) {
    em_datum bound, v;
    em_datum_from_column(key->col, i, &bound);
    if (!bound.is_null && !shift_key(&bound, key->col->type, key->ascending ? off : -off))
        *overflow = true;
    while (lo < hi) { /* keys are sorted within the partition */
        int64_t mid = lo + (hi - lo) / 2;
        em_datum_from_column(key->col, mid, &v);
        int c = key_compare(&v, &bound, key);
        if (c < 0 || (!at && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The word Spark's overflow message uses for an integral type. */
static const char *int_type_word(em_type t) {
    return t.id == EM_TYPE_BYTE    ? "byte"
           : t.id == EM_TYPE_SHORT ? "short"
           : t.id == EM_TYPE_INT   ? "integer"
                                   : "long";
}

/* Every row's frame [fs[i], fe[i]) (fe == fs when empty). Under ANSI a
 * RangeFrame bound outside an integral key's type fails as Spark's does;
 * otherwise it saturates. */
static em_status win_frames(const win_fn *f, const win_ranges *r, int64_t *fs, int64_t *fe,
                            em_error *err) {
    bool overflow = false;
    for (int64_t i = 0; i < r->n; i++) {
        int64_t lo = r->part_lo[i], hi = r->part_hi[i], a = lo, b = hi;
        if (f->d.lo == EM_WIN_CURRENT)
            a = f->d.rows ? i : r->peer_lo[i];
        else if (f->d.lo == EM_WIN_OFFSET)
            a = f->d.rows ? clamp_offset(i, f->d.lo_off, lo, hi)
                        : range_edge(r->order_key, i, f->d.lo_off, true, lo, hi, &overflow);
        if (f->d.hi == EM_WIN_CURRENT)
            b = f->d.rows ? i + 1 : r->peer_hi[i];
        else if (f->d.hi == EM_WIN_OFFSET)
            b = f->d.rows ? clamp_offset(i + 1, f->d.hi_off, lo, hi)
                        : range_edge(r->order_key, i, f->d.hi_off, false, lo, hi, &overflow);
        fs[i] = a;
        fe[i] = b < a ? a : b;
        if (overflow && r->ansi)
            return EM_FAIL(err, EM_ERR_OVERFLOW,
                           "[ARITHMETIC_OVERFLOW] %s overflow: a RANGE frame bound of the "
                           "window's order key is out of its type's range (set "
                           "spark.sql.ansi.enabled to false to bypass this error)",
                           int_type_word(r->order_key->col->type));
    }
    return EM_OK;
}

/* A frame that starts unbounded grows: one running state per partition
 * merges the one-row buffers (bb) up to each distinct frame end, in order,
 * and is finalized once per end. */
static em_status agg_growing(const win_fn *f, em_batch *bb, const win_ranges *r, const int64_t *fe,
                             const int32_t *iota, const int32_t *zeros, em_pool *pool,
                             em_column *out, em_error *err) {
    em_agg_state *run = NULL;
    em_column val = {0};
    em_status s = EM_OK;
    int64_t folded = 0;
    for (int64_t i = 0; s == EM_OK && i < r->n;) {
        if (i == r->part_lo[i]) { /* a new partition: a fresh running state */
            em_agg_state_destroy(run);
            run = NULL;
            folded = i;
            s = em_agg_state_create(f->agg, pool, &run, err);
            if (s == EM_OK)
                s = em_agg_state_resize(run, 1, err);
        }
        int64_t e = fe[i], j = i + 1;
        while (j < r->part_hi[i] && fe[j] == e)
            j++;
        if (s == EM_OK && e > folded) {
            s = em_opu_set_sel(bb, iota + folded, e - folded, err);
            if (s == EM_OK)
                s = em_agg_merge(f->agg, run, zeros, bb, 0, err);
            folded = e;
        }
        if (s == EM_OK) {
            em_column_reset(&val);
            s = em_agg_finalize(f->agg, run, pool, &val, err);
        }
        if (s == EM_OK)
            s = em_column_append_rows(out, &val, zeros, j - i, err);
        i = j;
    }
    em_column_reset(&val);
    em_agg_state_destroy(run);
    return s;
}

/* Expanded rows gathered at once for sliding frames (a single wider frame
 * is gathered alone). */
#define WIN_SLIDE_CHUNK 65536

/* Grows an int32 array to hold at least `need` entries. */
static em_status grow_i32(int32_t **a, int64_t *cap, int64_t need, em_error *err) {
    if (need <= *cap)
        return EM_OK;
    int64_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    int32_t *p = realloc(*a, sizeof *p * (size_t)c);
    if (!p)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    *a = p;
    *cap = c;
    return EM_OK;
}

/* Other frames are recomputed for each distinct frame, as Spark's sliding
 * frames do: per chunk, the frames' one-row buffers are gathered (a row once
 * per frame holding it) and merged in order into one group per frame. */
static em_status agg_sliding(const win_fn *f, const em_batch *bb, int64_t n, const int64_t *fs,
                             const int64_t *fe, int32_t *take, em_pool *pool, em_column *out,
                             em_error *err) {
    int32_t *idx = NULL, *gid = NULL;
    int64_t cap_idx = 0, cap_gid = 0;
    em_status s = EM_OK;
    for (int64_t i = 0; s == EM_OK && i < n;) {
        int64_t total = 0, j = i;
        int32_t runs = 0;
        while (s == EM_OK && j < n) {
            int64_t w = fe[j] - fs[j];
            if (runs > 0 && total + w > WIN_SLIDE_CHUNK)
                break;
            s = grow_i32(&idx, &cap_idx, total + w, err);
            if (s == EM_OK)
                s = grow_i32(&gid, &cap_gid, total + w, err);
            for (int64_t k = fs[j]; s == EM_OK && k < fe[j]; k++, total++) {
                idx[total] = (int32_t)k;
                gid[total] = runs;
            }
            int64_t e = j + 1; /* rows sharing the frame share the value */
            while (e < n && fs[e] == fs[j] && fe[e] == fe[j])
                e++;
            for (int64_t k = j; k < e; k++)
                take[k - i] = runs;
            runs++;
            j = e;
        }
        em_batch *g = NULL;
        em_agg_state *st = NULL;
        em_column val = {0};
        if (s == EM_OK)
            s = em_opu_gather(&bb->schema, bb->cols, idx, total, pool, &g, err);
        if (s == EM_OK)
            s = em_agg_state_create(f->agg, pool, &st, err);
        if (s == EM_OK)
            s = em_agg_state_resize(st, runs, err);
        if (s == EM_OK && total > 0)
            s = em_agg_merge(f->agg, st, gid, g, 0, err);
        if (s == EM_OK)
            s = em_agg_finalize(f->agg, st, pool, &val, err);
        if (s == EM_OK)
            s = em_column_append_rows(out, &val, take, j - i, err);
        em_column_reset(&val);
        em_agg_state_destroy(st);
        em_batch_destroy(g);
        i = j;
    }
    free(idx);
    free(gid);
    return s;
}

/* The one-row buffers of every sorted row as a batch (buffer columns). */
static em_status row_buffers(const win_fn *f, em_agg_state *st, em_pool *pool, int64_t n,
                             em_batch **out, em_error *err) {
    int nb = em_agg_n_buffers(f->agg);
    em_column *bufs = calloc((size_t)nb + 1, sizeof *bufs);
    em_schema bs = {0};
    em_status s = bufs ? EM_OK : EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    if (s == EM_OK)
        s = em_agg_emit_buffers(f->agg, st, pool, bufs, err);
    if (s == EM_OK)
        s = em_schema_init(&bs, nb, err);
    for (int j = 0; s == EM_OK && j < nb; j++)
        s = em_schema_set(&bs, j, em_agg_buffer_name(f->agg, j), em_agg_buffer_type(f->agg, j),
                          true, err);
    if (s == EM_OK)
        s = em_opu_shell_create(&bs, pool, out, err);
    em_schema_reset(&bs);
    if (s == EM_OK) {
        for (int j = 0; j < nb; j++)
            em_column_share(&(*out)->cols[j], &bufs[j]);
        (*out)->n_rows = n;
    }
    for (int j = 0; bufs && j < nb; j++)
        em_column_reset(&bufs[j]);
    free(bufs);
    return s;
}

/* Scratch shared by the functions of one Window: frames, identity and
 * zero row numbers, a take list. */
typedef struct win_scratch {
    int64_t *fs, *fe;
    int32_t *iota, *zeros, *take;
} win_scratch;

/* An aggregate over each row's frame. Every row is first folded into a
 * group of its own (the whole partition's frame: straight into its
 * partition's group) by one vectorized update. */
static em_status win_agg(const win_fn *f, const em_batch *b, const win_ranges *r,
                         const win_scratch *sc, em_pool *pool, em_column *out, em_error *err) {
    int64_t n = r->n;
    bool whole = f->d.lo == EM_WIN_UNBOUNDED && f->d.hi == EM_WIN_UNBOUNDED;
    int32_t *seg = sc->take, n_seg = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!whole || i == r->part_lo[i])
            n_seg++;
        seg[i] = n_seg - 1;
    }
    em_agg_state *st = NULL;
    em_batch *bb = NULL;
    em_column val = {0};
    em_status s = em_agg_state_create(f->agg, pool, &st, err);
    if (s == EM_OK)
        s = em_agg_state_resize(st, n_seg, err);
    if (s == EM_OK && n > 0)
        s = em_agg_update(f->agg, st, seg, b, err);
    if (s == EM_OK && whole) {
        s = em_agg_finalize(f->agg, st, pool, &val, err);
        if (s == EM_OK)
            s = em_column_take(&val, seg, n, pool, out, err);
        goto done;
    }
    if (s == EM_OK)
        s = row_buffers(f, st, pool, n, &bb, err);
    if (s == EM_OK)
        s = em_column_init(out, em_agg_result_type(f->agg), n, pool, err);
    if (s == EM_OK)
        s = win_frames(f, r, sc->fs, sc->fe, err);
    if (s == EM_OK) {
        if (f->d.lo == EM_WIN_UNBOUNDED)
            s = agg_growing(f, bb, r, sc->fe, sc->iota, sc->zeros, pool, out, err);
        else
            s = agg_sliding(f, bb, n, sc->fs, sc->fe, sc->take, pool, out, err);
    }
done:
    em_column_reset(&val);
    em_batch_destroy(bb);
    em_agg_state_destroy(st);
    return s;
}

/* Positions of the non-null values of c (pos) and their running count
 * before each row (pre[i]: in [0, i); n + 1 entries). */
static em_status non_null_index(const em_column *c, int64_t n, int64_t **pos, int64_t **pre,
                                em_error *err) {
    *pos = malloc(sizeof **pos * (size_t)(n + 1));
    *pre = malloc(sizeof **pre * (size_t)(n + 2));
    if (!*pos || !*pre)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        (*pre)[i] = k;
        if (em_column_is_valid(c, i))
            (*pos)[k++] = i;
    }
    (*pre)[n] = k;
    return EM_OK;
}

/* The source row of lag/lead at row i, or -1 outside the partition. */
static int64_t offset_row(const win_fn *f, const win_ranges *r, const int64_t *pos,
                          const int64_t *pre, int64_t i) {
    int64_t lo = r->part_lo[i], hi = r->part_hi[i], n = f->d.n;
    bool lag = f->d.kind == EM_WIN_LAG;
    if (n == 0)
        return i;
    if (!f->d.ignore_nulls) {
        if (lag)
            return n <= i - lo ? i - n : -1;
        return n < hi - i ? i + n : -1;
    }
    if (lag) /* the n-th non-null before i */
        return n <= pre[i] - pre[lo] ? pos[pre[i] - n] : -1;
    return n <= pre[hi] - pre[i + 1] ? pos[pre[i + 1] + n - 1] : -1;
}

/* The n-th (non-null, when ignoring nulls) row of frame [fs, fe), or -1. */
static int64_t nth_row(const win_fn *f, const int64_t *pre, int64_t fs, int64_t fe) {
    if (!f->d.ignore_nulls)
        return f->d.n <= fe - fs ? fs + f->d.n - 1 : -1;
    if (f->d.n > pre[fe] - pre[fs])
        return -1;
    int64_t want = pre[fs] + f->d.n, lo = fs, hi = fe; /* first p with pre[p + 1] >= want */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (pre[mid + 1] >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* lag, lead and nth_value: the input's value at another row of the
 * partition or frame, else the default (lag/lead) or null. */
static em_status win_value_at(const win_fn *f, const em_batch *b, const win_ranges *r,
                              const win_scratch *sc, em_pool *pool, em_column *out, em_error *err) {
    em_column in = {0}, dv = {0};
    int64_t *pos = NULL, *pre = NULL;
    int64_t n = r->n;
    em_status s = em_expr_eval(f->input, b, pool, &in, err);
    if (s == EM_OK && f->dflt)
        s = em_expr_eval(f->dflt, b, pool, &dv, err);
    if (s == EM_OK)
        s = non_null_index(&in, n, &pos, &pre, err);
    if (s == EM_OK)
        s = em_column_init(out, f->type, n, pool, err);
    bool nth = f->d.kind == EM_WIN_NTH_VALUE;
    if (s == EM_OK && nth)
        s = win_frames(f, r, sc->fs, sc->fe, err);
    for (int64_t i = 0; s == EM_OK && i < n; i++) {
        int64_t t = nth ? nth_row(f, pre, sc->fs[i], sc->fe[i]) : offset_row(f, r, pos, pre, i);
        int32_t row = (int32_t)(t >= 0 ? t : i);
        if (t >= 0)
            s = em_column_append_rows(out, &in, &row, 1, err);
        else if (f->dflt)
            s = em_column_append_rows(out, &dv, &row, 1, err);
        else
            s = em_column_append_null(out, err);
    }
    em_column_reset(&in);
    em_column_reset(&dv);
    free(pos);
    free(pre);
    return s;
}

/* Keeps the sorted rows whose rank-like value is within the limit (idx is
 * scratch of n entries). */
static em_status group_limit_filter(em_op *op, window_state *st, const win_ranges *r, int32_t *idx,
                                    em_error *err) {
    em_pool *pool = op->ctx->pool;
    em_column rank = {0};
    EM_TRY(win_rank(&st->limit_fn, r, pool, &rank, err));
    const int32_t *v = (const int32_t *)rank.values->data;
    int64_t kept = 0;
    for (int64_t i = 0; i < st->n; i++)
        if (v[i] <= st->limit)
            idx[kept++] = (int32_t)i;
    em_column_reset(&rank);
    em_batch *b = NULL;
    EM_TRY(em_opu_gather(&st->sorted->schema, st->sorted->cols, idx, kept, pool, &b, err));
    em_batch_destroy(st->sorted);
    st->sorted = b;
    st->n = kept;
    return EM_OK;
}

/* Partition and peer ranges of the sorted rows (keys bound to them). */
static void find_ranges(const window_state *st, win_ranges *r) {
    const em_sort_key *pk = st->all.keys, *ok = st->all.keys + st->n_part;
    int64_t n = r->n;
    for (int64_t i = 0; i < n; i++) {
        bool new_part = i == 0 || em_sort_compare(pk, i - 1, pk, i, st->n_part) != 0;
        bool new_peer = new_part || em_sort_compare(ok, i - 1, ok, i, st->n_order) != 0;
        r->part_lo[i] = new_part ? i : r->part_lo[i - 1];
        r->peer_lo[i] = new_peer ? i : r->peer_lo[i - 1];
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        bool last_part = i + 1 == n || r->part_lo[i + 1] != r->part_lo[i];
        r->part_hi[i] = last_part ? i + 1 : r->part_hi[i + 1];
        r->peer_hi[i] = i + 1 == n || r->peer_lo[i + 1] != r->peer_lo[i] ? i + 1 : r->peer_hi[i + 1];
    }
    r->order_key = st->n_order > 0 ? ok : NULL;
}

/* Reads the child's rows, sorts them into st->sorted and computes every
 * function's column. */
static em_status window_compute(em_op *op, window_state *st, em_error *err) {
    em_op *child = op->children[0];
    em_pool *pool = op->ctx->pool;
    em_batch *acc = NULL;
    EM_TRY(em_batch_create(&child->schema, EM_BATCH_CAP, pool, &acc, err));
    em_status s = EM_OK;
    for (;;) {
        em_batch *in = NULL;
        s = em_op_next(child, &in, err);
        if (s == EM_DONE) {
            s = EM_OK;
            break;
        }
        if (s == EM_OK)
            s = em_batch_append(acc, in, err);
        if (s != EM_OK) {
            em_batch_destroy(acc);
            return s;
        }
    }
    int64_t n = acc->n_rows;
    st->n = n;
    size_t n1 = (size_t)n + 1;
    win_ranges r = {.n = n, .ansi = op->ctx->expr_opts.ansi};
    win_scratch sc = {0};
    int32_t *idx = malloc(sizeof *idx * n1);
    r.part_lo = malloc(sizeof *r.part_lo * n1);
    r.part_hi = malloc(sizeof *r.part_hi * n1);
    r.peer_lo = malloc(sizeof *r.peer_lo * n1);
    r.peer_hi = malloc(sizeof *r.peer_hi * n1);
    sc.fs = malloc(sizeof *sc.fs * n1);
    sc.fe = malloc(sizeof *sc.fe * n1);
    sc.iota = malloc(sizeof *sc.iota * n1);
    sc.zeros = calloc(n1, sizeof *sc.zeros);
    sc.take = malloc(sizeof *sc.take * n1);
    if (!idx || !r.part_lo || !r.part_hi || !r.peer_lo || !r.peer_hi || !sc.fs || !sc.fe ||
        !sc.iota || !sc.zeros || !sc.take)
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; s == EM_OK && i < n; i++)
        idx[i] = sc.iota[i] = (int32_t)i;
    if (s == EM_OK)
        s = em_sort_spec_bind(&st->all, acc, pool, err);
    /* Spark sorts the input below the Window: then it is used as it comes */
    bool in_order = true;
    for (int64_t i = 1; s == EM_OK && in_order && i < n; i++)
        in_order = em_sort_compare(st->all.keys, i - 1, st->all.keys, i, st->all.n) <= 0;
    if (s == EM_OK && !in_order)
        s = em_sort_indices(st->all.keys, st->all.n, idx, n, pool, err);
    /* the output schema: input columns, then results */
    if (s == EM_OK)
        s = em_opu_shell_create(&op->schema, pool, &st->sorted, err);
    em_batch *sorted = st->sorted;
    for (int c = 0; s == EM_OK && c < child->n_output; c++) {
        if (in_order)
            em_column_share(&sorted->cols[c], &acc->cols[c]);
        else
            s = em_column_take(&acc->cols[c], idx, n, pool, &sorted->cols[c], err);
    }
    if (s == EM_OK) {
        sorted->n_rows = n;
        em_batch_destroy(acc);
        acc = NULL;
        s = em_sort_spec_bind(&st->all, sorted, pool, err);
    }
    if (s == EM_OK)
        find_ranges(st, &r);
    for (int f = 0; s == EM_OK && f < st->n_fns; f++) {
        const win_fn *fn = &st->fns[f];
        em_column *out = &sorted->cols[child->n_output + f];
        if (fn->d.kind == EM_WIN_AGG)
            s = win_agg(fn, sorted, &r, &sc, pool, out, err);
        else if (fn->d.kind == EM_WIN_LAG || fn->d.kind == EM_WIN_LEAD || fn->d.kind == EM_WIN_NTH_VALUE)
            s = win_value_at(fn, sorted, &r, &sc, pool, out, err);
        else
            s = win_rank(fn, &r, pool, out, err);
    }
    if (s == EM_OK && st->group_limit)
        s = group_limit_filter(op, st, &r, idx, err);
    em_batch_destroy(acc);
    free(idx);
    free(r.part_lo);
    free(r.part_hi);
    free(r.peer_lo);
    free(r.peer_hi);
    free(sc.fs);
    free(sc.fe);
    free(sc.iota);
    free(sc.zeros);
    free(sc.take);
    return s;
}

static em_status window_next(em_op *op, em_batch **out, em_error *err) {
    window_state *st = op->state;
    if (!st->done_input) {
        st->done_input = true;
        int64_t base = opu_pool_used(op);
        em_status s = window_compute(op, st, err);
        opu_note_peak(op, base);
        if (s != EM_OK)
            return s == EM_ERR_CANCELLED ? s : em_op_fail(op, err);
    }
    em_status s = em_opu_next_range(&op->schema, st->sorted->cols, st->n, &st->emitted, op->ctx->pool,
                                 &st->chunk, err);
    if (s != EM_OK)
        return s == EM_DONE ? s : em_op_fail(op, err);
    *out = st->chunk;
    return EM_OK;
}

static void window_close(em_op *op) {
    window_state *st = op->state;
    if (!st)
        return;
    for (int i = 0; st->fns && i < st->n_fns; i++) {
        em_agg_fn_destroy(st->fns[i].agg);
        em_expr_prog_destroy(st->fns[i].input);
        em_expr_prog_destroy(st->fns[i].dflt);
    }
    free(st->fns);
    st->fns = NULL;
    em_sort_spec_reset(&st->all);
    em_batch_destroy(st->sorted);
    em_batch_destroy(st->chunk);
    st->sorted = st->chunk = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab WINDOW_VTAB = {.name = "Window", .open = window_open, .next = window_next, .close = window_close};
static const em_op_vtab GROUP_LIMIT_VTAB = {.name = "WindowGroupLimit", .open = window_open, .next = window_next, .close = window_close};

/* Window and WindowGroupLimit. */
em_status em_op_window_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    bool gl = node->kind == EM_NODE_WINDOW_GROUP_LIMIT;
    EM_TRY(em_op_init(gl ? &GROUP_LIMIT_VTAB : &WINDOW_VTAB, node, &child, 1, sizeof(window_state),
                      out, err));
    return gl ? em_opu_inherit_output(out, child, err) : EM_OK;
}
