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
#include <string.h>

#include "ops/op_util.h"

typedef struct expand_state {
    int n_proj, n_cols;
    int *pass;            /* [n_proj * n_cols]: child ordinal, -1 computed, -2 null */
    em_expr_prog **progs; /* [n_proj * n_cols] */
    em_batch *in;         /* current child batch (owned by the child) */
    int next_proj;
    em_batch *out;
} expand_state;

static em_status expand_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    expand_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    em_op *child = op->children[0];
    int n = 0;
    const em_expr *const *args = opu_arguments(op->node, &n);
    if (n < 1 || args[0]->kind != EM_EXPR_LIST)
        return EM_FAIL(err, EM_ERR_PARSE, "Expand (%d): no projection list in Arguments",
                       op->node->id);
    const em_expr *projs = args[0];
    st->n_proj = projs->n_args;
    st->n_cols = op->n_output;
    size_t cells = (size_t)st->n_proj * (size_t)st->n_cols + 1;
    st->pass = calloc(cells, sizeof *st->pass);
    st->progs = calloc(cells, sizeof *st->progs);
    if (!st->pass || !st->progs)
        return EM_FAIL(err, EM_ERR_NOMEM, "Expand (%d): out of memory", op->node->id);
    for (int p = 0; p < st->n_proj; p++) {
        const em_expr *pl = projs->args[p];
        if (pl->kind != EM_EXPR_LIST || pl->n_args != st->n_cols)
            return EM_FAIL(err, EM_ERR_PARSE,
                           "Expand (%d): projection %d does not have %d expressions",
                           op->node->id, p + 1, st->n_cols);
        for (int c = 0; c < st->n_cols; c++) {
            const em_expr *e = pl->args[c];
            int cell = p * st->n_cols + c;
            st->pass[cell] = opu_passthrough_index(e, em_op_child_attrs(op, 0), child->n_output);
            if (st->pass[cell] >= 0)
                continue;
            if (e->kind == EM_EXPR_LITERAL && e->text && strcmp(e->text, "null") == 0) {
                st->pass[cell] = -2;
                continue;
            }
            if (em_expr_compile(e, em_op_child_attrs(op, 0), child->n_output, &ctx->expr_opts,
                                &st->progs[cell], err) != EM_OK)
                return em_op_fail(op, err);
        }
    }
    if (opu_shell_create(&op->schema, ctx->pool, &st->out, err) != EM_OK)
        return em_op_fail(op, err);
    st->in = NULL;
    st->next_proj = 0;
    return EM_OK;
}

static em_status null_column(em_column *c, em_type t, int64_t n, em_pool *pool, em_error *err) {
    EM_TRY(em_column_init(c, t, n, pool, err));
    EM_TRY(em_column_reserve(c, n, 0, err));
    for (int64_t i = 0; i < n; i++)
        EM_TRY(em_column_append_null(c, err));
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
    em_batch *in = st->in, *b = st->out;
    int p = st->next_proj++;
    opu_shell_release(b);
    for (int c = 0; c < st->n_cols; c++) {
        int cell = p * st->n_cols + c;
        em_status s = EM_OK;
        if (st->pass[cell] >= 0)
            em_column_share(&b->cols[c], &in->cols[st->pass[cell]]);
        else if (st->pass[cell] == -2)
            s = null_column(&b->cols[c], b->schema.fields[c].type, in->n_rows, op->ctx->pool, err);
        else
            s = em_expr_eval(st->progs[cell], in, op->ctx->pool, &b->cols[c], err);
        if (s != EM_OK)
            return em_op_fail(op, err);
    }
    b->n_rows = in->n_rows;
    if (opu_set_sel(b, in->sel, in->n_sel, err) != EM_OK)
        return em_op_fail(op, err);
    *out = b;
    return EM_OK;
}

static void expand_close(em_op *op) {
    expand_state *st = op->state;
    if (!st)
        return;
    for (int i = 0; st->progs && i < st->n_proj * st->n_cols; i++)
        em_expr_prog_free(st->progs[i]);
    free(st->progs);
    free(st->pass);
    st->progs = NULL;
    st->pass = NULL;
    em_batch_destroy(st->out);
    st->out = NULL;
    st->in = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab EXPAND_VTAB = {"Expand", expand_open, expand_next, expand_close};

em_status em_op_expand_create(const em_plan_node *node, em_op *child, em_op **out,
                              em_error *err) {
    return em_op_init(&EXPAND_VTAB, node, &child, 1, sizeof(expand_state), out, err);
}
