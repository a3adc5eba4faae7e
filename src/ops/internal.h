/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the operators: the constructor of every native
 * operator (one file each), called by build.c, and the shared helpers every
 * operator uses to set itself up.
 *
 * A constructor takes ownership of its children (also on failure: it
 * destroys them) and returns an operator whose output attributes and schema
 * are the plan node's (em_op_init does that).
 */
#ifndef EM_OPS_INTERNAL_H
#define EM_OPS_INTERNAL_H

#include "ember/ops.h"

/* Allocates an em_op with vtab, node and children (ownership of the children
 * array's elements is taken; the array is copied), output attributes taken
 * from node->output, and the schema derived from them. state_size bytes of
 * zeroed state are allocated into op->state. On failure the children are
 * destroyed. */
em_status em_op_init(const em_op_vtab *vtab, const em_plan_node *node, em_op **children,
                     int n_children, size_t state_size, em_op **out, em_error *err) EM_MUST_CHECK;
/* Replaces op's output attributes (array copied) and rebuilds the schema. */
em_status em_op_set_output(em_op *op, const em_expr *const *attrs, int n, em_error *err)
    EM_MUST_CHECK;
/* Prefixes err with the operator's name and plan id ("HashAggregate (5): "). */
em_status em_op_fail(const em_op *op, em_error *err);
/* Plain pointer array of op's child i's output attributes, for em_expr_compile. */
static inline const em_expr *const *em_op_child_attrs(const em_op *op, int i) {
    return op->children[i]->output;
}

/* Constructors, one per operator file. */
em_status em_op_scan_create(const em_plan_node *node, em_op **out, em_error *err) EM_MUST_CHECK;
em_status em_op_local_table_create(const em_plan_node *node, em_op **out, em_error *err)
    EM_MUST_CHECK;
em_status em_op_filter_create(const em_plan_node *node, em_op *child, em_op **out,
                              em_error *err) EM_MUST_CHECK;
em_status em_op_project_create(const em_plan_node *node, em_op *child, em_op **out,
                               em_error *err) EM_MUST_CHECK;
em_status em_op_hash_agg_create(const em_plan_node *node, em_op *child, em_op **out,
                                em_error *err) EM_MUST_CHECK;
em_status em_op_sort_create(const em_plan_node *node, em_op *child, em_op **out,
                            em_error *err) EM_MUST_CHECK;
/* A Sort whose consumer wants its rows but not their order (the side a
 * sort-merge join hashes): it passes them on unsorted. False when op is no
 * Sort (a LORE wrapper, another operator), which then keeps its order. */
bool em_op_sort_unordered(em_op *op);
/* TakeOrderedAndProject */
em_status em_op_top_n_create(const em_plan_node *node, em_op *child, em_op **out,
                             em_error *err) EM_MUST_CHECK;
/* CollectLimit, GlobalLimit, LocalLimit */
em_status em_op_limit_create(const em_plan_node *node, em_op *child, em_op **out,
                             em_error *err) EM_MUST_CHECK;
em_status em_op_union_create(const em_plan_node *node, em_op **children, int n_children,
                             em_op **out, em_error *err) EM_MUST_CHECK;
em_status em_op_expand_create(const em_plan_node *node, em_op *child, em_op **out,
                              em_error *err) EM_MUST_CHECK;
em_status em_op_window_create(const em_plan_node *node, em_op *child, em_op **out,
                              em_error *err) EM_MUST_CHECK;
/* Exchange / BroadcastExchange / ReusedExchange seen from the reading stage. */
em_status em_op_shuffle_read_create(const em_plan_node *node, em_op **out, em_error *err)
    EM_MUST_CHECK;
em_status em_op_broadcast_read_create(const em_plan_node *node, em_op **out, em_error *err)
    EM_MUST_CHECK;
/* BroadcastHashJoin and ShuffledHashJoin */
em_status em_op_hash_join_create(const em_plan_node *node, em_op *left, em_op *right,
                                 em_op **out, em_error *err) EM_MUST_CHECK;
em_status em_op_sort_merge_join_create(const em_plan_node *node, em_op *left, em_op *right,
                                       em_op **out, em_error *err) EM_MUST_CHECK;
/* BroadcastNestedLoopJoin and CartesianProduct */
em_status em_op_nested_loop_join_create(const em_plan_node *node, em_op *left, em_op *right,
                                        em_op **out, em_error *err) EM_MUST_CHECK;

#endif
