/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The support rules: per node kind and per expression, Spark's class, the
 * types the native engine accepts and the checks it needs beyond types.
 *
 * The rules restate what src/ops (em_op_build and each operator's open) and
 * src/expr (compile.c: scalar_fns and the special cases of compile_call;
 * agg.c: kind_of) accept, so that a plan can be judged without compiling
 * anything; apply.c still compiles every expression of a node the rules
 * accept, and a disagreement shows up as "native engine refused". When a
 * function is added to the native engine, add its rule here (and its class
 * to the builtin list in src/conf/registry.c, which test_overrides checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/catalog.h"
#include "overrides/internal.h"

/* ------------------------------------------------------------------ types */

static bool known(const em_expr *e) { return e && e->type_known; }

static bool is_untyped_literal(const em_expr *e) {
    return e->kind == EM_EXPR_LITERAL && !(e->type_known && e->type.id != EM_TYPE_NULL);
}

bool em_ov_cast_supported(em_type_id f, em_type_id t) {
    if (f == t || f == EM_TYPE_NULL)
        return true;
    uint32_t fb = OV_T(f);
    bool fint = (fb & (OV_T_INTEGRAL | OV_T_BOOL)) != 0;
    bool ffp = (fb & OV_T_FP) != 0, fdec = f == EM_TYPE_DECIMAL, fstr = f == EM_TYPE_STRING;
    switch (t) {
    case EM_TYPE_STRING:
        return f != EM_TYPE_NULL;
    case EM_TYPE_BOOLEAN:
        return fint || ffp || fdec || fstr;
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
        return fint || ffp || fdec || fstr || (fb & OV_T_TS);
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE:
    case EM_TYPE_DECIMAL:
        return fint || ffp || fdec || fstr;
    case EM_TYPE_DATE:
        return fstr || (fb & OV_T_TS);
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return f == EM_TYPE_DATE || (fb & OV_T_TS);
    case EM_TYPE_BINARY:
        return fstr;
    default:
        return false;
    }
}

/* Whether the native comparison has a common type for a and b (compile.c's
 * common_type). */
static bool comparable(em_type a, em_type b) {
    if (a.id == b.id || a.id == EM_TYPE_NULL || b.id == EM_TYPE_NULL)
        return true;
    if ((OV_T(a.id) & OV_T_NUMERIC) && (OV_T(b.id) & OV_T_NUMERIC))
        return true;
    em_type_id x = a.id, y = b.id;
    if (x > y) {
        em_type_id t = x;
        x = y;
        y = t;
    }
    return (x == EM_TYPE_STRING && y == EM_TYPE_DATE) ||
           (x == EM_TYPE_DATE && y == EM_TYPE_TIMESTAMP);
}

static void type_name(em_type t, char *buf, size_t cap) { em_type_format(t, buf, cap); }

/* ------------------------------------------------------------------ checks */

static bool check_comparison(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args != 2 || !known(e->args[0]) || !known(e->args[1]) ||
        is_untyped_literal(e->args[0]) || is_untyped_literal(e->args[1]))
        return true;
    if (comparable(e->args[0]->type, e->args[1]->type))
        return true;
    char a[48], b[48];
    type_name(e->args[0]->type, a, sizeof a);
    type_name(e->args[1]->type, b, sizeof b);
    snprintf(why, cap, "comparison of %s with %s is not supported natively", a, b);
    return false;
}

static bool check_in(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args < 1 || !known(e->args[0]))
        return true;
    for (int i = 1; i < e->n_args; i++) {
        const em_expr *it = e->args[i];
        if (!known(it) || is_untyped_literal(it) || comparable(e->args[0]->type, it->type))
            continue;
        char a[48], b[48];
        type_name(e->args[0]->type, a, sizeof a);
        type_name(it->type, b, sizeof b);
        snprintf(why, cap, "IN list item of type %s for a value of type %s", b, a);
        return false;
    }
    return true;
}

/* Every operand with a known type can be cast to want (the native function
 * casts its operands, as Spark's implicit casts would have). */
static bool operands_cast_to(const em_expr *e, const ov_check_ctx *cx, int from_arg, int to_arg,
                             em_type_id want, const char *what, char *why, size_t cap) {
    (void)cx; /* casts no longer depend on the context (the session zone included) */
    for (int i = from_arg; i < e->n_args && i < to_arg; i++) {
        const em_expr *a = e->args[i];
        if (!known(a) || is_untyped_literal(a))
            continue;
        char t[48];
        type_name(a->type, t, sizeof t);
        if (!em_ov_cast_supported(a->type.id, want)) {
            snprintf(why, cap, "%s of %s is not supported natively", what, t);
            return false;
        }
    }
    return true;
}

static bool check_like(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    if (e->n_args != 2 || e->args[1]->kind != EM_EXPR_LITERAL) {
        snprintf(why, cap, "LIKE with a non-literal pattern is not supported natively");
        return false;
    }
    return operands_cast_to(e, cx, 0, 1, EM_TYPE_STRING, "LIKE", why, cap);
}

static bool check_cast(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args < 1 || !known(e->args[0]))
        return true;
    em_type to;
    if (e->cast_type_known)
        to = e->cast_type;
    else if (!e->text || em_type_parse(e->text, strlen(e->text), &to, NULL) != EM_OK) {
        snprintf(why, cap, "cast to %s: the type is not known natively", e->text ? e->text : "?");
        return false;
    }
    em_type from = e->args[0]->type;
    if (is_untyped_literal(e->args[0]) || em_type_equal(from, to))
        return true;
    char a[48], b[48];
    type_name(from, a, sizeof a);
    type_name(to, b, sizeof b);
    if (!em_ov_cast_supported(from.id, to.id)) {
        snprintf(why, cap, "cast from %s to %s is not supported natively", a, b);
        return false;
    }
    return true;
}

static bool check_string_fn(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    return operands_cast_to(e, cx, 0, 1 << 20, EM_TYPE_STRING, "a string function", why, cap);
}

static bool check_substring(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    if (e->n_args < 2 || e->n_args > 3) {
        snprintf(why, cap, "substring with %d arguments", e->n_args);
        return false;
    }
    return operands_cast_to(e, cx, 0, 1, EM_TYPE_STRING, "substring", why, cap) &&
           operands_cast_to(e, cx, 1, 3, EM_TYPE_INT, "a substring position", why, cap);
}

/* read_side_padding (CHAR columns' StaticInvoke): a string and its length. */
static bool check_side_padding(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    if (e->n_args != 2) {
        snprintf(why, cap, "readSidePadding with %d arguments", e->n_args);
        return false;
    }
    return operands_cast_to(e, cx, 0, 1, EM_TYPE_STRING, "readSidePadding", why, cap) &&
           operands_cast_to(e, cx, 1, 2, EM_TYPE_INT, "a CHAR length", why, cap);
}

static bool check_date_fn(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    return operands_cast_to(e, cx, 0, 1 << 20, EM_TYPE_DATE, "a date function", why, cap);
}

/* hour/minute/second: a timestamp (or date, read as its midnight) and the
 * zone Spark stamps on it, printed Some(zone id). */
static bool check_time_fn(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args < 1 || e->n_args > 2)
        return true; /* the probe names the arity */
    const em_expr *a = e->args[0];
    if (known(a) && a->type.id != EM_TYPE_TIMESTAMP && a->type.id != EM_TYPE_TIMESTAMP_NTZ &&
        a->type.id != EM_TYPE_DATE) {
        char t[48];
        type_name(a->type, t, sizeof t);
        snprintf(why, cap, "%s of %s is not supported natively", e->name, t);
        return false;
    }
    const em_expr *z = e->n_args == 2 ? e->args[1] : NULL;
    if (z && !(z->kind == EM_EXPR_CALL && z->name && !strcmp(z->name, "Some") && z->n_args == 1)) {
        snprintf(why, cap, "%s with a time zone argument other than Some(zone id)", e->name);
        return false;
    }
    return true;
}

static bool check_date_add(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    if (e->n_args != 2)
        return true;
    const em_expr *d = e->args[1];
    if (known(d) && !is_untyped_literal(d) && !(OV_T(d->type.id) & (OV_T_INTEGRAL | OV_T_NULL))) {
        char t[48];
        type_name(d->type, t, sizeof t);
        snprintf(why, cap, "date_add/date_sub by %s days is not supported natively", t);
        return false;
    }
    return operands_cast_to(e, cx, 0, 1, EM_TYPE_DATE, "date_add/date_sub", why, cap);
}

static bool check_double_fn(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    return operands_cast_to(e, cx, 0, 1 << 20, EM_TYPE_DOUBLE, "a math function", why, cap);
}

static bool check_shift(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    return operands_cast_to(e, cx, 1, 2, EM_TYPE_INT, "a shift amount", why, cap);
}

static bool check_unscaled(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args == 1 && known(e->args[0]) &&
        (e->args[0]->type.id != EM_TYPE_DECIMAL || e->args[0]->type.precision > 18)) {
        char t[48];
        type_name(e->args[0]->type, t, sizeof t);
        snprintf(why, cap, "UnscaledValue of %s (native: decimal of precision <= 18)", t);
        return false;
    }
    return true;
}

static bool literal_int(const em_expr *a, long long *v) {
    if (a->kind != EM_EXPR_LITERAL || !a->text)
        return false;
    char *end = NULL;
    *v = strtoll(a->text, &end, 10);
    return end != a->text && *end == '\0';
}

static bool check_make_decimal(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    long long p, s;
    if (e->n_args < 3 || !literal_int(e->args[1], &p) || !literal_int(e->args[2], &s) || p < 1 ||
        p > 18 || s < 0 || s > p) {
        snprintf(why, cap, "MakeDecimal natively needs literal precision <= 18 and scale");
        return false;
    }
    return true;
}

static bool check_check_overflow(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args < 2 || e->args[1]->kind != EM_EXPR_TYPE) {
        snprintf(why, cap, "CheckOverflow without a DecimalType");
        return false;
    }
    return true;
}

static bool check_round(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    long long v;
    if (e->n_args < 1 || e->n_args > 2 || (e->n_args == 2 && !literal_int(e->args[1], &v))) {
        snprintf(why, cap, "round natively needs a literal scale");
        return false;
    }
    return true;
}

static bool check_scalar_subquery(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (!e->type_known) {
        snprintf(why, cap, "scalar subquery of unknown type");
        return false;
    }
    return true;
}

static bool check_field(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args < 1 || e->args[0]->kind != EM_EXPR_SCALAR_SUBQUERY || !e->type_known) {
        snprintf(why, cap, "struct field access is only supported natively on a scalar subquery");
        return false;
    }
    return true;
}

static bool check_in_subquery(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)e;
    const em_expr *p = cx->parent;
    if (p && p->kind == EM_EXPR_CALL && p->name && !strcasecmp(p->name, "dynamicpruningexpression"))
        return true;
    snprintf(why, cap, "IN subquery is only supported natively as a dynamic pruning filter");
    return false;
}

static bool check_agg(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    int n = e->n_args;
    bool first_last =
        e->name && (!strcasecmp(e->name, "first") || !strcasecmp(e->name, "last") ||
                    !strcasecmp(e->name, "first_value") || !strcasecmp(e->name, "last_value"));
    if (first_last && n == 2 && e->args[1]->kind == EM_EXPR_LITERAL)
        n = 1;
    bool count = e->name && !strcasecmp(e->name, "count");
    if (n < 1 || n > 8 || (!count && n != 1)) {
        snprintf(why, cap, "aggregate %s with %d arguments", e->name ? e->name : "?", e->n_args);
        return false;
    }
    return true;
}

static bool is_call(const em_expr *e, const char *name) {
    return e && e->kind == EM_EXPR_CALL && e->name && !strcmp(e->name, name);
}

/* A frame bound the native Window reads: unbounded, the current row, or an
 * integer offset (rows, or a value offset from a RangeFrame's order key). */
static bool native_frame_bound(const em_expr *e) {
    if (is_call(e, "unboundedpreceding$") || is_call(e, "unboundedfollowing$") ||
        is_call(e, "currentrow$"))
        return true;
    if (e->kind == EM_EXPR_NEGATE && e->n_args == 1)
        e = e->args[0];
    if (e->kind != EM_EXPR_LITERAL || !e->text)
        return false;
    char *end = NULL;
    (void)strtoll(e->text, &end, 10);
    return end != e->text && (!*end || !strcmp(end, "L"));
}

static bool check_window(const em_expr *e, const ov_check_ctx *cx, char *why, size_t cap) {
    (void)cx;
    if (e->n_args != 2) {
        snprintf(why, cap, "window expression without a specification");
        return false;
    }
    const em_expr *fn = e->args[0], *spec = e->args[1];
    const em_expr *frame = spec->n_args > 0 ? spec->args[spec->n_args - 1] : NULL;
    if (is_call(frame, "specifiedwindowframe") && frame->n_args == 3 &&
        (!native_frame_bound(frame->args[1]) || !native_frame_bound(frame->args[2]))) {
        snprintf(why, cap, "window frame bound that is not an integer offset");
        return false;
    }
    static const char *const fns[] = {"row_number", "rank",      "dense_rank", "percent_rank",
                                      "cume_dist",  "ntile",     "lag",        "lead",
                                      "nth_value"};
    if (fn->kind == EM_EXPR_AGG)
        return true;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (is_call(fn, fns[i]))
            return true;
    snprintf(why, cap, "window function %s is not supported natively",
             fn->name ? fn->name : em_expr_kind_name(fn->kind));
    return false;
}

/* ------------------------------------------------------------------ expressions */

#define NUMN (OV_T_NUMERIC | OV_T_NULL)
#define ORDER_NOTE "incompatible: floating-point, the result depends on the order rows are added in"
#define INTN (OV_T_INTEGRAL | OV_T_NULL)

/* clang-format off */
static const ov_expr_rule expr_rules[] = {
    /* references, literals, structure */
    {.cls = "AttributeReference", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "BoundReference", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "Literal", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "Alias", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "SortOrder", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "ScalarSubquery", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .check = check_scalar_subquery},
    {.cls = "GetStructField", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .partial = OV_T_ALL, .check = check_field,
     .note = "only a field of a (merged) scalar subquery's struct"},
    {.cls = "DynamicPruningExpression", .native = true, .in_types = OV_T_ALL,
     .out_types = OV_T_BOOL},
    {.cls = "InSubqueryExec", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .partial = OV_T_BOOL, .check = check_in_subquery,
     .note = "only as a dynamic pruning filter, which is always true here (the join filters)"},
    {.cls = "KnownFloatingPointNormalized", .native = true, .in_types = OV_T_ALL,
     .out_types = OV_T_ALL},
    {.cls = "KnownNotNull", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "PromotePrecision", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "CheckOverflow", .native = true, .in_types = OV_T_DEC | OV_T_NULL,
     .out_types = OV_T_DEC, .check = check_check_overflow},
    {.cls = "MakeDecimal", .native = true, .in_types = INTN, .out_types = OV_T_DEC,
     .partial = OV_T_DEC, .check = check_make_decimal, .note = "precision <= 18"},
    {.cls = "UnscaledValue", .native = true, .in_types = OV_T_DEC | OV_T_NULL,
     .out_types = OV_T(EM_TYPE_LONG), .check = check_unscaled,
     .note = "decimal of precision <= 18"},
    {.cls = "Cast", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .partial = OV_T_ALL, .check = check_cast,
     .note = "see the cast table"},
    /* arithmetic */
    {.cls = "Add", .native = true, .in_types = NUMN, .out_types = OV_T_NUMERIC},
    {.cls = "Subtract", .native = true, .in_types = NUMN, .out_types = OV_T_NUMERIC},
    {.cls = "Multiply", .native = true, .in_types = NUMN, .out_types = OV_T_NUMERIC},
    {.cls = "Divide", .native = true, .in_types = NUMN, .out_types = OV_T_FP | OV_T_DEC},
    {.cls = "Remainder", .native = true, .in_types = NUMN, .out_types = OV_T_NUMERIC},
    {.cls = "IntegralDivide", .native = true, .in_types = INTN, .out_types = OV_T(EM_TYPE_LONG)},
    {.cls = "Pmod", .native = true, .in_types = INTN, .out_types = OV_T_INTEGRAL},
    {.cls = "UnaryMinus", .native = true, .in_types = NUMN, .out_types = OV_T_NUMERIC},
    {.cls = "Abs", .native = true, .in_types = NUMN, .out_types = OV_T_NUMERIC},
    {.cls = "BitwiseAnd", .native = true, .in_types = INTN, .out_types = OV_T_INTEGRAL},
    {.cls = "BitwiseOr", .native = true, .in_types = INTN, .out_types = OV_T_INTEGRAL},
    {.cls = "BitwiseXor", .native = true, .in_types = INTN, .out_types = OV_T_INTEGRAL},
    {.cls = "ShiftLeft", .native = true, .in_types = OV_T_ALL,
     .out_types = OV_T(EM_TYPE_INT) | OV_T(EM_TYPE_LONG), .check = check_shift},
    {.cls = "ShiftRight", .native = true, .in_types = OV_T_ALL,
     .out_types = OV_T(EM_TYPE_INT) | OV_T(EM_TYPE_LONG), .check = check_shift},
    {.cls = "Floor", .native = true, .in_types = NUMN,
     .out_types = OV_T(EM_TYPE_LONG) | OV_T_DEC},
    {.cls = "Ceil", .native = true, .in_types = NUMN, .out_types = OV_T(EM_TYPE_LONG) | OV_T_DEC},
    {.cls = "Round", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_NUMERIC,
     .partial = OV_T_NUMERIC, .check = check_round, .note = "literal scale only"},
    {.cls = "Sqrt", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_DOUBLE),
     .check = check_double_fn},
    {.cls = "Exp", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_DOUBLE),
     .check = check_double_fn},
    {.cls = "Log", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_DOUBLE),
     .check = check_double_fn},
    {.cls = "Pow", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_DOUBLE),
     .check = check_double_fn},
    {.cls = "IsNaN", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_double_fn},
    {.cls = "NormalizeNaNAndZero", .native = true, .in_types = OV_T_FP | OV_T_NULL,
     .out_types = OV_T_FP},
    /* predicates and conditionals */
    {.cls = "EqualTo", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_comparison},
    {.cls = "EqualNullSafe", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_comparison},
    {.cls = "LessThan", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_comparison},
    {.cls = "LessThanOrEqual", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_comparison},
    {.cls = "GreaterThan", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_comparison},
    {.cls = "GreaterThanOrEqual", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_comparison},
    {.cls = "And", .native = true, .in_types = OV_T_BOOL | OV_T_NULL, .out_types = OV_T_BOOL},
    {.cls = "Or", .native = true, .in_types = OV_T_BOOL | OV_T_NULL, .out_types = OV_T_BOOL},
    {.cls = "Not", .native = true, .in_types = OV_T_BOOL | OV_T_NULL, .out_types = OV_T_BOOL},
    {.cls = "In", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_in},
    {.cls = "InSet", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_in},
    {.cls = "IsNull", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL},
    {.cls = "IsNotNull", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL},
    {.cls = "Like", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .partial = OV_T_BOOL, .check = check_like, .note = "literal pattern only"},
    {.cls = "RLike", .native = false, .in_types = OV_T_ALL, .out_types = OV_T_BOOL},
    {.cls = "CaseWhen", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "If", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "Coalesce", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    /* strings and dates */
    {.cls = "Substring", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_substring},
    {.cls = "Concat", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_string_fn},
    {.cls = "Upper", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_string_fn},
    {.cls = "StaticInvoke", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_side_padding, .note = "CharVarcharCodegenUtils.readSidePadding only"},
    {.cls = "Lower", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_string_fn},
    {.cls = "Length", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_string_fn},
    {.cls = "StringTrim", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_string_fn},
    {.cls = "StringTrimLeft", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_string_fn},
    {.cls = "StringTrimRight", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_STR,
     .check = check_string_fn},
    {.cls = "StartsWith", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_string_fn},
    {.cls = "EndsWith", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_string_fn},
    {.cls = "Contains", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_BOOL,
     .check = check_string_fn},
    {.cls = "Year", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_date_fn},
    {.cls = "Month", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_date_fn},
    {.cls = "DayOfMonth", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_date_fn},
    {.cls = "Quarter", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_date_fn},
    {.cls = "Hour", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_time_fn},
    {.cls = "Minute", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_time_fn},
    {.cls = "Second", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_time_fn},
    {.cls = "DateAdd", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_DATE,
     .check = check_date_add},
    {.cls = "DateSub", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_DATE,
     .check = check_date_add},
    {.cls = "DateDiff", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .check = check_date_fn},
    /* aggregates */
    {.cls = "AggregateExpression", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .check = check_agg},
    {.cls = "Sum", .native = true, .in_types = NUMN,
     .out_types = OV_T(EM_TYPE_LONG) | OV_T(EM_TYPE_DOUBLE) | OV_T_DEC,
     .partial = OV_T(EM_TYPE_DOUBLE), .incompat_fp = true,
     .note = "floating-point input: incompatible, the result depends on the order rows are "
             "added in"},
    {.cls = "Average", .native = true, .in_types = NUMN,
     .out_types = OV_T(EM_TYPE_DOUBLE) | OV_T_DEC, .partial = OV_T(EM_TYPE_DOUBLE),
     .incompat_fp = true,
     .note = "floating-point input: incompatible, the result depends on the order rows are "
             "added in"},
    {.cls = "Count", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_LONG)},
    {.cls = "Min", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "Max", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "First", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "Last", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL},
    {.cls = "StddevSamp", .native = true, .in_types = NUMN, .out_types = OV_T(EM_TYPE_DOUBLE),
     .incompat = true, .note = ORDER_NOTE},
    {.cls = "StddevPop", .native = true, .in_types = NUMN, .out_types = OV_T(EM_TYPE_DOUBLE),
     .incompat = true, .note = ORDER_NOTE},
    {.cls = "VarianceSamp", .native = true, .in_types = NUMN, .out_types = OV_T(EM_TYPE_DOUBLE),
     .incompat = true, .note = ORDER_NOTE},
    {.cls = "VariancePop", .native = true, .in_types = NUMN, .out_types = OV_T(EM_TYPE_DOUBLE),
     .incompat = true, .note = ORDER_NOTE},
    /* windows */
    {.cls = "WindowExpression", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .partial = OV_T_ALL, .check = check_window,
     .note = "ROWS and RANGE frames with integer offsets (RANGE offsets from one numeric or "
             "date order key)"},
    {.cls = "RowNumber", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT)},
    {.cls = "Rank", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT)},
    {.cls = "DenseRank", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT)},
    {.cls = "PercentRank", .native = true, .in_types = OV_T_ALL,
     .out_types = OV_T(EM_TYPE_DOUBLE)},
    {.cls = "CumeDist", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_DOUBLE)},
    {.cls = "NTile", .native = true, .in_types = OV_T_ALL, .out_types = OV_T(EM_TYPE_INT),
     .note = "literal bucket count"},
    {.cls = "Lag", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .note = "literal offset"},
    {.cls = "Lead", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .note = "literal offset"},
    {.cls = "NthValue", .native = true, .in_types = OV_T_ALL, .out_types = OV_T_ALL,
     .note = "literal position"},
    /* partitionings (an exchange's; always enabled) */
    {.cls = "HashPartitioning", .native = true, .switchless = true, .in_types = OV_T_ALL,
     .out_types = OV_T_ALL},
    {.cls = "RangePartitioning", .native = true, .switchless = true, .in_types = OV_T_ALL,
     .out_types = OV_T_ALL},
    {.cls = "RoundRobinPartitioning", .native = true, .switchless = true, .in_types = OV_T_ALL,
     .out_types = OV_T_ALL},
    {.cls = "SinglePartition", .native = true, .switchless = true, .in_types = OV_T_ALL,
     .out_types = OV_T_ALL},
};
/* clang-format on */

/* Any other expression: the row engine only. */
static const ov_expr_rule no_native = {
    .cls = NULL, .native = false, .in_types = OV_T_ALL, .out_types = OV_T_ALL};

static const struct {
    const char *name;
    const char *cls;
} agg_classes[] = {
    {"sum", "Sum"},
    {"avg", "Average"},
    {"mean", "Average"},
    {"count", "Count"},
    {"min", "Min"},
    {"max", "Max"},
    {"first", "First"},
    {"first_value", "First"},
    {"last", "Last"},
    {"last_value", "Last"},
    {"stddev_samp", "StddevSamp"},
    {"stddev", "StddevSamp"},
    {"std", "StddevSamp"},
    {"stddev_pop", "StddevPop"},
    {"var_samp", "VarianceSamp"},
    {"variance", "VarianceSamp"},
    {"var_pop", "VariancePop"},
};

static const char *const binop_classes[EM_OP_COUNT_] = {
    [EM_OP_ADD] = "Add",
    [EM_OP_SUB] = "Subtract",
    [EM_OP_MUL] = "Multiply",
    [EM_OP_DIV] = "Divide",
    [EM_OP_REM] = "Remainder",
    [EM_OP_INTDIV] = "IntegralDivide",
    [EM_OP_BITAND] = "BitwiseAnd",
    [EM_OP_BITOR] = "BitwiseOr",
    [EM_OP_BITXOR] = "BitwiseXor",
    [EM_OP_EQ] = "EqualTo",
    [EM_OP_NULLSAFE_EQ] = "EqualNullSafe",
    [EM_OP_LT] = "LessThan",
    [EM_OP_LE] = "LessThanOrEqual",
    [EM_OP_GT] = "GreaterThan",
    [EM_OP_GE] = "GreaterThanOrEqual",
    [EM_OP_AND] = "And",
    [EM_OP_OR] = "Or",
};

static const ov_expr_rule *rule_by_class(const char *cls) {
    for (size_t i = 0; i < sizeof expr_rules / sizeof expr_rules[0]; i++)
        if (!strcmp(expr_rules[i].cls, cls))
            return &expr_rules[i];
    return NULL;
}

const ov_expr_rule *em_ov_expr_rule_named(const char *cls) { return cls ? rule_by_class(cls) : NULL; }

/* The aggregate function's own rule (Sum, Count, ...) for an AGG node. */
static const ov_expr_rule *agg_fn_rule(const em_expr *e, const char **cls) {
    for (size_t i = 0; e->name && i < sizeof agg_classes / sizeof agg_classes[0]; i++)
        if (!strcasecmp(e->name, agg_classes[i].name)) {
            *cls = agg_classes[i].cls;
            return rule_by_class(*cls);
        }
    *cls = e->name ? e->name : "?";
    return &no_native;
}

const ov_expr_rule *em_ov_expr_rule_for(const em_expr *e, const char **cls) {
    const char *c = NULL;
    switch (e->kind) {
    case EM_EXPR_ATTR:
        c = "AttributeReference";
        break;
    case EM_EXPR_LITERAL:
    case EM_EXPR_RAW:
        if (e->text && !strcmp(e->text, "SinglePartition"))
            c = "SinglePartition";
        else if (e->kind == EM_EXPR_LITERAL)
            c = "Literal";
        else { /* text the parser keeps only to print it back */
            *cls = e->text && e->text[0] ? e->text : "?";
            return &no_native;
        }
        break;
    case EM_EXPR_CALL:
        {
            const em_fn_info *fi = em_fn_lookup(e->name);
            c = fi ? fi->cls : NULL;
        }
        if (!c) {
            *cls = e->name ? e->name : "?";
            return &no_native;
        }
        break;
    case EM_EXPR_AGG:
        /* the AggregateExpression wrapper: its function is judged as a child line */
        c = "AggregateExpression";
        break;
    case EM_EXPR_BINARY:
        c = (unsigned)e->op < EM_OP_COUNT_ ? binop_classes[e->op] : NULL;
        break;
    case EM_EXPR_NOT:
        c = "Not";
        break;
    case EM_EXPR_NEGATE:
        c = "UnaryMinus";
        break;
    case EM_EXPR_IN:
        c = "In";
        break;
    case EM_EXPR_INSET:
        c = "InSet";
        break;
    case EM_EXPR_IN_SUBQUERY:
        c = "InSubqueryExec";
        break;
    case EM_EXPR_LIKE:
        c = e->rlike ? "RLike" : "Like";
        break;
    case EM_EXPR_CASE:
        c = "CaseWhen";
        break;
    case EM_EXPR_CAST:
        c = "Cast";
        break;
    case EM_EXPR_ALIAS:
        c = "Alias";
        break;
    case EM_EXPR_SORT_ORDER:
        c = "SortOrder";
        break;
    case EM_EXPR_BOUND_REF:
        c = "BoundReference";
        break;
    case EM_EXPR_SCALAR_SUBQUERY:
        c = "ScalarSubquery";
        break;
    case EM_EXPR_FIELD:
        c = "GetStructField";
        break;
    case EM_EXPR_WINDOW:
        c = "WindowExpression";
        break;
    case EM_EXPR_TYPE:
    case EM_EXPR_LIST:
    case EM_EXPR_PLAN_ID:
    default:
        *cls = NULL;
        return NULL;
    }
    *cls = c ? c : "?";
    const ov_expr_rule *r = c ? rule_by_class(c) : NULL;
    return r ? r : &no_native;
}

const ov_expr_rule *em_ov_agg_fn_rule(const em_expr *e, const char **cls) {
    return agg_fn_rule(e, cls);
}

size_t em_ov_n_expr_rules(void) { return sizeof expr_rules / sizeof expr_rules[0]; }
const ov_expr_rule *em_ov_expr_rule_at(size_t i) {
    return i < em_ov_n_expr_rules() ? &expr_rules[i] : NULL;
}

/* ------------------------------------------------------------------ execs */

/* clang-format off */
static const ov_exec_rule exec_rules[] = {
    {EM_NODE_UNKNOWN, NULL, OV_EXEC_ROW, OV_T_ALL, NULL},
    {EM_NODE_SCAN, "FileSourceScanExec", OV_EXEC_NATIVE, OV_T_ALL,
     "Parquet files only; Hive partition columns inside Spark only (each task's splits carry their values)"},
    {EM_NODE_COLUMNAR_TO_ROW, "ColumnarToRowExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_ROW_TO_COLUMNAR, "RowToColumnarExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_FILTER, "FilterExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_PROJECT, "ProjectExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_HASH_AGGREGATE, "HashAggregateExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_SORT_AGGREGATE, "SortAggregateExec", OV_EXEC_NATIVE, OV_T_ALL,
     "runs as a hash aggregate"},
    {EM_NODE_OBJECT_HASH_AGGREGATE, "ObjectHashAggregateExec", OV_EXEC_NATIVE, OV_T_ALL,
     "runs as a hash aggregate"},
    {EM_NODE_EXCHANGE, "ShuffleExchangeExec", OV_EXEC_NATIVE, OV_T_ALL,
     "hash, range, round-robin and single partitioning"},
    {EM_NODE_BROADCAST_EXCHANGE, "BroadcastExchangeExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_REUSED_EXCHANGE, "ReusedExchangeExec", OV_EXEC_REUSE, OV_T_ALL,
     "reads what the exchange it reuses stored, on that exchange's engine"},
    {EM_NODE_BROADCAST_HASH_JOIN, "BroadcastHashJoinExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_SORT_MERGE_JOIN, "SortMergeJoinExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_SHUFFLED_HASH_JOIN, "ShuffledHashJoinExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_BROADCAST_NESTED_LOOP_JOIN, "BroadcastNestedLoopJoinExec", OV_EXEC_NATIVE, OV_T_ALL,
     NULL},
    {EM_NODE_CARTESIAN_PRODUCT, "CartesianProductExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_SORT, "SortExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_TAKE_ORDERED_AND_PROJECT, "TakeOrderedAndProjectExec", OV_EXEC_NATIVE, OV_T_ALL,
     NULL},
    {EM_NODE_COLLECT_LIMIT, "CollectLimitExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_GLOBAL_LIMIT, "GlobalLimitExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_LOCAL_LIMIT, "LocalLimitExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_UNION, "UnionExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_EXPAND, "ExpandExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_WINDOW, "WindowExec", OV_EXEC_NATIVE, OV_T_ALL, NULL},
    {EM_NODE_WINDOW_GROUP_LIMIT, "WindowGroupLimitExec", OV_EXEC_NATIVE, OV_T_ALL,
     "rank, dense_rank and row_number limits"},
    {EM_NODE_LOCAL_TABLE_SCAN, "LocalTableScanExec", OV_EXEC_NATIVE, OV_T_ALL,
     "only an empty relation (the plan text does not print the rows)"},
    {EM_NODE_SUBQUERY, "SubqueryExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_REUSED_SUBQUERY, "ReusedSubqueryExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_INPUT_ADAPTER, "InputAdapter", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_WHOLE_STAGE_CODEGEN, "WholeStageCodegenExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_ADAPTIVE_SPARK_PLAN, "AdaptiveSparkPlanExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_COALESCE, "CoalesceExec", OV_EXEC_ROW, OV_T_ALL, NULL},
    {EM_NODE_GENERATE, "GenerateExec", OV_EXEC_ROW, OV_T_ALL, NULL},
    {EM_NODE_SHUFFLE_QUERY_STAGE, "ShuffleQueryStageExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_BROADCAST_QUERY_STAGE, "BroadcastQueryStageExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_AQE_SHUFFLE_READ, "AQEShuffleReadExec", OV_EXEC_PASS, OV_T_ALL, NULL},
    {EM_NODE_AQE_SECTION, "AdaptiveSparkPlanExec", OV_EXEC_PASS, OV_T_ALL, NULL},
};
/* clang-format on */

const ov_exec_rule *em_ov_exec_rule_for(const em_plan_node *node) {
    for (size_t i = 0; i < sizeof exec_rules / sizeof exec_rules[0]; i++)
        if (exec_rules[i].kind == node->kind)
            return &exec_rules[i];
    return &exec_rules[0];
}

const char *em_ov_exec_class(const em_plan_node *node, char *buf, size_t cap) {
    const ov_exec_rule *r = em_ov_exec_rule_for(node);
    if (r->cls)
        return r->cls;
    /* "Generate" -> "GenerateExec"; names with blanks keep their first word */
    const char *n = node->name ? node->name : "Unknown";
    size_t len = strcspn(n, " ");
    snprintf(buf, cap, "%.*sExec", (int)len, n);
    return buf;
}

size_t em_ov_n_exec_rules(void) { return sizeof exec_rules / sizeof exec_rules[0]; }
const ov_exec_rule *em_ov_exec_rule_at(size_t i) {
    return i < em_ov_n_exec_rules() ? &exec_rules[i] : NULL;
}
