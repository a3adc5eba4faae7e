/* SPDX-License-Identifier: Apache-2.0 */
/*
 * em_fragment: a plan fragment handed over by an embedder (the Spark
 * plugin), and the tasks that run it.
 *
 * The task spec is the structured plan JSON (src/plan/plan_read.c) with
 * three more top-level members: "conf" (settings as text), "subqueries"
 * (scalar subquery values computed by the embedder before the tasks run)
 * and "loreIds". The fragment reads it once; tasks share it read-only.
 *
 * Every node of a fragment runs natively except its inputs, the boundary
 * nodes whose rows the embedder supplies: the embedder's planner (the
 * overrides on the driver) chose the fragment so. An input is a stream (this
 * task's partition of it: a Spark shuffle read, a fallback subtree) or a
 * broadcast (the whole relation, drained into memory on first use). Both
 * arrive as Arrow C streams; the task imports each array zero-copy and
 * keeps the current one until the next pull.
 *
 * Scans read the files the embedder lists per task: a PartitionedFile's byte
 * range selects the row groups whose midpoint falls inside it (Spark's
 * Parquet split rule), and Hive partition values become constant columns.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember/chunk.h"
#include "ember/lore.h"
#include "ember/overrides.h"
#include "ember/task.h"
#include "expr/internal.h"
#include "runtime/internal.h"
#include "runtime/task_internal.h"

typedef struct frag_subquery {
    int64_t expr_id;
    em_type type;
    bool is_null;
    bool is_int; /* an integer as it is stored (dates in days, timestamps in microseconds) */
    int64_t i;
    char *text; /* otherwise the value as text (em_ex_parse_literal's form), or the string itself */
} frag_subquery;

struct em_fragment {
    em_plan *plan;
    em_conf *conf;
    const em_plan_node *root;
    int n_inputs;
    const em_plan_node **inputs; /* by input_index */
    int n_scans;
    const em_plan_node **scans;
    int n_subqueries;
    frag_subquery *subqueries;
    bool ansi;
    const char *time_zone; /* borrowed from conf */
    bool map;              /* the root is an exchange: tasks write its map side */
    rt_partitioning part;  /* map: the exchange's partitioning (borrows the plan) */
    em_lore_session *lore; /* NULL unless an operator of this fragment is dumped */
    em_lore_build_ctx lore_build;
    /* runtime filters whose keys come from a broadcast input, by scan */
    int n_filters;
    em_runtime_filter *filters;
};

/* ------------------------------------------------------------ reading */

static em_status collect_nodes(em_fragment *f, const em_plan_node *n, em_error *err) {
    if (n->is_input) {
        if (n->input_index < 0 || n->input_index >= f->n_inputs || f->inputs[n->input_index])
            return EM_FAIL(err, EM_ERR_PARSE, "fragment: input %d of %s (%d) is out of order",
                           n->input_index, n->name ? n->name : "?", n->id);
        f->inputs[n->input_index] = n;
        return EM_OK;
    }
    if (n->kind == EM_NODE_SCAN) {
        const em_plan_node **ns = realloc(f->scans, sizeof *ns * (size_t)(f->n_scans + 1));
        if (!ns)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the fragment");
        f->scans = ns;
        f->scans[f->n_scans++] = n;
    }
    for (int i = 0; i < n->n_children; i++)
        EM_TRY(collect_nodes(f, n->children[i], err));
    return EM_OK;
}

static int count_inputs(const em_plan_node *n) {
    if (n->is_input)
        return n->input_index + 1;
    int m = 0;
    for (int i = 0; i < n->n_children; i++) {
        int k = count_inputs(n->children[i]);
        if (k > m)
            m = k;
    }
    return m;
}

/* A JSON scalar as text: strings as they are, numbers and booleans printed. */
static char *scalar_text(const json_t *v) {
    char buf[64];
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
    else
        return NULL;
    return strdup(buf);
}

static em_status read_conf(em_fragment *f, const json_t *conf, em_error *err) {
    EM_TRY(em_overrides_register_confs(err));
    EM_TRY(em_conf_create(&f->conf, err));
    if (!conf)
        return EM_OK;
    char *text = json_dumps(conf, JSON_COMPACT);
    if (!text)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the fragment's settings");
    em_status s = em_conf_set_json(f->conf, text, strlen(text), err);
    free(text);
    return s;
}

static em_status read_subqueries(em_fragment *f, const json_t *sq, em_error *err) {
    if (!sq)
        return EM_OK;
    if (!json_is_array(sq))
        return EM_FAIL(err, EM_ERR_PARSE, "fragment: \"subqueries\" is not an array");
    size_t n = json_array_size(sq);
    f->subqueries = calloc(n + 1, sizeof *f->subqueries);
    if (!f->subqueries)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the fragment");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(sq, i);
        const json_t *id = json_object_get(e, "exprId");
        const json_t *type = json_object_get(e, "type");
        const json_t *v = json_object_get(e, "value");
        frag_subquery *d = &f->subqueries[f->n_subqueries++];
        if (!json_is_integer(id) || !json_is_string(type))
            return EM_FAIL(err, EM_ERR_PARSE, "fragment: subqueries[%zu]: expected exprId and type",
                           i);
        d->expr_id = json_integer_value(id);
        const char *tt = json_string_value(type);
        if (em_type_parse(tt, strlen(tt), &d->type, NULL) != EM_OK)
            return EM_FAIL(err, EM_ERR_UNSUPPORTED, "fragment: subquery #%lld has type %s",
                           (long long)d->expr_id, tt);
        d->is_null = !v || json_is_null(v);
        d->is_int = json_is_integer(v);
        d->i = d->is_int ? json_integer_value(v) : 0;
        if (!d->is_null && !d->is_int && !(d->text = scalar_text(v)))
            return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                           "fragment: subquery #%lld: a value of this form is not read",
                           (long long)d->expr_id);
    }
    return EM_OK;
}

/* LORE inside the embedder's tasks: "loreIds" maps a node's source index to
 * the id the driver gave it; a session is opened when idsToDump selects one
 * of this fragment's operators (the embedder checked the dump folder). */
static em_status open_lore(em_fragment *f, const json_t *lore_ids, em_error *err) {
    const char *ids = em_conf_get_text(f->conf, "spark.ember.sql.lore.idsToDump");
    if (!ids || !*ids || !json_is_object(lore_ids))
        return EM_OK;
    int n = em_plan_max_id(f->plan) + 1;
    int *by_id = malloc(sizeof *by_id * (size_t)n);
    if (!by_id)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the fragment's LORE ids");
    for (int id = 0; id < n; id++) {
        const em_plan_node *node = em_plan_node_by_id(f->plan, id);
        char key[24];
        snprintf(key, sizeof key, "%d", node ? node->source_index : -1);
        const json_t *v = node ? json_object_get(lore_ids, key) : NULL;
        by_id[id] = json_is_integer(v) ? (int)json_integer_value(v) : -1;
    }
    em_status s = em_lore_session_attach(f->conf, f->plan, by_id, n, &f->lore, err);
    free(by_id);
    f->lore_build.session = f->lore;
    return s;
}

/* The runtime filters a task can apply by itself: their keys come from one
 * of its broadcast inputs (a filter needing another Spark stage first would
 * need Spark to schedule it so). */
static em_status plan_filters(em_fragment *f, em_error *err) {
    /* Inside Spark only when asked for: the rows a filter drops shrink the
     * exchanges AQE re-plans from, and TPC-DS v2.7 q14a on Spark 4.1 then
     * reused one exchange fewer than vanilla Spark (not understood yet) */
    bool on = false;
    if (em_conf_is_set(f->conf, "spark.ember.sql.runtimeFilter.enabled"))
        EM_TRY(em_conf_get_bool(f->conf, "spark.ember.sql.runtimeFilter.enabled", &on, err));
    if (!on)
        return EM_OK;
    em_runtime_filter *fs = NULL;
    int n = 0, kept = 0;
    EM_TRY(em_plan_runtime_filters(f->plan, f->root, &fs, &n, err));
    for (int i = 0; i < n; i++)
        if (fs[i].source->is_input && fs[i].source->input_broadcast)
            fs[kept++] = fs[i];
    if (kept == 0) {
        free(fs);
        return EM_OK;
    }
    em_runtime_filters_sort(fs, kept);
    f->filters = fs;
    f->n_filters = kept;
    return EM_OK;
}

em_status em_fragment_create(const char *json, size_t len, em_fragment **out, em_error *err) {
    *out = NULL;
    em_fragment *f = calloc(1, sizeof *f);
    if (!f)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the fragment");
    json_error_t je;
    json_t *doc = json_loadb(json, len, 0, &je);
    em_status s = doc ? EM_OK
                      : EM_FAIL(err, EM_ERR_PARSE, "fragment:%d:%d: %s", je.line, je.column,
                                je.text);
    if (s == EM_OK)
        s = read_conf(f, json_object_get(doc, "conf"), err);
    if (s == EM_OK)
        s = read_subqueries(f, json_object_get(doc, "subqueries"), err);
    if (s == EM_OK) {
        /* timestamp literals as text in the zone the task compiles them with */
        f->time_zone = em_conf_get_text(f->conf, "spark.sql.session.timeZone");
        em_plan_parse_options po = {.time_zone = f->time_zone ? f->time_zone : "UTC"};
        s = em_plan_read_json(json, len, &po, &f->plan, err);
    }
    if (s == EM_OK) {
        f->root = em_plan_exec_root(f->plan);
        f->n_inputs = f->root ? count_inputs(f->root) : 0;
        f->inputs = calloc((size_t)f->n_inputs + 1, sizeof *f->inputs);
        if (!f->root)
            s = EM_FAIL(err, EM_ERR_PARSE, "fragment: no root node");
        else if (!f->inputs)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading the fragment");
    }
    if (s == EM_OK) {
        em_plan_mark_order(f->plan, f->root);
        s = collect_nodes(f, f->root, err);
    }
    for (int i = 0; s == EM_OK && i < f->n_inputs; i++)
        if (!f->inputs[i])
            s = EM_FAIL(err, EM_ERR_PARSE, "fragment: input %d is missing", i);
    if (s == EM_OK && f->root->kind == EM_NODE_BROADCAST_EXCHANGE && !f->root->is_input) {
        /* a broadcast's map side: its whole output, in blocks */
        f->map = true;
        f->part.kind = RT_PART_SINGLE;
        f->part.n = 1;
    } else if (s == EM_OK && f->root->kind == EM_NODE_EXCHANGE && !f->root->is_input) {
        f->map = true;
        s = em_rt_partitioning_parse(f->root, &f->part, err);
        if (s == EM_OK && f->part.kind != RT_PART_HASH && f->part.kind != RT_PART_SINGLE)
            s = EM_FAIL(err, EM_ERR_UNSUPPORTED,
                        "fragment: the map side of a %s exchange is not written natively",
                        em_rt_part_kind_name(f->part.kind));
    }
    if (s == EM_OK)
        s = plan_filters(f, err);
    if (s == EM_OK)
        s = open_lore(f, json_object_get(doc, "loreIds"), err);
    if (s == EM_OK) {
        f->ansi = em_shim_ansi_default(em_plan_shim(f->plan));
        if (em_conf_is_set(f->conf, "spark.sql.ansi.enabled"))
            s = em_conf_get_bool(f->conf, "spark.sql.ansi.enabled", &f->ansi, err);
    }
    json_decref(doc);
    if (s != EM_OK) {
        em_fragment_destroy(f);
        return s;
    }
    *out = f;
    return EM_OK;
}

void em_fragment_destroy(em_fragment *f) {
    if (!f)
        return;
    for (int i = 0; i < f->n_subqueries; i++)
        free(f->subqueries[i].text);
    free(f->subqueries);
    free(f->inputs);
    free(f->scans);
    free(f->filters);
    em_lore_session_destroy(f->lore);
    em_conf_destroy(f->conf);
    em_plan_destroy(f->plan);
    free(f);
}

const em_plan *em_fragment_plan(const em_fragment *f) { return f->plan; }
int em_fragment_n_inputs(const em_fragment *f) { return f->n_inputs; }
bool em_fragment_input_is_broadcast(const em_fragment *f, int i) {
    return i >= 0 && i < f->n_inputs && f->inputs[i]->input_broadcast;
}
int em_fragment_n_scans(const em_fragment *f) { return f->n_scans; }
bool em_fragment_is_map(const em_fragment *f) { return f->map; }
int em_fragment_map_partitions(const em_fragment *f) { return f->map ? f->part.n : 0; }
int em_fragment_scan_source(const em_fragment *f, int i) {
    return i >= 0 && i < f->n_scans ? f->scans[i]->source_index : -1;
}

/* ------------------------------------------------------------ a task's inputs */

struct em_relation {
    em_batch_list list; /* owned batches */
    em_pool *pool;      /* charged for the batches and the objects derived from them */
    rt_shared *shared;  /* objects built once over the relation */
};

typedef struct frag_input {
    em_relation *relation;          /* borrowed: a broadcast held for many tasks, or NULL */
    struct ArrowArrayStream stream; /* owned; release NULL once released */
    struct ArrowSchema schema;      /* the stream's, read on first use */
    bool have_schema;
    em_batch *current;    /* the last batch handed out (stream inputs) */
    em_batch_list all;    /* broadcast inputs: every batch, read on first use */
    bool drained;
} frag_input;

typedef struct frag_scan {
    int n_splits;
    em_scan_split *splits;
} frag_scan;

/* A map task's rows kept per reduce partition until they make a block. */
typedef struct frag_map {
    rt_partitioner *pt;
    em_batch **kept;   /* per partition; NULL until a row comes */
    int64_t kept_rows; /* over every partition */
    int32_t *ids, *order;
    int64_t *counts;
    int64_t cap;       /* of ids and order */
    int flush_from;    /* the end: partitions still to flush from here */
    bool input_done;
    int64_t row_bytes; /* the rows given, sized as Spark's UnsafeRows */
} frag_map;

typedef struct frag_task {
    const em_fragment *f;
    frag_input *inputs;
    frag_scan *scans;
    char **strings; /* copies of paths and partition values */
    int n_strings, cap_strings;
    frag_map map;
    /* the fragment's runtime filters whose broadcast this task holds shared */
    int n_filters;
    em_runtime_filter *filters;
} frag_task;

/* Keeps a block the task frees when it ends (NULL stays NULL). */
static void *keep(frag_task *ft, void *p) {
    if (!p)
        return NULL;
    if (ft->n_strings == ft->cap_strings) {
        int cap = ft->cap_strings ? 2 * ft->cap_strings : 16;
        char **ns = realloc(ft->strings, sizeof *ns * (size_t)cap);
        if (!ns) {
            free(p);
            return NULL;
        }
        ft->strings = ns;
        ft->cap_strings = cap;
    }
    ft->strings[ft->n_strings++] = p;
    return p;
}

static const char *keep_string(frag_task *ft, const char *s) {
    return s ? keep(ft, strdup(s)) : NULL;
}

/* The task's own copies of a split's partition names and values. */
static em_status keep_partition_values(frag_task *ft, const em_file_split *src, em_scan_split *d,
                                       em_error *err) {
    int n = src->n_partition_values;
    if (n <= 0)
        return EM_OK;
    const char **names = keep(ft, calloc((size_t)n, sizeof *names));
    const char **values = keep(ft, calloc((size_t)n, sizeof *values));
    if (!names || !values)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
    for (int j = 0; j < n; j++) {
        if (!src->partition_names || !src->partition_names[j])
            return EM_FAIL(err, EM_ERR_INVALID, "%s: partition value %d has no column name",
                           src->path, j);
        names[j] = keep_string(ft, src->partition_names[j]);
        values[j] = keep_string(ft, src->partition_values[j]);
        if (!names[j] || (src->partition_values[j] && !values[j]))
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
    }
    d->n_partition_values = n;
    d->partition_names = names;
    d->partition_values = values;
    return EM_OK;
}

static frag_input *input_of(em_exec_ctx *ctx, const em_plan_node *node, em_error *err) {
    frag_task *ft = ctx->runtime;
    if (!node->is_input || node->input_index < 0 || node->input_index >= ft->f->n_inputs) {
        EM_FAIL(err, EM_ERR_INTERNAL, "%s (%d) is not an input of the fragment",
                node->name ? node->name : "?", node->id);
        return NULL;
    }
    return &ft->inputs[node->input_index];
}

/* The next batch of an input stream, imported zero-copy; EM_DONE at the end. */
static em_status input_pull(em_exec_ctx *ctx, const em_plan_node *node, frag_input *in,
                            em_batch **out, em_error *err) {
    *out = NULL;
    if (!in->stream.release)
        return EM_DONE;
    if (!in->have_schema) {
        int rc = in->stream.get_schema(&in->stream, &in->schema);
        if (rc != 0) {
            const char *m = in->stream.get_last_error ? in->stream.get_last_error(&in->stream)
                                                      : NULL;
            return EM_FAIL(err, EM_ERR_IO, "input %d (%s): %s", node->input_index,
                           node->name ? node->name : "?", m ? m : strerror(rc));
        }
        in->have_schema = true;
    }
    if (*ctx->cancel)
        return EM_FAIL(err, EM_ERR_CANCELLED, "cancelled");
    em_status s = em_arrow_stream_next_batch(&in->stream, &in->schema, ctx->pool, out, err);
    if (s != EM_OK && s != EM_DONE)
        em_error_prefix(err, "input %d (%s (%d))", node->input_index,
                        node->name ? node->name : "?", node->id);
    if (s != EM_OK)
        return s;
    /* the operators compiled against the node's output: the batch must match it */
    em_batch *b = *out;
    if (b->n_cols != node->n_output) {
        em_batch_destroy(b);
        *out = NULL;
        return EM_FAIL(err, EM_ERR_TYPE, "input %d (%s): %d columns, expected %d",
                       node->input_index, node->name ? node->name : "?", b->n_cols,
                       node->n_output);
    }
    for (int c = 0; c < b->n_cols; c++) {
        em_type want = node->output[c]->type;
        if (node->output[c]->type_known && !em_type_equal(b->cols[c].type, want)) {
            char a[48], w[48];
            em_type_format(b->cols[c].type, a, sizeof a);
            em_type_format(want, w, sizeof w);
            em_batch_destroy(b);
            *out = NULL;
            return EM_FAIL(err, EM_ERR_TYPE, "input %d (%s): column %s is %s, expected %s",
                           node->input_index, node->name ? node->name : "?",
                           node->output[c]->name ? node->output[c]->name : "?", a, w);
        }
    }
    return EM_OK;
}

static em_status cb_stream_open(em_exec_ctx *ctx, const em_plan_node *node, void **cursor,
                                em_error *err) {
    frag_input *in = input_of(ctx, node, err);
    if (!in)
        return err ? err->code : EM_ERR_INTERNAL;
    *cursor = (void *)node;
    return EM_OK;
}

static em_status cb_stream_next(em_exec_ctx *ctx, void *cursor, const em_batch **out,
                                em_error *err) {
    const em_plan_node *node = cursor;
    frag_input *in = input_of(ctx, node, err);
    if (!in)
        return err ? err->code : EM_ERR_INTERNAL;
    em_batch_destroy(in->current);
    in->current = NULL;
    em_status s = input_pull(ctx, node, in, &in->current, err);
    *out = in->current;
    return s;
}

static void cb_stream_close(em_exec_ctx *ctx, void *cursor) {
    (void)ctx;
    (void)cursor;
}

static em_status cb_broadcast(em_exec_ctx *ctx, const em_plan_node *node,
                              const em_batch_list **out, em_error *err) {
    frag_input *in = input_of(ctx, node, err);
    if (!in)
        return err ? err->code : EM_ERR_INTERNAL;
    if (in->relation) {
        const em_batch_list *l = &in->relation->list;
        for (int c = 0; l->n_batches > 0 && c < node->n_output; c++) {
            const em_batch *b = l->batches[0];
            if (b->n_cols != node->n_output ||
                (node->output[c]->type_known && !em_type_equal(b->cols[c].type, node->output[c]->type)))
                return EM_FAIL(err, EM_ERR_TYPE,
                               "broadcast input %d (%s): the relation's columns do not match the "
                               "plan's output",
                               node->input_index, node->name ? node->name : "?");
        }
        *out = l;
        return EM_OK;
    }
    while (!in->drained) {
        em_batch *b = NULL;
        em_status s = input_pull(ctx, node, in, &b, err);
        if (s == EM_DONE) {
            in->drained = true;
            break;
        }
        if (s != EM_OK)
            return s;
        em_batch **nb = realloc(in->all.batches, sizeof *nb * (size_t)(in->all.n_batches + 1));
        if (!nb) {
            em_batch_destroy(b);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading broadcast input %d",
                           node->input_index);
        }
        in->all.batches = nb;
        in->all.batches[in->all.n_batches++] = b;
        in->all.n_rows += em_batch_rows(b);
    }
    *out = &in->all;
    return EM_OK;
}

/* A hash join's table over a broadcast held for many tasks: built once,
 * by the first task asking. */
static em_status cb_broadcast_shared(em_exec_ctx *ctx, const em_plan_node *node, const char *what,
                                     rt_shared_build_fn build, void (*free_obj)(void *obj),
                                     void *arg, void **out, em_error *err) {
    frag_input *in = input_of(ctx, node, err);
    if (!in)
        return err ? err->code : EM_ERR_INTERNAL;
    if (!in->relation)
        return EM_FAIL(err, EM_ERR_INTERNAL, "input %d is not a shared relation",
                       node->input_index);
    char name[96];
    snprintf(name, sizeof name, "broadcast input %d (%s)", node->input_index,
             node->name ? node->name : "?");
    bool built = false;
    return em_rt_shared_get(in->relation->shared, in->relation, name, what, &in->relation->list,
                         build, free_obj, arg, ctx->cancel, out, &built, err);
}

static int cb_runtime_filters(em_exec_ctx *ctx, const em_plan_node *scan,
                              const em_runtime_filter **out) {
    const frag_task *ft = ctx->runtime;
    return em_runtime_filters_of(ft->filters, ft->n_filters, scan, out);
}

static em_status cb_scan_splits(em_exec_ctx *ctx, const em_plan_node *scan,
                                const em_scan_split **out, int *n_out, em_error *err) {
    frag_task *ft = ctx->runtime;
    for (int i = 0; i < ft->f->n_scans; i++)
        if (ft->f->scans[i] == scan) {
            *out = ft->scans[i].splits;
            *n_out = ft->scans[i].n_splits;
            return EM_OK;
        }
    return EM_FAIL(err, EM_ERR_INTERNAL, "%s (%d) is not a scan of the fragment",
                   scan->name ? scan->name : "?", scan->id);
}

static em_status cb_subquery(void *vf, const em_expr *e, em_type type, em_pool *pool,
                             em_column *out, em_error *err) {
    const em_fragment *f = vf;
    const char *what = e->name ? e->name : "scalar subquery";
    if (e->kind != EM_EXPR_SCALAR_SUBQUERY)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s: only whole scalar subquery values are "
                       "handed over", what);
    for (int i = 0; i < f->n_subqueries; i++) {
        const frag_subquery *d = &f->subqueries[i];
        if (d->expr_id != e->id)
            continue;
        if (!em_type_equal(d->type, type)) {
            char a[48], w[48];
            em_type_format(d->type, a, sizeof a);
            em_type_format(type, w, sizeof w);
            return EM_FAIL(err, EM_ERR_TYPE, "%s: Spark computed a %s, the plan expects %s", what,
                           a, w);
        }
        if (!d->is_null && (type.id == EM_TYPE_STRING || type.id == EM_TYPE_BINARY)) {
            EM_TRY(em_column_init(out, type, 1, pool, err));
            return em_column_append_bytes(out, d->text, (int32_t)strlen(d->text), err);
        }
        ex_value v;
        memset(&v, 0, sizeof v);
        v.null = d->is_null;
        if (d->is_int && type.id != EM_TYPE_DECIMAL && type.id != EM_TYPE_FLOAT &&
            type.id != EM_TYPE_DOUBLE)
            v.i = d->i;
        else if (!d->is_null) {
            char num[32];
            if (d->is_int)
                snprintf(num, sizeof num, "%lld", (long long)d->i);
            EM_TRY(em_ex_parse_literal(d->is_int ? num : d->text, type, &v, err));
        }
        EM_TRY(em_ex_col_alloc(out, type, 1, pool, err));
        em_ex_put_fixed(out, 0, &v);
        return EM_OK;
    }
    return EM_FAIL(err, EM_ERR_INTERNAL, "%s: its value was not handed over", what);
}

static void map_free(frag_map *m, int n) {
    for (int i = 0; m->kept && i < n; i++)
        em_batch_destroy(m->kept[i]);
    free(m->kept);
    free(m->ids);
    free(m->order);
    free(m->counts);
    em_rt_partitioner_free(m->pt);
    memset(m, 0, sizeof *m);
}

static void frag_task_free(em_task *t) {
    frag_task *ft = t->ctx.runtime;
    if (!ft)
        return;
    map_free(&ft->map, ft->f->part.n);
    for (int i = 0; ft->inputs && i < ft->f->n_inputs; i++) {
        frag_input *in = &ft->inputs[i];
        em_batch_destroy(in->current);
        for (int64_t b = 0; b < in->all.n_batches; b++)
            em_batch_destroy(in->all.batches[b]);
        free(in->all.batches);
        if (in->have_schema && in->schema.release)
            in->schema.release(&in->schema);
        if (in->stream.release)
            in->stream.release(&in->stream);
    }
    for (int i = 0; ft->scans && i < ft->f->n_scans; i++)
        free(ft->scans[i].splits);
    for (int i = 0; i < ft->n_strings; i++)
        free(ft->strings[i]);
    free(ft->strings);
    free(ft->scans);
    free(ft->inputs);
    free(ft);
    t->ctx.runtime = NULL;
}

em_status em_fragment_task_create(const em_fragment *f, const em_fragment_task_inputs *in,
                                  em_task **out, em_error *err) {
    *out = NULL;
    frag_task *ft = calloc(1, sizeof *ft);
    if (!ft)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
    ft->f = f;
    ft->inputs = calloc((size_t)f->n_inputs + 1, sizeof *ft->inputs);
    ft->scans = calloc((size_t)f->n_scans + 1, sizeof *ft->scans);
    em_status s = ft->inputs && ft->scans
                      ? EM_OK
                      : EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
    /* the streams first: moved in whatever happens next, so the caller never
     * releases them twice */
    bool shared = false;
    for (int i = 0; ft->inputs && i < f->n_inputs; i++) {
        struct ArrowArrayStream *src = in->streams ? in->streams[i] : NULL;
        em_relation *rel = in->relations ? in->relations[i] : NULL;
        if (src && src->release) {
            ft->inputs[i].stream = *src;
            src->release = NULL;
        }
        if (rel && f->inputs[i]->input_broadcast) {
            ft->inputs[i].relation = rel;
            shared = true;
        } else if (!ft->inputs[i].stream.release && s == EM_OK) {
            s = EM_FAIL(err, EM_ERR_INVALID, "fragment task: no stream for input %d", i);
        }
    }
    for (int i = 0; s == EM_OK && i < f->n_scans; i++) {
        int n = in->n_splits ? in->n_splits[i] : 0;
        frag_scan *sc = &ft->scans[i];
        sc->splits = calloc((size_t)n + 1, sizeof *sc->splits);
        if (!sc->splits) {
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
            break;
        }
        for (int k = 0; s == EM_OK && k < n; k++) {
            const em_file_split *src = &in->splits[i][k];
            em_scan_split *d = &sc->splits[sc->n_splits++];
            d->path = keep_string(ft, src->path);
            d->first_row_group = 0;
            d->end_row_group = -1;
            d->byte_start = src->start;
            d->byte_length = src->length;
            if (!d->path)
                s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
            else
                s = keep_partition_values(ft, src, d, err);
        }
    }
    em_task_options o;
    memset(&o, 0, sizeof o);
    char name[64];
    snprintf(name, sizeof name, "task %d", in->partition);
    o.name = name;
    o.native_budget = in->native_budget;
    o.row_budget = -1;
    o.root = f->root;
    if (f->lore) { /* built with the dump operators in place */
        o.build = em_lore_exec_build;
        o.build_ctx = (void *)&f->lore_build;
    }
    o.ctx.partition = in->partition;
    o.ctx.num_partitions = in->num_partitions;
    o.ctx.expr_opts.ansi = f->ansi;
    o.ctx.expr_opts.shim = em_plan_shim(f->plan);
    o.ctx.expr_opts.time_zone = f->time_zone;
    o.ctx.expr_opts.subquery = cb_subquery;
    o.ctx.expr_opts.subquery_ctx = (void *)f;
    o.ctx.spill_dir = in->spill_dir ? keep_string(ft, in->spill_dir) : NULL; /* the caller's may go */
    o.ctx.scan_splits = cb_scan_splits;
    o.ctx.splits_pruned = true;
    o.ctx.shuffle_stream_open = cb_stream_open;
    o.ctx.shuffle_stream_next = cb_stream_next;
    o.ctx.shuffle_stream_close = cb_stream_close;
    o.ctx.broadcast_input = cb_broadcast;
    o.ctx.broadcast_shared = shared ? cb_broadcast_shared : NULL;
    if (s == EM_OK && shared && f->n_filters > 0) {
        ft->filters = keep(ft, malloc(sizeof *ft->filters * (size_t)f->n_filters));
        if (!ft->filters)
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating a fragment task");
        for (int i = 0; s == EM_OK && i < f->n_filters; i++)
            if (ft->inputs[f->filters[i].source->input_index].relation)
                ft->filters[ft->n_filters++] = f->filters[i];
        o.ctx.runtime_filters = cb_runtime_filters;
    }
    o.ctx.runtime = ft;
    em_task *t = NULL;
    if (s == EM_OK)
        s = em_task_create(&o, &t, err);
    if (s != EM_OK) {
        em_task tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.ctx.runtime = ft;
        frag_task_free(&tmp);
        return s;
    }
    t->on_destroy = frag_task_free;
    *out = t;
    return EM_OK;
}

/* ------------------------------------------------------------ the map side */

/* Rows kept over all partitions before every partition is flushed, whatever
 * its size: bounds a map task's memory with many partitions. */
#define MAP_KEEP_ROWS ((int64_t)64 * EM_BATCH_CAP)

static em_status map_block(frag_map *m, int p, em_strbuf *out, em_error *err) {
    em_batch *b = m->kept[p];
    int64_t n = b ? b->n_rows : 0;
    if (n == 0)
        return EM_OK;
    int32_t *iota = malloc(sizeof *iota * (size_t)n);
    if (!iota)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory writing a shuffle block");
    for (int64_t i = 0; i < n; i++)
        iota[i] = (int32_t)i;
    size_t at = out->len;
    /* the rows ride in the record: the host counts them (its statistics) without
     * reading the block */
    int32_t rec[3] = {p, (int32_t)n, 0};
    em_status s = em_strbuf_append(out, rec, sizeof rec, err);
    if (s == EM_OK)
        s = em_block_append(b, iota, n, out, err);
    free(iota);
    if (s != EM_OK)
        return s;
    rec[2] = (int32_t)(out->len - at - sizeof rec);
    memcpy(out->data + at, rec, sizeof rec);
    m->kept_rows -= n;
    em_batch_destroy(b); /* its memory back to the task's pool */
    m->kept[p] = NULL;
    return EM_OK;
}

/* Bytes a batch's buffers hold. */
static int64_t batch_bytes(const em_batch *b) {
    int64_t n = 0;
    for (int c = 0; c < b->n_cols; c++) {
        const em_column *col = &b->cols[c];
        n += (col->validity ? col->validity->size : 0) + (col->values ? col->values->size : 0) +
             (col->data ? col->data->size : 0);
    }
    return n;
}

/* Whether the task's pool can take about twice b's bytes more: otherwise
 * the rows kept per partition are written out first (a budget Spark sets
 * bounds what a map task keeps). */
static bool map_room(em_task *t, const em_batch *b) {
    int64_t need = 2 * batch_bytes(b);
    em_error ignored;
    if (em_pool_reserve(t->ctx.pool, need, &ignored) != EM_OK)
        return false;
    em_pool_release(t->ctx.pool, need);
    return true;
}

/* What b's present rows would take as Spark's UnsafeRows: a null bitmap of
 * 64-bit words and a word per field, then each variable-length value
 * (strings, binary) rounded up to a word, and 16 bytes per decimal over 18
 * digits (UnsafeRowWriter reserves them for a null one too). Spark's exchange reports that as its data size, and AQE's
 * decisions (a broadcast instead of a shuffle join) compare it with their
 * thresholds, so Ember's shuffle reports the same, not its compact blocks. */
static int64_t unsafe_row_bytes(const em_batch *b) {
    int64_t n = em_batch_rows(b);
    int64_t total = n * 8 * ((b->n_cols + 63) / 64 + b->n_cols);
    for (int c = 0; c < b->n_cols; c++) {
        const em_column *col = &b->cols[c];
        if (col->type.id == EM_TYPE_DECIMAL && col->type.precision > 18) {
            total += 16 * n;
            continue;
        }
        if (!em_type_is_varlen(col->type))
            continue;
        const int32_t *off = em_column_offsets(col);
        for (int64_t k = 0; k < n; k++) {
            int64_t r = b->sel ? b->sel[k] : k;
            total += (off[r + 1] - off[r] + 7) & ~(int64_t)7;
        }
    }
    return total;
}

/* Keeps b's present rows in their partitions' batches. */
static em_status map_keep(frag_task *ft, em_task *t, const em_batch *b, em_error *err) {
    frag_map *m = &ft->map;
    int np = ft->f->part.n;
    int64_t n = em_batch_rows(b);
    if (n > m->cap) {
        int32_t *ni = realloc(m->ids, sizeof *ni * (size_t)n);
        if (ni)
            m->ids = ni;
        int32_t *no = ni ? realloc(m->order, sizeof *no * (size_t)n) : NULL;
        if (no)
            m->order = no;
        if (!ni || !no)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory partitioning a batch");
        m->cap = n;
    }
    EM_TRY(em_rt_partitioner_ids(m->pt, b, m->ids, err));
    /* a counting sort of the present rows by partition */
    memset(m->counts, 0, sizeof *m->counts * (size_t)(np + 1));
    for (int64_t k = 0; k < n; k++)
        m->counts[m->ids[k] + 1]++;
    for (int r = 0; r < np; r++)
        m->counts[r + 1] += m->counts[r];
    for (int64_t k = 0; k < n; k++)
        m->order[m->counts[m->ids[k]]++] = b->sel ? b->sel[k] : (int32_t)k;
    int64_t start = 0;
    for (int p = 0; p < np; p++) {
        int64_t end = m->counts[p];
        if (end == start)
            continue;
        if (!m->kept[p])
            EM_TRY(em_batch_create(&b->schema, end - start, t->ctx.pool, &m->kept[p], err));
        em_batch *k = m->kept[p];
        for (int c = 0; c < b->n_cols; c++)
            EM_TRY(em_column_append_rows(&k->cols[c], &b->cols[c], m->order + start,
                                         end - start, err));
        k->n_rows += end - start;
        m->kept_rows += end - start;
        start = end;
    }
    return EM_OK;
}

em_status em_task_map_next(em_task *t, em_strbuf *out, int64_t target, em_error *err) {
    frag_task *ft = t->ctx.runtime;
    if (!ft || !ft->f->map)
        return EM_FAIL(err, EM_ERR_INVALID, "%s: not the map side of an exchange", t->name);
    frag_map *m = &ft->map;
    int np = ft->f->part.n;
    if (!t->opened)
        EM_TRY(em_task_open(t, err));
    if (!m->kept) {
        const em_op *op = em_task_op(t);
        m->kept = calloc((size_t)np, sizeof *m->kept);
        m->counts = calloc((size_t)np + 1, sizeof *m->counts);
        if (!m->kept || !m->counts)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory starting a map task");
        EM_TRY(em_rt_partitioner_create(&ft->f->part, (const em_expr *const *)op->output,
                                     op->n_output, &t->ctx.expr_opts, t->ctx.partition, &m->pt,
                                     err));
    }
    size_t start = out->len;
    while (out->len == start || (int64_t)(out->len - start) < target) {
        if (m->input_done) {
            /* the end: every partition's rest, a block per call round */
            while (m->flush_from < np && (!m->kept[m->flush_from] ||
                                          m->kept[m->flush_from]->n_rows == 0))
                m->flush_from++;
            if (m->flush_from == np)
                return out->len > start ? EM_OK : EM_DONE;
            EM_TRY(map_block(m, m->flush_from, out, err));
            continue;
        }
        em_batch *b = NULL;
        em_status s = em_task_next(t, &b, err);
        if (s == EM_DONE) {
            m->input_done = true;
            continue;
        }
        if (s != EM_OK)
            return s;
        m->row_bytes += unsafe_row_bytes(b);
        bool all = m->kept_rows > 0 && !map_room(t, b);
        for (int p = 0; all && p < np; p++)
            EM_TRY(map_block(m, p, out, err));
        EM_TRY(map_keep(ft, t, b, err));
        all = m->kept_rows >= MAP_KEEP_ROWS;
        for (int p = 0; p < np; p++)
            if (m->kept[p] && (all || m->kept[p]->n_rows >= EM_BATCH_CAP))
                EM_TRY(map_block(m, p, out, err));
    }
    return EM_OK;
}

int em_task_map_partitions(const em_task *t) {
    const frag_task *ft = t->ctx.runtime;
    return ft && ft->f->map ? ft->f->part.n : 0;
}

int64_t em_task_map_row_bytes(const em_task *t) {
    const frag_task *ft = t->ctx.runtime;
    return ft && ft->f->map ? ft->map.row_bytes : 0;
}

bool em_rt_task_map_flushing(const em_task *t) {
    const frag_task *ft = t->ctx.runtime;
    return ft && ft->map.input_done;
}

/* ------------------------------------------------------------ relations */

/* An empty relation: its own unbounded pool (a broadcast is held once per executor,
 * outside any task's budget) and the shared state its hash tables are built into. */
static em_status relation_new(em_relation **out, em_error *err) {
    em_relation *r = calloc(1, sizeof *r);
    em_status s = r ? EM_OK : EM_FAIL(err, EM_ERR_NOMEM, "out of memory holding a broadcast");
    if (s == EM_OK && !(r->pool = em_pool_create("broadcast relation", NULL, -1)))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory holding a broadcast");
    if (s == EM_OK)
        s = em_rt_shared_create(r->pool, (int)sysconf(_SC_NPROCESSORS_ONLN), &r->shared, err);
    *out = r;
    return s;
}

em_status em_relation_create(struct ArrowArrayStream *stream, em_relation **out, em_error *err) {
    *out = NULL;
    struct ArrowArrayStream st = *stream;
    stream->release = NULL;
    em_relation *r = NULL;
    em_status s = relation_new(&r, err);
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof schema);
    if (s == EM_OK && st.get_schema(&st, &schema) != 0) {
        const char *m = st.get_last_error ? st.get_last_error(&st) : NULL;
        s = EM_FAIL(err, EM_ERR_IO, "broadcast: %s", m ? m : "no schema");
    }
    while (s == EM_OK) {
        em_batch *b = NULL;
        s = em_arrow_stream_next_batch(&st, &schema, r->pool, &b, err);
        if (s == EM_DONE) {
            s = EM_OK;
            break;
        }
        if (s != EM_OK)
            break;
        em_batch **nb = realloc(r->list.batches, sizeof *nb * (size_t)(r->list.n_batches + 1));
        if (!nb) {
            em_batch_destroy(b);
            s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory holding a broadcast");
            break;
        }
        r->list.batches = nb;
        r->list.batches[r->list.n_batches++] = b;
        r->list.n_rows += em_batch_rows(b);
    }
    if (schema.release)
        schema.release(&schema);
    if (st.release)
        st.release(&st);
    if (s != EM_OK) {
        em_relation_destroy(r);
        return s;
    }
    *out = r;
    return EM_OK;
}

static bool same_types(const em_batch *a, const em_batch *b) {
    if (a->n_cols != b->n_cols)
        return false;
    for (int c = 0; c < a->n_cols; c++)
        if (!em_type_equal(a->cols[c].type, b->cols[c].type))
            return false;
    return true;
}

em_status em_relation_from_blocks(const uint8_t *const *blocks, const int64_t *lens, int n,
                                  em_relation **out, em_error *err) {
    *out = NULL;
    em_relation *r = NULL;
    em_status s = relation_new(&r, err);
    if (s == EM_OK && !(r->list.batches = calloc((size_t)n + 1, sizeof *r->list.batches)))
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory holding a broadcast");
    for (int i = 0; s == EM_OK && i < n; i++) {
        em_batch *b = NULL;
        char what[48];
        snprintf(what, sizeof what, "broadcast block %d", i);
        s = em_block_read(blocks[i], lens[i], r->pool, &b, what, err);
        if (s == EM_OK && r->list.n_batches > 0 && !same_types(b, r->list.batches[0]))
            s = EM_FAIL(err, EM_ERR_CORRUPT, "%s: its columns differ from the first block's", what);
        if (s != EM_OK) {
            em_batch_destroy(b);
            break;
        }
        if (b->n_rows == 0) {
            em_batch_destroy(b);
            continue;
        }
        r->list.batches[r->list.n_batches++] = b;
        r->list.n_rows += b->n_rows;
    }
    if (s != EM_OK) {
        em_relation_destroy(r);
        return s;
    }
    *out = r;
    return EM_OK;
}

int64_t em_relation_rows(const em_relation *r) { return r ? r->list.n_rows : 0; }
int64_t em_relation_bytes(const em_relation *r) { return r ? em_pool_used(r->pool) : 0; }

void em_relation_destroy(em_relation *r) {
    if (!r)
        return;
    em_rt_shared_destroy(r->shared); /* the derived objects first: they borrow the batches */
    for (int64_t i = 0; i < r->list.n_batches; i++)
        em_batch_destroy(r->list.batches[i]);
    free(r->list.batches);
    em_pool_destroy(r->pool);
    free(r);
}
