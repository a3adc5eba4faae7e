// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember.spark40

import org.apache.spark.{ShuffleDependency, SparkEnv, TaskContext}
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.{ShuffleWriteMetricsReporter, ShuffleWriteProcessor}
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, Partitioning}
import org.apache.spark.sql.execution.{FileSourceScanExec, PartitionedFileUtil, QueryExecution, ScanFileListing, SparkPlan, SubqueryBroadcastExec}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, PartitionDirectory, PartitionedFile}
import org.apache.spark.sql.execution.ember.{EmberShuffleFiles, ShimServiceProvider}
import org.apache.spark.sql.execution.ember.spark35.Spark35Shims
import org.apache.spark.sql.execution.exchange.ShuffleOrigin
import org.apache.spark.sql.execution.metric.SQLMetric

import dev.ember.spark.EmberMapOutput

/** Spark 4.0.x. */
class Spark40ShimProvider extends ShimServiceProvider {
  override def lines: Seq[String] = Seq("4.0")
  override def shimsClassName: String = "org.apache.spark.sql.execution.ember.spark40.Spark40Shims"
}

/** Spark 4.0.x: 3.5's, but for its own exchanges and shuffle writer, files
 *  split without a session, scans listing their files, pruning by several
 *  keys and classic Datasets. */
class Spark40Shims extends Spark35Shims {
  override def line: String = "4.0"

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
      val splitable = relation.fileFormat.isSplitable(relation.sparkSession, relation.options, f.getPath)
      PartitionedFileUtil.splitFiles(f, f.getPath, splitable, maxSplitBytes, dir.values)
    }

  // (FileSourceScanLike's lazy member is protected: reached by its public accessor)
  override def selectedPartitions(scan: FileSourceScanExec): Option[Seq[PartitionDirectory]] =
    try scan.getClass.getMethod("dynamicallySelectedPartitions").invoke(scan) match {
      case listing: ScanFileListing =>
        Some(listing.filePartitionIterator.map(p => PartitionDirectory(p.values, p.files.toSeq)).toSeq)
      case _ => None
    } catch { case _: ReflectiveOperationException => None }

  override def queryExecution(df: DataFrame): QueryExecution =
    df.asInstanceOf[org.apache.spark.sql.classic.Dataset[_]].queryExecution

  override def subqueryKeyIndices(s: SubqueryBroadcastExec): Seq[Int] = s.indices

  override def subqueryBroadcast(name: String, keyIndices: Seq[Int], buildKeys: Seq[Expression],
                                 child: SparkPlan): SubqueryBroadcastExec =
    SubqueryBroadcastExec(name, keyIndices, buildKeys, child)
}

/** The map side's writer on Spark 4.0: C's files when direct, else Spark's. */
final class EmberShuffleWriteProcessor(metrics: Map[String, SQLMetric], dataSize: SQLMetric,
                                       rowsWritten: SQLMetric)
  extends ShuffleWriteProcessor {

  override protected def createMetricsReporter(context: TaskContext): ShuffleWriteMetricsReporter =
    EmberShuffleFiles.metricsReporter(context, metrics)

  // Spark 4 hands over the map task's iterator: an EmberRDD's is its EmberMapOutput
  override def write(inputs: Iterator[_], dep: ShuffleDependency[_, _, _], mapId: Long,
                     mapIndex: Int, context: TaskContext): MapStatus = inputs match {
    case o: EmberMapOutput if EmberShuffleFiles.direct(SparkEnv.get) =>
      EmberShuffleFiles.writeMapOutput(o, dep, mapId, createMetricsReporter(context), dataSize, rowsWritten)
    case _ => super.write(inputs, dep, mapId, mapIndex, context)
  }
}
