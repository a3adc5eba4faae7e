/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open-addressing hash table from multi-column keys to dense ids (see
 * hash_table.h for the semantics). Rows are hashed column by column in tight
 * per-type loops, 256 rows at a time into a stack buffer, then placed one by
 * one: a probe walks slots from hash & mask, skipping ids whose hash tag
 * differs, and compares key values only on a hash match. Invariant: the slot
 * array is at most half full, so every probe ends at an empty slot.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/hash_table.h"

#define HT_CHUNK 256
#define HT_PREFETCH 16
/* A slot: 0 = empty, else (upper 32 bits of the hash) << 32 | (id + 1), so a
 * probe rejects most non-matching ids without touching another array. */
#define HT_SLOT(h, id) (((h)&0xFFFFFFFF00000000ull) | (uint64_t)((uint32_t)(id) + 1u))
#define HT_SLOT_ID(v) ((int32_t)((uint32_t)(v)) - 1)
#define HT_TAG_MATCH(v, h) ((((v) ^ (h)) >> 32) == 0)

struct em_hash_table {
    int n_keys;
    bool nulls_equal;
    em_pool *pool;
    em_column *keys;  /* stored keys, one column per key, row = id */
    uint64_t *hashes; /* hash of each id */
    int64_t hashes_cap;
    uint64_t *slots; /* HT_SLOT values, 0 = empty */
    int64_t n_slots; /* power of two */
    int64_t n_ids;
    /* One integral key whose values all fit 32 bits so far: a slot's upper
     * half holds the key itself instead of hash bits, so a probe compares
     * keys without reading the stored key column. The first key that does
     * not fit turns it off (the slots are rebuilt with hash tags). The null
     * key (grouping only) has no slot then: null_id, or -1 before it is seen. */
    bool inline_key;
    int32_t null_id;
};

static inline int64_t ht_int_key(const em_column *c, int64_t r) {
    const void *v = c->values->data;
    switch (c->type.id) {
    case EM_TYPE_BYTE:
        return ((const int8_t *)v)[r];
    case EM_TYPE_SHORT:
        return ((const int16_t *)v)[r];
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        return ((const int32_t *)v)[r];
    default:
        return ((const int64_t *)v)[r];
    }
}

static bool ht_inline_type(em_type_id t) {
    return t == EM_TYPE_BYTE || t == EM_TYPE_SHORT || t == EM_TYPE_INT || t == EM_TYPE_DATE ||
           t == EM_TYPE_LONG || t == EM_TYPE_TIMESTAMP || t == EM_TYPE_TIMESTAMP_NTZ;
}

static inline uint64_t ht_mix(uint64_t h, uint64_t v) {
    v *= 0x9E3779B97F4A7C15ull;
    v ^= v >> 29;
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static inline uint64_t ht_bytes_hash(const uint8_t *p, int32_t len) {
    uint64_t h = 0x84222325CBF29CE4ull ^ (uint64_t)len;
    if (len <= 8) { /* the common short key: one word, no memcpy call */
        uint64_t w = 0;
        for (int32_t i = 0; i < len; i++)
            w |= (uint64_t)p[i] << (8 * i);
        return ht_mix(h, w);
    }
    int32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = ht_mix(h, w);
    }
    uint64_t tail = 0;
    for (int32_t k = 0; i + k < len; k++)
        tail |= (uint64_t)p[i + k] << (8 * k);
    return ht_mix(h, tail);
}

/* NaN -> one NaN, -0.0 -> 0.0 (Spark's NormalizeFloatingNumbers). */
static inline double ht_norm_double(double d) {
    if (d == 0.0)
        return 0.0;
    if (isnan(d))
        return NAN;
    return d;
}
static inline float ht_norm_float(float f) {
    if (f == 0.0f)
        return 0.0f;
    if (isnan(f))
        return NAN;
    return f;
}

#define HT_NULL_HASH 0x5bd1e9955bd1e995ull

/* Folds column c's rows into h[0..n). */
static void ht_hash_column(const em_column *c, const int32_t *sel, int64_t n, uint64_t *h) {
    const uint8_t *valid = c->validity ? c->validity->data : NULL;
    const void *vals = c->values ? c->values->data : NULL;
#define HT_LOOP(EXPR)                                                                              \
    for (int64_t i = 0; i < n; i++) {                                                              \
        int64_t r = sel ? sel[i] : i;                                                              \
        if (valid && !em_bit_get(valid, r)) {                                                      \
            h[i] = ht_mix(h[i], HT_NULL_HASH);                                                     \
            continue;                                                                              \
        }                                                                                          \
        h[i] = ht_mix(h[i], (EXPR));                                                               \
    }
    switch (c->type.id) {
    case EM_TYPE_NULL:
        for (int64_t i = 0; i < n; i++)
            h[i] = ht_mix(h[i], HT_NULL_HASH);
        break;
    case EM_TYPE_BOOLEAN:
        HT_LOOP((uint64_t)em_bit_get(vals, r));
        break;
    case EM_TYPE_BYTE:
        HT_LOOP((uint64_t)((const int8_t *)vals)[r]);
        break;
    case EM_TYPE_SHORT:
        HT_LOOP((uint64_t)((const int16_t *)vals)[r]);
        break;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        HT_LOOP((uint64_t)((const int32_t *)vals)[r]);
        break;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        HT_LOOP((uint64_t)((const int64_t *)vals)[r]);
        break;
    case EM_TYPE_FLOAT: {
        const float *f = vals;
        for (int64_t i = 0; i < n; i++) {
            int64_t r = sel ? sel[i] : i;
            if (valid && !em_bit_get(valid, r)) {
                h[i] = ht_mix(h[i], HT_NULL_HASH);
                continue;
            }
            float x = ht_norm_float(f[r]);
            uint32_t bits;
            memcpy(&bits, &x, 4);
            h[i] = ht_mix(h[i], bits);
        }
        break;
    }
    case EM_TYPE_DOUBLE: {
        const double *d = vals;
        for (int64_t i = 0; i < n; i++) {
            int64_t r = sel ? sel[i] : i;
            if (valid && !em_bit_get(valid, r)) {
                h[i] = ht_mix(h[i], HT_NULL_HASH);
                continue;
            }
            double x = ht_norm_double(d[r]);
            uint64_t bits;
            memcpy(&bits, &x, 8);
            h[i] = ht_mix(h[i], bits);
        }
        break;
    }
    case EM_TYPE_DECIMAL: {
        const em_i128 *d = vals;
        HT_LOOP((uint64_t)d[r] ^ ((uint64_t)(d[r] >> 64) * 0x9E3779B97F4A7C15ull));
        break;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *off = vals;
        const uint8_t *bytes = c->data ? c->data->data : NULL;
        HT_LOOP(ht_bytes_hash(bytes + off[r], off[r + 1] - off[r]));
        break;
    }
    default:
        break;
    }
#undef HT_LOOP
}

void em_ht_hash_rows(const em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                     int64_t n, uint64_t *hashes) {
    for (int64_t i = 0; i < n; i++)
        hashes[i] = 0x2545F4914F6CDD1Dull;
    for (int k = 0; k < ht->n_keys; k++)
        ht_hash_column(keys[k], sel, n, hashes);
}

/* Row r of a equals row s of b (same type). Nulls are handled by the caller. */
static inline bool ht_value_equal(const em_column *a, int64_t r, const em_column *b, int64_t s) {
    const void *va = a->values ? a->values->data : NULL;
    const void *vb = b->values ? b->values->data : NULL;
    switch (a->type.id) {
    case EM_TYPE_NULL:
        return true;
    case EM_TYPE_BOOLEAN:
        return em_bit_get(va, r) == em_bit_get(vb, s);
    case EM_TYPE_BYTE:
        return ((const int8_t *)va)[r] == ((const int8_t *)vb)[s];
    case EM_TYPE_SHORT:
        return ((const int16_t *)va)[r] == ((const int16_t *)vb)[s];
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        return ((const int32_t *)va)[r] == ((const int32_t *)vb)[s];
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return ((const int64_t *)va)[r] == ((const int64_t *)vb)[s];
    case EM_TYPE_FLOAT: {
        float x = ((const float *)va)[r], y = ((const float *)vb)[s];
        return x == y || (isnan(x) && isnan(y));
    }
    case EM_TYPE_DOUBLE: {
        double x = ((const double *)va)[r], y = ((const double *)vb)[s];
        return x == y || (isnan(x) && isnan(y));
    }
    case EM_TYPE_DECIMAL:
        return ((const em_i128 *)va)[r] == ((const em_i128 *)vb)[s];
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *oa = va, *ob = vb;
        int32_t la = oa[r + 1] - oa[r], lb = ob[s + 1] - ob[s];
        if (la != lb)
            return false;
        const uint8_t *pa = a->data->data + oa[r], *pb = b->data->data + ob[s];
        if (la <= 8) { /* short keys: a byte loop beats a memcmp call */
            for (int32_t i = 0; i < la; i++)
                if (pa[i] != pb[i])
                    return false;
            return true;
        }
        return memcmp(pa, pb, (size_t)la) == 0;
    }
    default:
        return false;
    }
}

static inline bool ht_keys_equal(const em_hash_table *ht, const em_column *const *keys, int64_t r,
                                 int64_t id) {
    for (int k = 0; k < ht->n_keys; k++) {
        const em_column *a = keys[k], *b = &ht->keys[k];
        bool na = !em_column_is_valid(a, r), nb = !em_column_is_valid(b, id);
        if (na || nb) {
            if (na != nb)
                return false;
            continue;
        }
        if (!ht_value_equal(a, r, b, id))
            return false;
    }
    return true;
}

static inline bool ht_row_has_null(const em_hash_table *ht, const em_column *const *keys,
                                   int64_t r) {
    for (int k = 0; k < ht->n_keys; k++)
        if (!em_column_is_valid(keys[k], r))
            return true;
    return false;
}

em_status em_ht_create(const em_type *key_types, int n_keys, bool nulls_equal, em_pool *pool,
                       em_hash_table **out, em_error *err) {
    *out = NULL;
    em_hash_table *ht = calloc(1, sizeof *ht);
    if (!ht)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a hash table");
    ht->n_keys = n_keys;
    ht->nulls_equal = nulls_equal;
    ht->pool = pool;
    ht->keys = calloc((size_t)(n_keys > 0 ? n_keys : 1), sizeof *ht->keys);
    if (!ht->keys) {
        free(ht);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a hash table");
    }
    em_status s = EM_OK;
    for (int k = 0; s == EM_OK && k < n_keys; k++)
        s = em_column_init(&ht->keys[k], key_types[k], 64, pool, err);
    ht->n_slots = 64;
    ht->inline_key = n_keys == 1 && ht_inline_type(key_types[0].id);
    ht->null_id = -1;
    if (s == EM_OK && !(ht->slots = em_pool_calloc(pool, ht->n_slots * 8, err)))
        s = err ? err->code : EM_ERR_NOMEM;
    if (s != EM_OK) {
        em_ht_free(ht);
        return s;
    }
    *out = ht;
    return EM_OK;
}

void em_ht_free(em_hash_table *ht) {
    if (!ht)
        return;
    for (int k = 0; k < ht->n_keys; k++)
        em_column_reset(&ht->keys[k]);
    free(ht->keys);
    if (ht->slots)
        em_pool_free(ht->pool, ht->slots, ht->n_slots * 8);
    if (ht->hashes)
        em_pool_free(ht->pool, ht->hashes, ht->hashes_cap * 8);
    free(ht);
}

int64_t em_ht_size(const em_hash_table *ht) { return ht->n_ids; }
const em_column *em_ht_key_column(const em_hash_table *ht, int k) { return &ht->keys[k]; }

int64_t em_ht_bytes(const em_hash_table *ht) {
    int64_t b = ht->n_slots * 8 + ht->hashes_cap * 8;
    for (int k = 0; k < ht->n_keys; k++) {
        const em_column *c = &ht->keys[k];
        b += (c->values ? c->values->capacity : 0) + (c->data ? c->data->capacity : 0) +
             (c->validity ? c->validity->capacity : 0);
    }
    return b;
}

/* A slot's value for id: its key as the tag (inline_key) or its hash's
 * upper half. */
static inline uint64_t ht_slot_of(const em_hash_table *ht, int64_t id) {
    if (ht->inline_key)
        return ((uint64_t)(uint32_t)ht_int_key(&ht->keys[0], id) << 32) | (uint32_t)(id + 1);
    return HT_SLOT(ht->hashes[id], id);
}

/* Places every id into ns slots (growing, or when the tag kind changes). */
static em_status ht_rebuild(em_hash_table *ht, int64_t ns, em_error *err) {
    uint64_t *slots = em_pool_calloc(ht->pool, ns * 8, err);
    if (!slots)
        return err ? err->code : EM_ERR_NOMEM;
    uint64_t mask = (uint64_t)ns - 1;
    for (int64_t id = 0; id < ht->n_ids; id++) {
        /* a big table's slots miss the cache: ask ahead */
        if (id + HT_PREFETCH < ht->n_ids)
            __builtin_prefetch(&slots[ht->hashes[id + HT_PREFETCH] & mask], 1);
        if (ht->inline_key && id == ht->null_id)
            continue;
        uint64_t p = ht->hashes[id] & mask;
        while (slots[p] != 0)
            p = (p + 1) & mask;
        slots[p] = ht_slot_of(ht, id);
    }
    em_pool_free(ht->pool, ht->slots, ht->n_slots * 8);
    ht->slots = slots;
    ht->n_slots = ns;
    return EM_OK;
}

em_status em_ht_reserve(em_hash_table *ht, int64_t n, em_error *err) {
    if (n <= 0 || n >= INT32_MAX)
        return EM_OK;
    int64_t ns = ht->n_slots;
    while (ns < 2 * n)
        ns *= 2;
    if (ns > ht->n_slots)
        EM_TRY(ht_rebuild(ht, ns, err));
    if (n > ht->hashes_cap) {
        uint64_t *nh = em_pool_realloc(ht->pool, ht->hashes, ht->hashes_cap * 8, n * 8, err);
        if (!nh)
            return err ? err->code : EM_ERR_NOMEM;
        ht->hashes = nh;
        ht->hashes_cap = n;
    }
    for (int k = 0; k < ht->n_keys; k++)
        EM_TRY(em_column_reserve(&ht->keys[k], n - ht->keys[k].length, 0, err));
    return EM_OK;
}

static em_status ht_grow(em_hash_table *ht, em_error *err) {
    return ht_rebuild(ht, ht->n_slots * 2, err);
}

/* A key past 32 bits: the slots go back to hash tags, the null key (if
 * any) gets its slot. */
static em_status ht_leave_inline(em_hash_table *ht, em_error *err) {
    ht->inline_key = false;
    ht->null_id = -1;
    return ht_rebuild(ht, ht->n_slots, err);
}

/* Appends row r of src to the stored key column dst (same type). */
static inline em_status ht_append_key(em_column *dst, const em_column *src, int64_t r,
                                      em_error *err) {
    if (!em_column_is_valid(src, r) || src->type.id == EM_TYPE_NULL)
        return em_column_append_null(dst, err);
    if (em_type_is_varlen(src->type)) {
        const int32_t *o = em_column_offsets(src);
        return em_column_append_bytes(dst, src->data->data + o[r], o[r + 1] - o[r], err);
    }
    if (src->type.id == EM_TYPE_BOOLEAN) {
        bool b = em_bit_get(src->values->data, r);
        return em_column_append_fixed(dst, &b, err);
    }
    return em_column_append_fixed(dst, src->values->data + r * em_type_width(src->type), err);
}

static em_status ht_insert(em_hash_table *ht, const em_column *const *keys, int64_t r, uint64_t h,
                           uint64_t slot, int32_t *id_out, em_error *err) {
    if (ht->n_ids >= INT32_MAX - 1)
        return EM_FAIL(err, EM_ERR_OOM_BUDGET, "hash table: more than 2^31 distinct keys");
    if (ht->n_ids == ht->hashes_cap) {
        int64_t nc = ht->hashes_cap ? ht->hashes_cap * 2 : 64;
        uint64_t *nh = em_pool_realloc(ht->pool, ht->hashes, ht->hashes_cap * 8, nc * 8, err);
        if (!nh)
            return err ? err->code : EM_ERR_NOMEM;
        ht->hashes = nh;
        ht->hashes_cap = nc;
    }
    for (int k = 0; k < ht->n_keys; k++) {
        em_status s = ht_append_key(&ht->keys[k], keys[k], r, err);
        if (s != EM_OK) {
            /* keep the key columns the same length: drop the partial row */
            for (int j = 0; j < k; j++)
                ht->keys[j].length = ht->n_ids;
            return s;
        }
    }
    int32_t id = (int32_t)ht->n_ids++;
    ht->hashes[id] = h;
    if (slot == UINT64_MAX)
        ht->null_id = id;
    else
        ht->slots[slot] = ht_slot_of(ht, id);
    *id_out = id;
    if (ht->n_ids * 2 > ht->n_slots)
        return ht_grow(ht, err);
    return EM_OK;
}

static inline bool ht_fits_tag(int64_t k) { return k == (int64_t)(int32_t)k; }

/* The id of integral key k (fitting 32 bits) with hash h, or -1 with *slot
 * the empty slot where it would go. */
static inline int32_t ht_probe_inline(const em_hash_table *ht, uint64_t h, int64_t k,
                                      uint64_t *slot) {
    uint64_t mask = (uint64_t)ht->n_slots - 1, p = h & mask;
    uint64_t tag = (uint64_t)(uint32_t)k << 32;
    for (;;) {
        uint64_t v = ht->slots[p];
        if (v == 0)
            break;
        if (((v ^ tag) >> 32) == 0)
            return HT_SLOT_ID(v);
        p = (p + 1) & mask;
    }
    *slot = p;
    return -1;
}

/* find_or_insert for one integral key: rows base..base+m of sel (or the
 * identity), their hashes in hs. Stops at the first key past 32 bits with
 * the table out of inline mode; *done tells how many rows were placed. */
static em_status ht_upsert_inline(em_hash_table *ht, const em_column *kc, const int32_t *sel,
                                  int64_t base, int64_t m, const uint64_t *hs, int32_t *ids,
                                  int64_t *done, em_error *err) {
    const em_column *const keys[1] = {kc};
    *done = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t r = sel ? sel[base + i] : base + i;
        uint64_t mask = (uint64_t)ht->n_slots - 1;
        if (i + HT_PREFETCH < m)
            __builtin_prefetch(&ht->slots[hs[i + HT_PREFETCH] & mask]);
        if (!em_column_is_valid(kc, r)) {
            if (!ht->nulls_equal)
                ids[base + i] = -1;
            else if (ht->null_id >= 0)
                ids[base + i] = ht->null_id;
            else
                EM_TRY(ht_insert(ht, keys, r, hs[i], UINT64_MAX, &ids[base + i], err));
            continue;
        }
        int64_t k = ht_int_key(kc, r);
        if (!ht_fits_tag(k)) {
            *done = i;
            return ht_leave_inline(ht, err);
        }
        uint64_t p = 0;
        int32_t found = ht_probe_inline(ht, hs[i], k, &p);
        if (found < 0)
            EM_TRY(ht_insert(ht, keys, r, hs[i], p, &found, err));
        ids[base + i] = found;
    }
    *done = m;
    return EM_OK;
}

em_status em_ht_find_or_insert(em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                               int64_t n, int32_t *ids, em_error *err) {
    uint64_t hs[HT_CHUNK];
    for (int64_t base = 0; base < n; base += HT_CHUNK) {
        int64_t m = n - base < HT_CHUNK ? n - base : HT_CHUNK;
        const int32_t *s = sel ? sel + base : NULL;
        if (sel)
            em_ht_hash_rows(ht, keys, s, m, hs);
        else {
            /* rows base..base+m: hash with an offset selection */
            int32_t tmp[HT_CHUNK];
            for (int64_t i = 0; i < m; i++)
                tmp[i] = (int32_t)(base + i);
            em_ht_hash_rows(ht, keys, tmp, m, hs);
        }
        int64_t first = 0; /* rows of the chunk already placed */
        if (ht->inline_key) {
            EM_TRY(ht_upsert_inline(ht, keys[0], sel, base, m, hs, ids, &first, err));
            if (first == m)
                continue;
        }
        for (int64_t i = first; i < m; i++) {
            int64_t r = sel ? sel[base + i] : base + i;
            /* a large table misses the cache on every probe: ask for the
             * slot of a row a little ahead while this one is placed */
            if (i + HT_PREFETCH < m)
                __builtin_prefetch(&ht->slots[hs[i + HT_PREFETCH] & (uint64_t)(ht->n_slots - 1)]);
            if (!ht->nulls_equal && ht_row_has_null(ht, keys, r)) {
                ids[base + i] = -1;
                continue;
            }
            uint64_t h = hs[i], mask = (uint64_t)ht->n_slots - 1, p = h & mask;
            int32_t found = -1;
            for (;;) {
                uint64_t v = ht->slots[p];
                if (v == 0)
                    break;
                if (HT_TAG_MATCH(v, h) && ht_keys_equal(ht, keys, r, HT_SLOT_ID(v))) {
                    found = HT_SLOT_ID(v);
                    break;
                }
                p = (p + 1) & mask;
            }
            if (found < 0)
                EM_TRY(ht_insert(ht, keys, r, h, p, &found, err));
            ids[base + i] = found;
        }
    }
    return EM_OK;
}

/* Looks up m rows (s[i]) whose hashes are hs[i]: ids[i]. */
static void ht_find_chunk(const em_hash_table *ht, const em_column *const *keys, const int32_t *s,
                          int64_t m, const uint64_t *hs, int32_t *ids) {
    uint64_t mask = (uint64_t)ht->n_slots - 1;
    if (ht->inline_key) {
        const em_column *kc = keys[0];
        for (int64_t i = 0; i < m; i++) {
            int64_t r = s[i];
            if (i + HT_PREFETCH < m)
                __builtin_prefetch(&ht->slots[hs[i + HT_PREFETCH] & mask]);
            if (!em_column_is_valid(kc, r)) {
                ids[i] = ht->nulls_equal ? ht->null_id : -1;
                continue;
            }
            /* every stored key fits 32 bits: a wider one is absent */
            int64_t k = ht_int_key(kc, r);
            uint64_t p = 0;
            ids[i] = ht_fits_tag(k) ? ht_probe_inline(ht, hs[i], k, &p) : -1;
        }
        return;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t r = s[i];
        int32_t found = -1;
        if (i + HT_PREFETCH < m)
            __builtin_prefetch(&ht->slots[hs[i + HT_PREFETCH] & mask]);
        if (ht->nulls_equal || !ht_row_has_null(ht, keys, r)) {
            uint64_t p = hs[i] & mask;
            for (;;) {
                uint64_t v = ht->slots[p];
                if (v == 0)
                    break;
                if (HT_TAG_MATCH(v, hs[i]) && ht_keys_equal(ht, keys, r, HT_SLOT_ID(v))) {
                    found = HT_SLOT_ID(v);
                    break;
                }
                p = (p + 1) & mask;
            }
        }
        ids[i] = found;
    }
}

em_status em_ht_find(const em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                     int64_t n, int32_t *ids, em_error *err) {
    (void)err;
    uint64_t hs[HT_CHUNK];
    int32_t tmp[HT_CHUNK];
    for (int64_t base = 0; base < n; base += HT_CHUNK) {
        int64_t m = n - base < HT_CHUNK ? n - base : HT_CHUNK;
        const int32_t *s = sel ? sel + base : tmp;
        if (!sel)
            for (int64_t i = 0; i < m; i++)
                tmp[i] = (int32_t)(base + i);
        em_ht_hash_rows(ht, keys, s, m, hs);
        ht_find_chunk(ht, keys, s, m, hs, ids + base);
    }
    return EM_OK;
}

void em_ht_find_hashed(const em_hash_table *ht, const em_column *const *keys, const int32_t *sel,
                       int64_t n, const uint64_t *hashes, int32_t *ids) {
    ht_find_chunk(ht, keys, sel, n, hashes, ids);
}
