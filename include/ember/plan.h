/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan model: Spark's physical plan as EXPLAIN FORMATTED prints it, parsed
 * into an immutable tree of nodes named as Spark names them, with every
 * expression parsed into an expression tree and typed by Spark's rules.
 *
 * Ownership: em_plan_parse builds the whole plan (nodes, expressions, strings)
 * in one arena owned by the em_plan; em_plan_destroy releases it at once. Every
 * pointer reachable from an em_plan is borrowed from it and valid until
 * em_plan_destroy. Nothing in a parsed plan changes afterwards, so a plan may be
 * read from several threads.
 *
 * Version dialects: the parser accepts the union of what Spark 3.3.0 ... 4.1
 * print (and un-normalized user text: real ids, the `L` suffix on longs, real
 * Location paths). Which Spark line printed the text is decided by a shim
 * (src/shims): given in the options or detected from the text. The shim then
 * decides the version-dependent semantics (decimal result types, ANSI) used by
 * type inference, and the printed forms used by em_plan_print.
 *
 * Also accepted: adaptive plans (an AdaptiveSparkPlan root, before execution
 * or with its "== Final Plan ==" / "== Initial Plan ==" sections and query
 * stages; em_plan_exec_root picks the tree to run). em_plan_to_json writes the
 * model for tools.
 */
#ifndef EM_PLAN_H
#define EM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/status.h"
#include "ember/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct em_plan em_plan;
typedef struct em_plan_node em_plan_node;
typedef struct em_expr em_expr;
typedef struct em_shim em_shim; /* one Spark release line's dialect (src/shims) */

/* ---------------------------------------------------------------- expressions */

typedef enum em_expr_kind {
    EM_EXPR_ATTR,            /* name#id[L]: attribute reference */
    EM_EXPR_LITERAL,         /* unquoted literal text; its type comes from its context */
    EM_EXPR_CALL,            /* name(arg, ...): any function printed in call form */
    EM_EXPR_AGG,             /* [partial_|merge_]name([distinct ]args): aggregate expression */
    EM_EXPR_BINARY,          /* (left op right) */
    EM_EXPR_NOT,             /* NOT child */
    EM_EXPR_NEGATE,          /* -child (UnaryMinus) */
    EM_EXPR_IN,              /* value IN (v1,v2,...) */
    EM_EXPR_INSET,           /* value INSET v1, v2, ... */
    EM_EXPR_IN_SUBQUERY,     /* value IN dynamicpruning#N */
    EM_EXPR_LIKE,            /* value LIKE pattern / value RLIKE pattern */
    EM_EXPR_CASE,            /* CASE WHEN c THEN v ... [ELSE e] END */
    EM_EXPR_CAST,            /* cast(child as type) */
    EM_EXPR_ALIAS,           /* child AS name#id[L] */
    EM_EXPR_SORT_ORDER,      /* child ASC|DESC NULLS FIRST|LAST */
    EM_EXPR_BOUND_REF,       /* input[ordinal, type, nullable] */
    EM_EXPR_SCALAR_SUBQUERY, /* [ReusedSubquery ]Subquery scalar-subquery#N, [id=#M] */
    EM_EXPR_FIELD,           /* child.field (struct field access, merged subqueries) */
    EM_EXPR_TYPE,            /* DecimalType(p,s): a type as an argument (CheckOverflow) */
    EM_EXPR_LIST,            /* [a, b, ...]: a bracketed list inside Arguments / pushed filters */
    EM_EXPR_WINDOW,          /* function windowspecdefinition(...) */
    EM_EXPR_PLAN_ID,         /* [plan_id=N] or [id=#N] after an exchange's arguments */
    EM_EXPR_RAW,             /* text that only prints back (e.g. a name with spaces as literal) */
    EM_EXPR_KIND_COUNT_
} em_expr_kind;

typedef enum em_binop {
    EM_OP_ADD,         /* + */
    EM_OP_SUB,         /* - */
    EM_OP_MUL,         /* * */
    EM_OP_DIV,         /* / */
    EM_OP_REM,         /* % */
    EM_OP_INTDIV,      /* div */
    EM_OP_BITAND,      /* & */
    EM_OP_BITOR,       /* | */
    EM_OP_BITXOR,      /* ^ */
    EM_OP_EQ,          /* = */
    EM_OP_NULLSAFE_EQ, /* <=> */
    EM_OP_LT,          /* < */
    EM_OP_LE,          /* <= */
    EM_OP_GT,          /* > */
    EM_OP_GE,          /* >= */
    EM_OP_AND,         /* AND */
    EM_OP_OR,          /* OR */
    EM_OP_COUNT_
} em_binop;

/* How an expression treats overflow and invalid input (Spark's EvalMode; failOnError and
 * ansiEnabled flags read as ANSI/LEGACY). Known only from structured plans. */
typedef enum em_eval_mode {
    EM_EVAL_UNSPECIFIED = 0, /* parsed text, or an expression without such a setting */
    EM_EVAL_LEGACY,
    EM_EVAL_ANSI,
    EM_EVAL_TRY,
} em_eval_mode;

typedef enum em_agg_mode {
    EM_AGG_PARTIAL,       /* partial_sum(...) */
    EM_AGG_PARTIAL_MERGE, /* merge_sum(...) */
    EM_AGG_FINAL,         /* sum(...): Final or Complete (they print alike) */
} em_agg_mode;

/*
 * One expression node. Which members mean something depends on the kind:
 *
 *   ATTR            name, id, long_suffix
 *   LITERAL, RAW    text
 *   CALL            name, args (separator ", " or "," when compact)
 *   AGG             name (without the mode prefix), mode, distinct, args
 *   BINARY          op, args[0], args[1]
 *   NOT, NEGATE     args[0]
 *   IN, INSET       args[0] = value, args[1..] = the list
 *   IN_SUBQUERY     args[0] = value, name ("dynamicpruning#8"), id (8)
 *   LIKE            args[0] = value, args[1] = pattern literal, rlike
 *   CASE            args = when1, then1, when2, then2, ... [, else]; has_else
 *   CAST            args[0], text = target type as printed; cast_type (when known)
 *   ALIAS           args[0], name, id, long_suffix
 *   SORT_ORDER      args[0], ascending, nulls_first
 *   BOUND_REF       id = ordinal, text = type as printed, cast_type, nullable_flag
 *   SCALAR_SUBQUERY name ("scalar-subquery#4"), id (4), plan_id (5), reused; subquery
 *   FIELD           args[0], name (free text, e.g. "count(1)")
 *   TYPE            text (e.g. "DecimalType(11,0)"), cast_type
 *   LIST            args, compact
 *   WINDOW          args[0] = function, args[1] = windowspecdefinition(...) call
 *   PLAN_ID         plan_id, legacy_id_form (as written; printing follows the shim)
 *
 * type/type_known is the inferred result type (Spark's rules, see
 * em_plan_parse). Kinds without a value (SORT_ORDER's own, LIST, PLAN_ID,
 * TYPE, CALLs such as hashpartitioning) leave type_known false.
 *
 * Structured plans (em_plan_read_json) also carry what Spark itself knew:
 * spark_type (the expression's resolved data type; type is still inferred by
 * Ember's rules, so a consumer can refuse an expression whose types differ),
 * eval_mode, and for literals value_exact: text is then exactly the value
 * Spark holds, not a reading of printed text (an empty string, a string with
 * commas or the string "null" are what they seem), value_null the null literal.
 * For parsed text all of these are zero.
 */
struct em_expr {
    em_expr_kind kind;
    em_binop op;
    em_agg_mode mode;
    em_type type;        /* inferred result type */
    bool type_known;     /* false: not a value, or outside what inference covers */
    bool long_suffix;    /* ATTR/ALIAS printed with the `L` of long-typed ids */
    bool compact;        /* CALL/LIST: arguments separated by "," (no space) */
    bool distinct;       /* AGG */
    bool has_else;       /* CASE */
    bool ascending;      /* SORT_ORDER */
    bool nulls_first;    /* SORT_ORDER */
    bool nullable_flag;  /* BOUND_REF */
    bool reused;         /* SCALAR_SUBQUERY printed as ReusedSubquery */
    bool rlike;          /* LIKE printed as RLIKE */
    bool legacy_id_form; /* PLAN_ID written as [id=#N] */
    bool cast_type_known;
    em_type cast_type; /* CAST/BOUND_REF/TYPE: the printed type, when Ember knows it */
    const char *name;  /* see above; NUL-terminated, arena-owned */
    const char *text;  /* see above */
    int64_t id;
    int64_t plan_id; /* SCALAR_SUBQUERY [id=#M], PLAN_ID */
    int n_args;
    em_expr **args;               /* arena-owned */
    const em_plan_node *subquery; /* SCALAR_SUBQUERY / IN_SUBQUERY: the tree computing it */
    /* structured plans only (see above) */
    em_type spark_type;     /* Spark's resolved data type ("type" in the JSON) */
    bool spark_type_known;  /* false: parsed text, no type written, or one Ember cannot hold */
    const char *spark_type_foreign; /* Spark's type when Ember has none like it (array<int>,
                                       interval day to second ...), as written; else NULL */
    bool value_exact;       /* LITERAL: text is the exact value */
    bool value_null;        /* LITERAL with value_exact: the null literal */
    /* LITERAL of a timestamp or date (value_int_type EM_TYPE_TIMESTAMP, _NTZ or _DATE;
     * else EM_TYPE_NULL): the microseconds or days Spark holds, which the text cannot
     * always give back: both instants of a DST overlap print alike, and a year before
     * 1 or after 9999 prints in no form the date parsers read */
    em_type_id value_int_type;
    int64_t value_int;
    /* LITERAL of binary: Spark's bytes (value_len of them), which the text prints as
     * 0x and their hex; NULL when not known (parsed text) */
    const uint8_t *value_bytes;
    int32_t value_len;
    em_eval_mode eval_mode; /* arithmetic, casts, sum/avg, abs, round, unary minus */
};

const char *em_expr_kind_name(em_expr_kind k);
const char *em_binop_symbol(em_binop op); /* "+", "AND", ... */

/* ---------------------------------------------------------------- nodes */

typedef enum em_node_kind {
    EM_NODE_UNKNOWN = 0, /* any other operator: kept with its name and fields */
    EM_NODE_SCAN,        /* "Scan parquet" (and other "Scan <format>") */
    EM_NODE_COLUMNAR_TO_ROW,
    EM_NODE_ROW_TO_COLUMNAR,
    EM_NODE_FILTER,
    EM_NODE_PROJECT,
    EM_NODE_HASH_AGGREGATE,
    EM_NODE_SORT_AGGREGATE,
    EM_NODE_OBJECT_HASH_AGGREGATE,
    EM_NODE_EXCHANGE,
    EM_NODE_BROADCAST_EXCHANGE,
    EM_NODE_REUSED_EXCHANGE,
    EM_NODE_BROADCAST_HASH_JOIN,
    EM_NODE_SORT_MERGE_JOIN,
    EM_NODE_SHUFFLED_HASH_JOIN,
    EM_NODE_BROADCAST_NESTED_LOOP_JOIN,
    EM_NODE_CARTESIAN_PRODUCT,
    EM_NODE_SORT,
    EM_NODE_TAKE_ORDERED_AND_PROJECT,
    EM_NODE_COLLECT_LIMIT,
    EM_NODE_GLOBAL_LIMIT,
    EM_NODE_LOCAL_LIMIT,
    EM_NODE_UNION,
    EM_NODE_EXPAND,
    EM_NODE_WINDOW,
    EM_NODE_WINDOW_GROUP_LIMIT,
    EM_NODE_LOCAL_TABLE_SCAN,
    EM_NODE_SUBQUERY,
    EM_NODE_REUSED_SUBQUERY,
    EM_NODE_INPUT_ADAPTER,
    EM_NODE_WHOLE_STAGE_CODEGEN,
    EM_NODE_ADAPTIVE_SPARK_PLAN,
    EM_NODE_COALESCE,
    EM_NODE_GENERATE,
    EM_NODE_SHUFFLE_QUERY_STAGE,   /* AQE: a materialized shuffle; passes its child's rows */
    EM_NODE_BROADCAST_QUERY_STAGE, /* AQE: a materialized broadcast */
    EM_NODE_AQE_SHUFFLE_READ,      /* AQE: reads a shuffle with coalesced/split partitions */
    EM_NODE_AQE_SECTION,           /* "+- == Final Plan ==" etc. under AdaptiveSparkPlan: not an
                                      operator (id 0, no detail block), name is the header text */
    EM_NODE_KIND_COUNT_
} em_node_kind;

typedef enum em_join_type {
    EM_JOIN_NONE = 0, /* not a join */
    EM_JOIN_INNER,
    EM_JOIN_LEFT_OUTER,
    EM_JOIN_RIGHT_OUTER,
    EM_JOIN_FULL_OUTER,
    EM_JOIN_LEFT_SEMI,
    EM_JOIN_LEFT_ANTI,
    EM_JOIN_EXISTENCE, /* ExistenceJoin(exists#N): left rows plus a boolean */
    EM_JOIN_CROSS,
    EM_JOIN_OTHER, /* printed text kept in join_type_text */
} em_join_type;

typedef enum em_build_side { EM_BUILD_NONE = 0, EM_BUILD_LEFT, EM_BUILD_RIGHT } em_build_side;

typedef enum em_field_kind {
    EM_FIELD_OUTPUT,            /* Output [n]: [...] */
    EM_FIELD_INPUT,             /* Input [n]: [...] */
    EM_FIELD_KEYS,              /* Keys [n]: [...] */
    EM_FIELD_FUNCTIONS,         /* Functions [n]: [...] (aggregate expressions) */
    EM_FIELD_AGG_ATTRS,         /* Aggregate Attributes [n]: [...] */
    EM_FIELD_RESULTS,           /* Results [n]: [...] */
    EM_FIELD_LEFT_KEYS,         /* Left keys [n]: [...] */
    EM_FIELD_RIGHT_KEYS,        /* Right keys [n]: [...] */
    EM_FIELD_CONDITION,         /* Condition : expr (Filter) */
    EM_FIELD_JOIN_CONDITION,    /* Join condition: None | expr (expr NULL for None) */
    EM_FIELD_ARGUMENTS,         /* Arguments: item, item, ... */
    EM_FIELD_PUSHED_FILTERS,    /* PushedFilters: [...] (data source filter syntax) */
    EM_FIELD_PARTITION_FILTERS, /* PartitionFilters: [...] */
    EM_FIELD_DATA_FILTERS,      /* DataFilters: [...] */
    EM_FIELD_READ_SCHEMA,       /* ReadSchema: struct<...> */
    EM_FIELD_LOCATION,          /* Location...: text kept as printed, paths parsed */
    EM_FIELD_BATCHED,           /* Batched: true */
    EM_FIELD_OTHER,             /* any other "Label: text" line, kept as text */
    EM_FIELD_KIND_COUNT_
} em_field_kind;

typedef struct em_schema_field {
    const char *name;
    const char *type_text; /* as printed in ReadSchema */
    em_type type;
    bool type_known;
} em_schema_field;

typedef struct em_plan_field {
    em_field_kind kind;
    const char *label; /* as printed, e.g. "Aggregate Attributes" */
    const char *text;  /* OTHER/LOCATION/BATCHED: the value text; LOCATION: whole line */
    bool counted;      /* list printed with "[n]" */
    int n_exprs;
    em_expr **exprs; /* list items, or exprs[0] for a single expression */
    /* READ_SCHEMA */
    int n_schema;
    em_schema_field *schema;
    /* LOCATION: the paths in the brackets (first path for "[p, ... N entries]"),
     * or the warehouse-relative table folder for normalized files. */
    int n_paths;
    const char **paths;
    bool location_normalized; /* "Location [not included in comparison]/{warehouse_dir}/t]" */
} em_plan_field;

struct em_plan_node {
    em_node_kind kind;
    const char *name;         /* operator name as Spark prints it: "Scan parquet", "Exchange" */
    const char *label_args;   /* text after the name in the tree line (table, "Inner BuildRight") */
    const char *header_args;  /* text after the name in the detail header (the scan's table) */
    const char *label_suffix; /* text after "(id)" in the tree line: ", Statistics(...)" */
    int id;                   /* operator id as printed (1-based) */
    int codegen_id;           /* "[codegen id : K]", -1 when not printed */
    int line;                 /* 1-based line of its detail block in the text; 0: none */
    bool whole_stage;         /* "*" before the tree label */
    int n_children;
    em_plan_node **children;
    int n_fields;
    em_plan_field *fields; /* in printed order ("Join type" is not kept as a field) */

    /* Scans */
    const char *table;      /* "spark_catalog.default.lineitem" */
    const char *table_name; /* last part: "lineitem" */
    /* Structured plans: the relation's whole file schema as Spark's
     * catalogString ("struct<a:int,s:struct<x:int>>"), read columns or not;
     * NULL for parsed text */
    const char *data_schema;
    /* Joins */
    em_join_type join_type;
    const char *join_type_text; /* "Inner", "ExistenceJoin(exists#1)" */
    const em_expr *exists_attr; /* ExistenceJoin's boolean attribute */
    em_build_side build_side;
    /* BroadcastHashJoin's isNullAwareAntiJoin (single-column NOT IN) as a
     * structured plan gives it; printed text does not print it (its build
     * side's HashedRelationBroadcastMode(..., true) does, which a fragment
     * or an AQE stage may hide), so false there */
    bool null_aware_anti;
    /* ReusedExchange */
    int reuses_id;
    const em_plan_node *reuses;

    /* Derived: the attributes this operator produces, in order, typed. */
    int n_output;
    em_expr **output;

    /* Structured plans (em_plan_read_json): the node's "id" in the JSON, the
     * handle the Spark plugin knows it by; -1 for parsed text. */
    int source_index;
    /* A fragment's input: a boundary of a plan fragment whose rows come from
     * outside Ember (Spark's exchange, query stage or fallback node), input
     * number input_index of its task; it has no children here and its output
     * is given, not derived. */
    bool is_input;
    bool input_broadcast; /* the input is a broadcast relation, read whole by every task */
    int input_index;
    /* A query stage (structured plans) over Ember's own shuffle: its batches
     * are Ember's blocks decoded, so an Ember broadcast may take them. */
    bool stage_of_ember;
    /* A sort-merge join whose output order nothing above relies on (set by
     * em_plan_mark_order): its streamed side need not be sorted either. */
    bool order_unwanted;
};

typedef struct em_plan_subquery {
    int index;   /* "Subquery:<index>" */
    int host_id; /* "Hosting operator id = <host_id>" */
    const em_plan_node *host;
    em_expr *expr;              /* the hosting expression */
    em_plan_node *root;         /* its tree, or NULL when printed by an earlier entry */
    const em_plan_node *target; /* the tree computing it (own root or the earlier one) */
} em_plan_subquery;

/* ---------------------------------------------------------------- plans */

/*
 * Optional override of a leaf's column types (the CLI's --retype): called for
 * every output column of a Scan (override ReadSchema's type with the type the
 * data really has) and of a LocalTableScan (whose types Spark never prints).
 * Return true with *type set to use it; false keeps what the text says.
 */
typedef bool (*em_plan_column_type_fn)(void *ctx, const em_plan_node *leaf, const char *column,
                                       em_type *type);

typedef struct em_plan_parse_options {
    const em_shim *shim;                /* NULL: detect from the text */
    const char *source_name;            /* prefix of error messages; NULL means "plan" */
    em_plan_column_type_fn column_type; /* NULL: the text's types */
    void *column_type_ctx;
    /* em_plan_read_json: the session time zone (spark.sql.session.timeZone) the
     * plan's timestamp literals are printed in, as Spark prints them and as the
     * expression compilers read them back; give the zone they are compiled with.
     * NULL: the plan's first timeZoneId (casts carry the session's), else UTC. */
    const char *time_zone;
} em_plan_parse_options;

/*
 * Parses EXPLAIN FORMATTED text (len bytes; need not be NUL-terminated) into
 * *out. options may be NULL. Errors: EM_ERR_PARSE with "plan:LINE:COL: expected
 * ..." (1-based), EM_ERR_UNSUPPORTED when a shim is requested that the text
 * contradicts or none fits, EM_ERR_NOMEM. Never crashes on bad input.
 */
em_status em_plan_parse(const char *text, size_t len, const em_plan_parse_options *options,
                        em_plan **out, em_error *err) EM_MUST_CHECK;
void em_plan_destroy(em_plan *plan); /* NULL allowed */

/*
 * Reads a structured plan (the JSON the Spark plugin writes from Spark's
 * physical plan objects: every node and expression as its class and
 * constructor fields, see docs/spark.md) into the same model em_plan_parse
 * builds from the printed text, typed by the same rules. Node ids are the
 * operator ids EXPLAIN FORMATTED would print; source_index keeps the JSON's.
 * Errors: EM_ERR_PARSE naming the node path ("plan.root.children[1]
 * (FilterExec).condition: ..."), EM_ERR_UNSUPPORTED for a shim that does not
 * fit, EM_ERR_NOMEM. Never crashes on bad input.
 */
em_status em_plan_read_json(const char *json, size_t len, const em_plan_parse_options *options,
                            em_plan **out, em_error *err) EM_MUST_CHECK;

const em_plan_node *em_plan_root(const em_plan *plan);
/* The tree to execute: the root, or under an AdaptiveSparkPlan root the final/current plan
 * (or its only child before execution). */
const em_plan_node *em_plan_exec_root(const em_plan *plan);
/* Spark's wrappers, which hand their one child's rows on as they are:
 * row/columnar transitions, code generation, AQE's stages, reads and
 * sections. */
bool em_node_kind_is_wrapper(em_node_kind kind);
/* Whether a final aggregate over child c merges buffers: an aggregate lies
 * below c through transitions, code generation, exchanges, AQE's stages and
 * reads, sorts and reuses, or the plan stops there (c NULL, or a node read
 * without its tree: a fragment's input, a synthetic source). The native and
 * LORE's rebuilt plans ask it alike, so a replayed aggregate decides as the
 * one that ran. */
bool em_plan_aggregate_below(const em_plan_node *c);
/* Marks the sort-merge joins of the stage under stage_root whose output order
 * no consumer relies on (order_unwanted): above them a shuffle, an aggregate
 * or a sort, or only the side of a hash join that is hashed. A stage whose
 * root is not an exchange hands its rows to someone unknown: its order is
 * kept. */
void em_plan_mark_order(em_plan *plan, const em_plan_node *stage_root);
/* Plans every BroadcastHashJoin reading the broadcast `exchange` as a
 * ShuffledHashJoin over two new Exchanges (ids after the plan's last) that
 * hash-partition each side by its join keys: what Spark plans for a build
 * side too big to broadcast, for a run whose memory budget the broadcast does
 * not fit. As many partitions as the plan's hash exchanges have (Spark's
 * setting when it printed the plan), at least min_partitions; *n_joins and
 * *n_partitions (may be NULL) tell what it did. EM_ERR_UNSUPPORTED (nothing
 * changed) when another node reads the broadcast, or a null-aware anti join
 * does. */
em_status em_plan_unbroadcast(em_plan *plan, const em_plan_node *exchange, int min_partitions,
                              int *n_joins, int *n_partitions, em_error *err) EM_MUST_CHECK;
/* A runtime filter: rows of `scan` whose column scan_column (an output
 * index) holds a null or a value outside column source_column of the
 * broadcast `source` can reach nothing the plan outputs through `join`, so
 * the scan may drop them once the broadcast is built. A pre-pass filter's
 * source is instead the other side of a broadcast join, a filtered scan
 * pipeline whose output a runtime may collect first (running it twice) to
 * narrow the scan under the broadcast. */
typedef struct em_runtime_filter {
    const em_plan_node *scan;
    int scan_column;
    const em_plan_node *source; /* a BroadcastExchange, or a fragment's broadcast input,
                                   or (prepass) the top of a scan pipeline */
    int source_column;
    const em_plan_node *join; /* the join that makes them useless */
    bool prepass;
} em_runtime_filter;
/* The runtime filters of the tree under root (plan_runtime_filter.c says
 * which joins and paths qualify): a malloc'd array (free it), possibly
 * empty; EM_ERR_NOMEM only. */
em_status em_plan_runtime_filters(const em_plan *plan, const em_plan_node *root,
                                  em_runtime_filter **out, int *n_out, em_error *err) EM_MUST_CHECK;
/* Sorts filters by scan, so that each scan's are adjacent; then
 * em_runtime_filters_of points *out at scan's and returns how many. */
void em_runtime_filters_sort(em_runtime_filter *fs, int n);
int em_runtime_filters_of(const em_runtime_filter *fs, int n, const em_plan_node *scan,
                          const em_runtime_filter **out);
/* The node with this operator id (main tree and subquery trees), or NULL. */
const em_plan_node *em_plan_node_by_id(const em_plan *plan, int id);
int em_plan_max_id(const em_plan *plan);
int em_plan_n_subqueries(const em_plan *plan);
const em_plan_subquery *em_plan_subquery_at(const em_plan *plan, int i);
/* The shim the plan was parsed with (given or detected). */
const em_shim *em_plan_shim(const em_plan *plan);
/* How the shim was chosen: "given", or the detection's explanation. */
const char *em_plan_shim_reason(const em_plan *plan);
/* True when the version was detected, not given, and Spark lines that print the
 * text alike would run it differently (e.g. 3.5 and 4.0: ANSI off and on); the
 * reason then says how they differ. Callers should warn and suggest a version. */
bool em_plan_shim_uncertain(const em_plan *plan);

/* First field of this kind in the node's details, or NULL. */
const em_plan_field *em_plan_node_field(const em_plan_node *node, em_field_kind kind);
const char *em_node_kind_name(em_node_kind kind);
const char *em_join_type_name(em_join_type jt);

/*
 * Prints the plan in EXPLAIN FORMATTED form. shim NULL prints in the plan's
 * own dialect (parse then print reproduces Spark's text byte for byte);
 * another shim prints in that line's dialect. *out is malloc'ed (caller
 * frees) and NUL-terminated; *out_len excludes the NUL.
 */
em_status em_plan_print(const em_plan *plan, const em_shim *shim, char **out, size_t *out_len,
                        em_error *err) EM_MUST_CHECK;
/*
 * Whether the two readers give one model for one plan: text (EXPLAIN
 * FORMATTED) and json (the same executed plan, structured) are read (the
 * text given the leaf column types it never prints from the JSON's model),
 * written by em_plan_to_json, and compared with the plan ids (which the
 * JSON cannot carry) and the shim's reason blanked. *same tells; diff (may
 * be NULL) gets the first differing line. shim NULL: the JSON's version.
 * Errors: either reader's.
 */
struct em_strbuf;
em_status em_plan_readers_agree(const char *text, size_t text_len, const char *json,
                                size_t json_len, const em_shim *shim, bool *same,
                                struct em_strbuf *diff, em_error *err) EM_MUST_CHECK;
/* Blanks plan ids ("[plan_id=N]", "[id=#N]", "\"plan_id\": N") in s, in place. */
void em_plan_blank_ids(char *s);

/* The parsed model as JSON (nodes by id with outputs, types, fields and
 * expression trees; see src/plan/plan_json.c); same ownership as em_plan_print. */
em_status em_plan_to_json(const em_plan *plan, char **out, size_t *out_len,
                          em_error *err) EM_MUST_CHECK;
/* One expression as Spark prints it; same ownership as em_plan_print. */
em_status em_expr_print(const em_expr *e, const em_shim *shim, char **out, size_t *out_len,
                        em_error *err) EM_MUST_CHECK;

/* ---------------------------------------------------------------- shims */

/* "3.3.0", "3.3", "3.4", "3.5", "4.0", "4.1" (also "master", "4.1.0", "3.5.1" ...);
 * NULL when no line fits, with err naming the known ones. */
const em_shim *em_shim_for_version(const char *version, em_error *err);
const char *em_shim_name(const em_shim *shim); /* "3.4" */
bool em_shim_ansi_default(const em_shim *shim);
int em_shim_count(void);
const em_shim *em_shim_at(int i); /* oldest first */

typedef struct em_shim_detection {
    const em_shim *chosen; /* oldest compatible line; NULL when none fits */
    uint32_t candidates;   /* bit i set: em_shim_at(i) prints text like this */
    bool ambiguous;        /* more than one candidate */
    bool semantics_differ; /* ambiguous, and the candidates run plans differently (ANSI
                              default, decimal rules): the choice matters */
    char reason[640];      /* what decided, or why none fits */
} em_shim_detection;

/* Detects the Spark line that printed the text. EM_ERR_UNSUPPORTED when no
 * line fits (the reason says which evidence contradicts which line). */
em_status em_shim_detect(const char *text, size_t len, em_shim_detection *out,
                         em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
