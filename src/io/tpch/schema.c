/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TPC-H table shapes: names, Spark schemas and cardinalities, and the
 * generator context that holds what every row range needs (counts, the text
 * pool, the suppliers whose comments carry the Better Business Bureau text).
 *
 * Schemas. `spark` is exactly Spark's TPCHBase.scala DDL (BIGINT keys, INT
 * l_linenumber/p_size/ps_availqty/o_shippriority, DECIMAL(10,0) money, DATE,
 * STRING); `standard` differs only in DECIMAL(15,2) money. Every column is
 * nullable, as the columns of a table created by that DDL are (no value is
 * ever null).
 *
 * Cardinalities (clause 4.2.5): supplier SF*10,000, part SF*200,000,
 * partsupp 4 per part, customer SF*150,000, orders SF*1,500,000, lineitem
 * 1..7 per order (known only after generation), nation 25, region 5; each
 * product SF*base is rounded to the nearest row.
 *
 * BBB comments: the specification puts "Customer ... Complaints" in SF*5
 * supplier comments and "Customer ... Recommends" in another SF*5; below
 * SF 0.2 that is less than one row, so the count is rounded up to at least
 * one of each, which keeps query 16's filter meaningful at small scales.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/tpch/tpch_internal.h"

static const char *const table_names[EM_TPCH_TABLE_COUNT] = {
    [EM_TPCH_PART] = "part",         [EM_TPCH_SUPPLIER] = "supplier",
    [EM_TPCH_PARTSUPP] = "partsupp", [EM_TPCH_CUSTOMER] = "customer",
    [EM_TPCH_ORDERS] = "orders",     [EM_TPCH_LINEITEM] = "lineitem",
    [EM_TPCH_NATION] = "nation",     [EM_TPCH_REGION] = "region",
};

const char *em_tpch_table_name(em_tpch_table t) {
    return t >= 0 && t < EM_TPCH_TABLE_COUNT ? table_names[t] : "?";
}

/* Columns as "name:kind" with kind L bigint, I int, S string, M money, D date.
 */
static const char *const table_columns[EM_TPCH_TABLE_COUNT] = {
    [EM_TPCH_PART] = "p_partkey:L p_name:S p_mfgr:S p_brand:S p_type:S "
                     "p_size:I p_container:S "
                     "p_retailprice:M p_comment:S",
    [EM_TPCH_SUPPLIER] = "s_suppkey:L s_name:S s_address:S s_nationkey:L s_phone:S s_acctbal:M "
                         "s_comment:S",
    [EM_TPCH_PARTSUPP] = "ps_partkey:L ps_suppkey:L ps_availqty:I ps_supplycost:M ps_comment:S",
    [EM_TPCH_CUSTOMER] = "c_custkey:L c_name:S c_address:S c_nationkey:L c_phone:S c_acctbal:M "
                         "c_mktsegment:S c_comment:S",
    [EM_TPCH_ORDERS] = "o_orderkey:L o_custkey:L o_orderstatus:S o_totalprice:M o_orderdate:D "
                       "o_orderpriority:S o_clerk:S o_shippriority:I o_comment:S",
    [EM_TPCH_LINEITEM] = "l_orderkey:L l_partkey:L l_suppkey:L l_linenumber:I l_quantity:M "
                         "l_extendedprice:M l_discount:M l_tax:M l_returnflag:S l_linestatus:S "
                         "l_shipdate:D l_commitdate:D l_receiptdate:D l_shipinstruct:S "
                         "l_shipmode:S l_comment:S",
    [EM_TPCH_NATION] = "n_nationkey:L n_name:S n_regionkey:L n_comment:S",
    [EM_TPCH_REGION] = "r_regionkey:L r_name:S r_comment:S",
};

em_status em_tpch_table_schema(em_tpch_table t, em_tpch_schema schema, em_schema *out,
                               em_error *err) {
    out->n_fields = 0;
    out->fields = NULL;
    if (t < 0 || t >= EM_TPCH_TABLE_COUNT)
        return EM_FAIL(err, EM_ERR_INVALID, "unknown TPC-H table %d", (int)t);
    if (schema != EM_TPCH_SCHEMA_SPARK && schema != EM_TPCH_SCHEMA_STANDARD)
        return EM_FAIL(err, EM_ERR_INVALID, "unknown TPC-H schema %d", (int)schema);
    const char *spec = table_columns[t];
    int n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ' ';
    EM_TRY(em_schema_init(out, n, err));
    const char *p = spec;
    for (int i = 0; i < n; i++) {
        const char *colon = strchr(p, ':');
        char name[32];
        size_t len = (size_t)(colon - p);
        memcpy(name, p, len);
        name[len] = 0;
        em_type type;
        switch (colon[1]) {
        case 'L':
            type = em_type_make(EM_TYPE_LONG);
            break;
        case 'I':
            type = em_type_make(EM_TYPE_INT);
            break;
        case 'D':
            type = em_type_make(EM_TYPE_DATE);
            break;
        case 'M':
            type = schema == EM_TPCH_SCHEMA_SPARK ? em_type_decimal(10, 0) : em_type_decimal(15, 2);
            break;
        default:
            type = em_type_make(EM_TYPE_STRING);
            break;
        }
        em_status st = em_schema_set(out, i, name, type, true, err);
        if (st != EM_OK) {
            em_schema_reset(out);
            return st;
        }
        p = colon + 2;
        if (*p == ' ')
            p++;
    }
    return EM_OK;
}

static int64_t scaled(double sf, double base) { return (int64_t)llround(sf * base); }

int64_t em_tpch_table_rows(em_tpch_table t, double sf) {
    switch (t) {
    case EM_TPCH_PART:
        return scaled(sf, 200000);
    case EM_TPCH_SUPPLIER:
        return scaled(sf, 10000);
    case EM_TPCH_PARTSUPP:
        return 4 * scaled(sf, 200000);
    case EM_TPCH_CUSTOMER:
        return scaled(sf, 150000);
    case EM_TPCH_ORDERS:
        return scaled(sf, 1500000);
    case EM_TPCH_NATION:
        return 25;
    case EM_TPCH_REGION:
        return 5;
    default:
        return -1;
    }
}

em_status em_tpch_ctx_init(tpch_ctx *c, double sf, em_tpch_schema schema, em_error *err) {
    memset(c, 0, sizeof *c);
    if (!(sf >= EM_TPCH_SF_MIN && sf <= EM_TPCH_SF_MAX))
        return EM_FAIL(err, EM_ERR_INVALID, "TPC-H scale factor %g out of range [%g, %g]", sf,
                       EM_TPCH_SF_MIN, EM_TPCH_SF_MAX);
    if (schema != EM_TPCH_SCHEMA_SPARK && schema != EM_TPCH_SCHEMA_STANDARD)
        return EM_FAIL(err, EM_ERR_INVALID, "unknown TPC-H schema %d", (int)schema);
    c->sf = sf;
    c->schema = schema;
    c->seed = TPCH_SEED;
    c->n_part = em_tpch_table_rows(EM_TPCH_PART, sf);
    c->n_supplier = em_tpch_table_rows(EM_TPCH_SUPPLIER, sf);
    c->n_partsupp = em_tpch_table_rows(EM_TPCH_PARTSUPP, sf);
    c->n_customer = em_tpch_table_rows(EM_TPCH_CUSTOMER, sf);
    c->n_orders = em_tpch_table_rows(EM_TPCH_ORDERS, sf);
    c->n_clerks = scaled(sf, 1000) > 0 ? scaled(sf, 1000) : 1;

    /* The four suppliers of a part must differ: (d * (S/4 + k)) mod S != 0 for
     * d = 1..3 and every k = (partkey - 1) / S that occurs. */
    for (int64_t k = 0; k <= (c->n_part - 1) / c->n_supplier; k++)
        for (int64_t d = 1; d <= 3; d++)
            if ((d * (c->n_supplier / 4 + k)) % c->n_supplier == 0)
                return EM_FAIL(err, EM_ERR_INVALID,
                               "TPC-H scale factor %g: partsupp supplier formula repeats a "
                               "supplier for %lld suppliers",
                               sf, (long long)c->n_supplier);

    int64_t per_kind = (int64_t)ceil(sf * 5 - 1e-9);
    if (per_kind < 1)
        per_kind = 1;
    if (2 * per_kind > c->n_supplier)
        per_kind = c->n_supplier / 2;
    c->n_bbb = (int)(2 * per_kind);
    c->bbb_rows = em_pool_alloc(NULL, (int64_t)c->n_bbb * (int64_t)sizeof(int64_t), err);
    c->bbb_kind = em_pool_alloc(NULL, c->n_bbb, err);
    if (!c->bbb_rows || !c->bbb_kind) {
        em_tpch_ctx_reset(c);
        return err ? err->code : EM_ERR_NOMEM;
    }
    tpch_rng g = tpch_rng_at(c->seed ^ TPCH_STREAM_BBB, 0);
    for (int i = 0; i < c->n_bbb; i++) {
        int64_t r;
        bool dup;
        do {
            r = tpch_uniform(&g, 0, c->n_supplier - 1);
            dup = false;
            for (int j = 0; j < i; j++)
                dup |= c->bbb_rows[j] == r;
        } while (dup);
        c->bbb_rows[i] = r;
        c->bbb_kind[i] = i < per_kind ? 1 : 2;
    }
    /* Sort by row (insertion sort: at most a few hundred entries) for binary
     * search. */
    for (int i = 1; i < c->n_bbb; i++) {
        int64_t r = c->bbb_rows[i];
        uint8_t k = c->bbb_kind[i];
        int j = i - 1;
        for (; j >= 0 && c->bbb_rows[j] > r; j--) {
            c->bbb_rows[j + 1] = c->bbb_rows[j];
            c->bbb_kind[j + 1] = c->bbb_kind[j];
        }
        c->bbb_rows[j + 1] = r;
        c->bbb_kind[j + 1] = k;
    }

    em_status st = em_tpch_text_pool_init(&c->pool, c->seed, err);
    if (st != EM_OK) {
        em_tpch_ctx_reset(c);
        return st;
    }
    return EM_OK;
}

void em_tpch_ctx_reset(tpch_ctx *c) {
    em_tpch_text_pool_reset(&c->pool);
    em_pool_free(NULL, c->bbb_rows, (int64_t)c->n_bbb * (int64_t)sizeof(int64_t));
    em_pool_free(NULL, c->bbb_kind, c->n_bbb);
    c->bbb_rows = NULL;
    c->bbb_kind = NULL;
    c->n_bbb = 0;
}
