/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DELTA encodings (Encodings.md), decoded one whole page at a time.
 *
 * DELTA_BINARY_PACKED: a header <block size> <miniblocks per block> <total
 * count> <first value (zigzag)> (ULEB128 varints), then blocks, each <min
 * delta (zigzag)> <one bit-width byte per miniblock> <miniblocks>, where a
 * miniblock packs block_size / miniblocks deltas minus min_delta, LSB first.
 * The block size is a multiple of 128 and a miniblock holds a multiple of 32
 * values. Arithmetic wraps in two's complement (the writer's subtractions may
 * overflow), so it is done on uint64 and truncated for INT32; widths up to 64
 * are accepted for both (DuckDB writes INT32 deltas computed in 64 bits). Miniblocks past the last
 * value may be absent; the last present miniblock is padded to full size, and the stream's end
 * (where following data starts) is after that padding.
 *
 * DELTA_LENGTH_BYTE_ARRAY: the lengths as DELTA_BINARY_PACKED, then all the
 * bytes concatenated. DELTA_BYTE_ARRAY: prefix lengths and suffix lengths as
 * DELTA_BINARY_PACKED, then the suffixes as DELTA_LENGTH_BYTE_ARRAY data;
 * value i is the first prefix[i] bytes of value i-1 followed by suffix i.
 *
 * Every count is bounded by the page's value count and every length by the
 * bytes present, so corrupt input cannot make the decoder allocate or read
 * beyond what the page justifies.
 */
#include <string.h>

#include "io/parquet/internal.h"
#include "io/parquet/levels.h"

typedef struct cursor {
    const uint8_t *p;
    int64_t len, pos;
} cursor;

static bool uleb(cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->pos >= c->len)
            return false;
        uint8_t b = c->p[c->pos++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static bool zigzag(cursor *c, uint64_t *out) {
    uint64_t u;
    if (!uleb(c, &u))
        return false;
    *out = (u >> 1) ^ (0 - (u & 1));
    return true;
}

em_status em_pq_delta_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len, int width,
                             int64_t max_values, em_pq_buf *out, int64_t *n, int64_t *consumed) {
    cursor cur = {p, len, 0};
    uint64_t block, n_mini, total, first;
    if (!uleb(&cur, &block) || !uleb(&cur, &n_mini) || !uleb(&cur, &total) || !zigzag(&cur, &first))
        return em_pq_dcorrupt(c, cur.pos, "DELTA_BINARY_PACKED header is truncated");
    if (block == 0 || block % 128 != 0 || block > (1u << 20) || n_mini == 0 ||
        block % n_mini != 0 || (block / n_mini) % 32 != 0)
        return em_pq_dcorrupt(c, 0,
                              "DELTA_BINARY_PACKED block size %llu with %llu miniblocks is "
                              "invalid",
                              (unsigned long long)block, (unsigned long long)n_mini);
    if (total > (uint64_t)max_values)
        return em_pq_dcorrupt(c, 0,
                              "DELTA_BINARY_PACKED holds %llu values, more than the page's %lld",
                              (unsigned long long)total, (long long)max_values);
    EM_TRY(em_pq_buf_ensure(out, (int64_t)total * width, c->err));
    const int64_t per_mini = (int64_t)(block / n_mini);
    /* Widths up to 64 even for INT32: some writers (DuckDB) compute INT32 deltas in
     * 64 bits; the result modulo 2^32 is the same. */
    const int max_w = 64;
    uint64_t vals[128];
    int64_t done = 0;
    uint64_t last = first;
    if (total > 0) {
        if (width == 4) {
            uint32_t v = (uint32_t)first;
            memcpy(out->p, &v, 4);
        } else {
            memcpy(out->p, &first, 8);
        }
        done = 1;
    }
    while (done < (int64_t)total) {
        uint64_t min_delta;
        int64_t block_at = cur.pos;
        if (!zigzag(&cur, &min_delta))
            return em_pq_dcorrupt(c, block_at, "DELTA_BINARY_PACKED block header is truncated");
        if (cur.len - cur.pos < (int64_t)n_mini)
            return em_pq_dcorrupt(c, cur.pos, "DELTA_BINARY_PACKED bit widths are truncated");
        const uint8_t *widths = cur.p + cur.pos;
        cur.pos += (int64_t)n_mini;
        for (uint64_t m = 0; m < n_mini && done < (int64_t)total; m++) {
            int w = widths[m];
            if (w > max_w)
                return em_pq_dcorrupt(c, cur.pos - (int64_t)n_mini + (int64_t)m,
                                      "DELTA_BINARY_PACKED bit width %d exceeds %d", w, max_w);
            int64_t k = (int64_t)total - done < per_mini ? (int64_t)total - done : per_mini;
            int64_t full = per_mini * w / 8;
            int64_t needed = (k * w + 7) / 8;
            int64_t avail = cur.len - cur.pos;
            if (avail < needed)
                return em_pq_dcorrupt(c, cur.pos, "DELTA_BINARY_PACKED miniblock is truncated");
            const uint8_t *mb = cur.p + cur.pos;
            int64_t mb_len = avail < full ? avail : full;
            for (int64_t i = 0; i < k; i += 128) {
                int64_t kk = k - i < 128 ? k - i : 128;
                em_unpack64(mb, mb_len, (uint64_t)i, w, vals, kk);
                if (width == 4) {
                    uint32_t *o = (uint32_t *)(void *)out->p + done;
                    for (int64_t j = 0; j < kk; j++) {
                        last += min_delta + vals[j];
                        o[j] = (uint32_t)last;
                    }
                } else {
                    uint64_t *o = (uint64_t *)(void *)out->p + done;
                    for (int64_t j = 0; j < kk; j++) {
                        last += min_delta + vals[j];
                        o[j] = last;
                    }
                }
                done += kk;
            }
            cur.pos += mb_len;
        }
    }
    *n = (int64_t)total;
    *consumed = cur.pos;
    return EM_OK;
}

em_status em_pq_delta_length_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len,
                                    int64_t max_values, em_pq_buf *views, em_pq_buf *scratch,
                                    int64_t *n) {
    int64_t count, used;
    EM_TRY(em_pq_delta_decode(c, p, len, 4, max_values, scratch, &count, &used));
    EM_TRY(em_pq_buf_ensure(views, count * (int64_t)sizeof(em_pq_view), c->err));
    const int32_t *lens = (const int32_t *)(const void *)scratch->p;
    em_pq_view *v = (em_pq_view *)(void *)views->p;
    int64_t pos = used;
    for (int64_t i = 0; i < count; i++) {
        int32_t l = lens[i];
        if (l < 0 || l > len - pos)
            return em_pq_dcorrupt(c, pos,
                                  "DELTA_LENGTH_BYTE_ARRAY value %lld of %d bytes exceeds the "
                                  "page",
                                  (long long)i, l);
        v[i].ptr = p + pos;
        v[i].len = l;
        pos += l;
    }
    *n = count;
    return EM_OK;
}

em_status em_pq_delta_bytes_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len,
                                   int64_t max_values, em_pq_buf *views, em_pq_buf *bytes,
                                   em_pq_buf *scratch1, em_pq_buf *scratch2, int64_t *n) {
    int64_t n_prefix, used1;
    EM_TRY(em_pq_delta_decode(c, p, len, 4, max_values, scratch1, &n_prefix, &used1));
    em_pq_dctx c2 = *c;
    c2.base += used1;
    /* The suffixes are DELTA_LENGTH_BYTE_ARRAY: their views point into the page. */
    EM_TRY(em_pq_delta_length_decode(&c2, p + used1, len - used1, max_values, views, scratch2, n));
    if (*n != n_prefix)
        return em_pq_dcorrupt(c, used1,
                              "DELTA_BYTE_ARRAY has %lld prefix lengths but %lld suffixes",
                              (long long)n_prefix, (long long)*n);
    const int32_t *pre = (const int32_t *)(const void *)scratch1->p;
    em_pq_view *v = (em_pq_view *)(void *)views->p;
    /* Sizes first, so the bytes buffer is allocated once and views stay valid. */
    int64_t total = 0, prev = 0;
    for (int64_t i = 0; i < *n; i++) {
        if (pre[i] < 0 || pre[i] > prev)
            return em_pq_dcorrupt(c, 0,
                                  "DELTA_BYTE_ARRAY prefix length %d of value %lld exceeds the "
                                  "previous value's %lld bytes",
                                  pre[i], (long long)i, (long long)prev);
        prev = pre[i] + v[i].len;
        total += prev;
        if (total > INT32_MAX)
            return em_pq_dcorrupt(c, 0, "DELTA_BYTE_ARRAY page expands beyond 2 GiB");
    }
    EM_TRY(em_pq_buf_ensure(bytes, total, c->err));
    uint8_t *dst = bytes->p;
    const uint8_t *prev_ptr = dst;
    for (int64_t i = 0; i < *n; i++) {
        int64_t pl = pre[i];
        if (pl)
            memmove(dst, prev_ptr, (size_t)pl);
        if (v[i].len)
            memcpy(dst + pl, v[i].ptr, (size_t)v[i].len);
        v[i].ptr = dst;
        v[i].len += pl;
        prev_ptr = dst;
        dst += v[i].len;
    }
    return EM_OK;
}
