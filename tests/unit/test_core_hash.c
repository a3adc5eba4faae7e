/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark Murmur3 (hash(), hashpartitioning), pinned by vectors whose origin
 * is recorded next to each:
 *   [doc]   Spark's own documentation of hash(): SELECT hash('Spark', array(123), 2)
 *           = -1321691492 (an array hashes as the fold of its elements).
 *   [suite] Spark's own Murmur3_x86_32Suite (testKnownIntegerInputs,
 *           testKnownLongInputs), seed 0.
 *   [japila] "The Internals of Spark SQL", Murmur3Hash demo output from a Spark
 *           shell: hash(0) = 933211791, hash(4) = -397064898, hash(null) = 42.
 *   [rapids] spark-rapids-jni HashTest.java (testSpark32BitMurmur3Hash*), whose
 *           expected values were produced by Apache Spark.
 *   [java]  a throwaway Java 17 program hand-translating Spark's
 *           Murmur3_x86_32 and HashExpression rules (BigInteger.toByteArray for
 *           wide decimals); it reproduces every [doc]/[japila]/[rapids] vector
 *           above, and supplies the decimal(38,s), odd-length and non-ASCII
 *           string vectors that no Spark test states directly.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "ember/hash.h"

static int32_t str_hash(const char *s, int32_t seed) {
    return em_murmur3_bytes(s, (int64_t)strlen(s), seed);
}

static float f_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static double d_bits(uint64_t b) {
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static void test_documented(void **state) {
    (void)state;
    /* [doc] hash('Spark', array(123), 2) */
    int32_t h = str_hash("Spark", EM_HASH_SEED);
    h = em_murmur3_int(123, h);
    h = em_murmur3_int(2, h);
    assert_int_equal(h, -1321691492);
    /* [suite] Murmur3_x86_32Suite, seed 0 */
    assert_int_equal(em_murmur3_int(0, 0), 593689054);
    assert_int_equal(em_murmur3_int(-42, 0), -189366624);
    assert_int_equal(em_murmur3_int(42, 0), -1134849565);
    assert_int_equal(em_murmur3_int(INT32_MIN, 0), -1718298732);
    assert_int_equal(em_murmur3_int(INT32_MAX, 0), -1653689534);
    assert_int_equal(em_murmur3_long(0, 0), 1669671676);
    assert_int_equal(em_murmur3_long(-42, 0), -846261623);
    assert_int_equal(em_murmur3_long(42, 0), 1871679806);
    assert_int_equal(em_murmur3_long(INT64_MIN, 0), 1366273829);
    assert_int_equal(em_murmur3_long(INT64_MAX, 0), -2106506049);
    /* [japila] */
    assert_int_equal(em_murmur3_int(0, 42), 933211791);
    assert_int_equal(em_murmur3_int(4, 42), -397064898);
}

static void test_rapids_scalars(void **state) {
    (void)state;
    /* [rapids] testSpark32BitMurmur3HashStrings, seed 42 */
    assert_int_equal(str_hash("a", 42), 1485273170);
    assert_int_equal(str_hash("B\nc", 42), 1709559900);
    assert_int_equal(str_hash("dE\"\xc4\x80\t\xc4\x81 \xed\x9c\xa0\xed\x9c\xa1\\Fg2'", 42),
                     1423943036);
    assert_int_equal(
        str_hash("A very long (greater than 128 bytes/char string) to test a multi hash-step data "
                 "point in the MD5 hash function. This string needed to be longer.A 60 character "
                 "string to test MD5's message padding algorithm",
                 42),
        176121990);
    assert_int_equal(str_hash("hiJ\xed\x9c\xa0\xed\x9c\xa1\xed\x9c\xa0\xed\x9c\xa1", 42),
                     1199621434);

    /* [rapids] testSpark32BitMurmur3HashDoubles, seed 0 */
    assert_int_equal(em_murmur3_double(0.0, 0), 1669671676);
    assert_int_equal(em_murmur3_double(100.0, 0), -544903190);
    assert_int_equal(em_murmur3_double(-100.0, 0), -1831674681);
    assert_int_equal(em_murmur3_double(DBL_MIN, 0), 150502665);
    assert_int_equal(em_murmur3_double(DBL_MAX, 0), 474144502);
    assert_int_equal(em_murmur3_double(d_bits(0x7fffffffffffffffULL), 0), 1428788237);
    assert_int_equal(em_murmur3_double(d_bits(0x7ff0000000000001ULL), 0), 1428788237);
    assert_int_equal(em_murmur3_double(d_bits(0xffffffffffffffffULL), 0), 1428788237);
    assert_int_equal(em_murmur3_double(d_bits(0xfff0000000000001ULL), 0), 1428788237);
    assert_int_equal(em_murmur3_double(INFINITY, 0), 420913893);
    assert_int_equal(em_murmur3_double(-INFINITY, 0), 1915664072);

    /* [rapids] testSpark32BitMurmur3HashFloats, seed 411 */
    assert_int_equal(em_murmur3_float(0.0f, 411), -235179434);
    assert_int_equal(em_murmur3_float(100.0f, 411), 1812056886);
    assert_int_equal(em_murmur3_float(-100.0f, 411), 2028471189);
    assert_int_equal(em_murmur3_float(FLT_MIN, 411), 1775092689);
    assert_int_equal(em_murmur3_float(FLT_MAX, 411), -1531511762);
    assert_int_equal(em_murmur3_float(f_bits(0x7f800001u), 411), -1053523253);
    assert_int_equal(em_murmur3_float(f_bits(0x7fffffffu), 411), -1053523253);
    assert_int_equal(em_murmur3_float(f_bits(0xff800001u), 411), -1053523253);
    assert_int_equal(em_murmur3_float(f_bits(0xffffffffu), 411), -1053523253);
    assert_int_equal(em_murmur3_float(INFINITY, 411), -1526256646);
    assert_int_equal(em_murmur3_float(-INFINITY, 411), 930080402);

    /* [rapids] timestamps (micros) and 64-bit decimals hash as longs, seed 42 */
    assert_int_equal(em_murmur3_long(0, 42), -1670924195);
    assert_int_equal(em_murmur3_long(100, 42), 1114849490);
    assert_int_equal(em_murmur3_long(-100, 42), 904948192);
    assert_int_equal(em_murmur3_long(0x123456789abcdefLL, 42), 657182333);
    assert_int_equal(em_murmur3_long(-0x123456789abcdefLL, 42), -57193045);
    assert_int_equal(em_murmur3_decimal(0x12345678, 9, 42), -958054811);
    assert_int_equal(em_murmur3_decimal(-0x12345678, 9, 42), -1447702630);
    assert_int_equal(em_murmur3_decimal(-0x123456789abcdefLL, 18, 42), -57193045);

    /* [rapids] dates hash as ints, seed 42 */
    assert_int_equal(em_murmur3_int(100, 42), 751823303);
    assert_int_equal(em_murmur3_int(-100, 42), -1080202046);
    assert_int_equal(em_murmur3_int(0x12345678, 42), -1721170160);
    assert_int_equal(em_murmur3_int(-0x12345678, 42), 1852996993);
}

static void test_java_crosscheck(void **state) {
    (void)state;
    /* [java] Spark's tail rule: trailing bytes one by one, sign-extended */
    assert_int_equal(str_hash("", 42), 142593372);
    assert_int_equal(str_hash("ab", 42), -97053317);
    assert_int_equal(str_hash("abc", 42), 1322437556);
    assert_int_equal(str_hash("abcd", 42), -396302900);
    assert_int_equal(str_hash("abcde", 42), 814637928);
    assert_int_equal(str_hash("Spark", 42), 228093765);
    assert_int_equal(str_hash("\xc3\xa9", 42), 2119106806);                  /* "é" */
    assert_int_equal(str_hash("\xc3\xa9\xc3\xa9\xc3\xa9", 42), -1256269400); /* "ééé" */
    assert_int_equal(str_hash("hello world\xc3\xbf", 42), -2072268105);

    /* [java] longs, doubles and floats incl. Spark's -0.0 and NaN rules */
    assert_int_equal(em_murmur3_long(-1, 42), -939490007);
    assert_int_equal(em_murmur3_long(INT64_MIN, 42), -853646085);
    assert_int_equal(em_murmur3_long(1234567890123LL, 42), 1304145252);
    assert_int_equal(em_murmur3_double(1.5, 42), 1290763749);
    assert_int_equal(em_murmur3_double(-0.0, 42), -1670924195); /* == hashLong(0) */
    assert_int_equal(em_murmur3_double(d_bits(0x7ff0000000000123ULL), 42), -1281358385);
    assert_int_equal(em_murmur3_double(-INFINITY, 42), 461104036);
    assert_int_equal(em_murmur3_float(1.5f, 42), -221251528);
    assert_int_equal(em_murmur3_float(-0.0f, 42), 933211791); /* == hashInt(0) */
    assert_int_equal(em_murmur3_float(f_bits(0xffc00001u), 42), -349261430);

    /* [java] decimals: precision <= 18 by unscaled long, wider by toByteArray() */
    assert_int_equal(em_murmur3_decimal(-12345, 10, 42), -1959512858);
    assert_int_equal(em_murmur3_decimal(999999999999999999LL, 18, 42), -1795328666);
    static const struct {
        const char *digits;
        int32_t hash;
    } d38[] = {
        {"0", -783713497},
        {"1", -386724586},
        {"-1", 1398487324},
        {"127", 1185089389},
        {"128", -544401882},
        {"-128", 775851899},
        {"-129", -771458971},
        {"255", 1246198977},
        {"12345678901234567890123", -434902821},
        {"-10000000000000000000000000000000000000", 1461205389},
        {"99999999999999999999999999999999999999", -817514053},
        {"-99999999999999999999999999999999999999", 1400911110},
        {"9223372036854775807", -1627571634},
        {"-9223372036854775808", -1794377518},
    };
    for (size_t i = 0; i < sizeof d38 / sizeof d38[0]; i++) {
        const char *p = d38[i].digits;
        bool neg = *p == '-';
        em_i128 v = 0;
        for (p += neg; *p; p++)
            v = v * 10 + (*p - '0');
        if (neg)
            v = -v;
        assert_int_equal(em_murmur3_decimal(v, 38, 42), d38[i].hash);
    }
    /* [java] booleans and shorts go through hashInt */
    assert_int_equal(em_murmur3_int(1, 42), -559580957);
    assert_int_equal(em_murmur3_int(-7, 42), -1618159745);
}

static void append_i32(em_column *c, const int32_t *v, const bool *valid, int n) {
    em_error err = {0};
    for (int i = 0; i < n; i++) {
        if (valid[i])
            EM_ASSERT_OK(em_column_append_fixed(c, &v[i], &err), &err);
        else
            EM_ASSERT_OK(em_column_append_null(c, &err), &err);
    }
}

static void test_columns(void **state) {
    (void)state;
    em_error err = {0};
    /* [rapids] testSpark32BitMurmur3HashInts: two int columns, seed 42 */
    em_column a, b;
    EM_ASSERT_OK(em_column_init(&a, em_type_make(EM_TYPE_INT), 6, NULL, &err), &err);
    EM_ASSERT_OK(em_column_init(&b, em_type_make(EM_TYPE_INT), 6, NULL, &err), &err);
    append_i32(&a, (int32_t[]){0, 100, 0, 0, INT32_MIN, 0}, (bool[]){1, 1, 0, 0, 1, 0}, 6);
    append_i32(&b, (int32_t[]){0, 0, -100, 0, 0, INT32_MAX}, (bool[]){1, 0, 1, 0, 0, 1}, 6);
    int32_t h[6];
    for (int i = 0; i < 6; i++)
        h[i] = 42;
    em_hash_column(&a, NULL, 6, h);
    em_hash_column(&b, NULL, 6, h);
    int32_t expect[6] = {59727262, 751823303, -1080202046, 42, 723455942, 133916647};
    assert_memory_equal(h, expect, sizeof expect);

    /* the same through a selection vector, in a different order */
    int32_t sel[3] = {4, 0, 5};
    int32_t hs[3] = {42, 42, 42};
    em_hash_column(&a, sel, 3, hs);
    em_hash_column(&b, sel, 3, hs);
    assert_int_equal(hs[0], 723455942);
    assert_int_equal(hs[1], 59727262);
    assert_int_equal(hs[2], 133916647);
    em_column_reset(&a);
    em_column_reset(&b);

    /* [rapids] testSpark32BitMurmur3HashBools: two boolean columns, seed 0 */
    EM_ASSERT_OK(em_column_init(&a, em_type_make(EM_TYPE_BOOLEAN), 6, NULL, &err), &err);
    EM_ASSERT_OK(em_column_init(&b, em_type_make(EM_TYPE_BOOLEAN), 6, NULL, &err), &err);
    const int v0[6] = {-1, 1, 0, 1, -1, 0}, v1[6] = {-1, 1, 0, -1, 0, 1}; /* -1 = null */
    for (int i = 0; i < 6; i++) {
        bool x = v0[i] == 1, y = v1[i] == 1;
        EM_ASSERT_OK(v0[i] < 0 ? em_column_append_null(&a, &err)
                               : em_column_append_fixed(&a, &x, &err),
                     &err);
        EM_ASSERT_OK(v1[i] < 0 ? em_column_append_null(&b, &err)
                               : em_column_append_fixed(&b, &y, &err),
                     &err);
        h[i] = 0;
    }
    em_hash_column(&a, NULL, 6, h);
    em_hash_column(&b, NULL, 6, h);
    int32_t expect_b[6] = {0, -1589400010, -239939054, -68075478, 593689054, -1194558265};
    assert_memory_equal(h, expect_b, sizeof expect_b);
    em_column_reset(&a);
    em_column_reset(&b);
}

/* [rapids] testSpark32BitMurmur3HashMixed: string, int, double, float, boolean
 * columns folded from seed 1868, hashed as a batch with a selection. */
static void test_mixed_batch(void **state) {
    (void)state;
    em_error err = {0};
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, 6, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "pad", em_type_make(EM_TYPE_NULL), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 1, "s", em_type_make(EM_TYPE_STRING), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 2, "i", em_type_make(EM_TYPE_INT), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 3, "d", em_type_make(EM_TYPE_DOUBLE), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 4, "f", em_type_make(EM_TYPE_FLOAT), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 5, "b", em_type_make(EM_TYPE_BOOLEAN), true, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, 6, NULL, &b, &err), &err);
    em_schema_reset(&s);
    const char *strs[6] = {"a",
                           "B\n",
                           "dE\"\xc4\x80\t\xc4\x81 \xed\x9c\xa0\xed\x9c\xa1",
                           "A very long (greater than 128 bytes/char string) to test a multi "
                           "hash-step data point in the MD5 hash function. This string needed "
                           "to be longer.",
                           NULL,
                           NULL};
    int32_t ints[6] = {0, 100, -100, INT32_MIN, INT32_MAX, 0};
    double dbl[6] = {
        0.0, 100.0, -100.0, d_bits(0x7ff0000000000001ULL), d_bits(0x7fffffffffffffffULL), 0};
    float flt[6] = {0.0f, 100.0f, -100.0f, f_bits(0xff800001u), f_bits(0xffffffffu), 0};
    int bools[6] = {1, 0, -1, 0, 1, -1};
    for (int i = 0; i < 6; i++) {
        EM_ASSERT_OK(em_column_append_null(&b->cols[0], &err), &err);
        if (strs[i])
            EM_ASSERT_OK(
                em_column_append_bytes(&b->cols[1], strs[i], (int32_t)strlen(strs[i]), &err), &err);
        else
            EM_ASSERT_OK(em_column_append_null(&b->cols[1], &err), &err);
        bool last = i == 5;
        EM_ASSERT_OK(last ? em_column_append_null(&b->cols[2], &err)
                          : em_column_append_fixed(&b->cols[2], &ints[i], &err),
                     &err);
        EM_ASSERT_OK(last ? em_column_append_null(&b->cols[3], &err)
                          : em_column_append_fixed(&b->cols[3], &dbl[i], &err),
                     &err);
        EM_ASSERT_OK(last ? em_column_append_null(&b->cols[4], &err)
                          : em_column_append_fixed(&b->cols[4], &flt[i], &err),
                     &err);
        bool bv = bools[i] == 1;
        EM_ASSERT_OK(bools[i] < 0 ? em_column_append_null(&b->cols[5], &err)
                                  : em_column_append_fixed(&b->cols[5], &bv, &err),
                     &err);
    }
    b->n_rows = 6;
    int32_t expect[6] = {1936985022, 720652989, 339312041, 1400354989, 769988643, 1868};
    int32_t h[6];
    for (int i = 0; i < 6; i++)
        h[i] = 1868;
    for (int c = 0; c < 6; c++)
        em_hash_column(&b->cols[c], NULL, 6, h);
    assert_memory_equal(h, expect, sizeof expect);

    /* em_hash_batch seeds with 42; check it against the column fold and the selection */
    EM_ASSERT_OK(em_batch_sel_reserve(b, 2, &err), &err);
    b->sel[0] = 1;
    b->sel[1] = 3;
    b->n_sel = 2;
    int cols[2] = {2, 1};
    int32_t hb[2];
    em_hash_batch(b, cols, 2, hb);
    assert_int_equal(hb[0], str_hash("B\n", em_murmur3_int(100, 42)));
    assert_int_equal(
        hb[1], em_murmur3_bytes(strs[3], (int64_t)strlen(strs[3]), em_murmur3_int(INT32_MIN, 42)));
    em_batch_destroy(b);
}

static void test_partition_ids(void **state) {
    (void)state;
    int32_t h[5] = {0, 7, -1, INT32_MIN, em_murmur3_int(-5, 42)};
    int32_t p[5];
    em_hash_partition_ids(h, 5, 200, p);
    assert_int_equal(p[0], 0);
    assert_int_equal(p[1], 7);
    assert_int_equal(p[2], 199);
    assert_int_equal(p[3], 152); /* -2147483648 mod 200 = 152 (Java floorMod) */
    assert_int_equal(p[4], 61);  /* [java] floorMod(hashInt(-5, 42), 200) */
    /* hashpartitioning of hash(0) over 42 partitions: 933211791 mod 42 */
    int32_t hh[1] = {em_murmur3_int(0, 42)};
    em_hash_partition_ids(hh, 1, 42, p);
    assert_int_equal(p[0], 933211791 % 42);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documented),      cmocka_unit_test(test_rapids_scalars),
        cmocka_unit_test(test_java_crosscheck), cmocka_unit_test(test_columns),
        cmocka_unit_test(test_mixed_batch),     cmocka_unit_test(test_partition_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
