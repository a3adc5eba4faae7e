// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.nio.file.Files

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.Test
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}

import dev.ember.spark.tools.ResultCompare

/** Plans the overrides must leave (partly) to Spark, or hand over to Spark
 *  in Spark's own row format, so that they run at all: each query gives
 *  vanilla Spark's answer with Ember on. */
class FallbackTest {
  private def spark = TestSpark.spark
  TestSpark.tpchTables

  /** The names of the nodes Ember runs, over AQE's stages. */
  private def emberNodes(plan: SparkPlan): Seq[String] = {
    def all(p: SparkPlan): Seq[SparkPlan] = p match {
      case a: AdaptiveSparkPlanExec => all(a.executedPlan)
      case s: QueryStageExec => s +: all(s.plan)
      case _ => p +: p.children.flatMap(all)
    }
    all(plan).collect { case e: EmberExec => e.nodes.map(_.name.trim) }.flatten
  }

  /** Runs q with Ember on and off; the answers must agree. The plan with Ember on. */
  private def sameAsSpark(q: String, extra: (String, String)*): SparkPlan = {
    val (rows, plan) = TestSpark.run(q, ember = true, extra: _*)
    val (vanilla, _) = TestSpark.run(q, ember = false, extra: _*)
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false), q)
    plan
  }

  /** A union's partitions are its inputs' one after the other (here a scan of
   *  one split and a two-partition inline table) and a cartesian product's
   *  pair them; an Ember node's task reads partition p of each input, so
   *  both stay Spark's while their inputs run in Ember. */
  @Test def partitionLayoutsStaySpark(): Unit = {
    val union = sameAsSpark("SELECT k, count(*) FROM (SELECT n_regionkey AS k FROM nation " +
      "UNION ALL SELECT * FROM VALUES (7L), (8L), (9L) t(k)) GROUP BY k")
    val names = emberNodes(union)
    assertFalse(names.contains("Union"), s"$names")
    assertTrue(names.contains("HashAggregate"), s"$names")
    val cross = sameAsSpark("SELECT /*+ SHUFFLE_REPLICATE_NL(r) */ n_name, r_name FROM nation n " +
      "CROSS JOIN region r", "spark.sql.autoBroadcastJoinThreshold" -> "-1")
    assertFalse(emberNodes(cross).contains("CartesianProduct"), s"${emberNodes(cross)}")
  }

  /** A LIMIT subquery on a broadcast's map side: Spark's GlobalLimit reads
   *  Ember's single-partition shuffle as rows, and the broadcast casts each
   *  row it collects to an UnsafeRow. */
  @Test def rowsFromEmbersShuffleAreUnsafeRows(): Unit =
    sameAsSpark("SELECT * FROM nation WHERE n_regionkey IN " +
      "(SELECT r_regionkey FROM region WHERE r_regionkey >= 0 LIMIT 5)")

  /** OFFSET without LIMIT is Spark's GlobalLimit with limit -1. Under an
   *  EXISTS the LIMIT 1 Spark adds must stay: AQE drops it when a stage's
   *  row count says at most one row is left (Ember's shuffle counts blocks). */
  @Test def offsetWithoutLimit(): Unit = {
    sameAsSpark("SELECT count(*) FROM (SELECT * FROM region OFFSET 2)")
    sameAsSpark("SELECT count(*), sum(n) FROM (SELECT n_nationkey AS n FROM nation OFFSET 30)")
    sameAsSpark("SELECT count(*) FROM nation WHERE EXISTS " +
      "(SELECT r_name FROM region WHERE r_regionkey > 0 LIMIT 1 OFFSET 2)")
  }

  /** Arrays, structs, maps and intervals have no Ember vector: the scans,
   *  the exchanges and the nodes over inputs carrying them stay Spark's, and
   *  so does a scan of files holding a nested column it does not read. */
  @Test def nestedAndIntervalColumnsStaySpark(): Unit = {
    val dir = Files.createTempDirectory("ember-nested").resolve("t").toString
    spark.range(20).selectExpr("id", "named_struct('x', id, 'y', cast(id AS string)) AS s",
      "array(id, id + 1) AS a", "map(id, 'v') AS m").write.parquet(dir)
    sameAsSpark(s"SELECT s.x, a[1], m[id], id FROM parquet.`$dir` WHERE id > 3")
    sameAsSpark(s"SELECT * FROM parquet.`$dir`")
    // only a flat column read, from files that hold nested ones
    sameAsSpark(s"SELECT id, count(*) FROM parquet.`$dir` WHERE id > 3 GROUP BY id")
    sameAsSpark(s"SELECT s, count(*), sum(id) FROM parquet.`$dir` GROUP BY s")
    sameAsSpark(s"SELECT size(a), count(*) FROM parquet.`$dir` GROUP BY size(a)")
    sameAsSpark("SELECT id, make_ym_interval(1, CAST(id AS int)) + INTERVAL '1' MONTH AS i " +
      "FROM range(5)")
  }

  /** A window expression over a window function (count(NULL) folded to 0, a
   *  decimal average under a cast) is not one the Window operator evaluates. */
  @Test def windowExpressionsStaySpark(): Unit = {
    sameAsSpark("SELECT n_name, count(NULL) OVER () FROM nation")
    sameAsSpark("SELECT n_nationkey, avg(CAST(n_regionkey AS decimal(10, 2))) OVER " +
      "(ORDER BY n_nationkey ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM nation")
  }
}
