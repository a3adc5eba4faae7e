/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark type names and schemas: every simpleString parses and formats back
 * to itself, aliases normalize, bad text is a PARSE error quoting the text,
 * and schema copies own their names.
 */
#include "testutil.h"

#include <string.h>

#include "ember/types.h"

static void parses_as(const char *text, const char *canonical);

/* text parses to expect and formats back to itself */
static void roundtrip(const char *text, em_type expect) {
    em_type t;
    EM_ASSERT_OK(em_type_parse(text, strlen(text), &t, NULL), &(em_error){0});
    assert_true(em_type_equal(t, expect));
    parses_as(text, text);
}

static void test_simple_strings(void **state) {
    (void)state;
    roundtrip("boolean", em_type_make(EM_TYPE_BOOLEAN));
    roundtrip("tinyint", em_type_make(EM_TYPE_BYTE));
    roundtrip("smallint", em_type_make(EM_TYPE_SHORT));
    roundtrip("int", em_type_make(EM_TYPE_INT));
    roundtrip("bigint", em_type_make(EM_TYPE_LONG));
    roundtrip("float", em_type_make(EM_TYPE_FLOAT));
    roundtrip("double", em_type_make(EM_TYPE_DOUBLE));
    roundtrip("decimal(10,0)", em_type_decimal(10, 0));
    roundtrip("decimal(38,38)", em_type_decimal(38, 38));
    roundtrip("decimal(1,0)", em_type_decimal(1, 0));
    roundtrip("string", em_type_make(EM_TYPE_STRING));
    roundtrip("binary", em_type_make(EM_TYPE_BINARY));
    roundtrip("date", em_type_make(EM_TYPE_DATE));
    roundtrip("timestamp", em_type_make(EM_TYPE_TIMESTAMP));
    roundtrip("timestamp_ntz", em_type_make(EM_TYPE_TIMESTAMP_NTZ));
    roundtrip("void", em_type_make(EM_TYPE_NULL));
}

static void parses_as(const char *text, const char *canonical) {
    em_error err = {0};
    em_type t;
    EM_ASSERT_OK(em_type_parse(text, strlen(text), &t, &err), &err);
    char buf[64];
    em_type_format(t, buf, sizeof buf);
    assert_string_equal(buf, canonical);
}

static void test_aliases(void **state) {
    (void)state;
    parses_as("INT", "int");
    parses_as("integer", "int");
    parses_as("Long", "bigint");
    parses_as("  decimal( 15 , 2 ) ", "decimal(15,2)");
    parses_as("DECIMAL", "decimal(10,0)");
    parses_as("decimal(7)", "decimal(7,0)");
    parses_as("numeric(3,1)", "decimal(3,1)");
    parses_as("timestamp_ltz", "timestamp");
    parses_as("null", "void");
    parses_as("VARCHAR(25)", "string");
    parses_as("char(1)", "string");
    parses_as("DECIMAL(15,4)", "decimal(15,4)");
}

static void test_bad_types(void **state) {
    (void)state;
    const char *bad[] = {"",
                         "inte",
                         "decimal(39,0)",
                         "decimal(5,6)",
                         "decimal(0,0)",
                         "decimal(10,2",
                         "decimal(10,2)x",
                         "int x",
                         "decimal(-1,0)",
                         "array<int>",
                         "varchar",
                         "char(0)",
                         "varchar(3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        em_error err = {0};
        em_type t;
        assert_int_equal(em_type_parse(bad[i], strlen(bad[i]), &t, &err), EM_ERR_PARSE);
        assert_non_null(strstr(err.msg, bad[i]));
    }
    /* only the first len bytes count */
    em_type t;
    EM_ASSERT_OK(em_type_parse("int,bigint", 3, &t, NULL), &(em_error){0});
    assert_int_equal(t.id, EM_TYPE_INT);
}

static void test_widths(void **state) {
    (void)state;
    assert_int_equal(em_type_width(em_type_make(EM_TYPE_BOOLEAN)), 0);
    assert_int_equal(em_type_width(em_type_make(EM_TYPE_SHORT)), 2);
    assert_int_equal(em_type_width(em_type_make(EM_TYPE_DATE)), 4);
    assert_int_equal(em_type_width(em_type_make(EM_TYPE_TIMESTAMP_NTZ)), 8);
    assert_int_equal(em_type_width(em_type_decimal(5, 2)), 16);
    assert_int_equal(em_type_width(em_type_make(EM_TYPE_STRING)), 0);
    assert_true(em_type_is_varlen(em_type_make(EM_TYPE_BINARY)));
    assert_false(em_type_is_varlen(em_type_make(EM_TYPE_INT)));
    assert_false(em_type_equal(em_type_decimal(5, 2), em_type_decimal(5, 1)));
}

static void test_schema(void **state) {
    (void)state;
    em_error err = {0};
    em_schema s, c;
    EM_ASSERT_OK(em_schema_init(&s, 2, &err), &err);
    char name[8] = "l_qty";
    EM_ASSERT_OK(em_schema_set(&s, 0, name, em_type_decimal(15, 2), false, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 1, "l_comment", em_type_make(EM_TYPE_STRING), true, &err), &err);
    name[0] = 'X';
    assert_string_equal(s.fields[0].name, "l_qty");
    assert_int_equal(em_schema_set(&s, 2, "x", em_type_make(EM_TYPE_INT), true, &err),
                     EM_ERR_INVALID);
    EM_ASSERT_OK(em_schema_copy(&c, &s, &err), &err);
    em_schema_reset(&s);
    assert_int_equal(em_schema_find(&c, "l_comment"), 1);
    assert_int_equal(em_schema_find(&c, "nope"), -1);
    assert_false(c.fields[0].nullable);
    assert_true(em_type_equal(c.fields[0].type, em_type_decimal(15, 2)));
    em_schema_reset(&c);
    em_schema_reset(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_strings), cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_bad_types),      cmocka_unit_test(test_widths),
        cmocka_unit_test(test_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
