/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Project: evaluates the Output list over each input batch. An attribute
 * (or an alias of one) is passed through by sharing the child's column;
 * anything else is compiled once and evaluated with em_expr_eval, whose
 * result is aligned with the input's physical rows, so the output keeps the
 * input's row count and selection vector unchanged (no compaction).
 */
#include <stdlib.h>

#include "ops/op_util.h"

typedef struct project_state {
    int n;
    int *pass;            /* child ordinal, or -1 when computed */
    em_expr_prog **progs; /* computed outputs */
    em_batch *out;
} project_state;

static em_status project_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    project_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    const em_plan_field *f = em_plan_node_field(op->node, EM_FIELD_OUTPUT);
    int n = f ? f->n_exprs : 0;
    st->n = n;
    st->pass = calloc((size_t)(n ? n : 1), sizeof *st->pass);
    st->progs = calloc((size_t)(n ? n : 1), sizeof *st->progs);
    if (!st->pass || !st->progs)
        return EM_FAIL(err, EM_ERR_NOMEM, "Project (%d): out of memory", op->node->id);
    for (int i = 0; i < n; i++) {
        const em_expr *e = f->exprs[i];
        st->pass[i] = opu_passthrough_index(e, em_op_child_attrs(op, 0), child->n_output);
        if (st->pass[i] >= 0)
            continue;
        const em_expr *body = e->kind == EM_EXPR_ALIAS && e->n_args == 1 ? e->args[0] : e;
        if (em_expr_compile(body, em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts,
                            &st->progs[i], err) != EM_OK)
            return em_op_fail(op, err);
    }
    if (opu_shell_create(&op->schema, ctx->pool, &st->out, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

static em_status project_next(em_op *op, em_batch **out, em_error *err) {
    project_state *st = op->state;
    em_batch *in = NULL;
    EM_TRY(em_op_next(op->children[0], &in, err));
    em_batch *b = st->out;
    opu_shell_release(b);
    for (int i = 0; i < st->n && i < b->n_cols; i++) {
        if (st->pass[i] >= 0) {
            em_column_share(&b->cols[i], &in->cols[st->pass[i]]);
            continue;
        }
        if (em_expr_eval(st->progs[i], in, op->ctx->pool, &b->cols[i], err) != EM_OK)
            return em_op_fail(op, err);
    }
    b->n_rows = in->n_rows;
    if (opu_set_sel(b, in->sel, in->n_sel, err) != EM_OK)
        return em_op_fail(op, err);
    *out = b;
    return EM_OK;
}

static void project_close(em_op *op) {
    project_state *st = op->state;
    if (!st)
        return;
    for (int i = 0; st->progs && i < st->n; i++)
        em_expr_prog_free(st->progs[i]);
    free(st->progs);
    free(st->pass);
    st->progs = NULL;
    st->pass = NULL;
    em_batch_destroy(st->out);
    st->out = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab PROJECT_VTAB = {"Project", project_open, project_next, project_close};

em_status em_op_project_create(const em_plan_node *node, em_op *child, em_op **out,
                               em_error *err) {
    return em_op_init(&PROJECT_VTAB, node, &child, 1, sizeof(project_state), out, err);
}
