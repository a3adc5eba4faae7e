/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "cli.h"

int em_cli_gen(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ember gen: not built yet\n");
    return 1;
}
