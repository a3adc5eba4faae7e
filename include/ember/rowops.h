/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference row engine's operators, the transitions between engines,
 * and the builder of a task's mixed operator tree.
 *
 * A row operator (em_row_op) pulls one row at a time: next returns EM_OK
 * with a row (n_output datums in output order) valid until the next call or
 * close, EM_DONE at the end, or an error. It has the same open/close
 * contract as em_op (ops.h) and runs in the same em_exec_ctx; its memory is
 * charged to ctx->row_pool (ctx->pool when that is NULL). Row operators are
 * written for obvious correctness, not speed: they are Spark's row-based
 * execution in Ember, the fallback and the oracle. Their metrics count
 * rows, inclusive time and the peak of what they hold; batches_out stays 0
 * (they hand out rows). They do not spill: a blocking row operator over
 * its pool's budget fails with EM_ERR_OOM_BUDGET naming itself.
 *
 * Transitions join the engines: ColumnarToRow (em_row_from_native) turns a
 * native operator's batches into rows and releases the task's native slot
 * (ctx->native_leave) once its input is exhausted; RowToColumnar
 * (em_native_from_row) packs rows into batches of up to EM_BATCH_CAP rows
 * and acquires the slot (ctx->native_enter) before its first batch.
 *
 * em_exec_build builds one task's tree for a stage root from the overrides'
 * decisions (overrides.h): native nodes become em_op, row nodes em_row_op,
 * with transitions exactly where the decisions put them. The stage's root
 * is always returned as an em_op, because the runtime stores shuffle,
 * broadcast and result data as batches: a row root is wrapped in an
 * internal adapter ("RowStageOutput") that is not a transition (it takes
 * no native slot). Native reads of shuffle data go through a
 * CoalesceBatches operator that merges small batches up to EM_BATCH_CAP
 * rows. A RowToColumnar reports the row operators below it through
 * vtab.visit_hidden, also after close (it keeps their metrics).
 */
#ifndef EM_ROWOPS_H
#define EM_ROWOPS_H

#include "ember/datum.h"
#include "ember/ops.h"
#include "ember/overrides.h"
#include "ember/rowexpr.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct em_row_op em_row_op;

typedef struct em_row_op_vtab {
    const char *name; /* "Filter", "HashAggregate", "ColumnarToRow", ... */
    em_status (*open)(em_row_op *op, em_exec_ctx *ctx, em_error *err);
    em_status (*next)(em_row_op *op, const em_datum **row, em_error *err);
    void (*close)(em_row_op *op);
} em_row_op_vtab;

struct em_row_op {
    const em_row_op_vtab *vtab;
    const em_plan_node *node; /* borrowed; NULL for transitions */
    int n_output;
    const em_expr **output;   /* output attributes (owned array) */
    em_type *types;           /* output types (owned) */
    int n_children;
    em_row_op **children;     /* owned */
    em_op *native_child;      /* ColumnarToRow: the native input (owned) */
    em_exec_ctx *ctx;
    em_op_metrics metrics;
    void *state;
    /* next() is timed on a sample of calls (reading the clock on every row
     * cost a fifth of the row engine's time): metrics.time_ns is open's
     * time plus the sampled time scaled to every call. */
    int64_t next_calls, timed_calls, timed_ns, open_ns;
};

/*
 * Builds the row operator for one node over already built children (the
 * node's children in order; stage inputs such as Exchange and
 * BroadcastExchange reads, scans and local tables take none). Every node
 * kind the plan model knows has a row operator. Errors:
 * EM_ERR_UNSUPPORTED naming the node when it cannot run even here.
 */
em_status em_row_op_create(const em_plan_node *node, em_row_op **children, int n_children,
                           em_row_op **out, em_error *err) EM_MUST_CHECK;
em_status em_row_op_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) EM_MUST_CHECK;
em_status em_row_op_next(em_row_op *op, const em_datum **row, em_error *err) EM_MUST_CHECK;
void em_row_op_close(em_row_op *op);
void em_row_op_destroy(em_row_op *op); /* closes; frees children; NULL allowed */
/* As em_op_visit, over row operators and the native ones below transitions. */
void em_row_op_visit(const em_row_op *op, em_op_visit_fn fn, void *ctx);

/* Transitions (each takes ownership of its child). */
em_status em_row_from_native(em_op *child, em_row_op **out, em_error *err) EM_MUST_CHECK;
em_status em_native_from_row(em_row_op *child, em_op **out, em_error *err) EM_MUST_CHECK;

/*
 * One task's tree for a stage root under the decisions of xp (the root is
 * a node of em_exec_plan_source(xp), as the runtime passes it). Same shape
 * as em_op_build (stage inputs read through the context); xp is const and
 * shared by all tasks. Usable as em_runtime_options.build with build_ctx = xp.
 */
em_status em_exec_build(void *xp, const em_plan_node *stage_root, em_op **out,
                        em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
