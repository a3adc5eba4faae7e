/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LocalTableScan: a relation held in the plan itself. EXPLAIN prints only
 * the attributes, never the rows (FORMAT.md): `Arguments: <empty>, [attrs]`
 * is the empty relation an optimizer folds a query to (TPC-H q6 under some
 * settings), which this operator produces. A non-empty local table cannot
 * be run from the text, because its rows are not in it: that is an
 * unsupported-plan error naming the node, not a silently empty result.
 */
#include <string.h>

#include "ops/op_util.h"

static em_status local_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    (void)ctx;
    int n = 0;
    const em_expr *const *args = em_opu_arguments(op->node, &n);
    bool empty = n >= 1 && (args[0]->kind == EM_EXPR_LITERAL || args[0]->kind == EM_EXPR_RAW) &&
                 args[0]->text && strcmp(args[0]->text, "<empty>") == 0;
    if (!empty)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "LocalTableScan (%d): the plan text does not include the table's rows",
                       op->node->id);
    return EM_OK;
}

static em_status local_next(em_op *op, em_batch **out, em_error *err) {
    (void)op;
    (void)out;
    (void)err;
    return EM_DONE;
}

static void local_close(em_op *op) { (void)op; }

static const em_op_vtab LOCAL_VTAB = {.name = "LocalTableScan", .open = local_open, .next = local_next, .close = local_close};

em_status em_op_local_table_create(const em_plan_node *node, em_op **out, em_error *err) {
    return em_op_init(&LOCAL_VTAB, node, NULL, 0, 0, out, err);
}
