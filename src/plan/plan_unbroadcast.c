/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A broadcast that does not fit in memory, planned again as a shuffle: each
 * BroadcastHashJoin reading it becomes a ShuffledHashJoin whose two sides are
 * hash-partitioned by their join keys, which is what Spark plans when a
 * build side is over spark.sql.autoBroadcastJoinThreshold. A task then holds
 * one partition of the build side instead of all of it, and the shuffles
 * spill. Partitioning both sides with Spark's hash of the keys, into the same
 * number of partitions, puts every pair of matching rows in one task; a
 * stream row without a match (outer, anti, existence joins) is answered by
 * the task its key goes to, as the broadcast join answered it.
 *
 * Not for a null-aware anti join (NOT IN): its answer depends on whether the
 * whole build side holds a null key or is empty, which no partition knows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

static const em_plan_node *resolve(const em_plan_node *c) {
    return c && c->kind == EM_NODE_REUSED_EXCHANGE ? c->reuses : c;
}

typedef struct readers {
    em_plan_node **joins;
    int n, cap;
    const em_plan_node *other; /* a reader that is not a rewritable join */
    const char *why;           /* and why not */
} readers;

static bool push_join(readers *r, em_plan_node *j) {
    for (int i = 0; i < r->n; i++)
        if (r->joins[i] == j)
            return true;
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 4;
        em_plan_node **nj = realloc(r->joins, sizeof *nj * (size_t)nc);
        if (!nj)
            return false;
        r->joins = nj;
        r->cap = nc;
    }
    r->joins[r->n++] = j;
    return true;
}

/* Why j cannot read its child `child` (the broadcast) as a shuffle, or NULL
 * when it can: a broadcast hash join with keys building on that side. */
static const char *not_rewritable(const em_plan_node *j, int child) {
    static const char *const need_all =
        "which needs all of it (only a broadcast hash join with keys can read it as a shuffle)";
    if (j->kind != EM_NODE_BROADCAST_HASH_JOIN || j->n_children != 2 ||
        j->build_side == EM_BUILD_NONE || child != (j->build_side == EM_BUILD_LEFT ? 0 : 1))
        return need_all;
    const em_plan_field *l = em_plan_node_field(j, EM_FIELD_LEFT_KEYS);
    const em_plan_field *r = em_plan_node_field(j, EM_FIELD_RIGHT_KEYS);
    if (!l || !r || l->n_exprs == 0 || l->n_exprs != r->n_exprs)
        return need_all;
    static const char *const naaj = "a null-aware anti join (NOT IN), whose answer depends on "
                                    "the whole build side (a null key, or none at all)";
    if (j->join_type == EM_JOIN_LEFT_ANTI) {
        if (j->null_aware_anti)
            return naaj;
        const em_plan_node *x = resolve(j->children[child]);
        const em_plan_field *a = x ? em_plan_node_field(x, EM_FIELD_ARGUMENTS) : NULL;
        for (int i = 0; a && i < a->n_exprs; i++) {
            const em_expr *e = a->exprs[i];
            const em_expr *last = e->kind == EM_EXPR_CALL && e->n_args >= 2 && e->name &&
                                          !strcmp(e->name, "HashedRelationBroadcastMode")
                                      ? e->args[e->n_args - 1]
                                      : NULL;
            if (last && last->text && !strcmp(last->text, "true"))
                return naaj;
        }
    }
    return NULL;
}

/* Whether n, between a join and the end of its stage, relies on how the
 * join's rows are spread over partitions (a final aggregate, a join or window
 * over its keys, a global limit or sort): the rewrite partitions them by the
 * join keys instead. A partial aggregate (every function partial_) does not,
 * nor a root that needs all rows at once (the runtime gathers them). */
static bool needs_distribution(const em_plan_node *n, const em_plan_node *parent) {
    switch (n->kind) {
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE: {
        const em_plan_field *f = em_plan_node_field(n, EM_FIELD_FUNCTIONS);
        /* keys only (DISTINCT): partial and final print alike, but Spark
         * shuffles right above a partial one */
        if (!f || f->n_exprs == 0)
            return !parent || parent->kind != EM_NODE_EXCHANGE;
        for (int i = 0; i < f->n_exprs; i++)
            if (f->exprs[i]->kind != EM_EXPR_AGG || f->exprs[i]->mode != EM_AGG_PARTIAL)
                return true;
        return false;
    }
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
    case EM_NODE_WINDOW:
    case EM_NODE_WINDOW_GROUP_LIMIT:
    case EM_NODE_GLOBAL_LIMIT:
    case EM_NODE_SORT: /* a global one keeps the range partitioning below the join */
        return true;
    default:
        return false;
    }
}

static bool stage_boundary(const em_plan_node *n) {
    return n->kind == EM_NODE_EXCHANGE || n->kind == EM_NODE_BROADCAST_EXCHANGE ||
           n->kind == EM_NODE_SHUFFLE_QUERY_STAGE || n->kind == EM_NODE_BROADCAST_QUERY_STAGE;
}

static void refuse(readers *r, const em_plan_node *n, const char *why) {
    if (!r->other) {
        r->other = n;
        r->why = why;
    }
}

/* Collects the readers of broadcast x under n; path[0..depth) are n's
 * ancestors, nearest last. */
static bool find_readers(em_plan_node *n, const em_plan_node *x, readers *r,
                         const em_plan_node **path, int depth) {
    if (!n || depth >= 4096)
        return true;
    for (int i = 0; i < n->n_children; i++) {
        em_plan_node *c = n->children[i];
        bool reused = c != x && c->kind == EM_NODE_REUSED_EXCHANGE && c->reuses == x;
        if (c == x || reused) {
            const char *why = not_rewritable(n, i);
            if (!why && reused && c->n_output != x->n_output)
                why = "through a ReusedExchange of another width";
            for (int a = depth - 1; !why && a >= 0 && !stage_boundary(path[a]); a--)
                if (needs_distribution(path[a], a > 0 ? path[a - 1] : NULL))
                    why = "under an operator of its stage that relies on how the join's rows "
                          "are partitioned, which a shuffled join would change";
            if (why)
                refuse(r, n, why);
            else if (!push_join(r, n))
                return false;
        }
        path[depth] = n;
        if (c != x && !find_readers(c, x, r, path, depth + 1))
            return false;
    }
    return true;
}

static em_expr *count_literal(em_plan *plan, int partitions) {
    em_expr *e = em_plan_arena_alloc(&plan->arena, sizeof *e);
    char text[16];
    int len = snprintf(text, sizeof text, "%d", partitions);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->kind = EM_EXPR_LITERAL;
    e->text = em_plan_arena_strndup(&plan->arena, text, (size_t)len);
    e->type = em_type_make(EM_TYPE_INT);
    e->type_known = true;
    return e;
}

/* Gives n the next free operator id and lists it; false when out of memory. */
static bool take_id(em_plan *plan, em_plan_node *n) {
    em_plan_node **by_id = realloc(plan->by_id, sizeof *by_id * (size_t)(plan->max_id + 2));
    if (!by_id)
        return false;
    plan->by_id = by_id;
    n->id = ++plan->max_id;
    by_id[n->id] = n;
    return true;
}

/* A new Exchange hash-partitioning child's rows by keys, with the next free
 * operator id. */
static em_plan_node *new_exchange(em_plan *plan, em_plan_node *child, const em_plan_field *keys,
                                  int partitions) {
    plan_arena *a = &plan->arena;
    em_plan_node *x = em_plan_arena_alloc(a, sizeof *x);
    em_expr *hp = em_plan_arena_alloc(a, sizeof *hp);
    em_plan_field *f = em_plan_arena_alloc(a, sizeof *f * 2);
    em_plan_node **kids = em_plan_arena_alloc(a, sizeof *kids);
    em_expr **args = em_plan_arena_alloc(a, sizeof *args * (size_t)(keys->n_exprs + 1));
    em_expr **arg_list = em_plan_arena_alloc(a, sizeof *arg_list);
    em_expr *count = count_literal(plan, partitions);
    if (!x || !hp || !f || !kids || !args || !arg_list || !count || a->failed)
        return NULL;
    memset(hp, 0, sizeof *hp);
    hp->kind = EM_EXPR_CALL;
    hp->name = "hashpartitioning";
    for (int k = 0; k < keys->n_exprs; k++)
        args[k] = keys->exprs[k];
    args[keys->n_exprs] = count;
    hp->n_args = keys->n_exprs + 1;
    hp->args = args;
    arg_list[0] = hp;
    memset(f, 0, sizeof *f * 2);
    f[0].kind = EM_FIELD_INPUT;
    f[0].label = "Input";
    f[0].counted = true;
    f[0].n_exprs = child->n_output;
    f[0].exprs = child->output;
    f[1].kind = EM_FIELD_ARGUMENTS;
    f[1].label = "Arguments";
    f[1].n_exprs = 1;
    f[1].exprs = arg_list;
    memset(x, 0, sizeof *x);
    x->kind = EM_NODE_EXCHANGE;
    x->name = "Exchange";
    x->codegen_id = -1;
    x->source_index = -1;
    x->n_children = 1;
    kids[0] = child;
    x->children = kids;
    x->n_fields = 2;
    x->fields = f;
    x->n_output = child->n_output;
    x->output = child->output;
    return take_id(plan, x) ? x : NULL;
}

/* e with every attribute of from's output replaced by to's at the same
 * place (a ReusedExchange's ids by the ids of the tree it reads); shares
 * what it does not change. NULL when out of memory. */
static em_expr **rename_list(em_plan *plan, int n, em_expr **src, const em_plan_node *from,
                             const em_plan_node *to);

static em_expr *rename_attrs(em_plan *plan, em_expr *e, const em_plan_node *from,
                             const em_plan_node *to) {
    if (e->kind == EM_EXPR_ATTR) {
        for (int k = 0; k < from->n_output && k < to->n_output; k++)
            if (from->output[k]->id == e->id)
                return to->output[k];
        return e;
    }
    if (e->n_args == 0)
        return e;
    em_expr *c = em_plan_arena_alloc(&plan->arena, sizeof *c);
    em_expr **args = c ? rename_list(plan, e->n_args, e->args, from, to) : NULL;
    if (!args)
        return NULL;
    *c = *e;
    c->args = args;
    return c;
}

/* A new list of n expressions, each renamed as above; NULL when out of memory. */
static em_expr **rename_list(em_plan *plan, int n, em_expr **src, const em_plan_node *from,
                             const em_plan_node *to) {
    em_expr **out = em_plan_arena_alloc(&plan->arena, sizeof *out * (size_t)(n > 0 ? n : 1));
    for (int i = 0; out && i < n; i++)
        if (!(out[i] = rename_attrs(plan, src[i], from, to)))
            return NULL;
    return out;
}

/* The build sides made so far, by their partitioning keys' text: joins that
 * partition the relation alike read one shuffle of it. */
typedef struct built {
    int n;
    char *keys[64];
    em_plan_node *exchange[64];
} built;

static void built_reset(built *b) {
    for (int i = 0; i < b->n; i++)
        free(b->keys[i]);
}

/* The keys' text (NULL when out of memory; caller frees). */
static char *keys_text(const em_plan *plan, const em_plan_field *keys, em_error *err) {
    size_t len = 0, cap = 64;
    char *text = malloc(cap);
    for (int k = 0; text && k < keys->n_exprs; k++) {
        char *one = NULL;
        size_t n = 0;
        if (em_expr_print(keys->exprs[k], plan->shim, &one, &n, err) != EM_OK) {
            free(text);
            return NULL;
        }
        if (len + n + 2 > cap) {
            cap = (len + n + 2) * 2;
            char *grown = realloc(text, cap);
            if (!grown)
                free(text);
            text = grown;
        }
        if (text) {
            memcpy(text + len, one, n);
            len += n;
            text[len++] = '\x1f';
        }
        free(one);
    }
    if (text)
        text[len] = '\0';
    return text;
}

/* A read of exchange x under the given output (its ids): a new
 * ReusedExchange, as Spark prints a second read of one shuffle. */
static em_plan_node *reuse_of(em_plan *plan, em_plan_node *x, int n_output, em_expr **output) {
    em_plan_node *r = em_plan_arena_alloc(&plan->arena, sizeof *r);
    em_plan_field *f = em_plan_arena_alloc(&plan->arena, sizeof *f);
    if (!r || !f)
        return NULL;
    memset(f, 0, sizeof *f);
    f->kind = EM_FIELD_OUTPUT;
    f->label = "Output";
    f->counted = true;
    f->n_exprs = n_output;
    f->exprs = output;
    memset(r, 0, sizeof *r);
    r->kind = EM_NODE_REUSED_EXCHANGE;
    r->name = "ReusedExchange";
    r->codegen_id = -1;
    r->source_index = -1;
    r->n_fields = 1;
    r->fields = f;
    r->n_output = n_output;
    r->output = output;
    r->reuses = x;
    r->reuses_id = x->id;
    return take_id(plan, r) ? r : NULL;
}

/* The join's build side as a shuffle: an Exchange over the broadcast's tree,
 * or a ReusedExchange of the one an earlier join made with the same keys, or
 * of a new one when the join read the relation through a ReusedExchange
 * (whose own ids its keys and condition name). */
static em_plan_node *build_exchange(em_plan *plan, em_plan_node *read, const em_plan_node *bx,
                                    em_plan_node *build_in, const em_plan_field *keys,
                                    int partitions, built *made, em_error *err) {
    const em_plan_field *base = keys;
    if (read != bx) {
        em_plan_field *mapped = em_plan_arena_alloc(&plan->arena, sizeof *mapped);
        em_expr **exprs = rename_list(plan, keys->n_exprs, keys->exprs, read, bx);
        if (!mapped || !exprs)
            return NULL;
        *mapped = *keys;
        mapped->exprs = exprs;
        base = mapped;
    }
    char *text = keys_text(plan, base, err);
    if (!text)
        return NULL;
    em_plan_node *x = NULL;
    for (int i = 0; i < made->n && !x; i++)
        if (!strcmp(made->keys[i], text))
            x = made->exchange[i];
    if (x) {
        free(text);
        return reuse_of(plan, x, read->n_output, read->output);
    }
    x = new_exchange(plan, build_in, base, partitions);
    if (x && made->n < 64) {
        made->keys[made->n] = text;
        made->exchange[made->n++] = x;
    } else {
        free(text);
    }
    if (!x || read == bx)
        return x;
    return reuse_of(plan, x, read->n_output, read->output);
}

static em_status rewrite(em_plan *plan, em_plan_node *j, int partitions, built *made,
                         em_error *err) {
    int b = j->build_side == EM_BUILD_LEFT ? 0 : 1;
    const em_plan_node *bx = resolve(j->children[b]);
    em_plan_node *build_in = bx->n_children == 1 ? bx->children[0] : NULL;
    if (!build_in)
        return EM_FAIL(err, EM_ERR_BIND, "%s (%d): the broadcast has no child", bx->name, bx->id);
    const em_plan_field *keys[2] = {em_plan_node_field(j, EM_FIELD_LEFT_KEYS),
                                    em_plan_node_field(j, EM_FIELD_RIGHT_KEYS)};
    em_plan_node **kids = em_plan_arena_alloc(&plan->arena, sizeof *kids * 2);
    em_plan_node *l = b == 0 ? build_exchange(plan, j->children[0], bx, build_in, keys[0],
                                              partitions, made, err)
                             : new_exchange(plan, j->children[0], keys[0], partitions);
    em_plan_node *r = !l     ? NULL
                      : b == 1 ? build_exchange(plan, j->children[1], bx, build_in, keys[1],
                                                partitions, made, err)
                               : new_exchange(plan, j->children[1], keys[1], partitions);
    if (!kids || !l || !r)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory planning %s (%d) as a shuffled join",
                       j->name, j->id);
    kids[0] = l;
    kids[1] = r;
    j->kind = EM_NODE_SHUFFLED_HASH_JOIN;
    j->name = "ShuffledHashJoin";
    j->children = kids;
    return EM_OK;
}

/* The most partitions a hash Exchange of the tree spreads its rows over
 * (Spark's spark.sql.shuffle.partitions when it printed the plan); 0: none. */
static int plan_hash_partitions(const em_plan_node *n, int depth) {
    if (!n || depth > 4096)
        return 0;
    int most = 0;
    const em_plan_field *a =
        n->kind == EM_NODE_EXCHANGE ? em_plan_node_field(n, EM_FIELD_ARGUMENTS) : NULL;
    const em_expr *p = a && a->n_exprs > 0 ? a->exprs[0] : NULL;
    if (p && p->kind == EM_EXPR_CALL && p->name && !strcmp(p->name, "hashpartitioning") &&
        p->n_args >= 2 && p->args[p->n_args - 1]->text)
        most = atoi(p->args[p->n_args - 1]->text);
    for (int i = 0; i < n->n_children; i++) {
        int c = plan_hash_partitions(n->children[i], depth + 1);
        most = c > most ? c : most;
    }
    return most;
}

em_status em_plan_unbroadcast(em_plan *plan, const em_plan_node *exchange, int min_partitions,
                              int *n_joins, int *n_partitions, em_error *err) {
    *n_joins = 0;
    int partitions = plan_hash_partitions(plan->root, 0);
    for (int i = 0; i < plan->n_subqueries; i++) {
        int p = plan_hash_partitions(plan->subqueries[i].root, 0);
        partitions = p > partitions ? p : partitions;
    }
    if (partitions < min_partitions)
        partitions = min_partitions;
    if (!exchange || exchange->kind != EM_NODE_BROADCAST_EXCHANGE)
        return EM_FAIL(err, EM_ERR_INVALID, "not a BroadcastExchange");
    if (partitions < 1 || partitions > 1000000)
        return EM_FAIL(err, EM_ERR_INVALID, "partition count %d out of range", partitions);
    readers r = {0};
    const em_plan_node **path = malloc(sizeof *path * 4096);
    bool ok = path && find_readers(plan->root, exchange, &r, path, 0);
    for (int i = 0; ok && i < plan->n_subqueries; i++)
        ok = find_readers(plan->subqueries[i].root, exchange, &r, path, 0);
    free(path);
    em_status s = EM_OK;
    if (!ok)
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    else if (r.other)
        s = EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d) is read by %s (%d), %s", exchange->name,
                    exchange->id, r.other->name, r.other->id, r.why);
    else if (r.n == 0)
        s = EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d) has no broadcast hash join reading it",
                    exchange->name, exchange->id);
    built made = {0};
    for (int i = 0; s == EM_OK && i < r.n; i++)
        s = rewrite(plan, r.joins[i], partitions, &made, err);
    built_reset(&made);
    if (s == EM_OK)
        *n_joins = r.n;
    if (s == EM_OK && n_partitions)
        *n_partitions = partitions;
    free(r.joins);
    return s;
}
