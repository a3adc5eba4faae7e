/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resource profiles (see include/ember/profile.h for the rules). Pure
 * arithmetic over a stage's shape: the runtime measures the shape and
 * applies the result to its task pools and concurrency.
 */
#include "ember/profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

em_status em_profile_default(const em_conf *conf, em_resource_profile *out, em_error *err) {
    memset(out, 0, sizeof *out);
    int64_t heap = 1LL << 30, offheap = 0;
    int32_t cores = 1, cpus = 1;
    if (conf) {
        EM_TRY(em_conf_get_bytes(conf, "spark.executor.memory", &heap, err));
        EM_TRY(em_conf_get_bytes(conf, "spark.memory.offHeap.size", &offheap, err));
        EM_TRY(em_conf_get_int(conf, "spark.executor.cores", &cores, err));
        EM_TRY(em_conf_get_int(conf, "spark.task.cpus", &cpus, err));
    }
    /* Spark's UnifiedMemoryManager refuses an executor smaller than this */
    int64_t min_heap = EM_PROFILE_RESERVED_BYTES + EM_PROFILE_RESERVED_BYTES / 2;
    if (heap < min_heap)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.executor.memory: %lld bytes is below the %lld Spark requires "
                       "(1.5 x the 300 MiB it reserves); raise it",
                       (long long)heap, (long long)min_heap);
    if (cores < cpus)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.executor.cores: %d cores cannot run a task of spark.task.cpus=%d",
                       (int)cores, (int)cpus);
    out->executor_memory = heap;
    out->offheap_memory = offheap;
    out->row_pool = (int64_t)((double)(heap - EM_PROFILE_RESERVED_BYTES) * EM_PROFILE_MEMORY_FRACTION);
    out->executor_cores = cores;
    out->task_cpus = cpus;
    out->task_slots = cores / cpus;
    out->row_per_task = out->row_pool / out->task_slots;
    out->native_per_task = offheap > 0 ? offheap / out->task_slots : -1;
    return EM_OK;
}

em_status em_profile_rules_from_conf(const em_conf *conf, em_profile_rules *out, em_error *err) {
    out->enabled = false;
    out->heap_ratio = 2.0;
    out->offheap_ratio = 0.5;
    out->fallen_threshold = 0.5;
    out->shuffle_threshold = 10000000;
    if (!conf)
        return EM_OK;
    EM_TRY(em_conf_get_bool(conf, "spark.ember.autoAdjustStageResource.enabled", &out->enabled,
                            err));
    EM_TRY(em_conf_get_double(conf, "spark.ember.autoAdjustStageResource.heap.ratio",
                              &out->heap_ratio, err));
    EM_TRY(em_conf_get_double(conf, "spark.ember.autoAdjustStageResource.offHeap.ratio",
                              &out->offheap_ratio, err));
    EM_TRY(em_conf_get_double(conf,
                              "spark.ember.autoAdjustStageResource.fallenNode.ratio.threshold",
                              &out->fallen_threshold, err));
    EM_TRY(em_conf_get_long(conf, "spark.ember.autoAdjustStageResource.shuffleComplexity.threshold",
                            &out->shuffle_threshold, err));
    if (out->heap_ratio <= 0)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.ember.autoAdjustStageResource.heap.ratio: must be above 0");
    return EM_OK;
}

em_status em_profile_from_conf(const em_conf *conf, bool *enforced, em_resource_profile *def,
                               em_profile_rules *rules, em_error *err) {
    static const char *const executor_keys[] = {"spark.executor.memory",
                                                "spark.memory.offHeap.size",
                                                "spark.executor.cores", "spark.task.cpus"};
    EM_TRY(em_profile_default(conf, def, err));
    EM_TRY(em_profile_rules_from_conf(conf, rules, err));
    *enforced = rules->enabled;
    for (size_t i = 0; conf && i < sizeof executor_keys / sizeof *executor_keys; i++)
        *enforced = *enforced || em_conf_is_set(conf, executor_keys[i]);
    return EM_OK;
}

void em_profile_format_bytes(int64_t bytes, char *buf, int cap) {
    if (bytes < 0) {
        snprintf(buf, (size_t)cap, "unbounded");
        return;
    }
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, (size_t)cap, "%lld B", (long long)bytes);
    else
        snprintf(buf, (size_t)cap, "%.1f %s", v, units[u]);
}

em_engine em_profile_exec_engine(void *exec_plan, const em_plan_node *node) {
    const em_node_decision *d = exec_plan ? em_exec_plan_decision(exec_plan, node) : NULL;
    return d ? d->engine : EM_ENGINE_NATIVE;
}

typedef struct shape_walk {
    em_profile_engine_fn engine;
    void *ctx;
    em_stage_shape *shape;
} shape_walk;

/* parent: the engine of the operator reading node's output, or PASS when
 * nothing in this stage's tree reads it through a transition (the root). */
static void count_nodes(const shape_walk *w, const em_plan_node *node, bool root,
                        em_engine parent, int depth) {
    if (depth > 10000)
        return; /* the builder refuses such a tree long before */
    em_engine e = w->engine ? w->engine(w->ctx, node) : EM_ENGINE_NATIVE;
    if (e != EM_ENGINE_ROW && e != EM_ENGINE_PASS)
        e = EM_ENGINE_NATIVE;
    if (e == EM_ENGINE_PASS) {
        if (node->n_children == 1)
            count_nodes(w, node->children[0], root, parent, depth + 1);
        return;
    }
    bool exchange =
        node->kind == EM_NODE_EXCHANGE || node->kind == EM_NODE_BROADCAST_EXCHANGE;
    if (!root && (exchange || node->kind == EM_NODE_REUSED_EXCHANGE)) {
        w->shape->n_transitions += parent != EM_ENGINE_PASS && e != parent;
        return;
    }
    if (e == EM_ENGINE_ROW)
        w->shape->n_fallback++;
    else
        w->shape->n_native++;
    w->shape->n_transitions += parent != EM_ENGINE_PASS && e != parent;
    if (root && exchange) { /* its map side */
        if (node->n_children == 1)
            count_nodes(w, node->children[0], false, EM_ENGINE_PASS, depth + 1);
        return;
    }
    for (int i = 0; i < node->n_children; i++)
        count_nodes(w, node->children[i], false, e, depth + 1);
}

void em_profile_stage_nodes(const em_plan_node *root, em_profile_engine_fn engine, void *ctx,
                            em_stage_shape *shape) {
    memset(shape, 0, sizeof *shape);
    shape_walk w = {engine, ctx, shape};
    if (root)
        count_nodes(&w, root, true, EM_ENGINE_PASS, 0);
}

/* Appends to the stage's reason, keeping it NUL-terminated when it fills up. */
static void say(em_stage_profile *out, const char *fmt, ...) EM_PRINTF(2, 3);
static void say(em_stage_profile *out, const char *fmt, ...) {
    size_t used = strlen(out->reason);
    if (used + 1 >= sizeof out->reason)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason + used, sizeof out->reason - used, fmt, ap);
    va_end(ap);
}

void em_profile_for_stage(const em_resource_profile *def, const em_profile_rules *rules,
                          const em_stage_shape *shape, em_stage_profile *out) {
    memset(out, 0, sizeof *out);
    out->profile = *def;
    int n_nodes = shape->n_native + shape->n_fallback;
    double share = n_nodes > 0 ? (double)shape->n_fallback / n_nodes : 0.0;
    bool no_native = n_nodes > 0 && shape->n_native == 0;
    out->fallback = n_nodes > 0 && shape->n_fallback > 0 &&
                    (shape->n_transitions > 0 || no_native || share > rules->fallen_threshold);
    out->heavy_shuffle = shape->shuffle_statuses >= rules->shuffle_threshold;
    if (!rules->enabled || (!out->fallback && !out->heavy_shuffle))
        return;

    if (out->fallback) {
        if (no_native)
            say(out, "no native node (%d on the row engine)", shape->n_fallback);
        else
            say(out, "fallback: %d of %d nodes on the row engine, %d transition%s", shape->n_fallback,
                n_nodes, shape->n_transitions, shape->n_transitions == 1 ? "" : "s");
    }
    if (out->heavy_shuffle)
        say(out, "%sheavy shuffle: %lld map statuses (threshold %lld)", out->fallback ? "; " : "",
            (long long)shape->shuffle_statuses, (long long)rules->shuffle_threshold);

    int64_t row = (int64_t)llround((double)def->row_per_task * rules->heap_ratio);
    int64_t native = def->native_per_task;
    if (native >= 0 && out->fallback)
        native = (int64_t)llround((double)native *
                                  (no_native ? 1.0 / rules->heap_ratio : rules->offheap_ratio));
    /* The executor keeps its memory: a bigger share per task means fewer tasks. */
    int64_t slots = def->task_slots;
    if (row > 0 && def->row_pool / row < slots)
        slots = def->row_pool / row;
    if (native > 0 && def->offheap_memory > 0 && def->offheap_memory / native < slots)
        slots = def->offheap_memory / native;
    char a[32], b[32];
    em_profile_format_bytes(row, a, sizeof a);
    em_profile_format_bytes(def->row_pool, b, sizeof b);
    if (slots < 1) {
        say(out,
            "; kept the default profile: one task of the adjusted shape needs %s of row memory "
            "and the executor's row pool holds %s (raise spark.executor.memory or "
            "spark.executor.cores)",
            a, b);
        return;
    }
    out->adjusted = true;
    out->profile.task_slots = (int)slots;
    out->profile.row_per_task = row;
    out->profile.native_per_task = native;
    char c[32], d[32], e[32];
    em_profile_format_bytes(def->row_per_task, c, sizeof c);
    em_profile_format_bytes(def->native_per_task, d, sizeof d);
    em_profile_format_bytes(native, e, sizeof e);
    say(out, "; row memory per task %s -> %s (x%g), native %s -> %s, %lld task%s at once instead of %d",
        c, a, rules->heap_ratio, d, e, (long long)slots, slots == 1 ? "" : "s", def->task_slots);
}
