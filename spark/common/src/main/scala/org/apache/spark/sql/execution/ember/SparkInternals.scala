// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.execution.ember

import org.apache.arrow.memory.RootAllocator
import org.apache.spark.{SparkContext, TaskContext}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow}
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.{DataSourceStrategy, FilePartition, FileScanRDD}
import org.apache.spark.sql.execution.joins.{EmptyHashedRelation, HashedRelation, HashedRelationWithAllNullKeys, LongHashedRelation}
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.util.ArrowUtils


/** The few members Spark keeps package-private that Ember's plugin needs,
 *  in one place (this package reaches private[execution], [sql] and
 *  [spark]); everything else of Ember lives in dev.ember.spark. */
object SparkInternals {
  /** A scan's data filters as the data source filters Spark pushes to Parquet. */
  def pushedFilters(dataFilters: Seq[Expression]): Seq[Filter] =
    dataFilters.flatMap(DataSourceStrategy.translateFilter(_, supportNestedPredicatePushdown = true))

  /**
   * A scan's file partitions, as Spark's FileScanRDD would hold them (the
   * files its static and dynamic partition filters select, split and packed
   * by Spark's own FilePartition rules), without building Spark's Parquet
   * reader, which Ember does not use and which broadcasts the Hadoop
   * configuration once per scan: 40 to 70 ms each on the driver's planning
   * thread, one scan after another. Bucketed scans and bucket pruning take
   * Spark's own path.
   */
  def filePartitions(scan: FileSourceScanExec): Seq[FilePartition] = {
    def viaSpark: Seq[FilePartition] = scan.inputRDD match {
      case f: FileScanRDD => f.filePartitions
      case other => throw new IllegalStateException(s"Ember: the scan's RDD is a ${other.getClass.getName}")
    }
    if (scan.bucketedScan || scan.optionalBucketSet.isDefined) return viaSpark
    val selected = SparkShims.get.selectedPartitions(scan).getOrElse(return viaSpark)
    val relation = scan.relation
    val session = relation.sparkSession
    val maxSplitBytes = FilePartition.maxSplitBytes(session, selected)
    val files = selected.flatMap(p => SparkShims.get.splitFiles(relation, p, maxSplitBytes)).sortBy(_.length)(Ordering[Long].reverse)
    FilePartition.getFilePartitions(session, files, maxSplitBytes)
  }

  def arrowAllocator: RootAllocator = ArrowUtils.rootAllocator

  def killReason(ctx: TaskContext): String = ctx.getKillReason().getOrElse("cancelled")

  def taskMemoryManager(ctx: TaskContext): org.apache.spark.memory.TaskMemoryManager =
    ctx.taskMemoryManager()

  /** The live SparkConf of a context (settings made here reach sessions built after). */
  def setConf(sc: SparkContext, key: String, value: String): Unit = sc.conf.set(key, value)

  def postDriverMetrics(sc: SparkContext, m: org.apache.spark.sql.execution.metric.SQLMetric): Unit = {
    val id = sc.getLocalProperty(org.apache.spark.sql.execution.SQLExecution.EXECUTION_ID_KEY)
    org.apache.spark.sql.execution.metric.SQLMetrics.postDriverMetricUpdates(sc, id, m :: Nil)
  }

  /** The rows of a broadcast relation: a HashedRelation (what a hash join's
   *  broadcast holds: every row with a non-null key, which is every row such
   *  a join can match) or an array of rows (IdentityBroadcastMode). A
   *  null-aware anti join's relation that saw a null key stands for one row
   *  of nulls, which makes Ember's null-aware join return what Spark's does. */
  def broadcastRows(v: Any, width: Int): Option[Iterator[InternalRow]] = v match {
    case HashedRelationWithAllNullKeys => Some(Iterator.single(new GenericInternalRow(width)))
    // an unsafe relation iterates one record per value (keys repeat), a long
    // relation each key once with its values chained
    case r: EmberBroadcastRelation => Some(r.rows())
    case EmptyHashedRelation => Some(Iterator.empty)
    // a relation's lookups reuse its result rows: each task reads its own copy, as Spark's joins do
    case h: HashedRelation => h.asReadOnlyCopy() match {
      case l: LongHashedRelation => Some(l.keys().flatMap(k => l.get(k.getLong(0))))
      case c => Some(c.valuesWithKeyIndex().map(_.getValue))
    }
    case rows: Array[InternalRow] => Some(rows.iterator)
    case _ => None
  }
}
