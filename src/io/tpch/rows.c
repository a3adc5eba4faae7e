/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TPC-H rows (clause 4.2.3), appended to batches.
 *
 * Each table's row r draws its values, in column order, from the stream
 * generator tpch_rng_at(table stream, r) (see tpch_internal.h); a lineitem
 * line draws from tpch_rng_at(lineitem stream, order index * 8 + line number).
 * Nothing depends on any other row, so a row range can be generated anywhere.
 * Derived values follow the specification exactly:
 *   p_retailprice   (90000 + ((key / 10) mod 20001) + 100 * (key mod 1000)) /
 * 100 ps_suppkey      (key + i * (S / 4 + (key - 1) / S)) mod S + 1, i = 0..3
 *   o_orderkey      sparse: the first 8 keys of every 32
 *   o_custkey       uniform over the customers whose key mod 3 != 0
 *   o_orderstatus   F / O when every line's status is F / O, else P
 *   o_totalprice    sum of extendedprice * (1 + tax) * (1 - discount), computed
 *                   exactly in 1/10000 cents and rounded half up to cents once
 *   l_extendedprice quantity * p_retailprice(partkey)
 *   l_suppkey       one of the part's four partsupp suppliers
 *   l_returnflag    R or A (random) when receiptdate <= 1995-06-17, else N
 *   l_linestatus    O when shipdate > 1995-06-17, else F
 *
 * Fixed-width values are written straight into the columns' buffers after
 * one reservation per call; strings go through em_column_append_bytes. The
 * columns keep column.c's invariants (values->size matches length) at return.
 */
#include <stdio.h>
#include <string.h>

#include "io/tpch/tpch_internal.h"

/* ---- column access ----------------------------------------------------- */

/* Reserves room for n more rows in every column, and max_string bytes per row
 * in every string column. */
static em_status rows_reserve(em_batch *b, int64_t n, int64_t max_string, em_error *err) {
    for (int i = 0; i < b->n_cols; i++)
        EM_TRY(em_column_reserve(&b->cols[i], n,
                                 em_type_is_varlen(b->cols[i].type) ? n * max_string : 0, err));
    return EM_OK;
}

/* The first free slot of a fixed-width column (values are committed by
 * rows_commit_fixed). */
static inline int64_t *slot_i64(em_batch *b, int col) {
    return (int64_t *)b->cols[col].values->data + b->cols[col].length;
}
static inline int32_t *slot_i32(em_batch *b, int col) {
    return (int32_t *)b->cols[col].values->data + b->cols[col].length;
}
static inline em_i128 *slot_dec(em_batch *b, int col) {
    return (em_i128 *)b->cols[col].values->data + b->cols[col].length;
}

/* Marks n values written past the current length of every fixed-width column.
 */
static void rows_commit_fixed(em_batch *b, int64_t n) {
    for (int i = 0; i < b->n_cols; i++) {
        em_column *c = &b->cols[i];
        if (em_type_is_varlen(c->type))
            continue;
        c->length += n;
        c->values->size = c->length * em_type_width(c->type);
        c->null_count = 0;
    }
}

void em_tpch_batch_rewind(em_batch *b) {
    for (int i = 0; i < b->n_cols; i++) {
        em_column *c = &b->cols[i];
        c->length = 0;
        c->null_count = 0;
        if (c->values)
            c->values->size = em_type_is_varlen(c->type) ? (int64_t)sizeof(int32_t) : 0;
        if (c->data)
            c->data->size = 0; /* offsets[0] is still 0 */
    }
    b->n_rows = 0;
}

static void rows_finish(em_batch *b) { b->n_rows = b->n_cols > 0 ? b->cols[0].length : 0; }

/* Appends a string. The call's rows_reserve made room for max_string bytes per
 * row, so this is normally a copy and two stores; the general append handles
 * anything longer. Keeps values->size and data->size current, as column.c does.
 */
static inline em_status put_str(em_batch *b, int col, const char *p, int len, em_error *err) {
    em_column *c = &b->cols[col];
    int32_t *off = (int32_t *)c->values->data;
    int64_t i = c->length;
    if ((int64_t)off[i] + len > c->data->capacity || (i + 2) * 4 > c->values->capacity)
        return em_column_append_bytes(c, p, len, err);
    memcpy(c->data->data + off[i], p, (size_t)len);
    off[i + 1] = off[i] + len;
    c->length = i + 1;
    c->values->size = (i + 2) * 4;
    c->data->size = off[i + 1];
    return EM_OK;
}
static inline em_status put_cstr(em_batch *b, int col, const char *s, em_error *err) {
    return put_str(b, col, s, (int)strlen(s), err);
}

/* ---- formatting -------------------------------------------------------- */

/* prefix + key with at least 9 digits, zero padded; returns the length. */
static int fmt_key(char *buf, const char *prefix, int64_t key) {
    int n = (int)strlen(prefix);
    memcpy(buf, prefix, (size_t)n);
    char digits[24];
    int d = 0;
    uint64_t v = (uint64_t)key;
    do {
        digits[d++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (d < 9)
        digits[d++] = '0';
    while (d > 0)
        buf[n++] = digits[--d];
    return n;
}

static char *fmt_digits(char *p, int64_t v, int width) {
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + width;
}

/* Clause 4.2.2.9: country code (nation key + 10), then three local numbers. */
static int fmt_phone(char *buf, int64_t nation, tpch_rng *g) {
    char *p = fmt_digits(buf, nation + 10, 2);
    *p++ = '-';
    p = fmt_digits(p, tpch_uniform(g, 100, 999), 3);
    *p++ = '-';
    p = fmt_digits(p, tpch_uniform(g, 100, 999), 3);
    *p++ = '-';
    p = fmt_digits(p, tpch_uniform(g, 1000, 9999), 4);
    return (int)(p - buf);
}

static inline uint64_t stream_of(const tpch_ctx *c, int id) {
    return tpch_mix64(c->seed + (uint64_t)id * 0x9e3779b97f4a7c15ULL);
}

static inline em_status put_text(const tpch_ctx *c, em_batch *b, int col, tpch_rng *g, int min,
                                 int max, em_error *err) {
    int len;
    const char *t = em_tpch_text(&c->pool, g, min, max, &len);
    return put_str(b, col, t, len, err);
}

/* ---- tables ------------------------------------------------------------ */

static em_status gen_part(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b, em_error *err) {
    EM_TRY(rows_reserve(b, n, 64, err));
    uint64_t stream = stream_of(c, TPCH_STREAM_PART);
    int64_t *key = slot_i64(b, 0);
    int32_t *size = slot_i32(b, 5);
    em_i128 *price = slot_dec(b, 7);
    char buf[128];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i, pk = r + 1;
        tpch_rng g = tpch_rng_at(stream, (uint64_t)r);
        key[i] = pk;
        /* p_name: five distinct colors. */
        int picked[5], len = 0;
        for (int k = 0; k < 5; k++) {
            int w;
            bool dup;
            do {
                w = (int)tpch_uniform(&g, 0, 91);
                dup = false;
                for (int j = 0; j < k; j++)
                    dup |= picked[j] == w;
            } while (dup);
            picked[k] = w;
            if (k)
                buf[len++] = ' ';
            size_t wl = strlen(em_tpch_colors[w]);
            memcpy(buf + len, em_tpch_colors[w], wl);
            len += (int)wl;
        }
        EM_TRY(put_str(b, 1, buf, len, err));
        int m = (int)tpch_uniform(&g, 1, 5), nb = (int)tpch_uniform(&g, 1, 5);
        memcpy(buf, "Manufacturer#", 13);
        buf[13] = (char)('0' + m);
        EM_TRY(put_str(b, 2, buf, 14, err));
        memcpy(buf, "Brand#", 6);
        buf[6] = (char)('0' + m);
        buf[7] = (char)('0' + nb);
        EM_TRY(put_str(b, 3, buf, 8, err));
        const char *s1 = em_tpch_type_s1[tpch_uniform(&g, 0, 5)];
        const char *s2 = em_tpch_type_s2[tpch_uniform(&g, 0, 4)];
        const char *s3 = em_tpch_type_s3[tpch_uniform(&g, 0, 4)];
        len = snprintf(buf, sizeof buf, "%s %s %s", s1, s2, s3);
        EM_TRY(put_str(b, 4, buf, len, err));
        size[i] = (int32_t)tpch_uniform(&g, 1, 50);
        const char *c1 = em_tpch_container_s1[tpch_uniform(&g, 0, 4)];
        const char *c2 = em_tpch_container_s2[tpch_uniform(&g, 0, 7)];
        len = snprintf(buf, sizeof buf, "%s %s", c1, c2);
        EM_TRY(put_str(b, 6, buf, len, err));
        price[i] = tpch_money(c->schema, tpch_retail_cents(pk));
        EM_TRY(put_text(c, b, 8, &g, 5, 22, err));
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    return EM_OK;
}

static em_status gen_partsupp(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b,
                              em_error *err) {
    EM_TRY(rows_reserve(b, n, 198, err));
    uint64_t stream = stream_of(c, TPCH_STREAM_PARTSUPP);
    int64_t *pkey = slot_i64(b, 0), *skey = slot_i64(b, 1);
    int32_t *avail = slot_i32(b, 2);
    em_i128 *cost = slot_dec(b, 3);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i, pk = r / 4 + 1;
        tpch_rng g = tpch_rng_at(stream, (uint64_t)r);
        pkey[i] = pk;
        skey[i] = tpch_part_supplier(pk, r % 4, c->n_supplier);
        avail[i] = (int32_t)tpch_uniform(&g, 1, 9999);
        cost[i] = tpch_money(c->schema, tpch_uniform(&g, 100, 100000));
        EM_TRY(put_text(c, b, 4, &g, 49, 198, err));
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    return EM_OK;
}

/* 0, or the kind (1 complaints, 2 recommends) of a supplier row's BBB comment.
 */
static int supplier_bbb(const tpch_ctx *c, int64_t r) {
    int lo = 0, hi = c->n_bbb;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c->bbb_rows[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n_bbb && c->bbb_rows[lo] == r ? c->bbb_kind[lo] : 0;
}

/* Supplier and customer share their first six columns: key, "<Prefix>#<key>",
 * address (v-string [10,40]), nation key, phone, account balance. Fills row i
 * of the call from g and leaves g positioned for the table's own columns. */
static em_status gen_party(const tpch_ctx *c, em_batch *b, int64_t i, int64_t r, const char *prefix,
                           tpch_rng *g, em_error *err) {
    char buf[64];
    slot_i64(b, 0)[i] = r + 1;
    EM_TRY(put_str(b, 1, buf, fmt_key(buf, prefix, r + 1), err));
    EM_TRY(put_str(b, 2, buf, em_tpch_vstring(g, 10, 40, buf), err));
    int64_t nation = tpch_uniform(g, 0, 24);
    slot_i64(b, 3)[i] = nation;
    EM_TRY(put_str(b, 4, buf, fmt_phone(buf, nation, g), err));
    slot_dec(b, 5)[i] = tpch_money(c->schema, tpch_uniform(g, -99999, 999999));
    return EM_OK;
}

static em_status gen_supplier(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b,
                              em_error *err) {
    EM_TRY(rows_reserve(b, n, 100, err));
    uint64_t stream = stream_of(c, TPCH_STREAM_SUPPLIER);
    char buf[128];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i;
        tpch_rng g = tpch_rng_at(stream, (uint64_t)r);
        EM_TRY(gen_party(c, b, i, r, "Supplier#", &g, err));
        int len;
        const char *t = em_tpch_text(&c->pool, &g, 25, 100, &len);
        int kind = supplier_bbb(c, r);
        if (kind) {
            /* "Customer " ... "Complaints"/"Recommends" at a random position, the
             * comment's own text in between (clause 4.2.3, S_COMMENT). */
            memcpy(buf, t, (size_t)len);
            int gap = (int)tpch_uniform(&g, 0, len - 19);
            int pos = (int)tpch_uniform(&g, 0, len - 19 - gap);
            memcpy(buf + pos, "Customer ", 9);
            memcpy(buf + pos + 9 + gap, kind == 1 ? "Complaints" : "Recommends", 10);
            t = buf;
        }
        EM_TRY(put_str(b, 6, t, len, err));
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    return EM_OK;
}

static em_status gen_customer(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b,
                              em_error *err) {
    EM_TRY(rows_reserve(b, n, 116, err));
    uint64_t stream = stream_of(c, TPCH_STREAM_CUSTOMER);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i;
        tpch_rng g = tpch_rng_at(stream, (uint64_t)r);
        EM_TRY(gen_party(c, b, i, r, "Customer#", &g, err));
        EM_TRY(put_cstr(b, 6, em_tpch_segments[tpch_uniform(&g, 0, 4)], err));
        EM_TRY(put_text(c, b, 7, &g, 29, 116, err));
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    return EM_OK;
}

/* Lineitem columns. */
enum {
    L_ORDERKEY,
    L_PARTKEY,
    L_SUPPKEY,
    L_LINENUMBER,
    L_QUANTITY,
    L_EXTENDEDPRICE,
    L_DISCOUNT,
    L_TAX,
    L_RETURNFLAG,
    L_LINESTATUS,
    L_SHIPDATE,
    L_COMMITDATE,
    L_RECEIPTDATE,
    L_SHIPINSTRUCT,
    L_SHIPMODE,
    L_COMMENT
};

static em_status gen_orders(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b, em_batch *lb,
                            em_error *err) {
    EM_TRY(rows_reserve(b, n, 78, err));
    EM_TRY(rows_reserve(lb, n * 7, 43, err));
    uint64_t ostream = stream_of(c, TPCH_STREAM_ORDERS);
    uint64_t lstream = stream_of(c, TPCH_STREAM_LINEITEM);
    const int32_t start = TPCH_STARTDATE, current = TPCH_CURRENTDATE, end = TPCH_ENDDATE;
    int64_t *okey = slot_i64(b, 0), *ocust = slot_i64(b, 1);
    em_i128 *ototal = slot_dec(b, 3);
    int32_t *odate = slot_i32(b, 4), *oship = slot_i32(b, 7);
    /* Customers eligible for orders: the keys not divisible by 3. */
    int64_t eligible = c->n_customer - c->n_customer / 3;
    /* Fixed-width line columns were reserved for 7 lines per order above, so
     * these slots stay valid while the string columns grow. */
    int64_t *lok = slot_i64(lb, L_ORDERKEY), *lpk = slot_i64(lb, L_PARTKEY);
    int64_t *lsk = slot_i64(lb, L_SUPPKEY);
    int32_t *lln = slot_i32(lb, L_LINENUMBER);
    em_i128 *lq = slot_dec(lb, L_QUANTITY), *lx = slot_dec(lb, L_EXTENDEDPRICE);
    em_i128 *ld = slot_dec(lb, L_DISCOUNT), *lt = slot_dec(lb, L_TAX);
    int32_t *lsd = slot_i32(lb, L_SHIPDATE), *lcd = slot_i32(lb, L_COMMITDATE);
    int32_t *lrd = slot_i32(lb, L_RECEIPTDATE);
    int64_t nl = 0; /* lines appended */
    char buf[64];
    for (int64_t i = 0; i < n; i++) {
        int64_t oi = first + i, ok = tpch_order_key(oi);
        tpch_rng g = tpch_rng_at(ostream, (uint64_t)oi);
        okey[i] = ok;
        int64_t k = tpch_uniform(&g, 0, eligible - 1);
        ocust[i] = (k / 2) * 3 + k % 2 + 1;
        int32_t date = (int32_t)tpch_uniform(&g, start, end - 151);
        odate[i] = date;
        EM_TRY(put_cstr(b, 5, em_tpch_priorities[tpch_uniform(&g, 0, 4)], err));
        EM_TRY(put_str(b, 6, buf, fmt_key(buf, "Clerk#", tpch_uniform(&g, 1, c->n_clerks)), err));
        oship[i] = 0;
        EM_TRY(put_text(c, b, 8, &g, 19, 78, err));
        int lines = (int)tpch_uniform(&g, 1, 7);

        int64_t total = 0; /* in 1/10000 cents */
        int n_open = 0;
        for (int l = 1; l <= lines; l++) {
            int64_t j = nl + l - 1;
            tpch_rng lg = tpch_rng_at(lstream, (uint64_t)(oi * 8 + l));
            int64_t pk = tpch_uniform(&lg, 1, c->n_part);
            int64_t qty = tpch_uniform(&lg, 1, 50);
            int64_t disc = tpch_uniform(&lg, 0, 10), tax = tpch_uniform(&lg, 0, 8);
            int64_t ext = qty * tpch_retail_cents(pk);
            lok[j] = ok;
            lpk[j] = pk;
            lsk[j] = tpch_part_supplier(pk, tpch_uniform(&lg, 0, 3), c->n_supplier);
            lln[j] = l;
            lq[j] = tpch_money(c->schema, qty * 100);
            lx[j] = tpch_money(c->schema, ext);
            ld[j] = tpch_money(c->schema, disc);
            lt[j] = tpch_money(c->schema, tax);
            total += ext * (100 + tax) * (100 - disc);
            int32_t ship = date + (int32_t)tpch_uniform(&lg, 1, 121);
            int32_t commit = date + (int32_t)tpch_uniform(&lg, 30, 90);
            int32_t receipt = ship + (int32_t)tpch_uniform(&lg, 1, 30);
            lsd[j] = ship;
            lcd[j] = commit;
            lrd[j] = receipt;
            bool returned = tpch_uniform(&lg, 0, 1) == 0;
            EM_TRY(put_str(lb, L_RETURNFLAG, receipt <= current ? (returned ? "R" : "A") : "N", 1,
                           err));
            bool open = ship > current;
            n_open += open;
            EM_TRY(put_str(lb, L_LINESTATUS, open ? "O" : "F", 1, err));
            EM_TRY(put_cstr(lb, L_SHIPINSTRUCT, em_tpch_instructions[tpch_uniform(&lg, 0, 3)], err));
            EM_TRY(put_cstr(lb, L_SHIPMODE, em_tpch_modes[tpch_uniform(&lg, 0, 6)], err));
            EM_TRY(put_text(c, lb, L_COMMENT, &lg, 10, 43, err));
        }
        nl += lines;
        EM_TRY(put_str(b, 2, n_open == lines ? "O" : n_open == 0 ? "F" : "P", 1, err));
        ototal[i] = tpch_money(c->schema, (total + 5000) / 10000);
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    rows_commit_fixed(lb, nl);
    rows_finish(lb);
    return EM_OK;
}

static em_status gen_nation(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b,
                            em_error *err) {
    EM_TRY(rows_reserve(b, n, 128, err));
    uint64_t stream = stream_of(c, TPCH_STREAM_NATION);
    int64_t *key = slot_i64(b, 0), *region = slot_i64(b, 2);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i;
        tpch_rng g = tpch_rng_at(stream, (uint64_t)r);
        key[i] = r;
        EM_TRY(put_cstr(b, 1, em_tpch_nations[r].name, err));
        region[i] = em_tpch_nations[r].region;
        EM_TRY(put_text(c, b, 3, &g, 31, 114, err));
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    return EM_OK;
}

static em_status gen_region(const tpch_ctx *c, int64_t first, int64_t n, em_batch *b,
                            em_error *err) {
    EM_TRY(rows_reserve(b, n, 128, err));
    uint64_t stream = stream_of(c, TPCH_STREAM_REGION);
    int64_t *key = slot_i64(b, 0);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = first + i;
        tpch_rng g = tpch_rng_at(stream, (uint64_t)r);
        key[i] = r;
        EM_TRY(put_cstr(b, 1, em_tpch_regions[r], err));
        EM_TRY(put_text(c, b, 2, &g, 31, 115, err));
    }
    rows_commit_fixed(b, n);
    rows_finish(b);
    return EM_OK;
}

em_status em_tpch_gen_rows(const tpch_ctx *c, em_tpch_table t, int64_t first, int64_t n, em_batch *b,
                        em_batch *lines, em_error *err) {
    int64_t total = t == EM_TPCH_LINEITEM ? -1 : em_tpch_table_rows(t, c->sf);
    if (first < 0 || n < 0 || (total >= 0 && first + n > total))
        return EM_FAIL(err, EM_ERR_INVALID, "TPC-H %s rows [%lld, %lld) out of range (%lld rows)",
                       em_tpch_table_name(t), (long long)first, (long long)(first + n),
                       (long long)total);
    switch (t) {
    case EM_TPCH_PART:
        return gen_part(c, first, n, b, err);
    case EM_TPCH_PARTSUPP:
        return gen_partsupp(c, first, n, b, err);
    case EM_TPCH_SUPPLIER:
        return gen_supplier(c, first, n, b, err);
    case EM_TPCH_CUSTOMER:
        return gen_customer(c, first, n, b, err);
    case EM_TPCH_ORDERS:
        if (!lines)
            return EM_FAIL(err, EM_ERR_INVALID, "TPC-H orders are generated with their lines");
        return gen_orders(c, first, n, b, lines, err);
    case EM_TPCH_NATION:
        return gen_nation(c, first, n, b, err);
    case EM_TPCH_REGION:
        return gen_region(c, first, n, b, err);
    default:
        return EM_FAIL(err, EM_ERR_INVALID, "TPC-H lineitem rows come with their orders");
    }
}
