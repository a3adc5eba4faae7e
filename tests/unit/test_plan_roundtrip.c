/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parse then print must reproduce every shared Spark plan byte for byte:
 * ../shared/spark-plans/tpch/spark-<line>/q1..q22.txt for every line. Each
 * failing file is reported with its first differing line; the test fails when
 * the shared folder is missing (the plans are read in place, never copied).
 */
#include "test_plan_common.h"

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
    int n_files = 0, n_ok = 0;
    for (int v = 0; v < PLAN_TEST_N_DIRS; v++) {
        for (int q = 1; q <= 22; q++) {
            char path[4096];
            size_t len = 0;
            char *text = plan_test_shared(plan_test_dirs[v], q, &len, path, sizeof path);
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
            em_plan_destroy(plan);
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
