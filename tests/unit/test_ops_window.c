/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Window over inline data: rank, dense_rank and row_number with peers and
 * a null order key, sum over the whole partition, a running sum over a
 * RANGE frame (peers share the value) and a running count over a ROWS
 * frame, with a null partition key; inputs split at every batch boundary.
 * An unsupported frame is an error naming the expression.
 */
#include "test_ops_common.h"

#define SCHEMA "k:string,g:int,v:decimal(10;2)"

#define SPEC(frame, hi)                                                                            \
    " windowspecdefinition(k#1, g#2 ASC NULLS FIRST, specifiedwindowframe(" frame                  \
    ", unboundedpreceding$(), " hi "))"

/* Window (3) over Exchange (2) over the scan of t(k, g, v). */
#define WINDOW_HEAD                                                                                \
    "== Physical Plan ==\n"                                                                        \
    "Window (3)\n"                                                                                 \
    "+- Exchange (2)\n"                                                                            \
    "   +- Scan parquet spark_catalog.default.t (1)\n\n\n"                                         \
    "(1) Scan parquet spark_catalog.default.t\n"                                                   \
    "Output [3]: [k#1, g#2, v#3]\n"                                                                \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2)>\n\n"                                       \
    "(2) Exchange\n"                                                                               \
    "Input [3]: [k#1, g#2, v#3]\n"                                                                 \
    "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"                    \
    "(3) Window\n"                                                                                 \
    "Input [3]: [k#1, g#2, v#3]\n"

/* clang-format off */
static const char WINDOW[] = WINDOW_HEAD
    "Arguments: ["
    "rank(g#2)" SPEC("RowFrame", "currentrow$()") " AS rk#4, "
    "dense_rank(g#2)" SPEC("RowFrame", "currentrow$()") " AS dr#5, "
    "row_number()" SPEC("RowFrame", "currentrow$()") " AS rn#6, "
    "sum(v#3)" SPEC("RowFrame", "unboundedfollowing$()") " AS s#7, "
    "sum(v#3)" SPEC("RangeFrame", "currentrow$()") " AS rs#8, "
    "count(1)" SPEC("RowFrame", "currentrow$()") " AS c#9"
    "], [k#1], [g#2 ASC NULLS FIRST]\n";
/* clang-format on */

static const char *const ROWS[] = {
    "a",  "1",  "1.00", /* */
    "b",  "2",  "1.50", /* */
    "a",  "1",  "2.00", /* */
    NULL, "5",  "0.25", /* */
    "a",  "3",  "4.00", /* */
    "a",  NULL, "8.00",
};

static void test_window(void **state) {
    (void)state;
    em_pool *pool = em_pool_create("test", NULL, -1);
    em_plan *p = tops_parse(WINDOW);
    for (int per = 1; per <= 4; per++) {
        tops_ctx t;
        tops_init(&t, pool);
        tops_set_input(&t, SCHEMA, ROWS, 3, 6, per);
        em_error err = {0};
        em_op *src, *w;
        EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
        EM_ASSERT_OK(em_op_window_create(tops_node(p, 3), src, &w, &err), &err);
        int n;
        char **rows = tops_run(w, &t, &n);
        /* partitions in key order (null first); in a: g null, 1, 1, 3.
         * rank 1 2 2 4, dense 1 2 2 3, row 1 2 3 4; total 15.00; running
         * by range: 8, 8+1+2 (both peers), 11, 15; running count 1..4 */
        static const char *const expect[] = {
            "null|5|0.25|1|1|1|0.25|0.25|1", "a|null|8.00|1|1|1|15.00|8.00|1",
            "a|1|1.00|2|2|2|15.00|11.00|2",  "a|1|2.00|2|2|3|15.00|11.00|3",
            "a|3|4.00|4|3|4|15.00|15.00|4",  "b|2|1.50|1|1|1|1.50|1.50|1"};
        tops_expect(rows, n, expect, 6, true);
        em_batch_list_reset(&t.input);
    }
    /* empty input: no rows */
    tops_ctx t;
    tops_init(&t, pool);
    em_error err = {0};
    em_op *src, *w;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(em_op_window_create(tops_node(p, 3), src, &w, &err), &err);
    int n;
    char **rows = tops_run(w, &t, &n);
    tops_expect(rows, n, NULL, 0, true);
    em_plan_destroy(p);
    em_pool_destroy(pool);
}

/* RangeFrame offsets need one order key to add them to */
static const char RANGE_TWO_KEYS[] =
    WINDOW_HEAD "Arguments: [sum(v#3) windowspecdefinition(k#1, g#2 ASC NULLS FIRST, "
                "v#3 ASC NULLS FIRST, specifiedwindowframe(RangeFrame, -1, 1)) AS s#4], [k#1], "
                "[g#2 ASC NULLS FIRST, v#3 ASC NULLS FIRST]\n";

static void test_window_unsupported_frame(void **state) {
    (void)state;
    em_plan *p = tops_parse(RANGE_TWO_KEYS);
    tops_ctx t;
    tops_init(&t, NULL);
    em_error err = {0};
    em_op *src, *w;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(em_op_window_create(tops_node(p, 3), src, &w, &err), &err);
    assert_int_equal(em_op_open(w, &t.ctx, &err), EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "Window (3)"));
    assert_non_null(strstr(err.msg, "sum(v#3)"));
    em_op_destroy(w);
    em_plan_destroy(p);
}

/* A RANGE frame's bound is the order key plus the offset, Spark's Add: past
 * the key type's range it fails under ANSI (ARITHMETIC_OVERFLOW, as Spark
 * does) and saturates otherwise. */
static const char RANGE_NEAR_MAX[] =
    WINDOW_HEAD "Arguments: [sum(v#3) windowspecdefinition(k#1, g#2 ASC NULLS FIRST, "
                "specifiedwindowframe(RangeFrame, currentrow$(), 4)) AS s#4], [k#1], "
                "[g#2 ASC NULLS FIRST]\n";

static void test_window_range_overflow(void **state) {
    (void)state;
    static const char *const rows_in[] = {"a", "2147483645", "1.00", "a", "2147483647", "2.00"};
    em_plan *p = tops_parse(RANGE_NEAR_MAX);
    for (int ansi = 0; ansi < 2; ansi++) {
        tops_ctx t;
        tops_init(&t, NULL);
        t.ctx.expr_opts.ansi = ansi;
        tops_set_input(&t, SCHEMA, rows_in, 3, 2, 1);
        em_error err = {0};
        em_op *src, *w;
        EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
        EM_ASSERT_OK(em_op_window_create(tops_node(p, 3), src, &w, &err), &err);
        if (ansi) {
            EM_ASSERT_OK(em_op_open(w, &t.ctx, &err), &err);
            em_batch *b = NULL;
            assert_int_equal(em_op_next(w, &b, &err), EM_ERR_OVERFLOW);
            assert_non_null(strstr(err.msg, "[ARITHMETIC_OVERFLOW] integer overflow"));
            em_op_destroy(w);
        } else {
            int n;
            char **rows = tops_run(w, &t, &n);
            static const char *const expect[] = {"a|2147483645|1.00|3.00",
                                                 "a|2147483647|2.00|2.00"};
            tops_expect(rows, n, expect, 2, true);
        }
        em_batch_list_reset(&t.input);
    }
    em_plan_destroy(p);
}

static void run_group_limit(const char *fn, const char *const *expect, int n_expect) {
    char text[4096];
    snprintf(text, sizeof text,
             "== Physical Plan ==\n"
             "WindowGroupLimit (3)\n"
             "+- Exchange (2)\n"
             "   +- Scan parquet spark_catalog.default.t (1)\n\n\n"
             "(1) Scan parquet spark_catalog.default.t\n"
             "Output [3]: [k#1, g#2, v#3]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/t]\n"
             "ReadSchema: struct<k:string,g:int,v:decimal(10,2)>\n\n"
             "(2) Exchange\n"
             "Input [3]: [k#1, g#2, v#3]\n"
             "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"
             "(3) WindowGroupLimit\n"
             "Input [3]: [k#1, g#2, v#3]\n"
             "Arguments: [k#1], [g#2 ASC NULLS FIRST], %s, 2, Partial\n",
             fn);
    em_plan *p = tops_parse(text);
    em_pool *pool = em_pool_create("test", NULL, -1);
    for (int per = 1; per <= 3; per++) {
        tops_ctx t;
        tops_init(&t, pool);
        tops_set_input(&t, SCHEMA, ROWS, 3, 6, per);
        em_error err = {0};
        em_op *src, *w;
        EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
        EM_ASSERT_OK(em_op_window_create(tops_node(p, 3), src, &w, &err), &err);
        int n;
        char **rows = tops_run(w, &t, &n);
        tops_expect(rows, n, expect, n_expect, true);
        em_batch_list_reset(&t.input);
    }
    em_plan_destroy(p);
    em_pool_destroy(pool);
}

/* WindowGroupLimit keeps rows ranked within the limit per partition: in
 * partition a (g null, 1, 1, 3) rank and dense_rank keep both peers at 2,
 * row_number keeps two rows. */
static void test_window_group_limit(void **state) {
    (void)state;
    static const char *const by_rank[] = {"null|5|0.25", "a|null|8.00", "a|1|1.00", "a|1|2.00",
                                          "b|2|1.50"};
    run_group_limit("rank(g#2)", by_rank, 5);
    run_group_limit("dense_rank(g#2)", by_rank, 5);
    static const char *const by_row[] = {"null|5|0.25", "a|null|8.00", "a|1|1.00", "b|2|1.50"};
    run_group_limit("row_number()", by_row, 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_window),
                                       cmocka_unit_test(test_window_unsupported_frame),
        cmocka_unit_test(test_window_range_overflow),
                                       cmocka_unit_test(test_window_group_limit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
