/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Arrow C Data Interface export and import (contract in arrow.h).
 *
 * Export. Each exported ArrowArray owns a small private block holding one
 * reference per column buffer (em_buffer_ref), the buffer pointer array and,
 * for the struct parent, the children. release() drops the references and
 * marks the struct released by clearing its release pointer; a parent
 * releases only the children still carrying a release callback, since the
 * consumer may have moved some out. Schemas are exported the same way with
 * owned copies of format and name strings.
 *
 * Import. The ArrowArray is moved into a heap "holder" with an atomic count
 * of the Ember buffers that view its memory; each such buffer is an
 * em_buffer_wrap whose release callback drops one count, and the last one
 * calls the producer's release. Everything is validated before anything is
 * moved, and a failure after the move hands the array back untouched, so the
 * caller's ownership is simple: on success it is ours, on failure theirs.
 * Columns at a non-zero offset are viewed through temporary non-owning
 * wraps and gathered with em_column_append_rows into fresh Ember memory.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/arrow.h"

/* ---- formats ------------------------------------------------------------------------------ */

const char *em_arrow_format(em_type t, char *buf, size_t cap) {
    const char *f = NULL;
    switch (t.id) {
    case EM_TYPE_NULL: f = "n"; break;
    case EM_TYPE_BOOLEAN: f = "b"; break;
    case EM_TYPE_BYTE: f = "c"; break;
    case EM_TYPE_SHORT: f = "s"; break;
    case EM_TYPE_INT: f = "i"; break;
    case EM_TYPE_LONG: f = "l"; break;
    case EM_TYPE_FLOAT: f = "f"; break;
    case EM_TYPE_DOUBLE: f = "g"; break;
    case EM_TYPE_STRING: f = "u"; break;
    case EM_TYPE_BINARY: f = "z"; break;
    case EM_TYPE_DATE: f = "tdD"; break;
    case EM_TYPE_TIMESTAMP: f = "tsu:UTC"; break;
    case EM_TYPE_TIMESTAMP_NTZ: f = "tsu:"; break;
    case EM_TYPE_DECIMAL: snprintf(buf, cap, "d:%d,%d", t.precision, t.scale); return buf;
    default: f = "?"; break;
    }
    snprintf(buf, cap, "%s", f);
    return buf;
}

/* How an imported child's buffers relate to Ember's layout: NATIVE ones are
 * Ember's own layout (zero-copy possible), the others are converted row by
 * row into fresh columns. */
enum import_kind {
    KIND_NATIVE = 0,
    KIND_TS_SECONDS,  /* "tss:": int64 seconds */
    KIND_TS_MILLIS,   /* "tsm:" */
    KIND_TS_NANOS,    /* "tsn:" */
    KIND_DATE_MILLIS, /* "tdm": int64 milliseconds */
    KIND_LARGE,       /* "U" / "Z": int64 offsets */
    KIND_VIEW,        /* "vu" / "vz": 16-byte views over variadic buffers */
};

static em_status parse_format_kind(const char *format, em_type *out, int *kind, em_error *err) {
    static const struct {
        const char *f;
        em_type_id id;
        int kind;
    } simple[] = {
        {"n", EM_TYPE_NULL, 0},
        {"b", EM_TYPE_BOOLEAN, 0},
        {"c", EM_TYPE_BYTE, 0},
        {"s", EM_TYPE_SHORT, 0},
        {"i", EM_TYPE_INT, 0},
        {"l", EM_TYPE_LONG, 0},
        {"f", EM_TYPE_FLOAT, 0},
        {"g", EM_TYPE_DOUBLE, 0},
        {"u", EM_TYPE_STRING, 0},
        {"z", EM_TYPE_BINARY, 0},
        {"tdD", EM_TYPE_DATE, 0},
        {"tdm", EM_TYPE_DATE, KIND_DATE_MILLIS},
        {"U", EM_TYPE_STRING, KIND_LARGE},
        {"Z", EM_TYPE_BINARY, KIND_LARGE},
        {"vu", EM_TYPE_STRING, KIND_VIEW},
        {"vz", EM_TYPE_BINARY, KIND_VIEW},
    };
    *kind = KIND_NATIVE;
    if (!format)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow schema without a format string");
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (strcmp(format, simple[i].f) == 0) {
            *out = em_type_make(simple[i].id);
            *kind = simple[i].kind;
            return EM_OK;
        }
    }
    if (strncmp(format, "ts", 2) == 0 && format[2] && format[3] == ':') {
        static const char units[] = "smun";
        static const int kinds[] = {KIND_TS_SECONDS, KIND_TS_MILLIS, KIND_NATIVE, KIND_TS_NANOS};
        const char *u = strchr(units, format[2]);
        if (u) {
            /* no zone: wall-clock time (NTZ); any zone: UTC instants */
            *out = em_type_make(format[4] ? EM_TYPE_TIMESTAMP : EM_TYPE_TIMESTAMP_NTZ);
            *kind = kinds[u - units];
            return EM_OK;
        }
    }
    if (strncmp(format, "d:", 2) == 0) {
        int p = 0, sc = 0, bits = 128, n = 0;
        int got = sscanf(format + 2, "%d,%d%n,%d%n", &p, &sc, &n, &bits, &n);
        if (got >= 2 && format[2 + n] == '\0') {
            if (bits != 128)
                return EM_FAIL(err, EM_ERR_UNSUPPORTED, "Arrow decimal of %d bits ('%s')", bits,
                               format);
            if (p < 1 || p > EM_DECIMAL_MAX_PRECISION || sc < 0 || sc > p)
                return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                               "Arrow decimal '%s' outside Spark's decimal(1..38, 0..p)", format);
            *out = em_type_decimal(p, sc);
            return EM_OK;
        }
        return EM_FAIL(err, EM_ERR_INVALID, "malformed Arrow decimal format '%s'", format);
    }
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "Arrow format '%s' has no Ember type", format);
}

em_status em_arrow_parse_format(const char *format, em_type *out, em_error *err) {
    int kind;
    return parse_format_kind(format, out, &kind, err);
}

/* ---- export: arrays ----------------------------------------------------------------------- */

typedef struct export_array {
    em_buffer *refs[3];       /* owned references keeping the bytes alive */
    const void *ptrs[3];      /* ArrowArray.buffers */
    struct ArrowArray *kids;  /* struct parent: the children, owned */
    struct ArrowArray **kidp; /* struct parent: pointers to them */
    int64_t n_kids;
} export_array;

static void export_array_release(struct ArrowArray *a) {
    if (!a || !a->release)
        return;
    export_array *p = a->private_data;
    for (int64_t i = 0; i < p->n_kids; i++)
        if (p->kids[i].release)
            p->kids[i].release(&p->kids[i]);
    for (int i = 0; i < 3; i++)
        em_buffer_unref(p->refs[i]);
    em_pool_free(NULL, p->kids, 0);
    em_pool_free(NULL, p->kidp, 0);
    em_pool_free(NULL, p, 0);
    a->release = NULL;
    a->private_data = NULL;
}

em_status em_arrow_export_column(const em_column *c, struct ArrowArray *out, em_error *err) {
    export_array *p = em_pool_calloc(NULL, sizeof *p, err);
    if (!p)
        return err ? err->code : EM_ERR_NOMEM;
    em_column counted = *c; /* null_count caches into the copy; c stays const */
    memset(out, 0, sizeof *out);
    out->length = c->length;
    out->null_count = em_column_null_count(&counted);
    out->offset = 0;
    int nb = 0;
    if (c->type.id != EM_TYPE_NULL) {
        p->refs[0] = out->null_count > 0 ? em_buffer_ref(c->validity) : NULL;
        p->refs[1] = em_buffer_ref(c->values);
        nb = 2;
        if (em_type_is_varlen(c->type)) {
            p->refs[2] = em_buffer_ref(c->data);
            nb = 3;
        }
    }
    for (int i = 0; i < nb; i++)
        p->ptrs[i] = p->refs[i] ? p->refs[i]->data : NULL;
    out->n_buffers = nb;
    out->buffers = p->ptrs;
    out->private_data = p;
    out->release = export_array_release;
    return EM_OK;
}

em_status em_arrow_export_batch(const em_batch *b, struct ArrowArray *out, em_error *err) {
    const em_column *cols = b->cols;
    em_column *taken = NULL;
    em_status st = EM_OK;
    int n = b->n_cols;
    if (b->sel) { /* gather the selected rows into private columns first */
        taken = em_pool_calloc(NULL, (int64_t)(n > 0 ? n : 1) * (int64_t)sizeof *taken, err);
        if (!taken)
            return err ? err->code : EM_ERR_NOMEM;
        for (int i = 0; i < n && st == EM_OK; i++)
            st = em_column_take(&b->cols[i], b->sel, b->n_sel, b->pool, &taken[i], err);
        cols = taken;
    }
    export_array *p = NULL;
    if (st == EM_OK) {
        p = em_pool_calloc(NULL, sizeof *p, err);
        if (!p)
            st = err ? err->code : EM_ERR_NOMEM;
    }
    if (st == EM_OK && n > 0) {
        p->kids = em_pool_calloc(NULL, (int64_t)n * (int64_t)sizeof *p->kids, err);
        p->kidp = p->kids ? em_pool_calloc(NULL, (int64_t)n * (int64_t)sizeof *p->kidp, err) : NULL;
        if (!p->kidp)
            st = err ? err->code : EM_ERR_NOMEM;
    }
    for (int i = 0; i < n && st == EM_OK; i++) {
        st = em_arrow_export_column(&cols[i], &p->kids[i], err);
        if (st == EM_OK) {
            p->kidp[i] = &p->kids[i];
            p->n_kids = i + 1;
        }
    }
    if (taken) {
        for (int i = 0; i < n; i++)
            em_column_reset(&taken[i]); /* the children hold their own references */
        em_pool_free(NULL, taken, 0);
    }
    if (st != EM_OK) {
        if (p) {
            struct ArrowArray tmp = {.release = export_array_release, .private_data = p};
            export_array_release(&tmp);
        }
        return st;
    }
    memset(out, 0, sizeof *out);
    out->length = em_batch_rows(b);
    out->null_count = 0;
    out->n_buffers = 1; /* the struct's validity: none */
    out->buffers = p->ptrs;
    out->n_children = n;
    out->children = p->kidp;
    out->private_data = p;
    out->release = export_array_release;
    return EM_OK;
}

/* ---- export: schemas ---------------------------------------------------------------------- */

typedef struct export_schema {
    char format[32];
    char *name;                /* owned */
    struct ArrowSchema *kids;  /* owned */
    struct ArrowSchema **kidp; /* owned */
    int64_t n_kids;
} export_schema;

static void export_schema_release(struct ArrowSchema *s) {
    if (!s || !s->release)
        return;
    export_schema *p = s->private_data;
    for (int64_t i = 0; i < p->n_kids; i++)
        if (p->kids[i].release)
            p->kids[i].release(&p->kids[i]);
    em_pool_free(NULL, p->name, 0);
    em_pool_free(NULL, p->kids, 0);
    em_pool_free(NULL, p->kidp, 0);
    em_pool_free(NULL, p, 0);
    s->release = NULL;
    s->private_data = NULL;
}

static em_status export_schema_node(struct ArrowSchema *out, const char *format, const char *name,
                                    int64_t flags, int64_t n_kids, em_error *err) {
    export_schema *p = em_pool_calloc(NULL, sizeof *p, err);
    if (!p)
        return err ? err->code : EM_ERR_NOMEM;
    snprintf(p->format, sizeof p->format, "%s", format);
    size_t len = strlen(name);
    p->name = em_pool_alloc(NULL, (int64_t)len + 1, err);
    if (p->name && n_kids > 0) {
        p->kids = em_pool_calloc(NULL, n_kids * (int64_t)sizeof *p->kids, err);
        p->kidp = p->kids ? em_pool_calloc(NULL, n_kids * (int64_t)sizeof *p->kidp, err) : NULL;
    }
    if (!p->name || (n_kids > 0 && !p->kidp)) {
        em_pool_free(NULL, p->name, 0);
        em_pool_free(NULL, p->kids, 0);
        em_pool_free(NULL, p, 0);
        return err ? err->code : EM_ERR_NOMEM;
    }
    memcpy(p->name, name, len + 1);
    memset(out, 0, sizeof *out);
    out->format = p->format;
    out->name = p->name;
    out->flags = flags;
    out->n_children = n_kids;
    out->children = p->kidp;
    out->private_data = p;
    out->release = export_schema_release;
    return EM_OK;
}

em_status em_arrow_export_schema(const em_schema *schema, struct ArrowSchema *out, em_error *err) {
    EM_TRY(export_schema_node(out, "+s", "", 0, schema->n_fields, err));
    export_schema *p = out->private_data;
    for (int i = 0; i < schema->n_fields; i++) {
        const em_field *f = &schema->fields[i];
        char fmt[32];
        em_arrow_format(f->type, fmt, sizeof fmt);
        em_status st = export_schema_node(&p->kids[i], fmt, f->name ? f->name : "",
                                          f->nullable ? ARROW_FLAG_NULLABLE : 0, 0, err);
        if (st != EM_OK) {
            export_schema_release(out);
            return st;
        }
        p->kidp[i] = &p->kids[i];
        p->n_kids = i + 1;
    }
    return EM_OK;
}

/* ---- import ------------------------------------------------------------------------------- */

em_status em_arrow_import_schema(const struct ArrowSchema *schema, em_schema *out, em_error *err) {
    if (!schema || !schema->release)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow schema is released or missing");
    if (!schema->format || strcmp(schema->format, "+s") != 0)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "Arrow schema of format '%s': a batch must be a struct ('+s')",
                       schema->format ? schema->format : "(null)");
    if (schema->n_children < 0 || schema->n_children > INT32_MAX ||
        (schema->n_children > 0 && !schema->children))
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow struct schema with bad children (%lld)",
                       (long long)schema->n_children);
    em_schema s;
    EM_TRY(em_schema_init(&s, (int)schema->n_children, err));
    for (int i = 0; i < s.n_fields; i++) {
        const struct ArrowSchema *c = schema->children[i];
        em_type t;
        em_status st = c ? EM_OK : EM_FAIL(err, EM_ERR_INVALID, "Arrow child schema %d is NULL", i);
        if (st == EM_OK && c->dictionary)
            st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "dictionary-encoded Arrow column '%s'",
                         c->name ? c->name : "");
        if (st == EM_OK)
            st = em_arrow_parse_format(c->format, &t, err);
        if (st == EM_OK)
            st = em_schema_set(&s, i, c->name ? c->name : "", t,
                               (c->flags & ARROW_FLAG_NULLABLE) != 0, err);
        if (st != EM_OK) {
            if (c)
                em_error_prefix(err, "Arrow column %d ('%s')", i, c->name ? c->name : "");
            em_schema_reset(&s);
            return st;
        }
    }
    *out = s;
    return EM_OK;
}

typedef struct import_holder {
    struct ArrowArray array; /* moved from the caller */
    atomic_int refs;
} import_holder;

static void holder_unref(import_holder *h) {
    if (atomic_fetch_sub(&h->refs, 1) == 1) {
        if (h->array.release)
            h->array.release(&h->array);
        em_pool_free(NULL, h, 0);
    }
}

static void wrapped_release(em_buffer *b) { holder_unref(b->private_data); }
static void view_release(em_buffer *b) { (void)b; }

/* Wraps foreign bytes: owned by holder (counted) or, when holder is NULL, a
 * temporary view that must not outlive the import call. */
static em_status wrap(const void *data, int64_t size, import_holder *h, em_buffer **out,
                      em_error *err) {
    EM_TRY(em_buffer_wrap((void *)data, size, h ? wrapped_release : view_release, h, out, err));
    if (h)
        atomic_fetch_add(&h->refs, 1);
    return EM_OK;
}

/* Number of buffers a child of type t (not Null) and import kind must carry (a view
 * array has at least this many: validity, views, its variadic data buffers,
 * then the sizes of those). */
static int64_t expected_buffers(em_type t, int kind) {
    if (kind == KIND_VIEW || kind == KIND_LARGE || (kind == KIND_NATIVE && em_type_is_varlen(t)))
        return 3;
    return 2;
}

static bool foreign_valid(const struct ArrowArray *a, int64_t r) {
    const void *v = a->null_count != 0 && a->buffers ? a->buffers[0] : NULL;
    return !v || em_bit_get(v, r);
}

/* Checks one child array against its type before anything is built. */
static em_status validate_child(const struct ArrowArray *a, em_type t, int kind, int64_t need_rows,
                                int i, em_error *err) {
    if (!a || !a->release)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d is missing or released", i);
    if (t.id == EM_TYPE_NULL) {
        /* A Null array has no buffers, so nothing is read from it and its length
         * need not cover the batch: Spark's (Arrow Java's export of a NullVector)
         * comes with length 0 whatever the batch's rows. import_child makes the
         * batch's rows all null. */
        if (a->length < 0 || a->offset < 0 || a->n_buffers > 1 || a->n_children != 0 ||
            a->dictionary)
            return EM_FAIL(err, EM_ERR_INVALID,
                           "Arrow column %d: a Null array of length %lld at offset %lld with %lld "
                           "buffers and %lld children",
                           i, (long long)a->length, (long long)a->offset, (long long)a->n_buffers,
                           (long long)a->n_children);
        return EM_OK;
    }
    if (a->length < 0 || a->offset < 0 || a->length < need_rows || a->length > INT32_MAX ||
        a->offset > INT32_MAX)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "Arrow column %d: length %lld at offset %lld cannot hold %lld rows", i,
                       (long long)a->length, (long long)a->offset, (long long)need_rows);
    if (a->null_count < -1 || a->null_count > a->length)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: null_count %lld of %lld rows", i,
                       (long long)a->null_count, (long long)a->length);
    if (a->n_children != 0 || a->dictionary)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "Arrow column %d: nested or dictionary array", i);
    int64_t want = expected_buffers(t, kind);
    bool count_ok = kind == KIND_VIEW ? a->n_buffers >= want : a->n_buffers == want;
    if (!count_ok)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: %lld buffers, expected %lld", i,
                       (long long)a->n_buffers, (long long)want);
    if (want > 0 && !a->buffers)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: NULL buffer array", i);
    int64_t end = a->offset + a->length;
    if (want == 0 || end == 0)
        return EM_OK;
    if (a->null_count > 0 && !a->buffers[0])
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: %lld nulls but no validity buffer", i,
                       (long long)a->null_count);
    for (int64_t k = 1; k < a->n_buffers; k++)
        if (!a->buffers[k])
            return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: buffer %lld is NULL", i,
                           (long long)k);
    if (kind == KIND_NATIVE && want == 3) {
        const int32_t *off = a->buffers[1];
        if (off[a->offset] < 0)
            return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: negative string offset", i);
        for (int64_t r = a->offset; r < end; r++)
            if (off[r + 1] < off[r])
                return EM_FAIL(err, EM_ERR_INVALID,
                               "Arrow column %d: string offsets decrease at row %lld", i,
                               (long long)(r - a->offset));
    } else if (kind == KIND_LARGE) {
        const uint8_t *ob = a->buffers[1];
        int64_t prev;
        memcpy(&prev, ob + 8 * a->offset, 8);
        if (prev < 0)
            return EM_FAIL(err, EM_ERR_INVALID, "Arrow column %d: negative string offset", i);
        for (int64_t r = a->offset; r < end; r++) {
            int64_t next;
            memcpy(&next, ob + 8 * (r + 1), 8);
            if (next < prev || next - prev > INT32_MAX)
                return EM_FAIL(err, EM_ERR_INVALID,
                               "Arrow column %d: bad large-string offsets at row %lld", i,
                               (long long)(r - a->offset));
            prev = next;
        }
    } else if (kind == KIND_VIEW) {
        int64_t n_data = a->n_buffers - 3;
        const uint8_t *views = a->buffers[1];
        const uint8_t *sizes = a->buffers[a->n_buffers - 1];
        for (int64_t r = a->offset; r < end; r++) {
            if (!foreign_valid(a, r))
                continue;
            int32_t len, idx, off;
            memcpy(&len, views + 16 * r, 4);
            memcpy(&idx, views + 16 * r + 8, 4);
            memcpy(&off, views + 16 * r + 12, 4);
            int64_t size = 0;
            if (len > 12 && idx >= 0 && idx < n_data)
                memcpy(&size, sizes + 8 * idx, 8);
            if (len < 0 ||
                (len > 12 && (idx < 0 || idx >= n_data || off < 0 || (int64_t)off + len > size)))
                return EM_FAIL(err, EM_ERR_INVALID,
                               "Arrow column %d: string view of row %lld points outside its "
                               "buffers",
                               i, (long long)(r - a->offset));
        }
    }
    return EM_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Converts one valid foreign value at physical row r and appends it. */
static em_status convert_value(const struct ArrowArray *a, em_type t, int kind, int64_t r,
                               em_column *col, em_error *err) {
    const uint8_t *b1 = a->buffers[1];
    switch (kind) {
    case KIND_TS_SECONDS:
    case KIND_TS_MILLIS:
    case KIND_TS_NANOS:
    case KIND_DATE_MILLIS: {
        int64_t v, us;
        memcpy(&v, b1 + 8 * r, 8);
        if (kind == KIND_DATE_MILLIS) {
            int64_t days = floor_div(v, INT64_C(86400000));
            if (days < INT32_MIN || days > INT32_MAX)
                return EM_FAIL(err, EM_ERR_OVERFLOW, "date of %lld ms is out of range",
                               (long long)v);
            int32_t d = (int32_t)days;
            return em_column_append_fixed(col, &d, err);
        }
        if (kind == KIND_TS_NANOS)
            us = floor_div(v, 1000);
        else if (__builtin_mul_overflow(v, kind == KIND_TS_SECONDS ? 1000000 : 1000, &us))
            return EM_FAIL(err, EM_ERR_OVERFLOW,
                           "timestamp %lld overflows microseconds at row %lld", (long long)v,
                           (long long)(r - a->offset));
        return em_column_append_fixed(col, &us, err);
    }
    case KIND_LARGE: {
        int64_t o0, o1;
        memcpy(&o0, b1 + 8 * r, 8);
        memcpy(&o1, b1 + 8 * (r + 1), 8);
        return em_column_append_bytes(col, (const uint8_t *)a->buffers[2] + o0, (int32_t)(o1 - o0),
                                      err);
    }
    case KIND_VIEW: {
        const uint8_t *view = b1 + 16 * r;
        int32_t len, idx, off;
        memcpy(&len, view, 4);
        if (len <= 12)
            return em_column_append_bytes(col, view + 4, len, err);
        memcpy(&idx, view + 8, 4);
        memcpy(&off, view + 12, 4);
        return em_column_append_bytes(col, (const uint8_t *)a->buffers[2 + idx] + off, len, err);
    }
    default: break;
    }
    (void)t;
    return EM_FAIL(err, EM_ERR_INTERNAL, "no conversion for Arrow import kind %d", kind);
}

/* Builds a column from a child whose layout differs from Ember's. */
static em_status import_convert(const struct ArrowArray *a, em_type t, int kind, int64_t first,
                                int64_t rows, em_pool *pool, em_column *col, em_error *err) {
    em_status st = em_column_init(col, t, rows, pool, err);
    for (int64_t r = first; r < first + rows && st == EM_OK; r++)
        st = foreign_valid(a, r) ? convert_value(a, t, kind, r, col, err)
                                 : em_column_append_null(col, err);
    if (st != EM_OK)
        em_column_reset(col);
    return st;
}

/* Builds column i from child array a: rows [skip, skip + rows) of its
 * logical contents, where skip is the parent struct's offset. */
static em_status import_child(const struct ArrowArray *a, em_type t, int kind, int64_t skip,
                              int64_t rows, import_holder *h, em_pool *pool, em_column *col,
                              em_error *err) {
    int64_t first = a->offset + skip; /* first physical row */
    int64_t end = first + rows;
    if (kind != KIND_NATIVE)
        return import_convert(a, t, kind, first, rows, pool, col, err);
    const bool varlen = em_type_is_varlen(t);
    const void *const *bufs = (const void *const *)a->buffers;
    bool has_nulls = t.id != EM_TYPE_NULL && a->null_count != 0 && bufs && bufs[0];
    bool zero_copy = first == 0 && (!varlen || rows == 0 || ((const int32_t *)bufs[1])[0] == 0);
    import_holder *owner = zero_copy ? h : NULL; /* NULL: a temporary view, copied below */
    em_column v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.length = end;
    v.null_count = -1;
    em_status st = EM_OK;
    if (t.id == EM_TYPE_NULL) {
        /* No buffers in Arrow; Ember keeps an all-zero bitmap. */
        st = em_column_init(col, t, rows, pool, err);
        for (int64_t r = 0; r < rows && st == EM_OK; r++)
            st = em_column_append_null(col, err);
        if (st != EM_OK)
            em_column_reset(col);
        return st;
    }
    if (end == 0)
        return em_column_init(col, t, 0, pool, err);
    int64_t vbytes = t.id == EM_TYPE_BOOLEAN ? em_bitmap_bytes(end)
                     : varlen                ? (end + 1) * 4
                                             : end * em_type_width(t);
    if (has_nulls)
        st = wrap(bufs[0], em_bitmap_bytes(end), owner, &v.validity, err);
    if (st == EM_OK)
        st = wrap(bufs[1], vbytes, owner, &v.values, err);
    if (st == EM_OK && varlen)
        st = wrap(bufs[2], ((const int32_t *)bufs[1])[end], owner, &v.data, err);
    if (st != EM_OK) {
        em_column_reset(&v);
        return st;
    }
    if (zero_copy) {
        v.null_count = has_nulls ? a->null_count : 0;
        *col = v;
        return EM_OK;
    }
    /* Copy rows [first, end) out of the view. */
    int32_t *sel = em_pool_alloc(NULL, rows * (int64_t)sizeof(int32_t), err);
    if (!sel) {
        em_column_reset(&v);
        return err ? err->code : EM_ERR_NOMEM;
    }
    for (int64_t r = 0; r < rows; r++)
        sel[r] = (int32_t)(first + r);
    st = em_column_take(&v, sel, rows, pool, col, err);
    em_pool_free(NULL, sel, 0);
    em_column_reset(&v);
    return st;
}

/* True when a struct array marks any of its rows null. */
static bool struct_has_null_rows(const struct ArrowArray *a) {
    if (a->null_count == 0 || a->n_buffers < 1 || !a->buffers || !a->buffers[0])
        return false;
    if (a->null_count > 0)
        return true;
    for (int64_t r = a->offset; r < a->offset + a->length; r++)
        if (!em_bit_get(a->buffers[0], r))
            return true;
    return false;
}

em_status em_arrow_import_batch(struct ArrowArray *array, const struct ArrowSchema *schema,
                                em_pool *pool, em_batch **out, em_error *err) {
    *out = NULL;
    if (!array || !array->release)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow array is released or missing");
    em_schema s;
    EM_TRY(em_arrow_import_schema(schema, &s, err));
    em_status st = EM_OK;
    int *kinds = em_pool_calloc(NULL, (int64_t)(s.n_fields + 1) * (int64_t)sizeof(int), err);
    if (!kinds)
        st = err ? err->code : EM_ERR_NOMEM;
    for (int i = 0; i < s.n_fields && st == EM_OK; i++) {
        em_type t;
        st = parse_format_kind(schema->children[i]->format, &t, &kinds[i], err);
    }
    if (st == EM_OK) {
        if (array->n_children != s.n_fields || (s.n_fields > 0 && !array->children))
            st = EM_FAIL(err, EM_ERR_INVALID, "Arrow struct array has %lld children, schema has %d",
                         (long long)array->n_children, s.n_fields);
        else if (array->length < 0 || array->offset < 0)
            st = EM_FAIL(err, EM_ERR_INVALID, "Arrow struct array of length %lld at offset %lld",
                         (long long)array->length, (long long)array->offset);
        else if (struct_has_null_rows(array))
            st = EM_FAIL(err, EM_ERR_UNSUPPORTED,
                         "Arrow struct array with null rows (a batch's rows cannot be null)");
    }
    for (int i = 0; i < s.n_fields && st == EM_OK; i++) {
        st = validate_child(array->children[i], s.fields[i].type, kinds[i],
                            array->offset + array->length, i, err);
        if (st != EM_OK)
            em_error_prefix(err, "Arrow import of '%s'", s.fields[i].name);
    }
    em_batch *b = NULL;
    if (st == EM_OK)
        st = em_batch_create(&s, 0, pool, &b, err);
    em_schema_reset(&s);
    import_holder *h = NULL;
    if (st == EM_OK) {
        h = em_pool_alloc(NULL, sizeof *h, err);
        if (!h)
            st = err ? err->code : EM_ERR_NOMEM;
    }
    if (st != EM_OK) {
        em_batch_destroy(b);
        em_pool_free(NULL, kinds, 0);
        return st;
    }
    h->array = *array; /* move */
    atomic_init(&h->refs, 1);
    array->release = NULL;
    for (int i = 0; i < b->n_cols && st == EM_OK; i++) {
        em_column col;
        st = import_child(h->array.children[i], b->schema.fields[i].type, kinds[i], h->array.offset,
                          h->array.length, h, pool, &col, err);
        if (st == EM_OK) {
            em_column_reset(&b->cols[i]);
            b->cols[i] = col;
        } else {
            em_error_prefix(err, "Arrow import of '%s'", b->schema.fields[i].name);
        }
    }
    em_pool_free(NULL, kinds, 0);
    if (st != EM_OK) {
        em_batch_destroy(b); /* drops every wrap, so only our own count is left */
        *array = h->array;   /* hand the array back untouched */
        em_pool_free(NULL, h, 0);
        return st;
    }
    b->n_rows = h->array.length;
    holder_unref(h);
    *out = b;
    return EM_OK;
}

/* ---- streams ------------------------------------------------------------------------------ */

typedef struct stream_priv {
    em_schema schema;
    em_batch_source_fn next;
    void (*release_ctx)(void *ctx);
    void *ctx;
    bool done;
    em_error last; /* last error; msg[0] == 0 when none */
} stream_priv;

int em_arrow_errno(em_status s) {
    switch (s) {
    case EM_OK: return 0;
    case EM_ERR_NOMEM:
    case EM_ERR_OOM_BUDGET: return ENOMEM;
    case EM_ERR_INVALID:
    case EM_ERR_PARSE:
    case EM_ERR_BIND:
    case EM_ERR_TYPE: return EINVAL;
    case EM_ERR_UNSUPPORTED: return ENOSYS;
    case EM_ERR_CANCELLED: return ECANCELED;
    default: return EIO;
    }
}

static int stream_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    stream_priv *p = st->private_data;
    em_status s = em_arrow_export_schema(&p->schema, out, &p->last);
    return em_arrow_errno(s);
}

static int stream_get_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    stream_priv *p = st->private_data;
    memset(out, 0, sizeof *out);
    if (p->done)
        return 0; /* released array: the end */
    em_batch *b = NULL;
    em_error_clear(&p->last);
    em_status s = p->next(p->ctx, &b, &p->last);
    if (s == EM_DONE) {
        p->done = true;
        return 0;
    }
    if (s == EM_OK && b && b->n_cols != p->schema.n_fields)
        s = EM_FAIL(&p->last, EM_ERR_INVALID, "stream batch has %d columns, schema has %d",
                    b->n_cols, p->schema.n_fields);
    if (s == EM_OK && !b)
        s = EM_FAIL(&p->last, EM_ERR_INTERNAL, "batch source returned no batch");
    if (s == EM_OK)
        s = em_arrow_export_batch(b, out, &p->last);
    em_batch_destroy(b);
    return em_arrow_errno(s);
}

static const char *stream_last_error(struct ArrowArrayStream *st) {
    stream_priv *p = st->private_data;
    return p->last.msg[0] ? p->last.msg : NULL;
}

static void stream_release(struct ArrowArrayStream *st) {
    if (!st || !st->release)
        return;
    stream_priv *p = st->private_data;
    if (p->release_ctx)
        p->release_ctx(p->ctx);
    em_schema_reset(&p->schema);
    em_pool_free(NULL, p, 0);
    st->release = NULL;
    st->private_data = NULL;
}

em_status em_arrow_stream_from_batches(const em_schema *schema, em_batch_source_fn next,
                                       void (*release_ctx)(void *ctx), void *ctx,
                                       struct ArrowArrayStream *out, em_error *err) {
    stream_priv *p = em_pool_calloc(NULL, sizeof *p, err);
    if (!p)
        return err ? err->code : EM_ERR_NOMEM;
    em_status st = em_schema_copy(&p->schema, schema, err);
    if (st != EM_OK) {
        em_pool_free(NULL, p, 0);
        return st;
    }
    p->next = next;
    p->release_ctx = release_ctx;
    p->ctx = ctx;
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_last_error;
    out->release = stream_release;
    out->private_data = p;
    return EM_OK;
}

em_status em_arrow_stream_next_batch(struct ArrowArrayStream *stream,
                                     const struct ArrowSchema *schema, em_pool *pool,
                                     em_batch **out, em_error *err) {
    *out = NULL;
    if (!stream || !stream->release)
        return EM_FAIL(err, EM_ERR_INVALID, "Arrow stream is released or missing");
    struct ArrowArray a;
    memset(&a, 0, sizeof a);
    int rc = stream->get_next(stream, &a);
    if (rc != 0) {
        const char *msg = stream->get_last_error ? stream->get_last_error(stream) : NULL;
        return EM_FAIL(err, EM_ERR_IO, "Arrow stream get_next failed (errno %d): %s", rc,
                       msg ? msg : "no message");
    }
    if (!a.release)
        return EM_DONE;
    em_status st = em_arrow_import_batch(&a, schema, pool, out, err);
    if (st != EM_OK && a.release)
        a.release(&a);
    return st;
}
