/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dump session: reads the LORE configs, checks the selection against
 * the plan and the dump folder before anything runs, and writes each
 * selected operator's plan.meta.
 *
 * plan.meta carries the operator as a plan of its own, in the EXPLAIN
 * FORMATTED text its Spark line prints: the operator's detail block as
 * printed, with each input replaced by an Exchange (BroadcastExchange for a
 * broadcast input, keeping its arguments, which decide e.g. null-aware anti
 * joins) over a Scan whose ReadSchema types the columns as they ran.
 * Replay parses that text and builds the operator with em_op_build: the
 * exchanges become reads served from the dumped batches, so the operator
 * is constructed by exactly the code that ran it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember/value_text.h"
#include "lore/internal.h"

/* ------------------------------------------------------------------ helpers */

bool em_lore_pass_through(const em_plan_node *n) {
    return em_node_kind_is_wrapper(n->kind) && n->n_children == 1;
}

const em_plan_node *em_lore_input_node(const em_plan_node *node, int k) {
    const em_plan_node *c = node->children[k];
    while (em_lore_pass_through(c))
        c = c->children[0];
    return c;
}

void em_lore_input_dirname(int input_index, char *buf, size_t cap) {
    if (input_index == EM_LORE_OUTPUT)
        snprintf(buf, cap, "output");
    else
        snprintf(buf, cap, "input-%d", input_index);
}

em_status em_lore_mkdirs(const char *path, em_error *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return EM_FAIL(err, EM_ERR_INVALID, "LORE: path too long: %s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return EM_FAIL(err, EM_ERR_IO, "LORE: cannot create %s: %s", buf, strerror(errno));
        *p = c;
        if (c == '\0')
            return EM_OK;
    }
}

em_status em_lore_write_json(const char *path, json_t *j, int64_t *bytes, em_error *err) {
    static atomic_int seq;
    if (!j)
        return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory building %s", path);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text)
        return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory writing %s", path);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d-%d", path, (int)getpid(), atomic_fetch_add(&seq, 1));
    size_t n = strlen(text);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    free(text);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return EM_FAIL(err, EM_ERR_IO, "LORE: cannot write %s: %s", path, strerror(e));
    }
    if (bytes)
        *bytes = (int64_t)n + 1;
    return EM_OK;
}

json_t *em_lore_schema_json(const em_schema *schema, const em_expr *const *attrs, const int *cols,
                         int n_cols) {
    json_t *arr = json_array();
    for (int k = 0; arr && k < n_cols; k++) {
        int i = cols ? cols[k] : k;
        char type[64];
        em_type_format(schema->fields[i].type, type, sizeof type);
        json_t *f = json_pack("{s:s, s:s}", "name", schema->fields[i].name, "type", type);
        if (f && attrs && attrs[i])
            json_object_set_new(f, "exprId", json_integer(attrs[i]->id));
        if (!f || json_array_append_new(arr, f) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static void walk_subq(const em_expr *e, const em_expr ***list, int *n) {
    if (!e)
        return;
    if (e->kind == EM_EXPR_SCALAR_SUBQUERY && e->type_known) {
        for (int i = 0; i < *n; i++)
            if ((*list)[i]->id == e->id)
                return;
        const em_expr **l = realloc(*list, sizeof *l * (size_t)(*n + 1));
        if (!l)
            return;
        *list = l;
        l[(*n)++] = e;
        return;
    }
    for (int i = 0; i < e->n_args; i++)
        walk_subq(e->args[i], list, n);
}

int em_lore_node_subqueries(const em_plan_node *node, const em_expr ***out) {
    *out = NULL;
    int n = 0;
    for (int f = 0; f < node->n_fields; f++)
        for (int i = 0; i < node->fields[f].n_exprs; i++)
            walk_subq(node->fields[f].exprs[i], out, &n);
    return n;
}

/* ------------------------------------------------------------------ ids */

static void assign_ids(const em_plan_node *n, int *lore_of, int max_id, int *next) {
    for (int i = 0; i < n->n_children; i++)
        assign_ids(n->children[i], lore_of, max_id, next);
    if (!em_lore_pass_through(n) && n->id >= 1 && n->id <= max_id && lore_of[n->id] < 0)
        lore_of[n->id] = (*next)++;
}

/* ------------------------------------------------------------------ plan.meta */

static bool plain_name(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* The name a leaf column gets in the rebuilt plan: its own when it is a
 * plain identifier unique in the leaf (ReadSchema types columns by name),
 * else col<k>. Binding is by expression id, so the name is only a label. */
static void leaf_name(const em_plan_node *in, int k, char *buf, size_t cap) {
    const char *name = in->output[k]->name;
    bool ok = plain_name(name);
    for (int j = 0; ok && j < in->n_output; j++)
        if (j != k && in->output[j]->name && strcasecmp(in->output[j]->name, name) == 0)
            ok = false;
    if (ok)
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "col%d", k);
}

/* The detail block of `node` in the printed plan: "(id) Name..." up to the
 * blank line that ends it. */
static bool find_block(const char *printed, int id, const char **start, size_t *len) {
    char head[32];
    snprintf(head, sizeof head, "\n(%d) ", id);
    const char *p = strstr(printed, head);
    if (!p)
        return false;
    p++;
    const char *end = strstr(p, "\n\n");
    *start = p;
    *len = end ? (size_t)(end - p) + 1 : strlen(p);
    return true;
}

/* The "Arguments: ..." line of a printed block, or NULL. */
static char *block_line(const char *block, size_t len, const char *label) {
    size_t ll = strlen(label);
    for (const char *p = block; p < block + len;) {
        const char *nl = memchr(p, '\n', (size_t)(block + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(block + len - p);
        if (n >= ll && strncmp(p, label, ll) == 0)
            return strndup(p, n);
        p += n + 1;
    }
    return NULL;
}

/* Attributes the operator's expressions read that neither its inputs nor
 * the operator itself define (a final aggregate's sum(x#9) names the x of
 * an operator far below): the rebuilt plan must still type them, so they
 * ride on the first input's scan (not on its exchange, so the input's
 * columns stay what was dumped). */
typedef struct attr_set {
    int n, cap;
    const em_expr **items;
} attr_set;

static bool set_has(const attr_set *s, int64_t id) {
    for (int i = 0; i < s->n; i++)
        if (s->items[i]->id == id)
            return true;
    return false;
}

static void set_add(attr_set *s, const em_expr *a) {
    if (set_has(s, a->id))
        return;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        const em_expr **it = realloc(s->items, sizeof *it * (size_t)cap);
        if (!it)
            return;
        s->items = it;
        s->cap = cap;
    }
    s->items[s->n++] = a;
}

static void walk_refs(const em_expr *e, attr_set *refs, attr_set *defs) {
    if (!e)
        return;
    if (e->kind == EM_EXPR_ATTR)
        set_add(refs, e);
    if (e->kind == EM_EXPR_ALIAS)
        set_add(defs, e);
    for (int i = 0; i < e->n_args; i++)
        walk_refs(e->args[i], refs, defs);
}

static void foreign_attrs(const em_plan_node *node, attr_set *out) {
    attr_set refs = {0}, defs = {0};
    for (int f = 0; f < node->n_fields; f++) {
        const em_plan_field *fl = &node->fields[f];
        if (fl->kind == EM_FIELD_PUSHED_FILTERS || fl->kind == EM_FIELD_DATA_FILTERS ||
            fl->kind == EM_FIELD_PARTITION_FILTERS)
            continue;
        for (int i = 0; i < fl->n_exprs; i++) {
            if (fl->kind == EM_FIELD_AGG_ATTRS && fl->exprs[i]->kind == EM_EXPR_ATTR)
                set_add(&defs, fl->exprs[i]);
            walk_refs(fl->exprs[i], &refs, &defs);
        }
    }
    for (int i = 0; i < node->n_output; i++)
        set_add(&defs, node->output[i]);
    for (int k = 0; k < node->n_children; k++) {
        const em_plan_node *in = em_lore_input_node(node, k);
        for (int c = 0; c < in->n_output; c++)
            set_add(&defs, in->output[c]);
    }
    for (int i = 0; i < refs.n; i++)
        if (!set_has(&defs, refs.items[i]->id) && refs.items[i]->type_known)
            set_add(out, refs.items[i]);
    free(refs.items);
    free(defs.items);
}

/* The id of input k's row number column (see rebuild_text). */
#define LORE_ROW_ID(k) (900000500LL + (k))

/* "[n]: [a#1, b#2]": the input's columns, then ext's; row_of >= 0 adds the
 * row number column of input row_of. */
static void put_attrs(em_strbuf *b, const em_plan_node *in, bool leaf_names, const attr_set *ext,
                      int row_of) {
    int n = in->n_output + ext->n;
    em_strbuf_appendf(b, NULL, "[%d]: [", n + (row_of >= 0));
    for (int k = 0; k < n; k++) {
        const em_expr *a = k < in->n_output ? in->output[k] : ext->items[k - in->n_output];
        char name[256];
        if (k >= in->n_output)
            snprintf(name, sizeof name, "lore_x%d", k - in->n_output);
        else if (leaf_names)
            leaf_name(in, k, name, sizeof name);
        else
            snprintf(name, sizeof name, "%s", a->name ? a->name : "");
        em_strbuf_appendf(b, NULL, "%s%s#%lld%s", k ? ", " : "", name, (long long)a->id,
                          a->long_suffix ? "L" : "");
    }
    if (row_of >= 0)
        em_strbuf_appendf(b, NULL, "%slore_row#%lldL", n ? ", " : "", LORE_ROW_ID(row_of));
    em_strbuf_appends(b, "]\n", NULL);
}

static void put_attr_list(em_strbuf *b, const em_plan_node *in, bool leaf_names,
                          const attr_set *ext) {
    put_attrs(b, in, leaf_names, ext, -1);
}

/* Builds the operator's stand-alone plan text; records in `inputs` the
 * ids given to each input's exchange. */
static em_status rebuild_text(const em_plan *plan, const lore_target *t, const char *printed,
                              em_strbuf *out, json_t *inputs, em_error *err) {
    const em_plan_node *node = t->node;
    const char *block;
    size_t block_len;
    if (!find_block(printed, node->id, &block, &block_len))
        return EM_FAIL(err, EM_ERR_INTERNAL, "LORE: no detail block for operator %d", node->id);
    attr_set foreign_set = {0}, none = {0};
    const attr_set *foreign = &foreign_set;
    foreign_attrs(node, &foreign_set);
    int base = em_plan_max_id(plan);
    em_strbuf_appends(out, "== Physical Plan ==\n", NULL);
    em_strbuf_appendf(out, NULL, "%s%s%s%s (%d)%s\n", node->whole_stage ? "* " : "", node->name,
                      node->label_args ? " " : "", node->label_args ? node->label_args : "",
                      node->id, node->label_suffix ? node->label_suffix : "");
    for (int k = 0; k < node->n_children; k++) {
        const em_plan_node *in = em_lore_input_node(node, k);
        const em_plan_node *src = in->kind == EM_NODE_REUSED_EXCHANGE && in->reuses ? in->reuses
                                                                                     : in;
        bool bcast = src->kind == EM_NODE_BROADCAST_EXCHANGE;
        bool last = k + 1 == node->n_children;
        const char *ind = last ? "   " : ":  ";
        em_strbuf_appendf(out, NULL, "%s%s (%d)\n", last ? "+- " : ":- ",
                          bcast ? "BroadcastExchange" : "Exchange", base + 3 * k + 3);
        if (em_plan_aggregate_below(node->children[k]))
            em_strbuf_appendf(out, NULL, "%s+- HashAggregate (%d)\n%s   +- Scan parquet "
                                         "lore.input_%d (%d)\n",
                              ind, base + 3 * k + 2, ind, k, base + 3 * k + 1);
        else
            em_strbuf_appendf(out, NULL, "%s+- Scan parquet lore.input_%d (%d)\n", ind, k,
                              base + 3 * k + 1);
        json_t *j = json_object();
        json_object_set_new(j, "index", json_integer(k));
        json_object_set_new(j, "kind", json_string(bcast ? "broadcast" : "shuffle"));
        json_object_set_new(j, "fromOperator", json_string(in->name ? in->name : ""));
        json_object_set_new(j, "fromOperatorId", json_integer(in->id));
        json_object_set_new(j, "exchangeId", json_integer(base + 3 * k + 3));
        json_array_append_new(inputs, j);
    }
    em_strbuf_appends(out, "\n", NULL);
    for (int k = 0; k < node->n_children; k++) {
        const em_plan_node *in = em_lore_input_node(node, k);
        const em_plan_node *src = in->kind == EM_NODE_REUSED_EXCHANGE && in->reuses ? in->reuses
                                                                                     : in;
        bool bcast = src->kind == EM_NODE_BROADCAST_EXCHANGE;
        const attr_set *ext = k == 0 ? foreign : &none;
        bool agg = em_plan_aggregate_below(node->children[k]);
        em_strbuf_appendf(out, NULL, "\n(%d) Scan parquet lore.input_%d\nOutput ", base + 3 * k + 1,
                          k);
        put_attrs(out, in, true, ext, agg ? k : -1);
        em_strbuf_appendf(out, NULL,
                          "Batched: true\nLocation [not included in comparison]/{warehouse_dir}/"
                          "input-%d]\nReadSchema: struct<",
                          k);
        for (int c = 0; c < in->n_output + ext->n; c++) {
            char name[256], type[64];
            const em_expr *a = c < in->n_output ? in->output[c] : ext->items[c - in->n_output];
            if (c < in->n_output)
                leaf_name(in, c, name, sizeof name);
            else
                snprintf(name, sizeof name, "lore_x%d", c - in->n_output);
            em_type_format(a->type_known ? a->type : em_type_make(EM_TYPE_NULL), type,
                           sizeof type);
            em_strbuf_appendf(out, NULL, "%s%s:%s", c ? "," : "", name, type);
        }
        em_strbuf_appends(out, agg ? ",lore_row:bigint>\n" : ">\n", NULL);
        if (agg) {
            /* replay never runs it: it keeps what the operator sees below it
             * (a final aggregate merges buffers only when an aggregate is
             * there); grouped by a row number as well, so that a run of the
             * plan itself (a test case made from the dump) keeps every row */
            em_strbuf_appendf(out, NULL, "\n(%d) HashAggregate\nInput ", base + 3 * k + 2);
            put_attrs(out, in, true, &none, k);
            em_strbuf_appends(out, "Keys ", NULL);
            put_attrs(out, in, true, &none, k);
            em_strbuf_appends(out, "Functions [0]: []\nAggregate Attributes [0]: []\nResults ",
                              NULL);
            put_attr_list(out, in, true, &none);
        }
        em_strbuf_appendf(out, NULL, "\n(%d) %s\nInput ", base + 3 * k + 3,
                          bcast ? "BroadcastExchange" : "Exchange");
        put_attr_list(out, in, true, &none);
        char *args = NULL;
        if (bcast) {
            const char *sb;
            size_t sl;
            if (find_block(printed, src->id, &sb, &sl))
                args = block_line(sb, sl, "Arguments: ");
        }
        em_strbuf_appendf(out, NULL, "%s\n", args ? args : "Arguments: SinglePartition");
        free(args);
    }
    em_strbuf_appends(out, "\n", NULL);
    em_strbuf_append(out, block, block_len, NULL);
    em_strbuf_appends(out, "\n", NULL);
    free(foreign_set.items);
    /* each scalar subquery: a tree of one scan of its dumped value, which
     * types the expression as the original tree did */
    if (t->n_subq)
        em_strbuf_appends(out, "===== Subqueries =====\n\n", NULL);
    for (int j = 0; j < t->n_subq; j++) {
        const em_expr *e = t->subq[j];
        char *text = NULL, type[64];
        EM_TRY(em_expr_print(e, em_plan_shim(plan), &text, NULL, err));
        em_type_format(e->type, type, sizeof type);
        int sid = base + 3 * node->n_children + 1 + j;
        long long vid = 900000000LL + j;
        em_strbuf_appendf(out, NULL,
                          "Subquery:%d Hosting operator id = %d Hosting Expression = %s\n"
                          "Scan parquet lore.input_%d (%d)\n\n\n(%d) Scan parquet lore.input_%d\n"
                          "Output [1]: [value#%lld]\nBatched: true\nLocation [not included in "
                          "comparison]/{warehouse_dir}/input-%d]\nReadSchema: struct<value:%s>\n\n\n",
                          j + 1, node->id, text, node->n_children + j, sid, sid,
                          node->n_children + j, vid, node->n_children + j, type);
        json_t *sj = json_object();
        json_object_set_new(sj, "index", json_integer(node->n_children + j));
        json_object_set_new(sj, "kind", json_string("subquery"));
        json_object_set_new(sj, "expression", json_string(text));
        json_object_set_new(sj, "exprId", json_integer(e->id));
        json_object_set_new(sj, "type", json_string(type));
        json_array_append_new(inputs, sj);
        free(text);
    }
    if (em_strbuf_status(out) != EM_OK)
        return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory writing plan.meta");
    return EM_OK;
}

static json_t *conf_json(const em_conf *conf, const em_plan *plan) {
    json_t *j = json_object();
    for (size_t i = 0; conf && i < em_conf_n_set(conf); i++) {
        const char *key, *spelled, *value;
        if (em_conf_set_at(conf, i, &key, &spelled, &value) && strstr(key, ".lore.") == NULL)
            json_object_set_new(j, key, json_string(value));
    }
    /* what replay needs even when the run used the defaults */
    if (!json_object_get(j, "spark.sql.ansi.enabled"))
        json_object_set_new(j, "spark.sql.ansi.enabled",
                            json_string(em_shim_ansi_default(em_plan_shim(plan)) ? "true"
                                                                                   : "false"));
    if (!json_object_get(j, "spark.sql.session.timeZone"))
        json_object_set_new(j, "spark.sql.session.timeZone", json_string("UTC"));
    return j;
}

static em_status write_plan_meta(em_lore_session *s, const lore_target *t, const char *printed,
                                 const em_conf *conf, em_error *err) {
    const em_plan_node *node = t->node;
    em_strbuf text = {0};
    json_t *inputs = json_array();
    em_status st = rebuild_text(s->plan, t, printed, &text, inputs, err);
    if (st != EM_OK) {
        em_strbuf_reset(&text);
        json_decref(inputs);
        return st;
    }
    for (int k = 0; k < node->n_children; k++) {
        const em_plan_node *in = em_lore_input_node(node, k);
        em_schema sc = {0};
        st = em_schema_init(&sc, in->n_output, err);
        for (int c = 0; st == EM_OK && c < in->n_output; c++) {
            const em_expr *a = in->output[c];
            st = em_schema_set(&sc, c, a->name ? a->name : "",
                               a->type_known ? a->type : em_type_make(EM_TYPE_NULL), true, err);
        }
        if (st == EM_OK)
            json_object_set_new(json_array_get(inputs, (size_t)k), "schema",
                                em_lore_schema_json(&sc, (const em_expr *const *)in->output, NULL,
                                                 in->n_output));
        em_schema_reset(&sc);
        if (st != EM_OK)
            break;
    }
    em_schema osc = {0};
    json_t *out_schema = NULL;
    if (st == EM_OK)
        st = em_schema_init(&osc, node->n_output, err);
    for (int c = 0; st == EM_OK && c < node->n_output; c++) {
        const em_expr *a = node->output[c];
        st = em_schema_set(&osc, c, a->name ? a->name : "",
                           a->type_known ? a->type : em_type_make(EM_TYPE_NULL), true, err);
    }
    if (st == EM_OK)
        out_schema = em_lore_schema_json(&osc, (const em_expr *const *)node->output, NULL,
                                      node->n_output);
    em_schema_reset(&osc);
    char op[512];
    snprintf(op, sizeof op, "%s (%d)", node->name, node->id);
    json_t *cols = json_null();
    if (s->n_columns) {
        cols = json_array();
        for (int i = 0; i < s->n_columns; i++)
            json_array_append_new(cols, json_string(s->columns[i]));
    }
    json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:i, s:s, s:s, s:o, s:o, s:b, s:o}", "format",
                          LORE_FORMAT, "loreId", t->lore_id, "operator", op, "operatorName",
                          node->name, "operatorId", node->id, "sparkVersion",
                          em_shim_name(em_plan_shim(s->plan)), "plan", em_strbuf_cstr(&text),
                          "configs", conf_json(conf, s->plan), "inputs", inputs, "outputDumped",
                          s->dump_output || node->n_children == 0, "columns", cols);
    if (j)
        json_object_set_new(j, "outputSchema", out_schema ? out_schema : json_array());
    em_strbuf_reset(&text);
    if (st == EM_OK) {
        char path[4200];
        snprintf(path, sizeof path, "%s/plan.meta", t->dir);
        int64_t n = 0;
        st = em_lore_write_json(path, j, &n, err);
        atomic_fetch_add(&s->bytes, n);
        atomic_fetch_add(&s->files, 1);
    }
    json_decref(j);
    return st;
}

/* ------------------------------------------------------------------ session */

/* The dump folder, made if missing, locked for the whole run (flock on the
 * folder: released when the session ends or the process dies, so a run
 * that was killed leaves no stale lock) and then required empty; taking the
 * lock first means two runs given the same folder cannot both pass. */
static em_status check_folder(em_lore_session *s, const char *path, em_error *err) {
    struct stat stb;
    if (stat(path, &stb) != 0) {
        if (errno != ENOENT)
            return EM_FAIL(err, EM_ERR_IO, "spark.ember.sql.lore.dumpPath: %s: %s", path,
                           strerror(errno));
        EM_TRY(em_lore_mkdirs(path, err));
    } else if (!S_ISDIR(stb.st_mode)) {
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.ember.sql.lore.dumpPath: %s exists and is not a folder", path);
    }
    s->lock_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->lock_fd < 0)
        return EM_FAIL(err, EM_ERR_IO, "spark.ember.sql.lore.dumpPath: %s: %s", path,
                       strerror(errno));
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return EM_FAIL(err, errno == EWOULDBLOCK ? EM_ERR_INVALID : EM_ERR_IO,
                       "spark.ember.sql.lore.dumpPath: %s is being written by another run "
                       "(locked): give each run its own folder",
                       path);
    DIR *d = opendir(path);
    if (!d)
        return EM_FAIL(err, EM_ERR_IO, "spark.ember.sql.lore.dumpPath: %s: %s", path,
                       strerror(errno));
    struct dirent *e;
    const char *first = NULL;
    char name[256] = "";
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(name, sizeof name, "%s", e->d_name);
            first = name;
            break;
        }
    closedir(d);
    if (first)
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.ember.sql.lore.dumpPath: %s is not empty (it holds %s); LORE "
                       "refuses to mix dumps: give a new or empty folder",
                       path, first);
    return EM_OK;
}

static em_status parse_columns(em_lore_session *s, const char *text, em_error *err) {
    if (!text)
        return EM_OK;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *q = p;
        while (*q && *q != ',')
            q++;
        const char *e = q;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > p) {
            char **c = realloc(s->columns, sizeof *c * (size_t)(s->n_columns + 1));
            if (!c)
                return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
            s->columns = c;
            if (!(s->columns[s->n_columns] = strndup(p, (size_t)(e - p))))
                return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
            s->n_columns++;
        }
        p = q;
    }
    return EM_OK;
}

/* Whether a column name of spark.ember.sql.lore.columns names this attribute
 * ("name" ignoring case, or "name#id"). */
static bool column_matches(const char *want, const em_expr *a) {
    if (!a || !a->name)
        return false;
    if (strcasecmp(want, a->name) == 0)
        return true;
    char full[300];
    snprintf(full, sizeof full, "%s#%lld", a->name, (long long)a->id);
    return strcasecmp(want, full) == 0;
}

static bool node_has_column(const em_plan_node *node, const char *want, bool output) {
    for (int k = 0; k < node->n_children; k++) {
        const em_plan_node *in = em_lore_input_node(node, k);
        for (int c = 0; c < in->n_output; c++)
            if (column_matches(want, in->output[c]))
                return true;
    }
    for (int c = 0; output && c < node->n_output; c++)
        if (column_matches(want, node->output[c]))
            return true;
    return false;
}

em_status em_lore_check_settings(const em_conf *conf, em_error *err) {
    const char *ids_text = NULL, *path = NULL;
    EM_TRY(em_conf_get_string(conf, "spark.ember.sql.lore.idsToDump", &ids_text, err));
    EM_TRY(em_conf_get_string(conf, "spark.ember.sql.lore.dumpPath", &path, err));
    em_lore_ids ids;
    em_status s = em_lore_ids_parse(ids_text, &ids, err);
    if (s != EM_OK) {
        em_error_prefix(err, "spark.ember.sql.lore.idsToDump");
        return s;
    }
    bool any = ids.n > 0;
    em_lore_ids_reset(&ids);
    if (any && (!path || !*path))
        return EM_FAIL(err, EM_ERR_INVALID,
                       "spark.ember.sql.lore.idsToDump is set but spark.ember.sql.lore.dumpPath "
                       "is not: say where to write the dump");
    return EM_OK;
}

/* attach: a plan fragment of a query whose dump folder the embedder checked
 * once (the Spark plugin, at planning): no emptiness check and no lock (the
 * fragments of one query write into the folder side by side, from several
 * processes), and selected ids the fragment lacks belong to other fragments. */
static em_status session_open(const em_conf *conf, const em_plan *plan, const int *lore_ids,
                              int n_lore_ids, bool attach, em_lore_session **out,
                              em_error *err) {
    *out = NULL;
    const char *ids_text = NULL, *path = NULL, *cols = NULL;
    bool dump_output = false;
    EM_TRY(em_conf_get_string(conf, "spark.ember.sql.lore.idsToDump", &ids_text, err));
    EM_TRY(em_conf_get_string(conf, "spark.ember.sql.lore.dumpPath", &path, err));
    EM_TRY(em_conf_get_string(conf, "spark.ember.sql.lore.columns", &cols, err));
    EM_TRY(em_conf_get_bool(conf, "spark.ember.sql.lore.dumpOutput", &dump_output, err));
    EM_TRY(em_lore_check_settings(conf, err));
    em_lore_ids ids;
    em_status st = em_lore_ids_parse(ids_text, &ids, err);
    if (st != EM_OK || ids.n == 0)
        return st;
    em_lore_session *s = calloc(1, sizeof *s);
    if (!s) {
        em_lore_ids_reset(&ids);
        return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
    }
    s->lock_fd = -1;
    s->ids = ids;
    s->plan = plan;
    s->dump_output = dump_output;
    pthread_mutex_init(&s->mu, NULL);
    int max_id = em_plan_max_id(plan);
    s->n_lore = max_id + 1;
    s->lore_of = malloc(sizeof *s->lore_of * (size_t)s->n_lore);
    char *printed = NULL;
    if (!s->lore_of) {
        st = EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
        goto fail;
    }
    for (int i = 0; i < s->n_lore; i++)
        s->lore_of[i] = lore_ids && i < n_lore_ids ? lore_ids[i] : -1;
    if (!lore_ids) {
        int next = 0;
        assign_ids(em_plan_exec_root(plan), s->lore_of, max_id, &next);
        for (int i = 0; i < em_plan_n_subqueries(plan); i++) {
            const em_plan_subquery *sq = em_plan_subquery_at(plan, i);
            if (sq->root)
                assign_ids(sq->root, s->lore_of, max_id, &next);
        }
    }
    if (!(s->dump_path = strdup(path)) ||
        !(s->targets = calloc((size_t)ids.n, sizeof *s->targets))) {
        st = EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
        goto fail;
    }
    int max_lore = -1;
    for (int i = 0; i < s->n_lore; i++)
        if (s->lore_of[i] > max_lore)
            max_lore = s->lore_of[i];
    for (int i = 0; i < ids.n; i++) {
        const em_lore_selection *sel = &ids.items[i];
        const em_plan_node *node = NULL;
        for (int id = 1; id < s->n_lore && !node; id++)
            if (s->lore_of[id] == sel->lore_id)
                node = em_plan_node_by_id(plan, id);
        if (!node && attach)
            continue;
        if (!node && max_lore < 0) {
            st = EM_FAIL(err, EM_ERR_INVALID,
                         "spark.ember.sql.lore.idsToDump: column %d: loreId %d: this plan has "
                         "no LORE ids (no native operator, or "
                         "spark.ember.sql.lore.tag.enabled=false)",
                         sel->column, sel->lore_id);
            goto fail;
        }
        if (!node) {
            st = EM_FAIL(err, EM_ERR_INVALID,
                         "spark.ember.sql.lore.idsToDump: column %d: no native operator has "
                         "loreId %d (this plan's ids are 0..%d; `ember explain` prints them)",
                         sel->column, sel->lore_id, max_lore);
            goto fail;
        }
        if (node->n_children > LORE_MAX_INPUTS) {
            st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "LORE: %s (%d) has more than %d inputs",
                         node->name, node->id, LORE_MAX_INPUTS);
            goto fail;
        }
        lore_target *t = &s->targets[s->n_targets++];
        t->lore_id = sel->lore_id;
        t->node = node;
        t->sel = sel;
        t->n_inputs = node->n_children;
        t->n_subq = em_lore_node_subqueries(node, &t->subq);
        if (t->n_inputs + t->n_subq > LORE_MAX_INPUTS) {
            st = EM_FAIL(err, EM_ERR_UNSUPPORTED, "LORE: %s (%d) has more than %d inputs",
                         node->name, node->id, LORE_MAX_INPUTS);
            goto fail;
        }
    }
    if (attach && s->n_targets == 0) {
        em_lore_session_destroy(s); /* nothing of this fragment is selected */
        return EM_OK;
    }
    st = parse_columns(s, cols, err);
    for (int c = 0; st == EM_OK && c < s->n_columns && !attach; c++) {
        bool found = false;
        for (int i = 0; i < s->n_targets && !found; i++)
            found = node_has_column(s->targets[i].node, s->columns[c], s->dump_output);
        if (!found)
            st = EM_FAIL(err, EM_ERR_INVALID,
                         "spark.ember.sql.lore.columns: no selected operator reads a column "
                         "named %s",
                         s->columns[c]);
    }
    if (st == EM_OK)
        st = attach ? em_lore_mkdirs(path, err) : check_folder(s, path, err);
    if (st == EM_OK)
        st = em_plan_print(plan, NULL, &printed, NULL, err);
    for (int i = 0; st == EM_OK && i < s->n_targets; i++) {
        lore_target *t = &s->targets[i];
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/loreId-%d", path, t->lore_id);
        if (!(t->dir = strdup(dir)))
            st = EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
        if (st == EM_OK)
            st = em_lore_mkdirs(dir, err);
        if (st == EM_OK)
            st = write_plan_meta(s, t, printed, conf, err);
    }
    free(printed);
    if (st != EM_OK)
        goto fail;
    *out = s;
    return EM_OK;
fail:
    em_lore_session_destroy(s);
    return st;
}

em_status em_lore_session_create(const em_conf *conf, const em_plan *plan, const int *lore_ids,
                                 int n_lore_ids, em_lore_session **out, em_error *err) {
    return session_open(conf, plan, lore_ids, n_lore_ids, false, out, err);
}

em_status em_lore_session_attach(const em_conf *conf, const em_plan *plan, const int *lore_ids,
                                 int n_lore_ids, em_lore_session **out, em_error *err) {
    return session_open(conf, plan, lore_ids, n_lore_ids, true, out, err);
}

em_status em_lore_session_create_xp(const em_conf *conf, const em_exec_plan *xp,
                                    em_lore_session **out, em_error *err) {
    *out = NULL;
    const em_plan *plan = em_exec_plan_source(xp);
    int n = em_plan_max_id(plan) + 1;
    int *ids = malloc(sizeof *ids * (size_t)n);
    if (!ids)
        return EM_FAIL(err, EM_ERR_NOMEM, "LORE: out of memory");
    for (int i = 0; i < n; i++)
        ids[i] = -1;
    for (int i = 0; i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (d && d->node && d->node->id >= 0 && d->node->id < n)
            ids[d->node->id] = d->lore_id;
    }
    em_status s = em_lore_session_create(conf, plan, ids, n, out, err);
    free(ids);
    return s;
}

void em_lore_session_destroy(em_lore_session *s) {
    if (!s)
        return;
    for (int i = 0; i < s->n_targets; i++) {
        free(s->targets[i].dir);
        free(s->targets[i].subq);
    }
    free(s->targets);
    for (int i = 0; i < s->n_columns; i++)
        free(s->columns[i]);
    free(s->columns);
    free(s->lore_of);
    free(s->dump_path);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the folder's lock */
    em_lore_ids_reset(&s->ids);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int em_lore_session_id_of(const em_lore_session *s, const em_plan_node *node) {
    if (!s || !node || node->id < 0 || node->id >= s->n_lore)
        return -1;
    return s->lore_of[node->id];
}

int64_t em_lore_session_bytes(const em_lore_session *s) {
    return s ? atomic_load(&((em_lore_session *)s)->bytes) : 0;
}

int64_t em_lore_session_files(const em_lore_session *s) {
    return s ? atomic_load(&((em_lore_session *)s)->files) : 0;
}
