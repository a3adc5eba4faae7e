// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import org.apache.logging.log4j.{Level, LogManager}
import org.apache.logging.log4j.core.config.Configurator
import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.{DynamicTest, TestFactory}
import org.apache.spark.sql.SparkSession

import dev.ember.spark.SqlGolden._

/**
 * Spark's own SQL test files (SqlGolden) with Ember off and on. By default
 * the files of sql-golden/files.txt, each a test that fails when fewer of
 * its statements give the golden answer with Ember on than expected.tsv
 * records, or when a statement is answered otherwise with Ember on than
 * with it off (above all one that gives the golden answer with Ember off
 * and not with Ember on) and known-differences.tsv does not give the reason.
 *
 * -Dember.sqlgolden.files=all (scripts/spark-sql-tests.sh) runs every
 * input file instead, checks nothing, keeps each file's result in
 * -Dember.sqlgolden.out (resuming after a dead JVM with
 * -Dember.sqlgolden.resume=true) and writes -Dember.sqlgolden.doc.
 * A comma-separated list of files runs those only.
 */
class SqlGoldenTest {
  private def text(res: String): String =
    SqlGolden.resource(res).getOrElse(throw new IllegalStateException(s"$res is missing"))

  private val ciFiles: Seq[String] = tsvLines(text("sql-golden/files.txt")).map(_(0).trim)
  private val expected = readExpected(text("sql-golden/expected.tsv"))
  private val known = readKnown(text("sql-golden/known-differences.tsv"))

  private val selection = Option(System.getProperty("ember.sqlgolden.files")).map(_.trim).filter(_.nonEmpty)
  private val ciMode = selection.isEmpty || selection.contains("ci")
  private val files: Seq[String] = selection match {
    case None | Some("ci") => ciFiles
    case Some("all") => SqlGolden.allInputs
    case Some(list) => list.split(",").map(_.trim).filter(_.nonEmpty).toSeq
  }
  private val target = new File(TestSpark.prop("ember.data")).getParentFile
  private val outDir = new File(Option(System.getProperty("ember.sqlgolden.out"))
    .getOrElse(new File(target, "sql-golden").getPath))
  private val resume = java.lang.Boolean.getBoolean("ember.sqlgolden.resume")
  private val timeoutSec = Integer.getInteger("ember.sqlgolden.timeout", 300).intValue()

  private lazy val spark: SparkSession = {
    // managed tables (the test tables, the files' own) under target/ rather
    // than the working directory, when this test is the one starting Spark
    if (SparkSession.getDefaultSession.isEmpty && System.getProperty("spark.sql.warehouse.dir") == null)
      System.setProperty("spark.sql.warehouse.dir", new File(target, "sql-golden-warehouse").getAbsolutePath)
    val s = TestSpark.spark
    // a JVM that died here left its tables' folders behind, which the
    // in-memory catalog no longer knows: the harness's own warehouse starts empty
    val wh = new File(new java.net.URI(s.sessionState.conf.warehousePath).getPath)
    if (wh.getName == "sql-golden-warehouse" && s.sharedState.externalCatalog.listTables("default").isEmpty)
      Option(wh.listFiles()).getOrElse(Array.empty[File]).foreach(f =>
        org.apache.spark.network.util.JavaUtils.deleteRecursively(f))
    s
  }

  private def resultFile(file: String) = new File(outDir, fileKey(file) + ".json")
  private def startedFile(file: String) = new File(outDir, fileKey(file) + ".started")

  private def run(file: String): FileResult = {
    if (resume && resultFile(file).isFile)
      return fromJson(new String(Files.readAllBytes(resultFile(file).toPath), StandardCharsets.UTF_8))
    if (resume && startedFile(file).isFile) {
      // the JVM died in this file last time
      startedFile(file).delete()
      val r = FileResult(file, kindOf(file).name, Some("the JVM died running it (see the run's log)"), Nil, 0, 0, Nil)
      Files.write(resultFile(file).toPath, toJson(r).getBytes(StandardCharsets.UTF_8))
      return r
    }
    Files.write(startedFile(file).toPath, Array.emptyByteArray)
    val r = try SqlGolden.runFile(spark, file, timeoutSec) catch {
      case scala.util.control.NonFatal(e) =>
        FileResult(file, kindOf(file).name, Some(s"the harness failed: $e"), Nil, 0, 0, Nil)
    }
    Files.write(resultFile(file).toPath, toJson(r).getBytes(StandardCharsets.UTF_8))
    startedFile(file).delete()
    System.err.println(f"sql-golden ${r.file}: ${r.skipped.map("skipped: " + _).getOrElse(
      s"${r.statements} statements, ${r.matchOff} golden off, ${r.matchOn} golden on, " +
        s"${r.stmts.count(_.differs)} differ")} (${r.seconds}%.1f s)")
    r
  }

  private val results = scala.collection.mutable.LinkedHashMap[String, FileResult]()

  /** What fails a file in the CI run. */
  private def problems(r: FileResult): Seq[String] = {
    val out = Seq.newBuilder[String]
    r.skipped.foreach(s => out += s"${r.file} did not run: $s")
    expected.get(r.file) match {
      case None => out += s"${r.file} has no line in expected.tsv: ${r.file}\t${r.statements}\t${r.matchOff}\t${r.matchOn}"
      case Some(e) =>
        if (r.matchOn < e.matchOn)
          out += s"${r.file}: ${r.matchOn} statements give the golden answer with Ember on, expected.tsv records ${e.matchOn}"
    }
    // a statement Spark answers right and Ember does not must have its reason;
    // so must any other whose answer Ember changes (nothing differs unlisted)
    r.stmts.filter(s => (s.okOff && !s.okOn) || s.differs).foreach { s =>
      known.get(r.file -> s.index) match {
        case None =>
          val ci = s.on.indices.find(i => !s.on(i).same(s.off(i))).getOrElse(0)
          val (a, b) = firstDifference(s.off(ci), s.on(ci))
          val what = if (s.okOff) "gives the golden answer with Ember off, not on," else "answers differently with Ember on"
          out += s"${r.file} query ${s.index} $what and " +
            s"known-differences.tsv has no reason for it:\n  ${oneLine(s.sql).take(200)}\n  off: $a\n  on:  $b\n" +
            s"  line for known-differences.tsv: ${r.file}\t${s.index}\t${sqlStart(s.sql, 40)}\t<reason>"
        case Some(k) if !oneLine(s.sql).startsWith(k.sqlStart) =>
          out += s"${r.file} query ${s.index}: known-differences.tsv names '${k.sqlStart}', the statement is " +
            s"'${sqlStart(s.sql)}'"
        case _ =>
      }
    }
    out.result()
  }

  /** Task failures are answers here (the golden files hold errors): Spark's
   *  logging of each one is silenced while the files run. */
  private val quiet = Seq("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.sql.execution.datasources.FileFormatWriter", "org.apache.spark.util.Utils")
  private val levels = quiet.map(n => n -> LogManager.getLogger(n).getLevel)

  @TestFactory
  def sparkSqlTests(): java.util.List[DynamicTest] = {
    outDir.mkdirs()
    quiet.foreach(Configurator.setLevel(_, Level.OFF))
    val perFile = files.map { f =>
      DynamicTest.dynamicTest(f, () => {
        val r = run(f)
        results(f) = r
        if (ciMode) {
          val p = problems(r)
          assertTrue(p.isEmpty, p.mkString("\n"))
          expected.get(f).foreach { e =>
            if (r.matchOn > e.matchOn || r.matchOff != e.matchOff || r.statements != e.statements)
              System.err.println(s"sql-golden $f: now ${r.statements}\t${r.matchOff}\t${r.matchOn}, " +
                s"expected.tsv records ${e.statements}\t${e.matchOff}\t${e.matchOn}: record the new numbers")
          }
          r.stmts.filter(s => s.okOn && known.contains(f -> s.index)).foreach { s =>
            System.err.println(s"sql-golden $f query ${s.index} now gives the golden answer with Ember on: " +
              "remove it from known-differences.tsv")
          }
        }
      })
    }
    (perFile :+ DynamicTest.dynamicTest("summary", () => summary())).asJava
  }

  private def summary(): Unit = {
    val rs = results.values.toSeq
    val ran = rs.filter(_.skipped.isEmpty)
    val line = s"files ${ran.size} (+${rs.size - ran.size} skipped), statements ${ran.map(_.statements).sum}, " +
      s"golden with Ember off ${ran.map(_.matchOff).sum}, with Ember on ${ran.map(_.matchOn).sum}, " +
      f"differing ${ran.map(_.stmts.count(_.differs)).sum}, ${ran.map(_.seconds).sum / 60}%.1f min"
    System.err.println(s"sql-golden summary: $line")
    val tsv = rs.map(r => s"${r.file}\t${r.statements}\t${r.matchOff}\t${r.matchOn}\t${r.skipped.getOrElse("")}")
    Files.write(new File(outDir, "summary.tsv").toPath,
      ("# file\tstatements\tgolden off\tgolden on\tskipped\n" + tsv.mkString("\n") + "\n").getBytes(StandardCharsets.UTF_8))
    Option(System.getProperty("ember.sqlgolden.doc")).foreach { doc =>
      val header = SqlGolden.docHeader(Option(System.getProperty("ember.sqlgolden.commit")).getOrElse("?"))
      val minutes = rs.map(_.seconds).sum / 60
      Files.write(Paths.get(doc), markdown(rs, known, ciFiles.toSet, minutes, header)
        .getBytes(StandardCharsets.UTF_8))
      System.err.println(s"sql-golden: wrote $doc")
    }
    levels.foreach { case (n, l) => Configurator.setLevel(n, l) }
    SqlGolden.dropTestTables(spark)
    val wh = new File(new java.net.URI(spark.sessionState.conf.warehousePath).getPath)
    if (wh.isDirectory && Option(wh.list()).forall(_.isEmpty)) wh.delete()
    if (ciMode) {
      val missing = ciFiles.filterNot(expected.contains)
      assertTrue(missing.isEmpty, s"files.txt names files expected.tsv has no line for: $missing")
    }
  }
}
