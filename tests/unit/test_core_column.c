/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Columns and batches: appends of every physical kind (fixed, bit-packed
 * boolean, strings, the NULL type), null bookkeeping, take with and without a
 * selection, batch selection vectors and compaction, and a fault-injection
 * loop proving that every allocation failure while building a batch is
 * reported and leaks nothing (run under ASan to check the latter).
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "ember/column.h"

/* Null rows appended in bulk read as the same rows appended one by one, for
 * fixed, boolean and string columns, after values and at the start. */
static void test_append_nulls(void **state) {
    (void)state;
    em_error err = {0};
    em_type types[] = {em_type_make(EM_TYPE_LONG), em_type_make(EM_TYPE_BOOLEAN),
                       em_type_make(EM_TYPE_STRING)};
    for (int t = 0; t < 3; t++) {
        em_column c;
        EM_ASSERT_OK(em_column_init(&c, types[t], 1, NULL, &err), &err);
        EM_ASSERT_OK(em_column_append_nulls(&c, 3, &err), &err);
        int64_t one = 1;
        bool yes = true;
        if (t == 0)
            EM_ASSERT_OK(em_column_append_fixed(&c, &one, &err), &err);
        else if (t == 1)
            EM_ASSERT_OK(em_column_append_fixed(&c, &yes, &err), &err);
        else
            EM_ASSERT_OK(em_column_append_bytes(&c, "abc", 3, &err), &err);
        EM_ASSERT_OK(em_column_append_nulls(&c, 70, &err), &err);
        EM_ASSERT_OK(em_column_append_nulls(&c, 0, &err), &err);
        assert_int_equal(em_column_append_nulls(&c, -1, &err), EM_ERR_INVALID);
        assert_int_equal(c.length, 74);
        c.null_count = -1;
        assert_int_equal(em_column_null_count(&c), 73);
        for (int64_t i = 0; i < 74; i++)
            assert_int_equal(em_column_is_valid(&c, i), i == 3);
        if (t == 2) {
            const int32_t *off = (const int32_t *)c.values->data;
            assert_int_equal(off[3], 0);
            assert_int_equal(off[4], 3);
            assert_int_equal(off[74], 3);
            assert_memory_equal(c.data->data, "abc", 3);
        }
        em_column_reset(&c);
    }
}

static void test_fixed_append_and_take(void **state) {
    (void)state;
    em_error err = {0};
    em_column c;
    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_INT), 2, NULL, &err), &err);
    for (int32_t i = 0; i < 100; i++) {
        if (i % 7 == 3)
            EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
        else
            EM_ASSERT_OK(em_column_append_fixed(&c, &i, &err), &err);
    }
    assert_int_equal(c.length, 100);
    assert_int_equal(c.null_count, 14);
    c.null_count = -1;
    assert_int_equal(em_column_null_count(&c), 14);
    const int32_t *v = (const int32_t *)c.values->data;
    for (int32_t i = 0; i < 100; i++) {
        assert_int_equal(em_column_is_valid(&c, i), i % 7 != 3);
        if (i % 7 != 3)
            assert_int_equal(v[i], i);
    }
    assert_int_equal(c.values->size, 400);
    assert_int_equal(c.validity->size, 13);

    int32_t sel[] = {3, 4, 99, 10};
    em_column t;
    EM_ASSERT_OK(em_column_take(&c, sel, 4, NULL, &t, &err), &err);
    assert_int_equal(t.length, 4);
    assert_int_equal(em_column_null_count(&t), 2);
    assert_false(em_column_is_valid(&t, 0));
    assert_true(em_column_is_valid(&t, 1));
    assert_int_equal(((int32_t *)t.values->data)[1], 4);
    assert_int_equal(((int32_t *)t.values->data)[2], 99);
    assert_false(em_column_is_valid(&t, 3));
    em_column_reset(&t);

    /* no nulls taken: the validity bitmap is dropped */
    int32_t sel2[] = {0, 1, 2};
    EM_ASSERT_OK(em_column_take(&c, sel2, 3, NULL, &t, &err), &err);
    assert_null(t.validity);
    assert_int_equal(t.null_count, 0);
    em_column_reset(&t);
    em_column_reset(&c);
    em_column_reset(&c); /* idempotent */
}

static void test_boolean_bits(void **state) {
    (void)state;
    em_error err = {0};
    em_column c;
    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_BOOLEAN), 1, NULL, &err), &err);
    for (int i = 0; i < 21; i++) {
        bool b = (i % 3) == 0;
        EM_ASSERT_OK(em_column_append_fixed(&c, &b, &err), &err);
    }
    assert_int_equal(c.values->size, 3);
    for (int i = 0; i < 21; i++)
        assert_int_equal(em_bit_get(c.values->data, i), (i % 3) == 0);
    int32_t sel[] = {20, 1, 3, 9, 10};
    em_column t;
    EM_ASSERT_OK(em_column_take(&c, sel, 5, NULL, &t, &err), &err);
    assert_int_equal(t.values->data[0] & 0x1f, 0x04 | 0x08); /* outputs 2, 3 = rows 3, 9 */
    em_column_reset(&t);
    em_column_reset(&c);
}

static void test_strings(void **state) {
    (void)state;
    em_error err = {0};
    em_column c;
    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_STRING), 0, NULL, &err), &err);
    char buf[64];
    for (int i = 0; i < 500; i++) {
        if (i % 5 == 4) {
            EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
            continue;
        }
        int n = snprintf(buf, sizeof buf, "value-%d", i);
        EM_ASSERT_OK(em_column_append_bytes(&c, buf, n, &err), &err);
    }
    const int32_t *off = em_column_offsets(&c);
    assert_int_equal(off[0], 0);
    assert_int_equal(c.data->size, off[500]);
    assert_int_equal(c.values->size, 501 * 4);
    assert_int_equal(off[5], off[4]);
    assert_memory_equal(em_column_chars(&c) + off[7], "value-7", 7);
    int32_t sel[] = {499, 7, 4, 0};
    em_column t;
    EM_ASSERT_OK(em_column_take(&c, sel, 4, NULL, &t, &err), &err);
    const int32_t *to = em_column_offsets(&t);
    assert_int_equal(to[1], 0); /* 499 is null: empty */
    assert_false(em_column_is_valid(&t, 0));
    assert_int_equal(to[2] - to[1], 7);
    assert_memory_equal(em_column_chars(&t) + to[1], "value-7", 7);
    assert_false(em_column_is_valid(&t, 2));
    assert_memory_equal(em_column_chars(&t) + to[3], "value-0", 7);
    assert_int_equal(t.data->size, 14);
    em_column_reset(&t);

    assert_int_equal(em_column_append_fixed(&c, &(int){1}, &err), EM_ERR_TYPE);
    em_column_reset(&c);
}

static void test_null_type(void **state) {
    (void)state;
    em_error err = {0};
    em_column c;
    EM_ASSERT_OK(em_column_init(&c, em_type_make(EM_TYPE_NULL), 4, NULL, &err), &err);
    for (int i = 0; i < 10; i++)
        EM_ASSERT_OK(em_column_append_null(&c, &err), &err);
    assert_null(c.values);
    assert_int_equal(c.length, 10);
    assert_int_equal(c.null_count, 10);
    assert_false(em_column_is_valid(&c, 9));
    em_column t;
    EM_ASSERT_OK(em_column_take(&c, NULL, 10, NULL, &t, &err), &err);
    assert_int_equal(t.length, 10);
    assert_int_equal(em_column_null_count(&t), 10);
    assert_false(em_column_is_valid(&t, 3));
    em_column_reset(&t);
    em_column_reset(&c);
}

static em_status build_batch(em_pool *pool, int rows, em_batch **out, em_error *err) {
    em_schema s;
    EM_TRY(em_schema_init(&s, 4, err));
    em_status st = em_schema_set(&s, 0, "id", em_type_make(EM_TYPE_LONG), false, err);
    if (st == EM_OK)
        st = em_schema_set(&s, 1, "name", em_type_make(EM_TYPE_STRING), true, err);
    if (st == EM_OK)
        st = em_schema_set(&s, 2, "flag", em_type_make(EM_TYPE_BOOLEAN), true, err);
    if (st == EM_OK)
        st = em_schema_set(&s, 3, "price", em_type_decimal(20, 2), true, err);
    em_batch *b = NULL;
    if (st == EM_OK)
        st = em_batch_create(&s, EM_BATCH_CAP, pool, &b, err);
    em_schema_reset(&s);
    if (st != EM_OK)
        return st;
    char buf[32];
    for (int64_t i = 0; i < rows && st == EM_OK; i++) {
        st = em_column_append_fixed(&b->cols[0], &i, err);
        if (st == EM_OK && i % 4 == 1)
            st = em_column_append_null(&b->cols[1], err);
        else if (st == EM_OK)
            st = em_column_append_bytes(&b->cols[1], buf,
                                        snprintf(buf, sizeof buf, "n%lld", (long long)i), err);
        bool f = i & 1;
        if (st == EM_OK)
            st = em_column_append_fixed(&b->cols[2], &f, err);
        em_i128 d = (em_i128)i * -1000000007;
        if (st == EM_OK)
            st = i % 3 == 2 ? em_column_append_null(&b->cols[3], err)
                            : em_column_append_fixed(&b->cols[3], &d, err);
    }
    if (st == EM_OK) {
        b->n_rows = rows;
        st = em_batch_sel_reserve(b, rows, err);
    }
    if (st == EM_OK) {
        int64_t n = 0;
        for (int i = 0; i < rows; i++)
            if (i % 2 == 0)
                b->sel[n++] = i;
        b->n_sel = n;
        st = em_batch_compact(b, err);
    }
    if (st != EM_OK) {
        em_batch_destroy(b);
        return st;
    }
    *out = b;
    return EM_OK;
}

static void check_built_batch(const em_batch *b, int rows) {
    int64_t expect = (rows + 1) / 2;
    assert_null(b->sel);
    assert_int_equal(b->n_rows, expect);
    assert_int_equal(em_batch_rows(b), expect);
    for (int c = 0; c < b->n_cols; c++)
        assert_int_equal(b->cols[c].length, expect);
    for (int64_t k = 0; k < expect; k++) {
        int64_t i = 2 * k;
        assert_int_equal(((int64_t *)b->cols[0].values->data)[k], i);
        assert_true(em_column_is_valid(&b->cols[1], k)); /* even rows never null */
        char buf[32];
        int n = snprintf(buf, sizeof buf, "n%lld", (long long)i);
        const int32_t *off = em_column_offsets(&b->cols[1]);
        assert_int_equal(off[k + 1] - off[k], n);
        assert_memory_equal(em_column_chars(&b->cols[1]) + off[k], buf, n);
        assert_false(em_bit_get(b->cols[2].values->data, k));
        assert_int_equal(em_column_is_valid(&b->cols[3], k), i % 3 != 2);
        if (i % 3 != 2)
            assert_true(((em_i128 *)b->cols[3].values->data)[k] == (em_i128)i * -1000000007);
    }
}

static void test_batch_compact(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *pool = em_pool_create("batch-test", NULL, -1);
    assert_non_null(pool);
    for (int rows = 0; rows <= 9; rows++) {
        em_batch *b = NULL;
        EM_ASSERT_OK(build_batch(pool, rows, &b, &err), &err);
        check_built_batch(b, rows);
        /* clearing reuses exclusively owned buffers but never ones shared out */
        em_column outside;
        em_column_share(&outside, &b->cols[1]);
        const uint8_t *kept = b->cols[0].values->data;
        EM_ASSERT_OK(em_batch_clear(b, 3, &err), &err);
        assert_int_equal(b->n_rows, 0);
        assert_int_equal(b->cols[1].length, 0);
        assert_int_equal(em_column_offsets(&b->cols[1])[0], 0);
        assert_ptr_equal(b->cols[0].values->data, kept);
        assert_ptr_not_equal(b->cols[1].values, outside.values);
        assert_int_equal(outside.length, (rows + 1) / 2);
        em_column_reset(&outside);
        for (int64_t i = 0; i < 5; i++) {
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &i, &err), &err);
            EM_ASSERT_OK(em_column_append_bytes(&b->cols[1], "ab", 2, &err), &err);
            EM_ASSERT_OK(em_column_append_null(&b->cols[3], &err), &err);
        }
        assert_int_equal(((int64_t *)b->cols[0].values->data)[4], 4);
        assert_int_equal(em_column_offsets(&b->cols[1])[5], 10);
        assert_int_equal(em_column_null_count(&b->cols[3]), 5);
        em_batch_destroy(b);
    }
    em_batch *b = NULL;
    EM_ASSERT_OK(build_batch(pool, 5000, &b, &err), &err);
    check_built_batch(b, 5000);
    em_batch_destroy(b);
    assert_int_equal(em_pool_used(pool), 0);
    assert_true(em_pool_peak(pool) > 0);
    em_pool_destroy(pool);
}

/* Fails allocation 1, 2, 3, ... of a batch build until the build no longer
 * hits the injected failure: each failure must surface as EM_ERR_NOMEM with
 * nothing charged (and, under ASan, nothing leaked). */
static void test_fault_injection(void **state) {
    (void)state;
    em_pool *pool = em_pool_create("fault", NULL, -1);
    int64_t n;
    for (n = 1; n < 100000; n++) {
        em_error err = {0};
        em_batch *b = NULL;
        em_alloc_fail_after(n);
        em_status st = build_batch(pool, 40, &b, &err);
        bool fired = em_alloc_fail_triggered();
        em_alloc_fail_after(0);
        if (!fired) {
            EM_ASSERT_OK(st, &err);
            check_built_batch(b, 40);
            em_batch_destroy(b);
            break;
        }
        assert_int_equal(st, EM_ERR_NOMEM);
        assert_null(b);
        assert_int_equal(em_pool_used(pool), 0);
    }
    assert_true(n > 10); /* the loop really went through many allocations */
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
}

static void test_share_refcounts(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *pool = em_pool_create("share", NULL, -1);
    em_column a, b;
    EM_ASSERT_OK(em_column_init(&a, em_type_make(EM_TYPE_DOUBLE), 8, pool, &err), &err);
    double x = 2.5;
    EM_ASSERT_OK(em_column_append_fixed(&a, &x, &err), &err);
    em_column_share(&b, &a);
    assert_int_equal(atomic_load(&a.values->refcount), 2);
    em_column_reset(&a);
    assert_true(em_pool_used(pool) > 0);
    assert_true(((double *)b.values->data)[0] == 2.5);
    em_column_reset(&b);
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
}

/* Coalescing: appending selected and unselected batches, and a failure
 * half-way (injected) leaving the destination unchanged. */
static void test_batch_append(void **state) {
    (void)state;
    em_error err = {0};
    em_batch *a = NULL, *b = NULL;
    EM_ASSERT_OK(build_batch(NULL, 7, &a, &err), &err); /* 4 rows: 0 2 4 6 */
    EM_ASSERT_OK(build_batch(NULL, 9, &b, &err), &err); /* 5 rows: 0 2 4 6 8 */
    EM_ASSERT_OK(em_batch_sel_reserve(b, 2, &err), &err);
    b->sel[0] = 1;
    b->sel[1] = 4;
    b->n_sel = 2;
    EM_ASSERT_OK(em_batch_append(a, b, &err), &err);
    assert_int_equal(a->n_rows, 6);
    const int64_t *ids = (const int64_t *)a->cols[0].values->data;
    int64_t expect[6] = {0, 2, 4, 6, 2, 8};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(ids[i], expect[i]);
        assert_int_equal(a->cols[a->n_cols - 1].length, 6);
    }
    const int32_t *off = em_column_offsets(&a->cols[1]);
    assert_memory_equal(em_column_chars(&a->cols[1]) + off[5], "n8", 2);
    assert_int_equal(em_column_is_valid(&a->cols[3], 5), 8 % 3 != 2);

    /* an injected failure part-way leaves a as it was */
    for (int64_t n = 1; n < 50; n++) {
        em_alloc_fail_after(n);
        em_status st = em_batch_append(a, b, &err);
        bool fired = em_alloc_fail_triggered();
        em_alloc_fail_after(0);
        if (!fired) {
            EM_ASSERT_OK(st, &err);
            assert_int_equal(a->n_rows, 8);
            break;
        }
        assert_int_equal(st, EM_ERR_NOMEM);
        assert_int_equal(a->n_rows, 6);
        for (int c = 0; c < a->n_cols; c++)
            assert_int_equal(a->cols[c].length, 6);
        assert_int_equal(em_column_offsets(&a->cols[1])[6], a->cols[1].data->size);
    }
    em_batch_destroy(b);
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "x", em_type_make(EM_TYPE_INT), true, &err), &err);
    EM_ASSERT_OK(em_batch_create(&s, 1, NULL, &b, &err), &err);
    em_schema_reset(&s);
    assert_int_equal(em_batch_append(a, b, &err), EM_ERR_TYPE);
    em_batch_destroy(b);
    em_batch_destroy(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_append_and_take),
        cmocka_unit_test(test_append_nulls),
        cmocka_unit_test(test_boolean_bits),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_null_type),
        cmocka_unit_test(test_batch_compact),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_share_refcounts),
        cmocka_unit_test(test_batch_append),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
