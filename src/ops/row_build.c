/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From plan nodes to row operators (em_row_op_create), and the builder of
 * one task's mixed tree (em_rop_build_tree, behind em_exec_build).
 *
 * The builder walks a stage like em_op_build: Spark's own wrappers
 * (ColumnarToRow, InputAdapter, WholeStageCodegen, AQE stages and reads)
 * and every node decided PASS are skipped; an Exchange or
 * BroadcastExchange below the root, or a ReusedExchange, becomes a read of
 * what the runtime stored; a root Exchange means its map side, the child.
 * Each other node is built on the engine decide() names, over children
 * built first; where a child's engine differs from its parent's a
 * transition joins them (ColumnarToRow below a row parent, RowToColumnar
 * below a native one). Native shuffle reads go through CoalesceBatches, so
 * native operators above them see full batches. A row root is wrapped in
 * the non-transition RowStageOutput, since the runtime stores batches.
 *
 * With a LORE session, every native node's inputs (once on the native
 * engine) and output, every native source's output and a map side's root
 * go through em_lore_wrap, which puts a dump operator there when the node
 * is selected (include/ember/lore.h lists the places).
 */
#include <stdlib.h>

#include "ember/lore.h"
#include "ops/row_internal.h"

static em_status no_row_op(const em_plan_node *node, const char *why, em_error *err) {
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d): %s",
                   node->name ? node->name : em_node_kind_name(node->kind), node->id, why);
}

em_status em_row_op_create(const em_plan_node *node, em_row_op **children, int n_children,
                           em_row_op **out, em_error *err) {
    *out = NULL;
    int want = -1; /* children the kind takes; -1: any number (Union) */
    switch (node->kind) {
    case EM_NODE_SCAN:
    case EM_NODE_LOCAL_TABLE_SCAN:
    case EM_NODE_EXCHANGE:
    case EM_NODE_BROADCAST_EXCHANGE:
    case EM_NODE_REUSED_EXCHANGE:
        want = 0;
        break;
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        want = 2;
        break;
    case EM_NODE_UNION:
        break;
    case EM_NODE_GENERATE:
    case EM_NODE_UNKNOWN:
    case EM_NODE_KIND_COUNT_:
        want = -2;
        break;
    default:
        want = 1;
        break;
    }
    if (want == -2 || (want >= 0 && n_children != want)) {
        for (int i = 0; i < n_children; i++)
            em_row_op_destroy(children[i]);
        return want == -2 ? no_row_op(node, "no row operator for this node", err)
                          : no_row_op(node, "wrong number of inputs", err);
    }
    em_row_op *c0 = n_children > 0 ? children[0] : NULL;
    switch (node->kind) {
    case EM_NODE_SCAN:
    case EM_NODE_LOCAL_TABLE_SCAN:
    case EM_NODE_EXCHANGE:
    case EM_NODE_BROADCAST_EXCHANGE:
    case EM_NODE_REUSED_EXCHANGE:
        return em_rop_source_create(node, out, err);
    case EM_NODE_FILTER:
        return em_rop_filter_create(node, c0, out, err);
    case EM_NODE_PROJECT:
        return em_rop_project_create(node, c0, out, err);
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
        return em_rop_agg_create(node, c0, out, err);
    case EM_NODE_SORT:
        return em_rop_sort_create(node, c0, out, err);
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        return em_rop_top_n_create(node, c0, out, err);
    case EM_NODE_COLLECT_LIMIT:
    case EM_NODE_GLOBAL_LIMIT:
    case EM_NODE_LOCAL_LIMIT:
        return em_rop_limit_create(node, c0, out, err);
    case EM_NODE_UNION:
        return em_rop_union_create(node, children, n_children, out, err);
    case EM_NODE_EXPAND:
        return em_rop_expand_create(node, c0, out, err);
    case EM_NODE_WINDOW:
    case EM_NODE_WINDOW_GROUP_LIMIT:
        return em_rop_window_create(node, c0, out, err);
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        return em_rop_join_create(node, children[0], children[1], out, err);
    default: /* Coalesce, Subquery, and Spark's wrappers */
        return em_rop_pass_create(node, c0, out, err);
    }
}

/* ------------------------------------------------------------ mixed trees */

typedef struct built {
    em_op *n;
    em_row_op *r;
} built;

typedef struct builder {
    rop_decide_fn decide;
    void *arg;
    em_lore_session *lore; /* NULL: no LORE dump */
} builder;

static void built_destroy(built *b) {
    em_op_destroy(b->n);
    em_row_op_destroy(b->r);
    b->n = NULL;
    b->r = NULL;
}

/* Converts b to the wanted engine with a transition when needed. */
static em_status to_engine(built *b, bool row, em_error *err) {
    if (row && b->n) {
        em_op *n = b->n;
        b->n = NULL;
        return em_row_from_native(n, &b->r, err);
    }
    if (!row && b->r) {
        em_row_op *r = b->r;
        b->r = NULL;
        return em_native_from_row(r, &b->n, err);
    }
    return EM_OK;
}

static em_engine engine_of(const builder *bd, const em_plan_node *node) {
    em_engine e = bd->decide(bd->arg, node);
    return e == EM_ENGINE_ROW ? EM_ENGINE_ROW : e == EM_ENGINE_PASS ? EM_ENGINE_PASS
                                                                   : EM_ENGINE_NATIVE;
}

/* A native read of another stage's data (or a scan). */
static em_status native_source(const em_plan_node *node, em_op **out, em_error *err) {
    em_op *op = NULL;
    const em_plan_node *data = node->kind == EM_NODE_REUSED_EXCHANGE ? node->reuses : node;
    if (node->is_input) { /* a fragment's boundary: the embedder streams its rows */
        if (node->input_broadcast)
            return em_op_broadcast_read_create(node, out, err);
        EM_TRY(em_op_shuffle_read_create(node, &op, err));
        return em_op_coalesce_batches_create(op, out, err);
    }
    switch (node->kind) {
    case EM_NODE_SCAN:
        return em_op_scan_create(node, out, err);
    case EM_NODE_LOCAL_TABLE_SCAN:
        return em_op_local_table_create(node, out, err);
    default:
        if (!data)
            return EM_FAIL(err, EM_ERR_BIND, "ReusedExchange (%d): operator %d not found",
                           node->id, node->reuses_id);
        if (data->kind == EM_NODE_BROADCAST_EXCHANGE)
            return em_op_broadcast_read_create(node, out, err);
        EM_TRY(em_op_shuffle_read_create(node, &op, err));
        return em_op_coalesce_batches_create(op, out, err);
    }
}

/* A read of another stage's data (or a scan) on the node's engine; a
 * native one is the source's output for LORE (what its readers get). */
static em_status build_source(const builder *bd, const em_plan_node *node, built *out,
                              em_error *err) {
    if (engine_of(bd, node) == EM_ENGINE_ROW)
        return em_rop_source_create(node, &out->r, err);
    em_op *op = NULL;
    EM_TRY(native_source(node, &op, err));
    return em_lore_wrap(bd->lore, node, EM_LORE_OUTPUT, op, &out->n, err);
}

static em_status build_node(const builder *bd, const em_plan_node *node, bool root, built *out,
                            em_error *err);

static em_status build_kids(const builder *bd, const em_plan_node *node, bool row, built *kids,
                            em_error *err) {
    em_status s = EM_OK;
    int i = 0;
    for (; s == EM_OK && i < node->n_children; i++) {
        s = build_node(bd, node->children[i], false, &kids[i], err);
        if (s == EM_OK)
            s = to_engine(&kids[i], row, err);
    }
    if (s != EM_OK)
        for (int j = 0; j < i; j++)
            built_destroy(&kids[j]);
    return s;
}

/* LORE's view of a native node's inputs: each child as the node reads it
 * (after any transition). On failure every child is destroyed. */
static em_status lore_wrap_kids(const builder *bd, const em_plan_node *node, built *kids,
                                em_error *err) {
    if (!bd->lore)
        return EM_OK;
    em_status s = EM_OK;
    for (int i = 0; s == EM_OK && i < node->n_children; i++) {
        em_op *op = kids[i].n;
        kids[i].n = NULL;
        s = em_lore_wrap(bd->lore, node, i, op, &kids[i].n, err);
    }
    if (s != EM_OK)
        for (int i = 0; i < node->n_children; i++)
            built_destroy(&kids[i]);
    return s;
}

/* The node itself on its engine, over children already on that engine. */
static em_status create_on(const em_plan_node *node, bool row, built *kids, built *out,
                           em_error *err) {
    int n = node->n_children;
    if (row) {
        em_row_op **rk = calloc((size_t)n + 1, sizeof *rk);
        if (!rk) {
            for (int i = 0; i < n; i++)
                built_destroy(&kids[i]);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building %s (%d)", node->name,
                           node->id);
        }
        for (int i = 0; i < n; i++)
            rk[i] = kids[i].r;
        em_status s = em_row_op_create(node, rk, n, &out->r, err);
        free(rk);
        return s;
    }
    em_op *k0 = n > 0 ? kids[0].n : NULL, *k1 = n > 1 ? kids[1].n : NULL;
    switch (node->kind) {
    case EM_NODE_FILTER:
        return em_op_filter_create(node, k0, &out->n, err);
    case EM_NODE_PROJECT:
        return em_op_project_create(node, k0, &out->n, err);
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
        return em_op_hash_agg_create(node, k0, &out->n, err);
    case EM_NODE_SORT:
        return em_op_sort_create(node, k0, &out->n, err);
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        return em_op_top_n_create(node, k0, &out->n, err);
    case EM_NODE_COLLECT_LIMIT:
    case EM_NODE_GLOBAL_LIMIT:
    case EM_NODE_LOCAL_LIMIT:
        return em_op_limit_create(node, k0, &out->n, err);
    case EM_NODE_EXPAND:
        return em_op_expand_create(node, k0, &out->n, err);
    case EM_NODE_WINDOW:
    case EM_NODE_WINDOW_GROUP_LIMIT:
        return em_op_window_create(node, k0, &out->n, err);
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
        return em_op_hash_join_create(node, k0, k1, &out->n, err);
    case EM_NODE_SORT_MERGE_JOIN:
        return em_op_sort_merge_join_create(node, k0, k1, &out->n, err);
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        return em_op_nested_loop_join_create(node, k0, k1, &out->n, err);
    case EM_NODE_UNION: {
        em_op **nk = calloc((size_t)n + 1, sizeof *nk);
        if (!nk) {
            for (int i = 0; i < n; i++)
                built_destroy(&kids[i]);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building Union (%d)", node->id);
        }
        for (int i = 0; i < n; i++)
            nk[i] = kids[i].n;
        em_status s = em_op_union_create(node, nk, n, &out->n, err);
        free(nk);
        return s;
    }
    default:
        for (int i = 0; i < n; i++)
            built_destroy(&kids[i]);
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d): no native operator for this node",
                       node->name ? node->name : em_node_kind_name(node->kind), node->id);
    }
}

static em_status build_node(const builder *bd, const em_plan_node *node, bool root, built *out,
                            em_error *err) {
    out->n = NULL;
    out->r = NULL;
    em_engine eng = engine_of(bd, node);
    if (node->is_input)
        return build_source(bd, node, out, err);
    if (em_node_kind_is_wrapper(node->kind) || eng == EM_ENGINE_PASS) {
        if (node->n_children != 1)
            return no_row_op(node, "a pass-through node needs one child", err);
        return build_node(bd, node->children[0], root, out, err);
    }
    switch (node->kind) {
    case EM_NODE_EXCHANGE:
    case EM_NODE_BROADCAST_EXCHANGE:
        if (root) { /* the map side */
            if (node->n_children != 1)
                return no_row_op(node, "an exchange needs one child", err);
            return build_node(bd, node->children[0], false, out, err);
        }
        return build_source(bd, node, out, err);
    case EM_NODE_REUSED_EXCHANGE:
    case EM_NODE_SCAN:
    case EM_NODE_LOCAL_TABLE_SCAN:
        return build_source(bd, node, out, err);
    default:
        break;
    }
    bool row = eng == EM_ENGINE_ROW;
    int n = node->n_children;
    built *kids = calloc((size_t)n + 1, sizeof *kids);
    if (!kids)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building %s (%d)", node->name, node->id);
    em_status s = build_kids(bd, node, row, kids, err);
    if (s == EM_OK && !row)
        s = lore_wrap_kids(bd, node, kids, err);
    if (s == EM_OK)
        s = create_on(node, row, kids, out, err);
    if (s == EM_OK && !row)
        s = em_lore_wrap(bd->lore, node, EM_LORE_OUTPUT, out->n, &out->n, err);
    free(kids);
    return s;
}

/* The exchange whose map side a stage rooted at root runs, or NULL. */
static const em_plan_node *map_side_of(const builder *bd, const em_plan_node *root) {
    while ((em_node_kind_is_wrapper(root->kind) || engine_of(bd, root) == EM_ENGINE_PASS) &&
           root->n_children == 1)
        root = root->children[0];
    return root->kind == EM_NODE_EXCHANGE || root->kind == EM_NODE_BROADCAST_EXCHANGE ? root
                                                                                       : NULL;
}

em_status em_rop_build_tree_lore(const em_plan_node *stage_root, rop_decide_fn decide, void *arg,
                              em_lore_session *lore, em_op **out, em_error *err) {
    *out = NULL;
    builder bd = {.decide = decide, .arg = arg, .lore = lore};
    built b = {0};
    EM_TRY(build_node(&bd, stage_root, true, &b, err));
    em_op *op = b.n;
    if (b.r)
        EM_TRY(em_rop_root_adapter(b.r, &op, err));
    /* a map side: what the exchange's child produced is the exchange's input */
    const em_plan_node *exchange = lore ? map_side_of(&bd, stage_root) : NULL;
    if (exchange && engine_of(&bd, exchange) == EM_ENGINE_NATIVE)
        return em_lore_wrap(lore, exchange, 0, op, out, err);
    *out = op;
    return EM_OK;
}

em_status em_rop_build_tree(const em_plan_node *stage_root, rop_decide_fn decide, void *arg,
                         em_op **out, em_error *err) {
    return em_rop_build_tree_lore(stage_root, decide, arg, NULL, out, err);
}
