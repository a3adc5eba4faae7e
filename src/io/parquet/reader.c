/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parquet reader: footer, schema mapping to Spark types, statistics, and the
 * batch loop that decodes pages straight into column buffers.
 *
 * Opening maps the whole file read-only (mmap), checks the magic at both
 * ends, parses the footer (metadata.c) and maps each leaf of the flat schema
 * to a Spark type and a conversion from its physical values. Nested or
 * repeated schemas are refused, naming the column. Uncompressed pages are
 * then decoded in place from the mapping; compressed pages are decompressed
 * once into a per-column buffer that is reused from page to page.
 *
 * The batch loop, for each projected column and a batch of n rows:
 *   1. while rows are wanted: load the next data page if the current one is
 *      used up (dictionary pages are decoded into the column's dictionary of
 *      physical values on the way; index pages are skipped);
 *   2. take k = min(wanted, values left in the page); decode k definition
 *      levels (an RLE run of "valid" covering all k is recognised without
 *      expanding it) and count the m non-null values;
 *   3. decode m physical values densely: PLAIN by memcpy, dictionary indices
 *      by an RLE/bit-packed decode then a width-specialised gather, and the
 *      DELTA and BYTE_STREAM_SPLIT encodings from a page-wide expansion made
 *      when the page was loaded; when the physical layout equals the Spark
 *      layout (int, long, float, double, date, micros timestamps) the values
 *      land directly in the output column, otherwise in a scratch buffer and
 *      then converted (narrowing, decimals, timestamp units, INT96, bytes);
 *   4. spread the m values over the k rows backwards in place when some are
 *      null, and clear those rows' validity bits.
 * Strings and binaries are decoded as views (pointer, length) into the page
 * or the dictionary and copied into the offsets and bytes buffers in one pass.
 *
 * The reader keeps its batch and refills it in place on the next call when
 * no consumer took references to its buffers (and makes a fresh one when a
 * consumer did), so steady-state reading allocates nothing per batch.
 *
 * A row range (several tasks sharing one large row group) starts each
 * column by counting off the data pages that end before it from their
 * headers alone, then decodes and drops the rows before it in the first page
 * it needs.
 *
 * Batches never span row groups and never are empty. A column chunk that
 * runs out of values before the row group's row count, a page that overruns
 * its chunk, a dictionary index beyond the dictionary, levels that disagree
 * with values: each is EM_ERR_CORRUPT naming the file, byte offset and column.
 * After a failure the reader only repeats the failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember/parquet.h"
#include "io/parquet/codec.h"
#include "io/parquet/format.h"
#include "io/parquet/internal.h"
#include "io/parquet/levels.h"
#include "io/parquet/metadata.h"

/* Larger pages are refused as corrupt: real writers stay far below (1 MiB is
 * typical), and the bound keeps hostile headers from driving huge allocations. */
#define EM_PQ_MAX_PAGE_BYTES (1 << 30)

/* How physical values become the Spark representation. */
enum pq_conv {
    CV_COPY,      /* same bytes: int32, int64, float, double, date, micros */
    CV_BOOL,      /* bytes 0/1 to a bitmap */
    CV_I32_I8,    /* INT(8) */
    CV_I32_I16,   /* INT(16), UINT(8) */
    CV_U32_I64,   /* UINT(32) */
    CV_I32_DEC,   /* DECIMAL on INT32 */
    CV_I64_DEC,   /* DECIMAL on INT64 */
    CV_U64_DEC,   /* UINT(64) as decimal(20,0) */
    CV_MILLIS,    /* TIMESTAMP(MILLIS) */
    CV_NANOS,     /* TIMESTAMP(NANOS) */
    CV_INT96,     /* legacy INT96 timestamps */
    CV_BYTES_DEC, /* DECIMAL on BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY */
    CV_VARLEN,    /* string / binary */
};

typedef struct pq_coldesc {
    const char *name;    /* borrowed from the file metadata */
    int physical;        /* em_pq_physical */
    int32_t type_length; /* FIXED_LEN_BYTE_ARRAY */
    bool optional;
    em_type type;
    int conv;          /* pq_conv */
    int phys_width;    /* bytes of one decoded physical value (views for byte arrays) */
    bool signed_stats; /* legacy min/max may be trusted */
    bool unsigned_int; /* UINT logical/converted types */
} pq_coldesc;

struct em_pq_file {
    char *path;
    int fd;
    const uint8_t *map; /* the whole file */
    int64_t size;
    int64_t data_end; /* first byte of the footer */
    em_pq_file_meta meta;
    int n_cols;
    pq_coldesc *cols;
    em_schema schema;
};

/* Where decoded values come from in the current page. */
enum pq_src { SRC_NONE, SRC_PLAIN, SRC_DICT, SRC_RLE_BOOL, SRC_VIEWS };

typedef struct pq_col {
    const em_pq_file *f;
    const pq_coldesc *d;
    int file_col;
    em_pq_dctx ctx;
    em_pool *pool;
    /* chunk */
    int64_t chunk_end; /* file offset past the chunk */
    int64_t pos;       /* file offset of the next page header */
    int64_t released;  /* the chunk's mapped bytes before it were handed back */
    int codec;
    int64_t rows_left; /* rows of the row group not yet read from this chunk */
    int64_t skip_rows; /* rows to pass over before the next one read (a row range) */
    bool seen_data;
    /* dictionary */
    bool has_dict;
    int64_t dict_n;
    int64_t dict_offset;
    em_pq_buf dict_raw;  /* decompressed dictionary page */
    em_pq_buf dict_vals; /* physical values (views for byte arrays) */
    /* current page */
    int64_t page_offset;
    int64_t page_left;  /* level slots (rows) left */
    em_pq_buf page_buf; /* decompressed page */
    bool lev_rle;       /* definition levels: RLE hybrid (else legacy BIT_PACKED) */
    em_rle_dec def;
    const uint8_t *lev_bits;
    int64_t lev_bits_len, lev_bits_pos;
    int src;
    const uint8_t *vp;  /* PLAIN values */
    int64_t vlen, vpos; /* bytes; booleans: vpos counts bits */
    em_rle_dec idx;
    bool idx_ready;
    const em_pq_view *views;
    int64_t views_n, views_pos;
    em_pq_buf mat, mat_bytes, s1, s2; /* page-wide expansions */
    int64_t data_base;                /* file offset of the page's values (for messages) */
    /* scratch, one batch */
    em_pq_buf lev, ids, phys;
} pq_col;

struct em_pq_reader {
    em_pq_file *f;
    em_schema schema;
    int n_cols;
    pq_col *cols;
    bool *rg_sel; /* owned copy */
    int rg;       /* current row group, -1 before the first */
    int64_t rg_left;
    int64_t next_rg_row; /* the file's row number of row group rg + 1's first row */
    int64_t row_start, row_end; /* the row range; row_end 0 = every row */
    int64_t batch_rows;
    int64_t cap_rows; /* capacity of the batches: batch_rows, or less for small row groups */
    em_pool *pool;
    em_batch *batch; /* owned; refilled in place when possible */
    em_status failed;
    char failed_msg[EM_ERROR_MSG_CAP];
};

/* ---------------------------------------------------------------- open */

static em_status map_type(em_pq_file *f, const em_pq_schema_elem *e, pq_coldesc *d, em_error *err) {
    const em_pq_logical *lt = &e->logical;
    int ct = e->has_converted ? e->converted : -1;
    d->physical = e->type;
    d->type_length = e->type_length;
    d->conv = CV_COPY;
    d->signed_stats = true;
    bool is_dec =
        lt->kind == EM_PQ_LT_DECIMAL || (lt->kind == EM_PQ_LT_NONE && ct == EM_PQ_CT_DECIMAL);
    int prec = lt->kind == EM_PQ_LT_DECIMAL ? lt->precision : e->precision;
    int scale = lt->kind == EM_PQ_LT_DECIMAL ? lt->scale : e->scale;
    if (is_dec && (prec < 1 || prec > EM_DECIMAL_MAX_PRECISION || scale < 0 || scale > prec))
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s: column %s: decimal(%d,%d) is not supported",
                       f->path, e->name, prec, scale);
    int int_bits = 0;
    bool int_signed = true;
    if (lt->kind == EM_PQ_LT_INTEGER) {
        int_bits = lt->bit_width;
        int_signed = lt->is_signed;
    } else if (lt->kind == EM_PQ_LT_NONE && ct >= EM_PQ_CT_UINT_8 && ct <= EM_PQ_CT_INT_64) {
        static const int bits[] = {8, 16, 32, 64, 8, 16, 32, 64};
        int_bits = bits[ct - EM_PQ_CT_UINT_8];
        int_signed = ct >= EM_PQ_CT_INT_8;
    }
    int unit = 0;
    bool utc = true;
    if (lt->kind == EM_PQ_LT_TIMESTAMP) {
        unit = lt->unit;
        utc = lt->utc;
    } else if (lt->kind == EM_PQ_LT_NONE && ct == EM_PQ_CT_TIMESTAMP_MILLIS) {
        unit = EM_PQ_MILLIS;
    } else if (lt->kind == EM_PQ_LT_NONE && ct == EM_PQ_CT_TIMESTAMP_MICROS) {
        unit = EM_PQ_MICROS;
    }
    bool is_time =
        lt->kind == EM_PQ_LT_TIME ||
        (lt->kind == EM_PQ_LT_NONE && (ct == EM_PQ_CT_TIME_MILLIS || ct == EM_PQ_CT_TIME_MICROS));
    if (is_time || ct == EM_PQ_CT_INTERVAL)
        goto unsupported;
    switch (e->type) {
    case EM_PQ_T_BOOLEAN:
        d->type = em_type_make(EM_TYPE_BOOLEAN);
        d->conv = CV_BOOL;
        d->phys_width = 1;
        return EM_OK;
    case EM_PQ_T_INT32:
        d->phys_width = 4;
        if (is_dec) {
            if (prec > 9)
                goto unsupported;
            d->type = em_type_decimal(prec, scale);
            d->conv = CV_I32_DEC;
        } else if (lt->kind == EM_PQ_LT_DATE ||
                   (lt->kind == EM_PQ_LT_NONE && ct == EM_PQ_CT_DATE)) {
            d->type = em_type_make(EM_TYPE_DATE);
        } else if (int_bits && !int_signed) {
            d->unsigned_int = true;
            d->signed_stats = false;
            if (int_bits == 8) {
                d->type = em_type_make(EM_TYPE_SHORT);
                d->conv = CV_I32_I16;
            } else if (int_bits == 16) {
                d->type = em_type_make(EM_TYPE_INT);
            } else if (int_bits == 32) {
                d->type = em_type_make(EM_TYPE_LONG);
                d->conv = CV_U32_I64;
            } else {
                goto unsupported;
            }
        } else if (int_bits == 8) {
            d->type = em_type_make(EM_TYPE_BYTE);
            d->conv = CV_I32_I8;
        } else if (int_bits == 16) {
            d->type = em_type_make(EM_TYPE_SHORT);
            d->conv = CV_I32_I16;
        } else if (int_bits == 0 || int_bits == 32) {
            if (lt->kind != EM_PQ_LT_NONE && lt->kind != EM_PQ_LT_INTEGER)
                goto unsupported;
            d->type = em_type_make(EM_TYPE_INT);
        } else {
            goto unsupported;
        }
        return EM_OK;
    case EM_PQ_T_INT64:
        d->phys_width = 8;
        if (is_dec) {
            if (prec > 18)
                goto unsupported;
            d->type = em_type_decimal(prec, scale);
            d->conv = CV_I64_DEC;
        } else if (unit) {
            d->type = em_type_make(utc ? EM_TYPE_TIMESTAMP : EM_TYPE_TIMESTAMP_NTZ);
            d->conv = unit == EM_PQ_MILLIS ? CV_MILLIS : unit == EM_PQ_NANOS ? CV_NANOS : CV_COPY;
        } else if (int_bits && !int_signed) {
            if (int_bits != 64)
                goto unsupported;
            d->unsigned_int = true;
            d->signed_stats = false;
            d->type = em_type_decimal(20, 0);
            d->conv = CV_U64_DEC;
        } else if (int_bits == 0 || int_bits == 64) {
            if (lt->kind != EM_PQ_LT_NONE && lt->kind != EM_PQ_LT_INTEGER)
                goto unsupported;
            d->type = em_type_make(EM_TYPE_LONG);
        } else {
            goto unsupported;
        }
        return EM_OK;
    case EM_PQ_T_INT96:
        if (lt->kind != EM_PQ_LT_NONE || ct >= 0)
            goto unsupported;
        d->phys_width = 12;
        d->type = em_type_make(EM_TYPE_TIMESTAMP);
        d->conv = CV_INT96;
        d->signed_stats = false;
        return EM_OK;
    case EM_PQ_T_FLOAT:
    case EM_PQ_T_DOUBLE:
        if (lt->kind != EM_PQ_LT_NONE || ct >= 0)
            goto unsupported;
        d->phys_width = e->type == EM_PQ_T_FLOAT ? 4 : 8;
        d->type = em_type_make(e->type == EM_PQ_T_FLOAT ? EM_TYPE_FLOAT : EM_TYPE_DOUBLE);
        return EM_OK;
    case EM_PQ_T_BYTE_ARRAY:
    case EM_PQ_T_FIXED_LEN_BYTE_ARRAY:
        d->phys_width = (int)sizeof(em_pq_view);
        d->signed_stats = false;
        if (e->type == EM_PQ_T_FIXED_LEN_BYTE_ARRAY && e->type_length <= 0)
            return EM_FAIL(err, EM_ERR_CORRUPT, "%s: column %s: FIXED_LEN_BYTE_ARRAY of length %d",
                           f->path, e->name, e->type_length);
        if (is_dec) {
            d->type = em_type_decimal(prec, scale);
            d->conv = CV_BYTES_DEC;
        } else if (e->type == EM_PQ_T_BYTE_ARRAY &&
                   (lt->kind == EM_PQ_LT_STRING || lt->kind == EM_PQ_LT_ENUM ||
                    lt->kind == EM_PQ_LT_JSON ||
                    (lt->kind == EM_PQ_LT_NONE &&
                     (ct == EM_PQ_CT_UTF8 || ct == EM_PQ_CT_ENUM || ct == EM_PQ_CT_JSON)))) {
            d->type = em_type_make(EM_TYPE_STRING);
            d->conv = CV_VARLEN;
        } else {
            d->type = em_type_make(EM_TYPE_BINARY);
            d->conv = CV_VARLEN;
        }
        return EM_OK;
    default:
        break;
    }
unsupported:
    return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                   "%s: column %s: Parquet type %s (logical type %d, converted type %d) is not "
                   "supported",
                   f->path, e->name, em_pq_physical_name(e->type), lt->kind, ct);
}

static em_status build_schema(em_pq_file *f, em_error *err) {
    const em_pq_file_meta *m = &f->meta;
    if (m->n_schema < 1)
        return EM_FAIL(err, EM_ERR_CORRUPT, "%s: the footer has an empty schema", f->path);
    const em_pq_schema_elem *root = &m->schema[0];
    for (int i = 1; i < m->n_schema; i++) {
        const em_pq_schema_elem *e = &m->schema[i];
        if (e->num_children > 0 || !e->has_type)
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "%s: column %s: nested schemas (groups) are not supported", f->path,
                           e->name);
        if (e->has_repetition && e->repetition == EM_PQ_REPEATED)
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "%s: column %s: repeated fields are not supported", f->path, e->name);
    }
    if (root->num_children != m->n_schema - 1)
        return EM_FAIL(err, EM_ERR_CORRUPT,
                       "%s: schema root declares %d children but %d elements follow", f->path,
                       root->num_children, m->n_schema - 1);
    f->n_cols = m->n_schema - 1;
    f->cols = calloc(f->n_cols ? (size_t)f->n_cols : 1, sizeof *f->cols);
    if (!f->cols)
        return EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory", f->path);
    EM_TRY(em_schema_init(&f->schema, f->n_cols, err));
    for (int i = 0; i < f->n_cols; i++) {
        const em_pq_schema_elem *e = &m->schema[i + 1];
        pq_coldesc *d = &f->cols[i];
        d->name = e->name;
        d->optional = !(e->has_repetition && e->repetition == EM_PQ_REQUIRED);
        EM_TRY(map_type(f, e, d, err));
        EM_TRY(em_schema_set(&f->schema, i, e->name, d->type, d->optional, err));
    }
    for (int g = 0; g < m->n_row_groups; g++) {
        const em_pq_row_group *rg = &m->row_groups[g];
        if (rg->n_columns != f->n_cols)
            return EM_FAIL(err, EM_ERR_CORRUPT,
                           "%s: row group %d has %d column chunks for %d columns", f->path, g,
                           rg->n_columns, f->n_cols);
        if (rg->num_rows < 0)
            return EM_FAIL(err, EM_ERR_CORRUPT, "%s: row group %d has %lld rows", f->path, g,
                           (long long)rg->num_rows);
        for (int c = 0; c < f->n_cols; c++) {
            const em_pq_column_chunk *cc = &rg->columns[c];
            if (cc->has_file_path)
                return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                               "%s: row group %d column %s: data in another file is not "
                               "supported",
                               f->path, g, f->cols[c].name);
            if (!cc->has_meta)
                return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                               "%s: row group %d column %s: no column metadata (encrypted?)",
                               f->path, g, f->cols[c].name);
            if (cc->meta.type != f->cols[c].physical)
                return EM_FAIL(err, EM_ERR_CORRUPT,
                               "%s: row group %d column %s: chunk type %s differs from the "
                               "schema's %s",
                               f->path, g, f->cols[c].name, em_pq_physical_name(cc->meta.type),
                               em_pq_physical_name(f->cols[c].physical));
        }
    }
    return EM_OK;
}

em_status em_pq_file_open(const char *path, em_pq_file **out, em_error *err) {
    *out = NULL;
    em_pq_file *f = calloc(1, sizeof *f);
    if (!f)
        return EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory", path);
    f->fd = -1;
    f->path = strdup(path);
    em_status st = EM_OK;
    if (!f->path) {
        st = EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        st = EM_FAIL(err, EM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) {
        st = EM_FAIL(err, EM_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = EM_FAIL(err, EM_ERR_IO, "%s: not a regular file", path);
        goto fail;
    }
    f->size = sb.st_size;
    if (f->size < 12) {
        st =
            EM_FAIL(err, EM_ERR_CORRUPT,
                    "%s: byte 0: file of %lld bytes is too small to be Parquet (needs at least 12)",
                    path, (long long)f->size);
        goto fail;
    }
    void *map = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (map == MAP_FAILED) {
        st = EM_FAIL(err, EM_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        goto fail;
    }
    f->map = map;
    if (memcmp(f->map, EM_PQ_MAGIC, 4) != 0) {
        st = EM_FAIL(err, EM_ERR_CORRUPT, "%s: byte 0: not a Parquet file (no PAR1 magic)", path);
        goto fail;
    }
    if (memcmp(f->map + f->size - 4, EM_PQ_MAGIC, 4) != 0) {
        st = EM_FAIL(err, EM_ERR_CORRUPT,
                     "%s: byte %lld: no PAR1 magic at the end (truncated or not Parquet)", path,
                     (long long)(f->size - 4));
        goto fail;
    }
    uint32_t flen;
    memcpy(&flen, f->map + f->size - 8, 4);
    if ((int64_t)flen > f->size - 12) {
        st = EM_FAIL(err, EM_ERR_CORRUPT,
                     "%s: byte %lld: footer length %u exceeds the file's %lld bytes", path,
                     (long long)(f->size - 8), flen, (long long)f->size);
        goto fail;
    }
    f->data_end = f->size - 8 - (int64_t)flen;
    st = em_pq_meta_parse(f->map + f->data_end, flen, f->data_end, path, &f->meta, err);
    if (st != EM_OK)
        goto fail;
    st = build_schema(f, err);
    if (st != EM_OK)
        goto fail;
    *out = f;
    return EM_OK;
fail:
    em_pq_file_close(f);
    return st;
}

void em_pq_file_close(em_pq_file *f) {
    if (!f)
        return;
    if (f->map)
        munmap((void *)f->map, (size_t)f->size);
    if (f->fd >= 0)
        close(f->fd);
    em_schema_reset(&f->schema);
    em_pq_meta_reset(&f->meta);
    free(f->cols);
    free(f->path);
    free(f);
}

const char *em_pq_file_path(const em_pq_file *f) { return f->path; }
const em_schema *em_pq_file_schema(const em_pq_file *f) { return &f->schema; }
int em_pq_file_num_row_groups(const em_pq_file *f) { return f->meta.n_row_groups; }
const char *em_pq_file_created_by(const em_pq_file *f) { return f->meta.created_by; }

int64_t em_pq_file_num_rows(const em_pq_file *f) {
    int64_t n = 0;
    for (int g = 0; g < f->meta.n_row_groups; g++)
        n += f->meta.row_groups[g].num_rows;
    return n;
}

int64_t em_pq_file_row_group_rows(const em_pq_file *f, int rg) {
    if (rg < 0 || rg >= f->meta.n_row_groups)
        return -1;
    return f->meta.row_groups[rg].num_rows;
}

/* ---------------------------------------------------------------- stats */

static em_status check_rg_col(const em_pq_file *f, int rg, int col, em_error *err) {
    if (rg < 0 || rg >= f->meta.n_row_groups || col < 0 || col >= f->n_cols)
        return EM_FAIL(err, EM_ERR_INVALID, "%s: no row group %d / column %d", f->path, rg, col);
    return EM_OK;
}

static int64_t le_int(const uint8_t *p, int n) {
    if (n == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Decodes one statistics value (PLAIN encoding without length prefix) into
 * the Spark representation; false when it cannot be used. */
static bool stat_value(const pq_coldesc *d, em_pq_bytes b, em_i128 *i128, int64_t *i64, double *f64,
                       em_pq_bytes *bytes) {
    if (!b.ptr)
        return false;
    switch (d->physical) {
    case EM_PQ_T_BOOLEAN:
        if (b.len != 1)
            return false;
        *i64 = b.ptr[0] != 0;
        return true;
    case EM_PQ_T_INT32:
    case EM_PQ_T_INT64: {
        int w = d->physical == EM_PQ_T_INT32 ? 4 : 8;
        if (b.len != w)
            return false;
        int64_t v = le_int(b.ptr, w);
        switch (d->conv) {
        case CV_U32_I64:
            *i64 = (int64_t)(uint32_t)v;
            return true;
        case CV_I32_DEC:
        case CV_I64_DEC:
            *i128 = v;
            return true;
        case CV_U64_DEC:
            *i128 = (em_i128)(uint64_t)v;
            return true;
        case CV_MILLIS:
            *i64 = (int64_t)((uint64_t)v * 1000u);
            return true;
        case CV_NANOS:
            *i64 = v / 1000 - (v % 1000 < 0);
            return true;
        default:
            *i64 = v;
            return true;
        }
    }
    case EM_PQ_T_FLOAT:
    case EM_PQ_T_DOUBLE: {
        double v;
        if (d->physical == EM_PQ_T_FLOAT) {
            float x;
            if (b.len != 4)
                return false;
            memcpy(&x, b.ptr, 4);
            v = x;
        } else {
            if (b.len != 8)
                return false;
            memcpy(&v, b.ptr, 8);
        }
        if (v != v)
            return false; /* NaN bounds prune nothing safely */
        *f64 = v;
        return true;
    }
    case EM_PQ_T_BYTE_ARRAY:
    case EM_PQ_T_FIXED_LEN_BYTE_ARRAY:
        if (d->conv == CV_BYTES_DEC)
            return em_pq_be_to_i128(b.ptr, b.len, i128);
        *bytes = b;
        return true;
    default:
        return false;
    }
}

em_status em_pq_file_stats(const em_pq_file *f, int rg, int col, em_pq_stats *out, em_error *err) {
    memset(out, 0, sizeof *out);
    EM_TRY(check_rg_col(f, rg, col, err));
    const em_pq_column_meta *m = &f->meta.row_groups[rg].columns[col].meta;
    const pq_coldesc *d = &f->cols[col];
    out->num_values = m->num_values;
    if (!m->has_statistics)
        return EM_OK;
    const em_pq_raw_stats *s = &m->statistics;
    out->has_null_count = s->has_null_count;
    out->null_count = s->null_count;
    em_pq_bytes lo = s->min_value, hi = s->max_value;
    if (!lo.ptr || !hi.ptr) {
        if (!d->signed_stats)
            return EM_OK;
        lo = s->min;
        hi = s->max;
    }
    em_pq_bytes blo = {0}, bhi = {0};
    bool ok_lo = stat_value(d, lo, &out->min.i128, &out->min.i64, &out->min.f64, &blo);
    bool ok_hi = stat_value(d, hi, &out->max.i128, &out->max.i64, &out->max.f64, &bhi);
    if (!ok_lo || !ok_hi)
        return EM_OK;
    if (d->conv == CV_VARLEN) {
        out->min.bytes.ptr = blo.ptr;
        out->min.bytes.len = blo.len;
        out->max.bytes.ptr = bhi.ptr;
        out->max.bytes.len = bhi.len;
    }
    out->has_min_max = true;
    return EM_OK;
}

em_status em_pq_file_chunk_info(const em_pq_file *f, int rg, int col, em_pq_chunk_info *out,
                                em_error *err) {
    memset(out, 0, sizeof *out);
    EM_TRY(check_rg_col(f, rg, col, err));
    const em_pq_column_meta *m = &f->meta.row_groups[rg].columns[col].meta;
    out->codec = (em_pq_codec)m->codec;
    out->total_compressed_size = m->total_compressed_size;
    out->total_uncompressed_size = m->total_uncompressed_size;
    out->data_page_offset = m->data_page_offset;
    out->dictionary_page_offset = m->has_dictionary_page_offset ? m->dictionary_page_offset : -1;
    out->num_values = m->num_values;
    size_t used = 0;
    for (int i = 0; i < m->n_encodings; i++) {
        bool dup = false;
        for (int j = 0; j < i; j++)
            dup |= m->encodings[j] == m->encodings[i];
        if (dup)
            continue;
        int n = snprintf(out->encodings + used, sizeof out->encodings - used, "%s%s",
                         used ? "," : "", em_pq_encoding_name(m->encodings[i]));
        if (n < 0 || (size_t)n >= sizeof out->encodings - used)
            break;
        used += (size_t)n;
    }
    snprintf(out->physical_type, sizeof out->physical_type, "%s", em_pq_physical_name(m->type));
    return EM_OK;
}

/* ---------------------------------------------------------------- pages */

static em_status col_corrupt_at(pq_col *c, int64_t offset, const char *what) {
    return EM_FAIL(c->ctx.err, EM_ERR_CORRUPT, "%s: byte %lld: column %s: %s", c->ctx.path,
                   (long long)offset, c->d->name, what);
}

/* Decompresses src into a buffer of dst_len bytes (or borrows src when uncompressed). */
static em_status col_inflate(pq_col *c, em_pq_buf *buf, const uint8_t *src, int64_t src_len,
                             int64_t dst_len, bool compressed, int64_t at, const uint8_t **out) {
    if (!compressed || c->codec == EM_PQ_UNCOMPRESSED) {
        if (src_len != dst_len) {
            char what[160];
            snprintf(what, sizeof what,
                     "uncompressed page holds %lld bytes but its header says %lld",
                     (long long)src_len, (long long)dst_len);
            return col_corrupt_at(c, at, what);
        }
        *out = src;
        return EM_OK;
    }
    EM_TRY(em_pq_buf_ensure(buf, dst_len, c->ctx.err));
    em_status st =
        em_pq_decompress((em_pq_codec)c->codec, src, src_len, buf->p, dst_len, c->ctx.err);
    if (st != EM_OK) {
        em_error_prefix(c->ctx.err, "%s: byte %lld: column %s", c->ctx.path, (long long)at,
                        c->d->name);
        return st;
    }
    *out = buf->p;
    return EM_OK;
}

/* PLAIN decoding of n values from p[*pos..len) into dst (physical layout);
 * booleans use *pos as a bit position. */
static em_status plain_decode(pq_col *c, const uint8_t *p, int64_t len, int64_t *pos, int64_t n,
                              uint8_t *dst) {
    const pq_coldesc *d = c->d;
    switch (d->physical) {
    case EM_PQ_T_BOOLEAN: {
        int64_t bit = *pos;
        if (n > len * 8 - bit)
            return em_pq_dcorrupt(&c->ctx, bit / 8, "PLAIN booleans end before %lld values",
                                  (long long)n);
        for (int64_t i = 0; i < n; i++, bit++)
            dst[i] = (p[bit >> 3] >> (bit & 7)) & 1;
        *pos = bit;
        return EM_OK;
    }
    case EM_PQ_T_BYTE_ARRAY: {
        em_pq_view *v = (em_pq_view *)(void *)dst;
        int64_t at = *pos;
        for (int64_t i = 0; i < n; i++) {
            uint32_t l;
            if (len - at < 4)
                return em_pq_dcorrupt(&c->ctx, at, "PLAIN byte array length is truncated");
            memcpy(&l, p + at, 4);
            at += 4;
            if ((int64_t)l > len - at)
                return em_pq_dcorrupt(&c->ctx, at - 4,
                                      "PLAIN byte array of %u bytes runs past the page", l);
            v[i].ptr = p + at;
            v[i].len = l;
            at += l;
        }
        *pos = at;
        return EM_OK;
    }
    case EM_PQ_T_FIXED_LEN_BYTE_ARRAY: {
        int64_t w = d->type_length;
        if (n > (len - *pos) / w)
            return em_pq_dcorrupt(&c->ctx, *pos, "PLAIN values end before %lld values",
                                  (long long)n);
        em_pq_view *v = (em_pq_view *)(void *)dst;
        for (int64_t i = 0; i < n; i++) {
            v[i].ptr = p + *pos + i * w;
            v[i].len = w;
        }
        *pos += n * w;
        return EM_OK;
    }
    default: {
        int64_t w = d->phys_width;
        if (n > (len - *pos) / w)
            return em_pq_dcorrupt(&c->ctx, *pos, "PLAIN values end before %lld values",
                                  (long long)n);
        memcpy(dst, p + *pos, (size_t)(n * w));
        *pos += n * w;
        return EM_OK;
    }
    }
}

static em_status load_dictionary(pq_col *c, const em_pq_page_header *h, const uint8_t *data,
                                 int64_t data_off) {
    if (c->has_dict)
        return col_corrupt_at(c, c->page_offset, "second dictionary page in the column chunk");
    if (c->seen_data)
        return col_corrupt_at(c, c->page_offset, "dictionary page after a data page");
    if (h->dict_encoding != EM_PQ_ENC_PLAIN && h->dict_encoding != EM_PQ_ENC_PLAIN_DICTIONARY) {
        char what[128];
        snprintf(what, sizeof what, "dictionary page encoding %s is not supported",
                 em_pq_encoding_name(h->dict_encoding));
        return EM_FAIL(c->ctx.err, EM_ERR_UNSUPPORTED, "%s: byte %lld: column %s: %s", c->ctx.path,
                       (long long)c->page_offset, c->d->name, what);
    }
    if (h->dict_num_values < 0)
        return col_corrupt_at(c, c->page_offset, "negative dictionary size");
    const uint8_t *raw;
    EM_TRY(col_inflate(c, &c->dict_raw, data, h->compressed_size, h->uncompressed_size, true,
                       data_off, &raw));
    int64_t n = h->dict_num_values;
    /* Every PLAIN value takes at least min_bits, which bounds n (and the memory
     * for the decoded dictionary) by the page's size. */
    int64_t min_bits = c->d->physical == EM_PQ_T_BOOLEAN ? 1
                       : c->d->physical == EM_PQ_T_FIXED_LEN_BYTE_ARRAY
                           ? 8 * (int64_t)c->d->type_length
                           : 32;
    if (n > (int64_t)h->uncompressed_size * 8 / min_bits)
        return col_corrupt_at(c, c->page_offset, "dictionary count exceeds its page size");
    EM_TRY(em_pq_buf_ensure(&c->dict_vals, n * c->d->phys_width, c->ctx.err));
    c->ctx.base = c->codec == EM_PQ_UNCOMPRESSED ? data_off : c->page_offset;
    c->ctx.in_page = c->codec != EM_PQ_UNCOMPRESSED;
    int64_t pos = 0;
    EM_TRY(plain_decode(c, raw, h->uncompressed_size, &pos, n, c->dict_vals.p));
    c->dict_n = n;
    c->has_dict = true;
    return EM_OK;
}

static em_status unsupported_encoding(pq_col *c, int enc) {
    return EM_FAIL(c->ctx.err, EM_ERR_UNSUPPORTED,
                   "%s: byte %lld: column %s: encoding %s (%d) is not supported for %s",
                   c->ctx.path, (long long)c->page_offset, c->d->name, em_pq_encoding_name(enc),
                   enc, em_pq_physical_name(c->d->physical));
}

/* Sets up the value source for a data page's values region. */
static em_status setup_values(pq_col *c, int enc, const uint8_t *v, int64_t vlen,
                              int64_t max_values) {
    const pq_coldesc *d = c->d;
    c->vp = v;
    c->vlen = vlen;
    c->vpos = 0;
    c->idx_ready = false;
    switch (enc) {
    case EM_PQ_ENC_PLAIN:
        c->src = SRC_PLAIN;
        return EM_OK;
    case EM_PQ_ENC_PLAIN_DICTIONARY:
    case EM_PQ_ENC_RLE_DICTIONARY:
        if (!c->has_dict)
            return col_corrupt_at(c, c->page_offset,
                                  "dictionary-encoded page without a dictionary page");
        c->src =
            SRC_DICT; /* the bit width byte is read on first use: all-null pages may be empty */
        return EM_OK;
    case EM_PQ_ENC_RLE:
        if (d->physical != EM_PQ_T_BOOLEAN)
            return unsupported_encoding(c, enc);
        c->src = SRC_RLE_BOOL;
        return EM_OK;
    case EM_PQ_ENC_DELTA_BINARY_PACKED: {
        if (d->physical != EM_PQ_T_INT32 && d->physical != EM_PQ_T_INT64)
            return unsupported_encoding(c, enc);
        int64_t n = 0, used = 0;
        if (vlen > 0)
            EM_TRY(em_pq_delta_decode(&c->ctx, v, vlen, d->phys_width, max_values, &c->mat, &n,
                                      &used));
        c->src = SRC_PLAIN;
        c->vp = c->mat.p;
        c->vlen = n * d->phys_width;
        return EM_OK;
    }
    case EM_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case EM_PQ_ENC_DELTA_BYTE_ARRAY: {
        if (d->physical != EM_PQ_T_BYTE_ARRAY &&
            !(enc == EM_PQ_ENC_DELTA_BYTE_ARRAY && d->physical == EM_PQ_T_FIXED_LEN_BYTE_ARRAY))
            return unsupported_encoding(c, enc);
        int64_t n = 0;
        if (vlen > 0) {
            if (enc == EM_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY)
                EM_TRY(
                    em_pq_delta_length_decode(&c->ctx, v, vlen, max_values, &c->mat, &c->s1, &n));
            else
                EM_TRY(em_pq_delta_bytes_decode(&c->ctx, v, vlen, max_values, &c->mat,
                                                &c->mat_bytes, &c->s1, &c->s2, &n));
        }
        c->views = (const em_pq_view *)(const void *)c->mat.p;
        if (d->physical == EM_PQ_T_FIXED_LEN_BYTE_ARRAY)
            for (int64_t i = 0; i < n; i++)
                if (c->views[i].len != d->type_length)
                    return em_pq_dcorrupt(&c->ctx, 0,
                                          "DELTA_BYTE_ARRAY value of %lld bytes in a "
                                          "FIXED_LEN_BYTE_ARRAY(%d) column",
                                          (long long)c->views[i].len, d->type_length);
        c->views_n = n;
        c->views_pos = 0;
        c->src = SRC_VIEWS;
        return EM_OK;
    }
    case EM_PQ_ENC_BYTE_STREAM_SPLIT: {
        int w;
        switch (d->physical) {
        case EM_PQ_T_FLOAT:
        case EM_PQ_T_INT32:
            w = 4;
            break;
        case EM_PQ_T_DOUBLE:
        case EM_PQ_T_INT64:
            w = 8;
            break;
        case EM_PQ_T_FIXED_LEN_BYTE_ARRAY:
            w = d->type_length;
            break;
        default:
            return unsupported_encoding(c, enc);
        }
        int64_t n;
        EM_TRY(em_pq_bss_decode(&c->ctx, v, vlen, w, &c->mat, &n));
        c->src = SRC_PLAIN;
        c->vp = c->mat.p;
        c->vlen = n * w;
        return EM_OK;
    }
    default:
        return unsupported_encoding(c, enc);
    }
}

/* In a flat column every value is a row: a page cannot hold more values than
 * the row group has rows left, which also bounds page-wide expansions. */
static em_status check_page_values(pq_col *c, int32_t n) {
    if (n > c->rows_left) {
        char what[200];
        snprintf(what, sizeof what,
                 "page holds %d values but only %lld rows of the row group remain", n,
                 (long long)c->rows_left);
        return col_corrupt_at(c, c->page_offset, what);
    }
    return EM_OK;
}

/* Hands the pages of the file mapping this column has read past back to the
 * kernel once they add up to min_bytes: they stay in the page cache, but not
 * in the process's resident set, which a memory budget is measured by. Any
 * byte is still readable afterwards (a dictionary's or a page's views may
 * point there): the mapping is read-only, so the kernel fetches it again from
 * the file. */
static void release_mapped(pq_col *c, int64_t upto, int64_t min_bytes) {
    static long page_size;
    if (!page_size)
        page_size = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    int64_t lo = c->released / page_size * page_size, hi = upto / page_size * page_size;
    if (hi - lo < min_bytes || hi <= lo)
        return;
    (void)madvise((void *)(c->f->map + lo), (size_t)(hi - lo), MADV_DONTNEED);
    c->released = hi;
}

/* A data page of n values that lies wholly inside the rows to pass over is
 * not decompressed: flat columns hold one value slot per row, so its rows
 * are simply counted off. */
static bool skip_page(pq_col *c, int32_t n) {
    if (c->skip_rows < n)
        return false;
    c->skip_rows -= n;
    c->rows_left -= n;
    return true;
}

/* Reads page headers until a data page with values is loaded (passing over
 * pages skip_page takes). */
static em_status load_page(pq_col *c) {
    const uint8_t *map = c->f->map;
    release_mapped(c, c->pos, (int64_t)1 << 20);
    for (;;) {
        if (c->pos >= c->chunk_end) {
            char what[200];
            snprintf(what, sizeof what,
                     "column chunk ends with %lld rows of the row group still unread",
                     (long long)c->rows_left);
            return col_corrupt_at(c, c->pos, what);
        }
        em_pq_page_header h;
        c->page_offset = c->pos;
        EM_TRY(em_pq_page_header_parse(map + c->pos, c->chunk_end - c->pos, c->pos, c->ctx.path, &h,
                                       c->ctx.err));
        int64_t data_off = c->pos + h.header_size;
        if (h.compressed_size > c->chunk_end - data_off) {
            char what[200];
            snprintf(what, sizeof what,
                     "page of %d bytes runs past the end of its column chunk (byte %lld)",
                     h.compressed_size, (long long)c->chunk_end);
            return col_corrupt_at(c, c->page_offset, what);
        }
        if (h.uncompressed_size > EM_PQ_MAX_PAGE_BYTES) {
            char what[200];
            snprintf(what, sizeof what, "page of %d bytes exceeds the %d-byte limit",
                     h.uncompressed_size, EM_PQ_MAX_PAGE_BYTES);
            return col_corrupt_at(c, c->page_offset, what);
        }
        c->pos = data_off + h.compressed_size;
        const uint8_t *data = map + data_off;
        bool exact = c->codec == EM_PQ_UNCOMPRESSED;
        if (h.type == EM_PQ_PAGE_DICTIONARY) {
            if (!h.has_dict)
                return col_corrupt_at(c, c->page_offset, "dictionary page without its header");
            EM_TRY(load_dictionary(c, &h, data, data_off));
            continue;
        }
        if (h.type == EM_PQ_PAGE_DATA) {
            if (!h.has_data)
                return col_corrupt_at(c, c->page_offset, "data page without its header");
            if (h.num_values < 0)
                return col_corrupt_at(c, c->page_offset, "data page with a negative value count");
            c->seen_data = true;
            if (h.num_values == 0)
                continue;
            EM_TRY(check_page_values(c, h.num_values));
            if (skip_page(c, h.num_values))
                continue;
            const uint8_t *raw;
            EM_TRY(col_inflate(c, &c->page_buf, data, h.compressed_size, h.uncompressed_size, true,
                               data_off, &raw));
            int64_t len = h.uncompressed_size, at = 0;
            if (c->d->optional) {
                if (h.def_encoding == EM_PQ_ENC_RLE) {
                    uint32_t l;
                    if (len < 4)
                        return col_corrupt_at(c, exact ? data_off : c->page_offset,
                                              "definition levels length is truncated");
                    memcpy(&l, raw, 4);
                    if ((int64_t)l > len - 4)
                        return col_corrupt_at(c, exact ? data_off : c->page_offset,
                                              "definition levels run past the page");
                    em_rle_init(&c->def, raw + 4, l, 1);
                    c->lev_rle = true;
                    at = 4 + (int64_t)l;
                } else if (h.def_encoding == EM_PQ_ENC_BIT_PACKED) {
                    int64_t nb = ((int64_t)h.num_values + 7) / 8;
                    if (nb > len)
                        return col_corrupt_at(c, exact ? data_off : c->page_offset,
                                              "definition levels run past the page");
                    c->lev_bits = raw;
                    c->lev_bits_len = nb;
                    c->lev_bits_pos = 0;
                    c->lev_rle = false;
                    at = nb;
                } else {
                    return unsupported_encoding(c, h.def_encoding);
                }
            }
            c->ctx.base = exact ? data_off + at : c->page_offset;
            c->ctx.in_page = !exact;
            c->data_base = c->ctx.base;
            EM_TRY(setup_values(c, h.encoding, raw + at, len - at, h.num_values));
            c->page_left = h.num_values;
            return EM_OK;
        }
        if (h.type == EM_PQ_PAGE_DATA_V2) {
            if (!h.has_v2)
                return col_corrupt_at(c, c->page_offset, "data page v2 without its header");
            int64_t lv = (int64_t)h.def_length + h.rep_length;
            if (h.num_values < 0 || h.def_length < 0 || h.rep_length < 0 ||
                lv > h.compressed_size || lv > h.uncompressed_size)
                return col_corrupt_at(c, c->page_offset,
                                      "data page v2 level lengths exceed the page");
            c->seen_data = true;
            if (h.num_values == 0)
                continue;
            EM_TRY(check_page_values(c, h.num_values));
            if (skip_page(c, h.num_values))
                continue;
            if (c->d->optional) {
                em_rle_init(&c->def, data + h.rep_length, h.def_length, 1);
                c->lev_rle = true;
            }
            const uint8_t *raw;
            EM_TRY(col_inflate(c, &c->page_buf, data + lv, h.compressed_size - lv,
                               h.uncompressed_size - lv, h.is_compressed, data_off + lv, &raw));
            exact = exact || !h.is_compressed;
            c->ctx.base = exact ? data_off + lv : c->page_offset;
            c->ctx.in_page = !exact;
            c->data_base = c->ctx.base;
            EM_TRY(setup_values(c, h.encoding, raw, h.uncompressed_size - lv, h.num_values));
            c->page_left = h.num_values;
            return EM_OK;
        }
        /* Index pages and unknown page types carry no values for us. */
    }
}

/* Decodes k definition levels. Sets *m to the non-null count; *all_valid when
 * every level is 1, in which case lev is not filled. */
static em_status read_levels(pq_col *c, int64_t k, uint32_t *lev, int64_t *m, bool *all_valid) {
    *all_valid = false;
    if (!c->d->optional) {
        *m = k;
        *all_valid = true;
        return EM_OK;
    }
    if (c->lev_rle) {
        em_rle_dec *d = &c->def;
        if (em_rle_prime(d) && d->rle_left >= k && d->rle_value == 1) {
            d->rle_left -= (uint32_t)k;
            *m = k;
            *all_valid = true;
            return EM_OK;
        }
        int64_t got = em_rle_get(d, lev, k);
        if (got < k)
            return em_pq_dcorrupt(&c->ctx, 0,
                                  "definition levels end after %lld of the page's values",
                                  (long long)got);
        uint32_t any = 0;
        int64_t cnt = 0;
        for (int64_t i = 0; i < k; i++) {
            any |= lev[i];
            cnt += lev[i];
        }
        if (any > 1)
            return em_pq_dcorrupt(&c->ctx, 0, "definition level above the maximum of 1");
        *m = cnt;
        *all_valid = cnt == k;
        return EM_OK;
    }
    if (k > c->lev_bits_len * 8 - c->lev_bits_pos)
        return em_pq_dcorrupt(&c->ctx, 0, "BIT_PACKED definition levels are truncated");
    int64_t cnt = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t bit = c->lev_bits_pos + i;
        lev[i] = (c->lev_bits[bit >> 3] >> (7 - (bit & 7))) & 1; /* MSB first */
        cnt += lev[i];
    }
    c->lev_bits_pos += k;
    *m = cnt;
    *all_valid = cnt == k;
    return EM_OK;
}

/* Decodes m dictionary indices into the ids scratch (not range-checked). */
static em_status dict_indices(pq_col *c, int64_t m, const uint32_t **out) {
    if (!c->idx_ready) {
        if (c->vlen < 1)
            return em_pq_dcorrupt(&c->ctx, 0, "dictionary indices are missing");
        int bw = c->vp[0];
        if (bw > 32)
            return em_pq_dcorrupt(&c->ctx, 0, "dictionary index bit width %d exceeds 32", bw);
        em_rle_init(&c->idx, c->vp + 1, c->vlen - 1, bw);
        c->idx_ready = true;
    }
    uint32_t *ids = (uint32_t *)(void *)c->ids.p;
    int64_t got = em_rle_get(&c->idx, ids, m);
    if (got < m)
        return em_pq_dcorrupt(&c->ctx, 0, "dictionary indices end %lld values before the levels do",
                              (long long)(m - got));
    *out = ids;
    return EM_OK;
}

/* EM_OK when every index is inside the dictionary, else the error naming the largest. */
static em_status dict_range_check(pq_col *c, const uint32_t *ids, int64_t m) {
    uint32_t mx = 0;
    for (int64_t i = 0; i < m; i++)
        mx = ids[i] > mx ? ids[i] : mx;
    if (m == 0 || (int64_t)mx < c->dict_n)
        return EM_OK;
    return em_pq_dcorrupt(&c->ctx, 0,
                          "dictionary index %u out of range (the dictionary has %lld values)", mx,
                          (long long)c->dict_n);
}

static em_status decode_values(pq_col *c, int64_t m, uint8_t *dst) {
    if (m == 0)
        return EM_OK;
    switch (c->src) {
    case SRC_PLAIN:
        return plain_decode(c, c->vp, c->vlen, &c->vpos, m, dst);
    case SRC_DICT: {
        const uint32_t *ids;
        EM_TRY(dict_indices(c, m, &ids));
        /* The range check rides along the gather: an index out of range reads
         * entry 0 instead and marks the batch bad, reported after the loop. */
        const uint32_t lim = c->dict_n > UINT32_MAX ? UINT32_MAX : (uint32_t)c->dict_n;
        const uint8_t *dv = c->dict_vals.p;
        uint32_t bad = lim == 0;
#define EM_GATHER(W)                                                                               \
    for (int64_t i = 0; i < m; i++) {                                                              \
        uint32_t id = ids[i];                                                                      \
        bad |= id >= lim;                                                                          \
        id = id < lim ? id : 0;                                                                    \
        memcpy(dst + (W)*i, dv + (W) * (size_t)id, (W));                                           \
    }
        if (!bad) {
            switch (c->d->phys_width) {
            case 1:
                EM_GATHER(1);
                break;
            case 4:
                EM_GATHER(4);
                break;
            case 8:
                EM_GATHER(8);
                break;
            case 12:
                EM_GATHER(12);
                break;
            default:
                EM_GATHER(16);
                break;
            }
        }
#undef EM_GATHER
        if (bad)
            return dict_range_check(c, ids, m);
        return EM_OK;
    }
    case SRC_RLE_BOOL: {
        if (!c->idx_ready) {
            uint32_t l;
            if (c->vlen < 4)
                return em_pq_dcorrupt(&c->ctx, 0, "RLE boolean length is truncated");
            memcpy(&l, c->vp, 4);
            if ((int64_t)l > c->vlen - 4)
                return em_pq_dcorrupt(&c->ctx, 0, "RLE booleans run past the page");
            em_rle_init(&c->idx, c->vp + 4, l, 1);
            c->idx_ready = true;
        }
        uint32_t *ids = (uint32_t *)(void *)c->ids.p;
        int64_t got = em_rle_get(&c->idx, ids, m);
        if (got < m)
            return em_pq_dcorrupt(&c->ctx, 0, "RLE booleans end %lld values early",
                                  (long long)(m - got));
        for (int64_t i = 0; i < m; i++)
            dst[i] = ids[i] != 0;
        return EM_OK;
    }
    case SRC_VIEWS:
        if (m > c->views_n - c->views_pos)
            return em_pq_dcorrupt(&c->ctx, 0, "page holds %lld values but its levels need more",
                                  (long long)c->views_n);
        memcpy(dst, c->views + c->views_pos, (size_t)m * sizeof(em_pq_view));
        c->views_pos += m;
        return EM_OK;
    default:
        return em_pq_dcorrupt(&c->ctx, 0, "no page loaded");
    }
}

/* Converts m dense physical values into the output's layout at out. */
static em_status convert_values(pq_col *c, const uint8_t *in, int64_t m, uint8_t *out) {
    switch (c->d->conv) {
    case CV_I32_I8: {
        const int32_t *s = (const int32_t *)(const void *)in;
        for (int64_t i = 0; i < m; i++)
            ((int8_t *)out)[i] = (int8_t)s[i];
        break;
    }
    case CV_I32_I16: {
        const int32_t *s = (const int32_t *)(const void *)in;
        int16_t *o = (int16_t *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = (int16_t)s[i];
        break;
    }
    case CV_U32_I64: {
        const uint32_t *s = (const uint32_t *)(const void *)in;
        int64_t *o = (int64_t *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = s[i];
        break;
    }
    case CV_I32_DEC: {
        const int32_t *s = (const int32_t *)(const void *)in;
        em_i128 *o = (em_i128 *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = s[i];
        break;
    }
    case CV_I64_DEC: {
        const int64_t *s = (const int64_t *)(const void *)in;
        em_i128 *o = (em_i128 *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = s[i];
        break;
    }
    case CV_U64_DEC: {
        const uint64_t *s = (const uint64_t *)(const void *)in;
        em_i128 *o = (em_i128 *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = (em_i128)s[i];
        break;
    }
    case CV_MILLIS: {
        const uint64_t *s = (const uint64_t *)(const void *)in;
        int64_t *o = (int64_t *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = (int64_t)(s[i] * 1000u);
        break;
    }
    case CV_NANOS: {
        const int64_t *s = (const int64_t *)(const void *)in;
        int64_t *o = (int64_t *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = s[i] / 1000 - (s[i] % 1000 < 0); /* floor */
        break;
    }
    case CV_INT96: {
        int64_t *o = (int64_t *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            o[i] = em_pq_int96_micros(in + 12 * i);
        break;
    }
    case CV_BYTES_DEC: {
        const em_pq_view *v = (const em_pq_view *)(const void *)in;
        em_i128 *o = (em_i128 *)(void *)out;
        for (int64_t i = 0; i < m; i++)
            if (!em_pq_be_to_i128(v[i].ptr, v[i].len, &o[i]))
                return em_pq_dcorrupt(&c->ctx, 0, "decimal value of %lld bytes exceeds 128 bits",
                                      (long long)v[i].len);
        break;
    }
    default:
        break;
    }
    return EM_OK;
}

/* Spreads m dense values at base[0..m) over k rows by the levels, in place, backwards. */
static void scatter(uint8_t *base, int w, const uint32_t *lev, int64_t k, int64_t m) {
    int64_t j = m - 1;
#define EM_SCATTER(W)                                                                              \
    for (int64_t i = k - 1; i >= 0 && i > j; i--) {                                                \
        if (lev[i])                                                                                \
            memcpy(base + (W)*i, base + (W)*j--, (W));                                             \
        else                                                                                       \
            memset(base + (W)*i, 0, (W));                                                          \
    }
    switch (w) {
    case 1:
        EM_SCATTER(1);
        break;
    case 2:
        EM_SCATTER(2);
        break;
    case 4:
        EM_SCATTER(4);
        break;
    case 8:
        EM_SCATTER(8);
        break;
    default:
        EM_SCATTER(16);
        break;
    }
#undef EM_SCATTER
}

/* Copies a short value with two fixed 16-byte moves (one vector load and store
 * each) when both sides have slack, else with memcpy. */
static inline void copy_value(uint8_t *dst, const uint8_t *src, int64_t len, uintptr_t map_lo,
                              uintptr_t map_hi) {
    uintptr_t s = (uintptr_t)src;
    bool src_slack = s < map_lo || s >= map_hi || s + 32 <= map_hi;
    if (len <= 32 && src_slack) {
        memcpy(dst, src, 16);
        memcpy(dst + 16, src + 16, 16);
    } else {
        memcpy(dst, src, (size_t)len);
    }
}

/* Copies m values into the string column's rows r0..r0+k (nulls where the
 * levels say, unless all_valid): value j is v[j], or v[ids[j]] when the values
 * come from a dictionary (ids already range-checked). */
static em_status emit_varlen(pq_col *c, const em_pq_view *v, const uint32_t *ids, int64_t m,
                             const uint32_t *lev, bool all_valid, int64_t r0, int64_t k,
                             em_column *out) {
    int32_t *off = (int32_t *)(void *)out->values->data;
    int64_t total = 0;
    if (ids)
        for (int64_t i = 0; i < m; i++)
            total += v[ids[i]].len;
    else
        for (int64_t i = 0; i < m; i++)
            total += v[i].len;
    int64_t pos = off[r0];
    if (pos + total > INT32_MAX)
        return EM_FAIL(c->ctx.err, EM_ERR_OVERFLOW,
                       "%s: column %s: more than 2 GiB of bytes in one batch (lower batch_rows)",
                       c->ctx.path, c->d->name);
    /* 32 spare bytes for copy_value's fixed-size moves. */
    EM_TRY(em_buffer_reserve(out->data, pos + total + 32, c->ctx.err));
    uint8_t *chars = out->data->data;
    /* Views point into the file mapping (uncompressed pages) or into the reader's
     * buffers, which all carry slack; only the mapping's end needs care. */
    uintptr_t lo = (uintptr_t)c->f->map, hi = lo + (uintptr_t)c->f->size;
    int64_t j = 0;
    for (int64_t i = 0; i < k; i++) {
        if (all_valid || lev[i]) {
            const em_pq_view *x = ids ? &v[ids[j]] : &v[j];
            copy_value(chars + pos, x->ptr, x->len, lo, hi);
            pos += x->len;
            j++;
        }
        off[r0 + i + 1] = (int32_t)pos;
    }
    return EM_OK;
}

/* Reads n rows of one column into out (a fresh column with room for n rows). */
static em_status read_column(pq_col *c, int64_t n, em_column *out) {
    const pq_coldesc *d = c->d;
    int ow = em_type_width(d->type);
    uint32_t *lev = (uint32_t *)(void *)c->lev.p;
    int64_t r0 = 0, nulls = 0;
    while (r0 < n) {
        if (c->page_left == 0)
            EM_TRY(load_page(c));
        int64_t k = n - r0 < c->page_left ? n - r0 : c->page_left;
        int64_t m = 0;
        bool all_valid = false;
        EM_TRY(read_levels(c, k, lev, &m, &all_valid));
        bool direct = d->conv == CV_COPY;
        uint8_t *dst = direct ? out->values->data + r0 * ow : c->phys.p;
        if (d->conv == CV_VARLEN && c->src == SRC_DICT) {
            /* Strings straight from the dictionary, without gathering views first. */
            const uint32_t *ids = NULL;
            if (m > 0) {
                EM_TRY(dict_indices(c, m, &ids));
                EM_TRY(dict_range_check(c, ids, m));
            }
            EM_TRY(emit_varlen(c, (const em_pq_view *)(void *)c->dict_vals.p, ids, m, lev,
                               all_valid, r0, k, out));
        } else if (d->conv == CV_VARLEN) {
            EM_TRY(decode_values(c, m, dst));
            EM_TRY(emit_varlen(c, (const em_pq_view *)(void *)dst, NULL, m, lev, all_valid, r0, k,
                               out));
        } else if (d->conv == CV_BOOL) {
            EM_TRY(decode_values(c, m, dst));
            uint8_t *bits = out->values->data;
            int64_t j = 0;
            for (int64_t i = 0; i < k; i++)
                em_bit_put(bits, r0 + i, (all_valid || lev[i]) ? dst[j++] : 0);
        } else {
            EM_TRY(decode_values(c, m, dst));
            if (!direct)
                EM_TRY(convert_values(c, dst, m, out->values->data + r0 * ow));
            if (!all_valid)
                scatter(out->values->data + r0 * ow, ow, lev, k, m);
        }
        if (!all_valid) {
            EM_TRY(em_column_ensure_validity(out, c->ctx.err));
            uint8_t *vb = out->validity->data;
            for (int64_t i = 0; i < k; i++)
                if (!lev[i])
                    em_bit_clear(vb, r0 + i);
            nulls += k - m;
        }
        r0 += k;
        c->page_left -= k;
        c->rows_left -= k;
    }
    out->length = n;
    out->null_count = nulls;
    if (d->conv == CV_VARLEN) {
        out->values->size = (n + 1) * (int64_t)sizeof(int32_t);
        out->data->size = ((const int32_t *)(const void *)out->values->data)[n];
    } else if (d->conv == CV_BOOL) {
        out->values->size = em_bitmap_bytes(n);
    } else {
        out->values->size = n * ow;
    }
    if (out->validity)
        out->validity->size = em_bitmap_bytes(n);
    return EM_OK;
}

/* ---------------------------------------------------------------- reader */

static em_status col_open_chunk(pq_col *c, int rg) {
    const em_pq_file *f = c->f;
    const em_pq_column_meta *m = &f->meta.row_groups[rg].columns[c->file_col].meta;
    int64_t start = m->data_page_offset;
    if (m->has_dictionary_page_offset && m->dictionary_page_offset > 0 &&
        m->dictionary_page_offset < start)
        start = m->dictionary_page_offset;
    if (start < 4 || m->total_compressed_size <= 0 || start > f->data_end ||
        m->total_compressed_size > f->data_end - start) {
        char what[200];
        snprintf(what, sizeof what,
                 "column chunk of %lld bytes at byte %lld lies outside the data (which ends at "
                 "byte %lld)",
                 (long long)m->total_compressed_size, (long long)start, (long long)f->data_end);
        return col_corrupt_at(c, start < 0 || start > f->size ? 0 : start, what);
    }
    if (m->codec < EM_PQ_UNCOMPRESSED || m->codec > EM_PQ_LZ4_RAW)
        return EM_FAIL(c->ctx.err, EM_ERR_UNSUPPORTED, "%s: column %s: unknown codec %d",
                       c->ctx.path, c->d->name, m->codec);
    c->codec = m->codec;
    if (c->chunk_end > c->released)
        release_mapped(c, c->chunk_end, 0); /* the previous chunk's last pages */
    c->pos = start;
    c->released = start;
    c->chunk_end = start + m->total_compressed_size;
    c->rows_left = f->meta.row_groups[rg].num_rows;
    c->has_dict = false;
    c->dict_n = 0;
    c->seen_data = false;
    c->page_left = 0;
    c->skip_rows = 0;
    c->src = SRC_NONE;
    return EM_OK;
}

/* The column's buffers, for setting their pool and freeing them. */
#define PQ_COL_BUFS 10
static void col_bufs(pq_col *c, em_pq_buf *out[PQ_COL_BUFS]) {
    em_pq_buf *all[PQ_COL_BUFS] = {&c->dict_raw,  &c->dict_vals, &c->page_buf, &c->mat,
                                   &c->mat_bytes, &c->s1,        &c->s2,       &c->lev,
                                   &c->ids,       &c->phys};
    memcpy(out, all, sizeof all);
}

static void col_free(pq_col *c) {
    em_pq_buf *bufs[PQ_COL_BUFS];
    col_bufs(c, bufs);
    for (int i = 0; i < PQ_COL_BUFS; i++)
        em_pq_buf_free(bufs[i]);
}

void em_pq_reader_close(em_pq_reader *r) {
    if (!r)
        return;
    em_batch_destroy(r->batch);
    if (r->cols)
        for (int i = 0; i < r->n_cols; i++)
            col_free(&r->cols[i]);
    free(r->cols);
    free(r->rg_sel);
    em_schema_reset(&r->schema);
    free(r);
}

em_status em_pq_reader_open(em_pq_file *f, const em_pq_read_options *opts, em_pq_reader **out,
                            em_error *err) {
    *out = NULL;
    em_pq_read_options none = {0};
    if (!opts)
        opts = &none;
    int n = opts->columns ? opts->n_columns : f->n_cols;
    if (n < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "%s: negative column count", f->path);
    for (int i = 0; opts->columns && i < n; i++)
        if (opts->columns[i] < 0 || opts->columns[i] >= f->n_cols)
            return EM_FAIL(err, EM_ERR_INVALID, "%s: no column %d (the file has %d)", f->path,
                           opts->columns[i], f->n_cols);
    em_pq_reader *r = calloc(1, sizeof *r);
    if (!r)
        return EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory", f->path);
    r->f = f;
    r->rg = -1;
    r->pool = opts->pool;
    r->batch_rows = opts->batch_rows > 0 ? opts->batch_rows : EM_BATCH_CAP;
    if (opts->row_end > 0) {
        if (opts->row_start < 0 || opts->row_start >= opts->row_end) {
            free(r);
            return EM_FAIL(err, EM_ERR_INVALID, "%s: empty or negative row range [%lld, %lld)",
                           f->path, (long long)opts->row_start, (long long)opts->row_end);
        }
        r->row_start = opts->row_start;
        r->row_end = opts->row_end;
    }
    if (r->batch_rows > (1 << 24))
        r->batch_rows = 1 << 24;
    em_status st = em_schema_init(&r->schema, n, err);
    if (st != EM_OK)
        goto fail;
    r->cols = calloc(n ? (size_t)n : 1, sizeof *r->cols);
    if (!r->cols) {
        st = EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory", f->path);
        goto fail;
    }
    r->n_cols = n;
    for (int i = 0; i < n; i++) {
        int fc = opts->columns ? opts->columns[i] : i;
        const em_field *fld = &f->schema.fields[fc];
        st = em_schema_set(&r->schema, i, fld->name, fld->type, fld->nullable, err);
        if (st != EM_OK)
            goto fail;
        pq_col *c = &r->cols[i];
        c->f = f;
        c->d = &f->cols[fc];
        c->file_col = fc;
        c->pool = r->pool;
        c->ctx.path = f->path;
        c->ctx.column = c->d->name;
        c->ctx.pool = r->pool;
        em_pq_buf *bufs[PQ_COL_BUFS];
        col_bufs(c, bufs);
        for (int b = 0; b < PQ_COL_BUFS; b++)
            bufs[b]->pool = r->pool;
        if ((st = em_pq_buf_ensure(&c->lev, r->batch_rows * 4, err)) != EM_OK ||
            (st = em_pq_buf_ensure(&c->ids, r->batch_rows * 4, err)) != EM_OK ||
            (st = em_pq_buf_ensure(&c->phys, r->batch_rows * 16, err)) != EM_OK)
            goto fail;
    }
    r->cap_rows = 1;
    for (int g = 0; g < f->meta.n_row_groups; g++) {
        int64_t rows = f->meta.row_groups[g].num_rows;
        if (rows > r->cap_rows)
            r->cap_rows = rows < r->batch_rows ? rows : r->batch_rows;
    }
    if (opts->row_groups) {
        r->rg_sel = calloc(f->meta.n_row_groups ? (size_t)f->meta.n_row_groups : 1, 1);
        if (!r->rg_sel) {
            st = EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory", f->path);
            goto fail;
        }
        memcpy(r->rg_sel, opts->row_groups, (size_t)f->meta.n_row_groups);
    }
    *out = r;
    return EM_OK;
fail:
    em_pq_reader_close(r);
    return st;
}

const em_schema *em_pq_reader_schema(const em_pq_reader *r) { return &r->schema; }

static bool buffer_private(const em_buffer *buf) {
    return !buf || (buf->release == NULL && atomic_load(&buf->refcount) == 1);
}

/* The previous batch may be refilled in place when nobody else holds its
 * buffers (a consumer keeping columns past next() takes references) and it
 * still has the reader's shape; otherwise a fresh batch is made. Refilling
 * saves the allocations and the page faults of new buffers on every batch. */
static bool batch_reusable(const em_pq_reader *r, const em_batch *b) {
    if (!b || b->sel || b->n_cols != r->n_cols)
        return false;
    for (int i = 0; i < b->n_cols; i++) {
        const em_column *c = &b->cols[i];
        if (!em_type_equal(c->type, r->schema.fields[i].type) || !c->values ||
            !buffer_private(c->values) || !buffer_private(c->validity) || !buffer_private(c->data))
            return false;
        int64_t need = c->type.id == EM_TYPE_BOOLEAN ? em_bitmap_bytes(r->cap_rows)
                       : em_type_is_varlen(c->type)  ? (r->cap_rows + 1) * 4
                                                     : r->cap_rows * em_type_width(c->type);
        if (c->values->capacity < need ||
            (c->validity && c->validity->capacity < em_bitmap_bytes(r->cap_rows)))
            return false;
    }
    return true;
}

static void column_refill_reset(em_column *c) {
    c->length = 0;
    c->null_count = 0;
    if (c->validity) {
        memset(c->validity->data, 0xff, (size_t)c->validity->capacity);
        c->validity->size = 0;
    }
    if (em_type_is_varlen(c->type)) {
        ((int32_t *)(void *)c->values->data)[0] = 0;
        c->values->size = (int64_t)sizeof(int32_t);
        c->data->size = 0;
    } else {
        c->values->size = 0;
    }
}

static void batch_refill_reset(em_batch *b) {
    for (int i = 0; i < b->n_cols; i++)
        column_refill_reset(&b->cols[i]);
    b->n_rows = 0;
}

/* Passes over the column's skip_rows (none but at a row range's start):
 * whole pages by their headers, the rest decoded into `scratch` (a batch
 * column, reset afterwards) and dropped. */
static em_status col_skip(pq_col *c, int64_t cap, em_column *scratch) {
    while (c->skip_rows > 0) {
        if (c->page_left == 0) {
            EM_TRY(load_page(c));
            continue;
        }
        int64_t k = c->skip_rows < c->page_left ? c->skip_rows : c->page_left;
        if (k > cap)
            k = cap;
        c->skip_rows -= k;
        em_status st = read_column(c, k, scratch);
        column_refill_reset(scratch);
        EM_TRY(st);
    }
    return EM_OK;
}

static em_status reader_fail(em_pq_reader *r, em_status st, em_error *err) {
    r->failed = st;
    snprintf(r->failed_msg, sizeof r->failed_msg, "%s", err ? err->msg : "read failed");
    return st;
}

em_status em_pq_reader_next(em_pq_reader *r, em_batch **out, em_error *err) {
    *out = NULL;
    if (r->failed)
        return EM_FAIL(err, r->failed, "%s", r->failed_msg);
    em_error local;
    if (!err)
        err = &local;
    for (int i = 0; i < r->n_cols; i++)
        r->cols[i].ctx.err = err;
    const em_pq_file_meta *m = &r->f->meta;
    while (r->rg_left == 0) {
        if (r->rg + 1 >= m->n_row_groups || (r->row_end > 0 && r->next_rg_row >= r->row_end))
            return EM_DONE;
        r->rg++;
        int64_t rows = m->row_groups[r->rg].num_rows;
        int64_t first = r->next_rg_row, lo = first, hi = first + rows;
        r->next_rg_row = hi;
        if (r->row_end > 0) {
            lo = lo > r->row_start ? lo : r->row_start;
            hi = hi < r->row_end ? hi : r->row_end;
        }
        if ((r->rg_sel && !r->rg_sel[r->rg]) || hi <= lo)
            continue;
        for (int i = 0; i < r->n_cols; i++) {
            em_status st = col_open_chunk(&r->cols[i], r->rg);
            if (st != EM_OK)
                return reader_fail(r, st, err);
            r->cols[i].skip_rows = lo - first;
        }
        r->rg_left = hi - lo;
    }
    int64_t n = r->rg_left < r->batch_rows ? r->rg_left : r->batch_rows;
    em_batch *b = r->batch;
    r->batch = NULL;
    em_status st = EM_OK;
    if (batch_reusable(r, b)) {
        batch_refill_reset(b);
    } else {
        em_batch_destroy(b);
        st = em_batch_create(&r->schema, r->cap_rows, r->pool, &b, err);
        if (st != EM_OK)
            return reader_fail(r, st, err);
    }
    for (int i = 0; i < r->n_cols; i++) {
        st = col_skip(&r->cols[i], r->cap_rows, &b->cols[i]);
        if (st == EM_OK)
            st = read_column(&r->cols[i], n, &b->cols[i]);
        if (st != EM_OK) {
            em_batch_destroy(b);
            return reader_fail(r, st, err);
        }
    }
    b->n_rows = n;
    r->rg_left -= n;
    r->batch = b;
    *out = b;
    return EM_OK;
}
