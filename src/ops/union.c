/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Union: the children's rows one child after another (Spark's UnionExec
 * concatenates its children's partitions; within a task that is the
 * children in order, each in the tasks it has partitions for: a child fed
 * by a SinglePartition exchange gives its rows in task 0 only, as Spark runs
 * it once). Columns match by position; each batch is passed through a shell
 * labelled with the Union's own attributes.
 */
#include "ops/op_util.h"

typedef struct union_state {
    int current;
    em_batch *shell;
} union_state;

static em_status union_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    union_state *st = op->state;
    for (int i = 0; i < op->n_children; i++) {
        EM_TRY(em_op_open(op->children[i], ctx, err));
        if (op->children[i]->n_output != op->n_output) {
            EM_FAIL(err, EM_ERR_BIND, "child %d has %d columns, the union %d", i,
                    op->children[i]->n_output, op->n_output);
            return em_op_fail(op, err);
        }
    }
    st->current = 0;
    if (em_opu_shell_create(&op->schema, ctx->pool, &st->shell, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

static em_status union_next(em_op *op, em_batch **out, em_error *err) {
    union_state *st = op->state;
    while (st->current < op->n_children) {
        if (opu_past_subtree(op->ctx, em_opu_source_node(op->children[st->current]))) {
            st->current++;
            continue;
        }
        em_batch *in = NULL;
        em_status s = em_op_next(op->children[st->current], &in, err);
        if (s == EM_DONE) {
            st->current++;
            continue;
        }
        if (s != EM_OK)
            return s;
        if (em_opu_shell_share(st->shell, in, NULL, err) != EM_OK)
            return em_op_fail(op, err);
        /* a child's bare null column in the union's type (see plan typing) */
        for (int c = 0; c < op->n_output; c++) {
            em_column *col = &st->shell->cols[c];
            em_type want = op->schema.fields[c].type;
            if (col->type.id == EM_TYPE_NULL && want.id != EM_TYPE_NULL) {
                em_column_reset(col);
                if (em_opu_null_column(col, want, in->n_rows, op->ctx->pool, err) != EM_OK)
                    return em_op_fail(op, err);
            }
        }
        *out = st->shell;
        return EM_OK;
    }
    return EM_DONE;
}

static void union_close(em_op *op) {
    union_state *st = op->state;
    if (!st)
        return;
    em_batch_destroy(st->shell);
    st->shell = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab UNION_VTAB = {.name = "Union", .open = union_open, .next = union_next, .close = union_close};

em_status em_op_union_create(const em_plan_node *node, em_op **children, int n_children,
                             em_op **out, em_error *err) {
    EM_TRY(em_op_init(&UNION_VTAB, node, children, n_children, sizeof(union_state), out, err));
    if (n_children > 0)
        return em_opu_inherit_output(out, children[0], err);
    return EM_OK;
}
