/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thrift compact protocol reader.
 *
 * The compact protocol encodes a struct as a sequence of field headers, each
 * one byte whose high nibble is the delta from the previous field id (0 means
 * "an explicit zigzag i16 id follows") and whose low nibble is the type, up
 * to a STOP byte. Integers are zigzag LEB128 varints, binaries are a varint
 * length and the bytes, lists have a one-byte header (size in the high nibble,
 * 15 meaning "a varint size follows", element type in the low nibble), maps a
 * varint size then a key/value type byte, booleans live in the field type
 * itself (TRUE = 1, FALSE = 2) except inside collections, where they take one
 * byte each.
 *
 * Invariants: pos never exceeds len; every length and count is checked
 * against the bytes that remain before it is used, so hostile counts cannot
 * drive allocations or loops beyond the input's size; recursion (skip) and
 * struct nesting are bounded by EM_TC_MAX_DEPTH. Failures name the absolute
 * file offset (base + pos).
 */
#include "io/parquet/thrift_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void em_tc_init(em_tc_reader *r, const uint8_t *p, int64_t len, int64_t base, const char *path,
                em_error *err) {
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->base = base;
    r->path = path ? path : "<parquet>";
    r->depth = 0;
    r->err = err;
}

em_status em_tc_corrupt(em_tc_reader *r, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return EM_FAIL(r->err, EM_ERR_CORRUPT, "%s: byte %lld: %s", r->path,
                   (long long)(r->base + r->pos), what);
}

static em_status tc_byte(em_tc_reader *r, uint8_t *out) {
    if (r->pos >= r->len)
        return em_tc_corrupt(r, "thrift data ends unexpectedly");
    *out = r->p[r->pos++];
    return EM_OK;
}

em_status em_tc_varint(em_tc_reader *r, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->pos >= r->len)
            return em_tc_corrupt(r, "thrift varint runs past the end of the data");
        uint8_t b = r->p[r->pos++];
        if (shift == 63 && (b & 0x7e))
            return em_tc_corrupt(r, "thrift varint overflows 64 bits");
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return EM_OK;
        }
    }
    return em_tc_corrupt(r, "thrift varint longer than 10 bytes");
}

static em_status tc_zigzag(em_tc_reader *r, int64_t *out) {
    uint64_t u = 0;
    EM_TRY(em_tc_varint(r, &u));
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return EM_OK;
}

em_status em_tc_struct_begin(em_tc_reader *r) {
    if (++r->depth > EM_TC_MAX_DEPTH)
        return em_tc_corrupt(r, "thrift structures nested deeper than %d", EM_TC_MAX_DEPTH);
    return EM_OK;
}

void em_tc_struct_end(em_tc_reader *r) { r->depth--; }

em_status em_tc_field_next(em_tc_reader *r, int16_t *last_id, em_tc_field *f) {
    uint8_t b = 0;
    EM_TRY(tc_byte(r, &b));
    f->type = b & 0x0f;
    if (f->type == EM_TC_STOP) {
        f->id = 0;
        return EM_OK;
    }
    if (f->type > EM_TC_STRUCT) {
        r->pos--;
        return em_tc_corrupt(r, "unknown thrift field type %d", f->type);
    }
    int delta = b >> 4;
    if (delta) {
        f->id = (int16_t)(*last_id + delta);
    } else {
        int64_t id = 0;
        EM_TRY(tc_zigzag(r, &id));
        if (id < INT16_MIN || id > INT16_MAX)
            return em_tc_corrupt(r, "thrift field id %lld out of range", (long long)id);
        f->id = (int16_t)id;
    }
    *last_id = f->id;
    return EM_OK;
}

em_status em_tc_read_bool(em_tc_reader *r, int type, bool *out) {
    if (type == EM_TC_TRUE || type == EM_TC_FALSE) {
        *out = type == EM_TC_TRUE;
        return EM_OK;
    }
    return em_tc_corrupt(r, "expected a thrift boolean, found type %d", type);
}

em_status em_tc_read_i64(em_tc_reader *r, int type, int64_t *out) {
    if (type == EM_TC_I8) {
        uint8_t b = 0;
        EM_TRY(tc_byte(r, &b));
        *out = (int8_t)b;
        return EM_OK;
    }
    if (type != EM_TC_I16 && type != EM_TC_I32 && type != EM_TC_I64)
        return em_tc_corrupt(r, "expected a thrift integer, found type %d", type);
    return tc_zigzag(r, out);
}

em_status em_tc_read_i32(em_tc_reader *r, int type, int32_t *out) {
    int64_t start = r->pos, v = 0;
    EM_TRY(em_tc_read_i64(r, type, &v));
    if (v < INT32_MIN || v > INT32_MAX) {
        r->pos = start;
        return em_tc_corrupt(r, "thrift i32 value %lld out of range", (long long)v);
    }
    *out = (int32_t)v;
    return EM_OK;
}

em_status em_tc_read_binary(em_tc_reader *r, int type, const uint8_t **ptr, int32_t *len) {
    if (type != EM_TC_BINARY)
        return em_tc_corrupt(r, "expected a thrift binary, found type %d", type);
    uint64_t n = 0;
    int64_t start = r->pos;
    EM_TRY(em_tc_varint(r, &n));
    if (n > (uint64_t)(r->len - r->pos) || n > INT32_MAX) {
        r->pos = start;
        return em_tc_corrupt(r, "thrift binary of %llu bytes runs past the end of the data",
                             (unsigned long long)n);
    }
    *ptr = r->p + r->pos;
    *len = (int32_t)n;
    r->pos += (int64_t)n;
    return EM_OK;
}

em_status em_tc_list_begin(em_tc_reader *r, int type, int *elem_type, int32_t *count) {
    if (type != EM_TC_LIST && type != EM_TC_SET)
        return em_tc_corrupt(r, "expected a thrift list, found type %d", type);
    int64_t start = r->pos;
    uint8_t b = 0;
    EM_TRY(tc_byte(r, &b));
    uint64_t n = b >> 4;
    if (n == 15)
        EM_TRY(em_tc_varint(r, &n));
    *elem_type = b & 0x0f;
    /* Every element takes at least one byte, except booleans packed in the header
     * (not used by the compact protocol for lists), so a count above the remaining
     * bytes is corruption; this bounds loops and allocations by the input size. */
    if (n > (uint64_t)(r->len - r->pos) || n > INT32_MAX) {
        r->pos = start;
        return em_tc_corrupt(r, "thrift list of %llu elements exceeds the remaining %lld bytes",
                             (unsigned long long)n, (long long)(r->len - r->pos));
    }
    if (*elem_type == EM_TC_STOP || *elem_type > EM_TC_STRUCT) {
        r->pos = start;
        return em_tc_corrupt(r, "unknown thrift list element type %d", *elem_type);
    }
    if (++r->depth > EM_TC_MAX_DEPTH)
        return em_tc_corrupt(r, "thrift structures nested deeper than %d", EM_TC_MAX_DEPTH);
    *count = (int32_t)n;
    return EM_OK;
}

void em_tc_list_end(em_tc_reader *r) { r->depth--; }

/* Reads a collection element that is a boolean: one byte inside lists and maps. */
static em_status tc_skip_elem(em_tc_reader *r, int type) {
    if (type == EM_TC_TRUE || type == EM_TC_FALSE) {
        uint8_t b = 0;
        return tc_byte(r, &b);
    }
    return em_tc_skip(r, type);
}

em_status em_tc_skip(em_tc_reader *r, int type) {
    uint64_t u = 0;
    switch (type) {
    case EM_TC_TRUE:
    case EM_TC_FALSE:
        return EM_OK;
    case EM_TC_I8: {
        uint8_t b = 0;
        return tc_byte(r, &b);
    }
    case EM_TC_I16:
    case EM_TC_I32:
    case EM_TC_I64:
        return em_tc_varint(r, &u);
    case EM_TC_DOUBLE:
        if (r->len - r->pos < 8)
            return em_tc_corrupt(r, "thrift double runs past the end of the data");
        r->pos += 8;
        return EM_OK;
    case EM_TC_BINARY: {
        const uint8_t *p;
        int32_t n = 0;
        return em_tc_read_binary(r, type, &p, &n);
    }
    case EM_TC_LIST:
    case EM_TC_SET: {
        int et;
        int32_t n = 0;
        EM_TRY(em_tc_list_begin(r, type, &et, &n));
        for (int32_t i = 0; i < n; i++)
            EM_TRY(tc_skip_elem(r, et));
        em_tc_list_end(r);
        return EM_OK;
    }
    case EM_TC_MAP: {
        int64_t start = r->pos;
        EM_TRY(em_tc_varint(r, &u));
        if (u == 0)
            return EM_OK;
        uint8_t kv = 0;
        EM_TRY(tc_byte(r, &kv));
        if (u > (uint64_t)(r->len - r->pos)) {
            r->pos = start;
            return em_tc_corrupt(r, "thrift map of %llu entries exceeds the remaining bytes",
                                 (unsigned long long)u);
        }
        int kt = kv >> 4, vt = kv & 0x0f;
        if (kt == EM_TC_STOP || kt > EM_TC_STRUCT || vt == EM_TC_STOP || vt > EM_TC_STRUCT)
            return em_tc_corrupt(r, "unknown thrift map types %d/%d", kt, vt);
        if (++r->depth > EM_TC_MAX_DEPTH)
            return em_tc_corrupt(r, "thrift structures nested deeper than %d", EM_TC_MAX_DEPTH);
        for (uint64_t i = 0; i < u; i++) {
            EM_TRY(tc_skip_elem(r, kt));
            EM_TRY(tc_skip_elem(r, vt));
        }
        r->depth--;
        return EM_OK;
    }
    case EM_TC_STRUCT: {
        EM_TRY(em_tc_struct_begin(r));
        int16_t last = 0;
        for (;;) {
            em_tc_field f;
            EM_TRY(em_tc_field_next(r, &last, &f));
            if (f.type == EM_TC_STOP)
                break;
            EM_TRY(em_tc_skip(r, f.type));
        }
        em_tc_struct_end(r);
        return EM_OK;
    }
    default:
        return em_tc_corrupt(r, "unknown thrift type %d", type);
    }
}
