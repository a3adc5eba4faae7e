/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_plan -> JSON, for tools and tests that want the parsed model without
 * linking against the C structs (ember explain --json, diffing two plans).
 *
 * Shape:
 *   {"spark_version": "3.4", "version_reason": "...", "root": 9, "exec_root": 9,
 *    "nodes": [{"id", "name", "kind", "label_args", "header_args", "table",
 *               "whole_stage", "codegen_stage", "children": [ids], "join_type",
 *               "build_side", "reuses", "output": [{"name", "id", "type"}],
 *               "fields": [{"field", "counted", "exprs": [expr...], "text"}]}],
 *    "subqueries": [{"index", "host", "expr", "root", "target"}]}
 * An expression is {"kind", "type", "text" (top level only: as Spark prints
 * it), "args": [...]} plus what its kind carries (name, id, op, mode, ...).
 * Section nodes of adaptive plans have id 0 and appear inline in "children"
 * of their AdaptiveSparkPlan as {"section": name, "children": [...]}.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

static json_t *type_json(const em_expr *e) {
    if (!e->type_known)
        return json_null();
    char buf[64];
    em_type_format(e->type, buf, sizeof buf);
    return json_string(buf);
}

static json_t *expr_json(const em_expr *e, bool top, const em_shim *shim) {
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(em_expr_kind_name(e->kind)));
    json_object_set_new(o, "type", type_json(e));
    if (top) {
        plan_buf b = {0};
        em_plan_print_expr(&b, e, shim);
        json_object_set_new(o, "text", b.data ? json_string(b.data) : json_null());
        free(b.data);
    }
    switch (e->kind) {
    case EM_EXPR_ATTR:
    case EM_EXPR_ALIAS:
        json_object_set_new(o, "name", json_string(e->name));
        json_object_set_new(o, "id", json_integer(e->id));
        break;
    case EM_EXPR_LITERAL:
    case EM_EXPR_RAW:
    case EM_EXPR_TYPE:
    case EM_EXPR_CAST:
        json_object_set_new(o, "value", json_string(e->text));
        break;
    case EM_EXPR_CALL:
    case EM_EXPR_FIELD:
    case EM_EXPR_IN_SUBQUERY:
        json_object_set_new(o, "name", json_string(e->name));
        break;
    case EM_EXPR_AGG:
        json_object_set_new(o, "name", json_string(e->name));
        json_object_set_new(o, "mode",
                            json_string(e->mode == EM_AGG_PARTIAL         ? "partial"
                                        : e->mode == EM_AGG_PARTIAL_MERGE ? "merge"
                                                                          : "final"));
        json_object_set_new(o, "distinct", json_boolean(e->distinct));
        break;
    case EM_EXPR_BINARY:
        json_object_set_new(o, "op", json_string(em_binop_symbol(e->op)));
        break;
    case EM_EXPR_SORT_ORDER:
        json_object_set_new(o, "ascending", json_boolean(e->ascending));
        json_object_set_new(o, "nulls_first", json_boolean(e->nulls_first));
        break;
    case EM_EXPR_BOUND_REF:
        json_object_set_new(o, "ordinal", json_integer(e->id));
        json_object_set_new(o, "nullable", json_boolean(e->nullable_flag));
        break;
    case EM_EXPR_SCALAR_SUBQUERY:
        json_object_set_new(o, "name", json_string(e->name));
        json_object_set_new(o, "reused", json_boolean(e->reused));
        json_object_set_new(o, "subquery",
                            e->subquery ? json_integer(e->subquery->id) : json_null());
        break;
    case EM_EXPR_PLAN_ID:
        json_object_set_new(o, "plan_id", json_integer(e->plan_id));
        break;
    default:
        break;
    }
    if (e->n_args) {
        json_t *args = json_array();
        for (int i = 0; i < e->n_args; i++)
            json_array_append_new(args, expr_json(e->args[i], false, shim));
        json_object_set_new(o, "args", args);
    }
    return o;
}

static const char *field_name(const em_plan_field *f) {
    return f->kind == EM_FIELD_OTHER ? "Other" : f->label;
}

static json_t *children_json(const em_plan_node *node) {
    json_t *kids = json_array();
    for (int i = 0; i < node->n_children; i++) {
        const em_plan_node *c = node->children[i];
        if (c->kind == EM_NODE_AQE_SECTION) {
            json_t *sec = json_object();
            json_object_set_new(sec, "section", json_string(c->name));
            json_object_set_new(sec, "children", children_json(c));
            json_array_append_new(kids, sec);
        } else {
            json_array_append_new(kids, json_integer(c->id));
        }
    }
    return kids;
}

static json_t *node_json(const em_plan_node *n, const em_shim *shim) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(n->id));
    json_object_set_new(o, "name", json_string(n->name));
    json_object_set_new(o, "kind", json_string(em_node_kind_name(n->kind)));
    if (n->label_args)
        json_object_set_new(o, "label_args", json_string(n->label_args));
    if (n->header_args)
        json_object_set_new(o, "header_args", json_string(n->header_args));
    if (n->table)
        json_object_set_new(o, "table", json_string(n->table));
    json_object_set_new(o, "whole_stage", json_boolean(n->whole_stage));
    json_object_set_new(o, "codegen_stage",
                        n->codegen_id >= 0 ? json_integer(n->codegen_id) : json_null());
    json_object_set_new(o, "children", children_json(n));
    if (n->join_type != EM_JOIN_NONE) {
        json_object_set_new(o, "join_type", json_string(n->join_type_text));
        json_object_set_new(o, "build_side",
                            json_string(n->build_side == EM_BUILD_LEFT    ? "left"
                                        : n->build_side == EM_BUILD_RIGHT ? "right"
                                                                          : "none"));
    }
    if (n->reuses)
        json_object_set_new(o, "reuses", json_integer(n->reuses->id));
    json_t *out = json_array();
    for (int i = 0; i < n->n_output; i++) {
        const em_expr *a = n->output[i];
        json_t *col = json_object();
        json_object_set_new(col, "name", a->name ? json_string(a->name) : json_null());
        json_object_set_new(col, "id", json_integer(a->id));
        json_object_set_new(col, "type", type_json(a));
        json_array_append_new(out, col);
    }
    json_object_set_new(o, "output", out);
    json_t *fields = json_array();
    for (int f = 0; f < n->n_fields; f++) {
        const em_plan_field *fl = &n->fields[f];
        json_t *fo = json_object();
        json_object_set_new(fo, "field", json_string(field_name(fl)));
        if (fl->text)
            json_object_set_new(fo, "text", json_string(fl->text));
        if (fl->kind == EM_FIELD_READ_SCHEMA) {
            json_t *schema = json_array();
            for (int k = 0; k < fl->n_schema; k++) {
                json_t *c = json_object();
                json_object_set_new(c, "name", json_string(fl->schema[k].name));
                json_object_set_new(c, "type", json_string(fl->schema[k].type_text));
                json_array_append_new(schema, c);
            }
            json_object_set_new(fo, "schema", schema);
        }
        if (fl->n_paths) {
            json_t *paths = json_array();
            for (int k = 0; k < fl->n_paths; k++)
                json_array_append_new(paths, json_string(fl->paths[k]));
            json_object_set_new(fo, "paths", paths);
        }
        if (fl->n_exprs || fl->kind < EM_FIELD_READ_SCHEMA) {
            json_t *exprs = json_array();
            for (int k = 0; k < fl->n_exprs; k++)
                json_array_append_new(exprs, expr_json(fl->exprs[k], true, shim));
            json_object_set_new(fo, "exprs", exprs);
        }
        json_array_append_new(fields, fo);
    }
    json_object_set_new(o, "fields", fields);
    return o;
}

em_status em_plan_to_json(const em_plan *plan, char **out, size_t *out_len, em_error *err) {
    *out = NULL;
    if (out_len)
        *out_len = 0;
    json_t *root = json_object();
    if (!root)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory writing the plan as JSON");
    json_object_set_new(root, "spark_version", json_string(em_shim_name(plan->shim)));
    json_object_set_new(root, "version_reason", json_string(plan->shim_reason));
    json_object_set_new(root, "root", json_integer(plan->root->id));
    json_object_set_new(root, "exec_root", json_integer(em_plan_exec_root(plan)->id));
    json_t *nodes = json_array();
    for (int id = 1; id <= plan->max_id; id++)
        if (plan->by_id[id])
            json_array_append_new(nodes, node_json(plan->by_id[id], plan->shim));
    json_object_set_new(root, "nodes", nodes);
    json_t *subs = json_array();
    for (int i = 0; i < plan->n_subqueries; i++) {
        const em_plan_subquery *sq = &plan->subqueries[i];
        json_t *s = json_object();
        json_object_set_new(s, "index", json_integer(sq->index));
        json_object_set_new(s, "host", json_integer(sq->host_id));
        json_object_set_new(s, "expr", expr_json(sq->expr, true, plan->shim));
        json_object_set_new(s, "root", sq->root ? json_integer(sq->root->id) : json_null());
        json_object_set_new(s, "target", sq->target ? json_integer(sq->target->id) : json_null());
        json_array_append_new(subs, s);
    }
    json_object_set_new(root, "subqueries", subs);
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory writing the plan as JSON");
    *out = text;
    if (out_len)
        *out_len = strlen(text);
    return EM_OK;
}
