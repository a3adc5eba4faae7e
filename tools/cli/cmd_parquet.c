/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "cli.h"

int em_cli_parquet(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ember parquet: not built yet\n");
    return 1;
}
