/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sources over another stage's output: this task's partition of a shuffle
 * (Exchange) or the whole relation of a broadcast (BroadcastExchange), as
 * the runtime stored them in an em_batch_list. Batches are handed out
 * through a shell that shares their buffers, never copying and never
 * modifying the runtime's batches.
 *
 * ReusedExchange: the node's own Output attributes name the columns (their
 * ids differ from the reused exchange's), and they map by position onto the
 * reused exchange's data, so the reader asks the runtime for the reused
 * node's data and labels it with its own attributes.
 */
#include "ops/op_util.h"

typedef struct xread_state {
    bool broadcast;
    const em_batch_list *list;
    void *cursor; /* the runtime's stream over a shuffle partition, when it offers one */
    em_exec_ctx *ctx;
    int64_t next;
    em_batch *shell;
} xread_state;

static em_status xread_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    xread_state *st = op->state;
    const em_plan_node *src = op->node;
    if (src->kind == EM_NODE_REUSED_EXCHANGE && src->reuses)
        src = src->reuses;
    em_status s;
    st->ctx = ctx;
    if (st->broadcast)
        s = ctx->broadcast_input ? ctx->broadcast_input(ctx, src, &st->list, err)
                                 : EM_FAIL(err, EM_ERR_INTERNAL, "no broadcast input provider");
    else if (ctx->shuffle_stream_open && ctx->shuffle_stream_next)
        s = ctx->shuffle_stream_open(ctx, src, &st->cursor, err);
    else
        s = ctx->shuffle_input ? ctx->shuffle_input(ctx, src, &st->list, err)
                               : EM_FAIL(err, EM_ERR_INTERNAL, "no shuffle input provider");
    if (s != EM_OK)
        return em_op_fail(op, err);
    if (em_opu_shell_create(&op->schema, ctx->pool, &st->shell, err) != EM_OK)
        return em_op_fail(op, err);
    st->next = 0;
    return EM_OK;
}

/* The next input batch (EM_DONE at the end), from the stream or the list. */
static em_status xread_pull(xread_state *st, const em_batch **b, em_error *err) {
    if (st->cursor)
        return st->ctx->shuffle_stream_next(st->ctx, st->cursor, b, err);
    if (!st->list || st->next >= st->list->n_batches)
        return EM_DONE;
    *b = st->list->batches[st->next++];
    return EM_OK;
}

static em_status xread_next(em_op *op, em_batch **out, em_error *err) {
    xread_state *st = op->state;
    for (;;) {
        const em_batch *b = NULL;
        em_status s = xread_pull(st, &b, err);
        if (s == EM_DONE)
            return EM_DONE;
        if (s != EM_OK)
            return em_op_fail(op, err);
        if (em_batch_rows(b) == 0)
            continue;
        if (b->n_cols != st->shell->n_cols) {
            EM_FAIL(err, EM_ERR_INTERNAL, "input has %d columns, the node has %d", b->n_cols,
                    st->shell->n_cols);
            return em_op_fail(op, err);
        }
        if (em_opu_shell_share(st->shell, b, NULL, err) != EM_OK)
            return em_op_fail(op, err);
        *out = st->shell;
        return EM_OK;
    }
}

static void xread_close(em_op *op) {
    xread_state *st = op->state;
    if (!st)
        return;
    em_batch_destroy(st->shell);
    st->shell = NULL;
    st->list = NULL;
    if (st->cursor && st->ctx->shuffle_stream_close)
        st->ctx->shuffle_stream_close(st->ctx, st->cursor);
    st->cursor = NULL;
}

static const em_op_vtab SHUFFLE_VTAB = {.name = "ShuffleRead", .open = xread_open, .next = xread_next, .close = xread_close};
static const em_op_vtab BROADCAST_VTAB = {.name = "BroadcastRead", .open = xread_open, .next = xread_next, .close = xread_close};

static em_status xread_create(const em_op_vtab *vt, bool broadcast, const em_plan_node *node,
                              em_op **out, em_error *err) {
    EM_TRY(em_op_init(vt, node, NULL, 0, sizeof(xread_state), out, err));
    ((xread_state *)(*out)->state)->broadcast = broadcast;
    return EM_OK;
}

em_status em_op_shuffle_read_create(const em_plan_node *node, em_op **out, em_error *err) {
    return xread_create(&SHUFFLE_VTAB, false, node, out, err);
}

em_status em_op_broadcast_read_create(const em_plan_node *node, em_op **out, em_error *err) {
    return xread_create(&BROADCAST_VTAB, true, node, out, err);
}
