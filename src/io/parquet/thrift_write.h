/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thrift compact protocol encoder, enough for Parquet's footer and page
 * headers (FileMetaData, RowGroup, ColumnChunk, PageHeader ...).
 *
 * The encoder appends to an em_pq_wbuf. Struct nesting is tracked on a small
 * stack of "last field id" values because the compact protocol writes field
 * ids as deltas from the previous field of the same struct. Booleans carry
 * their value in the field header's type nibble. Lists carry their size and
 * element type in the header, so the caller states the count up front.
 *
 * Errors are sticky: the first allocation failure (or a nesting mistake) is
 * remembered and every later call is a no-op, so a serializer can emit a
 * whole struct and check once with em_tw_finish. Internal to src/io/parquet.
 */
#ifndef EM_IO_PARQUET_THRIFT_WRITE_H
#define EM_IO_PARQUET_THRIFT_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/parquet/encode_buf.h"
#include "io/parquet/thrift_read.h" /* enum em_tc_type, shared with the reader */

#define EM_TW_MAX_DEPTH 16

typedef struct em_tw {
    em_pq_wbuf *out;                  /* borrowed; bytes are appended */
    int16_t last_id[EM_TW_MAX_DEPTH]; /* previous field id per open struct */
    int depth;                        /* open structs */
    em_status status;                 /* first failure, sticky */
    em_error *err;                    /* borrowed; filled on the first failure */
} em_tw;

void em_tw_init(em_tw *tw, em_pq_wbuf *out, em_error *err);
/* Returns the first failure (or EM_OK); checks that every struct was closed. */
em_status em_tw_finish(em_tw *tw) EM_MUST_CHECK;

/* Opens a top-level struct, or a struct that is an element of a list. */
void em_tw_struct_begin(em_tw *tw);
/* Opens a struct-typed field of the current struct. */
void em_tw_field_struct(em_tw *tw, int16_t id);
/* Writes the stop byte and closes the innermost struct. */
void em_tw_struct_end(em_tw *tw);

void em_tw_field_bool(em_tw *tw, int16_t id, bool v);
void em_tw_field_i8(em_tw *tw, int16_t id, int8_t v);
void em_tw_field_i16(em_tw *tw, int16_t id, int16_t v);
void em_tw_field_i32(em_tw *tw, int16_t id, int32_t v);
void em_tw_field_i64(em_tw *tw, int16_t id, int64_t v);
void em_tw_field_binary(em_tw *tw, int16_t id, const void *p, int64_t len);
void em_tw_field_string(em_tw *tw, int16_t id, const char *s);
/* A list field of n elements of compact type elem (EM_TC_I32, EM_TC_BINARY,
 * EM_TC_STRUCT ...); the elements follow through the em_tw_elem_* calls or,
 * for structs, em_tw_struct_begin/end. */
void em_tw_field_list(em_tw *tw, int16_t id, int elem, int64_t n);
void em_tw_elem_i32(em_tw *tw, int32_t v);
void em_tw_elem_binary(em_tw *tw, const void *p, int64_t len);
/* Appends bytes that already hold complete encoded elements (e.g. structs
 * serialized earlier with their own em_tw). */
void em_tw_raw(em_tw *tw, const void *p, int64_t len);

#endif
