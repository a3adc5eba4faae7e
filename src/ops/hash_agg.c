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
 * pool. A partial aggregate (partial_/merge_ functions, with keys) that
 * finds the pool past a third of its budget before a batch flushes (growth
 * doubles the table and states, so a third leaves room for one doubling):
 * it emits its groups' buffers so far and starts again with an empty table,
 * which is correct because the aggregate above merges buffers of the same
 * key (Spark's partial aggregates may emit a key several times). Otherwise
 * exceeding the budget fails the task with EM_ERR_OOM_BUDGET naming this
 * operator (spilling to disk is not implemented yet).
 */
#include <stdlib.h>
#include <string.h>

#include "ops/hash_table.h"
#include "ops/op_util.h"

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
    int32_t *ids;
    int64_t ids_cap;
    /* output */
    bool drained;  /* the child is exhausted */
    bool emitting; /* result_in holds groups being emitted */
    bool can_flush;
    em_batch *result_in; /* [keys..., agg attrs...] for all groups */
    const em_expr **result_attrs;
    int n_result_attrs;
    bool positional;  /* partial output: result_in's columns as they are */
    opu_proj results; /* else: Results over result_in */
    int64_t emitted;
    em_batch *chunk, *out;
} hagg_state;

/* Whether the node's input comes from another aggregate (through exchanges,
 * query stages, reuse and the no-op wrappers). A function printed in final
 * form (`sum(x)`) merges buffers when it does, and is in Spark's Complete
 * mode, folding input rows, when it does not: the two print alike. */
static bool below_is_aggregate(const em_plan_node *n) {
    const em_plan_node *c = n->n_children > 0 ? n->children[0] : NULL;
    while (c) {
        switch (c->kind) {
        case EM_NODE_HASH_AGGREGATE:
        case EM_NODE_SORT_AGGREGATE:
        case EM_NODE_OBJECT_HASH_AGGREGATE:
            return true;
        case EM_NODE_REUSED_EXCHANGE:
            c = c->reuses;
            continue;
        case EM_NODE_COLUMNAR_TO_ROW:
        case EM_NODE_ROW_TO_COLUMNAR:
        case EM_NODE_INPUT_ADAPTER:
        case EM_NODE_WHOLE_STAGE_CODEGEN:
        case EM_NODE_EXCHANGE:
        case EM_NODE_SHUFFLE_QUERY_STAGE:
        case EM_NODE_AQE_SHUFFLE_READ:
        case EM_NODE_SORT:
            c = c->n_children > 0 ? c->children[0] : NULL;
            continue;
        default:
            return false;
        }
    }
    /* no child in the plan (a synthetic source): assume a merge */
    return c == NULL;
}

/* Function i folds input rows (partial, or Complete mode) rather than
 * merging buffers. */
static inline bool hagg_updates(const hagg_state *st, int i) {
    em_agg_mode m = em_agg_fn_mode(st->fns[i]);
    return m == EM_AGG_PARTIAL || (m == EM_AGG_FINAL && st->complete);
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
        st->key_pass[k] = opu_passthrough_index(e, in_attrs, n_in);
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
    st->complete = !below_is_aggregate(op->node);
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

static em_status hagg_consume(em_op *op, hagg_state *st, const em_batch *in, em_error *err) {
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
            if (st->key_pass[k] >= 0) {
                st->key_cols[k] = &in->cols[st->key_pass[k]];
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
    for (int i = 0; i < st->n_fns; i++) {
        if (hagg_updates(st, i))
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
    if (af && af->n_exprs != n_agg_cols)
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
            st->result_attrs[c] = af ? af->exprs[c - st->n_keys] : NULL;
            em_type t = fin ? em_agg_result_type(st->fns[i]) : em_agg_buffer_type(st->fns[i], b);
            s = em_schema_set(&schema, c, "", t, true, err);
        }
    }
    st->n_result_attrs = n_cols;
    if (s == EM_OK)
        s = opu_shell_create(&schema, pool, &st->result_in, err);
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
    st->positional = !st->final && st->n_fns > 0;
    if (st->positional && op->n_output != n_cols)
        return EM_FAIL(err, EM_ERR_BIND, "Results lists %d attributes, keys and buffers are %d",
                       op->n_output, n_cols);
    if (!st->positional) {
        const em_expr *const *res =
            rf ? (const em_expr *const *)rf->exprs : (const em_expr *const *)op->output;
        EM_TRY(opu_proj_init(&st->results, res, rf ? rf->n_exprs : op->n_output, st->result_attrs,
                             n_cols, &op->ctx->expr_opts, err));
    }
    return opu_shell_create(&op->schema, pool, &st->out, err);
}

/* Drops the groups emitted by a flush: an empty table and fresh states. */
static em_status hagg_reset_groups(em_op *op, hagg_state *st, em_error *err) {
    opu_proj_reset(&st->results);
    free(st->result_attrs);
    st->result_attrs = NULL;
    em_batch_destroy(st->result_in);
    em_batch_destroy(st->chunk);
    em_batch_destroy(st->out);
    st->result_in = st->chunk = st->out = NULL;
    em_ht_free(st->ht);
    st->ht = NULL;
    st->n_groups = 0;
    st->emitted = 0;
    EM_TRY(em_ht_create(st->key_types, st->n_keys, true, op->ctx->pool, &st->ht, err));
    for (int i = 0; i < st->n_fns; i++) {
        em_agg_state_free(st->states[i]);
        st->states[i] = NULL;
        EM_TRY(em_agg_state_create(st->fns[i], op->ctx->pool, &st->states[i], err));
    }
    return EM_OK;
}

/* True when a partial aggregate should emit what it has before the next
 * batch: the task's pool is past a third of its budget. */
static bool hagg_should_flush(const em_op *op, const hagg_state *st) {
    if (!st->can_flush || st->n_groups == 0 || !op->ctx->pool)
        return false;
    int64_t budget = em_pool_budget(op->ctx->pool);
    return budget > 0 && em_pool_used(op->ctx->pool) > budget / 3;
}

static em_status hagg_next(em_op *op, em_batch **out, em_error *err) {
    hagg_state *st = op->state;
    for (;;) {
        if (st->emitting) {
            em_status s = opu_next_range(&st->result_in->schema, st->result_in->cols, st->n_groups,
                                         &st->emitted, op->ctx->pool, &st->chunk, err);
            if (s == EM_OK) {
                s = st->positional
                        ? opu_shell_share(st->out, st->chunk, NULL, err)
                        : opu_proj_eval(&st->results, st->chunk, st->out, op->ctx->pool, err);
                if (s != EM_OK)
                    return em_op_fail(op, err);
                *out = st->out;
                return EM_OK;
            }
            if (s != EM_DONE)
                return em_op_fail(op, err);
            st->emitting = false;
            if (st->drained)
                return EM_DONE;
            if (hagg_reset_groups(op, st, err) != EM_OK)
                return em_op_fail(op, err);
        }
        if (st->drained)
            return EM_DONE;
        int64_t base = opu_pool_used(op);
        for (;;) {
            if (hagg_should_flush(op, st))
                break;
            em_batch *in = NULL;
            em_status s = em_op_next(op->children[0], &in, err);
            if (s == EM_DONE) {
                st->drained = true;
                break;
            }
            if (s != EM_OK)
                return s;
            if (hagg_consume(op, st, in, err) != EM_OK)
                return em_op_fail(op, err);
        }
        opu_note_peak(op, base);
        if (hagg_prepare_output(op, st, err) != EM_OK)
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
            em_expr_prog_free(st->key_prog[k]);
        if (st->key_tmp)
            em_column_reset(&st->key_tmp[k]);
    }
    free(st->key_pass);
    free(st->key_prog);
    free(st->key_tmp);
    free(st->key_cols);
    for (int i = 0; i < st->n_fns; i++) {
        if (st->states)
            em_agg_state_free(st->states[i]);
        if (st->fns)
            em_agg_fn_free(st->fns[i]);
    }
    free(st->fns);
    free(st->states);
    free(st->first_col);
    free(st->ids);
    opu_proj_reset(&st->results);
    free(st->result_attrs);
    em_batch_destroy(st->result_in);
    em_batch_destroy(st->chunk);
    em_batch_destroy(st->out);
    em_ht_free(st->ht);
    free(st->key_types);
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
