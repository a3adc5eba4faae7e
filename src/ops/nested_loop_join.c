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
 * The shared engine (join_engine.c) forms the pairs EM_BATCH_CAP at a time,
 * stream row by stream row over the whole build side, so memory stays
 * bounded by one batch whatever the product's size.
 *
 * A join that keeps build rows (em_op_bnlj_keeps_build) decides them over
 * every stream task of its stage: see nlj_matches.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/join_engine.h"
#include "ops/nlj_matches.h"

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

/* ------------------------------------------------------------------ build rows over all tasks */

bool em_op_bnlj_keeps_build(const em_plan_node *node) {
    if (!node || node->kind != EM_NODE_BROADCAST_NESTED_LOOP_JOIN)
        return false;
    em_join_type t = node->join_type;
    if (t == EM_JOIN_FULL_OUTER)
        return true;
    if (node->build_side != EM_BUILD_LEFT)
        return t == EM_JOIN_RIGHT_OUTER;
    return t == EM_JOIN_LEFT_OUTER || t == EM_JOIN_LEFT_SEMI || t == EM_JOIN_LEFT_ANTI ||
           t == EM_JOIN_EXISTENCE;
}

/* The BroadcastExchange the join's build side reads (through the wrappers
 * Spark and AQE print above it), or NULL. */
static const em_plan_node *build_broadcast(const em_plan_node *node) {
    if (node->n_children < 2)
        return NULL;
    const em_plan_node *b = node->children[node->build_side == EM_BUILD_LEFT ? 0 : 1];
    for (int depth = 0; b && depth < 64; depth++) {
        switch (b->kind) {
        case EM_NODE_BROADCAST_EXCHANGE:
            return b;
        case EM_NODE_REUSED_EXCHANGE:
            b = b->reuses;
            break;
        case EM_NODE_INPUT_ADAPTER:
        case EM_NODE_BROADCAST_QUERY_STAGE:
        case EM_NODE_WHOLE_STAGE_CODEGEN:
        case EM_NODE_COLUMNAR_TO_ROW:
            b = b->n_children == 1 ? b->children[0] : NULL;
            break;
        default:
            return NULL;
        }
    }
    return NULL;
}

/* The bitmap the stage's tasks share for one join. */
typedef struct nlj_matches {
    pthread_mutex_t mu;
    em_pool *pool;
    int64_t n_build;
    int64_t bytes; /* of bits: at least one */
    uint8_t *bits;
    int finished; /* tasks whose stream ended */
} nlj_matches;

static void matches_free(void *obj) {
    nlj_matches *m = obj;
    if (!m)
        return;
    if (m->bits)
        em_pool_free(m->pool, m->bits, m->bytes);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static em_status matches_build(void *arg, const em_batch_list *rel, em_pool *pool, em_par *par,
                               void **obj, em_error *err) {
    (void)par;
    (void)rel; /* sized by the task's build side, which every task checks against */
    nlj_matches *m = calloc(1, sizeof *m);
    if (!m)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory sharing a join's matched rows");
    pthread_mutex_init(&m->mu, NULL);
    m->pool = pool;
    m->n_build = *(const int64_t *)arg;
    m->bytes = em_bitmap_bytes(m->n_build) > 0 ? em_bitmap_bytes(m->n_build) : 1;
    *obj = m;
    m->bits = em_pool_calloc(pool, m->bytes, err);
    return m->bits ? EM_OK : err && err->code ? err->code : EM_ERR_NOMEM;
}

em_status em_nlj_matches_merge(em_exec_ctx *ctx, const em_plan_node *node, uint8_t *bits,
                            int64_t n_build, bool *emit, em_error *err) {
    *emit = true;
    const em_plan_node *x = ctx && ctx->broadcast_shared && ctx->num_partitions > 1
                                ? build_broadcast(node)
                                : NULL;
    if (!x || !em_op_bnlj_keeps_build(node))
        return EM_OK;
    /* the node's address: two joins over one broadcast never share a bitmap */
    char what[96];
    snprintf(what, sizeof what, "BroadcastNestedLoopJoin %d matches @%p", node->id,
             (const void *)node);
    void *obj = NULL;
    EM_TRY(ctx->broadcast_shared(ctx, x, what, matches_build, matches_free, &n_build, &obj, err));
    nlj_matches *m = obj;
    if (m->n_build != n_build)
        return EM_FAIL(err, EM_ERR_INTERNAL,
                       "the build side has %lld rows in partition %d but %lld in another task "
                       "of the stage",
                       (long long)n_build, ctx->partition, (long long)m->n_build);
    int64_t nb = em_bitmap_bytes(n_build);
    pthread_mutex_lock(&m->mu);
    for (int64_t i = 0; i < nb; i++)
        m->bits[i] |= bits[i];
    bool last = ++m->finished == ctx->num_partitions;
    if (last && nb > 0)
        memcpy(bits, m->bits, (size_t)nb);
    pthread_mutex_unlock(&m->mu);
    *emit = last;
    return EM_OK;
}

static em_status nlj_stream_end(jn_state *j, bool *emit, em_error *err) {
    return em_nlj_matches_merge(j->op->ctx, j->op->node, j->build_matched, j->n_build, emit, err);
}

/* ------------------------------------------------------------------ operator */

static em_status nlj_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    nlj_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    EM_TRY(em_op_open(op->children[1], ctx, err));
    EM_TRY(em_jn_open(&st->j, op, &NLJ_INDEX, st->build_side, err));
    if (em_op_bnlj_keeps_build(op->node))
        st->j.stream_end = nlj_stream_end;
    return EM_OK;
}

static em_status nlj_next(em_op *op, em_batch **out, em_error *err) {
    nlj_state *st = op->state;
    return em_jn_next(&st->j, out, err);
}

static void nlj_close(em_op *op) {
    nlj_state *st = op->state;
    if (st)
        em_jn_close(&st->j);
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
