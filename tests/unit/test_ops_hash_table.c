/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operators' hash table and sort-key comparator on their own: Spark's
 * grouping equality (NaN = NaN, -0.0 = 0.0, null = null only with
 * nulls_equal), multi-column keys with strings and decimals, probing
 * without inserting, growth to many keys checked against a brute-force
 * count, and the comparator/sort ordering (nulls first/last, DESC, NaN
 * greatest, strings byte-wise unsigned, stability).
 */
#include "test_ops_common.h"

#include <math.h>

#include "ops/hash_table.h"
#include "ops/sort_keys.h"

static void test_float_keys(void **state) {
    (void)state;
    static const char *const cells[] = {"NaN", "-0.0", "0.0", NULL, "1.5", "NaN", NULL};
    em_batch *b = tops_batch("d:double", cells, 7);
    em_type t = em_type_make(EM_TYPE_DOUBLE);
    em_hash_table *ht;
    em_error err = {0};
    int32_t ids[7];
    const em_column *keys[1] = {&b->cols[0]};
    EM_ASSERT_OK(em_ht_create(&t, 1, true, NULL, &ht, &err), &err);
    EM_ASSERT_OK(em_ht_find_or_insert(ht, keys, NULL, 7, ids, &err), &err);
    /* NaN, 0 (both zeros), null, 1.5 */
    assert_int_equal(em_ht_size(ht), 4);
    assert_int_equal(ids[0], ids[5]);
    assert_int_equal(ids[1], ids[2]);
    assert_int_equal(ids[3], ids[6]);
    assert_int_not_equal(ids[0], ids[1]);
    em_ht_free(ht);
    /* without nulls_equal: null rows get -1 and are not inserted */
    EM_ASSERT_OK(em_ht_create(&t, 1, false, NULL, &ht, &err), &err);
    EM_ASSERT_OK(em_ht_find_or_insert(ht, keys, NULL, 7, ids, &err), &err);
    assert_int_equal(em_ht_size(ht), 3);
    assert_int_equal(ids[3], -1);
    assert_int_equal(ids[6], -1);
    int32_t probe[7];
    EM_ASSERT_OK(em_ht_find(ht, keys, NULL, 7, probe, &err), &err);
    assert_memory_equal(probe, ids, sizeof ids);
    em_ht_free(ht);
    em_batch_destroy(b);
}

/* One integral key: keys that fit 32 bits compare by the slot's tag; a
 * wider one switches the table back to hash tags mid-batch, the ids and
 * the null key's id staying what they were. */
static void test_integral_key_tags(void **state) {
    (void)state;
    static const char *const first[] = {"1", "-1", NULL, "2147483647", "-2147483648", "1", NULL};
    static const char *const second[] = {"4294967297", "1", "8589934592", NULL, "-1", "4294967297"};
    em_batch *a = tops_batch("k:bigint", first, 7);
    em_batch *b = tops_batch("k:bigint", second, 6);
    em_type t = em_type_make(EM_TYPE_LONG);
    em_hash_table *ht;
    em_error err = {0};
    int32_t ids[7], ids2[6], probe[6];
    const em_column *ka[1] = {&a->cols[0]}, *kb[1] = {&b->cols[0]};
    EM_ASSERT_OK(em_ht_create(&t, 1, true, NULL, &ht, &err), &err);
    EM_ASSERT_OK(em_ht_find_or_insert(ht, ka, NULL, 7, ids, &err), &err);
    assert_int_equal(em_ht_size(ht), 5); /* 1, -1, null, max, min */
    assert_int_equal(ids[0], ids[5]);
    assert_int_equal(ids[2], ids[6]);
    /* 4294967297 = 2^32 + 1 has the low 32 bits of 1: it must not be 1 */
    int32_t before[6];
    EM_ASSERT_OK(em_ht_find(ht, kb, NULL, 6, before, &err), &err);
    assert_int_equal(before[0], -1);
    assert_int_equal(before[1], ids[0]);
    assert_int_equal(before[2], -1);
    assert_int_equal(before[3], ids[2]);
    EM_ASSERT_OK(em_ht_find_or_insert(ht, kb, NULL, 6, ids2, &err), &err);
    assert_int_equal(em_ht_size(ht), 7);
    assert_int_not_equal(ids2[0], ids[0]);
    assert_int_equal(ids2[1], ids[0]);
    assert_int_equal(ids2[3], ids[2]); /* the null key found after the switch */
    assert_int_equal(ids2[4], ids[1]);
    assert_int_equal(ids2[5], ids2[0]);
    EM_ASSERT_OK(em_ht_find(ht, kb, NULL, 6, probe, &err), &err);
    assert_memory_equal(probe, ids2, sizeof ids2);
    int32_t again[7];
    EM_ASSERT_OK(em_ht_find(ht, ka, NULL, 7, again, &err), &err);
    assert_memory_equal(again, ids, sizeof ids);
    em_ht_free(ht);
    em_batch_destroy(a);
    em_batch_destroy(b);
}

static void test_multi_column_and_probe(void **state) {
    (void)state;
    static const char *const build[] = {"x", "1.10", "y",  "1.10", "x", "2.20",
                                        "x", "1.10", NULL, NULL,   "",  "1.10"};
    static const char *const probe[] = {"x", "1.10", "x", "9.99", NULL, NULL,
                                        "",  "1.10", "y", "1.10", "z",  "1.10"};
    em_batch *b = tops_batch("s:string,m:decimal(10;2)", build, 6);
    em_batch *p = tops_batch("s:string,m:decimal(10;2)", probe, 6);
    em_type types[2] = {em_type_make(EM_TYPE_STRING), em_type_decimal(10, 2)};
    em_pool *pool = em_pool_create("ht", NULL, -1);
    em_hash_table *ht;
    em_error err = {0};
    EM_ASSERT_OK(em_ht_create(types, 2, true, pool, &ht, &err), &err);
    const em_column *bk[2] = {&b->cols[0], &b->cols[1]}, *pk[2] = {&p->cols[0], &p->cols[1]};
    int32_t ids[6];
    EM_ASSERT_OK(em_ht_find_or_insert(ht, bk, NULL, 6, ids, &err), &err);
    static const int32_t want_ids[6] = {0, 1, 2, 0, 3, 4};
    assert_memory_equal(ids, want_ids, sizeof ids);
    /* the stored keys come back in id order */
    em_strbuf sb = {0};
    bool is_null;
    EM_ASSERT_OK(em_value_text(em_ht_key_column(ht, 1), 2, &sb, &is_null, &err), &err);
    assert_string_equal(em_strbuf_cstr(&sb), "2.20");
    em_strbuf_reset(&sb);
    assert_true(em_pool_used(pool) > 0);
    int32_t found[6];
    /* a selection: probe rows 0, 1, 3, 5 */
    int32_t sel[4] = {0, 1, 3, 5};
    EM_ASSERT_OK(em_ht_find(ht, pk, sel, 4, found, &err), &err);
    assert_int_equal(found[0], 0);
    assert_int_equal(found[1], -1);
    assert_int_equal(found[2], 4);
    assert_int_equal(found[3], -1);
    EM_ASSERT_OK(em_ht_find(ht, pk, NULL, 6, found, &err), &err);
    assert_int_equal(found[2], 3); /* (null, null) with nulls_equal */
    assert_int_equal(found[4], 1);
    em_ht_free(ht);
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
    em_batch_destroy(b);
    em_batch_destroy(p);
}

static void test_many_keys_and_budget(void **state) {
    (void)state;
    int n = 100000;
    em_type t = em_type_make(EM_TYPE_LONG);
    em_column c;
    em_error err = {0};
    EM_ASSERT_OK(em_column_init(&c, t, n, NULL, &err), &err);
    for (int i = 0; i < n; i++) {
        int64_t v = (int64_t)(i % 40000) * 7919 - 1000000; /* 40000 distinct */
        EM_ASSERT_OK(em_column_append_fixed(&c, &v, &err), &err);
    }
    em_hash_table *ht;
    EM_ASSERT_OK(em_ht_create(&t, 1, true, NULL, &ht, &err), &err);
    int32_t *ids = malloc(sizeof *ids * (size_t)n);
    const em_column *keys[1] = {&c};
    EM_ASSERT_OK(em_ht_find_or_insert(ht, keys, NULL, n, ids, &err), &err);
    assert_int_equal(em_ht_size(ht), 40000);
    for (int i = 0; i < n; i++)
        if (ids[i] != i % 40000)
            fail_msg("row %d: id %d, expected %d", i, ids[i], i % 40000);
    int64_t grown = em_ht_bytes(ht);
    em_ht_free(ht);
    /* reserved for the row count: the same ids, and no slot array past the
     * one reserved (the doublings of the unreserved table are skipped) */
    EM_ASSERT_OK(em_ht_create(&t, 1, true, NULL, &ht, &err), &err);
    EM_ASSERT_OK(em_ht_reserve(ht, n, &err), &err);
    int64_t reserved = em_ht_bytes(ht);
    int32_t *ids2 = malloc(sizeof *ids2 * (size_t)n);
    EM_ASSERT_OK(em_ht_find_or_insert(ht, keys, NULL, n, ids2, &err), &err);
    assert_int_equal(em_ht_size(ht), 40000);
    assert_memory_equal(ids, ids2, sizeof *ids * (size_t)n);
    assert_int_equal(em_ht_bytes(ht), reserved);
    assert_true(grown < reserved); /* 40000 keys needed less than 100000 rows reserve */
    free(ids2);
    em_ht_free(ht);
    /* a small budget: the insert fails with EM_ERR_OOM_BUDGET */
    em_pool *pool = em_pool_create("tiny", NULL, 64 * 1024);
    EM_ASSERT_OK(em_ht_create(&t, 1, true, pool, &ht, &err), &err);
    assert_int_equal(em_ht_find_or_insert(ht, keys, NULL, n, ids, &err), EM_ERR_OOM_BUDGET);
    em_ht_free(ht);
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
    free(ids);
    em_column_reset(&c);
}

static void test_sort_order(void **state) {
    (void)state;
    static const char *const cells[] = {"b", "1.0",  "a",  NULL,  NULL, "2.0", "\xc3\xa9", "NaN",
                                        "a", "-0.0", "ab", "0.0", "a",  "3.0", NULL,       NULL};
    em_batch *b = tops_batch("s:string,d:double", cells, 8);
    em_error err = {0};
    int32_t idx[8];
    for (int i = 0; i < 8; i++)
        idx[i] = i;
    /* s ASC NULLS LAST, d DESC NULLS FIRST */
    em_sort_key keys[2] = {{&b->cols[0], true, false}, {&b->cols[1], false, true}};
    EM_ASSERT_OK(em_sort_indices(keys, 2, idx, 8, NULL, &err), &err);
    /* a: d null first, then 3.0, then -0.0; ab; b; é (0xC3 after 'b');
     * nulls last: d null first then 2.0 */
    static const int32_t want[8] = {1, 6, 4, 5, 0, 3, 7, 2};
    for (int i = 0; i < 8; i++)
        if (idx[i] != want[i])
            fail_msg("position %d: row %d, expected %d", i, idx[i], want[i]);
    /* NaN is greater than every double; -0.0 equals 0.0 */
    em_sort_key dk[1] = {{&b->cols[1], true, true}};
    assert_true(em_sort_compare(dk, 3, dk, 0, 1) > 0);
    assert_int_equal(em_sort_compare(dk, 4, dk, 5, 1), 0);
    /* stability on equal keys: rows keep their order */
    em_sort_key sk[1] = {{&b->cols[0], false, true}};
    for (int i = 0; i < 8; i++)
        idx[i] = i;
    EM_ASSERT_OK(em_sort_indices(sk, 1, idx, 8, NULL, &err), &err);
    static const int32_t want_desc[8] = {2, 7, 3, 0, 5, 1, 4, 6};
    for (int i = 0; i < 8; i++)
        if (idx[i] != want_desc[i])
            fail_msg("desc position %d: row %d, expected %d", i, idx[i], want_desc[i]);
    em_batch_destroy(b);
}

/* Random longs and decimals: the prefix sort agrees with qsort by value. */
static em_sort_key g_cmp_key;
static int cmp_rows(const void *a, const void *b) {
    return em_sort_compare(&g_cmp_key, *(const int32_t *)a, &g_cmp_key, *(const int32_t *)b, 1);
}

static void test_sort_random(void **state) {
    (void)state;
    em_error err = {0};
    static const em_type_id kinds[] = {EM_TYPE_LONG, EM_TYPE_DECIMAL, EM_TYPE_INT};
    for (size_t k = 0; k < 3; k++) {
        em_type t = kinds[k] == EM_TYPE_DECIMAL ? em_type_decimal(38, 0) : em_type_make(kinds[k]);
        em_column c;
        int n = 5000;
        EM_ASSERT_OK(em_column_init(&c, t, n, NULL, &err), &err);
        srand(7);
        for (int i = 0; i < n; i++) {
            if (rand() % 17 == 0) {
                EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
                continue;
            }
            int64_t v = ((int64_t)rand() << 20) ^ rand();
            if (rand() % 2)
                v = -v;
            if (t.id == EM_TYPE_DECIMAL) {
                em_i128 d = (em_i128)v * (rand() % 3 == 0 ? (em_i128)1000000000000000000LL : 1);
                EM_ASSERT_OK(em_column_append_fixed(&c, &d, &err), &err);
            } else if (t.id == EM_TYPE_INT) {
                int32_t x = (int32_t)v;
                EM_ASSERT_OK(em_column_append_fixed(&c, &x, &err), &err);
            } else {
                EM_ASSERT_OK(em_column_append_fixed(&c, &v, &err), &err);
            }
        }
        int32_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
        for (int i = 0; i < n; i++)
            a[i] = b[i] = i;
        g_cmp_key = (em_sort_key){&c, k != 1, k == 2};
        EM_ASSERT_OK(em_sort_indices(&g_cmp_key, 1, a, n, NULL, &err), &err);
        qsort(b, (size_t)n, sizeof *b, cmp_rows);
        for (int i = 0; i < n; i++)
            if (em_sort_compare(&g_cmp_key, a[i], &g_cmp_key, b[i], 1) != 0)
                fail_msg("type %d position %d differs", (int)kinds[k], i);
        free(a);
        free(b);
        em_column_reset(&c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_keys),           cmocka_unit_test(test_integral_key_tags),
        cmocka_unit_test(test_multi_column_and_probe),
        cmocka_unit_test(test_many_keys_and_budget), cmocka_unit_test(test_sort_order),
        cmocka_unit_test(test_sort_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
