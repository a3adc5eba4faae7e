/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The row operator lifecycle (open/next/close through the vtable, with
 * metrics: rows, inclusive time, the operator's own peak), destruction of
 * mixed trees, and the helpers every row operator shares: binding
 * expression lists, the store of materialized rows and Spark's ordering
 * of sort keys.
 *
 * Row operators report batches_out as 0: they hand out rows, not batches.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/op_util.h"
#include "ops/row_internal.h"

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

em_status em_rop_set_output(em_row_op *op, const em_expr *const *attrs, int n, em_error *err) {
    const em_expr **copy = calloc((size_t)n + 1, sizeof *copy);
    em_type *types = calloc((size_t)n + 1, sizeof *types);
    if (!copy || !types) {
        free(copy);
        free(types);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building a row operator");
    }
    for (int i = 0; i < n; i++) {
        copy[i] = attrs[i];
        types[i] = attrs[i]->type_known ? attrs[i]->type : em_type_make(EM_TYPE_NULL);
    }
    free(op->output);
    free(op->types);
    op->output = copy;
    op->types = types;
    op->n_output = n;
    return EM_OK;
}

em_status em_rop_init(const em_row_op_vtab *vtab, const em_plan_node *node, em_row_op **children,
                   int n_children, size_t state_size, em_row_op **out, em_error *err) {
    *out = NULL;
    em_row_op *op = calloc(1, sizeof *op);
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
        n_children = 0;
    }
    if (state_size > 0 && !(op->state = calloc(1, state_size)))
        goto nomem;
    if (node) {
        em_status s =
            em_rop_set_output(op, (const em_expr *const *)node->output, node->n_output, err);
        if (s != EM_OK) {
            em_row_op_destroy(op);
            return s;
        }
    }
    *out = op;
    return EM_OK;
nomem:
    for (int i = 0; i < n_children; i++)
        em_row_op_destroy(children[i]);
    em_row_op_destroy(op);
    return EM_FAIL(err, EM_ERR_NOMEM, "out of memory building row operator %s",
                   vtab && vtab->name ? vtab->name : "?");
}

em_status em_rop_inherit_output(em_row_op **op, const em_row_op *child, em_error *err) {
    if ((*op)->n_output > 0 || child->n_output == 0)
        return EM_OK;
    em_status s = em_rop_set_output(*op, child->output, child->n_output, err);
    if (s == EM_OK)
        memcpy((*op)->types, child->types, sizeof *child->types * (size_t)child->n_output);
    else {
        em_row_op_destroy(*op);
        *op = NULL;
    }
    return s;
}

em_status em_rop_fail(const em_row_op *op, em_error *err) {
    if (!err)
        return EM_ERR_INTERNAL;
    if (op->node)
        em_error_prefix(err, "%s (%d) [row]", op->vtab->name, op->node->id);
    else
        em_error_prefix(err, "%s", op->vtab->name);
    return err->code;
}

em_status em_rop_drain(em_row_op *op,
                    em_status (*add)(em_row_op *op, void *arg, const em_datum *row, em_error *err),
                    void *arg, em_error *err) {
    for (;;) {
        const em_datum *in = NULL;
        em_status s = em_row_op_next(op->children[0], &in, err);
        if (s == EM_DONE)
            return EM_OK;
        if (s != EM_OK)
            return s;
        if (add(op, arg, in, err) != EM_OK)
            return em_rop_fail(op, err);
    }
}

void em_rop_close_children(em_row_op *op) {
    for (int i = 0; i < op->n_children; i++)
        em_row_op_close(op->children[i]);
}

const em_expr *const *em_rop_arguments(const em_plan_node *node, int *n) {
    return em_opu_arguments(node, n);
}

em_status em_rop_bind_list(em_row_op *op, const em_expr *const *exprs, int n, em_rexpr ***out,
                        em_type *types, em_error *err) {
    em_rexpr **xs = calloc((size_t)n + 1, sizeof *xs);
    if (!xs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory binding expressions");
    *out = xs;
    const em_row_op *child = op->children[0];
    for (int i = 0; i < n; i++) {
        EM_TRY(em_rexpr_bind(rop_unalias(exprs[i]), child->output, child->n_output,
                             &op->ctx->expr_opts, &xs[i], err));
        if (types)
            types[i] = em_rexpr_type(xs[i]);
    }
    return EM_OK;
}

void em_rop_free_exprs(em_rexpr **xs, int n) {
    for (int i = 0; xs && i < n; i++)
        em_rexpr_destroy(xs[i]);
    free(xs);
}

/* Binds exprs; types[i] takes the expression's type unless it is the NULL
 * type (a bare `null`), when the attribute's type stays. */
em_status em_rop_proj_init(rop_proj *p, em_row_op *op, const em_expr *const *exprs, int n,
                            em_type *types, em_error *err) {
    memset(p, 0, sizeof *p);
    p->n = n;
    p->out = calloc((size_t)n + 1, sizeof *p->out);
    if (!p->out)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_type *got = calloc((size_t)n + 1, sizeof *got);
    if (!got)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    em_status s = em_rop_bind_list(op, exprs, n, &p->xs, got, err);
    for (int i = 0; s == EM_OK && types && i < n; i++)
        if (got[i].id != EM_TYPE_NULL)
            types[i] = got[i];
    free(got);
    return s;
}

em_status em_rop_proj_eval(rop_proj *p, const em_datum *in, em_row_arena *arena, em_error *err) {
    for (int i = 0; i < p->n; i++)
        EM_TRY(em_rexpr_eval(p->xs[i], in, arena, &p->out[i], err));
    return EM_OK;
}

void em_rop_proj_reset(rop_proj *p) {
    em_rop_free_exprs(p->xs, p->n);
    free(p->out);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------ public lifecycle */

em_status em_row_op_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    op->ctx = ctx;
    int64_t t0 = now_ns();
    em_status s = op->vtab->open(op, ctx, err);
    op->open_ns += now_ns() - t0;
    op->metrics.time_ns = op->open_ns;
    return s;
}

/* The sampled next() time scaled to every call, plus open's. */
static void scale_time(em_row_op *op) {
    op->metrics.time_ns =
        op->open_ns + (int64_t)((double)op->timed_ns * op->next_calls / op->timed_calls);
}

em_status em_row_op_next(em_row_op *op, const em_datum **row, em_error *err) {
    *row = NULL;
    if (op->ctx && op->ctx->cancel && *op->ctx->cancel)
        return EM_FAIL(err, EM_ERR_CANCELLED, "%s: task cancelled", op->vtab->name);
    /* the first calls, then one in 32 */
    int64_t call = op->next_calls++;
    em_status s;
    if (call < 256 || (call & 31) == 0) {
        int64_t t0 = now_ns();
        s = op->vtab->next(op, row, err);
        op->timed_ns += now_ns() - t0;
        op->timed_calls++;
        scale_time(op);
    } else {
        s = op->vtab->next(op, row, err);
    }
    if (s == EM_OK)
        op->metrics.rows_out++;
    else
        *row = NULL;
    return s;
}

void em_row_op_close(em_row_op *op) {
    if (op && op->timed_calls > 0) /* the calls after the last sample too */
        scale_time(op);
    if (op && op->vtab && op->vtab->close)
        op->vtab->close(op);
}

void em_row_op_destroy(em_row_op *op) {
    if (!op)
        return;
    em_row_op_close(op);
    for (int i = 0; i < op->n_children; i++)
        em_row_op_destroy(op->children[i]);
    em_op_destroy(op->native_child);
    free(op->children);
    free(op->output);
    free(op->types);
    free(op->state);
    free(op);
}

void em_row_op_visit(const em_row_op *op, em_op_visit_fn fn, void *ctx) {
    if (!op)
        return;
    em_op_metrics m = op->metrics;
    m.self_ns = m.time_ns;
    for (int i = 0; i < op->n_children; i++)
        if (op->children[i])
            m.self_ns -= op->children[i]->metrics.time_ns;
    if (op->native_child)
        m.self_ns -= op->native_child->metrics.time_ns;
    if (m.self_ns < 0)
        m.self_ns = 0;
    fn(ctx, op->node, op->vtab->name, &m);
    for (int i = 0; i < op->n_children; i++)
        em_row_op_visit(op->children[i], fn, ctx);
    if (op->native_child)
        em_op_visit(op->native_child, fn, ctx);
}

/* ------------------------------------------------------------ row store */

void em_rs_init(row_store *s, int n_cols, const em_type *types, em_pool *pool) {
    memset(s, 0, sizeof *s);
    s->n_cols = n_cols;
    s->types = types;
    s->pool = pool;
    em_row_arena_init(&s->arena, pool);
}

em_status em_rs_add(row_store *s, const em_datum *row, em_datum **at, em_error *err) {
    if (s->n_rows == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 64;
        int64_t width = (int64_t)sizeof(em_datum) * (s->n_cols > 0 ? s->n_cols : 1);
        EM_TRY(em_pool_reserve(s->pool, (cap - s->cap) * width, err));
        em_datum *d = realloc(s->data, (size_t)(cap * width));
        if (!d) {
            em_pool_release(s->pool, (cap - s->cap) * width);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory storing rows");
        }
        s->charged += (cap - s->cap) * width;
        s->data = d;
        s->cap = cap;
    }
    em_datum *dst = rs_row(s, s->n_rows);
    for (int c = 0; c < s->n_cols; c++)
        EM_TRY(em_datum_copy(&dst[c], &row[c], s->types[c], &s->arena, err));
    s->n_rows++;
    if (at)
        *at = dst;
    return EM_OK;
}

void em_rs_reset(row_store *s) {
    free(s->data);
    if (s->charged)
        em_pool_release(s->pool, s->charged);
    em_row_arena_reset(&s->arena);
    s->data = NULL;
    s->n_rows = s->cap = s->charged = 0;
}

/* ------------------------------------------------------------ ordering */

int em_rop_compare_key(const em_datum *a, const em_datum *b, em_type t, bool ascending,
                    bool nulls_first) {
    if (a->is_null || b->is_null) {
        if (a->is_null && b->is_null)
            return 0;
        return a->is_null == nulls_first ? -1 : 1;
    }
    int c = em_datum_compare(a, b, t);
    return ascending ? c : -c;
}

em_status em_rop_sort_indices(int64_t *idx, int64_t n,
                           int (*cmp)(const void *ctx, int64_t a, int64_t b), const void *ctx,
                           em_error *err) {
    if (n < 2)
        return EM_OK;
    int64_t *tmp = malloc(sizeof *tmp * (size_t)n);
    if (!tmp)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory sorting %lld rows", (long long)n);
    /* bottom-up merge sort: stable, so equal rows keep their input order */
    int64_t *src = idx, *dst = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = cmp(ctx, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx)
        memcpy(idx, src, sizeof *idx * (size_t)n);
    free(tmp);
    return EM_OK;
}

em_status em_rop_sort_spec_init(rop_sort_spec *sp, em_row_op *op, const em_expr *const *orders, int n,
                             em_error *err) {
    memset(sp, 0, sizeof *sp);
    sp->keys = calloc((size_t)n + 1, sizeof *sp->keys);
    sp->types = calloc((size_t)n + 1, sizeof *sp->types);
    sp->ascending = calloc((size_t)n + 1, sizeof *sp->ascending);
    sp->nulls_first = calloc((size_t)n + 1, sizeof *sp->nulls_first);
    if (!sp->keys || !sp->types || !sp->ascending || !sp->nulls_first)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory binding sort keys");
    sp->n = n;
    const em_row_op *child = op->children[0];
    for (int i = 0; i < n; i++) {
        const em_expr *e = orders[i];
        sp->ascending[i] = true;
        sp->nulls_first[i] = true;
        if (e->kind == EM_EXPR_SORT_ORDER && e->n_args == 1) {
            sp->ascending[i] = e->ascending;
            sp->nulls_first[i] = e->nulls_first;
            e = e->args[0];
        }
        EM_TRY(em_rexpr_bind(e, child->output, child->n_output, &op->ctx->expr_opts,
                             &sp->keys[i], err));
        sp->types[i] = em_rexpr_type(sp->keys[i]);
    }
    return EM_OK;
}

void em_rop_sort_spec_reset(rop_sort_spec *sp) {
    em_rop_free_exprs(sp->keys, sp->n);
    free(sp->types);
    free(sp->ascending);
    free(sp->nulls_first);
    memset(sp, 0, sizeof *sp);
}
