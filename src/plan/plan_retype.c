/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Retyping a plan (--retype): Spark's optimizer baked the scans' original
 * decimal types into the printed plan, so substituting the files' types for
 * ReadSchema's and inferring again is not enough. This pass rewrites what
 * Spark's rules derived from the original types, the way the same rules
 * derive it from the new ones:
 *
 *   DecimalAggregates  avg(x) over decimal(p,s) with p + 4 <= 15 was planned
 *                      as cast((avg(UnscaledValue(x)) / 10^s) as
 *                      decimal(p+4,s+4)); sum(x) with p + 10 <= 18 as
 *                      MakeDecimal(sum(UnscaledValue(x)), p+10, s). When the
 *                      condition still holds for x's new type, the constants
 *                      are updated; when it no longer does, avg goes back to
 *                      avg(x) (same buffer count: sum and count), its result
 *                      attribute renamed and the cast around it dropped.
 *                      A sum that no longer qualifies goes back to sum(x):
 *                      its partial aggregate gets the second buffer
 *                      (isEmpty, a fresh id above the plan's) after the sum
 *                      buffer in Aggregate Attributes and Results, and every
 *                      list downstream that carries the sum buffer (exchange
 *                      Input, a ReusedExchange's Output by position, the
 *                      final aggregate's Input) carries it too; the final
 *                      MakeDecimal(attr, p, s) becomes the attribute.
 *   DecimalPrecision   3.x's CheckOverflow(promote_precision(cast(a as T)) op
 *   (3.3 printing)     promote_precision(cast(b as T)), DecimalType(R)): T
 *                      and R are recomputed from the operands' new types
 *                      (add/sub promote to the result type, mul/div/rem to
 *                      the wider type; R by the shim's decimal rule).
 *   Comparison         a comparison between decimals casts both sides to the
 *   coercion           wider type; a cast that was exactly that coercion in
 *                      the original typing is recomputed from the new types.
 *
 * Casts are recognized as coercions only when the original typing shows it
 * (em_plan_retype_mark runs on the plan typed as printed), so a user's cast to a
 * decimal keeps its type. A literal operand's original type is taken from
 * its text, or solved from the printed product type (Spark prints the literal
 * folded to the promoted type: 0.2 as 0.2000); it is then printed folded to
 * the new promoted type (1 as 1.00).
 *
 * A final aggregate's result attribute that Spark named by its function's
 * text (`sum(CheckOverflow(...))#27`) is renamed after the rewritten function
 * wherever it appears. Not rewritten: a sum whose partial layout is not
 * Spark's usual one (a merge_sum under distinct aggregates) keeps the bigint
 * sum of unscaled values, with MakeDecimal's precision and scale following the
 * new type.
 *
 * The rewrite then types the plan again and repeats until nothing changes
 * (nested arithmetic settles one level per round).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

/* ------------------------------------------------------------------ helpers */

static bool is_call(const em_expr *e, const char *name) {
    return e && e->kind == EM_EXPR_CALL && strcmp(e->name, name) == 0;
}

static bool is_comparison(em_binop op) {
    return op == EM_OP_EQ || op == EM_OP_NULLSAFE_EQ || op == EM_OP_LT || op == EM_OP_LE ||
           op == EM_OP_GT || op == EM_OP_GE;
}

/* DecimalType.forType: integral types as the decimals that hold them. */
static bool decimal_form(em_type t, em_type *out) {
    switch (t.id) {
    case EM_TYPE_DECIMAL:
        *out = t;
        return true;
    case EM_TYPE_BYTE:
        *out = em_type_decimal(3, 0);
        return true;
    case EM_TYPE_SHORT:
        *out = em_type_decimal(5, 0);
        return true;
    case EM_TYPE_INT:
        *out = em_type_decimal(10, 0);
        return true;
    case EM_TYPE_LONG:
        *out = em_type_decimal(20, 0);
        return true;
    default:
        return false;
    }
}

/* A decimal literal's own type by its digits ("1" -> (1,0), "0.2000" -> (4,4)).
 */
static bool literal_decimal_type(const char *s, em_type *out) {
    if (*s == '-')
        s++;
    int intd = 0, frac = 0;
    bool dot = false, any = false;
    for (; *s; s++) {
        if (*s == '.' && !dot) {
            dot = true;
        } else if (*s >= '0' && *s <= '9') {
            any = true;
            if (dot)
                frac++;
            else if (intd > 0 || *s != '0')
                intd++; /* leading zeros are not digits of the precision */
        } else {
            return false;
        }
    }
    int p = intd + frac > 0 ? intd + frac : 1;
    if (!any || p > EM_DECIMAL_MAX_PRECISION)
        return false;
    *out = em_type_decimal(p, frac);
    return true;
}

static const char *type_text(plan_arena *a, const char *fmt, em_type t) {
    char buf[48];
    int n = snprintf(buf, sizeof buf, fmt, t.precision, t.scale);
    return em_plan_arena_strndup(a, buf, n > 0 ? (size_t)n : 0);
}

/* Sets a CAST/TYPE node's printed type; true when it changed. */
static bool set_printed_type(plan_arena *a, em_expr *e, em_type t) {
    if (e->cast_type_known && em_type_equal(e->cast_type, t))
        return false;
    const char *txt =
        type_text(a, e->kind == EM_EXPR_TYPE ? "DecimalType(%d,%d)" : "decimal(%d,%d)", t);
    if (!txt)
        return false;
    e->text = txt;
    e->cast_type = t;
    e->cast_type_known = true;
    return true;
}

/* Visits every expression slot of the plan (node fields and subquery
 * expressions). */
typedef bool (*slot_fn)(em_plan *plan, em_expr **slot, void *ctx);

static bool walk_expr(em_plan *plan, em_expr **slot, slot_fn fn, void *ctx) {
    em_expr *e = *slot;
    if (!e)
        return false;
    bool changed = false;
    for (int i = 0; i < e->n_args; i++)
        changed |= walk_expr(plan, &e->args[i], fn, ctx);
    changed |= fn(plan, slot, ctx);
    return changed;
}

static bool walk_plan(em_plan *plan, slot_fn fn, void *ctx) {
    bool changed = false;
    for (int id = 1; id <= plan->max_id; id++) {
        em_plan_node *node = plan->by_id[id];
        for (int f = 0; node && f < node->n_fields; f++) {
            em_plan_field *fl = &node->fields[f];
            if (fl->kind == EM_FIELD_PUSHED_FILTERS || fl->kind == EM_FIELD_DATA_FILTERS ||
                fl->kind == EM_FIELD_PARTITION_FILTERS)
                continue;
            for (int i = 0; i < fl->n_exprs; i++)
                changed |= walk_expr(plan, &fl->exprs[i], fn, ctx);
        }
    }
    for (int i = 0; i < plan->n_subqueries; i++)
        changed |= walk_expr(plan, &plan->subqueries[i].expr, fn, ctx);
    return changed;
}

/* ------------------------------------------------------------------ marks */

struct plan_retype_marks {
    const em_expr **casts; /* comparison coercion casts */
    int n_casts, cap_casts;
    const em_expr **lits; /* literal operands of 3.x products, with their solved types */
    em_type *lit_types;
    int n_lits, cap_lits;
    int64_t *named; /* final aggregates' result attributes named by their function's text */
    int n_named, cap_named;
    bool failed;
};

static bool marked_cast(const plan_retype_marks *m, const em_expr *e) {
    for (int i = 0; m && i < m->n_casts; i++)
        if (m->casts[i] == e)
            return true;
    return false;
}

static bool solved_literal(const plan_retype_marks *m, const em_expr *e, em_type *out) {
    for (int i = 0; m && i < m->n_lits; i++)
        if (m->lits[i] == e) {
            *out = m->lit_types[i];
            return true;
        }
    return false;
}

static void mark_cast(plan_retype_marks *m, const em_expr *e) {
    if (marked_cast(m, e))
        return;
    if (m->n_casts == m->cap_casts) {
        int cap = m->cap_casts ? m->cap_casts * 2 : 16;
        const em_expr **c = realloc(m->casts, (size_t)cap * sizeof *c);
        if (!c) {
            m->failed = true;
            return;
        }
        m->casts = c;
        m->cap_casts = cap;
    }
    m->casts[m->n_casts++] = e;
}

static void mark_literal(plan_retype_marks *m, const em_expr *e, em_type t) {
    if (m->n_lits == m->cap_lits) {
        int cap = m->cap_lits ? m->cap_lits * 2 : 16;
        const em_expr **l = realloc(m->lits, (size_t)cap * sizeof *l);
        if (l)
            m->lits = l;
        em_type *ts = l ? realloc(m->lit_types, (size_t)cap * sizeof *ts) : NULL;
        if (!l || !ts) {
            m->failed = true;
            return;
        }
        m->lit_types = ts;
        m->cap_lits = cap;
    }
    m->lits[m->n_lits] = e;
    m->lit_types[m->n_lits++] = t;
}

/* The operand under a coercion cast (when the cast is one), else the operand.
 */
static const em_expr *strip_cast(const plan_retype_marks *m, const em_expr *e) {
    return e->kind == EM_EXPR_CAST && marked_cast(m, e) ? e->args[0] : e;
}

/* Operand as DecimalPrecision saw it: under promote_precision, under its cast.
 */
typedef struct operand {
    em_expr *pp;   /* promote_precision(...) call, or NULL */
    em_expr *cast; /* the cast inside it, or NULL */
    em_expr *x;    /* the operand proper */
} operand;

static operand split_operand(em_expr *o) {
    operand r = {NULL, NULL, o};
    if (is_call(o, "promote_precision") && o->n_args == 1) {
        r.pp = o;
        r.x = o->args[0];
        em_type d;
        /* only decimals (and integers) are promoted: a cast from anything else,
         * such as DecimalAggregates' cast of a double average, is the operand
         * itself */
        if (r.x->kind == EM_EXPR_CAST && r.x->cast_type_known &&
            r.x->cast_type.id == EM_TYPE_DECIMAL && r.x->args[0]->type_known &&
            decimal_form(r.x->args[0]->type, &d)) {
            r.cast = r.x;
            r.x = r.x->args[0];
        }
    }
    return r;
}

static bool mark_slot(em_plan *plan, em_expr **slot, void *ctx) {
    plan_retype_marks *m = ctx;
    em_expr *e = *slot;
    (void)plan;
    if (e->kind == EM_EXPR_BINARY && is_comparison(e->op)) {
        for (int side = 0; side < 2; side++) {
            const em_expr *c = e->args[side], *o = e->args[1 - side];
            em_type dc, dother;
            if (c->kind != EM_EXPR_CAST || !c->cast_type_known ||
                c->cast_type.id != EM_TYPE_DECIMAL || !c->args[0]->type_known ||
                !decimal_form(c->args[0]->type, &dc))
                continue;
            const em_expr *os = o->kind == EM_EXPR_CAST && o->args[0]->type_known ? o->args[0] : o;
            if (!os->type_known || os->kind == EM_EXPR_LITERAL || !decimal_form(os->type, &dother))
                continue;
            if (em_type_equal(em_plan_wider_decimal(dc, dother), c->cast_type))
                mark_cast(m, c);
        }
    }
    /* 3.x arithmetic prints a literal operand folded to the promoted type (0.2 as
     * 0.2000): its own type is the text's, or for a product solved from the
     * printed result type (p1 + p2 + 1, s1 + s2) when that was not adjusted. */
    if (is_call(e, "CheckOverflow") && e->n_args >= 2 && e->args[0]->kind == EM_EXPR_BINARY &&
        e->args[1]->cast_type_known) {
        em_type r = e->args[1]->cast_type;
        for (int side = 0; side < 2; side++) {
            const em_expr *lit = e->args[0]->args[side];
            em_type own, d;
            if (lit->kind != EM_EXPR_LITERAL || !literal_decimal_type(lit->text, &own))
                continue;
            operand o = split_operand(e->args[0]->args[1 - side]);
            if (e->args[0]->op == EM_OP_MUL && r.precision < EM_DECIMAL_MAX_PRECISION &&
                o.x->type_known && decimal_form(o.x->type, &d)) {
                int p = r.precision - d.precision - 1, s = r.scale - d.scale;
                if (p >= 1 && s >= 0 && s <= p)
                    own = em_type_decimal(p, s);
            }
            mark_literal(m, lit, own);
        }
    }
    return false;
}

/* A final aggregate's Functions and Aggregate Attributes, paired one to one; NULL otherwise. */
static const em_plan_field *final_functions(const em_plan_node *n, const em_plan_field **attrs) {
    const em_plan_field *fns = n ? em_plan_node_field(n, EM_FIELD_FUNCTIONS) : NULL;
    *attrs = n ? em_plan_node_field(n, EM_FIELD_AGG_ATTRS) : NULL;
    if (!fns || !*attrs || fns->n_exprs != (*attrs)->n_exprs)
        return NULL;
    for (int i = 0; i < fns->n_exprs; i++)
        if (fns->exprs[i]->kind != EM_EXPR_AGG || fns->exprs[i]->mode != EM_AGG_FINAL ||
            (*attrs)->exprs[i]->kind != EM_EXPR_ATTR)
            return NULL;
    return fns;
}

static char *print_to_arena(em_plan *plan, const em_expr *e) {
    plan_buf b = {0};
    em_plan_print_expr(&b, e, plan->shim);
    char *s = b.data && !b.failed ? em_plan_arena_strndup(&plan->arena, b.data, b.len) : NULL;
    free(b.data);
    return s;
}

/* Aggregate results Spark names by the function's text ("sum(CheckOverflow(...))#13"):
 * renamed after the rewrite, as Spark would name them. */
static void mark_named_results(em_plan *plan, plan_retype_marks *m) {
    for (int id = 1; id <= plan->max_id; id++) {
        const em_plan_field *attrs;
        const em_plan_field *fns = final_functions(plan->by_id[id], &attrs);
        for (int i = 0; fns && i < fns->n_exprs; i++) {
            const char *txt = print_to_arena(plan, fns->exprs[i]);
            if (!txt || strcmp(txt, attrs->exprs[i]->name) != 0)
                continue;
            if (m->n_named == m->cap_named) {
                int cap = m->cap_named ? m->cap_named * 2 : 16;
                int64_t *n = realloc(m->named, (size_t)cap * sizeof *n);
                if (!n) {
                    m->failed = true;
                    return;
                }
                m->named = n;
                m->cap_named = cap;
            }
            m->named[m->n_named++] = attrs->exprs[i]->id;
        }
    }
}

em_status em_plan_retype_mark(em_plan *plan, plan_retype_marks **out) {
    plan_retype_marks *m = calloc(1, sizeof *m);
    *out = m;
    if (!m)
        return EM_ERR_NOMEM;
    walk_plan(plan, mark_slot, m);
    mark_named_results(plan, m);
    return m->failed ? EM_ERR_NOMEM : EM_OK;
}

void em_plan_retype_marks_free(plan_retype_marks *m) {
    if (!m)
        return;
    free(m->casts);
    free(m->lits);
    free(m->lit_types);
    free(m->named);
    free(m);
}

/* ------------------------------------------------------------------
 * DecimalAggregates */

#define MAX_LONG_DIGITS 18
#define MAX_DOUBLE_DIGITS 15

typedef struct agg_fix {
    int64_t id;       /* the final aggregate's result attribute */
    bool sum;         /* sum (MakeDecimal around it) rather than avg (cast of a division) */
    bool unwrap;      /* back to the plain aggregate: drop what wrapped the attribute */
    const char *name; /* its new printed name */
    const char *divisor;
    em_type cast_to; /* avg: the cast's type; sum: MakeDecimal's precision and scale */
} agg_fix;

/* A buffer attribute added to a list: after the attribute `after_id`, wherever it is. */
typedef struct buf_insert {
    int64_t after_id;
    const em_expr *attr;
} buf_insert;

typedef struct agg_fixes {
    agg_fix *items;
    int n, cap;
    buf_insert *ins;
    int n_ins, cap_ins;
    int64_t next_id; /* fresh expression ids, above every id in the plan */
    bool failed;
} agg_fixes;

static const agg_fix *find_fix(const agg_fixes *fx, int64_t id) {
    for (int i = 0; i < fx->n; i++)
        if (fx->items[i].id == id)
            return &fx->items[i];
    return NULL;
}

/* Java's Double.toString of 10^s (Literal(math.pow(10.0, s), DoubleType)). */
static void pow10_text(int s, char *buf, size_t cap) {
    if (s < 7) {
        size_t k = 0;
        buf[k++] = '1';
        for (int i = 0; i < s && k + 3 < cap; i++)
            buf[k++] = '0';
        buf[k++] = '.';
        buf[k++] = '0';
        buf[k] = '\0';
    } else {
        snprintf(buf, cap, "1.0E%d", s);
    }
}

static bool unscaled_arg(const em_expr *f, em_type *t) {
    if (f->kind != EM_EXPR_AGG || f->n_args != 1 || !is_call(f->args[0], "UnscaledValue") ||
        f->args[0]->n_args != 1)
        return false;
    const em_expr *x = f->args[0]->args[0];
    if (!x->type_known || x->type.id != EM_TYPE_DECIMAL)
        return false;
    *t = x->type;
    return true;
}

static void add_fix(agg_fixes *fx, agg_fix f) {
    if (find_fix(fx, f.id))
        return;
    if (fx->n == fx->cap) {
        int cap = fx->cap ? fx->cap * 2 : 8;
        agg_fix *n = realloc(fx->items, (size_t)cap * sizeof *n);
        if (!n) {
            fx->failed = true;
            return;
        }
        fx->items = n;
        fx->cap = cap;
    }
    fx->items[fx->n++] = f;
}

static void add_insert(agg_fixes *fx, int64_t after_id, const em_expr *attr) {
    if (fx->n_ins == fx->cap_ins) {
        int cap = fx->cap_ins ? fx->cap_ins * 2 : 8;
        buf_insert *n = realloc(fx->ins, (size_t)cap * sizeof *n);
        if (!n) {
            fx->failed = true;
            return;
        }
        fx->ins = n;
        fx->cap_ins = cap;
    }
    fx->ins[fx->n_ins++] = (buf_insert){after_id, attr};
}

static void max_id_of(const em_expr *e, int64_t *max) {
    if ((e->kind == EM_EXPR_ATTR || e->kind == EM_EXPR_ALIAS) && e->id > *max)
        *max = e->id;
    for (int i = 0; i < e->n_args; i++)
        max_id_of(e->args[i], max);
}

static int64_t plan_max_expr_id(const em_plan *plan) {
    int64_t max = 0;
    for (int id = 1; id <= plan->max_id; id++) {
        const em_plan_node *n = plan->by_id[id];
        for (int f = 0; n && f < n->n_fields; f++)
            for (int i = 0; i < n->fields[f].n_exprs; i++)
                if (n->fields[f].exprs[i])
                    max_id_of(n->fields[f].exprs[i], &max);
    }
    return max;
}

/* A fresh boolean attribute isEmpty#N (Sum's second buffer over decimals). */
static em_expr *new_is_empty(em_plan *plan, agg_fixes *fx) {
    em_expr *a = em_plan_arena_alloc(&plan->arena, sizeof *a);
    if (!a) {
        fx->failed = true;
        return NULL;
    }
    memset(a, 0, sizeof *a);
    a->kind = EM_EXPR_ATTR;
    a->name = "isEmpty";
    a->id = fx->next_id++;
    return a;
}

/* Inserts item at position at of a list field (a new arena array). */
static bool list_insert(em_plan *plan, em_plan_field *fl, int at, em_expr *item) {
    em_expr **n = em_plan_arena_alloc(&plan->arena, (size_t)(fl->n_exprs + 1) * sizeof *n);
    if (!n || at < 0 || at > fl->n_exprs)
        return false;
    for (int i = 0, k = 0; i <= fl->n_exprs; i++)
        n[i] = i == at ? item : fl->exprs[k++];
    fl->exprs = n;
    fl->n_exprs++;
    return true;
}

/*
 * partial_sum(UnscaledValue(x)) has one bigint buffer; partial_sum(x) over a decimal has
 * two (sum, isEmpty). The new isEmpty goes after the sum buffer in Aggregate Attributes and
 * Results; the lists downstream (exchanges, the final aggregate's Input) follow later
 * (propagate_inserts). False when the layout is not the one Spark prints (then the
 * function is left as it is).
 */
static bool widen_partial_sum(em_plan *plan, em_plan_node *node, int fn_index, agg_fixes *fx,
                              bool dry_run) {
    em_plan_field *fns = (em_plan_field *)em_plan_node_field(node, EM_FIELD_FUNCTIONS);
    em_plan_field *attrs = (em_plan_field *)em_plan_node_field(node, EM_FIELD_AGG_ATTRS);
    em_plan_field *results = (em_plan_field *)em_plan_node_field(node, EM_FIELD_RESULTS);
    const em_plan_field *keys = em_plan_node_field(node, EM_FIELD_KEYS);
    if (!fns || !attrs || !results)
        return false;
    int k = 0;
    for (int i = 0; i < fn_index; i++) {
        em_type buf[3];
        int nb = em_plan_agg_buffer_types(fns->exprs[i], buf, 3);
        if (nb == 0)
            return false;
        k += nb;
    }
    int r = (keys ? keys->n_exprs : 0) + k;
    if (k >= attrs->n_exprs || r >= results->n_exprs || attrs->exprs[k]->kind != EM_EXPR_ATTR ||
        results->exprs[r]->kind != EM_EXPR_ATTR)
        return false;
    if (dry_run)
        return true;
    em_expr *a = new_is_empty(plan, fx), *b = new_is_empty(plan, fx);
    if (!a || !b || !list_insert(plan, attrs, k + 1, a) || !list_insert(plan, results, r + 1, b))
        return false;
    add_insert(fx, results->exprs[r]->id, b);
    return true;
}

/* Whether every partial sum(UnscaledValue(x)) that no longer qualifies can take the second
 * buffer (a merge-mode one, under distinct aggregates, cannot: then none is widened, so
 * partial, merge and final stay consistent). */
static bool sums_widenable(em_plan *plan, agg_fixes *fx) {
    for (int id = 1; id <= plan->max_id; id++) {
        em_plan_node *node = plan->by_id[id];
        const em_plan_field *fns = node ? em_plan_node_field(node, EM_FIELD_FUNCTIONS) : NULL;
        for (int i = 0; fns && i < fns->n_exprs; i++) {
            const em_expr *f = fns->exprs[i];
            em_type t;
            if (!unscaled_arg(f, &t) || strcmp(f->name, "sum") != 0 ||
                t.precision + 10 <= MAX_LONG_DIGITS || f->mode == EM_AGG_FINAL)
                continue;
            if (f->mode != EM_AGG_PARTIAL || !widen_partial_sum(plan, node, i, fx, true))
                return false;
        }
    }
    return true;
}

/* Rewrites the aggregate functions themselves; records the final result attributes. */
static bool rewrite_aggregates(em_plan *plan, agg_fixes *fx) {
    bool changed = false, partial_kept = !sums_widenable(plan, fx);
    /* partial aggregates first: a final sum goes back to sum(x) only when every partial
     * one could take the second buffer */
    for (int pass = 0; pass < 2; pass++)
        for (int id = 1; id <= plan->max_id; id++) {
            em_plan_node *node = plan->by_id[id];
            if (!node)
                continue;
            em_plan_field *fns = (em_plan_field *)em_plan_node_field(node, EM_FIELD_FUNCTIONS);
            const em_plan_field *attrs = em_plan_node_field(node, EM_FIELD_AGG_ATTRS);
            for (int i = 0; fns && i < fns->n_exprs; i++) {
                em_expr *f = fns->exprs[i];
                em_type t;
                if (!unscaled_arg(f, &t))
                    continue;
                bool final = f->mode == EM_AGG_FINAL;
                if (final != (pass == 1))
                    continue;
                const em_expr *attr =
                    final && attrs && attrs->n_exprs == fns->n_exprs ? attrs->exprs[i] : NULL;
                agg_fix fix = {.id = attr ? attr->id : -1};
                if (strcmp(f->name, "avg") == 0) {
                    if (t.precision + 4 <= MAX_DOUBLE_DIGITS) {
                        char buf[32];
                        pow10_text(t.scale, buf, sizeof buf);
                        fix.divisor = em_plan_arena_strndup(&plan->arena, buf, strlen(buf));
                        fix.cast_to = em_type_decimal(t.precision + 4, t.scale + 4);
                    } else {
                        fix.unwrap = true; /* same buffers: sum and count */
                    }
                } else if (strcmp(f->name, "sum") == 0) {
                    fix.sum = true;
                    if (t.precision + 10 <= MAX_LONG_DIGITS) {
                        fix.cast_to = em_type_decimal(t.precision + 10, t.scale);
                    } else if (f->mode == EM_AGG_PARTIAL) {
                        fix.unwrap = !partial_kept && widen_partial_sum(plan, node, i, fx, false);
                    } else if (final && !partial_kept) {
                        fix.unwrap = true;
                    } else {
                        /* the bigint sum of unscaled values stays (exact below 10^18),
                         * read back at the new scale */
                        int p = t.precision + 10;
                        fix.cast_to = em_type_decimal(
                            p < EM_DECIMAL_MAX_PRECISION ? p : EM_DECIMAL_MAX_PRECISION, t.scale);
                    }
                } else {
                    continue;
                }
                if (fix.unwrap) {
                    f->args[0] = f->args[0]->args[0];
                    changed = true;
                }
                if (attr) {
                    fix.name = print_to_arena(plan, f);
                    if (!fix.name)
                        fx->failed = true;
                    add_fix(fx, fix);
                }
            }
        }
    return changed;
}

static bool is_list_field(em_field_kind k) { return k == EM_FIELD_INPUT || k == EM_FIELD_OUTPUT; }

/* The list a node's rows are printed by (Output, else Input). */
static em_plan_field *row_list(em_plan_node *n) {
    em_plan_field *f = (em_plan_field *)em_plan_node_field(n, EM_FIELD_OUTPUT);
    return f ? f : (em_plan_field *)em_plan_node_field(n, EM_FIELD_INPUT);
}

/*
 * Carries inserted buffer attributes down the plan: every Input/Output list holding the
 * attribute they follow gets them too; a ReusedExchange's Output (its own ids, by position
 * of the exchange it reuses) gets a fresh attribute at the same position.
 */
static void propagate_inserts(em_plan *plan, agg_fixes *fx) {
    for (int round = 0; round < 8 && fx->n_ins; round++) {
        bool changed = false;
        for (int id = 1; id <= plan->max_id; id++) {
            em_plan_node *n = plan->by_id[id];
            for (int f = 0; n && f < n->n_fields; f++) {
                em_plan_field *fl = &n->fields[f];
                if (!is_list_field(fl->kind))
                    continue;
                for (int i = 0; i < fl->n_exprs; i++)
                    for (int j = 0; j < fx->n_ins; j++) {
                        const buf_insert *bi = &fx->ins[j];
                        if (fl->exprs[i]->kind != EM_EXPR_ATTR || fl->exprs[i]->id != bi->after_id)
                            continue;
                        if (i + 1 < fl->n_exprs && fl->exprs[i + 1]->id == bi->attr->id)
                            continue;
                        em_expr *copy = em_plan_arena_alloc(&plan->arena, sizeof *copy);
                        if (!copy || !list_insert(plan, fl, i + 1, copy)) {
                            fx->failed = true;
                            return;
                        }
                        *copy = *bi->attr;
                        changed = true;
                    }
            }
        }
        for (int id = 1; id <= plan->max_id; id++) {
            em_plan_node *n = plan->by_id[id];
            if (!n || n->kind != EM_NODE_REUSED_EXCHANGE || !n->reuses)
                continue;
            em_plan_field *own = row_list(n);
            em_plan_field *src = row_list((em_plan_node *)n->reuses);
            if (!own || !src)
                continue;
            for (int i = 1; i < src->n_exprs && own->n_exprs < src->n_exprs; i++) {
                bool inserted = false;
                for (int j = 0; j < fx->n_ins && !inserted; j++)
                    inserted = src->exprs[i]->id == fx->ins[j].attr->id;
                if (!inserted || i > own->n_exprs)
                    continue;
                em_expr *a = new_is_empty(plan, fx);
                if (!a || !list_insert(plan, own, i, a)) {
                    fx->failed = true;
                    return;
                }
                add_insert(fx, own->exprs[i - 1]->id, a);
                changed = true;
            }
        }
        if (!changed)
            break;
    }
}

static bool fix_agg_slot(em_plan *plan, em_expr **slot, void *ctx) {
    const agg_fixes *fx = ctx;
    em_expr *e = *slot;
    /* MakeDecimal(attr#K, p + 10, s) */
    if (is_call(e, "MakeDecimal") && e->n_args == 3 && e->args[0]->kind == EM_EXPR_ATTR &&
        e->args[1]->kind == EM_EXPR_LITERAL && e->args[2]->kind == EM_EXPR_LITERAL) {
        const agg_fix *f = find_fix(fx, e->args[0]->id);
        if (!f || !f->sum)
            return false;
        if (f->unwrap) {
            *slot = e->args[0];
            return true;
        }
        char p[8], s[8];
        snprintf(p, sizeof p, "%d", f->cast_to.precision);
        snprintf(s, sizeof s, "%d", f->cast_to.scale);
        if (strcmp(e->args[1]->text, p) == 0 && strcmp(e->args[2]->text, s) == 0)
            return false;
        e->args[1]->text = em_plan_arena_strndup(&plan->arena, p, strlen(p));
        e->args[2]->text = em_plan_arena_strndup(&plan->arena, s, strlen(s));
        return e->args[1]->text && e->args[2]->text;
    }
    /* cast((attr#K / 10^s) as decimal(p+4,s+4)) */
    if (e->kind != EM_EXPR_CAST || e->args[0]->kind != EM_EXPR_BINARY ||
        e->args[0]->op != EM_OP_DIV || e->args[0]->args[0]->kind != EM_EXPR_ATTR ||
        e->args[0]->args[1]->kind != EM_EXPR_LITERAL)
        return false;
    const agg_fix *f = find_fix(fx, e->args[0]->args[0]->id);
    if (!f || f->sum)
        return false;
    if (f->unwrap) {
        *slot = e->args[0]->args[0];
        return true;
    }
    bool changed = false;
    em_expr *lit = e->args[0]->args[1];
    if (f->divisor && strcmp(lit->text, f->divisor) != 0) {
        lit->text = f->divisor;
        changed = true;
    }
    if (set_printed_type(&plan->arena, e, f->cast_to))
        changed = true;
    return changed;
}

/* ------------------------------------------------------------------
 * DecimalPrecision */

typedef struct dp_ctx {
    const plan_retype_marks *marks;
    const em_shim *shim;
} dp_ctx;

static bool operand_type(const dp_ctx *cx, const operand *o, em_type *out) {
    if (o->x->kind == EM_EXPR_LITERAL) {
        if (solved_literal(cx->marks, o->x, out))
            return true;
        return literal_decimal_type(o->x->text, out);
    }
    return o->x->type_known && decimal_form(o->x->type, out);
}

/* Prints a literal operand folded to the promoted type's scale ("1" -> "1.00"),
 * as constant folding of the promotion cast does; digits that would be lost
 * stay. */
static bool refold_literal(em_plan *plan, em_expr *lit, em_type p) {
    em_type own;
    if (!literal_decimal_type(lit->text, &own) || own.scale == p.scale)
        return false;
    const char *t = lit->text, *dot = strchr(t, '.');
    size_t int_len = dot ? (size_t)(dot - t) : strlen(t);
    const char *frac = dot ? dot + 1 : "";
    size_t nf = strlen(frac);
    for (size_t i = (size_t)p.scale; i < nf; i++)
        if (frac[i] != '0')
            return false;
    size_t cap = int_len + (size_t)p.scale + 2;
    char *out = em_plan_arena_alloc(&plan->arena, cap + 1);
    if (!out)
        return false;
    memcpy(out, t, int_len);
    size_t k = int_len;
    if (p.scale > 0) {
        out[k++] = '.';
        for (int i = 0; i < p.scale; i++)
            out[k++] = (size_t)i < nf ? frac[i] : '0';
    }
    out[k] = '\0';
    lit->text = out;
    return true;
}

/* Points the operand at type p: no cast when it already has it. */
static bool promote_to(em_plan *plan, operand *o, em_type p) {
    if (o->x->kind == EM_EXPR_LITERAL)
        return refold_literal(plan, o->x, p);
    if (!o->pp)
        return false;
    bool same = o->x->type_known && em_type_equal(o->x->type, p);
    if (same) {
        if (!o->cast)
            return false;
        o->pp->args[0] = o->x; /* SimplifyCasts drops a cast to the type it has */
        return true;
    }
    if (o->cast)
        return set_printed_type(&plan->arena, o->cast, p);
    em_expr *c = em_plan_arena_alloc(&plan->arena, sizeof *c);
    em_expr **args = em_plan_arena_alloc(&plan->arena, sizeof *args);
    if (!c || !args)
        return false;
    memset(c, 0, sizeof *c);
    c->kind = EM_EXPR_CAST;
    c->n_args = 1;
    c->args = args;
    args[0] = o->x;
    c->id = -1;
    set_printed_type(&plan->arena, c, p);
    o->pp->args[0] = c;
    return true;
}

static bool fix_precision_slot(em_plan *plan, em_expr **slot, void *ctx) {
    const dp_ctx *cx = ctx;
    em_expr *e = *slot;
    bool changed = false;
    if (is_call(e, "CheckOverflow") && e->n_args >= 2 && e->args[0]->kind == EM_EXPR_BINARY &&
        e->args[1]->kind == EM_EXPR_TYPE) {
        em_expr *bin = e->args[0];
        operand l = split_operand(bin->args[0]), r = split_operand(bin->args[1]);
        em_type dl, dr, res;
        if (!operand_type(cx, &l, &dl) || !operand_type(cx, &r, &dr) ||
            !em_shim_decimal_rule(bin->op, dl, dr, cx->shim->decimal_allow_precision_loss, &res))
            return false;
        em_type prom =
            bin->op == EM_OP_ADD || bin->op == EM_OP_SUB ? res : em_plan_wider_decimal(dl, dr);
        changed |= set_printed_type(&plan->arena, e->args[1], res);
        changed |= promote_to(plan, &l, prom);
        changed |= promote_to(plan, &r, prom);
        return changed;
    }
    if (e->kind == EM_EXPR_BINARY && is_comparison(e->op)) {
        em_expr *cl = e->args[0], *cr = e->args[1];
        bool ml = cl->kind == EM_EXPR_CAST && marked_cast(cx->marks, cl);
        bool mr = cr->kind == EM_EXPR_CAST && marked_cast(cx->marks, cr);
        if (!ml && !mr)
            return false;
        const em_expr *xl = strip_cast(cx->marks, cl), *xr = strip_cast(cx->marks, cr);
        em_type dl, dr;
        if (!xl->type_known || !xr->type_known || !decimal_form(xl->type, &dl) ||
            !decimal_form(xr->type, &dr))
            return false;
        em_type w = em_plan_wider_decimal(dl, dr);
        if (ml)
            changed |= set_printed_type(&plan->arena, cl, w);
        if (mr)
            changed |= set_printed_type(&plan->arena, cr, w);
    }
    return changed;
}

/* ------------------------------------------------------------------ driver */

static bool rename_slot(em_plan *plan, em_expr **slot, void *ctx) {
    const agg_fixes *names = ctx;
    (void)plan;
    em_expr *e = *slot;
    const agg_fix *f = e->kind == EM_EXPR_ATTR ? find_fix(names, e->id) : NULL;
    if (!f || strcmp(e->name, f->name) == 0)
        return false;
    e->name = f->name;
    return true;
}

/* Renames the marked aggregate results after their rewritten functions, everywhere. */
static void rename_results(em_plan *plan, const plan_retype_marks *marks, agg_fixes *fx) {
    agg_fixes names = {0};
    for (int id = 1; marks && id <= plan->max_id; id++) {
        const em_plan_field *attrs;
        const em_plan_field *fns = final_functions(plan->by_id[id], &attrs);
        for (int i = 0; fns && i < fns->n_exprs; i++) {
            bool named = false;
            for (int k = 0; k < marks->n_named && !named; k++)
                named = marks->named[k] == attrs->exprs[i]->id;
            const char *txt = named ? print_to_arena(plan, fns->exprs[i]) : NULL;
            if (txt)
                add_fix(&names, (agg_fix){.id = attrs->exprs[i]->id, .name = txt});
        }
        /* within the node: Spark may give two aggregates the same result id (a view
         * planned twice), and the name is only printed where the aggregate is */
        em_plan_node *node = plan->by_id[id];
        for (int f = 0; names.n && f < node->n_fields; f++)
            for (int i = 0; i < node->fields[f].n_exprs; i++)
                walk_expr(plan, &node->fields[f].exprs[i], rename_slot, &names);
        names.n = 0;
    }

    if (names.failed)
        fx->failed = true;
    free(names.items);
}

em_status em_plan_retype_apply(em_plan *plan, const plan_retype_marks *marks,
                            em_plan_column_type_fn column_type, void *ctx) {
    agg_fixes fx = {.next_id = plan_max_expr_id(plan) + 1};
    bool changed = rewrite_aggregates(plan, &fx);
    propagate_inserts(plan, &fx);
    if (fx.failed) {
        free(fx.items);
        free(fx.ins);
        return EM_ERR_NOMEM;
    }
    if (changed) {
        em_plan_reset_types(plan);
        em_plan_infer(plan, column_type, ctx);
    }
    dp_ctx dp = {.marks = marks, .shim = plan->shim};
    for (int round = 0; round < 16; round++) {
        changed = walk_plan(plan, fix_agg_slot, &fx);
        changed |= walk_plan(plan, fix_precision_slot, &dp);
        if (!changed)
            break;
        em_plan_reset_types(plan);
        em_plan_infer(plan, column_type, ctx);
    }
    rename_results(plan, marks, &fx);
    free(fx.items);
    free(fx.ins);
    return plan->arena.failed || fx.failed ? EM_ERR_NOMEM : EM_OK;
}
