/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hash table from multi-column keys to dense ids (0, 1, 2, ... in order
 * of first insertion), for hash aggregation (id = group number) and hash
 * joins (id = distinct build key; the join keeps its own row lists per id).
 *
 * Keys are compared with Spark's equality for grouping and join keys:
 * floating point values are normalized first (NaN equals NaN, -0.0 equals
 * 0.0, as NormalizeFloatingNumbers does), strings byte-wise, decimals by
 * unscaled value (both sides have the same type). Nulls: with nulls_equal
 * (grouping, null-safe <=> join keys) null is a value equal to null; without
 * it (ordinary equi-joins) a row with any null key never matches and is
 * never inserted: its id is -1.
 *
 * Layout: open addressing with linear probing over a power-of-two array of
 * int32 ids, at most half full; each id's 64-bit hash is kept so probes
 * compare hashes before keys and growth never rehashes key data. The keys
 * themselves are stored column-wise, one em_column per key, row = id, so a
 * hash aggregate emits its grouping columns straight from the table. All
 * memory is charged to the table's pool (EM_ERR_OOM_BUDGET when over).
 */
#ifndef EM_OPS_HASH_TABLE_H
#define EM_OPS_HASH_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/column.h"

typedef struct em_hash_table em_hash_table;

em_status em_ht_create(const em_type *key_types, int n_keys, bool nulls_equal, em_pool *pool,
                       em_hash_table **out, em_error *err) EM_MUST_CHECK;
void em_ht_free(em_hash_table *ht); /* NULL allowed */

/* Sizes the table for n distinct keys at once, so that inserting them
 * neither rebuilds the slots at every doubling nor maps twice the memory
 * the doublings leave behind (a join knows its build side's row count). */
em_status em_ht_reserve(em_hash_table *ht, int64_t n, em_error *err) EM_MUST_CHECK;
/* Number of distinct keys inserted. */
int64_t em_ht_size(const em_hash_table *ht);
/* Key column k of the table: row i holds the key of id i. */
const em_column *em_ht_key_column(const em_hash_table *ht, int k);
/* Bytes the table holds (slots, hashes, stored keys). */
int64_t em_ht_bytes(const em_hash_table *ht);

/* Hashes rows r = sel ? sel[i] : i for i < n of the key columns into
 * hashes[0..n) (the table's own hash, not Spark's Murmur3). */
void em_ht_hash_rows(const em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                     int64_t n, uint64_t *hashes);
/* For each row (as above) the id of its key, inserting new keys: ids[0..n).
 * Rows with a null key get -1 unless nulls_equal. */
em_status em_ht_find_or_insert(em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                               int64_t n, int32_t *ids, em_error *err) EM_MUST_CHECK;
/* Probe only: ids[i] = the key's id, or -1 when absent (or null without
 * nulls_equal). Does not modify the table; safe from several threads. */
em_status em_ht_find(const em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                     int64_t n, int32_t *ids, em_error *err) EM_MUST_CHECK;
/* em_ht_find of rows sel[0..n) (not NULL) whose em_ht_hash_rows hashes the
 * caller already has (hashes[i] for sel[i]): a table split by hash bits
 * hashes once to pick the part, and the part does not hash again. */
void em_ht_find_hashed(const em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                       int64_t n, const uint64_t *hashes, int32_t *ids);

#endif
