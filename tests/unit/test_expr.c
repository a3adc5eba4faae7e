/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scalar expressions: each case writes the expression as Spark prints it,
 * wraps it in a tiny EXPLAIN FORMATTED plan (Scan -> Filter -> Project) so
 * that the plan parser types it from ReadSchema as it would a real plan,
 * compiles it against the Project's input and evaluates it over a small
 * batch, comparing every row's canonical text with the expected value.
 *
 * Expected values come from Spark's documented behaviour; the source is cited
 * next to each group (Catalyst file names refer to
 * sql/catalyst/src/main/scala/org/apache/spark/sql/catalyst/expressions/).
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/expr.h"
#include "ember/plan.h"
#include "ember/value_text.h"
#include "expr/internal.h"

/* The table every case reads. */
#define N_COLS 9
static const char *const COL_NAMES[N_COLS] = {"a", "b", "c", "d", "e", "f", "g", "h", "k"};
static const char *const COL_TYPES[N_COLS] = {"int",           "bigint",         "double",
                                              "decimal(15,2)", "string",         "date",
                                              "boolean",       "decimal(38,18)", "decimal(7,2)"};

typedef struct tc {
    em_plan *plan;
    em_expr_prog *prog;
    const em_expr *expr;
    const em_expr *const *inputs;
    int n_inputs;
    em_error err;
} tc;

static void build_plan_text(char *buf, size_t cap, const char *cond, const char *expr) {
    /* Spark 3.3 forms need a 3.3-style scan name for version detection */
    const char *table = strstr(expr, "CheckOverflow") || strstr(expr, "promote_precision")
                            ? "default.t"
                            : "spark_catalog.default.t";
    char cols[256] = "", schema[512] = "";
    for (int i = 0; i < N_COLS; i++) {
        char t[64];
        snprintf(t, sizeof t, "%s%s#%d", i ? ", " : "", COL_NAMES[i], i + 1);
        strcat(cols, t);
        snprintf(t, sizeof t, "%s%s:%s", i ? "," : "", COL_NAMES[i], COL_TYPES[i]);
        strcat(schema, t);
    }
    snprintf(buf, cap,
             "== Physical Plan ==\n"
             "* Project (4)\n"
             "+- * Filter (3)\n"
             "   +- * ColumnarToRow (2)\n"
             "      +- Scan parquet %s (1)\n"
             "\n\n"
             "(1) Scan parquet %s\n"
             "Output [%d]: [%s]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/t]\n"
             "ReadSchema: struct<%s>\n"
             "\n"
             "(2) ColumnarToRow [codegen id : 1]\n"
             "Input [%d]: [%s]\n"
             "\n"
             "(3) Filter [codegen id : 1]\n"
             "Input [%d]: [%s]\n"
             "Condition : %s\n"
             "\n"
             "(4) Project [codegen id : 1]\n"
             "Output [1]: [%s AS r#100]\n"
             "Input [%d]: [%s]\n"
             "\n",
             table, table, N_COLS, cols, schema, N_COLS, cols, N_COLS, cols, cond, expr, N_COLS,
             cols);
}

/* Parses and compiles `expr`; returns the status of the compilation.
 * Expressions that Spark prints only in conditions (INSET) start with '?'
 * and are placed in the Filter's condition instead of the Project. */
static em_status tc_open(tc *t, const char *expr, bool ansi) {
    memset(t, 0, sizeof *t);
    char text[8192];
    bool in_cond = expr[0] == '?';
    if (in_cond)
        build_plan_text(text, sizeof text, expr + 1, "a#1");
    else
        build_plan_text(text, sizeof text, "isnotnull(a#1)", expr);
    em_status st = em_plan_parse(text, strlen(text), NULL, &t->plan, &t->err);
    if (st != EM_OK)
        fail_msg("plan parse failed for %s: %s", expr, t->err.msg);
    const em_plan_node *proj = em_plan_root(t->plan);
    const em_plan_field *out = em_plan_node_field(proj, EM_FIELD_OUTPUT);
    const em_plan_field *in = em_plan_node_field(proj, EM_FIELD_INPUT);
    assert_non_null(out);
    assert_non_null(in);
    t->expr = out->exprs[0];
    if (in_cond)
        t->expr = em_plan_node_field(proj->children[0], EM_FIELD_CONDITION)->exprs[0];
    t->inputs = (const em_expr *const *)in->exprs;
    t->n_inputs = in->n_exprs;
    em_expr_compile_options o = {0};
    o.ansi = ansi;
    return em_expr_compile(t->expr, t->inputs, t->n_inputs, &o, &t->prog, &t->err);
}

static void tc_close(tc *t) {
    em_expr_prog_destroy(t->prog);
    em_plan_destroy(t->plan);
}

/* Builds a batch from rows of N_COLS texts ("null" = null; NULL = null). */
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
            if (!txt || !strcmp(txt, "null")) {
                EM_ASSERT_OK(em_column_append_null(col, &err), &err);
                continue;
            }
            ex_value v;
            EM_ASSERT_OK(em_ex_parse_literal(txt, col->type, &v, &err), &err);
            if (em_type_is_varlen(col->type)) {
                EM_ASSERT_OK(em_column_append_bytes(col, v.s, v.len, &err), &err);
            } else if (col->type.id == EM_TYPE_BOOLEAN) {
                bool bv = v.i != 0;
                EM_ASSERT_OK(em_column_append_fixed(col, &bv, &err), &err);
            } else {
                union {
                    int32_t i32;
                    int64_t i64;
                    double d;
                    em_i128 dec;
                } u;
                switch (col->type.id) {
                case EM_TYPE_INT:
                case EM_TYPE_DATE:
                    u.i32 = (int32_t)v.i;
                    break;
                case EM_TYPE_DOUBLE:
                    u.d = v.d;
                    break;
                case EM_TYPE_DECIMAL:
                    u.dec = v.dec;
                    break;
                default:
                    u.i64 = v.i;
                    break;
                }
                EM_ASSERT_OK(em_column_append_fixed(col, &u, &err), &err);
            }
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

/* Evaluates expr over rows (optionally under a selection) and compares. */
static void check_sel(const char *expr, bool ansi, const char *const (*rows)[N_COLS], int n,
                      const int32_t *sel, int n_sel, const char *const *expect) {
    tc t;
    em_status st = tc_open(&t, expr, ansi);
    if (st != EM_OK)
        fail_msg("compile %s: %s", expr, t.err.msg);
    em_batch *b = make_batch(rows, n);
    if (sel) {
        EM_ASSERT_OK(em_batch_sel_reserve(b, n_sel, &t.err), &t.err);
        memcpy(b->sel, sel, (size_t)n_sel * sizeof *sel);
        b->n_sel = n_sel;
    }
    em_column out;
    st = em_expr_eval(t.prog, b, NULL, &out, &t.err);
    if (st != EM_OK)
        fail_msg("eval %s: %s", expr, t.err.msg);
    expect_column(&out, expect, n, expr);
    em_column_reset(&out);
    em_batch_destroy(b);
    tc_close(&t);
}

static void check(const char *expr, bool ansi, const char *const (*rows)[N_COLS], int n,
                  const char *const *expect) {
    check_sel(expr, ansi, rows, n, NULL, 0, expect);
}

/* Evaluation must fail with `code` and a message containing `needle`. */
static void check_error(const char *expr, const char *const (*rows)[N_COLS], int n, em_status code,
                        const char *needle) {
    tc t;
    em_status st = tc_open(&t, expr, true);
    if (st == EM_OK) {
        em_batch *b = make_batch(rows, n);
        em_column out;
        st = em_expr_eval(t.prog, b, NULL, &out, &t.err);
        if (st == EM_OK)
            em_column_reset(&out);
        em_batch_destroy(b);
    }
    if (st != code)
        fail_msg("%s: expected %s, got %s (%s)", expr, em_status_name(code), em_status_name(st),
                 t.err.msg);
    if (needle && !strstr(t.err.msg, needle))
        fail_msg("%s: message '%s' lacks '%s'", expr, t.err.msg, needle);
    tc_close(&t);
}

#define ROWS(...) ((const char *const[][N_COLS]){__VA_ARGS__})
#define EXPECT(...) ((const char *const[]){__VA_ARGS__})
#define NROWS(r) ((int)(sizeof(r) / sizeof((r)[0])))

/* one row with only column values that matter; others null */
#define R(a, b, c, d, e, f, g, h, k)                                                               \
    { a, b, c, d, e, f, g, h, k }

/* ------------------------------------------------------------------ tests */

/* Three-valued logic: predicates.scala And/Or; null AND false = false. */
static void test_logic(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, NULL, NULL, NULL, "true", NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, "false", NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("(g#7 AND isnull(a#1))", false, rows, 3, EXPECT("true", "false", "null"));
    check("(g#7 AND isnotnull(a#1))", false, rows, 3, EXPECT("false", "false", "false"));
    check("(g#7 OR isnotnull(a#1))", false, rows, 3, EXPECT("true", "false", "null"));
    check("(g#7 OR isnull(a#1))", false, rows, 3, EXPECT("true", "true", "true"));
    check("NOT g#7", false, rows, 3, EXPECT("false", "true", "null"));
    check("(g#7 <=> true)", false, rows, 3, EXPECT("true", "false", "false"));
    check("(g#7 = true)", false, rows, 3, EXPECT("true", "false", "null"));
    /* PartitionFilters' dynamic pruning wrapper */
    check("dynamicpruningexpression(true)", false, rows, 3, EXPECT("true", "true", "true"));
}

/* Integer arithmetic: Java wraparound unless ANSI (arithmetic.scala Add/Multiply
 * with failOnError); x / 0 is null (DivModLike). */
static void test_int_arith(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("2147483647", "9223372036854775807", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        R("-7", "-3", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        R(NULL, "5", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("(a#1 + 1)", false, rows, 3, EXPECT("-2147483648", "-6", "null"));
    check("(b#2 + 1)", false, rows, 3, EXPECT("-9223372036854775808", "-2", "6"));
    check("(b#2 * 2)", false, rows, 3, EXPECT("-2", "-6", "10"));
    check("(a#1 - 1)", false, rows, 3, EXPECT("2147483646", "-8", "null"));
    check("(a#1 % 3)", false, rows, 3, EXPECT("1", "-1", "null"));
    check("(b#2 % 0)", false, rows, 3, EXPECT("null", "null", "null"));
    check("(b#2 div 2)", false, rows, 3, EXPECT("4611686018427387903", "-1", "2"));
    /* IntegralDivide divides in the operands' type, then widens to bigint */
    check("(a#1 div 2)", false, rows, 3, EXPECT("1073741823", "-3", "null"));
    check("(((0 - a#1) - 1) div -1)", false, rows, 3, EXPECT("-2147483648", "-6", "null"));
    check("-a#1", false, rows, 3, EXPECT("-2147483647", "7", "null"));
    check("abs(a#1)", false, rows, 3, EXPECT("2147483647", "7", "null"));
    /* mixing int and bigint widens to bigint (no wraparound at 2^31) */
    check("(a#1 + b#2)", false, rows, 3, EXPECT("-9223372034707292162", "-10", "null"));
    check_error("(a#1 + 1)", rows, 3, EM_ERR_OVERFLOW, "ARITHMETIC_OVERFLOW");
    check_error("(b#2 * 2)", rows, 3, EM_ERR_OVERFLOW, "(b#2 * 2)");
    check_error("(b#2 % 0)", rows, 3, EM_ERR_INVALID, "DIVIDE_BY_ZERO");
}

/* Doubles: `/` of integers is double division (Divide only takes double and
 * decimal); x / 0.0 is null; NaN = NaN and NaN is the greatest value
 * (SQLOrderingUtil.compareDoubles), -0.0 = 0.0. */
static void test_double(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", NULL, "NaN", NULL, NULL, NULL, NULL, NULL, NULL),
        R("3", NULL, "-0.0", NULL, NULL, NULL, NULL, NULL, NULL),
        R("0", NULL, "1.5", NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("(cast(a#1 as double) / 2.0)", false, rows, 3, EXPECT("0.5", "1.5", "0.0"));
    check("(c#3 / cast(a#1 as double))", false, rows, 3, EXPECT("NaN", "-0.0", "null"));
    check("(c#3 = NaN)", false, rows, 3, EXPECT("true", "false", "false"));
    check("(c#3 > 1.0E10)", false, rows, 3, EXPECT("true", "false", "false"));
    check("(c#3 = 0.0)", false, rows, 3, EXPECT("false", "true", "false"));
    check("isnan(c#3)", false, rows, 3, EXPECT("true", "false", "false"));
    check("knownfloatingpointnormalized(normalizenanandzero(c#3))", false, rows, 3,
          EXPECT("NaN", "0.0", "1.5"));
    check_error("(c#3 / cast(a#1 as double))", rows, 3, EM_ERR_INVALID, "DIVIDE_BY_ZERO");
}

/* Decimal arithmetic (Spark >= 3.4 rules, DecimalPrecision): (15,2)*(15,2) ->
 * (31,4); (15,2)/(15,2) -> (38,18) after adjustPrecisionScale... results
 * rounded HALF_UP (Decimal.toPrecision). */
static void test_decimal_arith(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, "10.25", NULL, NULL, NULL, NULL, "0.05"),
        R(NULL, NULL, NULL, "-10.25", NULL, NULL, NULL, NULL, "0.07"),
        R(NULL, NULL, NULL, "1.00", NULL, NULL, NULL, NULL, "0.00"),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "1.00"),
    };
    /* TPC-H q1 shape: (d * (1 - k)) with the literal typed decimal(1,0) */
    check("(d#4 * (1 - k#9))", false, rows, 4, EXPECT("9.7375", "-9.5325", "1.0000", "null"));
    check("(d#4 + k#9)", false, rows, 4, EXPECT("10.30", "-10.18", "1.00", "null"));
    check("(d#4 - 0.001)", false, rows, 4, EXPECT("10.249", "-10.251", "0.999", "null"));
    /* (15,2)/(7,2): scale max(6, 2+7+1)=10, precision 13+2+10 = 25 */
    check("(d#4 / k#9)", false, rows, 4,
          EXPECT("205.0000000000", "-146.4285714286", "null", "null"));
    check_error("(d#4 / k#9)", rows, 4, EM_ERR_INVALID, "DIVIDE_BY_ZERO");
    /* unary minus and abs keep the type */
    check("-d#4", false, rows, 4, EXPECT("-10.25", "10.25", "-1.00", "null"));
    check("abs(d#4)", false, rows, 4, EXPECT("10.25", "10.25", "1.00", "null"));
}

/* Batches with no nulls and small values take the 64-bit path (eval.c,
 * dec_batch_small); the results are the row path's. A product too wide for
 * 63 bits (the last row of the first case) sends the batch back. */
static void test_decimal_small_batches(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, "10.25", NULL, NULL, NULL, "1.5", "0.05"),
        R(NULL, NULL, NULL, "-10.25", NULL, NULL, NULL, "-2.25", "0.07"),
        R(NULL, NULL, NULL, "1.00", NULL, NULL, NULL, "0", "0.00"),
        R(NULL, NULL, NULL, "9999999999999.99", NULL, NULL, NULL, "3", "-99999.99"),
    };
    check("(d#4 * (1 - k#9))", false, rows, 4,
          EXPECT("9.7375", "-9.5325", "1.0000", "1000009899999998999.9901"));
    check("(d#4 + k#9)", false, rows, 4, EXPECT("10.30", "-10.18", "1.00", "9999999900000.00"));
    check("(d#4 - k#9)", false, rows, 4, EXPECT("10.20", "-10.32", "1.00", "10000000099999.98"));
    check("(k#9 * k#9)", false, rows, 4, EXPECT("0.0025", "0.0049", "0.0000", "9999998000.0001"));
    /* (38,18) + (7,2) is (38,17): a scale that rounds, the row path's */
    check("(h#8 + k#9)", false, rows, 4,
          EXPECT("1.55000000000000000", "-2.18000000000000000", "0.00000000000000000",
                 "-99996.99000000000000000"));
    /* A literal operand is read as one value; its bound too wide for 63
     * bits with the last row sends the batch back, the literal then filled
     * as a column */
    check("(d#4 * 100000000)", false, rows, 4,
          EXPECT("1025000000.00", "-1025000000.00", "100000000.00", "999999999999999000000.00"));
    check("(2 * d#4)", false, rows, 4, EXPECT("20.50", "-20.50", "2.00", "19999999999999.98"));
    /* Chains: a step's result bound is kept for the step reading it, and
     * does not outlive the batch: the last row's wide products go the row
     * path, the selection without it stays on the 64-bit one */
    check("((d#4 - 1) * (1 - k#9))", false, rows, 4,
          EXPECT("8.7875", "-10.4625", "0.0000", "1000009899999898999.0001"));
    check("((d#4 * 2) * (k#9 + 1))", false, rows, 4,
          EXPECT("21.5250", "-21.9350", "2.0000", "-1999979799999998000.0202"));
    int32_t small[] = {0, 1, 2};
    check_sel("((d#4 * 2) * (k#9 + 1))", false, rows, 4, small, 3,
              EXPECT("21.5250", "-21.9350", "2.0000", "null"));
    check_sel("((d#4 - 1) * (1 - k#9))", false, rows, 4, small, 3,
              EXPECT("8.7875", "-10.4625", "0.0000", "null"));
}

/* Spark 3.3 forms: CheckOverflow(op, DecimalType(p,s)[, nullOnOverflow]) with
 * promote_precision; the operator is computed exactly and rounded HALF_UP. */
static void test_decimal_check_overflow(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, "10.25", NULL, NULL, NULL, NULL, "0.05"),
        R(NULL, NULL, NULL, "-10.25", NULL, NULL, NULL, NULL, "0.07"),
        R(NULL, NULL, NULL, "9999999999999.99", NULL, NULL, NULL, NULL, "99999.99"),
    };
    check("CheckOverflow((promote_precision(cast(d#4 as decimal(16,2))) * "
          "promote_precision(cast(k#9 as decimal(16,2)))), DecimalType(18,3))",
          false, rows, 3, EXPECT("0.513", "-0.718", "null"));
    check_error("CheckOverflow((promote_precision(cast(d#4 as decimal(16,2))) * "
                "promote_precision(cast(k#9 as decimal(16,2)))), DecimalType(18,3))",
                rows, 3, EM_ERR_OVERFLOW, "NUMERIC_VALUE_OUT_OF_RANGE");
}

/* Decimal rounding and overflow at the type bounds, including products that
 * need more than 128 bits and the 38-digit MathContext of Decimal.*. */
static void test_decimal_wide(void **state) {
    (void)state;
    /* h is decimal(38,18) */
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, "12345678901234567890.123456789012345678",
          NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, "-0.000000000000000005", NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, "99999999999999999999.999999999999999999",
          NULL),
    };
    /* (38,18)*(38,18): p=77,s=36 -> adjusted (38,6); the exact product is
     * rounded to 38 digits first, then to scale 6 */
    check("(h#8 * h#8)", false, rows, 3, EXPECT("null", "0.000000", "null"));
    /* (38,18)+(38,18): (39,18) -> (38,17): HALF_UP of the 18th digit */
    check("(h#8 + h#8)", false, rows, 3,
          EXPECT("24691357802469135780.24691357802469136", "-0.00000000000000001",
                 "200000000000000000000.00000000000000000"));
    check("cast(h#8 as decimal(38,2))", false, rows, 3,
          EXPECT("12345678901234567890.12", "0.00", "100000000000000000000.00"));
    /* Cast uses java.math.BigDecimal.toString: scientific below 1E-6 */
    check("cast(h#8 as string)", false, rows, 3,
          EXPECT("12345678901234567890.123456789012345678", "-5E-18",
                 "99999999999999999999.999999999999999999"));
    check("cast(h#8 as decimal(20,0))", false, rows, 3,
          EXPECT("12345678901234567890", "0", "null"));
    /* (38,18) / (1,0): scale max(6, 20) = 20, precision 40 -> adjusted (38,18) */
    check("(h#8 / 3)", false, rows, 3,
          EXPECT("4115226300411522630.041152263004115226", "-0.000000000000000002",
                 "33333333333333333333.333333333333333333"));
    check_error("(h#8 * h#8)", rows, 3, EM_ERR_OVERFLOW, "(h#8 * h#8)");
}

/* Half-up rounding of negative values and ties (java.math.RoundingMode.HALF_UP). */
static void test_decimal_rounding(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, "2.45", NULL, NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, "-2.45", NULL, NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, "-2.44", NULL, NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, "0.05", NULL, NULL, NULL, NULL, NULL),
    };
    check("cast(d#4 as decimal(2,1))", false, rows, 4, EXPECT("2.5", "-2.5", "-2.4", "0.1"));
    check("cast(d#4 as int)", false, rows, 4, EXPECT("2", "-2", "-2", "0"));
    check("cast(d#4 as double)", false, rows, 4, EXPECT("2.45", "-2.45", "-2.44", "0.05"));
    check("cast(d#4 as decimal(1,0))", false, rows, 4, EXPECT("2", "-2", "-2", "0"));
    check("round(d#4, 1)", false, rows, 4, EXPECT("2.5", "-2.5", "-2.4", "0.1"));
    check("cast(d#4 as string)", false, rows, 4, EXPECT("2.45", "-2.45", "-2.44", "0.05"));
}

/* Math functions (mathExpressions.scala): floor/ceil of decimals keep an
 * exact decimal(p-s+1,0), of doubles give bigint; ln of x <= 0 is null;
 * pmod is non-negative for positive divisors and null for 0. */
static void test_math(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("-7", "3", "2.5", "-2.45", NULL, NULL, NULL, NULL, NULL),
        R("7", "-3", "-2.5", "2.45", NULL, NULL, NULL, NULL, NULL),
        R("6", "0", "0.0", "2.00", NULL, NULL, NULL, NULL, NULL),
    };
    check("floor(d#4)", false, rows, 3, EXPECT("-3", "2", "2"));
    check("ceil(d#4)", false, rows, 3, EXPECT("-2", "3", "2"));
    check("floor(c#3)", false, rows, 3, EXPECT("2", "-3", "0"));
    check("ceil(c#3)", false, rows, 3, EXPECT("3", "-2", "0"));
    check("pmod(a#1, 3)", false, rows, 3, EXPECT("2", "1", "0"));
    check("pmod(b#2, 0)", false, rows, 3, EXPECT("null", "null", "null"));
    check("sqrt(c#3)", false, rows, 3, EXPECT("1.5811388300841898", "NaN", "0.0"));
    check("ln(c#3)", false, rows, 3, EXPECT("0.9162907318741551", "null", "null"));
    check("power(c#3, 2.0)", false, rows, 3, EXPECT("6.25", "6.25", "0.0"));
}

/* The plan's type of a math function (as Spark prints it: CEIL, FLOOR, EXP in
 * capitals) is the type the compiled program gives; a column whose plan type stayed
 * unknown went to Spark as an Arrow Null vector. Ceil/Floor.dataType: a decimal of
 * scale 0 keeps its type, another decimal(p,s) becomes decimal(p-s+1,0), the rest
 * bigint. */
static void test_math_result_types(void **state) {
    (void)state;
    static const struct {
        const char *expr, *type;
    } cases[] = {
        {"CEIL(c#3)", "bigint"},
        {"ceiling(c#3)", "bigint"},
        {"FLOOR(c#3)", "bigint"},
        {"FLOOR(a#1)", "bigint"},
        {"CEIL(d#4)", "decimal(14,0)"},
        {"FLOOR(h#8)", "decimal(21,0)"},
        {"CEIL(cast(b#2 as decimal(20,0)))", "decimal(20,0)"},
        {"FLOOR(cast(b#2 as decimal(38,0)))", "decimal(38,0)"},
        {"EXP(ln(c#3))", "double"},
        {"SQRT(c#3)", "double"},
        {"POWER(c#3, 2.0)", "double"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc t;
        if (tc_open(&t, cases[i].expr, false) != EM_OK)
            fail_msg("compile %s: %s", cases[i].expr, t.err.msg);
        const em_expr *e = t.expr->kind == EM_EXPR_ALIAS ? t.expr->args[0] : t.expr;
        char plan_t[48], prog_t[48];
        if (!e->type_known)
            fail_msg("%s: the plan leaves its type unknown", cases[i].expr);
        em_type_format(e->type, plan_t, sizeof plan_t);
        em_type_format(em_expr_prog_type(t.prog), prog_t, sizeof prog_t);
        if (strcmp(plan_t, cases[i].type) != 0 || strcmp(prog_t, cases[i].type) != 0)
            fail_msg("%s: plan type %s, program type %s, expected %s", cases[i].expr, plan_t,
                     prog_t, cases[i].type);
        tc_close(&t);
    }
    static const char *const rows[][N_COLS] = {
        R(NULL, "-12", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        R(NULL, "7", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("CEIL(cast(b#2 as decimal(20,0)))", false, rows, 2, EXPECT("-12", "7"));
}

/* UnscaledValue / MakeDecimal (decimalExpressions.scala), as the optimizer
 * rewrites sum and avg of small decimals. */
static void test_unscaled_make_decimal(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, "1234", NULL, "12.34", NULL, NULL, NULL, NULL, NULL),
        R(NULL, "-5", NULL, "-0.05", NULL, NULL, NULL, NULL, NULL),
        R(NULL, "100000000000", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("UnscaledValue(d#4)", false, rows, 3, EXPECT("1234", "-5", "null"));
    check("MakeDecimal(b#2,7,2)", false, rows, 3, EXPECT("12.34", "-0.05", "null"));
    check_error("MakeDecimal(b#2,7,2)", rows, 3, EM_ERR_OVERFLOW, "decimal(7,2)");
    /* 3.3's avg of a decimal: cast((avg / 100.0) as decimal(11,6)) shape */
    check("cast((cast(b#2 as double) / 100.0) as decimal(11,6))", false, rows, 3,
          EXPECT("12.340000", "-0.050000", "null"));
}

/* Comparisons of every type; strings compare as unsigned bytes
 * (UTF8String.compareTo), dates against date literals. */
static void test_compare(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", "1", "1.0", "1.00", "abc", "1998-09-02", NULL, NULL, "1.00"),
        R("2", "-1", "-1.0", "0.05", "ab", "1998-09-03", NULL, NULL, "0.10"),
        R(NULL, NULL, NULL, NULL, "\xc3\xa9", "1969-12-31", NULL, NULL, NULL),
    };
    check("(f#6 <= 1998-09-02)", false, rows, 3, EXPECT("true", "false", "true"));
    check("(e#5 < abd)", false, rows, 3, EXPECT("true", "true", "false"));
    check("(e#5 >= ab)", false, rows, 3, EXPECT("true", "true", "true"));
    check("(d#4 = k#9)", false, rows, 3, EXPECT("true", "false", "null"));
    check("(d#4 >= 0.05)", false, rows, 3, EXPECT("true", "true", "null"));
    check("(d#4 < 0.051)", false, rows, 3, EXPECT("false", "true", "null"));
    check("(a#1 = b#2)", false, rows, 3, EXPECT("true", "false", "null"));
    check("(c#3 < 0.0)", false, rows, 3, EXPECT("false", "true", "null"));
    check("(a#1 <=> b#2)", false, rows, 3, EXPECT("true", "false", "true"));
    check("(b#2 > 0)", false, rows, 3, EXPECT("true", "false", "null"));
}

/* IN / INSET (predicates.scala In): null when not found and the list holds
 * null, null for a null value. */
static void test_in(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("13", NULL, NULL, "0.05", "MAIL", NULL, NULL, NULL, NULL),
        R("5", NULL, NULL, "0.07", "SHIP", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("a#1 IN (13,31,23)", false, rows, 3, EXPECT("true", "false", "null"));
    check("a#1 IN (13,null)", false, rows, 3, EXPECT("true", "null", "null"));
    check("e#5 IN (MAIL,AIR)", false, rows, 3, EXPECT("true", "false", "null"));
    check("?a#1 INSET 1, 13, 2, 40", false, rows, 3, EXPECT("true", "false", "null"));
    check("d#4 IN (0.050,0.071)", false, rows, 3, EXPECT("true", "false", "null"));
    /* items that are not literals: the OR of equalities */
    check("a#1 IN (b#2,13)", false, rows, 3, EXPECT("true", "null", "null"));
    check("e#5 IN (lower(e#5),SHIP)", false, rows, 3, EXPECT("false", "true", "null"));
}

/* LIKE (StringUtils.escapeLikeRegex): '_' one character (UTF-8 aware), '%'
 * any run, '\' escapes; StartsWith/EndsWith/Contains. */
static void test_like(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, NULL, "special requests", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "50%_off", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "\xc3\xa9t\xc3\xa9", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("e#5 LIKE %special%requests%", false, rows, 5,
          EXPECT("true", "false", "false", "false", "null"));
    check("e#5 LIKE %\\%\\_%", false, rows, 5, EXPECT("false", "true", "false", "false", "null"));
    check("e#5 LIKE _t_", false, rows, 5, EXPECT("false", "false", "true", "false", "null"));
    check("e#5 LIKE %", false, rows, 5, EXPECT("true", "true", "true", "true", "null"));
    check("e#5 LIKE ___", false, rows, 5, EXPECT("false", "false", "true", "false", "null"));
    check("NOT e#5 LIKE %s", false, rows, 5, EXPECT("false", "true", "true", "true", "null"));
    check("StartsWith(e#5, spec)", false, rows, 5,
          EXPECT("true", "false", "false", "false", "null"));
    check("EndsWith(e#5, off)", false, rows, 5, EXPECT("false", "true", "false", "false", "null"));
    check("Contains(e#5, %_)", false, rows, 5, EXPECT("false", "true", "false", "false", "null"));
    /* an escape before an ordinary character is an error at compile time */
    tc t;
    assert_int_equal(tc_open(&t, "e#5 LIKE a\\b", false), EM_ERR_INVALID);
    tc_close(&t);
}

/* Reference LIKE over ASCII: '_' one byte, '%' any run, '\\' escapes. */
static bool like_ref(const char *s, int n, const char *p, int pn) {
    if (pn == 0)
        return n == 0;
    if (p[0] == '%')
        return like_ref(s, n, p + 1, pn - 1) || (n > 0 && like_ref(s + 1, n - 1, p, pn));
    if (n == 0)
        return false;
    if (p[0] == '_')
        return like_ref(s + 1, n - 1, p + 1, pn - 1);
    if (p[0] == '\\' && pn > 1)
        return s[0] == p[1] && like_ref(s + 1, n - 1, p + 2, pn - 2);
    return s[0] == p[0] && like_ref(s + 1, n - 1, p + 1, pn - 1);
}

/* Both LIKE matchers (literal runs with '%', and the general one) agree
 * with a reference on every small string and pattern. */
static void test_like_exhaustive(void **state) {
    (void)state;
    static const char alpha[] = "ab";
    static const char palpha[] = "ab%_";
    uint64_t seed = 12345;
    for (int iter = 0; iter < 200000; iter++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        char str[8], pat[7];
        int n = (int)((seed >> 33) % 8), pn = (int)((seed >> 40) % 7);
        for (int i = 0; i < n; i++)
            str[i] = alpha[(seed >> (i * 3 + 1)) & 1];
        for (int i = 0; i < pn; i++)
            pat[i] = palpha[(seed >> (i * 2 + 20)) & 3];
        bool want = like_ref(str, n, pat, pn);
        bool got = em_ex_like_match(str, n, pat, pn);
        if (want != got)
            fail_msg("'%.*s' LIKE '%.*s': got %d, expected %d", n, str, pn, pat, got, want);
    }
}

/* substring (UTF8String.substringSQL): 1-based, 0 acts as 1, negative counts
 * from the end, characters not bytes. */
static void test_substring(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, NULL, "Spark SQL", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "h\xc3\xa9llo w\xc3\xb6rld", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    };
    check("substring(e#5, 1, 2)", false, rows, 4, EXPECT("Sp", "h\xc3\xa9", "", "null"));
    check("substring(e#5, 0, 2)", false, rows, 4, EXPECT("Sp", "h\xc3\xa9", "", "null"));
    check("substring(e#5, -3, 2)", false, rows, 4, EXPECT("SQ", "rl", "", "null"));
    check("substring(e#5, 5)", false, rows, 4, EXPECT("k SQL", "o w\xc3\xb6rld", "", "null"));
    /* the end is computed before the start is clamped: -91 + 95 = 4 */
    check("substring(e#5, -100, 95)", false, rows, 4, EXPECT("Spar", "h\xc3\xa9llo ", "", "null"));
    check("substring(e#5, 3, -1)", false, rows, 4, EXPECT("", "", "", "null"));
    check("substring(e#5, 100, 1)", false, rows, 4, EXPECT("", "", "", "null"));
    check("length(e#5)", false, rows, 4, EXPECT("9", "11", "0", "null"));
    check("upper(e#5)", false, rows, 4,
          EXPECT("SPARK SQL", "H\xc3\x89LLO W\xc3\x96RLD", "", "null"));
    check("lower(e#5)", false, rows, 4,
          EXPECT("spark sql", "h\xc3\xa9llo w\xc3\xb6rld", "", "null"));
    check("concat(e#5, -, e#5)", false, rows, 4,
          EXPECT("Spark SQL-Spark SQL", "h\xc3\xa9llo w\xc3\xb6rld-h\xc3\xa9llo w\xc3\xb6rld", "-",
                 "null"));
}

/* Non-ASCII case mapping (java.lang.String.toUpperCase/toLowerCase). */
static void test_case_mapping(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        /* straße, ÿ, Ωμέγα, Москва */
        R(NULL, NULL, NULL, NULL,
          "stra\xc3\x9f"
          "e \xc3\xbf",
          NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "\xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1", NULL, NULL, NULL,
          NULL),
        R(NULL, NULL, NULL, NULL, "\xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0", NULL, NULL,
          NULL, NULL),
    };
    check("upper(e#5)", false, rows, 3,
          EXPECT("STRASSE \xc5\xb8", "\xce\xa9\xce\x9c\xce\x88\xce\x93\xce\x91",
                 "\xd0\x9c\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92\xd0\x90"));
    check("lower(e#5)", false, rows, 3,
          EXPECT("stra\xc3\x9f"
                 "e \xc3\xbf",
                 "\xcf\x89\xce\xbc\xce\xad\xce\xb3\xce\xb1",
                 "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0"));
}

static void test_trim(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, NULL, "  Sunday   ", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "\tx ", NULL, NULL, NULL, NULL),
    };
    check("trim(e#5)", false, rows, 2, EXPECT("Sunday", "\tx"));
    check("ltrim(e#5)", false, rows, 2, EXPECT("Sunday   ", "\tx "));
    check("rtrim(e#5)", false, rows, 2, EXPECT("  Sunday", "\tx"));
}

/* Dates (datetimeExpressions.scala): proleptic Gregorian, leap years, before
 * 1970. */
static void test_dates(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", NULL, NULL, NULL, NULL, "2000-02-28", NULL, NULL, NULL),
        R("-1", NULL, NULL, NULL, NULL, "1900-03-01", NULL, NULL, NULL),
        R("365", NULL, NULL, NULL, NULL, "1969-12-31", NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, NULL, "2024-02-29", NULL, NULL, NULL),
    };
    check("year(f#6)", false, rows, 4, EXPECT("2000", "1900", "1969", "2024"));
    check("month(f#6)", false, rows, 4, EXPECT("2", "3", "12", "2"));
    check("dayofmonth(f#6)", false, rows, 4, EXPECT("28", "1", "31", "29"));
    check("date_add(f#6, a#1)", false, rows, 4,
          EXPECT("2000-02-29", "1900-02-28", "1970-12-31", "null"));
    check("date_sub(f#6, a#1)", false, rows, 4,
          EXPECT("2000-02-27", "1900-03-02", "1968-12-31", "null"));
    check("datediff(f#6, 1970-01-01)", false, rows, 4, EXPECT("11015", "-25508", "-1", "19782"));
    check("(f#6 < 2000-03-01)", false, rows, 4, EXPECT("true", "true", "true", "false"));
    check("cast(f#6 as string)", false, rows, 4,
          EXPECT("2000-02-28", "1900-03-01", "1969-12-31", "2024-02-29"));
}

/* Casts (Cast.scala): string parsing, truncation, overflow in both modes. */
static void test_casts(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("2147483647", "3000000000", "1.9E10", NULL, " 42 ", NULL, "true", NULL, NULL),
        R("-1", "-1", "-2.7", NULL, "1.5", NULL, "false", NULL, NULL),
        R("0", "0", "NaN", NULL, "abc", NULL, NULL, NULL, NULL),
    };
    check("cast(e#5 as int)", false, rows, 3, EXPECT("42", "1", "null"));
    check("cast(e#5 as decimal(5,2))", false, rows, 3, EXPECT("42.00", "1.50", "null"));
    check("cast(e#5 as double)", false, rows, 3, EXPECT("42.0", "1.5", "null"));
    check("cast(b#2 as int)", false, rows, 3, EXPECT("-1294967296", "-1", "0"));
    check("cast(c#3 as int)", false, rows, 3, EXPECT("2147483647", "-2", "0"));
    check("cast(c#3 as bigint)", false, rows, 3, EXPECT("19000000000", "-2", "0"));
    check("cast(c#3 as decimal(4,1))", false, rows, 3, EXPECT("null", "-2.7", "null"));
    check("cast(a#1 as decimal(9,0))", false, rows, 3, EXPECT("null", "-1", "0"));
    check("cast(a#1 as string)", false, rows, 3, EXPECT("2147483647", "-1", "0"));
    check("cast(c#3 as string)", false, rows, 3, EXPECT("1.9E10", "-2.7", "NaN"));
    check("cast(g#7 as int)", false, rows, 3, EXPECT("1", "0", "null"));
    check("cast(a#1 as boolean)", false, rows, 3, EXPECT("true", "true", "false"));
    check("cast(e#5 as date)", false, rows, 3, EXPECT("null", "null", "null"));
    check_error("cast(e#5 as int)", rows, 3, EM_ERR_INVALID, "CAST_INVALID_INPUT");
    /* an integral overflow in Spark's words (em_spark_error raises Spark's exception) */
    check_error("cast(b#2 as int)", rows, 3, EM_ERR_OVERFLOW,
                "[CAST_OVERFLOW] The value 3000000000L of the type \"BIGINT\" cannot be cast to "
                "\"INT\" due to an overflow.");
    check_error("cast(c#3 as int)", rows, 3, EM_ERR_OVERFLOW, "CAST_OVERFLOW");
    check_error("cast(a#1 as decimal(9,0))", rows, 3, EM_ERR_OVERFLOW, "decimal(9,0)");

    static const char *const dates[][N_COLS] = {
        R(NULL, NULL, NULL, NULL, "2021-7-4", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "2021-02-29", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, " 1998-09-02 12:00:00", NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "2021", NULL, NULL, NULL, NULL),
    };
    check("cast(e#5 as date)", false, dates, 4,
          EXPECT("2021-07-04", "null", "1998-09-02", "2021-01-01"));
}

/* CASE WHEN evaluates a branch only on the rows that reach it: a division by
 * zero in an untaken branch raises nothing even in ANSI mode. */
static void test_case_if_coalesce(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("0", "10", NULL, NULL, "x", NULL, NULL, NULL, NULL),
        R("2", "10", NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        R(NULL, "7", NULL, NULL, "z", NULL, NULL, NULL, NULL),
    };
    check("CASE WHEN (a#1 = 0) THEN 0 ELSE (b#2 div cast(a#1 as bigint)) END", true, rows, 3,
          EXPECT("0", "5", "null"));
    check("CASE WHEN (a#1 = 0) THEN e#5 WHEN isnull(a#1) THEN zz END", false, rows, 3,
          EXPECT("x", "null", "zz"));
    check("coalesce(e#5, cast(a#1 as string), none)", false, rows, 3, EXPECT("x", "2", "z"));
    check("coalesce(a#1, 99)", false, rows, 3, EXPECT("0", "2", "99"));
    /* every branch null: a column of the NULL type */
    check("CASE WHEN (a#1 = 0) THEN null END", false, rows, 3, EXPECT("null", "null", "null"));
    /* AND short-circuits too: the right side sees only rows the left kept */
    check("((a#1 > 0) AND ((b#2 div cast(a#1 as bigint)) = 5))", true, rows, 3,
          EXPECT("false", "true", "null"));
}

/* Selection vectors: unselected rows are null and are never evaluated (an
 * ANSI error in an unselected row does not fire). */
static void test_selection(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", NULL, NULL, NULL, "a", NULL, NULL, NULL, NULL),
        R("2147483647", NULL, NULL, NULL, "bb", NULL, NULL, NULL, NULL),
        R("3", NULL, NULL, NULL, "ccc", NULL, NULL, NULL, NULL),
        R("4", NULL, NULL, NULL, "dddd", NULL, NULL, NULL, NULL),
    };
    int32_t sel[] = {0, 2, 3};
    check_sel("(a#1 + 1)", true, rows, 4, sel, 3, EXPECT("2", "null", "4", "5"));
    check_sel("a#1", true, rows, 4, sel, 3, EXPECT("1", "null", "3", "4"));
    check_sel("concat(e#5, !)", true, rows, 4, sel, 3, EXPECT("a!", "null", "ccc!", "dddd!"));
    int32_t none[1] = {0};
    check_sel("(a#1 + 1)", true, rows, 4, none, 0, EXPECT("null", "null", "null", "null"));
    /* empty batch */
    check("(a#1 + 1)", true, rows, 0, EXPECT(NULL));
}

/* em_expr_filter narrows the selection conjunct by conjunct. */
static void test_filter(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", NULL, NULL, NULL, "a", "1998-09-01", NULL, NULL, NULL),
        R("0", NULL, NULL, NULL, "b", "1998-09-03", NULL, NULL, NULL),
        R(NULL, NULL, NULL, NULL, "c", "1998-09-02", NULL, NULL, NULL),
        R("5", NULL, NULL, NULL, "d", NULL, NULL, NULL, NULL),
        R("0", NULL, NULL, NULL, "e", "1990-01-01", NULL, NULL, NULL),
    };
    tc t;
    EM_ASSERT_OK(tc_open(&t,
                         "((isnotnull(f#6) AND (f#6 <= 1998-09-02)) AND "
                         "((10 div cast(a#1 as bigint)) > 1))",
                         true),
                 &t.err);
    em_batch *b = make_batch(rows, 5);
    /* the second conjunct divides by a#1: rows where a = 0 must go first?
     * no: row 1 fails the date test, but row 4 (a = 0) passes it, so ANSI
     * must raise here */
    em_status st = em_expr_filter(t.prog, b, &t.err);
    assert_int_equal(st, EM_ERR_INVALID);
    em_batch_destroy(b);
    tc_close(&t);

    EM_ASSERT_OK(tc_open(&t, "((isnotnull(f#6) AND (f#6 <= 1998-09-02)) AND (a#1 > 0))", true),
                 &t.err);
    b = make_batch(rows, 5);
    EM_ASSERT_OK(em_expr_filter(t.prog, b, &t.err), &t.err);
    assert_non_null(b->sel);
    assert_int_equal(b->n_sel, 1);
    assert_int_equal(b->sel[0], 0);
    /* filtering again on an existing selection keeps narrowing */
    em_batch_destroy(b);
    b = make_batch(rows, 5);
    int32_t sel[] = {1, 2, 3, 4};
    EM_ASSERT_OK(em_batch_sel_reserve(b, 4, &t.err), &t.err);
    memcpy(b->sel, sel, sizeof sel);
    b->n_sel = 4;
    EM_ASSERT_OK(em_expr_filter(t.prog, b, &t.err), &t.err);
    assert_int_equal(b->n_sel, 0);
    em_batch_destroy(b);
    tc_close(&t);
}

/* A filter keeps exactly the rows where the same condition, evaluated as a
 * value, is true: the filter's one-pass shapes (a column's nulls, a column
 * against a constant on either side) agree with the general evaluator, with
 * and without nulls in the column and with and without a selection. */
static void test_filter_matches_eval(void **state) {
    (void)state;
    static const char *const with_nulls[][N_COLS] = {
        R("1", "7", "1.5", "1.00", "a", "1998-09-01", NULL, NULL, NULL),
        R(NULL, "3", NULL, NULL, "b", NULL, NULL, NULL, NULL),
        R("5", NULL, "-0.0", "2.50", "c", "1998-09-02", NULL, NULL, NULL),
        R("-4", "-9", "NaN", "-1.25", "d", "1998-09-03", NULL, NULL, NULL),
        R("0", "0", "0.0", "0.00", "e", "1990-01-01", NULL, NULL, NULL),
    };
    static const char *const no_nulls[][N_COLS] = {
        R("1", "7", "1.5", "1.00", "a", "1998-09-01", NULL, NULL, NULL),
        R("3", "3", "2.0", "3.00", "b", "1998-09-04", NULL, NULL, NULL),
        R("5", "1", "-0.0", "2.50", "c", "1998-09-02", NULL, NULL, NULL),
        R("-4", "-9", "NaN", "-1.25", "d", "1998-09-03", NULL, NULL, NULL),
        R("0", "0", "0.0", "0.00", "e", "1990-01-01", NULL, NULL, NULL),
    };
    static const char *const conds[] = {
        "(a#1 > 0)", "(0 < a#1)", "(a#1 = 5)", "(a#1 <= 1)", "(1 >= a#1)", "(b#2 < 3)",
        "(b#2 >= 0)", "(c#3 > 0.0)", "(c#3 = 0.0)", "(c#3 < NaN)", "(c#3 >= NaN)",
        "(f#6 <= 1998-09-02)", "(1998-09-02 < f#6)", "(d#4 > 1.00)", "(d#4 = 2.50)",
        "isnotnull(a#1)", "isnull(a#1)", "isnotnull(c#3)", "(a#1 > null)",
        "((isnotnull(a#1) AND (a#1 > -5)) AND isnotnull(b#2))",
        "((isnotnull(f#6) AND (f#6 < 1998-09-03)) AND (b#2 > 0))",
        "(e#5 = c)", "(e#5 < c)", "(c <= e#5)", "(e#5 > bb)", "(e#5 >= cc)", "(e#5 = ccc)",
        /* negated, and a column against a column (NaN equals NaN) */
        "NOT (a#1 = 5)", "NOT (c#3 < 1.5)", "NOT (1998-09-02 >= f#6)", "NOT (e#5 = c)",
        "(a#1 = a#1)", "NOT (a#1 = a#1)", "(c#3 <= c#3)", "NOT (c#3 < c#3)", "(f#6 < f#6)",
        "NOT (e#5 = e#5)", "(e#5 >= e#5)", "(d#4 = d#4)", "((a#1 > 0) AND NOT (b#2 = b#2))",
        /* in a list of constants, NULL among them or not */
        "a#1 IN (1,5,-4)", "a#1 IN (1,null)", "b#2 IN (7,0)", "e#5 IN (a,ccc,c)", "e#5 IN (b,null)",
        "f#6 IN (1998-09-02,1990-01-01)", "(isnotnull(a#1) AND e#5 IN (a,b,c,d))",
        /* chains the filter runs cheapest first: strings after numbers */
        "((e#5 = c) AND (a#1 > 0))", "((e#5 IN (a,c,e) AND isnotnull(a#1)) AND (f#6 < 1998-09-03))",
        "((NOT (e#5 = a) AND (b#2 >= 0)) AND (isnotnull(d#4) AND (d#4 > 1.00)))",
    };
    const char *const(*sets[2])[N_COLS] = {with_nulls, no_nulls};
    int32_t some[] = {0, 2, 3};
    for (size_t ci = 0; ci < sizeof conds / sizeof *conds; ci++) {
        tc t;
        EM_ASSERT_OK(tc_open(&t, conds[ci], false), &t.err);
        for (int set = 0; set < 2; set++) {
            for (int use_sel = 0; use_sel < 2; use_sel++) {
                em_batch *b = make_batch(sets[set], 5);
                const int32_t *sel = use_sel ? some : NULL;
                int n = use_sel ? 3 : 5;
                if (sel) {
                    EM_ASSERT_OK(em_batch_sel_reserve(b, n, &t.err), &t.err);
                    memcpy(b->sel, sel, sizeof some);
                    b->n_sel = n;
                }
                em_column v;
                EM_ASSERT_OK(em_expr_eval(t.prog, b, NULL, &v, &t.err), &t.err);
                bool want[5] = {false};
                int n_want = 0;
                for (int k = 0; k < n; k++) {
                    int i = sel ? sel[k] : k;
                    want[i] = v.type.id == EM_TYPE_BOOLEAN && em_column_is_valid(&v, i) &&
                              em_bit_get(v.values->data, i);
                    n_want += want[i];
                }
                em_column_reset(&v);
                EM_ASSERT_OK(em_expr_filter(t.prog, b, &t.err), &t.err);
                int n_got = b->sel ? (int)b->n_sel : 5;
                if (n_got != n_want)
                    fail_msg("%s (set %d, sel %d): %d rows kept, expected %d", conds[ci], set,
                             use_sel, n_got, n_want);
                for (int k = 0; k < n_got; k++) {
                    int i = b->sel ? b->sel[k] : k;
                    if (!want[i])
                        fail_msg("%s (set %d, sel %d): row %d kept", conds[ci], set, use_sel, i);
                }
                em_batch_destroy(b);
            }
        }
        tc_close(&t);
    }
}

/* A chain with a conjunct that can fail keeps Spark's order: the guard
 * (a <> 0) drops the zero before the ANSI division sees it. */
static void test_filter_guard_keeps_order(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("2", "7", NULL, NULL, "a", NULL, NULL, NULL, NULL),
        R("0", "3", NULL, NULL, "b", NULL, NULL, NULL, NULL),
        R("5", "1", NULL, NULL, "c", NULL, NULL, NULL, NULL),
    };
    tc t;
    EM_ASSERT_OK(tc_open(&t, "(NOT (a#1 = 0) AND ((b#2 div cast(a#1 as bigint)) > 1))", true),
                 &t.err);
    em_batch *b = make_batch(rows, 3);
    EM_ASSERT_OK(em_expr_filter(t.prog, b, &t.err), &t.err);
    assert_int_equal(b->n_sel, 1);
    assert_int_equal(b->sel[0], 0); /* 7 div 2 = 3 */
    em_batch_destroy(b);
    tc_close(&t);
}

/* Binding errors name the attribute; unsupported functions are refused at
 * compile time. */
static void test_compile_errors(void **state) {
    (void)state;
    tc t;
    EM_ASSERT_OK(tc_open(&t, "(a#1 + 1)", false), &t.err);
    /* the same tree against an input without a#1 */
    em_expr_prog *p = NULL;
    em_status st = em_expr_compile(t.expr, t.inputs + 1, t.n_inputs - 1, NULL, &p, &t.err);
    if (st != EM_ERR_BIND)
        fail_msg("%s: %s", em_status_name(st), t.err.msg);
    assert_null(p);
    assert_non_null(strstr(t.err.msg, "a#1"));
    tc_close(&t);
    assert_int_equal(tc_open(&t, "sha2(e#5, 256)", false), EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(t.err.msg, "sha2"));
    tc_close(&t);
}

/* Scalar subqueries come from the provider, fetched once. */
static int subquery_calls;
static em_status provide(void *ctx, const em_expr *sq, em_type type, em_pool *pool, em_column *out,
                         em_error *err) {
    (void)ctx;
    (void)sq;
    subquery_calls++;
    EM_TRY(em_column_init(out, type, 1, pool, err));
    em_i128 v = 1050; /* 10.50 at scale 2 */
    return em_column_append_fixed(out, &v, err);
}

static void test_scalar_subquery(void **state) {
    (void)state;
    /* the plan parser types a scalar subquery from its tree; build by hand */
    em_expr sq;
    memset(&sq, 0, sizeof sq);
    sq.kind = EM_EXPR_SCALAR_SUBQUERY;
    sq.name = "scalar-subquery#4";
    sq.type = em_type_decimal(15, 2);
    sq.type_known = true;
    em_expr attr;
    memset(&attr, 0, sizeof attr);
    attr.kind = EM_EXPR_ATTR;
    attr.name = "d";
    attr.id = 4;
    attr.type = em_type_decimal(15, 2);
    attr.type_known = true;
    em_expr *args[2] = {&attr, &sq};
    em_expr cmp;
    memset(&cmp, 0, sizeof cmp);
    cmp.kind = EM_EXPR_BINARY;
    cmp.op = EM_OP_GT;
    cmp.n_args = 2;
    cmp.args = args;
    const em_expr *inputs[4] = {NULL, NULL, NULL, &attr};
    em_expr_compile_options o = {0};
    em_expr_prog *prog;
    em_error err = {0};
    assert_int_equal(em_expr_compile(&cmp, inputs, 4, &o, &prog, &err), EM_ERR_UNSUPPORTED);
    o.subquery = provide;
    EM_ASSERT_OK(em_expr_compile(&cmp, inputs, 4, &o, &prog, &err), &err);
    static const char *const rows[][N_COLS] = {
        R(NULL, NULL, NULL, "10.49", NULL, NULL, NULL, NULL, NULL),
        R(NULL, NULL, NULL, "10.51", NULL, NULL, NULL, NULL, NULL),
    };
    subquery_calls = 0;
    for (int rep = 0; rep < 2; rep++) {
        em_batch *b = make_batch(rows, 2);
        em_column out;
        EM_ASSERT_OK(em_expr_eval(prog, b, NULL, &out, &err), &err);
        expect_column(&out, EXPECT("false", "true"), 2, "d > subquery");
        em_column_reset(&out);
        em_batch_destroy(b);
    }
    assert_int_equal(subquery_calls, 1);
    em_expr_prog_destroy(prog);
}

/* Decimal helpers directly: 256-bit products and quotients. */
static void test_decimal_helpers(void **state) {
    (void)state;
    em_i128 max38 = em_dec_pow10(38) - 1, r;
    /* (10^38-1) * (10^38-1) at scale 0 does not fit */
    assert_false(em_dec_mul(max38, 0, max38, 0, 38, 0, &r));
    /* (10^38-1) * 1 at scales 19+19 -> rounded to scale 18 */
    assert_true(em_dec_mul(max38, 19, 1, 19, 38, 20, &r));
    assert_true(r == em_dec_pow10(20)); /* 0.99..9 (38 nines) rounds up to 1 at scale 20 */
    /* 1/3 at scale 6 */
    assert_true(em_dec_div(1, 0, 3, 0, 38, 6, &r));
    assert_true(r == 333333);
    /* -2/3 -> -0.666667 (HALF_UP away from zero) */
    assert_true(em_dec_div(-2, 0, 3, 0, 38, 6, &r));
    assert_true(r == -666667);
    /* huge dividend: (10^38-1) / 7 at scale 0 */
    assert_true(em_dec_div(max38, 0, 7, 0, 38, 0, &r));
    assert_true(r == max38 / 7 + ((max38 % 7) * 2 >= 7));
    /* comparisons across scales */
    assert_int_equal(em_dec_cmp(max38, 0, 1, 38), 1);
    assert_int_equal(em_dec_cmp(5, 1, 50, 2), 0);
    assert_int_equal(em_dec_cmp(-5, 1, 49, 2), -1);
    bool bad;
    assert_true(em_dec_parse("1.25E2", 6, 10, 1, &r, &bad));
    assert_true(r == 1250);
    assert_true(em_dec_parse("0E-20", 5, 38, 20, &r, &bad));
    assert_true(r == 0);
    assert_false(em_dec_parse("1.2.3", 5, 10, 1, &r, &bad));
    assert_true(bad);
    assert_true(em_dec_parse("-0.005", 6, 10, 2, &r, &bad));
    assert_true(r == -1);
}

/* Every allocation failure during evaluation is reported as an error and
 * leaks nothing (ASan checks the latter). */
static void test_alloc_failures(void **state) {
    (void)state;
    static const char *const rows[][N_COLS] = {
        R("1", "5", "1.5", "10.25", "alpha", "2000-02-28", "true", NULL, "0.05"),
        R("2", NULL, "NaN", "-1.00", NULL, "1969-12-31", "false", NULL, "0.07"),
        R(NULL, "7", NULL, NULL, "gamma", NULL, NULL, NULL, NULL),
    };
    const char *exprs[] = {
        ("CASE WHEN (a#1 = 1) THEN concat(e#5, x) WHEN isnull(a#1) THEN upper(e#5) ELSE "
         "cast(d#4 as string) END"),
        "coalesce(substring(e#5, 2, 3), cast((d#4 * (1 - k#9)) as string))",
        "((a#1 > 0) AND e#5 LIKE %a%)",
    };
    for (size_t x = 0; x < sizeof exprs / sizeof exprs[0]; x++) {
        tc t;
        EM_ASSERT_OK(tc_open(&t, exprs[x], false), &t.err);
        em_batch *b = make_batch(rows, 3);
        bool succeeded = false;
        for (int64_t n = 1; n < 200 && !succeeded; n++) {
            em_alloc_fail_after(n);
            em_column out;
            em_error err = {0};
            em_status st = em_expr_eval(t.prog, b, NULL, &out, &err);
            bool triggered = em_alloc_fail_triggered();
            em_alloc_fail_after(0);
            if (st == EM_OK) {
                em_column_reset(&out);
                succeeded = !triggered;
            } else {
                assert_true(st == EM_ERR_NOMEM || st == EM_ERR_OOM_BUDGET);
            }
        }
        assert_true(succeeded);
        em_batch_destroy(b);
        tc_close(&t);
    }
}

/* A double to a decimal takes a shortcut past the text for most values; it
 * must give what the text gives (Double.toString's shortest digits, then
 * HALF_UP) for every value and scale, near halves and overflow included. */
static void test_decimal_from_double_fast(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int checked = 0;
    for (int i = 0; i < 400000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int scale = (int)(x % 12), precision = 1 + (int)((x >> 8) % 20);
        double d;
        switch ((x >> 16) % 4) {
        case 0: /* halves and near halves at this scale */
            d = ((double)(int64_t)((x >> 20) % 2000001) - 1000000.0 + 0.5) / pow(10, scale);
            break;
        case 1: /* averages, as avg(...) / 1.0 gives */
            d = (double)((x >> 20) % 100000) / (double)(1 + (x >> 40) % 97);
            break;
        case 2: /* any magnitude */
            d = ldexp((double)((x >> 11) & ((1ULL << 53) - 1)), (int)((x >> 3) % 80) - 60);
            break;
        default:
            d = -((double)((x >> 24) % 1000000) / 1000.0);
            break;
        }
        char buf[40];
        em_shortest_e(d, false, buf, sizeof buf);
        em_i128 want = 0, got = 0;
        bool bad;
        bool ok_want = em_dec_parse(buf, (int64_t)strlen(buf), precision, scale, &want, &bad);
        bool ok_got = em_dec_from_double(d, precision, scale, &got);
        if (ok_want != ok_got || (ok_want && want != got))
            fail_msg("%s at (%d,%d): text gives %d/%lld, the shortcut %d/%lld", buf, precision,
                     scale, ok_want, (long long)want, ok_got, (long long)got);
        checked++;
    }
    assert_int_equal(checked, 400000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logic),
        cmocka_unit_test(test_int_arith),
        cmocka_unit_test(test_double),
        cmocka_unit_test(test_decimal_arith),
        cmocka_unit_test(test_decimal_small_batches),
        cmocka_unit_test(test_decimal_check_overflow),
        cmocka_unit_test(test_decimal_wide),
        cmocka_unit_test(test_decimal_rounding),
        cmocka_unit_test(test_unscaled_make_decimal),
        cmocka_unit_test(test_math),
        cmocka_unit_test(test_math_result_types),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_in),
        cmocka_unit_test(test_like),
        cmocka_unit_test(test_like_exhaustive),
        cmocka_unit_test(test_substring),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_case_mapping),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_casts),
        cmocka_unit_test(test_case_if_coalesce),
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_filter),
        cmocka_unit_test(test_filter_matches_eval),
        cmocka_unit_test(test_filter_guard_keeps_order),
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_scalar_subquery),
        cmocka_unit_test(test_decimal_helpers),
        cmocka_unit_test(test_decimal_from_double_fast),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
