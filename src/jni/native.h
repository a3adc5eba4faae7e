/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native methods of dev.ember.spark.Native (spark/.../Native.scala), as
 * `javac -h` would declare them; ember_jni.c implements them.
 */
#ifndef EM_JNI_NATIVE_H
#define EM_JNI_NATIVE_H

#include <jni.h>

JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_version(JNIEnv *env, jclass cls);
/* plan(planJson, confJson): em_spark_plan's answer (include/ember/spark.h). */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_plan(JNIEnv *env, jclass cls, jstring plan,
                                                          jstring conf);
/* planReadersAgree(explainFormattedText, planJson) -> "" or the first difference. */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_planReadersAgree(JNIEnv *env, jclass cls,
                                                                      jstring text, jstring json);
/* sparkError(message) -> em_spark_error's JSON, or null (include/ember/spark.h). */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_sparkError(JNIEnv *env, jclass cls,
                                                                jstring msg);
/* fragmentCreate(taskSpecJson) -> handle (include/ember/task.h, em_fragment). */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_fragmentCreate(JNIEnv *env, jclass cls,
                                                                  jstring spec);
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_fragmentDestroy(JNIEnv *env, jclass cls,
                                                                  jlong h);
JNIEXPORT jbooleanArray JNICALL Java_dev_ember_spark_Native_fragmentBroadcastInputs(JNIEnv *env,
                                                                                   jclass cls,
                                                                                   jlong h);
JNIEXPORT jintArray JNICALL Java_dev_ember_spark_Native_fragmentScans(JNIEnv *env, jclass cls,
                                                                     jlong h);
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved);
/* taskCreate(fragment, partition, numPartitions, splitsJson, inputStreamAddresses,
 * inputRelations, outputStreamAddress, spillDir, nativeBudget, memoryConsumer,
 * grantChunk) -> handle; the input streams are moved into the task (a
 * broadcast input may be a relation handle instead, its stream 0), the
 * output stream is filled (0: a map task); memoryConsumer (may be null) has
 * acquire(long): long, from which the task's native pool takes grants of
 * grantChunk bytes at least. */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_taskCreate(
    JNIEnv *env, jclass cls, jlong fh, jint partition, jint num_partitions, jstring splits_json,
    jlongArray input_streams, jlongArray input_relations, jlong out_stream, jstring spill_dir,
    jlong native_budget, jobject memory, jlong grant_chunk);
/* relationCreate(streamAddress) -> handle: a broadcast for many tasks. */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_relationCreate(JNIEnv *env, jclass cls,
                                                                  jlong stream);
/* relationFromBlocks(byte[][]) -> handle. */
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_relationFromBlocks(JNIEnv *env, jclass cls,
                                                                      jobjectArray blocks);
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_relationBytes(JNIEnv *env, jclass cls,
                                                                 jlong h);
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_relationDestroy(JNIEnv *env, jclass cls,
                                                                  jlong h);
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_taskCancel(JNIEnv *env, jclass cls, jlong h);
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_taskMetrics(JNIEnv *env, jclass cls,
                                                                 jlong h);
JNIEXPORT jint JNICALL Java_dev_ember_spark_Native_fragmentMapPartitions(JNIEnv *env, jclass cls,
                                                                       jlong h);
/* A map task's next packed blocks, or null at the end (em_task_map_next). */
JNIEXPORT jbyteArray JNICALL Java_dev_ember_spark_Native_taskMapNext(JNIEnv *env, jclass cls,
                                                                   jlong h);
/* taskMapWrite(task, path): the map task run into a shuffle data file
 * (em_task_map_write); each partition's bytes, then the rows written. */
JNIEXPORT jlongArray JNICALL Java_dev_ember_spark_Native_taskMapWrite(JNIEnv *env, jclass cls,
                                                                     jlong h, jstring path);
/* blockStream(source, arrowSchemaAddress, arrowStreamAddress): a stream of
 * the blocks an EmberBlockSource gives, of that schema (moved in). */
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_blockStream(JNIEnv *env, jclass cls,
                                                              jobject source, jlong schema,
                                                              jlong stream);
/* blockToArrow(block, arrowArrayAddress, arrowSchemaAddress). */
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_blockToArrow(JNIEnv *env, jclass cls,
                                                               jbyteArray block, jlong array,
                                                               jlong schema);
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_taskReleaseSlack(JNIEnv *env, jclass cls,
                                                                    jlong h);
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_taskDestroy(JNIEnv *env, jclass cls, jlong h);
/* loreDescribe(dir) -> {"operator", "partitions": [..], "columns": [{name, type}]} of a
 * LORE dump (DIR/loreId-N); loreReplayOpen(dir, partition, streamAddress) runs the operator
 * over that partition's dumped input and exports its output as an Arrow stream, returning
 * a handle that loreReplayClose frees after Java released the stream and its arrays. */
JNIEXPORT jstring JNICALL Java_dev_ember_spark_Native_loreDescribe(JNIEnv *env, jclass cls,
                                                                  jstring dir);
JNIEXPORT jlong JNICALL Java_dev_ember_spark_Native_loreReplayOpen(JNIEnv *env, jclass cls,
                                                                  jstring dir, jint partition,
                                                                  jlong stream);
JNIEXPORT void JNICALL Java_dev_ember_spark_Native_loreReplayClose(JNIEnv *env, jclass cls,
                                                                  jlong h);

#endif
