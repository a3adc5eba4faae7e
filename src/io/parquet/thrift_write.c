/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thrift compact protocol encoder (see thrift_write.h).
 *
 * Encoding rules, from the Thrift compact protocol specification:
 *   field header  one byte (delta << 4 | type) when the id is 1..15 above the
 *                 previous field id of the same struct; otherwise the type
 *                 byte followed by the id as a zigzag varint
 *   bool field    type nibble 1 = true, 2 = false; no value bytes
 *   i16/i32/i64   zigzag, then unsigned LEB128 varint
 *   i8            one raw byte
 *   binary        varint length, then the bytes
 *   list          (n << 4 | elem) when n < 15, else (0xF0 | elem) and varint n
 *   struct end    one stop byte (0)
 */
#include "io/parquet/thrift_write.h"

#include <string.h>

void em_tw_init(em_tw *tw, em_pq_wbuf *out, em_error *err) {
    memset(tw, 0, sizeof *tw);
    tw->out = out;
    tw->err = err;
}

em_status em_tw_finish(em_tw *tw) {
    if (tw->status == EM_OK && tw->depth != 0)
        tw->status =
            EM_FAIL(tw->err, EM_ERR_INTERNAL, "thrift writer: %d struct(s) left open", tw->depth);
    return tw->status;
}

/* Room for n more bytes, or records the failure. */
static bool tw_room(em_tw *tw, int64_t n) {
    if (tw->status != EM_OK)
        return false;
    em_status s = em_pq_wbuf_reserve(tw->out, n, tw->err);
    if (s != EM_OK) {
        tw->status = s;
        return false;
    }
    return true;
}

static uint64_t zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static void tw_varint(em_tw *tw, uint64_t v) {
    if (!tw_room(tw, 10))
        return;
    tw->out->len += em_pq_put_uvarint(em_pq_wbuf_tail(tw->out), v);
}

static void tw_field_header(em_tw *tw, int16_t id, int type) {
    if (!tw_room(tw, 4))
        return;
    if (tw->depth == 0) {
        tw->status = EM_FAIL(tw->err, EM_ERR_INTERNAL, "thrift writer: field outside a struct");
        return;
    }
    int16_t *last = &tw->last_id[tw->depth - 1];
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        tw->out->data[tw->out->len++] = (uint8_t)(delta << 4 | type);
    } else {
        tw->out->data[tw->out->len++] = (uint8_t)type;
        tw_varint(tw, zigzag64(id));
    }
    *last = id;
}

static void tw_push(em_tw *tw) {
    if (tw->status != EM_OK)
        return;
    if (tw->depth == EM_TW_MAX_DEPTH) {
        tw->status = EM_FAIL(tw->err, EM_ERR_INTERNAL, "thrift writer: structs nested too deep");
        return;
    }
    tw->last_id[tw->depth++] = 0;
}

void em_tw_struct_begin(em_tw *tw) { tw_push(tw); }

void em_tw_field_struct(em_tw *tw, int16_t id) {
    tw_field_header(tw, id, EM_TC_STRUCT);
    tw_push(tw);
}

void em_tw_struct_end(em_tw *tw) {
    if (!tw_room(tw, 1))
        return;
    if (tw->depth == 0) {
        tw->status = EM_FAIL(tw->err, EM_ERR_INTERNAL, "thrift writer: unbalanced struct end");
        return;
    }
    tw->out->data[tw->out->len++] = EM_TC_STOP;
    tw->depth--;
}

void em_tw_field_bool(em_tw *tw, int16_t id, bool v) {
    tw_field_header(tw, id, v ? EM_TC_TRUE : EM_TC_FALSE);
}

void em_tw_field_i8(em_tw *tw, int16_t id, int8_t v) {
    tw_field_header(tw, id, EM_TC_I8);
    if (tw_room(tw, 1))
        tw->out->data[tw->out->len++] = (uint8_t)v;
}

void em_tw_field_i16(em_tw *tw, int16_t id, int16_t v) {
    tw_field_header(tw, id, EM_TC_I16);
    tw_varint(tw, zigzag64(v));
}

void em_tw_field_i32(em_tw *tw, int16_t id, int32_t v) {
    tw_field_header(tw, id, EM_TC_I32);
    tw_varint(tw, zigzag64(v));
}

void em_tw_field_i64(em_tw *tw, int16_t id, int64_t v) {
    tw_field_header(tw, id, EM_TC_I64);
    tw_varint(tw, zigzag64(v));
}

void em_tw_elem_binary(em_tw *tw, const void *p, int64_t len) {
    tw_varint(tw, (uint64_t)len);
    if (tw_room(tw, len)) {
        if (len > 0)
            memcpy(em_pq_wbuf_tail(tw->out), p, (size_t)len);
        tw->out->len += len;
    }
}

void em_tw_field_binary(em_tw *tw, int16_t id, const void *p, int64_t len) {
    tw_field_header(tw, id, EM_TC_BINARY);
    em_tw_elem_binary(tw, p, len);
}

void em_tw_field_string(em_tw *tw, int16_t id, const char *s) {
    em_tw_field_binary(tw, id, s, (int64_t)strlen(s));
}

void em_tw_field_list(em_tw *tw, int16_t id, int elem, int64_t n) {
    tw_field_header(tw, id, EM_TC_LIST);
    if (!tw_room(tw, 1))
        return;
    if (n < 15) {
        tw->out->data[tw->out->len++] = (uint8_t)(n << 4 | elem);
    } else {
        tw->out->data[tw->out->len++] = (uint8_t)(0xF0 | elem);
        tw_varint(tw, (uint64_t)n);
    }
}

void em_tw_elem_i32(em_tw *tw, int32_t v) { tw_varint(tw, zigzag64(v)); }

void em_tw_raw(em_tw *tw, const void *p, int64_t len) {
    if (tw_room(tw, len)) {
        if (len > 0)
            memcpy(em_pq_wbuf_tail(tw->out), p, (size_t)len);
        tw->out->len += len;
    }
}
