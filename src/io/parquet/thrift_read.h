/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thrift compact protocol decoding, as Parquet uses it for its footer and
 * page headers. A cursor walks a byte range; every read is bounds-checked and
 * a failure reports the absolute file offset of the offending byte, so the
 * caller's message reads "FILE: byte OFFSET: what". Internal to src/io.
 */
#ifndef EM_IO_PARQUET_THRIFT_READ_H
#define EM_IO_PARQUET_THRIFT_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/status.h"

/* Compact protocol type codes (field headers and list element types). */
enum em_tc_type {
    EM_TC_STOP = 0,
    EM_TC_TRUE = 1,
    EM_TC_FALSE = 2,
    EM_TC_I8 = 3,
    EM_TC_I16 = 4,
    EM_TC_I32 = 5,
    EM_TC_I64 = 6,
    EM_TC_DOUBLE = 7,
    EM_TC_BINARY = 8,
    EM_TC_LIST = 9,
    EM_TC_SET = 10,
    EM_TC_MAP = 11,
    EM_TC_STRUCT = 12,
};

/* Nesting deeper than this is treated as corruption (Parquet needs < 8). */
#define EM_TC_MAX_DEPTH 32

typedef struct em_tc_reader {
    const uint8_t *p; /* borrowed: start of the range */
    int64_t len;      /* bytes in the range */
    int64_t pos;      /* next byte to read, 0..len */
    int64_t base;     /* file offset of p[0], for messages */
    const char *path; /* borrowed: file name, for messages */
    int depth;        /* current struct/list nesting */
    em_error *err;    /* borrowed: where failures are recorded */
} em_tc_reader;

/* A field header inside a struct: type EM_TC_STOP ends the struct. */
typedef struct em_tc_field {
    int type;
    int16_t id;
} em_tc_field;

void em_tc_init(em_tc_reader *r, const uint8_t *p, int64_t len, int64_t base, const char *path,
                em_error *err);
/* Records "PATH: byte OFFSET: what" as EM_ERR_CORRUPT at the current position. */
em_status em_tc_corrupt(em_tc_reader *r, const char *fmt, ...) EM_PRINTF(2, 3);

/* Struct framing: begin pushes a field-id scope, field reads the next header,
 * end pops. last_id is the caller's per-struct "previous field id". */
em_status em_tc_struct_begin(em_tc_reader *r) EM_MUST_CHECK;
void em_tc_struct_end(em_tc_reader *r);
em_status em_tc_field_next(em_tc_reader *r, int16_t *last_id, em_tc_field *f) EM_MUST_CHECK;

/* Scalar reads for a field of the given compact type; a type that does not
 * match what the schema expects is corruption. */
em_status em_tc_read_bool(em_tc_reader *r, int type, bool *out) EM_MUST_CHECK;
em_status em_tc_read_i32(em_tc_reader *r, int type, int32_t *out) EM_MUST_CHECK;
em_status em_tc_read_i64(em_tc_reader *r, int type, int64_t *out) EM_MUST_CHECK;
/* Borrowed bytes inside the range. */
em_status em_tc_read_binary(em_tc_reader *r, int type, const uint8_t **ptr,
                            int32_t *len) EM_MUST_CHECK;
/* List header: element type and count (count bounded by remaining bytes). */
em_status em_tc_list_begin(em_tc_reader *r, int type, int *elem_type, int32_t *count) EM_MUST_CHECK;
void em_tc_list_end(em_tc_reader *r);
/* Skips one value of any type (structs, lists, sets, maps recursively). */
em_status em_tc_skip(em_tc_reader *r, int type) EM_MUST_CHECK;

/* Low level: unsigned LEB128 varint of at most 10 bytes. */
em_status em_tc_varint(em_tc_reader *r, uint64_t *out) EM_MUST_CHECK;

#endif
