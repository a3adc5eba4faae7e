/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark's Murmur3 hash (x86_32 variant, seed 42), bit-for-bit as Spark's
 * `hash()` function and `hashpartitioning` compute it
 * (org.apache.spark.sql.catalyst.expressions.Murmur3Hash over
 * org.apache.spark.unsafe.hash.Murmur3_x86_32).
 *
 * Per type, for a value v and the running hash h used as the seed:
 *   boolean                       hashInt(v ? 1 : 0, h)
 *   tinyint, smallint, int, date  hashInt(v, h) (sign-extended to int)
 *   bigint, timestamp(_ntz)       hashLong(v, h)
 *   float                         hashInt(0) for +-0.0, else floatToIntBits(v)
 *                                 (every NaN becomes 0x7fc00000)
 *   double                        hashLong(0) for +-0.0, else doubleToLongBits(v)
 *                                 (every NaN becomes 0x7ff8000000000000)
 *   decimal(p,s), p <= 18         hashLong(unscaled, h)
 *   decimal(p,s), p > 18          hashUnsafeBytes(minimal big-endian two's complement
 *                                 of the unscaled value, as BigInteger.toByteArray())
 *   string, binary                hashUnsafeBytes(bytes, h)
 *   null                          h unchanged
 * A row's hash folds the columns left to right, each using the previous
 * result as its seed, starting from 42. Spark's hashUnsafeBytes is not the
 * reference Murmur3 for lengths that are not a multiple of 4: each trailing
 * byte is mixed in as its own block, sign-extended.
 */
#ifndef EM_HASH_H
#define EM_HASH_H

#include <stdint.h>

#include "ember/column.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EM_HASH_SEED 42

int32_t em_murmur3_int(int32_t v, int32_t seed);
int32_t em_murmur3_long(int64_t v, int32_t seed);
/* Spark's Murmur3_x86_32.hashUnsafeBytes. */
int32_t em_murmur3_bytes(const void *p, int64_t len, int32_t seed);
int32_t em_murmur3_float(float v, int32_t seed);
int32_t em_murmur3_double(double v, int32_t seed);
/* A decimal of the given type precision, by its unscaled value. */
int32_t em_murmur3_decimal(em_i128 unscaled, int precision, int32_t seed);

/* Folds column c into hashes: for k in [0, n), row r = sel ? sel[k] : k,
 * hashes[k] = hash(c[r], seed = hashes[k]). Null rows leave hashes[k]. */
void em_hash_column(const em_column *c, const int32_t *sel, int64_t n, int32_t *hashes);

/* Row hashes of the logically present rows of b (honouring b->sel) over the
 * columns cols[0..n_cols), starting from EM_HASH_SEED: em_batch_rows(b)
 * values are written to hashes. */
void em_hash_batch(const em_batch *b, const int *cols, int n_cols, int32_t *hashes);

/* Spark's Pmod(hash, num_partitions): the non-negative remainder. */
void em_hash_partition_ids(const int32_t *hashes, int64_t n, int32_t num_partitions, int32_t *out);

#ifdef __cplusplus
}
#endif
#endif
