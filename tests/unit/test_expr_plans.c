/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every expression of every shared TPC-H plan (all Spark lines) must
 * compile: Filter conditions and Project lists against the operator's Input,
 * aggregate functions (partial, merge and final modes) against theirs,
 * aggregate Results against the grouping keys and aggregate attributes, and
 * join conditions against both children's output. This pins the compiler to
 * the printed forms real plans use (3.3's CheckOverflow/promote_precision,
 * UnscaledValue/MakeDecimal, date literals, INSET, LIKE rewrites...).
 */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/expr.h"
#include "ember/plan.h"

static em_status no_subquery(void *ctx, const em_expr *sq, em_type type, em_pool *pool,
                             em_column *out, em_error *err) {
    (void)ctx;
    (void)sq;
    (void)type;
    (void)pool;
    (void)out;
    return EM_FAIL(err, EM_ERR_INTERNAL, "not evaluated in this test");
}

typedef struct counts {
    int exprs, aggs, failures;
    int untyped;   /* inputs without types (LocalTableScan output): nothing to compile against */
    int misparsed; /* the plan parser read a literal "A IN B" as an IN-subquery */
} counts;

static bool misparsed_in(const em_expr *e) {
    if (e->kind == EM_EXPR_IN_SUBQUERY && e->name && strncmp(e->name, "dynamicpruning", 14))
        return true;
    for (int i = 0; i < e->n_args; i++)
        if (misparsed_in(e->args[i]))
            return true;
    return false;
}

static bool inputs_untyped(const em_expr *const *in, int n) {
    for (int i = 0; i < n; i++)
        if (in[i] && !in[i]->type_known)
            return true;
    return false;
}

static void report(counts *c, const char *file, int node, const em_expr *e, const em_error *err,
                   const em_expr *const *in, int n_in) {
    if (err->code == EM_ERR_TYPE && inputs_untyped(in, n_in)) {
        c->untyped++;
        return;
    }
    if (misparsed_in(e)) {
        /* reported, not failed: a parser issue (string literal with " IN ") */
        c->misparsed++;
        print_message("%s: node (%d): parser read a literal as IN-subquery\n", file, node);
        return;
    }
    c->failures++;
    char *txt = NULL;
    size_t len;
    em_error perr = {0};
    if (em_expr_print(e, NULL, &txt, &len, &perr) != EM_OK)
        txt = NULL;
    print_error("%s: node (%d): %s: %s\n", file, node, txt ? txt : "?", err->msg);
    free(txt);
}

static void compile_one(counts *c, const char *file, int node, const em_expr *e,
                        const em_expr *const *in, int n_in, bool ansi) {
    em_expr_compile_options o = {0};
    o.ansi = ansi;
    o.subquery = no_subquery;
    em_error err = {0};
    if (e->kind == EM_EXPR_AGG) {
        em_agg_fn *fn;
        c->aggs++;
        if (em_agg_compile(e, in, n_in, &o, &fn, &err) != EM_OK)
            report(c, file, node, e, &err, in, n_in);
        else
            em_agg_fn_free(fn);
        return;
    }
    em_expr_prog *p;
    c->exprs++;
    if (em_expr_compile(e, in, n_in, &o, &p, &err) != EM_OK)
        report(c, file, node, e, &err, in, n_in);
    else
        em_expr_prog_free(p);
}

static void visit(counts *c, const char *file, const em_plan_node *n, bool ansi) {
    if (!n)
        return;
    for (int i = 0; i < n->n_children; i++)
        visit(c, file, n->children[i], ansi);
    const em_plan_field *in = em_plan_node_field(n, EM_FIELD_INPUT);
    const em_expr *const *ins = in ? (const em_expr *const *)in->exprs : NULL;
    int n_in = in ? in->n_exprs : 0;
    switch (n->kind) {
    case EM_NODE_FILTER: {
        const em_plan_field *f = em_plan_node_field(n, EM_FIELD_CONDITION);
        if (f && f->n_exprs > 0)
            compile_one(c, file, n->id, f->exprs[0], ins, n_in, ansi);
        break;
    }
    case EM_NODE_PROJECT: {
        const em_plan_field *f = em_plan_node_field(n, EM_FIELD_OUTPUT);
        for (int i = 0; f && i < f->n_exprs; i++)
            compile_one(c, file, n->id, f->exprs[i], ins, n_in, ansi);
        break;
    }
    case EM_NODE_HASH_AGGREGATE: {
        const em_plan_field *fns = em_plan_node_field(n, EM_FIELD_FUNCTIONS);
        for (int i = 0; fns && i < fns->n_exprs; i++)
            compile_one(c, file, n->id, fns->exprs[i], ins, n_in, ansi);
        /* A final aggregate's Results read the keys and the aggregate
         * attributes; a partial one's re-issue them by position */
        bool final = true;
        for (int i = 0; fns && i < fns->n_exprs; i++)
            final &= fns->exprs[i]->kind != EM_EXPR_AGG || fns->exprs[i]->mode == EM_AGG_FINAL;
        if (!final)
            break;
        const em_plan_field *keys = em_plan_node_field(n, EM_FIELD_KEYS);
        const em_plan_field *attrs = em_plan_node_field(n, EM_FIELD_AGG_ATTRS);
        const em_plan_field *res = em_plan_node_field(n, EM_FIELD_RESULTS);
        int nk = keys ? keys->n_exprs : 0, na = attrs ? attrs->n_exprs : 0;
        const em_expr **env = calloc((size_t)(nk + na + 1), sizeof *env);
        for (int i = 0; i < nk; i++)
            env[i] = keys->exprs[i];
        for (int i = 0; i < na; i++)
            env[nk + i] = attrs->exprs[i];
        for (int i = 0; res && i < res->n_exprs; i++)
            compile_one(c, file, n->id, res->exprs[i], env, nk + na, ansi);
        free(env);
        break;
    }
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN: {
        const em_plan_field *f = em_plan_node_field(n, EM_FIELD_JOIN_CONDITION);
        if (!f || f->n_exprs == 0 || !f->exprs[0] || n->n_children != 2)
            break;
        const em_plan_node *l = n->children[0], *r = n->children[1];
        int nn = l->n_output + r->n_output;
        const em_expr **env = calloc((size_t)(nn + 1), sizeof *env);
        for (int i = 0; i < l->n_output; i++)
            env[i] = l->output[i];
        for (int i = 0; i < r->n_output; i++)
            env[l->n_output + i] = r->output[i];
        compile_one(c, file, n->id, f->exprs[0], env, nn, ansi);
        free(env);
        break;
    }
    default:
        break;
    }
}

static void test_all_tpch_plans(void **state) {
    (void)state;
    const char *shared = em_test_shared_dir();
    if (!shared)
        fail_msg("the shared folder with the Spark plans is missing");
    char root[1024];
    snprintf(root, sizeof root, "%s/spark-plans/tpch", shared);
    DIR *d = opendir(root);
    assert_non_null(d);
    counts c = {0, 0, 0, 0, 0};
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "spark-", 6))
            continue;
        for (int q = 1; q <= 22; q++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/%s/q%d.txt", root, de->d_name, q);
            FILE *f = fopen(path, "rb");
            if (!f) {
                snprintf(path, sizeof path, "%s/%s/Q%d.txt", root, de->d_name, q);
                f = fopen(path, "rb");
            }
            if (!f)
                continue;
            static char buf[1 << 20];
            size_t len = fread(buf, 1, sizeof buf, f);
            fclose(f);
            em_plan *plan;
            em_error err = {0};
            if (em_plan_parse(buf, len, NULL, &plan, &err) != EM_OK)
                fail_msg("%s: %s", path, err.msg);
            files++;
            bool ansi = em_shim_ansi_default(em_plan_shim(plan));
            visit(&c, path, em_plan_root(plan), ansi);
            for (int i = 0; i < em_plan_n_subqueries(plan); i++) {
                const em_plan_subquery *s = em_plan_subquery_at(plan, i);
                if (s->root)
                    visit(&c, path, s->root, ansi);
            }
            em_plan_free(plan);
        }
    }
    closedir(d);
    print_message("%d plans: %d expressions and %d aggregates compiled, %d failures, %d over "
                  "untyped inputs, %d misparsed by the plan parser\n",
                  files, c.exprs, c.aggs, c.failures, c.untyped, c.misparsed);
    assert_true(files >= 132);
    assert_true(c.exprs > 1000);
    assert_int_equal(c.failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_tpch_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
