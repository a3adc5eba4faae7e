/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embeddable task API (include/ember/task.h) as the Spark plugin uses
 * it, without a JVM: fragments written as the plugin writes them, inputs as
 * Arrow C streams, output as an Arrow C stream, the map side of a shuffle
 * as blocks, broadcast relations shared by tasks; and the failures: a
 * fragment that does not read, inputs that do not match, an input stream
 * whose batches have other types, cancellation; LORE dumps written by a
 * fragment's tasks and replayed. Run under ASan too: the
 * ownership rules (streams moved in, arrays exported zero-copy) are what
 * this checks as much as the values.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember/arrow.h"
#include "ember/chunk.h"
#include "ember/hash.h"
#include "ember/lore.h"
#include "ember/plan.h"
#include "ember/rowexpr.h"
#include "ember/task.h"

#define ATTR_A                                                                                     \
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.AttributeReference\","                \
    "\"pretty\":\"attributereference\",\"type\":\"int\",\"nullable\":true,\"exprId\":1,"           \
    "\"fields\":{\"name\":\"a\",\"dataType\":\"int\",\"nullable\":true,\"metadata\":\"{}\"}}"
#define ATTR_B                                                                                     \
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.AttributeReference\","                \
    "\"pretty\":\"attributereference\",\"type\":\"int\",\"nullable\":true,\"exprId\":2,"           \
    "\"fields\":{\"name\":\"b\",\"dataType\":\"int\",\"nullable\":true,\"metadata\":\"{}\"}}"
#define LIT(v)                                                                                     \
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.Literal\",\"pretty\":\"literal\","     \
    "\"type\":\"int\",\"nullable\":false,\"value\":" v "}"
/* input 0: the rows of column a, as a Spark exchange the plugin reads */
#define INPUT_A(broadcast)                                                                         \
    "{\"class\":\"org.apache.spark.sql.execution.exchange.ShuffleExchangeExec\",\"id\":9,"         \
    "\"name\":\"Exchange\",\"output\":[" ATTR_A "],\"input\":0,\"broadcast\":" broadcast ","      \
    "\"fields\":{\"child\":{\"child\":0}},\"children\":[]}"

/* Project [a, (a + 1) AS b] over Filter (a > 1) over input 0 */
static const char *FRAGMENT =
    "{\"format\":1,\"spark\":\"3.5.8\",\"conf\":{\"spark.sql.ansi.enabled\":\"false\"},"
    "\"root\":{\"class\":\"org.apache.spark.sql.execution.ProjectExec\",\"id\":0,"
    "\"name\":\"Project\",\"output\":[" ATTR_A "," ATTR_B "],\"fields\":{\"projectList\":[" ATTR_A
    ",{\"class\":\"org.apache.spark.sql.catalyst.expressions.Alias\",\"pretty\":\"alias\","
    "\"type\":\"int\",\"nullable\":true,\"exprId\":2,\"fields\":{\"child\":"
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.Add\",\"pretty\":\"add\","
    "\"type\":\"int\",\"nullable\":true,\"fields\":{\"left\":" ATTR_A ",\"right\":" LIT("1")
    ",\"evalMode\":\"LEGACY\"}},\"name\":\"b\"}}],\"child\":{\"child\":0}},"
    "\"children\":[{\"class\":\"org.apache.spark.sql.execution.FilterExec\",\"id\":1,"
    "\"name\":\"Filter\",\"output\":[" ATTR_A "],\"fields\":{\"condition\":"
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.GreaterThan\","
    "\"pretty\":\"greaterthan\",\"type\":\"boolean\",\"nullable\":true,\"fields\":{\"left\":" ATTR_A
    ",\"right\":" LIT("1") "}},\"child\":{\"child\":0}},\"children\":[" INPUT_A("false") "]}]}}";

/* the map side of hash partitioning on a into 4 */
static const char *MAP_FRAGMENT =
    "{\"format\":1,\"spark\":\"3.5.8\",\"root\":{\"class\":"
    "\"org.apache.spark.sql.execution.exchange.ShuffleExchangeExec\",\"id\":0,"
    "\"name\":\"Exchange\",\"output\":[" ATTR_A "],\"fields\":{\"outputPartitioning\":"
    "{\"class\":\"org.apache.spark.sql.catalyst.plans.physical.HashPartitioning\","
    "\"pretty\":\"hashpartitioning\",\"type\":\"int\",\"nullable\":false,\"fields\":"
    "{\"expressions\":[" ATTR_A "],\"numPartitions\":4}},\"child\":{\"child\":0},"
    "\"shuffleOrigin\":\"ENSURE_REQUIREMENTS\",\"advisoryPartitionSize\":null},"
    "\"children\":[" INPUT_A("false") "]}}";

/* A literal of Spark type t with JSON value v, and an attribute of type t. */
#define TLIT(t, v)                                                                                 \
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.Literal\",\"pretty\":\"literal\","     \
    "\"type\":\"" t "\",\"nullable\":false,\"value\":" v "}"
#define TATTR(name, t, id)                                                                         \
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.AttributeReference\","                \
    "\"pretty\":\"attributereference\",\"type\":\"" t "\",\"nullable\":false,\"exprId\":" id     \
    ",\"fields\":{\"name\":\"" name "\",\"dataType\":\"" t "\",\"nullable\":false,"                \
    "\"metadata\":\"{}\"}}"
#define TALIAS(lit, name, t, id)                                                                   \
    "{\"class\":\"org.apache.spark.sql.catalyst.expressions.Alias\",\"pretty\":\"alias\","         \
    "\"type\":\"" t "\",\"nullable\":false,\"exprId\":" id ",\"fields\":{\"child\":" lit           \
    ",\"name\":\"" name "\"}}"

/* Project [TIMESTAMP '2019-01-01 00:00:00' AS w, the second 2019-11-03 01:30:00 (PST, an
 * hour after the first: a DST overlap) AS o, TIMESTAMP_NTZ '2019-01-01 00:00:00' AS n]
 * over input 0, in session time zone America/Los_Angeles. No cast in the plan carries a
 * timeZoneId: the zone comes from the settings alone. */
static const char *TS_FRAGMENT =
    "{\"format\":1,\"spark\":\"3.5.8\",\"conf\":{\"spark.sql.session.timeZone\":"
    "\"America/Los_Angeles\"},"
    "\"root\":{\"class\":\"org.apache.spark.sql.execution.ProjectExec\",\"id\":0,"
    "\"name\":\"Project\",\"output\":[" TATTR("w", "timestamp", "11") "," TATTR(
        "o", "timestamp", "12") "," TATTR("n", "timestamp_ntz", "13") "],"
    "\"fields\":{\"projectList\":[" TALIAS(TLIT("timestamp", "1546329600000000"), "w", "timestamp",
                                           "11") "," TALIAS(TLIT("timestamp", "1572773400000000"),
                                                            "o", "timestamp",
                                                            "12") "," TALIAS(TLIT("timestamp_ntz",
                                                                                  "1546300800000000"),
                                                                             "n", "timestamp_ntz",
                                                                             "13") "],"
    "\"child\":{\"child\":0}},\"children\":[" INPUT_A("false") "]}}";

/* Project [DATE '-0044-03-15' AS d, X'616100FF' AS b] over input 0: values the
 * literals' text does not give back (a year before 1 prints as '-044-03-15', which no
 * date parser reads; binary prints as 0x616100FF), so the engines take Spark's days
 * and bytes. */
static const char *LIT_FRAGMENT =
    "{\"format\":1,\"spark\":\"3.5.8\",\"conf\":{},"
    "\"root\":{\"class\":\"org.apache.spark.sql.execution.ProjectExec\",\"id\":0,"
    "\"name\":\"Project\",\"output\":[" TATTR("d", "date", "21") "," TATTR("b", "binary", "22") "],"
    "\"fields\":{\"projectList\":[" TALIAS(TLIT("date", "-735526"), "d", "date", "21") "," TALIAS(
        TLIT("binary", "\"YWEA/w==\""), "b", "binary", "22") "],"
    "\"child\":{\"child\":0}},\"children\":[" INPUT_A("false") "]}}";

/* ------------------------------------------------------------ input streams */

typedef struct source {
    int32_t next, end, batch; /* values next..end-1, batch rows per batch; every 5th null */
} source;

static em_schema schema_a(em_type t) {
    em_schema s = {0};
    em_error err = {0};
    EM_ASSERT_OK(em_schema_init(&s, 1, &err), &err);
    EM_ASSERT_OK(em_schema_set(&s, 0, "a", t, true, &err), &err);
    return s;
}

static em_status source_next(void *ctx, em_batch **out, em_error *err) {
    source *src = ctx;
    if (src->next >= src->end)
        return EM_DONE;
    em_schema s = schema_a(em_type_make(EM_TYPE_INT));
    em_status st = em_batch_create(&s, src->batch, NULL, out, err);
    em_schema_reset(&s);
    EM_TRY(st);
    for (int i = 0; i < src->batch && src->next < src->end; i++, src->next++) {
        if (src->next % 5 == 0)
            EM_TRY(em_column_append_null(&(*out)->cols[0], err));
        else
            EM_TRY(em_column_append_fixed(&(*out)->cols[0], &src->next, err));
        (*out)->n_rows++;
    }
    return EM_OK;
}

static void free_source(void *ctx) { free(ctx); }

static void make_stream(int32_t from, int32_t to, int32_t batch, struct ArrowArrayStream *out) {
    source *src = malloc(sizeof *src);
    *src = (source){from, to, batch};
    em_schema s = schema_a(em_type_make(EM_TYPE_INT));
    em_error err = {0};
    EM_ASSERT_OK(em_arrow_stream_from_batches(&s, source_next, free_source, src, out, &err), &err);
    em_schema_reset(&s);
}

/* ------------------------------------------------------------ tests */

static void test_fragment_task_stream_in_out(void **state) {
    (void)state;
    em_error err = {0};
    em_fragment *f = NULL;
    EM_ASSERT_OK(em_fragment_create(FRAGMENT, strlen(FRAGMENT), &f, &err), &err);
    assert_int_equal(em_fragment_n_inputs(f), 1);
    assert_false(em_fragment_input_is_broadcast(f, 0));
    assert_int_equal(em_fragment_n_scans(f), 0);
    assert_false(em_fragment_is_map(f));

    struct ArrowArrayStream in;
    make_stream(0, 1000, 97, &in);
    struct ArrowArrayStream *streams[] = {&in};
    em_fragment_task_inputs ti = {.partition = 0, .num_partitions = 1, .streams = streams,
                                  .native_budget = -1};
    em_task *t = NULL;
    EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
    assert_null(in.release); /* moved into the task */
    struct ArrowArrayStream out;
    EM_ASSERT_OK(em_task_output_stream(t, &out, &err), &err);
    struct ArrowSchema sc;
    assert_int_equal(out.get_schema(&out, &sc), 0);
    assert_int_equal(sc.n_children, 2);
    int64_t rows = 0, sum_a = 0, sum_b = 0;
    for (;;) {
        struct ArrowArray a;
        assert_int_equal(out.get_next(&out, &a), 0);
        if (!a.release)
            break;
        const int32_t *va = a.children[0]->buffers[1];
        const int32_t *vb = a.children[1]->buffers[1];
        for (int64_t i = 0; i < a.length; i++) {
            sum_a += va[i];
            sum_b += vb[i];
            assert_int_equal(vb[i], va[i] + 1);
        }
        rows += a.length;
        a.release(&a); /* arrays outlive the next pull: released here, in any order */
    }
    /* a > 1 drops 0, 1 and the nulls (every fifth value) */
    int64_t want_rows = 0, want_sum = 0;
    for (int32_t v = 2; v < 1000; v++)
        if (v % 5 != 0) {
            want_rows++;
            want_sum += v;
        }
    assert_int_equal(rows, want_rows);
    assert_int_equal(sum_a, want_sum);
    assert_int_equal(sum_b, want_sum + want_rows);
    sc.release(&sc);
    out.release(&out);
    em_task_destroy(t);
    em_fragment_destroy(f);
}

/* LORE inside the embedder's tasks: the driver gave the fragment's Project
 * LORE id 1 (loreIds, by source index); two tasks of the fragment dump its
 * input and output into a folder that already holds something (the driver
 * checked it once, for the whole query), and the replay of each partition
 * reproduces the dumped output. */
static void test_fragment_lore_dump(void **state) {
    (void)state;
    em_error err = {0};
    const char *dir = em_test_tmpdir("fragment-lore");
    char stray[600];
    snprintf(stray, sizeof stray, "%s/another-fragment-was-here", dir);
    FILE *fp = fopen(stray, "w");
    assert_non_null(fp);
    fclose(fp);
    const char *head = "\"conf\":{\"spark.sql.ansi.enabled\":\"false\"},";
    const char *at = strstr(FRAGMENT, head);
    assert_non_null(at);
    size_t len = strlen(FRAGMENT) + strlen(dir) + 512;
    char *spec = malloc(len);
    snprintf(spec, len,
             "%.*s\"conf\":{\"spark.ember.sql.lore.idsToDump\":\"1[*]\","
             "\"spark.ember.sql.lore.dumpPath\":\"%s\",\"spark.ember.sql.lore.dumpOutput\":"
             "\"true\"},%.*s,\"loreIds\":{\"0\":1,\"1\":0}}",
             (int)(at - FRAGMENT), FRAGMENT, dir,
             (int)(strlen(at + strlen(head)) - 1), at + strlen(head));
    em_fragment *f = NULL;
    EM_ASSERT_OK(em_fragment_create(spec, strlen(spec), &f, &err), &err);
    free(spec);
    for (int p = 0; p < 2; p++) {
        struct ArrowArrayStream in;
        make_stream(p * 500, p * 500 + 500, 97, &in);
        struct ArrowArrayStream *streams[] = {&in};
        em_fragment_task_inputs ti = {.partition = p, .num_partitions = 2, .streams = streams,
                                      .native_budget = -1};
        em_task *t = NULL;
        EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
        em_pool *pool = em_pool_create("lore out", NULL, -1);
        em_batch_list rows = {0};
        EM_ASSERT_OK(em_task_collect(t, pool, &rows, &err), &err);
        em_batch_list_reset(&rows);
        em_pool_destroy(pool);
        em_task_destroy(t);
    }
    em_fragment_destroy(f);

    char path[700];
    snprintf(path, sizeof path, "%s/loreId-0", dir);
    assert_int_not_equal(access(path, F_OK), 0); /* the Filter was not chosen */
    snprintf(path, sizeof path, "%s/loreId-1", dir);
    em_lore_dump *d = NULL;
    EM_ASSERT_OK(em_lore_dump_open(path, &d, &err), &err);
    assert_int_equal(em_lore_dump_n_partitions(d), 2);
    em_pool *pool = em_pool_create("lore replay", NULL, -1);
    for (int i = 0; i < 2; i++) {
        int p = em_lore_dump_partition_at(d, i);
        em_batch_list got = {0}, want = {0};
        EM_ASSERT_OK(em_lore_replay(d, p, pool, &got, NULL, &err), &err);
        EM_ASSERT_OK(em_lore_dump_read_output(d, p, pool, &want, &err), &err);
        char diff[256] = "";
        assert_true(want.n_rows > 300); /* a > 1 keeps 4 of 5 values */
        if (!em_lore_results_equal(&got, &want, diff, sizeof diff))
            fail_msg("partition %d: %s", p, diff);
        em_batch_list_reset(&got);
        em_batch_list_reset(&want);
    }
    em_pool_destroy(pool);
    em_lore_dump_close(d);
}

static void test_map_side_blocks(void **state) {
    (void)state;
    em_error err = {0};
    em_fragment *f = NULL;
    EM_ASSERT_OK(em_fragment_create(MAP_FRAGMENT, strlen(MAP_FRAGMENT), &f, &err), &err);
    assert_true(em_fragment_is_map(f));
    assert_int_equal(em_fragment_map_partitions(f), 4);
    struct ArrowArrayStream in;
    make_stream(0, 5000, 256, &in);
    struct ArrowArrayStream *streams[] = {&in};
    em_fragment_task_inputs ti = {.streams = streams, .num_partitions = 1, .native_budget = -1};
    em_task *t = NULL;
    EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
    int64_t rows = 0;
    bool seen[5000] = {false};
    for (;;) {
        em_strbuf out = {0};
        em_status s = em_task_map_next(t, &out, 4096, &err);
        if (s == EM_DONE) {
            assert_int_equal(out.len, 0);
            em_strbuf_reset(&out);
            break;
        }
        EM_ASSERT_OK(s, &err);
        size_t at = 0;
        while (at < out.len) {
            int32_t rec[3];
            memcpy(rec, out.data + at, sizeof rec);
            assert_true(rec[0] >= 0 && rec[0] < 4);
            em_batch *b = NULL;
            EM_ASSERT_OK(em_block_read((const uint8_t *)out.data + at + sizeof rec, rec[2], NULL,
                                       &b, "map block", &err),
                         &err);
            assert_int_equal(rec[1], b->n_rows); /* the record tells the block's rows */
            for (int64_t r = 0; r < b->n_rows; r++) {
                int32_t p = 0; /* Spark puts null keys in partition 0 (hash 42, pmod 4 = 2) */
                if (em_column_is_valid(&b->cols[0], r)) {
                    int32_t v = ((const int32_t *)b->cols[0].values->data)[r];
                    assert_false(seen[v]);
                    seen[v] = true;
                    int32_t h = em_murmur3_int(v, 42);
                    em_hash_partition_ids(&h, 1, 4, &p);
                } else {
                    int32_t h = 42;
                    em_hash_partition_ids(&h, 1, 4, &p);
                }
                assert_int_equal(rec[0], p);
            }
            rows += b->n_rows;
            em_batch_destroy(b);
            at += sizeof rec + (size_t)rec[2];
        }
        em_strbuf_reset(&out);
    }
    assert_int_equal(rows, 5000);
    em_task_destroy(t);
    em_fragment_destroy(f);
}

/* The partition Spark's hash partitioning into 4 gives a row (null keys hash as 42). */
static int32_t partition_of(const em_column *c, int64_t r) {
    int32_t h = 42, p = 0;
    if (em_column_is_valid(c, r))
        h = em_murmur3_int(((const int32_t *)c->values->data)[r], 42);
    em_hash_partition_ids(&h, 1, 4, &p);
    return p;
}

/* Runs the map task over rows [0, n) into a data file and checks Spark's
 * layout: partition p's records fill exactly lengths[p] bytes, in order,
 * each row there once and in its partition. */
static void check_map_file(int32_t n, const char *path) {
    em_error err = {0};
    em_fragment *f = NULL;
    EM_ASSERT_OK(em_fragment_create(MAP_FRAGMENT, strlen(MAP_FRAGMENT), &f, &err), &err);
    struct ArrowArrayStream in;
    make_stream(0, n, 256, &in);
    struct ArrowArrayStream *streams[] = {&in};
    em_fragment_task_inputs ti = {.streams = streams, .num_partitions = 1, .native_budget = -1};
    em_task *t = NULL;
    EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
    assert_int_equal(em_task_map_partitions(t), 4);
    int64_t lengths[4], rows = 0;
    EM_ASSERT_OK(em_task_map_write(t, path, lengths, &rows, &err), &err);
    assert_int_equal(rows, n);
    em_task_destroy(t);
    em_fragment_destroy(f);

    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    rewind(fp);
    uint8_t *data = malloc((size_t)size + 1);
    assert_int_equal(fread(data, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    int64_t total = 0;
    for (int p = 0; p < 4; p++)
        total += lengths[p];
    assert_int_equal(total, size);
    bool *seen = calloc((size_t)n, sizeof *seen);
    int64_t at = 0, got = 0;
    for (int p = 0; p < 4; p++) {
        int64_t end = at + lengths[p];
        while (at < end) {
            int32_t rec[3];
            assert_true(end - at >= (int64_t)sizeof rec);
            memcpy(rec, data + at, sizeof rec);
            assert_int_equal(rec[0], p);
            assert_true(rec[2] >= 0 && at + (int64_t)sizeof rec + rec[2] <= end);
            em_batch *b = NULL;
            EM_ASSERT_OK(em_block_read(data + at + sizeof rec, rec[2], NULL, &b, "map file", &err),
                         &err);
            assert_int_equal(rec[1], b->n_rows);
            for (int64_t r = 0; r < b->n_rows; r++) {
                assert_int_equal(partition_of(&b->cols[0], r), p);
                if (em_column_is_valid(&b->cols[0], r)) {
                    int32_t v = ((const int32_t *)b->cols[0].values->data)[r];
                    assert_true(v >= 0 && v < n);
                    assert_false(seen[v]);
                    seen[v] = true;
                }
            }
            got += b->n_rows;
            em_batch_destroy(b);
            at += (int64_t)sizeof rec + rec[2];
        }
    }
    assert_int_equal(got, n);
    for (int32_t v = 0; v < n; v++)
        assert_true(seen[v] == (v % 5 != 0)); /* every 5th value is a null */
    free(seen);
    free(data);
}

/* A map task's whole output as one data file: a small task whose blocks
 * all come at the end, and one whose partitions fill blocks while input is
 * still read (those go through the scratch file and are put in order). */
static void test_map_side_file(void **state) {
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/small.data", em_test_tmpdir("map-file"));
    check_map_file(100, path);
    snprintf(path, sizeof path, "%s/large.data", em_test_tmpdir("map-file"));
    check_map_file(60000, path);
}

/* A map task that fails part-way (its input breaks after rows have been
 * written) or cannot create its file leaves no file behind. */
static em_status broken_next(void *ctx, em_batch **out, em_error *err) {
    source *src = ctx;
    if (src->next >= 30000)
        return EM_FAIL(err, EM_ERR_IO, "input broke at row %d", src->next);
    return source_next(ctx, out, err);
}

static void test_map_side_file_failures(void **state) {
    (void)state;
    em_error err = {0};
    char path[4200];
    snprintf(path, sizeof path, "%s/broken.data", em_test_tmpdir("map-file-fail"));
    em_fragment *f = NULL;
    EM_ASSERT_OK(em_fragment_create(MAP_FRAGMENT, strlen(MAP_FRAGMENT), &f, &err), &err);
    source *src = malloc(sizeof *src);
    *src = (source){0, 60000, 256};
    em_schema sc = schema_a(em_type_make(EM_TYPE_INT));
    struct ArrowArrayStream in;
    EM_ASSERT_OK(em_arrow_stream_from_batches(&sc, broken_next, free_source, src, &in, &err), &err);
    em_schema_reset(&sc);
    struct ArrowArrayStream *streams[] = {&in};
    em_fragment_task_inputs ti = {.streams = streams, .num_partitions = 1, .native_budget = -1};
    em_task *t = NULL;
    EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
    int64_t lengths[4], rows = 0;
    assert_int_not_equal(em_task_map_write(t, path, lengths, &rows, &err), EM_OK);
    if (!strstr(err.msg, "input broke at row"))
        fail_msg("unexpected error: %s", err.msg);
    FILE *fp = fopen(path, "rb");
    assert_null(fp); /* nothing half-written */
    em_task_destroy(t);

    /* a folder that does not exist: the error names the file */
    make_stream(0, 10, 256, &in);
    EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
    memset(&err, 0, sizeof err);
    assert_int_equal(em_task_map_write(t, "/nonexistent-ember-dir/x.data", lengths, &rows, &err),
                     EM_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-ember-dir/x.data"));
    em_task_destroy(t);
    em_fragment_destroy(f);
}

/* A broadcast relation shared by two tasks: the fragment reads input 0 as
 * a broadcast (the relation), both tasks see all of it. */
static void test_relation_shared_by_tasks(void **state) {
    (void)state;
    em_error err = {0};
    char *json = strdup(FRAGMENT);
    char *b = strstr(json, "\"broadcast\":false");
    assert_non_null(b);
    memcpy(b, "\"broadcast\":true ", strlen("\"broadcast\":false"));
    em_fragment *f = NULL;
    EM_ASSERT_OK(em_fragment_create(json, strlen(json), &f, &err), &err);
    assert_true(em_fragment_input_is_broadcast(f, 0));
    struct ArrowArrayStream rs;
    make_stream(0, 100, 7, &rs);
    em_relation *rel = NULL;
    EM_ASSERT_OK(em_relation_create(&rs, &rel, &err), &err);
    assert_int_equal(em_relation_rows(rel), 100);
    for (int task = 0; task < 2; task++) {
        em_relation *rels[] = {rel};
        struct ArrowArrayStream *none[] = {NULL};
        em_fragment_task_inputs ti = {.partition = task, .num_partitions = 2, .streams = none,
                                      .relations = rels, .native_budget = -1};
        em_task *t = NULL;
        EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
        int64_t rows = 0;
        em_batch *out = NULL;
        em_status s;
        while ((s = em_task_next(t, &out, &err)) == EM_OK)
            rows += em_batch_rows(out);
        assert_int_equal(s, EM_DONE);
        assert_int_equal(rows, 79); /* 2..99 but the 19 multiples of 5 (nulls) */
        em_task_destroy(t);
    }
    em_relation_destroy(rel);
    em_fragment_destroy(f);
    free(json);
}

/* A stream of the one batch *ctx holds. */
static em_status one_batch(void *ctx, em_batch **out, em_error *err) {
    (void)err;
    em_batch **holder = ctx;
    if (!*holder)
        return EM_DONE;
    *out = *holder;
    *holder = NULL;
    return EM_OK;
}

static void free_holder(void *ctx) {
    em_batch **holder = ctx;
    em_batch_destroy(*holder);
    free(holder);
}

/* Timestamp literals come out as the instants Spark holds, whatever the session
 * zone: not shifted by its offset (the plan reader once printed them in UTC and the
 * compiler read them back in the session zone), the later of two instants with one
 * local time kept, and timestamp_ntz never shifted. */
/* One task of a one-input fragment over `rows` input rows, its output a stream. */
typedef struct frag_run {
    em_fragment *f;
    em_task *t;
    struct ArrowArrayStream out;
} frag_run;

static frag_run fragment_output(const char *json, int32_t rows) {
    frag_run r = {0};
    em_error err = {0};
    EM_ASSERT_OK(em_fragment_create(json, strlen(json), &r.f, &err), &err);
    struct ArrowArrayStream in;
    make_stream(0, rows, rows, &in);
    struct ArrowArrayStream *streams[] = {&in};
    em_fragment_task_inputs ti = {.partition = 0, .num_partitions = 1, .streams = streams,
                                  .native_budget = -1};
    EM_ASSERT_OK(em_fragment_task_create(r.f, &ti, &r.t, &err), &err);
    EM_ASSERT_OK(em_task_output_stream(r.t, &r.out, &err), &err);
    return r;
}

static void frag_run_end(frag_run *r) {
    r->out.release(&r->out);
    em_task_destroy(r->t);
    em_fragment_destroy(r->f);
}

static void test_timestamp_literals_in_session_zone(void **state) {
    (void)state;
    frag_run r = fragment_output(TS_FRAGMENT, 3);
    struct ArrowArrayStream out = r.out;
    struct ArrowSchema sc;
    assert_int_equal(out.get_schema(&out, &sc), 0);
    assert_int_equal(sc.n_children, 3);
    assert_string_equal(sc.children[0]->format, "tsu:UTC");
    assert_string_equal(sc.children[2]->format, "tsu:");
    const int64_t want[3] = {1546329600000000LL, 1572773400000000LL, 1546300800000000LL};
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray a;
        assert_int_equal(out.get_next(&out, &a), 0);
        if (!a.release)
            break;
        for (int c = 0; c < 3; c++) {
            const int64_t *v = a.children[c]->buffers[1];
            for (int64_t i = 0; i < a.length; i++)
                if (v[a.children[c]->offset + i] != want[c])
                    fail_msg("column %d row %lld: %lld, expected %lld", c, (long long)(rows + i),
                             (long long)v[a.children[c]->offset + i], (long long)want[c]);
        }
        rows += a.length;
        a.release(&a);
    }
    assert_int_equal(rows, 3);
    sc.release(&sc);
    frag_run_end(&r);
}

static void test_literals_exact(void **state) {
    (void)state;
    em_error err = {0};
    frag_run r = fragment_output(LIT_FRAGMENT, 2);
    struct ArrowArray a;
    assert_int_equal(r.out.get_next(&r.out, &a), 0);
    assert_non_null(a.release);
    assert_int_equal(a.length, 2);
    for (int64_t i = 0; i < a.length; i++) {
        const struct ArrowArray *d = a.children[0], *b = a.children[1];
        assert_int_equal(((const int32_t *)d->buffers[1])[d->offset + i], -735526);
        const int32_t *off = b->buffers[1];
        assert_int_equal(off[b->offset + i + 1] - off[b->offset + i], 4);
        assert_memory_equal((const char *)b->buffers[2] + off[b->offset + i], "aa\0\xff", 4);
    }
    a.release(&a);
    frag_run_end(&r);

    /* the row engine binds the same literals to the same values */
    em_plan *p = NULL;
    EM_ASSERT_OK(em_plan_read_json(LIT_FRAGMENT, strlen(LIT_FRAGMENT), NULL, &p, &err), &err);
    const em_expr *const *list = (const em_expr *const *)em_plan_root(p)->output;
    em_expr_compile_options o = {0};
    for (int c = 0; c < 2; c++) {
        em_rexpr *x = NULL;
        EM_ASSERT_OK(em_rexpr_bind(list[c]->args[0], NULL, 0, &o, &x, &err), &err);
        em_datum v;
        EM_ASSERT_OK(em_rexpr_eval(x, NULL, NULL, &v, &err), &err);
        assert_false(v.is_null);
        if (c == 0) {
            assert_int_equal(v.v.i64, -735526);
        } else {
            assert_int_equal(v.v.str.len, 4);
            assert_memory_equal(v.v.str.ptr, "aa\0\xff", 4);
        }
        em_rexpr_destroy(x);
    }
    em_plan_destroy(p);
}

static void test_failures(void **state) {
    (void)state;
    em_error err = {0};
    em_fragment *f = NULL;
    /* a fragment that does not read names the place */
    assert_int_equal(em_fragment_create("{\"format\":1,\"root\":[]}", 22, &f, &err), EM_ERR_PARSE);
    assert_null(f);
    assert_int_equal(em_fragment_create("{not json", 9, &f, &err), EM_ERR_PARSE);
    assert_non_null(strstr(err.msg, "fragment:1:"));
    /* an unknown Ember setting */
    char *bad = strdup(FRAGMENT);
    char *c = strstr(bad, "spark.sql.ansi.enabled");
    memcpy(c, "spark.ember.sql.nosuch ", 22);
    assert_int_equal(em_fragment_create(bad, strlen(bad), &f, &err), EM_ERR_INVALID);
    free(bad);

    EM_ASSERT_OK(em_fragment_create(FRAGMENT, strlen(FRAGMENT), &f, &err), &err);
    /* no stream for the input */
    em_fragment_task_inputs none = {.native_budget = -1};
    em_task *t = NULL;
    assert_int_equal(em_fragment_task_create(f, &none, &t, &err), EM_ERR_INVALID);
    assert_null(t);

    /* an input whose batches have another type than the plan's (bigint, not int) */
    struct ArrowArrayStream in;
    em_schema ls = schema_a(em_type_make(EM_TYPE_LONG));
    em_batch *lb = NULL;
    EM_ASSERT_OK(em_batch_create(&ls, 1, NULL, &lb, &err), &err);
    int64_t v = 5;
    EM_ASSERT_OK(em_column_append_fixed(&lb->cols[0], &v, &err), &err);
    lb->n_rows = 1;
    em_batch **holder = malloc(sizeof *holder);
    *holder = lb;
    EM_ASSERT_OK(em_arrow_stream_from_batches(&ls, one_batch, free_holder, holder, &in, &err), &err);
    em_schema_reset(&ls);
    struct ArrowArrayStream *streams[] = {&in};
    em_fragment_task_inputs ti = {.streams = streams, .native_budget = -1};
    EM_ASSERT_OK(em_fragment_task_create(f, &ti, &t, &err), &err);
    em_batch *out = NULL;
    assert_int_equal(em_task_next(t, &out, &err), EM_ERR_TYPE);
    assert_non_null(strstr(err.msg, "input 0"));
    em_task_destroy(t);

    /* cancellation stops a running task at its next batch */
    struct ArrowArrayStream in2;
    make_stream(0, 100000, 100, &in2);
    struct ArrowArrayStream *streams2[] = {&in2};
    em_fragment_task_inputs ti2 = {.streams = streams2, .native_budget = -1};
    EM_ASSERT_OK(em_fragment_task_create(f, &ti2, &t, &err), &err);
    EM_ASSERT_OK(em_task_next(t, &out, &err), &err);
    em_task_cancel(t);
    assert_int_equal(em_task_next(t, &out, &err), EM_ERR_CANCELLED);
    em_task_destroy(t);
    em_fragment_destroy(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragment_task_stream_in_out),
        cmocka_unit_test(test_fragment_lore_dump),
        cmocka_unit_test(test_map_side_blocks),
        cmocka_unit_test(test_map_side_file),
        cmocka_unit_test(test_map_side_file_failures),
        cmocka_unit_test(test_relation_shared_by_tasks),
        cmocka_unit_test(test_timestamp_literals_in_session_zone),
        cmocka_unit_test(test_literals_exact),
        cmocka_unit_test(test_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
