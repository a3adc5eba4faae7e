/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key sets for runtime filters. Broadcast keys are usually few and often
 * dense (dimension keys), so a set whose values span at most 2^24 integers
 * is a bitmap over [min, max] (2 MiB at most, one load per test); a wider
 * one is an open-addressing table of the distinct values at most half
 * full. Either way a value outside [min, max] is rejected by two compares.
 * Values of every width are held as int64, sign-extended as the column's
 * type reads them.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/key_filter.h"
#include "ops/op_util.h"

#define KS_BITMAP_MAX_SPAN (1LL << 24)

struct em_key_set {
    em_pool *pool;
    int64_t n;        /* distinct values */
    int64_t min, max; /* of the values; min > max when empty */
    uint64_t *bits;   /* bitmap over [min, max], or NULL */
    int64_t n_words;
    int64_t *slots; /* hash table, or NULL */
    uint8_t *used;
    int64_t cap; /* slots: a power of two */
};

static inline int64_t value_at(const em_column *c, int width, int64_t r) {
    const uint8_t *p = c->values->data;
    switch (width) {
    case 1:
        return ((const int8_t *)p)[r];
    case 2:
        return ((const int16_t *)p)[r];
    case 4:
        return ((const int32_t *)p)[r];
    default:
        return ((const int64_t *)p)[r];
    }
}

static inline uint64_t slot_of(int64_t v, int64_t cap) {
    return ((uint64_t)v * 0x9E3779B97F4A7C15ull) >> 32 & (uint64_t)(cap - 1);
}

static inline bool contains(const em_key_set *s, int64_t v) {
    if (v < s->min || v > s->max)
        return false;
    if (s->bits) {
        uint64_t d = (uint64_t)(v - s->min);
        return (s->bits[d >> 6] >> (d & 63)) & 1;
    }
    for (uint64_t i = slot_of(v, s->cap);; i = (i + 1) & (uint64_t)(s->cap - 1)) {
        if (!s->used[i])
            return false;
        if (s->slots[i] == v)
            return true;
    }
}

/* Adds v; true when it was not in the set yet. */
static inline bool insert(em_key_set *s, int64_t v) {
    if (s->bits) {
        uint64_t d = (uint64_t)(v - s->min);
        uint64_t m = 1ull << (d & 63);
        bool fresh = !(s->bits[d >> 6] & m);
        s->bits[d >> 6] |= m;
        return fresh;
    }
    for (uint64_t i = slot_of(v, s->cap);; i = (i + 1) & (uint64_t)(s->cap - 1)) {
        if (!s->used[i]) {
            s->used[i] = 1;
            s->slots[i] = v;
            return true;
        }
        if (s->slots[i] == v)
            return false;
    }
}

void em_key_set_free(void *set) {
    em_key_set *s = set;
    if (!s)
        return;
    em_pool_free(s->pool, s->bits, s->n_words * 8);
    em_pool_free(s->pool, s->slots, s->cap * 8);
    em_pool_free(s->pool, s->used, s->cap);
    em_pool_free(s->pool, s, sizeof *s);
}

bool em_key_set_may_overlap(const em_key_set *s, int64_t lo, int64_t hi) {
    return s->n > 0 && lo <= s->max && hi >= s->min;
}

em_status em_key_set_build(void *column_arg, const em_batch_list *rel, em_pool *pool, em_par *par,
                           void **out, em_error *err) {
    (void)par; /* one pass over one column: not worth cutting */
    int col = *(const int *)column_arg;
    *out = NULL;
    em_key_set *s = em_pool_calloc(pool, sizeof *s, err);
    if (!s)
        return err->code;
    s->pool = pool;
    s->min = INT64_MAX;
    s->max = INT64_MIN;
    int64_t rows = 0;
    for (int64_t b = 0; b < rel->n_batches; b++) {
        const em_batch *bt = rel->batches[b];
        if (col < 0 || col >= bt->n_cols) {
            em_key_set_free(s);
            return EM_FAIL(err, EM_ERR_INTERNAL, "runtime filter: column %d of a %d-column relation",
                           col, bt->n_cols);
        }
        const em_column *c = &bt->cols[col];
        int w = em_type_width(c->type);
        int64_t n = em_batch_rows(bt);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = bt->sel ? bt->sel[i] : i;
            if (!em_column_is_valid(c, r))
                continue;
            int64_t v = value_at(c, w, r);
            s->min = v < s->min ? v : s->min;
            s->max = v > s->max ? v : s->max;
            rows++;
        }
    }
    *out = s;
    if (rows == 0)
        return EM_OK; /* min > max: nothing passes */
    uint64_t span = (uint64_t)s->max - (uint64_t)s->min;
    if (span < (uint64_t)KS_BITMAP_MAX_SPAN) {
        s->n_words = (int64_t)(span >> 6) + 1;
        if (!(s->bits = em_pool_calloc(pool, s->n_words * 8, err)))
            goto fail;
    } else {
        s->cap = 16;
        while (s->cap < rows * 2)
            s->cap *= 2;
        s->slots = em_pool_alloc(pool, s->cap * 8, err);
        s->used = em_pool_calloc(pool, s->cap, err);
        if (!s->slots || !s->used)
            goto fail;
    }
    for (int64_t b = 0; b < rel->n_batches; b++) {
        const em_batch *bt = rel->batches[b];
        const em_column *c = &bt->cols[col];
        int w = em_type_width(c->type);
        int64_t n = em_batch_rows(bt);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = bt->sel ? bt->sel[i] : i;
            if (em_column_is_valid(c, r))
                s->n += insert(s, value_at(c, w, r));
        }
    }
    return EM_OK;
fail:
    *out = NULL;
    em_key_set_free(s);
    return err->code;
}

em_status em_key_set_filter(const em_key_set *s, em_batch *b, int c, int32_t *sel_scratch,
                            int64_t *kept, em_error *err) {
    const em_column *col = &b->cols[c];
    int w = em_type_width(col->type);
    int64_t n = em_batch_rows(b), k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = b->sel ? b->sel[i] : i;
        sel_scratch[k] = (int32_t)r;
        k += em_column_is_valid(col, r) && contains(s, value_at(col, w, r));
    }
    *kept = k;
    if (k == n)
        return EM_OK;
    return em_opu_set_sel(b, sel_scratch, k, err);
}
