/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private pieces of the runtime: the thread pool that runs a stage's tasks,
 * the scan split planner, the shuffle partitioner, the task semaphore, the
 * per-query cache of objects built from broadcasts, and shuffle spill files.
 */
#ifndef EM_RUNTIME_INTERNAL_H
#define EM_RUNTIME_INTERNAL_H

#include <pthread.h>

#include "ember/runtime.h"
#include "ember/task.h"

/* ------------------------------------------------------------ thread pool */

/* A fixed set of worker threads that run jobs of n independent tasks:
 * fn(arg, i) for i in [0, n), each index exactly once, in any order. Several
 * jobs may be under way at once (independent stages); workers serve them in
 * submission order. */
typedef struct rt_threads rt_threads;
typedef struct rt_job {
    void (*fn)(void *arg, int i);
    void *arg;
    int n;
    /* private to the pool */
    int next, finished;
    struct rt_job *link;
} rt_job;
em_status em_rt_threads_create(int n_threads, rt_threads **out, em_error *err) EM_MUST_CHECK;
/* Starts a job (n > 0); the job must stay valid until em_rt_threads_wait returns it. */
void em_rt_threads_submit(rt_threads *t, rt_job *job);
/* Waits for any submitted job to finish and returns it (NULL when none is under way). */
rt_job *em_rt_threads_wait(rt_threads *t);
/* Runs one job to completion (submit, then wait for it). */
void em_rt_threads_run(rt_threads *t, void (*fn)(void *arg, int i), void *arg, int n);
void em_rt_threads_destroy(rt_threads *t); /* joins; NULL allowed */

/* ------------------------------------------------------------ scan splits */

/* The splits of one task: row-group ranges of one or more files. */
typedef struct rt_scan_part {
    int n_splits;
    em_scan_split *splits; /* paths borrowed from the rt_scan_plan */
} rt_scan_part;

/* A file's Hive partition values, from its `name=value` folders. */
typedef struct rt_file_parts {
    int n;
    char **names;
    char **values; /* NULL for __HIVE_DEFAULT_PARTITION__ */
} rt_file_parts;

typedef struct rt_scan_plan {
    int n_files;
    char **files;
    rt_file_parts *file_parts; /* per file */
    int n_parts;
    rt_scan_part *parts;
    int64_t total_bytes; /* as Spark weighs them: with a file open cost each */
} rt_scan_plan;

/* Resolves the scan's files and packs their row groups into partitions of
 * about max(open_cost, min(max_partition, total / threads)) bytes, as Spark's
 * FilePartition does (files in name order), except that with cut_row_groups
 * a row group larger than that is cut into row ranges, up to one per thread. */
em_status em_rt_scan_plan_make(const em_plan_node *scan, const char *warehouse_dir, int threads,
                            int64_t max_partition_bytes, int64_t open_cost_bytes,
                            bool cut_row_groups, rt_scan_plan *out, em_error *err) EM_MUST_CHECK;
void em_rt_scan_plan_reset(rt_scan_plan *p);

/* ------------------------------------------------------------ partitioning */

typedef enum rt_part_kind {
    RT_PART_HASH,
    RT_PART_RANGE,
    RT_PART_SINGLE,
    RT_PART_ROUND_ROBIN,
} rt_part_kind;

typedef struct rt_partitioning {
    rt_part_kind kind;
    int n; /* output partitions */
    int n_keys;
    const em_expr *const *keys; /* hash: key expressions; range: SORT_ORDER exprs (borrowed) */
} rt_partitioning;

/* Reads an Exchange's partitioning from its Arguments. */
em_status em_rt_partitioning_parse(const em_plan_node *exchange, rt_partitioning *out,
                                em_error *err) EM_MUST_CHECK;
const char *em_rt_part_kind_name(rt_part_kind k);

/* Row-to-partition assignment for a map task. Compiled per task against the
 * map side's output attributes. */
typedef struct rt_partitioner rt_partitioner;
em_status em_rt_partitioner_create(const rt_partitioning *p, const em_expr *const *attrs, int n_attrs,
                                const em_expr_compile_options *opts, int task, rt_partitioner **out,
                                em_error *err) EM_MUST_CHECK;
void em_rt_partitioner_free(rt_partitioner *pt);
/* Writes em_batch_rows(b) partition ids (hash, single, round robin). */
em_status em_rt_partitioner_ids(rt_partitioner *pt, const em_batch *b, int32_t *ids,
                             em_error *err) EM_MUST_CHECK;
/* Evaluates the range keys of b into fresh columns (n_keys of them, each of
 * b->n_rows physical rows). */
em_status em_rt_partitioner_range_keys(rt_partitioner *pt, const em_batch *b, em_pool *pool,
                                    em_column *keys, em_error *err) EM_MUST_CHECK;

/* Range partitioning over all map outputs at once: the key columns of every
 * batch (keys[b][k], its present rows given by sel[b] / n[b]). Fills ids
 * (one per present row, batches in order) so that every key of partition i
 * sorts before every key of partition i + 1 and equal keys share a
 * partition: bounds are the keys at the 1/n quantiles of the sorted keys. */
typedef struct rt_range_input {
    int64_t n_batches;
    em_column **keys;    /* [batch][key] */
    const int32_t **sel; /* [batch]: present rows (NULL: 0..n-1) */
    const int64_t *n;    /* [batch]: present rows */
} rt_range_input;
em_status em_rt_range_assign(const rt_partitioning *p, const rt_range_input *in, int32_t *ids,
                          em_pool *pool, em_error *err) EM_MUST_CHECK;

/* A deterministic sample of one map task's range keys, bounded in size:
 * the rows whose number (in the task's output order) is a multiple of
 * stride, the stride doubling whenever more than 2 * target rows are kept.
 * Set pool and target, zero the rest, before the first add. */
typedef struct rt_range_sampler {
    em_pool *pool;
    int64_t target;
    int n_keys;
    em_column *keys; /* [key]: the kept rows */
    int64_t n_rows, n_kept, stride;
} rt_range_sampler;
/* Offers n more rows (keys: n_keys columns of n rows each, no selection). */
em_status em_rt_range_sampler_add(rt_range_sampler *s, const em_column *keys, int n_keys, int64_t n,
                               em_error *err) EM_MUST_CHECK;
void em_rt_range_sampler_reset(rt_range_sampler *s);

/* Bounds from the samples of every map task: each kept key weighs the rows
 * its sample stands for (n_rows / n_kept); the bounds are the keys at the
 * 1/n quantiles of that weight, equal keys never split. With every row
 * kept, em_rt_range_assign's exact quantiles. */
typedef struct rt_range_sample {
    int64_t n_rows, n_kept;
    const em_column *keys; /* n_keys columns of n_kept rows */
} rt_range_sample;
typedef struct rt_range_bounds rt_range_bounds;
em_status em_rt_range_bounds_make(const rt_partitioning *p, const rt_range_sample *samples, int n,
                               em_pool *pool, rt_range_bounds **out, em_error *err) EM_MUST_CHECK;
/* The partition of each row sel[0..n) (rows 0..n when sel is NULL) of the
 * key columns: the first partition whose greatest sampled key the row's
 * key does not sort after. */
em_status em_rt_range_bounds_ids(const rt_range_bounds *bd, const em_column *keys,
                              const int32_t *sel, int64_t n, int32_t *ids,
                              em_error *err) EM_MUST_CHECK;
void em_rt_range_bounds_free(rt_range_bounds *bd); /* NULL allowed */

/* ------------------------------------------------------------ semaphore */

/* Waits on cv for at most ms milliseconds (waiters that poll a cancel flag
 * em_query_cancel raises without signalling). */
void em_rt_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms);

/* The accelerator task semaphore: at most `limit` holders (<= 0: no limit,
 * holders only counted). Waiters are served by ticket, oldest first. */
typedef struct rt_sem {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int limit;
    int holders;
    int max_holders; /* the most holders seen at once */
    int64_t *waiting; /* tickets of the waiters */
    int n_waiting, cap_waiting;
} rt_sem;
void em_rt_sem_init(rt_sem *s, int limit);
void em_rt_sem_destroy(rt_sem *s);
/* Blocks until the ticket's turn and a free permit; *holders gets the
 * number of holders including this one. EM_ERR_CANCELLED when *cancel is
 * raised while waiting. */
em_status em_rt_sem_acquire(rt_sem *s, int64_t ticket, volatile int *cancel, int *holders,
                         em_error *err) EM_MUST_CHECK;
void em_rt_sem_release(rt_sem *s);
/* Wakes the waiters so that they see a raised cancel flag now. */
void em_rt_sem_wake(rt_sem *s);

/* ------------------------------------------------------------ shared builds */

/* Objects derived once per query from a broadcast relation, keyed by an
 * opaque key (the broadcast's stage) and a `what` string. */
typedef struct rt_shared rt_shared;
typedef em_status (*rt_shared_build_fn)(void *arg, const em_batch_list *rel, em_pool *pool,
                                        em_par *par, void **obj, em_error *err);
/* Objects' memory is charged to pools under parent; width is how many
 * threads may run tasks at once (a builder's helpers, itself included). */
em_status em_rt_shared_create(em_pool *parent, int width, rt_shared **out,
                              em_error *err) EM_MUST_CHECK;
/* The object for (key, what): built by this caller over rel when it is the
 * first (in a pool of its own named after key_name; *built set), else the
 * one built or being built by another caller, waited for. A failed build's
 * error is every caller's error. */
em_status em_rt_shared_get(rt_shared *c, const void *key, const char *key_name, const char *what,
                        const em_batch_list *rel, rt_shared_build_fn build,
                        void (*free_obj)(void *obj), void *arg, volatile int *cancel, void **out,
                        bool *built, em_error *err) EM_MUST_CHECK;
/* Frees the objects of key (no reader may use them any more). */
void em_rt_shared_release(rt_shared *c, const void *key);
/* Objects built so far (failed builds included). */
int64_t em_rt_shared_builds(rt_shared *c);
void em_rt_shared_destroy(rt_shared *c); /* NULL allowed */

/* ------------------------------------------------------------ shuffle spill */

/* A query's spill folder: made under base ($TMPDIR or /tmp when NULL) on
 * the first file, removed with its files by em_rt_spill_dir_destroy. */
typedef struct rt_spill_dir rt_spill_dir;
em_status em_rt_spill_dir_create(const char *base, rt_spill_dir **out, em_error *err) EM_MUST_CHECK;
void em_rt_spill_dir_destroy(rt_spill_dir *d); /* NULL allowed */
/* Writes the (non-empty) list's batches to a new file of the folder; *path
 * (owned by the folder) and *bytes (its size) name it. The writer's small
 * buffers are charged to no pool. Thread-safe. */
em_status em_rt_spill_write(rt_spill_dir *d, const em_batch_list *l, const char **path,
                            int64_t *bytes, em_error *err) EM_MUST_CHECK;
/* Appends copies of the file's batches (allocated in pool) to out, which
 * only this function may have grown. Several readers may read one file. */
/* Appends a compact copy of b (allocated in pool) to out, which only this
 * function may have grown (its array doubles at powers of two). */
em_status em_rt_list_append_copy(em_batch_list *out, const em_batch *b, em_pool *pool,
                              em_error *err) EM_MUST_CHECK;
em_status em_rt_spill_read(const char *path, em_pool *pool, em_batch_list *out,
                        em_error *err) EM_MUST_CHECK;
/* Calls fn with each batch of the file in turn, one at a time (borrowed
 * until fn returns; reader buffers charged to pool). */
em_status em_rt_spill_scan(const char *path, em_pool *pool,
                        em_status (*fn)(void *arg, const em_batch *b, em_error *err), void *arg,
                        em_error *err) EM_MUST_CHECK;

/* ------------------------------------------------------------ map tasks */

/* Whether a map task's input is exhausted: em_task_map_next then gives each
 * partition's remaining rows once, in partition order (map_file.c relies on it). */
bool em_rt_task_map_flushing(const em_task *t);

#endif
