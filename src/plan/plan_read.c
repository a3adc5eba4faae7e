/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structured plan (JSON) -> em_plan: the same model em_plan_parse builds from
 * EXPLAIN FORMATTED text, typed by the same rules.
 *
 * The Spark plugin (spark/.../PlanJson.scala) writes Spark's physical plan
 * objects generically: every node as {"class", "id" (pre-order), "name"
 * (nodeName), "output", "fields" (constructor fields, children as {"child":
 * i}, other plans as {"plan": node}), "children"}, every expression as in
 * plan_read_expr.c. Nothing in it knows Ember; this reader decides what each
 * class becomes, by reproducing what Spark's ExplainUtils would print for it
 * and building what the text parser builds from that print:
 *
 *   tree      WholeStageCodegenExec and InputAdapter are not operators: they
 *             fold away, marking the nodes between a WholeStageCodegen and
 *             the next InputAdapter whole_stage ("* "). Codegen ids follow
 *             ExplainUtils.generateWholeStageCodegenIds: ONE variable along a
 *             pre-order walk, set by each WholeStageCodegen and cleared by
 *             each InputAdapter, so nodes after a build side's InputAdapter in
 *             the same stage print no "[codegen id : K]" (as Spark's do).
 *   ids       ExplainUtils.generateOperatorIDs: post-order over the main tree,
 *             then over each subquery's tree in the order getSubqueries finds
 *             them (pre-order over operators, each operator's expressions in
 *             constructor order, each expression pre-order, a subquery's own
 *             subqueries right after it), then trees only a ReusedExchange
 *             points at.
 *   labels    the tree line is simpleStringWithNodeId (joins add the join type
 *             and build side), the detail header is nodeName; both are split
 *             into name and arguments exactly as plan_parse.c splits them.
 *   fields    per operator as its verboseStringWithOperatorId prints them
 *             (node_fields): Output/Input lists, Condition, aggregate lists,
 *             join keys and condition, the scan's metadata (Batched from the
 *             ColumnarToRow above it, Location from the root paths,
 *             PartitionFilters, PushedFilters, ReadSchema), and "Arguments"
 *             for the rest: TreeNode.argString over the constructor fields
 *             (children, None and empty sequences omitted; an exchange adds
 *             its [plan_id=N]; limits drop a zero offset; LocalTableScan
 *             prints "<empty>").
 *   inputs    a node with "input": k is a fragment's boundary: no children,
 *             is_input, input_index k, its output given by the JSON (typed
 *             from Spark's types; em_plan_infer keeps it). Query stages are
 *             written without their plans and become leaves the same way;
 *             so do operators of classes this reader does not know, kind
 *             EM_NODE_UNKNOWN unless their printed name is one the text
 *             parser knows (then its kind, as "Scan <x>" is a scan), with
 *             the detail fields their arity gives (LeafExecNode: Output,
 *             UnaryExecNode: Input, BinaryExecNode: Left/Right output) and
 *             Arguments.
 *   classes   by simple class name (exec_classes): FileSourceScanExec ->
 *             "Scan <format> [table]", ShuffleExchangeExec -> "Exchange",
 *             ...; SubqueryExec, ReusedSubqueryExec and SubqueryBroadcastExec
 *             are not operators of the model (a subquery's tree is its child,
 *             ReusedSubquery has none), ReusedExchangeExec's exchange is found
 *             among the nodes read by comparing JSON (the writer copies it),
 *             AdaptiveSparkPlanExec's child is its inputPlan.
 *
 * What the JSON cannot say is filled as documented on the way: Spark's plan
 * ids ([plan_id=N], [id=#N]) are not constructor fields, so the JSON node id
 * stands for them; the session time zone comes from the first timeZoneId in
 * the plan (else UTC); a scan's Batched (supportsColumnar) from the
 * ColumnarToRow above it; a query stage's statistics are not printed; an
 * adaptive plan is taken as not final.
 *
 * Errors: EM_ERR_PARSE naming the JSON path ("plan.root.children[1]
 * (FilterExec).fields.condition: expected an expression object"); invalid
 * JSON gives jansson's line and column. Nesting is bounded, everything is
 * allocated in the plan's arena (index arrays on the heap, freed here), and
 * a failed read frees the plan.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ember/tz.h"
#include "plan/internal.h"

/* The most detail fields one operator gets: a scan's Output, Batched, Location,
 * PartitionFilters, PushedFilters, ReadSchema. */
#define READ_MAX_FIELDS 8

/* A JSON plan node read into the model. */
typedef struct node_map {
    json_t *j;
    em_plan_node *node;
} node_map;

/* A subquery as ExplainUtils.getSubqueries finds it. */
typedef struct sq_found {
    json_t *host;  /* the hosting operator's JSON node */
    json_t *expr;  /* the PlanExpression */
    json_t *plan;  /* its subquery node (SubqueryExec, ReusedSubqueryExec, ...) */
} sq_found;

typedef struct read_ctx {
    plan_reader rd;
    node_map *map; /* heap */
    int n_map, cap_map;
    sq_found *sqs; /* heap */
    int n_sqs, cap_sqs;
    em_plan_node **trees; /* roots to number after the main tree: subqueries, orphans (heap) */
    int n_trees, cap_trees;
    int codegen;   /* ExplainUtils' current codegen stage id, -1 when none */
    int next_id;   /* last operator id given */
} read_ctx;

/* ------------------------------------------------------------------ small helpers */

/* Room for `need` items of `size` bytes in a heap array of capacity *cap: the array
 * (moved when grown), or NULL when out of memory (the old array is kept). */
static void *grow(void *items, int *cap, int need, size_t size) {
    if (need <= *cap)
        return items;
    int cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(items, (size_t)cap2 * size);
    if (p)
        *cap = cap2;
    return p;
}

static const char *arena_str(read_ctx *c, const char *s, size_t n) {
    char *d = em_plan_arena_strndup(&c->rd.plan->arena, s, n);
    if (!d)
        em_plan_read_nomem(&c->rd);
    return d;
}

static em_plan_node *new_node(read_ctx *c) {
    em_plan_node *n = em_plan_arena_alloc(&c->rd.plan->arena, sizeof *n);
    if (!n)
        return em_plan_read_nomem(&c->rd);
    memset(n, 0, sizeof *n);
    n->codegen_id = -1;
    n->reuses_id = -1;
    n->source_index = -1;
    return n;
}

static em_plan_node *map_find(read_ctx *c, const json_t *j) {
    for (int i = 0; i < c->n_map; i++)
        if (c->map[i].j == j)
            return c->map[i].node;
    return NULL;
}

static bool map_add(read_ctx *c, json_t *j, em_plan_node *node) {
    node_map *m = grow(c->map, &c->cap_map, c->n_map + 1, sizeof *c->map);
    if (!m) {
        em_plan_read_nomem(&c->rd);
        return false;
    }
    c->map = m;
    c->map[c->n_map++] = (node_map){j, node};
    return true;
}

static bool tree_add(read_ctx *c, em_plan_node *root) {
    em_plan_node **t = grow(c->trees, &c->cap_trees, c->n_trees + 1, sizeof *c->trees);
    if (!t) {
        em_plan_read_nomem(&c->rd);
        return false;
    }
    c->trees = t;
    c->trees[c->n_trees++] = root;
    return true;
}

static const char *node_class(const json_t *j) { return em_plan_read_class(j); }

/* ------------------------------------------------------------------ classes and names */

static const struct {
    const char *cls;
    em_node_kind kind;
} exec_classes[] = {
    {"FileSourceScanExec", EM_NODE_SCAN},
    {"ColumnarToRowExec", EM_NODE_COLUMNAR_TO_ROW},
    {"RowToColumnarExec", EM_NODE_ROW_TO_COLUMNAR},
    {"FilterExec", EM_NODE_FILTER},
    {"ProjectExec", EM_NODE_PROJECT},
    {"HashAggregateExec", EM_NODE_HASH_AGGREGATE},
    {"SortAggregateExec", EM_NODE_SORT_AGGREGATE},
    {"ObjectHashAggregateExec", EM_NODE_OBJECT_HASH_AGGREGATE},
    {"ShuffleExchangeExec", EM_NODE_EXCHANGE},
    {"BroadcastExchangeExec", EM_NODE_BROADCAST_EXCHANGE},
    {"ReusedExchangeExec", EM_NODE_REUSED_EXCHANGE},
    {"BroadcastHashJoinExec", EM_NODE_BROADCAST_HASH_JOIN},
    {"SortMergeJoinExec", EM_NODE_SORT_MERGE_JOIN},
    {"ShuffledHashJoinExec", EM_NODE_SHUFFLED_HASH_JOIN},
    {"BroadcastNestedLoopJoinExec", EM_NODE_BROADCAST_NESTED_LOOP_JOIN},
    {"CartesianProductExec", EM_NODE_CARTESIAN_PRODUCT},
    {"SortExec", EM_NODE_SORT},
    {"TakeOrderedAndProjectExec", EM_NODE_TAKE_ORDERED_AND_PROJECT},
    {"CollectLimitExec", EM_NODE_COLLECT_LIMIT},
    {"GlobalLimitExec", EM_NODE_GLOBAL_LIMIT},
    {"LocalLimitExec", EM_NODE_LOCAL_LIMIT},
    {"UnionExec", EM_NODE_UNION},
    {"ExpandExec", EM_NODE_EXPAND},
    {"WindowExec", EM_NODE_WINDOW},
    {"WindowGroupLimitExec", EM_NODE_WINDOW_GROUP_LIMIT},
    {"LocalTableScanExec", EM_NODE_LOCAL_TABLE_SCAN},
    {"SubqueryExec", EM_NODE_SUBQUERY},
    {"ReusedSubqueryExec", EM_NODE_REUSED_SUBQUERY},
    {"AdaptiveSparkPlanExec", EM_NODE_ADAPTIVE_SPARK_PLAN},
    {"CoalesceExec", EM_NODE_COALESCE},
    {"GenerateExec", EM_NODE_GENERATE},
    {"ShuffleQueryStageExec", EM_NODE_SHUFFLE_QUERY_STAGE},
    {"BroadcastQueryStageExec", EM_NODE_BROADCAST_QUERY_STAGE},
    {"AQEShuffleReadExec", EM_NODE_AQE_SHUFFLE_READ},
};

/*
 * Name and label arguments from a tree label, as plan_parse.c splits them: the
 * first word ("Scan <format>" takes two), then the rest after one space. The
 * detail header (nodeName) gives header_args the same way.
 */
static bool set_labels(read_ctx *c, em_plan_node *n, const char *label, const char *node_name,
                       bool kind_from_name) {
    while (*label == ' ')
        label++; /* simpleStringWithNodeId trims */
    size_t len = strlen(label), name1 = 0;
    while (name1 < len && label[name1] != ' ')
        name1++;
    bool scan = false;
    if (name1 == 4 && memcmp(label, "Scan", 4) == 0 && name1 < len) {
        name1++;
        while (name1 < len && label[name1] != ' ')
            name1++;
        scan = true;
    }
    if (!(n->name = arena_str(c, label, name1)))
        return false;
    if (kind_from_name) {
        n->kind = scan ? EM_NODE_SCAN : em_plan_node_kind_named(n->name, strlen(n->name));
    }
    if (name1 < len && !(n->label_args = arena_str(c, label + name1 + 1, len - name1 - 1)))
        return false;
    size_t nn = strlen(n->name), hn = strlen(node_name);
    if (hn > nn && memcmp(node_name, n->name, nn) == 0 && node_name[nn] == ' ' &&
        !(n->header_args = arena_str(c, node_name + nn + 1, hn - nn - 1)))
        return false;
    if (n->kind == EM_NODE_SCAN && n->label_args) {
        n->table = n->label_args;
        const char *dot = strrchr(n->table, '.');
        n->table_name = dot ? dot + 1 : n->table;
    }
    return true;
}

/* ------------------------------------------------------------------ JSON access */

static json_t *req(read_ctx *c, json_t *obj, const char *key, json_type type, const char *what,
                   const rd_path *path) {
    json_t *v = json_object_get(obj, key);
    rd_path p = {path, key, -1, NULL};
    if (!v)
        return em_plan_read_fail(&c->rd, &p, "missing");
    if (json_typeof(v) != type && !(type == JSON_TRUE && json_is_boolean(v)))
        return em_plan_read_fail(&c->rd, &p, "expected %s", what);
    return v;
}

/* A JSON array of expressions -> an arena array; *n its length. */
static em_expr **read_exprs(read_ctx *c, json_t *arr, const rd_path *path, int *n) {
    *n = 0;
    if (!json_is_array(arr))
        return em_plan_read_fail(&c->rd, path, "expected an array of expressions");
    size_t m = json_array_size(arr);
    em_expr **items = em_plan_arena_alloc(&c->rd.plan->arena, (m ? m : 1) * sizeof *items);
    if (!items)
        return em_plan_read_nomem(&c->rd);
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        rd_path p = {path, NULL, (int)i, NULL};
        if (!(items[i] = em_plan_read_expr(&c->rd, x, &p)))
            return NULL;
    }
    *n = (int)m;
    return items;
}

/* ------------------------------------------------------------------ fields */

typedef struct field_set {
    em_plan_field f[READ_MAX_FIELDS];
    int n;
} field_set;

static em_plan_field *add_field(field_set *fs, em_field_kind kind, const char *label) {
    em_plan_field *f = &fs->f[fs->n++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->label = label;
    return f;
}

/* "Label [n]: [...]" (or "Label: []") from a JSON array of expressions. */
static bool list_field(read_ctx *c, field_set *fs, em_field_kind kind, const char *label,
                       json_t *arr, const rd_path *path) {
    em_plan_field *f = add_field(fs, kind, label);
    f->exprs = read_exprs(c, arr, path, &f->n_exprs);
    f->counted = f->n_exprs > 0;
    return f->exprs != NULL;
}

static json_t *fields_of(read_ctx *c, json_t *j, const rd_path *path) {
    return req(c, j, "fields", JSON_OBJECT, "an object of constructor fields", path);
}

/* A constructor field that must be present (any type). */
static json_t *node_field(read_ctx *c, json_t *j, const char *key, const rd_path *path) {
    json_t *fields = fields_of(c, j, path);
    if (!fields)
        return NULL;
    json_t *v = json_object_get(fields, key);
    if (!v) {
        rd_path pf = {path, "fields", -1, NULL};
        rd_path p = {&pf, key, -1, NULL};
        return em_plan_read_fail(&c->rd, &p, "missing");
    }
    return v;
}

static bool field_list_from(read_ctx *c, field_set *fs, em_field_kind kind, const char *label,
                            json_t *j, const char *key, const rd_path *path) {
    json_t *v = node_field(c, j, key, path);
    if (!v)
        return false;
    rd_path pf = {path, "fields", -1, NULL};
    rd_path p = {&pf, key, -1, NULL};
    return list_field(c, fs, kind, label, v, &p);
}

/* Input [n]: the (first) child's output. */
static bool input_field(read_ctx *c, field_set *fs, json_t *j, const char *label, int child,
                        const rd_path *path) {
    json_t *kids = json_object_get(j, "children");
    json_t *k = json_array_get(kids, (size_t)child);
    rd_path pk = {path, "children", -1, NULL};
    rd_path pc = {&pk, NULL, child, NULL};
    rd_path po = {&pc, "output", -1, NULL};
    if (!k)
        return em_plan_read_fail(&c->rd, &pk, "expected child %d", child) != NULL;
    json_t *out = json_object_get(k, "output");
    if (strcmp(label, "Input") == 0)
        return list_field(c, fs, EM_FIELD_INPUT, "Input", out, &po);
    /* "Left output [n]: [...]" of binary operators this reader does not know: text */
    int n;
    em_expr **items = read_exprs(c, out, &po, &n);
    if (!items)
        return false;
    plan_buf b = {0};
    if (n)
        em_plan_buf_printf(&b, "%s [%d]: [", label, n);
    else
        em_plan_buf_printf(&b, "%s: [", label);
    for (int i = 0; i < n; i++) {
        if (i)
            em_plan_buf_puts(&b, ", ");
        em_plan_print_expr(&b, items[i], c->rd.shim);
    }
    em_plan_buf_putc(&b, ']');
    em_plan_field *f = add_field(fs, EM_FIELD_OTHER, NULL);
    f->text = b.failed ? NULL : arena_str(c, b.data ? b.data : "", b.len);
    f->label = f->text;
    free(b.data);
    return f->text != NULL || (em_plan_read_nomem(&c->rd), false);
}

/* An item of "Arguments" holding text only. */
static em_expr *text_literal(read_ctx *c, const char *text) {
    em_expr *e = em_plan_read_new_expr(&c->rd, EM_EXPR_LITERAL);
    if (e && !(e->text = arena_str(c, text, strlen(text))))
        return NULL;
    return e;
}

typedef struct arg_acc {
    em_expr *items[64];
    int n;
} arg_acc;

static bool acc_push(read_ctx *c, arg_acc *a, em_expr *e, const rd_path *path) {
    if (!e)
        return false;
    if (a->n == (int)(sizeof a->items / sizeof a->items[0])) {
        em_plan_read_fail(&c->rd, path, "more than %d arguments",
                       (int)(sizeof a->items / sizeof a->items[0]));
        return false;
    }
    a->items[a->n++] = e;
    return true;
}

static bool arguments_field(read_ctx *c, field_set *fs, arg_acc *a) {
    if (a->n == 0)
        return true;
    em_plan_field *f = add_field(fs, EM_FIELD_ARGUMENTS, "Arguments");
    f->exprs = em_plan_arena_alloc(&c->rd.plan->arena, (size_t)a->n * sizeof *f->exprs);
    if (!f->exprs)
        return em_plan_read_nomem(&c->rd) != NULL;
    memcpy(f->exprs, a->items, (size_t)a->n * sizeof *f->exprs);
    f->n_exprs = a->n;
    return true;
}

/* AQEShuffleReadExec.stringArgs: what its partition specs do. */
static const char *aqe_read_desc(json_t *specs) {
    bool local = false, coalesced = false, skewed = false;
    size_t i;
    json_t *s;
    json_array_foreach(specs, i, s) {
        const char *cls = em_plan_read_class(s);
        json_t *f = json_object_get(s, "fields");
        if (strcmp(cls, "PartialMapperPartitionSpec") == 0 ||
            strcmp(cls, "CoalescedMapperPartitionSpec") == 0)
            local = true;
        else if (strcmp(cls, "PartialReducerPartitionSpec") == 0)
            skewed = true;
        else if (strcmp(cls, "CoalescedPartitionSpec") == 0) {
            json_int_t a = json_integer_value(json_object_get(f, "startReducerIndex"));
            json_int_t b = json_integer_value(json_object_get(f, "endReducerIndex"));
            if ((a == 0 && b == 0) || b - a > 1)
                coalesced = true;
        }
    }
    return local                    ? "local"
           : coalesced && skewed    ? "coalesced and skewed"
           : coalesced              ? "coalesced"
           : skewed                 ? "skewed"
                                    : "";
}

/* TreeNode.argString over the node's constructor fields, with the overrides of the
 * classes that change it (exchanges, limits, LocalTableScan, AQE reads). */
static bool generic_arguments(read_ctx *c, json_t *j, const char *cls, em_node_kind kind,
                              arg_acc *a, const rd_path *path) {
    rd_path pf = {path, "fields", -1, NULL};
    json_t *fields = json_object_get(j, "fields");
    if (kind == EM_NODE_SHUFFLE_QUERY_STAGE || kind == EM_NODE_BROADCAST_QUERY_STAGE) {
        json_t *stage = json_object_get(j, "stage");
        json_t *id = json_object_get(stage, "id");
        rd_path ps = {path, "stage", -1, NULL};
        if (!json_is_integer(id))
            return em_plan_read_fail(&c->rd, &ps, "expected {\"id\": <stage id>}") != NULL;
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(id));
        return acc_push(c, a, text_literal(c, buf), path);
    }
    if (!fields)
        return fields_of(c, j, path) != NULL;
    if (kind == EM_NODE_LOCAL_TABLE_SCAN) {
        json_t *rows = json_object_get(fields, "rows");
        if (json_array_size(rows) == 0 && !acc_push(c, a, text_literal(c, "<empty>"), path))
            return false;
        /* stringArgs: ("<empty>",) output; argString drops an empty output */
        bool skip;
        rd_path po = {path, "output", -1, NULL};
        em_expr *out = em_plan_read_arg(&c->rd, json_object_get(j, "output"), &po, &skip);
        return skip || acc_push(c, a, out, path);
    }
    if (kind == EM_NODE_AQE_SHUFFLE_READ) {
        const char *d = aqe_read_desc(json_object_get(fields, "partitionSpecs"));
        return !*d || acc_push(c, a, text_literal(c, d), path);
    }
    if (kind == EM_NODE_ADAPTIVE_SPARK_PLAN) /* isFinalPlan is no constructor field */
        return acc_push(c, a, text_literal(c, "isFinalPlan=false"), path);
    if (strcmp(cls, "RangeExec") == 0) {
        /* logical Range's simpleString, one literal as the text parser reads it */
        json_t *rf = json_object_get(json_object_get(fields, "range"), "fields");
        if (!rf) /* the logical Range written by class only */
            return acc_push(c, a, text_literal(c, "Range"), path);
        json_t *sl = json_object_get(rf, "numSlices");
        char buf[160], splits[40];
        if (json_is_integer(sl))
            snprintf(splits, sizeof splits, "Some(%lld)", (long long)json_integer_value(sl));
        else
            snprintf(splits, sizeof splits, "None");
        snprintf(buf, sizeof buf, "Range (%lld, %lld, step=%lld, splits=%s)",
                 (long long)json_integer_value(json_object_get(rf, "start")),
                 (long long)json_integer_value(json_object_get(rf, "end")),
                 (long long)json_integer_value(json_object_get(rf, "step")), splits);
        return acc_push(c, a, text_literal(c, buf), path);
    }
    bool zero_offset_drops = strcmp(cls, "CollectLimitExec") == 0 ||
                             strcmp(cls, "TakeOrderedAndProjectExec") == 0;
    const char *key;
    json_t *v;
    json_object_foreach(fields, key, v) {
        if (zero_offset_drops && strcmp(key, "offset") == 0 && json_is_integer(v) &&
            json_integer_value(v) == 0)
            continue;
        rd_path p = {&pf, key, -1, NULL};
        bool skip;
        em_expr *e = em_plan_read_arg(&c->rd, v, &p, &skip);
        if (skip)
            continue;
        if (!acc_push(c, a, e, &p))
            return false;
    }
    if (kind == EM_NODE_EXCHANGE || kind == EM_NODE_BROADCAST_EXCHANGE) {
        /* Exchange.stringArgs adds [plan_id=<SparkPlan.id>]; the JSON id stands for it */
        em_expr *pid = em_plan_read_new_expr(&c->rd, EM_EXPR_PLAN_ID);
        if (!pid)
            return false;
        pid->plan_id = json_integer_value(json_object_get(j, "id"));
        pid->legacy_id_form = c->rd.shim->legacy_exchange_id;
        return acc_push(c, a, pid, path);
    }
    return true;
}

/* "Location: <FileIndex> [p]" or "[p1, ... N entries]", and its paths. */
static bool location_field(read_ctx *c, field_set *fs, json_t *j, json_t *scan,
                           const rd_path *path) {
    rd_path ps = {path, "scan", -1, NULL};
    json_t *roots = req(c, scan, "rootPaths", JSON_ARRAY, "an array of paths", &ps);
    if (!roots)
        return false;
    json_t *loc = json_object_get(
        json_object_get(json_object_get(json_object_get(j, "fields"), "relation"), "fields"),
        "location");
    const char *index = loc ? em_plan_read_class(loc) : "";
    char index_name[128];
    snprintf(index_name, sizeof index_name, "%s", *index ? index : "InMemoryFileIndex");
    size_t n = json_array_size(roots);
    em_plan_field *f = add_field(fs, EM_FIELD_LOCATION, "Location");
    f->paths = em_plan_arena_alloc(&c->rd.plan->arena, (n ? n : 1) * sizeof *f->paths);
    if (!f->paths)
        return em_plan_read_nomem(&c->rd) != NULL;
    plan_buf b = {0};
    em_plan_buf_printf(&b, "Location: %s [", index_name);
    for (size_t i = 0; i < n; i++) {
        const char *p = json_string_value(json_array_get(roots, i));
        if (!p) {
            free(b.data);
            rd_path pr = {&ps, "rootPaths", -1, NULL};
            rd_path pi = {&pr, NULL, (int)i, NULL};
            return em_plan_read_fail(&c->rd, &pi, "expected a path string") != NULL;
        }
        if (n > 1 && i == 1) {
            em_plan_buf_printf(&b, ", ... %zu entries", n - 1);
            break;
        }
        em_plan_buf_puts(&b, p);
        if (!(f->paths[f->n_paths++] = arena_str(c, p, strlen(p)))) {
            free(b.data);
            return false;
        }
    }
    em_plan_buf_putc(&b, ']');
    f->text = b.failed ? NULL : arena_str(c, b.data ? b.data : "", b.len);
    free(b.data);
    return f->text != NULL || (em_plan_read_nomem(&c->rd), false);
}

/* ReadSchema: struct<name:type,...> split as plan_parse.c splits it. */
static bool read_schema_field(read_ctx *c, field_set *fs, const char *s, const rd_path *path) {
    size_t n = strlen(s);
    if (n < 8 || memcmp(s, "struct<", 7) != 0 || s[n - 1] != '>')
        return em_plan_read_fail(&c->rd, path, "expected 'struct<name:type,...>'") != NULL;
    em_plan_field *f = add_field(fs, EM_FIELD_READ_SCHEMA, "ReadSchema");
    size_t i = 7, end = n - 1;
    int cap = 0;
    while (i < end) {
        size_t colon = i;
        while (colon < end && s[colon] != ':')
            colon++;
        if (colon >= end || colon == i)
            return em_plan_read_fail(&c->rd, path, "expected 'name:type' at offset %zu", i) != NULL;
        size_t t0 = colon + 1, t1 = t0;
        int depth = 0;
        while (t1 < end && !(depth == 0 && s[t1] == ',')) {
            if (s[t1] == '(' || s[t1] == '<')
                depth++;
            else if (s[t1] == ')' || s[t1] == '>')
                depth--;
            t1++;
        }
        if (f->n_schema == cap) {
            cap = cap ? cap * 2 : 8;
            em_schema_field *g = em_plan_arena_alloc(&c->rd.plan->arena, (size_t)cap * sizeof *g);
            if (!g)
                return em_plan_read_nomem(&c->rd) != NULL;
            if (f->n_schema)
                memcpy(g, f->schema, (size_t)f->n_schema * sizeof *g);
            f->schema = g;
        }
        em_schema_field *sf = &f->schema[f->n_schema++];
        memset(sf, 0, sizeof *sf);
        if (!(sf->name = arena_str(c, s + i, colon - i)) ||
            !(sf->type_text = arena_str(c, s + t0, t1 - t0)))
            return false;
        sf->type_known = em_plan_type_from_text(s + t0, t1 - t0, &sf->type);
        i = t1 < end ? t1 + 1 : t1;
    }
    return true;
}

static bool scan_fields(read_ctx *c, field_set *fs, em_plan_node *node, json_t *j,
                        const char *parent_cls, const rd_path *path) {
    rd_path po = {path, "output", -1, NULL};
    if (!list_field(c, fs, EM_FIELD_OUTPUT, "Output", json_object_get(j, "output"), &po))
        return false;
    em_plan_field *b = add_field(fs, EM_FIELD_BATCHED, "Batched");
    /* supportsColumnar is no field; a columnar scan is what Spark puts a ColumnarToRow on */
    b->text = strcmp(parent_cls, "ColumnarToRowExec") == 0 ? "true" : "false";
    json_t *scan = req(c, j, "scan", JSON_OBJECT, "the scan's relation summary", path);
    if (!scan || !location_field(c, fs, j, scan, path))
        return false;
    rd_path pf = {path, "fields", -1, NULL};
    json_t *pfs = json_object_get(json_object_get(j, "fields"), "partitionFilters");
    if (json_array_size(pfs) > 0) {
        rd_path pp = {&pf, "partitionFilters", -1, NULL};
        if (!list_field(c, fs, EM_FIELD_PARTITION_FILTERS, "PartitionFilters", pfs, &pp))
            return false;
        fs->f[fs->n - 1].counted = false;
    }
    rd_path ps = {path, "scan", -1, NULL};
    json_t *pushed = req(c, scan, "pushedFilters", JSON_ARRAY, "an array of filters", &ps);
    if (!pushed)
        return false;
    if (json_array_size(pushed) > 0) {
        rd_path pp = {&ps, "pushedFilters", -1, NULL};
        em_plan_field *f = add_field(fs, EM_FIELD_PUSHED_FILTERS, "PushedFilters");
        size_t n = json_array_size(pushed);
        f->exprs = em_plan_arena_alloc(&c->rd.plan->arena, n * sizeof *f->exprs);
        if (!f->exprs)
            return em_plan_read_nomem(&c->rd) != NULL;
        size_t i;
        json_t *x;
        json_array_foreach(pushed, i, x) {
            rd_path p = {&pp, NULL, (int)i, NULL};
            if (!(f->exprs[i] = em_plan_read_filter(&c->rd, x, &p)))
                return false;
        }
        f->n_exprs = (int)n;
    }
    const char *ds = json_string_value(json_object_get(scan, "dataSchema"));
    if (ds && !(node->data_schema = arena_str(c, ds, strlen(ds))))
        return false;
    json_t *rs = req(c, scan, "requiredSchema", JSON_STRING, "a struct type string", &ps);
    rd_path pr = {&ps, "requiredSchema", -1, NULL};
    return rs && read_schema_field(c, fs, json_string_value(rs), &pr);
}

/* Join type text ("Inner", "ExistenceJoin(exists#1)") and the boolean attribute. */
static bool join_type(read_ctx *c, em_plan_node *n, json_t *j, const rd_path *path) {
    json_t *fields = json_object_get(j, "fields");
    json_t *jt = json_object_get(fields, "joinType");
    rd_path pf = {path, "fields", -1, NULL};
    rd_path pj = {&pf, "joinType", -1, NULL};
    static const struct {
        const char *text;
        em_join_type type;
    } names[] = {
        {"Inner", EM_JOIN_INNER},         {"LeftOuter", EM_JOIN_LEFT_OUTER},
        {"RightOuter", EM_JOIN_RIGHT_OUTER}, {"FullOuter", EM_JOIN_FULL_OUTER},
        {"LeftSemi", EM_JOIN_LEFT_SEMI},  {"LeftAnti", EM_JOIN_LEFT_ANTI},
        {"Cross", EM_JOIN_CROSS},
    };
    if (!jt && n->kind == EM_NODE_CARTESIAN_PRODUCT) {
        n->join_type = EM_JOIN_INNER; /* BaseJoinExec.joinType */
        return (n->join_type_text = arena_str(c, "Inner", 5)) != NULL;
    }
    if (json_is_string(jt)) {
        const char *t = json_string_value(jt);
        n->join_type = EM_JOIN_OTHER;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(names[i].text, t) == 0)
                n->join_type = names[i].type;
        return (n->join_type_text = arena_str(c, t, strlen(t))) != NULL;
    }
    if (json_is_object(jt) && strcmp(em_plan_read_class(jt), "ExistenceJoin") == 0) {
        rd_path pjf = {&pj, "fields", -1, NULL};
        rd_path pe = {&pjf, "exists", -1, NULL};
        json_t *ex = json_object_get(json_object_get(jt, "fields"), "exists");
        em_expr *a = em_plan_read_expr(&c->rd, ex, &pe);
        if (!a)
            return false;
        n->join_type = EM_JOIN_EXISTENCE;
        n->exists_attr = a;
        plan_buf b = {0};
        em_plan_buf_puts(&b, "ExistenceJoin(");
        em_plan_print_expr(&b, a, c->rd.shim);
        em_plan_buf_putc(&b, ')');
        n->join_type_text = b.failed ? NULL : arena_str(c, b.data, b.len);
        free(b.data);
        return n->join_type_text != NULL || (em_plan_read_nomem(&c->rd), false);
    }
    return em_plan_read_fail(&c->rd, &pj, "expected a join type") != NULL;
}

static bool join_fields(read_ctx *c, field_set *fs, em_plan_node *n, json_t *j,
                        const rd_path *path) {
    if (!join_type(c, n, j, path))
        return false;
    json_t *fields = json_object_get(j, "fields");
    const char *bs = json_string_value(json_object_get(fields, "buildSide"));
    if (bs)
        n->build_side = strcmp(bs, "BuildLeft") == 0    ? EM_BUILD_LEFT
                        : strcmp(bs, "BuildRight") == 0 ? EM_BUILD_RIGHT
                                                        : EM_BUILD_NONE;
    n->null_aware_anti = json_is_true(json_object_get(fields, "isNullAwareAntiJoin"));
    json_t *lk = json_object_get(fields, "leftKeys"), *rk = json_object_get(fields, "rightKeys");
    rd_path pf = {path, "fields", -1, NULL};
    if (json_array_size(lk) > 0 || json_array_size(rk) > 0) {
        rd_path pl = {&pf, "leftKeys", -1, NULL}, pr = {&pf, "rightKeys", -1, NULL};
        if (!list_field(c, fs, EM_FIELD_LEFT_KEYS, "Left keys", lk, &pl) ||
            !list_field(c, fs, EM_FIELD_RIGHT_KEYS, "Right keys", rk, &pr))
            return false;
    }
    json_t *cond = json_object_get(fields, "condition");
    em_plan_field *f = add_field(fs, EM_FIELD_JOIN_CONDITION, "Join condition");
    if (cond && !json_is_null(cond)) {
        rd_path pc = {&pf, "condition", -1, NULL};
        f->exprs = em_plan_arena_alloc(&c->rd.plan->arena, sizeof *f->exprs);
        if (!f->exprs)
            return em_plan_read_nomem(&c->rd) != NULL;
        if (!(f->exprs[0] = em_plan_read_expr(&c->rd, cond, &pc)))
            return false;
        f->n_exprs = 1;
    }
    /* the tree line: "<name> <join type>[ <build side>]" */
    plan_buf b = {0};
    em_plan_buf_printf(&b, "%s %s", n->name, n->join_type_text);
    if (bs && (n->kind == EM_NODE_BROADCAST_HASH_JOIN || n->kind == EM_NODE_SHUFFLED_HASH_JOIN ||
               n->kind == EM_NODE_BROADCAST_NESTED_LOOP_JOIN))
        em_plan_buf_printf(&b, " %s", bs);
    const char *label = b.failed ? NULL : arena_str(c, b.data, b.len);
    free(b.data);
    if (!label)
        return em_plan_read_nomem(&c->rd) != NULL;
    size_t nn = strlen(n->name);
    n->label_args = label[nn] ? label + nn + 1 : NULL;
    return true;
}

/* The node's detail fields, in printed order. */
static bool node_fields(read_ctx *c, em_plan_node *n, json_t *j, const char *cls,
                        const char *parent_cls, int n_kids, const rd_path *path) {
    field_set fs = {.n = 0};
    bool input = !n->is_input && n_kids > 0; /* an input's children are not written */
    arg_acc args = {.n = 0};
    bool ok = true;
    switch (n->kind) {
    case EM_NODE_SCAN:
        if (strcmp(cls, "FileSourceScanExec") == 0) {
            ok = scan_fields(c, &fs, n, j, parent_cls, path);
            break;
        }
        goto generic;
    case EM_NODE_FILTER: {
        ok = (!input || input_field(c, &fs, j, "Input", 0, path));
        json_t *cond = ok ? node_field(c, j, "condition", path) : NULL;
        if (!cond)
            return false;
        rd_path pf = {path, "fields", -1, NULL};
        rd_path pc = {&pf, "condition", -1, NULL};
        em_plan_field *f = add_field(&fs, EM_FIELD_CONDITION, "Condition");
        f->exprs = em_plan_arena_alloc(&c->rd.plan->arena, sizeof *f->exprs);
        if (!f->exprs)
            return em_plan_read_nomem(&c->rd) != NULL;
        ok = (f->exprs[0] = em_plan_read_expr(&c->rd, cond, &pc)) != NULL;
        f->n_exprs = 1;
        break;
    }
    case EM_NODE_PROJECT:
        ok = field_list_from(c, &fs, EM_FIELD_OUTPUT, "Output", j, "projectList", path) &&
             (!input || input_field(c, &fs, j, "Input", 0, path));
        break;
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
        ok = (!input || input_field(c, &fs, j, "Input", 0, path)) &&
             field_list_from(c, &fs, EM_FIELD_KEYS, "Keys", j, "groupingExpressions", path) &&
             field_list_from(c, &fs, EM_FIELD_FUNCTIONS, "Functions", j, "aggregateExpressions",
                             path) &&
             field_list_from(c, &fs, EM_FIELD_AGG_ATTRS, "Aggregate Attributes", j,
                             "aggregateAttributes", path) &&
             field_list_from(c, &fs, EM_FIELD_RESULTS, "Results", j, "resultExpressions", path);
        break;
    case EM_NODE_REUSED_EXCHANGE: {
        rd_path po = {path, "output", -1, NULL};
        ok = list_field(c, &fs, EM_FIELD_OUTPUT, "Output", json_object_get(j, "output"), &po);
        break;
    }
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        ok = join_fields(c, &fs, n, j, path);
        break;
    case EM_NODE_LOCAL_TABLE_SCAN:
    case EM_NODE_SHUFFLE_QUERY_STAGE:
    case EM_NODE_BROADCAST_QUERY_STAGE:
    case EM_NODE_ADAPTIVE_SPARK_PLAN: {
        rd_path po = {path, "output", -1, NULL};
        ok = list_field(c, &fs, EM_FIELD_OUTPUT, "Output", json_object_get(j, "output"), &po) &&
             generic_arguments(c, j, cls, n->kind, &args, path) && arguments_field(c, &fs, &args);
        break;
    }
    case EM_NODE_COLUMNAR_TO_ROW:
    case EM_NODE_ROW_TO_COLUMNAR:
        ok = !input || input_field(c, &fs, j, "Input", 0, path);
        break;
    case EM_NODE_UNION:
        ok = generic_arguments(c, j, cls, n->kind, &args, path) && arguments_field(c, &fs, &args);
        break;
    default:
        if (n->kind == EM_NODE_UNKNOWN && n_kids != 1)
            goto generic;
        /* unary operators: Input, Arguments */
        ok = (!input || input_field(c, &fs, j, "Input", 0, path)) &&
             generic_arguments(c, j, cls, n->kind, &args, path) && arguments_field(c, &fs, &args);
        break;
    generic:
        /* LeafExecNode: Output; UnaryExecNode: Input; BinaryExecNode: Left/Right output */
        if (n_kids == 0) {
            rd_path po = {path, "output", -1, NULL};
            ok = list_field(c, &fs, EM_FIELD_OUTPUT, "Output", json_object_get(j, "output"), &po);
        } else if (n_kids == 1) {
            ok = !input || input_field(c, &fs, j, "Input", 0, path);
        } else if (n_kids == 2 && input) {
            ok = input_field(c, &fs, j, "Left output", 0, path) &&
                 input_field(c, &fs, j, "Right output", 1, path);
        }
        ok = ok && generic_arguments(c, j, cls, n->kind, &args, path) &&
             arguments_field(c, &fs, &args);
        break;
    }
    if (!ok)
        return false;
    n->fields = em_plan_arena_alloc(&c->rd.plan->arena, (size_t)(fs.n ? fs.n : 1) * sizeof *n->fields);
    if (!n->fields)
        return em_plan_read_nomem(&c->rd) != NULL;
    memcpy(n->fields, fs.f, (size_t)fs.n * sizeof *n->fields);
    n->n_fields = fs.n;
    return true;
}

/* ------------------------------------------------------------------ nodes */

static int codegen_stage_of(json_t *j) {
    json_t *id = json_object_get(json_object_get(j, "fields"), "codegenStageId");
    if (json_is_integer(id))
        return (int)json_integer_value(id);
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *open = name ? strrchr(name, '(') : NULL;
    return open ? atoi(open + 1) : 0;
}

/* The given output of an input or a query stage read without its plan. */
static bool given_output(read_ctx *c, em_plan_node *n, json_t *j, const rd_path *path) {
    rd_path po = {path, "output", -1, NULL};
    n->output = read_exprs(c, json_object_get(j, "output"), &po, &n->n_output);
    if (!n->output)
        return false;
    for (int i = 0; i < n->n_output; i++) {
        em_expr *a = n->output[i];
        if (a->spark_type_known) {
            a->type = a->spark_type;
            a->type_known = true;
        }
    }
    return true;
}

/*
 * Reads the node at j (after folding WholeStageCodegen/InputAdapter). star: inside a
 * whole-stage codegen above its next InputAdapter; parent_cls: the class of the nearest
 * operator above (folded wrappers skipped).
 */
static em_plan_node *read_node(read_ctx *c, json_t *j, const rd_path *path, const char *parent_cls,
                               bool star) {
    if (c->rd.failed)
        return NULL;
    if (!json_is_object(j))
        return em_plan_read_fail(&c->rd, path, "expected a plan node object");
    json_t *jc = req(c, j, "class", JSON_STRING, "a class name", path);
    if (!jc)
        return NULL;
    char cls[160];
    snprintf(cls, sizeof cls, "%s", node_class(j));
    rd_path here = {path, NULL, -1, cls};
    json_t *jid = req(c, j, "id", JSON_INTEGER, "an integer node id", &here);
    json_t *jname = jid ? req(c, j, "name", JSON_STRING, "the node's name", &here) : NULL;
    json_t *jout = jname ? req(c, j, "output", JSON_ARRAY, "an array of attributes", &here) : NULL;
    if (!jout)
        return NULL;
    json_t *jin = json_object_get(j, "input");
    bool is_input = jin != NULL;
    if (is_input && !json_is_integer(jin)) {
        rd_path p = {&here, "input", -1, NULL};
        return em_plan_read_fail(&c->rd, &p, "expected an integer input number");
    }
    bool stage = json_object_get(j, "stage") != NULL;
    json_t *kids = json_object_get(j, "children");
    rd_path pk = {&here, "children", -1, NULL};
    if (kids && !json_is_array(kids))
        return em_plan_read_fail(&c->rd, &pk, "expected an array of nodes");
    if (!kids && !is_input && !stage)
        return em_plan_read_fail(&c->rd, &pk, "missing");
    size_t n_kids = is_input ? 0 : json_array_size(kids);
    if (!stage && !json_is_object(json_object_get(j, "fields"))) {
        fields_of(c, j, &here);
        return NULL;
    }
    if (++c->rd.depth > PLAN_READ_MAX_DEPTH) {
        c->rd.depth--;
        return em_plan_read_fail(&c->rd, &here, "plan nested deeper than %d levels",
                              PLAN_READ_MAX_DEPTH);
    }
    em_plan_node *result = NULL;
    bool wscg = strcmp(cls, "WholeStageCodegenExec") == 0;
    if ((wscg || strcmp(cls, "InputAdapter") == 0) && !is_input) {
        if (n_kids != 1) {
            em_plan_read_fail(&c->rd, &pk, "expected exactly one child");
        } else {
            c->codegen = wscg ? codegen_stage_of(j) : -1;
            rd_path p0 = {&pk, NULL, 0, NULL};
            result = read_node(c, json_array_get(kids, 0), &p0, parent_cls, wscg);
        }
        c->rd.depth--;
        return result;
    }
    em_plan_node *n = new_node(c);
    if (!n)
        goto done;
    n->source_index = (int)json_integer_value(jid);
    n->whole_stage = star;
    n->codegen_id = c->codegen;
    n->is_input = is_input;
    n->input_index = is_input ? (int)json_integer_value(jin) : 0;
    n->input_broadcast = is_input && json_is_true(json_object_get(j, "broadcast"));
    /* the plugin says so: the exchange's class differs per Spark line */
    n->stage_of_ember = json_is_true(json_object_get(json_object_get(j, "stage"), "emberShuffle"));
    bool known = false;
    for (size_t k = 0; k < sizeof exec_classes / sizeof exec_classes[0]; k++)
        if (strcmp(exec_classes[k].cls, cls) == 0) {
            n->kind = exec_classes[k].kind;
            known = true;
        }
    const char *node_name = json_string_value(jname);
    if (!set_labels(c, n, node_name, node_name, !known) || !map_add(c, j, n))
        goto done;
    if (n->kind == EM_NODE_ADAPTIVE_SPARK_PLAN) {
        /* the written plan is its inputPlan (executedPlan is no constructor field) */
        json_t *ip = json_object_get(json_object_get(json_object_get(j, "fields"), "inputPlan"),
                                     "plan");
        if (ip && !is_input) {
            int saved = c->codegen;
            c->codegen = -1;
            rd_path pf = {&here, "fields", -1, NULL};
            rd_path pi = {&pf, "inputPlan", -1, NULL};
            rd_path pp = {&pi, "plan", -1, NULL};
            em_plan_node *child = read_node(c, ip, &pp, cls, false);
            c->codegen = saved;
            if (!child)
                goto done;
            n->children = em_plan_arena_alloc(&c->rd.plan->arena, sizeof *n->children);
            if (!n->children) {
                em_plan_read_nomem(&c->rd);
                goto done;
            }
            n->children[0] = child;
            n->n_children = 1;
        }
    } else if (n_kids) {
        n->children = em_plan_arena_alloc(&c->rd.plan->arena, n_kids * sizeof *n->children);
        if (!n->children) {
            em_plan_read_nomem(&c->rd);
            goto done;
        }
        for (size_t i = 0; i < n_kids; i++) {
            rd_path pi = {&pk, NULL, (int)i, NULL};
            if (!(n->children[i] = read_node(c, json_array_get(kids, i), &pi, cls, star)))
                goto done;
            n->n_children++;
        }
    }
    if (!node_fields(c, n, j, cls, parent_cls ? parent_cls : "", (int)json_array_size(kids),
                     &here))
        goto done;
    if ((is_input || stage || n->kind == EM_NODE_UNKNOWN) && !given_output(c, n, j, &here))
        goto done;
    result = n;
done:
    c->rd.depth--;
    return result;
}

/* ------------------------------------------------------------------ subqueries */

static bool is_subquery_node(const json_t *p) {
    const char *cls = em_plan_read_class(p);
    return strcmp(cls, "SubqueryExec") == 0 || strcmp(cls, "ReusedSubqueryExec") == 0 ||
           strcmp(cls, "SubqueryBroadcastExec") == 0 ||
           strcmp(cls, "SubqueryAdaptiveBroadcastExec") == 0;
}

static bool find_subqueries(read_ctx *c, json_t *node, int depth);

/* Expression.collect over one expression value: pre-order, every expression-valued field
 * (sequences and pairs included); a PlanExpression over a subquery node registers it and
 * its own subqueries follow. */
static bool collect_expr(read_ctx *c, json_t *host, json_t *v, int depth) {
    if (depth > 4 * PLAN_READ_MAX_DEPTH)
        return true; /* reading the expression reports the nesting */
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!collect_expr(c, host, x, depth + 1))
                return false;
        }
        return true;
    }
    if (!json_is_object(v))
        return true;
    json_t *fields = json_object_get(v, "fields");
    if (json_object_get(v, "pretty")) {
        json_t *plan = json_object_get(json_object_get(fields, "plan"), "plan");
        if (json_is_object(plan) && is_subquery_node(plan)) {
            sq_found *g = grow(c->sqs, &c->cap_sqs, c->n_sqs + 1, sizeof *c->sqs);
            if (!g) {
                em_plan_read_nomem(&c->rd);
                return false;
            }
            c->sqs = g;
            c->sqs[c->n_sqs++] = (sq_found){host, v, plan};
            if (!find_subqueries(c, plan, depth + 1))
                return false;
        }
    } else if (!(json_object_get(v, "class") && fields &&
                 strcmp(em_plan_read_class(v), "Tuple2") == 0)) {
        return true; /* not an expression: products inside expressions are CaseWhen's pairs */
    }
    const char *key;
    json_t *x;
    json_object_foreach(fields, key, x) {
        if (json_is_object(x) && (json_object_get(x, "plan") || json_object_get(x, "child")))
            continue;
        if (!collect_expr(c, host, x, depth + 1))
            return false;
    }
    return true;
}

/* ExplainUtils.getSubqueries over the tree at node: pre-order over operators, each
 * operator's expressions (QueryPlan.expressions: expression fields and sequences of them). */
static bool find_subqueries(read_ctx *c, json_t *node, int depth) {
    if (!json_is_object(node) || depth > 4 * PLAN_READ_MAX_DEPTH)
        return true;
    json_t *fields = json_object_get(node, "fields");
    const char *key;
    json_t *v;
    json_object_foreach(fields, key, v) {
        bool expr = json_is_object(v) && json_object_get(v, "pretty");
        if ((expr || json_is_array(v)) && !collect_expr(c, node, v, depth + 1))
            return false;
    }
    if (json_object_get(node, "input"))
        return true;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(node, "children"), i, k) {
        if (!find_subqueries(c, k, depth + 1))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ reused exchanges */

/* Two JSON values equal but for plan node ids (the writer numbers each copy anew). */
static bool same_but_ids(const json_t *a, const json_t *b, int depth) {
    if (depth > 4 * PLAN_READ_MAX_DEPTH || json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        bool node = json_object_get(a, "children") && json_object_get(a, "class");
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)a, key, x) {
            if (node && strcmp(key, "id") == 0)
                continue;
            json_t *y = json_object_get(b, key);
            if (!y || !same_but_ids(x, y, depth + 1))
                return false;
        }
        return true;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_but_ids(json_array_get(a, i), json_array_get(b, i), depth + 1))
                return false;
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* Links every ReusedExchange to the exchange it reuses: the node of the trees whose JSON
 * equals its child's; when none does (AQE can optimize the original away), the child is
 * read as a tree of its own, numbered after the subqueries as ExplainUtils does. */
static bool link_reused(read_ctx *c) {
    int n_map = c->n_map; /* nodes read so far; orphans append */
    for (int i = 0; i < c->n_map; i++) {
        em_plan_node *n = c->map[i].node;
        if (n->kind != EM_NODE_REUSED_EXCHANGE)
            continue;
        json_t *j = c->map[i].j;
        json_t *child = json_object_get(json_object_get(json_object_get(j, "fields"), "child"),
                                        "plan");
        rd_path p = {NULL, c->rd.src, -1, NULL};
        rd_path pn = {&p, "node", -1, NULL};
        char where[48];
        snprintf(where, sizeof where, "id %d (ReusedExchangeExec)", n->source_index);
        rd_path pw = {&pn, NULL, -1, where};
        if (!json_is_object(child))
            return em_plan_read_fail(&c->rd, &pw, "expected fields.child {\"plan\": <exchange>}") !=
                   NULL;
        for (int k = 0; k < n_map && !n->reuses; k++) {
            json_t *o = c->map[k].j;
            if (o != child && c->map[k].node->kind != EM_NODE_REUSED_EXCHANGE &&
                strcmp(node_class(o), node_class(child)) == 0 && same_but_ids(o, child, 0))
                n->reuses = c->map[k].node;
        }
        if (!n->reuses) {
            int saved = c->codegen;
            c->codegen = -1;
            rd_path pf = {&pw, "fields", -1, NULL};
            rd_path pc = {&pf, "child", -1, NULL};
            rd_path pp = {&pc, "plan", -1, NULL};
            em_plan_node *orphan = read_node(c, child, &pp, "", false);
            c->codegen = saved;
            if (!orphan || !tree_add(c, orphan))
                return false;
            n->reuses = orphan;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ ids */

static void number_tree(read_ctx *c, em_plan_node *n) {
    if (!n || n->id)
        return;
    for (int i = 0; i < n->n_children; i++)
        number_tree(c, n->children[i]);
    if (!n->id)
        n->id = ++c->next_id;
}

static bool index_ids(read_ctx *c) {
    em_plan *plan = c->rd.plan;
    plan->max_id = c->next_id;
    plan->by_id = calloc((size_t)plan->max_id + 1, sizeof *plan->by_id);
    if (!plan->by_id)
        return em_plan_read_nomem(&c->rd) != NULL;
    for (int i = 0; i < c->n_map; i++) {
        em_plan_node *n = c->map[i].node;
        if (n->id >= 1 && n->id <= plan->max_id)
            plan->by_id[n->id] = n;
    }
    return true;
}

/* ------------------------------------------------------------------ subquery model */

static void fix_plan_ids(em_plan *plan, em_expr *e) {
    if (e->kind == EM_EXPR_SCALAR_SUBQUERY && e->reused) {
        for (int i = 0; i < plan->n_subqueries; i++) {
            const em_expr *o = plan->subqueries[i].expr;
            if (o->kind == EM_EXPR_SCALAR_SUBQUERY && !o->reused && o->id == e->id)
                e->plan_id = o->plan_id;
        }
    }
    for (int i = 0; i < e->n_args; i++)
        fix_plan_ids(plan, e->args[i]);
}

static bool build_subqueries(read_ctx *c) {
    em_plan *plan = c->rd.plan;
    if (c->n_sqs == 0)
        return true;
    plan->subqueries = em_plan_arena_alloc(&plan->arena, (size_t)c->n_sqs * sizeof *plan->subqueries);
    if (!plan->subqueries)
        return em_plan_read_nomem(&c->rd) != NULL;
    for (int i = 0; i < c->n_sqs; i++) {
        sq_found *f = &c->sqs[i];
        em_plan_subquery *sq = &plan->subqueries[i];
        memset(sq, 0, sizeof *sq);
        sq->index = i + 1;
        char where[64];
        snprintf(where, sizeof where, "subquery %d", i + 1);
        rd_path p = {NULL, c->rd.src, -1, NULL};
        rd_path pw = {&p, where, -1, NULL};
        rd_path pe = {&pw, "expression", -1, NULL};
        if (!(sq->expr = em_plan_read_expr(&c->rd, f->expr, &pe)))
            return false;
        if (strcmp(em_plan_read_class(f->plan), "ReusedSubqueryExec") != 0) {
            /* the subquery's tree is its child, with codegen ids of its own */
            json_t *kids = json_object_get(f->plan, "children");
            rd_path pp = {&pw, "plan", -1, NULL};
            rd_path pk = {&pp, "children", -1, NULL};
            rd_path p0 = {&pk, NULL, 0, NULL};
            if (json_array_size(kids) != 1)
                return em_plan_read_fail(&c->rd, &pk, "expected the subquery's one child") != NULL;
            c->codegen = -1;
            if (!(sq->root = read_node(c, json_array_get(kids, 0), &p0, "", false)) ||
                !tree_add(c, sq->root))
                return false;
        }
    }
    plan->n_subqueries = c->n_sqs;
    return true;
}

static bool link_subqueries(read_ctx *c) {
    em_plan *plan = c->rd.plan;
    for (int i = 0; i < plan->n_subqueries; i++) {
        em_plan_subquery *sq = &plan->subqueries[i];
        em_plan_node *host = map_find(c, c->sqs[i].host);
        if (!host) {
            rd_path p = {NULL, c->rd.src, -1, NULL};
            return em_plan_read_fail(&c->rd, &p, "subquery %d is hosted by no operator read", i + 1) !=
                   NULL;
        }
        sq->host = host;
        sq->host_id = host->id;
        sq->target = sq->root;
        for (int k = 0; k < plan->n_subqueries && !sq->target; k++) {
            const em_expr *o = plan->subqueries[k].expr, *e = sq->expr;
            if (k != i && plan->subqueries[k].root && o->kind == e->kind && o->id == e->id &&
                (e->kind != EM_EXPR_IN_SUBQUERY || strcmp(o->name, e->name) == 0))
                sq->target = plan->subqueries[k].root;
        }
    }
    for (int i = 0; i < plan->n_subqueries; i++)
        fix_plan_ids(plan, plan->subqueries[i].expr);
    for (int id = 1; id <= plan->max_id; id++) {
        em_plan_node *n = plan->by_id[id];
        for (int f = 0; n && f < n->n_fields; f++)
            for (int k = 0; k < n->fields[f].n_exprs; k++)
                fix_plan_ids(plan, n->fields[f].exprs[k]);
    }
    return true;
}

/* ------------------------------------------------------------------ entry */

/* A guess at the session time zone when none is given: the first timeZoneId in the
 * plan (casts carry the session's). */
static const char *find_time_zone(const json_t *v, int depth) {
    if (depth > 4 * PLAN_READ_MAX_DEPTH)
        return NULL;
    if (json_is_object(v)) {
        const char *z = json_string_value(json_object_get(v, "timeZoneId"));
        if (z)
            return z;
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)v, key, x) {
            if ((z = find_time_zone(x, depth + 1)))
                return z;
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            const char *z = find_time_zone(json_array_get(v, i), depth + 1);
            if (z)
                return z;
        }
    }
    return NULL;
}

static em_status read_plan(read_ctx *c, json_t *doc, const em_plan_parse_options *options) {
    em_plan *plan = c->rd.plan;
    rd_path top = {NULL, c->rd.src, -1, NULL};
    if (!json_is_object(doc)) {
        em_plan_read_fail(&c->rd, &top, "expected a JSON object");
        return c->rd.err->code;
    }
    json_t *format = json_object_get(doc, "format");
    if (format && (!json_is_integer(format) || json_integer_value(format) != 1)) {
        rd_path p = {&top, "format", -1, NULL};
        em_plan_read_fail(&c->rd, &p, "unsupported format version (this reader reads 1)");
        return c->rd.err->code;
    }
    const char *version = json_string_value(json_object_get(doc, "spark"));
    if (options && options->shim) {
        plan->shim = options->shim;
        snprintf(plan->shim_reason, sizeof plan->shim_reason, "given");
    } else {
        em_error verr = {0};
        if (!version) {
            rd_path p = {&top, "spark", -1, NULL};
            em_plan_read_fail(&c->rd, &p, "missing (the Spark version; or pass one)");
            return c->rd.err->code;
        }
        plan->shim = em_shim_for_version(version, &verr);
        if (!plan->shim)
            return EM_FAIL(c->rd.err, EM_ERR_UNSUPPORTED, "%s: Spark %s: %s", c->rd.src, version,
                           verr.msg);
        snprintf(plan->shim_reason, sizeof plan->shim_reason, "the plan's Spark version, %s",
                 version);
    }
    c->rd.shim = plan->shim;
    c->rd.zone = options && options->time_zone ? options->time_zone : find_time_zone(doc, 0);
    rd_path proot = {&top, "root", -1, NULL};
    json_t *root = json_object_get(doc, "root");
    if (!root) {
        em_plan_read_fail(&c->rd, &proot, "missing");
        return c->rd.err->code;
    }
    c->codegen = -1;
    plan->root = read_node(c, root, &proot, "", false);
    if (!plan->root)
        return c->rd.err->code;
    if (!find_subqueries(c, root, 0) || !build_subqueries(c) || !link_reused(c))
        return c->rd.err->code;
    number_tree(c, plan->root);
    for (int i = 0; i < c->n_trees; i++)
        number_tree(c, c->trees[i]);
    if (!index_ids(c))
        return c->rd.err->code;
    for (int i = 0; i < c->n_map; i++) {
        em_plan_node *n = c->map[i].node;
        if (n->reuses)
            n->reuses_id = n->reuses->id;
    }
    if (!link_subqueries(c))
        return c->rd.err->code;
    if (plan->arena.failed) {
        em_plan_read_nomem(&c->rd);
        return EM_ERR_NOMEM;
    }
    return EM_OK;
}

/* Column types of leaves: the caller's hook first, then the types Spark gave the output
 * attributes of a LocalTableScan (the text never prints them) and of a scan's columns
 * ReadSchema lacks (partition columns). */
typedef struct leaf_types {
    em_plan_column_type_fn user;
    void *user_ctx;
} leaf_types;

static bool leaf_type(void *ctx, const em_plan_node *leaf, const char *column, em_type *type) {
    const leaf_types *lt = ctx;
    if (lt->user && lt->user(lt->user_ctx, leaf, column, type))
        return true;
    if (leaf->kind == EM_NODE_SCAN) {
        const em_plan_field *rs = em_plan_node_field(leaf, EM_FIELD_READ_SCHEMA);
        for (int i = 0; rs && i < rs->n_schema; i++)
            if (strcasecmp(rs->schema[i].name, column) == 0)
                return false; /* ReadSchema types it */
    } else if (leaf->kind != EM_NODE_LOCAL_TABLE_SCAN) {
        return false;
    }
    const em_plan_field *out = em_plan_node_field(leaf, EM_FIELD_OUTPUT);
    for (int i = 0; out && i < out->n_exprs; i++) {
        const em_expr *a = out->exprs[i];
        if (a->kind == EM_EXPR_ATTR && a->spark_type_known && strcmp(a->name, column) == 0) {
            *type = a->spark_type;
            return true;
        }
    }
    return false;
}

em_status em_plan_read_json(const char *json, size_t len, const em_plan_parse_options *options,
                            em_plan **out, em_error *err) {
    em_error local;
    if (!err)
        err = &local;
    *out = NULL;
    memset(err, 0, sizeof *err);
    const char *src = options && options->source_name ? options->source_name : "plan";
    if (!json && len)
        return EM_FAIL(err, EM_ERR_INVALID, "em_plan_read_json: NULL text");
    json_error_t jerr;
    json_t *doc = json_loadb(json ? json : "", len, 0, &jerr);
    if (!doc)
        return EM_FAIL(err, EM_ERR_PARSE, "%s:%d:%d: invalid JSON: %s", src, jerr.line,
                       jerr.column, jerr.text);
    em_plan *plan = calloc(1, sizeof *plan);
    if (!plan) {
        json_decref(doc);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    }
    read_ctx c = {.rd = {.plan = plan, .err = err, .src = src}};
    em_status st = read_plan(&c, doc, options);
    if (st == EM_OK && c.rd.failed)
        st = err->code ? err->code : EM_ERR_PARSE;
    free(c.map);
    free(c.sqs);
    free(c.trees);
    json_decref(doc);
    if (st == EM_OK) {
        /* typing: the same steps as em_plan_parse */
        em_plan_column_type_fn column_type = options ? options->column_type : NULL;
        leaf_types lt = {column_type, options ? options->column_type_ctx : NULL};
        plan_retype_marks *marks = NULL;
        if (column_type) {
            leaf_types spark_only = {NULL, NULL};
            em_plan_infer(plan, leaf_type, &spark_only);
            if (em_plan_retype_mark(plan, &marks) != EM_OK)
                plan->arena.failed = true;
            em_plan_reset_types(plan);
        }
        em_plan_infer(plan, leaf_type, &lt);
        if (column_type && !plan->arena.failed &&
            em_plan_retype_apply(plan, marks, leaf_type, &lt) != EM_OK)
            plan->arena.failed = true;
        em_plan_retype_marks_free(marks);
        if (plan->arena.failed)
            st = EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory while typing the plan", src);
    }
    if (st == EM_OK)
        st = em_plan_validate_bindings(plan, src, err);
    if (st != EM_OK) {
        em_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return EM_OK;
}
