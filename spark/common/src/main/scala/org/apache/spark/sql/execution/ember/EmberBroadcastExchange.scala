// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember

import java.util.concurrent.TimeUnit

import scala.concurrent.Promise

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, BroadcastPartitioning, Partitioning}
import org.apache.spark.sql.execution.{BaseSubqueryExec, ColumnarToRowExec, SQLExecution, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.StructType

import dev.ember.spark.{EmberExec, EmberShuffle}

/**
 * A hash join's broadcast whose input Ember computes: the child is the Ember
 * node of the exchange's fragment, whose tasks hand back their whole output
 * as blocks; the driver collects them and broadcasts them as an
 * EmberBroadcastRelation. An Ember join reads the blocks straight into C
 * (once per executor); a Spark join reads it through
 * EmberBroadcastToSparkExec, as the HashedRelation Spark would have built,
 * and dynamic partition pruning through EmberSubqueryBroadcastExec.
 *
 * BroadcastExchangeLike keeps state of its own from Spark 4 on, so the node
 * (EmberBroadcastExchangeExec) is compiled per line, in each line's shim
 * module; what it does is here, once.
 */
trait EmberBroadcastExchange { self: SparkPlan =>
  def mode: BroadcastMode
  def child: SparkPlan // the EmberExec whose tasks give the blocks

  /** The same exchange over another map side. */
  def withMapSide(mapSide: SparkPlan): SparkPlan

  protected def broadcastMetrics: Map[String, SQLMetric] = Map(
    "dataSize" -> SparkShims.get.sizeMetric(sparkContext, "data size"),
    "numBlocks" -> SQLMetrics.createMetric(sparkContext, "number of blocks"),
    "collectTime" -> SparkShims.get.timingMetric(sparkContext, "time to collect"),
    "broadcastTime" -> SparkShims.get.timingMetric(sparkContext, "time to broadcast"))

  private def mapSide: EmberExec = child match {
    case e: EmberExec => e
    case c: ColumnarToRowExec if c.child.isInstanceOf[EmberExec] => c.child.asInstanceOf[EmberExec]
    case other => throw new IllegalStateException(s"Ember's broadcast over ${other.nodeName}")
  }

  /** Collects the blocks on the driver and broadcasts them, completing
   *  `done` either way (the line's node runs this on Spark's broadcast pool). */
  protected def collectAndBroadcast(done: Promise[Broadcast[Any]]): Broadcast[Any] =
    try {
      val t0 = System.nanoTime()
      val blocks: Array[Array[Byte]] = mapSide.executeBlocks().map { case (_, b) =>
        java.util.Arrays.copyOfRange(b.bytes, b.offset, b.offset + b.length)
      }.collect()
      val t1 = System.nanoTime()
      metrics("collectTime") += (t1 - t0) / 1000000
      metrics("numBlocks") += blocks.length
      metrics("dataSize") += blocks.map(_.length.toLong).sum
      val bc = sparkContext.broadcast[Any](new EmberBroadcastRelation(blocks, child.schema))
      metrics("broadcastTime") += (System.nanoTime() - t1) / 1000000
      val id = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
      SQLMetrics.postDriverMetricUpdates(sparkContext, id, metrics.values.toSeq)
      done.trySuccess(bc)
      bc
    } catch {
      case t: Throwable =>
        done.tryFailure(t)
        throw t
    }

  protected def broadcastStatistics: Statistics = Statistics(metrics("dataSize").value)

  protected def awaitBroadcast[T](relation: java.util.concurrent.Future[Broadcast[Any]]): Broadcast[T] =
    relation.get(conf.broadcastTimeout, TimeUnit.SECONDS).asInstanceOf[Broadcast[T]]
}

/** What an Ember broadcast holds: the blocks of its rows (decoded in C). */
final class EmberBroadcastRelation(val blocks: Array[Array[Byte]], val schema: StructType)
  extends Serializable {

  /** Every row, decoded in C, as UnsafeRows (for a Spark reader). */
  def rows(): Iterator[InternalRow] = {
    import scala.jdk.CollectionConverters._
    val alloc = SparkInternals.arrowAllocator.newChildAllocator("ember broadcast rows", 0, Long.MaxValue)
    val batches = new EmberShuffle.BlockBatches(blocks.iterator, alloc)
    try {
      val project = UnsafeProjection.create(schema)
      batches.flatMap(_.rowIterator().asScala.map(r => project(r).copy())).toArray[InternalRow].iterator
    } finally batches.close()
  }
}

/**
 * An Ember broadcast for a Spark reader (a join Ember does not run, dynamic
 * partition pruning): the HashedRelation Spark's own broadcast exchange
 * would have built (its mode over the rows), made from the blocks once on
 * the driver and broadcast again. Ember's rules put it between an Ember
 * broadcast and any reader that is not an Ember node.
 */
case class EmberBroadcastToSparkExec(mode: BroadcastMode, child: SparkPlan)
  extends org.apache.spark.sql.execution.UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = BroadcastPartitioning(mode)

  @transient private lazy val relation: Broadcast[Any] = {
    val blocks = child.executeBroadcast[EmberBroadcastRelation]().value
    sparkContext.broadcast[Any](mode.transform(blocks.rows(), None))
  }

  override protected def doExecute(): RDD[InternalRow] =
    throw new UnsupportedOperationException("a broadcast is read by executeBroadcast")

  override protected[sql] def doExecuteBroadcast[T](): Broadcast[T] = relation.asInstanceOf[Broadcast[T]]

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}

/**
 * Dynamic partition pruning's read of a join's broadcast: the distinct
 * values of one of its build keys, which filter the partitions of the other
 * side's scan. Spark's SubqueryBroadcastExec takes them out of the
 * HashedRelation its exchange built; Ember's broadcast holds blocks, so here
 * they are decoded and the key evaluated over the rows. Which broadcast
 * arrives is known only when it runs (AQE plans the subquery's exchange
 * later), so a HashedRelation is still left to Spark's node.
 */
case class EmberSubqueryBroadcastExec(name: String, keyIndices: Seq[Int], buildKeys: Seq[Expression],
                                      child: SparkPlan)
  extends BaseSubqueryExec with UnaryExecNode {

  @transient private lazy val sparkNode = SparkShims.get.subqueryBroadcast(name, keyIndices, buildKeys, child)

  override def output: Seq[Attribute] = sparkNode.output

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override def doCanonicalize(): SparkPlan =
    EmberSubqueryBroadcastExec("dpp", keyIndices, buildKeys.map(QueryPlan.normalizeExpressions(_, child.output)),
      child.canonicalized)

  @transient private lazy val keys: Array[InternalRow] = {
    val out = child.executeBroadcast[Any]().value match {
      case r: EmberBroadcastRelation =>
        val project = UnsafeProjection.create(
          keyIndices.map(i => BindReferences.bindReference(buildKeys(i), child.output)))
        r.rows().map(row => project(row).copy()).toArray[InternalRow].distinct
      case _ => sparkNode.executeCollect()
    }
    metrics("numOutputRows") += out.length
    SQLMetrics.postDriverMetricUpdates(sparkContext,
      sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY), metrics.values.toSeq)
    out
  }

  override def executeCollect(): Array[InternalRow] = keys

  override protected def doExecute(): RDD[InternalRow] =
    throw new UnsupportedOperationException("a broadcast's keys are read by executeCollect")

  override def stringArgs: Iterator[Any] = super.stringArgs ++ Iterator(s"[id=#$id]")

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}
