/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan parser on text a user pastes (real ids, `L` suffixes, real
 * Location paths, [plan_id=123]), on broken text (errors name line, column and
 * what was expected; nothing crashes), and the model it builds from the
 * shared plans: node kinds, join types and build sides, codegen stages,
 * ReusedExchange and subquery links, expression trees, and printing in
 * another version's dialect.
 */
#include "test_plan_common.h"

static const char user_plan[] =
    "== Physical Plan ==\n"
    "* HashAggregate (5)\n"
    "+- Exchange (4)\n"
    "   +- * HashAggregate (3)\n"
    "      +- * Filter (2)\n"
    "         +- Scan parquet spark_catalog.default.lineitem (1)\n"
    "\n"
    "\n"
    "(1) Scan parquet spark_catalog.default.lineitem\n"
    "Output [3]: [l_orderkey#4711L, l_quantity#4715, l_shipdate#4721]\n"
    "Batched: true\n"
    "Location: InMemoryFileIndex [file:/data/tpch/lineitem]\n"
    "PushedFilters: [IsNotNull(l_shipdate), LessThanOrEqual(l_shipdate,1998-09-02)]\n"
    "ReadSchema: struct<l_orderkey:bigint,l_quantity:decimal(15,2),l_shipdate:date>\n"
    "\n"
    "(2) Filter [codegen id : 1]\n"
    "Input [3]: [l_orderkey#4711L, l_quantity#4715, l_shipdate#4721]\n"
    "Condition : (isnotnull(l_shipdate#4721) AND (l_shipdate#4721 <= 1998-09-02))\n"
    "\n"
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [3]: [l_orderkey#4711L, l_quantity#4715, l_shipdate#4721]\n"
    "Keys [1]: [l_orderkey#4711L]\n"
    "Functions [2]: [partial_sum(l_quantity#4715), partial_count(1)]\n"
    "Aggregate Attributes [3]: [sum#4800, isEmpty#4801, count#4802L]\n"
    "Results [4]: [l_orderkey#4711L, sum#4803, isEmpty#4804, count#4805L]\n"
    "\n"
    "(4) Exchange\n"
    "Input [4]: [l_orderkey#4711L, sum#4803, isEmpty#4804, count#4805L]\n"
    "Arguments: hashpartitioning(l_orderkey#4711L, 200), ENSURE_REQUIREMENTS, [plan_id=123]\n"
    "\n"
    "(5) HashAggregate [codegen id : 2]\n"
    "Input [4]: [l_orderkey#4711L, sum#4803, isEmpty#4804, count#4805L]\n"
    "Keys [1]: [l_orderkey#4711L]\n"
    "Functions [2]: [sum(l_quantity#4715), count(1)]\n"
    "Aggregate Attributes [2]: [sum(l_quantity#4715)#4806, count(1)#4807L]\n"
    "Results [3]: [l_orderkey#4711L, sum(l_quantity#4715)#4806 AS total#4808, count(1)#4807L AS "
    "n#4809L]\n"
    "\n";

static void test_user_text_real_ids(void **state) {
    (void)state;
    em_plan *plan;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(user_plan, strlen(user_plan), NULL, &plan, &err), &err);
    const em_plan_node *root = em_plan_root(plan);
    assert_int_equal(root->kind, EM_NODE_HASH_AGGREGATE);
    assert_int_equal(root->id, 5);
    assert_int_equal(root->codegen_id, 2);
    assert_true(root->whole_stage);
    assert_int_equal(root->n_output, 3);
    assert_int_equal(root->output[0]->kind, EM_EXPR_ATTR);
    assert_int_equal(root->output[0]->id, 4711);
    assert_true(root->output[0]->long_suffix);
    assert_int_equal(root->output[0]->type.id, EM_TYPE_LONG);
    assert_int_equal(root->output[1]->type.id, EM_TYPE_DECIMAL); /* sum(decimal(15,2)) */
    assert_int_equal(root->output[1]->type.precision, 25);
    assert_int_equal(root->output[1]->type.scale, 2);
    assert_int_equal(root->output[2]->type.id, EM_TYPE_LONG);
    assert_true(root->output[2]->long_suffix);

    const em_plan_node *scan = em_plan_node_by_id(plan, 1);
    assert_int_equal(scan->kind, EM_NODE_SCAN);
    assert_string_equal(scan->name, "Scan parquet");
    assert_string_equal(scan->table, "spark_catalog.default.lineitem");
    assert_string_equal(scan->table_name, "lineitem");
    assert_int_equal(scan->codegen_id, -1);
    const em_plan_field *loc = em_plan_node_field(scan, EM_FIELD_LOCATION);
    assert_non_null(loc);
    assert_false(loc->location_normalized);
    assert_int_equal(loc->n_paths, 1);
    assert_string_equal(loc->paths[0], "file:/data/tpch/lineitem");
    const em_plan_field *rs = em_plan_node_field(scan, EM_FIELD_READ_SCHEMA);
    assert_int_equal(rs->n_schema, 3);
    assert_string_equal(rs->schema[1].name, "l_quantity");
    assert_int_equal(rs->schema[1].type.precision, 15);

    const em_plan_node *ex = em_plan_node_by_id(plan, 4);
    const em_plan_field *args = em_plan_node_field(ex, EM_FIELD_ARGUMENTS);
    assert_int_equal(args->n_exprs, 3);
    assert_int_equal(args->exprs[0]->kind, EM_EXPR_CALL);
    assert_string_equal(args->exprs[0]->name, "hashpartitioning");
    assert_string_equal(args->exprs[0]->args[1]->text, "200");
    assert_int_equal(args->exprs[2]->kind, EM_EXPR_PLAN_ID);
    assert_int_equal(args->exprs[2]->plan_id, 123);

    const em_plan_node *partial = em_plan_node_by_id(plan, 3);
    const em_plan_field *fns = em_plan_node_field(partial, EM_FIELD_FUNCTIONS);
    assert_int_equal(fns->exprs[0]->kind, EM_EXPR_AGG);
    assert_int_equal(fns->exprs[0]->mode, EM_AGG_PARTIAL);
    assert_string_equal(fns->exprs[0]->name, "sum");

    /* no joins: every line from 3.4 prints this alike; the oldest is chosen and said so */
    assert_string_equal(em_shim_name(em_plan_shim(plan)), "3.4");
    assert_non_null(strstr(em_plan_shim_reason(plan), "chose the oldest"));

    char *out;
    size_t n;
    EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
    assert_int_equal(n, strlen(user_plan));
    assert_memory_equal(out, user_plan, n);
    free(out);
    em_plan_destroy(plan);
}

/* Parses text expected to fail and checks the message has each fragment. */
static void expect_error(const char *text, em_status code, const char *frag1, const char *frag2) {
    em_plan *plan = (em_plan *)0x1;
    em_error err = {0};
    em_plan_parse_options opt = {.source_name = "q.txt"};
    em_status st = em_plan_parse(text, strlen(text), &opt, &plan, &err);
    if (st == EM_OK)
        fail_msg("expected an error containing '%s'", frag1);
    assert_null(plan);
    assert_int_equal(st, code);
    if (!strstr(err.msg, frag1) || (frag2 && !strstr(err.msg, frag2)))
        fail_msg("message '%s' lacks '%s' / '%s'", err.msg, frag1, frag2 ? frag2 : "");
}

/* user_plan with one line replaced. */
static char *replace_line(const char *from, const char *to) {
    const char *at = strstr(user_plan, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - user_plan), n = strlen(user_plan) + strlen(to) + 1;
    char *s = malloc(n);
    memcpy(s, user_plan, pre);
    strcpy(s + pre, to);
    strcat(s, at + strlen(from));
    return s;
}

static void test_errors_name_line_and_column(void **state) {
    (void)state;
    /* line 18: the Filter's condition loses its last ')' */
    char *s =
        replace_line("(l_shipdate#4721 <= 1998-09-02))\n", "(l_shipdate#4721 <= 1998-09-02)\n");
    expect_error(s, EM_ERR_PARSE, "q.txt:18:", "expected ')'");
    free(s);
    s = replace_line("Output [3]: [l_orderkey", "Output [2]: [l_orderkey");
    expect_error(s, EM_ERR_PARSE, "q.txt:10:", "Output [2] lists 3 expressions");
    free(s);
    s = replace_line("(2) Filter [codegen id : 1]", "(7) Filter [codegen id : 1]");
    expect_error(s, EM_ERR_PARSE, "q.txt:16:", "no operator (7)");
    free(s);
    s = replace_line("      +- * Filter (2)", "         +- * Filter (2)");
    expect_error(s, EM_ERR_PARSE, "q.txt:5:", "indentation");
    free(s);
    s = replace_line("+- Exchange (4)", "+- Exchange 4");
    expect_error(s, EM_ERR_PARSE, "q.txt:3:", "(<operator id>)");
    free(s);
    s = replace_line("Arguments: hashpartitioning(l_orderkey#4711L, 200)",
                     "Arguments: hashpartitioning(l_orderkey#4711L, 200");
    expect_error(s, EM_ERR_PARSE, "q.txt:29:", "expected");
    free(s);
    s = replace_line("AS total#4808", "AS total");
    expect_error(s, EM_ERR_PARSE, "q.txt:36:", "name#id");
    free(s);
    s = replace_line("Functions [2]: [sum(l_quantity#4715), count(1)]",
                     "Functions [2]: [sum(l_quantity#4715), CASE WHEN x#1 THEN 1]");
    expect_error(s, EM_ERR_PARSE, "q.txt:34:", "END");
    free(s);
    /* the detail block of operator 5 is missing */
    const char *cut = strstr(user_plan, "(5) HashAggregate");
    s = strndup(user_plan, (size_t)(cut - user_plan));
    expect_error(s, EM_ERR_PARSE, "operator (5) HashAggregate has no detail block", NULL);
    free(s);
    expect_error("", EM_ERR_PARSE, "q.txt:1:1", "expected an operator tree");
    expect_error("== Physical Plan ==\n", EM_ERR_PARSE, "q.txt:2:1", "operator tree");
    expect_error("== Physical Plan ==\nReusedExchange (1)\n\n\n(1) ReusedExchange [Reuses "
                 "operator id: 9]\nOutput [1]: [a#1]\n\n",
                 EM_ERR_PARSE, "reuses operator id 9", NULL);
    /* a line every such block has: without it the operator would mean another thing */
    s = replace_line("Keys [1]: [l_orderkey#4711L]\nFunctions [2]: [partial_sum",
                     "Functions [2]: [partial_sum");
    expect_error(s, EM_ERR_PARSE, "q.txt:20:1", "operator (3) HashAggregate has no 'Keys' line");
    free(s);
    s = replace_line("Condition : (isnotnull(l_shipdate#4721) AND (l_shipdate#4721 <= 1998-09-02))\n",
                     "");
    expect_error(s, EM_ERR_PARSE, "q.txt:16:1", "operator (2) Filter has no 'Condition' line");
    free(s);
    s = replace_line("ReadSchema: struct<l_orderkey:bigint,l_quantity:decimal(15,2),l_shipdate:date>\n",
                     "");
    expect_error(s, EM_ERR_PARSE, "q.txt:9:1", "Scan parquet has no 'ReadSchema' line");
    free(s);
    /* an attribute the child does not produce (ids are global: it types, then would bind
     * to nothing) */
    s = replace_line("Keys [1]: [l_orderkey#4711L]\nFunctions [2]: [partial_sum",
                     "Keys [1]: [sum#4803]\nFunctions [2]: [partial_sum");
    expect_error(s, EM_ERR_PARSE, "q.txt:20:1",
                 "operator (3) HashAggregate: Keys reads sum#4803, which its child does not produce");
    free(s);
    s = replace_line("Condition : (isnotnull(l_shipdate#4721)",
                     "Condition : (isnotnull(count#4805L)");
    expect_error(s, EM_ERR_PARSE, "q.txt:16:1", "Condition reads count#4805");
    free(s);
    s = replace_line("sum(l_quantity#4715)#4806 AS total#4808", "l_shipdate#4721 AS total#4808");
    expect_error(s, EM_ERR_PARSE, "q.txt:31:1", "Results reads l_shipdate#4721");
    free(s);
    /* 3.2's three-argument CheckOverflow fits no supported line: say so */
    expect_error("== Physical Plan ==\n* Project (1)\n\n\n(1) Project [codegen id : 1]\nOutput "
                 "[1]: [CheckOverflow(x#1, DecimalType(12,2), true) AS y#2]\nInput [1]: [x#1]\n\n",
                 EM_ERR_UNSUPPORTED, "cannot tell which Spark version", "three arguments");
}

/* Valid plans the binding check must accept: a Generate's derived output
 * lacks the columns it adds (x#358 here), so what reads them is not judged;
 * a LocalTableScan of no columns prints no Arguments line. */
static const char generate_plan[] =
    "== Physical Plan ==\n"
    "* Project (6)\n"
    "+- * Generate (5)\n"
    "   +- * Project (4)\n"
    "      +- * Filter (3)\n"
    "         +- * ColumnarToRow (2)\n"
    "            +- Scan parquet  (1)\n"
    "\n"
    "\n"
    "(1) Scan parquet \n"
    "Output [3]: [n_nationkey#48L, n_name#49, n_regionkey#50L]\n"
    "Batched: true\n"
    "Location: InMemoryFileIndex [file:/tmp/tpch001/nation]\n"
    "PushedFilters: [IsNotNull(n_nationkey), LessThan(n_nationkey,3)]\n"
    "ReadSchema: struct<n_nationkey:bigint,n_name:string,n_regionkey:bigint>\n"
    "\n"
    "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [3]: [n_nationkey#48L, n_name#49, n_regionkey#50L]\n"
    "\n"
    "(3) Filter [codegen id : 1]\n"
    "Input [3]: [n_nationkey#48L, n_name#49, n_regionkey#50L]\n"
    "Condition : (isnotnull(n_nationkey#48L) AND (n_nationkey#48L < 3))\n"
    "\n"
    "(4) Project [codegen id : 1]\n"
    "Output [2]: [n_name#49, n_regionkey#50L]\n"
    "Input [3]: [n_nationkey#48L, n_name#49, n_regionkey#50L]\n"
    "\n"
    "(5) Generate [codegen id : 1]\n"
    "Input [2]: [n_name#49, n_regionkey#50L]\n"
    "Arguments: explode(array(1, 2, n_regionkey#50L)), [n_name#49], false, [x#358L]\n"
    "\n"
    "(6) Project [codegen id : 1]\n"
    "Output [2]: [n_name#49, (x#358L + 1) AS y#400L]\n"
    "Input [2]: [n_name#49, x#358L]\n";

static const char no_column_local_table[] =
    "== Physical Plan ==\n"
    "* HashAggregate (4)\n"
    "+- Exchange (3)\n"
    "   +- * HashAggregate (2)\n"
    "      +- * LocalTableScan (1)\n"
    "\n"
    "\n"
    "(1) LocalTableScan [codegen id : 1]\n"
    "Output: []\n"
    "\n"
    "(2) HashAggregate [codegen id : 1]\n"
    "Input: []\n"
    "Keys: []\n"
    "Functions [1]: [partial_count(1)]\n"
    "Aggregate Attributes [1]: [count#10L]\n"
    "Results [1]: [count#11L]\n"
    "\n"
    "(3) Exchange\n"
    "Input [1]: [count#11L]\n"
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=20]\n"
    "\n"
    "(4) HashAggregate [codegen id : 2]\n"
    "Input [1]: [count#11L]\n"
    "Keys: []\n"
    "Functions [1]: [count(1)]\n"
    "Aggregate Attributes [1]: [count(1)#9L]\n"
    "Results [1]: [count(1)#9L AS count(1)#12L]\n";

static void test_check_accepts_valid_plans(void **state) {
    (void)state;
    const char *texts[] = {generate_plan, no_column_local_table};
    for (int i = 0; i < 2; i++) {
        em_plan *plan = NULL;
        em_error err = {0};
        em_plan_parse_options opt = {.source_name = "q.txt", .shim = em_shim_for_version("3.5", NULL)};
        EM_ASSERT_OK(em_plan_parse(texts[i], strlen(texts[i]), &opt, &plan, &err), &err);
        em_plan_destroy(plan);
    }
}

static void test_location_forms(void **state) {
    (void)state;
    static const struct {
        const char *line;
        int n_paths;
        const char *first;
    } cases[] = {
        {"Location: InMemoryFileIndex(1 paths)[file:/data/tpch/lineitem]", 1,
         "file:/data/tpch/lineitem"},
        {"Location: InMemoryFileIndex(2 paths)[hdfs://nn/w/l/p=1, hdfs://nn/w/l/p=2]", 2,
         "hdfs://nn/w/l/p=1"},
        {"Location: InMemoryFileIndex [s3a://b/l/part-0.parquet, ... 12 entries]", 1,
         "s3a://b/l/part-0.parquet"},
        {"Location: InMemoryFileIndex []", 0, NULL},
        {"Location [not included in comparison]/{warehouse_dir}/lineitem]", 1, "lineitem"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s =
            replace_line("Location: InMemoryFileIndex [file:/data/tpch/lineitem]", cases[i].line);
        em_plan *plan;
        em_error err = {0};
        EM_ASSERT_OK(em_plan_parse(s, strlen(s), NULL, &plan, &err), &err);
        const em_plan_field *loc =
            em_plan_node_field(em_plan_node_by_id(plan, 1), EM_FIELD_LOCATION);
        assert_int_equal(loc->n_paths, cases[i].n_paths);
        if (cases[i].first)
            assert_string_equal(loc->paths[0], cases[i].first);
        assert_int_equal(loc->location_normalized, i == 4);
        char *out;
        size_t n;
        EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
        assert_int_equal(n, strlen(s));
        assert_memory_equal(out, s, n);
        free(out);
        em_plan_destroy(plan);
        free(s);
    }
}

static void test_hostile_input_never_crashes(void **state) {
    (void)state;
    static const char *const inputs[] = {
        "((((((((((((((((((((((((((((((((((((((((",
        "== Physical Plan ==\n* Filter (1)\n\n\n(1) Filter\nCondition : "
        "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
        "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
        "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
        "((((((((((((((((((((((((((((((((((((((((((((((((((((((((a#1\n\n",
        "== Physical Plan ==\n* Filter (99999999)\n",
        "== Physical Plan ==\nX (1)\n\n\n(1) X\nInput [1]: [a#1 IN (\n\n",
        "== Physical Plan ==\nX (1)\n\n\n(1) X\nArguments: [id=#]\n\n",
        "== Physical Plan ==\nX (1)\n\n\n(1) X\nInput [1]: [input[0, int\n\n",
        "== Physical Plan ==\nX (1)\n\n\n(1) X\nInput [1]: [Subquery x, [id=#\n\n",
        "\xff\xfe\x00\x01(1) \n",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        em_plan *plan = NULL;
        em_error err = {0};
        em_status st =
            em_plan_parse(inputs[i], strlen(inputs[i]) + (i == 8 ? 6 : 0), NULL, &plan, &err);
        if (st == EM_OK) {
            char *out;
            size_t n;
            EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
            free(out);
            em_plan_destroy(plan);
        } else {
            assert_true(err.msg[0] != '\0');
        }
    }
}

static void test_model_of_shared_plans(void **state) {
    (void)state;
    /* q11 (3.4): the subquery tree reuses broadcasts of the main tree */
    em_plan *plan = plan_test_parse_shared("3.4", 11);
    const em_plan_node *r26 = em_plan_node_by_id(plan, 26);
    assert_int_equal(r26->kind, EM_NODE_REUSED_EXCHANGE);
    assert_int_equal(r26->reuses_id, 7);
    assert_non_null(r26->reuses);
    assert_int_equal(r26->reuses->kind, EM_NODE_BROADCAST_EXCHANGE);
    assert_int_equal(r26->n_output, r26->reuses->n_output);
    for (int i = 0; i < r26->n_output; i++) {
        assert_true(r26->output[i]->type_known);
        assert_int_equal(r26->output[i]->type.id, r26->reuses->output[i]->type.id);
    }
    assert_int_equal(em_plan_n_subqueries(plan), 1);
    const em_plan_subquery *sq = em_plan_subquery_at(plan, 0);
    assert_int_equal(sq->expr->kind, EM_EXPR_SCALAR_SUBQUERY);
    assert_non_null(sq->root);
    assert_ptr_equal(sq->target, sq->root);
    assert_int_equal(sq->host->id, sq->host_id);
    em_plan_destroy(plan);

    /* q22 (4.0): a ReusedSubquery entry without a body links to the printed one */
    plan = plan_test_parse_shared("4.0", 22);
    assert_int_equal(em_plan_n_subqueries(plan), 2);
    const em_plan_subquery *s1 = em_plan_subquery_at(plan, 0), *s2 = em_plan_subquery_at(plan, 1);
    assert_null(s1->root);
    assert_true(s1->expr->reused);
    assert_ptr_equal(s1->target, s2->root);
    assert_int_equal(s2->host->kind, EM_NODE_SCAN);
    assert_string_equal(em_shim_name(em_plan_shim(plan)), "4.0");
    /* joins: type and build side from the tree label and the Join type field */
    const em_plan_node *j = em_plan_node_by_id(plan, 7);
    assert_int_equal(j->kind, EM_NODE_BROADCAST_HASH_JOIN);
    assert_int_equal(j->join_type, EM_JOIN_LEFT_ANTI);
    assert_int_equal(j->build_side, EM_BUILD_RIGHT);
    assert_int_equal(j->n_output, 3); /* anti join: the left side only */
    const em_plan_field *jc = em_plan_node_field(j, EM_FIELD_JOIN_CONDITION);
    assert_non_null(jc);
    assert_int_equal(jc->n_exprs, 0); /* None */
    em_plan_destroy(plan);

    /* q1 (3.3.0): expression trees */
    plan = plan_test_parse_shared("3.3.0", 1);
    const em_expr *c =
        em_plan_node_field(em_plan_node_by_id(plan, 3), EM_FIELD_CONDITION)->exprs[0];
    assert_int_equal(c->kind, EM_EXPR_BINARY);
    assert_int_equal(c->op, EM_OP_AND);
    assert_int_equal(c->args[0]->kind, EM_EXPR_CALL);
    assert_string_equal(c->args[0]->name, "isnotnull");
    assert_int_equal(c->args[1]->op, EM_OP_LE);
    assert_string_equal(c->args[1]->args[1]->text, "1998-09-02");
    const em_plan_field *sort = em_plan_node_field(em_plan_node_by_id(plan, 9), EM_FIELD_ARGUMENTS);
    assert_int_equal(sort->n_exprs, 3);
    assert_int_equal(sort->exprs[0]->kind, EM_EXPR_LIST);
    assert_int_equal(sort->exprs[0]->args[0]->kind, EM_EXPR_SORT_ORDER);
    assert_true(sort->exprs[0]->args[0]->ascending);
    assert_true(sort->exprs[0]->args[0]->nulls_first);
    const em_plan_field *results =
        em_plan_node_field(em_plan_node_by_id(plan, 7), EM_FIELD_RESULTS);
    const em_expr *avg = results->exprs[6]; /* cast((avg(...)#43 / 1.0) as decimal(14,4)) AS x */
    assert_int_equal(avg->kind, EM_EXPR_ALIAS);
    assert_string_equal(avg->name, "avg_qty");
    assert_int_equal(avg->args[0]->kind, EM_EXPR_CAST);
    assert_string_equal(avg->args[0]->args[0]->args[0]->name, "avg(UnscaledValue(l_quantity#1))");
    assert_int_equal(avg->args[0]->args[0]->args[1]->type.id, EM_TYPE_DOUBLE);
    em_plan_destroy(plan);
}

static void test_print_in_another_dialect(void **state) {
    (void)state;
    char path[4096];
    size_t len = 0;
    char *text = plan_test_shared("3.3.0", 3, &len, path, sizeof path);
    em_plan *plan;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(text, len, NULL, &plan, &err), &err);
    assert_string_equal(em_shim_name(em_plan_shim(plan)), "3.3.0");
    assert_false(em_plan_shim_reason(plan)[0] == '\0');
    const em_shim *s34 = em_shim_for_version("3.4", &err);
    assert_non_null(s34);
    char *out;
    size_t n;
    EM_ASSERT_OK(em_plan_print(plan, s34, &out, &n, &err), &err);
    /* 3.4 prints a Join type field and [plan_id=N]; 3.3.0 printed neither */
    assert_null(strstr(text, "Join type:"));
    assert_non_null(strstr(out, "Join type: Inner\nJoin condition: None"));
    assert_non_null(strstr(text, "[id=#"));
    assert_null(strstr(out, "ENSURE_REQUIREMENTS, [id=#"));
    assert_non_null(strstr(out, "ENSURE_REQUIREMENTS, [plan_id="));
    /* and the 3.4 text parses back with the 3.4 line detected as compatible */
    em_plan *again;
    em_plan_parse_options opt = {.shim = s34};
    EM_ASSERT_OK(em_plan_parse(out, n, &opt, &again, &err), &err);
    assert_non_null(strstr(em_plan_shim_reason(again), "given"));
    em_plan_destroy(again);
    free(out);
    em_plan_destroy(plan);
    free(text);
}

typedef struct literal_stats {
    int literals;
    int bad;
    int delivered;
} literal_stats;

static void literal_visit(const em_plan_node *node, const em_plan_field *field, const em_expr *e,
                          void *ctx) {
    (void)node;
    literal_stats *st = ctx;
    if (e->kind == EM_EXPR_IN_SUBQUERY || e->kind == EM_EXPR_RAW) {
        char *t = plan_test_expr_text(e);
        print_error("unexpected %s in a TPC-H plan: %s\n", em_expr_kind_name(e->kind), t);
        free(t);
        st->bad++;
    }
    if (e->kind != EM_EXPR_LITERAL)
        return;
    st->literals++;
    /* a structured form swallowed as text would keep its brackets or operators */
    if (strpbrk(e->text, "()[],") || strstr(e->text, " = ") || strstr(e->text, " AND ")) {
        print_error("literal swallowed structure: [%s]\n", e->text);
        st->bad++;
    }
    if (strcmp(e->text, "DELIVER IN PERSON") == 0 && field->kind == EM_FIELD_CONDITION) {
        assert_true(e->type_known);
        assert_int_equal(e->type.id, EM_TYPE_STRING);
        st->delivered++;
    }
}

static void test_literals_of_shared_plans(void **state) {
    (void)state;
    literal_stats st = {0};
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++)
        for (int q = 1; q <= 22; q++) {
            em_plan *plan = plan_test_parse_shared(plan_test_dirs[d], q);
            plan_test_walk(plan, literal_visit, &st);
            em_plan_destroy(plan);
        }
    assert_int_equal(st.bad, 0);
    assert_true(st.literals > 1000);
    assert_int_equal(st.delivered, 6); /* q19's filter in every line: " IN " inside a literal */
}

/* An executed adaptive plan: final and initial plans under AdaptiveSparkPlan. */
static const char aqe_plan[] =
    "== Physical Plan ==\n"
    "AdaptiveSparkPlan (12)\n"
    "+- == Final Plan ==\n"
    "   * HashAggregate (7)\n"
    "   +- AQEShuffleRead (6)\n"
    "      +- ShuffleQueryStage (5), Statistics(sizeInBytes=64.0 B, rowCount=4)\n"
    "         +- Exchange (4)\n"
    "            +- * HashAggregate (3)\n"
    "               +- * ColumnarToRow (2)\n"
    "                  +- Scan parquet spark_catalog.default.t (1)\n"
    "+- == Initial Plan ==\n"
    "   HashAggregate (11)\n"
    "   +- Exchange (10)\n"
    "      +- HashAggregate (9)\n"
    "         +- Scan parquet spark_catalog.default.t (8)\n"
    "\n"
    "\n"
    "(1) Scan parquet spark_catalog.default.t\n"
    "Output [2]: [k#10, v#11L]\n"
    "Batched: true\n"
    "Location: InMemoryFileIndex [file:/tmp/t]\n"
    "ReadSchema: struct<k:int,v:bigint>\n"
    "\n"
    "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [2]: [k#10, v#11L]\n"
    "\n"
    "(3) HashAggregate [codegen id : 1]\n"
    "Input [2]: [k#10, v#11L]\n"
    "Keys [1]: [k#10]\n"
    "Functions [1]: [partial_sum(v#11L)]\n"
    "Aggregate Attributes [1]: [sum#20L]\n"
    "Results [2]: [k#10, sum#21L]\n"
    "\n"
    "(4) Exchange\n"
    "Input [2]: [k#10, sum#21L]\n"
    "Arguments: hashpartitioning(k#10, 200), ENSURE_REQUIREMENTS, [plan_id=30]\n"
    "\n"
    "(5) ShuffleQueryStage\n"
    "Output [2]: [k#10, sum#21L]\n"
    "Arguments: 0\n"
    "\n"
    "(6) AQEShuffleRead\n"
    "Input [2]: [k#10, sum#21L]\n"
    "Arguments: coalesced\n"
    "\n"
    "(7) HashAggregate [codegen id : 2]\n"
    "Input [2]: [k#10, sum#21L]\n"
    "Keys [1]: [k#10]\n"
    "Functions [1]: [sum(v#11L)]\n"
    "Aggregate Attributes [1]: [sum(v#11L)#22L]\n"
    "Results [2]: [k#10, sum(v#11L)#22L AS s#23L]\n"
    "\n"
    "(8) Scan parquet spark_catalog.default.t\n"
    "Output [2]: [k#10, v#11L]\n"
    "Batched: true\n"
    "Location: InMemoryFileIndex [file:/tmp/t]\n"
    "ReadSchema: struct<k:int,v:bigint>\n"
    "\n"
    "(9) HashAggregate\n"
    "Input [2]: [k#10, v#11L]\n"
    "Keys [1]: [k#10]\n"
    "Functions [1]: [partial_sum(v#11L)]\n"
    "Aggregate Attributes [1]: [sum#20L]\n"
    "Results [2]: [k#10, sum#21L]\n"
    "\n"
    "(10) Exchange\n"
    "Input [2]: [k#10, sum#21L]\n"
    "Arguments: hashpartitioning(k#10, 200), ENSURE_REQUIREMENTS, [plan_id=24]\n"
    "\n"
    "(11) HashAggregate\n"
    "Input [2]: [k#10, sum#21L]\n"
    "Keys [1]: [k#10]\n"
    "Functions [1]: [sum(v#11L)]\n"
    "Aggregate Attributes [1]: [sum(v#11L)#22L]\n"
    "Results [2]: [k#10, sum(v#11L)#22L AS s#23L]\n"
    "\n"
    "(12) AdaptiveSparkPlan\n"
    "Output [2]: [k#10, s#23L]\n"
    "Arguments: isFinalPlan=true\n"
    "\n";

static void test_adaptive_plans(void **state) {
    (void)state;
    em_plan *plan;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(aqe_plan, strlen(aqe_plan), NULL, &plan, &err), &err);
    const em_plan_node *root = em_plan_root(plan);
    assert_int_equal(root->kind, EM_NODE_ADAPTIVE_SPARK_PLAN);
    assert_int_equal(root->n_children, 2);
    assert_int_equal(root->children[0]->kind, EM_NODE_AQE_SECTION);
    assert_string_equal(root->children[0]->name, "Final Plan");
    assert_string_equal(root->children[1]->name, "Initial Plan");
    const em_plan_node *exec = em_plan_exec_root(plan);
    assert_int_equal(exec->id, 7);
    assert_int_equal(exec->children[0]->kind, EM_NODE_AQE_SHUFFLE_READ);
    const em_plan_node *stage = em_plan_node_by_id(plan, 5);
    assert_int_equal(stage->kind, EM_NODE_SHUFFLE_QUERY_STAGE);
    assert_string_equal(stage->label_suffix, ", Statistics(sizeInBytes=64.0 B, rowCount=4)");
    assert_int_equal(stage->children[0]->kind, EM_NODE_EXCHANGE);
    assert_int_equal(exec->n_output, 2);
    assert_int_equal(exec->output[1]->type.id, EM_TYPE_LONG); /* sum(bigint) */
    assert_int_equal(root->n_output, 2);
    assert_int_equal(root->output[0]->type.id, EM_TYPE_INT);
    char *out;
    size_t n;
    EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
    assert_int_equal(n, strlen(aqe_plan));
    assert_memory_equal(out, aqe_plan, n);
    free(out);
    em_plan_destroy(plan);

    /* before execution the initial plan is the only child */
    static const char before[] = "== Physical Plan ==\n"
                                 "AdaptiveSparkPlan (3)\n"
                                 "+- Project (2)\n"
                                 "   +- Scan parquet  (1)\n"
                                 "\n"
                                 "\n"
                                 "(1) Scan parquet \n"
                                 "Output [1]: [a#1]\n"
                                 "Batched: true\n"
                                 "Location: InMemoryFileIndex [file:/x/a.parquet]\n"
                                 "ReadSchema: struct<a:string>\n"
                                 "\n"
                                 "(2) Project\n"
                                 "Output [1]: [upper(a#1) AS u#2]\n"
                                 "Input [1]: [a#1]\n"
                                 "\n"
                                 "(3) AdaptiveSparkPlan\n"
                                 "Output [1]: [u#2]\n"
                                 "Arguments: isFinalPlan=false\n"
                                 "\n";
    EM_ASSERT_OK(em_plan_parse(before, strlen(before), NULL, &plan, &err), &err);
    assert_int_equal(em_plan_exec_root(plan)->id, 2);
    assert_string_equal(em_plan_node_by_id(plan, 1)->table, "");
    assert_int_equal(em_plan_exec_root(plan)->output[0]->type.id, EM_TYPE_STRING);
    EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &n, &err), &err);
    assert_int_equal(n, strlen(before));
    assert_memory_equal(out, before, n);
    free(out);
    em_plan_destroy(plan);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_text_real_ids),
        cmocka_unit_test(test_errors_name_line_and_column),
        cmocka_unit_test(test_hostile_input_never_crashes),
        cmocka_unit_test(test_check_accepts_valid_plans),
        cmocka_unit_test(test_location_forms),
        cmocka_unit_test(test_model_of_shared_plans),
        cmocka_unit_test(test_print_in_another_dialect),
        cmocka_unit_test(test_adaptive_plans),
        cmocka_unit_test(test_literals_of_shared_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
