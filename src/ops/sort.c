/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sort: orders all rows of this task's input (Spark's SortExec, global
 * within a partition; a global order across partitions comes from the
 * range-partitioned exchange below it). Arguments: `[orders], global,
 * testSpillFrequency`.
 *
 * The input is copied into one accumulated batch (selection applied), the
 * sort keys are evaluated once over it, row numbers are sorted with the
 * normalized-prefix merge sort of sort_keys.c, and the rows are emitted in
 * sorted order in batches of EM_BATCH_CAP gathered by index. Memory is the
 * accumulated input plus 12 bytes a row, charged to the task's pool;
 * exceeding the budget fails with EM_ERR_OOM_BUDGET naming this operator
 * (external sort with spill files is not implemented yet).
 */
#include <stdlib.h>

#include "ops/op_util.h"
#include "ops/sort_keys.h"

typedef struct sort_state {
    em_sort_spec spec;
    em_batch *acc;
    int32_t *idx;
    int64_t n, emitted;
    bool sorted;
    em_batch *chunk;
} sort_state;

static em_status sort_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    sort_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    int n = 0;
    const em_expr *const *args = opu_arguments(op->node, &n);
    if (n < 1 || args[0]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "no sort order list in Arguments");
        return em_op_fail(op, err);
    }
    if (em_sort_spec_init(&st->spec, (const em_expr *const *)args[0]->args, args[0]->n_args,
                          em_op_child_attrs(op, 0), op->children[0]->n_output, &ctx->expr_opts,
                          err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

static em_status sort_drain(em_op *op, sort_state *st, em_error *err) {
    em_op *child = op->children[0];
    EM_TRY(em_batch_create(&child->schema, EM_BATCH_CAP, op->ctx->pool, &st->acc, err));
    for (;;) {
        em_batch *in = NULL;
        em_status s = em_op_next(child, &in, err);
        if (s == EM_DONE)
            break;
        if (s != EM_OK)
            return s;
        EM_TRY(em_batch_append(st->acc, in, err));
    }
    st->n = st->acc->n_rows;
    st->idx = em_pool_alloc(op->ctx->pool, st->n * 4 + 4, err);
    if (!st->idx)
        return err ? err->code : EM_ERR_NOMEM;
    for (int64_t i = 0; i < st->n; i++)
        st->idx[i] = (int32_t)i;
    EM_TRY(em_sort_spec_bind(&st->spec, st->acc, op->ctx->pool, err));
    return em_sort_indices(st->spec.keys, st->spec.n, st->idx, st->n, op->ctx->pool, err);
}

static em_status sort_next(em_op *op, em_batch **out, em_error *err) {
    sort_state *st = op->state;
    if (!st->sorted) {
        st->sorted = true;
        int64_t base = opu_pool_used(op);
        em_status s = sort_drain(op, st, err);
        opu_note_peak(op, base);
        if (s != EM_OK)
            return s == EM_ERR_CANCELLED ? s : em_op_fail(op, err);
    }
    if (st->emitted >= st->n)
        return EM_DONE;
    int64_t n = st->n - st->emitted < EM_BATCH_CAP ? st->n - st->emitted : EM_BATCH_CAP;
    em_batch_destroy(st->chunk);
    st->chunk = NULL;
    if (opu_gather(&op->schema, st->acc->cols, st->idx + st->emitted, n, op->ctx->pool, &st->chunk,
                   err) != EM_OK)
        return em_op_fail(op, err);
    st->emitted += n;
    *out = st->chunk;
    return EM_OK;
}

static void sort_close(em_op *op) {
    sort_state *st = op->state;
    if (!st)
        return;
    em_sort_spec_reset(&st->spec);
    if (st->idx)
        em_pool_free(op->ctx ? op->ctx->pool : NULL, st->idx, st->n * 4 + 4);
    st->idx = NULL;
    em_batch_destroy(st->acc);
    em_batch_destroy(st->chunk);
    st->acc = st->chunk = NULL;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab SORT_VTAB = {"Sort", sort_open, sort_next, sort_close};

em_status em_op_sort_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    EM_TRY(em_op_init(&SORT_VTAB, node, &child, 1, sizeof(sort_state), out, err));
    return opu_inherit_output(out, child, err);
}
