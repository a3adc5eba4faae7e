// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark.tools

import java.io.{File, PrintStream}
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{Sort => LogicalSort}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.ember.SparkShims

import dev.ember.spark.{EmberPlugin, PlanJson, PlanStats, Warehouse}

/**
 * ember-spark-sql: Spark's spark-sql, with Ember plugged in. Starts a local
 * Spark, registers every table folder of --warehouse, runs the statements
 * of -e / -f, prints each result and its time; --compare runs each again
 * on vanilla Spark (Ember off in the same session) and checks the answers
 * are identical; --report writes a JSON record per statement.
 */
object EmberSparkSql {
  private val Usage =
    """usage: ember-spark-sql --warehouse DIR (-e SQL | -f FILE...) [options]
      |  --master M          Spark master (default local[*])
      |  --format F          table (default), csv or json
      |  --compare           run each statement on vanilla Spark too and compare
      |  --report FILE       per statement: name, equal, ember_ms, vanilla_ms,
      |                      ember_nodes, spark_nodes, rows, native_ms (time Ember's
      |                      tasks spent in C, summed over tasks), native_ops_ms (of
      |                      it, each operator's own time, by operator), error (JSON)
      |  --repeat N          run each statement N times, report the median (default 1)
      |  --warmup N          untimed runs before (default 0)
      |  --quiet             print no result rows
      |  --conf k=v          a Spark or Ember setting (repeatable)""".stripMargin

  final case class Options(
      warehouse: Option[String] = None,
      sql: Seq[(String, String)] = Nil, // (name, text)
      master: String = "local[*]",
      format: String = "table",
      compare: Boolean = false,
      report: Option[String] = None,
      repeat: Int = 1,
      warmup: Int = 0,
      quiet: Boolean = false,
      conf: Seq[(String, String)] = Nil)

  final case class Outcome(
      name: String, equal: Option[Boolean], emberMs: Double, vanillaMs: Option[Double],
      emberNodes: Int, sparkNodes: Int, rows: Long, error: Option[String], nativeMs: Double = 0,
      opMs: Map[String, Double] = Map.empty)

  def main(args: Array[String]): Unit = {
    val opts = try parse(args.toList, Options()) catch {
      case e: IllegalArgumentException =>
        System.err.println(s"ember-spark-sql: ${e.getMessage}\n$Usage")
        sys.exit(2)
    }
    val code = run(opts, System.out)
    sys.exit(code)
  }

  def parse(args: List[String], o: Options): Options = args match {
    case Nil =>
      if (o.sql.isEmpty) throw new IllegalArgumentException("nothing to run: give -e or -f")
      if (!Set("table", "csv", "json").contains(o.format))
        throw new IllegalArgumentException(s"unknown format ${o.format}")
      o
    case "--warehouse" :: d :: rest => parse(rest, o.copy(warehouse = Some(d)))
    case "-e" :: q :: rest => parse(rest, o.copy(sql = o.sql :+ (s"statement ${o.sql.size + 1}" -> q)))
    case "-f" :: rest =>
      val (files, more) = rest.span(a => !a.startsWith("-"))
      if (files.isEmpty) throw new IllegalArgumentException("-f needs a file")
      val read = files.map { f =>
        val p = Paths.get(f)
        if (!Files.isRegularFile(p)) throw new IllegalArgumentException(s"no such file: $f")
        p.getFileName.toString.stripSuffix(".sql") ->
          new String(Files.readAllBytes(p), StandardCharsets.UTF_8)
      }
      parse(more, o.copy(sql = o.sql ++ read))
    case "--master" :: m :: rest => parse(rest, o.copy(master = m))
    case "--format" :: f :: rest => parse(rest, o.copy(format = f))
    case "--compare" :: rest => parse(rest, o.copy(compare = true))
    case "--report" :: f :: rest => parse(rest, o.copy(report = Some(f)))
    case "--repeat" :: n :: rest => parse(rest, o.copy(repeat = positive(n, "--repeat")))
    case "--warmup" :: n :: rest => parse(rest, o.copy(warmup = math.max(0, positive(n, "--warmup", 0))))
    case "--quiet" :: rest => parse(rest, o.copy(quiet = true))
    case "--conf" :: kv :: rest =>
      val i = kv.indexOf('=')
      if (i <= 0) throw new IllegalArgumentException(s"--conf wants key=value, not $kv")
      parse(rest, o.copy(conf = o.conf :+ (kv.substring(0, i) -> kv.substring(i + 1))))
    case other :: _ => throw new IllegalArgumentException(s"unknown argument $other")
  }

  private def positive(s: String, what: String, min: Int = 1): Int =
    s.toIntOption.filter(_ >= min).getOrElse(throw new IllegalArgumentException(s"$what wants a number"))

  /** A local session with Ember plugged in. */
  def session(master: String, conf: Seq[(String, String)]): SparkSession = {
    val b = SparkSession.builder().master(master).appName("ember-spark-sql")
      .config("spark.plugins", classOf[EmberPlugin].getName)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "8")
    conf.foreach { case (k, v) => b.config(k, v) }
    b.getOrCreate()
  }

  def run(o: Options, out: PrintStream): Int = {
    val spark = session(o.master, o.conf)
    try {
      spark.sparkContext.setLogLevel("WARN")
      o.warehouse.foreach(w => Warehouse.register(spark, new File(w)))
      val outcomes = o.sql.flatMap { case (name, text) =>
        splitStatements(text).zipWithIndex.map { case (stmt, i) =>
          val n = if (splitStatements(text).size > 1) s"$name.${i + 1}" else name
          statement(spark, n, stmt, o, out)
        }
      }
      o.report.foreach(f => Files.write(Paths.get(f), reportJson(outcomes).getBytes(StandardCharsets.UTF_8)))
      if (outcomes.exists(r => r.error.nonEmpty || r.equal.contains(false))) 1 else 0
    } finally spark.stop()
  }

  /** Statements separated by ';' at the end of a line (comments and quotes kept as they are). */
  def splitStatements(text: String): Seq[String] =
    text.split(";\\s*(\\n|$)").map(_.trim).filter(s => s.nonEmpty && !s.linesIterator.forall(
      l => l.trim.isEmpty || l.trim.startsWith("--"))).toSeq

  private def statement(spark: SparkSession, name: String, sql: String, o: Options,
                        out: PrintStream): Outcome = {
    final class Side(val ember: Boolean) {
      var last: (Seq[Row], SparkPlan, DataFrame) = _
      val times = scala.collection.mutable.ArrayBuffer.empty[Double]
      def run(i: Int): Unit = {
        spark.conf.set("spark.ember.sql.enabled", ember.toString)
        val t0 = System.nanoTime()
        val df = spark.sql(sql)
        val rows = df.collect().toSeq
        val ms = (System.nanoTime() - t0) / 1e6
        last = (rows, SparkShims.get.queryExecution(df).executedPlan, df)
        if (i >= o.warmup) times += ms
      }
      def median: Double = { val t = times.sorted; t(t.size / 2) }
    }
    try {
      // with --compare the two sides take turns, run by run, so that neither
      // gets a JVM the other has warmed up for this statement
      val emberSide = new Side(ember = true)
      val vanillaSide = if (o.compare) Some(new Side(ember = false)) else None
      (0 until o.warmup + o.repeat).foreach { i =>
        emberSide.run(i)
        vanillaSide.foreach(_.run(i))
      }
      val (rows, plan, df) = emberSide.last
      val emberMs = emberSide.median
      val stats = PlanStats.of(plan)
      if (sys.env.contains("EMBER_DEBUG")) {
        System.err.println(plan.toString)
        PlanStats.operatorLines(plan).foreach(System.err.println)
      }
      if (!o.quiet) print(df, rows, o.format, out)
      var equal: Option[Boolean] = None
      var vanillaMs: Option[Double] = None
      var error: Option[String] = None
      vanillaSide.foreach { v =>
        val (vrows, _, vdf) = v.last
        vanillaMs = Some(v.median)
        val ordered = SparkShims.get.queryExecution(vdf).optimizedPlan.isInstanceOf[LogicalSort] ||
          SparkShims.get.queryExecution(vdf).optimizedPlan.collectFirst { case s: LogicalSort if s.global => s }.nonEmpty
        val diff = ResultCompare.diff(rows, vrows, ordered)
        equal = Some(diff.isEmpty)
        diff.foreach(d => error = Some(s"answers differ: $d"))
      }
      spark.conf.set("spark.ember.sql.enabled", "true")
      val line = f"-- $name: ${rows.size} rows, Ember ${emberMs}%.0f ms" +
        vanillaMs.map(v => f", vanilla Spark $v%.0f ms (${v / emberMs}%.2fx)").getOrElse("") +
        f", ${stats.emberNodes}/${stats.sparkNodes} nodes in Ember" +
        equal.map(e => if (e) ", answers identical" else ", ANSWERS DIFFER").getOrElse("")
      System.err.println(line)
      error.foreach(e => System.err.println(s"-- $name: $e"))
      Outcome(name, equal, emberMs, vanillaMs, stats.emberNodes, stats.sparkNodes, rows.size, error,
        stats.emberNanos / 1e6, stats.opNanos.map { case (k, v) => k -> v / 1e6 })
    } catch {
      case NonFatal(e) =>
        spark.conf.set("spark.ember.sql.enabled", "true")
        val msg = Option(e.getMessage).getOrElse(e.toString).linesIterator.take(3).mkString(" ")
        if (sys.env.contains("EMBER_DEBUG")) e.printStackTrace()
        System.err.println(s"-- $name: ERROR $msg")
        Outcome(name, None, 0, None, 0, 0, 0, Some(msg))
    }
  }

  private def print(df: DataFrame, rows: Seq[Row], format: String, out: PrintStream): Unit = {
    val names = df.schema.fieldNames.toSeq
    def text(v: Any): String = v match {
      case null => "NULL"
      case b: Array[Byte] => b.map("%02x".format(_)).mkString
      case d: java.math.BigDecimal => d.toPlainString
      case other => other.toString
    }
    format match {
      case "csv" =>
        out.println(names.map(csv).mkString(","))
        rows.foreach(r => out.println(r.toSeq.map(v => if (v == null) "" else csv(text(v))).mkString(",")))
      case "json" =>
        val w = new PlanJson.Writer
        rows.foreach { r =>
          w.sb.setLength(0)
          w.sb.append('{')
          names.indices.foreach { i =>
            if (i > 0) w.sb.append(',')
            w.str(names(i)); w.sb.append(':')
            r.get(i) match {
              case null => w.sb.append("null")
              case n: java.lang.Number if !n.isInstanceOf[java.math.BigDecimal] => w.sb.append(n.toString)
              case b: java.lang.Boolean => w.sb.append(b.toString)
              case v => w.str(text(v))
            }
          }
          w.sb.append('}')
          out.println(w.sb.toString)
        }
      case _ =>
        val cells = rows.map(_.toSeq.map(text))
        val widths = names.indices.map(i => (names(i).length +: cells.map(_(i).length)).max)
        def line(vs: Seq[String]) = vs.zip(widths).map { case (v, w) => v.padTo(w, ' ') }.mkString(" | ")
        out.println(line(names))
        out.println(widths.map("-" * _).mkString("-+-"))
        cells.foreach(c => out.println(line(c)))
    }
  }

  private def csv(s: String): String =
    if (s.exists(c => c == ',' || c == '"' || c == '\n' || c == '\r')) "\"" + s.replace("\"", "\"\"") + "\""
    else s

  def reportJson(rs: Seq[Outcome]): String = {
    val w = new PlanJson.Writer
    w.sb.append("[\n")
    rs.zipWithIndex.foreach { case (r, i) =>
      if (i > 0) w.sb.append(",\n")
      w.sb.append("  {\"name\":"); w.str(r.name)
      w.sb.append(",\"equal\":").append(r.equal.map(_.toString).getOrElse("null"))
      w.sb.append(",\"ember_ms\":").append(f"${r.emberMs}%.1f")
      w.sb.append(",\"vanilla_ms\":").append(r.vanillaMs.map(v => f"$v%.1f").getOrElse("null"))
      w.sb.append(",\"ember_nodes\":").append(r.emberNodes)
      w.sb.append(",\"spark_nodes\":").append(r.sparkNodes)
      w.sb.append(",\"rows\":").append(r.rows)
      w.sb.append(",\"native_ms\":").append(f"${r.nativeMs}%.1f")
      w.sb.append(",\"native_ops_ms\":{")
      r.opMs.toSeq.sortBy(-_._2).zipWithIndex.foreach { case ((op, ms), k) =>
        if (k > 0) w.sb.append(',')
        w.str(op); w.sb.append(':').append(f"$ms%.1f")
      }
      w.sb.append('}')
      w.sb.append(",\"error\":")
      r.error match { case Some(e) => w.str(e); case None => w.sb.append("null") }
      w.sb.append('}')
    }
    w.sb.append("\n]\n")
    w.sb.toString
  }
}

/** Spark's answers compared value for value: in order where the query
 *  orders, as multisets otherwise. */
object ResultCompare {
  def diff(a: Seq[Row], b: Seq[Row], ordered: Boolean): Option[String] = {
    if (a.size != b.size) return Some(s"${a.size} rows vs ${b.size} rows")
    val (x, y) = if (ordered) (a, b) else (sortRows(a), sortRows(b))
    x.indices.find(i => !same(x(i), y(i))).map(i => s"row $i: ${x(i)} vs ${y(i)}")
  }

  private def key(r: Row): String = r.toSeq.map {
    case null => "\u0000"
    case b: Array[Byte] => b.mkString(",")
    case v => v.toString
  }.mkString("\u0001")

  private def sortRows(rs: Seq[Row]): Seq[Row] = rs.sortBy(key)

  def same(a: Row, b: Row): Boolean = a.length == b.length && (0 until a.length).forall { i =>
    (a.get(i), b.get(i)) match {
      case (null, null) => true
      case (x: Array[Byte], y: Array[Byte]) => java.util.Arrays.equals(x, y)
      case (x: Double, y: Double) => x == y || (x.isNaN && y.isNaN)
      case (x: Float, y: Float) => x == y || (x.isNaN && y.isNaN)
      case (x: java.math.BigDecimal, y: java.math.BigDecimal) => x.compareTo(y) == 0 && x.scale == y.scale
      case (x, y) => x == y
    }
  }
}
