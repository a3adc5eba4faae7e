/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Expand: every input row once per projection (Spark's ExpandExec, used
 * for ROLLUP/CUBE/GROUPING SETS and for several distinct aggregates).
 * Arguments: `[[projection 1], [projection 2], ...], [output attrs]`.
 *
 * For each input batch the operator emits one batch per projection, in
 * projection order; Spark emits row by row (all projections of row 1, then
 * of row 2), an order no consumer depends on (Expand always feeds an
 * aggregate). Attributes are shared, `null` literals become all-null
 * columns of the output type, anything else is evaluated.
 */
#include <stdlib.h>

#include "ops/op_util.h"

typedef struct expand_state {
    int n_proj;
    opu_proj *projs;
    em_batch *in; /* current child batch (owned by the child) */
    int next_proj;
    em_batch *out;
} expand_state;

static em_status expand_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    expand_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    int n = 0;
    const em_expr *const *args = em_opu_arguments(op->node, &n);
    if (n < 1 || args[0]->kind != EM_EXPR_LIST)
        return EM_FAIL(err, EM_ERR_PARSE, "Expand (%d): no projection list in Arguments",
                       op->node->id);
    const em_expr *lists = args[0];
    st->projs = calloc((size_t)lists->n_args + 1, sizeof *st->projs);
    if (!st->projs)
        return EM_FAIL(err, EM_ERR_NOMEM, "Expand (%d): out of memory", op->node->id);
    st->n_proj = lists->n_args;
    for (int p = 0; p < st->n_proj; p++) {
        const em_expr *pl = lists->args[p];
        if (pl->kind != EM_EXPR_LIST || pl->n_args != op->n_output)
            return EM_FAIL(err, EM_ERR_PARSE,
                           "Expand (%d): projection %d does not have %d expressions", op->node->id,
                           p + 1, op->n_output);
        if (em_opu_proj_init(&st->projs[p], (const em_expr *const *)pl->args, pl->n_args,
                          em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts, err) != EM_OK)
            return em_op_fail(op, err);
    }
    if (em_opu_shell_create(&op->schema, ctx->pool, &st->out, err) != EM_OK)
        return em_op_fail(op, err);
    st->in = NULL;
    st->next_proj = 0;
    return EM_OK;
}

static em_status expand_next(em_op *op, em_batch **out, em_error *err) {
    expand_state *st = op->state;
    if (st->n_proj == 0)
        return EM_DONE;
    if (!st->in || st->next_proj == st->n_proj) {
        EM_TRY(em_op_next(op->children[0], &st->in, err));
        st->next_proj = 0;
    }
    if (em_opu_proj_eval(&st->projs[st->next_proj++], st->in, st->out, op->ctx->pool, err) != EM_OK)
        return em_op_fail(op, err);
    *out = st->out;
    return EM_OK;
}

static void expand_close(em_op *op) {
    expand_state *st = op->state;
    if (!st)
        return;
    for (int p = 0; st->projs && p < st->n_proj; p++)
        em_opu_proj_reset(&st->projs[p]);
    free(st->projs);
    st->projs = NULL;
    em_batch_destroy(st->out);
    st->out = NULL;
    st->in = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab EXPAND_VTAB = {.name = "Expand", .open = expand_open, .next = expand_next, .close = expand_close};

em_status em_op_expand_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    return em_op_init(&EXPAND_VTAB, node, &child, 1, sizeof(expand_state), out, err);
}
