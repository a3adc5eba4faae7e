/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Page compression codecs through Debian's libraries: snappy, zlib (GZIP),
 * zstd, lz4 (LZ4_RAW, and Hadoop-framed LZ4 for reading). Internal to src/io.
 */
#ifndef EM_IO_PARQUET_CODEC_H
#define EM_IO_PARQUET_CODEC_H

#include <stdint.h>

#include "ember/memory.h"
#include "ember/parquet.h"

/* Decompresses exactly dst_len bytes from src into dst. A size mismatch or
 * corrupt stream is EM_ERR_CORRUPT; an unsupported codec EM_ERR_UNSUPPORTED. */
em_status em_pq_decompress(em_pq_codec codec, const uint8_t *src, int64_t src_len, uint8_t *dst,
                           int64_t dst_len, em_error *err) EM_MUST_CHECK;

/* Upper bound of the compressed size of n bytes. */
int64_t em_pq_compress_bound(em_pq_codec codec, int64_t n);
/* Compresses src into dst (capacity dst_cap >= em_pq_compress_bound) and sets *out_len. */
em_status em_pq_compress(em_pq_codec codec, int level, const uint8_t *src, int64_t src_len,
                         uint8_t *dst, int64_t dst_cap, int64_t *out_len, em_error *err)
    EM_MUST_CHECK;

#endif
