/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native joins against a naive nested-loop oracle.
 *
 * Each case writes a small EXPLAIN FORMATTED plan: a join node over two
 * scans, l(a int, b bigint, s string, d decimal(12,2)) and r(x int, y bigint,
 * t string, e decimal(12,2)), with the keys, join type, build side and join
 * condition under test. The plan parser types it; the join operator is built
 * directly from its constructor over two test sources that return generated
 * rows in batches of a chosen size (optionally with junk rows hidden by a
 * selection vector). The output rows, printed as text, must equal as a
 * multiset the rows the oracle derives from Spark's semantics:
 *
 *   a pair matches when every key pair is non-null and equal and the
 *   condition (b < y) is true (null is not true);
 *   Inner: matching pairs; LeftOuter/RightOuter/FullOuter: plus each
 *   unmatched preserved row once with nulls; LeftSemi/LeftAnti: left rows
 *   with / without a match; ExistenceJoin: every left row with exists;
 *   null-aware anti join (NOT IN): all left rows when the right side is
 *   empty, none when a right key is null, else the left rows whose key is
 *   not null and unmatched.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/ops.h"
#include "ember/plan.h"
#include "ops/internal.h"
#include "ops/join_engine.h"
#include "test_plan_common.h"

/* ------------------------------------------------------------------ rows */

typedef struct trow {
    bool null[4];
    int32_t a;
    int64_t b;
    char s[8];
    int64_t d; /* unscaled, scale 2 */
} trow;

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void gen_rows(trow *rows, int n, int key_domain, int null_pct) {
    static const char *const strs[] = {"", "a", "bb", "a longer one", "x"};
    for (int i = 0; i < n; i++) {
        trow *r = &rows[i];
        memset(r, 0, sizeof *r);
        for (int c = 0; c < 4; c++)
            r->null[c] = (int)(rnd() % 100) < null_pct;
        r->a = (int32_t)(rnd() % (uint64_t)key_domain) - 1;
        r->b = (int64_t)(rnd() % 100);
        snprintf(r->s, sizeof r->s, "%.7s", strs[rnd() % 5]);
        r->d = (int64_t)(rnd() % (uint64_t)key_domain) * 125 - 250;
    }
}

static void fmt_trow(const trow *r, char *buf, size_t cap) {
    char v[4][32];
    snprintf(v[0], 32, "%d", r->a);
    snprintf(v[1], 32, "%lld", (long long)r->b);
    snprintf(v[2], 32, "'%s'", r->s);
    snprintf(v[3], 32, "%lld", (long long)r->d);
    for (int c = 0; c < 4; c++)
        if (r->null[c])
            strcpy(v[c], "N");
    snprintf(buf, cap, "%s|%s|%s|%s", v[0], v[1], v[2], v[3]);
}
static const char NULL_ROW[] = "N|N|N|N";

/* ------------------------------------------------------------------ source
 * operator */

typedef struct src_state {
    const trow *rows;
    int n, pos, batch;
    bool sel_mode;
    em_batch *cur;
    volatile int *cancel_on_next; /* set to 1 when this source returns a batch */
} src_state;

static em_status src_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    (void)op;
    (void)ctx;
    (void)err;
    return EM_OK;
}

static em_status append_value(em_column *c, const trow *r, bool junk, em_error *err) {
    int col = c->type.id == EM_TYPE_INT      ? 0
              : c->type.id == EM_TYPE_LONG   ? 1
              : c->type.id == EM_TYPE_STRING ? 2
                                             : 3;
    if (!junk && r->null[col])
        return em_column_append_null(c, err);
    switch (col) {
    case 0: {
        int32_t v = junk ? -77 : r->a;
        return em_column_append_fixed(c, &v, err);
    }
    case 1: {
        int64_t v = junk ? -77 : r->b;
        return em_column_append_fixed(c, &v, err);
    }
    case 2:
        return junk ? em_column_append_bytes(c, "junk", 4, err)
                    : em_column_append_bytes(c, r->s, (int32_t)strlen(r->s), err);
    default: {
        em_i128 v = junk ? -77 : r->d;
        return em_column_append_fixed(c, &v, err);
    }
    }
}

static em_status src_next(em_op *op, em_batch **out, em_error *err) {
    src_state *st = op->state;
    em_batch_destroy(st->cur);
    st->cur = NULL;
    if (st->pos >= st->n)
        return EM_DONE;
    int m = st->n - st->pos < st->batch ? st->n - st->pos : st->batch;
    EM_TRY(em_batch_create(&op->schema, m * 2, op->ctx->pool, &st->cur, err));
    em_batch *b = st->cur;
    if (st->sel_mode)
        EM_TRY(em_batch_sel_reserve(b, m, err));
    int phys = 0;
    for (int i = 0; i < m; i++) {
        const trow *r = &st->rows[st->pos + i];
        if (st->sel_mode) {
            for (int c = 0; c < b->n_cols; c++)
                EM_TRY(append_value(&b->cols[c], r, true, err));
            phys++;
            b->sel[i] = phys;
        }
        for (int c = 0; c < b->n_cols; c++)
            EM_TRY(append_value(&b->cols[c], r, false, err));
        phys++;
    }
    b->n_rows = phys;
    if (st->sel_mode)
        b->n_sel = m;
    st->pos += m;
    if (st->cancel_on_next)
        *st->cancel_on_next = 1;
    *out = b;
    return EM_OK;
}

static void src_close(em_op *op) {
    src_state *st = op->state;
    if (st) {
        em_batch_destroy(st->cur);
        st->cur = NULL;
    }
}

static const em_op_vtab SRC_VTAB = {.name = "TestSource", .open = src_open, .next = src_next, .close = src_close};

static em_op *make_source(const em_plan_node *node, const trow *rows, int n, int batch,
                          bool sel_mode, bool stream_batches) {
    em_op *op = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_op_init(&SRC_VTAB, node, NULL, 0, sizeof(src_state), &op, &err), &err);
    src_state *st = op->state;
    st->rows = rows;
    st->n = n;
    /* operators produce at most EM_BATCH_CAP rows per batch; an input stream
     * (Spark's batches, a shuffle's blocks) may give more */
    st->batch = batch < EM_BATCH_CAP || stream_batches ? batch : EM_BATCH_CAP;
    st->sel_mode = sel_mode;
    return op;
}

/* ------------------------------------------------------------------ plans */

/* K_CAST, K_CAST_R: a computed key on the left / right side */
enum { K_INT, K_MULTI, K_STR, K_DEC, K_CAST, K_CAST_R, K_NONE };
static const char *const LKEYS[] = {"[1]: [a#1]",
                                    "[2]: [a#1, s#3]",
                                    "[1]: [s#3]",
                                    "[1]: [d#4]",
                                    "[1]: [cast(a#1 as bigint)]",
                                    "[1]: [b#2]",
                                    NULL};
static const char *const RKEYS[] = {"[1]: [x#5]", "[2]: [x#5, t#7]", "[1]: [t#7]",
                                    "[1]: [e#8]", "[1]: [y#6]",      "[1]: [cast(x#5 as bigint)]",
                                    NULL};
static const char COND[] = "(b#2 < y#6)";

typedef enum jt { J_INNER, J_LEFT, J_RIGHT, J_FULL, J_SEMI, J_ANTI, J_EXIST, J_COUNT } jt;
static const char *const JT_TEXT[] = {"Inner",
                                      "LeftOuter",
                                      "RightOuter",
                                      "FullOuter",
                                      "LeftSemi",
                                      "LeftAnti",
                                      "ExistenceJoin(exists#20)"};

typedef struct jcase {
    const char *op; /* BroadcastHashJoin, ShuffledHashJoin, SortMergeJoin,
                       BroadcastNestedLoopJoin */
    jt type;
    const char *build; /* "BuildLeft", "BuildRight" or "" */
    int keys;          /* K_* */
    const char *cond;  /* NULL: None */
    bool null_aware;   /* right child is a null-aware BroadcastExchange */
} jcase;

static void plan_text(const jcase *c, char *buf, size_t cap) {
    char keys[256] = "";
    if (c->keys != K_NONE)
        snprintf(keys, sizeof keys, "Left keys %s\nRight keys %s\n", LKEYS[c->keys],
                 RKEYS[c->keys]);
    int jid = c->null_aware ? 4 : 3;
    char right_tree[256], right_detail[512] = "";
    if (c->null_aware) {
        snprintf(right_tree, sizeof right_tree,
                 "+- BroadcastExchange (3)\n   +- Scan parquet "
                 "spark_catalog.default.r (2)\n");
        snprintf(right_detail, sizeof right_detail,
                 "(3) BroadcastExchange\nInput [4]: [x#5, y#6, t#7, e#8]\n"
                 "Arguments: HashedRelationBroadcastMode(List(input[0, int, "
                 "true]),true), "
                 "[plan_id=1]\n\n");
    } else {
        snprintf(right_tree, sizeof right_tree, "+- Scan parquet spark_catalog.default.r (2)\n");
    }
    snprintf(buf, cap,
             "== Physical Plan ==\n"
             "%s %s%s%s (%d)\n"
             ":- Scan parquet spark_catalog.default.l (1)\n"
             "%s"
             "\n\n"
             "(1) Scan parquet spark_catalog.default.l\n"
             "Output [4]: [a#1, b#2, s#3, d#4]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/l]\n"
             "ReadSchema: struct<a:int,b:bigint,s:string,d:decimal(12,2)>\n"
             "\n"
             "(2) Scan parquet spark_catalog.default.r\n"
             "Output [4]: [x#5, y#6, t#7, e#8]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/r]\n"
             "ReadSchema: struct<x:int,y:bigint,t:string,e:decimal(12,2)>\n"
             "\n"
             "%s"
             "(%d) %s\n"
             "%s"
             "Join type: %s\n"
             "Join condition: %s\n"
             "\n",
             c->op, JT_TEXT[c->type], c->build[0] ? " " : "", c->build, jid, right_tree,
             right_detail, jid, c->op, keys, JT_TEXT[c->type], c->cond ? c->cond : "None");
}

/* ------------------------------------------------------------------ oracle */

typedef struct rowset {
    char **rows;
    int n, cap;
} rowset;

static void em_rs_add(rowset *rs, const char *s) {
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 64;
        rs->rows = realloc(rs->rows, sizeof *rs->rows * (size_t)rs->cap);
        assert_non_null(rs->rows);
    }
    rs->rows[rs->n++] = strdup(s);
}
static void rs_free(rowset *rs) {
    for (int i = 0; i < rs->n; i++)
        free(rs->rows[i]);
    free(rs->rows);
    memset(rs, 0, sizeof *rs);
}
static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool key_eq(const trow *l, const trow *r, int col) {
    if (l->null[col] || r->null[col])
        return false;
    switch (col) {
    case 0:
        return l->a == r->a;
    case 2:
        return strcmp(l->s, r->s) == 0;
    default:
        return l->d == r->d;
    }
}

static bool oracle_match(const jcase *c, const trow *l, const trow *r) {
    switch (c->keys) {
    case K_INT:
        if (!key_eq(l, r, 0))
            return false;
        break;
    case K_MULTI:
        if (!key_eq(l, r, 0) || !key_eq(l, r, 2))
            return false;
        break;
    case K_STR:
        if (!key_eq(l, r, 2))
            return false;
        break;
    case K_DEC:
        if (!key_eq(l, r, 3))
            return false;
        break;
    case K_CAST:
        if (l->null[0] || r->null[1] || (int64_t)l->a != r->b)
            return false;
        break;
    case K_CAST_R:
        if (l->null[1] || r->null[0] || l->b != (int64_t)r->a)
            return false;
        break;
    default:
        break;
    }
    if (!c->cond)
        return true;
    if (strcmp(c->cond, COND) == 0)
        return !l->null[1] && !r->null[1] && l->b < r->b;
    /* "((a#1 = x#5) AND (b#2 < y#6))" */
    return key_eq(l, r, 0) && !l->null[1] && !r->null[1] && l->b < r->b;
}

static void oracle(const jcase *c, const trow *L, int nl, const trow *R, int nr, rowset *out) {
    char lb[128], rb[128], row[300];
    bool *rmatched = calloc((size_t)nr + 1, 1);
    bool right_null = false;
    for (int j = 0; j < nr; j++)
        right_null |= R[j].null[0];
    for (int i = 0; i < nl; i++) {
        fmt_trow(&L[i], lb, sizeof lb);
        bool any = false;
        for (int j = 0; j < nr; j++) {
            if (!oracle_match(c, &L[i], &R[j]))
                continue;
            any = true;
            rmatched[j] = true;
            if (c->type <= J_FULL) {
                fmt_trow(&R[j], rb, sizeof rb);
                snprintf(row, sizeof row, "%s|%s", lb, rb);
                em_rs_add(out, row);
            }
        }
        bool keep_left = false;
        switch (c->type) {
        case J_LEFT:
        case J_FULL:
            if (!any) {
                snprintf(row, sizeof row, "%s|%s", lb, NULL_ROW);
                em_rs_add(out, row);
            }
            break;
        case J_SEMI:
            keep_left = any;
            break;
        case J_ANTI:
            if (c->null_aware)
                keep_left = nr == 0 || (!right_null && !L[i].null[0] && !any);
            else
                keep_left = !any;
            break;
        case J_EXIST:
            snprintf(row, sizeof row, "%s|%s", lb, any ? "T" : "F");
            em_rs_add(out, row);
            break;
        default:
            break;
        }
        if (keep_left)
            em_rs_add(out, lb);
    }
    if (c->type == J_RIGHT || c->type == J_FULL)
        for (int j = 0; j < nr; j++)
            if (!rmatched[j]) {
                fmt_trow(&R[j], rb, sizeof rb);
                snprintf(row, sizeof row, "%s|%s", NULL_ROW, rb);
                em_rs_add(out, row);
            }
    free(rmatched);
}

/* ------------------------------------------------------------------ running */

static void fmt_cell(const em_column *c, int64_t r, char *buf, size_t cap) {
    if (!em_column_is_valid(c, r)) {
        snprintf(buf, cap, "N");
        return;
    }
    switch (c->type.id) {
    case EM_TYPE_INT:
        snprintf(buf, cap, "%d", ((const int32_t *)c->values->data)[r]);
        break;
    case EM_TYPE_LONG:
        snprintf(buf, cap, "%lld", (long long)((const int64_t *)c->values->data)[r]);
        break;
    case EM_TYPE_STRING: {
        const int32_t *off = em_column_offsets(c);
        snprintf(buf, cap, "'%.*s'", (int)(off[r + 1] - off[r]), em_column_chars(c) + off[r]);
        break;
    }
    case EM_TYPE_DECIMAL:
        snprintf(buf, cap, "%lld", (long long)((const em_i128 *)c->values->data)[r]);
        break;
    case EM_TYPE_BOOLEAN:
        snprintf(buf, cap, "%s", em_bit_get(c->values->data, r) ? "T" : "F");
        break;
    default:
        snprintf(buf, cap, "?");
    }
}

static void batch_rows(const em_batch *b, rowset *out) {
    char row[400], cell[64];
    for (int64_t k = 0; k < em_batch_rows(b); k++) {
        int64_t r = b->sel ? b->sel[k] : k;
        row[0] = 0;
        for (int c = 0; c < b->n_cols; c++) {
            fmt_cell(&b->cols[c], r, cell, sizeof cell);
            if (c)
                strcat(row, "|");
            strcat(row, cell);
        }
        em_rs_add(out, row);
    }
}

typedef struct run_opts {
    int batch_l, batch_r;
    bool sel_mode;
    int64_t budget;      /* < 0: unlimited */
    bool cancel_on_left; /* the left source cancels the task when it returns a batch */
    bool stream_batches; /* the sources' batches may exceed EM_BATCH_CAP */
} run_opts;

static em_op *make_join(const em_plan_node *node, em_op *l, em_op *r) {
    em_op *op = NULL;
    em_error err = {0};
    em_status s;
    if (node->kind == EM_NODE_SORT_MERGE_JOIN)
        s = em_op_sort_merge_join_create(node, l, r, &op, &err);
    else if (node->kind == EM_NODE_BROADCAST_NESTED_LOOP_JOIN ||
             node->kind == EM_NODE_CARTESIAN_PRODUCT)
        s = em_op_nested_loop_join_create(node, l, r, &op, &err);
    else
        s = em_op_hash_join_create(node, l, r, &op, &err);
    EM_ASSERT_OK(s, &err);
    return op;
}

/* Runs the join; returns its status and fills *got with the output rows. */
static em_status run_join(const jcase *c, const trow *L, int nl, const trow *R, int nr,
                          const run_opts *o, rowset *got, em_error *err, int64_t *rows_out) {
    char text[8192];
    plan_text(c, text, sizeof text);
    em_plan *plan = NULL;
    EM_ASSERT_OK(em_plan_parse(text, strlen(text), NULL, &plan, err), err);
    const em_plan_node *node = em_plan_root(plan);
    em_op *l = make_source(node->children[0], L, nl, o->batch_l, o->sel_mode, o->stream_batches);
    em_op *r = make_source(node->children[1], R, nr, o->batch_r, o->sel_mode, o->stream_batches);
    em_op *op = make_join(node, l, r);
    em_pool *pool = em_pool_create("join-test", NULL, o->budget);
    em_exec_ctx ctx = {0};
    ctx.pool = pool;
    volatile int cancel = 0;
    ctx.cancel = &cancel;
    if (o->cancel_on_left)
        ((src_state *)l->state)->cancel_on_next = &cancel;
    em_status s = em_op_open(op, &ctx, err);
    while (s == EM_OK) {
        em_batch *b = NULL;
        s = em_op_next(op, &b, err);
        if (s == EM_OK) {
            assert_true(em_batch_rows(b) > 0);
            if (em_batch_rows(b) > EM_BATCH_CAP)
                fail_msg("%s %s: a batch of %lld rows", c->op, JT_TEXT[c->type],
                         (long long)em_batch_rows(b));
            assert_int_equal(b->n_cols, op->n_output);
            batch_rows(b, got);
        }
    }
    if (rows_out)
        *rows_out = op->metrics.rows_out;
    em_op_destroy(op);
    assert_int_equal(em_pool_used(pool), 0);
    em_pool_destroy(pool);
    em_plan_destroy(plan);
    return s == EM_DONE ? EM_OK : s;
}

static void check_case(const jcase *c, const trow *L, int nl, const trow *R, int nr,
                       const run_opts *o) {
    rowset got = {0}, want = {0};
    em_error err = {0};
    em_status s = run_join(c, L, nl, R, nr, o, &got, &err, NULL);
    if (s != EM_OK)
        fail_msg("%s %s %s keys %d cond %s: %s", c->op, JT_TEXT[c->type], c->build, c->keys,
                 c->cond ? c->cond : "None", err.msg);
    oracle(c, L, nl, R, nr, &want);
    if (got.n > 1)
        qsort(got.rows, (size_t)got.n, sizeof *got.rows, cmp_str);
    if (want.n > 1)
        qsort(want.rows, (size_t)want.n, sizeof *want.rows, cmp_str);
    int bad = got.n != want.n;
    for (int i = 0; !bad && i < got.n; i++)
        bad = strcmp(got.rows[i], want.rows[i]) != 0;
    if (bad) {
        for (int i = 0; i < got.n || i < want.n; i++)
            if (i >= got.n || i >= want.n || strcmp(got.rows[i], want.rows[i])) {
                fprintf(stderr, "first difference at %d: got %s want %s\n", i,
                        i < got.n ? got.rows[i] : "(end)", i < want.n ? want.rows[i] : "(end)");
                break;
            }
        fail_msg("%s %s %s keys %d cond %s (nl %d nr %d batches %d/%d sel %d): %d "
                 "rows, want %d",
                 c->op, JT_TEXT[c->type], c->build, c->keys, c->cond ? c->cond : "None", nl, nr,
                 o->batch_l, o->batch_r, o->sel_mode, got.n, want.n);
    }
    rs_free(&got);
    rs_free(&want);
}

/* ------------------------------------------------------------------ tests */

static const char *const BUILDS[] = {"BuildLeft", "BuildRight"};

/* Every hash join kind x join type x build side x keys x condition, over
 * random data with nulls and duplicate keys, and over empty sides. */
static void test_hash_joins_matrix(void **state) {
    (void)state;
    const char *ops[] = {"BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin"};
    trow L[60], R[45];
    gen_rows(L, 60, 8, 12);
    gen_rows(R, 45, 8, 12);
    const int sizes[][2] = {{60, 45}, {0, 45}, {60, 0}, {0, 0}, {1, 1}};
    int n_cases = 0;
    for (int o = 0; o < 3; o++)
        for (int t = 0; t < J_COUNT; t++)
            for (int b = 0; b < 2; b++) {
                if (o == 2 && b == 1)
                    continue; /* SortMergeJoin has no build side */
                for (int k = 0; k < K_NONE; k++)
                    for (int cnd = 0; cnd < 2; cnd++)
                        for (int z = 0; z < 5; z++) {
                            jcase c = {ops[o], (jt)t, o == 2 ? "" : BUILDS[b], k, cnd ? COND : NULL,
                                       false};
                            run_opts ro = {7 + z, 5 + 2 * z, (z & 1) != 0, -1, false, false};
                            check_case(&c, L, sizes[z][0], R, sizes[z][1], &ro);
                            n_cases++;
                        }
            }
    assert_true(n_cases > 1000);
}

/* Batch sizes from one row to larger than the inputs, with and without
 * selection vectors. */
static void test_batch_boundaries(void **state) {
    (void)state;
    trow L[40], R[33];
    gen_rows(L, 40, 5, 10);
    gen_rows(R, 33, 5, 10);
    const int bs[] = {1, 2, 3, 4, 64};
    for (int t = 0; t < J_COUNT; t++)
        for (int i = 0; i < 5; i++)
            for (int sel = 0; sel < 2; sel++)
                for (int cnd = 0; cnd < 2; cnd++) {
                    jcase c = {"BroadcastHashJoin", (jt)t, "BuildRight", K_INT,
                               cnd ? COND : NULL,   false};
                    run_opts ro = {bs[i], bs[4 - i], sel != 0, -1, false, false};
                    check_case(&c, L, 40, R, 33, &ro);
                    c.build = "BuildLeft";
                    check_case(&c, L, 40, R, 33, &ro);
                }
}

/* Stream batches of more than EM_BATCH_CAP rows (Spark's Arrow batches and
 * Ember's shuffle blocks may be larger), each row with many candidates: a
 * step's pairs still fit its scratch (a batch's worth), every join type. */
static void test_stream_batches_over_cap(void **state) {
    (void)state;
    enum { NL = 3 * EM_BATCH_CAP + 5, NR = 40 };
    trow *L = malloc(sizeof *L * NL);
    trow R[NR];
    gen_rows(L, NL, 4, 10);
    gen_rows(R, NR, 4, 10);
    for (int t = 0; t < J_COUNT; t++)
        for (int sel = 0; sel < 2; sel++)
            for (int cnd = 0; cnd < 2; cnd++) {
                jcase c = {"BroadcastHashJoin", (jt)t, "BuildRight", K_INT, cnd ? COND : NULL, false};
                run_opts ro = {NL, NR, sel != 0, -1, false, true};
                check_case(&c, L, NL, R, NR, &ro);
            }
    free(L);
}

/* Nested-loop joins: cross product, a non-equi condition, an equality in
 * the condition, every join type and build side. */
static void test_nested_loop_joins(void **state) {
    (void)state;
    trow L[25], R[18];
    gen_rows(L, 25, 6, 15);
    gen_rows(R, 18, 6, 15);
    const char *conds[] = {NULL, COND, "((a#1 = x#5) AND (b#2 < y#6))"};
    const int sizes[][2] = {{25, 18}, {0, 18}, {25, 0}, {0, 0}};
    for (int t = 0; t < J_COUNT; t++)
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 3; k++)
                for (int z = 0; z < 4; z++) {
                    jcase c = {
                        "BroadcastNestedLoopJoin", (jt)t, BUILDS[b], K_NONE, conds[k], false};
                    run_opts ro = {4 + z, 3 + z, z == 1, -1, false, false};
                    check_case(&c, L, sizes[z][0], R, sizes[z][1], &ro);
                }
    /* CartesianProduct: no join type and no build side printed */
    jcase c = {"CartesianProduct", J_INNER, "", K_NONE, NULL, false};
    run_opts ro = {4, 5, false, -1, false, false};
    check_case(&c, L, 25, R, 18, &ro);
}

/* One key with 10,000 matches (skew) on either side: output in bounded batches.
 */
static void test_skewed_key(void **state) {
    (void)state;
    int nbig = 10000;
    trow *big = calloc((size_t)nbig, sizeof *big);
    trow small[12];
    gen_rows(big, nbig, 1, 0); /* every key a == -1 */
    gen_rows(small, 12, 3, 0); /* keys -1, 0, 1 */
    for (int t = 0; t < J_COUNT; t++) {
        jcase c = {"BroadcastHashJoin", (jt)t, "BuildRight", K_INT, NULL, false};
        run_opts ro = {5, 1000, false, -1, false, false};
        check_case(&c, small, 12, big, nbig, &ro);
        c.cond = COND;
        check_case(&c, small, 12, big, nbig, &ro);
        c.build = "BuildLeft";
        check_case(&c, big, nbig, small, 12, &ro);
    }
    /* the metrics count what was produced */
    rowset got = {0};
    em_error err = {0};
    int64_t rows_out = 0;
    jcase c = {"ShuffledHashJoin", J_INNER, "BuildLeft", K_INT, NULL, false};
    run_opts ro = {1000, 3, true, -1, false, false};
    EM_ASSERT_OK(run_join(&c, big, nbig, small, 12, &ro, &got, &err, &rows_out), &err);
    int small_neg = 0;
    for (int i = 0; i < 12; i++)
        small_neg += small[i].a == -1;
    assert_true(small_neg > 0);
    assert_int_equal(rows_out, (int64_t)small_neg * nbig);
    assert_int_equal(got.n, small_neg * nbig);
    rs_free(&got);
    free(big);
}

/* Null-aware anti join (NOT IN): the three regimes of the build side. */
static void test_null_aware_anti(void **state) {
    (void)state;
    trow L[30], R[20];
    gen_rows(L, 30, 6, 20);
    gen_rows(R, 20, 6, 0);
    jcase c = {"BroadcastHashJoin", J_ANTI, "BuildRight", K_INT, NULL, true};
    run_opts ro = {4, 3, false, -1, false, false};
    /* no null on the right: left rows with a non-null unmatched key */
    check_case(&c, L, 30, R, 20, &ro);
    /* empty right: every left row, null keys too */
    check_case(&c, L, 30, R, 0, &ro);
    /* a null on the right: nothing */
    R[7].null[0] = true;
    check_case(&c, L, 30, R, 20, &ro);
    rowset got = {0};
    em_error err = {0};
    EM_ASSERT_OK(run_join(&c, L, 30, R, 20, &ro, &got, &err, NULL), &err);
    assert_int_equal(got.n, 0);
    rs_free(&got);
    /* the same rows without null-awareness keep null-key rows */
    c.null_aware = false;
    check_case(&c, L, 30, R, 20, &ro);
    int left_null = 0;
    for (int i = 0; i < 30; i++)
        left_null += L[i].null[0];
    assert_true(left_null > 0);
}

/* The shared TPC-H plans: q16's NOT IN is null-aware, q21/q22's anti joins are
 * not. */
static void test_null_aware_detection(void **state) {
    (void)state;
    for (int d = 0; d < PLAN_TEST_N_DIRS; d++) {
        const int qs[] = {16, 21, 22};
        for (int qi = 0; qi < 3; qi++) {
            em_plan *plan = plan_test_parse_shared(plan_test_dirs[d], qs[qi]);
            int n_aware = 0, n_anti = 0;
            for (int id = 1; id <= em_plan_max_id(plan); id++) {
                const em_plan_node *n = em_plan_node_by_id(plan, id);
                if (!n || n->join_type != EM_JOIN_LEFT_ANTI)
                    continue;
                n_anti++;
                n_aware += em_jn_node_null_aware(n);
            }
            assert_true(n_anti > 0);
            if (qs[qi] == 16)
                assert_int_equal(n_aware, n_anti);
            else
                assert_int_equal(n_aware, 0);
            em_plan_destroy(plan);
        }
    }
}

/* The JSON's BroadcastHashJoin node as Ember reads it, with its build side's
 * BroadcastExchange made a fragment input: extra/s2_in_subquery's NOT IN keeps
 * isNullAwareAntiJoin though the exchange's null-aware mode is no longer in
 * the plan (an AQE stage or a fragment boundary hides it). */
static void test_null_aware_structured(void **state) {
    (void)state;
    const char *src = getenv("EMBER_SOURCE");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/spark-json/extra/s2_in_subquery.json",
             src && *src ? src : "..");
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc)
        fail_msg("%s: %s", path, jerr.text);
    /* root: WholeStageCodegen > BroadcastHashJoin (NOT IN) >
     *   [.., InputAdapter > BroadcastExchange] */
    json_t *bhj = json_array_get(json_object_get(json_object_get(doc, "root"), "children"), 0);
    json_t *fields = json_object_get(bhj, "fields");
    assert_true(json_is_true(json_object_get(fields, "isNullAwareAntiJoin")));
    json_t *adapter = json_array_get(json_object_get(bhj, "children"), 1);
    json_t *bx = json_array_get(json_object_get(adapter, "children"), 0);
    assert_non_null(strstr(json_string_value(json_object_get(bx, "class")), "BroadcastExchange"));
    json_object_set_new(bx, "input", json_integer(0));
    json_object_del(bx, "children");
    char *text = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(doc);
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_read_json(text, strlen(text), NULL, &p, &err), &err);
    free(text);
    int n_anti = 0;
    for (int id = 1; id <= em_plan_max_id(p); id++) {
        const em_plan_node *n = em_plan_node_by_id(p, id);
        if (!n || n->join_type != EM_JOIN_LEFT_ANTI)
            continue;
        n_anti++;
        assert_true(n->null_aware_anti);
        assert_true(em_jn_node_null_aware(n));
    }
    assert_int_equal(n_anti, 1);
    em_plan_destroy(p);
}

/* A build side over the pool's budget fails with EM_ERR_OOM_BUDGET naming the
 * join. */
static void test_budget(void **state) {
    (void)state;
    int n = 20000;
    trow *big = calloc((size_t)n, sizeof *big);
    trow small[4];
    gen_rows(big, n, 1000, 5);
    gen_rows(small, 4, 1000, 0);
    jcase c = {"BroadcastHashJoin", J_INNER, "BuildRight", K_INT, NULL, false};
    run_opts ro = {1024, 1024, false, 200 * 1024, false, false};
    rowset got = {0};
    em_error err = {0};
    em_status s = run_join(&c, small, 4, big, n, &ro, &got, &err, NULL);
    assert_int_equal(s, EM_ERR_OOM_BUDGET);
    assert_non_null(strstr(err.msg, "BroadcastHashJoin (3)"));
    rs_free(&got);
    /* the same join fits a larger budget */
    ro.budget = 64 * 1024 * 1024;
    check_case(&c, small, 4, big, n, &ro);
    free(big);
}

/* Parses a one-column-per-side BroadcastHashJoin Inner BuildRight plan:
 * l(<lname>#1 <ltype>) and r(<rname>#5 <rtype>), keys as given. */
static em_plan *parse_single_column_join(const char *lname, const char *ltype, const char *rname,
                                         const char *rtype, const char *lkey, const char *rkey) {
    char text[4096];
    snprintf(text, sizeof text,
             "== Physical Plan ==\n"
             "BroadcastHashJoin Inner BuildRight (3)\n"
             ":- Scan parquet spark_catalog.default.l (1)\n"
             "+- Scan parquet spark_catalog.default.r (2)\n"
             "\n\n"
             "(1) Scan parquet spark_catalog.default.l\n"
             "Output [1]: [%s#1]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/l]\n"
             "ReadSchema: struct<%s:%s>\n"
             "\n"
             "(2) Scan parquet spark_catalog.default.r\n"
             "Output [1]: [%s#5]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/r]\n"
             "ReadSchema: struct<%s:%s>\n"
             "\n"
             "(3) BroadcastHashJoin\n"
             "Left keys [1]: [%s]\n"
             "Right keys [1]: [%s]\n"
             "Join type: Inner\n"
             "Join condition: None\n\n",
             lname, lname, ltype, rname, rname, rtype, lkey, rkey);
    em_plan *plan = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(text, strlen(text), NULL, &plan, &err), &err);
    return plan;
}

/* A cancellation is noticed inside a long next call in which no pair passes
 * the condition (all of a skewed key's pairs fail it). */
static void test_cancel_inside_next(void **state) {
    (void)state;
    int n = 5000;
    trow *big = calloc((size_t)n, sizeof *big);
    trow small[8];
    gen_rows(big, n, 1, 0);
    gen_rows(small, 8, 1, 0);
    for (int i = 0; i < 8; i++)
        small[i].b = 1000; /* b < y never holds */
    jcase c = {"BroadcastHashJoin", J_INNER, "BuildRight", K_INT, COND, false};
    run_opts ro = {8, 512, false, -1, false, false};
    check_case(&c, small, 8, big, n, &ro); /* no rows */
    ro.cancel_on_left = true;
    rowset got = {0};
    em_error err = {0};
    assert_int_equal(run_join(&c, small, 8, big, n, &ro, &got, &err, NULL), EM_ERR_CANCELLED);
    assert_non_null(strstr(err.msg, "BroadcastHashJoin (3)"));
    assert_int_equal(got.n, 0);
    rs_free(&got);
    free(big);
}

static int cmp_key_a(const void *x, const void *y) {
    const trow *a = x, *b = y;
    if (a->null[0] || b->null[0])
        return (int)b->null[0] - (int)a->null[0]; /* nulls first */
    return (a->a > b->a) - (a->a < b->a);
}

/* Field f ('|'-separated) of an output row as a sort key: nulls first. */
static int64_t row_key(const char *row, int f) {
    for (int i = 0; i < f; i++)
        row = strchr(row, '|') + 1;
    return row[0] == 'N' ? INT64_MIN : strtoll(row, NULL, 10);
}

/* A sort-merge join over inputs sorted on the keys keeps them sorted (its
 * output ordering in Spark): the left key for every type but RightOuter,
 * whose output follows the right key; outer rows stand where their stream
 * row stands, with and without a condition. */
static void test_sort_merge_order(void **state) {
    (void)state;
    trow L[70], R[50];
    gen_rows(L, 70, 9, 12);
    gen_rows(R, 50, 9, 12);
    qsort(L, 70, sizeof *L, cmp_key_a);
    qsort(R, 50, sizeof *R, cmp_key_a);
    for (int t = 0; t < J_COUNT; t++) {
        if (t == J_FULL)
            continue; /* no output ordering */
        for (int cnd = 0; cnd < 2; cnd++)
            for (int bsz = 1; bsz <= 9; bsz += 4) {
                jcase c = {"SortMergeJoin", (jt)t, "", K_INT, cnd ? COND : NULL, false};
                run_opts ro = {bsz, bsz + 1, bsz == 5, -1, false, false};
                check_case(&c, L, 70, R, 50, &ro);
                rowset got = {0};
                em_error err = {0};
                EM_ASSERT_OK(run_join(&c, L, 70, R, 50, &ro, &got, &err, NULL), &err);
                int field = t == J_RIGHT ? 4 : 0;
                assert_true(got.n > 0);
                for (int i = 1; i < got.n; i++)
                    if (row_key(got.rows[i - 1], field) > row_key(got.rows[i], field))
                        fail_msg("SortMergeJoin %s cond %d batch %d: row %d (%s) after %s",
                                 JT_TEXT[t], cnd, bsz, i, got.rows[i], got.rows[i - 1]);
                rs_free(&got);
            }
    }
}

/* Keys of different types on the two sides are rejected at open. */
static void test_key_type_mismatch(void **state) {
    (void)state;
    em_plan *plan = parse_single_column_join("a", "int", "x", "string", "a#1", "x#5");
    em_error err = {0};
    const em_plan_node *node = em_plan_root(plan);
    em_op *op = make_join(node, make_source(node->children[0], NULL, 0, 1, false, false),
                          make_source(node->children[1], NULL, 0, 1, false, false));
    em_exec_ctx ctx = {0};
    assert_int_equal(em_op_open(op, &ctx, &err), EM_ERR_TYPE);
    assert_non_null(strstr(err.msg, "BroadcastHashJoin (3)"));
    assert_non_null(strstr(err.msg, "int"));
    em_op_destroy(op);
    em_plan_destroy(plan);
}

/* A source returning one prebuilt batch (owned by the test). */
static em_status one_next(em_op *op, em_batch **out, em_error *err) {
    (void)err;
    em_batch **b = op->state;
    if (!*b)
        return EM_DONE;
    *out = *b;
    *b = NULL;
    return EM_OK;
}
static const em_op_vtab ONE_VTAB = {.name = "OneBatch", .open = src_open, .next = one_next, .close = NULL};

static em_batch *double_batch(const double *v, const bool *null, int n) {
    em_schema s;
    em_error err = {0};
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "v", em_type_make(EM_TYPE_DOUBLE), true, &err), &err);
    em_batch *b = NULL;
    EM_ASSERT_OK(em_batch_create(&s, n, NULL, &b, &err), &err);
    em_schema_reset(&s);
    for (int i = 0; i < n; i++) {
        if (null[i])
            EM_ASSERT_OK(em_column_append_null(&b->cols[0], &err), &err);
        else
            EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &v[i], &err), &err);
    }
    b->n_rows = n;
    return b;
}

/* Double keys as Spark plans them (wrapped in the normalization calls):
 * -0.0 joins 0.0, NaN joins NaN, null joins nothing. */
static void test_double_keys(void **state) {
    (void)state;
    em_plan *plan = parse_single_column_join(
        "f", "double", "g", "double", "knownfloatingpointnormalized(normalizenanandzero(f#1))",
        "knownfloatingpointnormalized(normalizenanandzero(g#5))");
    em_error err = {0};
    const em_plan_node *node = em_plan_root(plan);
    const double lv[] = {0.0, -0.0, 0.0 / 0.0, 0, 1.5, 3.0};
    const bool ln[] = {false, false, false, true, false, false};
    const double rv[] = {-0.0, 0.0 / 0.0, 1.5, 2.0, 0, 1.5};
    const bool rn[] = {false, false, false, false, true, false};
    em_op *l = NULL, *r = NULL;
    EM_ASSERT_OK(em_op_init(&ONE_VTAB, node->children[0], NULL, 0, sizeof(em_batch *), &l, &err),
                 &err);
    EM_ASSERT_OK(em_op_init(&ONE_VTAB, node->children[1], NULL, 0, sizeof(em_batch *), &r, &err),
                 &err);
    em_batch *lb = double_batch(lv, ln, 6), *rb = double_batch(rv, rn, 6);
    *(em_batch **)l->state = lb;
    *(em_batch **)r->state = rb;
    em_op *op = make_join(node, l, r);
    em_exec_ctx ctx = {0};
    EM_ASSERT_OK(em_op_open(op, &ctx, &err), &err);
    em_batch_list got;
    EM_ASSERT_OK(em_op_collect(op, NULL, &got, &err), &err);
    /* 0.0 and -0.0 each match -0.0; NaN matches NaN; 1.5 matches both 1.5s */
    assert_int_equal(got.n_rows, 5);
    int64_t nan_pairs = 0;
    for (int64_t b = 0; b < got.n_batches; b++) {
        const em_batch *ob = got.batches[b];
        for (int64_t i = 0; i < ob->n_rows; i++) {
            double x = ((const double *)ob->cols[0].values->data)[i];
            double y = ((const double *)ob->cols[1].values->data)[i];
            assert_true(em_column_is_valid(&ob->cols[0], i));
            assert_true(x == y || (x != x && y != y));
            nan_pairs += x != x;
        }
    }
    assert_int_equal(nan_pairs, 1);
    em_batch_list_reset(&got);
    em_op_destroy(op);
    em_batch_destroy(lb);
    em_batch_destroy(rb);
    em_plan_destroy(plan);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_joins_matrix),
        cmocka_unit_test(test_batch_boundaries),
        cmocka_unit_test(test_stream_batches_over_cap),
        cmocka_unit_test(test_nested_loop_joins),
        cmocka_unit_test(test_skewed_key),
        cmocka_unit_test(test_null_aware_anti),
        cmocka_unit_test(test_null_aware_detection),
        cmocka_unit_test(test_null_aware_structured),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_double_keys),
        cmocka_unit_test(test_cancel_inside_next),
        cmocka_unit_test(test_sort_merge_order),
        cmocka_unit_test(test_key_type_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
