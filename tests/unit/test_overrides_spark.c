/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The overrides on structured plans (em_plan_read_json over the plugin's JSON
 * in tests/data/spark-json), host Spark: a node runs natively only when every
 * expression it holds and every column it outputs has the type Spark resolved
 * (Ember's inferred type equal to Spark's) and an evalMode the native engine
 * follows (the session's ANSI setting; never TRY). Each test reads a real
 * plan, then the same plan with one "type" or "evalMode" changed in the JSON,
 * and checks the node flips to Spark with a reason naming the expression.
 * Also what stays Spark's inside Spark whatever the rules say: unions and
 * cartesian products, columns of types Ember holds no vector for, and Window
 * nodes whose expressions the Window operator does not read.
 */
#include <stdlib.h>
#include <string.h>

#include "ember/overrides.h"
#include "ember/spark.h"
#include "test_plan_common.h"

static char *json_text(const char *name, size_t *len) {
    const char *src = getenv("EMBER_SOURCE");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/spark-json/%s", src && *src ? src : "..", name);
    char *text = plan_test_read(path, len);
    if (!text)
        fail_msg("cannot read %s", path);
    return text;
}

/* text with every `from` replaced by `to`; fails when there is none. */
static char *replace_all(const char *text, const char *from, const char *to) {
    size_t nf = strlen(from), nt = strlen(to), n = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + nf, from))
        n++;
    if (n == 0)
        fail_msg("the plan holds no %s", from);
    char *out = malloc(strlen(text) + n * (nt > nf ? nt - nf : 0) + 1);
    assert_non_null(out);
    char *w = out;
    const char *r = text;
    for (const char *p = strstr(r, from); p; p = strstr(r, from)) {
        memcpy(w, r, (size_t)(p - r));
        w += p - r;
        memcpy(w, to, nt);
        w += nt;
        r = p + nf;
    }
    strcpy(w, r);
    return out;
}

typedef struct tagged {
    em_plan *plan;
    em_exec_plan *xp;
} tagged;

/* Reads the JSON (with from -> to when from is set) and tags it for host Spark
 * with spark.sql.ansi.enabled=ansi. */
static tagged tag_json(const char *name, const char *from, const char *to, bool ansi) {
    size_t len = 0;
    char *text = json_text(name, &len);
    if (from) {
        char *t = replace_all(text, from, to);
        free(text);
        text = t;
        len = strlen(text);
    }
    em_error err = {0};
    tagged t = {0};
    EM_ASSERT_OK(em_overrides_register_confs(&err), &err);
    EM_ASSERT_OK(em_plan_read_json(text, len, NULL, &t.plan, &err), &err);
    free(text);
    em_conf *c = NULL;
    EM_ASSERT_OK(em_conf_create(&c, &err), &err);
    const char *kv = ansi ? "spark.sql.ansi.enabled=true" : "spark.sql.ansi.enabled=false";
    EM_ASSERT_OK(em_conf_set_kv(c, kv, &err), &err);
    EM_ASSERT_OK(em_overrides_apply_host(t.plan, c, EM_HOST_SPARK, &t.xp, &err), &err);
    em_conf_destroy(c);
    return t;
}

/* The plan text of the pair (Spark 3.5), tagged for Ember's own runtime. */
static tagged tag_text(const char *name) {
    size_t len = 0;
    char *text = json_text(name, &len);
    em_plan_parse_options po = {.shim = em_shim_for_version("3.5", NULL)};
    em_error err = {0};
    tagged t = {0};
    EM_ASSERT_OK(em_plan_parse(text, len, &po, &t.plan, &err), &err);
    free(text);
    EM_ASSERT_OK(em_overrides_apply(t.plan, NULL, &t.xp, &err), &err);
    return t;
}

static void tagged_free(tagged *t) {
    em_exec_plan_destroy(t->xp);
    em_plan_destroy(t->plan);
}

static const em_node_decision *dec(const tagged *t, int id) {
    const em_node_decision *d = em_exec_plan_decision(t->xp, em_plan_node_by_id(t->plan, id));
    if (!d)
        fail_msg("no decision for node %d", id);
    return d;
}

static bool has_reason(const em_node_decision *d, const char *text) {
    for (int i = 0; i < d->n_reasons; i++)
        if (strstr(d->reasons[i].text, text))
            return true;
    return false;
}

/* Every reason of every node, one a line, for failure messages. */
static void print_reasons(const tagged *t) {
    for (int i = 0; i < em_exec_plan_n_decisions(t->xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(t->xp, i);
        for (int r = 0; r < d->n_reasons; r++)
            print_message("  (%d) %s: %s\n", d->node->id, d->class_name, d->reasons[r].text);
    }
}

static void assert_native(const tagged *t, int id) {
    const em_node_decision *d = dec(t, id);
    if (d->engine != EM_ENGINE_NATIVE) {
        print_reasons(t);
        fail_msg("node %d (%s) does not run natively", id, d->class_name);
    }
}

static void assert_fallback(const tagged *t, int id, const char *reason) {
    const em_node_decision *d = dec(t, id);
    if (d->engine == EM_ENGINE_NATIVE || !has_reason(d, reason)) {
        print_reasons(t);
        fail_msg("node %d (%s) should fall back because %s", id, d->class_name, reason);
    }
}

/* The spark-rapids style report of the plan holds both texts. */
static void assert_report_has(const tagged *t, const char *a, const char *b) {
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_error err = {0};
    EM_ASSERT_OK(em_exec_plan_report(t->xp, EM_EXPLAIN_ALL, &sb, &err), &err);
    const char *rep = em_strbuf_cstr(&sb);
    if (!strstr(rep, a) || !strstr(rep, b))
        fail_msg("report:\n%s", rep);
    em_strbuf_reset(&sb);
}

/* No node of the plan gives a reason from Spark's view. */
static void assert_spark_view_agrees(const tagged *t, const char *name) {
    for (int i = 0; i < em_exec_plan_n_decisions(t->xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(t->xp, i);
        if (has_reason(d, "Ember types") || has_reason(d, "Spark evaluates")) {
            print_reasons(t);
            fail_msg("%s: node %d (%s) disagrees with Spark", name, d->node->id, d->class_name);
        }
    }
}

/* Every TPC-H plan types as Spark does and evaluates as the session says, so
 * no node falls back for it; the nodes whose literals beside decimals Ember
 * once typed otherwise run natively. */
static void test_tpch_agrees(void **state) {
    (void)state;
    for (int q = 1; q <= 22; q++) {
        char name[16];
        snprintf(name, sizeof name, "q%d.json", q);
        tagged t = tag_json(name, NULL, NULL, false);
        assert_spark_view_agrees(&t, name);
        if (q == 19) {
            assert_native(&t, 3); /* (l_quantity#20 >= 1) ... */
            assert_native(&t, 9); /* the join's condition, the same comparisons */
        } else if (q == 18) {
            assert_native(&t, 13); /* (sum(l_quantity#20)#454 > 300) */
        } else if (q == 8) {
            assert_native(&t, 48); /* CASE WHEN ... THEN volume#711 ELSE 0 END */
        }
        tagged_free(&t);
    }
}

/* The literal of a Filter, found by its printed text. */
static const em_expr *filter_literal(const tagged *t, int id, const char *text) {
    const em_plan_node *n = em_plan_node_by_id(t->plan, id);
    assert_non_null(n);
    const em_plan_field *f = em_plan_node_field(n, EM_FIELD_CONDITION);
    assert_non_null(f);
    const em_expr *stack[64];
    int top = 0;
    for (int i = 0; i < f->n_exprs && top < 64; i++)
        stack[top++] = f->exprs[i];
    while (top > 0) {
        const em_expr *e = stack[--top];
        if (e->kind == EM_EXPR_LITERAL && e->text && !strcmp(e->text, text))
            return e;
        for (int i = 0; i < e->n_args && top < 64; i++)
            stack[top++] = e->args[i];
    }
    fail_msg("node %d holds no literal %s", id, text);
    return NULL;
}

/* A literal's type is the one Spark gave it, not a reading of its printed
 * text: with another type written, Ember types the literal so too, and
 * nothing differs from Spark's view. */
static void test_literal_takes_spark_type(void **state) {
    (void)state;
    tagged t = tag_json("extra/c1_casts_math.json", NULL, NULL, false);
    assert_native(&t, 3); /* NOT (l_quantity#20 <=> 5) */
    assert_spark_view_agrees(&t, "c1_casts_math");
    const em_expr *lit = filter_literal(&t, 3, "5");
    assert_true(em_type_equal(lit->type, em_type_decimal(10, 0)));
    tagged_free(&t);

    t = tag_json("extra/c1_casts_math.json",
                 "\"type\":\"decimal(10,0)\",\"nullable\":false,\"value\":\"5\"",
                 "\"type\":\"decimal(11,1)\",\"nullable\":false,\"value\":\"5\"", false);
    lit = filter_literal(&t, 3, "5");
    assert_true(em_type_equal(lit->type, em_type_decimal(11, 1)));
    assert_spark_view_agrees(&t, "c1_casts_math, 5 as decimal(11,1)");
    tagged_free(&t);
}

/* A value of a type Ember has none like (an array, struct, map or interval: Spark
 * folds array(1, 2) or INTERVAL '2' DAY into such a literal) keeps every node that
 * holds it, and every node that passes on a column of it, in Spark, with a reason
 * naming it, in the report too. */
static void test_foreign_types(void **state) {
    (void)state;
    tagged t = tag_json("extra/c1_casts_math.json",
                        "\"type\":\"decimal(10,0)\",\"nullable\":false,\"value\":\"5\"",
                        "\"type\":\"interval day to second\",\"nullable\":false,\"value\":5000000",
                        false);
    const char *why = "Spark types 5000000 as interval day to second, which Ember has no type for";
    assert_fallback(&t, 3, why);
    assert_report_has(&t, "!Exec <FilterExec> cannot run natively because",
                      "!Expression <Literal> 5000000 cannot run natively because Spark types "
                      "5000000 as interval day to second, which Ember has no type for");
    tagged_free(&t);

    /* o_orderdate as an array: the scan reading it and every node passing it on */
    t = tag_json("q3.json", "\"type\":\"date\",\"nullable\":true,\"exprId\":60,",
                 "\"type\":\"array<date>\",\"nullable\":true,\"exprId\":60,", false);
    int holding = 0;
    for (int i = 0; i < em_exec_plan_n_decisions(t.xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(t.xp, i);
        bool carries = false;
        for (int c = 0; c < d->node->n_output; c++)
            carries |= d->node->output[c]->name && !strcmp(d->node->output[c]->name, "o_orderdate");
        if (!carries)
            continue;
        /* Spark's transitions and the nodes Spark keeps anyway need not say it again */
        assert_int_not_equal(d->engine, EM_ENGINE_NATIVE);
        if (d->node->kind == EM_NODE_SCAN || d->node->kind == EM_NODE_BROADCAST_HASH_JOIN ||
            d->node->kind == EM_NODE_HASH_AGGREGATE || d->node->kind == EM_NODE_EXCHANGE) {
            /* said once, as a column Ember does not hold (not again as a
             * type Ember has none for) */
            assert_fallback(&t, d->node->id,
                            "column o_orderdate is of type array<date>, which Ember does not hold");
            holding++;
        }
    }
    assert_true(holding >= 3);
    tagged_free(&t);

    /* a merged scalar subquery's struct, whose field is taken at once, is never a
     * column (m1_merged_subqueries: (2) takes the fields, (8) makes the struct) */
    t = tag_json("extra/m1_merged_subqueries.json", NULL, NULL, false);
    assert_false(has_reason(dec(&t, 2), "which Ember has no type for"));
    assert_fallback(&t, 8, "as struct<max(l_quantity):decimal(10,0),min(l_quantity):decimal(10,0),"
                           "count(1):bigint>, which Ember has no type for");
    tagged_free(&t);
}

/* A column Ember cannot type (a function its type rules do not know, here abs under
 * another name) would reach Spark as a Null vector holding values of another type:
 * the node producing it stays in Spark, naming the column and Spark's type. */
static void test_unresolved_type(void **state) {
    (void)state;
    tagged t = tag_json("extra/c1_casts_math.json", "\"pretty\":\"abs\"",
                        "\"pretty\":\"absolute\"", false);
    assert_fallback(&t, 4, "Ember cannot type a#271, Spark types it as decimal(11,0)");
    assert_false(has_reason(dec(&t, 3), "Ember cannot type"));
    tagged_free(&t);
    /* abs as Spark names it is typed */
    t = tag_json("extra/c1_casts_math.json", NULL, NULL, false);
    assert_false(has_reason(dec(&t, 4), "Ember cannot type"));
    tagged_free(&t);
}

/* round's result type: the reason names the expression where the types part
 * (round, not the alias over it) with both types. */
static void test_round_type_differs(void **state) {
    (void)state;
    const char *why = "Ember types round((l_extendedprice#21 * 1.1), 2) as decimal(14,1), Spark "
                      "as decimal(15,2)";
    tagged t = tag_json("extra/c1_casts_math.json", NULL, NULL, false);
    assert_false(has_reason(dec(&t, 4), "Ember types"));
    tagged_free(&t);
    t = tag_json("extra/c1_casts_math.json", "\"pretty\":\"round\",\"type\":\"decimal(14,1)\"",
                 "\"pretty\":\"round\",\"type\":\"decimal(15,2)\"", false);
    assert_fallback(&t, 4, why);
    assert_false(has_reason(dec(&t, 4), "Ember types round((l_extendedprice#21 * 1.1), 2) AS"));
    assert_report_has(&t, "!Exec <ProjectExec> cannot run natively because",
                      "cannot run natively because Ember types round((l_extendedprice#21 * 1.1), "
                      "2) as decimal(14,1), Spark as decimal(15,2)");
    tagged_free(&t);
}

/* A column typed otherwise (ReadSchema changed under Spark's attributes): every
 * node producing it falls back, joins that only pass it on included. */
static void test_column_type_differs(void **state) {
    (void)state;
    tagged t = tag_json("q3.json", NULL, NULL, false);
    int joins = 0;
    for (int i = 0; i < em_exec_plan_n_decisions(t.xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(t.xp, i);
        if (d->node->kind == EM_NODE_BROADCAST_HASH_JOIN) {
            assert_native(&t, d->node->id);
            joins++;
        }
    }
    assert_true(joins > 0);
    tagged_free(&t);
    t = tag_json("q3.json", "l_extendedprice:decimal(10,0)", "l_extendedprice:decimal(12,2)",
                 false);
    const char *why = "Ember types l_extendedprice#21 as decimal(12,2), Spark as decimal(10,0)";
    int passing = 0;
    for (int i = 0; i < em_exec_plan_n_decisions(t.xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(t.xp, i);
        bool carries = false;
        for (int c = 0; c < d->node->n_output; c++)
            carries |= d->node->output[c]->name &&
                       !strcmp(d->node->output[c]->name, "l_extendedprice");
        if (d->node->kind == EM_NODE_BROADCAST_HASH_JOIN) {
            if (carries) {
                assert_fallback(&t, d->node->id, why);
                passing++;
            } else {
                assert_native(&t, d->node->id);
            }
        }
        if (d->node->kind == EM_NODE_SCAN && d->node->table_name &&
            !strcmp(d->node->table_name, "lineitem"))
            assert_fallback(&t, d->node->id, why);
    }
    assert_true(passing > 0);
    tagged_free(&t);
}

/* evalMode: TRY never runs natively; ANSI and LEGACY only in a session of the
 * same setting (the native engine follows the session's). */
static void test_eval_modes(void **state) {
    (void)state;
    /* q1: (5) is the partial HashAggregate (sums of decimal products) */
    tagged t = tag_json("q1.json", NULL, NULL, false);
    assert_native(&t, 5);
    tagged_free(&t);

    t = tag_json("q1.json", "\"evalMode\":\"LEGACY\"", "\"evalMode\":\"TRY\"", false);
    assert_fallback(&t, 5,
                    "Spark evaluates (l_extendedprice#21 * (1 - l_discount#22)) in TRY mode (null "
                    "on error), which the native engine does not implement");
    tagged_free(&t);

    t = tag_json("q1.json", NULL, NULL, true);
    assert_fallback(&t, 5,
                    "Spark evaluates partial_sum(l_quantity#20) in LEGACY mode, but the native "
                    "engine follows the session's spark.sql.ansi.enabled=true");
    tagged_free(&t);

    t = tag_json("q1.json", "\"evalMode\":\"LEGACY\"", "\"evalMode\":\"ANSI\"", false);
    assert_fallback(&t, 5,
                    "Spark evaluates partial_sum(l_quantity#20) in ANSI mode, but the native "
                    "engine follows the session's spark.sql.ansi.enabled=false");
    tagged_free(&t);

    t = tag_json("q1.json", "\"evalMode\":\"LEGACY\"", "\"evalMode\":\"ANSI\"", true);
    assert_native(&t, 5);
    assert_spark_view_agrees(&t, "q1 (ANSI)");
    tagged_free(&t);
}

/* Parsed text carries no Spark view: the same reasons never appear. */
static void test_text_has_no_spark_view(void **state) {
    (void)state;
    size_t len = 0;
    char *text = json_text("extra/c1_casts_math.txt", &len);
    em_plan_parse_options po = {.shim = em_shim_for_version("3.5", NULL)};
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(text, len, &po, &p, &err), &err);
    free(text);
    em_exec_plan *xp = NULL;
    EM_ASSERT_OK(em_overrides_apply_host(p, NULL, EM_HOST_SPARK, &xp, &err), &err);
    tagged t = {p, xp};
    assert_spark_view_agrees(&t, "c1_casts_math.txt");
    tagged_free(&t);
}

/* A Hive partition column (a scan column ReadSchema lacks): inside Spark
 * each task's splits carry its values, so the scan runs natively, unless its
 * type is one the scan does not read; the plan text names no partition
 * schema, so outside Spark the scan falls back, saying why. */
static void test_partition_columns(void **state) {
    (void)state;
    tagged t = tag_json("dpp/d2_partition_filter.json", NULL, NULL, false);
    assert_native(&t, 1);
    tagged_free(&t);

    t = tag_json("dpp/d2_partition_filter.json",
                 "\"type\":\"int\",\"nullable\":true,\"exprId\":9,\"fields\":{\"name\":\"k\","
                 "\"dataType\":\"int\"",
                 "\"type\":\"binary\",\"nullable\":true,\"exprId\":9,\"fields\":{\"name\":\"k\","
                 "\"dataType\":\"binary\"",
                 false);
    assert_fallback(&t, 1, "column k is not in ReadSchema: a partition column of a type not read");
    tagged_free(&t);

    /* text without the data: nothing tells the partition column's type */
    t = tag_text("dpp/d2_partition_filter.txt");
    assert_fallback(&t, 1, "column k is not in ReadSchema: a partition column of unknown type");
    tagged_free(&t);
}

/* Joins whose rows depend on more than one partition of a side stay in
 * Spark: a CartesianProduct pairs every left partition with every right one
 * (an Ember task reads one partition of each input), and a nested-loop join
 * that outputs build rows decides them over the whole stream side. */
static void test_joins_across_partitions(void **state) {
    (void)state;
    tagged t = tag_json("extra/j6_cartesian.json", NULL, NULL, false);
    assert_fallback(&t, 5, "a cartesian product's partitions pair every partition");
    tagged_free(&t);

    t = tag_json("extra/j5_nested_loop.json", NULL, NULL, false);
    assert_native(&t, 8); /* Inner, BuildRight: each task joins its stream rows alone */
    tagged_free(&t);
    /* join types whose output still holds both sides' columns, which the plan's
     * Project above reads (a semi or anti join's would not: the plan is refused) */
    const char *keeps_build[][2] = {{"\"joinType\":\"FullOuter\"", "\"buildSide\":\"BuildRight\""},
                                    {"\"joinType\":\"LeftOuter\"", "\"buildSide\":\"BuildLeft\""},
                                    {"\"joinType\":\"RightOuter\"", "\"buildSide\":\"BuildRight\""}};
    for (int i = 0; i < 3; i++) {
        size_t len = 0;
        char *text = json_text("extra/j5_nested_loop.json", &len);
        char *a = replace_all(text, "\"joinType\":\"Inner\"", keeps_build[i][0]);
        char *b = replace_all(a, "\"buildSide\":\"BuildRight\"", keeps_build[i][1]);
        em_error err = {0};
        t = (tagged){0};
        EM_ASSERT_OK(em_plan_read_json(b, strlen(b), NULL, &t.plan, &err), &err);
        EM_ASSERT_OK(em_overrides_apply_host(t.plan, NULL, EM_HOST_SPARK, &t.xp, &err), &err);
        assert_fallback(&t, 8, "its build side's rows are output after matching them");
        tagged_free(&t);
        free(text);
        free(a);
        free(b);
    }
}

/* Ember's errors that Spark raises with an error class become Spark's
 * exception with Spark's parameters; Ember's other errors stay Ember's. */
static void test_spark_error(void **state) {
    (void)state;
    char *j = em_spark_error(
        "EM_ERR_OVERFLOW: stage 1: [CAST_OVERFLOW] The value 4567890123456789L of the type "
        "\"BIGINT\" cannot be cast to \"INT\" due to an overflow. Use `try_cast` to tolerate "
        "overflow and return NULL instead. (cast(q1#3 as int))");
    assert_non_null(j);
    assert_string_equal(j, "{\"exception\":\"org.apache.spark.SparkArithmeticException\","
                           "\"errorClass\":\"CAST_OVERFLOW\",\"messageParameters\":{"
                           "\"value\":\"4567890123456789L\",\"sourceType\":\"\\\"BIGINT\\\"\","
                           "\"targetType\":\"\\\"INT\\\"\",\"ansiConfig\":"
                           "\"\\\"spark.sql.ansi.enabled\\\"\"}}");
    free(j);
    j = em_spark_error("EM_ERR_INVALID: [DIVIDE_BY_ZERO] division by zero in (a#1 / 0)");
    assert_non_null(j);
    assert_non_null(strstr(j, "\"errorClass\":\"DIVIDE_BY_ZERO\""));
    free(j);
    /* CAST_OVERFLOW without Spark's words around its parameters (a decimal or
     * float source): Spark's parameters are not known */
    assert_null(em_spark_error("[CAST_OVERFLOW] value out of range for int in cast(c#3 as int)"));
    assert_null(em_spark_error("EM_ERR_CORRUPT: page header"));
    assert_null(em_spark_error(NULL));
}

/* An Ember node's task reads partition p of each input. A union lays its
 * inputs' partitions one after the other and a cartesian product pairs them,
 * so both stay Spark's, their inputs running natively; outside Spark (the
 * runtime lays partitions out itself) the cartesian product runs natively. */
static void test_partition_layouts_stay_spark(void **state) {
    (void)state;
    tagged t = tag_json("extra/u1_union.json", NULL, NULL, false);
    assert_fallback(&t, 10, "a union's partitions are its inputs' partitions one after the other");
    assert_native(&t, 4);
    assert_native(&t, 7);
    assert_native(&t, 9);
    tagged_free(&t);

    t = tag_json("extra/j6_cartesian.json", NULL, NULL, false);
    assert_fallback(&t, 5, "a cartesian product's partitions pair every partition");
    assert_native(&t, 1);
    assert_native(&t, 3);
    tagged_free(&t);

    t = tag_text("extra/j6_cartesian.txt");
    assert_native(&t, 5);
    tagged_free(&t);
}

/* A column of a type Ember holds no vector for (here n_regionkey made a
 * day-time interval; arrays, structs and maps alike): the scan producing it,
 * the filter passing it on and the project reading it as an input (Spark's
 * Arrow export of a whole input) stay Spark's; the union's other branches do
 * not carry it and run natively. */
static void test_unheld_types(void **state) {
    (void)state;
    tagged t = tag_json("extra/u1_union.json",
                        "\"type\":\"bigint\",\"nullable\":true,\"exprId\":50,",
                        "\"type\":\"interval day to second\",\"nullable\":true,\"exprId\":50,",
                        false);
    const char *why =
        "column n_regionkey is of type interval day to second, which Ember does not hold";
    assert_fallback(&t, 1, why);
    assert_fallback(&t, 3, why);
    assert_fallback(&t, 4, "input column n_regionkey is of type interval day to second");
    assert_native(&t, 7);
    assert_native(&t, 9);
    tagged_free(&t);

    t = tag_json("extra/t3_limit_offset.json",
                 "\"type\":\"string\",\"nullable\":true,\"exprId\":49",
                 "\"type\":\"array<string>\",\"nullable\":true,\"exprId\":49", false);
    assert_fallback(&t, 1,
                    "output column n_name is of type array<string>, which Ember does not hold");
    tagged_free(&t);

    /* a nested column in the files, though the scan does not read it: the
     * Parquet reader maps every column of a file */
    t = tag_json("extra/t3_limit_offset.json", "\"dataSchema\":\"struct<n_nationkey:bigint,",
                 "\"dataSchema\":\"struct<s:struct<x:int>,n_nationkey:bigint,", false);
    assert_fallback(&t, 1, "the files hold a nested column");
    tagged_free(&t);
    t = tag_json("extra/t3_limit_offset.json", NULL, NULL, false);
    assert_native(&t, 1);
    tagged_free(&t);
}

/* Spark leaves expressions over window functions in a Window node (an avg of
 * decimals as cast(avg(UnscaledValue(x)) OVER w / 1.0 as decimal), count(NULL)
 * folded to 0), which the Window operator does not evaluate: the node stays
 * Spark's, the windows of bare functions run natively. */
static void test_window_expression(void **state) {
    (void)state;
    tagged t = tag_json("extra/w1_window_rank.json", NULL, NULL, false);
    assert_fallback(&t, 9, "not a window function in window expression");
    assert_native(&t, 6);
    assert_native(&t, 8);
    assert_native(&t, 12);
    tagged_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tpch_agrees),
        cmocka_unit_test(test_literal_takes_spark_type),
        cmocka_unit_test(test_foreign_types),
        cmocka_unit_test(test_unresolved_type),
        cmocka_unit_test(test_round_type_differs),
        cmocka_unit_test(test_column_type_differs),
        cmocka_unit_test(test_eval_modes),
        cmocka_unit_test(test_text_has_no_spark_view),
        cmocka_unit_test(test_partition_columns),
        cmocka_unit_test(test_joins_across_partitions),
        cmocka_unit_test(test_spark_error),
        cmocka_unit_test(test_partition_layouts_stay_spark),
        cmocka_unit_test(test_unheld_types),
        cmocka_unit_test(test_window_expression),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
