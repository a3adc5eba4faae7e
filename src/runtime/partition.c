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
 *                                    choose bounds; here they are the exact
 *                                    1/n quantiles of all keys, which only
 *                                    changes how evenly rows spread. What
 *                                    results depend on is kept: partitions
 *                                    concatenated in order are globally
 *                                    ordered, and equal keys share one.
 *   SinglePartition                  every row to 0.
 *   RoundRobinPartitioning(n)        rows dealt in turn; Spark starts each
 *                                    map task at a random partition, here at
 *                                    the task number (deterministic runs).
 */
#include <stdlib.h>
#include <string.h>

#include "ember/hash.h"
#include "ops/sort_keys.h"
#include "runtime/internal.h"

const char *rt_part_kind_name(rt_part_kind k) {
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

em_status rt_partitioning_parse(const em_plan_node *x, rt_partitioning *out, em_error *err) {
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
    int64_t rr_next; /* round robin: the next partition */
    int32_t *hashes;
    int64_t hashes_cap;
};

void rt_partitioner_free(rt_partitioner *pt) {
    if (!pt)
        return;
    for (int i = 0; i < pt->n_progs; i++)
        em_expr_prog_free(pt->progs[i]);
    free(pt->progs);
    free(pt->hashes);
    free(pt);
}

em_status rt_partitioner_create(const rt_partitioning *p, const em_expr *const *attrs, int n_attrs,
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
        if (!pt->progs) {
            free(pt);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
        }
        for (int i = 0; i < p->n_keys; i++) {
            const em_expr *k = p->kind == RT_PART_RANGE ? p->keys[i]->args[0] : p->keys[i];
            em_status s = em_expr_compile(k, attrs, n_attrs, opts, &pt->progs[i], err);
            if (s != EM_OK) {
                em_error_prefix(err, "%s key %d", rt_part_kind_name(p->kind), i + 1);
                rt_partitioner_free(pt);
                return s;
            }
            pt->n_progs++;
        }
    }
    *out = pt;
    return EM_OK;
}

em_status rt_partitioner_ids(rt_partitioner *pt, const em_batch *b, int32_t *ids, em_error *err) {
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

em_status rt_partitioner_range_keys(rt_partitioner *pt, const em_batch *b, em_pool *pool,
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

em_status rt_range_assign(const rt_partitioning *p, const rt_range_input *in, int32_t *ids,
                          em_pool *pool, em_error *err) {
    int64_t total = 0;
    for (int64_t b = 0; b < in->n_batches; b++)
        total += in->n[b];
    if (total == 0)
        return EM_OK;
    if (p->n == 1 || in->n_batches == 0) {
        memset(ids, 0, sizeof *ids * (size_t)total);
        return EM_OK;
    }
    if (total > INT32_MAX)
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "range partitioning of more than %d rows",
                       INT32_MAX);
    int nk = p->n_keys;
    em_column *all = calloc((size_t)nk, sizeof *all);
    em_sort_key *keys = calloc((size_t)nk, sizeof *keys);
    int32_t *idx = malloc(sizeof *idx * (size_t)total);
    em_status s = all && keys && idx ? EM_OK : EM_FAIL(err, EM_ERR_NOMEM, "out of memory");
    for (int k = 0; s == EM_OK && k < nk; k++) {
        s = em_column_init(&all[k], in->keys[0][k].type, total, pool, err);
        for (int64_t b = 0; s == EM_OK && b < in->n_batches; b++)
            s = em_column_append_rows(&all[k], &in->keys[b][k], in->sel[b], in->n[b], err);
        keys[k] = (em_sort_key){&all[k], p->keys[k]->ascending, p->keys[k]->nulls_first};
    }
    if (s == EM_OK) {
        for (int64_t i = 0; i < total; i++)
            idx[i] = (int32_t)i;
        s = em_sort_indices(keys, nk, idx, total, pool, err);
    }
    if (s == EM_OK) {
        /* Walk the sorted rows; move to the next partition past each bound,
         * but never between equal keys. */
        int part = 0;
        int64_t bound_pos = (total * 1) / p->n - 1; /* last row of partition 0 */
        for (int64_t j = 0; j < total; j++) {
            while (part < p->n - 1 && j > bound_pos &&
                   (j == 0 || em_sort_compare(keys, idx[j], keys, idx[j - 1], nk) != 0)) {
                part++;
                bound_pos = (total * (part + 1)) / p->n - 1;
            }
            ids[idx[j]] = part;
        }
    }
    for (int k = 0; all && k < nk; k++)
        em_column_reset(&all[k]);
    free(all);
    free(keys);
    free(idx);
    return s;
}
