/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine shared by the native joins (hash joins, the sort-merge join and
 * the nested-loop joins): one side is materialized ("build"), the other is
 * streamed batch by batch ("stream"), and an index over the build rows tells,
 * for every stream row, the build rows it may match ("candidates"). The hash
 * joins index the build side by key; the nested-loop joins make every build
 * row a candidate of every stream row.
 *
 * Candidates become pairs, at most EM_BATCH_CAP per step, laid out as Spark's
 * join output (left attributes, then right ones) in a "pair batch"; the join
 * condition, if any, narrows the pair batch's selection. What happens to the
 * surviving pairs depends on the join type:
 *
 *   Inner, Cross       the pairs are the output
 *   outer joins        the pairs are output; a preserved row that no pair
 *                      kept is output once with nulls on the other side
 *   LeftSemi/LeftAnti  only whether a left row had a surviving pair matters
 *   ExistenceJoin      left rows, each with exists = (a pair survived)
 *
 * The preserved (or "left" for semi/anti/existence) side may be either side.
 * When it is the stream side, decisions are made per stream batch (matched
 * flags per stream row); when it is the build side, a bitmap over the build
 * rows collects matches and the build rows are emitted after the stream ends.
 *
 * Copying: the stream side is never copied when each stream row appears at
 * most once in a step (one match per row, semi/anti/existence, unmatched
 * outer rows): the pair batch then shares the stream batch's buffers, keeps
 * its physical row numbers and selects the rows; the build side's columns are
 * gathered aligned to them. Otherwise both sides are gathered.
 *
 * Null-aware anti join (Spark's single-column NOT IN): stream rows survive
 * when the build side is empty; none do when a build key is null; otherwise a
 * stream row survives when its key is not null and has no match. The index
 * marks a stream row whose key is null with candidate range [-1, -1).
 *
 * Memory: the build side, the index and the bitmaps are charged to the task's
 * pool; a budget failure fails the operator with EM_ERR_OOM_BUDGET naming it.
 */
#ifndef EM_OPS_JOIN_ENGINE_H
#define EM_OPS_JOIN_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/internal.h"

typedef struct jn_state jn_state;

/* The index over the build rows, supplied by each join operator. */
typedef struct jn_index_vtab {
    /* Called once the build side is materialized (j->build, j->n_build rows,
     * no selection). Sets j->build_has_null_key when null-aware. */
    em_status (*build)(jn_state *j, em_error *err);
    /* For the stream batch's logically present rows k < em_batch_rows(in):
     * candidates are build rows rows[lo[k] .. hi[k]) (rows == NULL: the
     * numbers themselves). Sets j->cand_rows. */
    em_status (*probe)(jn_state *j, const em_batch *in, int32_t *lo, int32_t *hi, em_error *err);
    void (*free)(jn_state *j);
} jn_index_vtab;

enum { JN_LEFT = 0, JN_RIGHT = 1 };

struct jn_state {
    em_op *op; /* the join operator (names in errors, task context) */
    const jn_index_vtab *index;
    void *index_state;
    /* Optional, set by the operator after em_jn_open: supplies the build side
     * and its index without draining the build child (a broadcast indexed
     * once per query and shared by the probe tasks); sets *done when it did,
     * then j->build is borrowed and read-only. What the join mutates per
     * task (matched bitmaps, candidate ranges) stays in the task's state. */
    em_status (*adopt)(jn_state *j, bool *done, em_error *err);
    /* Optional, set by the operator after em_jn_open: called when the stream
     * ends, before the build rows the join keeps (track_build) are output;
     * may widen build_matched to the matches of other tasks, and sets *emit
     * false when this task outputs no build rows (another task does). */
    em_status (*stream_end)(jn_state *j, bool *emit, em_error *err);
    /* Set by the operator before the first next: the build side's rows,
     * gathered already (then the build child is not drained), and stream
     * batches read ahead, returned before the stream child's next ones.
     * Both owned by the join. */
    em_batch *prebuilt;
    em_batch_list replay;
    int64_t replay_pos;
    em_join_type type;
    int build_side; /* JN_LEFT or JN_RIGHT */
    bool null_aware;
    const em_expr *cond_expr; /* NULL: no join condition */

    /* Derived from the join type and build side. */
    bool keep_stream; /* stream rows without a surviving pair are output (outer) */
    bool keep_build;  /* build rows without a surviving pair are output (outer) */
    bool exist_kind;  /* LeftSemi / LeftAnti / ExistenceJoin */
    bool emit_pairs;  /* Inner, Cross, outer: surviving pairs are output */
    bool track_build; /* a bitmap of matched build rows is needed */

    int n_side[2];              /* attributes of the left and right children */
    em_schema pair_schema;      /* left ++ right */
    const em_expr **pair_attrs; /* left ++ right */
    int *out_map;               /* output column -> pair column, or -1 for exists */
    bool *need;                 /* pair columns read by the condition or the output */
    em_expr_prog *cond;

    /* Build side. */
    em_batch *build;
    bool build_borrowed; /* build (and the index) belong to a shared object */
    int64_t n_build;
    bool build_has_null_key;
    uint8_t *build_matched;   /* bitmap of n_build bits, when track_build */
    const int32_t *cand_rows; /* set by the index's probe */

    /* Stream side: the current batch and the cursor over its candidate pairs. */
    int phase;
    em_batch *in; /* borrowed from the stream child */
    int64_t n_in;
    void *in_buf; /* lo, hi and in_matched, in_cap rows each */
    int64_t in_cap;
    int32_t *lo, *hi;    /* candidate ranges per logical stream row */
    uint8_t *in_matched; /* per logical stream row: a pair survived (or was output) */
    int64_t k, jpos;     /* cursor: logical stream row, position in its range */
    int64_t round_pairs; /* exist joins' rounds (exist_round_step): pairs of this round */
    int64_t finish_pos;  /* semi, anti, existence: next stream row to output (finish_step) */
    int64_t tail_pos;    /* next build row to consider in TAIL */

    /* Scratch for one step. */
    int32_t *scratch;      /* ps, pb and pk: EM_BATCH_CAP each */
    int32_t *ps, *pb, *pk; /* stream physical row, build row, stream logical row */
    void *aligned_buf;     /* aligned and aligned_pair, aligned_cap rows each */
    int64_t aligned_cap;
    int32_t *aligned;      /* physical stream row -> build row (-1: none) */
    int32_t *aligned_pair; /* physical stream row -> pair number */
    uint8_t *flags;        /* exists column values, or which pairs passed (outer joins) */
    int64_t flags_cap;
    em_batch *pair; /* pair batch (shell of pair_schema) */
    em_batch *out;  /* output shell (op->schema) */
    int64_t state_bytes;
    bool child_failed; /* the error came from a child: not prefixed again */
};

/*
 * Prepares j for op (whose children are left = 0 and right = 1) after its
 * open: compiles the join condition, derives the output mapping and flags.
 * build_side is the side to materialize. Errors name the operator.
 */
em_status em_jn_open(jn_state *j, em_op *op, const jn_index_vtab *index, int build_side,
                  em_error *err) EM_MUST_CHECK;
/* Chooses the other side to materialize, before the first em_jn_next (the
 * operator may read ahead first to find the smaller side). */
void em_jn_set_build_side(jn_state *j, int build_side);
/* The operator's next: builds on the first call, then streams. */
em_status em_jn_next(jn_state *j, em_batch **out, em_error *err) EM_MUST_CHECK;
void em_jn_close(jn_state *j);

/* The child operator on a side. */
static inline em_op *jn_child(const jn_state *j, int side) { return j->op->children[side]; }
static inline int jn_stream_side(const jn_state *j) { return 1 - j->build_side; }

/* Charges bytes of the operator's own state (for peak_bytes). */
void em_jn_account(jn_state *j, int64_t bytes);

/*
 * Gathers rows idx[0..n) of src into a fresh column (uninitialized on entry)
 * of `type`; idx[i] == -1 gives a null, idx[i] < -1 an unspecified valid
 * value (a row no selection refers to). src may be NULL when every idx < 0.
 */
em_status em_jn_gather(em_type type, const em_column *src, const int32_t *idx, int64_t n,
                    em_pool *pool, em_column *dst, em_error *err) EM_MUST_CHECK;

/* The hash-indexed join operator (hash_join.c) for a node of any of the
 * hash or sort-merge join kinds, materializing build_side. */
em_status em_jn_hash_join_create(const em_plan_node *node, em_op *left, em_op *right, int build_side,
                              em_op **out, em_error *err) EM_MUST_CHECK;

/* True for Spark's single-column NOT IN: a LeftAnti join the structured plan
 * marks isNullAwareAntiJoin, or (printed text) whose build side is a
 * BroadcastExchange in null-aware mode (HashedRelationBroadcastMode(keys,
 * true)). */
bool em_jn_node_null_aware(const em_plan_node *node);

#endif
