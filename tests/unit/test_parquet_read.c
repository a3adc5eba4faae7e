/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parquet reader unit tests: the Thrift compact decoder, the RLE/bit-packed
 * hybrid and bit unpacking at every width, DELTA_BINARY_PACKED (negative
 * deltas, extreme min_delta, 64-bit wraparound, 33..64-bit widths),
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, INT96 and
 * big-endian decimals; then whole files built byte by byte (thrift_write)
 * for the types and encodings the peers cannot write (INT96, unsigned
 * integers, legacy BIT_PACKED levels, RLE booleans, DELTA_BYTE_ARRAY,
 * BYTE_STREAM_SPLIT on INT32 and FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY decimals,
 * timestamp units) and for every kind of corruption, each of which must give
 * its documented error naming the file and the byte offset. Batches are
 * EM_BATCH_CAP rows, so the CI build with a capacity of 3 crosses pages and
 * runs at every boundary.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/parquet.h"
#include "ember/value_text.h"
#include "io/parquet/codec.h"
#include "io/parquet/encode_buf.h"
#include "io/parquet/format.h"
#include "io/parquet/internal.h"
#include "io/parquet/levels.h"
#include "io/parquet/metadata.h"
#include "io/parquet/thrift_read.h"
#include "io/parquet/thrift_write.h"

/* ------------------------------------------------------------ encoders */

typedef struct bytes {
    uint8_t p[1 << 16];
    int64_t n;
} bytes;

static void put(bytes *b, uint8_t v) { b->p[b->n++] = v; }
static void put_uleb(bytes *b, uint64_t v) {
    while (v >= 0x80) {
        put(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put(b, (uint8_t)v);
}
static void put_zigzag(bytes *b, int64_t v) {
    put_uleb(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
static void put_le32(bytes *b, uint32_t v) {
    for (int i = 0; i < 4; i++)
        put(b, (uint8_t)(v >> (8 * i)));
}

/* LSB-first packing of n values of w bits. */
static void put_packed(bytes *b, const uint64_t *v, int64_t n, int w) {
    int64_t start = b->n, nbytes = (n * w + 7) / 8;
    memset(b->p + start, 0, (size_t)nbytes);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < w; k++)
            if ((v[i] >> k) & 1)
                b->p[start + (i * w + k) / 8] |= (uint8_t)(1u << ((i * w + k) % 8));
    b->n += nbytes;
}

/* Hybrid encoding: runs of equal values >= 8 become RLE runs, the rest
 * bit-packed groups of 8 (the last padded). */
static void put_hybrid(bytes *b, const uint32_t *v, int64_t n, int w) {
    int64_t i = 0;
    while (i < n) {
        int64_t j = i;
        while (j < n && v[j] == v[i])
            j++;
        if (j - i >= 8) {
            put_uleb(b, (uint64_t)(j - i) << 1);
            for (int k = 0; k < (w + 7) / 8; k++)
                put(b, (uint8_t)(v[i] >> (8 * k)));
            i = j;
            continue;
        }
        int64_t end = i + 8 < n ? i + 8 : n; /* one group at a time, padded */
        uint64_t g[8] = {0};
        for (int64_t k = i; k < end; k++)
            g[k - i] = v[k];
        put_uleb(b, (1u << 1) | 1);
        put_packed(b, g, 8, w);
        i = end;
    }
}

static int bits_of(uint64_t x) {
    int w = 0;
    while (x) {
        w++;
        x >>= 1;
    }
    return w;
}

/* DELTA_BINARY_PACKED, block 128 with 4 miniblocks of 32; arithmetic wraps. */
static void put_delta(bytes *b, const int64_t *v, int64_t n) {
    put_uleb(b, 128);
    put_uleb(b, 4);
    put_uleb(b, (uint64_t)n);
    put_zigzag(b, n ? v[0] : 0);
    for (int64_t i = 1; i < n; i += 128) {
        int64_t k = n - i < 128 ? n - i : 128;
        uint64_t d[128] = {0};
        int64_t mn = INT64_MAX;
        for (int64_t j = 0; j < k; j++) {
            d[j] = (uint64_t)v[i + j] - (uint64_t)v[i + j - 1];
            if ((int64_t)d[j] < mn)
                mn = (int64_t)d[j];
        }
        put_zigzag(b, mn);
        int widths[4] = {0};
        for (int m = 0; m < 4; m++) {
            uint64_t mx = 0;
            for (int64_t j = m * 32; j < (m + 1) * 32 && j < k; j++) {
                d[j] -= (uint64_t)mn;
                mx |= d[j];
            }
            widths[m] = bits_of(mx);
            put(b, (uint8_t)widths[m]);
        }
        for (int m = 0; m < 4 && m * 32 < k; m++)
            put_packed(b, d + m * 32, 32, widths[m]);
    }
}

/* ------------------------------------------------------------ thrift */

static em_status tc_parse_all(const uint8_t *p, int64_t n, em_error *err) {
    em_tc_reader r;
    em_tc_init(&r, p, n, 100, "mem", err);
    return em_tc_skip(&r, EM_TC_STRUCT);
}

static void test_thrift_scalars_and_skip(void **state) {
    (void)state;
    /* struct { 1: i32 -3, 2: i64 300, 17 (long form): binary "ab", 18: list<i32>[1,2],
     *          19: bool true, 20: double, 21: map<i32,binary>{1:"x"}, 22: struct{1: i8 -1}} */
    bytes b = {.n = 0};
    put(&b, 0x15);
    put_zigzag(&b, -3);
    put(&b, 0x16);
    put_zigzag(&b, 300);
    put(&b, 0x08);
    put_zigzag(&b, 17);
    put_uleb(&b, 2);
    put(&b, 'a');
    put(&b, 'b');
    put(&b, 0x19);
    put(&b, 0x25);
    put_zigzag(&b, 1);
    put_zigzag(&b, 2);
    put(&b, 0x11);
    put(&b, 0x17);
    for (int i = 0; i < 8; i++)
        put(&b, 0);
    put(&b, 0x1b);
    put_uleb(&b, 1);
    put(&b, 0x58);
    put_zigzag(&b, 1);
    put_uleb(&b, 1);
    put(&b, 'x');
    put(&b, 0x1c);
    put(&b, 0x13);
    put(&b, 0xff);
    put(&b, 0);
    put(&b, 0);
    em_error err = {0};
    EM_ASSERT_OK(tc_parse_all(b.p, b.n, &err), &err);

    em_tc_reader r;
    em_tc_init(&r, b.p, b.n, 0, "mem", &err);
    EM_ASSERT_OK(em_tc_struct_begin(&r), &err);
    int16_t last = 0;
    em_tc_field f;
    EM_ASSERT_OK(em_tc_field_next(&r, &last, &f), &err);
    assert_int_equal(f.id, 1);
    int32_t i32;
    EM_ASSERT_OK(em_tc_read_i32(&r, f.type, &i32), &err);
    assert_int_equal(i32, -3);
    EM_ASSERT_OK(em_tc_field_next(&r, &last, &f), &err);
    int64_t i64;
    EM_ASSERT_OK(em_tc_read_i64(&r, f.type, &i64), &err);
    assert_int_equal(i64, 300);
    EM_ASSERT_OK(em_tc_field_next(&r, &last, &f), &err);
    assert_int_equal(f.id, 17);
    const uint8_t *p;
    int32_t len;
    EM_ASSERT_OK(em_tc_read_binary(&r, f.type, &p, &len), &err);
    assert_int_equal(len, 2);
    assert_memory_equal(p, "ab", 2);
    EM_ASSERT_OK(em_tc_field_next(&r, &last, &f), &err);
    assert_int_equal(f.id, 18);

    /* Every prefix of the struct is truncated: corrupt, with an offset >= 100. */
    for (int64_t cut = 0; cut < b.n; cut++) {
        em_error e2 = {0};
        assert_int_equal(tc_parse_all(b.p, cut, &e2), EM_ERR_CORRUPT);
        assert_non_null(strstr(e2.msg, "mem: byte 1"));
    }
}

static void test_thrift_hostile(void **state) {
    (void)state;
    em_error err = {0};
    /* Varint longer than 10 bytes. */
    uint8_t v[16] = {0x16};
    memset(v + 1, 0xff, 12);
    assert_int_equal(tc_parse_all(v, 14, &err), EM_ERR_CORRUPT);
    /* Deep nesting: struct in struct ... */
    uint8_t deep[200];
    for (int i = 0; i < 100; i++)
        deep[i] = 0x1c;
    memset(deep + 100, 0, 100);
    assert_int_equal(tc_parse_all(deep, 200, &err), EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "nested deeper"));
    /* A list claiming more elements than bytes remain. */
    uint8_t lst[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0x0f, 0x02, 0x00};
    assert_int_equal(tc_parse_all(lst, sizeof lst, &err), EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "exceeds the remaining"));
    /* Binary longer than the data. */
    uint8_t bin[] = {0x18, 0x7f, 'a'};
    assert_int_equal(tc_parse_all(bin, sizeof bin, &err), EM_ERR_CORRUPT);
    /* Unknown field type 13. */
    uint8_t unk[] = {0x1d, 0x00};
    assert_int_equal(tc_parse_all(unk, sizeof unk, &err), EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "byte 100"));
}

/* ------------------------------------------------------------ levels */

static void test_rle_every_width(void **state) {
    (void)state;
    static uint32_t in[1000], out[1000];
    for (int w = 0; w <= 32; w++) {
        uint64_t mask = w == 32 ? 0xffffffffu : ((1ull << w) - 1);
        for (int i = 0; i < 1000; i++) {
            /* runs of repeats mixed with noise, extremes included */
            uint64_t x = (i / 50) % 2 ? (uint64_t)(i / 50) : (uint64_t)i * 2654435761u;
            if (i % 97 == 0)
                x = mask;
            in[i] = (uint32_t)(x & mask);
        }
        bytes b = {.n = 0};
        put_hybrid(&b, in, 1000, w);
        for (int step = 1; step <= 13; step += 4) {
            em_rle_dec d;
            em_rle_init(&d, b.p, b.n, w);
            int64_t got = 0;
            while (got < 1000) {
                int64_t k = 1000 - got < step ? 1000 - got : step;
                assert_int_equal(em_rle_get(&d, out + got, k), k);
                got += k;
            }
            for (int i = 0; i < 1000; i++)
                if (in[i] != out[i])
                    fail_msg("width %d step %d value %d: %u != %u", w, step, i, out[i], in[i]);
        }
        /* Skip then read. */
        em_rle_dec d;
        em_rle_init(&d, b.p, b.n, w);
        assert_int_equal(em_rle_skip(&d, 333), 333);
        assert_int_equal(em_rle_get(&d, out, 10), 10);
        assert_memory_equal(out, in + 333, 40);
    }
}

static void test_rle_truncated_and_bad(void **state) {
    (void)state;
    uint32_t out[64];
    /* Bit-packed run of 2 groups (16 values) at width 3 with only 4 bytes: 10 values. */
    uint8_t bp[] = {(2 << 1) | 1, 0xff, 0xff, 0xff, 0xff};
    em_rle_dec d;
    em_rle_init(&d, bp, sizeof bp, 3);
    assert_int_equal(em_rle_get(&d, out, 64), 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(out[i], 7);
    /* Zero-length RLE run: malformed. */
    uint8_t zero[] = {0x00, 0x01};
    em_rle_init(&d, zero, sizeof zero, 1);
    assert_int_equal(em_rle_get(&d, out, 4), 0);
    assert_true(d.bad);
    /* RLE value bytes missing. */
    uint8_t novalue[] = {0x08};
    em_rle_init(&d, novalue, sizeof novalue, 16);
    assert_int_equal(em_rle_get(&d, out, 4), 0);
    assert_true(d.bad);
}

static void test_unpack64_widths(void **state) {
    (void)state;
    static uint64_t in[300], out[300];
    for (int w = 0; w <= 64; w++) {
        uint64_t mask = w == 64 ? ~0ull : ((1ull << w) - 1);
        for (int i = 0; i < 300; i++)
            in[i] = ((uint64_t)i * 0x9e3779b97f4a7c15ull ^ ((uint64_t)i << 40)) & mask;
        in[7] = mask;
        bytes b = {.n = 0};
        put_packed(&b, in, 300, w);
        em_unpack64(b.p, b.n, 0, w, out, 300);
        assert_memory_equal(in, out, sizeof in);
        em_unpack64(b.p, b.n, 123, w, out, 100);
        assert_memory_equal(in + 123, out, 100 * 8);
    }
}

/* ------------------------------------------------------------ delta */

static em_pq_dctx ctx(em_error *err, em_pq_buf *bufs, int n) {
    for (int i = 0; i < n; i++)
        memset(&bufs[i], 0, sizeof bufs[i]);
    em_pq_dctx c = {.path = "mem", .column = "c", .base = 1000, .err = err};
    return c;
}

static void test_delta_binary_packed(void **state) {
    (void)state;
    static int64_t v[1000];
    em_error err = {0};
    em_pq_buf bufs[1];
    em_pq_dctx c = ctx(&err, bufs, 1);
    /* Negative deltas, extremes and overflowing differences (wraparound). */
    const int64_t pattern[] = {5, -7, INT64_MAX, INT64_MIN, 0, -1, INT64_MIN, INT64_MAX, 42};
    for (int i = 0; i < 1000; i++)
        v[i] = i < 9 ? pattern[i] : (i % 3 ? -(int64_t)i * 1000003 : (int64_t)i * 77);
    for (int64_t n = 0; n <= 1000; n += n < 10 ? 1 : 247) {
        bytes b = {.n = 0};
        put_delta(&b, v, n);
        put(&b, 0xAB); /* data after the stream */
        int64_t got, used;
        EM_ASSERT_OK(em_pq_delta_decode(&c, b.p, b.n, 8, 1000, &bufs[0], &got, &used), &err);
        assert_int_equal(got, n);
        assert_int_equal(used, b.n - 1);
        assert_memory_equal(bufs[0].p, v, (size_t)n * 8);
    }
    /* INT32: deltas computed in 64 bits need 33 bits; values wrap to 32 bits. */
    int64_t v32[200];
    for (int i = 0; i < 200; i++)
        v32[i] = i % 2 ? INT32_MIN : INT32_MAX;
    bytes b = {.n = 0};
    put_delta(&b, v32, 200);
    int64_t got, used;
    EM_ASSERT_OK(em_pq_delta_decode(&c, b.p, b.n, 4, 200, &bufs[0], &got, &used), &err);
    for (int i = 0; i < 200; i++)
        assert_int_equal(((int32_t *)(void *)bufs[0].p)[i], (int32_t)v32[i]);
    /* More values than the page allows, a bad block size, a truncated miniblock. */
    assert_int_equal(em_pq_delta_decode(&c, b.p, b.n, 4, 199, &bufs[0], &got, &used),
                     EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "mem: byte 1000: column c"));
    uint8_t badblock[] = {100, 4, 1, 0};
    assert_int_equal(em_pq_delta_decode(&c, badblock, 4, 8, 10, &bufs[0], &got, &used),
                     EM_ERR_CORRUPT);
    assert_int_equal(em_pq_delta_decode(&c, b.p, b.n / 2, 4, 200, &bufs[0], &got, &used),
                     EM_ERR_CORRUPT);
    /* A width above 64. */
    bytes w = {.n = 0};
    put_uleb(&w, 128);
    put_uleb(&w, 4);
    put_uleb(&w, 3);
    put_zigzag(&w, 0);
    put_zigzag(&w, 0);
    put(&w, 65);
    put(&w, 0);
    put(&w, 0);
    put(&w, 0);
    assert_int_equal(em_pq_delta_decode(&c, w.p, w.n, 8, 3, &bufs[0], &got, &used), EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "bit width 65"));
    em_pq_buf_free(&bufs[0]);
}

static void test_delta_byte_arrays(void **state) {
    (void)state;
    em_error err = {0};
    em_pq_buf bufs[5];
    em_pq_dctx c = ctx(&err, bufs, 5);
    const char *words[] = {"apple", "applesauce", "apply", "", "banana", "band", "band"};
    int n = 7;
    /* DELTA_LENGTH_BYTE_ARRAY */
    bytes b = {.n = 0};
    int64_t lens[7];
    for (int i = 0; i < n; i++)
        lens[i] = (int64_t)strlen(words[i]);
    put_delta(&b, lens, n);
    for (int i = 0; i < n; i++) {
        memcpy(b.p + b.n, words[i], strlen(words[i]));
        b.n += (int64_t)strlen(words[i]);
    }
    int64_t got;
    EM_ASSERT_OK(em_pq_delta_length_decode(&c, b.p, b.n, 10, &bufs[0], &bufs[1], &got), &err);
    assert_int_equal(got, n);
    const em_pq_view *v = (const em_pq_view *)(void *)bufs[0].p;
    for (int i = 0; i < n; i++) {
        assert_int_equal(v[i].len, (int64_t)strlen(words[i]));
        assert_memory_equal(v[i].ptr, words[i], strlen(words[i]));
    }
    assert_int_equal(em_pq_delta_length_decode(&c, b.p, b.n - 1, 10, &bufs[0], &bufs[1], &got),
                     EM_ERR_CORRUPT);
    /* DELTA_BYTE_ARRAY: prefixes shared with the previous value. */
    int64_t pre[7], suf[7];
    bytes d = {.n = 0};
    for (int i = 0; i < n; i++) {
        int64_t p = 0;
        if (i)
            while (words[i][p] && words[i - 1][p] == words[i][p])
                p++;
        pre[i] = p;
        suf[i] = (int64_t)strlen(words[i]) - p;
    }
    put_delta(&d, pre, n);
    put_delta(&d, suf, n);
    for (int i = 0; i < n; i++) {
        memcpy(d.p + d.n, words[i] + pre[i], (size_t)suf[i]);
        d.n += suf[i];
    }
    EM_ASSERT_OK(
        em_pq_delta_bytes_decode(&c, d.p, d.n, 10, &bufs[0], &bufs[2], &bufs[3], &bufs[4], &got),
        &err);
    assert_int_equal(got, n);
    v = (const em_pq_view *)(void *)bufs[0].p;
    for (int i = 0; i < n; i++) {
        assert_int_equal(v[i].len, (int64_t)strlen(words[i]));
        assert_memory_equal(v[i].ptr, words[i], strlen(words[i]));
    }
    /* A prefix longer than the previous value. */
    bytes e = {.n = 0};
    int64_t bad_pre[2] = {0, 9}, bad_suf[2] = {1, 1};
    put_delta(&e, bad_pre, 2);
    put_delta(&e, bad_suf, 2);
    put(&e, 'a');
    put(&e, 'b');
    assert_int_equal(
        em_pq_delta_bytes_decode(&c, e.p, e.n, 10, &bufs[0], &bufs[2], &bufs[3], &bufs[4], &got),
        EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "prefix length 9"));
    for (int i = 0; i < 5; i++)
        em_pq_buf_free(&bufs[i]);
}

static void test_bss_int96_decimal(void **state) {
    (void)state;
    em_error err = {0};
    em_pq_buf bufs[1];
    em_pq_dctx c = ctx(&err, bufs, 1);
    uint8_t split[] = {1, 2, 3, 0x10, 0x20, 0x30, 0xa, 0xb, 0xc};
    int64_t n;
    EM_ASSERT_OK(em_pq_bss_decode(&c, split, 9, 3, &bufs[0], &n), &err);
    assert_int_equal(n, 3);
    uint8_t want[] = {1, 0x10, 0xa, 2, 0x20, 0xb, 3, 0x30, 0xc};
    assert_memory_equal(bufs[0].p, want, 9);
    assert_int_equal(em_pq_bss_decode(&c, split, 7, 4, &bufs[0], &n), EM_ERR_CORRUPT);
    em_pq_buf_free(&bufs[0]);

    uint8_t i96[12] = {0};
    uint32_t day = 2440588;
    memcpy(i96 + 8, &day, 4);
    assert_int_equal(em_pq_int96_micros(i96), 0);
    uint64_t nanos = 3600ull * 1000000000ull + 1999; /* 01:00:00.000001999 */
    memcpy(i96, &nanos, 8);
    day = 2440587;
    memcpy(i96 + 8, &day, 4);
    assert_int_equal(em_pq_int96_micros(i96), -86400000000LL + 3600000000LL + 1);

    __int128 d;
    uint8_t be[] = {0xff, 0xfe};
    assert_true(em_pq_be_to_i128(be, 2, &d));
    assert_true(d == -2);
    uint8_t big[17] = {0x00, 0x7f};
    memset(big + 2, 0xff, 15);
    assert_true(em_pq_be_to_i128(big, 17, &d));
    assert_true(d == (__int128)(((unsigned __int128)1 << 127) - 1));
    big[0] = 0x01;
    assert_false(em_pq_be_to_i128(big, 17, &d));
}

/* ------------------------------------------------------------ files */

typedef struct tcol {
    const char *name;
    int type;
    int type_length;
    int repetition;
    int converted; /* -1: none */
    int scale, precision;
    int logical; /* em_pq_logical_kind or 0 */
    int unit;    /* TIMESTAMP */
    bool utc;
} tcol;

typedef struct tpage {
    int type; /* EM_PQ_PAGE_* */
    int32_t num_values;
    int encoding;
    int def_encoding;
    int32_t def_len, num_nulls; /* v2 */
    const uint8_t *data;
    int64_t len;
    int32_t compressed_override; /* 0: len */
    int32_t uncompressed_len;    /* 0: len (set when data is compressed) */
    bool v2_compressed;
} tpage;

/* Codec recorded in the column metadata of the files write_file makes. */
static int g_codec = EM_PQ_UNCOMPRESSED;

static void tw_page(em_tw *tw, const tpage *p) {
    em_tw_struct_begin(tw);
    em_tw_field_i32(tw, 1, p->type);
    em_tw_field_i32(tw, 2, p->uncompressed_len ? p->uncompressed_len : (int32_t)p->len);
    em_tw_field_i32(tw, 3, p->compressed_override ? p->compressed_override : (int32_t)p->len);
    if (p->type == EM_PQ_PAGE_DATA) {
        em_tw_field_struct(tw, 5);
        em_tw_field_i32(tw, 1, p->num_values);
        em_tw_field_i32(tw, 2, p->encoding);
        em_tw_field_i32(tw, 3, p->def_encoding);
        em_tw_field_i32(tw, 4, EM_PQ_ENC_RLE);
        em_tw_struct_end(tw);
    } else if (p->type == EM_PQ_PAGE_DICTIONARY) {
        em_tw_field_struct(tw, 7);
        em_tw_field_i32(tw, 1, p->num_values);
        em_tw_field_i32(tw, 2, EM_PQ_ENC_PLAIN);
        em_tw_struct_end(tw);
    } else if (p->type == EM_PQ_PAGE_DATA_V2) {
        em_tw_field_struct(tw, 8);
        em_tw_field_i32(tw, 1, p->num_values);
        em_tw_field_i32(tw, 2, p->num_nulls);
        em_tw_field_i32(tw, 3, p->num_values);
        em_tw_field_i32(tw, 4, p->encoding);
        em_tw_field_i32(tw, 5, p->def_len);
        em_tw_field_i32(tw, 6, 0);
        em_tw_field_bool(tw, 7, p->v2_compressed);
        em_tw_struct_end(tw);
    }
    em_tw_struct_end(tw);
}

/* Writes a one-row-group file: column c gets pages[c][0..n_pages[c]). */
static void write_file(const char *path, const tcol *cols, int n_cols, const tpage *const *pages,
                       const int *n_pages, int64_t rows) {
    em_error err = {0};
    em_pq_wbuf f;
    em_pq_wbuf_init(&f, NULL);
    EM_ASSERT_OK(em_pq_wbuf_append(&f, "PAR1", 4, &err), &err);
    int64_t offs[16], sizes[16];
    for (int c = 0; c < n_cols; c++) {
        offs[c] = f.len;
        for (int p = 0; p < n_pages[c]; p++) {
            em_tw tw;
            em_tw_init(&tw, &f, &err);
            tw_page(&tw, &pages[c][p]);
            EM_ASSERT_OK(em_tw_finish(&tw), &err);
            EM_ASSERT_OK(em_pq_wbuf_append(&f, pages[c][p].data, pages[c][p].len, &err), &err);
        }
        sizes[c] = f.len - offs[c];
    }
    int64_t footer = f.len;
    em_tw tw;
    em_tw_init(&tw, &f, &err);
    em_tw_struct_begin(&tw);
    em_tw_field_i32(&tw, 1, 1);
    em_tw_field_list(&tw, 2, EM_TC_STRUCT, n_cols + 1);
    em_tw_struct_begin(&tw);
    em_tw_field_string(&tw, 4, "schema");
    em_tw_field_i32(&tw, 5, n_cols);
    em_tw_struct_end(&tw);
    for (int c = 0; c < n_cols; c++) {
        const tcol *t = &cols[c];
        em_tw_struct_begin(&tw);
        if (t->type >= 0)
            em_tw_field_i32(&tw, 1, t->type);
        if (t->type_length)
            em_tw_field_i32(&tw, 2, t->type_length);
        em_tw_field_i32(&tw, 3, t->repetition);
        em_tw_field_string(&tw, 4, t->name);
        if (t->type < 0)
            em_tw_field_i32(&tw, 5, 1);
        if (t->converted >= 0)
            em_tw_field_i32(&tw, 6, t->converted);
        if (t->precision) {
            em_tw_field_i32(&tw, 7, t->scale);
            em_tw_field_i32(&tw, 8, t->precision);
        }
        if (t->logical) {
            em_tw_field_struct(&tw, 10);
            em_tw_field_struct(&tw, (int16_t)t->logical);
            if (t->logical == EM_PQ_LT_TIMESTAMP) {
                em_tw_field_bool(&tw, 1, t->utc);
                em_tw_field_struct(&tw, 2);
                em_tw_field_struct(&tw, (int16_t)t->unit);
                em_tw_struct_end(&tw);
                em_tw_struct_end(&tw);
            }
            em_tw_struct_end(&tw);
            em_tw_struct_end(&tw);
        }
        em_tw_struct_end(&tw);
    }
    em_tw_field_i64(&tw, 3, rows);
    em_tw_field_list(&tw, 4, EM_TC_STRUCT, 1);
    em_tw_struct_begin(&tw);
    em_tw_field_list(&tw, 1, EM_TC_STRUCT, n_cols);
    for (int c = 0; c < n_cols; c++) {
        em_tw_struct_begin(&tw);
        em_tw_field_i64(&tw, 2, offs[c]);
        em_tw_field_struct(&tw, 3);
        em_tw_field_i32(&tw, 1, cols[c].type < 0 ? 1 : cols[c].type);
        em_tw_field_list(&tw, 2, EM_TC_I32, 1);
        em_tw_elem_i32(&tw, EM_PQ_ENC_PLAIN);
        em_tw_field_list(&tw, 3, EM_TC_BINARY, 1);
        em_tw_elem_binary(&tw, cols[c].name, (int64_t)strlen(cols[c].name));
        em_tw_field_i32(&tw, 4, g_codec);
        em_tw_field_i64(&tw, 5, rows);
        em_tw_field_i64(&tw, 6, sizes[c]);
        em_tw_field_i64(&tw, 7, sizes[c]);
        em_tw_field_i64(&tw, 9, offs[c]);
        em_tw_struct_end(&tw);
        em_tw_struct_end(&tw);
    }
    em_tw_field_i64(&tw, 2, 0);
    em_tw_field_i64(&tw, 3, rows);
    em_tw_struct_end(&tw);
    em_tw_struct_end(&tw);
    EM_ASSERT_OK(em_tw_finish(&tw), &err);
    uint8_t tail[8];
    uint32_t flen = (uint32_t)(f.len - footer);
    memcpy(tail, &flen, 4);
    memcpy(tail + 4, "PAR1", 4);
    EM_ASSERT_OK(em_pq_wbuf_append(&f, tail, 8, &err), &err);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(f.data, 1, (size_t)f.len, fp), (size_t)f.len);
    fclose(fp);
    em_pq_wbuf_reset(&f);
}

/* Reads every column of path as canonical text, one string per row joined by '|'
 * per column (NULL as "null"); returns the status of the read. */
static em_status read_text(const char *path, char out[][4096], int max_cols, em_error *err) {
    em_pq_file *f;
    EM_TRY(em_pq_file_open(path, &f, err));
    em_pq_reader *r;
    em_status st = em_pq_reader_open(f, NULL, &r, err);
    if (st != EM_OK) {
        em_pq_file_close(f);
        return st;
    }
    for (int c = 0; c < max_cols; c++)
        out[c][0] = '\0';
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_batch *b;
    while ((st = em_pq_reader_next(r, &b, err)) == EM_OK) {
        assert_true(b->n_rows > 0 && b->n_rows <= EM_BATCH_CAP);
        for (int c = 0; c < b->n_cols && c < max_cols; c++)
            for (int64_t i = 0; i < b->n_rows; i++) {
                bool is_null;
                em_strbuf_clear(&sb);
                EM_ASSERT_OK(em_value_text(&b->cols[c], i, &sb, &is_null, err), err);
                if (out[c][0])
                    strcat(out[c], "|");
                strcat(out[c], is_null ? "null" : em_strbuf_cstr(&sb));
            }
    }
    em_strbuf_reset(&sb);
    em_pq_reader_close(r);
    em_pq_file_close(f);
    return st == EM_DONE ? EM_OK : st;
}

static const char *tmpfile_path(const char *name) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", em_test_tmpdir("parquet_read"), name);
    return path;
}

#define T(name, type)                                                                              \
    { name, type, 0, EM_PQ_OPTIONAL, -1, 0, 0, 0, 0, false }

static void test_file_int96_unsigned_levels(void **state) {
    (void)state;
    const char *path = tmpfile_path("types.parquet");
    tcol cols[6] = {T("ts96", EM_PQ_T_INT96), T("u8", EM_PQ_T_INT32),  T("u16", EM_PQ_T_INT32),
                    T("u32", EM_PQ_T_INT32),  T("u64", EM_PQ_T_INT64), T("flag", EM_PQ_T_BOOLEAN)};
    cols[1].converted = EM_PQ_CT_UINT_8;
    cols[2].converted = EM_PQ_CT_UINT_16;
    cols[3].converted = EM_PQ_CT_UINT_32;
    cols[4].converted = EM_PQ_CT_UINT_64;
    cols[5].repetition = EM_PQ_REQUIRED;
    /* Rows: 4. INT96 with legacy BIT_PACKED levels (MSB first): valid, null, valid, valid. */
    bytes p0 = {.n = 0};
    put(&p0, 0xb0); /* 1011 0000 */
    uint8_t v96[12] = {0};
    uint32_t day = 2440588 + 1;
    uint64_t nanos = 1500; /* 1 microsecond, truncated */
    memcpy(v96, &nanos, 8);
    memcpy(v96 + 8, &day, 4);
    for (int i = 0; i < 3; i++) {
        memcpy(p0.p + p0.n, v96, 12);
        p0.n += 12;
    }
    tpage pg0 = {
        EM_PQ_PAGE_DATA, 4, EM_PQ_ENC_PLAIN, EM_PQ_ENC_BIT_PACKED, 0, 0, p0.p, p0.n, 0, 0, false};
    /* Unsigned: RLE levels "all valid" + PLAIN. */
    bytes pu[4];
    uint32_t u32v[4][4] = {
        {0, 255, 7, 128}, {0, 65535, 1, 40000}, {0, 4294967295u, 5, 2147483648u}};
    for (int k = 0; k < 3; k++) {
        pu[k].n = 0;
        put_le32(&pu[k], 2);
        put(&pu[k], 4 << 1);
        put(&pu[k], 1);
        for (int i = 0; i < 4; i++)
            put_le32(&pu[k], u32v[k][i]);
    }
    pu[3].n = 0;
    put_le32(&pu[3], 2);
    put(&pu[3], 4 << 1);
    put(&pu[3], 1);
    uint64_t u64v[4] = {0, UINT64_MAX, 1, 1ull << 63};
    for (int i = 0; i < 4; i++) {
        memcpy(pu[3].p + pu[3].n, &u64v[i], 8);
        pu[3].n += 8;
    }
    tpage pgu[4];
    for (int k = 0; k < 4; k++)
        pgu[k] = (tpage){EM_PQ_PAGE_DATA,
                         4,
                         EM_PQ_ENC_PLAIN,
                         EM_PQ_ENC_RLE,
                         0,
                         0,
                         pu[k].p,
                         pu[k].n,
                         0,
                         0,
                         false};
    /* Required booleans, RLE encoded (length prefix + hybrid width 1), in two pages of 2. */
    bytes pb1 = {.n = 0}, pb2 = {.n = 0};
    put_le32(&pb1, 2);
    put(&pb1, 3);
    put(&pb1, 0x01); /* bit-packed: 1,0 */
    put_le32(&pb2, 2);
    put(&pb2, 2 << 1);
    put(&pb2, 1); /* RLE: 1,1 */
    tpage pgb[2] = {
        {EM_PQ_PAGE_DATA, 2, EM_PQ_ENC_RLE, EM_PQ_ENC_RLE, 0, 0, pb1.p, pb1.n, 0, 0, false},
        {EM_PQ_PAGE_DATA, 2, EM_PQ_ENC_RLE, EM_PQ_ENC_RLE, 0, 0, pb2.p, pb2.n, 0, 0, false}};
    const tpage *pages[6] = {&pg0, &pgu[0], &pgu[1], &pgu[2], &pgu[3], pgb};
    int n_pages[6] = {1, 1, 1, 1, 1, 2};
    write_file(path, cols, 6, pages, n_pages, 4);

    em_error err = {0};
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    const em_schema *s = em_pq_file_schema(f);
    assert_int_equal(s->fields[0].type.id, EM_TYPE_TIMESTAMP);
    assert_int_equal(s->fields[1].type.id, EM_TYPE_SHORT);
    assert_int_equal(s->fields[2].type.id, EM_TYPE_INT);
    assert_int_equal(s->fields[3].type.id, EM_TYPE_LONG);
    assert_true(em_type_equal(s->fields[4].type, em_type_decimal(20, 0)));
    assert_false(s->fields[5].nullable);
    assert_true(s->fields[4].nullable);
    em_pq_file_close(f);

    static char text[6][4096];
    EM_ASSERT_OK(read_text(path, text, 6, &err), &err);
    assert_string_equal(text[0], "1970-01-02 00:00:00.000001|null|1970-01-02 00:00:00.000001|"
                                 "1970-01-02 00:00:00.000001");
    assert_string_equal(text[1], "0|255|7|128");
    assert_string_equal(text[2], "0|65535|1|40000");
    assert_string_equal(text[3], "0|4294967295|5|2147483648");
    assert_string_equal(text[4], "0|18446744073709551615|1|9223372036854775808");
    assert_string_equal(text[5], "true|false|true|true");
}

static void test_file_encodings_v2(void **state) {
    (void)state;
    const char *path = tmpfile_path("enc.parquet");
    tcol cols[5] = {T("s", EM_PQ_T_BYTE_ARRAY), T("i", EM_PQ_T_INT32),
                    T("fl", EM_PQ_T_FIXED_LEN_BYTE_ARRAY), T("dec", EM_PQ_T_BYTE_ARRAY),
                    T("ts", EM_PQ_T_INT64)};
    cols[0].converted = EM_PQ_CT_UTF8;
    cols[2].type_length = 3;
    cols[3].converted = EM_PQ_CT_DECIMAL;
    cols[3].precision = 30;
    cols[3].scale = 2;
    cols[4].logical = EM_PQ_LT_TIMESTAMP;
    cols[4].unit = EM_PQ_NANOS;
    cols[4].utc = false;
    /* 5 rows, row 2 null everywhere; data page v2: levels hybrid (no length prefix). */
    uint32_t lev[5] = {1, 1, 0, 1, 1};
    bytes levb = {.n = 0};
    put_hybrid(&levb, lev, 5, 1);
    /* s: DELTA_BYTE_ARRAY of 4 values */
    const char *w[4] = {"prefix-a", "prefix-ab", "", "zzz"};
    int64_t pre[4] = {0, 8, 0, 0}, suf[4] = {8, 1, 0, 3};
    bytes s = {.n = 0};
    memcpy(s.p, levb.p, (size_t)levb.n);
    s.n = levb.n;
    put_delta(&s, pre, 4);
    put_delta(&s, suf, 4);
    const char *sufs = "prefix-abzzz";
    memcpy(s.p + s.n, sufs, 12);
    s.n += 12;
    (void)w;
    /* i: BYTE_STREAM_SPLIT int32 of 4 values */
    int32_t iv[4] = {1, -2, 0x01020304, INT32_MIN};
    bytes bi = {.n = 0};
    memcpy(bi.p, levb.p, (size_t)levb.n);
    bi.n = levb.n;
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 4; k++)
            put(&bi, (uint8_t)((uint32_t)iv[k] >> (8 * b)));
    /* fl: BYTE_STREAM_SPLIT FLBA(3) */
    bytes bf = {.n = 0};
    memcpy(bf.p, levb.p, (size_t)levb.n);
    bf.n = levb.n;
    const uint8_t fv[4][3] = {{0xde, 0xad, 0x01}, {0, 0, 0}, {0xff, 0xfe, 0xfd}, {1, 2, 3}};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 4; k++)
            put(&bf, fv[k][b]);
    /* dec: BYTE_ARRAY decimal, PLAIN, variable lengths */
    bytes bd = {.n = 0};
    memcpy(bd.p, levb.p, (size_t)levb.n);
    bd.n = levb.n;
    const uint8_t d0[] = {0x30, 0x39}, d1[] = {0xff},
                  d2[] = {0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const uint8_t *dv[4] = {d0, d1, d2, NULL};
    int dl[4] = {2, 1, 12, 0};
    for (int k = 0; k < 4; k++) {
        put_le32(&bd, (uint32_t)dl[k]);
        if (dl[k])
            memcpy(bd.p + bd.n, dv[k], (size_t)dl[k]);
        bd.n += dl[k];
    }
    /* ts: nanos, DELTA_BINARY_PACKED, floor to micros (negative included) */
    int64_t tv[4] = {1999, -1, 86400000000000LL + 1000, INT64_C(-86400000000001)};
    bytes bt = {.n = 0};
    memcpy(bt.p, levb.p, (size_t)levb.n);
    bt.n = levb.n;
    put_delta(&bt, tv, 4);

    tpage ps = {EM_PQ_PAGE_DATA_V2,
                5,
                EM_PQ_ENC_DELTA_BYTE_ARRAY,
                0,
                (int32_t)levb.n,
                1,
                s.p,
                s.n,
                0,
                0,
                false};
    tpage pi = ps, pf = ps, pd = ps, pt = ps;
    pi.encoding = EM_PQ_ENC_BYTE_STREAM_SPLIT;
    pi.data = bi.p;
    pi.len = bi.n;
    pf.encoding = EM_PQ_ENC_BYTE_STREAM_SPLIT;
    pf.data = bf.p;
    pf.len = bf.n;
    pd.encoding = EM_PQ_ENC_PLAIN;
    pd.data = bd.p;
    pd.len = bd.n;
    pt.encoding = EM_PQ_ENC_DELTA_BINARY_PACKED;
    pt.data = bt.p;
    pt.len = bt.n;
    const tpage *pages[5] = {&ps, &pi, &pf, &pd, &pt};
    int n_pages[5] = {1, 1, 1, 1, 1};
    write_file(path, cols, 5, pages, n_pages, 5);
    static char text[5][4096];
    em_error err = {0};
    EM_ASSERT_OK(read_text(path, text, 5, &err), &err);
    assert_string_equal(text[0], "prefix-a|prefix-ab|null||zzz");
    assert_string_equal(text[1], "1|-2|null|16909060|-2147483648");
    assert_string_equal(text[2], "dead01|000000|null|fffefd|010203");
    assert_string_equal(text[3], "123.45|-0.01|null|3094850098213450687247810.56|0.00");
    assert_string_equal(text[4], "1970-01-01 00:00:00.000001|1969-12-31 23:59:59.999999|null|"
                                 "1970-01-02 00:00:00.000001|1969-12-30 23:59:59.999999");
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    assert_int_equal(em_pq_file_schema(f)->fields[4].type.id, EM_TYPE_TIMESTAMP_NTZ);
    assert_true(em_type_equal(em_pq_file_schema(f)->fields[3].type, em_type_decimal(30, 2)));
    em_pq_file_close(f);
}

/* Compressed pages: a v1 dictionary and data page, and v2 pages whose levels
 * stay uncompressed before the compressed values. */
static void test_file_compressed_pages(void **state) {
    (void)state;
    const char *path = tmpfile_path("zstd.parquet");
    em_error err = {0};
    static uint8_t z[4][4096];
    int64_t zl[4];
    tcol cols[2] = {T("k", EM_PQ_T_INT64), T("v", EM_PQ_T_INT64)};
    /* k: dictionary {100, -5}, one v1 page of 6 rows (row 4 null). */
    bytes dict = {.n = 0};
    int64_t dv[2] = {100, -5};
    memcpy(dict.p, dv, 16);
    dict.n = 16;
    bytes d1 = {.n = 0};
    uint32_t lev[6] = {1, 1, 1, 1, 0, 1}, idx[5] = {0, 1, 1, 0, 1};
    bytes lv = {.n = 0};
    put_hybrid(&lv, lev, 6, 1);
    put_le32(&d1, (uint32_t)lv.n);
    memcpy(d1.p + d1.n, lv.p, (size_t)lv.n);
    d1.n += lv.n;
    put(&d1, 1);
    put_hybrid(&d1, idx, 5, 1);
    EM_ASSERT_OK(em_pq_compress(EM_PQ_ZSTD, 0, dict.p, dict.n, z[0], 4096, &zl[0], &err), &err);
    EM_ASSERT_OK(em_pq_compress(EM_PQ_ZSTD, 0, d1.p, d1.n, z[1], 4096, &zl[1], &err), &err);
    tpage pk[2] = {{EM_PQ_PAGE_DICTIONARY, 2, EM_PQ_ENC_PLAIN, 0, 0, 0, z[0], zl[0], 0,
                    (int32_t)dict.n, false},
                   {EM_PQ_PAGE_DATA, 6, EM_PQ_ENC_RLE_DICTIONARY, EM_PQ_ENC_RLE, 0, 0, z[1], zl[1],
                    0, (int32_t)d1.n, false}};
    /* v: two v2 pages of 3 rows: PLAIN then DELTA_BINARY_PACKED, values compressed. */
    uint32_t lev2[3] = {1, 0, 1};
    bytes l2 = {.n = 0};
    put_hybrid(&l2, lev2, 3, 1);
    int64_t a[2] = {INT64_MIN, 7}, bvals[3] = {-1, 0, 1};
    bytes pa = {.n = 0}, pb = {.n = 0};
    memcpy(pa.p, l2.p, (size_t)l2.n);
    pa.n = l2.n;
    EM_ASSERT_OK(
        em_pq_compress(EM_PQ_ZSTD, 0, (const uint8_t *)a, 16, pa.p + pa.n, 4000, &zl[2], &err),
        &err);
    pa.n += zl[2];
    bytes delta = {.n = 0}, l3 = {.n = 0};
    put_delta(&delta, bvals, 3);
    uint32_t all3[3] = {1, 1, 1};
    put_hybrid(&l3, all3, 3, 1);
    memcpy(pb.p, l3.p, (size_t)l3.n);
    EM_ASSERT_OK(em_pq_compress(EM_PQ_ZSTD, 0, delta.p, delta.n, pb.p + l3.n, 4000, &zl[3], &err),
                 &err);
    pb.n = l3.n + zl[3];
    tpage pv[2] = {{EM_PQ_PAGE_DATA_V2, 3, EM_PQ_ENC_PLAIN, 0, (int32_t)l2.n, 1, pa.p, pa.n, 0,
                    (int32_t)(l2.n + 16), true},
                   {EM_PQ_PAGE_DATA_V2, 3, EM_PQ_ENC_DELTA_BINARY_PACKED, 0, (int32_t)l3.n, 0, pb.p,
                    pb.n, 0, (int32_t)(l3.n + delta.n), true}};
    const tpage *pages[2] = {pk, pv};
    int n_pages[2] = {2, 2};
    g_codec = EM_PQ_ZSTD;
    write_file(path, cols, 2, pages, n_pages, 6);
    g_codec = EM_PQ_UNCOMPRESSED;
    static char text[2][4096];
    EM_ASSERT_OK(read_text(path, text, 2, &err), &err);
    assert_string_equal(text[0], "100|-5|-5|100|null|-5");
    assert_string_equal(text[1], "-9223372036854775808|null|7|-1|0|1");
}

/* ------------------------------------------------------------ errors */

static void expect_error(const char *path, em_status want, const char *needle) {
    static char text[4][4096];
    em_error err = {0};
    em_status st = read_text(path, text, 4, &err);
    if (st != want)
        fail_msg("%s: got %s (%s), wanted %s", path, em_status_name(st), err.msg,
                 em_status_name(want));
    if (!strstr(err.msg, path))
        fail_msg("message does not name the file: %s", err.msg);
    if (needle && !strstr(err.msg, needle))
        fail_msg("message lacks '%s': %s", needle, err.msg);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (n)
        assert_int_equal(fwrite(p, 1, n, fp), n);
    fclose(fp);
}

static void test_file_level_errors(void **state) {
    (void)state;
    em_error err = {0};
    em_pq_file *f;
    const char *missing = tmpfile_path("missing.parquet");
    assert_int_equal(em_pq_file_open(missing, &f, &err), EM_ERR_IO);
    assert_non_null(strstr(err.msg, missing));
    assert_non_null(strstr(err.msg, "No such file"));

    char path[1024];
    snprintf(path, sizeof path, "%s", tmpfile_path("small.parquet"));
    write_bytes(path, "PAR1PAR1", 8);
    expect_error(path, EM_ERR_CORRUPT, "byte 0: file of 8 bytes is too small");
    write_bytes(path, "", 0);
    expect_error(path, EM_ERR_CORRUPT, "byte 0");
    write_bytes(path, "NOPE\0\0\0\0\0\0\0\0PAR1", 16);
    expect_error(path, EM_ERR_CORRUPT, "byte 0: not a Parquet file");
    write_bytes(path, "PAR1\0\0\0\0\0\0\0\0PAR2", 16);
    expect_error(path, EM_ERR_CORRUPT, "byte 12: no PAR1 magic at the end");
    write_bytes(path, "PAR1\0\0\0\0\xff\0\0\0PAR1", 16);
    expect_error(path, EM_ERR_CORRUPT, "byte 8: footer length 255 exceeds");

    /* A valid file, then its footer truncated (length adjusted): thrift runs out. */
    const char *good = tmpfile_path("good.parquet");
    tcol cols[1] = {T("x", EM_PQ_T_INT32)};
    bytes p = {.n = 0};
    put_le32(&p, 2);
    put(&p, 3 << 1);
    put(&p, 1);
    for (int i = 0; i < 3; i++)
        put_le32(&p, (uint32_t)i);
    tpage pg = {EM_PQ_PAGE_DATA, 3, EM_PQ_ENC_PLAIN, EM_PQ_ENC_RLE, 0, 0, p.p, p.n, 0, 0, false};
    const tpage *pages[1] = {&pg};
    int np[1] = {1};
    write_file(good, cols, 1, pages, np, 3);
    static char text[4][4096];
    EM_ASSERT_OK(read_text(good, text, 1, &err), &err);
    assert_string_equal(text[0], "0|1|2");
    FILE *fp = fopen(good, "rb");
    static uint8_t buf[8192];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    uint32_t flen;
    memcpy(&flen, buf + n - 8, 4);
    for (uint32_t cut = 1; cut < flen; cut += 3) {
        static uint8_t t[8192];
        size_t m = n - 8 - cut;
        memcpy(t, buf, m);
        uint32_t nl = flen - cut;
        memcpy(t + m, &nl, 4);
        memcpy(t + m + 4, "PAR1", 4);
        write_bytes(path, t, m + 8);
        em_status st = em_pq_file_open(path, &f, &err);
        if (st == EM_OK) {
            em_pq_file_close(f); /* cutting only trailing optional fields may still parse */
            continue;
        }
        assert_int_equal(st, EM_ERR_CORRUPT);
        assert_non_null(strstr(err.msg, "byte "));
    }
    /* Truncating the file anywhere: never a crash, always a clean error. */
    for (size_t cut = 0; cut < n; cut++) {
        write_bytes(path, buf, cut);
        assert_int_not_equal(read_text(path, text, 1, &err), EM_OK);
    }
}

static void one_column_file(const char *path, tcol col, const tpage *pages, int n_pages,
                            int64_t rows) {
    const tpage *pp[1] = {pages};
    int np[1] = {n_pages};
    write_file(path, &col, 1, pp, np, rows);
}

static void test_page_errors(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s", tmpfile_path("bad.parquet"));
    tcol col = T("x", EM_PQ_T_INT32);
    bytes lv = {.n = 0};
    put_le32(&lv, 2);
    put(&lv, 4 << 1);
    put(&lv, 1);

    /* Dictionary index out of range. */
    bytes dict = {.n = 0};
    put_le32(&dict, 10);
    put_le32(&dict, 20);
    bytes data = lv;
    put(&data, 2); /* bit width */
    uint32_t idx[4] = {0, 1, 3, 1};
    put_hybrid(&data, idx, 4, 2);
    tpage pd[2] = {
        {EM_PQ_PAGE_DICTIONARY, 2, EM_PQ_ENC_PLAIN, 0, 0, 0, dict.p, dict.n, 0, 0, false},
        {EM_PQ_PAGE_DATA, 4, EM_PQ_ENC_RLE_DICTIONARY, EM_PQ_ENC_RLE, 0, 0, data.p, data.n, 0, 0,
         false}};
    one_column_file(path, col, pd, 2, 4);
    expect_error(path, EM_ERR_CORRUPT, "dictionary index 3 out of range (the dictionary has 2");
    /* The same indices within range read fine. */
    idx[2] = 0;
    data = lv;
    put(&data, 2);
    put_hybrid(&data, idx, 4, 2);
    pd[1].data = data.p;
    pd[1].len = data.n;
    one_column_file(path, col, pd, 2, 4);
    static char text[4][4096];
    em_error err = {0};
    EM_ASSERT_OK(read_text(path, text, 1, &err), &err);
    assert_string_equal(text[0], "10|20|10|20");
    /* Strings from a dictionary, with a null, then an index beyond it. */
    {
        tcol scol = T("s", EM_PQ_T_BYTE_ARRAY);
        scol.converted = EM_PQ_CT_UTF8;
        bytes sd = {.n = 0};
        put_le32(&sd, 1);
        put(&sd, 'a');
        put_le32(&sd, 2);
        put(&sd, 'b');
        put(&sd, 'c');
        uint32_t slev[4] = {1, 0, 1, 1}, sidx[3] = {0, 1, 1};
        bytes sl = {.n = 0}, sp = {.n = 0};
        put_hybrid(&sl, slev, 4, 1);
        put_le32(&sp, (uint32_t)sl.n);
        memcpy(sp.p + sp.n, sl.p, (size_t)sl.n);
        sp.n += sl.n;
        int64_t idx_at = sp.n;
        put(&sp, 2);
        put_hybrid(&sp, sidx, 3, 2);
        tpage spg[2] = {
            {EM_PQ_PAGE_DICTIONARY, 2, EM_PQ_ENC_PLAIN, 0, 0, 0, sd.p, sd.n, 0, 0, false},
            {EM_PQ_PAGE_DATA, 4, EM_PQ_ENC_PLAIN_DICTIONARY, EM_PQ_ENC_RLE, 0, 0, sp.p, sp.n, 0, 0,
             false}};
        one_column_file(path, scol, spg, 2, 4);
        static char stext[4][4096];
        em_error serr = {0};
        EM_ASSERT_OK(read_text(path, stext, 1, &serr), &serr);
        assert_string_equal(stext[0], "a|null|bc|bc");
        sidx[2] = 2;
        sp.n = idx_at;
        put(&sp, 2);
        put_hybrid(&sp, sidx, 3, 2);
        one_column_file(path, scol, spg, 2, 4);
        expect_error(path, EM_ERR_CORRUPT, "dictionary index 2 out of range (the dictionary has 2");
    }
    /* Dictionary-encoded page without a dictionary. */
    one_column_file(path, col, pd + 1, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "without a dictionary page");
    /* Bit width above 32. */
    data = lv;
    put(&data, 40);
    pd[1].data = data.p;
    pd[1].len = data.n;
    one_column_file(path, col, pd, 2, 4);
    expect_error(path, EM_ERR_CORRUPT, "bit width 40");

    /* PLAIN values fewer than the levels say. */
    bytes plain = lv;
    put_le32(&plain, 1);
    put_le32(&plain, 2);
    tpage pp = {
        EM_PQ_PAGE_DATA, 4, EM_PQ_ENC_PLAIN, EM_PQ_ENC_RLE, 0, 0, plain.p, plain.n, 0, 0, false};
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "PLAIN values end before");
    /* Fewer page values than rows: the chunk runs out. */
    put_le32(&plain, 3);
    put_le32(&plain, 4);
    pp.data = plain.p;
    pp.len = plain.n;
    one_column_file(path, col, &pp, 1, 6);
    expect_error(path, EM_ERR_CORRUPT, "column chunk ends with 2 rows");
    /* Definition levels that end early. */
    bytes shortlev = {.n = 0};
    put_le32(&shortlev, 2);
    put(&shortlev, 2 << 1);
    put(&shortlev, 1);
    for (int i = 0; i < 4; i++)
        put_le32(&shortlev, (uint32_t)i);
    pp.data = shortlev.p;
    pp.len = shortlev.n;
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "definition levels end after 2");
    /* Levels length prefix beyond the page. */
    bytes biglev = {.n = 0};
    put_le32(&biglev, 1000);
    pp.data = biglev.p;
    pp.len = biglev.n;
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "definition levels run past the page");
    /* Unknown encoding. */
    pp = (tpage){EM_PQ_PAGE_DATA, 4, 77, EM_PQ_ENC_RLE, 0, 0, plain.p, plain.n, 0, 0, false};
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_UNSUPPORTED, "encoding");
    /* DELTA_LENGTH_BYTE_ARRAY on an INT32 column. */
    pp.encoding = EM_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY;
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_UNSUPPORTED, "DELTA_LENGTH_BYTE_ARRAY");
    /* Compressed size beyond the chunk: the page claims more bytes than follow. */
    pp = (tpage){EM_PQ_PAGE_DATA,
                 4,
                 EM_PQ_ENC_PLAIN,
                 EM_PQ_ENC_RLE,
                 0,
                 0,
                 plain.p,
                 plain.n,
                 100000,
                 0,
                 false};
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "runs past the end of its column chunk");
    /* Uncompressed page whose sizes disagree. */
    pp.compressed_override = (int32_t)plain.n - 4;
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "byte ");
    /* Negative page size. */
    pp.compressed_override = -5;
    one_column_file(path, col, &pp, 1, 4);
    expect_error(path, EM_ERR_CORRUPT, "negative page size");
}

static void test_schema_errors(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s", tmpfile_path("schema.parquet"));
    bytes p = {.n = 0};
    put_le32(&p, 1);
    tpage pg = {EM_PQ_PAGE_DATA, 1, EM_PQ_ENC_PLAIN, EM_PQ_ENC_RLE, 0, 0, p.p, p.n, 0, 0, false};
    tcol col = T("weird", 9); /* no such physical type */
    one_column_file(path, col, &pg, 1, 1);
    expect_error(path, EM_ERR_UNSUPPORTED, "column weird");
    col = (tcol)T("rep", EM_PQ_T_INT32);
    col.repetition = EM_PQ_REPEATED;
    one_column_file(path, col, &pg, 1, 1);
    expect_error(path, EM_ERR_UNSUPPORTED, "column rep: repeated");
    col = (tcol)T("grp", -1); /* a group */
    one_column_file(path, col, &pg, 1, 1);
    expect_error(path, EM_ERR_UNSUPPORTED, "column grp: nested");
    col = (tcol)T("t", EM_PQ_T_INT32);
    col.converted = EM_PQ_CT_TIME_MILLIS;
    one_column_file(path, col, &pg, 1, 1);
    expect_error(path, EM_ERR_UNSUPPORTED, "column t");
    col = (tcol)T("d", EM_PQ_T_INT32);
    col.converted = EM_PQ_CT_DECIMAL;
    col.precision = 12; /* too wide for INT32 */
    col.scale = 2;
    one_column_file(path, col, &pg, 1, 1);
    expect_error(path, EM_ERR_UNSUPPORTED, "column d");
}

/* Ember's writer, Ember's reader: required and optional columns, many pages
 * and row groups, read with projections, row-group selection and batch sizes. */
static void test_round_trip_writer(void **state) {
    (void)state;
    const char *path = tmpfile_path("rt.parquet");
    em_error err = {0};
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, 4, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "id", em_type_make(EM_TYPE_LONG), false, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 1, "name", em_type_make(EM_TYPE_STRING), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 2, "amt", em_type_decimal(15, 2), true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 3, "ok", em_type_make(EM_TYPE_BOOLEAN), false, &err), &err);
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.row_group_rows = 3000;
    o.page_bytes = 4096;
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &s, &o, &w, &err), &err);
    const int64_t N = 10000;
    for (int64_t base = 0; base < N; base += 1000) {
        em_batch *b;
        EM_ASSERT_OK(em_batch_create(&s, 1000, NULL, &b, &err), &err);
        for (int64_t i = base; i < base + 1000; i++) {
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &i, &err), &err);
            char name[32];
            snprintf(name, sizeof name, "n%lld", (long long)(i % 37));
            if (i % 5 == 0)
                EM_ASSERT_OK(em_column_append_null(&b->cols[1], &err), &err);
            else
                EM_ASSERT_OK(em_column_append_bytes(&b->cols[1], name, (int32_t)strlen(name), &err),
                             &err);
            em_i128 a = (em_i128)(i * 7 - 30000);
            if (i % 3 == 0)
                EM_ASSERT_OK(em_column_append_null(&b->cols[2], &err), &err);
            else
                EM_ASSERT_OK(em_column_append_fixed(&b->cols[2], &a, &err), &err);
            bool ok = i % 2 == 0;
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[3], &ok, &err), &err);
        }
        b->n_rows = 1000;
        EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
        em_batch_destroy(b);
    }
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_schema_reset(&s);

    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    assert_int_equal(em_pq_file_num_rows(f), N);
    assert_true(em_pq_file_num_row_groups(f) >= 3);
    assert_false(em_pq_file_schema(f)->fields[0].nullable);
    assert_true(em_pq_file_schema(f)->fields[1].nullable);
    int proj[3] = {2, 0, 3};
    int64_t sizes[] = {0, 1, 7, 4096};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        em_pq_read_options ro = {.columns = proj, .n_columns = 3, .batch_rows = sizes[k]};
        em_pq_reader *r;
        EM_ASSERT_OK(em_pq_reader_open(f, &ro, &r, &err), &err);
        assert_string_equal(em_pq_reader_schema(r)->fields[0].name, "amt");
        int64_t next_id = 0;
        em_batch *b;
        em_status st;
        while ((st = em_pq_reader_next(r, &b, &err)) == EM_OK) {
            assert_true(b->n_rows > 0 && b->n_rows <= (sizes[k] ? sizes[k] : EM_BATCH_CAP));
            const int64_t *ids = (const int64_t *)(void *)b->cols[1].values->data;
            for (int64_t i = 0; i < b->n_rows; i++, next_id++) {
                assert_int_equal(ids[i], next_id);
                bool valid = em_column_is_valid(&b->cols[0], i);
                assert_int_equal(valid, next_id % 3 != 0);
                if (valid) {
                    em_i128 a;
                    memcpy(&a, b->cols[0].values->data + 16 * i, 16);
                    assert_true(a == (em_i128)(next_id * 7 - 30000));
                }
                assert_int_equal(em_bit_get(b->cols[2].values->data, i), next_id % 2 == 0);
            }
        }
        assert_int_equal(st, EM_DONE);
        assert_int_equal(next_id, N);
        /* After the end, still done. */
        assert_int_equal(em_pq_reader_next(r, &b, &err), EM_DONE);
        em_pq_reader_close(r);
    }
    /* Statistics of the required id column per row group. */
    int64_t first = 0;
    for (int g = 0; g < em_pq_file_num_row_groups(f); g++) {
        em_pq_stats st;
        EM_ASSERT_OK(em_pq_file_stats(f, g, 0, &st, &err), &err);
        assert_true(st.has_min_max);
        assert_int_equal(st.min.i64, first);
        first += em_pq_file_row_group_rows(f, g);
        assert_int_equal(st.max.i64, first - 1);
        EM_ASSERT_OK(em_pq_file_stats(f, g, 1, &st, &err), &err);
        assert_true(st.has_null_count);
    }
    /* A consumer keeping a column past next() (by sharing its buffers) must
     * not see it overwritten when the reader refills its batch. */
    {
        em_pq_read_options ro = {.batch_rows = 100};
        em_pq_reader *r;
        EM_ASSERT_OK(em_pq_reader_open(f, &ro, &r, &err), &err);
        em_batch *b;
        EM_ASSERT_OK(em_pq_reader_next(r, &b, &err), &err);
        em_column kept[2];
        em_column_share(&kept[0], &b->cols[0]);
        em_column_share(&kept[1], &b->cols[1]);
        for (int k = 0; k < 5; k++)
            EM_ASSERT_OK(em_pq_reader_next(r, &b, &err), &err);
        assert_int_equal(((const int64_t *)(const void *)b->cols[0].values->data)[0], 500);
        for (int64_t i = 0; i < 100; i++) {
            assert_int_equal(((const int64_t *)(const void *)kept[0].values->data)[i], i);
            const int32_t *off = em_column_offsets(&kept[1]);
            char name[32];
            snprintf(name, sizeof name, "n%lld", (long long)(i % 37));
            if (i % 5 == 0) {
                assert_false(em_column_is_valid(&kept[1], i));
            } else {
                assert_int_equal(off[i + 1] - off[i], (int32_t)strlen(name));
                assert_memory_equal(em_column_chars(&kept[1]) + off[i], name, strlen(name));
            }
        }
        em_column_reset(&kept[0]);
        em_column_reset(&kept[1]);
        em_pq_reader_close(r);
    }
    /* Row ranges: inside one row group, across groups, starting past many
     * pages, at a group's first row, to the end; with a group deselected. */
    {
        const int64_t ranges[][2] = {{0, 1},       {1, 2999},    {2500, 3500}, {2999, 3001},
                                     {3000, 6000}, {4321, 9999}, {7777, N},    {0, N}};
        const int64_t batch[] = {0, 7};
        bool sel[64];
        int n_rg = em_pq_file_num_row_groups(f);
        assert_true(n_rg < 64);
        for (int use_sel = 0; use_sel < 2; use_sel++)
            for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++)
                for (size_t bs = 0; bs < 2; bs++) {
                    for (int g = 0; g < n_rg; g++)
                        sel[g] = !use_sel || g != 1; /* group 1: rows 3000..5999 */
                    int proj2[3] = {1, 0, 2};
                    em_pq_read_options ro = {.columns = proj2,
                                             .n_columns = 3,
                                             .row_groups = sel,
                                             .batch_rows = batch[bs],
                                             .row_start = ranges[k][0],
                                             .row_end = ranges[k][1]};
                    em_pq_reader *r;
                    EM_ASSERT_OK(em_pq_reader_open(f, &ro, &r, &err), &err);
                    int64_t want = ranges[k][0], seen = 0;
                    em_batch *b;
                    em_status st;
                    while ((st = em_pq_reader_next(r, &b, &err)) == EM_OK) {
                        const int64_t *ids = (const int64_t *)(void *)b->cols[1].values->data;
                        const int32_t *off = em_column_offsets(&b->cols[0]);
                        for (int64_t i = 0; i < b->n_rows; i++, want++, seen++) {
                            if (use_sel && want >= 3000 && want < 6000)
                                want = 6000;
                            assert_int_equal(ids[i], want);
                            assert_int_equal(em_column_is_valid(&b->cols[2], i), want % 3 != 0);
                            char name[32];
                            snprintf(name, sizeof name, "n%lld", (long long)(want % 37));
                            if (want % 5 == 0) {
                                assert_false(em_column_is_valid(&b->cols[0], i));
                            } else {
                                assert_int_equal(off[i + 1] - off[i], (int32_t)strlen(name));
                                assert_memory_equal(em_column_chars(&b->cols[0]) + off[i], name,
                                                    strlen(name));
                            }
                        }
                    }
                    assert_int_equal(st, EM_DONE);
                    int64_t lo = ranges[k][0], hi = ranges[k][1];
                    int64_t cut = use_sel ? (hi < 6000 ? hi : 6000) - (lo > 3000 ? lo : 3000) : 0;
                    assert_int_equal(seen, hi - lo - (cut > 0 ? cut : 0));
                    em_pq_reader_close(r);
                }
        em_pq_read_options ro = {.row_start = 5, .row_end = 5};
        em_pq_reader *r;
        assert_int_equal(em_pq_reader_open(f, &ro, &r, &err), EM_ERR_INVALID);
        assert_non_null(strstr(err.msg, "row range"));
    }
    em_pq_stats st;
    assert_int_equal(em_pq_file_stats(f, 99, 0, &st, &err), EM_ERR_INVALID);
    int bad = 9;
    em_pq_read_options ro = {.columns = &bad, .n_columns = 1};
    em_pq_reader *r;
    assert_int_equal(em_pq_reader_open(f, &ro, &r, &err), EM_ERR_INVALID);
    /* No column at all: batches still count rows. */
    ro.n_columns = 0;
    EM_ASSERT_OK(em_pq_reader_open(f, &ro, &r, &err), &err);
    int64_t rows = 0;
    em_batch *b;
    while (em_pq_reader_next(r, &b, &err) == EM_OK)
        rows += b->n_rows;
    assert_int_equal(rows, N);
    em_pq_reader_close(r);
    em_pq_file_close(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thrift_scalars_and_skip),
        cmocka_unit_test(test_thrift_hostile),
        cmocka_unit_test(test_rle_every_width),
        cmocka_unit_test(test_rle_truncated_and_bad),
        cmocka_unit_test(test_unpack64_widths),
        cmocka_unit_test(test_delta_binary_packed),
        cmocka_unit_test(test_delta_byte_arrays),
        cmocka_unit_test(test_bss_int96_decimal),
        cmocka_unit_test(test_file_int96_unsigned_levels),
        cmocka_unit_test(test_file_encodings_v2),
        cmocka_unit_test(test_file_compressed_pages),
        cmocka_unit_test(test_file_level_errors),
        cmocka_unit_test(test_page_errors),
        cmocka_unit_test(test_schema_errors),
        cmocka_unit_test(test_round_trip_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
