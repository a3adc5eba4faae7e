/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `ember` command line: one file per subcommand, each exposing one entry
 * point that takes the arguments after the subcommand name and returns the
 * process exit code (0 success, 1 failure, 2 usage error).
 */
#ifndef EM_CLI_H
#define EM_CLI_H

int em_cli_gen(int argc, char **argv);     /* ember gen tpch ... */
int em_cli_parquet(int argc, char **argv); /* ember parquet schema|meta|head|stats FILE */
int em_cli_demo(int argc, char **argv);    /* ember demo: the README's main job */

#endif
