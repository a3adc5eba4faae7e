// SPDX-License-Identifier: Apache-2.0
// A template, not a source: every shim module compiles its own copy of
// these two exchanges against its Spark line, in its own package (Maven's
// resource filtering names it on the package line and writes the copy into
// target/generated-sources). The source is the same on every line; the
// bytecode is not, because Spark's exchange traits keep fields whose
// setters and initialisation the class must carry (docs/shims.md).
package org.apache.spark.sql.execution.ember.[[shim.package]]

import scala.concurrent.{Future, Promise}

import org.apache.spark.ShuffleDependency
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, BroadcastPartitioning, Partitioning}
import org.apache.spark.sql.execution.{SQLExecution, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.ember.{EmberBroadcastExchange, EmberShuffleExchange}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeExec, BroadcastExchangeLike, ShuffleExchangeLike, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}
import org.apache.spark.sql.vectorized.ColumnarBatch

/** Ember's shuffle exchange (EmberShuffleExchange does the work). */
case class EmberShuffleExchangeExec(
    override val outputPartitioning: Partitioning,
    child: SparkPlan,
    shuffleOrigin: ShuffleOrigin,
    advisoryPartitionSize: Option[Long] = None) // ShuffleExchangeLike's own from 3.5 on
  extends ShuffleExchangeLike with org.apache.spark.sql.catalyst.trees.UnaryLike[SparkPlan]
  with EmberShuffleExchange {

  override def supportsColumnar: Boolean = true
  // AQE requires a stage's root to stay a shuffle, which wants rows out as
  // well: a row parent gets rows converted here
  override def supportsRowBased: Boolean = true
  override def output: Seq[Attribute] = child.output
  override def nodeName: String = "EmberExchange"

  protected lazy val writeMetrics = SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)
  lazy val readMetrics = SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)
  override lazy val metrics: Map[String, SQLMetric] = shuffleMetrics

  override def numMappers: Int = shuffleDependency.rdd.getNumPartitions
  override def numPartitions: Int = shuffleDependency.partitioner.numPartitions
  override def runtimeStatistics: Statistics = shuffleStatistics

  @transient lazy val shuffleDependency: ShuffleDependency[Int, Any, Any] = newShuffleDependency()
  @transient override lazy val mapOutputStatisticsFuture = submitMapStage(shuffleDependency)
  def shuffleId: Int = shuffleDependency.shuffleId // ShuffleExchangeLike's own from 4.0 on

  override def getShuffleRDD(partitionSpecs: Array[ShufflePartitionSpec]): RDD[ColumnarBatch] =
    readShuffle(shuffleDependency, partitionSpecs)
  private lazy val cachedRDD: RDD[ColumnarBatch] = readShuffle(shuffleDependency, null)
  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = cachedRDD
  override protected def doExecute(): RDD[InternalRow] = asRows(cachedRDD)

  override def withMapSide(mapSide: SparkPlan): SparkPlan = copy(child = mapSide)
  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}

/** Ember's broadcast exchange (EmberBroadcastExchange does the work). */
case class EmberBroadcastExchangeExec(mode: BroadcastMode, child: SparkPlan)
  extends BroadcastExchangeLike with org.apache.spark.sql.catalyst.trees.UnaryLike[SparkPlan]
  with EmberBroadcastExchange {

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = BroadcastPartitioning(mode)
  override def nodeName: String = "EmberBroadcastExchange"
  override lazy val metrics: Map[String, SQLMetric] = broadcastMetrics

  @transient private lazy val promise = Promise[Broadcast[Any]]()
  @transient override lazy val completionFuture: Future[Broadcast[Any]] = promise.future
  @transient override lazy val relationFuture: java.util.concurrent.Future[Broadcast[Any]] =
    SQLExecution.withThreadLocalCaptured[Broadcast[Any]](session, BroadcastExchangeExec.executionContext) {
      collectAndBroadcast(promise)
    }

  override def runtimeStatistics: Statistics = broadcastStatistics
  override protected def doPrepare(): Unit = relationFuture // start collecting early, as Spark's does
  override protected def doExecute(): RDD[InternalRow] =
    throw new UnsupportedOperationException("a broadcast exchange is read by executeBroadcast")
  override protected[sql] def doExecuteBroadcast[T](): Broadcast[T] = awaitBroadcast[T](relationFuture)

  override def withMapSide(mapSide: SparkPlan): SparkPlan = copy(child = mapSide)
  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}
