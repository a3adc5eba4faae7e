/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HashAggregate, SortAggregate and ObjectHashAggregate on rows: one
 * operator for the three (they compute the same result), in Spark's modes.
 *
 * Groups: the key values of each input row are looked up in an
 * open-addressing table over a row store whose rows are [keys...,
 * buffers...]; keys are equal as grouping keys are (nulls form a group,
 * NaN = NaN, -0.0 = 0.0: em_datum_equal_grouping). Buffers follow Spark's
 * layouts (em_ragg_*), so partial output from either engine merges in the
 * other.
 *
 * Modes, as the native aggregate reads them: partial_f folds input rows;
 * merge_f merges buffers; f (Final and Complete print alike) merges
 * buffers when another aggregate feeds this one (through exchanges and
 * wrappers) and folds input rows otherwise. Merged buffers are read by
 * position: they are the last columns of the input, in function order.
 *
 * Output: with a final-mode function, Results over [keys..., values...];
 * otherwise the keys and every buffer, by position. Without keys there is
 * one group even for empty input; with keys, empty input gives no rows.
 * The whole input is drained on the first next.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/row_internal.h"

typedef struct agg_state {
    int n_keys;
    em_rexpr **keys;
    int n_fns;
    em_ragg **fns;
    int *buf_at;    /* function i's first buffer in a group row (after the keys) */
    int *first_col; /* merging functions: first buffer column of the input */
    bool *updates;  /* function i folds input rows */
    bool *fin;      /* function i is in final mode (outputs its value) */
    bool final;
    int width; /* keys + buffers */
    em_type *group_types;
    row_store groups;
    int64_t *slots; /* group + 1, 0 = empty */
    uint32_t *hashes;
    int64_t n_slots, hashes_cap;
    em_datum *probe; /* the current row's keys, then initial buffers */
    em_row_arena scratch;
    /* output */
    bool drained;
    int64_t emitted;
    bool positional;
    int n_results;
    em_rexpr **results;
    const em_expr **result_attrs;
    em_datum *result_in;
    em_datum *out;
} agg_state;

/* Whether another aggregate produces this one's input, seen through the
 * nodes that only move rows (exchanges, stages, reuse, wrappers, sorts). */
static bool fed_by_aggregate(const em_plan_node *node) {
    const em_plan_node *c = node->n_children > 0 ? node->children[0] : NULL;
    for (int guard = 0; c && guard < 256; guard++) {
        em_node_kind k = c->kind;
        if (k == EM_NODE_HASH_AGGREGATE || k == EM_NODE_SORT_AGGREGATE ||
            k == EM_NODE_OBJECT_HASH_AGGREGATE)
            return true;
        if (k == EM_NODE_REUSED_EXCHANGE) {
            c = c->reuses;
            continue;
        }
        bool moves_rows = k == EM_NODE_COLUMNAR_TO_ROW || k == EM_NODE_ROW_TO_COLUMNAR ||
                          k == EM_NODE_INPUT_ADAPTER || k == EM_NODE_WHOLE_STAGE_CODEGEN ||
                          k == EM_NODE_EXCHANGE || k == EM_NODE_SHUFFLE_QUERY_STAGE ||
                          k == EM_NODE_AQE_SHUFFLE_READ || k == EM_NODE_SORT;
        if (!moves_rows)
            return false;
        c = c->n_children > 0 ? c->children[0] : NULL;
    }
    return c == NULL;
}

static em_status agg_bind(em_row_op *op, agg_state *st, em_exec_ctx *ctx, em_error *err) {
    const em_row_op *child = op->children[0];
    const em_plan_field *kf = em_plan_node_field(op->node, EM_FIELD_KEYS);
    const em_plan_field *ff = em_plan_node_field(op->node, EM_FIELD_FUNCTIONS);
    st->n_keys = kf ? kf->n_exprs : 0;
    st->n_fns = ff ? ff->n_exprs : 0;
    st->fns = calloc((size_t)st->n_fns + 1, sizeof *st->fns);
    st->buf_at = calloc((size_t)st->n_fns + 1, sizeof *st->buf_at);
    st->first_col = calloc((size_t)st->n_fns + 1, sizeof *st->first_col);
    st->updates = calloc((size_t)st->n_fns + 1, sizeof *st->updates);
    st->fin = calloc((size_t)st->n_fns + 1, sizeof *st->fin);
    if (!st->fns || !st->buf_at || !st->first_col || !st->updates || !st->fin)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_type *key_types = calloc((size_t)st->n_keys + 1, sizeof *key_types);
    if (!key_types)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_status s = em_rop_bind_list(op, kf ? (const em_expr *const *)kf->exprs : NULL, st->n_keys,
                                &st->keys, key_types, err);
    bool complete = !fed_by_aggregate(op->node);
    int n_bufs = 0, merge_bufs = 0;
    for (int i = 0; s == EM_OK && i < st->n_fns; i++) {
        s = em_ragg_bind(ff->exprs[i], child->output, child->n_output, &ctx->expr_opts,
                         &st->fns[i], err);
        if (s != EM_OK)
            break;
        em_agg_mode m = ff->exprs[i]->mode;
        st->updates[i] = m == EM_AGG_PARTIAL || (m == EM_AGG_FINAL && complete);
        if (st->updates[i] && !em_ragg_has_args(st->fns[i]))
            s = EM_FAIL(err, EM_ERR_BIND, "function %d folds input rows, but its arguments are "
                        "not in the input", i + 1);
        st->buf_at[i] = n_bufs;
        n_bufs += em_ragg_n_buffers(st->fns[i]);
        if (!st->updates[i])
            merge_bufs += em_ragg_n_buffers(st->fns[i]);
        st->fin[i] = m == EM_AGG_FINAL;
        st->final |= st->fin[i];
    }
    st->width = st->n_keys + n_bufs;
    st->group_types = calloc((size_t)st->width + 1, sizeof *st->group_types);
    st->probe = calloc((size_t)st->width + 1, sizeof *st->probe);
    if (s == EM_OK && (!st->group_types || !st->probe))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    if (s == EM_OK) {
        memcpy(st->group_types, key_types, sizeof *key_types * (size_t)st->n_keys);
        for (int i = 0; i < st->n_fns; i++)
            for (int b = 0; b < em_ragg_n_buffers(st->fns[i]); b++)
                st->group_types[st->n_keys + st->buf_at[i] + b] = em_ragg_buffer_type(st->fns[i], b);
    }
    free(key_types);
    EM_TRY(s);
    int col = child->n_output - merge_bufs;
    if (col < 0)
        return EM_FAIL(err, EM_ERR_BIND,
                       "the input has %d columns, fewer than the %d buffers to merge",
                       child->n_output, merge_bufs);
    for (int i = 0; i < st->n_fns; i++) {
        if (st->updates[i])
            continue;
        st->first_col[i] = col;
        col += em_ragg_n_buffers(st->fns[i]);
    }
    return EM_OK;
}

static uint32_t key_hash(const agg_state *st, const em_datum *keys) {
    uint32_t h = 42;
    for (int k = 0; k < st->n_keys; k++)
        h = em_datum_murmur3(&keys[k], st->group_types[k], h);
    return h;
}

static bool keys_equal(const agg_state *st, const em_datum *a, const em_datum *b) {
    for (int k = 0; k < st->n_keys; k++)
        if (!em_datum_equal_grouping(&a[k], &b[k], st->group_types[k]))
            return false;
    return true;
}

/* Doubles the slot table (or makes the first one). */
static em_status agg_grow(em_row_op *op, agg_state *st, em_error *err) {
    int64_t n = st->n_slots ? st->n_slots * 2 : 64;
    EM_TRY(em_pool_reserve(rop_pool(op), n * 8, err));
    int64_t *slots = calloc((size_t)n, sizeof *slots);
    if (!slots) {
        em_pool_release(rop_pool(op), n * 8);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    }
    for (int64_t g = 0; g < st->groups.n_rows; g++) {
        int64_t at = st->hashes[g] & (n - 1);
        while (slots[at])
            at = (at + 1) & (n - 1);
        slots[at] = g + 1;
    }
    if (st->slots)
        em_pool_release(rop_pool(op), st->n_slots * 8);
    free(st->slots);
    st->slots = slots;
    st->n_slots = n;
    return EM_OK;
}

/* The group row of the keys in st->probe, added with initial buffers when new. */
static em_status agg_group(em_row_op *op, agg_state *st, em_datum **group, em_error *err) {
    if (st->n_keys == 0) {
        *group = rs_row(&st->groups, 0);
        return EM_OK;
    }
    if ((st->groups.n_rows + 1) * 2 > st->n_slots)
        EM_TRY(agg_grow(op, st, err));
    uint32_t h = key_hash(st, st->probe);
    int64_t at = h & (st->n_slots - 1);
    for (; st->slots[at]; at = (at + 1) & (st->n_slots - 1)) {
        int64_t g = st->slots[at] - 1;
        if (st->hashes[g] == h && keys_equal(st, rs_row(&st->groups, g), st->probe)) {
            *group = rs_row(&st->groups, g);
            return EM_OK;
        }
    }
    if (st->groups.n_rows == st->hashes_cap) {
        int64_t cap = st->hashes_cap ? st->hashes_cap * 2 : 64;
        EM_TRY(em_pool_reserve(rop_pool(op), (cap - st->hashes_cap) * 4, err));
        uint32_t *hs = realloc(st->hashes, sizeof *hs * (size_t)cap);
        if (!hs) {
            em_pool_release(rop_pool(op), (cap - st->hashes_cap) * 4);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        }
        st->hashes = hs;
        st->hashes_cap = cap;
    }
    for (int i = 0; i < st->n_fns; i++)
        em_ragg_init(st->fns[i], st->probe + st->n_keys + st->buf_at[i]);
    EM_TRY(em_rs_add(&st->groups, st->probe, group, err));
    st->hashes[st->groups.n_rows - 1] = h;
    st->slots[at] = st->groups.n_rows;
    return EM_OK;
}

static em_status agg_fold(em_row_op *op, void *arg, const em_datum *row, em_error *err) {
    agg_state *st = arg;
    em_row_arena_clear(&st->scratch);
    for (int k = 0; k < st->n_keys; k++)
        EM_TRY(em_rexpr_eval(st->keys[k], row, &st->scratch, &st->probe[k], err));
    em_datum *g = NULL;
    EM_TRY(agg_group(op, st, &g, err));
    em_datum *bufs = g + st->n_keys;
    for (int i = 0; i < st->n_fns; i++) {
        em_datum *b = bufs + st->buf_at[i];
        if (st->updates[i])
            EM_TRY(em_ragg_update(st->fns[i], b, row, &st->groups.arena, err));
        else
            EM_TRY(em_ragg_merge(st->fns[i], b, row + st->first_col[i], &st->groups.arena, err));
    }
    return EM_OK;
}

/* Binds the output: positional, or Results over [keys..., values...]. */
static em_status agg_bind_output(em_row_op *op, agg_state *st, em_error *err) {
    const em_plan_field *kf = em_plan_node_field(op->node, EM_FIELD_KEYS);
    const em_plan_field *af = em_plan_node_field(op->node, EM_FIELD_AGG_ATTRS);
    const em_plan_field *rf = em_plan_node_field(op->node, EM_FIELD_RESULTS);
    int n_vals = 0;
    for (int i = 0; i < st->n_fns; i++)
        n_vals += st->fin[i] ? 1 : em_ragg_n_buffers(st->fns[i]);
    int n_cols = st->n_keys + n_vals;
    st->result_in = calloc((size_t)n_cols + 1, sizeof *st->result_in);
    if (!st->result_in)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    st->positional = !st->final && st->n_fns > 0;
    if (st->positional) {
        if (op->n_output != n_cols)
            return EM_FAIL(err, EM_ERR_BIND, "Results lists %d attributes, keys and buffers are %d",
                           op->n_output, n_cols);
        memcpy(op->types, st->group_types, sizeof *op->types * (size_t)n_cols);
        return EM_OK;
    }
    if (af && af->n_exprs != n_vals)
        return EM_FAIL(err, EM_ERR_BIND,
                       "Aggregate Attributes lists %d attributes, the functions produce %d columns",
                       af->n_exprs, n_vals);
    if (!af && n_vals > 0)
        return EM_FAIL(err, EM_ERR_BIND, "no Aggregate Attributes");
    st->result_attrs = calloc((size_t)n_cols + 1, sizeof *st->result_attrs);
    if (!st->result_attrs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int k = 0; k < st->n_keys; k++)
        st->result_attrs[k] = kf->exprs[k];
    for (int v = 0; v < n_vals; v++)
        st->result_attrs[st->n_keys + v] = af->exprs[v];
    const em_expr *const *res = rf ? (const em_expr *const *)rf->exprs : op->output;
    st->n_results = rf ? rf->n_exprs : op->n_output;
    if (st->n_results != op->n_output)
        return EM_FAIL(err, EM_ERR_BIND, "Results lists %d expressions for %d attributes",
                       st->n_results, op->n_output);
    st->results = calloc((size_t)st->n_results + 1, sizeof *st->results);
    st->out = calloc((size_t)st->n_results + 1, sizeof *st->out);
    if (!st->results || !st->out)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < st->n_results; i++) {
        EM_TRY(em_rexpr_bind(rop_unalias(res[i]), st->result_attrs, n_cols, &op->ctx->expr_opts,
                             &st->results[i], err));
        em_type t = em_rexpr_type(st->results[i]);
        if (t.id != EM_TYPE_NULL)
            op->types[i] = t;
    }
    return EM_OK;
}

static em_status agg_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    agg_state *st = op->state;
    em_row_arena_init(&st->scratch, rop_pool(op));
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    if (agg_bind(op, st, ctx, err) != EM_OK)
        return em_rop_fail(op, err);
    em_rs_init(&st->groups, st->width, st->group_types, rop_pool(op));
    if (st->n_keys == 0) { /* the one global group exists even without input */
        em_datum *g = NULL;
        for (int i = 0; i < st->n_fns; i++)
            em_ragg_init(st->fns[i], st->probe + st->buf_at[i]);
        if (em_rs_add(&st->groups, st->probe, &g, err) != EM_OK)
            return em_rop_fail(op, err);
    }
    if (agg_bind_output(op, st, err) != EM_OK)
        return em_rop_fail(op, err);
    return EM_OK;
}

static em_status agg_emit(agg_state *st, const em_datum *g, em_error *err) {
    em_datum *ri = st->result_in;
    int c = 0;
    for (; c < st->n_keys; c++)
        ri[c] = g[c];
    for (int i = 0; i < st->n_fns; i++) {
        const em_datum *b = g + st->n_keys + st->buf_at[i];
        if (st->fin[i]) {
            EM_TRY(em_ragg_eval(st->fns[i], b, &st->scratch, &ri[c++], err));
            continue;
        }
        for (int k = 0; k < em_ragg_n_buffers(st->fns[i]); k++)
            ri[c++] = b[k];
    }
    if (st->positional)
        return EM_OK;
    for (int i = 0; i < st->n_results; i++)
        EM_TRY(em_rexpr_eval(st->results[i], ri, &st->scratch, &st->out[i], err));
    return EM_OK;
}

static em_status agg_next(em_row_op *op, const em_datum **row, em_error *err) {
    agg_state *st = op->state;
    if (!st->drained) {
        EM_TRY(em_rop_drain(op, agg_fold, st, err));
        st->drained = true;
        st->emitted = 0;
        rop_note_peak(op, rs_bytes(&st->groups) + st->n_slots * 8 + st->hashes_cap * 4);
    }
    if (st->emitted >= st->groups.n_rows)
        return EM_DONE;
    em_row_arena_clear(&st->scratch);
    if (agg_emit(st, rs_row(&st->groups, st->emitted++), err) != EM_OK)
        return em_rop_fail(op, err);
    *row = st->positional ? st->result_in : st->out;
    return EM_OK;
}

static void agg_close(em_row_op *op) {
    agg_state *st = op->state;
    if (st) {
        em_pool *pool = rop_pool(op);
        em_rop_free_exprs(st->keys, st->n_keys);
        for (int i = 0; st->fns && i < st->n_fns; i++)
            em_ragg_destroy(st->fns[i]);
        free(st->fns);
        free(st->buf_at);
        free(st->first_col);
        free(st->updates);
        free(st->fin);
        em_rs_reset(&st->groups);
        free(st->group_types);
        if (st->slots)
            em_pool_release(pool, st->n_slots * 8);
        if (st->hashes)
            em_pool_release(pool, st->hashes_cap * 4);
        free(st->slots);
        free(st->hashes);
        free(st->probe);
        em_row_arena_reset(&st->scratch);
        em_rop_free_exprs(st->results, st->n_results);
        free(st->result_attrs);
        free(st->result_in);
        free(st->out);
        memset(st, 0, sizeof *st);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab HAGG_VTAB = {
    .name = "HashAggregate", .open = agg_open, .next = agg_next, .close = agg_close};
static const em_row_op_vtab SAGG_VTAB = {
    .name = "SortAggregate", .open = agg_open, .next = agg_next, .close = agg_close};
static const em_row_op_vtab OAGG_VTAB = {
    .name = "ObjectHashAggregate", .open = agg_open, .next = agg_next, .close = agg_close};

em_status em_rop_agg_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                         em_error *err) {
    const em_row_op_vtab *vt = node->kind == EM_NODE_SORT_AGGREGATE          ? &SAGG_VTAB
                               : node->kind == EM_NODE_OBJECT_HASH_AGGREGATE ? &OAGG_VTAB
                                                                             : &HAGG_VTAB;
    return em_rop_init(vt, node, &child, 1, sizeof(agg_state), out, err);
}
