/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_spark_plan: the driver side of the Spark plugin. One call per plan
 * Spark prepares: read the structured plan, decide node by node with the
 * overrides (host Spark: Spark runs whatever Ember does not), and cut the
 * main tree into fragments, each a maximal connected set of native nodes
 * whose non-native children are its inputs, in the order a pre-order walk
 * meets them (the order the plugin writes the fragment's inputs in). A
 * native exchange ends the fragment above it (an input there) and roots
 * one of its own: its map side.
 */
#include <stdlib.h>
#include <string.h>

#include "ember/lore.h"
#include "ember/overrides.h"
#include "ember/spark.h"
#include "ember/value_text.h"

static bool native(const em_exec_plan *xp, const em_plan_node *n) {
    const em_node_decision *d = em_exec_plan_decision(xp, n);
    return d && d->engine == EM_ENGINE_NATIVE;
}

/* A native exchange is its own fragment (its map side), read by the
 * fragment above it as an input. */
static bool own_fragment(const em_exec_plan *xp, const em_plan_node *n) {
    return (n->kind == EM_NODE_EXCHANGE || n->kind == EM_NODE_BROADCAST_EXCHANGE) && native(xp, n);
}

static void put_inputs(const em_exec_plan *xp, const em_plan_node *n, em_strbuf *sb,
                       bool *first) {
    for (int c = 0; c < n->n_children; c++) {
        const em_plan_node *k = n->children[c];
        if (native(xp, k) && !own_fragment(xp, k)) {
            put_inputs(xp, k, sb, first);
            continue;
        }
        em_strbuf_appendf(sb, NULL, "%s%d", *first ? "" : ",", k->source_index);
        *first = false;
    }
}

/* Fragments rooted at n or below it: a native node under a non-native parent
 * (or at the top) starts one. */
static void put_fragments(const em_exec_plan *xp, const em_plan_node *n, bool parent_native,
                          em_strbuf *sb, bool *first) {
    bool nat = native(xp, n);
    if (nat && (!parent_native || own_fragment(xp, n)) && n->source_index >= 0) {
        em_strbuf_appendf(sb, NULL, "%s{\"root\":%d,\"inputs\":[", *first ? "" : ",",
                          n->source_index);
        bool f = true;
        put_inputs(xp, n, sb, &f);
        em_strbuf_appends(sb, "]}", NULL);
        *first = false;
    }
    for (int c = 0; c < n->n_children; c++)
        put_fragments(xp, n->children[c], nat, sb, first);
}

static void put_string(em_strbuf *sb, const char *s) {
    if (s)
        em_json_escape(sb, s, strlen(s), NULL);
    else
        em_strbuf_appends(sb, "null", NULL);
}

static void put_nodes(const em_exec_plan *xp, em_strbuf *sb) {
    bool first = true;
    for (int i = 0; i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (d->node->source_index < 0)
            continue;
        em_strbuf_appendf(sb, NULL, "%s{\"source\":%d,\"id\":%d,\"class\":", first ? "" : ",",
                          d->node->source_index, d->node->id);
        put_string(sb, d->class_name);
        em_strbuf_appendf(sb, NULL, ",\"native\":%s,\"loreId\":%d,\"reasons\":[",
                          d->engine == EM_ENGINE_NATIVE ? "true" : "false", d->lore_id);
        for (int r = 0; r < d->n_reasons; r++) {
            if (r)
                em_strbuf_appends(sb, ",", NULL);
            put_string(sb, d->reasons[r].text);
        }
        em_strbuf_appends(sb, "]}", NULL);
        first = false;
    }
}

em_status em_spark_plan(const char *plan_json, size_t plan_len, const char *conf_json,
                        size_t conf_len, char **out, size_t *out_len, em_error *err) {
    *out = NULL;
    if (out_len)
        *out_len = 0;
    EM_TRY(em_overrides_register_confs(err));
    em_conf *conf = NULL;
    em_plan *plan = NULL;
    em_exec_plan *xp = NULL;
    em_strbuf sb, report, tree;
    em_strbuf_init(&sb);
    em_strbuf_init(&report);
    em_strbuf_init(&tree);
    em_status s = em_conf_create(&conf, err);
    if (s == EM_OK && conf_json && conf_len)
        s = em_conf_set_json(conf, conf_json, conf_len, err);
    int mode = 0;
    if (s == EM_OK)
        s = em_conf_get_enum(conf, "spark.ember.sql.explain", &mode, err);
    if (s == EM_OK) {
        /* timestamp literals as text in the zone the overrides compile them with */
        const char *tz = em_conf_get_text(conf, "spark.sql.session.timeZone");
        em_plan_parse_options po = {.time_zone = tz ? tz : "UTC"};
        s = em_plan_read_json(plan_json, plan_len, &po, &plan, err);
    }
    if (s == EM_OK)
        s = em_lore_check_settings(conf, err); /* at planning, not in the tasks */
    if (s == EM_OK)
        s = em_overrides_apply_host(plan, conf, EM_HOST_SPARK, &xp, err);
    if (s == EM_OK)
        s = em_exec_plan_check_test_mode(xp, conf, EM_HOST_SPARK, err);
    /* the registry lists spark.ember.sql.explain's values in em_explain_mode's order */
    if (s == EM_OK)
        s = em_exec_plan_report(xp, (em_explain_mode)mode, &report, err);
    if (s == EM_OK)
        s = em_exec_plan_print_tree(xp, &tree, err);
    if (s == EM_OK) {
        em_strbuf_appends(&sb, "{\"nodes\":[", NULL);
        put_nodes(xp, &sb);
        em_strbuf_appends(&sb, "],\"fragments\":[", NULL);
        bool first = true;
        put_fragments(xp, em_plan_exec_root(plan), false, &sb, &first);
        em_strbuf_appends(&sb, "],\"report\":", NULL);
        put_string(&sb, em_strbuf_cstr(&report));
        em_strbuf_appends(&sb, ",\"tree\":", NULL);
        put_string(&sb, em_strbuf_cstr(&tree));
        em_strbuf_appends(&sb, "}", NULL);
        s = em_strbuf_status(&sb);
        if (s != EM_OK)
            EM_FAIL(err, s, "out of memory writing the plan's decisions");
    }
    if (s == EM_OK) {
        if (out_len)
            *out_len = sb.len;
        *out = sb.data; /* handed over: not reset below */
        em_strbuf_init(&sb);
    }
    em_strbuf_reset(&sb);
    em_strbuf_reset(&report);
    em_strbuf_reset(&tree);
    em_exec_plan_destroy(xp);
    em_plan_destroy(plan);
    em_conf_destroy(conf);
    return s;
}
