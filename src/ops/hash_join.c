/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BroadcastHashJoin and ShuffledHashJoin (and, through the same index, the
 * sort-merge join): the build side's rows are indexed by their join keys,
 * the stream side's keys are looked up a whole batch at a time.
 *
 * Build: the keys are evaluated once over the materialized build side; the
 * shared hash table (ops/hash_table.h, nulls never equal) gives each distinct
 * key a dense id, and the build rows are grouped by id in one array
 * (counting sort: offsets[id] .. offsets[id + 1] are the rows of id, in
 * build order). A build row with a null key gets no id and matches nothing;
 * its existence is remembered for the null-aware anti join.
 *
 * Probe: the stream keys of a batch are evaluated (plain attribute keys are
 * read in place), hashed and looked up in one call; each stream row's
 * candidates are then the rows of its id. Keys equal by Spark's rules for
 * join keys: the optimizer has already cast both sides to one type (a key
 * pair of different types is rejected), floating point values are
 * normalized by the table itself, so the normalization calls Spark wraps
 * around float keys (knownfloatingpointnormalized, normalizenanandzero) are
 * looked through.
 *
 * Everything else (pairs, join condition, join types, outer rows) is the
 * shared engine of join_util.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/hash_table.h"
#include "ops/join_util.h"
#include "ops/op_util.h"

typedef struct hj_side_keys {
    const em_expr **exprs;
    em_expr_prog **progs; /* NULL entry: the key is column pass[k] */
    int *pass;
    em_column *cols; /* evaluated keys (owned) */
    const em_column **view;
} hj_side_keys;

typedef struct hj_state {
    jn_state j;
    int build_side;
    int n_keys;
    hj_side_keys keys[2]; /* indexed by side */
    em_type *types;
    em_hash_table *ht;
    int32_t *offsets; /* n_ids + 1 */
    int64_t n_ids;
    int32_t *rows; /* n_build */
    int32_t *ids;
    int64_t ids_cap;
} hj_state;

static const em_expr *unwrap_normalization(const em_expr *e) {
    while (e->kind == EM_EXPR_CALL && e->n_args == 1 && e->name &&
           (strcmp(e->name, "knownfloatingpointnormalized") == 0 ||
            strcmp(e->name, "normalizenanandzero") == 0))
        e = e->args[0];
    return e;
}

static void free_side(hj_side_keys *s, int n) {
    for (int k = 0; k < n; k++) {
        if (s->progs)
            em_expr_prog_free(s->progs[k]);
        if (s->cols)
            em_column_reset(&s->cols[k]);
    }
    free(s->exprs);
    free(s->progs);
    free(s->pass);
    free(s->cols);
    free(s->view);
    memset(s, 0, sizeof *s);
}

static void hj_index_free(jn_state *j) {
    hj_state *h = (hj_state *)j;
    em_pool *pool = j->op->ctx ? j->op->ctx->pool : NULL;
    for (int s = 0; s < 2; s++)
        free_side(&h->keys[s], h->n_keys);
    free(h->types);
    h->types = NULL;
    em_ht_free(h->ht);
    h->ht = NULL;
    if (h->offsets)
        em_pool_free(pool, h->offsets, (h->n_ids + 1) * 4);
    if (h->rows)
        em_pool_free(pool, h->rows, j->n_build * 4);
    if (h->ids)
        em_pool_free(pool, h->ids, h->ids_cap * 4);
    h->offsets = h->rows = h->ids = NULL;
    h->ids_cap = 0;
}

/* Compiles one side's keys against its child. */
static em_status compile_side(hj_state *h, int side, const em_plan_field *f, em_error *err) {
    em_op *op = h->j.op;
    em_op *child = op->children[side];
    hj_side_keys *s = &h->keys[side];
    int n = h->n_keys;
    s->exprs = calloc((size_t)n, sizeof *s->exprs);
    s->progs = calloc((size_t)n, sizeof *s->progs);
    s->pass = calloc((size_t)n, sizeof *s->pass);
    s->cols = calloc((size_t)n, sizeof *s->cols);
    s->view = calloc((size_t)n, sizeof *s->view);
    if (!s->exprs || !s->progs || !s->pass || !s->cols || !s->view)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory compiling join keys");
    for (int k = 0; k < n; k++) {
        const em_expr *e = unwrap_normalization(f->exprs[k]);
        s->exprs[k] = e;
        s->pass[k] = opu_passthrough_index(e, em_op_child_attrs(op, side), child->n_output);
        if (s->pass[k] < 0)
            EM_TRY(em_expr_compile(e, em_op_child_attrs(op, side), child->n_output,
                                   &op->ctx->expr_opts, &s->progs[k], err));
    }
    return EM_OK;
}

static em_type key_type(const hj_state *h, int side, int k) {
    const hj_side_keys *s = &h->keys[side];
    if (s->progs[k])
        return em_expr_prog_type(s->progs[k]);
    return h->j.op->children[side]->schema.fields[s->pass[k]].type;
}

/* Evaluates one side's keys over a batch into s->view. */
static em_status eval_side(hj_state *h, int side, const em_batch *b, em_error *err) {
    hj_side_keys *s = &h->keys[side];
    for (int k = 0; k < h->n_keys; k++) {
        if (!s->progs[k]) {
            s->view[k] = &b->cols[s->pass[k]];
            continue;
        }
        em_column_reset(&s->cols[k]);
        EM_TRY(em_expr_eval(s->progs[k], b, h->j.op->ctx->pool, &s->cols[k], err));
        s->view[k] = &s->cols[k];
    }
    return EM_OK;
}

static em_status ensure_ids(hj_state *h, int64_t n, em_error *err) {
    if (n <= h->ids_cap)
        return EM_OK;
    int64_t nc = h->ids_cap ? h->ids_cap : 256;
    while (nc < n)
        nc *= 2;
    int32_t *p = em_pool_realloc(h->j.op->ctx->pool, h->ids, h->ids_cap * 4, nc * 4, err);
    if (!p)
        return err ? err->code : EM_ERR_NOMEM;
    jn_account(&h->j, (nc - h->ids_cap) * 4);
    h->ids = p;
    h->ids_cap = nc;
    return EM_OK;
}

static em_status hj_build(jn_state *j, em_error *err) {
    hj_state *h = (hj_state *)j;
    em_pool *pool = j->op->ctx->pool;
    int bs = j->build_side;
    EM_TRY(em_ht_create(h->types, h->n_keys, false, pool, &h->ht, err));
    int64_t n = j->n_build;
    EM_TRY(ensure_ids(h, n, err));
    if (n > 0) {
        EM_TRY(eval_side(h, bs, j->build, err));
        EM_TRY(em_ht_find_or_insert(h->ht, h->keys[bs].view, NULL, n, h->ids, err));
    }
    h->n_ids = em_ht_size(h->ht);
    h->offsets = em_pool_calloc(pool, (h->n_ids + 1) * 4, err);
    if (!h->offsets)
        return err ? err->code : EM_ERR_NOMEM;
    h->rows = em_pool_alloc(pool, n * 4, err);
    if (!h->rows)
        return err ? err->code : EM_ERR_NOMEM;
    jn_account(j, (h->n_ids + 1) * 4 + n * 4 + em_ht_bytes(h->ht));
    /* counting sort of the build rows by id, keeping build order within an id */
    int32_t *off = h->offsets;
    for (int64_t r = 0; r < n; r++) {
        if (h->ids[r] >= 0)
            off[h->ids[r] + 1]++;
        else
            j->build_has_null_key = true;
    }
    for (int64_t i = 0; i < h->n_ids; i++)
        off[i + 1] += off[i];
    for (int64_t r = 0; r < n; r++)
        if (h->ids[r] >= 0)
            h->rows[off[h->ids[r]]++] = (int32_t)r;
    for (int64_t i = h->n_ids; i > 0; i--)
        off[i] = off[i - 1];
    off[0] = 0;
    /* the build keys are not needed any more */
    for (int k = 0; k < h->n_keys; k++)
        em_column_reset(&h->keys[bs].cols[k]);
    return EM_OK;
}

static em_status hj_probe(jn_state *j, const em_batch *in, int32_t *lo, int32_t *hi,
                          em_error *err) {
    hj_state *h = (hj_state *)j;
    int ss = jn_stream_side(j);
    int64_t n = em_batch_rows(in);
    EM_TRY(ensure_ids(h, n, err));
    EM_TRY(eval_side(h, ss, in, err));
    const em_column *const *keys = h->keys[ss].view;
    EM_TRY(em_ht_find(h->ht, keys, in->sel, n, h->ids, err));
    const int32_t *off = h->offsets;
    for (int64_t k = 0; k < n; k++) {
        int32_t id = h->ids[k];
        if (id >= 0) {
            lo[k] = off[id];
            hi[k] = off[id + 1];
            continue;
        }
        int64_t r = in->sel ? in->sel[k] : k;
        bool null_key = false;
        for (int c = 0; c < h->n_keys && !null_key; c++)
            null_key = !em_column_is_valid(keys[c], r);
        lo[k] = hi[k] = null_key ? -1 : 0;
    }
    j->cand_rows = h->rows;
    return EM_OK;
}

static const jn_index_vtab HJ_INDEX = {hj_build, hj_probe, hj_index_free};

static em_status hj_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    hj_state *h = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    EM_TRY(em_op_open(op->children[1], ctx, err));
    EM_TRY(jn_open(&h->j, op, &HJ_INDEX, h->build_side, err));
    const em_plan_field *lk = em_plan_node_field(op->node, EM_FIELD_LEFT_KEYS);
    const em_plan_field *rk = em_plan_node_field(op->node, EM_FIELD_RIGHT_KEYS);
    if (!lk || !rk || lk->n_exprs != rk->n_exprs || lk->n_exprs == 0)
        return EM_FAIL(err, EM_ERR_PARSE,
                       "%s (%d): expected Left keys and Right keys of one length", op->vtab->name,
                       op->node->id);
    h->n_keys = lk->n_exprs;
    if (compile_side(h, 0, lk, err) != EM_OK || compile_side(h, 1, rk, err) != EM_OK)
        return em_op_fail(op, err);
    h->types = calloc((size_t)h->n_keys, sizeof *h->types);
    if (!h->types)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", op->vtab->name);
    for (int k = 0; k < h->n_keys; k++) {
        em_type a = key_type(h, 0, k), b = key_type(h, 1, k);
        if (!em_type_equal(a, b)) {
            char ta[64], tb[64];
            em_type_format(a, ta, sizeof ta);
            em_type_format(b, tb, sizeof tb);
            return EM_FAIL(err, EM_ERR_TYPE,
                           "%s (%d): join key %d has type %s on the left and %s on the right",
                           op->vtab->name, op->node->id, k + 1, ta, tb);
        }
        h->types[k] = a;
    }
    return EM_OK;
}

static em_status hj_next(em_op *op, em_batch **out, em_error *err) {
    hj_state *h = op->state;
    return jn_next(&h->j, out, err);
}

static void hj_close(em_op *op) {
    hj_state *h = op->state;
    if (h) {
        if (h->j.op)
            jn_close(&h->j);
        else
            for (int s = 0; s < 2; s++)
                free_side(&h->keys[s], h->n_keys);
    }
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab BHJ_VTAB = {.name = "BroadcastHashJoin", .open = hj_open, .next = hj_next, .close = hj_close};
static const em_op_vtab SHJ_VTAB = {.name = "ShuffledHashJoin", .open = hj_open, .next = hj_next, .close = hj_close};
static const em_op_vtab SMJ_VTAB = {.name = "SortMergeJoin", .open = hj_open, .next = hj_next, .close = hj_close};

em_status jn_hash_join_create(const em_plan_node *node, em_op *left, em_op *right, int build_side,
                              em_op **out, em_error *err) {
    const em_op_vtab *vt = node->kind == EM_NODE_SORT_MERGE_JOIN      ? &SMJ_VTAB
                           : node->kind == EM_NODE_SHUFFLED_HASH_JOIN ? &SHJ_VTAB
                                                                      : &BHJ_VTAB;
    em_op *kids[2] = {left, right};
    EM_TRY(em_op_init(vt, node, kids, 2, sizeof(hj_state), out, err));
    ((hj_state *)(*out)->state)->build_side = build_side;
    return EM_OK;
}

em_status em_op_hash_join_create(const em_plan_node *node, em_op *left, em_op *right, em_op **out,
                                 em_error *err) {
    return jn_hash_join_create(node, left, right,
                               node->build_side == EM_BUILD_LEFT ? JN_LEFT : JN_RIGHT, out, err);
}
