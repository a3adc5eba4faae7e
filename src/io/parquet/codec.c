/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Page codecs. Parquet compresses each page independently, and the page
 * header tells the uncompressed size, so decompression always writes into a
 * buffer of known size and any disagreement is corruption.
 *
 * "LZ4" (codec 5) is the deprecated Hadoop framing: a sequence of blocks,
 * each preceded by big-endian 4-byte uncompressed and compressed sizes.
 * Some old writers emitted a raw LZ4 block under that codec instead, so the
 * reader falls back to a raw block when the framing does not fit.
 */
#include "io/parquet/codec.h"
#include "io/parquet/format.h"

#include <lz4.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

static uint32_t load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static em_status gzip_inflate(const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_len,
                              em_error *err) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15 + 32: accept gzip or zlib headers, as writers differ. */
    if (inflateInit2(&zs, 15 + 32) != Z_OK)
        return EM_FAIL(err, EM_ERR_NOMEM, "gzip: cannot initialise inflater");
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)src_len;
    zs.next_out = dst;
    zs.avail_out = (uInt)dst_len;
    int rc = inflate(&zs, Z_FINISH);
    int64_t produced = (int64_t)zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || produced != dst_len)
        return EM_FAIL(err, EM_ERR_CORRUPT,
                       "gzip: corrupt stream (zlib code %d, %lld of %lld bytes)", rc,
                       (long long)produced, (long long)dst_len);
    return EM_OK;
}

static em_status hadoop_lz4(const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_len,
                            em_error *err) {
    int64_t in = 0, out = 0;
    while (in + 8 <= src_len && out < dst_len) {
        uint32_t raw = load_be32(src + in), comp = load_be32(src + in + 4);
        in += 8;
        if (comp > src_len - in || raw > dst_len - out)
            goto raw_block;
        int n = LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)comp, (int)raw);
        if (n < 0 || (uint32_t)n != raw)
            goto raw_block;
        in += comp;
        out += raw;
    }
    if (in == src_len && out == dst_len)
        return EM_OK;
raw_block: {
    int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
    if (n != dst_len)
        return EM_FAIL(err, EM_ERR_CORRUPT, "lz4: corrupt block");
    return EM_OK;
}
}

em_status em_pq_decompress(em_pq_codec codec, const uint8_t *src, int64_t src_len, uint8_t *dst,
                           int64_t dst_len, em_error *err) {
    if (src_len < 0 || dst_len < 0 || src_len > INT32_MAX || dst_len > INT32_MAX)
        return EM_FAIL(err, EM_ERR_CORRUPT, "page size out of range (%lld compressed, %lld raw)",
                       (long long)src_len, (long long)dst_len);
    switch (codec) {
    case EM_PQ_UNCOMPRESSED:
        if (src_len != dst_len)
            return EM_FAIL(err, EM_ERR_CORRUPT,
                           "uncompressed page sizes disagree (%lld vs %lld bytes)",
                           (long long)src_len, (long long)dst_len);
        memcpy(dst, src, (size_t)dst_len);
        return EM_OK;
    case EM_PQ_SNAPPY: {
        size_t n = 0;
        if (snappy_uncompressed_length((const char *)src, (size_t)src_len, &n) != SNAPPY_OK ||
            n != (size_t)dst_len)
            return EM_FAIL(err, EM_ERR_CORRUPT, "snappy: bad length header");
        n = (size_t)dst_len;
        if (snappy_uncompress((const char *)src, (size_t)src_len, (char *)dst, &n) != SNAPPY_OK ||
            n != (size_t)dst_len)
            return EM_FAIL(err, EM_ERR_CORRUPT, "snappy: corrupt stream");
        return EM_OK;
    }
    case EM_PQ_GZIP:
        return gzip_inflate(src, src_len, dst, dst_len, err);
    case EM_PQ_ZSTD: {
        size_t n = ZSTD_decompress(dst, (size_t)dst_len, src, (size_t)src_len);
        if (ZSTD_isError(n) || n != (size_t)dst_len)
            return EM_FAIL(err, EM_ERR_CORRUPT, "zstd: %s",
                           ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size mismatch");
        return EM_OK;
    }
    case EM_PQ_LZ4_RAW: {
        int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
        if (n != dst_len)
            return EM_FAIL(err, EM_ERR_CORRUPT, "lz4_raw: corrupt block");
        return EM_OK;
    }
    case EM_PQ_LZ4:
        return hadoop_lz4(src, src_len, dst, dst_len, err);
    default:
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "compression codec %s is not supported",
                       em_pq_codec_name(codec));
    }
}

int64_t em_pq_compress_bound(em_pq_codec codec, int64_t n) {
    switch (codec) {
    case EM_PQ_SNAPPY: return (int64_t)snappy_max_compressed_length((size_t)n);
    case EM_PQ_GZIP: return (int64_t)compressBound((uLong)n) + 32;
    case EM_PQ_ZSTD: return (int64_t)ZSTD_compressBound((size_t)n);
    case EM_PQ_LZ4_RAW: return (int64_t)LZ4_compressBound((int)n);
    default: return n;
    }
}

static em_status gzip_deflate(int level, const uint8_t *src, int64_t src_len, uint8_t *dst,
                              int64_t dst_cap, int64_t *out_len, em_error *err) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15 + 16: a gzip header, as the Parquet specification asks for GZIP. */
    if (deflateInit2(&zs, level > 0 ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return EM_FAIL(err, EM_ERR_NOMEM, "gzip: cannot initialise deflater");
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)src_len;
    zs.next_out = dst;
    zs.avail_out = (uInt)dst_cap;
    int rc = deflate(&zs, Z_FINISH);
    *out_len = (int64_t)zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END)
        return EM_FAIL(err, EM_ERR_INTERNAL, "gzip: deflate failed (zlib code %d)", rc);
    return EM_OK;
}

em_status em_pq_compress(em_pq_codec codec, int level, const uint8_t *src, int64_t src_len,
                         uint8_t *dst, int64_t dst_cap, int64_t *out_len, em_error *err) {
    switch (codec) {
    case EM_PQ_UNCOMPRESSED:
        if (dst_cap < src_len)
            return EM_FAIL(err, EM_ERR_INTERNAL, "compress: output buffer too small");
        memcpy(dst, src, (size_t)src_len);
        *out_len = src_len;
        return EM_OK;
    case EM_PQ_SNAPPY: {
        size_t n = (size_t)dst_cap;
        if (snappy_compress((const char *)src, (size_t)src_len, (char *)dst, &n) != SNAPPY_OK)
            return EM_FAIL(err, EM_ERR_INTERNAL, "snappy: compression failed");
        *out_len = (int64_t)n;
        return EM_OK;
    }
    case EM_PQ_GZIP:
        return gzip_deflate(level, src, src_len, dst, dst_cap, out_len, err);
    case EM_PQ_ZSTD: {
        size_t n = ZSTD_compress(dst, (size_t)dst_cap, src, (size_t)src_len, level > 0 ? level : 3);
        if (ZSTD_isError(n))
            return EM_FAIL(err, EM_ERR_INTERNAL, "zstd: %s", ZSTD_getErrorName(n));
        *out_len = (int64_t)n;
        return EM_OK;
    }
    case EM_PQ_LZ4_RAW: {
        int n = LZ4_compress_default((const char *)src, (char *)dst, (int)src_len, (int)dst_cap);
        if (n <= 0)
            return EM_FAIL(err, EM_ERR_INTERNAL, "lz4_raw: compression failed");
        *out_len = n;
        return EM_OK;
    }
    default:
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "writing codec %s is not supported",
                       em_pq_codec_name(codec));
    }
}

const char *em_pq_codec_name(int codec) {
    static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                  "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
    return codec >= 0 && codec < 8 ? names[codec] : "UNKNOWN";
}

const char *em_pq_encoding_name(int e) {
    static const char *names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
                                  "BIT_PACKED", "DELTA_BINARY_PACKED",
                                  "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                  "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return e >= 0 && e < 10 ? names[e] : "UNKNOWN";
}

const char *em_pq_physical_name(int t) {
    static const char *names[] = {"BOOLEAN", "INT32", "INT64", "INT96",
                                  "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < 8 ? names[t] : "UNKNOWN";
}
