/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which reduce partition a map-side row goes to, as Spark's
 * ShuffleExchangeExec decides it.
 *
 *   hashpartitioning(e1, .., ek, n)  Murmur3Hash(e1..ek, seed 42) folded left
 *                                    to right, then Pmod(hash, n): the same
 *                                    ids Spark computes, so a partition of
 *                                    Ember's shuffle holds the rows Spark's
 *                                    would.
 *   rangepartitioning(o1.., n)       bounds over the sort keys; partition i
 *                                    holds keys no greater than bound i and
 *                                    greater than bound i-1. Spark samples
 *                                    the input (reservoir per partition) to
 *                                    choose bounds; here each map task keeps
 *                                    every stride-th key (the stride doubling
 *                                    to bound the sample, so runs are
 *                                    deterministic), weighted by the rows it
 *                                    stands for: exact 1/n quantiles when a
 *                                    task's keys all fit. Bounds only change
 *                                    how evenly rows spread. What results
 *                                    depend on is kept: partitions
 *                                    concatenated in order are globally
 *                                    ordered, and equal keys share one.
 *   SinglePartition                  every row to 0.
 *   RoundRobinPartitioning(n)        rows dealt in turn; Spark starts each
 *                                    map task at a random partition, here at
 *                                    the task number (deterministic runs).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ember/hash.h"
#include "ops/op_util.h"
#include "ops/sort_keys.h"
#include "runtime/internal.h"

const char *em_rt_part_kind_name(rt_part_kind k) {
    switch (k) {
    case RT_PART_HASH:
        return "hashpartitioning";
    case RT_PART_RANGE:
        return "rangepartitioning";
    case RT_PART_SINGLE:
        return "SinglePartition";
    case RT_PART_ROUND_ROBIN:
        return "RoundRobinPartitioning";
    }
    return "?";
}

static em_status parse_count(const em_plan_node *x, const em_expr *e, int *out, em_error *err) {
    const char *t = e && e->kind == EM_EXPR_LITERAL ? e->text : NULL;
    char *end = NULL;
    long v = t ? strtol(t, &end, 10) : 0;
    if (!t || end == t || *end || v < 1 || v > 1000000)
        return EM_FAIL(err, EM_ERR_PARSE, "%s (%d): partition count is not a positive integer",
                       x->name, x->id);
    *out = (int)v;
    return EM_OK;
}

em_status em_rt_partitioning_parse(const em_plan_node *x, rt_partitioning *out, em_error *err) {
    memset(out, 0, sizeof *out);
    const em_plan_field *args = em_plan_node_field(x, EM_FIELD_ARGUMENTS);
    const em_expr *p = args && args->n_exprs > 0 ? args->exprs[0] : NULL;
    if (!p)
        return EM_FAIL(err, EM_ERR_PARSE, "%s (%d): no partitioning in Arguments", x->name, x->id);
    if ((p->kind == EM_EXPR_LITERAL || p->kind == EM_EXPR_RAW) && p->text &&
        strcmp(p->text, "SinglePartition") == 0) {
        out->kind = RT_PART_SINGLE;
        out->n = 1;
        return EM_OK;
    }
    if (p->kind == EM_EXPR_CALL && p->name && p->n_args >= 1) {
        if (strcmp(p->name, "hashpartitioning") == 0 || strcmp(p->name, "rangepartitioning") == 0) {
            bool range = p->name[0] == 'r';
            out->kind = range ? RT_PART_RANGE : RT_PART_HASH;
            out->n_keys = p->n_args - 1;
            out->keys = (const em_expr *const *)p->args;
            for (int i = 0; range && i < out->n_keys; i++)
                if (out->keys[i]->kind != EM_EXPR_SORT_ORDER || out->keys[i]->n_args < 1)
                    return EM_FAIL(err, EM_ERR_PARSE,
                                   "%s (%d): rangepartitioning key %d is not a sort order", x->name,
                                   x->id, i + 1);
            return parse_count(x, p->args[p->n_args - 1], &out->n, err);
        }
        if (strcmp(p->name, "RoundRobinPartitioning") == 0) {
            out->kind = RT_PART_ROUND_ROBIN;
            return parse_count(x, p->args[p->n_args - 1], &out->n, err);
        }
    }
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "%s (%d): partitioning %s is not supported", x->name,
                   x->id, p->name ? p->name : (p->text ? p->text : em_expr_kind_name(p->kind)));
}

struct rt_partitioner {
    rt_partitioning part;
    int n_progs;
    em_expr_prog **progs;
    int *pass;       /* hash keys that are input columns: their index, else -1 */
    int64_t rr_next; /* round robin: the next partition */
    int32_t *hashes;
    int64_t hashes_cap;
};

void em_rt_partitioner_free(rt_partitioner *pt) {
    if (!pt)
        return;
    for (int i = 0; i < pt->n_progs; i++)
        em_expr_prog_destroy(pt->progs[i]);
    free(pt->progs);
    free(pt->pass);
    free(pt->hashes);
    free(pt);
}

em_status em_rt_partitioner_create(const rt_partitioning *p, const em_expr *const *attrs, int n_attrs,
                                const em_expr_compile_options *opts, int task, rt_partitioner **out,
                                em_error *err) {
    *out = NULL;
    rt_partitioner *pt = calloc(1, sizeof *pt);
    if (!pt)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    pt->part = *p;
    pt->rr_next = p->n > 0 ? task % p->n : 0;
    if (p->kind == RT_PART_HASH || p->kind == RT_PART_RANGE) {
        pt->progs = calloc((size_t)(p->n_keys > 0 ? p->n_keys : 1), sizeof *pt->progs);
        pt->pass = malloc(sizeof *pt->pass * (size_t)(p->n_keys > 0 ? p->n_keys : 1));
        if (!pt->progs || !pt->pass) {
            em_rt_partitioner_free(pt);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        }
        for (int i = 0; i < p->n_keys; i++) {
            const em_expr *k = p->kind == RT_PART_RANGE ? p->keys[i]->args[0] : p->keys[i];
            /* a column is hashed where it lies, not copied out of the batch first */
            pt->pass[i] = p->kind == RT_PART_HASH ? em_opu_passthrough_index(k, attrs, n_attrs) : -1;
            em_status s = em_expr_compile(k, attrs, n_attrs, opts, &pt->progs[i], err);
            if (s != EM_OK) {
                em_error_prefix(err, "%s key %d", em_rt_part_kind_name(p->kind), i + 1);
                em_rt_partitioner_free(pt);
                return s;
            }
            pt->n_progs++;
        }
    }
    *out = pt;
    return EM_OK;
}

em_status em_rt_partitioner_ids(rt_partitioner *pt, const em_batch *b, int32_t *ids, em_error *err) {
    int64_t n = em_batch_rows(b);
    switch (pt->part.kind) {
    case RT_PART_SINGLE:
        memset(ids, 0, sizeof *ids * (size_t)n);
        return EM_OK;
    case RT_PART_ROUND_ROBIN:
        for (int64_t k = 0; k < n; k++) {
            ids[k] = (int32_t)pt->rr_next;
            pt->rr_next = (pt->rr_next + 1) % pt->part.n;
        }
        return EM_OK;
    case RT_PART_RANGE:
        return EM_FAIL(err, EM_ERR_INTERNAL, "range partitioning assigns ids over all rows");
    case RT_PART_HASH:
        break;
    }
    if (n > pt->hashes_cap) {
        int32_t *nh = realloc(pt->hashes, sizeof *nh * (size_t)n);
        if (!nh)
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory hashing shuffle keys");
        pt->hashes = nh;
        pt->hashes_cap = n;
    }
    for (int64_t k = 0; k < n; k++)
        pt->hashes[k] = EM_HASH_SEED;
    for (int i = 0; i < pt->n_progs; i++) {
        if (pt->pass[i] >= 0 && pt->pass[i] < b->n_cols &&
            em_type_equal(b->cols[pt->pass[i]].type, em_expr_prog_type(pt->progs[i]))) {
            em_hash_column(&b->cols[pt->pass[i]], b->sel, n, pt->hashes);
            continue;
        }
        em_column c;
        memset(&c, 0, sizeof c);
        em_status s = em_expr_eval(pt->progs[i], b, b->pool, &c, err);
        if (s == EM_OK)
            em_hash_column(&c, b->sel, n, pt->hashes);
        em_column_reset(&c);
        if (s != EM_OK)
            return s;
    }
    em_hash_partition_ids(pt->hashes, n, pt->part.n, ids);
    return EM_OK;
}

em_status em_rt_partitioner_range_keys(rt_partitioner *pt, const em_batch *b, em_pool *pool,
                                    em_column *keys, em_error *err) {
    for (int i = 0; i < pt->n_progs; i++) {
        memset(&keys[i], 0, sizeof keys[i]);
        em_status s = em_expr_eval(pt->progs[i], b, pool, &keys[i], err);
        if (s != EM_OK) {
            for (int j = 0; j <= i; j++)
                em_column_reset(&keys[j]);
            return s;
        }
    }
    return EM_OK;
}

void em_rt_range_sampler_reset(rt_range_sampler *s) {
    for (int k = 0; s->keys && k < s->n_keys; k++)
        em_column_reset(&s->keys[k]);
    free(s->keys);
    memset(s, 0, sizeof *s);
}

/* Keeps every other sampled row: the rows kept were the multiples of the
 * stride, they become the multiples of twice it. */
static em_status sampler_halve(rt_range_sampler *s, em_error *err) {
    int64_t m = (s->n_kept + 1) / 2;
    int32_t *idx = malloc(sizeof *idx * (size_t)(m ? m : 1));
    if (!idx)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory sampling range keys");
    for (int64_t i = 0; i < m; i++)
        idx[i] = (int32_t)(2 * i);
    em_status s_ = EM_OK;
    for (int k = 0; s_ == EM_OK && k < s->n_keys; k++) {
        em_column half;
        memset(&half, 0, sizeof half);
        s_ = em_column_take(&s->keys[k], idx, m, s->pool, &half, err);
        if (s_ == EM_OK) {
            em_column_reset(&s->keys[k]);
            s->keys[k] = half;
        }
    }
    free(idx);
    if (s_ == EM_OK) {
        s->n_kept = m;
        s->stride *= 2;
    }
    return s_;
}

em_status em_rt_range_sampler_add(rt_range_sampler *s, const em_column *keys, int n_keys, int64_t n,
                               em_error *err) {
    if (!s->keys) {
        if (!(s->keys = calloc((size_t)(n_keys > 0 ? n_keys : 1), sizeof *s->keys)))
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory sampling range keys");
        s->n_keys = n_keys;
        s->stride = 1;
        for (int k = 0; k < n_keys; k++)
            EM_TRY(em_column_init(&s->keys[k], keys[k].type, 0, s->pool, err));
    }
    int32_t *idx = malloc(sizeof *idx * (size_t)(n ? n : 1));
    if (!idx)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory sampling range keys");
    int64_t m = 0;
    for (int64_t i = (s->stride - s->n_rows % s->stride) % s->stride; i < n; i += s->stride)
        idx[m++] = (int32_t)i;
    em_status st = EM_OK;
    for (int k = 0; st == EM_OK && k < n_keys; k++)
        st = em_column_append_rows(&s->keys[k], &keys[k], idx, m, err);
    free(idx);
    if (st != EM_OK)
        return st;
    s->n_rows += n;
    s->n_kept += m;
    while (s->n_kept > 2 * (s->target > 0 ? s->target : 1))
        EM_TRY(sampler_halve(s, err));
    return EM_OK;
}

struct rt_range_bounds {
    int n_keys;
    em_column *all;       /* the samples' keys, concatenated */
    em_sort_key *keys;    /* over all */
    int n_bounds;         /* partitions that got samples, but the last */
    int32_t *bound_row;   /* [i]: the greatest key of bound_part[i] (row of all) */
    int32_t *bound_part;
    int last_part;        /* keys past every bound */
};

void em_rt_range_bounds_free(rt_range_bounds *bd) {
    if (!bd)
        return;
    for (int k = 0; bd->all && k < bd->n_keys; k++)
        em_column_reset(&bd->all[k]);
    free(bd->all);
    free(bd->keys);
    free(bd->bound_row);
    free(bd->bound_part);
    free(bd);
}

/* Walks the samples in key order, each weighing the rows it stands for, and
 * moves to the next partition once the weight passed reaches the next 1/n
 * of the total, but never between equal keys. With every row sampled these
 * are the exact quantiles. */
static void choose_bounds(rt_range_bounds *bd, int n_parts, const int32_t *idx, int64_t total,
                          const double *weight, double total_w) {
    int part = 0;
    double passed = 0;
    int64_t prev = -1;
    for (int64_t j = 0; j < total; j++) {
        int32_t row = idx[j];
        while (part < n_parts - 1 && passed >= floor(total_w * (part + 1) / n_parts) &&
               (prev < 0 || em_sort_compare(bd->keys, row, bd->keys, prev, bd->n_keys) != 0)) {
            if (prev >= 0 && bd->last_part == part) { /* close the partition at prev */
                bd->bound_row[bd->n_bounds] = (int32_t)prev;
                bd->bound_part[bd->n_bounds++] = part;
            }
            part++;
        }
        bd->last_part = part;
        passed += weight[j];
        prev = row;
    }
}

em_status em_rt_range_bounds_make(const rt_partitioning *p, const rt_range_sample *samples, int n,
                               em_pool *pool, rt_range_bounds **out, em_error *err) {
    *out = NULL;
    int64_t total = 0;
    double total_w = 0;
    const rt_range_sample *typed = NULL;
    for (int i = 0; i < n; i++) {
        total += samples[i].n_kept;
        total_w += (double)samples[i].n_rows;
        if (samples[i].n_kept > 0 && !typed)
            typed = &samples[i];
    }
    if (total > INT32_MAX)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "range partitioning over more than %d samples",
                       INT32_MAX);
    int nk = p->n_keys;
    rt_range_bounds *bd = calloc(1, sizeof *bd);
    if (!bd)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    bd->n_keys = nk;
    size_t nb = (size_t)(p->n > 0 ? p->n : 1);
    bd->all = calloc((size_t)(nk > 0 ? nk : 1), sizeof *bd->all);
    bd->keys = calloc((size_t)(nk > 0 ? nk : 1), sizeof *bd->keys);
    bd->bound_row = malloc(sizeof *bd->bound_row * nb);
    bd->bound_part = malloc(sizeof *bd->bound_part * nb);
    int32_t *idx = malloc(sizeof *idx * (size_t)(total ? total : 1));
    double *weight = malloc(sizeof *weight * (size_t)(total ? total : 1));
    double *by_row = malloc(sizeof *by_row * (size_t)(total ? total : 1));
    em_status s = bd->all && bd->keys && bd->bound_row && bd->bound_part && idx && weight && by_row
                      ? EM_OK
                      : EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int k = 0; s == EM_OK && typed && k < nk; k++) {
        s = em_column_init(&bd->all[k], typed->keys[k].type, total, pool, err);
        for (int i = 0; s == EM_OK && i < n; i++)
            if (samples[i].n_kept > 0)
                s = em_column_append_rows(&bd->all[k], &samples[i].keys[k], NULL,
                                          samples[i].n_kept, err);
        bd->keys[k] = (em_sort_key){&bd->all[k], p->keys[k]->ascending, p->keys[k]->nulls_first};
    }
    if (s == EM_OK && total > 0 && p->n > 1) {
        int64_t r = 0;
        for (int i = 0; i < n; i++)
            for (int64_t j = 0; j < samples[i].n_kept; j++)
                by_row[r++] = (double)samples[i].n_rows / (double)samples[i].n_kept;
        for (int64_t i = 0; i < total; i++)
            idx[i] = (int32_t)i;
        s = em_sort_indices(bd->keys, nk, idx, total, pool, err);
        for (int64_t j = 0; s == EM_OK && j < total; j++)
            weight[j] = by_row[idx[j]];
        if (s == EM_OK)
            choose_bounds(bd, p->n, idx, total, weight, total_w);
    }
    free(idx);
    free(weight);
    free(by_row);
    if (s != EM_OK) {
        em_rt_range_bounds_free(bd);
        return s;
    }
    *out = bd;
    return EM_OK;
}

em_status em_rt_range_bounds_ids(const rt_range_bounds *bd, const em_column *keys,
                              const int32_t *sel, int64_t n, int32_t *ids, em_error *err) {
    if (bd->n_bounds == 0) {
        for (int64_t k = 0; k < n; k++)
            ids[k] = bd->last_part;
        return EM_OK;
    }
    em_sort_key *rk = malloc(sizeof *rk * (size_t)bd->n_keys);
    if (!rk)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory assigning range partitions");
    for (int k = 0; k < bd->n_keys; k++)
        rk[k] = (em_sort_key){&keys[k], bd->keys[k].ascending, bd->keys[k].nulls_first};
    for (int64_t k = 0; k < n; k++) {
        int64_t row = sel ? sel[k] : k;
        /* the first bound the key does not sort after */
        int lo = 0, hi = bd->n_bounds;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (em_sort_compare(rk, row, bd->keys, bd->bound_row[mid], bd->n_keys) <= 0)
                hi = mid;
            else
                lo = mid + 1;
        }
        ids[k] = lo < bd->n_bounds ? bd->bound_part[lo] : bd->last_part;
    }
    free(rk);
    return EM_OK;
}

em_status em_rt_range_assign(const rt_partitioning *p, const rt_range_input *in, int32_t *ids,
                          em_pool *pool, em_error *err) {
    int64_t total = 0;
    for (int64_t b = 0; b < in->n_batches; b++)
        total += in->n[b];
    if (total == 0)
        return EM_OK;
    /* every row is its own sample: the exact quantiles */
    int nk = p->n_keys;
    em_column *all = calloc((size_t)(nk > 0 ? nk : 1), sizeof *all);
    em_status s = all ? EM_OK : EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int k = 0; s == EM_OK && k < nk; k++) {
        s = em_column_init(&all[k], in->keys[0][k].type, total, pool, err);
        for (int64_t b = 0; s == EM_OK && b < in->n_batches; b++)
            s = em_column_append_rows(&all[k], &in->keys[b][k], in->sel[b], in->n[b], err);
    }
    rt_range_bounds *bd = NULL;
    rt_range_sample one = {total, total, all};
    if (s == EM_OK)
        s = em_rt_range_bounds_make(p, &one, 1, pool, &bd, err);
    if (s == EM_OK)
        s = em_rt_range_bounds_ids(bd, all, NULL, total, ids, err);
    em_rt_range_bounds_free(bd);
    for (int k = 0; all && k < nk; k++)
        em_column_reset(&all[k]);
    free(all);
    return s;
}
