/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parse then print must reproduce every shared Spark plan byte for byte:
 * ../shared/spark-plans/tpch/spark-<line>/q1..q22.txt for every line. Each
 * failing file is reported with its first differing line; the test fails when
 * the shared folder is missing (the plans are read in place, never copied).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/plan.h"
#include "testutil.h"

static const char *const versions[] = {"3.3.0", "3.3", "3.4", "3.5", "4.0", "master"};

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Prints the first line where a and b differ. */
static void report_diff(const char *path, const char *a, size_t an, const char *b, size_t bn) {
    size_t i = 0, line = 1, line_start = 0;
    while (i < an && i < bn && a[i] == b[i]) {
        if (a[i] == '\n') {
            line++;
            line_start = i + 1;
        }
        i++;
    }
    const char *ae = memchr(a + line_start, '\n', an - line_start);
    const char *be = bn > line_start ? memchr(b + line_start, '\n', bn - line_start) : NULL;
    int al = ae ? (int)(ae - (a + line_start)) : (int)(an - line_start);
    int bl = bn > line_start ? (be ? (int)(be - (b + line_start)) : (int)(bn - line_start)) : 0;
    print_error("%s:%zu: first difference\n  spark: %.*s\n  ember: %.*s\n", path, line,
                al > 300 ? 300 : al, a + line_start, bl > 300 ? 300 : bl,
                bn > line_start ? b + line_start : "");
}

static void test_roundtrip_all_shared_plans(void **state) {
    (void)state;
    const char *shared = em_test_shared_dir();
    if (!shared)
        fail_msg("the shared folder (EMBER_SHARED or ../shared) is missing: it holds "
                 "spark-plans/tpch/, which this test reads in place");
    int n_files = 0, n_ok = 0;
    for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
        for (int q = 1; q <= 22; q++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/spark-plans/tpch/spark-%s/q%d.txt", shared,
                     versions[v], q);
            size_t len = 0;
            char *text = read_all(path, &len);
            if (!text)
                fail_msg("cannot read %s (is the shared folder complete?)", path);
            n_files++;
            em_plan *plan = NULL;
            em_error err = {0};
            em_status st = em_plan_parse(text, len, NULL, &plan, &err);
            if (st != EM_OK) {
                print_error("%s: parse failed: %s\n", path, err.msg);
                free(text);
                continue;
            }
            char *out;
            size_t out_len;
            EM_ASSERT_OK(em_plan_print(plan, NULL, &out, &out_len, &err), &err);
            if (out_len == len && memcmp(out, text, len) == 0)
                n_ok++;
            else
                report_diff(path, text, len, out, out_len);
            free(out);
            em_plan_free(plan);
            free(text);
        }
    }
    print_message("%d of %d shared plans round-trip exactly\n", n_ok, n_files);
    assert_int_equal(n_files, 132);
    assert_int_equal(n_ok, n_files);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_shared_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
