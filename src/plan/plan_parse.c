/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EXPLAIN FORMATTED text -> em_plan.
 *
 * The text has three parts, read line by line:
 *
 *   == Physical Plan ==            the tree: one line per operator, pre-order;
 *   * Sort (9)                     3-character cells (":  " or "   ") per
 *   +- Exchange (8)                ancestor, then ":- " (more siblings follow)
 *      ...                         or "+- " (last child), "* " when the
 *                                  operator runs in whole-stage codegen, the
 *                                  label and "(id)".
 *   (1) Scan parquet default.t     detail blocks, one per operator id, each a
 *   Output [7]: [...]              header and "Label [n]: value" fields,
 *   ...                            separated by blank lines.
 *
 *   ===== Subqueries =====         "Subquery:K Hosting operator id = H Hosting
 *   Subquery:1 Hosting ...         Expression = e", then the subquery's own tree
 *                                  and blocks (absent when printed before).
 *
 * The tree gives the structure; blocks are attached by id. Field values are
 * handed to the expression parser (expr_parse.c) with their line and column
 * so errors point into the original text. While reading, the parser counts
 * version-specific printed forms (em_dialect_evidence) for the shims.
 *
 * Lenient on what Spark may print for a user (real ids, `L` suffixes, real
 * Location paths, a missing "== Physical Plan ==" line); strict on structure:
 * an operator without a detail block, a block without an operator, a list
 * whose "[n]" disagrees with its items, or a ReusedExchange pointing nowhere
 * is an error naming the line.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

#define PLAN_MAX_ID 1000000

typedef struct plan_line {
    const char *s;
    size_t n;
} plan_line;

typedef struct plan_parser {
    em_plan *plan;
    plan_line *lines; /* malloc'ed */
    int n_lines;
    int cur;
    const char *src;
    em_error *err;
    bool *has_block; /* per id, malloc'ed */
    int cap_id;
    int n_subq_cap;
} plan_parser;

static em_status pp_error(plan_parser *pp, int line, int col, const char *fmt, ...) EM_PRINTF(4, 5);
static em_status pp_error(plan_parser *pp, int line, int col, const char *fmt, ...) {
    char msg[EM_ERROR_MSG_CAP / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return EM_FAIL(pp->err, EM_ERR_PARSE, "%s:%d:%d: %s", pp->src, line + 1, col + 1, msg);
}

static em_status pp_nomem(plan_parser *pp) {
    return EM_FAIL(pp->err, EM_ERR_NOMEM, "%s: out of memory while parsing the plan", pp->src);
}

static bool line_is(const plan_line *l, const char *lit) {
    size_t n = strlen(lit);
    return l->n == n && memcmp(l->s, lit, n) == 0;
}

static bool line_starts(const plan_line *l, const char *lit) {
    size_t n = strlen(lit);
    return l->n >= n && memcmp(l->s, lit, n) == 0;
}

static bool line_blank(const plan_line *l) {
    for (size_t i = 0; i < l->n; i++)
        if (l->s[i] != ' ' && l->s[i] != '\t')
            return false;
    return true;
}

static em_status split_lines(plan_parser *pp, const char *text, size_t len) {
    int cap = 64, n = 0;
    plan_line *lines = malloc((size_t)cap * sizeof *lines);
    if (!lines)
        return pp_nomem(pp);
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t end = j;
        while (end > i && text[end - 1] == '\r') /* CRLF (or worse) line ends */
            end--;
        const char *nul = memchr(text + i, '\0', end - i);
        if (nul) {
            free(lines);
            return pp_error(pp, n, (int)(nul - (text + i)), "unexpected NUL byte in the plan text");
        }
        if (n == cap) {
            cap *= 2;
            plan_line *grown = realloc(lines, (size_t)cap * sizeof *lines);
            if (!grown) {
                free(lines);
                return pp_nomem(pp);
            }
            lines = grown;
        }
        lines[n].s = text + i;
        lines[n].n = end - i;
        n++;
        i = j + 1;
    }
    pp->lines = lines;
    pp->n_lines = n;
    return EM_OK;
}

/* ------------------------------------------------------------------ nodes */

static const struct {
    const char *name;
    em_node_kind kind;
} node_names[] = {
    {"ColumnarToRow", EM_NODE_COLUMNAR_TO_ROW},
    {"RowToColumnar", EM_NODE_ROW_TO_COLUMNAR},
    {"Filter", EM_NODE_FILTER},
    {"Project", EM_NODE_PROJECT},
    {"HashAggregate", EM_NODE_HASH_AGGREGATE},
    {"SortAggregate", EM_NODE_SORT_AGGREGATE},
    {"ObjectHashAggregate", EM_NODE_OBJECT_HASH_AGGREGATE},
    {"Exchange", EM_NODE_EXCHANGE},
    {"BroadcastExchange", EM_NODE_BROADCAST_EXCHANGE},
    {"ReusedExchange", EM_NODE_REUSED_EXCHANGE},
    {"BroadcastHashJoin", EM_NODE_BROADCAST_HASH_JOIN},
    {"SortMergeJoin", EM_NODE_SORT_MERGE_JOIN},
    {"ShuffledHashJoin", EM_NODE_SHUFFLED_HASH_JOIN},
    {"BroadcastNestedLoopJoin", EM_NODE_BROADCAST_NESTED_LOOP_JOIN},
    {"CartesianProduct", EM_NODE_CARTESIAN_PRODUCT},
    {"Sort", EM_NODE_SORT},
    {"TakeOrderedAndProject", EM_NODE_TAKE_ORDERED_AND_PROJECT},
    {"CollectLimit", EM_NODE_COLLECT_LIMIT},
    {"GlobalLimit", EM_NODE_GLOBAL_LIMIT},
    {"LocalLimit", EM_NODE_LOCAL_LIMIT},
    {"Union", EM_NODE_UNION},
    {"Expand", EM_NODE_EXPAND},
    {"Window", EM_NODE_WINDOW},
    {"WindowGroupLimit", EM_NODE_WINDOW_GROUP_LIMIT},
    {"LocalTableScan", EM_NODE_LOCAL_TABLE_SCAN},
    {"Subquery", EM_NODE_SUBQUERY},
    {"ReusedSubquery", EM_NODE_REUSED_SUBQUERY},
    {"InputAdapter", EM_NODE_INPUT_ADAPTER},
    {"WholeStageCodegen", EM_NODE_WHOLE_STAGE_CODEGEN},
    {"AdaptiveSparkPlan", EM_NODE_ADAPTIVE_SPARK_PLAN},
    {"Coalesce", EM_NODE_COALESCE},
    {"Generate", EM_NODE_GENERATE},
    {"ShuffleQueryStage", EM_NODE_SHUFFLE_QUERY_STAGE},
    {"BroadcastQueryStage", EM_NODE_BROADCAST_QUERY_STAGE},
    {"AQEShuffleRead", EM_NODE_AQE_SHUFFLE_READ},
    {"CustomShuffleReader", EM_NODE_AQE_SHUFFLE_READ},
};

em_node_kind em_plan_node_kind_named(const char *name, size_t n) {
    for (size_t k = 0; k < sizeof node_names / sizeof node_names[0]; k++)
        if (strlen(node_names[k].name) == n && memcmp(node_names[k].name, name, n) == 0)
            return node_names[k].kind;
    return EM_NODE_UNKNOWN;
}

const char *em_node_kind_name(em_node_kind kind) {
    if (kind == EM_NODE_SCAN)
        return "Scan";
    for (size_t i = 0; i < sizeof node_names / sizeof node_names[0]; i++)
        if (node_names[i].kind == kind)
            return node_names[i].name;
    return "Unknown";
}

static bool is_join(em_node_kind k) {
    return k == EM_NODE_BROADCAST_HASH_JOIN || k == EM_NODE_SORT_MERGE_JOIN ||
           k == EM_NODE_SHUFFLED_HASH_JOIN || k == EM_NODE_BROADCAST_NESTED_LOOP_JOIN ||
           k == EM_NODE_CARTESIAN_PRODUCT;
}

static const struct {
    const char *text;
    em_join_type type;
} join_names[] = {
    {"Inner", EM_JOIN_INNER},
    {"LeftOuter", EM_JOIN_LEFT_OUTER},
    {"RightOuter", EM_JOIN_RIGHT_OUTER},
    {"FullOuter", EM_JOIN_FULL_OUTER},
    {"LeftSemi", EM_JOIN_LEFT_SEMI},
    {"LeftAnti", EM_JOIN_LEFT_ANTI},
    {"Cross", EM_JOIN_CROSS},
};

const char *em_join_type_name(em_join_type jt) {
    if (jt == EM_JOIN_EXISTENCE)
        return "ExistenceJoin";
    for (size_t i = 0; i < sizeof join_names / sizeof join_names[0]; i++)
        if (join_names[i].type == jt)
            return join_names[i].text;
    return jt == EM_JOIN_NONE ? "None" : "Other";
}

/* Sets the join type from its printed text ("Inner", "ExistenceJoin(exists#1)"). */
static em_status set_join_type(plan_parser *pp, em_plan_node *node, const char *s, size_t n,
                               int line, int col) {
    node->join_type = EM_JOIN_OTHER;
    for (size_t i = 0; i < sizeof join_names / sizeof join_names[0]; i++)
        if (strlen(join_names[i].text) == n && memcmp(join_names[i].text, s, n) == 0)
            node->join_type = join_names[i].type;
    if (n > 15 && memcmp(s, "ExistenceJoin(", 14) == 0 && s[n - 1] == ')') {
        node->join_type = EM_JOIN_EXISTENCE;
        expr_parser ep = {.arena = &pp->plan->arena,
                          .s = s + 14,
                          .n = n - 15,
                          .src = pp->src,
                          .line = line + 1,
                          .col0 = col + 15,
                          .ev = &pp->plan->evidence};
        node->exists_attr = em_plan_parse_expr_all(&ep);
        if (!node->exists_attr) {
            *pp->err = ep.error;
            return ep.error.code;
        }
    }
    node->join_type_text = em_plan_arena_strndup(&pp->plan->arena, s, n);
    return node->join_type_text ? EM_OK : pp_nomem(pp);
}

static em_status register_node(plan_parser *pp, em_plan_node *node, int line, int col) {
    if (node->id < 1 || node->id > PLAN_MAX_ID)
        return pp_error(pp, line, col, "operator id %d is out of range 1..%d", node->id,
                        PLAN_MAX_ID);
    if (node->id >= pp->cap_id) {
        int cap = pp->cap_id ? pp->cap_id : 64;
        while (cap <= node->id)
            cap *= 2;
        em_plan_node **by_id = realloc(pp->plan->by_id, (size_t)cap * sizeof *by_id);
        if (!by_id)
            return pp_nomem(pp);
        pp->plan->by_id = by_id;
        bool *hb = realloc(pp->has_block, (size_t)cap * sizeof *hb);
        if (!hb)
            return pp_nomem(pp);
        pp->has_block = hb;
        for (int i = pp->cap_id; i < cap; i++) {
            by_id[i] = NULL;
            hb[i] = false;
        }
        pp->cap_id = cap;
    }
    if (pp->plan->by_id[node->id])
        return pp_error(pp, line, col, "operator id (%d) appears twice in the trees", node->id);
    pp->plan->by_id[node->id] = node;
    if (node->id > pp->plan->max_id)
        pp->plan->max_id = node->id;
    return EM_OK;
}

/*
 * AQE sections: under an AdaptiveSparkPlan at depth D Spark prints "+- == Final
 * Plan ==" after D cells of "   ", then the section's plan as a fresh tree
 * indented by D + 1 cells. While such a section is open, its lines are
 * rebased: their cells count from `base`, and their depth from `depth`.
 */
typedef struct tree_section {
    int base;  /* indent cells of the section's lines; -1 when none is open */
    int depth; /* depth of the section node */
} tree_section;

static em_plan_node *new_node(plan_parser *pp) {
    em_plan_node *node = em_plan_arena_alloc(&pp->plan->arena, sizeof *node);
    if (node) {
        memset(node, 0, sizeof *node);
        node->codegen_id = -1;
        node->reuses_id = -1;
        node->source_index = -1;
    }
    return node;
}

/* One tree line -> a node (not yet linked). */
static em_status parse_tree_line(plan_parser *pp, int li, tree_section *sec, int *depth,
                                 em_plan_node **out) {
    const plan_line *l = &pp->lines[li];
    const char *s = l->s;
    size_t n = l->n, i = 0;
    int cells = 0;
    while (i + 3 <= n && (memcmp(s + i, ":  ", 3) == 0 || memcmp(s + i, "   ", 3) == 0)) {
        i += 3;
        cells++;
    }
    bool connector = i + 3 <= n && (memcmp(s + i, ":- ", 3) == 0 || memcmp(s + i, "+- ", 3) == 0);
    if (connector && i + 6 <= n && memcmp(s + i + 3, "== ", 3) == 0 && n >= i + 9 &&
        memcmp(s + n - 3, " ==", 3) == 0) {
        em_plan_node *node = new_node(pp);
        if (!node || !(node->name = em_plan_arena_strndup(&pp->plan->arena, s + i + 6, n - i - 9)))
            return pp_nomem(pp);
        node->kind = EM_NODE_AQE_SECTION;
        *depth = cells + 1;
        sec->base = cells + 1;
        sec->depth = cells + 1;
        *out = node;
        return EM_OK;
    }
    if (sec->base >= 0 && cells < sec->base)
        sec->base = -1; /* the section ended */
    if (sec->base >= 0) {
        int local = cells - sec->base;
        if (connector)
            *depth = sec->depth + 1 + local + 1;
        else if (local == 0)
            *depth = sec->depth + 1;
        else
            return pp_error(pp, li, (int)i, "expected ':- ' or '+- ' before the operator");
    } else if (connector) {
        *depth = cells + 1;
    } else if (cells == 0) {
        *depth = 0;
    } else {
        return pp_error(pp, li, (int)i, "expected ':- ' or '+- ' before the operator");
    }
    if (connector)
        i += 3;
    em_plan_node *node = new_node(pp);
    if (!node)
        return pp_nomem(pp);
    if (i + 2 <= n && memcmp(s + i, "* ", 2) == 0) {
        node->whole_stage = true;
        i += 2;
    }
    /* label " (" digits ")", then the end or ", <suffix>" (query stage statistics) */
    size_t end = n;
    while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t'))
        end--;
    size_t d = 0, close = 0;
    for (size_t k = end; k > i + 2; k--) {
        if (s[k - 1] != ')')
            continue;
        size_t j = k - 1;
        while (j > i && isdigit((unsigned char)s[j - 1]))
            j--;
        if (j < k - 1 && j >= i + 2 && s[j - 1] == '(' && s[j - 2] == ' ' && k - 1 - j <= 7 &&
            (k == end || (k + 1 < end && s[k] == ',' && s[k + 1] == ' '))) {
            d = j;
            close = k;
            break;
        }
    }
    if (!close)
        return pp_error(pp, li, (int)end, "expected '(<operator id>)' at the end of the tree line");
    if (close < end) {
        node->label_suffix = em_plan_arena_strndup(&pp->plan->arena, s + close, end - close);
        if (!node->label_suffix)
            return pp_nomem(pp);
    }
    node->id = atoi(s + d);
    size_t lab0 = i, lab1 = d - 2;
    if (lab1 <= lab0)
        return pp_error(pp, li, (int)lab0, "expected an operator name");
    /* name: "Scan <format>" takes two words; otherwise the first word */
    size_t name1 = lab0;
    while (name1 < lab1 && s[name1] != ' ')
        name1++;
    if (name1 - lab0 == 4 && memcmp(s + lab0, "Scan", 4) == 0 && name1 < lab1) {
        name1++;
        while (name1 < lab1 && s[name1] != ' ')
            name1++;
        node->kind = EM_NODE_SCAN;
    } else {
        node->kind = em_plan_node_kind_named(s + lab0, name1 - lab0);
    }
    node->name = em_plan_arena_strndup(&pp->plan->arena, s + lab0, name1 - lab0);
    if (!node->name)
        return pp_nomem(pp);
    if (name1 < lab1) {
        size_t a0 = name1 + 1;
        node->label_args = em_plan_arena_strndup(&pp->plan->arena, s + a0, lab1 - a0);
        if (!node->label_args)
            return pp_nomem(pp);
        if (node->kind == EM_NODE_SCAN) {
            node->table = node->label_args;
            const char *dot = strrchr(node->table, '.');
            node->table_name = dot ? dot + 1 : node->table;
            int dots = 0;
            for (const char *c = node->table; *c; c++)
                dots += *c == '.';
            if (strncmp(node->table, "spark_catalog.", 14) == 0)
                pp->plan->evidence.scans_catalog_qualified++;
            else if (dots == 1)
                pp->plan->evidence.scans_unqualified++;
        } else if (is_join(node->kind)) {
            /* "<JoinType>[ <BuildSide>]" */
            size_t t1 = lab1;
            size_t sp = lab1;
            while (sp > a0 && s[sp - 1] != ' ')
                sp--;
            if (sp > a0 &&
                (strncmp(s + sp, "BuildLeft", lab1 - sp) == 0 ||
                 strncmp(s + sp, "BuildRight", lab1 - sp) == 0) &&
                lab1 - sp >= 9) {
                node->build_side = s[sp + 5] == 'L' ? EM_BUILD_LEFT : EM_BUILD_RIGHT;
                t1 = sp - 1;
            }
            EM_TRY(set_join_type(pp, node, s + a0, t1 - a0, li, (int)a0));
        }
    }
    *out = node;
    return EM_OK;
}

typedef struct node_vec {
    em_plan_node **items;
    int n, cap;
} node_vec;

static bool node_vec_push(plan_arena *a, node_vec *v, em_plan_node *node) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 2;
        em_plan_node **items = em_plan_arena_alloc(a, (size_t)cap * sizeof *items);
        if (!items)
            return false;
        if (v->n)
            memcpy(items, v->items, (size_t)v->n * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = node;
    return true;
}

#define TREE_MAX_DEPTH 512

/* Reads tree lines from pp->cur up to a blank line. */
static em_status parse_tree(plan_parser *pp, em_plan_node **root_out) {
    em_plan_node *stack[TREE_MAX_DEPTH];
    node_vec kids[TREE_MAX_DEPTH];
    int top = -1;
    em_plan_node *root = NULL;
    tree_section sec = {-1, 0};
    while (pp->cur < pp->n_lines && !line_blank(&pp->lines[pp->cur])) {
        int li = pp->cur, depth = 0;
        em_plan_node *node = NULL;
        EM_TRY(parse_tree_line(pp, li, &sec, &depth, &node));
        if (depth >= TREE_MAX_DEPTH)
            return pp_error(pp, li, 0, "tree deeper than %d levels", TREE_MAX_DEPTH);
        if (depth == 0) {
            if (root)
                return pp_error(pp, li, 0, "expected ':- ' or '+- ': a tree has one root");
        } else if (depth > top + 1 || !root) {
            return pp_error(pp, li, 0, "indentation skips a level (no parent for this operator)");
        }
        if (node->kind != EM_NODE_AQE_SECTION)
            EM_TRY(register_node(pp, node, li, 0));
        /* close finished levels */
        for (; top >= depth; top--) {
            stack[top]->children = kids[top].items;
            stack[top]->n_children = kids[top].n;
        }
        if (depth == 0)
            root = node;
        else if (!node_vec_push(&pp->plan->arena, &kids[depth - 1], node))
            return pp_nomem(pp);
        stack[depth] = node;
        kids[depth] = (node_vec){0};
        top = depth;
        pp->cur++;
    }
    for (; top >= 0; top--) {
        stack[top]->children = kids[top].items;
        stack[top]->n_children = kids[top].n;
    }
    if (!root)
        return pp_error(pp, pp->cur, 0, "expected an operator tree");
    *root_out = root;
    return EM_OK;
}

/* ------------------------------------------------------------------ details */

static const struct {
    const char *label;
    em_field_kind kind;
} field_labels[] = {
    {"Output", EM_FIELD_OUTPUT},
    {"Input", EM_FIELD_INPUT},
    {"Keys", EM_FIELD_KEYS},
    {"Functions", EM_FIELD_FUNCTIONS},
    {"Aggregate Attributes", EM_FIELD_AGG_ATTRS},
    {"Results", EM_FIELD_RESULTS},
    {"Left keys", EM_FIELD_LEFT_KEYS},
    {"Right keys", EM_FIELD_RIGHT_KEYS},
    {"Condition", EM_FIELD_CONDITION},
    {"Join condition", EM_FIELD_JOIN_CONDITION},
    {"Arguments", EM_FIELD_ARGUMENTS},
    {"PushedFilters", EM_FIELD_PUSHED_FILTERS},
    {"PartitionFilters", EM_FIELD_PARTITION_FILTERS},
    {"DataFilters", EM_FIELD_DATA_FILTERS},
    {"ReadSchema", EM_FIELD_READ_SCHEMA},
    {"Batched", EM_FIELD_BATCHED},
};

static bool is_counted_kind(em_field_kind k) { return k <= EM_FIELD_RIGHT_KEYS; }

static em_status expr_fail(plan_parser *pp, expr_parser *ep) {
    if (pp->plan->arena.failed)
        return pp_nomem(pp);
    if (!ep->failed)
        em_plan_expr_error(ep, ep->pos, "invalid expression");
    *pp->err = ep->error;
    return ep->error.code;
}

static em_status parse_read_schema(plan_parser *pp, em_plan_field *f, const char *s, size_t n,
                                   int li, int col) {
    if (n < 8 || memcmp(s, "struct<", 7) != 0 || s[n - 1] != '>')
        return pp_error(pp, li, col, "expected 'struct<name:type,...>' in ReadSchema");
    size_t i = 7, end = n - 1;
    int cap = 0;
    while (i < end) {
        size_t colon = i;
        while (colon < end && s[colon] != ':')
            colon++;
        if (colon >= end || colon == i)
            return pp_error(pp, li, col + (int)i, "expected 'name:type' in ReadSchema");
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
            em_schema_field *grown =
                em_plan_arena_alloc(&pp->plan->arena, (size_t)cap * sizeof *grown);
            if (!grown)
                return pp_nomem(pp);
            if (f->n_schema)
                memcpy(grown, f->schema, (size_t)f->n_schema * sizeof *grown);
            f->schema = grown;
        }
        em_schema_field *sf = &f->schema[f->n_schema++];
        sf->name = em_plan_arena_strndup(&pp->plan->arena, s + i, colon - i);
        sf->type_text = em_plan_arena_strndup(&pp->plan->arena, s + t0, t1 - t0);
        if (!sf->name || !sf->type_text)
            return pp_nomem(pp);
        sf->type_known = em_plan_type_from_text(s + t0, t1 - t0, &sf->type);
        i = t1 < end ? t1 + 1 : t1;
    }
    return EM_OK;
}

/* Location lines: normalized "[not included in comparison]/{warehouse_dir}/t]" or
 * "Location: <Index> [p1, p2]" / "[p1, ... N entries]". */
static em_status parse_location(plan_parser *pp, em_plan_field *f, const plan_line *l) {
    plan_arena *a = &pp->plan->arena;
    f->text = em_plan_arena_strndup(a, l->s, l->n);
    if (!f->text)
        return pp_nomem(pp);
    const char *s = f->text;
    const char *wh = strstr(s, "{warehouse_dir}/");
    if (wh) {
        f->location_normalized = true;
        const char *p0 = wh + 16;
        size_t m = strlen(p0);
        if (m > 0 && p0[m - 1] == ']')
            m--;
        f->paths = em_plan_arena_alloc(a, sizeof *f->paths);
        if (!f->paths || !(f->paths[0] = em_plan_arena_strndup(a, p0, m)))
            return pp_nomem(pp);
        f->n_paths = 1;
        return EM_OK;
    }
    const char *open = strchr(s, '[');
    const char *close = strrchr(s, ']');
    if (!open || !close || close < open)
        return EM_OK;
    const char *p = open + 1;
    int cap = 0;
    while (p < close) {
        const char *q = p;
        while (q < close && !(q[0] == ',' && q[1] == ' '))
            q++;
        bool more = strncmp(p, "... ", 4) == 0; /* "... N entries" */
        if (!more && q > p) {
            if (f->n_paths == cap) {
                cap = cap ? cap * 2 : 4;
                const char **grown = em_plan_arena_alloc(a, (size_t)cap * sizeof *grown);
                if (!grown)
                    return pp_nomem(pp);
                if (f->n_paths)
                    memcpy(grown, f->paths, (size_t)f->n_paths * sizeof *grown);
                f->paths = grown;
            }
            if (!(f->paths[f->n_paths++] = em_plan_arena_strndup(a, p, (size_t)(q - p))))
                return pp_nomem(pp);
        }
        p = q < close ? q + 2 : q;
    }
    return EM_OK;
}

static em_status parse_field(plan_parser *pp, em_plan_node *node, int li, em_plan_field *f,
                             bool *is_join_type) {
    const plan_line *l = &pp->lines[li];
    plan_arena *a = &pp->plan->arena;
    memset(f, 0, sizeof *f);
    *is_join_type = false;
    if (line_starts(l, "Location")) {
        f->kind = EM_FIELD_LOCATION;
        f->label = "Location";
        return parse_location(pp, f, l);
    }
    /* Label [n]: value | Label : value | Label: value */
    size_t i = 0;
    while (i < l->n && (isalnum((unsigned char)l->s[i]) || l->s[i] == ' ' || l->s[i] == '_'))
        i++;
    size_t lab1 = i;
    while (lab1 > 0 && l->s[lab1 - 1] == ' ')
        lab1--;
    long count = -1;
    bool spaced_colon = false;
    if (i < l->n && l->s[i] == '[' && lab1 < i) {
        size_t d = i + 1;
        count = 0;
        while (d < l->n && isdigit((unsigned char)l->s[d]) && d - i < 9)
            count = count * 10 + (l->s[d++] - '0');
        if (d == i + 1 || d >= l->n || l->s[d] != ']')
            count = -2;
        else
            i = d + 1;
    }
    if (count != -2 && i < l->n && l->s[i] == ':' && i + 1 < l->n && l->s[i + 1] == ' ') {
        spaced_colon = i > lab1 && count < 0;
        if (spaced_colon && i != lab1 + 1)
            count = -2;
    } else {
        count = -2;
    }
    f->kind = EM_FIELD_OTHER;
    if (count != -2) {
        for (size_t k = 0; k < sizeof field_labels / sizeof field_labels[0]; k++)
            if (strlen(field_labels[k].label) == lab1 &&
                memcmp(field_labels[k].label, l->s, lab1) == 0)
                f->kind = field_labels[k].kind;
        if (lab1 == 9 && memcmp(l->s, "Join type", 9) == 0 && count < 0 && !spaced_colon) {
            *is_join_type = true;
            size_t v0 = i + 2;
            if (node->join_type == EM_JOIN_NONE)
                return set_join_type(pp, node, l->s + v0, l->n - v0, li, (int)v0);
            if (strlen(node->join_type_text) != l->n - v0 ||
                memcmp(node->join_type_text, l->s + v0, l->n - v0) != 0)
                return pp_error(pp, li, (int)v0, "join type '%.*s' differs from '%s' in the tree",
                                (int)(l->n - v0), l->s + v0, node->join_type_text);
            return EM_OK;
        }
        /* Known fields must have their canonical punctuation, else they stay text. */
        bool canonical;
        if (is_counted_kind(f->kind))
            canonical = !spaced_colon;
        else if (f->kind == EM_FIELD_CONDITION)
            canonical = spaced_colon;
        else
            canonical = count < 0 && !spaced_colon;
        if (!canonical)
            f->kind = EM_FIELD_OTHER;
    }
    if (f->kind == EM_FIELD_OTHER) {
        f->text = em_plan_arena_strndup(a, l->s, l->n);
        f->label = f->text;
        return f->text ? EM_OK : pp_nomem(pp);
    }
    for (size_t k = 0; k < sizeof field_labels / sizeof field_labels[0]; k++)
        if (field_labels[k].kind == f->kind)
            f->label = field_labels[k].label;
    size_t v0 = i + 2;
    const char *v = l->s + v0;
    size_t vn = l->n - v0;
    expr_parser ep = {.arena = a,
                      .s = v,
                      .n = vn,
                      .src = pp->src,
                      .line = li + 1,
                      .col0 = (int)v0 + 1,
                      .ev = &pp->plan->evidence};
    switch (f->kind) {
    case EM_FIELD_OUTPUT:
    case EM_FIELD_INPUT:
    case EM_FIELD_KEYS:
    case EM_FIELD_FUNCTIONS:
    case EM_FIELD_AGG_ATTRS:
    case EM_FIELD_RESULTS:
    case EM_FIELD_LEFT_KEYS:
    case EM_FIELD_RIGHT_KEYS:
    case EM_FIELD_PUSHED_FILTERS:
    case EM_FIELD_PARTITION_FILTERS:
    case EM_FIELD_DATA_FILTERS: {
        expr_parser first = ep;
        em_expr *list = em_plan_parse_bracket_list(&ep);
        if (list && count >= 0 && count != list->n_args) {
            /* Spark joins list items with ", ": a bare literal may hold a ',' */
            expr_parser again = first;
            again.spaced_commas = true;
            em_expr *retry = em_plan_parse_bracket_list(&again);
            if (retry && again.pos == again.n && retry->n_args == count) {
                list = retry;
                ep = again;
            }
        }
        if (!list)
            return expr_fail(pp, &ep);
        if (ep.pos != ep.n)
            return pp_error(pp, li, (int)(v0 + ep.pos), "unexpected text after the list");
        f->counted = count >= 0;
        if (f->counted && count != list->n_args)
            return pp_error(pp, li, 0, "%s [%ld] lists %d expression%s", f->label, count,
                            list->n_args, list->n_args == 1 ? "" : "s");
        f->exprs = list->args;
        f->n_exprs = list->n_args;
        return EM_OK;
    }
    case EM_FIELD_CONDITION:
    case EM_FIELD_JOIN_CONDITION: {
        if (f->kind == EM_FIELD_JOIN_CONDITION && vn == 4 && memcmp(v, "None", 4) == 0)
            return EM_OK;
        em_expr *e = em_plan_parse_expr_all(&ep);
        if (!e)
            return expr_fail(pp, &ep);
        f->exprs = em_plan_arena_alloc(a, sizeof *f->exprs);
        if (!f->exprs)
            return pp_nomem(pp);
        f->exprs[0] = e;
        f->n_exprs = 1;
        return EM_OK;
    }
    case EM_FIELD_ARGUMENTS: {
        f->exprs = em_plan_parse_arg_list(&ep, &f->n_exprs);
        if (!f->exprs)
            return expr_fail(pp, &ep);
        return EM_OK;
    }
    case EM_FIELD_READ_SCHEMA:
        return parse_read_schema(pp, f, v, vn, li, (int)v0);
    default: /* BATCHED */
        f->text = em_plan_arena_strndup(a, v, vn);
        return f->text ? EM_OK : pp_nomem(pp);
    }
}

/* "(id) header" and its fields, at pp->cur. */
/*
 * The lines Spark prints in every detail block of these operators (3.3 to
 * 4.1): without one the operator means something else (a Project of no
 * columns, an aggregate without grouping, a join without its condition),
 * so a block that lacks one is refused rather than read as that.
 */
static const struct {
    em_node_kind kind;
    int n;
    em_field_kind fields[4];
} required_fields[] = {
    {EM_NODE_SCAN, 3, {EM_FIELD_OUTPUT, EM_FIELD_READ_SCHEMA, EM_FIELD_LOCATION}},
    {EM_NODE_FILTER, 1, {EM_FIELD_CONDITION}},
    {EM_NODE_PROJECT, 1, {EM_FIELD_OUTPUT}},
    {EM_NODE_HASH_AGGREGATE, 4, {EM_FIELD_KEYS, EM_FIELD_FUNCTIONS, EM_FIELD_AGG_ATTRS, EM_FIELD_RESULTS}},
    {EM_NODE_SORT_AGGREGATE, 4, {EM_FIELD_KEYS, EM_FIELD_FUNCTIONS, EM_FIELD_AGG_ATTRS, EM_FIELD_RESULTS}},
    {EM_NODE_OBJECT_HASH_AGGREGATE, 4, {EM_FIELD_KEYS, EM_FIELD_FUNCTIONS, EM_FIELD_AGG_ATTRS, EM_FIELD_RESULTS}},
    {EM_NODE_EXCHANGE, 1, {EM_FIELD_ARGUMENTS}},
    {EM_NODE_BROADCAST_EXCHANGE, 1, {EM_FIELD_ARGUMENTS}},
    {EM_NODE_REUSED_EXCHANGE, 1, {EM_FIELD_OUTPUT}},
    {EM_NODE_BROADCAST_HASH_JOIN, 3, {EM_FIELD_LEFT_KEYS, EM_FIELD_RIGHT_KEYS, EM_FIELD_JOIN_CONDITION}},
    {EM_NODE_SHUFFLED_HASH_JOIN, 3, {EM_FIELD_LEFT_KEYS, EM_FIELD_RIGHT_KEYS, EM_FIELD_JOIN_CONDITION}},
    {EM_NODE_SORT_MERGE_JOIN, 3, {EM_FIELD_LEFT_KEYS, EM_FIELD_RIGHT_KEYS, EM_FIELD_JOIN_CONDITION}},
    {EM_NODE_BROADCAST_NESTED_LOOP_JOIN, 1, {EM_FIELD_JOIN_CONDITION}},
    {EM_NODE_SORT, 1, {EM_FIELD_ARGUMENTS}},
    {EM_NODE_TAKE_ORDERED_AND_PROJECT, 1, {EM_FIELD_ARGUMENTS}},
    {EM_NODE_EXPAND, 1, {EM_FIELD_ARGUMENTS}},
    {EM_NODE_WINDOW, 1, {EM_FIELD_ARGUMENTS}},
    {EM_NODE_WINDOW_GROUP_LIMIT, 1, {EM_FIELD_ARGUMENTS}},
    /* (no Arguments line when it has no columns: Spark prints an empty argString) */
    {EM_NODE_LOCAL_TABLE_SCAN, 1, {EM_FIELD_OUTPUT}},
};

static const char *field_label(em_field_kind kind) {
    if (kind == EM_FIELD_LOCATION)
        return "Location";
    for (size_t k = 0; k < sizeof field_labels / sizeof field_labels[0]; k++)
        if (field_labels[k].kind == kind)
            return field_labels[k].label;
    return "?";
}

static em_status check_required_fields(plan_parser *pp, const em_plan_node *node, int li) {
    for (size_t r = 0; r < sizeof required_fields / sizeof required_fields[0]; r++) {
        if (required_fields[r].kind != node->kind)
            continue;
        /* other sources (OneRowRelation, ExistingRDD) print their Output only */
        int n = node->kind == EM_NODE_SCAN && strcmp(node->name, "Scan parquet") != 0
                    ? 1
                    : required_fields[r].n;
        for (int k = 0; k < n; k++) {
            em_field_kind want = required_fields[r].fields[k];
            if (!em_plan_node_field(node, want))
                return pp_error(pp, li, 0, "operator (%d) %s has no '%s' line", node->id,
                                node->name, field_label(want));
        }
    }
    return EM_OK;
}

static em_status parse_block(plan_parser *pp) {
    int li = pp->cur;
    const plan_line *l = &pp->lines[li];
    size_t i = 1;
    long id = 0;
    while (i < l->n && isdigit((unsigned char)l->s[i]) && i < 9)
        id = id * 10 + (l->s[i++] - '0');
    if (i == 1 || i + 1 >= l->n || l->s[i] != ')' || l->s[i + 1] != ' ')
        return pp_error(pp, li, (int)i, "expected '(<operator id>) <operator>'");
    em_plan_node *node = id < pp->cap_id ? pp->plan->by_id[id] : NULL;
    if (!node)
        return pp_error(pp, li, 1, "detail block (%ld) has no operator (%ld) in a tree", id, id);
    if (pp->has_block[id])
        return pp_error(pp, li, 1, "operator (%ld) has two detail blocks", id);
    pp->has_block[id] = true;
    node->line = li + 1;
    size_t h0 = i + 2, h1 = l->n;
    const char *s = l->s;
    /* suffixes, right to left: " [codegen id : K]", " [Reuses operator id: M]" */
    static const char cg[] = " [codegen id : ";
    if (h1 > h0 && s[h1 - 1] == ']') {
        size_t b = h1 - 1;
        while (b > h0 && s[b] != '[')
            b--;
        if (b > h0 && h1 - (b - 1) > sizeof cg - 1 && memcmp(s + b - 1, cg, sizeof cg - 1) == 0) {
            node->codegen_id = atoi(s + b - 1 + sizeof cg - 1);
            h1 = b - 1;
        }
    }
    static const char ru[] = " [Reuses operator id: ";
    if (h1 > h0 && s[h1 - 1] == ']') {
        size_t b = h1 - 1;
        while (b > h0 && s[b] != '[')
            b--;
        if (b > h0 && h1 - (b - 1) > sizeof ru - 1 && memcmp(s + b - 1, ru, sizeof ru - 1) == 0) {
            node->reuses_id = atoi(s + b - 1 + sizeof ru - 1);
            h1 = b - 1;
        }
    }
    size_t nn = strlen(node->name);
    if (h1 - h0 < nn || memcmp(s + h0, node->name, nn) != 0 || (h1 - h0 > nn && s[h0 + nn] != ' '))
        return pp_error(pp, li, (int)h0, "expected '%s' (operator (%ld) in the tree)", node->name,
                        id);
    if (h1 - h0 > nn) {
        node->header_args = em_plan_arena_strndup(&pp->plan->arena, s + h0 + nn + 1, h1 - h0 - nn - 1);
        if (!node->header_args)
            return pp_nomem(pp);
    }
    pp->cur++;
    int start = pp->cur, n = 0;
    while (pp->cur < pp->n_lines && !line_blank(&pp->lines[pp->cur])) {
        pp->cur++;
        n++;
    }
    node->fields = em_plan_arena_alloc(&pp->plan->arena, (size_t)(n ? n : 1) * sizeof *node->fields);
    if (!node->fields)
        return pp_nomem(pp);
    bool saw_join_type = false;
    for (int k = 0; k < n; k++) {
        bool jt;
        EM_TRY(parse_field(pp, node, start + k, &node->fields[node->n_fields], &jt));
        if (jt)
            saw_join_type = true;
        else
            node->n_fields++;
    }
    EM_TRY(check_required_fields(pp, node, li));
    if (node->kind == EM_NODE_BROADCAST_HASH_JOIN || node->kind == EM_NODE_SORT_MERGE_JOIN ||
        node->kind == EM_NODE_SHUFFLED_HASH_JOIN ||
        node->kind == EM_NODE_BROADCAST_NESTED_LOOP_JOIN) {
        if (saw_join_type)
            pp->plan->evidence.joins_with_type_field++;
        else
            pp->plan->evidence.joins_without_type_field++;
    }
    return EM_OK;
}

static void skip_blank(plan_parser *pp) {
    while (pp->cur < pp->n_lines && line_blank(&pp->lines[pp->cur]))
        pp->cur++;
}

static em_status parse_blocks(plan_parser *pp) {
    for (;;) {
        skip_blank(pp);
        if (pp->cur >= pp->n_lines || pp->lines[pp->cur].n == 0 || pp->lines[pp->cur].s[0] != '(')
            return EM_OK;
        EM_TRY(parse_block(pp));
    }
}

/* "Subquery:K Hosting operator id = H Hosting Expression = e" and its body. */
static em_status parse_subquery_entry(plan_parser *pp) {
    em_plan *plan = pp->plan;
    int li = pp->cur;
    const plan_line *l = &pp->lines[li];
    int k = 0, host = 0, used = 0;
    char tmp[160];
    size_t m = l->n < sizeof tmp - 1 ? l->n : sizeof tmp - 1;
    memcpy(tmp, l->s, m);
    tmp[m] = '\0';
    if (sscanf(tmp, "Subquery:%d Hosting operator id = %d Hosting Expression = %n", &k, &host,
               &used) != 2 ||
        used == 0)
        return pp_error(pp, li, 0,
                        "expected 'Subquery:<n> Hosting operator id = <id> Hosting Expression = "
                        "<expression>'");
    if (plan->n_subqueries == pp->n_subq_cap) {
        int cap = pp->n_subq_cap ? pp->n_subq_cap * 2 : 4;
        em_plan_subquery *grown = em_plan_arena_alloc(&plan->arena, (size_t)cap * sizeof *grown);
        if (!grown)
            return pp_nomem(pp);
        if (plan->n_subqueries)
            memcpy(grown, plan->subqueries, (size_t)plan->n_subqueries * sizeof *grown);
        plan->subqueries = grown;
        pp->n_subq_cap = cap;
    }
    em_plan_subquery *sq = &plan->subqueries[plan->n_subqueries++];
    memset(sq, 0, sizeof *sq);
    sq->index = k;
    sq->host_id = host;
    expr_parser ep = {.arena = &plan->arena,
                      .s = l->s + used,
                      .n = l->n - (size_t)used,
                      .src = pp->src,
                      .line = li + 1,
                      .col0 = used + 1,
                      .ev = &plan->evidence};
    sq->expr = em_plan_parse_expr_all(&ep);
    if (!sq->expr)
        return expr_fail(pp, &ep);
    pp->cur++;
    if (pp->cur < pp->n_lines && !line_blank(&pp->lines[pp->cur]) &&
        !line_starts(&pp->lines[pp->cur], "Subquery:")) {
        EM_TRY(parse_tree(pp, &sq->root));
        EM_TRY(parse_blocks(pp));
    }
    return EM_OK;
}

/* ------------------------------------------------------------------ linking */

static em_status link_plan(plan_parser *pp) {
    em_plan *plan = pp->plan;
    for (int id = 1; id <= plan->max_id; id++) {
        em_plan_node *node = plan->by_id[id];
        if (!node)
            continue;
        if (!pp->has_block[id])
            return EM_FAIL(pp->err, EM_ERR_PARSE, "%s: operator (%d) %s has no detail block",
                           pp->src, id, node->name);
        if (node->kind == EM_NODE_REUSED_EXCHANGE) {
            if (node->reuses_id < 1 || node->reuses_id > plan->max_id ||
                !plan->by_id[node->reuses_id])
                return EM_FAIL(pp->err, EM_ERR_PARSE,
                               "%s: ReusedExchange (%d) reuses operator id %d, which no tree has",
                               pp->src, id, node->reuses_id);
            node->reuses = plan->by_id[node->reuses_id];
        }
    }
    for (int i = 0; i < plan->n_subqueries; i++) {
        em_plan_subquery *sq = &plan->subqueries[i];
        if (sq->host_id < 1 || sq->host_id > plan->max_id || !plan->by_id[sq->host_id])
            return EM_FAIL(pp->err, EM_ERR_PARSE,
                           "%s: Subquery:%d is hosted by operator id %d, which no tree has",
                           pp->src, sq->index, sq->host_id);
        sq->host = plan->by_id[sq->host_id];
        if (sq->host->kind == EM_NODE_SCAN)
            plan->evidence.scan_hosts_subquery++;
        sq->target = sq->root;
        if (!sq->target) {
            /* printed earlier: the entry with the same subquery (expression id) */
            const em_expr *e = sq->expr;
            for (int j = 0; j < plan->n_subqueries && !sq->target; j++) {
                const em_expr *o = plan->subqueries[j].expr;
                if (j != i && plan->subqueries[j].root && o->kind == e->kind && o->id == e->id &&
                    (e->kind != EM_EXPR_IN_SUBQUERY || strcmp(o->name, e->name) == 0))
                    sq->target = plan->subqueries[j].root;
            }
        }
    }
    return EM_OK;
}

/* ------------------------------------------------------------------ entry */

static em_status parse_text(plan_parser *pp) {
    em_plan *plan = pp->plan;
    skip_blank(pp);
    if (pp->cur < pp->n_lines && line_is(&pp->lines[pp->cur], "== Physical Plan =="))
        pp->cur++;
    if (pp->cur >= pp->n_lines)
        return pp_error(pp, pp->cur, 0, "expected an operator tree after '== Physical Plan =='");
    EM_TRY(parse_tree(pp, &plan->root));
    EM_TRY(parse_blocks(pp));
    skip_blank(pp);
    if (pp->cur < pp->n_lines && line_is(&pp->lines[pp->cur], "===== Subqueries =====")) {
        pp->cur++;
        for (;;) {
            skip_blank(pp);
            if (pp->cur >= pp->n_lines)
                break;
            if (!line_starts(&pp->lines[pp->cur], "Subquery:"))
                return pp_error(pp, pp->cur, 0, "expected 'Subquery:<n> ...'");
            EM_TRY(parse_subquery_entry(pp));
        }
    }
    skip_blank(pp);
    if (pp->cur < pp->n_lines)
        return pp_error(pp, pp->cur, 0,
                        "expected a detail block '(<id>) ...' or '===== "
                        "Subqueries ====='");
    return link_plan(pp);
}

/* Counts generated alias names that embed expression ids (every line up to 4.0). */
static void count_alias_evidence(em_plan *plan) {
    for (int id = 1; id <= plan->max_id; id++) {
        const em_plan_node *node = plan->by_id[id];
        if (!node)
            continue;
        for (int f = 0; f < node->n_fields; f++) {
            const em_plan_field *fl = &node->fields[f];
            if (fl->kind != EM_FIELD_RESULTS)
                continue;
            for (int k = 0; k < fl->n_exprs; k++) {
                const em_expr *e = fl->exprs[k];
                if (e->kind != EM_EXPR_ALIAS || e->args[0]->kind != EM_EXPR_ATTR ||
                    !strchr(e->args[0]->name, '(') || !strchr(e->name, '('))
                    continue;
                const char *h = strchr(e->name, '#');
                if (h && isdigit((unsigned char)h[1]))
                    plan->evidence.alias_names_with_ids++;
            }
        }
    }
}

em_status em_plan_parse(const char *text, size_t len, const em_plan_parse_options *options,
                        em_plan **out, em_error *err) {
    em_error local;
    if (!err)
        err = &local;
    *out = NULL;
    if (!text && len)
        return EM_FAIL(err, EM_ERR_INVALID, "em_plan_parse: NULL text");
    em_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    plan_parser pp = {.plan = plan,
                      .err = err,
                      .src = options && options->source_name ? options->source_name : "plan"};
    em_status st = split_lines(&pp, text ? text : "", len);
    if (st == EM_OK)
        st = parse_text(&pp);
    free(pp.lines);
    free(pp.has_block);
    if (st == EM_OK) {
        count_alias_evidence(plan);
        if (options && options->shim) {
            plan->shim = options->shim;
            char why[200];
            if (em_shim_accepts(plan->shim, &plan->evidence, why, sizeof why))
                snprintf(plan->shim_reason, sizeof plan->shim_reason, "given");
            else
                snprintf(plan->shim_reason, sizeof plan->shim_reason, "given, although %s",
                         why);
        } else {
            em_shim_detection det;
            if (!em_shim_detect_evidence(&plan->evidence, &det)) {
                st = EM_FAIL(err, EM_ERR_UNSUPPORTED,
                             "%s: cannot tell which Spark version printed this plan (%s); pass "
                             "the version explicitly",
                             pp.src, det.reason);
            } else {
                plan->shim = det.chosen;
                plan->shim_uncertain = det.semantics_differ;
                snprintf(plan->shim_reason, sizeof plan->shim_reason, "%s", det.reason);
            }
        }
    }
    if (st == EM_OK) {
        em_plan_column_type_fn column_type = options ? options->column_type : NULL;
        void *ctx = options ? options->column_type_ctx : NULL;
        plan_retype_marks *marks = NULL;
        if (column_type) {
            /* what Spark derived from the printed types, seen before they change */
            em_plan_infer(plan, NULL, NULL);
            if (em_plan_retype_mark(plan, &marks) != EM_OK)
                plan->arena.failed = true;
            em_plan_reset_types(plan);
        }
        em_plan_infer(plan, column_type, ctx);
        /* Typing can reveal that a detected 3.3 cannot be: decimal arithmetic without
         * CheckOverflow. Then detect again and retype with the line that fits. */
        if (!(options && options->shim) && em_plan_count_unwrapped_decimal_arith(plan) &&
            !em_shim_accepts(plan->shim, &plan->evidence, NULL, 0)) {
            em_shim_detection det;
            if (em_shim_detect_evidence(&plan->evidence, &det)) {
                plan->shim = det.chosen;
                plan->shim_uncertain = det.semantics_differ;
                snprintf(plan->shim_reason, sizeof plan->shim_reason, "%s", det.reason);
                em_plan_reset_types(plan);
                em_plan_infer(plan, column_type, ctx);
            }
        }
        if (column_type && !plan->arena.failed &&
            em_plan_retype_apply(plan, marks, column_type, ctx) != EM_OK)
            plan->arena.failed = true;
        em_plan_retype_marks_free(marks);
        if (plan->arena.failed)
            st = EM_FAIL(err, EM_ERR_NOMEM, "%s: out of memory while typing the plan", pp.src);
    }
    if (st == EM_OK)
        st = em_plan_validate_bindings(plan, pp.src, err);
    if (st != EM_OK) {
        em_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return EM_OK;
}

em_status em_shim_detect(const char *text, size_t len, em_shim_detection *out, em_error *err) {
    memset(out, 0, sizeof *out);
    em_plan_parse_options opt = {.shim = &em_shim_spark34}; /* any: detection is separate */
    em_plan *plan;
    EM_TRY(em_plan_parse(text, len, &opt, &plan, err));
    em_plan_count_unwrapped_decimal_arith(plan);
    bool ok = em_shim_detect_evidence(&plan->evidence, out);
    em_plan_destroy(plan);
    if (!ok)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED,
                       "cannot tell which Spark version printed this plan: %s", out->reason);
    return EM_OK;
}
