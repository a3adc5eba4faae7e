/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TPC-H data generator: the eight tables by the TPC-H specification's rules,
 * deterministic for a scale factor, written as Parquet in Spark's warehouse
 * layout DIR/<table>/part-NNNNN.parquet.
 *
 * Determinism: the bytes of every file depend only on the scale factor, the
 * schema, the codec and rows_per_file, never on the thread count. Changing
 * rows_per_file moves file boundaries but not row values.
 *
 * Money under the `spark` schema (DECIMAL(10,0)) is the specification's
 * 2-decimal value rounded half up (ties away from zero), as Spark's cast
 * stores a 2-decimal value inserted into a DECIMAL(10,0) column; so
 * l_discount and l_tax are all 0 there and TPC-H query 6 sums nothing.
 */
#ifndef EM_TPCH_H
#define EM_TPCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ember/parquet.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum em_tpch_schema {
    EM_TPCH_SCHEMA_SPARK,    /* ../shared/spark-plans/tpch/schema.sql: money
                                DECIMAL(10,0) */
    EM_TPCH_SCHEMA_STANDARD, /* money DECIMAL(15,2) */
} em_tpch_schema;

typedef enum em_tpch_table {
    EM_TPCH_PART,
    EM_TPCH_SUPPLIER,
    EM_TPCH_PARTSUPP,
    EM_TPCH_CUSTOMER,
    EM_TPCH_ORDERS,
    EM_TPCH_LINEITEM,
    EM_TPCH_NATION,
    EM_TPCH_REGION,
    EM_TPCH_TABLE_COUNT
} em_tpch_table;

const char *em_tpch_table_name(em_tpch_table t);
/* The Spark schema of a table (fills out; caller resets it). */
em_status em_tpch_table_schema(em_tpch_table t, em_tpch_schema schema, em_schema *out,
                               em_error *err) EM_MUST_CHECK;
/* Rows of a table at a scale factor (lineitem: exact count after generation
 * only; this returns the orders-derived expectation -1 for lineitem). */
int64_t em_tpch_table_rows(em_tpch_table t, double sf);

/* The scale factors the generator accepts. */
#define EM_TPCH_SF_MIN 0.01
#define EM_TPCH_SF_MAX 10.0

typedef struct em_tpch_table_summary {
    int64_t rows;
    int n_files;
    int64_t bytes; /* total file size */
} em_tpch_table_summary;

typedef struct em_tpch_summary {
    em_tpch_table_summary tables[EM_TPCH_TABLE_COUNT];
    int threads;    /* threads used */
    double seconds; /* wall time of em_tpch_generate */
} em_tpch_summary;

typedef struct em_tpch_options {
    double sf; /* EM_TPCH_SF_MIN .. EM_TPCH_SF_MAX */
    em_tpch_schema schema;
    const char *out_dir;
    int threads;           /* 0 = number of cores */
    int64_t rows_per_file; /* lineitem rows per file (orders: a quarter, the
                              others: this many rows); 0 = 1,000,000 (SF 1: 6
                              lineitem files) */
    em_pq_codec codec;     /* default SNAPPY */
    bool force;            /* out_dir may be non-empty: its eight table folders are replaced
                            */
    bool progress;         /* draw a progress bar on progress_out */
    FILE *progress_out;
    em_tpch_summary *summary; /* optional, filled on success */
    /* Optional: when it becomes true (e.g. set by a signal handler) the workers
     * stop after their current batch and the call fails with EM_ERR_CANCELLED,
     * cleaning up as on any failure. */
    const volatile sig_atomic_t *cancel;
} em_tpch_options;

void em_tpch_options_init(em_tpch_options *o);
/* Writes all eight tables into out_dir (created if missing). Refuses a
 * non-empty out_dir unless force. Tables are written under a staging folder
 * out_dir/.ember-tpch-<pid>-<n>.tmp and renamed into place only when every file is
 * complete; on failure the staging folder is removed, so nothing half-written
 * remains and existing tables are untouched. Errors: EM_ERR_INVALID (options,
 * non-empty folder), EM_ERR_IO (file system), writer errors. */
em_status em_tpch_generate(const em_tpch_options *o, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
