/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BroadcastNestedLoopJoin keeping its build rows (outer joins preserving the
 * build side, semi/anti/existence joins building the left) over a stream
 * side of several partitions, on both engines.
 *
 * Spark decides the build rows over the whole stream side: a build row
 * matched in any partition is matched. Here each partition is one task with
 * its own operator tree, run one after the other over a test context whose
 * broadcast_shared hook keeps one object per (exchange, what) as the
 * runtime's cache does. The union of the tasks' rows must be the join's
 * rows (written out by hand); the build rows come from the task that
 * finishes last, whichever it is, and from no task when one of them never
 * finishes (closed early, cancelled). Without the hook (LORE replay of one
 * partition) a task decides from its own partition alone.
 */
#include "test_ops_common.h"

#include "ops/row_internal.h"

#define NPARTS 3

static em_pool *g_pool;

static int setup(void **state) {
    (void)state;
    g_pool = em_pool_create("test", NULL, -1);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    em_pool_destroy(g_pool);
    return 0;
}

/* ------------------------------------------------------------------ context */

typedef struct shared_obj {
    const void *x;
    char what[160];
    void *obj;
    void (*free_obj)(void *obj);
    em_pool *pool;
} shared_obj;

typedef struct bctx {
    tops_ctx t; /* first: the scan callback reads ctx->runtime as a tops_ctx */
    em_batch_list build;
    em_batch_list parts[NPARTS];
    shared_obj sh[8];
    int n_sh;
    int builds;
} bctx;

static em_status b_shuffle(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                           em_error *err) {
    (void)x;
    (void)err;
    *out = &((bctx *)ctx->runtime)->parts[ctx->partition];
    return EM_OK;
}

static em_status b_broadcast(em_exec_ctx *ctx, const em_plan_node *x, const em_batch_list **out,
                             em_error *err) {
    (void)x;
    (void)err;
    *out = &((bctx *)ctx->runtime)->build;
    return EM_OK;
}

/* One object per (exchange, what), built by the first caller. */
static em_status b_shared(em_exec_ctx *ctx, const em_plan_node *x, const char *what,
                          em_status (*build)(void *arg, const em_batch_list *rel, em_pool *pool,
                                             em_par *par, void **obj, em_error *err),
                          void (*free_obj)(void *obj), void *arg, void **out, em_error *err) {
    bctx *b = ctx->runtime;
    assert_int_equal(x->kind, EM_NODE_BROADCAST_EXCHANGE);
    for (int i = 0; i < b->n_sh; i++)
        if (b->sh[i].x == x && strcmp(b->sh[i].what, what) == 0) {
            *out = b->sh[i].obj;
            return EM_OK;
        }
    assert_true(b->n_sh < 8);
    shared_obj *s = &b->sh[b->n_sh++];
    s->x = x;
    snprintf(s->what, sizeof s->what, "%s", what);
    s->pool = em_pool_create("shared", g_pool, -1);
    s->free_obj = free_obj;
    b->builds++;
    EM_TRY(build(arg, &b->build, s->pool, NULL, &s->obj, err));
    *out = s->obj;
    return EM_OK;
}

static void b_drop_shared(bctx *b) {
    for (int i = 0; i < b->n_sh; i++) {
        if (b->sh[i].obj)
            b->sh[i].free_obj(b->sh[i].obj);
        em_pool_destroy(b->sh[i].pool);
    }
    b->n_sh = 0;
}

static void b_init(bctx *b, bool hook) {
    memset(b, 0, sizeof *b);
    tops_init(&b->t, g_pool);
    b->t.ctx.runtime = b;
    b->t.ctx.num_partitions = NPARTS;
    b->t.ctx.shuffle_input = b_shuffle;
    b->t.ctx.broadcast_input = b_broadcast;
    b->t.ctx.broadcast_shared = hook ? b_shared : NULL;
}

static void b_free(bctx *b) {
    b_drop_shared(b);
    em_batch_list_reset(&b->build);
    for (int p = 0; p < NPARTS; p++)
        em_batch_list_reset(&b->parts[p]);
}

/* A list of the rows [lo, hi) of cells, one row per batch. */
static em_batch_list rows_list(const char *schema, const char *const *cells, int lo, int hi) {
    tops_ctx t;
    tops_init(&t, g_pool);
    tops_set_input(&t, schema, cells + lo * 2, 2, hi - lo, 1);
    return t.input;
}

/* ------------------------------------------------------------------ data */

#define LSCHEMA "a:int,s:string"
#define RSCHEMA "x:int,t:string"

/* l(a, s) and r(x, t); the stream side's partitions are its rows [0, 2),
 * none, and [2, n). (2, q) matches in partitions 0 and 2, (3, r) in 2 only. */
static const char *const L[] = {"1", "p", "2", "q", "3", "r", NULL, "n", "5", "e"};
static const char *const R[] = {"2", "X", "9", "Y", "3", "Z", "2", "W"};
enum { NL = 5, NR = 4 };

static void set_data(bctx *b, bool build_left) {
    const char *bs = build_left ? LSCHEMA : RSCHEMA, *ss = build_left ? RSCHEMA : LSCHEMA;
    const char *const *bc = build_left ? L : R, *const *sc = build_left ? R : L;
    int nb = build_left ? NL : NR, ns = build_left ? NR : NL;
    em_batch_list_reset(&b->build);
    b->build = rows_list(bs, bc, 0, nb);
    int bounds[NPARTS + 1] = {0, 2, 2, ns};
    for (int p = 0; p < NPARTS; p++) {
        em_batch_list_reset(&b->parts[p]);
        b->parts[p] = rows_list(ss, sc, bounds[p], bounds[p + 1]);
    }
}

static em_plan *bnlj_plan(const char *jt, bool build_left) {
    char text[4096];
    const char *lx = build_left ? "BroadcastExchange" : "Exchange";
    const char *rx = build_left ? "Exchange" : "BroadcastExchange";
    const char *bmode = "IdentityBroadcastMode, [plan_id=1]";
    const char *smode = "RoundRobinPartitioning(3), REPARTITION_BY_NUM, [plan_id=2]";
    snprintf(text, sizeof text,
             "== Physical Plan ==\n"
             "BroadcastNestedLoopJoin %s %s (5)\n"
             ":- %s (2)\n"
             ":  +- Scan parquet spark_catalog.default.l (1)\n"
             "+- %s (4)\n"
             "   +- Scan parquet spark_catalog.default.r (3)\n\n\n"
             "(1) Scan parquet spark_catalog.default.l\n"
             "Output [2]: [a#1, s#2]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/l]\n"
             "ReadSchema: struct<a:int,s:string>\n\n"
             "(2) %s\n"
             "Input [2]: [a#1, s#2]\n"
             "Arguments: %s\n\n"
             "(3) Scan parquet spark_catalog.default.r\n"
             "Output [2]: [x#3, t#4]\n"
             "Batched: true\n"
             "Location [not included in comparison]/{warehouse_dir}/r]\n"
             "ReadSchema: struct<x:int,t:string>\n\n"
             "(4) %s\n"
             "Input [2]: [x#3, t#4]\n"
             "Arguments: %s\n\n"
             "(5) BroadcastNestedLoopJoin\n"
             "Join type: %s\n"
             "Join condition: (a#1 = x#3)\n",
             jt, build_left ? "BuildLeft" : "BuildRight", lx, rx, lx, build_left ? bmode : smode,
             rx, build_left ? smode : bmode, jt);
    return tops_parse(text);
}

/* ------------------------------------------------------------------ running */

enum { E_NATIVE, E_ROW, E_COUNT };
static const char *const E_NAMES[] = {"native", "row"};

static em_engine all_row(void *arg, const em_plan_node *n) {
    (void)arg;
    (void)n;
    return EM_ENGINE_ROW;
}

static em_op *build_on(int e, const em_plan *p) {
    em_error err = {0};
    em_op *op = NULL;
    if (e == E_NATIVE)
        EM_ASSERT_OK(em_op_build(tops_node(p, 5), &op, &err), &err);
    else
        EM_ASSERT_OK(em_rop_build_tree(tops_node(p, 5), all_row, NULL, &op, &err), &err);
    return op;
}

/* Task `part`'s rows, appended to *all (n rows so far). */
static int run_task(bctx *b, const em_plan *p, int e, int part, char ***all, int n) {
    b->t.ctx.partition = part;
    int m = 0;
    char **rows = tops_run(build_on(e, p), &b->t, &m);
    *all = realloc(*all, sizeof **all * (size_t)(n + m + 1));
    memcpy(*all + n, rows, sizeof *rows * (size_t)m);
    free(rows);
    return m;
}

/* A row with the stream side all null: only build rows look like that. */
static bool build_only(const char *row, bool build_left) {
    size_t n = strlen(row);
    return build_left ? n >= 10 && strcmp(row + n - 10, "|null|null") == 0
                      : strncmp(row, "null|null|", 10) == 0;
}

typedef struct jcase {
    const char *jt;
    bool build_left;
    const char *const *expect;
    int n_expect;
} jcase;

static const char *const LEFT_OUTER[] = {"2|q|2|X", "2|q|2|W", "3|r|3|Z",
                                         "1|p|null|null", "null|n|null|null", "5|e|null|null"};
static const char *const FULL_OUTER[] = {"2|q|2|X",          "2|q|2|W",       "3|r|3|Z",
                                         "1|p|null|null",    "5|e|null|null", "null|null|9|Y",
                                         "null|n|null|null"};
static const char *const RIGHT_OUTER[] = {"2|q|2|X", "2|q|2|W", "3|r|3|Z", "null|null|9|Y"};
static const char *const SEMI[] = {"2|q", "3|r"};
static const char *const ANTI[] = {"1|p", "null|n", "5|e"};
static const char *const EXISTS[] = {"1|p|false", "2|q|true", "3|r|true", "null|n|false",
                                     "5|e|false"};

#define JC(jt, left, rows) {jt, left, rows, (int)(sizeof rows / sizeof rows[0])}
static const jcase CASES[] = {
    JC("LeftOuter", true, LEFT_OUTER),  JC("FullOuter", true, FULL_OUTER),
    JC("FullOuter", false, FULL_OUTER), JC("RightOuter", false, RIGHT_OUTER),
    JC("LeftSemi", true, SEMI),         JC("LeftAnti", true, ANTI),
    JC("ExistenceJoin(exists#9)", true, EXISTS),
};

/* Every case, both engines, tasks in two orders: the union is the join's
 * rows, build rows come from the last task only, one shared object each. */
static void test_build_rows_over_partitions(void **state) {
    (void)state;
    static const int orders[2][NPARTS] = {{0, 1, 2}, {2, 0, 1}};
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        em_plan *p = bnlj_plan(CASES[c].jt, CASES[c].build_left);
        for (int e = 0; e < E_COUNT; e++)
            for (int o = 0; o < 2; o++) {
                bctx b;
                b_init(&b, true);
                set_data(&b, CASES[c].build_left);
                char **all = NULL;
                int n = 0;
                for (int i = 0; i < NPARTS; i++) {
                    int m = run_task(&b, p, e, orders[o][i], &all, n);
                    for (int k = n; k < n + m && i < NPARTS - 1; k++)
                        if (build_only(all[k], CASES[c].build_left) ||
                            !strcmp(CASES[c].jt, "LeftSemi") || !strcmp(CASES[c].jt, "LeftAnti") ||
                            !strncmp(CASES[c].jt, "Existence", 9))
                            fail_msg("%s %s on %s: task %d (not the last) output '%s'",
                                     CASES[c].jt, CASES[c].build_left ? "BuildLeft" : "BuildRight",
                                     E_NAMES[e], orders[o][i], all[k]);
                    n += m;
                }
                assert_int_equal(b.builds, 1);
                tops_expect(all, n, CASES[c].expect, CASES[c].n_expect, false);
                b_free(&b);
            }
        em_plan_destroy(p);
    }
}

/* A task that never reaches the end of its stream (closed early by its
 * parent, or cancelled) never counts: no task outputs build rows. */
static void test_unfinished_task_outputs_nothing(void **state) {
    (void)state;
    em_plan *p = bnlj_plan("LeftAnti", true);
    for (int e = 0; e < E_COUNT; e++)
        for (int how = 0; how < 2; how++) {
            bctx b;
            b_init(&b, true);
            set_data(&b, true);
            char **all = NULL;
            int n = run_task(&b, p, e, 0, &all, 0);
            em_op *op = build_on(e, p);
            em_error err = {0};
            b.t.ctx.partition = 2;
            EM_ASSERT_OK(em_op_open(op, &b.t.ctx, &err), &err);
            if (how == 1) {
                volatile int cancel = 1;
                b.t.ctx.cancel = &cancel;
                em_batch *out = NULL;
                assert_int_equal(em_op_next(op, &out, &err), EM_ERR_CANCELLED);
                b.t.ctx.cancel = NULL;
            }
            em_op_destroy(op);
            n += run_task(&b, p, e, 1, &all, n);
            tops_expect(all, n, NULL, 0, false);
            b_free(&b);
        }
    em_plan_destroy(p);
}

/* Without the hook each task decides alone: partition 0 outputs the build
 * rows unmatched in it. */
static void test_without_hook_a_task_decides_alone(void **state) {
    (void)state;
    static const char *const expect[] = {"1|p", "3|r", "null|n", "5|e"};
    em_plan *p = bnlj_plan("LeftAnti", true);
    for (int e = 0; e < E_COUNT; e++) {
        bctx b;
        b_init(&b, false);
        set_data(&b, true);
        char **all = NULL;
        int n = run_task(&b, p, e, 0, &all, 0);
        tops_expect(all, n, expect, 4, false);
        b_free(&b);
    }
    em_plan_destroy(p);
}

/* Tasks that see build sides of different sizes fail naming the join. */
static void test_build_size_mismatch(void **state) {
    (void)state;
    em_plan *p = bnlj_plan("LeftOuter", true);
    for (int e = 0; e < E_COUNT; e++) {
        bctx b;
        b_init(&b, true);
        set_data(&b, true);
        char **all = NULL;
        int n = run_task(&b, p, e, 0, &all, 0);
        em_batch_list_reset(&b.build);
        b.build = rows_list(LSCHEMA, L, 0, NL - 1);
        em_op *op = build_on(e, p);
        em_error err = {0};
        b.t.ctx.partition = 1;
        EM_ASSERT_OK(em_op_open(op, &b.t.ctx, &err), &err);
        em_status s;
        do {
            em_batch *out = NULL;
            s = em_op_next(op, &out, &err);
        } while (s == EM_OK);
        assert_int_equal(s, EM_ERR_INTERNAL);
        assert_non_null(strstr(err.msg, "BroadcastNestedLoopJoin (5)"));
        em_op_destroy(op);
        for (int i = 0; i < n; i++)
            free(all[i]);
        free(all);
        b_free(&b);
    }
    em_plan_destroy(p);
}

/* Which joins decide build rows over every task (the runtime also gives
 * their stages a task when the stream side has no partition). */
static void test_keeps_build(void **state) {
    (void)state;
    static const struct {
        const char *jt;
        bool left, keeps;
    } cases[] = {
        {"LeftOuter", true, true},   {"LeftOuter", false, false}, {"RightOuter", false, true},
        {"RightOuter", true, false}, {"FullOuter", true, true},   {"FullOuter", false, true},
        {"LeftSemi", true, true},    {"LeftSemi", false, false},  {"LeftAnti", true, true},
        {"LeftAnti", false, false},  {"Inner", true, false},      {"Inner", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        em_plan *p = bnlj_plan(cases[i].jt, cases[i].left);
        if (em_op_bnlj_keeps_build(tops_node(p, 5)) != cases[i].keeps)
            fail_msg("%s %s: expected keeps_build = %d", cases[i].jt,
                     cases[i].left ? "BuildLeft" : "BuildRight", cases[i].keeps);
        assert_false(em_op_bnlj_keeps_build(tops_node(p, 2)));
        em_plan_destroy(p);
    }
    assert_false(em_op_bnlj_keeps_build(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_rows_over_partitions),
        cmocka_unit_test(test_unfinished_task_outputs_nothing),
        cmocka_unit_test(test_without_hook_a_task_decides_alone),
        cmocka_unit_test(test_build_size_mismatch),
        cmocka_unit_test(test_keeps_build),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
