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
#include "ember/value_text.h"
#include "test_plan_common.h"

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
            em_agg_fn_destroy(fn);
        return;
    }
    em_expr_prog *p;
    c->exprs++;
    if (em_expr_compile(e, in, n_in, &o, &p, &err) != EM_OK)
        report(c, file, node, e, &err, in, n_in);
    else
        em_expr_prog_destroy(p);
}

typedef struct walk {
    counts *c;
    const char *file;
    bool ansi;
} walk;

static void visit(const em_plan_node *n, const em_expr *e, const em_expr *const *in, int n_in,
                  void *ctx) {
    walk *w = ctx;
    compile_one(w->c, w->file, n->id, e, in, n_in, w->ansi);
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
            walk w = {&c, path, em_shim_ansi_default(em_plan_shim(plan))};
            plan_test_walk_bound_all(plan, visit, &w);
            em_plan_destroy(plan);
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

/* ------------------------------------------------------------------ 3.3 vs 3.4 */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A column of n pseudo-random values of type t (about 1 in 8 null). */
static void random_column(em_column *c, em_type t, int n) {
    static const char *const words[] = {"R",
                                        "A",
                                        "N",
                                        "MAIL",
                                        "SHIP",
                                        "PROMO X",
                                        "ECONOMY BRASS",
                                        "forest green",
                                        "BUILDING",
                                        "special requests"};
    em_error err = {0};
    EM_ASSERT_OK(em_column_init(c, t, n, NULL, &err), &err);
    for (int i = 0; i < n; i++) {
        if (rng() % 8 == 0) {
            EM_ASSERT_OK(em_column_append_null(c, &err), &err);
            continue;
        }
        union {
            bool b;
            int32_t i32;
            int64_t i64;
            double d;
            em_i128 dec;
        } u;
        memset(&u, 0, sizeof u);
        switch (t.id) {
        case EM_TYPE_BOOLEAN:
            u.b = rng() & 1;
            break;
        case EM_TYPE_INT:
            u.i32 = (int32_t)(rng() % 200) - 20;
            break;
        case EM_TYPE_DATE:
            u.i32 = 8000 + (int32_t)(rng() % 2600); /* 1991 .. 1998 */
            break;
        case EM_TYPE_LONG:
            u.i64 = (int64_t)(rng() % 100000) - 100;
            break;
        case EM_TYPE_DOUBLE:
            u.d = (double)(rng() % 100000) / 7.0 - 50;
            break;
        case EM_TYPE_DECIMAL: {
            int digits = t.precision < 7 ? t.precision : 7;
            int64_t lim = 1;
            for (int k = 0; k < digits; k++)
                lim *= 10;
            u.dec = (em_i128)(int64_t)(rng() % (uint64_t)lim) - (rng() % 4 == 0 ? lim / 2 : 0);
            break;
        }
        case EM_TYPE_STRING: {
            const char *w = words[rng() % (sizeof words / sizeof words[0])];
            EM_ASSERT_OK(em_column_append_bytes(c, w, (int32_t)strlen(w), &err), &err);
            continue;
        }
        default:
            EM_ASSERT_OK(em_column_append_null(c, &err), &err);
            continue;
        }
        EM_ASSERT_OK(em_column_append_fixed(c, &u, &err), &err);
    }
}

static em_plan *load_plan(const char *version, int q) {
    char path[1200];
    snprintf(path, sizeof path, "%s/spark-plans/tpch/spark-%s/q%d.txt", em_test_shared_dir(),
             version, q);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    em_plan *plan;
    em_error err = {0};
    if (em_plan_parse(buf, len, NULL, &plan, &err) != EM_OK)
        fail_msg("%s: %s", path, err.msg);
    return plan;
}

/* Evaluates e over b; returns false when it does not compile or evaluate
 * (scalar subqueries, untyped inputs), else fills out. */
static bool eval_text(const em_expr *e, const em_expr *const *in, int n_in, const em_batch *b,
                      em_column *out) {
    em_expr_compile_options o = {0};
    o.subquery = no_subquery;
    em_expr_prog *p;
    em_error err = {0};
    if (em_expr_compile(e, in, n_in, &o, &p, &err) != EM_OK)
        return false;
    em_status st = em_expr_eval(p, b, NULL, out, &err);
    em_expr_prog_destroy(p);
    return st == EM_OK;
}

static int compared;

static void compare_node(const char *what, const em_plan_node *a, const em_plan_node *b) {
    const em_plan_field *ia = em_plan_node_field(a, EM_FIELD_INPUT);
    const em_plan_field *ib = em_plan_node_field(b, EM_FIELD_INPUT);
    if (!ia || !ib || ia->n_exprs != ib->n_exprs || ia->n_exprs == 0)
        return;
    int n = ia->n_exprs;
    em_schema s;
    em_error err = {0};
    EM_ASSERT_OK(em_schema_init(&s, n, &err), &err);
    for (int i = 0; i < n; i++) {
        if (!ia->exprs[i]->type_known || !ib->exprs[i]->type_known ||
            !em_type_equal(ia->exprs[i]->type, ib->exprs[i]->type)) {
            em_schema_reset(&s);
            return;
        }
        EM_ASSERT_OK(em_schema_set(&s, i, "c", ia->exprs[i]->type, true, &err), &err);
    }
    em_batch *batch;
    EM_ASSERT_OK(em_batch_create(&s, 1, NULL, &batch, &err), &err);
    em_schema_reset(&s);
    const int rows = 64;
    for (int i = 0; i < n; i++) {
        em_column_reset(&batch->cols[i]);
        random_column(&batch->cols[i], ia->exprs[i]->type, rows);
    }
    batch->n_rows = rows;
    em_field_kind kinds[] = {EM_FIELD_CONDITION, EM_FIELD_OUTPUT, EM_FIELD_FUNCTIONS};
    for (size_t k = 0; k < 3; k++) {
        const em_plan_field *fa = em_plan_node_field(a, kinds[k]);
        const em_plan_field *fb = em_plan_node_field(b, kinds[k]);
        if (!fa || !fb || fa->n_exprs != fb->n_exprs)
            continue;
        for (int x = 0; x < fa->n_exprs; x++) {
            const em_expr *ea = fa->exprs[x], *eb = fb->exprs[x];
            if (ea->kind == EM_EXPR_AGG) { /* compare the aggregate's argument */
                if (ea->mode != EM_AGG_PARTIAL || eb->kind != EM_EXPR_AGG || ea->n_args < 1)
                    continue;
                ea = ea->args[0];
                eb = eb->args[0];
            }
            em_column ca, cb;
            bool oka = eval_text(ea, (const em_expr *const *)ia->exprs, n, batch, &ca);
            bool okb = eval_text(eb, (const em_expr *const *)ib->exprs, n, batch, &cb);
            if (oka && okb) {
                em_strbuf ta = {0}, tb = {0};
                for (int r = 0; r < rows; r++) {
                    bool na, nb;
                    em_strbuf_clear(&ta);
                    em_strbuf_clear(&tb);
                    EM_ASSERT_OK(em_value_text(&ca, r, &ta, &na, &err), &err);
                    EM_ASSERT_OK(em_value_text(&cb, r, &tb, &nb, &err), &err);
                    if (na != nb || strcmp(em_strbuf_cstr(&ta), em_strbuf_cstr(&tb)))
                        fail_msg("%s node (%d) expression %d row %d: '%s' vs '%s'", what, a->id, x,
                                 r, na ? "null" : em_strbuf_cstr(&ta),
                                 nb ? "null" : em_strbuf_cstr(&tb));
                }
                em_strbuf_reset(&ta);
                em_strbuf_reset(&tb);
                compared++;
            }
            if (oka)
                em_column_reset(&ca);
            if (okb)
                em_column_reset(&cb);
        }
    }
    em_batch_destroy(batch);
}

static void walk_pair(const char *what, const em_plan_node *a, const em_plan_node *b) {
    if (!a || !b || a->kind != b->kind || a->n_children != b->n_children)
        return;
    for (int i = 0; i < a->n_children; i++)
        walk_pair(what, a->children[i], b->children[i]);
    if (a->kind == EM_NODE_FILTER || a->kind == EM_NODE_PROJECT ||
        a->kind == EM_NODE_HASH_AGGREGATE)
        compare_node(what, a, b);
}

/* Spark 3.3 prints decimal arithmetic with CheckOverflow/promote_precision,
 * 3.4+ leaves the types implicit: the same expressions must give the same
 * values on the same data. */
static void test_versions_agree(void **state) {
    (void)state;
    if (!em_test_shared_dir())
        fail_msg("the shared folder with the Spark plans is missing");
    const char *pairs[][2] = {{"3.3", "3.4"}, {"3.3.0", "4.0"}, {"3.5", "master"}};
    compared = 0;
    for (size_t pr = 0; pr < sizeof pairs / sizeof pairs[0]; pr++) {
        for (int q = 1; q <= 22; q++) {
            em_plan *a = load_plan(pairs[pr][0], q), *b = load_plan(pairs[pr][1], q);
            char what[64];
            snprintf(what, sizeof what, "q%d %s vs %s", q, pairs[pr][0], pairs[pr][1]);
            if (a && b)
                walk_pair(what, em_plan_root(a), em_plan_root(b));
            em_plan_destroy(a);
            em_plan_destroy(b);
        }
    }
    print_message("%d expressions evaluated alike across Spark lines\n", compared);
    assert_true(compared > 300);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_tpch_plans),
        cmocka_unit_test(test_versions_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
