/* SPDX-License-Identifier: Apache-2.0 */
/* Resource profiles: the default from Spark's keys and each auto-adjust case,
 * with the computed values asserted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ember/profile.h"
#include "testutil.h"

#define MIB (1LL << 20)

static em_conf *conf_of(const char *const *kv) {
    em_conf *c = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_conf_create(&c, &err), &err);
    for (; *kv; kv++)
        EM_ASSERT_OK(em_conf_set_kv(c, *kv, &err), &err);
    return c;
}

/* 2g heap, 1g off-heap, 4 slots: the executor most cases below start from */
static void four_slots(em_resource_profile *def, em_profile_rules *rules, bool enabled) {
    const char *kv[] = {"spark.executor.memory=2g", "spark.memory.offHeap.size=1g",
                        "spark.executor.cores=4", NULL};
    const char *on[] = {"spark.ember.autoAdjustStageResource.enabled=true", NULL};
    em_conf *c = conf_of(kv);
    em_error err = {0};
    EM_ASSERT_OK(em_profile_default(c, def, &err), &err);
    em_conf_destroy(c);
    c = conf_of(enabled ? on : kv + 3);
    EM_ASSERT_OK(em_profile_rules_from_conf(c, rules, &err), &err);
    em_conf_destroy(c);
}

static const int64_t ROW_POOL = (int64_t)((double)(2048 - 300) * MIB * 0.6);

static void test_default_profile(void **state) {
    (void)state;
    em_resource_profile d;
    em_profile_rules r;
    four_slots(&d, &r, false);
    assert_int_equal(d.executor_memory, 2048 * MIB);
    assert_int_equal(d.row_pool, ROW_POOL);
    assert_int_equal(d.task_slots, 4);
    assert_int_equal(d.row_per_task, ROW_POOL / 4);
    assert_int_equal(d.native_per_task, 256 * MIB);
    /* Spark's defaults: 1g heap, 1 core, no off-heap: the native pool is unbounded */
    em_error err = {0};
    EM_ASSERT_OK(em_profile_default(NULL, &d, &err), &err);
    assert_int_equal(d.task_slots, 1);
    assert_int_equal(d.row_per_task, (int64_t)((double)(1024 - 300) * MIB * 0.6));
    assert_int_equal(d.native_per_task, -1);
    /* rules: Gluten's defaults, and its spellings as aliases */
    assert_false(r.enabled);
    assert_true(r.heap_ratio == 2.0 && r.offheap_ratio == 0.5 && r.fallen_threshold == 0.5);
    assert_int_equal(r.shuffle_threshold, 10000000);
    const char *gl[] = {"spark.gluten.auto.adjustStageResource.enabled=true",
                        "spark.gluten.auto.adjustStageResources.heap.ratio=3", NULL};
    em_conf *c = conf_of(gl);
    EM_ASSERT_OK(em_profile_rules_from_conf(c, &r, &err), &err);
    em_conf_destroy(c);
    assert_true(r.enabled);
    assert_true(r.heap_ratio == 3.0);
}

static void test_default_profile_errors(void **state) {
    (void)state;
    em_resource_profile d;
    em_error err = {0};
    const char *small[] = {"spark.executor.memory=400m", NULL};
    em_conf *c = conf_of(small);
    assert_int_equal(em_profile_default(c, &d, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "spark.executor.memory"));
    em_conf_destroy(c);
    const char *cpus[] = {"spark.executor.cores=1", "spark.task.cpus=2", NULL};
    c = conf_of(cpus);
    assert_int_equal(em_profile_default(c, &d, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "spark.task.cpus=2"));
    em_conf_destroy(c);
}

static void test_plain_stage_left_alone(void **state) {
    (void)state;
    em_resource_profile d;
    em_profile_rules r;
    four_slots(&d, &r, true);
    em_stage_shape s = {.n_native = 5, .shuffle_statuses = 200 * 200};
    em_stage_profile p;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_false(p.fallback || p.heavy_shuffle || p.adjusted);
    assert_memory_equal(&p.profile, &d, sizeof d);
    assert_string_equal(p.reason, "");
    /* a minority of fallback nodes without a transition is not a fallback stage */
    s = (em_stage_shape){.n_native = 3, .n_fallback = 2};
    em_profile_for_stage(&d, &r, &s, &p);
    assert_false(p.fallback || p.adjusted);
    s = (em_stage_shape){.n_native = 2, .n_fallback = 3};
    em_profile_for_stage(&d, &r, &s, &p);
    assert_true(p.fallback && p.adjusted);
}

static void test_fallback_stage(void **state) {
    (void)state;
    em_resource_profile d;
    em_profile_rules r;
    four_slots(&d, &r, true);
    em_stage_shape s = {.n_native = 4, .n_fallback = 1, .n_transitions = 2};
    em_stage_profile p;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_true(p.fallback && p.adjusted);
    assert_false(p.heavy_shuffle);
    assert_int_equal(p.profile.row_per_task, 2 * (ROW_POOL / 4));
    assert_int_equal(p.profile.native_per_task, 128 * MIB);
    assert_int_equal(p.profile.task_slots, 2);
    assert_non_null(strstr(p.reason, "1 of 5 nodes on the row engine, 2 transitions"));
    assert_non_null(strstr(p.reason, "2 tasks at once instead of 4"));
    /* disabled: detected, not applied */
    r.enabled = false;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_true(p.fallback);
    assert_false(p.adjusted);
    assert_memory_equal(&p.profile, &d, sizeof d);
}

static void test_no_native_stage(void **state) {
    (void)state;
    em_resource_profile d;
    em_profile_rules r;
    four_slots(&d, &r, true);
    em_stage_shape s = {.n_fallback = 3};
    em_stage_profile p;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_true(p.fallback && p.adjusted);
    assert_int_equal(p.profile.row_per_task, 2 * (ROW_POOL / 4));
    assert_int_equal(p.profile.native_per_task, 128 * MIB); /* divided by the heap ratio */
    assert_int_equal(p.profile.task_slots, 2);
    assert_non_null(strstr(p.reason, "no native node"));
    r.heap_ratio = 4.0;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_int_equal(p.profile.native_per_task, 64 * MIB);
    assert_int_equal(p.profile.task_slots, 1);
}

static void test_heavy_shuffle_stage(void **state) {
    (void)state;
    em_resource_profile d;
    em_profile_rules r;
    four_slots(&d, &r, true);
    em_stage_shape s = {.n_native = 5, .shuffle_statuses = 10000000};
    em_stage_profile p;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_true(p.heavy_shuffle && p.adjusted);
    assert_false(p.fallback);
    assert_int_equal(p.profile.row_per_task, 2 * (ROW_POOL / 4));
    assert_int_equal(p.profile.native_per_task, 256 * MIB); /* native untouched */
    assert_int_equal(p.profile.task_slots, 2);
    assert_non_null(strstr(p.reason, "heavy shuffle: 10000000 map statuses"));
    s.shuffle_statuses = 9999999;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_false(p.heavy_shuffle || p.adjusted);
}

static void test_shape_the_executor_cannot_hold(void **state) {
    (void)state;
    const char *kv[] = {"spark.executor.memory=2g", "spark.executor.cores=1", NULL};
    em_conf *c = conf_of(kv);
    em_resource_profile d;
    em_error err = {0};
    EM_ASSERT_OK(em_profile_default(c, &d, &err), &err);
    em_conf_destroy(c);
    em_profile_rules r = {.enabled = true, .heap_ratio = 2.0, .offheap_ratio = 0.5,
                          .fallen_threshold = 0.5, .shuffle_threshold = 100};
    em_stage_shape s = {.n_fallback = 2};
    em_stage_profile p;
    em_profile_for_stage(&d, &r, &s, &p);
    assert_true(p.fallback);
    assert_false(p.adjusted);
    assert_memory_equal(&p.profile, &d, sizeof d);
    assert_non_null(strstr(p.reason, "kept the default profile"));
    char b[32];
    em_profile_format_bytes(1536 * MIB, b, sizeof b);
    assert_string_equal(b, "1.5 GiB");
    em_profile_format_bytes(-1, b, sizeof b);
    assert_string_equal(b, "unbounded");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_profile),
        cmocka_unit_test(test_default_profile_errors),
        cmocka_unit_test(test_plain_stage_left_alone),
        cmocka_unit_test(test_fallback_stage),
        cmocka_unit_test(test_no_native_stage),
        cmocka_unit_test(test_heavy_shuffle_stage),
        cmocka_unit_test(test_shape_the_executor_cannot_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
