/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Window expressions as both Window engines (native and rows) read them:
 * `f(...) windowspecdefinition(partition..., order..., frame) AS name`.
 *
 * Functions: row_number, rank, dense_rank, percent_rank, cume_dist,
 * ntile(k) (a positive literal), lag/lead(input, offset, default
 * [, ignoreNulls]) (offset a literal; its sign is dropped, as some lines
 * print the frame's signed offset), nth_value(input, n[, ignoreNulls]), and
 * aggregates. Frames: RowFrame or RangeFrame with bounds unbounded, current
 * row or an integer literal offset (negative: preceding); RangeFrame
 * offsets need one numeric or date order key. Without a frame, Spark's
 * defaults: RangeFrame unbounded preceding .. current row with an ORDER BY,
 * the whole partition without one.
 */
#ifndef EM_OPS_WINDOW_SPEC_H
#define EM_OPS_WINDOW_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/expr.h"

typedef enum em_win_kind {
    EM_WIN_ROW_NUMBER,
    EM_WIN_RANK,
    EM_WIN_DENSE_RANK,
    EM_WIN_PERCENT_RANK,
    EM_WIN_CUME_DIST,
    EM_WIN_NTILE,
    EM_WIN_LAG,
    EM_WIN_LEAD,
    EM_WIN_NTH_VALUE,
    EM_WIN_AGG,
} em_win_kind;

typedef enum em_win_bound { EM_WIN_UNBOUNDED, EM_WIN_CURRENT, EM_WIN_OFFSET } em_win_bound;

typedef struct em_win_desc {
    em_win_kind kind;
    bool rows;              /* RowFrame (else RangeFrame) */
    em_win_bound lo, hi;    /* the frame's bounds */
    int64_t lo_off, hi_off; /* their offsets (negative: preceding) */
    int64_t n;              /* ntile buckets; lag/lead offset; nth_value's n */
    bool ignore_nulls;      /* lag/lead/nth_value IGNORE NULLS */
    const em_expr *fn;      /* the function (the AGG node for aggregates) */
    const em_expr *input;   /* lag/lead/nth_value's input */
    const em_expr *dflt;    /* lag/lead's default; NULL when absent or a bare null */
    em_expr dflt_cast;      /* see em_win_default_as */
    em_expr *dflt_cast_arg[1];
} em_win_desc;

/* Reads one window expression (an ALIAS of a WINDOW). has_order: the
 * window has an ORDER BY; order_type: its one order key's type (the NULL
 * type with none or several). Errors: EM_ERR_UNSUPPORTED naming the
 * expression. */
em_status em_win_describe(const em_expr *alias, bool has_order, em_type order_type,
                          em_win_desc *out, em_error *err) EM_MUST_CHECK;

/* lag/lead's default as an expression of the input's type t: Spark casts
 * it so but prints a literal by its value only (0.5 for a decimal(7,2)
 * input), so a default of another inferred type is wrapped in a cast (held
 * in d, which must stay in place while the result is used). NULL when there
 * is no default. */
const em_expr *em_win_default_as(em_win_desc *d, em_type t);

/* EM_ERR_UNSUPPORTED: "<what> in window expression <e as printed>". */
em_status em_win_unsupported(const em_expr *e, const char *what, em_error *err);

/* row_number, rank, dense_rank: their kind; false for anything else. */
bool em_win_rank_like(const em_expr *fn, em_win_kind *kind);

#endif
