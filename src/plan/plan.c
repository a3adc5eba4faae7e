/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan's arena, the printer's text buffer, and the read accessors.
 *
 * A plan lives in one arena: chunks of at least 64 KiB, bump-allocated with
 * 16-byte alignment and freed all at once by em_plan_destroy. Nothing in a plan
 * is freed on its own, so the parser may abandon partial results (backtracked
 * operands, grown arrays) without bookkeeping; the waste is bounded by the
 * text size times a small factor.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

struct plan_arena_chunk {
    plan_arena_chunk *next;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK_MIN ((size_t)64 * 1024)

void *em_plan_arena_alloc(plan_arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (!a->head || a->cap - a->used < size) {
        size_t cap = size > ARENA_CHUNK_MIN ? size : ARENA_CHUNK_MIN;
        plan_arena_chunk *c = malloc(sizeof *c + cap);
        if (!c) {
            a->failed = true;
            return NULL;
        }
        c->next = a->head;
        c->cap = cap;
        a->head = c;
        a->used = 0;
        a->cap = cap;
        a->total += cap;
    }
    void *p = a->head->data + a->used;
    a->used += size;
    return p;
}

char *em_plan_arena_strndup(plan_arena *a, const char *s, size_t n) {
    char *d = em_plan_arena_alloc(a, n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void em_plan_arena_reset(plan_arena *a) {
    plan_arena_chunk *c = a->head;
    while (c) {
        plan_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    memset(a, 0, sizeof *a);
}

void em_plan_buf_put(plan_buf *b, const char *s, size_t n) {
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void em_plan_buf_puts(plan_buf *b, const char *s) { em_plan_buf_put(b, s, strlen(s)); }

void em_plan_buf_putc(plan_buf *b, char c) { em_plan_buf_put(b, &c, 1); }

void em_plan_buf_printf(plan_buf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        em_plan_buf_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    em_plan_buf_put(b, big, (size_t)n);
    free(big);
}

void em_plan_destroy(em_plan *plan) {
    if (!plan)
        return;
    em_plan_arena_reset(&plan->arena);
    free(plan->by_id);
    free(plan);
}

const em_plan_node *em_plan_root(const em_plan *plan) { return plan->root; }

const em_plan_node *em_plan_exec_root(const em_plan *plan) {
    const em_plan_node *root = plan->root;
    if (root->kind != EM_NODE_ADAPTIVE_SPARK_PLAN || root->n_children == 0)
        return root;
    for (int i = 0; i < root->n_children; i++) {
        const em_plan_node *c = root->children[i];
        if (c->kind == EM_NODE_AQE_SECTION && c->n_children == 1 &&
            (strcmp(c->name, "Final Plan") == 0 || strcmp(c->name, "Current Plan") == 0))
            return c->children[0];
    }
    return root->children[0]->kind == EM_NODE_AQE_SECTION ? root : root->children[0];
}

bool em_node_kind_is_wrapper(em_node_kind kind) {
    switch (kind) {
    case EM_NODE_COLUMNAR_TO_ROW:
    case EM_NODE_ROW_TO_COLUMNAR:
    case EM_NODE_INPUT_ADAPTER:
    case EM_NODE_WHOLE_STAGE_CODEGEN:
    case EM_NODE_SHUFFLE_QUERY_STAGE:
    case EM_NODE_BROADCAST_QUERY_STAGE:
    case EM_NODE_AQE_SHUFFLE_READ:
    case EM_NODE_ADAPTIVE_SPARK_PLAN:
    case EM_NODE_AQE_SECTION:
        return true;
    default:
        return false;
    }
}

bool em_plan_aggregate_below(const em_plan_node *c) {
    while (c) {
        switch (c->kind) {
        case EM_NODE_HASH_AGGREGATE:
        case EM_NODE_SORT_AGGREGATE:
        case EM_NODE_OBJECT_HASH_AGGREGATE:
            return true;
        case EM_NODE_REUSED_EXCHANGE:
            c = c->reuses;
            continue;
        case EM_NODE_COLUMNAR_TO_ROW:
        case EM_NODE_ROW_TO_COLUMNAR:
        case EM_NODE_INPUT_ADAPTER:
        case EM_NODE_WHOLE_STAGE_CODEGEN:
        case EM_NODE_EXCHANGE:
        case EM_NODE_SHUFFLE_QUERY_STAGE:
        case EM_NODE_AQE_SHUFFLE_READ:
        case EM_NODE_SORT:
            c = c->n_children > 0 ? c->children[0] : NULL;
            if (!c)
                return true; /* out of plan (a fragment's input read without its tree) */
            continue;
        default:
            return false;
        }
    }
    return true; /* no child in the plan (a synthetic source) */
}

/* wanted: whether n's consumer relies on the order of n's rows. */
static void mark_order(em_plan_node *n, bool wanted) {
    if (n->is_input)
        return;
    bool kids = wanted; /* what each child's order is wanted as */
    int hashed = -1;    /* a join's side that is hashed: its order never matters */
    switch (em_node_kind_is_wrapper(n->kind) ? EM_NODE_PROJECT : n->kind) {
    case EM_NODE_EXCHANGE:
    case EM_NODE_BROADCAST_EXCHANGE:
    case EM_NODE_REUSED_EXCHANGE:
        return; /* another stage below */
    case EM_NODE_PROJECT:
    case EM_NODE_FILTER:
    case EM_NODE_UNION:
    case EM_NODE_EXPAND:
    case EM_NODE_GENERATE:
    case EM_NODE_COALESCE:
        break; /* rows leave in the order they came */
    case EM_NODE_SORT:
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        kids = false; /* orders its rows anew, or hashes them */
        break;
    case EM_NODE_SORT_MERGE_JOIN:
        n->order_unwanted = !wanted;
        hashed = n->join_type == EM_JOIN_RIGHT_OUTER ? 0 : 1; /* as sort_merge_join.c builds */
        break;
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
        hashed = n->build_side == EM_BUILD_LEFT ? 0 : 1;
        break;
    default:
        /* limits (which rows they keep), windows and sort aggregates (they
         * rely on it), anything else: the order stays as Spark made it */
        kids = true;
        break;
    }
    for (int i = 0; i < n->n_children; i++)
        mark_order(n->children[i], i == hashed ? false : kids);
}

void em_plan_mark_order(em_plan *plan, const em_plan_node *stage_root) {
    (void)plan; /* the nodes are the plan's own: marking them is the plan's business */
    em_plan_node *root = (em_plan_node *)stage_root;
    if (!root)
        return;
    bool map_side = root->kind == EM_NODE_EXCHANGE || root->kind == EM_NODE_BROADCAST_EXCHANGE;
    if (map_side && !root->is_input) {
        for (int i = 0; i < root->n_children; i++)
            mark_order(root->children[i], false);
        return;
    }
    mark_order(root, true);
}

const em_plan_node *em_plan_node_by_id(const em_plan *plan, int id) {
    return id >= 1 && id <= plan->max_id ? plan->by_id[id] : NULL;
}

int em_plan_max_id(const em_plan *plan) { return plan->max_id; }

int em_plan_n_subqueries(const em_plan *plan) { return plan->n_subqueries; }

const em_plan_subquery *em_plan_subquery_at(const em_plan *plan, int i) {
    return i >= 0 && i < plan->n_subqueries ? &plan->subqueries[i] : NULL;
}

const em_shim *em_plan_shim(const em_plan *plan) { return plan->shim; }

const char *em_plan_shim_reason(const em_plan *plan) { return plan->shim_reason; }
bool em_plan_shim_uncertain(const em_plan *plan) { return plan->shim_uncertain; }

const em_plan_field *em_plan_node_field(const em_plan_node *node, em_field_kind kind) {
    for (int i = 0; i < node->n_fields; i++)
        if (node->fields[i].kind == kind)
            return &node->fields[i];
    return NULL;
}

const char *em_expr_kind_name(em_expr_kind k) {
    static const char *const names[EM_EXPR_KIND_COUNT_] = {
        "attribute",
        "literal",
        "call",
        "aggregate",
        "binary",
        "not",
        "negate",
        "in",
        "inset",
        "in-subquery",
        "like",
        "case",
        "cast",
        "alias",
        "sort-order",
        "bound-reference",
        "scalar-subquery",
        "field",
        "type",
        "list",
        "window",
        "plan-id",
        "raw",
    };
    return k < EM_EXPR_KIND_COUNT_ ? names[k] : "?";
}
