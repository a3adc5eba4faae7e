// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember

import org.apache.spark.{ShuffleDependency, SparkConf, SparkEnv, TaskContext}
import org.apache.spark.internal.config
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.{BaseShuffleHandle, BlockStoreShuffleReader, ShuffleReadMetricsReporter, ShuffleReader, ShuffleWriteMetricsReporter}
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.shuffle.sort.io.LocalDiskShuffleDataIO
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLShuffleWriteMetricsReporter}
import org.apache.spark.util.Utils

import dev.ember.spark.EmberMapOutput

/**
 * Ember's shuffle files. With Spark's sort-based shuffle manager on its own
 * local-disk files, no I/O encryption and no push-based shuffle, an Ember
 * map task's C side writes the task's data file itself (each reduce
 * partition's blocks contiguous, in partition order: Spark's layout), and
 * Spark's block resolver writes the index and commits both, as Spark's own
 * writers do; Spark then serves, fetches, retries and cleans up those files
 * as its own. The blocks are already compact (narrowed integers), so they
 * are not compressed again: the reduce side reads them through Spark's
 * shuffle reader with a serializer manager that does not decompress.
 * Anything else (another shuffle manager or store, encryption) takes Spark's
 * own writer and reader over the same records.
 */
object EmberShuffleFiles {
  /** Whether Ember writes and reads its shuffles' files itself here: the
   *  same answer on the driver and every executor of an application. */
  def direct(env: SparkEnv): Boolean =
    env.conf.getBoolean("spark.ember.spark.shuffleFiles", true) &&
      env.shuffleManager.isInstanceOf[SortShuffleManager] &&
      // the sort shuffle's own local-disk files, not a plugged-in store
      env.conf.get(config.SHUFFLE_IO_PLUGIN_CLASS) == classOf[LocalDiskShuffleDataIO].getName &&
      !env.conf.get(config.IO_ENCRYPTION_ENABLED) &&
      !env.conf.get(config.PUSH_BASED_SHUFFLE_ENABLED)

  @volatile private var plain: (SparkEnv, SerializerManager) = _

  /** Spark's serializer manager, but for streams as written (no codec). */
  private def plainSerializerManager(env: SparkEnv): SerializerManager = {
    val p = plain
    if (p != null && (p._1 eq env)) return p._2
    val conf: SparkConf = env.conf.clone.set(config.SHUFFLE_COMPRESS.key, "false")
    val m = new SerializerManager(env.serializer, conf, None)
    plain = (env, m)
    m
  }

  /** A reader of reduce partitions [startPartition, endPartition) of map
   *  outputs [startMap, endMap), the streams as written. */
  def reader(dep: ShuffleDependency[Int, Any, Any], startMap: Int, endMap: Int,
             startPartition: Int, endPartition: Int, context: TaskContext,
             metrics: ShuffleReadMetricsReporter): ShuffleReader[Int, Any] = {
    val env = SparkEnv.get
    val blocks = env.mapOutputTracker.getMapSizesByExecutorId(
      dep.shuffleId, startMap, endMap, startPartition, endPartition)
    new BlockStoreShuffleReader[Int, Any](
      dep.shuffleHandle.asInstanceOf[BaseShuffleHandle[Int, _, Any]], blocks, context, metrics,
      serializerManager = plainSerializerManager(env),
      shouldBatchFetch = SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context))
  }

  /** The write metrics of an exchange, as Spark's shuffle writer reports them. */
  def metricsReporter(context: TaskContext, metrics: Map[String, SQLMetric]): ShuffleWriteMetricsReporter =
    new SQLShuffleWriteMetricsReporter(context.taskMetrics().shuffleWriteMetrics, metrics)

  /**
   * The map side of an Ember shuffle with direct files: C writes the task's
   * data file (`output` is what the map task's EmberRDD computed) and this
   * commits it with its index, as Spark's writers do. Each line's
   * EmberShuffleWriteProcessor calls it; without direct files they leave
   * the records to Spark's writer.
   */
  def writeMapOutput(output: Iterator[_], dep: ShuffleDependency[_, _, _], mapId: Long,
                     reporter: ShuffleWriteMetricsReporter, dataSize: SQLMetric,
                     rowsWritten: SQLMetric): MapStatus = {
    val env = SparkEnv.get
    val files = output match {
      case o: EmberMapOutput => o
      case other => throw new IllegalStateException(s"Ember map task output ${other.getClass}")
    }
    val manager = env.shuffleManager.asInstanceOf[SortShuffleManager]
    val resolver = manager.shuffleBlockResolver
    SparkShims.get.registerMapOutput(manager, dep.shuffleId, mapId)
    val data = resolver.getDataFile(dep.shuffleId, mapId)
    val tmp = Utils.tempFileWith(data)
    val t0 = System.nanoTime()
    val (lengths, rows, rowBytes) =
      try files.writeFile(tmp.getPath)
      catch { case t: Throwable => tmp.delete(); throw t }
    // an earlier attempt's committed files win; lengths then become theirs
    resolver.writeMetadataFileAndCommit(dep.shuffleId, mapId, lengths, Array.empty[Long], tmp)
    val bytes = lengths.sum
    reporter.incBytesWritten(bytes)
    reporter.incRecordsWritten(rows)
    reporter.incWriteTime(System.nanoTime() - t0)
    dataSize.add(rowBytes) // as Spark's exchange counts it: AQE's thresholds are in row bytes
    rowsWritten.add(rows) // AQE reads the stage's rows from it
    SparkShims.get.mapStatus(env.blockManager.shuffleServerId, lengths, mapId)
  }
}
