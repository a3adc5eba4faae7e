/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A runtime filter's key set (em_plan_runtime_filters decides where they
 * apply): the distinct non-null values of one integral or date column of a
 * broadcast relation, built once per query, and the test a scan runs with
 * it to narrow a batch's selection to the rows whose key is in the set.
 */
#ifndef EM_OPS_KEY_FILTER_H
#define EM_OPS_KEY_FILTER_H

#include "ops/internal.h"

typedef struct em_key_set em_key_set;

/* Builds the set of column *(const int *)column_arg of rel (the signature
 * of ctx->broadcast_shared's build). */
em_status em_key_set_build(void *column_arg, const em_batch_list *rel, em_pool *pool, em_par *par,
                           void **out, em_error *err) EM_MUST_CHECK;
void em_key_set_free(void *set); /* NULL allowed */
/* Whether some value of [lo, hi] may be in s (a row group's statistics). */
bool em_key_set_may_overlap(const em_key_set *s, int64_t lo, int64_t hi);

/* Narrows b's selection to the present rows whose column c (the set's type)
 * is non-null and in s; *kept is how many remain. sel_scratch holds at least
 * b->n_rows slots. */
em_status em_key_set_filter(const em_key_set *s, em_batch *b, int c, int32_t *sel_scratch,
                            int64_t *kept, em_error *err) EM_MUST_CHECK;

#endif
