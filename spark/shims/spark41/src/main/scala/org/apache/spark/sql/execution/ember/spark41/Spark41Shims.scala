// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember.spark41

import org.apache.spark.SparkConf
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, Partitioning}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.ember.ShimServiceProvider
import org.apache.spark.sql.execution.ember.spark40.Spark40Shims
import org.apache.spark.sql.execution.exchange.ShuffleOrigin
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.collection.OpenHashSet

/** Spark 4.1.x. */
class Spark41ShimProvider extends ShimServiceProvider {
  override def lines: Seq[String] = Seq("4.1")
  override def shimsClassName: String = "org.apache.spark.sql.execution.ember.spark41.Spark41Shims"
}

/** Spark 4.1.x: 4.0's, with the exchanges compiled against 4.1's traits,
 *  Utils.getLocalDir taking a ReadOnlySparkConf, the map tasks' registry a
 *  ConcurrentMap and MapStatus.apply a checksum. */
class Spark41Shims extends Spark40Shims {
  override def line: String = "4.1"

  override def shuffleExchange(partitioning: Partitioning, mapSide: SparkPlan, origin: ShuffleOrigin,
                               advisoryPartitionSize: Option[Long]): SparkPlan =
    EmberShuffleExchangeExec(partitioning, mapSide, origin, advisoryPartitionSize)

  override def broadcastExchange(mode: BroadcastMode, mapSide: SparkPlan): SparkPlan =
    EmberBroadcastExchangeExec(mode, mapSide)

  // the same sources as the older lines', compiled against 4.1's signatures
  override def localDir(conf: SparkConf): String = org.apache.spark.util.Utils.getLocalDir(conf)

  override def registerMapOutput(manager: SortShuffleManager, shuffleId: Int, mapId: Long): Unit = {
    val maps = manager.shuffleBlockResolver.taskIdMapsForShuffle.computeIfAbsent(
      shuffleId, (_: Int) => new OpenHashSet[Long](16))
    maps.synchronized { maps.add(mapId) }
  }

  override def mapStatus(loc: BlockManagerId, lengths: Array[Long], mapId: Long): MapStatus =
    MapStatus(loc, lengths, mapId)
}
