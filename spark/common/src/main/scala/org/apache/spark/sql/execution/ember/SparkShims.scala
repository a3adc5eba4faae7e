// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember

import java.util.ServiceLoader

import scala.jdk.CollectionConverters._

import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.ShuffleWriteProcessor
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.physical.{BroadcastMode, Partitioning}
import org.apache.spark.sql.execution.{FileSourceScanExec, QueryExecution, SparkPlan, SubqueryBroadcastExec}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, PartitionDirectory, PartitionedFile}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.StructType
import org.apache.spark.storage.BlockManagerId

/**
 * What differs between the Spark lines Ember supports, as the common code
 * (compiled once, against the oldest line) sees it. Each line's
 * implementation lives in its own module (spark/shims/sparkNN), compiled
 * against that line, and is found at run time by the ShimServiceProvider
 * that claims the running Spark's version; only that line's classes are
 * ever loaded. docs/shims.md says how to add a line.
 */
trait SparkShims {
  /** The line, major.minor ("3.5"). */
  def line: String

  /** Ember's shuffle exchange over `mapSide` (an EmberExec): a class per
   *  line because ShuffleExchangeLike's members change between lines. */
  def shuffleExchange(partitioning: Partitioning, mapSide: SparkPlan, origin: ShuffleOrigin,
                      advisoryPartitionSize: Option[Long]): SparkPlan

  /** Ember's broadcast exchange over `mapSide` (an EmberExec). */
  def broadcastExchange(mode: BroadcastMode, mapSide: SparkPlan): SparkPlan

  /** The map side's writer of an Ember shuffle (EmberShuffleFiles). */
  def shuffleWriteProcessor(metrics: Map[String, SQLMetric], dataSize: SQLMetric,
                            rowsWritten: SQLMetric): ShuffleWriteProcessor

  /** One partition folder's files, split as Spark's file scan cuts them. */
  def splitFiles(relation: HadoopFsRelation, dir: PartitionDirectory,
                 maxSplitBytes: Long): Seq[PartitionedFile]

  /** A split's file, as a local path (its URI's path). */
  def filePath(f: PartitionedFile): String

  /** The advisory partition size an exchange carries (3.5 on). */
  def advisoryPartitionSize(x: ShuffleExchangeExec): Option[Long]

  /** Registers a map task's files with the sort shuffle manager, which
   *  removes them when the shuffle is dropped. */
  def registerMapOutput(manager: SortShuffleManager, shuffleId: Int, mapId: Long): Unit

  /** Spark's cast of a value to its text (a partition value's folder
   *  name): Cast's fourth parameter changed type in 3.4. */
  def castToString(e: Expression, timeZone: String): Expression

  /** SQL metrics of a size or a time: their factories gained a default
   *  argument in 3.5, which changed their binary signature. */
  def sizeMetric(sc: SparkContext, name: String): SQLMetric
  def timingMetric(sc: SparkContext, name: String): SQLMetric
  def nanoTimingMetric(sc: SparkContext, name: String): SQLMetric

  /** A local directory of this executor (Utils.getLocalDir: its parameter
   *  became a ReadOnlySparkConf in 4.1). */
  def localDir(conf: SparkConf): String

  /** A map task's status (MapStatus.apply gained a default argument in 4.1). */
  def mapStatus(loc: BlockManagerId, lengths: Array[Long], mapId: Long): MapStatus

  /** Spark's schema for Arrow, as its own Arrow writers make it. */
  def toArrowSchema(schema: StructType, timeZone: String): Schema

  /** Spark's SparkArithmeticException with its error class and parameters. */
  def arithmeticException(errorClass: String, params: Map[String, String]): Throwable

  /** The partition folders a file scan reads after static and dynamic
   *  pruning, as its FileScanRDD would (None: leave it to Spark's RDD). */
  def selectedPartitions(scan: FileSourceScanExec): Option[Seq[PartitionDirectory]]

  /** The QueryExecution of a DataFrame (a classic one from Spark 4 on). */
  def queryExecution(df: DataFrame): QueryExecution

  /** Which build keys a dynamic-pruning subquery reads (one before 4.0). */
  def subqueryKeyIndices(s: SubqueryBroadcastExec): Seq[Int]

  /** Spark's own dynamic-pruning subquery over a broadcast. */
  def subqueryBroadcast(name: String, keyIndices: Seq[Int], buildKeys: Seq[Expression],
                        child: SparkPlan): SubqueryBroadcastExec
}

/** Claims Spark versions for one SparkShims. Listed in
 *  META-INF/services/org.apache.spark.sql.execution.ember.ShimServiceProvider by each line's
 *  module; loadable on every line, so it names its shims only by class name. */
trait ShimServiceProvider {
  /** The lines it claims, major.minor. */
  def lines: Seq[String]
  def shimsClassName: String
}

object SparkShims {
  private lazy val providers: Seq[ShimServiceProvider] =
    ServiceLoader.load(classOf[ShimServiceProvider], getClass.getClassLoader).asScala.toSeq

  /** Every line this jar carries shims for, oldest first. */
  def supportedLines: Seq[String] =
    providers.flatMap(_.lines).distinct.sortBy(_.split('.').map(_.toInt).toSeq)(Ordering.Implicits.seqOrdering)

  def lineOf(version: String): String = version.split("[.-]").take(2).mkString(".")

  /** The provider for a Spark version; None for a line this jar lacks. */
  def providerFor(version: String): Option[ShimServiceProvider] =
    providers.find(_.lines.contains(lineOf(version)))

  /** The running Spark's shims. With the version check off, an unknown
   *  line takes the newest line's shims not newer than it (or the oldest). */
  lazy val get: SparkShims = {
    val running = org.apache.spark.SPARK_VERSION
    val provider = providerFor(running).getOrElse {
      val key = (v: String) => v.split('.').map(_.toInt).toSeq
      val ord = Ordering.Implicits.seqOrdering[Seq, Int]
      val byLine = providers.flatMap(p => p.lines.map(l => (key(l), p))).sortBy(_._1)(ord)
      if (byLine.isEmpty) throw new IllegalStateException("Ember's jar carries no Spark shims")
      byLine.filter(l => ord.lteq(l._1, key(lineOf(running)))).lastOption.getOrElse(byLine.head)._2
    }
    Class.forName(provider.shimsClassName, true, getClass.getClassLoader)
      .getDeclaredConstructor().newInstance().asInstanceOf[SparkShims]
  }
}
