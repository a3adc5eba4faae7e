/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every join on rows: BroadcastHashJoin, ShuffledHashJoin, SortMergeJoin,
 * BroadcastNestedLoopJoin and CartesianProduct, with every join type
 * (Inner, Cross, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti,
 * ExistenceJoin, the null-aware anti join) and either build side.
 *
 * One side is stored ("build": the side the plan builds; for a sort-merge
 * join the side the native one builds, so both engines stream the same
 * side and keep its order), the other streamed row by row. A pair (left
 * row, right row) matches when every key pair is non-null and equal as
 * grouping keys are (floating-point keys normalized: NaN = NaN, -0.0 =
 * 0.0, whether or not Spark wrapped them in its normalization calls) and the join condition is true. Keys only narrow the candidates:
 * the build rows are chained by a hash of their keys (rows with a null key
 * are never candidates), and each candidate is then checked, so this is a
 * nested loop over the candidates, as obviously right as one over all rows.
 *
 *   Inner/Cross        matching pairs
 *   outer joins        plus each preserved row without a match, once, with
 *                      nulls for the other side (stream rows right after
 *                      their pairs, build rows after the stream ends)
 *   LeftSemi/LeftAnti  left rows with / without a match
 *   ExistenceJoin      every left row with exists = it has a match
 *   null-aware anti    (Spark's single-column NOT IN, build side right, no
 *                      condition) every left row when the right side is
 *                      empty; none when a right key is null; else left rows
 *                      whose key is not null and unmatched
 *
 * A BroadcastNestedLoopJoin decides the build rows it keeps over every
 * stream task of its stage, as the native one does (nlj_matches.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/join_engine.h"
#include "ops/nlj_matches.h"
#include "ops/op_util.h"
#include "ops/row_internal.h"

enum { PH_BUILD, PH_STREAM, PH_TAIL, PH_DONE };

typedef struct join_state {
    em_join_type type;
    int build;  /* 0 = left, 1 = right */
    bool exist_kind, keep_stream, keep_build, null_aware;
    int n_keys;
    em_rexpr **keys[2];
    em_type *key_types;
    em_rexpr *cond;
    int n_side[2];
    const em_expr **pair_attrs;
    em_type *pair_types;
    int *out_map; /* output column -> pair column, -1 = exists */
    /* build side: [row..., keys...] */
    em_type *build_types;
    row_store rows;
    bool has_null_key;
    bool *matched;
    int64_t *heads, *chain; /* hash chains (n_heads a power of two) */
    uint32_t *hashes;
    int64_t n_heads;
    /* stream side */
    int phase;
    const em_datum *srow;
    em_datum *skeys;
    bool skey_null;
    bool smatched;
    int64_t cand; /* next candidate build row, -1 = none */
    uint32_t shash;
    int64_t tail;
    em_datum *pair, *out;
    em_row_arena scratch;
} join_state;

static bool preserved(em_join_type t, int side) {
    return t == EM_JOIN_FULL_OUTER || (side == 0 ? t == EM_JOIN_LEFT_OUTER : t == EM_JOIN_RIGHT_OUTER);
}

static int build_side_of(const em_plan_node *node) {
    switch (node->kind) {
    case EM_NODE_SORT_MERGE_JOIN:
        return node->join_type == EM_JOIN_RIGHT_OUTER ? 0 : 1;
    case EM_NODE_CARTESIAN_PRODUCT:
        return 1;
    default:
        return node->build_side == EM_BUILD_LEFT ? 0 : 1;
    }
}

static em_status bind_keys(em_row_op *op, join_state *st, em_error *err) {
    const em_plan_field *lk = em_plan_node_field(op->node, EM_FIELD_LEFT_KEYS);
    const em_plan_field *rk = em_plan_node_field(op->node, EM_FIELD_RIGHT_KEYS);
    st->n_keys = lk ? lk->n_exprs : 0;
    if ((rk ? rk->n_exprs : 0) != st->n_keys)
        return EM_FAIL(err, EM_ERR_PARSE, "Left keys and Right keys differ in length");
    st->key_types = calloc((size_t)st->n_keys + 1, sizeof *st->key_types);
    if (!st->key_types)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int side = 0; side < 2; side++) {
        const em_plan_field *f = side ? rk : lk;
        const em_row_op *c = op->children[side];
        st->keys[side] = calloc((size_t)st->n_keys + 1, sizeof *st->keys[side]);
        if (!st->keys[side])
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        for (int k = 0; k < st->n_keys; k++)
            EM_TRY(em_rexpr_bind(f->exprs[k], c->output, c->n_output,
                                 &op->ctx->expr_opts, &st->keys[side][k], err));
    }
    for (int k = 0; k < st->n_keys; k++) {
        em_type a = em_rexpr_type(st->keys[0][k]), b = em_rexpr_type(st->keys[1][k]);
        if (!em_type_equal(a, b)) {
            char ta[64], tb[64];
            em_type_format(a, ta, sizeof ta);
            em_type_format(b, tb, sizeof tb);
            return EM_FAIL(err, EM_ERR_TYPE, "join key %d has type %s on the left and %s on the right",
                           k + 1, ta, tb);
        }
        st->key_types[k] = a;
    }
    return EM_OK;
}

static em_status join_bind(em_row_op *op, join_state *st, em_error *err) {
    const em_plan_node *node = op->node;
    st->type = node->join_type;
    if (st->type == EM_JOIN_NONE || st->type == EM_JOIN_CROSS)
        st->type = EM_JOIN_INNER;
    if (st->type == EM_JOIN_OTHER)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "join type %s",
                       node->join_type_text ? node->join_type_text : "?");
    st->build = build_side_of(node);
    st->exist_kind = st->type == EM_JOIN_LEFT_SEMI || st->type == EM_JOIN_LEFT_ANTI ||
                     st->type == EM_JOIN_EXISTENCE;
    st->keep_stream = preserved(st->type, 1 - st->build);
    st->keep_build = preserved(st->type, st->build);
    EM_TRY(bind_keys(op, st, err));
    const em_plan_field *cf = em_plan_node_field(node, EM_FIELD_JOIN_CONDITION);
    const em_expr *cond = cf && cf->n_exprs > 0 ? cf->exprs[0] : NULL;
    st->null_aware = em_jn_node_null_aware(node) && st->build == 1 && !cond;
    const em_row_op *l = op->children[0], *r = op->children[1];
    st->n_side[0] = l->n_output;
    st->n_side[1] = r->n_output;
    int np = l->n_output + r->n_output;
    st->pair_attrs = calloc((size_t)np + 1, sizeof *st->pair_attrs);
    st->pair_types = calloc((size_t)np + 1, sizeof *st->pair_types);
    st->pair = calloc((size_t)np + 1, sizeof *st->pair);
    st->out = calloc((size_t)op->n_output + 1, sizeof *st->out);
    st->out_map = calloc((size_t)op->n_output + 1, sizeof *st->out_map);
    if (!st->pair_attrs || !st->pair_types || !st->pair || !st->out || !st->out_map)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < np; i++) {
        const em_row_op *c = i < l->n_output ? l : r;
        int ci = i < l->n_output ? i : i - l->n_output;
        st->pair_attrs[i] = c->output[ci];
        st->pair_types[i] = c->types[ci];
    }
    for (int i = 0; i < op->n_output; i++) {
        int64_t id = opu_expr_id(op->output[i]);
        if (st->type == EM_JOIN_EXISTENCE && node->exists_attr && id == node->exists_attr->id) {
            st->out_map[i] = -1;
            op->types[i] = em_type_make(EM_TYPE_BOOLEAN);
            continue;
        }
        int p = em_opu_attr_index(st->pair_attrs, st->exist_kind ? l->n_output : np, id);
        if (p < 0)
            return EM_FAIL(err, EM_ERR_BIND, "output attribute %s#%lld is not an input",
                           op->output[i]->name ? op->output[i]->name : "?", (long long)id);
        st->out_map[i] = p;
        op->types[i] = st->pair_types[p];
    }
    if (cond)
        EM_TRY(em_rexpr_bind(cond, st->pair_attrs, np, &op->ctx->expr_opts, &st->cond, err));
    /* build rows are stored with their keys */
    int nb = st->n_side[st->build];
    st->build_types = calloc((size_t)(nb + st->n_keys) + 1, sizeof *st->build_types);
    st->skeys = calloc((size_t)st->n_keys + 1, sizeof *st->skeys);
    if (!st->build_types || !st->skeys)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    memcpy(st->build_types, op->children[st->build]->types, sizeof *st->build_types * (size_t)nb);
    memcpy(st->build_types + nb, st->key_types, sizeof *st->key_types * (size_t)st->n_keys);
    em_rs_init(&st->rows, nb + st->n_keys, st->build_types, rop_pool(op));
    em_row_arena_init(&st->scratch, rop_pool(op));
    return EM_OK;
}

static em_status join_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    join_state *st = op->state;
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    EM_TRY(em_row_op_open(op->children[1], ctx, err));
    if (join_bind(op, st, err) != EM_OK)
        return em_rop_fail(op, err);
    st->phase = PH_BUILD;
    return EM_OK;
}

/* Evaluates one side's keys over row into out (floating-point values
 * normalized); *has_null when one is null. */
static em_status eval_keys(join_state *st, int side, const em_datum *row, em_datum *out,
                           bool *has_null, em_error *err) {
    *has_null = false;
    for (int k = 0; k < st->n_keys; k++) {
        EM_TRY(em_rexpr_eval(st->keys[side][k], row, &st->scratch, &out[k], err));
        em_type_id t = st->key_types[k].id;
        if (out[k].is_null)
            *has_null = true;
        else if ((t == EM_TYPE_DOUBLE || t == EM_TYPE_FLOAT) && out[k].v.f64 == 0.0)
            out[k].v.f64 = 0.0;
        else if ((t == EM_TYPE_DOUBLE || t == EM_TYPE_FLOAT) && isnan(out[k].v.f64))
            out[k].v.f64 = NAN;
    }
    return EM_OK;
}

static uint32_t hash_keys(const join_state *st, const em_datum *keys) {
    uint32_t h = 42;
    for (int k = 0; k < st->n_keys; k++)
        h = em_datum_murmur3(&keys[k], st->key_types[k], h);
    return h;
}

static em_status do_build(em_row_op *op, join_state *st, em_error *err) {
    em_row_op *child = op->children[st->build];
    int nb = st->n_side[st->build];
    em_datum *tmp = calloc((size_t)(nb + st->n_keys) + 1, sizeof *tmp);
    if (!tmp)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_status s = EM_OK;
    for (;;) {
        const em_datum *in = NULL;
        s = em_row_op_next(child, &in, err);
        if (s == EM_DONE) {
            s = EM_OK;
            break;
        }
        if (s != EM_OK)
            break;
        em_row_arena_clear(&st->scratch);
        bool null_key = false;
        memcpy(tmp, in, sizeof *tmp * (size_t)nb);
        if ((s = eval_keys(st, st->build, in, tmp + nb, &null_key, err)) != EM_OK)
            break;
        st->has_null_key |= null_key;
        if ((s = em_rs_add(&st->rows, tmp, NULL, err)) != EM_OK)
            break;
    }
    free(tmp);
    EM_TRY(s);
    int64_t n = st->rows.n_rows;
    int64_t heads = 16;
    while (heads < 2 * n)
        heads *= 2;
    int64_t bytes = heads * 8 + n * 13 + 8;
    EM_TRY(em_pool_reserve(rop_pool(op), bytes, err));
    st->heads = malloc(sizeof *st->heads * (size_t)heads);
    st->chain = malloc(sizeof *st->chain * (size_t)(n + 1));
    st->hashes = malloc(sizeof *st->hashes * (size_t)(n + 1));
    st->matched = calloc((size_t)n + 1, sizeof *st->matched);
    st->n_heads = heads;
    if (!st->heads || !st->chain || !st->hashes || !st->matched)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int64_t h = 0; h < heads; h++)
        st->heads[h] = -1;
    /* chained in reverse so a chain lists rows in build order */
    for (int64_t r = n - 1; r >= 0; r--) {
        const em_datum *keys = rs_row(&st->rows, r) + nb;
        bool null_key = false;
        for (int k = 0; k < st->n_keys; k++)
            null_key |= keys[k].is_null;
        st->chain[r] = -1;
        if (null_key)
            continue;
        uint32_t h = hash_keys(st, keys);
        st->hashes[r] = h;
        st->chain[r] = st->heads[h & (heads - 1)];
        st->heads[h & (heads - 1)] = r;
    }
    rop_note_peak(op, rs_bytes(&st->rows) + bytes);
    return EM_OK;
}

/* The first candidate at or after build row r (following its chain). */
static int64_t next_candidate(const join_state *st, int64_t r) {
    if (st->n_keys == 0)
        return r < st->rows.n_rows ? r : -1;
    int nb = st->n_side[st->build];
    for (; r >= 0; r = st->chain[r]) {
        if (st->hashes[r] != st->shash)
            continue;
        const em_datum *keys = rs_row(&st->rows, r) + nb;
        bool eq = true;
        for (int k = 0; k < st->n_keys && eq; k++)
            eq = em_datum_equal_grouping(&keys[k], &st->skeys[k], st->key_types[k]);
        if (eq)
            return r;
    }
    return -1;
}

static int64_t after(const join_state *st, int64_t r) {
    return st->n_keys == 0 ? next_candidate(st, r + 1) : next_candidate(st, st->chain[r]);
}

/* The pair of stream row s and build row b (either NULL: nulls). */
static void make_pair(join_state *st, const em_datum *srow, const em_datum *brow) {
    int sides[2][2] = {{0, st->n_side[0]}, {st->n_side[0], st->n_side[1]}};
    for (int side = 0; side < 2; side++) {
        const em_datum *src = side == st->build ? brow : srow;
        for (int c = 0; c < sides[side][1]; c++)
            st->pair[sides[side][0] + c] = src ? src[c] : em_datum_null();
    }
}

static const em_datum *output_row(em_row_op *op, join_state *st, bool exists) {
    for (int i = 0; i < op->n_output; i++) {
        int p = st->out_map[i];
        if (p >= 0) {
            st->out[i] = st->pair[p];
        } else {
            st->out[i] = em_datum_null();
            st->out[i].is_null = false;
            st->out[i].v.b = exists;
        }
    }
    return st->out;
}

static em_status pair_passes(join_state *st, bool *pass, em_error *err) {
    if (!st->cond) {
        *pass = true;
        return EM_OK;
    }
    return em_rexpr_test(st->cond, st->pair, &st->scratch, pass, err);
}

/* A left (stream) row of a semi/anti/existence join: output or not. */
static bool exist_keeps(const join_state *st) {
    switch (st->type) {
    case EM_JOIN_EXISTENCE:
        return true;
    case EM_JOIN_LEFT_SEMI:
        return st->smatched;
    default:
        if (st->null_aware && st->rows.n_rows > 0)
            return !st->smatched && !st->skey_null && !st->has_null_key;
        return !st->smatched;
    }
}

/* After the last stream row: the build rows are next, when the join keeps
 * them and this task outputs them. */
static em_status end_stream(em_row_op *op, join_state *st, em_error *err) {
    st->phase = PH_TAIL;
    st->tail = 0;
    int64_t n = st->rows.n_rows;
    if (!em_op_bnlj_keeps_build(op->node) || n == 0)
        return EM_DONE;
    uint8_t *bits = calloc((size_t)em_bitmap_bytes(n), 1);
    if (!bits)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory merging the matched build rows");
    for (int64_t r = 0; r < n; r++)
        if (st->matched[r])
            em_bit_set(bits, r);
    bool emit = true;
    em_status s = em_nlj_matches_merge(op->ctx, op->node, bits, n, &emit, err);
    for (int64_t r = 0; r < n; r++)
        st->matched[r] = em_bit_get(bits, r);
    free(bits);
    if (!emit)
        st->phase = PH_DONE;
    return s == EM_OK ? EM_DONE : s;
}

static em_status stream_step(em_row_op *op, join_state *st, const em_datum **row, em_error *err) {
    int stream = 1 - st->build;
    for (;;) {
        if (!st->srow) {
            const em_datum *in = NULL;
            em_status s = em_row_op_next(op->children[stream], &in, err);
            if (s == EM_DONE)
                return end_stream(op, st, err);
            if (s != EM_OK)
                return s;
            st->srow = in;
            st->smatched = false;
            em_row_arena_clear(&st->scratch);
            EM_TRY(eval_keys(st, stream, in, st->skeys, &st->skey_null, err));
            st->shash = st->skey_null ? 0 : hash_keys(st, st->skeys);
            st->cand = st->skey_null ? -1
                       : st->n_keys == 0
                           ? next_candidate(st, 0)
                           : next_candidate(st, st->heads[st->shash & (st->n_heads - 1)]);
        }
        while (st->cand >= 0) {
            int64_t b = st->cand;
            st->cand = after(st, b);
            const em_datum *brow = rs_row(&st->rows, b);
            make_pair(st, st->srow, brow);
            bool pass = false;
            EM_TRY(pair_passes(st, &pass, err));
            if (!pass)
                continue;
            st->smatched = true;
            st->matched[b] = true;
            if (st->exist_kind && stream == 0) {
                st->cand = -1; /* one match decides a left row */
                break;
            }
            if (st->exist_kind)
                continue; /* a left build row: decided in the tail */
            *row = output_row(op, st, true);
            return EM_OK;
        }
        const em_datum *srow = st->srow;
        st->srow = NULL;
        if (st->exist_kind && stream == 0 && exist_keeps(st)) {
            make_pair(st, srow, NULL);
            *row = output_row(op, st, st->smatched);
            return EM_OK;
        }
        if (!st->exist_kind && st->keep_stream && !st->smatched) {
            make_pair(st, srow, NULL);
            *row = output_row(op, st, false);
            return EM_OK;
        }
    }
}

static em_status tail_step(em_row_op *op, join_state *st, const em_datum **row) {
    bool keep_tail = st->keep_build || (st->exist_kind && st->build == 0);
    while (keep_tail && st->tail < st->rows.n_rows) {
        int64_t b = st->tail++;
        bool m = st->matched[b], keep;
        if (st->keep_build || st->type == EM_JOIN_LEFT_ANTI)
            keep = !m;
        else if (st->type == EM_JOIN_LEFT_SEMI)
            keep = m;
        else
            keep = true; /* existence */
        if (!keep)
            continue;
        make_pair(st, NULL, rs_row(&st->rows, b));
        *row = output_row(op, st, m);
        return EM_OK;
    }
    st->phase = PH_DONE;
    return EM_DONE;
}

static em_status join_next(em_row_op *op, const em_datum **row, em_error *err) {
    join_state *st = op->state;
    em_status s = EM_OK;
    if (st->phase == PH_BUILD) {
        s = do_build(op, st, err);
        st->phase = PH_STREAM;
        if (s == EM_OK && st->null_aware && st->has_null_key)
            st->phase = PH_DONE; /* NOT IN over a set holding null: nothing */
    }
    if (s == EM_OK && st->phase == PH_STREAM) {
        s = stream_step(op, st, row, err);
        if (s == EM_DONE)
            s = EM_OK;
        else if (s == EM_OK)
            return EM_OK;
    }
    if (s == EM_OK && st->phase == PH_TAIL)
        return tail_step(op, st, row);
    if (s == EM_OK)
        return EM_DONE;
    return s == EM_ERR_CANCELLED ? s : em_rop_fail(op, err);
}

static void join_close(em_row_op *op) {
    join_state *st = op->state;
    if (st) {
        for (int side = 0; side < 2; side++)
            em_rop_free_exprs(st->keys[side], st->n_keys);
        free(st->key_types);
        em_rexpr_destroy(st->cond);
        free(st->pair_attrs);
        free(st->pair_types);
        free(st->out_map);
        free(st->build_types);
        if (st->heads)
            em_pool_release(rop_pool(op), st->n_heads * 8 + st->rows.n_rows * 13 + 8);
        em_rs_reset(&st->rows);
        free(st->matched);
        free(st->heads);
        free(st->chain);
        free(st->hashes);
        free(st->skeys);
        free(st->pair);
        free(st->out);
        em_row_arena_reset(&st->scratch);
        memset(st, 0, sizeof *st);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab BHJ_VTAB = {
    .name = "BroadcastHashJoin", .open = join_open, .next = join_next, .close = join_close};
static const em_row_op_vtab SHJ_VTAB = {
    .name = "ShuffledHashJoin", .open = join_open, .next = join_next, .close = join_close};
static const em_row_op_vtab SMJ_VTAB = {
    .name = "SortMergeJoin", .open = join_open, .next = join_next, .close = join_close};
static const em_row_op_vtab BNLJ_VTAB = {
    .name = "BroadcastNestedLoopJoin", .open = join_open, .next = join_next, .close = join_close};
static const em_row_op_vtab CARTESIAN_VTAB = {
    .name = "CartesianProduct", .open = join_open, .next = join_next, .close = join_close};

em_status em_rop_join_create(const em_plan_node *node, em_row_op *left, em_row_op *right,
                          em_row_op **out, em_error *err) {
    const em_row_op_vtab *vt;
    switch (node->kind) {
    case EM_NODE_SHUFFLED_HASH_JOIN:
        vt = &SHJ_VTAB;
        break;
    case EM_NODE_SORT_MERGE_JOIN:
        vt = &SMJ_VTAB;
        break;
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
        vt = &BNLJ_VTAB;
        break;
    case EM_NODE_CARTESIAN_PRODUCT:
        vt = &CARTESIAN_VTAB;
        break;
    default:
        vt = &BHJ_VTAB;
        break;
    }
    em_row_op *kids[2] = {left, right};
    return em_rop_init(vt, node, kids, 2, sizeof(join_state), out, err);
}
