/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FileMetaData and PageHeader parsing (parquet.thrift field ids).
 *
 * Each struct is read by one function that loops over field headers,
 * decodes the fields it knows and skips the others whatever their type, so
 * files from newer writers (size statistics, geospatial types, encryption
 * fields) still open. Required fields are tracked in a bit mask and a missing
 * one is corruption named with the offset of the struct's end. Arrays are
 * sized from list counts, which thrift_read has already bounded by the bytes
 * remaining, so a hostile count cannot allocate more than the footer's size.
 */
#include "io/parquet/metadata.h"

#include <stdlib.h>
#include <string.h>

#include "io/parquet/format.h"
#include "io/parquet/thrift_read.h"

static em_status need(em_tc_reader *r, unsigned have, unsigned want, const char *what) {
    if ((have & want) != want)
        return em_tc_corrupt(r, "%s lacks a required field", what);
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

/* Empty marker structs of the LogicalType union. */
static em_status read_time_unit(em_tc_reader *r, int *unit) {
    *unit = EM_PQ_UNIT_NONE;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
        case 2:
        case 3:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "TimeUnit member is not a struct");
            *unit = f.id;
            EM_TRY(em_tc_skip(r, f.type));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_time_like(em_tc_reader *r, em_pq_logical *lt) {
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(em_tc_read_bool(r, f.type, &lt->utc));
            break;
        case 2:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "TimeUnit is not a struct");
            EM_TRY(read_time_unit(r, &lt->unit));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_decimal_type(em_tc_reader *r, em_pq_logical *lt) {
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(em_tc_read_i32(r, f.type, &lt->scale));
            break;
        case 2:
            EM_TRY(em_tc_read_i32(r, f.type, &lt->precision));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_int_type(em_tc_reader *r, em_pq_logical *lt) {
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1: {
            int32_t w = 0;
            EM_TRY(em_tc_read_i32(r, f.type, &w));
            lt->bit_width = w;
            break;
        }
        case 2:
            EM_TRY(em_tc_read_bool(r, f.type, &lt->is_signed));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_logical(em_tc_reader *r, em_pq_logical *lt) {
    memset(lt, 0, sizeof *lt);
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case EM_PQ_LT_DECIMAL:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "LogicalType member is not a struct");
            lt->kind = EM_PQ_LT_DECIMAL;
            EM_TRY(read_decimal_type(r, lt));
            break;
        case EM_PQ_LT_TIME:
        case EM_PQ_LT_TIMESTAMP:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "LogicalType member is not a struct");
            lt->kind = f.id;
            EM_TRY(read_time_like(r, lt));
            break;
        case EM_PQ_LT_INTEGER:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "LogicalType member is not a struct");
            lt->kind = EM_PQ_LT_INTEGER;
            EM_TRY(read_int_type(r, lt));
            break;
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
            lt->kind = f.id;
            EM_TRY(em_tc_skip(r, f.type));
            break;
        case 9:
        case 16:
        case 17:
        case 18:
        case 19:
        case 20:
            lt->kind = EM_PQ_LT_OTHER; /* interval, variant, geometry, geography ... */
            EM_TRY(em_tc_skip(r, f.type));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_schema_elem(em_tc_reader *r, em_pq_schema_elem *e) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(read_enum(r, f.type, &e->type));
            e->has_type = true;
            break;
        case 2:
            EM_TRY(em_tc_read_i32(r, f.type, &e->type_length));
            break;
        case 3:
            EM_TRY(read_enum(r, f.type, &e->repetition));
            e->has_repetition = true;
            break;
        case 4:
            EM_TRY(read_string(r, f.type, &e->name));
            have |= 1;
            break;
        case 5:
            EM_TRY(em_tc_read_i32(r, f.type, &e->num_children));
            break;
        case 6:
            EM_TRY(read_enum(r, f.type, &e->converted));
            e->has_converted = true;
            break;
        case 7:
            EM_TRY(em_tc_read_i32(r, f.type, &e->scale));
            e->has_scale = true;
            break;
        case 8:
            EM_TRY(em_tc_read_i32(r, f.type, &e->precision));
            e->has_precision = true;
            break;
        case 10:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "SchemaElement.logicalType is not a struct");
            EM_TRY(read_logical(r, &e->logical));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 1, "SchemaElement");
}

static em_status read_stats(em_tc_reader *r, em_pq_raw_stats *s) {
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(read_bytes(r, f.type, &s->max));
            break;
        case 2:
            EM_TRY(read_bytes(r, f.type, &s->min));
            break;
        case 3:
            EM_TRY(em_tc_read_i64(r, f.type, &s->null_count));
            s->has_null_count = true;
            break;
        case 5:
            EM_TRY(read_bytes(r, f.type, &s->max_value));
            break;
        case 6:
            EM_TRY(read_bytes(r, f.type, &s->min_value));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_column_meta(em_tc_reader *r, em_pq_column_meta *m) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(read_enum(r, f.type, &m->type));
            have |= 1;
            break;
        case 2: {
            int et = 0;
            int32_t n = 0;
            EM_TRY(em_tc_list_begin(r, f.type, &et, &n));
            for (int32_t i = 0; i < n; i++) {
                int e;
                EM_TRY(read_enum(r, et, &e));
                if (m->n_encodings < (int)(sizeof m->encodings / sizeof m->encodings[0]))
                    m->encodings[m->n_encodings++] = e;
            }
            em_tc_list_end(r);
            have |= 2;
            break;
        }
        case 4:
            EM_TRY(read_enum(r, f.type, &m->codec));
            have |= 4;
            break;
        case 5:
            EM_TRY(em_tc_read_i64(r, f.type, &m->num_values));
            have |= 8;
            break;
        case 6:
            EM_TRY(em_tc_read_i64(r, f.type, &m->total_uncompressed_size));
            have |= 16;
            break;
        case 7:
            EM_TRY(em_tc_read_i64(r, f.type, &m->total_compressed_size));
            have |= 32;
            break;
        case 9:
            EM_TRY(em_tc_read_i64(r, f.type, &m->data_page_offset));
            have |= 64;
            break;
        case 11:
            EM_TRY(em_tc_read_i64(r, f.type, &m->dictionary_page_offset));
            m->has_dictionary_page_offset = true;
            break;
        case 12:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "ColumnMetaData.statistics is not a struct");
            EM_TRY(read_stats(r, &m->statistics));
            m->has_statistics = true;
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 1 | 4 | 8 | 16 | 32 | 64, "ColumnMetaData");
}

static em_status read_column_chunk(em_tc_reader *r, em_pq_column_chunk *c) {
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1: {
            const uint8_t *p;
            int32_t n = 0;
            EM_TRY(em_tc_read_binary(r, f.type, &p, &n));
            c->has_file_path = true;
            break;
        }
        case 2:
            EM_TRY(em_tc_read_i64(r, f.type, &c->file_offset));
            break;
        case 3:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "ColumnChunk.meta_data is not a struct");
            EM_TRY(read_column_meta(r, &c->meta));
            c->has_meta = true;
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status nomem(em_tc_reader *r) {
    return EM_FAIL(r->err, EM_ERR_NOMEM, "out of memory reading Parquet metadata");
}

static em_status read_row_group(em_tc_reader *r, em_pq_row_group *g) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1: {
            int et = 0;
            int32_t n = 0;
            EM_TRY(em_tc_list_begin(r, f.type, &et, &n));
            if (et != EM_TC_STRUCT)
                return em_tc_corrupt(r, "RowGroup.columns holds non-structs");
            if (g->columns)
                return em_tc_corrupt(r, "RowGroup.columns appears twice");
            g->columns = calloc(n ? (size_t)n : 1, sizeof *g->columns);
            if (!g->columns)
                return nomem(r);
            for (int32_t i = 0; i < n; i++) {
                EM_TRY(read_column_chunk(r, &g->columns[i]));
                g->n_columns = i + 1;
            }
            em_tc_list_end(r);
            have |= 1;
            break;
        }
        case 2:
            EM_TRY(em_tc_read_i64(r, f.type, &g->total_byte_size));
            break;
        case 3:
            EM_TRY(em_tc_read_i64(r, f.type, &g->num_rows));
            have |= 2;
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 3, "RowGroup");
}

static em_status read_kv(em_tc_reader *r, em_pq_kv *kv) {
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(read_bytes(r, f.type, &kv->key));
            break;
        case 2:
            EM_TRY(read_bytes(r, f.type, &kv->value));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return EM_OK;
}

static em_status read_file_meta(em_tc_reader *r, em_pq_file_meta *m) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(em_tc_read_i32(r, f.type, &m->version));
            break;
        case 2: {
            int et = 0;
            int32_t n = 0;
            EM_TRY(em_tc_list_begin(r, f.type, &et, &n));
            if (et != EM_TC_STRUCT)
                return em_tc_corrupt(r, "FileMetaData.schema holds non-structs");
            if (m->schema)
                return em_tc_corrupt(r, "FileMetaData.schema appears twice");
            m->schema = calloc(n ? (size_t)n : 1, sizeof *m->schema);
            if (!m->schema)
                return nomem(r);
            for (int32_t i = 0; i < n; i++) {
                m->n_schema = i + 1;
                EM_TRY(read_schema_elem(r, &m->schema[i]));
            }
            em_tc_list_end(r);
            have |= 1;
            break;
        }
        case 3:
            EM_TRY(em_tc_read_i64(r, f.type, &m->num_rows));
            have |= 2;
            break;
        case 4: {
            int et = 0;
            int32_t n = 0;
            EM_TRY(em_tc_list_begin(r, f.type, &et, &n));
            if (et != EM_TC_STRUCT)
                return em_tc_corrupt(r, "FileMetaData.row_groups holds non-structs");
            if (m->row_groups)
                return em_tc_corrupt(r, "FileMetaData.row_groups appears twice");
            m->row_groups = calloc(n ? (size_t)n : 1, sizeof *m->row_groups);
            if (!m->row_groups)
                return nomem(r);
            for (int32_t i = 0; i < n; i++) {
                m->n_row_groups = i + 1;
                EM_TRY(read_row_group(r, &m->row_groups[i]));
            }
            em_tc_list_end(r);
            have |= 4;
            break;
        }
        case 5: {
            int et = 0;
            int32_t n = 0;
            EM_TRY(em_tc_list_begin(r, f.type, &et, &n));
            if (et != EM_TC_STRUCT)
                return em_tc_corrupt(r, "FileMetaData.key_value_metadata holds non-structs");
            if (m->kv)
                return em_tc_corrupt(r, "FileMetaData.key_value_metadata appears twice");
            m->kv = calloc(n ? (size_t)n : 1, sizeof *m->kv);
            if (!m->kv)
                return nomem(r);
            for (int32_t i = 0; i < n; i++) {
                EM_TRY(read_kv(r, &m->kv[i]));
                m->n_kv = i + 1;
            }
            em_tc_list_end(r);
            break;
        }
        case 6:
            EM_TRY(read_string(r, f.type, &m->created_by));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 7, "FileMetaData");
}

em_status em_pq_meta_parse(const uint8_t *buf, int64_t len, int64_t base, const char *path,
                           em_pq_file_meta *m, em_error *err) {
    memset(m, 0, sizeof *m);
    em_tc_reader r;
    em_tc_init(&r, buf, len, base, path, err);
    em_status s = read_file_meta(&r, m);
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

static em_status read_data_page_v1(em_tc_reader *r, em_pq_page_header *h) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(em_tc_read_i32(r, f.type, &h->num_values));
            have |= 1;
            break;
        case 2:
            EM_TRY(read_enum(r, f.type, &h->encoding));
            have |= 2;
            break;
        case 3:
            EM_TRY(read_enum(r, f.type, &h->def_encoding));
            have |= 4;
            break;
        case 4:
            EM_TRY(read_enum(r, f.type, &h->rep_encoding));
            have |= 8;
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 15, "DataPageHeader");
}

static em_status read_data_page_v2(em_tc_reader *r, em_pq_page_header *h) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(em_tc_read_i32(r, f.type, &h->num_values));
            have |= 1;
            break;
        case 2:
            EM_TRY(em_tc_read_i32(r, f.type, &h->num_nulls));
            have |= 2;
            break;
        case 3:
            EM_TRY(em_tc_read_i32(r, f.type, &h->num_rows));
            have |= 4;
            break;
        case 4:
            EM_TRY(read_enum(r, f.type, &h->encoding));
            have |= 8;
            break;
        case 5:
            EM_TRY(em_tc_read_i32(r, f.type, &h->def_length));
            have |= 16;
            break;
        case 6:
            EM_TRY(em_tc_read_i32(r, f.type, &h->rep_length));
            have |= 32;
            break;
        case 7:
            EM_TRY(em_tc_read_bool(r, f.type, &h->is_compressed));
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 63, "DataPageHeaderV2");
}

static em_status read_dict_page(em_tc_reader *r, em_pq_page_header *h) {
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(em_tc_read_i32(r, f.type, &h->dict_num_values));
            have |= 1;
            break;
        case 2:
            EM_TRY(read_enum(r, f.type, &h->dict_encoding));
            have |= 2;
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    return need(r, have, 3, "DictionaryPageHeader");
}

em_status em_pq_page_header_parse(const uint8_t *buf, int64_t len, int64_t base, const char *path,
                                  em_pq_page_header *h, em_error *err) {
    memset(h, 0, sizeof *h);
    h->is_compressed = true;
    em_tc_reader rd, *r = &rd;
    em_tc_init(r, buf, len, base, path, err);
    unsigned have = 0;
    EM_TRY(em_tc_struct_begin(r));
    for (int16_t last = 0;;) {
        em_tc_field f;
        EM_TRY(em_tc_field_next(r, &last, &f));
        if (f.type == EM_TC_STOP)
            break;
        switch (f.id) {
        case 1:
            EM_TRY(read_enum(r, f.type, &h->type));
            have |= 1;
            break;
        case 2:
            EM_TRY(em_tc_read_i32(r, f.type, &h->uncompressed_size));
            have |= 2;
            break;
        case 3:
            EM_TRY(em_tc_read_i32(r, f.type, &h->compressed_size));
            have |= 4;
            break;
        case 5:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "PageHeader.data_page_header is not a struct");
            EM_TRY(read_data_page_v1(r, h));
            h->has_data = true;
            break;
        case 7:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "PageHeader.dictionary_page_header is not a struct");
            EM_TRY(read_dict_page(r, h));
            h->has_dict = true;
            break;
        case 8:
            if (f.type != EM_TC_STRUCT)
                return em_tc_corrupt(r, "PageHeader.data_page_header_v2 is not a struct");
            EM_TRY(read_data_page_v2(r, h));
            h->has_v2 = true;
            break;
        default:
            EM_TRY(em_tc_skip(r, f.type));
            break;
        }
    }
    em_tc_struct_end(r);
    EM_TRY(need(r, have, 7, "PageHeader"));
    if (h->uncompressed_size < 0 || h->compressed_size < 0)
        return em_tc_corrupt(r, "negative page size (%d compressed, %d uncompressed)",
                             h->compressed_size, h->uncompressed_size);
    h->header_size = (int32_t)r->pos;
    return EM_OK;
}
