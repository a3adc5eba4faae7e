/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chunks and blocks: a batch's rows packed into one contiguous byte range,
 * in Ember's own layout and the machine's byte order, for bytes that leave
 * a batch's buffers but stay with Ember: spill files (chunks, whose reader
 * knows the schema) and the Spark plugin's shuffle blocks (blocks: a chunk
 * after the column types, so a block reads alone).
 *
 *   chunk    header   uint32 "EMSP", uint32 columns, int64 rows, int64 bytes after it
 *            column   uint8 flags (1: has validity, 2: narrowed), [validity bitmap],
 *                     values (booleans: a bitmap; strings: rows + 1 int32 offsets
 *                     from 0; none for the NULL type), [string bytes: offsets[rows]
 *                     of them]; narrowed (integers, dates, timestamps, decimals
 *                     that fit 64 bits): uint8 width (1, 2, 4 or 8, less than the
 *                     type's), int64 base, then per row the value minus base in
 *                     width bytes
 *   block    uint32 "EMSB", uint32 columns, per column uint8 type id, int8
 *            precision, int8 scale, uint8 0; then one chunk
 *
 * Reading checks every length against the types and the bytes given, so
 * damaged bytes fail with EM_ERR_CORRUPT naming their source, never a crash.
 */
#ifndef EM_CHUNK_H
#define EM_CHUNK_H

#include <stdint.h>

#include "ember/column.h"
#include "ember/status.h"
#include "ember/value_text.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EM_CHUNK_MAGIC 0x50534D45u /* "EMSP" */
#define EM_BLOCK_MAGIC 0x42534D45u /* "EMSB" */
/* Rows a block may claim: writers keep blocks near a batch; more is damage. */
#define EM_BLOCK_MAX_ROWS ((int64_t)1 << 20)

typedef struct em_chunk_header {
    uint32_t magic, n_cols;
    int64_t rows, bytes; /* bytes: the columns', after the header */
} em_chunk_header;

/* Bytes rows sel[0..n) (physical row numbers) of b take as a chunk at most,
 * the header included. */
int64_t em_chunk_bytes(const em_batch *b, const int32_t *sel, int64_t n);
/* Packs them at p (em_chunk_bytes of room); returns the end (the chunk's
 * size is end - p). */
uint8_t *em_chunk_pack(const em_batch *b, const int32_t *sel, int64_t n, uint8_t *p);
/* Reads the columns of a chunk whose header is h (already checked against
 * into's schema) from body[0..h->bytes) into into's columns, copying into
 * fresh buffers charged to pool; into->n_rows is set. `what` names the bytes'
 * source in errors. */
em_status em_chunk_unpack(const em_chunk_header *h, const uint8_t *body, em_batch *into,
                          em_pool *pool, const char *what, em_error *err) EM_MUST_CHECK;

/* Appends rows sel[0..n) of b as a block. */
em_status em_block_append(const em_batch *b, const int32_t *sel, int64_t n, em_strbuf *out,
                          em_error *err) EM_MUST_CHECK;
/* Reads a block of len bytes into a new batch (columns named c0, c1, ...)
 * charged to pool. */
em_status em_block_read(const uint8_t *p, int64_t len, em_pool *pool, em_batch **out,
                        const char *what, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
