/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From a plan node to the operator tree of one task.
 *
 * The walk stops at stage boundaries: an Exchange or BroadcastExchange (or a
 * ReusedExchange pointing at one) below the stage's root becomes a source
 * that reads what the runtime stored for it, because its map side runs as a
 * stage of its own; so does a fragment's input (a boundary node whose rows
 * the embedder streams in). ColumnarToRow, InputAdapter and WholeStageCodegen only
 * mark where Spark moves between row and columnar code; between native
 * operators they do nothing, so they are skipped.
 */
#include <stdlib.h>

#include "ops/internal.h"

static em_status unsupported(const em_plan_node *node, em_error *err) {
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d): no native operator for this node",
                   node->name ? node->name : em_node_kind_name(node->kind), node->id);
}

static em_status build_children(const em_plan_node *node, em_op **kids, em_error *err);

static em_status build_node(const em_plan_node *node, bool stage_root, em_op **out,
                            em_error *err) {
    *out = NULL;
    /* a fragment's boundary: its rows come from the embedder */
    if (node->is_input)
        return node->input_broadcast ? em_op_broadcast_read_create(node, out, err)
                                     : em_op_shuffle_read_create(node, out, err);
    /* Spark's transitions and codegen; in AQE's final plan the stages it
     * materialized are ours to run again, and a coalesced or split read
     * holds the same rows in other partitions */
    if (em_node_kind_is_wrapper(node->kind)) {
        if (node->n_children != 1)
            return unsupported(node, err);
        return build_node(node->children[0], stage_root, out, err);
    }
    switch (node->kind) {
    case EM_NODE_EXCHANGE:
        if (!stage_root)
            return em_op_shuffle_read_create(node, out, err);
        break; /* a stage rooted at an exchange is its map side: build the child */
    case EM_NODE_BROADCAST_EXCHANGE:
        if (!stage_root)
            return em_op_broadcast_read_create(node, out, err);
        break;
    case EM_NODE_REUSED_EXCHANGE:
        if (!node->reuses)
            return EM_FAIL(err, EM_ERR_BIND, "ReusedExchange (%d): operator %d not found",
                           node->id, node->reuses_id);
        if (node->reuses->kind == EM_NODE_BROADCAST_EXCHANGE)
            return em_op_broadcast_read_create(node, out, err);
        return em_op_shuffle_read_create(node, out, err);
    case EM_NODE_SCAN:
        return em_op_scan_create(node, out, err);
    case EM_NODE_LOCAL_TABLE_SCAN:
        return em_op_local_table_create(node, out, err);
    default:
        break;
    }
    if (node->kind == EM_NODE_EXCHANGE || node->kind == EM_NODE_BROADCAST_EXCHANGE)
        return build_node(node->children[0], false, out, err);

    em_op *kids[2] = {NULL, NULL};
    if (node->n_children > 2 && node->kind != EM_NODE_UNION)
        return unsupported(node, err);
    if (node->kind == EM_NODE_UNION) {
        em_op **all = calloc((size_t)node->n_children, sizeof *all);
        if (!all)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building Union (%d)", node->id);
        em_status s = EM_OK;
        for (int i = 0; s == EM_OK && i < node->n_children; i++)
            s = build_node(node->children[i], false, &all[i], err);
        if (s == EM_OK)
            s = em_op_union_create(node, all, node->n_children, out, err);
        else
            for (int i = 0; i < node->n_children; i++)
                em_op_destroy(all[i]);
        free(all);
        return s;
    }
    EM_TRY(build_children(node, kids, err));
    switch (node->kind) {
    case EM_NODE_FILTER:
        return em_op_filter_create(node, kids[0], out, err);
    case EM_NODE_PROJECT:
        return em_op_project_create(node, kids[0], out, err);
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
        return em_op_hash_agg_create(node, kids[0], out, err);
    case EM_NODE_SORT:
        return em_op_sort_create(node, kids[0], out, err);
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        return em_op_top_n_create(node, kids[0], out, err);
    case EM_NODE_COLLECT_LIMIT:
    case EM_NODE_GLOBAL_LIMIT:
    case EM_NODE_LOCAL_LIMIT:
        return em_op_limit_create(node, kids[0], out, err);
    case EM_NODE_EXPAND:
        return em_op_expand_create(node, kids[0], out, err);
    case EM_NODE_WINDOW:
    case EM_NODE_WINDOW_GROUP_LIMIT:
        return em_op_window_create(node, kids[0], out, err);
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
        return em_op_hash_join_create(node, kids[0], kids[1], out, err);
    case EM_NODE_SORT_MERGE_JOIN:
        return em_op_sort_merge_join_create(node, kids[0], kids[1], out, err);
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        return em_op_nested_loop_join_create(node, kids[0], kids[1], out, err);
    default:
        em_op_destroy(kids[0]);
        em_op_destroy(kids[1]);
        return unsupported(node, err);
    }
}

static em_status build_children(const em_plan_node *node, em_op **kids, em_error *err) {
    for (int i = 0; i < node->n_children; i++) {
        em_status s = build_node(node->children[i], false, &kids[i], err);
        if (s != EM_OK) {
            for (int j = 0; j < i; j++)
                em_op_destroy(kids[j]);
            return s;
        }
    }
    return EM_OK;
}

em_status em_op_build(const em_plan_node *node, em_op **out, em_error *err) {
    return build_node(node, true, out, err);
}
