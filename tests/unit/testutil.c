/* SPDX-License-Identifier: Apache-2.0 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ember/tpch.h"

const char *em_test_tmpdir(const char *name) {
    static char path[4096];
    const char *base = getenv("EMBER_TEST_TMP");
    if (!base || !*base)
        base = "/tmp/ember-tests";
    snprintf(path, sizeof path, "%s/%s", base, name);
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    if (system(cmd) != 0)
        fail_msg("cannot create %s", path);
    return path;
}

const char *em_test_tpch_warehouse(const char *name) {
    static char path[4096];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s", em_test_tmpdir(name));
        em_tpch_options o;
        em_tpch_options_init(&o);
        o.sf = 0.01;
        o.schema = EM_TPCH_SCHEMA_SPARK;
        o.out_dir = path;
        o.force = true;
        em_error err = {0};
        EM_ASSERT_OK(em_tpch_generate(&o, &err), &err);
    }
    return path;
}

const char *em_test_shared_dir(void) {
    static char path[4096];
    const char *env = getenv("EMBER_SHARED");
    snprintf(path, sizeof path, "%s", env && *env ? env : "../shared");
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    return path;
}

const char *em_test_ember_bin(void) {
    const char *env = getenv("EMBER_BIN");
    return env && *env ? env : NULL;
}

int em_test_system(const char *fmt, ...) {
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc == -1)
        return -1;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
