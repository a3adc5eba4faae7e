/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Operator shapes taken from the real shared plans, over inline data: TPC-H
 * q16's count(DISTINCT ps_suppkey), which Spark plans as four stacked
 * aggregates (group by all four columns twice, then partial_count(distinct)
 * over the deduplicated rows, then the final count merging the partial
 * counts), for every Spark line. The plan's exchange (17) is the source;
 * the exchange between the partial and final count is the identity for one
 * partition.
 *
 * And a sweep over all 132 shared TPC-H plans: every Filter, Project,
 * HashAggregate, Sort, TakeOrderedAndProject, Window, Expand and limit node
 * is built over a source with its child's attributes, compiled and run on
 * empty input (scalar subqueries answer null): no rows out, except exactly
 * one for a global aggregate. Nodes whose input attributes the plan text
 * leaves untyped (q6's LocalTableScan folds away the scan and its
 * ReadSchema) are counted and left out.
 */
#include "test_ops_common.h"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* The first node with this name whose first function prints containing
 * fn_text (empty: a node without functions). */
static const em_plan_node *find(const em_plan *p, const char *name, const char *fn_text) {
    for (int id = 1; id <= em_plan_max_id(p); id++) {
        const em_plan_node *n = em_plan_node_by_id(p, id);
        if (!n || strcmp(n->name, name) != 0)
            continue;
        const em_plan_field *f = em_plan_node_field(n, EM_FIELD_FUNCTIONS);
        char *text = NULL;
        size_t len = 0;
        const char *have = "";
        if (f && f->n_exprs > 0) {
            em_error err = {0};
            EM_ASSERT_OK(em_expr_print(f->exprs[0], NULL, &text, &len, &err), &err);
            have = text;
        }
        bool ok = *fn_text ? strstr(have, fn_text) != NULL : !*have;
        free(text);
        if (ok)
            return n;
    }
    return NULL;
}

static void test_q16_count_distinct(void **state) {
    (void)state;
    static const char *const versions[] = {"spark-3.3.0", "spark-3.3", "spark-3.4",
                                           "spark-3.5",   "spark-4.0", "spark-master"};
    /* p_brand, p_type, p_size, ps_suppkey */
    static const char *const rows[] = {
        "B1", "T", "1", "10", /* */
        "B1", "T", "1", "11", /* */
        "B1", "T", "1", "10", /* duplicate supplier */
        "B2", "T", "1", "10", /* */
        "B1", "T", "2", "10", /* */
        "B1", "T", "1", NULL, /* null suppliers are not counted */
        "B3", "T", "3", NULL, /* */
        "B1", "T", "1", "12",
    };
    const char *shared = em_test_shared_dir();
    assert_non_null(shared);
    em_pool *pool = em_pool_create("test", NULL, -1);
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/spark-plans/tpch/%s/q16.txt", shared, versions[v]);
        const char *text = read_text(path);
        em_plan *p = tops_parse(text);
        /* the two grouping-only aggregates, then partial and final count */
        const em_plan_node *aggs[4] = {NULL};
        int n_aggs = 0;
        const em_plan_node *source = NULL;
        for (int id = 1; id <= em_plan_max_id(p); id++) {
            const em_plan_node *n = em_plan_node_by_id(p, id);
            if (!n)
                continue;
            if (n->kind == EM_NODE_HASH_AGGREGATE && n_aggs < 4)
                aggs[n_aggs++] = n;
            if (n->kind == EM_NODE_EXCHANGE && n_aggs == 1 && !source)
                source = n; /* the exchange above the first aggregate */
        }
        assert_int_equal(n_aggs, 4);
        assert_non_null(source);
        assert_non_null(find(p, "HashAggregate", "partial_count(distinct"));
        tops_ctx t;
        tops_init(&t, pool);
        tops_set_input(&t, "b:string,t:string,s:int,k:bigint", rows, 4, 8, 3);
        em_error err = {0};
        em_op *op;
        EM_ASSERT_OK(em_op_shuffle_read_create(source, &op, &err), &err);
        for (int i = 1; i < 4; i++)
            EM_ASSERT_OK(em_op_hash_agg_create(aggs[i], op, &op, &err), &err);
        int n;
        char **out = tops_run(op, &t, &n);
        /* (B1,T,1): suppliers 10, 11, 12 -> 3; (B2,T,1) 1; (B1,T,2) 1;
         * (B3,T,3): only a null supplier -> 0 */
        static const char *const expect[] = {"B1|T|1|3", "B1|T|2|1", "B2|T|1|1", "B3|T|3|0"};
        tops_expect(out, n, expect, 4, false);
        em_batch_list_reset(&t.input);
        em_plan_destroy(p);
    }
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
}

static em_batch_list g_empty;
static em_status empty_input(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                             em_error *err) {
    (void)ctx;
    (void)x;
    (void)err;
    *out = &g_empty;
    return EM_OK;
}
static em_status null_subquery(void *ctx, const em_expr *sq, em_type type, em_pool *pool,
                               em_column *out, em_error *err) {
    (void)ctx;
    (void)sq;
    EM_TRY(em_column_init(out, type, 1, pool, err));
    return em_column_append_null(out, err);
}

static bool inputs_typed(const em_plan_node *n) {
    const em_plan_node *c = n->children[0];
    for (int i = 0; i < c->n_output; i++)
        if (!c->output[i]->type_known)
            return false;
    return true;
}

static void test_all_tpch_nodes_compile(void **state) {
    (void)state;
    static const char *const versions[] = {"spark-3.3.0", "spark-3.3", "spark-3.4",
                                           "spark-3.5",   "spark-4.0", "spark-master"};
    int built = 0, untyped = 0;
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        for (int q = 1; q <= 22; q++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/spark-plans/tpch/%s/q%d.txt", em_test_shared_dir(),
                     versions[v], q);
            em_plan *p = tops_parse(read_text(path));
            for (int id = 1; id <= em_plan_max_id(p); id++) {
                const em_plan_node *nd = em_plan_node_by_id(p, id);
                if (!nd || nd->n_children < 1)
                    continue;
                em_node_kind k = nd->kind;
                if (k != EM_NODE_FILTER && k != EM_NODE_PROJECT && k != EM_NODE_HASH_AGGREGATE &&
                    k != EM_NODE_SORT && k != EM_NODE_TAKE_ORDERED_AND_PROJECT &&
                    k != EM_NODE_WINDOW && k != EM_NODE_EXPAND && k != EM_NODE_COLLECT_LIMIT)
                    continue;
                if (!inputs_typed(nd)) {
                    untyped++;
                    continue;
                }
                em_plan_node src_node;
                memset(&src_node, 0, sizeof src_node);
                src_node.kind = EM_NODE_EXCHANGE;
                src_node.name = "Exchange";
                src_node.n_output = nd->children[0]->n_output;
                src_node.output = nd->children[0]->output;
                em_error err = {0};
                em_op *src, *op;
                EM_ASSERT_OK(em_op_shuffle_read_create(&src_node, &src, &err), &err);
                em_status s;
                switch (k) {
                case EM_NODE_FILTER:
                    s = em_op_filter_create(nd, src, &op, &err);
                    break;
                case EM_NODE_PROJECT:
                    s = em_op_project_create(nd, src, &op, &err);
                    break;
                case EM_NODE_HASH_AGGREGATE:
                    s = em_op_hash_agg_create(nd, src, &op, &err);
                    break;
                case EM_NODE_SORT:
                    s = em_op_sort_create(nd, src, &op, &err);
                    break;
                case EM_NODE_WINDOW:
                    s = em_op_window_create(nd, src, &op, &err);
                    break;
                case EM_NODE_EXPAND:
                    s = em_op_expand_create(nd, src, &op, &err);
                    break;
                case EM_NODE_TAKE_ORDERED_AND_PROJECT:
                    s = em_op_top_n_create(nd, src, &op, &err);
                    break;
                default:
                    s = em_op_limit_create(nd, src, &op, &err);
                    break;
                }
                EM_ASSERT_OK(s, &err);
                tops_ctx t;
                tops_init(&t, NULL);
                t.ctx.shuffle_input = empty_input;
                t.ctx.expr_opts.shim = em_plan_shim(p);
                t.ctx.expr_opts.ansi = em_shim_ansi_default(em_plan_shim(p));
                t.ctx.expr_opts.subquery = null_subquery;
                s = em_op_open(op, &t.ctx, &err);
                if (s != EM_OK)
                    fail_msg("%s q%d %s (%d): %s", versions[v], q, nd->name, id, err.msg);
                int64_t rows = 0;
                em_batch *b;
                while ((s = em_op_next(op, &b, &err)) == EM_OK)
                    rows += em_batch_rows(b);
                if (s != EM_DONE)
                    fail_msg("%s q%d %s (%d): %s", versions[v], q, nd->name, id, err.msg);
                const em_plan_field *keys = em_plan_node_field(nd, EM_FIELD_KEYS);
                bool global = k == EM_NODE_HASH_AGGREGATE && (!keys || keys->n_exprs == 0);
                if (rows != (global ? 1 : 0))
                    fail_msg("%s q%d %s (%d): %lld rows from empty input", versions[v], q, nd->name,
                             id, (long long)rows);
                em_op_destroy(op);
                built++;
            }
            em_plan_destroy(p);
        }
    }
    fprintf(stderr, "%d nodes built and run, %d left out (untyped input)\n", built, untyped);
    assert_true(built > 1400);
    assert_true(untyped <= 12);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_q16_count_distinct),
                                       cmocka_unit_test(test_all_tpch_nodes_compile)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
