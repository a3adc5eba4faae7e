/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Canonical value text for every type, with the edge cases that differ
 * between naive implementations: shortest round-trip floats, negative
 * decimals below one, decimal(38,10) extremes, dates before 1970 and around
 * year 1 and year 0, timestamps before 1970, and JSON/CSV escaping.
 */
#include "testutil.h"

#include <float.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ember/value_text.h"

static em_strbuf sb;

static const char *dbl(double v) {
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_text_double(&sb, v, NULL), &(em_error){0});
    return em_strbuf_cstr(&sb);
}
static const char *flt(float v) {
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_text_float(&sb, v, NULL), &(em_error){0});
    return em_strbuf_cstr(&sb);
}
static const char *dec(em_i128 v, int s) {
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_text_decimal(&sb, v, s, NULL), &(em_error){0});
    return em_strbuf_cstr(&sb);
}
static const char *date(int32_t d) {
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_text_date(&sb, d, NULL), &(em_error){0});
    return em_strbuf_cstr(&sb);
}
static const char *ts(int64_t us) {
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_text_timestamp(&sb, us, NULL), &(em_error){0});
    return em_strbuf_cstr(&sb);
}

/* The shortest digits by search: 1, 2, ... significant digits until they
 * read back, trailing zeros dropped (the definition em_shortest_e shortcuts). */
static void shortest_by_search(double v, bool is_float, char *digits, int *exp10) {
    char buf[64];
    int max = is_float ? 9 : 17;
    for (int p = 1; p <= max; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (is_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
            break;
    }
    int n = 0;
    const char *q = buf;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9')
            digits[n++] = *q;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    *exp10 = atoi(q + 1);
}

/* em_shortest_e gives the search's digits for random doubles and floats of
 * every magnitude, subnormals and the edges included. */
static void test_shortest_digits(void **state) {
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    const double edges[] = {DBL_MIN, DBL_MAX, DBL_TRUE_MIN, 5e-324, 0.1, 0.3, 1e23, 9007199254740993.0,
                            (double)FLT_MIN, (double)FLT_MAX, 1.17549421e-38, 0.0, -2.5};
    for (int i = 0; i < 200000 + (int)(sizeof edges / sizeof *edges); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        if (i < (int)(sizeof edges / sizeof *edges)) {
            v = edges[i];
        } else if (i % 3 == 0) {
            memcpy(&v, &x, 8); /* any bit pattern */
        } else {
            /* short decimals, as data holds them */
            v = (double)(int64_t)(x % 100000000) / pow(10.0, (double)(x >> 59));
        }
        for (int f = 0; f < 2; f++) {
            bool is_float = f == 1;
            double w = is_float ? (double)(float)v : v;
            if (!isfinite(w))
                continue;
            char want[32], got_digits[32], buf[64];
            int want_exp;
            shortest_by_search(w, is_float, want, &want_exp);
            em_shortest_e(w, is_float, buf, sizeof buf);
            int n = 0;
            const char *q = buf;
            for (; *q && *q != 'e'; q++)
                if (*q >= '0' && *q <= '9')
                    got_digits[n++] = *q;
            got_digits[n] = '\0';
            if (strcmp(want, got_digits) != 0 || want_exp != atoi(q + 1))
                fail_msg("%.17g (%s): %se%d by search, %s", w, is_float ? "float" : "double", want,
                         want_exp, buf);
        }
    }
}

static void test_floats(void **state) {
    (void)state;
    assert_string_equal(dbl(1.5), "1.5");
    assert_string_equal(dbl(1e20), "1e+20");
    assert_string_equal(dbl(100.0), "100.0");
    assert_string_equal(dbl(0.1), "0.1");
    assert_string_equal(dbl(0.1 + 0.2), "0.30000000000000004");
    assert_string_equal(dbl(-2.5e-7), "-2.5e-07");
    assert_string_equal(dbl(0.0001), "0.0001");
    assert_string_equal(dbl(0.00001), "1e-05");
    assert_string_equal(dbl(1e15), "1000000000000000.0");
    assert_string_equal(dbl(1e16), "1e+16");
    assert_string_equal(dbl(123456789.125), "123456789.125");
    assert_string_equal(dbl(0.0), "0.0");
    assert_string_equal(dbl(-0.0), "-0.0");
    assert_string_equal(dbl(DBL_MAX), "1.7976931348623157e+308");
    assert_string_equal(dbl(5e-324), "5e-324");
    assert_string_equal(dbl(NAN), "NaN");
    assert_string_equal(dbl(INFINITY), "Infinity");
    assert_string_equal(dbl(-INFINITY), "-Infinity");
    /* round trip over a spread of values */
    double x = 1.0 / 3.0;
    for (int i = 0; i < 200; i++, x *= -7.3) {
        assert_true(strtod(dbl(x), NULL) == x);
    }
    assert_string_equal(flt(0.1f), "0.1");
    assert_string_equal(flt(1.0f / 3.0f), "0.33333334");
    assert_string_equal(flt(16777216.0f), "16777216.0");
    assert_string_equal(flt(3.4028235e38f), "3.4028235e+38");
    assert_string_equal(flt(-1.5f), "-1.5");
    assert_string_equal(flt(NAN), "NaN");
    float f = 1.0f / 7.0f;
    for (int i = 0; i < 100; i++, f *= -3.7f)
        assert_true(strtof(flt(f), NULL) == f);
}

static em_i128 parse_i128(const char *p) {
    bool neg = *p == '-';
    em_i128 v = 0;
    for (p += neg; *p; p++)
        v = v * 10 + (*p - '0');
    return neg ? -v : v;
}

static void test_decimals(void **state) {
    (void)state;
    assert_string_equal(dec(-5, 2), "-0.05");
    assert_string_equal(dec(-50, 2), "-0.50");
    assert_string_equal(dec(5, 2), "0.05");
    assert_string_equal(dec(0, 2), "0.00");
    assert_string_equal(dec(1230, 2), "12.30");
    assert_string_equal(dec(12, 0), "12");
    assert_string_equal(dec(-12, 0), "-12");
    assert_string_equal(dec(0, 0), "0");
    assert_string_equal(dec(1, 38), "0.00000000000000000000000000000000000001");
    assert_string_equal(dec(parse_i128("99999999999999999999999999999999999999"), 10),
                        "9999999999999999999999999999.9999999999");
    assert_string_equal(dec(parse_i128("-99999999999999999999999999999999999999"), 10),
                        "-9999999999999999999999999999.9999999999");
    assert_string_equal(dec(parse_i128("-10000000000"), 10), "-1.0000000000");
    em_strbuf_clear(&sb);
    assert_int_equal(em_text_decimal(&sb, 1, 39, NULL), EM_ERR_INVALID);
    /* the extreme of the storage type itself */
    em_i128 min = (em_i128)((unsigned __int128)1 << 127);
    assert_string_equal(dec(min, 0), "-170141183460469231731687303715884105728");
}

static void test_dates(void **state) {
    (void)state;
    assert_string_equal(date(0), "1970-01-01");
    assert_string_equal(date(-1), "1969-12-31");
    assert_string_equal(date(59), "1970-03-01");
    assert_string_equal(date(11016), "2000-02-29");
    assert_string_equal(date(-719162), "0001-01-01");
    assert_string_equal(date(-719163), "0000-12-31");
    assert_string_equal(date(-719528), "0000-01-01");
    assert_string_equal(date(-719529), "-0001-12-31");
    assert_string_equal(date(-141427), "1582-10-15");
    assert_string_equal(date(-141428), "1582-10-14"); /* proleptic: no Julian gap */
    assert_string_equal(date(2932896), "9999-12-31");
    assert_string_equal(date(2932897), "10000-01-01");
    for (int32_t d = -800000; d < 800000; d += 997) {
        int64_t y;
        int m, dd;
        em_civil_from_days(d, &y, &m, &dd);
        assert_int_equal(em_days_from_civil(y, m, dd), d);
    }
    assert_int_equal(em_days_from_civil(2024, 2, 29), 19782);
}

static void test_timestamps(void **state) {
    (void)state;
    assert_string_equal(ts(0), "1970-01-01 00:00:00");
    assert_string_equal(ts(1), "1970-01-01 00:00:00.000001");
    assert_string_equal(ts(-1), "1969-12-31 23:59:59.999999");
    assert_string_equal(ts(-1000000), "1969-12-31 23:59:59");
    assert_string_equal(ts(1700000000123000LL), "2023-11-14 22:13:20.123000");
    assert_string_equal(ts(-62135596800000000LL), "0001-01-01 00:00:00");
    assert_string_equal(ts(253402300799999999LL), "9999-12-31 23:59:59.999999");
    assert_string_equal(ts(INT64_MIN), "-290308-12-21 19:59:05.224192");
}

static void test_columns(void **state) {
    (void)state;
    em_error err = {0};
    em_column c;
    bool null;
    /* booleans, bytes, longs, binary, strings and the NULL type through em_value_text */
    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_BOOLEAN), 2, NULL, &err), &err);
    bool t = true, f = false;
    EM_ASSERT_OK(em_column_append_fixed(&c, &t, &err), &err);
    EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
    EM_ASSERT_OK(em_column_append_fixed(&c, &f, &err), &err);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_text(&c, 0, &sb, &null, &err), &err);
    assert_false(null);
    EM_ASSERT_OK(em_value_text(&c, 1, &sb, &null, &err), &err);
    assert_true(null);
    EM_ASSERT_OK(em_value_text(&c, 2, &sb, &null, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "truefalse");
    assert_int_equal(em_value_text(&c, 3, &sb, &null, &err), EM_ERR_INVALID);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_json(&c, 1, &sb, &err), &err);
    EM_ASSERT_OK(em_value_json(&c, 0, &sb, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "nulltrue");
    em_column_reset(&c);

    struct {
        em_type_id id;
        int64_t v;
        const char *text;
    } ints[] = {{EM_TYPE_BYTE, -128, "-128"},
                {EM_TYPE_SHORT, 32767, "32767"},
                {EM_TYPE_INT, INT32_MIN, "-2147483648"},
                {EM_TYPE_LONG, INT64_MAX, "9223372036854775807"},
                {EM_TYPE_DATE, -1, "1969-12-31"},
                {EM_TYPE_TIMESTAMP_NTZ, 1500000, "1970-01-01 00:00:01.500000"}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        em_type ty = em_type_make(ints[i].id);
        EM_ASSERT_OK(em_column_init(&c, ty, 1, NULL, &err), &err);
        union {
            int8_t b;
            int16_t s;
            int32_t i;
            int64_t l;
        } u;
        switch (em_type_width(ty)) {
        case 1:
            u.b = (int8_t)ints[i].v;
            break;
        case 2:
            u.s = (int16_t)ints[i].v;
            break;
        case 4:
            u.i = (int32_t)ints[i].v;
            break;
        default:
            u.l = ints[i].v;
            break;
        }
        EM_ASSERT_OK(em_column_append_fixed(&c, &u, &err), &err);
        em_strbuf_clear(&sb);
        EM_ASSERT_OK(em_value_text(&c, 0, &sb, NULL, &err), &err);
        assert_string_equal(em_strbuf_cstr(&sb), ints[i].text);
        em_column_reset(&c);
    }

    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_BINARY), 1, NULL, &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&c, "\x00\xff\x1a", 3, &err), &err);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_text(&c, 0, &sb, NULL, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "00ff1a");
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_json(&c, 0, &sb, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "\"00ff1a\"");
    em_column_reset(&c);

    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_STRING), 1, NULL, &err), &err);
    const char *s = "say \"hi\",\n\tné\x01";
    EM_ASSERT_OK(em_column_append_bytes(&c, s, (int32_t)strlen(s), &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&c, "", 0, &err), &err);
    EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&c, " x", 2, &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&c, "plain", 5, &err), &err);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_text(&c, 0, &sb, NULL, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), s);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_json(&c, 0, &sb, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "\"say \\\"hi\\\",\\n\\tné\\u0001\"");
    const char *csv[] = {"\"say \"\"hi\"\",\n\tné\x01\"", "\"\"", "", "\" x\"", "plain"};
    for (int i = 0; i < 5; i++) {
        em_strbuf_clear(&sb);
        EM_ASSERT_OK(em_value_csv(&c, i, ',', &sb, &err), &err);
        assert_string_equal(em_strbuf_cstr(&sb), csv[i]);
    }
    em_column_reset(&c);

    /* An empty binary must not read back as null either. */
    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_BINARY), 1, NULL, &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&c, "", 0, &err), &err);
    EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&c, "\x01\xff", 2, &err), &err);
    const char *bin_csv[] = {"\"\"", "", "01ff"};
    for (int i = 0; i < 3; i++) {
        em_strbuf_clear(&sb);
        EM_ASSERT_OK(em_value_csv(&c, i, ',', &sb, &err), &err);
        assert_string_equal(em_strbuf_cstr(&sb), bin_csv[i]);
    }
    em_column_reset(&c);

    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_DOUBLE), 1, NULL, &err), &err);
    double d = NAN;
    EM_ASSERT_OK(em_column_append_fixed(&c, &d, &err), &err);
    d = -1.25;
    EM_ASSERT_OK(em_column_append_fixed(&c, &d, &err), &err);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_json(&c, 0, &sb, &err), &err);
    EM_ASSERT_OK(em_value_json(&c, 1, &sb, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "\"NaN\"-1.25");
    em_column_reset(&c);

    EM_ASSERT_OK(em_column_init(&c, em_type_decimal(5, 3), 1, NULL, &err), &err);
    em_i128 v = -5;
    EM_ASSERT_OK(em_column_append_fixed(&c, &v, &err), &err);
    em_strbuf_clear(&sb);
    EM_ASSERT_OK(em_value_json(&c, 0, &sb, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "-0.005");
    em_column_reset(&c);

    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_NULL), 1, NULL, &err), &err);
    EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
    null = false;
    EM_ASSERT_OK(em_value_text(&c, 0, &sb, &null, &err), &err);
    assert_true(null);
    em_column_reset(&c);
}

static void test_strbuf(void **state) {
    (void)state;
    em_strbuf b;
    em_strbuf_init(&b);
    assert_string_equal(em_strbuf_cstr(&b), "");
    for (int i = 0; i < 1000; i++)
        EM_ASSERT_OK(em_strbuf_appendf(&b, NULL, "%03d,", i), &(em_error){0});
    assert_int_equal(b.len, 4000);
    assert_memory_equal(b.data + 3996, "999,", 4);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    em_strbuf_clear(&b);
    EM_ASSERT_OK(em_strbuf_appendf(&b, NULL, "<%s>", big), &(em_error){0});
    assert_int_equal(b.len, 601);
    assert_int_equal(b.data[600], '>');
    em_strbuf_reset(&b);

    /* out of memory is sticky: later appends are refused, the text stays intact */
    EM_ASSERT_OK(em_strbuf_appends(&b, "keep", NULL), &(em_error){0});
    em_alloc_fail_after(1);
    em_error err = {0};
    assert_int_equal(em_strbuf_appendf(&b, &err, "%s", big), EM_ERR_NOMEM);
    em_alloc_fail_after(0);
    assert_int_equal(em_strbuf_appends(&b, "x", NULL), EM_ERR_NOMEM);
    assert_int_equal(em_strbuf_status(&b), EM_ERR_NOMEM);
    assert_string_equal(em_strbuf_cstr(&b), "keep");
    em_strbuf_clear(&b);
    assert_int_equal(em_strbuf_status(&b), EM_OK);
    EM_ASSERT_OK(em_strbuf_appends(&b, "again", NULL), &err);
    assert_string_equal(em_strbuf_cstr(&b), "again");
    em_strbuf_reset(&b);
}

static int teardown(void **state) {
    (void)state;
    em_strbuf_reset(&sb);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floats),  cmocka_unit_test(test_decimals),
        cmocka_unit_test(test_shortest_digits),
        cmocka_unit_test(test_dates),   cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_columns), cmocka_unit_test(test_strbuf),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
