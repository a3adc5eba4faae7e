/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog of the functions Spark prints in call form: one row per
 * printed name (an alias is a row of its own with the same id), giving
 * Spark's expression class (what spark.ember.sql.expression.<Class> and
 * the reports name), the arity, the argument and result types where they
 * are fixed, and which engine evaluates it through the generic scalar path.
 * Names resolve here once, case-insensitively; the vectorized engine
 * (compile.c, scalar.c), the row engine (row_eval.c, row_run.c) and the
 * override rules (overrides/rules.c) all dispatch on the id.
 *
 * Type letters: S string, I int, L bigint, D double, T date, B boolean;
 * '-' the argument keeps its own type. Result rules (plan typing,
 * plan_types.c, and the row engine's binding read them): a type letter;
 * '=' the first argument's type; 'c' the arguments' common type; 'f'
 * floor/ceil's (by the Spark line's shim); 'r' round's (RoundBase); '?' or
 * ' ' the function's own rule. The last argument letter stands for every
 * further argument. Rows with arity -1 are compiled by paths of their own
 * (CheckOverflow, coalesce, window functions, partitionings) or by no
 * engine: they are here for their class and their result type.
 */
#ifndef EM_EXPR_CATALOG_H
#define EM_EXPR_CATALOG_H

#include <stdbool.h>

typedef enum em_fn {
    EM_FN_NONE = 0,
    EM_FN_SUBSTRING,
    EM_FN_CONCAT,
    EM_FN_UPPER,
    EM_FN_READ_SIDE_PADDING,
    EM_FN_LOWER,
    EM_FN_LENGTH,
    EM_FN_TRIM,
    EM_FN_LTRIM,
    EM_FN_RTRIM,
    EM_FN_STARTS_WITH,
    EM_FN_ENDS_WITH,
    EM_FN_CONTAINS,
    EM_FN_YEAR,
    EM_FN_MONTH,
    EM_FN_DAY,
    EM_FN_QUARTER,
    EM_FN_HOUR,
    EM_FN_MINUTE,
    EM_FN_SECOND,
    EM_FN_DATE_ADD,
    EM_FN_DATE_SUB,
    EM_FN_DATEDIFF,
    EM_FN_UNSCALED,
    EM_FN_ISNAN,
    EM_FN_NORMALIZE,
    EM_FN_SHIFTLEFT,
    EM_FN_SHIFTRIGHT,
    EM_FN_FLOOR,
    EM_FN_CEIL,
    EM_FN_SQRT,
    EM_FN_EXP,
    EM_FN_LN,
    EM_FN_POWER,
    EM_FN_PMOD,
    EM_FN_PROMOTE_PRECISION,
    EM_FN_KNOWN_FLOATING_POINT_NORMALIZED,
    EM_FN_KNOWN_NOT_NULL,
    EM_FN_DYNAMIC_PRUNING_EXPRESSION,
    EM_FN_CHECK_OVERFLOW,
    EM_FN_MAKE_DECIMAL,
    EM_FN_IS_NULL,
    EM_FN_IS_NOT_NULL,
    EM_FN_COALESCE,
    EM_FN_IF,
    EM_FN_ABS,
    EM_FN_UNARY_MINUS,
    EM_FN_ROUND,
    EM_FN_ROW_NUMBER,
    EM_FN_RANK,
    EM_FN_DENSE_RANK,
    EM_FN_PERCENT_RANK,
    EM_FN_CUME_DIST,
    EM_FN_NTILE,
    EM_FN_LAG,
    EM_FN_LEAD,
    EM_FN_NTH_VALUE,
    EM_FN_HASH_PARTITIONING,
    EM_FN_RANGE_PARTITIONING,
    EM_FN_ROUND_ROBIN_PARTITIONING,
    EM_FN_SHIFTRIGHTUNSIGNED,
    EM_FN_CBRT,
    EM_FN_LOG,
    EM_FN_GREATEST,
    EM_FN_LEAST,
    EM_FN_HASH,
    EM_FN_DAYOFWEEK,
    EM_FN_WEEKDAY,
    EM_FN_WEEKOFYEAR,
    EM_FN_LAST_DAY,
    EM_FN_ADD_MONTHS,
    EM_FN_MAKE_DATE,
    EM_FN_ASCII,
    EM_FN_OCTET_LENGTH,
    EM_FN_BIT_LENGTH,
    EM_FN_INITCAP,
    EM_FN_INSTR,
    EM_FN_LOCATE,
    EM_FN_LPAD,
    EM_FN_RPAD,
    EM_FN_REPEAT,
    EM_FN_REPLACE,
    EM_FN_REVERSE,
    EM_FN_TRANSLATE,
    EM_FN_CONCAT_WS,
    EM_FN_BROUND,
    EM_FN_POSITIVE,
    EM_FN_LIKE,
    EM_FN_SIZE,
    EM_FN_LEFT,
    EM_FN_RIGHT,
    EM_FN_DATE_FORMAT,
    EM_FN_REGEXP_REPLACE,
    EM_FN_REGEXP_EXTRACT,
    EM_FN_FORMAT_STRING,
    EM_FN_TO_DATE,
    EM_FN_NEXT_DAY,
    EM_FN_LOG10,
    EM_FN_LOG2,
    EM_FN_RAND,
    EM_FN_RANDN,
    EM_FN_SIN,
    EM_FN_COS,
    EM_FN_TAN,
    EM_FN_NULLIF,
    EM_FN_ARRAY_CONTAINS,
    EM_FN_COUNT_
} em_fn;

typedef struct em_fn_info {
    const char *name; /* as printed; matched case-insensitively */
    em_fn id;
    const char *cls;  /* Spark's expression class */
    int min_args, max_args; /* -1: checked by the function's own path */
    const char *args;       /* argument type letters ("" when not fixed) */
    char result;            /* result type letter; ' ' when not fixed */
    bool native;            /* the vectorized engine's scalar path evaluates it */
    bool row;               /* the row engine's scalar path evaluates it */
    bool string_args;       /* Spark's inputTypes are strings: a literal spelled as
                               digits is the string Spark folded (Contains(c, 000)) */
} em_fn_info;

/* The row of a printed function name; NULL when the catalog has none. */
const em_fn_info *em_fn_lookup(const char *name);
/* Every row, in catalog order (for docs and tests). */
int em_fn_count(void);
const em_fn_info *em_fn_at(int i);

#endif
