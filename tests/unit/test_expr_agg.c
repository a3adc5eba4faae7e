/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Aggregates: partial update into per-group flat state, the buffer columns a
 * partial aggregate emits (Spark's layouts: sum/isEmpty, sum/count, ...),
 * merge of partial buffers from several "partitions" and the final values,
 * with overflow in both modes. Aggregate expressions are parsed from a tiny
 * plan's HashAggregate Functions list so that they carry the parser's
 * types, then compiled once for the partial and once for the final step.
 *
 * Semantics pinned from catalyst/expressions/aggregate/{Sum,Average,Count,
 * Max,Min,First}.scala.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/expr.h"
#include "ember/plan.h"
#include "ember/value_text.h"
#include "expr/internal.h"

#define N_COLS 6
static const char *const COL_NAMES[N_COLS] = {"a", "b", "c", "d", "e", "h"};
static const char *const COL_TYPES[N_COLS] = {"int",           "bigint", "double",
                                              "decimal(15,2)", "string", "decimal(38,18)"};

typedef struct atc {
    em_plan *plan;
    const em_expr *agg;
    const em_expr *const *inputs;
    int n_inputs;
    em_error err;
} atc;

static void atc_open(atc *t, const char *fn_text) {
    memset(t, 0, sizeof *t);
    char cols[256] = "", schema[512] = "";
    for (int i = 0; i < N_COLS; i++) {
        char x[64];
        snprintf(x, sizeof x, "%s%s#%d", i ? ", " : "", COL_NAMES[i], i + 1);
        strcat(cols, x);
        snprintf(x, sizeof x, "%s%s:%s", i ? "," : "", COL_NAMES[i], COL_TYPES[i]);
        strcat(schema, x);
    }
    char text[8192];
    snprintf(text, sizeof text,
             "== Physical Plan ==\n"
             "* HashAggregate (3)\n"
             "+- * ColumnarToRow (2)\n"
             "   +- Scan parquet spark_catalog.default.t (1)\n"
             "\n\n"
             "(1) Scan parquet spark_catalog.default.t\n"
             "Output [%d]: [%s]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/t]\n"
             "ReadSchema: struct<%s>\n"
             "\n"
             "(2) ColumnarToRow [codegen id : 1]\n"
             "Input [%d]: [%s]\n"
             "\n"
             "(3) HashAggregate [codegen id : 1]\n"
             "Input [%d]: [%s]\n"
             "Keys: []\n"
             "Functions [1]: [%s]\n"
             "Aggregate Attributes [1]: [buf#20]\n"
             "Results [1]: [buf#21]\n"
             "\n",
             N_COLS, cols, schema, N_COLS, cols, N_COLS, cols, fn_text);
    if (em_plan_parse(text, strlen(text), NULL, &t->plan, &t->err) != EM_OK)
        fail_msg("plan parse failed for %s: %s", fn_text, t->err.msg);
    const em_plan_node *agg = em_plan_root(t->plan);
    const em_plan_field *f = em_plan_node_field(agg, EM_FIELD_FUNCTIONS);
    const em_plan_field *in = em_plan_node_field(agg, EM_FIELD_INPUT);
    assert_non_null(f);
    assert_non_null(in);
    t->agg = f->exprs[0];
    assert_int_equal(t->agg->kind, EM_EXPR_AGG);
    t->inputs = (const em_expr *const *)in->exprs;
    t->n_inputs = in->n_exprs;
}

static em_batch *make_batch(const char *const (*rows)[N_COLS], int n) {
    em_schema s;
    em_error err = {0};
    EM_ASSERT_OK(em_schema_init(&s, N_COLS, &err), &err);
    for (int i = 0; i < N_COLS; i++) {
        em_type ty;
        EM_ASSERT_OK(em_type_parse(COL_TYPES[i], strlen(COL_TYPES[i]), &ty, &err), &err);
        EM_ASSERT_OK(em_schema_set(&s, i, COL_NAMES[i], ty, true, &err), &err);
    }
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, n > 0 ? n : 1, NULL, &b, &err), &err);
    em_schema_reset(&s);
    for (int c = 0; c < N_COLS; c++) {
        em_column *col = &b->cols[c];
        EM_ASSERT_OK(em_column_reserve(col, n, 0, &err), &err);
        for (int r = 0; r < n; r++) {
            const char *txt = rows[r][c];
            if (!txt) {
                EM_ASSERT_OK(em_column_append_null(col, &err), &err);
                continue;
            }
            ex_value v;
            EM_ASSERT_OK(em_ex_parse_literal(txt, col->type, &v, &err), &err);
            if (em_type_is_varlen(col->type)) {
                EM_ASSERT_OK(em_column_append_bytes(col, v.s, v.len, &err), &err);
                continue;
            }
            union {
                int32_t i32;
                int64_t i64;
                double d;
                em_i128 dec;
            } u;
            if (col->type.id == EM_TYPE_INT)
                u.i32 = (int32_t)v.i;
            else if (col->type.id == EM_TYPE_DOUBLE)
                u.d = v.d;
            else if (col->type.id == EM_TYPE_DECIMAL)
                u.dec = v.dec;
            else
                u.i64 = v.i;
            EM_ASSERT_OK(em_column_append_fixed(col, &u, &err), &err);
        }
    }
    b->n_rows = n;
    return b;
}

static void expect_column(const em_column *c, const char *const *expect, int n, const char *what) {
    assert_int_equal(c->length, n);
    em_strbuf sb = {0};
    em_error err = {0};
    for (int r = 0; r < n; r++) {
        bool is_null = false;
        em_strbuf_clear(&sb);
        EM_ASSERT_OK(em_value_text(c, r, &sb, &is_null, &err), &err);
        const char *got = is_null ? "null" : em_strbuf_cstr(&sb);
        if (strcmp(got, expect[r]) != 0)
            fail_msg("%s: row %d: got '%s', expected '%s'", what, r, got, expect[r]);
    }
    em_strbuf_reset(&sb);
}

/* A batch holding buffer columns (moved in). */
static em_batch *buffer_batch(const em_agg_fn *fn, em_column *cols, int64_t n) {
    em_schema s;
    em_error err = {0};
    int nb = em_agg_n_buffers(fn);
    EM_ASSERT_OK(em_schema_init(&s, nb, &err), &err);
    for (int j = 0; j < nb; j++)
        EM_ASSERT_OK(
            em_schema_set(&s, j, em_agg_buffer_name(fn, j), em_agg_buffer_type(fn, j), true, &err),
            &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, 1, NULL, &b, &err), &err);
    em_schema_reset(&s);
    for (int j = 0; j < nb; j++) {
        em_column_reset(&b->cols[j]);
        b->cols[j] = cols[j];
        memset(&cols[j], 0, sizeof cols[j]);
    }
    b->n_rows = n;
    return b;
}

typedef struct part {
    const char *const (*rows)[N_COLS];
    int n;
    const int32_t *groups;
} part;

/*
 * Runs the aggregate fn_text (as printed in a partial aggregate, e.g.
 * "partial_sum(d#4)") over partitions, each partially aggregated into
 * n_groups groups, merges every partial into a final state and checks the
 * buffers of the first partition (when expect_buf0/1 are given) and the
 * final values. Returns the status of the first failing step.
 */
static em_status run_agg(const char *fn_text, bool ansi, const part *parts, int n_parts,
                         int n_groups, const char *const *expect_buf0,
                         const char *const *expect_buf1, const char *const *expect_final,
                         em_error *err_out) {
    atc t;
    atc_open(&t, fn_text);
    em_expr_compile_options o = {0};
    o.ansi = ansi;
    em_agg_fn *pfn, *ffn;
    EM_ASSERT_OK(em_agg_compile(t.agg, t.inputs, t.n_inputs, &o, &pfn, &t.err), &t.err);
    em_expr fin = *t.agg;
    fin.mode = EM_AGG_FINAL;
    EM_ASSERT_OK(em_agg_compile(&fin, NULL, 0, &o, &ffn, &t.err), &t.err);
    assert_int_equal(em_agg_n_buffers(pfn), em_agg_n_buffers(ffn));
    em_agg_state *fst;
    EM_ASSERT_OK(em_agg_state_create(ffn, NULL, &fst, &t.err), &t.err);
    EM_ASSERT_OK(em_agg_state_resize(fst, n_groups, &t.err), &t.err);
    em_status rc = EM_OK;
    for (int p = 0; p < n_parts && rc == EM_OK; p++) {
        em_agg_state *pst;
        EM_ASSERT_OK(em_agg_state_create(pfn, NULL, &pst, &t.err), &t.err);
        /* grow in two steps to exercise resize keeping earlier groups */
        EM_ASSERT_OK(em_agg_state_resize(pst, 1, &t.err), &t.err);
        EM_ASSERT_OK(em_agg_state_resize(pst, n_groups, &t.err), &t.err);
        em_batch *b = make_batch(parts[p].rows, parts[p].n);
        rc = em_agg_update(pfn, pst, parts[p].groups, b, &t.err);
        em_batch_destroy(b);
        if (rc == EM_OK) {
            em_column bufs[3];
            EM_ASSERT_OK(em_agg_emit_buffers(pfn, pst, NULL, bufs, &t.err), &t.err);
            if (p == 0 && expect_buf0)
                expect_column(&bufs[0], expect_buf0, n_groups, "buffer 0");
            if (p == 0 && expect_buf1)
                expect_column(&bufs[1], expect_buf1, n_groups, "buffer 1");
            em_batch *bb = buffer_batch(pfn, bufs, n_groups);
            int32_t *ids = malloc((size_t)n_groups * sizeof *ids);
            for (int g = 0; g < n_groups; g++)
                ids[g] = g;
            rc = em_agg_merge(ffn, fst, ids, bb, 0, &t.err);
            free(ids);
            em_batch_destroy(bb);
        }
        em_agg_state_destroy(pst);
    }
    if (rc == EM_OK) {
        em_column out;
        rc = em_agg_finalize(ffn, fst, NULL, &out, &t.err);
        if (rc == EM_OK) {
            expect_column(&out, expect_final, n_groups, fn_text);
            em_column_reset(&out);
        }
    }
    if (err_out)
        *err_out = t.err;
    em_agg_state_destroy(fst);
    em_agg_fn_destroy(pfn);
    em_agg_fn_destroy(ffn);
    em_plan_destroy(t.plan);
    return rc;
}

#define EXPECT(...) ((const char *const[]){__VA_ARGS__})
#define R(a, b, c, d, e, h)                                                                        \
    { a, b, c, d, e, h }

static const char *const ROWS1[][N_COLS] = {
    R("1", "9223372036854775807", "1.0", "1.10", "pear", "99999999999999999999.999999999999999999"),
    R(NULL, "1", "NaN", NULL, NULL, "99999999999999999999.999999999999999999"),
    R("2147483647", "5", NULL, "2.20", "apple", "1.5"),
    R("1", NULL, "-2.5", "-0.30", "zebra", NULL),
};
static const int32_t GROUPS1[] = {0, 0, 1, 1};

/* Buffer layouts as the plans print them in "Aggregate Attributes". */
static void test_layouts(void **state) {
    (void)state;
    static const struct {
        const char *fn;
        int n;
        const char *b0, *t0, *b1, *t1, *result;
    } cases[] = {
        {"partial_sum(d#4)", 2, "sum", "decimal(25,2)", "isEmpty", "boolean", "decimal(25,2)"},
        {"partial_sum(h#6)", 2, "sum", "decimal(38,18)", "isEmpty", "boolean", "decimal(38,18)"},
        {"partial_sum(a#1)", 1, "sum", "bigint", NULL, NULL, "bigint"},
        {"partial_sum(c#3)", 1, "sum", "double", NULL, NULL, "double"},
        {"partial_avg(d#4)", 2, "sum", "decimal(25,2)", "count", "bigint", "decimal(19,6)"},
        {"partial_avg(UnscaledValue(d#4))", 2, "sum", "double", "count", "bigint", "double"},
        {"partial_count(1)", 1, "count", "bigint", NULL, NULL, "bigint"},
        {"partial_max(e#5)", 1, "max", "string", NULL, NULL, "string"},
        {"partial_min(d#4)", 1, "min", "decimal(15,2)", NULL, NULL, "decimal(15,2)"},
        {"partial_first(e#5, false)", 2, "first", "string", "valueSet", "boolean", "string"},
        {"partial_stddev_samp(c#3)", 3, "n", "double", "avg", "double", "double"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        atc t;
        atc_open(&t, cases[i].fn);
        em_agg_fn *fn;
        EM_ASSERT_OK(em_agg_compile(t.agg, t.inputs, t.n_inputs, NULL, &fn, &t.err), &t.err);
        assert_int_equal(em_agg_n_buffers(fn), cases[i].n);
        char tn[32];
        assert_string_equal(em_agg_buffer_name(fn, 0), cases[i].b0);
        em_type_format(em_agg_buffer_type(fn, 0), tn, sizeof tn);
        assert_string_equal(tn, cases[i].t0);
        if (cases[i].n > 1) {
            assert_string_equal(em_agg_buffer_name(fn, 1), cases[i].b1);
            em_type_format(em_agg_buffer_type(fn, 1), tn, sizeof tn);
            assert_string_equal(tn, cases[i].t1);
        }
        em_type_format(em_agg_result_type(fn), tn, sizeof tn);
        assert_string_equal(tn, cases[i].result);
        em_agg_fn_destroy(fn);
        em_plan_destroy(t.plan);
    }
}

static void test_sum(void **state) {
    (void)state;
    part p1 = {ROWS1, 4, GROUPS1};
    em_error err;
    /* decimal: group 2 never sees a row: sum 0 / isEmpty true -> null */
    EM_ASSERT_OK(run_agg("partial_sum(d#4)", false, &p1, 1, 3, EXPECT("1.10", "1.90", "0.00"),
                         EXPECT("false", "false", "true"), EXPECT("1.10", "1.90", "null"), &err),
                 &err);
    /* int sums in bigint: no wrap at 2^31 */
    EM_ASSERT_OK(run_agg("partial_sum(a#1)", false, &p1, 1, 3, EXPECT("1", "2147483648", "null"),
                         NULL, EXPECT("1", "2147483648", "null"), &err),
                 &err);
    /* bigint sums wrap like Java in non-ANSI mode, raise in ANSI */
    EM_ASSERT_OK(run_agg("partial_sum(b#2)", false, &p1, 1, 2, EXPECT("-9223372036854775808", "5"),
                         NULL, EXPECT("-9223372036854775808", "5"), &err),
                 &err);
    assert_int_equal(run_agg("partial_sum(b#2)", true, &p1, 1, 2, NULL, NULL, NULL, &err),
                     EM_ERR_OVERFLOW);
    assert_non_null(strstr(err.msg, "sum"));
    /* doubles: NaN propagates */
    EM_ASSERT_OK(run_agg("partial_sum(c#3)", false, &p1, 1, 2, EXPECT("NaN", "-2.5"), NULL,
                         EXPECT("NaN", "-2.5"), &err),
                 &err);
    /* two partitions merged */
    part two[2] = {{ROWS1, 4, GROUPS1}, {ROWS1, 4, GROUPS1}};
    EM_ASSERT_OK(run_agg("partial_sum(d#4)", false, two, 2, 3, NULL, NULL,
                         EXPECT("2.20", "3.80", "null"), &err),
                 &err);
}

/* A decimal(38,18) sum overflows its buffer (38 digits): null, or an error
 * in ANSI mode (Sum's CheckOverflowInSum). */
static void test_sum_decimal_overflow(void **state) {
    (void)state;
    part p1 = {ROWS1, 4, GROUPS1};
    em_error err;
    EM_ASSERT_OK(run_agg("partial_sum(h#6)", false, &p1, 1, 2,
                         EXPECT("null", "1.500000000000000000"), EXPECT("false", "false"),
                         EXPECT("null", "1.500000000000000000"), &err),
                 &err);
    assert_int_equal(run_agg("partial_sum(h#6)", true, &p1, 1, 2, NULL, NULL, NULL, &err),
                     EM_ERR_OVERFLOW);
    /* an overflowed partial stays null through the merge (the second
     * partition puts 1.5 into group 0) */
    part two[2] = {{ROWS1, 4, GROUPS1}, {ROWS1 + 2, 2, GROUPS1}};
    EM_ASSERT_OK(run_agg("partial_sum(h#6)", false, two, 2, 2, NULL, NULL,
                         EXPECT("null", "1.500000000000000000"), &err),
                 &err);
}

/* avg(decimal(15,2)) -> decimal(19,6): sum / cast(count as decimal(20,0))
 * at (38,15), then HALF_UP to scale 6. */
static void test_avg(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", "1", "1.0", "1.00", NULL, NULL),   R("2", "2", "2.0", "2.00", NULL, NULL),
        R("2", "2", "2.0", "2.00", NULL, NULL),   R("-1", NULL, NULL, "-1.00", NULL, NULL),
        R("-2", NULL, NULL, "-2.00", NULL, NULL), R("-2", NULL, NULL, "-2.00", NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL),
    };
    static const int32_t groups[] = {0, 0, 0, 1, 1, 1, 2};
    part p = {rows, 7, groups};
    em_error err;
    EM_ASSERT_OK(run_agg("partial_avg(d#4)", false, &p, 1, 3, EXPECT("5.00", "-5.00", "0.00"),
                         EXPECT("3", "3", "0"), EXPECT("1.666667", "-1.666667", "null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_avg(b#2)", false, &p, 1, 3, EXPECT("5.0", "0.0", "0.0"),
                         EXPECT("3", "0", "0"), EXPECT("1.6666666666666667", "null", "null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_avg(UnscaledValue(d#4))", false, &p, 1, 3, NULL, NULL,
                         EXPECT("166.66666666666666", "-166.66666666666666", "null"), &err),
                 &err);
    part two[2] = {{rows, 7, groups}, {rows, 3, groups}};
    EM_ASSERT_OK(run_agg("partial_avg(d#4)", false, two, 2, 3, NULL, NULL,
                         EXPECT("1.666667", "-1.666667", "null"), &err),
                 &err);
}

static void test_count_min_max_first(void **state) {
    (void)state;
    part p1 = {ROWS1, 4, GROUPS1};
    em_error err;
    EM_ASSERT_OK(run_agg("partial_count(1)", false, &p1, 1, 3, EXPECT("2", "2", "0"), NULL,
                         EXPECT("2", "2", "0"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_count(a#1)", false, &p1, 1, 3, EXPECT("1", "2", "0"), NULL,
                         EXPECT("1", "2", "0"), &err),
                 &err);
    EM_ASSERT_OK(
        run_agg("partial_count(a#1, b#2)", false, &p1, 1, 2, NULL, NULL, EXPECT("1", "1"), &err),
        &err);
    /* NaN is the greatest double */
    EM_ASSERT_OK(run_agg("partial_max(c#3)", false, &p1, 1, 3, NULL, NULL,
                         EXPECT("NaN", "-2.5", "null"), &err),
                 &err);
    EM_ASSERT_OK(
        run_agg("partial_min(c#3)", false, &p1, 1, 2, NULL, NULL, EXPECT("1.0", "-2.5"), &err),
        &err);
    EM_ASSERT_OK(run_agg("partial_max(e#5)", false, &p1, 1, 3, EXPECT("pear", "zebra", "null"),
                         NULL, EXPECT("pear", "zebra", "null"), &err),
                 &err);
    EM_ASSERT_OK(
        run_agg("partial_min(d#4)", false, &p1, 1, 2, NULL, NULL, EXPECT("1.10", "-0.30"), &err),
        &err);
    /* first keeps a leading null unless nulls are ignored */
    static const int32_t g2[] = {0, 0, 0, 0};
    part p2 = {ROWS1 + 1, 3, g2};
    EM_ASSERT_OK(run_agg("partial_first(e#5, false)", false, &p2, 1, 1, EXPECT("null"),
                         EXPECT("true"), EXPECT("null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_first(e#5, true)", false, &p2, 1, 1, EXPECT("apple"),
                         EXPECT("true"), EXPECT("apple"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_last(e#5, false)", false, &p2, 1, 1, EXPECT("zebra"),
                         EXPECT("true"), EXPECT("zebra"), &err),
                 &err);
    /* the last row is null: kept unless nulls are ignored */
    part p3 = {ROWS1, 2, g2};
    EM_ASSERT_OK(run_agg("partial_last(e#5, false)", false, &p3, 1, 1, EXPECT("null"),
                         EXPECT("true"), EXPECT("null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_last(e#5, true)", false, &p3, 1, 1, EXPECT("pear"),
                         EXPECT("true"), EXPECT("pear"), &err),
                 &err);
    /* empty input: count 0, everything else null */
    part empty = {ROWS1, 0, GROUPS1};
    EM_ASSERT_OK(run_agg("partial_sum(d#4)", false, &empty, 1, 1, NULL, NULL, EXPECT("null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_count(1)", false, &empty, 1, 1, NULL, NULL, EXPECT("0"), &err),
                 &err);
}

/* stddev/variance (CentralMomentAgg): buffers n, avg, m2 in double; the
 * sample forms are null for one row; partitions merge with Chan's formula.
 * Expected doubles computed with the same update and merge formulas. */
static void test_moments(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", NULL, NULL, NULL, NULL, NULL), R("2", NULL, NULL, NULL, NULL, NULL),
        R("5", NULL, NULL, NULL, NULL, NULL), R("3", NULL, NULL, NULL, NULL, NULL),
        R("4", NULL, NULL, NULL, NULL, NULL), R(NULL, NULL, NULL, NULL, NULL, NULL),
    };
    static const int32_t g1[] = {0, 0, 1};
    static const int32_t g2[] = {0, 0, 0};
    part two[2] = {{rows, 3, g1}, {rows + 3, 3, g2}};
    em_error err;
    EM_ASSERT_OK(run_agg("partial_var_samp(a#1)", false, two, 2, 3, EXPECT("2.0", "1.0", "0.0"),
                         EXPECT("1.5", "5.0", "0.0"), EXPECT("1.6666666666666667", "null", "null"),
                         &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_stddev_samp(a#1)", false, two, 2, 3, NULL, NULL,
                         EXPECT("1.2909944487358056", "null", "null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_var_pop(a#1)", false, two, 2, 3, NULL, NULL,
                         EXPECT("1.25", "0.0", "null"), &err),
                 &err);
    EM_ASSERT_OK(run_agg("partial_stddev_pop(a#1)", false, two, 2, 3, NULL, NULL,
                         EXPECT("1.118033988749895", "0.0", "null"), &err),
                 &err);
}

/* Selection vectors: only selected rows are folded, group ids follow the
 * logical rows. */
static void test_update_with_selection(void **state) {
    (void)state;
    atc t;
    atc_open(&t, "partial_sum(d#4)");
    em_agg_fn *fn;
    EM_ASSERT_OK(em_agg_compile(t.agg, t.inputs, t.n_inputs, NULL, &fn, &t.err), &t.err);
    em_agg_state *st;
    EM_ASSERT_OK(em_agg_state_create(fn, NULL, &st, &t.err), &t.err);
    EM_ASSERT_OK(em_agg_state_resize(st, 2, &t.err), &t.err);
    em_batch *b = make_batch(ROWS1, 4);
    EM_ASSERT_OK(em_batch_sel_reserve(b, 2, &t.err), &t.err);
    b->sel[0] = 0;
    b->sel[1] = 3;
    b->n_sel = 2;
    int32_t ids[] = {1, 1};
    EM_ASSERT_OK(em_agg_update(fn, st, ids, b, &t.err), &t.err);
    /* an out-of-range group id is an error, not a crash */
    int32_t bad[] = {0, 7};
    assert_int_equal(em_agg_update(fn, st, bad, b, &t.err), EM_ERR_INVALID);
    em_column out;
    EM_ASSERT_OK(em_agg_finalize(fn, st, NULL, &out, &t.err), &t.err);
    expect_column(&out, EXPECT("null", "0.80"), 2, "sum under selection");
    em_column_reset(&out);
    em_batch_destroy(b);
    em_agg_state_destroy(st);
    em_agg_fn_destroy(fn);
    em_plan_destroy(t.plan);
}

/* Many batches of EM_BATCH_CAP rows (3 in the tiny-batch CI job), each with
 * a selection vector, fold into the same state as one pass computed here
 * directly would. */
static void test_batches_and_selection(void **state) {
    (void)state;
    enum { N = 61, G = 4 };
    static char text[N][3][32];
    static const char *rows[N][N_COLS];
    int64_t want_sum[G] = {0}, want_count[G] = {0};
    const char *want_max[G] = {NULL};
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < N_COLS; c++)
            rows[i][c] = NULL;
        if (i % 5 != 0) {
            snprintf(text[i][0], 32, "%d", i % 7 - 3);
            rows[i][0] = text[i][0];
        }
        int cents = (i * 137) % 2001 - 1000;
        snprintf(text[i][1], 32, "%s%d.%02d", cents < 0 ? "-" : "", abs(cents) / 100,
                 abs(cents) % 100);
        rows[i][3] = text[i][1];
        snprintf(text[i][2], 32, "k%03d", (i * 37) % 101);
        rows[i][4] = text[i][2];
        if (i % 3 == 0)
            continue; /* not selected */
        int g = i % G;
        want_sum[g] += cents;
        want_count[g] += i % 5 != 0;
        if (!want_max[g] || strcmp(text[i][2], want_max[g]) > 0)
            want_max[g] = text[i][2];
    }
    const char *fns[] = {"partial_sum(d#4)", "partial_count(a#1)", "partial_max(e#5)"};
    for (int f = 0; f < 3; f++) {
        atc t;
        atc_open(&t, fns[f]);
        em_agg_fn *fn;
        EM_ASSERT_OK(em_agg_compile(t.agg, t.inputs, t.n_inputs, NULL, &fn, &t.err), &t.err);
        em_agg_state *st;
        EM_ASSERT_OK(em_agg_state_create(fn, NULL, &st, &t.err), &t.err);
        for (int start = 0; start < N; start += EM_BATCH_CAP) {
            int n = N - start < EM_BATCH_CAP ? N - start : EM_BATCH_CAP;
            em_batch *b = make_batch((const char *const(*)[N_COLS])rows + start, n);
            EM_ASSERT_OK(em_batch_sel_reserve(b, n, &t.err), &t.err);
            int32_t ids[EM_BATCH_CAP];
            int m = 0;
            for (int r = 0; r < n; r++) {
                if ((start + r) % 3 == 0)
                    continue;
                b->sel[m] = r;
                ids[m++] = (start + r) % G;
            }
            b->n_sel = m;
            /* groups appear as the operator would discover them */
            int64_t need = 0;
            for (int k = 0; k < m; k++)
                need = ids[k] + 1 > need ? ids[k] + 1 : need;
            if (need > em_agg_state_groups(st))
                EM_ASSERT_OK(em_agg_state_resize(st, need, &t.err), &t.err);
            EM_ASSERT_OK(em_agg_update(fn, st, ids, b, &t.err), &t.err);
            em_batch_destroy(b);
        }
        assert_int_equal(em_agg_state_groups(st), G);
        em_column out;
        EM_ASSERT_OK(em_agg_finalize(fn, st, NULL, &out, &t.err), &t.err);
        char exp[G][32];
        const char *expect[G];
        for (int g = 0; g < G; g++) {
            if (f == 0)
                snprintf(exp[g], 32, "%s%lld.%02lld", want_sum[g] < 0 ? "-" : "",
                         (long long)(llabs(want_sum[g]) / 100),
                         (long long)(llabs(want_sum[g]) % 100));
            else if (f == 1)
                snprintf(exp[g], 32, "%lld", (long long)want_count[g]);
            else
                snprintf(exp[g], 32, "%s", want_max[g]);
            expect[g] = exp[g];
        }
        expect_column(&out, expect, G, fns[f]);
        em_column_reset(&out);
        em_agg_state_destroy(st);
        em_agg_fn_destroy(fn);
        em_plan_destroy(t.plan);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_sum),
        cmocka_unit_test(test_sum_decimal_overflow),
        cmocka_unit_test(test_avg),
        cmocka_unit_test(test_count_min_max_first),
        cmocka_unit_test(test_update_with_selection),
        cmocka_unit_test(test_batches_and_selection),
        cmocka_unit_test(test_moments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
