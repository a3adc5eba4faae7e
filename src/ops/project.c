/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Project: evaluates the Output list over each input batch. An attribute
 * (or an alias of one) is passed through by sharing the child's column;
 * anything else is compiled once and evaluated with em_expr_eval, whose
 * result is aligned with the input's physical rows, so the output keeps the
 * input's row count and selection vector unchanged (no compaction).
 */
#include "ops/op_util.h"

typedef struct project_state {
    opu_proj proj;
    em_batch *out;
} project_state;

static em_status project_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    project_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    const em_plan_field *f = em_plan_node_field(op->node, EM_FIELD_OUTPUT);
    if (em_opu_proj_init(&st->proj, f ? (const em_expr *const *)f->exprs : NULL, f ? f->n_exprs : 0,
                      em_op_child_attrs(op, 0), op->children[0]->n_output, &ctx->expr_opts,
                      err) != EM_OK ||
        em_opu_shell_create(&op->schema, ctx->pool, &st->out, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

static em_status project_next(em_op *op, em_batch **out, em_error *err) {
    project_state *st = op->state;
    em_batch *in = NULL;
    EM_TRY(em_op_next(op->children[0], &in, err));
    if (em_opu_proj_eval(&st->proj, in, st->out, op->ctx->pool, err) != EM_OK)
        return em_op_fail(op, err);
    *out = st->out;
    return EM_OK;
}

static void project_close(em_op *op) {
    project_state *st = op->state;
    if (!st)
        return;
    em_opu_proj_reset(&st->proj);
    em_batch_destroy(st->out);
    st->out = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab PROJECT_VTAB = {.name = "Project", .open = project_open, .next = project_next, .close = project_close};

em_status em_op_project_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    return em_op_init(&PROJECT_VTAB, node, &child, 1, sizeof(project_state), out, err);
}
