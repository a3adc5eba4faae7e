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

#include "ember/overrides.h"
#include "ember/profile.h"
#include "ember/rowops.h"
#include "ember/runtime.h"
#include "ember/tpch.h"
#include "ember/value_text.h"
#include "test_plan_common.h"
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

static void test_enforced_only_when_asked(void **state) {
    (void)state;
    em_resource_profile d;
    em_profile_rules r;
    em_error err = {0};
    bool on = true;
    const char *none[] = {"spark.ember.autoAdjustStageResource.heap.ratio=3", NULL};
    em_conf *c = conf_of(none);
    EM_ASSERT_OK(em_profile_from_conf(c, &on, &d, &r, &err), &err);
    assert_false(on); /* nothing about executors: a run keeps unbounded pools */
    em_conf_destroy(c);
    const char *cores[] = {"spark.executor.cores=3", NULL};
    c = conf_of(cores);
    EM_ASSERT_OK(em_profile_from_conf(c, &on, &d, &r, &err), &err);
    assert_true(on);
    assert_int_equal(d.task_slots, 3);
    em_conf_destroy(c);
    const char *gluten[] = {"spark.gluten.auto.adjustStageResource.enabled=true", NULL};
    c = conf_of(gluten);
    EM_ASSERT_OK(em_profile_from_conf(c, &on, &d, &r, &err), &err);
    assert_true(on && r.enabled);
    em_conf_destroy(c);
    const char *bad[] = {"spark.executor.memory=100m", NULL};
    c = conf_of(bad);
    assert_int_equal(em_profile_from_conf(c, &on, &d, &r, &err), EM_ERR_INVALID);
    em_conf_destroy(c);
}

/* TPC-H q3 as Spark 3.5 printed it, as `ember run` runs it: broadcast
 * stages 0 and 1, stage 2 the joins' map side into Exchange (19) (5
 * partitions), stage 3 the final HashAggregate (20) gathered, stage 4 the
 * TakeOrderedAndProject (21) over it. */
typedef struct q3_query {
    em_plan *plan;
    em_exec_plan *xp;
    em_query *q;
    bool enforced;
    em_resource_profile def;
    em_profile_rules rules;
} q3_query;

static void q3_open(q3_query *t, const char *const *kv, const char *warehouse, int threads) {
    memset(t, 0, sizeof *t);
    em_error err = {0};
    EM_ASSERT_OK(em_overrides_register_confs(&err), &err);
    em_conf *c = conf_of(kv);
    t->plan = plan_test_parse_shared("3.5", 3);
    EM_ASSERT_OK(em_overrides_apply(t->plan, c, &t->xp, &err), &err);
    EM_ASSERT_OK(em_profile_from_conf(c, &t->enforced, &t->def, &t->rules, &err), &err);
    em_conf_destroy(c);
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = warehouse;
    o.threads = threads;
    /* q3 as Spark cuts it, its lineitem broadcast whole: the memory the
     * stages below are sized against (runtime filters narrow it) */
    o.runtime_filters = false;
    o.build = em_exec_build;
    o.build_ctx = t->xp;
    if (t->enforced) {
        o.profile = &t->def;
        o.profile_rules = &t->rules;
        o.engine = em_profile_exec_engine;
        o.engine_ctx = t->xp;
    }
    EM_ASSERT_OK(em_query_create(t->plan, &o, &t->q, &err), &err);
}

static void q3_close(q3_query *t) {
    em_query_destroy(t->q);
    em_exec_plan_destroy(t->xp);
    em_plan_destroy(t->plan);
}

static em_stage_info stage_of(const q3_query *t, int i) {
    em_stage_info si;
    em_query_stage_info(t->q, i, &si);
    return si;
}

static void test_stage_shapes_of_q3(void **state) {
    (void)state;
    /* HashAggregate on rows: stage 2 has 7 native operators, the partial
     * HashAggregate (18) and the row Exchange (19) above it, and the
     * ColumnarToRow below the aggregate */
    const char *agg_off[] = {"spark.executor.cores=4", "spark.ember.sql.exec.HashAggregateExec=false",
                             NULL};
    q3_query t;
    q3_open(&t, agg_off, NULL, 2);
    assert_int_equal(em_query_n_stages(t.q), 5);
    em_stage_info si = stage_of(&t, 2);
    assert_true(si.profiled);
    assert_int_equal(si.node->id, 19);
    assert_int_equal(si.shape.n_native, 7);
    assert_int_equal(si.shape.n_fallback, 2);
    assert_int_equal(si.shape.n_transitions, 1);
    assert_true(si.profile.fallback);
    assert_false(si.profile.adjusted); /* auto-adjust is off */
    /* Spark's ColumnarToRow (2) is no operator of either engine */
    em_stage_shape all;
    em_profile_stage_nodes(si.node, NULL, NULL, &all);
    assert_int_equal(all.n_native, 10);
    /* the gather reads stage 2's 5 partitions; stage 2's mappers are scan
     * splits, unknown before the scans are planned */
    si = stage_of(&t, 3);
    assert_int_equal(si.shape.n_native, 0);
    assert_int_equal(si.shape.n_fallback, 1);
    assert_int_equal(si.shuffle_unknown, 1);
    assert_int_equal(si.shape.shuffle_statuses, 0);
    /* the root reads the gather's 5 tasks into one partition: natively
     * (the runtime's synthetic root), no transition */
    si = stage_of(&t, 4);
    assert_int_equal(si.shape.n_native, 1);
    assert_int_equal(si.shape.n_fallback + si.shape.n_transitions, 0);
    assert_int_equal(si.shape.shuffle_statuses, 5);
    assert_int_equal(si.shuffle_unknown, 0);
    q3_close(&t);

    const char *native[] = {"spark.executor.cores=4", NULL};
    q3_open(&t, native, NULL, 2);
    si = stage_of(&t, 2);
    assert_int_equal(si.shape.n_native, 9);
    assert_int_equal(si.shape.n_fallback + si.shape.n_transitions, 0);
    assert_false(si.profile.fallback);
    q3_close(&t);

    const char *rows[] = {"spark.ember.sql.enabled=false",
                          "spark.ember.autoAdjustStageResource.enabled=true", NULL};
    q3_open(&t, rows, NULL, 2);
    si = stage_of(&t, 2);
    assert_int_equal(si.shape.n_native, 0);
    assert_int_equal(si.shape.n_fallback, 9);
    assert_int_equal(si.shape.n_transitions, 0);
    assert_true(si.profile.fallback);
    /* 1g and 1 core: a task of twice the row memory does not fit */
    assert_false(si.profile.adjusted);
    assert_non_null(strstr(si.profile.reason, "kept the default profile"));
    q3_close(&t);
}

/* The result as text, row by row. */
static char *result_text(const em_query *q) {
    em_strbuf sb, cell;
    em_strbuf_init(&sb);
    em_strbuf_init(&cell);
    em_error err = {0};
    const em_batch_list *l = em_query_result(q);
    for (int64_t i = 0; i < l->n_batches; i++) {
        const em_batch *b = l->batches[i];
        for (int64_t k = 0; k < em_batch_rows(b); k++) {
            int64_t r = b->sel ? b->sel[k] : k;
            for (int c = 0; c < b->n_cols; c++) {
                bool is_null = false;
                em_strbuf_clear(&cell);
                EM_ASSERT_OK(em_value_text(&b->cols[c], r, &cell, &is_null, &err), &err);
                EM_ASSERT_OK(em_strbuf_appendf(&sb, &err, "%s%s", c ? "," : "",
                                               is_null ? "NULL" : em_strbuf_cstr(&cell)),
                             &err);
            }
            EM_ASSERT_OK(em_strbuf_appends(&sb, "\n", &err), &err);
        }
    }
    char *text = strdup(em_strbuf_cstr(&sb));
    em_strbuf_reset(&sb);
    em_strbuf_reset(&cell);
    return text;
}

/* q3 entirely on the row engine over TPC-H SF 0.01: stage 2's row
 * BroadcastHashJoins hold about 6.5 MiB of build rows in one task. A 450m
 * executor with 20 cores gives each task 4.5 MiB of row memory: the stage
 * fails naming the join and the pool; with auto-adjust it falls back, so
 * its tasks get 9 MiB each, 10 at once, and the answer is the
 * unconstrained run's. */
static const char *tpch_warehouse(void) { return em_test_tpch_warehouse("test_profile_tpch"); }

static void test_fallback_stage_oom_then_adjusted(void **state) {
    (void)state;
    const char *wh = tpch_warehouse();
    em_error err = {0};

    const char *free_run[] = {"spark.ember.sql.enabled=false", NULL};
    q3_query t;
    q3_open(&t, free_run, wh, 2);
    assert_false(t.enforced);
    EM_ASSERT_OK(em_query_run(t.q, &err), &err);
    char *want = result_text(t.q);
    assert_true(em_query_result(t.q)->n_rows == 10);
    int64_t free_peak = stage_of(&t, 2).peak_row;
    q3_close(&t);

    const char *tight[] = {"spark.ember.sql.enabled=false", "spark.executor.memory=450m",
                           "spark.executor.cores=20", NULL};
    q3_open(&t, tight, wh, 2);
    assert_int_equal(t.def.row_per_task, (int64_t)(150 * MIB * 0.6) / 20);
    assert_true(free_peak > t.def.row_per_task && free_peak < 2 * t.def.row_per_task);
    assert_int_equal(em_query_run(t.q, &err), EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, "stage 2 (shuffle of Exchange (19))"));
    assert_non_null(strstr(err.msg, "BroadcastHashJoin"));
    assert_non_null(strstr(err.msg, "out of memory in pool 'stage 2 task"));
    assert_non_null(strstr(err.msg, "row pool'"));
    assert_non_null(strstr(err.msg, "spark.ember.autoAdjustStageResource.enabled=true"));
    q3_close(&t);

    const char *adjusted[] = {"spark.ember.sql.enabled=false", "spark.executor.memory=450m",
                              "spark.executor.cores=20",
                              "spark.ember.autoAdjustStageResource.enabled=true", NULL};
    q3_open(&t, adjusted, wh, 2);
    EM_ASSERT_OK(em_query_run(t.q, &err), &err);
    char *got = result_text(t.q);
    assert_string_equal(got, want);
    for (int i = 0; i < em_query_n_stages(t.q); i++) {
        em_stage_info si = stage_of(&t, i);
        assert_true(si.max_running >= 1 && si.max_running <= si.profile.profile.task_slots);
        assert_true(si.peak_row <= si.profile.profile.row_per_task);
    }
    em_stage_info si = stage_of(&t, 2);
    assert_true(si.profile.adjusted);
    assert_int_equal(si.profile.profile.row_per_task, 2 * t.def.row_per_task);
    assert_int_equal(si.profile.profile.task_slots, 10);
    assert_true(si.peak_row > t.def.row_per_task);
    /* readers charge the map statuses: the root reads the gather's 5 tasks */
    si = stage_of(&t, 4);
    assert_int_equal(si.shape.shuffle_statuses, 5);
    assert_true(si.peak_row >= 5 * EM_PROFILE_MAP_STATUS_BYTES);
    free(got);
    q3_close(&t);

    /* one core: never two tasks of a stage at once, however many threads */
    const char *one[] = {"spark.executor.cores=1", NULL};
    q3_open(&t, one, wh, 4);
    EM_ASSERT_OK(em_query_run(t.q, &err), &err);
    for (int i = 0; i < em_query_n_stages(t.q); i++)
        assert_int_equal(stage_of(&t, i).max_running, 1);
    assert_int_equal(stage_of(&t, 3).n_tasks, 5);
    got = result_text(t.q);
    assert_string_equal(got, want);
    free(got);
    q3_close(&t);
    free(want);
}

/* A shuffle reader holds its map statuses in row memory: q1 natively, its
 * partial aggregates shuffled into 100 partitions, on an executor whose
 * tasks get 94 bytes of row memory each (450m over a million cores). The
 * final aggregate's stage fails reading the shuffle, before any row. */
static void test_map_statuses_charged(void **state) {
    (void)state;
    const char *wh = tpch_warehouse();
    char path[4096];
    size_t len = 0;
    char *text = plan_test_shared("3.5", 1, &len, path, sizeof path);
    const char *from = "l_linestatus#6, 5), ENSURE";
    char *at = strstr(text, from);
    assert_non_null(at);
    char *edited = malloc(len + 8);
    assert_non_null(edited);
    size_t head = (size_t)(at - text) + strlen("l_linestatus#6, ");
    snprintf(edited, len + 8, "%.*s100%s", (int)head, text, at + strlen("l_linestatus#6, 5"));
    free(text);
    em_plan *plan = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(edited, strlen(edited), NULL, &plan, &err), &err);
    free(edited);
    const char *kv[] = {"spark.executor.memory=450m", "spark.executor.cores=1000000", NULL};
    em_conf *c = conf_of(kv);
    bool on = false;
    em_resource_profile d;
    em_profile_rules r;
    EM_ASSERT_OK(em_profile_from_conf(c, &on, &d, &r, &err), &err);
    em_conf_destroy(c);
    assert_true(on);
    assert_int_equal(d.row_per_task, 94);
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = wh;
    o.threads = 2;
    o.profile = &d;
    o.profile_rules = &r;
    em_query *q = NULL;
    EM_ASSERT_OK(em_query_create(plan, &o, &q, &err), &err);
    assert_int_equal(em_query_run(q, &err), EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, "stage 1 (shuffle of Exchange (8))"));
    assert_non_null(strstr(err.msg, "shuffle read of Exchange (6): the map statuses of "));
    assert_non_null(strstr(err.msg, " mappers x 100 reducers: out of memory in pool 'stage 1 task "));
    assert_non_null(strstr(err.msg, "row pool'"));
    assert_non_null(strstr(err.msg, "raise spark.executor.memory"));
    em_stage_info si;
    em_query_stage_info(q, 0, &si);
    assert_int_equal(si.n_out_partitions, 100);
    assert_int_equal(si.peak_row, 0); /* all native: its row pool untouched */
    em_query_destroy(q);
    em_plan_destroy(plan);
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
        cmocka_unit_test(test_enforced_only_when_asked),
        cmocka_unit_test(test_stage_shapes_of_q3),
        cmocka_unit_test(test_fallback_stage_oom_then_adjusted),
        cmocka_unit_test(test_map_statuses_charged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
