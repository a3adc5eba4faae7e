/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dictionary builder for the Parquet writer: maps each distinct value of a
 * column chunk to a dense index, and keeps the distinct values already in
 * PLAIN encoding so they are the dictionary page's payload as they stand.
 * Internal to src/io/parquet.
 */
#ifndef EM_IO_PARQUET_ENCODE_DICT_H
#define EM_IO_PARQUET_ENCODE_DICT_H

#include <stdint.h>

#include "io/parquet/encode_buf.h"

typedef struct em_pq_dict {
    int width;        /* key bytes for fixed-width keys (1..16); 0 = BYTE_ARRAY keys */
    int64_t n;        /* distinct values */
    uint32_t *slots;  /* owned; open addressing table: 0 = empty, else index + 1 */
    int64_t n_slots;  /* power of two */
    int shift;        /* 64 - log2(n_slots): slot = hash >> shift */
    uint64_t *hashes; /* owned; BYTE_ARRAY only: hash of each entry, by index */
    int64_t *offsets; /* owned; BYTE_ARRAY only: start of each entry's length
                         prefix in plain */
    int64_t idx_cap;  /* capacity of hashes/offsets in entries */
    em_pq_wbuf plain; /* the distinct values, PLAIN-encoded in index order */
    em_pool *pool;    /* borrowed */
} em_pq_dict;

void em_pq_dict_init(em_pq_dict *d, int width, em_pool *pool);
void em_pq_dict_reset(em_pq_dict *d); /* frees everything */
void em_pq_dict_clear(em_pq_dict *d); /* forgets the values, keeps the memory */

/* Looks up (inserting when new) n fixed-width keys stored back to back and
 * writes their indices to idx[0..n). */
em_status em_pq_dict_put_fixed(em_pq_dict *d, const uint8_t *keys, int64_t n, uint32_t *idx,
                               em_error *err) EM_MUST_CHECK;
/* Looks up (inserting when new) one BYTE_ARRAY key. */
em_status em_pq_dict_put_bytes(em_pq_dict *d, const uint8_t *p, int32_t len, uint32_t *idx,
                               em_error *err) EM_MUST_CHECK;

/* The PLAIN bytes of entry i. */
static inline const uint8_t *em_pq_dict_entry(const em_pq_dict *d, uint32_t i, int32_t *len) {
    if (d->width) {
        *len = d->width;
        return d->plain.data + (int64_t)i * d->width;
    }
    const uint8_t *p = d->plain.data + d->offsets[i];
    *len = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
    return p + 4;
}

/* A 64-bit hash of bytes (also used for the fixed-width keys). */
uint64_t em_pq_hash_bytes(const uint8_t *p, int64_t len);

#endif
