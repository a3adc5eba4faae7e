/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scan parquet over files written with Ember's writer: columns bound by
 * name (exact, then ignoring case), a column missing from the file read as
 * nulls, PushedFilters skipping whole row groups by statistics but never
 * dropping rows of a kept group, type mismatches and missing files as
 * errors naming the column and file.
 */
#include "test_ops_common.h"

#include "ember/parquet.h"

static em_pool *g_pool;
static char g_file[1024];

/* 12 rows: id 0..11, name n00..n11, 3 row groups of 4 rows. */
static int setup(void **state) {
    (void)state;
    g_pool = em_pool_create("test", NULL, -1);
    const char *dir = em_test_tmpdir("ops_scan");
    snprintf(g_file, sizeof g_file, "%s/t.parquet", dir);
    const char *cells[24];
    char names[12][8], ids[12][8];
    for (int i = 0; i < 12; i++) {
        snprintf(ids[i], sizeof ids[i], "%d", i);
        snprintf(names[i], sizeof names[i], "n%02d", i);
        cells[i * 2] = ids[i];
        cells[i * 2 + 1] = names[i];
    }
    em_batch *b = tops_batch("id:int,name:string", cells, 12);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.row_group_rows = 4;
    em_pq_writer *w;
    em_error err = {0};
    EM_ASSERT_OK(em_pq_writer_open(g_file, &b->schema, &o, &w, &err), &err);
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_batch_destroy(b);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    em_pool_destroy(g_pool);
    return 0;
}

static em_plan *scan_plan(const char *read_schema_types, const char *pushed) {
    char text[4096];
    snprintf(text, sizeof text,
             "== Physical Plan ==\n"
             "Scan parquet spark_catalog.default.t (1)\n\n\n"
             "(1) Scan parquet spark_catalog.default.t\n"
             "Output [3]: [ID#1, name#2, extra#3]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/t]\n"
             "%s%s%s"
             "ReadSchema: struct<%s>\n",
             pushed ? "PushedFilters: [" : "", pushed ? pushed : "", pushed ? "]\n" : "",
             read_schema_types);
    return tops_parse(text);
}

static char **run_scan(em_plan *p, int *n, em_status *status, em_error *err) {
    tops_ctx t;
    tops_init(&t, g_pool);
    t.splits[0].path = g_file;
    t.splits[0].first_row_group = 0;
    t.splits[0].end_row_group = -1;
    t.n_splits = 1;
    em_op *op;
    EM_ASSERT_OK(em_op_scan_create(tops_node(p, 1), &op, err), err);
    if (status) { /* expect a failure */
        *status = em_op_open(op, &t.ctx, err);
        em_batch *b;
        if (*status == EM_OK)
            *status = em_op_next(op, &b, err);
        em_op_destroy(op);
        return NULL;
    }
    return tops_run(op, &t, n);
}

static void test_scan_by_name(void **state) {
    (void)state;
    em_plan *p = scan_plan("ID:int,name:string,extra:bigint", NULL);
    int n;
    em_error err = {0};
    char **rows = run_scan(p, &n, NULL, &err);
    assert_int_equal(n, 12);
    /* ID binds to the file's id ignoring case; extra is not in the file */
    assert_string_equal(rows[0], "0|n00|null");
    assert_string_equal(rows[11], "11|n11|null");
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
    em_plan_destroy(p);
}

static void expect_ids(const char *pushed, int first, int count) {
    em_plan *p = scan_plan("ID:int,name:string,extra:bigint", pushed);
    int n;
    em_error err = {0};
    char **rows = run_scan(p, &n, NULL, &err);
    if (n != count)
        fail_msg("%s: %d rows, expected %d", pushed, n, count);
    for (int i = 0; i < n; i++) {
        int id = atoi(rows[i]);
        if (id != first + i)
            fail_msg("%s: row %d has id %d, expected %d", pushed, i, id, first + i);
        free(rows[i]);
    }
    free(rows);
    em_plan_destroy(p);
}

static void test_scan_pruning(void **state) {
    (void)state;
    /* groups: ids [0,3], [4,7], [8,11]; kept groups are read whole */
    expect_ids("IsNotNull(ID), GreaterThan(ID,5)", 4, 8);
    expect_ids("GreaterThan(ID,7)", 8, 4);
    expect_ids("GreaterThanOrEqual(ID,7)", 4, 8);
    expect_ids("LessThan(ID,4)", 0, 4);
    expect_ids("LessThanOrEqual(ID,4)", 0, 8);
    expect_ids("EqualTo(ID,6)", 4, 4);
    expect_ids("EqualTo(ID,60)", 0, 0);
    expect_ids("In(ID, [1,5])", 0, 8);
    expect_ids("In(ID, [20,5,30])", 4, 4);
    expect_ids("In(ID, [1,2])", 0, 4);
    expect_ids("StringStartsWith(name,n1)", 8, 4);
    expect_ids("Or(EqualTo(ID,1),EqualTo(ID,6))", 0, 8);
    expect_ids("And(GreaterThan(ID,3),LessThan(ID,8))", 4, 4);
    /* Not and unknown filters never prune */
    expect_ids("Not(EqualTo(ID,1))", 0, 12);
    expect_ids("IsNull(ID)", 0, 0);
    /* a filter on a column the file lacks cannot prune */
    expect_ids("EqualTo(extra,1)", 0, 12);
}

static void test_scan_type_mismatch(void **state) {
    (void)state;
    em_plan *p = scan_plan("ID:bigint,name:string,extra:bigint", NULL);
    em_error err = {0};
    em_status s;
    run_scan(p, NULL, &s, &err);
    assert_int_equal(s, EM_ERR_TYPE);
    assert_non_null(strstr(err.msg, "ID"));
    assert_non_null(strstr(err.msg, g_file));
    assert_non_null(strstr(err.msg, "bigint"));
    assert_non_null(strstr(err.msg, "int,"));
    assert_non_null(strstr(err.msg, "Scan parquet (1)"));
    em_plan_destroy(p);
}

static void test_scan_missing_file(void **state) {
    (void)state;
    em_plan *p = scan_plan("ID:int,name:string,extra:bigint", NULL);
    tops_ctx t;
    tops_init(&t, g_pool);
    t.splits[0].path = "/nonexistent/ember/x.parquet";
    t.splits[0].end_row_group = -1;
    t.n_splits = 1;
    em_error err = {0};
    em_op *op;
    EM_ASSERT_OK(em_op_scan_create(tops_node(p, 1), &op, &err), &err);
    EM_ASSERT_OK(em_op_open(op, &t.ctx, &err), &err);
    em_batch *b;
    assert_int_equal(em_op_next(op, &b, &err), EM_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/ember/x.parquet"));
    em_op_destroy(op);
    em_plan_destroy(p);
}

/* Two splits: row groups [1, 2) of the file, then the whole file. */
static void test_scan_splits(void **state) {
    (void)state;
    em_plan *p = scan_plan("ID:int,name:string,extra:bigint", NULL);
    tops_ctx t;
    tops_init(&t, g_pool);
    t.splits[0] =
        (em_scan_split){.path = g_file, .first_row_group = 1, .end_row_group = 2};
    t.splits[1] =
        (em_scan_split){.path = g_file, .first_row_group = 0, .end_row_group = -1};
    t.n_splits = 2;
    em_error err = {0};
    em_op *op;
    EM_ASSERT_OK(em_op_scan_create(tops_node(p, 1), &op, &err), &err);
    int n;
    char **rows = tops_run(op, &t, &n);
    assert_int_equal(n, 16);
    assert_int_equal(atoi(rows[0]), 4);
    assert_int_equal(atoi(rows[3]), 7);
    assert_int_equal(atoi(rows[4]), 0);
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
    em_plan_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_by_name),       cmocka_unit_test(test_scan_pruning),
        cmocka_unit_test(test_scan_type_mismatch), cmocka_unit_test(test_scan_missing_file),
        cmocka_unit_test(test_scan_splits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
