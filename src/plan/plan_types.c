/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Output derivation and type inference by Spark's rules.
 *
 * Types are printed only in ReadSchema, casts, bound references and (up to
 * 3.3) CheckOverflow; everything else is inferred. Operators are visited
 * children first (a ReusedExchange after the exchange it reuses, a scalar
 * subquery's tree before the expression that reads it). Each operator's
 * expressions are typed against one environment, expression id -> type,
 * filled by the operators that define attributes:
 *
 *   Scan              Output attributes typed from ReadSchema by column name
 *   Project, Results  aliases define their id with the child's type
 *   HashAggregate     partial: the Aggregate Attributes are each function's
 *                     buffer (sum of decimal -> sum, isEmpty; avg -> sum,
 *                     count; ...) and Results re-issue them by position;
 *                     final: Aggregate Attributes are the functions' results
 *   ReusedExchange    Output typed by position from the reused exchange
 *   ExistenceJoin     defines its boolean exists#N
 *   Expand, Window    projections / window expressions define their outputs
 *
 * Expression rules: comparisons, AND/OR/NOT, IN, LIKE, isnull... -> boolean;
 * arithmetic on decimals by the shim (3.3: the promoted operand type inside
 * CheckOverflow; 3.4+: DecimalPrecision with allowPrecisionLoss); integral
 * arithmetic widens to the larger type, `/` on non-decimals is double;
 * sum(decimal(p,s)) -> decimal(min(38,p+10),s), avg(decimal(p,s)) ->
 * decimal(min(38,p+4),min(38,s+4)), sum of integers -> bigint, avg and
 * stddev -> double, count -> bigint, min/max keep their input type;
 * UnscaledValue -> bigint, MakeDecimal(e,p,s) -> decimal(p,s).
 *
 * Literals print unquoted, so their type comes from their context, as
 * Spark's coercion cast them and ConstantFolding folded the cast (lit_role):
 * beside a decimal, an arithmetic operand is decimal(digits,0) as
 * DecimalType.fromLiteral makes it, a compared literal the wider decimal of
 * both sides, and a member of a coerced set (CASE branches, IN lists,
 * coalesce/greatest/least, array elements, an Expand column) the set's
 * common type; a number beside a double is double, text beside a string
 * column is a string (the arguments of StartsWith/EndsWith/Contains are
 * strings however spelled), a date beside a date column is a date, a
 * literal aliased with the `L` of bigint ids is a bigint; alone it is
 * int/bigint, decimal(p,s), date, boolean, null or string by its spelling.
 * round/bround of decimal(p,s) to d places is RoundBase's decimal(p - s + 1 +
 * min(s, d), min(s, d)) (d < 0: decimal(max(p - s + 1, 1 - d), 0)).
 *
 * An attribute reference whose id no operator defines is literal text that
 * happens to contain '#digits' (the normalized files renumber `'Brand#45'`
 * too): it becomes a string literal with the same printed text.
 *
 * Columns whose type the text never prints get it from elsewhere: the caller's
 * column_type hook (--retype, LocalTableScan), the `L` Spark prints after
 * bigint ids, and join keys - both sides of a key have one type, so an untyped
 * partition column takes its partner's type and the plan is typed again.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/catalog.h"
#include "plan/internal.h"

typedef struct type_env {
    int64_t *keys; /* expression ids; -1 = empty slot */
    em_type *types;
    size_t cap; /* power of two */
    size_t n;
    bool failed;
} type_env;

typedef struct infer_ctx {
    em_plan *plan;
    type_env env;
    type_env defined;                   /* ids some operator produces (types unused) */
    em_plan_column_type_fn column_type; /* may be NULL */
    void *column_type_ctx;
    const type_env *hints; /* leaf column types learnt from join keys (id -> type) */
    bool *done;            /* per operator id */
    bool *busy;            /* per operator id: cycle guard */
} infer_ctx;

static size_t env_slot(const type_env *env, int64_t id) {
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (env->cap - 1);
}

static void env_put(type_env *env, int64_t id, em_type t) {
    if (id < 0 || env->failed)
        return;
    if ((env->n + 1) * 2 > env->cap) {
        size_t cap = env->cap ? env->cap * 2 : 256;
        int64_t *keys = malloc(cap * sizeof *keys);
        em_type *types = malloc(cap * sizeof *types);
        if (!keys || !types) {
            free(keys);
            free(types);
            env->failed = true;
            return;
        }
        for (size_t i = 0; i < cap; i++)
            keys[i] = -1;
        type_env grown = {keys, types, cap, 0, false};
        for (size_t i = 0; i < env->cap; i++)
            if (env->keys[i] >= 0)
                env_put(&grown, env->keys[i], env->types[i]);
        free(env->keys);
        free(env->types);
        *env = grown;
    }
    size_t i = env_slot(env, id);
    while (env->keys[i] >= 0 && env->keys[i] != id)
        i = (i + 1) & (env->cap - 1);
    if (env->keys[i] < 0)
        env->n++;
    env->keys[i] = id;
    env->types[i] = t;
}

static bool env_get(const type_env *env, int64_t id, em_type *out) {
    if (!env->cap || id < 0)
        return false;
    size_t i = env_slot(env, id);
    while (env->keys[i] >= 0) {
        if (env->keys[i] == id) {
            *out = env->types[i];
            return true;
        }
        i = (i + 1) & (env->cap - 1);
    }
    return false;
}

static void set_type(em_expr *e, em_type t) {
    e->type = t;
    e->type_known = true;
}

/* ------------------------------------------------------------------ literals */

static bool lit_is_integer(const char *s) {
    if (*s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* Precision/scale of a decimal literal's text ("0.05" -> (2,2)), false if not one. */
static bool lit_decimal(const char *s, int *prec, int *scale) {
    if (*s == '-')
        s++;
    int digits = 0, frac = 0, lead = 1;
    bool dot = false, any = false;
    for (; *s; s++) {
        if (*s == '.' && !dot) {
            dot = true;
            continue;
        }
        if (*s == 'E' || *s == 'e') {
            /* scientific: unscaled digits, scale = frac - exponent */
            int ex = atoi(s + 1);
            frac -= ex;
            break;
        }
        if (!isdigit((unsigned char)*s))
            return false;
        any = true;
        if (dot)
            frac++;
        if (*s != '0' || !lead) {
            lead = 0;
            digits++;
        } else if (dot) {
            /* leading zeros after the point are not significant */
        }
    }
    if (!any || (!dot && frac == 0))
        return false;
    if (digits == 0)
        digits = 1;
    if (frac < 0)
        frac = 0;
    *prec = digits > frac ? digits : frac;
    *scale = frac;
    return *prec <= EM_DECIMAL_MAX_PRECISION;
}

static bool lit_is_date(const char *s) {
    return strlen(s) == 10 && isdigit((unsigned char)s[0]) && isdigit((unsigned char)s[3]) &&
           s[4] == '-' && isdigit((unsigned char)s[5]) && s[7] == '-' &&
           isdigit((unsigned char)s[8]) && isdigit((unsigned char)s[9]);
}

/* Spark prints a timestamp literal unquoted with its fraction's trailing
 * zeros dropped: 2024-01-01 00:00:00, 2024-03-10 10:30:00.123456. */
static bool lit_is_timestamp(const char *s) {
    size_t n = strlen(s);
    if (n < 19 || s[10] != ' ')
        return false;
    char date[11];
    memcpy(date, s, 10);
    date[10] = '\0';
    if (!lit_is_date(date))
        return false;
    static const char shape[] = "dd:dd:dd";
    for (int i = 0; i < 8; i++) {
        char c = s[11 + i];
        if (shape[i] == 'd' ? !isdigit((unsigned char)c) : c != ':')
            return false;
    }
    if (n == 19)
        return true;
    if (s[19] != '.' || n == 20 || n > 29)
        return false;
    for (size_t i = 20; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

static int digit_count(const char *s) {
    if (*s == '-')
        s++;
    while (*s == '0' && s[1])
        s++;
    return (int)strlen(s);
}

/* The literal's type by its spelling alone. */
static em_type literal_default_type(const char *s) {
    if (strcmp(s, "null") == 0)
        return em_type_make(EM_TYPE_NULL);
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        return em_type_make(EM_TYPE_BOOLEAN);
    if (lit_is_integer(s))
        return digit_count(s) <= 9 ? em_type_make(EM_TYPE_INT) : em_type_make(EM_TYPE_LONG);
    int p, sc;
    if (lit_decimal(s, &p, &sc))
        return em_type_decimal(p, sc);
    if (lit_is_date(s))
        return em_type_make(EM_TYPE_DATE);
    if (lit_is_timestamp(s))
        return em_type_make(EM_TYPE_TIMESTAMP);
    return em_type_make(EM_TYPE_STRING);
}

static bool is_integral(em_type_id id) {
    return id == EM_TYPE_BYTE || id == EM_TYPE_SHORT || id == EM_TYPE_INT || id == EM_TYPE_LONG;
}

static bool is_fractional(em_type_id id) { return id == EM_TYPE_FLOAT || id == EM_TYPE_DOUBLE; }

/*
 * How a literal meets the typed value beside it, which decides its type when
 * that value is a decimal (Spark casts the literal and ConstantFolding folds
 * the cast, so the literal itself carries the type the rule gave it):
 */
typedef enum lit_role {
    /* arithmetic: DecimalPrecision casts an integral literal to the decimal its
     * value needs (DecimalType.fromLiteral, `2` -> decimal(1,0)); the operator's
     * result type is computed from that */
    LIT_OPERAND,
    /* a comparison: after that cast both sides go to their wider decimal
     * (DecimalPrecision's BinaryComparison rule), the literal included */
    LIT_COMPARED,
    /* a member of a coerced set (CASE branches, IN lists, coalesce, greatest,
     * least, array elements, an Expand column): TypeCoercion casts every member
     * to the set's common type */
    LIT_MEMBER,
} lit_role;

/* A literal of a structured plan whose value and type are Spark's own: its type
 * is that (the text only shows the value; a timestamp_ntz prints as a timestamp
 * does), and Spark's coercions are already folded into it. */
static bool spark_typed_literal(const em_expr *lit) {
    return lit->kind == EM_EXPR_LITERAL && lit->value_exact && lit->spark_type_known;
}

/* Gives a literal the type its context needs, as Spark's coercion made it. */
static void coerce_literal(em_expr *lit, em_type target, lit_role role) {
    if (lit->kind != EM_EXPR_LITERAL || spark_typed_literal(lit))
        return;
    const char *s = lit->text;
    if (strcmp(s, "null") == 0) {
        set_type(lit, target);
        return;
    }
    int p, sc;
    switch (target.id) {
    case EM_TYPE_DECIMAL: {
        em_type own;
        if (lit_is_integer(s) && digit_count(s) <= EM_DECIMAL_MAX_PRECISION)
            own = em_type_decimal(digit_count(s), 0);
        else if (lit_decimal(s, &p, &sc))
            own = em_type_decimal(p, sc);
        else
            break;
        set_type(lit, role == LIT_MEMBER     ? target
                      : role == LIT_COMPARED ? em_plan_wider_decimal(target, own)
                                             : own);
        break;
    }
    case EM_TYPE_DOUBLE:
    case EM_TYPE_FLOAT:
        if (lit_is_integer(s) || lit_decimal(s, &p, &sc) || strcmp(s, "NaN") == 0 ||
            strstr(s, "Infinity"))
            set_type(lit, target);
        break;
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
        if (lit_is_integer(s))
            set_type(lit, digit_count(s) > 9 && target.id != EM_TYPE_LONG
                              ? em_type_make(EM_TYPE_LONG)
                              : target);
        break;
    case EM_TYPE_STRING:
        set_type(lit, target);
        break;
    case EM_TYPE_DATE:
        if (lit_is_date(s))
            set_type(lit, target);
        break;
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        if (lit_is_timestamp(s))
            set_type(lit, target);
        break;
    case EM_TYPE_BOOLEAN:
        if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
            set_type(lit, target);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ expressions */

static void infer_node(infer_ctx *cx, em_plan_node *node);
static void infer_expr(infer_ctx *cx, em_expr *e);

static em_type wider_numeric(em_type a, em_type b) {
    if (a.id == EM_TYPE_DOUBLE || b.id == EM_TYPE_DOUBLE)
        return em_type_make(EM_TYPE_DOUBLE);
    if (a.id == EM_TYPE_FLOAT || b.id == EM_TYPE_FLOAT)
        return em_type_make(EM_TYPE_FLOAT);
    return a.id >= b.id ? a : b; /* BYTE < SHORT < INT < LONG in em_type_id */
}

static void infer_binary(infer_ctx *cx, em_expr *e) {
    em_expr *l = e->args[0], *r = e->args[1];
    infer_expr(cx, l);
    infer_expr(cx, r);
    /* literals take their partner's type */
    lit_role role = e->op == EM_OP_EQ || e->op == EM_OP_NULLSAFE_EQ || e->op == EM_OP_LT ||
                            e->op == EM_OP_LE || e->op == EM_OP_GT || e->op == EM_OP_GE
                        ? LIT_COMPARED
                        : LIT_OPERAND;
    if (l->kind == EM_EXPR_LITERAL && r->type_known)
        coerce_literal(l, r->type, role);
    if (r->kind == EM_EXPR_LITERAL && l->type_known)
        coerce_literal(r, l->type, role);
    switch (e->op) {
    case EM_OP_EQ:
    case EM_OP_NULLSAFE_EQ:
    case EM_OP_LT:
    case EM_OP_LE:
    case EM_OP_GT:
    case EM_OP_GE:
    case EM_OP_AND:
    case EM_OP_OR:
        set_type(e, em_type_make(EM_TYPE_BOOLEAN));
        return;
    default:
        break;
    }
    if (!l->type_known || !r->type_known)
        return;
    em_type lt = l->type, rt = r->type;
    if (e->op == EM_OP_INTDIV) {
        set_type(e, em_type_make(EM_TYPE_LONG));
        return;
    }
    if (e->op == EM_OP_BITAND || e->op == EM_OP_BITOR || e->op == EM_OP_BITXOR) {
        set_type(e, wider_numeric(lt, rt));
        return;
    }
    if (lt.id == EM_TYPE_DECIMAL && rt.id == EM_TYPE_DECIMAL) {
        em_type out;
        if (cx->plan->shim->decimal_binary_type(cx->plan->shim, e->op, lt, rt, &out))
            set_type(e, out);
        return;
    }
    if (lt.id == EM_TYPE_DECIMAL || rt.id == EM_TYPE_DECIMAL) {
        /* decimal with a fractional operand is double; with integers Spark casts first */
        em_type o = lt.id == EM_TYPE_DECIMAL ? rt : lt;
        if (is_fractional(o.id))
            set_type(e, em_type_make(EM_TYPE_DOUBLE));
        return;
    }
    if (e->op == EM_OP_DIV) {
        set_type(e, em_type_make(EM_TYPE_DOUBLE));
        return;
    }
    if ((is_integral(lt.id) || is_fractional(lt.id)) &&
        (is_integral(rt.id) || is_fractional(rt.id)))
        set_type(e, wider_numeric(lt, rt));
    else if (lt.id == EM_TYPE_DATE || rt.id == EM_TYPE_DATE)
        set_type(e,
                 em_type_make(e->op == EM_OP_SUB && lt.id == rt.id ? EM_TYPE_INT : EM_TYPE_DATE));
}

/* Spark's function names are case-insensitive, and it prints some in capitals
 * (prettyName: CEIL, FLOOR, EXP, SQRT, POWER), others not (ln, log10). */
static bool name_is(const em_expr *e, const char *const *names) {
    for (; *names; names++)
        if (strcasecmp(e->name, *names) == 0)
            return true;
    return false;
}

/* TypeCoercion's wider type of two decimals: max scale, max integral digits. */
em_type em_plan_wider_decimal(em_type a, em_type b) {
    int scale = a.scale > b.scale ? a.scale : b.scale;
    int ia = a.precision - a.scale, ib = b.precision - b.scale;
    return em_shim_decimal_adjust((ia > ib ? ia : ib) + scale, scale, false);
}

/*
 * The common type of values that Spark coerced to one type (CASE branches,
 * coalesce arguments): the widest non-literal type (decimals widened), then
 * the literals coerced to it. False when no value is typed.
 */
static bool common_type(em_expr **values, int n, em_type *out) {
    bool known = false;
    for (int i = 0; i < n; i++) {
        em_expr *v = values[i];
        if (!v->type_known || v->kind == EM_EXPR_LITERAL || v->type.id == EM_TYPE_NULL)
            continue;
        if (!known)
            *out = v->type;
        else if (out->id == EM_TYPE_DECIMAL && v->type.id == EM_TYPE_DECIMAL)
            *out = em_plan_wider_decimal(*out, v->type);
        else if ((is_integral(out->id) || is_fractional(out->id)) &&
                 (is_integral(v->type.id) || is_fractional(v->type.id)))
            *out = wider_numeric(*out, v->type);
        known = true;
    }
    if (!known) {
        for (int i = 0; i < n && !known; i++)
            if (values[i]->type_known && values[i]->type.id != EM_TYPE_NULL) {
                *out = values[i]->type;
                known = true;
            }
        if (!known && n > 0 && values[0]->type_known) {
            *out = values[0]->type;
            known = true;
        }
    }
    if (known)
        for (int i = 0; i < n; i++)
            coerce_literal(values[i], *out, LIT_MEMBER);
    return known;
}

/*
 * RoundBase's type for a decimal(p,s) rounded to d places (Spark 3.3 on): one
 * more integral digit than p - s (rounding may carry), and scale min(s, d) -
 * a larger d keeps the scale, as Decimal does; a negative d rounds left of the
 * point, needing at least 1 - d digits, scale 0. Bounded by 38, accepting the
 * overflow.
 */
static em_type round_decimal_type(em_type t, int d) {
    int integral = t.precision - t.scale + 1;
    if (d < 0) {
        int p = integral > 1 - d ? integral : 1 - d;
        return em_type_decimal(p > EM_DECIMAL_MAX_PRECISION ? EM_DECIMAL_MAX_PRECISION : p, 0);
    }
    int scale = d < t.scale ? d : t.scale;
    int p = integral + scale;
    return em_type_decimal(p > EM_DECIMAL_MAX_PRECISION ? EM_DECIMAL_MAX_PRECISION : p, scale);
}

static void infer_call(em_expr *e) {
    /* call forms the catalog does not hold (their expressions have kinds of
     * their own); first and last as window functions keep their input's type */
    static const char *const boolean_calls[] = {"exists", "in", "like", "rlike", "RLIKE", NULL};
    static const char *const string_arg_calls[] = {"like", "rlike", "RLIKE", NULL};
    static const char *const same_calls[] = {"first", "last", NULL};
    const em_fn_info *fi = em_fn_lookup(e->name);
    if ((fi && fi->string_args) || name_is(e, string_arg_calls))
        for (int i = 0; i < e->n_args; i++)
            coerce_literal(e->args[i], em_type_make(EM_TYPE_STRING), LIT_MEMBER);
    char rule = fi ? fi->result : name_is(e, boolean_calls) ? 'B' : name_is(e, same_calls) ? '=' : '?';
    em_type t;
    switch (rule) {
    case 'S':
        set_type(e, em_type_make(EM_TYPE_STRING));
        break;
    case 'I':
        set_type(e, em_type_make(EM_TYPE_INT));
        break;
    case 'L':
        set_type(e, em_type_make(EM_TYPE_LONG));
        break;
    case 'D':
        set_type(e, em_type_make(EM_TYPE_DOUBLE));
        break;
    case 'T':
        set_type(e, em_type_make(EM_TYPE_DATE));
        break;
    case 'B':
        set_type(e, em_type_make(EM_TYPE_BOOLEAN));
        break;
    case '=':
        if (e->n_args >= 1 && e->args[0]->type_known)
            set_type(e, e->args[0]->type);
        break;
    case 'c':
        if (common_type(e->args, e->n_args, &t))
            set_type(e, t);
        break;
    case 'f':
        if (e->n_args == 1 && e->args[0]->type_known &&
            em_shim_floor_ceil_type(e->args[0]->type, &t))
            set_type(e, t);
        break;
    case 'r':
        if (e->n_args < 1 || !e->args[0]->type_known)
            break;
        t = e->args[0]->type;
        if (t.id != EM_TYPE_DECIMAL) {
            set_type(e, t);
        } else if (e->n_args < 2 || (e->args[1]->kind == EM_EXPR_LITERAL &&
                                     lit_is_integer(e->args[1]->text) &&
                                     digit_count(e->args[1]->text) <= 9)) {
            set_type(e, round_decimal_type(t, e->n_args >= 2 ? atoi(e->args[1]->text) : 0));
        }
        break;
    default: /* the function's own rule */
        if (strcmp(e->name, "CheckOverflow") == 0 && e->n_args >= 2 &&
            e->args[1]->cast_type_known) {
            set_type(e, e->args[1]->cast_type);
        } else if (strcmp(e->name, "UnscaledValue") == 0 || strcmp(e->name, "xxhash64") == 0) {
            set_type(e, em_type_make(EM_TYPE_LONG));
        } else if (strcmp(e->name, "MakeDecimal") == 0 && e->n_args >= 3 &&
                   e->args[1]->kind == EM_EXPR_LITERAL && e->args[2]->kind == EM_EXPR_LITERAL) {
            int p = atoi(e->args[1]->text), s = atoi(e->args[2]->text);
            if (p >= 1 && p <= EM_DECIMAL_MAX_PRECISION && s >= 0 && s <= p) {
                set_type(e, em_type_decimal(p, s));
                set_type(e->args[1], em_type_make(EM_TYPE_INT));
                set_type(e->args[2], em_type_make(EM_TYPE_INT));
            }
        } else if (strcmp(e->name, "array") == 0) {
            /* CreateArray: the elements are of one type (an array is not a type here) */
            (void)common_type(e->args, e->n_args, &t);
        }
        break;
    }
    /* integer arguments of string/date functions (substring(x, 1, 2), date_add(d, 7)) */
    for (int i = 1; i < e->n_args; i++)
        if (e->args[i]->kind == EM_EXPR_LITERAL && !e->args[i]->type_known &&
            lit_is_integer(e->args[i]->text))
            set_type(e->args[i], em_type_make(EM_TYPE_INT));
}

/* Result type of an aggregate function over its input type. */
static bool agg_result_type(const em_expr *e, em_type *out) {
    const char *n = e->name;
    if (strcmp(n, "count") == 0 || strcmp(n, "count_if") == 0 ||
        strcmp(n, "approx_count_distinct") == 0) {
        *out = em_type_make(EM_TYPE_LONG);
        return true;
    }
    if (e->n_args < 1 || !e->args[0]->type_known)
        return false;
    em_type t = e->args[0]->type;
    if (strcmp(n, "sum") == 0 || strcmp(n, "try_sum") == 0) {
        if (t.id == EM_TYPE_DECIMAL)
            *out = em_type_decimal(t.precision + 10 > EM_DECIMAL_MAX_PRECISION
                                       ? EM_DECIMAL_MAX_PRECISION
                                       : t.precision + 10,
                                   t.scale);
        else if (is_integral(t.id))
            *out = em_type_make(EM_TYPE_LONG);
        else
            *out = em_type_make(EM_TYPE_DOUBLE);
        return true;
    }
    if (strcmp(n, "avg") == 0 || strcmp(n, "try_avg") == 0) {
        if (t.id == EM_TYPE_DECIMAL)
            *out = em_shim_decimal_adjust(t.precision + 4, t.scale + 4, false);
        else
            *out = em_type_make(EM_TYPE_DOUBLE);
        return true;
    }
    if (strcmp(n, "min") == 0 || strcmp(n, "max") == 0 || strcmp(n, "first") == 0 ||
        strcmp(n, "last") == 0 || strcmp(n, "any_value") == 0 || strcmp(n, "first_value") == 0 ||
        strcmp(n, "last_value") == 0 || strcmp(n, "mode") == 0) {
        *out = t;
        return true;
    }
    if (strncmp(n, "stddev", 6) == 0 || strncmp(n, "var", 3) == 0 || strcmp(n, "corr") == 0 ||
        strncmp(n, "covar", 5) == 0 || strcmp(n, "skewness") == 0 || strcmp(n, "kurtosis") == 0 ||
        strcmp(n, "median") == 0 || strcmp(n, "percentile") == 0) {
        *out = em_type_make(EM_TYPE_DOUBLE);
        return true;
    }
    if (strcmp(n, "bool_and") == 0 || strcmp(n, "bool_or") == 0 || strcmp(n, "every") == 0 ||
        strcmp(n, "any") == 0 || strcmp(n, "some") == 0) {
        *out = em_type_make(EM_TYPE_BOOLEAN);
        return true;
    }
    return false;
}

/* Types of an aggregate's buffer attributes (Aggregate Attributes of a partial
 * aggregate); returns how many, 0 when unknown. */
int em_plan_agg_buffer_types(const em_expr *e, em_type *out, int cap) {
    em_type r;
    if (cap < 3 || !agg_result_type(e, &r))
        return 0;
    const char *n = e->name;
    if (strcmp(n, "sum") == 0) {
        out[0] = r;
        if (r.id != EM_TYPE_DECIMAL)
            return 1;
        out[1] = em_type_make(EM_TYPE_BOOLEAN); /* isEmpty */
        return 2;
    }
    if (strcmp(n, "avg") == 0) {
        em_type t = e->args[0]->type;
        out[0] = t.id == EM_TYPE_DECIMAL
                     ? em_type_decimal(t.precision + 10 > EM_DECIMAL_MAX_PRECISION
                                           ? EM_DECIMAL_MAX_PRECISION
                                           : t.precision + 10,
                                       t.scale)
                     : em_type_make(EM_TYPE_DOUBLE);
        out[1] = em_type_make(EM_TYPE_LONG);
        return 2;
    }
    if (strcmp(n, "count") == 0 || strcmp(n, "min") == 0 || strcmp(n, "max") == 0) {
        out[0] = r;
        return 1;
    }
    if (strcmp(n, "first") == 0 || strcmp(n, "last") == 0) {
        out[0] = r;
        out[1] = em_type_make(EM_TYPE_BOOLEAN); /* valueSet */
        return 2;
    }
    if (strncmp(n, "stddev", 6) == 0 || strncmp(n, "var", 3) == 0) {
        out[0] = out[1] = out[2] = em_type_make(EM_TYPE_DOUBLE); /* n, avg, m2 */
        return 3;
    }
    return 0;
}

/* The tree computing a scalar subquery with this expression id. */
static em_plan_node *find_subquery_tree(em_plan *plan, const em_expr *e) {
    for (int i = 0; i < plan->n_subqueries; i++) {
        const em_plan_subquery *sq = &plan->subqueries[i];
        const em_expr *x = sq->expr;
        if (x->kind == e->kind && x->id == e->id && sq->target &&
            (e->kind != EM_EXPR_IN_SUBQUERY || strcmp(x->name, e->name) == 0))
            return (em_plan_node *)sq->target;
    }
    return NULL;
}

/*
 * struct.field where the struct is built by named_struct(name1, value1, ...)
 * (merged scalar subqueries read `Subquery scalar-subquery#N, [id=#M].count(1)`):
 * the field's type is the value's whose printed name matches.
 */
static void field_type(em_expr *e) {
    const em_expr *s = e->args[0];
    if (s->kind == EM_EXPR_SCALAR_SUBQUERY && s->subquery && s->subquery->n_output == 1)
        s = s->subquery->output[0];
    while (s->kind == EM_EXPR_ALIAS)
        s = s->args[0];
    if (s->kind != EM_EXPR_CALL || strcmp(s->name, "named_struct") != 0)
        return;
    for (int i = 0; i + 1 < s->n_args; i += 2) {
        plan_buf name = {0};
        em_plan_print_expr(&name, s->args[i], &em_shim_spark41);
        bool match = name.data && strcmp(name.data, e->name) == 0;
        free(name.data);
        if (match) {
            if (s->args[i + 1]->type_known)
                set_type(e, s->args[i + 1]->type);
            return;
        }
    }
}

/* The one type every scan's ReadSchema gives a column of this name. */
static bool column_type_by_name(const infer_ctx *cx, const char *name, em_type *out) {
    bool found = false;
    for (int id = 0; name && id <= cx->plan->max_id; id++) {
        const em_plan_node *n = cx->plan->by_id[id];
        if (!n || n->kind != EM_NODE_SCAN)
            continue;
        const em_plan_field *rs = em_plan_node_field(n, EM_FIELD_READ_SCHEMA);
        for (int k = 0; rs && k < rs->n_schema; k++) {
            if (!rs->schema[k].type_known || strcmp(rs->schema[k].name, name) != 0)
                continue;
            if (found && !em_type_equal(*out, rs->schema[k].type))
                return false;
            *out = rs->schema[k].type;
            found = true;
        }
    }
    return found;
}

static void infer_expr(infer_ctx *cx, em_expr *e) {
    if (!e)
        return;
    if (e->kind == EM_EXPR_ATTR) {
        em_type t;
        if (env_get(&cx->env, e->id, &t)) {
            set_type(e, t);
        } else if (e->long_suffix) {
            set_type(e, em_type_make(EM_TYPE_LONG)); /* Spark prints `L` after long ids */
        } else if (!env_get(&cx->defined, e->id, &t) && e->spark_type_known) {
            /* structured plans: an attribute no written operator defines (an aggregate's
             * input below a reused exchange) is still an attribute, of the type Spark gave */
            set_type(e, e->spark_type);
        } else if (!env_get(&cx->defined, e->id, &t) && column_type_by_name(cx, e->name, &t)) {
            /* text plans: a final aggregate above a ReusedExchange names its
             * functions' inputs by the ids of the subtree it reuses, which no
             * printed operator defines; a scan column of that name types it */
            set_type(e, t);
        } else if (!env_get(&cx->defined, e->id, &t)) {
            /* no operator defines it: literal text containing '#digits' */
            char *text = em_plan_arena_alloc(&cx->plan->arena, strlen(e->name) + 24);
            if (!text)
                return;
            snprintf(text, strlen(e->name) + 24, "%s#%lld%s", e->name, (long long)e->id,
                     e->long_suffix ? "L" : "");
            e->kind = EM_EXPR_LITERAL;
            e->text = text;
            set_type(e, em_type_make(EM_TYPE_STRING));
        }
        return;
    }
    for (int i = 0; i < e->n_args; i++)
        if (e->kind != EM_EXPR_BINARY)
            infer_expr(cx, e->args[i]);
    switch (e->kind) {
    case EM_EXPR_LITERAL:
        if (!e->type_known)
            set_type(e, spark_typed_literal(e) ? e->spark_type : literal_default_type(e->text));
        break;
    case EM_EXPR_BINARY:
        infer_binary(cx, e);
        break;
    case EM_EXPR_NOT:
    case EM_EXPR_IN_SUBQUERY:
        set_type(e, em_type_make(EM_TYPE_BOOLEAN));
        break;
    case EM_EXPR_IN:
    case EM_EXPR_INSET:
    case EM_EXPR_LIKE:
        if (e->args[0]->type_known)
            for (int i = 1; i < e->n_args; i++)
                coerce_literal(e->args[i], e->args[0]->type, LIT_MEMBER);
        set_type(e, em_type_make(EM_TYPE_BOOLEAN));
        break;
    case EM_EXPR_CASE: {
        int pairs = (e->n_args - (e->has_else ? 1 : 0)) / 2;
        for (int i = 0; i < pairs; i++)
            coerce_literal(e->args[2 * i], em_type_make(EM_TYPE_BOOLEAN), LIT_MEMBER);
        /* the branches' common type; literal branches follow it */
        em_expr **values = em_plan_arena_alloc(&cx->plan->arena, (size_t)e->n_args * sizeof *values);
        if (!values)
            break;
        int nv = 0;
        for (int i = 0; i < e->n_args; i++)
            if (i >= 2 * pairs || (i % 2) == 1)
                values[nv++] = e->args[i];
        em_type t;
        if (common_type(values, nv, &t))
            set_type(e, t);
        break;
    }
    case EM_EXPR_CAST:
    case EM_EXPR_BOUND_REF:
        if (e->cast_type_known)
            set_type(e, e->cast_type);
        break;
    case EM_EXPR_ALIAS:
        /* `null AS k#5L`: the `L` says bigint, and the literal is Literal(null, LongType) */
        if (e->long_suffix && e->args[0]->kind == EM_EXPR_LITERAL)
            coerce_literal(e->args[0], em_type_make(EM_TYPE_LONG), LIT_MEMBER);
        if (e->args[0]->type_known) {
            set_type(e, e->args[0]->type);
            env_put(&cx->env, e->id, e->type);
        }
        break;
    case EM_EXPR_SORT_ORDER:
    case EM_EXPR_NEGATE:
        if (e->args[0]->type_known)
            set_type(e, e->args[0]->type);
        break;
    case EM_EXPR_WINDOW:
        if (e->args[0]->type_known)
            set_type(e, e->args[0]->type);
        break;
    case EM_EXPR_CALL:
        infer_call(e);
        break;
    case EM_EXPR_AGG: {
        /* the percentage of percentile/percentile_approx is a double (a decimal literal
         * cast and folded by Spark, printed as 0.5) */
        if ((strcmp(e->name, "percentile_approx") == 0 ||
             strcmp(e->name, "approx_percentile") == 0 || strcmp(e->name, "percentile") == 0) &&
            e->n_args >= 2)
            coerce_literal(e->args[1], em_type_make(EM_TYPE_DOUBLE), LIT_MEMBER);
        em_type t;
        if (agg_result_type(e, &t))
            set_type(e, t);
        break;
    }
    case EM_EXPR_SCALAR_SUBQUERY: {
        em_plan_node *root = find_subquery_tree(cx->plan, e);
        e->subquery = root;
        if (root) {
            infer_node(cx, root);
            if (root->n_output == 1 && root->output[0]->type_known)
                set_type(e, root->output[0]->type);
        }
        break;
    }
    case EM_EXPR_FIELD:
        field_type(e);
        break;
    default:
        break;
    }
    if (e->kind == EM_EXPR_IN_SUBQUERY) {
        em_plan_node *root = find_subquery_tree(cx->plan, e);
        e->subquery = root;
        if (root)
            infer_node(cx, root);
    }
}

/* ------------------------------------------------------------------ operators */

static em_plan_field *field_of(em_plan_node *node, em_field_kind kind) {
    return (em_plan_field *)em_plan_node_field(node, kind);
}

static void set_output(infer_ctx *cx, em_plan_node *node, em_expr **items, int n) {
    node->output = items;
    node->n_output = n;
    (void)cx;
}

/* Output of a list of named expressions: aliases and attributes. */
static void output_from_list(infer_ctx *cx, em_plan_node *node, em_expr **items, int n) {
    em_expr **out = em_plan_arena_alloc(&cx->plan->arena, (size_t)(n ? n : 1) * sizeof *out);
    if (!out)
        return;
    for (int i = 0; i < n; i++)
        out[i] = items[i];
    set_output(cx, node, out, n);
}

/* A Union's column that its first child gives as a bare null (Spark prints a
 * null cast to the union's type as `null`) takes the type another child
 * gives it; the output attribute is the union's own copy then. */
static void union_types(infer_ctx *cx, em_plan_node *node) {
    for (int i = 0; i < node->n_output; i++) {
        const em_expr *a = node->output[i];
        if (!a->type_known || a->type.id != EM_TYPE_NULL)
            continue;
        for (int c = 1; c < node->n_children; c++) {
            const em_plan_node *k = node->children[c];
            if (i >= k->n_output || !k->output[i]->type_known ||
                k->output[i]->type.id == EM_TYPE_NULL)
                continue;
            em_expr *copy = em_plan_arena_alloc(&cx->plan->arena, sizeof *copy);
            if (!copy)
                return;
            *copy = *a;
            set_type(copy, k->output[i]->type);
            node->output[i] = copy;
            env_put(&cx->env, copy->id, copy->type);
            break;
        }
    }
}

static void concat_outputs(infer_ctx *cx, em_plan_node *node, const em_plan_node *a,
                           const em_plan_node *b, em_expr *extra) {
    int n = (a ? a->n_output : 0) + (b ? b->n_output : 0) + (extra ? 1 : 0);
    em_expr **out = em_plan_arena_alloc(&cx->plan->arena, (size_t)(n ? n : 1) * sizeof *out);
    if (!out)
        return;
    int k = 0;
    for (int i = 0; a && i < a->n_output; i++)
        out[k++] = a->output[i];
    for (int i = 0; b && i < b->n_output; i++)
        out[k++] = b->output[i];
    if (extra)
        out[k++] = extra;
    set_output(cx, node, out, k);
}

/* Defines each attribute of items by position from types (unknown when NULL). */
static void define_by_position(infer_ctx *cx, em_expr **items, int n, em_expr *const *from,
                               int n_from) {
    for (int i = 0; i < n && i < n_from; i++) {
        em_expr *a = items[i];
        if (a->kind == EM_EXPR_ATTR && from[i]->type_known) {
            set_type(a, a->long_suffix ? em_type_make(EM_TYPE_LONG) : from[i]->type);
            env_put(&cx->env, a->id, a->type);
        }
    }
}

/* Expand: each output column's type from the first projection typing it (others may
 * hold null there). */
static void define_expand_outputs(infer_ctx *cx, em_expr *attrs, const em_expr *projections) {
    for (int i = 0; i < attrs->n_args; i++) {
        em_expr *a = attrs->args[i];
        if (a->kind != EM_EXPR_ATTR)
            continue;
        em_expr **column =
            em_plan_arena_alloc(&cx->plan->arena, (size_t)(projections->n_args + 1) * sizeof *column);
        if (!column)
            return;
        int nc = 0;
        for (int k = 0; k < projections->n_args; k++) {
            const em_expr *proj = projections->args[k];
            if (proj->kind == EM_EXPR_LIST && i < proj->n_args)
                column[nc++] = proj->args[i];
        }
        em_type t;
        if (common_type(column, nc, &t))
            set_type(a, t);
        if (a->long_suffix)
            set_type(a, em_type_make(EM_TYPE_LONG));
        if (!a->type_known)
            continue;
        /* the column's literals are of its type: Expand's nulls are Literal(null, the
         * attribute's type), a grouping id is a bigint literal printed without `L` */
        for (int k = 0; k < nc; k++)
            coerce_literal(column[k], a->type, LIT_MEMBER);
        env_put(&cx->env, a->id, a->type);
    }
}

/* Scans type their output from ReadSchema by column name; LocalTableScan prints no
 * types. The caller's column_type may override either. */
static void infer_leaf(infer_ctx *cx, em_plan_node *node) {
    em_plan_field *out = field_of(node, EM_FIELD_OUTPUT);
    em_plan_field *rs = field_of(node, EM_FIELD_READ_SCHEMA);
    if (!out)
        return;
    for (int i = 0; i < out->n_exprs; i++) {
        em_expr *a = out->exprs[i];
        if (a->kind != EM_EXPR_ATTR)
            continue;
        for (int k = 0; rs && k < rs->n_schema; k++) {
            if (rs->schema[k].type_known && strcasecmp(rs->schema[k].name, a->name) == 0) {
                set_type(a, rs->schema[k].type);
                break;
            }
        }
        em_type t;
        if (cx->column_type && cx->column_type(cx->column_type_ctx, node, a->name, &t))
            set_type(a, t);
        else if (!a->type_known && a->long_suffix)
            set_type(a, em_type_make(EM_TYPE_LONG));
        else if (!a->type_known && env_get(cx->hints, a->id, &t))
            set_type(a, t);
        if (a->type_known)
            env_put(&cx->env, a->id, a->type);
    }
    output_from_list(cx, node, out->exprs, out->n_exprs);
}

static const em_plan_node *below_wrappers(const em_plan_node *n) {
    while (n && em_node_kind_is_wrapper(n->kind) && n->n_children == 1)
        n = n->children[0];
    return n;
}

/* Types the attributes of `mine` that nothing defines from the same places of
 * `theirs`, a typed expression of the same shape. */
static void define_alike(infer_ctx *cx, const em_expr *mine, const em_expr *theirs) {
    em_type t;
    if (!mine || !theirs || mine->kind != theirs->kind)
        return;
    if (mine->kind == EM_EXPR_ATTR) {
        if (theirs->type_known && !env_get(&cx->env, mine->id, &t) &&
            !env_get(&cx->defined, mine->id, &t))
            env_put(&cx->env, mine->id, theirs->type);
        return;
    }
    for (int i = 0; i < mine->n_args && i < theirs->n_args; i++)
        define_alike(cx, mine->args[i], theirs->args[i]);
}

/* A final aggregate above a ReusedExchange names its functions' inputs by ids
 * of a subtree nobody printed (the copy Spark replaced by the reuse). The
 * partial aggregate under the reused exchange computes the same functions in
 * the same order (it is what fills the buffers the final one merges), so each
 * input takes the type of the input at the same place there. */
static void type_inputs_through_reuse(infer_ctx *cx, const em_plan_node *node,
                                      const em_plan_field *fns) {
    const em_plan_node *r = below_wrappers(node->n_children ? node->children[0] : NULL);
    if (!r || r->kind != EM_NODE_REUSED_EXCHANGE || !r->reuses || r->reuses->n_children != 1)
        return;
    const em_plan_node *partial = below_wrappers(r->reuses->children[0]);
    const em_plan_field *theirs = partial ? em_plan_node_field(partial, EM_FIELD_FUNCTIONS) : NULL;
    if (!theirs || theirs->n_exprs != fns->n_exprs)
        return;
    for (int i = 0; i < fns->n_exprs; i++) {
        const em_expr *a = fns->exprs[i], *b = theirs->exprs[i];
        if (a->kind != EM_EXPR_AGG || b->kind != EM_EXPR_AGG || a->mode != EM_AGG_FINAL ||
            b->mode == EM_AGG_FINAL || strcmp(a->name, b->name) != 0)
            return; /* not the pair that shares buffers */
    }
    for (int i = 0; i < fns->n_exprs; i++)
        define_alike(cx, fns->exprs[i], theirs->exprs[i]);
}

static void infer_aggregate(infer_ctx *cx, em_plan_node *node) {
    em_plan_field *keys = field_of(node, EM_FIELD_KEYS);
    em_plan_field *fns = field_of(node, EM_FIELD_FUNCTIONS);
    em_plan_field *attrs = field_of(node, EM_FIELD_AGG_ATTRS);
    em_plan_field *results = field_of(node, EM_FIELD_RESULTS);
    if (keys)
        for (int i = 0; i < keys->n_exprs; i++)
            infer_expr(cx, keys->exprs[i]);
    if (fns)
        type_inputs_through_reuse(cx, node, fns);
    bool partial = false;
    if (fns)
        for (int i = 0; i < fns->n_exprs; i++) {
            infer_expr(cx, fns->exprs[i]);
            if (fns->exprs[i]->kind == EM_EXPR_AGG && fns->exprs[i]->mode != EM_AGG_FINAL)
                partial = true;
        }
    if (attrs && fns) {
        int k = 0;
        for (int i = 0; i < fns->n_exprs && k < attrs->n_exprs; i++) {
            em_expr *f = fns->exprs[i];
            em_type buf[3];
            int nb = 0;
            if (partial && f->kind == EM_EXPR_AGG) {
                nb = em_plan_agg_buffer_types(f, buf, 3);
            } else if (f->type_known) {
                buf[0] = f->type;
                nb = 1;
            }
            if (nb == 0)
                break; /* unknown layout: positions after it cannot be trusted */
            for (int j = 0; j < nb && k < attrs->n_exprs; j++, k++) {
                em_expr *a = attrs->exprs[k];
                if (a->kind == EM_EXPR_ATTR) {
                    set_type(a, buf[j]);
                    env_put(&cx->env, a->id, a->type);
                }
            }
        }
    }
    if (!results)
        return;
    int n_keys = keys ? keys->n_exprs : 0;
    for (int i = 0; i < results->n_exprs; i++) {
        em_expr *r = results->exprs[i];
        em_type t;
        if (partial && r->kind == EM_EXPR_ATTR && !env_get(&cx->env, r->id, &t) && attrs &&
            i >= n_keys && i - n_keys < attrs->n_exprs && attrs->exprs[i - n_keys]->type_known) {
            set_type(r, attrs->exprs[i - n_keys]->type);
            env_put(&cx->env, r->id, r->type);
        } else {
            infer_expr(cx, r);
        }
    }
    output_from_list(cx, node, results->exprs, results->n_exprs);
}

static em_expr *arg_list(em_plan_field *args, int index) {
    if (!args || index >= args->n_exprs || args->exprs[index]->kind != EM_EXPR_LIST)
        return NULL;
    return args->exprs[index];
}

static void infer_all_fields(infer_ctx *cx, em_plan_node *node) {
    for (int f = 0; f < node->n_fields; f++) {
        em_plan_field *fl = &node->fields[f];
        if (fl->kind == EM_FIELD_PUSHED_FILTERS || fl->kind == EM_FIELD_DATA_FILTERS)
            continue; /* data source filter syntax: column names, not expressions */
        for (int i = 0; i < fl->n_exprs; i++)
            infer_expr(cx, fl->exprs[i]);
    }
}

bool em_plan_output_given(const em_plan_node *node) {
    /* structured plans only (source_index set): fragment inputs, query stages read without
     * their plans, and operators of unknown classes (their output is what Spark says) */
    return node->source_index >= 0 &&
           (node->is_input || node->kind == EM_NODE_UNKNOWN ||
            ((node->kind == EM_NODE_SHUFFLE_QUERY_STAGE ||
              node->kind == EM_NODE_BROADCAST_QUERY_STAGE) &&
             node->n_children == 0));
}

static void infer_node(infer_ctx *cx, em_plan_node *node) {
    if (node && node->kind == EM_NODE_AQE_SECTION) {
        for (int i = 0; i < node->n_children; i++)
            infer_node(cx, node->children[i]);
        if (node->n_children)
            output_from_list(cx, node, node->children[0]->output, node->children[0]->n_output);
        return;
    }
    if (!node || node->id < 0 || node->id > cx->plan->max_id || cx->done[node->id] ||
        cx->busy[node->id])
        return;
    cx->busy[node->id] = true;
    for (int i = 0; i < node->n_children; i++)
        infer_node(cx, node->children[i]);
    const em_plan_node *child = node->n_children ? node->children[0] : NULL;
    em_plan_field *output = field_of(node, EM_FIELD_OUTPUT);
    em_plan_field *input = field_of(node, EM_FIELD_INPUT);
    em_plan_field *args = field_of(node, EM_FIELD_ARGUMENTS);
    if (em_plan_output_given(node)) {
        /* a fragment input, a query stage read without its plan, an operator of a class
         * the reader does not know: the output is given, typed from Spark's types */
        infer_all_fields(cx, node);
        for (int i = 0; i < node->n_output; i++) {
            em_expr *a = node->output[i];
            if (!a->type_known && a->long_suffix)
                set_type(a, em_type_make(EM_TYPE_LONG));
            if (a->type_known)
                env_put(&cx->env, a->id, a->type);
        }
        cx->busy[node->id] = false;
        cx->done[node->id] = true;
        return;
    }
    switch (node->kind) {
    case EM_NODE_SCAN:
    case EM_NODE_LOCAL_TABLE_SCAN:
        infer_leaf(cx, node);
        infer_all_fields(cx, node);
        break;
    case EM_NODE_HASH_AGGREGATE:
    case EM_NODE_SORT_AGGREGATE:
    case EM_NODE_OBJECT_HASH_AGGREGATE:
        if (input)
            for (int i = 0; i < input->n_exprs; i++)
                infer_expr(cx, input->exprs[i]);
        infer_aggregate(cx, node);
        break;
    case EM_NODE_REUSED_EXCHANGE:
        if (node->reuses) {
            infer_node(cx, (em_plan_node *)node->reuses);
            if (output)
                define_by_position(cx, output->exprs, output->n_exprs, node->reuses->output,
                                   node->reuses->n_output);
        }
        if (output)
            output_from_list(cx, node, output->exprs, output->n_exprs);
        break;
    case EM_NODE_BROADCAST_HASH_JOIN:
    case EM_NODE_SORT_MERGE_JOIN:
    case EM_NODE_SHUFFLED_HASH_JOIN:
    case EM_NODE_BROADCAST_NESTED_LOOP_JOIN:
    case EM_NODE_CARTESIAN_PRODUCT: {
        const em_plan_node *l = node->n_children > 0 ? node->children[0] : NULL;
        const em_plan_node *r = node->n_children > 1 ? node->children[1] : NULL;
        em_expr *exists = NULL;
        if (node->join_type == EM_JOIN_EXISTENCE && node->exists_attr) {
            exists = (em_expr *)node->exists_attr;
            set_type(exists, em_type_make(EM_TYPE_BOOLEAN));
            env_put(&cx->env, exists->id, exists->type);
        }
        infer_all_fields(cx, node);
        if (node->join_type == EM_JOIN_LEFT_SEMI || node->join_type == EM_JOIN_LEFT_ANTI)
            concat_outputs(cx, node, l, NULL, NULL);
        else if (node->join_type == EM_JOIN_EXISTENCE)
            concat_outputs(cx, node, l, NULL, exists);
        else
            concat_outputs(cx, node, l, r, NULL);
        break;
    }
    case EM_NODE_TAKE_ORDERED_AND_PROJECT: {
        infer_all_fields(cx, node);
        em_expr *proj = arg_list(args, 2);
        if (proj)
            output_from_list(cx, node, proj->args, proj->n_args);
        else if (input)
            output_from_list(cx, node, input->exprs, input->n_exprs);
        break;
    }
    case EM_NODE_EXPAND: {
        infer_all_fields(cx, node);
        em_expr *projections = arg_list(args, 0);
        em_expr *attrs = args && args->n_exprs ? args->exprs[args->n_exprs - 1] : NULL;
        if (attrs && attrs->kind == EM_EXPR_LIST) {
            if (projections)
                define_expand_outputs(cx, attrs, projections);
            output_from_list(cx, node, attrs->args, attrs->n_args);
        }
        break;
    }
    case EM_NODE_WINDOW: {
        infer_all_fields(cx, node);
        em_expr *wins = arg_list(args, 0);
        int n_in = input ? input->n_exprs : (child ? child->n_output : 0);
        int n_w = wins ? wins->n_args : 0;
        em_expr **out = em_plan_arena_alloc(&cx->plan->arena, (size_t)(n_in + n_w + 1) * sizeof *out);
        if (!out)
            break;
        for (int i = 0; i < n_in; i++)
            out[i] = input ? input->exprs[i] : child->output[i];
        for (int i = 0; i < n_w; i++)
            out[n_in + i] = wins->args[i];
        set_output(cx, node, out, n_in + n_w);
        break;
    }
    case EM_NODE_UNION:
        infer_all_fields(cx, node);
        if (child) {
            output_from_list(cx, node, child->output, child->n_output);
            union_types(cx, node);
        }
        break;
    default:
        infer_all_fields(cx, node);
        if (output)
            output_from_list(cx, node, output->exprs, output->n_exprs);
        else if (input)
            output_from_list(cx, node, input->exprs, input->n_exprs);
        else if (child)
            output_from_list(cx, node, child->output, child->n_output);
        break;
    }
    cx->busy[node->id] = false;
    cx->done[node->id] = true;
}

/* Marks the ids of attributes that operators produce: list fields and aliases. */
static void collect_defined(type_env *set, const em_expr *e, bool listed) {
    if (e->kind == EM_EXPR_ATTR && listed)
        env_put(set, e->id, em_type_make(EM_TYPE_NULL));
    if (e->kind == EM_EXPR_ALIAS)
        env_put(set, e->id, em_type_make(EM_TYPE_NULL));
    for (int i = 0; i < e->n_args; i++)
        collect_defined(set, e->args[i], e->kind == EM_EXPR_LIST && listed);
}

static void collect_all_defined(em_plan *plan, type_env *set) {
    for (int id = 1; id <= plan->max_id; id++) {
        const em_plan_node *node = plan->by_id[id];
        if (!node)
            continue;
        if (node->exists_attr)
            env_put(set, node->exists_attr->id, em_type_make(EM_TYPE_BOOLEAN));
        if (em_plan_output_given(node))
            for (int i = 0; i < node->n_output; i++)
                collect_defined(set, node->output[i], true);
        for (int f = 0; f < node->n_fields; f++) {
            const em_plan_field *fl = &node->fields[f];
            bool listed = fl->kind == EM_FIELD_OUTPUT || fl->kind == EM_FIELD_INPUT ||
                          fl->kind == EM_FIELD_AGG_ATTRS || fl->kind == EM_FIELD_RESULTS ||
                          fl->kind == EM_FIELD_ARGUMENTS;
            for (int i = 0; i < fl->n_exprs; i++)
                collect_defined(set, fl->exprs[i], listed && fl->kind != EM_FIELD_ARGUMENTS);
            if (fl->kind == EM_FIELD_ARGUMENTS)
                for (int i = 0; i < fl->n_exprs; i++)
                    if (fl->exprs[i]->kind == EM_EXPR_LIST)
                        collect_defined(set, fl->exprs[i], true);
        }
    }
}

static void infer_pass(em_plan *plan, em_plan_column_type_fn column_type, void *ctx,
                       const type_env *hints) {
    infer_ctx cx = {
        .plan = plan, .column_type = column_type, .column_type_ctx = ctx, .hints = hints};
    collect_all_defined(plan, &cx.defined);
    cx.done = calloc((size_t)plan->max_id + 1, sizeof *cx.done);
    cx.busy = calloc((size_t)plan->max_id + 1, sizeof *cx.busy);
    if (!cx.done || !cx.busy) {
        plan->arena.failed = true;
    } else {
        /* subquery trees first: the main tree reads their results */
        for (int i = 0; i < plan->n_subqueries; i++)
            infer_node(&cx, plan->subqueries[i].root);
        infer_node(&cx, plan->root);
        for (int i = 0; i < plan->n_subqueries; i++)
            infer_expr(&cx, plan->subqueries[i].expr);
    }
    if (cx.env.failed || cx.defined.failed)
        plan->arena.failed = true;
    free(cx.defined.keys);
    free(cx.defined.types);
    free(cx.env.keys);
    free(cx.env.types);
    free(cx.done);
    free(cx.busy);
}

/*
 * Join keys have one type (Spark coerced them before planning), so an untyped
 * key attribute - typically a partition column, which ReadSchema omits - takes
 * its partner's type. Returns how many new hints were recorded.
 */
static int collect_join_hints(const em_plan *plan, type_env *hints) {
    int added = 0;
    em_type t;
    for (int id = 1; id <= plan->max_id; id++) {
        const em_plan_node *n = plan->by_id[id];
        const em_plan_field *lk = n ? em_plan_node_field(n, EM_FIELD_LEFT_KEYS) : NULL;
        const em_plan_field *rk = n ? em_plan_node_field(n, EM_FIELD_RIGHT_KEYS) : NULL;
        if (!lk || !rk || lk->n_exprs != rk->n_exprs)
            continue;
        for (int i = 0; i < lk->n_exprs; i++) {
            const em_expr *l = lk->exprs[i], *r = rk->exprs[i];
            for (int side = 0; side < 2; side++) {
                const em_expr *a = side ? r : l, *b = side ? l : r;
                if (a->kind == EM_EXPR_ATTR && !a->type_known && b->type_known &&
                    !env_get(hints, a->id, &t)) {
                    env_put(hints, a->id, b->type);
                    added++;
                }
            }
        }
    }
    return hints->failed ? 0 : added;
}

void em_plan_infer(em_plan *plan, em_plan_column_type_fn column_type, void *ctx) {
    type_env hints = {0};
    for (int pass = 0; pass < 4; pass++) {
        infer_pass(plan, column_type, ctx, &hints);
        if (plan->arena.failed || pass == 3 || collect_join_hints(plan, &hints) == 0)
            break;
        em_plan_reset_types(plan); /* again, with the join keys' types on the leaves */
    }
    if (hints.failed)
        plan->arena.failed = true;
    free(hints.keys);
    free(hints.types);
}

/* ------------------------------------------------------------------ evidence from types */

static bool is_arith(em_binop op) {
    return op == EM_OP_ADD || op == EM_OP_SUB || op == EM_OP_MUL || op == EM_OP_DIV ||
           op == EM_OP_REM;
}

static int count_unwrapped(const em_expr *e, bool wrapped) {
    int n = 0;
    if (e->kind == EM_EXPR_BINARY && is_arith(e->op) && !wrapped && e->args[0]->type_known &&
        e->args[1]->type_known && e->args[0]->type.id == EM_TYPE_DECIMAL &&
        e->args[1]->type.id == EM_TYPE_DECIMAL)
        n++;
    bool wraps = e->kind == EM_EXPR_CALL && strcmp(e->name, "CheckOverflow") == 0;
    for (int i = 0; i < e->n_args; i++)
        n += count_unwrapped(e->args[i], wraps && i == 0);
    return n;
}

int em_plan_count_unwrapped_decimal_arith(em_plan *plan) {
    em_dialect_evidence *ev = &plan->evidence;
    if (ev->check_overflow_2 || ev->check_overflow_3 || ev->promote_precision)
        return 0;
    int n = 0;
    for (int id = 1; id <= plan->max_id; id++) {
        const em_plan_node *node = plan->by_id[id];
        for (int f = 0; node && f < node->n_fields; f++)
            for (int i = 0; i < node->fields[f].n_exprs; i++)
                n += count_unwrapped(node->fields[f].exprs[i], false);
    }
    ev->decimal_arith_unwrapped = n;
    return n;
}

static void reset_expr(em_expr *e) {
    e->type_known = false;
    for (int i = 0; i < e->n_args; i++)
        reset_expr(e->args[i]);
}

void em_plan_reset_types(em_plan *plan) {
    for (int id = 1; id <= plan->max_id; id++) {
        em_plan_node *node = plan->by_id[id];
        if (!node)
            continue;
        for (int f = 0; f < node->n_fields; f++)
            for (int i = 0; i < node->fields[f].n_exprs; i++)
                reset_expr(node->fields[f].exprs[i]);
        if (node->exists_attr)
            reset_expr((em_expr *)node->exists_attr);
        if (em_plan_output_given(node))
            continue; /* given, not derived: kept with its types */
        node->n_output = 0;
        node->output = NULL;
    }
    for (int i = 0; i < plan->n_subqueries; i++)
        reset_expr(plan->subqueries[i].expr);
}
