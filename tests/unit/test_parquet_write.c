/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parquet writer tests. The encoders are pinned by exact bytes (Thrift
 * compact protocol, RLE/bit-packed hybrid) and by decoding their output with
 * a small decoder written here from Encodings.md. The writer is tested by
 * round trips through Ember's reader: every type, nulls, all-null columns,
 * empty and long strings, dictionary on/off/fallback, several row groups and
 * pages, each codec, selection vectors, batches of EM_BATCH_CAP rows; by the
 * statistics and chunk facts the reader reports; and by failures: an
 * unwritable folder, a null in a non-nullable column, abort, and every
 * allocation failing in turn, each leaving no file behind.
 */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember/parquet.h"
#include "io/parquet/encode_dict.h"
#include "io/parquet/encode_rle.h"
#include "io/parquet/format.h"
#include "io/parquet/metadata.h"
#include "io/parquet/thrift_write.h"

/* ---- Thrift ------------------------------------------------------------ */

static void test_thrift_exact_bytes(void **state) {
    (void)state;
    em_error err;
    em_pq_wbuf b;
    em_pq_wbuf_init(&b, NULL);
    em_tw tw;
    em_tw_init(&tw, &b, &err);
    em_tw_struct_begin(&tw);
    em_tw_field_i32(&tw, 1, 5);
    em_tw_field_bool(&tw, 2, true);
    em_tw_field_binary(&tw, 3, "ab", 2);
    em_tw_field_i64(&tw, 20, -1); /* delta 17: long form */
    em_tw_field_list(&tw, 21, EM_TC_I32, 2);
    em_tw_elem_i32(&tw, 1);
    em_tw_elem_i32(&tw, 2);
    em_tw_field_struct(&tw, 22);
    em_tw_field_i8(&tw, 1, 7);
    em_tw_field_bool(&tw, 2, false);
    em_tw_struct_end(&tw);
    em_tw_field_list(&tw, 23, EM_TC_I32, 15); /* 15 elements: size in a varint */
    for (int i = 0; i < 15; i++)
        em_tw_elem_i32(&tw, -64);
    em_tw_field_i16(&tw, 2, 300); /* going back: long form */
    em_tw_struct_end(&tw);
    EM_ASSERT_OK(em_tw_finish(&tw), &err);
    const uint8_t want[] = {0x15, 0x0A,                   /* 1: i32 5 */
                            0x11,                         /* 2: true */
                            0x18, 0x02, 'a',  'b',        /* 3: "ab" */
                            0x06, 0x28, 0x01,             /* 20: i64 -1 */
                            0x19, 0x25, 0x02, 0x04,       /* 21: list<i32> [1,2] */
                            0x1C, 0x13, 0x07, 0x12, 0x00, /* 22: {1: i8 7, 2: false} */
                            0x19, 0xF5, 0x0F};            /* 23: list of 15 */
    assert_true(b.len == (int64_t)sizeof want + 15 + 4 + 1);
    assert_memory_equal(b.data, want, sizeof want);
    for (int i = 0; i < 15; i++)
        assert_int_equal(b.data[sizeof want + i], 0x7F);   /* zigzag(-64) = 127 */
    const uint8_t tail[] = {0x04, 0x04, 0xD8, 0x04, 0x00}; /* i16 id 2 (zz 4), 300 (zz 600) */
    assert_memory_equal(b.data + sizeof want + 15, tail, sizeof tail);
    em_pq_wbuf_reset(&b);

    /* Misuse is reported, not crashed on. */
    em_tw_init(&tw, &b, &err);
    em_tw_field_i32(&tw, 1, 1);
    assert_int_equal(em_tw_finish(&tw), EM_ERR_INTERNAL);
    em_tw_init(&tw, &b, &err);
    em_tw_struct_begin(&tw);
    assert_int_equal(em_tw_finish(&tw), EM_ERR_INTERNAL);
    em_pq_wbuf_reset(&b);
}

/* ---- RLE / bit-packed hybrid --------------------------------------------- */

/* Decoder from Encodings.md, for checking the encoder. Returns values decoded. */
static int64_t rle_decode(const uint8_t *p, int64_t len, int bw, uint32_t *out, int64_t n) {
    int64_t pos = 0, got = 0;
    while (got < n && pos < len) {
        uint64_t h = 0;
        int shift = 0;
        while (p[pos] & 0x80) {
            h |= (uint64_t)(p[pos++] & 0x7F) << shift;
            shift += 7;
        }
        h |= (uint64_t)p[pos++] << shift;
        if (h & 1) {
            int64_t count = (int64_t)(h >> 1) * 8;
            uint64_t acc = 0;
            int bits = 0;
            for (int64_t k = 0; k < count; k++) {
                while (bits < bw) {
                    acc |= (uint64_t)p[pos++] << bits;
                    bits += 8;
                }
                uint32_t v = bw ? (uint32_t)(acc & ((1ULL << bw) - 1)) : 0;
                acc = bw ? acc >> bw : acc;
                bits -= bw;
                if (got < n)
                    out[got++] = v;
            }
        } else {
            int64_t count = (int64_t)(h >> 1);
            uint32_t v = 0;
            for (int b = 0; b < (bw + 7) / 8; b++)
                v |= (uint32_t)p[pos++] << (8 * b);
            for (int64_t k = 0; k < count && got < n; k++)
                out[got++] = v;
        }
    }
    return got;
}

static uint64_t rng_state = 0x1234567;
static uint64_t rnd(void) {
    rng_state += 0x9E3779B97F4A7C15ULL;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void test_rle_exact_and_roundtrip(void **state) {
    (void)state;
    em_error err;
    em_pq_wbuf b;
    em_pq_wbuf_init(&b, NULL);
    /* Ten ones at width 1: one RLE run. */
    uint8_t ones[10];
    memset(ones, 1, sizeof ones);
    EM_ASSERT_OK(em_pq_rle_encode_u8(ones, 10, 1, &b, &err), &err);
    assert_int_equal(b.len, 2);
    assert_int_equal(b.data[0], 10 << 1);
    assert_int_equal(b.data[1], 1);
    /* Alternating 0,1 x8: one bit-packed group, LSB first. */
    b.len = 0;
    uint8_t alt[8] = {0, 1, 0, 1, 0, 1, 0, 1};
    EM_ASSERT_OK(em_pq_rle_encode_u8(alt, 8, 1, &b, &err), &err);
    assert_int_equal(b.len, 2);
    assert_int_equal(b.data[0], 0x03);
    assert_int_equal(b.data[1], 0xAA);
    /* Width 10 value in an RLE run takes two bytes. */
    b.len = 0;
    uint32_t big[9] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    EM_ASSERT_OK(em_pq_rle_encode_u32(big, 9, 10, &b, &err), &err);
    assert_int_equal(b.len, 3);
    assert_int_equal(b.data[0], 18);
    assert_int_equal(b.data[1] | b.data[2] << 8, 1000);
    assert_int_equal(em_pq_bit_width(0), 0);
    assert_int_equal(em_pq_bit_width(1), 1);
    assert_int_equal(em_pq_bit_width(255), 8);
    assert_int_equal(em_pq_bit_width(256), 9);

    /* Random mixes of runs and noise, every width, odd lengths. */
    static uint32_t vals[20000], back[20000];
    for (int bw = 0; bw <= 32; bw++) {
        for (int trial = 0; trial < 6; trial++) {
            int64_t n = (int64_t)(rnd() % 20000) + (trial == 0 ? 0 : 1);
            if (trial == 1)
                n = (int64_t)(rnd() % 20);
            uint64_t mask = bw == 32 ? 0xFFFFFFFFu : ((1ULL << bw) - 1);
            int64_t i = 0;
            while (i < n) {
                int64_t run = (rnd() % 3 == 0) ? (int64_t)(rnd() % 40) + 1 : 1;
                uint32_t v = (uint32_t)(rnd() & mask);
                for (int64_t k = 0; k < run && i < n; k++)
                    vals[i++] = v;
            }
            b.len = 0;
            EM_ASSERT_OK(em_pq_rle_encode_u32(vals, n, bw, &b, &err), &err);
            assert_true(b.len <= em_pq_rle_bound(n, bw));
            memset(back, 0xEE, sizeof back);
            assert_int_equal(rle_decode(b.data, b.len, bw, back, n), n);
            assert_memory_equal(vals, back, (size_t)n * 4);
        }
    }
    em_pq_wbuf_reset(&b);
}

/* ---- dictionary builder ----------------------------------------------------- */

static void test_dict_builder(void **state) {
    (void)state;
    em_error err;
    em_pool *pool = em_pool_create("dict", NULL, -1);
    em_pq_dict d;
    em_pq_dict_init(&d, 8, pool);
    enum { N = 200000 };
    static int64_t keys[N];
    static uint32_t idx[N];
    for (int i = 0; i < N; i++)
        keys[i] = (int64_t)(rnd() % 50000) - 25000;
    EM_ASSERT_OK(em_pq_dict_put_fixed(&d, (const uint8_t *)keys, N, idx, &err), &err);
    assert_true(d.n <= 50000 && d.n > 40000);
    for (int i = 0; i < N; i++) {
        int32_t len;
        const uint8_t *p = em_pq_dict_entry(&d, idx[i], &len);
        assert_int_equal(len, 8);
        assert_memory_equal(p, &keys[i], 8);
    }
    assert_int_equal(d.plain.len, d.n * 8);
    em_pq_dict_reset(&d);

    em_pq_dict_init(&d, 0, pool);
    char buf[64];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 30000; i++) {
            int len = snprintf(buf, sizeof buf, "k%d", i % 20000);
            uint32_t ix;
            EM_ASSERT_OK(
                em_pq_dict_put_bytes(&d, (const uint8_t *)buf, i % 7 == 0 ? 0 : len, &ix, &err),
                &err);
            int32_t got;
            const uint8_t *p = em_pq_dict_entry(&d, ix, &got);
            assert_int_equal(got, i % 7 == 0 ? 0 : len);
            assert_memory_equal(p, buf, (size_t)got);
        }
    }
    assert_true(d.n > 17000 && d.n <= 20001);
    em_pq_dict_clear(&d);
    assert_int_equal(d.n, 0);
    em_pq_dict_reset(&d);
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
}

/* ---- data for round trips -------------------------------------------------- */

/* FILL_GROWING: the first 300 rows of every 3000 take 3 values, the rest are
 * distinct, so a dictionary pays at first and overflows later. */
enum fill_mode { FILL_RANDOM, FILL_LOW, FILL_ALLNULL, FILL_UNIQUE, FILL_GROWING };

typedef struct colspec {
    const char *name;
    em_type type;
    bool nullable;
    int mode;
} colspec;

static em_i128 pow10i(int p) {
    em_i128 r = 1;
    while (p-- > 0)
        r *= 10;
    return r;
}

/* Appends row `row` of a column: deterministic in (row, mode), so the same
 * data can be regenerated. */
static void append_value(em_column *c, const colspec *s, int64_t row) {
    em_error err;
    uint64_t h = rng_state = (uint64_t)row * 7919 + (uint64_t)s->mode * 131 + (uint64_t)s->type.id;
    h = rnd();
    if (s->type.id == EM_TYPE_NULL || s->mode == FILL_ALLNULL || (s->nullable && h % 5 == 0)) {
        EM_ASSERT_OK(em_column_append_null(c, &err), &err);
        return;
    }
    uint64_t v = s->mode == FILL_LOW       ? h % 7
                 : s->mode == FILL_UNIQUE  ? (uint64_t)row
                 : s->mode == FILL_GROWING ? (row % 3000 < 300 ? (uint64_t)row % 3 : (uint64_t)row)
                                           : rnd();
    switch (s->type.id) {
    case EM_TYPE_BOOLEAN: {
        bool x = v & 1;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_BYTE: {
        int8_t x = (int8_t)v;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_SHORT: {
        int16_t x = (int16_t)v;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_INT:
    case EM_TYPE_DATE: {
        int32_t x = (int32_t)v;
        if (s->type.id == EM_TYPE_DATE)
            x = (int32_t)(v % 3000000) - 719162;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: {
        int64_t x = (int64_t)v;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_FLOAT: {
        static const float sp[] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY};
        float x = (v % 11 < 5 && s->mode == FILL_RANDOM)
                      ? sp[v % 11]
                      : (float)((int64_t)(v % 100000) - 50000) / 8;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_DOUBLE: {
        double x = (double)((int64_t)(v % 2000001) - 1000000) / 1024;
        if (s->mode == FILL_RANDOM && v % 13 == 0)
            x = NAN;
        if (s->mode == FILL_RANDOM && v % 13 == 1)
            x = -0.0;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_DECIMAL: {
        em_i128 lim = pow10i(s->type.precision);
        em_i128 x = (em_i128)((((unsigned __int128)v << 64) | rnd()) % (unsigned __int128)lim);
        if (v & 2)
            x = -x;
        if (s->mode == FILL_LOW)
            x = (em_i128)v - 3;
        EM_ASSERT_OK(em_column_append_fixed(c, &x, &err), &err);
        break;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        static char buf[6000];
        int len;
        if (s->mode == FILL_LOW) {
            len = snprintf(buf, sizeof buf, "low-%d", (int)v);
        } else if (s->mode == FILL_UNIQUE || s->mode == FILL_GROWING) {
            len = snprintf(buf, sizeof buf, "unique-string-%lld-padding-padding", (long long)v);
        } else {
            len = v % 10 == 0 ? 0 : v % 97 == 1 ? 5000 : (int)(v % 23);
            for (int k = 0; k < len; k++)
                buf[k] =
                    (char)(s->type.id == EM_TYPE_BINARY ? (v >> (k % 50)) : 'a' + (v + k) % 26);
        }
        EM_ASSERT_OK(em_column_append_bytes(c, buf, len, &err), &err);
        break;
    }
    default: fail_msg("type");
    }
}

/* A batch of rows [first, first + n) of the specs; with `sel`, the batch holds
 * 2n + 1 physical rows and selects the n logical ones (odd rows are junk). */
static em_batch *make_batch(const em_schema *schema, const colspec *specs, int64_t first, int64_t n,
                            bool sel) {
    em_error err;
    em_batch *b;
    int64_t phys = sel ? 2 * n + 1 : n;
    EM_ASSERT_OK(em_batch_create(schema, phys, NULL, &b, &err), &err);
    for (int c = 0; c < schema->n_fields; c++) {
        em_column *col = &b->cols[c];
        EM_ASSERT_OK(em_column_ensure_validity(col, &err), &err);
        for (int64_t r = 0; r < phys; r++) {
            if (sel && r % 2 == 0) {
                colspec junk = specs[c];
                junk.nullable = false;
                if (junk.mode == FILL_ALLNULL || junk.type.id == EM_TYPE_NULL)
                    EM_ASSERT_OK(em_column_append_null(col, &err), &err);
                else if (!specs[c].nullable)
                    append_value(col, &junk, 900000 + r);
                else
                    EM_ASSERT_OK(em_column_append_null(col, &err), &err);
            } else {
                append_value(col, &specs[c], first + (sel ? r / 2 : r));
            }
        }
    }
    b->n_rows = phys;
    if (sel) {
        EM_ASSERT_OK(em_batch_sel_reserve(b, n, &err), &err);
        for (int64_t k = 0; k < n; k++)
            b->sel[k] = (int32_t)(2 * k + 1);
        b->n_sel = n;
    }
    return b;
}

static void make_schema(em_schema *s, const colspec *specs, int n) {
    em_error err;
    EM_ASSERT_OK(em_schema_init(s, n, &err), &err);
    for (int i = 0; i < n; i++)
        EM_ASSERT_OK(em_schema_set(s, i, specs[i].name, specs[i].type, specs[i].nullable, &err),
                     &err);
}

/* Row `r` of column a equals row `rb` of column b. */
static void assert_same(const em_column *a, int64_t ra, const em_column *b, int64_t rb,
                        const char *name, int64_t row) {
    bool va = a->type.id != EM_TYPE_NULL && em_column_is_valid(a, ra);
    bool vb = b->type.id != EM_TYPE_NULL && em_column_is_valid(b, rb);
    if (va != vb)
        fail_msg("column %s row %lld: validity %d, read back %d", name, (long long)row, va, vb);
    if (!va)
        return;
    if (a->type.id == EM_TYPE_BOOLEAN) {
        if (em_bit_get(a->values->data, ra) != em_bit_get(b->values->data, rb))
            fail_msg("column %s row %lld: boolean differs", name, (long long)row);
    } else if (em_type_is_varlen(a->type)) {
        const int32_t *oa = em_column_offsets(a), *ob = em_column_offsets(b);
        int32_t la = oa[ra + 1] - oa[ra], lb = ob[rb + 1] - ob[rb];
        if (la != lb ||
            memcmp(em_column_chars(a) + oa[ra], em_column_chars(b) + ob[rb], (size_t)la) != 0)
            fail_msg("column %s row %lld: bytes differ (%d vs %d bytes)", name, (long long)row, la,
                     lb);
    } else {
        int w = em_type_width(a->type);
        if (memcmp(a->values->data + ra * w, b->values->data + rb * w, (size_t)w) != 0)
            fail_msg("column %s row %lld: value differs", name, (long long)row);
    }
}

/* Writes `rows` rows in batches of `batch` and reads them back, comparing. */
static void roundtrip(const char *path, const colspec *specs, int n_cols,
                      const em_pq_write_options *o, int64_t rows, int64_t batch, bool sel) {
    em_error err;
    em_schema schema;
    make_schema(&schema, specs, n_cols);
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, o, &w, &err), &err);
    for (int64_t done = 0; done < rows; done += batch) {
        int64_t n = rows - done < batch ? rows - done : batch;
        em_batch *b = make_batch(&schema, specs, done, n, sel);
        EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
        em_batch_destroy(b);
    }
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);

    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    assert_int_equal(em_pq_file_num_rows(f), rows);
    const em_schema *fs = em_pq_file_schema(f);
    assert_int_equal(fs->n_fields, n_cols);
    for (int c = 0; c < n_cols; c++) {
        assert_string_equal(fs->fields[c].name, specs[c].name);
        if (specs[c].type.id == EM_TYPE_NULL)
            assert_true(fs->fields[c].type.id == EM_TYPE_NULL ||
                        fs->fields[c].type.id == EM_TYPE_INT);
        else
            assert_true(em_type_equal(fs->fields[c].type, specs[c].type));
        assert_int_equal(fs->fields[c].nullable,
                         specs[c].nullable || specs[c].type.id == EM_TYPE_NULL);
    }
    em_pq_read_options ro = {0};
    em_pq_reader *r;
    EM_ASSERT_OK(em_pq_reader_open(f, &ro, &r, &err), &err);
    /* Regenerate the expected rows batch by batch as the reader returns them. */
    int64_t seen = 0;
    em_batch *got;
    em_status s;
    while ((s = em_pq_reader_next(r, &got, &err)) == EM_OK) {
        int64_t n = em_batch_rows(got);
        em_batch *want = make_batch(&schema, specs, seen, n, false);
        for (int c = 0; c < n_cols; c++)
            for (int64_t k = 0; k < n; k++) {
                int64_t rg = got->sel ? got->sel[k] : k;
                assert_same(&want->cols[c], k, &got->cols[c], rg, specs[c].name, seen + k);
            }
        em_batch_destroy(want);
        seen += n;
    }
    assert_int_equal(s, EM_DONE);
    assert_int_equal(seen, rows);
    em_pq_reader_close(r);
    em_pq_file_close(f);
    em_schema_reset(&schema);
}

static const colspec ALL[] = {
    {"b", {EM_TYPE_BOOLEAN, 0, 0}, true, FILL_RANDOM},
    {"i8", {EM_TYPE_BYTE, 0, 0}, true, FILL_RANDOM},
    {"i16", {EM_TYPE_SHORT, 0, 0}, true, FILL_LOW},
    {"i32", {EM_TYPE_INT, 0, 0}, true, FILL_RANDOM},
    {"i64", {EM_TYPE_LONG, 0, 0}, true, FILL_UNIQUE},
    {"f32", {EM_TYPE_FLOAT, 0, 0}, true, FILL_RANDOM},
    {"f64", {EM_TYPE_DOUBLE, 0, 0}, true, FILL_RANDOM},
    {"d9", {EM_TYPE_DECIMAL, 9, 2}, true, FILL_RANDOM},
    {"d18", {EM_TYPE_DECIMAL, 18, 6}, true, FILL_LOW},
    {"d25", {EM_TYPE_DECIMAL, 25, 5}, true, FILL_RANDOM},
    {"d38", {EM_TYPE_DECIMAL, 38, 0}, true, FILL_RANDOM},
    {"s", {EM_TYPE_STRING, 0, 0}, true, FILL_RANDOM},
    {"s_low", {EM_TYPE_STRING, 0, 0}, true, FILL_LOW},
    {"s_uniq", {EM_TYPE_STRING, 0, 0}, false, FILL_UNIQUE},
    {"bin", {EM_TYPE_BINARY, 0, 0}, true, FILL_RANDOM},
    {"date", {EM_TYPE_DATE, 0, 0}, true, FILL_RANDOM},
    {"ts", {EM_TYPE_TIMESTAMP, 0, 0}, true, FILL_RANDOM},
    {"ntz", {EM_TYPE_TIMESTAMP_NTZ, 0, 0}, false, FILL_LOW},
    {"nul", {EM_TYPE_NULL, 0, 0}, true, FILL_ALLNULL},
    {"allnull_s", {EM_TYPE_STRING, 0, 0}, true, FILL_ALLNULL},
    {"allnull_i", {EM_TYPE_INT, 0, 0}, true, FILL_ALLNULL},
    {"req_b", {EM_TYPE_BOOLEAN, 0, 0}, false, FILL_RANDOM},
    {"req_d", {EM_TYPE_DECIMAL, 20, 4}, false, FILL_LOW},
};
#define N_ALL ((int)(sizeof ALL / sizeof ALL[0]))

/* Walks the pages of one column chunk with the reader's page-header parser:
 * stores each page's encoding (-1 for the dictionary page) in encs and
 * returns the page count; checks the pages tile the chunk exactly and that
 * the data pages hold `rows` values. */
static int chunk_pages(em_pq_file *f, int rg, int col, int64_t rows, int *encs, int max) {
    em_error err;
    em_pq_chunk_info ci;
    EM_ASSERT_OK(em_pq_file_chunk_info(f, rg, col, &ci, &err), &err);
    FILE *fp = fopen(em_pq_file_path(f), "rb");
    assert_non_null(fp);
    int64_t start =
        ci.dictionary_page_offset >= 0 ? ci.dictionary_page_offset : ci.data_page_offset;
    uint8_t *buf = malloc((size_t)ci.total_compressed_size);
    assert_int_equal(fseek(fp, (long)start, SEEK_SET), 0);
    assert_int_equal(fread(buf, 1, (size_t)ci.total_compressed_size, fp),
                     (size_t)ci.total_compressed_size);
    fclose(fp);
    int n = 0;
    int64_t pos = 0, values = 0;
    while (pos < ci.total_compressed_size) {
        em_pq_page_header h;
        EM_ASSERT_OK(em_pq_page_header_parse(buf + pos, ci.total_compressed_size - pos, start + pos,
                                             "chunk", &h, &err),
                     &err);
        assert_true(n < max);
        if (h.type == EM_PQ_PAGE_DICTIONARY) {
            assert_int_equal(n, 0);
            assert_int_equal(start + pos, ci.dictionary_page_offset);
            encs[n++] = -1;
        } else {
            assert_int_equal(h.type, EM_PQ_PAGE_DATA);
            if (values == 0)
                assert_int_equal(start + pos, ci.data_page_offset);
            encs[n++] = h.encoding;
            values += h.num_values;
        }
        pos += h.header_size + h.compressed_size;
    }
    assert_int_equal(pos, ci.total_compressed_size);
    assert_int_equal(values, rows);
    free(buf);
    return n;
}

static void test_roundtrip_every_codec(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("pq_write_codecs");
    const em_pq_codec codecs[] = {EM_PQ_UNCOMPRESSED, EM_PQ_SNAPPY, EM_PQ_GZIP, EM_PQ_ZSTD,
                                  EM_PQ_LZ4_RAW};
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/c%d.parquet", dir, (int)codecs[k]);
        em_pq_write_options o;
        em_pq_write_options_init(&o);
        o.codec = codecs[k];
        roundtrip(path, ALL, N_ALL, &o, 2500, EM_BATCH_CAP, false);
        em_error err;
        em_pq_file *f;
        EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
        em_pq_chunk_info ci;
        for (int c = 0; c < N_ALL; c++) {
            EM_ASSERT_OK(em_pq_file_chunk_info(f, 0, c, &ci, &err), &err);
            assert_int_equal(ci.codec, codecs[k]);
            assert_int_equal(ci.num_values, 2500);
        }
        /* Low-cardinality strings are dictionary-encoded; unique ones are not. */
        EM_ASSERT_OK(em_pq_file_chunk_info(f, 0, 12, &ci, &err), &err);
        assert_non_null(strstr(ci.encodings, "RLE_DICTIONARY"));
        assert_true(ci.dictionary_page_offset >= 4);
        assert_true(ci.data_page_offset > ci.dictionary_page_offset);
        EM_ASSERT_OK(em_pq_file_chunk_info(f, 0, 13, &ci, &err), &err);
        assert_null(strstr(ci.encodings, "RLE_DICTIONARY"));
        assert_int_equal(ci.dictionary_page_offset, -1);
        assert_string_equal(ci.physical_type, "BYTE_ARRAY");
        EM_ASSERT_OK(em_pq_file_chunk_info(f, 0, 9, &ci, &err), &err);
        assert_string_equal(ci.physical_type, "FIXED_LEN_BYTE_ARRAY");
        assert_string_equal(em_pq_file_created_by(f), "ember version " EM_VERSION);
        em_pq_file_close(f);
    }
}

static void test_roundtrip_plain_groups_pages(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("pq_write_groups");
    char path[4096];
    snprintf(path, sizeof path, "%s/g.parquet", dir);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.dictionary = false;
    o.row_group_rows = 1000;
    o.page_bytes = 300;
    o.codec = EM_PQ_ZSTD;
    roundtrip(path, ALL, N_ALL, &o, 4500, 777, false);
    em_error err;
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    assert_int_equal(em_pq_file_num_row_groups(f), 5);
    for (int g = 0; g < 5; g++) {
        assert_int_equal(em_pq_file_row_group_rows(f, g), g < 4 ? 1000 : 500);
        em_pq_chunk_info ci;
        EM_ASSERT_OK(em_pq_file_chunk_info(f, g, 12, &ci, &err), &err);
        assert_null(strstr(ci.encodings, "DICTIONARY"));
        assert_int_equal(ci.dictionary_page_offset, -1);
        int encs[4096];
        for (int c = 0; c < N_ALL; c++) {
            int n = chunk_pages(f, g, c, g < 4 ? 1000 : 500, encs, 4096);
            for (int k = 0; k < n; k++)
                assert_int_equal(encs[k], EM_PQ_ENC_PLAIN);
            /* 300-byte pages: wide columns need several (booleans and nulls fit one) */
            if ((ALL[c].type.id == EM_TYPE_LONG || ALL[c].type.id == EM_TYPE_STRING) &&
                ALL[c].mode != FILL_ALLNULL)
                assert_true(n >= 3);
        }
    }
    em_pq_file_close(f);
}

static void test_roundtrip_dictionary_fallback(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("pq_write_fallback");
    char path[4096];
    snprintf(path, sizeof path, "%s/f.parquet", dir);
    /* Strings that repeat at the start of each group keep the dictionary at
     * the first page and overflow the small dictionary later in the chunk. */
    static const colspec specs[] = {
        {"s", {EM_TYPE_STRING, 0, 0}, true, FILL_GROWING},
        {"i", {EM_TYPE_INT, 0, 0}, true, FILL_RANDOM},
        {"low", {EM_TYPE_LONG, 0, 0}, false, FILL_LOW},
    };
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.dictionary_max_bytes = 600;
    o.page_bytes = 64;
    o.row_group_rows = 3000;
    roundtrip(path, specs, 3, &o, 7000, 500, false);
    em_error err;
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    assert_int_equal(em_pq_file_num_row_groups(f), 3);
    em_pq_chunk_info ci;
    EM_ASSERT_OK(em_pq_file_chunk_info(f, 0, 0, &ci, &err), &err);
    assert_non_null(strstr(ci.encodings, "PLAIN"));
    assert_non_null(strstr(ci.encodings, "RLE_DICTIONARY"));
    EM_ASSERT_OK(em_pq_file_chunk_info(f, 1, 2, &ci, &err), &err);
    assert_string_equal(ci.encodings, "PLAIN,RLE,RLE_DICTIONARY");
    /* The string chunk: dictionary page, dictionary-encoded pages, then PLAIN
     * pages once the dictionary passed 600 bytes. */
    int encs[4096];
    for (int g = 0; g < 3; g++) {
        int n = chunk_pages(f, g, 0, g < 2 ? 3000 : 1000, encs, 4096);
        assert_int_equal(encs[0], -1);
        int k = 1;
        while (k < n && encs[k] == EM_PQ_ENC_RLE_DICTIONARY)
            k++;
        assert_true(k > 1);
        assert_true(k < n);
        for (; k < n; k++)
            assert_int_equal(encs[k], EM_PQ_ENC_PLAIN);
    }
    /* Low cardinality: dictionary throughout. */
    int n = chunk_pages(f, 0, 2, 3000, encs, 4096);
    assert_int_equal(encs[0], -1);
    for (int k = 1; k < n; k++)
        assert_int_equal(encs[k], EM_PQ_ENC_RLE_DICTIONARY);
    em_pq_file_close(f);
}

static void test_roundtrip_selection(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("pq_write_sel");
    char path[4096];
    snprintf(path, sizeof path, "%s/s.parquet", dir);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.row_group_rows = 1234;
    roundtrip(path, ALL, N_ALL, &o, 3000, EM_BATCH_CAP, true);
    o.dictionary = false;
    o.page_bytes = 100;
    roundtrip(path, ALL, N_ALL, &o, 1000, 5, true);
}

/* Statistics of one small file, with and without the dictionary (values that
 * go to the dictionary get their statistics from it). */
static void check_statistics(bool dictionary) {
    em_error err;
    const char *dir = em_test_tmpdir("pq_write_stats");
    char path[4096];
    snprintf(path, sizeof path, "%s/st.parquet", dir);
    static const colspec specs[] = {
        {"i", {EM_TYPE_INT, 0, 0}, true, 0},      {"s", {EM_TYPE_STRING, 0, 0}, true, 0},
        {"f", {EM_TYPE_DOUBLE, 0, 0}, true, 0},   {"z", {EM_TYPE_FLOAT, 0, 0}, false, 0},
        {"d", {EM_TYPE_DECIMAL, 30, 2}, true, 0}, {"n", {EM_TYPE_LONG, 0, 0}, true, 0},
        {"b", {EM_TYPE_BOOLEAN, 0, 0}, true, 0},  {"t", {EM_TYPE_BYTE, 0, 0}, false, 0},
    };
    em_schema schema;
    make_schema(&schema, specs, 8);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.row_group_rows = 4;
    o.dictionary = dictionary;
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, &o, &w, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&schema, 8, NULL, &b, &err), &err);
    for (int c = 0; c < 8; c++)
        EM_ASSERT_OK(em_column_ensure_validity(&b->cols[c], &err), &err);
    const int32_t iv[8] = {5, -7, 0, 3, 1, 2, 3, 4};
    const char *sv[8] = {"b", "", "\xff", "ab", "x", "y", "x", "a"};
    const double fv[8] = {NAN, -0.0, 2.5, -1.5, NAN, NAN, NAN, NAN};
    const float zv[8] = {0.0f, 1.0f, 0.5f, 0.25f, -0.0f, 0.0f, -0.0f, 0.0f};
    const em_i128 dv[8] = {-((em_i128)1 << 90), 7, (em_i128)1 << 80, -1, 0, 0, 0, 0};
    const int8_t tv[8] = {-128, 127, 0, 1, 2, 3, 4, 5};
    const bool nul_i[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    for (int r = 0; r < 8; r++) {
        if (nul_i[r])
            EM_ASSERT_OK(em_column_append_null(&b->cols[0], &err), &err);
        else
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &iv[r], &err), &err);
        EM_ASSERT_OK(em_column_append_bytes(&b->cols[1], sv[r], (int32_t)strlen(sv[r]), &err),
                     &err);
        EM_ASSERT_OK(em_column_append_fixed(&b->cols[2], &fv[r], &err), &err);
        EM_ASSERT_OK(em_column_append_fixed(&b->cols[3], &zv[r], &err), &err);
        EM_ASSERT_OK(em_column_append_fixed(&b->cols[4], &dv[r], &err), &err);
        EM_ASSERT_OK(em_column_append_null(&b->cols[5], &err), &err);
        bool bv = r == 1;
        EM_ASSERT_OK(em_column_append_fixed(&b->cols[6], &bv, &err), &err);
        EM_ASSERT_OK(em_column_append_fixed(&b->cols[7], &tv[r], &err), &err);
    }
    b->n_rows = 8;
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    em_batch_destroy(b);
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);

    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    assert_int_equal(em_pq_file_num_row_groups(f), 2);
    em_pq_stats st;
    /* int: group 0 has a null */
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 0, &st, &err), &err);
    assert_true(st.has_min_max && st.has_null_count);
    assert_int_equal(st.null_count, 1);
    assert_int_equal(st.min.i64, -7);
    assert_int_equal(st.max.i64, 5);
    /* strings: unsigned byte order, empty string is the minimum */
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 1, &st, &err), &err);
    assert_true(st.has_min_max);
    assert_int_equal(st.min.bytes.len, 0);
    assert_int_equal(st.max.bytes.len, 1);
    assert_int_equal(st.max.bytes.ptr[0], 0xff);
    EM_ASSERT_OK(em_pq_file_stats(f, 1, 1, &st, &err), &err);
    assert_memory_equal(st.min.bytes.ptr, "a", 1);
    assert_memory_equal(st.max.bytes.ptr, "y", 1);
    /* double: NaN ignored, -0.0 as the max's zero becomes +0.0 */
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 2, &st, &err), &err);
    assert_true(st.has_min_max);
    assert_true(st.min.f64 == -1.5);
    assert_true(st.max.f64 == 2.5);
    /* all NaN: no bounds */
    EM_ASSERT_OK(em_pq_file_stats(f, 1, 2, &st, &err), &err);
    assert_false(st.has_min_max);
    assert_int_equal(st.null_count, 0);
    /* float zeros: min -0.0, max +0.0 */
    EM_ASSERT_OK(em_pq_file_stats(f, 1, 3, &st, &err), &err);
    assert_true(st.has_min_max);
    assert_true(st.min.f64 == 0 && signbit(st.min.f64));
    assert_true(st.max.f64 == 0 && !signbit(st.max.f64));
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 3, &st, &err), &err);
    assert_true(st.min.f64 == 0 && signbit(st.min.f64));
    assert_true(st.max.f64 == 1.0);
    /* decimal(30,2): FIXED_LEN_BYTE_ARRAY, signed */
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 4, &st, &err), &err);
    assert_true(st.has_min_max);
    assert_true(st.min.i128 == -((em_i128)1 << 90));
    assert_true(st.max.i128 == (em_i128)1 << 80);
    /* all null: only the count */
    EM_ASSERT_OK(em_pq_file_stats(f, 1, 5, &st, &err), &err);
    assert_false(st.has_min_max);
    assert_true(st.has_null_count);
    assert_int_equal(st.null_count, 4);
    /* boolean */
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 6, &st, &err), &err);
    assert_true(st.has_min_max);
    assert_int_equal(st.min.i64, 0);
    assert_int_equal(st.max.i64, 1);
    EM_ASSERT_OK(em_pq_file_stats(f, 1, 6, &st, &err), &err);
    assert_int_equal(st.max.i64, 0);
    /* byte */
    EM_ASSERT_OK(em_pq_file_stats(f, 0, 7, &st, &err), &err);
    assert_int_equal(st.min.i64, -128);
    assert_int_equal(st.max.i64, 127);
    em_pq_file_close(f);
    em_schema_reset(&schema);
}

/* Random schemas, options and batch shapes, each round-tripped through the
 * reader: shakes out slicing, page, dictionary and row-group boundaries. */
static void test_randomized_roundtrips(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("pq_write_random");
    static const em_type types[] = {
        {EM_TYPE_BOOLEAN, 0, 0},  {EM_TYPE_BYTE, 0, 0},      {EM_TYPE_SHORT, 0, 0},
        {EM_TYPE_INT, 0, 0},      {EM_TYPE_LONG, 0, 0},      {EM_TYPE_FLOAT, 0, 0},
        {EM_TYPE_DOUBLE, 0, 0},   {EM_TYPE_DECIMAL, 7, 3},   {EM_TYPE_DECIMAL, 12, 2},
        {EM_TYPE_DECIMAL, 33, 9}, {EM_TYPE_STRING, 0, 0},    {EM_TYPE_BINARY, 0, 0},
        {EM_TYPE_DATE, 0, 0},     {EM_TYPE_TIMESTAMP, 0, 0}, {EM_TYPE_TIMESTAMP_NTZ, 0, 0},
    };
    static const char *names[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};
    const em_pq_codec codecs[] = {EM_PQ_UNCOMPRESSED, EM_PQ_SNAPPY, EM_PQ_GZIP, EM_PQ_ZSTD,
                                  EM_PQ_LZ4_RAW};
    uint64_t seed = 99;
    for (int iter = 0; iter < 40; iter++) {
        rng_state = seed++ * 0x51ED27;
        colspec specs[8];
        int n_cols = 1 + (int)(rnd() % 8);
        for (int c = 0; c < n_cols; c++) {
            specs[c].name = names[c];
            specs[c].type = types[rnd() % (sizeof types / sizeof types[0])];
            specs[c].nullable = rnd() % 3 != 0;
            specs[c].mode = (int)(rnd() % 5);
            if (specs[c].mode == FILL_ALLNULL && !specs[c].nullable)
                specs[c].mode = FILL_RANDOM;
        }
        em_pq_write_options o;
        em_pq_write_options_init(&o);
        o.codec = codecs[rnd() % 5];
        o.dictionary = rnd() % 4 != 0;
        o.dictionary_max_bytes = rnd() % 2 ? 0 : 64 + (int64_t)(rnd() % 4000);
        o.page_bytes = rnd() % 2 ? 0 : 16 + (int64_t)(rnd() % 3000);
        o.row_group_rows = rnd() % 2 ? 0 : 1 + (int64_t)(rnd() % 2000);
        o.statistics = rnd() % 5 != 0;
        int64_t rows = (int64_t)(rnd() % 5000);
        int64_t batch = 1 + (int64_t)(rnd() % (rnd() % 2 ? EM_BATCH_CAP : 3000));
        bool sel = rnd() % 3 == 0;
        uint64_t after = rng_state; /* the data generator reseeds; keep this stream */
        char path[4096];
        snprintf(path, sizeof path, "%s/r%d.parquet", dir, iter);
        roundtrip(path, specs, n_cols, &o, rows, batch, sel);
        rng_state = after;
    }
}

static void test_statistics(void **state) {
    (void)state;
    check_statistics(true);
    check_statistics(false);
}

/* ---- failures ------------------------------------------------------------- */

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Writers in several threads, two of them to the same path: temporary names
 * never collide, every file is complete, the shared path holds one whole file. */
typedef struct thread_job {
    char path[4096];
    int64_t rows;
    em_status status;
} thread_job;

static const colspec THREAD_SPECS[] = {{"a", {EM_TYPE_LONG, 0, 0}, false, FILL_UNIQUE},
                                       {"s", {EM_TYPE_STRING, 0, 0}, true, FILL_LOW}};

static void *thread_write(void *arg) {
    thread_job *job = arg;
    em_error err;
    em_schema schema;
    job->status = em_schema_init(&schema, 2, &err);
    for (int c = 0; c < 2 && job->status == EM_OK; c++)
        job->status = em_schema_set(&schema, c, THREAD_SPECS[c].name, THREAD_SPECS[c].type,
                                    THREAD_SPECS[c].nullable, &err);
    em_pq_writer *w = NULL;
    if (job->status == EM_OK)
        job->status = em_pq_writer_open(job->path, &schema, NULL, &w, &err);
    for (int64_t first = 0; job->status == EM_OK && first < job->rows; first += 1000) {
        em_batch *b;
        job->status = em_batch_create(&schema, 1000, NULL, &b, &err);
        for (int64_t r = 0; job->status == EM_OK && r < 1000; r++) {
            int64_t v = first + r;
            job->status = em_column_append_fixed(&b->cols[0], &v, &err);
            if (job->status == EM_OK)
                job->status = em_column_append_bytes(&b->cols[1], "xy", (int32_t)(v % 3), &err);
        }
        b->n_rows = 1000;
        if (job->status == EM_OK)
            job->status = em_pq_writer_write(w, b, &err);
        em_batch_destroy(b);
    }
    if (w)
        job->status = job->status == EM_OK ? em_pq_writer_close(w, &err)
                                           : (em_pq_writer_abort(w), job->status);
    em_schema_reset(&schema);
    return NULL;
}

static void test_concurrent_writers(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("pq_write_threads");
    enum { N = 4 };
    thread_job jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        snprintf(jobs[i].path, sizeof jobs[i].path, "%s/t%d.parquet", dir, i < 2 ? 0 : i);
        jobs[i].rows = 20000 + 1000 * i;
        assert_int_equal(pthread_create(&th[i], NULL, thread_write, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].status, EM_OK);
    }
    assert_int_equal(count_entries(dir), N - 1);
    for (int i = 1; i < N; i++) {
        em_error err;
        em_pq_file *f;
        EM_ASSERT_OK(em_pq_file_open(jobs[i].path, &f, &err), &err);
        int64_t rows = em_pq_file_num_rows(f);
        if (i == 1)
            assert_true(rows == jobs[0].rows || rows == jobs[1].rows);
        else
            assert_int_equal(rows, jobs[i].rows);
        em_pq_file_close(f);
    }
}

static void simple_schema(em_schema *s) {
    em_error err;
    EM_ASSERT_OK(em_schema_init(s, 2, &err), &err);
    EM_ASSERT_OK(em_schema_set(s, 0, "a", em_type_make(EM_TYPE_INT), false, &err), &err);
    EM_ASSERT_OK(em_schema_set(s, 1, "s", em_type_make(EM_TYPE_STRING), true, &err), &err);
}

static void test_failures_leave_nothing(void **state) {
    (void)state;
    em_error err;
    em_schema schema;
    simple_schema(&schema);
    const char *base = em_test_tmpdir("pq_write_fail");
    char dir[4096], path[4096];
    snprintf(dir, sizeof dir, "%s", base);

    /* A folder that does not exist: EM_ERR_IO naming the path. */
    snprintf(path, sizeof path, "%s/missing/x.parquet", dir);
    em_pq_writer *w = NULL;
    assert_int_equal(em_pq_writer_open(path, &schema, NULL, &w, &err), EM_ERR_IO);
    assert_null(w);
    assert_non_null(strstr(err.msg, path));

    /* An unwritable folder (unless running as root, which may write anyway). */
    char ro[4096];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    mkdir(ro, 0555);
    snprintf(path, sizeof path, "%s/x.parquet", ro);
    if (geteuid() != 0) {
        assert_int_equal(em_pq_writer_open(path, &schema, NULL, &w, &err), EM_ERR_IO);
        assert_non_null(strstr(err.msg, path));
        assert_int_equal(count_entries(ro), 0);
    }

    /* A path through a regular file (ENOTDIR, even for root). */
    snprintf(path, sizeof path, "%s/plain", dir);
    FILE *pf = fopen(path, "w");
    fclose(pf);
    snprintf(path, sizeof path, "%s/plain/x.parquet", dir);
    assert_int_equal(em_pq_writer_open(path, &schema, NULL, &w, &err), EM_ERR_IO);
    assert_non_null(strstr(err.msg, path));
    snprintf(path, sizeof path, "%s/plain", dir);
    unlink(path);

    /* Unsupported codec. */
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.codec = EM_PQ_LZO;
    snprintf(path, sizeof path, "%s/lzo.parquet", dir);
    assert_int_equal(em_pq_writer_open(path, &schema, &o, &w, &err), EM_ERR_UNSUPPORTED);

    /* Abort after writing: nothing left. */
    snprintf(path, sizeof path, "%s/aborted.parquet", dir);
    colspec specs[] = {{"a", {EM_TYPE_INT, 0, 0}, false, FILL_RANDOM},
                       {"s", {EM_TYPE_STRING, 0, 0}, true, FILL_RANDOM}};
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, NULL, &w, &err), &err);
    /* ro/ alone: the file being written has no name (O_TMPFILE), so a
     * process killed now leaves nothing behind */
    assert_int_equal(count_entries(dir), 1);
    em_batch *b = make_batch(&schema, specs, 0, 100, false);
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    em_pq_writer_abort(w);
    assert_int_equal(count_entries(dir), 1);
    em_pq_writer_abort(NULL);

    /* A null in a non-nullable column: the write fails, close fails, nothing left. */
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, NULL, &w, &err), &err);
    EM_ASSERT_OK(em_column_ensure_validity(&b->cols[0], &err), &err);
    em_bit_clear(b->cols[0].validity->data, 17);
    assert_int_equal(em_pq_writer_write(w, b, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "'a'"));
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(em_pq_writer_write(w, b, &err), EM_ERR_INVALID);
    assert_int_equal(em_pq_writer_close(w, &err), EM_ERR_INVALID);
    assert_int_equal(count_entries(dir), 1);
    em_batch_destroy(b);

    /* A decimal wider than its precision. */
    em_schema dec;
    EM_ASSERT_OK(em_schema_init(&dec, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&dec, 0, "m", em_type_decimal(9, 2), true, &err), &err);
    EM_ASSERT_OK(em_pq_writer_open(path, &dec, NULL, &w, &err), &err);
    EM_ASSERT_OK(em_batch_create(&dec, 2, NULL, &b, &err), &err);
    em_i128 fits = 999999999, wide = 1000000000;
    EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &fits, &err), &err);
    EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &wide, &err), &err);
    b->n_rows = 2;
    assert_int_equal(em_pq_writer_write(w, b, &err), EM_ERR_OVERFLOW);
    assert_non_null(strstr(err.msg, "decimal(9,2)"));
    em_batch_destroy(b);
    em_pq_writer_abort(w);
    assert_int_equal(count_entries(dir), 1);
    em_schema_reset(&dec);

    /* A batch of another schema. */
    em_schema other;
    EM_ASSERT_OK(em_schema_init(&other, 2, &err), &err);
    EM_ASSERT_OK(em_schema_set(&other, 0, "a", em_type_make(EM_TYPE_LONG), false, &err), &err);
    EM_ASSERT_OK(em_schema_set(&other, 1, "s", em_type_make(EM_TYPE_STRING), true, &err), &err);
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, NULL, &w, &err), &err);
    EM_ASSERT_OK(em_batch_create(&other, 1, NULL, &b, &err), &err);
    assert_int_equal(em_pq_writer_write(w, b, &err), EM_ERR_INVALID);
    em_batch_destroy(b);
    em_pq_writer_abort(w);
    assert_int_equal(count_entries(dir), 1);
    em_schema_reset(&other);

    /* Success replaces an existing file in one step and leaves no temporary. */
    FILE *old = fopen(path, "w");
    fputs("old", old);
    fclose(old);
    roundtrip(path, specs, 2, NULL, 10, 3, false);
    assert_int_equal(count_entries(dir), 2);
    em_schema_reset(&schema);
}

/* The disk filling up mid-file (a 64 KiB file size limit makes write(2) fail
 * with EFBIG): EM_ERR_IO naming the file, and the partial file is removed. */
static void test_write_error_mid_file(void **state) {
    (void)state;
    em_error err;
    em_schema schema;
    simple_schema(&schema);
    const char *dir = em_test_tmpdir("pq_write_efbig");
    char path[4096];
    snprintf(path, sizeof path, "%s/big.parquet", dir);
    colspec specs[] = {{"a", {EM_TYPE_INT, 0, 0}, false, FILL_UNIQUE},
                       {"s", {EM_TYPE_STRING, 0, 0}, true, FILL_UNIQUE}};
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.codec = EM_PQ_UNCOMPRESSED;
    o.row_group_rows = 5000;
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    em_pq_writer *w;
    em_status s = em_pq_writer_open(path, &schema, &o, &w, &err);
    for (int64_t first = 0; s == EM_OK && first < 100000; first += 5000) {
        em_batch *b = make_batch(&schema, specs, first, 5000, false);
        s = em_pq_writer_write(w, b, &err);
        em_batch_destroy(b);
    }
    if (s == EM_OK)
        s = em_pq_writer_close(w, &err);
    else
        em_pq_writer_abort(w);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(s, EM_ERR_IO);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(count_entries(dir), 0);
    em_schema_reset(&schema);
}

/* Every allocation failing in turn: clean errors, no leak, no file. */
static void test_allocation_failures(void **state) {
    (void)state;
    em_error err;
    em_schema schema;
    simple_schema(&schema);
    const char *dir = em_test_tmpdir("pq_write_nomem");
    char path[4096];
    snprintf(path, sizeof path, "%s/m.parquet", dir);
    colspec specs[] = {{"a", {EM_TYPE_INT, 0, 0}, false, FILL_LOW},
                       {"s", {EM_TYPE_STRING, 0, 0}, true, FILL_RANDOM}};
    em_batch *b = make_batch(&schema, specs, 0, 3000, false);
    em_pool *pool = em_pool_create("writer", NULL, -1);
    int ok = 0;
    for (int64_t n = 1; n < 2000 && !ok; n++) {
        em_pq_write_options o;
        em_pq_write_options_init(&o);
        o.pool = pool;
        o.row_group_rows = 1000;
        em_alloc_fail_after(n);
        em_pq_writer *w = NULL;
        em_status s = em_pq_writer_open(path, &schema, &o, &w, &err);
        if (s == EM_OK)
            s = em_pq_writer_write(w, b, &err);
        if (s == EM_OK)
            s = em_pq_writer_close(w, &err);
        else if (w)
            em_pq_writer_abort(w);
        bool triggered = em_alloc_fail_triggered();
        em_alloc_fail_after(0);
        assert_int_equal(em_pool_used(pool), 0);
        if (s == EM_OK) {
            assert_false(triggered);
            assert_int_equal(count_entries(dir), 1);
            ok = 1;
        } else {
            assert_true(s == EM_ERR_NOMEM || s == EM_ERR_OOM_BUDGET);
            if (!strstr(err.msg, path))
                fail_msg("allocation %lld: message does not name the file: %s", (long long)n,
                         err.msg);
            assert_int_equal(count_entries(dir), 0);
        }
    }
    assert_true(ok);
    unlink(path);
    em_pool_destroy(pool);
    em_batch_destroy(b);

    /* A pool budget too small for the pages fails cleanly too. */
    pool = em_pool_create("tiny", NULL, 64 * 1024);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.pool = pool;
    b = make_batch(&schema, specs, 0, 20000, false);
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, &o, &w, &err), &err);
    assert_int_equal(em_pq_writer_write(w, b, &err), EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, path)); /* the pool's message, prefixed with the file */
    assert_non_null(strstr(err.msg, "tiny"));
    em_pq_writer_abort(w);
    assert_int_equal(em_pool_used(pool), 0);
    assert_int_equal(count_entries(dir), 0);
    em_pool_destroy(pool);
    em_batch_destroy(b);
    em_schema_reset(&schema);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thrift_exact_bytes),
        cmocka_unit_test(test_rle_exact_and_roundtrip),
        cmocka_unit_test(test_dict_builder),
        cmocka_unit_test(test_roundtrip_every_codec),
        cmocka_unit_test(test_roundtrip_plain_groups_pages),
        cmocka_unit_test(test_roundtrip_dictionary_fallback),
        cmocka_unit_test(test_roundtrip_selection),
        cmocka_unit_test(test_randomized_roundtrips),
        cmocka_unit_test(test_statistics),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_failures_leave_nothing),
        cmocka_unit_test(test_write_error_mid_file),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
