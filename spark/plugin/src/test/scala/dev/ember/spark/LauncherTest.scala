// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.Test

/** ember-spark-sql end to end, each run in a JVM of its own (its own Spark):
 *  the report, a memory budget Spark cannot grant, Spark's own shuffle
 *  writer, bad arguments. */
class LauncherTest {
  private val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
  private val jvmArgs: Seq[String] =
    Option(System.getProperty("ember.jvm.args")).map(_.split("\\s+").toSeq.filter(_.nonEmpty))
      .getOrElse(Nil)

  private def launch(args: String*): (Int, String) = {
    val cmd = Seq(java, "-Xmx2g") ++ jvmArgs ++ Seq("-cp", System.getProperty("java.class.path"),
      "dev.ember.spark.tools.EmberSparkSql") ++ args
    val pb = new ProcessBuilder(cmd.asJava).redirectErrorStream(true)
    val p = pb.start()
    val out = new String(p.getInputStream.readAllBytes(), StandardCharsets.UTF_8)
    (p.waitFor(), out)
  }

  private def query(n: Int): String =
    Paths.get(TestSpark.prop("ember.shared"), "tpch", "queries", s"q$n.sql").toString

  @Test def compareWritesTheReport(): Unit = {
    val report = File.createTempFile("ember-report", ".json")
    val (rc, out) = launch("--master", "local[2]", "--warehouse", TestSpark.tpchDir.getPath,
      "-f", query(1), query(3), "--compare", "--quiet", "--report", report.getPath)
    assertEquals(0, rc, out)
    val doc = new ObjectMapper().readTree(Files.readAllBytes(report.toPath))
    val rows = doc.elements().asScala.toSeq
    assertEquals(Seq("q1", "q3"), rows.map(_.get("name").asText()))
    rows.foreach { r =>
      assertTrue(r.get("equal").asBoolean(), r.toString)
      assertTrue(r.get("ember_nodes").asInt() > 0 && r.get("ember_nodes").asInt() <= r.get("spark_nodes").asInt(), r.toString)
      assertTrue(r.get("ember_ms").asDouble() > 0 && r.get("vanilla_ms").asDouble() > 0, r.toString)
      assertTrue(r.get("error").isNull, r.toString)
    }
  }

  /** Off-heap memory Spark grants is what Ember's tasks may use: an aggregate
   *  over its grant spills and answers right; a scan's batch that does not
   *  fit fails the task with Ember's message naming the setting. */
  @Test def sparksOffHeapBudgetHolds(): Unit = {
    val (rc, out) = launch("--master", "local[2]", "--warehouse", TestSpark.tpchDir.getPath,
      "--conf", "spark.memory.offHeap.enabled=true", "--conf", "spark.memory.offHeap.size=2m",
      "-f", query(18), "--quiet", "--compare")
    assertEquals(0, rc, out)
    assertTrue(out.contains("answers identical"), out)
    val (rc1, out1) = launch("--master", "local[2]", "--warehouse", TestSpark.tpchDir.getPath,
      "--conf", "spark.memory.offHeap.enabled=true", "--conf", "spark.memory.offHeap.size=1m",
      "-f", query(3), "--quiet")
    assertEquals(1, rc1, out1)
    assertTrue(out1.contains("EM_ERR_OOM_BUDGET") && out1.contains("spark.memory.offHeap.size"), out1)
  }

  /** Where Ember does not write its shuffle files itself (turned off, or
   *  I/O encryption on), Spark's own shuffle writer, codec and reader take
   *  the same records, and the answers stay Spark's. */
  @Test def sparksShuffleWriterTakesTheBlocks(): Unit =
    for (conf <- Seq("spark.ember.spark.shuffleFiles=false", "spark.io.encryption.enabled=true")) {
      val (rc, out) = launch("--master", "local[2]", "--warehouse", TestSpark.tpchDir.getPath,
        "--conf", conf, "-f", query(3), query(18), "--quiet", "--compare")
      assertEquals(0, rc, s"$conf: $out")
      assertEquals(2, "answers identical".r.findAllIn(out).length, s"$conf: $out")
    }

  @Test def badArgumentsExitTwo(): Unit = {
    val (rc, out) = launch("--warehouse", TestSpark.tpchDir.getPath, "--format", "xml", "-e", "select 1")
    assertEquals(2, rc, out)
    assertTrue(out.contains("unknown format xml"), out)
  }
}
