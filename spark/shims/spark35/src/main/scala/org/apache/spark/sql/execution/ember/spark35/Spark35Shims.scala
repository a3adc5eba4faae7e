// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember.spark35

import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.SparkContext
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, Partitioning}
import org.apache.spark.sql.execution.{PartitionedFileUtil, SparkPlan}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, PartitionDirectory, PartitionedFile}
import org.apache.spark.sql.execution.ember.ShimServiceProvider
import org.apache.spark.sql.execution.ember.spark34.Spark34Shims
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.ArrowUtils
import org.apache.spark.util.collection.OpenHashSet

/** Spark 3.5.x. */
class Spark35ShimProvider extends ShimServiceProvider {
  override def lines: Seq[String] = Seq("3.5")
  override def shimsClassName: String = "org.apache.spark.sql.execution.ember.spark35.Spark35Shims"
}

/** Spark 3.5.x: files carry their metadata and a SparkPath, exchanges an
 *  advisory partition size, the block resolver the map tasks' registry,
 *  broadcasts a run id, metric factories a default argument. */
class Spark35Shims extends Spark34Shims {
  override def line: String = "3.5"

  // its own copies of the exchanges: 3.5's traits keep fields 3.4's do not
  override def shuffleExchange(partitioning: Partitioning, mapSide: SparkPlan, origin: ShuffleOrigin,
                               advisoryPartitionSize: Option[Long]): SparkPlan =
    EmberShuffleExchangeExec(partitioning, mapSide, origin, advisoryPartitionSize)

  override def broadcastExchange(mode: BroadcastMode, mapSide: SparkPlan): SparkPlan =
    EmberBroadcastExchangeExec(mode, mapSide)

  override def splitFiles(relation: HadoopFsRelation, dir: PartitionDirectory,
                          maxSplitBytes: Long): Seq[PartitionedFile] =
    dir.files.flatMap { f =>
      val session = relation.sparkSession
      val splitable = relation.fileFormat.isSplitable(session, relation.options, f.getPath)
      PartitionedFileUtil.splitFiles(session, f, f.getPath, splitable, maxSplitBytes, dir.values)
    }

  override def advisoryPartitionSize(x: ShuffleExchangeExec): Option[Long] = x.advisoryPartitionSize

  override def registerMapOutput(manager: SortShuffleManager, shuffleId: Int, mapId: Long): Unit = {
    val maps = manager.shuffleBlockResolver.taskIdMapsForShuffle.computeIfAbsent(
      shuffleId, (_: Int) => new OpenHashSet[Long](16))
    maps.synchronized { maps.add(mapId) }
  }

  override def sizeMetric(sc: SparkContext, name: String): SQLMetric = SQLMetrics.createSizeMetric(sc, name)
  override def timingMetric(sc: SparkContext, name: String): SQLMetric = SQLMetrics.createTimingMetric(sc, name)
  override def nanoTimingMetric(sc: SparkContext, name: String): SQLMetric =
    SQLMetrics.createNanoTimingMetric(sc, name)

  override def toArrowSchema(schema: StructType, timeZone: String): Schema =
    ArrowUtils.toArrowSchema(schema, timeZone, true, false)
}
