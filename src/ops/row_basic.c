/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The streaming row operators: sources, Filter, Project, the pass-through
 * nodes, limits, Union and Expand.
 *
 * Sources (Scan parquet, LocalTableScan, reads of Exchange /
 * BroadcastExchange / ReusedExchange data) read through the same native
 * readers as the native engine (one Parquet reader, one place that maps
 * ReadSchema and prunes row groups, one place that labels reused exchange
 * data), privately, and hand out their batches' rows. The native scan
 * drops no rows (the Filter above applies the condition), so neither does
 * this one. Being internal, those readers are no transitions: they run
 * with the native slot hooks removed from their context and are not
 * reported as operators of their own.
 *
 * Strings: a streaming operator's row borrows from its child's row or from
 * its own scratch arena, cleared when the next row is asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/row_internal.h"

/* ------------------------------------------------------------ sources */

typedef struct source_state {
    em_op *src; /* owned */
    rop_batch_cursor cur;
    em_exec_ctx quiet; /* the task's context without the native slot hooks */
} source_state;

static em_status source_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    source_state *st = op->state;
    /* the reader is native code serving the row engine: it must not take
     * the task's native slot (the native scan does when it opens) */
    st->quiet = *ctx;
    st->quiet.native_enter = NULL;
    st->quiet.native_leave = NULL;
    /* what it reads serves the row engine: charged to the row pool */
    if (ctx->row_pool) {
        st->quiet.pool = ctx->row_pool;
        st->quiet.expr_opts.pool = ctx->row_pool;
    }
    EM_TRY(em_rbc_open(&st->cur, st->src, &st->quiet, err));
    return em_rbc_types(op, st->src, err);
}

static em_status source_next(em_row_op *op, const em_datum **row, em_error *err) {
    source_state *st = op->state;
    return em_rbc_next(&st->cur, row, err);
}

static void source_close(em_row_op *op) {
    source_state *st = op->state;
    if (!st)
        return;
    em_rbc_close(&st->cur);
    em_op_destroy(st->src);
    st->src = NULL;
    st->cur.src = NULL;
}

static const em_row_op_vtab SCAN_VTAB = {
    .name = "Scan parquet", .open = source_open, .next = source_next, .close = source_close};
static const em_row_op_vtab LOCAL_VTAB = {
    .name = "LocalTableScan", .open = source_open, .next = source_next, .close = source_close};
static const em_row_op_vtab SHUFFLE_VTAB = {
    .name = "ShuffleRead", .open = source_open, .next = source_next, .close = source_close};
static const em_row_op_vtab BROADCAST_VTAB = {
    .name = "BroadcastRead", .open = source_open, .next = source_next, .close = source_close};

em_status em_rop_source_create(const em_plan_node *node, em_row_op **out, em_error *err) {
    *out = NULL;
    em_op *src = NULL;
    const em_row_op_vtab *vt;
    bool broadcast = node->kind == EM_NODE_BROADCAST_EXCHANGE ||
                     (node->kind == EM_NODE_REUSED_EXCHANGE && node->reuses &&
                      node->reuses->kind == EM_NODE_BROADCAST_EXCHANGE);
    switch (node->kind) {
    case EM_NODE_SCAN:
        vt = &SCAN_VTAB;
        EM_TRY(em_op_scan_create(node, &src, err));
        break;
    case EM_NODE_LOCAL_TABLE_SCAN:
        vt = &LOCAL_VTAB;
        EM_TRY(em_op_local_table_create(node, &src, err));
        break;
    case EM_NODE_EXCHANGE:
    case EM_NODE_BROADCAST_EXCHANGE:
    case EM_NODE_REUSED_EXCHANGE:
        if (node->kind == EM_NODE_REUSED_EXCHANGE && !node->reuses)
            return EM_FAIL(err, EM_ERR_BIND, "ReusedExchange (%d): operator %d not found",
                           node->id, node->reuses_id);
        vt = broadcast ? &BROADCAST_VTAB : &SHUFFLE_VTAB;
        EM_TRY(broadcast ? em_op_broadcast_read_create(node, &src, err)
                         : em_op_shuffle_read_create(node, &src, err));
        break;
    default:
        return EM_FAIL(err, EM_ERR_INTERNAL, "%s (%d) is not a source", node->name, node->id);
    }
    em_status s = em_rop_init(vt, node, NULL, 0, sizeof(source_state), out, err);
    if (s != EM_OK) {
        em_op_destroy(src);
        return s;
    }
    ((source_state *)(*out)->state)->src = src;
    return em_rbc_types(*out, src, err);
}

/* ------------------------------------------------------------ Filter */

typedef struct filter_state {
    em_rexpr *cond;
    em_row_arena scratch;
} filter_state;

static em_status filter_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    filter_state *st = op->state;
    em_row_arena_init(&st->scratch, rop_pool(op));
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    const em_plan_field *f = em_plan_node_field(op->node, EM_FIELD_CONDITION);
    if (!f || f->n_exprs < 1) {
        EM_FAIL(err, EM_ERR_PARSE, "no Condition");
        return em_rop_fail(op, err);
    }
    const em_row_op *child = op->children[0];
    if (em_rexpr_bind(f->exprs[0], child->output, child->n_output, &ctx->expr_opts, &st->cond,
                      err) != EM_OK)
        return em_rop_fail(op, err);
    memcpy(op->types, child->types, sizeof *op->types * (size_t)op->n_output);
    return EM_OK;
}

static em_status filter_next(em_row_op *op, const em_datum **row, em_error *err) {
    filter_state *st = op->state;
    for (;;) {
        const em_datum *in = NULL;
        EM_TRY(em_row_op_next(op->children[0], &in, err));
        em_row_arena_clear(&st->scratch);
        bool keep = false;
        if (em_rexpr_test(st->cond, in, &st->scratch, &keep, err) != EM_OK)
            return em_rop_fail(op, err);
        if (keep) {
            *row = in;
            return EM_OK;
        }
    }
}

static void filter_close(em_row_op *op) {
    filter_state *st = op->state;
    if (st) {
        em_rexpr_destroy(st->cond);
        st->cond = NULL;
        em_row_arena_reset(&st->scratch);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab FILTER_VTAB = {
    .name = "Filter", .open = filter_open, .next = filter_next, .close = filter_close};

em_status em_rop_filter_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                            em_error *err) {
    EM_TRY(em_rop_init(&FILTER_VTAB, node, &child, 1, sizeof(filter_state), out, err));
    EM_TRY(em_rop_inherit_output(out, child, err));
    if ((*out)->n_output != child->n_output) {
        em_row_op_destroy(*out);
        *out = NULL;
        return EM_FAIL(err, EM_ERR_BIND, "Filter (%d): output and input differ in width",
                       node->id);
    }
    return EM_OK;
}

/* ------------------------------------------------------------ projections */

typedef struct project_state {
    rop_proj proj;
    em_row_arena scratch;
} project_state;

static em_status project_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    project_state *st = op->state;
    em_row_arena_init(&st->scratch, rop_pool(op));
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    const em_plan_field *f = em_plan_node_field(op->node, EM_FIELD_OUTPUT);
    const em_expr *const *exprs = f ? (const em_expr *const *)f->exprs : op->output;
    int n = f ? f->n_exprs : op->n_output;
    if (n != op->n_output) {
        EM_FAIL(err, EM_ERR_BIND, "Output lists %d expressions for %d attributes", n,
                op->n_output);
        return em_rop_fail(op, err);
    }
    if (em_rop_proj_init(&st->proj, op, exprs, n, op->types, err) != EM_OK)
        return em_rop_fail(op, err);
    return EM_OK;
}

static em_status project_next(em_row_op *op, const em_datum **row, em_error *err) {
    project_state *st = op->state;
    const em_datum *in = NULL;
    EM_TRY(em_row_op_next(op->children[0], &in, err));
    em_row_arena_clear(&st->scratch);
    if (em_rop_proj_eval(&st->proj, in, &st->scratch, err) != EM_OK)
        return em_rop_fail(op, err);
    *row = st->proj.out;
    return EM_OK;
}

static void project_close(em_row_op *op) {
    project_state *st = op->state;
    if (st) {
        em_rop_proj_reset(&st->proj);
        em_row_arena_reset(&st->scratch);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab PROJECT_VTAB = {
    .name = "Project", .open = project_open, .next = project_next, .close = project_close};

em_status em_rop_project_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                             em_error *err) {
    return em_rop_init(&PROJECT_VTAB, node, &child, 1, sizeof(project_state), out, err);
}

/* ------------------------------------------------------------ pass-through */

static em_status pass_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    const em_row_op *child = op->children[0];
    if (op->n_output != child->n_output) {
        EM_FAIL(err, EM_ERR_BIND, "%d output attributes over %d input columns", op->n_output,
                child->n_output);
        return em_rop_fail(op, err);
    }
    memcpy(op->types, child->types, sizeof *op->types * (size_t)op->n_output);
    return EM_OK;
}

static em_status pass_next(em_row_op *op, const em_datum **row, em_error *err) {
    return em_row_op_next(op->children[0], row, err);
}

static void pass_close(em_row_op *op) { em_rop_close_children(op); }

static const em_row_op_vtab PASS_VTAB = {
    .name = "Pass", .open = pass_open, .next = pass_next, .close = pass_close};
static const em_row_op_vtab COALESCE_VTAB = {
    .name = "Coalesce", .open = pass_open, .next = pass_next, .close = pass_close};
static const em_row_op_vtab SUBQUERY_VTAB = {
    .name = "Subquery", .open = pass_open, .next = pass_next, .close = pass_close};

em_status em_rop_pass_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                          em_error *err) {
    const em_row_op_vtab *vt = node->kind == EM_NODE_COALESCE ? &COALESCE_VTAB
                               : node->kind == EM_NODE_SUBQUERY ||
                                       node->kind == EM_NODE_REUSED_SUBQUERY
                                   ? &SUBQUERY_VTAB
                                   : &PASS_VTAB;
    EM_TRY(em_rop_init(vt, node, &child, 1, 0, out, err));
    return em_rop_inherit_output(out, child, err);
}

/* ------------------------------------------------------------ limits */

typedef struct limit_state {
    int64_t limit, offset, seen;
} limit_state;

static em_status limit_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    limit_state *st = op->state;
    int n = 0;
    const em_expr *const *args = em_rop_arguments(op->node, &n);
    if (n < 1) {
        EM_FAIL(err, EM_ERR_PARSE, "no limit in Arguments");
        return em_rop_fail(op, err);
    }
    EM_TRY(em_opu_limit_args(op->node, args, n, 0, 1, &st->limit, &st->offset, err));
    st->seen = 0;
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    memcpy(op->types, op->children[0]->types, sizeof *op->types * (size_t)op->n_output);
    return EM_OK;
}

static em_status limit_next(em_row_op *op, const em_datum **row, em_error *err) {
    limit_state *st = op->state;
    while (st->seen < st->offset + st->limit) {
        const em_datum *in = NULL;
        EM_TRY(em_row_op_next(op->children[0], &in, err));
        if (st->seen++ >= st->offset) {
            *row = in;
            return EM_OK;
        }
    }
    return EM_DONE;
}

static const em_row_op_vtab COLLECT_VTAB = {
    .name = "CollectLimit", .open = limit_open, .next = limit_next, .close = pass_close};
static const em_row_op_vtab GLOBAL_VTAB = {
    .name = "GlobalLimit", .open = limit_open, .next = limit_next, .close = pass_close};
static const em_row_op_vtab LOCAL_LIMIT_VTAB = {
    .name = "LocalLimit", .open = limit_open, .next = limit_next, .close = pass_close};

em_status em_rop_limit_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                           em_error *err) {
    const em_row_op_vtab *vt = node->kind == EM_NODE_GLOBAL_LIMIT  ? &GLOBAL_VTAB
                               : node->kind == EM_NODE_LOCAL_LIMIT ? &LOCAL_LIMIT_VTAB
                                                                   : &COLLECT_VTAB;
    EM_TRY(em_rop_init(vt, node, &child, 1, sizeof(limit_state), out, err));
    EM_TRY(em_rop_inherit_output(out, child, err));
    if ((*out)->n_output != child->n_output) {
        em_row_op_destroy(*out);
        *out = NULL;
        return EM_FAIL(err, EM_ERR_BIND, "%s (%d): output and input differ in width", vt->name,
                       node->id);
    }
    return EM_OK;
}

/* ------------------------------------------------------------ Union */

typedef struct union_state {
    int current;
} union_state;

static em_status union_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    union_state *st = op->state;
    for (int i = 0; i < op->n_children; i++) {
        EM_TRY(em_row_op_open(op->children[i], ctx, err));
        if (op->children[i]->n_output != op->n_output) {
            EM_FAIL(err, EM_ERR_BIND, "child %d has %d columns, the union %d", i,
                    op->children[i]->n_output, op->n_output);
            return em_rop_fail(op, err);
        }
    }
    if (op->n_children > 0)
        memcpy(op->types, op->children[0]->types, sizeof *op->types * (size_t)op->n_output);
    /* a column the first child gives as a bare null takes another child's type */
    for (int c = 0; c < op->n_output; c++)
        for (int i = 1; op->types[c].id == EM_TYPE_NULL && i < op->n_children; i++)
            op->types[c] = op->children[i]->types[c];
    st->current = 0;
    return EM_OK;
}

static em_status union_next(em_row_op *op, const em_datum **row, em_error *err) {
    union_state *st = op->state;
    while (st->current < op->n_children) {
        if (opu_past_subtree(op->ctx, em_rop_source_node(op->children[st->current]))) {
            st->current++;
            continue;
        }
        em_status s = em_row_op_next(op->children[st->current], row, err);
        if (s != EM_DONE)
            return s;
        st->current++;
    }
    return EM_DONE;
}

static const em_row_op_vtab UNION_VTAB = {
    .name = "Union", .open = union_open, .next = union_next, .close = pass_close};

em_status em_rop_union_create(const em_plan_node *node, em_row_op **children, int n,
                           em_row_op **out, em_error *err) {
    EM_TRY(em_rop_init(&UNION_VTAB, node, children, n, sizeof(union_state), out, err));
    return n > 0 ? em_rop_inherit_output(out, children[0], err) : EM_OK;
}

/* ------------------------------------------------------------ Expand */

typedef struct expand_state {
    int n_proj;
    rop_proj *projs;
    const em_datum *in;
    int next_proj;
    em_row_arena scratch;
} expand_state;

static em_status expand_open(em_row_op *op, em_exec_ctx *ctx, em_error *err) {
    expand_state *st = op->state;
    em_row_arena_init(&st->scratch, rop_pool(op));
    EM_TRY(em_row_op_open(op->children[0], ctx, err));
    int n = 0;
    const em_expr *const *args = em_rop_arguments(op->node, &n);
    if (n < 1 || args[0]->kind != EM_EXPR_LIST) {
        EM_FAIL(err, EM_ERR_PARSE, "no projection list in Arguments");
        return em_rop_fail(op, err);
    }
    const em_expr *lists = args[0];
    st->projs = calloc((size_t)lists->n_args + 1, sizeof *st->projs);
    if (!st->projs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    st->n_proj = lists->n_args;
    for (int p = 0; p < st->n_proj; p++) {
        const em_expr *pl = lists->args[p];
        if (pl->kind != EM_EXPR_LIST || pl->n_args != op->n_output) {
            EM_FAIL(err, EM_ERR_PARSE, "projection %d does not have %d expressions", p + 1,
                    op->n_output);
            return em_rop_fail(op, err);
        }
        if (em_rop_proj_init(&st->projs[p], op, (const em_expr *const *)pl->args, pl->n_args,
                       op->types, err) != EM_OK)
            return em_rop_fail(op, err);
    }
    st->in = NULL;
    st->next_proj = 0;
    return EM_OK;
}

static em_status expand_next(em_row_op *op, const em_datum **row, em_error *err) {
    expand_state *st = op->state;
    if (st->n_proj == 0)
        return EM_DONE;
    if (!st->in || st->next_proj == st->n_proj) {
        EM_TRY(em_row_op_next(op->children[0], &st->in, err));
        st->next_proj = 0;
        em_row_arena_clear(&st->scratch);
    }
    rop_proj *p = &st->projs[st->next_proj++];
    if (em_rop_proj_eval(p, st->in, &st->scratch, err) != EM_OK)
        return em_rop_fail(op, err);
    *row = p->out;
    return EM_OK;
}

static void expand_close(em_row_op *op) {
    expand_state *st = op->state;
    if (st) {
        for (int p = 0; st->projs && p < st->n_proj; p++)
            em_rop_proj_reset(&st->projs[p]);
        free(st->projs);
        st->projs = NULL;
        st->in = NULL;
        em_row_arena_reset(&st->scratch);
    }
    em_rop_close_children(op);
}

static const em_row_op_vtab EXPAND_VTAB = {
    .name = "Expand", .open = expand_open, .next = expand_next, .close = expand_close};

em_status em_rop_expand_create(const em_plan_node *node, em_row_op *child, em_row_op **out,
                            em_error *err) {
    return em_rop_init(&EXPAND_VTAB, node, &child, 1, sizeof(expand_state), out, err);
}
