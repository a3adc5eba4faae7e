/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shuffle spill: a hash shuffle, and a range shuffle under a global sort,
 * whose map output does not fit in the query's budget (the unlimited run's
 * peak is several times the budget) completes with the very rows, in the
 * very order, of the unlimited run, reporting spill bytes on the shuffle
 * stage; its spill folder is empty afterwards, also when the query fails
 * after spilling. A broadcast over the budget fails with
 * EM_ERR_OOM_BUDGET naming the BroadcastExchange.
 *
 * Real operators over real Parquet files (em_op_build, the native builder).
 */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ember/parquet.h"
#include "ember/runtime.h"

#define FILES 6
#define ROWS 20000

/* Table t: FILES files of ROWS rows (a int = file * ROWS + i, s a 40-byte string). */
static const char *make_table(void) {
    static char wh[4096];
    snprintf(wh, sizeof wh, "%s", em_test_tmpdir("runtime_spill_wh"));
    char path[4200];
    snprintf(path, sizeof path, "%s/t", wh);
    mkdir(path, 0755);
    em_error err = {0};
    em_schema sc;
    EM_ASSERT_OK(em_schema_init(&sc, 2, &err), &err);
    EM_ASSERT_OK(em_schema_set(&sc, 0, "a", em_type_make(EM_TYPE_INT), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&sc, 1, "s", em_type_make(EM_TYPE_STRING), true, &err), &err);
    for (int k = 0; k < FILES; k++) {
        em_batch *b;
        EM_ASSERT_OK(em_batch_create(&sc, ROWS, NULL, &b, &err), &err);
        for (int i = 0; i < ROWS; i++) {
            int32_t v = k * ROWS + i;
            char str[64];
            snprintf(str, sizeof str, "row %08d of the spill test table....", v);
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &v, &err), &err);
            EM_ASSERT_OK(em_column_append_bytes(&b->cols[1], str, (int32_t)strlen(str), &err),
                         &err);
        }
        b->n_rows = ROWS;
        snprintf(path, sizeof path, "%s/t/part-%d.parquet", wh, k);
        em_pq_write_options wo;
        em_pq_write_options_init(&wo);
        wo.row_group_rows = 4096;
        em_pq_writer *w;
        EM_ASSERT_OK(em_pq_writer_open(path, &sc, &wo, &w, &err), &err);
        EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
        EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
        em_batch_destroy(b);
    }
    em_schema_reset(&sc);
    return wh;
}

#define SCAN_T(ID)                                                                                 \
    "(" #ID ") Scan parquet spark_catalog.default.t\n"                                             \
    "Output [2]: [a#1, s#2]\n"                                                                     \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<a:int,s:string>\n\n"

/* Every row of t through a hash shuffle of 16 partitions, below ROOT. */
#define SHUFFLE_PLAN(ROOT, ROOT_TEXT)                                                              \
    "== Physical Plan ==\n" ROOT " (4)\n"                                                           \
    "+- Exchange (3)\n"                                                                            \
    "   +- * ColumnarToRow (2)\n"                                                                  \
    "      +- Scan parquet spark_catalog.default.t (1)\n"                                          \
    "\n\n" SCAN_T(1) "(2) ColumnarToRow [codegen id : 1]\n"                                        \
    "Input [2]: [a#1, s#2]\n\n"                                                                    \
    "(3) Exchange\n"                                                                               \
    "Input [2]: [a#1, s#2]\n"                                                                      \
    "Arguments: hashpartitioning(a#1, 16), ENSURE_REQUIREMENTS, [plan_id=1]\n\n" ROOT_TEXT

/* The reduce side keeps a few rows. */
static const char *shuffle_plan = SHUFFLE_PLAN("* Filter", "(4) Filter [codegen id : 2]\n"
                                                           "Input [2]: [a#1, s#2]\n"
                                                           "Condition : ((a#1 % 97) = 5)\n\n");

/* The reduce side is a node the native engine does not have: the query
 * fails in the reduce stage, after the map stage spilled. */
static const char *failing_plan = SHUFFLE_PLAN("NoSuchOperator", "(4) NoSuchOperator\n"
                                                                 "Input [2]: [a#1, s#2]\n\n");

static const char *broadcast_plan =
    "== Physical Plan ==\n"
    "* Project (7)\n"
    "+- * BroadcastHashJoin Inner BuildRight (6)\n"
    "   :- * ColumnarToRow (2)\n"
    "   :  +- Scan parquet spark_catalog.default.t (1)\n"
    "   +- BroadcastExchange (5)\n"
    "      +- * ColumnarToRow (4)\n"
    "         +- Scan parquet spark_catalog.default.t (3)\n"
    "\n\n" SCAN_T(1) "(2) ColumnarToRow [codegen id : 2]\n"
    "Input [2]: [a#1, s#2]\n\n"
    "(3) Scan parquet spark_catalog.default.t\n"
    "Output [2]: [a#3, s#4]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/t]\n"
    "ReadSchema: struct<a:int,s:string>\n\n"
    "(4) ColumnarToRow [codegen id : 1]\n"
    "Input [2]: [a#3, s#4]\n\n"
    "(5) BroadcastExchange\n"
    "Input [2]: [a#3, s#4]\n"
    "Arguments: HashedRelationBroadcastMode(List(cast(input[0, int, false] as bigint)),false), "
    "[plan_id=1]\n\n"
    "(6) BroadcastHashJoin [codegen id : 2]\n"
    "Left keys [1]: [a#1]\n"
    "Right keys [1]: [a#3]\n"
    "Join type: Inner\n"
    "Join condition: None\n\n"
    "(7) Project [codegen id : 2]\n"
    "Output [1]: [a#1]\n"
    "Input [4]: [a#1, s#2, a#3, s#4]\n\n";

/* Every row of t ordered by s descending: a range shuffle of 64 partitions
 * on the string key, each partition sorted; the result keeps a only (the
 * result is held in the query's memory). */
static const char *range_plan =
    "== Physical Plan ==\n"
    "* Project (5)\n"
    "+- * Sort (4)\n"
    "   +- Exchange (3)\n"
    "      +- * ColumnarToRow (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n"
    "\n\n" SCAN_T(1) "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [2]: [a#1, s#2]\n\n"
    "(3) Exchange\n"
    "Input [2]: [a#1, s#2]\n"
    "Arguments: rangepartitioning(s#2 DESC NULLS LAST, 64), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"
    "(4) Sort [codegen id : 2]\n"
    "Input [2]: [a#1, s#2]\n"
    "Arguments: [s#2 DESC NULLS LAST], true, 0\n\n"
    "(5) Project [codegen id : 2]\n"
    "Output [1]: [a#1]\n"
    "Input [2]: [a#1, s#2]\n\n";

typedef struct run_out {
    em_status s;
    em_error err;
    int n;
    int32_t a[FILES * ROWS];
    char s0[64]; /* the first row's string */
    int64_t peak, spill_bytes;
    int spill_files;
} run_out;

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int64_t split_bytes = 1; /* max_partition_bytes of run(): 1 is a task per row group */

static void run(const char *text, const char *wh, int64_t budget, const char *spill, run_out *o) {
    em_plan *p = NULL;
    em_error perr = {0};
    EM_ASSERT_OK(em_plan_parse(text, strlen(text), NULL, &p, &perr), &perr);
    em_runtime_options ro;
    em_runtime_options_init(&ro);
    ro.warehouse_dir = wh;
    ro.threads = 2;
    ro.memory_budget = budget;
    ro.spill_dir = spill;
    ro.max_partition_bytes = split_bytes;
    memset(o, 0, sizeof *o);
    em_query *q = NULL;
    EM_ASSERT_OK(em_query_create(p, &ro, &q, &o->err), &o->err);
    o->s = em_query_run(q, &o->err);
    if (o->s == EM_OK) {
        const em_batch_list *l = em_query_result(q);
        for (int64_t b = 0; b < l->n_batches; b++) {
            const em_batch *bt = l->batches[b];
            for (int64_t k = 0; k < em_batch_rows(bt); k++) {
                int64_t r = bt->sel ? bt->sel[k] : k;
                assert_true(o->n < FILES * ROWS);
                o->a[o->n] = ((const int32_t *)bt->cols[0].values->data)[r];
                if (o->n == 0 && bt->n_cols > 1) {
                    const int32_t *off = em_column_offsets(&bt->cols[1]);
                    snprintf(o->s0, sizeof o->s0, "%.*s", off[r + 1] - off[r],
                             (const char *)bt->cols[1].data->data + off[r]);
                }
                o->n++;
            }
        }
    }
    o->peak = em_query_peak_bytes(q);
    for (int i = 0; i < em_query_n_stages(q); i++) {
        em_stage_info si;
        em_query_stage_info(q, i, &si);
        o->spill_bytes += si.spill_bytes;
        o->spill_files += si.spill_files;
    }
    em_query_destroy(q);
    em_plan_destroy(p);
}

static const int64_t BUDGET = 3 << 20;

/* Runs plan unlimited (holding far more than the budget at once, no spill)
 * then within BUDGET: the second run spills and returns the very rows, in
 * the very order, of the first, and leaves no file behind. */
static void run_both(const char *plan, const char *wh, const char *spill, run_out *full,
                     run_out *tight) {
    run(plan, wh, -1, spill, full);
    EM_ASSERT_OK(full->s, &full->err);
    assert_int_equal(full->spill_files, 0);
    assert_true(full->peak > 2 * BUDGET);

    run(plan, wh, BUDGET, spill, tight);
    EM_ASSERT_OK(tight->s, &tight->err);
    assert_true(tight->spill_files > 0);
    assert_true(tight->spill_bytes > 0);
    assert_true(tight->peak <= BUDGET);
    assert_int_equal(tight->n, full->n);
    assert_memory_equal(tight->a, full->a, sizeof full->a[0] * (size_t)full->n);
    assert_string_equal(tight->s0, full->s0);
    assert_int_equal(count_files(spill), 0); /* the query's folder is gone */
}

static void test_shuffle_spills(void **state) {
    (void)state;
    const char *wh = make_table();
    char spill[4096];
    snprintf(spill, sizeof spill, "%s", em_test_tmpdir("runtime_spill_dir"));
    static run_out full, tight;
    run_both(shuffle_plan, wh, spill, &full, &tight);
    int want = 0;
    for (int v = 0; v < FILES * ROWS; v++)
        want += v % 97 == 5;
    assert_int_equal(full.n, want);

    /* a failure after spilling removes the files too */
    run(failing_plan, wh, BUDGET, spill, &tight);
    assert_int_equal(tight.s, EM_ERR_UNSUPPORTED);
    assert_true(tight.spill_files > 0);
    assert_int_equal(count_files(spill), 0);
}

/* A range shuffle over the budget spills its map tasks' rows (with their
 * keys), deals them after the bounds, reading the files back a batch at a
 * time, and spills the dealt partitions: the same globally sorted rows as
 * the unlimited run. */
static void test_range_shuffle_spills(void **state) {
    (void)state;
    const char *wh = make_table();
    char spill[4096];
    snprintf(spill, sizeof spill, "%s", em_test_tmpdir("runtime_range_spill_dir"));
    static run_out full, tight;
    run_both(range_plan, wh, spill, &full, &tight);
    assert_int_equal(full.n, FILES * ROWS);
    for (int i = 0; i < full.n; i++)
        assert_int_equal(full.a[i], FILES * ROWS - 1 - i);
}

/* The inner join of t with itself on a: each task's stream (a row group of
 * 4096 rows) is under 1/8 of the broadcast, so the join indexes the stream
 * and streams the broadcast; with a task per file (20000 rows) it does not,
 * and the rows it read ahead are replayed. Same rows either way. */
static void test_broadcast_join_sides(void **state) {
    (void)state;
    const char *wh = make_table();
    static run_out o;
    for (int pass = 0; pass < 2; pass++) {
        split_bytes = pass == 0 ? 1 : 0;
        run(broadcast_plan, wh, -1, NULL, &o);
        EM_ASSERT_OK(o.s, &o.err);
        assert_int_equal(o.n, FILES * ROWS);
        static bool seen[FILES * ROWS];
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < o.n; i++) {
            assert_true(o.a[i] >= 0 && o.a[i] < FILES * ROWS);
            assert_false(seen[o.a[i]]);
            seen[o.a[i]] = true;
        }
    }
    split_bytes = 1;
}

static void test_broadcast_over_budget(void **state) {
    (void)state;
    const char *wh = make_table();
    static run_out o;
    run(broadcast_plan, wh, 1 << 20, NULL, &o);
    assert_int_equal(o.s, EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(o.err.msg, "BroadcastExchange (5)"));
    assert_non_null(strstr(o.err.msg, "does not fit in the query's memory budget"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shuffle_spills),
        cmocka_unit_test(test_range_shuffle_spills),
        cmocka_unit_test(test_broadcast_join_sides),
        cmocka_unit_test(test_broadcast_over_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
