/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared operator helpers (see op_util.h). Sharing takes buffer references
 * only; the selection vector is the one thing copied, because parents may
 * narrow it in place.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"

em_status em_opu_shell_create(const em_schema *schema, em_pool *pool, em_batch **out, em_error *err) {
    EM_TRY(em_batch_create(schema, 0, pool, out, err));
    em_opu_shell_release(*out);
    return EM_OK;
}

void em_opu_shell_release(em_batch *shell) {
    for (int i = 0; i < shell->n_cols; i++)
        em_column_reset(&shell->cols[i]);
    shell->n_rows = 0;
    em_batch_sel_clear(shell);
}

em_status em_opu_set_sel(em_batch *b, const int32_t *sel, int64_t n, em_error *err) {
    if (!sel) {
        em_batch_sel_clear(b);
        return EM_OK;
    }
    EM_TRY(em_batch_sel_reserve(b, n > 0 ? n : 1, err));
    if (n > 0)
        memcpy(b->sel, sel, sizeof *sel * (size_t)n);
    b->n_sel = n;
    return EM_OK;
}

em_status em_opu_shell_share(em_batch *shell, const em_batch *src, const int *map, em_error *err) {
    em_opu_shell_release(shell);
    for (int i = 0; i < shell->n_cols; i++)
        em_column_share(&shell->cols[i], &src->cols[map ? map[i] : i]);
    shell->n_rows = src->n_rows;
    return em_opu_set_sel(shell, src->sel, src->n_sel, err);
}

int em_opu_attr_index(const em_expr *const *attrs, int n, int64_t id) {
    for (int i = 0; i < n; i++)
        if (opu_expr_id(attrs[i]) == id)
            return i;
    return -1;
}

int em_opu_passthrough_index(const em_expr *e, const em_expr *const *attrs, int n) {
    if (e->kind == EM_EXPR_ALIAS && e->n_args == 1)
        e = e->args[0];
    if (e->kind != EM_EXPR_ATTR)
        return -1;
    return em_opu_attr_index(attrs, n, e->id);
}

em_status em_opu_gather(const em_schema *schema, const em_column *cols, const int32_t *idx, int64_t n,
                     em_pool *pool, em_batch **out, em_error *err) {
    em_batch *b = NULL;
    EM_TRY(em_opu_shell_create(schema, pool, &b, err));
    for (int i = 0; i < b->n_cols; i++) {
        em_status s = em_column_take(&cols[i], idx, n, pool, &b->cols[i], err);
        if (s != EM_OK) {
            em_batch_destroy(b);
            return s;
        }
    }
    b->n_rows = n;
    *out = b;
    return EM_OK;
}

const em_expr *const *em_opu_arguments(const em_plan_node *node, int *n) {
    const em_plan_field *f = em_plan_node_field(node, EM_FIELD_ARGUMENTS);
    *n = f ? f->n_exprs : 0;
    return f ? (const em_expr *const *)f->exprs : NULL;
}

em_status em_opu_int_arg(const em_plan_node *node, const em_expr *e, const char *what, int64_t *out,
                      em_error *err) {
    const char *t = e && (e->kind == EM_EXPR_LITERAL || e->kind == EM_EXPR_RAW) ? e->text : NULL;
    char *end = NULL;
    long long v = t ? strtoll(t, &end, 10) : -1;
    if (!t || end == t || (*end && strcmp(end, "L") != 0) || v < 0)
        return EM_FAIL(err, EM_ERR_PARSE,
                       "%s (%d): expected a non-negative integer %s in Arguments",
                       node->name ? node->name : "operator", node->id, what);
    *out = v;
    return EM_OK;
}

em_status em_opu_limit_args(const em_plan_node *node, const em_expr *const *args, int n,
                         int limit_at, int offset_at, int64_t *limit, int64_t *offset,
                         em_error *err) {
    *offset = 0;
    if (offset_at >= 0 && n > offset_at)
        EM_TRY(em_opu_int_arg(node, args[offset_at], "offset", offset, err));
    const em_expr *e = limit_at < n ? args[limit_at] : NULL;
    if (e && (e->kind == EM_EXPR_LITERAL || e->kind == EM_EXPR_RAW) && e->text &&
        (!strcmp(e->text, "-1") || !strcmp(e->text, "-1L"))) {
        *limit = INT64_MAX - *offset;
        return EM_OK;
    }
    return em_opu_int_arg(node, e, "limit", limit, err);
}

em_status em_opu_inherit_output(em_op **op, const em_op *child, em_error *err) {
    if ((*op)->n_output > 0 || child->n_output == 0)
        return EM_OK;
    em_status s =
        em_op_set_output(*op, (const em_expr *const *)child->output, child->n_output, err);
    if (s != EM_OK) {
        em_op_destroy(*op);
        *op = NULL;
    }
    return s;
}

em_status em_opu_null_column(em_column *c, em_type t, int64_t n, em_pool *pool, em_error *err) {
    EM_TRY(em_column_init(c, t, n, pool, err));
    for (int64_t i = 0; i < n; i++)
        EM_TRY(em_column_append_null(c, err));
    return EM_OK;
}

em_status em_opu_proj_init(opu_proj *p, const em_expr *const *exprs, int n,
                        const em_expr *const *attrs, int n_attrs,
                        const em_expr_compile_options *opts, em_error *err) {
    memset(p, 0, sizeof *p);
    p->pass = calloc((size_t)n + 1, sizeof *p->pass);
    p->progs = calloc((size_t)n + 1, sizeof *p->progs);
    if (!p->pass || !p->progs)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory compiling a projection");
    p->n = n;
    for (int i = 0; i < n; i++) {
        const em_expr *e = exprs[i];
        p->pass[i] = em_opu_passthrough_index(e, attrs, n_attrs);
        if (p->pass[i] >= 0)
            continue;
        const em_expr *body = e->kind == EM_EXPR_ALIAS && e->n_args == 1 ? e->args[0] : e;
        if (body->kind == EM_EXPR_LITERAL && body->text && strcmp(body->text, "null") == 0) {
            p->pass[i] = -2;
            continue;
        }
        EM_TRY(em_expr_compile(body, attrs, n_attrs, opts, &p->progs[i], err));
    }
    return EM_OK;
}

em_status em_opu_proj_eval(const opu_proj *p, const em_batch *in, em_batch *shell, em_pool *pool,
                        em_error *err) {
    em_opu_shell_release(shell);
    for (int i = 0; i < p->n && i < shell->n_cols; i++) {
        if (p->pass[i] >= 0)
            em_column_share(&shell->cols[i], &in->cols[p->pass[i]]);
        else if (p->pass[i] == -2)
            EM_TRY(em_opu_null_column(&shell->cols[i], shell->schema.fields[i].type, in->n_rows, pool,
                                   err));
        else
            EM_TRY(em_expr_eval(p->progs[i], in, pool, &shell->cols[i], err));
    }
    shell->n_rows = in->n_rows;
    return em_opu_set_sel(shell, in->sel, in->n_sel, err);
}

void em_opu_proj_reset(opu_proj *p) {
    for (int i = 0; p->progs && i < p->n; i++)
        em_expr_prog_destroy(p->progs[i]);
    free(p->progs);
    free(p->pass);
    memset(p, 0, sizeof *p);
}

em_status em_opu_next_range(const em_schema *schema, const em_column *cols, int64_t total,
                         int64_t *next, em_pool *pool, em_batch **chunk, em_error *err) {
    if (*next >= total)
        return EM_DONE;
    int64_t n = total - *next < EM_BATCH_CAP ? total - *next : EM_BATCH_CAP;
    int32_t idx[EM_BATCH_CAP];
    for (int64_t i = 0; i < n; i++)
        idx[i] = (int32_t)(*next + i);
    em_batch_destroy(*chunk);
    *chunk = NULL;
    EM_TRY(em_opu_gather(schema, cols, idx, n, pool, chunk, err));
    *next += n;
    return EM_OK;
}
