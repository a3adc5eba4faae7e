/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sort and TakeOrderedAndProject on rows.
 *
 * Both store every input row together with its evaluated sort keys
 * ([row..., keys...]) and sort row numbers with a stable merge sort under
 * Spark's ordering (em_rop_compare_key: nulls first or last as each key says,
 * NaN above every number, -0.0 = 0.0, strings by unsigned bytes), so rows
 * equal on the keys keep their input order, as the native operators do.
 *
 * TakeOrderedAndProject (`limit, [orders], [project list][, offset]`)
 * keeps at most limit + offset candidates: whenever the store holds twice
 * that many (and at least 4096 more), it is sorted and cut back, so memory
 * stays bounded by the limit. It outputs rows offset .. offset + limit of
 * the order through the project list.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/row_internal.h"



int em_sr_compare_range(const sorted_rows *s, int64_t a, int64_t b, int from, int to) {
    const em_datum *ra = rs_row(&s->rows, a) + s->n_in, *rb = rs_row(&s->rows, b) + s->n_in;
    for (int k = from; k < to; k++) {
        int c = em_rop_compare_key(&ra[k], &rb[k], s->spec.types[k], s->spec.ascending[k],
                                s->spec.nulls_first[k]);
        if (c)
            return c;
    }
    return 0;
}

/* em_rop_drain's callback storing a row (arg: the sorted_rows). */
static em_status sr_add_cb(em_row_op *op, void *arg, const em_datum *row, em_error *err) {
    (void)op;
    return em_sr_add(arg, row, err);
}

em_status em_sr_drain(em_row_op *op, sorted_rows *s, em_error *err) {
    EM_TRY(em_rop_drain(op, sr_add_cb, s, err));
    return em_sr_sort(s, err) == EM_OK ? EM_OK : em_rop_fail(op, err);
}

static int cmp_rows(const void *ctx, int64_t a, int64_t b) {
    const sorted_rows *s = ctx;
    return em_sr_compare_range(s, a, b, 0, s->spec.n);
}

em_status em_sr_init(sorted_rows *s, em_row_op *op, const em_expr *const *orders, int n,
                         em_error *err) {
    const em_row_op *child = op->children[0];
    s->n_in = child->n_output;
    EM_TRY(em_rop_sort_spec_init(&s->spec, op, orders, n, err));
    int w = s->n_in + n;
    s->types = calloc((size_t)w + 1, sizeof *s->types);
    s->tmp = calloc((size_t)w + 1, sizeof *s->tmp);
    if (!s->types || !s->tmp)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    memcpy(s->types, child->types, sizeof *s->types * (size_t)s->n_in);
    memcpy(s->types + s->n_in, s->spec.types, sizeof *s->types * (size_t)n);
    em_rs_init(&s->rows, w, s->types, rop_pool(op));
    em_row_arena_init(&s->scratch, rop_pool(op));
    return EM_OK;
}

em_status em_sr_add(sorted_rows *s, const em_datum *row, em_error *err) {
    em_row_arena_clear(&s->scratch);
    memcpy(s->tmp, row, sizeof *row * (size_t)s->n_in);
    for (int k = 0; k < s->spec.n; k++)
        EM_TRY(em_rexpr_eval(s->spec.keys[k], row, &s->scratch, &s->tmp[s->n_in + k], err));
    return em_rs_add(&s->rows, s->tmp, NULL, err);
}

/* The order's row numbers are charged to the rows' pool. */
static void sr_free_idx(sorted_rows *s) {
    if (s->idx)
        em_pool_release(s->rows.pool, s->n_idx * 8);
    free(s->idx);
    s->idx = NULL;
    s->n_idx = 0;
}

em_status em_sr_sort(sorted_rows *s, em_error *err) {
    sr_free_idx(s);
    EM_TRY(em_pool_reserve(s->rows.pool, s->rows.n_rows * 8, err));
    s->idx = malloc(sizeof *s->idx * (size_t)(s->rows.n_rows + 1));
    if (!s->idx) {
        em_pool_release(s->rows.pool, s->rows.n_rows * 8);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    }
    s->n_idx = s->rows.n_rows;
    for (int64_t i = 0; i < s->n_idx; i++)
        s->idx[i] = i;
    return em_rop_sort_indices(s->idx, s->n_idx, cmp_rows, s, err);
}

/* Sorts and keeps the first `keep` rows (a fresh store). */
static em_status sr_cut(sorted_rows *s, int64_t keep, em_error *err) {
    EM_TRY(em_sr_sort(s, err));
    row_store kept;
    em_rs_init(&kept, s->rows.n_cols, s->types, s->rows.pool);
    em_status st = EM_OK;
    for (int64_t i = 0; st == EM_OK && i < keep && i < s->n_idx; i++)
        st = em_rs_add(&kept, rs_row(&s->rows, s->idx[i]), NULL, err);
    if (st != EM_OK) {
        em_rs_reset(&kept);
        return st;
    }
    sr_free_idx(s);
    em_rs_reset(&s->rows);
    s->rows = kept;
    return EM_OK;
}

void em_sr_reset(sorted_rows *s) {
    em_rop_sort_spec_reset(&s->spec);
    sr_free_idx(s);
    em_rs_reset(&s->rows);
    em_row_arena_reset(&s->scratch);
    free(s->types);
    free(s->tmp);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ Sort */

typedef struct sort_state {
    sorted_rows s;
    bool sorted;
    int64_t emitted;
} sort_state;

static em_status sort_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    sort_state *st = op->state;
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    int n = 0;
    const em_expr *const *args = em_rop_arguments(op->node, &n);
    if (n < 1 || args[0]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "no sort order list in Arguments");
        return em_rop_fail(op, err);
    }
    if (op->n_output != op->children[0]->n_output) {
        EM_FAIL(err, EM_ERR_BIND, "output and input differ in width");
        return em_rop_fail(op, err);
    }
    if (em_sr_init(&st->s, op, (const em_expr *const *)args[0]->args, args[0]->n_args, err) != EM_OK)
        return em_rop_fail(op, err);
    memcpy(op->types, op->children[0]->types, sizeof *op->types * (size_t)op->n_output);
    return EM_OK;
}

static em_status sort_next(em_row_op *op, const em_datum **row, em_error *err) {
    sort_state *st = op->state;
    if (!st->sorted) {
        EM_TRY(em_sr_drain(op, &st->s, err));
        st->sorted = true;
        rop_note_peak(op, rs_bytes(&st->s.rows) + st->s.n_idx * 8);
    }
    if (st->emitted >= st->s.n_idx)
        return EM_DONE;
    *row = rs_row(&st->s.rows, st->s.idx[st->emitted++]);
    return EM_OK;
}

static void sort_close(em_row_op *op) {
    sort_state *st = op->state;
    if (st)
        em_sr_reset(&st->s);
    em_rop_close_children(op);
}

static const em_row_op_vtab SORT_VTAB = {
    .name = "Sort", .open = sort_open, .next = sort_next, .close = sort_close};

em_status em_rop_sort_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                          em_error *err) {
    EM_TRY(em_rop_init(&SORT_VTAB, node, &child, 1, sizeof(sort_state), out, err));
    return em_rop_inherit_output(out, child, err);
}

/* ------------------------------------------------------------ TakeOrderedAndProject */

typedef struct topn_state {
    sorted_rows s;
    int64_t limit, offset;
    rop_proj proj;
    bool sorted;
    int64_t emitted;
    em_row_arena scratch;
} topn_state;

static em_status topn_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    topn_state *st = op->state;
    em_row_arena_init(&st->scratch, rop_pool(op));
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    int n = 0;
    const em_expr *const *args = em_rop_arguments(op->node, &n);
    if (n < 2 || args[1]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "expected `limit, [orders], [project list]` in Arguments");
        return em_rop_fail(op, err);
    }
    EM_TRY(em_opu_int_arg(op->node, args[0], "limit", &st->limit, err));
    st->offset = 0;
    if (n >= 4 && (args[3]->kind == EM_EXPR_LITERAL || args[3]->kind == EM_EXPR_RAW))
        EM_TRY(em_opu_int_arg(op->node, args[3], "offset", &st->offset, err));
    if (em_sr_init(&st->s, op, (const em_expr *const *)args[1]->args, args[1]->n_args, err) != EM_OK)
        return em_rop_fail(op, err);
    const em_expr *pl = n >= 3 && args[2]->kind == EM_EXPR_LIST ? args[2] : NULL;
    const em_expr *const *exprs = pl ? (const em_expr *const *)pl->args : op->output;
    int n_exprs = pl ? pl->n_args : op->n_output;
    if (n_exprs != op->n_output) {
        EM_FAIL(err, EM_ERR_BIND, "the project list has %d expressions for %d attributes", n_exprs,
                op->n_output);
        return em_rop_fail(op, err);
    }
    if (em_rop_proj_init(&st->proj, op, exprs, n_exprs, op->types, err) != EM_OK)
        return em_rop_fail(op, err);
    return EM_OK;
}

/* Keeps a candidate row, cutting the store back to the first limit +
 * offset rows when it holds many more. */
static em_status topn_add(em_row_op *op, void *arg, const em_datum *row, em_error *err) {
    topn_state *st = arg;
    int64_t keep = st->limit + st->offset;
    int64_t slack = keep > 4096 ? keep : 4096;
    if (keep == 0)
        return EM_OK;
    EM_TRY(em_sr_add(&st->s, row, err));
    if (st->s.rows.n_rows > keep + slack) {
        rop_note_peak(op, rs_bytes(&st->s.rows));
        EM_TRY(sr_cut(&st->s, keep, err));
    }
    return EM_OK;
}

static em_status topn_next(em_row_op *op, const em_datum **row, em_error *err) {
    topn_state *st = op->state;
    if (!st->sorted) {
        st->sorted = true;
        EM_TRY(em_rop_drain(op, topn_add, st, err));
        rop_note_peak(op, rs_bytes(&st->s.rows));
        if (em_sr_sort(&st->s, err) != EM_OK)
            return em_rop_fail(op, err);
        st->emitted = st->offset;
    }
    if (st->emitted >= st->s.n_idx || st->emitted >= st->offset + st->limit)
        return EM_DONE;
    em_row_arena_clear(&st->scratch);
    if (em_rop_proj_eval(&st->proj, rs_row(&st->s.rows, st->s.idx[st->emitted++]), &st->scratch,
                      err) != EM_OK)
        return em_rop_fail(op, err);
    *row = st->proj.out;
    return EM_OK;
}

static void topn_close(em_row_op *op) {
    topn_state *st = op->state;
    if (st) {
        em_sr_reset(&st->s);
        em_rop_proj_reset(&st->proj);
        em_row_arena_reset(&st->scratch);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab TOPN_VTAB = {
    .name = "TakeOrderedAndProject", .open = topn_open, .next = topn_next, .close = topn_close};

em_status em_rop_top_n_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                           em_error *err) {
    return em_rop_init(&TOPN_VTAB, node, &child, 1, sizeof(topn_state), out, err);
}
