/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local runtime: stage cutting on every shared Spark plan (stage counts
 * per kind equal the exchanges, broadcasts and subqueries in the text, reuse
 * counted, dependency order), hashpartitioning ids equal to Spark's (the
 * spark-rapids Murmur3 vectors, pmod 5), range partitioning's global order,
 * scan Location resolution (normalized and real paths), and whole queries
 * run through the runtime: hash shuffle with 1 and 3 threads giving the same
 * rows in the same partitions, a range-partitioned global sort, a scalar
 * subquery, a global top-N through the gather stage, and a failing task
 * cancelling tasks that would otherwise never end.
 *
 * Queries use a test operator builder: scans are synthetic sources whose
 * rows follow from the split's file name (part-K.parquet holds a = K*100 + i
 * for i < ROWS), so the runtime is checked apart from the Parquet reader; the
 * other nodes are Ember's real operators.
 */
#include "testutil.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ember/hash.h"
#include "ember/parquet.h"
#include "ember/runtime.h"
#include "ops/internal.h"
#include "runtime/internal.h"

#define ROWS 50
#define FILES 4

/* ------------------------------------------------------------ test builder */

static volatile int fail_partition = -1; /* this scan task fails */
static volatile int spin_others;         /* other scan tasks never end */
static volatile int hold_ms;             /* scans sleep this long after taking the semaphore */

typedef struct fake_scan {
    const em_scan_split *splits;
    int n_splits, split;
    int64_t next;
    em_batch *out;
} fake_scan;

static em_status fake_open(em_op *op, em_exec_ctx *ctx, em_error *err) {
    fake_scan *st = op->state;
    EM_TRY(ctx->scan_splits(ctx, op->node, &st->splits, &st->n_splits, err));
    /* as the Parquet scan: data enters the native side */
    if (st->n_splits > 0 && ctx->native_enter)
        EM_TRY(ctx->native_enter(ctx, err));
    if (hold_ms > 0) {
        struct timespec ts = {0, (long)hold_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (ctx->partition == fail_partition)
        return EM_FAIL(err, EM_ERR_INVALID, "boom in partition %d", ctx->partition);
    return EM_OK;
}

/* Table big: file K holds rows i of [K, K + 1) * BIG_FILE_ROWS, whose
 * value is big_key(i): the keys below 60000 three times, the others up to
 * 119999 twice, and a null now and then. */
enum { BIG_FILES = 2, BIG_FILE_ROWS = 150000, BIG_KEYS = 120000 };
static bool big_null(int64_t i) { return i % 997 == 5; }
static int32_t big_key(int64_t i) { return (int32_t)(i % BIG_KEYS); }

static em_status big_batch(em_op *op, fake_scan *st, int k, em_error *err) {
    em_batch_destroy(st->out);
    st->out = NULL;
    EM_TRY(em_batch_create(&op->schema, 1024, op->ctx->pool, &st->out, err));
    int64_t n = 0;
    for (; n < 1024 && st->next < BIG_FILE_ROWS; n++, st->next++) {
        int64_t i = (int64_t)k * BIG_FILE_ROWS + st->next;
        int32_t v = big_key(i);
        if (big_null(i))
            EM_TRY(em_column_append_null(&st->out->cols[0], err));
        else
            EM_TRY(em_column_append_fixed(&st->out->cols[0], &v, err));
    }
    st->out->n_rows = n;
    return EM_OK;
}

static em_status fake_next(em_op *op, em_batch **out, em_error *err) {
    fake_scan *st = op->state;
    if (spin_others) { /* stops only when the runtime cancels the task */
        em_batch_destroy(st->out);
        st->out = NULL;
        EM_TRY(em_batch_create(&op->schema, 1, op->ctx->pool, &st->out, err));
        int32_t v = 0;
        EM_TRY(em_column_append_fixed(&st->out->cols[0], &v, err));
        st->out->n_rows = 1;
        *out = st->out;
        return EM_OK;
    }
    while (st->split < st->n_splits) {
        const char *name = strrchr(st->splits[st->split].path, '/');
        int k = atoi(name + 6); /* "/part-K.parquet" */
        if (strstr(st->splits[st->split].path, "/big/")) {
            if (st->next >= BIG_FILE_ROWS) {
                st->split++;
                st->next = 0;
                continue;
            }
            EM_TRY(big_batch(op, st, k, err));
            *out = st->out;
            return EM_OK;
        }
        if (st->next >= ROWS) {
            st->split++;
            st->next = 0;
            continue;
        }
        em_batch_destroy(st->out);
        st->out = NULL;
        EM_TRY(em_batch_create(&op->schema, 16, op->ctx->pool, &st->out, err));
        int64_t n = 0;
        for (; n < 16 && st->next < ROWS; n++, st->next++) {
            int32_t v = k * 100 + (int32_t)st->next;
            EM_TRY(em_column_append_fixed(&st->out->cols[0], &v, err));
        }
        st->out->n_rows = n;
        *out = st->out;
        return EM_OK;
    }
    return EM_DONE;
}

static void fake_close(em_op *op) {
    fake_scan *st = op->state;
    if (st) {
        em_batch_destroy(st->out);
        st->out = NULL;
    }
}

static const em_op_vtab FAKE_SCAN = {.name = "FakeScan", .open = fake_open, .next = fake_next, .close = fake_close};

static em_status test_build_node(const em_plan_node *n, bool root, em_op **out, em_error *err) {
    em_op *kid = NULL;
    switch (n->kind) {
    case EM_NODE_COLUMNAR_TO_ROW:
    case EM_NODE_INPUT_ADAPTER:
    case EM_NODE_WHOLE_STAGE_CODEGEN:
        return test_build_node(n->children[0], root, out, err);
    case EM_NODE_EXCHANGE:
        if (!root)
            return em_op_shuffle_read_create(n, out, err);
        return test_build_node(n->children[0], false, out, err);
    case EM_NODE_BROADCAST_EXCHANGE:
        if (!root)
            return em_op_broadcast_read_create(n, out, err);
        return test_build_node(n->children[0], false, out, err);
    case EM_NODE_REUSED_EXCHANGE:
        return em_op_broadcast_read_create(n, out, err);
    case EM_NODE_BROADCAST_HASH_JOIN: {
        em_op *l = NULL, *r = NULL;
        EM_TRY(test_build_node(n->children[0], false, &l, err));
        em_status s = test_build_node(n->children[1], false, &r, err);
        if (s == EM_OK)
            s = em_op_hash_join_create(n, l, r, out, err);
        if (s != EM_OK) {
            em_op_destroy(l);
            em_op_destroy(r);
        }
        return s;
    }
    case EM_NODE_SCAN:
        return em_op_init(&FAKE_SCAN, n, NULL, 0, sizeof(fake_scan), out, err);
    default:
        break;
    }
    EM_TRY(test_build_node(n->children[0], false, &kid, err));
    switch (n->kind) {
    case EM_NODE_FILTER:
        return em_op_filter_create(n, kid, out, err);
    case EM_NODE_PROJECT:
        return em_op_project_create(n, kid, out, err);
    case EM_NODE_HASH_AGGREGATE:
        return em_op_hash_agg_create(n, kid, out, err);
    case EM_NODE_SORT:
        return em_op_sort_create(n, kid, out, err);
    case EM_NODE_TAKE_ORDERED_AND_PROJECT:
        return em_op_top_n_create(n, kid, out, err);
    default:
        em_op_destroy(kid);
        return EM_FAIL(err, EM_ERR_UNSUPPORTED, "test builder: %s", n->name);
    }
}

static em_status test_build(void *build_ctx, const em_plan_node *n, em_op **out,
                            em_error *err) {
    (void)build_ctx;
    return test_build_node(n, true, out, err);
}

/* ------------------------------------------------------------ fixtures */

/* A warehouse with table t: FILES files of ROWS ints each. */
/* Writes file table/part-k.parquet of column a int: first, first + 1, ... (n values). */
static void write_int_file(const char *wh, const char *table, int k, int32_t first, int n) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", wh, table);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/part-%d.parquet", wh, table, k);
    em_error err = {0};
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "a", em_type_make(EM_TYPE_INT), true, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, n, NULL, &b, &err), &err);
    for (int i = 0; i < n; i++) {
        int32_t v = first + i;
        EM_ASSERT_OK(em_column_append_fixed(&b->cols[0], &v, &err), &err);
    }
    b->n_rows = n;
    em_pq_write_options wo;
    em_pq_write_options_init(&wo);
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &s, &wo, &w, &err), &err);
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_batch_destroy(b);
    em_schema_reset(&s);
}

static const char *make_warehouse(void) {
    const char *dir = em_test_tmpdir("runtime_wh");
    static char wh[4096];
    snprintf(wh, sizeof wh, "%s", dir);
    char path[4200];
    for (int k = 0; k < FILES; k++)
        write_int_file(wh, "t", k, k * 100, ROWS);
    /* not data files */
    snprintf(path, sizeof path, "%s/t/_SUCCESS", wh);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/t/.part-9.parquet.crc", wh);
    f = fopen(path, "w");
    if (f)
        fclose(f);
    return wh;
}

static em_plan *parse(const char *text) {
    em_plan *p = NULL;
    em_error err = {0};
    if (em_plan_parse(text, strlen(text), NULL, &p, &err) != EM_OK)
        fail_msg("plan parse failed: %s", err.msg);
    return p;
}

#define SCAN_T(ID, A)                                                                              \
    "(" #ID ") Scan parquet spark_catalog.default.t\n"                                             \
    "Output [1]: [a#" #A "]\n"                                                                     \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<a:int>\n\n"

static int native_tasks; /* concurrent_native_tasks of the next run_ints */
static bool real_scans;  /* run_ints builds with em_op_build: Parquet scans, not FakeScan */
static em_stage_info last_stages[16]; /* the stages of the last run_ints */
static int n_last_stages;

/* Runs text over the warehouse; returns the result's a values in order. */
static int run_ints(const char *text, const char *wh, int threads, int32_t *vals, int cap,
                    em_error *err, em_status *status) {
    em_plan *p = parse(text);
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = wh;
    o.threads = threads;
    o.concurrent_native_tasks = native_tasks;
    o.max_partition_bytes = 1; /* one partition per file */
    o.build = real_scans ? NULL : test_build;
    em_query *q = NULL;
    EM_ASSERT_OK(em_query_create(p, &o, &q, err), err);
    *status = em_query_run(q, err);
    int n = 0;
    if (*status == EM_OK) {
        const em_batch_list *l = em_query_result(q);
        for (int64_t b = 0; b < l->n_batches; b++) {
            const em_batch *bt = l->batches[b];
            for (int64_t k = 0; k < em_batch_rows(bt); k++) {
                int64_t r = bt->sel ? bt->sel[k] : k;
                assert_true(n < cap);
                vals[n++] = em_column_is_valid(&bt->cols[0], r)
                                ? ((const int32_t *)bt->cols[0].values->data)[r]
                                : INT32_MIN;
            }
        }
    }
    n_last_stages = em_query_n_stages(q) < 16 ? em_query_n_stages(q) : 16;
    for (int i = 0; i < n_last_stages; i++)
        em_query_stage_info(q, i, &last_stages[i]);
    em_query_destroy(q);
    em_plan_destroy(p);
    return n;
}

/* ------------------------------------------------------------ stage cutting */

typedef struct counts {
    int exchanges, broadcasts, reused;
    const void *seen[256];
    int n_seen;
} counts;

static bool seen_once(counts *c, const void *p) {
    for (int i = 0; i < c->n_seen; i++)
        if (c->seen[i] == p)
            return false;
    c->seen[c->n_seen++] = p;
    return true;
}

static void count_nodes(counts *c, const em_plan_node *n) {
    if (!seen_once(c, n))
        return;
    if (n->kind == EM_NODE_EXCHANGE)
        c->exchanges++;
    if (n->kind == EM_NODE_BROADCAST_EXCHANGE)
        c->broadcasts++;
    if (n->kind == EM_NODE_REUSED_EXCHANGE)
        c->reused++;
    for (int i = 0; i < n->n_children; i++)
        count_nodes(c, n->children[i]);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    *len = (size_t)n;
    return b;
}

static const char *const TPCH_LINES[] = {"spark-3.3.0", "spark-3.3", "spark-3.4",
                                         "spark-3.5",   "spark-4.0", "spark-master"};

/* The plan Spark line `version` printed for TPC-H query qn, parsed. */
static em_plan *shared_tpch_plan(const char *version, int qn) {
    char path[4096];
    snprintf(path, sizeof path, "%s/spark-plans/tpch/%s/q%d.txt", em_test_shared_dir(), version,
             qn);
    size_t len;
    char *text = slurp(path, &len);
    em_plan *p = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_plan_parse(text, len, NULL, &p, &err), &err);
    free(text);
    return p;
}

/* TPC-H q17 as every Spark line prints it: the part broadcast's keys reach
 * the lineitem scan under the aggregate that the top join reads as its
 * broadcast (through the inner join that gives the stream side its part
 * keys), and that scan's stage then runs after the part broadcast's. */
static void test_runtime_filters_q17(void **state) {
    (void)state;
    for (int v = 0; v < 6; v++) {
        const char *version = TPCH_LINES[v];
        em_plan *p = shared_tpch_plan(version, 17);
        em_error err = {0};
        em_query *q = NULL;
        EM_ASSERT_OK(em_query_create(p, NULL, &q, &err), &err);
        bool found = false;
        for (int i = 0; i < em_query_n_runtime_filters(q); i++) {
            const em_runtime_filter *f = em_query_runtime_filter_at(q, i);
            if (f->scan->id == 11 && f->source->id == 8 && f->join->id == 19)
                found = true;
        }
        if (!found)
            fail_msg("%s q17: no runtime filter from BroadcastExchange (8) into Scan (11)",
                     version);
        int scan_stage = -1, part_stage = -1;
        for (int i = 0; i < em_query_n_stages(q); i++) {
            em_stage_info si;
            em_query_stage_info(q, i, &si);
            if (si.node->id == 8)
                part_stage = si.index;
            if (si.node->id == 15) {
                scan_stage = si.index;
                bool waits = false;
                for (int d = 0; d < si.n_deps; d++)
                    waits |= si.deps[d] == part_stage;
                assert_true(waits);
            }
        }
        assert_true(part_stage >= 0 && scan_stage > part_stage);
        em_query_destroy(q);

        /* switched off: no filters */
        em_runtime_options o;
        em_runtime_options_init(&o);
        o.runtime_filters = false;
        EM_ASSERT_OK(em_query_create(p, &o, &q, &err), &err);
        assert_int_equal(em_query_n_runtime_filters(q), 0);
        em_query_destroy(q);
        em_plan_destroy(p);
    }
}

static const char *tpch_warehouse(void) { return em_test_tpch_warehouse("test_runtime_tpch"); }

/* An order-sensitive digest of a result's values (and its row count). */
static uint64_t result_digest(const em_batch_list *l, int64_t *rows) {
    uint64_t h = 1469598103934665603ull;
    *rows = 0;
    for (int64_t b = 0; b < l->n_batches; b++) {
        const em_batch *bt = l->batches[b];
        for (int64_t k = 0; k < em_batch_rows(bt); k++) {
            int64_t r = bt->sel ? bt->sel[k] : k;
            for (int c = 0; c < bt->n_cols; c++) {
                const em_column *col = &bt->cols[c];
                const uint8_t *p = NULL;
                int64_t len = 0;
                if (!em_column_is_valid(col, r)) {
                    len = 0;
                } else if (em_type_is_varlen(col->type)) {
                    const int32_t *o = em_column_offsets(col);
                    p = col->data->data + o[r];
                    len = o[r + 1] - o[r];
                } else if (col->type.id != EM_TYPE_BOOLEAN && col->type.id != EM_TYPE_NULL) {
                    int w = em_type_width(col->type);
                    p = col->values->data + r * w;
                    len = w;
                }
                for (int64_t i = 0; i < len; i++)
                    h = (h ^ p[i]) * 1099511628211ull;
                h = (h ^ (uint64_t)len) * 1099511628211ull;
            }
            (*rows)++;
        }
    }
    return h;
}

/* Runs q over the warehouse with runtime filters on or off: its digest. */
static uint64_t run_digest(em_plan *p, const char *wh, bool filters, const char *narrowed,
                           int64_t *rows, int *n_prepass) {
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = wh;
    o.threads = 2;
    o.runtime_filters = filters;
    em_error err = {0};
    em_query *q = NULL;
    EM_ASSERT_OK(em_query_create(p, &o, &q, &err), &err);
    *n_prepass = 0;
    for (int i = 0; i < em_query_n_runtime_filters(q); i++) {
        const em_runtime_filter *f = em_query_runtime_filter_at(q, i);
        if (!f->prepass)
            continue;
        /* one narrows the table expected; each from a stage of its own
         * that a stage running the scan waits for */
        *n_prepass += strcmp(f->scan->table_name, narrowed) == 0;
        int src = -1, dst = -1;
        for (int s = 0; s < em_query_n_stages(q); s++) {
            em_stage_info si;
            em_query_stage_info(q, s, &si);
            if (si.node == f->source)
                src = s;
        }
        for (int s = 0; s < em_query_n_stages(q); s++) {
            em_stage_info si;
            em_query_stage_info(q, s, &si);
            for (int d = 0; d < si.n_deps; d++)
                if (si.deps[d] == src && s != src)
                    dst = s;
        }
        assert_true(src >= 0 && dst > src);
    }
    EM_ASSERT_OK(em_query_run(q, &err), &err);
    uint64_t h = result_digest(em_query_result(q), rows);
    em_query_destroy(q);
    return h;
}

/* Pre-pass filters (plan_runtime_filter.c): q3, q4 and q9 as every Spark
 * line prints them over tables without statistics broadcast orders against
 * a filtered scan of customer (q3) and lineitem against a filtered scan of
 * orders (q4), of part (q9), or of partsupp joined with a broadcast of
 * part (q20, a pipeline through a join); the runtime collects those keys first and
 * narrows the broadcast's table by them, with the answer unchanged. */
static void test_prepass_filters(void **state) {
    (void)state;
    const char *wh = tpch_warehouse();
    static const int queries[] = {3, 4, 9, 20};
    static const char *const narrowed[] = {"orders", "lineitem", "lineitem", "lineitem"};
    for (int v = 0; v < 6; v++) {
        for (int k = 0; k < 4; k++) {
            em_plan *p = shared_tpch_plan(TPCH_LINES[v], queries[k]);
            int64_t rows_on = 0, rows_off = 0;
            int pre_on = 0, pre_off = 0;
            uint64_t on = run_digest(p, wh, true, narrowed[k], &rows_on, &pre_on);
            uint64_t off = run_digest(p, wh, false, narrowed[k], &rows_off, &pre_off);
            if (pre_on < 1)
                fail_msg("%s q%d: no pre-pass filter", TPCH_LINES[v], queries[k]);
            assert_int_equal(pre_off, 0);
            assert_true(rows_on > 0);
            assert_int_equal(rows_on, rows_off);
            if (on != off)
                fail_msg("%s q%d: answers differ with the pre-pass", TPCH_LINES[v], queries[k]);
            em_plan_destroy(p);
        }
    }
}

static void test_cut_shared_plans(void **state) {
    (void)state;
    int plans = 0;
    for (int v = 0; v < 6; v++)
        for (int qn = 1; qn <= 22; qn++) {
            em_plan *p = shared_tpch_plan(TPCH_LINES[v], qn);
            em_error err = {0};
            em_query *q = NULL;
            EM_ASSERT_OK(em_query_create(p, NULL, &q, &err), &err);
            counts c;
            memset(&c, 0, sizeof c);
            count_nodes(&c, em_plan_exec_root(p));
            int subqueries = 0;
            const void *targets[16];
            for (int i = 0; i < em_plan_n_subqueries(p); i++) {
                const em_plan_subquery *sq = em_plan_subquery_at(p, i);
                if (sq->root)
                    count_nodes(&c, sq->root);
                bool dup = false;
                for (int j = 0; j < subqueries; j++)
                    dup |= targets[j] == sq->target;
                if (!dup && sq->target)
                    targets[subqueries++] = sq->target;
            }
            int by_kind[5] = {0}, reused = 0;
            for (int i = 0; i < em_query_n_stages(q); i++) {
                em_stage_info si;
                em_query_stage_info(q, i, &si);
                assert_int_equal(si.index, i);
                by_kind[si.kind]++;
                reused += si.n_reused;
                for (int d = 0; d < si.n_deps; d++)
                    assert_true(si.deps[d] < i); /* inputs run first */
                if (si.kind == EM_STAGE_SHUFFLE)
                    assert_true(si.n_out_partitions >= 1);
                assert_int_equal(si.n_tasks, -1); /* not run */
            }
            em_stage_info last;
            em_query_stage_info(q, em_query_n_stages(q) - 1, &last);
            assert_int_equal(last.kind, EM_STAGE_RESULT);
            assert_int_equal(by_kind[EM_STAGE_SHUFFLE], c.exchanges);
            assert_int_equal(by_kind[EM_STAGE_BROADCAST], c.broadcasts);
            assert_int_equal(by_kind[EM_STAGE_SUBQUERY], subqueries);
            assert_int_equal(by_kind[EM_STAGE_RESULT], 1);
            assert_int_equal(reused, c.reused);
            const em_plan_node *top = em_plan_exec_root(p);
            bool needs_gather = top->kind == EM_NODE_TAKE_ORDERED_AND_PROJECT;
            assert_int_equal(by_kind[EM_STAGE_GATHER], needs_gather ? 1 : 0);
            /* pinned: q11 of 3.5 (2 broadcasts reused by its subquery) */
            if (v == 3 && qn == 11) {
                assert_int_equal(em_query_n_stages(q), 7);
                assert_int_equal(c.reused, 2);
                em_stage_info s3;
                em_query_stage_info(q, 3, &s3);
                assert_int_equal(s3.kind, EM_STAGE_SUBQUERY);
                assert_int_equal(s3.node->id, 34);
                em_stage_info s5;
                em_query_stage_info(q, 5, &s5);
                assert_string_equal(s5.partitioning, "rangepartitioning");
                assert_int_equal(s5.n_out_partitions, 5);
                assert_int_equal(s5.n_deps, 2); /* the subquery and the aggregate's shuffle */
            }
            em_query_destroy(q);
            em_plan_destroy(p);
            plans++;
        }
    assert_int_equal(plans, 132);
}

/* ------------------------------------------------------------ partitioning */

static em_expr make_attr(const char *name, int64_t id, em_type t) {
    em_expr e;
    memset(&e, 0, sizeof e);
    e.kind = EM_EXPR_ATTR;
    e.name = name;
    e.id = id;
    e.type = t;
    e.type_known = true;
    return e;
}

static void test_hash_ids_spark(void **state) {
    (void)state;
    em_error err = {0};
    em_type it = em_type_make(EM_TYPE_INT);
    em_expr a = make_attr("a", 1, it), b = make_attr("b", 2, it);
    const em_expr *attrs[2] = {&a, &b};
    rt_partitioning p = {RT_PART_HASH, 5, 2, attrs};
    rt_partitioner *pt;
    EM_ASSERT_OK(em_rt_partitioner_create(&p, attrs, 2, NULL, 0, &pt, &err), &err);
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, 2, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "a", it, true, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 1, "b", it, true, &err), &err);
    em_batch *bt;
    EM_ASSERT_OK(em_batch_create(&s, 6, NULL, &bt, &err), &err);
    /* spark-rapids testSpark32BitMurmur3HashInts (values made by Spark): two int
     * columns, seed 42 -> 59727262, 751823303, -1080202046, 42, 723455942,
     * 133916647 */
    int32_t av[6] = {0, 100, 0, 0, INT32_MIN, 0}, bv[6] = {0, 0, -100, 0, 0, INT32_MAX};
    bool aok[6] = {1, 1, 0, 0, 1, 0}, bok[6] = {1, 0, 1, 0, 0, 1};
    for (int i = 0; i < 6; i++) {
        if (aok[i])
            EM_ASSERT_OK(em_column_append_fixed(&bt->cols[0], &av[i], &err), &err);
        else
            EM_ASSERT_OK(em_column_append_null(&bt->cols[0], &err), &err);
        if (bok[i])
            EM_ASSERT_OK(em_column_append_fixed(&bt->cols[1], &bv[i], &err), &err);
        else
            EM_ASSERT_OK(em_column_append_null(&bt->cols[1], &err), &err);
    }
    bt->n_rows = 6;
    int32_t ids[6];
    EM_ASSERT_OK(em_rt_partitioner_ids(pt, bt, ids, &err), &err);
    /* Pmod(hash, 5) as Spark's HashPartitioning computes it */
    int32_t expect[6] = {2, 3, 4, 2, 2, 2};
    assert_memory_equal(ids, expect, sizeof expect);
    /* through a selection: rows 4, 1 */
    EM_ASSERT_OK(em_batch_sel_reserve(bt, 2, &err), &err);
    bt->sel[0] = 4;
    bt->sel[1] = 1;
    bt->n_sel = 2;
    EM_ASSERT_OK(em_rt_partitioner_ids(pt, bt, ids, &err), &err);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    em_rt_partitioner_free(pt);
    /* round robin starts at the task number and deals in turn */
    rt_partitioning rr = {RT_PART_ROUND_ROBIN, 3, 0, NULL};
    EM_ASSERT_OK(em_rt_partitioner_create(&rr, attrs, 2, NULL, 1, &pt, &err), &err);
    em_batch_sel_clear(bt);
    EM_ASSERT_OK(em_rt_partitioner_ids(pt, bt, ids, &err), &err);
    int32_t rexp[6] = {1, 2, 0, 1, 2, 0};
    assert_memory_equal(ids, rexp, sizeof rexp);
    em_rt_partitioner_free(pt);
    em_batch_destroy(bt);
    em_schema_reset(&s);
}

static void test_range_assign_order(void **state) {
    (void)state;
    em_error err = {0};
    em_type it = em_type_make(EM_TYPE_INT);
    for (int desc = 0; desc < 2; desc++) {
        em_expr a = make_attr("a", 1, it);
        em_expr order;
        memset(&order, 0, sizeof order);
        em_expr *args[1] = {&a};
        order.kind = EM_EXPR_SORT_ORDER;
        order.n_args = 1;
        order.args = args;
        order.ascending = !desc;
        order.nulls_first = !desc;
        const em_expr *keys[1] = {&order};
        rt_partitioning p = {RT_PART_RANGE, 4, 1, keys};
        enum { NB = 3, PER = 300 };
        em_column cols[NB];
        em_column *kp[NB];
        const int32_t *sel[NB] = {NULL, NULL, NULL};
        int64_t n[NB];
        int32_t vals[NB * PER];
        srand(7 + desc);
        for (int b = 0; b < NB; b++) {
            EM_ASSERT_OK(em_column_init(&cols[b], it, PER, NULL, &err), &err);
            for (int i = 0; i < PER; i++) {
                int32_t v = rand() % 50; /* many duplicates */
                vals[b * PER + i] = (rand() % 40 == 0) ? INT32_MIN : v;
                if (vals[b * PER + i] == INT32_MIN)
                    EM_ASSERT_OK(em_column_append_null(&cols[b], &err), &err);
                else
                    EM_ASSERT_OK(em_column_append_fixed(&cols[b], &v, &err), &err);
            }
            kp[b] = &cols[b];
            n[b] = PER;
        }
        rt_range_input in = {NB, kp, sel, n};
        int32_t ids[NB * PER];
        EM_ASSERT_OK(em_rt_range_assign(&p, &in, ids, NULL, &err), &err);
        /* order key: nulls first ascending / nulls last descending */
        int used[4] = {0};
        for (int i = 0; i < NB * PER; i++) {
            assert_true(ids[i] >= 0 && ids[i] < 4);
            used[ids[i]]++;
            for (int j = 0; j < NB * PER; j++) {
                int64_t ki = vals[i] == INT32_MIN ? (desc ? INT64_MAX : INT64_MIN)
                                                  : (desc ? -vals[i] : vals[i]);
                int64_t kj = vals[j] == INT32_MIN ? (desc ? INT64_MAX : INT64_MIN)
                                                  : (desc ? -vals[j] : vals[j]);
                if (ki < kj)
                    assert_true(ids[i] <= ids[j]);
                if (ki == kj)
                    assert_int_equal(ids[i], ids[j]);
            }
        }
        for (int r = 0; r < 4; r++)
            assert_true(used[r] > NB * PER / 10); /* bounds spread the rows */
        for (int b = 0; b < NB; b++)
            em_column_reset(&cols[b]);
    }
}

/* ------------------------------------------------------------ scan paths */

static const char *scan_plan_fmt = "== Physical Plan ==\n"
                                   "* ColumnarToRow (2)\n"
                                   "+- Scan parquet spark_catalog.default.t (1)\n"
                                   "\n\n"
                                   "(1) Scan parquet spark_catalog.default.t\n"
                                   "Output [1]: [a#1]\n"
                                   "Batched: true\n"
                                   "%s\n"
                                   "ReadSchema: struct<a:int>\n\n"
                                   "(2) ColumnarToRow [codegen id : 1]\n"
                                   "Input [1]: [a#1]\n\n";

static em_status scan_files_of(const char *location, const char *wh, char ***files, int *n,
                               em_error *err) {
    char text[4096];
    snprintf(text, sizeof text, scan_plan_fmt, location);
    em_plan *p = parse(text);
    em_status s = em_scan_files(em_plan_node_by_id(p, 1), wh, files, n, err);
    em_plan_destroy(p);
    return s;
}

static void test_scan_paths(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    char **files;
    int n;
    char want[4200];
    /* normalized */
    EM_ASSERT_OK(scan_files_of("Location [not included in comparison]/{warehouse_dir}/t]", wh,
                               &files, &n, &err),
                 &err);
    assert_int_equal(n, FILES);
    snprintf(want, sizeof want, "%s/t/part-0.parquet", wh);
    assert_string_equal(files[0], want);
    snprintf(want, sizeof want, "%s/t/part-3.parquet", wh);
    assert_string_equal(files[3], want);
    em_scan_files_free(files, n);
    /* a real path from another machine resolves by its last component */
    EM_ASSERT_OK(scan_files_of("Location: InMemoryFileIndex [file:/nowhere/warehouse/t]", wh,
                               &files, &n, &err),
                 &err);
    assert_int_equal(n, FILES);
    snprintf(want, sizeof want, "%s/t/part-1.parquet", wh);
    assert_string_equal(files[1], want);
    em_scan_files_free(files, n);
    /* a real path that exists, with no warehouse given */
    char loc[4300];
    snprintf(loc, sizeof loc, "Location: InMemoryFileIndex [file:%s/t]", wh);
    EM_ASSERT_OK(scan_files_of(loc, NULL, &files, &n, &err), &err);
    assert_int_equal(n, FILES);
    em_scan_files_free(files, n);
    /* missing table folder: an I/O error naming it */
    assert_int_equal(scan_files_of("Location [not included in comparison]/{warehouse_dir}/nope]",
                                   wh, &files, &n, &err),
                     EM_ERR_IO);
    assert_non_null(strstr(err.msg, "/nope"));
    /* an empty folder is an empty table */
    char empty[4200];
    snprintf(empty, sizeof empty, "%s/empty", wh);
    mkdir(empty, 0755);
    EM_ASSERT_OK(scan_files_of("Location [not included in comparison]/{warehouse_dir}/empty]", wh,
                               &files, &n, &err),
                 &err);
    assert_int_equal(n, 0);
    em_scan_files_free(files, n);
    /* Spark's listing: partition folders are descended, every file not named
     * _x or .x (nor still ._COPYING_) is data whatever its suffix */
    char path[4400];
    const char *made[] = {"p", "p/d=1", "p/d=2", "p/d=2/_temporary", NULL};
    for (int i = 0; made[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", wh, made[i]);
        assert_int_equal(mkdir(path, 0755), 0);
    }
    const char *touched[] = {"p/_SUCCESS", "p/d=1/part-0.parquet", "p/d=1/.part-0.parquet.crc",
                             "p/d=2/part-00000", "p/d=2/x.parquet._COPYING_",
                             "p/d=2/_temporary/part-9.parquet", NULL};
    for (int i = 0; touched[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", wh, touched[i]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    EM_ASSERT_OK(scan_files_of("Location [not included in comparison]/{warehouse_dir}/p]", wh,
                               &files, &n, &err),
                 &err);
    assert_int_equal(n, 2);
    snprintf(want, sizeof want, "%s/p/d=1/part-0.parquet", wh);
    assert_string_equal(files[0], want);
    snprintf(want, sizeof want, "%s/p/d=2/part-00000", wh);
    assert_string_equal(files[1], want);
    em_scan_files_free(files, n);
    /* a partitioned table prints its first partition folder: the table is above it */
    EM_ASSERT_OK(scan_files_of("Location: InMemoryFileIndex [file:/elsewhere/p/d=1, ... 2 entries]",
                               wh, &files, &n, &err),
                 &err);
    assert_int_equal(n, 2);
    em_scan_files_free(files, n);
    /* a FIFO in a table folder is refused, not opened (it would block) */
    snprintf(path, sizeof path, "%s/p/d=2/fifo", wh);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(scan_files_of("Location [not included in comparison]/{warehouse_dir}/p]", wh,
                                   &files, &n, &err),
                     EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_non_null(strstr(err.msg, "/p/d=2/fifo"));
    /* normalized without a warehouse */
    assert_int_equal(scan_files_of("Location [not included in comparison]/{warehouse_dir}/t]", NULL,
                                   &files, &n, &err),
                     EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "--warehouse"));

    /* splits: one partition per file with a tiny target; with one core every file
     * fits one split of min(maxPartitionBytes, total bytes) */
    char text[4096];
    snprintf(text, sizeof text, scan_plan_fmt,
             "Location [not included in comparison]/{warehouse_dir}/t]");
    em_plan *p = parse(text);
    rt_scan_plan sp;
    EM_ASSERT_OK(em_rt_scan_plan_make(em_plan_node_by_id(p, 1), wh, 2, 1, 4 << 20, true, &sp, &err), &err);
    assert_int_equal(sp.n_parts, FILES);
    for (int i = 0; i < FILES; i++) {
        assert_int_equal(sp.parts[i].n_splits, 1);
        assert_int_equal(sp.parts[i].splits[0].first_row_group, 0);
        assert_int_equal(sp.parts[i].splits[0].end_row_group, 1);
    }
    em_rt_scan_plan_reset(&sp);
    EM_ASSERT_OK(em_rt_scan_plan_make(em_plan_node_by_id(p, 1), wh, 1, 128 << 20, 4 << 20, true, &sp, &err),
                 &err);
    assert_int_equal(sp.n_parts, 1);
    assert_int_equal(sp.parts[0].n_splits, FILES);
    em_rt_scan_plan_reset(&sp);
    em_plan_destroy(p);
}

/* A table stored as one large row group is cut into row ranges, one task
 * per thread, and the tasks together read every row once, in file order. */
static void test_scan_row_ranges(void **state) {
    (void)state;
    enum { BIG = 100000 };
    const char *wh = em_test_tmpdir("runtime_big");
    char path[4200];
    snprintf(path, sizeof path, "%s/t", wh);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/t/part-0.parquet", wh);
    em_error err = {0};
    em_schema s;
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "a", em_type_make(EM_TYPE_INT), true, &err), &err);
    em_batch *b;
    EM_ASSERT_OK(em_batch_create(&s, BIG, NULL, &b, &err), &err);
    for (int32_t i = 0; i < BIG; i++)
        EM_ASSERT_OK(i % 7 == 3 ? em_column_append_null(&b->cols[0], &err)
                                : em_column_append_fixed(&b->cols[0], &i, &err),
                     &err);
    b->n_rows = BIG;
    em_pq_write_options wo;
    em_pq_write_options_init(&wo);
    wo.row_group_rows = BIG;
    wo.page_bytes = 8192; /* many pages: the later ranges pass over them */
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &s, &wo, &w, &err), &err);
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_batch_destroy(b);
    em_schema_reset(&s);

    char text[4096];
    snprintf(text, sizeof text, scan_plan_fmt,
             "Location [not included in comparison]/{warehouse_dir}/t]");
    em_plan *p = parse(text);
    /* threads -> ranges: 100000 rows allow three of at least 32768 rows */
    const int threads[] = {1, 2, 3, 8};
    const int want_parts[] = {1, 2, 3, 3};
    for (int t = 0; t < 4; t++) {
        rt_scan_plan sp;
        EM_ASSERT_OK(em_rt_scan_plan_make(em_plan_node_by_id(p, 1), wh, threads[t], 128 << 20, 1,
                                          true, &sp, &err),
                     &err);
        assert_int_equal(sp.n_parts, want_parts[t]);
        int64_t next = 0;
        for (int i = 0; i < sp.n_parts; i++) {
            assert_int_equal(sp.parts[i].n_splits, 1);
            const em_scan_split *x = &sp.parts[i].splits[0];
            assert_int_equal(x->first_row_group, 0);
            assert_int_equal(x->end_row_group, 1);
            if (sp.n_parts == 1) {
                assert_int_equal(x->row_end, 0);
                continue;
            }
            assert_int_equal(x->row_start, next);
            assert_true(x->row_end - x->row_start >= 32768);
            next = x->row_end;
        }
        if (sp.n_parts > 1)
            assert_int_equal(next, BIG);
        em_rt_scan_plan_reset(&sp);
    }
    /* not cut when the runtime does not ask (a query under a memory budget) */
    {
        rt_scan_plan whole;
        EM_ASSERT_OK(em_rt_scan_plan_make(em_plan_node_by_id(p, 1), wh, 3, 128 << 20, 1, false,
                                          &whole, &err),
                     &err);
        assert_int_equal(whole.n_parts, 1);
        assert_int_equal(whole.parts[0].splits[0].row_end, 0);
        em_rt_scan_plan_reset(&whole);
    }
    /* the default open cost (4 MiB) keeps this small file whole */
    rt_scan_plan sp;
    EM_ASSERT_OK(
        em_rt_scan_plan_make(em_plan_node_by_id(p, 1), wh, 2, 128 << 20, 4 << 20, true, &sp, &err),
        &err);
    assert_int_equal(sp.n_parts, 1);
    em_rt_scan_plan_reset(&sp);
    em_plan_destroy(p);

    int32_t *vals = malloc(sizeof *vals * BIG);
    assert_non_null(vals);
    em_status st;
    real_scans = true;
    int n = run_ints(text, wh, 3, vals, BIG, &err, &st);
    real_scans = false;
    EM_ASSERT_OK(st, &err);
    assert_int_equal(n, BIG);
    assert_int_equal(last_stages[n_last_stages - 1].n_tasks, 3);
    for (int32_t i = 0; i < BIG; i++)
        assert_int_equal(vals[i], i % 7 == 3 ? INT32_MIN : i);
    free(vals);
}

/* ------------------------------------------------------------ queries */

static const char *hash_plan =
    "== Physical Plan ==\n"
    "* Project (4)\n"
    "+- Exchange (3)\n"
    "   +- * ColumnarToRow (2)\n"
    "      +- Scan parquet spark_catalog.default.t (1)\n"
    "\n\n" SCAN_T(1, 1) "(2) ColumnarToRow [codegen id : 1]\n"
                        "Input [1]: [a#1]\n\n"
                        "(3) Exchange\n"
                        "Input [1]: [a#1]\n"
                        "Arguments: hashpartitioning(a#1, 4), ENSURE_REQUIREMENTS, "
                        "[plan_id=1]\n\n"
                        "(4) Project [codegen id : 2]\n"
                        "Output [1]: [a#1]\n"
                        "Input [1]: [a#1]\n\n";

static void test_hash_shuffle_threads(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t one[FILES * ROWS], three[FILES * ROWS];
    int n1 = run_ints(hash_plan, wh, 1, one, FILES * ROWS, &err, &s);
    EM_ASSERT_OK(s, &err);
    int n3 = run_ints(hash_plan, wh, 3, three, FILES * ROWS, &err, &s);
    EM_ASSERT_OK(s, &err);
    assert_int_equal(n1, FILES * ROWS);
    assert_int_equal(n3, FILES * ROWS);
    assert_memory_equal(one, three, sizeof one);
    /* the result is partition 0, then 1, ...: Spark's partition of every row */
    int last = 0;
    long sum = 0;
    for (int i = 0; i < n1; i++) {
        int32_t h = em_murmur3_int(one[i], EM_HASH_SEED), pid;
        em_hash_partition_ids(&h, 1, 4, &pid);
        assert_true(pid >= last);
        last = pid;
        sum += one[i];
    }
    assert_int_equal(last, 3);
    long want = 0;
    for (int k = 0; k < FILES; k++)
        for (int i = 0; i < ROWS; i++)
            want += k * 100 + i;
    assert_int_equal(sum, want);
}

/* Two queries at once in one process: no state is shared between them. */
typedef struct conc_arg {
    const char *wh;
    const char *text;
    int32_t vals[FILES * ROWS];
    int n;
    em_status s;
    em_error err;
} conc_arg;

static void *conc_run(void *p) {
    conc_arg *a = p;
    a->n = run_ints(a->text, a->wh, 2, a->vals, FILES * ROWS, &a->err, &a->s);
    return NULL;
}

static void test_concurrent_queries(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    static conc_arg a[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].wh = wh;
        a[i].text = hash_plan;
        assert_int_equal(pthread_create(&th[i], NULL, conc_run, &a[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) {
        EM_ASSERT_OK(a[i].s, &a[i].err);
        assert_int_equal(a[i].n, FILES * ROWS);
        assert_memory_equal(a[i].vals, a[0].vals, sizeof a[0].vals);
    }
}

static const char *range_plan =
    "== Physical Plan ==\n"
    "* Sort (4)\n"
    "+- Exchange (3)\n"
    "   +- * ColumnarToRow (2)\n"
    "      +- Scan parquet spark_catalog.default.t (1)\n"
    "\n\n" SCAN_T(1, 1) "(2) ColumnarToRow [codegen id : 1]\n"
                        "Input [1]: [a#1]\n\n"
                        "(3) Exchange\n"
                        "Input [1]: [a#1]\n"
                        "Arguments: rangepartitioning(a#1 DESC NULLS LAST, 3), "
                        "ENSURE_REQUIREMENTS, [plan_id=1]\n\n"
                        "(4) Sort [codegen id : 2]\n"
                        "Input [1]: [a#1]\n"
                        "Arguments: [a#1 DESC NULLS LAST], true, 0\n\n";

static void test_range_sort(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[FILES * ROWS];
    int n = run_ints(range_plan, wh, 2, v, FILES * ROWS, &err, &s);
    EM_ASSERT_OK(s, &err);
    assert_int_equal(n, FILES * ROWS);
    for (int i = 1; i < n; i++)
        assert_true(v[i - 1] >= v[i]);
    assert_int_equal(v[0], (FILES - 1) * 100 + ROWS - 1);
}

/* A Filter on t whose condition reads a scalar subquery over t: a global
 * aggregate (partial, SinglePartition exchange, final) of N functions,
 * under TOP_TREE (tree lines above the final aggregate, whose line starts
 * with HEAD and the lines below it with IND) and TOP (their details). */
#define SUBQUERY_PLAN(COND, TOP_TREE, HEAD, IND, N, PARTIAL, PBUFS, BUFS, FINAL, FBUFS, RESULTS,   \
                      TOP)                                                                         \
    "== Physical Plan ==\n"                                                                        \
    "* Project (4)\n"                                                                              \
    "+- * Filter (3)\n"                                                                            \
    "   +- * ColumnarToRow (2)\n"                                                                  \
    "      +- Scan parquet spark_catalog.default.t (1)\n"                                          \
    "\n\n" SCAN_T(1, 1) "(2) ColumnarToRow [codegen id : 1]\n"                                     \
    "Input [1]: [a#1]\n\n"                                                                         \
    "(3) Filter [codegen id : 1]\n"                                                                \
    "Input [1]: [a#1]\n"                                                                           \
    "Condition : " COND "\n\n"                                                                     \
    "(4) Project [codegen id : 1]\n"                                                               \
    "Output [1]: [a#1]\n"                                                                          \
    "Input [1]: [a#1]\n\n"                                                                         \
    "===== Subqueries =====\n\n"                                                                   \
    "Subquery:1 Hosting operator id = 3 Hosting Expression = Subquery scalar-subquery#2, "         \
    "[id=#3]\n" TOP_TREE HEAD "* HashAggregate (9)\n" IND "+- Exchange (8)\n" IND                  \
    "   +- * HashAggregate (7)\n" IND "      +- * ColumnarToRow (6)\n" IND                         \
    "         +- Scan parquet spark_catalog.default.t (5)\n"                                       \
    "\n\n" SCAN_T(5, 4) "(6) ColumnarToRow [codegen id : 1]\n"                                     \
    "Input [1]: [a#4]\n\n"                                                                         \
    "(7) HashAggregate [codegen id : 1]\n"                                                         \
    "Input [1]: [a#4]\n"                                                                           \
    "Keys: []\n"                                                                                   \
    "Functions [" N "]: [" PARTIAL "]\n"                                                           \
    "Aggregate Attributes [" N "]: [" PBUFS "]\n"                                                  \
    "Results [" N "]: [" BUFS "]\n\n"                                                              \
    "(8) Exchange\n"                                                                               \
    "Input [" N "]: [" BUFS "]\n"                                                                  \
    "Arguments: SinglePartition, ENSURE_REQUIREMENTS, [plan_id=1]\n\n"                             \
    "(9) HashAggregate [codegen id : 2]\n"                                                         \
    "Input [" N "]: [" BUFS "]\n"                                                                  \
    "Keys: []\n"                                                                                   \
    "Functions [" N "]: [" FINAL "]\n"                                                             \
    "Aggregate Attributes [" N "]: [" FBUFS "]\n"                                                  \
    "Results [" N "]: [" RESULTS "]\n\n" TOP

static const char *subquery_plan =
    SUBQUERY_PLAN("(a#1 = Subquery scalar-subquery#2, [id=#3])", "", "", "", "1",
                  "partial_max(a#4)", "max#5", "max#6", "max(a#4)", "max(a#4)#7",
                  "max(a#4)#7 AS max(a)#8", "");

static void test_scalar_subquery(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[FILES * ROWS];
    int n = run_ints(subquery_plan, wh, 2, v, FILES * ROWS, &err, &s);
    EM_ASSERT_OK(s, &err);
    assert_int_equal(n, 1);
    assert_int_equal(v[0], (FILES - 1) * 100 + ROWS - 1);
}

static const char *top_plan = "== Physical Plan ==\n"
                              "TakeOrderedAndProject (3)\n"
                              "+- * ColumnarToRow (2)\n"
                              "   +- Scan parquet spark_catalog.default.t (1)\n"
                              "\n\n" SCAN_T(1, 1) "(2) ColumnarToRow [codegen id : 1]\n"
                                                  "Input [1]: [a#1]\n\n"
                                                  "(3) TakeOrderedAndProject\n"
                                                  "Input [1]: [a#1]\n"
                                                  "Arguments: 5, [a#1 ASC NULLS FIRST], [a#1]\n\n";

static void test_top_n_gather(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[FILES * ROWS];
    int n = run_ints(top_plan, wh, 3, v, FILES * ROWS, &err, &s);
    EM_ASSERT_OK(s, &err);
    assert_int_equal(n, 5); /* global, not 5 per partition */
    for (int i = 0; i < 5; i++)
        assert_int_equal(v[i], i);
}

static void test_error_cancels(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[16];
    fail_partition = 2;
    spin_others = 1;
    time_t t0 = time(NULL);
    run_ints(hash_plan, wh, 3, v, 16, &err, &s);
    fail_partition = -1;
    spin_others = 0;
    assert_int_equal(s, EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "boom in partition 2"));
    assert_non_null(strstr(err.msg, "stage 0"));
    assert_non_null(strstr(err.msg, "partition 2"));
    assert_non_null(strstr(err.msg, "Exchange (3)"));
    assert_true(time(NULL) - t0 < 30); /* the spinning tasks were cancelled */
    /* a missing table fails before any task runs, naming the folder */
    char bad[4096];
    snprintf(bad, sizeof bad, "%s/none", wh);
    run_ints(hash_plan, bad, 2, v, 16, &err, &s);
    assert_int_equal(s, EM_ERR_IO);
    assert_non_null(strstr(err.msg, "none/t"));
}


/* ------------------------------------------------------------ broadcast joins */

/* t joined with t's rows below 150 (files 0 and 1: 100 rows), twice: the
 * second join reads the same broadcast through a ReusedExchange. */
static const char *bhj_plan =
    "== Physical Plan ==\n"
    "* Project (11)\n"
    "+- * BroadcastHashJoin Inner BuildRight (10)\n"
    "   :- * BroadcastHashJoin Inner BuildRight (7)\n"
    "   :  :- * ColumnarToRow (2)\n"
    "   :  :  +- Scan parquet spark_catalog.default.t (1)\n"
    "   :  +- BroadcastExchange (6)\n"
    "   :     +- * Filter (5)\n"
    "   :        +- * ColumnarToRow (4)\n"
    "   :           +- Scan parquet spark_catalog.default.t (3)\n"
    "   +- ReusedExchange (9)\n"
    "\n\n" SCAN_T(1, 1) "(2) ColumnarToRow [codegen id : 2]\n"
    "Input [1]: [a#1]\n\n" SCAN_T(3, 2) "(4) ColumnarToRow [codegen id : 1]\n"
    "Input [1]: [a#2]\n\n"
    "(5) Filter [codegen id : 1]\n"
    "Input [1]: [a#2]\n"
    "Condition : (isnotnull(a#2) AND (a#2 < 150))\n\n"
    "(6) BroadcastExchange\n"
    "Input [1]: [a#2]\n"
    "Arguments: HashedRelationBroadcastMode(List(cast(input[0, int, false] as bigint)),false), "
    "[plan_id=1]\n\n"
    "(7) BroadcastHashJoin [codegen id : 2]\n"
    "Left keys [1]: [a#1]\n"
    "Right keys [1]: [a#2]\n"
    "Join type: Inner\n"
    "Join condition: None\n\n"
    "(9) ReusedExchange [Reuses operator id: 6]\n"
    "Output [1]: [a#3]\n\n"
    "(10) BroadcastHashJoin [codegen id : 2]\n"
    "Left keys [1]: [a#1]\n"
    "Right keys [1]: [a#3]\n"
    "Join type: Inner\n"
    "Join condition: None\n\n"
    "(11) Project [codegen id : 2]\n"
    "Output [1]: [a#1]\n"
    "Input [3]: [a#1, a#2, a#3]\n\n";

static void test_broadcast_built_once(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[FILES * ROWS];
    for (int threads = 1; threads <= 3; threads += 2) {
        int n = run_ints(bhj_plan, wh, threads, v, FILES * ROWS, &err, &s);
        EM_ASSERT_OK(s, &err);
        assert_int_equal(n, 2 * ROWS);
        long sum = 0;
        for (int i = 0; i < n; i++)
            sum += v[i];
        long want = 0;
        for (int i = 0; i < ROWS; i++)
            want += i + 100 + i;
        assert_int_equal(sum, want);
        /* one table for both joins (same key column), used by each of the 4 stream tasks twice */
        int seen = 0;
        for (int i = 0; i < n_last_stages; i++) {
            if (last_stages[i].kind != EM_STAGE_BROADCAST)
                continue;
            seen++;
            assert_int_equal(last_stages[i].shared_builds, 1);
            assert_int_equal(last_stages[i].shared_uses, 2 * FILES);
        }
        assert_int_equal(seen, 1);
    }
}

/* A broadcast of 300 000 rows joined with itself: its hash table is split
 * by hash into parts built side by side (hash_join.c, index_split) when
 * there are threads to help, and in one table on one thread; both must give
 * every key's count squared, nulls matching nothing. */
static const char *big_join_plan =
    "== Physical Plan ==\n"
    "* Project (6)\n"
    "+- * BroadcastHashJoin Inner BuildRight (5)\n"
    "   :- * ColumnarToRow (2)\n"
    "   :  +- Scan parquet spark_catalog.default.big (1)\n"
    "   +- BroadcastExchange (4)\n"
    "      +- * ColumnarToRow (3)\n"
    "         +- Scan parquet spark_catalog.default.big (7)\n"
    "\n\n"
    "(1) Scan parquet spark_catalog.default.big\n"
    "Output [1]: [a#1]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/big]\n"
    "ReadSchema: struct<a:int>\n\n"
    "(2) ColumnarToRow [codegen id : 2]\n"
    "Input [1]: [a#1]\n\n"
    "(7) Scan parquet spark_catalog.default.big\n"
    "Output [1]: [a#2]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/big]\n"
    "ReadSchema: struct<a:int>\n\n"
    "(3) ColumnarToRow [codegen id : 1]\n"
    "Input [1]: [a#2]\n\n"
    "(4) BroadcastExchange\n"
    "Input [1]: [a#2]\n"
    "Arguments: HashedRelationBroadcastMode(List(cast(input[0, int, true] as bigint)),false), "
    "[plan_id=1]\n\n"
    "(5) BroadcastHashJoin [codegen id : 2]\n"
    "Left keys [1]: [a#1]\n"
    "Right keys [1]: [a#2]\n"
    "Join type: Inner\n"
    "Join condition: None\n\n"
    "(6) Project [codegen id : 2]\n"
    "Output [1]: [a#1]\n"
    "Input [2]: [a#1, a#2]\n\n";

static void test_split_broadcast_build(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    /* the files only need to exist for the planner; the fake scan makes the rows */
    for (int k = 0; k < BIG_FILES; k++)
        write_int_file(wh, "big", k, 0, 1);
    em_error err = {0};
    int64_t *count = calloc(BIG_KEYS, sizeof *count), *got = calloc(BIG_KEYS, sizeof *got);
    assert_non_null(count);
    assert_non_null(got);
    int64_t want_rows = 0;
    for (int64_t i = 0; i < (int64_t)BIG_FILES * BIG_FILE_ROWS; i++)
        if (!big_null(i))
            count[big_key(i)]++;
    for (int k = 0; k < BIG_KEYS; k++)
        want_rows += count[k] * count[k];
    int cap = (int)want_rows + 1;
    int32_t *v = malloc(sizeof *v * (size_t)cap);
    assert_non_null(v);
    for (int threads = 1; threads <= 3; threads += 2) {
        em_status s;
        int n = run_ints(big_join_plan, wh, threads, v, cap, &err, &s);
        EM_ASSERT_OK(s, &err);
        assert_int_equal(n, want_rows);
        memset(got, 0, sizeof *got * BIG_KEYS);
        for (int i = 0; i < n; i++) {
            assert_true(v[i] >= 0 && v[i] < BIG_KEYS);
            got[v[i]]++;
        }
        for (int k = 0; k < BIG_KEYS; k++)
            if (got[k] != count[k] * count[k])
                fail_msg("%d threads: key %d joined %lld times, want %lld", threads, k,
                         (long long)got[k], (long long)(count[k] * count[k]));
        for (int i = 0; i < n_last_stages; i++)
            if (last_stages[i].kind == EM_STAGE_BROADCAST)
                assert_int_equal(last_stages[i].shared_builds, 1);
    }
    free(v);
    free(count);
    free(got);
}

/* The cache's helping: a build's items run once each, on the builder's
 * thread or a waiter's, and an item's failure is every caller's error. */
enum { HELP_ITEMS = 200, HELP_CALLERS = 3 };

typedef struct help_build {
    int hits[HELP_ITEMS];
    int fail_item; /* this item fails (-1: none) */
    int width;     /* the builder's par width (0: no par) */
    pthread_mutex_t mu;
} help_build;

static em_status help_item(void *arg, int64_t i, em_error *err) {
    help_build *hb = arg;
    pthread_mutex_lock(&hb->mu);
    hb->hits[i]++;
    pthread_mutex_unlock(&hb->mu);
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
    if (i == hb->fail_item)
        return EM_FAIL(err, EM_ERR_INVALID, "item %d failed", (int)i);
    return EM_OK;
}

static int help_obj = 42;

static em_status help_build_fn(void *arg, const em_batch_list *rel, em_pool *pool, em_par *par,
                               void **obj, em_error *err) {
    (void)rel;
    (void)pool;
    help_build *hb = arg; /* no cmocka assertion off the main thread */
    hb->width = par ? par->width : 0;
    EM_TRY(em_par_for_each(par, HELP_ITEMS, help_item, arg, err));
    *obj = &help_obj;
    return EM_OK;
}

typedef struct help_caller {
    rt_shared *c;
    const void *key;
    help_build *hb;
    em_status s;
    em_error err;
    void *obj;
} help_caller;

static void *help_thread(void *p) {
    help_caller *hc = p;
    em_batch_list rel = {0};
    bool built = false;
    hc->s = em_rt_shared_get(hc->c, hc->key, "test", "k", &rel, help_build_fn, NULL, hc->hb, NULL,
                             &hc->obj, &built, &hc->err);
    return NULL;
}

static void test_shared_build_helpers(void **state) {
    (void)state;
    em_pool *pool = em_pool_create("help", NULL, -1);
    em_error err = {0};
    rt_shared *c = NULL;
    EM_ASSERT_OK(em_rt_shared_create(pool, HELP_CALLERS, &c, &err), &err);
    for (int fail = -1; fail <= 57; fail += 58) {
        help_build hb = {.fail_item = fail};
        pthread_mutex_init(&hb.mu, NULL);
        help_caller hc[HELP_CALLERS];
        pthread_t th[HELP_CALLERS];
        for (int i = 0; i < HELP_CALLERS; i++) {
            hc[i] = (help_caller){.c = c, .key = &hb, .hb = &hb};
            assert_int_equal(pthread_create(&th[i], NULL, help_thread, &hc[i]), 0);
        }
        for (int i = 0; i < HELP_CALLERS; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < HELP_CALLERS; i++) {
            if (fail < 0) {
                EM_ASSERT_OK(hc[i].s, &hc[i].err);
                assert_ptr_equal(hc[i].obj, &help_obj);
            } else {
                assert_int_equal(hc[i].s, EM_ERR_INVALID);
                assert_non_null(strstr(hc[i].err.msg, "item 57 failed"));
            }
        }
        assert_int_equal(hb.width, HELP_CALLERS);
        /* every item once; after a failure the items not started are skipped */
        int ran = 0;
        for (int i = 0; i < HELP_ITEMS; i++) {
            assert_true(hb.hits[i] <= 1);
            ran += hb.hits[i];
        }
        if (fail < 0)
            assert_int_equal(ran, HELP_ITEMS);
        else
            assert_true(hb.hits[fail] == 1 && ran <= HELP_ITEMS);
        em_rt_shared_release(c, &hb);
        pthread_mutex_destroy(&hb.mu);
    }
    em_rt_shared_destroy(c);
    em_pool_destroy(pool);
}

/* ------------------------------------------------------------ task semaphore */

typedef struct sem_arg {
    rt_sem *sem;
    int64_t ticket;
    volatile int *cancel;
    em_status s;
    int64_t *order;
    int *n_order;
    pthread_mutex_t *mu;
} sem_arg;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *sem_thread(void *p) {
    sem_arg *a = p;
    em_error err = {0};
    int holders = 0;
    a->s = em_rt_sem_acquire(a->sem, a->ticket, a->cancel, &holders, &err);
    if (a->s != EM_OK)
        return NULL;
    pthread_mutex_lock(a->mu);
    a->order[(*a->n_order)++] = a->ticket;
    pthread_mutex_unlock(a->mu);
    sleep_ms(5);
    em_rt_sem_release(a->sem);
    return NULL;
}

static int sem_waiting(rt_sem *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->n_waiting;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Waiters are served oldest ticket first, whatever order they arrived in. */
static void test_semaphore_fifo(void **state) {
    (void)state;
    rt_sem sem;
    em_rt_sem_init(&sem, 1);
    em_error err = {0};
    int holders = 0;
    volatile int cancel = 0;
    EM_ASSERT_OK(em_rt_sem_acquire(&sem, 0, &cancel, &holders, &err), &err);
    assert_int_equal(holders, 1);
    int64_t order[4];
    int n_order = 0;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static const int64_t arrive[] = {3, 1, 2}; /* arrival order */
    sem_arg a[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (sem_arg){&sem, arrive[i], &cancel, EM_OK, order, &n_order, &mu};
        assert_int_equal(pthread_create(&th[i], NULL, sem_thread, &a[i]), 0);
        while (sem_waiting(&sem) < i + 1)
            sleep_ms(1);
    }
    em_rt_sem_release(&sem);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(n_order, 3);
    for (int i = 0; i < 3; i++) {
        EM_ASSERT_OK(a[i].s, &err);
        assert_int_equal(order[i], i + 1);
    }
    assert_int_equal(sem.max_holders, 1);
    assert_int_equal(sem.holders, 0);

    /* a raised cancel flag ends a wait */
    EM_ASSERT_OK(em_rt_sem_acquire(&sem, 10, &cancel, &holders, &err), &err);
    sem_arg c = {&sem, 11, &cancel, EM_OK, order, &n_order, &mu};
    n_order = 0;
    assert_int_equal(pthread_create(&th[0], NULL, sem_thread, &c), 0);
    while (sem_waiting(&sem) < 1)
        sleep_ms(1);
    cancel = 1;
    em_rt_sem_wake(&sem);
    pthread_join(th[0], NULL);
    assert_int_equal(c.s, EM_ERR_CANCELLED);
    assert_int_equal(sem_waiting(&sem), 0);
    assert_int_equal(n_order, 0);
    em_rt_sem_release(&sem);
    em_rt_sem_destroy(&sem);
}

/* Through a query: with one permit and two threads the scan tasks never hold
 * the native side together (without the limit they do); a failing task
 * releases its permit and the query ends. */
static void test_semaphore_query(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[FILES * ROWS];
    hold_ms = 40;
    for (int limit = 0; limit <= 1; limit++) {
        native_tasks = limit;
        int n = run_ints(hash_plan, wh, 2, v, FILES * ROWS, &err, &s);
        EM_ASSERT_OK(s, &err);
        assert_int_equal(n, FILES * ROWS);
        const em_stage_info *map = &last_stages[0];
        assert_int_equal(map->kind, EM_STAGE_SHUFFLE);
        assert_int_equal(map->native_max_holders, limit ? 1 : 2);
        assert_true(map->native_hold_ns >= (int64_t)FILES * hold_ms * 1000000);
        if (limit) /* 4 tasks on 2 threads, 40 ms each, one at a time: some waited */
            assert_true(map->native_wait_ns >= (int64_t)hold_ms * 1000000);
    }
    fail_partition = 1;
    time_t t0 = time(NULL);
    run_ints(hash_plan, wh, 2, v, FILES * ROWS, &err, &s);
    fail_partition = -1;
    hold_ms = 0;
    native_tasks = 0;
    assert_int_equal(s, EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "boom in partition 1"));
    assert_true(time(NULL) - t0 < 30);
}

/* Spark 3.3+ merges scalar subqueries over one relation into one subquery
 * returning named_struct(name, value, ...) and reads fields of it. */
static const char *merged_plan = SUBQUERY_PLAN(
    "((a#1 = Subquery scalar-subquery#2, [id=#3].max(a)) OR "
    "(a#1 = ReusedSubquery Subquery scalar-subquery#2, [id=#3].min(a)))",
    "* Project (10)\n", "+- ", "   ", "2", "partial_max(a#4), partial_min(a#4)", "max#5, min#9",
    "max#6, min#10", "max(a#4), min(a#4)", "max(a#4)#7, min(a#4)#11",
    "max(a#4)#7 AS max(a)#8, min(a#4)#11 AS min(a)#12",
    "(10) Project [codegen id : 2]\n"
    "Output [1]: [named_struct(max(a), max(a)#8, min(a), min(a)#12) AS mergedValue#13]\n"
    "Input [2]: [max(a)#8, min(a)#12]\n\n"
    "Subquery:2 Hosting operator id = 3 Hosting Expression = ReusedSubquery Subquery "
    "scalar-subquery#2, [id=#3]\n\n");

static void test_merged_subquery(void **state) {
    (void)state;
    const char *wh = make_warehouse();
    em_error err = {0};
    em_status s;
    int32_t v[FILES * ROWS];
    int n = run_ints(merged_plan, wh, 2, v, FILES * ROWS, &err, &s);
    EM_ASSERT_OK(s, &err);
    assert_int_equal(n, 2);
    assert_int_equal(v[0], 0);
    assert_int_equal(v[1], (FILES - 1) * 100 + ROWS - 1);
}

/* What em_plan_unbroadcast leaves: under node, the broadcast hash joins it
 * rewrote are shuffled hash joins over two hash exchanges of parts
 * partitions each; none reads the broadcast any more. */
static int check_unbroadcast(const em_plan_node *n, const em_plan_node *x, int parts) {
    int joins = 0;
    for (int i = 0; i < n->n_children; i++) {
        const em_plan_node *c = n->children[i];
        const em_plan_node *r = c->kind == EM_NODE_REUSED_EXCHANGE ? c->reuses : c;
        assert_true(r != x || n->kind == EM_NODE_REUSED_EXCHANGE);
        joins += check_unbroadcast(c, x, parts);
    }
    if (n->kind != EM_NODE_SHUFFLED_HASH_JOIN || n->children[0]->kind != EM_NODE_EXCHANGE ||
        n->children[0]->line != 0)
        return joins;
    for (int side = 0; side < 2; side++) {
        const em_plan_node *e = n->children[side];
        if (e->kind == EM_NODE_REUSED_EXCHANGE) { /* the join read the relation renamed */
            assert_int_equal(e->line, 0);
            assert_int_equal(e->n_output, e->reuses->n_output);
            e = e->reuses;
        }
        assert_int_equal(e->kind, EM_NODE_EXCHANGE);
        const em_plan_field *a = em_plan_node_field(e, EM_FIELD_ARGUMENTS);
        const em_plan_field *k =
            em_plan_node_field(n, side == 0 ? EM_FIELD_LEFT_KEYS : EM_FIELD_RIGHT_KEYS);
        assert_non_null(a);
        assert_string_equal(a->exprs[0]->name, "hashpartitioning");
        assert_int_equal(a->exprs[0]->n_args, k->n_exprs + 1);
        assert_int_equal(atoi(a->exprs[0]->args[k->n_exprs]->text), parts);
        assert_int_equal(e->n_output, e->children[0]->n_output);
    }
    return joins + 1;
}

/* Every broadcast of the TPC-H plans of Spark 3.5 planned as shuffles, one
 * at a time: the joins reading it become shuffled hash joins the runtime
 * cuts into two more shuffle stages and one broadcast fewer, except where
 * a null-aware anti join (NOT IN) reads it, whose answer needs the whole
 * build side: refused, the plan unchanged. A join that read it through a
 * ReusedExchange reads the new shuffle through one. */
static void test_unbroadcast_shared_plans(void **state) {
    (void)state;
    int rewritten = 0, refused = 0, refused_naaj = 0;
    for (int qn = 1; qn <= 22; qn++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/spark-plans/tpch/spark-3.5/q%d.txt",
                 em_test_shared_dir(), qn);
        size_t len;
        char *text = slurp(path, &len);
        em_error err = {0};
        em_plan *probe = NULL;
        EM_ASSERT_OK(em_plan_parse(text, len, NULL, &probe, &err), &err);
        int max_id = em_plan_max_id(probe);
        for (int id = 1; id <= max_id; id++) {
            const em_plan_node *px = em_plan_node_by_id(probe, id);
            if (!px || px->kind != EM_NODE_BROADCAST_EXCHANGE)
                continue;
            em_plan *p = NULL;
            EM_ASSERT_OK(em_plan_parse(text, len, NULL, &p, &err), &err);
            const em_plan_node *x = em_plan_node_by_id(p, id);
            em_query *before = NULL;
            EM_ASSERT_OK(em_query_create(p, NULL, &before, &err), &err);
            int stages = em_query_n_stages(before);
            em_query_destroy(before);
            int joins = 0, parts = 0;
            em_status s = em_plan_unbroadcast(p, x, 3, &joins, &parts, &err);
            if (s == EM_ERR_UNSUPPORTED) {
                /* refused here: q16's NOT IN only */
                bool naaj = qn == 16 && strstr(err.msg, "null-aware anti join");
                if (!naaj)
                    fail_msg("q%d: refused: %s", qn, err.msg);
                refused_naaj += naaj;
                assert_int_equal(em_plan_max_id(p), max_id);
                refused++;
            } else {
                EM_ASSERT_OK(s, &err);
                /* the plan's own hash shuffles have 5 partitions; without any, the minimum */
                assert_int_equal(parts, strstr(text, "hashpartitioning(") ? 5 : 3);
                assert_true(em_plan_max_id(p) >= max_id + 2 * joins); /* two exchanges each, */
                assert_true(em_plan_max_id(p) <= max_id + 3 * joins); /* maybe a renaming read */
                int found = check_unbroadcast(em_plan_exec_root(p), x, parts);
                for (int i = 0; i < em_plan_n_subqueries(p); i++)
                    if (em_plan_subquery_at(p, i)->root)
                        found += check_unbroadcast(em_plan_subquery_at(p, i)->root, x, parts);
                assert_int_equal(found, joins);
                em_query *q = NULL;
                EM_ASSERT_OK(em_query_create(p, NULL, &q, &err), &err);
                /* a stream shuffle per join, one build shuffle per distinct keys */
                assert_true(em_query_n_stages(q) >= stages + joins);
                assert_true(em_query_n_stages(q) <= stages - 1 + 2 * joins);
                em_query_destroy(q);
                rewritten++;
            }
            em_plan_destroy(p);
        }
        em_plan_destroy(probe);
        free(text);
    }
    assert_true(rewritten >= 40);
    assert_int_equal(refused_naaj, 1);
    assert_int_equal(refused, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_shared_plans),     cmocka_unit_test(test_runtime_filters_q17),
        cmocka_unit_test(test_prepass_filters),
        cmocka_unit_test(test_hash_ids_spark),
        cmocka_unit_test(test_range_assign_order),   cmocka_unit_test(test_scan_paths),
        cmocka_unit_test(test_scan_row_ranges),
        cmocka_unit_test(test_hash_shuffle_threads), cmocka_unit_test(test_range_sort),
        cmocka_unit_test(test_scalar_subquery),      cmocka_unit_test(test_top_n_gather),
        cmocka_unit_test(test_error_cancels),        cmocka_unit_test(test_concurrent_queries),
        cmocka_unit_test(test_broadcast_built_once), cmocka_unit_test(test_split_broadcast_build),
        cmocka_unit_test(test_shared_build_helpers), cmocka_unit_test(test_semaphore_fifo),
        cmocka_unit_test(test_semaphore_query),      cmocka_unit_test(test_merged_subquery),
        cmocka_unit_test(test_unbroadcast_shared_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
