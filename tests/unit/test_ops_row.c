/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference row engine's operators, the transitions and the mixed-tree
 * builder.
 *
 * Every case is a small EXPLAIN FORMATTED plan whose stage inputs
 * (Exchange / BroadcastExchange data) are inline rows. Each plan runs
 * natively (em_op_build), entirely on rows, and mixed (engines alternating
 * node by node, so transitions sit everywhere, both ways), and the three
 * outputs must be equal (as multisets, or in order where the operator
 * fixes one); where an expectation is written, all must equal it. Inputs
 * are split into batches of 1, 2 and 3 rows; multi-stage plans run their
 * map stages first (a partial aggregate on one engine feeding a final one
 * on the other). Window functions the native engine lacks (lag, lead,
 * ntile, percent_rank, cume_dist, sliding frames) are checked against
 * hand-computed rows. Finally the 22 TPC-H plans Spark 3.5 printed run
 * through the runtime over generated data (SF 0.01), natively, on rows and
 * mixed, and must give the same rows.
 */
#include "test_ops_common.h"

#include "ember/parquet.h"
#include "ember/conf.h"
#include "ember/overrides.h"
#include "ember/rowops.h"
#include "ember/runtime.h"
#include "ember/tpch.h"
#include "ops/row_internal.h"

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

/* ------------------------------------------------------------------ harness */

#define MAX_ID 32

typedef struct rt {
    tops_ctx t; /* first: the scan callback reads ctx->runtime as a tops_ctx */
    em_batch_list lists[MAX_ID];
    int enters, leaves, held;
} rt;

static em_status rt_input(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                          em_error *err) {
    rt *r = ctx->runtime;
    if (x->id <= 0 || x->id >= MAX_ID)
        return EM_FAIL(err, EM_ERR_INTERNAL, "no input for node %d", x->id);
    *out = &r->lists[x->id];
    return EM_OK;
}

static em_status rt_enter(em_exec_ctx *ctx, em_error *err) {
    (void)err;
    rt *r = ctx->runtime;
    r->enters++;
    r->held = 1;
    return EM_OK;
}

static void rt_leave(em_exec_ctx *ctx) {
    rt *r = ctx->runtime;
    r->leaves++;
    r->held = 0;
}

static void rt_init(rt *r) {
    memset(r, 0, sizeof *r);
    tops_init(&r->t, g_pool);
    r->t.ctx.runtime = r;
    r->t.ctx.shuffle_input = rt_input;
    r->t.ctx.broadcast_input = rt_input;
    r->t.ctx.native_enter = rt_enter;
    r->t.ctx.native_leave = rt_leave;
}

static void rt_free(rt *r) {
    for (int i = 0; i < MAX_ID; i++)
        em_batch_list_reset(&r->lists[i]);
}

/* Node `id`'s input: rows of `schema` in batches of `per`. */
static void rt_set(rt *r, int id, const char *schema, const char *const *cells, int n_cols,
                   int n_rows, int per) {
    em_batch_list_reset(&r->t.input);
    tops_set_input(&r->t, schema, cells, n_cols, n_rows, per);
    em_batch_list_reset(&r->lists[id]);
    r->lists[id] = r->t.input;
    memset(&r->t.input, 0, sizeof r->t.input);
}

static em_engine all_native(void *arg, const em_plan_node *n) {
    (void)arg;
    (void)n;
    return EM_ENGINE_NATIVE;
}
static em_engine all_row(void *arg, const em_plan_node *n) {
    (void)arg;
    (void)n;
    return EM_ENGINE_ROW;
}
/* engines alternate with the node id (parity given by arg) */
static em_engine alternate(void *arg, const em_plan_node *n) {
    return (n->id % 2) == *(const int *)arg ? EM_ENGINE_ROW : EM_ENGINE_NATIVE;
}

enum { E_NATIVE, E_BUILT_NATIVE, E_ROW, E_MIX0, E_MIX1, E_COUNT };
static const char *const E_NAMES[] = {"native", "built native", "row", "mixed (odd ids on rows)",
                                      "mixed (even ids on rows)"};

static em_status build_with(int e, const em_plan_node *node, em_op **out, em_error *err) {
    static const int zero = 0, one = 1;
    switch (e) {
    case E_NATIVE:
        return em_op_build(node, out, err);
    case E_BUILT_NATIVE:
        return em_rop_build_tree(node, all_native, NULL, out, err);
    case E_ROW:
        return em_rop_build_tree(node, all_row, NULL, out, err);
    case E_MIX0:
        return em_rop_build_tree(node, alternate, (void *)&one, out, err);
    default:
        return em_rop_build_tree(node, alternate, (void *)&zero, out, err);
    }
}

/* Runs map stage `exch_id` (an Exchange node: its child's tree) on engine
 * e and stores its output as that exchange's input. */
static void run_stage(rt *r, const em_plan *p, int exch_id, int e) {
    em_error err = {0};
    em_op *op = NULL;
    EM_ASSERT_OK(build_with(e, tops_node(p, exch_id), &op, &err), &err);
    EM_ASSERT_OK(em_op_open(op, &r->t.ctx, &err), &err);
    em_batch_list l;
    EM_ASSERT_OK(em_op_collect(op, g_pool, &l, &err), &err);
    em_op_destroy(op);
    em_batch_list_reset(&r->lists[exch_id]);
    r->lists[exch_id] = l;
}

static char **run_on(rt *r, const em_plan *p, int root_id, int e, int *n) {
    em_error err = {0};
    em_op *op = NULL;
    EM_ASSERT_OK(build_with(e, tops_node(p, root_id), &op, &err), &err);
    return tops_run(op, &r->t, n);
}

static void free_rows(char **rows, int n) {
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
}

/* Rows of every engine equal the expectation (or, with expect NULL, the
 * native engine's rows). */
static void check_all(rt *r, const em_plan *p, int root_id, const char *const *expect, int n_expect,
                      bool ordered) {
    int n_ref = 0;
    char **ref = NULL;
    int first = 0;
    if (!expect) {
        ref = run_on(r, p, root_id, E_NATIVE, &n_ref);
        first = 1;
    } else {
        ref = calloc((size_t)n_expect + 1, sizeof *ref);
        for (int i = 0; i < n_expect; i++)
            ref[i] = strdup(expect[i]);
        n_ref = n_expect;
    }
    if (!ordered)
        qsort(ref, (size_t)n_ref, sizeof *ref, tops_cmp_str);
    expect = (const char *const *)ref;
    n_expect = n_ref;
    for (int e = first; e < E_COUNT; e++) {
        int n = 0;
        char **rows = run_on(r, p, root_id, e, &n);
        if (!ordered)
            qsort(rows, (size_t)n, sizeof *rows, tops_cmp_str);
        for (int i = 0; i < n && i < n_expect; i++)
            if (strcmp(rows[i], expect[i]) != 0)
                fail_msg("%s: row %d: got '%s', expected '%s'", E_NAMES[e], i, rows[i], expect[i]);
        if (n != n_expect)
            fail_msg("%s: got %d rows, expected %d", E_NAMES[e], n, n_expect);
        free_rows(rows, n);
    }
    free_rows(ref, n_ref);
}

/* ------------------------------------------------------------------ plans */

#define SCHEMA "k:string,g:int,v:decimal(10;2),d:double"
#define N_COLS 4

#define SCAN_T(id, a, b, c, d, x)                                                                  \
    "(" #id ") Scan parquet spark_catalog.default.t\n"                                             \
    "Output [4]: [k#" #a ", g#" #b ", v#" #c ", d#" #d "]\n"                                       \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double>\n\n"                              \
    "(" #x ") Exchange\n"                                                                          \
    "Input [4]: [k#" #a ", g#" #b ", v#" #c ", d#" #d "]\n"                                        \
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=" #x "]\n\n"

#define UNARY(op)                                                                                  \
    "== Physical Plan ==\n" op " (3)\n"                                                            \
    "+- Exchange (2)\n"                                                                            \
    "   +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_T(1, 1, 2, 3, 4, 2) "(3) " op      \
    "\n"                                                                                           \
    "Input [4]: [k#1, g#2, v#3, d#4]\n"

/* k, g, v, d */
static const char *const ROWS[] = {
    "a",  "1",  "1.50",  "1.0",  /* */
    "b",  "2",  "2.00",  NULL,   /* */
    NULL, "3",  "3.25",  "3.0",  /* */
    "a",  NULL, NULL,    "5.0",  /* */
    "b",  "5",  "-1.00", "2.0",  /* */
    NULL, NULL, NULL,    NULL,   /* */
    "a",  "7",  "0.50",  "-0.0", /* */
    "c",  "2",  "9.99",  "NaN",
};
#define N_ROWS 8

/* An expectation of no rows (NULL means: the native engine's rows). */
static const char *const NONE[] = {""};

static const char *const ALL_NULL[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                       NULL, NULL, NULL, NULL};

/* Runs the unary plan at root 3 over ROWS (batches of 1..3), over no rows
 * and over all-null rows, on every engine. */
static void check_unary(const char *text, const char *const *expect, int n_expect, bool ordered) {
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    for (int per = 1; per <= 3; per++) {
        rt_set(&r, 2, SCHEMA, ROWS, N_COLS, N_ROWS, per);
        check_all(&r, p, 3, expect, n_expect, ordered);
    }
    rt_set(&r, 2, SCHEMA, ROWS, N_COLS, 0, 1);
    check_all(&r, p, 3, NULL, 0, ordered);
    rt_set(&r, 2, SCHEMA, ALL_NULL, N_COLS, 3, 2);
    check_all(&r, p, 3, NULL, 0, ordered);
    rt_free(&r);
    em_plan_destroy(p);
}

static void test_filter_project(void **state) {
    (void)state;
    static const char text[] =
        "== Physical Plan ==\n"
        "Project (4)\n"
        "+- Filter (3)\n"
        "   +- Exchange (2)\n"
        "      +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_T(1, 1, 2, 3, 4, 2)
        "(3) Filter\n"
        "Input [4]: [k#1, g#2, v#3, d#4]\n"
        "Condition : (isnotnull(g#2) AND (g#2 > 1))\n\n"
        "(4) Project\n"
        "Output [4]: [k#1, (v#3 * 2) AS w#5, g#2, concat(k#1, x) AS s#6]\n"
        "Input [4]: [k#1, g#2, v#3, d#4]\n";
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    for (int per = 1; per <= 3; per++) {
        rt_set(&r, 2, SCHEMA, ROWS, N_COLS, N_ROWS, per);
        static const char *const expect[] = {"b|4.00|2|bx", "null|6.50|3|null", "b|-2.00|5|bx",
                                             "a|1.00|7|ax", "c|19.98|2|cx"};
        check_all(&r, p, 4, expect, 5, true);
    }
    rt_free(&r);
    em_plan_destroy(p);
}

/* Partial (3) -> Exchange (4) -> final (5), each on either engine. */
static const char AGG[] =
    "== Physical Plan ==\n"
    "HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- HashAggregate (3)\n"
    "      +- Exchange (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_T(1, 1, 2, 3, 4, 2)
    "(3) HashAggregate\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Keys [1]: [k#1]\n"
    "Functions [5]: [partial_sum(v#3), partial_count(1), partial_avg(d#4), partial_max(g#2), "
    "partial_min(k#1)]\n"
    "Aggregate Attributes [7]: [sum#10, isEmpty#11, count#12, sum#13, count#14, max#15, min#40]\n"
    "Results [8]: [k#1, sum#16, isEmpty#17, count#18, sum#19, count#20, max#21, min#41]\n\n"
    "(4) Exchange\n"
    "Input [8]: [k#1, sum#16, isEmpty#17, count#18, sum#19, count#20, max#21, min#41]\n"
    "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) HashAggregate\n"
    "Input [8]: [k#1, sum#16, isEmpty#17, count#18, sum#19, count#20, max#21, min#41]\n"
    "Keys [1]: [k#1]\n"
    "Functions [5]: [sum(v#3), count(1), avg(d#4), max(g#2), min(k#1)]\n"
    "Aggregate Attributes [5]: [sum(v#3)#22, count(1)#23, avg(d#4)#24, max(g#2)#25, "
    "min(k#1)#42]\n"
    "Results [6]: [k#1, sum(v#3)#22 AS sv#26, count(1)#23 AS c#27, avg(d#4)#24 AS ad#28, "
    "max(g#2)#25 AS mg#29, min(k#1)#42 AS mk#43]\n";

static const char GLOBAL_AGG[] =
    "== Physical Plan ==\n"
    "HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- HashAggregate (3)\n"
    "      +- Exchange (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_T(1, 1, 2, 3, 4, 2)
    "(3) HashAggregate\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Keys: []\n"
    "Functions [2]: [partial_sum(v#3), partial_count(1)]\n"
    "Aggregate Attributes [3]: [sum#10, isEmpty#11, count#12]\n"
    "Results [3]: [sum#13, isEmpty#14, count#15]\n\n"
    "(4) Exchange\n"
    "Input [3]: [sum#13, isEmpty#14, count#15]\n"
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) HashAggregate\n"
    "Input [3]: [sum#13, isEmpty#14, count#15]\n"
    "Keys: []\n"
    "Functions [2]: [sum(v#3), count(1)]\n"
    "Aggregate Attributes [2]: [sum(v#3)#16, count(1)#17]\n"
    "Results [2]: [sum(v#3)#16 AS s#18, count(1)#17 AS c#19]\n";

/* The two-stage aggregate with the partial stage on engine pe and the
 * final one on every engine. */
static void check_two_stage(const char *text, const char *const *cells, int n_rows, int per,
                            const char *const *expect, int n_expect) {
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    for (int pe = 0; pe < E_COUNT; pe++) {
        rt_set(&r, 2, SCHEMA, cells, N_COLS, n_rows, per);
        run_stage(&r, p, 4, pe);
        check_all(&r, p, 5, expect, n_expect, false);
    }
    rt_free(&r);
    em_plan_destroy(p);
}

static void test_aggregate(void **state) {
    (void)state;
    /* a: 1.50 + 0.50, 3 rows, avg(1.0, 5.0, -0.0) = 2.0, max 7
     * b: 2.00 - 1.00, 2 rows, avg(2.0), max 5; c: NaN average
     * null key is a group: 3.25, 2 rows, avg(3.0), max 3 */
    static const char *const expect[] = {"a|2.00|3|2.0|7|a", "b|1.00|2|2.0|5|b",
                                         "c|9.99|1|NaN|2|c", "null|3.25|2|3.0|3|null"};
    for (int per = 1; per <= 3; per++)
        check_two_stage(AGG, ROWS, N_ROWS, per, expect, 4);
    check_two_stage(AGG, ROWS, 0, 1, NONE, 0);
    static const char *const all_null[] = {"null|null|3|null|null|null"};
    check_two_stage(AGG, ALL_NULL, 3, 2, all_null, 1);
    static const char *const global[] = {"16.24|8"};
    check_two_stage(GLOBAL_AGG, ROWS, N_ROWS, 3, global, 1);
    static const char *const global_empty[] = {"null|0"};
    check_two_stage(GLOBAL_AGG, ROWS, 0, 1, global_empty, 1);
}

/* Complete mode (final-form functions over input rows) and the other
 * aggregate node kinds. */
static void test_aggregate_complete(void **state) {
    (void)state;
    static const char *const kinds[] = {"HashAggregate", "SortAggregate", "ObjectHashAggregate"};
    for (int i = 0; i < 3; i++) {
        char text[4096];
        snprintf(text, sizeof text,
                 UNARY("%s") "Keys [1]: [k#1]\n"
                             "Functions [3]: [sum(v#3), count(1), max(g#2)]\n"
                             "Aggregate Attributes [3]: [sum(v#3)#10, count(1)#11, max(g#2)#12]\n"
                             "Results [4]: [k#1, sum(v#3)#10 AS s#13, count(1)#11 AS c#14, "
                             "max(g#2)#12 AS m#15]\n",
                 kinds[i], kinds[i]);
        static const char *const expect[] = {"a|2.00|3|7", "b|1.00|2|5", "c|9.99|1|2",
                                             "null|3.25|2|3"};
        check_unary(text, expect, 4, false);
    }
}

/* Skewed and many keys: 3000 rows over 400 keys plus one hot key. */
static void test_aggregate_skew(void **state) {
    (void)state;
    int n_rows = 3000;
    const char **cells = calloc((size_t)n_rows * N_COLS, sizeof *cells);
    char(*keys)[16] = calloc((size_t)n_rows, sizeof *keys);
    char(*gs)[16] = calloc((size_t)n_rows, sizeof *gs);
    for (int i = 0; i < n_rows; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i % 2 ? 7 : i % 400);
        snprintf(gs[i], sizeof gs[i], "%d", i % 13);
        cells[i * N_COLS + 0] = keys[i];
        cells[i * N_COLS + 1] = gs[i];
        cells[i * N_COLS + 2] = i % 5 ? "0.01" : NULL;
        cells[i * N_COLS + 3] = i % 7 ? "1.5" : "-0.0";
    }
    check_two_stage(AGG, cells, n_rows, 97, NULL, 0);
    em_plan *p = tops_parse(AGG);
    rt r;
    rt_init(&r);
    rt_set(&r, 2, SCHEMA, cells, N_COLS, n_rows, 97);
    run_stage(&r, p, 4, E_ROW);
    int n = 0;
    char **rows = run_on(&r, p, 5, E_ROW, &n);
    assert_int_equal(n, 200 + 1); /* even rows: i % 400 is even; odd rows: the hot k7 */
    free_rows(rows, n);
    rt_free(&r);
    em_plan_destroy(p);
    free(cells);
    free(keys);
    free(gs);
}

static void test_sort(void **state) {
    (void)state;
    static const char *const expect[] = {
        "c|2|9.99|NaN",  "a|null|null|5.0", "null|3|3.25|3.0", "b|5|-1.00|2.0",
        "a|1|1.50|1.0",  "a|7|0.50|-0.0",   "null|null|null|null", "b|2|2.00|null"};
    /* d descending (NaN first), nulls last; ties (d null) by k, nulls first */
    check_unary(UNARY("Sort") "Arguments: [d#4 DESC NULLS LAST, k#1 ASC NULLS FIRST], true, 0\n",
                expect, 8, true);
    static const char *const by_k[] = {
        "null|3|3.25|3.0", "null|null|null|null", "a|1|1.50|1.0", "a|null|null|5.0",
        "a|7|0.50|-0.0",   "b|2|2.00|null",       "b|5|-1.00|2.0", "c|2|9.99|NaN"};
    /* one key: ties keep input order (stable) */
    check_unary(UNARY("Sort") "Arguments: [k#1 ASC NULLS FIRST], false, 0\n", by_k, 8, true);
}

static void test_top_n(void **state) {
    (void)state;
    static const char *const expect[] = {"a|8", "b|6", "null|4"};
    check_unary(UNARY("TakeOrderedAndProject") "Arguments: 3, [g#2 DESC NULLS LAST, k#1 ASC "
                                               "NULLS FIRST], [k#1, (g#2 + 1) AS h#9]\n",
                expect, 3, true);
    static const char *const offset[] = {"b|6", "null|4", "b|3"};
    check_unary(UNARY("TakeOrderedAndProject") "Arguments: 3, [g#2 DESC NULLS LAST, k#1 ASC "
                                               "NULLS FIRST], [k#1, (g#2 + 1) AS h#9], 1\n",
                offset, 3, true);
}

static void test_limits(void **state) {
    (void)state;
    static const char *const four[] = {"a|1|1.50|1.0", "b|2|2.00|null", "null|3|3.25|3.0",
                                       "a|null|null|5.0"};
    check_unary(UNARY("CollectLimit") "Arguments: 4\n", four, 4, true);
    check_unary(UNARY("LocalLimit") "Arguments: 4\n", four, 4, true);
    static const char *const skip[] = {"b|5|-1.00|2.0", "null|null|null|null"};
    check_unary(UNARY("GlobalLimit") "Arguments: 2, 4\n", skip, 2, true);
    check_unary(UNARY("CollectLimit") "Arguments: 0\n", NONE, 0, true);
    /* OFFSET without LIMIT (Spark 3.4+): limit -1 keeps every row after the offset */
    static const char *const rest[] = {"b|5|-1.00|2.0", "null|null|null|null", "a|7|0.50|-0.0",
                                       "c|2|9.99|NaN"};
    check_unary(UNARY("GlobalLimit") "Arguments: -1, 4\n", rest, 4, true);
}

static const char UNION_EXPAND[] =
    "== Physical Plan ==\n"
    "Expand (6)\n"
    "+- Union (5)\n"
    "   :- Exchange (2)\n"
    "   :  +- Scan parquet spark_catalog.default.t (1)\n"
    "   +- Exchange (4)\n"
    "      +- Scan parquet spark_catalog.default.t (3)\n\n\n" SCAN_T(1, 1, 2, 3, 4, 2)
        SCAN_T(3, 5, 6, 7, 8, 4) "(5) Union\n\n"
    "(6) Expand\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Arguments: [[k#1, g#2, 0], [k#1, null, 1]], [k#1, g#30, spark_grouping_id#31L]\n";

static void test_union_expand(void **state) {
    (void)state;
    em_plan *p = tops_parse(UNION_EXPAND);
    rt r;
    rt_init(&r);
    rt_set(&r, 2, SCHEMA, ROWS, N_COLS, 2, 1);
    rt_set(&r, 4, SCHEMA, ROWS + 2 * N_COLS, N_COLS, 1, 2);
    static const char *const expect[] = {"a|1|0",    "a|null|1", "b|2|0",
                                         "b|null|1", "null|3|0", "null|null|1"};
    check_all(&r, p, 6, expect, 6, false);
    check_all(&r, p, 5, NULL, 0, true); /* Union alone: children in order */
    rt_set(&r, 2, SCHEMA, ROWS, N_COLS, 0, 1);
    check_all(&r, p, 6, expect + 4, 2, false);
    rt_free(&r);
    em_plan_destroy(p);
}

/* ------------------------------------------------------------------ windows */

#define SPEC(frame, lo, hi)                                                                        \
    " windowspecdefinition(k#1, g#2 ASC NULLS FIRST, specifiedwindowframe(" frame ", " lo          \
    ", " hi "))"
#define UNB "unboundedpreceding$()"
#define CUR "currentrow$()"
#define UNF "unboundedfollowing$()"

static const char *const WROWS[] = {
    "a", "1", "1.00", "0", /* */
    "b", "2", "1.50", "0", /* */
    "a", "1", "2.00", "0", /* */
    NULL, "5", "0.25", "0", /* */
    "a", "3", "4.00", "0", /* */
    "a", NULL, "8.00", "0",
};

static void check_window_order(const char *const *cells, int n_rows, const char *order,
                               const char *fns, const char *const *expect, int n,
                               bool native_too) {
    char text[8192];
    snprintf(text, sizeof text, UNARY("Window") "Arguments: [%s], [k#1], [%s]\n", fns, order);
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    for (int per = 1; per <= 3; per++) {
        rt_set(&r, 2, SCHEMA, cells, N_COLS, n_rows, per);
        if (native_too) {
            check_all(&r, p, 3, expect, n, true);
            continue;
        }
        int got = 0;
        char **rows = run_on(&r, p, 3, E_ROW, &got);
        tops_expect(rows, got, expect, n, true);
    }
    rt_free(&r);
    em_plan_destroy(p);
}

static void check_window_on(const char *const *cells, int n_rows, const char *fns,
                            const char *const *expect, int n, bool native_too) {
    check_window_order(cells, n_rows, "g#2 ASC NULLS FIRST", fns, expect, n, native_too);
}

static void check_window(const char *fns, const char *const *expect, int n, bool native_too) {
    check_window_on(WROWS, 6, fns, expect, n, native_too);
}

static void test_window(void **state) {
    (void)state;
    /* partition a: g null, 1, 1, 3 (v 8, 1, 2, 4); b: 2; null: 5 */
    static const char *const ranks[] = {
        "null|5|0.25|0.0|1|1|1|0.25|0.25|1", "a|null|8.00|0.0|1|1|1|15.00|8.00|1",
        "a|1|1.00|0.0|2|2|2|15.00|11.00|2",  "a|1|2.00|0.0|2|2|3|15.00|11.00|3",
        "a|3|4.00|0.0|4|3|4|15.00|15.00|4",  "b|2|1.50|0.0|1|1|1|1.50|1.50|1"};
    check_window("rank(g#2)" SPEC("RowFrame", UNB, CUR) " AS rk#5, "
                 "dense_rank(g#2)" SPEC("RowFrame", UNB, CUR) " AS dr#6, "
                 "row_number()" SPEC("RowFrame", UNB, CUR) " AS rn#7, "
                 "sum(v#3)" SPEC("RowFrame", UNB, UNF) " AS s#8, "
                 "sum(v#3)" SPEC("RangeFrame", UNB, CUR) " AS rs#9, "
                 "count(1)" SPEC("RowFrame", UNB, CUR) " AS c#10",
                 ranks, 6, true);
    /* offset and distribution functions, a sliding frame */
    static const char *const offsets[] = {
        "null|5|0.25|0.0|null|-1.00|1|0.0|1.0|0.25",
        "a|null|8.00|0.0|null|1.00|1|0.0|0.25|9.00",
        "a|1|1.00|0.0|8.00|2.00|1|0.3333333333333333|0.75|11.00",
        "a|1|2.00|0.0|1.00|4.00|2|0.3333333333333333|0.75|7.00",
        "a|3|4.00|0.0|2.00|-1.00|2|1.0|1.0|6.00",
        "b|2|1.50|0.0|null|-1.00|1|0.0|1.0|1.50"};
    check_window("lag(v#3, 1, null)" SPEC("RowFrame", "-1", "-1") " AS lg#5, "
                 "lead(v#3, 1, -1.00)" SPEC("RowFrame", "1", "1") " AS ld#6, "
                 "ntile(2)" SPEC("RowFrame", UNB, CUR) " AS nt#7, "
                 "percent_rank(g#2)" SPEC("RowFrame", UNB, CUR) " AS pr#8, "
                 "cume_dist()" SPEC("RangeFrame", UNB, CUR) " AS cd#9, "
                 "sum(v#3)" SPEC("RowFrame", "-1", "1") " AS sl#10",
                 offsets, 6, true);
    /* a frame from the current row's peers to the end */
    static const char *const tail[] = {
        "null|5|0.25|0.0|0.25", "a|null|8.00|0.0|15.00", "a|1|1.00|0.0|7.00",
        "a|1|2.00|0.0|7.00",    "a|3|4.00|0.0|4.00",     "b|2|1.50|0.0|1.50"};
    check_window("sum(v#3)" SPEC("RangeFrame", CUR, UNF) " AS t#5", tail, 6, true);
    /* RangeFrame value offsets: g in [g - 1, g + 1]; a null g's frame is
     * the null peers */
    static const char *const range[] = {
        "null|5|0.25|0.0|0.25", "a|null|8.00|0.0|8.00", "a|1|1.00|0.0|3.00",
        "a|1|2.00|0.0|3.00",    "a|3|4.00|0.0|4.00",    "b|2|1.50|0.0|1.50"};
    check_window("sum(v#3)" SPEC("RangeFrame", "-1", "1") " AS r#5", range, 6, true);
    /* descending: 2 PRECEDING is the larger values, g in [g, g + 2];
     * nulls last */
    static const char *const desc[] = {
        "null|5|0.25|0.0|0.25", "a|3|4.00|0.0|4.00", "a|1|1.00|0.0|7.00",
        "a|1|2.00|0.0|7.00",    "a|null|8.00|0.0|8.00", "b|2|1.50|0.0|1.50"};
    check_window_order(WROWS, 6, "g#2 DESC NULLS LAST",
                       "sum(v#3) windowspecdefinition(k#1, g#2 DESC NULLS LAST, "
                       "specifiedwindowframe(RangeFrame, -2, currentrow$())) AS r#5",
                       desc, 6, true);
    /* IGNORE NULLS and nth_value, over ROWS (null values of v) */
    static const char *const nulls[] = {
        "null|null|null|null|null|null|3.25|3.25", "null|3|3.25|3.0|null|3.25|3.25|null",
        "a|null|null|5.0|null|null|1.50|1.50",     "a|1|1.50|1.0|null|1.50|1.50|0.50",
        "a|7|0.50|-0.0|1.50|1.50|1.50|null",       "b|2|2.00|null|null|null|2.00|-1.00",
        "b|5|-1.00|2.0|2.00|-1.00|2.00|null",      "c|2|9.99|NaN|null|null|9.99|null"};
    check_window_on(ROWS, N_ROWS,
                    "lag(v#3, 1, null, true)" SPEC("RowFrame", "-1", "-1") " AS lg#5, "
                    "nth_value(v#3, 2, false)" SPEC("RowFrame", UNB, CUR) " AS nv#6, "
                    "nth_value(v#3, 1, true)" SPEC("RowFrame", UNB, UNF) " AS fv#7, "
                    "lead(v#3, 1, null, true)" SPEC("RowFrame", "1", "1") " AS ld#8",
                    nulls, 8, true);
}

static void test_window_group_limit(void **state) {
    (void)state;
    static const char *const kept[] = {"null|5|0.25|0.0", "a|null|8.00|0.0", "a|1|1.00|0.0",
                                       "a|1|2.00|0.0", "b|2|1.50|0.0"};
    em_plan *p = tops_parse(UNARY("WindowGroupLimit") "Arguments: [k#1], [g#2 ASC NULLS FIRST], "
                                                      "rank(g#2), 2, Partial\n");
    rt r;
    rt_init(&r);
    for (int per = 1; per <= 3; per++) {
        rt_set(&r, 2, SCHEMA, WROWS, N_COLS, 6, per);
        check_all(&r, p, 3, kept, 5, true);
    }
    rt_free(&r);
    em_plan_destroy(p);
}

/* ------------------------------------------------------------------ joins */

#define LSCHEMA "a:int,b:bigint,s:string"
#define RSCHEMA "x:int,y:bigint,t:string"

static void gen_side(char (*vals)[3][16], const char **cells, int n, int domain, unsigned seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned v = seed >> 8;
        snprintf(vals[i][0], 16, "%d", (int)(v % (unsigned)domain));
        snprintf(vals[i][1], 16, "%d", (int)((v >> 7) % 50));
        snprintf(vals[i][2], 16, "s%d", (int)((v >> 13) % 3));
        cells[i * 3 + 0] = (v >> 3) % 7 == 0 ? NULL : vals[i][0];
        cells[i * 3 + 1] = (v >> 5) % 9 == 0 ? NULL : vals[i][1];
        cells[i * 3 + 2] = (v >> 11) % 11 == 0 ? NULL : vals[i][2];
    }
}

static void join_text(char *buf, size_t cap, const char *op, const char *jt, const char *build,
                      const char *keys, const char *cond, bool broadcast, bool null_aware) {
    snprintf(buf, cap,
             "== Physical Plan ==\n"
             "%s %s%s%s (5)\n"
             ":- Exchange (2)\n"
             ":  +- Scan parquet spark_catalog.default.l (1)\n"
             "+- %s (4)\n"
             "   +- Scan parquet spark_catalog.default.r (3)\n\n\n"
             "(1) Scan parquet spark_catalog.default.l\n"
             "Output [3]: [a#1, b#2, s#3]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/l]\n"
             "ReadSchema: struct<a:int,b:bigint,s:string>\n\n"
             "(2) Exchange\n"
             "Input [3]: [a#1, b#2, s#3]\n"
             "Arguments: hashpartitioning(a#1, 5), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"
             "(3) Scan parquet spark_catalog.default.r\n"
             "Output [3]: [x#5, y#6, t#7]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/r]\n"
             "ReadSchema: struct<x:int,y:bigint,t:string>\n\n"
             "(4) %s\n"
             "Input [3]: [x#5, y#6, t#7]\n"
             "Arguments: %s\n\n"
             "(5) %s\n"
             "%s"
             "Join type: %s\n"
             "Join condition: %s\n",
             op, jt, build[0] ? " " : "", build, broadcast ? "BroadcastExchange" : "Exchange",
             broadcast ? "BroadcastExchange" : "Exchange",
             !broadcast     ? "hashpartitioning(x#5, 5), ENSURE_REQUIREMENTS, [plan_id=2]"
             : null_aware ? "HashedRelationBroadcastMode(List(input[0, int, true]),true), "
                            "[plan_id=2]"
                          : "HashedRelationBroadcastMode(List(input[0, int, true]),false), "
                            "[plan_id=2]",
             op, keys, jt, cond ? cond : "None");
}

static void test_joins(void **state) {
    (void)state;
    enum { NL = 23, NR = 17 };
    char lv[NL][3][16], rv[NR][3][16];
    const char *lc[NL * 3], *rc[NR * 3];
    gen_side(lv, lc, NL, 6, 7);
    gen_side(rv, rc, NR, 6, 11);
    static const char *const types[] = {"Inner",    "LeftOuter", "RightOuter",
                                        "FullOuter", "LeftSemi", "LeftAnti",
                                        "ExistenceJoin(exists#20)"};
    struct {
        const char *op, *build;
        bool keys, broadcast;
    } ops[] = {
        {"BroadcastHashJoin", "BuildRight", true, true},
        {"BroadcastHashJoin", "BuildLeft", true, true},
        {"ShuffledHashJoin", "BuildLeft", true, false},
        {"ShuffledHashJoin", "BuildRight", true, false},
        {"SortMergeJoin", "", true, false},
        {"BroadcastNestedLoopJoin", "BuildRight", false, true},
        {"BroadcastNestedLoopJoin", "BuildLeft", false, true},
    };
    static const char *const conds[] = {NULL, "(b#2 < y#6)"};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int t = 0; t < 7; t++)
            for (int c = 0; c < 2; c++) {
                if (!ops[o].keys && !conds[c])
                    continue; /* a cross product: below */
                char text[8192];
                const char *keys = ops[o].keys ? "Left keys [2]: [a#1, s#3]\n"
                                                 "Right keys [2]: [x#5, t#7]\n"
                                               : "";
                join_text(text, sizeof text, ops[o].op, types[t], ops[o].build, keys, conds[c],
                          ops[o].broadcast, false);
                em_plan *p = tops_parse(text);
                rt r;
                rt_init(&r);
                for (int per = 1; per <= 3; per += 2) {
                    rt_set(&r, 2, LSCHEMA, lc, 3, NL, per);
                    rt_set(&r, 4, RSCHEMA, rc, 3, NR, 4 - per);
                    check_all(&r, p, 5, NULL, 0, false);
                }
                /* either side empty */
                rt_set(&r, 2, LSCHEMA, lc, 3, 0, 1);
                check_all(&r, p, 5, NULL, 0, false);
                rt_set(&r, 2, LSCHEMA, lc, 3, NL, 3);
                rt_set(&r, 4, RSCHEMA, rc, 3, 0, 1);
                check_all(&r, p, 5, NULL, 0, false);
                rt_free(&r);
                em_plan_destroy(p);
            }
}

static void test_join_expected(void **state) {
    (void)state;
    static const char *const l[] = {"1", "10", "p", "2", "20", "q", NULL, "30", "r", "1", "40", "s"};
    static const char *const r_[] = {"1", "15", "u", "1", "5", "v", "3", "0", "w", NULL, "0", "z"};
    struct {
        const char *jt, *cond;
        const char *const *expect;
        int n;
    } cases[] = {
        {"Inner", "(b#2 < y#6)", (const char *const[]){"1|10|p|1|15|u"}, 1},
        {"LeftOuter", "(b#2 < y#6)",
         (const char *const[]){"1|10|p|1|15|u", "2|20|q|null|null|null", "null|30|r|null|null|null",
                               "1|40|s|null|null|null"},
         4},
        {"RightOuter", NULL,
         (const char *const[]){"1|10|p|1|15|u", "1|40|s|1|15|u", "1|10|p|1|5|v", "1|40|s|1|5|v",
                               "null|null|null|3|0|w", "null|null|null|null|0|z"},
         6},
        {"FullOuter", "(b#2 > y#6)",
         (const char *const[]){"1|40|s|1|15|u", "1|10|p|1|5|v", "1|40|s|1|5|v",
                               "2|20|q|null|null|null", "null|30|r|null|null|null",
                               "null|null|null|3|0|w", "null|null|null|null|0|z"},
         7},
        {"LeftSemi", "(b#2 > y#6)", (const char *const[]){"1|10|p", "1|40|s"}, 2},
        {"LeftAnti", NULL, (const char *const[]){"2|20|q", "null|30|r"}, 2},
        {"ExistenceJoin(exists#20)", "(b#2 < y#6)",
         (const char *const[]){"1|10|p|true", "2|20|q|false", "null|30|r|false", "1|40|s|false"},
         4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[8192];
        join_text(text, sizeof text, "ShuffledHashJoin", cases[i].jt, "BuildRight",
                  "Left keys [1]: [a#1]\nRight keys [1]: [x#5]\n", cases[i].cond, false, false);
        em_plan *p = tops_parse(text);
        rt r;
        rt_init(&r);
        rt_set(&r, 2, LSCHEMA, l, 3, 4, 3);
        rt_set(&r, 4, RSCHEMA, r_, 3, 4, 1);
        check_all(&r, p, 5, cases[i].expect, cases[i].n, false);
        rt_free(&r);
        em_plan_destroy(p);
    }
}

/* NOT IN: all left rows for an empty right side, none when a right key is
 * null, else the left rows whose key is not null and unmatched. */
static void test_null_aware_anti(void **state) {
    (void)state;
    static const char *const l[] = {"1", "10", "p", "2", "20", "q", NULL, "30", "r"};
    static const char *const r1[] = {"1", "0", "u"};
    static const char *const r2[] = {"1", "0", "u", NULL, "0", "v"};
    char text[8192];
    join_text(text, sizeof text, "BroadcastHashJoin", "LeftAnti", "BuildRight",
              "Left keys [1]: [a#1]\nRight keys [1]: [x#5]\n", NULL, true, true);
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    rt_set(&r, 2, LSCHEMA, l, 3, 3, 2);
    rt_set(&r, 4, RSCHEMA, r1, 3, 0, 1);
    static const char *const all[] = {"1|10|p", "2|20|q", "null|30|r"};
    check_all(&r, p, 5, all, 3, false);
    rt_set(&r, 4, RSCHEMA, r1, 3, 1, 1);
    static const char *const some[] = {"2|20|q"};
    check_all(&r, p, 5, some, 1, false);
    rt_set(&r, 4, RSCHEMA, r2, 3, 2, 1);
    check_all(&r, p, 5, NONE, 0, false);
    rt_free(&r);
    em_plan_destroy(p);
}

static void test_cartesian(void **state) {
    (void)state;
    char text[8192];
    join_text(text, sizeof text, "CartesianProduct", "Inner", "", "", "(b#2 <= y#6)", false,
              false);
    em_plan *p = tops_parse(text);
    static const char *const l[] = {"1", "10", "p", "2", "20", "q"};
    static const char *const r_[] = {"3", "15", "u", "4", "25", "v"};
    rt r;
    rt_init(&r);
    rt_set(&r, 2, LSCHEMA, l, 3, 2, 1);
    rt_set(&r, 4, RSCHEMA, r_, 3, 2, 2);
    static const char *const expect[] = {"1|10|p|3|15|u", "1|10|p|4|25|v", "2|20|q|4|25|v"};
    check_all(&r, p, 5, expect, 3, false);
    rt_free(&r);
    em_plan_destroy(p);
}

/* ------------------------------------------------------------------ sources */

static void test_scan_and_local_table(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("ops_row_scan");
    char file[512];
    snprintf(file, sizeof file, "%s/t.parquet", dir);
    em_batch *b = tops_batch(SCHEMA, ROWS, N_ROWS);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.row_group_rows = 3;
    em_pq_writer *w;
    em_error err = {0};
    EM_ASSERT_OK(em_pq_writer_open(file, &b->schema, &o, &w, &err), &err);
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_batch_destroy(b);
    static const char text[] = "== Physical Plan ==\n"
                               "Filter (2)\n"
                               "+- Scan parquet spark_catalog.default.t (1)\n\n\n"
                               "(1) Scan parquet spark_catalog.default.t\n"
                               "Output [3]: [k#1, d#4, g#2]\n"
                               "Batched: true\n"
                               "Location [not included in comparison]/{warehouse_dir}/t]\n"
                               "ReadSchema: struct<k:string,g:int,d:double>\n\n"
                               "(2) Filter\n"
                               "Input [3]: [k#1, d#4, g#2]\n"
                               "Condition : (g#2 >= 3)\n";
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    r.t.splits[0] =
        (em_scan_split){.path = file, .first_row_group = 0, .end_row_group = -1};
    r.t.n_splits = 1;
    static const char *const expect[] = {"null|3.0|3", "b|2.0|5", "a|-0.0|7"};
    check_all(&r, p, 2, expect, 3, true);
    /* a scan on rows takes no native slot (the native one does) */
    int n = 0;
    r.enters = 0;
    char **rows = run_on(&r, p, 2, E_ROW, &n);
    free_rows(rows, n);
    assert_int_equal(r.enters, 0);
    rows = run_on(&r, p, 2, E_NATIVE, &n);
    free_rows(rows, n);
    assert_int_equal(r.enters, 1);
    rt_free(&r);
    em_plan_destroy(p);

    static const char local[] = "== Physical Plan ==\n"
                                "LocalTableScan (1)\n\n\n"
                                "(1) LocalTableScan\n"
                                "Output [1]: [x#1]\n"
                                "Arguments: <empty>, [x#1]\n";
    p = tops_parse(local);
    rt_init(&r);
    check_all(&r, p, 1, NONE, 0, true);
    rt_free(&r);
    em_plan_destroy(p);
}

/* ------------------------------------------------------------------ transitions */

typedef struct seen {
    int n;
    char names[32][32];
    int ids[32];
    int64_t rows[32];
    int64_t peak[32];
    int64_t time[32], self[32];
} seen;

static void collect(void *ctx, const em_plan_node *node, const char *name, const em_op_metrics *m) {
    seen *s = ctx;
    if (s->n < 32) {
        snprintf(s->names[s->n], sizeof s->names[s->n], "%s", name);
        s->ids[s->n] = node ? node->id : -1;
        s->rows[s->n] = m->rows_out;
        s->peak[s->n] = m->peak_bytes;
        s->time[s->n] = m->time_ns;
        s->self[s->n] = m->self_ns;
        s->n++;
    }
}

static int find_op(const seen *s, const char *name, int id) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0 && s->ids[i] == id)
            return i;
    return -1;
}

/* Project (4, native) over Filter (3, rows) over the native read of
 * Exchange (2): a ColumnarToRow below the Filter releases the slot once
 * the read is exhausted, a RowToColumnar above it takes the slot before its
 * first batch; metrics reach every operator, the row ones included, after
 * the tree is closed. */
static em_engine odd_on_rows(void *arg, const em_plan_node *n) {
    (void)arg;
    return n->id == 3 ? EM_ENGINE_ROW : EM_ENGINE_NATIVE;
}

static void test_transitions(void **state) {
    (void)state;
    static const char text[] = "== Physical Plan ==\n"
                               "Project (4)\n"
                               "+- Filter (3)\n"
                               "   +- Exchange (2)\n"
                               "      +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_T(
                                   1, 1, 2, 3, 4, 2) "(3) Filter\n"
                                                     "Input [4]: [k#1, g#2, v#3, d#4]\n"
                                                     "Condition : (g#2 > 2)\n\n"
                                                     "(4) Project\n"
                                                     "Output [1]: [k#1]\n"
                                                     "Input [4]: [k#1, g#2, v#3, d#4]\n";
    em_plan *p = tops_parse(text);
    rt r;
    rt_init(&r);
    rt_set(&r, 2, SCHEMA, ROWS, N_COLS, N_ROWS, 1);
    em_error err = {0};
    em_op *op = NULL;
    EM_ASSERT_OK(em_rop_build_tree(tops_node(p, 4), odd_on_rows, NULL, &op, &err), &err);
    EM_ASSERT_OK(em_op_open(op, &r.t.ctx, &err), &err);
    em_batch *b = NULL;
    EM_ASSERT_OK(em_op_next(op, &b, &err), &err);
    /* the first batch: all 3 rows (g > 2: 3, 5, 7), packed into one batch
     * from 8 one-row input batches */
    assert_int_equal(em_batch_rows(b), EM_BATCH_CAP < 3 ? EM_BATCH_CAP : 3);
    assert_int_equal(r.enters, 1);
    while (em_op_next(op, &b, &err) == EM_OK)
        ;
    assert_int_equal(r.enters, 1);
    assert_int_equal(r.leaves, 1);
    em_op_close(op);
    seen s = {0};
    em_op_visit(op, collect, &s);
    int f = find_op(&s, "Filter", 3), c2r = find_op(&s, "ColumnarToRow", -1);
    int r2c = find_op(&s, "RowToColumnar", -1), pr = find_op(&s, "Project", 4);
    assert_true(f >= 0 && c2r >= 0 && r2c >= 0 && pr >= 0);
    assert_int_equal(s.rows[f], 3);
    assert_int_equal(s.rows[c2r], N_ROWS);
    assert_int_equal(s.rows[pr], 3);
    assert_true(find_op(&s, "CoalesceBatches", -1) >= 0);
    /* each operator's own time is its share of the root's: never above its
     * inclusive time, and together no less than the root's (the first visit
     * is the root) */
    int64_t own = 0;
    for (int i = 0; i < s.n; i++) {
        assert_true(s.self[i] >= 0 && s.self[i] <= s.time[i]);
        own += s.self[i];
    }
    assert_true(s.time[0] > 0 && own >= s.time[0]);
    em_op_destroy(op);

    /* a stage entirely on rows: its root adapter takes no slot */
    r.enters = r.leaves = 0;
    EM_ASSERT_OK(em_rop_build_tree(tops_node(p, 4), all_row, NULL, &op, &err), &err);
    int n = 0;
    char **rows = tops_run(op, &r.t, &n);
    assert_int_equal(n, 3);
    free_rows(rows, n);
    assert_int_equal(r.enters, 0);
    rt_free(&r);
    em_plan_destroy(p);
}

/* CoalesceBatches merges one-row batches into batches of EM_BATCH_CAP. */
static void test_coalesce(void **state) {
    (void)state;
    em_plan *p = tops_parse(UNARY("CollectLimit") "Arguments: 100\n");
    rt r;
    rt_init(&r);
    rt_set(&r, 2, SCHEMA, ROWS, N_COLS, N_ROWS, 1);
    em_error err = {0};
    em_op *src = NULL, *co = NULL;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &src, &err), &err);
    EM_ASSERT_OK(em_op_coalesce_batches_create(src, &co, &err), &err);
    EM_ASSERT_OK(em_op_open(co, &r.t.ctx, &err), &err);
    int64_t total = 0, batches = 0;
    em_batch *b = NULL;
    while (em_op_next(co, &b, &err) == EM_OK) {
        int64_t want = N_ROWS - total < EM_BATCH_CAP ? N_ROWS - total : EM_BATCH_CAP;
        assert_int_equal(em_batch_rows(b), want);
        total += em_batch_rows(b);
        batches++;
    }
    assert_int_equal(total, N_ROWS);
    assert_int_equal(batches, (N_ROWS + EM_BATCH_CAP - 1) / EM_BATCH_CAP);
    em_op_destroy(co);
    rt_free(&r);
    em_plan_destroy(p);
}

/* Nodes without a native operator run on rows: Spark's CoalesceExec passes
 * its child's rows (the native builder refuses it). */
static void test_row_only_nodes(void **state) {
    (void)state;
    em_plan *p = tops_parse(UNARY("Coalesce") "Arguments: 1\n");
    rt r;
    rt_init(&r);
    rt_set(&r, 2, SCHEMA, ROWS, N_COLS, 3, 2);
    em_error err = {0};
    em_op *op = NULL;
    assert_int_equal(em_op_build(tops_node(p, 3), &op, &err), EM_ERR_UNSUPPORTED);
    for (int e = E_ROW; e < E_COUNT; e++) {
        if (e == E_MIX1)
            continue; /* puts the Coalesce (3) on the native side */
        int n = 0;
        char **rows = run_on(&r, p, 3, e, &n);
        static const char *const expect[] = {"a|1|1.50|1.0", "b|2|2.00|null", "null|3|3.25|3.0"};
        tops_expect(rows, n, expect, 3, true);
    }
    rt_free(&r);
    em_plan_destroy(p);
}

static void test_unsupported(void **state) {
    (void)state;
    static const char text[] = "== Physical Plan ==\n"
                               "Generate (2)\n"
                               "+- LocalTableScan (1)\n\n\n"
                               "(1) LocalTableScan\n"
                               "Output [1]: [x#1]\n"
                               "Arguments: <empty>, [x#1]\n\n"
                               "(2) Generate\n"
                               "Input [1]: [x#1]\n"
                               "Arguments: explode(x#1), false, [y#2]\n";
    em_plan *p = tops_parse(text);
    em_error err = {0};
    em_op *op = NULL;
    assert_int_equal(em_rop_build_tree(tops_node(p, 2), all_row, NULL, &op, &err),
                     EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "Generate (2)"));
    assert_null(op);
    /* a node given the wrong number of inputs is refused, naming it */
    em_plan *q = tops_parse(UNARY("Filter") "Condition : (g#2 > 1)\n");
    em_row_op *rop = NULL;
    assert_int_equal(em_row_op_create(tops_node(q, 3), NULL, 0, &rop, &err), EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "Filter (3)"));
    assert_null(rop);
    em_row_op_destroy(NULL);
    em_plan_destroy(q);
    em_plan_destroy(p);
}

/* Row operators charge what they hold to the row pool: over its budget a
 * blocking operator fails the task naming itself, and reports its peak. */
static void test_row_budget(void **state) {
    (void)state;
    int n_rows = 3000;
    const char **cells = calloc((size_t)n_rows * N_COLS, sizeof *cells);
    for (int i = 0; i < n_rows * N_COLS; i++)
        cells[i] = ROWS[i % (N_ROWS * N_COLS)];
    em_plan *p = tops_parse(UNARY("Sort") "Arguments: [k#1 ASC NULLS FIRST], false, 0\n");
    rt r;
    rt_init(&r);
    rt_set(&r, 2, SCHEMA, cells, N_COLS, n_rows, 3);
    em_pool *small = em_pool_create("rows", NULL, 64 << 10);
    r.t.ctx.row_pool = small;
    em_error err = {0};
    em_op *op = NULL;
    EM_ASSERT_OK(em_rop_build_tree(tops_node(p, 3), all_row, NULL, &op, &err), &err);
    EM_ASSERT_OK(em_op_open(op, &r.t.ctx, &err), &err);
    em_batch *b = NULL;
    assert_int_equal(em_op_next(op, &b, &err), EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, "Sort (3)"));
    em_op_destroy(op);
    assert_int_equal(em_pool_used(small), 0);
    /* with room: the peak the Sort reports is what it held */
    em_pool_set_budget(small, -1);
    EM_ASSERT_OK(em_rop_build_tree(tops_node(p, 3), all_row, NULL, &op, &err), &err);
    EM_ASSERT_OK(em_op_open(op, &r.t.ctx, &err), &err);
    while (em_op_next(op, &b, &err) == EM_OK)
        ;
    em_op_close(op);
    assert_int_equal(em_pool_used(small), 0);
    seen s = {0};
    em_op_visit(op, collect, &s);
    int at = find_op(&s, "Sort", 3);
    assert_true(at >= 0);
    assert_int_equal(s.rows[at], n_rows);
    assert_true(s.peak[at] > 64 << 10 && s.peak[at] <= em_pool_peak(small));
    em_op_destroy(op);
    assert_true(em_pool_peak(small) > 64 << 10);
    em_pool_destroy(small);
    rt_free(&r);
    em_plan_destroy(p);
    free(cells);
}

/* ------------------------------------------------------------------ TPC-H */

typedef struct tpch_build {
    rop_decide_fn decide;
    void *arg;
    em_exec_plan *xp; /* set: em_exec_build under the overrides' decisions */
    bool all_rows;    /* every node is expected on rows */
} tpch_build;

static int row_roots;   /* trees built entirely on rows */
static int mixed_trees; /* trees of the overrides' builds that hold row operators */

static void count_row_joints(void *ctx, const em_plan_node *node, const char *name,
                             const em_op_metrics *m) {
    (void)node;
    (void)m;
    if (strcmp(name, "RowToColumnar") == 0 || strcmp(name, "RowStageOutput") == 0)
        (*(int *)ctx)++;
}

static em_status build_fn(void *ctx, const em_plan_node *node, em_op **out, em_error *err) {
    const tpch_build *b = ctx;
    em_status s = b->xp ? em_exec_build(b->xp, node, out, err)
                        : em_rop_build_tree(node, b->decide, b->arg, out, err);
    if (s == EM_OK && b->all_rows) {
        /* proof that the row engine ran it: its root is the row stage's adapter */
        assert_string_equal((*out)->vtab->name, "RowStageOutput");
        row_roots++;
    } else if (s == EM_OK && b->xp) {
        int joints = 0;
        em_op_visit(*out, count_row_joints, &joints);
        mixed_trees += joints > 0;
    }
    return s;
}

/* Runs the plan; the result rows as sorted text lines (NULL on failure,
 * with the error in err). */
static char **tpch_run(const em_plan *plan, const char *wh, const tpch_build *b, int *n,
                       em_error *err) {
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = wh;
    o.threads = 2;
    if (b) {
        o.build = build_fn;
        o.build_ctx = (void *)b;
    }
    em_query *q = NULL;
    em_status s = em_query_create(plan, &o, &q, err);
    if (s == EM_OK)
        s = em_query_run(q, err);
    char **rows = NULL;
    *n = 0;
    if (s == EM_OK) {
        const em_batch_list *l = em_query_result(q);
        rows = calloc((size_t)l->n_rows + 1, sizeof *rows);
        em_strbuf sb = {0}, row = {0};
        for (int64_t bi = 0; bi < l->n_batches; bi++) {
            const em_batch *bt = l->batches[bi];
            for (int64_t k = 0; k < em_batch_rows(bt); k++) {
                int64_t r = bt->sel ? bt->sel[k] : k;
                em_strbuf_clear(&row);
                for (int c = 0; c < bt->n_cols; c++) {
                    bool is_null = false;
                    em_strbuf_clear(&sb);
                    EM_ASSERT_OK(em_value_text(&bt->cols[c], r, &sb, &is_null, err), err);
                    EM_ASSERT_OK(em_strbuf_appends(&row, c ? "|" : "", err), err);
                    EM_ASSERT_OK(em_strbuf_appends(&row, is_null ? "null" : em_strbuf_cstr(&sb),
                                                   err),
                                 err);
                }
                rows[(*n)++] = strdup(em_strbuf_cstr(&row));
            }
        }
        em_strbuf_reset(&sb);
        em_strbuf_reset(&row);
        qsort(rows, (size_t)*n, sizeof *rows, tops_cmp_str);
    }
    em_query_destroy(q);
    return rows;
}

static void test_tpch(void **state) {
    (void)state;
    const char *shared = em_test_shared_dir();
    assert_non_null(shared);
    static char wh[1024];
    snprintf(wh, sizeof wh, "%s", em_test_tmpdir("ops_row_tpch"));
    em_tpch_options to;
    em_tpch_options_init(&to);
    to.sf = 0.01;
    to.schema = EM_TPCH_SCHEMA_SPARK;
    to.out_dir = wh;
    to.threads = 2;
    to.force = true;
    em_error err = {0};
    EM_ASSERT_OK(em_tpch_generate(&to, &err), &err);
    static const int zero = 0, one = 1;
    tpch_build engines[] = {{.decide = all_row, .all_rows = true},
                            {.decide = alternate, .arg = (void *)&one},
                            {.decide = alternate, .arg = (void *)&zero},
                            {.xp = NULL}};
    /* through the overrides, in turn: Ember disabled (all rows), and
     * settings that put some operator classes on rows */
    static const char *const confs[][4] = {
        {"spark.ember.sql.enabled=false"},
        {"spark.ember.sql.exec.HashAggregateExec=false", "spark.ember.sql.exec.FilterExec=false"},
        {"spark.ember.sql.exec.ProjectExec=false", "spark.ember.sql.exec.SortExec=false",
         "spark.ember.sql.exec.BroadcastHashJoinExec=false"},
        {"spark.ember.sql.exec.SortMergeJoinExec=false",
         "spark.ember.sql.exec.TakeOrderedAndProjectExec=false"},
    };
    int ran = 0, tried = 0;
    /* Builds with tiny batches (CI's 3-row build) pay per batch on the
     * native side: they run every seventh query, the others all 22. */
    int step = EM_BATCH_CAP < 64 ? 7 : 1;
    for (int qn = 1; qn <= 22; qn += step) {
        tried++;
        char path[1400];
        snprintf(path, sizeof path, "%s/spark-plans/tpch/spark-3.5/q%d.txt", shared, qn);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static char text[1 << 20];
        size_t len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        em_retype_ctx *rc = NULL;
        EM_ASSERT_OK(em_retype_ctx_create(wh, false, &rc, &err), &err);
        em_plan_parse_options po = {.shim = em_shim_for_version("3.5", NULL),
                                    .column_type = em_retype_column_type,
                                    .column_type_ctx = rc};
        em_plan *plan = NULL;
        EM_ASSERT_OK(em_plan_parse(text, len, &po, &plan, &err), &err);
        int n_ref = 0;
        em_error ref_err = {0};
        char **ref = tpch_run(plan, wh, NULL, &n_ref, &ref_err);
        em_conf *conf = NULL;
        EM_ASSERT_OK(em_conf_create(&conf, &err), &err);
        const char *const *kv = confs[qn % 4];
        for (int i = 0; i < 4 && kv[i]; i++)
            EM_ASSERT_OK(em_conf_set_kv(conf, kv[i], &err), &err);
        EM_ASSERT_OK(em_overrides_apply(plan, conf, &engines[3].xp, &err), &err);
        engines[3].all_rows = qn % 4 == 0;
        em_conf_destroy(conf);
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
            if (e > 0 && e < 3 && (int)e != 1 + qn % 2)
                continue; /* one of the two mixed builds per query, in turn */
            int n = 0;
            em_error e_err = {0};
            char **rows = tpch_run(plan, wh, &engines[e], &n, &e_err);
            if (!ref && !rows)
                continue; /* neither engine runs it (the same node fails on both) */
            if (!ref || !rows)
                fail_msg("q%d engine %zu: native %s, this one %s", qn, e,
                         ref ? "ran" : ref_err.msg, rows ? "ran" : e_err.msg);
            for (int i = 0; i < n && i < n_ref; i++)
                if (strcmp(rows[i], ref[i]) != 0)
                    fail_msg("q%d engine %zu: row %d '%s', native '%s'", qn, e, i, rows[i],
                             ref[i]);
            if (n != n_ref)
                fail_msg("q%d engine %zu: %d rows, native %d", qn, e, n, n_ref);
            free_rows(rows, n);
        }
        ran += ref != NULL;
        free_rows(ref, n_ref);
        em_exec_plan_destroy(engines[3].xp);
        engines[3].xp = NULL;
        em_plan_destroy(plan);
        em_retype_ctx_destroy(rc);
    }
    /* every plan Spark did not fold away runs on both engines */
    assert_true(ran >= tried - 1);
    assert_true(row_roots > 4 * tried);
    assert_true(mixed_trees > tried);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filter_project),
        cmocka_unit_test(test_aggregate),
        cmocka_unit_test(test_aggregate_complete),
        cmocka_unit_test(test_aggregate_skew),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_top_n),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_union_expand),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_window_group_limit),
        cmocka_unit_test(test_joins),
        cmocka_unit_test(test_join_expected),
        cmocka_unit_test(test_null_aware_anti),
        cmocka_unit_test(test_cartesian),
        cmocka_unit_test(test_scan_and_local_table),
        cmocka_unit_test(test_transitions),
        cmocka_unit_test(test_coalesce),
        cmocka_unit_test(test_row_only_nodes),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_row_budget),
        cmocka_unit_test(test_tpch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
