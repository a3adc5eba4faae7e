/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --retype at the plan level: the shared TPC-H plans were printed for
 * DECIMAL(10,0) money columns; typed again with DECIMAL(15,2) columns (the
 * standard schema) the plan must carry the types Spark infers for the same SQL
 * on DECIMAL(15,2) tables, and print what Spark would have printed: avg no
 * longer rewritten by DecimalAggregates (15 + 4 > 15), 3.3's promote_precision
 * casts and CheckOverflow types derived from scale 2, comparison coercion
 * casts widened. A column kept at a small precision keeps the DecimalAggregates
 * form with its constants updated.
 */
#include "test_plan_common.h"

static int g_money_precision = 15, g_money_scale = 2;

static bool money_column(const char *c) {
    static const char *const money[] = {
        "l_quantity", "l_extendedprice", "l_discount",   "l_tax",         "c_acctbal",
        "s_acctbal",  "ps_supplycost",   "o_totalprice", "p_retailprice", NULL};
    for (int i = 0; money[i]; i++)
        if (strcmp(c, money[i]) == 0)
            return true;
    return false;
}

static bool retype_money(void *ctx, const em_plan_node *leaf, const char *column, em_type *type) {
    (void)ctx;
    (void)leaf;
    if (!money_column(column))
        return false;
    *type = em_type_decimal(g_money_precision, g_money_scale);
    return true;
}

static em_plan *parse_retyped(const char *dir, int q) {
    char path[4096];
    size_t len = 0;
    char *text = plan_test_shared(dir, q, &len, path, sizeof path);
    em_plan_parse_options opt = {.column_type = retype_money};
    em_plan *plan = NULL;
    em_error err = {0};
    em_status st = em_plan_parse(text, len, &opt, &plan, &err);
    free(text);
    if (st != EM_OK)
        fail_msg("%s: %s", path, err.msg);
    return plan;
}

static char *print_expr(const em_expr *e) {
    char *s = NULL;
    size_t n = 0;
    em_error err = {0};
    EM_ASSERT_OK(em_expr_print(e, NULL, &s, &n, &err), &err);
    return s;
}

/* The node whose output has an attribute with this name. */
static const em_plan_node *node_defining(const em_plan *plan, const char *name, int *index) {
    for (int id = em_plan_max_id(plan); id >= 1; id--) {
        const em_plan_node *n = em_plan_node_by_id(plan, id);
        const em_plan_field *r = n ? em_plan_node_field(n, EM_FIELD_RESULTS) : NULL;
        for (int i = 0; r && i < r->n_exprs; i++)
            if (r->exprs[i]->kind == EM_EXPR_ALIAS && strcmp(r->exprs[i]->name, name) == 0) {
                *index = i;
                return n;
            }
    }
    return NULL;
}

static void assert_result_type(const em_plan *plan, const char *name, em_type want) {
    int i = 0;
    const em_plan_node *n = node_defining(plan, name, &i);
    assert_non_null(n);
    const em_expr *e = em_plan_node_field(n, EM_FIELD_RESULTS)->exprs[i];
    if (!e->type_known || !em_type_equal(e->type, want))
        fail_msg("%s: type %s (known %d), want decimal(%d,%d) or id %d", name,
                 e->type_known ? (e->type.id == EM_TYPE_DECIMAL ? "decimal" : "other") : "?",
                 e->type_known, want.precision, want.scale, (int)want.id);
    if (want.id == EM_TYPE_DECIMAL &&
        (e->type.precision != want.precision || e->type.scale != want.scale))
        fail_msg("%s: decimal(%d,%d), want decimal(%d,%d)", name, e->type.precision, e->type.scale,
                 want.precision, want.scale);
}

static void assert_result_text(const em_plan *plan, const char *name, const char *want) {
    int i = 0;
    const em_plan_node *n = node_defining(plan, name, &i);
    assert_non_null(n);
    char *s = print_expr(em_plan_node_field(n, EM_FIELD_RESULTS)->exprs[i]);
    if (strcmp(s, want) != 0)
        fail_msg("%s printed\n  %s\nwant\n  %s", name, s, want);
    free(s);
}

/* Functions[i] of the first aggregate (partial) printed. */
static char *partial_function(const em_plan *plan, int i) {
    for (int id = 1; id <= em_plan_max_id(plan); id++) {
        const em_plan_node *n = em_plan_node_by_id(plan, id);
        const em_plan_field *f = n ? em_plan_node_field(n, EM_FIELD_FUNCTIONS) : NULL;
        if (f && i < f->n_exprs)
            return print_expr(f->exprs[i]);
    }
    fail_msg("no aggregate");
    return NULL;
}

/* Retyped to the types it was printed for, every shared plan prints back byte for byte:
 * the rewrite changes nothing Spark would not. Retyped to DECIMAL(15,2), every result
 * column has a type. */
static void test_same_types_change_nothing(void **state) {
    (void)state;
    g_money_precision = 10;
    g_money_scale = 0;
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++)
        for (int q = 1; q <= 22; q++) {
            char path[4096];
            size_t len = 0;
            char *text = plan_test_shared(plan_test_dirs[d], q, &len, path, sizeof path);
            em_plan *plan = parse_retyped(plan_test_dirs[d], q);
            char *out = NULL;
            size_t n = 0;
            em_error err = {0};
            EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
            if (n != len || memcmp(out, text, len) != 0)
                fail_msg("%s prints differently once retyped to its own types", path);
            free(out);
            free(text);
            em_plan_destroy(plan);
            /* and on DECIMAL(15,2) every result column is typed */
            g_money_precision = 15;
            g_money_scale = 2;
            plan = parse_retyped(plan_test_dirs[d], q);
            const em_plan_node *root = em_plan_exec_root(plan);
            assert_true(root->n_output > 0);
            for (int i = 0; i < root->n_output; i++)
                if (!root->output[i]->type_known)
                    fail_msg("%s: result column %d untyped on DECIMAL(15,2)", path, i);
            em_plan_destroy(plan);
            g_money_precision = 10;
            g_money_scale = 0;
        }
    g_money_precision = 15;
    g_money_scale = 2;
}

/* q1 on DECIMAL(15,2): the types Spark infers for the SQL on such tables. */
static void test_q1_types_every_line(void **state) {
    (void)state;
    g_money_precision = 15;
    g_money_scale = 2;
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++) {
        em_plan *plan = parse_retyped(plan_test_dirs[d], 1);
        assert_result_type(plan, "sum_qty", em_type_decimal(25, 2));
        assert_result_type(plan, "sum_base_price", em_type_decimal(25, 2));
        /* (15,2) * (1 - (15,2)) = (15,2) * (16,2) = (32,4); sum -> (38,4) */
        assert_result_type(plan, "sum_disc_price", em_type_decimal(38, 4));
        /* (32,4) * (16,2) = (49,6) adjusted to (38,6); sum -> (38,6) */
        assert_result_type(plan, "sum_charge", em_type_decimal(38, 6));
        assert_result_type(plan, "avg_qty", em_type_decimal(19, 6));
        assert_result_type(plan, "avg_price", em_type_decimal(19, 6));
        assert_result_type(plan, "avg_disc", em_type_decimal(19, 6));
        assert_result_type(plan, "count_order", em_type_make(EM_TYPE_LONG));
        int at = 0;
        const em_plan_node *fin = node_defining(plan, "avg_qty", &at);
        assert_non_null(fin);
        char *r = print_expr(em_plan_node_field(fin, EM_FIELD_RESULTS)->exprs[at]);
        /* ids differ between the folders: avg(l_quantity#1)#K AS avg_qty#M */
        if (strncmp(r, "avg(l_quantity#1)#", 18) != 0 || !strstr(r, " AS avg_qty#") ||
            strchr(r, '/'))
            fail_msg("spark-%s avg_qty printed %s", plan_test_dirs[d], r);
        free(r);
        char *s = partial_function(plan, 4);
        assert_string_equal(s, "partial_avg(l_quantity#1)");
        free(s);
        em_plan_destroy(plan);
    }
}

static void test_q1_spark33_check_overflow(void **state) {
    (void)state;
    g_money_precision = 15;
    g_money_scale = 2;
    em_plan *plan = parse_retyped("3.3", 1);
    char *s = partial_function(plan, 2);
    assert_string_equal(s, "partial_sum(CheckOverflow((promote_precision(cast(l_extendedprice#2 as "
                           "decimal(16,2))) * promote_precision(CheckOverflow((1.00 - "
                           "promote_precision(cast(l_discount#3 as decimal(16,2)))), "
                           "DecimalType(16,2)))), DecimalType(32,4)))");
    free(s);
    s = partial_function(plan, 3);
    assert_string_equal(s, "partial_sum(CheckOverflow((promote_precision(CheckOverflow((promote_"
                           "precision(cast("
                           "l_extendedprice#2 as decimal(16,2))) * "
                           "promote_precision(CheckOverflow((1.00 - "
                           "promote_precision(cast(l_discount#3 as decimal(16,2)))), "
                           "DecimalType(16,2)))), "
                           "DecimalType(32,4))) * promote_precision(cast(CheckOverflow((1.00 + "
                           "promote_precision(cast(l_tax#4 as decimal(16,2)))), "
                           "DecimalType(16,2)) as "
                           "decimal(32,4)))), DecimalType(38,6)))");
    free(s);
    em_plan_destroy(plan);
}

/* q11 on 3.3: an int column promoted with a decimal one takes the wider type
 * (decimal(10,0) widened to (15,2)); a promoted operand already of the promoted
 * type has no cast; the literal of a product whose type was adjusted keeps its
 * own type (0.0001000000: (10,10)). */
static void test_q11_spark33(void **state) {
    (void)state;
    g_money_precision = 15;
    g_money_scale = 2;
    em_plan *plan = parse_retyped("3.3", 11);
    char *s = partial_function(plan, 0);
    assert_string_equal(s, "partial_sum(CheckOverflow((promote_precision(ps_supplycost#4) * "
                           "promote_precision(cast(ps_availqty#3 as decimal(15,2)))), "
                           "DecimalType(26,2)))");
    free(s);
    int at = 0;
    const em_plan_node *n =
        node_defining(plan, "(sum((ps_supplycost * ps_availqty)) * 0.0001000000)", &at);
    assert_non_null(n);
    const em_expr *r = em_plan_node_field(n, EM_FIELD_RESULTS)->exprs[at];
    s = print_expr(r);
    /* sum (36,2) and the literal (10,10): wider (38,10) bounded; (47,12) adjusted to (38,6) */
    /* the aggregate's result is named by its rewritten function, as Spark names it */
    assert_string_equal(s, "CheckOverflow((promote_precision(cast(sum(CheckOverflow(("
                           "promote_precision(ps_supplycost#19) * promote_precision(cast("
                           "ps_availqty#18 as decimal(15,2)))), DecimalType(26,2)))#27 as "
                           "decimal(38,10))) * 0.0001000000), DecimalType(38,6)) AS "
                           "(sum((ps_supplycost * ps_availqty)) * 0.0001000000)#28");
    free(s);
    assert_result_type(plan, "(sum((ps_supplycost * ps_availqty)) * 0.0001000000)",
                       em_type_decimal(38, 6));
    assert_result_type(plan, "value", em_type_decimal(36, 2));
    em_plan_destroy(plan);
}

/* A precision that still qualifies keeps DecimalAggregates' form, constants
 * updated: decimal(7,2): avg -> cast((avg(UnscaledValue(x)) / 100.0) as
 * decimal(11,6)). */
static void test_q1_small_precision_keeps_unscaled(void **state) {
    (void)state;
    g_money_precision = 7;
    g_money_scale = 2;
    em_plan *plan = parse_retyped("3.5", 1);
    assert_result_text(plan, "avg_qty",
                       "cast((avg(UnscaledValue(l_quantity#1))#42 / 100.0) as decimal(11,6)) AS "
                       "avg_qty#50");
    assert_result_type(plan, "avg_qty", em_type_decimal(11, 6));
    assert_result_type(plan, "sum_qty", em_type_decimal(17, 2));
    em_plan_destroy(plan);
    g_money_precision = 15;
}

/* Comparison coercions (q17: l_quantity < 0.2 * avg; q22: c_acctbal > avg)
 * widen. */
static void test_comparison_casts(void **state) {
    (void)state;
    g_money_precision = 15;
    g_money_scale = 2;
    em_plan *plan = parse_retyped("3.5", 22);
    bool found = false;
    for (int id = 1; id <= em_plan_max_id(plan) && !found; id++) {
        const em_plan_node *n = em_plan_node_by_id(plan, id);
        const em_plan_field *c = n ? em_plan_node_field(n, EM_FIELD_CONDITION) : NULL;
        if (!c || !c->n_exprs)
            continue;
        char *s = print_expr(c->exprs[0]);
        if (strstr(s, "c_acctbal#3 as decimal(")) {
            found = true;
            /* c_acctbal (15,2) against avg (19,6): both at (19,6) */
            assert_non_null(strstr(s, "cast(c_acctbal#3 as decimal(19,6))"));
        }
        free(s);
    }
    assert_true(found);
    em_plan_destroy(plan);
    plan = parse_retyped("3.3", 17);
    found = false;
    for (int id = 1; id <= em_plan_max_id(plan) && !found; id++) {
        const em_plan_node *n = em_plan_node_by_id(plan, id);
        const em_plan_field *c = n ? em_plan_node_field(n, EM_FIELD_JOIN_CONDITION) : NULL;
        if (!c || !c->n_exprs || !c->exprs[0])
            continue;
        char *s = print_expr(c->exprs[0]);
        if (strstr(s, "l_quantity#2")) {
            found = true;
            /* 0.2 (1,1) * avg (19,6) = (21,7); l_quantity (15,2) widened to (21,7) */
            assert_string_equal(
                s, "(cast(l_quantity#2 as decimal(21,7)) < (0.2 * avg(l_quantity))#15)");
        }
        free(s);
    }
    assert_true(found);
    assert_result_text(plan, "(0.2 * avg(l_quantity))",
                       "CheckOverflow((0.200000 * promote_precision(avg(l_quantity#9)#14)), "
                       "DecimalType(21,7)) AS (0.2 * avg(l_quantity))#15");
    em_plan_destroy(plan);
}

/* SELECT l_returnflag, sum(l_quantity) sq, avg(l_quantity) aq ... GROUP BY 1 as Spark 3.5
 * plans it over DECIMAL(7,2): both aggregates rewritten by DecimalAggregates. */
static const char sum_avg_plan[] =
    "== Physical Plan ==\n"
    "* HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- * HashAggregate (3)\n"
    "      +- * ColumnarToRow (2)\n"
    "         +- Scan parquet spark_catalog.default.lineitem (1)\n"
    "\n\n"
    "(1) Scan parquet spark_catalog.default.lineitem\n"
    "Output [2]: [l_quantity#1, l_returnflag#2]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/lineitem]\n"
    "ReadSchema: struct<l_quantity:decimal(7,2),l_returnflag:string>\n"
    "\n"
    "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [2]: [l_quantity#1, l_returnflag#2]\n"
    "\n"
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [2]: [l_quantity#1, l_returnflag#2]\n"
    "Keys [1]: [l_returnflag#2]\n"
    "Functions [2]: [partial_sum(UnscaledValue(l_quantity#1)), "
    "partial_avg(UnscaledValue(l_quantity#1))]\n"
    "Aggregate Attributes [3]: [sum#3, sum#4, count#5]\n"
    "Results [4]: [l_returnflag#2, sum#6, sum#7, count#8]\n"
    "\n"
    "(4) Exchange\n"
    "Input [4]: [l_returnflag#2, sum#6, sum#7, count#8]\n"
    "Arguments: hashpartitioning(l_returnflag#2, 5), ENSURE_REQUIREMENTS, [plan_id=1]\n"
    "\n"
    "(5) HashAggregate [codegen id : 2]\n"
    "Input [4]: [l_returnflag#2, sum#6, sum#7, count#8]\n"
    "Keys [1]: [l_returnflag#2]\n"
    "Functions [2]: [sum(UnscaledValue(l_quantity#1)), avg(UnscaledValue(l_quantity#1))]\n"
    "Aggregate Attributes [2]: [sum(UnscaledValue(l_quantity#1))#9, "
    "avg(UnscaledValue(l_quantity#1))#10]\n"
    "Results [3]: [l_returnflag#2, MakeDecimal(sum(UnscaledValue(l_quantity#1))#9,17,2) AS sq#11, "
    "cast((avg(UnscaledValue(l_quantity#1))#10 / 100.0) as decimal(11,6)) AS aq#12]\n"
    "\n";

static char *print_plan_retyped(int precision, int scale, em_plan **out) {
    g_money_precision = precision;
    g_money_scale = scale;
    em_plan_parse_options opt = {.column_type = retype_money};
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(sum_avg_plan, strlen(sum_avg_plan), &opt, out, &err), &err);
    char *text = NULL;
    size_t n = 0;
    EM_ASSERT_OK(em_plan_print(*out, NULL, &text, &n, &err), &err);
    return text;
}

static void assert_contains(const char *text, const char *want) {
    if (!strstr(text, want))
        fail_msg("plan lacks\n  %s\nin\n%s", want, text);
}

/* DECIMAL(15,2): sum goes back to sum(x) with its isEmpty buffer carried through the
 * exchange into the final aggregate; avg to avg(x). */
static void test_sum_avg_unqualified(void **state) {
    (void)state;
    em_plan *plan = NULL;
    char *t = print_plan_retyped(15, 2, &plan);
    assert_contains(t, "Functions [2]: [partial_sum(l_quantity#1), partial_avg(l_quantity#1)]");
    assert_contains(t, "Aggregate Attributes [4]: [sum#3, isEmpty#13, sum#4, count#5]");
    assert_contains(t, "Results [5]: [l_returnflag#2, sum#6, isEmpty#14, sum#7, count#8]");
    assert_contains(t, "(4) Exchange\nInput [5]: [l_returnflag#2, sum#6, isEmpty#14, sum#7, "
                       "count#8]");
    assert_contains(t, "(5) HashAggregate [codegen id : 2]\nInput [5]: [l_returnflag#2, sum#6, "
                       "isEmpty#14, sum#7, count#8]");
    assert_contains(t, "Aggregate Attributes [2]: [sum(l_quantity#1)#9, avg(l_quantity#1)#10]");
    assert_contains(t, "Results [3]: [l_returnflag#2, sum(l_quantity#1)#9 AS sq#11, "
                       "avg(l_quantity#1)#10 AS aq#12]");
    assert_result_type(plan, "sq", em_type_decimal(25, 2));
    assert_result_type(plan, "aq", em_type_decimal(19, 6));
    /* the partial buffers as Spark's Sum and Average lay them out */
    const em_plan_node *partial = em_plan_node_by_id(plan, 3);
    assert_int_equal(partial->n_output, 5);
    assert_true(em_type_equal(partial->output[1]->type, em_type_decimal(25, 2)));
    assert_int_equal(partial->output[2]->type.id, EM_TYPE_BOOLEAN);
    assert_true(em_type_equal(partial->output[3]->type, em_type_decimal(25, 2)));
    assert_int_equal(partial->output[4]->type.id, EM_TYPE_LONG);
    free(t);
    em_plan_destroy(plan);
    g_money_precision = 15;
}

/* DECIMAL(8,3) still qualifies for both: constants follow the new type. */
static void test_sum_avg_still_qualified(void **state) {
    (void)state;
    em_plan *plan = NULL;
    char *t = print_plan_retyped(8, 3, &plan);
    assert_contains(t, "Aggregate Attributes [3]: [sum#3, sum#4, count#5]");
    assert_contains(t, "MakeDecimal(sum(UnscaledValue(l_quantity#1))#9,18,3) AS sq#11");
    assert_contains(t, "cast((avg(UnscaledValue(l_quantity#1))#10 / 1000.0) as decimal(12,7)) AS "
                       "aq#12");
    assert_result_type(plan, "sq", em_type_decimal(18, 3));
    assert_result_type(plan, "aq", em_type_decimal(12, 7));
    free(t);
    em_plan_destroy(plan);
    g_money_precision = 15;
    g_money_scale = 2;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_types_change_nothing),
        cmocka_unit_test(test_q1_types_every_line),
        cmocka_unit_test(test_q1_spark33_check_overflow),
        cmocka_unit_test(test_q1_small_precision_keeps_unscaled),
        cmocka_unit_test(test_q11_spark33),
        cmocka_unit_test(test_comparison_casts),
        cmocka_unit_test(test_sum_avg_unqualified),
        cmocka_unit_test(test_sum_avg_still_qualified),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
