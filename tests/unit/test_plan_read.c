/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The structured-plan reader (em_plan_read_json) against the text parser, on
 * pairs of the same executed plan: Spark's EXPLAIN FORMATTED text and the
 * plugin's JSON (tests/data/spark-json: the 22 TPC-H queries at SF 0.01 and
 * the queries of extra/ (one .sql each), dumped by spark/.../tools/DumpPlans, Spark
 * 3.5.8, AQE off).
 *
 * What is asserted:
 *
 *  1. Same model. For every pair the text parser reads faithfully, the two
 *     models written by em_plan_to_json are identical, after normalizing
 *     exactly these fields:
 *       - plan ids: "[plan_id=N]" and "[id=#N]" inside printed texts and the
 *         "plan_id" members (SparkPlan.id is no constructor field, so the
 *         JSON cannot carry it; the reader uses the JSON node id);
 *       - "version_reason" (how the shim was chosen).
 *     LocalTableScan column types, which the text never prints, are given to
 *     the text parser through its column_type hook from the JSON's types.
 *     Pairs the text parser misreads are excluded from this comparison (the
 *     print and type checks still cover them; test_beyond_the_text checks
 *     what the JSON adds): a1_aggs and c2_more_functions (`if (p) a else b`,
 *     a form it keeps as a literal), e2_count_distinct and a2_distinct_aggs
 *     (`... FILTER (WHERE c)`, also a literal), l2_inset (a string with a
 *     comma inside an IN list), m1_merged_subqueries (named_struct's name
 *     literals "max(l_quantity)" read as calls), j8_self_join_reuse (an
 *     attribute under a reused exchange that no printed operator defines:
 *     literal text to the text parser, an attribute Spark typed in the JSON),
 *     l1_literals and u1_union (empty strings and commas: the text does not
 *     parse at all). Partition columns' types (ReadSchema omits them) are
 *     given to the text parser like LocalTableScan's.
 *  2. Printing. Every JSON model prints (em_plan_print) as Spark printed the
 *     text, plan ids normalized and runs of blank lines squeezed (the
 *     printer separates subquery entries by one more blank line than Spark
 *     3.5); the only other lines allowed to differ are those where Spark
 *     printed If as "if (p) a else b" (the reader models it as CASE).
 *  3. Types. Every expression Spark typed has Ember's inferred type equal to
 *     Spark's, except the listed known mismatches (known_mismatches: each a
 *     typing-rule difference, explained there) and the listed expressions
 *     Ember cannot type (known_untyped). Both lists must match exactly: a new
 *     mismatch and a vanished one both fail.
 *  4. Fragment inputs and query stages read as given-output leaves; the shim
 *     from the JSON's Spark version; bad inputs (truncated JSON, wrong field
 *     types, missing fields, deep nesting, unknown classes) fail cleanly
 *     with the JSON path in the message.
 */
#include <jansson.h>

#include "test_plan_common.h"

#include "ember/value_text.h"

/* ------------------------------------------------------------------ fixtures */

static const char *const extra_pairs[] = {
    "a1_aggs",       "c1_casts_math",  "e1_rollup",          "e2_count_distinct",
    "g1_generate",   "g2_coalesce",    "g3_repartition",     "g4_local_table",
    "j1_outer_joins", "j2_full_outer_smj", "j3_semi_anti",   "j4_shuffled_hash",
    "j5_nested_loop", "j6_cartesian",  "j7_existence",       "l1_literals",
    "l2_inset",      "s1_scalar_subquery", "s2_in_subquery", "t1_sort_limit",
    "t2_collect_limit", "t3_limit_offset", "t4_global_limit", "u1_union",
    "u2_union_distinct", "w1_window_rank", "w2_window_group_limit",
    "m1_merged_subqueries", "m2_reused_subquery", "m3_nested_subquery", "r1_range_sample",
    "c2_more_functions", "w3_window_ranges", "e3_cube_grouping_sets", "g5_posexplode_outer",
    "a2_distinct_aggs", "t5_distinct_sort", "j8_self_join_reuse", "f1_float_grouping",
    /* dpp/: over a warehouse with a partitioned table (dpp/README) */
    "dpp/d1_dynamic_pruning", "dpp/d2_partition_filter",
};
#define N_EXTRA ((int)(sizeof extra_pairs / sizeof extra_pairs[0]))
#define N_PAIRS (22 + N_EXTRA)

/* Pairs whose text the text parser misreads or rejects (see the header). */
static const char *const text_limited[] = {
    "a1_aggs",     "e2_count_distinct", "l2_inset",     "l1_literals",         "u1_union",
    "c2_more_functions", "a2_distinct_aggs", "m1_merged_subqueries", "j8_self_join_reuse"};
#define N_TEXT_LIMITED ((int)(sizeof text_limited / sizeof text_limited[0]))

static const char *data_dir(void) {
    static char dir[4096];
    const char *src = getenv("EMBER_SOURCE");
    snprintf(dir, sizeof dir, "%s/tests/data/spark-json", src && *src ? src : "..");
    return dir;
}

/* Pair i: its name ("q3", "extra/a1_aggs" -> "a1_aggs") and file path without suffix. */
static const char *pair_name(int i, char *path, size_t cap) {
    if (i < 22) {
        static char name[16];
        snprintf(name, sizeof name, "q%d", i + 1);
        snprintf(path, cap, "%s/%s", data_dir(), name);
        return name;
    }
    const char *name = extra_pairs[i - 22];
    if (strchr(name, '/')) {
        snprintf(path, cap, "%s/%s", data_dir(), name);
        return strchr(name, '/') + 1;
    }
    snprintf(path, cap, "%s/extra/%s", data_dir(), name);
    return name;
}

static char *read_file(const char *base, const char *suffix, size_t *len) {
    char path[4200];
    snprintf(path, sizeof path, "%s%s", base, suffix);
    char *text = plan_test_read(path, len);
    if (!text)
        fail_msg("cannot read %s", path);
    return text;
}

static const em_shim *shim35(void) {
    const em_shim *s = em_shim_for_version("3.5", NULL);
    assert_non_null(s);
    return s;
}

static em_plan *read_json_pair(const char *base) {
    size_t len = 0;
    char *json = read_file(base, ".json", &len);
    em_plan_parse_options opt = {.shim = shim35()};
    em_plan *plan = NULL;
    em_error err = {0};
    em_status st = em_plan_read_json(json, len, &opt, &plan, &err);
    free(json);
    if (st != EM_OK)
        fail_msg("%s.json: %s", base, err.msg);
    return plan;
}

/* ------------------------------------------------------------------ 1. same model */

static bool is_text_limited(const char *name) {
    for (size_t i = 0; i < sizeof text_limited / sizeof text_limited[0]; i++)
        if (strcmp(text_limited[i], name) == 0)
            return true;
    return false;
}

static void test_pairs_same_model(void **state) {
    (void)state;
    int same = 0, compared = 0;
    for (int i = 0; i < N_PAIRS; i++) {
        char base[4096];
        const char *name = pair_name(i, base, sizeof base);
        if (is_text_limited(name))
            continue;
        size_t jlen = 0, tlen = 0;
        char *json = read_file(base, ".json", &jlen);
        char *text = read_file(base, ".txt", &tlen);
        bool agree = false;
        em_strbuf diff = {0};
        em_error err = {0};
        if (em_plan_readers_agree(text, tlen, json, jlen, shim35(), &agree, &diff, &err) != EM_OK)
            fail_msg("%s: %s", base, err.msg);
        compared++;
        if (agree)
            same++;
        else
            print_error("%s: %s\n", name, em_strbuf_cstr(&diff));
        em_strbuf_reset(&diff);
        free(text);
        free(json);
    }
    print_message("same model: %d of %d pairs\n", same, compared);
    assert_int_equal(compared, N_PAIRS - N_TEXT_LIMITED);
    assert_int_equal(same, compared);
}

/* ------------------------------------------------------------------ 2. printing */

/* Normalized ids, blank-line runs squeezed, split into lines (the buffer is modified). */
static int split_lines(char *s, char **lines, int cap) {
    em_plan_blank_ids(s);
    int n = 0;
    bool prev_blank = false;
    for (char *p = s; *p && n < cap;) {
        char *e = strchr(p, '\n');
        if (e)
            *e = '\0';
        bool blank = *p == '\0';
        if (!(blank && prev_blank))
            lines[n++] = p;
        prev_blank = blank;
        if (!e)
            break;
        p = e + 1;
    }
    while (n > 0 && *lines[n - 1] == '\0')
        n--;
    return n;
}

static void test_pairs_print_as_spark(void **state) {
    (void)state;
    enum { CAP = 4000 };
    char **ls = malloc(CAP * sizeof *ls), **lj = malloc(CAP * sizeof *lj);
    assert_non_null(ls);
    assert_non_null(lj);
    int if_lines = 0;
    for (int i = 0; i < N_PAIRS; i++) {
        char base[4096];
        const char *name = pair_name(i, base, sizeof base);
        em_plan *jp = read_json_pair(base);
        char *printed;
        size_t pn, len = 0;
        em_error err = {0};
        EM_ASSERT_OK(em_plan_print(jp, NULL, &printed, &pn, &err), &err);
        char *spark = read_file(base, ".txt", &len);
        int ns = split_lines(spark, ls, CAP), nj = split_lines(printed, lj, CAP);
        if (ns != nj)
            fail_msg("%s: Spark's text has %d lines, the JSON model prints %d", name, ns, nj);
        for (int k = 0; k < ns; k++) {
            if (strcmp(ls[k], lj[k]) == 0)
                continue;
            if (strstr(ls[k], "if ((")) {
                if_lines++; /* If, printed by the reader as CASE WHEN */
                continue;
            }
            fail_msg("%s: line %d differs:\n  spark: %s\n  json:  %s", name, k + 1, ls[k], lj[k]);
        }
        free(spark);
        free(printed);
        em_plan_destroy(jp);
    }
    assert_int_equal(if_lines, 4); /* a1_aggs: 2, l1_literals: 1, c2_more_functions: 1 */
    free(ls);
    free(lj);
}

/* ------------------------------------------------------------------ 3. types */

/*
 * Where Ember's typing rules (plan_types.c) and Spark disagree, by pair and printed
 * expression; each entry would be a rule difference, not a reader error (the text
 * parser's model, identical, types them the same). None is left: the differences this
 * list used to hold were fixed in the rules, each now pinned here by its absence:
 *
 *  - a literal compared with a decimal takes the wider decimal of both sides, and a
 *    literal CASE branch, IN item or coalesce/greatest/least argument the common type
 *    of its set (DecimalPrecision, TypeCoercion; the cast is folded into the literal);
 *  - Expand's literals and null literals are of their column's type (a grouping id is
 *    a bigint), array() elements of the array's element type, `null AS k#5L` a bigint;
 *  - round/bround of decimal(p,s) to d places is decimal(p - s + 1 + min(s, d),
 *    min(s, d)) (RoundBase, Spark 3.3 on);
 *  - the arguments of Contains/StartsWith/EndsWith are strings even when spelled as
 *    digits (Contains(c, 000));
 *  - percentile_approx's percentage is a double although printed 0.5.
 *
 * The list ends with a NULL entry (C has no empty arrays).
 */
typedef struct known_type {
    const char *pair;
    const char *expr; /* as printed */
    const char *ember, *spark;
    int count;
} known_type;

static const known_type known_mismatches[] = {
    {NULL, NULL, NULL, NULL, 0},
};
#define N_KNOWN_MISMATCHES ((int)(sizeof known_mismatches / sizeof known_mismatches[0]) - 1)

/*
 * Expressions Spark typed and Ember cannot (no rule), per pair:
 *  a1_aggs            collect_set's and max_by's aggregation buffers have no rule, so the
 *                     buffer attributes after them (and what reads them) stay untyped,
 *                     and max_by itself (26)
 *  e2_count_distinct  the aggregates with FILTER are RAW (read_agg), so their buffers (10)
 *  a2_distinct_aggs   percentile_approx has no result rule, collect_list no buffer rule,
 *                     FILTER aggregates are RAW: what follows them stays untyped (50)
 *  g5_posexplode_outer the generator's output attributes (pos, col) have no rule (2)
 */
static const struct {
    const char *pair;
    int count;
} known_untyped[] = {{"a1_aggs", 26},
                     {"e2_count_distinct", 10},
                     {"a2_distinct_aggs", 50},
                     {"g5_posexplode_outer", 2}};

typedef struct type_walk {
    const char *pair;
    int checked;
    int untyped;
    int counts[N_KNOWN_MISMATCHES + 1];
    int unknown; /* mismatches not in the list */
} type_walk;

static void type_visit(const em_plan_node *node, const em_plan_field *field, const em_expr *e,
                       void *ctx) {
    (void)field;
    type_walk *w = ctx;
    if (!e->spark_type_known)
        return;
    w->checked++;
    if (!e->type_known) {
        w->untyped++;
        return;
    }
    if (em_type_equal(e->type, e->spark_type))
        return;
    char *text = plan_test_expr_text(e);
    char ember[64], spark[64];
    em_type_format(e->type, ember, sizeof ember);
    em_type_format(e->spark_type, spark, sizeof spark);
    bool listed = false;
    for (int i = 0; i < N_KNOWN_MISMATCHES; i++) {
        const known_type *k = &known_mismatches[i];
        if (strcmp(k->pair, w->pair) == 0 && strcmp(k->expr, text) == 0 &&
            strcmp(k->ember, ember) == 0 && strcmp(k->spark, spark) == 0) {
            w->counts[i]++;
            listed = true;
        }
    }
    if (!listed) {
        w->unknown++;
        print_error("%s: (%d) %s: %s typed %s by Ember, %s by Spark\n", w->pair, node->id,
                    node->name, text, ember, spark);
    }
    free(text);
}

static void test_types_against_spark(void **state) {
    (void)state;
    int checked = 0, mismatches = 0, untyped = 0;
    int listed[N_KNOWN_MISMATCHES + 1] = {0};
    for (int i = 0; i < N_PAIRS; i++) {
        char base[4096];
        const char *name = pair_name(i, base, sizeof base);
        em_plan *jp = read_json_pair(base);
        type_walk w = {.pair = name};
        plan_test_walk(jp, type_visit, &w);
        checked += w.checked;
        untyped += w.untyped;
        assert_int_equal(w.unknown, 0);
        for (int k = 0; k < N_KNOWN_MISMATCHES; k++) {
            listed[k] += w.counts[k];
            mismatches += w.counts[k];
        }
        int expect_untyped = 0;
        for (size_t k = 0; k < sizeof known_untyped / sizeof known_untyped[0]; k++)
            if (strcmp(known_untyped[k].pair, name) == 0)
                expect_untyped = known_untyped[k].count;
        if (w.untyped != expect_untyped)
            fail_msg("%s: %d expressions Spark typed are untyped by Ember, expected %d", name,
                     w.untyped, expect_untyped);
        em_plan_destroy(jp);
    }
    for (int k = 0; k < N_KNOWN_MISMATCHES; k++)
        if (listed[k] != known_mismatches[k].count)
            fail_msg("%s: %s (%s vs Spark's %s) seen %d times, listed %d", known_mismatches[k].pair,
                     known_mismatches[k].expr, known_mismatches[k].ember,
                     known_mismatches[k].spark, listed[k], known_mismatches[k].count);
    print_message("types: %d expressions compared, %d known mismatches, %d untyped\n", checked,
                  mismatches, untyped);
    assert_true(checked > 5000);
}

/* ------------------------------------------------------------------ beyond the text */

static const em_expr *find_expr(const em_expr *e, bool (*pred)(const em_expr *)) {
    if (pred(e))
        return e;
    for (int i = 0; i < e->n_args; i++) {
        const em_expr *f = find_expr(e->args[i], pred);
        if (f)
            return f;
    }
    return NULL;
}

static const em_expr *find_in_plan(const em_plan *p, bool (*pred)(const em_expr *)) {
    for (int id = 1; id <= em_plan_max_id(p); id++) {
        const em_plan_node *n = em_plan_node_by_id(p, id);
        for (int f = 0; n && f < n->n_fields; f++)
            for (int i = 0; i < n->fields[f].n_exprs; i++) {
                const em_expr *e = find_expr(n->fields[f].exprs[i], pred);
                if (e)
                    return e;
            }
    }
    return NULL;
}

static bool is_in(const em_expr *e) { return e->kind == EM_EXPR_IN; }
static bool is_inset_strings(const em_expr *e) {
    return e->kind == EM_EXPR_INSET && e->n_args > 1 && e->args[1]->kind == EM_EXPR_LITERAL &&
           strcmp(e->args[1]->text, "A") == 0;
}
static bool is_raw(const em_expr *e) { return e->kind == EM_EXPR_RAW; }
static bool is_case_3(const em_expr *e) {
    return e->kind == EM_EXPR_CASE && e->n_args == 3 && e->has_else;
}
static bool is_attr_319(const em_expr *e) { return e->kind == EM_EXPR_ATTR && e->id == 319; }
static bool is_comma_literal(const em_expr *e) {
    return e->kind == EM_EXPR_LITERAL && e->value_exact && strcmp(e->text, "a, b") == 0;
}

static void test_beyond_the_text(void **state) {
    (void)state;
    char base[4096];
    /* l1_literals: IN ('BUILDING', 'a, b', '', 'x#1'): four exact strings */
    snprintf(base, sizeof base, "%s/extra/l1_literals", data_dir());
    em_plan *p = read_json_pair(base);
    const em_expr *in = find_in_plan(p, is_in);
    assert_non_null(in);
    assert_int_equal(in->n_args, 5);
    const char *values[] = {"BUILDING", "a, b", "", "x#1"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(in->args[i + 1]->kind, EM_EXPR_LITERAL);
        assert_true(in->args[i + 1]->value_exact);
        assert_false(in->args[i + 1]->value_null);
        assert_string_equal(in->args[i + 1]->text, values[i]);
        assert_true(in->args[i + 1]->type_known);
        assert_int_equal(in->args[i + 1]->type.id, EM_TYPE_STRING);
    }
    /* if(c_nationkey = 3, 'three', 'other') as CASE WHEN ... ELSE ... END */
    const em_expr *cs = find_in_plan(p, is_case_3);
    assert_non_null(cs);
    assert_int_equal(cs->type.id, EM_TYPE_STRING);
    em_plan_destroy(p);

    /* u1_union: the literal 'a, b' of the third branch */
    snprintf(base, sizeof base, "%s/extra/u1_union", data_dir());
    p = read_json_pair(base);
    assert_non_null(find_in_plan(p, is_comma_literal));
    assert_int_equal(em_plan_root(p)->kind, EM_NODE_UNION);
    assert_int_equal(em_plan_root(p)->n_children, 3);
    assert_int_equal(em_plan_root(p)->n_output, 2);
    em_plan_destroy(p);

    /* l2_inset: INSET with the value "D, E" whole, values sorted as Spark prints them */
    snprintf(base, sizeof base, "%s/extra/l2_inset", data_dir());
    p = read_json_pair(base);
    const em_expr *is = find_in_plan(p, is_inset_strings);
    assert_non_null(is);
    assert_int_equal(is->n_args, 12);
    assert_string_equal(is->args[5]->text, "D, E");
    em_plan_destroy(p);

    /* e2_count_distinct: aggregates with FILTER are RAW over the aggregate and condition */
    snprintf(base, sizeof base, "%s/extra/e2_count_distinct", data_dir());
    p = read_json_pair(base);
    const em_expr *raw = find_in_plan(p, is_raw);
    assert_non_null(raw);
    assert_int_equal(raw->n_args, 2);
    assert_int_equal(raw->args[0]->kind, EM_EXPR_AGG);
    assert_int_equal(raw->args[1]->kind, EM_EXPR_BINARY);
    assert_non_null(strstr(raw->text, " FILTER (WHERE (gid#"));
    em_plan_destroy(p);

    /* j8_self_join_reuse: the final aggregate over the reused exchange names l_quantity#319,
     * which no printed operator defines; it stays an attribute, typed as Spark typed it */
    snprintf(base, sizeof base, "%s/extra/j8_self_join_reuse", data_dir());
    p = read_json_pair(base);
    const em_expr *q = find_in_plan(p, is_attr_319);
    assert_non_null(q);
    assert_true(q->type_known);
    assert_int_equal(q->type.id, EM_TYPE_DECIMAL);
    assert_int_equal(q->type.precision, 10);
    em_plan_destroy(p);
}

/* ------------------------------------------------------------------ timestamp literals */

static bool is_ts_literal(const em_expr *e) {
    return e->kind == EM_EXPR_LITERAL && (e->value_int_type == EM_TYPE_TIMESTAMP ||
                                          e->value_int_type == EM_TYPE_TIMESTAMP_NTZ);
}

/* l1_literals' timestamp '2024-03-10 10:30:00.123456' (dumped in UTC), with its type
 * written as `type`, read in session time zone `zone` (NULL: the plan's own guess). */
static em_plan *read_l1_in_zone(const char *type, const char *zone) {
    char path[4200];
    snprintf(path, sizeof path, "%s/extra/l1_literals.json", data_dir());
    size_t len = 0;
    char *json = plan_test_read(path, &len);
    assert_non_null(json);
    const char *from = "\"type\":\"timestamp\",\"nullable\":false,\"value\":1710066600123456";
    char *at = strstr(json, from);
    assert_non_null(at);
    char *doc = malloc(len + 64);
    assert_non_null(doc);
    snprintf(doc, len + 64, "%.*s\"type\":\"%s\",\"nullable\":false,\"value\":1710066600123456%s",
             (int)(at - json), json, type, at + strlen(from));
    free(json);
    em_plan_parse_options opt = {.shim = shim35(), .time_zone = zone};
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_read_json(doc, strlen(doc), &opt, &p, &err), &err);
    free(doc);
    return p;
}

/* A timestamp literal's text is Literal.toString in the session zone the caller names
 * (which the expression compilers read it back in), not in a zone guessed from the
 * plan; a timestamp_ntz's is its wall-clock time in any zone. Both keep Spark's
 * microseconds and are typed as Spark typed them. */
static void test_timestamp_literal_zone(void **state) {
    (void)state;
    static const struct {
        const char *type, *zone, *text;
        em_type_id id;
    } cases[] = {
        {"timestamp", "America/Los_Angeles", "2024-03-10 03:30:00.123456", EM_TYPE_TIMESTAMP},
        {"timestamp", "+05:30", "2024-03-10 16:00:00.123456", EM_TYPE_TIMESTAMP},
        {"timestamp", "UTC", "2024-03-10 10:30:00.123456", EM_TYPE_TIMESTAMP},
        /* no zone given: the casts' timeZoneId (Etc/UTC, as dumped) */
        {"timestamp", NULL, "2024-03-10 10:30:00.123456", EM_TYPE_TIMESTAMP},
        {"timestamp_ntz", "America/Los_Angeles", "2024-03-10 10:30:00.123456",
         EM_TYPE_TIMESTAMP_NTZ},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        em_plan *p = read_l1_in_zone(cases[i].type, cases[i].zone);
        const em_expr *lit = find_in_plan(p, is_ts_literal);
        assert_non_null(lit);
        if (strcmp(lit->text, cases[i].text))
            fail_msg("%s in %s: text '%s', expected '%s'", cases[i].type,
                     cases[i].zone ? cases[i].zone : "(none)", lit->text, cases[i].text);
        assert_int_equal(lit->value_int_type, cases[i].id);
        assert_int_equal(lit->value_int, 1710066600123456LL);
        assert_true(lit->type_known);
        assert_int_equal(lit->type.id, cases[i].id);
        em_plan_destroy(p);
    }
    /* a zone the system does not know fails the literal that needs it, by its place */
    char path[4200];
    snprintf(path, sizeof path, "%s/extra/l1_literals.json", data_dir());
    size_t len = 0;
    char *json = plan_test_read(path, &len);
    assert_non_null(json);
    em_plan_parse_options opt = {.shim = shim35(), .time_zone = "Nowhere/Atlantis"};
    em_plan *p = NULL;
    em_error err = {0};
    assert_int_equal(em_plan_read_json(json, len, &opt, &p, &err), EM_ERR_PARSE);
    assert_null(p);
    assert_non_null(strstr(err.msg, "a timestamp literal in session time zone Nowhere/Atlantis"));
    assert_non_null(strstr(err.msg, "(Literal).value"));
    free(json);
}

/* ------------------------------------------------------------------ synthetic JSON */

static json_t *load_json_pair(const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.json", data_dir(), name);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc)
        fail_msg("%s: %s", path, jerr.text);
    return doc;
}

/* The first JSON node (pre-order over children) of this class (simple name). */
static json_t *find_node(json_t *n, const char *cls) {
    const char *c = json_string_value(json_object_get(n, "class"));
    const char *dot = c ? strrchr(c, '.') : NULL;
    if (dot && strcmp(dot + 1, cls) == 0)
        return n;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(n, "children"), i, k) {
        json_t *f = find_node(k, cls);
        if (f)
            return f;
    }
    return NULL;
}

static em_status read_doc(json_t *doc, em_plan **out, em_error *err) {
    char *text = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT);
    assert_non_null(text);
    em_status st = em_plan_read_json(text, strlen(text), NULL, out, err);
    free(text);
    return st;
}

static const em_plan_node *node_with_source(const em_plan *p, int source) {
    for (int id = 1; id <= em_plan_max_id(p); id++) {
        const em_plan_node *n = em_plan_node_by_id(p, id);
        if (n && n->source_index == source)
            return n;
    }
    return NULL;
}

/* Sets "ignoreNulls" of every Lag and Lead expression under j. */
static void set_ignore_nulls(json_t *j, bool v) {
    if (json_is_array(j)) {
        size_t i;
        json_t *k;
        json_array_foreach(j, i, k) set_ignore_nulls(k, v);
        return;
    }
    if (!json_is_object(j))
        return;
    const char *c = json_string_value(json_object_get(j, "class"));
    const char *dot = c ? strrchr(c, '.') : NULL;
    if (dot && (strcmp(dot, ".Lag") == 0 || strcmp(dot, ".Lead") == 0))
        json_object_set_new(json_object_get(j, "fields"), "ignoreNulls", json_boolean(v));
    const char *key;
    json_t *k;
    json_object_foreach(j, key, k) set_ignore_nulls(k, v);
}

static bool is_lag_or_lead(const em_expr *e) {
    return e->kind == EM_EXPR_CALL && e->name &&
           (strcmp(e->name, "lag") == 0 || strcmp(e->name, "lead") == 0);
}

/* lag/lead IGNORE NULLS: Spark's print drops it, the JSON's ignoreNulls keeps it, read as
 * the fourth argument `true` the Window operator reads (ops/window_spec.c). */
static void test_offset_window_ignore_nulls(void **state) {
    (void)state;
    for (int ignore = 0; ignore <= 1; ignore++) {
        json_t *doc = load_json_pair("extra/w1_window_rank");
        set_ignore_nulls(doc, ignore);
        em_plan *p = NULL;
        em_error err = {0};
        EM_ASSERT_OK(read_doc(doc, &p, &err), &err);
        const em_expr *e = find_in_plan(p, is_lag_or_lead);
        assert_non_null(e);
        assert_int_equal(e->n_args, ignore ? 4 : 3);
        if (ignore) {
            assert_int_equal(e->args[3]->kind, EM_EXPR_LITERAL);
            assert_string_equal(e->args[3]->text, "true");
        }
        em_plan_destroy(p);
        json_decref(doc);
    }
}

/* q3 with its first broadcast exchange as fragment input 0: a leaf with the given output. */
static void test_fragment_input(void **state) {
    (void)state;
    json_t *doc = load_json_pair("q3");
    json_t *bx = find_node(json_object_get(doc, "root"), "BroadcastExchangeExec");
    assert_non_null(bx);
    int src = (int)json_integer_value(json_object_get(bx, "id"));
    json_object_set_new(bx, "input", json_integer(0));
    json_object_del(bx, "children");
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(read_doc(doc, &p, &err), &err);
    const em_plan_node *in = node_with_source(p, src);
    assert_non_null(in);
    assert_true(in->is_input);
    assert_int_equal(in->input_index, 0);
    assert_int_equal(in->n_children, 0);
    assert_int_equal(in->kind, EM_NODE_BROADCAST_EXCHANGE);
    assert_null(em_plan_node_field(in, EM_FIELD_INPUT)); /* its child is not written */
    assert_non_null(em_plan_node_field(in, EM_FIELD_ARGUMENTS));
    assert_int_equal(in->n_output, 1);
    assert_true(in->output[0]->type_known);
    assert_int_equal(in->output[0]->type.id, EM_TYPE_LONG);
    /* operators above it are typed through it; ids count the leaf once */
    assert_int_equal(em_plan_max_id(p), 21 - 4);
    const em_plan_node *root = em_plan_root(p);
    assert_int_equal(root->kind, EM_NODE_TAKE_ORDERED_AND_PROJECT);
    for (int i = 0; i < root->n_output; i++)
        assert_true(root->output[i]->type_known);
    em_plan_destroy(p);
    json_decref(doc);
}

/* A shuffle query stage written without its plan: a leaf with Output and Arguments: id. */
static void test_query_stage_leaf(void **state) {
    (void)state;
    json_t *doc = load_json_pair("q1");
    json_t *ex = find_node(json_object_get(doc, "root"), "ShuffleExchangeExec");
    assert_non_null(ex);
    json_t *kids = json_object_get(ex, "children");
    json_t *child = json_array_get(kids, 0); /* WholeStageCodegen (1) */
    json_t *stage = json_object();
    json_object_set_new(
        stage, "class",
        json_string("org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec"));
    json_object_set(stage, "id", json_object_get(child, "id"));
    json_object_set_new(stage, "name", json_string("ShuffleQueryStage"));
    json_object_set(stage, "output", json_object_get(child, "output"));
    json_t *info = json_object();
    json_object_set_new(info, "id", json_integer(7));
    json_object_set_new(info, "plan", json_string("org.apache.spark.sql.execution.exchange.X"));
    json_object_set_new(info, "planName", json_string("Exchange"));
    json_object_set_new(stage, "stage", info);
    json_object_set_new(stage, "children", json_array());
    json_array_set_new(kids, 0, stage);
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(read_doc(doc, &p, &err), &err);
    int src = (int)json_integer_value(json_object_get(stage, "id"));
    const em_plan_node *s = node_with_source(p, src);
    assert_non_null(s);
    assert_false(s->stage_of_ember);
    em_plan_destroy(p);
    /* a stage over Ember's own shuffle is known as one */
    json_object_set_new(info, "plan",
                        json_string("org.apache.spark.sql.execution.ember.spark35.EmberShuffleExchangeExec"));
    json_object_set_new(info, "emberShuffle", json_true());
    EM_ASSERT_OK(read_doc(doc, &p, &err), &err);
    s = node_with_source(p, src);
    assert_non_null(s);
    assert_true(s->stage_of_ember);
    assert_int_equal(s->kind, EM_NODE_SHUFFLE_QUERY_STAGE);
    assert_int_equal(s->n_children, 0);
    assert_false(s->is_input);
    const em_plan_field *args = em_plan_node_field(s, EM_FIELD_ARGUMENTS);
    assert_non_null(args);
    assert_int_equal(args->n_exprs, 1);
    assert_string_equal(args->exprs[0]->text, "7");
    assert_non_null(em_plan_node_field(s, EM_FIELD_OUTPUT));
    assert_true(s->n_output > 0);
    for (int i = 0; i < s->n_output; i++)
        assert_true(s->output[i]->type_known);
    assert_int_equal(s->id, 1);
    for (int i = 0; i < em_plan_root(p)->n_output; i++)
        assert_true(em_plan_root(p)->output[i]->type_known);
    em_plan_destroy(p);
    json_decref(doc);
}

/* em_plan_mark_order: a sort-merge join under TakeOrderedAndProject (q2, through
 * the streamed sides of broadcast joins) has no consumer of its order; one
 * whose stage hands its rows to an unknown consumer keeps it; one under
 * an exchange's map side does not. */
static void test_order_marks(void **state) {
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/q2", data_dir());
    em_plan *p = read_json_pair(path);
    const em_plan_node *smj = em_plan_node_by_id(p, 41);
    assert_non_null(smj);
    assert_int_equal(smj->kind, EM_NODE_SORT_MERGE_JOIN);
    assert_false(smj->order_unwanted);
    em_plan_mark_order(p, em_plan_node_by_id(p, 42)); /* its Project as a stage's root */
    assert_false(smj->order_unwanted);
    em_plan_mark_order(p, em_plan_exec_root(p));
    assert_true(smj->order_unwanted);
    em_plan_destroy(p);

    snprintf(path, sizeof path, "%s/extra/j2_full_outer_smj", data_dir());
    p = read_json_pair(path);
    smj = em_plan_node_by_id(p, 9);
    assert_int_equal(smj->kind, EM_NODE_SORT_MERGE_JOIN);
    em_plan_mark_order(p, em_plan_exec_root(p)); /* Project (10) at the top */
    assert_false(smj->order_unwanted);
    em_plan_destroy(p);
}

/* Unknown operator and expression classes: kept, named as the JSON names them. */
static void test_unknown_classes(void **state) {
    (void)state;
    json_t *doc = load_json_pair("q6");
    json_t *agg = find_node(json_object_get(doc, "root"), "HashAggregateExec");
    json_object_set_new(agg, "class", json_string("com.example.FancyAggregateExec"));
    json_object_set_new(agg, "name", json_string("FancyAggregate"));
    json_t *fn = json_object_get(
        json_object_get(json_array_get(json_object_get(json_object_get(agg, "fields"),
                                                       "aggregateExpressions"),
                                       0),
                        "fields"),
        "aggregateFunction");
    json_object_set_new(fn, "class", json_string("com.example.FancySum"));
    json_object_set_new(fn, "pretty", json_string("fancy_sum"));
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(read_doc(doc, &p, &err), &err);
    const em_plan_node *root = em_plan_root(p);
    assert_int_equal(root->kind, EM_NODE_UNKNOWN);
    assert_string_equal(root->name, "FancyAggregate");
    assert_int_equal(root->n_children, 1);
    assert_int_equal(root->n_output, 1);
    /* a unary operator's Input and its constructor fields as Arguments */
    assert_non_null(em_plan_node_field(root, EM_FIELD_INPUT));
    const em_plan_field *args = em_plan_node_field(root, EM_FIELD_ARGUMENTS);
    assert_non_null(args);
    char *text = NULL;
    size_t n;
    EM_ASSERT_OK(em_plan_print(p, NULL, &text, &n, &err), &err);
    assert_non_null(strstr(text, "FancyAggregate (4)"));
    /* a class the reader does not know prints every field (evalMode too) */
    assert_non_null(strstr(text, "[fancy_sum((l_extendedprice#21 * l_discount#22), LEGACY)]"));
    free(text);
    em_plan_destroy(p);
    json_decref(doc);
}

/* Drops "string" from objects written as {"class", "string"} (the writer may name objects
 * by class only, their toString being costly). */
static void strip_object_strings(json_t *v) {
    if (json_is_object(v)) {
        if (json_object_size(v) == 2 && json_object_get(v, "class") &&
            json_object_get(v, "string"))
            json_object_del(v, "string");
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x) { strip_object_strings(x); }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) { strip_object_strings(x); }
    }
}

/* Objects named by class only read as their simple class name. */
static void test_objects_by_class_only(void **state) {
    (void)state;
    json_t *doc = load_json_pair("extra/u1_union");
    strip_object_strings(doc);
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(read_doc(doc, &p, &err), &err);
    const em_plan_node *one = NULL;
    for (int id = 1; id <= em_plan_max_id(p) && !one; id++)
        if (strcmp(em_plan_node_by_id(p, id)->name, "Scan OneRowRelation") == 0)
            one = em_plan_node_by_id(p, id);
    assert_non_null(one);
    const em_plan_field *args = em_plan_node_field(one, EM_FIELD_ARGUMENTS);
    assert_non_null(args);
    assert_string_equal(args->exprs[0]->text, "ParallelCollectionRDD");
    const em_plan_node *scan = em_plan_node_by_id(p, 1);
    assert_string_equal(em_plan_node_field(scan, EM_FIELD_LOCATION)->text,
                        "Location: InMemoryFileIndex [file:/tmp/tpch001/nation]");
    em_plan_destroy(p);
    json_decref(doc);
}

/* The shim from the JSON's Spark version, source indexes, and ids in Spark's order. */
static void test_version_and_ids(void **state) {
    (void)state;
    size_t len = 0;
    char base[4096];
    snprintf(base, sizeof base, "%s/q22", data_dir());
    char *json = read_file(base, ".json", &len);
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_read_json(json, len, NULL, &p, &err), &err);
    assert_string_equal(em_shim_name(em_plan_shim(p)), "3.5");
    assert_non_null(strstr(em_plan_shim_reason(p), "3.5.8"));
    /* Sort (13) at the top, scan (1) first, the subquery's tree 14..20 */
    assert_int_equal(em_plan_root(p)->id, 13);
    assert_int_equal(em_plan_root(p)->source_index, 1); /* under WholeStageCodegen (0) */
    assert_true(em_plan_root(p)->whole_stage);
    assert_int_equal(em_plan_root(p)->codegen_id, 4);
    assert_int_equal(em_plan_node_by_id(p, 1)->kind, EM_NODE_SCAN);
    assert_int_equal(em_plan_n_subqueries(p), 1);
    const em_plan_subquery *sq = em_plan_subquery_at(p, 0);
    assert_int_equal(sq->host_id, 3);
    assert_int_equal(sq->root->id, 20);
    assert_int_equal(sq->expr->kind, EM_EXPR_SCALAR_SUBQUERY);
    assert_string_equal(sq->expr->name, "scalar-subquery#603");
    em_plan_destroy(p);

    /* a version no shim covers */
    char *old = strstr(json, "\"spark\":\"3.5.8\"");
    assert_non_null(old);
    memcpy(old + 9, "2.4.8", 5);
    em_status st = em_plan_read_json(json, len, NULL, &p, &err);
    assert_int_equal(st, EM_ERR_UNSUPPORTED);
    assert_null(p);
    free(json);
}

/* ------------------------------------------------------------------ bad input */

typedef struct bad_case {
    const char *what;
    em_status status;
    const char *message; /* a part of the error message */
} bad_case;

static void expect_failure(const char *text, size_t len, const bad_case *c) {
    em_plan *p = (em_plan *)0x1;
    em_error err = {0};
    em_status st = em_plan_read_json(text, len, NULL, &p, &err);
    if (st != c->status)
        fail_msg("%s: status %s (%s), expected %s", c->what, em_status_name(st), err.msg,
                 em_status_name(c->status));
    assert_null(p);
    if (!strstr(err.msg, c->message))
        fail_msg("%s: message '%s' lacks '%s'", c->what, err.msg, c->message);
}

static void expect_str_failure(const char *text, const bad_case *c) {
    expect_failure(text, strlen(text), c);
}

static void expect_doc_failure(json_t *doc, const bad_case *c) {
    char *text = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT);
    assert_non_null(text);
    expect_failure(text, strlen(text), c);
    free(text);
}

static void test_bad_inputs(void **state) {
    (void)state;
    size_t len = 0;
    char base[4096];
    snprintf(base, sizeof base, "%s/q3", data_dir());
    char *json = read_file(base, ".json", &len);
    /* truncated JSON: jansson's line and column */
    bad_case trunc = {"truncated", EM_ERR_PARSE, "plan:1:"};
    expect_failure(json, len / 2, &trunc);
    bad_case trunc2 = {"truncated", EM_ERR_PARSE, "invalid JSON"};
    expect_failure(json, len - 1, &trunc2);
    bad_case empty = {"empty", EM_ERR_PARSE, "invalid JSON"};
    expect_failure("", 0, &empty);
    bad_case nul = {"NUL inside", EM_ERR_PARSE, "invalid JSON"};
    expect_failure("{\"a\":\"x\0y\"}", 11, &nul);
    bad_case arr = {"not an object", EM_ERR_PARSE, "plan: expected a JSON object"};
    expect_failure("[1,2]", 5, &arr);
    bad_case noroot = {"no root", EM_ERR_PARSE, "plan.root: missing"};
    expect_str_failure("{\"format\":1,\"spark\":\"3.5.8\"}", &noroot);
    bad_case fmt = {"format", EM_ERR_PARSE, "plan.format: unsupported format version"};
    expect_str_failure("{\"format\":2,\"spark\":\"3.5.8\",\"root\":{}}", &fmt);
    bad_case nover = {"no version", EM_ERR_PARSE, "plan.spark: missing"};
    expect_str_failure("{\"format\":1,\"root\":{}}", &nover);
    free(json);

    /* wrong field types, missing fields: the path names the place */
    json_t *doc = load_json_pair("q3");
    json_t *filter = find_node(json_object_get(doc, "root"), "FilterExec");
    json_t *cond = json_object_get(json_object_get(filter, "fields"), "condition");
    json_incref(cond);
    json_object_set_new(json_object_get(filter, "fields"), "condition", json_integer(7));
    bad_case c1 = {"condition is a number", EM_ERR_PARSE,
                   "(FilterExec).fields.condition: expected an expression object"};
    expect_doc_failure(doc, &c1);
    bad_case c1p = {"path from the root", EM_ERR_PARSE,
                    "plan.root (TakeOrderedAndProjectExec).children[0]"};
    expect_doc_failure(doc, &c1p);
    json_object_del(json_object_get(filter, "fields"), "condition");
    bad_case c2 = {"condition missing", EM_ERR_PARSE, "(FilterExec).fields.condition: missing"};
    expect_doc_failure(doc, &c2);
    json_object_set_new(json_object_get(filter, "fields"), "condition", cond);
    /* an attribute without an id, deep inside the condition */
    json_t *attr = json_object_get(json_object_get(cond, "fields"), "left");
    while (json_object_get(json_object_get(attr, "fields"), "left"))
        attr = json_object_get(json_object_get(attr, "fields"), "left");
    json_t *child = json_object_get(json_object_get(attr, "fields"), "child");
    if (child)
        attr = child;
    json_object_del(attr, "exprId");
    bad_case c3 = {"attribute without exprId", EM_ERR_PARSE,
                   "(AttributeReference).exprId: expected an integer expression id"};
    expect_doc_failure(doc, &c3);
    json_object_set_new(attr, "exprId", json_integer(1));
    json_object_set_new(filter, "id", json_string("seven"));
    bad_case c4 = {"node id a string", EM_ERR_PARSE,
                   "(FilterExec).id: expected an integer node id"};
    expect_doc_failure(doc, &c4);
    json_object_set_new(filter, "id", json_integer(3));
    json_object_set_new(filter, "children", json_string("none"));
    bad_case c5 = {"children not an array", EM_ERR_PARSE,
                   "(FilterExec).children: expected an array of nodes"};
    expect_doc_failure(doc, &c5);
    json_decref(doc);

    doc = load_json_pair("q3");
    json_t *scan = find_node(json_object_get(doc, "root"), "FileSourceScanExec");
    json_object_set_new(json_object_get(scan, "scan"), "requiredSchema", json_string("int"));
    bad_case c6 = {"bad schema", EM_ERR_PARSE,
                   "(FileSourceScanExec).scan.requiredSchema: expected 'struct<name:type,...>'"};
    expect_doc_failure(doc, &c6);
    json_object_del(scan, "scan");
    bad_case c7 = {"scan summary missing", EM_ERR_PARSE, "(FileSourceScanExec).scan: missing"};
    expect_doc_failure(doc, &c7);
    json_decref(doc);

    /* deep nesting: expressions beyond the reader's bound, JSON beyond jansson's */
    json_t *deep = json_object();
    json_t *e = json_object();
    const char *pkg = "org.apache.spark.sql.catalyst.expressions.";
    char cls[128];
    snprintf(cls, sizeof cls, "%sLiteral", pkg);
    json_object_set_new(e, "class", json_string(cls));
    json_object_set_new(e, "pretty", json_string("literal"));
    json_object_set_new(e, "type", json_string("boolean"));
    json_object_set_new(e, "value", json_true());
    for (int i = 0; i < 600; i++) {
        json_t *n = json_object();
        snprintf(cls, sizeof cls, "%sNot", pkg);
        json_object_set_new(n, "class", json_string(cls));
        json_object_set_new(n, "pretty", json_string("not"));
        json_object_set_new(n, "type", json_string("boolean"));
        json_t *f = json_object();
        json_object_set_new(f, "child", e);
        json_object_set_new(n, "fields", f);
        e = n;
    }
    json_t *node = json_object();
    json_object_set_new(node, "class", json_string("org.apache.spark.sql.execution.FilterExec"));
    json_object_set_new(node, "id", json_integer(0));
    json_object_set_new(node, "name", json_string("Filter"));
    json_object_set_new(node, "output", json_array());
    json_t *nf = json_object();
    json_object_set_new(nf, "condition", e);
    json_object_set_new(node, "fields", nf);
    json_object_set_new(node, "children", json_array());
    json_object_set_new(deep, "format", json_integer(1));
    json_object_set_new(deep, "spark", json_string("3.5.8"));
    json_object_set_new(deep, "root", node);
    bad_case d1 = {"deep expression", EM_ERR_PARSE, "expressions nested deeper than"};
    expect_doc_failure(deep, &d1);
    json_decref(deep);
    size_t dn = 3 * 3000 + 64;
    char *dj = malloc(dn);
    assert_non_null(dj);
    size_t k = (size_t)snprintf(dj, dn, "{\"format\":1,\"spark\":\"3.5.8\",\"root\":");
    for (int i = 0; i < 3000; i++)
        k += (size_t)snprintf(dj + k, dn - k, "[");
    bad_case d2 = {"deep JSON", EM_ERR_PARSE, "invalid JSON"};
    expect_failure(dj, k, &d2);
    /* deep plans: nodes beyond the reader's bound (valid JSON, 450 operators deep) */
    free(dj);
    dn = 450 * 160 + 256;
    dj = malloc(dn);
    assert_non_null(dj);
    k = (size_t)snprintf(dj, dn, "{\"spark\":\"3.5.8\",\"root\":");
    for (int i = 0; i < 450; i++)
        k += (size_t)snprintf(dj + k, dn - k,
                              "{\"class\":\"x.ThingExec\",\"id\":%d,\"name\":\"Thing\","
                              "\"output\":[],\"fields\":{},\"children\":[",
                              i);
    k += (size_t)snprintf(dj + k, dn - k,
                          "{\"class\":\"x.LeafExec\",\"id\":450,\"name\":\"Leaf\","
                          "\"output\":[],\"fields\":{},\"children\":[]}");
    for (int i = 0; i < 450; i++)
        k += (size_t)snprintf(dj + k, dn - k, "]}");
    k += (size_t)snprintf(dj + k, dn - k, "}");
    bad_case d3 = {"deep plan", EM_ERR_PARSE, "plan nested deeper than 400 levels"};
    expect_failure(dj, k, &d3);
    free(dj);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_same_model),    cmocka_unit_test(test_pairs_print_as_spark),
        cmocka_unit_test(test_types_against_spark), cmocka_unit_test(test_beyond_the_text),
        cmocka_unit_test(test_fragment_input),      cmocka_unit_test(test_query_stage_leaf),
        cmocka_unit_test(test_offset_window_ignore_nulls),
        cmocka_unit_test(test_unknown_classes),     cmocka_unit_test(test_objects_by_class_only),
        cmocka_unit_test(test_version_and_ids),     cmocka_unit_test(test_order_marks),
        cmocka_unit_test(test_timestamp_literal_zone),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
