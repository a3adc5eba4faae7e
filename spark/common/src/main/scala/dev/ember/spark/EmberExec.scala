// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Literal, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastPartitioning, Distribution, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{ExecSubqueryExpression, FileSourceScanExec, LocalTableScanExec, ScalarSubquery, SparkPlan}
import org.apache.spark.sql.execution.datasources.FilePartition
import org.apache.spark.sql.execution.ember.{SparkInternals, SparkShims}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeLike, ShuffleExchangeLike}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{DataType, StringType, TimestampType}
import org.apache.spark.sql.vectorized.ColumnarBatch

/** What the planner decided for one node inside a fragment. */
case class EmberNodeInfo(source: Int, id: Int, name: String, loreId: Int)

/**
 * One Ember node in Spark's plan: a maximal subtree of nodes Ember runs
 * natively (the fragment), replaced as a whole (Gluten's whole-stage
 * transformer), with the nodes Spark still runs below it as its children
 * (its inputs, in fragment input order). Its tasks run in C through JNI
 * (EmberRDD); rows cross only at its edges.
 *
 * planJson is the fragment as written at planning time; the scalar subquery
 * values its expressions read are added when it executes (Spark runs the
 * subqueries first: they are this node's expressions, so Spark prepares and
 * waits for them, DPP's included). `original` is the replaced subtree, kept
 * for partitioning, ordering, canonical form and explain; `scans` its
 * Parquet scans by fragment source index, whose file partitions (after
 * partition pruning and DPP, as Spark resolved them) become the tasks'
 * splits.
 */
case class EmberExec(
    planJson: String,
    confJson: String,
    nodes: Seq[EmberNodeInfo],
    output: Seq[Attribute],
    children: Seq[SparkPlan],
    subqueryExprs: Seq[ExecSubqueryExpression])(
    @transient val original: SparkPlan,
    @transient val scans: Map[Int, FileSourceScanExec],
    val batchRows: Int,
    val inputDistributions: Seq[Distribution] = Nil)
  extends SparkPlan {

  override def supportsColumnar: Boolean = true
  override def supportsRowBased: Boolean = false
  /** As the replaced subtree's output is laid out; when it is an exchange,
   *  this node is the exchange's map side, whose tasks hold its child's rows
   *  (AQE's local shuffle read reports the map side's partitioning as its
   *  own, and must not take it for the exchange's). */
  private def laidOutAs: SparkPlan = original match {
    case x: ShuffleExchangeLike => x.child
    case b: BroadcastExchangeLike => b.child
    case p => p
  }
  override def outputPartitioning: Partitioning =
    if (original == null) UnknownPartitioning(0) else laidOutAs.outputPartitioning
  override def outputOrdering: Seq[SortOrder] =
    if (original == null) Nil else laidOutAs.outputOrdering
  /** What the replaced nodes required of each input (EmberRules): AQE checks
   *  a re-optimized plan against these, so inputs that a join inside matches
   *  partition by partition are never read locally or coalesced apart. */
  override def requiredChildDistribution: Seq[Distribution] =
    if (inputDistributions.size == children.size) inputDistributions
    else super.requiredChildDistribution
  override protected def otherCopyArgs: Seq[AnyRef] =
    Seq(original, scans, Int.box(batchRows), inputDistributions)
  override def nodeName: String = "Ember"
  /** The nodes Ember runs here, as C numbered them: `Filter (3) [loreId=1]`. */
  private def innerNodes: String = nodes.map { n =>
    val name = n.name.trim
    if (n.loreId >= 0) s"$name (${n.id}) [loreId=${n.loreId}]" else s"$name (${n.id})"
  }.mkString(", ")

  override def simpleString(maxFields: Int): String = s"Ember [$innerNodes]"
  override protected def stringArgs: Iterator[Any] = Iterator(innerNodes)

  override def verboseStringWithOperatorId(): String =
    s"""$formattedNodeName
       |Output [${output.size}]: ${output.mkString("[", ", ", "]")}
       |Native nodes [${nodes.size}]: [$innerNodes]
       |Inputs [${children.size}]: ${children.map(_.nodeName).mkString("[", ", ", "]")}
       |""".stripMargin

  override lazy val metrics: Map[String, SQLMetric] = {
    val m = Map(
      "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
      "numOutputBatches" -> SQLMetrics.createMetric(sparkContext, "number of output batches"),
      "emberTime" -> SparkShims.get.nanoTimingMetric(sparkContext, "time in Ember"),
      "peakMemory" -> SparkShims.get.sizeMetric(sparkContext, "peak native memory"),
      "spillSize" -> SparkShims.get.sizeMetric(sparkContext, "spill size"),
      "grantedMemory" -> SparkShims.get.sizeMetric(sparkContext, "off-heap memory granted by Spark"),
      "numInputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows from Spark"))
    m ++ nodes.flatMap { n =>
      Seq(s"rows.${n.source}" -> SQLMetrics.createMetric(sparkContext, s"rows out of ${n.name} (${n.id})"),
        s"time.${n.source}" -> SparkShims.get.nanoTimingMetric(sparkContext, s"time in ${n.name} (${n.id})"))
    }
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): SparkPlan =
    copy(children = newChildren)(original, scans, batchRows, inputDistributions)

  /** Equal for equal replaced subtrees over equal inputs: exchange and stage
   *  reuse compare canonical plans, so two copies of one subquery must meet
   *  here as Spark's own nodes would. The replaced subtree is compared as a
   *  plan, not as its printed text (which carries each exchange's plan id
   *  and cuts long lists). Still an Ember node, so it stays columnar. */
  override protected def doCanonicalize(): SparkPlan = {
    val replaced = if (original != null) Seq(original.canonicalized) else Nil
    val key = if (original != null) "" else planJson
    EmberExec(key, "", Nil, Nil, replaced ++ children.map(_.canonicalized), Nil)(null, Map.empty,
      batchRows, inputDistributions)
  }

  override protected def doExecute(): RDD[InternalRow] =
    throw new UnsupportedOperationException("Ember's node produces columnar batches only")

  override protected def doExecuteColumnar(): RDD[ColumnarBatch] =
    prepare(mapSide = false).asInstanceOf[RDD[ColumnarBatch]]

  /** The map side of the exchange this fragment is rooted at: (reduce
   *  partition, block) records for an EmberShuffleExchange. */
  def executeBlocks(): RDD[Product2[Int, EmberBlock]] =
    executeQuery(prepare(mapSide = true)).asInstanceOf[RDD[Product2[Int, EmberBlock]]]

  private def prepare(mapSide: Boolean): RDD[Any] = {
    val lib = Native.lib
    val spec = taskSpec()
    val fragment = lib.fragmentCreate(spec)
    val (broadcastFlags, scanSources, mapPartitions) =
      try (lib.fragmentBroadcastInputs(fragment), lib.fragmentScans(fragment),
        lib.fragmentMapPartitions(fragment))
      finally lib.fragmentDestroy(fragment)
    if (broadcastFlags.length != children.length)
      throw new EmberException(s"Ember fragment has ${broadcastFlags.length} inputs, the node " +
        s"${children.length} children")
    if (mapSide != (mapPartitions > 0))
      throw new EmberException(s"Ember fragment ${if (mapSide) "is not" else "is"} an exchange's map side")
    val inputs: Seq[EmberInput] = children.zip(broadcastFlags).map {
      case (c, true) => BroadcastInput(c.executeBroadcast[Any](), c.schema)
      case (c, false) if c.supportsColumnar =>
        StreamInput(c.executeColumnar().asInstanceOf[RDD[Any]], c.schema, columnar = true)
      case (c, false) => StreamInput(c.execute().asInstanceOf[RDD[Any]], c.schema, columnar = false)
    }
    val splits: Array[Array[FilePartition]] = scanSources.map { s =>
      val scan = scans.getOrElse(s, throw new EmberException(s"Ember fragment scan $s is unknown"))
      SparkInternals.filePartitions(scan).toArray
    }
    val streams = inputs.collect { case s: StreamInput => s.rdd }
    val counts = (streams.map(_.getNumPartitions) ++ splits.map(_.length)).distinct
    if (counts.length > 1)
      throw new EmberException(s"Ember node's inputs have different partition counts: ${counts.mkString(", ")}")
    val numPartitions = counts.headOption.getOrElse(if (readsOnlyEmptyLocalTables) 0 else 1)
    val splitJson: Array[String] = Array.tabulate(numPartitions) { p =>
      splitsJson(scanSources, splits.map(ps => if (p < ps.length) ps(p) else null))
    }
    new EmberRDD(sparkContext, spec, numPartitions, inputs, splitJson, timeZone, batchRows,
      EmberMetrics(metrics), sparkContext.getConf.getBoolean("spark.memory.offHeap.enabled", false),
      mapSide, EmberConf.broadcastCache(sparkContext.getConf))
  }

  /** Spark runs an empty LocalTableScan (a relation the optimizer proved
   *  empty) as an RDD of no partitions, so an exchange above it has no map
   *  task; a fragment reading nothing else does the same. */
  private def readsOnlyEmptyLocalTables: Boolean =
    original != null && children.isEmpty && scans.isEmpty && {
      val leaves = original.collectLeaves()
      leaves.nonEmpty && leaves.forall {
        case l: LocalTableScanExec => l.rows.isEmpty
        case _ => false
      }
    }

  private def timeZone: String = conf.sessionLocalTimeZone

  /** The fragment with the values of the scalar subqueries it reads. */
  private def taskSpec(): String = {
    val w = new PlanJson.Writer
    w.sb.append(planJson, 0, planJson.length - 1) // without the closing brace
    w.sb.append(",\"conf\":").append(confJson)
    w.sb.append(",\"subqueries\":[")
    var first = true
    subqueryExprs.foreach {
      case s: ScalarSubquery =>
        if (!first) w.sb.append(',')
        first = false
        w.sb.append("{\"exprId\":").append(s.exprId.id)
        w.sb.append(",\"type\":"); w.str(s.dataType.catalogString)
        w.sb.append(",\"value\":")
        w.literalValue(s.eval(null), s.dataType)
        w.sb.append('}')
      case _ =>
    }
    w.sb.append("]}")
    w.sb.toString
  }

  /** A partition value as Spark's cast to string gives it, which Ember reads
   *  back with the cast from string; timestamps in UTC with a 'Z', so no
   *  local time is ambiguous. */
  private def partitionValueText(row: InternalRow, j: Int, dt: DataType): String =
    if (row.isNullAt(j)) null
    else {
      val utc = dt == TimestampType
      val text = SparkShims.get.castToString(Literal(row.get(j, dt), dt), if (utc) "UTC" else timeZone).eval(null)
      if (utc) s"${text}Z" else text.toString
    }

  private def splitsJson(sources: Array[Int], parts: Array[FilePartition]): String = {
    val w = new PlanJson.Writer
    w.sb.append('[')
    sources.indices.foreach { i =>
      if (i > 0) w.sb.append(',')
      w.sb.append('[')
      val scan = scans(sources(i))
      val pschema = scan.relation.partitionSchema
      val files = if (parts(i) == null) Array.empty[org.apache.spark.sql.execution.datasources.PartitionedFile]
                  else parts(i).files
      files.zipWithIndex.foreach { case (f, k) =>
        if (k > 0) w.sb.append(',')
        w.sb.append("{\"path\":"); w.str(SparkShims.get.filePath(f))
        w.sb.append(",\"start\":").append(f.start)
        w.sb.append(",\"length\":").append(f.length)
        w.sb.append(",\"partitionNames\":[")
        pschema.fields.indices.foreach { j =>
          if (j > 0) w.sb.append(',')
          w.str(pschema.fields(j).name)
        }
        w.sb.append("],\"partitionValues\":[")
        pschema.fields.indices.foreach { j =>
          if (j > 0) w.sb.append(',')
          val text = partitionValueText(f.partitionValues, j, pschema.fields(j).dataType)
          if (text == null) w.sb.append("null") else w.str(text)
        }
        w.sb.append("]}")
      }
      w.sb.append(']')
    }
    w.sb.append(']')
    w.sb.toString
  }

}

/** An input of a fragment: this task's partition of an RDD, or a broadcast
 *  relation every task reads whole. */
sealed trait EmberInput extends Serializable
case class StreamInput(rdd: RDD[Any], schema: org.apache.spark.sql.types.StructType,
                       columnar: Boolean) extends EmberInput
case class BroadcastInput(value: Broadcast[Any], schema: org.apache.spark.sql.types.StructType)
  extends EmberInput

object EmberInput {
  def broadcastRows(v: Any, width: Int): Iterator[InternalRow] =
    SparkInternals.broadcastRows(v, width).getOrElse(
      throw new EmberException(s"Ember cannot read a broadcast of ${v.getClass.getName}"))
}

/** The node's metrics, carried to the tasks. */
case class EmberMetrics(all: Map[String, SQLMetric]) {
  def add(name: String, v: Long): Unit = all.get(name).foreach(_.add(v))
  def max(name: String, v: Long): Unit = all.get(name).foreach(m => m.set(math.max(m.value, v)))
}
