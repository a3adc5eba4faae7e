// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark.tools

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.ember.SparkShims
import org.apache.spark.sql.execution.FormattedMode

import dev.ember.spark.{PlanJson, Warehouse}

/** Prints, per query file, Spark's EXPLAIN FORMATTED text and Ember's
 *  structured plan of the same executed plan (AQE off): the pairs the plan
 *  readers are compared on. Usage: DumpPlans WAREHOUSE OUT_DIR QUERY.sql... */
object DumpPlans {
  def main(args: Array[String]): Unit = {
    val spark = SparkSession.builder().master("local[2]")
      .config("spark.sql.adaptive.enabled", "false")
      .config("spark.ui.enabled", "false")
      .getOrCreate()
    Warehouse.register(spark, new File(args(0)))
    val out = Paths.get(args(1))
    Files.createDirectories(out)
    args.drop(2).foreach { q =>
      val name = new File(q).getName.stripSuffix(".sql")
      val sql = new String(Files.readAllBytes(Paths.get(q)), StandardCharsets.UTF_8)
      val qe = SparkShims.get.queryExecution(spark.sql(sql))
      val plan = qe.executedPlan
      Files.write(out.resolve(s"$name.txt"),
        qe.explainString(FormattedMode).getBytes(StandardCharsets.UTF_8))
      Files.write(out.resolve(s"$name.json"), PlanJson.write(plan)._1.getBytes(StandardCharsets.UTF_8))
    }
    spark.stop()
  }
}
