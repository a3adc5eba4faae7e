/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember explain PLAN`: the parsed plan as a tree, cut into the stages the
 * runtime would run, each node marked native or not.
 *
 * Whether a node is native is asked of the operator builder itself, one node
 * at a time: the node is copied with each child replaced by a synthetic
 * exchange carrying the child's output (which always builds as a reader), so
 * the builder judges only that node. Its error message is the reason shown.
 * Operators check their expressions when opened, so an unsupported
 * expression shows up at run time, not here (issue #4's override report
 * will check them up front).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ember/runtime.h"

static void explain_usage(FILE *out) {
    fprintf(out, "usage: ember explain PLAN [--spark-version V] [--retype "
                 "--warehouse DIR]\n");
}

/* "" when the node builds natively, else the builder's reason (in msg). */
static bool node_native(const em_plan_node *n, char *msg, size_t cap) {
    /* no-ops between native operators: the builder passes through them */
    if (n->kind == EM_NODE_COLUMNAR_TO_ROW || n->kind == EM_NODE_ROW_TO_COLUMNAR ||
        n->kind == EM_NODE_INPUT_ADAPTER || n->kind == EM_NODE_WHOLE_STAGE_CODEGEN)
        return n->n_children == 1;
    em_plan_node copy = *n;
    em_plan_node *kids = calloc((size_t)(n->n_children ? n->n_children : 1), sizeof *kids);
    em_plan_node **ptrs = calloc((size_t)(n->n_children ? n->n_children : 1), sizeof *ptrs);
    if (!kids || !ptrs) {
        free(kids);
        free(ptrs);
        snprintf(msg, cap, "out of memory");
        return false;
    }
    for (int i = 0; i < n->n_children; i++) {
        kids[i].kind = EM_NODE_EXCHANGE;
        kids[i].name = "Exchange";
        kids[i].id = n->children[i]->id;
        kids[i].codegen_id = -1;
        kids[i].n_output = n->children[i]->n_output;
        kids[i].output = n->children[i]->output;
        ptrs[i] = &kids[i];
    }
    copy.children = ptrs;
    em_op *op = NULL;
    em_error err;
    memset(&err, 0, sizeof err);
    em_status s = em_op_build(&copy, &op, &err);
    em_op_destroy(op);
    free(kids);
    free(ptrs);
    if (s == EM_OK)
        return true;
    snprintf(msg, cap, "%s", err.msg[0] ? err.msg : em_status_name(s));
    return false;
}

typedef struct explain_ctx {
    const em_query *q;
    int n_stages;
} explain_ctx;

/* The stage whose key is n (an exchange, subquery root or the root), or -1. */
static int stage_of(const explain_ctx *x, const em_plan_node *n) {
    for (int i = 0; i < x->n_stages; i++) {
        em_stage_info si;
        em_query_stage_info(x->q, i, &si);
        if (si.node == n)
            return i;
    }
    return -1;
}

static void print_tree(const explain_ctx *x, const em_plan_node *n, char *prefix, size_t plen,
                       bool last, bool top) {
    char msg[1100];
    printf("%s%s%s (%d)", prefix, top ? "" : (last ? "+- " : ":- "),
           n->name ? n->name : em_node_kind_name(n->kind), n->id);
    if (n->label_args && n->label_args[0])
        printf(" %s", n->label_args);
    int st = stage_of(x, n);
    if (n->kind == EM_NODE_REUSED_EXCHANGE) {
        int rs = n->reuses ? stage_of(x, n->reuses) : -1;
        printf("  [reads stage %d]", rs);
    } else if (st >= 0) {
        em_stage_info si;
        em_query_stage_info(x->q, st, &si);
        printf("  [stage %d: %s, %s", st, em_stage_kind_name(si.kind), si.partitioning);
        if (si.kind == EM_STAGE_SHUFFLE)
            printf(" into %d", si.n_out_partitions);
        printf("]");
    }
    if (node_native(n, msg, sizeof msg))
        printf("  native\n");
    else
        printf("  NOT NATIVE: %s\n", msg);
    size_t add = top ? 0 : 3;
    if (plen + add + 1 >= 4096)
        return;
    if (!top)
        memcpy(prefix + plen, last ? "   " : ":  ", 3);
    prefix[plen + add] = '\0';
    for (int i = 0; i < n->n_children; i++)
        print_tree(x, n->children[i], prefix, plen + add, i == n->n_children - 1, false);
    prefix[plen] = '\0';
}

int em_cli_explain(int argc, char **argv) {
    const char *path = NULL, *version = NULL, *warehouse = NULL;
    bool retype = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--spark-version") == 0 && i + 1 < argc)
            version = argv[++i];
        else if (strcmp(argv[i], "--warehouse") == 0 && i + 1 < argc)
            warehouse = argv[++i];
        else if (strcmp(argv[i], "--retype") == 0)
            retype = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            explain_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "ember explain: unknown option %s\n", argv[i]);
            explain_usage(stderr);
            return 2;
        } else if (!path)
            path = argv[i];
        else {
            fprintf(stderr, "ember explain: unexpected argument %s\n", argv[i]);
            explain_usage(stderr);
            return 2;
        }
    }
    if (!path) {
        explain_usage(stderr);
        return 2;
    }
    em_error err;
    memset(&err, 0, sizeof err);
    em_retype_ctx *rt = NULL;
    em_plan *plan = NULL;
    em_query *q = NULL;
    em_status s = EM_OK;
    if (warehouse || retype)
        s = em_retype_ctx_create(warehouse, retype, &rt, &err);
    if (s == EM_OK)
        s = em_cli_load_plan(path, version, rt, &plan, &err);
    em_runtime_options ro;
    em_runtime_options_init(&ro);
    ro.warehouse_dir = warehouse;
    if (s == EM_OK)
        s = em_query_create(plan, &ro, &q, &err);
    if (s != EM_OK) {
        fprintf(stderr, "ember explain: %s\n", err.msg);
        em_plan_free(plan);
        em_retype_ctx_destroy(rt);
        return 1;
    }
    explain_ctx x = {q, em_query_n_stages(q)};
    printf("Spark %s (%s)\n", em_shim_name(em_plan_shim(plan)), em_plan_shim_reason(plan));
    printf("Stages (%d, in run order):\n", x.n_stages);
    for (int i = 0; i < x.n_stages; i++) {
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
    char *prefix = calloc(4096, 1);
    if (prefix) {
        printf("\nPlan:\n");
        print_tree(&x, em_plan_exec_root(plan), prefix, 0, true, true);
        for (int i = 0; i < em_plan_n_subqueries(plan); i++) {
            const em_plan_subquery *sq = em_plan_subquery_at(plan, i);
            if (!sq->root)
                continue;
            printf("\nSubquery:%d (hosted by operator %d):\n", sq->index, sq->host_id);
            prefix[0] = '\0';
            print_tree(&x, sq->root, prefix, 0, true, true);
        }
    }
    free(prefix);
    em_query_destroy(q);
    em_plan_free(plan);
    em_retype_ctx_destroy(rt);
    return 0;
}
