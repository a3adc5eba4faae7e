// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import org.apache.spark.sql.internal.SQLConf

/** The settings handed to C with every plan and fragment: Ember's own keys
 *  (and their spark-rapids and Gluten aliases), which C validates, and the
 *  Spark keys Ember reads. Nothing here interprets them. */
object EmberConf {
  private val Prefixes = Seq("spark.ember.", "spark.rapids.", "spark.gluten.")
  private val SparkKeys = Seq(
    "spark.sql.shuffle.partitions", "spark.sql.files.maxPartitionBytes",
    "spark.sql.files.openCostInBytes", "spark.sql.decimalOperations.allowPrecisionLoss",
    "spark.executor.memory", "spark.memory.offHeap.size", "spark.executor.cores",
    "spark.task.cpus", "spark.local.dir")

  def collect(conf: SQLConf): Map[String, String] = {
    val all = conf.getAllConfs
    val own = all.filter { case (k, _) => Prefixes.exists(k.startsWith) }
    val spark = SparkKeys.flatMap(k => all.get(k).map(k -> _))
    own ++ spark ++ Map(
      "spark.sql.ansi.enabled" -> conf.ansiEnabled.toString,
      "spark.sql.session.timeZone" -> conf.sessionLocalTimeZone)
  }

  def toJson(m: Map[String, String]): String = {
    val w = new PlanJson.Writer
    w.sb.append('{')
    var first = true
    m.toSeq.sortBy(_._1).foreach { case (k, v) =>
      if (!first) w.sb.append(',')
      first = false
      w.str(k); w.sb.append(':'); w.str(v)
    }
    w.sb.append('}')
    w.sb.toString
  }

  def enabled(conf: SQLConf): Boolean =
    conf.getConfString("spark.ember.sql.enabled", "true").trim.equalsIgnoreCase("true")

  /** Bytes of broadcast relations an executor keeps in C after their tasks end. */
  def broadcastCache(conf: org.apache.spark.SparkConf): Long =
    conf.getSizeAsBytes("spark.ember.spark.broadcastCache", "1g")

  def batchRows(conf: Map[String, String]): Int =
    conf.get("spark.ember.spark.batchRows").map(_.trim.toInt).getOrElse(2048)
}
