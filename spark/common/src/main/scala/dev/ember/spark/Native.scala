// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.nio.file.{Files, StandardCopyOption}

/** A failure inside Ember's engine, with Ember's message (a Spark task then
 *  fails with it and Spark retries it as it retries any task). */
class EmberException(message: String, cause: Throwable) extends RuntimeException(message, cause) {
  def this(message: String) = this(message, null) // what JNI's ThrowNew calls
}

/**
 * The native methods of libember_jni.so (src/jni/native.h). Instances are
 * stateless; `Native.lib` loads the library once per JVM: from
 * spark.ember.native.libraryPath / EMBER_NATIVE_LIB when given, else from
 * the plugin jar (native/linux-x86_64/libember_jni.so), copied to a
 * temporary file first because a JVM can only load files.
 */
final class Native private () {
  @native def version(): String
  /** em_spark_plan: the decisions and fragments for a structured plan. */
  @native def plan(planJson: String, confJson: String): String
  /** "" when EXPLAIN FORMATTED text and the JSON of one plan read into one model in C. */
  @native def planReadersAgree(explainText: String, planJson: String): String
  /** Spark's exception for an Ember error message, as JSON {exception, errorClass,
   *  messageParameters}, or null when the error is Ember's own. */
  @native def sparkError(message: String): String
  @native def fragmentCreate(specJson: String): Long
  @native def fragmentDestroy(fragment: Long): Unit
  @native def fragmentBroadcastInputs(fragment: Long): Array[Boolean]
  @native def fragmentScans(fragment: Long): Array[Int]
  /** Reduce partitions when the fragment is an exchange's map side, else 0. */
  @native def fragmentMapPartitions(fragment: Long): Int
  /** A map task's next packed blocks, or null at the end. */
  @native def taskMapNext(task: Long): Array[Byte]
  /** A map task run to its end into a new shuffle data file at path: each
   *  reduce partition's bytes (contiguous, in partition order), then the rows,
   *  then their size as Spark's UnsafeRows. */
  @native def taskMapWrite(task: Long, path: String): Array[Long]
  /** An Arrow C stream (at streamAddress) of the blocks `source` gives, of
   *  the schema exported at schemaAddress (moved in), read on the task's thread. */
  @native def blockStream(source: EmberBlockSource, schemaAddress: Long, streamAddress: Long): Unit
  /** A shuffle block decoded into the Arrow structs at the two addresses. */
  @native def blockToArrow(block: Array[Byte], arrowArray: Long, arrowSchema: Long): Unit
  @native def taskCreate(fragment: Long, partition: Int, numPartitions: Int, splitsJson: String,
                         inputStreams: Array[Long], inputRelations: Array[Long], outputStream: Long,
                         spillDir: String, nativeBudget: Long, memory: EmberMemoryConsumer,
                         grantChunk: Long): Long
  /** A broadcast relation for many tasks, drained from the stream. */
  @native def relationCreate(stream: Long): Long
  /** A broadcast relation from the blocks an Ember broadcast collected. */
  @native def relationFromBlocks(blocks: Array[Array[Byte]]): Long
  @native def relationBytes(relation: Long): Long
  @native def relationDestroy(relation: Long): Unit
  @native def taskReleaseSlack(task: Long): Long
  @native def taskCancel(task: Long): Unit
  @native def taskMetrics(task: Long): String
  @native def taskDestroy(task: Long): Unit
  /** A LORE dump (DIR/loreId-N) as JSON: operator, partitions, columns (name, type). */
  @native def loreDescribe(dir: String): String
  /** The dumped operator run over one dumped partition, its output exported as
   *  an Arrow stream at streamAddress; the handle goes to loreReplayClose once
   *  the stream and its arrays are released. */
  @native def loreReplayOpen(dir: String, partition: Int, streamAddress: Long): Long
  @native def loreReplayClose(handle: Long): Unit
}

object Native {
  val ResourcePath = "native/linux-x86_64/libember_jni.so"

  @volatile private var loaded: Native = _
  @volatile private var failure: Throwable = _

  /** The library, loaded on first use; an EmberException when it cannot be. */
  def lib: Native = {
    if (loaded == null) synchronized {
      if (loaded == null && failure == null) {
        try {
          System.load(libraryFile(None).getAbsolutePath)
          loaded = new Native
        } catch {
          case t: Throwable => failure = t
        }
      }
    }
    if (loaded == null)
      throw new EmberException(s"Ember's native library could not be loaded: ${failure.getMessage}", failure)
    loaded
  }

  /** Loads now from an explicit path (the plugin's setting), when given. */
  def load(path: Option[String]): Native = {
    if (loaded == null) synchronized {
      if (loaded == null) {
        try {
          System.load(libraryFile(path).getAbsolutePath)
          loaded = new Native
          failure = null
        } catch {
          case t: Throwable => failure = t
        }
      }
    }
    lib
  }

  def isLoaded: Boolean = loaded != null

  private def libraryFile(path: Option[String]): File = {
    val given = path.orElse(Option(System.getenv("EMBER_NATIVE_LIB"))).filter(_.nonEmpty)
    given match {
      case Some(p) =>
        val f = new File(p)
        if (!f.isFile) throw new EmberException(s"Ember's native library $p does not exist")
        f
      case None =>
        val in = Option(getClass.getClassLoader.getResourceAsStream(ResourcePath)).getOrElse(
          throw new EmberException(s"$ResourcePath is not in the plugin jar (built without " +
            "the native library? see docs/spark.md)"))
        try {
          val tmp = File.createTempFile("libember_jni", ".so")
          tmp.deleteOnExit()
          Files.copy(in, tmp.toPath, StandardCopyOption.REPLACE_EXISTING)
          tmp
        } finally in.close()
    }
  }
}
