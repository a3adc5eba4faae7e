// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember.spark34

import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.{Partition, ShuffleDependency, SparkConf, SparkContext, SparkEnv, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.{ShuffleWriteMetricsReporter, ShuffleWriteProcessor}
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.{Cast, Expression}
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, Partitioning}
import org.apache.spark.sql.execution.{FileSourceScanExec, PartitionedFileUtil, QueryExecution, SparkPlan, SubqueryBroadcastExec}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, PartitionDirectory, PartitionedFile}
import org.apache.spark.sql.execution.ember.{EmberShuffleFiles, ShimServiceProvider, SparkShims}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{StringType, StructType}
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.collection.OpenHashSet

import dev.ember.spark.EmberRDD

/** Spark 3.4.x. */
class Spark34ShimProvider extends ShimServiceProvider {
  override def lines: Seq[String] = Seq("3.4")
  override def shimsClassName: String = "org.apache.spark.sql.execution.ember.spark34.Spark34Shims"
}

/**
 * Spark 3.4.x, and the base of 3.5's shims, which override what changed.
 * The shuffle exchange and writer below serve 3.5 too: the Spark traits
 * they mix in kept their binary shape (3.5's ShuffleExchangeLike only
 * added advisoryPartitionSize, which the exchange's field provides).
 */
class Spark34Shims extends SparkShims {
  override def line: String = "3.4"

  override def shuffleExchange(partitioning: Partitioning, mapSide: SparkPlan, origin: ShuffleOrigin,
                               advisoryPartitionSize: Option[Long]): SparkPlan =
    EmberShuffleExchangeExec(partitioning, mapSide, origin, advisoryPartitionSize)

  override def broadcastExchange(mode: BroadcastMode, mapSide: SparkPlan): SparkPlan =
    EmberBroadcastExchangeExec(mode, mapSide)

  override def shuffleWriteProcessor(metrics: Map[String, SQLMetric], dataSize: SQLMetric,
                                     rowsWritten: SQLMetric): ShuffleWriteProcessor =
    new EmberShuffleWriteProcessor(metrics, dataSize, rowsWritten)

  override def splitFiles(relation: HadoopFsRelation, dir: PartitionDirectory,
                          maxSplitBytes: Long): Seq[PartitionedFile] =
    dir.files.flatMap { f =>
      val session = relation.sparkSession
      val splitable = relation.fileFormat.isSplitable(session, relation.options, f.getPath)
      PartitionedFileUtil.splitFiles(session, f, f.getPath, splitable, maxSplitBytes, dir.values)
    }

  override def filePath(f: PartitionedFile): String = f.toPath.toUri.getPath

  override def advisoryPartitionSize(x: ShuffleExchangeExec): Option[Long] = None

  // before 3.5 the manager keeps each shuffle's map tasks in a private map
  // looked up once: every map task registers through it
  private lazy val taskIdMapsField = {
    val field = classOf[SortShuffleManager].getDeclaredFields
      .find(_.getName.endsWith("taskIdMapsForShuffle"))
      .getOrElse(throw new IllegalStateException("Ember: SortShuffleManager has no taskIdMapsForShuffle"))
    field.setAccessible(true)
    field
  }

  override def registerMapOutput(manager: SortShuffleManager, shuffleId: Int, mapId: Long): Unit = {
    val maps = taskIdMapsField.get(manager).asInstanceOf[java.util.concurrent.ConcurrentHashMap[Int, OpenHashSet[Long]]]
      .computeIfAbsent(shuffleId, (_: Int) => new OpenHashSet[Long](16))
    maps.synchronized { maps.add(mapId) }
  }

  override def castToString(e: Expression, timeZone: String): Expression =
    Cast(e, StringType, Some(timeZone))

  override def sizeMetric(sc: SparkContext, name: String): SQLMetric = SQLMetrics.createSizeMetric(sc, name)
  override def timingMetric(sc: SparkContext, name: String): SQLMetric = SQLMetrics.createTimingMetric(sc, name)
  override def nanoTimingMetric(sc: SparkContext, name: String): SQLMetric =
    SQLMetrics.createNanoTimingMetric(sc, name)

  override def localDir(conf: SparkConf): String = org.apache.spark.util.Utils.getLocalDir(conf)

  override def mapStatus(loc: BlockManagerId, lengths: Array[Long], mapId: Long): MapStatus =
    MapStatus(loc, lengths, mapId)

  override def toArrowSchema(schema: StructType, timeZone: String): Schema =
    ArrowUtils.toArrowSchema(schema, timeZone)

  override def arithmeticException(errorClass: String, params: Map[String, String]): Throwable =
    new org.apache.spark.SparkArithmeticException(errorClass, params, Array.empty, "")

  // (FileSourceScanLike's lazy member is protected: reached by its public accessor)
  override def selectedPartitions(scan: FileSourceScanExec): Option[Seq[PartitionDirectory]] =
    try Some(scan.getClass.getMethod("dynamicallySelectedPartitions").invoke(scan)
      .asInstanceOf[Array[PartitionDirectory]].toSeq)
    catch { case _: ReflectiveOperationException => None }

  override def queryExecution(df: DataFrame): QueryExecution = df.queryExecution

  override def subqueryKeyIndices(s: SubqueryBroadcastExec): Seq[Int] = Seq(s.index)

  override def subqueryBroadcast(name: String, keyIndices: Seq[Int], buildKeys: Seq[Expression],
                                 child: SparkPlan): SubqueryBroadcastExec = keyIndices match {
    case Seq(i) => SubqueryBroadcastExec(name, i, buildKeys, child)
    case _ => throw new IllegalArgumentException(s"Spark 3 prunes by one key, not ${keyIndices.size}")
  }
}

/** The map side's writer on Spark 3.4 and 3.5: C's files when direct, else Spark's. */
final class EmberShuffleWriteProcessor(metrics: Map[String, SQLMetric], dataSize: SQLMetric,
                                       rowsWritten: SQLMetric)
  extends ShuffleWriteProcessor {

  override protected def createMetricsReporter(context: TaskContext): ShuffleWriteMetricsReporter =
    EmberShuffleFiles.metricsReporter(context, metrics)

  override def write(rdd: RDD[_], dep: ShuffleDependency[_, _, _], mapId: Long,
                     context: TaskContext, partition: Partition): MapStatus = rdd match {
    // an EmberRDD is never persisted: its iterator is what compute returns
    case ember: EmberRDD if EmberShuffleFiles.direct(SparkEnv.get) =>
      EmberShuffleFiles.writeMapOutput(ember.iterator(partition, context), dep, mapId,
        createMetricsReporter(context), dataSize, rowsWritten)
    case _ => super.write(rdd, dep, mapId, context, partition)
  }
}
