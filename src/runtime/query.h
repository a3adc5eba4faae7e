/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A query's state and its stages', shared by the runner's files: what a
 * stage is (cut once from the plan: its key node, kind, partitioning,
 * inputs and the root its tasks build, stage_cut.c) and what changes while
 * it runs (its tasks' outputs, spill files, scheduling and resource
 * profile, runtime.c).
 */
#ifndef EM_RUNTIME_QUERY_H
#define EM_RUNTIME_QUERY_H

#include "runtime/internal.h"

typedef struct rt_stage rt_stage;
struct rt_task;

typedef struct rt_spilled {
    int n, cap;
    const char **paths; /* owned by the query's spill folder */
} rt_spilled;

/* A range shuffle's map task until its rows are dealt: its rows with their
 * sort keys appended as trailing columns (so that spilled rows come back
 * with their keys, without the task's expressions), the files it spilled
 * them to, and a sample of its keys for the bounds. */
typedef struct rt_range_task {
    em_batch_list rows;
    rt_spilled files;
    rt_range_sampler sample;
} rt_range_task;

struct rt_stage {
    int index;
    em_stage_kind kind;
    const em_plan_node *node;       /* the key: exchange, subquery root, result root */
    const em_plan_node *build_root; /* what each task builds */
    rt_partitioning part;           /* shuffle stages */
    int n_out;
    int n_deps, cap_deps;
    int *deps;
    int n_reused;
    /* inputs that set the partition count */
    int n_scans;
    const em_plan_node **scans;
    rt_scan_plan *scan_plans;
    int n_shuffle_inputs;
    rt_stage **shuffle_inputs;
    bool bnlj_keeps_build; /* outputs rows without any input: at least one task */
    /* the runtime filters its scans apply: those whose source it reads,
     * grouped by scan (em_rt_plan_runtime_filters) */
    int n_filters;
    em_runtime_filter *filters;
    /* run state */
    int n_tasks;
    em_pool *out_pool;
    em_batch_list *task_out; /* shuffle: [task * n_out + r]; else [task] */
    em_batch_list *parts;    /* per output partition: views of task_out's batches */
    /* range shuffles until their rows are dealt (task_out unused until then) */
    struct rt_range_task *range; /* [task] */
    em_schema range_schema;      /* the rows' columns, without the keys */
    bool dealing;                /* the map tasks are done, the rows being dealt */
    bool done;
    int64_t rows_out;
    int64_t time_ns;
    /* gather support: the synthetic root and exchange the result stage builds */
    em_plan_node *syn_root;
    em_plan_node *syn_exchange;
    em_plan_node *syn_children[1];
    const em_plan_node *alias; /* gather stages: the synthetic exchange reading them */
    /* merged scalar subqueries: the named_struct(name, value, ...) their root
     * Project builds; the stage runs the Project's child, fields are served
     * from its values */
    const em_expr *merged;
    /* scheduling */
    bool started;
    int64_t seq;      /* start order: the tasks' semaphore tickets follow it */
    int readers_left; /* stages still to read this one's output */
    /* semaphore metrics, summed over tasks */
    int64_t native_wait_ns, native_hold_ns;
    int native_max_holders;
    int shared_builds, shared_uses; /* broadcasts: objects built from them, uses */
    /* shuffle spill: files per [task * n_out + r], in write order */
    struct rt_spilled *spilled;
    int64_t spill_bytes, spill_rows;
    int spill_files;
    bool *map_done;       /* [task]: its lists are final (others may spill them) */
    pthread_mutex_t spill_mu; /* one task at a time spills finished tasks' lists */
    int64_t t0;
    rt_job job;
    struct rt_task *base;
    /* resource profile (q->profiled): derived when the stage starts */
    em_stage_shape shape;
    em_stage_profile profile;
    int shuffle_unknown;
    int next_task;          /* profiled stages: the next partition a lane takes */
    int running, max_running;
    int64_t peak_native, peak_row;
    int peak_native_task, peak_row_task;
};

struct em_query {
    const em_plan *plan;
    em_runtime_options opts;
    char *warehouse;
    char *time_zone;
    int threads;
    bool ansi;
    em_op_build_fn build;
    int n_stages, cap_stages;
    rt_stage **stages;
    int n_walking;
    const em_plan_node *walking[64]; /* stages being cut (cycle guard) */
    em_pool *pool;
    rt_threads *workers;
    rt_shared *shared; /* objects built once from broadcasts */
    char *spill_base;
    rt_spill_dir *spill_dir; /* shuffle spill files */
    rt_sem sem;        /* the accelerator task semaphore */
    int64_t next_stage_seq;
    volatile int cancel;
    pthread_mutex_t mu;
    em_status first_status;
    em_error first_err;
    const rt_stage *oom_stage;         /* the first failure was the query's budget, here */
    const em_plan_node *oom_broadcast; /* see em_query_oom_broadcast */
    /* a streamed result (opts.result_sink): the partition whose rows go to
     * the sink now, and which partitions have ended (their rows kept) */
    pthread_mutex_t sink_mu;
    pthread_cond_t sink_turn; /* sink_next moved on */
    int sink_next;
    bool *sink_ended;
    em_schema schema;
    em_batch_list result;
    int max_id;
    em_node_metrics *metrics; /* by node id */
    int n_metrics_listed;
    em_node_metrics *metrics_list;
    bool ran;
    bool planned; /* scans resolved (em_query_plan_tasks or the run) */
    bool profiled; /* stage-level resource profiles enforced */
    em_resource_profile profile;
    em_profile_rules rules;
    /* runtime filters whose broadcast runs before their scan's stage,
     * grouped by scan (em_rt_plan_runtime_filters) */
    int n_filters;
    em_runtime_filter *filters;
};

/* One task of a stage: the query, its stage and partition, and what it
 * holds of the task semaphore and of the map statuses it read. */
typedef struct rt_task {
    em_query *q;
    rt_stage *st;
    int p;
    /* the task semaphore */
    bool holding;
    int64_t hold_t0, wait_ns, hold_ns;
    int max_holders;
    /* profiled: the shuffles whose map statuses this task charged to its row pool */
    int n_status_reads;
    const rt_stage **status_reads;
    int64_t status_bytes;
} rt_task;

/* A node's name as Spark printed it. */
const char *em_rt_node_name(const em_plan_node *n);
/* The transitions and AQE wrappers a stage looks through. */
bool em_rt_is_wrapper(const em_plan_node *n);
const em_plan_node *em_rt_skip_wrappers(const em_plan_node *n);
/* The stage cut for key (an exchange, a subquery root, the result root; a
 * ReusedExchange finds its exchange's), or NULL. */
rt_stage *em_rt_find_stage(const em_query *q, const em_plan_node *key);
/* Cuts the stage of key and every stage it reads, appending each after its
 * inputs to q->stages. */
em_status em_rt_cut_stage(em_query *q, const em_plan_node *key, em_stage_kind kind,
                          rt_stage **out, em_error *err) EM_MUST_CHECK;
void em_rt_stage_free(rt_stage *st);
/* After cutting: the plan's runtime filters (em_plan_runtime_filters) that
 * can run, each making its scan's stage wait for its broadcast's (dropped
 * when that would make a cycle or a stage is not found). */
em_status em_rt_plan_runtime_filters(em_query *q, em_error *err) EM_MUST_CHECK;

int64_t em_rt_now_ns(void); /* monotonic */
/* Sets the callbacks a task's operators call (task_context.c); ctx->runtime
 * must be the task's rt_task. */
void em_rt_task_callbacks(em_exec_ctx *ctx, em_query *q);
/* The task semaphore around native work (a task waiting on something else,
 * such as its turn to stream a result, leaves it). */
em_status em_rt_native_enter(em_exec_ctx *ctx, em_error *err) EM_MUST_CHECK;
void em_rt_native_leave(em_exec_ctx *ctx);

#endif
