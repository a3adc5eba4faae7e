/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TPC-H generator: the rows in memory (cardinalities, key relationships,
 * value domains, derived values, text, both schemas, determinism across row
 * splits), then the files (layout, byte-identical output for different thread
 * counts, the non-empty folder rule, nothing left behind on failure).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

#include "ember/tpch.h"
#include "io/tpch/tpch_internal.h"

#define SF 0.01

/* ---- access to generated columns ---- */

static int64_t v_i64(const em_batch *b, int col, int64_t r) {
    return ((const int64_t *)b->cols[col].values->data)[r];
}
static int32_t v_i32(const em_batch *b, int col, int64_t r) {
    return ((const int32_t *)b->cols[col].values->data)[r];
}
static int64_t v_dec(const em_batch *b, int col, int64_t r) {
    return (int64_t)((const em_i128 *)b->cols[col].values->data)[r];
}
/* String value as a NUL-terminated copy in buf. */
static const char *v_str(const em_batch *b, int col, int64_t r, char *buf, size_t cap) {
    const int32_t *off = em_column_offsets(&b->cols[col]);
    size_t n = (size_t)(off[r + 1] - off[r]);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, em_column_chars(&b->cols[col]) + off[r], n);
    buf[n] = 0;
    return buf;
}
static int v_len(const em_batch *b, int col, int64_t r) {
    const int32_t *off = em_column_offsets(&b->cols[col]);
    return off[r + 1] - off[r];
}

static bool in_list(const char *s, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* Like SQL LIKE with only '%' wildcards. */
static bool like(const char *s, const char *pat) {
    if (!*pat)
        return !*s;
    if (*pat == '%') {
        for (const char *p = s;; p++) {
            if (like(p, pat + 1))
                return true;
            if (!*p)
                return false;
        }
    }
    return *s == *pat && like(s + 1, pat + 1);
}

/* Generates a whole table (orders: with lineitem into *lines). */
static em_batch *gen_table(const tpch_ctx *c, em_tpch_table t, em_batch **lines) {
    em_error err;
    em_schema s;
    EM_ASSERT_OK(em_tpch_table_schema(t, c->schema, &s, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, 16, NULL, &b, &err), &err);
    em_schema_reset(&s);
    if (t == EM_TPCH_ORDERS) {
        em_schema ls;
        EM_ASSERT_OK(em_tpch_table_schema(EM_TPCH_LINEITEM, c->schema, &ls, &err), &err);
        EM_ASSERT_OK(em_batch_create(&ls, 16, NULL, lines, &err), &err);
        em_schema_reset(&ls);
    }
    int64_t n = em_tpch_table_rows(t, c->sf);
    /* In uneven pieces, so appends across calls are exercised too. */
    for (int64_t r = 0; r < n;) {
        int64_t k = n - r < 777 ? n - r : 777;
        EM_ASSERT_OK(em_tpch_gen_rows(c, t, r, k, b, t == EM_TPCH_ORDERS ? *lines : NULL, &err), &err);
        r += k;
    }
    assert_int_equal(b->n_rows, n);
    return b;
}

static tpch_ctx g_ctx, g_spark;
static em_batch *g_tab[EM_TPCH_TABLE_COUNT], *g_spark_tab[EM_TPCH_TABLE_COUNT];

static int setup(void **state) {
    (void)state;
    em_error err;
    if (em_tpch_ctx_init(&g_ctx, SF, EM_TPCH_SCHEMA_STANDARD, &err) != EM_OK)
        return -1;
    if (em_tpch_ctx_init(&g_spark, SF, EM_TPCH_SCHEMA_SPARK, &err) != EM_OK)
        return -1;
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        if (t == EM_TPCH_LINEITEM)
            continue;
        g_tab[t] = gen_table(&g_ctx, (em_tpch_table)t, &g_tab[EM_TPCH_LINEITEM]);
        g_spark_tab[t] = gen_table(&g_spark, (em_tpch_table)t, &g_spark_tab[EM_TPCH_LINEITEM]);
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        em_batch_destroy(g_tab[t]);
        em_batch_destroy(g_spark_tab[t]);
    }
    em_tpch_ctx_reset(&g_ctx);
    em_tpch_ctx_reset(&g_spark);
    return 0;
}

/* ---- distributions and dates ---- */

static void test_dists(void **state) {
    (void)state;
    const tpch_dist *all[] = {
        &em_tpch_nouns,       &em_tpch_verbs,       &em_tpch_adjectives, &em_tpch_adverbs, &em_tpch_prepositions,
        &em_tpch_auxiliaries, &em_tpch_terminators, &em_tpch_grammar,    &em_tpch_np,      &em_tpch_vp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int sum = 0;
        for (int k = 0; k < all[i]->n_words; k++)
            sum += all[i]->words[k].weight;
        if (sum != all[i]->total)
            fail_msg("%s: weights sum to %d, total says %d", all[i]->name, sum, all[i]->total);
    }
    assert_int_equal(em_tpch_nouns.n_words, 45);
    assert_int_equal(em_tpch_verbs.n_words, 40);
    assert_int_equal(em_tpch_adjectives.n_words, 29);
    assert_int_equal(em_tpch_adverbs.n_words, 28);
    assert_int_equal(em_tpch_prepositions.n_words, 47);
    assert_int_equal(em_tpch_auxiliaries.n_words, 18);
    /* Picks follow the weights: "." is 50 of 55 terminator units. */
    tpch_rng g = tpch_rng_at(1, 2);
    int dots = 0;
    for (int i = 0; i < 55000; i++)
        dots += em_tpch_dist_pick(&em_tpch_terminators, &g) == 0;
    assert_true(dots > 49000 && dots < 51000);
}

static void test_dates_and_rng(void **state) {
    (void)state;
    assert_int_equal(em_tpch_days(1970, 1, 1), 0);
    assert_int_equal(em_tpch_days(1992, 1, 1), 8035);
    assert_int_equal(em_tpch_days(1995, 6, 17), 9298);
    assert_int_equal(em_tpch_days(1998, 12, 31), 10591);
    assert_int_equal(em_tpch_days(2000, 3, 1) - em_tpch_days(2000, 2, 28), 2);
    assert_int_equal(em_tpch_days(1969, 12, 31), -1);
    /* uniform stays in range and hits both ends. */
    tpch_rng g = tpch_rng_at(7, 9);
    bool lo = false, hi = false;
    for (int i = 0; i < 10000; i++) {
        int64_t v = tpch_uniform(&g, -3, 4);
        assert_true(v >= -3 && v <= 4);
        lo |= v == -3;
        hi |= v == 4;
    }
    assert_true(lo && hi);
    /* Seekable: the same (stream, row) gives the same sequence. */
    tpch_rng a = tpch_rng_at(11, 12345), b = tpch_rng_at(11, 12345), c = tpch_rng_at(11, 12346);
    assert_true(tpch_next(&a) == tpch_next(&b));
    assert_true(tpch_next(&a) != tpch_next(&c));
}

/* ---- cardinalities and schemas ---- */

static void test_cardinalities(void **state) {
    (void)state;
    assert_int_equal(em_tpch_table_rows(EM_TPCH_SUPPLIER, 1), 10000);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_PART, 1), 200000);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_PARTSUPP, 1), 800000);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_CUSTOMER, 1), 150000);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_ORDERS, 1), 1500000);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_LINEITEM, 1), -1);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_NATION, 0.01), 25);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_REGION, 10), 5);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_SUPPLIER, SF), 100);
    assert_int_equal(em_tpch_table_rows(EM_TPCH_ORDERS, 0.1), 150000);
    assert_int_equal(g_tab[EM_TPCH_PART]->n_rows, 2000);
    assert_int_equal(g_tab[EM_TPCH_PARTSUPP]->n_rows, 8000);
    assert_int_equal(g_tab[EM_TPCH_SUPPLIER]->n_rows, 100);
    assert_int_equal(g_tab[EM_TPCH_CUSTOMER]->n_rows, 1500);
    assert_int_equal(g_tab[EM_TPCH_ORDERS]->n_rows, 15000);
    assert_int_equal(g_tab[EM_TPCH_NATION]->n_rows, 25);
    assert_int_equal(g_tab[EM_TPCH_REGION]->n_rows, 5);
    /* 1..7 lines per order: about 4 on average. */
    int64_t nl = g_tab[EM_TPCH_LINEITEM]->n_rows;
    assert_true(nl > 15000 * 3.8 && nl < 15000 * 4.2);
    em_error err;
    tpch_ctx c;
    assert_int_equal(em_tpch_ctx_init(&c, 0.001, EM_TPCH_SCHEMA_STANDARD, &err), EM_ERR_INVALID);
    assert_int_equal(em_tpch_ctx_init(&c, 11, EM_TPCH_SCHEMA_STANDARD, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "scale factor"));
}

static void test_schemas(void **state) {
    (void)state;
    em_error err;
    const char *spark_ddl[EM_TPCH_TABLE_COUNT] = {
        [EM_TPCH_PART] = "p_partkey:bigint p_name:string p_mfgr:string p_brand:string "
                         "p_type:string p_size:int p_container:string "
                         "p_retailprice:decimal(10,0) p_comment:string",
        [EM_TPCH_SUPPLIER] = "s_suppkey:bigint s_name:string s_address:string "
                             "s_nationkey:bigint s_phone:string s_acctbal:decimal(10,0) "
                             "s_comment:string",
        [EM_TPCH_PARTSUPP] = "ps_partkey:bigint ps_suppkey:bigint ps_availqty:int "
                             "ps_supplycost:decimal(10,0) ps_comment:string",
        [EM_TPCH_CUSTOMER] = "c_custkey:bigint c_name:string c_address:string "
                             "c_nationkey:bigint c_phone:string c_acctbal:decimal(10,0) "
                             "c_mktsegment:string c_comment:string",
        [EM_TPCH_ORDERS] = "o_orderkey:bigint o_custkey:bigint o_orderstatus:string "
                           "o_totalprice:decimal(10,0) o_orderdate:date o_orderpriority:string "
                           "o_clerk:string o_shippriority:int o_comment:string",
        [EM_TPCH_LINEITEM] = "l_orderkey:bigint l_partkey:bigint l_suppkey:bigint "
                             "l_linenumber:int l_quantity:decimal(10,0) "
                             "l_extendedprice:decimal(10,0) l_discount:decimal(10,0) "
                             "l_tax:decimal(10,0) l_returnflag:string l_linestatus:string "
                             "l_shipdate:date l_commitdate:date l_receiptdate:date "
                             "l_shipinstruct:string l_shipmode:string l_comment:string",
        [EM_TPCH_NATION] = "n_nationkey:bigint n_name:string n_regionkey:bigint "
                           "n_comment:string",
        [EM_TPCH_REGION] = "r_regionkey:bigint r_name:string r_comment:string",
    };
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        for (int sch = 0; sch < 2; sch++) {
            em_schema s;
            EM_ASSERT_OK(em_tpch_table_schema((em_tpch_table)t, (em_tpch_schema)sch, &s, &err),
                         &err);
            char text[1024] = "";
            for (int i = 0; i < s.n_fields; i++) {
                char ty[64];
                em_type_format(s.fields[i].type, ty, sizeof ty);
                assert_true(s.fields[i].nullable);
                snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s:%s", i ? " " : "",
                         s.fields[i].name, ty);
            }
            em_schema_reset(&s);
            char want[1024];
            snprintf(want, sizeof want, "%s", spark_ddl[t]);
            if (sch == EM_TPCH_SCHEMA_STANDARD) {
                /* Replace every decimal(10,0) by decimal(15,2). */
                char *p;
                while ((p = strstr(want, "decimal(10,0)")) != NULL)
                    memcpy(p, "decimal(15,2)", 13);
            }
            assert_string_equal(text, want);
        }
    }
    assert_string_equal(em_tpch_table_name(EM_TPCH_PARTSUPP), "partsupp");
}

/* ---- value domains and key relationships ---- */

static void test_part(void **state) {
    (void)state;
    const em_batch *b = g_tab[EM_TPCH_PART];
    char s[256], w[256];
    int green = 0, forest = 0, brass15 = 0;
    for (int64_t r = 0; r < b->n_rows; r++) {
        int64_t pk = v_i64(b, 0, r);
        assert_int_equal(pk, r + 1);
        /* Five distinct colors. */
        v_str(b, 1, r, s, sizeof s);
        char *words[6];
        int n = 0;
        for (char *tok = strtok(strcpy(w, s), " "); tok; tok = strtok(NULL, " "))
            words[n < 6 ? n++ : 5] = tok;
        assert_int_equal(n, 5);
        for (int i = 0; i < 5; i++) {
            assert_true(in_list(words[i], em_tpch_colors, 92));
            for (int j = 0; j < i; j++)
                assert_string_not_equal(words[i], words[j]);
        }
        green += like(s, "%green%");
        forest += like(s, "forest%");
        char mfgr[64], brand[64];
        v_str(b, 2, r, mfgr, sizeof mfgr);
        v_str(b, 3, r, brand, sizeof brand);
        assert_true(strlen(mfgr) == 14 && strncmp(mfgr, "Manufacturer#", 13) == 0);
        assert_true(mfgr[13] >= '1' && mfgr[13] <= '5');
        assert_true(strlen(brand) == 8 && strncmp(brand, "Brand#", 6) == 0);
        assert_int_equal(brand[6], mfgr[13]);
        assert_true(brand[7] >= '1' && brand[7] <= '5');
        v_str(b, 4, r, s, sizeof s);
        char t1[32], t2[32], t3[32];
        assert_int_equal(sscanf(s, "%31s %31s %31s", t1, t2, t3), 3);
        assert_true(in_list(t1, em_tpch_type_s1, 6) && in_list(t2, em_tpch_type_s2, 5) &&
                    in_list(t3, em_tpch_type_s3, 5));
        int32_t size = v_i32(b, 5, r);
        assert_true(size >= 1 && size <= 50);
        brass15 += size == 15 && like(s, "%BRASS");
        v_str(b, 6, r, s, sizeof s);
        assert_int_equal(sscanf(s, "%31s %31s", t1, t2), 2);
        assert_true(in_list(t1, em_tpch_container_s1, 5) && in_list(t2, em_tpch_container_s2, 8));
        assert_int_equal(v_dec(b, 7, r), 90000 + (pk / 10) % 20001 + 100 * (pk % 1000));
        int len = v_len(b, 8, r);
        assert_true(len >= 5 && len <= 22);
    }
    assert_true(green > 50);  /* about 5/92 of 2000 */
    assert_true(forest > 5);  /* about 1/92 of 2000 */
    assert_true(brass15 > 0); /* query 2 */
    /* Retail price spot value from the formula: key 1 -> 901.00. */
    assert_int_equal(v_dec(b, 7, 0), 90100);
}

/* The columns supplier and customer share: key, name, address, nation, phone,
 * balance. */
static void check_party(const em_batch *b, int64_t r, const char *prefix) {
    char s[256], want[32];
    assert_int_equal(v_i64(b, 0, r), r + 1);
    snprintf(want, sizeof want, "%s%09lld", prefix, (long long)(r + 1));
    assert_string_equal(v_str(b, 1, r, s, sizeof s), want);
    int alen = v_len(b, 2, r);
    assert_true(alen >= 10 && alen <= 40);
    int64_t nk = v_i64(b, 3, r);
    assert_true(nk >= 0 && nk <= 24);
    v_str(b, 4, r, s, sizeof s);
    int cc, a, p2, p3;
    assert_int_equal(sscanf(s, "%2d-%3d-%3d-%4d", &cc, &a, &p2, &p3), 4);
    assert_int_equal(strlen(s), 15);
    assert_int_equal(cc, nk + 10);
    assert_true(a >= 100 && p2 >= 100 && p3 >= 1000);
    int64_t bal = v_dec(b, 5, r);
    assert_true(bal >= -99999 && bal <= 999999);
}

static void test_supplier_customer(void **state) {
    (void)state;
    char s[256];
    const em_batch *b = g_tab[EM_TPCH_SUPPLIER];
    int complaints = 0, recommends = 0;
    for (int64_t r = 0; r < b->n_rows; r++) {
        check_party(b, r, "Supplier#");
        int len = v_len(b, 6, r);
        assert_true(len >= 25 && len <= 100);
        v_str(b, 6, r, s, sizeof s);
        complaints += like(s, "%Customer%Complaints%");
        recommends += like(s, "%Customer%Recommends%");
    }
    /* ceil(SF * 5) each, at least one. */
    assert_int_equal(complaints, 1);
    assert_int_equal(recommends, 1);

    b = g_tab[EM_TPCH_CUSTOMER];
    int q22_codes = 0;
    for (int64_t r = 0; r < b->n_rows; r++) {
        check_party(b, r, "Customer#");
        v_str(b, 4, r, s, sizeof s);
        q22_codes += strncmp(s, "13", 2) == 0 || strncmp(s, "31", 2) == 0;
        assert_true(in_list(v_str(b, 6, r, s, sizeof s), em_tpch_segments, 5));
        int len = v_len(b, 7, r);
        assert_true(len >= 29 && len <= 116);
    }
    assert_true(q22_codes > 0);
}

static void test_partsupp(void **state) {
    (void)state;
    const em_batch *b = g_tab[EM_TPCH_PARTSUPP];
    int64_t S = g_ctx.n_supplier;
    for (int64_t r = 0; r < b->n_rows; r += 4) {
        int64_t pk = v_i64(b, 0, r);
        assert_int_equal(pk, r / 4 + 1);
        for (int i = 0; i < 4; i++) {
            assert_int_equal(v_i64(b, 0, r + i), pk);
            int64_t sk = v_i64(b, 1, r + i);
            assert_int_equal(sk, (pk + (i * ((S / 4) + (pk - 1) / S))) % S + 1);
            assert_true(sk >= 1 && sk <= S);
            for (int j = 0; j < i; j++)
                assert_true(v_i64(b, 1, r + j) != sk);
            int32_t q = v_i32(b, 2, r + i);
            assert_true(q >= 1 && q <= 9999);
            int64_t cost = v_dec(b, 3, r + i);
            assert_true(cost >= 100 && cost <= 100000);
            int len = v_len(b, 4, r + i);
            assert_true(len >= 49 && len <= 198);
        }
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_orders_lineitem(void **state) {
    (void)state;
    const em_batch *o = g_tab[EM_TPCH_ORDERS], *l = g_tab[EM_TPCH_LINEITEM];
    const int32_t start = em_tpch_days(1992, 1, 1), current = em_tpch_days(1995, 6, 17);
    const int32_t last = em_tpch_days(1998, 12, 31) - 151;
    char s[256];
    /* partsupp pairs, for the lineitem foreign key. */
    const em_batch *ps = g_tab[EM_TPCH_PARTSUPP];
    int64_t *pairs = malloc((size_t)ps->n_rows * sizeof *pairs);
    for (int64_t r = 0; r < ps->n_rows; r++)
        pairs[r] = v_i64(ps, 0, r) * 1000000 + v_i64(ps, 1, r);
    qsort(pairs, (size_t)ps->n_rows, sizeof *pairs, cmp_i64);
    int64_t li = 0;
    int status[3] = {0}, special_requests = 0, clerks_max = 0;
    int64_t prev_key = 0;
    for (int64_t r = 0; r < o->n_rows; r++) {
        int64_t ok = v_i64(o, 0, r);
        assert_int_equal(ok, (r / 8) * 32 + r % 8 + 1);
        assert_true(ok > prev_key);
        prev_key = ok;
        int64_t ck = v_i64(o, 1, r);
        assert_true(ck >= 1 && ck <= g_ctx.n_customer);
        assert_true(ck % 3 != 0);
        int32_t od = v_i32(o, 4, r);
        assert_true(od >= start && od <= last);
        assert_true(in_list(v_str(o, 5, r, s, sizeof s), em_tpch_priorities, 5));
        v_str(o, 6, r, s, sizeof s);
        assert_true(strncmp(s, "Clerk#", 6) == 0 && strlen(s) == 15);
        int clerk = atoi(s + 6);
        assert_true(clerk >= 1 && clerk <= 10);
        clerks_max = clerk > clerks_max ? clerk : clerks_max;
        assert_int_equal(v_i32(o, 7, r), 0);
        int clen = v_len(o, 8, r);
        assert_true(clen >= 19 && clen <= 78);
        special_requests += like(v_str(o, 8, r, s, sizeof s), "%special%requests%");
        /* Its lines. */
        int64_t total = 0;
        int n = 0, n_open = 0;
        for (; li < l->n_rows && v_i64(l, 0, li) == ok; li++, n++) {
            assert_int_equal(v_i32(l, 3, li), n + 1);
            int64_t pk = v_i64(l, 1, li), sk = v_i64(l, 2, li);
            assert_true(pk >= 1 && pk <= g_ctx.n_part);
            int64_t key = pk * 1000000 + sk;
            assert_non_null(bsearch(&key, pairs, (size_t)ps->n_rows, sizeof *pairs, cmp_i64));
            int64_t q = v_dec(l, 4, li), x = v_dec(l, 5, li), d = v_dec(l, 6, li),
                    t = v_dec(l, 7, li);
            assert_true(q % 100 == 0 && q >= 100 && q <= 5000);
            assert_int_equal(x, q / 100 * tpch_retail_cents(pk));
            assert_true(d >= 0 && d <= 10);
            assert_true(t >= 0 && t <= 8);
            total += x * (100 + t) * (100 - d);
            int32_t ship = v_i32(l, 10, li), commit = v_i32(l, 11, li), rec = v_i32(l, 12, li);
            assert_true(ship - od >= 1 && ship - od <= 121);
            assert_true(commit - od >= 30 && commit - od <= 90);
            assert_true(rec - ship >= 1 && rec - ship <= 30);
            char rf[8], ls[8];
            v_str(l, 8, li, rf, sizeof rf);
            v_str(l, 9, li, ls, sizeof ls);
            if (rec <= current)
                assert_true(strcmp(rf, "R") == 0 || strcmp(rf, "A") == 0);
            else
                assert_string_equal(rf, "N");
            assert_string_equal(ls, ship > current ? "O" : "F");
            n_open += ship > current;
            assert_true(in_list(v_str(l, 13, li, s, sizeof s), em_tpch_instructions, 4));
            assert_true(in_list(v_str(l, 14, li, s, sizeof s), em_tpch_modes, 7));
            int len = v_len(l, 15, li);
            assert_true(len >= 10 && len <= 43);
        }
        assert_true(n >= 1 && n <= 7);
        assert_int_equal(v_dec(o, 3, r), (total + 5000) / 10000);
        v_str(o, 2, r, s, sizeof s);
        assert_string_equal(s, n_open == n ? "O" : n_open == 0 ? "F" : "P");
        status[s[0] == 'O' ? 0 : s[0] == 'F' ? 1 : 2]++;
    }
    assert_int_equal(li, l->n_rows); /* every line belongs to an order, in order */
    assert_true(status[0] > 0 && status[1] > 0 && status[2] > 0);
    assert_true(special_requests > 0 && special_requests < o->n_rows / 10);
    assert_int_equal(clerks_max, 10);
    free(pairs);
}

static void test_nation_region(void **state) {
    (void)state;
    char s[256];
    const em_batch *n = g_tab[EM_TPCH_NATION], *r = g_tab[EM_TPCH_REGION];
    assert_string_equal(v_str(n, 1, 20, s, sizeof s), "SAUDI ARABIA");
    assert_int_equal(v_i64(n, 2, 20), 4);
    assert_string_equal(v_str(n, 1, 7, s, sizeof s), "GERMANY");
    assert_int_equal(v_i64(n, 2, 7), 3);
    assert_string_equal(v_str(r, 1, 3, s, sizeof s), "EUROPE");
    for (int i = 0; i < 25; i++) {
        assert_int_equal(v_i64(n, 0, i), i);
        int len = v_len(n, 3, i);
        assert_true(len >= 31 && len <= 114);
    }
    for (int i = 0; i < 5; i++) {
        int len = v_len(r, 2, i);
        assert_true(len >= 31 && len <= 115);
    }
}

/* The pool is the grammar's text: words from the lists, single spaces. */
static void test_text(void **state) {
    (void)state;
    const tpch_text_pool *p = &g_ctx.pool;
    assert_int_equal(p->len, TPCH_TEXT_POOL_BYTES);
    char buf[4096];
    memcpy(buf, p->text, 4000);
    buf[4000] = 0;
    *strrchr(buf, ' ') = 0; /* the last word may be cut */
    assert_null(strstr(buf, "  "));
    int words = 0, known = 0;
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        size_t n = strlen(tok);
        while (n > 0 && strchr(".;:?!-,", tok[n - 1]))
            tok[--n] = 0;
        if (!n)
            continue;
        words++;
        const tpch_dist *lists[] = {&em_tpch_nouns,   &em_tpch_verbs,        &em_tpch_adjectives,
                                    &em_tpch_adverbs, &em_tpch_prepositions, &em_tpch_auxiliaries};
        bool found = strcmp(tok, "the") == 0;
        for (size_t k = 0; k < 6 && !found; k++)
            for (int i = 0; i < lists[k]->n_words && !found; i++) {
                /* Multi-word entries ("pinto beans") match by their words. */
                const char *w = lists[k]->words[i].text;
                const char *hit = strstr(w, tok);
                found = hit && (hit == w || hit[-1] == ' ') &&
                        (hit[strlen(tok)] == 0 || hit[strlen(tok)] == ' ');
            }
        known += found;
    }
    assert_true(words > 400);
    assert_int_equal(known, words);
}

/* Money under the spark schema is the standard value rounded half up. */
static void test_spark_rounding(void **state) {
    (void)state;
    assert_int_equal(tpch_money(EM_TPCH_SCHEMA_SPARK, 150), 2);
    assert_int_equal(tpch_money(EM_TPCH_SCHEMA_SPARK, 149), 1);
    assert_int_equal(tpch_money(EM_TPCH_SCHEMA_SPARK, -150), -2);
    assert_int_equal(tpch_money(EM_TPCH_SCHEMA_SPARK, -149), -1);
    assert_int_equal(tpch_money(EM_TPCH_SCHEMA_SPARK, 10), 0);
    assert_int_equal(tpch_money(EM_TPCH_SCHEMA_STANDARD, -149), -149);
    struct {
        em_tpch_table t;
        int col;
    } money[] = {{EM_TPCH_PART, 7},     {EM_TPCH_SUPPLIER, 5}, {EM_TPCH_PARTSUPP, 3},
                 {EM_TPCH_CUSTOMER, 5}, {EM_TPCH_ORDERS, 3},   {EM_TPCH_LINEITEM, 4},
                 {EM_TPCH_LINEITEM, 5}, {EM_TPCH_LINEITEM, 6}, {EM_TPCH_LINEITEM, 7}};
    for (size_t k = 0; k < sizeof money / sizeof money[0]; k++) {
        const em_batch *a = g_tab[money[k].t], *b = g_spark_tab[money[k].t];
        assert_int_equal(a->n_rows, b->n_rows);
        for (int64_t r = 0; r < a->n_rows; r++) {
            int64_t c = v_dec(a, money[k].col, r),
                    want = c >= 0 ? (c + 50) / 100 : -((-c + 50) / 100);
            assert_int_equal(v_dec(b, money[k].col, r), want);
        }
    }
    /* Everything else is identical: compare keys and a string column. */
    const em_batch *a = g_tab[EM_TPCH_LINEITEM], *b = g_spark_tab[EM_TPCH_LINEITEM];
    for (int64_t r = 0; r < a->n_rows; r++) {
        assert_int_equal(v_i64(a, 1, r), v_i64(b, 1, r));
        assert_int_equal(v_len(a, 15, r), v_len(b, 15, r));
    }
}

/* Rows [ra, ra+n) of a equal rows [rb, rb+n) of b, column by column. */
static void assert_rows_equal(const em_batch *a, int64_t ra, const em_batch *b, int64_t rb,
                              int64_t n) {
    assert_int_equal(a->n_cols, b->n_cols);
    for (int c = 0; c < a->n_cols; c++) {
        for (int64_t r = 0; r < n; r++) {
            if (em_type_is_varlen(a->cols[c].type)) {
                char x[256], y[256];
                assert_string_equal(v_str(a, c, ra + r, x, sizeof x),
                                    v_str(b, c, rb + r, y, sizeof y));
            } else {
                int w = em_type_width(a->cols[c].type);
                assert_memory_equal(a->cols[c].values->data + (ra + r) * w,
                                    b->cols[c].values->data + (rb + r) * w, (size_t)w);
            }
        }
    }
}

/* Rows do not depend on how the range is split. */
static void test_split_determinism(void **state) {
    (void)state;
    em_error err;
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        if (t == EM_TPCH_LINEITEM || t == EM_TPCH_NATION || t == EM_TPCH_REGION)
            continue;
        em_schema s, ls;
        EM_ASSERT_OK(em_tpch_table_schema((em_tpch_table)t, EM_TPCH_SCHEMA_STANDARD, &s, &err),
                     &err);
        EM_ASSERT_OK(em_tpch_table_schema(EM_TPCH_LINEITEM, EM_TPCH_SCHEMA_STANDARD, &ls, &err),
                     &err);
        em_batch *b, *lb;
        EM_ASSERT_OK(em_batch_create(&s, 4, NULL, &b, &err), &err);
        EM_ASSERT_OK(em_batch_create(&ls, 4, NULL, &lb, &err), &err);
        /* Rows at..at+10 on their own. */
        int64_t at = t == EM_TPCH_SUPPLIER ? 50 : 1000;
        EM_ASSERT_OK(em_tpch_gen_rows(&g_ctx, (em_tpch_table)t, at, 10, b, lb, &err), &err);
        assert_int_equal(b->n_rows, 10);
        assert_rows_equal(b, 0, g_tab[t], at, 10);
        if (t == EM_TPCH_ORDERS) {
            const em_batch *fl = g_tab[EM_TPCH_LINEITEM];
            int64_t from = 0;
            while (v_i64(fl, 0, from) != tpch_order_key(at))
                from++;
            assert_true(lb->n_rows >= 10);
            assert_rows_equal(lb, 0, fl, from, lb->n_rows);
            assert_int_equal(v_i64(fl, 0, from + lb->n_rows), tpch_order_key(at + 10));
        }
        em_batch_destroy(b);
        em_batch_destroy(lb);
        em_schema_reset(&s);
        em_schema_reset(&ls);
    }
    /* Out of range rows are refused with the table named. */
    em_schema s;
    EM_ASSERT_OK(em_tpch_table_schema(EM_TPCH_PART, EM_TPCH_SCHEMA_STANDARD, &s, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, 4, NULL, &b, &err), &err);
    assert_int_equal(em_tpch_gen_rows(&g_ctx, EM_TPCH_PART, 1999, 2, b, NULL, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "part"));
    em_batch_destroy(b);
    em_schema_reset(&s);
}

/* The largest scale factor: the last rows of every table are in range. */
static void test_sf10_tail(void **state) {
    (void)state;
    em_error err;
    tpch_ctx c;
    EM_ASSERT_OK(em_tpch_ctx_init(&c, EM_TPCH_SF_MAX, EM_TPCH_SCHEMA_STANDARD, &err), &err);
    assert_int_equal(c.n_orders, 15000000);
    assert_int_equal(c.n_bbb, 100); /* SF * 5 of each kind */
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        if (t == EM_TPCH_LINEITEM)
            continue;
        em_schema s, ls;
        EM_ASSERT_OK(em_tpch_table_schema((em_tpch_table)t, c.schema, &s, &err), &err);
        EM_ASSERT_OK(em_tpch_table_schema(EM_TPCH_LINEITEM, c.schema, &ls, &err), &err);
        em_batch *b, *lb;
        EM_ASSERT_OK(em_batch_create(&s, 4, NULL, &b, &err), &err);
        EM_ASSERT_OK(em_batch_create(&ls, 4, NULL, &lb, &err), &err);
        int64_t n = em_tpch_table_rows((em_tpch_table)t, c.sf);
        EM_ASSERT_OK(em_tpch_gen_rows(&c, (em_tpch_table)t, n - 3, 3, b, lb, &err), &err);
        assert_int_equal(b->n_rows, 3);
        int64_t last = v_i64(b, 0, 2);
        switch (t) {
        case EM_TPCH_PART:
            assert_int_equal(last, 2000000);
            break;
        case EM_TPCH_SUPPLIER:
            assert_int_equal(last, 100000);
            break;
        case EM_TPCH_CUSTOMER:
            assert_int_equal(last, 1500000);
            break;
        case EM_TPCH_PARTSUPP:
            assert_int_equal(last, 2000000);
            for (int i = 0; i < 3; i++)
                assert_true(v_i64(b, 1, i) >= 1 && v_i64(b, 1, i) <= 100000);
            break;
        case EM_TPCH_ORDERS:
            assert_int_equal(last, 59999976); /* sparse: index 14,999,999 */
            for (int i = 0; i < 3; i++)
                assert_true(v_i64(b, 1, i) <= 1500000 && v_i64(b, 1, i) % 3 != 0);
            for (int64_t i = 0; i < lb->n_rows; i++) {
                assert_true(v_i64(lb, 1, i) >= 1 && v_i64(lb, 1, i) <= 2000000);
                assert_true(v_i64(lb, 2, i) >= 1 && v_i64(lb, 2, i) <= 100000);
            }
            break;
        default:
            assert_int_equal(last, n - 1);
            break;
        }
        em_batch_destroy(b);
        em_batch_destroy(lb);
        em_schema_reset(&s);
        em_schema_reset(&ls);
    }
    em_tpch_ctx_reset(&c);
}

/* ---- files ---- */

static bool files_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        char x[65536], y[65536];
        size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
        same = na == nb && memcmp(x, y, na) == 0;
        if (na == 0 || na < sizeof x)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static bool path_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Entries of a folder other than . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static em_status gen_into(const char *dir, int threads, int64_t rows_per_file, bool force,
                          em_tpch_summary *summary, em_error *err) {
    em_tpch_options o;
    em_tpch_options_init(&o);
    o.sf = SF;
    o.schema = EM_TPCH_SCHEMA_SPARK;
    o.out_dir = dir;
    o.threads = threads;
    o.rows_per_file = rows_per_file;
    o.force = force;
    o.summary = summary;
    return em_tpch_generate(&o, err);
}

/* Same files, byte for byte, with 1 and 3 threads; the Spark layout; the
 * summary. */
static void test_files_deterministic(void **state) {
    (void)state;
    char a[4096], b[4096];
    const char *base = em_test_tmpdir("tpch_files");
    snprintf(a, sizeof a, "%s/a", base);
    snprintf(b, sizeof b, "%s/b", base);
    em_error err;
    em_tpch_summary sa, sb;
    EM_ASSERT_OK(gen_into(a, 1, 4000, false, &sa, &err), &err);
    EM_ASSERT_OK(gen_into(b, 3, 4000, false, &sb, &err), &err);
    assert_int_equal(sa.threads, 1);
    assert_int_equal(sb.threads, 3);
    /* Orders: 1000 per file -> 15 files, lineitem likewise; partsupp 8000 / 4000
     * -> 2. */
    assert_int_equal(sa.tables[EM_TPCH_ORDERS].n_files, 15);
    assert_int_equal(sa.tables[EM_TPCH_LINEITEM].n_files, 15);
    assert_int_equal(sa.tables[EM_TPCH_PARTSUPP].n_files, 2);
    assert_int_equal(sa.tables[EM_TPCH_NATION].n_files, 1);
    assert_int_equal(sa.tables[EM_TPCH_LINEITEM].rows, g_tab[EM_TPCH_LINEITEM]->n_rows);
    assert_int_equal(count_entries(a), EM_TPCH_TABLE_COUNT); /* no staging left */
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        const char *name = em_tpch_table_name((em_tpch_table)t);
        if (t != EM_TPCH_LINEITEM)
            assert_int_equal(sa.tables[t].rows, em_tpch_table_rows((em_tpch_table)t, SF));
        assert_int_equal(sa.tables[t].rows, sb.tables[t].rows);
        assert_int_equal(sa.tables[t].bytes, sb.tables[t].bytes);
        char da[4200];
        snprintf(da, sizeof da, "%s/%s", a, name);
        assert_int_equal(count_entries(da), sa.tables[t].n_files);
        for (int f = 0; f < sa.tables[t].n_files; f++) {
            char fa[4300], fb[4300];
            snprintf(fa, sizeof fa, "%s/%s/part-%05d.parquet", a, name, f);
            snprintf(fb, sizeof fb, "%s/%s/part-%05d.parquet", b, name, f);
            if (!files_equal(fa, fb))
                fail_msg("%s and %s differ", fa, fb);
        }
    }
}

/* A non-empty folder is refused; force replaces only the table folders. */
static void test_files_force(void **state) {
    (void)state;
    char dir[4096], p[4200];
    snprintf(dir, sizeof dir, "%s", em_test_tmpdir("tpch_force"));
    snprintf(p, sizeof p, "%s/keep.txt", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    em_error err;
    assert_int_equal(gen_into(dir, 2, 0, false, NULL, &err), EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "not empty"));
    assert_int_equal(count_entries(dir), 1);
    EM_ASSERT_OK(gen_into(dir, 2, 0, true, NULL, &err), &err);
    assert_int_equal(count_entries(dir), EM_TPCH_TABLE_COUNT + 1);
    snprintf(p, sizeof p, "%s/part/stale.parquet", dir);
    f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    EM_ASSERT_OK(gen_into(dir, 2, 0, true, NULL, &err), &err);
    assert_false(path_exists(p)); /* the table folder was replaced */
    snprintf(p, sizeof p, "%s/keep.txt", dir);
    assert_true(path_exists(p));
    snprintf(p, sizeof p, "%s/part", dir);
    assert_int_equal(count_entries(p), 1);
}

/* Failures part-way leave nothing behind: every allocation in turn fails. */
static void test_files_failure_cleanup(void **state) {
    (void)state;
    /* base/new/out: "new" does not exist either, so a failure must remove it too. */
    char dir[4096], parent[4096];
    snprintf(parent, sizeof parent, "%s/new", em_test_tmpdir("tpch_fail"));
    snprintf(dir, sizeof dir, "%s/out", parent);
    int failures = 0;
    /* Allocation numbers spread over the run: setup, generation, writing,
     * publishing. */
    for (int64_t n = 1; n < 200000; n = n * 2 + 1) {
        em_error err;
        em_alloc_fail_after(n);
        em_status st = gen_into(dir, 1, 4000, false, NULL, &err);
        bool fired = em_alloc_fail_triggered();
        em_alloc_fail_after(0);
        if (st == EM_OK) {
            assert_false(fired); /* a failed allocation must not be swallowed */
            assert_int_equal(count_entries(dir), EM_TPCH_TABLE_COUNT);
            assert_int_equal(em_test_system("rm -rf '%s'", parent), 0);
            continue;
        }
        failures++;
        if (path_exists(parent))
            fail_msg("allocation %lld failed (%s) and %s was left behind", (long long)n, err.msg,
                     parent);
    }
    assert_true(failures >= 8);
    /* Bad options. */
    em_error err;
    em_tpch_options o;
    em_tpch_options_init(&o);
    o.out_dir = dir;
    o.sf = 0.001;
    assert_int_equal(em_tpch_generate(&o, &err), EM_ERR_INVALID);
    o.sf = 1;
    o.codec = EM_PQ_LZO;
    assert_int_equal(em_tpch_generate(&o, &err), EM_ERR_INVALID);
    o.out_dir = NULL;
    assert_int_equal(em_tpch_generate(&o, &err), EM_ERR_INVALID);
    assert_false(path_exists(dir));
    /* Cancelled: an error, and the folder it created is gone again. */
    volatile sig_atomic_t stop = 1;
    em_tpch_options_init(&o);
    o.sf = SF;
    o.out_dir = dir;
    o.cancel = &stop;
    assert_int_equal(em_tpch_generate(&o, &err), EM_ERR_CANCELLED);
    assert_non_null(strstr(err.msg, "cancelled"));
    assert_false(path_exists(parent));
}

/* The files read back with Ember's reader hold exactly the generated rows. */
static void test_files_roundtrip(void **state) {
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/w", em_test_tmpdir("tpch_roundtrip"));
    em_error err;
    em_tpch_summary sum;
    EM_ASSERT_OK(gen_into(dir, 2, 4000, false, &sum, &err), &err);
    for (int t = 0; t < EM_TPCH_TABLE_COUNT; t++) {
        const em_batch *want = g_spark_tab[t];
        int64_t at = 0;
        for (int f = 0; f < sum.tables[t].n_files; f++) {
            char path[4300];
            snprintf(path, sizeof path, "%s/%s/part-%05d.parquet", dir,
                     em_tpch_table_name((em_tpch_table)t), f);
            em_pq_file *pf;
            EM_ASSERT_OK(em_pq_file_open(path, &pf, &err), &err);
            const em_schema *fs = em_pq_file_schema(pf);
            assert_int_equal(fs->n_fields, want->schema.n_fields);
            for (int c = 0; c < fs->n_fields; c++) {
                assert_string_equal(fs->fields[c].name, want->schema.fields[c].name);
                assert_true(em_type_equal(fs->fields[c].type, want->schema.fields[c].type));
            }
            em_pq_read_options ro;
            memset(&ro, 0, sizeof ro);
            ro.batch_rows = 1000;
            em_pq_reader *r;
            EM_ASSERT_OK(em_pq_reader_open(pf, &ro, &r, &err), &err);
            em_batch *b;
            em_status st;
            while ((st = em_pq_reader_next(r, &b, &err)) == EM_OK) {
                assert_null(b->sel);
                assert_true(at + b->n_rows <= want->n_rows);
                for (int c = 0; c < b->n_cols; c++)
                    assert_int_equal(em_column_null_count(&b->cols[c]), 0);
                assert_rows_equal(b, 0, want, at, b->n_rows);
                at += b->n_rows;
            }
            assert_int_equal(st, EM_DONE);
            em_pq_reader_close(r);
            em_pq_file_close(pf);
        }
        assert_int_equal(at, want->n_rows);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dists),
        cmocka_unit_test(test_dates_and_rng),
        cmocka_unit_test(test_cardinalities),
        cmocka_unit_test(test_schemas),
        cmocka_unit_test(test_part),
        cmocka_unit_test(test_supplier_customer),
        cmocka_unit_test(test_partsupp),
        cmocka_unit_test(test_orders_lineitem),
        cmocka_unit_test(test_nation_region),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_spark_rounding),
        cmocka_unit_test(test_split_determinism),
        cmocka_unit_test(test_sf10_tail),
        cmocka_unit_test(test_files_deterministic),
        cmocka_unit_test(test_files_force),
        cmocka_unit_test(test_files_roundtrip),
        cmocka_unit_test(test_files_failure_cleanup),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
