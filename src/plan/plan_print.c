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
            plan_buf_puts(b, sep);
        plan_print_expr(b, items[i], shim);
    }
}

static void print_id(plan_buf *b, const char *name, int64_t id, bool long_suffix) {
    plan_buf_puts(b, name);
    plan_buf_printf(b, "#%lld%s", (long long)id, long_suffix ? "L" : "");
}

void plan_print_expr(plan_buf *b, const em_expr *e, const em_shim *shim) {
    const char *sep = e->compact ? "," : ", ";
    switch (e->kind) {
    case EM_EXPR_ATTR:
        print_id(b, e->name, e->id, e->long_suffix);
        break;
    case EM_EXPR_LITERAL:
    case EM_EXPR_RAW:
    case EM_EXPR_TYPE:
        plan_buf_puts(b, e->text);
        break;
    case EM_EXPR_CALL:
        plan_buf_puts(b, e->name);
        plan_buf_putc(b, '(');
        print_list(b, e->args, e->n_args, sep, shim);
        plan_buf_putc(b, ')');
        break;
    case EM_EXPR_AGG:
        plan_buf_puts(b, e->mode == EM_AGG_PARTIAL         ? "partial_"
                         : e->mode == EM_AGG_PARTIAL_MERGE ? "merge_"
                                                           : "");
        plan_buf_puts(b, e->name);
        plan_buf_puts(b, e->distinct ? "(distinct " : "(");
        print_list(b, e->args, e->n_args, sep, shim);
        plan_buf_putc(b, ')');
        break;
    case EM_EXPR_BINARY:
        plan_buf_putc(b, '(');
        plan_print_expr(b, e->args[0], shim);
        plan_buf_putc(b, ' ');
        plan_buf_puts(b, em_binop_symbol(e->op));
        plan_buf_putc(b, ' ');
        plan_print_expr(b, e->args[1], shim);
        plan_buf_putc(b, ')');
        break;
    case EM_EXPR_NOT:
        plan_buf_puts(b, "NOT ");
        plan_print_expr(b, e->args[0], shim);
        break;
    case EM_EXPR_NEGATE:
        plan_buf_putc(b, '-');
        plan_print_expr(b, e->args[0], shim);
        break;
    case EM_EXPR_IN:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, " IN (");
        print_list(b, e->args + 1, e->n_args - 1, sep, shim);
        plan_buf_putc(b, ')');
        break;
    case EM_EXPR_INSET:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, " INSET ");
        print_list(b, e->args + 1, e->n_args - 1, ", ", shim);
        break;
    case EM_EXPR_IN_SUBQUERY:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, " IN ");
        plan_buf_puts(b, e->name);
        break;
    case EM_EXPR_LIKE:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, e->rlike ? " RLIKE " : " LIKE ");
        plan_print_expr(b, e->args[1], shim);
        break;
    case EM_EXPR_CASE: {
        plan_buf_puts(b, "CASE");
        int pairs = (e->n_args - (e->has_else ? 1 : 0)) / 2;
        for (int i = 0; i < pairs; i++) {
            plan_buf_puts(b, " WHEN ");
            plan_print_expr(b, e->args[2 * i], shim);
            plan_buf_puts(b, " THEN ");
            plan_print_expr(b, e->args[2 * i + 1], shim);
        }
        if (e->has_else) {
            plan_buf_puts(b, " ELSE ");
            plan_print_expr(b, e->args[e->n_args - 1], shim);
        }
        plan_buf_puts(b, " END");
        break;
    }
    case EM_EXPR_CAST:
        plan_buf_puts(b, "cast(");
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, " as ");
        plan_buf_puts(b, e->text);
        plan_buf_putc(b, ')');
        break;
    case EM_EXPR_ALIAS:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, " AS ");
        print_id(b, e->name, e->id, e->long_suffix);
        break;
    case EM_EXPR_SORT_ORDER:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_puts(b, e->ascending ? " ASC" : " DESC");
        plan_buf_puts(b, e->nulls_first ? " NULLS FIRST" : " NULLS LAST");
        break;
    case EM_EXPR_BOUND_REF:
        plan_buf_printf(b, "input[%lld, ", (long long)e->id);
        plan_buf_puts(b, e->text);
        plan_buf_puts(b, e->nullable_flag ? ", true]" : ", false]");
        break;
    case EM_EXPR_SCALAR_SUBQUERY:
        plan_buf_puts(b, e->reused ? "ReusedSubquery Subquery " : "Subquery ");
        plan_buf_puts(b, e->name);
        plan_buf_printf(b, ", [id=#%lld]", (long long)e->plan_id);
        break;
    case EM_EXPR_FIELD:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_putc(b, '.');
        plan_buf_puts(b, e->name);
        break;
    case EM_EXPR_LIST:
        plan_buf_putc(b, '[');
        print_list(b, e->args, e->n_args, sep, shim);
        plan_buf_putc(b, ']');
        break;
    case EM_EXPR_WINDOW:
        plan_print_expr(b, e->args[0], shim);
        plan_buf_putc(b, ' ');
        plan_print_expr(b, e->args[1], shim);
        break;
    case EM_EXPR_PLAN_ID: {
        char tmp[48];
        em_shim_format_exchange_id(shim, e->plan_id, tmp, sizeof tmp);
        plan_buf_puts(b, tmp);
        break;
    }
    default:
        plan_buf_puts(b, "?");
        break;
    }
}

static void print_tree(plan_buf *b, const em_plan_node *node, plan_buf *prefix, bool last,
                       int depth) {
    if (node->kind == EM_NODE_AQE_SECTION) {
        /* AdaptiveSparkPlan's sections: "   " per level, then each plan as a fresh tree
         * indented one level deeper (AdaptiveSparkPlanExec.generateTreeStringWithHeader) */
        for (int i = 1; i < depth; i++)
            plan_buf_puts(b, "   ");
        plan_buf_puts(b, "+- == ");
        plan_buf_puts(b, node->name);
        plan_buf_puts(b, " ==\n");
        plan_buf indent = {0};
        for (int i = 0; i < depth; i++)
            plan_buf_puts(&indent, "   ");
        for (int i = 0; i < node->n_children; i++)
            print_tree(b, node->children[i], &indent, true, 0);
        if (indent.failed)
            b->failed = true;
        free(indent.data);
        return;
    }
    plan_buf_put(b, prefix->data ? prefix->data : "", prefix->len);
    if (depth > 0)
        plan_buf_puts(b, last ? "+- " : ":- ");
    if (node->whole_stage)
        plan_buf_puts(b, "* ");
    plan_buf_puts(b, node->name);
    if (node->label_args) {
        plan_buf_putc(b, ' ');
        plan_buf_puts(b, node->label_args);
    }
    plan_buf_printf(b, " (%d)", node->id);
    if (node->label_suffix)
        plan_buf_puts(b, node->label_suffix);
    plan_buf_putc(b, '\n');
    size_t keep = prefix->len;
    if (depth > 0)
        plan_buf_puts(prefix, last ? "   " : ":  ");
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
        plan_buf_puts(b, f->label);
        if (f->counted)
            plan_buf_printf(b, " [%d]", f->n_exprs);
        plan_buf_puts(b, ": [");
        print_list(b, f->exprs, f->n_exprs, ", ", shim);
        plan_buf_puts(b, "]\n");
        break;
    case EM_FIELD_CONDITION:
        plan_buf_puts(b, "Condition : ");
        plan_print_expr(b, f->exprs[0], shim);
        plan_buf_putc(b, '\n');
        break;
    case EM_FIELD_JOIN_CONDITION:
        if (node->join_type_text && em_shim_prints_join_type(shim)) {
            plan_buf_puts(b, "Join type: ");
            plan_buf_puts(b, node->join_type_text);
            plan_buf_putc(b, '\n');
        }
        plan_buf_puts(b, "Join condition: ");
        if (f->n_exprs)
            plan_print_expr(b, f->exprs[0], shim);
        else
            plan_buf_puts(b, "None");
        plan_buf_putc(b, '\n');
        break;
    case EM_FIELD_ARGUMENTS:
        plan_buf_puts(b, "Arguments: ");
        print_list(b, f->exprs, f->n_exprs, ", ", shim);
        plan_buf_putc(b, '\n');
        break;
    case EM_FIELD_READ_SCHEMA:
        plan_buf_puts(b, "ReadSchema: struct<");
        for (int i = 0; i < f->n_schema; i++) {
            if (i)
                plan_buf_putc(b, ',');
            plan_buf_puts(b, f->schema[i].name);
            plan_buf_putc(b, ':');
            plan_buf_puts(b, f->schema[i].type_text);
        }
        plan_buf_puts(b, ">\n");
        break;
    case EM_FIELD_BATCHED:
        plan_buf_puts(b, "Batched: ");
        plan_buf_puts(b, f->text);
        plan_buf_putc(b, '\n');
        break;
    default: /* LOCATION, OTHER: the line as printed */
        plan_buf_puts(b, f->text);
        plan_buf_putc(b, '\n');
        break;
    }
}

static void print_block(plan_buf *b, const em_plan_node *node, const em_shim *shim) {
    plan_buf_printf(b, "\n(%d) ", node->id);
    plan_buf_puts(b, node->name);
    if (node->header_args) {
        plan_buf_putc(b, ' ');
        plan_buf_puts(b, node->header_args);
    }
    if (node->reuses_id >= 0)
        plan_buf_printf(b, " [Reuses operator id: %d]", node->reuses_id);
    if (node->codegen_id >= 0)
        plan_buf_printf(b, " [codegen id : %d]", node->codegen_id);
    plan_buf_putc(b, '\n');
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
    plan_buf_putc(b, '\n');
    free(prefix.data);
    if (prefix.failed)
        b->failed = true;
    memset(mark, 0, (size_t)(plan->max_id + 1) * sizeof *mark);
    collect_ids(root, mark, plan->max_id);
    for (int id = 1; id <= plan->max_id; id++)
        if (mark[id])
            print_block(b, plan->by_id[id], shim);
    plan_buf_putc(b, '\n');
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
    plan_buf_puts(&b, "== Physical Plan ==\n");
    print_section(&b, plan, plan->root, shim, mark);
    if (plan->n_subqueries) {
        plan_buf_puts(&b, "===== Subqueries =====\n\n");
        for (int i = 0; i < plan->n_subqueries; i++) {
            const em_plan_subquery *sq = &plan->subqueries[i];
            plan_buf_printf(&b,
                            "Subquery:%d Hosting operator id = %d Hosting Expression = ", sq->index,
                            sq->host_id);
            plan_print_expr(&b, sq->expr, shim);
            plan_buf_putc(&b, '\n');
            if (sq->root)
                print_section(&b, plan, sq->root, shim, mark);
            plan_buf_putc(&b, '\n');
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
    plan_print_expr(&b, e, shim);
    plan_buf_putc(&b, '\0');
    if (b.failed) {
        free(b.data);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory printing an expression");
    }
    *out = b.data;
    if (out_len)
        *out_len = b.len - 1;
    return EM_OK;
}
