/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private interface of the LORE module: the session's targets, the meta
 * files' shared helpers, and the names of the files in a dump.
 */
#ifndef EM_LORE_INTERNAL_H
#define EM_LORE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ember/lore.h"
#include "runtime/internal.h"

#define LORE_FORMAT "ember-lore-1"
#define LORE_MAX_INPUTS 64

/* One selected operator. */
typedef struct lore_target {
    int lore_id;
    const em_plan_node *node;
    const em_lore_selection *sel;
    char *dir;                          /* DUMP/loreId-N */
    int n_inputs;
    int n_subq;              /* scalar subqueries its expressions read: dumped as inputs
                                n_inputs .. n_inputs + n_subq - 1 */
    const em_expr **subq;
    bool rdd_written[LORE_MAX_INPUTS + 1]; /* [LORE_MAX_INPUTS] is the output */
} lore_target;

struct em_lore_session {
    char *dump_path;
    int lock_fd; /* the dump folder, flock'ed for the run; -1 when not open */
    em_lore_ids ids;
    bool dump_output;
    int n_columns; /* 0: every column */
    char **columns;
    const em_plan *plan;
    int n_lore;
    int *lore_of; /* by operator id */
    int n_targets;
    lore_target *targets;
    pthread_mutex_t mu; /* rdd.meta writes and partition checks */
    atomic_llong bytes, files;
};

/* The node an input of `node` is read from: children[k] past Spark's
 * pass-through nodes (ColumnarToRow, InputAdapter, WholeStageCodegen, AQE
 * query stages and reads). */
const em_plan_node *em_lore_input_node(const em_plan_node *node, int k);
bool em_lore_pass_through(const em_plan_node *node);

/* The scalar subqueries (SCALAR_SUBQUERY nodes of a known type, one per
 * id) in the node's own expressions, malloc'ed (NULL when none). */
int em_lore_node_subqueries(const em_plan_node *node, const em_expr ***out);
/* A pass-through operator over child ("LoreInput"). Replay puts one on
 * each input so that the operator sees inputs of the shape it saw while
 * being dumped (a LoreDump there): operators that look at their children
 * (a broadcast join adopting the shared table or swapping sides) then
 * decide as they did. */
em_status em_lore_passthrough(em_op *child, em_op **out, em_error *err) EM_MUST_CHECK;
/* mkdir -p. */
em_status em_lore_mkdirs(const char *path, em_error *err) EM_MUST_CHECK;
/* Writes the JSON to path through a temporary file renamed into place;
 * returns the bytes written in *bytes (may be NULL). */
em_status em_lore_write_json(const char *path, json_t *j, int64_t *bytes,
                          em_error *err) EM_MUST_CHECK;
/* A schema as [{"name":..,"type":..}, ...]; attrs may be NULL (then no ids). */
json_t *em_lore_schema_json(const em_schema *schema, const em_expr *const *attrs,
                         const int *cols, int n_cols);
/* "input-K" or "output". */
void em_lore_input_dirname(int input_index, char *buf, size_t cap);

/* ------------------------------------------------------------------ an opened dump */

/* One input of a dumped operator, as its rdd.meta describes it. */
typedef struct lore_input {
    int exchange_id;
    bool broadcast;
    bool subquery;   /* a scalar subquery's value (one row) */
    int64_t expr_id; /* its scalar-subquery#N */
    bool all_columns;
    int n_parts;     /* numPartitions */
    int n_dumped;
    int *dumped;     /* ascending */
    em_batch_list data; /* the loaded partition */
} lore_input;

typedef struct replay_ctx {
    em_exec_ctx ctx;
    em_lore_dump *d;
} replay_ctx;

struct em_lore_dump {
    char *dir;
    json_t *meta;
    int lore_id;
    char *op_text;
    em_plan *plan;
    const em_plan_node *node;
    int n_inputs;
    lore_input *inputs;
    bool has_output;
    int n_parts; /* partitions in the operator's stage */
    int n_dumped;
    int *dumped;
    bool ansi;
    const char *time_zone;
    em_schema schema;
    replay_ctx rc;
    em_exec_plan *row_xp; /* the rebuilt plan all on rows, made on first use */
    bool exchange;        /* an Exchange or BroadcastExchange: replayed by partitioning */
    bool broadcast;       /* every reader gets every row */
    rt_partitioning part;
};

/* Reads DIR/NAME/partition-P's batches in order into out; rows (may be
 * NULL) gains their count. */
em_status em_lore_load_partition(const char *dir, const char *name, int p, em_pool *pool,
                              em_batch_list *out, int64_t *rows, em_error *err) EM_MUST_CHECK;

#endif
