/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runtime filters: which scans may drop rows by the keys of a broadcast.
 *
 * An equi-join needs, of each side, only the rows whose key appears among
 * the other side's keys (unless that side's unmatched rows are output: the
 * preserved side of an outer join, the left side of an anti join). When the
 * other side's key can only hold values of a broadcast's column (it is that
 * column, or equal to it through an inner join below), the broadcast's
 * distinct keys are a superset of what can match: a scan feeding this side
 * may drop every row whose key is outside them, as soon as the broadcast is
 * built, before anything between the scan and the join does work on them.
 * That is what turns TPC-H q17's plan (all of lineitem aggregated by part,
 * then joined with the few parts of one brand and container) into an
 * aggregate of the matching parts only.
 *
 * Going down from the join to the scan, a row may be dropped only where
 * every row it leads to carries the same key: through projections of the
 * plain column, filters, sorts, exchanges, aggregates grouping by it, and
 * the preserved or inner side of other joins; never through a limit, a
 * window, a union or an exchange another consumer reuses (that consumer
 * would see the filtered rows). Going down the other side to the broadcast,
 * the values may only narrow: the same nodes, plus inner and semi joins'
 * key equalities. Keys are plain columns of one integral or date type on
 * both ends (the scan's column and the broadcast's); nulls never match an
 * equi-join key, so the filter drops them too. Only a broadcast whose rows
 * went through a selective filter (or a scan another filter narrows) is a
 * source: one of a whole table keeps every key and would only cost. In a plan fragment (the
 * Spark plugin's) a source may also be a broadcast input of the fragment.
 *
 * Pre-pass filters go the other way round. A plan made without statistics
 * broadcasts a fact table (TPC-H q4 and q9 as Spark prints them over
 * tables it knows nothing of: all of lineitem, joined with the few orders
 * of one quarter or the parts of one colour). When the other side of such
 * a BroadcastHashJoin is a scan pipeline (scan, filters, projections, the
 * stream side of joins with other broadcasts), its keys can be collected
 * first by running the pipeline on its own, and the scan under the
 * broadcast narrowed by them: only the broadcast rows with a key among them
 * can match. The source is then the pipeline's top node (prepass set). It
 * is kept, as the others are, when the pipeline went through a selective
 * filter or its scan is narrowed by a kept filter (TPC-H q7: the suppliers
 * of two nations); whether the pipeline is cheap enough to run twice is
 * the runtime's call.
 */
#include <stdlib.h>
#include <strings.h>

#include "plan/internal.h"

typedef struct rf_walk {
    const em_plan *plan;
    em_runtime_filter *out;
    int n, cap;
    bool nomem;
} rf_walk;

static int output_index(const em_plan_node *n, int64_t id) {
    for (int i = 0; i < n->n_output; i++)
        if ((n->output[i]->kind == EM_EXPR_ATTR || n->output[i]->kind == EM_EXPR_ALIAS) &&
            n->output[i]->id == id)
            return i;
    return -1;
}

static bool filterable_type(em_type t) {
    switch (t.id) {
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
    case EM_TYPE_DATE:
        return true;
    default:
        return false;
    }
}

/* Whether another node reads n's rows too: a ReusedExchange naming it. */
static bool reused(const em_plan *plan, const em_plan_node *n) {
    int max = em_plan_max_id(plan);
    for (int i = 1; i <= max; i++) {
        const em_plan_node *r = em_plan_node_by_id(plan, i);
        if (r && r->kind == EM_NODE_REUSED_EXCHANGE && r->reuses == n)
            return true;
    }
    return false;
}

/* The id a Project's output `id` is a plain copy of, or -1. */
static int64_t projected_from(const em_plan_node *n, int64_t id) {
    int i = output_index(n, id);
    if (i < 0)
        return -1;
    const em_expr *e = n->output[i];
    if (e->kind == EM_EXPR_ALIAS && e->n_args == 1)
        e = e->args[0];
    return e->kind == EM_EXPR_ATTR ? e->id : -1;
}

static bool is_aggregate(const em_plan_node *n) {
    return n->kind == EM_NODE_HASH_AGGREGATE || n->kind == EM_NODE_SORT_AGGREGATE ||
           n->kind == EM_NODE_OBJECT_HASH_AGGREGATE;
}

static bool is_equi_join(const em_plan_node *n) {
    return (n->kind == EM_NODE_BROADCAST_HASH_JOIN || n->kind == EM_NODE_SHUFFLED_HASH_JOIN ||
            n->kind == EM_NODE_SORT_MERGE_JOIN) &&
           n->n_children == 2;
}

/* An aggregate groups by the plain column id. */
static bool groups_by(const em_plan_node *n, int64_t id) {
    const em_plan_field *k = em_plan_node_field(n, EM_FIELD_KEYS);
    if (!k)
        return false;
    for (int i = 0; i < k->n_exprs; i++)
        if (k->exprs[i]->kind == EM_EXPR_ATTR && k->exprs[i]->id == id)
            return true;
    return false;
}

/* Key pair i of a join as plain columns, or false. */
static bool key_pair(const em_plan_node *j, int i, int64_t *l, int64_t *r) {
    const em_plan_field *lk = em_plan_node_field(j, EM_FIELD_LEFT_KEYS);
    const em_plan_field *rk = em_plan_node_field(j, EM_FIELD_RIGHT_KEYS);
    if (!lk || !rk || i >= lk->n_exprs || i >= rk->n_exprs)
        return false;
    const em_expr *a = lk->exprs[i], *b = rk->exprs[i];
    if (a->kind != EM_EXPR_ATTR || b->kind != EM_EXPR_ATTR)
        return false;
    *l = a->id;
    *r = b->id;
    return true;
}

static int n_keys(const em_plan_node *j) {
    const em_plan_field *lk = em_plan_node_field(j, EM_FIELD_LEFT_KEYS);
    return lk ? lk->n_exprs : 0;
}

/* Whether every output row of join j that carries side `side`'s columns
 * stems from one row of that side (so dropping that row drops only rows
 * with its values): the inner side, the preserved side of an outer join,
 * the left side of semi, anti and existence joins. */
static bool side_preserved(const em_plan_node *j, int side) {
    switch (j->join_type) {
    case EM_JOIN_INNER:
    case EM_JOIN_CROSS:
        return true;
    case EM_JOIN_LEFT_OUTER:
    case EM_JOIN_LEFT_SEMI:
    case EM_JOIN_LEFT_ANTI:
    case EM_JOIN_EXISTENCE:
        return side == 0;
    case EM_JOIN_RIGHT_OUTER:
        return side == 1;
    default:
        return false;
    }
}

/* The broadcast column whose non-null values include every non-null value
 * of column id in n's output: *bc and *col, or false. */
static bool trace_source(const rf_walk *w, const em_plan_node *n, int64_t id, int depth,
                         const em_plan_node **bc, int *col) {
    if (depth > 64 || (n->is_input && !n->input_broadcast))
        return false;
    if (n->kind == EM_NODE_REUSED_EXCHANGE && !n->is_input)
        n = n->reuses;
    if (!n)
        return false;
    if (n->kind == EM_NODE_BROADCAST_EXCHANGE || n->is_input) { /* a fragment's broadcast input */
        *bc = n;
        *col = output_index(n, id);
        return *col >= 0;
    }
    if (em_node_kind_is_wrapper(n->kind) || n->kind == EM_NODE_FILTER ||
        n->kind == EM_NODE_SORT || n->kind == EM_NODE_EXCHANGE || n->kind == EM_NODE_COALESCE ||
        n->kind == EM_NODE_LOCAL_LIMIT || n->kind == EM_NODE_GLOBAL_LIMIT)
        return n->n_children == 1 && trace_source(w, n->children[0], id, depth + 1, bc, col);
    if (n->kind == EM_NODE_PROJECT) {
        int64_t from = projected_from(n, id);
        return from >= 0 && n->n_children == 1 &&
               trace_source(w, n->children[0], from, depth + 1, bc, col);
    }
    if (is_aggregate(n))
        return groups_by(n, id) && n->n_children == 1 &&
               trace_source(w, n->children[0], id, depth + 1, bc, col);
    if (!is_equi_join(n))
        return false;
    int side = output_index(n->children[0], id) >= 0 ? 0
               : output_index(n->children[1], id) >= 0 ? 1
                                                        : -1;
    if (side < 0)
        return false;
    if (trace_source(w, n->children[side], id, depth + 1, bc, col))
        return true;
    /* an inner or semi join's output keys equal the other side's */
    if (n->join_type != EM_JOIN_INNER && !(n->join_type == EM_JOIN_LEFT_SEMI && side == 0))
        return false;
    for (int i = 0, k = n_keys(n); i < k; i++) {
        int64_t l, r;
        if (!key_pair(n, i, &l, &r) || (side == 0 ? l : r) != id)
            continue;
        if (trace_source(w, n->children[1 - side], side == 0 ? r : l, depth + 1, bc, col))
            return true;
    }
    return false;
}

/* Whether a condition likely keeps few rows: a comparison, IN, LIKE or a
 * string match somewhere in its conjuncts (IS NOT NULL alone is what Spark
 * adds to every join key, and keeps nearly everything). */
static bool selective(const em_expr *e) {
    if (!e)
        return false;
    switch (e->kind) {
    case EM_EXPR_BINARY:
        if (e->op == EM_OP_AND)
            return e->n_args == 2 && (selective(e->args[0]) || selective(e->args[1]));
        if (e->op == EM_OP_OR)
            return e->n_args == 2 && selective(e->args[0]) && selective(e->args[1]);
        return e->op == EM_OP_EQ || e->op == EM_OP_NULLSAFE_EQ || e->op == EM_OP_LT ||
               e->op == EM_OP_LE || e->op == EM_OP_GT || e->op == EM_OP_GE;
    case EM_EXPR_IN:
    case EM_EXPR_INSET:
    case EM_EXPR_LIKE:
    case EM_EXPR_NOT:
        return true;
    case EM_EXPR_CALL:
        return e->name && (strcasecmp(e->name, "startswith") == 0 ||
                           strcasecmp(e->name, "endswith") == 0 ||
                           strcasecmp(e->name, "contains") == 0);
    default:
        return false;
    }
}

/* Whether the rows under n went through a selective filter (as Spark's
 * InjectRuntimeFilter asks of its creation side): a broadcast of a whole
 * table, whose keys are all the keys, would cost a set build and a probe
 * per scanned row and drop nothing. */
static bool filtered_below(const em_plan_node *n, int depth) {
    if (!n || depth > 64)
        return false;
    if (n->kind == EM_NODE_REUSED_EXCHANGE && !n->is_input)
        return filtered_below(n->reuses, depth + 1);
    if (n->kind == EM_NODE_FILTER) {
        const em_plan_field *c = em_plan_node_field(n, EM_FIELD_CONDITION);
        if (c && c->n_exprs > 0 && selective(c->exprs[0]))
            return true;
    }
    for (int i = 0; i < n->n_children; i++)
        if (filtered_below(n->children[i], depth + 1))
            return true;
    return false;
}

static void add_filter(rf_walk *w, const em_runtime_filter *f) {
    for (int i = 0; i < w->n; i++)
        if (w->out[i].scan == f->scan && w->out[i].scan_column == f->scan_column &&
            w->out[i].source == f->source && w->out[i].source_column == f->source_column)
            return;
    if (w->n == w->cap) {
        int ncap = w->cap ? w->cap * 2 : 8;
        em_runtime_filter *no = realloc(w->out, sizeof *no * (size_t)ncap);
        if (!no) {
            w->nomem = true;
            return;
        }
        w->out = no;
        w->cap = ncap;
    }
    w->out[w->n++] = *f;
}

/* Every scan under n whose rows without a value of f's source in column id
 * are of no use to n's consumer (f->join's side): added with f. */
static void trace_targets(rf_walk *w, const em_plan_node *n, int64_t id, int depth,
                          em_runtime_filter f) {
    if (depth > 64 || n->is_input)
        return;
    if (n->kind == EM_NODE_SCAN) {
        int c = output_index(n, id);
        if (c >= 0 && em_type_equal(n->output[c]->type, f.source->output[f.source_column]->type)) {
            f.scan = n;
            f.scan_column = c;
            add_filter(w, &f);
        }
        return;
    }
    if (n->kind == EM_NODE_EXCHANGE || n->kind == EM_NODE_BROADCAST_EXCHANGE) {
        if (reused(w->plan, n))
            return;
    }
    if (em_node_kind_is_wrapper(n->kind) || n->kind == EM_NODE_FILTER ||
        n->kind == EM_NODE_SORT || n->kind == EM_NODE_EXCHANGE ||
        n->kind == EM_NODE_BROADCAST_EXCHANGE || n->kind == EM_NODE_COALESCE) {
        if (n->n_children == 1)
            trace_targets(w, n->children[0], id, depth + 1, f);
        return;
    }
    if (n->kind == EM_NODE_PROJECT) {
        int64_t from = projected_from(n, id);
        if (from >= 0 && n->n_children == 1)
            trace_targets(w, n->children[0], from, depth + 1, f);
        return;
    }
    if (is_aggregate(n)) {
        if (groups_by(n, id) && n->n_children == 1)
            trace_targets(w, n->children[0], id, depth + 1, f);
        return;
    }
    if (!is_equi_join(n) && n->kind != EM_NODE_BROADCAST_NESTED_LOOP_JOIN)
        return;
    if (n->n_children != 2)
        return;
    int side = output_index(n->children[0], id) >= 0 ? 0
               : output_index(n->children[1], id) >= 0 ? 1
                                                        : -1;
    if (side < 0 || !side_preserved(n, side))
        return;
    trace_targets(w, n->children[side], id, depth + 1, f);
    if (n->join_type != EM_JOIN_INNER || !is_equi_join(n))
        return;
    /* an inner join's other side needs only the same keys */
    for (int i = 0, k = n_keys(n); i < k; i++) {
        int64_t l, r;
        if (key_pair(n, i, &l, &r) && (side == 0 ? l : r) == id)
            trace_targets(w, n->children[1 - side], side == 0 ? r : l, depth + 1, f);
    }
}

/* Whether join j outputs its side `side`'s unmatched rows (so they may not
 * be dropped). */
static bool keeps_unmatched(const em_plan_node *j, int side) {
    switch (j->join_type) {
    case EM_JOIN_INNER:
        return false;
    case EM_JOIN_LEFT_SEMI:
        return false;
    case EM_JOIN_LEFT_OUTER:
        return side == 0;
    case EM_JOIN_RIGHT_OUTER:
        return side == 1;
    default:
        return true; /* full outer, anti (null-aware or not), existence, cross */
    }
}

/* Whether e may give another value when evaluated again over the same
 * row: a second run of its pipeline could keep other rows. */
static bool volatile_expr(const em_expr *e, int depth) {
    static const char *const names[] = {"rand", "randn", "random", "uuid", "shuffle",
                                        "monotonically_increasing_id", "spark_partition_id",
                                        "input_file_name", "current_timestamp", "now"};
    if (!e || depth > 256)
        return e != NULL;
    if (e->kind == EM_EXPR_CALL && e->name)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcasecmp(e->name, names[i]) == 0)
                return true;
    for (int i = 0; i < e->n_args; i++)
        if (volatile_expr(e->args[i], depth + 1))
            return true;
    return false;
}

/* The broadcast a BroadcastHashJoin builds from (through wrappers and a
 * ReusedExchange), or NULL when its build side is anything else. */
static const em_plan_node *built_broadcast(const em_plan_node *j) {
    if (j->kind != EM_NODE_BROADCAST_HASH_JOIN || j->n_children != 2 ||
        j->build_side == EM_BUILD_NONE)
        return NULL;
    const em_plan_node *b = j->children[j->build_side == EM_BUILD_LEFT ? 0 : 1];
    while (em_node_kind_is_wrapper(b->kind) && b->n_children == 1)
        b = b->children[0];
    if (b->is_input)
        return NULL;
    if (b->kind == EM_NODE_REUSED_EXCHANGE)
        b = b->reuses;
    return b && b->kind == EM_NODE_BROADCAST_EXCHANGE ? b : NULL;
}

/* Whether n is a scan pipeline a runtime can run on its own, twice with
 * the same rows: wrappers, filters, projections and joins with broadcasts
 * (on their stream side), of expressions without randomness, over one
 * scan. */
static bool scan_pipeline(const em_plan_node *n, int depth) {
    if (!n || depth > 64 || n->is_input)
        return false;
    for (int f = 0; f < n->n_fields; f++)
        for (int i = 0; i < n->fields[f].n_exprs; i++)
            if (volatile_expr(n->fields[f].exprs[i], 0))
                return false;
    for (int i = 0; i < n->n_output; i++)
        if (volatile_expr(n->output[i], 0))
            return false;
    if (n->kind == EM_NODE_SCAN)
        return true;
    if (built_broadcast(n))
        return scan_pipeline(n->children[n->build_side == EM_BUILD_LEFT ? 1 : 0], depth + 1);
    if (n->n_children != 1)
        return false;
    if (!em_node_kind_is_wrapper(n->kind) && n->kind != EM_NODE_FILTER &&
        n->kind != EM_NODE_PROJECT)
        return false;
    return scan_pipeline(n->children[0], depth + 1);
}

/* The broadcast side of a BroadcastHashJoin and, on the other, a filtered
 * scan pipeline keyed by a plain column: a pre-pass filter for the scans
 * under the broadcast (see the head of this file). */
static void visit_prepass(rf_walk *w, const em_plan_node *n, int bside, int64_t bkey,
                          int64_t skey) {
    const em_plan_node *x = n->children[bside], *s = n->children[1 - bside];
    while (em_node_kind_is_wrapper(x->kind) && x->n_children == 1)
        x = x->children[0];
    if (n->kind != EM_NODE_BROADCAST_HASH_JOIN || x->kind != EM_NODE_BROADCAST_EXCHANGE ||
        x->is_input || reused(w->plan, x) || !scan_pipeline(s, 0))
        return;
    int col = output_index(s, skey);
    if (col < 0 || !filterable_type(s->output[col]->type))
        return;
    em_runtime_filter f = {.join = n, .source = s, .source_column = col, .prepass = true};
    trace_targets(w, x, bkey, 0, f);
}

static void visit(rf_walk *w, const em_plan_node *n, int depth) {
    if (depth > 256 || n->is_input)
        return;
    if (is_equi_join(n)) {
        for (int i = 0, k = n_keys(n); i < k; i++) {
            int64_t key[2];
            if (!key_pair(n, i, &key[0], &key[1]))
                continue;
            for (int side = 0; side < 2; side++) {
                if (keeps_unmatched(n, side))
                    continue;
                em_runtime_filter f = {.join = n};
                const em_plan_node *other = n->children[1 - side];
                if (!trace_source(w, other, key[1 - side], 0, &f.source, &f.source_column)) {
                    visit_prepass(w, n, side, key[side], key[1 - side]);
                    continue;
                }
                if (!filterable_type(f.source->output[f.source_column]->type))
                    continue;
                trace_targets(w, n->children[side], key[side], 0, f);
            }
        }
    }
    for (int i = 0; i < n->n_children; i++)
        visit(w, n->children[i], depth + 1);
}

static bool under(const em_plan_node *n, const em_plan_node *target, int depth) {
    if (!n || depth > 256)
        return false;
    if (n == target)
        return true;
    if (n->kind == EM_NODE_REUSED_EXCHANGE && !n->is_input)
        return under(n->reuses, target, depth + 1);
    for (int i = 0; i < n->n_children; i++)
        if (under(n->children[i], target, depth + 1))
            return true;
    return false;
}

/* Keeps the filters whose source is likely selective: a selective Filter
 * below it, or a scan below it narrowed by a kept filter (TPC-H q5: the
 * region's name narrows nation, whose keys narrow supplier, whose keys
 * narrow lineitem). A fragment's broadcast input shows no tree: kept. */
static int keep_selective(em_runtime_filter *fs, int n) {
    bool *sel = calloc((size_t)n + 1, sizeof *sel);
    if (!sel)
        return 0; /* no filters: a cost only, never a wrong answer */
    for (int i = 0; i < n; i++)
        sel[i] = fs[i].source->is_input || filtered_below(fs[i].source, 0);
    for (bool moved = true; moved;) {
        moved = false;
        for (int i = 0; i < n; i++)
            for (int j = 0; !sel[i] && j < n; j++)
                /* not through a pre-pass filter: a runtime may well skip it;
                 * and a pre-pass is not narrowed by a source built from the
                 * scan it narrows (that source waits for it: q12's orders
                 * by lineitem's keys) */
                if (sel[j] && !fs[j].prepass && under(fs[i].source, fs[j].scan, 0) &&
                    !(fs[i].prepass && under(fs[j].source, fs[i].scan, 0)))
                    sel[i] = moved = true;
    }
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (sel[i])
            fs[kept++] = fs[i];
    free(sel);
    return kept;
}

em_status em_plan_runtime_filters(const em_plan *plan, const em_plan_node *root,
                                  em_runtime_filter **out, int *n_out, em_error *err) {
    *out = NULL;
    *n_out = 0;
    rf_walk w = {.plan = plan};
    if (root)
        visit(&w, root, 0);
    if (w.nomem) {
        free(w.out);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning runtime filters");
    }
    *out = w.out;
    *n_out = keep_selective(w.out, w.n);
    return EM_OK;
}

static int cmp_filter_scan(const void *a, const void *b) {
    const em_runtime_filter *x = a, *y = b;
    if (x->scan->id != y->scan->id)
        return x->scan->id < y->scan->id ? -1 : 1;
    return x->scan_column - y->scan_column;
}

void em_runtime_filters_sort(em_runtime_filter *fs, int n) {
    if (n > 1)
        qsort(fs, (size_t)n, sizeof *fs, cmp_filter_scan);
}

int em_runtime_filters_of(const em_runtime_filter *fs, int n, const em_plan_node *scan,
                          const em_runtime_filter **out) {
    int i = 0;
    while (i < n && fs[i].scan != scan)
        i++;
    int k = 0;
    while (i + k < n && fs[i + k].scan == scan)
        k++;
    *out = k ? &fs[i] : NULL;
    return k;
}
