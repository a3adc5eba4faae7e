/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Native columnar operators: the pull interface every operator implements,
 * the task context they run in, and the constructors that build an operator
 * from its plan node.
 *
 * Contract (after Velox's Operator and PostgreSQL's executor nodes):
 *   open   prepares state and opens the children; called once.
 *   next   returns EM_OK with a non-empty batch, EM_DONE at the end, or an
 *          error. The batch is owned by the operator and valid until the
 *          next call to next or close; a consumer that needs it longer
 *          copies it (em_batch_append) or shares its buffers.
 *   close  frees everything; idempotent, safe after a failed open, and safe
 *          on an operator that was never opened. Closes the children.
 * Pipeline breakers (hash aggregate, sort, hash-join build) drain their
 * input on the first next, as explicit state machines.
 *
 * Binding: an operator's output is a list of attributes (plan.h em_expr of
 * kind ATTR or ALIAS: name, expression id, type). A parent compiles its
 * expressions against its child's em_op_output, by expression id, so column
 * ordinals never leak between operators.
 *
 * Inputs from other stages (a shuffle's partition, a broadcast relation) and
 * scans' files come from the runtime through em_exec_ctx's callbacks; the
 * operators know nothing of stages, threads or shuffle storage.
 *
 * Memory: every buffer an operator keeps is charged to ctx->pool. A budget
 * failure that cannot be spilled fails the task with EM_ERR_OOM_BUDGET and
 * a message naming the operator (name and plan id).
 */
#ifndef EM_OPS_H
#define EM_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/column.h"
#include "ember/expr.h"
#include "ember/plan.h"
#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct em_op em_op;

/* A materialized relation: batches in order (a shuffle partition, a
 * broadcast build side, a scalar subquery's result). Batches are owned by
 * whoever produced the list and are read-only for operators. */
typedef struct em_batch_list {
    em_batch **batches;
    int64_t n_batches;
    int64_t n_rows;
} em_batch_list;

/* One Parquet file (or row-group range of one) assigned to a scan task. */
typedef struct em_scan_split {
    const char *path;
    int first_row_group; /* inclusive */
    int end_row_group;   /* exclusive; -1 = to the end of the file */
    /* When byte_length > 0, only the row groups (of the range above) whose
     * midpoint lies in [byte_start, byte_start + byte_length): a Spark
     * PartitionedFile, split by bytes as Spark's Parquet reader splits. */
    int64_t byte_start;
    int64_t byte_length;
    /* When row_end > 0, only the file's rows [row_start, row_end) (numbered
     * over its row groups): Ember's runtime cuts a row group larger than a
     * task's share of the scan into such ranges, up to one per thread. */
    int64_t row_start, row_end;
    /* The file's Hive partition columns (a scan's columns ReadSchema lacks):
     * names, and values as Spark casts them to string (NULL for a null;
     * timestamps in UTC with a 'Z'), read back with Spark's cast. */
    int n_partition_values;
    const char *const *partition_names;
    const char *const *partition_values;
} em_scan_split;

/* Work a shared build (em_exec_ctx.broadcast_shared) hands to the threads
 * of the tasks waiting for its object, idle until it is ready: for_each
 * calls fn(arg, i, err) once for each i in [0, n), on the builder's thread
 * and on waiting ones, and returns when every call has returned, with the
 * first failure (items not started by then are skipped). width is how many
 * threads may take part, the builder's included: a hint for how finely to
 * cut the work, not a promise that they will come. */
typedef em_status (*em_par_fn)(void *arg, int64_t item, em_error *err);
typedef struct em_par {
    int width;
    em_status (*for_each)(struct em_par *par, int64_t n, em_par_fn fn, void *arg, em_error *err);
} em_par;

/* par->for_each, or the n calls in turn on this thread when par is NULL. */
em_status em_par_for_each(em_par *par, int64_t n, em_par_fn fn, void *arg,
                          em_error *err) EM_MUST_CHECK;

typedef struct em_exec_ctx em_exec_ctx;

struct em_exec_ctx {
    em_pool *pool;       /* borrowed: the task's native pool */
    int partition;       /* this task's partition of its stage */
    int num_partitions;  /* partitions of its stage */
    em_expr_compile_options expr_opts; /* ANSI, shim, subquery provider */
    volatile int *cancel; /* non-zero: stop with EM_ERR_CANCELLED; may be NULL */
    const char *spill_dir; /* operators' spill files (spark.local.dir); NULL: $TMPDIR */
    /* The task's share of a memory budget it shares with the tasks running
     * beside it (the query's budget over its threads), which operators that
     * shed memory size their tables against; 0: its pools' budgets alone. */
    int64_t memory_share;

    /* The runtime's answers. Each returns EM_OK and fills *out with data that
     * stays valid until the task ends. */
    /* The files (splits) a scan node reads in this task. */
    em_status (*scan_splits)(em_exec_ctx *ctx, const em_plan_node *scan,
                             const em_scan_split **out, int *n_out, em_error *err);
    /* How many partitions the subtree at node has in Spark (its RDD's): the
     * most its scans or shuffle reads in this stage give, 1 with neither.
     * A task past it gets no rows from the subtree: Spark's Union
     * concatenates its children's partitions, so a child fed by a
     * SinglePartition exchange runs once, not in every task. INT_MAX for a
     * NULL node (a transition's: not known). May be NULL (every child runs
     * in every task). */
    int (*subtree_partitions)(em_exec_ctx *ctx, const em_plan_node *node);
    /* The splits come from Spark's own file listing, which applied the scans'
     * PartitionFilters already (the scan then does not evaluate them). */
    bool splits_pruned;
    /* This task's partition of an exchange's output (node is the Exchange,
     * or the Exchange a ReusedExchange points to). A provider offers this
     * or the stream below (the runtime offers only the stream). */
    em_status (*shuffle_input)(em_exec_ctx *ctx, const em_plan_node *exchange,
                               const em_batch_list **out, em_error *err);
    /* The same partition one batch at a time, so a spilled partition is
     * read back a file at a time instead of whole. open makes
     * a cursor, next hands out batches borrowed until its next call
     * (EM_DONE at the end), close frees the cursor (NULL allowed). Shuffle
     * readers prefer these when they are set. */
    em_status (*shuffle_stream_open)(em_exec_ctx *ctx, const em_plan_node *exchange,
                                     void **cursor, em_error *err);
    em_status (*shuffle_stream_next)(em_exec_ctx *ctx, void *cursor, const em_batch **out,
                                     em_error *err);
    void (*shuffle_stream_close)(em_exec_ctx *ctx, void *cursor);
    /* The whole relation of a BroadcastExchange (or the one reused). */
    em_status (*broadcast_input)(em_exec_ctx *ctx, const em_plan_node *exchange,
                                 const em_batch_list **out, em_error *err);
    /* An object derived once per query from a broadcast relation (the hash
     * table every probe task shares): the first caller runs build over the
     * relation, concurrent callers wait for it, all get the same object,
     * read-only once built; free_obj runs after the relation's last reader
     * (at the latest when the query ends), also on a partial object left by
     * a failed build. `what` tells apart objects of one exchange (e.g. the
     * join's key list): equal strings must mean equal objects. A
     * ReusedExchange names the exchange it reuses. A failed build fails
     * every caller with the builder's error; build runs on the first
     * caller's thread and may use its arg (its operator state) only during
     * the call. The object's memory is charged to `pool` (a child of the
     * query's pool); par spreads the build's work over the waiting tasks'
     * threads (NULL: there are none to ask). May be NULL (then each task
     * builds its own). */
    em_status (*broadcast_shared)(em_exec_ctx *ctx, const em_plan_node *exchange,
                                  const char *what,
                                  em_status (*build)(void *arg, const em_batch_list *rel,
                                                     em_pool *pool, em_par *par, void **obj,
                                                     em_error *err),
                                  void (*free_obj)(void *obj), void *arg, void **out,
                                  em_error *err);
    /* The runtime filters of a scan (em_plan_runtime_filters; only those
     * whose broadcast is built before the scan's stage runs): *out points to
     * the returned number of them, valid while the task runs. May be NULL
     * (no filters). */
    int (*runtime_filters)(em_exec_ctx *ctx, const em_plan_node *scan,
                           const em_runtime_filter **out);
    /* The accelerator task semaphore (spark.ember.sql.concurrentNativeTasks):
     * native_enter blocks until this task holds the native side (a no-op while
     * it already holds it); native_leave releases it (a no-op when not held).
     * Called where data enters the native side (scans, RowToColumnar) and
     * leaves it (ColumnarToRow, shuffle write); the runtime also releases at
     * task end. Either may be NULL (no semaphore). */
    em_status (*native_enter)(em_exec_ctx *ctx, em_error *err);
    void (*native_leave)(em_exec_ctx *ctx);
    em_pool *row_pool; /* borrowed: the task's row (heap) pool for row operators;
                          NULL means pool */
    void *runtime; /* the runtime's own state for the callbacks */
};

/* Per-operator metrics, filled as the operator runs. */
typedef struct em_op_metrics {
    int64_t rows_out;
    int64_t batches_out;
    int64_t time_ns;   /* inclusive of children */
    int64_t self_ns;   /* time_ns less its children's: filled by em_op_visit only */
    int64_t peak_bytes; /* the operator's own state */
    int64_t spill_bytes;
} em_op_metrics;

/* Called for each operator of a tree: its plan node (NULL for synthetic
 * operators), its name and its metrics. */
typedef void (*em_op_visit_fn)(void *ctx, const em_plan_node *node, const char *op_name,
                               const em_op_metrics *m);

typedef struct em_op_vtab {
    const char *name; /* "HashAggregate", "BroadcastHashJoin", ... */
    em_status (*open)(em_op *op, em_exec_ctx *ctx, em_error *err);
    em_status (*next)(em_op *op, em_batch **out, em_error *err);
    void (*close)(em_op *op);
    /* Optional: reports operators that are not em_op children (the row
     * operators below a RowToColumnar transition) to fn, as em_op_visit. */
    void (*visit_hidden)(const em_op *op, em_op_visit_fn fn, void *ctx);
} em_op_vtab;

struct em_op {
    const em_op_vtab *vtab;
    const em_plan_node *node;  /* borrowed from the plan; NULL for synthetic operators */
    int n_output;
    const em_expr **output;    /* output attributes; owned (array only) */
    em_schema schema;          /* output schema (names as the attributes print) */
    int n_children;
    em_op **children;          /* owned */
    em_exec_ctx *ctx;          /* borrowed; set by open */
    em_op_metrics metrics;
    void *state;               /* the operator's own state; owned */
};

/*
 * Builds the operator tree for one task of a stage: node and its descendants
 * down to (not including) the stage's inputs. An Exchange or
 * BroadcastExchange below node becomes a source reading from the runtime
 * (ctx->shuffle_input / broadcast_input); the exchange's own map side is a
 * separate stage built from its child by the runtime. ColumnarToRow and
 * InputAdapter become no-ops. Errors: EM_ERR_UNSUPPORTED naming the node
 * (kind and id) that has no native operator yet.
 */
em_status em_op_build(const em_plan_node *node, em_op **out, em_error *err) EM_MUST_CHECK;

em_status em_op_open(em_op *op, em_exec_ctx *ctx, em_error *err) EM_MUST_CHECK;
em_status em_op_next(em_op *op, em_batch **out, em_error *err) EM_MUST_CHECK;
void em_op_close(em_op *op);
/* Calls fn for op and every operator below it (pre-order), hidden ones included. */
void em_op_visit(const em_op *op, em_op_visit_fn fn, void *ctx);
/* Closes (if needed) and frees the operator and its children. NULL allowed. */
void em_op_destroy(em_op *op);

/* True for a BroadcastNestedLoopJoin that outputs build rows after its
 * stream ends (an outer join preserving the build side; LeftSemi, LeftAnti
 * or ExistenceJoin building the left side). It decides them over every
 * task of its stage, and outputs them even when the stream side has no
 * partition at all (as Spark does), so the runtime runs such a stage with at
 * least one task. */
bool em_op_bnlj_keeps_build(const em_plan_node *node);

/* Drains an operator into a list of copied batches (for tests, broadcast
 * building and results). */
em_status em_op_collect(em_op *op, em_pool *pool, em_batch_list *out, em_error *err)
    EM_MUST_CHECK;
void em_batch_list_reset(em_batch_list *l);

#ifdef __cplusplus
}
#endif
#endif
