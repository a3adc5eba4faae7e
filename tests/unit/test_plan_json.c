/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JSON form of a parsed plan: read back with jansson, it has every
 * operator with its children, typed output and expression trees.
 */
#include <jansson.h>

#include "test_plan_common.h"

static json_t *node_with_id(json_t *nodes, int id) {
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        if (json_integer_value(json_object_get(n, "id")) == id)
            return n;
    }
    return NULL;
}

static void test_json_of_q3(void **state) {
    (void)state;
    em_plan *plan = plan_test_parse_shared("3.4", 3);
    char *text;
    size_t n;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_to_json(plan, &text, &n, &err), &err);
    assert_int_equal(n, strlen(text));
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root)
        fail_msg("invalid JSON: %s at line %d", jerr.text, jerr.line);
    assert_string_equal(json_string_value(json_object_get(root, "spark_version")), "3.4");
    int root_id = (int)json_integer_value(json_object_get(root, "root"));
    assert_int_equal(root_id, em_plan_root(plan)->id);
    json_t *nodes = json_object_get(root, "nodes");
    assert_int_equal(json_array_size(nodes), em_plan_max_id(plan));
    json_t *scan = node_with_id(nodes, 1);
    assert_string_equal(json_string_value(json_object_get(scan, "kind")), "Scan");
    assert_string_equal(json_string_value(json_object_get(scan, "table")),
                        "spark_catalog.default.customer");
    json_t *col = json_array_get(json_object_get(scan, "output"), 0);
    assert_string_equal(json_string_value(json_object_get(col, "type")), "bigint");
    /* the first join: type, build side, children */
    bool saw_join = false;
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        const char *kind = json_string_value(json_object_get(node, "kind"));
        if (strcmp(kind, "BroadcastHashJoin") == 0 && !saw_join) {
            saw_join = true;
            assert_string_equal(json_string_value(json_object_get(node, "join_type")), "Inner");
            assert_string_equal(json_string_value(json_object_get(node, "build_side")), "right");
            assert_int_equal(json_array_size(json_object_get(node, "children")), 2);
        }
        if (strcmp(kind, "Filter") == 0) {
            json_t *fields = json_object_get(node, "fields");
            json_t *cond = json_array_get(fields, 1);
            assert_string_equal(json_string_value(json_object_get(cond, "field")), "Condition");
            json_t *e = json_array_get(json_object_get(cond, "exprs"), 0);
            assert_string_equal(json_string_value(json_object_get(e, "type")), "boolean");
            assert_non_null(json_string_value(json_object_get(e, "text")));
        }
    }
    assert_true(saw_join);
    json_decref(root);
    free(text);
    em_plan_destroy(plan);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_of_q3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
