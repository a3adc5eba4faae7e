/* SPDX-License-Identifier: Apache-2.0 */
/* The bound expression tree of the row evaluator (row_eval.c binds it,
 * row_run.c evaluates it). */
#ifndef EM_EXPR_ROW_EVAL_H
#define EM_EXPR_ROW_EVAL_H

#include "ember/rowexpr.h"
#include "ember/tz.h"
#include "expr/catalog.h"

typedef enum rkind {
    RK_INPUT, /* row[ordinal] */
    RK_CONST, /* k */
    RK_SUBQ,  /* scalar subquery, fetched once */
    RK_ARITH, /* op over kids[0], kids[1] in the node's type */
    RK_CMP,   /* comparison op */
    RK_AND,
    RK_OR,
    RK_NOT,
    RK_ISNULL,
    RK_ISNOTNULL,
    RK_IN,       /* kids[0] IN kids[1..] */
    RK_CASE,     /* when, then, ..., [else] */
    RK_IF,       /* cond, then, else */
    RK_COALESCE, /* first non-null */
    RK_CAST,
    RK_CHECK, /* CheckOverflow of a decimal */
    RK_NEG,
    RK_ABS,
    RK_FN, /* scalar function fn */
} rkind;

typedef struct rnode {
    rkind kind;
    em_type type;
    em_binop op;
    em_fn fn;
    int n;
    struct rnode **kids; /* owned array; the nodes belong to the em_rexpr */
    int ordinal;
    em_datum k;         /* RK_CONST (strings borrow the plan's text) */
    bool null_on_error; /* overflow and bad input: null (non-ANSI) or error */
    bool has_else;
    int64_t iarg; /* round's scale */
    const em_tz *tz; /* casts and hour/minute/second of a timestamp: session zone; NULL: UTC */
    const em_expr *src;
    bool have_subq;
    em_column subq; /* RK_SUBQ: the provider's one-row column */
} rnode;

struct em_rexpr {
    rnode *root;
    rnode **nodes; /* every node, for freeing */
    int n_nodes, cap_nodes;
    bool ansi;
    em_scalar_subquery_fn subquery;
    void *subquery_ctx;
    em_pool *pool;
};

/* The printed expression, for messages. */
void em_row_describe(const em_expr *e, char *buf, size_t cap);

#endif
