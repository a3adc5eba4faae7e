/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cutting a query into stages. A walk from the root makes one stage per Exchange (its map
 * side), per BroadcastExchange (its child, collected) and per scalar
 * subquery tree, keyed by the node, so a ReusedExchange or ReusedSubquery
 * finds the stage already made and the work is done once. A stage is
 * appended after every stage it reads, which makes the list a topological
 * order: running it front to back runs each input before its readers. A
 * root that needs all rows at once (TakeOrderedAndProject, CollectLimit)
 * gets a gather stage below it: its child's partitions collected into one,
 * which the root then reads through a synthetic single-partition exchange
 * (as Spark's driver merges per-partition results).
 * A stage's partitions, tasks and scheduling are runtime.c's.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/query.h"

bool em_rt_is_wrapper(const em_plan_node *n) {
    return n->n_children == 1 &&
           (n->kind == EM_NODE_COLUMNAR_TO_ROW || n->kind == EM_NODE_ROW_TO_COLUMNAR ||
            n->kind == EM_NODE_INPUT_ADAPTER || n->kind == EM_NODE_WHOLE_STAGE_CODEGEN ||
            n->kind == EM_NODE_SUBQUERY || n->kind == EM_NODE_REUSED_SUBQUERY ||
            n->kind == EM_NODE_SHUFFLE_QUERY_STAGE || n->kind == EM_NODE_BROADCAST_QUERY_STAGE ||
            n->kind == EM_NODE_AQE_SHUFFLE_READ);
}

const em_plan_node *em_rt_skip_wrappers(const em_plan_node *n) {
    while (em_rt_is_wrapper(n))
        n = n->children[0];
    return n;
}

rt_stage *em_rt_find_stage(const em_query *q, const em_plan_node *key) {
    if (key && key->kind == EM_NODE_REUSED_EXCHANGE && key->reuses)
        key = key->reuses; /* a reuse reads the stage of the exchange it names */
    for (int i = 0; i < q->n_stages; i++)
        if (q->stages[i]->node == key || q->stages[i]->alias == key)
            return q->stages[i];
    return NULL;
}

static em_status add_dep(rt_stage *st, const rt_stage *dep, em_error *err) {
    for (int i = 0; i < st->n_deps; i++)
        if (st->deps[i] == dep->index)
            return EM_OK;
    if (st->n_deps == st->cap_deps) {
        int ncap = st->cap_deps ? st->cap_deps * 2 : 4;
        int *nd = realloc(st->deps, sizeof *nd * (size_t)ncap);
        if (!nd)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory cutting stages");
        st->deps = nd;
        st->cap_deps = ncap;
    }
    st->deps[st->n_deps++] = dep->index;
    return EM_OK;
}

static em_status push_ptr(void ***arr, int *n, void *p, em_error *err) {
    void **na = realloc(*arr, sizeof *na * (size_t)(*n + 1));
    if (!na)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory cutting stages");
    na[(*n)++] = p;
    *arr = na;
    return EM_OK;
}

static em_status stage_for(em_query *q, rt_stage *reader, const em_plan_node *key,
                           em_stage_kind kind, rt_stage **out, em_error *err) {
    for (int i = 0; i < q->n_walking; i++)
        if (q->walking[i] == key)
            return EM_FAIL(err, EM_ERR_BIND, "%s (%d) reads its own output", em_rt_node_name(key),
                           key->id);
    rt_stage *st = em_rt_find_stage(q, key);
    if (!st)
        EM_TRY(em_rt_cut_stage(q, key, kind, &st, err));
    *out = st;
    return add_dep(reader, st, err);
}

static em_status walk_exprs(em_query *q, rt_stage *st, const em_expr *e, em_error *err) {
    if (!e)
        return EM_OK;
    if ((e->kind == EM_EXPR_SCALAR_SUBQUERY) && e->subquery) {
        rt_stage *sub;
        EM_TRY(stage_for(q, st, e->subquery, EM_STAGE_SUBQUERY, &sub, err));
    }
    for (int i = 0; i < e->n_args; i++)
        EM_TRY(walk_exprs(q, st, e->args[i], err));
    return EM_OK;
}

static em_status walk(em_query *q, rt_stage *st, const em_plan_node *n, bool root, em_error *err) {
    rt_stage *in = NULL;
    if (!root && (n->kind == EM_NODE_EXCHANGE || n->kind == EM_NODE_BROADCAST_EXCHANGE)) {
        bool bc = n->kind == EM_NODE_BROADCAST_EXCHANGE;
        EM_TRY(stage_for(q, st, n, bc ? EM_STAGE_BROADCAST : EM_STAGE_SHUFFLE, &in, err));
        return bc ? EM_OK : push_ptr((void ***)&st->shuffle_inputs, &st->n_shuffle_inputs, in, err);
    }
    if (n->kind == EM_NODE_REUSED_EXCHANGE) {
        const em_plan_node *t = n->reuses;
        if (!t || (t->kind != EM_NODE_EXCHANGE && t->kind != EM_NODE_BROADCAST_EXCHANGE))
            return EM_FAIL(err, EM_ERR_BIND, "ReusedExchange (%d): exchange %d not found", n->id,
                           n->reuses_id);
        bool bc = t->kind == EM_NODE_BROADCAST_EXCHANGE;
        EM_TRY(stage_for(q, st, t, bc ? EM_STAGE_BROADCAST : EM_STAGE_SHUFFLE, &in, err));
        in->n_reused++;
        return bc ? EM_OK : push_ptr((void ***)&st->shuffle_inputs, &st->n_shuffle_inputs, in, err);
    }
    if (n->kind == EM_NODE_SCAN)
        EM_TRY(push_ptr((void ***)&st->scans, &st->n_scans, (void *)n, err));
    st->bnlj_keeps_build |= em_op_bnlj_keeps_build(n);
    for (int f = 0; f < n->n_fields; f++)
        for (int i = 0; i < n->fields[f].n_exprs; i++)
            EM_TRY(walk_exprs(q, st, n->fields[f].exprs[i], err));
    for (int i = 0; i < n->n_children; i++)
        EM_TRY(walk(q, st, n->children[i], false, err));
    return EM_OK;
}

static em_status append_stage(em_query *q, rt_stage *st, em_error *err) {
    if (q->n_stages == q->cap_stages) {
        int ncap = q->cap_stages ? q->cap_stages * 2 : 8;
        rt_stage **ns = realloc(q->stages, sizeof *ns * (size_t)ncap);
        if (!ns)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory cutting stages");
        q->stages = ns;
        q->cap_stages = ncap;
    }
    st->index = q->n_stages;
    q->stages[q->n_stages++] = st;
    return EM_OK;
}

/* For a root TakeOrderedAndProject / CollectLimit: a gather stage for its
 * child, and a synthetic copy of the root reading it through a synthetic
 * single-partition Exchange. */
static em_status add_gather(em_query *q, rt_stage *st, const em_plan_node *top, em_error *err) {
    const em_plan_node *child = em_rt_skip_wrappers(top->children[0]);
    if (child->kind == EM_NODE_EXCHANGE || child->kind == EM_NODE_BROADCAST_EXCHANGE ||
        child->kind == EM_NODE_REUSED_EXCHANGE)
        return EM_OK; /* reads an exchange: checked for one partition when run */
    rt_stage *g = calloc(1, sizeof *g);
    if (!g)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory cutting stages");
    pthread_mutex_init(&g->spill_mu, NULL);
    g->kind = EM_STAGE_GATHER;
    g->node = child;
    g->build_root = child;
    g->n_out = 1;
    q->walking[q->n_walking++] = child;
    em_status s = walk(q, g, child, true, err);
    q->n_walking--;
    if (s == EM_OK)
        s = append_stage(q, g, err);
    if (s != EM_OK) {
        em_rt_stage_free(g);
        return s;
    }
    st->syn_exchange = calloc(1, sizeof *st->syn_exchange);
    st->syn_root = calloc(1, sizeof *st->syn_root);
    if (!st->syn_exchange || !st->syn_root)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory cutting stages");
    st->syn_exchange->kind = EM_NODE_EXCHANGE;
    st->syn_exchange->name = "Exchange";
    st->syn_exchange->codegen_id = -1;
    st->syn_exchange->n_output = child->n_output;
    st->syn_exchange->output = child->output;
    *st->syn_root = *top;
    st->syn_children[0] = st->syn_exchange;
    st->syn_root->n_children = 1;
    st->syn_root->children = st->syn_children;
    st->build_root = st->syn_root;
    g->alias = st->syn_exchange;
    EM_TRY(add_dep(st, g, err));
    /* the gathered stage is found through syn_exchange as this stage's input */
    return push_ptr((void ***)&st->shuffle_inputs, &st->n_shuffle_inputs, g, err);
}

/* The named_struct of a merged scalar subquery's root (Spark 3.3+ merges
 * scalar subqueries over one relation into `Project [named_struct(n1, v1,
 * ...) AS mergedValue#N]`), or NULL. */
static const em_expr *merged_struct(const em_plan_node *top) {
    if (top->kind != EM_NODE_PROJECT || top->n_children != 1 || top->n_output != 1)
        return NULL;
    const em_expr *e = top->output[0];
    while (e->kind == EM_EXPR_ALIAS && e->n_args == 1)
        e = e->args[0];
    return e->kind == EM_EXPR_CALL && e->name && strcmp(e->name, "named_struct") == 0 &&
                   e->n_args % 2 == 0
               ? e
               : NULL;
}

em_status em_rt_cut_stage(em_query *q, const em_plan_node *key, em_stage_kind kind,
                          rt_stage **out, em_error *err) {
    *out = NULL;
    if (q->n_walking >= (int)(sizeof q->walking / sizeof q->walking[0]))
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "exchanges nested more than %d deep",
                       (int)(sizeof q->walking / sizeof q->walking[0]));
    rt_stage *st = calloc(1, sizeof *st);
    if (!st)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory cutting stages");
    pthread_mutex_init(&st->spill_mu, NULL);
    st->kind = kind;
    st->node = key;
    st->build_root = key;
    st->n_out = 1;
    em_status s = EM_OK;
    if (kind == EM_STAGE_SHUFFLE) {
        s = em_rt_partitioning_parse(key, &st->part, err);
        st->n_out = st->part.n;
    }
    if (s == EM_OK && (key->kind == EM_NODE_EXCHANGE || key->kind == EM_NODE_BROADCAST_EXCHANGE) &&
        key->n_children != 1)
        s = EM_FAIL(err, EM_ERR_PARSE, "%s (%d) has %d children", em_rt_node_name(key), key->id,
                    key->n_children);
    q->walking[q->n_walking++] = key;
    if (s == EM_OK && (kind == EM_STAGE_RESULT || kind == EM_STAGE_SUBQUERY)) {
        const em_plan_node *top = em_rt_skip_wrappers(key);
        st->build_root = top;
        if (kind == EM_STAGE_SUBQUERY && (st->merged = merged_struct(top)))
            st->build_root = top->children[0];
        if ((top->kind == EM_NODE_TAKE_ORDERED_AND_PROJECT || top->kind == EM_NODE_COLLECT_LIMIT) &&
            top->n_children == 1) {
            s = add_gather(q, st, top, err);
            if (s == EM_OK && st->syn_root) {
                /* the walk below covers the root's own expressions only */
                for (int f = 0; s == EM_OK && f < top->n_fields; f++)
                    for (int i = 0; s == EM_OK && i < top->fields[f].n_exprs; i++)
                        s = walk_exprs(q, st, top->fields[f].exprs[i], err);
                q->n_walking--;
                goto appended;
            }
        }
    }
    if (s == EM_OK)
        s = walk(q, st, key, true, err);
    q->n_walking--;
    /* which sort-merge joins of the stage may hash either side and leave
     * their inputs unsorted: no operator of the stage relies on their order */
    if (s == EM_OK)
        em_plan_mark_order((em_plan *)q->plan, key);
appended:
    if (s == EM_OK)
        s = append_stage(q, st, err);
    if (s != EM_OK) {
        em_rt_stage_free(st);
        return s;
    }
    *out = st;
    return EM_OK;
}

/* ------------------------------------------------------------ runtime filters */

static bool reads_directly(const rt_stage *st, const rt_stage *in) {
    for (int i = 0; i < st->n_deps; i++)
        if (st->deps[i] == in->index)
            return true;
    return false;
}

static bool runs_scan(const rt_stage *st, const em_plan_node *scan) {
    for (int k = 0; k < st->n_scans; k++)
        if (st->scans[k] == scan)
            return true;
    return false;
}

/* Whether stage `from` reads stage `to`'s output, directly or not; seen
 * (a flag per stage, cleared by the caller) keeps the walk linear in a
 * plan whose stages are read along many paths. */
static bool reads_from(const em_query *q, const rt_stage *from, const rt_stage *to, bool *seen) {
    if (from == to)
        return true;
    if (seen[from->index])
        return false;
    seen[from->index] = true;
    for (int i = 0; i < from->n_deps; i++)
        if (reads_from(q, q->stages[from->deps[i]], to, seen))
            return true;
    return false;
}

static bool reads(const em_query *q, const rt_stage *from, const rt_stage *to, bool *seen) {
    memset(seen, 0, sizeof *seen * (size_t)q->n_stages);
    return reads_from(q, from, to, seen);
}

/* Whether st reads only scans and broadcasts of scans: cheap enough that a
 * scan elsewhere may wait for it. */
static bool reads_scans_only(const em_query *q, const rt_stage *st, int depth) {
    if (depth > q->n_stages || st->n_shuffle_inputs > 0)
        return false;
    for (int i = 0; i < st->n_deps; i++) {
        const rt_stage *d = q->stages[st->deps[i]];
        if (d->kind != EM_STAGE_BROADCAST || !reads_scans_only(q, d, depth + 1))
            return false;
    }
    return true;
}

/* Restores the list's topological order after new waits: each stage moves
 * after the stages it reads, the others keep their order (the result stage,
 * which reads them all, stays last). */
static em_status reorder_stages(em_query *q, em_error *err) {
    int n = q->n_stages;
    rt_stage **order = calloc((size_t)n, sizeof *order);
    bool *placed = calloc((size_t)n, sizeof *placed);
    int *new_index = calloc((size_t)n, sizeof *new_index);
    if (!order || !placed || !new_index) {
        free(order);
        free(placed);
        free(new_index);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory ordering stages");
    }
    int k = 0;
    while (k < n) {
        int pick = -1;
        for (int i = 0; i < n && pick < 0; i++) {
            if (placed[i] || (q->stages[i]->kind == EM_STAGE_RESULT && k < n - 1))
                continue;
            bool ready = true;
            for (int d = 0; d < q->stages[i]->n_deps && ready; d++)
                ready = placed[q->stages[i]->deps[d]];
            if (ready)
                pick = i;
        }
        if (pick < 0)
            break; /* a cycle: left for run_stages to report */
        placed[pick] = true;
        new_index[pick] = k;
        order[k++] = q->stages[pick];
    }
    if (k == n) {
        for (int i = 0; i < n; i++)
            for (int d = 0; d < order[i]->n_deps; d++)
                order[i]->deps[d] = new_index[order[i]->deps[d]];
        for (int i = 0; i < n; i++) {
            q->stages[i] = order[i];
            q->stages[i]->index = i;
        }
    }
    free(order);
    free(placed);
    free(new_index);
    return EM_OK;
}

/* The bytes of the files each scan reads (their sizes, no footer opened),
 * listed once per scan while the filters are planned; -1 when they cannot
 * be listed (the stage's own planning reports why). */
typedef struct rf_sizes {
    int n, cap;
    const em_plan_node **scans;
    int64_t *bytes;
} rf_sizes;

static int64_t scan_bytes(const em_query *q, rf_sizes *sz, const em_plan_node *scan) {
    for (int i = 0; i < sz->n; i++)
        if (sz->scans[i] == scan)
            return sz->bytes[i];
    char **paths = NULL;
    int n = 0;
    em_error e;
    int64_t bytes = -1;
    if (em_scan_files(scan, q->warehouse, &paths, &n, &e) == EM_OK) {
        bytes = 0;
        for (int i = 0; i < n; i++) {
            struct stat st;
            if (stat(paths[i], &st) == 0)
                bytes += (int64_t)st.st_size;
        }
        em_scan_files_free(paths, n);
    }
    if (sz->n < sz->cap) { /* else listed again when asked again: a cost only */
        sz->scans[sz->n] = scan;
        sz->bytes[sz->n++] = bytes;
    }
    return bytes;
}

/* The scan at the bottom of a pre-pass pipeline (through the stream side
 * of its broadcast joins). */
static const em_plan_node *pipeline_scan(const em_plan_node *n) {
    while (n && n->kind != EM_NODE_SCAN) {
        if (n->n_children == 2 && n->build_side != EM_BUILD_NONE)
            n = n->children[n->build_side == EM_BUILD_LEFT ? 1 : 0];
        else if (n->n_children == 1)
            n = n->children[0];
        else
            return NULL;
    }
    return n;
}

/* A pre-pass runs its pipeline twice (once for the keys, once as the
 * join's stream) to narrow the scan under the broadcast: worth it when the
 * pipeline's table is at most a PREPASS_RATIO-th of the broadcast's (in
 * file bytes). Not under a memory budget, whose re-planning of a broadcast
 * that does not fit knows only exchanges, nor under resource profiles, which size each stage
 * of Spark's from its shape (a stage Spark never runs has none), nor when
 * asked not to (a LORE dump). */
enum { PREPASS_RATIO = 2 };

static em_status prepass_stage(em_query *q, rf_sizes *sz, const em_runtime_filter *f,
                               rt_stage **out, em_error *err) {
    *out = NULL;
    if (q->opts.memory_budget >= 0 || q->profiled || !q->opts.prepass_filters)
        return EM_OK;
    rt_stage *st = em_rt_find_stage(q, f->source);
    if (st) {
        *out = st->kind == EM_STAGE_BROADCAST ? st : NULL;
        return EM_OK;
    }
    const em_plan_node *ps = pipeline_scan(f->source);
    int64_t small = ps ? scan_bytes(q, sz, ps) : -1, large = scan_bytes(q, sz, f->scan);
    if (small < 0 || large < 0 || small * PREPASS_RATIO > large)
        return EM_OK;
    /* a pipeline the runtime cannot cut costs the filter, never the query */
    em_error cerr;
    em_status s = em_rt_cut_stage(q, f->source, EM_STAGE_BROADCAST, out, &cerr);
    if (s == EM_ERR_NOMEM && err)
        *err = cerr;
    if (s != EM_OK)
        *out = NULL;
    return s == EM_ERR_NOMEM ? s : EM_OK;
}

/* Each stage's own list: the filters of its scans whose source it reads
 * directly (a pre-pass stage runs scans of the join's stage, whose other
 * filters wait for broadcasts it comes before). Called after reordering:
 * deps are indices. */
static em_status stage_filters(em_query *q, em_error *err) {
    for (int i = 0; i < q->n_stages; i++) {
        rt_stage *st = q->stages[i];
        for (int f = 0; f < q->n_filters; f++) {
            const em_runtime_filter *rf = &q->filters[f];
            rt_stage *source = em_rt_find_stage(q, rf->source);
            if (!runs_scan(st, rf->scan) || !source || source == st || !reads_directly(st, source))
                continue;
            if (!st->filters && !(st->filters = calloc((size_t)q->n_filters, sizeof *rf)))
                return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning runtime filters");
            st->filters[st->n_filters++] = *rf;
        }
    }
    return EM_OK;
}

typedef struct rf_rank {
    em_runtime_filter f;
    int64_t bytes; /* of the table the filter narrows */
    int order;     /* as found */
} rf_rank;

static int cmp_rank(const void *a, const void *b) {
    const rf_rank *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->order - y->order;
}

/* Two filters may each want their scan to wait for the other's source (the
 * orders scan for lineitem's keys, the lineitem scan for the orders'): the
 * first one taken wins. Taking them largest table (file bytes) first
 * narrows what costs most to read (without files to look at, in the order
 * found). */
static em_status largest_targets_first(const em_query *q, rf_sizes *sz, em_runtime_filter *fs,
                                       int n, em_error *err) {
    if (n < 2 || !q->warehouse)
        return EM_OK;
    rf_rank *r = calloc((size_t)n, sizeof *r);
    if (!r)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning runtime filters");
    for (int i = 0; i < n; i++)
        r[i] = (rf_rank){fs[i], scan_bytes(q, sz, fs[i].scan), i};
    qsort(r, (size_t)n, sizeof *r, cmp_rank);
    for (int i = 0; i < n; i++)
        fs[i] = r[i].f;
    free(r);
    return EM_OK;
}

/* A filter whose scan's stage reads its broadcast already costs no wait; a
 * new wait is taken only for a broadcast of scans (a dimension table's
 * filtered keys), never one that needs shuffles first: that would hold a
 * scan back behind a whole subtree and could close a cycle. A pre-pass
 * filter's source becomes a stage of its own (collected as a broadcast)
 * that the scan's stage waits for. */
em_status em_rt_plan_runtime_filters(em_query *q, em_error *err) {
    em_runtime_filter *fs = NULL;
    int n = 0;
    EM_TRY(em_plan_runtime_filters(q->plan, em_plan_exec_root(q->plan), &fs, &n, err));
    /* a filter's scan and a pre-pass pipeline's: at most two per filter */
    rf_sizes sz = {.cap = 2 * n};
    sz.scans = calloc((size_t)sz.cap + 1, sizeof *sz.scans);
    sz.bytes = calloc((size_t)sz.cap + 1, sizeof *sz.bytes);
    /* room for the pre-pass stages cut below, at most one per filter */
    bool *seen = calloc((size_t)(q->n_stages + n) + 1, sizeof *seen);
    em_status s = seen && sz.scans && sz.bytes
                      ? largest_targets_first(q, &sz, fs, n, err)
                      : EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning runtime filters");
    int kept = 0;
    for (int i = 0; i < n && s == EM_OK; i++) {
        rt_stage *source = NULL;
        if (fs[i].prepass)
            s = prepass_stage(q, &sz, &fs[i], &source, err);
        else
            source = em_rt_find_stage(q, fs[i].source);
        if (s != EM_OK || !source || source->kind != EM_STAGE_BROADCAST)
            continue;
        /* every stage running the scan: a pre-pass stage runs its
         * pipeline's scans too (and its keys narrow by the same filters) */
        bool used = false;
        for (int t = 0; t < q->n_stages && s == EM_OK; t++) {
            rt_stage *target = q->stages[t];
            if (target == source || !runs_scan(target, fs[i].scan))
                continue;
            if (!reads(q, target, source, seen) &&
                (!reads_scans_only(q, source, 0) || reads(q, source, target, seen)))
                continue;
            /* read directly, also when read through another stage: an
             * output is freed once its direct readers are done */
            s = add_dep(target, source, err);
            used = true;
        }
        if (used)
            fs[kept++] = fs[i];
    }
    free(sz.scans);
    free(sz.bytes);
    if (s == EM_OK && kept > 0)
        s = reorder_stages(q, err);
    if (s != EM_OK || kept == 0) {
        free(seen);
        free(fs);
        return s;
    }
    em_runtime_filters_sort(fs, kept);
    q->filters = fs;
    q->n_filters = kept;
    free(seen);
    return stage_filters(q, err);
}
