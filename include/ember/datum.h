/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Single values for the reference row engine: em_datum is one value of a
 * known Spark type (the type travels beside it, in a schema or an
 * expression), em_row_arena owns the bytes that string values point to, and
 * the conversions move values between datums and Arrow-layout columns.
 *
 * Representation by type (the type decides which member is meaningful):
 *   BOOLEAN                          b
 *   BYTE SHORT INT LONG DATE TIMESTAMP i64 (sign-extended; DATE days since
 *                                    1970-01-01, TIMESTAMP microseconds UTC)
 *   FLOAT DOUBLE                     f64 (a FLOAT holds a value exactly
 *                                    representable as float)
 *   DECIMAL(p,s)                     dec: the unscaled value
 *   STRING BINARY                    str.ptr / str.len: borrowed bytes, valid
 *                                    as long as their arena (or source
 *                                    column) lives
 *   NULL type                        always is_null
 * A row is an array of datums in its schema's column order.
 */
#ifndef EM_DATUM_H
#define EM_DATUM_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/column.h"
#include "ember/memory.h"
#include "ember/status.h"
#include "ember/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct em_datum {
    bool is_null;
    union {
        bool b;
        int64_t i64;
        double f64;
        em_i128 dec;
        struct {
            const uint8_t *ptr;
            int32_t len;
        } str;
    } v;
} em_datum;

static inline em_datum em_datum_null(void) {
    em_datum d;
    memset(&d, 0, sizeof d);
    d.is_null = true;
    return d;
}

/*
 * A bump allocator for the bytes of string values, charged to a pool.
 * Memory is released all at once (em_row_arena_clear keeps the first chunk
 * for reuse; em_row_arena_reset frees everything).
 */
typedef struct em_row_arena {
    em_pool *pool; /* borrowed; may be NULL (uncharged) */
    struct em_arena_chunk *chunks;
    int64_t bytes; /* charged to pool */
} em_row_arena;

void em_row_arena_init(em_row_arena *a, em_pool *pool);
void *em_row_arena_alloc(em_row_arena *a, int64_t n, em_error *err);
/* Copies n bytes into the arena (n may be 0: returns a valid non-NULL pointer). */
const uint8_t *em_row_arena_copy(em_row_arena *a, const void *p, int64_t n, em_error *err);
void em_row_arena_clear(em_row_arena *a);
void em_row_arena_reset(em_row_arena *a);

/* Value at column row `row` (physical index) as a datum; strings borrow the
 * column's bytes. */
void em_datum_from_column(const em_column *c, int64_t row, em_datum *out);
/* Appends d (of the column's type) to a column built with em_column_init;
 * the column grows from the pool it was created with (pool is not used). */
em_status em_column_append_datum(em_column *c, const em_datum *d, em_pool *pool,
                                 em_error *err) EM_MUST_CHECK;
/* Deep copy: a string's bytes go to the arena. */
em_status em_datum_copy(em_datum *dst, const em_datum *src, em_type t, em_row_arena *arena,
                        em_error *err) EM_MUST_CHECK;
/* Spark's ordering for sorts and min/max (nulls not handled: the caller
 * orders them): -1, 0 or 1. Doubles: NaN is larger than any other value and
 * equal to itself, -0.0 equals 0.0. Strings and binary: unsigned bytes. */
int em_datum_compare(const em_datum *a, const em_datum *b, em_type t);
/* Equality for grouping and join keys: nulls equal each other; doubles as
 * in em_datum_compare (NaN = NaN, -0.0 = 0.0). */
bool em_datum_equal_grouping(const em_datum *a, const em_datum *b, em_type t);
/* Spark's Murmur3 (seed 42 for hashpartitioning) of one value; a null
 * leaves the seed unchanged. */
uint32_t em_datum_murmur3(const em_datum *d, em_type t, uint32_t seed);

#ifdef __cplusplus
}
#endif
#endif
