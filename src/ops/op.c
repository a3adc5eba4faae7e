/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator lifecycle shared by every native operator: construction from
 * a plan node, open/next/close through the vtable with metrics (rows,
 * batches, inclusive time), destruction of whole trees, and draining an
 * operator into a list of batches.
 *
 * Wrapping next here keeps the contract in one place: an operator's own
 * next may not return an empty batch, and after EM_DONE or an error it is
 * not called again (the wrapper remembers the end).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/internal.h"

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

em_status em_op_set_output(em_op *op, const em_expr *const *attrs, int n, em_error *err) {
    const em_expr **copy = NULL;
    if (n > 0) {
        copy = malloc(sizeof *copy * (size_t)n);
        if (!copy)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building an operator");
        memcpy(copy, attrs, sizeof *copy * (size_t)n);
    }
    em_schema schema = {0};
    em_status s = em_schema_init(&schema, n, err);
    for (int i = 0; s == EM_OK && i < n; i++) {
        const em_expr *a = attrs[i];
        em_type t = a->type_known ? a->type : em_type_make(EM_TYPE_NULL);
        s = em_schema_set(&schema, i, a->name ? a->name : "", t, true, err);
    }
    if (s != EM_OK) {
        free(copy);
        em_schema_reset(&schema);
        return s;
    }
    free(op->output);
    em_schema_reset(&op->schema);
    op->output = copy;
    op->n_output = n;
    op->schema = schema;
    return EM_OK;
}

em_status em_op_init(const em_op_vtab *vtab, const em_plan_node *node, em_op **children,
                     int n_children, size_t state_size, em_op **out, em_error *err) {
    *out = NULL;
    em_op *op = calloc(1, sizeof *op);
    if (!op)
        goto nomem;
    op->vtab = vtab;
    op->node = node;
    if (n_children > 0) {
        op->children = calloc((size_t)n_children, sizeof *op->children);
        if (!op->children)
            goto nomem;
        memcpy(op->children, children, sizeof *children * (size_t)n_children);
        op->n_children = n_children;
        n_children = 0; /* owned by op from here */
    }
    if (state_size > 0 && !(op->state = calloc(1, state_size)))
        goto nomem;
    if (node) {
        em_status s = em_op_set_output(op, (const em_expr *const *)node->output, node->n_output,
                                       err);
        if (s != EM_OK) {
            em_op_destroy(op);
            return s;
        }
    }
    *out = op;
    return EM_OK;
nomem:
    for (int i = 0; i < n_children; i++)
        em_op_destroy(children[i]);
    em_op_destroy(op);
    return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building operator %s",
                   vtab && vtab->name ? vtab->name : "?");
}

em_status em_op_fail(const em_op *op, em_error *err) {
    if (!err)
        return EM_ERR_INTERNAL;
    if (op->node)
        em_error_prefix(err, "%s (%d)", op->vtab->name, op->node->id);
    else
        em_error_prefix(err, "%s", op->vtab->name);
    return err->code;
}

em_status em_op_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    op->ctx = ctx;
    int64_t t0 = now_ns();
    em_status s = op->vtab->open(op, ctx, err);
    op->metrics.time_ns += now_ns() - t0;
    return s;
}

em_status em_op_next(em_op *op, em_batch **out, em_error *err) {
    *out = NULL;
    if (op->ctx && op->ctx->cancel && *op->ctx->cancel)
        return EM_FAIL(err, EM_ERR_CANCELLED, "%s: task cancelled", op->vtab->name);
    int64_t t0 = now_ns();
    em_status s;
    do {
        s = op->vtab->next(op, out, err);
    } while (s == EM_OK && (*out == NULL || em_batch_rows(*out) == 0));
    op->metrics.time_ns += now_ns() - t0;
    if (s == EM_OK) {
        op->metrics.rows_out += em_batch_rows(*out);
        op->metrics.batches_out++;
    } else {
        *out = NULL;
    }
    return s;
}

void em_op_close(em_op *op) {
    if (op && op->vtab && op->vtab->close)
        op->vtab->close(op);
}

void em_op_visit(const em_op *op, em_op_visit_fn fn, void *ctx) {
    if (!op)
        return;
    em_op_metrics m = op->metrics;
    m.self_ns = m.time_ns;
    for (int i = 0; i < op->n_children; i++)
        if (op->children[i])
            m.self_ns -= op->children[i]->metrics.time_ns;
    if (m.self_ns < 0)
        m.self_ns = 0; /* clocks read at different moments */
    fn(ctx, op->node, op->vtab->name, &m);
    for (int i = 0; i < op->n_children; i++)
        em_op_visit(op->children[i], fn, ctx);
    if (op->vtab->visit_hidden)
        op->vtab->visit_hidden(op, fn, ctx);
}

void em_op_destroy(em_op *op) {
    if (!op)
        return;
    em_op_close(op);
    for (int i = 0; i < op->n_children; i++)
        em_op_destroy(op->children[i]);
    free(op->children);
    free(op->output);
    em_schema_reset(&op->schema);
    free(op->state);
    free(op);
}

void em_batch_list_reset(em_batch_list *l) {
    if (!l)
        return;
    for (int64_t i = 0; i < l->n_batches; i++)
        em_batch_destroy(l->batches[i]);
    free(l->batches);
    memset(l, 0, sizeof *l);
}

/* Copies a batch (applying its selection) so it outlives the producer's next call. */
static em_status copy_batch(const em_batch *b, em_pool *pool, em_batch **out, em_error *err) {
    int64_t n = em_batch_rows(b);
    em_batch *c = NULL;
    EM_TRY(em_batch_create(&b->schema, 0, pool, &c, err));
    for (int i = 0; i < b->n_cols; i++) {
        em_column_reset(&c->cols[i]);
        em_status s = em_column_take(&b->cols[i], b->sel, n, pool, &c->cols[i], err);
        if (s != EM_OK) {
            em_batch_destroy(c);
            return s;
        }
    }
    c->n_rows = n;
    *out = c;
    return EM_OK;
}

em_status em_op_collect(em_op *op, em_pool *pool, em_batch_list *out, em_error *err) {
    memset(out, 0, sizeof *out);
    int64_t cap = 0;
    for (;;) {
        em_batch *b = NULL;
        em_status s = em_op_next(op, &b, err);
        if (s == EM_DONE)
            return EM_OK;
        if (s == EM_OK && out->n_batches == cap) {
            int64_t ncap = cap ? cap * 2 : 16;
            em_batch **nb = realloc(out->batches, sizeof *nb * (size_t)ncap);
            if (!nb)
                s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory collecting %s output",
                            op->vtab->name);
            else {
                out->batches = nb;
                cap = ncap;
            }
        }
        if (s == EM_OK)
            s = copy_batch(b, pool, &out->batches[out->n_batches], err);
        if (s != EM_OK) {
            em_batch_list_reset(out);
            return s;
        }
        out->n_rows += em_batch_rows(b);
        out->n_batches++;
    }
}

em_status em_par_for_each(em_par *par, int64_t n, em_par_fn fn, void *arg, em_error *err) {
    if (par && par->for_each && n > 1)
        return par->for_each(par, n, fn, arg, err);
    for (int64_t i = 0; i < n; i++)
        EM_TRY(fn(arg, i, err));
    return EM_OK;
}
