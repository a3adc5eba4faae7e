// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember

import org.apache.spark.{Dependency, MapOutputTrackerMaster, Partition, ShuffleDependency, SparkEnv, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.{CoalescedMapperPartitionSpec, CoalescedPartitionSpec, PartialMapperPartitionSpec, PartialReducerPartitionSpec, ShufflePartitionSpec}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLShuffleReadMetricsReporter}

private final case class EmberShuffledPartition(index: Int, spec: ShufflePartitionSpec) extends Partition

/**
 * The reduce side of Ember's shuffle: the blocks (byte arrays) of each
 * partition spec AQE may make (a coalesced range of reduce partitions, a
 * skewed partition's share of the map outputs, a local read of map outputs),
 * read by Spark's own shuffle reader, as Spark's ShuffledRowRDD reads rows.
 */
final class EmberShuffledRDD(
    var dependency: ShuffleDependency[Int, Any, Any],
    metrics: Map[String, SQLMetric],
    specs: Array[ShufflePartitionSpec])
  extends RDD[Array[Byte]](dependency.rdd.context, Nil) {

  private val partitionSpecs: Array[ShufflePartitionSpec] =
    if (specs != null) specs
    else Array.tabulate(dependency.partitioner.numPartitions)(i => CoalescedPartitionSpec(i, i + 1))

  override def getDependencies: Seq[Dependency[_]] = List(dependency)

  override def getPartitions: Array[Partition] =
    Array.tabulate[Partition](partitionSpecs.length)(i => EmberShuffledPartition(i, partitionSpecs(i)))

  override def getPreferredLocations(partition: Partition): Seq[String] = {
    val tracker = SparkEnv.get.mapOutputTracker.asInstanceOf[MapOutputTrackerMaster]
    partition.asInstanceOf[EmberShuffledPartition].spec match {
      case CoalescedPartitionSpec(start, end, _) =>
        (start until end).flatMap(r => tracker.getPreferredLocationsForShuffle(dependency, r))
      case PartialReducerPartitionSpec(_, startMap, endMap, _) =>
        tracker.getMapLocation(dependency, startMap, endMap)
      case PartialMapperPartitionSpec(map, _, _) => tracker.getMapLocation(dependency, map, map + 1)
      case CoalescedMapperPartitionSpec(startMap, endMap, _) =>
        tracker.getMapLocation(dependency, startMap, endMap)
    }
  }

  override def compute(split: Partition, context: TaskContext): Iterator[Array[Byte]] = {
    val temp = context.taskMetrics().createTempShuffleReadMetrics()
    val reporter = new SQLShuffleReadMetricsReporter(temp, metrics)
    val m = SparkEnv.get.shuffleManager
    val h = dependency.shuffleHandle
    // (map outputs [start, end), reduce partitions [start, end))
    val (startMap, endMap, start, end) = split.asInstanceOf[EmberShuffledPartition].spec match {
      case CoalescedPartitionSpec(start, end, _) => (0, Int.MaxValue, start, end)
      case PartialReducerPartitionSpec(reducer, startMap, endMap, _) =>
        (startMap, endMap, reducer, reducer + 1)
      case PartialMapperPartitionSpec(map, start, end) => (map, map + 1, start, end)
      case CoalescedMapperPartitionSpec(startMap, endMap, reducers) => (startMap, endMap, 0, reducers)
    }
    val reader =
      if (EmberShuffleFiles.direct(SparkEnv.get))
        EmberShuffleFiles.reader(dependency, startMap, endMap, start, end, context, reporter)
      else m.getReader[Int, Any](h, startMap, endMap, start, end, context, reporter)
    reader.read().map(_._2.asInstanceOf[Array[Byte]])
  }

  override def clearDependencies(): Unit = {
    super.clearDependencies()
    dependency = null
  }
}
