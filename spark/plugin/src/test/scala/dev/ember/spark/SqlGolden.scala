// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.net.JarURLConnection
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}
import java.util.{Locale, TimeZone}
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.{SparkException, SparkThrowable}
import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.planning.PhysicalOperation
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.execution.{HiveResult, SQLExecution}
import org.apache.spark.sql.execution.command.{DescribeColumnCommand, DescribeCommandBase}
import org.apache.spark.sql.embertest.SqlGoldenInternals
import org.apache.spark.sql.types.StructType

/**
 * Spark's own SQL test files (sql-tests/inputs/ with their golden
 * sql-tests/results/, from spark-sql's tests jar) run through a session of
 * the shared local Spark, once with Ember off and once with it on, each
 * statement's answer normalized as Spark's SQLQueryTestSuite normalizes it
 * and compared with the golden one.
 *
 * What is taken from Spark's suite (3.5): how a file becomes statements
 * (comment lines out, --QUERY-DELIMITER blocks, ';' not after a backslash),
 * --IMPORT, --SET and --CONFIG_DIM; the session settings per folder (ansi/,
 * postgreSQL/, timestampNTZ/, udf/ with the Scala UDF); the test tables of
 * createTestTables; schema as catalogString, rows as hiveResultString,
 * sorted unless the analyzed plan sorts; errors as class and message.
 * What is not: see `skipReason` and the notes each file carries (a
 * --CONFIG_DIM that only switches code generation runs its first set only,
 * cte.sql's extra select-from-a-view check is not made).
 */
object SqlGolden {
  val InputRoot = "sql-tests/inputs/"
  val ResultRoot = "sql-tests/results/"

  // ---------------------------------------------------------------- files

  /** Every input file of the tests jar, by its path under inputs/, in Spark's order (by name). */
  lazy val allInputs: Seq[String] = {
    val url = getClass.getClassLoader.getResource(InputRoot)
    require(url != null, s"$InputRoot is not on the test classpath (spark-sql tests jar)")
    val names = url.getProtocol match {
      case "jar" =>
        val jar = url.openConnection().asInstanceOf[JarURLConnection].getJarFile
        jar.entries().asScala.map(_.getName)
          .filter(n => n.startsWith(InputRoot) && n.endsWith(".sql")).map(_.stripPrefix(InputRoot)).toSeq
      case _ =>
        val root = Paths.get(url.toURI)
        Files.walk(root).iterator().asScala.filter(p => Files.isRegularFile(p) && p.toString.endsWith(".sql"))
          .map(p => root.relativize(p).toString.replace(File.separatorChar, '/')).toSeq
    }
    names.sorted
  }

  def resource(path: String): Option[String] = TestSpark.resource(path)

  /** The kind of test case Spark's suite makes of a file (by its folder). */
  sealed trait Kind { def name: String }
  case object Regular extends Kind { val name = "regular" }
  case object Ansi extends Kind { val name = "ansi" }
  case object PgSql extends Kind { val name = "postgreSQL" }
  case object TimestampNtz extends Kind { val name = "timestampNTZ" }
  case object Cte extends Kind { val name = "cte" }
  case object ScalaUdf extends Kind { val name = "udf (Scala UDF)" }
  case object ScalaUdfPgSql extends Kind { val name = "udf/postgreSQL (Scala UDF)" }

  def kindOf(file: String): Kind =
    if (file.startsWith("udf/postgreSQL/")) ScalaUdfPgSql
    else if (file.startsWith("udf/")) ScalaUdf
    else if (file.startsWith("postgreSQL/")) PgSql
    else if (file.startsWith("ansi/")) Ansi
    else if (file.startsWith("timestampNTZ/")) TimestampNtz
    else if (file.startsWith("cte.sql")) Cte
    else Regular

  /** Files not run at all, and why. */
  def skipReason(file: String): Option[String] =
    if (file == "ignored.sql") Some("Spark's own suite ignores it (it tests the ignore list)")
    else if (file.startsWith("udaf/"))
      Some("needs a grouped-aggregate Pandas UDF (Python with pandas and pyarrow), the only UDF Spark runs these files with")
    else if (file.startsWith("udtf/")) Some("needs Python UDTFs (Python with pyspark)")
    else None

  // -------------------------------------------------------------- parsing

  final case class Parsed(queries: Seq[String], settings: Seq[(String, String)],
                          configSets: Seq[Seq[(String, String)]], notes: Seq[String])

  private def splitCommentsAndCodes(input: String): (Array[String], Array[String]) =
    input.split("\n").partition { line =>
      val t = line.trim
      t.startsWith("--") && !t.startsWith("--QUERY-DELIMITER")
    }

  private def splitWithSemicolon(lines: Seq[String]): Seq[String] =
    lines.mkString("\n").split("(?<=[^\\\\]);").toSeq

  private def keyValues(s: String): Seq[(String, String)] = s.split(",").toSeq.map { kv =>
    val (k, v) = kv.span(_ != '=')
    k.trim -> v.substring(1).trim
  }

  def parse(file: String): Parsed = {
    val input = resource(InputRoot + file).getOrElse(throw new IllegalArgumentException(s"no input $file"))
    val (comments, code) = splitCommentsAndCodes(input)
    val notes = ArrayBuffer[String]()
    // --IMPORT: the code lines (not the settings) of another file, first
    val imported = comments.filter(_.startsWith("--IMPORT ")).map(_.substring(9)).flatMap { other =>
      resource(InputRoot + other) match {
        case Some(text) => splitCommentsAndCodes(text)._2.toSeq
        case None => notes += s"--IMPORT $other: no such file"; Nil
      }
    }.toSeq
    val all = imported ++ code.toSeq
    val raw: Seq[String] =
      if (all.exists(_.trim.startsWith("--QUERY-DELIMITER"))) {
        val out = ArrayBuffer[String]()
        val other = ArrayBuffer[String]()
        val block = new StringBuilder
        var inBlock = false
        all.foreach { c =>
          if (c.trim.startsWith("--QUERY-DELIMITER-START")) {
            inBlock = true
            out ++= splitWithSemicolon(other.toSeq); other.clear()
          } else if (c.trim.startsWith("--QUERY-DELIMITER-END")) {
            inBlock = false
            out += "\n" + block.toString.stripSuffix(";")
            block.clear()
          } else if (inBlock) block.append("\n").append(c)
          else other += c
        }
        if (other.nonEmpty) out ++= splitWithSemicolon(other.toSeq)
        out.toSeq
      } else splitWithSemicolon(all)
    val queries = raw.map(_.trim).filter(_.nonEmpty)
      .map(_.split("\n").filterNot(_.startsWith("--")).mkString("\n").trim).filter(_.nonEmpty)

    val settings = comments.filter(_.startsWith("--SET ")).toSeq.flatMap(l => keyValues(l.substring(6)))
    val onlyIf = comments.filter(_.startsWith("--ONLY_IF")).toSeq
    if (onlyIf.nonEmpty) notes += s"--ONLY_IF is not a Spark 3.5 directive, ignored: ${onlyIf.mkString("; ")}"

    val dims: Seq[Seq[Seq[(String, String)]]] =
      comments.filter(_.startsWith("--CONFIG_DIM")).map(_.substring(12)).toSeq
        .groupBy(_.takeWhile(_ != ' ')).toSeq.sortBy(_._1).map { case (_, lines) =>
          lines.map(l => keyValues(l.dropWhile(_ != ' ').substring(1)))
        }
    // a dimension that only switches Spark's code generation changes nothing Ember runs:
    // its first set only (Spark's own suite covers the others)
    val kept = dims.map { sets =>
      val codegenOnly = sets.forall(_.forall(_._1.startsWith("spark.sql.codegen.")))
      if (codegenOnly && sets.size > 1) {
        notes += s"--CONFIG_DIM of code generation only: first of ${sets.size} sets run (${sets.head.map(kv => s"${kv._1}=${kv._2}").mkString(",")})"
        Seq(sets.head)
      } else sets
    }
    val configSets = kept.foldLeft(Seq(Seq.empty[(String, String)])) { (acc, dim) =>
      dim.flatMap(set => acc.map(_ ++ set))
    }
    Parsed(queries, settings, configSets, notes.toSeq)
  }

  final case class Golden(sql: String, schema: String, output: String)

  /** The golden blocks of a file: sql, schema, output (as Spark trims them). */
  def golden(file: String): Option[Seq[Golden]] =
    resource(ResultRoot + file + ".out").map { text =>
      val segments = text.split("-- !query.*\n")
      (0 until (segments.length - 1) / 3).map { i =>
        Golden(segments(i * 3 + 1).trim, segments(i * 3 + 2).trim,
          segments(i * 3 + 3).replaceAll("\\s+$", ""))
      }
    }

  // ------------------------------------------------------------- running

  /** An answer; diag, for an error with Ember on, what Ember's nodes return (not compared). */
  final case class Answer(schema: String, output: String, diag: Option[String] = None,
                          emberNodes: Int = 0, sparkNodes: Int = 0) {
    def matches(g: Golden): Boolean = schema == g.schema && output == g.output
    def same(o: Answer): Boolean = schema == o.schema && output == o.output
  }

  final case class StmtResult(index: Int, sql: String, golden: Golden, off: Seq[Answer], on: Seq[Answer]) {
    def okOff: Boolean = off.forall(_.matches(golden))
    def okOn: Boolean = on.forall(_.matches(golden))
    /** Ember on answers differently from Ember off (in some config set). */
    def differs: Boolean = off.zip(on).exists { case (a, b) => !a.same(b) }
  }

  final case class FileResult(file: String, kind: String, skipped: Option[String], notes: Seq[String],
                              configSets: Int, seconds: Double, stmts: Seq[StmtResult]) {
    def statements: Int = stmts.size
    def matchOff: Int = stmts.count(_.okOff)
    def matchOn: Int = stmts.count(_.okOn)
    /** Operators run with Ember on (first config set): in Ember, and all of them. */
    def emberNodes: Int = stmts.flatMap(_.on.headOption).map(_.emberNodes).sum
    def sparkNodes: Int = stmts.flatMap(_.on.headOption).map(_.sparkNodes).sum
  }

  /** Settings Spark's suite gives its SparkConf (so RESET keeps them) that are session settings here. */
  def baseSettings(ember: Boolean): Seq[(String, String)] = Seq(
    "spark.sql.shuffle.partitions" -> "4",
    "spark.sql.datetime.java8API.enabled" -> "true",
    "spark.sql.codegen.fallback" -> "false",
    "spark.sql.codegen.factoryMode" -> "CODEGEN_ONLY",
    "spark.sql.optimizer.excludedRules" -> "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation",
    "spark.ember.sql.enabled" -> ember.toString)

  val TestTables = Seq("testdata", "arraydata", "mapdata", "aggtest", "onek", "tenk1")

  private val TenkSchema = "unique1 int, unique2 int, two int, four int, ten int, twenty int, " +
    "hundred int, thousand int, twothousand int, fivethous int, tenthous int, odd int, even int, " +
    "stringu1 string, stringu2 string, string4 string"

  /** The tables createTestTables makes (Parquet tables in the warehouse), those missing. */
  def ensureTestTables(spark: SparkSession): Unit = {
    val s = spark.newSession()
    import s.implicits._
    def missing(t: String) = !s.sessionState.catalog.tableExists(
      org.apache.spark.sql.catalyst.TableIdentifier(t, Some("default")))
    if (missing("testdata"))
      (1 to 100).map(i => (i, i.toString)).toDF("key", "value").repartition(1)
        .write.format("parquet").saveAsTable("testdata")
    if (missing("arraydata"))
      Seq((Seq(1, 2, 3), Seq(Seq(1, 2, 3))), (Seq(2, 3, 4), Seq(Seq(2, 3, 4))))
        .toDF("arraycol", "nestedarraycol").write.format("parquet").saveAsTable("arraydata")
    if (missing("mapdata"))
      Seq(Tuple1(Map(1 -> "a1", 2 -> "b1", 3 -> "c1", 4 -> "d1", 5 -> "e1")),
        Tuple1(Map(1 -> "a2", 2 -> "b2", 3 -> "c2", 4 -> "d2")),
        Tuple1(Map(1 -> "a3", 2 -> "b3", 3 -> "c3")),
        Tuple1(Map(1 -> "a4", 2 -> "b4")),
        Tuple1(Map(1 -> "a5"))).toDF("mapcol").write.format("parquet").saveAsTable("mapdata")
    def tsv(res: String, schema: String, table: String): Unit = if (missing(table)) {
      val lines = resource(res).getOrElse(throw new IllegalStateException(s"$res is not on the classpath"))
        .split("\n").toSeq.filter(_.nonEmpty)
      // one file, as Spark's suite writes it from one small CSV file (floating-point
      // sums depend on how the rows are split)
      s.read.option("delimiter", "\t").option("header", "false").schema(schema)
        .csv(lines.toDS()).coalesce(1).write.format("parquet").saveAsTable(table)
    }
    tsv("test-data/postgresql/agg.data", "a int, b float", "aggtest")
    tsv("test-data/postgresql/onek.data", TenkSchema, "onek")
    tsv("test-data/postgresql/tenk.data", TenkSchema, "tenk1")
  }

  def dropTestTables(spark: SparkSession): Unit =
    TestTables.foreach(t => spark.sql(s"DROP TABLE IF EXISTS default.$t"))

  private val NotIncluded = "[not included in comparison]"

  /** SQLQueryTestHelper.replaceNotIncludedMsg, the warehouse folder's name in place of the suite's. */
  def normalizeLine(line: String, warehouseName: String): String = {
    val wh = java.util.regex.Pattern.quote(warehouseName)
    line.replaceAll("#\\d+", "#x")
      .replaceAll("plan_id=\\d+", "plan_id=x")
      .replaceAll(s"Location.*$wh/", s"Location $NotIncluded/{warehouse_dir}/")
      .replaceAll(s"file:[^\\s,]*$wh", s"file:$NotIncluded/{warehouse_dir}")
      .replaceAll("Created By.*", s"Created By $NotIncluded")
      .replaceAll("Created Time.*", s"Created Time $NotIncluded")
      .replaceAll("transient_lastDdlTime=\\d+", s"transient_lastDdlTime=$NotIncluded")
      .replaceAll("\"transient_lastDdlTime\":\"\\d+\"", "\"transient_lastDdlTime\":\"" + NotIncluded + "\"")
      .replaceAll("Last Access.*", s"Last Access $NotIncluded")
      .replaceAll("Owner\t.*", s"Owner\t$NotIncluded")
      .replaceAll("Partition Statistics\t\\d+", s"Partition Statistics\t$NotIncluded")
      .replaceAll("CTERelationDef \\d+,", "CTERelationDef xxxx,")
      .replaceAll("CTERelationRef \\d+,", "CTERelationRef xxxx,")
      .replaceAll("@\\w*,", "@xxxxxxxx,")
      .replaceAll("\\*\\(\\d+\\) ", "*")
  }

  private def sorted(plan: LogicalPlan): Boolean = plan match {
    case _: Join | _: Aggregate | _: Generate | _: Sample | _: Distinct => false
    case _: DescribeCommandBase | _: DescribeColumnCommand | _: DescribeRelation | _: DescribeColumn => true
    case PhysicalOperation(_, _, Sort(_, true, _)) => true
    case _ => plan.children.iterator.exists(sorted)
  }

  private val EmptySchema = new StructType().catalogString

  /** One statement's answer as Spark's suite writes it. */
  def answer(s: SparkSession, sql: String, warehouseName: String): Answer = {
    var stats = PlanStats.Stats(0, 0)
    val (schema, lines) = try {
      val df = s.sql(sql)
      val schema = df.schema.catalogString
      val rows = SQLExecution.withNewExecutionId(df.queryExecution, Some(sql)) {
        HiveResult.hiveResultString(df.queryExecution.executedPlan).map(normalizeLine(_, warehouseName))
      }
      stats = try PlanStats.of(df.queryExecution.executedPlan) catch { case NonFatal(_) => stats }
      (schema, if (sorted(df.queryExecution.analyzed)) rows else rows.sorted)
    } catch {
      case e: SparkThrowable with Throwable if e.getErrorClass != null =>
        (EmptySchema, Seq(e.getClass.getName, SqlGoldenInternals.errorMessage(e)))
      case a: AnalysisException =>
        (EmptySchema, Seq(a.getClass.getName, a.getSimpleMessage.replaceAll("#\\d+", "#x")))
      case e: SparkException if e.getCause != null =>
        e.getCause match {
          case c: SparkThrowable with Throwable if c.getErrorClass != null =>
            (EmptySchema, Seq(c.getClass.getName, SqlGoldenInternals.errorMessage(c)))
          case c => (EmptySchema, Seq(c.getClass.getName, c.getMessage))
        }
      case NonFatal(e) => (EmptySchema, Seq(e.getClass.getName, e.getMessage))
    }
    Answer(schema, lines.mkString("\n").replaceAll("\\s+$", ""), None, stats.emberNodes, stats.sparkNodes)
  }

  /** -Dember.sqlgolden.diagnose=true: an error the JVM raises reading Ember's
   *  batches is looked into (vectorDiagnosis). */
  val diagnose: Boolean = java.lang.Boolean.getBoolean("ember.sqlgolden.diagnose")

  private val JvmErrors = Seq("java.lang.UnsupportedOperationException", "java.lang.NullPointerException",
    "java.lang.IllegalArgumentException", "java.lang.AssertionError", "java.lang.IndexOutOfBoundsException",
    "java.lang.ClassCastException", "java.lang.ArrayIndexOutOfBoundsException", "java.lang.IllegalStateException")

  private def arrowShape(f: org.apache.arrow.vector.types.pojo.Field): String = {
    val t = f.getType match {
      case ts: org.apache.arrow.vector.types.pojo.ArrowType.Timestamp =>
        s"Timestamp(${ts.getUnit}${if (ts.getTimezone == null) "" else ", zoned"})"
      case other => other.toString
    }
    val kids = f.getChildren.asScala.map(arrowShape)
    if (kids.isEmpty) t else s"$t<${kids.mkString(", ")}>"
  }

  /** Runs the statement again (AQE off, so the plan holds every Ember node)
   *  and compares the Arrow type of each column each Ember node returns with
   *  the one Spark reads that column's type from. */
  def vectorDiagnosis(s: SparkSession, sql: String): String = {
    val aqe = s.conf.get("spark.sql.adaptive.enabled")
    s.conf.set("spark.sql.adaptive.enabled", "false")
    try {
      val plan = s.sql(sql).queryExecution.executedPlan
      val nodes = plan.collect { case e: EmberExec => e } ++
        plan.collect { case p => p.subqueries }.flatten.flatMap(_.collect { case e: EmberExec => e })
      if (nodes.isEmpty) return "no Ember node with AQE off"
      val tz = s.sessionState.conf.sessionLocalTimeZone
      def rootCause(x: Throwable): String = {
        val r = Iterator.iterate(x)(_.getCause).takeWhile(_ != null).toSeq.last
        s"${r.getClass.getName}: ${Option(r.getMessage).getOrElse("").linesIterator.take(1).mkString.take(240)}"
      }
      /** What the Ember node's root computes for output column i, when it is a Project. */
      def what(e: EmberExec, i: Int): String = e.original match {
        case p: org.apache.spark.sql.execution.ProjectExec if i < p.projectList.size =>
          p.projectList(i) match {
            case org.apache.spark.sql.catalyst.expressions.Alias(l: org.apache.spark.sql.catalyst.expressions.Literal, _) =>
              s" (the literal ${l.sql.take(60)} of type ${l.dataType.sql})"
            case l: org.apache.spark.sql.catalyst.expressions.Literal => s" (the literal ${l.sql.take(60)})"
            case _: org.apache.spark.sql.catalyst.expressions.Attribute => " (a column of its input)"
            case x => s" (${x.prettyName})"
          }
        case _ => ""
      }
      val found = nodes.iterator.map { e =>
        val want = e.output.map { a =>
          a.name -> (try arrowShape(SqlGoldenInternals.arrowField(a.name, a.dataType, tz))
                     catch { case NonFatal(_) => s"nothing (${a.dataType.sql} has no Arrow form)" })
        }
        val got = try {
          e.executeColumnar().mapPartitions { it =>
            if (!it.hasNext) Iterator.empty
            else {
              val b = it.next()
              Iterator((0 until b.numCols()).map { i => b.column(i) match {
                case v: org.apache.spark.sql.vectorized.ArrowColumnVector => arrowShape(v.getValueVector.getField)
                case v => v.getClass.getSimpleName
              }})
            }
          }.take(1).headOption
        } catch { case NonFatal(x) => return s"Ember [${e.nodes.map(_.name).mkString(", ")}] fails: ${rootCause(x)}" }
        got.flatMap { g =>
          val bad = want.zip(g).zipWithIndex.collect { case (((n, w), x), i) if w != x =>
            s"`$n`${what(e, i)}: Spark reads $w, Ember returns $x" }
          if (bad.isEmpty) None else Some(s"Ember [${e.nodes.map(_.name).mkString(", ")}]: ${bad.mkString("; ")}")
        }
      }.collectFirst { case Some(m) => m }
      found.getOrElse("every Ember node's columns have Spark's Arrow types (first batch, AQE off)")
    } catch {
      case NonFatal(x) => s"diagnosis failed: ${Option(x.getMessage).getOrElse(x.toString).linesIterator.take(1).mkString.take(200)}"
    } finally s.conf.set("spark.sql.adaptive.enabled", aqe)
  }

  private lazy val watchdog: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor { r =>
    val t = new Thread(r, "sql-golden-watchdog"); t.setDaemon(true); t
  }
  private val groups = new AtomicInteger()

  /** Runs a file's statements in a new session (one config set, Ember on or off). */
  def runOnce(spark: SparkSession, file: String, queries: Seq[String], settings: Seq[(String, String)],
              ember: Boolean, timeoutSec: Int): Seq[Answer] = {
    val s = spark.newSession()
    val base = baseSettings(ember)
    base.foreach { case (k, v) => s.conf.set(k, v) }
    kindOf(file) match {
      case ScalaUdf => registerUdf(s)
      case ScalaUdfPgSql => registerUdf(s); pgSql(s)
      case PgSql => pgSql(s)
      case Ansi => s.conf.set("spark.sql.ansi.enabled", "true")
      case TimestampNtz => s.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
      case _ => s.conf.set("spark.sql.ansi.enabled", "false")
    }
    settings.foreach { case (k, v) => s.sql(s"set $k=$v") }
    val warehouseName = new File(new java.net.URI(s.sessionState.conf.warehousePath).getPath).getName
    val sc = s.sparkContext
    queries.map { q =>
      val group = s"sql-golden-${groups.incrementAndGet()}"
      sc.setJobGroup(group, s"$file", interruptOnCancel = true)
      val timedOut = new java.util.concurrent.atomic.AtomicBoolean(false)
      val timer = watchdog.schedule(new Runnable {
        override def run(): Unit = { timedOut.set(true); sc.cancelJobGroup(group) }
      }, timeoutSec.toLong, TimeUnit.SECONDS)
      val a0 = try answer(s, q, warehouseName) finally { timer.cancel(false); sc.clearJobGroup() }
      val a = if (ember && diagnose && a0.schema == EmptySchema && JvmErrors.exists(a0.output.startsWith))
        a0.copy(diag = Some(vectorDiagnosis(s, q))) else a0
      // RESET clears the session's settings back to the SparkContext's: the
      // suite's own ones (and Ember's switch) are put back
      if (q.trim.toLowerCase(Locale.ROOT).startsWith("reset") ||
          s.conf.getOption("spark.ember.sql.enabled").forall(_ != ember.toString))
        base.foreach { case (k, v) => s.conf.set(k, v) }
      if (timedOut.get) Answer(EmptySchema, s"TIMEOUT after $timeoutSec s\n${a.output}") else a
    }
  }

  private def registerUdf(s: SparkSession): Unit = SqlGoldenInternals.registerScalaUdf(s, "udf")

  private def pgSql(s: SparkSession): Unit = {
    s.udf.register("booleq", (b1: Boolean, b2: Boolean) => b1 == b2)
    s.udf.register("boolne", (b1: Boolean, b2: Boolean) => b1 != b2)
    s.udf.register("vol", (v: String) => v)
    s.conf.set("spark.sql.ansi.enabled", "true")
    s.conf.set("spark.sql.legacy.interval.enabled", "true")
  }

  /** What a run left in the shared catalog (databases, tables, functions, global
   *  temporary views), so that the next run starts from the same state. */
  final case class CatalogState(dbs: Set[String], tables: Set[(String, String)],
                                functions: Set[(String, String)], globalViews: Set[String])

  def catalogState(spark: SparkSession): CatalogState = {
    val ext = spark.sharedState.externalCatalog
    val dbs = ext.listDatabases().toSet
    CatalogState(dbs,
      dbs.flatMap(d => ext.listTables(d).map(d -> _)),
      dbs.flatMap(d => ext.listFunctions(d, "*").map(d -> _)),
      spark.sharedState.globalTempViewManager.listViewNames("*").toSet)
  }

  def restoreCatalog(spark: SparkSession, before: CatalogState): Unit = {
    val ext = spark.sharedState.externalCatalog
    val now = catalogState(spark)
    (now.tables -- before.tables).filter(t => before.dbs.contains(t._1)).foreach { case (d, t) =>
      try spark.sql(s"DROP TABLE IF EXISTS `$d`.`$t`")
      catch { case NonFatal(_) => try spark.sql(s"DROP VIEW IF EXISTS `$d`.`$t`") catch { case NonFatal(_) => } }
      if (ext.tableExists(d, t)) ext.dropTable(d, t, ignoreIfNotExists = true, purge = true)
    }
    (now.functions -- before.functions).filter(f => before.dbs.contains(f._1)).foreach { case (d, f) =>
      ext.dropFunction(d, f)
    }
    (now.dbs -- before.dbs).foreach(d => spark.sql(s"DROP DATABASE IF EXISTS `$d` CASCADE"))
    (now.globalViews -- before.globalViews).foreach(v => spark.sharedState.globalTempViewManager.remove(v))
    spark.catalog.clearCache()
  }

  /** Runs one file both ways (every config set), compares with the golden answers. */
  def runFile(spark: SparkSession, file: String, timeoutSec: Int = 300): FileResult = {
    val kind = kindOf(file).name
    val skip = skipReason(file)
    if (skip.nonEmpty) return FileResult(file, kind, skip, Nil, 0, 0, Nil)
    val p = parse(file)
    val gold = golden(file) match {
      case None => return FileResult(file, kind, Some("no golden file"), p.notes, 0, 0, Nil)
      case Some(g) => g
    }
    if (gold.size != p.queries.size)
      return FileResult(file, kind, Some(s"the file splits into ${p.queries.size} statements, " +
        s"its golden file has ${gold.size}"), p.notes, 0, 0, Nil)
    val bad = p.queries.zip(gold).indexWhere { case (q, g) => q != g.sql }
    if (bad >= 0)
      return FileResult(file, kind, Some(s"statement $bad is not the golden file's"), p.notes, 0, 0, Nil)
    val t0 = System.nanoTime()
    val tz = TimeZone.getDefault
    val locale = Locale.getDefault
    TimeZone.setDefault(TimeZone.getTimeZone("America/Los_Angeles"))
    Locale.setDefault(Locale.US)
    try {
      ensureTestTables(spark)
      val before = catalogState(spark)
      def run(ember: Boolean): Seq[Seq[Answer]] = p.configSets.map { set =>
        try runOnce(spark, file, p.queries, p.settings ++ set, ember, timeoutSec)
        finally restoreCatalog(spark, before)
      }
      val off = run(ember = false)
      val on = run(ember = true)
      val stmts = p.queries.indices.map { i =>
        StmtResult(i, p.queries(i), gold(i), off.map(_(i)), on.map(_(i)))
      }
      FileResult(file, kind, None, p.notes, p.configSets.size, (System.nanoTime() - t0) / 1e9, stmts)
    } finally {
      TimeZone.setDefault(tz)
      Locale.setDefault(locale)
    }
  }

  // ---------------------------------------------- recorded numbers and reasons

  def tsvLines(text: String): Seq[Array[String]] =
    text.split("\n").toSeq.filterNot(l => l.trim.isEmpty || l.startsWith("#")).map(_.split("\t", -1))

  final case class Expected(statements: Int, matchOff: Int, matchOn: Int)

  def readExpected(text: String): Map[String, Expected] = tsvLines(text).map { f =>
    f(0) -> Expected(f(1).trim.toInt, f(2).trim.toInt, f(3).trim.toInt)
  }.toMap

  /** A statement Ember answers differently, and why: file, query index (as Spark
   *  numbers them, from 0), the statement's first characters, the reason (a
   *  cause's code, "@code", with details after ": ", or words of its own). */
  final case class Known(file: String, index: Int, sqlStart: String, reason: String) {
    def cause: Option[String] = if (reason.startsWith("@")) Some(reason.takeWhile(c => c != ':' && c != ' ')) else None
    def detail: String = cause.map(c => reason.drop(c.length).stripPrefix(":").trim).getOrElse(reason)
  }

  /** known-differences.tsv: lines "@code<TAB>text" name the causes, the other lines are Knowns. */
  final case class KnownDifferences(byStatement: Map[(String, Int), Known], causes: Map[String, String]) {
    def get(key: (String, Int)): Option[Known] = byStatement.get(key)
    def contains(key: (String, Int)): Boolean = byStatement.contains(key)
    /** The reason in words: the cause's text and the details. */
    def explain(k: Known): String = k.cause match {
      case Some(c) => causes(c) + (if (k.detail.nonEmpty) s" (${k.detail})" else "")
      case None => k.reason
    }
  }

  def readKnown(text: String): KnownDifferences = {
    val lines = tsvLines(text)
    val causes = lines.filter(_(0).startsWith("@")).map { f =>
      require(f.length >= 2, s"known-differences.tsv: a cause wants a code and its text: ${f.mkString("\\t")}")
      f(0).trim -> f(1).trim
    }.toMap
    val known = lines.filterNot(_(0).startsWith("@")).map { f =>
      require(f.length >= 4, s"known-differences.tsv: 4 tab-separated fields wanted: ${f.mkString("\\t")}")
      val k = Known(f(0).trim, f(1).trim.toInt, f(2).trim, f(3).trim)
      k.cause.foreach(c => require(causes.contains(c), s"known-differences.tsv: no cause $c (${k.file} ${k.index})"))
      (k.file, k.index) -> k
    }
    val dup = known.groupBy(_._1).collect { case (key, v) if v.size > 1 => key }
    require(dup.isEmpty, s"known-differences.tsv: statements listed twice: ${dup.mkString(", ")}")
    KnownDifferences(known.toMap, causes)
  }

  def oneLine(sql: String): String = sql.replaceAll("\\s+", " ").trim

  def sqlStart(sql: String, n: Int = 60): String = oneLine(sql).take(n).replace("\t", " ")

  // ------------------------------------------------------------ persisting

  private val mapper = new ObjectMapper()

  def toJson(r: FileResult): String = {
    val o = mapper.createObjectNode()
    o.put("file", r.file); o.put("kind", r.kind)
    r.skipped.foreach(o.put("skipped", _))
    val notes = o.putArray("notes"); r.notes.foreach(notes.add)
    o.put("configSets", r.configSets); o.put("seconds", r.seconds)
    val arr = o.putArray("stmts")
    r.stmts.foreach { st =>
      val n = arr.addObject()
      n.put("index", st.index); n.put("sql", st.sql)
      n.put("goldenSchema", st.golden.schema); n.put("goldenOutput", st.golden.output)
      def answers(name: String, as: Seq[Answer]): Unit = {
        val a = n.putArray(name)
        as.foreach { x =>
          val e = a.addObject(); e.put("schema", x.schema); e.put("output", x.output)
          x.diag.foreach(e.put("diag", _))
          if (x.sparkNodes > 0) { e.put("emberNodes", x.emberNodes); e.put("sparkNodes", x.sparkNodes) }
        }
      }
      answers("off", st.off); answers("on", st.on)
    }
    mapper.writeValueAsString(o)
  }

  def fromJson(text: String): FileResult = {
    val o = mapper.readTree(text)
    def s(n: JsonNode, k: String) = n.get(k).asText()
    def answers(n: JsonNode) = n.elements().asScala.map(e =>
      Answer(s(e, "schema"), s(e, "output"), Option(e.get("diag")).map(_.asText()),
        Option(e.get("emberNodes")).map(_.asInt()).getOrElse(0),
        Option(e.get("sparkNodes")).map(_.asInt()).getOrElse(0))).toSeq
    FileResult(s(o, "file"), s(o, "kind"), Option(o.get("skipped")).map(_.asText()),
      o.get("notes").elements().asScala.map(_.asText()).toSeq, o.get("configSets").asInt(),
      o.get("seconds").asDouble(),
      o.get("stmts").elements().asScala.map { n =>
        StmtResult(n.get("index").asInt(), s(n, "sql"),
          Golden(s(n, "sql"), s(n, "goldenSchema"), s(n, "goldenOutput")), answers(n.get("off")), answers(n.get("on")))
      }.toSeq)
  }

  def fileKey(file: String): String = file.replace('/', '@')

  // ------------------------------------------------------------ reporting

  /** The first line where two outputs part, for a short "Spark gives X, Ember gives Y". */
  def firstDifference(want: Answer, got: Answer, width: Int = 120): (String, String) = {
    // an error as its class and, for Spark's JSON errors, the error class, else the message's first line
    def error(a: Answer) = {
      val l = a.output.split("\n", 2)
      val rest = l.lift(1).getOrElse("")
      val what = if (rest.startsWith("{"))
        "\"errorClass\" : \"([^\"]+)\"".r.findFirstMatchIn(rest).map(_.group(1)).getOrElse("")
      else rest.linesIterator.nextOption().getOrElse("")
      val m = (l.head.split('.').last + (if (what.nonEmpty) ": " + what else "")).replaceAll("\\s+", " ")
      "error " + (if (m.length > width) m.take(width) + "…" else m)
    }
    if (want.schema == EmptySchema && got.schema == EmptySchema && error(want) != error(got))
      return (error(want), error(got))
    if (want.schema != got.schema)
      return (if (want.schema == EmptySchema) error(want) else "schema " + want.schema.take(width),
        if (got.schema == EmptySchema) error(got) else "schema " + got.schema.take(width))
    val a = want.output.split("\n", -1)
    val b = got.output.split("\n", -1)
    val i = (0 until math.max(a.length, b.length)).find(i => a.lift(i) != b.lift(i)).getOrElse(0)
    // a long line is shown from a little before the first character where the two part
    val (la, lb) = (a.lift(i).getOrElse(""), b.lift(i).getOrElse(""))
    val c = la.indices.find(k => k >= lb.length || la(k) != lb(k)).getOrElse(la.length)
    val from = if (c > width / 2) c - 30 else 0
    def line(xs: Array[String]) = xs.lift(i).map { l =>
      val v = if (from > 0) "…" + l.drop(from) else l
      if (v.length > width) v.take(width) + "…" else v
    }.getOrElse("(no such line)")
    val where = if (a.length != b.length) s" (${a.length} lines vs ${b.length})" else ""
    (s"line ${i + 1}: ${line(a)}", s"line ${i + 1}: ${line(b)}$where")
  }

  def docHeader(commit: String): String =
    s"""# Spark's SQL test files with Ember
      |
      |Spark keeps its SQL end-to-end tests as files of statements
      |(`sql-tests/inputs/**.sql`) with the answer each statement must give
      |(`sql-tests/results/**.sql.out`, the "golden" files); `SQLQueryTestSuite`
      |runs them. Gluten and Comet run Spark's suites with their plugin on; this
      |page is the same exercise for Ember: every input file of the spark-sql
      |3.5.8 tests jar, run by Ember's own harness
      |(`spark/plugin/src/test/scala/dev/ember/spark/SqlGolden.scala`) in a local Spark
      |with the plugin, once with `spark.ember.sql.enabled=false` and once with
      |`true`, each statement's answer compared with the golden one.
      |
      |Generated by `scripts/spark-sql-tests.sh` at commit $commit; do not edit
      |by hand. The JVM test `SqlGoldenTest` runs the subset of
      |`spark/plugin/src/test/resources/sql-golden/files.txt` on every `mvn test` and
      |fails when a file gives the golden answer for fewer statements with Ember
      |on than `expected.tsv` records, or when a statement is answered otherwise
      |with Ember on than with it off (above all one that Spark answers right)
      |and `known-differences.tsv` does not say why.
      |
      |How the harness follows Spark's suite: a file is split into statements
      |as Spark splits it (comment lines dropped, `--QUERY-DELIMITER` blocks,
      |`;` not after a backslash), `--IMPORT` prepends another file's
      |statements, `--SET` settings apply to the whole file, and the file runs
      |once per combination of its `--CONFIG_DIM` sets (a statement matches only
      |if it matches in every one). A dimension that only switches Spark's code
      |generation runs its first set only: Ember replaces operators whatever
      |Spark's code generation does. Each run gets a new session with the
      |settings Spark's suite gives (shuffle partitions 4, the Java 8 time API,
      |`ConvertToLocalRelation` excluded from the optimizer so that inline
      |tables run as plans; ANSI on for `ansi/` and `postgreSQL/`, with the
      |`booleq`/`boolne`/`vol` functions and legacy intervals for the latter;
      |`TIMESTAMP_NTZ` for `timestampNTZ/`; the identity-through-string Scala
      |UDF named `udf` for `udf/`), JVM time zone America/Los_Angeles and
      |locale en-US, and the tables of Spark's `createTestTables` (testdata,
      |arraydata, mapdata, aggtest, onek, tenk1) as Parquet tables. An answer is
      |the schema (`catalogString`) and the rows as `HiveResult.hiveResultString`
      |gives them, sorted unless the analyzed plan sorts, with Spark's
      |normalization of ids and locations; an error is its class and message
      |(Spark's errors in the MINIMAL JSON format), as the suite writes them.
      |Not done: the Python and Pandas UDF variants of `udf/` (the Scala UDF
      |variant runs), `udaf/` and `udtf/` (Python only), `cte.sql`'s extra
      |check that a view over each query gives the same answer, and the
      |analyzer-results files (analysis only, which Ember does not touch).
      |""".stripMargin

  private def md(s: String): String = s.replace("|", "\\|").replace("`", "'")

  /** docs/spark-sql-tests.md from the results of a full run. */
  def markdown(results: Seq[FileResult], known: KnownDifferences, ciFiles: Set[String],
               minutes: Double, header: String): String = {
    val sb = new StringBuilder
    val ran = results.filter(_.skipped.isEmpty)
    val skipped = results.filter(_.skipped.nonEmpty)
    val st = ran.map(_.statements).sum
    val off = ran.map(_.matchOff).sum
    val on = ran.map(_.matchOn).sum
    sb.append(header)
    sb.append(s"\n## Totals\n\n")
    sb.append("| | files | statements | golden with Ember off | golden with Ember on |\n|---|---:|---:|---:|---:|\n")
    sb.append(s"| all files run | ${ran.size} | $st | $off | $on |\n")
    val ci = ran.filter(r => ciFiles.contains(r.file))
    sb.append(s"| of them the CI subset (files.txt) | ${ci.size} | ${ci.map(_.statements).sum} | " +
      s"${ci.map(_.matchOff).sum} | ${ci.map(_.matchOn).sum} |\n")
    val diffs = ran.flatMap(r => r.stmts.filter(_.differs).map(r -> _))
    val regress = diffs.count { case (_, s) => s.okOff && !s.okOn }
    sb.append(f"\n${skipped.size} files skipped (below). $regress statements give the golden answer with " +
      f"Ember off and not with it on; ${diffs.size} statements in all answer differently with Ember on " +
      f"(listed below with the reason). The run took $minutes%.1f minutes.\n")

    sb.append("\n## Differences by cause\n\n")
    sb.append("The statements that answer differently with Ember on, by the cause known-differences.tsv gives " +
      "them (a statement's own words when it names no cause). \"golden lost\" counts those Spark answers " +
      "right and Ember does not.\n\n")
    sb.append("| cause | statements | golden lost | in CI files | what happens |\n|---|---:|---:|---:|---|\n")
    val byCause = diffs.groupBy { case (r, s) => known.get(r.file -> s.index).map(k => k.cause.getOrElse("(own words)"))
      .getOrElse("(not yet explained)") }
    byCause.toSeq.sortBy(x => (-x._2.size, x._1)).foreach { case (c, ds) =>
      val text = known.causes.getOrElse(c, "")
      sb.append(s"| ${c.stripPrefix("@")} | ${ds.size} | ${ds.count { case (_, s) => s.okOff && !s.okOn }} | " +
        s"${ds.count(d => ciFiles.contains(d._1.file))} | ${md(text)} |\n")
    }

    sb.append("\n## Per file\n\n")
    sb.append("Statements as Spark's suite splits the file; a statement counts as matching when its schema and " +
      "output equal the golden ones in every config set the file is run with (\"sets\"). " +
      "\"Operators in Ember\" counts, over the file's statements that ran with Ember on (first set), the " +
      "operators of the executed plans that ran inside Ember nodes, of all operators (PlanStats: Spark's " +
      "wrappers, transitions and AQE's stage nodes not counted; statements that failed count none). " +
      "CI marks the files the JVM test runs.\n\n")
    sb.append("| file | kind | sets | statements | off | on | differ | operators in Ember | CI |\n" +
      "|---|---|---:|---:|---:|---:|---:|---:|---|\n")
    ran.foreach { r =>
      sb.append(s"| ${r.file} | ${r.kind} | ${r.configSets} | ${r.statements} | ${r.matchOff} | ${r.matchOn} | " +
        s"${r.stmts.count(_.differs)} | ${r.emberNodes}/${r.sparkNodes} | ${if (ciFiles.contains(r.file)) "yes" else ""} |\n")
    }

    sb.append("\n## Statements Ember answers differently\n\n")
    sb.append("Each statement whose answer with Ember on is not the answer with Ember off, with the reason " +
      "(spark/plugin/src/test/resources/sql-golden/known-differences.tsv: its cause, described in the table of causes " +
      "above, and what this statement shows of it) and the first line where the answers part (with Ember " +
      "off / with Ember on). \"golden: off yes, on no\" is a statement Spark gets right and Ember does not.\n")
    diffs.groupBy(_._1.file).toSeq.sortBy(_._1).foreach { case (file, ds) =>
      sb.append(s"\n### $file\n\n")
      ds.sortBy(_._2.index).foreach { case (_, s) =>
        val k = known.get(file -> s.index)
        val ci = s.off.indices.find(i => !s.off(i).same(s.on(i))).getOrElse(0)
        val (a, b) = firstDifference(s.off(ci), s.on(ci))
        val sql = oneLine(s.sql)
        sb.append(s"- query ${s.index}: `${md(if (sql.length > 160) sql.take(160) + "…" else sql)}`  \n")
        // the cause by its name (its text is in the table above), with the statement's details
        val reason = k.map { x => x.cause match {
          case Some(c) => s"**${c.stripPrefix("@")}**" + (if (x.detail.nonEmpty) s": ${md(x.detail)}" else "")
          case None => md(x.reason)
        }}.getOrElse("**not yet explained**")
        sb.append(s"  golden: off ${if (s.okOff) "yes" else "no"}, on ${if (s.okOn) "yes" else "no"}. Reason: $reason  \n")
        sb.append(s"  off: `${md(a)}`  \n  on: `${md(b)}`")
        if (k.isEmpty) s.on(ci).diag.foreach(d => sb.append(s"  \n  looked into: ${md(d)}"))
        sb.append("\n")
      }
    }

    sb.append("\n## Statements that miss the golden answer with Ember off too\n\n")
    sb.append("Vanilla Spark in this harness does not reproduce these golden answers (the harness's environment, " +
      "not Ember); they count as not matching in both columns. The first line where Spark's answer (off) parts " +
      "from the golden one:\n\n")
    ran.foreach { r =>
      r.stmts.filter(!_.okOff).foreach { s =>
        val a = s.off.find(!_.matches(s.golden)).get
        val (g, o) = firstDifference(Answer(s.golden.schema, s.golden.output), a)
        sb.append(s"- ${r.file} query ${s.index}: `${md(oneLine(s.sql).take(100))}`  \n" +
          s"  golden: `${md(g)}`  \n  off: `${md(o)}`\n")
      }
    }

    sb.append("\n## Skipped\n\n")
    skipped.foreach(r => sb.append(s"- ${r.file}: ${md(r.skipped.get)}\n"))
    val notes = ran.filter(_.notes.nonEmpty)
    if (notes.nonEmpty) {
      sb.append("\n## Notes on files run\n\n")
      notes.foreach(r => sb.append(s"- ${r.file}: ${md(r.notes.mkString("; "))}\n"))
    }
    sb.toString
  }
}
