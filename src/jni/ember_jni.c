/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JNI entry points of dev.ember.spark.Native, over the public C API
 * (include/ember/spark.h, include/ember/task.h). Marshalling only: Java
 * strings in and out, handles as jlong, Arrow C streams by the address of
 * the struct Arrow Java allocated, and every Ember error thrown as
 * dev.ember.spark.EmberException carrying Ember's message (a Spark task
 * then fails with it and Spark retries as usual). Nothing here aborts the
 * process.
 *
 * Handles: a fragment (em_fragment) lives until fragmentDestroy; a task
 * (em_task, with the Spark memory consumer its native pool draws grants
 * from) until taskDestroy, which the plugin calls once, after the task's
 * output stream was released. taskCancel may run on another thread while
 * the task runs (the plugin serializes it with taskDestroy). A LORE replay
 * lives until loreReplayClose, called after its stream and arrays went.
 */
#include <jansson.h>
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/arrow.h"
#include "ember/chunk.h"
#include "ember/lore.h"
#include "ember/spark.h"
#include "ember/task.h"
#include "ember/value_text.h"
#include "jni/native.h"

#define EXC_CLASS "dev/ember/spark/EmberException"

static JavaVM *g_vm; /* set once by JNI_OnLoad */

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    g_vm = vm;
    return JNI_VERSION_1_8;
}

/* A task as Java holds it: the task and the Spark memory consumer its native
 * pool draws its grants from (a global reference, or NULL). */
typedef struct jni_task {
    em_task *t;
    jobject memory;
    jmethodID acquire;
    em_strbuf map_out; /* a map task's records, its memory kept from call to call */
} jni_task;

/* em_pool_grant_fn over EmberMemoryConsumer.acquire(long): long, called on
 * the task's own thread (a Java thread inside a JNI call). A Java exception
 * is cleared here (C code may still call into Java before returning) and
 * shows as a refused grant: the pool's out-of-memory error then says so. */
static int64_t grant_from_spark(void *ctx, int64_t bytes) {
    jni_task *jt = ctx;
    JNIEnv *env = NULL;
    if (!g_vm || (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK || !env)
        return 0;
    jlong got = (*env)->CallLongMethod(env, jt->memory, jt->acquire, (jlong)bytes);
    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
        return 0;
    }
    return got > 0 ? (int64_t)got : 0;
}

static void throw_msg(JNIEnv *env, const char *msg) {
    if ((*env)->ExceptionCheck(env))
        return; /* a Java exception (from an upcall) is already pending: keep it */
    jclass cls = (*env)->FindClass(env, EXC_CLASS);
    if (!cls)
        return; /* NoClassDefFoundError pending */
    (*env)->ThrowNew(env, cls, msg);
}

static void throw_err(JNIEnv *env, const em_error *err, em_status s) {
    char buf[EM_ERROR_MSG_CAP + 64];
    snprintf(buf, sizeof buf, "%s: %s", em_status_name(s),
             err->msg[0] ? err->msg : "(no message)");
    throw_msg(env, buf);
}

/* A Java string as modified UTF-8 (what Java sends is ASCII/UTF-8 text). */
typedef struct jtext {
    JNIEnv *env;
    jstring s;
    const char *p;
} jtext;

static bool jtext_get(JNIEnv *env, jstring s, jtext *t) {
    t->env = env;
    t->s = s;
    t->p = s ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
    if (s && !t->p) {
        throw_msg(env, "out of memory reading a string");
        return false;
    }
    return true;
}

static void jtext_release(jtext *t) {
    if (t->p)
        (*t->env)->ReleaseStringUTFChars(t->env, t->s, t->p);
    t->p = NULL;
}

/* Two strings, or neither held (an exception pending) on failure. */
static bool jtext_get2(JNIEnv *env, jstring a, jstring b, jtext *ta, jtext *tb) {
    if (!jtext_get(env, a, ta))
        return false;
    if (!jtext_get(env, b, tb)) {
        jtext_release(ta);
        return false;
    }
    return true;
}

static jstring new_string(JNIEnv *env, const char *s, size_t n) {
    /* Ember's text is UTF-8; NewStringUTF wants modified UTF-8, which differs
     * only for NUL and supplementary characters: go through a byte array */
    jbyteArray bytes = (*env)->NewByteArray(env, (jsize)n);
    if (!bytes)
        return NULL;
    (*env)->SetByteArrayRegion(env, bytes, 0, (jsize)n, (const jbyte *)s);
    jclass cls = (*env)->FindClass(env, "java/lang/String");
    jmethodID ctor = cls ? (*env)->GetMethodID(env, cls, "<init>", "([BLjava/lang/String;)V") : NULL;
    jstring charset = (*env)->NewStringUTF(env, "UTF-8");
    if (!ctor || !charset)
        return NULL;
    return (jstring)(*env)->NewObject(env, cls, ctor, bytes, charset);
}

JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_version(JNIEnv *env, jclass cls) {
    (void)cls;
    return (*env)->NewStringUTF(env, EM_VERSION);
}

JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_plan(JNIEnv *env, jclass cls, jstring plan,
                                                          jstring conf) {
    (void)cls;
    jtext p, c;
    if (!jtext_get2(env, plan, conf, &p, &c))
        return NULL;
    em_error err;
    memset(&err, 0, sizeof err);
    char *out = NULL;
    size_t n = 0;
    em_status s = p.p ? em_spark_plan(p.p, strlen(p.p), c.p, c.p ? strlen(c.p) : 0, &out, &n, &err)
                      : EM_FAIL(&err, EM_ERR_INVALID, "no plan");
    jtext_release(&p);
    jtext_release(&c);
    if (s != EM_OK) {
        throw_err(env, &err, s);
        return NULL;
    }
    jstring r = new_string(env, out ? out : "", out ? n : 0);
    free(out);
    return r;
}

/* The readers check (em_plan_readers_agree): "" when the text and the JSON
 * of one plan read into one model, else the first difference. */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_planReadersAgree(JNIEnv *env, jclass cls,
                                                                      jstring text,
                                                                      jstring json) {
    (void)cls;
    jtext t, j;
    if (!jtext_get2(env, text, json, &t, &j))
        return NULL;
    em_error err;
    memset(&err, 0, sizeof err);
    em_strbuf diff;
    em_strbuf_init(&diff);
    bool same = false;
    em_status s = t.p && j.p ? em_plan_readers_agree(t.p, strlen(t.p), j.p, strlen(j.p), NULL,
                                                     &same, &diff, &err)
                             : EM_FAIL(&err, EM_ERR_INVALID, "no plan");
    jtext_release(&t);
    jtext_release(&j);
    jstring r = NULL;
    if (s == EM_OK)
        r = new_string(env, same ? "" : em_strbuf_cstr(&diff), same ? 0 : diff.len);
    else
        throw_err(env, &err, s);
    em_strbuf_reset(&diff);
    return r;
}

/* sparkError(message): em_spark_error's JSON, or null when the error is Ember's own. */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_sparkError(JNIEnv *env, jclass cls,
                                                                jstring msg) {
    (void)cls;
    jtext m;
    if (!jtext_get(env, msg, &m))
        return NULL;
    char *out = em_spark_error(m.p);
    jtext_release(&m);
    jstring r = out ? new_string(env, out, strlen(out)) : NULL;
    free(out);
    return r;
}

JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_fragmentCreate(JNIEnv *env, jclass cls,
                                                                  jstring spec) {
    (void)cls;
    jtext t;
    if (!jtext_get(env, spec, &t))
        return 0;
    em_error err;
    memset(&err, 0, sizeof err);
    em_fragment *f = NULL;
    em_status s = t.p ? em_fragment_create(t.p, strlen(t.p), &f, &err)
                      : EM_FAIL(&err, EM_ERR_INVALID, "no fragment");
    jtext_release(&t);
    if (s != EM_OK) {
        throw_err(env, &err, s);
        return 0;
    }
    return (jlong)(intptr_t)f;
}

JNIEXPORT void JNICALL Java_dev_ember_spark_Native_fragmentDestroy(JNIEnv *env, jclass cls,
                                                                  jlong h) {
    (void)env;
    (void)cls;
    em_fragment_destroy((em_fragment *)(intptr_t)h);
}

/* Which inputs are broadcasts, in input order. */
JNIEXPORT jbooleanArray JNICALL Java_dev_ember_spark_Native_fragmentBroadcastInputs(JNIEnv *env,
                                                                                   jclass cls,
                                                                                   jlong h) {
    (void)cls;
    const em_fragment *f = (const em_fragment *)(intptr_t)h;
    int n = em_fragment_n_inputs(f);
    jbooleanArray a = (*env)->NewBooleanArray(env, n);
    for (int i = 0; a && i < n; i++) {
        jboolean b = em_fragment_input_is_broadcast(f, i) ? JNI_TRUE : JNI_FALSE;
        (*env)->SetBooleanArrayRegion(env, a, i, 1, &b);
    }
    return a;
}

/* The number of reduce partitions of a map fragment (root an exchange), or 0. */
JNIEXPORT jint JNICALL Java_dev_ember_spark_Native_fragmentMapPartitions(JNIEnv *env, jclass cls,
                                                                       jlong h) {
    (void)env;
    (void)cls;
    return em_fragment_map_partitions((const em_fragment *)(intptr_t)h);
}

/* The scans' source indices, in the order taskCreate takes their splits. */
JNIEXPORT jintArray JNICALL Java_dev_ember_spark_Native_fragmentScans(JNIEnv *env, jclass cls,
                                                                     jlong h) {
    (void)cls;
    const em_fragment *f = (const em_fragment *)(intptr_t)h;
    int n = em_fragment_n_scans(f);
    jintArray a = (*env)->NewIntArray(env, n);
    for (int i = 0; a && i < n; i++) {
        jint v = em_fragment_scan_source(f, i);
        (*env)->SetIntArrayRegion(env, a, i, 1, &v);
    }
    return a;
}

/* The splits JSON: one array per scan (fragmentScans order) of
 * {"path", "start", "length", "partitionNames": [name, ...],
 *  "partitionValues": [text or null, ...]}. */
typedef struct task_splits {
    int n_scans;
    int *n;
    em_file_split **splits;
    const char ***values; /* per scan, per file: the names' and values' arrays, one block */
} task_splits;

static void splits_free(task_splits *ts) {
    for (int i = 0; i < ts->n_scans; i++) {
        free(ts->splits ? ts->splits[i] : NULL);
        if (ts->values && ts->values[i])
            for (int k = 0; ts->n && k < ts->n[i]; k++)
                free((void *)ts->values[i][k]);
        free(ts->values ? ts->values[i] : NULL);
    }
    free(ts->n);
    free(ts->splits);
    free(ts->values);
}

static em_status splits_read(json_t *doc, int n_scans, task_splits *ts, em_error *err) {
    memset(ts, 0, sizeof *ts);
    if (!json_is_array(doc) || (int)json_array_size(doc) != n_scans)
        return EM_FAIL(err, EM_ERR_INVALID, "task splits: expected an array of %d scans", n_scans);
    ts->n_scans = n_scans;
    ts->n = calloc((size_t)n_scans + 1, sizeof *ts->n);
    ts->splits = calloc((size_t)n_scans + 1, sizeof *ts->splits);
    ts->values = calloc((size_t)n_scans + 1, sizeof *ts->values);
    if (!ts->n || !ts->splits || !ts->values)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading task splits");
    for (int i = 0; i < n_scans; i++) {
        json_t *files = json_array_get(doc, (size_t)i);
        if (!json_is_array(files))
            return EM_FAIL(err, EM_ERR_INVALID, "task splits: scan %d: expected an array", i);
        size_t nf = json_array_size(files);
        ts->splits[i] = calloc(nf + 1, sizeof *ts->splits[i]);
        ts->values[i] = calloc(nf + 1, sizeof *ts->values[i]);
        if (!ts->splits[i] || !ts->values[i])
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading task splits");
        for (size_t k = 0; k < nf; k++) {
            json_t *f = json_array_get(files, k);
            json_t *path = json_object_get(f, "path"), *start = json_object_get(f, "start");
            json_t *len = json_object_get(f, "length"), *pv = json_object_get(f, "partitionValues");
            json_t *pn = json_object_get(f, "partitionNames");
            if (!json_is_string(path) || !json_is_integer(start) || !json_is_integer(len))
                return EM_FAIL(err, EM_ERR_INVALID,
                               "task splits: scan %d file %zu: expected path, start, length", i, k);
            em_file_split *sp = &ts->splits[i][ts->n[i]];
            sp->path = json_string_value(path); /* borrowed from doc */
            sp->start = json_integer_value(start);
            sp->length = json_integer_value(len);
            size_t nv = json_is_array(pv) ? json_array_size(pv) : 0;
            if (nv != (json_is_array(pn) ? json_array_size(pn) : 0))
                return EM_FAIL(err, EM_ERR_INVALID,
                               "task splits: scan %d file %zu: partitionNames and "
                               "partitionValues differ in length",
                               i, k);
            if (nv) {
                const char **names = calloc(2 * nv, sizeof *names);
                if (!names)
                    return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading task splits");
                ts->values[i][ts->n[i]] = (const char *)names; /* freed with the splits */
                const char **vals = names + nv;
                for (size_t v = 0; v < nv; v++) {
                    json_t *x = json_array_get(pv, v), *nm = json_array_get(pn, v);
                    if (!json_is_string(nm) || !(json_is_string(x) || json_is_null(x))) {
                        ts->n[i]++; /* so the block is freed */
                        return EM_FAIL(err, EM_ERR_INVALID,
                                       "task splits: scan %d file %zu: partition column %zu: "
                                       "expected a name and a text or null",
                                       i, k, v);
                    }
                    names[v] = json_string_value(nm);
                    vals[v] = json_is_string(x) ? json_string_value(x) : NULL;
                }
                sp->n_partition_values = (int)nv;
                sp->partition_names = names;
                sp->partition_values = vals;
            }
            ts->n[i]++;
        }
    }
    return EM_OK;
}

JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_taskCreate(
    JNIEnv *env, jclass cls, jlong fh, jint partition, jint num_partitions, jstring splits_json,
    jlongArray input_streams, jlongArray input_relations, jlong out_stream, jstring spill_dir,
    jlong native_budget, jobject memory, jlong grant_chunk) {
    (void)cls;
    const em_fragment *f = (const em_fragment *)(intptr_t)fh;
    em_error err;
    memset(&err, 0, sizeof err);
    int n_in = em_fragment_n_inputs(f);
    jsize n_given = input_streams ? (*env)->GetArrayLength(env, input_streams) : 0;
    if (n_given != n_in) {
        char msg[128];
        snprintf(msg, sizeof msg, "taskCreate: %d input streams for a fragment of %d inputs",
                 (int)n_given, n_in);
        throw_msg(env, msg);
        return 0;
    }
    jlong *addrs = n_in ? (*env)->GetLongArrayElements(env, input_streams, NULL) : NULL;
    struct ArrowArrayStream **streams = calloc((size_t)n_in + 1, sizeof *streams);
    for (int i = 0; streams && i < n_in; i++)
        streams[i] = (struct ArrowArrayStream *)(intptr_t)addrs[i];
    if (addrs)
        (*env)->ReleaseLongArrayElements(env, input_streams, addrs, JNI_ABORT);
    jsize n_rel = input_relations ? (*env)->GetArrayLength(env, input_relations) : 0;
    jlong *rels = n_rel == n_in && n_in ? (*env)->GetLongArrayElements(env, input_relations, NULL)
                                        : NULL;
    em_relation **relations = calloc((size_t)n_in + 1, sizeof *relations);
    for (int i = 0; relations && rels && i < n_in; i++)
        relations[i] = (em_relation *)(intptr_t)rels[i];
    if (rels)
        (*env)->ReleaseLongArrayElements(env, input_relations, rels, JNI_ABORT);
    jtext sj, sd;
    if (!streams || !relations) {
        free(streams);
        free(relations);
        throw_msg(env, "out of memory creating a task");
        return 0;
    }
    if (!jtext_get2(env, splits_json, spill_dir, &sj, &sd)) {
        free(streams);
        free(relations);
        return 0;
    }
    json_error_t je;
    json_t *doc = sj.p ? json_loads(sj.p, 0, &je) : json_array();
    task_splits ts;
    memset(&ts, 0, sizeof ts);
    em_status s = doc ? splits_read(doc, em_fragment_n_scans(f), &ts, &err)
                      : EM_FAIL(&err, EM_ERR_INVALID, "task splits:%d:%d: %s", je.line,
                                je.column, je.text);
    em_task *t = NULL;
    if (s == EM_OK) {
        em_fragment_task_inputs in;
        memset(&in, 0, sizeof in);
        in.partition = partition;
        in.num_partitions = num_partitions;
        in.n_splits = ts.n;
        in.splits = (const em_file_split *const *)ts.splits;
        in.streams = streams;
        in.relations = relations;
        in.spill_dir = sd.p;
        in.native_budget = native_budget;
        s = em_fragment_task_create(f, &in, &t, &err);
    } else {
        /* the streams are ours to release when the task was not made */
        for (int i = 0; i < n_in; i++)
            if (streams[i] && streams[i]->release)
                streams[i]->release(streams[i]);
    }
    jni_task *jt = s == EM_OK ? calloc(1, sizeof *jt) : NULL;
    if (s == EM_OK && !jt)
        s = EM_FAIL(&err, EM_ERR_NOMEM, "out of memory creating a task");
    if (s == EM_OK) {
        jt->t = t;
        if (memory) {
            jclass mc = (*env)->GetObjectClass(env, memory);
            jt->acquire = mc ? (*env)->GetMethodID(env, mc, "acquire", "(J)J") : NULL;
            jt->memory = jt->acquire ? (*env)->NewGlobalRef(env, memory) : NULL;
            if (!jt->memory) {
                (*env)->ExceptionClear(env);
                s = EM_FAIL(&err, EM_ERR_INVALID, "taskCreate: the memory consumer has no "
                                                  "acquire(long): long");
            } else
                em_pool_set_grant(em_task_native_pool(t), grant_from_spark, jt, grant_chunk,
                                  "Spark's memory manager (spark.memory.offHeap.size)");
        }
    }
    /* a map task (the fragment's root is an exchange) has no output stream */
    if (s == EM_OK && out_stream)
        s = em_task_output_stream(t, (struct ArrowArrayStream *)(intptr_t)out_stream, &err);
    splits_free(&ts);
    json_decref(doc);
    jtext_release(&sj);
    jtext_release(&sd);
    free(streams);
    free(relations);
    if (s != EM_OK) {
        em_task_destroy(t);
        if (jt && jt->memory)
            (*env)->DeleteGlobalRef(env, jt->memory);
        free(jt);
        throw_err(env, &err, s);
        return 0;
    }
    return (jlong)(intptr_t)jt;
}

JNIEXPORT void JNICALL Java_dev_ember_spark_Native_taskCancel(JNIEnv *env, jclass cls, jlong h) {
    (void)env;
    (void)cls;
    em_task_cancel(((jni_task *)(intptr_t)h)->t);
}

typedef struct metrics_out {
    em_strbuf sb;
    bool first;
} metrics_out;

static void put_metrics(void *ctx, const em_plan_node *node, const char *op_name,
                        const em_op_metrics *m) {
    metrics_out *mo = ctx;
    em_strbuf_appendf(&mo->sb, NULL,
                      "%s{\"source\":%d,\"op\":\"%s\",\"rows\":%lld,\"batches\":%lld,"
                      "\"timeNs\":%lld,\"selfNs\":%lld,\"peakBytes\":%lld,\"spillBytes\":%lld}",
                      mo->first ? "" : ",", node ? node->source_index : -1,
                      op_name ? op_name : "?", (long long)m->rows_out, (long long)m->batches_out,
                      (long long)m->time_ns, (long long)m->self_ns, (long long)m->peak_bytes,
                      (long long)m->spill_bytes);
    mo->first = false;
}

/* Per operator of the task's tree: its node's source index and metrics,
 * plus the task's pool peaks. */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_taskMetrics(JNIEnv *env, jclass cls,
                                                                 jlong h) {
    (void)cls;
    em_task *t = ((jni_task *)(intptr_t)h)->t;
    metrics_out mo = {.first = true};
    em_strbuf_init(&mo.sb);
    em_strbuf_appendf(&mo.sb, NULL,
                      "{\"peakNative\":%lld,\"peakRow\":%lld,\"granted\":%lld,\"ops\":[",
                      (long long)em_pool_peak(em_task_native_pool(t)),
                      (long long)em_pool_peak(em_task_row_pool(t)),
                      (long long)em_pool_granted(em_task_native_pool(t)));
    em_task_node_metrics(t, put_metrics, &mo);
    em_strbuf_appends(&mo.sb, "]}", NULL);
    jstring r = em_strbuf_status(&mo.sb) == EM_OK
                    ? new_string(env, em_strbuf_cstr(&mo.sb), mo.sb.len)
                    : NULL;
    em_strbuf_reset(&mo.sb);
    if (!r)
        throw_msg(env, "out of memory writing task metrics");
    return r;
}

/* A map task's next records [int32 partition][int32 rows][int32 length][block] (about
 * MAP_RECORDS_TARGET bytes of them), or null at the end. */
#define MAP_RECORDS_TARGET ((int64_t)1 << 20)

JNIEXPORT jbyteArray JNICALL Java_dev_ember_spark_Native_taskMapNext(JNIEnv *env, jclass cls,
                                                                   jlong h) {
    (void)cls;
    jni_task *jt = (jni_task *)(intptr_t)h;
    em_error err;
    memset(&err, 0, sizeof err);
    em_strbuf *sb = &jt->map_out;
    em_strbuf_clear(sb);
    em_status s = em_task_map_next(jt->t, sb, MAP_RECORDS_TARGET, &err);
    jbyteArray r = NULL;
    if (s == EM_OK) {
        r = (*env)->NewByteArray(env, (jsize)sb->len);
        if (r)
            (*env)->SetByteArrayRegion(env, r, 0, (jsize)sb->len, (const jbyte *)sb->data);
    }
    if (s != EM_OK && s != EM_DONE) {
        em_error_prefix(&err, "%s", em_status_name(s));
        throw_msg(env, err.msg);
    }
    return r;
}

/* The map task run to its end into the shuffle data file at path
 * (em_task_map_write): partition p's bytes at [p], then the rows written,
 * then their size as Spark's UnsafeRows. */
JNIEXPORT jlongArray JNICALL Java_dev_ember_spark_Native_taskMapWrite(JNIEnv *env, jclass cls,
                                                                     jlong h, jstring jpath) {
    (void)cls;
    jni_task *jt = (jni_task *)(intptr_t)h;
    em_error err;
    memset(&err, 0, sizeof err);
    int np = em_task_map_partitions(jt->t);
    const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
    int64_t *lengths = calloc((size_t)np + 2, sizeof *lengths);
    if (!path || !lengths) {
        if (path)
            (*env)->ReleaseStringUTFChars(env, jpath, path);
        free(lengths);
        throw_msg(env, "out of memory writing a shuffle file");
        return NULL;
    }
    em_status s = em_task_map_write(jt->t, path, lengths, &lengths[np], &err);
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    lengths[np + 1] = em_task_map_row_bytes(jt->t);
    jlongArray r = NULL;
    if (s == EM_OK && (r = (*env)->NewLongArray(env, np + 2)))
        (*env)->SetLongArrayRegion(env, r, 0, np + 2, (const jlong *)lengths);
    free(lengths);
    if (s != EM_OK)
        throw_err(env, &err, s);
    return r;
}

/* A shuffle block held in a Java byte[] decoded into a new batch. */
static em_status block_of_java(JNIEnv *env, jbyteArray block, em_batch **out, em_error *err) {
    jsize n = (*env)->GetArrayLength(env, block);
    jbyte *p = (*env)->GetPrimitiveArrayCritical(env, block, NULL);
    if (!p)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory reading a shuffle block");
    em_status s = em_block_read((const uint8_t *)p, n, NULL, out, "shuffle block", err);
    (*env)->ReleasePrimitiveArrayCritical(env, block, p, JNI_ABORT);
    return s;
}

/* A shuffle block as an Arrow struct array and its schema, exported into
 * the structs at the two addresses (Arrow Java's, which then owns them). */
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_blockToArrow(JNIEnv *env, jclass cls,
                                                               jbyteArray block, jlong array,
                                                               jlong schema) {
    (void)cls;
    em_error err;
    memset(&err, 0, sizeof err);
    em_batch *b = NULL;
    em_status s = block_of_java(env, block, &b, &err);
    if (s == EM_OK)
        s = em_arrow_export_schema(&b->schema, (struct ArrowSchema *)(intptr_t)schema, &err);
    if (s == EM_OK) {
        s = em_arrow_export_batch(b, (struct ArrowArray *)(intptr_t)array, &err);
        if (s != EM_OK) {
            struct ArrowSchema *sc = (struct ArrowSchema *)(intptr_t)schema;
            if (sc->release)
                sc->release(sc);
        }
    }
    em_batch_destroy(b);
    if (s != EM_OK)
        throw_err(env, &err, s);
}

/* A task input of Ember's own shuffle blocks, pulled on the task's thread
 * from a Java dev.ember.spark.EmberBlockSource (its byte[] next(), null at
 * the end): each block decoded straight into a batch, with no Arrow Java
 * vectors between Spark's shuffle reader and the task. A Java exception
 * there (a fetch failure, a kill) is Spark's to report: the source records
 * it before it propagates, and here it only ends the stream with an error. */
typedef struct block_source {
    jobject source; /* a global reference */
    jmethodID next;
} block_source;

static em_status block_source_next(void *ctx, em_batch **out, em_error *err) {
    block_source *bs = ctx;
    JNIEnv *env = NULL;
    if (!g_vm || (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK || !env)
        return EM_FAIL(err, EM_ERR_INTERNAL, "shuffle input read on a thread the JVM does not know");
    jbyteArray block = (*env)->CallObjectMethod(env, bs->source, bs->next);
    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionClear(env);
        return EM_FAIL(err, EM_ERR_IO, "Spark's shuffle read failed (the task reports Spark's error)");
    }
    if (!block)
        return EM_DONE;
    em_status s = block_of_java(env, block, out, err);
    (*env)->DeleteLocalRef(env, block);
    return s;
}

static void block_source_free(void *ctx) {
    block_source *bs = ctx;
    JNIEnv *env = NULL;
    if (bs->source && g_vm && (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8) == JNI_OK && env)
        (*env)->DeleteGlobalRef(env, bs->source);
    free(bs);
}

JNIEXPORT void JNICALL Java_dev_ember_spark_Native_blockStream(JNIEnv *env, jclass cls,
                                                              jobject source, jlong schema,
                                                              jlong stream) {
    (void)cls;
    em_error err;
    memset(&err, 0, sizeof err);
    struct ArrowSchema *sc = (struct ArrowSchema *)(intptr_t)schema;
    em_schema es;
    memset(&es, 0, sizeof es);
    em_status s = em_arrow_import_schema(sc, &es, &err);
    if (sc->release)
        sc->release(sc);
    block_source *bs = NULL;
    if (s == EM_OK && !(bs = calloc(1, sizeof *bs)))
        s = EM_FAIL(&err, EM_ERR_NOMEM, "out of memory reading a shuffle");
    if (s == EM_OK) {
        jclass c = (*env)->GetObjectClass(env, source);
        bs->next = (*env)->GetMethodID(env, c, "next", "()[B");
        bs->source = bs->next ? (*env)->NewGlobalRef(env, source) : NULL;
        if (!bs->source) {
            free(bs);
            em_schema_reset(&es);
            return; /* NoSuchMethodError or OutOfMemoryError pending */
        }
        s = em_arrow_stream_from_batches(&es, block_source_next, block_source_free, bs,
                                         (struct ArrowArrayStream *)(intptr_t)stream, &err);
        if (s != EM_OK)
            block_source_free(bs);
    }
    em_schema_reset(&es);
    if (s != EM_OK)
        throw_err(env, &err, s);
}

/* A broadcast held for many tasks, drained from the stream at the address
 * (Arrow Java's, moved in). */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_relationCreate(JNIEnv *env, jclass cls,
                                                                  jlong stream) {
    (void)cls;
    em_error err;
    memset(&err, 0, sizeof err);
    em_relation *r = NULL;
    em_status s = em_relation_create((struct ArrowArrayStream *)(intptr_t)stream, &r, &err);
    if (s != EM_OK) {
        throw_err(env, &err, s);
        return 0;
    }
    return (jlong)(intptr_t)r;
}

/* A broadcast held for many tasks, from the blocks an Ember broadcast
 * exchange collected. */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_relationFromBlocks(JNIEnv *env, jclass cls,
                                                                      jobjectArray blocks) {
    (void)cls;
    jsize n = blocks ? (*env)->GetArrayLength(env, blocks) : 0;
    const uint8_t **ptrs = calloc((size_t)n + 1, sizeof *ptrs);
    int64_t *lens = calloc((size_t)n + 1, sizeof *lens);
    jbyteArray *arrays = calloc((size_t)n + 1, sizeof *arrays);
    em_error err;
    memset(&err, 0, sizeof err);
    em_status s = ptrs && lens && arrays ? EM_OK
                                         : EM_FAIL(&err, EM_ERR_NOMEM, "out of memory");
    jsize got = 0;
    for (; s == EM_OK && got < n; got++) {
        arrays[got] = (jbyteArray)(*env)->GetObjectArrayElement(env, blocks, got);
        lens[got] = arrays[got] ? (*env)->GetArrayLength(env, arrays[got]) : 0;
        ptrs[got] = arrays[got] ? (const uint8_t *)(*env)->GetByteArrayElements(env, arrays[got], NULL)
                                : NULL;
        if (!ptrs[got])
            s = EM_FAIL(&err, EM_ERR_NOMEM, "broadcast block %d: not readable", (int)got);
    }
    em_relation *r = NULL;
    if (s == EM_OK)
        s = em_relation_from_blocks(ptrs, lens, (int)n, &r, &err);
    for (jsize i = 0; i < got; i++) {
        if (ptrs[i])
            (*env)->ReleaseByteArrayElements(env, arrays[i], (jbyte *)ptrs[i], JNI_ABORT);
        if (arrays[i])
            (*env)->DeleteLocalRef(env, arrays[i]);
    }
    free(ptrs);
    free(lens);
    free(arrays);
    if (s != EM_OK) {
        throw_err(env, &err, s);
        return 0;
    }
    return (jlong)(intptr_t)r;
}

JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_relationBytes(JNIEnv *env, jclass cls,
                                                                 jlong h) {
    (void)env;
    (void)cls;
    return (jlong)em_relation_bytes((const em_relation *)(intptr_t)h);
}

JNIEXPORT void JNICALL Java_dev_ember_spark_Native_relationDestroy(JNIEnv *env, jclass cls,
                                                                  jlong h) {
    (void)env;
    (void)cls;
    em_relation_destroy((em_relation *)(intptr_t)h);
}

/* Gives back what Spark granted beyond what the task's native pool uses
 * (Spark asks when another consumer of the task needs memory); returns the
 * bytes given back. */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_taskReleaseSlack(JNIEnv *env, jclass cls,
                                                                    jlong h) {
    (void)env;
    (void)cls;
    jni_task *jt = (jni_task *)(intptr_t)h;
    return jt ? (jlong)em_pool_return_slack(em_task_native_pool(jt->t)) : 0;
}

JNIEXPORT void JNICALL Java_dev_ember_spark_Native_taskDestroy(JNIEnv *env, jclass cls, jlong h) {
    (void)cls;
    jni_task *jt = (jni_task *)(intptr_t)h;
    if (!jt)
        return;
    em_task_destroy(jt->t);
    if (jt->memory)
        (*env)->DeleteGlobalRef(env, jt->memory);
    em_strbuf_reset(&jt->map_out);
    free(jt);
}

/* ------------------------------------------------------------ LORE restore */

/* The dump at a Java path; false with the Java exception pending. */
static bool open_dump(JNIEnv *env, jstring dir, em_lore_dump **out) {
    em_error err;
    memset(&err, 0, sizeof err);
    jtext t;
    if (!jtext_get(env, dir, &t))
        return false;
    em_status s = t.p ? em_lore_dump_open(t.p, out, &err)
                      : EM_FAIL(&err, EM_ERR_INVALID, "no LORE dump folder");
    jtext_release(&t);
    if (s != EM_OK)
        throw_err(env, &err, s);
    return s == EM_OK;
}

/* What loreDescribe tells the driver of a dump: the operator, the
 * partitions dumped and the output's columns (Spark's type names). */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_loreDescribe(JNIEnv *env, jclass cls,
                                                                  jstring dir) {
    (void)cls;
    em_lore_dump *dump = NULL;
    if (!open_dump(env, dir, &dump))
        return NULL;
    json_t *parts = json_array(), *cols = json_array();
    for (int i = 0; i < em_lore_dump_n_partitions(dump); i++)
        json_array_append_new(parts, json_integer(em_lore_dump_partition_at(dump, i)));
    const em_schema *sc = em_lore_dump_schema(dump);
    for (int i = 0; i < sc->n_fields; i++) {
        char type[64];
        em_type_format(sc->fields[i].type, type, sizeof type);
        json_array_append_new(cols, json_pack("{s:s, s:s}", "name", sc->fields[i].name, "type",
                                              type));
    }
    json_t *j = json_pack("{s:s, s:o, s:o}", "operator", em_lore_dump_operator(dump), "partitions",
                          parts, "columns", cols);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    em_lore_dump_close(dump);
    if (!text) {
        throw_msg(env, "out of memory describing a LORE dump");
        return NULL;
    }
    jstring r = new_string(env, text, strlen(text));
    free(text);
    return r;
}

/* A replay in a Spark task: the operator run over one dumped partition, its
 * output handed out as an Arrow stream. The batches are charged to the
 * replay's pool, which loreReplayClose frees once Java released every array. */
typedef struct lore_replay {
    em_lore_dump *dump;
    em_pool *pool;
    em_batch_list out;
    int64_t next;
} lore_replay;

static em_status lore_replay_next(void *ctx, em_batch **out, em_error *err) {
    (void)err;
    lore_replay *r = ctx;
    if (r->next >= r->out.n_batches)
        return EM_DONE;
    *out = r->out.batches[r->next];
    r->out.batches[r->next++] = NULL; /* the stream's now */
    return EM_OK;
}

static void lore_replay_free(lore_replay *r) {
    if (!r)
        return;
    em_batch_list_reset(&r->out);
    em_lore_dump_close(r->dump);
    em_pool_destroy(r->pool);
    free(r);
}

JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_loreReplayOpen(JNIEnv *env, jclass cls,
                                                                  jstring dir, jint partition,
                                                                  jlong stream) {
    (void)cls;
    em_error err;
    memset(&err, 0, sizeof err);
    lore_replay *r = calloc(1, sizeof *r);
    if (!r || !(r->pool = em_pool_create("LORE replay", NULL, -1))) {
        free(r);
        throw_msg(env, "out of memory replaying a LORE dump");
        return 0;
    }
    if (!open_dump(env, dir, &r->dump)) {
        lore_replay_free(r);
        return 0;
    }
    em_status s = em_lore_replay(r->dump, partition, r->pool, &r->out, NULL, &err);
    if (s == EM_OK)
        s = em_arrow_stream_from_batches(em_lore_dump_schema(r->dump), lore_replay_next, NULL, r,
                                         (struct ArrowArrayStream *)(intptr_t)stream, &err);
    if (s != EM_OK) {
        lore_replay_free(r);
        throw_err(env, &err, s);
        return 0;
    }
    return (jlong)(intptr_t)r;
}

JNIEXPORT void JNICALL Java_dev_ember_spark_Native_loreReplayClose(JNIEnv *env, jclass cls,
                                                                  jlong h) {
    (void)env;
    (void)cls;
    lore_replay_free((lore_replay *)(intptr_t)h);
}
