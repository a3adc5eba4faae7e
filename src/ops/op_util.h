/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers shared by the native operators of this folder: batches that
 * share another batch's column buffers under the operator's own schema
 * ("shells"), gathering rows by index into fresh batches, attribute lookup
 * by expression id, and reading the plain values printed in Arguments.
 *
 * A shell is how an operator passes data through without copying: it holds
 * one reference on each of the source's buffers and a copy of its selection,
 * so a parent may narrow the selection (Filter) or a source may hand out
 * batches owned by the runtime (shuffle reads) without touching them.
 */
#ifndef EM_OPS_OP_UTIL_H
#define EM_OPS_OP_UTIL_H

#include "ops/internal.h"

/* A batch of `schema` with zero rows and no buffers, to be filled by sharing.
 */
em_status em_opu_shell_create(const em_schema *schema, em_pool *pool, em_batch **out,
                           em_error *err) EM_MUST_CHECK;
/* Makes shell hold src's columns (cols[i] = src->cols[map ? map[i] : i],
 * shared), row count and selection. */
em_status em_opu_shell_share(em_batch *shell, const em_batch *src, const int *map,
                          em_error *err) EM_MUST_CHECK;
/* Drops the shell's column references (keeps its schema). */
void em_opu_shell_release(em_batch *shell);
/* Sets the shell's selection to sel[0..n) (copied); NULL = no selection. */
em_status em_opu_set_sel(em_batch *b, const int32_t *sel, int64_t n, em_error *err) EM_MUST_CHECK;

/* Ordinal of the attribute with expression id `id` in attrs, or -1. */
int em_opu_attr_index(const em_expr *const *attrs, int n, int64_t id);
/* The id of an ATTR/ALIAS, or -1 for other kinds. */
static inline int64_t opu_expr_id(const em_expr *e) {
    return (e->kind == EM_EXPR_ATTR || e->kind == EM_EXPR_ALIAS) ? e->id : -1;
}
/* When e is a plain reference to one of attrs (an ATTR, or an ALIAS of one),
 * its ordinal; else -1. Such expressions are passed through by sharing. */
int em_opu_passthrough_index(const em_expr *e, const em_expr *const *attrs, int n);

/* A fresh batch of `schema` holding rows idx[0..n) of src's columns
 * (physical row numbers; src's selection is not consulted). */
em_status em_opu_gather(const em_schema *schema, const em_column *cols, const int32_t *idx, int64_t n,
                     em_pool *pool, em_batch **out, em_error *err) EM_MUST_CHECK;

/* A list of output expressions over an input: attributes (and aliases of
 * them) shared, `null` literals made all-null columns of the output type,
 * anything else compiled and evaluated. Used by Project, Expand,
 * TakeOrderedAndProject and HashAggregate's Results. */
typedef struct opu_proj {
    int n;
    int *pass;            /* input ordinal; -1 computed; -2 null literal */
    em_expr_prog **progs; /* computed expressions */
} opu_proj;

em_status em_opu_proj_init(opu_proj *p, const em_expr *const *exprs, int n,
                        const em_expr *const *attrs, int n_attrs,
                        const em_expr_compile_options *opts, em_error *err) EM_MUST_CHECK;
/* Fills shell (schema = the outputs) with the outputs over in: same row
 * count and selection as in. */
em_status em_opu_proj_eval(const opu_proj *p, const em_batch *in, em_batch *shell, em_pool *pool,
                        em_error *err) EM_MUST_CHECK;
void em_opu_proj_reset(opu_proj *p);
/* A column of n nulls of type t. */
em_status em_opu_null_column(em_column *c, em_type t, int64_t n, em_pool *pool,
                          em_error *err) EM_MUST_CHECK;

/* For operators whose output is their input (Filter, limits): when the node
 * derived no output attributes, take child's. Destroys op on failure. */
/* The plan node an operator computes: its own, or through transitions
 * (which have none) the node of the subtree they convert; NULL if none. */
const em_plan_node *em_opu_source_node(const em_op *op);

/* Whether the subtree at node has no partition for this task (see
 * em_exec_ctx.subtree_partitions): a Union then skips that child. */
static inline bool opu_past_subtree(em_exec_ctx *ctx, const em_plan_node *node) {
    return ctx->subtree_partitions && ctx->partition >= ctx->subtree_partitions(ctx, node);
}

em_status em_opu_inherit_output(em_op **op, const em_op *child, em_error *err) EM_MUST_CHECK;

/* The next chunk of a materialized result: replaces *chunk with a fresh
 * batch of rows [*next, *next + k) of cols, k = min(EM_BATCH_CAP, total -
 * *next), and advances *next. EM_DONE when no rows are left. */
em_status em_opu_next_range(const em_schema *schema, const em_column *cols, int64_t total,
                         int64_t *next, em_pool *pool, em_batch **chunk,
                         em_error *err) EM_MUST_CHECK;

/* The peak memory reported by op's descendants (their own state). */
static inline int64_t opu_subtree_peak(const em_op *op) {
    int64_t t = 0;
    for (int i = 0; i < op->n_children; i++)
        t += op->children[i]->metrics.peak_bytes + opu_subtree_peak(op->children[i]);
    return t;
}
/* Records in op's metrics the task pool's growth since `base`, less what
 * its descendants report holding (a hash join's table built during this
 * operator's drain), when it is a new peak: what a pipeline breaker holds
 * after draining its input. */
static inline void opu_note_peak(em_op *op, int64_t base) {
    int64_t used = op->ctx && op->ctx->pool ? em_pool_used(op->ctx->pool) - base : 0;
    used -= opu_subtree_peak(op);
    if (used > op->metrics.peak_bytes)
        op->metrics.peak_bytes = used;
}
static inline int64_t opu_pool_used(const em_op *op) {
    return op->ctx && op->ctx->pool ? em_pool_used(op->ctx->pool) : 0;
}

/* The node's Arguments field items (NULL/0 when absent). */
const em_expr *const *em_opu_arguments(const em_plan_node *node, int *n);
/* Parses a non-negative integer literal argument (e.g. a limit). */
em_status em_opu_int_arg(const em_plan_node *node, const em_expr *e, const char *what, int64_t *out,
                      em_error *err) EM_MUST_CHECK;
/* A limit operator's Arguments: the limit at limit_at and, when present, the
 * offset at offset_at (< 0: none). Spark 3.4+ plans OFFSET without LIMIT as
 * limit -1, which reads as "no limit": INT64_MAX - offset, so that offset +
 * limit (the rows to pull) cannot overflow. */
em_status em_opu_limit_args(const em_plan_node *node, const em_expr *const *args, int n,
                         int limit_at, int offset_at, int64_t *limit, int64_t *offset,
                         em_error *err) EM_MUST_CHECK;

#endif
