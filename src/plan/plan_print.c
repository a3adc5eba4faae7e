/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_plan -> EXPLAIN FORMATTED text, in a shim's dialect.
 *
 * The layout follows Spark's ExplainUtils.processPlan: the header line, the
 * section: the tree (each line: ancestor cells ":  " while that ancestor has
 * later children, else "   "; then ":- " or "+- "; "* " inside whole-stage
 * codegen; label; " (id)"), a blank line, every detail block preceded by a
 * blank line, and a final blank line. With subqueries, "===== Subqueries
 * =====" and a blank line follow; each entry is its "Subquery:" line, its
 * section when it has a body, then a blank line.
 *
 * Version-dependent forms are asked from the shim: the exchange-id argument
 * and the "Join type:" field. Everything else is printed from the model as
 * parsed, so printing with the plan's own shim reproduces the input.
 */
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

static void print_list(plan_buf *b, em_expr *const *items, int n, const char *sep,
                       const em_shim *shim) {
    for (int i = 0; i < n; i++) {
        if (i)
            em_plan_buf_puts(b, sep);
        em_plan_print_expr(b, items[i], shim);
    }
}

static void print_id(plan_buf *b, const char *name, int64_t id, bool long_suffix) {
    em_plan_buf_puts(b, name);
    em_plan_buf_printf(b, "#%lld%s", (long long)id, long_suffix ? "L" : "");
}

void em_plan_print_expr(plan_buf *b, const em_expr *e, const em_shim *shim) {
    const char *sep = e->compact ? "," : ", ";
    switch (e->kind) {
    case EM_EXPR_ATTR:
        print_id(b, e->name, e->id, e->long_suffix);
        break;
    case EM_EXPR_LITERAL:
    case EM_EXPR_RAW:
    case EM_EXPR_TYPE:
        em_plan_buf_puts(b, e->text);
        break;
    case EM_EXPR_CALL:
        em_plan_buf_puts(b, e->name);
        em_plan_buf_putc(b, '(');
        print_list(b, e->args, e->n_args, sep, shim);
        em_plan_buf_putc(b, ')');
        break;
    case EM_EXPR_AGG:
        em_plan_buf_puts(b, e->mode == EM_AGG_PARTIAL         ? "partial_"
                         : e->mode == EM_AGG_PARTIAL_MERGE ? "merge_"
                                                           : "");
        em_plan_buf_puts(b, e->name);
        em_plan_buf_puts(b, e->distinct ? "(distinct " : "(");
        print_list(b, e->args, e->n_args, sep, shim);
        em_plan_buf_putc(b, ')');
        break;
    case EM_EXPR_BINARY:
        em_plan_buf_putc(b, '(');
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_putc(b, ' ');
        em_plan_buf_puts(b, em_binop_symbol(e->op));
        em_plan_buf_putc(b, ' ');
        em_plan_print_expr(b, e->args[1], shim);
        em_plan_buf_putc(b, ')');
        break;
    case EM_EXPR_NOT:
        em_plan_buf_puts(b, "NOT ");
        em_plan_print_expr(b, e->args[0], shim);
        break;
    case EM_EXPR_NEGATE:
        em_plan_buf_putc(b, '-');
        em_plan_print_expr(b, e->args[0], shim);
        break;
    case EM_EXPR_IN:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, " IN (");
        print_list(b, e->args + 1, e->n_args - 1, sep, shim);
        em_plan_buf_putc(b, ')');
        break;
    case EM_EXPR_INSET:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, " INSET ");
        print_list(b, e->args + 1, e->n_args - 1, ", ", shim);
        break;
    case EM_EXPR_IN_SUBQUERY:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, " IN ");
        em_plan_buf_puts(b, e->name);
        break;
    case EM_EXPR_LIKE:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, e->rlike ? " RLIKE " : " LIKE ");
        em_plan_print_expr(b, e->args[1], shim);
        break;
    case EM_EXPR_CASE: {
        em_plan_buf_puts(b, "CASE");
        int pairs = (e->n_args - (e->has_else ? 1 : 0)) / 2;
        for (int i = 0; i < pairs; i++) {
            em_plan_buf_puts(b, " WHEN ");
            em_plan_print_expr(b, e->args[2 * i], shim);
            em_plan_buf_puts(b, " THEN ");
            em_plan_print_expr(b, e->args[2 * i + 1], shim);
        }
        if (e->has_else) {
            em_plan_buf_puts(b, " ELSE ");
            em_plan_print_expr(b, e->args[e->n_args - 1], shim);
        }
        em_plan_buf_puts(b, " END");
        break;
    }
    case EM_EXPR_CAST:
        em_plan_buf_puts(b, "cast(");
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, " as ");
        em_plan_buf_puts(b, e->text);
        em_plan_buf_putc(b, ')');
        break;
    case EM_EXPR_ALIAS:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, " AS ");
        print_id(b, e->name, e->id, e->long_suffix);
        break;
    case EM_EXPR_SORT_ORDER:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_puts(b, e->ascending ? " ASC" : " DESC");
        em_plan_buf_puts(b, e->nulls_first ? " NULLS FIRST" : " NULLS LAST");
        break;
    case EM_EXPR_BOUND_REF:
        em_plan_buf_printf(b, "input[%lld, ", (long long)e->id);
        em_plan_buf_puts(b, e->text);
        em_plan_buf_puts(b, e->nullable_flag ? ", true]" : ", false]");
        break;
    case EM_EXPR_SCALAR_SUBQUERY:
        em_plan_buf_puts(b, e->reused ? "ReusedSubquery Subquery " : "Subquery ");
        em_plan_buf_puts(b, e->name);
        em_plan_buf_printf(b, ", [id=#%lld]", (long long)e->plan_id);
        break;
    case EM_EXPR_FIELD:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_putc(b, '.');
        em_plan_buf_puts(b, e->name);
        break;
    case EM_EXPR_LIST:
        em_plan_buf_putc(b, '[');
        print_list(b, e->args, e->n_args, sep, shim);
        em_plan_buf_putc(b, ']');
        break;
    case EM_EXPR_WINDOW:
        em_plan_print_expr(b, e->args[0], shim);
        em_plan_buf_putc(b, ' ');
        em_plan_print_expr(b, e->args[1], shim);
        break;
    case EM_EXPR_PLAN_ID: {
        char tmp[48];
        em_shim_format_exchange_id(shim, e->plan_id, tmp, sizeof tmp);
        em_plan_buf_puts(b, tmp);
        break;
    }
    default:
        em_plan_buf_puts(b, "?");
        break;
    }
}

static void print_tree(plan_buf *b, const em_plan_node *node, plan_buf *prefix, bool last,
                       int depth) {
    if (node->kind == EM_NODE_AQE_SECTION) {
        /* AdaptiveSparkPlan's sections: "   " per level, then each plan as a fresh tree
         * indented one level deeper (AdaptiveSparkPlanExec.generateTreeStringWithHeader) */
        for (int i = 1; i < depth; i++)
            em_plan_buf_puts(b, "   ");
        em_plan_buf_puts(b, "+- == ");
        em_plan_buf_puts(b, node->name);
        em_plan_buf_puts(b, " ==\n");
        plan_buf indent = {0};
        for (int i = 0; i < depth; i++)
            em_plan_buf_puts(&indent, "   ");
        for (int i = 0; i < node->n_children; i++)
            print_tree(b, node->children[i], &indent, true, 0);
        if (indent.failed)
            b->failed = true;
        free(indent.data);
        return;
    }
    em_plan_buf_put(b, prefix->data ? prefix->data : "", prefix->len);
    if (depth > 0)
        em_plan_buf_puts(b, last ? "+- " : ":- ");
    if (node->whole_stage)
        em_plan_buf_puts(b, "* ");
    em_plan_buf_puts(b, node->name);
    if (node->label_args) {
        em_plan_buf_putc(b, ' ');
        em_plan_buf_puts(b, node->label_args);
    }
    em_plan_buf_printf(b, " (%d)", node->id);
    if (node->label_suffix)
        em_plan_buf_puts(b, node->label_suffix);
    em_plan_buf_putc(b, '\n');
    size_t keep = prefix->len;
    if (depth > 0)
        em_plan_buf_puts(prefix, last ? "   " : ":  ");
    for (int i = 0; i < node->n_children; i++)
        print_tree(b, node->children[i], prefix, i + 1 == node->n_children, depth + 1);
    prefix->len = keep;
}

static void print_field(plan_buf *b, const em_plan_node *node, const em_plan_field *f,
                        const em_shim *shim) {
    switch (f->kind) {
    case EM_FIELD_OUTPUT:
    case EM_FIELD_INPUT:
    case EM_FIELD_KEYS:
    case EM_FIELD_FUNCTIONS:
    case EM_FIELD_AGG_ATTRS:
    case EM_FIELD_RESULTS:
    case EM_FIELD_LEFT_KEYS:
    case EM_FIELD_RIGHT_KEYS:
    case EM_FIELD_PUSHED_FILTERS:
    case EM_FIELD_PARTITION_FILTERS:
    case EM_FIELD_DATA_FILTERS:
        em_plan_buf_puts(b, f->label);
        if (f->counted)
            em_plan_buf_printf(b, " [%d]", f->n_exprs);
        em_plan_buf_puts(b, ": [");
        print_list(b, f->exprs, f->n_exprs, ", ", shim);
        em_plan_buf_puts(b, "]\n");
        break;
    case EM_FIELD_CONDITION:
        em_plan_buf_puts(b, "Condition : ");
        em_plan_print_expr(b, f->exprs[0], shim);
        em_plan_buf_putc(b, '\n');
        break;
    case EM_FIELD_JOIN_CONDITION:
        if (node->join_type_text && em_shim_prints_join_type(shim)) {
            em_plan_buf_puts(b, "Join type: ");
            em_plan_buf_puts(b, node->join_type_text);
            em_plan_buf_putc(b, '\n');
        }
        em_plan_buf_puts(b, "Join condition: ");
        if (f->n_exprs)
            em_plan_print_expr(b, f->exprs[0], shim);
        else
            em_plan_buf_puts(b, "None");
        em_plan_buf_putc(b, '\n');
        break;
    case EM_FIELD_ARGUMENTS:
        em_plan_buf_puts(b, "Arguments: ");
        print_list(b, f->exprs, f->n_exprs, ", ", shim);
        em_plan_buf_putc(b, '\n');
        break;
    case EM_FIELD_READ_SCHEMA:
        em_plan_buf_puts(b, "ReadSchema: struct<");
        for (int i = 0; i < f->n_schema; i++) {
            if (i)
                em_plan_buf_putc(b, ',');
            em_plan_buf_puts(b, f->schema[i].name);
            em_plan_buf_putc(b, ':');
            em_plan_buf_puts(b, f->schema[i].type_text);
        }
        em_plan_buf_puts(b, ">\n");
        break;
    case EM_FIELD_BATCHED:
        em_plan_buf_puts(b, "Batched: ");
        em_plan_buf_puts(b, f->text);
        em_plan_buf_putc(b, '\n');
        break;
    default: /* LOCATION, OTHER: the line as printed */
        em_plan_buf_puts(b, f->text);
        em_plan_buf_putc(b, '\n');
        break;
    }
}

static void print_block(plan_buf *b, const em_plan_node *node, const em_shim *shim) {
    em_plan_buf_printf(b, "\n(%d) ", node->id);
    em_plan_buf_puts(b, node->name);
    if (node->header_args) {
        em_plan_buf_putc(b, ' ');
        em_plan_buf_puts(b, node->header_args);
    }
    if (node->reuses_id >= 0)
        em_plan_buf_printf(b, " [Reuses operator id: %d]", node->reuses_id);
    if (node->codegen_id >= 0)
        em_plan_buf_printf(b, " [codegen id : %d]", node->codegen_id);
    em_plan_buf_putc(b, '\n');
    for (int i = 0; i < node->n_fields; i++)
        print_field(b, node, &node->fields[i], shim);
}

/* Collects the ids of a tree (blocks print in id order). */
static void collect_ids(const em_plan_node *node, bool *mark, int max_id) {
    if (node->id >= 1 && node->id <= max_id)
        mark[node->id] = true;
    for (int i = 0; i < node->n_children; i++)
        collect_ids(node->children[i], mark, max_id);
}

static void print_section(plan_buf *b, const em_plan *plan, const em_plan_node *root,
                          const em_shim *shim, bool *mark) {
    plan_buf prefix = {0};
    print_tree(b, root, &prefix, true, 0);
    em_plan_buf_putc(b, '\n');
    free(prefix.data);
    if (prefix.failed)
        b->failed = true;
    memset(mark, 0, (size_t)(plan->max_id + 1) * sizeof *mark);
    collect_ids(root, mark, plan->max_id);
    for (int id = 1; id <= plan->max_id; id++)
        if (mark[id])
            print_block(b, plan->by_id[id], shim);
    em_plan_buf_putc(b, '\n');
}

em_status em_plan_print(const em_plan *plan, const em_shim *shim, char **out, size_t *out_len,
                        em_error *err) {
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!shim)
        shim = plan->shim;
    bool *mark = calloc((size_t)plan->max_id + 1, sizeof *mark);
    if (!mark)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory printing the plan");
    plan_buf b = {0};
    em_plan_buf_puts(&b, "== Physical Plan ==\n");
    print_section(&b, plan, plan->root, shim, mark);
    if (plan->n_subqueries) {
        em_plan_buf_puts(&b, "===== Subqueries =====\n\n");
        for (int i = 0; i < plan->n_subqueries; i++) {
            const em_plan_subquery *sq = &plan->subqueries[i];
            em_plan_buf_printf(&b,
                            "Subquery:%d Hosting operator id = %d Hosting Expression = ", sq->index,
                            sq->host_id);
            em_plan_print_expr(&b, sq->expr, shim);
            em_plan_buf_putc(&b, '\n');
            if (sq->root)
                print_section(&b, plan, sq->root, shim, mark);
            em_plan_buf_putc(&b, '\n');
        }
    }
    free(mark);
    if (b.failed) {
        free(b.data);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory printing the plan");
    }
    *out = b.data;
    if (out_len)
        *out_len = b.len;
    return EM_OK;
}

em_status em_expr_print(const em_expr *e, const em_shim *shim, char **out, size_t *out_len,
                        em_error *err) {
    *out = NULL;
    plan_buf b = {0};
    if (!shim)
        shim = &em_shim_spark41;
    em_plan_print_expr(&b, e, shim);
    em_plan_buf_putc(&b, '\0');
    if (b.failed) {
        free(b.data);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory printing an expression");
    }
    *out = b.data;
    if (out_len)
        *out_len = b.len - 1;
    return EM_OK;
}
