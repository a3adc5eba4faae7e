/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable pool-charged byte buffers for the Parquet writer (see encode_buf.h).
 * Capacity at least doubles on growth and starts at 256 bytes, so small
 * Thrift buffers do not reallocate on every field.
 */
#include "io/parquet/encode_buf.h"

void em_pq_wbuf_reset(em_pq_wbuf *b) {
    if (b->data)
        em_pool_free(b->pool, b->data, b->cap);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

em_status em_pq_wbuf_grow(em_pq_wbuf *b, int64_t extra, em_error *err) {
    if (extra < 0 || b->len > INT64_MAX / 2 - extra)
        return EM_FAIL(err, EM_ERR_NOMEM, "parquet writer: buffer size overflow");
    int64_t need = b->len + extra;
    int64_t cap = b->cap < 256 ? 256 : b->cap;
    while (cap < need)
        cap *= 2;
    uint8_t *p = b->data ? em_pool_realloc(b->pool, b->data, b->cap, cap, err)
                         : em_pool_alloc(b->pool, cap, err);
    if (!p)
        return err ? err->code : EM_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return EM_OK;
}
