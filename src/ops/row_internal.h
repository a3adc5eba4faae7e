/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the reference row engine's operators (row_*.c): the
 * shared lifecycle helpers, a store of materialized rows for the blocking
 * operators, the constructors of each operator family, and the tree builder
 * that em_exec_build and the tests share.
 *
 * A constructor takes ownership of its children (also on failure) and
 * returns an operator whose output attributes are the node's; types are
 * the attributes' until open, which may refine them from what the bound
 * expressions really produce.
 */
#ifndef EM_OPS_ROW_INTERNAL_H
#define EM_OPS_ROW_INTERNAL_H

#include "ember/rowops.h"
#include "ops/internal.h"

/* ------------------------------------------------------------ lifecycle */

em_status em_rop_init(const em_row_op_vtab *vtab, const em_plan_node *node, em_row_op **children,
                   int n_children, size_t state_size, em_row_op **out, em_error *err) EM_MUST_CHECK;
/* Replaces the output attributes (types from the attributes). */
em_status em_rop_set_output(em_row_op *op, const em_expr *const *attrs, int n,
                         em_error *err) EM_MUST_CHECK;
/* Takes child's attributes and types when the node derived none. Destroys
 * *op on failure. */
em_status em_rop_inherit_output(em_row_op **op, const em_row_op *child, em_error *err) EM_MUST_CHECK;
/* Prefixes err with "Name (id)". */
em_status em_rop_fail(const em_row_op *op, em_error *err);
/* Closes the children (for operators' close). */
void em_rop_close_children(em_row_op *op);
/* The pool row state is charged to. */
static inline em_pool *rop_pool(const em_row_op *op) {
    return op->ctx ? (op->ctx->row_pool ? op->ctx->row_pool : op->ctx->pool) : NULL;
}
static inline const em_expr *const *rop_child_attrs(const em_row_op *op, int i) {
    return op->children[i]->output;
}
static inline void rop_note_peak(em_row_op *op, int64_t bytes) {
    if (bytes > op->metrics.peak_bytes)
        op->metrics.peak_bytes = bytes;
}
/* Pulls every row of child 0 into add(op, arg, row). Errors of the child
 * are returned as they are, those of add prefixed with op's name. */
em_status em_rop_drain(em_row_op *op,
                    em_status (*add)(em_row_op *op, void *arg, const em_datum *row, em_error *err),
                    void *arg, em_error *err) EM_MUST_CHECK;
/* The body of an ALIAS (the expression itself otherwise). */
static inline const em_expr *rop_unalias(const em_expr *e) {
    return e->kind == EM_EXPR_ALIAS && e->n_args == 1 ? e->args[0] : e;
}
/* Binds the expressions (aliases looked through) against child 0's output;
 * *out is a calloc'ed array of n (freed with em_rop_free_exprs). Sets
 * types[i] (when types is not NULL) to each expression's type. */
em_status em_rop_bind_list(em_row_op *op, const em_expr *const *exprs, int n, em_rexpr ***out,
                        em_type *types, em_error *err) EM_MUST_CHECK;
void em_rop_free_exprs(em_rexpr **xs, int n);
/* The node's Arguments items (NULL/0 when absent). */
const em_expr *const *em_rop_arguments(const em_plan_node *node, int *n);

/* A list of expressions evaluated over one input row into out[]. */
typedef struct rop_proj {
    int n;
    em_rexpr **xs;
    em_datum *out;
} rop_proj;
/* Binds exprs against child 0; types[i] (types may be NULL) takes each
 * expression's type unless it is the NULL type (a bare `null`). */
em_status em_rop_proj_init(rop_proj *p, em_row_op *op, const em_expr *const *exprs, int n,
                        em_type *types, em_error *err) EM_MUST_CHECK;
/* Evaluates every expression over `in` into p->out (strings in arena). */
em_status em_rop_proj_eval(rop_proj *p, const em_datum *in, em_row_arena *arena,
                        em_error *err) EM_MUST_CHECK;
void em_rop_proj_reset(rop_proj *p);

/* ------------------------------------------------------------ materialized rows */

/* Rows of n_cols datums copied (strings into the store's arena), charged
 * to a pool. Row i is rs_row(s, i), stable until the next em_rs_add. */
typedef struct row_store {
    int n_cols;
    const em_type *types; /* borrowed */
    em_datum *data;
    int64_t n_rows, cap;
    em_row_arena arena;
    em_pool *pool;
    int64_t charged;
} row_store;

void em_rs_init(row_store *s, int n_cols, const em_type *types, em_pool *pool);
/* Appends a deep copy of row (n_cols datums); returns the stored row in *at
 * (NULL allowed). */
em_status em_rs_add(row_store *s, const em_datum *row, em_datum **at, em_error *err) EM_MUST_CHECK;
static inline em_datum *rs_row(const row_store *s, int64_t i) {
    return s->data + i * s->n_cols;
}
static inline int64_t rs_bytes(const row_store *s) { return s->charged + s->arena.bytes; }
void em_rs_reset(row_store *s);

/* Spark's ordering of two values of a sort key (nulls placed by nulls_first,
 * independently of the direction). */
int em_rop_compare_key(const em_datum *a, const em_datum *b, em_type t, bool ascending,
                    bool nulls_first);
/* Stable sort of idx[0..n) by cmp (a merge sort; scratch from malloc). */
em_status em_rop_sort_indices(int64_t *idx, int64_t n,
                           int (*cmp)(const void *ctx, int64_t a, int64_t b), const void *ctx,
                           em_error *err) EM_MUST_CHECK;

/* Sort keys bound against an input: evaluated per row into key datums. */
typedef struct rop_sort_spec {
    int n;
    em_rexpr **keys;
    em_type *types;
    bool *ascending, *nulls_first;
} rop_sort_spec;
/* orders: SORT_ORDER expressions, or bare expressions (ASC NULLS FIRST). */
em_status em_rop_sort_spec_init(rop_sort_spec *sp, em_row_op *op, const em_expr *const *orders, int n,
                             em_error *err) EM_MUST_CHECK;
void em_rop_sort_spec_reset(rop_sort_spec *sp);

/* Rows stored with their evaluated sort keys ([row..., keys...]), sorted
 * stably by the keys (Sort, TakeOrderedAndProject, Window). */
typedef struct sorted_rows {
    rop_sort_spec spec;
    int n_in; /* input columns before the keys */
    em_type *types;
    row_store rows;
    int64_t *idx;
    int64_t n_idx;
    em_datum *tmp; /* one row being stored */
    em_row_arena scratch;
} sorted_rows;
/* orders against child 0 of op (SORT_ORDER or bare: ASC NULLS FIRST). */
em_status em_sr_init(sorted_rows *s, em_row_op *op, const em_expr *const *orders, int n,
                  em_error *err) EM_MUST_CHECK;
em_status em_sr_add(sorted_rows *s, const em_datum *row, em_error *err) EM_MUST_CHECK;
/* Stores every row of op's child 0, then sorts (errors as em_rop_drain). */
em_status em_sr_drain(em_row_op *op, sorted_rows *s, em_error *err) EM_MUST_CHECK;
/* Sets s->idx[0 .. s->n_idx) to the stored rows in key order. */
em_status em_sr_sort(sorted_rows *s, em_error *err) EM_MUST_CHECK;
/* Compares stored rows a and b on keys [from, to). */
int em_sr_compare_range(const sorted_rows *s, int64_t a, int64_t b, int from, int to);
void em_sr_reset(sorted_rows *s);

/* ------------------------------------------------------------ constructors */

/* Scan, LocalTableScan, Exchange/BroadcastExchange/ReusedExchange reads:
 * sources over the native readers of the same data, handing out rows. */
em_status em_rop_source_create(const em_plan_node *node, em_row_op **out, em_error *err) EM_MUST_CHECK;
em_status em_rop_filter_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                            em_error *err) EM_MUST_CHECK;
em_status em_rop_project_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                             em_error *err) EM_MUST_CHECK;
/* Nodes that pass their child's rows (Coalesce, Subquery, AQE stages). */
em_status em_rop_pass_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                          em_error *err) EM_MUST_CHECK;
em_status em_rop_limit_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                           em_error *err) EM_MUST_CHECK;
em_status em_rop_union_create(const em_plan_node *node, em_row_op **children, int n,
                           em_row_op **out, em_error *err) EM_MUST_CHECK;
em_status em_rop_expand_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                            em_error *err) EM_MUST_CHECK;
em_status em_rop_agg_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                         em_error *err) EM_MUST_CHECK;
em_status em_rop_sort_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                          em_error *err) EM_MUST_CHECK;
em_status em_rop_top_n_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                           em_error *err) EM_MUST_CHECK;
em_status em_rop_window_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                            em_error *err) EM_MUST_CHECK;
em_status em_rop_join_create(const em_plan_node *node, em_row_op *left, em_row_op *right,
                          em_row_op **out, em_error *err) EM_MUST_CHECK;

/* Rows out of a native operator's batches (ColumnarToRow and the row
 * sources over native readers): row[i] borrows from the current batch. */
typedef struct rop_batch_cursor {
    em_op *src; /* borrowed */
    em_batch *b;
    int64_t pos;
    em_datum *row;
    int n;
    bool done;
} rop_batch_cursor;
em_status em_rbc_open(rop_batch_cursor *c, em_op *src, em_exec_ctx *ctx, em_error *err) EM_MUST_CHECK;
em_status em_rbc_next(rop_batch_cursor *c, const em_datum **row, em_error *err) EM_MUST_CHECK;
void em_rbc_close(rop_batch_cursor *c);
/* Sets op's output to src's attributes with src's column types. */
em_status em_rbc_types(em_row_op *op, const em_op *src, em_error *err) EM_MUST_CHECK;

/* The native CoalesceBatches operator over child (ownership taken). */
em_status em_op_coalesce_batches_create(em_op *child, em_op **out, em_error *err) EM_MUST_CHECK;
/* The stage root adapter: rows to batches, not a transition (no native slot). */
em_status em_rop_root_adapter(em_row_op *child, em_op **out, em_error *err) EM_MUST_CHECK;
/* em_opu_source_node for row operators: a ColumnarToRow gives its native input's. */
const em_plan_node *em_rop_source_node(const em_row_op *op);

/* ------------------------------------------------------------ tree builder */

/* Which engine runs a node (NATIVE, ROW or PASS). */
typedef em_engine (*rop_decide_fn)(void *arg, const em_plan_node *node);

/* One task's tree for stage_root, engines chosen by decide (see
 * em_exec_build). */
em_status em_rop_build_tree(const em_plan_node *stage_root, rop_decide_fn decide, void *arg,
                         em_op **out, em_error *err) EM_MUST_CHECK;
/* The same, wrapping the LORE-selected native operators' inputs and outputs
 * in dump operators where include/ember/lore.h says (lore NULL: none). */
struct em_lore_session;
em_status em_rop_build_tree_lore(const em_plan_node *stage_root, rop_decide_fn decide, void *arg,
                              struct em_lore_session *lore, em_op **out,
                              em_error *err) EM_MUST_CHECK;

#endif
