/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Operator pipelines from the real shared Spark plans over generated TPC-H
 * data (SF 0.01, Spark's schema), checked against DuckDB's answer to the
 * same query's SQL over the same files.
 *
 * TPC-H q1 is run for every Spark line (Scan -> Filter -> Project ->
 * HashAggregate partial -> final -> Sort). The other join-free query, q6,
 * is folded by Spark to a LocalTableScan <empty> whose attributes the plan
 * text does not type (no ReadSchema), so it cannot compile until the plan
 * layer types them from the table schema. The test runs one task over one partition, so the plan's
 * exchanges pass rows straight through (a hash, range or single partitioning of one partition is
 * the identity); operators are built with their constructors directly.
 *
 * Values compare as numbers where both sides parse as numbers: within a
 * relative 1e-9 plus half a unit of the 4th decimal (Spark rounds avg to
 * decimal(14,4), DuckDB returns a double), else as text.
 */
#include "test_ops_common.h"

#include <dirent.h>
#include <math.h>

#include "ember/tpch.h"

static em_pool *g_pool;
static char g_dir[1024];
static char g_modules[1024];
static char g_files[64][1200];
static int g_n_files;

static int setup(void **state) {
    (void)state;
    g_pool = em_pool_create("test", NULL, -1);
    const char *src = getenv("EMBER_SOURCE");
    if (!src)
        src = ".";
    const char *env = getenv("PEERS_MODULES");
    if (env && *env) {
        snprintf(g_modules, sizeof g_modules, "%s", env);
    } else {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "bash '%s/scripts/setup-peers.sh'", src);
        FILE *p = popen(cmd, "r");
        if (p) {
            if (!fgets(g_modules, sizeof g_modules, p))
                g_modules[0] = '\0';
            if (pclose(p) != 0)
                g_modules[0] = '\0';
        }
        g_modules[strcspn(g_modules, "\n")] = '\0';
    }
    if (!g_modules[0]) {
        fprintf(stderr, "peers are not available: set PEERS_MODULES or make "
                        "scripts/setup-peers.sh work (node + npm)\n");
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "%s", em_test_tmpdir("ops_tpch"));
    em_tpch_options o;
    memset(&o, 0, sizeof o);
    o.sf = 0.01;
    o.schema = EM_TPCH_SCHEMA_SPARK;
    o.out_dir = g_dir;
    o.threads = 1;
    o.codec = EM_PQ_SNAPPY;
    o.force = true;
    em_error err = {0};
    if (em_tpch_generate(&o, &err) != EM_OK) {
        fprintf(stderr, "tpch generation failed: %s\n", err.msg);
        return -1;
    }
    char ldir[1100];
    snprintf(ldir, sizeof ldir, "%s/lineitem", g_dir);
    DIR *d = opendir(ldir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) && g_n_files < 64)
        if (strstr(e->d_name, ".parquet"))
            snprintf(g_files[g_n_files++], sizeof g_files[0], "%s/%s", ldir, e->d_name);
    closedir(d);
    return g_n_files > 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    em_pool_destroy(g_pool);
    return 0;
}

/* Builds a single-partition operator chain for a join-free plan. */
static em_op *build_chain(const em_plan_node *n) {
    em_error err = {0};
    em_op *op = NULL, *child = NULL;
    switch (n->kind) {
    case EM_NODE_COLUMNAR_TO_ROW:
    case EM_NODE_INPUT_ADAPTER:
    case EM_NODE_WHOLE_STAGE_CODEGEN:
    case EM_NODE_EXCHANGE: /* one partition: the identity */
        return build_chain(n->children[0]);
    case EM_NODE_SCAN:
        EM_ASSERT_OK(em_op_scan_create(n, &op, &err), &err);
        return op;
    case EM_NODE_LOCAL_TABLE_SCAN:
        EM_ASSERT_OK(em_op_local_table_create(n, &op, &err), &err);
        return op;
    default:
        break;
    }
    child = build_chain(n->children[0]);
    switch (n->kind) {
    case EM_NODE_FILTER:
        EM_ASSERT_OK(em_op_filter_create(n, child, &op, &err), &err);
        break;
    case EM_NODE_PROJECT:
        EM_ASSERT_OK(em_op_project_create(n, child, &op, &err), &err);
        break;
    case EM_NODE_HASH_AGGREGATE:
        EM_ASSERT_OK(em_op_hash_agg_create(n, child, &op, &err), &err);
        break;
    case EM_NODE_SORT:
        EM_ASSERT_OK(em_op_sort_create(n, child, &op, &err), &err);
        break;
    default:
        fail_msg("unexpected node %s (%d)", n->name, n->id);
    }
    return op;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* DuckDB's rows for qN.sql over the generated files, as "a|b|c" lines. */
static char **duckdb_rows(int q, int *n_out) {
    const char *src = getenv("EMBER_SOURCE");
    if (!src)
        src = ".";
    const char *shared = em_test_shared_dir();
    assert_non_null(shared);
    char js[1200], out[1200];
    snprintf(js, sizeof js, "%s/duck.mjs", g_dir);
    snprintf(out, sizeof out, "%s/duck_q%d.txt", g_dir, q);
    FILE *f = fopen(js, "w");
    assert_non_null(f);
    fprintf(f,
            "import fs from 'node:fs';\n"
            "import { duckConnect } from '%s/tests/interop/peers.mjs';\n"
            "const [dir, sqlFile] = process.argv.slice(2);\n"
            "const con = await duckConnect(1);\n"
            "for (const t of ['lineitem'])\n"
            "  await con.run(`CREATE VIEW ${t} AS SELECT * FROM "
            "read_parquet('${dir}/${t}/*.parquet')`);\n"
            "const r = await con.runAndReadAll(fs.readFileSync(sqlFile, 'utf8'));\n"
            "for (const row of r.getRows())\n"
            "  console.log(row.map((v) => v === null ? 'null' : String(v)).join('|'));\n",
            src);
    fclose(f);
    int rc = em_test_system("PEERS_MODULES='%s' node '%s' '%s' '%s/tpch/queries/q%d.sql' > '%s'",
                            g_modules, js, g_dir, shared, q, out);
    assert_int_equal(rc, 0);
    char *text = read_file(out);
    assert_non_null(text);
    int cap = 16, n = 0;
    char **rows = calloc((size_t)cap, sizeof *rows);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (n == cap)
            rows = realloc(rows, sizeof *rows * (size_t)(cap *= 2));
        rows[n++] = strdup(line);
    }
    free(text);
    *n_out = n;
    return rows;
}

static bool num(const char *s, size_t len, double *v) {
    char buf[128];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    *v = strtod(buf, &end);
    return *end == '\0';
}

static void compare_rows(int q, const char *version, char **got, int n_got, char **want,
                         int n_want) {
    if (n_got != n_want)
        fail_msg("q%d %s: %d rows, DuckDB has %d", q, version, n_got, n_want);
    for (int r = 0; r < n_got; r++) {
        const char *a = got[r], *b = want[r];
        for (int c = 0;; c++) {
            size_t la = strcspn(a, "|"), lb = strcspn(b, "|");
            double x, y;
            bool same = (la == lb && memcmp(a, b, la) == 0) ||
                        (num(a, la, &x) && num(b, lb, &y) &&
                         fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)) + 5.1e-5);
            if (!same)
                fail_msg("q%d %s: row %d column %d: Ember '%s', DuckDB '%s'", q, version, r, c,
                         got[r], want[r]);
            if (!a[la] || !b[lb]) {
                if (a[la] || b[lb])
                    fail_msg("q%d %s: row %d: column counts differ: '%s' vs '%s'", q, version, r,
                             got[r], want[r]);
                break;
            }
            a += la + 1;
            b += lb + 1;
        }
    }
}

static void run_query(int q) {
    static const char *const versions[] = {"spark-3.3.0", "spark-3.3", "spark-3.4",
                                           "spark-3.5",   "spark-4.0", "spark-master"};
    int n_want;
    char **want = duckdb_rows(q, &n_want);
    assert_true(n_want > 0);
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/spark-plans/tpch/%s/q%d.txt", em_test_shared_dir(),
                 versions[v], q);
        char *text = read_file(path);
        assert_non_null(text);
        em_plan *p = tops_parse(text);
        free(text);
        tops_ctx t;
        tops_init(&t, g_pool);
        t.ctx.expr_opts.ansi = em_shim_ansi_default(em_plan_shim(p));
        t.ctx.expr_opts.shim = em_plan_shim(p);
        for (int i = 0; i < g_n_files; i++) {
            t.splits[i].path = g_files[i];
            t.splits[i].end_row_group = -1;
        }
        t.n_splits = g_n_files;
        em_op *op = build_chain(em_plan_exec_root(p));
        int n;
        char **rows = tops_run(op, &t, &n);
        compare_rows(q, versions[v], rows, n, want, n_want);
        for (int i = 0; i < n; i++)
            free(rows[i]);
        free(rows);
        em_plan_destroy(p);
        assert_int_equal(em_pool_used(g_pool), 0);
    }
    for (int i = 0; i < n_want; i++)
        free(want[i]);
    free(want);
}

static void test_q1(void **state) {
    (void)state;
    run_query(1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_q1)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
