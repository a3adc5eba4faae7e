/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the operator tests: parse a small plan, make batches from
 * rows of literal text, feed them to operators through a test execution
 * context (every Exchange reads the test's input list; scans read the
 * test's files), and render an operator's output as "v1|v2|..." lines.
 */
#ifndef EM_TEST_OPS_COMMON_H
#define EM_TEST_OPS_COMMON_H

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/ops.h"
#include "ember/plan.h"
#include "ember/value_text.h"
#include "expr/internal.h"
#include "ops/internal.h"

typedef struct tops_ctx {
    em_exec_ctx ctx;
    em_batch_list input; /* what every shuffle/broadcast read returns */
    em_scan_split splits[64];
    int n_splits;
} tops_ctx;

static em_status tops_shuffle(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                              em_error *err) {
    (void)x;
    (void)err;
    *out = &((tops_ctx *)ctx->runtime)->input;
    return EM_OK;
}

static em_status tops_splits(em_exec_ctx *ctx, const em_plan_node *scan, const em_scan_split **out,
                             int *n_out, em_error *err) {
    (void)scan;
    (void)err;
    tops_ctx *t = ctx->runtime;
    *out = t->splits;
    *n_out = t->n_splits;
    return EM_OK;
}

static inline void tops_init(tops_ctx *t, em_pool *pool) {
    memset(t, 0, sizeof *t);
    t->ctx.pool = pool;
    t->ctx.num_partitions = 1;
    t->ctx.shuffle_input = tops_shuffle;
    t->ctx.broadcast_input = tops_shuffle;
    t->ctx.scan_splits = tops_splits;
    t->ctx.runtime = t;
}

static inline em_plan *tops_parse(const char *text) {
    em_plan *p = NULL;
    em_error err = {0};
    if (em_plan_parse(text, strlen(text), NULL, &p, &err) != EM_OK)
        fail_msg("plan parse failed: %s", err.msg);
    return p;
}

static inline const em_plan_node *tops_node(const em_plan *p, int id) {
    const em_plan_node *n = em_plan_node_by_id(p, id);
    if (!n)
        fail_msg("no node %d", id);
    return n;
}

/* A batch of columns typed by the "name:type,..." list; rows[r][c] literal
 * text or NULL for null. */
static inline em_batch *tops_batch(const char *schema_text, const char *const *cells, int n_rows) {
    em_error err = {0};
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", schema_text);
    char *names[32];
    em_type types[32];
    int n = 0;
    for (char *tok = strtok(buf, ","); tok && n < 32; tok = strtok(NULL, ",")) {
        char *colon = strchr(tok, ':');
        *colon = '\0';
        names[n] = tok;
        /* decimal(p;s) is written with ';' to survive the ',' split */
        for (char *q = colon + 1; *q; q++)
            if (*q == ';')
                *q = ',';
        EM_ASSERT_OK(em_type_parse(colon + 1, strlen(colon + 1), &types[n], &err), &err);
        n++;
    }
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, n, &err), &err);
    for (int i = 0; i < n; i++)
        EM_ASSERT_OK(em_schema_set(&s, i, names[i], types[i], true, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, n_rows > 0 ? n_rows : 1, NULL, &b, &err), &err);
    em_schema_reset(&s);
    for (int c = 0; c < n; c++) {
        em_column *col = &b->cols[c];
        for (int r = 0; r < n_rows; r++) {
            const char *txt = cells[r * n + c];
            if (!txt) {
                EM_ASSERT_OK(em_column_append_null(col, &err), &err);
                continue;
            }
            ex_value v;
            EM_ASSERT_OK(em_ex_parse_literal(txt, col->type, &v, &err), &err);
            if (em_type_is_varlen(col->type)) {
                EM_ASSERT_OK(em_column_append_bytes(col, v.s, v.len, &err), &err);
                continue;
            }
            union {
                bool b;
                int32_t i32;
                int64_t i64;
                float f;
                double d;
                em_i128 dec;
            } u;
            switch (col->type.id) {
            case EM_TYPE_BOOLEAN:
                u.b = v.i != 0;
                break;
            case EM_TYPE_INT:
            case EM_TYPE_DATE:
                u.i32 = (int32_t)v.i;
                break;
            case EM_TYPE_FLOAT:
                u.f = (float)v.d;
                break;
            case EM_TYPE_DOUBLE:
                u.d = v.d;
                break;
            case EM_TYPE_DECIMAL:
                u.dec = v.dec;
                break;
            default:
                u.i64 = v.i;
                break;
            }
            EM_ASSERT_OK(em_column_append_fixed(col, &u, &err), &err);
        }
    }
    b->n_rows = n_rows;
    return b;
}

/* Splits rows into batches of `per` rows as the test's input. */
static inline void tops_set_input(tops_ctx *t, const char *schema_text, const char *const *cells,
                                  int n_cols, int n_rows, int per) {
    em_batch_list_reset(&t->input);
    int nb = n_rows == 0 ? 0 : (n_rows + per - 1) / per;
    t->input.batches = calloc((size_t)nb + 1, sizeof *t->input.batches);
    for (int i = 0; i < nb; i++) {
        int lo = i * per, hi = lo + per < n_rows ? lo + per : n_rows;
        t->input.batches[i] = tops_batch(schema_text, cells + lo * n_cols, hi - lo);
    }
    t->input.n_batches = nb;
    t->input.n_rows = n_rows;
}

/* Opens op, drains it, renders rows as "a|b|c", closes and destroys it. */
static inline char **tops_run(em_op *op, tops_ctx *t, int *n_rows_out) {
    em_error err = {0};
    EM_ASSERT_OK(em_op_open(op, &t->ctx, &err), &err);
    int cap = 16, n = 0;
    char **rows = calloc((size_t)cap, sizeof *rows);
    em_strbuf sb = {0}, row = {0};
    for (;;) {
        em_batch *b = NULL;
        em_status s = em_op_next(op, &b, &err);
        if (s == EM_DONE)
            break;
        EM_ASSERT_OK(s, &err);
        assert_true(em_batch_rows(b) <= EM_BATCH_CAP);
        for (int64_t k = 0; k < em_batch_rows(b); k++) {
            int64_t r = b->sel ? b->sel[k] : k;
            em_strbuf_clear(&row);
            for (int c = 0; c < b->n_cols; c++) {
                bool is_null = false;
                em_strbuf_clear(&sb);
                EM_ASSERT_OK(em_value_text(&b->cols[c], r, &sb, &is_null, &err), &err);
                if (c)
                    EM_ASSERT_OK(em_strbuf_appends(&row, "|", &err), &err);
                EM_ASSERT_OK(em_strbuf_appends(&row, is_null ? "null" : em_strbuf_cstr(&sb), &err),
                             &err);
            }
            if (n == cap)
                rows = realloc(rows, sizeof *rows * (size_t)(cap *= 2));
            rows[n++] = strdup(em_strbuf_cstr(&row));
        }
    }
    em_strbuf_reset(&sb);
    em_strbuf_reset(&row);
    em_op_destroy(op);
    *n_rows_out = n;
    return rows;
}

static inline int tops_cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks rows against expected lines (sorted first when !ordered). */
static inline void tops_expect(char **rows, int n, const char *const *expect, int n_expect,
                               bool ordered) {
    const char **ex = calloc((size_t)n_expect + 1, sizeof *ex);
    if (n_expect > 0)
        memcpy(ex, expect, sizeof *ex * (size_t)n_expect);
    if (!ordered) {
        qsort(rows, (size_t)n, sizeof *rows, tops_cmp_str);
        qsort(ex, (size_t)n_expect, sizeof *ex, tops_cmp_str);
    }
    for (int i = 0; i < n && i < n_expect; i++)
        if (strcmp(rows[i], ex[i]) != 0)
            fail_msg("row %d: got '%s', expected '%s'", i, rows[i], ex[i]);
    free(ex);
    if (n != n_expect)
        fail_msg("got %d rows, expected %d", n, n_expect);
    for (int i = 0; i < n; i++)
        free(rows[i]);
    free(rows);
}

#endif
