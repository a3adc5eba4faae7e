/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark-compatible Murmur3 x86_32 (see hash.h for the per-type rules).
 *
 * The mixing steps are the published MurmurHash3 ones; what makes this
 * Spark's variant is (a) which integer each type is reduced to, and (b) the
 * tail of hashUnsafeBytes, where each of the last len % 4 bytes is a block of
 * its own (sign-extended), followed by the usual finalization with the total
 * length. All arithmetic is on uint32_t so overflow wraps as Java's int does;
 * blocks are read little-endian, as Spark does on every platform.
 *
 * em_hash_column keeps the type dispatch outside the row loop so each loop is
 * a straight pass over one physical layout.
 */
#include <string.h>

#include "ember/hash.h"

#define C1 0xcc9e2d51u
#define C2 0x1b873593u

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t mix_k1(uint32_t k1) {
    k1 *= C1;
    k1 = rotl32(k1, 15);
    return k1 * C2;
}

static inline uint32_t mix_h1(uint32_t h1, uint32_t k1) {
    h1 ^= k1;
    h1 = rotl32(h1, 13);
    return h1 * 5 + 0xe6546b64u;
}

static inline uint32_t fmix(uint32_t h1, uint32_t len) {
    h1 ^= len;
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6bu;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35u;
    h1 ^= h1 >> 16;
    return h1;
}

int32_t em_murmur3_int(int32_t v, int32_t seed) {
    return (int32_t)fmix(mix_h1((uint32_t)seed, mix_k1((uint32_t)v)), 4);
}

int32_t em_murmur3_long(int64_t v, int32_t seed) {
    uint64_t u = (uint64_t)v;
    uint32_t h1 = mix_h1((uint32_t)seed, mix_k1((uint32_t)u));
    h1 = mix_h1(h1, mix_k1((uint32_t)(u >> 32)));
    return (int32_t)fmix(h1, 8);
}

int32_t em_murmur3_bytes(const void *p, int64_t len, int32_t seed) {
    const uint8_t *b = p;
    uint32_t h1 = (uint32_t)seed;
    int64_t aligned = len - len % 4;
    for (int64_t i = 0; i < aligned; i += 4) {
        uint32_t w = (uint32_t)b[i] | (uint32_t)b[i + 1] << 8 | (uint32_t)b[i + 2] << 16 |
                     (uint32_t)b[i + 3] << 24;
        h1 = mix_h1(h1, mix_k1(w));
    }
    for (int64_t i = aligned; i < len; i++)
        h1 = mix_h1(h1, mix_k1((uint32_t)(int32_t)(int8_t)b[i]));
    return (int32_t)fmix(h1, (uint32_t)len);
}

/* Java's floatToIntBits / doubleToLongBits with Spark's -0.0 rule folded in:
 * both zeros hash as 0 and every NaN as the canonical quiet NaN. */
static inline int32_t float_key(float v) {
    if (v == 0.0f)
        return 0;
    if (v != v)
        return 0x7fc00000;
    int32_t bits;
    memcpy(&bits, &v, 4);
    return bits;
}

static inline int64_t double_key(double v) {
    if (v == 0.0)
        return 0;
    if (v != v)
        return INT64_C(0x7ff8000000000000);
    int64_t bits;
    memcpy(&bits, &v, 8);
    return bits;
}

int32_t em_murmur3_float(float v, int32_t seed) { return em_murmur3_int(float_key(v), seed); }
int32_t em_murmur3_double(double v, int32_t seed) { return em_murmur3_long(double_key(v), seed); }

/* BigInteger.toByteArray(): big-endian two's complement with the fewest
 * bytes that still carry the sign (at least one). Returns the length. */
static int decimal_bytes(em_i128 v, uint8_t out[16]) {
    unsigned __int128 u = (unsigned __int128)v;
    uint8_t be[16];
    for (int i = 15; i >= 0; i--) {
        be[i] = (uint8_t)u;
        u >>= 8;
    }
    int start = 0;
    while (start < 15 && ((be[start] == 0x00 && !(be[start + 1] & 0x80)) ||
                          (be[start] == 0xff && (be[start + 1] & 0x80))))
        start++;
    memcpy(out, be + start, (size_t)(16 - start));
    return 16 - start;
}

#define EM_MAX_LONG_DIGITS 18

int32_t em_murmur3_decimal(em_i128 unscaled, int precision, int32_t seed) {
    if (precision <= EM_MAX_LONG_DIGITS)
        return em_murmur3_long((int64_t)unscaled, seed);
    uint8_t bytes[16];
    int n = decimal_bytes(unscaled, bytes);
    return em_murmur3_bytes(bytes, n, seed);
}

/* One loop per physical layout: KEY(r) yields the value handed to HASH. */
#define HASH_LOOP(HASH, KEY)                                                                       \
    do {                                                                                           \
        for (int64_t k = 0; k < n; k++) {                                                          \
            int64_t r = sel ? sel[k] : k;                                                          \
            if (valid && !em_bit_get(valid, r))                                                    \
                continue;                                                                          \
            hashes[k] = HASH(KEY(r), hashes[k]);                                                   \
        }                                                                                          \
    } while (0)

void em_hash_column(const em_column *c, const int32_t *sel, int64_t n, int32_t *hashes) {
    if (c->type.id == EM_TYPE_NULL)
        return;
    const uint8_t *valid = c->validity ? c->validity->data : NULL;
    const uint8_t *vals = c->values->data;
#define BOOL_KEY(r) (int32_t) em_bit_get(vals, r)
#define I8_KEY(r) (int32_t)((const int8_t *)vals)[r]
#define I16_KEY(r) (int32_t)((const int16_t *)vals)[r]
#define I32_KEY(r) ((const int32_t *)vals)[r]
#define I64_KEY(r) ((const int64_t *)vals)[r]
#define F32_KEY(r) ((const float *)vals)[r]
#define F64_KEY(r) ((const double *)vals)[r]
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
        HASH_LOOP(em_murmur3_int, BOOL_KEY);
        break;
    case EM_TYPE_BYTE:
        HASH_LOOP(em_murmur3_int, I8_KEY);
        break;
    case EM_TYPE_SHORT:
        HASH_LOOP(em_murmur3_int, I16_KEY);
        break;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        HASH_LOOP(em_murmur3_int, I32_KEY);
        break;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        HASH_LOOP(em_murmur3_long, I64_KEY);
        break;
    case EM_TYPE_FLOAT:
        HASH_LOOP(em_murmur3_float, F32_KEY);
        break;
    case EM_TYPE_DOUBLE:
        HASH_LOOP(em_murmur3_double, F64_KEY);
        break;
    case EM_TYPE_DECIMAL: {
        const em_i128 *d = (const em_i128 *)vals;
        int p = c->type.precision;
        for (int64_t k = 0; k < n; k++) {
            int64_t r = sel ? sel[k] : k;
            if (!valid || em_bit_get(valid, r))
                hashes[k] = em_murmur3_decimal(d[r], p, hashes[k]);
        }
        break;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *off = (const int32_t *)vals;
        const uint8_t *chars = c->data->data;
        for (int64_t k = 0; k < n; k++) {
            int64_t r = sel ? sel[k] : k;
            if (!valid || em_bit_get(valid, r))
                hashes[k] = em_murmur3_bytes(chars + off[r], off[r + 1] - off[r], hashes[k]);
        }
        break;
    }
    default:
        break;
    }
#undef BOOL_KEY
#undef I8_KEY
#undef I16_KEY
#undef I32_KEY
#undef I64_KEY
#undef F32_KEY
#undef F64_KEY
}

void em_hash_batch(const em_batch *b, const int *cols, int n_cols, int32_t *hashes) {
    int64_t n = em_batch_rows(b);
    for (int64_t k = 0; k < n; k++)
        hashes[k] = EM_HASH_SEED;
    for (int i = 0; i < n_cols; i++)
        em_hash_column(&b->cols[cols[i]], b->sel, n, hashes);
}

void em_hash_partition_ids(const int32_t *hashes, int64_t n, int32_t num_partitions, int32_t *out) {
    for (int64_t k = 0; k < n; k++) {
        int32_t r = hashes[k] % num_partitions;
        out[k] = r < 0 ? r + num_partitions : r;
    }
}
