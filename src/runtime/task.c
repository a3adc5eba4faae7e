/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_task: one task's life, the same for every scheduler (the local
 * runtime, the Spark plugin, LORE replay, tests).
 *
 *   create   pools (native and row, children of the caller's pool, with the
 *            task's budgets) and the context, from the caller's callbacks;
 *   open     build the operator tree from the root node with the caller's
 *            builder, open it;
 *   next     pull a batch (borrowed until the next call);
 *   destroy  close and free the tree, then the pools.
 *
 * The output stream (em_task_output_stream) exports each batch through the
 * Arrow C Data Interface zero-copy: the array holds references to the
 * batch's buffers, so it outlives the next pull and the task itself.
 * Cancellation is a flag the operators poll between batches; the task
 * watches its own flag unless the caller gave one (the local runtime shares
 * one flag among every task of a query), and em_task_cancel sets whichever
 * it watches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/task.h"
#include "runtime/task_internal.h"

em_status em_task_create(const em_task_options *o, em_task **out, em_error *err) {
    *out = NULL;
    if (!o || !o->root)
        return EM_FAIL(err, EM_ERR_INVALID, "em_task_create: no root node");
    em_task *t = calloc(1, sizeof *t);
    if (!t)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a task");
    snprintf(t->name, sizeof t->name, "%s", o->name ? o->name : "task");
    t->build = o->build;
    t->build_ctx = o->build_ctx;
    t->root = o->root;
    t->ctx = o->ctx;
    char pool_name[sizeof t->name + 16];
    snprintf(pool_name, sizeof pool_name, "%s native pool", t->name);
    t->ctx.pool = em_pool_create(pool_name, o->parent_pool, o->native_budget);
    snprintf(pool_name, sizeof pool_name, "%s row pool", t->name);
    t->ctx.row_pool = em_pool_create(pool_name, o->parent_pool, o->row_budget);
    if (!t->ctx.pool || !t->ctx.row_pool) {
        em_task_destroy(t);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating %s's pools", t->name);
    }
    if (!t->ctx.cancel)
        t->ctx.cancel = &t->cancel;
    t->ctx.expr_opts.pool = t->ctx.pool;
    *out = t;
    return EM_OK;
}

em_status em_task_open(em_task *t, em_error *err) {
    if (t->opened)
        return t->status == EM_OK ? EM_OK : EM_FAIL(err, t->status, "%s: failed before", t->name);
    t->opened = true;
    em_status s = t->build ? t->build(t->build_ctx, t->root, &t->op, err)
                           : em_op_build(t->root, &t->op, err);
    if (s == EM_OK)
        s = em_op_open(t->op, &t->ctx, err);
    t->status = s;
    return s;
}

em_status em_task_next(em_task *t, em_batch **out, em_error *err) {
    *out = NULL;
    if (!t->opened)
        EM_TRY(em_task_open(t, err));
    if (t->status != EM_OK)
        return t->status == EM_DONE ? EM_DONE
                                    : EM_FAIL(err, t->status, "%s: failed before", t->name);
    if (*t->ctx.cancel) {
        t->status = EM_ERR_CANCELLED;
        return EM_FAIL(err, EM_ERR_CANCELLED, "%s: cancelled", t->name);
    }
    em_status s = em_op_next(t->op, out, err);
    if (s != EM_OK)
        t->status = s;
    return s;
}

em_status em_task_collect(em_task *t, em_pool *pool, em_batch_list *out, em_error *err) {
    memset(out, 0, sizeof *out);
    if (!t->opened)
        EM_TRY(em_task_open(t, err));
    if (t->status != EM_OK)
        return EM_FAIL(err, t->status, "%s: failed before", t->name);
    em_status s = em_op_collect(t->op, pool, out, err);
    t->status = s == EM_OK ? EM_DONE : s;
    return s;
}

void em_task_close(em_task *t) {
    if (t && t->op)
        em_op_close(t->op);
}

void em_task_cancel(em_task *t) {
    if (t && t->ctx.cancel)
        *t->ctx.cancel = 1;
}

em_exec_ctx *em_task_ctx(em_task *t) { return &t->ctx; }
const em_op *em_task_op(const em_task *t) { return t ? t->op : NULL; }
em_pool *em_task_native_pool(const em_task *t) { return t->ctx.pool; }
em_pool *em_task_row_pool(const em_task *t) { return t->ctx.row_pool; }

void em_task_node_metrics(const em_task *t, em_op_visit_fn fn, void *ctx) {
    if (t && t->op)
        em_op_visit(t->op, fn, ctx);
}

void em_task_destroy(em_task *t) {
    if (!t)
        return;
    em_op_destroy(t->op); /* closes first */
    t->op = NULL;
    if (t->on_destroy)
        t->on_destroy(t);
    em_pool_destroy(t->ctx.row_pool);
    em_pool_destroy(t->ctx.pool);
    free(t);
}

/* ------------------------------------------------------------ output stream */

typedef struct task_stream {
    em_task *t;
    em_schema schema; /* the root's output */
    em_error err;
} task_stream;

static int ts_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
    task_stream *ts = s->private_data;
    em_status st = em_arrow_export_schema(&ts->schema, out, &ts->err);
    return em_arrow_errno(st);
}

/* A failed pull's message leads with Ember's status ("EM_ERR_CORRUPT: ..."):
 * the stream's errno alone loses it. */
static int ts_failed(task_stream *ts, em_status st) {
    em_error_prefix(&ts->err, "%s", em_status_name(st));
    return em_arrow_errno(st);
}

static int ts_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
    task_stream *ts = s->private_data;
    memset(out, 0, sizeof *out);
    em_batch *b = NULL;
    em_status st = em_task_next(ts->t, &b, &ts->err);
    if (st == EM_DONE) {
        out->release = NULL; /* the end */
        return 0;
    }
    if (st != EM_OK)
        return ts_failed(ts, st);
    st = em_arrow_export_batch(b, out, &ts->err);
    return st == EM_OK ? 0 : ts_failed(ts, st);
}

static const char *ts_last_error(struct ArrowArrayStream *s) {
    task_stream *ts = s->private_data;
    return ts->err.msg[0] ? ts->err.msg : NULL;
}

static void ts_release(struct ArrowArrayStream *s) {
    task_stream *ts = s->private_data;
    if (ts) {
        em_schema_reset(&ts->schema);
        free(ts);
    }
    s->release = NULL;
    s->private_data = NULL;
}

em_status em_task_output_stream(em_task *t, struct ArrowArrayStream *out, em_error *err) {
    memset(out, 0, sizeof *out);
    if (!t->opened)
        EM_TRY(em_task_open(t, err));
    if (t->status != EM_OK)
        return EM_FAIL(err, t->status, "%s: failed before", t->name);
    task_stream *ts = calloc(1, sizeof *ts);
    if (!ts)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory making %s's output stream", t->name);
    ts->t = t;
    em_status s = em_schema_copy(&ts->schema, &t->op->schema, err);
    if (s != EM_OK) {
        free(ts);
        return s;
    }
    out->get_schema = ts_get_schema;
    out->get_next = ts_get_next;
    out->get_last_error = ts_last_error;
    out->release = ts_release;
    out->private_data = ts;
    return EM_OK;
}
