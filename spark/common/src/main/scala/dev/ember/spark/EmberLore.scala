// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.arrow.c.{ArrowArrayStream, Data}
import org.apache.hadoop.fs.Path
import org.apache.spark.{Partition, SparkContext, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.execution.ember.SparkInternals
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/**
 * LORE inside Spark, the driver's part (docs/lore.md). C gives the ids and
 * its tasks write the dumps; what needs the query's identity lives here:
 *  - AQE plans a query one stage at a time, and each plan C is given would
 *    number its operators from 0, so each is given the count of ids handed
 *    out so far in the same SQL execution (spark.ember.sql.lore.idBase):
 *    the ids of one query are unique and, for the same query, data and
 *    settings, the same from run to run;
 *  - the dump folder is checked once per execution, before any task runs,
 *    with spark-rapids' rule and message (a folder holding anything is
 *    refused); the tasks then write into it side by side;
 *  - restore, spark-rapids' replay in a session: a dumped operator run again
 *    by C in Spark's tasks, its output a DataFrame.
 */
object EmberLore {
  private val nextId = new ConcurrentHashMap[String, AtomicInteger]()
  private val verdicts = new ConcurrentHashMap[String, String]()

  // the running context: planning happens on the driver, in the query's thread
  private def sc: SparkContext = SparkContext.getOrCreate()

  private def executionId: Option[String] = Option(sc.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))

  private def setting(conf: SQLConf, key: String): Option[String] =
    Seq(s"spark.ember.sql.lore.$key", s"spark.rapids.sql.lore.$key")
      .flatMap(k => Option(conf.getConfString(k, null))).map(_.trim).find(_.nonEmpty)

  /** The first LORE id of the next plan of this query (0 outside an execution). */
  def idBase(): Int =
    executionId.map(id => nextId.computeIfAbsent(id, _ => new AtomicInteger(0)).get).getOrElse(0)

  /** Ids up to (not including) `end` are taken in this query. */
  def taken(end: Int): Unit =
    executionId.foreach { id =>
      nextId.computeIfAbsent(id, _ => new AtomicInteger(0)).accumulateAndGet(end, math.max)
    }

  /** The settings C gets with LORE's folder as a local path, after the
   *  folder is checked (once per execution). C's tasks write with the
   *  operating system's calls, so the folder must be a local one (file:
   *  or a bare path) that every executor sees. */
  def settings(conf: SQLConf, all: Map[String, String]): Map[String, String] = {
    if (setting(conf, "idsToDump").isEmpty) return all
    val given = setting(conf, "dumpPath").getOrElse(return all) // C refuses ids without a path
    val path = new Path(given)
    val fs = path.getFileSystem(sc.hadoopConfiguration)
    if (fs.getScheme != "file")
      throw new IllegalArgumentException(s"Ember: LORE dump path $given: Ember's tasks write " +
        s"dumps to a local file system (file:/... or a plain path), not ${fs.getScheme}:")
    // once per execution, and the same verdict every time: Spark may plan a
    // query again after a first attempt failed (the UI's plan description
    // swallows its error)
    def verdict: String =
      if (fs.exists(path) && fs.listStatus(path).nonEmpty) s"LORE dump path $given already exists and is not empty."
      else ""
    val refusal = executionId.map(id => verdicts.computeIfAbsent(id, _ => verdict)).getOrElse(verdict)
    if (refusal.nonEmpty) throw new IllegalArgumentException(refusal)
    val local = fs.makeQualified(path).toUri.getPath
    all.filterNot { case (k, _) => k.endsWith(".lore.dumpPath") } + ("spark.ember.sql.lore.dumpPath" -> local)
  }

  /** The operator of a LORE dump (DIR/loreId-N) run again over its dumped
   *  input, one Spark task per dumped partition, its output as a DataFrame
   *  (`ember lore replay` does the same without Spark). The folder must be
   *  readable where the tasks run. */
  def restore(session: SparkSession, dir: String): DataFrame = {
    val desc = new ObjectMapper().readTree(Native.lib.loreDescribe(dir))
    val schema = StructType(desc.get("columns").elements().asScala.map { c =>
      StructField(c.get("name").asText(), DataType.fromDDL(c.get("type").asText()))
    }.toSeq)
    val partitions = desc.get("partitions").elements().asScala.map(_.asInt()).toArray
    session.createDataFrame(new LoreReplayRDD(session.sparkContext, dir, partitions, schema), schema)
  }
}

private final case class LorePartition(index: Int, dumped: Int) extends Partition

/** One task per dumped partition, each replaying the operator over it in C. */
private final class LoreReplayRDD(sc: SparkContext, dir: String, dumped: Array[Int], schema: StructType)
  extends RDD[Row](sc, Nil) {
  override protected def getPartitions: Array[Partition] =
    dumped.indices.map(i => LorePartition(i, dumped(i)): Partition).toArray

  override def compute(split: Partition, ctx: TaskContext): Iterator[Row] = {
    val p = split.asInstanceOf[LorePartition].dumped
    val lib = Native.lib
    val alloc = SparkInternals.arrowAllocator.newChildAllocator(s"LORE replay $p", 0, Long.MaxValue)
    val stream = ArrowArrayStream.allocateNew(alloc)
    val handle =
      try lib.loreReplayOpen(dir, p, stream.memoryAddress())
      catch { case t: Throwable => stream.close(); alloc.close(); throw t }
    val reader = Data.importArrayStream(alloc, stream)
    // the arrays first, then C's batches behind them, then the allocator
    ctx.addTaskCompletionListener[Unit] { _ =>
      try reader.close() finally { stream.close(); lib.loreReplayClose(handle); alloc.close() }
    }
    val toRow = CatalystTypeConverters.createToScalaConverter(schema)
    new ArrowBatchIterator(reader, () => ()).flatMap { b =>
      b.rowIterator().asScala.map(r => toRow(r).asInstanceOf[Row])
    }
  }
}
