/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binding check of a typed plan, before anything runs: every attribute an
 * operator reads must be one its children produce. A damaged text (a lost
 * Output line, a list cut short, lines swapped between blocks) otherwise
 * types cleanly, because attribute ids are global, and then binds a column
 * the child does not have: a crash, or another answer with success.
 *
 * What is checked, per operator (children's derived outputs are what it
 * may read):
 *
 *   Input            each item (Spark prints its children's output there)
 *   Project          the Output expressions (an alias's operand)
 *   Filter           the condition
 *   aggregates       Keys; partial functions' arguments (final and merge
 *                    functions name the attributes below the exchange, as
 *                    Spark prints them); a final aggregate's Results against
 *                    the children's output and the Aggregate Attributes (a
 *                    partial one's issue its buffers under new ids)
 *   joins            left keys against the left child, right keys against
 *                    the right one, the condition against both
 *   Sort, TakeOrderedAndProject, Exchange   the attributes in Arguments
 *
 * Subquery expressions are not entered (their trees are operators of their
 * own), nor are the operators whose inputs come from elsewhere: scans,
 * reused exchanges, fragment inputs; nor those above a child whose derived
 * output may lack columns (output_complete). An attribute no operator of the plan
 * defines was turned into literal text by typing (plan_types.c) and is not
 * an attribute here.
 */
#include <stdio.h>
#include <string.h>

#include "plan/internal.h"

typedef struct bind_scope {
    const em_plan_node *const *kids;
    int n_kids;
    const em_plan_field *extra; /* a field whose items are visible too (Aggregate Attributes) */
} bind_scope;

static int64_t defined_id(const em_expr *e) {
    if (e && (e->kind == EM_EXPR_ATTR || e->kind == EM_EXPR_ALIAS))
        return e->id;
    return -1;
}

static bool in_scope(const bind_scope *sc, int64_t id) {
    for (int k = 0; k < sc->n_kids; k++) {
        const em_plan_node *c = sc->kids[k];
        for (int i = 0; i < c->n_output; i++)
            if (defined_id(c->output[i]) == id)
                return true;
    }
    for (int i = 0; sc->extra && i < sc->extra->n_exprs; i++)
        if (defined_id(sc->extra->exprs[i]) == id)
            return true;
    return false;
}

/* The first attribute of e outside the scope, or NULL. */
static const em_expr *unbound(const em_expr *e, const bind_scope *sc, bool skip_merged_aggs) {
    if (!e)
        return NULL;
    switch (e->kind) {
    case EM_EXPR_ATTR:
        return in_scope(sc, e->id) ? NULL : e;
    case EM_EXPR_SCALAR_SUBQUERY:
    case EM_EXPR_PLAN_ID:
    case EM_EXPR_WINDOW:
        return NULL;
    case EM_EXPR_IN_SUBQUERY:
        return unbound(e->args[0], sc, skip_merged_aggs);
    case EM_EXPR_AGG:
        if (skip_merged_aggs && e->mode != EM_AGG_PARTIAL)
            return NULL;
        break;
    default:
        break;
    }
    for (int i = 0; i < e->n_args; i++) {
        const em_expr *u = unbound(e->args[i], sc, skip_merged_aggs);
        if (u)
            return u;
    }
    return NULL;
}

static em_status unbound_error(const em_plan_node *node, const char *src, const char *where,
                               const em_expr *attr, const bind_scope *sc, em_error *err) {
    const char *whose = sc->n_kids == 1 ? "its child does" : "its children do";
    if (node->line > 0)
        return EM_FAIL(err, EM_ERR_PARSE, "%s:%d:1: operator (%d) %s: %s reads %s#%lld, which %s not produce",
                       src, node->line, node->id, node->name, where, attr->name,
                       (long long)attr->id, whose);
    return EM_FAIL(err, EM_ERR_PARSE, "%s: operator (%d) %s: %s reads %s#%lld, which %s not produce",
                   src, node->id, node->name, where, attr->name, (long long)attr->id, whose);
}

static em_status check_field(const em_plan_node *node, em_field_kind kind, const bind_scope *sc,
                             bool skip_merged_aggs, const char *src, em_error *err) {
    const em_plan_field *f = em_plan_node_field(node, kind);
    for (int i = 0; f && i < f->n_exprs; i++) {
        const em_expr *u = unbound(f->exprs[i], sc, skip_merged_aggs);
        if (u)
            return unbound_error(node, src, f->label, u, sc, err);
    }
    return EM_OK;
}

static bool is_aggregate(em_node_kind k) {
    return k == EM_NODE_HASH_AGGREGATE || k == EM_NODE_SORT_AGGREGATE ||
           k == EM_NODE_OBJECT_HASH_AGGREGATE;
}

/* A partial or merging aggregate's Results issue its buffers under new ids,
 * by position; a final one's read its Aggregate Attributes. */
static bool has_nonfinal_agg(const em_expr *e) {
    if (!e)
        return false;
    if (e->kind == EM_EXPR_AGG)
        return e->mode != EM_AGG_FINAL;
    /* text keeps "partial_count(x) FILTER (WHERE c)" as printed */
    if ((e->kind == EM_EXPR_RAW || e->kind == EM_EXPR_LITERAL) && e->n_args == 0 && e->text)
        return strncmp(e->text, "partial_", 8) == 0 || strncmp(e->text, "merge_", 6) == 0;
    for (int i = 0; i < e->n_args; i++)
        if (has_nonfinal_agg(e->args[i]))
            return true;
    return false;
}

static bool final_aggregate(const em_plan_node *node) {
    const em_plan_field *f = em_plan_node_field(node, EM_FIELD_FUNCTIONS);
    for (int i = 0; f && i < f->n_exprs; i++)
        if (has_nonfinal_agg(f->exprs[i])) /* also under FILTER (WHERE ...) */
            return false;
    return true;
}

static bool is_keyed_join(em_node_kind k) {
    return k == EM_NODE_BROADCAST_HASH_JOIN || k == EM_NODE_SORT_MERGE_JOIN ||
           k == EM_NODE_SHUFFLED_HASH_JOIN;
}

/* Whether a node's derived output holds every column it produces. Typing
 * derives a Generate's, and an operator Ember does not know (BatchEvalPython,
 * MapElements ...), from their input, without the columns they add; so does
 * every node passing such an output on without printing its own. */
static bool output_complete(const em_plan_node *n) {
    if (n->is_input || em_plan_output_given(n))
        return true; /* as Spark gave it (structured plans) */
    switch (n->kind) {
    case EM_NODE_UNKNOWN:
    case EM_NODE_GENERATE:
        return false;
    case EM_NODE_PROJECT: /* their own printed lists */
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
    case EM_NODE_SCAN:
    case EM_NODE_LOCAL_TABLE_SCAN:
    case EM_NODE_REUSED_EXCHANGE:
    case EM_NODE_EXPAND:
        return true;
    default:
        break;
    }
    for (int i = 0; i < n->n_children; i++)
        if (!output_complete(n->children[i]))
            return false;
    return true;
}

static em_status check_node(const em_plan_node *node, const char *src, em_error *err) {
    if (node->n_children == 0 || node->is_input)
        return EM_OK;
    for (int i = 0; i < node->n_children; i++)
        if (!output_complete(node->children[i]))
            return EM_OK; /* what it may read is not known here */
    const em_plan_node *const *kids = (const em_plan_node *const *)node->children;
    bind_scope all = {.kids = kids, .n_kids = node->n_children};
    EM_TRY(check_field(node, EM_FIELD_INPUT, &all, false, src, err));
    switch (node->kind) {
    case EM_NODE_PROJECT:
        return check_field(node, EM_FIELD_OUTPUT, &all, false, src, err);
    case EM_NODE_FILTER:
        return check_field(node, EM_FIELD_CONDITION, &all, false, src, err);
    case EM_NODE_SORT:
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
    case EM_NODE_EXCHANGE:
        return check_field(node, EM_FIELD_ARGUMENTS, &all, false, src, err);
    default:
        break;
    }
    if (is_aggregate(node->kind)) {
        EM_TRY(check_field(node, EM_FIELD_KEYS, &all, false, src, err));
        EM_TRY(check_field(node, EM_FIELD_FUNCTIONS, &all, true, src, err));
        if (!final_aggregate(node))
            return EM_OK;
        bind_scope results = all;
        results.extra = em_plan_node_field(node, EM_FIELD_AGG_ATTRS);
        return check_field(node, EM_FIELD_RESULTS, &results, false, src, err);
    }
    if (is_keyed_join(node->kind) && node->n_children == 2) {
        bind_scope left = {.kids = kids, .n_kids = 1};
        bind_scope right = {.kids = kids + 1, .n_kids = 1};
        EM_TRY(check_field(node, EM_FIELD_LEFT_KEYS, &left, false, src, err));
        EM_TRY(check_field(node, EM_FIELD_RIGHT_KEYS, &right, false, src, err));
    }
    if (is_keyed_join(node->kind) || node->kind == EM_NODE_BROADCAST_NESTED_LOOP_JOIN)
        return check_field(node, EM_FIELD_JOIN_CONDITION, &all, false, src, err);
    return EM_OK;
}

em_status em_plan_validate_bindings(const em_plan *plan, const char *src, em_error *err) {
    for (int id = 1; id <= plan->max_id; id++)
        if (plan->by_id[id])
            EM_TRY(check_node(plan->by_id[id], src, err));
    return EM_OK;
}
