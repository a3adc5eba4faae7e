/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spark SQL data types and their physical storage in Ember's columns.
 *
 *   BOOLEAN         bit-packed, Arrow "b"
 *   BYTE/SHORT      int8_t / int16_t
 *   INT             int32_t
 *   LONG            int64_t
 *   FLOAT/DOUBLE    float / double
 *   DECIMAL(p,s)    __int128 unscaled value (Arrow decimal128), p <= 38
 *   STRING/BINARY   int32_t offsets (length + 1) and a byte buffer (Arrow utf8 / binary)
 *   DATE            int32_t days since 1970-01-01
 *   TIMESTAMP       int64_t microseconds since the epoch, UTC (Arrow "tsu:UTC")
 *   TIMESTAMP_NTZ   int64_t microseconds, no time zone (Arrow "tsu:")
 *   NULL            no buffers besides a validity bitmap of zeros
 */
#ifndef EM_TYPES_H
#define EM_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef __int128 em_i128;

typedef enum em_type_id {
    EM_TYPE_NULL = 0,
    EM_TYPE_BOOLEAN,
    EM_TYPE_BYTE,
    EM_TYPE_SHORT,
    EM_TYPE_INT,
    EM_TYPE_LONG,
    EM_TYPE_FLOAT,
    EM_TYPE_DOUBLE,
    EM_TYPE_DECIMAL,
    EM_TYPE_STRING,
    EM_TYPE_BINARY,
    EM_TYPE_DATE,
    EM_TYPE_TIMESTAMP,
    EM_TYPE_TIMESTAMP_NTZ,
    EM_TYPE_COUNT_
} em_type_id;

#define EM_DECIMAL_MAX_PRECISION 38

typedef struct em_type {
    em_type_id id;
    int8_t precision; /* DECIMAL only, 1..38 */
    int8_t scale;     /* DECIMAL only, 0..precision */
} em_type;

static inline em_type em_type_make(em_type_id id) {
    em_type t = {id, 0, 0};
    return t;
}
static inline em_type em_type_decimal(int precision, int scale) {
    em_type t = {EM_TYPE_DECIMAL, (int8_t)precision, (int8_t)scale};
    return t;
}
bool em_type_equal(em_type a, em_type b);
/* Bytes per value for fixed-width types; 0 for BOOLEAN (bits), strings and NULL. */
int em_type_width(em_type t);
bool em_type_is_varlen(em_type t); /* STRING or BINARY */
/* Spark's simpleString: "int", "bigint", "decimal(10,0)", "string", "timestamp_ntz" ... */
void em_type_format(em_type t, char *buf, size_t cap);
/* Parses Spark's simpleString (as ReadSchema prints it), e.g. "decimal(15,2)". */
em_status em_type_parse(const char *text, size_t len, em_type *out, struct em_error *err)
    EM_MUST_CHECK;

/* A named, typed field. name is owned by the schema that holds the field. */
typedef struct em_field {
    char *name;
    em_type type;
    bool nullable;
} em_field;

typedef struct em_schema {
    int n_fields;
    em_field *fields; /* owned */
} em_schema;

em_status em_schema_init(em_schema *s, int n_fields, em_error *err) EM_MUST_CHECK;
/* Copies name. */
em_status em_schema_set(em_schema *s, int i, const char *name, em_type type, bool nullable,
                        em_error *err) EM_MUST_CHECK;
em_status em_schema_copy(em_schema *dst, const em_schema *src, em_error *err) EM_MUST_CHECK;
void em_schema_reset(em_schema *s);
int em_schema_find(const em_schema *s, const char *name); /* -1 when absent */

#ifdef __cplusplus
}
#endif
#endif
