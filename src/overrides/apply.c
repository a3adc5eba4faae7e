/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tagging: every node of a parsed plan gets an engine, its reasons, its
 * expressions' decisions, the transition flag and (native nodes) a LORE id.
 *
 * Order of the passes, as spark-rapids' GpuOverrides runs them:
 *   1. each node alone: its rule, its switch, its output types, then every
 *      expression it evaluates (rule, switch, incompatibility, types,
 *      rule-specific check); when all of that passes, the expressions are
 *      compiled by the native compiler exactly as the operator would compile
 *      them, and a refusal becomes "native engine refused: ..." (a rule that
 *      is missing here; test_overrides asserts no TPC-H plan needs it);
 *      inside Spark (EM_HOST_SPARK), also Spark's own view of a structured
 *      plan: any expression of the node (any field, subexpressions, the
 *      columns it outputs) whose inferred type is not the type Spark
 *      resolved, or whose evalMode the native engine does not follow (TRY;
 *      ANSI or LEGACY other than the session's spark.sql.ansi.enabled),
 *      leaves the node to Spark, the reason naming the expression and both
 *      types ("Ember types round(x#1, 2) as decimal(15,2), Spark as
 *      decimal(14,1)"). Ember's own runtime gains nothing from that
 *      fallback (its row engine types and evaluates the same way), so it
 *      does not apply there. Inside Spark a node also stays Spark's when it
 *      outputs, or an input of it carries, a column of a type Ember has no
 *      vector for (unheld_columns), and some kinds always do (spark_keeps);
 *   2. spark.ember.sql.enabled=false sends every node to the row engine;
 *   3. a native shuffle exchange between row nodes (child on rows, parent on
 *      rows or none) goes to rows as well: it would only add two transitions
 *      (spark-rapids' "Columnar exchange without columnar children is
 *      inefficient");
 *   4. a ReusedExchange takes the engine of the exchange it reads;
 *   5. transitions: a node whose nearest non-pass-through parent runs on the
 *      other engine has one above it;
 *   6. LORE ids: post-order over the executed tree, then each subquery tree,
 *      native nodes only (ReusedExchange reads a stored result and has no
 *      input to dump, so it gets none).
 *
 * Exchanges are operators like any other here: a native exchange partitions
 * and stores batches, and its read side is native too; a parent on the
 * other engine reads it through a transition, and a child on the other
 * engine feeds it through one.
 *
 * Everything the decisions point to is owned by the em_exec_plan (an arena
 * for strings and expression decisions, one array per node's reasons) or
 * borrowed from the plan, which must outlive it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ember/expr.h"
#include "ember/ops.h"
#include "ops/window_spec.h"
#include "overrides/internal.h"

/* ------------------------------------------------------------------ arena */

typedef struct ov_chunk {
    struct ov_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} ov_chunk;

typedef struct ov_node_info {
    const em_plan_node *parent; /* in the tree walked, NULL at a root */
    int order;                  /* walk order, for stable sorting */
    bool executed;              /* in the executed tree or a subquery tree */
    em_fallback_reason *reasons;
    int n_reasons, cap_reasons;
} ov_node_info;

struct em_exec_plan {
    const em_plan *plan;
    int n;
    em_node_decision *dec; /* sorted by node id, then walk order */
    ov_node_info *info;    /* parallel to dec */
    /* node pointer -> index in dec */
    size_t map_cap;
    const em_plan_node **map_keys;
    int *map_vals;
    ov_chunk *chunks;
    bool failed; /* out of memory in a helper */
};

static void *arena_alloc(em_exec_plan *xp, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n)
        n = 16;
    ov_chunk *c = xp->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 32768 ? n : 32768;
        ov_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc) {
            xp->failed = true;
            return NULL;
        }
        nc->used = 0;
        nc->cap = cap;
        nc->next = xp->chunks;
        xp->chunks = nc;
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

static const char *arena_printf(em_exec_plan *xp, const char *fmt, ...) EM_PRINTF(2, 3);
static const char *arena_printf(em_exec_plan *xp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return "";
    char *s = arena_alloc(xp, (size_t)n + 1);
    if (!s)
        return "";
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* ------------------------------------------------------------------ node map */

static size_t ptr_hash(const void *p, size_t cap) {
    uintptr_t v = (uintptr_t)p;
    v ^= v >> 17;
    v *= 0x9E3779B97F4A7C15ull;
    return (size_t)(v >> 11) & (cap - 1);
}

static int map_find(const em_exec_plan *xp, const em_plan_node *n) {
    if (!xp->map_cap || !n)
        return -1;
    for (size_t h = ptr_hash(n, xp->map_cap);; h = (h + 1) & (xp->map_cap - 1)) {
        if (!xp->map_keys[h])
            return -1;
        if (xp->map_keys[h] == n)
            return xp->map_vals[h];
    }
}

static bool map_build(em_exec_plan *xp) {
    size_t cap = 16;
    while (cap < (size_t)xp->n * 2 + 2)
        cap *= 2;
    xp->map_keys = calloc(cap, sizeof *xp->map_keys);
    xp->map_vals = calloc(cap, sizeof *xp->map_vals);
    if (!xp->map_keys || !xp->map_vals)
        return false;
    xp->map_cap = cap;
    for (int i = 0; i < xp->n; i++) {
        size_t h = ptr_hash(xp->dec[i].node, cap);
        while (xp->map_keys[h])
            h = (h + 1) & (cap - 1);
        xp->map_keys[h] = xp->dec[i].node;
        xp->map_vals[h] = i;
    }
    return true;
}

/* ------------------------------------------------------------------ collecting nodes */

typedef struct walk_item {
    const em_plan_node *node, *parent;
    bool executed;
} walk_item;

typedef struct walk_list {
    walk_item *items;
    int n, cap;
} walk_list;

static bool walk_push(walk_list *w, const em_plan_node *n, const em_plan_node *parent,
                      bool executed) {
    for (int i = 0; i < w->n; i++) /* a node reached twice keeps its first parent */
        if (w->items[i].node == n) {
            w->items[i].executed |= executed;
            return true;
        }
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 64;
        walk_item *p = realloc(w->items, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        w->items = p;
        w->cap = cap;
    }
    w->items[w->n++] = (walk_item){n, parent, executed};
    return true;
}

static bool walk_tree(walk_list *w, const em_plan_node *n, const em_plan_node *parent,
                      const em_plan_node *exec_root, bool executed) {
    if (!n)
        return true;
    executed = executed || n == exec_root;
    if (!walk_push(w, n, parent, executed))
        return false;
    for (int i = 0; i < n->n_children; i++)
        if (!walk_tree(w, n->children[i], n, exec_root, executed))
            return false;
    return true;
}

/* ------------------------------------------------------------------ settings */

typedef struct ov_settings {
    const em_conf *conf;
    bool enabled, incompat_ok, lore_tag;
    int lore_id_base; /* the first LORE id (the plugin's count so far in the query) */
    bool spark_view; /* host Spark: judge by what Spark said of each expression */
    em_expr_compile_options copts;
    em_error *err;
    em_status status; /* a config read failed */
} ov_settings;

static em_status no_subquery_values(void *ctx, const em_expr *subquery, em_type type, em_pool *pool,
                                    em_column *out, em_error *err) {
    (void)ctx;
    (void)subquery;
    (void)type;
    (void)pool;
    (void)out;
    return EM_FAIL(err, EM_ERR_INTERNAL, "overrides: a probe does not evaluate subqueries");
}

static em_status settings_read(const em_plan *plan, const em_conf *conf, ov_settings *s,
                               em_error *err) {
    memset(s, 0, sizeof *s);
    s->conf = conf;
    s->err = err;
    EM_TRY(em_conf_get_bool(conf, "spark.ember.sql.enabled", &s->enabled, err));
    EM_TRY(em_conf_get_bool(conf, "spark.ember.sql.incompatibleOps.enabled", &s->incompat_ok, err));
    EM_TRY(em_conf_get_bool(conf, "spark.ember.sql.lore.tag.enabled", &s->lore_tag, err));
    EM_TRY(em_conf_get_int(conf, "spark.ember.sql.lore.idBase", &s->lore_id_base, err));
    bool ansi = em_shim_ansi_default(em_plan_shim(plan));
    if (em_conf_is_set(conf, "spark.sql.ansi.enabled"))
        EM_TRY(em_conf_get_bool(conf, "spark.sql.ansi.enabled", &ansi, err));
    const char *tz = em_conf_get_text(conf, "spark.sql.session.timeZone");
    s->copts.ansi = ansi;
    s->copts.shim = em_plan_shim(plan);
    s->copts.time_zone = tz;
    s->copts.subquery = no_subquery_values;
    return EM_OK;
}

/* Reads a family switch; a failure is remembered and reads as enabled. */
static bool switch_on(ov_settings *s, em_conf_family_id fam, const char *cls, bool *explicit_on) {
    char key[256];
    snprintf(key, sizeof key, "%s%s", em_conf_family_get(fam)->prefix, cls);
    bool on = true;
    em_error e = {0};
    if (em_conf_get_bool(s->conf, key, &on, &e) != EM_OK) {
        if (s->status == EM_OK) {
            s->status = e.code ? e.code : EM_ERR_INVALID;
            *s->err = e;
        }
        on = true;
    }
    if (explicit_on)
        *explicit_on = on && s->conf && em_conf_is_set(s->conf, key);
    return on;
}

/* ------------------------------------------------------------------ reasons */

static void node_reason(em_exec_plan *xp, int i, const char *text, const char *cls,
                        const char *config) {
    ov_node_info *in = &xp->info[i];
    for (int r = 0; r < in->n_reasons; r++)
        if (!strcmp(in->reasons[r].text, text))
            return;
    if (in->n_reasons == in->cap_reasons) {
        int cap = in->cap_reasons ? in->cap_reasons * 2 : 4;
        em_fallback_reason *p = realloc(in->reasons, (size_t)cap * sizeof *p);
        if (!p) {
            xp->failed = true;
            return;
        }
        in->reasons = p;
        in->cap_reasons = cap;
    }
    in->reasons[in->n_reasons++] = (em_fallback_reason){text, cls, config};
    xp->dec[i].reasons = in->reasons;
    xp->dec[i].n_reasons = in->n_reasons;
}

/* ------------------------------------------------------------------ expressions */

typedef struct expr_vec {
    em_expr_decision *items;
    int n, cap;
    /* the reasons of the expression being decided */
    em_fallback_reason r[6];
    int nr;
} expr_vec;

static int expr_push(em_exec_plan *xp, expr_vec *v, const em_expr *e, const char *cls, int depth) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 16;
        em_expr_decision *p = realloc(v->items, (size_t)cap * sizeof *p);
        if (!p) {
            xp->failed = true;
            return -1;
        }
        v->items = p;
        v->cap = cap;
    }
    v->items[v->n] =
        (em_expr_decision){.expr = e, .class_name = cls, .depth = depth, .supported = true};
    return v->n++;
}

static void expr_reason(expr_vec *v, const char *text, const char *cls, const char *config) {
    if (v->nr < (int)(sizeof v->r / sizeof v->r[0]))
        v->r[v->nr++] = (em_fallback_reason){text, cls, config};
}

static void expr_finish(em_exec_plan *xp, expr_vec *v, int at) {
    if (at < 0 || v->nr == 0)
        return;
    em_fallback_reason *r = arena_alloc(xp, sizeof *r * (size_t)v->nr);
    if (r)
        memcpy(r, v->r, sizeof *r * (size_t)v->nr);
    v->items[at].supported = false;
    v->items[at].reasons = r;
    v->items[at].n_reasons = r ? v->nr : 0;
    v->nr = 0;
}

static bool is_fp(const em_expr *a) {
    return a->type_known && (a->type.id == EM_TYPE_FLOAT || a->type.id == EM_TYPE_DOUBLE);
}

/* ------------------------------------------------------------------ Spark's own view */

/* Whether Spark typed e and Ember's rules type it otherwise (structured plans). */
static bool type_differs(const em_expr *e) {
    return e && e->type_known && e->spark_type_known && !em_type_equal(e->type, e->spark_type);
}

/* The expression as Spark prints it, in the arena ("?" when it cannot be printed). */
static const char *expr_text(em_exec_plan *xp, const em_expr *e) {
    char *t = NULL;
    size_t len = 0;
    if (em_expr_print(e, NULL, &t, &len, NULL) != EM_OK || !t) {
        free(t);
        return "?";
    }
    const char *r = arena_printf(xp, "%s", t);
    free(t);
    return r;
}

/* e as a reason names it; name_only prints an attribute or alias as the column it
 * produces (name#id). */
static const char *reason_subject(em_exec_plan *xp, const em_expr *e, bool name_only) {
    return name_only && e->name && (e->kind == EM_EXPR_ALIAS || e->kind == EM_EXPR_ATTR)
               ? arena_printf(xp, "%s#%lld", e->name, (long long)e->id)
               : expr_text(xp, e);
}

/* "Ember types <e> as X, Spark as Y" */
static const char *type_reason(em_exec_plan *xp, const em_expr *e, bool name_only) {
    char et[48], st[48];
    em_type_format(e->type, et, sizeof et);
    em_type_format(e->spark_type, st, sizeof st);
    return arena_printf(xp, "Ember types %s as %s, Spark as %s", reason_subject(xp, e, name_only),
                        et, st);
}

/* Whether Ember left the type of a column a node produces unknown where Spark has
 * one: the operator's output schema would carry the column as Null, and Spark
 * would get a Null vector holding the values of another type. */
static bool type_unresolved(const em_expr *e) {
    return e && !e->type_known && e->spark_type_known && e->spark_type.id != EM_TYPE_NULL;
}

/* "Ember cannot type <column>, Spark types it as Y" */
static const char *unresolved_reason(em_exec_plan *xp, const em_expr *e) {
    char st[48];
    em_type_format(e->spark_type, st, sizeof st);
    return arena_printf(xp, "Ember cannot type %s, Spark types it as %s",
                        reason_subject(xp, e, true), st);
}

/* Whether Spark gave e a type Ember has none like (an array, struct, map or interval):
 * a node computing or passing on such a value would hand Spark a vector of another
 * type. A struct whose field is taken right away (a merged scalar subquery's value
 * under GetStructField) never becomes a column. */
static bool type_foreign(const em_expr *e, const em_expr *parent) {
    return e && e->spark_type_foreign && !(parent && parent->kind == EM_EXPR_FIELD);
}

/* Whether e is where such a type starts: none of its operands has one. */
static bool type_foreign_here(const em_expr *e, const em_expr *parent) {
    if (!type_foreign(e, parent))
        return false;
    for (int i = 0; i < e->n_args; i++)
        if (type_foreign(e->args[i], e))
            return false;
    return true;
}

/* "Spark types <e> as array<int>, which Ember has no type for" */
static const char *foreign_reason(em_exec_plan *xp, const em_expr *e, bool name_only) {
    return arena_printf(xp, "Spark types %s as %s, which Ember has no type for",
                        reason_subject(xp, e, name_only), e->spark_type_foreign);
}

/* Why the native engine would not evaluate e as Spark's evalMode says, or NULL.
 * The native engine follows one ANSI setting per task, the session's
 * (em_expr_compile_options.ansi), and has no TRY mode. */
static const char *eval_mode_reason(em_exec_plan *xp, const ov_settings *s, const em_expr *e) {
    if (!e || e->eval_mode == EM_EVAL_UNSPECIFIED)
        return NULL;
    if (e->eval_mode == EM_EVAL_TRY)
        return arena_printf(xp,
                            "Spark evaluates %s in TRY mode (null on error), which the native "
                            "engine does not implement",
                            expr_text(xp, e));
    bool ansi = e->eval_mode == EM_EVAL_ANSI;
    if (ansi == s->copts.ansi)
        return NULL;
    return arena_printf(xp,
                        "Spark evaluates %s in %s mode, but the native engine follows the "
                        "session's spark.sql.ansi.enabled=%s",
                        expr_text(xp, e), ansi ? "ANSI" : "LEGACY",
                        s->copts.ansi ? "true" : "false");
}

/* Whether the type disagreement starts at e: e differs and none of its operands does
 * (an alias of a mistyped expression, or an operator over one, says nothing new). */
static bool type_differs_here(const em_expr *e) {
    if (!type_differs(e))
        return false;
    for (int i = 0; i < e->n_args; i++)
        if (type_differs(e->args[i]))
            return false;
    return true;
}

/* Rule, switch, incompatibility and types of one expression (or of an
 * aggregate's function, with fn_of set to its AggregateExpression). */
static void judge(em_exec_plan *xp, ov_settings *s, expr_vec *v, const em_expr *e,
                  const em_expr *parent, const ov_expr_rule *rule, const char *cls, bool fn_line) {
    /* what Spark said about it (structured plans): its type and evalMode */
    if (s->spark_view && !fn_line) {
        if (type_foreign_here(e, parent))
            expr_reason(v, foreign_reason(xp, e, false), cls, NULL);
        if (type_differs_here(e))
            expr_reason(v, type_reason(xp, e, false), cls, NULL);
        const char *why = eval_mode_reason(xp, s, e);
        if (why)
            expr_reason(v, why, cls, NULL);
    }
    if (!rule->native) {
        expr_reason(v, arena_printf(xp, "expression %s is not supported natively", cls), cls, NULL);
        return;
    }
    for (int i = 0; i < e->n_args; i++)
        if (!e->args || !e->args[i]) {
            expr_reason(v, arena_printf(xp, "expression %s is missing an operand", cls), cls, NULL);
            return;
        }
    bool explicit_on = false;
    if (!rule->switchless) {
        const char *key = arena_printf(xp, "spark.ember.sql.expression.%s", cls);
        if (!switch_on(s, EM_CONF_FAMILY_EXPRESSION, cls, &explicit_on)) {
            expr_reason(v,
                        arena_printf(xp,
                                     "the Expression %s has been disabled: set %s=true to "
                                     "enable it",
                                     cls, key),
                        cls, key);
            return;
        }
    }
    bool fp_arg = false;
    for (int i = 0; i < e->n_args; i++)
        if (e->args[i] && is_fp(e->args[i]))
            fp_arg = true;
    if ((rule->incompat || (rule->incompat_fp && fp_arg)) && !s->incompat_ok && !explicit_on) {
        const char *key = arena_printf(xp, "spark.ember.sql.expression.%s", cls);
        expr_reason(v,
                    arena_printf(xp,
                                 "the native %s is not 100%% compatible with Spark (%s): set "
                                 "spark.ember.sql.incompatibleOps.enabled=true, or %s=true, to "
                                 "enable it",
                                 cls, rule->note ? rule->note : "incompatible", key),
                    cls, "spark.ember.sql.incompatibleOps.enabled");
        return;
    }
    char tn[48];
    /* an aggregate's function is typed by its argument; the wrapper's type is the result */
    if (e->type_known && !fn_line && e->kind != EM_EXPR_AGG &&
        !(rule->out_types & OV_T(e->type.id)) && e->type.id != EM_TYPE_NULL) {
        em_type_format(e->type, tn, sizeof tn);
        expr_reason(
            v, arena_printf(xp, "expression %s producing %s is not supported natively", cls, tn),
            cls, NULL);
        return;
    }
    if (e->kind != EM_EXPR_AGG || fn_line)
        for (int i = 0; i < e->n_args; i++) {
            const em_expr *a = e->args[i];
            if (!a || !a->type_known || a->kind == EM_EXPR_LIST || a->kind == EM_EXPR_TYPE ||
                (a->kind == EM_EXPR_LITERAL && a->type.id == EM_TYPE_NULL))
                continue;
            if (rule->in_types & OV_T(a->type.id))
                continue;
            em_type_format(a->type, tn, sizeof tn);
            expr_reason(v,
                        arena_printf(xp, "expression %s of %s is not supported natively", cls, tn),
                        cls, NULL);
            return;
        }
    if (rule->check) {
        char why[300];
        ov_check_ctx cx = {parent};
        if (!rule->check(e, &cx, why, sizeof why))
            expr_reason(v, arena_printf(xp, "expression %s: %s", cls, why), cls, NULL);
    }
}

/* Decides e and its operands, in pre-order; returns false when something in
 * the tree cannot run natively. */
static bool decide_expr(em_exec_plan *xp, ov_settings *s, expr_vec *v, const em_expr *e,
                        const em_expr *parent, int depth) {
    if (!e)
        return false;
    const char *cls = NULL;
    const ov_expr_rule *rule = em_ov_expr_rule_for(e, &cls);
    if (!rule) { /* a list or a type: not an expression of its own */
        bool ok = true;
        if (e->kind == EM_EXPR_LIST)
            for (int i = 0; i < e->n_args; i++)
                ok &= decide_expr(xp, s, v, e->args ? e->args[i] : NULL, parent, depth);
        return ok;
    }
    int at = expr_push(xp, v, e, cls, depth);
    if (at < 0)
        return false;
    v->nr = 0;
    judge(xp, s, v, e, parent, rule, cls, false);
    bool ok = v->nr == 0;
    expr_finish(xp, v, at);
    int kid_depth = depth + 1;
    if (e->kind == EM_EXPR_AGG) {
        const char *fcls = NULL;
        const ov_expr_rule *fr = em_ov_agg_fn_rule(e, &fcls);
        int fat = expr_push(xp, v, e, fcls, depth + 1);
        if (fat < 0)
            return false;
        judge(xp, s, v, e, e, fr, fcls, true);
        ok &= v->nr == 0;
        expr_finish(xp, v, fat);
        kid_depth = depth + 2;
    }
    /* a window's specification is judged through the operator's partition and
     * order lists; a subquery's own tree is tagged as a tree */
    int n_kids = e->kind == EM_EXPR_WINDOW ? (e->n_args > 0 ? 1 : 0) : e->n_args;
    for (int i = 0; i < n_kids; i++)
        ok &= decide_expr(xp, s, v, e->args ? e->args[i] : NULL, e, kid_depth);
    return ok;
}

/* ------------------------------------------------------------------ what a node evaluates */

typedef enum slot_input {
    IN_LEFT,    /* the first child's output */
    IN_RIGHT,   /* the second child's output */
    IN_BOTH,    /* both children's outputs, left first */
    IN_RESULTS, /* an aggregate's keys and aggregate attributes */
} slot_input;

typedef enum slot_probe {
    PROBE_EXPR,   /* em_expr_compile (an alias's body; sort orders' child) */
    PROBE_AGG,    /* em_agg_compile */
    PROBE_WINDOW, /* a window function: em_agg_compile for aggregates */
    PROBE_NONE,   /* judged by the rules only */
} slot_probe;

typedef struct slot {
    const em_expr *e;
    slot_input input;
    slot_probe probe;
} slot;

typedef struct slot_vec {
    slot items[64];
    slot *more;
    int n, cap_more;
} slot_vec;

static slot *slot_at(slot_vec *sv, int i) { return i < 64 ? &sv->items[i] : &sv->more[i - 64]; }

static bool slot_add(slot_vec *sv, const em_expr *e, slot_input in, slot_probe pr) {
    if (!e)
        return true;
    if (sv->n >= 64) {
        int k = sv->n - 64;
        if (k == sv->cap_more) {
            int cap = sv->cap_more ? sv->cap_more * 2 : 64;
            slot *p = realloc(sv->more, (size_t)cap * sizeof *p);
            if (!p)
                return false;
            sv->more = p;
            sv->cap_more = cap;
        }
    }
    *slot_at(sv, sv->n++) = (slot){e, in, pr};
    return true;
}

static bool slot_field(slot_vec *sv, const em_plan_node *n, em_field_kind k, slot_input in,
                       slot_probe pr) {
    const em_plan_field *f = em_plan_node_field(n, k);
    for (int i = 0; f && i < f->n_exprs; i++)
        if (!slot_add(sv, f->exprs[i], in, pr))
            return false;
    return true;
}

static bool slot_list(slot_vec *sv, const em_expr *list, slot_input in, slot_probe pr) {
    if (!list || list->kind != EM_EXPR_LIST)
        return true;
    for (int i = 0; i < list->n_args; i++)
        if (!slot_add(sv, list->args[i], in, pr))
            return false;
    return true;
}

static const em_expr *argument(const em_plan_node *n, int i) {
    const em_plan_field *f = em_plan_node_field(n, EM_FIELD_ARGUMENTS);
    return f && i < f->n_exprs ? f->exprs[i] : NULL;
}

/* The aggregate's Results are compiled by expression id only when some
 * function is final or there are none (else they are its buffers, by
 * position: hash_agg.c). */
static bool results_compiled(const em_plan_node *n) {
    const em_plan_field *ff = em_plan_node_field(n, EM_FIELD_FUNCTIONS);
    if (!ff || ff->n_exprs == 0)
        return true;
    for (int i = 0; i < ff->n_exprs; i++)
        if (ff->exprs[i]->kind == EM_EXPR_AGG && ff->exprs[i]->mode == EM_AGG_FINAL)
            return true;
    return false;
}

static bool node_slots(const em_plan_node *n, slot_vec *sv) {
    bool ok = true;
    switch (n->kind) {
    case EM_NODE_FILTER:
        ok = slot_field(sv, n, EM_FIELD_CONDITION, IN_LEFT, PROBE_EXPR);
        break;
    case EM_NODE_PROJECT:
        ok = slot_field(sv, n, EM_FIELD_OUTPUT, IN_LEFT, PROBE_EXPR);
        break;
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
        ok = slot_field(sv, n, EM_FIELD_KEYS, IN_LEFT, PROBE_EXPR) &&
             slot_field(sv, n, EM_FIELD_FUNCTIONS, IN_LEFT, PROBE_AGG) &&
             slot_field(sv, n, EM_FIELD_RESULTS, IN_RESULTS,
                        results_compiled(n) ? PROBE_EXPR : PROBE_NONE);
        break;
    case EM_NODE_SORT:
        ok = slot_list(sv, argument(n, 0), IN_LEFT, PROBE_EXPR);
        break;
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        ok = slot_list(sv, argument(n, 1), IN_LEFT, PROBE_EXPR) &&
             slot_list(sv, argument(n, 2), IN_LEFT, PROBE_EXPR);
        break;
    case EM_NODE_EXCHANGE: {
        const em_expr *p = argument(n, 0);
        ok = slot_add(sv, p, IN_LEFT, PROBE_NONE);
        if (ok && p && p->kind == EM_EXPR_CALL && p->name &&
            (!strcmp(p->name, "hashpartitioning") || !strcmp(p->name, "rangepartitioning")))
            for (int i = 0; ok && i + 1 < p->n_args; i++) /* the keys, probed alone */
                ok = slot_add(sv, p->args[i], IN_LEFT, PROBE_EXPR);
        break;
    }
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
        ok = slot_field(sv, n, EM_FIELD_LEFT_KEYS, IN_LEFT, PROBE_EXPR) &&
             slot_field(sv, n, EM_FIELD_RIGHT_KEYS, IN_RIGHT, PROBE_EXPR);
        /* fall through */
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        ok = ok && slot_field(sv, n, EM_FIELD_JOIN_CONDITION, IN_BOTH, PROBE_EXPR);
        break;
    case EM_NODE_EXPAND: {
        const em_expr *lists = argument(n, 0);
        for (int i = 0; ok && lists && lists->kind == EM_EXPR_LIST && i < lists->n_args; i++)
            ok = slot_list(sv, lists->args[i], IN_LEFT, PROBE_EXPR);
        break;
    }
    case EM_NODE_WINDOW:
    case EM_NODE_WINDOW_GROUP_LIMIT: {
        const em_plan_field *f = em_plan_node_field(n, EM_FIELD_ARGUMENTS);
        for (int i = 0; ok && f && i < f->n_exprs; i++) {
            const em_expr *a = f->exprs[i];
            if (a->kind == EM_EXPR_LIST)
                ok = slot_list(sv, a, IN_LEFT,
                               n->kind == EM_NODE_WINDOW && i == 0 ? PROBE_WINDOW : PROBE_EXPR);
            else if (a->kind == EM_EXPR_CALL)
                ok = slot_add(sv, a, IN_LEFT, PROBE_NONE);
        }
        break;
    }
    default:
        break;
    }
    return ok;
}

/* ------------------------------------------------------------------ probing */

typedef struct attr_set {
    const em_expr **a;
    int n;
} attr_set;

static const em_plan_node *through_reuse(const em_plan_node *n) {
    return n && n->kind == EM_NODE_REUSED_EXCHANGE && n->reuses && n->n_output == 0 ? n->reuses : n;
}

static bool attrs_for(const em_plan_node *n, slot_input in, attr_set *out) {
    out->a = NULL;
    out->n = 0;
    const em_plan_node *l = n->n_children > 0 ? through_reuse(n->children[0]) : NULL;
    const em_plan_node *r = n->n_children > 1 ? through_reuse(n->children[1]) : NULL;
    int nl = l ? l->n_output : 0, nr = r ? r->n_output : 0;
    if (in == IN_RESULTS) {
        const em_plan_field *kf = em_plan_node_field(n, EM_FIELD_KEYS);
        const em_plan_field *af = em_plan_node_field(n, EM_FIELD_AGG_ATTRS);
        nl = kf ? kf->n_exprs : 0;
        nr = af ? af->n_exprs : 0;
        out->a = calloc((size_t)(nl + nr) + 1, sizeof *out->a);
        if (!out->a)
            return false;
        for (int i = 0; i < nl; i++)
            out->a[out->n++] = kf->exprs[i];
        for (int i = 0; i < nr; i++)
            out->a[out->n++] = af->exprs[i];
        return true;
    }
    int total = in == IN_LEFT ? nl : in == IN_RIGHT ? nr : nl + nr;
    out->a = calloc((size_t)total + 1, sizeof *out->a);
    if (!out->a)
        return false;
    if (in != IN_RIGHT)
        for (int i = 0; i < nl; i++)
            out->a[out->n++] = l->output[i];
    if (in != IN_LEFT)
        for (int i = 0; i < nr; i++)
            out->a[out->n++] = r->output[i];
    return true;
}

/* Compiles one slot as its operator would; false with the compiler's
 * message in msg when it refuses. */
static bool probe_slot(const slot *sl, const attr_set *in, const ov_settings *s, char *msg,
                       size_t cap) {
    const em_expr *e = sl->e;
    em_error err = {0};
    em_status st = EM_OK;
    if (sl->probe == PROBE_NONE)
        return true;
    if (sl->probe == PROBE_WINDOW) {
        /* the Window operator's own reading of the expression (both engines'):
         * Spark's optimizer leaves expressions over window functions there too
         * (count(NULL) folded to 0, a decimal avg under a cast), which the
         * operator refuses. The order key's type, checked for RANGE offsets,
         * is not known here: a numeric one is assumed. */
        em_win_desc desc;
        st = em_win_describe(e, true, em_type_make(EM_TYPE_LONG), &desc, &err);
        if (st == EM_OK && desc.kind == EM_WIN_AGG) {
            em_agg_fn *fn = NULL;
            st = em_agg_compile(desc.fn, in->a, in->n, &s->copts, &fn, &err);
            em_agg_fn_destroy(fn);
        }
    } else if (sl->probe == PROBE_AGG) {
        em_agg_fn *fn = NULL;
        st = em_agg_compile(e, in->a, in->n, &s->copts, &fn, &err);
        em_agg_fn_destroy(fn);
    } else {
        const em_expr *body = e;
        if (body->kind == EM_EXPR_ALIAS && body->n_args == 1)
            body = body->args[0];
        else if (body->kind == EM_EXPR_SORT_ORDER && body->n_args == 1)
            body = body->args[0];
        /* a projected null literal is a null column, never compiled (op_util.c) */
        if (body->kind == EM_EXPR_LITERAL && body->text && !strcmp(body->text, "null"))
            return true;
        em_expr_prog *prog = NULL;
        st = em_expr_compile(body, in->a, in->n, &s->copts, &prog, &err);
        em_expr_prog_destroy(prog);
    }
    /* only a refusal is a support question: a missing attribute or an
     * unknown type stops both engines, and the runtime reports it */
    if (st == EM_OK || st != EM_ERR_UNSUPPORTED)
        return true;
    snprintf(msg, cap, "%s", err.msg[0] ? err.msg : em_status_name(st));
    return false;
}

/* ------------------------------------------------------------------ nodes */

/* The types a Hive partition column is read natively as: those whose text
 * Spark's cast from string gives back exactly (not binary). */
static bool partition_type_ok(em_type t) {
    return t.id != EM_TYPE_BINARY && t.id != EM_TYPE_NULL;
}

/* A scan's columns are ReadSchema's, read from the files, and its relation's
 * partition columns, which each task's file splits carry as values (inside
 * Spark from its listing; outside from the col=value folders, the columns
 * typed from their values since the plan text names no partition schema). */
static bool scan_columns_ok(em_exec_plan *xp, const ov_settings *s, int i, const em_plan_node *n,
                            const char *cls) {
    (void)s;
    bool ok = true;
    if (!n->name || strcmp(n->name, "Scan parquet") != 0) {
        node_reason(xp, i,
                    arena_printf(xp, "%s: only Parquet files are read natively (%s)", cls,
                                 n->name ? n->name : "?"),
                    cls, NULL);
        return false;
    }
    /* the Parquet reader maps every column of a file before it reads any, and
     * has no nested ones: a file holding a struct, array or map column cannot
     * be read natively even for its other columns. Only Spark's relation
     * schema says so (structured plans); "<" past the outer struct's marks a
     * nested type (decimal(p,s) has none). */
    const char *ds = n->data_schema;
    if (ds && !strncmp(ds, "struct<", 7) && strchr(ds + 7, '<')) {
        node_reason(xp, i,
                    arena_printf(xp, "%s: the files hold a nested column (%s), which the Parquet "
                                     "reader does not map",
                                 cls, ds),
                    cls, NULL);
        ok = false;
    }
    const em_plan_field *rs = em_plan_node_field(n, EM_FIELD_READ_SCHEMA);
    for (int c = 0; c < n->n_output; c++) {
        const em_expr *a = n->output[c];
        bool found = false;
        for (int j = 0; rs && j < rs->n_schema && !found; j++)
            found = a->name && !strcasecmp(rs->schema[j].name, a->name);
        const char *why = NULL;
        if (found)
            continue;
        /* text plans: typed from the partition folders' values (em_retype_column_type) */
        if (!a->type_known)
            why = "a partition column of unknown type (the plan text names none, and no "
                  "partition folder gave one)";
        else if (!partition_type_ok(a->type))
            why = "a partition column of a type not read natively";
        if (why) {
            node_reason(xp, i,
                        arena_printf(xp, "%s: column %s is not in ReadSchema: %s", cls,
                                     a->name ? a->name : "?", why),
                        cls, NULL);
            ok = false;
        }
    }
    return ok;
}

static void node_checks(em_exec_plan *xp, ov_settings *s, int i) {
    em_node_decision *d = &xp->dec[i];
    const em_plan_node *n = d->node;
    const ov_exec_rule *rule = em_ov_exec_rule_for(n);
    const char *cls = d->class_name;
    if (rule->how == OV_EXEC_ROW) {
        node_reason(xp, i, arena_printf(xp, "%s is not supported natively", cls), cls, NULL);
        return;
    }
    const char *key = arena_printf(xp, "spark.ember.sql.exec.%s", cls);
    if (!switch_on(s, EM_CONF_FAMILY_EXEC, cls, NULL))
        node_reason(
            xp, i,
            arena_printf(xp, "the Exec %s has been disabled: set %s=true to enable it", cls, key),
            cls, key);
    switch (n->kind) {
    case EM_NODE_SCAN:
        scan_columns_ok(xp, s, i, n, cls);
        break;
    case EM_NODE_LOCAL_TABLE_SCAN: {
        const em_expr *a = argument(n, 0);
        if (!(a && (a->kind == EM_EXPR_LITERAL || a->kind == EM_EXPR_RAW) && a->text &&
              !strcmp(a->text, "<empty>")))
            node_reason(
                xp, i, arena_printf(xp, "%s: the plan text does not include the table's rows", cls),
                cls, NULL);
        break;
    }
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT:
        if (n->join_type == EM_JOIN_OTHER)
            node_reason(xp, i,
                        arena_printf(xp, "%s: join type %s is not supported natively", cls,
                                     n->join_type_text ? n->join_type_text : "?"),
                        cls, NULL);
        if (n->n_children != 2)
            node_reason(xp, i, arena_printf(xp, "%s: expected two children", cls), cls, NULL);
        break;
    default:
        if (n->kind != EM_NODE_UNION && n->n_children > 1)
            node_reason(xp, i, arena_printf(xp, "%s: more than one child", cls), cls, NULL);
        break;
    }
    char tn[48];
    for (int c = 0; c < n->n_output; c++) {
        const em_expr *a = n->output[c];
        /* an unknown type (a folded relation whose types come from the
         * warehouse at run time) is no reason to prefer either engine */
        if (a->type_known && !(rule->types & OV_T(a->type.id))) {
            em_type_format(a->type, tn, sizeof tn);
            node_reason(xp, i,
                        arena_printf(xp,
                                     "%s: output column %s of type %s is not supported "
                                     "natively",
                                     cls, a->name ? a->name : "?", tn),
                        cls, NULL);
        }
    }
}

static void node_exprs(em_exec_plan *xp, ov_settings *s, int i) {
    em_node_decision *d = &xp->dec[i];
    const em_plan_node *n = d->node;
    slot_vec sv = {.n = 0};
    expr_vec v = {0};
    if (!node_slots(n, &sv)) {
        xp->failed = true;
        free(sv.more);
        return;
    }
    /* a key probed on its own repeats a partitioning's argument: decide each tree once */
    for (int k = 0; k < sv.n; k++) {
        const slot *sl = slot_at(&sv, k);
        bool seen = false;
        for (int j = 0; j < k && !seen; j++)
            seen = slot_at(&sv, j)->e == sl->e;
        for (int j = 0; j < k && !seen; j++) {
            const em_expr *p = slot_at(&sv, j)->e;
            for (int a = 0; p->kind == EM_EXPR_CALL && a < p->n_args && !seen; a++)
                seen = p->args[a] == sl->e;
        }
        if (!seen)
            decide_expr(xp, s, &v, sl->e, NULL, 0);
    }
    for (int k = 0; k < v.n; k++)
        for (int r = 0; r < v.items[k].n_reasons; r++)
            node_reason(xp, i, v.items[k].reasons[r].text, v.items[k].reasons[r].class_name,
                        v.items[k].reasons[r].config);
    if (v.n) {
        em_expr_decision *arr = arena_alloc(xp, sizeof *arr * (size_t)v.n);
        if (arr) {
            memcpy(arr, v.items, sizeof *arr * (size_t)v.n);
            d->exprs = arr;
            d->n_exprs = v.n;
        }
    }
    free(v.items);
    /* the safety net: compile what the operator would compile */
    if (xp->info[i].n_reasons == 0) {
        for (int k = 0; k < sv.n; k++) {
            const slot *sl = slot_at(&sv, k);
            attr_set in;
            if (!attrs_for(n, sl->input, &in)) {
                xp->failed = true;
                break;
            }
            char msg[EM_ERROR_MSG_CAP];
            bool ok = probe_slot(sl, &in, s, msg, sizeof msg);
            free(in.a);
            if (!ok)
                node_reason(xp, i, arena_printf(xp, "native engine refused: %s", msg),
                            d->class_name, NULL);
        }
    }
    free(sv.more);
}

/* One expression tree of a node under Spark's view: where a type disagreement
 * starts, and every evalMode the native engine would not follow. */
static void spark_view_expr(em_exec_plan *xp, const ov_settings *s, int i, const em_expr *e,
                            const em_expr *parent, int depth) {
    if (!e || depth > 256)
        return;
    const char *cls = NULL;
    bool foreign = type_foreign_here(e, parent);
    if (foreign || type_differs_here(e) || e->eval_mode != EM_EVAL_UNSPECIFIED) {
        em_ov_expr_rule_for(e, &cls);
        if (!cls)
            cls = em_expr_kind_name(e->kind);
    }
    if (foreign)
        node_reason(xp, i, foreign_reason(xp, e, false), cls, NULL);
    if (type_differs_here(e))
        node_reason(xp, i, type_reason(xp, e, false), cls, NULL);
    const char *why = eval_mode_reason(xp, s, e);
    if (why)
        node_reason(xp, i, why, cls, NULL);
    for (int a = 0; a < e->n_args; a++)
        spark_view_expr(xp, s, i, e->args ? e->args[a] : NULL, e, depth + 1);
}

/* A column of a type Ember holds no vector for (array, struct, map, the
 * interval types): Spark's Arrow export of an input carrying one cannot be
 * imported, a scan cannot read it, an operator cannot produce it. Such a node
 * stays Spark's, whether or not it looks at the column. */
static void unheld_columns(em_exec_plan *xp, int i, const em_plan_node *n, const char *which) {
    for (int c = 0; n && c < n->n_output; c++) {
        const em_expr *o = n->output[c];
        if (o->spark_type_foreign)
            node_reason(xp, i,
                        arena_printf(xp, "%s column %s is of type %s, which Ember does not hold",
                                     which, o->name ? o->name : "?", o->spark_type_foreign),
                        xp->dec[i].class_name, NULL);
    }
}

/*
 * Spark's own view of a node (structured plans: parsed text carries none): every
 * expression of every field, subexpressions included, and every column it
 * outputs. A type Ember's rules compute otherwise than Spark did would make the
 * native operator produce (or expect from its input) other values than Spark's
 * plan around it; an evalMode other than the session's is one the native engine
 * does not follow. Either keeps the node off the native engine, with a reason
 * naming the expression. The judge of each expression reports the same texts on
 * its own line; node_reason keeps one of each.
 */
static void node_spark_view(em_exec_plan *xp, const ov_settings *s, int i) {
    const em_plan_node *n = xp->dec[i].node;
    for (int f = 0; f < n->n_fields; f++)
        for (int k = 0; k < n->fields[f].n_exprs; k++)
            spark_view_expr(xp, s, i, n->fields[f].exprs[k], NULL, 0);
    if (n->exists_attr)
        spark_view_expr(xp, s, i, n->exists_attr, NULL, 0);
    /* outputs passed on from the children (a join's, a filter's without an Input
     * list): the columns themselves, named as columns */
    for (int c = 0; c < n->n_output; c++) {
        const em_expr *o = n->output[c];
        bool listed = false;
        for (int f = 0; f < n->n_fields && !listed; f++)
            for (int k = 0; k < n->fields[f].n_exprs && !listed; k++)
                listed = n->fields[f].exprs[k] == o;
        /* a column of a type Ember has none for is unheld_columns' to report */
        if (!listed && type_differs(o))
            node_reason(xp, i, type_reason(xp, o, true), "AttributeReference", NULL);
        if (type_unresolved(o))
            node_reason(xp, i, unresolved_reason(xp, o), "AttributeReference", NULL);
    }
    unheld_columns(xp, i, n, "output");
    for (int c = 0; c < n->n_children; c++)
        unheld_columns(xp, i, through_reuse(n->children[c]), "input");
}

/* ------------------------------------------------------------------ whole plan */

static const em_plan_node *eff_parent(const em_exec_plan *xp, int i) {
    const em_plan_node *p = xp->info[i].parent;
    while (p) {
        int k = map_find(xp, p);
        if (k < 0)
            return NULL;
        if (xp->dec[k].engine != EM_ENGINE_PASS)
            return p;
        p = xp->info[k].parent;
    }
    return NULL;
}

/* The engine a node's output comes from, looking through pass-through nodes
 * (their single child); PASS when there is no operator below. */
static em_engine eff_engine(const em_exec_plan *xp, const em_plan_node *n) {
    for (int guard = 0; n && guard < 100000; guard++) {
        int k = map_find(xp, n);
        if (k < 0)
            return EM_ENGINE_PASS;
        if (xp->dec[k].engine != EM_ENGINE_PASS)
            return xp->dec[k].engine;
        if (n->n_children != 1)
            return EM_ENGINE_PASS;
        n = n->children[0];
    }
    return EM_ENGINE_PASS;
}

static void fix_exchange_overhead(em_exec_plan *xp, const em_plan_node *n) {
    if (!n)
        return;
    for (int c = 0; c < n->n_children; c++)
        fix_exchange_overhead(xp, n->children[c]);
    int i = map_find(xp, n);
    if (i < 0 || n->kind != EM_NODE_EXCHANGE || xp->dec[i].engine != EM_ENGINE_NATIVE ||
        n->n_children != 1)
        return;
    if (eff_engine(xp, n->children[0]) != EM_ENGINE_ROW)
        return;
    const em_plan_node *p = eff_parent(xp, i);
    int pi = map_find(xp, p);
    if (pi >= 0 && xp->dec[pi].engine == EM_ENGINE_NATIVE)
        return;
    xp->dec[i].engine = EM_ENGINE_ROW;
    node_reason(xp, i,
                "a native exchange without native children is inefficient (its child and its "
                "reader run on rows)",
                xp->dec[i].class_name, NULL);
}

/* Whether n reads Ember's own shuffle through AQE's stage (and its read). */
static bool reads_ember_stage(const em_plan_node *n) {
    if (n->kind == EM_NODE_AQE_SHUFFLE_READ && n->n_children == 1)
        n = n->children[0];
    return n->kind == EM_NODE_SHUFFLE_QUERY_STAGE && n->stage_of_ember;
}

/* Inside Spark an exchange (shuffle or broadcast) is native only over a
 * native map side: its blocks come from the child's fragment. A broadcast
 * AQE plans over a finished Ember shuffle (a sort-merge join turned into a
 * broadcast join) takes that shuffle's batches as its input: Spark's own
 * would build a HashedRelation on the driver for Ember to unpack again. */
static void spark_exchanges(em_exec_plan *xp) {
    for (int i = 0; i < xp->n; i++) {
        em_node_decision *d = &xp->dec[i];
        const em_plan_node *n = d->node;
        if ((n->kind != EM_NODE_EXCHANGE && n->kind != EM_NODE_BROADCAST_EXCHANGE) ||
            d->engine != EM_ENGINE_NATIVE)
            continue;
        int c = n->n_children == 1 ? map_find(xp, n->children[0]) : -1;
        if (c >= 0 && xp->dec[c].engine == EM_ENGINE_NATIVE)
            continue;
        if (n->kind == EM_NODE_BROADCAST_EXCHANGE && n->n_children == 1 &&
            reads_ember_stage(n->children[0]))
            continue;
        d->engine = EM_ENGINE_ROW;
        node_reason(xp, i,
                    arena_printf(xp, "%s: its input runs in Spark, so does its map side",
                                 d->class_name),
                    d->class_name, NULL);
    }
}

static void lore_tag(em_exec_plan *xp, const em_plan_node *n, int *next) {
    if (!n)
        return;
    for (int c = 0; c < n->n_children; c++)
        lore_tag(xp, n->children[c], next);
    int i = map_find(xp, n);
    if (i >= 0 && xp->dec[i].engine == EM_ENGINE_NATIVE && xp->dec[i].lore_id < 0 &&
        n->kind != EM_NODE_REUSED_EXCHANGE)
        xp->dec[i].lore_id = (*next)++;
}

typedef struct sort_item {
    em_node_decision d;
    ov_node_info info;
} sort_item;

static int cmp_items(const void *a, const void *b) {
    const sort_item *x = a, *y = b;
    if (x->d.node->id != y->d.node->id)
        return x->d.node->id < y->d.node->id ? -1 : 1;
    return x->info.order < y->info.order ? -1 : x->info.order > y->info.order;
}

static em_status build_decisions(em_exec_plan *xp, const em_plan *plan) {
    walk_list w = {0};
    const em_plan_node *exec_root = em_plan_exec_root(plan);
    bool ok = walk_tree(&w, em_plan_root(plan), NULL, exec_root, false);
    for (int q = 0; ok && q < em_plan_n_subqueries(plan); q++) {
        const em_plan_subquery *sq = em_plan_subquery_at(plan, q);
        if (sq && sq->root)
            ok = walk_tree(&w, sq->root, NULL, sq->root, true);
    }
    sort_item *items = ok ? calloc((size_t)w.n + 1, sizeof *items) : NULL;
    if (!items) {
        free(w.items);
        return EM_ERR_NOMEM;
    }
    for (int i = 0; i < w.n; i++) {
        items[i].d.node = w.items[i].node;
        items[i].d.lore_id = -1;
        items[i].info.parent = w.items[i].parent;
        items[i].info.order = i;
        items[i].info.executed = w.items[i].executed;
    }
    qsort(items, (size_t)w.n, sizeof *items, cmp_items);
    xp->n = w.n;
    xp->dec = calloc((size_t)w.n + 1, sizeof *xp->dec);
    xp->info = calloc((size_t)w.n + 1, sizeof *xp->info);
    free(w.items);
    if (!xp->dec || !xp->info) {
        free(items);
        return EM_ERR_NOMEM;
    }
    for (int i = 0; i < w.n; i++) {
        xp->dec[i] = items[i].d;
        xp->info[i] = items[i].info;
    }
    free(items);
    return map_build(xp) ? EM_OK : EM_ERR_NOMEM;
}

/* Inside Spark, what stays Spark's whatever the rules say; NULL otherwise. */
/* Inside Spark, nodes that belong to Spark whatever Ember supports. */
static bool spark_structural(const em_plan_node *n) {
    if (n->is_input)
        return true;
    switch (n->kind) {
    case EM_NODE_SHUFFLE_QUERY_STAGE:
    case EM_NODE_BROADCAST_QUERY_STAGE:
    case EM_NODE_AQE_SHUFFLE_READ:
    case EM_NODE_ADAPTIVE_SPARK_PLAN:
    case EM_NODE_AQE_SECTION:
    case EM_NODE_SUBQUERY:
    case EM_NODE_REUSED_SUBQUERY:
    case EM_NODE_COLUMNAR_TO_ROW:
    case EM_NODE_ROW_TO_COLUMNAR:
    case EM_NODE_INPUT_ADAPTER:
    case EM_NODE_WHOLE_STAGE_CODEGEN:
        return true;
    default:
        return false;
    }
}

/* The partitioning an exchange's Arguments start with, as printed. */
static const char *exchange_partitioning(const em_plan_node *n) {
    const em_plan_field *f = em_plan_node_field(n, EM_FIELD_ARGUMENTS);
    const em_expr *p = f && f->n_exprs > 0 ? f->exprs[0] : NULL;
    if (!p)
        return "";
    if (p->kind == EM_EXPR_CALL && p->name)
        return p->name;
    return (p->kind == EM_EXPR_LITERAL || p->kind == EM_EXPR_RAW) && p->text ? p->text : "";
}

static const char *spark_keeps(const em_plan_node *n) {
    if (n->is_input)
        return "it is an input of an Ember fragment (its rows come from Spark)";
    switch (n->kind) {
    case EM_NODE_EXCHANGE: {
        /* Ember writes the map side of hash and single-partition shuffles
         * into Spark's shuffle; a range partitioning's bounds come from
         * Spark's sampling of its input, and round robin sorts it first */
        const char *p = exchange_partitioning(n);
        if (!strcmp(p, "hashpartitioning") || !strcmp(p, "SinglePartition"))
            return NULL;
        return "only hash and single-partition shuffles are written natively";
    }
    case EM_NODE_BROADCAST_EXCHANGE:
        /* a hash join's broadcast: Ember collects its blocks, and a Spark
         * join reading it gets a HashedRelation made from them on demand;
         * a nested-loop join's array of rows stays Spark's */
        if (!strcmp(exchange_partitioning(n), "HashedRelationBroadcastMode"))
            return NULL;
        return "only hash joins' broadcasts are collected natively";
    case EM_NODE_REUSED_EXCHANGE:
        return "reused exchanges run in Spark";
    case EM_NODE_SHUFFLE_QUERY_STAGE:
    case EM_NODE_BROADCAST_QUERY_STAGE:
    case EM_NODE_AQE_SHUFFLE_READ:
    case EM_NODE_ADAPTIVE_SPARK_PLAN:
    case EM_NODE_AQE_SECTION:
        return "adaptive query execution's stages and reads are Spark's";
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
    case EM_NODE_COLLECT_LIMIT:
        return "it gathers its input across partitions itself, in Spark";
    /* an Ember node's task reads partition p of every input; these two lay
     * their inputs' partitions out otherwise, over as many partitions as
     * their inputs have in all (a union: one after the other) or pairs of
     * them (a cartesian product: every partition of one input with every
     * partition of the other), which Spark's own nodes do */
    case EM_NODE_UNION:
        return "a union's partitions are its inputs' partitions one after the other";
    case EM_NODE_CARTESIAN_PRODUCT:
        return "a cartesian product's partitions pair every partition of one input with "
               "every partition of the other";
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
        /* the build rows it outputs (unmatched ones of an outer join, a
         * semi/anti join's left side) are decided over the whole stream
         * side: Spark gathers every partition's matches in a job of its
         * own, where Ember's tasks could only share them through one
         * executor's memory (nlj_matches.h), which Spark does not promise */
        if (em_op_bnlj_keeps_build(n))
            return "its build side's rows are output after matching them against every "
                   "partition of the stream side, which Spark's tasks do not see together";
        return NULL;
    case EM_NODE_SUBQUERY:
    case EM_NODE_REUSED_SUBQUERY:
        return "subqueries are planned and run by Spark";
    case EM_NODE_COLUMNAR_TO_ROW:
    case EM_NODE_ROW_TO_COLUMNAR:
    case EM_NODE_INPUT_ADAPTER:
    case EM_NODE_WHOLE_STAGE_CODEGEN:
        return "a Spark transition or code generation wrapper";
    default:
        return NULL;
    }
}

static void tag_nodes(em_exec_plan *xp, ov_settings *s, em_overrides_host host) {
    char buf[160];
    for (int i = 0; i < xp->n; i++) {
        em_node_decision *d = &xp->dec[i];
        const ov_exec_rule *rule = em_ov_exec_rule_for(d->node);
        const char *cls = em_ov_exec_class(d->node, buf, sizeof buf);
        d->class_name = cls == buf ? arena_printf(xp, "%s", buf) : cls;
        d->supported = true;
        const char *kept = host == EM_HOST_SPARK ? spark_keeps(d->node) : NULL;
        if (kept) {
            d->engine = EM_ENGINE_ROW;
            d->supported = false;
            node_reason(xp, i, arena_printf(xp, "%s: %s", cls, kept), cls, NULL);
            continue;
        }
        if (rule->how == OV_EXEC_PASS) {
            d->engine = EM_ENGINE_PASS;
            continue;
        }
        if (rule->how == OV_EXEC_REUSE) {
            d->engine = EM_ENGINE_NATIVE; /* settled once the exchange it reads is */
            continue;
        }
        node_checks(xp, s, i);
        if (rule->how == OV_EXEC_NATIVE) {
            node_exprs(xp, s, i);
            if (s->spark_view)
                node_spark_view(xp, s, i);
        }
        d->supported = xp->info[i].n_reasons == 0;
        d->engine = d->supported ? EM_ENGINE_NATIVE : EM_ENGINE_ROW;
    }
}

em_status em_overrides_apply(const em_plan *plan, const em_conf *conf, em_exec_plan **out,
                             em_error *err) {
    return em_overrides_apply_host(plan, conf, EM_HOST_EMBER, out, err);
}

em_status em_overrides_apply_host(const em_plan *plan, const em_conf *conf,
                                  em_overrides_host host, em_exec_plan **out, em_error *err) {
    *out = NULL;
    if (!plan)
        return EM_FAIL(err, EM_ERR_INVALID, "overrides: no plan");
    ov_settings s;
    EM_TRY(settings_read(plan, conf, &s, err));
    s.spark_view = host == EM_HOST_SPARK;
    em_exec_plan *xp = calloc(1, sizeof *xp);
    if (!xp)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory tagging the plan");
    xp->plan = plan;
    em_status st = build_decisions(xp, plan);
    if (st != EM_OK) {
        em_exec_plan_destroy(xp);
        return EM_FAIL(err, st, "out of memory tagging the plan");
    }
    tag_nodes(xp, &s, host);
    if (!s.enabled)
        for (int i = 0; i < xp->n; i++) {
            em_node_decision *d = &xp->dec[i];
            if (d->engine == EM_ENGINE_PASS)
                continue;
            d->engine = EM_ENGINE_ROW;
            node_reason(xp, i,
                        "native execution is disabled: set spark.ember.sql.enabled=true to "
                        "enable it",
                        d->class_name, "spark.ember.sql.enabled");
        }
    if (host == EM_HOST_SPARK)
        spark_exchanges(xp);
    fix_exchange_overhead(xp, em_plan_root(plan));
    for (int q = 0; q < em_plan_n_subqueries(plan); q++) {
        const em_plan_subquery *sq = em_plan_subquery_at(plan, q);
        if (sq && sq->root)
            fix_exchange_overhead(xp, sq->root);
    }
    for (int i = 0; i < xp->n; i++) {
        em_node_decision *d = &xp->dec[i];
        if (d->node->kind != EM_NODE_REUSED_EXCHANGE)
            continue;
        int k = map_find(xp, d->node->reuses);
        if (k < 0) {
            d->engine = EM_ENGINE_ROW;
            d->supported = false;
            node_reason(xp, i,
                        arena_printf(xp, "ReusedExchangeExec: operator %d is not in the plan",
                                     d->node->reuses_id),
                        d->class_name, NULL);
        } else {
            d->engine = xp->dec[k].engine == EM_ENGINE_PASS ? EM_ENGINE_NATIVE : xp->dec[k].engine;
            d->supported = xp->dec[k].supported;
            if (d->engine == EM_ENGINE_ROW)
                node_reason(xp, i,
                            arena_printf(xp, "it reads %s (%d), which runs on rows",
                                         d->node->reuses->name ? d->node->reuses->name : "?",
                                         d->node->reuses->id),
                            d->class_name, NULL);
        }
    }
    for (int i = 0; i < xp->n; i++) {
        em_node_decision *d = &xp->dec[i];
        if (d->engine == EM_ENGINE_PASS)
            continue;
        int pi = map_find(xp, eff_parent(xp, i));
        d->transition_above = pi >= 0 && xp->dec[pi].engine != d->engine;
    }
    if (s.lore_tag) {
        int next = s.lore_id_base;
        lore_tag(xp, em_plan_exec_root(plan), &next);
        for (int q = 0; q < em_plan_n_subqueries(plan); q++) {
            const em_plan_subquery *sq = em_plan_subquery_at(plan, q);
            if (sq && sq->root)
                lore_tag(xp, sq->root, &next);
        }
    }
    if (s.status != EM_OK) {
        em_exec_plan_destroy(xp);
        return s.status;
    }
    if (xp->failed) {
        em_exec_plan_destroy(xp);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory tagging the plan");
    }
    *out = xp;
    return EM_OK;
}

void em_exec_plan_destroy(em_exec_plan *xp) {
    if (!xp)
        return;
    for (int i = 0; xp->info && i < xp->n; i++)
        free(xp->info[i].reasons);
    free(xp->info);
    free(xp->dec);
    free(xp->map_keys);
    free(xp->map_vals);
    while (xp->chunks) {
        ov_chunk *c = xp->chunks;
        xp->chunks = c->next;
        free(c);
    }
    free(xp);
}

const em_plan *em_exec_plan_source(const em_exec_plan *xp) { return xp ? xp->plan : NULL; }

const em_node_decision *em_exec_plan_decision(const em_exec_plan *xp, const em_plan_node *node) {
    int i = xp ? map_find(xp, node) : -1;
    return i >= 0 ? &xp->dec[i] : NULL;
}

int em_exec_plan_n_decisions(const em_exec_plan *xp) { return xp ? xp->n : 0; }

const em_node_decision *em_exec_plan_decision_at(const em_exec_plan *xp, int i) {
    return xp && i >= 0 && i < xp->n ? &xp->dec[i] : NULL;
}

/* ------------------------------------------------------------------ switches */

em_status em_overrides_register_confs(em_error *err) {
    for (size_t i = 0; i < em_ov_n_exec_rules(); i++) {
        const ov_exec_rule *r = em_ov_exec_rule_at(i);
        if (r->how == OV_EXEC_NATIVE && r->cls)
            EM_TRY(em_conf_family_register(EM_CONF_FAMILY_EXEC, r->cls, true, r->note, err));
    }
    for (size_t i = 0; i < em_ov_n_expr_rules(); i++) {
        const ov_expr_rule *r = em_ov_expr_rule_at(i);
        if (!r->native || r->switchless)
            continue;
        const char *note = r->incompat || r->incompat_fp
                               ? (r->incompat ? "incompatible: gated by "
                                                "spark.ember.sql.incompatibleOps.enabled"
                                              : "incompatible on floating-point input: gated "
                                                "by spark.ember.sql.incompatibleOps.enabled")
                               : r->note;
        EM_TRY(em_conf_family_register(EM_CONF_FAMILY_EXPRESSION, r->cls, true, note, err));
    }
    return EM_OK;
}

/* ------------------------------------------------------------------ test mode */

/* Whether class_name is in the comma-separated list (entries may be fully
 * qualified: org.apache.spark.sql.execution.SortExec matches SortExec). */
static bool class_listed(const char *list, const char *class_name) {
    size_t cl = strlen(class_name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *e = p;
        while (n && (*e == ' ' || *e == '\t'))
            e++, n--;
        while (n && (e[n - 1] == ' ' || e[n - 1] == '\t'))
            n--;
        const char *dot = memrchr(e, '.', n);
        if (dot) {
            n -= (size_t)(dot + 1 - e);
            e = dot + 1;
        }
        if (n == cl && strncmp(e, class_name, n) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

em_status em_exec_plan_check_test_mode(const em_exec_plan *xp, const em_conf *conf,
                                       em_overrides_host host, em_error *err) {
    bool on = false;
    const char *allowed = NULL;
    EM_TRY(em_conf_get_bool(conf, "spark.ember.sql.test.enabled", &on, err));
    if (!on)
        return EM_OK;
    EM_TRY(em_conf_get_string(conf, "spark.ember.sql.test.allowedNonNative", &allowed, err));
    em_strbuf sb;
    em_strbuf_init(&sb);
    int bad = 0;
    for (int i = 0; i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (!d || d->engine != EM_ENGINE_ROW || class_listed(allowed, d->class_name))
            continue;
        /* inside Spark, the nodes that are Spark's by construction (a
         * fragment's inputs, AQE's stages and reads, subquery roots,
         * transitions) are not fallbacks */
        if (host == EM_HOST_SPARK && spark_structural(d->node))
            continue;
        em_strbuf_appendf(&sb, err, "%s%s (node %d, %s)", bad++ ? "; " : "",
                          d->node->name ? d->node->name : "?", d->node->id, d->class_name);
        for (int r = 0; r < d->n_reasons; r++)
            em_strbuf_appendf(&sb, err, "%s%s", r ? ", " : ": ", d->reasons[r].text);
    }
    em_status s = em_strbuf_status(&sb);
    if (s == EM_OK && bad)
        s = EM_FAIL(err, EM_ERR_UNSUPPORTED,
                    "test mode (spark.ember.sql.test.enabled): %d node%s would run %s, not "
                    "allowed by spark.ember.sql.test.allowedNonNative: %s",
                    bad, bad == 1 ? "" : "s",
                    host == EM_HOST_SPARK ? "in Spark" : "on the row engine", em_strbuf_cstr(&sb));
    em_strbuf_reset(&sb);
    return s;
}

