/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private structures of the expression engine: the compiled program (a flat
 * array of steps in post-order, each with one result register), scalar
 * values, and the helpers shared by the compiler, the interpreter, the
 * scalar functions and the aggregates.
 *
 * A step's operands are earlier steps (indices into the same array), so the
 * array is a topological order of the expression DAG and the root is last.
 * Eager steps compute every operand on the same rows first; lazy steps
 * (AND, OR, CASE, if, coalesce) evaluate operands themselves on narrowed
 * row sets. Every register is a column of the batch's physical row count
 * whose unselected rows are null.
 */
#ifndef EM_EXPR_INTERNAL_H
#define EM_EXPR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/expr.h"
#include "ember/tz.h"
#include "ember/value_text.h"
#include "expr/catalog.h"
#include "expr/decimal.h"

/* Scalar value of a step's type (the type is kept by whoever holds it). */
typedef struct ex_value {
    bool null;
    int64_t i;     /* boolean, integers, date, timestamps */
    double d;      /* float, double */
    em_i128 dec;   /* decimal unscaled */
    const char *s; /* string/binary bytes (borrowed) */
    int32_t len;
} ex_value;

typedef enum ex_op {
    EX_INPUT,    /* share input column `ordinal` */
    EX_CONST,    /* broadcast constant k */
    EX_SUBQUERY, /* scalar subquery value, fetched once */
    EX_ARITH,    /* bop over args[0], args[1] */
    EX_CMP,      /* comparison bop */
    EX_AND,      /* lazy */
    EX_OR,       /* lazy */
    EX_NOT,
    EX_ISNULL,
    EX_ISNOTNULL,
    EX_IN,             /* args[0] against list[] */
    EX_CASE,           /* lazy: args = when, then, ..., [else] */
    EX_IF,             /* lazy: cond, then, else */
    EX_COALESCE,       /* lazy */
    EX_CAST,           /* args[0] to type; null_on_error */
    EX_CHECK_OVERFLOW, /* decimal args[0] to type; null_on_error */
    EX_NEGATE,
    EX_ABS,
    EX_SCALAR, /* row-wise scalar function fn (strings, dates, ...) */
} ex_op;


typedef struct ex_step {
    ex_op op;
    em_binop bop; /* EX_ARITH, EX_CMP */
    em_fn fn;     /* EX_SCALAR: a catalog function */
    em_type type; /* result type */
    int n_args;
    int *args;      /* owned: operand step indices */
    int ordinal;    /* EX_INPUT */
    ex_value k;     /* EX_CONST; strings owned by the program */
    ex_value *list; /* EX_IN: owned list of constants (of args[0]'s type) */
    int n_list;
    bool list_has_null;
    bool null_on_error;   /* casts/overflow: null (non-ANSI) or error (ANSI) */
    bool null_intolerant; /* EX_SCALAR: any null argument gives null */
    int64_t iarg;         /* EX_SCALAR parameters: round scale, MakeDecimal flags */
    const em_tz *tz;      /* EX_CAST depending on the session time zone; NULL: UTC */
    const em_expr *src;   /* borrowed: for messages and subqueries */
    bool have_value;      /* EX_SUBQUERY: value fetched */
    em_column value;      /* EX_SUBQUERY: the one-row value */
    /* Decimal registers, for the current batch: every row the step computed
     * is present and |value| <= dec_bound (eval.c's small decimal path reads
     * it instead of scanning the rows again). Cleared whenever the register
     * is filled anew. */
    bool dec_bound_known;
    uint64_t dec_bound;
} ex_step;

struct em_expr_prog {
    ex_step *steps; /* owned */
    int n_steps;
    int cap;
    em_column *regs; /* owned: one register per step */
    bool ansi;
    bool tz_utc;      /* session time zone is UTC (needs no zone database) */
    const em_tz *tz;  /* the session zone once an expression needed it; NULL: not yet */
    em_pool *pool; /* borrowed */
    em_scalar_subquery_fn subquery;
    void *subquery_ctx;
    char **owned; /* owned strings (constants) */
    int n_owned;
    int cap_owned;
};

/* Evaluation context for one call of em_expr_eval. */
typedef struct ex_ctx {
    em_expr_prog *prog;
    const em_batch *in;
    em_pool *pool;
    int64_t n_rows;
    em_error *err;
    em_strbuf scratch; /* per-row string results */
} ex_ctx;

#define EX_FOR_ROWS(sel, n, i, ...)                                                                \
    do {                                                                                           \
        if (sel) {                                                                                 \
            for (int64_t k_ = 0; k_ < (n); k_++) {                                                 \
                int64_t i = (sel)[k_];                                                             \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < (n); i++) {                                                    \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Reads row `row` of c as a scalar of c's type. */
void em_ex_get(const em_column *c, int64_t row, ex_value *v);
/* Writes a fixed-width (or boolean) scalar into row `row` and marks it valid
 * (or null). The column must have a validity buffer and room. */
void em_ex_put_fixed(em_column *c, int64_t row, const ex_value *v);

/* Sequential writer for string registers: rows must be put in ascending
 * order; skipped rows become empty nulls. */
typedef struct ex_strw {
    em_column *col;
    int64_t next; /* next row to write */
} ex_strw;
em_status em_ex_strw_put(ex_strw *w, int64_t row, const char *p, int32_t len, bool null,
                      em_error *err) EM_MUST_CHECK;
em_status em_ex_strw_finish(ex_strw *w, int64_t n_rows, em_error *err) EM_MUST_CHECK;

/* Allocates a register column of n rows, all null. */
em_status em_ex_col_alloc(em_column *c, em_type type, int64_t n, em_pool *pool,
                       em_error *err) EM_MUST_CHECK;

/* Casts one value (non-null) from type `from` to `to`; sets *null when the
 * result is null (invalid input in non-ANSI mode). Errors carry `what` (the
 * expression text). Strings produced are appended to scratch. */
em_status em_ex_cast_value(const ex_value *in, em_type from, em_type to, bool ansi, const char *what,
                        ex_value *out, em_strbuf *scratch, em_error *err) EM_MUST_CHECK;
/* The same in session time zone tz (NULL: UTC), which casts between
 * timestamp and date, string or timestamp_ntz follow. */
em_status em_ex_cast_value_tz(const ex_value *in, em_type from, em_type to, const em_tz *tz,
                           bool ansi, const char *what, ex_value *out, em_strbuf *scratch,
                           em_error *err) EM_MUST_CHECK;
/* Parses literal text of type t (strict: errors are EM_ERR_TYPE); a
 * timestamp's text is local time in tz (NULL: UTC), as Spark prints it. */
em_status em_ex_parse_literal(const char *text, em_type t, ex_value *out, em_error *err) EM_MUST_CHECK;
em_status em_ex_parse_literal_tz(const char *text, em_type t, const em_tz *tz, ex_value *out,
                              em_error *err) EM_MUST_CHECK;
/* Spark's stringToDate; false when invalid. */
bool em_ex_parse_date(const char *p, int64_t n, int32_t *days);
/* Spark's stringToTimestamp: date, optional [h]h:[m]m[:[s]s[.fraction]]
 * and, with_zone (not for TIMESTAMP_NTZ), a zone (offset or region id); a
 * text without one is local time in tz (NULL: UTC). False for anything else
 * (*no_zone_db when a region id could not be read for want of the zone
 * database). */
bool em_ex_parse_timestamp(const char *p, int64_t n, bool with_zone, const em_tz *tz,
                        int64_t *micros, bool *no_zone_db);

/* Row-wise scalar functions. args are non-null unless the step is not null
 * intolerant. Strings in *out may borrow from args or from scratch. */
em_status em_ex_scalar_apply(const ex_step *st, const em_type *arg_types, const ex_value *args,
                          ex_value *out, em_strbuf *scratch, const char *what,
                          em_error *err) EM_MUST_CHECK;
/* Spark's LIKE with escape '\\'; invalid patterns are reported by
 * em_ex_like_check at compile time. */
bool em_ex_like_match(const char *s, int32_t n, const char *pat, int32_t pn);
em_status em_ex_like_check(const char *pat, int32_t pn, em_error *err) EM_MUST_CHECK;

/* Three-way comparison of two non-null values of type t (Spark ordering:
 * NaN equal to itself and above everything, -0.0 == 0.0, strings as
 * unsigned bytes). Decimal operands may have different scales (ta, tb). */
int em_ex_compare(const ex_value *a, em_type ta, const ex_value *b, em_type tb);

/* Short printed form of an expression for messages (static-ish buffer). */
void em_ex_describe(const em_expr *e, char *buf, size_t cap);

/* Spark's implicit result type of a value kind (for literals without one). */
bool em_ex_type_is_integral(em_type t);
bool em_ex_type_is_numeric(em_type t);

#endif
