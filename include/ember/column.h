/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Column vectors, batches and selection vectors in the Arrow layout.
 *
 * A column is a typed run of `length` values in up to three buffers:
 *   validity  Arrow bitmap, bit i set = row i is valid; NULL = no nulls
 *   values    fixed-width values, the boolean bitmap, or (strings) int32
 *             offsets with length + 1 entries, offsets[0] == 0
 *   data      string/binary bytes; NULL for other types
 * A column holds one reference on each buffer (see memory.h), so columns
 * and exported Arrow arrays can share them.
 *
 * A batch is a schema-shaped set of columns of one row count, at most
 * EM_BATCH_CAP rows when produced by operators (readers may be asked for
 * other sizes). A batch may carry a selection vector: the rows that are
 * logically present, ascending, as int32 indices into the columns.
 */
#ifndef EM_COLUMN_H
#define EM_COLUMN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ember/memory.h"
#include "ember/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef EM_BATCH_CAP
#define EM_BATCH_CAP 2048
#endif

typedef struct em_column {
    em_type type;
    int64_t length;
    int64_t null_count;  /* -1 when not yet counted */
    em_buffer *validity; /* owned reference; NULL when every row is valid */
    em_buffer *values;   /* owned reference; NULL only for the NULL type */
    em_buffer *data;     /* owned reference; strings and binary only */
} em_column;

static inline bool em_bit_get(const uint8_t *bits, int64_t i) {
    return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void em_bit_set(uint8_t *bits, int64_t i) {
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}
static inline void em_bit_clear(uint8_t *bits, int64_t i) {
    bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}
static inline void em_bit_put(uint8_t *bits, int64_t i, bool v) {
    if (v)
        em_bit_set(bits, i);
    else
        em_bit_clear(bits, i);
}
static inline int64_t em_bitmap_bytes(int64_t n) { return (n + 7) / 8; }

static inline bool em_column_is_valid(const em_column *c, int64_t i) {
    return c->validity == NULL || em_bit_get(c->validity->data, i);
}
static inline const int32_t *em_column_offsets(const em_column *c) {
    return (const int32_t *)c->values->data;
}
static inline const char *em_column_chars(const em_column *c) {
    return (const char *)c->data->data;
}

/* Allocates an empty column of `type` able to hold `capacity` rows without
 * growing (strings: `capacity` rows and a starting byte reserve). The column
 * starts with length 0 and no validity buffer. */
em_status em_column_init(em_column *c, em_type type, int64_t capacity, em_pool *pool,
                         em_error *err) EM_MUST_CHECK;
/* Drops the column's references; safe on a zeroed or already reset column. */
void em_column_reset(em_column *c);
/* Shares buffers: dst gets new references to src's buffers. */
void em_column_share(em_column *dst, const em_column *src);
/* Ensures room for `rows` more rows (and `bytes` more string bytes). */
em_status em_column_reserve(em_column *c, int64_t rows, int64_t bytes, em_error *err) EM_MUST_CHECK;
/* Materializes a validity bitmap (all valid) so nulls can be written. */
em_status em_column_ensure_validity(em_column *c, em_error *err) EM_MUST_CHECK;
/* Appends one row. Columns grow geometrically as needed (reserving first
 * only saves the checks' reallocations); a column wrapping foreign memory
 * (imported from Arrow) cannot grow and fails with EM_ERR_INVALID. Errors:
 * EM_ERR_NOMEM / EM_ERR_OOM_BUDGET, EM_ERR_TYPE for the wrong kind of column,
 * EM_ERR_OVERFLOW past 2 GiB of string bytes. */
em_status em_column_append_null(em_column *c, em_error *err) EM_MUST_CHECK;
/* n null rows at once (n >= 0). */
em_status em_column_append_nulls(em_column *c, int64_t n, em_error *err) EM_MUST_CHECK;
em_status em_column_append_bytes(em_column *c, const void *p, int32_t len,
                                 em_error *err) EM_MUST_CHECK;
/* Appends one fixed-width value (width of the column's type; booleans: *(bool*)). */
em_status em_column_append_fixed(em_column *c, const void *value, em_error *err) EM_MUST_CHECK;
/* Counts nulls (and caches it in null_count). */
int64_t em_column_null_count(em_column *c);
/* Copies the rows named by sel[0..n) (or rows 0..n when sel is NULL) into a
 * fresh column allocated from pool. */
em_status em_column_take(const em_column *src, const int32_t *sel, int64_t n, em_pool *pool,
                         em_column *dst, em_error *err) EM_MUST_CHECK;

/* Appends the rows of src named by sel[0..n) (rows 0..n when sel is NULL) to
 * dst, which must have src's type; grows dst as needed. Used by take, compact
 * and operators that gather rows from several batches (coalesce). */
em_status em_column_append_rows(em_column *dst, const em_column *src, const int32_t *sel, int64_t n,
                                em_error *err) EM_MUST_CHECK;

typedef struct em_batch {
    em_schema schema; /* owned copy */
    int n_cols;       /* == schema.n_fields */
    em_column *cols;  /* owned array of n_cols columns */
    int64_t n_rows;   /* physical rows in every column */
    int32_t *sel;     /* owned; NULL = all n_rows rows present */
    int64_t n_sel;    /* rows in sel when sel != NULL */
    int64_t sel_cap;  /* int32 slots allocated for sel */
    em_pool *pool;    /* borrowed; where the batch's memory is charged */
} em_batch;

/* Creates a batch of `schema` (copied) with columns initialized for `capacity` rows. */
em_status em_batch_create(const em_schema *schema, int64_t capacity, em_pool *pool, em_batch **out,
                          em_error *err) EM_MUST_CHECK;
void em_batch_destroy(em_batch *b); /* NULL allowed */
/* Number of logically present rows (n_sel when selected, else n_rows). */
static inline int64_t em_batch_rows(const em_batch *b) { return b->sel ? b->n_sel : b->n_rows; }
/* Empties every column (keeping schema) for reuse; drops the selection. */
em_status em_batch_clear(em_batch *b, int64_t capacity, em_error *err) EM_MUST_CHECK;
/* Selection vectors: ensure capacity, then write b->sel and set b->n_sel. */
em_status em_batch_sel_reserve(em_batch *b, int64_t n, em_error *err) EM_MUST_CHECK;
/* Appends the logically present rows of src (honouring src->sel) to dst,
 * which must have no selection and columns of the same types. On failure
 * dst is left as it was. Used to coalesce small batches. */
em_status em_batch_append(em_batch *dst, const em_batch *src, em_error *err) EM_MUST_CHECK;
/* Drops the selection (all n_rows rows present again) and frees it. */
void em_batch_sel_clear(em_batch *b);
/* Applies the selection, producing a batch without one (copies the rows). */
em_status em_batch_compact(em_batch *b, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
