/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a task of Ember's own runtime asks of the query while it runs, as the
 * em_exec_ctx callbacks its operators call: its scans' splits, the
 * partitions of a shuffle it reads (spilled parts read back in order), the
 * broadcasts it reads and the objects built once from them, scalar
 * subquery values (merged subqueries' fields included), and the task
 * semaphore around native work. The task and its stage are rt_task's
 * (query.h); runtime.c schedules them.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/query.h"

static const em_batch_list EMPTY_LIST = {NULL, 0, 0};

static em_status cb_scan_splits(em_exec_ctx *ctx, const em_plan_node *scan,
                                const em_scan_split **out, int *n_out, em_error *err) {
    rt_task *t = ctx->runtime;
    *out = NULL;
    *n_out = 0;
    for (int i = 0; i < t->st->n_scans; i++) {
        if (t->st->scans[i] != scan)
            continue;
        const rt_scan_plan *sp = &t->st->scan_plans[i];
        if (t->p < sp->n_parts) {
            *out = sp->parts[t->p].splits;
            *n_out = sp->parts[t->p].n_splits;
        }
        return EM_OK;
    }
    return EM_FAIL(err, EM_ERR_INTERNAL, "%s (%d) is not a scan of stage %d", em_rt_node_name(scan),
                   scan->id, t->st->index);
}

static int cb_subtree_partitions(em_exec_ctx *ctx, const em_plan_node *n) {
    rt_task *t = ctx->runtime;
    if (!n)
        return INT_MAX; /* an operator of no plan node (a transition): not known, never skipped */
    switch (n->kind) {
    case EM_NODE_BROADCAST_EXCHANGE:
        return 0;
    case EM_NODE_EXCHANGE:
    case EM_NODE_REUSED_EXCHANGE: {
        const rt_stage *in = em_rt_find_stage(t->q, n);
        if (in)
            return in->kind == EM_STAGE_BROADCAST ? 0 : in->n_out;
        break; /* the stage's own map side: its input below */
    }
    case EM_NODE_SCAN:
        for (int i = 0; i < t->st->n_scans; i++)
            if (t->st->scans[i] == n && t->st->scan_plans)
                return t->st->scan_plans[i].n_parts;
        return 1;
    default:
        break;
    }
    if (n->n_children == 0)
        return 1;
    int most = 0;
    for (int i = 0; i < n->n_children; i++) {
        int k = cb_subtree_partitions(ctx, n->children[i]);
        if (k > most)
            most = k;
    }
    return most;
}

static em_status input_stage(rt_task *t, const em_plan_node *x, bool broadcast, rt_stage **out,
                             em_error *err) {
    *out = NULL;
    rt_stage *in = em_rt_find_stage(t->q, x);
    if (!in || !in->done || !in->parts || (broadcast != (in->kind == EM_STAGE_BROADCAST)))
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s (%d): its %s output is not available",
                       em_rt_node_name(x), x->id, broadcast ? "broadcast" : "shuffle");
    *out = in;
    return EM_OK;
}

/* A reader holds the map statuses of a shuffle it reads (one per mapper x
 * reducer) in row memory, once per shuffle however often it reads it. */
static em_status charge_map_statuses(rt_task *t, em_exec_ctx *ctx, const em_plan_node *x,
                                     const rt_stage *in, em_error *err) {
    for (int i = 0; i < t->n_status_reads; i++)
        if (t->status_reads[i] == in)
            return EM_OK;
    const rt_stage **nr = realloc(t->status_reads, sizeof *nr * (size_t)(t->n_status_reads + 1));
    if (!nr)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading a shuffle");
    t->status_reads = nr;
    int64_t bytes = (int64_t)in->n_tasks * in->n_out * EM_PROFILE_MAP_STATUS_BYTES;
    em_status s = em_pool_reserve(ctx->row_pool, bytes, err);
    if (s != EM_OK) {
        em_error_prefix(err, "shuffle read of %s (%d): the map statuses of %d mappers x %d reducers",
                        em_rt_node_name(x), x->id, in->n_tasks, in->n_out);
        return s;
    }
    t->status_reads[t->n_status_reads++] = in;
    t->status_bytes += bytes;
    return EM_OK;
}

/* A reader's stream over partition r: without spill files the stored list;
 * with them, in map task order, each file read back alone (its batches
 * freed when the next file is read), then the rows the map task kept. */
typedef struct rt_stream {
    const rt_stage *in;
    int r, m, f;               /* partition, map task, its next spill file */
    bool kept_done;            /* map task m's kept rows were the current list */
    const em_batch_list *cur;  /* the list being handed out */
    int64_t i;                 /* its next batch */
    em_batch_list file;        /* the spill file being read */
    em_pool *pool;
} rt_stream;

static em_status cb_shuffle_stream_open(em_exec_ctx *ctx, const em_plan_node *x, void **cursor,
                                        em_error *err) {
    rt_task *t = ctx->runtime;
    rt_stage *in;
    EM_TRY(input_stage(t, x, false, &in, err));
    if (t->q->profiled)
        EM_TRY(charge_map_statuses(t, ctx, x, in, err));
    rt_stream *c = calloc(1, sizeof *c);
    if (!c)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading a shuffle");
    c->in = in;
    c->r = t->p;
    c->pool = ctx->pool;
    c->cur = &EMPTY_LIST;
    bool spilled = false;
    for (int m = 0; in->spilled && t->p < in->n_out && m < in->n_tasks && !spilled; m++)
        spilled = in->spilled[(int64_t)m * in->n_out + t->p].n > 0;
    if (!spilled) { /* the stored list is all there is */
        if (t->p < in->n_out)
            c->cur = &in->parts[t->p];
        c->m = in->n_tasks;
    }
    *cursor = c;
    return EM_OK;
}

static em_status cb_shuffle_stream_next(em_exec_ctx *ctx, void *cursor, const em_batch **out,
                                        em_error *err) {
    (void)ctx;
    rt_stream *c = cursor;
    const rt_stage *in = c->in;
    for (;;) {
        if (c->i < c->cur->n_batches) {
            *out = c->cur->batches[c->i++];
            return EM_OK;
        }
        if (c->m >= in->n_tasks)
            return EM_DONE;
        /* the next list: map task m's files in turn, then its kept rows */
        int64_t slot = (int64_t)c->m * in->n_out + c->r;
        const rt_spilled *sp = &in->spilled[slot];
        em_batch_list_reset(&c->file);
        c->cur = &EMPTY_LIST;
        c->i = 0;
        if (c->f < sp->n) {
            EM_TRY(em_rt_spill_read(sp->paths[c->f++], c->pool, &c->file, err));
            c->cur = &c->file;
        } else if (!c->kept_done) {
            c->cur = &in->task_out[slot];
            c->kept_done = true;
        } else {
            c->m++;
            c->f = 0;
            c->kept_done = false;
        }
    }
}

static void cb_shuffle_stream_close(em_exec_ctx *ctx, void *cursor) {
    (void)ctx;
    rt_stream *c = cursor;
    if (!c)
        return;
    em_batch_list_reset(&c->file);
    free(c);
}

static em_status cb_broadcast_input(em_exec_ctx *ctx, const em_plan_node *x,
                                    const em_batch_list **out, em_error *err) {
    rt_task *t = ctx->runtime;
    rt_stage *in;
    EM_TRY(input_stage(t, x, true, &in, err));
    *out = &in->parts[0];
    return EM_OK;
}

static em_status cb_broadcast_shared(em_exec_ctx *ctx, const em_plan_node *x, const char *what,
                                     rt_shared_build_fn build, void (*free_obj)(void *obj),
                                     void *arg, void **out, em_error *err) {
    rt_task *t = ctx->runtime;
    rt_stage *in;
    EM_TRY(input_stage(t, x, true, &in, err));
    char name[96];
    snprintf(name, sizeof name, "%s (%d)", em_rt_node_name(in->node), in->node->id);
    bool built = false;
    em_status s = em_rt_shared_get(t->q->shared, in, name, what, &in->parts[0], build, free_obj, arg,
                                &t->q->cancel, out, &built, err);
    pthread_mutex_lock(&t->q->mu);
    in->shared_builds += built;
    in->shared_uses += s == EM_OK;
    pthread_mutex_unlock(&t->q->mu);
    return s;
}

em_status em_rt_native_enter(em_exec_ctx *ctx, em_error *err) {
    rt_task *t = ctx->runtime;
    if (t->holding)
        return EM_OK;
    int64_t t0 = em_rt_now_ns();
    int64_t ticket = (t->st->seq << 32) | (int64_t)t->p;
    int holders = 0;
    EM_TRY(em_rt_sem_acquire(&t->q->sem, ticket, &t->q->cancel, &holders, err));
    t->hold_t0 = em_rt_now_ns();
    t->wait_ns += t->hold_t0 - t0;
    t->holding = true;
    if (holders > t->max_holders)
        t->max_holders = holders;
    return EM_OK;
}

void em_rt_native_leave(em_exec_ctx *ctx) {
    rt_task *t = ctx->runtime;
    if (!t->holding)
        return;
    t->hold_ns += em_rt_now_ns() - t->hold_t0;
    t->holding = false;
    em_rt_sem_release(&t->q->sem);
}

/* The value of the merged subquery's field `name`: its named_struct value
 * evaluated over the one row of the stage's result (l). */
static em_status merged_field(em_query *q, const rt_stage *st, const em_expr *sq,
                              const char *name, em_type type, const em_batch_list *l,
                              em_pool *pool, em_column *out, em_error *err) {
    const char *sq_name = sq->name ? sq->name : "scalar subquery";
    const em_expr *ns = st->merged, *value = NULL;
    for (int i = 0; i + 1 < ns->n_args && !value; i += 2) {
        char *text = NULL;
        EM_TRY(em_expr_print(ns->args[i], NULL, &text, NULL, err));
        if (strcmp(text, name) == 0)
            value = ns->args[i + 1];
        free(text);
    }
    if (!value)
        return EM_FAIL(err, EM_ERR_BIND, "%s has no field %s", sq_name, name);
    const em_plan_node *child = st->build_root;
    em_expr_compile_options o = {.ansi = q->ansi,
                                 .shim = em_plan_shim(q->plan),
                                 .time_zone = q->time_zone,
                                 .pool = pool};
    em_expr_prog *prog = NULL;
    EM_TRY(em_expr_compile(value, (const em_expr *const *)child->output, child->n_output, &o,
                           &prog, err));
    em_status s = EM_OK;
    if (!em_type_equal(em_expr_prog_type(prog), type)) {
        char want[64], got[64];
        em_type_format(type, want, sizeof want);
        em_type_format(em_expr_prog_type(prog), got, sizeof got);
        s = EM_FAIL(err, EM_ERR_TYPE, "%s.%s is %s where the plan expects %s", sq_name, name, got,
                    want);
    }
    const em_batch *row = NULL;
    for (int64_t i = 0; s == EM_OK && i < l->n_batches && !row; i++)
        if (em_batch_rows(l->batches[i]) > 0)
            row = l->batches[i];
    if (s == EM_OK && !row) {
        s = em_column_init(out, type, 1, pool, err);
        if (s == EM_OK)
            s = em_column_append_null(out, err);
    } else if (s == EM_OK) {
        em_column all;
        memset(&all, 0, sizeof all);
        s = em_expr_eval(prog, row, pool, &all, err);
        int32_t r = row->sel ? row->sel[0] : 0;
        if (s == EM_OK)
            s = em_column_take(&all, &r, 1, pool, out, err);
        em_column_reset(&all);
    }
    em_expr_prog_destroy(prog);
    return s;
}

static em_status cb_subquery(void *vq, const em_expr *e, em_type type, em_pool *pool,
                             em_column *out, em_error *err) {
    em_query *q = vq;
    const em_expr *sq = e->kind == EM_EXPR_FIELD && e->n_args > 0 ? e->args[0] : e;
    rt_stage *st = sq->subquery ? em_rt_find_stage(q, sq->subquery) : NULL;
    if (!st || st->kind != EM_STAGE_SUBQUERY || !st->done || !st->parts)
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: its value was not computed",
                       sq->name ? sq->name : "scalar subquery");
    if ((e->kind == EM_EXPR_FIELD) != (st->merged != NULL))
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s%s%s: %s", sq->name ? sq->name : "subquery",
                       e->kind == EM_EXPR_FIELD ? "." : "",
                       e->kind == EM_EXPR_FIELD && e->name ? e->name : "",
                       st->merged ? "a merged scalar subquery is read by field only"
                                  : "a field of a subquery that does not build a named_struct");
    const em_batch_list *l = &st->parts[0];
    if (l->n_rows > 1)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "%s: more than one row returned by a subquery used as an expression "
                       "(%lld rows)",
                       sq->name ? sq->name : "scalar subquery", (long long)l->n_rows);
    if (st->merged)
        return merged_field(q, st, sq, e->name ? e->name : "", type, l, pool, out, err);
    char want[64], got[64];
    em_type_format(type, want, sizeof want);
    if (l->n_rows == 0) {
        EM_TRY(em_column_init(out, type, 1, pool, err));
        return em_column_append_null(out, err);
    }
    for (int64_t i = 0; i < l->n_batches; i++) {
        const em_batch *b = l->batches[i];
        if (em_batch_rows(b) == 0)
            continue;
        if (b->n_cols != 1)
            return EM_FAIL(err, EM_ERR_INVALID, "%s returns %d columns, not one",
                           sq->name ? sq->name : "scalar subquery", b->n_cols);
        em_type_format(b->cols[0].type, got, sizeof got);
        if (!em_type_equal(b->cols[0].type, type))
            return EM_FAIL(err, EM_ERR_TYPE, "%s returns %s where the plan expects %s",
                           sq->name ? sq->name : "scalar subquery", got, want);
        int32_t row = b->sel ? b->sel[0] : 0;
        return em_column_take(&b->cols[0], &row, 1, pool, out, err);
    }
    return EM_FAIL(err, EM_ERR_INTERNAL, "scalar subquery rows not found");
}

static int cb_runtime_filters(em_exec_ctx *ctx, const em_plan_node *scan,
                              const em_runtime_filter **out) {
    const rt_stage *st = ((rt_task *)ctx->runtime)->st;
    return em_runtime_filters_of(st->filters, st->n_filters, scan, out);
}

void em_rt_task_callbacks(em_exec_ctx *ctx, em_query *q) {
    ctx->expr_opts.subquery = cb_subquery;
    ctx->expr_opts.subquery_ctx = q;
    ctx->scan_splits = cb_scan_splits;
    ctx->subtree_partitions = cb_subtree_partitions;
    ctx->shuffle_stream_open = cb_shuffle_stream_open;
    ctx->shuffle_stream_next = cb_shuffle_stream_next;
    ctx->shuffle_stream_close = cb_shuffle_stream_close;
    ctx->broadcast_input = cb_broadcast_input;
    ctx->broadcast_shared = cb_broadcast_shared;
    ctx->runtime_filters = cb_runtime_filters;
    ctx->native_enter = em_rt_native_enter;
    ctx->native_leave = em_rt_native_leave;
}
