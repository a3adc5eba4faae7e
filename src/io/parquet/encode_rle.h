/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Encoder for Parquet's RLE / bit-packed hybrid (Encodings.md), used for
 * definition levels (bit width 1) and dictionary indices (RLE_DICTIONARY).
 * Internal to src/io/parquet.
 */
#ifndef EM_IO_PARQUET_ENCODE_RLE_H
#define EM_IO_PARQUET_ENCODE_RLE_H

#include <stdint.h>

#include "io/parquet/encode_buf.h"

/* Bits needed to store max_value (0 for 0). */
int em_pq_bit_width(uint64_t max_value);

/* Upper bound of the encoded size of n values of bit_width bits. */
int64_t em_pq_rle_bound(int64_t n, int bit_width);

/* Appends the hybrid encoding of vals[0..n) (each < 2^bit_width, bit_width
 * 0..32) to out, without a length prefix. */
em_status em_pq_rle_encode_u32(const uint32_t *vals, int64_t n, int bit_width, em_pq_wbuf *out,
                               em_error *err) EM_MUST_CHECK;
em_status em_pq_rle_encode_u8(const uint8_t *vals, int64_t n, int bit_width, em_pq_wbuf *out,
                              em_error *err) EM_MUST_CHECK;

#endif
