/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/supported_ops.md, rendered from the support rules (rules.c) in the
 * style of spark-rapids' supported_ops page: one row per exec, two per
 * expression (its operands and its result), one column per Spark type,
 * S (supported), PS (partially: see the notes) or NS (not supported
 * natively: the row engine runs it). The rendering depends on the rules
 * alone, so test_overrides compares the committed page with it.
 */
#include <stdio.h>
#include <string.h>

#include "expr/catalog.h"
#include "overrides/internal.h"

static const em_type_id doc_types[] = {
    EM_TYPE_BOOLEAN, EM_TYPE_BYTE,    EM_TYPE_SHORT,  EM_TYPE_INT,       EM_TYPE_LONG,
    EM_TYPE_FLOAT,   EM_TYPE_DOUBLE,  EM_TYPE_DATE,   EM_TYPE_TIMESTAMP, EM_TYPE_TIMESTAMP_NTZ,
    EM_TYPE_STRING,  EM_TYPE_DECIMAL, EM_TYPE_BINARY, EM_TYPE_NULL,
};
#define N_DOC_TYPES (sizeof doc_types / sizeof doc_types[0])

static const char *type_header(em_type_id t) {
    switch (t) {
    case EM_TYPE_BOOLEAN:
        return "BOOLEAN";
    case EM_TYPE_BYTE:
        return "BYTE";
    case EM_TYPE_SHORT:
        return "SHORT";
    case EM_TYPE_INT:
        return "INT";
    case EM_TYPE_LONG:
        return "LONG";
    case EM_TYPE_FLOAT:
        return "FLOAT";
    case EM_TYPE_DOUBLE:
        return "DOUBLE";
    case EM_TYPE_DATE:
        return "DATE";
    case EM_TYPE_TIMESTAMP:
        return "TIMESTAMP";
    case EM_TYPE_TIMESTAMP_NTZ:
        return "TIMESTAMP_NTZ";
    case EM_TYPE_STRING:
        return "STRING";
    case EM_TYPE_DECIMAL:
        return "DECIMAL";
    case EM_TYPE_BINARY:
        return "BINARY";
    default:
        return "NULL";
    }
}

/* first: the leading columns' titles, n_lead of them. */
static void header(em_strbuf *sb, const char *first, int n_lead) {
    em_strbuf_appendf(sb, NULL, "| %s |", first);
    for (size_t i = 0; i < N_DOC_TYPES; i++)
        em_strbuf_appendf(sb, NULL, " %s |", type_header(doc_types[i]));
    em_strbuf_appends(sb, "\n|", NULL);
    for (int i = 0; i < n_lead; i++)
        em_strbuf_appends(sb, "---|", NULL);
    for (size_t i = 0; i < N_DOC_TYPES; i++)
        em_strbuf_appends(sb, "---|", NULL);
    em_strbuf_appends(sb, "\n", NULL);
}

static void cells(em_strbuf *sb, uint32_t s, uint32_t ps) {
    for (size_t i = 0; i < N_DOC_TYPES; i++) {
        uint32_t b = OV_T(doc_types[i]);
        em_strbuf_appends(sb, (ps & b) ? " PS |" : (s & b) ? " S |" : " NS |", NULL);
    }
    em_strbuf_appends(sb, "\n", NULL);
}

static void md_text(em_strbuf *sb, const char *s) {
    for (; s && *s; s++)
        em_strbuf_appends(sb, *s == '|' ? "\\|" : (char[2]){*s, 0}, NULL);
}

static void execs(em_strbuf *sb) {
    em_strbuf_appends(sb, "## Execs\n\n", NULL);
    em_strbuf_appends(sb,
                      "The Switch column is the key that turns the native operator off "
                      "(`spark.ember.sql.exec.<Exec>`, alias `spark.rapids.sql.exec.<Exec>`); "
                      "the types are those of the operator's output columns.\n\n",
                      NULL);
    header(sb, "Exec | Switch | Notes", 3);
    for (size_t i = 0; i < em_ov_n_exec_rules(); i++) {
        const ov_exec_rule *r = em_ov_exec_rule_at(i);
        if (!r->cls || r->how == OV_EXEC_PASS || r->kind == EM_NODE_AQE_SECTION)
            continue;
        em_strbuf_appendf(sb, NULL, "| %s | %s | ", r->cls, r->how == OV_EXEC_NATIVE ? "yes" : "-");
        md_text(sb, r->how == OV_EXEC_ROW ? "row engine only" : r->note ? r->note : "");
        em_strbuf_appends(sb, " |", NULL);
        cells(sb, r->how == OV_EXEC_ROW ? 0 : r->types, 0);
    }
    em_strbuf_appends(sb,
                      "\nPass-through (not an operator of either engine; they take their "
                      "child's engine and never become transitions):",
                      NULL);
    bool first = true;
    for (size_t i = 0; i < em_ov_n_exec_rules(); i++) {
        const ov_exec_rule *r = em_ov_exec_rule_at(i);
        if (r->how != OV_EXEC_PASS || r->kind == EM_NODE_AQE_SECTION)
            continue;
        em_strbuf_appendf(sb, NULL, "%s %s", first ? "" : ",", r->cls);
        first = false;
    }
    em_strbuf_appends(sb, ". Any other operator runs on the row engine.\n\n", NULL);
}

static void expressions(em_strbuf *sb) {
    em_strbuf_appends(sb, "## Expressions\n\n", NULL);
    em_strbuf_appends(sb,
                      "Two rows per expression: the types its operands may have (`input`) and "
                      "the types it may produce (`result`). The switch is "
                      "`spark.ember.sql.expression.<Expression>` (alias "
                      "`spark.rapids.sql.expression.<Expression>`); partitionings have none. "
                      "An expression not listed runs on the row engine only, and so does the "
                      "operator holding it.\n\n",
                      NULL);
    header(sb, "Expression | Param | Notes", 3);
    for (size_t i = 0; i < em_ov_n_expr_rules(); i++) {
        const ov_expr_rule *r = em_ov_expr_rule_at(i);
        uint32_t in_ps = r->incompat_fp ? (r->in_types & OV_T_FP) : 0;
        uint32_t all = r->incompat ? OV_T_ALL : 0;
        em_strbuf_appendf(sb, NULL, "| %s | input | ", r->cls);
        if (!r->native)
            md_text(sb, "row engine only");
        else
            md_text(sb, r->note ? r->note : "");
        em_strbuf_appends(sb, " |", NULL);
        cells(sb, r->native ? r->in_types : 0, r->native ? (in_ps | (all & r->in_types)) : 0);
        em_strbuf_appendf(sb, NULL, "| %s | result | |", r->cls);
        cells(sb, r->native ? r->out_types : 0,
              r->native ? (r->partial | (all & r->out_types)) : 0);
    }
    em_strbuf_appends(sb, "\n", NULL);
}

/* The catalog's printed names: their class and whether they run natively. */
static void functions(em_strbuf *sb) {
    em_strbuf_appends(sb, "## Functions by printed name\n\n", NULL);
    em_strbuf_appends(sb,
                      "The function catalog (`src/expr/catalog.c`): each name Spark prints in "
                      "call form, the expression class its switch and the table above name, "
                      "its arguments, and whether the native engine evaluates it (NS: the "
                      "row engine, which also runs names not listed where it can).\n\n",
                      NULL);
    em_strbuf_appends(sb, "| Name | Class | Arguments | Native |\n", NULL);
    em_strbuf_appends(sb, "| --- | --- | --- | --- |\n", NULL);
    for (int i = 0; i < em_fn_count(); i++) {
        const em_fn_info *f = em_fn_at(i);
        char arity[32] = "";
        if (f->min_args >= 0 && f->max_args >= 1000)
            snprintf(arity, sizeof arity, "%d or more", f->min_args);
        else if (f->min_args >= 0 && f->min_args == f->max_args)
            snprintf(arity, sizeof arity, "%d", f->min_args);
        else if (f->min_args >= 0)
            snprintf(arity, sizeof arity, "%d to %d", f->min_args, f->max_args);
        const ov_expr_rule *r = em_ov_expr_rule_named(f->cls);
        em_strbuf_appendf(sb, NULL, "| `%s` | %s | %s | %s |\n", f->name, f->cls, arity,
                          r && r->native ? "S" : "NS");
    }
    em_strbuf_appends(sb, "\n", NULL);
}

static void casts(em_strbuf *sb) {
    em_strbuf_appends(sb, "## Cast\n\n", NULL);
    em_strbuf_appends(sb, "Rows: from; columns: to.\n\n", NULL);
    header(sb, "From \\ To", 1);
    for (size_t f = 0; f < N_DOC_TYPES; f++) {
        uint32_t s = 0;
        for (size_t t = 0; t < N_DOC_TYPES; t++)
            if (em_ov_cast_supported(doc_types[f], doc_types[t]))
                s |= OV_T(doc_types[t]);
        em_strbuf_appendf(sb, NULL, "| %s |", type_header(doc_types[f]));
        cells(sb, s, 0);
    }
}

em_status em_overrides_supported_ops_md(em_strbuf *out, em_error *err) {
    em_strbuf_appendf(out, NULL,
                      "<!-- Generated from the support rules (src/overrides/rules.c); do not "
                      "edit by hand.\n     Regenerate with: %s -->\n\n",
                      EM_OVERRIDES_DOCS_COMMAND);
    em_strbuf_appends(out,
                      "# Supported operators and expressions\n\n"
                      "What Ember runs natively; everything else runs on the reference row "
                      "engine, with transitions between the two (`ember explain PLAN` shows "
                      "the decisions and every reason). S: supported; PS: partially supported "
                      "(see the notes); NS: not supported natively.\n\n"
                      "Incompatible operations (floating-point aggregation, whose result "
                      "depends on the order rows are added in) run natively only with "
                      "`spark.ember.sql.incompatibleOps.enabled=true` or their own switch "
                      "set to true; they are marked PS.\n\n",
                      NULL);
    execs(out);
    expressions(out);
    functions(out);
    casts(out);
    if (em_strbuf_status(out) != EM_OK)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory rendering supported_ops.md");
    return EM_OK;
}
