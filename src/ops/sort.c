/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sort: orders all rows of this task's input (Spark's SortExec, global
 * within a partition; a global order across partitions comes from the
 * range-partitioned exchange below it). Arguments: `[orders], global,
 * testSpillFrequency`.
 *
 * In memory: the input is copied into one accumulated batch (selection
 * applied), the sort keys are evaluated once over it, row numbers are
 * sorted with the normalized-prefix merge sort of sort_keys.c, and the rows
 * are emitted in sorted order in batches of EM_BATCH_CAP gathered by index.
 *
 * External: when the task's pool has a budget and is past a quarter of it
 * before a batch is added (the accumulator grows by doubling, and sorting
 * and writing need about as much again), the accumulated rows are sorted and written as a run, a
 * spill file (spill.h), and accumulation starts over. At the
 * end the rest becomes the last run and the runs are merged: each run is
 * read back batch by batch, and the smallest current row (the earliest run
 * on ties, so the sort stays stable) is appended to the output. Run files
 * are removed on close. A single batch that does not fit still fails with
 * EM_ERR_OOM_BUDGET naming this operator.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/sort_keys.h"
#include "ops/spill.h"

typedef struct sort_run {
    em_spill *spill;
    em_batch *batch; /* current batch (owned by the spill) */
    int64_t pos;
    em_sort_spec spec; /* keys bound to the current batch */
    bool done;
} sort_run;

typedef struct sort_state {
    em_sort_spec spec;
    em_batch *acc;
    int32_t *idx;
    int64_t n, emitted;
    bool sorted;
    em_batch *chunk;
    /* external sort */
    const em_expr *const *orders;
    int n_orders;
    sort_run *runs;
    int n_runs;
    bool unordered; /* em_op_sort_unordered: rows pass as they come */
} sort_state;

static em_status sort_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    sort_state *st = op->state;
    EM_TRY(em_op_open(op->children[0], ctx, err));
    int n = 0;
    const em_expr *const *args = em_opu_arguments(op->node, &n);
    if (n < 1 || args[0]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "no sort order list in Arguments");
        return em_op_fail(op, err);
    }
    st->orders = (const em_expr *const *)args[0]->args;
    st->n_orders = args[0]->n_args;
    if (em_sort_spec_init(&st->spec, st->orders, st->n_orders, em_op_child_attrs(op, 0),
                          op->children[0]->n_output, &ctx->expr_opts, err) != EM_OK)
        return em_op_fail(op, err);
    return EM_OK;
}

/* Sorts the accumulated rows: st->idx[0..st->n). */
static em_status sort_acc(em_op *op, sort_state *st, em_error *err) {
    st->n = st->acc->n_rows;
    st->idx = em_pool_alloc(op->ctx->pool, st->n * 4 + 4, err);
    if (!st->idx)
        return err ? err->code : EM_ERR_NOMEM;
    for (int64_t i = 0; i < st->n; i++)
        st->idx[i] = (int32_t)i;
    EM_TRY(em_sort_spec_bind(&st->spec, st->acc, op->ctx->pool, err));
    return em_sort_indices(st->spec.keys, st->spec.n, st->idx, st->n, op->ctx->pool, err);
}

static void sort_free_idx(em_op *op, sort_state *st) {
    if (st->idx)
        em_pool_free(op->ctx ? op->ctx->pool : NULL, st->idx, st->n * 4 + 4);
    st->idx = NULL;
}

/* The query's pool, shared by every task, past three quarters: a run of at
 * least 1 MiB goes to disk (smaller ones would only multiply the files). */
#define SORT_SHARED_PRESSURE 0.75
#define SORT_MIN_SHARED_RUN (1LL << 20)

static bool sort_should_spill(const em_op *op, const sort_state *st) {
    em_pool *pool = op->ctx->pool;
    int64_t budget = pool ? em_pool_budget(pool) : -1;
    if (st->acc->n_rows == 0)
        return false;
    return (budget > 0 && em_pool_used(pool) > budget / 4) ||
           (em_pool_used(pool) >= SORT_MIN_SHARED_RUN &&
            em_pool_ancestor_pressure(pool) > SORT_SHARED_PRESSURE);
}

/* Sorts the accumulated rows and writes them as the next run. */
static em_status sort_spill(em_op *op, sort_state *st, em_error *err) {
    em_pool *pool = op->ctx->pool;
    const em_schema *cs = &op->children[0]->schema;
    sort_run *runs = realloc(st->runs, sizeof *runs * (size_t)(st->n_runs + 1));
    if (!runs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    st->runs = runs;
    sort_run *r = &runs[st->n_runs];
    memset(r, 0, sizeof *r);
    st->n_runs++;
    EM_TRY(sort_acc(op, st, err));
    EM_TRY(em_spill_create(cs, op->ctx->spill_dir, pool, &r->spill, err));
    em_status s = EM_OK;
    for (int64_t at = 0; s == EM_OK && at < st->n; at += EM_BATCH_CAP) {
        int64_t k = st->n - at < EM_BATCH_CAP ? st->n - at : EM_BATCH_CAP;
        em_batch_destroy(st->chunk);
        st->chunk = NULL;
        s = em_opu_gather(cs, st->acc->cols, st->idx + at, k, pool, &st->chunk, err);
        if (s == EM_OK)
            s = em_spill_write(r->spill, st->chunk, err);
    }
    EM_TRY(s);
    int64_t bytes = 0;
    EM_TRY(em_spill_finish(r->spill, &bytes, err));
    op->metrics.spill_bytes += bytes;
    em_batch_destroy(st->chunk);
    st->chunk = NULL;
    sort_free_idx(op, st);
    /* release the run's rows: a fresh accumulator */
    em_batch_destroy(st->acc);
    st->acc = NULL;
    return em_batch_create(cs, EM_BATCH_CAP, pool, &st->acc, err);
}

/* Moves run r to its next batch (done at the end). */
static em_status run_advance(em_op *op, sort_state *st, sort_run *r, em_error *err) {
    r->pos = 0;
    em_status s = em_spill_read(r->spill, &r->batch, err);
    if (s == EM_DONE) {
        r->done = true;
        r->batch = NULL;
        return EM_OK;
    }
    EM_TRY(s);
    (void)st;
    return em_sort_spec_bind(&r->spec, r->batch, op->ctx->pool, err);
}

static em_status sort_merge_open(em_op *op, sort_state *st, em_error *err) {
    for (int i = 0; i < st->n_runs; i++) {
        sort_run *r = &st->runs[i];
        EM_TRY(em_sort_spec_init(&r->spec, st->orders, st->n_orders, em_op_child_attrs(op, 0),
                                 op->children[0]->n_output, &op->ctx->expr_opts, err));
        EM_TRY(run_advance(op, st, r, err));
    }
    return EM_OK;
}

/* The next output batch of the k-way merge; EM_DONE when every run is. */
static em_status sort_merge_next(em_op *op, sort_state *st, em_error *err) {
    em_batch_destroy(st->chunk);
    st->chunk = NULL;
    EM_TRY(em_batch_create(&op->schema, EM_BATCH_CAP, op->ctx->pool, &st->chunk, err));
    em_batch *b = st->chunk;
    int64_t rows = 0;
    while (rows < EM_BATCH_CAP) {
        sort_run *best = NULL;
        for (int i = 0; i < st->n_runs; i++) {
            sort_run *r = &st->runs[i];
            if (r->done)
                continue;
            if (!best ||
                em_sort_compare(r->spec.keys, r->pos, best->spec.keys, best->pos, st->n_orders) < 0)
                best = r;
        }
        if (!best)
            break;
        int32_t row = (int32_t)best->pos;
        for (int c = 0; c < b->n_cols; c++)
            EM_TRY(em_column_append_rows(&b->cols[c], &best->batch->cols[c], &row, 1, err));
        rows++;
        if (++best->pos >= best->batch->n_rows)
            EM_TRY(run_advance(op, st, best, err));
    }
    b->n_rows = rows;
    return rows > 0 ? EM_OK : EM_DONE;
}

static em_status sort_drain(em_op *op, sort_state *st, em_error *err) {
    em_op *child = op->children[0];
    EM_TRY(em_batch_create(&child->schema, EM_BATCH_CAP, op->ctx->pool, &st->acc, err));
    for (;;) {
        em_batch *in = NULL;
        em_status s = em_op_next(child, &in, err);
        if (s == EM_DONE)
            break;
        if (s != EM_OK)
            return s;
        if (sort_should_spill(op, st))
            EM_TRY(sort_spill(op, st, err));
        EM_TRY(em_batch_append(st->acc, in, err));
    }
    if (st->n_runs == 0)
        return sort_acc(op, st, err);
    if (st->acc->n_rows > 0)
        EM_TRY(sort_spill(op, st, err));
    em_batch_destroy(st->acc);
    st->acc = NULL;
    return sort_merge_open(op, st, err);
}

static em_status sort_next(em_op *op, em_batch **out, em_error *err) {
    sort_state *st = op->state;
    if (st->unordered)
        return em_op_next(op->children[0], out, err);
    if (!st->sorted) {
        st->sorted = true;
        int64_t base = opu_pool_used(op);
        em_status s = sort_drain(op, st, err);
        opu_note_peak(op, base);
        if (s != EM_OK)
            return s == EM_ERR_CANCELLED ? s : em_op_fail(op, err);
    }
    if (st->n_runs > 0) {
        em_status s = sort_merge_next(op, st, err);
        if (s != EM_OK)
            return s == EM_DONE ? s : em_op_fail(op, err);
        *out = st->chunk;
        return EM_OK;
    }
    if (st->emitted >= st->n)
        return EM_DONE;
    int64_t n = st->n - st->emitted < EM_BATCH_CAP ? st->n - st->emitted : EM_BATCH_CAP;
    em_batch_destroy(st->chunk);
    st->chunk = NULL;
    if (em_opu_gather(&op->schema, st->acc->cols, st->idx + st->emitted, n, op->ctx->pool, &st->chunk,
                   err) != EM_OK)
        return em_op_fail(op, err);
    st->emitted += n;
    *out = st->chunk;
    return EM_OK;
}

static void sort_close(em_op *op) {
    sort_state *st = op->state;
    if (!st)
        return;
    em_sort_spec_reset(&st->spec);
    sort_free_idx(op, st);
    em_batch_destroy(st->acc);
    em_batch_destroy(st->chunk);
    st->acc = st->chunk = NULL;
    for (int i = 0; i < st->n_runs; i++) {
        sort_run *r = &st->runs[i];
        em_spill_free(r->spill);
        em_sort_spec_reset(&r->spec);
    }
    free(st->runs);
    st->runs = NULL;
    st->n_runs = 0;
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab SORT_VTAB = {.name = "Sort", .open = sort_open, .next = sort_next, .close = sort_close};

em_status em_op_sort_create(const em_plan_node *node, em_op *child, em_op **out, em_error *err) {
    EM_TRY(em_op_init(&SORT_VTAB, node, &child, 1, sizeof(sort_state), out, err));
    return em_opu_inherit_output(out, child, err);
}

bool em_op_sort_unordered(em_op *op) {
    if (!op || op->vtab != &SORT_VTAB)
        return false;
    ((sort_state *)op->state)->unordered = true;
    return true;
}
