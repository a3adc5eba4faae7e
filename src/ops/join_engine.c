/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The join engine (see join_engine.h): a state machine over
 *
 *   BUILD   drain the build child into one batch, let the index build
 *   PULL    take the next stream batch, let the index find candidates
 *   PAIRS   turn candidates into pair batches of at most EM_BATCH_CAP pairs,
 *           filter them by the join condition, record matches, output them
 *   FINISH  the stream batch's own result: unmatched rows of an outer join,
 *           or the rows a semi/anti/existence join keeps
 *   TAIL    after the stream ends: build rows the join type keeps
 *
 * Outer joins keep the stream's order (a sort-merge join's parents may rely
 * on it): a stream row with no candidate is output inline as a pair with
 * build row -1; with a condition, a row whose pairs all failed it is output
 * with nulls right after its last pair (a row outputs its surviving pairs
 * or one null row, so a step never outputs more rows than it has pairs).
 *
 * Invariants: pb[i] < 0 means "no build row" (nulls); ps[i] < 0 means "no
 * stream row". In the aligned layout the pair batch has the stream batch's
 * physical rows and selects the paired ones, aligned_pair[row] giving the
 * pair; in the compact layout pair i is row i.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/join_engine.h"
#include "ops/op_util.h"

enum { PH_BUILD, PH_PULL, PH_PAIRS, PH_FINISH, PH_TAIL, PH_DONE };

void em_jn_account(jn_state *j, int64_t bytes) {
    j->state_bytes += bytes;
    if (j->state_bytes > j->op->metrics.peak_bytes)
        j->op->metrics.peak_bytes = j->state_bytes;
}

/* Grows a pool-charged array to at least need elements of size elem. */
static em_status grow_array(jn_state *j, void **p, int64_t *cap, int64_t need, int64_t elem,
                            em_error *err) {
    if (need <= *cap)
        return EM_OK;
    int64_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *np = em_pool_realloc(j->op->ctx->pool, *p, *cap * elem, nc * elem, err);
    if (!np)
        return err ? err->code : EM_ERR_NOMEM;
    em_jn_account(j, (nc - *cap) * elem);
    *p = np;
    *cap = nc;
    return EM_OK;
}

static void free_array(jn_state *j, void **p, int64_t bytes) {
    if (*p)
        em_pool_free(j->op->ctx ? j->op->ctx->pool : NULL, *p, bytes);
    *p = NULL;
}

/* ------------------------------------------------------------------ gathering
 */

#define GATHER_FIXED(T)                                                                            \
    do {                                                                                           \
        T *gd_ = (T *)dst->values->data;                                                           \
        const T *gs_ = src ? (const T *)src->values->data : NULL;                                  \
        for (int64_t i = 0; i < n; i++)                                                            \
            gd_[i] = idx[i] >= 0 ? gs_[idx[i]] : (T)0;                                             \
    } while (0)

em_status em_jn_gather(em_type type, const em_column *src, const int32_t *idx, int64_t n,
                    em_pool *pool, em_column *dst, em_error *err) {
    /* nulls come from idx == -1 and from src's own nulls (null_count -1: unknown) */
    bool src_nulls = src && src->validity && src->null_count != 0;
    bool null_rows = false;
    int64_t bytes = 0;
    if (em_type_is_varlen(type) && src) {
        const int32_t *off = em_column_offsets(src);
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] >= 0)
                bytes += off[idx[i] + 1] - off[idx[i]];
            else
                null_rows |= idx[i] == -1;
        }
        if (bytes > INT32_MAX)
            return EM_FAIL(err, EM_ERR_OVERFLOW, "join output string column exceeds 2 GiB");
    } else {
        for (int64_t i = 0; i < n; i++)
            null_rows |= idx[i] == -1;
    }
    EM_TRY(em_column_init(dst, type, n, pool, err));
    em_status s = EM_OK;
    if ((null_rows || src_nulls) && type.id != EM_TYPE_NULL)
        s = em_column_ensure_validity(dst, err);
    if (s == EM_OK && bytes > 0)
        s = em_column_reserve(dst, 0, bytes, err);
    if (s != EM_OK) {
        em_column_reset(dst);
        return s;
    }
    int64_t nulls = type.id == EM_TYPE_NULL ? n : 0;
    if (dst->validity && type.id != EM_TYPE_NULL) {
        /* a byte of validity per 8 rows; rows that are not selected (< -1) count as valid */
        uint8_t *v = dst->validity->data;
        const uint8_t *sv = src_nulls ? src->validity->data : NULL;
        for (int64_t i0 = 0; i0 < n; i0 += 8) {
            unsigned byte = 0;
            for (int b = 0; b < 8 && i0 + b < n; b++) {
                int32_t r = idx[i0 + b];
                bool ok = r >= 0 ? (!sv || em_bit_get(sv, r)) : r != -1;
                byte |= (unsigned)ok << b;
                nulls += !ok;
            }
            v[i0 >> 3] = (uint8_t)byte;
        }
        dst->validity->size = em_bitmap_bytes(n);
    } else if (dst->validity) {
        if (n > 0)
            memset(dst->validity->data, 0, (size_t)em_bitmap_bytes(n));
        dst->validity->size = em_bitmap_bytes(n);
    }
    switch (type.id) {
    case EM_TYPE_NULL:
        break;
    case EM_TYPE_BOOLEAN: {
        uint8_t *d = dst->values->data;
        if (n > 0)
            memset(d, 0, (size_t)em_bitmap_bytes(n));
        for (int64_t i = 0; i < n; i++)
            if (idx[i] >= 0 && em_bit_get(src->values->data, idx[i]))
                em_bit_set(d, i);
        break;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        int32_t *doff = (int32_t *)dst->values->data;
        uint8_t *dc = dst->data->data;
        const int32_t *soff = src ? em_column_offsets(src) : NULL;
        const uint8_t *sc = src && src->data ? src->data->data : NULL;
        int32_t pos = 0;
        doff[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            if (idx[i] >= 0) {
                int32_t len = soff[idx[i] + 1] - soff[idx[i]];
                if (len > 0)
                    memcpy(dc + pos, sc + soff[idx[i]], (size_t)len);
                pos += len;
            }
            doff[i + 1] = pos;
        }
        dst->data->size = pos;
        break;
    }
    default:
        switch (em_type_width(type)) {
        case 1:
            GATHER_FIXED(uint8_t);
            break;
        case 2:
            GATHER_FIXED(uint16_t);
            break;
        case 4:
            GATHER_FIXED(uint32_t);
            break;
        case 8:
            GATHER_FIXED(uint64_t);
            break;
        case 16:
            GATHER_FIXED(em_i128);
            break;
        default:
            em_column_reset(dst);
            return EM_FAIL(err, EM_ERR_UNSUPPORTED, "join: column of width %d",
                           em_type_width(type));
        }
        break;
    }
    dst->length = n;
    if (dst->values) /* bitmap bytes, n + 1 offsets, or n fixed-width values */
        dst->values->size = type.id == EM_TYPE_BOOLEAN ? em_bitmap_bytes(n)
                            : em_type_is_varlen(type)  ? (n + 1) * 4
                                                       : n * em_type_width(type);
    dst->null_count = nulls;
    return EM_OK;
}

/* A boolean column of n rows from byte flags (no nulls). */
static em_status bool_column(const uint8_t *flags, int64_t n, em_pool *pool, em_column *dst,
                             em_error *err) {
    EM_TRY(em_column_init(dst, em_type_make(EM_TYPE_BOOLEAN), n, pool, err));
    uint8_t *d = dst->values->data;
    if (n > 0)
        memset(d, 0, (size_t)em_bitmap_bytes(n));
    for (int64_t i = 0; i < n; i++)
        if (flags[i])
            em_bit_set(d, i);
    dst->length = n;
    dst->values->size = em_bitmap_bytes(n);
    dst->null_count = 0;
    return EM_OK;
}

/* ------------------------------------------------------------------ setup */

bool em_jn_node_null_aware(const em_plan_node *node) {
    if (!node || node->join_type != EM_JOIN_LEFT_ANTI || node->n_children < 2)
        return false;
    if (node->null_aware_anti)
        return true;
    const em_plan_node *b = node->children[node->build_side == EM_BUILD_LEFT ? 0 : 1];
    for (int guard = 0; b && guard < 64; guard++) {
        if (b->kind == EM_NODE_REUSED_EXCHANGE)
            b = b->reuses;
        else if (b->kind == EM_NODE_BROADCAST_EXCHANGE)
            break;
        else if (b->n_children == 1 &&
                 (b->kind == EM_NODE_INPUT_ADAPTER || b->kind == EM_NODE_BROADCAST_QUERY_STAGE ||
                  b->kind == EM_NODE_WHOLE_STAGE_CODEGEN || b->kind == EM_NODE_COLUMNAR_TO_ROW))
            b = b->children[0];
        else
            return false;
    }
    if (!b || b->kind != EM_NODE_BROADCAST_EXCHANGE)
        return false;
    const em_plan_field *f = em_plan_node_field(b, EM_FIELD_ARGUMENTS);
    for (int i = 0; f && i < f->n_exprs; i++) {
        const em_expr *e = f->exprs[i];
        if (e->kind != EM_EXPR_CALL || !e->name || strcmp(e->name, "HashedRelationBroadcastMode"))
            continue;
        const em_expr *last = e->n_args >= 2 ? e->args[e->n_args - 1] : NULL;
        return last && (last->kind == EM_EXPR_LITERAL || last->kind == EM_EXPR_RAW) && last->text &&
               strcmp(last->text, "true") == 0;
    }
    return false;
}

/* Marks the pair columns the expression reads; false when it reads columns
 * by ordinal (then every column is needed). */
static bool mark_attrs(const em_expr *e, const em_expr **attrs, int n, bool *need) {
    if (e->kind == EM_EXPR_BOUND_REF)
        return false;
    if (e->kind == EM_EXPR_ATTR) {
        int i = em_opu_attr_index(attrs, n, e->id);
        if (i >= 0)
            need[i] = true;
    }
    for (int a = 0; a < e->n_args; a++)
        if (e->args[a] && !mark_attrs(e->args[a], attrs, n, need))
            return false;
    return true;
}

static bool side_preserved(em_join_type t, int side) {
    if (t == EM_JOIN_FULL_OUTER)
        return true;
    return side == JN_LEFT ? t == EM_JOIN_LEFT_OUTER : t == EM_JOIN_RIGHT_OUTER;
}

/* What follows from which side is built: the sides each join type keeps,
 * and the pair columns the output or the condition read. */
static void derive_sides(jn_state *j) {
    int build_side = j->build_side, stream = 1 - build_side;
    j->keep_stream = side_preserved(j->type, stream);
    j->keep_build = side_preserved(j->type, build_side);
    j->track_build = j->keep_build || (j->exist_kind && build_side == JN_LEFT);
    j->null_aware = em_jn_node_null_aware(j->op->node) && build_side == JN_RIGHT && !j->cond_expr;
    int np = j->n_side[0] + j->n_side[1];
    memset(j->need, 0, sizeof *j->need * (size_t)np);
    /* Pair columns nobody reads are not gathered: a semi/anti/existence join
     * over the stream side outputs the stream batch itself, so its pairs only
     * feed the condition. */
    bool out_from_pairs = !(j->exist_kind && build_side == JN_RIGHT);
    for (int i = 0; out_from_pairs && i < j->op->n_output; i++)
        if (j->out_map[i] >= 0)
            j->need[j->out_map[i]] = true;
    if (j->cond_expr && !mark_attrs(j->cond_expr, j->pair_attrs, np, j->need))
        for (int i = 0; i < np; i++)
            j->need[i] = true;
}

void em_jn_set_build_side(jn_state *j, int build_side) {
    j->build_side = build_side;
    derive_sides(j);
}

em_status em_jn_open(jn_state *j, em_op *op, const jn_index_vtab *index, int build_side,
                  em_error *err) {
    const em_plan_node *node = op->node;
    j->op = op;
    j->index = index;
    j->build_side = build_side;
    j->phase = PH_BUILD;
    j->type = node->join_type;
    if (j->type == EM_JOIN_NONE || j->type == EM_JOIN_CROSS)
        j->type = EM_JOIN_INNER;
    if (j->type == EM_JOIN_OTHER)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d): join type %s", op->vtab->name, node->id,
                       node->join_type_text ? node->join_type_text : "?");
    const em_plan_field *cf = em_plan_node_field(node, EM_FIELD_JOIN_CONDITION);
    j->cond_expr = cf && cf->n_exprs > 0 ? cf->exprs[0] : NULL;
    j->exist_kind = j->type == EM_JOIN_LEFT_SEMI || j->type == EM_JOIN_LEFT_ANTI ||
                    j->type == EM_JOIN_EXISTENCE;
    j->emit_pairs = !j->exist_kind;

    em_op *l = op->children[0], *r = op->children[1];
    j->n_side[0] = l->n_output;
    j->n_side[1] = r->n_output;
    int np = l->n_output + r->n_output;
    j->pair_attrs = calloc((size_t)(np > 0 ? np : 1), sizeof *j->pair_attrs);
    j->need = calloc((size_t)(np > 0 ? np : 1), sizeof *j->need);
    j->out_map = calloc((size_t)(op->n_output > 0 ? op->n_output : 1), sizeof *j->out_map);
    if (!j->pair_attrs || !j->out_map || !j->need)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory opening %s", op->vtab->name);
    EM_TRY(em_schema_init(&j->pair_schema, np, err));
    for (int i = 0; i < np; i++) {
        const em_op *c = i < l->n_output ? l : r;
        int ci = i < l->n_output ? i : i - l->n_output;
        j->pair_attrs[i] = c->output[ci];
        const em_field *f = &c->schema.fields[ci];
        EM_TRY(em_schema_set(&j->pair_schema, i, f->name, f->type, true, err));
    }
    for (int i = 0; i < op->n_output; i++) {
        int64_t id = opu_expr_id(op->output[i]);
        if (j->type == EM_JOIN_EXISTENCE && node->exists_attr && id == node->exists_attr->id) {
            j->out_map[i] = -1;
            continue;
        }
        int p = em_opu_attr_index(j->pair_attrs, j->exist_kind ? l->n_output : np, id);
        if (p < 0)
            return EM_FAIL(err, EM_ERR_BIND, "%s (%d): output attribute %s#%lld is not an input",
                           op->vtab->name, node->id,
                           op->output[i]->name ? op->output[i]->name : "?", (long long)id);
        j->out_map[i] = p;
    }
    derive_sides(j);
    if (j->cond_expr && em_expr_compile(j->cond_expr, j->pair_attrs, np, &op->ctx->expr_opts,
                                        &j->cond, err) != EM_OK)
        return em_op_fail(op, err);
    EM_TRY(em_opu_shell_create(&j->pair_schema, op->ctx->pool, &j->pair, err));
    EM_TRY(em_opu_shell_create(&op->schema, op->ctx->pool, &j->out, err));
    j->scratch = em_pool_alloc(op->ctx->pool, 3 * EM_BATCH_CAP * 4, err);
    if (!j->scratch)
        return em_op_fail(op, err);
    em_jn_account(j, 3 * EM_BATCH_CAP * 4);
    j->ps = j->scratch;
    j->pb = j->scratch + EM_BATCH_CAP;
    j->pk = j->scratch + 2 * EM_BATCH_CAP;
    return EM_OK;
}

void em_jn_close(jn_state *j) {
    if (!j->op)
        return;
    if (j->index && j->index->free)
        j->index->free(j);
    em_expr_prog_destroy(j->cond);
    j->cond = NULL;
    em_batch_destroy(j->pair);
    em_batch_destroy(j->out);
    if (!j->build_borrowed)
        em_batch_destroy(j->build);
    em_batch_destroy(j->prebuilt);
    j->prebuilt = NULL;
    em_batch_list_reset(&j->replay);
    j->replay_pos = 0;
    j->pair = j->out = j->build = NULL;
    j->build_borrowed = false;
    free_array(j, (void **)&j->build_matched, em_bitmap_bytes(j->n_build));
    free_array(j, &j->in_buf, j->in_cap * 9);
    free_array(j, &j->aligned_buf, j->aligned_cap * 8);
    free_array(j, (void **)&j->scratch, 3 * EM_BATCH_CAP * 4);
    free_array(j, (void **)&j->flags, j->flags_cap);
    em_schema_reset(&j->pair_schema);
    free(j->pair_attrs);
    free(j->out_map);
    free(j->need);
    j->need = NULL;
    j->pair_attrs = NULL;
    j->out_map = NULL;
    j->in_cap = j->aligned_cap = 0;
    j->op = NULL;
}

/* ------------------------------------------------------------------ build */

/* The task's own bitmap of matched build rows, when the join type needs one. */
static em_status track_matches(jn_state *j, em_error *err) {
    if (!j->track_build)
        return EM_OK;
    int64_t nb = em_bitmap_bytes(j->n_build);
    j->build_matched = em_pool_calloc(j->op->ctx->pool, nb, err);
    if (!j->build_matched)
        return err ? err->code : EM_ERR_NOMEM;
    em_jn_account(j, nb);
    return EM_OK;
}

static em_status do_build(jn_state *j, em_error *err) {
    em_op *child = jn_child(j, j->build_side);
    em_pool *pool = j->op->ctx->pool;
    bool adopted = false;
    if (j->adopt)
        EM_TRY(j->adopt(j, &adopted, err));
    if (adopted)
        return track_matches(j, err);
    bool drain = j->prebuilt == NULL; /* the operator gathered the rows already */
    if (j->prebuilt) {
        j->build = j->prebuilt;
        j->prebuilt = NULL;
    } else {
        EM_TRY(em_batch_create(&child->schema, 0, pool, &j->build, err));
    }
    while (drain) {
        em_batch *b = NULL;
        em_status s = em_op_next(child, &b, err);
        if (s == EM_DONE)
            break;
        if (s != EM_OK) {
            j->child_failed = true;
            return s;
        }
        if (j->build->n_rows + em_batch_rows(b) > INT32_MAX - 1)
            return EM_FAIL(err, EM_ERR_OOM_BUDGET, "build side exceeds 2^31 rows");
        EM_TRY(em_batch_append(j->build, b, err));
    }
    j->n_build = j->build->n_rows;
    int64_t bytes = 0;
    for (int i = 0; i < j->build->n_cols; i++) {
        const em_column *c = &j->build->cols[i];
        bytes += (c->values ? c->values->capacity : 0) + (c->data ? c->data->capacity : 0) +
                 (c->validity ? c->validity->capacity : 0);
    }
    em_jn_account(j, bytes);
    EM_TRY(j->index->build(j, err));
    return track_matches(j, err);
}

/* Whether the join can output anything given an empty build side. */
static bool output_without_build(const jn_state *j) {
    if (j->keep_stream)
        return true;
    return j->exist_kind && j->build_side == JN_RIGHT && j->type != EM_JOIN_LEFT_SEMI;
}

/* ------------------------------------------------------------------ pairs */

static em_status ensure_in(jn_state *j, int64_t n, em_error *err) {
    if (n > j->in_cap || !j->in_buf)
        EM_TRY(grow_array(j, &j->in_buf, &j->in_cap, n > 0 ? n : 1, 9, err));
    j->lo = j->in_buf;
    j->hi = j->lo + j->in_cap;
    j->in_matched = (uint8_t *)(j->hi + j->in_cap);
    return EM_OK;
}

static em_status ensure_aligned(jn_state *j, int64_t rows, em_error *err) {
    if (rows > j->aligned_cap || !j->aligned_buf)
        EM_TRY(grow_array(j, &j->aligned_buf, &j->aligned_cap, rows > 0 ? rows : 1, 8, err));
    j->aligned = j->aligned_buf;
    j->aligned_pair = j->aligned + j->aligned_cap;
    return EM_OK;
}

/*
 * Fills j->pair with the m pairs (ps, pb). aligned: ps is strictly increasing
 * and not negative; the pair batch shares the stream batch j->in and selects
 * the rows ps. Otherwise both sides are gathered (ps < 0: nulls).
 */
static em_status assemble(jn_state *j, int64_t m, bool aligned, em_error *err) {
    em_pool *pool = j->op->ctx->pool;
    em_batch *p = j->pair;
    em_opu_shell_release(p);
    int stream = jn_stream_side(j);
    int first[2] = {0, j->n_side[0]};
    const int32_t *bidx = j->pb;
    int64_t rows = m;
    if (aligned) {
        rows = j->in->n_rows;
        EM_TRY(ensure_aligned(j, rows, err));
        for (int64_t r = 0; r < rows; r++)
            j->aligned[r] = -2; /* not selected */
        for (int64_t i = 0; i < m; i++) {
            j->aligned[j->ps[i]] = j->pb[i];
            j->aligned_pair[j->ps[i]] = (int32_t)i;
        }
        bidx = j->aligned;
    }
    const em_batch *b = j->build;
    for (int c = 0; c < j->n_side[j->build_side]; c++) {
        em_column *dst = &p->cols[first[j->build_side] + c];
        if (!j->need[first[j->build_side] + c])
            continue;
        const em_column *src = b->n_rows > 0 ? &b->cols[c] : NULL;
        EM_TRY(em_jn_gather(dst->type, src, bidx, rows, pool, dst, err));
    }
    for (int c = 0; c < j->n_side[stream]; c++) {
        em_column *dst = &p->cols[first[stream] + c];
        if (!j->need[first[stream] + c])
            continue;
        if (aligned)
            em_column_share(dst, &j->in->cols[c]);
        else
            EM_TRY(em_jn_gather(dst->type, j->in && j->in->n_rows > 0 ? &j->in->cols[c] : NULL, j->ps,
                             m, pool, dst, err));
    }
    p->n_rows = rows;
    return em_opu_set_sel(p, aligned ? j->ps : NULL, m, err);
}

/* assemble() of the m pairs in ps/pb, aligned on the stream batch when their
 * stream rows run strictly upward (*aligned says whether they did). */
static em_status assemble_pairs(jn_state *j, int64_t m, bool *aligned, em_error *err) {
    *aligned = true;
    for (int64_t i = 1; i < m && *aligned; i++)
        *aligned = j->ps[i] > j->ps[i - 1];
    return assemble(j, m, *aligned, err);
}

/* Makes j->out the output columns of the pair batch (exists: column of flags).
 */
static em_status emit_pairs_out(jn_state *j, const uint8_t *flags, em_error *err) {
    em_batch *o = j->out;
    em_opu_shell_release(o);
    for (int i = 0; i < o->n_cols; i++) {
        int p = j->out_map[i];
        if (p >= 0)
            em_column_share(&o->cols[i], &j->pair->cols[p]);
        else
            EM_TRY(bool_column(flags, j->pair->n_rows, j->op->ctx->pool, &o->cols[i], err));
    }
    o->n_rows = j->pair->n_rows;
    return em_opu_set_sel(o, j->pair->sel, j->pair->n_sel, err);
}

static inline void set_build_bit(jn_state *j, int32_t row) {
    if (row >= 0)
        em_bit_set(j->build_matched, row);
}

static em_status ensure_flags(jn_state *j, int64_t n, em_error *err) {
    return grow_array(j, (void **)&j->flags, &j->flags_cap, n > 0 ? n : 1, 1, err);
}

/*
 * Outer joins with a condition, in stream order: the step's surviving pairs,
 * and right after the last pair of a stream row that no pair kept, that
 * row with nulls (a row cut at the step's end is decided in the next step).
 * passed[i]: pair i survived the condition. Leaves the output in j->out.
 */
static em_status ordered_outer_output(jn_state *j, int64_t m, const uint8_t *passed, bool *produced,
                                      em_error *err) {
    /* a row outputs its passing pairs, or one null row: never more rows than pairs */
    EM_TRY(ensure_aligned(j, m, err));
    int32_t *os = j->aligned, *ob = j->aligned_pair;
    int32_t last_k = j->pk[m - 1];
    bool last_done = j->k > last_k || j->jpos >= j->hi[last_k];
    int64_t mo = 0;
    for (int64_t i = 0; i < m; i++) {
        int32_t k = j->pk[i];
        if (j->pb[i] < 0) { /* a row without candidates */
            os[mo] = j->ps[i];
            ob[mo++] = -1;
            continue;
        }
        if (passed[i]) {
            os[mo] = j->ps[i];
            ob[mo++] = j->pb[i];
        }
        bool row_ends = i + 1 < m ? j->pk[i + 1] != k : last_done;
        if (row_ends && !j->in_matched[k]) {
            j->in_matched[k] = 1;
            os[mo] = j->ps[i];
            ob[mo++] = -1;
        }
    }
    if (mo == 0)
        return EM_OK;
    memcpy(j->ps, os, sizeof *os * (size_t)mo);
    memcpy(j->pb, ob, sizeof *ob * (size_t)mo);
    bool aligned;
    EM_TRY(assemble_pairs(j, mo, &aligned, err));
    EM_TRY(emit_pairs_out(j, NULL, err));
    *produced = true;
    return EM_OK;
}

/*
 * One round of a semi, anti or existence join with a condition over the
 * left stream side: the next candidate of every stream row still unmatched,
 * then the condition. A row is decided by its first passing pair, so rounds
 * stop asking for the rest of its candidates (a lineitem row's semi join on
 * its order's other lines by a different supplier, TPC-H q21, mostly
 * passes on the first or second instead of trying all of them). lo[k] is
 * the row's cursor, k the round's; the rows' output comes from in_matched
 * at PH_FINISH.
 */
static em_status exist_round_step(jn_state *j, em_error *err) {
    const int32_t *sel = j->in->sel;
    const int32_t *rows = j->cand_rows;
    if (j->k >= j->n_in) {
        /* a round is over: another while it made pairs */
        if (j->round_pairs == 0) {
            j->phase = PH_FINISH;
            return EM_OK;
        }
        j->k = 0;
        j->round_pairs = 0;
    }
    /* at most a batch of pairs per step: a stream batch may hold more rows */
    int64_t m = 0, k = j->k;
    for (; k < j->n_in && m < EM_BATCH_CAP; k++) {
        if (j->in_matched[k] || j->lo[k] >= j->hi[k])
            continue;
        j->ps[m] = sel ? sel[k] : (int32_t)k;
        j->pb[m] = rows ? rows[j->lo[k]] : j->lo[k];
        j->pk[m] = (int32_t)k;
        j->lo[k]++;
        m++;
    }
    j->k = k;
    j->round_pairs += m;
    if (m == 0)
        return EM_OK;
    bool aligned;
    EM_TRY(assemble_pairs(j, m, &aligned, err));
    EM_TRY(em_expr_filter(j->cond, j->pair, err));
    em_batch *p = j->pair;
    int64_t n_out = em_batch_rows(p);
    for (int64_t t = 0; t < n_out; t++) {
        int64_t r = p->sel ? p->sel[t] : t;
        int64_t i = aligned ? j->aligned_pair[r] : r;
        j->in_matched[j->pk[i]] = 1;
        if (j->track_build)
            set_build_bit(j, j->pb[i]);
    }
    return EM_OK;
}

/* One step of candidate pairs of the current stream batch; *produced is set
 * when j->out holds output. */
static em_status pairs_step(jn_state *j, bool *produced, em_error *err) {
    *produced = false;
    if (j->exist_kind && j->build_side == JN_RIGHT && j->cond && !j->keep_stream)
        return exist_round_step(j, err);
    const int32_t *sel = j->in->sel;
    const int32_t *rows = j->cand_rows;
    bool inline_nulls = j->keep_stream;
    bool ordered = j->keep_stream && j->cond;
    bool skip_matched = j->exist_kind && j->build_side == JN_RIGHT;
    int64_t m = 0;
    while (j->k < j->n_in && m < EM_BATCH_CAP) {
        int64_t k = j->k;
        if (j->jpos >= j->hi[k] || (skip_matched && j->in_matched[k])) {
            /* ordered: a row with candidates is decided after its last pair */
            if (inline_nulls && !j->in_matched[k] && (!ordered || j->lo[k] >= j->hi[k])) {
                j->ps[m] = sel ? sel[k] : (int32_t)k;
                j->pb[m] = -1;
                j->pk[m] = (int32_t)k;
                m++;
                j->in_matched[k] = 1; /* handled */
            }
            if (++j->k < j->n_in)
                j->jpos = j->lo[j->k];
            continue;
        }
        int64_t take = j->hi[k] - j->jpos;
        if (take > EM_BATCH_CAP - m)
            take = EM_BATCH_CAP - m;
        int32_t s = sel ? sel[k] : (int32_t)k;
        for (int64_t t = 0; t < take; t++) {
            j->ps[m] = s;
            j->pb[m] = rows ? rows[j->jpos + t] : (int32_t)(j->jpos + t);
            j->pk[m] = (int32_t)k;
            m++;
        }
        j->jpos += take;
        if (!j->cond && inline_nulls)
            j->in_matched[k] = 1;
    }
    if (m == 0) {
        j->phase = PH_FINISH;
        return EM_OK;
    }
    bool aligned;
    EM_TRY(assemble_pairs(j, m, &aligned, err));
    if (j->cond)
        EM_TRY(em_expr_filter(j->cond, j->pair, err));
    if (ordered) {
        EM_TRY(ensure_flags(j, m, err));
        memset(j->flags, 0, (size_t)m);
    }
    em_batch *p = j->pair;
    int64_t n_out = em_batch_rows(p);
    for (int64_t t = 0; t < n_out; t++) {
        int64_t r = p->sel ? p->sel[t] : t;
        int64_t i = aligned ? j->aligned_pair[r] : r;
        if (j->pb[i] < 0)
            continue; /* a null-extended row is not a match, whatever the condition says */
        j->in_matched[j->pk[i]] = 1;
        if (ordered)
            j->flags[i] = 1;
        if (j->track_build)
            set_build_bit(j, j->pb[i]);
    }
    if (ordered)
        return ordered_outer_output(j, m, j->flags, produced, err);
    if (j->emit_pairs && n_out > 0) {
        EM_TRY(emit_pairs_out(j, NULL, err));
        *produced = true;
    }
    return EM_OK;
}

/* The current stream batch's own output after its pairs; *produced as above. */
static em_status finish_step(jn_state *j, bool *produced, em_error *err) {
    *produced = false;
    const int32_t *sel = j->in->sel;
    if (j->keep_stream) {
        int64_t m = 0;
        for (int64_t k = 0; k < j->n_in && m < EM_BATCH_CAP; k++) {
            if (j->in_matched[k])
                continue;
            j->in_matched[k] = 1;
            j->ps[m] = sel ? sel[k] : (int32_t)k;
            j->pb[m] = -1;
            m++;
        }
        if (m == 0)
            return EM_OK;
        EM_TRY(assemble(j, m, true, err));
        EM_TRY(emit_pairs_out(j, NULL, err));
        *produced = true;
        return EM_OK;
    }
    if (!j->exist_kind || j->build_side != JN_RIGHT)
        return EM_OK;
    /* semi/anti/existence over the stream (left) side: share its columns */
    int64_t m = 0;
    bool existence = j->type == EM_JOIN_EXISTENCE;
    EM_TRY(ensure_aligned(j, j->n_in, err));
    int32_t *keep_rows = j->aligned;
    if (existence) {
        EM_TRY(ensure_flags(j, j->in->n_rows, err));
        memset(j->flags, 0, (size_t)j->in->n_rows);
    }
    /* at most a batch per step: a stream batch may hold more rows */
    int64_t k = j->finish_pos;
    for (; k < j->n_in && m < EM_BATCH_CAP; k++) {
        bool keep;
        int32_t r = sel ? sel[k] : (int32_t)k;
        if (existence) {
            j->flags[r] = j->in_matched[k];
            keep = true;
        } else if (j->type == EM_JOIN_LEFT_SEMI) {
            keep = j->in_matched[k];
        } else if (j->null_aware && j->n_build > 0) {
            keep = !j->in_matched[k] && j->lo[k] >= 0;
        } else {
            keep = !j->in_matched[k];
        }
        if (keep)
            keep_rows[m++] = r;
    }
    j->finish_pos = k;
    if (m == 0)
        return EM_OK;
    em_batch *o = j->out;
    em_opu_shell_release(o);
    for (int i = 0; i < o->n_cols; i++) {
        int p = j->out_map[i];
        if (p >= 0)
            em_column_share(&o->cols[i], &j->in->cols[p]);
        else
            EM_TRY(bool_column(j->flags, j->in->n_rows, j->op->ctx->pool, &o->cols[i], err));
    }
    o->n_rows = j->in->n_rows;
    EM_TRY(em_opu_set_sel(o, j->in->sel || m < j->in->n_rows ? keep_rows : NULL, m, err));
    *produced = true;
    return EM_OK;
}

/* Build rows the join keeps after the stream ended, EM_BATCH_CAP at a time. */
static em_status tail_step(jn_state *j, bool *produced, em_error *err) {
    *produced = false;
    bool existence = j->type == EM_JOIN_EXISTENCE;
    int64_t m = 0;
    if (existence)
        EM_TRY(ensure_flags(j, EM_BATCH_CAP, err));
    while (j->tail_pos < j->n_build && m < EM_BATCH_CAP) {
        int32_t r = (int32_t)j->tail_pos++;
        bool matched = em_bit_get(j->build_matched, r);
        bool keep;
        if (j->keep_build || j->type == EM_JOIN_LEFT_ANTI)
            keep = !matched;
        else if (j->type == EM_JOIN_LEFT_SEMI)
            keep = matched;
        else
            keep = true;
        if (!keep)
            continue;
        if (existence)
            j->flags[m] = matched;
        j->ps[m] = -1;
        j->pb[m] = r;
        m++;
    }
    if (m == 0) {
        j->phase = PH_DONE;
        return EM_OK;
    }
    em_batch *saved = j->in;
    j->in = NULL;
    em_status s = assemble(j, m, false, err);
    j->in = saved;
    EM_TRY(s);
    EM_TRY(emit_pairs_out(j, j->flags, err));
    *produced = true;
    return EM_OK;
}

/* Exist-kind joins over the left stream side without a condition decide from
 * the candidate ranges alone. */
static void decide_without_pairs(jn_state *j) {
    for (int64_t k = 0; k < j->n_in; k++)
        j->in_matched[k] = j->hi[k] > j->lo[k];
}

/* Exist-kind joins whose left side is the build side, without a condition:
 * every candidate is a match. */
static void mark_candidates(jn_state *j) {
    for (int64_t k = 0; k < j->n_in; k++)
        for (int64_t p = j->lo[k]; p < j->hi[k]; p++)
            set_build_bit(j, j->cand_rows ? j->cand_rows[p] : (int32_t)p);
}

static em_status pull_step(jn_state *j, em_error *err) {
    em_batch *in = NULL;
    em_status s = EM_OK;
    if (j->replay_pos < j->replay.n_batches)
        in = j->replay.batches[j->replay_pos++];
    else
        s = em_op_next(jn_child(j, jn_stream_side(j)), &in, err);
    if (s == EM_DONE) {
        j->in = NULL;
        bool tail = j->track_build;
        if (tail && j->stream_end)
            EM_TRY(j->stream_end(j, &tail, err));
        j->phase = tail ? PH_TAIL : PH_DONE;
        return EM_OK;
    }
    if (s != EM_OK) {
        j->child_failed = true;
        return s;
    }
    j->in = in;
    j->n_in = em_batch_rows(in);
    EM_TRY(ensure_in(j, j->n_in, err));
    memset(j->in_matched, 0, (size_t)j->n_in);
    j->cand_rows = NULL;
    EM_TRY(j->index->probe(j, in, j->lo, j->hi, err));
    j->k = 0;
    j->jpos = j->n_in > 0 ? j->lo[0] : 0;
    j->round_pairs = 0;
    j->finish_pos = 0;
    if (j->exist_kind && !j->cond) {
        if (j->build_side == JN_RIGHT) {
            decide_without_pairs(j);
            j->phase = PH_FINISH;
        } else {
            mark_candidates(j);
            j->phase = PH_PULL;
        }
        return EM_OK;
    }
    j->phase = PH_PAIRS;
    return EM_OK;
}

static em_status next_inner(jn_state *j, em_batch **out, em_error *err) {
    volatile int *cancel = j->op->ctx->cancel;
    for (;;) {
        bool produced = false;
        /* one call may run many steps that output nothing (a condition no pair passes) */
        if (cancel && *cancel)
            return EM_FAIL(err, EM_ERR_CANCELLED, "task cancelled");
        switch (j->phase) {
        case PH_BUILD:
            EM_TRY(do_build(j, err));
            j->phase = PH_PULL;
            if ((j->n_build == 0 && !output_without_build(j)) ||
                (j->null_aware && j->build_has_null_key))
                j->phase = PH_DONE;
            break;
        case PH_PULL:
            EM_TRY(pull_step(j, err));
            break;
        case PH_PAIRS:
            EM_TRY(pairs_step(j, &produced, err));
            break;
        case PH_FINISH:
            EM_TRY(finish_step(j, &produced, err));
            /* keep_stream emits unmatched rows EM_BATCH_CAP at a time, and
             * semi, anti and existence joins the stream batch's rows */
            if (!produced || (!j->keep_stream && j->finish_pos >= j->n_in))
                j->phase = PH_PULL;
            break;
        case PH_TAIL:
            EM_TRY(tail_step(j, &produced, err));
            break;
        default:
            return EM_DONE;
        }
        if (produced) {
            *out = j->out;
            return EM_OK;
        }
    }
}

em_status em_jn_next(jn_state *j, em_batch **out, em_error *err) {
    em_status s = next_inner(j, out, err);
    if (s != EM_OK && s != EM_DONE) {
        j->phase = PH_DONE;
        return j->child_failed ? s : em_op_fail(j->op, err);
    }
    return s;
}
