/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RLE / bit-packed hybrid decoding and bit unpacking.
 *
 * The hybrid stream is a sequence of runs, each introduced by a ULEB128
 * header h: h & 1 == 0 is an RLE run of h >> 1 repeats of one value stored in
 * ceil(width / 8) little-endian bytes; h & 1 == 1 is a bit-packed run of
 * (h >> 1) groups of 8 values, width bits each, packed LSB first. The decoder
 * keeps the current run's state so a caller can take values in any batch
 * size and runs may straddle batches. A bit-packed run whose bytes are cut
 * short (the last run of a page may be truncated by writers) is clamped to the
 * values its bytes hold, never read past.
 *
 * Unpacking loads 8 bytes at a time (memcpy, so unaligned loads are fine) at
 * the byte holding a value's first bit and shifts: for widths up to 32 the
 * value always lies within those 64 bits (shift <= 7). Near the end of the
 * buffer, where an 8-byte load would overrun, bytes are gathered one by one.
 * The width is made a compile-time constant by a switch so the compiler can
 * unroll and strength-reduce the loop for each width.
 */
#include "io/parquet/levels.h"

#include <string.h>

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Bytes [off, off+8) clipped to nbytes, zero-filled beyond. */
static uint64_t load64_tail(const uint8_t *base, int64_t nbytes, uint64_t off) {
    uint64_t v = 0;
    for (int i = 0; i < 8 && (int64_t)(off + i) < nbytes; i++)
        v |= (uint64_t)base[off + i] << (8 * i);
    return v;
}

static inline __attribute__((always_inline)) void unpack32_w(const uint8_t *base, int64_t nbytes,
                                                             uint64_t first, const int w,
                                                             uint32_t *out, int64_t n) {
    const uint64_t mask = w == 32 ? 0xffffffffu : ((1ull << w) - 1);
    uint64_t bit = first * (uint64_t)w;
    int64_t i = 0;
    /* Values whose 8-byte window stays inside the buffer. */
    int64_t safe_bits = (nbytes - 8) * 8;
    /* Up to a group boundary one value at a time ... */
    for (; i < n && ((first + (uint64_t)i) & 7) && (int64_t)bit <= safe_bits; i++, bit += w)
        out[i] = (uint32_t)((load64(base + (bit >> 3)) >> (bit & 7)) & mask);
    /* ... then whole groups of 8 values (w bytes each): with w constant, every
     * value's byte offset and shift in the group are constants too. */
    for (; n - i >= 8 && (int64_t)(bit >> 3) + w + 8 <= nbytes; i += 8, bit += 8 * (uint64_t)w) {
        const uint8_t *g = base + (bit >> 3);
        for (int j = 0; j < 8; j++)
            out[i + j] = (uint32_t)((load64(g + (j * w) / 8) >> ((j * w) % 8)) & mask);
    }
    for (; i < n && (int64_t)bit <= safe_bits; i++, bit += w)
        out[i] = (uint32_t)((load64(base + (bit >> 3)) >> (bit & 7)) & mask);
    for (; i < n; i++, bit += w)
        out[i] = (uint32_t)((load64_tail(base, nbytes, bit >> 3) >> (bit & 7)) & mask);
}

void em_unpack32(const uint8_t *base, int64_t nbytes, uint64_t first, int w, uint32_t *out,
                 int64_t n) {
    switch (w) {
    case 0:
        memset(out, 0, (size_t)n * sizeof *out);
        return;
#define EM_UNPACK_CASE(W)                                                                          \
    case W:                                                                                        \
        unpack32_w(base, nbytes, first, W, out, n);                                                \
        return;
        EM_UNPACK_CASE(1)
        EM_UNPACK_CASE(2)
        EM_UNPACK_CASE(3)
        EM_UNPACK_CASE(4) EM_UNPACK_CASE(5) EM_UNPACK_CASE(6) EM_UNPACK_CASE(7) EM_UNPACK_CASE(8)
            EM_UNPACK_CASE(9) EM_UNPACK_CASE(10) EM_UNPACK_CASE(11) EM_UNPACK_CASE(12)
                EM_UNPACK_CASE(13) EM_UNPACK_CASE(14) EM_UNPACK_CASE(15) EM_UNPACK_CASE(16)
                    EM_UNPACK_CASE(17) EM_UNPACK_CASE(18) EM_UNPACK_CASE(19) EM_UNPACK_CASE(20)
                        EM_UNPACK_CASE(21) EM_UNPACK_CASE(22) EM_UNPACK_CASE(23) EM_UNPACK_CASE(24)
                            EM_UNPACK_CASE(25) EM_UNPACK_CASE(26) EM_UNPACK_CASE(27)
                                EM_UNPACK_CASE(28) EM_UNPACK_CASE(29) EM_UNPACK_CASE(30)
                                    EM_UNPACK_CASE(31) EM_UNPACK_CASE(32)
#undef EM_UNPACK_CASE
                                        default
            : memset(out, 0, (size_t)n * sizeof *out); /* callers reject other widths */
        return;
    }
}

void em_unpack64(const uint8_t *base, int64_t nbytes, uint64_t first, int w, uint64_t *out,
                 int64_t n) {
    if (w <= 32) {
        /* Reuse the 32-bit kernels through a small staging buffer. */
        uint32_t tmp[256];
        while (n > 0) {
            int64_t k = n < 256 ? n : 256;
            em_unpack32(base, nbytes, first, w, tmp, k);
            for (int64_t i = 0; i < k; i++)
                out[i] = tmp[i];
            out += k;
            first += (uint64_t)k;
            n -= k;
        }
        return;
    }
    const uint64_t mask = w == 64 ? ~0ull : ((1ull << w) - 1);
    uint64_t bit = first * (uint64_t)w;
    for (int64_t i = 0; i < n; i++, bit += (uint64_t)w) {
        uint64_t off = bit >> 3;
        unsigned sh = (unsigned)(bit & 7);
        uint64_t lo =
            (int64_t)off + 8 <= nbytes ? load64(base + off) : load64_tail(base, nbytes, off);
        uint64_t v = lo >> sh;
        if (sh + (unsigned)w > 64) {
            uint64_t hi = (int64_t)off + 8 < nbytes ? base[off + 8] : 0;
            v |= hi << (64 - sh);
        }
        out[i] = v & mask;
    }
}

void em_rle_init(em_rle_dec *d, const uint8_t *p, int64_t len, int bit_width) {
    memset(d, 0, sizeof *d);
    d->p = p;
    d->end = p + (len > 0 ? len : 0);
    d->bit_width = bit_width;
}

/* Reads the next run header; false at the end of the data or on a bad header. */
static bool rle_next_run(em_rle_dec *d) {
    if (d->p >= d->end)
        return false;
    uint64_t h = 0;
    int shift = 0;
    for (;;) {
        if (d->p >= d->end || shift > 35) {
            d->bad = true;
            return false;
        }
        uint8_t b = *d->p++;
        h |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    int64_t avail = d->end - d->p;
    if (h & 1) {
        uint64_t groups = h >> 1;
        int64_t bytes_needed = (int64_t)groups * d->bit_width; /* 8 values * w bits = w bytes */
        uint64_t values = groups * 8;
        if (bytes_needed > avail) {
            /* Truncated last run: keep the values its bytes hold. */
            values = d->bit_width ? (uint64_t)avail * 8 / (uint64_t)d->bit_width : values;
            bytes_needed = avail;
        }
        if (values == 0 || values > UINT32_MAX) {
            d->bad = true;
            return false;
        }
        d->bp_run = d->p;
        d->bp_pos = 0;
        d->bp_left = (uint32_t)values;
        d->p += bytes_needed;
    } else {
        uint64_t count = h >> 1;
        int nb = (d->bit_width + 7) / 8;
        if (count == 0 || count > UINT32_MAX || nb > avail) {
            d->bad = true;
            return false;
        }
        uint32_t v = 0;
        for (int i = 0; i < nb; i++)
            v |= (uint32_t)d->p[i] << (8 * i);
        d->p += nb;
        d->rle_value = v;
        d->rle_left = (uint32_t)count;
    }
    return true;
}

bool em_rle_prime(em_rle_dec *d) {
    if (d->rle_left || d->bp_left)
        return true;
    return rle_next_run(d);
}

/* Decodes (out != NULL) or skips up to n values. */
static int64_t rle_take(em_rle_dec *d, uint32_t *out, int64_t n) {
    int64_t done = 0;
    while (done < n) {
        if (d->rle_left) {
            int64_t k = n - done < d->rle_left ? n - done : d->rle_left;
            uint32_t v = d->rle_value;
            for (int64_t i = 0; out && i < k; i++)
                out[done + i] = v;
            d->rle_left -= (uint32_t)k;
            done += k;
        } else if (d->bp_left) {
            int64_t k = n - done < d->bp_left ? n - done : d->bp_left;
            /* The run's bytes end where the next header starts. */
            if (out)
                em_unpack32(d->bp_run, d->p - d->bp_run, d->bp_pos, d->bit_width, out + done, k);
            d->bp_pos += (uint64_t)k;
            d->bp_left -= (uint32_t)k;
            done += k;
        } else if (!rle_next_run(d)) {
            break;
        }
    }
    return done;
}

int64_t em_rle_get(em_rle_dec *d, uint32_t *out, int64_t n) { return rle_take(d, out, n); }

int64_t em_rle_skip(em_rle_dec *d, int64_t n) { return rle_take(d, NULL, n); }
