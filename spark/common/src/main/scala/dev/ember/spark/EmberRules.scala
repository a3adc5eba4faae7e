// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, UnspecifiedDistribution}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, ColumnarToRowExec, ExecSubqueryExpression, FileSourceScanExec, InSubqueryExec, ReusedSubqueryExec, RowToColumnarExec, SparkPlan, SubqueryBroadcastExec}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, BroadcastQueryStageExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.ember.{EmberBroadcastExchange, EmberBroadcastToSparkExec, EmberColumnarToRowExec, EmberShuffleExchange, EmberSubqueryBroadcastExec, SparkShims}
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeExec, ReusedExchangeExec, ShuffleExchangeExec}
import org.apache.spark.sql.internal.SQLConf

/** The decisions C made for one plan (em_spark_plan's answer). */
case class EmberDecisions(
    nodes: Map[Int, JsonNode],   // by source index
    fragments: Seq[(Int, Seq[Int])],
    report: String,
    tree: String)

/**
 * Ember's overrides inside Spark. The decisions are made in C, once, by the
 * same rules `ember explain` applies (include/ember/spark.h); this only
 * writes the plan for C, replaces each fragment C names by an EmberExec,
 * and logs C's report.
 */
object EmberOverrides extends Logging {
  private val mapper = new ObjectMapper()

  /** C's decisions for a plan, or None when Ember is off for the session.
   *  A bad Ember setting is the user's error: it fails the query. Any other
   *  failure to plan leaves the plan to Spark, with a warning. */
  def decide(plan: SparkPlan, conf: SQLConf,
             extra: Map[String, String] => Map[String, String] = identity)
      : Option[(EmberDecisions, IndexedSeq[SparkPlan], String)] = {
    if (!EmberConf.enabled(conf)) return None
    val t0 = System.nanoTime()
    val (json, nodes) =
      try PlanJson.write(plan)
      catch {
        case scala.util.control.NonFatal(e) =>
          logWarning(s"Ember could not write this plan, Spark runs all of it: $e")
          return None
      }
    val settings = extra(EmberConf.collect(conf))
    val confJson = EmberConf.toJson(settings)
    val t1 = System.nanoTime()
    val answer =
      try Native.lib.plan(json, confJson)
      catch {
        case e: EmberException if e.getMessage.startsWith("EM_ERR_INVALID") =>
          throw new IllegalArgumentException(s"Ember: ${e.getMessage.stripPrefix("EM_ERR_INVALID: ")}", e)
        // spark-rapids' test mode: a fallback the settings do not allow fails the query
        case e: EmberException if e.getMessage.contains("spark.ember.sql.test.enabled") =>
          throw new IllegalStateException(s"Ember: ${e.getMessage.stripPrefix("EM_ERR_UNSUPPORTED: ")}", e)
        case e: EmberException =>
          logWarning(s"Ember could not plan this query, Spark runs all of it: ${e.getMessage}")
          return None
      }
    if (sys.env.contains("EMBER_DEBUG"))
      System.err.println(f"ember plan: json ${(t1 - t0) / 1e6}%.1f ms (${json.length} chars), C ${(System.nanoTime() - t1) / 1e6}%.1f ms")
    val doc = mapper.readTree(answer)
    val byNode = doc.get("nodes").elements().asScala.map(n => n.get("source").asInt() -> n).toMap
    val frags = doc.get("fragments").elements().asScala.map { f =>
      f.get("root").asInt() -> f.get("inputs").elements().asScala.map(_.asInt()).toSeq
    }.toSeq
    Some((EmberDecisions(byNode, frags, doc.get("report").asText(""), doc.get("tree").asText("")),
      nodes, confJson))
  }

  def logReport(d: EmberDecisions): Unit =
    if (d.report.nonEmpty) logWarning(s"Ember overrides:\n${d.report}")

  /** Replaces every fragment by an EmberExec. */
  def apply(plan: SparkPlan, conf: SQLConf, report: Boolean): SparkPlan = {
    if (plan.exists(_.isInstanceOf[EmberExec])) return plan // already applied
    val base = EmberLore.idBase()
    val decided = decide(plan, conf,
      s => EmberLore.settings(conf, s) + ("spark.ember.sql.lore.idBase" -> base.toString))
    if (decided.isEmpty) return plan
    val (d, nodes, confJson) = decided.get
    EmberLore.taken((base +: d.nodes.values.map(_.get("loreId").asInt() + 1).toSeq).max)
    if (report) logReport(d)
    if (d.fragments.isEmpty) return plan
    val batchRows = EmberConf.batchRows(EmberConf.collect(conf))
    val replacements: Map[SparkPlan, SparkPlan] = d.fragments.map { case (root, inputs) =>
      val rootNode = nodes(root)
      val ember = fragmentNode(rootNode, inputs.map(nodes), nodes, d, confJson, batchRows)
      rootNode -> (rootNode match {
        // an exchange's fragment is its map side, under Ember's shuffle
        case x: ShuffleExchangeExec =>
          SparkShims.get.shuffleExchange(x.outputPartitioning, ember, x.shuffleOrigin,
            SparkShims.get.advisoryPartitionSize(x))
        case b: BroadcastExchangeExec => SparkShims.get.broadcastExchange(b.mode, ember)
        case _ => ember
      })
    }.toMap
    // top-down and by identity: a fragment below another one sits in that one's inputs,
    // which are the original nodes, reached after the outer replacement
    plan.transformDown {
      case p if replacements.exists(_._1 eq p) => replacements.find(_._1 eq p).get._2
    }
  }

  private def fragmentNode(root: SparkPlan, inputs: Seq[SparkPlan], all: IndexedSeq[SparkPlan],
                           d: EmberDecisions, confJson: String, batchRows: Int): EmberExec = {
    val (json, fnodes) = PlanJson.write(root, inputs)
    val isInput = (p: SparkPlan) => inputs.exists(_ eq p)
    val inner = fnodes.indices.filterNot(i => isInput(fnodes(i)))
    val infos = inner.map { i =>
      val whole = all.indexWhere(_ eq fnodes(i))
      val dn = d.nodes.get(whole)
      EmberNodeInfo(i, dn.map(_.get("id").asInt()).getOrElse(-1), fnodes(i).nodeName,
        dn.map(_.get("loreId").asInt()).getOrElse(-1))
    }
    // the fragment's own nodes, not those of the subquery plans PlanJson writes
    // too: a subquery's scans and its own subqueries are its plan's to run
    // (an adaptive subquery's initial plan even holds unplanned pruning subqueries)
    def tree(p: SparkPlan): Seq[SparkPlan] = if (isInput(p)) Nil else p +: p.children.flatMap(tree)
    val fragment = tree(root)
    val own = inner.filter(i => fragment.exists(_ eq fnodes(i)))
    val scans = own.collect { case i if fnodes(i).isInstanceOf[FileSourceScanExec] =>
      i -> fnodes(i).asInstanceOf[FileSourceScanExec]
    }.toMap
    val subqueries = own.flatMap(i => fnodes(i).expressions.flatMap(_.collect {
      case e: ExecSubqueryExpression => e
    }))
    EmberExec(withLoreIds(json, infos), confJson, infos, root.output, inputs, subqueries)(
      root, scans, batchRows, inputs.map(requirementOf(root, _)))
  }

  /** What the replaced subtree required of an input's partitioning: the
   *  nearest requirement above it that it met (a sort-merge join's clustering
   *  through the sorts between them, a final aggregate's). A fused node
   *  hides these from Spark, whose AQE would otherwise read such an input
   *  locally after turning a join below into a broadcast one, and so pair
   *  partitions that do not hold the same keys. */
  private def requirementOf(root: SparkPlan, input: SparkPlan): Distribution = {
    def path(p: SparkPlan): Option[List[(SparkPlan, Int)]] =
      if (p eq input) Some(Nil)
      else p.children.indices.iterator.map(j => path(p.children(j)).map((p, j) :: _))
        .collectFirst { case Some(rest) => rest }
    path(root).getOrElse(Nil).reverseIterator.map { case (p, j) =>
      p.requiredChildDistribution.lift(j).getOrElse(UnspecifiedDistribution)
    }.find(d => d != UnspecifiedDistribution && input.outputPartitioning.satisfies(d))
      .getOrElse(UnspecifiedDistribution)
  }

  /** The fragment JSON with the LORE ids the whole plan's decisions gave. */
  private def withLoreIds(json: String, infos: Seq[EmberNodeInfo]): String = {
    val ids = infos.filter(_.loreId >= 0).map(n => s""""${n.source}":${n.loreId}""")
    json.substring(0, json.length - 1) + ",\"loreIds\":{" + ids.mkString(",") + "}}"
  }
}

/** The columnar rule pair: fragments replaced before Spark inserts its
 *  transitions; after, a row child of an Ember node loses the
 *  RowToColumnarExec Spark put above it (Ember converts rows to Arrow
 *  itself) and a broadcast child is read as a broadcast. */
class EmberColumnarRule(session: SparkSession) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      EmberOverrides.apply(readsEmberBroadcastKeys(plan, conf), conf, report = !conf.adaptiveExecutionEnabled)
  }

  /** Dynamic partition pruning reads a join's broadcast, which may be Ember's:
   *  its subqueries become ones that read either kind. */
  private def readsEmberBroadcastKeys(plan: SparkPlan, conf: SQLConf): SparkPlan =
    if (!EmberConf.enabled(conf)) plan
    else {
      // AQE reuses a subquery by wrapping the same instance: one replacement each
      val replaced = new java.util.IdentityHashMap[SubqueryBroadcastExec, EmberSubqueryBroadcastExec]()
      def ember(s: SubqueryBroadcastExec): EmberSubqueryBroadcastExec =
        replaced.computeIfAbsent(s, _ => EmberSubqueryBroadcastExec(s.name, SparkShims.get.subqueryKeyIndices(s), s.buildKeys,
          sameBroadcast(s.child, conf)))
      plan.transformAllExpressions {
        case in: InSubqueryExec => in.plan match {
          case s: SubqueryBroadcastExec => in.withNewPlan(ember(s))
          case r @ ReusedSubqueryExec(s: SubqueryBroadcastExec) => in.withNewPlan(r.copy(child = ember(s)))
          case _ => in
        }
      }
    }
  /** Without AQE, Spark prepares a pruning subquery's build side on its own
   *  and puts the broadcast exchange over it afterwards, so Ember's nodes
   *  stop below that exchange, while the join's copy of the same broadcast
   *  is Ember's: the two no longer match and Spark computes the broadcast
   *  twice. The subquery's exchange is planned as the join's was. */
  private def sameBroadcast(child: SparkPlan, conf: SQLConf): SparkPlan = child match {
    case b: BroadcastExchangeExec if !conf.adaptiveExecutionEnabled =>
      // through the transition (and the code generation around it) Spark put there
      def below(p: SparkPlan): SparkPlan = p match {
        case w: org.apache.spark.sql.execution.WholeStageCodegenExec => below(w.child)
        case c: ColumnarToRowExec => below(c.child)
        case i: org.apache.spark.sql.execution.InputAdapter => below(i.child)
        case other => other
      }
      below(b.child) match {
        case e: EmberExec if e.original != null =>
          EmberOverrides.apply(b.withNewChildren(Seq(e.original)), conf, report = false) match {
            case x: EmberBroadcastExchange => x
            case _ => b
          }
        case _ => b
      }
    case other => other
  }

  override def postColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
      case e: EmberExec if e.children.exists(_.isInstanceOf[RowToColumnarExec]) =>
        e.withNewChildren(e.children.map {
          case r: RowToColumnarExec => r.child
          case c => c
        })
      // Ember's shuffle takes its map side's batches as they are
      case x: EmberShuffleExchange if x.child.isInstanceOf[ColumnarToRowExec] &&
                                      x.child.children.head.isInstanceOf[EmberExec] =>
        x.withMapSide(x.child.children.head)
      case b: EmberBroadcastExchange if b.child.isInstanceOf[ColumnarToRowExec] &&
                                        b.child.children.head.isInstanceOf[EmberExec] =>
        b.withMapSide(b.child.children.head)
      case c: ColumnarToRowExec if readsEmberShuffle(c.child) => EmberColumnarToRowExec(c.child)
      // a reader of an Ember broadcast that is not Ember's own wants a HashedRelation; the
      // RowToColumnarExec Spark put over a broadcast child of an Ember node is no reader (it
      // goes, above), and wrapping there would make the driver build a HashedRelation the
      // Ember node then reads instead of its own blocks
      case p if !p.isInstanceOf[EmberExec] && !p.isInstanceOf[EmberBroadcastToSparkExec] &&
                !p.isInstanceOf[RowToColumnarExec] && p.children.exists(emberBroadcast(_).isDefined) =>
        p.withNewChildren(p.children.map { c =>
          emberBroadcast(c).map(mode => EmberBroadcastToSparkExec(mode, c)).getOrElse(c)
        })
    }
  }

  /** The mode of an Ember broadcast (through AQE's stage or reuse), if c is one. */
  private def emberBroadcast(c: SparkPlan): Option[org.apache.spark.sql.catalyst.plans.physical.BroadcastMode] =
    c match {
      case b: EmberBroadcastExchange => Some(b.mode)
      case s: BroadcastQueryStageExec => emberBroadcast(s.plan)
      case r: ReusedExchangeExec => emberBroadcast(r.child)
      case _ => None
    }

  /** A read of Ember's shuffle through AQE's stage (and its reads). */
  private def readsEmberShuffle(p: SparkPlan): Boolean = p match {
    case _: EmberShuffleExchange => true
    case s: ShuffleQueryStageExec => readsEmberShuffle(s.plan)
    case r: AQEShuffleReadExec => readsEmberShuffle(r.child)
    case r: ReusedExchangeExec => readsEmberShuffle(r.child)
    case _ => false
  }
}

/** Runs on the whole plan before AQE cuts it into stages (where the
 *  columnar rule then sees one stage at a time): validates the settings and
 *  logs the report for the whole query once. */
class EmberStagePrepRule(session: SparkSession) extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    if (EmberConf.enabled(conf) && explainWanted(conf))
      EmberOverrides.decide(plan, conf).foreach { case (d, _, _) => EmberOverrides.logReport(d) }
    plan
  }

  private def explainWanted(c: SQLConf): Boolean =
    !c.getConfString("spark.ember.sql.explain",
      c.getConfString("spark.rapids.sql.explain", "NONE")).trim.equalsIgnoreCase("NONE")
}
