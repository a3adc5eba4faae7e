/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LORE: the idsToDump grammar (every edge case the issue lists, each either
 * a meaning or an error naming the token and its column), the dump folder's
 * rules, and dump + replay round trips on small plans where the replayed
 * output must equal the dumped output value for value.
 */
#include "test_ops_common.h"

#include <dirent.h>
#include <sys/stat.h>

#include "ember/conf.h"
#include "ember/lore.h"
#include "ember/overrides.h"
#include "ember/parquet.h"
#include "ember/rowops.h"
#include "ember/runtime.h"

/* ------------------------------------------------------------------ grammar */

static em_lore_ids parse_ok(const char *text) {
    em_lore_ids ids;
    em_error err = {0};
    EM_ASSERT_OK(em_lore_ids_parse(text, &ids, &err), &err);
    return ids;
}

/* Parses text expecting an error whose message contains every fragment. */
static void parse_err(const char *text, const char *frag1, const char *frag2) {
    em_lore_ids ids;
    em_error err = {0};
    em_status s = em_lore_ids_parse(text, &ids, &err);
    if (s != EM_ERR_INVALID)
        fail_msg("'%s' parsed (status %s), expected an error", text, em_status_name(s));
    assert_int_equal(ids.n, 0);
    if (!strstr(err.msg, frag1) || (frag2 && !strstr(err.msg, frag2)))
        fail_msg("'%s': message '%s' lacks '%s' / '%s'", text, err.msg, frag1,
                 frag2 ? frag2 : "");
}

/* The partitions 0..limit-1 a selection picks, as "0 4 5 7". */
static char *picked(const em_lore_selection *s, int limit) {
    static char buf[256];
    buf[0] = '\0';
    for (int p = 0; p < limit; p++)
        if (em_lore_selection_has(s, p))
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", buf[0] ? " " : "", p);
    return buf;
}

static void test_ids_grammar(void **state) {
    (void)state;
    em_lore_ids ids = parse_ok("1[0 4-6 7], 2[*]");
    assert_int_equal(ids.n, 2);
    assert_int_equal(ids.items[0].lore_id, 1);
    assert_string_equal(picked(&ids.items[0], 20), "0 4 5 7");
    assert_int_equal(em_lore_selection_max(&ids.items[0]), 7);
    assert_true(ids.items[1].all);
    assert_string_equal(picked(&ids.items[1], 4), "0 1 2 3");
    assert_int_equal(em_lore_selection_max(&ids.items[1]), -1);
    assert_null(em_lore_ids_find(&ids, 3));
    assert_non_null(em_lore_ids_find(&ids, 2));
    em_lore_ids_reset(&ids);

    /* empty brackets: every partition (spark-rapids' docs print "1[], 2[]") */
    ids = parse_ok("1[], 2[ ]");
    assert_true(ids.items[0].all && ids.items[1].all);
    em_lore_ids_reset(&ids);

    /* blanks anywhere between tokens, tabs too; repeats and overlaps are a union */
    ids = parse_ok("  3 [ 2\t0-3  2 ]  ,\t10[9]  ");
    assert_int_equal(ids.n, 2);
    assert_string_equal(picked(&ids.items[0], 10), "0 1 2");
    assert_int_equal(ids.items[0].column, 3);
    assert_string_equal(picked(&ids.items[1], 12), "9");
    em_lore_ids_reset(&ids);

    /* nothing: LORE off */
    ids = parse_ok("");
    assert_int_equal(ids.n, 0);
    ids = parse_ok("   ");
    assert_int_equal(ids.n, 0);
    ids = parse_ok(NULL);
    assert_int_equal(ids.n, 0);
}

static void test_ids_errors(void **state) {
    (void)state;
    parse_err("1", "column 1", "id 1 needs its partitions in brackets");
    parse_err("1[0], 2", "column 7", "id 2 needs");
    parse_err("1[6-4]", "column 3", "range 6-4 is empty");
    parse_err("1[4-4]", "column 3", "range 4-4 is empty");
    parse_err("1[* 3]", "column 5", "must stand alone");
    parse_err("1[3 *]", "column 5", "must stand alone");
    parse_err("1[**]", "column 4", "must stand alone");
    parse_err("1[0], 1[2]", "column 7", "id 1 is already listed at column 1");
    parse_err("1[0", "column 4", "expected ']', found end of text");
    parse_err("1[*", "column 4", "expected ']'");
    parse_err("1[0],", "column 6", "expected an operator id");
    parse_err(",1[0]", "column 1", "expected an operator id");
    parse_err("1[0] 2[1]", "column 6", "expected ',' between ids");
    parse_err("1[a]", "column 3", "found 'a'");
    parse_err("1[-2]", "column 3", "expected a partition number");
    parse_err("-1[0]", "column 1", "found '-1'");
    parse_err("1[2-]", "column 5", "expected the end of the range");
    parse_err("1[0x3]", "column 4", "expected a blank or ']'");
    parse_err("1[0,3]", "column 4", "expected a blank or ']'");
    parse_err("abc", "column 1", "found 'abc'");
    parse_err("99999999999[0]", "column 1", "number too large");
    parse_err("1[0 99999999999]", "column 5", "number too large");
    parse_err("1[0]]", "column 5", "expected ','");
    parse_err("1[[0]]", "column 3", "found '['");
}

/* ------------------------------------------------------------------ dump + replay */

#define SCHEMA "k:string,g:int,v:decimal(10;2),d:double"
#define N_COLS 4

/* k, g, v, d */
static const char *const ROWS[] = {
    "a",  "1",  "1.50",  "1.0",  /* */
    "b",  "2",  "2.00",  NULL,   /* */
    NULL, "3",  "3.25",  "3.0",  /* */
    "a",  NULL, NULL,    "5.0",  /* */
    "b",  "5",  "-1.00", "2.0",  /* */
    NULL, NULL, NULL,    NULL,   /* */
    "a",  "7",  "0.50",  "-0.0", /* */
    "c",  "8",  "9.99",  "8.5",
};
#define N_ROWS 8

#define RSCHEMA "k2:string,w:bigint"
static const char *const RROWS[] = {"a", "10", "b", "20", "a", "30", "q", "40", "z", "50"};
#define N_RROWS 5

#define SCAN_T(id)                                                                                 \
    "(" #id ") Scan parquet spark_catalog.default.t\n"                                            \
    "Output [4]: [k#1, g#2, v#3, d#4]\n"                                                           \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/t]\n"                                   \
    "ReadSchema: struct<k:string,g:int,v:decimal(10,2),d:double>\n\n"

/* Scan (1) and Exchange (2) blocks, and the head of Filter (3)'s. */
#define SCAN_EXCHANGE_FILTER_3                                                                     \
    SCAN_T(1) "(2) Exchange\n"                                                                     \
              "Input [4]: [k#1, g#2, v#3, d#4]\n"                                                   \
              "Arguments: hashpartitioning(k#1, 2), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"          \
              "(3) Filter [codegen id : 1]\n"                                                       \
              "Input [4]: [k#1, g#2, v#3, d#4]\n"

/* Filter, Project and a two-phase aggregate whose shuffled columns repeat
 * names (sum, count), over an Exchange (2). LORE ids (post-order): Scan 0,
 * Exchange 1, Filter 2, Project 3, HashAggregate 4, Exchange 5, HashAggregate 6. */
static const char AGG_PLAN[] =
    "== Physical Plan ==\n"
    "HashAggregate (7)\n"
    "+- Exchange (6)\n"
    "   +- HashAggregate (5)\n"
    "      +- * Project (4)\n"
    "         +- * Filter (3)\n"
    "            +- Exchange (2)\n"
    "               +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_EXCHANGE_FILTER_3
    "Condition : (isnotnull(v#3) OR isnull(g#2))\n\n"
    "(4) Project [codegen id : 1]\n"
    "Output [4]: [k#1, (v#3 * 2) AS v2#9, d#4, g#2]\n"
    "Input [4]: [k#1, g#2, v#3, d#4]\n\n"
    "(5) HashAggregate\n"
    "Input [4]: [k#1, v2#9, d#4, g#2]\n"
    "Keys [1]: [k#1]\n"
    "Functions [4]: [partial_sum(v2#9), partial_count(1), partial_avg(d#4), partial_max(g#2)]\n"
    "Aggregate Attributes [6]: [sum#10, isEmpty#11, count#12, sum#13, count#14, max#15]\n"
    "Results [7]: [k#1, sum#16, isEmpty#17, count#18L, sum#19, count#20L, max#21]\n\n"
    "(6) Exchange\n"
    "Input [7]: [k#1, sum#16, isEmpty#17, count#18L, sum#19, count#20L, max#21]\n"
    "Arguments: hashpartitioning(k#1, 2), ENSURE_REQUIREMENTS, [plan_id=2]\n\n"
    "(7) HashAggregate\n"
    "Input [7]: [k#1, sum#16, isEmpty#17, count#18L, sum#19, count#20L, max#21]\n"
    "Keys [1]: [k#1]\n"
    "Functions [4]: [sum(v2#9), count(1), avg(d#4), max(g#2)]\n"
    "Aggregate Attributes [4]: [sum(v2#9)#22, count(1)#23L, avg(d#4)#24, max(g#2)#25]\n"
    "Results [5]: [k#1, sum(v2#9)#22 AS sv#26, count(1)#23L AS c#27L, avg(d#4)#24 AS ad#28, "
    "max(g#2)#25 AS mg#29]\n";

/* An inner and a null-aware anti broadcast join: ids Scan 0, Exchange 1,
 * Scan 2, BroadcastExchange 3, join 4. */
#define JOIN_PLAN(type, args, cond, null_aware)                                                    \
    "== Physical Plan ==\n"                                                                        \
    "* BroadcastHashJoin " type " BuildRight (5)\n"                                                 \
    ":- Exchange (2)\n"                                                                            \
    ":  +- Scan parquet spark_catalog.default.t (1)\n"                                             \
    "+- BroadcastExchange (4)\n"                                                                   \
    "   +- Scan parquet spark_catalog.default.r (3)\n\n\n" SCAN_T(1)                               \
    "(2) Exchange\n"                                                                               \
    "Input [4]: [k#1, g#2, v#3, d#4]\n"                                                            \
    "Arguments: hashpartitioning(k#1, 2), ENSURE_REQUIREMENTS, [plan_id=1]\n\n"                    \
    "(3) Scan parquet spark_catalog.default.r\n"                                                   \
    "Output [2]: [k2#5, w#6L]\n"                                                                   \
    "Batched: true\n"                                                                              \
    "Location [not included in comparison]/{warehouse_dir}/r]\n"                                   \
    "ReadSchema: struct<k2:string,w:bigint>\n\n"                                                   \
    "(4) BroadcastExchange\n"                                                                      \
    "Input [2]: [k2#5, w#6L]\n"                                                                    \
    "Arguments: HashedRelationBroadcastMode(List(input[0, string, true])," null_aware "), "        \
    "[plan_id=2]\n\n"                                                                              \
    "(5) BroadcastHashJoin [codegen id : 1]\n"                                                     \
    "Left keys [1]: [k#1]\n"                                                                       \
    "Right keys [1]: [k2#5]\n"                                                                     \
    "Join type: " type "\n"                                                                        \
    "Join condition: " cond "\n"

static const char JOIN_INNER[] = JOIN_PLAN("Inner", "", "(w#6L > 15)", "false");
static const char JOIN_ANTI[] = JOIN_PLAN("LeftAnti", "", "None", "true");

/* The execution context of the dumping run: the shuffle read gets this
 * partition's share of ROWS, the broadcast read all of RROWS. */
typedef struct lore_run_ctx {
    em_exec_ctx ctx;
    em_batch_list shuffle[8][2]; /* by exchange id and partition */
    em_batch_list bcast;
} lore_run_ctx;

static em_status run_shuffle(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                             em_error *err) {
    (void)err;
    *out = &((lore_run_ctx *)ctx->runtime)->shuffle[x->id][ctx->partition];
    return EM_OK;
}

static em_status run_bcast(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                           em_error *err) {
    (void)x;
    (void)err;
    *out = &((lore_run_ctx *)ctx->runtime)->bcast;
    return EM_OK;
}

static void list_of(em_batch_list *l, const char *schema, const char *const *cells, int n_cols,
                    int lo, int hi, int per) {
    memset(l, 0, sizeof *l);
    int n = hi - lo, nb = (n + per - 1) / per;
    l->batches = calloc((size_t)nb + 1, sizeof *l->batches);
    for (int i = 0; i < nb; i++) {
        int a = lo + i * per, b = a + per < hi ? a + per : hi;
        l->batches[l->n_batches++] = tops_batch(schema, cells + a * n_cols, b - a);
    }
    l->n_rows = n;
}

/* What the builder does (ember/lore.h): inputs wrapped before the
 * operator's constructor, the operator's own op after it. */
static em_op *build_wrapped(em_lore_session *s, const em_plan_node *n) {
    em_error err = {0};
    while (n->kind == EM_NODE_WHOLE_STAGE_CODEGEN || n->kind == EM_NODE_INPUT_ADAPTER ||
           n->kind == EM_NODE_COLUMNAR_TO_ROW)
        n = n->children[0];
    em_op *op = NULL;
    if (n->kind == EM_NODE_EXCHANGE) {
        EM_ASSERT_OK(em_op_shuffle_read_create(n, &op, &err), &err);
        return op;
    }
    if (n->kind == EM_NODE_BROADCAST_EXCHANGE) {
        EM_ASSERT_OK(em_op_broadcast_read_create(n, &op, &err), &err);
        return op;
    }
    em_op *kids[2] = {NULL, NULL};
    for (int k = 0; k < n->n_children; k++) {
        kids[k] = build_wrapped(s, n->children[k]);
        EM_ASSERT_OK(em_lore_wrap(s, n, k, kids[k], &kids[k], &err), &err);
    }
    switch (n->kind) {
    case EM_NODE_FILTER:
        EM_ASSERT_OK(em_op_filter_create(n, kids[0], &op, &err), &err);
        break;
    case EM_NODE_PROJECT:
        EM_ASSERT_OK(em_op_project_create(n, kids[0], &op, &err), &err);
        break;
    case EM_NODE_HASH_AGGREGATE:
        EM_ASSERT_OK(em_op_hash_agg_create(n, kids[0], &op, &err), &err);
        break;
    case EM_NODE_BROADCAST_HASH_JOIN:
        EM_ASSERT_OK(em_op_hash_join_create(n, kids[0], kids[1], &op, &err), &err);
        break;
    default:
        fail_msg("test builder: no %s", n->name);
    }
    EM_ASSERT_OK(em_lore_wrap(s, n, EM_LORE_OUTPUT, op, &op, &err), &err);
    return op;
}

static em_conf *lore_conf(const char *ids, const char *path, bool output, const char *cols) {
    em_conf *c = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_conf_create(&c, &err), &err);
    if (ids)
        EM_ASSERT_OK(em_conf_set(c, "spark.rapids.sql.lore.idsToDump", ids, &err), &err);
    if (path)
        EM_ASSERT_OK(em_conf_set(c, "spark.ember.sql.lore.dumpPath", path, &err), &err);
    if (output)
        EM_ASSERT_OK(em_conf_set(c, "spark.ember.sql.lore.dumpOutput", "true", &err), &err);
    if (cols)
        EM_ASSERT_OK(em_conf_set(c, "spark.ember.sql.lore.columns", cols, &err), &err);
    return c;
}

/* Runs the stage rooted at `root` over 2 partitions, keeping each
 * partition's output in out[]. */
static void run_stage(em_lore_session *s, lore_run_ctx *rc, const em_plan_node *root,
                      em_pool *pool, em_batch_list out[2]) {
    em_error err = {0};
    for (int part = 0; part < 2; part++) {
        rc->ctx.pool = pool;
        rc->ctx.partition = part;
        rc->ctx.num_partitions = 2;
        rc->ctx.shuffle_input = run_shuffle;
        rc->ctx.broadcast_input = run_bcast;
        rc->ctx.runtime = rc;
        em_op *op = build_wrapped(s, root);
        EM_ASSERT_OK(em_op_open(op, &rc->ctx, &err), &err);
        EM_ASSERT_OK(em_op_collect(op, pool, &out[part], &err), &err);
        em_op_destroy(op);
    }
}

/* Runs the plan with LORE on, stage by stage as the runtime cuts it (the
 * map side of Exchange (6), when there is one, feeds its reduce side
 * partition for partition); results[] gets the root's output. */
static void run_dumping(const char *plan_text, em_conf *conf, em_pool *pool, int per,
                        em_batch_list results[2], em_lore_session **session) {
    em_plan *p = tops_parse(plan_text);
    em_error err = {0};
    em_lore_session *s = NULL;
    EM_ASSERT_OK(em_lore_session_create(conf, p, NULL, 0, &s, &err), &err);
    assert_non_null(s);
    lore_run_ctx rc;
    memset(&rc, 0, sizeof rc);
    list_of(&rc.shuffle[2][0], SCHEMA, ROWS, N_COLS, 0, 5, per);
    list_of(&rc.shuffle[2][1], SCHEMA, ROWS, N_COLS, 5, N_ROWS, per);
    list_of(&rc.bcast, RSCHEMA, RROWS, 2, 0, N_RROWS, per);
    const em_plan_node *x6 = em_plan_node_by_id(p, 6);
    if (x6 && x6->kind == EM_NODE_EXCHANGE)
        run_stage(s, &rc, x6->children[0], pool, rc.shuffle[6]);
    run_stage(s, &rc, em_plan_root(p), pool, results);
    for (int x = 0; x < 8; x++)
        for (int i = 0; i < 2; i++)
            em_batch_list_reset(&rc.shuffle[x][i]);
    em_batch_list_reset(&rc.bcast);
    if (session)
        *session = s;
    else
        em_lore_session_destroy(s);
    em_plan_destroy(p);
}

/* Replays DIR/loreId-id for every dumped partition; requires the replay to
 * equal the dumped output and, when given, the run's own result. Returns
 * the partitions replayed. */
static int replay_all(const char *dir, int id, em_pool *pool, const em_batch_list *results) {
    char path[1024];
    snprintf(path, sizeof path, "%s/loreId-%d", dir, id);
    em_lore_dump *d = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_lore_dump_open(path, &d, &err), &err);
    assert_true(em_lore_dump_has_output(d));
    int n = em_lore_dump_n_partitions(d);
    for (int i = 0; i < n; i++) {
        int part = em_lore_dump_partition_at(d, i);
        em_batch_list got, want;
        em_lore_replay_stats st;
        EM_ASSERT_OK(em_lore_replay(d, part, pool, &got, &st, &err), &err);
        EM_ASSERT_OK(em_lore_dump_read_output(d, part, pool, &want, &err), &err);
        char diff[256];
        if (!em_lore_results_equal(&got, &want, diff, sizeof diff))
            fail_msg("loreId %d partition %d: replay differs from the dump: %s", id, part, diff);
        if (results && !em_lore_results_equal(&got, &results[part], diff, sizeof diff))
            fail_msg("loreId %d partition %d: replay differs from the run: %s", id, part, diff);
        assert_int_equal(st.rows_out, got.n_rows);
        /* the reference row engine on the same input: the same rows */
        em_batch_list row;
        EM_ASSERT_OK(em_lore_replay_on(d, part, EM_LORE_ROW, pool, &row, NULL, &err), &err);
        if (!em_lore_results_equal_unordered(&row, &want, diff, sizeof diff))
            fail_msg("loreId %d partition %d: row engine differs: %s", id, part, diff);
        em_batch_list_reset(&row);
        em_batch_list_reset(&got);
        em_batch_list_reset(&want);
    }
    em_lore_dump_close(d);
    return n;
}

static bool file_exists(const char *dir, const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct stat stb;
    return stat(path, &stb) == 0;
}

static void test_dump_replay_agg(void **state) {
    (void)state;
    em_pool *pool = em_pool_create("lore", NULL, -1);
    for (int per = 1; per <= 3; per += 2) {
        const char *dir = em_test_tmpdir("lore_agg");
        char sub[600];
        snprintf(sub, sizeof sub, "%s/dump", dir);
        em_conf *conf = lore_conf("2[*], 3[*], 4[0 1], 6[1]", sub, true, NULL);
        em_batch_list results[2] = {{0}};
        run_dumping(AGG_PLAN, conf, pool, per, results, NULL);
        /* the layout, exactly */
        assert_true(file_exists(sub, "loreId-2/plan.meta"));
        assert_true(file_exists(sub, "loreId-2/input-0/rdd.meta"));
        assert_true(file_exists(sub, "loreId-2/input-0/partition-0/partition.meta"));
        assert_true(file_exists(sub, "loreId-2/input-0/partition-0/batch-0.parquet"));
        assert_true(file_exists(sub, "loreId-2/output/partition-1/partition.meta"));
        assert_true(file_exists(sub, "loreId-6/input-0/partition-1/partition.meta"));
        assert_false(file_exists(sub, "loreId-6/input-0/partition-0"));
        assert_false(file_exists(sub, "loreId-5"));
        assert_int_equal(replay_all(sub, 2, pool, NULL), 2);
        assert_int_equal(replay_all(sub, 3, pool, NULL), 2);
        assert_int_equal(replay_all(sub, 4, pool, NULL), 2);
        /* the root's replay equals what the query returned */
        assert_int_equal(replay_all(sub, 6, pool, results), 1);
        for (int i = 0; i < 2; i++)
            em_batch_list_reset(&results[i]);
        em_conf_destroy(conf);
    }
    em_pool_destroy(pool);
}

static void test_dump_replay_join(void **state) {
    (void)state;
    em_pool *pool = em_pool_create("lore", NULL, -1);
    const char *plans[] = {JOIN_INNER, JOIN_ANTI};
    for (int i = 0; i < 2; i++) {
        const char *dir = em_test_tmpdir("lore_join");
        em_conf *conf = lore_conf("4[]", dir, true, NULL);
        em_batch_list results[2] = {{0}};
        run_dumping(plans[i], conf, pool, 2, results, NULL);
        assert_true(file_exists(dir, "loreId-4/input-1/partition-0/batch-0.parquet"));
        if (results[0].n_rows + results[1].n_rows == 0)
            fail_msg("plan %d: the join returned nothing", i);
        assert_int_equal(replay_all(dir, 4, pool, results), 2);
        for (int k = 0; k < 2; k++)
            em_batch_list_reset(&results[k]);
        em_conf_destroy(conf);
    }
    em_pool_destroy(pool);
}

static void expect_session_error(const char *plan_text, em_conf *conf, const char *frag) {
    em_plan *p = tops_parse(plan_text);
    em_lore_session *s = NULL;
    em_error err = {0};
    em_status st = em_lore_session_create(conf, p, NULL, 0, &s, &err);
    if (st == EM_OK)
        fail_msg("session created, expected an error with '%s'", frag);
    assert_null(s);
    if (!strstr(err.msg, frag))
        fail_msg("message '%s' lacks '%s'", err.msg, frag);
    em_plan_destroy(p);
    em_conf_destroy(conf);
}

static void test_session_errors(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("lore_errors");
    char path[600], file[700];
    snprintf(path, sizeof path, "%s/new/nested", dir);
    expect_session_error(AGG_PLAN, lore_conf("2[*]", NULL, false, NULL),
                         "spark.ember.sql.lore.dumpPath is not");
    expect_session_error(AGG_PLAN, lore_conf("2[*], 9[0]", path, false, NULL),
                         "column 7: no native operator has loreId 9 (this plan's ids are 0..6");
    expect_session_error(AGG_PLAN, lore_conf("2 [* 1]", path, false, NULL), "must stand alone");
    expect_session_error(AGG_PLAN, lore_conf("2[*]", path, false, "nosuch"),
                         "no selected operator reads a column named nosuch");
    /* nothing was created by the refused sessions */
    assert_false(file_exists(dir, "new"));
    /* a missing folder is created; a non-empty one is refused */
    em_plan *p = tops_parse(AGG_PLAN);
    em_conf *conf = lore_conf("2[*]", path, false, NULL);
    em_lore_session *s = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_lore_session_create(conf, p, NULL, 0, &s, &err), &err);
    assert_true(file_exists(path, "loreId-2/plan.meta"));
    assert_int_equal(em_lore_session_files(s), 1);
    em_lore_session_destroy(s);
    em_plan_destroy(p);
    expect_session_error(AGG_PLAN, conf, "is not empty (it holds loreId-2)");
    /* a folder another run is writing is refused while that run lives */
    char locked[4200];
    snprintf(locked, sizeof locked, "%s/locked", dir);
    em_conf *lconf = lore_conf("2[*]", locked, false, NULL);
    p = tops_parse(AGG_PLAN);
    EM_ASSERT_OK(em_lore_session_create(lconf, p, NULL, 0, &s, &err), &err);
    expect_session_error(AGG_PLAN, lconf, "is being written by another run");
    em_lore_session_destroy(s);
    em_plan_destroy(p);
    snprintf(file, sizeof file, "%s/afile", dir);
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    expect_session_error(AGG_PLAN, lore_conf("2[*]", file, false, NULL),
                         "exists and is not a folder");
    /* no ids: no session, nothing checked */
    p = tops_parse(AGG_PLAN);
    conf = lore_conf("  ", NULL, false, NULL);
    EM_ASSERT_OK(em_lore_session_create(conf, p, NULL, 0, &s, &err), &err);
    assert_null(s);
    em_conf_destroy(conf);
    em_plan_destroy(p);
}

/* A partition beyond the stage's count fails the task naming it. */
static void test_partition_beyond(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("lore_beyond");
    em_plan *p = tops_parse(AGG_PLAN);
    em_conf *conf = lore_conf("3[1 5]", dir, false, NULL);
    em_lore_session *s = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_lore_session_create(conf, p, NULL, 0, &s, &err), &err);
    em_pool *pool = em_pool_create("lore", NULL, -1);
    lore_run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.ctx.pool = pool;
    rc.ctx.num_partitions = 2;
    rc.ctx.shuffle_input = run_shuffle;
    rc.ctx.runtime = &rc;
    em_op *op = build_wrapped(s, tops_node(p, 5));
    em_status st = em_op_open(op, &rc.ctx, &err);
    assert_int_equal(st, EM_ERR_INVALID);
    assert_non_null(strstr(err.msg, "loreId 3 selects partition 5, but Project (4) runs 2 "
                                    "partitions (0..1)"));
    em_op_destroy(op);
    em_pool_destroy(pool);
    em_lore_session_destroy(s);
    em_conf_destroy(conf);
    em_plan_destroy(p);
}

/* spark.ember.sql.lore.columns: only the named columns are written; such
 * an input cannot be replayed, and replay says so. */
static void test_columns_subset(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("lore_cols");
    em_pool *pool = em_pool_create("lore", NULL, -1);
    em_conf *conf = lore_conf("2[0]", dir, true, "k, G");
    em_batch_list results[2] = {{0}};
    run_dumping(AGG_PLAN, conf, pool, 3, results, NULL);
    char path[700];
    snprintf(path, sizeof path, "%s/loreId-2/input-0/partition-0/batch-0.parquet", dir);
    em_pq_file *f = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    const em_schema *sc = em_pq_file_schema(f);
    assert_int_equal(sc->n_fields, 2);
    assert_string_equal(sc->fields[0].name, "k");
    assert_string_equal(sc->fields[1].name, "g");
    em_pq_file_close(f);
    snprintf(path, sizeof path, "%s/loreId-2", dir);
    em_lore_dump *d = NULL;
    EM_ASSERT_OK(em_lore_dump_open(path, &d, &err), &err);
    em_batch_list got;
    assert_int_equal(em_lore_replay(d, 0, pool, &got, NULL, &err), EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "replay needs every column"));
    em_lore_dump_close(d);
    for (int i = 0; i < 2; i++)
        em_batch_list_reset(&results[i]);
    em_conf_destroy(conf);
    em_pool_destroy(pool);
}

/* A Filter reading a scalar subquery: its value is dumped as input 1 and
 * served back to the replay. */
static const char SUBQ_PLAN[] =
    "== Physical Plan ==\n"
    "* Filter (3)\n"
    "+- Exchange (2)\n"
    "   +- Scan parquet spark_catalog.default.t (1)\n\n\n" SCAN_EXCHANGE_FILTER_3
    "Condition : (g#2 > Subquery scalar-subquery#30, [id=#31])\n\n"
    "===== Subqueries =====\n\n"
    "Subquery:1 Hosting operator id = 3 Hosting Expression = Subquery scalar-subquery#30, "
    "[id=#31]\n"
    "Scan parquet spark_catalog.default.s (4)\n\n\n"
    "(4) Scan parquet spark_catalog.default.s\n"
    "Output [1]: [m#32]\n"
    "Batched: true\n"
    "Location [not included in comparison]/{warehouse_dir}/s]\n"
    "ReadSchema: struct<m:int>\n\n\n";

static em_status subq_value(void *ctx, const em_expr *sq, em_type type, em_pool *pool,
                            em_column *out, em_error *err) {
    (void)ctx;
    (void)sq;
    EM_TRY(em_column_init(out, type, 1, pool, err));
    int32_t v = 4;
    return em_column_append_fixed(out, &v, err);
}

static void test_subquery_dump(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("lore_subq");
    em_pool *pool = em_pool_create("lore", NULL, -1);
    em_conf *conf = lore_conf("2[*]", dir, true, NULL);
    em_plan *p = tops_parse(SUBQ_PLAN);
    em_error err = {0};
    em_lore_session *s = NULL;
    EM_ASSERT_OK(em_lore_session_create(conf, p, NULL, 0, &s, &err), &err);
    lore_run_ctx rc;
    memset(&rc, 0, sizeof rc);
    list_of(&rc.shuffle[2][0], SCHEMA, ROWS, N_COLS, 0, 5, 2);
    list_of(&rc.shuffle[2][1], SCHEMA, ROWS, N_COLS, 5, N_ROWS, 2);
    rc.ctx.expr_opts.subquery = subq_value;
    em_batch_list results[2] = {{0}};
    run_stage(s, &rc, em_plan_root(p), pool, results);
    /* g > 4: 5 in partition 0; 7 and 8 in partition 1 */
    assert_int_equal(results[0].n_rows, 1);
    assert_int_equal(results[1].n_rows, 2);
    assert_true(file_exists(dir, "loreId-2/input-1/partition-1/batch-0.parquet"));
    assert_int_equal(replay_all(dir, 2, pool, results), 2);
    for (int i = 0; i < 2; i++) {
        em_batch_list_reset(&results[i]);
        em_batch_list_reset(&rc.shuffle[2][i]);
    }
    em_lore_session_destroy(s);
    em_plan_destroy(p);
    em_conf_destroy(conf);
    em_pool_destroy(pool);
}

/* Unordered comparison: same rows in another order are equal; a changed
 * value or a null against the text "null" is not. */
static void test_compare(void **state) {
    (void)state;
    static const char *const a[] = {"x", "1", "y", "2", NULL, "3"};
    static const char *const b[] = {NULL, "3", "x", "1", "y", "2"};
    static const char *const c[] = {"null", "3", "x", "1", "y", "2"};
    em_batch_list la, lb, lc;
    list_of(&la, "s:string,i:int", a, 2, 0, 3, 2);
    list_of(&lb, "s:string,i:int", b, 2, 0, 3, 1);
    list_of(&lc, "s:string,i:int", c, 2, 0, 3, 3);
    char diff[256];
    assert_true(em_lore_results_equal_unordered(&la, &lb, diff, sizeof diff));
    assert_false(em_lore_results_equal(&la, &lb, diff, sizeof diff));
    assert_non_null(strstr(diff, "row 0 column 0 (s): x vs null"));
    assert_false(em_lore_results_equal_unordered(&la, &lc, diff, sizeof diff));
    assert_true(em_lore_results_equal(&la, &la, diff, sizeof diff));
    em_batch_list_reset(&la);
    em_batch_list_reset(&lb);
    em_batch_list_reset(&lc);
}

/* The rows dumped under one input or output folder (partition.meta's
 * "rows", summed over the partitions present). */
static long long dumped_rows(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "partition-", 10) != 0)
            continue;
        char path[1200], buf[512];
        snprintf(path, sizeof path, "%s/%s/partition.meta", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            fail_msg("%s is missing", path);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *r = strstr(buf, "\"rows\": ");
        if (!r)
            fail_msg("%s has no rows", path);
        total += atoll(r + 8);
    }
    closedir(d);
    return total;
}

/* Runs the plan over the warehouse with the runtime and the overrides, as
 * `ember run` does: em_lore_exec_build with a session (NULL: none). The
 * caller reads the result and destroys the query. */
static em_query *run_query_lore(const em_plan *p, const em_exec_plan *xp, em_lore_session *s,
                                const char *wh) {
    em_lore_build_ctx bc = {.xp = xp, .session = s};
    em_runtime_options o;
    em_runtime_options_init(&o);
    o.warehouse_dir = wh;
    o.threads = 2;
    o.build = em_lore_exec_build;
    o.build_ctx = &bc;
    em_query *q = NULL;
    em_error err = {0};
    EM_ASSERT_OK(em_query_create(p, &o, &q, &err), &err);
    EM_ASSERT_OK(em_query_run(q, &err), &err);
    return q;
}

/* The builder's wiring, through the runtime: every operator of a two-stage
 * aggregate dumped (the scan's output, an exchange's map side and its
 * readers' rows, the operators' inputs and outputs); the answer does not
 * change; each operator replays to its dumped output. Then the default
 * configuration, where the aggregates (avg of a double) fall back to rows
 * and a native Project feeds a row parent; and with tagging off an
 * idsToDump is refused. */
static void test_runtime_wiring(void **state) {
    (void)state;
    const char *dir = em_test_tmpdir("lore_wiring");
    char wh[600], tdir[700], file[800], sub[600];
    snprintf(wh, sizeof wh, "%s/wh", dir);
    snprintf(tdir, sizeof tdir, "%s/t", wh);
    snprintf(file, sizeof file, "%s/part-0.parquet", tdir);
    snprintf(sub, sizeof sub, "%s/dump", dir);
    em_error err = {0};
    assert_int_equal(em_test_system("mkdir -p '%s'", tdir), 0);
    em_batch *b = tops_batch(SCHEMA, ROWS, N_ROWS);
    em_pq_write_options wo;
    em_pq_write_options_init(&wo);
    wo.row_group_rows = 3;
    em_pq_writer *w = NULL;
    EM_ASSERT_OK(em_pq_writer_open(file, &b->schema, &wo, &w, &err), &err);
    EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_batch_destroy(b);
    EM_ASSERT_OK(em_overrides_register_confs(&err), &err);
    em_pool *pool = em_pool_create("lore", NULL, -1);
    em_plan *p = tops_parse(AGG_PLAN);
    em_conf *conf = lore_conf("0[*], 1[*], 2[*], 3[*], 4[*], 5[*], 6[*]", sub, true, NULL);
    EM_ASSERT_OK(em_conf_set(conf, "spark.ember.sql.incompatibleOps.enabled", "true", &err),
                 &err);
    em_exec_plan *xp = NULL;
    EM_ASSERT_OK(em_overrides_apply(p, conf, &xp, &err), &err);
    em_lore_session *s = NULL;
    EM_ASSERT_OK(em_lore_session_create_xp(conf, xp, &s, &err), &err);
    assert_non_null(s);
    em_query *plain = run_query_lore(p, xp, NULL, wh);
    em_query *dumped = run_query_lore(p, xp, s, wh);
    em_lore_session_destroy(s);
    char diff[256] = "";
    const em_batch_list *a = em_query_result(plain), *bl = em_query_result(dumped);
    if (a->n_rows == 0 || !em_lore_results_equal(a, bl, diff, sizeof diff))
        fail_msg("the answer changed with LORE on (%lld rows): %s", (long long)a->n_rows, diff);
    em_query_destroy(plain);
    em_query_destroy(dumped);
    char path[800];
    /* the scan: its output, every row of t */
    snprintf(path, sizeof path, "%s/loreId-0/output", sub);
    assert_int_equal(dumped_rows(path), N_ROWS);
    /* Exchange (2): the map side's input and what its readers got */
    snprintf(path, sizeof path, "%s/loreId-1/input-0", sub);
    assert_int_equal(dumped_rows(path), N_ROWS);
    snprintf(path, sizeof path, "%s/loreId-1/output", sub);
    assert_int_equal(dumped_rows(path), N_ROWS);
    /* Filter (3) reads the exchange: all rows over its 2 partitions */
    snprintf(path, sizeof path, "%s/loreId-2/input-0", sub);
    assert_int_equal(dumped_rows(path), N_ROWS);
    for (int id = 2; id <= 6; id++)
        if (id != 5)
            assert_true(replay_all(sub, id, pool, NULL) >= 1);
    /* the exchanges: their dumped map-side input partitioned again gives each
     * reduce partition exactly what its readers received */
    assert_int_equal(replay_all(sub, 1, pool, NULL), 2);
    assert_int_equal(replay_all(sub, 5, pool, NULL), 2);
    em_exec_plan_destroy(xp);
    em_conf_destroy(conf);
    /* mixed: Scan 0, Exchange 1, Filter 2, Project 3 native, the rest on rows */
    snprintf(sub, sizeof sub, "%s/dump_mixed", dir);
    conf = lore_conf("3[*]", sub, true, NULL);
    EM_ASSERT_OK(em_overrides_apply(p, conf, &xp, &err), &err);
    assert_int_equal(em_exec_plan_decision(xp, em_plan_node_by_id(p, 7))->engine, EM_ENGINE_ROW);
    EM_ASSERT_OK(em_lore_session_create_xp(conf, xp, &s, &err), &err);
    em_query_destroy(run_query_lore(p, xp, s, wh));
    em_lore_session_destroy(s);
    snprintf(path, sizeof path, "%s/loreId-3/output", sub);
    assert_int_equal(dumped_rows(path), N_ROWS); /* every row has a v or no g */
    assert_int_equal(replay_all(sub, 3, pool, NULL), 2);
    em_exec_plan_destroy(xp);
    em_conf_destroy(conf);
    /* tagging off: no ids to select */
    snprintf(sub, sizeof sub, "%s/dump_untagged", dir);
    conf = lore_conf("2[*]", sub, false, NULL);
    EM_ASSERT_OK(em_conf_set(conf, "spark.rapids.sql.lore.tag.enabled", "false", &err), &err);
    EM_ASSERT_OK(em_overrides_apply(p, conf, &xp, &err), &err);
    assert_int_equal(em_lore_session_create_xp(conf, xp, &s, &err), EM_ERR_INVALID);
    assert_null(s);
    if (!strstr(err.msg, "this plan has no LORE ids"))
        fail_msg("unexpected message: %s", err.msg);
    assert_false(file_exists(dir, "dump_untagged"));
    em_exec_plan_destroy(xp);
    em_conf_destroy(conf);
    em_plan_destroy(p);
    em_pool_destroy(pool);
}

/* `ember lore` on a dump: replay verifies and writes CSV; bad partitions,
 * engines and folders are refused with the documented exit codes. */
static void test_cli(void **state) {
    (void)state;
    const char *bin = em_test_ember_bin();
    if (!bin)
        fail_msg("EMBER_BIN is not set: the ember binary is needed");
    const char *dir = em_test_tmpdir("lore_cli");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/dump", dir);
    em_pool *pool = em_pool_create("lore", NULL, -1);
    em_conf *conf = lore_conf("4[*], 6[*]", sub, true, NULL);
    em_batch_list results[2] = {{0}};
    run_dumping(AGG_PLAN, conf, pool, 2, results, NULL);
    assert_int_equal(em_test_system("'%s' lore replay '%s/loreId-4' --engine both --format csv "
                                    "--output '%s/out.csv' 2>'%s/err.txt'",
                                    bin, sub, dir, dir),
                     0);
    assert_int_equal(em_test_system("grep -q 'partition 1: verified: equals the dumped output' "
                                    "'%s/err.txt'",
                                    dir),
                     0);
    /* header and the 3 partial groups of each partition */
    assert_int_equal(em_test_system("test $(wc -l < '%s/out.csv') -eq 7", dir), 0);
    assert_int_equal(em_test_system("'%s' lore replay '%s/loreId-6' --partition 9 2>/dev/null",
                                    bin, sub),
                     1);
    assert_int_equal(em_test_system("'%s' lore replay '%s/loreId-6' --engine gpu 2>/dev/null",
                                    bin, sub),
                     2);
    assert_int_equal(em_test_system("'%s' lore replay '%s' 2>'%s/err2.txt'", bin, dir, dir), 1);
    assert_int_equal(em_test_system("grep -q 'is not a LORE dump of one operator' '%s/err2.txt'",
                                    dir),
                     0);
    assert_int_equal(em_test_system("'%s' lore show '%s/loreId-6' | grep -q 'HashAggregate (7)'",
                                    bin, sub),
                     0);
    for (int i = 0; i < 2; i++)
        em_batch_list_reset(&results[i]);
    em_conf_destroy(conf);
    em_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_grammar),
        cmocka_unit_test(test_ids_errors),
        cmocka_unit_test(test_dump_replay_agg),
        cmocka_unit_test(test_dump_replay_join),
        cmocka_unit_test(test_session_errors),
        cmocka_unit_test(test_partition_beyond),
        cmocka_unit_test(test_columns_subset),
        cmocka_unit_test(test_subquery_dump),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_runtime_wiring),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
