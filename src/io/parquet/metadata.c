/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FileMetaData and PageHeader parsing (parquet.thrift field ids).
 *
 * One loop (read_struct) walks a struct's field headers and hands each field
 * to a per-struct function that decodes the fields it knows; whatever that
 * function does not claim is skipped, whatever its type, so files from newer
 * writers (size statistics, geospatial types, encryption fields) still open.
 * The per-struct function marks required fields in a bit mask and a missing
 * one is corruption named with the offset of the struct's end. Arrays are
 * sized from list counts, which thrift_read has already bounded by the bytes
 * remaining, so a hostile count cannot allocate more than the footer's size.
 */
#include "io/parquet/metadata.h"

#include <stdlib.h>
#include <string.h>

#include "io/parquet/format.h"
#include "io/parquet/thrift_read.h"

/* Decodes one field of a struct into obj; sets bits of *have for required
 * fields; returns EM_DONE for a field it does not know (then skipped). */
typedef em_status (*field_fn)(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have);

static em_status read_struct(em_tc_reader *r, field_fn fn, void *obj, unsigned required,
                             const char *what) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        em_status st = fn(r, &f, obj, &have);
        if (st == EM_DONE)
            st = em_tc_skip(r, f.type);
        if (st != EM_OK)
            return st;
    }
    em_tc_struct_end(r);
    if ((have & required) != required)
        return em_tc_corrupt(r, "%s lacks a required field", what);
    return EM_OK;
}

static em_status expect_struct(em_tc_reader *r, const em_tc_field *f, const char *what) {
    if (f->type != EM_TC_STRUCT)
        return em_tc_corrupt(r, "%s is not a struct", what);
    return EM_OK;
}

/* A list<struct> field: allocates *arr (count elements of size bytes, zeroed)
 * and reads each element with fn. *count grows as elements are read, so a
 * failure leaves every allocated element visible to the reset function. */
static em_status read_struct_list(em_tc_reader *r, const em_tc_field *f, size_t size, void **arr,
                                  int *count, field_fn fn, unsigned required, const char *what) {
    int et = 0;
    int32_t n = 0;
    EM_TRY(em_tc_list_begin(r, f->type, &et, &n));
    if (et != EM_TC_STRUCT)
        return em_tc_corrupt(r, "%s holds non-structs", what);
    if (*arr)
        return em_tc_corrupt(r, "%s appears twice", what);
    *arr = calloc(n ? (size_t)n : 1, size);
    if (!*arr)
        return EM_FAIL(r->err, EM_ERR_NOMEM, "out of memory reading Parquet metadata");
    for (int32_t i = 0; i < n; i++) {
        *count = i + 1;
        EM_TRY(read_struct(r, fn, (char *)*arr + (size_t)i * size, required, what));
    }
    em_tc_list_end(r);
    return EM_OK;
}

static em_status read_bytes(em_tc_reader *r, int type, em_pq_bytes *b) {
    return em_tc_read_binary(r, type, &b->ptr, &b->len);
}

static em_status read_string(em_tc_reader *r, int type, char **out) {
    const uint8_t *p;
    int32_t n = 0;
    EM_TRY(em_tc_read_binary(r, type, &p, &n));
    char *s = malloc((size_t)n + 1);
    if (!s)
        return EM_FAIL(r->err, EM_ERR_NOMEM, "out of memory reading Parquet metadata");
    memcpy(s, p, (size_t)n);
    s[n] = '\0';
    free(*out);
    *out = s;
    return EM_OK;
}

static em_status read_enum(em_tc_reader *r, int type, int *out) {
    int32_t v = 0;
    EM_TRY(em_tc_read_i32(r, type, &v));
    *out = v;
    return EM_OK;
}

/* TimeUnit: a union of empty marker structs (1 MILLIS, 2 MICROS, 3 NANOS). */
static em_status time_unit_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    (void)have;
    if (f->id < 1 || f->id > 3)
        return EM_DONE;
    EM_TRY(expect_struct(r, f, "TimeUnit member"));
    *(int *)obj = f->id;
    return em_tc_skip(r, f->type);
}

/* TimeType / TimestampType: 1 isAdjustedToUTC, 2 unit. */
static em_status time_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_logical *lt = obj;
    (void)have;
    switch (f->id) {
    case 1:
        return em_tc_read_bool(r, f->type, &lt->utc);
    case 2:
        EM_TRY(expect_struct(r, f, "TimeUnit"));
        return read_struct(r, time_unit_field, &lt->unit, 0, "TimeUnit");
    default:
        return EM_DONE;
    }
}

/* DecimalType: 1 scale, 2 precision. */
static em_status decimal_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_logical *lt = obj;
    (void)have;
    if (f->id == 1)
        return em_tc_read_i32(r, f->type, &lt->scale);
    if (f->id == 2)
        return em_tc_read_i32(r, f->type, &lt->precision);
    return EM_DONE;
}

/* IntType: 1 bitWidth (i8), 2 isSigned. */
static em_status int_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_logical *lt = obj;
    (void)have;
    if (f->id == 1) {
        int32_t w = 0;
        EM_TRY(em_tc_read_i32(r, f->type, &w));
        lt->bit_width = w;
        return EM_OK;
    }
    if (f->id == 2)
        return em_tc_read_bool(r, f->type, &lt->is_signed);
    return EM_DONE;
}

/* LogicalType: a union; the member's field id is its kind. */
static em_status logical_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_logical *lt = obj;
    (void)have;
    EM_TRY(expect_struct(r, f, "LogicalType member"));
    switch (f->id) {
    case EM_PQ_LT_DECIMAL:
        lt->kind = f->id;
        return read_struct(r, decimal_field, lt, 0, "DecimalType");
    case EM_PQ_LT_TIME:
    case EM_PQ_LT_TIMESTAMP:
        lt->kind = f->id;
        return read_struct(r, time_field, lt, 0, "TimestampType");
    case EM_PQ_LT_INTEGER:
        lt->kind = f->id;
        return read_struct(r, int_field, lt, 0, "IntType");
    case EM_PQ_LT_STRING:
    case EM_PQ_LT_MAP:
    case EM_PQ_LT_LIST:
    case EM_PQ_LT_ENUM:
    case EM_PQ_LT_DATE:
    case EM_PQ_LT_UNKNOWN:
    case EM_PQ_LT_JSON:
    case EM_PQ_LT_BSON:
    case EM_PQ_LT_UUID:
    case EM_PQ_LT_FLOAT16:
        lt->kind = f->id;
        return EM_DONE;
    default:
        lt->kind = EM_PQ_LT_OTHER; /* interval, variant, geometry, geography ... */
        return EM_DONE;
    }
}

static em_status schema_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_schema_elem *e = obj;
    switch (f->id) {
    case 1:
        e->has_type = true;
        return read_enum(r, f->type, &e->type);
    case 2:
        return em_tc_read_i32(r, f->type, &e->type_length);
    case 3:
        e->has_repetition = true;
        return read_enum(r, f->type, &e->repetition);
    case 4:
        *have |= 1;
        return read_string(r, f->type, &e->name);
    case 5:
        return em_tc_read_i32(r, f->type, &e->num_children);
    case 6:
        e->has_converted = true;
        return read_enum(r, f->type, &e->converted);
    case 7:
        e->has_scale = true;
        return em_tc_read_i32(r, f->type, &e->scale);
    case 8:
        e->has_precision = true;
        return em_tc_read_i32(r, f->type, &e->precision);
    case 10:
        EM_TRY(expect_struct(r, f, "SchemaElement.logicalType"));
        memset(&e->logical, 0, sizeof e->logical);
        return read_struct(r, logical_field, &e->logical, 0, "LogicalType");
    default:
        return EM_DONE;
    }
}

static em_status stats_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_raw_stats *s = obj;
    (void)have;
    switch (f->id) {
    case 1:
        return read_bytes(r, f->type, &s->max);
    case 2:
        return read_bytes(r, f->type, &s->min);
    case 3:
        s->has_null_count = true;
        return em_tc_read_i64(r, f->type, &s->null_count);
    case 5:
        return read_bytes(r, f->type, &s->max_value);
    case 6:
        return read_bytes(r, f->type, &s->min_value);
    default:
        return EM_DONE;
    }
}

static em_status column_meta_field(em_tc_reader *r, const em_tc_field *f, void *obj,
                                   unsigned *have) {
    em_pq_column_meta *m = obj;
    switch (f->id) {
    case 1:
        *have |= 1;
        return read_enum(r, f->type, &m->type);
    case 2: {
        int et = 0;
        int32_t n = 0;
        EM_TRY(em_tc_list_begin(r, f->type, &et, &n));
        for (int32_t i = 0; i < n; i++) {
            int e = 0;
            EM_TRY(read_enum(r, et, &e));
            if (m->n_encodings < (int)(sizeof m->encodings / sizeof m->encodings[0]))
                m->encodings[m->n_encodings++] = e;
        }
        em_tc_list_end(r);
        return EM_OK;
    }
    case 4:
        *have |= 2;
        return read_enum(r, f->type, &m->codec);
    case 5:
        *have |= 4;
        return em_tc_read_i64(r, f->type, &m->num_values);
    case 6:
        *have |= 8;
        return em_tc_read_i64(r, f->type, &m->total_uncompressed_size);
    case 7:
        *have |= 16;
        return em_tc_read_i64(r, f->type, &m->total_compressed_size);
    case 9:
        *have |= 32;
        return em_tc_read_i64(r, f->type, &m->data_page_offset);
    case 11:
        m->has_dictionary_page_offset = true;
        return em_tc_read_i64(r, f->type, &m->dictionary_page_offset);
    case 12:
        EM_TRY(expect_struct(r, f, "ColumnMetaData.statistics"));
        m->has_statistics = true;
        return read_struct(r, stats_field, &m->statistics, 0, "Statistics");
    default:
        return EM_DONE;
    }
}

static em_status column_chunk_field(em_tc_reader *r, const em_tc_field *f, void *obj,
                                    unsigned *have) {
    em_pq_column_chunk *c = obj;
    (void)have;
    switch (f->id) {
    case 1: {
        em_pq_bytes path;
        c->has_file_path = true;
        return read_bytes(r, f->type, &path);
    }
    case 2:
        return em_tc_read_i64(r, f->type, &c->file_offset);
    case 3:
        EM_TRY(expect_struct(r, f, "ColumnChunk.meta_data"));
        c->has_meta = true;
        return read_struct(r, column_meta_field, &c->meta, 63, "ColumnMetaData");
    default:
        return EM_DONE;
    }
}

static em_status row_group_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_row_group *g = obj;
    switch (f->id) {
    case 1:
        *have |= 1;
        return read_struct_list(r, f, sizeof *g->columns, (void **)&g->columns, &g->n_columns,
                                column_chunk_field, 0, "RowGroup.columns");
    case 2:
        return em_tc_read_i64(r, f->type, &g->total_byte_size);
    case 3:
        *have |= 2;
        return em_tc_read_i64(r, f->type, &g->num_rows);
    default:
        return EM_DONE;
    }
}

static em_status kv_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_kv *kv = obj;
    (void)have;
    if (f->id == 1)
        return read_bytes(r, f->type, &kv->key);
    if (f->id == 2)
        return read_bytes(r, f->type, &kv->value);
    return EM_DONE;
}

static em_status file_meta_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_file_meta *m = obj;
    switch (f->id) {
    case 1:
        return em_tc_read_i32(r, f->type, &m->version);
    case 2:
        *have |= 1;
        return read_struct_list(r, f, sizeof *m->schema, (void **)&m->schema, &m->n_schema,
                                schema_field, 1, "SchemaElement");
    case 3:
        *have |= 2;
        return em_tc_read_i64(r, f->type, &m->num_rows);
    case 4:
        *have |= 4;
        return read_struct_list(r, f, sizeof *m->row_groups, (void **)&m->row_groups,
                                &m->n_row_groups, row_group_field, 3, "RowGroup");
    case 5:
        return read_struct_list(r, f, sizeof *m->kv, (void **)&m->kv, &m->n_kv, kv_field, 0,
                                "FileMetaData.key_value_metadata");
    case 6:
        return read_string(r, f->type, &m->created_by);
    default:
        return EM_DONE;
    }
}

em_status em_pq_meta_parse(const uint8_t *buf, int64_t len, int64_t base, const char *path,
                           em_pq_file_meta *m, em_error *err) {
    memset(m, 0, sizeof *m);
    em_tc_reader r;
    em_tc_init(&r, buf, len, base, path, err);
    em_status s = read_struct(&r, file_meta_field, m, 7, "FileMetaData");
    if (s != EM_OK)
        em_pq_meta_reset(m);
    return s;
}

void em_pq_meta_reset(em_pq_file_meta *m) {
    if (!m)
        return;
    for (int i = 0; i < m->n_schema; i++)
        free(m->schema[i].name);
    free(m->schema);
    for (int i = 0; i < m->n_row_groups; i++)
        free(m->row_groups[i].columns);
    free(m->row_groups);
    free(m->kv);
    free(m->created_by);
    memset(m, 0, sizeof *m);
}

static em_status data_page_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_page_header *h = obj;
    switch (f->id) {
    case 1:
        *have |= 1;
        return em_tc_read_i32(r, f->type, &h->num_values);
    case 2:
        *have |= 2;
        return read_enum(r, f->type, &h->encoding);
    case 3:
        *have |= 4;
        return read_enum(r, f->type, &h->def_encoding);
    case 4:
        *have |= 8;
        return read_enum(r, f->type, &h->rep_encoding);
    default:
        return EM_DONE;
    }
}

static em_status data_page_v2_field(em_tc_reader *r, const em_tc_field *f, void *obj,
                                    unsigned *have) {
    em_pq_page_header *h = obj;
    switch (f->id) {
    case 1:
        *have |= 1;
        return em_tc_read_i32(r, f->type, &h->num_values);
    case 2:
        *have |= 2;
        return em_tc_read_i32(r, f->type, &h->num_nulls);
    case 3:
        *have |= 4;
        return em_tc_read_i32(r, f->type, &h->num_rows);
    case 4:
        *have |= 8;
        return read_enum(r, f->type, &h->encoding);
    case 5:
        *have |= 16;
        return em_tc_read_i32(r, f->type, &h->def_length);
    case 6:
        *have |= 32;
        return em_tc_read_i32(r, f->type, &h->rep_length);
    case 7:
        return em_tc_read_bool(r, f->type, &h->is_compressed);
    default:
        return EM_DONE;
    }
}

static em_status dict_page_field(em_tc_reader *r, const em_tc_field *f, void *obj, unsigned *have) {
    em_pq_page_header *h = obj;
    if (f->id == 1) {
        *have |= 1;
        return em_tc_read_i32(r, f->type, &h->dict_num_values);
    }
    if (f->id == 2) {
        *have |= 2;
        return read_enum(r, f->type, &h->dict_encoding);
    }
    return EM_DONE;
}

static em_status page_header_field(em_tc_reader *r, const em_tc_field *f, void *obj,
                                   unsigned *have) {
    em_pq_page_header *h = obj;
    switch (f->id) {
    case 1:
        *have |= 1;
        return read_enum(r, f->type, &h->type);
    case 2:
        *have |= 2;
        return em_tc_read_i32(r, f->type, &h->uncompressed_size);
    case 3:
        *have |= 4;
        return em_tc_read_i32(r, f->type, &h->compressed_size);
    case 5:
        EM_TRY(expect_struct(r, f, "PageHeader.data_page_header"));
        h->has_data = true;
        return read_struct(r, data_page_field, h, 15, "DataPageHeader");
    case 7:
        EM_TRY(expect_struct(r, f, "PageHeader.dictionary_page_header"));
        h->has_dict = true;
        return read_struct(r, dict_page_field, h, 3, "DictionaryPageHeader");
    case 8:
        EM_TRY(expect_struct(r, f, "PageHeader.data_page_header_v2"));
        h->has_v2 = true;
        return read_struct(r, data_page_v2_field, h, 63, "DataPageHeaderV2");
    default:
        return EM_DONE;
    }
}

em_status em_pq_page_header_parse(const uint8_t *buf, int64_t len, int64_t base, const char *path,
                                  em_pq_page_header *h, em_error *err) {
    memset(h, 0, sizeof *h);
    h->is_compressed = true;
    em_tc_reader r;
    em_tc_init(&r, buf, len, base, path, err);
    EM_TRY(read_struct(&r, page_header_field, h, 7, "PageHeader"));
    if (h->uncompressed_size < 0 || h->compressed_size < 0)
        return em_tc_corrupt(&r, "negative page size (%d compressed, %d uncompressed)",
                             h->compressed_size, h->uncompressed_size);
    h->header_size = (int32_t)r.pos;
    return EM_OK;
}
