/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small pieces of the reader's decoding: error messages that name the byte,
 * growable pool-charged buffers, BYTE_STREAM_SPLIT, and the value
 * conversions that need more than a cast (INT96 timestamps, big-endian
 * decimals).
 *
 * BYTE_STREAM_SPLIT stores byte b of value i at b * N + i; transposing it back
 * once per page lets the PLAIN path serve it. INT96 follows Spark's legacy
 * layout: 8 bytes little-endian nanoseconds of the day, then 4 bytes
 * little-endian Julian day, where day 2440588 is 1970-01-01; arithmetic wraps
 * (unsigned) rather than overflow on absurd inputs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/parquet/internal.h"

em_status em_pq_dcorrupt(const em_pq_dctx *c, int64_t rel, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *path = c->path ? c->path : "<parquet>";
    const char *col = c->column ? c->column : "?";
    if (c->in_page)
        return EM_FAIL(c->err, EM_ERR_CORRUPT,
                       "%s: byte %lld: column %s: %s (byte %lld of the decompressed page)", path,
                       (long long)c->base, col, what, (long long)rel);
    return EM_FAIL(c->err, EM_ERR_CORRUPT, "%s: byte %lld: column %s: %s", path,
                   (long long)(c->base + rel), col, what);
}

em_status em_pq_buf_ensure(em_pq_buf *b, int64_t bytes, em_error *err) {
    if (bytes <= b->cap && b->p)
        return EM_OK;
    int64_t cap = b->cap ? b->cap : 256;
    while (cap < bytes)
        cap *= 2;
    /* Spare bytes let wide unaligned loads at the end stay inside. */
    uint8_t *p = em_pool_alloc(b->pool, cap + EM_PQ_BUF_SLACK, err);
    if (!p)
        return err ? err->code : EM_ERR_NOMEM;
    if (b->p)
        em_pool_free(b->pool, b->p, b->cap + EM_PQ_BUF_SLACK);
    b->p = p;
    b->cap = cap;
    return EM_OK;
}

void em_pq_buf_free(em_pq_buf *b) {
    if (b->p)
        em_pool_free(b->pool, b->p, b->cap + EM_PQ_BUF_SLACK);
    b->p = NULL;
    b->cap = 0;
}

em_status em_pq_bss_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len, int width,
                           em_pq_buf *out, int64_t *n) {
    if (width <= 0 || len % width != 0)
        return em_pq_dcorrupt(c, 0,
                              "BYTE_STREAM_SPLIT data of %lld bytes is not a multiple of the "
                              "value width %d",
                              (long long)len, width);
    int64_t count = len / width;
    EM_TRY(em_pq_buf_ensure(out, len, c->err));
    uint8_t *dst = out->p;
    if (width == 4) {
        const uint8_t *s0 = p, *s1 = p + count, *s2 = p + 2 * count, *s3 = p + 3 * count;
        for (int64_t i = 0; i < count; i++) {
            dst[4 * i] = s0[i];
            dst[4 * i + 1] = s1[i];
            dst[4 * i + 2] = s2[i];
            dst[4 * i + 3] = s3[i];
        }
    } else if (width == 8) {
        for (int64_t i = 0; i < count; i++)
            for (int b = 0; b < 8; b++)
                dst[8 * i + b] = p[b * count + i];
    } else {
        for (int b = 0; b < width; b++) {
            const uint8_t *s = p + (int64_t)b * count;
            for (int64_t i = 0; i < count; i++)
                dst[i * width + b] = s[i];
        }
    }
    *n = count;
    return EM_OK;
}

int64_t em_pq_int96_micros(const uint8_t *p12) {
    uint64_t nanos;
    uint32_t day;
    memcpy(&nanos, p12, 8);
    memcpy(&day, p12 + 8, 4);
    int64_t days = (int64_t)(int32_t)day - 2440588;
    /* Java's long division truncates toward zero, as Spark's nanos / 1000 does. */
    int64_t micros_of_day = (int64_t)nanos / 1000;
    uint64_t v = (uint64_t)days * 86400000000ull + (uint64_t)micros_of_day;
    return (int64_t)v;
}

bool em_pq_be_to_i128(const uint8_t *p, int64_t len, __int128 *out) {
    if (len <= 0) {
        *out = 0;
        return true;
    }
    /* Drop redundant sign-extension bytes beyond 16. */
    while (len > 16) {
        uint8_t sign = (p[1] & 0x80) ? 0xff : 0x00;
        if (p[0] != sign)
            return false;
        p++;
        len--;
    }
    unsigned __int128 v = (p[0] & 0x80) ? ~(unsigned __int128)0 : 0;
    for (int64_t i = 0; i < len; i++)
        v = (v << 8) | p[i];
    *out = (__int128)v;
    return true;
}
