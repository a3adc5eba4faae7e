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
 * over contiguous ranges:
 *   row_number()            position in the partition
 *   rank(...), dense_rank() from peer-group changes (rows equal on the
 *                           order keys are peers)
 *   aggregates (sum, avg, count, min, max, first) with em_agg_* in complete
 *                           mode over a frame that is the whole partition
 *                           (unbounded preceding .. unbounded following, or
 *                           no ORDER BY), or growing: unbounded preceding ..
 *                           current row, by peer group (RangeFrame, Spark's
 *                           default with ORDER BY) or by row (RowFrame).
 * A growing frame folds each new segment (peer group or row) into one
 * running state and finalizes it per segment, so the work stays linear.
 * Other frames (sliding offsets) and functions (lag, lead, ntile, ...) are
 * reported as unsupported, naming the expression.
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

#include "ops/op_util.h"
#include "ops/sort_keys.h"

typedef enum win_kind { WIN_ROW_NUMBER, WIN_RANK, WIN_DENSE_RANK, WIN_AGG } win_kind;
typedef enum win_frame { FRAME_PARTITION, FRAME_RANGE_RUNNING, FRAME_ROW_RUNNING } win_frame;

typedef struct win_fn {
    win_kind kind;
    win_frame frame;
    em_agg_fn *agg;
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

static bool is_call(const em_expr *e, const char *name) {
    return e && e->kind == EM_EXPR_CALL && e->name && strcmp(e->name, name) == 0;
}

static em_status win_unsupported(const em_expr *e, const char *what, em_error *err) {
    char *text = NULL;
    size_t len = 0;
    em_status s = em_expr_print(e, NULL, &text, &len, NULL);
    EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s in window expression %s", what, s == EM_OK ? text : "?");
    free(text);
    return err ? err->code : EM_ERR_UNSUPPORTED;
}

/* Reads one window expression (an ALIAS of a WINDOW). */
static em_status win_compile(const em_expr *alias, const em_expr *const *attrs, int n_attrs,
                             const em_expr_compile_options *opts, bool has_order, win_fn *out,
                             em_error *err) {
    const em_expr *w = alias->kind == EM_EXPR_ALIAS && alias->n_args == 1 ? alias->args[0] : alias;
    if (w->kind != EM_EXPR_WINDOW || w->n_args != 2)
        return win_unsupported(alias, "not a window function", err);
    const em_expr *fn = w->args[0], *spec = w->args[1];
    out->type = alias->type;
    /* the frame: last argument of windowspecdefinition */
    const em_expr *frame = spec->n_args > 0 ? spec->args[spec->n_args - 1] : NULL;
    out->frame = has_order ? FRAME_RANGE_RUNNING : FRAME_PARTITION;
    if (is_call(frame, "specifiedwindowframe") && frame->n_args == 3) {
        const em_expr *ft = frame->args[0], *lo = frame->args[1], *hi = frame->args[2];
        bool rows = ft->text && strcmp(ft->text, "RowFrame") == 0;
        if (!is_call(lo, "unboundedpreceding$"))
            return win_unsupported(alias, "frame not starting at unbounded preceding", err);
        if (is_call(hi, "unboundedfollowing$"))
            out->frame = FRAME_PARTITION;
        else if (is_call(hi, "currentrow$"))
            out->frame = rows ? FRAME_ROW_RUNNING : FRAME_RANGE_RUNNING;
        else
            return win_unsupported(alias, "frame not ending at current row or unbounded following",
                                   err);
    }
    if (fn->kind == EM_EXPR_AGG) {
        out->kind = WIN_AGG;
        EM_TRY(em_agg_compile(fn, attrs, n_attrs, opts, &out->agg, err));
        return EM_OK;
    }
    if (is_call(fn, "row_number"))
        out->kind = WIN_ROW_NUMBER;
    else if (is_call(fn, "rank"))
        out->kind = WIN_RANK;
    else if (is_call(fn, "dense_rank"))
        out->kind = WIN_DENSE_RANK;
    else
        return win_unsupported(alias, "unsupported function", err);
    out->type = em_type_make(EM_TYPE_INT);
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
    if (is_call(fn, "rank"))
        st->limit_fn.kind = WIN_RANK;
    else if (is_call(fn, "dense_rank"))
        st->limit_fn.kind = WIN_DENSE_RANK;
    else if (is_call(fn, "row_number"))
        st->limit_fn.kind = WIN_ROW_NUMBER;
    else {
        EM_FAIL(err, EM_ERR_UNSUPPORTED, "group limit by %s", fn->name ? fn->name : "?");
        return em_op_fail(op, err);
    }
    return opu_int_arg(op->node, lim, "limit", &st->limit, err);
}

static em_status window_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    window_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    int n = 0;
    const em_expr *const *args = opu_arguments(op->node, &n);
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
    for (int i = 0; i < st->n_fns; i++)
        if (win_compile(list->args[i], em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts,
                        st->n_order > 0, &st->fns[i], err) != EM_OK)
            return em_op_fail(op, err);
    return EM_OK;
}

/* rank-like functions into an int column */
static em_status win_rank(const win_fn *f, const int64_t *part_start, const bool *peer_start,
                          int64_t n, em_pool *pool, em_column *out, em_error *err) {
    EM_TRY(em_column_init(out, em_type_make(EM_TYPE_INT), n, pool, err));
    int32_t v = 0, dense = 0;
    int64_t lo = 0;
    for (int64_t i = 0; i < n; i++) {
        if (part_start[i] == i) {
            lo = i;
            dense = 0;
        }
        if (f->kind == WIN_ROW_NUMBER)
            v = (int32_t)(i - lo + 1);
        else if (peer_start[i] || part_start[i] == i) {
            dense++;
            v = f->kind == WIN_RANK ? (int32_t)(i - lo + 1) : dense;
        }
        EM_TRY(em_column_append_fixed(out, &v, err));
    }
    return EM_OK;
}

/* An aggregate over whole-partition or growing frames, in linear time: one
 * update pass folds every row into its segment's group (segment = the
 * partition, a peer group or a row, by frame). A whole-partition frame's
 * rows then take their segment's final value; a growing frame merges the
 * segments' buffers in order into one running state per partition and
 * finalizes it after each segment. */
static em_status win_agg(const win_fn *f, const em_batch *b, const int64_t *part_start,
                         const bool *peer_start, int64_t n, em_pool *pool, em_column *out,
                         em_error *err) {
    em_agg_state *seg_st = NULL, *run = NULL;
    em_column val = {0}, *bufs = NULL;
    em_batch *bb = NULL;
    int nb = em_agg_n_buffers(f->agg);
    int32_t *seg = malloc(sizeof *seg * (size_t)(n + 1));
    int32_t *zeros = calloc((size_t)n + 1, sizeof *zeros);
    int64_t *seg_first = malloc(sizeof *seg_first * (size_t)(n + 1));
    em_status s = EM_OK;
    if (!seg || !zeros || !seg_first)
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    int64_t n_seg = 0;
    for (int64_t i = 0; s == EM_OK && i < n; i++) {
        bool start = part_start[i] == i || f->frame == FRAME_ROW_RUNNING ||
                     (f->frame == FRAME_RANGE_RUNNING && peer_start[i]);
        if (start)
            seg_first[n_seg++] = i;
        seg[i] = (int32_t)(n_seg - 1);
    }
    if (s == EM_OK)
        s = em_agg_state_create(f->agg, pool, &seg_st, err);
    if (s == EM_OK)
        s = em_agg_state_resize(seg_st, n_seg, err);
    if (s == EM_OK && n > 0)
        s = em_agg_update(f->agg, seg_st, seg, b, err);
    if (s == EM_OK && f->frame == FRAME_PARTITION) {
        s = em_agg_finalize(f->agg, seg_st, pool, &val, err);
        if (s == EM_OK)
            s = em_column_take(&val, seg, n, pool, out, err);
        goto done;
    }
    /* growing frames: the segments' buffers as a batch, merged in order */
    if (s == EM_OK && !(bufs = calloc((size_t)nb, sizeof *bufs)))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    if (s == EM_OK)
        s = em_agg_emit_buffers(f->agg, seg_st, pool, bufs, err);
    em_schema bs = {0};
    if (s == EM_OK)
        s = em_schema_init(&bs, nb, err);
    for (int j = 0; s == EM_OK && j < nb; j++)
        s = em_schema_set(&bs, j, em_agg_buffer_name(f->agg, j), em_agg_buffer_type(f->agg, j),
                          true, err);
    if (s == EM_OK)
        s = opu_shell_create(&bs, pool, &bb, err);
    em_schema_reset(&bs);
    if (s == EM_OK) {
        for (int j = 0; j < nb; j++)
            em_column_share(&bb->cols[j], &bufs[j]);
        bb->n_rows = n_seg;
        s = em_column_init(out, em_agg_result_type(f->agg), n, pool, err);
    }
    for (int64_t g = 0; s == EM_OK && g < n_seg; g++) {
        int64_t a = seg_first[g], e = g + 1 < n_seg ? seg_first[g + 1] : n;
        if (part_start[a] == a) { /* a new partition: a fresh running state */
            em_agg_state_free(run);
            run = NULL;
            s = em_agg_state_create(f->agg, pool, &run, err);
            if (s == EM_OK)
                s = em_agg_state_resize(run, 1, err);
        }
        int32_t one = (int32_t)g;
        if (s == EM_OK)
            s = opu_set_sel(bb, &one, 1, err);
        if (s == EM_OK)
            s = em_agg_merge(f->agg, run, zeros, bb, 0, err);
        if (s == EM_OK) {
            em_column_reset(&val);
            s = em_agg_finalize(f->agg, run, pool, &val, err);
        }
        if (s == EM_OK)
            s = em_column_append_rows(out, &val, zeros, e - a, err);
    }
done:
    em_column_reset(&val);
    for (int j = 0; bufs && j < nb; j++)
        em_column_reset(&bufs[j]);
    free(bufs);
    em_batch_destroy(bb);
    em_agg_state_free(seg_st);
    em_agg_state_free(run);
    free(seg);
    free(zeros);
    free(seg_first);
    return s;
}

/* Keeps the sorted rows whose rank-like value is within the limit (idx is
 * scratch of n entries). */
static em_status group_limit_filter(em_op *op, window_state *st, const int64_t *part_start,
                                    const bool *peer_start, int32_t *idx, em_error *err) {
    em_pool *pool = op->ctx->pool;
    em_column rank = {0};
    EM_TRY(win_rank(&st->limit_fn, part_start, peer_start, st->n, pool, &rank, err));
    const int32_t *v = (const int32_t *)rank.values->data;
    int64_t kept = 0;
    for (int64_t i = 0; i < st->n; i++)
        if (v[i] <= st->limit)
            idx[kept++] = (int32_t)i;
    em_column_reset(&rank);
    em_batch *b = NULL;
    EM_TRY(opu_gather(&st->sorted->schema, st->sorted->cols, idx, kept, pool, &b, err));
    em_batch_destroy(st->sorted);
    st->sorted = b;
    st->n = kept;
    return EM_OK;
}

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
    int32_t *idx = malloc(sizeof *idx * (size_t)(n + 1));
    int64_t *part_start = malloc(sizeof *part_start * (size_t)(n + 1));
    bool *peer_start = calloc((size_t)n + 1, sizeof *peer_start);
    if (!idx || !part_start || !peer_start)
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; s == EM_OK && i < n; i++)
        idx[i] = (int32_t)i;
    if (s == EM_OK)
        s = em_sort_spec_bind(&st->all, acc, pool, err);
    if (s == EM_OK)
        s = em_sort_indices(st->all.keys, st->all.n, idx, n, pool, err);
    /* the output schema: input columns, then results */
    if (s == EM_OK)
        s = opu_shell_create(&op->schema, pool, &st->sorted, err);
    em_batch *sorted = st->sorted;
    for (int c = 0; s == EM_OK && c < child->n_output; c++)
        s = em_column_take(&acc->cols[c], idx, n, pool, &sorted->cols[c], err);
    if (s == EM_OK) {
        sorted->n_rows = n;
        em_batch_destroy(acc);
        acc = NULL;
        s = em_sort_spec_bind(&st->all, sorted, pool, err);
    }
    /* partition and peer boundaries on the sorted rows */
    for (int64_t i = 0; s == EM_OK && i < n; i++) {
        bool new_part =
            i == 0 || em_sort_compare(st->all.keys, i - 1, st->all.keys, i, st->n_part) != 0;
        part_start[i] = new_part ? i : part_start[i - 1];
        peer_start[i] = new_part || em_sort_compare(st->all.keys + st->n_part, i - 1,
                                                    st->all.keys + st->n_part, i, st->n_order) != 0;
    }
    for (int f = 0; s == EM_OK && f < st->n_fns; f++) {
        em_column *out = &sorted->cols[child->n_output + f];
        if (st->fns[f].kind == WIN_AGG)
            s = win_agg(&st->fns[f], sorted, part_start, peer_start, n, pool, out, err);
        else
            s = win_rank(&st->fns[f], part_start, peer_start, n, pool, out, err);
    }
    if (s == EM_OK && st->group_limit)
        s = group_limit_filter(op, st, part_start, peer_start, idx, err);
    em_batch_destroy(acc);
    free(idx);
    free(part_start);
    free(peer_start);
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
    em_status s = opu_next_range(&op->schema, st->sorted->cols, st->n, &st->emitted, op->ctx->pool,
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
    for (int i = 0; st->fns && i < st->n_fns; i++)
        em_agg_fn_free(st->fns[i].agg);
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
    return gl ? opu_inherit_output(out, child, err) : EM_OK;
}
