/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory pools and buffers: alignment, hierarchical charging, budget failures
 * that name the pool and roll back every level, peaks, buffer growth and
 * reference counting, wrapped foreign memory, and fault injection.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ember/memory.h"

static void test_alignment_and_accounting(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *p = em_pool_create("root", NULL, -1);
    assert_string_equal(em_pool_name(p), "root");
    void *a = em_pool_alloc(p, 100, &err);
    void *b = em_pool_alloc(p, 0, &err);
    void *c = em_pool_calloc(p, 33, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal((uintptr_t)a % EM_ALIGNMENT, 0);
    assert_int_equal((uintptr_t)c % EM_ALIGNMENT, 0);
    for (int i = 0; i < 33; i++)
        assert_int_equal(((uint8_t *)c)[i], 0);
    assert_int_equal(em_pool_used(p), 133);
    memset(a, 7, 100);
    a = em_pool_realloc(p, a, 100, 1000, &err);
    assert_non_null(a);
    assert_int_equal(((uint8_t *)a)[99], 7);
    assert_int_equal(em_pool_used(p), 1033);
    assert_int_equal(em_pool_peak(p), 1133); /* old and new block briefly coexist */
    em_pool_free(p, a, 1000);
    em_pool_free(p, b, 0);
    em_pool_free(p, c, 33);
    assert_int_equal(em_pool_used(p), 0);
    assert_int_equal(em_pool_peak(p), 1133);
    em_pool_destroy(p);
}

/* A large calloc is zero whether its block is a fresh mapping (not written
 * again) or a freed block reused from the cache (written with zeros). */
static void test_large_calloc_zero(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *p = em_pool_create("large", NULL, -1);
    int64_t size = (int64_t)4 << 20;
    for (int round = 0; round < 3; round++) {
        uint8_t *z = em_pool_calloc(p, size, &err);
        assert_non_null(z);
        for (int64_t i = 0; i < size; i += 4093)
            if (z[i] != 0)
                fail_msg("round %d: byte %lld is %d", round, (long long)i, z[i]);
        assert_int_equal(z[size - 1], 0);
        memset(z, 0xab, (size_t)size); /* dirty, for the cache to hand back */
        em_pool_free(p, z, size);
    }
    assert_int_equal(em_pool_used(p), 0);
    em_pool_destroy(p);
}

static void test_hierarchy_and_budget(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *root = em_pool_create("executor", NULL, 1000);
    em_pool *task = em_pool_create("task-7", root, -1);
    em_pool *op = em_pool_create("hash-agg", task, 600);
    EM_ASSERT_OK(em_pool_reserve(op, 500, &err), &err);
    assert_int_equal(em_pool_used(task), 500);
    assert_int_equal(em_pool_used(root), 500);

    /* the operator's own budget */
    assert_int_equal(em_pool_reserve(op, 200, &err), EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, "'hash-agg'"));
    assert_int_equal(em_pool_used(op), 500);
    assert_int_equal(em_pool_used(root), 500);

    /* an ancestor's budget: every level rolled back, message names both */
    em_pool *other = em_pool_create("sort", task, -1);
    assert_null(em_pool_alloc(other, 501, &err));
    assert_int_equal(err.code, EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, "'executor'"));
    assert_non_null(strstr(err.msg, "'sort'"));
    assert_int_equal(em_pool_used(other), 0);
    assert_int_equal(em_pool_used(task), 500);
    assert_int_equal(em_pool_used(root), 500);
    assert_int_equal(em_pool_peak(root), 500);

    em_pool_set_budget(root, -1);
    void *x = em_pool_alloc(other, 501, &err);
    assert_non_null(x);
    assert_int_equal(em_pool_peak(root), 1001);
    assert_int_equal(em_pool_peak(other), 501);
    em_pool_free(other, x, 501);
    em_pool_release(op, 500);
    assert_int_equal(em_pool_used(root), 0);

    /* a leaked charge is returned to the ancestors when the pool goes */
    EM_ASSERT_OK(em_pool_reserve(op, 50, &err), &err);
    em_pool_destroy(op);
    assert_int_equal(em_pool_used(root), 0);
    em_pool_destroy(other);
    em_pool_destroy(task);
    em_pool_destroy(root);
}

/* A task's operators see how full the pools above theirs are. */
static void test_ancestor_pressure(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *query = em_pool_create("query", NULL, 1000);
    em_pool *stage = em_pool_create("stage", query, -1);
    em_pool *task = em_pool_create("task", stage, 10000);
    assert_true(em_pool_ancestor_pressure(task) == 0.0);
    assert_true(em_pool_ancestor_pressure(query) == 0.0); /* its own budget does not count */
    void *a = em_pool_alloc(task, 800, &err);
    assert_non_null(a);
    assert_true(em_pool_ancestor_pressure(task) > 0.79 && em_pool_ancestor_pressure(task) < 0.81);
    em_pool_set_budget(stage, 400); /* the fuller ancestor wins: 800 / 400 */
    assert_true(em_pool_ancestor_pressure(task) > 1.99);
    em_pool_free(task, a, 800);
    assert_true(em_pool_ancestor_pressure(task) == 0.0);
    em_pool_destroy(task);
    em_pool_destroy(stage);
    em_pool_destroy(query);
}

static void test_buffers(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *p = em_pool_create("buf", NULL, -1);
    em_buffer *b;
    EM_ASSERT_OK(em_buffer_create(p, 10, &b, &err), &err);
    assert_int_equal(em_pool_used(p), 10);
    memcpy(b->data, "abcdefghij", 10);
    b->size = 10;
    EM_ASSERT_OK(em_buffer_reserve(b, 1000, &err), &err);
    assert_true(b->capacity >= 1000);
    assert_int_equal((uintptr_t)b->data % EM_ALIGNMENT, 0);
    assert_memory_equal(b->data, "abcdefghij", 10);
    assert_int_equal(em_pool_used(p), b->capacity);
    em_buffer_ref(b);
    em_buffer_unref(b);
    assert_int_equal(em_pool_used(p), b->capacity);
    em_buffer_unref(b);
    assert_int_equal(em_pool_used(p), 0);
    em_buffer_unref(NULL);

    em_pool_set_budget(p, 100);
    assert_int_equal(em_buffer_create(p, 101, &b, &err), EM_ERR_OOM_BUDGET);
    assert_null(b);
    em_pool_destroy(p);
}

static int wrapped_released;
static void wrapped_release(em_buffer *b) {
    wrapped_released++;
    assert_ptr_equal(b->private_data, &wrapped_released);
}

static void test_wrap(void **state) {
    (void)state;
    em_error err = {0};
    static char bytes[16] = "foreign";
    em_buffer *b;
    EM_ASSERT_OK(em_buffer_wrap(bytes, 7, wrapped_release, &wrapped_released, &b, &err), &err);
    assert_int_equal(b->size, 7);
    assert_int_equal(em_buffer_reserve(b, 100, &err), EM_ERR_INVALID);
    em_buffer_ref(b);
    em_buffer_unref(b);
    assert_int_equal(wrapped_released, 0);
    em_buffer_unref(b);
    assert_int_equal(wrapped_released, 1);
}

static void test_fault_injection(void **state) {
    (void)state;
    em_error err = {0};
    em_alloc_fail_after(3);
    void *a = em_pool_alloc(NULL, 8, &err);
    void *b = em_pool_alloc(NULL, 8, &err);
    assert_false(em_alloc_fail_triggered());
    void *c = em_pool_alloc(NULL, 8, &err);
    assert_true(em_alloc_fail_triggered());
    assert_null(c);
    assert_int_equal(err.code, EM_ERR_NOMEM);
    void *d = em_pool_alloc(NULL, 8, &err); /* one-shot */
    assert_non_null(d);
    em_alloc_fail_after(0);
    em_pool_free(NULL, a, 8);
    em_pool_free(NULL, b, 8);
    em_pool_free(NULL, d, 8);

    em_pool *p = em_pool_create("inj", NULL, -1);
    em_alloc_fail_after(1);
    assert_null(em_pool_alloc(p, 64, &err));
    em_alloc_fail_after(0);
    assert_int_equal(em_pool_used(p), 0); /* the charge was refunded */
    assert_non_null(strstr(err.msg, "'inj'"));
    em_pool_destroy(p);
}

/* Several threads charging sibling pools under one budgeted parent: the
 * counters stay exact and the parent never goes over its budget. Racing
 * charges may both fail (the safe direction), so one thread can lose every
 * race under a slow scheduler; only the sum of successes and a quiet charge
 * afterwards are certain. */
typedef struct worker {
    em_pool *pool;
    int failures;
} worker;

static void *charge_loop(void *arg) {
    worker *w = arg;
    for (int i = 0; i < 20000; i++) {
        em_error err;
        void *p = em_pool_alloc(w->pool, 1000 + (i % 7) * 100, &err);
        if (!p) {
            w->failures++;
            continue;
        }
        em_pool_free(w->pool, p, 1000 + (i % 7) * 100);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    em_pool *root = em_pool_create("executor", NULL, 4000);
    worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "task-%d", i);
        w[i].pool = em_pool_create(name, root, -1);
        w[i].failures = 0;
        assert_int_equal(pthread_create(&t[i], NULL, charge_loop, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(em_pool_used(root), 0);
    assert_true(em_pool_peak(root) <= 4000);
    int failures = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(em_pool_used(w[i].pool), 0);
        failures += w[i].failures;
        em_error err;
        void *p = em_pool_alloc(w[i].pool, 1600, &err);
        assert_non_null(p);
        em_pool_free(w[i].pool, p, 1600);
        em_pool_destroy(w[i].pool);
    }
    assert_true(failures < 4 * 20000);
    em_pool_destroy(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment_and_accounting),
        cmocka_unit_test(test_large_calloc_zero),
        cmocka_unit_test(test_hierarchy_and_budget),
        cmocka_unit_test(test_ancestor_pressure),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
