/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BroadcastNestedLoopJoin and CartesianProduct: every build row is a
 * candidate of every stream row, and the join condition (if any) decides.
 * The build side is the one the plan names (BuildLeft / BuildRight; the right
 * side for CartesianProduct, which prints none). Spark's null-aware NOT IN
 * over several columns arrives here as a LeftAnti join whose condition is
 * `(a = b) OR isnull((a = b))`, which three-valued logic evaluates correctly
 * without special handling.
 *
 * The shared engine (join_util.c) forms the pairs EM_BATCH_CAP at a time,
 * stream row by stream row over the whole build side, so memory stays
 * bounded by one batch whatever the product's size.
 */
#include "ops/join_util.h"

typedef struct nlj_state {
    jn_state j;
    int build_side;
} nlj_state;

static em_status nlj_build(jn_state *j, em_error *err) {
    (void)j;
    (void)err;
    return EM_OK;
}

static em_status nlj_probe(jn_state *j, const em_batch *in, int32_t *lo, int32_t *hi,
                           em_error *err) {
    (void)err;
    int64_t n = em_batch_rows(in);
    for (int64_t k = 0; k < n; k++) {
        lo[k] = 0;
        hi[k] = (int32_t)j->n_build;
    }
    j->cand_rows = NULL;
    return EM_OK;
}

static const jn_index_vtab NLJ_INDEX = {nlj_build, nlj_probe, NULL};

static em_status nlj_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    nlj_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    EM_TRY(em_op_open(op->children[1], ctx, err));
    return jn_open(&st->j, op, &NLJ_INDEX, st->build_side, err);
}

static em_status nlj_next(em_op *op, em_batch **out, em_error *err) {
    nlj_state *st = op->state;
    return jn_next(&st->j, out, err);
}

static void nlj_close(em_op *op) {
    nlj_state *st = op->state;
    if (st)
        jn_close(&st->j);
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab BNLJ_VTAB = {.name = "BroadcastNestedLoopJoin", .open = nlj_open, .next = nlj_next, .close = nlj_close};
static const em_op_vtab CARTESIAN_VTAB = {.name = "CartesianProduct", .open = nlj_open, .next = nlj_next, .close = nlj_close};

em_status em_op_nested_loop_join_create(const em_plan_node *node, em_op *left, em_op *right,
                                        em_op **out, em_error *err) {
    const em_op_vtab *vt = node->kind == EM_NODE_CARTESIAN_PRODUCT ? &CARTESIAN_VTAB : &BNLJ_VTAB;
    em_op *kids[2] = {left, right};
    EM_TRY(em_op_init(vt, node, kids, 2, sizeof(nlj_state), out, err));
    ((nlj_state *)(*out)->state)->build_side =
        node->build_side == EM_BUILD_LEFT ? JN_LEFT : JN_RIGHT;
    return EM_OK;
}
