/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember conf [--markdown] [--all]`: prints the configuration catalog, as
 * text or as the Markdown page docs/configs.md is generated from
 * (`ember conf --markdown > docs/configs.md`). --all lists every
 * per-operator switch as a key of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ember/conf.h"
#include "ember/overrides.h"

int em_cli_conf(int argc, char **argv) {
    bool markdown = false, all = false, ops = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--supported-ops-md"))
            ops = true;
        else if (!strcmp(argv[i], "--markdown"))
            markdown = true;
        else if (!strcmp(argv[i], "--all"))
            all = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: ember conf [--markdown] [--all]\n\n"
                   "  --markdown   the Markdown page (%s)\n"
                   "  --all        one entry per operator and expression switch\n"
                   "  --supported-ops-md  what runs natively, by type (%s)\n",
                   EM_CONF_DOCS_COMMAND, EM_OVERRIDES_DOCS_COMMAND);
            return 0;
        } else {
            fprintf(stderr,
                    "ember conf: unknown argument %s\nusage: ember conf [--markdown] "
                    "[--all]\n",
                    argv[i]);
            return 2;
        }
    }
    em_error err = {0};
    if (ops) {
        em_strbuf sb;
        em_strbuf_init(&sb);
        if (em_overrides_supported_ops_md(&sb, &err) != EM_OK) {
            fprintf(stderr, "ember conf: %s\n", err.msg);
            em_strbuf_reset(&sb);
            return 1;
        }
        fputs(em_strbuf_cstr(&sb), stdout);
        em_strbuf_reset(&sb);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    char *text = NULL;
    em_status s = markdown ? em_conf_markdown(all, &text, &err) : em_conf_text(all, &text, &err);
    if (s != EM_OK) {
        fprintf(stderr, "ember conf: %s\n", err.msg);
        return 1;
    }
    fputs(text, stdout);
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}
