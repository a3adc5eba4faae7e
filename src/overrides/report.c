/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two views of a tagged plan.
 *
 * The report follows spark-rapids' explain output line for line, with
 * "natively" for "on GPU": two spaces per depth, an indicator, the kind
 * (Exec, Expression, Partitioning), the Spark class in angle brackets, the
 * expression as printed, then the verdict:
 *
 *   *Exec <FilterExec> will run natively
 *     *Expression <GreaterThan> (x#1 > 5) will run natively
 *   !Exec <GenerateExec> cannot run natively because GenerateExec is not supported natively
 *     @Expression <AttributeReference> x#1 could run natively
 *
 * `*` runs natively, `!` cannot (every reason, "; "-separated), `@` could
 * but its node falls back. Pass-through nodes (WholeStageCodegen,
 * InputAdapter, ColumnarToRow, AQE wrappers) are not operators of either
 * engine and are not listed, as spark-rapids tags the plan before Spark
 * inserts them. NOT_ON_ACCELERATOR keeps the `!` and `@` lines only.
 *
 * The tree is the plan as it will run: native operators named Ember<Name>
 * with their LORE id, row operators as Spark names them and marked
 * NOT NATIVE with their reasons, and the transitions (ColumnarToRow above a
 * native node read by a row parent, RowToColumnar above a row node read by
 * a native one) as nodes of their own.
 */
#include <stdlib.h>
#include <string.h>

#include "overrides/internal.h"

static bool is_partitioning(const char *cls) {
    size_t n = strlen(cls);
    return (n >= 12 && !strcmp(cls + n - 12, "Partitioning")) || !strcmp(cls, "SinglePartition");
}

static void indent(em_strbuf *sb, int depth) {
    for (int i = 0; i < depth; i++)
        em_strbuf_appends(sb, "  ", NULL);
}

static void reasons_text(em_strbuf *sb, const em_fallback_reason *r, int n) {
    for (int i = 0; i < n; i++)
        em_strbuf_appendf(sb, NULL, "%s%s", i ? "; " : "", r[i].text);
}

/* The expression as Spark prints it; an aggregate's function line drops the
 * partial_/merge_ prefix, as the function itself has none. */
static void expr_text(em_strbuf *sb, const em_expr_decision *x) {
    char *t = NULL;
    size_t len = 0;
    if (em_expr_print(x->expr, NULL, &t, &len, NULL) != EM_OK) {
        em_strbuf_appends(sb, "?", NULL);
        return;
    }
    const char *s = t;
    if (x->expr->kind == EM_EXPR_AGG && strcmp(x->class_name, "AggregateExpression") != 0) {
        if (!strncmp(s, "partial_", 8))
            s += 8;
        else if (!strncmp(s, "merge_", 6))
            s += 6;
    }
    em_strbuf_appends(sb, s, NULL);
    free(t);
}

static void report_node(const em_exec_plan *xp, const em_plan_node *n, int depth,
                        em_explain_mode mode, em_strbuf *sb) {
    const em_node_decision *d = em_exec_plan_decision(xp, n);
    if (!d)
        return;
    if (d->engine == EM_ENGINE_PASS) {
        for (int c = 0; c < n->n_children; c++)
            report_node(xp, n->children[c], depth, mode, sb);
        return;
    }
    bool native = d->engine == EM_ENGINE_NATIVE;
    if (mode == EM_EXPLAIN_ALL || !native) {
        indent(sb, depth);
        em_strbuf_appendf(sb, NULL, "%sExec <%s> ", native ? "*" : "!", d->class_name);
        if (native)
            em_strbuf_appends(sb, "will run natively", NULL);
        else {
            em_strbuf_appends(sb, "cannot run natively because ", NULL);
            reasons_text(sb, d->reasons, d->n_reasons);
        }
        em_strbuf_appends(sb, "\n", NULL);
    }
    for (int i = 0; i < d->n_exprs; i++) {
        const em_expr_decision *x = &d->exprs[i];
        if (mode != EM_EXPLAIN_ALL && native && x->supported)
            continue;
        indent(sb, depth + 1 + x->depth);
        em_strbuf_appendf(sb, NULL, "%s%s <%s> ",
                          !x->supported ? "!"
                          : native      ? "*"
                                        : "@",
                          is_partitioning(x->class_name) ? "Partitioning" : "Expression",
                          x->class_name);
        expr_text(sb, x);
        if (!x->supported) {
            em_strbuf_appends(sb, " cannot run natively because ", NULL);
            reasons_text(sb, x->reasons, x->n_reasons);
        } else {
            em_strbuf_appends(sb, native ? " will run natively" : " could run natively", NULL);
        }
        em_strbuf_appends(sb, "\n", NULL);
    }
    if (n->kind == EM_NODE_REUSED_EXCHANGE)
        return;
    for (int c = 0; c < n->n_children; c++)
        report_node(xp, n->children[c], depth + 1, mode, sb);
}

static em_status finish(em_strbuf *sb, em_error *err) {
    if (em_strbuf_status(sb) != EM_OK)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory printing the overrides report");
    return EM_OK;
}

em_status em_exec_plan_report(const em_exec_plan *xp, em_explain_mode mode, em_strbuf *out,
                              em_error *err) {
    if (!xp)
        return EM_FAIL(err, EM_ERR_INVALID, "overrides report: no tagged plan");
    if (mode == EM_EXPLAIN_NONE)
        return EM_OK;
    const em_plan *plan = em_exec_plan_source(xp);
    report_node(xp, em_plan_exec_root(plan), 0, mode, out);
    for (int q = 0; q < em_plan_n_subqueries(plan); q++) {
        const em_plan_subquery *sq = em_plan_subquery_at(plan, q);
        if (sq && sq->root)
            report_node(xp, sq->root, 0, mode, out);
    }
    return finish(out, err);
}

/* ------------------------------------------------------------------ tree */

typedef struct tree_ctx {
    const em_exec_plan *xp;
    em_strbuf *sb;
    char prefix[4096];
} tree_ctx;

static void tree_line_start(tree_ctx *t, size_t plen, bool top, bool last) {
    em_strbuf_append(t->sb, t->prefix, plen, NULL);
    if (!top)
        em_strbuf_appends(t->sb, last ? "+- " : ":- ", NULL);
}

/* The prefix for the lines below a line printed at plen; returns its length. */
static size_t tree_descend(tree_ctx *t, size_t plen, bool top, bool last) {
    if (top || plen + 4 >= sizeof t->prefix)
        return plen;
    memcpy(t->prefix + plen, last ? "   " : ":  ", 3);
    t->prefix[plen + 3] = '\0';
    return plen + 3;
}

static void tree_node(tree_ctx *t, const em_plan_node *n, size_t plen, bool top, bool last) {
    const em_node_decision *d = em_exec_plan_decision(t->xp, n);
    if (d && d->engine == EM_ENGINE_PASS && n->n_children == 1) {
        tree_node(t, n->children[0], plen, top, last);
        return;
    }
    const char *name = n->name ? n->name : em_node_kind_name(n->kind);
    if (d && d->transition_above) {
        tree_line_start(t, plen, top, last);
        em_strbuf_appends(
            t->sb, d->engine == EM_ENGINE_NATIVE ? "ColumnarToRow\n" : "RowToColumnar\n", NULL);
        plen = tree_descend(t, plen, top, last);
        top = false;
        last = true;
    }
    tree_line_start(t, plen, top, last);
    bool native = d && d->engine == EM_ENGINE_NATIVE;
    em_strbuf_appendf(t->sb, NULL, "%s%s (%d)", native ? "Ember" : "", name, n->id);
    if (n->label_args && n->label_args[0])
        em_strbuf_appendf(t->sb, NULL, " %s", n->label_args);
    if (n->kind == EM_NODE_REUSED_EXCHANGE)
        em_strbuf_appendf(t->sb, NULL, " [reuses %d]", n->reuses_id);
    if (native && d->lore_id >= 0)
        em_strbuf_appendf(t->sb, NULL, " [loreId=%d]", d->lore_id);
    if (d && d->engine == EM_ENGINE_ROW) {
        em_strbuf_appends(t->sb, "  NOT NATIVE: ", NULL);
        reasons_text(t->sb, d->reasons, d->n_reasons);
    }
    em_strbuf_appends(t->sb, "\n", NULL);
    size_t np = tree_descend(t, plen, top, last);
    for (int c = 0; c < n->n_children; c++)
        tree_node(t, n->children[c], np, false, c == n->n_children - 1);
    t->prefix[plen] = '\0';
}

em_status em_exec_plan_print_tree(const em_exec_plan *xp, em_strbuf *out, em_error *err) {
    if (!xp)
        return EM_FAIL(err, EM_ERR_INVALID, "overrides tree: no tagged plan");
    tree_ctx *t = calloc(1, sizeof *t);
    if (!t)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory printing the plan tree");
    t->xp = xp;
    t->sb = out;
    const em_plan *plan = em_exec_plan_source(xp);
    tree_node(t, em_plan_exec_root(plan), 0, true, true);
    for (int q = 0; q < em_plan_n_subqueries(plan); q++) {
        const em_plan_subquery *sq = em_plan_subquery_at(plan, q);
        if (!sq || !sq->root)
            continue;
        em_strbuf_appendf(out, NULL, "\nSubquery:%d (hosted by operator %d)\n", sq->index,
                          sq->host_id);
        t->prefix[0] = '\0';
        tree_node(t, sq->root, 0, true, true);
    }
    free(t);
    return finish(out, err);
}
