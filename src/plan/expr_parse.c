/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recursive-descent parser for expressions as Spark's toString prints them in
 * EXPLAIN FORMATTED (Catalyst expressions, data-source filters, partitioning,
 * broadcast modes, window specs).
 *
 * Spark's printed form is not a language with a lexical grammar: literals are
 * unquoted (`Sunday   `, `MEDIUM POLISHED`, `%special%requests%`), and an
 * attribute's name is free text ending in `#id` (`sum(l_quantity#1)#39`,
 * `excess discount amount #21`). What makes it parseable is that every
 * operator is either fully parenthesized (`(a + b)`), prefix (`NOT x`,
 * `CASE WHEN ...`, `name(args)`) or one of a few postfix keywords (` IN (`,
 * ` INSET `, ` LIKE `, ` AS `, ` ASC NULLS FIRST`). So the parser works on a
 * cursor over the text with a small context-sensitive lexer (words, `#id`,
 * punctuation, keywords surrounded by spaces) and each operand position knows
 * where it may end: the STOP_* set of its context (a `,` in a list, ` <op> `
 * for the left operand of a binary operator, ` AS ` in an output list, any
 * closing bracket).
 *
 * parse_operand first tries a structured operand (call, parenthesized
 * binary, CASE, subquery, bound reference, bracket list, word). If that does
 * not end at a permitted stop, it backtracks and takes the whole segment up
 * to the next stop as one operand: an attribute when it ends in `#digits`
 * (names with spaces), else a literal (text with spaces). Any structured
 * operand immediately followed by `#digits` is an attribute named by its text
 * (`count(1)#46`), because that is how Spark names aggregate results.
 *
 * Invariants: the printer (plan_print.c) writes every kind back in exactly
 * the form parsed here, so parse-then-print is the identity on Spark's text.
 * Errors are recorded at the furthest position reached (backtracking tries
 * alternatives); recursion is bounded so hostile input cannot exhaust the
 * stack.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/internal.h"

#define EXPR_MAX_DEPTH 200

static em_expr *parse_not(expr_parser *p, int stop);
static em_expr *parse_primary(expr_parser *p, int stop);

void *em_plan_expr_error(expr_parser *p, size_t pos, const char *fmt, ...) {
    if (p->failed && pos < p->err_pos)
        return NULL; /* keep the error that got furthest */
    char msg[EM_ERROR_MSG_CAP / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->failed = true;
    p->err_pos = pos;
    EM_FAIL(&p->error, EM_ERR_PARSE, "%s:%d:%d: %s", p->src, p->line, p->col0 + (int)pos, msg);
    return NULL;
}

/* ------------------------------------------------------------------ lexing helpers */

static bool at(const expr_parser *p, size_t pos, const char *lit) {
    size_t n = strlen(lit);
    return pos + n <= p->n && memcmp(p->s + pos, lit, n) == 0;
}

static bool is_word_char(char c) {
    return c != ' ' && c != '\t' && c != '(' && c != ')' && c != '[' && c != ']' && c != ',' &&
           c != '#' && c != '\n' && c != '\r' && c != '\0';
}

static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$'; }

static bool is_ident(const char *s, size_t n) {
    if (n == 0 || isdigit((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_ident_char(s[i]))
            return false;
    return true;
}

static const struct {
    const char *text; /* with the surrounding spaces */
    em_binop op;
} binops[] = {
    {" AND ", EM_OP_AND}, {" OR ", EM_OP_OR},      {" <=> ", EM_OP_NULLSAFE_EQ},
    {" <= ", EM_OP_LE},   {" >= ", EM_OP_GE},      {" = ", EM_OP_EQ},
    {" < ", EM_OP_LT},    {" > ", EM_OP_GT},       {" + ", EM_OP_ADD},
    {" - ", EM_OP_SUB},   {" * ", EM_OP_MUL},      {" / ", EM_OP_DIV},
    {" % ", EM_OP_REM},   {" div ", EM_OP_INTDIV}, {" & ", EM_OP_BITAND},
    {" | ", EM_OP_BITOR}, {" ^ ", EM_OP_BITXOR},
};

const char *em_binop_symbol(em_binop op) {
    static const char *const symbols[EM_OP_COUNT_] = {
        "+", "-",   "*", "/",  "%", "div", "&",   "|",  "^",
        "=", "<=>", "<", "<=", ">", ">=",  "AND", "OR",
    };
    return op < EM_OP_COUNT_ ? symbols[op] : "?";
}

/* Length of the binary operator (with its spaces) at pos, 0 when none. */
static size_t binop_at(const expr_parser *p, size_t pos, em_binop *op) {
    if (pos >= p->n || p->s[pos] != ' ')
        return 0;
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++) {
        if (at(p, pos, binops[i].text)) {
            if (op)
                *op = binops[i].op;
            return strlen(binops[i].text);
        }
    }
    return 0;
}

static bool sort_at(const expr_parser *p, size_t pos) {
    return at(p, pos, " ASC NULLS FIRST") || at(p, pos, " ASC NULLS LAST") ||
           at(p, pos, " DESC NULLS FIRST") || at(p, pos, " DESC NULLS LAST");
}

/*
 * " IN (" or " IN name#id" (a dynamic pruning subquery) at pos. A literal may
 * contain " IN " (`DELIVER IN PERSON`), so a bare " IN " is not an operator.
 */
static bool in_at(const expr_parser *p, size_t pos) {
    if (at(p, pos, " IN ("))
        return true;
    if (!at(p, pos, " IN "))
        return false;
    size_t i = pos + 4;
    while (i < p->n && is_word_char(p->s[i]))
        i++;
    return i > pos + 4 && i + 1 < p->n && p->s[i] == '#' && isdigit((unsigned char)p->s[i + 1]);
}

/* Whether an operand may end at pos in a context with the given stops. */
static bool at_stop(const expr_parser *p, size_t pos, int stop) {
    if (pos >= p->n)
        return true;
    char c = p->s[pos];
    if (c == ')' || c == ']')
        return true;
    if (c == ',')
        return (stop & STOP_COMMA) != 0 && (!p->spaced_commas || at(p, pos, ", "));
    if (c != ' ')
        return false;
    if ((stop & STOP_BINOP) && binop_at(p, pos, NULL))
        return true;
    if ((stop & STOP_AS) && at(p, pos, " AS "))
        return true;
    if ((stop & STOP_SORT) && sort_at(p, pos))
        return true;
    if ((stop & STOP_POSTFIX) &&
        (in_at(p, pos) || at(p, pos, " INSET ") || at(p, pos, " LIKE ") || at(p, pos, " RLIKE ")))
        return true;
    if ((stop & STOP_CASE) && (at(p, pos, " WHEN ") || at(p, pos, " THEN ") ||
                               at(p, pos, " ELSE ") || at(p, pos, " END")))
        return true;
    if ((stop & STOP_CAST) && at(p, pos, " as "))
        return true;
    if ((stop & STOP_WINDOW) && at(p, pos, " windowspecdefinition("))
        return true;
    return false;
}

/*
 * End of the segment starting at start: the first position at bracket depth 0
 * where the context allows the operand to end. (size_t)-1 after recording an
 * error when a bracket is left open.
 */
static size_t scan_segment(expr_parser *p, size_t start, int stop) {
    int depth = 0;
    size_t open_pos = start;
    for (size_t i = start; i < p->n; i++) {
        char c = p->s[i];
        if (c == '(' || c == '[') {
            if (depth == 0)
                open_pos = i;
            depth++;
        } else if ((c == ')' || c == ']') && depth > 0) {
            depth--;
        } else if (depth == 0 && i > start && at_stop(p, i, stop)) {
            return i;
        } else if (depth == 0 && i == start && (c == ')' || c == ']' || c == ',')) {
            return i;
        }
    }
    if (depth > 0) {
        em_plan_expr_error(p, p->n, "expected '%c' to close '%c' at column %d",
                        p->s[open_pos] == '(' ? ')' : ']', p->s[open_pos], p->col0 + (int)open_pos);
        return (size_t)-1;
    }
    return p->n;
}

/* Offset of a trailing "#digits[L]" in s[0..n), or n when there is none. */
static size_t trailing_id(const char *s, size_t n, int64_t *id, bool *long_suffix) {
    size_t end = n;
    bool l = false;
    if (end > 0 && s[end - 1] == 'L') {
        end--;
        l = true;
    }
    size_t d = end;
    while (d > 0 && isdigit((unsigned char)s[d - 1]))
        d--;
    if (d == end || d == 0 || s[d - 1] != '#' || end - d > 18)
        return n;
    int64_t v = 0;
    for (size_t i = d; i < end; i++)
        v = v * 10 + (s[i] - '0');
    *id = v;
    *long_suffix = l;
    return d - 1;
}

static em_expr *new_expr(expr_parser *p, em_expr_kind kind) {
    em_expr *e = em_plan_arena_alloc(p->arena, sizeof *e);
    if (!e)
        return em_plan_expr_error(p, p->pos, "out of memory");
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->id = -1;
    e->plan_id = -1;
    return e;
}

static const char *dup_text(expr_parser *p, size_t from, size_t to) {
    char *s = em_plan_arena_strndup(p->arena, p->s + from, to - from);
    if (!s)
        em_plan_expr_error(p, from, "out of memory");
    return s;
}

/* A growable list of expressions in the arena (old arrays are abandoned). */
typedef struct expr_list {
    em_expr **items;
    int n;
    int cap;
} expr_list;

static bool list_push(expr_parser *p, expr_list *l, em_expr *e) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        em_expr **items = em_plan_arena_alloc(p->arena, (size_t)cap * sizeof *items);
        if (!items) {
            em_plan_expr_error(p, p->pos, "out of memory");
            return false;
        }
        if (l->n)
            memcpy(items, l->items, (size_t)l->n * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = e;
    return true;
}

/* Parses "#digits[L]" at p->pos into e (ATTR/ALIAS id). */
static bool parse_id_suffix(expr_parser *p, em_expr *e) {
    size_t i = p->pos + 1, start = i;
    int64_t v = 0;
    while (i < p->n && isdigit((unsigned char)p->s[i]) && i - start < 18)
        v = v * 10 + (p->s[i++] - '0');
    if (i == start)
        return false;
    e->id = v;
    if (i < p->n && p->s[i] == 'L' && !(i + 1 < p->n && is_ident_char(p->s[i + 1]))) {
        e->long_suffix = true;
        i++;
    }
    p->pos = i;
    return true;
}

/* ------------------------------------------------------------------ operands */

/* Whether the text at pos starts a form with its own syntax (not a bare word). */
static bool starts_structured(const expr_parser *p, size_t pos) {
    if (pos >= p->n)
        return false;
    char c = p->s[pos];
    if (c == '(' || c == '[')
        return true;
    if (at(p, pos, "CASE WHEN ") || at(p, pos, "Subquery ") || at(p, pos, "ReusedSubquery ") ||
        at(p, pos, "input["))
        return true;
    size_t i = pos;
    while (i < p->n && is_ident_char(p->s[i]))
        i++;
    return i > pos && i < p->n && p->s[i] == '(' && !isdigit((unsigned char)c);
}

/*
 * Operand with backtracking: a structured operand that ends at a permitted
 * stop, else the segment up to the stop as an attribute or a literal.
 */
static em_expr *parse_operand(expr_parser *p, int stop) {
    size_t start = p->pos;
    bool was_failed = p->failed;
    em_expr *e = parse_primary(p, stop);
    if (e && at_stop(p, p->pos, stop))
        return e;
    if (p->arena->failed)
        return NULL;
    /* A structured form that broke inside (an unclosed CASE, a call missing its
     * ')') is an error, not a literal; only a name ending in #id may contain it. */
    bool broken = e == NULL && starts_structured(p, start);
    p->pos = start;
    size_t end = scan_segment(p, start, stop);
    if (end == (size_t)-1)
        return NULL;
    if (end == start)
        return em_plan_expr_error(p, start, "expected an expression");
    int64_t id;
    bool lsuf;
    size_t hash = trailing_id(p->s + start, end - start, &id, &lsuf);
    if (broken && hash >= end - start)
        return NULL;
    if (!was_failed)
        p->failed = false; /* the segment reading replaces the failed attempt */
    if (hash < end - start) {
        e = new_expr(p, EM_EXPR_ATTR);
        if (!e)
            return NULL;
        e->name = dup_text(p, start, start + hash);
        e->id = id;
        e->long_suffix = lsuf;
    } else {
        e = new_expr(p, EM_EXPR_LITERAL);
        if (!e)
            return NULL;
        e->text = dup_text(p, start, end);
    }
    p->pos = end;
    return e;
}

static bool is_agg_name(const char *s, size_t n) {
    static const char *const aggs[] = {
        "sum",
        "avg",
        "count",
        "min",
        "max",
        "first",
        "last",
        "stddev_samp",
        "stddev_pop",
        "stddev",
        "var_samp",
        "var_pop",
        "variance",
        "collect_list",
        "collect_set",
        "corr",
        "covar_pop",
        "covar_samp",
        "skewness",
        "kurtosis",
        "bit_and",
        "bit_or",
        "bit_xor",
        "bool_and",
        "bool_or",
        "every",
        "any",
        "some",
        "count_if",
        "max_by",
        "min_by",
        "mode",
        "median",
        "any_value",
        "percentile",
        "percentile_approx",
        "approx_count_distinct",
        "first_value",
        "last_value",
        "try_sum",
        "try_avg",
        "hll_sketch_agg",
        "listagg",
        "string_agg",
    };
    for (size_t i = 0; i < sizeof aggs / sizeof aggs[0]; i++)
        if (strlen(aggs[i]) == n && memcmp(aggs[i], s, n) == 0)
            return true;
    return false;
}

/* Text of a type up to the ')' or ',' that ends it at depth 0 (types nest () and <>). */
static size_t scan_type_text(const expr_parser *p, size_t pos, bool stop_at_comma) {
    int depth = 0;
    for (size_t i = pos; i < p->n; i++) {
        char c = p->s[i];
        if (c == '(' || c == '<')
            depth++;
        else if ((c == ')' || c == '>') && depth > 0)
            depth--;
        else if (depth == 0 && (c == ')' || c == ']' || (stop_at_comma && c == ',')))
            return i;
    }
    return p->n;
}

/* "cast(" already consumed: child " as " type ")" */
static em_expr *parse_cast(expr_parser *p, size_t open) {
    em_expr *e = new_expr(p, EM_EXPR_CAST);
    if (!e)
        return NULL;
    em_expr *child = em_plan_parse_expr(p, STOP_CAST);
    if (!child)
        return NULL;
    if (!at(p, p->pos, " as "))
        return em_plan_expr_error(p, p->pos, "expected ' as <type>' in cast opened at column %d",
                               p->col0 + (int)open);
    p->pos += 4;
    size_t t0 = p->pos, t1 = scan_type_text(p, t0, false);
    if (t1 >= p->n || p->s[t1] != ')' || t1 == t0)
        return em_plan_expr_error(p, t1, "expected ')' after the type of cast at column %d",
                               p->col0 + (int)open);
    e->text = dup_text(p, t0, t1);
    e->cast_type_known = em_plan_type_from_text(p->s + t0, t1 - t0, &e->cast_type);
    p->pos = t1 + 1;
    e->args = em_plan_arena_alloc(p->arena, sizeof *e->args);
    if (!e->args || !e->text)
        return em_plan_expr_error(p, t0, "out of memory");
    e->args[0] = child;
    e->n_args = 1;
    return e;
}

/* "input[" consumed: ordinal ", " type ", " nullable "]" */
static em_expr *parse_bound_ref(expr_parser *p, size_t open) {
    em_expr *e = new_expr(p, EM_EXPR_BOUND_REF);
    if (!e)
        return NULL;
    size_t i = p->pos;
    int64_t v = 0;
    while (i < p->n && isdigit((unsigned char)p->s[i]) && i - p->pos < 10)
        v = v * 10 + (p->s[i++] - '0');
    if (i == p->pos || !at(p, i, ", "))
        return em_plan_expr_error(p, i, "expected 'input[ordinal, type, nullable]' at column %d",
                               p->col0 + (int)open);
    e->id = v;
    size_t t0 = i + 2, t1 = scan_type_text(p, t0, true);
    if (t1 == t0 || !at(p, t1, ", "))
        return em_plan_expr_error(p, t1, "expected ', nullable]' after the bound reference type");
    e->text = dup_text(p, t0, t1);
    e->cast_type_known = em_plan_type_from_text(p->s + t0, t1 - t0, &e->cast_type);
    i = t1 + 2;
    if (at(p, i, "true]")) {
        e->nullable_flag = true;
        i += 5;
    } else if (at(p, i, "false]")) {
        i += 6;
    } else {
        return em_plan_expr_error(p, i, "expected 'true]' or 'false]' in bound reference");
    }
    p->pos = i;
    return e->text ? e : NULL;
}

/* After "Subquery ": name ", [id=#" digits "]" */
static em_expr *parse_subquery(expr_parser *p, bool reused) {
    em_expr *e = new_expr(p, EM_EXPR_SCALAR_SUBQUERY);
    if (!e)
        return NULL;
    e->reused = reused;
    size_t n0 = p->pos, i = n0;
    while (i < p->n && !at(p, i, ", [id=#") && p->s[i] != ')' && p->s[i] != ']')
        i++;
    if (!at(p, i, ", [id=#") || i == n0)
        return em_plan_expr_error(p, i, "expected ', [id=#N]' after the subquery name");
    e->name = dup_text(p, n0, i);
    bool lsuf;
    int64_t id;
    if (trailing_id(p->s + n0, i - n0, &id, &lsuf) < i - n0)
        e->id = id;
    i += 7;
    size_t d0 = i;
    int64_t v = 0;
    while (i < p->n && isdigit((unsigned char)p->s[i]) && i - d0 < 18)
        v = v * 10 + (p->s[i++] - '0');
    if (i == d0 || i >= p->n || p->s[i] != ']')
        return em_plan_expr_error(p, i, "expected digits and ']' in the subquery's [id=#N]");
    e->plan_id = v;
    p->pos = i + 1;
    return e->name ? e : NULL;
}

/* "[plan_id=N]" or "[id=#N]" at p->pos; NULL (no error) when not one. */
static em_expr *try_plan_id(expr_parser *p) {
    bool legacy;
    size_t i;
    if (at(p, p->pos, "[plan_id=")) {
        legacy = false;
        i = p->pos + 9;
    } else if (at(p, p->pos, "[id=#")) {
        legacy = true;
        i = p->pos + 5;
    } else {
        return NULL;
    }
    size_t d0 = i;
    int64_t v = 0;
    while (i < p->n && isdigit((unsigned char)p->s[i]) && i - d0 < 18)
        v = v * 10 + (p->s[i++] - '0');
    if (i == d0 || i >= p->n || p->s[i] != ']')
        return NULL;
    em_expr *e = new_expr(p, EM_EXPR_PLAN_ID);
    if (!e)
        return NULL;
    e->plan_id = v;
    e->legacy_id_form = legacy;
    if (legacy)
        p->ev->exchange_id_legacy++;
    else
        p->ev->exchange_plan_id++;
    p->pos = i + 1;
    return e;
}

/*
 * Items separated by ", " or "," up to the closing character, which is
 * consumed; p->pos is just after the opener (at offset `open`). *compact
 * tells whether every separator was "," (Scala case classes, IN lists).
 */
/*
 * A call argument that is empty where it starts: a string literal Spark
 * printed bare that is empty or begins with a comma (coalesce(x, ) for '',
 * concat(a, , , b) for ', '). Spark joins arguments with ", ", so the text
 * between the previous argument and the next one is ", " + literal + ", ":
 * the literal runs from here to the ", " before the next argument that
 * starts with neither ',' nor the closing bracket, or to the bracket.
 */
static em_expr *parse_bare_text(expr_parser *p, char close) {
    size_t start = p->pos, end = p->pos, q = p->pos;
    for (; q < p->n && p->s[q] != close && p->s[q] != '(' && p->s[q] != '['; q++)
        if (q >= start + 2 && p->s[q - 2] == ',' && p->s[q - 1] == ' ' && p->s[q] != ',') {
            end = q - 2;
            break;
        }
    if (q >= p->n || p->s[q] == '(' || p->s[q] == '[')
        return em_plan_expr_error(p, start, "expected an expression");
    if (p->s[q] == close)
        end = q;
    em_expr *e = new_expr(p, EM_EXPR_LITERAL);
    if (!e || !(e->text = dup_text(p, start, end)))
        return NULL;
    p->pos = end;
    return e;
}

static bool parse_delimited(expr_parser *p, char close, size_t open, const char *what,
                            expr_list *items, bool *compact) {
    bool spaced = false, tight = false;
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
        *compact = false;
        return true;
    }
    for (;;) {
        em_expr *v = spaced && close == ')' && p->pos < p->n &&
                             (p->s[p->pos] == ',' || p->s[p->pos] == close)
                         ? parse_bare_text(p, close)
                         : em_plan_parse_expr(p, STOP_COMMA);
        if (!v || !list_push(p, items, v))
            return false;
        if (at(p, p->pos, ", ")) {
            spaced = true;
            p->pos += 2;
        } else if (at(p, p->pos, ",")) {
            tight = true;
            p->pos++;
        } else if (p->pos < p->n && p->s[p->pos] == close) {
            p->pos++;
            break;
        } else {
            em_plan_expr_error(p, p->pos, "expected ',' or '%c' in %s at column %d", close, what,
                            p->col0 + (int)open);
            return false;
        }
    }
    *compact = tight && !spaced;
    return true;
}

/*
 * Arguments of a call: "(" [distinct ] a, b ")" with ", " or "," between.
 * p->pos is at the '('.
 */
static bool parse_call_args(expr_parser *p, em_expr *e, bool allow_distinct) {
    size_t open = p->pos++;
    expr_list args = {0};
    if (allow_distinct && at(p, p->pos, "distinct ")) {
        e->distinct = true;
        p->pos += 9;
    }
    char what[96];
    snprintf(what, sizeof what, "the arguments of '%.60s'", e->name ? e->name : "");
    if (!parse_delimited(p, ')', open, what, &args, &e->compact))
        return false;
    e->args = args.items;
    e->n_args = args.n;
    return true;
}

/* "CASE WHEN c THEN v [WHEN c THEN v]* [ELSE e] END"; p->pos after "CASE". */
static em_expr *parse_case(expr_parser *p) {
    em_expr *e = new_expr(p, EM_EXPR_CASE);
    if (!e)
        return NULL;
    expr_list args = {0};
    while (at(p, p->pos, " WHEN ")) {
        p->pos += 6;
        em_expr *c = em_plan_parse_expr(p, STOP_CASE);
        if (!c || !list_push(p, &args, c))
            return NULL;
        if (!at(p, p->pos, " THEN "))
            return em_plan_expr_error(p, p->pos, "expected ' THEN ' in CASE");
        p->pos += 6;
        em_expr *v = em_plan_parse_expr(p, STOP_CASE);
        if (!v || !list_push(p, &args, v))
            return NULL;
    }
    if (args.n == 0)
        return em_plan_expr_error(p, p->pos, "expected ' WHEN ' after CASE");
    if (at(p, p->pos, " ELSE ")) {
        p->pos += 6;
        em_expr *v = em_plan_parse_expr(p, STOP_CASE);
        if (!v || !list_push(p, &args, v))
            return NULL;
        e->has_else = true;
    }
    if (!at(p, p->pos, " END"))
        return em_plan_expr_error(p, p->pos, "expected ' END' to close CASE");
    p->pos += 4;
    e->args = args.items;
    e->n_args = args.n;
    return e;
}

/* "(" left " op " right ")"; p->pos at '('. */
static em_expr *parse_paren(expr_parser *p) {
    size_t open = p->pos++;
    em_expr *l = parse_not(p, STOP_BINOP);
    if (!l)
        return NULL;
    em_binop op;
    size_t n = binop_at(p, p->pos, &op);
    if (!n)
        return em_plan_expr_error(p, p->pos, "expected a binary operator in '(' at column %d",
                               p->col0 + (int)open);
    p->pos += n;
    em_expr *r = parse_not(p, 0);
    if (!r)
        return NULL;
    if (p->pos >= p->n || p->s[p->pos] != ')')
        return em_plan_expr_error(p, p->pos, "expected ')' to close '(' at column %d",
                               p->col0 + (int)open);
    p->pos++;
    em_expr *e = new_expr(p, EM_EXPR_BINARY);
    if (!e)
        return NULL;
    e->op = op;
    e->args = em_plan_arena_alloc(p->arena, 2 * sizeof *e->args);
    if (!e->args)
        return em_plan_expr_error(p, open, "out of memory");
    e->args[0] = l;
    e->args[1] = r;
    e->n_args = 2;
    return e;
}

/* name "(" args ")" with the special forms cast, DecimalType and aggregates. */
static bool literal_is(const em_expr *e, const char *text) {
    return e->kind == EM_EXPR_LITERAL && e->text && strcmp(e->text, text) == 0;
}

/* CHAR(n) columns print as staticinvoke(class ...CharVarcharCodegenUtils,
 * StringType, readSidePadding, str, n, true, false, true): read as the call
 * read_side_padding(str, n) (the structured reader's reading too). */
static void read_side_padding(em_expr *e) {
    if (e->n_args < 5 || e->args[0]->kind != EM_EXPR_LITERAL || !e->args[0]->text ||
        !strstr(e->args[0]->text, "CharVarcharCodegenUtils") ||
        !literal_is(e->args[2], "readSidePadding"))
        return;
    e->name = "read_side_padding";
    e->args[0] = e->args[3];
    e->args[1] = e->args[4];
    e->n_args = 2;
}

/* Spark 4 prints the same call as static_invoke(CharVarcharCodegenUtils.readSidePadding(str, n)). */
static void read_side_padding_4(em_expr *e) {
    if (e->n_args != 1 || e->args[0]->kind != EM_EXPR_CALL || e->args[0]->n_args != 2 ||
        strcmp(e->args[0]->name, "CharVarcharCodegenUtils.readSidePadding") != 0)
        return;
    e->name = "read_side_padding";
    e->args = e->args[0]->args;
    e->n_args = 2;
}

/* A call's name: an identifier, or Class.method as Spark 4 prints a static invocation. */
static bool is_call_name(const char *w, size_t wn) {
    const char *dot = memchr(w, '.', wn);
    if (!dot)
        return is_ident(w, wn);
    size_t left = (size_t)(dot - w);
    return left > 0 && is_ident(w, left) && is_ident(dot + 1, wn - left - 1);
}

static em_expr *parse_call(expr_parser *p, size_t w0, size_t w1) {
    const char *w = p->s + w0;
    size_t wn = w1 - w0;
    p->pos = w1;
    if (wn == 4 && memcmp(w, "cast", 4) == 0) {
        p->pos++;
        return parse_cast(p, w0);
    }
    bool agg = false;
    em_agg_mode mode = EM_AGG_FINAL;
    size_t name_off = 0;
    if (wn > 8 && memcmp(w, "partial_", 8) == 0) {
        agg = true;
        mode = EM_AGG_PARTIAL;
        name_off = 8;
    } else if (wn > 6 && memcmp(w, "merge_", 6) == 0) {
        agg = true;
        mode = EM_AGG_PARTIAL_MERGE;
        name_off = 6;
    } else if (is_agg_name(w, wn)) {
        agg = true;
    }
    em_expr *e = new_expr(p, agg ? EM_EXPR_AGG : EM_EXPR_CALL);
    if (!e)
        return NULL;
    e->mode = mode;
    e->name = dup_text(p, w0 + name_off, w1);
    if (!e->name || !parse_call_args(p, e, agg))
        return NULL;
    if (wn == 11 && memcmp(w, "DecimalType", 11) == 0 && e->n_args == 2 &&
        e->args[0]->kind == EM_EXPR_LITERAL && e->args[1]->kind == EM_EXPR_LITERAL) {
        int prec = atoi(e->args[0]->text), scale = atoi(e->args[1]->text);
        if (prec >= 1 && prec <= EM_DECIMAL_MAX_PRECISION && scale >= 0 && scale <= prec) {
            e->kind = EM_EXPR_TYPE;
            e->text = dup_text(p, w0, p->pos);
            e->cast_type = em_type_decimal(prec, scale);
            e->cast_type_known = true;
        }
    } else if (!agg && strcmp(e->name, "CheckOverflow") == 0) {
        if (e->n_args == 2)
            p->ev->check_overflow_2++;
        else if (e->n_args == 3)
            p->ev->check_overflow_3++;
    } else if (!agg && strcmp(e->name, "promote_precision") == 0) {
        p->ev->promote_precision++;
    } else if (!agg && strcmp(e->name, "staticinvoke") == 0) {
        read_side_padding(e);
    } else if (!agg && strcmp(e->name, "static_invoke") == 0) {
        read_side_padding_4(e);
    }
    return e;
}

/* Immediate postfixes of a structured operand: "#id" naming it, ".field". */
static em_expr *parse_immediate_postfix(expr_parser *p, em_expr *e, size_t start) {
    if (p->pos + 1 < p->n && p->s[p->pos] == '#' && isdigit((unsigned char)p->s[p->pos + 1])) {
        em_expr *a = new_expr(p, EM_EXPR_ATTR);
        if (!a)
            return NULL;
        a->name = dup_text(p, start, p->pos);
        if (!a->name || !parse_id_suffix(p, a))
            return NULL;
        e = a;
    }
    while (p->pos + 1 < p->n && p->s[p->pos] == '.' && e->kind != EM_EXPR_LITERAL &&
           p->s[p->pos + 1] != ' ') {
        /* struct field: free text up to a space, ',' or closing bracket at depth 0 */
        size_t i = p->pos + 1, f0 = i;
        int depth = 0;
        while (i < p->n) {
            char c = p->s[i];
            if (c == '(')
                depth++;
            else if (c == ')' && depth > 0)
                depth--;
            else if (depth == 0 && (c == ' ' || c == ',' || c == ')' || c == ']'))
                break;
            i++;
        }
        em_expr *f = new_expr(p, EM_EXPR_FIELD);
        if (!f)
            return NULL;
        f->name = dup_text(p, f0, i);
        f->args = em_plan_arena_alloc(p->arena, sizeof *f->args);
        if (!f->name || !f->args)
            return em_plan_expr_error(p, f0, "out of memory");
        f->args[0] = e;
        f->n_args = 1;
        p->pos = i;
        e = f;
    }
    return e;
}

static em_expr *parse_primary(expr_parser *p, int stop) {
    /* Backtracking is local on Spark's text (a failed operand falls back to a
     * segment), but broken text can make it revisit nested operands again and
     * again: bound the work by the text's size. */
    if (++p->steps > 8 * p->n + 1024)
        return em_plan_expr_error(p, p->pos, "expression too complex to parse (unbalanced text?)");
    if (++p->depth > EXPR_MAX_DEPTH) {
        p->depth--;
        return em_plan_expr_error(p, p->pos, "expression nested deeper than %d levels",
                               EXPR_MAX_DEPTH);
    }
    size_t start = p->pos;
    em_expr *e = NULL;
    char c = p->pos < p->n ? p->s[p->pos] : '\0';
    if (c == '(') {
        e = parse_paren(p);
    } else if (c == '[') {
        e = try_plan_id(p);
        if (!e)
            e = em_plan_parse_bracket_list(p);
    } else if (c == '-' && p->pos + 1 < p->n && !isdigit((unsigned char)p->s[p->pos + 1]) &&
               p->s[p->pos + 1] != ' ' && p->s[p->pos + 1] != '.') {
        p->pos++;
        em_expr *child = parse_primary(p, stop);
        if (child) {
            e = new_expr(p, EM_EXPR_NEGATE);
            if (e) {
                e->args = em_plan_arena_alloc(p->arena, sizeof *e->args);
                if (e->args) {
                    e->args[0] = child;
                    e->n_args = 1;
                } else {
                    e = NULL;
                }
            }
        }
        p->depth--;
        return e; /* the child took the postfixes */
    } else if (is_word_char(c)) {
        size_t w0 = p->pos, w1 = w0;
        while (w1 < p->n && is_word_char(p->s[w1]))
            w1++;
        size_t wn = w1 - w0;
        const char *w = p->s + w0;
        if (wn == 4 && memcmp(w, "CASE", 4) == 0 && at(p, w1, " WHEN ")) {
            p->pos = w1;
            e = parse_case(p);
        } else if (wn == 8 && memcmp(w, "Subquery", 8) == 0 && at(p, w1, " ")) {
            p->pos = w1 + 1;
            e = parse_subquery(p, false);
        } else if (wn == 14 && memcmp(w, "ReusedSubquery", 14) == 0 && at(p, w1, " Subquery ")) {
            p->pos = w1 + 10;
            e = parse_subquery(p, true);
        } else if (wn == 5 && memcmp(w, "input", 5) == 0 && at(p, w1, "[")) {
            p->pos = w1 + 1;
            e = parse_bound_ref(p, w0);
        } else if (w1 < p->n && p->s[w1] == '(' && is_call_name(w, wn)) {
            e = parse_call(p, w0, w1);
        } else {
            e = new_expr(p, EM_EXPR_LITERAL);
            if (e) {
                e->text = dup_text(p, w0, w1);
                p->pos = w1;
            }
        }
    } else {
        e = em_plan_expr_error(p, p->pos, "expected an expression");
    }
    if (e)
        e = parse_immediate_postfix(p, e, start);
    if (e && at(p, p->pos, " windowspecdefinition(")) {
        p->pos++;
        size_t s0 = p->pos;
        em_expr *spec = parse_primary(p, stop);
        if (!spec || spec->kind != EM_EXPR_CALL) {
            e = em_plan_expr_error(p, s0, "expected windowspecdefinition(...)");
        } else {
            em_expr *w = new_expr(p, EM_EXPR_WINDOW);
            if (w) {
                w->args = em_plan_arena_alloc(p->arena, 2 * sizeof *w->args);
                if (w->args) {
                    w->args[0] = e;
                    w->args[1] = spec;
                    w->n_args = 2;
                }
            }
            e = w && w->args ? w : NULL;
        }
    }
    p->depth--;
    return e;
}

/* ------------------------------------------------------------------ operators */

static em_expr *make_unary(expr_parser *p, em_expr_kind kind, em_expr *child) {
    em_expr *e = new_expr(p, kind);
    if (!e)
        return NULL;
    e->args = em_plan_arena_alloc(p->arena, sizeof *e->args);
    if (!e->args)
        return em_plan_expr_error(p, p->pos, "out of memory");
    e->args[0] = child;
    e->n_args = 1;
    return e;
}

/* "value INSET v1, v2, ...": values continue while the next item looks like a literal. */
static bool inset_continues(const expr_parser *p) {
    if (!at(p, p->pos, ", "))
        return false;
    for (size_t i = p->pos + 2; i < p->n; i++) {
        char c = p->s[i];
        /* the last value is followed by the INSET's alias or by an operator */
        if (c == ',' || c == ')' || c == ']' || at(p, i, " AS ") || binop_at(p, i, NULL))
            return true;
        if (c == '#' || c == '(' || c == '[')
            return false;
    }
    return true;
}

static em_expr *parse_postfix(expr_parser *p, int stop) {
    em_expr *e = parse_operand(p, stop | STOP_POSTFIX);
    while (e) {
        if (at(p, p->pos, " IN (")) {
            size_t open = p->pos + 4;
            p->pos += 5;
            expr_list items = {0};
            bool compact;
            if (!list_push(p, &items, e) ||
                !parse_delimited(p, ')', open, "the IN list", &items, &compact))
                return NULL;
            e = new_expr(p, EM_EXPR_IN);
            if (!e)
                return NULL;
            e->args = items.items;
            e->n_args = items.n;
            e->compact = compact;
        } else if (in_at(p, p->pos)) {
            /* dynamic pruning: value IN dynamicpruning#N */
            size_t n0 = p->pos + 4, i = n0;
            while (i < p->n && is_word_char(p->s[i]))
                i++;
            em_expr *s = new_expr(p, EM_EXPR_IN_SUBQUERY);
            if (!s)
                return NULL;
            if (i < p->n && p->s[i] == '#') {
                p->pos = i;
                if (!parse_id_suffix(p, s))
                    return em_plan_expr_error(p, i, "expected digits after '#'");
                i = p->pos;
            }
            if (i == n0)
                return em_plan_expr_error(p, n0, "expected '(' or a subquery name after IN");
            s->name = dup_text(p, n0, i);
            p->pos = i;
            em_expr *v = e;
            e = make_unary(p, EM_EXPR_IN_SUBQUERY, v);
            if (!e)
                return NULL;
            e->name = s->name;
            e->id = s->id;
        } else if (at(p, p->pos, " INSET ")) {
            p->pos += 7;
            expr_list items = {0};
            if (!list_push(p, &items, e))
                return NULL;
            for (;;) {
                /* the last value ends where the INSET does: at its alias or at the
                 * operator that follows it, as the caller's stops say */
                em_expr *v = parse_operand(p, stop | STOP_COMMA | STOP_POSTFIX);
                if (!v || !list_push(p, &items, v))
                    return NULL;
                if (!inset_continues(p))
                    break;
                p->pos += 2;
            }
            e = new_expr(p, EM_EXPR_INSET);
            if (!e)
                return NULL;
            e->args = items.items;
            e->n_args = items.n;
        } else if (at(p, p->pos, " LIKE ") || at(p, p->pos, " RLIKE ")) {
            bool rlike = p->s[p->pos + 1] == 'R';
            p->pos += rlike ? 7 : 6;
            em_expr *pat = parse_operand(p, stop);
            if (!pat)
                return NULL;
            em_expr *l = new_expr(p, EM_EXPR_LIKE);
            if (!l)
                return NULL;
            l->rlike = rlike;
            l->args = em_plan_arena_alloc(p->arena, 2 * sizeof *l->args);
            if (!l->args)
                return em_plan_expr_error(p, p->pos, "out of memory");
            l->args[0] = e;
            l->args[1] = pat;
            l->n_args = 2;
            e = l;
        } else {
            break;
        }
    }
    return e;
}

static em_expr *parse_not(expr_parser *p, int stop) {
    if (at(p, p->pos, "NOT ")) {
        if (++p->depth > EXPR_MAX_DEPTH) {
            p->depth--;
            return em_plan_expr_error(p, p->pos, "expression nested deeper than %d levels",
                                   EXPR_MAX_DEPTH);
        }
        p->pos += 4;
        em_expr *c = parse_not(p, stop);
        p->depth--;
        return c ? make_unary(p, EM_EXPR_NOT, c) : NULL;
    }
    return parse_postfix(p, stop);
}

em_expr *em_plan_parse_expr(expr_parser *p, int stop) {
    em_expr *e = parse_not(p, stop | STOP_AS | STOP_SORT);
    while (e) {
        if (at(p, p->pos, " AS ")) {
            size_t n0 = p->pos + 4, i = n0;
            int depth = 0;
            while (i < p->n) {
                char c = p->s[i];
                if (c == '(' || c == '[')
                    depth++;
                else if ((c == ')' || c == ']') && depth > 0)
                    depth--;
                else if (depth == 0 && (c == ')' || c == ']' || at_stop(p, i, stop & STOP_COMMA)))
                    break;
                i++;
            }
            int64_t id;
            bool lsuf;
            size_t hash = trailing_id(p->s + n0, i - n0, &id, &lsuf);
            if (hash >= i - n0)
                return em_plan_expr_error(p, n0, "expected 'name#id' after ' AS '");
            em_expr *a = make_unary(p, EM_EXPR_ALIAS, e);
            if (!a)
                return NULL;
            a->name = dup_text(p, n0, n0 + hash);
            a->id = id;
            a->long_suffix = lsuf;
            p->pos = i;
            e = a;
        } else if (sort_at(p, p->pos)) {
            em_expr *s = make_unary(p, EM_EXPR_SORT_ORDER, e);
            if (!s)
                return NULL;
            s->ascending = p->s[p->pos + 1] == 'A';
            p->pos += s->ascending ? 4 : 5;
            s->nulls_first = at(p, p->pos, " NULLS FIRST");
            p->pos += s->nulls_first ? 12 : 11;
            e = s;
        } else {
            break;
        }
    }
    return e;
}

em_expr *em_plan_parse_expr_all(expr_parser *p) {
    em_expr *e = em_plan_parse_expr(p, 0);
    if (e && p->pos < p->n)
        return em_plan_expr_error(p, p->pos, "unexpected '%c' after the expression", p->s[p->pos]);
    return e;
}

em_expr *em_plan_parse_bracket_list(expr_parser *p) {
    size_t open = p->pos;
    if (p->pos >= p->n || p->s[p->pos] != '[')
        return em_plan_expr_error(p, p->pos, "expected '['");
    p->pos++;
    expr_list items = {0};
    bool compact;
    if (!parse_delimited(p, ']', open, "the list", &items, &compact))
        return NULL;
    em_expr *l = new_expr(p, EM_EXPR_LIST);
    if (!l)
        return NULL;
    l->args = items.items;
    l->n_args = items.n;
    l->compact = compact;
    return l;
}

em_expr **em_plan_parse_arg_list(expr_parser *p, int *n_out) {
    *n_out = 0;
    expr_list items = {0};
    for (;;) {
        em_expr *v = em_plan_parse_expr(p, STOP_COMMA);
        if (!v || !list_push(p, &items, v))
            return NULL;
        if (at(p, p->pos, ", ")) {
            p->pos += 2;
        } else if (p->pos >= p->n) {
            break;
        } else {
            return em_plan_expr_error(p, p->pos, "expected ', ' or the end of the arguments");
        }
    }
    *n_out = items.n;
    return items.items;
}

/* ------------------------------------------------------------------ type names */

bool em_plan_type_from_text(const char *s, size_t n, em_type *out) {
    if (n == 4 && memcmp(s, "void", 4) == 0) { /* NullType's catalog name */
        *out = em_type_make(EM_TYPE_NULL);
        return true;
    }
    return em_type_parse(s, n, out, NULL) == EM_OK;
}
