/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Column vectors and batches in the Arrow layout (see column.h).
 *
 * Invariants kept by every function here, so that a column can be exported
 * to the Arrow C Data Interface at any moment without fixing anything up:
 *   - values->size is the byte size of `length` values (the boolean bitmap's
 *     bytes, or (length + 1) int32 offsets for strings, offsets[0] == 0);
 *   - validity, when present, has validity->size == bitmap bytes of length;
 *     the NULL type always has a validity bitmap, all zeros, and no values;
 *   - data->size == offsets[length] for strings;
 *   - null_count is exact or -1 (unknown; recounted on demand).
 * Bits past `length` in a bitmap are unspecified: writers put every bit.
 *
 * Growth is geometric through em_buffer_reserve, so appends are amortized
 * O(1) even when callers do not reserve first. A column must not be appended
 * to while another column shares its buffers: the appended bytes would be
 * invisible to the sharer, but a growth would move data under it.
 *
 * Batch operations that replace columns (clear, compact) build the new
 * columns completely before swapping them in, so a failure leaves the batch
 * exactly as it was.
 */
#include <stdint.h>
#include <string.h>

#include "ember/column.h"

/* Bytes of the values buffer for n rows. */
static int64_t values_bytes(em_type t, int64_t n) {
    switch (t.id) {
    case EM_TYPE_NULL:
        return 0;
    case EM_TYPE_BOOLEAN:
        return em_bitmap_bytes(n);
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY:
        return (n + 1) * (int64_t)sizeof(int32_t);
    default:
        return n * em_type_width(t);
    }
}

static em_pool *column_pool(const em_column *c) {
    if (c->values)
        return c->values->pool;
    if (c->validity)
        return c->validity->pool;
    return NULL;
}

em_status em_column_init(em_column *c, em_type type, int64_t capacity, em_pool *pool,
                         em_error *err) {
    memset(c, 0, sizeof *c);
    c->type = type;
    if (capacity < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative column capacity %lld", (long long)capacity);
    if (type.id < 0 || type.id >= EM_TYPE_COUNT_)
        return EM_FAIL(err, EM_ERR_INVALID, "column of unknown type id %d", (int)type.id);
    em_status st;
    if (type.id == EM_TYPE_NULL) {
        st = em_buffer_create(pool, em_bitmap_bytes(capacity), &c->validity, err);
        return st;
    }
    st = em_buffer_create(pool, values_bytes(type, capacity), &c->values, err);
    if (st != EM_OK)
        return st;
    if (em_type_is_varlen(type)) {
        ((int32_t *)c->values->data)[0] = 0;
        c->values->size = sizeof(int32_t);
        st = em_buffer_create(pool, capacity * 8, &c->data, err);
        if (st != EM_OK) {
            em_column_reset(c);
            c->type = type;
            return st;
        }
    }
    return EM_OK;
}

void em_column_reset(em_column *c) {
    if (!c)
        return;
    em_buffer_unref(c->validity);
    em_buffer_unref(c->values);
    em_buffer_unref(c->data);
    c->validity = c->values = c->data = NULL;
    c->length = 0;
    c->null_count = 0;
}

void em_column_share(em_column *dst, const em_column *src) {
    dst->type = src->type;
    dst->length = src->length;
    dst->null_count = src->null_count;
    dst->validity = em_buffer_ref(src->validity);
    dst->values = em_buffer_ref(src->values);
    dst->data = em_buffer_ref(src->data);
}

em_status em_column_reserve(em_column *c, int64_t rows, int64_t bytes, em_error *err) {
    if (rows < 0 || bytes < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative column reservation");
    int64_t need = c->length + rows;
    if (c->values)
        EM_TRY(em_buffer_reserve(c->values, values_bytes(c->type, need), err));
    if (c->validity)
        EM_TRY(em_buffer_reserve(c->validity, em_bitmap_bytes(need), err));
    if (c->data && bytes > 0) {
        if (c->data->size + bytes > INT32_MAX)
            return EM_FAIL(err, EM_ERR_OVERFLOW,
                           "string column exceeds 2 GiB of bytes (int32 offsets)");
        EM_TRY(em_buffer_reserve(c->data, c->data->size + bytes, err));
    }
    return EM_OK;
}

em_status em_column_ensure_validity(em_column *c, em_error *err) {
    if (c->validity)
        return EM_OK;
    int64_t rows = c->length;
    if (c->values) {
        int64_t cap_rows = c->values->capacity;
        if (c->type.id == EM_TYPE_BOOLEAN)
            cap_rows *= 8;
        else if (em_type_is_varlen(c->type))
            cap_rows = cap_rows / 4 - 1;
        else
            cap_rows /= em_type_width(c->type);
        if (cap_rows > rows)
            rows = cap_rows;
    }
    em_buffer *v;
    EM_TRY(em_buffer_create(column_pool(c), em_bitmap_bytes(rows), &v, err));
    memset(v->data, 0xff, (size_t)v->capacity);
    v->size = em_bitmap_bytes(c->length);
    c->validity = v;
    if (c->null_count < 0)
        c->null_count = 0;
    return EM_OK;
}

/* Records that one more row was appended. */
static void column_grew(em_column *c, bool valid) {
    c->length++;
    if (c->validity) {
        em_bit_put(c->validity->data, c->length - 1, valid);
        c->validity->size = em_bitmap_bytes(c->length);
    }
    if (c->values)
        c->values->size = values_bytes(c->type, c->length);
    if (!valid && c->null_count >= 0)
        c->null_count++;
}

em_status em_column_append_nulls(em_column *c, int64_t n, em_error *err) {
    if (n < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative count of null rows");
    if (n == 0)
        return EM_OK;
    EM_TRY(em_column_ensure_validity(c, err));
    EM_TRY(em_column_reserve(c, n, 0, err));
    int64_t at = c->length;
    switch (c->type.id) {
    case EM_TYPE_NULL:
        break;
    case EM_TYPE_BOOLEAN:
        for (int64_t i = at; i < at + n; i++)
            em_bit_clear(c->values->data, i);
        break;
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        int32_t *off = (int32_t *)c->values->data;
        for (int64_t i = at; i < at + n; i++)
            off[i + 1] = off[at];
        break;
    }
    default: {
        int w = em_type_width(c->type);
        memset(c->values->data + at * w, 0, (size_t)(n * w));
        break;
    }
    }
    for (int64_t i = at; i < at + n; i++)
        em_bit_clear(c->validity->data, i);
    c->length = at + n;
    c->validity->size = em_bitmap_bytes(c->length);
    if (c->values)
        c->values->size = values_bytes(c->type, c->length);
    if (c->null_count >= 0)
        c->null_count += n;
    return EM_OK;
}

em_status em_column_append_null(em_column *c, em_error *err) {
    return em_column_append_nulls(c, 1, err);
}

em_status em_column_append_bytes(em_column *c, const void *p, int32_t len, em_error *err) {
    if (!em_type_is_varlen(c->type))
        return EM_FAIL(err, EM_ERR_TYPE, "append_bytes on a non-string column");
    if (len < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative string length %d", (int)len);
    int64_t i = c->length;
    if ((i + 2) * 4 > c->values->capacity || c->data->size + len > c->data->capacity ||
        (c->validity && em_bitmap_bytes(i + 1) > c->validity->capacity))
        EM_TRY(em_column_reserve(c, 1, len, err));
    int32_t *off = (int32_t *)c->values->data;
    if (len > 0)
        memcpy(c->data->data + off[i], p, (size_t)len);
    off[i + 1] = off[i] + len;
    c->data->size = off[i + 1];
    column_grew(c, true);
    return EM_OK;
}

em_status em_column_append_fixed(em_column *c, const void *value, em_error *err) {
    int64_t i = c->length;
    int w = em_type_width(c->type);
    if (w > 0) {
        /* Fast path for the common case: room already there. */
        int64_t need = (i + 1) * w;
        if (need > c->values->capacity ||
            (c->validity && em_bitmap_bytes(i + 1) > c->validity->capacity))
            EM_TRY(em_column_reserve(c, 1, 0, err));
        memcpy(c->values->data + i * w, value, (size_t)w);
        c->values->size = need;
        c->length = i + 1;
        if (c->validity) {
            em_bit_set(c->validity->data, i);
            c->validity->size = em_bitmap_bytes(i + 1);
        }
        return EM_OK;
    }
    if (c->type.id != EM_TYPE_BOOLEAN)
        return EM_FAIL(err, EM_ERR_TYPE, "append_fixed on a column without fixed-width values");
    EM_TRY(em_column_reserve(c, 1, 0, err));
    em_bit_put(c->values->data, i, *(const bool *)value);
    column_grew(c, true);
    return EM_OK;
}

int64_t em_column_null_count(em_column *c) {
    if (c->null_count >= 0)
        return c->null_count;
    int64_t n = 0;
    if (c->type.id == EM_TYPE_NULL) {
        n = c->length;
    } else if (c->validity) {
        const uint8_t *bits = c->validity->data;
        int64_t full = c->length / 8;
        for (int64_t b = 0; b < full; b++)
            n += 8 - __builtin_popcount(bits[b]);
        for (int64_t i = full * 8; i < c->length; i++)
            n += !em_bit_get(bits, i);
    }
    c->null_count = n;
    return n;
}

em_status em_column_append_rows(em_column *dst, const em_column *src, const int32_t *sel, int64_t n,
                                em_error *err) {
    if (!em_type_equal(dst->type, src->type))
        return EM_FAIL(err, EM_ERR_TYPE, "append_rows between columns of different types");
    if (n < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative row count");
    if (n == 0)
        return EM_OK;
    int64_t bytes = 0;
    const int32_t *soff = NULL;
    if (em_type_is_varlen(src->type)) {
        soff = em_column_offsets(src);
        if (sel) {
            for (int64_t k = 0; k < n; k++)
                bytes += soff[sel[k] + 1] - soff[sel[k]];
        } else {
            bytes = soff[n] - soff[0];
        }
    }
    if (src->validity && src->type.id != EM_TYPE_NULL)
        EM_TRY(em_column_ensure_validity(dst, err));
    EM_TRY(em_column_reserve(dst, n, bytes, err));

    int64_t base = dst->length;
    if (dst->validity) {
        uint8_t *dbits = dst->validity->data;
        const uint8_t *sbits = src->validity ? src->validity->data : NULL;
        for (int64_t k = 0; k < n; k++) {
            int64_t r = sel ? sel[k] : k;
            em_bit_put(dbits, base + k, sbits ? em_bit_get(sbits, r) : true);
        }
        dst->validity->size = em_bitmap_bytes(base + n);
    }
    switch (src->type.id) {
    case EM_TYPE_NULL:
        break;
    case EM_TYPE_BOOLEAN: {
        uint8_t *d = dst->values->data;
        const uint8_t *s = src->values->data;
        for (int64_t k = 0; k < n; k++)
            em_bit_put(d, base + k, em_bit_get(s, sel ? sel[k] : k));
        break;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        int32_t *doff = (int32_t *)dst->values->data;
        uint8_t *dchars = dst->data->data;
        const uint8_t *schars = src->data->data;
        int32_t pos = doff[base];
        for (int64_t k = 0; k < n; k++) {
            int64_t r = sel ? sel[k] : k;
            int32_t len = soff[r + 1] - soff[r];
            memcpy(dchars + pos, schars + soff[r], (size_t)len);
            pos += len;
            doff[base + k + 1] = pos;
        }
        dst->data->size = pos;
        break;
    }
    default: {
        int w = em_type_width(src->type);
        uint8_t *d = dst->values->data + base * w;
        const uint8_t *s = src->values->data;
        if (!sel) {
            memcpy(d, s, (size_t)(n * w));
            break;
        }
        switch (w) { /* constant widths let the compiler emit plain loads/stores */
        case 1:
            for (int64_t k = 0; k < n; k++)
                d[k] = s[sel[k]];
            break;
        case 2:
            for (int64_t k = 0; k < n; k++)
                memcpy(d + 2 * k, s + 2 * (int64_t)sel[k], 2);
            break;
        case 4:
            for (int64_t k = 0; k < n; k++)
                memcpy(d + 4 * k, s + 4 * (int64_t)sel[k], 4);
            break;
        case 8:
            for (int64_t k = 0; k < n; k++)
                memcpy(d + 8 * k, s + 8 * (int64_t)sel[k], 8);
            break;
        default:
            for (int64_t k = 0; k < n; k++)
                memcpy(d + 16 * k, s + 16 * (int64_t)sel[k], 16);
            break;
        }
        break;
    }
    }
    dst->length = base + n;
    if (dst->values)
        dst->values->size = values_bytes(dst->type, dst->length);
    dst->null_count = -1;
    return EM_OK;
}

em_status em_column_take(const em_column *src, const int32_t *sel, int64_t n, em_pool *pool,
                         em_column *dst, em_error *err) {
    em_column tmp;
    em_status st = em_column_init(&tmp, src->type, n, pool, err);
    if (st == EM_OK)
        st = em_column_append_rows(&tmp, src, sel, n, err);
    if (st != EM_OK) {
        em_column_reset(&tmp);
        return st;
    }
    /* A validity bitmap with no nulls is dead weight for every consumer. */
    if (tmp.validity && tmp.type.id != EM_TYPE_NULL && em_column_null_count(&tmp) == 0) {
        em_buffer_unref(tmp.validity);
        tmp.validity = NULL;
    }
    em_column_null_count(&tmp);
    *dst = tmp;
    return EM_OK;
}

/* Cuts a column back to its first n rows (n <= length), keeping buffers. */
static void column_truncate(em_column *c, int64_t n) {
    if (n >= c->length)
        return;
    c->length = n;
    if (c->values)
        c->values->size = values_bytes(c->type, n);
    if (c->validity)
        c->validity->size = em_bitmap_bytes(n);
    if (c->data)
        c->data->size = ((const int32_t *)c->values->data)[n];
    c->null_count = -1;
}

/* ---- batches
 * ----------------------------------------------------------------------------
 */

/* Allocates an array of n fresh columns of the schema's types. */
static em_status batch_new_columns(const em_schema *schema, int64_t capacity, em_pool *pool,
                                   em_column **out, em_error *err) {
    *out = NULL;
    int n = schema->n_fields;
    em_column *cols = em_pool_calloc(NULL, (int64_t)(n > 0 ? n : 1) * (int64_t)sizeof *cols, err);
    if (!cols)
        return err ? err->code : EM_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        em_status st = em_column_init(&cols[i], schema->fields[i].type, capacity, pool, err);
        if (st != EM_OK) {
            for (int j = 0; j <= i; j++)
                em_column_reset(&cols[j]);
            em_pool_free(NULL, cols, 0);
            return st;
        }
    }
    *out = cols;
    return EM_OK;
}

static void batch_free_columns(em_column *cols, int n) {
    if (!cols)
        return;
    for (int i = 0; i < n; i++)
        em_column_reset(&cols[i]);
    em_pool_free(NULL, cols, 0);
}

static void batch_drop_sel(em_batch *b) {
    em_pool_free(b->pool, b->sel, b->sel_cap * (int64_t)sizeof(int32_t));
    b->sel = NULL;
    b->n_sel = 0;
    b->sel_cap = 0;
}

em_status em_batch_create(const em_schema *schema, int64_t capacity, em_pool *pool, em_batch **out,
                          em_error *err) {
    *out = NULL;
    em_batch *b = em_pool_calloc(NULL, sizeof *b, err);
    if (!b)
        return err ? err->code : EM_ERR_NOMEM;
    b->pool = pool;
    em_status st = em_schema_copy(&b->schema, schema, err);
    if (st != EM_OK) {
        em_pool_free(NULL, b, 0);
        return st;
    }
    st = batch_new_columns(schema, capacity, pool, &b->cols, err);
    if (st != EM_OK) {
        em_schema_reset(&b->schema);
        em_pool_free(NULL, b, 0);
        return st;
    }
    b->n_cols = schema->n_fields;
    *out = b;
    return EM_OK;
}

void em_batch_destroy(em_batch *b) {
    if (!b)
        return;
    batch_free_columns(b->cols, b->n_cols);
    batch_drop_sel(b);
    em_schema_reset(&b->schema);
    em_pool_free(NULL, b, 0);
}

/* A column whose buffers nobody else references (and that are Ember's own
 * memory) can be emptied in place instead of reallocated. */
static bool column_exclusive(const em_column *c) {
    const em_buffer *bufs[3] = {c->validity, c->values, c->data};
    for (int i = 0; i < 3; i++)
        if (bufs[i] && (atomic_load(&bufs[i]->refcount) != 1 || bufs[i]->release))
            return false;
    return true;
}

em_status em_batch_clear(em_batch *b, int64_t capacity, em_error *err) {
    /* Allocate every replacement first, so a failure changes nothing. */
    em_column *fresh = em_pool_calloc(
        NULL, (int64_t)(b->n_cols > 0 ? b->n_cols : 1) * (int64_t)sizeof *fresh, err);
    if (!fresh)
        return err ? err->code : EM_ERR_NOMEM;
    for (int i = 0; i < b->n_cols; i++) {
        if (column_exclusive(&b->cols[i]))
            continue;
        em_status st = em_column_init(&fresh[i], b->cols[i].type, capacity, b->pool, err);
        if (st != EM_OK) {
            batch_free_columns(fresh, i + 1);
            return st;
        }
    }
    for (int i = 0; i < b->n_cols; i++) {
        em_column *c = &b->cols[i];
        if (fresh[i].values || fresh[i].validity) {
            em_column_reset(c);
            *c = fresh[i];
            continue;
        }
        column_truncate(c, 0);
        c->null_count = 0;
        if (c->type.id != EM_TYPE_NULL && c->validity) { /* all valid again: drop the bitmap */
            em_buffer_unref(c->validity);
            c->validity = NULL;
        }
    }
    em_pool_free(NULL, fresh, 0);
    b->n_rows = 0;
    batch_drop_sel(b);
    return EM_OK;
}

void em_batch_sel_clear(em_batch *b) { batch_drop_sel(b); }

em_status em_batch_sel_reserve(em_batch *b, int64_t n, em_error *err) {
    if (n < 0 || n > INT32_MAX)
        return EM_FAIL(err, EM_ERR_INVALID, "selection of %lld rows", (long long)n);
    if (b->sel && b->sel_cap >= n)
        return EM_OK;
    int64_t cap = n > 0 ? n : 1;
    int32_t *s = em_pool_realloc(b->pool, b->sel, b->sel_cap * (int64_t)sizeof(int32_t),
                                 cap * (int64_t)sizeof(int32_t), err);
    if (!s)
        return err ? err->code : EM_ERR_NOMEM;
    b->sel = s;
    b->sel_cap = cap;
    return EM_OK;
}

em_status em_batch_compact(em_batch *b, em_error *err) {
    if (!b->sel)
        return EM_OK;
    em_column *cols =
        em_pool_calloc(NULL, (int64_t)(b->n_cols > 0 ? b->n_cols : 1) * (int64_t)sizeof *cols, err);
    if (!cols)
        return err ? err->code : EM_ERR_NOMEM;
    for (int i = 0; i < b->n_cols; i++) {
        em_status st = em_column_take(&b->cols[i], b->sel, b->n_sel, b->pool, &cols[i], err);
        if (st != EM_OK) {
            batch_free_columns(cols, i);
            return st;
        }
    }
    batch_free_columns(b->cols, b->n_cols);
    b->cols = cols;
    b->n_rows = b->n_sel;
    batch_drop_sel(b);
    return EM_OK;
}

em_status em_batch_append(em_batch *dst, const em_batch *src, em_error *err) {
    if (dst->sel)
        return EM_FAIL(err, EM_ERR_INVALID, "cannot append to a batch with a selection");
    if (dst->n_cols != src->n_cols)
        return EM_FAIL(err, EM_ERR_TYPE, "appending a batch of %d columns to one of %d",
                       src->n_cols, dst->n_cols);
    for (int i = 0; i < dst->n_cols; i++)
        if (!em_type_equal(dst->cols[i].type, src->cols[i].type))
            return EM_FAIL(err, EM_ERR_TYPE, "appending batches whose column %d types differ", i);
    int64_t n = em_batch_rows(src);
    int64_t base = dst->n_rows;
    for (int i = 0; i < dst->n_cols; i++) {
        em_status st = em_column_append_rows(&dst->cols[i], &src->cols[i], src->sel, n, err);
        if (st != EM_OK) {
            for (int j = 0; j <= i; j++)
                column_truncate(&dst->cols[j], base);
            return st;
        }
    }
    dst->n_rows = base + n;
    return EM_OK;
}
