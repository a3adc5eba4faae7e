/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dictionary builder (see encode_dict.h).
 *
 * Open addressing with linear probing over a power-of-two slot array of
 * uint32 (index + 1, 0 = empty), kept at most half full so probe sequences
 * stay short. Keys are not stored in the table: a slot names an entry whose
 * PLAIN bytes live in `plain`, and lookups compare against those. Fixed-width
 * keys are compared byte for byte, `width` bytes (1..16: the physical value,
 * so -0.0 and 0.0, or two NaN payloads, stay distinct as Parquet requires of
 * a lossless dictionary), as single loads for 4 and 8 bytes. BYTE_ARRAY
 * entries also remember their 64-bit hash, so probes compare hashes before
 * bytes and growth rehashes without touching the strings.
 *
 * The slot position is the high bits of a multiplicative hash (Fibonacci
 * hashing), which spreads sequential integers (keys, dates) evenly.
 */
#include "io/parquet/encode_dict.h"

#include <stdbool.h>
#include <string.h>

#define DICT_MIN_SLOTS 1024

void em_pq_dict_init(em_pq_dict *d, int width, em_pool *pool) {
    memset(d, 0, sizeof *d);
    d->width = width;
    d->pool = pool;
    em_pq_wbuf_init(&d->plain, pool);
}

void em_pq_dict_reset(em_pq_dict *d) {
    if (d->slots)
        em_pool_free(d->pool, d->slots, d->n_slots * (int64_t)sizeof(uint32_t));
    if (d->hashes)
        em_pool_free(d->pool, d->hashes, d->idx_cap * (int64_t)sizeof(uint64_t));
    if (d->offsets)
        em_pool_free(d->pool, d->offsets, d->idx_cap * (int64_t)sizeof(int64_t));
    em_pq_wbuf_reset(&d->plain);
    em_pq_dict_init(d, d->width, d->pool);
}

void em_pq_dict_clear(em_pq_dict *d) {
    if (d->slots)
        memset(d->slots, 0, (size_t)d->n_slots * sizeof(uint32_t));
    d->n = 0;
    d->plain.len = 0;
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

uint64_t em_pq_hash_bytes(const uint8_t *p, int64_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
        h = (h ^ load64(p + i)) * 0x100000001b3ULL * 0x9E3779B97F4A7C15ULL + (h >> 29);
    if (i < len) {
        /* The last 1..7 bytes, gathered without a variable-length memcpy call. */
        uint64_t t = 0;
        for (int64_t j = i; j < len; j++)
            t |= (uint64_t)p[j] << (8 * (j - i));
        h = (h ^ t) * 0x9E3779B97F4A7C15ULL + (h >> 29);
    }
    return mix64(h);
}

static inline uint64_t hash_fixed(const uint8_t *k, int width) {
    /* One multiply for the common widths: folding the high half in first
     * keeps keys that differ only in high bits (doubles) apart. */
    if (width == 4) {
        uint32_t v;
        memcpy(&v, k, 4);
        return (uint64_t)v * 0x9E3779B97F4A7C15ULL;
    }
    if (width == 8) {
        uint64_t v = load64(k);
        return (v ^ (v >> 32)) * 0x9E3779B97F4A7C15ULL;
    }
    return em_pq_hash_bytes(k, width);
}

/* The high bits of the hash pick the slot (the best-mixed bits of a product). */
static inline int64_t slot_of(const em_pq_dict *d, uint64_t h) { return (int64_t)(h >> d->shift); }

/* Doubles the slot array (or creates it) and reinserts every entry. */
static em_status dict_rehash(em_pq_dict *d, em_error *err) {
    int64_t n_slots = d->n_slots ? d->n_slots * 2 : DICT_MIN_SLOTS;
    uint32_t *slots = em_pool_calloc(d->pool, n_slots * (int64_t)sizeof(uint32_t), err);
    if (!slots)
        return err ? err->code : EM_ERR_NOMEM;
    if (d->slots)
        em_pool_free(d->pool, d->slots, d->n_slots * (int64_t)sizeof(uint32_t));
    d->slots = slots;
    d->n_slots = n_slots;
    d->shift = 64;
    for (int64_t k = n_slots; k > 1; k >>= 1)
        d->shift--;
    for (int64_t i = 0; i < d->n; i++) {
        uint64_t h = d->width ? hash_fixed(d->plain.data + i * d->width, d->width) : d->hashes[i];
        int64_t s = slot_of(d, h);
        while (slots[s])
            s = (s + 1) & (n_slots - 1);
        slots[s] = (uint32_t)(i + 1);
    }
    return EM_OK;
}

/* Grows the per-entry hash and offset arrays: both new arrays are allocated
 * before the old ones are released, so a failure leaves the dictionary intact.
 */
static em_status dict_grow_index(em_pq_dict *d, em_error *err) {
    int64_t cap = d->idx_cap ? d->idx_cap * 2 : 1024;
    uint64_t *h = em_pool_alloc(d->pool, cap * 8, err);
    if (!h)
        return err ? err->code : EM_ERR_NOMEM;
    int64_t *o = em_pool_alloc(d->pool, cap * 8, err);
    if (!o) {
        em_pool_free(d->pool, h, cap * 8);
        return err ? err->code : EM_ERR_NOMEM;
    }
    if (d->idx_cap) {
        memcpy(h, d->hashes, (size_t)d->n * 8);
        memcpy(o, d->offsets, (size_t)d->n * 8);
        em_pool_free(d->pool, d->hashes, d->idx_cap * 8);
        em_pool_free(d->pool, d->offsets, d->idx_cap * 8);
    }
    d->hashes = h;
    d->offsets = o;
    d->idx_cap = cap;
    return EM_OK;
}

/* Equality of short byte strings without a library call (keys are mostly a
 * few bytes; memcmp's call overhead dominated the probe). */
static inline bool bytes_eq(const uint8_t *a, const uint8_t *b, int64_t len) {
    while (len >= 8) {
        if (load64(a) != load64(b))
            return false;
        a += 8, b += 8, len -= 8;
    }
    while (len-- > 0)
        if (*a++ != *b++)
            return false;
    return true;
}

/* One probe loop per key width, so the 4- and 8-byte compares are single loads. */
#define PUT_FIXED_LOOP(W, EQ)                                                                      \
    for (int64_t k = 0; k < n; k++) {                                                              \
        const uint8_t *key = keys + k * (W);                                                       \
        if ((d->n + 1) * 2 > d->n_slots)                                                           \
            EM_TRY(dict_rehash(d, err));                                                           \
        const int64_t mask = d->n_slots - 1;                                                       \
        int64_t s = slot_of(d, hash_fixed(key, (W)));                                              \
        for (;;) {                                                                                 \
            uint32_t e = d->slots[s];                                                              \
            if (e == 0) {                                                                          \
                if (d->n >= UINT32_MAX - 1)                                                        \
                    return EM_FAIL(err, EM_ERR_INTERNAL, "dictionary: too many entries");          \
                EM_TRY(em_pq_wbuf_append(&d->plain, key, (W), err));                               \
                d->slots[s] = (uint32_t)(d->n + 1);                                                \
                idx[k] = (uint32_t)d->n++;                                                         \
                break;                                                                             \
            }                                                                                      \
            const uint8_t *cand = d->plain.data + (int64_t)(e - 1) * (W);                          \
            if (EQ) {                                                                              \
                idx[k] = e - 1;                                                                    \
                break;                                                                             \
            }                                                                                      \
            s = (s + 1) & mask;                                                                    \
        }                                                                                          \
    }

static inline uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

em_status em_pq_dict_put_fixed(em_pq_dict *d, const uint8_t *keys, int64_t n, uint32_t *idx,
                               em_error *err) {
    const int w = d->width;
    if (w == 4) {
        PUT_FIXED_LOOP(4, load32(cand) == load32(key))
    } else if (w == 8) {
        PUT_FIXED_LOOP(8, load64(cand) == load64(key))
    } else {
        PUT_FIXED_LOOP(w, bytes_eq(cand, key, w))
    }
    return EM_OK;
}

em_status em_pq_dict_put_bytes(em_pq_dict *d, const uint8_t *p, int32_t len, uint32_t *idx,
                               em_error *err) {
    if ((d->n + 1) * 2 > d->n_slots)
        EM_TRY(dict_rehash(d, err));
    uint64_t h = em_pq_hash_bytes(p, len);
    int64_t s = slot_of(d, h);
    const int64_t mask = d->n_slots - 1;
    for (;;) {
        uint32_t e = d->slots[s];
        if (e == 0)
            break;
        int64_t i = e - 1;
        if (d->hashes[i] == h) {
            const uint8_t *q = d->plain.data + d->offsets[i];
            uint32_t qlen =
                (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
            if (qlen == (uint32_t)len && bytes_eq(q + 4, p, len)) {
                *idx = (uint32_t)i;
                return EM_OK;
            }
        }
        s = (s + 1) & mask;
    }
    if (d->n == d->idx_cap)
        EM_TRY(dict_grow_index(d, err));
    if (d->n >= UINT32_MAX - 1)
        return EM_FAIL(err, EM_ERR_INTERNAL, "dictionary: too many entries");
    EM_TRY(em_pq_wbuf_reserve(&d->plain, 4 + (int64_t)len, err));
    d->offsets[d->n] = d->plain.len;
    d->hashes[d->n] = h;
    em_pq_store_le32(em_pq_wbuf_tail(&d->plain), (uint32_t)len);
    if (len > 0)
        memcpy(em_pq_wbuf_tail(&d->plain) + 4, p, (size_t)len);
    d->plain.len += 4 + (int64_t)len;
    d->slots[s] = (uint32_t)(d->n + 1);
    *idx = (uint32_t)d->n++;
    return EM_OK;
}
