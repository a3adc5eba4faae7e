/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Datums (datum.h): every type round-trips through a column, the string
 * arena keeps bytes alive and is charged to its pool, ordering follows
 * Spark (NaN largest, -0.0 == 0.0, unsigned bytes), and the Murmur3 of a
 * datum equals the column hash of the same value.
 */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "ember/datum.h"
#include "ember/hash.h"

static em_datum di(int64_t v) {
    em_datum d = {0};
    d.v.i64 = v;
    return d;
}
static em_datum dd(double v) {
    em_datum d = {0};
    d.v.f64 = v;
    return d;
}
static em_datum ddec(em_i128 v) {
    em_datum d = {0};
    d.v.dec = v;
    return d;
}
static em_datum ds(const char *s) {
    em_datum d = {0};
    d.v.str.ptr = (const uint8_t *)s;
    d.v.str.len = (int32_t)strlen(s);
    return d;
}

/* Appends vals (plus a null) to a column of t, reads them back, checks
 * compare == 0 against the originals and the hash against em_hash_column. */
static void roundtrip(em_type t, const em_datum *vals, int n) {
    em_error err = {0};
    em_pool *pool = em_pool_create("datum", NULL, -1);
    em_column c;
    EM_ASSERT_OK(em_column_init(&c, t, 1, pool, &err), &err);
    for (int i = 0; i < n; i++)
        EM_ASSERT_OK(em_column_append_datum(&c, &vals[i], pool, &err), &err);
    em_datum nul = em_datum_null();
    EM_ASSERT_OK(em_column_append_datum(&c, &nul, pool, &err), &err);
    assert_int_equal(c.length, n + 1);
    int32_t hashes[16];
    for (int i = 0; i <= n; i++)
        hashes[i] = EM_HASH_SEED;
    em_hash_column(&c, NULL, n + 1, hashes);
    for (int i = 0; i < n; i++) {
        em_datum back;
        em_datum_from_column(&c, i, &back);
        assert_false(back.is_null);
        assert_int_equal(em_datum_compare(&back, &vals[i], t), 0);
        assert_true(em_datum_equal_grouping(&back, &vals[i], t));
        assert_int_equal((int32_t)em_datum_murmur3(&back, t, EM_HASH_SEED), hashes[i]);
    }
    em_datum back;
    em_datum_from_column(&c, n, &back);
    assert_true(back.is_null);
    assert_int_equal(em_datum_murmur3(&back, t, EM_HASH_SEED), EM_HASH_SEED);
    assert_int_equal(hashes[n], EM_HASH_SEED);
    em_column_reset(&c);
    em_pool_destroy(pool);
}

static void test_roundtrip_all_types(void **state) {
    (void)state;
    em_datum b[2] = {{0}, {0}};
    b[1].v.b = true;
    roundtrip(em_type_make(EM_TYPE_BOOLEAN), b, 2);
    em_datum i8[3] = {di(-128), di(0), di(127)};
    roundtrip(em_type_make(EM_TYPE_BYTE), i8, 3);
    em_datum i16[2] = {di(-32768), di(32767)};
    roundtrip(em_type_make(EM_TYPE_SHORT), i16, 2);
    em_datum i32[3] = {di(INT32_MIN), di(-1), di(INT32_MAX)};
    roundtrip(em_type_make(EM_TYPE_INT), i32, 3);
    roundtrip(em_type_make(EM_TYPE_DATE), i32, 3);
    em_datum i64[2] = {di(INT64_MIN), di(INT64_MAX)};
    roundtrip(em_type_make(EM_TYPE_LONG), i64, 2);
    roundtrip(em_type_make(EM_TYPE_TIMESTAMP), i64, 2);
    em_datum f[4] = {dd(1.5), dd(-0.0), dd(NAN), dd(-1024.75)};
    roundtrip(em_type_make(EM_TYPE_FLOAT), f, 4);
    roundtrip(em_type_make(EM_TYPE_DOUBLE), f, 4);
    em_i128 big = (em_i128)99999999999999999ll * 1000000000000000000ll * 100 + 99;
    em_datum dec[3] = {ddec(-5), ddec(big), ddec(-big)};
    roundtrip(em_type_decimal(38, 18), dec, 3);
    roundtrip(em_type_decimal(15, 2), dec, 1);
    em_datum s[3] = {ds(""), ds("abc"), ds("\xc3\xa9t\xc3\xa9")};
    roundtrip(em_type_make(EM_TYPE_STRING), s, 3);
    roundtrip(em_type_make(EM_TYPE_BINARY), s, 3);
}

static void test_ordering(void **state) {
    (void)state;
    em_type dbl = em_type_make(EM_TYPE_DOUBLE);
    em_datum nan = dd(NAN), inf = dd(INFINITY), z = dd(0.0), nz = dd(-0.0);
    assert_int_equal(em_datum_compare(&nan, &inf, dbl), 1);
    assert_int_equal(em_datum_compare(&inf, &nan, dbl), -1);
    assert_int_equal(em_datum_compare(&nan, &nan, dbl), 0);
    assert_int_equal(em_datum_compare(&z, &nz, dbl), 0);
    assert_int_equal(em_datum_murmur3(&z, dbl, 42), em_datum_murmur3(&nz, dbl, 42));
    em_type str = em_type_make(EM_TYPE_STRING);
    em_datum a = ds("ab"), abc = ds("abc"), e = ds("\xc3\xa9");
    assert_int_equal(em_datum_compare(&a, &abc, str), -1);
    assert_int_equal(em_datum_compare(&e, &abc, str), 1); /* 0xc3 > 'a' unsigned */
    em_datum n1 = em_datum_null(), n2 = em_datum_null();
    assert_true(em_datum_equal_grouping(&n1, &n2, str));
    assert_false(em_datum_equal_grouping(&n1, &a, str));
    em_type dec = em_type_decimal(38, 0);
    em_datum lo = ddec(-((em_i128)1 << 100)), hi = ddec(1);
    assert_int_equal(em_datum_compare(&lo, &hi, dec), -1);
}

static void test_arena(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *pool = em_pool_create("arena", NULL, -1);
    em_row_arena a;
    em_row_arena_init(&a, pool);
    const uint8_t *empty = em_row_arena_copy(&a, "", 0, &err);
    assert_non_null(empty);
    em_datum src = ds("hello"), dst;
    em_type str = em_type_make(EM_TYPE_STRING);
    EM_ASSERT_OK(em_datum_copy(&dst, &src, str, &a, &err), &err);
    assert_ptr_not_equal(dst.v.str.ptr, src.v.str.ptr);
    assert_memory_equal(dst.v.str.ptr, "hello", 5);
    /* larger than a chunk: a chunk of its own */
    static char big[100000];
    memset(big, 'x', sizeof big);
    const uint8_t *pb = em_row_arena_copy(&a, big, sizeof big, &err);
    assert_non_null(pb);
    assert_int_equal(pb[99999], 'x');
    assert_memory_equal(dst.v.str.ptr, "hello", 5);
    assert_true(em_pool_used(pool) >= (int64_t)sizeof big);
    assert_int_equal(a.bytes, em_pool_used(pool));
    em_row_arena_clear(&a);
    assert_true(em_pool_used(pool) > 0); /* one chunk kept */
    assert_non_null(em_row_arena_alloc(&a, 10, &err));
    em_row_arena_reset(&a);
    assert_int_equal(em_pool_used(pool), 0);
    /* a budget failure is reported, not a crash */
    em_pool_set_budget(pool, 1000);
    assert_null(em_row_arena_alloc(&a, 10, &err));
    assert_int_equal(err.code, EM_ERR_OOM_BUDGET);
    em_row_arena_reset(&a);
    em_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_types),
        cmocka_unit_test(test_ordering),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
