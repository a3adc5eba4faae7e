/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The joints between the engines:
 *
 *   ColumnarToRow   (em_row_from_native) a row operator over a native one:
 *                   hands out the rows of each batch, the strings borrowed
 *                   from the batch (valid until the next batch is pulled),
 *                   and releases the task's native slot once its input is
 *                   exhausted.
 *   RowToColumnar   (em_native_from_row) a native operator over a row one:
 *                   packs rows into batches of up to EM_BATCH_CAP rows,
 *                   taking the native slot before its first batch.
 *   RowStageOutput  the same packing at the root of a stage that runs on
 *                   rows: the runtime stores batches, but no native
 *                   operator reads them, so no slot is taken.
 *   CoalesceBatches a native operator that merges the small batches a
 *                   shuffle read yields into batches of up to EM_BATCH_CAP
 *                   rows (a batch that is already half full passes through
 *                   uncopied).
 *
 * A RowToColumnar owns its row subtree outside em_op's children, so its
 * close destroys that subtree; the runtime reads metrics after close, so
 * close first keeps a copy of every metric the subtree reports (in the
 * operator's state, sized when the operator is built), and visit_hidden
 * reports the copies from then on.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/row_internal.h"

/* ------------------------------------------------------------ batches to rows */

em_status em_rbc_next(rop_batch_cursor *c, const em_datum **row, em_error *err) {
    for (;;) {
        if (c->b && c->pos < em_batch_rows(c->b)) {
            int64_t r = c->b->sel ? c->b->sel[c->pos] : c->pos;
            c->pos++;
            for (int i = 0; i < c->n && i < c->b->n_cols; i++)
                em_datum_from_column(&c->b->cols[i], r, &c->row[i]);
            *row = c->row;
            return EM_OK;
        }
        if (c->done)
            return EM_DONE;
        c->b = NULL;
        c->pos = 0;
        em_status s = em_op_next(c->src, &c->b, err);
        if (s == EM_DONE)
            c->done = true;
        if (s != EM_OK)
            return s;
    }
}

em_status em_rbc_open(rop_batch_cursor *c, em_op *src, em_exec_ctx *ctx, em_error *err) {
    c->src = src;
    c->b = NULL;
    c->pos = 0;
    c->done = false;
    EM_TRY(em_op_open(src, ctx, err));
    c->n = src->n_output;
    free(c->row);
    c->row = calloc((size_t)c->n + 1, sizeof *c->row);
    if (!c->row)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    return EM_OK;
}

void em_rbc_close(rop_batch_cursor *c) {
    if (c->src)
        em_op_close(c->src);
    free(c->row);
    c->row = NULL;
    c->b = NULL;
}

/* Types of a native operator's columns as rows carry them. */
em_status em_rbc_types(em_row_op *op, const em_op *src, em_error *err) {
    EM_TRY(em_rop_set_output(op, src->output, src->n_output, err));
    for (int i = 0; i < src->n_output && i < src->schema.n_fields; i++)
        op->types[i] = src->schema.fields[i].type;
    return EM_OK;
}

typedef struct c2r_state {
    rop_batch_cursor cur;
    bool left; /* the native slot was released */
} c2r_state;

static em_status c2r_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    c2r_state *st = op->state;
    EM_TRY(em_rbc_open(&st->cur, op->native_child, ctx, err));
    return em_rbc_types(op, op->native_child, err);
}

static em_status c2r_next(em_row_op *op, const em_datum **row, em_error *err) {
    c2r_state *st = op->state;
    em_status s = em_rbc_next(&st->cur, row, err);
    if (s == EM_DONE && !st->left) {
        st->left = true;
        if (op->ctx->native_leave)
            op->ctx->native_leave(op->ctx);
    }
    return s;
}

static void c2r_close(em_row_op *op) {
    c2r_state *st = op->state;
    if (st)
        em_rbc_close(&st->cur);
}

static const em_row_op_vtab C2R_VTAB = {
    .name = "ColumnarToRow", .open = c2r_open, .next = c2r_next, .close = c2r_close};

em_status em_row_from_native(em_op *child, em_row_op **out, em_error *err) {
    *out = NULL;
    if (!child)
        return EM_FAIL(err, EM_ERR_INVALID, "ColumnarToRow: no input");
    em_status s = em_rop_init(&C2R_VTAB, NULL, NULL, 0, sizeof(c2r_state), out, err);
    if (s == EM_OK)
        s = em_rbc_types(*out, child, err);
    if (s != EM_OK) {
        em_row_op_destroy(*out);
        *out = NULL;
        em_op_destroy(child);
        return s;
    }
    (*out)->native_child = child;
    return EM_OK;
}

/* ------------------------------------------------------------ rows to batches */

typedef struct metric_copy {
    const em_plan_node *node;
    const char *name;
    em_op_metrics m;
} metric_copy;

typedef struct r2c_state {
    em_row_op *rows; /* owned until close */
    bool transition; /* RowToColumnar (takes the native slot) */
    bool entered;
    bool done;
    em_batch *out;
    int n_copies; /* metrics of the subtree, kept at close */
    int copies_cap;
    metric_copy copies[];
} r2c_state;

static void count_visit(void *ctx, const em_plan_node *node, const char *name,
                        const em_op_metrics *m) {
    (void)node;
    (void)name;
    (void)m;
    (*(int *)ctx)++;
}

static void copy_visit(void *ctx, const em_plan_node *node, const char *name,
                       const em_op_metrics *m) {
    r2c_state *st = ctx;
    if (st->n_copies < st->copies_cap)
        st->copies[st->n_copies++] = (metric_copy){.node = node, .name = name, .m = *m};
}

static em_status r2c_schema(em_op *op, const em_row_op *rows, em_error *err) {
    EM_TRY(em_op_set_output(op, rows->output, rows->n_output, err));
    for (int i = 0; i < rows->n_output; i++)
        op->schema.fields[i].type = rows->types[i];
    return EM_OK;
}

static em_status r2c_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    r2c_state *st = op->state;
    if (!st->rows)
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s: opened after close", op->vtab->name);
    EM_TRY(em_row_op_open(st->rows, ctx, err));
    /* open settled the row operators' types */
    return r2c_schema(op, st->rows, err);
}

static em_status r2c_next(em_op *op, em_batch **out, em_error *err) {
    r2c_state *st = op->state;
    if (st->done)
        return EM_DONE;
    em_batch_destroy(st->out);
    st->out = NULL;
    em_status s = em_batch_create(&op->schema, EM_BATCH_CAP, op->ctx->pool, &st->out, err);
    int64_t n = 0;
    while (s == EM_OK && n < EM_BATCH_CAP) {
        const em_datum *row = NULL;
        s = em_row_op_next(st->rows, &row, err);
        if (s == EM_DONE) {
            st->done = true;
            s = EM_OK;
            break;
        }
        for (int c = 0; s == EM_OK && c < st->out->n_cols; c++)
            s = em_column_append_datum(&st->out->cols[c], &row[c], op->ctx->pool, err);
        n++;
    }
    if (s != EM_OK)
        return s == EM_ERR_CANCELLED ? s : em_op_fail(op, err);
    if (n == 0)
        return EM_DONE;
    st->out->n_rows = n;
    if (st->transition && !st->entered) {
        st->entered = true;
        if (op->ctx->native_enter && op->ctx->native_enter(op->ctx, err) != EM_OK)
            return em_op_fail(op, err);
    }
    *out = st->out;
    return EM_OK;
}

static void r2c_close(em_op *op) {
    r2c_state *st = op->state;
    if (!st)
        return;
    em_batch_destroy(st->out);
    st->out = NULL;
    if (st->rows) {
        em_row_op_close(st->rows);
        st->n_copies = 0;
        em_row_op_visit(st->rows, copy_visit, st);
        em_row_op_destroy(st->rows);
        st->rows = NULL;
    }
}

static void r2c_visit_hidden(const em_op *op, em_op_visit_fn fn, void *ctx) {
    const r2c_state *st = op->state;
    if (st->rows) {
        em_row_op_visit(st->rows, fn, ctx);
        return;
    }
    for (int i = 0; i < st->n_copies; i++)
        fn(ctx, st->copies[i].node, st->copies[i].name, &st->copies[i].m);
}

static const em_op_vtab R2C_VTAB = {.name = "RowToColumnar",
                                    .open = r2c_open,
                                    .next = r2c_next,
                                    .close = r2c_close,
                                    .visit_hidden = r2c_visit_hidden};
static const em_op_vtab ROOT_VTAB = {.name = "RowStageOutput",
                                     .open = r2c_open,
                                     .next = r2c_next,
                                     .close = r2c_close,
                                     .visit_hidden = r2c_visit_hidden};

static em_status r2c_create(const em_op_vtab *vt, bool transition, em_row_op *child, em_op **out,
                            em_error *err) {
    *out = NULL;
    if (!child)
        return EM_FAIL(err, EM_ERR_INVALID, "%s: no input", vt->name);
    int n = 0;
    em_row_op_visit(child, count_visit, &n);
    em_status s = em_op_init(vt, NULL, NULL, 0, sizeof(r2c_state) + sizeof(metric_copy) * (size_t)n,
                             out, err);
    if (s == EM_OK)
        s = r2c_schema(*out, child, err);
    if (s != EM_OK) {
        em_op_destroy(*out);
        *out = NULL;
        em_row_op_destroy(child);
        return s;
    }
    r2c_state *st = (*out)->state;
    st->rows = child;
    st->transition = transition;
    st->copies_cap = n;
    return EM_OK;
}

em_status em_native_from_row(em_row_op *child, em_op **out, em_error *err) {
    return r2c_create(&R2C_VTAB, true, child, out, err);
}

const em_plan_node *em_opu_source_node(const em_op *op) {
    while (op && !op->node && op->vtab == &R2C_VTAB) {
        const em_row_op *r = ((const r2c_state *)op->state)->rows;
        if (r->node)
            return r->node;
        op = r->native_child;
    }
    return op ? op->node : NULL;
}

const em_plan_node *em_rop_source_node(const em_row_op *op) {
    if (op && !op->node && op->native_child)
        return em_opu_source_node(op->native_child);
    return op ? op->node : NULL;
}

em_status em_rop_root_adapter(em_row_op *child, em_op **out, em_error *err) {
    return r2c_create(&ROOT_VTAB, false, child, out, err);
}

/* ------------------------------------------------------------ CoalesceBatches */

typedef struct coalesce_state {
    em_batch *acc;     /* rows gathered so far (owned) */
    em_batch *pending; /* the child's batch that did not fit (borrowed) */
    bool done;
} coalesce_state;

/* op's output: child's attributes with child's column types. */
static em_status same_schema(em_op *op, const em_op *child, em_error *err) {
    EM_TRY(em_op_set_output(op, child->output, child->n_output, err));
    for (int i = 0; i < child->schema.n_fields && i < op->schema.n_fields; i++)
        op->schema.fields[i].type = child->schema.fields[i].type;
    return EM_OK;
}

static em_status coalesce_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    EM_TRY(em_op_open(op->children[0], ctx, err));
    /* the child's schema is final once it is open */
    return same_schema(op, op->children[0], err) == EM_OK ? EM_OK : em_op_fail(op, err);
}

static em_status coalesce_next(em_op *op, em_batch **out, em_error *err) {
    coalesce_state *st = op->state;
    em_op *child = op->children[0];
    if (st->acc && st->acc->n_rows > 0 && em_batch_clear(st->acc, EM_BATCH_CAP, err) != EM_OK)
        return em_op_fail(op, err);
    for (;;) {
        em_batch *in = st->pending;
        st->pending = NULL;
        if (!in && !st->done) {
            em_status s = em_op_next(child, &in, err);
            if (s == EM_DONE)
                st->done = true;
            else if (s != EM_OK)
                return s;
        }
        int64_t have = st->acc ? st->acc->n_rows : 0;
        if (!in) {
            if (have == 0)
                return EM_DONE;
            *out = st->acc;
            return EM_OK;
        }
        int64_t rows = em_batch_rows(in);
        if (have == 0 && rows * 2 >= EM_BATCH_CAP) {
            *out = in; /* big enough: no copy */
            return EM_OK;
        }
        if (have + rows > EM_BATCH_CAP) {
            st->pending = in;
            *out = st->acc;
            return EM_OK;
        }
        if (!st->acc && em_batch_create(&in->schema, EM_BATCH_CAP, op->ctx->pool, &st->acc,
                                        err) != EM_OK)
            return em_op_fail(op, err);
        if (em_batch_append(st->acc, in, err) != EM_OK)
            return em_op_fail(op, err);
        if (st->acc->n_rows == EM_BATCH_CAP) {
            *out = st->acc;
            return EM_OK;
        }
    }
}

static void coalesce_close(em_op *op) {
    coalesce_state *st = op->state;
    if (st) {
        em_batch_destroy(st->acc);
        st->acc = NULL;
        st->pending = NULL;
    }
    for (int i = 0; i < op->n_children; i++)
        em_op_close(op->children[i]);
}

static const em_op_vtab COALESCE_VTAB = {
    .name = "CoalesceBatches", .open = coalesce_open, .next = coalesce_next, .close = coalesce_close};

em_status em_op_coalesce_batches_create(em_op *child, em_op **out, em_error *err) {
    EM_TRY(em_op_init(&COALESCE_VTAB, NULL, &child, 1, sizeof(coalesce_state), out, err));
    em_status s = same_schema(*out, child, err);
    if (s != EM_OK) {
        em_op_destroy(*out);
        *out = NULL;
    }
    return s;
}
