/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local runtime: runs a parsed physical plan on this machine.
 *
 * The plan is cut into stages at every Exchange and BroadcastExchange, as
 * Spark's DAG scheduler cuts it at shuffle dependencies: a shuffle stage
 * runs its exchange's child and partitions the rows
 * (hashpartitioning with Spark's Murmur3 and pmod, rangepartitioning by
 * sampled bounds over the output, SinglePartition, RoundRobinPartitioning);
 * a broadcast stage collects its child's whole output once; the result stage
 * runs the root. A ReusedExchange reads the stage of the exchange it names,
 * computed once. Every scalar subquery is a little plan of its own with its
 * own stages; it runs once, before the stages whose expressions use it, and
 * its value is served to them through the expression compiler's subquery
 * provider.
 *
 * Each stage runs one task per partition on a pool of threads (as many as
 * the cores by default). A task builds its operator tree with em_op_build,
 * gets its own memory pool (a child of the query's pool, which carries the
 * budget), and reads its inputs through em_exec_ctx's callbacks: its scan
 * splits, its partition of each shuffle, each broadcast relation. Shuffle
 * and broadcast data live in memory. When the query's memory nears its
 * budget, a shuffle's map task writes the rows it holds to spill files (a
 * folder of the query under spill_dir, removed when the query is
 * destroyed), and the reduce task reading such a partition reads them back
 * into its own pool, in the order written, so the partition holds the same
 * rows in the same order as without spilling. A range shuffle keeps a
 * bounded sample of its keys in memory and its rows (keys appended) in
 * memory or files; after its map tasks the bounds come from the samples and
 * the rows are dealt, files read back a batch at a time. A broadcast (every
 * task reads all of it) does not spill: over budget it fails with
 * EM_ERR_OOM_BUDGET naming the exchange, as Spark fails a broadcast that
 * outgrows its limits.
 *
 * Broadcasts: objects derived from a broadcast relation (the hash table of
 * a BroadcastHashJoin) are built once per query by the first task asking
 * (ctx->broadcast_shared) in a pool under the query's, shared read-only by
 * every task, and freed with the relation after its last reader.
 *
 * The accelerator task semaphore (concurrent_native_tasks) bounds the tasks
 * holding the native side at once: a task takes it where data enters native
 * execution (ctx->native_enter: scans, RowToColumnar) and gives it back where
 * data leaves (native_leave: ColumnarToRow, after a shuffle's map side) and
 * at task end, failed or cancelled. Waiters are served oldest task first
 * (stage start order, then partition). Wait and hold times per stage are in
 * em_stage_info.
 *
 * Stage-level resource profiles (profile.h), when the options carry a
 * default profile: each stage's profile is derived when it starts, from
 * its shape (the operators and transitions of its task tree under the
 * options' engine decisions, and the mappers x reducers of the shuffles it
 * reads, whose map tasks have run by then). At most task_slots of its
 * tasks run at once; each task's native pool (ctx->pool) has the budget
 * native_per_task and its row pool (ctx->row_pool) row_per_task; a task
 * reading a shuffle charges its map statuses (mappers x reducers x
 * EM_PROFILE_MAP_STATUS_BYTES, once per shuffle) to its row pool. A task
 * over either budget fails with EM_ERR_OOM_BUDGET naming the operator and
 * the pool ("stage S task T row pool"), followed by the stage's profile.
 * Without a profile the pools are unbounded and the tasks as many at once
 * as threads.
 *
 * The first failing task cancels the others; the query then fails with that
 * task's error, prefixed with its stage and partition. Nothing here is
 * global: several queries may run in one process, each with its own threads.
 */
#ifndef EM_RUNTIME_H
#define EM_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/ops.h"
#include "ember/plan.h"
#include "ember/profile.h"
#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds one task's operator tree for a stage root (em_op_build's shape);
 * build_ctx is em_runtime_options.build_ctx (the overrides' exec plan when
 * the tree mixes native and row operators). */
typedef em_status (*em_op_build_fn)(void *build_ctx, const em_plan_node *node, em_op **out,
                                    em_error *err);

typedef struct em_runtime_options {
    const char *warehouse_dir;   /* scans' tables are DIR/<table>; NULL: paths as printed */
    int threads;                 /* <= 0: the number of online cores */
    int64_t memory_budget;       /* bytes for the whole query; < 0: unlimited */
    int ansi;                    /* -1: the plan's Spark line's default; 0 off; 1 on */
    const char *time_zone;       /* session time zone; NULL: UTC */
    int64_t max_partition_bytes; /* scan split target
                                    (spark.sql.files.maxPartitionBytes); 0: 128 MiB */
    int64_t open_cost_bytes;     /* spark.sql.files.openCostInBytes; 0: 4 MiB */
    bool empty_table_folders;    /* a table folder without data files reads as an empty
                                    table (spark.ember.sql.emptyTableFolders); false: an
                                    error naming it */
    const char *spill_dir;       /* where shuffle spill folders go; NULL: $TMPDIR or /tmp */
    int concurrent_native_tasks; /* tasks holding the native side at once
                                    (spark.ember.sql.concurrentNativeTasks); <= 0:
                                    unlimited */
    bool runtime_filters;        /* scans drop rows by broadcasts' keys
                                    (spark.ember.sql.runtimeFilter.enabled) */
    bool prepass_filters;        /* and by the keys of a small scan pipeline run first
                                    (em_runtime_filter.prepass), running it twice: off
                                    for a LORE dump, which both runs would write */
    em_op_build_fn build;        /* NULL: em_op_build, every node native */
    void *build_ctx;             /* passed to build */
    /* Stage-level resource profiles (see above); copied at em_query_create.
     * profile NULL: none. profile_rules NULL: every stage keeps profile. */
    const em_resource_profile *profile;
    const em_profile_rules *profile_rules;
    em_profile_engine_fn engine; /* the engines build decides (for the stages'
                                    shapes); NULL: every node native */
    void *engine_ctx;            /* passed to engine */
    /* The result streamed instead of collected: called with every batch of
     * the result in order (the result stage's partitions in turn), on the
     * task's thread, one call at a time; b is borrowed for the call. A
     * partition that finishes before the ones ahead of it is held until
     * their turn. Its error fails the query. em_query_result is then empty.
     * NULL: collected. */
    em_status (*result_sink)(void *sink_ctx, const em_batch *b, em_error *err);
    void *result_sink_ctx;
} em_runtime_options;

/* Defaults: no warehouse, cores, unlimited, ANSI from the shim, UTC, 128 MiB, 4
 * MiB. */
void em_runtime_options_init(em_runtime_options *o);

typedef enum em_stage_kind {
    EM_STAGE_SHUFFLE,   /* an Exchange's map side */
    EM_STAGE_BROADCAST, /* a BroadcastExchange's child, collected */
    EM_STAGE_GATHER,    /* the root's child gathered into one partition for a root
                           that needs    all rows at once (TakeOrderedAndProject,
                           CollectLimit) */
    EM_STAGE_SUBQUERY,  /* the root of a scalar subquery's plan */
    EM_STAGE_RESULT,    /* the plan's root */
} em_stage_kind;

const char *em_stage_kind_name(em_stage_kind k);

typedef struct em_stage_info {
    int index; /* in dependency order: inputs before the stages reading them */
    em_stage_kind kind;
    const em_plan_node *node; /* the exchange, or the (subquery) root */
    int n_out_partitions;     /* shuffles: the reduce partitions; others 1 */
    const char *partitioning; /* "hashpartitioning", "rangepartitioning",
                                 "SinglePartition", "RoundRobinPartitioning",
                                 "broadcast", "collect" */
    int n_tasks;              /* known after em_query_run or em_query_plan_tasks (scans'
                                 splits); else -1 */
    int n_deps;
    const int *deps;  /* indices of the stages it reads (exchanges, subqueries) */
    int n_reused;     /* ReusedExchange nodes reading this stage's output */
    int64_t rows_out; /* after the run */
    int64_t time_ns;  /* wall time of the stage */
    /* The task semaphore, summed over the stage's tasks: time spent waiting
     * for it and holding it, and the most holders (of any stage) seen when
     * one of its tasks took it. */
    int64_t native_wait_ns, native_hold_ns;
    int native_max_holders;
    /* Broadcasts: objects built once from the relation and shared by the
     * tasks reading it (ctx->broadcast_shared: the hash joins' tables), and
     * how many times tasks used one. */
    int shared_builds, shared_uses;
    /* Shuffles: map output written to spill files (bytes on disk, files). */
    int64_t spill_bytes;
    int spill_files;
    /* Resource profiles (when the options carry one): the stage's shape and
     * profile, as derived when it started, or before the run from what is
     * known then; shuffle reads whose mappers are not known yet (scans not
     * planned: see em_query_plan_tasks) count 0 statuses and are counted in
     * shuffle_unknown. After the run: the most tasks of the stage that ran
     * at once, and the largest peak of a task's native and row pools (and
     * which task had it). */
    bool profiled;
    em_stage_shape shape;
    em_stage_profile profile;
    int shuffle_unknown;
    int max_running;
    int64_t peak_native, peak_row;
    int peak_native_task, peak_row_task;
} em_stage_info;

typedef struct em_node_metrics {
    const em_plan_node *node;
    const char *op_name; /* the operator that ran it */
    int tasks;           /* tasks that ran an operator for this node */
    em_op_metrics m;     /* summed over tasks; peak_bytes is the largest task's */
} em_node_metrics;

typedef struct em_query em_query;

/* Cuts the plan into stages (nothing is read or run yet). The plan must
 * outlive the query. Errors: EM_ERR_UNSUPPORTED for a partitioning Ember does
 * not know, EM_ERR_BIND for a ReusedExchange whose target is missing. */
em_status em_query_create(const em_plan *plan, const em_runtime_options *opts, em_query **out,
                          em_error *err) EM_MUST_CHECK;
/* Resolves the scans' files and so every stage's task count, without
 * running anything (em_query_run does it too): for em_query_stage_info's
 * task counts and shuffle mappers before the run. Errors: em_scan_files'. */
em_status em_query_plan_tasks(em_query *q, em_error *err) EM_MUST_CHECK;
/* Resolves the scans' files, runs every stage and keeps the result. Once. */
em_status em_query_run(em_query *q, em_error *err) EM_MUST_CHECK;
/* Asks a running query to stop (tasks end with EM_ERR_CANCELLED). Safe from
 * another thread or a signal handler. */
void em_query_cancel(em_query *q);
void em_query_destroy(em_query *q); /* NULL allowed */

/* The result: the root's output attributes as a schema, and its rows in
 * order (the partitions of the result stage concatenated in order). */
const em_schema *em_query_schema(const em_query *q);
const em_batch_list *em_query_result(const em_query *q);
/* After a run that failed on the memory budget: the BroadcastExchange whose
 * relation, or the hash tables built from it, did not fit (the failing
 * stage's own, or the largest it read); NULL otherwise. em_plan_unbroadcast
 * plans its joins as shuffles for another run. */
const em_plan_node *em_query_oom_broadcast(const em_query *q);

int em_query_n_stages(const em_query *q);
void em_query_stage_info(const em_query *q, int i, em_stage_info *out);
/* The runtime filters the query applies (em_plan_runtime_filters' that can
 * run: their scan's stage waits for their broadcast), from em_query_create. */
int em_query_n_runtime_filters(const em_query *q);
const em_runtime_filter *em_query_runtime_filter_at(const em_query *q, int i);
/* Per plan node that ran (its operators summed over tasks), after the run, by operator id. */
int em_query_n_metrics(const em_query *q);
const em_node_metrics *em_query_metrics_at(const em_query *q, int i);
/* Peak bytes of the query's pool (all tasks, shuffles and broadcasts). */
int64_t em_query_peak_bytes(const em_query *q);
int em_query_threads(const em_query *q);

/* ------------------------------------------------------------------ scans */

/*
 * The Parquet files a Scan node reads: its Location resolved against
 * warehouse_dir. A normalized Location (".../{warehouse_dir}/<table>]") names
 * DIR/<table>; a real path names DIR/<last path component> when that exists,
 * else the path itself (a "file:" prefix dropped). A folder contributes its
 * files and those of its subfolders (Hive partition folders `name=value`), as
 * Spark lists them: every file whose name does not start with '_' or '.' (nor
 * ends in ._COPYING_) is data, whatever its suffix; sorted by path. *paths is
 * a malloc'ed array of malloc'ed strings (free with em_scan_files_free).
 * Errors: EM_ERR_IO naming the folder when it is missing (an empty folder is an
 * empty table: no files, no scan partitions); EM_ERR_INVALID naming a FIFO,
 * socket or device in it (refused without being opened).
 */
em_status em_scan_files(const em_plan_node *scan, const char *warehouse_dir, char ***paths,
                        int *n_paths, em_error *err) EM_MUST_CHECK;
void em_scan_files_free(char **paths, int n_paths);

/*
 * Column types from the data, for em_plan_parse_options.column_type.
 *
 * Scans (only when `scans` is set: the CLI's --retype): the type the scan's
 * first file holds for the column (matched by name, ignoring case), so a
 * plan printed for one schema runs on files of another.
 *
 * Partition columns of a scan (always: the output columns ReadSchema lacks,
 * whose types Spark never prints): Spark's inference from the values of
 * their `name=value` folders (int, bigint, double, date, else string).
 *
 * LocalTableScan (always): Spark never prints these types, and an empty
 * local relation (what the optimizer folds a query that cannot match to)
 * still needs them for its parent's result types. A column is typed when
 * exactly one table folder of the warehouse has a column of that name (its
 * first file's type); otherwise the plan's (unknown) type is kept.
 *
 * The context caches opened footers and what it decided per scan node;
 * create it with the warehouse folder, and use one context per plan parse
 * (entries are keyed by that plan's scan nodes).
 */
typedef struct em_retype_ctx em_retype_ctx;
em_status em_retype_ctx_create(const char *warehouse_dir, bool scans, em_retype_ctx **out,
                               em_error *err) EM_MUST_CHECK;
void em_retype_ctx_destroy(em_retype_ctx *ctx); /* NULL allowed */
bool em_retype_column_type(void *ctx, const em_plan_node *leaf, const char *column, em_type *type);
/* The first error met while looking up types (a missing folder, a corrupt
 * footer), or NULL: lookups that fail keep the plan's types, and the scan
 * then reports the problem when it runs. */
const char *em_retype_ctx_error(const em_retype_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
