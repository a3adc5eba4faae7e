// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import scala.jdk.CollectionConverters._

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.{DynamicTest, TestFactory}
import org.apache.spark.sql.execution.FormattedMode

/**
 * The two plan readers on live plans: for each TPC-H query, Spark's
 * EXPLAIN FORMATTED text and the plugin's JSON of the same executed plan
 * (Ember off, AQE off: Spark's own operators, printed as Spark prints them)
 * must read into one model in C (em_plan_readers_agree).
 */
class ReadersTest {
  @TestFactory
  def sameModel(): java.util.List[DynamicTest] = {
    TestSpark.tpchTables
    (1 to 22).map { n =>
      DynamicTest.dynamicTest(s"q$n", () => {
        val (text, json) = TestSpark.withConf("spark.ember.sql.enabled" -> "false",
            "spark.sql.adaptive.enabled" -> "false") {
          val qe = TestSpark.spark.sql(TestSpark.tpchQuery(n)).queryExecution
          (qe.explainString(FormattedMode), PlanJson.write(qe.executedPlan)._1)
        }
        val diff = Native.lib.planReadersAgree(text, json)
        assertEquals("", diff, s"q$n: the readers disagree")
      })
    }.asJava
  }
}
