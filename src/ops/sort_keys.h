/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark's ordering of rows by a list of sort keys (SortOrder: ASC/DESC,
 * NULLS FIRST/LAST), shared by Sort, TakeOrderedAndProject, Window and the
 * sort-merge join.
 *
 * Per type, as Spark's PhysicalDataType orderings compare values: integers,
 * dates and timestamps numerically; float/double with NaN greater than every
 * other value and -0.0 equal to 0.0 (SQLOrderingUtil.compareDoubles);
 * decimals by value (keys of one column share a scale); strings and binary
 * byte-wise unsigned, a prefix before its extensions; false before true.
 * Nulls sort first or last as each key says, independently of ASC/DESC.
 */
#ifndef EM_OPS_SORT_KEYS_H
#define EM_OPS_SORT_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/column.h"
#include "ember/expr.h"

typedef struct em_sort_key {
    const em_column *col; /* borrowed */
    bool ascending;
    bool nulls_first;
} em_sort_key;

/* Compares row i of the columns in a with row j of the columns in b (same
 * types and orders; n keys): < 0, 0 or > 0 in the sort order. */
int em_sort_compare(const em_sort_key *a, int64_t i, const em_sort_key *b, int64_t j, int n);

/* Sorts the row numbers idx[0..n) by the keys (stable: equal rows keep their
 * order in idx). Scratch is charged to pool. */
em_status em_sort_indices(const em_sort_key *keys, int n_keys, int32_t *idx, int64_t n,
                          em_pool *pool, em_error *err) EM_MUST_CHECK;

/* SortOrder expressions compiled against an operator's input: attributes
 * are read in place, other expressions evaluated per bound batch. */
typedef struct em_sort_spec {
    int n;
    em_sort_key *keys;    /* keys[i].col set by em_sort_spec_bind */
    int *pass;            /* input ordinal, or -1 when computed */
    em_expr_prog **progs; /* computed keys */
    em_column *tmp;       /* their columns for the bound batch */
} em_sort_spec;

/* orders: SORT_ORDER expressions (n). Errors name the unsupported key. */
em_status em_sort_spec_init(em_sort_spec *sp, const em_expr *const *orders, int n,
                            const em_expr *const *attrs, int n_attrs,
                            const em_expr_compile_options *opts, em_error *err) EM_MUST_CHECK;
/* Points the keys at batch b's rows (physical row numbers). */
em_status em_sort_spec_bind(em_sort_spec *sp, const em_batch *b, em_pool *pool,
                            em_error *err) EM_MUST_CHECK;
void em_sort_spec_reset(em_sort_spec *sp);

#endif
