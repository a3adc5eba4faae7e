/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Single values of the reference row engine (datum.h): the string arena,
 * conversions to and from columns, Spark's ordering, grouping equality and
 * Murmur3 of one value. Written value by value on purpose: the row engine
 * is the plain reference the vectorized code is checked against.
 */
#include <math.h>
#include <string.h>

#include "ember/datum.h"
#include "ember/hash.h"

/* ------------------------------------------------------------------ arena */

struct em_arena_chunk {
    struct em_arena_chunk *next;
    int64_t size; /* bytes in data[] */
    int64_t used;
    uint8_t data[];
};

#define ARENA_MIN_CHUNK (32 * 1024)

void em_row_arena_init(em_row_arena *a, em_pool *pool) {
    a->pool = pool;
    a->chunks = NULL;
    a->bytes = 0;
}

static void chunk_free(em_row_arena *a, struct em_arena_chunk *c) {
    int64_t total = (int64_t)sizeof *c + c->size;
    a->bytes -= total;
    em_pool_free(a->pool, c, total);
}

void *em_row_arena_alloc(em_row_arena *a, int64_t n, em_error *err) {
    if (!a) {
        EM_FAIL(err, EM_ERR_INVALID, "a string value needs an arena and none was given");
        return NULL;
    }
    if (n < 0)
        n = 0;
    /* 8-byte alignment, so callers may keep any scalar in the bytes */
    int64_t need = (n + 7) & ~(int64_t)7;
    struct em_arena_chunk *c = a->chunks;
    if (!c || c->size - c->used < need) {
        int64_t size = need > ARENA_MIN_CHUNK ? need : ARENA_MIN_CHUNK;
        int64_t total = (int64_t)sizeof *c + size;
        c = em_pool_alloc(a->pool, total, err);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        c->next = a->chunks;
        a->chunks = c;
        a->bytes += total;
    }
    void *p = c->data + c->used;
    c->used += need;
    return p;
}

const uint8_t *em_row_arena_copy(em_row_arena *a, const void *p, int64_t n, em_error *err) {
    uint8_t *d = em_row_arena_alloc(a, n, err);
    if (d && n > 0)
        memcpy(d, p, (size_t)n);
    return d;
}

static void free_chunks(em_row_arena *a, struct em_arena_chunk *c) {
    while (c) {
        struct em_arena_chunk *next = c->next;
        chunk_free(a, c);
        c = next;
    }
}

void em_row_arena_clear(em_row_arena *a) {
    struct em_arena_chunk *keep = a->chunks;
    if (!keep)
        return;
    free_chunks(a, keep->next);
    keep->next = NULL;
    keep->used = 0;
}

void em_row_arena_reset(em_row_arena *a) {
    free_chunks(a, a->chunks);
    a->chunks = NULL;
}

/* ------------------------------------------------------------------ columns */

void em_datum_from_column(const em_column *c, int64_t row, em_datum *out) {
    memset(out, 0, sizeof *out);
    if (c->type.id == EM_TYPE_NULL || !c->values || !em_column_is_valid(c, row)) {
        out->is_null = true;
        return;
    }
    const uint8_t *v = c->values->data;
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
        out->v.b = em_bit_get(v, row);
        break;
    case EM_TYPE_BYTE:
        out->v.i64 = ((const int8_t *)v)[row];
        break;
    case EM_TYPE_SHORT:
        out->v.i64 = ((const int16_t *)v)[row];
        break;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        out->v.i64 = ((const int32_t *)v)[row];
        break;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        out->v.i64 = ((const int64_t *)v)[row];
        break;
    case EM_TYPE_FLOAT:
        out->v.f64 = ((const float *)v)[row];
        break;
    case EM_TYPE_DOUBLE:
        out->v.f64 = ((const double *)v)[row];
        break;
    case EM_TYPE_DECIMAL:
        memcpy(&out->v.dec, v + row * 16, 16);
        break;
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *off = (const int32_t *)v;
        out->v.str.ptr = c->data ? c->data->data + off[row] : (const uint8_t *)"";
        out->v.str.len = off[row + 1] - off[row];
        break;
    }
    default:
        out->is_null = true;
        break;
    }
}

em_status em_column_append_datum(em_column *c, const em_datum *d, em_pool *pool, em_error *err) {
    (void)pool; /* the column grows from the pool it was created with */
    if (d->is_null || c->type.id == EM_TYPE_NULL)
        return em_column_append_null(c, err);
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN: {
        bool b = d->v.b;
        return em_column_append_fixed(c, &b, err);
    }
    case EM_TYPE_BYTE: {
        int8_t x = (int8_t)d->v.i64;
        return em_column_append_fixed(c, &x, err);
    }
    case EM_TYPE_SHORT: {
        int16_t x = (int16_t)d->v.i64;
        return em_column_append_fixed(c, &x, err);
    }
    case EM_TYPE_INT:
    case EM_TYPE_DATE: {
        int32_t x = (int32_t)d->v.i64;
        return em_column_append_fixed(c, &x, err);
    }
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return em_column_append_fixed(c, &d->v.i64, err);
    case EM_TYPE_FLOAT: {
        float x = (float)d->v.f64;
        return em_column_append_fixed(c, &x, err);
    }
    case EM_TYPE_DOUBLE:
        return em_column_append_fixed(c, &d->v.f64, err);
    case EM_TYPE_DECIMAL:
        return em_column_append_fixed(c, &d->v.dec, err);
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY:
        return em_column_append_bytes(c, d->v.str.ptr, d->v.str.len, err);
    default:
        return EM_FAIL(err, EM_ERR_TYPE, "append_datum: column of an unknown type");
    }
}

em_status em_datum_copy(em_datum *dst, const em_datum *src, em_type t, em_row_arena *arena,
                        em_error *err) {
    *dst = *src;
    if (src->is_null || !em_type_is_varlen(t))
        return EM_OK;
    const uint8_t *p = em_row_arena_copy(arena, src->v.str.ptr, src->v.str.len, err);
    if (!p)
        return err && err->code != EM_OK ? err->code : EM_ERR_NOMEM;
    dst->v.str.ptr = p;
    return EM_OK;
}

/* ------------------------------------------------------------------ ordering */

/* SQLOrderingUtil.compareDoubles: NaN above everything, -0.0 == 0.0. */
static int cmp_double(double a, double b) {
    bool an = isnan(a), bn = isnan(b);
    if (an || bn)
        return an && bn ? 0 : an ? 1 : -1;
    return a < b ? -1 : a > b ? 1 : 0;
}

int em_datum_compare(const em_datum *a, const em_datum *b, em_type t) {
    switch (t.id) {
    case EM_TYPE_NULL:
        return 0;
    case EM_TYPE_BOOLEAN:
        return (int)a->v.b - (int)b->v.b;
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE:
        return cmp_double(a->v.f64, b->v.f64);
    case EM_TYPE_DECIMAL:
        return a->v.dec < b->v.dec ? -1 : a->v.dec > b->v.dec;
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        int32_t n = a->v.str.len < b->v.str.len ? a->v.str.len : b->v.str.len;
        int c = n > 0 ? memcmp(a->v.str.ptr, b->v.str.ptr, (size_t)n) : 0;
        if (c != 0)
            return c < 0 ? -1 : 1;
        return a->v.str.len < b->v.str.len ? -1 : a->v.str.len > b->v.str.len;
    }
    default:
        return a->v.i64 < b->v.i64 ? -1 : a->v.i64 > b->v.i64;
    }
}

bool em_datum_equal_grouping(const em_datum *a, const em_datum *b, em_type t) {
    if (a->is_null || b->is_null)
        return a->is_null && b->is_null;
    return em_datum_compare(a, b, t) == 0;
}

uint32_t em_datum_murmur3(const em_datum *d, em_type t, uint32_t seed) {
    int32_t h = (int32_t)seed;
    if (d->is_null)
        return seed;
    switch (t.id) {
    case EM_TYPE_NULL:
        return seed;
    case EM_TYPE_BOOLEAN:
        return (uint32_t)em_murmur3_int(d->v.b ? 1 : 0, h);
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        return (uint32_t)em_murmur3_int((int32_t)d->v.i64, h);
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return (uint32_t)em_murmur3_long(d->v.i64, h);
    case EM_TYPE_FLOAT:
        return (uint32_t)em_murmur3_float((float)d->v.f64, h);
    case EM_TYPE_DOUBLE:
        return (uint32_t)em_murmur3_double(d->v.f64, h);
    case EM_TYPE_DECIMAL:
        return (uint32_t)em_murmur3_decimal(d->v.dec, t.precision, h);
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY:
        return (uint32_t)em_murmur3_bytes(d->v.str.ptr, d->v.str.len, h);
    default:
        return seed;
    }
}
