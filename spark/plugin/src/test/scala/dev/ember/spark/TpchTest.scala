// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.{DynamicTest, TestFactory}
import org.apache.spark.sql.catalyst.plans.logical.Sort
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.ember.EmberBroadcastToSparkExec

import dev.ember.spark.tools.ResultCompare

/**
 * The 22 TPC-H queries (Spark's own text of them) over SF 0.01, Ember on
 * against Ember off: the answers must be identical (Spark's types and
 * values, in order where the query orders), and each executed plan must run
 * at least as many nodes in Ember as tpch-coverage.tsv records (a fall in
 * coverage fails; a rise is reported, to be recorded).
 */
class TpchTest {
  private val coverage: Map[String, Int] = {
    val in = getClass.getResourceAsStream("/tpch-coverage.tsv")
    val lines = scala.io.Source.fromInputStream(in, StandardCharsets.UTF_8.name).getLines().toSeq
    lines.filterNot(l => l.startsWith("#") || l.trim.isEmpty).map { l =>
      val f = l.split("\t"); f(0) -> f(1).trim.toInt
    }.toMap
  }

  /** Ember nodes reading an Ember broadcast through the conversion for
   *  Spark's readers (a HashedRelation built on the driver for nothing). */
  private def emberReadsAsSpark(plan: SparkPlan): Int = {
    val below = plan match {
      case a: AdaptiveSparkPlanExec => Seq(a.executedPlan)
      case s: QueryStageExec => Seq(s.plan)
      case p => p.children
    }
    val own = plan match {
      case e: EmberExec => e.children.count(_.isInstanceOf[EmberBroadcastToSparkExec])
      case _ => 0
    }
    own + below.map(emberReadsAsSpark).sum
  }

  @TestFactory
  def tpchQueries(): java.util.List[DynamicTest] = {
    TestSpark.tpchTables
    (1 to 22).map { n =>
      DynamicTest.dynamicTest(s"q$n", () => {
        val sql = TestSpark.tpchQuery(n)
        val (ember, plan) = TestSpark.run(sql, ember = true)
        val (vanilla, vanillaPlan) = TestSpark.run(sql, ember = false)
        val ordered = TestSpark.spark.sql(sql).queryExecution.optimizedPlan
          .collectFirst { case s: Sort if s.global => s }.nonEmpty
        val diff = ResultCompare.diff(ember, vanilla, ordered)
        assertTrue(diff.isEmpty, s"q$n: answers differ: ${diff.getOrElse("")}\n$plan")
        val stats = PlanStats.of(plan)
        val want = coverage.getOrElse(s"q$n", 0)
        System.err.println(s"q$n: ${stats.emberNodes}/${stats.sparkNodes} nodes in Ember (recorded $want), " +
          s"reuses ${PlanStats.reuses(plan)} (Spark ${PlanStats.reuses(vanillaPlan)})")
        assertTrue(stats.emberNodes >= want,
          s"q$n: ${stats.emberNodes} nodes ran in Ember, tpch-coverage.tsv records $want\n$plan")
        assertTrue(PlanStats.reuses(plan) >= PlanStats.reuses(vanillaPlan),
          s"q$n: Spark reuses ${PlanStats.reuses(vanillaPlan)} exchanges or subqueries, with Ember ${PlanStats.reuses(plan)}\n$plan")
        assertEquals(0, emberReadsAsSpark(plan),
          s"q$n: an Ember node reads an Ember broadcast converted for Spark\n$plan")
      })
    }.asJava
  }
}
