/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes the files that DuckDB and Polars must read back exactly
 * (tests/interop/ember_write_peers_read.sh runs the check): every Spark type,
 * nullable and not, each codec, dictionary on, off and falling back to PLAIN
 * mid-chunk, several row groups and pages, selection vectors, and batches of
 * odd sizes. Beside each FILE.parquet goes FILE.json with the column names,
 * Spark types and every value as canonical text:
 *   integers   decimal digits          booleans  true / false
 *   decimals   unscaled digits with exactly `scale` fractional digits
 *   float      shortest text that reads back to the same float/double
 *              ("NaN", "Infinity", "-Infinity", "-0")
 *   string     the string              binary    lowercase hex
 *   date       YYYY-MM-DD              timestamp YYYY-MM-DD HH:MM:SS[.ffffff]
 * (UTC) null       JSON null The folder is $EW_OUT, or <test
 * tmp>/ember_write_peers.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ember/parquet.h"

/* ---- canonical text -------------------------------------------------- */

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yy + (*m <= 2));
}

static void fmt_date(char *buf, size_t cap, int64_t days) {
    int y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(buf, cap, "%04d-%02u-%02u", y, m, d);
}

static void fmt_ts(char *buf, size_t cap, int64_t us) {
    int64_t day = us >= 0 ? us / 86400000000LL : -((-us + 86400000000LL - 1) / 86400000000LL);
    int64_t rem = us - day * 86400000000LL;
    char date[32];
    fmt_date(date, sizeof date, day);
    int64_t secs = rem / 1000000, frac = rem % 1000000;
    int n = snprintf(buf, cap, "%s %02d:%02d:%02d", date, (int)(secs / 3600), (int)(secs / 60 % 60),
                     (int)(secs % 60));
    if (frac)
        snprintf(buf + n, cap - (size_t)n, ".%06d", (int)frac);
}

static void fmt_decimal(char *buf, size_t cap, em_i128 v, int scale) {
    char digits[64];
    int n = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (n <= scale)
        digits[n++] = '0';
    size_t k = 0;
    if (neg)
        buf[k++] = '-';
    for (int i = n - 1; i >= 0 && k + 2 < cap; i--) {
        buf[k++] = digits[i];
        if (i == scale && scale > 0)
            buf[k++] = '.';
    }
    buf[k] = 0;
}

static void fmt_double(char *buf, size_t cap, double v, bool is_float) {
    if (isnan(v)) {
        snprintf(buf, cap, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (v == 0) {
        snprintf(buf, cap, signbit(v) ? "-0" : "0");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (is_float ? (float)back == (float)v : back == v)
            return;
    }
}

/* ---- data -------------------------------------------------------------- */

typedef struct spec {
    const char *name;
    em_type type;
    bool nullable;
} spec;

static em_i128 pow10_i128(int p) {
    em_i128 r = 1;
    while (p-- > 0)
        r *= 10;
    return r;
}

/* Row i's value of a column: fills the column (appending) and the JSON array.
 */
static void put_value(em_column *c, const spec *s, int64_t i, int col_index, json_t *row) {
    em_error err;
    bool null = s->type.id == EM_TYPE_NULL || (s->nullable && (i * 31 + col_index * 7) % 11 == 3);
    if (null) {
        EM_ASSERT_OK(em_column_append_null(c, &err), &err);
        json_array_append_new(row, json_null());
        return;
    }
    char txt[256];
    switch (s->type.id) {
    case EM_TYPE_BOOLEAN: {
        bool v = (i % 3) == 0;
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        snprintf(txt, sizeof txt, "%s", v ? "true" : "false");
        break;
    }
    case EM_TYPE_BYTE: {
        int8_t v = (int8_t)(i % 5 == 0 ? (i % 10 ? -128 : 127) : (int8_t)(i * 37));
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        snprintf(txt, sizeof txt, "%d", v);
        break;
    }
    case EM_TYPE_SHORT: {
        int16_t v = (int16_t)(i % 13 == 0 ? -32768 : i % 13 == 1 ? 32767 : (int16_t)(i * 1237));
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        snprintf(txt, sizeof txt, "%d", v);
        break;
    }
    case EM_TYPE_INT: {
        int32_t v = i % 17 == 0 ? INT32_MIN : i % 17 == 1 ? INT32_MAX : (int32_t)(i * 7919 - 50000);
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        snprintf(txt, sizeof txt, "%d", v);
        break;
    }
    case EM_TYPE_LONG: {
        int64_t v = i % 19 == 0   ? INT64_MIN
                    : i % 19 == 1 ? INT64_MAX
                                  : (int64_t)i * 1000000000007LL - 123456789;
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        snprintf(txt, sizeof txt, "%lld", (long long)v);
        break;
    }
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE: {
        static const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-45, 3.4e38};
        double v = i % 23 < 7 ? specials[i % 23] : (double)(i - 300) * 0.1 + 1.0 / 3;
        if (s->type.id == EM_TYPE_FLOAT) {
            float f = (float)v;
            EM_ASSERT_OK(em_column_append_fixed(c, &f, &err), &err);
            fmt_double(txt, sizeof txt, f, true);
        } else {
            if (i % 23 == 5)
                v = 5e-324;
            if (i % 23 == 6)
                v = 1.7976931348623157e308;
            EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
            fmt_double(txt, sizeof txt, v, false);
        }
        break;
    }
    case EM_TYPE_DECIMAL: {
        em_i128 max = pow10_i128(s->type.precision) - 1;
        em_i128 v;
        if (i % 29 == 0)
            v = max;
        else if (i % 29 == 1)
            v = -max;
        else
            v = ((em_i128)(i * 982451653LL) * (i % 2 ? -1 : 1) * 1000003) % (max + 1);
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        fmt_decimal(txt, sizeof txt, v, s->type.scale);
        break;
    }
    case EM_TYPE_STRING: {
        char buf[2100] = "";
        int len;
        if (i % 41 == 0) {
            len = 0;
        } else if (i % 41 == 1) {
            len = 2000;
            for (int k = 0; k < len; k++)
                buf[k] = (char)('a' + (k * 7 + i) % 26);
        } else if (i % 41 == 2) {
            len = snprintf(buf, sizeof buf, "Grüße, 世界 \"q\" \\ %lld", (long long)i);
        } else if (strcmp(s->name, "str_low") == 0) {
            static const char *words[] = {"AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
            len = snprintf(buf, sizeof buf, "%s", words[i % 6]);
        } else {
            /* Repeats early in each 1500 rows, then distinct values: a
             * dictionary that pays at first and overflows later. */
            len = snprintf(buf, sizeof buf, "value-%lld",
                           (long long)(i % 1500 < 200 ? i % 3 : i * 7 % 1000));
        }
        EM_ASSERT_OK(em_column_append_bytes(c, buf, len, &err), &err);
        json_array_append_new(row, json_stringn(buf, (size_t)len));
        return;
    }
    case EM_TYPE_BINARY: {
        uint8_t buf[64] = {0};
        int len = (int)(i % 9);
        for (int k = 0; k < len; k++)
            buf[k] = (uint8_t)(k == 0 ? 0 : k == 1 ? 0xff : (i * 13 + k * 101));
        EM_ASSERT_OK(em_column_append_bytes(c, buf, len, &err), &err);
        int n = 0;
        for (int k = 0; k < len; k++)
            n += snprintf(txt + n, sizeof txt - (size_t)n, "%02x", buf[k]);
        txt[n] = 0;
        break;
    }
    case EM_TYPE_DATE: {
        int32_t v = i % 31 == 0 ? -719162 : i % 31 == 1 ? 2932896 : (int32_t)(i * 97 - 30000);
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        fmt_date(txt, sizeof txt, v);
        break;
    }
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ: {
        int64_t v = i % 37 == 0   ? -62135596800000000LL /* 0001-01-01 */
                    : i % 37 == 1 ? 253402300799999999LL /* 9999-12-31 23:59:59.999999 */
                    : i % 37 == 2 ? -1                   /* 1969-12-31 23:59:59.999999 */
                                  : (int64_t)(i - 200) * 86400123457LL + i % 1000000;
        EM_ASSERT_OK(em_column_append_fixed(c, &v, &err), &err);
        fmt_ts(txt, sizeof txt, v);
        break;
    }
    default: fail_msg("unexpected type"); return;
    }
    json_array_append_new(row, json_string(txt));
}

static const spec ALL_TYPES[] = {
    {"b", {EM_TYPE_BOOLEAN, 0, 0}, true},
    {"i8", {EM_TYPE_BYTE, 0, 0}, true},
    {"i16", {EM_TYPE_SHORT, 0, 0}, true},
    {"i32", {EM_TYPE_INT, 0, 0}, true},
    {"i64", {EM_TYPE_LONG, 0, 0}, true},
    {"f32", {EM_TYPE_FLOAT, 0, 0}, true},
    {"f64", {EM_TYPE_DOUBLE, 0, 0}, true},
    {"dec_5_5", {EM_TYPE_DECIMAL, 5, 5}, true},
    {"dec_9_2", {EM_TYPE_DECIMAL, 9, 2}, true},
    {"dec_15_2", {EM_TYPE_DECIMAL, 15, 2}, true},
    {"dec_18_0", {EM_TYPE_DECIMAL, 18, 0}, true},
    {"dec_20_3", {EM_TYPE_DECIMAL, 20, 3}, true},
    {"dec_38_10", {EM_TYPE_DECIMAL, 38, 10}, true},
    {"str", {EM_TYPE_STRING, 0, 0}, true},
    {"str_low", {EM_TYPE_STRING, 0, 0}, true},
    {"bin", {EM_TYPE_BINARY, 0, 0}, true},
    {"d", {EM_TYPE_DATE, 0, 0}, true},
    {"ts", {EM_TYPE_TIMESTAMP, 0, 0}, true},
    {"ntz", {EM_TYPE_TIMESTAMP_NTZ, 0, 0}, true},
    {"nul", {EM_TYPE_NULL, 0, 0}, true},
    {"req_i32", {EM_TYPE_INT, 0, 0}, false},
    {"req_str", {EM_TYPE_STRING, 0, 0}, false},
    {"req_dec", {EM_TYPE_DECIMAL, 25, 5}, false},
    {"req_b", {EM_TYPE_BOOLEAN, 0, 0}, false},
};
#define N_ALL ((int)(sizeof ALL_TYPES / sizeof ALL_TYPES[0]))

/* Writes `rows` rows in batches of `batch` rows; with `use_sel`, each batch
 * holds twice the rows and a selection picks every other one (the rows left
 * out hold junk that must not reach the file). */
static void write_file(const char *dir, const char *name, const em_pq_write_options *opts,
                       int64_t rows, int64_t batch, bool use_sel) {
    char path[4096], jpath[4096];
    snprintf(path, sizeof path, "%s/%s.parquet", dir, name);
    snprintf(jpath, sizeof jpath, "%s/%s.json", dir, name);
    em_error err;
    em_schema schema;
    EM_ASSERT_OK(em_schema_init(&schema, N_ALL, &err), &err);
    json_t *names = json_array(), *types = json_array(), *data = json_array();
    for (int c = 0; c < N_ALL; c++) {
        EM_ASSERT_OK(em_schema_set(&schema, c, ALL_TYPES[c].name, ALL_TYPES[c].type,
                                   ALL_TYPES[c].nullable, &err),
                     &err);
        char t[64];
        em_type_format(ALL_TYPES[c].type, t, sizeof t);
        json_array_append_new(names, json_string(ALL_TYPES[c].name));
        json_array_append_new(types, json_string(t));
    }
    em_pq_writer *w;
    EM_ASSERT_OK(em_pq_writer_open(path, &schema, opts, &w, &err), &err);
    int64_t done = 0;
    while (done < rows) {
        int64_t n = rows - done < batch ? rows - done : batch;
        int64_t phys = use_sel ? 2 * n : n;
        em_batch *b;
        EM_ASSERT_OK(em_batch_create(&schema, phys, NULL, &b, &err), &err);
        json_t *rowsj[phys];
        for (int64_t r = 0; r < phys; r++)
            rowsj[r] = json_array();
        for (int c = 0; c < N_ALL; c++) {
            em_column *col = &b->cols[c];
            if (ALL_TYPES[c].nullable || ALL_TYPES[c].type.id == EM_TYPE_NULL)
                EM_ASSERT_OK(em_column_ensure_validity(col, &err), &err);
            for (int64_t r = 0; r < phys; r++) {
                /* With a selection, even physical rows are the logical ones. */
                int64_t logical = use_sel ? (r % 2 == 0 ? done + r / 2 : 1000000 + r) : done + r;
                put_value(col, &ALL_TYPES[c], logical, c, rowsj[r]);
            }
        }
        b->n_rows = phys;
        if (use_sel) {
            EM_ASSERT_OK(em_batch_sel_reserve(b, n, &err), &err);
            for (int64_t k = 0; k < n; k++)
                b->sel[k] = (int32_t)(2 * k);
            b->n_sel = n;
        }
        for (int64_t r = 0; r < phys; r++) {
            if (!use_sel || r % 2 == 0)
                json_array_append_new(data, rowsj[r]);
            else
                json_decref(rowsj[r]);
        }
        EM_ASSERT_OK(em_pq_writer_write(w, b, &err), &err);
        em_batch_destroy(b);
        done += n;
    }
    EM_ASSERT_OK(em_pq_writer_close(w, &err), &err);
    em_schema_reset(&schema);
    json_t *root = json_object();
    json_object_set_new(root, "file", json_string(path));
    json_object_set_new(root, "columns", names);
    json_object_set_new(root, "types", types);
    json_object_set_new(root, "rows", data);
    json_object_set_new(root, "statistics", json_boolean(opts->statistics));
    assert_int_equal(json_dump_file(root, jpath, JSON_COMPACT), 0);
    json_decref(root);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
}

static void test_write_peer_files(void **state) {
    (void)state;
    const char *env = getenv("EW_OUT");
    char dir[4096];
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s", env);
        assert_int_equal(em_test_system("rm -rf '%s' && mkdir -p '%s'", dir, dir), 0);
    } else {
        snprintf(dir, sizeof dir, "%s", em_test_tmpdir("ember_write_peers"));
    }
    static const struct {
        const char *name;
        em_pq_codec codec;
    } codecs[] = {{"uncompressed", EM_PQ_UNCOMPRESSED},
                  {"snappy", EM_PQ_SNAPPY},
                  {"gzip", EM_PQ_GZIP},
                  {"zstd", EM_PQ_ZSTD},
                  {"lz4_raw", EM_PQ_LZ4_RAW}};
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        em_pq_write_options o;
        em_pq_write_options_init(&o);
        o.codec = codecs[k].codec;
        char name[64];
        snprintf(name, sizeof name, "types_%s", codecs[k].name);
        write_file(dir, name, &o, 3000, 1000, false);
    }
    /* PLAIN only, several row groups and small pages, odd batch sizes. */
    em_pq_write_options o;
    em_pq_write_options_init(&o);
    o.dictionary = false;
    o.row_group_rows = 700;
    o.page_bytes = 512;
    o.codec = EM_PQ_ZSTD;
    write_file(dir, "plain_groups", &o, 2500, 333, false);
    /* Dictionary that overflows mid-chunk: dictionary pages, then PLAIN. */
    em_pq_write_options_init(&o);
    o.dictionary_max_bytes = 2000;
    o.page_bytes = 1000;
    o.row_group_rows = 1500;
    write_file(dir, "dict_fallback", &o, 4000, 256, false);
    /* Selection vectors, statistics off, tiny batches. */
    em_pq_write_options_init(&o);
    o.statistics = false;
    o.codec = EM_PQ_UNCOMPRESSED;
    write_file(dir, "selected", &o, 500, 7, true);
    /* No rows at all. */
    em_pq_write_options_init(&o);
    write_file(dir, "empty", &o, 0, 10, false);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_write_peer_files)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
