/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LORE, the Local Replay Framework (after spark-rapids'): dump the input of
 * chosen native operators while a query runs, then replay one operator alone
 * from the dump, anywhere. docs/lore.md is the user's page; this header is
 * the contract between the builder, the runtime and the `ember lore` tool.
 *
 * Ids: every native operator carries a LORE id (em_node_decision.lore_id,
 * assigned by the overrides, post-order over the final plan from 0).
 *
 * Selection (spark.ember.sql.lore.idsToDump), parsed by em_lore_ids_parse:
 *   list   := item (',' item)*            blanks allowed around every token
 *   item   := ID '[' parts ']'
 *   parts  := '*' | part (' ' part)* | (nothing)
 *   part   := P | A '-' B                 A-B is half open: 4-6 = 4 and 5
 * Meanings and errors (each error names the token and its 1-based column):
 *   "1[]"      every partition (spark-rapids' docs print "1[], 2[]" for that)
 *   "1[*]"     every partition; "1[* 3]" is an error (* stands alone)
 *   "1"        error: an id needs its brackets (write 1[*])
 *   "6-4","4-4" error: empty or reversed range
 *   "1[0 0 0-2]" partitions may repeat or overlap: the union is dumped
 *   "1[0],1[2]" error: an id may appear once
 *   ""         nothing to dump (LORE off)
 *   an id with no native operator: em_lore_session_create fails naming it
 *   a partition >= the stage's partition count: the task of partition 0
 *     fails the query naming the id, the partition and the count
 *
 * Dump layout under spark.ember.sql.lore.dumpPath (see docs/lore.md):
 *   loreId-N/plan.meta                    the operator, rebuildable alone
 *   loreId-N/input-K/rdd.meta             partitions, schema
 *   loreId-N/input-K/partition-P/partition.meta
 *   loreId-N/input-K/partition-P/batch-B.parquet
 *   loreId-N/output/...                   same, with spark.ember.sql.lore.dumpOutput
 * Every file is written to a temporary name and renamed into place.
 */
#ifndef EM_LORE_H
#define EM_LORE_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/conf.h"
#include "ember/ops.h"
#include "ember/overrides.h"
#include "ember/plan.h"
#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ idsToDump */

typedef struct em_lore_range {
    int lo, hi; /* partitions lo <= p < hi */
} em_lore_range;

typedef struct em_lore_selection {
    int lore_id;
    int column;  /* 1-based column of the id in the text (for later errors) */
    bool all;    /* every partition ("*" or empty brackets) */
    int n_ranges;
    em_lore_range *ranges; /* owned; single partitions are ranges [p, p+1) */
} em_lore_selection;

typedef struct em_lore_ids {
    int n;
    em_lore_selection *items; /* owned, in the order given */
} em_lore_ids;

/* Parses text (NULL or blank: no ids). EM_ERR_INVALID with
 * "idsToDump: column C: ..." naming the offending token. */
em_status em_lore_ids_parse(const char *text, em_lore_ids *out, em_error *err) EM_MUST_CHECK;
void em_lore_ids_reset(em_lore_ids *ids); /* frees; NULL allowed */
const em_lore_selection *em_lore_ids_find(const em_lore_ids *ids, int lore_id);
bool em_lore_selection_has(const em_lore_selection *s, int partition);
/* The largest partition selected (-1 for "all" or none). */
int em_lore_selection_max(const em_lore_selection *s);

/* ------------------------------------------------------------------ dumping */

/* LORE's settings alone, as a planner checks them before any task runs:
 * idsToDump's grammar, and a dumpPath when ids are given (EM_ERR_INVALID). */
em_status em_lore_check_settings(const em_conf *conf, em_error *err) EM_MUST_CHECK;

typedef struct em_lore_session em_lore_session;

/*
 * A query's dump session, created after the overrides and before anything
 * runs. lore_ids[node id] is the LORE id of the plan node with that operator
 * id (-1: none); n_lore_ids is its length (em_plan_max_id + 1). The builder
 * fills it from em_exec_plan_decision_at(xp, i)->lore_id; lore_ids NULL
 * means every operator of em_plan_exec_root is native (em_op_build's world)
 * and the ids are assigned here with the same post-order rule (Spark's
 * ColumnarToRow, InputAdapter, WholeStageCodegen and the AQE wrappers take
 * no id).
 *
 * *out is NULL when idsToDump is unset or empty (nothing to wrap). Errors
 * (EM_ERR_INVALID): bad idsToDump, ids without dumpPath, an id that is not
 * in the plan, a dumpPath that exists and is not an empty folder;
 * EM_ERR_IO when it cannot be created. On success the folder exists and
 * every selected operator's plan.meta is written.
 */
em_status em_lore_session_create(const em_conf *conf, const em_plan *plan, const int *lore_ids,
                                 int n_lore_ids, em_lore_session **out,
                                 em_error *err) EM_MUST_CHECK;
/* For one fragment of a query run by an embedder (the Spark plugin's tasks),
 * which checked the dump folder once for the whole query: the folder is
 * made if missing but neither locked nor required empty, selected ids the
 * fragment lacks are other fragments' (not errors), and *out is NULL when
 * none of the fragment's operators is selected. plan.meta is written again
 * by every fragment holding the operator (the same text, renamed into place). */
em_status em_lore_session_attach(const em_conf *conf, const em_plan *plan, const int *lore_ids,
                                 int n_lore_ids, em_lore_session **out,
                                 em_error *err) EM_MUST_CHECK;
/* The same, with the LORE ids the overrides assigned (em_node_decision.lore_id):
 * what `ember run` calls after em_overrides_apply. */
em_status em_lore_session_create_xp(const em_conf *conf, const em_exec_plan *xp,
                                    em_lore_session **out, em_error *err) EM_MUST_CHECK;
void em_lore_session_destroy(em_lore_session *s); /* NULL allowed; after the query */
/* The LORE id of a node (-1: none). */
int em_lore_session_id_of(const em_lore_session *s, const em_plan_node *node);
/* Bytes and files written so far (all tasks). */
int64_t em_lore_session_bytes(const em_lore_session *s);
int64_t em_lore_session_files(const em_lore_session *s);

/*
 * Where the builder calls it (em_exec_build's walk, src/ops/row_build.c),
 * for nodes decided native only:
 *
 *   each child k of a node N (children in plan order; Spark's pass-through
 *   nodes skipped; an Exchange/BroadcastExchange read or a scan is the
 *   child), once the child is on the native engine, before N's
 *   constructor:                     em_lore_wrap(s, N, k, child, &child, err)
 *   N's own operator, once built:    em_lore_wrap(s, N, EM_LORE_OUTPUT, op, &op, err)
 *   also for sources: a Scan, and an Exchange, BroadcastExchange or
 *   ReusedExchange read in the stage reading it (what its readers get);
 *   a stage rooted at an Exchange or BroadcastExchange (its map side): the
 *   operator built for the exchange's child, as input 0 of the exchange.
 *
 * Takes ownership of op; *out is op itself when s is NULL or N is not
 * selected, else a pass-through operator ("LoreDump") with op as its only
 * child and the same output. While partition ctx->partition is selected it
 * writes every batch it passes (one file each, the columns of
 * spark.ember.sql.lore.columns when set), and the partition's meta at the
 * end. Batches are passed on unchanged; only the one being written is held.
 * The output is dumped with spark.ember.sql.lore.dumpOutput, and always for
 * an operator without inputs (a scan: its output is all there is). The
 * wrapper of input 0 (or of the output, without inputs) also writes the
 * values of the scalar subqueries N's expressions read, asked from
 * ctx->expr_opts.subquery. On failure op is destroyed.
 */
#define EM_LORE_OUTPUT (-1)
em_status em_lore_wrap(em_lore_session *s, const em_plan_node *node, int input_index, em_op *op,
                       em_op **out, em_error *err) EM_MUST_CHECK;

/* em_exec_build with a session: an em_op_build_fn (include/ember/runtime.h)
 * whose build_ctx is an em_lore_build_ctx. `ember run` passes it; session
 * NULL builds exactly what em_exec_build builds. Both must outlive the
 * query. xp NULL runs every node natively, a fragment's inputs read as
 * em_op_build reads them (a fragment task's tree while it dumps). */
typedef struct em_lore_build_ctx {
    const em_exec_plan *xp;
    em_lore_session *session;
} em_lore_build_ctx;
em_status em_lore_exec_build(void *ctx, const em_plan_node *stage_root, em_op **out,
                             em_error *err) EM_MUST_CHECK;

/* ------------------------------------------------------------------ replay */

typedef struct em_lore_dump em_lore_dump;

/* Opens DIR/loreId-N (reads plan.meta and every rdd.meta, parses the
 * operator's plan). Errors name the file and what is wrong. */
em_status em_lore_dump_open(const char *dir, em_lore_dump **out, em_error *err) EM_MUST_CHECK;
void em_lore_dump_close(em_lore_dump *d); /* NULL allowed */
int em_lore_dump_id(const em_lore_dump *d);
const char *em_lore_dump_operator(const em_lore_dump *d); /* "HashAggregate (5)" */
const char *em_lore_dump_plan_text(const em_lore_dump *d);
/* The partitions dumped for every input (ascending); borrowed. */
int em_lore_dump_n_partitions(const em_lore_dump *d);
int em_lore_dump_partition_at(const em_lore_dump *d, int i);
bool em_lore_dump_has_output(const em_lore_dump *d);
/* The operator's output schema (names as the attributes print). */
const em_schema *em_lore_dump_schema(const em_lore_dump *d);

typedef struct em_lore_replay_stats {
    int64_t load_ns;  /* reading the dumped input */
    int64_t run_ns;   /* open + next + close of the operator */
    int64_t rows_in, rows_out, batches_out;
    int64_t peak_bytes;
} em_lore_replay_stats;

/* Runs the operator natively over partition p's dumped input; *out gets
 * copies of its output batches (pool charged). stats may be NULL. */
em_status em_lore_replay(em_lore_dump *d, int partition, em_pool *pool, em_batch_list *out,
                         em_lore_replay_stats *stats, em_error *err) EM_MUST_CHECK;

typedef enum em_lore_engine {
    EM_LORE_NATIVE, /* the native operator, built by em_op_build */
    EM_LORE_ROW,    /* the reference row engine's (the overrides with
                       spark.ember.sql.enabled=false, em_exec_build) */
} em_lore_engine;
em_status em_lore_replay_on(em_lore_dump *d, int partition, em_lore_engine engine, em_pool *pool,
                            em_batch_list *out, em_lore_replay_stats *stats,
                            em_error *err) EM_MUST_CHECK;
/* The operator built over partition p's dumped input, not yet opened, with
 * the context it must be opened in (valid until em_lore_dump_close or the
 * next call). For callers that drive it themselves (the row engine). */
em_status em_lore_replay_build(em_lore_dump *d, int partition, em_pool *pool, em_op **op,
                               em_exec_ctx **ctx, em_error *err) EM_MUST_CHECK;
/* The dumped output of partition p (EM_ERR_INVALID when not dumped). */
em_status em_lore_dump_read_output(em_lore_dump *d, int partition, em_pool *pool,
                                   em_batch_list *out, em_error *err) EM_MUST_CHECK;

/* Compares two results value by value in order (canonical text; the
 * schemas' types must match). Returns true when equal; otherwise writes
 * the first difference ("row 12 column l_tax: 0.02 vs 0.03", or a row
 * count or type mismatch) into diff. */
bool em_lore_results_equal(const em_batch_list *a, const em_batch_list *b, char *diff,
                           size_t diff_cap);
/* The same as multisets of rows (engines may order a hash aggregate's groups
 * differently): rows are compared in the order of their canonical text, and
 * the first differing row of each side is reported. */
bool em_lore_results_equal_unordered(const em_batch_list *a, const em_batch_list *b, char *diff,
                                     size_t diff_cap);

/* ------------------------------------------------------------------ as a test case */

struct em_strbuf;
/* Appends a tests/plans case (tests/plans/README.md) made of partition p of
 * the dump: its inputs as the tables input-K the dump's plan scans, that
 * plan, and the dumped output as the expected rows (ordered when the
 * operator is a sort). name NULL: the operator's. EM_ERR_INVALID when the
 * output was not dumped; EM_ERR_UNSUPPORTED for a scan or an exchange, an
 * input dumped with a column subset, or a value a case row cannot hold. */
em_status em_lore_case_write(em_lore_dump *d, int partition, const char *name, em_pool *pool,
                             struct em_strbuf *out, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
