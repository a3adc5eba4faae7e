/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Operators over small inline data fed through an Exchange read: Filter,
 * Project, HashAggregate (partial then final, grouped and global, empty
 * input, null keys), Sort (NaN, -0.0, nulls, DESC), TakeOrderedAndProject,
 * CollectLimit, Union and Expand. Every input is split into batches of 1, 2
 * and 3 rows so that batch boundaries fall everywhere; expected rows follow
 * from Spark's semantics, worked out by hand in the comments.
 */
#include "test_ops_common.h"

#include <dirent.h>
#include <unistd.h>

#define SCHEMA "k:string,g:int,v:decimal(10;2),d:double"
#define N_COLS 4

#define SRC_DETAILS                                                                                \
    "(1) Scan parquet spark_catalog.default.t\n"                                                   \
    "Output [4]: [k#1, g#2, v#3, d#4]\n"                                                           \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double>\n\n"                              \
    "(2) Exchange\n"                                                                               \
    "Input [4]: [k#1, g#2, v#3, d#4]\n"                                                            \
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=1]\n\n"

/* A plan of one operator `op` (3) over Exchange (2) over the scan of t. */
#define UNARY_PLAN(op)                                                                             \
    "== Physical Plan ==\n" op " (3)\n"                                                            \
    "+- Exchange (2)\n"                                                                            \
    "   +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC_DETAILS "(3) " op "\n"              \
    "Input [4]: [k#1, g#2, v#3, d#4]\n"

/* k, g, v, d */
static const char *const ROWS[] = {
    "a",  "1",  "1.50",  "1.0", /* */
    "b",  "2",  "2.00",  NULL,  /* */
    NULL, "3",  "3.25",  "3.0", /* */
    "a",  NULL, NULL,    "5.0", /* */
    "b",  "5",  "-1.00", "2.0", /* */
    NULL, NULL, NULL,    NULL,  /* */
    "a",  "7",  "0.50",  "-0.0",
};
#define N_ROWS 7

static em_pool *g_pool;

static int setup(void **state) {
    (void)state;
    g_pool = em_pool_create("test", NULL, -1);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    em_pool_destroy(g_pool);
    return 0;
}

static const char FILTER_PROJECT[] =
    "== Physical Plan ==\n"
    "* Project (4)\n"
    "+- * Filter (3)\n"
    "   +- Exchange (2)\n"
    "      +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC_DETAILS
    "(3) Filter [codegen id : 1]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Condition : (isnotnull(g#2) AND (g#2 > 1))\n\n"
    "(4) Project [codegen id : 1]\n"
    "Output [3]: [k#1, (v#3 * 2) AS w#5, g#2]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n";

static void test_filter_project(void **state) {
    (void)state;
    em_plan *p = tops_parse(FILTER_PROJECT);
    for (int per = 1; per <= 3; per++) {
        tops_ctx t;
        tops_init(&t, g_pool);
        tops_set_input(&t, SCHEMA, ROWS, N_COLS, N_ROWS, per);
        em_error err = {0};
        em_op *src, *f, *pr;
        EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
        EM_ASSERT_OK(em_op_filter_create(tops_node(p, 3), src, &f, &err), &err);
        EM_ASSERT_OK(em_op_project_create(tops_node(p, 4), f, &pr, &err), &err);
        int n;
        char **rows = tops_run(pr, &t, &n);
        /* g > 1 keeps g = 2, 3, 5, 7 (null g is dropped); w = v * 2 */
        static const char *const expect[] = {"b|4.00|2", "null|6.50|3", "b|-2.00|5", "a|1.00|7"};
        tops_expect(rows, n, expect, 4, true);
        em_batch_list_reset(&t.input);
    }
    em_plan_destroy(p);
}

static const char AGG[] =
    "== Physical Plan ==\n"
    "HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- HashAggregate (3)\n"
    "      +- Exchange (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC_DETAILS
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Keys [1]: [k#1]\n"
    "Functions [4]: [partial_sum(v#3), partial_count(1), partial_avg(d#4), partial_max(g#2)]\n"
    "Aggregate Attributes [6]: [sum#10, isEmpty#11, count#12, sum#13, count#14, max#15]\n"
    "Results [7]: [k#1, sum#16, isEmpty#17, count#18, sum#19, count#20, max#21]\n\n"
    "(4) Exchange\n"
    "Input [7]: [k#1, sum#16, isEmpty#17, count#18, sum#19, count#20, max#21]\n"
    "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) HashAggregate [codegen id : 2]\n"
    "Input [7]: [k#1, sum#16, isEmpty#17, count#18, sum#19, count#20, max#21]\n"
    "Keys [1]: [k#1]\n"
    "Functions [4]: [sum(v#3), count(1), avg(d#4), max(g#2)]\n"
    "Aggregate Attributes [4]: [sum(v#3)#22, count(1)#23, avg(d#4)#24, max(g#2)#25]\n"
    "Results [5]: [k#1, sum(v#3)#22 AS sv#26, count(1)#23 AS c#27, avg(d#4)#24 AS ad#28, "
    "max(g#2)#25 AS mg#29]\n";

static const char GLOBAL_AGG[] =
    "== Physical Plan ==\n"
    "HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- HashAggregate (3)\n"
    "      +- Exchange (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC_DETAILS
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Keys: []\n"
    "Functions [2]: [partial_sum(v#3), partial_count(1)]\n"
    "Aggregate Attributes [3]: [sum#10, isEmpty#11, count#12]\n"
    "Results [3]: [sum#13, isEmpty#14, count#15]\n\n"
    "(4) Exchange\n"
    "Input [3]: [sum#13, isEmpty#14, count#15]\n"
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) HashAggregate [codegen id : 2]\n"
    "Input [3]: [sum#13, isEmpty#14, count#15]\n"
    "Keys: []\n"
    "Functions [2]: [sum(v#3), count(1)]\n"
    "Aggregate Attributes [2]: [sum(v#3)#16, count(1)#17]\n"
    "Results [2]: [sum(v#3)#16 AS s#18, count(1)#17 AS c#19]\n";

/* Complete mode: final-form functions straight over input rows (no
 * aggregate below) fold the rows themselves. */
static const char COMPLETE_AGG[] = UNARY_PLAN(
    "HashAggregate") "Keys [1]: [k#1]\n"
                     "Functions [3]: [sum(v#3), count(1), max(g#2)]\n"
                     "Aggregate Attributes [3]: [sum(v#3)#10, count(1)#11, max(g#2)#12]\n"
                     "Results [4]: [k#1, sum(v#3)#10 AS s#13, count(1)#11 AS c#14, max(g#2)#12 AS "
                     "m#15]\n";

/* Runs partial -> final over the rows in batches of `per`. */
static char **run_agg(em_plan *p, const char *const *cells, int n_rows, int per, int *n) {
    tops_ctx t;
    tops_init(&t, g_pool);
    tops_set_input(&t, SCHEMA, cells, N_COLS, n_rows, per);
    em_error err = {0};
    em_op *src, *partial, *fin;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, 3), src, &partial, &err), &err);
    EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, 5), partial, &fin, &err), &err);
    char **rows = tops_run(fin, &t, n);
    em_batch_list_reset(&t.input);
    return rows;
}

typedef em_status (*unary_create_fn)(const em_plan_node *, em_op *, em_op **, em_error *);

/* Runs operator op_id of p over the rows (batches of `per`) read through
 * Exchange (2), and returns the rendered rows. */
static char **run_unary(em_plan *p, int op_id, unary_create_fn create, const char *const *cells,
                        int n_rows, int per, int *n) {
    tops_ctx t;
    tops_init(&t, g_pool);
    tops_set_input(&t, SCHEMA, cells, N_COLS, n_rows, per);
    em_error err = {0};
    em_op *src, *op;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(create(tops_node(p, op_id), src, &op, &err), &err);
    char **rows = tops_run(op, &t, n);
    em_batch_list_reset(&t.input);
    return rows;
}

static void test_hash_agg_grouped(void **state) {
    (void)state;
    em_plan *p = tops_parse(AGG);
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_agg(p, ROWS, N_ROWS, per, &n);
        /* a: v 1.50 + 0.50, 3 rows, avg(1.0, 5.0, -0.0) = 2.0, max 7
         * b: 2.00 - 1.00, 2 rows, avg(2.0) (null skipped), max 5
         * null key is a group: 3.25, 2 rows, avg(3.0), max 3 */
        static const char *const expect[] = {"a|2.00|3|2.0|7", "b|1.00|2|2.0|5",
                                             "null|3.25|2|3.0|3"};
        tops_expect(rows, n, expect, 3, false);
    }
    /* grouped aggregate over no rows: no groups */
    int n;
    char **rows = run_agg(p, ROWS, 0, 2, &n);
    tops_expect(rows, n, NULL, 0, false);
    em_plan_destroy(p);
}

static void test_hash_agg_complete(void **state) {
    (void)state;
    em_plan *p = tops_parse(COMPLETE_AGG);
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_unary(p, 3, em_op_hash_agg_create, ROWS, N_ROWS, per, &n);
        static const char *const expect[] = {"a|2.00|3|7", "b|1.00|2|5", "null|3.25|2|3"};
        tops_expect(rows, n, expect, 3, false);
    }
    em_plan_destroy(p);
}

static void test_hash_agg_global(void **state) {
    (void)state;
    em_plan *p = tops_parse(GLOBAL_AGG);
    int n;
    char **rows = run_agg(p, ROWS, N_ROWS, 2, &n);
    static const char *const expect[] = {"6.25|7"};
    tops_expect(rows, n, expect, 1, false);
    /* no input: still one row, sum null and count 0 (Spark) */
    rows = run_agg(p, ROWS, 0, 2, &n);
    static const char *const empty[] = {"null|0"};
    tops_expect(rows, n, empty, 1, false);
    /* all-null values: sum null, count counts rows */
    static const char *const nulls[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    rows = run_agg(p, nulls, 2, 1, &n);
    static const char *const expect_nulls[] = {"null|2"};
    tops_expect(rows, n, expect_nulls, 1, false);
    em_plan_destroy(p);
}

/* Many groups with skew: key i % 1000 for 30000 rows plus one hot key. */
static void test_hash_agg_many_groups(void **state) {
    (void)state;
    em_plan *p = tops_parse(AGG);
    int n_rows = 30000;
    const char **cells = calloc((size_t)n_rows * N_COLS, sizeof *cells);
    char(*keys)[16] = calloc((size_t)n_rows, sizeof *keys);
    for (int i = 0; i < n_rows; i++) {
        int key = i % 3 == 0 ? 999999 : i % 1000;
        snprintf(keys[i], sizeof keys[i], "k%d", key);
        cells[i * N_COLS + 0] = keys[i];
        cells[i * N_COLS + 1] = "1";
        cells[i * N_COLS + 2] = "0.01";
        cells[i * N_COLS + 3] = "1.0";
    }
    int n;
    char **rows = run_agg(p, cells, n_rows, 1000, &n);
    /* 1000 ordinary keys + the hot one (some ordinary keys only occur on
     * rows divisible by 3 ... every key 0..999 occurs on 20 non-hot rows) */
    assert_int_equal(n, 1001);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        char k[32];
        double sv;
        long long c;
        assert_int_equal(sscanf(rows[i], "%31[^|]|%lf|%lld|", k, &sv, &c), 3);
        if (strcmp(k, "k999999") == 0)
            assert_int_equal(c, 10000);
        else
            assert_int_equal(c, 20);
        total += c;
        free(rows[i]);
    }
    free(rows);
    assert_int_equal(total, n_rows);
    free(cells);
    free(keys);
    em_plan_destroy(p);
}

static const char SORT[] =
    UNARY_PLAN("Sort") "Arguments: [d#4 DESC NULLS LAST, k#1 ASC NULLS FIRST], true, 0\n";

static void test_sort(void **state) {
    (void)state;
    em_plan *p = tops_parse(SORT);
    static const char *const rows_in[] = {
        "x",        "1", "1.00", "NaN",  /* */
        "y",        "2", "1.00", "-0.0", /* */
        "a",        "3", "1.00", "0.0",  /* */
        "b",        "4", "1.00", NULL,   /* */
        "c",        "5", "1.00", "1.0",  /* */
        NULL,       "6", "1.00", "1.0",  /* */
        "\xc3\xa9", "7", "1.00", "1.0",
    };
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_unary(p, 3, em_op_sort_create, rows_in, 7, per, &n);
        /* NaN is the greatest double; then 1.0 with k null first, "c", then
         * "é" (0xC3 > 'c' byte-wise unsigned); -0.0 = 0.0 so k decides
         * ("a" before "y"); the null d last */
        static const char *const expect[] = {
            "x|1|1.00|NaN", "null|6|1.00|1.0", "c|5|1.00|1.0", "\xc3\xa9|7|1.00|1.0",
            "a|3|1.00|0.0", "y|2|1.00|-0.0",   "b|4|1.00|null"};
        tops_expect(rows, n, expect, 7, true);
    }
    em_plan_destroy(p);
}

/* A Sort told its order is not wanted (a sort-merge join's hashed side)
 * hands its rows on as they came; any other operator refuses the hint. */
static em_status unordered_sort_create(const em_plan_node *node, em_op *child, em_op **out,
                                       em_error *err) {
    assert_false(em_op_sort_unordered(child));
    EM_TRY(em_op_sort_create(node, child, out, err));
    assert_true(em_op_sort_unordered(*out));
    return EM_OK;
}

static void test_sort_unordered(void **state) {
    (void)state;
    em_plan *p = tops_parse(SORT);
    static const char *const rows_in[] = {
        "x", "1", "1.00", "NaN", /* */
        "a", "3", "1.00", "0.0", /* */
        "b", "4", "1.00", NULL,  /* */
        "c", "5", "1.00", "1.0",
    };
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_unary(p, 3, unordered_sort_create, rows_in, 4, per, &n);
        static const char *const expect[] = {"x|1|1.00|NaN", "a|3|1.00|0.0", "b|4|1.00|null",
                                             "c|5|1.00|1.0"};
        tops_expect(rows, n, expect, 4, true);
    }
    em_plan_destroy(p);
}

static const char TOPN[] =
    UNARY_PLAN("TakeOrderedAndProject") "Arguments: 3, [g#2 DESC NULLS LAST, k#1 ASC NULLS FIRST], "
                                        "[k#1, (g#2 + 1) AS h#9]\n";

static void test_top_n(void **state) {
    (void)state;
    em_plan *p = tops_parse(TOPN);
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_unary(p, 3, em_op_top_n_create, ROWS, N_ROWS, per, &n);
        /* g descending, nulls last: 7 (a), 5 (b), 3 (null) */
        static const char *const expect[] = {"a|8", "b|6", "null|4"};
        tops_expect(rows, n, expect, 3, true);
    }
    em_plan_destroy(p);
}

/* Spark 3.4+ prints an offset after the project list: skip that many rows. */
static void test_top_n_offset(void **state) {
    (void)state;
    char text[4096];
    snprintf(text, sizeof text, "%s", TOPN);
    char *args = strstr(text, "[k#1, (g#2 + 1) AS h#9]");
    assert_non_null(args);
    strcpy(args, "[k#1, (g#2 + 1) AS h#9], 1\n");
    em_plan *p = tops_parse(text);
    int n;
    char **rows = run_unary(p, 3, em_op_top_n_create, ROWS, N_ROWS, 2, &n);
    /* the order is 7, 5, 3, 2, 1: offset 1 and limit 3 give 5, 3, 2 */
    static const char *const expect[] = {"b|6", "null|4", "b|3"};
    tops_expect(rows, n, expect, 3, true);
    em_plan_destroy(p);
}

static const char LIMIT[] = UNARY_PLAN("CollectLimit") "Arguments: 4\n";

static void test_limit(void **state) {
    (void)state;
    em_plan *p = tops_parse(LIMIT);
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_unary(p, 3, em_op_limit_create, ROWS, N_ROWS, per, &n);
        static const char *const expect[] = {"a|1|1.50|1.0", "b|2|2.00|null", "null|3|3.25|3.0",
                                             "a|null|null|5.0"};
        tops_expect(rows, n, expect, 4, true);
    }
    em_plan_destroy(p);
}

/* Spark 3.4+ plans OFFSET without LIMIT as GlobalLimit -1, offset: every
 * row after the offset, whatever the batch size. */
static void test_limit_offset_only(void **state) {
    (void)state;
    em_plan *p = tops_parse(UNARY_PLAN("GlobalLimit") "Arguments: -1, 4\n");
    for (int per = 1; per <= 3; per++) {
        int n;
        char **rows = run_unary(p, 3, em_op_limit_create, ROWS, N_ROWS, per, &n);
        static const char *const expect[] = {"b|5|-1.00|2.0", "null|null|null|null",
                                             "a|7|0.50|-0.0"};
        tops_expect(rows, n, expect, 3, true);
    }
    em_plan_destroy(p);
}

static const char UNION_EXPAND[] =
    "== Physical Plan ==\n"
    "Expand (6)\n"
    "+- Union (5)\n"
    "   :- Exchange (2)\n"
    "   :  +- Scan parquet spark_catalog.default.t (1)\n"
    "   +- Exchange (4)\n"
    "      +- Scan parquet spark_catalog.default.t (3)\n\n\n" SRC_DETAILS
    "(3) Scan parquet spark_catalog.default.t\n"
    "Output [4]: [k#5, g#6, v#7, d#8]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/t]\n"
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double>\n\n"
    "(4) Exchange\n"
    "Input [4]: [k#5, g#6, v#7, d#8]\n"
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) Union\n\n"
    "(6) Expand\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Arguments: [[k#1, g#2, 0], [k#1, null, 1]], [k#1, g#30, spark_grouping_id#31L]\n";

static void test_union_expand(void **state) {
    (void)state;
    em_plan *p = tops_parse(UNION_EXPAND);
    tops_ctx t;
    tops_init(&t, g_pool);
    tops_set_input(&t, SCHEMA, ROWS, N_COLS, 3, 2);
    em_error err = {0};
    em_op *a, *b, *u, *x;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &a, &err), &err);
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 4), &b, &err), &err);
    em_op *kids[2] = {a, b};
    EM_ASSERT_OK(em_op_union_create(tops_node(p, 5), kids, 2, &u, &err), &err);
    EM_ASSERT_OK(em_op_expand_create(tops_node(p, 6), u, &x, &err), &err);
    int n;
    char **rows = tops_run(x, &t, &n);
    /* 3 rows twice through the union, each expanded into two projections */
    static const char *const expect[] = {"a|1|0",    "a|1|0",    "a|null|1",    "a|null|1",
                                         "b|2|0",    "b|2|0",    "b|null|1",    "b|null|1",
                                         "null|3|0", "null|3|0", "null|null|1", "null|null|1"};
    tops_expect(rows, n, expect, 12, false);
    em_batch_list_reset(&t.input);
    em_plan_destroy(p);
}

/* Over a small budget, the aggregate fails the task with EM_ERR_OOM_BUDGET
 * naming the operator, and so does a sort that cannot hold one batch. */
static void test_budget(void **state) {
    (void)state;
    int n_rows = 20000;
    const char **cells = calloc((size_t)n_rows * N_COLS, sizeof *cells);
    char(*keys)[16] = calloc((size_t)n_rows, sizeof *keys);
    for (int i = 0; i < n_rows; i++) {
        snprintf(keys[i], sizeof keys[i], "key%d", i);
        cells[i * N_COLS + 0] = keys[i];
        cells[i * N_COLS + 1] = "1";
        cells[i * N_COLS + 2] = "0.01";
        cells[i * N_COLS + 3] = "1.0";
    }
    em_plan *agg = tops_parse(AGG), *sort = tops_parse(SORT);
    for (int which = 0; which < 2; which++) {
        em_pool *small = em_pool_create("task", NULL, which ? 16 * 1024 : 256 * 1024);
        tops_ctx t;
        tops_init(&t, small);
        tops_set_input(&t, SCHEMA, cells, N_COLS, n_rows, 1000);
        em_error err = {0};
        em_op *src, *op;
        em_plan *p = which ? sort : agg;
        EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
        if (which)
            EM_ASSERT_OK(em_op_sort_create(tops_node(p, 3), src, &op, &err), &err);
        else
            EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, 3), src, &op, &err), &err);
        em_status s = em_op_open(op, &t.ctx, &err);
        em_batch *b = NULL;
        while (s == EM_OK)
            s = em_op_next(op, &b, &err);
        assert_int_equal(s, EM_ERR_OOM_BUDGET);
        assert_non_null(strstr(err.msg, which ? "Sort (3)" : "HashAggregate (3)"));
        em_op_destroy(op);
        em_batch_list_reset(&t.input);
        assert_int_equal(em_pool_used(small), 0);
        em_pool_destroy(small);
    }
    em_plan_destroy(agg);
    em_plan_destroy(sort);
    free(cells);
    free(keys);
}

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Spill files this process holds open under dir, their names already gone. */
static int unlinked_spills(const char *dir) {
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char link[64], target[2048];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k <= 0)
            continue;
        target[k] = '\0';
        /* unnamed from the start (O_TMPFILE: "dir/#inode (deleted)"), or
         * ember-spill-<pid>-<n> unlinked right after it was made */
        n += strncmp(target, dir, strlen(dir)) == 0 && strstr(target, " (deleted)");
    }
    closedir(d);
    return n;
}

/* Over a budget the sort writes sorted runs to disk and merges them: the
 * output equals the in-memory sort's, row for row. */
static void test_sort_spill(void **state) {
    (void)state;
    int n_rows = 30000;
    const char **cells = calloc((size_t)n_rows * N_COLS, sizeof *cells);
    char(*keys)[16] = calloc((size_t)n_rows, sizeof *keys);
    char(*dbl)[16] = calloc((size_t)n_rows, sizeof *dbl);
    for (int i = 0; i < n_rows; i++) {
        snprintf(keys[i], sizeof keys[i], "key%d", i);
        snprintf(dbl[i], sizeof dbl[i], "%d.5", (i * 7919) % 1000);
        cells[i * N_COLS + 0] = keys[i];
        cells[i * N_COLS + 1] = "1";
        cells[i * N_COLS + 2] = i % 11 ? "0.01" : NULL;
        cells[i * N_COLS + 3] = i % 13 ? dbl[i] : NULL;
    }
    em_plan *p = tops_parse(SORT);
    int n_mem;
    char **in_memory = run_unary(p, 3, em_op_sort_create, cells, n_rows, 1000, &n_mem);
    assert_int_equal(n_mem, n_rows);

    em_pool *small = em_pool_create("task", NULL, 2 * 1024 * 1024);
    char spill_dir[1024];
    snprintf(spill_dir, sizeof spill_dir, "%s", em_test_tmpdir("ops_sort_spill"));
    setenv("TMPDIR", spill_dir, 1);
    tops_ctx t;
    tops_init(&t, small);
    tops_set_input(&t, SCHEMA, cells, N_COLS, n_rows, 1000);
    em_error err = {0};
    em_op *src, *op;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(em_op_sort_create(tops_node(p, 3), src, &op, &err), &err);
    EM_ASSERT_OK(em_op_open(op, &t.ctx, &err), &err);
    em_batch_list sorted;
    EM_ASSERT_OK(em_op_collect(op, NULL, &sorted, &err), &err);
    assert_true(op->metrics.spill_bytes > 0);
    /* the runs live until close, but only through their descriptors: a
     * process killed now leaves no file behind */
    assert_true(unlinked_spills(spill_dir) >= 2);
    assert_int_equal(count_files(spill_dir), 0);
    em_op_destroy(op);
    assert_int_equal(unlinked_spills(spill_dir), 0);
    unsetenv("TMPDIR");
    em_batch_list_reset(&t.input);
    assert_int_equal(em_pool_used(small), 0);
    em_pool_destroy(small);

    /* render the spilled sort's rows through a plain read */
    tops_init(&t, g_pool);
    t.input = sorted;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    int n;
    char **spilled = tops_run(src, &t, &n);
    tops_expect(spilled, n, (const char *const *)in_memory, n_mem, true);
    for (int i = 0; i < n_mem; i++)
        free(in_memory[i]);
    free(in_memory);
    em_batch_list_reset(&t.input);
    em_plan_destroy(p);
    free(cells);
    free(keys);
    free(dbl);
}

static const char REUSED[] = "== Physical Plan ==\n"
                             "Union (5)\n"
                             ":- BroadcastExchange (2)\n"
                             ":  +- Scan parquet spark_catalog.default.t (1)\n"
                             "+- Filter (4)\n"
                             "   +- ReusedExchange (3)\n\n\n"
                             "(1) Scan parquet spark_catalog.default.t\n"
                             "Output [4]: [k#1, g#2, v#3, d#4]\n"
                             "Batched: true\n"
                             "Location [not included in comparison]/{warehouse_dir}/t]\n"
                             "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double>\n\n"
                             "(2) BroadcastExchange\n"
                             "Input [4]: [k#1, g#2, v#3, d#4]\n"
                             "Arguments: IdentityBroadcastMode, [plan_id=1]\n\n"
                             "(3) ReusedExchange [Reuses operator id: 2]\n"
                             "Output [4]: [k#10, g#11, v#12, d#13]\n\n"
                             "(4) Filter\n"
                             "Input [4]: [k#10, g#11, v#12, d#13]\n"
                             "Condition : (g#11 >= 5)\n\n"
                             "(5) Union\n\n";

static const em_plan_node *g_asked[4];
static int g_n_asked;
static em_status record_input(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                              em_error *err) {
    if (g_n_asked < 4)
        g_asked[g_n_asked++] = x;
    return tops_shuffle(ctx, x, out, err);
}

/* A ReusedExchange reads the reused exchange's data under its own ids,
 * by position; the runtime is asked for the reused node. */
static void test_reused_exchange(void **state) {
    (void)state;
    em_plan *p = tops_parse(REUSED);
    tops_ctx t;
    tops_init(&t, g_pool);
    t.ctx.broadcast_input = record_input;
    g_n_asked = 0;
    tops_set_input(&t, SCHEMA, ROWS, N_COLS, N_ROWS, 3);
    em_error err = {0};
    em_op *a, *b, *f, *u;
    EM_ASSERT_OK(em_op_broadcast_read_create(tops_node(p, 2), &a, &err), &err);
    EM_ASSERT_OK(em_op_broadcast_read_create(tops_node(p, 3), &b, &err), &err);
    EM_ASSERT_OK(em_op_filter_create(tops_node(p, 4), b, &f, &err), &err);
    em_op *kids[2] = {a, f};
    EM_ASSERT_OK(em_op_union_create(tops_node(p, 5), kids, 2, &u, &err), &err);
    int n;
    char **rows = tops_run(u, &t, &n);
    assert_int_equal(g_n_asked, 2);
    assert_ptr_equal(g_asked[0], tops_node(p, 2));
    assert_ptr_equal(g_asked[1], tops_node(p, 2));
    /* all 7 rows, then the reused copy's rows with g >= 5 */
    static const char *const expect[] = {"a|1|1.50|1.0",    "b|2|2.00|null", "null|3|3.25|3.0",
                                         "a|null|null|5.0", "b|5|-1.00|2.0", "null|null|null|null",
                                         "a|7|0.50|-0.0",   "b|5|-1.00|2.0", "a|7|0.50|-0.0"};
    tops_expect(rows, n, expect, 9, true);
    /* the runtime's batches were shared, not narrowed: still 7 rows */
    int64_t total = 0;
    for (int64_t i = 0; i < t.input.n_batches; i++)
        total += em_batch_rows(t.input.batches[i]);
    assert_int_equal(total, N_ROWS);
    em_batch_list_reset(&t.input);
    em_plan_destroy(p);
}

/* A partial aggregate near its budget flushes its groups and starts again:
 * keys repeat in its output, and the final aggregate still gets the right
 * counts. */
static void test_partial_flush(void **state) {
    (void)state;
    int n_rows = 60000, n_keys = 20000;
    const char **cells = calloc((size_t)n_rows * N_COLS, sizeof *cells);
    char(*keys)[16] = calloc((size_t)n_rows, sizeof *keys);
    for (int i = 0; i < n_rows; i++) {
        snprintf(keys[i], sizeof keys[i], "key%d", i % n_keys);
        cells[i * N_COLS + 0] = keys[i];
        cells[i * N_COLS + 1] = "1";
        cells[i * N_COLS + 2] = "0.01";
        cells[i * N_COLS + 3] = "1.0";
    }
    em_plan *p = tops_parse(AGG);
    em_pool *small = em_pool_create("task", NULL, 3 * 1024 * 1024);
    tops_ctx t;
    tops_init(&t, small);
    tops_set_input(&t, SCHEMA, cells, N_COLS, n_rows, 500);
    em_error err = {0};
    em_op *src, *partial;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, 3), src, &partial, &err), &err);
    EM_ASSERT_OK(em_op_open(partial, &t.ctx, &err), &err);
    em_batch_list buffers;
    EM_ASSERT_OK(em_op_collect(partial, NULL, &buffers, &err), &err);
    assert_true(partial->metrics.peak_bytes <= 3 * 1024 * 1024);
    em_op_destroy(partial);
    /* flushed: some keys were emitted more than once */
    assert_true(buffers.n_rows > n_keys);
    assert_true(buffers.n_rows <= n_rows);
    em_batch_list_reset(&t.input);
    em_pool_destroy(small);
    /* the final aggregate (unlimited) merges the repeated keys */
    tops_init(&t, g_pool);
    t.input = buffers;
    em_op *mid, *fin;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 4), &mid, &err), &err);
    EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, 5), mid, &fin, &err), &err);
    int n;
    char **rows = tops_run(fin, &t, &n);
    assert_int_equal(n, n_keys);
    for (int i = 0; i < n; i++) {
        /* every key: 3 rows of v 0.01, d 1.0, g 1 */
        const char *bar = strchr(rows[i], '|');
        assert_non_null(bar);
        assert_string_equal(bar, "|0.03|3|1.0|1");
        free(rows[i]);
    }
    free(rows);
    em_batch_list_reset(&t.input);
    em_plan_destroy(p);
    free(cells);
    free(keys);
}

static const char LOCAL[] = "== Physical Plan ==\n"
                            "HashAggregate (2)\n"
                            "+- LocalTableScan (1)\n\n\n"
                            "(1) LocalTableScan [codegen id : 1]\n"
                            "Output [2]: [a#1, b#2]\n"
                            "Arguments: <empty>, [a#1, b#2]\n\n"
                            "(2) HashAggregate\n"
                            "Input [2]: [a#1, b#2]\n"
                            "Keys: []\n"
                            "Functions [1]: [count(1)]\n"
                            "Aggregate Attributes [1]: [count(1)#3]\n"
                            "Results [1]: [count(1)#3 AS c#4]\n";

static const char LOCAL_ROWS[] = "== Physical Plan ==\n"
                                 "LocalTableScan (1)\n\n\n"
                                 "(1) LocalTableScan [codegen id : 1]\n"
                                 "Output [2]: [a#1, b#2]\n"
                                 "Arguments: [a#1, b#2]\n";

static void test_local_table(void **state) {
    (void)state;
    em_plan *p = tops_parse(LOCAL);
    tops_ctx t;
    tops_init(&t, g_pool);
    em_error err = {0};
    em_op *src, *agg;
    EM_ASSERT_OK(em_op_local_table_create(tops_node(p, 1), &src, &err), &err);
    EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, 2), src, &agg, &err), &err);
    int n;
    char **rows = tops_run(agg, &t, &n);
    static const char *const expect[] = {"0"}; /* count over the empty relation */
    tops_expect(rows, n, expect, 1, true);
    em_plan_destroy(p);
    /* a non-empty local table's rows are not in the text: unsupported */
    p = tops_parse(LOCAL_ROWS);
    EM_ASSERT_OK(em_op_local_table_create(tops_node(p, 1), &src, &err), &err);
    assert_int_equal(em_op_open(src, &t.ctx, &err), EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "LocalTableScan (1)"));
    em_op_destroy(src);
    em_plan_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filter_project),
        cmocka_unit_test(test_hash_agg_grouped),
        cmocka_unit_test(test_hash_agg_global),
        cmocka_unit_test(test_hash_agg_many_groups),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_sort_unordered),
        cmocka_unit_test(test_top_n),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_limit_offset_only),
        cmocka_unit_test(test_union_expand),
        cmocka_unit_test(test_local_table),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_reused_exchange),
        cmocka_unit_test(test_top_n_offset),
        cmocka_unit_test(test_partial_flush),
        cmocka_unit_test(test_sort_spill),
        cmocka_unit_test(test_hash_agg_complete),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
