/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Arrow C Data Interface: round trip of every type with nulls through
 * export and import (compared cell by cell by canonical text), zero-copy
 * sharing, selection vectors applied on export, foreign arrays with offsets
 * (copied), validation failures that leave the caller's array untouched,
 * release callbacks counted to run exactly once, and streams whose end is a
 * released array.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ember/arrow.h"
#include "ember/value_text.h"

static const em_type_id all_ids[] = {
    EM_TYPE_NULL,   EM_TYPE_BOOLEAN, EM_TYPE_BYTE,      EM_TYPE_SHORT,         EM_TYPE_INT,
    EM_TYPE_LONG,   EM_TYPE_FLOAT,   EM_TYPE_DOUBLE,    EM_TYPE_DECIMAL,       EM_TYPE_STRING,
    EM_TYPE_BINARY, EM_TYPE_DATE,    EM_TYPE_TIMESTAMP, EM_TYPE_TIMESTAMP_NTZ,
};
#define N_IDS ((int)(sizeof all_ids / sizeof all_ids[0]))

/* A batch with one column per type; row r is null in column c when (r + c) % 4 == 3. */
static em_batch *make_all_types(em_pool *pool, int rows, int64_t base) {
    em_error err = {0};
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, N_IDS, &err), &err);
    for (int c = 0; c < N_IDS; c++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", c);
        em_type t =
            all_ids[c] == EM_TYPE_DECIMAL ? em_type_decimal(38, 10) : em_type_make(all_ids[c]);
        EM_ASSERT_OK(em_schema_set(&s, c, name, t, c != 2, &err), &err);
    }
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, rows, pool, &b, &err), &err);
    em_schema_reset(&s);
    for (int r = 0; r < rows; r++) {
        int64_t v = base + r * 7919 - 1000;
        for (int c = 0; c < N_IDS; c++) {
            em_column *col = &b->cols[c];
            if (all_ids[c] == EM_TYPE_NULL || (r + c) % 4 == 3) {
                EM_ASSERT_OK(em_column_append_null(col, &err), &err);
                continue;
            }
            union {
                bool b;
                int8_t i8;
                int16_t i16;
                int32_t i32;
                int64_t i64;
                float f;
                double d;
                em_i128 dec;
            } u;
            char text[32];
            switch (all_ids[c]) {
            case EM_TYPE_BOOLEAN:
                u.b = v & 1;
                break;
            case EM_TYPE_BYTE:
                u.i8 = (int8_t)v;
                break;
            case EM_TYPE_SHORT:
                u.i16 = (int16_t)v;
                break;
            case EM_TYPE_INT:
            case EM_TYPE_DATE:
                u.i32 = (int32_t)v;
                break;
            case EM_TYPE_LONG:
            case EM_TYPE_TIMESTAMP:
            case EM_TYPE_TIMESTAMP_NTZ:
                u.i64 = v * 1000003;
                break;
            case EM_TYPE_FLOAT:
                u.f = (float)v / 3.0f;
                break;
            case EM_TYPE_DOUBLE:
                u.d = (double)v / 7.0;
                break;
            case EM_TYPE_DECIMAL:
                u.dec = (em_i128)v * (em_i128)1000000000000000000LL;
                break;
            default:
                break;
            }
            if (em_type_is_varlen(col->type)) {
                int n = snprintf(text, sizeof text, "s%lld\xc3\xa9", (long long)v);
                EM_ASSERT_OK(em_column_append_bytes(col, text, r % 5 == 0 ? 0 : n, &err), &err);
            } else {
                EM_ASSERT_OK(em_column_append_fixed(col, &u, &err), &err);
            }
        }
    }
    b->n_rows = rows;
    return b;
}

/* Compares logical rows of a (through its selection) with physical rows of b. */
static void assert_same_values(const em_batch *a, const em_batch *b) {
    em_error err = {0};
    assert_int_equal(a->n_cols, b->n_cols);
    assert_int_equal(em_batch_rows(a), em_batch_rows(b));
    em_strbuf x, y;
    em_strbuf_init(&x);
    em_strbuf_init(&y);
    for (int c = 0; c < a->n_cols; c++) {
        assert_true(em_type_equal(a->cols[c].type, b->cols[c].type));
        assert_string_equal(a->schema.fields[c].name, b->schema.fields[c].name);
        assert_int_equal(a->schema.fields[c].nullable, b->schema.fields[c].nullable);
        for (int64_t k = 0; k < em_batch_rows(a); k++) {
            int64_t ra = a->sel ? a->sel[k] : k;
            int64_t rb = b->sel ? b->sel[k] : k;
            bool na, nb;
            em_strbuf_clear(&x);
            em_strbuf_clear(&y);
            EM_ASSERT_OK(em_value_text(&a->cols[c], ra, &x, &na, &err), &err);
            EM_ASSERT_OK(em_value_text(&b->cols[c], rb, &y, &nb, &err), &err);
            assert_int_equal(na, nb);
            assert_string_equal(em_strbuf_cstr(&x), em_strbuf_cstr(&y));
        }
    }
    em_strbuf_reset(&x);
    em_strbuf_reset(&y);
}

/* Release counting: wraps a struct's release callback. */
static int array_releases, schema_releases;
static void (*orig_array_release)(struct ArrowArray *);
static void (*orig_schema_release)(struct ArrowSchema *);
static void counting_array_release(struct ArrowArray *a) {
    array_releases++;
    a->release = orig_array_release;
    a->release(a);
}
static void counting_schema_release(struct ArrowSchema *s) {
    schema_releases++;
    s->release = orig_schema_release;
    s->release(s);
}

static void test_roundtrip_all_types(void **state) {
    (void)state;
    em_error err = {0};
    em_pool *pool = em_pool_create("arrow", NULL, -1);
    for (int rows = 0; rows <= 37; rows += 37) {
        em_batch *src = make_all_types(pool, rows, -50);
        struct ArrowSchema sch;
        struct ArrowArray arr;
        EM_ASSERT_OK(em_arrow_export_schema(&src->schema, &sch, &err), &err);
        EM_ASSERT_OK(em_arrow_export_batch(src, &arr, &err), &err);
        assert_string_equal(sch.format, "+s");
        assert_int_equal(sch.n_children, N_IDS);
        assert_string_equal(sch.children[8]->format, "d:38,10");
        assert_string_equal(sch.children[12]->format, "tsu:UTC");
        assert_string_equal(sch.children[13]->format, "tsu:");
        assert_string_equal(sch.children[11]->format, "tdD");
        assert_int_equal(sch.children[2]->flags, 0);
        assert_int_equal(sch.children[3]->flags, ARROW_FLAG_NULLABLE);
        assert_int_equal(arr.length, rows);
        assert_int_equal(arr.children[0]->n_buffers, 0);
        assert_int_equal(arr.children[0]->null_count, rows);
        assert_int_equal(arr.children[9]->n_buffers, 3);
        /* zero-copy: the exported values pointer is the column's */
        assert_ptr_equal(arr.children[4]->buffers[1], src->cols[4].values->data);

        orig_array_release = arr.release;
        arr.release = counting_array_release;
        array_releases = 0;
        em_batch *dst = NULL;
        EM_ASSERT_OK(em_arrow_import_batch(&arr, &sch, pool, &dst, &err), &err);
        assert_null(arr.release); /* moved */
        if (rows > 0)             /* zero-copy import */
            assert_ptr_equal(dst->cols[4].values->data, src->cols[4].values->data);
        assert_same_values(src, dst);
        em_batch_destroy(src); /* dst still views the bytes */
        src = make_all_types(pool, rows, -50);
        assert_same_values(src, dst);
        /* an empty array views nothing, so it is released by the import itself */
        assert_int_equal(array_releases, rows > 0 ? 0 : 1);
        em_batch_destroy(dst);
        assert_int_equal(array_releases, 1);
        em_batch_destroy(src);

        orig_schema_release = sch.release;
        sch.release = counting_schema_release;
        schema_releases = 0;
        sch.release(&sch);
        assert_int_equal(schema_releases, 1);
        assert_null(sch.release);
    }
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
}

static void test_selection_and_moved_children(void **state) {
    (void)state;
    em_error err = {0};
    em_batch *src = make_all_types(NULL, 20, 3);
    EM_ASSERT_OK(em_batch_sel_reserve(src, 5, &err), &err);
    int32_t sel[5] = {1, 2, 3, 11, 19};
    memcpy(src->sel, sel, sizeof sel);
    src->n_sel = 5;
    struct ArrowSchema sch;
    struct ArrowArray arr;
    EM_ASSERT_OK(em_arrow_export_schema(&src->schema, &sch, &err), &err);
    EM_ASSERT_OK(em_arrow_export_batch(src, &arr, &err), &err);
    assert_int_equal(arr.length, 5);
    assert_non_null(src->sel); /* the batch itself is not compacted */
    em_batch *dst;
    EM_ASSERT_OK(em_arrow_import_batch(&arr, &sch, NULL, &dst, &err), &err);
    assert_same_values(src, dst);
    em_batch_destroy(dst);

    /* a consumer may move a child out; the parent must leave it alone */
    EM_ASSERT_OK(em_arrow_export_batch(src, &arr, &err), &err);
    struct ArrowArray moved = *arr.children[9];
    arr.children[9]->release = NULL;
    arr.release(&arr);
    assert_null(arr.release);
    assert_int_equal(moved.length, 5);
    const int32_t *off = moved.buffers[1];
    assert_true(off[5] >= off[0]);
    moved.release(&moved);
    assert_null(moved.release);
    sch.release(&sch);
    em_batch_destroy(src);
}

/* Slices of every type at every bit alignment: an exported array re-described
 * with parent and child offsets imports as exactly those rows (copied). */
static void test_sliced_roundtrip(void **state) {
    (void)state;
    em_error err = {0};
    em_batch *src = make_all_types(NULL, 29, 11);
    struct ArrowSchema sch;
    EM_ASSERT_OK(em_arrow_export_schema(&src->schema, &sch, &err), &err);
    for (int parent_off = 0; parent_off < 9; parent_off++) {
        for (int child_off = 0; child_off < 9; child_off += 4) {
            struct ArrowArray arr;
            EM_ASSERT_OK(em_arrow_export_batch(src, &arr, &err), &err);
            int64_t len = 29 - parent_off - child_off - 1;
            arr.offset = parent_off;
            arr.length = len;
            for (int c = 0; c < arr.n_children; c++) {
                arr.children[c]->offset = child_off;
                arr.children[c]->length -= child_off;
                if (arr.children[c]->null_count > 0)
                    arr.children[c]->null_count = -1; /* no longer exact for the slice */
            }
            em_batch *dst;
            EM_ASSERT_OK(em_arrow_import_batch(&arr, &sch, NULL, &dst, &err), &err);
            assert_null(arr.release);
            /* compare with the same rows of src through a selection */
            EM_ASSERT_OK(em_batch_sel_reserve(src, len, &err), &err);
            for (int64_t k = 0; k < len; k++)
                src->sel[k] = (int32_t)(parent_off + child_off + k);
            src->n_sel = len;
            assert_same_values(src, dst);
            /* sliced columns are copied (string offsets rebased to 0); unsliced are views */
            assert_int_equal(em_column_offsets(&dst->cols[9])[0], 0);
            if (parent_off + child_off > 0)
                assert_ptr_not_equal(dst->cols[4].values->data, src->cols[4].values->data);
            else
                assert_ptr_equal(dst->cols[4].values->data, src->cols[4].values->data);
            em_batch_sel_clear(src);
            assert_null(src->sel);
            em_batch_destroy(dst);
        }
    }
    sch.release(&sch);
    em_batch_destroy(src);
}

/* ---- a hand-built foreign array with offsets ---- */

static int foreign_releases;
static void foreign_release(struct ArrowArray *a) {
    foreign_releases++;
    a->release = NULL;
}
static void foreign_child_release(struct ArrowArray *a) { a->release = NULL; }
static void foreign_schema_release(struct ArrowSchema *s) { s->release = NULL; }

typedef struct foreign {
    int32_t ints[8];
    uint8_t int_valid[1];
    int32_t offs[6];
    char chars[16];
    uint8_t bools[2];
    const void *ib[2], *sb[3], *bb[2], *pb[1];
    struct ArrowArray parent, ci, cs, cb;
    struct ArrowArray *kids[3];
    struct ArrowSchema sp, si, ss, sbool;
    struct ArrowSchema *skids[3];
} foreign;

static void foreign_init(foreign *f) {
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 8; i++)
        f->ints[i] = 100 + i;
    f->int_valid[0] = 0xff & ~(1u << 4); /* physical row 4 is null */
    /* strings: physical rows "xx","a","bc","","def"; offsets start at 3 */
    int32_t offs[6] = {3, 5, 6, 8, 8, 11};
    memcpy(f->offs, offs, sizeof offs);
    memcpy(f->chars, "___xxabcdef", 11);
    f->bools[0] = 0x5a; /* 0101 1010 */
    f->bools[1] = 0x01;
    f->ib[0] = f->int_valid;
    f->ib[1] = f->ints;
    f->sb[0] = NULL;
    f->sb[1] = f->offs;
    f->sb[2] = f->chars;
    f->bb[0] = NULL;
    f->bb[1] = f->bools;
    f->pb[0] = NULL;
    /* logical struct rows: parent offset 1, length 3 */
    f->ci = (struct ArrowArray){.length = 5,
                                .null_count = 1,
                                .offset = 2,
                                .n_buffers = 2,
                                .buffers = f->ib,
                                .release = foreign_child_release};
    f->cs = (struct ArrowArray){.length = 4,
                                .null_count = 0,
                                .offset = 1,
                                .n_buffers = 3,
                                .buffers = f->sb,
                                .release = foreign_child_release};
    f->cb = (struct ArrowArray){.length = 6,
                                .null_count = 0,
                                .offset = 3,
                                .n_buffers = 2,
                                .buffers = f->bb,
                                .release = foreign_child_release};
    f->kids[0] = &f->ci;
    f->kids[1] = &f->cs;
    f->kids[2] = &f->cb;
    f->parent = (struct ArrowArray){.length = 3,
                                    .offset = 1,
                                    .n_buffers = 1,
                                    .buffers = f->pb,
                                    .n_children = 3,
                                    .children = f->kids,
                                    .release = foreign_release};
    f->si = (struct ArrowSchema){.format = "i",
                                 .name = "i",
                                 .flags = ARROW_FLAG_NULLABLE,
                                 .release = foreign_schema_release};
    f->ss = (struct ArrowSchema){.format = "u", .name = "s", .release = foreign_schema_release};
    f->sbool = (struct ArrowSchema){.format = "b", .name = "b", .release = foreign_schema_release};
    f->skids[0] = &f->si;
    f->skids[1] = &f->ss;
    f->skids[2] = &f->sbool;
    f->sp = (struct ArrowSchema){.format = "+s",
                                 .name = "",
                                 .n_children = 3,
                                 .children = f->skids,
                                 .release = foreign_schema_release};
}

static void test_foreign_offsets(void **state) {
    (void)state;
    em_error err = {0};
    foreign f;
    foreign_init(&f);
    foreign_releases = 0;
    em_batch *b;
    EM_ASSERT_OK(em_arrow_import_batch(&f.parent, &f.sp, NULL, &b, &err), &err);
    assert_int_equal(foreign_releases, 1); /* everything was copied: released at once */
    assert_int_equal(b->n_rows, 3);
    /* ints: physical rows 3,4,5 -> 103, null, 105 */
    const int32_t *iv = (const int32_t *)b->cols[0].values->data;
    assert_int_equal(iv[0], 103);
    assert_false(em_column_is_valid(&b->cols[0], 1));
    assert_int_equal(iv[2], 105);
    assert_int_equal(em_column_null_count(&b->cols[0]), 1);
    /* strings: physical rows 2,3,4 -> "bc", "", "def" with offsets rebased to 0 */
    const int32_t *so = em_column_offsets(&b->cols[1]);
    assert_int_equal(so[0], 0);
    assert_int_equal(so[1], 2);
    assert_memory_equal(em_column_chars(&b->cols[1]), "bcdef", 5);
    assert_int_equal(so[2], 2);
    assert_int_equal(so[3], 5);
    /* bools: physical bits 4,5,6 of 0x5a -> 1,0,1 */
    assert_true(em_bit_get(b->cols[2].values->data, 0));
    assert_false(em_bit_get(b->cols[2].values->data, 1));
    assert_true(em_bit_get(b->cols[2].values->data, 2));
    em_batch_destroy(b);
    assert_int_equal(foreign_releases, 1);
}

static void expect_invalid(foreign *f, em_status code, const char *needle) {
    em_error err = {0};
    em_batch *b = (em_batch *)(uintptr_t)1;
    foreign_releases = 0;
    em_status st = em_arrow_import_batch(&f->parent, &f->sp, NULL, &b, &err);
    assert_int_equal(st, code);
    assert_null(b);
    assert_non_null(strstr(err.msg, needle));
    /* the caller still owns the array */
    assert_non_null(f->parent.release);
    assert_int_equal(foreign_releases, 0);
}

static void test_foreign_invalid(void **state) {
    (void)state;
    foreign f;
    foreign_init(&f);
    f.ci.n_buffers = 3;
    expect_invalid(&f, EM_ERR_INVALID, "buffers");
    foreign_init(&f);
    f.offs[3] = 1; /* decreasing */
    expect_invalid(&f, EM_ERR_INVALID, "offsets decrease");
    foreign_init(&f);
    f.cb.length = 2; /* shorter than parent offset + length */
    expect_invalid(&f, EM_ERR_INVALID, "cannot hold");
    foreign_init(&f);
    f.ci.null_count = 9;
    expect_invalid(&f, EM_ERR_INVALID, "null_count");
    foreign_init(&f);
    f.si.format = "+l";
    expect_invalid(&f, EM_ERR_UNSUPPORTED, "'+l'");
    foreign_init(&f);
    f.ss.format = "d:40,2";
    expect_invalid(&f, EM_ERR_UNSUPPORTED, "d:40,2");
    foreign_init(&f);
    f.sb[1] = NULL;
    expect_invalid(&f, EM_ERR_INVALID, "buffer 1 is NULL");
    foreign_init(&f);
    f.parent.n_children = 2;
    expect_invalid(&f, EM_ERR_INVALID, "children");
    foreign_init(&f);
    uint8_t pv = 0x3;
    f.pb[0] = &pv;
    f.parent.null_count = 1;
    expect_invalid(&f, EM_ERR_UNSUPPORTED, "null rows");

    em_error err = {0};
    em_batch *b;
    foreign_init(&f);
    f.parent.release = NULL;
    assert_int_equal(em_arrow_import_batch(&f.parent, &f.sp, NULL, &b, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "released"));
}

/* Spark's Null columns (an inline table's all-NULL column, explode_outer of an empty
 * array) reach Ember as Arrow Java exports them: no buffers and length 0 whatever
 * the batch's rows. Such a column is the batch's rows, all null. */
static void test_null_column_of_no_length(void **state) {
    (void)state;
    em_error err = {0};
    foreign f;
    foreign_init(&f);
    f.cb = (struct ArrowArray){.length = 0, .null_count = 0, .n_buffers = 0,
                               .release = foreign_child_release};
    f.sbool.format = "n";
    em_batch *b;
    EM_ASSERT_OK(em_arrow_import_batch(&f.parent, &f.sp, NULL, &b, &err), &err);
    assert_int_equal(b->n_rows, 3);
    assert_int_equal(b->cols[2].type.id, EM_TYPE_NULL);
    assert_int_equal(b->cols[2].length, 3);
    assert_int_equal(em_column_null_count(&b->cols[2]), 3);
    for (int r = 0; r < 3; r++)
        assert_false(em_column_is_valid(&b->cols[2], r));
    assert_int_equal(((const int32_t *)b->cols[0].values->data)[2], 105); /* the rest as before */
    em_batch_destroy(b);

    /* a Null array with a value buffer is not one */
    foreign_init(&f);
    f.cb.length = 0;
    f.sbool.format = "n";
    expect_invalid(&f, EM_ERR_INVALID, "a Null array");
}

/* Every allocation of an import failing in turn: the array goes back to the caller. */
static void test_import_fault_injection(void **state) {
    (void)state;
    em_batch *src = make_all_types(NULL, 9, 1);
    struct ArrowSchema sch;
    em_error err = {0};
    EM_ASSERT_OK(em_arrow_export_schema(&src->schema, &sch, &err), &err);
    int64_t n;
    for (n = 1; n < 10000; n++) {
        struct ArrowArray arr;
        EM_ASSERT_OK(em_arrow_export_batch(src, &arr, &err), &err);
        em_batch *dst = NULL;
        em_alloc_fail_after(n);
        em_status st = em_arrow_import_batch(&arr, &sch, NULL, &dst, &err);
        bool fired = em_alloc_fail_triggered();
        em_alloc_fail_after(0);
        if (!fired) {
            EM_ASSERT_OK(st, &err);
            assert_same_values(src, dst);
            em_batch_destroy(dst);
            break;
        }
        assert_int_equal(st, EM_ERR_NOMEM);
        assert_null(dst);
        assert_non_null(arr.release);
        arr.release(&arr);
    }
    assert_true(n > 5);
    sch.release(&sch);
    em_batch_destroy(src);
}

/* ---- streams ---- */

typedef struct source {
    int produced, limit, fail_at, released;
    em_pool *pool;
} source;

static em_status source_next(void *ctx, em_batch **out, em_error *err) {
    source *s = ctx;
    if (s->produced == s->fail_at)
        return EM_FAIL(err, EM_ERR_CORRUPT, "page 3 of part-0.parquet is corrupt");
    if (s->produced == s->limit)
        return EM_DONE;
    *out = make_all_types(s->pool, 3 + s->produced, s->produced * 100);
    s->produced++;
    return EM_OK;
}
static void source_release(void *ctx) { ((source *)ctx)->released++; }

static void test_stream(void **state) {
    (void)state;
    em_error err = {0};
    source src = {.limit = 3, .fail_at = -1};
    em_batch *proto = make_all_types(NULL, 0, 0);
    struct ArrowArrayStream st;
    EM_ASSERT_OK(
        em_arrow_stream_from_batches(&proto->schema, source_next, source_release, &src, &st, &err),
        &err);
    struct ArrowSchema sch;
    assert_int_equal(st.get_schema(&st, &sch), 0);
    assert_int_equal(sch.n_children, N_IDS);
    int got = 0;
    for (;;) {
        em_batch *b = NULL;
        em_status s = em_arrow_stream_next_batch(&st, &sch, NULL, &b, &err);
        if (s == EM_DONE)
            break;
        EM_ASSERT_OK(s, &err);
        em_batch *expect = make_all_types(NULL, 3 + got, got * 100);
        assert_same_values(expect, b);
        em_batch_destroy(expect);
        em_batch_destroy(b);
        got++;
    }
    assert_int_equal(got, 3);
    /* after the end, get_next keeps returning the released array */
    struct ArrowArray a;
    assert_int_equal(st.get_next(&st, &a), 0);
    assert_null(a.release);
    assert_null(st.get_last_error(&st));
    st.release(&st);
    assert_null(st.release);
    assert_int_equal(src.released, 1);

    /* an error from the source */
    source bad = {.limit = 5, .fail_at = 1};
    EM_ASSERT_OK(
        em_arrow_stream_from_batches(&proto->schema, source_next, source_release, &bad, &st, &err),
        &err);
    assert_int_equal(st.get_next(&st, &a), 0);
    assert_non_null(a.release);
    a.release(&a);
    assert_int_equal(st.get_next(&st, &a), EIO);
    assert_non_null(strstr(st.get_last_error(&st), "part-0.parquet"));
    em_batch *b = NULL;
    assert_int_equal(em_arrow_stream_next_batch(&st, &sch, NULL, &b, &err), EM_ERR_IO);
    assert_non_null(strstr(err.msg, "corrupt"));
    st.release(&st);
    assert_int_equal(bad.released, 1);
    sch.release(&sch);
    em_batch_destroy(proto);
}

/* ---- layouts converted on import ---- */

static void noop_array_release(struct ArrowArray *a) { a->release = NULL; }

/* One-child struct around `child` with format `fmt`; imports and returns the batch. */
static em_status import_one(struct ArrowArray *child, const char *fmt, em_batch **out,
                            em_error *err) {
    struct ArrowSchema cs = {.format = fmt,
                             .name = "x",
                             .flags = ARROW_FLAG_NULLABLE,
                             .release = foreign_schema_release};
    struct ArrowSchema *csp = &cs;
    struct ArrowSchema ps = {.format = "+s",
                             .name = "",
                             .n_children = 1,
                             .children = &csp,
                             .release = foreign_schema_release};
    const void *pb[1] = {NULL};
    struct ArrowArray *kid = child;
    struct ArrowArray parent = {.length = child->length - 1,
                                .offset = 1,
                                .n_buffers = 1,
                                .buffers = pb,
                                .n_children = 1,
                                .children = &kid,
                                .release = noop_array_release};
    em_status st = em_arrow_import_batch(&parent, &ps, NULL, out, err);
    if (st != EM_OK)
        assert_non_null(parent.release); /* handed back */
    return st;
}

static void assert_texts(const em_batch *b, const char *const *expect, int n) {
    em_error err = {0};
    assert_int_equal(b->n_rows, n);
    em_strbuf sb;
    em_strbuf_init(&sb);
    for (int r = 0; r < n; r++) {
        bool null;
        em_strbuf_clear(&sb);
        EM_ASSERT_OK(em_value_text(&b->cols[0], r, &sb, &null, &err), &err);
        if (!expect[r])
            assert_true(null);
        else
            assert_string_equal(em_strbuf_cstr(&sb), expect[r]);
    }
    em_strbuf_reset(&sb);
}

static void test_converted_layouts(void **state) {
    (void)state;
    em_error err = {0};
    em_batch *b;
    /* the first physical row is skipped by the parent's offset 1 */
    int64_t raw[5] = {999, -1, 0, 1700000000123, -86400001};
    uint8_t valid = 0x1b; /* row 2 (physical) null */
    const void *bufs[2] = {&valid, raw};
    struct ArrowArray ts = {.length = 5,
                            .null_count = 1,
                            .n_buffers = 2,
                            .buffers = bufs,
                            .release = noop_array_release};
    EM_ASSERT_OK(import_one(&ts, "tsm:UTC", &b, &err), &err);
    assert_int_equal(b->cols[0].type.id, EM_TYPE_TIMESTAMP);
    assert_texts(b,
                 (const char *const[]){"1969-12-31 23:59:59.999000", NULL,
                                       "2023-11-14 22:13:20.123000", "1969-12-30 23:59:59.999000"},
                 4);
    em_batch_destroy(b);
    EM_ASSERT_OK(import_one(&ts, "tsn:", &b, &err), &err);
    assert_int_equal(b->cols[0].type.id, EM_TYPE_TIMESTAMP_NTZ);
    assert_texts(b,
                 (const char *const[]){"1969-12-31 23:59:59.999999", NULL, "1970-01-01 00:28:20",
                                       "1969-12-31 23:59:59.913599"},
                 4);
    em_batch_destroy(b);
    EM_ASSERT_OK(import_one(&ts, "tdm", &b, &err), &err);
    assert_texts(b, (const char *const[]){"1969-12-31", NULL, "2023-11-14", "1969-12-30"}, 4);
    em_batch_destroy(b);
    raw[4] = INT64_MAX / 10;
    assert_int_equal(import_one(&ts, "tss:", &b, &err), EM_ERR_OVERFLOW);
    assert_non_null(strstr(err.msg, "overflows"));

    /* large strings: int64 offsets */
    int64_t loff[5] = {0, 2, 5, 5, 9};
    const char *lchars = "xxabcdefg";
    uint8_t lvalid = 0x17; /* physical row 3 null */
    const void *lb[3] = {&lvalid, loff, lchars};
    struct ArrowArray large = {
        .length = 4, .null_count = 1, .n_buffers = 3, .buffers = lb, .release = noop_array_release};
    EM_ASSERT_OK(import_one(&large, "U", &b, &err), &err);
    assert_int_equal(b->cols[0].type.id, EM_TYPE_STRING);
    assert_texts(b, (const char *const[]){"abc", "", NULL}, 3);
    em_batch_destroy(b);
    EM_ASSERT_OK(import_one(&large, "Z", &b, &err), &err);
    assert_texts(b, (const char *const[]){"616263", "", NULL}, 3);
    em_batch_destroy(b);
    loff[2] = 1; /* decreasing */
    assert_int_equal(import_one(&large, "U", &b, &err), EM_ERR_INVALID);

    /* string views: inline (<= 12 bytes) and out-of-line in two variadic buffers */
    uint8_t views[4][16];
    memset(views, 0, sizeof views);
    int32_t len;
    len = 3;
    memcpy(views[0], &len, 4);
    memcpy(views[0] + 4, "zzz", 3);
    len = 5;
    memcpy(views[1], &len, 4);
    memcpy(views[1] + 4, "short", 5);
    const char *d0 = "......a string longer than twelve";
    const char *d1 = "another long string value";
    int32_t idx, off;
    len = 27;
    idx = 0;
    off = 6;
    memcpy(views[2], &len, 4);
    memcpy(views[2] + 4, d0 + off, 4);
    memcpy(views[2] + 8, &idx, 4);
    memcpy(views[2] + 12, &off, 4);
    len = 25;
    idx = 1;
    off = 0;
    memcpy(views[3], &len, 4);
    memcpy(views[3] + 4, d1, 4);
    memcpy(views[3] + 8, &idx, 4);
    memcpy(views[3] + 12, &off, 4);
    int64_t sizes[2] = {(int64_t)strlen(d0), (int64_t)strlen(d1)};
    const void *vb[5] = {NULL, views, d0, d1, sizes};
    struct ArrowArray view = {
        .length = 4, .null_count = 0, .n_buffers = 5, .buffers = vb, .release = noop_array_release};
    EM_ASSERT_OK(import_one(&view, "vu", &b, &err), &err);
    assert_texts(
        b,
        (const char *const[]){"short", "a string longer than twelve", "another long string value"},
        3);
    em_batch_destroy(b);
    sizes[1] = 10; /* the last view now points past its buffer */
    assert_int_equal(import_one(&view, "vu", &b, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "outside"));
}

static void test_formats(void **state) {
    (void)state;
    em_error err = {0};
    em_type t;
    EM_ASSERT_OK(em_arrow_parse_format("tsu:Europe/Paris", &t, &err), &err);
    assert_int_equal(t.id, EM_TYPE_TIMESTAMP);
    EM_ASSERT_OK(em_arrow_parse_format("d:15,2,128", &t, &err), &err);
    assert_true(em_type_equal(t, em_type_decimal(15, 2)));
    assert_int_equal(em_arrow_parse_format("d:15,2,256", &t, &err), EM_ERR_UNSUPPORTED);
    assert_int_equal(em_arrow_parse_format("d:15", &t, &err), EM_ERR_INVALID);
    EM_ASSERT_OK(em_arrow_parse_format("tsn:", &t, &err), &err);
    assert_int_equal(t.id, EM_TYPE_TIMESTAMP_NTZ);
    EM_ASSERT_OK(em_arrow_parse_format("tss:UTC", &t, &err), &err);
    assert_int_equal(t.id, EM_TYPE_TIMESTAMP);
    assert_int_equal(em_arrow_parse_format("tsx:", &t, &err), EM_ERR_UNSUPPORTED);
    assert_int_equal(em_arrow_parse_format("+l", &t, &err), EM_ERR_UNSUPPORTED);
    char buf[32];
    for (int i = 0; i < N_IDS; i++) {
        em_type x =
            all_ids[i] == EM_TYPE_DECIMAL ? em_type_decimal(7, 3) : em_type_make(all_ids[i]);
        EM_ASSERT_OK(em_arrow_parse_format(em_arrow_format(x, buf, sizeof buf), &t, &err), &err);
        assert_true(em_type_equal(t, x));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_types),
        cmocka_unit_test(test_selection_and_moved_children),
        cmocka_unit_test(test_sliced_roundtrip),
        cmocka_unit_test(test_foreign_offsets),
        cmocka_unit_test(test_foreign_invalid),
        cmocka_unit_test(test_null_column_of_no_length),
        cmocka_unit_test(test_import_fault_injection),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_converted_layouts),
        cmocka_unit_test(test_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
