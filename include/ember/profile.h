/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage-level resource profiles: how much native (off-heap) and row (heap)
 * memory each task of a stage may use, and how many tasks run at once.
 *
 * The default profile comes from Spark's executor keys as Spark's unified
 * memory manager splits them: the row pool is (spark.executor.memory - 300
 * MiB reserved) x 0.6 (spark.memory.fraction), the native pool is
 * spark.memory.offHeap.size (0: unbounded), and the task slots are
 * spark.executor.cores / spark.task.cpus; each task gets its pool's share.
 *
 * Auto-adjust (spark.ember.autoAdjustStageResource.*, Gluten's keys as
 * aliases) derives a stage's profile from the default one when the stage
 * falls back (a transition between engines inside it, a share of fallback
 * nodes above the threshold, or no native node at all) or reads a heavy
 * shuffle (the sum of mappers x reducers over its shuffle reads at or above
 * the threshold: those map statuses are row memory). Such a stage gets row
 * memory x heap ratio per task; native memory x off-heap ratio per task, or,
 * with no native node at all, the native share divided by the heap ratio as
 * well (nothing native runs there). Locally the executor's memory is fixed,
 * so a bigger task share means fewer tasks at once, as Spark's stage-level
 * scheduling launches executors of another shape: when not even one task of
 * the new shape fits, the stage keeps the default profile and says why.
 */
#ifndef EM_PROFILE_H
#define EM_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/conf.h"
#include "ember/overrides.h"
#include "ember/plan.h"
#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EM_PROFILE_RESERVED_BYTES (300LL << 20) /* Spark's reserved system memory */
#define EM_PROFILE_MEMORY_FRACTION 0.6          /* spark.memory.fraction's default */
/* Bytes of row memory one map status entry (one mapper x one reducer) costs a
 * shuffle reader: CompressedMapStatus keeps one byte per reducer block size. */
#define EM_PROFILE_MAP_STATUS_BYTES 1

typedef struct em_resource_profile {
    int64_t executor_memory; /* heap bytes (spark.executor.memory) */
    int64_t offheap_memory;  /* native bytes (spark.memory.offHeap.size); 0: unbounded */
    int64_t row_pool;        /* (executor_memory - reserved) x fraction */
    int executor_cores;
    int task_cpus;
    int task_slots;               /* tasks at once */
    int64_t row_per_task;         /* row pool budget of one task */
    int64_t native_per_task;      /* native pool budget of one task; -1: unbounded */
} em_resource_profile;

/* The default profile from conf (NULL: Spark's defaults, 1g heap, no
 * off-heap, 1 core). Errors (EM_ERR_INVALID naming the key): executor memory
 * below 1.5 x the reserved 300 MiB (Spark refuses it too), fewer cores than
 * spark.task.cpus. */
em_status em_profile_default(const em_conf *conf, em_resource_profile *out,
                             em_error *err) EM_MUST_CHECK;

typedef struct em_profile_rules {
    bool enabled;
    double heap_ratio;         /* default 2.0 */
    double offheap_ratio;      /* default 0.5 */
    double fallen_threshold;   /* default 0.5: share of fallback nodes */
    int64_t shuffle_threshold; /* default 10,000,000 map statuses */
} em_profile_rules;

em_status em_profile_rules_from_conf(const em_conf *conf, em_profile_rules *out,
                                     em_error *err) EM_MUST_CHECK;

/* Both, and whether a run enforces them: only when one of Spark's executor
 * keys above is set or auto-adjust is on, so that a run that says nothing
 * about executors keeps unbounded task pools. */
em_status em_profile_from_conf(const em_conf *conf, bool *enforced, em_resource_profile *def,
                               em_profile_rules *rules, em_error *err) EM_MUST_CHECK;

/* What the auto-adjust rules look at in one stage. */
typedef struct em_stage_shape {
    int n_native;              /* operators on the native engine */
    int n_fallback;            /* operators on the row engine */
    int n_transitions;         /* RowToColumnar / ColumnarToRow inside the stage */
    int64_t shuffle_statuses;  /* sum of mappers x reducers over its shuffle reads */
} em_stage_shape;

typedef struct em_stage_profile {
    em_resource_profile profile; /* the stage's; the default when not adjusted */
    bool fallback;      /* the stage counts as falling back */
    bool heavy_shuffle; /* its shuffle reads reach the threshold */
    bool adjusted;      /* profile differs from the default */
    char reason[320];   /* why it was adjusted, why it could not be, or "" */
} em_stage_profile;

/* The engine a node of a stage runs on, as the task builder decides it
 * (em_exec_build's decisions); EM_ENGINE_PASS for a node it skips. */
typedef em_engine (*em_profile_engine_fn)(void *ctx, const em_plan_node *node);

/* The overrides' engine for a node (ctx: the em_exec_plan em_exec_build
 * reads): a node the exec plan does not know (the runtime's synthetic
 * gather root) is native, as em_exec_build builds it. */
em_engine em_profile_exec_engine(void *exec_plan, const em_plan_node *node);

/* Counts the operators and transitions of one stage's task tree, walked as
 * the task builder walks it from the stage's root: nodes engine calls PASS
 * (Spark's wrappers, as the overrides decide them) are skipped; a root Exchange is counted and its child
 * is the map side (no transition between them: the runtime stores what the
 * map side produces); an Exchange, BroadcastExchange or ReusedExchange
 * below the root is another stage's output read here: not counted as an
 * operator, but a transition when its engine differs from its reader's. A
 * transition is counted wherever a child's engine differs from its
 * parent's. engine NULL: every node native, wrappers included. shape's
 * shuffle_statuses is left 0 (the runtime knows the mappers). */
void em_profile_stage_nodes(const em_plan_node *root, em_profile_engine_fn engine, void *ctx,
                            em_stage_shape *shape);

/* Applies the rules to one stage. Never fails: a shape the executor cannot
 * hold keeps the default and says so in reason. */
void em_profile_for_stage(const em_resource_profile *def, const em_profile_rules *rules,
                          const em_stage_shape *shape, em_stage_profile *out);

/* "1.5 GiB", "512.0 MiB", "unbounded" (for < 0): for explain and metrics. */
void em_profile_format_bytes(int64_t bytes, char *buf, int cap);

#ifdef __cplusplus
}
#endif
#endif
