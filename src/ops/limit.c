/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CollectLimit, GlobalLimit and LocalLimit: pass the first `limit` rows
 * (after skipping `offset` rows, for Spark 3.4+'s OFFSET) of the input and
 * stop pulling the child once they are out. Rows are cut by narrowing the
 * selection of a shell over the child's batch, never by copying. Making
 * the limit global is the runtime's job (a single-partition input).
 *
 * Arguments: CollectLimit prints `limit` (and `offset` when non-zero, 3.4+),
 * GlobalLimit/LocalLimit print `limit` (GlobalLimit `limit, offset`); a limit
 * of -1 (OFFSET alone) takes every row after the offset.
 */
#include "ops/op_util.h"

typedef struct limit_state {
    int64_t limit, offset;
    int64_t seen; /* rows consumed from the child */
    em_batch *shell;
} limit_state;

static em_status limit_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    limit_state *st = op->state;
    int n = 0;
    const em_expr *const *args = em_opu_arguments(op->node, &n);
    if (n < 1)
        return EM_FAIL(err, EM_ERR_PARSE, "%s (%d): no limit in Arguments", op->vtab->name,
                       op->node->id);
    EM_TRY(em_opu_limit_args(op->node, args, n, 0, 1, &st->limit, &st->offset, err));
    st->seen = 0;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    if (em_opu_shell_create(&op->children[0]->schema, ctx->pool, &st->shell, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

static em_status limit_next(em_op *op, em_batch **out, em_error *err) {
    limit_state *st = op->state;
    int64_t end = st->offset + st->limit;
    while (st->seen < end) {
        em_batch *in = NULL;
        EM_TRY(em_op_next(op->children[0], &in, err));
        int64_t rows = em_batch_rows(in);
        int64_t lo = st->offset > st->seen ? st->offset - st->seen : 0;
        int64_t hi = end - st->seen < rows ? end - st->seen : rows;
        st->seen += rows;
        if (lo >= hi)
            continue;
        if (em_opu_shell_share(st->shell, in, NULL, err) != EM_OK)
            return em_op_fail(op, err);
        if (lo > 0 || hi < rows) {
            em_batch *b = st->shell;
            if (!b->sel) {
                if (em_batch_sel_reserve(b, hi - lo, err) != EM_OK)
                    return em_op_fail(op, err);
                for (int64_t i = lo; i < hi; i++)
                    b->sel[i - lo] = (int32_t)i;
            } else {
                for (int64_t i = lo; i < hi; i++)
                    b->sel[i - lo] = b->sel[i];
            }
            b->n_sel = hi - lo;
        }
        *out = st->shell;
        return EM_OK;
    }
    return EM_DONE;
}

static void limit_close(em_op *op) {
    limit_state *st = op->state;
    if (!st)
        return;
    em_batch_destroy(st->shell);
    st->shell = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab COLLECT_VTAB = {.name = "CollectLimit", .open = limit_open, .next = limit_next, .close = limit_close};
static const em_op_vtab GLOBAL_VTAB = {.name = "GlobalLimit", .open = limit_open, .next = limit_next, .close = limit_close};
static const em_op_vtab LOCAL_VTAB = {.name = "LocalLimit", .open = limit_open, .next = limit_next, .close = limit_close};

em_status em_op_limit_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    const em_op_vtab *vt = node->kind == EM_NODE_GLOBAL_LIMIT  ? &GLOBAL_VTAB
                           : node->kind == EM_NODE_LOCAL_LIMIT ? &LOCAL_VTAB
                                                               : &COLLECT_VTAB;
    EM_TRY(em_op_init(vt, node, &child, 1, sizeof(limit_state), out, err));
    return em_opu_inherit_output(out, child, err);
}
