// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.Test

import dev.ember.spark.tools.ResultCompare

/** Queries Ember once answered wrongly inside Spark (the causes of
 *  sql-golden/known-differences.tsv named in each test): each must give
 *  vanilla Spark's rows, in Spark's order where the query orders them. Inputs
 *  are ranges of several partitions, so that every partition pairing and
 *  every stage boundary is exercised. */
class AnswersTest {
  private def spark = TestSpark.spark

  private def same(sql: String, ordered: Boolean, conf: (String, String)*): Seq[org.apache.spark.sql.Row] = {
    val (rows, _) = TestSpark.run(sql, ember = true, conf: _*)
    val (vanilla, _) = TestSpark.run(sql, ember = false, conf: _*)
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered), sql)
    rows
  }

  private val noBroadcast = "spark.sql.autoBroadcastJoinThreshold" -> "-1"

  /** @limit-lost: AQE reads a shuffle stage's row count as its maxRows and
   *  drops a LIMIT over a stage of no more rows; Ember's shuffle records are
   *  blocks, so its stages must count rows, not records. */
  @Test def limitUnderFilter(): Unit = {
    val rows = same("SELECT * FROM (SELECT * FROM range(0, 10, 1, 3) LIMIT 5) WHERE id > 3", ordered = false)
    assertEquals(1, rows.size)
  }

  /** @cartesian: every left partition with every right partition. */
  @Test def cartesianJoinsEveryPairOfPartitions(): Unit = {
    val rows = same("SELECT * FROM range(0, 11, 1, 3) a CROSS JOIN range(0, 9, 1, 2) b", ordered = false,
      noBroadcast)
    assertEquals(99, rows.size)
    same("SELECT * FROM range(0, 11, 1, 3) a JOIN range(0, 9, 1, 2) b ON a.id < b.id", ordered = false,
      noBroadcast)
  }

  /** @full-join-constant: the unmatched rows of both sides, over every partition. */
  @Test def fullOuterJoinOnConstant(): Unit = {
    val rows = same("SELECT * FROM range(0, 7, 1, 3) a FULL OUTER JOIN range(0, 5, 1, 2) b ON false",
      ordered = false)
    assertEquals(12, rows.size)
    same("SELECT * FROM range(0, 7, 1, 3) a FULL OUTER JOIN range(0, 5, 1, 2) b ON 1 = 1",
      ordered = false)
  }

  /** @not-in: NULL on either side, null-aware broadcast join and nested-loop form. */
  @Test def notInWithNulls(): Unit = {
    val m = "(SELECT IF(id % 4 = 0, NULL, id) AS a FROM range(0, 12, 1, 3))"
    val s = "(SELECT IF(id = 5, NULL, id * 2) AS c FROM range(0, 6, 1, 2))"
    for (nullAware <- Seq("true", "false")) {
      val conf = "spark.sql.optimizeNullAwareAntiJoin" -> nullAware
      // a NULL in the subquery: no row
      assertEquals(0, same(s"SELECT * FROM $m WHERE a NOT IN (SELECT c FROM $s)", ordered = false, conf).size)
      // no NULL in the subquery: the non-NULL a it does not hold
      val kept = same(s"SELECT * FROM $m WHERE a NOT IN (SELECT c FROM $s WHERE c IS NOT NULL)",
        ordered = false, conf)
      assertTrue(kept.nonEmpty && kept.forall(!_.isNullAt(0)), kept.toString)
      // an empty subquery: every row, NULL ones too
      assertEquals(12, same(s"SELECT * FROM $m WHERE a NOT IN (SELECT c FROM $s WHERE c > 100)",
        ordered = false, conf).size)
    }
  }

  /** @ignore-nulls: the n-th non-null row, n >= 2. */
  @Test def leadLagIgnoreNulls(): Unit = {
    same("SELECT id, lead(v, 2) IGNORE NULLS OVER (ORDER BY id) AS a, " +
      "lag(v, 2) IGNORE NULLS OVER (ORDER BY id) AS b, lead(v, 0) IGNORE NULLS OVER (ORDER BY id) AS c " +
      "FROM (SELECT id, IF(id % 3 = 0, NULL, id) AS v FROM range(0, 20, 1, 3)) ORDER BY id", ordered = true)
  }

  /** @sort-order: the final ORDER BY over an aggregate and over a window. */
  @Test def orderByAfterAggregateAndWindow(): Unit = {
    same("SELECT k, count(*) AS n FROM (SELECT id % 2 AS k FROM range(0, 10, 1, 3)) GROUP BY k ORDER BY k DESC",
      ordered = true)
    same("SELECT id, rank() OVER (PARTITION BY id % 3 ORDER BY id) AS r FROM range(0, 30, 1, 3) " +
      "ORDER BY r DESC, id", ordered = true)
  }

  /** @error-form: an error Spark raises with an error class (here a cast
   *  overflow in ANSI mode) is Spark's exception, parameters and all, with
   *  Ember on too. */
  @Test def castOverflowIsSparksException(): Unit = {
    val sql = "SELECT CAST(IF(id = 2, id * 3000000000, id) AS INT) FROM range(0, 4, 1, 2)"
    def errorOf(ember: Boolean): org.apache.spark.SparkThrowable = {
      val e = assertThrows(classOf[Exception], () =>
        TestSpark.run(sql, ember, "spark.sql.ansi.enabled" -> "true"))
      Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst {
        case a: org.apache.spark.SparkThrowable
            if a.getClass.getName == "org.apache.spark.SparkArithmeticException" => a
      }.getOrElse(throw new AssertionError(s"no SparkArithmeticException (ember=$ember)", e))
    }
    val (on, off) = (errorOf(ember = true), errorOf(ember = false))
    assertEquals("CAST_OVERFLOW", on.getErrorClass)
    assertEquals(off.getErrorClass, on.getErrorClass)
    // (a map of named parameters from 3.4 on; 3.3's exceptions keep them positional)
    def params(t: org.apache.spark.SparkThrowable): Any =
      try t.getClass.getMethod("getMessageParameters").invoke(t) match {
        case a: Array[_] => a.toSeq
        case other => other
      } catch { case _: NoSuchMethodException => t.asInstanceOf[Throwable].getMessage.linesIterator.next() }
    assertEquals(params(off), params(on))
  }
}
