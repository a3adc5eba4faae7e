/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parquet writer: flat schemas of Spark types, data pages v1, PLAIN and
 * RLE_DICTIONARY values, RLE definition levels, any codec of codec.c.
 *
 * Layout. The file is written without a name (O_TMPFILE in PATH's folder)
 * and, once the footer is on disk, em_pq_writer_close links it as
 * PATH.tmp-<pid>-<n> and renames that to PATH: a process killed while
 * writing (SIGKILL included) leaves nothing behind, and PATH is either
 * absent (or its old self) or a complete file. Where the file system has no
 * O_TMPFILE the file is written under the temporary name from the start,
 * and every failure unlinks it at once. Batches are cut into row groups of row_group_rows rows (or
 * earlier when the buffered pages of a group pass EM_PQW_GROUP_MAX_BYTES).
 * Each column keeps its current row group's pages in memory because the
 * dictionary page has to come first in the chunk and is only complete at
 * the end of the group; the finished chunk goes to the file in one write.
 *
 * Per column, values are first converted to their physical representation
 * (Spark byte/short widened to INT32, decimals to INT32/INT64 or big-endian
 * FIXED_LEN_BYTE_ARRAY of the minimal width for their precision, as Spark
 * writes them), gathered from the batch through its selection vector and
 * validity bitmap. A page is either dictionary-encoded (indices into the
 * chunk's dictionary, RLE/bit-packed with the width of the dictionary at the
 * time the page is closed) or PLAIN. Every chunk starts with a dictionary
 * when the option is on (not for BOOLEAN, as parquet-mr does). At the first
 * page the writer compares the dictionary's cost with PLAIN and, when the
 * dictionary does not pay, rewrites that page as PLAIN and drops the
 * dictionary for the chunk. When the dictionary grows past
 * dictionary_max_bytes, the current page is closed dictionary-encoded and the
 * rest of the chunk is PLAIN (the spec allows mixed pages in a chunk). The
 * next row group tries the dictionary again.
 *
 * Page sizes are kept near page_bytes by encoding each batch in slices whose
 * row count is estimated from the bytes per row, then closing the page once
 * its estimated size reaches the target (or EM_PQW_PAGE_MAX_ROWS rows).
 *
 * Each ColumnMetaData lists the encodings used (PLAIN for the dictionary page
 * and for PLAIN data pages, RLE for the levels, RLE_DICTIONARY) and
 * encoding_stats per page type and encoding, which parquet-mr reads to know
 * whether every data page of a chunk is dictionary-encoded.
 *
 * Statistics follow parquet.thrift's column orders: signed comparison for
 * integers, dates, timestamps and decimals; unsigned byte-wise for strings
 * and binary; floats ignore NaN and write -0.0 as the minimum and +0.0 as
 * the maximum when the extreme is a zero. min_value/max_value are written
 * with column_orders = TYPE_DEFINED_ORDER (without that, parquet-mr ignores
 * them), and the deprecated min/max only for the numeric physical types,
 * whose legacy signed order agrees. Byte-array bounds longer than
 * EM_PQW_STATS_MAX_BYTES are left out rather than truncated. Values that go
 * to the dictionary are not compared one by one: the dictionary's entries
 * are folded into the statistics when the chunk ends (or when the first page
 * drops the dictionary). Decimals that do not fit their precision are
 * rejected (EM_ERR_OVERFLOW) rather than cut to the physical width.
 *
 * Spark cannot write a NULL-typed column; Ember writes one as an optional
 * INT32 column whose every definition level is 0, without an annotation
 * (LogicalType UNKNOWN would say "always null", but Ember's reader, like
 * many, rejects it), so peers and Ember's reader see an int column of nulls.
 *
 * Multi-byte values are written from host memory: the writer assumes a
 * little-endian host, like the rest of Ember's Arrow-layout code.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/leftovers.h"
#include "ember/parquet.h"
#include "io/parquet/codec.h"
#include "io/parquet/encode_buf.h"
#include "io/parquet/encode_dict.h"
#include "io/parquet/encode_rle.h"
#include "io/parquet/format.h"
#include "io/parquet/thrift_write.h"

#define EM_PQW_DEFAULT_GROUP_ROWS 1048576
#define EM_PQW_DEFAULT_PAGE_BYTES (1 << 20)
#define EM_PQW_DEFAULT_DICT_BYTES (1 << 20)
#define EM_PQW_GROUP_MAX_BYTES ((int64_t)128 << 20) /* parquet-mr's default block size */
#define EM_PQW_STATS_MAX_BYTES 4096
#define EM_PQW_MAX_SLICE 65536
#define EM_PQW_PAGE_MAX_ROWS (1 << 20) /* keeps num_values far from INT32_MAX */
#define EM_PQW_IO_CHUNK (1 << 20)

typedef struct pqw_stats {
    int64_t null_count;
    bool has; /* min/max hold a (non-NaN) value */
    union {
        int64_t i; /* BOOLEAN, INT32, INT64 physical types */
        double d;  /* FLOAT, DOUBLE */
        em_i128 x; /* FIXED_LEN_BYTE_ARRAY decimals */
    } min, max;
    em_pq_wbuf bmin, bmax; /* BYTE_ARRAY bounds (copies) */
} pqw_stats;

typedef struct pqw_col {
    const em_field *field; /* borrowed from the writer's schema */
    int phys;              /* enum em_pq_physical */
    int width;             /* PLAIN bytes per value; 0 for BOOLEAN and BYTE_ARRAY */
    bool optional;
    bool dict_allowed;

    /* The open page. */
    int64_t page_rows; /* rows including nulls */
    int64_t page_vals; /* non-null values */
    em_pq_wbuf levels; /* definition levels, one byte per row (optional columns) */
    em_pq_wbuf values; /* PLAIN values (BOOLEAN: bit-packed) when the page is PLAIN */
    em_pq_wbuf idx;    /* uint32 dictionary indices when the page is dictionary-encoded */

    /* The open column chunk (row group). */
    bool dict_active;  /* new values go to the dictionary */
    bool dict_decided; /* the first page has been closed */
    em_pq_dict dict;
    em_pq_wbuf pages;           /* closed data pages: headers and bodies */
    int64_t pages_uncompressed; /* their size with uncompressed bodies */
    int64_t chunk_rows;
    int n_dict_pages, n_plain_pages;
    pqw_stats st;
} pqw_col;

struct em_pq_writer {
    char *path;     /* owned: the final name */
    char *tmp_path; /* owned: the name it is linked as, then renamed from */
    bool unnamed;   /* O_TMPFILE: tmp_path is linked at close only */
    int fd;         /* -1 when closed */
    int64_t pos;    /* logical file offset, including staged bytes */
    em_schema schema;
    em_pq_write_options opts;
    char *created_by; /* owned */
    pqw_col *cols;    /* owned, schema.n_fields */
    int64_t group_rows;
    int64_t total_rows;
    em_pq_wbuf groups_meta; /* serialized RowGroup structs, back to back */
    int n_groups;
    em_pq_wbuf stage;   /* small writes waiting for one write(2) */
    em_pq_wbuf scratch; /* gathered physical values of a slice */
    em_pq_wbuf body;    /* an uncompressed page body */
    em_pq_wbuf comp;    /* a compressed page body */
    em_pq_wbuf hdr;     /* a page header */
    em_status failed;   /* first failure; the writer accepts nothing after it */
    em_pool *pool;      /* borrowed */
};

static atomic_long pqw_counter;

void em_pq_write_options_init(em_pq_write_options *o) {
    memset(o, 0, sizeof *o);
    o->codec = EM_PQ_SNAPPY;
    o->row_group_rows = EM_PQW_DEFAULT_GROUP_ROWS;
    o->page_bytes = EM_PQW_DEFAULT_PAGE_BYTES;
    o->dictionary = true;
    o->dictionary_max_bytes = EM_PQW_DEFAULT_DICT_BYTES;
    o->statistics = true;
}

/* ---- physical types ---------------------------------------------------- */

/* 10^p for p <= 38 (fits an unsigned 128-bit integer). */
static unsigned __int128 pow10_u128(int p) {
    unsigned __int128 r = 1;
    while (p-- > 0)
        r *= 10;
    return r;
}

/* Bytes Spark uses for a decimal of this precision as FIXED_LEN_BYTE_ARRAY:
 * the fewest whose signed range holds 10^precision - 1. */
static int decimal_flba_bytes(int precision) {
    unsigned __int128 limit = pow10_u128(precision);
    int n = 1;
    while (((unsigned __int128)1 << (8 * n - 1)) < limit)
        n++;
    return n;
}

static void physical_of(em_type t, int *phys, int *width) {
    switch (t.id) {
    case EM_TYPE_BOOLEAN: *phys = EM_PQ_T_BOOLEAN, *width = 0; return;
    case EM_TYPE_NULL:
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_DATE: *phys = EM_PQ_T_INT32, *width = 4; return;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: *phys = EM_PQ_T_INT64, *width = 8; return;
    case EM_TYPE_FLOAT: *phys = EM_PQ_T_FLOAT, *width = 4; return;
    case EM_TYPE_DOUBLE: *phys = EM_PQ_T_DOUBLE, *width = 8; return;
    case EM_TYPE_DECIMAL:
        if (t.precision <= 9)
            *phys = EM_PQ_T_INT32, *width = 4;
        else if (t.precision <= 18)
            *phys = EM_PQ_T_INT64, *width = 8;
        else
            *phys = EM_PQ_T_FIXED_LEN_BYTE_ARRAY, *width = decimal_flba_bytes(t.precision);
        return;
    default: *phys = EM_PQ_T_BYTE_ARRAY, *width = 0; return;
    }
}

static inline void put_be(uint8_t *p, em_i128 v, int n) {
    for (int b = 0; b < n; b++)
        p[n - 1 - b] = (uint8_t)((unsigned __int128)v >> (8 * b));
}

/* ---- file output ------------------------------------------------------- */

static em_status io_fail(em_pq_writer *w, const char *what, em_error *err) {
    return EM_FAIL(err, EM_ERR_IO, "parquet writer: cannot %s '%s' (temporary file '%s'): %s", what,
                   w->path, w->tmp_path, strerror(errno));
}

static em_status write_all(em_pq_writer *w, const uint8_t *p, int64_t n, em_error *err) {
    while (n > 0) {
        ssize_t k = write(w->fd, p, (size_t)(n > (1 << 30) ? (1 << 30) : n));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return io_fail(w, "write", err);
        }
        p += k;
        n -= k;
    }
    return EM_OK;
}

static em_status stage_flush(em_pq_writer *w, em_error *err) {
    if (w->stage.len) {
        EM_TRY(write_all(w, w->stage.data, w->stage.len, err));
        w->stage.len = 0;
    }
    return EM_OK;
}

/* Appends to the file: small pieces are staged, large ones written directly. */
static em_status out_write(em_pq_writer *w, const void *p, int64_t n, em_error *err) {
    if (n >= EM_PQW_IO_CHUNK) {
        EM_TRY(stage_flush(w, err));
        EM_TRY(write_all(w, p, n, err));
    } else {
        EM_TRY(em_pq_wbuf_append(&w->stage, p, n, err));
        if (w->stage.len >= EM_PQW_IO_CHUNK)
            EM_TRY(stage_flush(w, err));
    }
    w->pos += n;
    return EM_OK;
}

/* ---- statistics -------------------------------------------------------- */

static void stats_reset(pqw_stats *s) {
    s->null_count = 0;
    s->has = false;
    s->bmin.len = 0;
    s->bmax.len = 0;
}

static void stats_int(pqw_stats *s, int64_t lo, int64_t hi) {
    if (!s->has || lo < s->min.i)
        s->min.i = lo;
    if (!s->has || hi > s->max.i)
        s->max.i = hi;
    s->has = true;
}

/* Min/max over gathered physical values (INT32, INT64, FLOAT, DOUBLE). */
static void stats_physical(pqw_col *c, const uint8_t *vals, int64_t m) {
    pqw_stats *s = &c->st;
    if (m == 0)
        return;
    switch (c->phys) {
#define MINMAX(T)                                                                                  \
    do {                                                                                           \
        const T *v = (const T *)vals;                                                              \
        T lo = v[0], hi = v[0];                                                                    \
        for (int64_t k = 1; k < m; k++) {                                                          \
            lo = v[k] < lo ? v[k] : lo;                                                            \
            hi = v[k] > hi ? v[k] : hi;                                                            \
        }                                                                                          \
        stats_int(s, lo, hi);                                                                      \
    } while (0)
    case EM_PQ_T_INT32: MINMAX(int32_t); break;
    case EM_PQ_T_INT64: MINMAX(int64_t); break;
#undef MINMAX
    case EM_PQ_T_FLOAT:
    case EM_PQ_T_DOUBLE:
        for (int64_t k = 0; k < m; k++) {
            double d;
            if (c->phys == EM_PQ_T_FLOAT) {
                float f;
                memcpy(&f, vals + 4 * k, 4);
                d = f;
            } else {
                memcpy(&d, vals + 8 * k, 8);
            }
            if (d != d)
                continue; /* NaN takes no part in the order */
            if (!s->has) {
                s->min.d = s->max.d = d;
                s->has = true;
            } else if (d < s->min.d) {
                s->min.d = d;
            } else if (d > s->max.d) {
                s->max.d = d;
            }
        }
        break;
    default: break;
    }
}

static em_status stats_bytes(pqw_col *c, const uint8_t *p, int32_t len, em_error *err) {
    pqw_stats *s = &c->st;
    if (!s->has) {
        s->bmin.len = s->bmax.len = 0;
        EM_TRY(em_pq_wbuf_append(&s->bmin, p, len, err));
        EM_TRY(em_pq_wbuf_append(&s->bmax, p, len, err));
        s->has = true;
        return EM_OK;
    }
    int64_t n = len < s->bmin.len ? len : s->bmin.len;
    int r = n ? memcmp(p, s->bmin.data, (size_t)n) : 0;
    if (r < 0 || (r == 0 && len < s->bmin.len)) {
        s->bmin.len = 0;
        return em_pq_wbuf_append(&s->bmin, p, len, err);
    }
    n = len < s->bmax.len ? len : s->bmax.len;
    r = n ? memcmp(p, s->bmax.data, (size_t)n) : 0;
    if (r > 0 || (r == 0 && len > s->bmax.len)) {
        s->bmax.len = 0;
        return em_pq_wbuf_append(&s->bmax, p, len, err);
    }
    return EM_OK;
}

/* Encodes a bound in the column's physical representation; returns its length
 * or -1 when it is not written. */
static int stats_encode(const pqw_col *c, bool is_max, uint8_t out[16], const uint8_t **ext) {
    const pqw_stats *s = &c->st;
    *ext = NULL;
    switch (c->phys) {
    case EM_PQ_T_BOOLEAN: out[0] = (uint8_t)(is_max ? s->max.i : s->min.i); return 1;
    case EM_PQ_T_INT32: {
        int32_t v = (int32_t)(is_max ? s->max.i : s->min.i);
        memcpy(out, &v, 4);
        return 4;
    }
    case EM_PQ_T_INT64: {
        int64_t v = is_max ? s->max.i : s->min.i;
        memcpy(out, &v, 8);
        return 8;
    }
    case EM_PQ_T_FLOAT:
    case EM_PQ_T_DOUBLE: {
        double d = is_max ? s->max.d : s->min.d;
        if (d == 0) /* parquet.thrift: min -0.0, max +0.0 when the bound is a zero */
            d = is_max ? 0.0 : -0.0;
        if (c->phys == EM_PQ_T_FLOAT) {
            float f = (float)d;
            memcpy(out, &f, 4);
            return 4;
        }
        memcpy(out, &d, 8);
        return 8;
    }
    case EM_PQ_T_FIXED_LEN_BYTE_ARRAY:
        put_be(out, is_max ? s->max.x : s->min.x, c->width);
        return c->width;
    default: {
        const em_pq_wbuf *b = is_max ? &s->bmax : &s->bmin;
        if (b->len > EM_PQW_STATS_MAX_BYTES)
            return -1;
        *ext = b->data ? b->data : out;
        return (int)b->len;
    }
    }
}

/* ---- encoding values of a slice ---------------------------------------- */

#define ROW(k) (sel ? (int64_t)sel[start + (k)] : start + (k))

/* Gathers the valid rows' physical values (fixed width) to dst; returns the
 * count. */
static int64_t gather_fixed(const pqw_col *c, const em_column *col, const uint8_t *valid,
                            const int32_t *sel, int64_t start, int64_t n, uint8_t *dst) {
    int64_t m = 0;
#define GATHER(TS, TD)                                                                             \
    do {                                                                                           \
        const TS *src_ = (const TS *)col->values->data;                                            \
        if (!valid && !sel && sizeof(TS) == sizeof(TD)) {                                          \
            memcpy(dst, src_ + start, (size_t)n * sizeof(TD));                                     \
            return n;                                                                              \
        }                                                                                          \
        for (int64_t k = 0; k < n; k++) {                                                          \
            int64_t r_ = ROW(k);                                                                   \
            if (valid && !em_bit_get(valid, r_))                                                   \
                continue;                                                                          \
            TD v_ = (TD)src_[r_];                                                                  \
            memcpy(dst + m * (int64_t)sizeof(TD), &v_, sizeof(TD));                                \
            m++;                                                                                   \
        }                                                                                          \
    } while (0)
    switch (c->field->type.id) {
    case EM_TYPE_BYTE: GATHER(int8_t, int32_t); break;
    case EM_TYPE_SHORT: GATHER(int16_t, int32_t); break;
    case EM_TYPE_INT:
    case EM_TYPE_DATE: GATHER(int32_t, int32_t); break;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: GATHER(int64_t, int64_t); break;
    case EM_TYPE_FLOAT: GATHER(float, float); break;
    case EM_TYPE_DOUBLE: GATHER(double, double); break;
    case EM_TYPE_DECIMAL:
        if (c->width == 4) {
            GATHER(em_i128, int32_t);
        } else if (c->width == 8) {
            GATHER(em_i128, int64_t);
        } else {
            const em_i128 *src = (const em_i128 *)col->values->data;
            for (int64_t k = 0; k < n; k++) {
                int64_t r = ROW(k);
                if (valid && !em_bit_get(valid, r))
                    continue;
                put_be(dst + m * c->width, src[r], c->width);
                m++;
            }
        }
        break;
    default: break;
    }
#undef GATHER
    return m;
}

/* Decimal min/max for FIXED_LEN_BYTE_ARRAY columns, from the logical values. */
static void stats_decimal(pqw_col *c, const em_column *col, const uint8_t *valid,
                          const int32_t *sel, int64_t start, int64_t n) {
    const em_i128 *src = (const em_i128 *)col->values->data;
    pqw_stats *s = &c->st;
    for (int64_t k = 0; k < n; k++) {
        int64_t r = ROW(k);
        if (valid && !em_bit_get(valid, r))
            continue;
        em_i128 v = src[r];
        if (!s->has || v < s->min.x)
            s->min.x = v;
        if (!s->has || v > s->max.x)
            s->max.x = v;
        s->has = true;
    }
}

/* Decimals must fit their precision: a wider value would be cut to the
 * physical width and read back as another number. */
static em_status check_decimals(const em_pq_writer *w, const pqw_col *c, const em_column *col,
                                const uint8_t *valid, const int32_t *sel, int64_t start, int64_t n,
                                em_error *err) {
    const em_i128 limit = (em_i128)pow10_u128(c->field->type.precision);
    const em_i128 *src = (const em_i128 *)col->values->data;
    for (int64_t k = 0; k < n; k++) {
        int64_t r = ROW(k);
        if (valid && !em_bit_get(valid, r))
            continue;
        if (src[r] >= limit || src[r] <= -limit)
            return EM_FAIL(err, EM_ERR_OVERFLOW,
                           "parquet writer: '%s': column '%s': a value does not fit "
                           "decimal(%d,%d)",
                           w->path, c->field->name, c->field->type.precision, c->field->type.scale);
    }
    return EM_OK;
}

static em_status encode_fixed(em_pq_writer *w, pqw_col *c, const em_column *col,
                              const uint8_t *valid, const int32_t *sel, int64_t start, int64_t n,
                              int64_t nv, em_error *err) {
    if (c->field->type.id == EM_TYPE_DECIMAL)
        EM_TRY(check_decimals(w, c, col, valid, sel, start, n, err));
    em_pq_wbuf *dstbuf = c->dict_active ? &w->scratch : &c->values;
    if (c->dict_active)
        w->scratch.len = 0;
    EM_TRY(em_pq_wbuf_reserve(dstbuf, nv * c->width, err));
    uint8_t *dst = em_pq_wbuf_tail(dstbuf);
    int64_t m = gather_fixed(c, col, valid, sel, start, n, dst);
    if (m != nv)
        return EM_FAIL(err, EM_ERR_INTERNAL,
                       "parquet writer: column '%s': %lld values, expected %lld", c->field->name,
                       (long long)m, (long long)nv);
    if (w->opts.statistics && !c->dict_active) { /* dictionary values: see stats_from_dict */
        if (c->phys == EM_PQ_T_FIXED_LEN_BYTE_ARRAY)
            stats_decimal(c, col, valid, sel, start, n);
        else
            stats_physical(c, dst, m);
    }
    if (c->dict_active) {
        EM_TRY(em_pq_wbuf_reserve(&c->idx, m * 4, err));
        EM_TRY(em_pq_dict_put_fixed(&c->dict, dst, m, (uint32_t *)em_pq_wbuf_tail(&c->idx), err));
        c->idx.len += m * 4;
    } else {
        c->values.len += m * c->width;
    }
    c->page_vals += m;
    return EM_OK;
}

static em_status encode_bytes(em_pq_writer *w, pqw_col *c, const em_column *col,
                              const uint8_t *valid, const int32_t *sel, int64_t start, int64_t n,
                              int64_t nv, em_error *err) {
    const int32_t *off = em_column_offsets(col);
    const uint8_t *data = col->data ? col->data->data : NULL;
    if (c->dict_active) {
        EM_TRY(em_pq_wbuf_reserve(&c->idx, nv * 4, err));
    } else {
        int64_t bytes;
        if (!sel)
            bytes = (int64_t)off[start + n] - off[start];
        else
            bytes = (int64_t)off[sel[start + n - 1] + 1] - off[sel[start]];
        EM_TRY(em_pq_wbuf_reserve(&c->values, bytes + 4 * nv, err));
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t r = ROW(k);
        if (valid && !em_bit_get(valid, r))
            continue;
        const uint8_t *p = data + off[r];
        int32_t len = off[r + 1] - off[r];
        if (c->dict_active) {
            uint32_t *ix = (uint32_t *)em_pq_wbuf_tail(&c->idx);
            EM_TRY(em_pq_dict_put_bytes(&c->dict, p, len, ix, err));
            c->idx.len += 4;
        } else {
            uint8_t *q = em_pq_wbuf_tail(&c->values);
            em_pq_store_le32(q, (uint32_t)len);
            if (len)
                memcpy(q + 4, p, (size_t)len);
            c->values.len += 4 + (int64_t)len;
        }
        if (w->opts.statistics && !c->dict_active)
            EM_TRY(stats_bytes(c, p, len, err));
    }
    c->page_vals += nv;
    return EM_OK;
}

static em_status encode_bool(em_pq_writer *w, pqw_col *c, const em_column *col,
                             const uint8_t *valid, const int32_t *sel, int64_t start, int64_t n,
                             int64_t nv, em_error *err) {
    const uint8_t *bits = col->values->data;
    int64_t need = em_bitmap_bytes(c->page_vals + nv);
    EM_TRY(em_pq_wbuf_reserve(&c->values, need - c->values.len, err));
    memset(em_pq_wbuf_tail(&c->values), 0, (size_t)(need - c->values.len));
    c->values.len = need;
    uint8_t *out = c->values.data;
    int64_t m = c->page_vals;
    bool any_true = false, any_false = false;
    for (int64_t k = 0; k < n; k++) {
        int64_t r = ROW(k);
        if (valid && !em_bit_get(valid, r))
            continue;
        if (em_bit_get(bits, r)) {
            em_bit_set(out, m);
            any_true = true;
        } else {
            any_false = true;
        }
        m++;
    }
    c->page_vals = m;
    if (w->opts.statistics && (any_true || any_false))
        stats_int(&c->st, any_false ? 0 : 1, any_true ? 1 : 0);
    return EM_OK;
}

/* Encodes logical rows [start, start + n) of one column into the open page. */
static em_status encode_slice(em_pq_writer *w, pqw_col *c, const em_column *col, const int32_t *sel,
                              int64_t start, int64_t n, em_error *err) {
    const bool all_null = c->field->type.id == EM_TYPE_NULL;
    const uint8_t *valid = all_null || !col->validity ? NULL : col->validity->data;
    int64_t nulls = 0;
    if (c->optional) {
        EM_TRY(em_pq_wbuf_reserve(&c->levels, n, err));
        uint8_t *lv = em_pq_wbuf_tail(&c->levels);
        if (all_null) {
            memset(lv, 0, (size_t)n);
            nulls = n;
        } else if (!valid) {
            memset(lv, 1, (size_t)n);
        } else {
            for (int64_t k = 0; k < n; k++) {
                uint8_t v = (uint8_t)em_bit_get(valid, ROW(k));
                lv[k] = v;
                nulls += !v;
            }
        }
        c->levels.len += n;
    } else if (valid) {
        for (int64_t k = 0; k < n; k++)
            if (!em_bit_get(valid, ROW(k)))
                return EM_FAIL(err, EM_ERR_INVALID,
                               "parquet writer: '%s': column '%s' is declared non-nullable but "
                               "has a null",
                               w->path, c->field->name);
    }
    c->st.null_count += nulls;
    c->page_rows += n;
    c->chunk_rows += n;
    int64_t nv = n - nulls;
    if (nv == 0)
        return EM_OK;
    switch (c->phys) {
    case EM_PQ_T_BOOLEAN: return encode_bool(w, c, col, valid, sel, start, n, nv, err);
    case EM_PQ_T_BYTE_ARRAY: return encode_bytes(w, c, col, valid, sel, start, n, nv, err);
    default: return encode_fixed(w, c, col, valid, sel, start, n, nv, err);
    }
}

#undef ROW

/* ---- pages --------------------------------------------------------------- */

static int dict_bit_width(const pqw_col *c) {
    return em_pq_bit_width(c->dict.n > 0 ? (uint64_t)(c->dict.n - 1) : 0);
}

/* Estimated encoded size of the open page's values. */
static int64_t page_estimate(const pqw_col *c) {
    if (c->dict_active)
        return (c->idx.len / 4) * (dict_bit_width(c) > 0 ? dict_bit_width(c) : 1) / 8;
    return c->values.len;
}

/* Folds the dictionary's entries into the chunk statistics. Values that go
 * to the dictionary skip the per-value comparisons: every entry is a value
 * of this chunk, and there are usually far fewer entries than values. */
static em_status stats_from_dict(pqw_col *c, em_error *err) {
    const em_pq_dict *d = &c->dict;
    if (d->n == 0)
        return EM_OK;
    if (c->phys == EM_PQ_T_BYTE_ARRAY) {
        for (int64_t i = 0; i < d->n; i++) {
            int32_t len;
            const uint8_t *p = em_pq_dict_entry(d, (uint32_t)i, &len);
            EM_TRY(stats_bytes(c, p, len, err));
        }
    } else if (c->phys == EM_PQ_T_FIXED_LEN_BYTE_ARRAY) {
        pqw_stats *s = &c->st;
        for (int64_t i = 0; i < d->n; i++) {
            const uint8_t *p = d->plain.data + i * c->width;
            em_i128 v = (int8_t)p[0]; /* sign of the big-endian value */
            for (int b = 1; b < c->width; b++)
                v = (em_i128)((unsigned __int128)v << 8 | p[b]);
            if (!s->has || v < s->min.x)
                s->min.x = v;
            if (!s->has || v > s->max.x)
                s->max.x = v;
            s->has = true;
        }
    } else {
        stats_physical(c, d->plain.data, d->n);
    }
    return EM_OK;
}

/* At the chunk's first page: keeps the dictionary only when it is smaller
 * than PLAIN; otherwise rewrites the page as PLAIN from its indices. */
static em_status decide_dictionary(pqw_col *c, em_error *err) {
    c->dict_decided = true;
    const uint32_t *ix = (const uint32_t *)c->idx.data;
    int64_t m = c->idx.len / 4;
    int64_t plain = 0;
    if (c->width) {
        plain = m * c->width;
    } else {
        for (int64_t k = 0; k < m; k++) {
            int32_t len;
            (void)em_pq_dict_entry(&c->dict, ix[k], &len);
            plain += 4 + (int64_t)len;
        }
    }
    int64_t dict_cost = c->dict.plain.len + (m * dict_bit_width(c) + 7) / 8 + 1;
    if (dict_cost < plain)
        return EM_OK;
    c->values.len = 0;
    EM_TRY(em_pq_wbuf_reserve(&c->values, plain, err));
    uint8_t *q = c->values.data;
    for (int64_t k = 0; k < m; k++) {
        int32_t len;
        const uint8_t *p = em_pq_dict_entry(&c->dict, ix[k], &len);
        if (!c->width) {
            p -= 4;
            len += 4;
        }
        memcpy(q, p, (size_t)len);
        q += len;
    }
    c->values.len = plain;
    c->idx.len = 0;
    c->dict_active = false;
    EM_TRY(stats_from_dict(c, err));
    em_pq_dict_clear(&c->dict);
    return EM_OK;
}

/* Compresses a page body and appends header + body to dst; returns the sizes.
 */
static em_status emit_page(em_pq_writer *w, em_pq_wbuf *dst, int page_type, int64_t num_values,
                           int encoding, const uint8_t *body, int64_t ulen,
                           int64_t *uncompressed_total, em_error *err) {
    int64_t clen = ulen;
    if (w->opts.codec != EM_PQ_UNCOMPRESSED) {
        int64_t bound = em_pq_compress_bound(w->opts.codec, ulen);
        w->comp.len = 0;
        EM_TRY(em_pq_wbuf_reserve(&w->comp, bound, err));
        EM_TRY(em_pq_compress(w->opts.codec, w->opts.compression_level, body, ulen, w->comp.data,
                              bound, &clen, err));
        body = w->comp.data;
    }
    if (ulen > INT32_MAX || clen > INT32_MAX || num_values > INT32_MAX)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "parquet writer: '%s': a page exceeds 2 GiB",
                       w->path);
    w->hdr.len = 0;
    em_tw tw;
    em_tw_init(&tw, &w->hdr, err);
    em_tw_struct_begin(&tw);
    em_tw_field_i32(&tw, 1, page_type);
    em_tw_field_i32(&tw, 2, (int32_t)ulen);
    em_tw_field_i32(&tw, 3, (int32_t)clen);
    if (page_type == EM_PQ_PAGE_DATA) {
        em_tw_field_struct(&tw, 5); /* DataPageHeader */
        em_tw_field_i32(&tw, 1, (int32_t)num_values);
        em_tw_field_i32(&tw, 2, encoding);
        em_tw_field_i32(&tw, 3, EM_PQ_ENC_RLE);
        em_tw_field_i32(&tw, 4, EM_PQ_ENC_RLE);
        em_tw_struct_end(&tw);
    } else {
        em_tw_field_struct(&tw, 7); /* DictionaryPageHeader */
        em_tw_field_i32(&tw, 1, (int32_t)num_values);
        em_tw_field_i32(&tw, 2, encoding);
        em_tw_struct_end(&tw);
    }
    em_tw_struct_end(&tw);
    EM_TRY(em_tw_finish(&tw));
    EM_TRY(em_pq_wbuf_reserve(dst, w->hdr.len + clen, err));
    EM_TRY(em_pq_wbuf_append(dst, w->hdr.data, w->hdr.len, err));
    EM_TRY(em_pq_wbuf_append(dst, body, clen, err));
    *uncompressed_total += w->hdr.len + ulen;
    return EM_OK;
}

static em_status flush_page(em_pq_writer *w, pqw_col *c, em_error *err) {
    if (c->page_rows == 0)
        return EM_OK;
    if (c->dict_active && !c->dict_decided)
        EM_TRY(decide_dictionary(c, err));
    em_pq_wbuf *b = &w->body;
    b->len = 0;
    if (c->optional) {
        EM_TRY(em_pq_wbuf_reserve(b, 4, err));
        b->len = 4;
        EM_TRY(em_pq_rle_encode_u8(c->levels.data, c->page_rows, 1, b, err));
        em_pq_store_le32(b->data, (uint32_t)(b->len - 4));
    }
    int encoding = EM_PQ_ENC_PLAIN;
    if (c->dict_active) {
        encoding = EM_PQ_ENC_RLE_DICTIONARY;
        uint8_t bw = (uint8_t)dict_bit_width(c);
        EM_TRY(em_pq_wbuf_append(b, &bw, 1, err));
        EM_TRY(em_pq_rle_encode_u32((const uint32_t *)c->idx.data, c->idx.len / 4, bw, b, err));
        c->n_dict_pages++;
    } else {
        EM_TRY(em_pq_wbuf_append(b, c->values.data, c->values.len, err));
        c->n_plain_pages++;
    }
    EM_TRY(emit_page(w, &c->pages, EM_PQ_PAGE_DATA, c->page_rows, encoding, b->data, b->len,
                     &c->pages_uncompressed, err));
    c->page_rows = c->page_vals = 0;
    c->levels.len = c->values.len = c->idx.len = 0;
    return EM_OK;
}

/* ---- row groups ---------------------------------------------------------- */

static void chunk_restart(em_pq_writer *w, pqw_col *c) {
    c->dict_active = c->dict_allowed && w->opts.dictionary;
    c->dict_decided = false;
    em_pq_dict_clear(&c->dict);
    c->pages.len = 0;
    c->pages_uncompressed = 0;
    c->chunk_rows = 0;
    c->n_dict_pages = c->n_plain_pages = 0;
    stats_reset(&c->st);
}

static void write_statistics(em_tw *tw, const pqw_col *c) {
    em_tw_field_struct(tw, 12);
    uint8_t lo[16], hi[16];
    const uint8_t *lo_ext = NULL, *hi_ext = NULL;
    int lo_len = -1, hi_len = -1;
    if (c->st.has) {
        lo_len = stats_encode(c, false, lo, &lo_ext);
        hi_len = stats_encode(c, true, hi, &hi_ext);
    }
    bool bounds = lo_len >= 0 && hi_len >= 0;
    const uint8_t *lop = lo_ext ? lo_ext : lo, *hip = hi_ext ? hi_ext : hi;
    bool legacy =
        bounds && c->phys != EM_PQ_T_BYTE_ARRAY && c->phys != EM_PQ_T_FIXED_LEN_BYTE_ARRAY;
    if (legacy) {
        em_tw_field_binary(tw, 1, hip, hi_len);
        em_tw_field_binary(tw, 2, lop, lo_len);
    }
    em_tw_field_i64(tw, 3, c->st.null_count);
    if (bounds) {
        em_tw_field_binary(tw, 5, hip, hi_len);
        em_tw_field_binary(tw, 6, lop, lo_len);
    }
    em_tw_struct_end(tw);
}

/* Writes one column chunk (dictionary page, then the data pages) and its
 * ColumnChunk struct into tw. */
static em_status write_chunk(em_pq_writer *w, pqw_col *c, em_tw *tw, int64_t *uncompressed,
                             int64_t *compressed, em_error *err) {
    if (w->opts.statistics)
        EM_TRY(stats_from_dict(c, err));
    int64_t chunk_start = w->pos;
    int64_t dict_offset = -1, total_u = c->pages_uncompressed;
    bool has_dict = c->n_dict_pages > 0;
    if (has_dict) {
        em_pq_wbuf dictpage;
        em_pq_wbuf_init(&dictpage, w->pool);
        em_status s = emit_page(w, &dictpage, EM_PQ_PAGE_DICTIONARY, c->dict.n, EM_PQ_ENC_PLAIN,
                                c->dict.plain.data, c->dict.plain.len, &total_u, err);
        if (s == EM_OK)
            s = out_write(w, dictpage.data, dictpage.len, err);
        em_pq_wbuf_reset(&dictpage);
        EM_TRY(s);
        dict_offset = chunk_start;
    }
    int64_t data_offset = w->pos;
    EM_TRY(out_write(w, c->pages.data, c->pages.len, err));
    int64_t total_c = w->pos - chunk_start;
    *uncompressed += total_u;
    *compressed += total_c;

    em_tw_struct_begin(tw); /* ColumnChunk */
    em_tw_field_i64(tw, 2, chunk_start);
    em_tw_field_struct(tw, 3); /* ColumnMetaData */
    em_tw_field_i32(tw, 1, c->phys);
    int encs[3], n_encs = 0;
    if (has_dict || c->n_plain_pages)
        encs[n_encs++] = EM_PQ_ENC_PLAIN;
    encs[n_encs++] = EM_PQ_ENC_RLE;
    if (has_dict)
        encs[n_encs++] = EM_PQ_ENC_RLE_DICTIONARY;
    em_tw_field_list(tw, 2, EM_TC_I32, n_encs);
    for (int i = 0; i < n_encs; i++)
        em_tw_elem_i32(tw, encs[i]);
    em_tw_field_list(tw, 3, EM_TC_BINARY, 1);
    em_tw_elem_binary(tw, c->field->name, (int64_t)strlen(c->field->name));
    em_tw_field_i32(tw, 4, w->opts.codec);
    em_tw_field_i64(tw, 5, c->chunk_rows);
    em_tw_field_i64(tw, 6, total_u);
    em_tw_field_i64(tw, 7, total_c);
    em_tw_field_i64(tw, 9, data_offset);
    if (has_dict)
        em_tw_field_i64(tw, 11, dict_offset);
    if (w->opts.statistics)
        write_statistics(tw, c);
    int n_stats = (has_dict ? 2 : 0) + (c->n_plain_pages ? 1 : 0);
    em_tw_field_list(tw, 13, EM_TC_STRUCT, n_stats); /* PageEncodingStats */
    if (has_dict) {
        em_tw_struct_begin(tw);
        em_tw_field_i32(tw, 1, EM_PQ_PAGE_DICTIONARY);
        em_tw_field_i32(tw, 2, EM_PQ_ENC_PLAIN);
        em_tw_field_i32(tw, 3, 1);
        em_tw_struct_end(tw);
        em_tw_struct_begin(tw);
        em_tw_field_i32(tw, 1, EM_PQ_PAGE_DATA);
        em_tw_field_i32(tw, 2, EM_PQ_ENC_RLE_DICTIONARY);
        em_tw_field_i32(tw, 3, c->n_dict_pages);
        em_tw_struct_end(tw);
    }
    if (c->n_plain_pages) {
        em_tw_struct_begin(tw);
        em_tw_field_i32(tw, 1, EM_PQ_PAGE_DATA);
        em_tw_field_i32(tw, 2, EM_PQ_ENC_PLAIN);
        em_tw_field_i32(tw, 3, c->n_plain_pages);
        em_tw_struct_end(tw);
    }
    em_tw_struct_end(tw); /* ColumnMetaData */
    em_tw_struct_end(tw); /* ColumnChunk */
    return EM_OK;
}

static em_status finish_group(em_pq_writer *w, em_error *err) {
    if (w->group_rows == 0)
        return EM_OK;
    int n = w->schema.n_fields;
    for (int i = 0; i < n; i++)
        EM_TRY(flush_page(w, &w->cols[i], err));
    int64_t group_start = w->pos, uncompressed = 0, compressed = 0;
    em_tw tw;
    em_tw_init(&tw, &w->groups_meta, err);
    em_tw_struct_begin(&tw); /* RowGroup */
    em_tw_field_list(&tw, 1, EM_TC_STRUCT, n);
    for (int i = 0; i < n; i++) {
        EM_TRY(write_chunk(w, &w->cols[i], &tw, &uncompressed, &compressed, err));
        chunk_restart(w, &w->cols[i]);
    }
    em_tw_field_i64(&tw, 2, uncompressed);
    em_tw_field_i64(&tw, 3, w->group_rows);
    em_tw_field_i64(&tw, 5, group_start);
    em_tw_field_i64(&tw, 6, compressed);
    if (w->n_groups < INT16_MAX)
        em_tw_field_i16(&tw, 7, (int16_t)w->n_groups);
    em_tw_struct_end(&tw);
    EM_TRY(em_tw_finish(&tw));
    w->n_groups++;
    w->total_rows += w->group_rows;
    w->group_rows = 0;
    return EM_OK;
}

static int64_t buffered_bytes(const em_pq_writer *w) {
    int64_t t = 0;
    for (int i = 0; i < w->schema.n_fields; i++)
        t += w->cols[i].pages.len + w->cols[i].values.len + w->cols[i].idx.len / 2;
    return t;
}

/* ---- schema -------------------------------------------------------------- */

static void write_schema_leaf(em_tw *tw, const pqw_col *c) {
    em_type t = c->field->type;
    em_tw_struct_begin(tw);
    em_tw_field_i32(tw, 1, c->phys);
    if (c->phys == EM_PQ_T_FIXED_LEN_BYTE_ARRAY)
        em_tw_field_i32(tw, 2, c->width);
    em_tw_field_i32(tw, 3, c->optional ? EM_PQ_OPTIONAL : EM_PQ_REQUIRED);
    em_tw_field_string(tw, 4, c->field->name);
    int converted = -1;
    switch (t.id) {
    case EM_TYPE_BYTE: converted = EM_PQ_CT_INT_8; break;
    case EM_TYPE_SHORT: converted = EM_PQ_CT_INT_16; break;
    case EM_TYPE_DECIMAL: converted = EM_PQ_CT_DECIMAL; break;
    case EM_TYPE_STRING: converted = EM_PQ_CT_UTF8; break;
    case EM_TYPE_DATE: converted = EM_PQ_CT_DATE; break;
    /* Legacy readers take TIMESTAMP_MICROS as UTC-adjusted, so the NTZ
     * column carries only the LogicalType (as parquet-cpp does). */
    case EM_TYPE_TIMESTAMP: converted = EM_PQ_CT_TIMESTAMP_MICROS; break;
    default: break;
    }
    if (converted >= 0)
        em_tw_field_i32(tw, 6, converted);
    if (t.id == EM_TYPE_DECIMAL) {
        em_tw_field_i32(tw, 7, t.scale);
        em_tw_field_i32(tw, 8, t.precision);
    }
    switch (t.id) {
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
        em_tw_field_struct(tw, 10);
        em_tw_field_struct(tw, 10); /* IntType */
        em_tw_field_i8(tw, 1, t.id == EM_TYPE_BYTE ? 8 : 16);
        em_tw_field_bool(tw, 2, true);
        em_tw_struct_end(tw);
        em_tw_struct_end(tw);
        break;
    case EM_TYPE_DECIMAL:
        em_tw_field_struct(tw, 10);
        em_tw_field_struct(tw, 5); /* DecimalType */
        em_tw_field_i32(tw, 1, t.scale);
        em_tw_field_i32(tw, 2, t.precision);
        em_tw_struct_end(tw);
        em_tw_struct_end(tw);
        break;
    case EM_TYPE_STRING:
    case EM_TYPE_DATE:
        em_tw_field_struct(tw, 10);
        em_tw_field_struct(tw, t.id == EM_TYPE_STRING ? 1 : 6);
        em_tw_struct_end(tw);
        em_tw_struct_end(tw);
        break;
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        em_tw_field_struct(tw, 10);
        em_tw_field_struct(tw, 8); /* TimestampType */
        em_tw_field_bool(tw, 1, t.id == EM_TYPE_TIMESTAMP);
        em_tw_field_struct(tw, 2); /* TimeUnit */
        em_tw_field_struct(tw, 2); /* MICROS */
        em_tw_struct_end(tw);
        em_tw_struct_end(tw);
        em_tw_struct_end(tw);
        em_tw_struct_end(tw);
        break;
    default: break;
    }
    em_tw_struct_end(tw);
}

static em_status write_footer(em_pq_writer *w, em_error *err) {
    em_pq_wbuf meta;
    em_pq_wbuf_init(&meta, w->pool);
    em_tw tw;
    em_tw_init(&tw, &meta, err);
    int n = w->schema.n_fields;
    em_tw_struct_begin(&tw); /* FileMetaData */
    em_tw_field_i32(&tw, 1, 1);
    em_tw_field_list(&tw, 2, EM_TC_STRUCT, (int64_t)n + 1);
    em_tw_struct_begin(&tw);
    em_tw_field_string(&tw, 4, "spark_schema");
    em_tw_field_i32(&tw, 5, n);
    em_tw_struct_end(&tw);
    for (int i = 0; i < n; i++)
        write_schema_leaf(&tw, &w->cols[i]);
    em_tw_field_i64(&tw, 3, w->total_rows);
    em_tw_field_list(&tw, 4, EM_TC_STRUCT, w->n_groups);
    em_tw_raw(&tw, w->groups_meta.data, w->groups_meta.len);
    em_tw_field_string(&tw, 6, w->created_by);
    em_tw_field_list(&tw, 7, EM_TC_STRUCT, n); /* ColumnOrder: TYPE_DEFINED_ORDER */
    for (int i = 0; i < n; i++) {
        em_tw_struct_begin(&tw);
        em_tw_field_struct(&tw, 1);
        em_tw_struct_end(&tw);
        em_tw_struct_end(&tw);
    }
    em_tw_struct_end(&tw);
    em_status s = em_tw_finish(&tw);
    if (s == EM_OK && meta.len > UINT32_MAX)
        s = EM_FAIL(err, EM_ERR_UNSUPPORTED, "parquet writer: '%s': footer too large", w->path);
    if (s == EM_OK)
        s = out_write(w, meta.data, meta.len, err);
    if (s == EM_OK) {
        uint8_t tail[8];
        em_pq_store_le32(tail, (uint32_t)meta.len);
        memcpy(tail + 4, EM_PQ_MAGIC, 4);
        s = out_write(w, tail, 8, err);
    }
    em_pq_wbuf_reset(&meta);
    return s;
}

/* ---- lifecycle ------------------------------------------------------------
 */

static void writer_free(em_pq_writer *w) {
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    if (w->cols) {
        for (int i = 0; i < w->schema.n_fields; i++) {
            pqw_col *c = &w->cols[i];
            em_pq_wbuf_reset(&c->levels);
            em_pq_wbuf_reset(&c->values);
            em_pq_wbuf_reset(&c->idx);
            em_pq_wbuf_reset(&c->pages);
            em_pq_wbuf_reset(&c->st.bmin);
            em_pq_wbuf_reset(&c->st.bmax);
            em_pq_dict_reset(&c->dict);
        }
        free(w->cols);
    }
    em_pq_wbuf_reset(&w->groups_meta);
    em_pq_wbuf_reset(&w->stage);
    em_pq_wbuf_reset(&w->scratch);
    em_pq_wbuf_reset(&w->body);
    em_pq_wbuf_reset(&w->comp);
    em_pq_wbuf_reset(&w->hdr);
    em_schema_reset(&w->schema);
    free(w->created_by);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

/* Records a failure: the temporary file is removed at once. */
static em_status writer_fail(em_pq_writer *w, em_status s) {
    if (w->failed == EM_OK)
        w->failed = s;
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    if (w->tmp_path && !w->unnamed)
        unlink(w->tmp_path);
    return s;
}

/* Failures from below (a pool's budget, a codec) do not know the file: say it. */
static void name_file(const em_pq_writer *w, em_error *err) {
    if (err && !strstr(err->msg, w->path))
        em_error_prefix(err, "parquet writer: '%s'", w->path);
}

static em_status check_options(const char *path, const em_pq_write_options *o, em_error *err) {
    switch (o->codec) {
    case EM_PQ_UNCOMPRESSED:
    case EM_PQ_SNAPPY:
    case EM_PQ_GZIP:
    case EM_PQ_ZSTD:
    case EM_PQ_LZ4_RAW: break;
    default:
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "parquet writer: '%s': cannot write codec %s", path,
                       em_pq_codec_name(o->codec));
    }
    if (o->row_group_rows < 0 || o->page_bytes < 0 || o->dictionary_max_bytes < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "parquet writer: '%s': negative size option", path);
    return EM_OK;
}

em_status em_pq_writer_open(const char *path, const em_schema *schema,
                            const em_pq_write_options *opts, em_pq_writer **out, em_error *err) {
    *out = NULL;
    em_pq_write_options defaults;
    if (!opts) {
        em_pq_write_options_init(&defaults);
        opts = &defaults;
    }
    EM_TRY(check_options(path, opts, err));
    if (schema->n_fields < 1)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "parquet writer: '%s': a file needs at least one column", path);
    for (int i = 0; i < schema->n_fields; i++) {
        em_type t = schema->fields[i].type;
        if (t.id < 0 || t.id >= EM_TYPE_COUNT_ ||
            (t.id == EM_TYPE_DECIMAL &&
             (t.precision < 1 || t.precision > EM_DECIMAL_MAX_PRECISION || t.scale < 0 ||
              t.scale > t.precision)))
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "parquet writer: '%s': column '%s' has an unsupported type", path,
                           schema->fields[i].name);
    }
    em_pq_writer *w = calloc(1, sizeof *w);
    if (!w)
        return EM_FAIL(err, EM_ERR_NOMEM, "parquet writer: '%s': out of memory", path);
    w->fd = -1;
    w->opts = *opts;
    w->pool = opts->pool;
    if (w->opts.row_group_rows == 0)
        w->opts.row_group_rows = EM_PQW_DEFAULT_GROUP_ROWS;
    if (w->opts.page_bytes == 0)
        w->opts.page_bytes = EM_PQW_DEFAULT_PAGE_BYTES;
    if (w->opts.dictionary_max_bytes == 0)
        w->opts.dictionary_max_bytes = EM_PQW_DEFAULT_DICT_BYTES;
    em_pq_wbuf_init(&w->groups_meta, w->pool);
    em_pq_wbuf_init(&w->stage, w->pool);
    em_pq_wbuf_init(&w->scratch, w->pool);
    em_pq_wbuf_init(&w->body, w->pool);
    em_pq_wbuf_init(&w->comp, w->pool);
    em_pq_wbuf_init(&w->hdr, w->pool);
    long counter = atomic_fetch_add(&pqw_counter, 1);
    w->path = strdup(path);
    w->created_by = strdup(opts->created_by ? opts->created_by : "ember version " EM_VERSION);
    size_t tlen = strlen(path) + 64;
    w->tmp_path = malloc(tlen);
    if (!w->path || !w->created_by || !w->tmp_path) {
        writer_free(w);
        return EM_FAIL(err, EM_ERR_NOMEM, "parquet writer: '%s': out of memory", path);
    }
    snprintf(w->tmp_path, tlen, "%s.tmp-%ld-%ld", path, (long)getpid(), counter);
    em_status s = em_schema_copy(&w->schema, schema, err);
    if (s != EM_OK) {
        name_file(w, err);
        writer_free(w);
        return s;
    }
    w->cols = calloc((size_t)(schema->n_fields > 0 ? schema->n_fields : 1), sizeof(pqw_col));
    if (!w->cols) {
        writer_free(w);
        return EM_FAIL(err, EM_ERR_NOMEM, "parquet writer: '%s': out of memory", path);
    }
    for (int i = 0; i < w->schema.n_fields; i++) {
        pqw_col *c = &w->cols[i];
        c->field = &w->schema.fields[i];
        physical_of(c->field->type, &c->phys, &c->width);
        c->optional = c->field->nullable || c->field->type.id == EM_TYPE_NULL;
        c->dict_allowed = c->phys != EM_PQ_T_BOOLEAN && c->field->type.id != EM_TYPE_NULL;
        em_pq_wbuf_init(&c->levels, w->pool);
        em_pq_wbuf_init(&c->values, w->pool);
        em_pq_wbuf_init(&c->idx, w->pool);
        em_pq_wbuf_init(&c->pages, w->pool);
        em_pq_wbuf_init(&c->st.bmin, w->pool);
        em_pq_wbuf_init(&c->st.bmax, w->pool);
        em_pq_dict_init(&c->dict, c->width, w->pool);
        chunk_restart(w, c);
    }
    w->fd = em_file_create_unnamed(path);
    w->unnamed = w->fd >= 0;
    if (!w->unnamed)
        w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        s = io_fail(w, "create", err);
        writer_free(w);
        return s;
    }
    s = out_write(w, EM_PQ_MAGIC, 4, err);
    if (s != EM_OK) {
        name_file(w, err);
        writer_fail(w, s);
        writer_free(w);
        return s;
    }
    *out = w;
    return EM_OK;
}

/* Rows to encode next for column c so the open page (and dictionary) do not
 * overshoot their targets by much. */
static int64_t slice_rows(const em_pq_writer *w, const pqw_col *c, const em_column *col,
                          int64_t remaining) {
    double bpr; /* estimated encoded bytes per row */
    double dict_bpr = 0;
    if (c->phys == EM_PQ_T_BOOLEAN) {
        bpr = 1.0 / 8;
    } else if (c->field->type.id == EM_TYPE_NULL) {
        bpr = 1.0 / 8;
    } else if (c->width) {
        bpr = c->width;
        dict_bpr = c->width;
    } else {
        const int32_t *off = em_column_offsets(col);
        int64_t rows = col->length > 0 ? col->length : 1;
        bpr = 4 + (double)(off[col->length] - off[0]) / (double)rows;
        dict_bpr = bpr;
    }
    int64_t room = w->opts.page_bytes - page_estimate(c);
    if (c->dict_active) {
        int bw = dict_bit_width(c) + 1;
        int64_t dict_room = w->opts.dictionary_max_bytes - c->dict.plain.len;
        int64_t a = (int64_t)((double)(room > 0 ? room : 0) * 8 / bw) + 1;
        int64_t b = (int64_t)((double)(dict_room > 0 ? dict_room : 0) / dict_bpr) + 1;
        room = a < b ? a : b;
    } else {
        room = (int64_t)((double)(room > 0 ? room : 0) / bpr) + 1;
    }
    if (room > EM_PQW_MAX_SLICE)
        room = EM_PQW_MAX_SLICE;
    return room < remaining ? room : remaining;
}

static em_status write_column_rows(em_pq_writer *w, pqw_col *c, const em_column *col,
                                   const int32_t *sel, int64_t start, int64_t n, em_error *err) {
    int64_t done = 0;
    while (done < n) {
        int64_t m = slice_rows(w, c, col, n - done);
        EM_TRY(encode_slice(w, c, col, sel, start + done, m, err));
        done += m;
        if (c->dict_active && c->dict.plain.len > w->opts.dictionary_max_bytes) {
            EM_TRY(flush_page(w, c, err));
            c->dict_active = false; /* the rest of the chunk is PLAIN */
        } else if (page_estimate(c) >= w->opts.page_bytes || c->page_rows >= EM_PQW_PAGE_MAX_ROWS) {
            EM_TRY(flush_page(w, c, err));
        }
    }
    return EM_OK;
}

static em_status writer_write(em_pq_writer *w, const em_batch *b, em_error *err) {
    if (b->n_cols != w->schema.n_fields)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "parquet writer: '%s': batch has %d columns, the file has %d", w->path,
                       b->n_cols, w->schema.n_fields);
    for (int i = 0; i < b->n_cols; i++) {
        if (!em_type_equal(b->cols[i].type, w->schema.fields[i].type))
            return EM_FAIL(err, EM_ERR_INVALID,
                           "parquet writer: '%s': batch column %d does not have the type of "
                           "column '%s'",
                           w->path, i, w->schema.fields[i].name);
        if (b->cols[i].type.id != EM_TYPE_NULL && !b->cols[i].values && b->n_rows > 0)
            return EM_FAIL(err, EM_ERR_INVALID, "parquet writer: '%s': column '%s' has no values",
                           w->path, w->schema.fields[i].name);
    }
    int64_t rows = em_batch_rows(b), done = 0;
    while (done < rows) {
        int64_t n = w->opts.row_group_rows - w->group_rows;
        if (n > rows - done)
            n = rows - done;
        for (int i = 0; i < b->n_cols; i++)
            EM_TRY(write_column_rows(w, &w->cols[i], &b->cols[i], b->sel, done, n, err));
        w->group_rows += n;
        done += n;
        if (w->group_rows >= w->opts.row_group_rows || buffered_bytes(w) >= EM_PQW_GROUP_MAX_BYTES)
            EM_TRY(finish_group(w, err));
    }
    return EM_OK;
}

em_status em_pq_writer_write(em_pq_writer *w, const em_batch *b, em_error *err) {
    if (w->failed != EM_OK)
        return EM_FAIL(err, w->failed, "parquet writer: '%s': an earlier write failed", w->path);
    em_status s = writer_write(w, b, err);
    if (s == EM_OK)
        return EM_OK;
    name_file(w, err);
    return writer_fail(w, s);
}

em_status em_pq_writer_close(em_pq_writer *w, em_error *err) {
    if (!w)
        return EM_FAIL(err, EM_ERR_INVALID, "parquet writer: close of a NULL writer");
    em_status s = w->failed;
    if (s != EM_OK) {
        EM_FAIL(err, s, "parquet writer: '%s': not written because an earlier write failed",
                w->path);
    } else {
        s = finish_group(w, err);
        if (s == EM_OK)
            s = write_footer(w, err);
        if (s == EM_OK)
            s = stage_flush(w, err);
        if (s == EM_OK && fdatasync(w->fd) != 0 && errno != EINVAL && errno != EROFS)
            s = io_fail(w, "sync", err);
        if (s == EM_OK && w->unnamed) {
            if (em_file_link_unnamed(w->fd, w->tmp_path) != 0)
                s = io_fail(w, "link the finished file as", err);
            else
                w->unnamed = false; /* named now: a failure below unlinks it */
        }
        if (s == EM_OK) {
            int rc = close(w->fd);
            w->fd = -1;
            if (rc != 0)
                s = io_fail(w, "close", err);
        }
        if (s == EM_OK && rename(w->tmp_path, w->path) != 0)
            s = io_fail(w, "rename into", err);
        if (s != EM_OK) {
            name_file(w, err);
            writer_fail(w, s);
        }
    }
    writer_free(w);
    return s;
}

void em_pq_writer_abort(em_pq_writer *w) {
    if (!w)
        return;
    writer_fail(w, EM_ERR_CANCELLED);
    writer_free(w);
}
