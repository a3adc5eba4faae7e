// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.Test
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.types._

import dev.ember.spark.tools.ResultCompare

/** Hive-partitioned tables read natively: partition values of every type
 *  Ember reads (nulls included) as each task's splits carry them, Spark's
 *  static partition pruning and dynamic partition pruning, answers equal to
 *  vanilla Spark's. */
class PartitionedScanTest {
  private def spark = TestSpark.spark

  private lazy val tables: Unit = {
    val fact = new java.io.File(TestSpark.prop("ember.data"), "partitioned-fact").getAbsolutePath
    TestSpark.withConf("spark.ember.sql.enabled" -> "false", "spark.sql.session.timeZone" -> "UTC") {
      spark.sql(
        """SELECT id, concat('v', id % 7) AS v,
          |  CAST(id % 3 AS INT) AS p_int,
          |  CASE WHEN id % 5 = 0 THEN NULL ELSE concat('s', id % 2) END AS p_str,
          |  date_add(date '2024-02-27', CAST(id % 4 AS INT)) AS p_date,
          |  CAST((id % 3) * 1.25 AS DECIMAL(10,2)) AS p_dec,
          |  CASE WHEN id % 3 = 0 THEN NULL
          |       ELSE timestamp '2024-03-10 01:30:00' + make_interval(0, 0, 0, 0, CAST(id % 3 AS INT), 0, 0) END AS p_ts,
          |  id % 2 = 0 AS p_bool,
          |  CAST(id % 2 AS DOUBLE) / 4 AS p_dbl
          |FROM range(0, 600)""".stripMargin)
        .write.mode("overwrite").partitionBy("p_int", "p_str", "p_date", "p_dec", "p_ts", "p_bool", "p_dbl")
        .parquet(fact)
    }
    val schema = StructType(Seq(
      StructField("id", LongType), StructField("v", StringType),
      StructField("p_int", IntegerType), StructField("p_str", StringType),
      StructField("p_date", DateType), StructField("p_dec", DecimalType(10, 2)),
      StructField("p_ts", TimestampType), StructField("p_bool", BooleanType),
      StructField("p_dbl", DoubleType)))
    spark.read.schema(schema).parquet(fact).createOrReplaceTempView("pfact")
    val dim = new java.io.File(TestSpark.prop("ember.data"), "partitioned-dim").getAbsolutePath
    spark.sql("SELECT * FROM VALUES (0, 'a'), (1, 'b'), (2, 'c') AS d(k, name)")
      .write.mode("overwrite").parquet(dim)
    spark.read.parquet(dim).createOrReplaceTempView("pdim")
  }

  /** The plan's file scans: (those in Ember nodes, those Spark runs). */
  private def scans(plan: SparkPlan): (Seq[FileSourceScanExec], Seq[FileSourceScanExec]) = {
    val native = Seq.newBuilder[FileSourceScanExec]
    val spark = Seq.newBuilder[FileSourceScanExec]
    def walk(p: SparkPlan): Unit = {
      p match {
        case a: org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec => walk(a.executedPlan)
        case s: org.apache.spark.sql.execution.adaptive.QueryStageExec => walk(s.plan)
        case e: EmberExec => native ++= e.scans.values
        case s: FileSourceScanExec => spark += s
        case _ =>
      }
      p.children.foreach(walk)
    }
    walk(plan)
    (native.result(), spark.result())
  }

  /** Ember's answer equals Spark's, and every scan ran in Ember. */
  private def check(sql: String, ordered: Boolean, conf: (String, String)*): Seq[FileSourceScanExec] = {
    tables
    val (rows, plan) = TestSpark.run(sql, ember = true, conf: _*)
    val (vanilla, _) = TestSpark.run(sql, ember = false, conf: _*)
    assertTrue(vanilla.nonEmpty, s"the query should return rows: $sql")
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered), sql)
    val (inEmber, inSpark) = scans(plan)
    assertTrue(inEmber.nonEmpty && inSpark.isEmpty,
      s"every scan should run in Ember: ${inEmber.size} in Ember, ${inSpark.size} in Spark: $sql")
    inEmber.foreach(sameSplitsAsSpark)
    inEmber
  }

  /** The splits Ember's tasks read (SparkInternals.filePartitions, which
   *  does not build Spark's reader) are the ones Spark's own FileScanRDD holds. */
  private def sameSplitsAsSpark(scan: FileSourceScanExec): Unit = {
    def text(ps: Seq[org.apache.spark.sql.execution.datasources.FilePartition]) =
      ps.map(p => s"${p.index}: ${p.files.map(_.toString).mkString("; ")}")
    val spark = scan.inputRDD.asInstanceOf[org.apache.spark.sql.execution.datasources.FileScanRDD].filePartitions
    assertEquals(text(spark), text(org.apache.spark.sql.execution.ember.SparkInternals.filePartitions(scan)))
  }

  /** Files split into byte ranges and packed several to a task, as Spark does. */
  @Test def splitsAsSparksOwn(): Unit = {
    val scanned = check("SELECT p_int, count(*) AS n, sum(id) AS s FROM pfact GROUP BY p_int", ordered = false,
      "spark.sql.files.maxPartitionBytes" -> "2048", "spark.sql.files.openCostInBytes" -> "512")
    assertTrue(scanned.exists(s => org.apache.spark.sql.execution.ember.SparkInternals.filePartitions(s).length > 1),
      "the scan should take several tasks")
    TestSpark.tpchTables
    val (rows, plan) = TestSpark.run("SELECT l_returnflag, count(*) FROM lineitem GROUP BY l_returnflag",
      ember = true, "spark.sql.files.maxPartitionBytes" -> "65536")
    val (vanilla, _) = TestSpark.run("SELECT l_returnflag, count(*) FROM lineitem GROUP BY l_returnflag",
      ember = false, "spark.sql.files.maxPartitionBytes" -> "65536")
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false))
    val (inEmber, _) = scans(plan)
    assertTrue(inEmber.nonEmpty, "lineitem should be scanned in Ember")
    inEmber.foreach(sameSplitsAsSpark)
  }

  @Test def everyPartitionType(): Unit =
    for (tz <- Seq("UTC", "America/Los_Angeles"))
      check("SELECT * FROM pfact ORDER BY id", ordered = true, "spark.sql.session.timeZone" -> tz)

  @Test def groupsByPartitionColumns(): Unit =
    check("""SELECT p_int, p_str, p_date, p_dec, p_ts, p_bool, p_dbl, count(*) AS n, sum(id) AS s
            |FROM pfact GROUP BY ALL""".stripMargin, ordered = false)

  @Test def staticPruning(): Unit = {
    val scanned = check(
      """SELECT p_str, p_ts, count(*) AS n, max(v) AS m FROM pfact
        |WHERE p_int = 2 AND p_str IS NULL AND p_date >= date '2024-02-28'
        |GROUP BY p_str, p_ts""".stripMargin, ordered = false)
    val parts = scanned.map(s => org.apache.spark.sql.execution.ember.SparkShims.get.selectedPartitions(s).get.size)
    assertTrue(parts.forall(_ < 10), s"partitions should be pruned: $parts")
  }

  @Test def dynamicPruning(): Unit = {
    val sql = """SELECT d.name, count(*) AS n, sum(f.id) AS s FROM pfact f JOIN pdim d ON f.p_int = d.k
                |WHERE d.name = 'b' GROUP BY d.name""".stripMargin
    // the join's own broadcast, and (reuseBroadcastOnly off) a broadcast of the pruning subquery
    for (reuseOnly <- Seq("true", "false")) {
      val scanned = check(sql, ordered = false,
        "spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly" -> reuseOnly)
      val dpp = scanned.flatMap(_.partitionFilters).exists(_.toString.contains("dynamicpruning"))
      assertTrue(dpp, s"the fact scan should carry a dynamic pruning filter (reuseBroadcastOnly=$reuseOnly)")
    }
  }
}
