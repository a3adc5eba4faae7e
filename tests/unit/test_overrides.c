/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The overrides: decisions on small written plans (switches through both
 * spellings, incompatible operations, the global switch, transitions where
 * the engines change and nowhere else, LORE ids), the report's lines, the
 * rules against the config registry and the generated docs, and every
 * shared TPC-H plan native under the defaults without the compiler probe
 * having to refuse anything.
 */
#include <stdlib.h>
#include <string.h>

#include "expr/catalog.h"
#include "ember/overrides.h"
#include "overrides/internal.h"
#include "test_plan_common.h"

/* Scan -> ColumnarToRow -> Filter -> Project -> partial agg -> Exchange -> final agg,
 * summing a decimal and a double (the second is incompatible). */
static const char PLAN[] =
    "== Physical Plan ==\n"
    "* HashAggregate (7)\n"
    "+- Exchange (6)\n"
    "   +- * HashAggregate (5)\n"
    "      +- * Project (4)\n"
    "         +- * Filter (3)\n"
    "            +- * ColumnarToRow (2)\n"
    "               +- Scan parquet spark_catalog.default.t (1)\n\n\n"
    "(1) Scan parquet spark_catalog.default.t\n"
    "Output [4]: [k#1, g#2, v#3, d#4]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/t]\n"
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double>\n\n"
    "(2) ColumnarToRow [codegen id : 1]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n\n"
    "(3) Filter [codegen id : 1]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n"
    "Condition : (isnotnull(g#2) AND (substring(k#1, 1, 1) = a))\n\n"
    "(4) Project [codegen id : 1]\n"
    "Output [3]: [k#1, v#3, d#4]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n\n"
    "(5) HashAggregate [codegen id : 1]\n"
    "Input [3]: [k#1, v#3, d#4]\n"
    "Keys [1]: [k#1]\n"
    "Functions [2]: [partial_sum(v#3), partial_sum(d#4)]\n"
    "Aggregate Attributes [3]: [sum#10, isEmpty#11, sum#12]\n"
    "Results [4]: [k#1, sum#13, isEmpty#14, sum#15]\n\n"
    "(6) Exchange\n"
    "Input [4]: [k#1, sum#13, isEmpty#14, sum#15]\n"
    "Arguments: hashpartitioning(k#1, 5), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"
    "(7) HashAggregate [codegen id : 2]\n"
    "Input [4]: [k#1, sum#13, isEmpty#14, sum#15]\n"
    "Keys [1]: [k#1]\n"
    "Functions [2]: [sum(v#3), sum(d#4)]\n"
    "Aggregate Attributes [2]: [sum(v#3)#16, sum(d#4)#17]\n"
    "Results [3]: [k#1, sum(v#3)#16 AS sv#18, sum(d#4)#17 AS sd#19]\n";

static em_plan *parse(const char *text) {
    em_plan *p = NULL;
    em_error err = {0};
    em_plan_parse_options po = {0};
    em_error serr = {0};
    po.shim = em_shim_for_version("3.5", &serr);
    EM_ASSERT_OK(em_plan_parse(text, strlen(text), &po, &p, &err), &err);
    return p;
}

/* Tags the plan under the settings k=v... (NULL-terminated). */
static em_exec_plan *tag(const em_plan *p, ...) {
    em_conf *c = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_conf_create(&c, &err), &err);
    va_list ap;
    va_start(ap, p);
    for (const char *kv; (kv = va_arg(ap, const char *)) != NULL;)
        EM_ASSERT_OK(em_conf_set_kv(c, kv, &err), &err);
    va_end(ap);
    em_exec_plan *xp = NULL;
    EM_ASSERT_OK(em_overrides_apply(p, c, &xp, &err), &err);
    em_conf_destroy(c);
    return xp;
}

static const em_node_decision *dec(const em_exec_plan *xp, int id) {
    const em_node_decision *d =
        em_exec_plan_decision(xp, em_plan_node_by_id(em_exec_plan_source(xp), id));
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

/* Node ids with a transition above them, as a string "3 1". */
static void transitions(const em_exec_plan *xp, char *out, size_t cap) {
    out[0] = '\0';
    for (int i = 0; i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (d->transition_above)
            snprintf(out + strlen(out), cap - strlen(out), "%s%d", out[0] ? " " : "", d->node->id);
    }
}

static char *report(const em_exec_plan *xp, em_explain_mode mode) {
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_error err = {0};
    EM_ASSERT_OK(em_exec_plan_report(xp, mode, &sb, &err), &err);
    char *s = strdup(em_strbuf_cstr(&sb));
    em_strbuf_reset(&sb);
    return s;
}

static char *tree(const em_exec_plan *xp) {
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_error err = {0};
    EM_ASSERT_OK(em_exec_plan_print_tree(xp, &sb, &err), &err);
    char *s = strdup(em_strbuf_cstr(&sb));
    em_strbuf_reset(&sb);
    return s;
}

/* ------------------------------------------------------------------ registry */

static bool family_has(em_conf_family_id f, const char *cls, bool *def) {
    const char *name;
    for (size_t i = 0; em_conf_family_member(f, i, &name, def, NULL); i++)
        if (!strcmp(name, cls))
            return true;
    return false;
}

/* Runs first: the registry's built-in members (what docs/configs.md lists)
 * are exactly the classes with a native rule, so registering the rules'
 * notes adds no key. */
static void test_rules_match_registry(void **state) {
    (void)state;
    size_t n_exec = em_conf_family_n_members(EM_CONF_FAMILY_EXEC);
    size_t n_expr = em_conf_family_n_members(EM_CONF_FAMILY_EXPRESSION);
    size_t want_exec = 0, want_expr = 0;
    bool def;
    for (size_t i = 0; i < em_ov_n_exec_rules(); i++) {
        const ov_exec_rule *r = em_ov_exec_rule_at(i);
        if (r->how != OV_EXEC_NATIVE)
            continue;
        want_exec++;
        if (!family_has(EM_CONF_FAMILY_EXEC, r->cls, &def) || !def)
            fail_msg("exec %s has a native rule but no built-in switch defaulting to true", r->cls);
    }
    for (size_t i = 0; i < em_ov_n_expr_rules(); i++) {
        const ov_expr_rule *r = em_ov_expr_rule_at(i);
        if (!r->native || r->switchless)
            continue;
        want_expr++;
        if (!family_has(EM_CONF_FAMILY_EXPRESSION, r->cls, &def) || !def)
            fail_msg("expression %s has a native rule but no built-in switch", r->cls);
    }
    assert_int_equal(n_exec, want_exec);
    assert_int_equal(n_expr, want_expr);
    em_error err = {0};
    EM_ASSERT_OK(em_overrides_register_confs(&err), &err);
    EM_ASSERT_OK(em_overrides_register_confs(&err), &err); /* idempotent */
    assert_int_equal(em_conf_family_n_members(EM_CONF_FAMILY_EXEC), n_exec);
    assert_int_equal(em_conf_family_n_members(EM_CONF_FAMILY_EXPRESSION), n_expr);
    assert_true(family_has(EM_CONF_FAMILY_EXPRESSION, "StddevSamp", &def) && def);
}

/* Reads a source file of the checkout. */
static char *source_file(const char *rel) {
    const char *src = getenv("EMBER_SOURCE");
    char path[4096];
    if (src)
        snprintf(path, sizeof path, "%s/%s", src, rel);
    else {
        const char *cut = strstr(__FILE__, "tests/unit/");
        snprintf(path, sizeof path, "%.*s%s", (int)(cut ? cut - __FILE__ : 0), __FILE__, rel);
    }
    size_t len = 0;
    char *text = plan_test_read(path, &len);
    if (!text)
        fail_msg("cannot read %s", path);
    return text;
}

/* Every quoted name after `marker` on the lines of text that contain it. */
static int each_name(const char *text, const char *marker, void (*fn)(const char *name)) {
    int n = 0;
    size_t ml = strlen(marker);
    for (const char *p = strstr(text, marker); p; p = strstr(p + ml, marker)) {
        const char *q = p + ml, *end = strchr(q, '"');
        if (!end || end - q > 60)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(end - q), q);
        fn(name);
        n++;
    }
    return n;
}

static em_expr_kind expect_kind; /* CALL or AGG: what each_name's names are */

static void expect_native(const char *name) {
    em_expr e = {.kind = expect_kind, .name = name};
    const char *cls = NULL;
    const ov_expr_rule *r =
        expect_kind == EM_EXPR_AGG ? em_ov_agg_fn_rule(&e, &cls) : em_ov_expr_rule_for(&e, &cls);
    if (!r || !r->native)
        fail_msg("the native engine takes %s(...) but rules.c has no native rule for it", name);
}

/* The rules name every function the native compiler and aggregates accept
 * (the catalog's rows the vectorized engine evaluates, src/expr/compile.c's
 * compile_call special cases, src/expr/agg.c: kind_of), so a function added
 * there without a rule here is caught even before a plan uses it. */
static void test_rules_cover_native_functions(void **state) {
    (void)state;
    expect_kind = EM_EXPR_CALL;
    int native = 0;
    for (int i = 0; i < em_fn_count(); i++)
        if (em_fn_at(i)->native) {
            expect_native(em_fn_at(i)->name);
            native++;
        }
    assert_true(native >= 30);
    char *compile = source_file("src/expr/compile.c");
    assert_true(each_name(compile, "strcasecmp(n, \"", expect_native) >= 10);
    free(compile);
    char *agg = source_file("src/expr/agg.c");
    const char *names = strstr(agg, "names[] = {");
    assert_non_null(names);
    char *names_end = strstr(names, "};");
    assert_non_null(names_end);
    *names_end = '\0';
    expect_kind = EM_EXPR_AGG;
    assert_true(each_name(names, "{\"", expect_native) >= 11);
    free(agg);
}

/* ------------------------------------------------------------------ decisions */

static void test_defaults_incompatible_sum(void **state) {
    (void)state;
    em_plan *p = parse(PLAN);
    em_exec_plan *xp = tag(p, NULL);
    /* sum(double) is incompatible, off by default: both aggregates fall back, and the
     * exchange between them with them (no native child, a row reader) */
    for (int id = 5; id <= 7; id++)
        assert_int_equal(dec(xp, id)->engine, EM_ENGINE_ROW);
    assert_true(has_reason(dec(xp, 5), "spark.ember.sql.incompatibleOps.enabled=true"));
    assert_true(has_reason(dec(xp, 6), "native exchange without native children"));
    assert_true(dec(xp, 6)->supported);
    assert_false(dec(xp, 5)->supported);
    for (int id = 1; id <= 4; id++)
        assert_int_equal(dec(xp, id)->engine, id == 2 ? EM_ENGINE_PASS : EM_ENGINE_NATIVE);
    char t[64];
    transitions(xp, t, sizeof t);
    assert_string_equal(t, "4");
    /* the incompatible function is the one refused, sum(decimal) is fine */
    const em_node_decision *d = dec(xp, 5);
    int refused = 0;
    for (int i = 0; i < d->n_exprs; i++)
        if (!d->exprs[i].supported) {
            refused++;
            assert_string_equal(d->exprs[i].class_name, "Sum");
            assert_string_equal(d->exprs[i].reasons[0].config,
                                "spark.ember.sql.incompatibleOps.enabled");
        }
    assert_int_equal(refused, 1);
    em_exec_plan_destroy(xp);

    const char *const enable[] = {"spark.ember.sql.incompatibleOps.enabled=true",
                                  "spark.ember.sql.expression.Sum=true",
                                  "spark.rapids.sql.expression.Sum=true"};
    for (int k = 0; k < 3; k++) {
        xp = tag(p, enable[k], NULL);
        for (int i = 0; i < em_exec_plan_n_decisions(xp); i++)
            assert_int_not_equal(em_exec_plan_decision_at(xp, i)->engine, EM_ENGINE_ROW);
        transitions(xp, t, sizeof t);
        assert_string_equal(t, "");
        em_exec_plan_destroy(xp);
    }
    em_plan_destroy(p);
}

static void check_filter_disabled(const em_plan *p, const char *kv) {
    em_exec_plan *xp = tag(p, "spark.ember.sql.incompatibleOps.enabled=true", kv, NULL);
    const em_node_decision *f = dec(xp, 3);
    assert_int_equal(f->engine, EM_ENGINE_ROW);
    assert_false(f->supported);
    assert_int_equal(f->n_reasons, 1);
    assert_string_equal(f->reasons[0].config, "spark.ember.sql.exec.FilterExec");
    assert_string_equal(f->reasons[0].class_name, "FilterExec");
    assert_non_null(strstr(f->reasons[0].text, "set spark.ember.sql.exec.FilterExec=true"));
    /* its expressions could run natively */
    for (int i = 0; i < f->n_exprs; i++)
        assert_true(f->exprs[i].supported);
    /* the scan feeds it through ColumnarToRow (looking through Spark's own
     * ColumnarToRow), the project reads it through RowToColumnar */
    char t[64];
    transitions(xp, t, sizeof t);
    assert_string_equal(t, "1 3");
    assert_int_equal(dec(xp, 2)->engine, EM_ENGINE_PASS);
    assert_false(dec(xp, 2)->transition_above);
    char *tr = tree(xp);
    assert_non_null(strstr(tr, "      +- EmberProject (4) [loreId=1]\n"
                               "         +- RowToColumnar\n"
                               "            +- Filter (3)  NOT NATIVE: the Exec FilterExec has "
                               "been disabled: set spark.ember.sql.exec.FilterExec=true to "
                               "enable it\n"
                               "               +- ColumnarToRow\n"
                               "                  +- EmberScan parquet (1) "
                               "spark_catalog.default.t [loreId=0]\n"));
    free(tr);
    char *r = report(xp, EM_EXPLAIN_NOT_ON_ACCELERATOR);
    assert_non_null(strstr(r, "        !Exec <FilterExec> cannot run natively because the Exec "
                              "FilterExec has been disabled: set "
                              "spark.ember.sql.exec.FilterExec=true to enable it\n"
                              "          @Expression <And> "));
    assert_non_null(
        strstr(r, "            @Expression <IsNotNull> isnotnull(g#2) could run natively\n"));
    assert_null(strstr(r, "*Exec")); /* native lines are left out */
    free(r);
    em_exec_plan_destroy(xp);
}

static void test_disabled_exec_both_spellings(void **state) {
    (void)state;
    em_plan *p = parse(PLAN);
    check_filter_disabled(p, "spark.ember.sql.exec.FilterExec=false");
    check_filter_disabled(p, "spark.rapids.sql.exec.FilterExec=false");
    em_plan_destroy(p);
}

static void test_disabled_expression(void **state) {
    (void)state;
    em_plan *p = parse(PLAN);
    const char *const spell[] = {"spark.ember.sql.expression.Substring=false",
                                 "spark.rapids.sql.expression.Substring=false"};
    for (int k = 0; k < 2; k++) {
        em_exec_plan *xp = tag(p, "spark.ember.sql.incompatibleOps.enabled=true", spell[k], NULL);
        const em_node_decision *f = dec(xp, 3);
        assert_int_equal(f->engine, EM_ENGINE_ROW);
        assert_int_equal(f->n_reasons, 1);
        assert_string_equal(f->reasons[0].config, "spark.ember.sql.expression.Substring");
        assert_string_equal(f->reasons[0].class_name, "Substring");
        int bad = 0;
        for (int i = 0; i < f->n_exprs; i++)
            if (!f->exprs[i].supported) {
                bad++;
                assert_string_equal(f->exprs[i].class_name, "Substring");
            }
        assert_int_equal(bad, 1);
        char *r = report(xp, EM_EXPLAIN_NOT_ON_ACCELERATOR);
        assert_non_null(strstr(r, "!Expression <Substring> substring(k#1, 1, 1) cannot run "
                                  "natively because the Expression Substring has been "
                                  "disabled: set spark.ember.sql.expression.Substring=true to "
                                  "enable it\n"));
        assert_non_null(strstr(r, "@Expression <AttributeReference> k#1 could run natively\n"));
        free(r);
        /* other nodes are untouched */
        assert_int_equal(dec(xp, 4)->engine, EM_ENGINE_NATIVE);
        em_exec_plan_destroy(xp);
    }
    em_plan_destroy(p);
}

static void test_sql_disabled(void **state) {
    (void)state;
    em_plan *p = parse(PLAN);
    em_exec_plan *xp = tag(p, "spark.ember.sql.enabled=false",
                           "spark.ember.sql.incompatibleOps.enabled=true", NULL);
    for (int i = 0; i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (d->node->kind == EM_NODE_COLUMNAR_TO_ROW) {
            assert_int_equal(d->engine, EM_ENGINE_PASS);
            continue;
        }
        assert_int_equal(d->engine, EM_ENGINE_ROW);
        assert_true(d->supported); /* it could: only the global switch says no */
        assert_true(has_reason(d, "set spark.ember.sql.enabled=true"));
        assert_false(d->transition_above);
        assert_int_equal(d->lore_id, -1);
    }
    em_exec_plan_destroy(xp);
    em_plan_destroy(p);
}

static void test_lore_ids(void **state) {
    (void)state;
    int first[8];
    for (int round = 0; round < 2; round++) {
        em_plan *p = parse(PLAN);
        em_exec_plan *xp = tag(p, "spark.ember.sql.incompatibleOps.enabled=true", NULL);
        /* post-order over native nodes: scan, filter, project, partial, exchange, final */
        static const int want[8] = {-1, 0, -1, 1, 2, 3, 4, 5};
        for (int id = 1; id <= 7; id++) {
            assert_int_equal(dec(xp, id)->lore_id, want[id]);
            if (round == 0)
                first[id] = dec(xp, id)->lore_id;
            else
                assert_int_equal(dec(xp, id)->lore_id, first[id]);
        }
        em_exec_plan_destroy(xp);
        /* a row node gets none and the numbering skips it */
        xp = tag(p, "spark.ember.sql.incompatibleOps.enabled=true",
                 "spark.ember.sql.exec.ProjectExec=false", NULL);
        assert_int_equal(dec(xp, 4)->lore_id, -1);
        assert_int_equal(dec(xp, 5)->lore_id, 2);
        em_exec_plan_destroy(xp);
        xp = tag(p, "spark.ember.sql.lore.tag.enabled=false", NULL);
        for (int i = 0; i < em_exec_plan_n_decisions(xp); i++)
            assert_int_equal(em_exec_plan_decision_at(xp, i)->lore_id, -1);
        em_exec_plan_destroy(xp);
        em_plan_destroy(p);
    }
}

static void test_report_all(void **state) {
    (void)state;
    em_plan *p = parse(PLAN);
    em_exec_plan *xp = tag(p, "spark.ember.sql.incompatibleOps.enabled=true", NULL);
    char *r = report(xp, EM_EXPLAIN_ALL);
    const char *want = "*Exec <HashAggregateExec> will run natively\n"
                       "  *Expression <AttributeReference> k#1 will run natively\n"
                       "  *Expression <AggregateExpression> sum(v#3) will run natively\n"
                       "    *Expression <Sum> sum(v#3) will run natively\n"
                       "      *Expression <AttributeReference> v#3 will run natively\n";
    if (strncmp(r, want, strlen(want)))
        fail_msg("report starts:\n%s", r);
    assert_non_null(strstr(r, "  *Exec <ShuffleExchangeExec> will run natively\n"
                              "    *Partitioning <HashPartitioning> hashpartitioning(k#1, 5) "
                              "will run natively\n"));
    assert_non_null(strstr(r, "      *Expression <AggregateExpression> partial_sum(d#4) will run "
                              "natively\n"
                              "        *Expression <Sum> sum(d#4) will run natively\n"));
    assert_non_null(strstr(r, "        *Exec <FilterExec> will run natively\n"
                              "          *Expression <And> (isnotnull(g#2) AND (substring(k#1, 1, "
                              "1) = a)) will run natively\n"));
    assert_non_null(strstr(r, "\n          *Exec <FileSourceScanExec> will run natively\n"));
    assert_null(strstr(r, "ColumnarToRow")); /* pass-through: not listed */
    free(r);
    r = report(xp, EM_EXPLAIN_NOT_ON_ACCELERATOR);
    assert_string_equal(r, "");
    free(r);
    r = report(xp, EM_EXPLAIN_NONE);
    assert_string_equal(r, "");
    free(r);
    char *tr = tree(xp);
    assert_string_equal(tr, "EmberHashAggregate (7) [loreId=5]\n"
                            "+- EmberExchange (6) [loreId=4]\n"
                            "   +- EmberHashAggregate (5) [loreId=3]\n"
                            "      +- EmberProject (4) [loreId=2]\n"
                            "         +- EmberFilter (3) [loreId=1]\n"
                            "            +- EmberScan parquet (1) spark_catalog.default.t "
                            "[loreId=0]\n");
    free(tr);
    em_exec_plan_destroy(xp);
    em_plan_destroy(p);
}

/* A node no native operator implements, and a cast that depends on the zone. */
static void test_unsupported_node_and_zone(void **state) {
    (void)state;
    static const char gen[] = "== Physical Plan ==\n"
                              "Generate (2)\n"
                              "+- LocalTableScan (1)\n\n\n"
                              "(1) LocalTableScan\n"
                              "Output [1]: [x#1]\n"
                              "Arguments: <empty>, [x#1]\n\n"
                              "(2) Generate\n"
                              "Input [1]: [x#1]\n"
                              "Arguments: explode(x#1), false, [y#2]\n";
    em_plan *p = parse(gen);
    em_exec_plan *xp = tag(p, NULL);
    assert_int_equal(dec(xp, 2)->engine, EM_ENGINE_ROW);
    assert_string_equal(dec(xp, 2)->class_name, "GenerateExec");
    assert_true(has_reason(dec(xp, 2), "GenerateExec is not supported natively"));
    assert_int_equal(dec(xp, 1)->engine, EM_ENGINE_NATIVE);
    assert_true(dec(xp, 1)->transition_above);
    assert_false(dec(xp, 2)->transition_above); /* the root: the runtime adapts it */
    em_exec_plan_destroy(xp);
    em_plan_destroy(p);

    static const char ts[] = "== Physical Plan ==\n"
                             "* Project (2)\n"
                             "+- * ColumnarToRow (3)\n"
                             "   +- Scan parquet spark_catalog.default.e (1)\n\n\n"
                             "(1) Scan parquet spark_catalog.default.e\n"
                             "Output [1]: [t#1]\n"
                             "Batched: true\n"
                             "Location [not included in comparison]/{warehouse_dir}/e]\n"
                             "ReadSchema: struct<t:timestamp>\n\n"
                             "(2) Project [codegen id : 1]\n"
                             "Output [1]: [cast(t#1 as string) AS s#2]\n"
                             "Input [1]: [t#1]\n\n"
                             "(3) ColumnarToRow [codegen id : 1]\n"
                             "Input [1]: [t#1]\n";
    p = parse(ts);
    xp = tag(p, NULL);
    assert_int_equal(dec(xp, 2)->engine, EM_ENGINE_NATIVE);
    em_exec_plan_destroy(xp);
    /* the native casts read the session zone (src/core/tz.c) */
    xp = tag(p, "spark.sql.session.timeZone=America/Los_Angeles", NULL);
    assert_int_equal(dec(xp, 2)->engine, EM_ENGINE_NATIVE);
    em_exec_plan_destroy(xp);
    em_plan_destroy(p);
}

/* A ReusedExchange reads what its exchange stored, on that exchange's engine. */
static void test_reused_exchange(void **state) {
    (void)state;
    em_plan *p = plan_test_parse_shared("3.5", 11);
    em_exec_plan *xp = tag(p, "spark.ember.sql.exec.BroadcastExchangeExec=false", NULL);
    const em_node_decision *r = dec(xp, 26);
    assert_int_equal(r->node->kind, EM_NODE_REUSED_EXCHANGE);
    assert_int_equal(r->node->reuses->id, 7);
    assert_int_equal(r->engine, EM_ENGINE_ROW);
    assert_true(has_reason(r, "it reads BroadcastExchange (7), which runs on rows"));
    assert_true(r->transition_above); /* under a native join */
    assert_int_equal(r->lore_id, -1);
    assert_true(dec(xp, 7)->transition_above);
    assert_true(dec(xp, 6)->transition_above); /* native filter feeding the row exchange */
    em_exec_plan_destroy(xp);
    xp = tag(p, NULL);
    r = dec(xp, 26);
    assert_int_equal(r->engine, EM_ENGINE_NATIVE);
    assert_false(r->transition_above);
    assert_int_equal(r->lore_id, -1); /* nothing of its own to dump */
    em_exec_plan_destroy(xp);
    em_plan_destroy(p);
}

/* ------------------------------------------------------------------ TPC-H */

typedef struct lore_check {
    const em_exec_plan *xp;
    int next;
} lore_check;

static void expect_post_order(lore_check *lc, const em_plan_node *n) {
    for (int c = 0; c < n->n_children; c++)
        expect_post_order(lc, n->children[c]);
    const em_node_decision *d = em_exec_plan_decision(lc->xp, n);
    assert_non_null(d);
    if (d->engine == EM_ENGINE_NATIVE && n->kind != EM_NODE_REUSED_EXCHANGE)
        assert_int_equal(d->lore_id, lc->next++);
    else
        assert_int_equal(d->lore_id, -1);
}

static void test_tpch_all_native(void **state) {
    (void)state;
    int plans = 0, nodes = 0;
    for (int v = 0; v < PLAN_TEST_N_DIRS; v++) {
        em_error serr = {0};
        const em_shim *shim = em_shim_for_version(plan_test_lines[v], &serr);
        for (int q = 1; q <= 22; q++) {
            char path[4096];
            size_t len = 0;
            char *text = plan_test_shared(plan_test_dirs[v], q, &len, path, sizeof path);
            em_plan_parse_options po = {0};
            po.shim = shim;
            em_plan *p = NULL;
            em_error err = {0};
            EM_ASSERT_OK(em_plan_parse(text, len, &po, &p, &err), &err);
            free(text);
            em_exec_plan *xp = NULL;
            EM_ASSERT_OK(em_overrides_apply(p, NULL, &xp, &err), &err);
            for (int i = 0; i < em_exec_plan_n_decisions(xp); i++) {
                const em_node_decision *d = em_exec_plan_decision_at(xp, i);
                assert_ptr_equal(em_exec_plan_decision(xp, d->node), d);
                if (d->engine == EM_ENGINE_ROW || d->n_reasons || d->transition_above) {
                    /* the probe refusing means a rule is missing in rules.c */
                    fail_msg("%s: %s (%d) is not native: %s", path, d->class_name, d->node->id,
                             d->n_reasons ? d->reasons[0].text : "(transition)");
                }
                for (int k = 0; k < d->n_exprs; k++)
                    if (!d->exprs[k].supported || !d->exprs[k].class_name ||
                        !strcmp(d->exprs[k].class_name, "?"))
                        fail_msg("%s: node %d: expression %s not judged supported", path,
                                 d->node->id, d->exprs[k].class_name);
                nodes += d->engine == EM_ENGINE_NATIVE;
            }
            lore_check lc = {xp, 0};
            expect_post_order(&lc, em_plan_exec_root(p));
            for (int s = 0; s < em_plan_n_subqueries(p); s++) {
                const em_plan_subquery *sq = em_plan_subquery_at(p, s);
                if (sq->root)
                    expect_post_order(&lc, sq->root);
            }
            char *r = report(xp, EM_EXPLAIN_NOT_ON_ACCELERATOR);
            assert_string_equal(r, "");
            free(r);
            em_exec_plan_destroy(xp);
            em_plan_destroy(p);
            plans++;
        }
    }
    assert_int_equal(plans, 132);
    assert_true(nodes > 132 * 10);
}

/* ------------------------------------------------------------------ docs */

static void test_supported_ops_not_stale(void **state) {
    (void)state;
    const char *src = getenv("EMBER_SOURCE");
    char path[4096];
    if (src)
        snprintf(path, sizeof path, "%s/docs/supported_ops.md", src);
    else {
        const char *cut = strstr(__FILE__, "tests/unit/");
        snprintf(path, sizeof path, "%.*sdocs/supported_ops.md", (int)(cut ? cut - __FILE__ : 0),
                 __FILE__);
    }
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_error err = {0};
    EM_ASSERT_OK(em_overrides_supported_ops_md(&sb, &err), &err);
    const char *want = em_strbuf_cstr(&sb);
    size_t have_len = 0;
    char *have = plan_test_read(path, &have_len);
    if (!have || strcmp(have, want)) {
        size_t at = 0;
        if (have)
            while (have[at] && have[at] == want[at])
                at++;
        fail_msg("%s is %s (first difference at byte %zu); regenerate it with:\n  %s", path,
                 have ? "stale" : "missing", at, EM_OVERRIDES_DOCS_COMMAND);
    }
    assert_non_null(strstr(want, "| FilterExec | yes |"));
    assert_non_null(strstr(want, "| Sum | input |"));
    free(have);
    em_strbuf_reset(&sb);
}

/* ember explain and ember conf --supported-ops-md print what the library renders. */
static void test_cli(void **state) {
    (void)state;
    const char *bin = em_test_ember_bin();
    const char *src = getenv("EMBER_SOURCE");
    if (!bin || !src)
        fail_msg("EMBER_BIN / EMBER_SOURCE are not set: run this test through ctest");
    const char *dir = em_test_tmpdir("overrides_cli");
    char path[4096];
    snprintf(path, sizeof path, "%s/plan.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(PLAN, f);
    fclose(f);
    assert_int_equal(em_test_system("'%s' conf --supported-ops-md > '%s/ops.md'", bin, dir), 0);
    assert_int_equal(em_test_system("cmp -s '%s/ops.md' '%s/docs/supported_ops.md'", dir, src), 0);
    /* defaults: the incompatible sums fall back, the report says why */
    assert_int_equal(
        em_test_system("'%s' explain '%s' --spark-version 3.5 > '%s/out.txt'", bin, path, dir), 0);
    assert_int_equal(em_test_system("grep -q '^      +- ColumnarToRow$' '%s/out.txt' && grep -q "
                                    "'^!Exec <HashAggregateExec> cannot run natively because' "
                                    "'%s/out.txt' && grep -q 'EmberFilter (3) .loreId=1.' "
                                    "'%s/out.txt' && grep -q '^  stage 0' '%s/out.txt'",
                                    dir, dir, dir, dir),
                     0);
    assert_int_equal(em_test_system("'%s' explain '%s' --spark-version 3.5 --conf "
                                    "spark.rapids.sql.expression.Sum=true > '%s/out.txt' && grep "
                                    "-qx 'every node runs natively' '%s/out.txt'",
                                    bin, path, dir, dir),
                     0);
    assert_int_equal(
        em_test_system("'%s' explain --summary '%s' '%s' --spark-version 3.5 > "
                       "'%s/sum.txt' && grep -q '^Plans: 2 (0 failed to load)$' '%s/sum.txt'",
                       bin, path, path, dir, dir),
        0);
    assert_int_equal(em_test_system("grep -q '^Nodes: 12, native 6 (50.0%%), row 6$' '%s/sum.txt' "
                                    "&& grep -q '^       4  the native Sum is not 100%% "
                                    "compatible with Spark' '%s/sum.txt'",
                                    dir, dir),
                     0);
    /* with a warehouse, reasons weigh the bytes of the tables scanned below their nodes:
     * t is 1 MiB, under 4 nodes with the Sum reason and 2 with the exchange's */
    assert_int_equal(em_test_system("mkdir -p '%s/wh/t' && head -c 1048576 /dev/zero > "
                                    "'%s/wh/t/part-0.parquet'",
                                    dir, dir),
                     0);
    assert_int_equal(em_test_system("'%s' explain --summary '%s' '%s' --spark-version 3.5 "
                                    "--warehouse '%s/wh' > '%s/sum.txt' && grep -q '^         "
                                    "4.0  the native Sum' '%s/sum.txt' && grep -q '^         "
                                    "2.0  a native exchange' '%s/sum.txt'",
                                    bin, path, path, dir, dir, dir, dir),
                     0);
    assert_int_equal(em_test_system("'%s' explain '%s' --conf spark.ember.sql.exec.Nope=false "
                                    "2>/dev/null",
                                    bin, path),
                     1);
    assert_int_equal(em_test_system("'%s' explain 2>/dev/null", bin), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_match_registry),
        cmocka_unit_test(test_rules_cover_native_functions),
        cmocka_unit_test(test_defaults_incompatible_sum),
        cmocka_unit_test(test_disabled_exec_both_spellings),
        cmocka_unit_test(test_disabled_expression),
        cmocka_unit_test(test_sql_disabled),
        cmocka_unit_test(test_lore_ids),
        cmocka_unit_test(test_report_all),
        cmocka_unit_test(test_unsupported_node_and_zone),
        cmocka_unit_test(test_reused_exchange),
        cmocka_unit_test(test_tpch_all_native),
        cmocka_unit_test(test_supported_ops_not_stale),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
