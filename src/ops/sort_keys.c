/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sorting row numbers by sort keys (see sort_keys.h for the ordering).
 *
 * Algorithm: the first key is normalized into a 64-bit unsigned prefix per
 * row whose unsigned order is the key's order (sign bit flipped for
 * integers, the IEEE total-order trick for doubles with NaN and -0.0
 * canonicalized, the first 8 bytes big-endian for strings, inverted for
 * DESC), with nulls placed by a first partitioning pass. Rows are then merge
 * sorted as (prefix, row) pairs; equal prefixes fall back to the full
 * comparison, from the first key when the prefix is not exact (long
 * strings, wide decimals) and from the second otherwise. The merge sort is
 * stable and runs its comparator inline, without function pointers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_util.h"
#include "ops/sort_keys.h"

static inline int cmp_double(double x, double y) {
    if (isnan(x))
        return isnan(y) ? 0 : 1;
    if (isnan(y))
        return -1;
    return x < y ? -1 : (x > y ? 1 : 0); /* -0.0 == 0.0 */
}

static inline int cmp_value(const em_column *a, int64_t i, const em_column *b, int64_t j) {
    const void *va = a->values ? a->values->data : NULL;
    const void *vb = b->values ? b->values->data : NULL;
#define CMP(T)                                                                                     \
    do {                                                                                           \
        T x = ((const T *)va)[i], y = ((const T *)vb)[j];                                          \
        return x < y ? -1 : (x > y ? 1 : 0);                                                       \
    } while (0)
    switch (a->type.id) {
    case EM_TYPE_BOOLEAN:
        return (int)em_bit_get(va, i) - (int)em_bit_get(vb, j);
    case EM_TYPE_BYTE:
        CMP(int8_t);
    case EM_TYPE_SHORT:
        CMP(int16_t);
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        CMP(int32_t);
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        CMP(int64_t);
    case EM_TYPE_DECIMAL:
        CMP(em_i128);
    case EM_TYPE_FLOAT:
        return cmp_double(((const float *)va)[i], ((const float *)vb)[j]);
    case EM_TYPE_DOUBLE:
        return cmp_double(((const double *)va)[i], ((const double *)vb)[j]);
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *oa = va, *ob = vb;
        int32_t la = oa[i + 1] - oa[i], lb = ob[j + 1] - ob[j];
        int32_t m = la < lb ? la : lb;
        int c = m ? memcmp(a->data->data + oa[i], b->data->data + ob[j], (size_t)m) : 0;
        if (c)
            return c < 0 ? -1 : 1;
        return la < lb ? -1 : (la > lb ? 1 : 0);
    }
    default:
        return 0;
    }
#undef CMP
}

static inline int cmp_keys(const em_sort_key *a, int64_t i, const em_sort_key *b, int64_t j,
                           int from, int n) {
    for (int k = from; k < n; k++) {
        bool na = !em_column_is_valid(a[k].col, i), nb = !em_column_is_valid(b[k].col, j);
        int c;
        if (na || nb) {
            if (na && nb)
                continue;
            c = na ? -1 : 1; /* null before value */
            if (!a[k].nulls_first)
                c = -c;
            return c;
        }
        c = cmp_value(a[k].col, i, b[k].col, j);
        if (c)
            return a[k].ascending ? c : -c;
    }
    return 0;
}

int em_sort_compare(const em_sort_key *a, int64_t i, const em_sort_key *b, int64_t j, int n) {
    return cmp_keys(a, i, b, j, 0, n);
}

typedef struct sk_entry {
    uint64_t prefix;
    int32_t row;
} sk_entry;

/* Order-preserving 64-bit image of a non-null value; *exact = the prefix
 * decides equality too. */
static inline uint64_t sk_prefix(const em_column *c, int64_t r, bool *exact) {
    const void *v = c->values ? c->values->data : NULL;
    const uint64_t sign = 1ull << 63;
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
        return em_bit_get(v, r);
    case EM_TYPE_BYTE:
        return (uint64_t)(int64_t)((const int8_t *)v)[r] ^ sign;
    case EM_TYPE_SHORT:
        return (uint64_t)(int64_t)((const int16_t *)v)[r] ^ sign;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        return (uint64_t)(int64_t)((const int32_t *)v)[r] ^ sign;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return (uint64_t)((const int64_t *)v)[r] ^ sign;
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE: {
        double d =
            c->type.id == EM_TYPE_FLOAT ? (double)((const float *)v)[r] : ((const double *)v)[r];
        if (d == 0.0)
            d = 0.0;
        if (isnan(d))
            return ~0ull; /* greater than every number */
        uint64_t bits;
        memcpy(&bits, &d, 8);
        return (bits & sign) ? ~bits : bits ^ sign;
    }
    case EM_TYPE_DECIMAL: {
        em_i128 x = ((const em_i128 *)v)[r];
        if (x >= INT64_MIN && x <= INT64_MAX)
            return (uint64_t)(int64_t)x ^ sign;
        *exact = false;
        return x < 0 ? 0 : ~0ull;
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *o = v;
        int32_t len = o[r + 1] - o[r];
        const uint8_t *p = c->data->data + o[r];
        uint64_t w = 0;
        for (int k = 0; k < 8; k++)
            w = (w << 8) | (k < len ? p[k] : 0);
        *exact = false;
        return w;
    }
    default:
        *exact = false;
        return 0;
    }
}

static void sk_merge_sort(sk_entry *a, sk_entry *tmp, int64_t n, const em_sort_key *keys,
                          int n_keys, int from) {
    /* bottom-up: insertion-sorted runs of 16, then merges */
    const int64_t RUN = 16;
    for (int64_t lo = 0; lo < n; lo += RUN) {
        int64_t hi = lo + RUN < n ? lo + RUN : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            sk_entry x = a[i];
            int64_t j = i - 1;
            while (j >= lo) {
                int c = a[j].prefix < x.prefix ? -1 : (a[j].prefix > x.prefix ? 1 : 0);
                if (c == 0 && from < n_keys)
                    c = cmp_keys(keys, a[j].row, keys, x.row, from, n_keys);
                if (c <= 0)
                    break;
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = x;
        }
    }
    sk_entry *src = a, *dst = tmp;
    for (int64_t w = RUN; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c = src[i].prefix < src[j].prefix ? -1 : (src[i].prefix > src[j].prefix);
                if (c == 0 && from < n_keys)
                    c = cmp_keys(keys, src[i].row, keys, src[j].row, from, n_keys);
                dst[k++] = c <= 0 ? src[i++] : src[j++];
            }
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        sk_entry *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, sizeof *a * (size_t)n);
}

em_status em_sort_indices(const em_sort_key *keys, int n_keys, int32_t *idx, int64_t n,
                          em_pool *pool, em_error *err) {
    if (n < 2 || n_keys == 0)
        return EM_OK;
    int64_t bytes = (int64_t)sizeof(sk_entry) * n * 2;
    sk_entry *ent = em_pool_alloc(pool, bytes, err);
    if (!ent)
        return err ? err->code : EM_ERR_NOMEM;
    sk_entry *tmp = ent + n;
    const em_column *c0 = keys[0].col;
    /* nulls of the first key: a stable block in front or behind */
    int64_t n_null = 0;
    if (c0->validity || c0->type.id == EM_TYPE_NULL)
        for (int64_t i = 0; i < n; i++)
            n_null += !em_column_is_valid(c0, idx[i]);
    int64_t null_at = keys[0].nulls_first ? 0 : n - n_null;
    int64_t val_at = keys[0].nulls_first ? n_null : 0;
    bool exact = true;
    int64_t vi = val_at, ni = null_at;
    for (int64_t i = 0; i < n; i++) {
        int32_t r = idx[i];
        if (n_null && !em_column_is_valid(c0, r)) {
            ent[ni].prefix = 0;
            ent[ni++].row = r;
            continue;
        }
        uint64_t p = sk_prefix(c0, r, &exact);
        ent[vi].prefix = keys[0].ascending ? p : ~p;
        ent[vi++].row = r;
    }
    int64_t n_val = n - n_null;
    sk_merge_sort(ent + val_at, tmp, n_val, keys, n_keys, exact ? 1 : 0);
    /* the null block is ordered by the remaining keys */
    sk_merge_sort(ent + null_at, tmp, n_null, keys, n_keys, 1);
    for (int64_t i = 0; i < n; i++)
        idx[i] = ent[i].row;
    em_pool_free(pool, ent, bytes);
    return EM_OK;
}

em_status em_sort_spec_init(em_sort_spec *sp, const em_expr *const *orders, int n,
                            const em_expr *const *attrs, int n_attrs,
                            const em_expr_compile_options *opts, em_error *err) {
    memset(sp, 0, sizeof *sp);
    sp->keys = calloc((size_t)n + 1, sizeof *sp->keys);
    sp->pass = calloc((size_t)n + 1, sizeof *sp->pass);
    sp->progs = calloc((size_t)n + 1, sizeof *sp->progs);
    sp->tmp = calloc((size_t)n + 1, sizeof *sp->tmp);
    if (!sp->keys || !sp->pass || !sp->progs || !sp->tmp)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory compiling sort keys");
    sp->n = n;
    for (int i = 0; i < n; i++) {
        const em_expr *o = orders[i];
        const em_expr *e = o;
        if (o->kind == EM_EXPR_SORT_ORDER && o->n_args == 1) {
            e = o->args[0];
            sp->keys[i].ascending = o->ascending;
            sp->keys[i].nulls_first = o->nulls_first;
        } else { /* a bare expression: Spark's default ASC NULLS FIRST */
            sp->keys[i].ascending = true;
            sp->keys[i].nulls_first = true;
        }
        sp->pass[i] = em_opu_passthrough_index(e, attrs, n_attrs);
        if (sp->pass[i] < 0)
            EM_TRY(em_expr_compile(e, attrs, n_attrs, opts, &sp->progs[i], err));
    }
    return EM_OK;
}

em_status em_sort_spec_bind(em_sort_spec *sp, const em_batch *b, em_pool *pool, em_error *err) {
    for (int i = 0; i < sp->n; i++) {
        if (sp->pass[i] >= 0) {
            sp->keys[i].col = &b->cols[sp->pass[i]];
            continue;
        }
        em_column_reset(&sp->tmp[i]);
        EM_TRY(em_expr_eval(sp->progs[i], b, pool, &sp->tmp[i], err));
        sp->keys[i].col = &sp->tmp[i];
    }
    return EM_OK;
}

void em_sort_spec_reset(em_sort_spec *sp) {
    for (int i = 0; i < sp->n; i++) {
        if (sp->progs)
            em_expr_prog_destroy(sp->progs[i]);
        if (sp->tmp)
            em_column_reset(&sp->tmp[i]);
    }
    free(sp->keys);
    free(sp->pass);
    free(sp->progs);
    free(sp->tmp);
    memset(sp, 0, sizeof *sp);
}
