// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.{DynamicTest, TestFactory}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, BindReferences, InterpretedOrdering, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.Sort
import org.apache.spark.sql.types.StructType

import dev.ember.spark.tools.ResultCompare

/**
 * Spark's TPC-DS queries (v1.4, v2.7 and the modified ones, from the
 * spark-sql tests jar) over the Tpcds tables in Spark's layout, Ember on
 * against Ember off: the answers must be identical (in the query's order;
 * rows equal under its ORDER BY in either order); and the plan Spark prints
 * for the query, run by `ember run` over the same files, must give the same
 * rows (emberRun). Unless tpcds-known.tsv gives the reason they are not
 * yet (an expected failure: a query listed there that now agrees fails, so
 * the line is removed with the fix).
 *
 * Every query runs in every mvn test (about 6 minutes on 2 cores, the
 * tables' creation included); -Dember.tpcds.queries=q72,v2_7/q14a runs
 * those only. -Dember.tpcds.plans=DIR keeps the printed plans there;
 * -Dember.tpcds.report=FILE writes a line per query (name, outcome, Ember
 * and vanilla milliseconds, nodes in Ember, Spark's row count, message).
 */
class TpcdsTest {
  private def lines(res: String): Seq[String] =
    TestSpark.resource(res).getOrElse(throw new IllegalStateException(s"$res is missing"))
      .split("\n").toSeq.map(_.trim).filterNot(l => l.isEmpty || l.startsWith("#"))

  /** name<TAB>reason, or name@LINE<TAB>reason for one Spark line only. */
  private def knownIn(res: String): Map[String, String] = {
    val line = org.apache.spark.sql.execution.ember.SparkShims.lineOf(org.apache.spark.SPARK_VERSION)
    lines(res).flatMap { l =>
      val f = l.split("\t", 2)
      f(0).trim.split("@", 2) match {
        case Array(name, only) => if (only == line) Some(name -> f(1).trim) else None
        case Array(name) => Some(name -> f(1).trim)
      }
    }.toMap
  }

  private val known = knownIn("tpcds-known.tsv")

  private val selected: Seq[(String, String)] = {
    val all = Tpcds.queries
    Option(System.getProperty("ember.tpcds.queries")).map(_.trim).filter(_.nonEmpty) match {
      case None | Some("all") => all
      case Some(list) =>
        val names = list.split(",").map(_.trim).toSet
        all.filter { case (n, _) => names.contains(n) }
    }
  }

  private val report = Option(System.getProperty("ember.tpcds.report")).map(new File(_))

  /** A session of its own (the TPC-H tables of the other tests are temporary
   *  views, one of them named customer), in database tpcds. */
  private lazy val spark: SparkSession = {
    val s = TestSpark.spark.newSession()
    s.sql("CREATE DATABASE IF NOT EXISTS tpcds")
    s.catalog.setCurrentDatabase("tpcds")
    s
  }

  private def withEmber[T](on: Boolean)(f: => T): T = {
    spark.conf.set("spark.ember.sql.enabled", on.toString)
    try f finally spark.conf.unset("spark.ember.sql.enabled")
  }

  private lazy val tables: Unit = {
    val target = new File(TestSpark.prop("ember.data"))
    Tpcds.create(spark, new File(target, "tpcds-tiny"))
  }

  private def record(line: String): Unit =
    report.foreach { f =>
      Files.write(f.toPath, (line + "\n").getBytes(StandardCharsets.UTF_8),
        java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND)
    }

  /** None when Ember gives Spark's answer (vanilla, which took vanillaMs),
   *  else what differs. */
  private def compare(name: String, sql: String, vanilla: Seq[Row], vanillaMs: Long,
                      vanillaReuses: Int): Option[String] = {
    val t1 = System.nanoTime()
    var df: org.apache.spark.sql.DataFrame = null
    val (ember, plan) =
      try withEmber(on = true) {
        df = spark.sql(sql)
        (df.collect().toSeq, df.queryExecution.executedPlan)
      } catch { case NonFatal(e) =>
        if (df != null) System.err.println(s"$name: the plan that failed:\n${df.queryExecution.executedPlan}")
        // the innermost cause holds Ember's message (Spark wraps it in its stage and job errors)
        val root = Iterator.iterate(e: Throwable)(_.getCause).takeWhile(_ != null).toSeq.last
        val msg = s"Ember failed: ${root.toString.linesIterator.take(2).mkString(" ")}"
        System.err.println(s"$name: $msg\n  at " + root.getStackTrace.take(30).mkString("\n  at "))
        record(s"$name\tfailed\t\t$vanillaMs\t\t${vanilla.size}\t$msg")
        return Some(msg)
      }
    val t2 = System.nanoTime()
    val optimized = spark.sql(sql).queryExecution.optimizedPlan
    val sort = optimized.collectFirst { case s: Sort if s.global => s }
    val diff = ResultCompare.diff(ember, vanilla, sort.nonEmpty).flatMap { d =>
      // rows equal under the query's ORDER BY may come in any order (Spark's as well)
      if (sort.nonEmpty && ResultCompare.diff(ember, vanilla, ordered = false).isEmpty) {
        if (sortedBy(ember, sort.get.order, optimized.output)) None
        else Some(s"same rows, not in the query's order: $d")
      } else Some(d)
    }
    val stats = PlanStats.of(plan)
    record(s"$name\t${if (diff.isEmpty) "equal" else "differs"}\t${(t2 - t1) / 1000000}\t$vanillaMs" +
      s"\t${stats.emberNodes}/${stats.sparkNodes}\t${vanilla.size}\t${diff.getOrElse("").replace('\n', ' ').take(300)}")
    val reused = PlanStats.reuses(plan)
    diff.map(d => s"answers differ: $d\n$plan").orElse(
      if (reused >= vanillaReuses || reusesOnRerun(sql, vanillaReuses)) None
      else Some(s"Spark reuses $vanillaReuses exchanges or subqueries, with Ember $reused (and in two more runs)\n$plan"))
  }

  /** Whether another run or two with Ember reuses `want` exchanges and
   *  subqueries. AQE's final plan depends on the order in which stages
   *  finish (a join re-planned once one side's size is known), so its
   *  reuses vary a little from run to run, with Ember or without; a reuse
   *  that Ember's nodes hide from Spark is missing from every run. */
  private def reusesOnRerun(sql: String, want: Int): Boolean =
    (1 to 2).exists { _ =>
      withEmber(on = true) {
        val df = spark.sql(sql)
        df.collect()
        PlanStats.reuses(df.queryExecution.executedPlan) >= want
      }
    }

  private val plansDir: File = Option(System.getProperty("ember.tpcds.plans")).map(new File(_))
    .getOrElse(new File(new File(TestSpark.prop("ember.data")).getParentFile, "tpcds-plans"))

  /** A value as both sides print it: JSON number text is Ember's, so
   *  Spark's decimals are plain digits and doubles as Java prints them. */
  private def canonical(v: Any): String = v match {
    case null => "null"
    case d: java.math.BigDecimal => d.toPlainString
    case d: scala.math.BigDecimal => d.bigDecimal.toPlainString
    case x => x.toString
  }

  private def emberRows(json: String): Seq[Seq[String]] = {
    val f = new com.fasterxml.jackson.core.JsonFactory()
    json.split("\n").toSeq.filter(_.trim.nonEmpty).map { line =>
      val p = f.createParser(line)
      val out = scala.collection.mutable.ArrayBuffer.empty[String]
      var t = p.nextToken() // START_OBJECT
      t = p.nextToken()
      while (t != null && t != com.fasterxml.jackson.core.JsonToken.END_OBJECT) {
        t = p.nextToken() // the value after the field name
        out += (if (t == com.fasterxml.jackson.core.JsonToken.VALUE_NULL) "null" else p.getText)
        t = p.nextToken()
      }
      out.toSeq
    }
  }

  /** The plan Spark prints for the query (Ember and AQE off, EXPLAIN
   *  FORMATTED) kept as DIR/NAME.txt (DIR: -Dember.tpcds.plans, else
   *  target/tpcds-plans), run by `ember run` over the same tables, and its
   *  rows compared with Spark's (as multisets: the plan text's order is the
   *  offline runtime's own): None when equal, else what differs; one line
   *  per query in DIR/ember-run.tsv. */
  private def emberRun(name: String, sql: String, vanilla: Seq[Row]): Option[String] = {
    val dir = plansDir
    dir.mkdirs()
    val text = withEmber(on = false) {
      spark.conf.set("spark.sql.adaptive.enabled", "false")
      try spark.sql("EXPLAIN FORMATTED " + sql).collect().head.getString(0)
      finally spark.conf.unset("spark.sql.adaptive.enabled")
    }
    val planFile = new File(dir, name.replace('/', '_') + ".txt")
    Files.write(planFile.toPath, text.getBytes(StandardCharsets.UTF_8))
    val wh = new File(TestSpark.prop("ember.data"), "tpcds-tiny").getAbsolutePath
    val pb = new ProcessBuilder(TestSpark.prop("ember.cli"), "run", planFile.getPath, "--warehouse", wh,
      "--spark-version", org.apache.spark.sql.execution.ember.SparkShims.lineOf(org.apache.spark.SPARK_VERSION),
      "--format", "json", "--threads", "2")
    val errFile = File.createTempFile("ember-run", ".err")
    pb.redirectError(errFile)
    val t0 = System.nanoTime()
    val proc = pb.start()
    val out = new String(proc.getInputStream.readAllBytes(), StandardCharsets.UTF_8)
    val rc = proc.waitFor()
    val ms = (System.nanoTime() - t0) / 1000000
    val err = new String(Files.readAllBytes(errFile.toPath), StandardCharsets.UTF_8)
      .linesIterator.filterNot(_.contains("warning")).mkString(" ").take(300)
    errFile.delete()
    val outcome =
      if (rc != 0) s"failed\t$ms\t${vanilla.size}\t$err"
      else {
        val mine = emberRows(out).map(_.mkString("|")).sorted
        val theirs = vanilla.map(r => r.toSeq.map(canonical).mkString("|")).sorted
        if (mine == theirs) s"equal\t$ms\t${vanilla.size}\t"
        else {
          // both sides' rows, sorted, beside the plan
          val base = name.replace('/', '_')
          Files.write(new File(dir, base + ".ember.txt").toPath, mine.mkString("\n").getBytes(StandardCharsets.UTF_8))
          Files.write(new File(dir, base + ".spark.txt").toPath, theirs.mkString("\n").getBytes(StandardCharsets.UTF_8))
          val d = mine.zipAll(theirs, "<none>", "<none>").find { case (a, b) => a != b }
          s"differs\t$ms\t${vanilla.size}\t${mine.size} rows against ${theirs.size}; first: ${d.getOrElse("")}"
        }
      }
    Files.write(new File(dir, "ember-run.tsv").toPath, s"$name\t$outcome\n".getBytes(StandardCharsets.UTF_8),
      java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND)
    if (outcome.startsWith("equal")) None else Some(s"ember run of Spark's plan ($planFile): $outcome")
  }

  /** The error class of the first Spark error in a failure's causes (else its class). */
  private def errorClass(t: Throwable): String =
    Iterator.iterate(t)(_.getCause).takeWhile(_ != null).collectFirst {
      case s: org.apache.spark.SparkThrowable if s.getErrorClass != null => s.getErrorClass
    }.getOrElse(t.getClass.getName)

  /** rows sorted by order, when its keys are columns of the output (else false) */
  private def sortedBy(rows: Seq[Row], order: Seq[SortOrder], output: Seq[Attribute]): Boolean = {
    val outSet = AttributeSet(output)
    if (!order.forall(_.child.references.subsetOf(outSet))) return false
    val ordering = new InterpretedOrdering(order.map(BindReferences.bindReference(_, output)))
    val toCatalyst = CatalystTypeConverters.createToCatalystConverter(StructType(output.map(a => org.apache.spark.sql.types.StructField(a.name, a.dataType, a.nullable))))
    val internal = rows.map(r => toCatalyst(r).asInstanceOf[InternalRow])
    internal.zip(internal.drop(1)).forall { case (a, b) => ordering.compare(a, b) <= 0 }
  }

  /** Queries whose plan without AQE reuses fewer exchanges and subqueries
   *  with Ember than without (expected failures, as in tpcds-known.tsv). */
  private val reuseKnown = knownIn("tpcds-reuse-known.tsv")

  /** Planned without AQE (planning only, nothing runs), Ember's plan must
   *  reuse every exchange and subquery Spark's reuses: Spark's rule matches
   *  them by canonical form, which Ember's nodes must keep. With AQE the
   *  same holds (tpcdsQueries counts it on the executed plans). */
  @TestFactory
  def plannedReuse(): java.util.List[DynamicTest] =
    selected.map { case (name, sql) =>
      DynamicTest.dynamicTest(name, () => {
        tables
        def reuses(on: Boolean): Int = withEmber(on) {
          spark.conf.set("spark.sql.adaptive.enabled", "false")
          try PlanStats.reuses(spark.sql(sql).queryExecution.executedPlan)
          finally spark.conf.unset("spark.sql.adaptive.enabled")
        }
        val (theirs, mine) = (reuses(on = false), reuses(on = true))
        reuseKnown.get(name) match {
          case None => assertTrue(mine >= theirs, s"$name: without AQE Spark reuses $theirs exchanges or subqueries, with Ember $mine")
          case Some(reason) => assertTrue(mine < theirs, s"$name reuses as Spark does now: remove it from tpcds-reuse-known.tsv ($reason)")
        }
      })
    }.asJava

  @TestFactory
  def tpcdsQueries(): java.util.List[DynamicTest] = {
    report.foreach(f => Files.deleteIfExists(f.toPath))
    Files.deleteIfExists(new File(plansDir, "ember-run.tsv").toPath)
    selected.map { case (name, sql) =>
      DynamicTest.dynamicTest(name, () => {
        tables
        // Spark's answer once, for both paths
        val t0 = System.nanoTime()
        val vanillaTry = scala.util.Try(withEmber(on = false) {
          val df = spark.sql(sql)
          (df.collect().toSeq, PlanStats.reuses(df.queryExecution.executedPlan))
        })
        val vanillaMs = (System.nanoTime() - t0) / 1000000
        val outcome = vanillaTry match {
          case scala.util.Success((vanilla, vanillaReuses)) =>
            val offline = emberRun(name, sql, vanilla)
            (compare(name, sql, vanilla, vanillaMs, vanillaReuses).toSeq ++ offline.toSeq).reduceOption(_ + "\n" + _)
          // an error is an answer too (Spark 4's ANSI default: q90 divides by zero at this
          // scale): Ember must raise Spark's error class
          case scala.util.Failure(sparkError) =>
            val emberError = scala.util.Try(withEmber(on = true)(spark.sql(sql).collect())).failed.toOption
            if (emberError.map(errorClass).contains(errorClass(sparkError))) None
            else Some(s"Spark failed with ${errorClass(sparkError)}, Ember " +
              emberError.map(e => s"with ${errorClass(e)}: ${e.getMessage.take(200)}").getOrElse("answered"))
        }
        known.get(name) match {
          case None => assertTrue(outcome.isEmpty, s"$name: ${outcome.getOrElse("")}")
          case Some(reason) =>
            System.err.println(s"$name: expected to differ ($reason): ${outcome.map(_.take(200))}")
            assertTrue(outcome.nonEmpty, s"$name agrees with Spark now: remove it from tpcds-known.tsv ($reason)")
        }
      })
    }.asJava
  }
}
