/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Filter: keeps the rows where Condition is true (null and false drop the
 * row, Spark's three-valued logic). The child's batch is not copied: a shell
 * shares its columns and the condition narrows the shell's selection, so
 * the child's own batch (which may belong to the runtime) is never touched.
 */
#include "ops/op_util.h"

typedef struct filter_state {
    em_expr_prog *cond;
    em_batch *shell;
} filter_state;

static em_status filter_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    filter_state *st = op->state;
    const em_plan_field *f = em_plan_node_field(op->node, EM_FIELD_CONDITION);
    if (!f || f->n_exprs < 1)
        return EM_FAIL(err, EM_ERR_PARSE, "Filter (%d): no Condition", op->node->id);
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    if (em_expr_compile(f->exprs[0], em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts,
                        &st->cond, err) != EM_OK)
        return em_op_fail(op, err);
    if (em_opu_shell_create(&child->schema, ctx->pool, &st->shell, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

static em_status filter_next(em_op *op, em_batch **out, em_error *err) {
    filter_state *st = op->state;
    for (;;) {
        em_batch *in = NULL;
        EM_TRY(em_op_next(op->children[0], &in, err));
        if (em_opu_shell_share(st->shell, in, NULL, err) != EM_OK ||
            em_expr_filter(st->cond, st->shell, err) != EM_OK)
            return em_op_fail(op, err);
        if (em_batch_rows(st->shell) > 0) {
            *out = st->shell;
            return EM_OK;
        }
    }
}

static void filter_close(em_op *op) {
    filter_state *st = op->state;
    if (!st)
        return;
    em_expr_prog_destroy(st->cond);
    st->cond = NULL;
    em_batch_destroy(st->shell);
    st->shell = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab FILTER_VTAB = {.name = "Filter", .open = filter_open, .next = filter_next, .close = filter_close};

em_status em_op_filter_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    EM_TRY(em_op_init(&FILTER_VTAB, node, &child, 1, sizeof(filter_state), out, err));
    return em_opu_inherit_output(out, child, err);
}
