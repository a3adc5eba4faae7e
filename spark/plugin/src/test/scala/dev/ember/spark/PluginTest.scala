// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.{File, RandomAccessFile}
import java.nio.file.Files
import java.util.concurrent.{Executors, TimeUnit}

import org.junit.jupiter.api.Assertions._
import org.junit.jupiter.api.Test
import org.apache.spark.SparkException
import org.apache.spark.sql.execution.SparkPlan

import dev.ember.spark.tools.ResultCompare

/** The plugin's behaviour around the answers: fallback by configuration,
 *  the report, explain, native errors as task failures, cancellation. */
class PluginTest {
  private def spark = TestSpark.spark
  TestSpark.tpchTables

  private def emberNodes(plan: SparkPlan): Seq[EmberNodeInfo] = {
    val out = Seq.newBuilder[EmberNodeInfo]
    def walk(p: SparkPlan): Unit = {
      p match {
        case e: EmberExec => out ++= e.nodes
        case a: org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec => walk(a.executedPlan)
        case s: org.apache.spark.sql.execution.adaptive.QueryStageExec => walk(s.plan)
        case _ =>
      }
      p.children.foreach(walk)
    }
    walk(plan)
    out.result()
  }

  private val filterQuery =
    "SELECT l_returnflag, count(*) AS n, sum(l_quantity) AS q FROM lineitem " +
      "WHERE l_shipdate <= date '1998-09-02' AND l_comment LIKE '%ly%' GROUP BY l_returnflag"

  @Test def runsNatively(): Unit = {
    val (rows, plan) = TestSpark.run(filterQuery, ember = true)
    val names = emberNodes(plan).map(_.name)
    assertTrue(names.contains("Filter"), s"Filter should run in Ember: $names")
    assertTrue(names.contains("HashAggregate"), s"HashAggregate should run in Ember: $names")
    val (vanilla, _) = TestSpark.run(filterQuery, ember = false)
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false))
  }

  @Test def disabledExecFallsBackToSpark(): Unit = {
    for (key <- Seq("spark.ember.sql.exec.FilterExec", "spark.rapids.sql.exec.FilterExec")) {
      val (rows, plan) = TestSpark.run(filterQuery, ember = true, key -> "false")
      val names = emberNodes(plan).map(_.name)
      assertFalse(names.contains("Filter"), s"$key=false: Filter still in Ember: $names")
      assertTrue(names.contains("HashAggregate"), s"$key=false: the aggregate should stay: $names")
      val (vanilla, _) = TestSpark.run(filterQuery, ember = false)
      assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false))
    }
    val report = TestSpark.withConf("spark.ember.sql.exec.FilterExec" -> "false",
        "spark.ember.sql.explain" -> "NOT_ON_ACCELERATOR") {
      val d = EmberOverrides.decide(spark.sql(filterQuery).queryExecution.sparkPlan, spark.sessionState.conf)
      d.get._1.report
    }
    assertTrue(report.contains("!Exec <FilterExec> cannot run natively because") &&
      report.contains("spark.ember.sql.exec.FilterExec=true"), report)
  }

  @Test def disabledExpressionFallsBack(): Unit = {
    val q = "SELECT substring(c_name, 1, 5) AS s, count(*) FROM customer GROUP BY substring(c_name, 1, 5)"
    val (rows, plan) = TestSpark.run(q, ember = true, "spark.ember.sql.expression.Substring" -> "false")
    val (vanilla, _) = TestSpark.run(q, ember = false)
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false))
    val report = TestSpark.withConf("spark.ember.sql.expression.Substring" -> "false",
        "spark.ember.sql.explain" -> "ALL") {
      EmberOverrides.decide(spark.sql(q).queryExecution.sparkPlan, spark.sessionState.conf).get._1.report
    }
    assertTrue(report.contains("Substring"), report)
  }

  /** Ember's map tasks write Spark's shuffle files from C: per map task a
   *  data file of records [partition][rows][length][block] (little-endian,
   *  each block starting "EMSB": not compressed again) with each reduce
   *  partition's records where Spark's index file says, in partition order. */
  @Test def mapTasksWriteSparksShuffleFiles(): Unit = {
    val q = "SELECT l_linenumber, count(*) AS n, sum(l_quantity) AS q FROM lineitem GROUP BY l_linenumber"
    val before = org.apache.spark.sql.embertest.ShuffleFiles.dataFiles().map(_._1).toSet
    val (rows, plan) = TestSpark.run(q, ember = true, "spark.sql.adaptive.enabled" -> "false")
    assertTrue(emberNodes(plan).exists(_.name == "Exchange"), "the exchange should run in Ember")
    val files = org.apache.spark.sql.embertest.ShuffleFiles.dataFiles().filterNot(f => before(f._1))
    assertTrue(files.nonEmpty, "no shuffle file written")
    var records = 0
    files.foreach { case (data, index) =>
      val bytes = Files.readAllBytes(data.toPath)
      val idx = java.nio.ByteBuffer.wrap(Files.readAllBytes(index.toPath)) // Spark's: big-endian
      val offsets = Array.tabulate(idx.capacity / 8)(i => idx.getLong(8 * i))
      assertEquals(bytes.length.toLong, offsets.last, s"$data: the index covers the data")
      val b = java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN)
      for (p <- 0 until offsets.length - 1) {
        var at = offsets(p).toInt
        while (at < offsets(p + 1)) {
          assertEquals(p, b.getInt(at), s"$data: a record at $at in partition $p's range")
          val len = b.getInt(at + 8)
          assertEquals(0x42534D45, b.getInt(at + 12), s"$data: a block at ${at + 12}")
          assertEquals(b.getInt(at + 4).toLong, EmberShuffle.blockRows(bytes.slice(at + 12, at + 12 + len)))
          at += 12 + len
          records += 1
        }
        assertEquals(offsets(p + 1), at.toLong, s"$data: partition $p ends on a record")
      }
    }
    assertTrue(records > 0, "no record in the shuffle files")
    val (vanilla, _) = TestSpark.run(q, ember = false, "spark.sql.adaptive.enabled" -> "false")
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false))
  }

  /** A Spark line the jar carries no shims for is refused at start-up,
   *  naming the running version and the supported lines, unless the check
   *  is turned off; each supported line gets its own shims. */
  @Test def unsupportedSparkLineIsRefused(): Unit = {
    assertEquals(None, EmberPlugin.versionRefusal(spark.version, checkEnabled = true))
    assertEquals(None, EmberPlugin.versionRefusal("3.5.0", checkEnabled = true))
    assertEquals(None, EmberPlugin.versionRefusal("4.0.1", checkEnabled = true))
    assertEquals(None, EmberPlugin.versionRefusal("4.1.1", checkEnabled = true))
    val why = EmberPlugin.versionRefusal("4.2.0", checkEnabled = true)
    assertTrue(why.exists(w => w.contains("Spark 4.2.0") && w.contains("3.4.x, 3.5.x, 4.0.x, 4.1.x") &&
      w.contains("spark.ember.spark.versionCheck=false")), why.toString)
    assertEquals(None, EmberPlugin.versionRefusal("4.2.0", checkEnabled = false))
    assertTrue(EmberPlugin.versionRefusal("3.3.4", checkEnabled = true).nonEmpty)
    assertEquals(None, EmberPlugin.versionRefusal("3.4.1", checkEnabled = true))
    assertTrue(EmberPlugin.versionRefusal("3.5", checkEnabled = true).isEmpty)
    import org.apache.spark.sql.execution.ember.SparkShims
    assertEquals(Seq("3.4", "3.5", "4.0", "4.1"), SparkShims.supportedLines)
    assertEquals(SparkShims.lineOf(spark.version), SparkShims.get.line)
    assertEquals(Some("4.0"), SparkShims.providerFor("4.0.0-preview2").map(_.lines.head))
  }

  /** The tasks a query launches (a listener counting task starts). */
  private def tasksOf(sql: String, ember: Boolean): (Seq[org.apache.spark.sql.Row], Int) = {
    val started = new java.util.concurrent.atomic.AtomicInteger()
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onTaskStart(t: org.apache.spark.scheduler.SparkListenerTaskStart): Unit =
        started.incrementAndGet()
    }
    org.apache.spark.sql.embertest.Listeners.drain(spark.sparkContext)
    spark.sparkContext.addSparkListener(listener)
    try {
      val (rows, _) = TestSpark.run(sql, ember)
      org.apache.spark.sql.embertest.Listeners.drain(spark.sparkContext)
      (rows, started.get())
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  /** A relation the optimizer proved empty is an RDD of no partitions in
   *  Spark, so the exchange above it runs no map task; Ember's fragment
   *  over it must not run one either (it added a stage to TPC-H q6). */
  @Test def emptyLocalRelationRunsNoTask(): Unit = {
    val q = "SELECT sum(l_quantity) AS q, count(*) AS n FROM lineitem WHERE 1 = 0"
    val (rows, tasks) = tasksOf(q, ember = true)
    val (vanillaRows, vanillaTasks) = tasksOf(q, ember = false)
    assertEquals(None, ResultCompare.diff(rows, vanillaRows, ordered = false))
    assertEquals(vanillaTasks, tasks, "tasks launched with Ember (left: Spark's)")
  }

  /** AQE turns a sort-merge join into a broadcast join once a side's shuffle
   *  is done and small: the broadcast then takes that Ember shuffle's batches
   *  (no HashedRelation built by Spark for Ember to unpack). */
  @Test def broadcastOverAFinishedEmberShuffle(): Unit = {
    val q = "SELECT n_name, count(*) AS n FROM customer JOIN nation ON c_nationkey = n_nationkey " +
      "WHERE n_regionkey = 1 GROUP BY n_name"
    val conf = Seq("spark.sql.autoBroadcastJoinThreshold" -> "-1",
      "spark.sql.adaptive.autoBroadcastJoinThreshold" -> "10MB")
    val (rows, plan) = TestSpark.run(q, ember = true, conf: _*)
    val (vanilla, _) = TestSpark.run(q, ember = false, conf: _*)
    assertEquals(None, ResultCompare.diff(rows, vanilla, ordered = false))
    val all = Seq.newBuilder[SparkPlan]
    def walk(p: SparkPlan): Unit = {
      all += p
      p match {
        case a: org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec => walk(a.executedPlan)
        case s: org.apache.spark.sql.execution.adaptive.QueryStageExec => walk(s.plan)
        case _ =>
      }
      p.children.foreach(walk)
    }
    walk(plan)
    val nodes = all.result()
    assertTrue(nodes.exists(_.isInstanceOf[org.apache.spark.sql.execution.ember.EmberBroadcastExchange]),
      s"AQE's broadcast should be Ember's:\n$plan")
    assertFalse(nodes.exists(_.isInstanceOf[org.apache.spark.sql.execution.exchange.BroadcastExchangeExec]),
      s"no broadcast of Spark's expected:\n$plan")
    assertTrue(emberNodes(plan).map(_.name).contains("BroadcastHashJoin"), s"$plan")
  }

  /** The map side of Ember's shuffle is laid out as the exchange's input
   *  (here a scan's splits), not as its output. AQE's local shuffle read,
   *  which reads map outputs mapper by mapper, reports the map side's
   *  partitioning as its own, and may replace a shuffle read under a join
   *  that pairs partitions only if it keeps the keys apart: taken for
   *  hash-partitioned, it was used under a sort-merge join after AQE made a
   *  semi join below a broadcast one (TPC-H q18 at SF 1 lost 43 of 67 rows).
   *  A fused node also asks of each input what the nodes it replaced did. */
  @Test def mapSideIsLaidOutAsItsInput(): Unit = {
    val q = "SELECT o_custkey, count(*) AS n FROM orders JOIN customer ON o_custkey = c_custkey " +
      "GROUP BY o_custkey"
    val (_, plan) = TestSpark.run(q, ember = true, "spark.sql.autoBroadcastJoinThreshold" -> "-1",
      "spark.sql.adaptive.enabled" -> "false")
    val all = Seq.newBuilder[SparkPlan]
    def walk(p: SparkPlan): Unit = { all += p; p.children.foreach(walk) }
    walk(plan)
    val exchanges = all.result().collect {
      case x: org.apache.spark.sql.execution.ember.EmberShuffleExchange => x
    }
    assertTrue(exchanges.nonEmpty, s"Ember's shuffle expected:\n$plan")
    exchanges.foreach { x =>
      assertTrue(x.outputPartitioning.isInstanceOf[
        org.apache.spark.sql.catalyst.plans.physical.HashPartitioning], s"$x")
      assertFalse(x.child.outputPartitioning.isInstanceOf[
        org.apache.spark.sql.catalyst.plans.physical.HashPartitioning],
        s"the map side claims the exchange's partitioning:\n$plan")
    }
    val joins = all.result().collect { case e: EmberExec if e.nodes.exists(_.name == "SortMergeJoin") => e }
    assertTrue(joins.nonEmpty, s"$plan")
    joins.foreach { e =>
      assertTrue(e.requiredChildDistribution.exists(
        _.isInstanceOf[org.apache.spark.sql.catalyst.plans.physical.ClusteredDistribution]),
        s"a sort-merge join's inputs must stay clustered: ${e.requiredChildDistribution}")
    }
  }

  @Test def emberOffRunsNothingInEmber(): Unit = {
    val (_, plan) = TestSpark.run(filterQuery, ember = false)
    assertTrue(emberNodes(plan).isEmpty)
  }

  @Test def unknownSettingIsAnError(): Unit = {
    val e = assertThrows(classOf[Exception], () =>
      TestSpark.withConf("spark.ember.sql.enabeld" -> "true") { spark.sql(filterQuery).collect() })
    val msg = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")
    assertTrue(msg.contains("spark.ember.sql.enabeld") && msg.contains("spark.ember.sql.enabled"), msg)
  }

  /** spark-rapids' test mode: a node left to Spark fails the query unless its
   *  class is allowed; allowed, the query runs. */
  @Test def testModeRefusesUnallowedFallback(): Unit = {
    val e = assertThrows(classOf[Exception], () =>
      TestSpark.run(filterQuery, ember = true, "spark.ember.sql.test.enabled" -> "true",
        "spark.ember.sql.exec.FilterExec" -> "false"))
    val msg = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")
    assertTrue(msg.contains("test mode") && msg.contains("FilterExec"), msg)
    val (rows, _) = TestSpark.run(filterQuery, ember = true, "spark.ember.sql.test.enabled" -> "true",
      "spark.ember.sql.exec.FilterExec" -> "false",
      "spark.ember.sql.test.allowedNonNative" -> "FilterExec,TakeOrderedAndProjectExec,ShuffleExchangeExec")
    assertEquals(3, rows.size)
  }

  @Test def explainShowsEmberNodesWithLoreIds(): Unit = {
    val text = TestSpark.withConf("spark.sql.adaptive.enabled" -> "false") {
      spark.sql("EXPLAIN FORMATTED " + filterQuery).collect().map(_.getString(0)).mkString("\n")
    }
    assertTrue(text.contains("Ember") && text.contains("[loreId="), text)
  }

  @Test def corruptFileFailsTheTaskWithEmbersMessage(): Unit = {
    val dir = Files.createTempDirectory("ember-corrupt").toFile
    val src = new File(TestSpark.tpchDir, "nation").listFiles().filter(_.getName.endsWith(".parquet")).head
    val dst = new File(dir, "part-00000.parquet")
    Files.copy(src.toPath, dst.toPath)
    // every page garbled, the footer kept: Spark plans the scan, the reader meets the damage
    val raf = new RandomAccessFile(dst, "rw")
    try {
      raf.seek(raf.length() - 8)
      val footer = Integer.reverseBytes(raf.readInt())
      raf.seek(4)
      raf.write(Array.fill[Byte]((raf.length() - 8 - footer - 4).toInt)(0xff.toByte))
    } finally raf.close()
    spark.read.parquet(dir.getAbsolutePath).createOrReplaceTempView("corrupt_nation")
    val e = assertThrows(classOf[SparkException], () =>
      TestSpark.run("SELECT n_name, count(*) FROM corrupt_nation WHERE n_regionkey > 0 GROUP BY n_name",
        ember = true))
    val msg = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")
    assertTrue(msg.contains("Ember") && msg.contains("EM_ERR_CORRUPT"), msg)
    assertTrue(msg.contains(dst.getName), s"the message should name the file: $msg")
    // the executor JVM is still there
    assertEquals(25L, spark.sql("SELECT count(*) FROM nation").collect()(0).getLong(0))
  }

  @Test def cancellingTheJobCancelsTheNativeTask(): Unit = {
    val q = "SELECT count(*) FROM lineitem a CROSS JOIN lineitem b WHERE a.l_orderkey + b.l_partkey < 0"
    val pool = Executors.newSingleThreadExecutor()
    val sc = spark.sparkContext
    val f = pool.submit(new java.util.concurrent.Callable[Unit] {
      override def call(): Unit = {
        sc.setJobGroup("ember-cancel", "cancellation test", interruptOnCancel = true)
        try TestSpark.run(q, ember = true) finally sc.clearJobGroup()
      }
    })
    val t0 = System.nanoTime()
    while (sc.statusTracker.getActiveStageIds().isEmpty && System.nanoTime() - t0 < 60e9)
      Thread.sleep(100)
    Thread.sleep(1000)
    val cancelled = System.nanoTime()
    sc.cancelJobGroup("ember-cancel")
    val e = assertThrows(classOf[java.util.concurrent.ExecutionException], () => f.get(60, TimeUnit.SECONDS))
    val secs = (System.nanoTime() - cancelled) / 1e9
    pool.shutdown()
    assertTrue(String.valueOf(e.getCause.getMessage).toLowerCase.contains("cancel"), e.getCause.toString)
    assertTrue(secs < 30, s"the query took $secs s to stop after cancellation")
    assertEquals(25L, spark.sql("SELECT count(*) FROM nation").collect()(0).getLong(0))
  }
}
