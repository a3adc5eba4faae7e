/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Type inference over the shared Spark plans.
 *
 * The strongest check uses Spark itself as the oracle: up to 3.3 every
 * decimal operation is printed as CheckOverflow(op, DecimalType(p,s)), i.e.
 * with the result type Spark computed. Stripping the promote_precision/cast
 * wrappers gives the operands' original types, and the 3.4+ rules
 * (em_shim_decimal_rule) must produce exactly the printed (p,s) for every one
 * of them. Then the result types of every query must agree across all six
 * Spark lines, although 3.4+ prints no type at all; every value expression
 * must be typed (except what only a LocalTableScan's unprinted rows define);
 * and a few results are pinned by hand.
 */
#include "shims/shim.h"
#include "test_plan_common.h"

/*
 * The operand's type before DecimalPrecision promoted it. A literal prints
 * after the promotion was folded into it (0.2 prints "0.2000" next to a
 * decimal(14,4)), so its original type is ambiguous: `alt` receives the type
 * of its value without trailing fraction zeros, tried as well.
 */
static bool original_type(const em_expr *e, em_type *out, em_type *alt) {
    *alt = (em_type){EM_TYPE_NULL, 0, 0};
    if (e->kind == EM_EXPR_LITERAL && e->type_known && e->type.id == EM_TYPE_DECIMAL) {
        *out = e->type;
        int scale = e->type.scale, prec = e->type.precision;
        const char *end = e->text + strlen(e->text);
        while (strchr(e->text, '.') && scale > 0 && end[-1] == '0') {
            end--;
            scale--;
            prec--;
        }
        *alt = em_type_decimal(prec > scale ? (prec ? prec : 1) : (scale ? scale : 1), scale);
        return true;
    }
    if (e->kind == EM_EXPR_CALL && strcmp(e->name, "promote_precision") == 0 && e->n_args == 1)
        e = e->args[0];
    if (e->kind == EM_EXPR_CAST && e->args[0]->type_known && e->args[0]->type.id == EM_TYPE_DECIMAL)
        e = e->args[0];
    if (!e->type_known || e->type.id != EM_TYPE_DECIMAL)
        return false;
    *out = e->type;
    return true;
}

typedef struct overflow_stats {
    int checked;
    int wrong;
    bool has_local_scan; /* its attributes have no printed types */
} overflow_stats;

static bool has_local_table_scan(const em_plan *plan);

static void check_overflow_visit(const em_plan_node *node, const em_plan_field *field,
                                 const em_expr *e, void *ctx) {
    (void)node;
    (void)field;
    overflow_stats *st = ctx;
    if (e->kind != EM_EXPR_CALL || strcmp(e->name, "CheckOverflow") != 0 || e->n_args < 2 ||
        e->args[0]->kind != EM_EXPR_BINARY || e->args[1]->kind != EM_EXPR_TYPE)
        return;
    em_type l, r, l2, r2;
    const em_expr *op = e->args[0];
    if (!original_type(op->args[0], &l, &l2) || !original_type(op->args[1], &r, &r2)) {
        if (st->has_local_scan)
            return;
        char *t = plan_test_expr_text(e);
        print_error("operands of %s are not typed decimals\n", t);
        free(t);
        st->wrong++;
        return;
    }
    st->checked++;
    em_type want = e->args[1]->cast_type;
    em_type ls[2] = {l, l2}, rs[2] = {r, r2};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            em_type got;
            if (ls[i].id == EM_TYPE_DECIMAL && rs[j].id == EM_TYPE_DECIMAL &&
                em_shim_decimal_rule(op->op, ls[i], rs[j], true, &got) &&
                got.precision == want.precision && got.scale == want.scale)
                return;
        }
    char *t = plan_test_expr_text(e);
    print_error("the decimal rules do not give decimal(%d,%d) for %s\n", want.precision, want.scale,
                t);
    free(t);
    st->wrong++;
}

static void test_decimal_rules_match_spark33_check_overflow(void **state) {
    (void)state;
    overflow_stats st = {0};
    for (int d = 0; d < 2; d++) /* 3.3.0 and 3.3 print CheckOverflow */
        for (int q = 1; q <= 22; q++) {
            em_plan *plan = plan_test_parse_shared(plan_test_dirs[d], q);
            st.has_local_scan = has_local_table_scan(plan);
            plan_test_walk(plan, check_overflow_visit, &st);
            em_plan_destroy(plan);
        }
    print_message("%d CheckOverflow types reproduced by the decimal rules\n", st.checked);
    assert_int_equal(st.wrong, 0);
    assert_true(st.checked >= 100);
}

static void format_types(const em_plan_node *root, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < root->n_output && used < cap; i++) {
        char t[32] = "?";
        if (root->output[i]->type_known) {
            em_type ty = root->output[i]->type;
            if (ty.id == EM_TYPE_DECIMAL)
                snprintf(t, sizeof t, "decimal(%d,%d)", ty.precision, ty.scale);
            else
                snprintf(t, sizeof t, "%d", (int)ty.id);
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "," : "", t);
    }
}

static void test_result_types_agree_across_versions(void **state) {
    (void)state;
    for (int q = 1; q <= 22; q++) {
        char first[2048] = "", cur[2048];
        for (int d = 0; d < PLAN_TEST_N_DIRS; d++) {
            em_plan *plan = plan_test_parse_shared(plan_test_dirs[d], q);
            const em_plan_node *root = em_plan_root(plan);
            assert_true(root->n_output > 0);
            format_types(root, cur, sizeof cur);
            if (has_local_table_scan(plan)) {
                /* q6 folds to an empty LocalTableScan whose types only 3.3 prints */
                em_plan_destroy(plan);
                continue;
            }
            if (!first[0])
                snprintf(first, sizeof first, "%s", cur);
            else if (strcmp(first, cur) != 0)
                fail_msg("q%d: result types differ: spark-%s [%s] vs spark-%s [%s]", q,
                         plan_test_dirs[0], first, plan_test_dirs[d], cur);
            em_plan_destroy(plan);
        }
    }
}

typedef struct untyped_stats {
    int values;
    int untyped;
    int untyped_local; /* depends on a LocalTableScan's attributes */
    bool has_local_scan;
} untyped_stats;

static bool is_value_expr(const em_expr *e) {
    if (e->kind == EM_EXPR_LIST || e->kind == EM_EXPR_PLAN_ID || e->kind == EM_EXPR_TYPE)
        return false;
    if (e->kind == EM_EXPR_CALL)
        return strcmp(e->name, "hashpartitioning") != 0 &&
               strcmp(e->name, "rangepartitioning") != 0 &&
               strcmp(e->name, "HashedRelationBroadcastMode") != 0 && strcmp(e->name, "List") != 0;
    return true;
}

static void untyped_visit(const em_plan_node *node, const em_plan_field *field, const em_expr *e,
                          void *ctx) {
    untyped_stats *st = ctx;
    if (field->kind == EM_FIELD_PUSHED_FILTERS || !is_value_expr(e))
        return;
    st->values++;
    if (e->type_known)
        return;
    if (st->has_local_scan) {
        st->untyped_local++;
        return;
    }
    char *t = plan_test_expr_text(e);
    print_error("operator (%d) %s: untyped %s: %s\n", node->id, node->name,
                em_expr_kind_name(e->kind), t);
    free(t);
    st->untyped++;
}

static bool has_local_table_scan(const em_plan *plan) {
    if (!plan)
        return false;
    for (int id = 1; id <= em_plan_max_id(plan); id++) {
        const em_plan_node *n = em_plan_node_by_id(plan, id);
        if (n && n->kind == EM_NODE_LOCAL_TABLE_SCAN)
            return true;
    }
    return false;
}

static void test_every_value_expression_is_typed(void **state) {
    (void)state;
    untyped_stats total = {0};
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++)
        for (int q = 1; q <= 22; q++) {
            em_plan *plan = plan_test_parse_shared(plan_test_dirs[d], q);
            untyped_stats st = {.has_local_scan = has_local_table_scan(plan)};
            plan_test_walk(plan, untyped_visit, &st);
            total.values += st.values;
            total.untyped += st.untyped;
            total.untyped_local += st.untyped_local;
            /* every operator knows its output */
            for (int id = 1; id <= em_plan_max_id(plan); id++) {
                const em_plan_node *n = em_plan_node_by_id(plan, id);
                if (n)
                    assert_true(n->n_output > 0);
            }
            em_plan_destroy(plan);
        }
    print_message("%d value expressions, %d untyped (%d fed only by LocalTableScan rows, whose "
                  "types are not printed)\n",
                  total.values, total.untyped + total.untyped_local, total.untyped_local);
    assert_int_equal(total.untyped, 0);
    assert_true(total.values > 10000);
}

static void assert_decimal(const em_expr *e, int p, int s) {
    if (!e->type_known || e->type.id != EM_TYPE_DECIMAL || e->type.precision != p ||
        e->type.scale != s) {
        char *t = plan_test_expr_text(e);
        fail_msg("%s: expected decimal(%d,%d), got id %d (%d,%d)%s", t, p, s, (int)e->type.id,
                 e->type.precision, e->type.scale, e->type_known ? "" : " unknown");
    }
}

static void assert_type(const em_expr *e, em_type_id id) {
    if (!e->type_known || e->type.id != id) {
        char *t = plan_test_expr_text(e);
        fail_msg("%s: expected type id %d, got %d%s", t, (int)id, (int)e->type.id,
                 e->type_known ? "" : " (unknown)");
    }
}

static void test_q1_types_pinned(void **state) {
    (void)state;
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++) {
        em_plan *plan = plan_test_parse_shared(plan_test_dirs[d], 1);
        const em_plan_node *root = em_plan_root(plan);
        assert_int_equal(root->n_output, 10);
        assert_type(root->output[0], EM_TYPE_STRING); /* l_returnflag */
        assert_decimal(root->output[2], 20, 0);       /* sum(l_quantity) */
        assert_decimal(root->output[3], 20, 0);       /* sum(l_extendedprice) */
        assert_decimal(root->output[4], 32, 0);       /* sum(price * (1 - disc)) */
        assert_decimal(root->output[5], 38, 0);       /* ... * (1 + tax): 34 + 10 > 38 */
        assert_decimal(root->output[6], 14, 4);       /* avg(l_quantity) */
        assert_type(root->output[9], EM_TYPE_LONG);   /* count(*) */
        /* the partial aggregate's buffers: decimal sum -> sum, isEmpty; avg -> sum, count */
        const em_plan_node *partial = em_plan_node_by_id(plan, 5);
        assert_int_equal(partial->kind, EM_NODE_HASH_AGGREGATE);
        const em_plan_field *attrs = em_plan_node_field(partial, EM_FIELD_AGG_ATTRS);
        assert_int_equal(attrs->n_exprs, 15);
        assert_decimal(attrs->exprs[0], 20, 0);
        assert_type(attrs->exprs[1], EM_TYPE_BOOLEAN);
        assert_type(attrs->exprs[8], EM_TYPE_DOUBLE); /* avg(UnscaledValue(x)): double sum */
        assert_type(attrs->exprs[9], EM_TYPE_LONG);
        const em_plan_field *res = em_plan_node_field(partial, EM_FIELD_RESULTS);
        assert_decimal(res->exprs[2], 20, 0);
        assert_type(res->exprs[16], EM_TYPE_LONG);
        em_plan_destroy(plan);
    }
}

static void brand_visit(const em_plan_node *node, const em_plan_field *field, const em_expr *e,
                        void *ctx) {
    (void)node;
    if (field->kind != EM_FIELD_CONDITION || e->kind != EM_EXPR_NOT ||
        e->args[0]->kind != EM_EXPR_BINARY)
        return;
    const em_expr *lit = e->args[0]->args[1];
    if (lit->kind == EM_EXPR_LITERAL && strcmp(lit->text, "Brand#9") == 0) {
        assert_type(lit, EM_TYPE_STRING);
        assert_type(e->args[0]->args[0], EM_TYPE_STRING); /* p_brand */
        (*(int *)ctx)++;
    }
}

static void test_subquery_and_date_types(void **state) {
    (void)state;
    /* q22: cast(c_acctbal as decimal(14,4)) > scalar subquery of avg -> decimal(14,4) */
    em_plan *plan = plan_test_parse_shared("master", 22);
    const em_plan_node *filter = em_plan_node_by_id(plan, 3);
    const em_expr *cond = em_plan_node_field(filter, EM_FIELD_CONDITION)->exprs[0];
    assert_int_equal(cond->kind, EM_EXPR_BINARY);
    assert_int_equal(cond->op, EM_OP_AND);
    const em_expr *cmp = cond->args[1];
    assert_int_equal(cmp->op, EM_OP_GT);
    assert_int_equal(cmp->args[1]->kind, EM_EXPR_SCALAR_SUBQUERY);
    assert_true(cmp->args[1]->reused);
    assert_decimal(cmp->args[1], 14, 4);
    assert_non_null(cmp->args[1]->subquery);
    assert_int_equal(cmp->args[1]->subquery->id, 20);
    /* IN list literals take the value's type: substring(...) IN (13,31,...) are strings */
    const em_expr *in = cond->args[0]->args[1];
    assert_int_equal(in->kind, EM_EXPR_IN);
    assert_type(in->args[1], EM_TYPE_STRING);
    em_plan_destroy(plan);

    /* q1: (l_shipdate <= 1998-09-02) compares dates */
    plan = plan_test_parse_shared("3.4", 1);
    cond = em_plan_node_field(em_plan_node_by_id(plan, 3), EM_FIELD_CONDITION)->exprs[0];
    assert_type(cond->args[1]->args[1], EM_TYPE_DATE);
    em_plan_destroy(plan);

    /* q16: the renumbered literal 'Brand#45' (printed Brand#9) is a string, not an attribute */
    plan = plan_test_parse_shared("3.4", 16);
    int found = 0;
    plan_test_walk(plan, brand_visit, &found);
    assert_int_equal(found, 1);
    em_plan_destroy(plan);
}

/* Expand, Window, CASE and coalesce over decimals: rules beyond what TPC-H prints. */
static const char window_plan[] =
    "== Physical Plan ==\n"
    "Window (5)\n"
    "+- * Sort (4)\n"
    "   +- * Expand (3)\n"
    "      +- * ColumnarToRow (2)\n"
    "         +- Scan parquet spark_catalog.default.t (1)\n"
    "\n"
    "\n"
    "(1) Scan parquet spark_catalog.default.t\n"
    "Output [4]: [k#1, a#2, b#3, s#4]\n"
    "Batched: true\n"
    "Location: InMemoryFileIndex [file:/w/t]\n"
    "ReadSchema: struct<k:int,a:decimal(12,2),b:decimal(10,0),s:string>\n"
    "\n"
    "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [4]: [k#1, a#2, b#3, s#4]\n"
    "\n"
    "(3) Expand [codegen id : 1]\n"
    "Input [4]: [k#1, a#2, b#3, s#4]\n"
    "Arguments: [[null, CASE WHEN (k#1 > 0) THEN a#2 ELSE b#3 END, coalesce(s#4, x), 0], [k#1, "
    "(a#2 * b#3), s#4, 1]], [k#5, v#6, s#7, spark_grouping_id#8L]\n"
    "\n"
    "(4) Sort [codegen id : 1]\n"
    "Input [4]: [k#5, v#6, s#7, spark_grouping_id#8L]\n"
    "Arguments: [k#5 ASC NULLS FIRST, v#6 DESC NULLS LAST], false, 0\n"
    "\n"
    "(5) Window\n"
    "Input [4]: [k#5, v#6, s#7, spark_grouping_id#8L]\n"
    "Arguments: [rank(v#6) windowspecdefinition(k#5, v#6 DESC NULLS LAST, "
    "specifiedwindowframe(RowFrame, unboundedpreceding$(), currentrow$())) AS rk#9, sum(v#6) "
    "windowspecdefinition(k#5, specifiedwindowframe(RowFrame, unboundedpreceding$(), "
    "unboundedfollowing$())) AS total#10], [k#5], [v#6 DESC NULLS LAST]\n"
    "\n";

static void test_expand_window_case_types(void **state) {
    (void)state;
    em_plan *plan;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(window_plan, strlen(window_plan), NULL, &plan, &err), &err);
    const em_plan_node *expand = em_plan_node_by_id(plan, 3);
    assert_int_equal(expand->n_output, 4);
    assert_type(expand->output[0], EM_TYPE_INT); /* null in the first projection, k#1 next */
    assert_decimal(expand->output[1], 23, 2);    /* wider of decimal(12,2) and decimal(23,2) */
    assert_type(expand->output[2], EM_TYPE_STRING);
    assert_type(expand->output[3], EM_TYPE_LONG); /* the `L` of spark_grouping_id#8L */
    const em_expr *proj = em_plan_node_field(expand, EM_FIELD_ARGUMENTS)->exprs[0];
    const em_expr *cw = proj->args[0]->args[1];
    assert_int_equal(cw->kind, EM_EXPR_CASE);
    assert_decimal(cw, 12, 2); /* CASE of decimal(12,2) and decimal(10,0) */
    assert_type(proj->args[0]->args[2]->args[1], EM_TYPE_STRING); /* coalesce(s, x): x a string */
    const em_plan_node *win = em_plan_root(plan);
    assert_int_equal(win->kind, EM_NODE_WINDOW);
    assert_int_equal(win->n_output, 6);
    assert_string_equal(win->output[4]->name, "rk");
    assert_int_equal(win->output[4]->args[0]->kind, EM_EXPR_WINDOW);
    assert_type(win->output[4], EM_TYPE_INT);
    assert_decimal(win->output[5], 33, 2); /* sum(decimal(23,2)) */
    em_plan_destroy(plan);
}

/* Spark 3.3+ merges scalar subqueries over one table into a struct read by field. */
static const char merged_plan[] =
    "== Physical Plan ==\n"
    "* Project (3)\n"
    "+- * ColumnarToRow (2)\n"
    "   +- Scan parquet spark_catalog.default.reason (1)\n"
    "\n"
    "\n"
    "(1) Scan parquet spark_catalog.default.reason\n"
    "Output [1]: [r_reason_sk#1]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/reason]\n"
    "PushedFilters: [IsNotNull(r_reason_sk), EqualTo(r_reason_sk,1)]\n"
    "ReadSchema: struct<r_reason_sk:int>\n"
    "\n"
    "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [1]: [r_reason_sk#1]\n"
    "\n"
    "(3) Project [codegen id : 1]\n"
    "Output [1]: [CASE WHEN (Subquery scalar-subquery#2, [id=#3].count(1) > 62316685) THEN "
    "ReusedSubquery Subquery scalar-subquery#2, [id=#3].avg(ss_ext_discount_amt) ELSE "
    "ReusedSubquery Subquery scalar-subquery#2, [id=#3].avg(ss_net_paid) END AS bucket1#4]\n"
    "Input [1]: [r_reason_sk#1]\n"
    "\n"
    "===== Subqueries =====\n"
    "\n"
    "Subquery:1 Hosting operator id = 3 Hosting Expression = Subquery scalar-subquery#2, [id=#3]\n"
    "* Project (11)\n"
    "+- * HashAggregate (10)\n"
    "   +- Exchange (9)\n"
    "      +- * HashAggregate (8)\n"
    "         +- * Project (7)\n"
    "            +- * Filter (6)\n"
    "               +- * ColumnarToRow (5)\n"
    "                  +- Scan parquet spark_catalog.default.store_sales (4)\n"
    "\n"
    "\n"
    "(4) Scan parquet spark_catalog.default.store_sales\n"
    "Output [3]: [ss_quantity#5, ss_ext_discount_amt#6, ss_net_paid#7]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/store_sales]\n"
    "PushedFilters: [IsNotNull(ss_quantity), GreaterThanOrEqual(ss_quantity,1)]\n"
    "ReadSchema: "
    "struct<ss_quantity:int,ss_ext_discount_amt:decimal(7,2),ss_net_paid:decimal(7,2)>\n"
    "\n"
    "(5) ColumnarToRow [codegen id : 1]\n"
    "Input [3]: [ss_quantity#5, ss_ext_discount_amt#6, ss_net_paid#7]\n"
    "\n"
    "(6) Filter [codegen id : 1]\n"
    "Input [3]: [ss_quantity#5, ss_ext_discount_amt#6, ss_net_paid#7]\n"
    "Condition : (isnotnull(ss_quantity#5) AND (ss_quantity#5 >= 1))\n"
    "\n"
    "(7) Project [codegen id : 1]\n"
    "Output [2]: [ss_ext_discount_amt#6, ss_net_paid#7]\n"
    "Input [3]: [ss_quantity#5, ss_ext_discount_amt#6, ss_net_paid#7]\n"
    "\n"
    "(8) HashAggregate [codegen id : 1]\n"
    "Input [2]: [ss_ext_discount_amt#6, ss_net_paid#7]\n"
    "Keys: []\n"
    "Functions [3]: [partial_count(1), partial_avg(UnscaledValue(ss_ext_discount_amt#6)), "
    "partial_avg(UnscaledValue(ss_net_paid#7))]\n"
    "Aggregate Attributes [5]: [count#8, sum#9, count#10, sum#11, count#12]\n"
    "Results [5]: [count#13, sum#14, count#15, sum#16, count#17]\n"
    "\n"
    "(9) Exchange\n"
    "Input [5]: [count#13, sum#14, count#15, sum#16, count#17]\n"
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=1]\n"
    "\n"
    "(10) HashAggregate [codegen id : 2]\n"
    "Input [5]: [count#13, sum#14, count#15, sum#16, count#17]\n"
    "Keys: []\n"
    "Functions [3]: [count(1), avg(UnscaledValue(ss_ext_discount_amt#6)), "
    "avg(UnscaledValue(ss_net_paid#7))]\n"
    "Aggregate Attributes [3]: [count(1)#18, avg(UnscaledValue(ss_ext_discount_amt#6))#19, "
    "avg(UnscaledValue(ss_net_paid#7))#20]\n"
    "Results [3]: [count(1)#18 AS count(1)#21, cast((avg(UnscaledValue(ss_ext_discount_amt#6))#19 "
    "/ 100.0) as decimal(11,6)) AS avg(ss_ext_discount_amt)#22, "
    "cast((avg(UnscaledValue(ss_net_paid#7))#20 / 100.0) as decimal(11,6)) AS "
    "avg(ss_net_paid)#23]\n"
    "\n"
    "(11) Project [codegen id : 2]\n"
    "Output [1]: [named_struct(count(1), count(1)#21, avg(ss_ext_discount_amt), "
    "avg(ss_ext_discount_amt)#22, avg(ss_net_paid), avg(ss_net_paid)#23) AS mergedValue#24]\n"
    "Input [3]: [count(1)#21, avg(ss_ext_discount_amt)#22, avg(ss_net_paid)#23]\n"
    "\n"
    "\n"
    "Subquery:2 Hosting operator id = 3 Hosting Expression = ReusedSubquery Subquery "
    "scalar-subquery#2, [id=#3]\n"
    "\n";

static void test_merged_scalar_subquery_fields(void **state) {
    (void)state;
    em_plan *plan;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(merged_plan, strlen(merged_plan), NULL, &plan, &err), &err);
    const em_expr *bucket = em_plan_root(plan)->output[0];
    assert_int_equal(bucket->kind, EM_EXPR_ALIAS);
    const em_expr *cw = bucket->args[0];
    assert_int_equal(cw->kind, EM_EXPR_CASE);
    const em_expr *count = cw->args[0]->args[0];
    assert_int_equal(count->kind, EM_EXPR_FIELD);
    assert_string_equal(count->name, "count(1)");
    assert_int_equal(count->args[0]->kind, EM_EXPR_SCALAR_SUBQUERY);
    assert_non_null(count->args[0]->subquery);
    assert_int_equal(count->args[0]->subquery->id, 11);
    assert_type(count, EM_TYPE_LONG);
    assert_type(cw->args[0]->args[1], EM_TYPE_LONG); /* 62316685 beside a bigint */
    assert_decimal(cw->args[1], 11, 6);              /* .avg(ss_ext_discount_amt) */
    assert_true(cw->args[1]->args[0]->reused);
    assert_decimal(bucket, 11, 6);
    assert_ptr_equal(em_plan_subquery_at(plan, 1)->target, em_plan_subquery_at(plan, 0)->root);
    char *out;
    size_t n;
    EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
    assert_int_equal(n, strlen(merged_plan));
    assert_memory_equal(out, merged_plan, n);
    free(out);
    em_plan_destroy(plan);
}

/* --retype: money columns as the standard schema's decimal(15,2). */
static bool standard_money(void *ctx, const em_plan_node *leaf, const char *column, em_type *type) {
    (*(int *)ctx)++;
    (void)leaf;
    static const char *const money[] = {"l_quantity", "l_extendedprice", "l_discount", "l_tax"};
    for (size_t i = 0; i < sizeof money / sizeof money[0]; i++)
        if (strcmp(column, money[i]) == 0) {
            *type = em_type_decimal(15, 2);
            return true;
        }
    return false;
}

static em_plan *parse_retyped(const char *dir, int q, int *calls) {
    char path[4096];
    size_t len = 0;
    char *text = plan_test_shared(dir, q, &len, path, sizeof path);
    em_plan_parse_options opt = {.column_type = standard_money, .column_type_ctx = calls};
    em_plan *plan = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(text, len, &opt, &plan, &err), &err);
    free(text);
    return plan;
}

static void test_column_type_override(void **state) {
    (void)state;
    int calls = 0;
    em_plan *plan = parse_retyped("master", 1, &calls);
    assert_true(calls >= 7); /* the scan's seven columns (per typing pass) */
    const em_plan_node *root = em_plan_root(plan);
    assert_decimal(root->output[2], 25, 2); /* sum(decimal(15,2)) */
    assert_decimal(root->output[4], 38, 4); /* sum((15,2) * (1 - (15,2)) = (32,4)) */
    em_plan_destroy(plan);
    /* q6: the LocalTableScan's columns get types only this way */
    calls = 0;
    plan = parse_retyped("4.0", 6, &calls);
    assert_true(calls >= 2);
    assert_decimal(em_plan_root(plan)->output[0], 38, 4); /* sum((15,2) * (15,2) = (31,4)) */
    /* decimal arithmetic without CheckOverflow rules 3.3 out once the types are known */
    assert_string_equal(em_shim_name(em_plan_shim(plan)), "3.4");
    em_plan_destroy(plan);
}

/* A partitioned fact table: its partition column is not in ReadSchema. */
static const char partitioned_plan[] =
    "== Physical Plan ==\n"
    "* Project (7)\n"
    "+- * BroadcastHashJoin Inner BuildRight (6)\n"
    "   :- * ColumnarToRow (2)\n"
    "   :  +- Scan parquet spark_catalog.default.store_sales (1)\n"
    "   +- BroadcastExchange (5)\n"
    "      +- * ColumnarToRow (4)\n"
    "         +- Scan parquet spark_catalog.default.date_dim (3)\n"
    "\n"
    "\n"
    "(1) Scan parquet spark_catalog.default.store_sales\n"
    "Output [2]: [ss_net_paid#1, ss_sold_date_sk#2]\n"
    "Batched: true\n"
    "Location: InMemoryFileIndex []\n"
    "PartitionFilters: [isnotnull(ss_sold_date_sk#2), (ss_sold_date_sk#2 >= 2451911)]\n"
    "ReadSchema: struct<ss_net_paid:decimal(7,2)>\n"
    "\n"
    "(2) ColumnarToRow [codegen id : 2]\n"
    "Input [2]: [ss_net_paid#1, ss_sold_date_sk#2]\n"
    "\n"
    "(3) Scan parquet spark_catalog.default.date_dim\n"
    "Output [2]: [d_date_sk#3, d_year#4]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/date_dim]\n"
    "ReadSchema: struct<d_date_sk:int,d_year:int>\n"
    "\n"
    "(4) ColumnarToRow [codegen id : 1]\n"
    "Input [2]: [d_date_sk#3, d_year#4]\n"
    "\n"
    "(5) BroadcastExchange\n"
    "Input [2]: [d_date_sk#3, d_year#4]\n"
    "Arguments: HashedRelationBroadcastMode(List(cast(input[0, int, true] as bigint)),false), "
    "[plan_id=1]\n"
    "\n"
    "(6) BroadcastHashJoin [codegen id : 2]\n"
    "Left keys [1]: [ss_sold_date_sk#2]\n"
    "Right keys [1]: [d_date_sk#3]\n"
    "Join type: Inner\n"
    "Join condition: None\n"
    "\n"
    "(7) Project [codegen id : 2]\n"
    "Output [3]: [ss_net_paid#1, d_year#4, (ss_sold_date_sk#2 + 1) AS next#5]\n"
    "Input [4]: [ss_net_paid#1, ss_sold_date_sk#2, d_date_sk#3, d_year#4]\n"
    "\n";

static void test_partition_column_from_join_keys(void **state) {
    (void)state;
    em_plan *plan;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(partitioned_plan, strlen(partitioned_plan), NULL, &plan, &err),
                 &err);
    const em_plan_node *scan = em_plan_node_by_id(plan, 1);
    assert_type(scan->output[1], EM_TYPE_INT); /* from d_date_sk, its join partner */
    const em_plan_field *pf = em_plan_node_field(scan, EM_FIELD_PARTITION_FILTERS);
    assert_type(pf->exprs[1]->args[0], EM_TYPE_INT);
    const em_plan_node *root = em_plan_root(plan);
    assert_decimal(root->output[0], 7, 2);
    assert_type(root->output[2], EM_TYPE_INT);
    em_plan_destroy(plan);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decimal_rules_match_spark33_check_overflow),
        cmocka_unit_test(test_result_types_agree_across_versions),
        cmocka_unit_test(test_every_value_expression_is_typed),
        cmocka_unit_test(test_q1_types_pinned),
        cmocka_unit_test(test_subquery_and_date_types),
        cmocka_unit_test(test_expand_window_case_types),
        cmocka_unit_test(test_merged_scalar_subquery_fields),
        cmocka_unit_test(test_column_type_override),
        cmocka_unit_test(test_partition_column_from_join_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
