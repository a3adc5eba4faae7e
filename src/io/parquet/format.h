/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Constants of the Parquet format (parquet.thrift): physical types, converted
 * types, repetition, encodings and page types, by their Thrift values. Shared
 * by the reader and the writer; internal to src/io.
 */
#ifndef EM_IO_PARQUET_FORMAT_H
#define EM_IO_PARQUET_FORMAT_H

#define EM_PQ_MAGIC "PAR1"

enum em_pq_physical {
    EM_PQ_T_BOOLEAN = 0,
    EM_PQ_T_INT32 = 1,
    EM_PQ_T_INT64 = 2,
    EM_PQ_T_INT96 = 3,
    EM_PQ_T_FLOAT = 4,
    EM_PQ_T_DOUBLE = 5,
    EM_PQ_T_BYTE_ARRAY = 6,
    EM_PQ_T_FIXED_LEN_BYTE_ARRAY = 7,
};

enum em_pq_converted {
    EM_PQ_CT_UTF8 = 0,
    EM_PQ_CT_MAP = 1,
    EM_PQ_CT_MAP_KEY_VALUE = 2,
    EM_PQ_CT_LIST = 3,
    EM_PQ_CT_ENUM = 4,
    EM_PQ_CT_DECIMAL = 5,
    EM_PQ_CT_DATE = 6,
    EM_PQ_CT_TIME_MILLIS = 7,
    EM_PQ_CT_TIME_MICROS = 8,
    EM_PQ_CT_TIMESTAMP_MILLIS = 9,
    EM_PQ_CT_TIMESTAMP_MICROS = 10,
    EM_PQ_CT_UINT_8 = 11,
    EM_PQ_CT_UINT_16 = 12,
    EM_PQ_CT_UINT_32 = 13,
    EM_PQ_CT_UINT_64 = 14,
    EM_PQ_CT_INT_8 = 15,
    EM_PQ_CT_INT_16 = 16,
    EM_PQ_CT_INT_32 = 17,
    EM_PQ_CT_INT_64 = 18,
    EM_PQ_CT_JSON = 19,
    EM_PQ_CT_BSON = 20,
    EM_PQ_CT_INTERVAL = 21,
};

enum em_pq_repetition {
    EM_PQ_REQUIRED = 0,
    EM_PQ_OPTIONAL = 1,
    EM_PQ_REPEATED = 2,
};

enum em_pq_encoding {
    EM_PQ_ENC_PLAIN = 0,
    EM_PQ_ENC_PLAIN_DICTIONARY = 2,
    EM_PQ_ENC_RLE = 3,
    EM_PQ_ENC_BIT_PACKED = 4,
    EM_PQ_ENC_DELTA_BINARY_PACKED = 5,
    EM_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    EM_PQ_ENC_DELTA_BYTE_ARRAY = 7,
    EM_PQ_ENC_RLE_DICTIONARY = 8,
    EM_PQ_ENC_BYTE_STREAM_SPLIT = 9,
};

enum em_pq_page_type {
    EM_PQ_PAGE_DATA = 0,
    EM_PQ_PAGE_INDEX = 1,
    EM_PQ_PAGE_DICTIONARY = 2,
    EM_PQ_PAGE_DATA_V2 = 3,
};

/* Name of an encoding for display ("PLAIN", "RLE_DICTIONARY", ...). */
const char *em_pq_encoding_name(int encoding);
const char *em_pq_physical_name(int physical);
const char *em_pq_codec_name(int codec);

#endif
