/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reader internals shared by reader.c and the decode_*.c files (and their
 * unit tests): value views, the decoding context that turns a failure into
 * "FILE: byte OFFSET: column NAME: what", pool-charged growable buffers, and
 * the page-level decoders for the DELTA_* and BYTE_STREAM_SPLIT encodings,
 * which expand a whole page into PLAIN layout (fixed widths) or views
 * (byte arrays) once, so the batch loop serves every encoding the same way.
 */
#ifndef EM_IO_PARQUET_INTERNAL_H
#define EM_IO_PARQUET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/memory.h"
#include "ember/status.h"

/* One BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY value, borrowed from a page or dictionary. */
typedef struct em_pq_view {
    const uint8_t *ptr;
    int64_t len;
} em_pq_view;

typedef struct em_pq_dctx {
    const char *path;   /* file, for messages */
    const char *column; /* column name, for messages */
    int64_t base;       /* file offset of the data's first byte */
    em_pool *pool;      /* charged for decode buffers; may be NULL */
    em_error *err;
    bool in_page; /* data is a decompressed page: base is the page's offset */
} em_pq_dctx;

/* "PATH: byte BASE+REL: column NAME: what" as EM_ERR_CORRUPT; inside a
 * decompressed page, "PATH: byte BASE: column NAME: what (byte REL of the
 * decompressed page)". */
em_status em_pq_dcorrupt(const em_pq_dctx *c, int64_t rel, const char *fmt, ...) EM_PRINTF(3, 4);

/* A growable, pool-charged byte buffer (64-byte aligned), with EM_PQ_BUF_SLACK
 * readable bytes past cap so copies may load a little beyond a value's end. */
#define EM_PQ_BUF_SLACK 64
typedef struct em_pq_buf {
    uint8_t *p;
    int64_t cap;
    em_pool *pool;
} em_pq_buf;

/* Ensures cap >= bytes (contents not kept). */
em_status em_pq_buf_ensure(em_pq_buf *b, int64_t bytes, em_error *err) EM_MUST_CHECK;
void em_pq_buf_free(em_pq_buf *b);

/* DELTA_BINARY_PACKED: decodes the whole stream at p[0..len) into `out` as
 * int32 (width 4) or int64 (width 8) values in PLAIN layout. At most
 * max_values may be present. Sets *n to the count and *consumed to the
 * stream's byte length (where following data, e.g. DELTA_LENGTH bytes, starts). */
em_status em_pq_delta_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len, int width,
                             int64_t max_values, em_pq_buf *out, int64_t *n,
                             int64_t *consumed) EM_MUST_CHECK;

/* DELTA_LENGTH_BYTE_ARRAY: views into p. `scratch` holds the lengths. */
em_status em_pq_delta_length_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len,
                                    int64_t max_values, em_pq_buf *views, em_pq_buf *scratch,
                                    int64_t *n) EM_MUST_CHECK;

/* DELTA_BYTE_ARRAY: values rebuilt into `bytes`, views into `bytes`. */
em_status em_pq_delta_bytes_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len,
                                   int64_t max_values, em_pq_buf *views, em_pq_buf *bytes,
                                   em_pq_buf *scratch1, em_pq_buf *scratch2,
                                   int64_t *n) EM_MUST_CHECK;

/* BYTE_STREAM_SPLIT: transposes p[0..len) (width-byte values) into PLAIN layout. */
em_status em_pq_bss_decode(const em_pq_dctx *c, const uint8_t *p, int64_t len, int width,
                           em_pq_buf *out, int64_t *n) EM_MUST_CHECK;

/* INT96 (nanos of day LE64, Julian day LE32) to microseconds since the epoch. */
int64_t em_pq_int96_micros(const uint8_t *p12);
/* Big-endian two's complement of len (0..16) bytes; false if it does not fit 128 bits. */
bool em_pq_be_to_i128(const uint8_t *p, int64_t len, __int128 *out);

#endif
