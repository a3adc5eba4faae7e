/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TakeOrderedAndProject: the first `limit` rows of the input in the given
 * order, projected through the project list. Arguments: `limit, [orders],
 * [project list]` (Spark 3.4+ may append an offset: the first `offset` rows
 * of the order are skipped). Per task this is a top-N; the runtime makes it
 * global by running it once more over a single-partition input, as Spark does.
 *
 * Algorithm: rows are accumulated in a buffer; whenever the buffer holds
 * more than limit + max(limit, EM_BATCH_CAP) rows it is sorted and cut back
 * to its first `limit` rows, so memory stays O(limit + batch) and the work
 * is O(n log limit) amortized. Sorting is stable, so among equal keys the
 * earlier input rows win. At the end the buffer is sorted once more, cut,
 * and the project list is evaluated over the kept rows.
 */
#include <stdlib.h>

#include "ops/op_util.h"
#include "ops/sort_keys.h"

typedef struct topn_state {
    int64_t limit;  /* rows kept: the limit plus the offset */
    int64_t offset; /* rows of the order skipped before output */
    em_sort_spec spec;
    opu_proj proj;
    em_batch *buf; /* candidate rows (child schema) */
    bool done_input;
    int64_t emitted;
    em_batch *chunk, *out;
} topn_state;

static em_status topn_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    topn_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    int n = 0;
    const em_expr *const *args = em_opu_arguments(op->node, &n);
    if (n < 2 || args[1]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "expected `limit, [orders], [project list]` in Arguments");
        return em_op_fail(op, err);
    }
    EM_TRY(em_opu_int_arg(op->node, args[0], "limit", &st->limit, err));
    st->offset = 0;
    if (n >= 4 && (args[3]->kind == EM_EXPR_LITERAL || args[3]->kind == EM_EXPR_RAW))
        EM_TRY(em_opu_int_arg(op->node, args[3], "offset", &st->offset, err));
    st->limit += st->offset;
    st->emitted = st->offset;
    if (em_sort_spec_init(&st->spec, (const em_expr *const *)args[1]->args, args[1]->n_args,
                          em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts, err) != EM_OK)
        return em_op_fail(op, err);
    const em_expr *proj = n >= 3 && args[2]->kind == EM_EXPR_LIST ? args[2] : NULL;
    const em_expr *const *pl =
        proj ? (const em_expr *const *)proj->args : (const em_expr *const *)op->output;
    if (em_opu_proj_init(&st->proj, pl, proj ? proj->n_args : op->n_output, em_op_child_attrs(op, 0),
                      child->n_output, &ctx->expr_opts, err) != EM_OK)
        return em_op_fail(op, err);
    if (em_batch_create(&child->schema, EM_BATCH_CAP, ctx->pool, &st->buf, err) != EM_OK ||
        em_opu_shell_create(&op->schema, ctx->pool, &st->out, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

/* Sorts the buffer and keeps its first `limit` rows. */
static em_status topn_cut(em_op *op, topn_state *st, em_error *err) {
    int64_t n = st->buf->n_rows;
    int32_t *idx = malloc(sizeof *idx * (size_t)(n + 1));
    if (!idx)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        idx[i] = (int32_t)i;
    em_status s = em_sort_spec_bind(&st->spec, st->buf, op->ctx->pool, err);
    if (s == EM_OK)
        s = em_sort_indices(st->spec.keys, st->spec.n, idx, n, op->ctx->pool, err);
    em_batch *kept = NULL;
    if (s == EM_OK)
        s = em_opu_gather(&st->buf->schema, st->buf->cols, idx, n < st->limit ? n : st->limit,
                       op->ctx->pool, &kept, err);
    free(idx);
    if (s != EM_OK)
        return s;
    em_batch_destroy(st->buf);
    st->buf = kept;
    return EM_OK;
}

static em_status topn_drain(em_op *op, topn_state *st, em_error *err) {
    int64_t slack = st->limit > EM_BATCH_CAP ? st->limit : EM_BATCH_CAP;
    for (;;) {
        em_batch *in = NULL;
        em_status s = em_op_next(op->children[0], &in, err);
        if (s == EM_DONE)
            break;
        if (s != EM_OK)
            return s;
        if (st->limit == 0)
            continue;
        EM_TRY(em_batch_append(st->buf, in, err));
        if (st->buf->n_rows > st->limit + slack)
            EM_TRY(topn_cut(op, st, err));
    }
    return topn_cut(op, st, err);
}

static em_status topn_next(em_op *op, em_batch **out, em_error *err) {
    topn_state *st = op->state;
    if (!st->done_input) {
        st->done_input = true;
        int64_t base = opu_pool_used(op);
        em_status s = topn_drain(op, st, err);
        opu_note_peak(op, base);
        if (s != EM_OK)
            return s == EM_ERR_CANCELLED ? s : em_op_fail(op, err);
    }
    em_status s = em_opu_next_range(&st->buf->schema, st->buf->cols, st->buf->n_rows, &st->emitted,
                                 op->ctx->pool, &st->chunk, err);
    if (s != EM_OK)
        return s == EM_DONE ? s : em_op_fail(op, err);
    if (em_opu_proj_eval(&st->proj, st->chunk, st->out, op->ctx->pool, err) != EM_OK)
        return em_op_fail(op, err);
    *out = st->out;
    return EM_OK;
}

static void topn_close(em_op *op) {
    topn_state *st = op->state;
    if (!st)
        return;
    em_sort_spec_reset(&st->spec);
    em_opu_proj_reset(&st->proj);
    em_batch_destroy(st->buf);
    em_batch_destroy(st->chunk);
    em_batch_destroy(st->out);
    st->buf = st->chunk = st->out = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab TOPN_VTAB = {.name = "TakeOrderedAndProject", .open = topn_open, .next = topn_next, .close = topn_close};

em_status em_op_top_n_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    return em_op_init(&TOPN_VTAB, node, &child, 1, sizeof(topn_state), out, err);
}
