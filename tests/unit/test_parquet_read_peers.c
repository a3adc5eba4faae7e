/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peers write, Ember reads. tests/interop/pw_make.mjs has DuckDB and Polars
 * write Parquet files covering every type, codec and page format they can
 * produce, and writes the values DuckDB reads back as canonical text in
 * expected.json. This program reads each file with Ember and compares every
 * value (em_value_text) with the peer's text; it also checks projection,
 * row-group selection, odd batch sizes, and that every row group's
 * statistics bound the values actually read.
 *
 * Without node or the peers (PEERS_MODULES or scripts/setup-peers.sh) the
 * test fails: an interop test that cannot run must not pass.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/parquet.h"
#include "ember/value_text.h"

static char g_dir[1024];
static json_t *g_expected;

static int setup_peers(void **state) {
    (void)state;
    const char *src = getenv("EMBER_SOURCE");
    if (!src)
        src = ".";
    char modules[1024] = "";
    const char *env = getenv("PEERS_MODULES");
    if (env && *env) {
        snprintf(modules, sizeof modules, "%s", env);
    } else {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "bash '%s/scripts/setup-peers.sh'", src);
        FILE *p = popen(cmd, "r");
        if (p) {
            if (!fgets(modules, sizeof modules, p))
                modules[0] = '\0';
            if (pclose(p) != 0)
                modules[0] = '\0';
        }
        modules[strcspn(modules, "\n")] = '\0';
    }
    if (!modules[0]) {
        fprintf(stderr, "peers are not available: set PEERS_MODULES or make "
                        "scripts/setup-peers.sh work (node + npm)\n");
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "%s", em_test_tmpdir("parquet_read_peers"));
    int rc = em_test_system("PEERS_MODULES='%s' node '%s/tests/interop/pw_make.mjs' '%s'", modules,
                            src, g_dir);
    if (rc != 0) {
        fprintf(stderr, "pw_make.mjs failed (exit %d)\n", rc);
        return -1;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/expected.json", g_dir);
    json_error_t jerr;
    g_expected = json_load_file(path, 0, &jerr);
    if (!g_expected) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
        return -1;
    }
    return 0;
}

static int teardown_peers(void **state) {
    (void)state;
    json_decref(g_expected);
    return 0;
}

/* Reads `file` with the given options and compares every value; returns mismatches. */
static int64_t compare_range(const char *name, const json_t *cols, const int *proj, int n_proj,
                             const bool *rg_sel, int64_t batch_rows, int64_t row_start,
                             int64_t row_end, int64_t *rows_read) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    em_error err = {0};
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    const em_schema *fs = em_pq_file_schema(f);
    assert_int_equal(fs->n_fields, (int)json_object_size(cols));
    em_pq_read_options o = {0};
    o.columns = proj;
    o.n_columns = n_proj;
    o.row_groups = rg_sel;
    o.batch_rows = batch_rows;
    o.row_start = row_start;
    o.row_end = row_end;
    em_pq_reader *r;
    EM_ASSERT_OK(em_pq_reader_open(f, &o, &r, &err), &err);
    const em_schema *rs = em_pq_reader_schema(r);
    /* The file's row index of each batch row: skipped row groups and the
     * row range shift it. */
    int n_rg = em_pq_file_num_row_groups(f);
    int64_t n_rows = em_pq_file_num_rows(f), n_want = 0;
    int64_t *want_rows = malloc(sizeof *want_rows * (size_t)(n_rows + 1));
    assert_non_null(want_rows);
    int64_t acc = 0;
    for (int g = 0; g < n_rg; acc += em_pq_file_row_group_rows(f, g), g++)
        for (int64_t i = 0; i < em_pq_file_row_group_rows(f, g); i++)
            if ((!rg_sel || rg_sel[g]) &&
                (row_end == 0 || (acc + i >= row_start && acc + i < row_end)))
                want_rows[n_want++] = acc + i;
    int64_t mismatches = 0, total = 0;
    em_strbuf sb;
    em_strbuf_init(&sb);
    for (;;) {
        em_batch *b;
        em_status st = em_pq_reader_next(r, &b, &err);
        if (st == EM_DONE)
            break;
        EM_ASSERT_OK(st, &err);
        assert_true(b->n_rows > 0);
        assert_true(b->n_rows <= (batch_rows ? batch_rows : EM_BATCH_CAP));
        for (int64_t i = 0; i < b->n_rows; i++) {
            assert_true(total + i < n_want);
            int64_t row = want_rows[total + i];
            for (int c = 0; c < rs->n_fields; c++) {
                const json_t *vals = json_object_get(cols, rs->fields[c].name);
                assert_non_null(vals);
                const json_t *want = json_array_get(vals, (size_t)row);
                assert_non_null(want);
                bool is_null = false;
                em_strbuf_clear(&sb);
                EM_ASSERT_OK(em_value_text(&b->cols[c], i, &sb, &is_null, &err), &err);
                bool ok = is_null ? json_is_null(want)
                                  : json_is_string(want) &&
                                        strcmp(json_string_value(want), em_strbuf_cstr(&sb)) == 0;
                if (!ok && mismatches++ < 8)
                    fprintf(stderr, "%s row %lld column %s: ember %s, peer %s\n", name,
                            (long long)row, rs->fields[c].name,
                            is_null ? "NULL" : em_strbuf_cstr(&sb),
                            json_is_null(want) ? "NULL" : json_string_value(want));
            }
        }
        total += b->n_rows;
    }
    em_strbuf_reset(&sb);
    em_pq_reader_close(r);
    em_pq_file_close(f);
    assert_int_equal(total, n_want);
    free(want_rows);
    *rows_read = total;
    return mismatches;
}

static int64_t compare_file(const char *name, const json_t *cols, const int *proj, int n_proj,
                            const bool *rg_sel, int64_t batch_rows, int64_t *rows_read) {
    return compare_range(name, cols, proj, n_proj, rg_sel, batch_rows, 0, 0, rows_read);
}

static void test_every_file_every_value(void **state) {
    (void)state;
    const char *name;
    json_t *cols;
    int n_files = 0;
    int64_t bad = 0;
    json_object_foreach(g_expected, name, cols) {
        int64_t rows;
        bad += compare_file(name, cols, NULL, 0, NULL, 0, &rows);
        const json_t *first = json_object_iter_value(json_object_iter(cols));
        assert_int_equal(rows, (int64_t)json_array_size(first));
        n_files++;
    }
    assert_true(n_files >= 16);
    assert_int_equal(bad, 0);
}

static void test_projection_row_groups_odd_batches(void **state) {
    (void)state;
    const char *files[] = {"duckdb_snappy.parquet", "duckdb_v2_zstd.parquet",
                           "polars_zstd.parquet"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        json_t *cols = json_object_get(g_expected, files[i]);
        assert_non_null(cols);
        int n = (int)json_object_size(cols);
        int proj[64];
        int np = 0;
        for (int c = n - 1; c >= 0; c -= 2)
            proj[np++] = c; /* reversed, every other column */
        int64_t rows;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", g_dir, files[i]);
        em_error err = {0};
        em_pq_file *f;
        EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
        int n_rg = em_pq_file_num_row_groups(f);
        int64_t odd_rows = 0;
        bool sel[4096];
        /* DuckDB's files have several row groups; Polars writes one (then it is selected). */
        assert_true(n_rg < 4096);
        if (strncmp(files[i], "duckdb", 6) == 0)
            assert_true(n_rg >= 2);
        for (int g = 0; g < n_rg; g++) {
            sel[g] = n_rg == 1 || g % 2 == 1;
            odd_rows += sel[g] ? em_pq_file_row_group_rows(f, g) : 0;
        }
        em_pq_file_close(f);
        assert_int_equal(compare_file(files[i], cols, proj, np, NULL, 777, &rows), 0);
        assert_int_equal(compare_file(files[i], cols, proj, np, sel, 5, &rows), 0);
        assert_int_equal(rows, odd_rows);
        assert_int_equal(compare_file(files[i], cols, NULL, 0, NULL, 1, &rows), 0);
    }
}

static em_pq_file *open_peer_file(const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    em_error err = {0};
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    return f;
}

/* Every file read in row ranges (a third, the middle, the tail, one row),
 * with and without every other row group: each range's rows, in order, with
 * their values, through every encoding and page format the peers write. */
static void test_row_ranges(void **state) {
    (void)state;
    const char *name;
    json_t *cols;
    int64_t bad = 0;
    json_object_foreach(g_expected, name, cols) {
        em_pq_file *f = open_peer_file(name);
        int64_t n = em_pq_file_num_rows(f);
        int n_rg = em_pq_file_num_row_groups(f);
        bool sel[4096];
        assert_true(n_rg < 4096);
        for (int g = 0; g < n_rg; g++)
            sel[g] = g % 2 == 0;
        em_pq_file_close(f);
        if (n < 4)
            continue;
        const int64_t ranges[][2] = {{0, n / 3}, {n / 3, 2 * n / 3}, {n / 2 + 1, n}, {n - 2, n - 1}};
        for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
            int64_t rows;
            bad += compare_range(name, cols, NULL, 0, NULL, 0, ranges[k][0], ranges[k][1], &rows);
            assert_int_equal(rows, ranges[k][1] - ranges[k][0]);
            bad += compare_range(name, cols, NULL, 0, sel, 333, ranges[k][0], ranges[k][1], &rows);
        }
    }
    assert_int_equal(bad, 0);
}

/* Every row group's min/max (where present) must bound the values read. */
static void test_stats_bound_values(void **state) {
    (void)state;
    const char *name;
    json_t *cols;
    int64_t checked = 0;
    json_object_foreach(g_expected, name, cols) {
        em_pq_file *f = open_peer_file(name);
        em_error err = {0};
        const em_schema *s = em_pq_file_schema(f);
        int n_rg = em_pq_file_num_row_groups(f);
        for (int g = 0; g < n_rg; g++) {
            bool sel[4096] = {false};
            sel[g] = true;
            em_pq_read_options o = {0};
            o.row_groups = sel;
            em_pq_reader *r;
            EM_ASSERT_OK(em_pq_reader_open(f, &o, &r, &err), &err);
            em_pq_stats st[64];
            for (int c = 0; c < s->n_fields; c++) {
                EM_ASSERT_OK(em_pq_file_stats(f, g, c, &st[c], &err), &err);
                em_pq_chunk_info ci;
                EM_ASSERT_OK(em_pq_file_chunk_info(f, g, c, &ci, &err), &err);
                assert_true(ci.encodings[0] != '\0');
            }
            int64_t nulls[64] = {0};
            em_batch *b;
            em_status rs;
            while ((rs = em_pq_reader_next(r, &b, &err)) == EM_OK) {
                for (int c = 0; c < s->n_fields; c++) {
                    const em_column *col = &b->cols[c];
                    em_type_id t = col->type.id;
                    for (int64_t i = 0; i < b->n_rows; i++) {
                        if (!em_column_is_valid(col, i)) {
                            nulls[c]++;
                            continue;
                        }
                        if (!st[c].has_min_max)
                            continue;
                        const uint8_t *v = col->values->data;
                        bool in = true;
                        switch (t) {
                        case EM_TYPE_BYTE:
                            in = ((int8_t *)v)[i] >= st[c].min.i64 &&
                                 ((int8_t *)v)[i] <= st[c].max.i64;
                            break;
                        case EM_TYPE_SHORT:
                            in = ((int16_t *)v)[i] >= st[c].min.i64 &&
                                 ((int16_t *)v)[i] <= st[c].max.i64;
                            break;
                        case EM_TYPE_INT:
                        case EM_TYPE_DATE:
                            in = ((int32_t *)v)[i] >= st[c].min.i64 &&
                                 ((int32_t *)v)[i] <= st[c].max.i64;
                            break;
                        case EM_TYPE_LONG:
                        case EM_TYPE_TIMESTAMP:
                        case EM_TYPE_TIMESTAMP_NTZ:
                            in = ((int64_t *)v)[i] >= st[c].min.i64 &&
                                 ((int64_t *)v)[i] <= st[c].max.i64;
                            break;
                        case EM_TYPE_DOUBLE: {
                            double x = ((double *)v)[i];
                            in = x != x || (x >= st[c].min.f64 && x <= st[c].max.f64);
                            break;
                        }
                        case EM_TYPE_FLOAT: {
                            double x = ((float *)v)[i];
                            in = x != x || (x >= st[c].min.f64 && x <= st[c].max.f64);
                            break;
                        }
                        case EM_TYPE_DECIMAL: {
                            em_i128 x;
                            memcpy(&x, v + 16 * i, 16);
                            in = x >= st[c].min.i128 && x <= st[c].max.i128;
                            break;
                        }
                        case EM_TYPE_STRING:
                        case EM_TYPE_BINARY: {
                            const int32_t *off = em_column_offsets(col);
                            const uint8_t *p = col->data->data + off[i];
                            int32_t len = off[i + 1] - off[i];
                            int lo = memcmp(
                                p, st[c].min.bytes.ptr,
                                (size_t)(len < st[c].min.bytes.len ? len : st[c].min.bytes.len));
                            int hi = memcmp(
                                p, st[c].max.bytes.ptr,
                                (size_t)(len < st[c].max.bytes.len ? len : st[c].max.bytes.len));
                            in = (lo > 0 || (lo == 0 && len >= st[c].min.bytes.len)) &&
                                 (hi < 0 || (hi == 0 && len <= st[c].max.bytes.len));
                            break;
                        }
                        default:
                            break;
                        }
                        checked++;
                        if (!in)
                            fail_msg("%s row group %d column %s: value %lld outside statistics",
                                     name, g, s->fields[c].name, (long long)i);
                    }
                }
            }
            if (rs != EM_DONE)
                fail_msg("%s: %s", name, err.msg);
            for (int c = 0; c < s->n_fields; c++)
                if (st[c].has_null_count)
                    assert_int_equal(st[c].null_count, nulls[c]);
            em_pq_reader_close(r);
        }
        em_pq_file_close(f);
    }
    assert_true(checked > 100000);
}

/* The peers' files must exercise the encodings and page kinds the reader claims. */
static void test_encodings_covered(void **state) {
    (void)state;
    const char *want[] = {"PLAIN", "RLE_DICTIONARY", "DELTA_BINARY_PACKED",
                          "DELTA_LENGTH_BYTE_ARRAY"};
    bool seen[4] = {false};
    const char *name;
    json_t *cols;
    char all[8192] = "";
    json_object_foreach(g_expected, name, cols) {
        em_pq_file *f = open_peer_file(name);
        em_error err = {0};
        for (int g = 0; g < em_pq_file_num_row_groups(f); g++)
            for (int c = 0; c < em_pq_file_schema(f)->n_fields; c++) {
                em_pq_chunk_info ci;
                EM_ASSERT_OK(em_pq_file_chunk_info(f, g, c, &ci, &err), &err);
                char tok[160];
                snprintf(tok, sizeof tok, ",%s,", ci.encodings);
                for (size_t i = 0; i < 4; i++) {
                    char w[64];
                    snprintf(w, sizeof w, ",%s,", want[i]);
                    if (strstr(tok, w))
                        seen[i] = true;
                }
                if (!strstr(all, ci.encodings) &&
                    strlen(all) + strlen(ci.encodings) + 3 < sizeof all) {
                    strcat(all, ci.encodings);
                    strcat(all, " | ");
                }
            }
        em_pq_file_close(f);
    }
    fprintf(stderr, "encodings seen: %s\n", all);
    for (size_t i = 0; i < 4; i++)
        if (!seen[i])
            fail_msg("no peer file uses %s", want[i]);
}

/* BROTLI has no decoder here: the file opens, reading says which codec. */
static void test_unsupported_codec(void **state) {
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/unsupported_brotli.parquet", g_dir);
    em_error err = {0};
    em_pq_file *f;
    EM_ASSERT_OK(em_pq_file_open(path, &f, &err), &err);
    em_pq_reader *r;
    EM_ASSERT_OK(em_pq_reader_open(f, NULL, &r, &err), &err);
    em_batch *b;
    assert_int_equal(em_pq_reader_next(r, &b, &err), EM_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "BROTLI"));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "byte "));
    /* The reader keeps failing the same way. */
    assert_int_equal(em_pq_reader_next(r, &b, &err), EM_ERR_UNSUPPORTED);
    em_pq_reader_close(r);
    em_pq_file_close(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_every_value),
        cmocka_unit_test(test_projection_row_groups_odd_batches),
        cmocka_unit_test(test_row_ranges),
        cmocka_unit_test(test_stats_bound_values),
        cmocka_unit_test(test_encodings_covered),
        cmocka_unit_test(test_unsupported_codec),
    };
    return cmocka_run_group_tests(tests, setup_peers, teardown_peers);
}
