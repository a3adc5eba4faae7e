/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the plan and shim tests: reading a shared Spark plan in place
 * (failing clearly when ../shared is absent) and walking a plan's expressions.
 */
#ifndef EM_TEST_PLAN_COMMON_H
#define EM_TEST_PLAN_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/plan.h"
#include "testutil.h"

/* The shared folders, oldest first, and the shim line each was printed by. */
static const char *const plan_test_dirs[] = {"3.3.0", "3.3", "3.4", "3.5", "4.0", "master"};
static const char *const plan_test_lines[] = {"3.3.0", "3.3", "3.4", "3.5", "4.0", "4.1"};
#define PLAN_TEST_N_DIRS 6

static inline char *plan_test_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Reads spark-plans/tpch/spark-<dir>/q<q>.txt; fails the test when it is missing. */
static inline char *plan_test_shared(const char *dir, int q, size_t *len, char *path,
                                     size_t path_cap) {
    const char *shared = em_test_shared_dir();
    if (!shared)
        fail_msg("the shared folder (EMBER_SHARED or ../shared) is missing: the plan tests read "
                 "spark-plans/tpch/ in place");
    snprintf(path, path_cap, "%s/spark-plans/tpch/spark-%s/q%d.txt", shared, dir, q);
    char *text = plan_test_read(path, len);
    if (!text)
        fail_msg("cannot read %s (is the shared folder complete?)", path);
    return text;
}

/* Parses a shared plan with detection; fails the test on error. */
static inline em_plan *plan_test_parse_shared(const char *dir, int q) {
    char path[4096];
    size_t len = 0;
    char *text = plan_test_shared(dir, q, &len, path, sizeof path);
    em_plan *plan = NULL;
    em_error err = {0};
    em_status st = em_plan_parse(text, len, NULL, &plan, &err);
    free(text);
    if (st != EM_OK)
        fail_msg("%s: %s", path, err.msg);
    return plan;
}

typedef void (*plan_test_visit)(const em_plan_node *node, const em_plan_field *field,
                                const em_expr *e, void *ctx);

static inline void plan_test_walk_expr(const em_plan_node *node, const em_plan_field *field,
                                       const em_expr *e, plan_test_visit visit, void *ctx) {
    visit(node, field, e, ctx);
    for (int i = 0; i < e->n_args; i++)
        plan_test_walk_expr(node, field, e->args[i], visit, ctx);
}

/* Visits every expression of every operator's fields, subexpressions included. */
static inline void plan_test_walk(const em_plan *plan, plan_test_visit visit, void *ctx) {
    for (int id = 1; id <= em_plan_max_id(plan); id++) {
        const em_plan_node *node = em_plan_node_by_id(plan, id);
        if (!node)
            continue;
        for (int f = 0; f < node->n_fields; f++)
            for (int i = 0; i < node->fields[f].n_exprs; i++)
                plan_test_walk_expr(node, &node->fields[f], node->fields[f].exprs[i], visit, ctx);
    }
}

typedef void (*plan_test_bound_visit)(const em_plan_node *node, const em_expr *e,
                                      const em_expr *const *in, int n_in, void *ctx);

/* Visits, children first, every expression an operator evaluates with the
 * attributes it is bound against: Filter conditions and Project lists
 * against the operator's Input, aggregate functions against theirs, a
 * final aggregate's Results against its keys and aggregate attributes, and
 * join conditions against both children's outputs. */
static inline void plan_test_walk_bound(const em_plan_node *n, plan_test_bound_visit visit,
                                        void *ctx) {
    if (!n)
        return;
    for (int i = 0; i < n->n_children; i++)
        plan_test_walk_bound(n->children[i], visit, ctx);
    const em_plan_field *in = em_plan_node_field(n, EM_FIELD_INPUT);
    const em_expr *const *ins = in ? (const em_expr *const *)in->exprs : NULL;
    int n_in = in ? in->n_exprs : 0;
    const em_plan_field *f = NULL;
    if (n->kind == EM_NODE_FILTER)
        f = em_plan_node_field(n, EM_FIELD_CONDITION);
    else if (n->kind == EM_NODE_PROJECT)
        f = em_plan_node_field(n, EM_FIELD_OUTPUT);
    else if (n->kind == EM_NODE_HASH_AGGREGATE)
        f = em_plan_node_field(n, EM_FIELD_FUNCTIONS);
    for (int i = 0; f && i < f->n_exprs; i++)
        visit(n, f->exprs[i], ins, n_in, ctx);
    if (n->kind == EM_NODE_HASH_AGGREGATE) {
        bool final = true;
        for (int i = 0; f && i < f->n_exprs; i++)
            final &= f->exprs[i]->kind != EM_EXPR_AGG || f->exprs[i]->mode == EM_AGG_FINAL;
        const em_plan_field *keys = em_plan_node_field(n, EM_FIELD_KEYS);
        const em_plan_field *attrs = em_plan_node_field(n, EM_FIELD_AGG_ATTRS);
        const em_plan_field *res = em_plan_node_field(n, EM_FIELD_RESULTS);
        if (final && res) {
            int nk = keys ? keys->n_exprs : 0, na = attrs ? attrs->n_exprs : 0;
            const em_expr **env = (const em_expr **)calloc((size_t)(nk + na + 1), sizeof *env);
            for (int i = 0; i < nk; i++)
                env[i] = keys->exprs[i];
            for (int i = 0; i < na; i++)
                env[nk + i] = attrs->exprs[i];
            for (int i = 0; i < res->n_exprs; i++)
                visit(n, res->exprs[i], env, nk + na, ctx);
            free(env);
        }
    }
    const em_plan_field *jc = em_plan_node_field(n, EM_FIELD_JOIN_CONDITION);
    if (jc && jc->n_exprs > 0 && jc->exprs[0] && n->n_children == 2) {
        const em_plan_node *l = n->children[0], *r = n->children[1];
        int nn = l->n_output + r->n_output;
        const em_expr **env = (const em_expr **)calloc((size_t)(nn + 1), sizeof *env);
        for (int i = 0; i < l->n_output; i++)
            env[i] = l->output[i];
        for (int i = 0; i < r->n_output; i++)
            env[l->n_output + i] = r->output[i];
        visit(n, jc->exprs[0], env, nn, ctx);
        free(env);
    }
}

/* plan_test_walk_bound over the main tree and every subquery tree. */
static inline void plan_test_walk_bound_all(const em_plan *plan, plan_test_bound_visit visit,
                                            void *ctx) {
    plan_test_walk_bound(em_plan_root(plan), visit, ctx);
    for (int i = 0; i < em_plan_n_subqueries(plan); i++) {
        const em_plan_subquery *s = em_plan_subquery_at(plan, i);
        if (s->root)
            plan_test_walk_bound(s->root, visit, ctx);
    }
}

static inline char *plan_test_expr_text(const em_expr *e) {
    char *out = NULL;
    size_t n;
    em_error err;
    if (em_expr_print(e, NULL, &out, &n, &err) != EM_OK)
        fail_msg("em_expr_print: %s", err.msg);
    return out;
}

#endif
