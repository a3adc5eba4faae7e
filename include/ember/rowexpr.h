/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference row engine's expressions: the expression trees of plan.h
 * evaluated one row at a time by walking the tree, with Spark's semantics.
 *
 * This evaluator is the oracle the vectorized engine (expr.h) is checked
 * against, so it shares no evaluation code with it: it is written from
 * Spark's definitions for obvious correctness, not speed. It covers every
 * expression and aggregate the plan model knows (at least everything
 * em_expr_compile accepts), with the same options (ANSI, shim rules, time
 * zone, scalar subqueries through the same provider).
 *
 * Binding resolves attribute references to input ordinals by expression id
 * and checks types once; evaluation then only fails on data (ANSI overflow,
 * invalid casts, division by zero in ANSI) or memory. String results live in
 * the arena passed to the evaluation (or borrow the input row's or the
 * plan's bytes); the arena may be NULL only for expressions that make no new
 * strings (EM_ERR_INVALID otherwise).
 *
 * Beyond the vectorized set it evaluates functions the plan model knows
 * (greatest, least, hash, dayofweek, weekday, weekofyear, last_day,
 * add_months, make_date, hour, minute, second, ascii, octet_length,
 * bit_length, initcap, instr, locate, lpad, rpad, repeat, replace, reverse,
 * translate, concat_ws, cbrt, log, bround, positive, shiftrightunsigned) and
 * casts the vectorized engine lacks (timestamp to double, string to
 * timestamp as stringToTimestamp reads it in UTC), so an overrides
 * layer can fall back to it: binding is the support test (EM_ERR_UNSUPPORTED
 * names what is missing: RLIKE, struct and collection functions, regular
 * expressions, date_format, ...).
 *
 * Aggregates keep Spark's buffer layouts (see expr.h) as datums, so a row
 * aggregate's partial output merges into a native final aggregate and back.
 */
#ifndef EM_ROWEXPR_H
#define EM_ROWEXPR_H

#include <stdbool.h>

#include "ember/datum.h"
#include "ember/expr.h"
#include "ember/plan.h"
#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct em_rexpr em_rexpr;

/* Binds e against input_attrs (ATTR/ALIAS nodes, matched by id). Errors as
 * em_expr_compile: EM_ERR_BIND, EM_ERR_UNSUPPORTED (naming the function: an
 * expression the row engine does not know either), EM_ERR_TYPE. The tree
 * must outlive the bound expression (messages, literals' bytes, subquery
 * nodes), as plans outlive their operators. */
em_status em_rexpr_bind(const em_expr *e, const em_expr *const *input_attrs, int n_input,
                        const em_expr_compile_options *opts, em_rexpr **out,
                        em_error *err) EM_MUST_CHECK;
void em_rexpr_destroy(em_rexpr *x); /* NULL allowed */
em_type em_rexpr_type(const em_rexpr *x);
/* Evaluates over one input row (datums in input_attrs order). Not
 * thread-safe (it keeps the subquery value and scratch): bind one per task. */
em_status em_rexpr_eval(em_rexpr *x, const em_datum *row, em_row_arena *arena, em_datum *out,
                        em_error *err) EM_MUST_CHECK;
/* A predicate: *keep is true only when the value is true (null drops). */
em_status em_rexpr_test(em_rexpr *x, const em_datum *row, em_row_arena *arena, bool *keep,
                        em_error *err) EM_MUST_CHECK;

/* ------------------------------------------------------------------ aggregates */

typedef struct em_ragg em_ragg;

/* Binds an EM_EXPR_AGG node (any function em_agg_compile accepts) in its
 * printed mode. As with em_agg_compile, the arguments are bound only when
 * the input holds them (partial/complete); merge reads buffers instead. */
em_status em_ragg_bind(const em_expr *agg, const em_expr *const *input_attrs, int n_input,
                       const em_expr_compile_options *opts, em_ragg **out,
                       em_error *err) EM_MUST_CHECK;
void em_ragg_destroy(em_ragg *a); /* NULL allowed */
int em_ragg_n_buffers(const em_ragg *a);
em_type em_ragg_buffer_type(const em_ragg *a, int i);
em_type em_ragg_result_type(const em_ragg *a);
bool em_ragg_has_args(const em_ragg *a);
/* Spark's initial buffer values into buf[0 .. n_buffers). */
void em_ragg_init(const em_ragg *a, em_datum *buf);
/* Folds one input row; strings kept in buf (min, max, first, last) are
 * copied to arena each time the kept value changes, so the arena grows with
 * the changes, not with the rows. */
em_status em_ragg_update(em_ragg *a, em_datum *buf, const em_datum *row, em_row_arena *arena,
                         em_error *err) EM_MUST_CHECK;
/* Folds another buffer (a partial aggregate's output columns) into buf. */
em_status em_ragg_merge(em_ragg *a, em_datum *buf, const em_datum *other, em_row_arena *arena,
                        em_error *err) EM_MUST_CHECK;
/* The final value (avg's division, decimal sum overflow -> null or ANSI error). */
em_status em_ragg_eval(em_ragg *a, const em_datum *buf, em_row_arena *arena, em_datum *out,
                       em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
