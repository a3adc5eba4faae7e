/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `ember` command line: one file per subcommand, each exposing one entry
 * point that takes the arguments after the subcommand name and returns the
 * process exit code (0 success, 1 failure, 2 usage error).
 */
#ifndef EM_CLI_H
#define EM_CLI_H

#include "ember/runtime.h"

int em_cli_gen(int argc, char **argv);     /* ember gen tpch ... */
int em_cli_parquet(int argc, char **argv); /* ember parquet schema|meta|head|stats FILE */
int em_cli_demo(int argc, char **argv);    /* ember demo: the README's main job */
int em_cli_run(int argc, char **argv);     /* ember run PLAN --warehouse DIR ... */
int em_cli_explain(int argc, char **argv); /* ember explain PLAN */
int em_cli_conf(int argc, char **argv);    /* ember conf [--markdown] [--all] */
int em_cli_lore(int argc, char **argv);    /* ember lore replay|show DIR/loreId-N */

/* Reads and parses a plan file ("-" = stdin) for run and explain; version may
 * be NULL (detected); retype NULL keeps the text's types. */
em_status em_cli_load_plan(const char *path, const char *version, em_retype_ctx *retype,
                           em_plan **out, em_error *err);

/* Why --output PATH is refused (a message ending in ':' to put the path
 * after), or NULL: output replaces a regular file or creates one, never
 * renames over or writes into a device, a FIFO, a symlink's target or a
 * folder. Checked before anything runs. */
const char *em_cli_output_refusal(const char *path);

#endif
