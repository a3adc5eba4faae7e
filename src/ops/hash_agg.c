/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HashAggregate (also SortAggregate and ObjectHashAggregate, which compute
 * the same result): groups the input by Keys and folds every row into its
 * group's aggregation buffers, in Spark's modes.
 *
 * Modes come from the functions: partial_f updates buffers from input rows,
 * merge_f and f (Final/Complete print alike) merge buffers that a partial
 * aggregate produced. Merge buffers are bound by position: Spark puts them
 * last in the child's output (after the child's grouping columns), in
 * function order, so the first merge buffer is column
 * n_input - (total buffers of merging functions). count(DISTINCT x) needs no
 * special case: Spark plans it as aggregates stacked over a grouping by x.
 *
 * Output: when any function is in final mode, the Results expressions are
 * evaluated over [Keys..., Aggregate Attributes...] (final values); else the
 * output is the keys followed by every function's buffers, matched to
 * Results by position (their ids differ from Aggregate Attributes' in
 * Spark's text). Without keys there is exactly one group, also on empty
 * input (Spark returns one row for a global aggregate in every mode); with
 * keys, empty input gives no rows. Null keys form a group.
 *
 * Groups get dense ids from hash_table.c, which also stores the key columns;
 * aggregate state lives in em_agg_state arrays indexed by group id. The
 * input is drained on the first next; groups are then emitted in batches of
 * EM_BATCH_CAP rows. Memory: the table and states are charged to the task's
 * pool, and a full pool is handled by shedding groups, as Spark's
 * aggregates fall back when their map outgrows its memory:
 *
 * - A partial aggregate (partial_/merge_ functions, with keys) emits its
 *   groups' buffers so far and starts again with an empty table, which is
 *   correct because the aggregate above merges buffers of the same key
 *   (Spark's partial aggregates may emit a key several times).
 * - Any other grouped aggregate (final or Complete functions, or keys
 *   only, as DISTINCT plans) must see all of a key's rows before emitting
 *   it: it spills. The groups' buffers (the partial layout, whatever the
 *   mode) are written with their keys to HAGG_FANOUT spill files by a hash
 *   of the key, and the table starts again. At the end of the input the
 *   rest is spilled too, and every partition is aggregated in turn by
 *   merging its buffer rows into a fresh table. A partition that still
 *   does not fit is repartitioned with another hash seed, at most
 *   HAGG_MAX_DEPTH times; past that the task fails with EM_ERR_OOM_BUDGET
 *   naming this operator. Spill files are removed as soon as they are read,
 *   and on close.
 * - Without keys there is one group: nothing to shed.
 *
 * Groups are shed before a batch when the table and states hold more than
 * a fraction of the pool's budget (a third for a flush, a quarter for a
 * spill: growth doubles the table and states, and finalizing or spilling
 * copies the buffers once), or the pool as a whole is past three quarters
 * of it; and when a charge fails while a batch is folded: the batch is then
 * folded again, into the empty table, from the first function that had
 * not folded it (a function's buffer that has not seen a row is its
 * identity under merge, so the batch's rows are counted once). A batch
 * that does not fit into an empty table fails the task.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/hash_table.h"
#include "ops/op_util.h"
#include "ops/spill.h"

#define HAGG_FANOUT 16   /* spill partitions per partitioning (a power of two) */
#define HAGG_MAX_DEPTH 4 /* partitionings of one key range before giving up */

/* One spilled partition, aggregated in a round of its own. */
typedef struct hagg_part {
    em_spill *file;
    int depth; /* partitionings that made it: the next one uses seed `depth` */
} hagg_part;

typedef struct hagg_state {
    int n_keys;
    int *key_pass;           /* child ordinal, or -1 when computed */
    em_expr_prog **key_prog; /* computed keys */
    em_column *key_tmp;      /* computed key columns of the current batch */
    const em_column **key_cols;
    em_hash_table *ht;
    em_type *key_types;
    int n_fns;
    em_agg_fn **fns;
    em_agg_state **states;
    int *first_col; /* merge-mode functions: first buffer column in the input */
    bool final;     /* some function is in final mode */
    bool complete;  /* final-mode functions fold input rows (Complete mode) */
    int n_groups;
    int64_t own; /* pool bytes the table and states hold */
    int32_t *ids;
    int64_t ids_cap;
    /* shedding groups when the pool is full */
    bool can_flush;          /* partial: emit groups early */
    bool can_spill;          /* otherwise, with keys: spill them */
    em_batch *pending;       /* the child's batch to fold after a flush */
    int pending_fn;          /* ... from this function on */
    em_schema spill_schema;  /* [keys..., every function's buffers...] */
    int *spill_col;          /* function i's first buffer column in a spill */
    hagg_part parts[HAGG_FANOUT]; /* what this round spilled */
    bool round_spilled;
    hagg_part cur;       /* the partition this round aggregates */
    bool from_spill;     /* this round reads cur, not the child */
    int depth;           /* cur.depth, or 0 for the child */
    hagg_part *stack;    /* partitions left */
    int n_stack, stack_cap;
    /* output */
    bool drained;  /* the child is exhausted */
    bool finished; /* nothing left after the groups being emitted */
    bool emitting; /* result_in holds groups being emitted */
    em_batch *result_in; /* [keys..., agg attrs...] for all groups */
    const em_expr **result_attrs;
    int n_result_attrs;
    bool positional;  /* partial output: result_in's columns as they are */
    opu_proj results; /* else: Results over result_in */
    int64_t emitted;
    em_batch *chunk, *out;
} hagg_state;

/* Function i folds input rows (partial, or Complete mode) rather than
 * merging buffers. */
static inline bool hagg_updates(const hagg_state *st, int i) {
    em_agg_mode m = em_agg_fn_mode(st->fns[i]);
    return m == EM_AGG_PARTIAL || (m == EM_AGG_FINAL && st->complete);
}

/* The layout of spilled groups: the keys, then every function's buffers. */
static em_status hagg_spill_schema(hagg_state *st, em_error *err) {
    int n = st->n_keys;
    st->spill_col = calloc((size_t)st->n_fns + 1, sizeof *st->spill_col);
    if (!st->spill_col)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < st->n_fns; i++) {
        st->spill_col[i] = n;
        n += em_agg_n_buffers(st->fns[i]);
    }
    EM_TRY(em_schema_init(&st->spill_schema, n, err));
    for (int k = 0; k < st->n_keys; k++)
        EM_TRY(em_schema_set(&st->spill_schema, k, "", st->key_types[k], true, err));
    for (int i = 0; i < st->n_fns; i++)
        for (int b = 0; b < em_agg_n_buffers(st->fns[i]); b++)
            EM_TRY(em_schema_set(&st->spill_schema, st->spill_col[i] + b, "",
                                 em_agg_buffer_type(st->fns[i], b), true, err));
    return EM_OK;
}

static em_status hagg_compile(em_op *op, hagg_state *st, em_exec_ctx *ctx, em_error *err) {
    em_op *child = op->children[0];
    const em_expr *const *in_attrs = em_op_child_attrs(op, 0);
    int n_in = child->n_output;
    const em_plan_field *kf = em_plan_node_field(op->node, EM_FIELD_KEYS);
    const em_plan_field *ff = em_plan_node_field(op->node, EM_FIELD_FUNCTIONS);
    st->n_keys = kf ? kf->n_exprs : 0;
    st->n_fns = ff ? ff->n_exprs : 0;
    int nk = st->n_keys + 1, nf = st->n_fns + 1;
    st->key_pass = calloc((size_t)nk, sizeof *st->key_pass);
    st->key_prog = calloc((size_t)nk, sizeof *st->key_prog);
    st->key_tmp = calloc((size_t)nk, sizeof *st->key_tmp);
    st->key_cols = calloc((size_t)nk, sizeof *st->key_cols);
    st->fns = calloc((size_t)nf, sizeof *st->fns);
    st->states = calloc((size_t)nf, sizeof *st->states);
    st->first_col = calloc((size_t)nf, sizeof *st->first_col);
    em_type *key_types = st->key_types = calloc((size_t)nk, sizeof *key_types);
    if (!st->key_pass || !st->key_prog || !st->key_tmp || !st->key_cols || !st->fns ||
        !st->states || !st->first_col || !key_types)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_status s = EM_OK;
    for (int k = 0; s == EM_OK && k < st->n_keys; k++) {
        const em_expr *e = kf->exprs[k];
        st->key_pass[k] = em_opu_passthrough_index(e, in_attrs, n_in);
        if (st->key_pass[k] >= 0) {
            key_types[k] = child->schema.fields[st->key_pass[k]].type;
            continue;
        }
        const em_expr *body = e->kind == EM_EXPR_ALIAS && e->n_args == 1 ? e->args[0] : e;
        s = em_expr_compile(body, in_attrs, n_in, &ctx->expr_opts, &st->key_prog[k], err);
        if (s == EM_OK)
            key_types[k] = em_expr_prog_type(st->key_prog[k]);
    }
    if (s == EM_OK && st->n_keys > 0)
        s = em_ht_create(key_types, st->n_keys, true, ctx->pool, &st->ht, err);
    int merge_bufs = 0;
    /* a function printed in final form (`sum(x)`) merges buffers over another
     * aggregate, and is in Spark's Complete mode, folding input rows, when
     * none is below: the two print alike */
    st->complete =
        !em_plan_aggregate_below(op->node->n_children > 0 ? op->node->children[0] : NULL);
    for (int i = 0; s == EM_OK && i < st->n_fns; i++) {
        s = em_agg_compile(ff->exprs[i], in_attrs, n_in, &ctx->expr_opts, &st->fns[i], err);
        if (s == EM_OK)
            s = em_agg_state_create(st->fns[i], ctx->pool, &st->states[i], err);
        if (s != EM_OK)
            break;
        em_agg_mode m = em_agg_fn_mode(st->fns[i]);
        if (!hagg_updates(st, i))
            merge_bufs += em_agg_n_buffers(st->fns[i]);
        if (m == EM_AGG_FINAL)
            st->final = true;
    }
    EM_TRY(s);
    int col = n_in - merge_bufs;
    if (col < 0)
        return EM_FAIL(err, EM_ERR_BIND,
                       "the input has %d columns, fewer than the %d buffers "
                       "to merge",
                       n_in, merge_bufs);
    for (int i = 0; i < st->n_fns; i++) {
        if (hagg_updates(st, i))
            continue;
        st->first_col[i] = col;
        for (int b = 0; b < em_agg_n_buffers(st->fns[i]); b++, col++) {
            em_type want = em_agg_buffer_type(st->fns[i], b), got = child->schema.fields[col].type;
            if (!em_type_equal(want, got) && got.id != EM_TYPE_NULL) {
                char a[64], c[64];
                em_type_format(want, a, sizeof a);
                em_type_format(got, c, sizeof c);
                return EM_FAIL(err, EM_ERR_BIND,
                               "buffer %d of function %d should be %s, input column %d is %s",
                               b + 1, i + 1, a, col + 1, c);
            }
        }
    }
    st->can_flush = st->n_keys > 0 && st->n_fns > 0 && !st->final;
    st->can_spill = st->n_keys > 0 && !st->can_flush;
    if (st->can_spill)
        EM_TRY(hagg_spill_schema(st, err));
    st->n_groups = 0;
    if (st->n_keys == 0) { /* the one global group exists even without input */
        st->n_groups = 1;
        for (int i = 0; i < st->n_fns; i++)
            EM_TRY(em_agg_state_resize(st->states[i], 1, err));
    }
    return EM_OK;
}

static em_status hagg_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    hagg_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    if (hagg_compile(op, st, ctx, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

/* Folds batch `in` into the groups, from function `from` on (earlier ones
 * have folded it already). Rows read back from a spill hold [keys...,
 * buffers...] and are merged by every function. *resume gets the first
 * function that has not folded the batch, for a retry after a failure. */
static em_status hagg_consume(em_op *op, hagg_state *st, const em_batch *in, int from,
                              int *resume, em_error *err) {
    *resume = from;
    int64_t n = em_batch_rows(in);
    if (n > st->ids_cap) {
        int32_t *ids = realloc(st->ids, sizeof *ids * (size_t)n);
        if (!ids)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        st->ids = ids;
        st->ids_cap = n;
    }
    if (st->n_keys == 0) {
        memset(st->ids, 0, sizeof *st->ids * (size_t)n);
    } else {
        for (int k = 0; k < st->n_keys; k++) {
            if (st->from_spill || st->key_pass[k] >= 0) {
                st->key_cols[k] = &in->cols[st->from_spill ? k : st->key_pass[k]];
                continue;
            }
            em_column_reset(&st->key_tmp[k]);
            EM_TRY(em_expr_eval(st->key_prog[k], in, op->ctx->pool, &st->key_tmp[k], err));
            st->key_cols[k] = &st->key_tmp[k];
        }
        EM_TRY(em_ht_find_or_insert(st->ht, st->key_cols, in->sel, n, st->ids, err));
        int64_t g = em_ht_size(st->ht);
        if (g != st->n_groups) {
            for (int i = 0; i < st->n_fns; i++)
                EM_TRY(em_agg_state_resize(st->states[i], g, err));
            st->n_groups = (int)g;
        }
    }
    for (int i = from; i < st->n_fns; i++, (*resume)++) {
        if (st->from_spill)
            EM_TRY(em_agg_merge(st->fns[i], st->states[i], st->ids, in, st->spill_col[i], err));
        else if (hagg_updates(st, i))
            EM_TRY(em_agg_update(st->fns[i], st->states[i], st->ids, in, err));
        else
            EM_TRY(em_agg_merge(st->fns[i], st->states[i], st->ids, in, st->first_col[i], err));
    }
    return EM_OK;
}

/* Builds result_in = [keys..., final values or buffers...] over all groups,
 * and compiles Results against it. */
static em_status hagg_prepare_output(em_op *op, hagg_state *st, em_error *err) {
    em_pool *pool = op->ctx->pool;
    const em_plan_field *kf = em_plan_node_field(op->node, EM_FIELD_KEYS);
    const em_plan_field *af = em_plan_node_field(op->node, EM_FIELD_AGG_ATTRS);
    const em_plan_field *rf = em_plan_node_field(op->node, EM_FIELD_RESULTS);
    int n_agg_cols = 0;
    for (int i = 0; i < st->n_fns; i++)
        n_agg_cols += em_agg_fn_mode(st->fns[i]) == EM_AGG_FINAL ? 1 : em_agg_n_buffers(st->fns[i]);
    int n_cols = st->n_keys + n_agg_cols;
    /* Partial output is positional: Spark's distinct-aggregate plans list the
     * final attributes of a partial function there, not its buffers. */
    st->positional = !st->final && st->n_fns > 0;
    if (!st->positional && af && af->n_exprs != n_agg_cols)
        return EM_FAIL(err, EM_ERR_BIND,
                       "Aggregate Attributes lists %d attributes, the "
                       "functions produce %d columns",
                       af->n_exprs, n_agg_cols);
    st->result_attrs = calloc((size_t)n_cols + 1, sizeof *st->result_attrs);
    if (!st->result_attrs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_schema schema = {0};
    EM_TRY(em_schema_init(&schema, n_cols, err));
    em_status s = EM_OK;
    for (int k = 0; s == EM_OK && k < st->n_keys; k++) {
        st->result_attrs[k] = kf->exprs[k];
        em_type t = st->key_pass[k] >= 0 ? op->children[0]->schema.fields[st->key_pass[k]].type
                                         : em_expr_prog_type(st->key_prog[k]);
        s = em_schema_set(&schema, k, "", t, true, err);
    }
    int c = st->n_keys;
    for (int i = 0; s == EM_OK && i < st->n_fns; i++) {
        bool fin = em_agg_fn_mode(st->fns[i]) == EM_AGG_FINAL;
        int nb = fin ? 1 : em_agg_n_buffers(st->fns[i]);
        for (int b = 0; s == EM_OK && b < nb; b++, c++) {
            st->result_attrs[c] = af && !st->positional ? af->exprs[c - st->n_keys] : NULL;
            em_type t = fin ? em_agg_result_type(st->fns[i]) : em_agg_buffer_type(st->fns[i], b);
            s = em_schema_set(&schema, c, "", t, true, err);
        }
    }
    st->n_result_attrs = n_cols;
    if (s == EM_OK)
        s = em_opu_shell_create(&schema, pool, &st->result_in, err);
    em_schema_reset(&schema);
    EM_TRY(s);
    em_batch *ri = st->result_in;
    for (int k = 0; k < st->n_keys; k++)
        em_column_share(&ri->cols[k], em_ht_key_column(st->ht, k));
    c = st->n_keys;
    for (int i = 0; i < st->n_fns; i++) {
        if (em_agg_fn_mode(st->fns[i]) == EM_AGG_FINAL) {
            EM_TRY(em_agg_finalize(st->fns[i], st->states[i], pool, &ri->cols[c], err));
            c++;
        } else {
            EM_TRY(em_agg_emit_buffers(st->fns[i], st->states[i], pool, &ri->cols[c], err));
            c += em_agg_n_buffers(st->fns[i]);
        }
    }
    ri->n_rows = st->n_groups;

    /* Results: positional for partial output, else expressions by id */
    if (st->positional && op->n_output != n_cols)
        return EM_FAIL(err, EM_ERR_BIND, "Results lists %d attributes, keys and buffers are %d",
                       op->n_output, n_cols);
    if (!st->positional) {
        const em_expr *const *res =
            rf ? (const em_expr *const *)rf->exprs : (const em_expr *const *)op->output;
        EM_TRY(em_opu_proj_init(&st->results, res, rf ? rf->n_exprs : op->n_output, st->result_attrs,
                             n_cols, &op->ctx->expr_opts, err));
    }
    return em_opu_shell_create(&op->schema, pool, &st->out, err);
}

/* Drops what the last emission built. */
static void hagg_release_output(hagg_state *st) {
    em_opu_proj_reset(&st->results);
    free(st->result_attrs);
    st->result_attrs = NULL;
    em_batch_destroy(st->result_in);
    em_batch_destroy(st->chunk);
    em_batch_destroy(st->out);
    st->result_in = st->chunk = st->out = NULL;
}

/* Drops the groups (emitted or spilled): an empty table and fresh states. */
static em_status hagg_reset_groups(em_op *op, hagg_state *st, em_error *err) {
    hagg_release_output(st);
    em_ht_free(st->ht);
    st->ht = NULL;
    st->n_groups = 0;
    st->own = 0;
    st->emitted = 0;
    EM_TRY(em_ht_create(st->key_types, st->n_keys, true, op->ctx->pool, &st->ht, err));
    for (int i = 0; i < st->n_fns; i++) {
        em_agg_state_destroy(st->states[i]);
        st->states[i] = NULL;
        EM_TRY(em_agg_state_create(st->fns[i], op->ctx->pool, &st->states[i], err));
    }
    return EM_OK;
}

static void hagg_part_reset(hagg_part *p) {
    em_spill_free(p->file);
    memset(p, 0, sizeof *p);
}

/* The partition of a key's table hash at a depth. The hash is remixed with
 * a seed per depth, so the keys of one partition, which agree on the
 * partition at the depth above, spread over all partitions at this one,
 * and agree on none of the bits the next table probes with. */
static inline int hagg_partition_of(uint64_t h, int depth) {
    h ^= (uint64_t)(depth + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return (int)(h >> 60) & (HAGG_FANOUT - 1);
}

/* Appends the groups' keys and buffers to this round's partition files
 * (one per partition, kept open until the round ends) and empties the
 * table. Only groups [0, n_groups) are written: after a failed insert the
 * table may hold keys that no state has yet, and the retry folds them
 * again. */
static em_status hagg_spill(em_op *op, hagg_state *st, em_error *err) {
    int64_t n = st->n_groups;
    if (n == 0)
        return EM_OK;
    if (st->depth >= HAGG_MAX_DEPTH)
        return EM_FAIL(err, EM_ERR_INTERNAL, "spill past the deepest partitioning");
    em_pool *pool = op->ctx->pool;
    em_batch *b = NULL;
    uint64_t *part = NULL;
    int32_t *idx = NULL;
    em_status s = em_opu_shell_create(&st->spill_schema, pool, &b, err);
    if (s == EM_OK) {
        for (int k = 0; k < st->n_keys; k++) {
            em_column_share(&b->cols[k], em_ht_key_column(st->ht, k));
            st->key_cols[k] = &b->cols[k];
        }
        b->n_rows = n;
    }
    for (int i = 0; s == EM_OK && i < st->n_fns; i++)
        s = em_agg_emit_buffers(st->fns[i], st->states[i], pool, &b->cols[st->spill_col[i]], err);
    if (s == EM_OK && !(part = em_pool_alloc(pool, n * 8, err)))
        s = err ? err->code : EM_ERR_NOMEM;
    if (s == EM_OK && !(idx = em_pool_alloc(pool, n * 4, err)))
        s = err ? err->code : EM_ERR_NOMEM;
    if (s == EM_OK) {
        /* group numbers ordered by partition (a counting sort) */
        em_ht_hash_rows(st->ht, st->key_cols, NULL, n, part);
        int64_t at[HAGG_FANOUT + 1] = {0}, fill[HAGG_FANOUT];
        for (int64_t g = 0; g < n; g++) {
            part[g] = (uint64_t)hagg_partition_of(part[g], st->depth);
            at[part[g] + 1]++;
        }
        for (int p = 0; p < HAGG_FANOUT; p++)
            fill[p] = at[p + 1] += at[p];
        for (int p = HAGG_FANOUT - 1; p > 0; p--)
            fill[p] = at[p];
        fill[0] = 0;
        for (int64_t g = 0; g < n; g++)
            idx[fill[part[g]]++] = (int32_t)g;
        for (int p = 0; s == EM_OK && p < HAGG_FANOUT; p++) {
            if (at[p + 1] == at[p])
                continue;
            if (!st->parts[p].file)
                s = em_spill_create(&st->spill_schema, op->ctx->spill_dir, pool,
                                    &st->parts[p].file, err);
            if (s == EM_OK)
                s = em_opu_set_sel(b, idx + at[p], at[p + 1] - at[p], err);
            if (s == EM_OK)
                s = em_spill_write(st->parts[p].file, b, err);
        }
    }
    if (part)
        em_pool_free(pool, part, n * 8);
    if (idx)
        em_pool_free(pool, idx, n * 4);
    em_batch_destroy(b);
    EM_TRY(s);
    st->round_spilled = true;
    return hagg_reset_groups(op, st, err);
}

/* The end of a round that spilled: the rest is spilled too, and the
 * round's partitions are queued, one level deeper. */
static em_status hagg_end_spilled_round(em_op *op, hagg_state *st, em_error *err) {
    EM_TRY(hagg_spill(op, st, err));
    st->round_spilled = false;
    for (int p = 0; p < HAGG_FANOUT; p++) {
        if (!st->parts[p].file)
            continue;
        int64_t bytes = 0;
        EM_TRY(em_spill_finish(st->parts[p].file, &bytes, err));
        op->metrics.spill_bytes += bytes;
        if (st->n_stack == st->stack_cap) {
            int cap = st->stack_cap ? st->stack_cap * 2 : HAGG_FANOUT;
            hagg_part *stack = realloc(st->stack, sizeof *stack * (size_t)cap);
            if (!stack)
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
            st->stack = stack;
            st->stack_cap = cap;
        }
        st->parts[p].depth = st->depth + 1;
        st->stack[st->n_stack++] = st->parts[p];
        memset(&st->parts[p], 0, sizeof st->parts[p]);
    }
    return EM_OK;
}

/* True when groups should be shed before the next batch: the table and
 * states hold more than a third of the pool's budget (flush) or a quarter
 * (spill), or the pool, whoever holds it, is past three quarters, or what
 * is left of the budget would not take the table doubling. Past the
 * deepest partitioning only a failing charge stops the aggregate. */
static bool hagg_should_shed(const em_op *op, const hagg_state *st) {
    if (st->n_groups == 0 || !op->ctx->pool)
        return false;
    if (!st->can_flush && !(st->can_spill && st->depth < HAGG_MAX_DEPTH))
        return false;
    /* the task's own budget, or its share of the query's */
    int64_t budget = em_pool_limit(op->ctx->pool);
    if (op->ctx->memory_share > 0 && (budget < 0 || op->ctx->memory_share < budget))
        budget = op->ctx->memory_share;
    /* the query's pool, shared with the other tasks, nearly full: shed a
     * table of some size (a tiny one would only multiply the flushes) */
    if (st->own >= (1LL << 20) && em_pool_ancestor_pressure(op->ctx->pool) > 0.75)
        return true;
    /* what the budget has left, shared with the other tasks, would not take
     * the table's next doubling (or the copy a flush or spill makes) */
    if (st->own >= (1LL << 20) && budget > 0 &&
        em_pool_headroom(op->ctx->pool) < st->own + budget / 16)
        return true;
    return budget > 0 && (st->own > budget / (st->can_flush ? 3 : 4) ||
                          em_pool_used(op->ctx->pool) > budget / 4 * 3);
}

/* Folds a batch from function `from` on, shedding the groups when a charge
 * fails and folding the rest of the batch again into the empty table.
 * EM_DONE: a partial aggregate must emit its groups first; the batch is
 * left pending. */
static em_status hagg_fold(em_op *op, hagg_state *st, em_batch *in, int from, em_error *err) {
    for (;;) {
        bool fresh = st->n_groups == 0;
        int resume = from;
        int64_t before = opu_pool_used(op);
        em_status s = hagg_consume(op, st, in, from, &resume, err);
        st->own += opu_pool_used(op) - before;
        if (s != EM_ERR_OOM_BUDGET || !(st->can_flush || st->can_spill))
            return s;
        if (fresh) {
            em_error_prefix(err,
                            "the groups of one batch of %lld rows do not fit in the memory budget",
                            (long long)em_batch_rows(in));
            return s;
        }
        if (st->can_flush) {
            st->pending = in;
            st->pending_fn = resume;
            return EM_DONE;
        }
        if (st->depth >= HAGG_MAX_DEPTH) {
            em_error_prefix(err,
                            "the groups of one spill partition do not fit in the memory budget "
                            "after %d repartitions by key",
                            HAGG_MAX_DEPTH);
            return s;
        }
        for (int k = 0; k < st->n_keys; k++) /* this batch's computed keys: folded again */
            em_column_reset(&st->key_tmp[k]);
        EM_TRY(hagg_spill(op, st, err));
        from = resume;
    }
}

/* The next batch of this round: from the child, or from the partition's
 * spill file. */
static em_status hagg_source_next(em_op *op, hagg_state *st, em_batch **in, em_error *err) {
    if (!st->from_spill)
        return em_op_next(op->children[0], in, err);
    em_status s = em_spill_read(st->cur.file, in, err);
    return s == EM_OK || s == EM_DONE ? s : em_op_fail(op, err);
}

/* Folds this round's input until the groups are to be emitted: its source
 * is exhausted (and then st->finished says whether anything is left after
 * them), or a partial aggregate flushes. A round that spilled goes on with
 * the next partition instead of emitting. Errors name this operator,
 * except the child's own. */
static em_status hagg_round(em_op *op, hagg_state *st, em_error *err) {
    for (;;) {
        if (st->drained && !st->from_spill) {
            if (st->n_stack == 0) { /* not reached: finished is set first */
                st->finished = true;
                return EM_OK;
            }
            st->cur = st->stack[--st->n_stack];
            st->from_spill = true;
            st->depth = st->cur.depth;
        }
        em_batch *in = NULL;
        int from = 0;
        if (st->pending) {
            in = st->pending;
            from = st->pending_fn;
            st->pending = NULL;
        } else {
            if (hagg_should_shed(op, st)) {
                if (st->can_flush)
                    return EM_OK;
                if (hagg_spill(op, st, err) != EM_OK)
                    return em_op_fail(op, err);
            }
            em_status s = hagg_source_next(op, st, &in, err);
            if (s == EM_DONE) {
                if (st->from_spill)
                    hagg_part_reset(&st->cur);
                st->drained = true;
                st->from_spill = false;
                if (!st->round_spilled) {
                    st->finished = st->n_stack == 0;
                    return EM_OK;
                }
                if (hagg_end_spilled_round(op, st, err) != EM_OK)
                    return em_op_fail(op, err);
                continue;
            }
            if (s != EM_OK)
                return s;
        }
        em_status s = hagg_fold(op, st, in, from, err);
        if (s == EM_DONE)
            return EM_OK;
        if (s != EM_OK)
            return em_op_fail(op, err);
    }
}

static em_status hagg_next(em_op *op, em_batch **out, em_error *err) {
    hagg_state *st = op->state;
    for (;;) {
        if (st->emitting) {
            em_status s = em_opu_next_range(&st->result_in->schema, st->result_in->cols, st->n_groups,
                                         &st->emitted, op->ctx->pool, &st->chunk, err);
            if (s == EM_OK) {
                s = st->positional
                        ? em_opu_shell_share(st->out, st->chunk, NULL, err)
                        : em_opu_proj_eval(&st->results, st->chunk, st->out, op->ctx->pool, err);
                if (s != EM_OK)
                    return em_op_fail(op, err);
                *out = st->out;
                return EM_OK;
            }
            if (s != EM_DONE)
                return em_op_fail(op, err);
            st->emitting = false;
            if (st->finished)
                return EM_DONE;
            if (hagg_reset_groups(op, st, err) != EM_OK)
                return em_op_fail(op, err);
        }
        if (st->finished)
            return EM_DONE;
        int64_t base = opu_pool_used(op);
        em_status s = hagg_round(op, st, err);
        opu_note_peak(op, base);
        if (s != EM_OK)
            return s;
        s = hagg_prepare_output(op, st, err);
        if (s == EM_ERR_OOM_BUDGET && st->can_spill && st->n_groups > 0 &&
            st->depth < HAGG_MAX_DEPTH) {
            /* finalizing copies the buffers once more: spill them instead */
            hagg_release_output(st);
            st->finished = false;
            s = hagg_end_spilled_round(op, st, err);
            if (s != EM_OK)
                return em_op_fail(op, err);
            continue;
        }
        if (s != EM_OK)
            return em_op_fail(op, err);
        opu_note_peak(op, base);
        st->emitted = 0;
        st->emitting = true;
    }
}

static void hagg_close(em_op *op) {
    hagg_state *st = op->state;
    if (!st)
        return;
    for (int k = 0; k < st->n_keys; k++) {
        if (st->key_prog)
            em_expr_prog_destroy(st->key_prog[k]);
        if (st->key_tmp)
            em_column_reset(&st->key_tmp[k]);
    }
    free(st->key_pass);
    free(st->key_prog);
    free(st->key_tmp);
    free(st->key_cols);
    for (int i = 0; i < st->n_fns; i++) {
        if (st->states)
            em_agg_state_destroy(st->states[i]);
        if (st->fns)
            em_agg_fn_destroy(st->fns[i]);
    }
    free(st->fns);
    free(st->states);
    free(st->first_col);
    free(st->ids);
    em_opu_proj_reset(&st->results);
    free(st->result_attrs);
    em_batch_destroy(st->result_in);
    em_batch_destroy(st->chunk);
    em_batch_destroy(st->out);
    em_ht_free(st->ht);
    free(st->key_types);
    for (int p = 0; p < HAGG_FANOUT; p++)
        hagg_part_reset(&st->parts[p]);
    hagg_part_reset(&st->cur);
    for (int i = 0; i < st->n_stack; i++)
        hagg_part_reset(&st->stack[i]);
    free(st->stack);
    free(st->spill_col);
    em_schema_reset(&st->spill_schema);
    memset(st, 0, sizeof *st);
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab HAGG_VTAB = {.name = "HashAggregate", .open = hagg_open, .next = hagg_next, .close = hagg_close};
static const em_op_vtab SAGG_VTAB = {.name = "SortAggregate", .open = hagg_open, .next = hagg_next, .close = hagg_close};
static const em_op_vtab OAGG_VTAB = {.name = "ObjectHashAggregate", .open = hagg_open, .next = hagg_next, .close = hagg_close};

em_status em_op_hash_agg_create(const em_plan_node *node, em_op *child, em_op **out,
                                em_error *err) {
    const em_op_vtab *vt = node->kind == EM_NODE_SORT_AGGREGATE          ? &SAGG_VTAB
                           : node->kind == EM_NODE_OBJECT_HASH_AGGREGATE ? &OAGG_VTAB
                                                                         : &HAGG_VTAB;
    return em_op_init(vt, node, &child, 1, sizeof(hagg_state), out, err);
}
