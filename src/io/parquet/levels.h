/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parquet's RLE / bit-packed hybrid encoding (definition and repetition
 * levels, dictionary indices, RLE booleans) and LSB-first bit unpacking.
 * Internal to src/io.
 */
#ifndef EM_IO_PARQUET_LEVELS_H
#define EM_IO_PARQUET_LEVELS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct em_rle_dec {
    const uint8_t *p;   /* borrowed: next run header */
    const uint8_t *end; /* end of the encoded bytes */
    int bit_width;      /* 0..32 */
    uint32_t rle_left;  /* values left in the current RLE run */
    uint32_t rle_value;
    uint32_t bp_left;      /* values left in the current bit-packed run */
    const uint8_t *bp_run; /* start of the current bit-packed run's bytes */
    uint64_t bp_pos;       /* index of the next value within that run */
    bool bad;              /* a malformed run header was met */
} em_rle_dec;

void em_rle_init(em_rle_dec *d, const uint8_t *p, int64_t len, int bit_width);
/* Decodes up to n values; returns how many were decoded (fewer when the data
 * ends; d->bad tells whether it ended on a malformed header). */
int64_t em_rle_get(em_rle_dec *d, uint32_t *out, int64_t n);
/* Makes a run current if none is (so rle_left / bp_left describe what comes
 * next); false at the end of the data or on a malformed header. */
bool em_rle_prime(em_rle_dec *d);
/* Skips up to n values; returns how many were skipped. */
int64_t em_rle_skip(em_rle_dec *d, int64_t n);

/* Unpacks n values of w bits (0..32) starting at value index `first` of an
 * LSB-first packed stream of nbytes bytes; the caller guarantees that
 * (first + n) * w bits fit in nbytes. */
void em_unpack32(const uint8_t *base, int64_t nbytes, uint64_t first, int w, uint32_t *out,
                 int64_t n);
/* Same for widths 0..64 into 64-bit values. */
void em_unpack64(const uint8_t *base, int64_t nbytes, uint64_t first, int w, uint64_t *out,
                 int64_t n);

#endif
