/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TPC-H data generator: the eight tables by the TPC-H specification's rules,
 * deterministic for a scale factor, written as Parquet in Spark's warehouse
 * layout DIR/<table>/part-NNNNN.parquet.
 */
#ifndef EM_TPCH_H
#define EM_TPCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ember/parquet.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum em_tpch_schema {
    EM_TPCH_SCHEMA_SPARK,    /* ../shared/spark-plans/tpch/schema.sql: money DECIMAL(10,0) */
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
/* Rows of a table at a scale factor (lineitem: exact count after generation only;
 * this returns the orders-derived expectation -1 for lineitem). */
int64_t em_tpch_table_rows(em_tpch_table t, double sf);

typedef struct em_tpch_options {
    double sf;                /* 0.01 .. 10 (smaller allowed for tests) */
    em_tpch_schema schema;
    const char *out_dir;
    int threads;              /* 0 = number of cores */
    int64_t rows_per_file;    /* 0 = a default that gives several files for big tables */
    em_pq_codec codec;        /* default SNAPPY */
    bool progress;            /* draw a progress bar on progress_out */
    FILE *progress_out;
} em_tpch_options;

void em_tpch_options_init(em_tpch_options *o);
/* Writes all eight tables. On failure nothing half-written remains. */
em_status em_tpch_generate(const em_tpch_options *o, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
