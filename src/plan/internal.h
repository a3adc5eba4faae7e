/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private declarations of the plan layer: the arena every plan lives in, a
 * growable text buffer for the printer, the expression parser's context, and
 * the steps em_plan_parse runs (parse text -> choose shim -> derive outputs
 * and types).
 */
#ifndef EM_PLAN_INTERNAL_H
#define EM_PLAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/plan.h"
#include "shims/shim.h"

/* ------------------------------------------------------------------ arena */

/* Bump allocator: chunks are freed together. A failed allocation returns
 * NULL and sets `failed`, so callers may check once at the end. */
typedef struct plan_arena_chunk plan_arena_chunk;
typedef struct plan_arena {
    plan_arena_chunk *head; /* owned list, newest first */
    size_t used;            /* bytes used in head */
    size_t cap;             /* capacity of head */
    size_t total;           /* bytes allocated in all chunks */
    bool failed;
} plan_arena;

void *em_plan_arena_alloc(plan_arena *a, size_t size);
char *em_plan_arena_strndup(plan_arena *a, const char *s, size_t n);
void em_plan_arena_reset(plan_arena *a);

/* ------------------------------------------------------------------ text buffer */

typedef struct plan_buf {
    char *data; /* owned (malloc) */
    size_t len;
    size_t cap;
    bool failed;
} plan_buf;

void em_plan_buf_put(plan_buf *b, const char *s, size_t n);
void em_plan_buf_puts(plan_buf *b, const char *s);
void em_plan_buf_putc(plan_buf *b, char c);
void em_plan_buf_printf(plan_buf *b, const char *fmt, ...) EM_PRINTF(2, 3);

/* ------------------------------------------------------------------ plan */

struct em_plan {
    plan_arena arena;
    em_plan_node *root;
    em_plan_node **by_id; /* index = operator id; NULL where absent */
    int max_id;
    em_plan_subquery *subqueries;
    int n_subqueries;
    const em_shim *shim;
    em_dialect_evidence evidence;
    char shim_reason[640];
    bool shim_uncertain; /* see em_plan_shim_uncertain */
};

/* ------------------------------------------------------------------ expression parser */

/* Where an operand may end (besides the end of the text and any ')' or ']'). */
enum {
    STOP_COMMA = 1 << 0,   /* "," (lists, call arguments) */
    STOP_BINOP = 1 << 1,   /* " <op> " (left operand of a parenthesized binary operator) */
    STOP_AS = 1 << 2,      /* " AS " (alias) */
    STOP_SORT = 1 << 3,    /* " ASC" / " DESC" */
    STOP_POSTFIX = 1 << 4, /* " IN " / " INSET " / " LIKE " / " RLIKE " */
    STOP_CASE = 1 << 5,    /* " WHEN " / " THEN " / " ELSE " / " END" */
    STOP_CAST = 1 << 6,    /* " as " */
    STOP_WINDOW = 1 << 7,  /* " windowspecdefinition(" */
};

typedef struct expr_parser {
    plan_arena *arena;
    const char *s; /* the text of one field value (not NUL-terminated) */
    size_t n;
    size_t pos;
    const char *src; /* source name for messages */
    int line;        /* 1-based line of s in the plan text */
    int col0;        /* 1-based column of s[0] */
    em_dialect_evidence *ev;
    em_error error; /* the furthest error so far (backtracking tries alternatives) */
    size_t err_pos; /* its offset in s */
    bool failed;    /* an error was recorded */
    int depth;      /* recursion depth, bounded */
    size_t steps;   /* operands tried, bounded by the text size (backtracking) */
    /* Only ", " separates items: a bare string literal with a comma in it
     * ('DHL,BARIAN'), for a list whose printed count the usual reading missed. */
    bool spaced_commas;
} expr_parser;

/* Parses one expression that must extend to the end of the text. */
em_expr *em_plan_parse_expr_all(expr_parser *p);
/* Parses one expression ending at a stop (see STOP_*). */
em_expr *em_plan_parse_expr(expr_parser *p, int stop);
/* Parses "[a, b, ...]" (the brackets included) into an EM_EXPR_LIST. */
em_expr *em_plan_parse_bracket_list(expr_parser *p);
/* Parses "a, b, ..." to the end of the text (Arguments). */
em_expr **em_plan_parse_arg_list(expr_parser *p, int *n_out);
/* Records a parse error at offset pos of the parser's text. Returns NULL. */
void *em_plan_expr_error(expr_parser *p, size_t pos, const char *fmt, ...) EM_PRINTF(3, 4);

/* The node kind of an operator name as Spark prints it ("HashAggregate"), or
 * EM_NODE_UNKNOWN. */
em_node_kind em_plan_node_kind_named(const char *name, size_t n);

/* Parses a Spark simpleString/catalogString type name ("decimal(12,2)", "bigint"). */
bool em_plan_type_from_text(const char *s, size_t n, em_type *out);

/* ------------------------------------------------------------------ steps */

/* Derives every node's output attributes and every expression's type; column_type
 * (may be NULL) overrides leaf column types. */
void em_plan_infer(em_plan *plan, em_plan_column_type_fn column_type, void *ctx);
/* plan_validate.c: every attribute an operator reads is one its children
 * produce; EM_ERR_PARSE naming the operator (and its line) otherwise. */
em_status em_plan_validate_bindings(const em_plan *plan, const char *src, em_error *err) EM_MUST_CHECK;
/* Counts decimal arithmetic not wrapped in CheckOverflow into the plan's evidence (only
 * in texts without CheckOverflow/promote_precision); returns the count. */
int em_plan_count_unwrapped_decimal_arith(em_plan *plan);
/* Forgets every inferred type (before inferring again with another shim). */
void em_plan_reset_types(em_plan *plan);
/* TypeCoercion's / DecimalPrecision's wider type of two decimals: max scale, max integral
 * digits, bounded to 38. */
em_type em_plan_wider_decimal(em_type a, em_type b);
/* Types of an aggregate function's buffer attributes (a partial aggregate's Aggregate
 * Attributes) in order; returns how many, 0 when unknown. */
int em_plan_agg_buffer_types(const em_expr *e, em_type *out, int cap);
/* --retype (plan_retype.c): marks what the plan's original typing shows to be Spark's
 * coercions (run on the plan typed as printed), then, once typed with the new leaf types,
 * rewrites what Spark derived from the original types and types the plan again. */
typedef struct plan_retype_marks plan_retype_marks;
em_status em_plan_retype_mark(em_plan *plan, plan_retype_marks **out);
void em_plan_retype_marks_free(plan_retype_marks *m);
em_status em_plan_retype_apply(em_plan *plan, const plan_retype_marks *marks,
                            em_plan_column_type_fn column_type, void *ctx);
/* Appends an expression as Spark prints it. */
void em_plan_print_expr(plan_buf *b, const em_expr *e, const em_shim *shim);

/* ------------------------------------------------------------------ structured plan reader */

/* Shared by plan_read.c (nodes, operator ids, subqueries) and plan_read_expr.c
 * (expressions, literals, data source filters). JSON values are jansson's. */
struct json_t;

/* Where a value sits in the JSON, for messages: a linked list up to the root,
 * rendered as "plan.root.children[1] (FilterExec).fields.condition". */
typedef struct rd_path {
    const struct rd_path *up;
    const char *key; /* ".key" segment; NULL for an index segment */
    int index;       /* "[index]" when key is NULL */
    const char *cls; /* " (Class)" after the segment, or NULL */
} rd_path;

typedef struct plan_reader {
    em_plan *plan;
    em_error *err;      /* the first error is kept */
    const char *src;    /* message prefix ("plan") */
    const em_shim *shim;
    const char *zone;   /* session time zone of timestamp literals (borrowed); NULL = UTC */
    const void *tz;     /* const em_tz *: zone, loaded by the first timestamp literal */
    int depth;          /* nesting of nodes and expressions being read, bounded */
    bool failed;
} plan_reader;

#define PLAN_READ_MAX_DEPTH 400

/* Records an error naming the path (first error wins); returns NULL. */
void *em_plan_read_fail(plan_reader *rd, const rd_path *path, const char *fmt, ...) EM_PRINTF(3, 4);
/* Records out of memory; returns NULL. */
void *em_plan_read_nomem(plan_reader *rd);
/* The simple name of a class written as "a.b.C" or "a.b.C$" ("C"); "" when absent. */
const char *em_plan_read_class(const struct json_t *j);
/* A fresh expression of this kind in the plan's arena (id, plan_id -1). */
em_expr *em_plan_read_new_expr(plan_reader *rd, em_expr_kind kind);
/* A Catalyst expression (class, pretty, type, fields) as the em_expr the text parser builds
 * from its printed form. */
em_expr *em_plan_read_expr(plan_reader *rd, struct json_t *j, const rd_path *path);
/* A data source filter (org.apache.spark.sql.sources.*) as the PushedFilters item the text
 * parser builds from its toString. */
em_expr *em_plan_read_filter(plan_reader *rd, struct json_t *j, const rd_path *path);
/* One value of an operator's constructor as an item of its "Arguments" (TreeNode.argString):
 * *skip when Spark omits it (children, None, empty sequences). */
em_expr *em_plan_read_arg(plan_reader *rd, struct json_t *v, const rd_path *path, bool *skip);
/* Whether a node's output is given rather than derived (structured plans): fragment
 * inputs, query stages read without their plans, operators of unknown classes. */
bool em_plan_output_given(const em_plan_node *node);

#endif
