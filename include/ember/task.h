/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tasks: one partition of a plan fragment, run to its output. This is the
 * one way Ember runs a task, whoever schedules it: the local runtime (a
 * stage's tasks on its thread pool), the Spark plugin (one Spark task
 * through JNI), LORE replay and the tests.
 *
 * Two levels:
 *
 *   em_task       the task itself: an operator tree built from a plan node,
 *                 its two memory pools (native and row), its cancel flag,
 *                 and the em_exec_ctx through which its operators ask for
 *                 their inputs (scan splits, shuffle partitions, broadcast
 *                 relations, subquery values). Whoever creates it supplies
 *                 those callbacks: the local runtime answers from its
 *                 stages, a fragment from what its embedder hands over.
 *
 *   em_fragment   the embeddable form (below): a
 *                 structured plan fragment (the JSON the Spark plugin
 *                 writes, src/plan/plan_read.c), whose boundary nodes are
 *                 inputs. A fragment task takes its scan splits (file, byte
 *                 range, partition values) and one Arrow C stream per input,
 *                 and gives its output as an Arrow C stream.
 *
 * Threads: a task runs on the thread that pulls from it (em_task_next, or
 * the output stream's get_next); em_task_cancel may be called from any
 * thread, and the task stops with EM_ERR_CANCELLED at its next check.
 * Nothing here is global: many tasks may run at once in one process.
 */
#ifndef EM_TASK_H
#define EM_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/arrow.h"
#include "ember/conf.h"
#include "ember/ops.h"
#include "ember/plan.h"
#include "ember/runtime.h"
#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ em_task */

typedef struct em_task em_task;

typedef struct em_task_options {
    const char *name;        /* names the task's pools in errors ("stage 2 task 5"); copied */
    em_pool *parent_pool;    /* the pools' parent (the query's, with its budget); may be NULL */
    int64_t native_budget;   /* bytes for the native pool; < 0: unlimited */
    int64_t row_budget;      /* bytes for the row pool; < 0: unlimited */
    em_op_build_fn build;    /* builds the tree; NULL: em_op_build (every node native) */
    void *build_ctx;         /* passed to build */
    const em_plan_node *root; /* the node the task's tree starts from */
    /* The inputs: callbacks, partition, expression options, spill folder and
     * the caller's state (ctx.runtime). The task sets pool, row_pool and
     * (when ctx.cancel is NULL) cancel to its own. Copied. */
    em_exec_ctx ctx;
} em_task_options;

/* Creates the pools and the context; builds nothing yet. Errors:
 * EM_ERR_NOMEM, EM_ERR_INVALID (no root). */
em_status em_task_create(const em_task_options *o, em_task **out, em_error *err) EM_MUST_CHECK;
/* Builds the operator tree and opens it. Once. */
em_status em_task_open(em_task *t, em_error *err) EM_MUST_CHECK;
/* The next output batch (EM_OK; borrowed until the next call or destroy),
 * EM_DONE at the end, or the task's error. */
em_status em_task_next(em_task *t, em_batch **out, em_error *err) EM_MUST_CHECK;
/* Pulls the whole output, copying each batch into pool (em_op_collect). */
em_status em_task_collect(em_task *t, em_pool *pool, em_batch_list *out,
                          em_error *err) EM_MUST_CHECK;
/* Closes the operator tree (its state freed, its metrics kept); the task
 * then only answers em_task_op and em_task_node_metrics. Idempotent. */
void em_task_close(em_task *t);
/* Makes an Arrow C stream of the task's output (opening the task first if
 * needed). The stream borrows the task: release it before em_task_destroy.
 * Each array is exported zero-copy and owns references to its buffers, so it
 * stays valid after the next get_next and after the task is destroyed. */
em_status em_task_output_stream(em_task *t, struct ArrowArrayStream *out,
                                em_error *err) EM_MUST_CHECK;
/* Asks the task to stop; safe from any thread and from signal handlers. */
void em_task_cancel(em_task *t);
/* The context its operators see (its callbacks' first argument). */
em_exec_ctx *em_task_ctx(em_task *t);
/* The built tree (NULL before em_task_open or when building failed): for
 * metrics (em_op_visit) and the output attributes. */
const em_op *em_task_op(const em_task *t);
em_pool *em_task_native_pool(const em_task *t);
em_pool *em_task_row_pool(const em_task *t);
/* Closes the tree, frees it, the pools and the task. NULL allowed. */
void em_task_destroy(em_task *t);

/* ------------------------------------------------------------- em_fragment */

/*
 * A plan fragment for embedders: the task spec JSON the Spark plugin sends
 * to its executors,
 *
 *   {"plan": <structured plan, inputs marked>,
 *    "conf": {"key": "value", ...},           settings (spark.ember.*, Spark's)
 *    "subqueries": [{"exprId": N, "type": "...", "value": v}, ...],
 *    "loreIds": {"<source index>": id, ...}}  optional
 *
 * read once (em_plan_read_json, the overrides with every node native but
 * the inputs) and shared read-only by every task made from it, from any
 * thread.
 */
typedef struct em_fragment em_fragment;

em_status em_fragment_create(const char *json, size_t len, em_fragment **out,
                             em_error *err) EM_MUST_CHECK;
void em_fragment_destroy(em_fragment *f); /* NULL allowed; after its tasks */
const em_plan *em_fragment_plan(const em_fragment *f);
/* Inputs in input_index order: whether input i is a broadcast (read whole
 * by every task) or a stream (this task's partition), and its schema. */
int em_fragment_n_inputs(const em_fragment *f);
bool em_fragment_input_is_broadcast(const em_fragment *f, int i);
/* Scans of the fragment: their source indices (the JSON "id"). */
int em_fragment_n_scans(const em_fragment *f);
int em_fragment_scan_source(const em_fragment *f, int i);

/* One file (or byte range of one) a scan reads in this task: Spark's
 * PartitionedFile. Row groups whose midpoint falls in [start, start +
 * length) are read, as Spark's Parquet reader assigns them; length < 0
 * reads the whole file. The Hive partition columns of the file are named by
 * partition_names, their values are text as Spark's cast to string gives
 * them (NULL for a null; timestamps in UTC with a 'Z' suffix). */
typedef struct em_file_split {
    const char *path;
    int64_t start;
    int64_t length;
    int n_partition_values;
    const char *const *partition_names;
    const char *const *partition_values;
} em_file_split;

/*
 * A broadcast relation held for many tasks (the Spark plugin keeps one per
 * broadcast per executor): its batches, and the objects tasks derive from
 * it once (a hash join's table), shared read-only by every task given it,
 * from any thread. Destroy it after the last task that uses it.
 */
typedef struct em_relation em_relation;
/* Drains stream (moved in; released here) into a new relation. */
em_status em_relation_create(struct ArrowArrayStream *stream, em_relation **out,
                             em_error *err) EM_MUST_CHECK;
/* A relation of n shuffle blocks (include/ember/chunk.h: what an Ember
 * broadcast exchange collects), copied in. */
em_status em_relation_from_blocks(const uint8_t *const *blocks, const int64_t *lens, int n,
                                  em_relation **out, em_error *err) EM_MUST_CHECK;
int64_t em_relation_rows(const em_relation *r);
/* Bytes its batches and derived objects hold. */
int64_t em_relation_bytes(const em_relation *r);
void em_relation_destroy(em_relation *r); /* NULL allowed */

typedef struct em_fragment_task_inputs {
    int partition;      /* this task's partition */
    int num_partitions; /* of its stage */
    /* scan i (em_fragment_scan_source order): its files */
    const int *n_splits;
    const em_file_split *const *splits;
    /* input i: a stream of Arrow struct arrays, moved into the task (its
     * release set to NULL); the task releases it when destroyed. A
     * broadcast input may instead be given as relations[i] (borrowed; then
     * streams[i] may be NULL). relations may be NULL. */
    struct ArrowArrayStream *const *streams;
    em_relation *const *relations;
    const char *spill_dir;   /* spill files; NULL: $TMPDIR or /tmp */
    int64_t native_budget;   /* < 0: unlimited */
} em_fragment_task_inputs;

/* A task of the fragment; the fragment must outlive it. Errors: EM_ERR_INVALID
 * for inputs that do not match the fragment, EM_ERR_NOMEM. */
em_status em_fragment_task_create(const em_fragment *f, const em_fragment_task_inputs *in,
                                  em_task **out, em_error *err) EM_MUST_CHECK;

/*
 * The map side of a shuffle: a fragment whose root is an exchange (a hash or
 * single-partition ShuffleExchangeExec Ember runs, or a broadcast exchange,
 * whose output is one partition) gives its tasks' output
 * partitioned as the exchange says, in blocks (include/ember/chunk.h) for
 * the host's shuffle writer. Each call appends records [int32 partition]
 * [int32 rows][int32 length][block] to out, at least one, until out holds about
 * `target` bytes; EM_DONE when the task's output is exhausted and every
 * block was given (out unchanged). Rows are kept per partition until a
 * partition holds a batch's worth (or all kept rows reach a bound), so blocks
 * are few and full.
 */
bool em_fragment_is_map(const em_fragment *f);
int em_fragment_map_partitions(const em_fragment *f);
em_status em_task_map_next(em_task *t, em_strbuf *out, int64_t target,
                           em_error *err) EM_MUST_CHECK;
/* A task's reduce partitions when it is an exchange's map side, else 0. */
int em_task_map_partitions(const em_task *t);
/* The bytes of the rows the map task has given so far as Spark's UnsafeRows
 * would hold them: the data size Spark's exchange reports (AQE compares it
 * with its broadcast and partition size thresholds), not the blocks'. */
int64_t em_task_map_row_bytes(const em_task *t);
/* The map task run to its end, its records written to a new file at path
 * with each reduce partition's records contiguous and the partitions in
 * order (Spark's shuffle data file): lengths[p] (one per partition) gets
 * partition p's bytes, *rows the rows written. On error the file is removed. */
em_status em_task_map_write(em_task *t, const char *path, int64_t *lengths, int64_t *rows,
                            em_error *err) EM_MUST_CHECK;

/* Per plan node of a finished or failed task, its operators' metrics summed:
 * calls fn(ctx, node, op_name, metrics) once per node that ran. */
void em_task_node_metrics(const em_task *t, em_op_visit_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
