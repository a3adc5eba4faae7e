/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Operator shapes taken from the real shared plans, over inline data: TPC-H
 * q16's count(DISTINCT ps_suppkey), which Spark plans as four stacked
 * aggregates (group by all four columns twice, then partial_count(distinct)
 * over the deduplicated rows, then the final count merging the partial
 * counts), for every Spark line. The plan's exchange (17) is the source;
 * the exchange between the partial and final count is the identity for one
 * partition.
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
        em_plan_free(p);
    }
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_q16_count_distinct)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
