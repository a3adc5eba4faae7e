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
 * Shared build (BroadcastHashJoin): every probe task of a broadcast join
 * would index the same relation, so the first task builds the concatenated
 * relation, the table and the row lists once through the runtime's
 * broadcast_shared (in a pool of the query) and the others wait for it and
 * borrow them read-only: probing (em_ht_find) never writes to the table, and
 * the matched bitmaps of outer and existence joins stay per task. The
 * object is keyed by the build keys as column positions of the relation
 * (plus their types), so joins over one broadcast with the same keys share
 * it, whatever their attributes are called. The waiting tasks are idle, so
 * the build hands them work through em_par: the copy a column each, and a
 * large index split by hash into parts built side by side (index_split).
 *
 * Everything else (pairs, join condition, join types, outer rows) is the
 * shared engine of join_engine.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/hash_table.h"
#include "ops/join_engine.h"
#include "ops/op_util.h"

typedef struct hj_side_keys {
    const em_expr **exprs;
    em_expr_prog **progs; /* NULL entry: the key is column pass[k] */
    int *pass;
    em_column *cols; /* evaluated keys (owned) */
    const em_column **view;
} hj_side_keys;

enum { HJ_MAX_PARTS = 16 };

/* The index over the build rows: the table, and the rows grouped by key id
 * (offsets[id] .. offsets[id + 1] in rows). A large shared build is split
 * by the keys' hash into parts of one table each, built side by side by the
 * waiting tasks' threads: part p's keys have the ids base[p] ..
 * base[p + 1] - 1, its rows are one stretch of rows. */
typedef struct hj_index {
    int n_parts;    /* 1, or a power of two up to HJ_MAX_PARTS */
    int part_shift; /* a key's part: its table hash >> part_shift */
    em_hash_table *ht[HJ_MAX_PARTS];
    int32_t base[HJ_MAX_PARTS + 1];
    int32_t *offsets; /* n_ids + 1 */
    int64_t n_ids;
    int32_t *rows; /* one per build row */
    bool has_null_key;
} hj_index;

/* The build side of a broadcast as all its probe tasks share it. */
typedef struct hj_shared {
    em_pool *pool;
    em_batch *build;
    hj_index x;
} hj_shared;

typedef struct hj_state {
    jn_state j;
    bool borrowed; /* ht, offsets and rows belong to an hj_shared */
    bool decided;  /* maybe_swap ran */
    bool swapped;  /* indexing the stream side, streaming the broadcast */
    int build_side;
    int n_keys;
    hj_side_keys keys[2]; /* indexed by side */
    em_type *types;
    hj_index x;
    int32_t *ids;
    int64_t ids_cap;
    /* probing a split index: per row its hash, and the rows regrouped by
     * part (row, hash, position in the batch, id found), part_cap each in
     * one block */
    uint8_t *part_block;
    int64_t part_cap;
    uint64_t *hashes, *part_hashes;
    int32_t *part_rows, *part_pos, *part_ids;
} hj_state;

enum { PART_ROW_BYTES = 8 + 8 + 4 + 4 + 4 };

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
            em_expr_prog_destroy(s->progs[k]);
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

/* Frees an index over n_rows build rows allocated from pool. */
static void index_free(hj_index *x, em_pool *pool, int64_t n_rows) {
    for (int p = 0; p < x->n_parts; p++)
        em_ht_free(x->ht[p]);
    if (x->offsets)
        em_pool_free(pool, x->offsets, (x->n_ids + 1) * 4);
    if (x->rows)
        em_pool_free(pool, x->rows, n_rows * 4);
    memset(x, 0, sizeof *x);
}

static void hj_index_free(jn_state *j) {
    hj_state *h = (hj_state *)j;
    em_pool *pool = j->op->ctx ? j->op->ctx->pool : NULL;
    for (int s = 0; s < 2; s++)
        free_side(&h->keys[s], h->n_keys);
    free(h->types);
    h->types = NULL;
    if (!h->borrowed)
        index_free(&h->x, pool, j->n_build);
    memset(&h->x, 0, sizeof h->x);
    h->borrowed = false;
    if (h->ids)
        em_pool_free(pool, h->ids, h->ids_cap * 4);
    if (h->part_block)
        em_pool_free(pool, h->part_block, h->part_cap * PART_ROW_BYTES);
    h->ids = h->part_rows = h->part_pos = h->part_ids = NULL;
    h->hashes = h->part_hashes = NULL;
    h->part_block = NULL;
    h->ids_cap = h->part_cap = 0;
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
        s->pass[k] = em_opu_passthrough_index(e, em_op_child_attrs(op, side), child->n_output);
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

/* Evaluates one side's keys over a batch into s->view (computed keys in pool). */
static em_status eval_side(hj_state *h, int side, const em_batch *b, em_pool *pool,
                           em_error *err) {
    hj_side_keys *s = &h->keys[side];
    for (int k = 0; k < h->n_keys; k++) {
        if (!s->progs[k]) {
            s->view[k] = &b->cols[s->pass[k]];
            continue;
        }
        em_column_reset(&s->cols[k]);
        EM_TRY(em_expr_eval(s->progs[k], b, pool, &s->cols[k], err));
        s->view[k] = &s->cols[k];
    }
    return EM_OK;
}

static em_status ensure_ids(hj_state *h, int64_t n, em_error *err) {
    em_pool *pool = h->j.op->ctx->pool;
    if (n > h->ids_cap) {
        int64_t nc = h->ids_cap ? h->ids_cap : 256;
        while (nc < n)
            nc *= 2;
        int32_t *p = em_pool_realloc(pool, h->ids, h->ids_cap * 4, nc * 4, err);
        if (!p)
            return err ? err->code : EM_ERR_NOMEM;
        em_jn_account(&h->j, (nc - h->ids_cap) * 4);
        h->ids = p;
        h->ids_cap = nc;
    }
    if (h->x.n_parts <= 1 || h->part_cap >= h->ids_cap)
        return EM_OK;
    /* a split index's probe scratch, one block (its content is per batch) */
    int64_t nc = h->ids_cap;
    uint8_t *b = em_pool_alloc(pool, nc * PART_ROW_BYTES, err);
    if (!b)
        return err ? err->code : EM_ERR_NOMEM;
    if (h->part_block)
        em_pool_free(pool, h->part_block, h->part_cap * PART_ROW_BYTES);
    em_jn_account(&h->j, (nc - h->part_cap) * PART_ROW_BYTES);
    h->part_block = b;
    h->part_cap = nc;
    h->hashes = (uint64_t *)b;
    h->part_hashes = (uint64_t *)(b + nc * 8);
    h->part_rows = (int32_t *)(b + nc * 16);
    h->part_pos = (int32_t *)(b + nc * 20);
    h->part_ids = (int32_t *)(b + nc * 24);
    return EM_OK;
}

enum { RESERVE_KEYS = 1 << 21 };

/* One table over n build rows: ids is scratch of n entries; everything is
 * allocated from pool. */
static em_status index_rows(hj_state *h, const em_batch *build, int64_t n, int32_t *ids,
                            em_pool *pool, hj_index *x, em_error *err) {
    int bs = h->j.build_side;
    x->n_parts = 1;
    EM_TRY(em_ht_create(h->types, h->n_keys, false, pool, &x->ht[0], err));
    if (n > 0) {
        /* n rows hold at most n keys, and most build sides have unique keys:
         * the table is sized once rather than doubled up to them. At most
         * RESERVE_KEYS though: a large side is more often a fact table with
         * repeated keys (lineitem by order), whose table reserved by rows
         * would be several times what its keys need; and not when that could
         * cost a tight budget. */
        int64_t want = n < RESERVE_KEYS ? n : RESERVE_KEYS;
        if (em_pool_headroom(pool) > 64 * want)
            EM_TRY(em_ht_reserve(x->ht[0], want, err));
        EM_TRY(eval_side(h, bs, build, pool, err));
        em_status s = em_ht_find_or_insert(x->ht[0], h->keys[bs].view, NULL, n, ids, err);
        /* the build keys are not needed any more */
        for (int k = 0; k < h->n_keys; k++)
            em_column_reset(&h->keys[bs].cols[k]);
        EM_TRY(s);
    }
    x->n_ids = em_ht_size(x->ht[0]);
    x->base[1] = (int32_t)x->n_ids;
    x->offsets = em_pool_calloc(pool, (x->n_ids + 1) * 4, err);
    if (!x->offsets)
        return err ? err->code : EM_ERR_NOMEM;
    x->rows = em_pool_alloc(pool, n * 4, err);
    if (!x->rows)
        return err ? err->code : EM_ERR_NOMEM;
    /* counting sort of the build rows by id, keeping build order within an id */
    int32_t *off = x->offsets;
    for (int64_t r = 0; r < n; r++) {
        if (ids[r] >= 0)
            off[ids[r] + 1]++;
        else
            x->has_null_key = true;
    }
    for (int64_t i = 0; i < x->n_ids; i++)
        off[i + 1] += off[i];
    for (int64_t r = 0; r < n; r++)
        if (ids[r] >= 0)
            x->rows[off[ids[r]]++] = (int32_t)r;
    for (int64_t i = x->n_ids; i > 0; i--)
        off[i] = off[i - 1];
    off[0] = 0;
    return EM_OK;
}

/* ------------------------------------------------------------------ split index */

/* A split index is built in four passes, each cut into items for em_par:
 * by row chunk, each row's part (from its hash) and the chunk's count per
 * part; by row chunk, the rows regrouped by part (build order kept within a
 * part); by part, its table over its rows; by part, its rows grouped by id.
 * Only the prefix sums between the passes run on one thread. Every item
 * writes its own stretch of the shared arrays. */
enum { SPLIT_MIN_ROWS = 1 << 18, SPLIT_CHUNK = 1 << 16 };

typedef struct hj_split {
    const em_column *const *keys;
    em_pool *pool;
    hj_index *x;
    int64_t n, n_chunks;
    uint8_t *part_of;  /* n: each row's part */
    int64_t *at;       /* n_chunks * n_parts: a chunk's count, then its first slot, per part */
    int32_t *rows;     /* n: the rows by part */
    int32_t *lids;     /* n: each of those rows' id in its part's table */
    int64_t start[HJ_MAX_PARTS + 1]; /* each part's first entry in rows */
    int64_t keyed[HJ_MAX_PARTS];     /* rows with a non-null key per part */
    int64_t row_start[HJ_MAX_PARTS + 1];
} hj_split;

static em_status split_hash(void *arg, int64_t c, em_error *err) {
    (void)err;
    hj_split *sp = arg;
    hj_index *x = sp->x;
    int64_t lo = c * SPLIT_CHUNK, hi = lo + SPLIT_CHUNK < sp->n ? lo + SPLIT_CHUNK : sp->n;
    int64_t *count = sp->at + c * x->n_parts;
    uint64_t hs[256];
    int32_t sel[256];
    for (int64_t b = lo; b < hi; b += 256) {
        int64_t m = hi - b < 256 ? hi - b : 256;
        for (int64_t i = 0; i < m; i++)
            sel[i] = (int32_t)(b + i);
        em_ht_hash_rows(x->ht[0], sp->keys, sel, m, hs);
        for (int64_t i = 0; i < m; i++) {
            uint8_t p = (uint8_t)(hs[i] >> x->part_shift);
            sp->part_of[b + i] = p;
            count[p]++;
        }
    }
    return EM_OK;
}

static em_status split_scatter(void *arg, int64_t c, em_error *err) {
    (void)err;
    hj_split *sp = arg;
    int64_t lo = c * SPLIT_CHUNK, hi = lo + SPLIT_CHUNK < sp->n ? lo + SPLIT_CHUNK : sp->n;
    int64_t *at = sp->at + c * sp->x->n_parts;
    for (int64_t r = lo; r < hi; r++)
        sp->rows[at[sp->part_of[r]]++] = (int32_t)r;
    return EM_OK;
}

static em_status split_insert(void *arg, int64_t p, em_error *err) {
    hj_split *sp = arg;
    em_hash_table *ht = sp->x->ht[p];
    int64_t lo = sp->start[p], m = sp->start[p + 1] - lo;
    int64_t cap = RESERVE_KEYS / sp->x->n_parts, want = m < cap ? m : cap;
    if (want > 0 && em_pool_headroom(sp->pool) > 64 * want * sp->x->n_parts)
        EM_TRY(em_ht_reserve(ht, want, err));
    EM_TRY(em_ht_find_or_insert(ht, sp->keys, sp->rows + lo, m, sp->lids + lo, err));
    int64_t keyed = 0;
    for (int64_t i = lo; i < lo + m; i++)
        keyed += sp->lids[i] >= 0;
    sp->keyed[p] = keyed;
    return EM_OK;
}

/* Part p's rows grouped by id into x->rows[row_start[p] ..), its ids'
 * offsets[base[p] .. base[p + 1] - 1] (the offset at base[p + 1] is the
 * next part's first, or set at the end for the last). */
static em_status split_group(void *arg, int64_t p, em_error *err) {
    (void)err;
    hj_split *sp = arg;
    hj_index *x = sp->x;
    int32_t *off = x->offsets, b0 = x->base[p], b1 = x->base[p + 1];
    int64_t lo = sp->start[p], hi = sp->start[p + 1];
    for (int64_t i = lo; i < hi; i++)
        if (sp->lids[i] >= 0)
            off[b0 + sp->lids[i]]++;
    int64_t run = sp->row_start[p];
    for (int32_t id = b0; id < b1; id++) {
        int32_t c = off[id];
        off[id] = (int32_t)run;
        run += c;
    }
    for (int64_t i = lo; i < hi; i++)
        if (sp->lids[i] >= 0)
            x->rows[off[b0 + sp->lids[i]]++] = sp->rows[i];
    /* each offset now holds its id's end: move them up one */
    for (int32_t id = b1 - 1; id > b0; id--)
        off[id] = off[id - 1];
    if (b1 > b0)
        off[b0] = (int32_t)sp->row_start[p];
    return EM_OK;
}

/* The index over n build rows in n_parts tables (see hj_split). */
static em_status index_split(hj_state *h, const em_batch *build, int64_t n, int n_parts,
                             em_pool *pool, em_par *par, hj_index *x, em_error *err) {
    int bs = h->j.build_side;
    x->n_parts = n_parts;
    x->part_shift = 64 - __builtin_ctz((unsigned)n_parts);
    for (int p = 0; p < n_parts; p++)
        EM_TRY(em_ht_create(h->types, h->n_keys, false, pool, &x->ht[p], err));
    EM_TRY(eval_side(h, bs, build, pool, err));
    hj_split sp = {.keys = h->keys[bs].view, .pool = pool, .x = x, .n = n};
    sp.n_chunks = (n + SPLIT_CHUNK - 1) / SPLIT_CHUNK;
    int64_t at_bytes = sp.n_chunks * n_parts * 8;
    sp.part_of = em_pool_alloc(pool, n, err);
    sp.at = sp.part_of ? em_pool_calloc(pool, at_bytes, err) : NULL;
    sp.rows = sp.at ? em_pool_alloc(pool, n * 4, err) : NULL;
    sp.lids = sp.rows ? em_pool_alloc(pool, n * 4, err) : NULL;
    em_status s = sp.lids ? EM_OK : err ? err->code : EM_ERR_NOMEM;
    if (s == EM_OK)
        s = em_par_for_each(par, sp.n_chunks, split_hash, &sp, err);
    if (s == EM_OK) {
        /* each (chunk, part)'s first slot: parts in turn, chunks in order */
        int64_t run = 0;
        for (int p = 0; p < n_parts; p++) {
            sp.start[p] = run;
            for (int64_t c = 0; c < sp.n_chunks; c++) {
                int64_t k = sp.at[c * n_parts + p];
                sp.at[c * n_parts + p] = run;
                run += k;
            }
        }
        sp.start[n_parts] = run;
        s = em_par_for_each(par, sp.n_chunks, split_scatter, &sp, err);
    }
    if (s == EM_OK)
        s = em_par_for_each(par, n_parts, split_insert, &sp, err);
    if (s == EM_OK) {
        int64_t ids = 0, rows = 0;
        for (int p = 0; p < n_parts; p++) {
            x->base[p] = (int32_t)ids;
            sp.row_start[p] = rows;
            ids += em_ht_size(x->ht[p]);
            rows += sp.keyed[p];
        }
        x->base[n_parts] = (int32_t)ids;
        sp.row_start[n_parts] = rows;
        x->n_ids = ids;
        x->has_null_key = rows < n;
        x->offsets = em_pool_calloc(pool, (ids + 1) * 4, err);
        x->rows = x->offsets ? em_pool_alloc(pool, n * 4, err) : NULL;
        s = x->rows ? EM_OK : err ? err->code : EM_ERR_NOMEM;
    }
    if (s == EM_OK) {
        s = em_par_for_each(par, n_parts, split_group, &sp, err);
        x->offsets[x->n_ids] = (int32_t)sp.row_start[n_parts];
    }
    for (int k = 0; k < h->n_keys; k++)
        em_column_reset(&h->keys[bs].cols[k]);
    if (sp.lids)
        em_pool_free(pool, sp.lids, n * 4);
    if (sp.rows)
        em_pool_free(pool, sp.rows, n * 4);
    if (sp.at)
        em_pool_free(pool, sp.at, at_bytes);
    if (sp.part_of)
        em_pool_free(pool, sp.part_of, n);
    return s;
}

static void adopt_index(hj_state *h, const hj_index *x) {
    h->x = *x;
    h->j.build_has_null_key = x->has_null_key;
}

static em_status hj_build(jn_state *j, em_error *err) {
    hj_state *h = (hj_state *)j;
    int64_t n = j->n_build;
    EM_TRY(ensure_ids(h, n, err));
    hj_index x = {0};
    em_status s = index_rows(h, j->build, n, h->ids, j->op->ctx->pool, &x, err);
    adopt_index(h, &x); /* freed with the operator, also after a failure */
    EM_TRY(s);
    em_jn_account(j, (h->x.n_ids + 1) * 4 + n * 4 + em_ht_bytes(h->x.ht[0]));
    return EM_OK;
}

/* ------------------------------------------------------------------ shared build */

static void hj_shared_free(void *obj) {
    hj_shared *sh = obj;
    if (!sh)
        return;
    index_free(&sh->x, sh->pool, sh->build ? sh->build->n_rows : 0);
    em_batch_destroy(sh->build); /* last: the rows' size is read from it */
    free(sh);
}

typedef struct hj_concat {
    const em_batch_list *rel;
    em_batch *out;
} hj_concat;

/* Column c of the relation into the concatenated batch. */
static em_status concat_column(void *arg, int64_t c, em_error *err) {
    hj_concat *cc = arg;
    em_column *dst = &cc->out->cols[c];
    for (int64_t i = 0; i < cc->rel->n_batches; i++) {
        const em_batch *b = cc->rel->batches[i];
        EM_TRY(em_column_append_rows(dst, &b->cols[c], b->sel, em_batch_rows(b), err));
    }
    return EM_OK;
}

/* The relation as one batch, its buffers sized once (growing a batch of
 * millions of rows by doubling would copy it over and over), a column per
 * item of par. */
static em_status concat_relation(const em_schema *schema, const em_batch_list *rel,
                                 em_pool *pool, em_par *par, em_batch **out, em_error *err) {
    if (rel->n_rows > INT32_MAX - 1)
        return EM_FAIL(err, EM_ERR_OOM_BUDGET, "build side exceeds 2^31 rows");
    EM_TRY(em_batch_create(schema, rel->n_rows, pool, out, err));
    em_batch *b = *out;
    for (int c = 0; c < b->n_cols; c++) {
        for (int64_t i = 0; i < rel->n_batches; i++)
            if (rel->batches[i]->n_cols != b->n_cols ||
                !em_type_equal(rel->batches[i]->cols[c].type, b->cols[c].type))
                return EM_FAIL(err, EM_ERR_TYPE, "broadcast batch %lld does not fit the join's "
                               "build schema (column %d)", (long long)i, c);
        if (!em_type_is_varlen(b->cols[c].type))
            continue;
        int64_t bytes = 0;
        for (int64_t i = 0; i < rel->n_batches; i++) {
            const em_column *src = &rel->batches[i]->cols[c];
            bytes += src->data ? src->data->size : 0;
        }
        EM_TRY(em_column_reserve(&b->cols[c], 0, bytes, err));
    }
    hj_concat cc = {rel, b};
    EM_TRY(em_par_for_each(par, b->n_cols, concat_column, &cc, err));
    b->n_rows = rel->n_rows;
    return EM_OK;
}

/* How many parts a shared build of n rows is split into: none below
 * SPLIT_MIN_ROWS or without helpers; else about two per thread, so that
 * one slow part does not leave the others idle. */
static int split_parts(const em_par *par, int64_t n, em_pool *pool) {
    if (!par || par->width < 2 || n < SPLIT_MIN_ROWS || em_pool_headroom(pool) < 64 * n)
        return 1;
    int p = 2;
    while (p < 2 * par->width && p < HJ_MAX_PARTS)
        p *= 2;
    return p;
}

static em_status hj_shared_build(void *arg, const em_batch_list *rel, em_pool *pool, em_par *par,
                                 void **obj, em_error *err) {
    hj_state *h = arg;
    hj_shared *sh = calloc(1, sizeof *sh);
    *obj = sh;
    if (!sh)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building a shared hash table");
    sh->pool = pool;
    EM_TRY(concat_relation(&jn_child(&h->j, h->j.build_side)->schema, rel, pool, par, &sh->build,
                           err));
    int64_t n = sh->build->n_rows;
    int parts = split_parts(par, n, pool);
    if (parts > 1)
        return index_split(h, sh->build, n, parts, pool, par, &sh->x, err);
    int32_t *ids = em_pool_alloc(pool, n * 4, err);
    if (!ids)
        return err ? err->code : EM_ERR_NOMEM;
    em_status s = index_rows(h, sh->build, n, ids, pool, &sh->x, err);
    em_pool_free(pool, ids, n * 4);
    return s;
}

/* The broadcast a BroadcastHashJoin's build child reads, or NULL when the
 * child is anything else (a row transition in a mixed tree). */
static const em_plan_node *shared_exchange(const hj_state *h) {
    const em_op *child = jn_child(&h->j, h->j.build_side);
    const em_plan_node *x = child->node;
    if (h->j.op->node->kind != EM_NODE_BROADCAST_HASH_JOIN || child->n_children != 0 || !x)
        return NULL;
    if (x->is_input) /* a fragment's broadcast, whatever node Spark read it through */
        return x->input_broadcast ? x : NULL;
    if (x->kind == EM_NODE_REUSED_EXCHANGE)
        x = x->reuses;
    return x && x->kind == EM_NODE_BROADCAST_EXCHANGE ? x : NULL;
}

/* What tells this join's index apart from others over the same broadcast:
 * the build keys by column position (a computed key by its text and the
 * node whose attributes it names) and their types. False when it does not
 * fit. */
static bool share_key(const hj_state *h, char *buf, size_t cap) {
    const hj_side_keys *s = &h->keys[h->j.build_side];
    const em_op *child = jn_child(&h->j, h->j.build_side);
    size_t len = 0;
    for (int k = 0; k < h->n_keys; k++) {
        char type[64], *text = NULL;
        size_t tl = 0;
        em_type_format(h->types[k], type, sizeof type);
        int w;
        if (s->progs[k]) {
            em_error e;
            if (em_expr_print(s->exprs[k], NULL, &text, &tl, &e) != EM_OK)
                return false;
            w = snprintf(buf + len, cap - len, "%s(%s@%d):%s", k ? "," : "", text,
                         child->node->id, type);
            free(text);
        } else {
            w = snprintf(buf + len, cap - len, "%sc%d:%s", k ? "," : "", s->pass[k], type);
        }
        if (w < 0 || (size_t)w >= cap - len)
            return false;
        len += (size_t)w;
    }
    return true;
}

static em_status hj_adopt(jn_state *j, bool *done, em_error *err) {
    hj_state *h = (hj_state *)j;
    em_exec_ctx *ctx = j->op->ctx;
    *done = false;
    const em_plan_node *x = shared_exchange(h);
    char what[1024];
    if (!x || !ctx->broadcast_shared || !share_key(h, what, sizeof what))
        return EM_OK;
    void *obj = NULL;
    EM_TRY(ctx->broadcast_shared(ctx, x, what, hj_shared_build, hj_shared_free, h, &obj, err));
    const hj_shared *sh = obj;
    j->build = sh->build;
    j->build_borrowed = true;
    j->n_build = sh->build->n_rows;
    adopt_index(h, &sh->x);
    h->borrowed = true;
    *done = true;
    return EM_OK;
}

/* h->ids of n stream rows against a split index: hashed once, regrouped
 * by part, each part's rows looked up in its table (smaller than one table
 * of every key, so more of it stays in cache). */
static void probe_split(hj_state *h, const em_column *const *keys, const int32_t *sel,
                        int64_t n) {
    const hj_index *x = &h->x;
    int32_t *rows = h->part_rows;
    if (!sel) { /* hash_rows takes the rows by selection */
        for (int64_t k = 0; k < n; k++)
            h->part_ids[k] = (int32_t)k;
        sel = h->part_ids;
    }
    em_ht_hash_rows(x->ht[0], keys, sel, n, h->hashes);
    int64_t at[HJ_MAX_PARTS + 1] = {0};
    for (int64_t k = 0; k < n; k++)
        at[(h->hashes[k] >> x->part_shift) + 1]++;
    for (int p = 0; p < x->n_parts; p++)
        at[p + 1] += at[p];
    int64_t first[HJ_MAX_PARTS];
    memcpy(first, at, sizeof first);
    for (int64_t k = 0; k < n; k++) {
        int p = (int)(h->hashes[k] >> x->part_shift);
        int64_t i = at[p]++;
        rows[i] = sel[k];
        h->part_hashes[i] = h->hashes[k];
        h->part_pos[i] = (int32_t)k;
    }
    for (int p = 0; p < x->n_parts; p++) {
        int64_t lo = first[p], m = at[p] - lo;
        if (m == 0)
            continue;
        em_ht_find_hashed(x->ht[p], keys, rows + lo, m, h->part_hashes + lo, h->part_ids + lo);
        for (int64_t i = lo; i < lo + m; i++) {
            int32_t id = h->part_ids[i];
            h->ids[h->part_pos[i]] = id >= 0 ? id + x->base[p] : -1;
        }
    }
}

static em_status hj_probe(jn_state *j, const em_batch *in, int32_t *lo, int32_t *hi,
                          em_error *err) {
    hj_state *h = (hj_state *)j;
    int ss = jn_stream_side(j);
    int64_t n = em_batch_rows(in);
    EM_TRY(ensure_ids(h, n, err));
    EM_TRY(eval_side(h, ss, in, j->op->ctx->pool, err));
    const em_column *const *keys = h->keys[ss].view;
    if (h->x.n_parts > 1)
        probe_split(h, keys, in->sel, n);
    else
        EM_TRY(em_ht_find(h->x.ht[0], keys, in->sel, n, h->ids, err));
    const int32_t *off = h->x.offsets;
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
    j->cand_rows = h->x.rows;
    return EM_OK;
}

static const jn_index_vtab HJ_INDEX = {hj_build, hj_probe, hj_index_free};

static em_status hj_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    hj_state *h = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    EM_TRY(em_op_open(op->children[1], ctx, err));
    EM_TRY(em_jn_open(&h->j, op, &HJ_INDEX, h->build_side, err));
    h->j.adopt = hj_adopt;
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

/* ------------------------------------------------------------------ side swap */

/* Whether a node in the stream's subtree may give it an order a parent
 * relies on (a BroadcastHashJoin passes its stream side's order on). */
static bool may_be_ordered(const em_op *op) {
    if (op->node) {
        switch (op->node->kind) {
        case EM_NODE_SORT:
        case EM_NODE_SORT_MERGE_JOIN:
        case EM_NODE_SORT_AGGREGATE:
        case EM_NODE_WINDOW:
        case EM_NODE_WINDOW_GROUP_LIMIT:
        case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        case EM_NODE_COLLECT_LIMIT:
        case EM_NODE_GLOBAL_LIMIT:
        case EM_NODE_LOCAL_LIMIT:
            return true;
        default:
            break;
        }
    }
    if (op->vtab->visit_hidden) /* row operators behind a transition: not inspected */
        return true;
    for (int i = 0; i < op->n_children; i++)
        if (may_be_ordered(op->children[i]))
            return true;
    return false;
}

/* A swap needs a broadcast of SWAP_MIN_BROADCAST rows or more and a stream
 * of at most 1/SWAP_RATIO of it. The rows read ahead to find out are
 * copied, and wasted when the stream turns out larger: for the joins other
 * than inner, whose streams are more often most of a fact table (TPC-H
 * q21's semi join of 3.8 M lineitem rows against all 6 M), the read-ahead
 * also stops at SWAP_MAX_STREAM rows (measured: q21 +15% without it, and
 * inner joins' swaps of larger streams pay, q3 and q5 -30%). */
enum { SWAP_MIN_BROADCAST = 4096, SWAP_RATIO = 8, SWAP_MAX_STREAM = 1 << 17 };

/* The batches of a list as one new batch. */
static em_status concat_list(const em_schema *schema, const em_batch_list *l, em_pool *pool,
                             em_batch **out, em_error *err) {
    EM_TRY(em_batch_create(schema, l->n_rows, pool, out, err));
    for (int64_t i = 0; i < l->n_batches; i++)
        EM_TRY(em_batch_append(*out, l->batches[i], err));
    return EM_OK;
}

/* Appends a copy of b's present rows to a read-ahead list. */
static em_status read_ahead(jn_state *j, em_batch_list *l, const em_batch *b, em_error *err) {
    int64_t n = l->n_batches;
    if (n == 0 || (n & (n - 1)) == 0) {
        em_batch **nb = realloc(l->batches, sizeof *nb * (size_t)(n ? n * 2 : 1));
        if (!nb)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the stream ahead");
        l->batches = nb;
    }
    em_batch *c = NULL;
    EM_TRY(em_batch_create(&b->schema, em_batch_rows(b), j->op->ctx->pool, &c, err));
    em_status s = em_batch_append(c, b, err);
    if (s != EM_OK) {
        em_batch_destroy(c);
        return s;
    }
    l->batches[l->n_batches++] = c;
    l->n_rows += c->n_rows;
    return EM_OK;
}

/*
 * Spark chose the broadcast side from size estimates it did not have (plans
 * made over empty tables broadcast all of lineitem against a stream of a few
 * thousand rows; an EXISTS broadcasts the subquery's side, however large).
 * Which side is indexed does not change a join's result, only its order,
 * as long as the side the task keeps rows of (an outer join's preserved
 * side, a semi, anti or existence join's left) is its own stream, never the
 * broadcast every task reads whole: when the stream of this task ends
 * before reaching 1/SWAP_RATIO of a large broadcast, the stream rows are
 * indexed and the broadcast is streamed through them (the kept rows then
 * come out after it, from the matched bitmap). Otherwise the rows read
 * ahead are replayed as the stream, in order. Not done when the stream may
 * carry an order a parent relies on, nor for the null-aware anti join.
 */
static bool swappable(const jn_state *j) {
    if (j->null_aware)
        return false;
    if (j->type == EM_JOIN_INNER)
        return true;
    if (j->build_side == JN_RIGHT) /* the broadcast is the right side */
        return j->type == EM_JOIN_LEFT_OUTER || j->exist_kind;
    return j->type == EM_JOIN_RIGHT_OUTER;
}

static em_status maybe_swap(hj_state *h, em_error *err) {
    jn_state *j = &h->j;
    em_exec_ctx *ctx = j->op->ctx;
    const em_plan_node *x = shared_exchange(h);
    if (!x || !swappable(j) || !ctx->broadcast_input)
        return EM_OK;
    const em_batch_list *rel = NULL;
    EM_TRY(ctx->broadcast_input(ctx, x, &rel, err));
    em_op *sc = jn_child(j, jn_stream_side(j));
    if (rel->n_rows < SWAP_MIN_BROADCAST || may_be_ordered(sc))
        return EM_OK;
    int64_t limit = rel->n_rows / SWAP_RATIO, rows = 0;
    if (j->type != EM_JOIN_INNER && limit > SWAP_MAX_STREAM)
        limit = SWAP_MAX_STREAM;
    for (;;) {
        em_batch *b = NULL;
        em_status s = em_op_next(sc, &b, err);
        if (s == EM_DONE)
            break;
        if (s != EM_OK) {
            j->child_failed = true;
            return s;
        }
        EM_TRY(read_ahead(j, &j->replay, b, err));
        rows += em_batch_rows(b);
        if (rows > limit)
            return EM_OK; /* replayed as the stream */
    }
    /* the whole stream is read: index it, stream the broadcast */
    EM_TRY(concat_list(&sc->schema, &j->replay, ctx->pool, &j->prebuilt, err));
    em_batch_list_reset(&j->replay);
    h->build_side = jn_stream_side(j);
    em_jn_set_build_side(j, h->build_side);
    h->swapped = true;
    return EM_OK;
}

/*
 * A SortMergeJoin whose order nobody above relies on (order_unwanted) runs
 * as a hash join over either side: the smaller one is indexed, which Spark
 * could not know when it planned (its two sorted sides cost it the same
 * either way, and Ember's default, the right side, is often the larger: an
 * EXISTS over lineitem, a customer LEFT JOIN orders). Both sides are read
 * a batch at a time in turn, left first, until one ends: that one is built,
 * the other's rows read so far are replayed as the stream. The rows read
 * ahead are at most the smaller side's twice. Not under a memory budget,
 * where reading ahead would take what the build side needs.
 */
static em_status race_sides(hj_state *h, em_error *err) {
    jn_state *j = &h->j;
    em_exec_ctx *ctx = j->op->ctx;
    if (j->op->node->kind != EM_NODE_SORT_MERGE_JOIN || !j->op->node->order_unwanted ||
        em_jn_node_null_aware(j->op->node) || em_pool_limit(ctx->pool) >= 0)
        return EM_OK;
    em_batch_list got[2];
    memset(got, 0, sizeof got);
    int ended = -1;
    em_status s = EM_OK;
    while (ended < 0 && s == EM_OK) {
        for (int side = 0; side < 2 && ended < 0 && s == EM_OK; side++) {
            em_batch *b = NULL;
            s = em_op_next(jn_child(j, side), &b, err);
            if (s == EM_DONE) {
                s = EM_OK;
                ended = side;
            } else if (s == EM_OK) {
                s = read_ahead(j, &got[side], b, err);
            } else {
                j->child_failed = true;
            }
        }
    }
    if (s == EM_OK)
        s = concat_list(&jn_child(j, ended)->schema, &got[ended], ctx->pool, &j->prebuilt, err);
    if (s != EM_OK) {
        em_batch_list_reset(&got[0]);
        em_batch_list_reset(&got[1]);
        return s;
    }
    em_batch_list_reset(&got[ended]); /* copied into prebuilt */
    j->replay = got[1 - ended];
    h->build_side = ended;
    em_jn_set_build_side(j, ended);
    return EM_OK;
}

static em_status hj_next(em_op *op, em_batch **out, em_error *err) {
    hj_state *h = op->state;
    if (!h->decided) {
        h->decided = true;
        if (maybe_swap(h, err) != EM_OK || race_sides(h, err) != EM_OK)
            return h->j.child_failed ? err->code : em_op_fail(op, err);
    }
    return em_jn_next(&h->j, out, err);
}

static void hj_close(em_op *op) {
    hj_state *h = op->state;
    if (h) {
        if (h->j.op)
            em_jn_close(&h->j);
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

em_status em_jn_hash_join_create(const em_plan_node *node, em_op *left, em_op *right, int build_side,
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
    return em_jn_hash_join_create(node, left, right,
                               node->build_side == EM_BUILD_LEFT ? JN_LEFT : JN_RIGHT, out, err);
}
