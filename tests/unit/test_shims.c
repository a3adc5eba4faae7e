/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Version shims: lookup by version string, Spark's decimal precision rules
 * (pinned against DecimalPrecision's documented cases), the ANSI defaults,
 * printed forms, and detection on every shared plan.
 *
 * Detection policy (see src/shims/shim.h): every line that prints a text
 * alike is a candidate and the oldest is chosen. On the shared TPC-H plans
 * that makes 3.3.0 and 3.3 always unique; 3.4, 3.5, 4.0 and 4.1 print most
 * queries identically, so a 3.5 file is read as 3.4 unless it says otherwise;
 * q22 of 4.0/master is recognized as 4.0+ (a scan hosts a scalar subquery);
 * q18 of 3.4-4.0 excludes 4.1 (generated alias names embed ids).
 */
#include "shims/shim.h"
#include "test_plan_common.h"

static void test_version_lookup(void **state) {
    (void)state;
    em_error err = {0};
    static const struct {
        const char *asked, *line;
    } cases[] = {
        {"3.3.0", "3.3.0"}, {"3.3", "3.3"},   {"3.3.4", "3.3"}, {"3.4", "3.4"},
        {"3.4.3", "3.4"},   {"3.5", "3.5"},   {"3.5.1", "3.5"}, {"3.5.9", "3.5"},
        {"4.0", "4.0"},     {"4.0.0", "4.0"}, {"4.1", "4.1"},   {"master", "4.1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const em_shim *s = em_shim_for_version(cases[i].asked, &err);
        if (!s)
            fail_msg("%s: %s", cases[i].asked, err.msg);
        assert_string_equal(em_shim_name(s), cases[i].line);
    }
    assert_null(em_shim_for_version("2.4.8", &err));
    assert_int_equal(err.code, EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "known lines: 3.3.0, 3.3, 3.4, 3.5, 4.0, 4.1"));
    assert_null(em_shim_for_version("", &err));
    assert_int_equal(em_shim_count(), 6);
    for (int i = 0; i < em_shim_count(); i++)
        assert_int_equal(em_shim_at(i)->order, i);
    assert_null(em_shim_at(6));
}

static void assert_rule(em_binop op, int p1, int s1, int p2, int s2, bool loss, int p, int s) {
    em_type out;
    assert_true(
        em_shim_decimal_rule(op, em_type_decimal(p1, s1), em_type_decimal(p2, s2), loss, &out));
    if (out.precision != p || out.scale != s)
        fail_msg("%s (%d,%d) (%d,%d) loss=%d: got (%d,%d), want (%d,%d)", em_binop_symbol(op), p1,
                 s1, p2, s2, loss, out.precision, out.scale, p, s);
}

static void test_decimal_rules(void **state) {
    (void)state;
    /* + -: max(s1,s2) + max(p1-s1, p2-s2) + 1 */
    assert_rule(EM_OP_ADD, 10, 0, 10, 0, true, 11, 0);
    assert_rule(EM_OP_SUB, 15, 2, 10, 0, true, 16, 2);
    assert_rule(EM_OP_ADD, 38, 10, 38, 10, true, 38, 9); /* 39 digits: one fraction digit goes */
    /* *: p1 + p2 + 1, s1 + s2 */
    assert_rule(EM_OP_MUL, 10, 0, 11, 0, true, 22, 0);
    assert_rule(EM_OP_MUL, 15, 2, 16, 2, true, 32, 4);
    assert_rule(EM_OP_MUL, 38, 10, 38, 10, true, 38, 6);   /* scale kept at min(s, 6) */
    assert_rule(EM_OP_MUL, 38, 10, 38, 10, false, 38, 20); /* bounded without precision loss */
    assert_rule(EM_OP_MUL, 38, 2, 38, 2, true, 38, 4);     /* s < 6 stays */
    /* /: scale max(6, s1 + p2 + 1), precision p1 - s1 + s2 + scale */
    assert_rule(EM_OP_DIV, 20, 0, 2, 1, true, 27, 6);
    assert_rule(EM_OP_DIV, 10, 2, 10, 2, true, 23, 13);
    assert_rule(EM_OP_DIV, 38, 18, 38, 18, true, 38, 6);
    assert_rule(EM_OP_DIV, 38, 18, 38, 18, false, 38, 18);
    /* %: min(p1-s1, p2-s2) + max(s1,s2), max(s1,s2) */
    assert_rule(EM_OP_REM, 10, 2, 5, 0, true, 7, 2);
    em_type out;
    assert_false(
        em_shim_decimal_rule(EM_OP_EQ, em_type_decimal(1, 0), em_type_decimal(1, 0), true, &out));
    /* 3.3 arithmetic is typed by its promoted operands; CheckOverflow carries the result */
    assert_true(em_shim_spark33.decimal_binary_type(
        &em_shim_spark33, EM_OP_MUL, em_type_decimal(11, 0), em_type_decimal(11, 0), &out));
    assert_int_equal(out.precision, 11);
    assert_true(em_shim_spark35.decimal_binary_type(
        &em_shim_spark35, EM_OP_MUL, em_type_decimal(11, 0), em_type_decimal(11, 0), &out));
    assert_int_equal(out.precision, 23);
}

static void test_defaults_and_forms(void **state) {
    (void)state;
    em_error err;
    static const char *const ansi_on[] = {"4.0", "4.1"};
    static const char *const ansi_off[] = {"3.3.0", "3.3", "3.4", "3.5"};
    for (size_t i = 0; i < 2; i++)
        assert_true(em_shim_ansi_default(em_shim_for_version(ansi_on[i], &err)));
    for (size_t i = 0; i < 4; i++)
        assert_false(em_shim_ansi_default(em_shim_for_version(ansi_off[i], &err)));
    char buf[64];
    em_shim_format_exchange_id(&em_shim_spark330, 38, buf, sizeof buf);
    assert_string_equal(buf, "[id=#38]");
    em_shim_format_exchange_id(&em_shim_spark33, 38, buf, sizeof buf);
    assert_string_equal(buf, "[plan_id=38]");
    assert_false(em_shim_prints_join_type(&em_shim_spark33));
    assert_true(em_shim_prints_join_type(&em_shim_spark34));
}

static void test_detection_on_shared_plans(void **state) {
    (void)state;
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++) {
        const em_shim *actual = em_shim_for_version(plan_test_lines[d], NULL);
        assert_non_null(actual);
        int unique = 0;
        for (int q = 1; q <= 22; q++) {
            char path[4096];
            size_t len = 0;
            char *text = plan_test_shared(plan_test_dirs[d], q, &len, path, sizeof path);
            em_shim_detection det;
            em_error err = {0};
            EM_ASSERT_OK(em_shim_detect(text, len, &det, &err), &err);
            free(text);
            if (!(det.candidates & (1u << actual->order)))
                fail_msg("%s: %s not among the candidates (%s)", path, actual->name, det.reason);
            /* the chosen line is the oldest candidate */
            int oldest = __builtin_ctz(det.candidates);
            assert_ptr_equal(det.chosen, em_shim_at(oldest));
            assert_int_equal(det.ambiguous, (det.candidates & (det.candidates - 1)) != 0);
            if (!det.ambiguous)
                assert_false(det.semantics_differ);
            assert_non_null(strstr(det.reason, det.chosen->name));
            if (!det.ambiguous)
                unique++;
            if (d >= 2 && q != 6) /* 3.4+ prints spark_catalog and Join type: never 3.3 */
                assert_false(det.candidates & 3u);
            if (d == 4 && q == 18) /* alias names with ids: not 4.1 */
                assert_false(det.candidates & (1u << 5));
            if (d >= 4 && q == 22) { /* the scan hosts the scalar subquery: 4.0+ */
                assert_int_equal(det.candidates, (1u << 4) | (1u << 5));
                assert_string_equal(det.chosen->name, "4.0");
            }
        }
        if (d < 2) /* 3.3.0 ([id=#N]) and 3.3 (CheckOverflow, no Join type) are always unique */
            assert_int_equal(unique, 22);
    }
}

static void test_detection_explains_ambiguity(void **state) {
    (void)state;
    em_plan *plan = plan_test_parse_shared("3.5", 3);
    /* 3.5 prints q3 exactly as 3.4 does */
    assert_string_equal(em_shim_name(em_plan_shim(plan)), "3.4");
    const char *why = em_plan_shim_reason(plan);
    assert_non_null(strstr(why, "3.4 3.5 4.0 4.1"));
    assert_non_null(strstr(why, "chose the oldest, 3.4"));
    /* 3.4/3.5 run it without ANSI, 4.0/4.1 with: the choice matters, and says how */
    assert_true(em_plan_shim_uncertain(plan));
    assert_non_null(strstr(why, "ANSI mode (off in 3.4 3.5; on in 4.0 4.1)"));
    em_plan_destroy(plan);
    /* 3.3 is the only line printing CheckOverflow with two arguments: certain */
    plan = plan_test_parse_shared("3.3", 3);
    assert_false(em_plan_shim_uncertain(plan));
    em_plan_destroy(plan);
    /* 4.0's q22 fits 4.0 and 4.1 only; both default to ANSI: printed alike, run alike */
    plan = plan_test_parse_shared("4.0", 22);
    assert_false(em_plan_shim_uncertain(plan));
    assert_null(strstr(em_plan_shim_reason(plan), "differ"));
    em_plan_destroy(plan);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_lookup),
        cmocka_unit_test(test_decimal_rules),
        cmocka_unit_test(test_defaults_and_forms),
        cmocka_unit_test(test_detection_on_shared_plans),
        cmocka_unit_test(test_detection_explains_ambiguity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
