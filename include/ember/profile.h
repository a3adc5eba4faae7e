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
