// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.Test
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, QueryStageExec}

/**
 * LORE from Spark's tasks (docs/lore.md, "Inside Spark"): the ids of a
 * query's Ember operators, given stage by stage under AQE, are unique and
 * the same from run to run; the chosen operators' inputs and outputs are
 * dumped by the tasks that run them, without changing the answer;
 * `ember lore replay` reproduces each dumped output on both engines, and so
 * does the restore in a Spark session; LORE's settings are refused at
 * planning, before any task.
 */
class LoreTest {
  private val spark = TestSpark.spark
  TestSpark.tpchTables

  /** Every Ember node of an executed plan, AQE's stages and subqueries included. */
  private def emberNodes(plan: SparkPlan): Seq[EmberNodeInfo] = {
    def all(p: SparkPlan): Seq[SparkPlan] = p +: ((p match {
      case a: AdaptiveSparkPlanExec => all(a.executedPlan)
      case s: QueryStageExec => all(s.plan)
      case _ => p.children.flatMap(all)
    }) ++ p.subqueries.flatMap(all))
    all(plan).collect { case e: EmberExec => e.nodes }.flatten.distinct
  }

  private def messages(t: Throwable): String =
    Iterator.iterate(t)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")

  private def replay(dir: File): (Int, String) = {
    val out = File.createTempFile("ember-lore-replay", ".txt")
    val p = new ProcessBuilder(TestSpark.prop("ember.cli"), "lore", "replay", dir.getPath,
      "--engine", "both", "--format", "csv").redirectErrorStream(true).redirectOutput(out).start()
    val rc = p.waitFor()
    val text = new String(Files.readAllBytes(out.toPath), StandardCharsets.UTF_8)
    out.delete()
    (rc, text)
  }

  @Test def dumpFromSparkTasksReplaysOffline(): Unit = {
    val q = TestSpark.tpchQuery(3)
    val (rows, plan) = TestSpark.run(q, ember = true)
    val nodes = emberNodes(plan).filter(_.loreId >= 0)
    val ids = nodes.map(_.loreId)
    assertEquals(ids.distinct.size, ids.size, s"LORE ids repeat across the query's stages: $nodes")
    val agg = nodes.find(_.name == "HashAggregate").getOrElse(fail(s"no Ember HashAggregate: $nodes"))
    val join = nodes.find(_.name.endsWith("HashJoin")).getOrElse(fail(s"no Ember hash join: $nodes"))

    val dump = new File(Files.createTempDirectory("ember-lore").toFile, "q3")
    val (dumped, plan2) = TestSpark.run(q, ember = true,
      "spark.rapids.sql.lore.idsToDump" -> s"${agg.loreId}[*], ${join.loreId}[*]",
      "spark.ember.sql.lore.dumpPath" -> dump.getPath,
      "spark.ember.sql.lore.dumpOutput" -> "true")
    assertEquals(rows, dumped, "dumping changed the answer")
    // the same query, data and settings give the same ids
    val again = emberNodes(plan2).filter(_.loreId >= 0).map(n => n.loreId -> n.name).toMap
    assertEquals(nodes.map(n => n.loreId -> n.name).toMap, again)

    for (n <- Seq(agg, join)) {
      val dir = new File(dump, s"loreId-${n.loreId}")
      assertTrue(new File(dir, "plan.meta").isFile, s"$dir/plan.meta is missing")
      assertTrue(new File(dir, "input-0/rdd.meta").isFile, s"$dir/input-0/rdd.meta is missing")
      val (rc, text) = replay(dir)
      assertEquals(0, rc, s"ember lore replay $dir:\n$text")
      assertTrue(text.contains("verified"), s"ember lore replay $dir did not check the dumped output:\n$text")
      // restored in this session, by Spark's tasks: the rows the operator gave when dumped
      val restored = EmberLore.restore(spark, dir.getPath).collect().map(_.toString).sorted.toSeq
      val outputFiles = new File(dir, "output").listFiles().filter(_.isDirectory)
        .flatMap(_.listFiles().filter(_.getName.endsWith(".parquet"))).map(_.getPath)
      val wanted = spark.read.parquet(outputFiles.toSeq: _*).collect().map(_.toString).sorted.toSeq
      assertTrue(wanted.nonEmpty, s"$dir: no output dumped")
      assertEquals(wanted, restored, s"$dir: the restored operator's rows")
    }
  }

  @Test def nonEmptyDumpPathIsRefusedAtPlanning(): Unit = {
    val dump = Files.createTempDirectory("ember-lore-full").toFile
    val stray = new File(dump, "keep.txt")
    Files.write(stray.toPath, "not a dump".getBytes(StandardCharsets.UTF_8))
    val e = assertThrows(classOf[Exception], () => TestSpark.run(TestSpark.tpchQuery(6), ember = true,
      "spark.ember.sql.lore.idsToDump" -> "0[*]", "spark.ember.sql.lore.dumpPath" -> dump.getPath))
    assertTrue(messages(e).contains(s"LORE dump path ${dump.getPath} already exists and is not empty."), messages(e))
    assertEquals(Seq("keep.txt"), dump.list().toSeq, "the refused folder was written to")
  }

  @Test def badLoreSettingsAreRefusedAtPlanning(): Unit = {
    val dump = new File(Files.createTempDirectory("ember-lore-bad").toFile, "d")
    val grammar = assertThrows(classOf[Exception], () => TestSpark.run(TestSpark.tpchQuery(6), ember = true,
      "spark.ember.sql.lore.idsToDump" -> "1[a]", "spark.ember.sql.lore.dumpPath" -> dump.getPath))
    assertTrue(messages(grammar).contains("idsToDump: column 3"), messages(grammar))
    val noPath = assertThrows(classOf[Exception], () => TestSpark.run(TestSpark.tpchQuery(6), ember = true,
      "spark.ember.sql.lore.idsToDump" -> "1[*]"))
    assertTrue(messages(noPath).contains("spark.ember.sql.lore.dumpPath is not"), messages(noPath))
    assertFalse(dump.exists(), "a refused query wrote its dump folder")
  }
}
