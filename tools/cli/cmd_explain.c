/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember explain PLAN [--conf k=v ...]`: the plan as it would run under
 * the overrides' decisions (native nodes named Ember<Name> with their LORE
 * ids, row nodes marked NOT NATIVE with their reasons, transitions as nodes
 * of their own), the stages the runtime would cut, and the spark-rapids
 * style report. The report's mode is spark.ember.sql.explain when it is
 * set, else NOT_ON_ACCELERATOR: the tree already shows what runs natively,
 * the report adds why the rest does not.
 *
 * `ember explain --summary PLAN...` tags many plans and aggregates: the
 * share of nodes that run natively, and the fallback reasons ranked by how
 * many nodes they send to the row engine and by how much data those nodes
 * touch. The data a node touches is estimated as the size of the table
 * folders scanned below it (warehouse/<table>, through reused exchanges)
 * when --warehouse is given; without it every node weighs 1, so both
 * rankings count nodes.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_profile.h"
#include "ember/overrides.h"
#include "ember/runtime.h"

static void explain_usage(FILE *out) {
    fprintf(out, "usage: ember explain PLAN [--conf k=v ...] [--spark-version V] [--retype]\n"
                 "                    [--warehouse DIR]\n"
                 "       ember explain --summary PLAN... [--conf k=v ...] [--spark-version V]\n"
                 "                    [--warehouse DIR]\n");
}

typedef struct explain_args {
    const char **plans;
    int n_plans;
    const char *version, *warehouse;
    bool retype, summary;
    em_conf *conf;
} explain_args;

/* 0 ok, 1 error, 2 usage, -1 help printed. */
static int parse_args(int argc, char **argv, explain_args *a, em_error *err) {
    memset(a, 0, sizeof *a);
    a->plans = calloc((size_t)argc + 1, sizeof *a->plans);
    if (!a->plans || em_conf_create(&a->conf, err) != EM_OK)
        return 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--spark-version") == 0 && i + 1 < argc)
            a->version = argv[++i];
        else if (strcmp(argv[i], "--warehouse") == 0 && i + 1 < argc)
            a->warehouse = argv[++i];
        else if (strcmp(argv[i], "--conf") == 0 && i + 1 < argc) {
            if (em_conf_set_kv(a->conf, argv[++i], err) != EM_OK)
                return 1;
        } else if (strcmp(argv[i], "--retype") == 0)
            a->retype = true;
        else if (strcmp(argv[i], "--summary") == 0)
            a->summary = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            explain_usage(stdout);
            return -1;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "ember explain: unknown option %s\n", argv[i]);
            explain_usage(stderr);
            return 2;
        } else
            a->plans[a->n_plans++] = argv[i];
    }
    if (a->n_plans == 0 || (a->n_plans > 1 && !a->summary)) {
        if (a->n_plans > 1)
            fprintf(stderr, "ember explain: one plan at a time (or --summary)\n");
        explain_usage(stderr);
        return 2;
    }
    return 0;
}

/* ------------------------------------------------------------------ one plan */

static void print_stages(const em_query *q) {
    int n = em_query_n_stages(q);
    printf("Stages (%d, in run order):\n", n);
    for (int i = 0; i < n; i++) {
        em_stage_info si;
        em_query_stage_info(q, i, &si);
        printf("  stage %d  %-9s %s (%d)  %s", i, em_stage_kind_name(si.kind),
               si.node->name ? si.node->name : "?", si.node->id, si.partitioning);
        if (si.kind == EM_STAGE_SHUFFLE)
            printf(" into %d partitions", si.n_out_partitions);
        if (si.n_reused)
            printf(", reused %d time%s", si.n_reused, si.n_reused == 1 ? "" : "s");
        if (si.n_deps) {
            printf(", reads stage%s", si.n_deps == 1 ? "" : "s");
            for (int d = 0; d < si.n_deps; d++)
                printf("%s %d", d ? "," : "", si.deps[d]);
        }
        printf("\n");
    }
}

static em_status explain_one(const explain_args *a, em_retype_ctx *rt, em_error *err) {
    em_plan *plan = NULL;
    em_exec_plan *xp = NULL;
    em_query *q = NULL;
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_status s = em_cli_load_plan(a->plans[0], a->version, rt, &plan, err);
    if (s == EM_OK)
        s = em_overrides_apply(plan, a->conf, &xp, err);
    em_runtime_options ro;
    em_runtime_options_init(&ro);
    ro.warehouse_dir = a->warehouse;
    em_cli_profile prof = {.enforced = false};
    if (s == EM_OK)
        s = em_cli_profile_setup(a->conf, xp, &prof, &ro, err);
    if (s == EM_OK)
        s = em_query_create(plan, &ro, &q, err);
    /* the scans' splits are the mappers of the shuffles above them */
    em_error perr = {0};
    if (s == EM_OK && a->warehouse && prof.enforced && em_query_plan_tasks(q, &perr) != EM_OK)
        fprintf(stderr, "ember explain: warning: %s\n", perr.msg);
    int mode = EM_EXPLAIN_NOT_ON_ACCELERATOR;
    if (s == EM_OK && em_conf_is_set(a->conf, "spark.ember.sql.explain"))
        s = em_conf_get_enum(a->conf, "spark.ember.sql.explain", &mode, err);
    if (s == EM_OK) {
        printf("Spark %s (%s)\n", em_shim_name(em_plan_shim(plan)), em_plan_shim_reason(plan));
        print_stages(q);
        em_cli_profile_print_explain(q, &prof, stdout);
        s = em_exec_plan_print_tree(xp, &sb, err);
    }
    if (s == EM_OK) {
        printf("\nPlan:\n%s", em_strbuf_cstr(&sb));
        em_strbuf_clear(&sb);
        /* the registry lists the values in em_explain_mode's order */
        s = em_exec_plan_report(xp, (em_explain_mode)mode, &sb, err);
    }
    if (s == EM_OK && mode != EM_EXPLAIN_NONE) {
        static const char *const names[] = {"NONE", "NOT_ON_ACCELERATOR", "ALL"};
        printf("\nOverrides (spark.ember.sql.explain=%s):\n%s", names[mode],
               sb.len ? em_strbuf_cstr(&sb) : "every node runs natively\n");
    }
    em_strbuf_reset(&sb);
    em_query_destroy(q);
    em_exec_plan_destroy(xp);
    em_plan_destroy(plan);
    return s;
}

/* ------------------------------------------------------------------ summary */

typedef struct reason_stat {
    char *text;
    long nodes;
    double bytes;
} reason_stat;

typedef struct summary {
    long nodes, native, plans, failed;
    reason_stat *r;
    int n, cap;
    bool sized; /* weights are bytes (--warehouse), not node counts */
} summary;

/* Bytes of the regular files in dir and its subfolders (one table). */
static double folder_bytes(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d || depth > 4) {
        if (d)
            closedir(d);
        return 0;
    }
    double total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            total += folder_bytes(path, depth + 1);
        else if (S_ISREG(st.st_mode))
            total += (double)st.st_size;
    }
    closedir(d);
    return total;
}

static double scanned_bytes(const em_plan_node *n, const char *warehouse, int depth) {
    if (!n || depth > 1000)
        return 0;
    if (n->kind == EM_NODE_REUSED_EXCHANGE)
        return scanned_bytes(n->reuses, warehouse, depth + 1);
    double total = 0;
    if (n->kind == EM_NODE_SCAN && n->table_name) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", warehouse, n->table_name);
        total += folder_bytes(dir, 0);
    }
    for (int c = 0; c < n->n_children; c++)
        total += scanned_bytes(n->children[c], warehouse, depth + 1);
    return total;
}

static bool add_reason(summary *sm, const char *text, double weight) {
    for (int i = 0; i < sm->n; i++)
        if (!strcmp(sm->r[i].text, text)) {
            sm->r[i].nodes++;
            sm->r[i].bytes += weight;
            return true;
        }
    if (sm->n == sm->cap) {
        int cap = sm->cap ? sm->cap * 2 : 16;
        reason_stat *p = realloc(sm->r, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        sm->r = p;
        sm->cap = cap;
    }
    char *t = strdup(text);
    if (!t)
        return false;
    sm->r[sm->n++] = (reason_stat){t, 1, weight};
    return true;
}

static em_status summarize_plan(const explain_args *a, const char *path, em_retype_ctx *rt,
                                summary *sm, em_error *err) {
    em_plan *plan = NULL;
    em_exec_plan *xp = NULL;
    em_status s = em_cli_load_plan(path, a->version, rt, &plan, err);
    if (s == EM_OK)
        s = em_overrides_apply(plan, a->conf, &xp, err);
    for (int i = 0; s == EM_OK && i < em_exec_plan_n_decisions(xp); i++) {
        const em_node_decision *d = em_exec_plan_decision_at(xp, i);
        if (d->engine == EM_ENGINE_PASS)
            continue;
        sm->nodes++;
        if (d->engine == EM_ENGINE_NATIVE) {
            sm->native++;
            continue;
        }
        double w = sm->sized ? scanned_bytes(d->node, a->warehouse, 0) : 1.0;
        for (int r = 0; r < d->n_reasons; r++)
            if (!add_reason(sm, d->reasons[r].text, w))
                s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory summarizing");
    }
    em_exec_plan_destroy(xp);
    em_plan_destroy(plan);
    return s;
}

static int cmp_nodes(const void *x, const void *y) {
    const reason_stat *a = x, *b = y;
    if (a->nodes != b->nodes)
        return a->nodes > b->nodes ? -1 : 1;
    return strcmp(a->text, b->text);
}

static int cmp_bytes(const void *x, const void *y) {
    const reason_stat *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(a->text, b->text);
}

static void print_summary(summary *sm) {
    printf("Plans: %ld (%ld failed to load)\n", sm->plans, sm->failed);
    printf("Nodes: %ld, native %ld (%.1f%%), row %ld\n", sm->nodes, sm->native,
           sm->nodes ? 100.0 * (double)sm->native / (double)sm->nodes : 100.0,
           sm->nodes - sm->native);
    if (sm->n == 0) {
        printf("No fallback reasons.\n");
        return;
    }
    printf("\nFallback reasons by nodes:\n");
    qsort(sm->r, (size_t)sm->n, sizeof *sm->r, cmp_nodes);
    for (int i = 0; i < sm->n; i++)
        printf("  %6ld  %s\n", sm->r[i].nodes, sm->r[i].text);
    printf("\nFallback reasons by data touched (%s):\n",
           sm->sized ? "MiB of the tables scanned below the nodes" : "nodes; no --warehouse");
    qsort(sm->r, (size_t)sm->n, sizeof *sm->r, cmp_bytes);
    for (int i = 0; i < sm->n; i++) {
        if (sm->sized)
            printf("  %10.1f  %s\n", sm->r[i].bytes / 1048576.0, sm->r[i].text);
        else
            printf("  %10.0f  %s\n", sm->r[i].bytes, sm->r[i].text);
    }
}

static int explain_summary(const explain_args *a, em_retype_ctx *rt) {
    summary sm = {.sized = a->warehouse != NULL};
    int rc = 0;
    for (int i = 0; i < a->n_plans; i++) {
        em_error err = {0};
        sm.plans++;
        if (summarize_plan(a, a->plans[i], rt, &sm, &err) != EM_OK) {
            fprintf(stderr, "ember explain: %s: %s\n", a->plans[i], err.msg);
            sm.failed++;
            rc = 1;
        }
    }
    print_summary(&sm);
    for (int i = 0; i < sm.n; i++)
        free(sm.r[i].text);
    free(sm.r);
    return rc;
}

int em_cli_explain(int argc, char **argv) {
    em_error err = {0};
    /* the classes' switches must be known before --conf is read */
    if (em_overrides_register_confs(&err) != EM_OK) {
        fprintf(stderr, "ember explain: %s\n", err.msg);
        return 1;
    }
    explain_args a;
    int rc = parse_args(argc, argv, &a, &err);
    if (rc == 1)
        fprintf(stderr, "ember explain: %s\n", err.msg[0] ? err.msg : "out of memory");
    em_retype_ctx *rt = NULL;
    if (rc == 0 && (a.warehouse || a.retype) &&
        em_retype_ctx_create(a.warehouse, a.retype, &rt, &err) != EM_OK) {
        fprintf(stderr, "ember explain: %s\n", err.msg);
        rc = 1;
    }
    if (rc == 0) {
        if (a.summary)
            rc = explain_summary(&a, rt);
        else if (explain_one(&a, rt, &err) != EM_OK) {
            fprintf(stderr, "ember explain: %s\n", err.msg[0] ? err.msg : "failed");
            rc = 1;
        }
    }
    em_retype_ctx_destroy(rt);
    em_conf_destroy(a.conf);
    free(a.plans);
    return rc < 0 ? 0 : rc;
}
