/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reader's model of Parquet metadata (parquet.thrift): FileMetaData with
 * its schema elements, row groups, column chunks and statistics, and the
 * PageHeader of each page. Parsed with thrift_read; unknown fields are
 * skipped, missing required fields are corruption. Byte strings (statistics,
 * key/value metadata) are borrowed from the parsed buffer, which must outlive
 * the model; names are owned copies. Internal to src/io.
 */
#ifndef EM_IO_PARQUET_METADATA_H
#define EM_IO_PARQUET_METADATA_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/status.h"

/* LogicalType union members, by their thrift field id. */
enum em_pq_logical_kind {
    EM_PQ_LT_NONE = 0,
    EM_PQ_LT_STRING = 1,
    EM_PQ_LT_MAP = 2,
    EM_PQ_LT_LIST = 3,
    EM_PQ_LT_ENUM = 4,
    EM_PQ_LT_DECIMAL = 5,
    EM_PQ_LT_DATE = 6,
    EM_PQ_LT_TIME = 7,
    EM_PQ_LT_TIMESTAMP = 8,
    EM_PQ_LT_INTEGER = 10,
    EM_PQ_LT_UNKNOWN = 11,
    EM_PQ_LT_JSON = 12,
    EM_PQ_LT_BSON = 13,
    EM_PQ_LT_UUID = 14,
    EM_PQ_LT_FLOAT16 = 15,
    EM_PQ_LT_OTHER = 99, /* a member this reader does not know */
};

enum em_pq_time_unit { EM_PQ_UNIT_NONE = 0, EM_PQ_MILLIS = 1, EM_PQ_MICROS = 2, EM_PQ_NANOS = 3 };

typedef struct em_pq_logical {
    int kind;          /* em_pq_logical_kind */
    int32_t scale;     /* DECIMAL */
    int32_t precision; /* DECIMAL */
    bool utc;          /* TIME/TIMESTAMP isAdjustedToUTC */
    int unit;          /* TIME/TIMESTAMP em_pq_time_unit */
    int bit_width;     /* INTEGER */
    bool is_signed;    /* INTEGER */
} em_pq_logical;

typedef struct em_pq_schema_elem {
    char *name; /* owned, NUL-terminated */
    bool has_type;
    int type; /* em_pq_physical */
    int32_t type_length;
    bool has_repetition;
    int repetition;
    int32_t num_children;
    bool has_converted;
    int converted;
    bool has_scale, has_precision;
    int32_t scale, precision;
    em_pq_logical logical;
} em_pq_schema_elem;

typedef struct em_pq_bytes {
    const uint8_t *ptr; /* borrowed; NULL when absent */
    int32_t len;
} em_pq_bytes;

typedef struct em_pq_raw_stats {
    em_pq_bytes min, max;             /* legacy, signed order */
    em_pq_bytes min_value, max_value; /* column-order aware */
    bool has_null_count;
    int64_t null_count;
} em_pq_raw_stats;

typedef struct em_pq_column_meta {
    int type;
    int n_encodings;
    int encodings[16]; /* first 16; duplicates possible */
    int codec;
    int64_t num_values;
    int64_t total_uncompressed_size;
    int64_t total_compressed_size;
    int64_t data_page_offset;
    bool has_dictionary_page_offset;
    int64_t dictionary_page_offset;
    bool has_statistics;
    em_pq_raw_stats statistics;
} em_pq_column_meta;

typedef struct em_pq_column_chunk {
    bool has_file_path; /* column data in another file: not supported */
    int64_t file_offset;
    bool has_meta;
    em_pq_column_meta meta;
} em_pq_column_chunk;

typedef struct em_pq_row_group {
    int n_columns;
    em_pq_column_chunk *columns; /* owned */
    int64_t total_byte_size;
    int64_t num_rows;
} em_pq_row_group;

typedef struct em_pq_kv {
    em_pq_bytes key, value;
} em_pq_kv;

typedef struct em_pq_file_meta {
    int32_t version;
    int n_schema;
    em_pq_schema_elem *schema; /* owned; [0] is the root */
    int64_t num_rows;
    int n_row_groups;
    em_pq_row_group *row_groups; /* owned */
    int n_kv;
    em_pq_kv *kv;     /* owned array, borrowed bytes */
    char *created_by; /* owned, NULL when absent */
} em_pq_file_meta;

/* Parses FileMetaData from buf[0..len), which starts at file offset `base`.
 * On failure *m is left reset. */
em_status em_pq_meta_parse(const uint8_t *buf, int64_t len, int64_t base, const char *path,
                           em_pq_file_meta *m, em_error *err) EM_MUST_CHECK;
void em_pq_meta_reset(em_pq_file_meta *m);

typedef struct em_pq_page_header {
    int type; /* em_pq_page_type */
    int32_t uncompressed_size;
    int32_t compressed_size;
    /* DATA_PAGE (v1) and DATA_PAGE_V2 */
    int32_t num_values;
    int encoding;
    int def_encoding, rep_encoding; /* v1 */
    int32_t num_nulls, num_rows;    /* v2 */
    int32_t def_length, rep_length; /* v2 */
    bool is_compressed;             /* v2; default true */
    bool has_data, has_dict, has_v2;
    /* DICTIONARY_PAGE */
    int32_t dict_num_values;
    int dict_encoding;
    int32_t header_size; /* bytes of the header itself */
} em_pq_page_header;

/* Parses one PageHeader from buf[0..len) (file offset base) and sets its size. */
em_status em_pq_page_header_parse(const uint8_t *buf, int64_t len, int64_t base, const char *path,
                                  em_pq_page_header *h, em_error *err) EM_MUST_CHECK;

#endif
