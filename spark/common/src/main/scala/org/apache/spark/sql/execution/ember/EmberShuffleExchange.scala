// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember

import scala.concurrent.Future

import org.apache.spark.{MapOutputStatistics, ShuffleDependency}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{ColumnarToRowExec, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.vectorized.ColumnarBatch

import dev.ember.spark.{EmberBlockSerializer, EmberExec, EmberPartitionIdPassThrough, EmberShuffle}

/**
 * A shuffle whose map side Ember runs: the child is the Ember node of the
 * exchange's fragment, whose tasks partition their output in C (Spark's
 * hash partitioning, Murmur3 and pmod, or a single partition) and hand
 * Spark's shuffle writer ready blocks, keyed by reduce partition (Spark's
 * own sort-based shuffle, its files, fetching and retries; C writes a map
 * task's data file itself, EmberShuffleFiles). The reduce side reads the
 * blocks back as Arrow ColumnarBatches (decoded in C): an Ember node above
 * takes them zero-copy, a Spark node through ColumnarToRow. AQE sees an
 * ordinary ShuffleExchangeLike: map statistics, coalesced and skew-split
 * reads.
 *
 * ShuffleExchangeLike's members change between Spark lines, so the node
 * itself (EmberShuffleExchangeExec) is compiled per line, in each line's
 * shim module; everything it does is here, once. (In Spark's package: the
 * contract names private[spark] types.)
 */
trait EmberShuffleExchange { self: SparkPlan =>
  def child: SparkPlan // the map side's EmberExec (Spark's transitions may wrap it for a moment)
  def outputPartitioning: Partitioning

  /** The same exchange over another map side. */
  def withMapSide(mapSide: SparkPlan): SparkPlan

  protected def writeMetrics: Map[String, SQLMetric]
  def readMetrics: Map[String, SQLMetric]

  protected def shuffleMetrics: Map[String, SQLMetric] = Map(
    "dataSize" -> SparkShims.get.sizeMetric(sparkContext, "data size"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "numPartitions" -> SQLMetrics.createMetric(sparkContext, "number of partitions")) ++
    readMetrics ++ writeMetrics

  /** AQE's view of the stage. Its records are blocks, not rows (Spark's
   *  exchange counts records as rows): AQE takes rowCount as the stage's
   *  maxRows, and removes a limit, sort or aggregate over a stage of "fewer"
   *  rows than it holds, so the rows are counted as they are written. */
  protected def shuffleStatistics: Statistics = {
    val dataSize = metrics("dataSize").value
    val rowCount = metrics("numOutputRows").value
    Statistics(dataSize, Some(rowCount))
  }

  /** The map side: (reduce partition, block) records from C. */
  private def mapSide: EmberExec = child match {
    case e: EmberExec => e
    case c: ColumnarToRowExec if c.child.isInstanceOf[EmberExec] => c.child.asInstanceOf[EmberExec]
    case other => throw new IllegalStateException(s"Ember's shuffle over ${other.nodeName}")
  }

  protected def newShuffleDependency(): ShuffleDependency[Int, Any, Any] = {
    val blocks = mapSide.executeBlocks()
    val n = outputPartitioning.numPartitions
    metrics("numPartitions").set(n)
    SparkInternals.postDriverMetrics(sparkContext, metrics("numPartitions"))
    new ShuffleDependency[Int, Any, Any](
      blocks.asInstanceOf[RDD[Product2[Int, Any]]],
      new EmberPartitionIdPassThrough(n),
      new EmberBlockSerializer(metrics("dataSize"), metrics("numOutputRows")),
      shuffleWriterProcessor =
        SparkShims.get.shuffleWriteProcessor(writeMetrics, metrics("dataSize"), metrics("numOutputRows")))
  }

  protected def submitMapStage(dep: ShuffleDependency[Int, Any, Any]): Future[MapOutputStatistics] =
    if (dep.rdd.getNumPartitions == 0) Future.successful(null)
    else sparkContext.submitMapStage(dep)

  /** The reduce side over some partition specs (null: one per partition). */
  protected def readShuffle(dep: ShuffleDependency[Int, Any, Any],
                            partitionSpecs: Array[ShufflePartitionSpec]): RDD[ColumnarBatch] =
    EmberShuffle.readBlocks(new EmberShuffledRDD(dep, readMetrics, partitionSpecs))

  // Spark's row operators take UnsafeRows (a broadcast's collect casts each row to one)
  protected def asRows(batches: RDD[ColumnarBatch]): RDD[InternalRow] =
    EmberShuffle.unsafeRows(batches, schema)
}

/**
 * Rows from Ember's shuffle for a Spark operator. Spark's ColumnarToRowExec
 * cannot sit over a query stage of this shuffle: AQE keeps, as the stage's
 * canonical form, the row-based exchange Ember replaced, and Spark's
 * transition insists on a columnar child even in canonical form (exchange
 * and stage reuse canonicalize plans). This one reads the batches and
 * projects each row to an UnsafeRow.
 */
case class EmberColumnarToRowExec(child: SparkPlan)
  extends org.apache.spark.sql.execution.ColumnarToRowTransition {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[org.apache.spark.sql.catalyst.expressions.SortOrder] =
    child.outputOrdering

  override protected def doExecute(): RDD[InternalRow] =
    EmberShuffle.unsafeRows(child.executeColumnar(), child.schema)

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}
