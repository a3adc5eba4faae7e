/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HashAggregate over a pool budget far below what its groups need: the
 * output equals the unbounded run's in every mode (partial, whose flushed
 * buffers an unbounded final aggregate merges; final over buffers;
 * Complete over rows; the grouping-only aggregates and count(DISTINCT) of
 * Spark's distinct plans), with decimal sums and averages, double
 * averages, min/max of strings and counts; the grouped modes that cannot
 * emit early write spill files, which are gone afterwards. A budget too
 * small for one batch's groups fails with EM_ERR_OOM_BUDGET naming the
 * operator; an aggregate abandoned between partitions leaves no files; a
 * global aggregate (one group) needs no spill. A ShuffledHashJoin whose
 * build side is over the budget (it does not spill) fails cleanly naming
 * the join.
 *
 * Doubles are multiples of 0.25, so sums are exact in any order and the
 * spilled and in-memory averages agree to the bit.
 */
#include "test_ops_common.h"

#include <dirent.h>

#define SCHEMA "k:string,g:int,v:decimal(10;2),d:double,s:string"
#define N_COLS 5
/* The 3-row batch build runs the same shapes over a third of the rows:
 * there the cost per batch dominates. */
#if EM_BATCH_CAP < 64
#define N_ROWS 8000
#define N_KEYS 4000
#else
#define N_ROWS 24000
#define N_KEYS 12000
#endif

#define SRC                                                                                        \
    "(1) Scan parquet spark_catalog.default.t\n"                                                   \
    "Output [5]: [k#1, g#2, v#3, d#4, s#5]\n"                                                      \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double,s:string>\n\n"                     \
    "(2) Exchange\n"                                                                               \
    "Input [5]: [k#1, g#2, v#3, d#4, s#5]\n"                                                       \
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=1]\n\n"

#define BUFS "k#1, sum#20, isEmpty#21, count#22, sum#23, count#24, min#25, max#26"

/* partial (3) -> exchange (4) -> final (5), grouped by k */
static const char AGG[] =
    "== Physical Plan ==\n"
    "HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- HashAggregate (3)\n"
    "      +- Exchange (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [5]: [k#1, g#2, v#3, d#4, s#5]\n"
    "Keys [1]: [k#1]\n"
    "Functions [5]: [partial_sum(v#3), partial_count(1), partial_avg(d#4), partial_min(s#5), "
    "partial_max(s#5)]\n"
    "Aggregate Attributes [7]: [sum#10, isEmpty#11, count#12, sum#13, count#14, min#15, max#16]\n"
    "Results [8]: [" BUFS "]\n\n"
    "(4) Exchange\n"
    "Input [8]: [" BUFS "]\n"
    "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) HashAggregate [codegen id : 2]\n"
    "Input [8]: [" BUFS "]\n"
    "Keys [1]: [k#1]\n"
    "Functions [5]: [sum(v#3), count(1), avg(d#4), min(s#5), max(s#5)]\n"
    "Aggregate Attributes [5]: [sum(v#3)#30, count(1)#31, avg(d#4)#32, min(s#5)#33, "
    "max(s#5)#34]\n"
    "Results [6]: [k#1, sum(v#3)#30 AS sv#40, count(1)#31 AS c#41, avg(d#4)#32 AS ad#42, "
    "min(s#5)#33 AS mn#43, max(s#5)#34 AS mx#44]\n";

/* Complete mode over rows, two keys (g has nulls), decimal avg */
static const char COMPLETE[] =
    "== Physical Plan ==\n"
    "HashAggregate (3)\n"
    "+- Exchange (2)\n"
    "   +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC "(3) HashAggregate\n"
    "Input [5]: [k#1, g#2, v#3, d#4, s#5]\n"
    "Keys [2]: [k#1, g#2]\n"
    "Functions [5]: [sum(v#3), avg(v#3), count(1), min(s#5), max(d#4)]\n"
    "Aggregate Attributes [5]: [sum(v#3)#10, avg(v#3)#11, count(1)#12, min(s#5)#13, "
    "max(d#4)#14]\n"
    "Results [7]: [k#1, g#2, sum(v#3)#10 AS sv#15, avg(v#3)#11 AS av#16, count(1)#12 AS c#17, "
    "min(s#5)#13 AS mn#18, max(d#4)#14 AS mx#19]\n";

/* count(DISTINCT g) by k as Spark plans it: two grouping-only aggregates
 * by (k, g), then partial and final counts by k */
static const char DISTINCT[] =
    "== Physical Plan ==\n"
    "HashAggregate (8)\n"
    "+- Exchange (7)\n"
    "   +- HashAggregate (6)\n"
    "      +- HashAggregate (5)\n"
    "         +- Exchange (4)\n"
    "            +- HashAggregate (3)\n"
    "               +- Exchange (2)\n"
    "                  +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [5]: [k#1, g#2, v#3, d#4, s#5]\n"
    "Keys [2]: [k#1, g#2]\n"
    "Functions: []\n"
    "Aggregate Attributes: []\n"
    "Results [2]: [k#1, g#2]\n\n"
    "(4) Exchange\n"
    "Input [2]: [k#1, g#2]\n"
    "Arguments: hashpartitioning(k#1, g#2, 5), ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(5) HashAggregate [codegen id : 2]\n"
    "Input [2]: [k#1, g#2]\n"
    "Keys [2]: [k#1, g#2]\n"
    "Functions: []\n"
    "Aggregate Attributes: []\n"
    "Results [2]: [k#1, g#2]\n\n"
    "(6) HashAggregate [codegen id : 2]\n"
    "Input [2]: [k#1, g#2]\n"
    "Keys [1]: [k#1]\n"
    "Functions [1]: [partial_count(distinct g#2)]\n"
    "Aggregate Attributes [1]: [count(g#2)#10]\n"
    "Results [2]: [k#1, count#11]\n\n"
    "(7) Exchange\n"
    "Input [2]: [k#1, count#11]\n"
    "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=3]\n\n"
    "(8) HashAggregate [codegen id : 3]\n"
    "Input [2]: [k#1, count#11]\n"
    "Keys [1]: [k#1]\n"
    "Functions [1]: [count(distinct g#2)]\n"
    "Aggregate Attributes [1]: [count(g#2)#10]\n"
    "Results [2]: [k#1, count(g#2)#10 AS n#12]\n";

/* one group: sum and avg of v, count */
static const char GLOBAL[] =
    "== Physical Plan ==\n"
    "HashAggregate (3)\n"
    "+- Exchange (2)\n"
    "   +- Scan parquet spark_catalog.default.t (1)\n\n\n" SRC "(3) HashAggregate\n"
    "Input [5]: [k#1, g#2, v#3, d#4, s#5]\n"
    "Keys: []\n"
    "Functions [3]: [sum(v#3), avg(v#3), count(1)]\n"
    "Aggregate Attributes [3]: [sum(v#3)#10, avg(v#3)#11, count(1)#12]\n"
    "Results [3]: [sum(v#3)#10 AS s#13, avg(v#3)#11 AS a#14, count(1)#12 AS c#15]\n";

/* For inputs of 100-row batches: small enough that every grouped
 * aggregate here flushes or spills many times, and that a first-level spill
 * partition of Complete's (k, g) groups (about N_ROWS / 16 of them) is past
 * a quarter of it, so partitions are split again. */
#define SMALL_BUDGET (512 * 1024)
/* The final aggregate reads the partial one's output in batches of up to
 * EM_BATCH_CAP new groups, which need about a megabyte of state. */
#define FINAL_BUDGET (2 * 1024 * 1024)

static em_pool *g_pool;
static const char **g_cells;
static char (*g_text)[4][24];
static char g_dir[1024];

static int count_files(void) {
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int setup(void **state) {
    (void)state;
    g_pool = em_pool_create("test", NULL, -1);
    snprintf(g_dir, sizeof g_dir, "%s", em_test_tmpdir("ops_spill"));
    setenv("TMPDIR", g_dir, 1);
    g_cells = calloc((size_t)N_ROWS * N_COLS, sizeof *g_cells);
    g_text = calloc(N_ROWS, sizeof *g_text);
    for (int i = 0; i < N_ROWS; i++) {
        /* keys scattered over the input, each on 4 rows */
        int key = (int)(((int64_t)i * 7919) % N_KEYS);
        snprintf(g_text[i][0], sizeof g_text[i][0], "key%d", key);
        snprintf(g_text[i][1], sizeof g_text[i][1], "%d", i % 5);
        snprintf(g_text[i][2], sizeof g_text[i][2], "%d.%02d", (i * 31) % 1000 - 500, i % 100);
        snprintf(g_text[i][3], sizeof g_text[i][3], "%d.%s", i % 97,
                 (const char *[]){"0", "25", "5", "75"}[i % 4]);
        const char **row = g_cells + (size_t)i * N_COLS;
        row[0] = g_text[i][0];
        row[1] = i % 7 == 3 ? NULL : g_text[i][1];
        row[2] = i % 11 == 5 ? NULL : g_text[i][2];
        row[3] = i % 13 == 2 ? NULL : g_text[i][3];
        /* strings of varied length, some null */
        static const char *const words[] = {"pear", "apple", "fig", "banana", "kiwi", "plum"};
        row[4] = i % 17 == 1 ? NULL : words[(i * 13) % 6];
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unsetenv("TMPDIR");
    free(g_cells);
    free(g_text);
    em_pool_destroy(g_pool);
    return 0;
}

/* One stage: aggregates ids[0..n) stacked over the Exchange `src`. */
typedef struct stage {
    int src;
    int ids[2];
    int n;
} stage;

/* Builds a stage's operators; returns the top one, *first the lowest. */
static em_op *stage_build(const em_plan *p, const stage *sg, em_op **first) {
    em_error err = {0};
    em_op *op;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, sg->src), &op, &err), &err);
    for (int i = 0; i < sg->n; i++) {
        EM_ASSERT_OK(em_op_hash_agg_create(tops_node(p, sg->ids[i]), op, &op, &err), &err);
        if (i == 0 && first)
            *first = op;
    }
    return op;
}

/* Runs a stage over `input` with a pool of `budget` (-1: unbounded) and
 * returns its output (copied, unaccounted); *spill gets the spill bytes of
 * its aggregates. The pool and the spill folder are left empty. */
static em_batch_list run_stage(const em_plan *p, const stage *sg, const em_batch_list *input,
                               int64_t budget, int64_t *spill) {
    em_pool *pool = em_pool_create("task", NULL, budget);
    tops_ctx t;
    tops_init(&t, pool);
    t.input = *input;
    em_op *low = NULL, *top = stage_build(p, sg, &low);
    em_error err = {0};
    EM_ASSERT_OK(em_op_open(top, &t.ctx, &err), &err);
    em_batch_list out;
    EM_ASSERT_OK(em_op_collect(top, NULL, &out, &err), &err);
    *spill = top->metrics.spill_bytes + (low != top ? low->metrics.spill_bytes : 0);
    em_op_destroy(top);
    assert_int_equal(em_pool_used(pool), 0);
    assert_int_equal(count_files(), 0);
    em_pool_destroy(pool);
    return out;
}

/* Runs the stages in turn, each over the previous one's output. */
static em_batch_list run_stages(const em_plan *p, const stage *sg, int n, const em_batch_list *in,
                                int64_t budget, int64_t *spill) {
    em_batch_list cur = run_stage(p, &sg[0], in, budget, spill);
    for (int i = 1; i < n; i++) {
        int64_t more;
        em_batch_list next = run_stage(p, &sg[i], &cur, budget, &more);
        *spill += more;
        em_batch_list_reset(&cur);
        cur = next;
    }
    return cur;
}

/* The rows of a batch list as sorted "a|b|c" lines; frees the list. */
static char **render(em_batch_list *list, int *n_out) {
    em_error err = {0};
    char **rows = calloc((size_t)list->n_rows + 1, sizeof *rows);
    int n = 0;
    em_strbuf line = {0}, cell = {0};
    for (int64_t i = 0; i < list->n_batches; i++) {
        const em_batch *b = list->batches[i];
        for (int64_t k = 0; k < em_batch_rows(b); k++) {
            em_strbuf_clear(&line);
            for (int c = 0; c < b->n_cols; c++) {
                bool null = false;
                em_strbuf_clear(&cell);
                EM_ASSERT_OK(em_value_text(&b->cols[c], b->sel ? b->sel[k] : k, &cell, &null, &err),
                             &err);
                EM_ASSERT_OK(em_strbuf_appends(&line, c ? "|" : "", &err), &err);
                EM_ASSERT_OK(em_strbuf_appends(&line, null ? "null" : em_strbuf_cstr(&cell), &err),
                             &err);
            }
            assert_true(n < list->n_rows);
            rows[n++] = strdup(em_strbuf_cstr(&line));
        }
    }
    em_strbuf_reset(&line);
    em_strbuf_reset(&cell);
    em_batch_list_reset(list);
    qsort(rows, (size_t)n, sizeof *rows, tops_cmp_str);
    *n_out = n;
    return rows;
}

static em_batch_list input_rows(int per) {
    tops_ctx t;
    tops_init(&t, NULL);
    tops_set_input(&t, SCHEMA, g_cells, N_COLS, N_ROWS, per);
    return t.input;
}

/* got (freed) has the rows of want. */
static void expect_rows(em_batch_list *got, char **want, int n_want) {
    int n;
    char **rows = render(got, &n);
    tops_expect(rows, n, (const char *const *)want, n_want, true);
}

static void free_rows(char **rows, int n) {
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
}

/* The stages' output under SMALL_BUDGET equals their unbounded output;
 * the constrained run spilled, or not when expect_spill is false. */
static void check_same(const char *text, const stage *sg, int n, bool expect_spill) {
    em_plan *p = tops_parse(text);
    em_batch_list in = input_rows(100);
    int64_t spill_big, spill_small;
    em_batch_list big = run_stages(p, sg, n, &in, -1, &spill_big);
    em_batch_list small = run_stages(p, sg, n, &in, SMALL_BUDGET, &spill_small);
    assert_int_equal(spill_big, 0);
    if (expect_spill)
        assert_true(spill_small > 0);
    else
        assert_int_equal(spill_small, 0);
    int n_big;
    char **want = render(&big, &n_big);
    assert_true(n_big > 0);
    expect_rows(&small, want, n_big);
    free_rows(want, n_big);
    em_batch_list_reset(&in);
    em_plan_destroy(p);
}

static const stage PARTIAL = {2, {3}, 1}, FINAL = {4, {5}, 1}, SINGLE = {2, {3}, 1};

static void test_partial_final(void **state) {
    (void)state;
    /* the partial aggregate flushes, the final one spills */
    check_same(AGG, (const stage[]){PARTIAL, FINAL}, 2, true);
}

static void test_complete(void **state) {
    (void)state;
    check_same(COMPLETE, &SINGLE, 1, true);
}

static void test_distinct(void **state) {
    (void)state;
    check_same(DISTINCT, (const stage[]){{2, {3}, 1}, {4, {5, 6}, 2}, {7, {8}, 1}}, 3, true);
}

static void test_global(void **state) {
    (void)state;
    check_same(GLOBAL, &SINGLE, 1, false);
}

/* The final aggregate alone over buffers, and the partial one alone whose
 * repeated keys an unbounded final aggregate merges. */
static void test_modes_apart(void **state) {
    (void)state;
    em_plan *p = tops_parse(AGG);
    em_batch_list in = input_rows(100);
    int64_t spill;
    em_batch_list bufs = run_stage(p, &PARTIAL, &in, -1, &spill);
    assert_int_equal(bufs.n_rows, N_KEYS);
    em_batch_list fin_big = run_stage(p, &FINAL, &bufs, -1, &spill);
    em_batch_list fin_small = run_stage(p, &FINAL, &bufs, FINAL_BUDGET, &spill);
    assert_true(spill > 0);
    /* partial under the budget: keys repeat, nothing is written */
    em_batch_list flushed = run_stage(p, &PARTIAL, &in, SMALL_BUDGET, &spill);
    assert_int_equal(spill, 0);
    assert_true(flushed.n_rows > N_KEYS);
    em_batch_list fin_flushed = run_stage(p, &FINAL, &flushed, -1, &spill);
    int n_big;
    char **want = render(&fin_big, &n_big);
    assert_int_equal(n_big, N_KEYS);
    expect_rows(&fin_small, want, n_big);
    expect_rows(&fin_flushed, want, n_big);
    free_rows(want, n_big);
    em_batch_list_reset(&bufs);
    em_batch_list_reset(&flushed);
    em_batch_list_reset(&in);
    em_plan_destroy(p);
}

/* Opens the final aggregate (5) over the partial buffers with a pool of
 * `budget`; *pool gets the pool. */
static em_op *open_final(em_plan *p, tops_ctx *t, em_batch_list *bufs, int64_t budget,
                         em_pool **pool) {
    *pool = em_pool_create("task", NULL, budget);
    tops_init(t, *pool);
    t->input = *bufs;
    em_op *op = stage_build(p, &FINAL, NULL);
    em_error err = {0};
    EM_ASSERT_OK(em_op_open(op, &t->ctx, &err), &err);
    return op;
}

/* Too small a budget for the groups of one batch (the first batch's
 * states alone need more): EM_ERR_OOM_BUDGET naming the aggregate, when it
 * opens or when it runs, and nothing left charged or on disk. */
static void test_too_small(void **state) {
    (void)state;
    em_plan *p = tops_parse(AGG);
    em_batch_list in = input_rows(100);
    int64_t spill;
    em_batch_list bufs = run_stage(p, &PARTIAL, &in, -1, &spill);
    for (int64_t budget = 1024; budget <= 4096; budget *= 2) {
        em_pool *pool = em_pool_create("task", NULL, budget);
        tops_ctx t;
        tops_init(&t, pool);
        t.input = bufs;
        em_op *op = stage_build(p, &FINAL, NULL);
        em_error err = {0};
        em_status s = em_op_open(op, &t.ctx, &err);
        /* the largest budget holds the empty table: the failure is a batch's */
        if (budget == 4096)
            EM_ASSERT_OK(s, &err);
        em_batch *b = NULL;
        while (s == EM_OK)
            s = em_op_next(op, &b, &err);
        assert_int_equal(s, EM_ERR_OOM_BUDGET);
        if (!strstr(err.msg, "HashAggregate (5): "))
            fail_msg("budget %lld: %s", (long long)budget, err.msg);
        em_op_destroy(op);
        assert_int_equal(em_pool_used(pool), 0);
        assert_int_equal(count_files(), 0);
        em_pool_destroy(pool);
    }
    em_batch_list_reset(&bufs);
    em_batch_list_reset(&in);
    em_plan_destroy(p);
}

/* Closed after its first output, with partitions still on disk: they are
 * removed. */
static void test_abandoned(void **state) {
    (void)state;
    em_plan *p = tops_parse(AGG);
    em_batch_list in = input_rows(100);
    int64_t spill;
    em_batch_list bufs = run_stage(p, &PARTIAL, &in, -1, &spill);
    tops_ctx t;
    em_pool *pool;
    em_op *op = open_final(p, &t, &bufs, FINAL_BUDGET, &pool);
    em_error err = {0};
    em_batch *b = NULL;
    EM_ASSERT_OK(em_op_next(op, &b, &err), &err);
    assert_true(op->metrics.spill_bytes > 0);
    /* spilled, yet no file has a name: each was unlinked when created, so a
     * process killed here leaves nothing behind */
    assert_int_equal(count_files(), 0);
    em_op_destroy(op);
    assert_int_equal(count_files(), 0);
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
    em_batch_list_reset(&bufs);
    em_batch_list_reset(&in);
    em_plan_destroy(p);
}

/* A self-join of t on k whose build side is all of t */
static const char JOIN[] = "== Physical Plan ==\n"
                           "ShuffledHashJoin Inner BuildRight (5)\n"
                           ":- Exchange (2)\n"
                           ":  +- Scan parquet spark_catalog.default.t (1)\n"
                           "+- Exchange (4)\n"
                           "   +- Scan parquet spark_catalog.default.u (3)\n\n\n" SRC
                           "(3) Scan parquet spark_catalog.default.u\n"
                           "Output [5]: [k#11, g#12, v#13, d#14, s#15]\n"
                           "Batched: true\n"
                           "Location [not included in comparison]/{warehouse_dir}/u]\n"
                           "ReadSchema: "
                           "struct<k:string,g:int,v:decimal(10,2),d:double,s:string>\n\n"
                           "(4) Exchange\n"
                           "Input [5]: [k#11, g#12, v#13, d#14, s#15]\n"
                           "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
                           "(5) ShuffledHashJoin\n"
                           "Left keys [1]: [k#1]\n"
                           "Right keys [1]: [k#11]\n"
                           "Join type: Inner\n"
                           "Join condition: None\n";

/* Runs the join over the rows (both sides read them) with a pool of
 * `budget`; returns the status and the rows it produced. */
static em_status run_join(const em_plan *p, const em_batch_list *in, int64_t budget,
                          int64_t *rows, em_error *err) {
    em_pool *pool = em_pool_create("task", NULL, budget);
    tops_ctx t;
    tops_init(&t, pool);
    t.input = *in;
    em_op *l, *r, *j;
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 2), &l, err), err);
    EM_ASSERT_OK(em_op_shuffle_read_create(tops_node(p, 4), &r, err), err);
    EM_ASSERT_OK(em_op_hash_join_create(tops_node(p, 5), l, r, &j, err), err);
    em_status s = em_op_open(j, &t.ctx, err);
    em_batch *b = NULL;
    *rows = 0;
    while (s == EM_OK && (s = em_op_next(j, &b, err)) == EM_OK)
        *rows += em_batch_rows(b);
    em_op_destroy(j);
    assert_int_equal(em_pool_used(pool), 0);
    assert_int_equal(count_files(), 0);
    em_pool_destroy(pool);
    return s;
}

/* A hash join does not spill its build side: over the budget it fails the
 * task with EM_ERR_OOM_BUDGET naming the join, and releases everything. */
static void test_join_build_over_budget(void **state) {
    (void)state;
    em_plan *p = tops_parse(JOIN);
    em_batch_list in = input_rows(100);
    em_error err = {0};
    int64_t rows;
    /* unbounded: every key is on N_ROWS / N_KEYS rows, each joins them all */
    assert_int_equal(run_join(p, &in, -1, &rows, &err), EM_DONE);
    assert_int_equal(rows, (int64_t)N_KEYS * (N_ROWS / N_KEYS) * (N_ROWS / N_KEYS));
    em_status s = run_join(p, &in, SMALL_BUDGET / 4, &rows, &err);
    assert_int_equal(s, EM_ERR_OOM_BUDGET);
    if (!strstr(err.msg, "ShuffledHashJoin (5)"))
        fail_msg("%s", err.msg);
    em_batch_list_reset(&in);
    em_plan_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_final), cmocka_unit_test(test_complete),
        cmocka_unit_test(test_distinct),      cmocka_unit_test(test_global),
        cmocka_unit_test(test_modes_apart),   cmocka_unit_test(test_too_small),
        cmocka_unit_test(test_abandoned),     cmocka_unit_test(test_join_build_over_budget),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
