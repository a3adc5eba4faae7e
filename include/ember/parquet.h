/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parquet files, written from the Apache Parquet specification.
 *
 * Reading: em_pq_file_open parses the footer and maps the flat schema to
 * Spark types; em_pq_reader_open then streams batches of the projected
 * columns over the chosen row groups. Statistics per row group and column
 * let callers prune row groups before reading them.
 *
 * Writing: em_pq_writer_open creates an unnamed file in PATH's folder
 * (O_TMPFILE; PATH.tmp-<pid>-<n> where unsupported); batches are appended;
 * em_pq_writer_close finishes the footer, names the file and renames it
 * into place, so neither a failed write nor a killed process leaves a
 * half-written PATH (or a temporary file) behind.
 *
 * Every error names the file and, for corrupt input, the byte offset.
 */
#ifndef EM_PARQUET_H
#define EM_PARQUET_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/column.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum em_pq_codec {
    EM_PQ_UNCOMPRESSED = 0,
    EM_PQ_SNAPPY = 1,
    EM_PQ_GZIP = 2,
    EM_PQ_LZO = 3,
    EM_PQ_BROTLI = 4,
    EM_PQ_LZ4 = 5,
    EM_PQ_ZSTD = 6,
    EM_PQ_LZ4_RAW = 7,
} em_pq_codec;

typedef struct em_pq_file em_pq_file;

em_status em_pq_file_open(const char *path, em_pq_file **out, em_error *err) EM_MUST_CHECK;
void em_pq_file_close(em_pq_file *f); /* NULL allowed */
const char *em_pq_file_path(const em_pq_file *f);
/* The file's columns as Spark types (borrowed, valid until close). */
const em_schema *em_pq_file_schema(const em_pq_file *f);
int64_t em_pq_file_num_rows(const em_pq_file *f);
int em_pq_file_num_row_groups(const em_pq_file *f);
int64_t em_pq_file_row_group_rows(const em_pq_file *f, int rg);
const char *em_pq_file_created_by(const em_pq_file *f); /* may be NULL */

/* Row-group statistics of one column, decoded to the column's Spark type.
 * Values are stored in the same representation as a column value:
 * integers/dates/timestamps widened to int64 in i64, float/double in f64,
 * decimals in i128 (unscaled), strings/binary as borrowed bytes. */
typedef struct em_pq_stats {
    bool has_min_max;
    bool has_null_count;
    int64_t null_count;
    int64_t num_values; /* values incl. nulls in this chunk */
    union {
        int64_t i64;
        double f64;
        em_i128 i128;
        struct {
            const uint8_t *ptr;
            int32_t len;
        } bytes;
    } min, max;
} em_pq_stats;

em_status em_pq_file_stats(const em_pq_file *f, int rg, int col, em_pq_stats *out,
                           em_error *err) EM_MUST_CHECK;

/* Per-column chunk facts for `ember parquet meta`. */
typedef struct em_pq_chunk_info {
    em_pq_codec codec;
    int64_t total_compressed_size;
    int64_t total_uncompressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1 when none */
    int64_t num_values;
    char encodings[128]; /* comma-separated names, e.g. "PLAIN,RLE,RLE_DICTIONARY" */
    char physical_type[32];
} em_pq_chunk_info;

em_status em_pq_file_chunk_info(const em_pq_file *f, int rg, int col, em_pq_chunk_info *out,
                                em_error *err) EM_MUST_CHECK;

typedef struct em_pq_read_options {
    const int *columns; /* indices into the file schema; NULL = all */
    int n_columns;
    const bool *row_groups; /* row_groups[i] = read group i; NULL = all */
    int64_t batch_rows;     /* 0 = EM_BATCH_CAP */
    em_pool *pool;          /* charged for batches and pages; may be NULL */
    /* When row_end > 0, only the file's rows [row_start, row_end) (numbered
     * over all row groups, selected or not): several tasks can share one
     * large row group. Pages wholly before row_start are passed over without
     * being decompressed. */
    int64_t row_start, row_end;
} em_pq_read_options;

typedef struct em_pq_reader em_pq_reader;

/* The file must outlive the reader. */
em_status em_pq_reader_open(em_pq_file *f, const em_pq_read_options *opts, em_pq_reader **out,
                            em_error *err) EM_MUST_CHECK;
/* *out is owned by the reader and valid until the next call or close.
 * Returns EM_DONE (and *out = NULL) at the end. Never returns an empty batch. */
em_status em_pq_reader_next(em_pq_reader *r, em_batch **out, em_error *err) EM_MUST_CHECK;
/* Schema of the batches the reader returns (the projected columns). */
const em_schema *em_pq_reader_schema(const em_pq_reader *r);
void em_pq_reader_close(em_pq_reader *r); /* NULL allowed */

typedef struct em_pq_write_options {
    em_pq_codec codec;         /* UNCOMPRESSED, SNAPPY, GZIP, ZSTD or LZ4_RAW */
    int compression_level;     /* 0 = codec default */
    int64_t row_group_rows;    /* 0 = 1,048,576 */
    int64_t page_bytes;        /* target data page size; 0 = 1 MiB */
    bool dictionary;           /* dictionary-encode, falling back to PLAIN when large */
    int64_t dictionary_max_bytes; /* 0 = 1 MiB */
    bool statistics;           /* write min/max/null_count */
    const char *created_by;    /* NULL = "ember version ..." */
    em_pool *pool;
} em_pq_write_options;

/* Defaults: SNAPPY, dictionary on, statistics on. */
void em_pq_write_options_init(em_pq_write_options *o);

typedef struct em_pq_writer em_pq_writer;

em_status em_pq_writer_open(const char *path, const em_schema *schema,
                            const em_pq_write_options *opts, em_pq_writer **out, em_error *err)
    EM_MUST_CHECK;
/* The batch must have the writer's schema; its selection, if any, is honoured. */
em_status em_pq_writer_write(em_pq_writer *w, const em_batch *b, em_error *err) EM_MUST_CHECK;
/* Finishes the file and renames it into place; frees the writer either way. */
em_status em_pq_writer_close(em_pq_writer *w, em_error *err) EM_MUST_CHECK;
/* Discards the temporary file and frees the writer. NULL allowed. */
void em_pq_writer_abort(em_pq_writer *w);

#ifdef __cplusplus
}
#endif
#endif
