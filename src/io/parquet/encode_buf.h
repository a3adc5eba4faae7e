/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable byte buffer for the Parquet writer, charged to a memory pool.
 *
 * Every encoder of the writer (Thrift headers, RLE/bit-packed runs, PLAIN
 * values, dictionary pages) appends to one of these. Growth is geometric, so
 * appending n bytes one value at a time costs O(n) overall. Callers that write
 * many small values reserve once (em_pq_wbuf_reserve) and then store through
 * em_pq_wbuf_tail without checks, which keeps the per-value paths branch-free.
 * Internal to src/io/parquet.
 */
#ifndef EM_IO_PARQUET_ENCODE_BUF_H
#define EM_IO_PARQUET_ENCODE_BUF_H

#include <stdint.h>
#include <string.h>

#include "ember/memory.h"

typedef struct em_pq_wbuf {
    uint8_t *data; /* owned; allocated from pool; NULL until the first reserve */
    int64_t len;   /* bytes in use */
    int64_t cap;   /* bytes allocated */
    em_pool *pool; /* borrowed; may be NULL (unaccounted) */
} em_pq_wbuf;

static inline void em_pq_wbuf_init(em_pq_wbuf *b, em_pool *pool) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->pool = pool;
}
/* Frees the bytes; the buffer can be used again afterwards. */
void em_pq_wbuf_reset(em_pq_wbuf *b);
/* Ensures room for `extra` more bytes after len. */
em_status em_pq_wbuf_grow(em_pq_wbuf *b, int64_t extra, em_error *err) EM_MUST_CHECK;
static inline em_status em_pq_wbuf_reserve(em_pq_wbuf *b, int64_t extra, em_error *err) {
    if (b->cap - b->len >= extra)
        return EM_OK;
    return em_pq_wbuf_grow(b, extra, err);
}
static inline uint8_t *em_pq_wbuf_tail(em_pq_wbuf *b) { return b->data + b->len; }
static inline em_status em_pq_wbuf_append(em_pq_wbuf *b, const void *p, int64_t n, em_error *err) {
    EM_TRY(em_pq_wbuf_reserve(b, n, err));
    if (n > 0)
        memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
    return EM_OK;
}

static inline void em_pq_store_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Unsigned LEB128 varint (as Thrift and the RLE run headers use); p needs 10
 * bytes. */
static inline int em_pq_put_uvarint(uint8_t *p, uint64_t v) {
    int n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

#endif
