/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The build rows of a BroadcastNestedLoopJoin that keeps them (an outer join
 * preserving the build side, a semi/anti/existence join building the left
 * side; em_op_bnlj_keeps_build) are decided over the WHOLE stream side:
 * Spark ORs the matched bits of every stream partition and outputs the
 * build rows once. A task sees only its own partition, so the tasks of the
 * stage share one bitmap per join (through ctx->broadcast_shared, keyed by
 * the join node, freed with the broadcast): each task ORs its bits in when
 * its stream ends, and the task that ends last gets the union and outputs
 * the build rows; the others output none. A task that fails, is cancelled or
 * is closed before its stream ends never counts, so nobody outputs them (a
 * failing query has no result; a parent that stops early, a limit, has
 * enough rows already).
 *
 * Used by both engines (nested_loop_join.c, row_join.c) so that they give
 * the same rows.
 */
#ifndef EM_OPS_NLJ_MATCHES_H
#define EM_OPS_NLJ_MATCHES_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/ops.h"

/*
 * At the end of a task's stream: bits (n_build bits, bit r set when build
 * row r matched in this task) are ORed into the stage's shared bitmap of
 * node. *emit: this task outputs the build rows; then bits hold the matches
 * of every task. Without sharing (ctx has no broadcast_shared hook, a
 * single-partition stage, a build side that is not a broadcast) the task's
 * own bits are all there is: *emit is true and bits are unchanged.
 */
em_status em_nlj_matches_merge(em_exec_ctx *ctx, const em_plan_node *node, uint8_t *bits,
                            int64_t n_build, bool *emit, em_error *err) EM_MUST_CHECK;

#endif
