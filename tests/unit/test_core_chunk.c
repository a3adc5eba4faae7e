/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shuffle blocks (include/ember/chunk.h): a selection of a batch's rows of
 * every type, nulls included, written as a block and read back equal, value
 * for value; and damaged blocks (truncated, a bad magic, a bad type, string
 * offsets that run backwards, a length that lies) refused with
 * EM_ERR_CORRUPT, never read.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/chunk.h"
#include "ember/value_text.h"

/* A batch with one column per type, 10 rows, every third row null. */
static em_batch *sample(void) {
    const em_type types[] = {
        em_type_make(EM_TYPE_BOOLEAN), em_type_make(EM_TYPE_INT),
        em_type_make(EM_TYPE_LONG),    em_type_make(EM_TYPE_DOUBLE),
        em_type_decimal(20, 3),        em_type_make(EM_TYPE_STRING),
        em_type_make(EM_TYPE_DATE),    em_type_make(EM_TYPE_TIMESTAMP),
    };
    int nt = (int)(sizeof types / sizeof types[0]);
    em_error err = {0};
    em_schema s = {0};
    EM_ASSERT_OK(em_schema_init(&s, nt, &err), &err);
    for (int c = 0; c < nt; c++) {
        char name[8];
        snprintf(name, sizeof name, "c%d", c);
        EM_ASSERT_OK(em_schema_set(&s, c, name, types[c], true, &err), &err);
    }
    em_batch *b = NULL;
    EM_ASSERT_OK(em_batch_create(&s, 10, NULL, &b, &err), &err);
    em_schema_reset(&s);
    for (int64_t r = 0; r < 10; r++) {
        for (int c = 0; c < nt; c++) {
            em_column *col = &b->cols[c];
            if (r % 3 == 2) {
                EM_ASSERT_OK(em_column_append_null(col, &err), &err);
                continue;
            }
            uint8_t v[16] = {0};
            int64_t x = r * 1000 + c;
            switch (types[c].id) {
            case EM_TYPE_BOOLEAN:
                v[0] = r & 1;
                break;
            case EM_TYPE_INT:
            case EM_TYPE_DATE: {
                int32_t i = (int32_t)x;
                memcpy(v, &i, 4);
                break;
            }
            case EM_TYPE_DOUBLE: {
                double d = (double)x / 7.0;
                memcpy(v, &d, 8);
                break;
            }
            case EM_TYPE_DECIMAL: {
                em_i128 d = (em_i128)x * 1000000007;
                memcpy(v, &d, 16);
                break;
            }
            case EM_TYPE_STRING: {
                char text[32];
                int n = snprintf(text, sizeof text, "%s%lld", r == 4 ? "" : "row,", (long long)x);
                EM_ASSERT_OK(em_column_append_bytes(col, text, r == 0 ? 0 : n, &err), &err);
                continue;
            }
            default:
                memcpy(v, &x, 8);
                break;
            }
            EM_ASSERT_OK(em_column_append_fixed(col, v, &err), &err);
        }
        b->n_rows++;
    }
    return b;
}

static void assert_same_value(const em_column *a, int64_t ra, const em_column *b, int64_t rb) {
    em_error err = {0};
    em_strbuf ta = {0}, tb = {0};
    bool na = false, nb = false;
    EM_ASSERT_OK(em_value_text(a, ra, &ta, &na, &err), &err);
    EM_ASSERT_OK(em_value_text(b, rb, &tb, &nb, &err), &err);
    assert_int_equal(na, nb);
    assert_string_equal(em_strbuf_cstr(&ta), em_strbuf_cstr(&tb));
    em_strbuf_reset(&ta);
    em_strbuf_reset(&tb);
}

static void test_block_round_trip(void **state) {
    (void)state;
    em_batch *b = sample();
    int32_t sel[] = {9, 0, 2, 4, 5};
    em_error err = {0};
    em_strbuf out = {0};
    EM_ASSERT_OK(em_block_append(b, sel, 5, &out, &err), &err);
    em_batch *r = NULL;
    EM_ASSERT_OK(em_block_read((const uint8_t *)out.data, (int64_t)out.len, NULL, &r, "test block",
                               &err),
                 &err);
    assert_int_equal(r->n_rows, 5);
    assert_int_equal(r->n_cols, b->n_cols);
    for (int c = 0; c < b->n_cols; c++) {
        assert_true(em_type_equal(r->cols[c].type, b->cols[c].type));
        for (int64_t i = 0; i < 5; i++)
            assert_same_value(&b->cols[c], sel[i], &r->cols[c], i);
    }
    em_batch_destroy(r);
    em_strbuf_reset(&out);
    em_batch_destroy(b);
}

static em_status read_damaged(em_strbuf *block, void (*damage)(em_strbuf *)) {
    em_strbuf copy = {0};
    em_error err = {0};
    EM_ASSERT_OK(em_strbuf_append(&copy, block->data, block->len, &err), &err);
    damage(&copy);
    em_batch *r = NULL;
    em_status s =
        em_block_read((const uint8_t *)copy.data, (int64_t)copy.len, NULL, &r, "damaged", &err);
    if (s == EM_OK)
        em_batch_destroy(r);
    else
        assert_non_null(strstr(err.msg, "damaged"));
    em_strbuf_reset(&copy);
    return s;
}

static void cut_half(em_strbuf *b) { b->len /= 2; }
static void bad_magic(em_strbuf *b) { b->data[0] ^= 0x5a; }
static void bad_type(em_strbuf *b) { b->data[8 + 4 * 1] = (char)200; }
static void long_tail(em_strbuf *b) {
    em_error err = {0};
    (void)em_strbuf_append(b, "xyz", 3, &err);
}
static void test_block_damage(void **state) {
    (void)state;
    em_batch *b = sample();
    int32_t sel[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    em_error err = {0};
    em_strbuf out = {0};
    EM_ASSERT_OK(em_block_append(b, sel, 10, &out, &err), &err);
    assert_int_equal(read_damaged(&out, cut_half), EM_ERR_CORRUPT);
    assert_int_equal(read_damaged(&out, bad_magic), EM_ERR_CORRUPT);
    assert_int_equal(read_damaged(&out, bad_type), EM_ERR_CORRUPT);
    assert_int_equal(read_damaged(&out, long_tail), EM_ERR_CORRUPT);
    for (size_t cut = 0; cut < out.len; cut += 7) {
        em_batch *r = NULL;
        em_status st = em_block_read((const uint8_t *)out.data, (int64_t)cut, NULL, &r, "cut",
                                     &err);
        assert_int_equal(st, EM_ERR_CORRUPT);
        assert_null(r);
    }
    em_strbuf_reset(&out);
    em_batch_destroy(b);
}

/* One column of type t holding vals[0..n), read back through a block;
 * returns the block's size. */
static size_t round_trip_ints(em_type t, const int64_t *vals, const bool *nulls, int n) {
    em_error err = {0};
    em_schema s = {0};
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "v", t, true, &err), &err);
    em_batch *b = NULL;
    EM_ASSERT_OK(em_batch_create(&s, n, NULL, &b, &err), &err);
    em_schema_reset(&s);
    int32_t *sel = calloc((size_t)n, sizeof *sel);
    assert_non_null(sel);
    for (int i = 0; i < n; i++) {
        uint8_t v[16] = {0};
        if (t.id == EM_TYPE_INT) {
            int32_t x = (int32_t)vals[i];
            memcpy(v, &x, 4);
        } else if (t.id == EM_TYPE_DECIMAL) {
            /* beyond 64 bits when vals[i] is INT64_MAX: a decimal(38) value */
            em_i128 x = vals[i] == INT64_MAX ? (em_i128)vals[i] * 1000 : (em_i128)vals[i];
            memcpy(v, &x, 16);
        } else {
            memcpy(v, &vals[i], 8);
        }
        if (nulls && nulls[i])
            EM_ASSERT_OK(em_column_append_null(&b->cols[0], &err), &err);
        else
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], v, &err), &err);
        sel[i] = n - 1 - i; /* backwards: the selection is honoured */
    }
    b->n_rows = n;
    em_strbuf out = {0};
    EM_ASSERT_OK(em_block_append(b, sel, n, &out, &err), &err);
    em_batch *r = NULL;
    EM_ASSERT_OK(em_block_read((const uint8_t *)out.data, (int64_t)out.len, NULL, &r, "ints", &err),
                 &err);
    assert_int_equal(r->n_rows, n);
    for (int i = 0; i < n; i++)
        assert_same_value(&b->cols[0], sel[i], &r->cols[0], i);
    size_t size = out.len;
    em_batch_destroy(r);
    em_strbuf_reset(&out);
    em_batch_destroy(b);
    free(sel);
    return size;
}

/* Integer-like values are written as offsets from their least value in as
 * few bytes as their span needs, and read back the same at every width and
 * at the edges of their types (a span of all 64 bits, decimals beyond 64
 * bits, which stay as they are). */
static void test_block_narrowed(void **state) {
    (void)state;
    enum { N = 1000 };
    int64_t v[N];
    bool nulls[N];
    const int64_t spans[] = {0, 200, 60000, 4000000000LL, INT64_MAX};
    const em_type types[] = {em_type_make(EM_TYPE_LONG), em_type_make(EM_TYPE_TIMESTAMP),
                             em_type_decimal(12, 2), em_type_decimal(38, 0),
                             em_type_make(EM_TYPE_INT)};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        for (size_t si = 0; si < sizeof spans / sizeof *spans; si++) {
            int64_t span = spans[si];
            if (types[ti].id == EM_TYPE_INT && span > 60000)
                span = INT32_MAX;
            if (types[ti].id == EM_TYPE_DECIMAL && types[ti].precision == 12 && span > 60000)
                span = 999999999999LL;
            for (int i = 0; i < N; i++) {
                /* from the type's bottom when the span is the whole range */
                int64_t lo = span == INT64_MAX ? INT64_MIN
                           : span == INT32_MAX ? INT32_MIN : -17;
                v[i] = i == N - 1 ? (span == INT64_MAX ? INT64_MAX : lo + span)
                                  : lo + (int64_t)((uint64_t)i * 7919u % ((uint64_t)span + 1));
                if (types[ti].precision == 38 && i == 5)
                    v[i] = INT64_MAX; /* one value beyond 64 bits */
                nulls[i] = i % 11 == 3;
            }
            size_t size = round_trip_ints(types[ti], v, nulls, N);
            size_t raw = (size_t)N * (size_t)em_type_width(types[ti]);
            bool as_they_were = types[ti].precision == 38 ||
                                (types[ti].id == EM_TYPE_INT ? span > UINT16_MAX
                                 : types[ti].id == EM_TYPE_DECIMAL ? false
                                                                   : span > UINT32_MAX);
            if (as_they_were)
                assert_true(size > raw);
            else
                assert_true(size < raw * 3 / 4);
            size = round_trip_ints(types[ti], v, NULL, N);
            if (span == 0 && types[ti].precision != 38)
                assert_true(size < (size_t)N + 100); /* one byte a row */
        }
    }
}

/* One string column ["ab", "cd"]: its offsets 0, 2, 4 sit right after the
 * block header (8), the type (4), the chunk header (24) and the validity
 * flag (1); an offset running backwards is refused. */
static void test_block_string_offsets(void **state) {
    (void)state;
    em_error err = {0};
    em_schema s = {0};
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "s", em_type_make(EM_TYPE_STRING), true, &err), &err);
    em_batch *b = NULL;
    EM_ASSERT_OK(em_batch_create(&s, 2, NULL, &b, &err), &err);
    em_schema_reset(&s);
    EM_ASSERT_OK(em_column_append_bytes(&b->cols[0], "ab", 2, &err), &err);
    EM_ASSERT_OK(em_column_append_bytes(&b->cols[0], "cd", 2, &err), &err);
    b->n_rows = 2;
    int32_t sel[] = {0, 1};
    em_strbuf out = {0};
    EM_ASSERT_OK(em_block_append(b, sel, 2, &out, &err), &err);
    int32_t off[3];
    memcpy(off, out.data + 37, sizeof off);
    assert_int_equal(off[0], 0);
    assert_int_equal(off[1], 2);
    assert_int_equal(off[2], 4);
    off[1] = 3;
    off[2] = 1;
    memcpy(out.data + 37, off, sizeof off);
    em_batch *r = NULL;
    assert_int_equal(em_block_read((const uint8_t *)out.data, (int64_t)out.len, NULL, &r, "strings",
                                   &err),
                     EM_ERR_CORRUPT);
    assert_non_null(strstr(err.msg, "string offsets"));
    em_strbuf_reset(&out);
    em_batch_destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_round_trip),
        cmocka_unit_test(test_block_damage),
        cmocka_unit_test(test_block_string_offsets),
        cmocka_unit_test(test_block_narrowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
