// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.util.Base64

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.catalyst.plans.physical.BroadcastPartitioning
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.ember.EmberShuffleExchange
import org.apache.spark.sql.execution.ember.SparkInternals
import org.apache.spark.sql.types.{DataType, Decimal, Metadata}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Spark's physical plan as Ember's structured plan (JSON), read in C by
 * src/plan/plan_read.c. Generic on purpose: every node and expression is
 * written as its class and its constructor fields, so nothing here knows which
 * operators or functions Ember supports (the C side decides). What Spark's own
 * TreeNode.toJSON loses is kept: sequences are never truncated, enumerations
 * (evalMode) and case objects (join types, modes) are written by name, every
 * expression carries its resolved data type, and literals carry their value
 * typed. Plan nodes are numbered in pre-order ("id"); a child field is
 * {"child": i}; a query stage is written without its inner plan (its output
 * is what a stage above reads), and so is a fragment's input. See
 * docs/spark.md for the format.
 */
object PlanJson {
  val FormatVersion = 1

  /** The plan as JSON, and its nodes by id (node i of the JSON is nodes(i)):
   *  the tree in pre-order from 0, subquery plans numbered where they occur. */
  def write(root: SparkPlan): (String, IndexedSeq[SparkPlan]) = write(root, Nil)

  /** A plan fragment: as write(), but each of `inputs` (nodes of the tree,
   *  compared by reference) is written without its subtree and marked
   *  "input": k, its position in `inputs`. */
  def write(root: SparkPlan, inputs: Seq[SparkPlan]): (String, IndexedSeq[SparkPlan]) = {
    val w = new Writer(inputs)
    w.sb.append("{\"format\":").append(FormatVersion)
    w.sb.append(",\"spark\":"); w.str(org.apache.spark.SPARK_VERSION)
    w.sb.append(",\"root\":")
    w.plan(root)
    w.sb.append('}')
    (w.sb.toString, w.nodes.toIndexedSeq)
  }

  /** Nodes written without their subtree: materialized AQE stages. */
  def isBoundaryLeaf(p: SparkPlan): Boolean = p.isInstanceOf[QueryStageExec]

  final class Writer(inputs: Seq[SparkPlan] = Nil) {
    val sb = new java.lang.StringBuilder(4096)
    val nodes = mutable.ArrayBuffer.empty[SparkPlan]

    def plan(p: SparkPlan): Unit = {
      val id = nodes.length
      nodes += p
      sb.append("{\"class\":"); str(p.getClass.getName)
      sb.append(",\"id\":").append(id)
      sb.append(",\"name\":"); str(p.nodeName)
      sb.append(",\"output\":["); sep(p.output)(expr); sb.append(']')
      val input = inputs.indexWhere(_ eq p)
      if (input >= 0) {
        sb.append(",\"input\":").append(input)
        val broadcast = p.outputPartitioning.isInstanceOf[BroadcastPartitioning]
        sb.append(",\"broadcast\":").append(broadcast)
      }
      val kids = if (input >= 0 || isBoundaryLeaf(p)) Nil else p.children
      p match {
        case s: QueryStageExec =>
          sb.append(",\"stage\":{\"id\":").append(s.id)
          sb.append(",\"plan\":"); str(s.plan.getClass.getName)
          sb.append(",\"planName\":"); str(s.plan.nodeName)
          sb.append(",\"emberShuffle\":").append(s.plan.isInstanceOf[EmberShuffleExchange])
          sb.append('}')
        case _ =>
          sb.append(",\"fields\":")
          fields(p, p.children) // an input's children too, as indices: not written below
      }
      p match {
        case scan: FileSourceScanExec => scanExtra(scan)
        case _ =>
      }
      sb.append(",\"children\":[")
      var first = true
      kids.foreach { c =>
        if (!first) sb.append(',')
        first = false
        plan(c)
      }
      sb.append("]}")
    }

    private def scanExtra(scan: FileSourceScanExec): Unit = {
      val rel = scan.relation
      sb.append(",\"scan\":{\"format\":"); str(rel.fileFormat.toString)
      sb.append(",\"dataSchema\":"); str(rel.dataSchema.catalogString)
      sb.append(",\"partitionSchema\":"); str(rel.partitionSchema.catalogString)
      sb.append(",\"requiredSchema\":"); str(scan.requiredSchema.catalogString)
      sb.append(",\"rootPaths\":[")
      sep(rel.location.rootPaths)(p => str(p.toString))
      sb.append("],\"pushedFilters\":[")
      sep(SparkInternals.pushedFilters(scan.dataFilters))(f => value(f, Nil))
      sb.append("],\"options\":{")
      sep(rel.options.toSeq.sortBy(_._1)) { case (k, v) => str(k); sb.append(':'); str(v) }
      sb.append("}}")
    }

    /** The node's constructor fields, children as {"child": i}. */
    private def fields(p: Product, kids: Seq[SparkPlan]): Unit = {
      sb.append('{')
      val names = p.productElementNames
      var first = true
      p.productIterator.foreach { v =>
        val n = names.next()
        if (!first) sb.append(',')
        first = false
        str(n); sb.append(':')
        value(v, kids)
      }
      sb.append('}')
    }

    def expr(e: Expression): Unit = {
      sb.append("{\"class\":"); str(e.getClass.getName)
      sb.append(",\"pretty\":"); str(safe(e.prettyName))
      val dt = try Some(e.dataType) catch { case _: Throwable => None }
      dt.foreach { t => sb.append(",\"type\":"); str(t.catalogString) }
      val nullable = try Some(e.nullable) catch { case _: Throwable => None }
      nullable.foreach(n => sb.append(",\"nullable\":").append(n))
      e match {
        case ne: NamedExpression if ne.resolved => sb.append(",\"exprId\":").append(ne.exprId.id)
        case _ =>
      }
      e match {
        case l: Literal =>
          sb.append(",\"value\":")
          literalValue(l.value, l.dataType)
        case _ =>
          sb.append(",\"fields\":")
          fields(e, Nil)
      }
      sb.append('}')
    }

    /** A literal's value: JSON numbers and booleans, text for the rest
     *  (decimals as digits, dates as days, timestamps as microseconds,
     *  binary as base64). */
    def literalValue(v: Any, t: DataType): Unit = v match {
      case null => sb.append("null")
      case s: UTF8String => str(s.toString)
      case d: Decimal => str(d.toJavaBigDecimal.toPlainString)
      case b: Array[Byte] => str(Base64.getEncoder.encodeToString(b))
      case f: Float => floating(f.toDouble)
      case d: Double => floating(d)
      case b: Boolean => sb.append(b)
      case n: java.lang.Number => sb.append(n.toString)
      case a: ArrayData =>
        sb.append("{\"array\":[")
        val et = t match { case at: org.apache.spark.sql.types.ArrayType => at.elementType; case _ => t }
        var i = 0
        while (i < a.numElements()) {
          if (i > 0) sb.append(',')
          literalValue(if (a.isNullAt(i)) null else a.get(i, et), et)
          i += 1
        }
        sb.append("]}")
      case _: MapData | _: InternalRow => sb.append("{\"unsupported\":"); str(t.catalogString); sb.append('}')
      case other => str(other.toString)
    }

    private def floating(d: Double): Unit =
      if (d.isNaN || d.isInfinite) str(d.toString) else sb.append(d.toString)

    def value(v: Any, kids: Seq[SparkPlan]): Unit = v match {
      case null => sb.append("null")
      case p: SparkPlan =>
        val i = kids.indexWhere(_ eq p)
        if (i >= 0) sb.append("{\"child\":").append(i).append('}')
        else { sb.append("{\"plan\":"); plan(p); sb.append('}') }
      case e: Expression => expr(e)
      case lp: LogicalPlan => sb.append("{\"class\":"); str(lp.getClass.getName); sb.append('}')
      case s: String => str(s)
      case u: UTF8String => str(u.toString)
      case b: Boolean => sb.append(b)
      case f: Float => floating(f.toDouble)
      case d: Double => floating(d)
      case n: Int => sb.append(n)
      case n: Long => sb.append(n)
      case n: Short => sb.append(n)
      case n: Byte => sb.append(n)
      case d: java.math.BigDecimal => str(d.toPlainString)
      case d: Decimal => str(d.toJavaBigDecimal.toPlainString)
      case d: java.sql.Date => str(d.toString)
      case t: java.sql.Timestamp => str(t.toString)
      case d: java.time.LocalDate => str(d.toString)
      case t: java.time.Instant => str(t.toString)
      case t: DataType => str(t.catalogString)
      case m: Metadata => str(m.json)
      case e: Enumeration#Value => str(e.toString)
      case o: Option[_] => if (o.isEmpty) sb.append("null") else value(o.get, kids)
      case b: Array[Byte] => str(Base64.getEncoder.encodeToString(b))
      case a: Array[_] => sb.append('['); sep(a.toSeq)(x => value(x, kids)); sb.append(']')
      case m: scala.collection.Map[_, _] =>
        sb.append('{')
        sep(m.toSeq) { case (k, x) => str(String.valueOf(k)); sb.append(':'); value(x, kids) }
        sb.append('}')
      case s: Iterable[_] => sb.append('['); sep(s.toSeq)(x => value(x, kids)); sb.append(']')
      case p: Product if p.getClass.getName.endsWith("$") => str(objectName(p))
      // a pushed data source filter nests as deep as its predicate
      case f: org.apache.spark.sql.sources.Filter with Product =>
        sb.append("{\"class\":"); str(f.getClass.getName)
        sb.append(",\"fields\":")
        fields(f, kids)
        sb.append('}')
      case p: Product if productDepth < MaxProductDepth =>
        productDepth += 1
        try {
          sb.append("{\"class\":"); str(p.getClass.getName)
          sb.append(",\"fields\":")
          fields(p, kids)
          sb.append('}')
        } finally productDepth -= 1
      case u: java.util.UUID => str(u.toString)
      case u: java.net.URI => str(u.toString)
      case other =>
        // only the class: toString may be costly or run things (a QueryExecution plans)
        sb.append("{\"class\":"); str(other.getClass.getName); sb.append('}')
    }

    /** Products that are neither plans nor expressions (a join type, a
     *  broadcast mode, a stage's context) are written this deep at most. */
    private val MaxProductDepth = 3
    private var productDepth = 0

    private def objectName(o: Any): String = {
      val n = o.getClass.getName.stripSuffix("$")
      n.substring(math.max(n.lastIndexOf('.'), n.lastIndexOf('$')) + 1)
    }

    private def safe(s: => String): String = try s catch { case _: Throwable => "" }

    private def sep[T](xs: Iterable[T])(f: T => Unit): Unit = {
      var first = true
      xs.foreach { x =>
        if (!first) sb.append(',')
        first = false
        f(x)
      }
    }

    def str(s: String): Unit = {
      sb.append('"')
      var i = 0
      while (i < s.length) {
        val c = s.charAt(i)
        c match {
          case '"' => sb.append("\\\"")
          case '\\' => sb.append("\\\\")
          case '\n' => sb.append("\\n")
          case '\r' => sb.append("\\r")
          case '\t' => sb.append("\\t")
          case _ if c < 0x20 => sb.append(f"\\u${c.toInt}%04x")
          case _ => sb.append(c)
        }
        i += 1
      }
      sb.append('"')
    }
  }
}
