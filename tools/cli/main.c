/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember` entry point: dispatches to a subcommand. Argument parsing and
 * printing only; the work is in libember.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out, "usage: ember <command> [args]\n\n"
                 "commands:\n"
                 "  demo [--sf N] [--dir D]      generate TPC-H data and read it back (main job)\n"
                 "  gen tpch --sf N --schema spark|standard --out DIR\n"
                 "                               generate TPC-H tables as Parquet\n"
                 "  parquet schema|meta|head|stats FILE\n"
                 "                               inspect a Parquet file\n"
                 "  run PLAN --warehouse DIR [--format table|csv|json|parquet] [--output P]\n"
                 "      [--spark-version V] [--conf k=v] [--metrics] [--threads N] [--retype]\n"
                 "                               run a Spark physical plan (EXPLAIN FORMATTED)\n"
                 "  explain PLAN [--conf k=v]    the plan as it would run: native and row nodes,\n"
                 "                               transitions, LORE ids, why a node falls back\n"
                 "  explain --summary PLAN...    share of nodes native, fallback reasons ranked\n"
                 "  conf [--markdown] [--all] [--supported-ops-md]\n"
                 "                               every config key: type, default, scope, doc\n"
                 "  lore replay|show DIR/loreId-N replay one operator from a LORE dump\n"
                 "  lore case DIR/loreId-N       one dumped partition as a tests/plans case\n"
                 "  version                      print the version\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "gen") == 0)
        return em_cli_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "parquet") == 0)
        return em_cli_parquet(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0)
        return em_cli_run(argc - 2, argv + 2);
    if (strcmp(cmd, "explain") == 0)
        return em_cli_explain(argc - 2, argv + 2);
    if (strcmp(cmd, "demo") == 0)
        return em_cli_demo(argc - 2, argv + 2);
    if (strcmp(cmd, "conf") == 0)
        return em_cli_conf(argc - 2, argv + 2);
    if (strcmp(cmd, "lore") == 0)
        return em_cli_lore(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("ember %s\n", EM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "ember: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
