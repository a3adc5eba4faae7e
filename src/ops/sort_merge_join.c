/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SortMergeJoin, executed as a hash join over the same keys.
 *
 * Spark sorts both inputs on the join keys (the Sort nodes below the join)
 * and merges them. Equi-join results do not depend on the method, so Ember
 * materializes one side into the hash index of hash_join.c and streams the
 * other, which needs no duplicate-run buffering and handles every join type
 * and condition the same way as the hash joins.
 *
 * Order: the side streamed is the one whose order Spark's SortMergeJoinExec
 * reports as its output ordering (the left side, the right side for
 * RightOuter), and the engine emits pairs in stream order, so a parent that
 * relies on that ordering still sees rows sorted on the join keys (outer
 * joins emit a null-extended row where the stream row stands). FullOuter's
 * unmatched build rows come last; Spark promises no order for it either.
 *
 * The side hashed needs no order, so the Sort Spark put below it passes its
 * rows on unsorted (em_op_sort_unordered); the streamed side stays sorted
 * unless nothing above relies on the join's order (order_unwanted, marked
 * by em_plan_mark_order: a shuffle, an aggregate or a sort above it). Then
 * either side may be hashed, and hash_join.c hashes the smaller one
 * (race_sides).
 *
 * Memory: the materialized side is the one Spark expected to stream too, so
 * a large right side costs memory that a merge would not; it is charged to
 * the task's pool and fails with EM_ERR_OOM_BUDGET naming the operator when
 * over budget (spilling is a later step).
 */
#include "ops/join_engine.h"

em_status em_op_sort_merge_join_create(const em_plan_node *node, em_op *left, em_op *right,
                                       em_op **out, em_error *err) {
    int build = node->join_type == EM_JOIN_RIGHT_OUTER ? JN_LEFT : JN_RIGHT;
    em_op_sort_unordered(build == JN_LEFT ? left : right);
    if (node->order_unwanted)
        em_op_sort_unordered(build == JN_LEFT ? right : left);
    return em_jn_hash_join_create(node, left, right, build, out, err);
}
