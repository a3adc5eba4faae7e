/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Vectorized expression evaluation with Spark's semantics.
 *
 * An em_expr tree (plan.h) is compiled once against the attributes of an
 * operator's input into an em_expr_prog: a flat array of steps, each working
 * on whole columns. Compilation resolves attribute references by expression
 * id to input ordinals, turns literal text into typed constants (using the
 * literal's inferred type, else the type of the value it meets), and checks
 * that every function and operand type is supported, so evaluation only
 * fails on data (ANSI overflow, invalid casts) or memory.
 *
 * Rows and selection: evaluation honours the batch's selection vector. The
 * result column has the batch's physical row count (in->n_rows) and is
 * aligned with it, so an operator can keep the batch's selection; rows that
 * are not selected hold null. Conditional expressions (AND, OR, CASE WHEN,
 * if, coalesce) evaluate their later operands only on the rows that still
 * need them, as Spark does, so `CASE WHEN b = 0 THEN null ELSE a / b END`
 * never divides by zero, even in ANSI mode.
 *
 * Aggregates: em_agg_fn is one compiled aggregate function (sum, avg, count,
 * min, max, first, last, stddev and variance) in one mode. Its per-group state lives in flat arrays in an
 * em_agg_state, indexed by dense group numbers that the hash aggregate
 * operator assigns; the buffers have Spark's layouts, as the plans print them
 * in "Aggregate Attributes":
 *
 *   sum(decimal(p,s))  [sum decimal(min(38,p+10),s), isEmpty boolean]
 *   sum(int types)     [sum bigint]        sum(float/double) [sum double]
 *   avg(decimal(p,s))  [sum decimal(min(38,p+10),s), count bigint]
 *   avg(other)         [sum double, count bigint]
 *   count(...)         [count bigint]
 *   min(x), max(x)     [min|max of x's type]
 *   first(x[, ign])    [first of x's type, valueSet boolean]
 *   last(x[, ign])     [last of x's type, valueSet boolean]
 *   stddev_*, var_*    [n double, avg double, m2 double] (Welford's update)
 *
 * count(DISTINCT x) is computed by the operator: Spark plans it as grouping
 * by x below (partial_count(distinct x) runs after a merge that made x
 * unique per group), so here it is an ordinary count of non-null values.
 *
 * Ownership: programs, aggregate functions and states are heap objects owned
 * by the caller (free them with the matching _free). A program borrows
 * nothing from the expression tree after compilation except the tree nodes
 * used for error messages and scalar subqueries, which must outlive it
 * (plans are immutable and outlive their operators).
 */
#ifndef EM_EXPR_H
#define EM_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/column.h"
#include "ember/plan.h"
#include "ember/status.h"
#include "ember/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Supplies the value of a scalar subquery: `subquery` is the tree's
 * SCALAR_SUBQUERY node, or a FIELD node over one (a field of a merged
 * subquery's struct). Fills `out` (uninitialized on entry) with a column of
 * exactly one row of type `type` (null allowed), allocated from `pool`.
 * Called at most once per program, on the first evaluation that needs it;
 * the value is then kept by the program.
 */
typedef em_status (*em_scalar_subquery_fn)(void *ctx, const em_expr *subquery, em_type type,
                                           em_pool *pool, em_column *out, em_error *err);

typedef struct em_expr_compile_options {
    bool ansi;             /* spark.sql.ansi.enabled: overflow and bad casts raise errors */
    const em_shim *shim;   /* Spark line for version rules (decimal result types); NULL: 3.4+ */
    const char *time_zone; /* session time zone (an id as em_tz_find reads it); NULL
                              means UTC. Casts between timestamp and date, string or
                              timestamp_ntz, hour/minute/second and timestamp literals
                              follow it; an unknown id fails the compile of an
                              expression that needs it */
    em_scalar_subquery_fn subquery; /* NULL: scalar subqueries fail to compile */
    void *subquery_ctx;
    em_pool *pool; /* borrowed; may be NULL: charged for kept subquery values, and for
                      registers when em_expr_eval is given no pool */
} em_expr_compile_options;

typedef struct em_expr_prog em_expr_prog;

/*
 * Compiles e against the input attributes input_attrs[0..n_input) (ATTR or
 * ALIAS nodes; matched by expression id). opts may be NULL (non-ANSI, UTC).
 * Errors: EM_ERR_BIND naming an attribute missing from the input,
 * EM_ERR_UNSUPPORTED for functions or type combinations not implemented,
 * EM_ERR_TYPE for literal text that does not fit its type, EM_ERR_NOMEM.
 */
em_status em_expr_compile(const em_expr *e, const em_expr *const *input_attrs, int n_input,
                          const em_expr_compile_options *opts, em_expr_prog **out,
                          em_error *err) EM_MUST_CHECK;
void em_expr_prog_destroy(em_expr_prog *prog); /* NULL allowed */
/* The result type of the compiled expression. */
em_type em_expr_prog_type(const em_expr_prog *prog);
/* Number of steps (for tests and EXPLAIN-style output). */
int em_expr_prog_n_steps(const em_expr_prog *prog);
/* The input column the expression merely reads, or -1: a caller that only
 * reads the selected rows' values can use that column instead of a copy. */
int em_expr_prog_input(const em_expr_prog *prog);

/*
 * Evaluates prog over the batch into *out (uninitialized on entry; the caller
 * resets it). out->length == in->n_rows; unselected rows are null. Errors:
 * EM_ERR_OVERFLOW / EM_ERR_INVALID (ANSI mode) naming the expression,
 * EM_ERR_NOMEM. A program is not thread-safe: compile one per task.
 */
em_status em_expr_eval(em_expr_prog *prog, const em_batch *in, em_pool *pool, em_column *out,
                       em_error *err) EM_MUST_CHECK;

/*
 * Evaluates a boolean prog as a filter and narrows the batch's selection to
 * the rows where it is true (null and false drop the row). A top-level AND
 * is applied conjunct by conjunct, each on the rows the previous ones kept.
 */
em_status em_expr_filter(em_expr_prog *prog, em_batch *in, em_error *err) EM_MUST_CHECK;

/* ------------------------------------------------------------------ aggregates */

typedef enum em_agg_kind {
    EM_AGGFN_SUM,
    EM_AGGFN_AVG,
    EM_AGGFN_COUNT,
    EM_AGGFN_MIN,
    EM_AGGFN_MAX,
    EM_AGGFN_FIRST,
    EM_AGGFN_LAST,
    EM_AGGFN_STDDEV_SAMP, /* stddev_samp, stddev, std */
    EM_AGGFN_STDDEV_POP,
    EM_AGGFN_VAR_SAMP, /* var_samp, variance */
    EM_AGGFN_VAR_POP,
} em_agg_kind;

typedef struct em_agg_fn em_agg_fn;
typedef struct em_agg_state em_agg_state;

/*
 * Compiles an aggregate expression (EM_EXPR_AGG: sum, avg, count, min, max,
 * first) against the input attributes. When every attribute its arguments
 * name is in the input (PARTIAL mode always; Complete mode, which prints like
 * FINAL), the arguments are compiled and em_agg_update can fold input rows.
 * Otherwise (PARTIAL_MERGE and FINAL read the partial buffers instead) the
 * argument type comes from the tree's inferred type and only em_agg_merge
 * applies. Errors: EM_ERR_UNSUPPORTED (other functions), EM_ERR_TYPE (the
 * argument type is unknown), argument compilation errors.
 */
em_status em_agg_compile(const em_expr *agg, const em_expr *const *input_attrs, int n_input,
                         const em_expr_compile_options *opts, em_agg_fn **out,
                         em_error *err) EM_MUST_CHECK;
void em_agg_fn_destroy(em_agg_fn *fn); /* NULL allowed */
em_agg_kind em_agg_fn_kind(const em_agg_fn *fn);
/* True when the arguments were compiled, so em_agg_update may be used. */
bool em_agg_fn_has_args(const em_agg_fn *fn);
em_agg_mode em_agg_fn_mode(const em_agg_fn *fn);
int em_agg_n_buffers(const em_agg_fn *fn);
em_type em_agg_buffer_type(const em_agg_fn *fn, int i);
const char *em_agg_buffer_name(const em_agg_fn *fn, int i); /* "sum", "isEmpty", "count" ... */
em_type em_agg_result_type(const em_agg_fn *fn);

/* Per-group state for one aggregate function, in flat arrays of n_groups. */
em_status em_agg_state_create(const em_agg_fn *fn, em_pool *pool, em_agg_state **out,
                              em_error *err) EM_MUST_CHECK;
void em_agg_state_destroy(em_agg_state *st); /* NULL allowed */
int64_t em_agg_state_groups(const em_agg_state *st);
/* Grows to n_groups groups; new groups get Spark's initial buffer values. */
em_status em_agg_state_resize(em_agg_state *st, int64_t n_groups, em_error *err) EM_MUST_CHECK;

/*
 * Update from input rows: evaluates the arguments over the batch and folds
 * the k-th logically present row into group group_ids[k] (k < em_batch_rows).
 * Errors: EM_ERR_OVERFLOW (ANSI sum overflow), argument evaluation errors.
 */
em_status em_agg_update(const em_agg_fn *fn, em_agg_state *st, const int32_t *group_ids,
                        const em_batch *in, em_error *err) EM_MUST_CHECK;
/*
 * Merge: folds buffer columns in->cols[first_col .. first_col + n_buffers)
 * (the partial aggregate's output, one row per partial group) into the
 * groups group_ids[k], k over the batch's logically present rows.
 */
em_status em_agg_merge(const em_agg_fn *fn, em_agg_state *st, const int32_t *group_ids,
                       const em_batch *in, int first_col, em_error *err) EM_MUST_CHECK;
/* Writes the buffers of groups [0, n_groups) as n_buffers fresh columns
 * (outs[i] uninitialized on entry; the caller resets them). */
em_status em_agg_emit_buffers(const em_agg_fn *fn, const em_agg_state *st, em_pool *pool,
                              em_column *outs, em_error *err) EM_MUST_CHECK;
/* Final evaluation (sum overflow -> null, or EM_ERR_OVERFLOW in ANSI; avg's
 * division) of groups [0, n_groups) into a fresh column *out. */
em_status em_agg_finalize(const em_agg_fn *fn, const em_agg_state *st, em_pool *pool,
                          em_column *out, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
