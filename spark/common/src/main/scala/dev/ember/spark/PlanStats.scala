// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import org.apache.spark.sql.execution.{ColumnarToRowExec, InputAdapter, ReusedSubqueryExec, RowToColumnarExec, SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, AdaptiveSparkPlanExec, QueryStageExec}
import org.apache.spark.sql.execution.ember.{EmberBroadcastExchange, EmberBroadcastToSparkExec, EmberColumnarToRowExec, EmberShuffleExchange}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

/** How much of an executed plan Ember runs: its operators (Spark's
 *  wrappers, transitions and AQE's stage nodes not counted), and of them
 *  those inside Ember nodes; subquery plans included. */
object PlanStats {
  /** emberNanos: the time Ember's tasks spent in C (summed over tasks);
   *  opNanos: of it, each operator's own time (its children's not
   *  included), summed by operator name. */
  final case class Stats(emberNodes: Int, sparkNodes: Int, emberNanos: Long = 0L,
                         opNanos: Map[String, Long] = Map.empty) {
    def +(o: Stats): Stats =
      Stats(emberNodes + o.emberNodes, sparkNodes + o.sparkNodes, emberNanos + o.emberNanos,
        (opNanos.keySet ++ o.opNanos.keySet).map(k => k -> (opNanos.getOrElse(k, 0L) + o.opNanos.getOrElse(k, 0L))).toMap)
  }

  private def opTimes(e: EmberExec): Map[String, Long] =
    e.nodes.groupBy(_.name.trim).map { case (name, ns) =>
      name -> ns.map(n => e.metrics.get(s"time.${n.source}").map(_.value).getOrElse(0L)).sum
    }

  /** The plans a walk goes on into: AQE's current plan and its stages' plans,
   *  an Ember node's inputs and the subqueries its expressions read, any
   *  other node's children and subqueries. */
  private def inside(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case a: AdaptiveSparkPlanExec => Seq(a.executedPlan)
    case s: QueryStageExec => Seq(s.plan)
    case e: EmberExec => e.children ++ e.subqueryExprs.map(_.plan)
    case p => p.children ++ p.subqueries
  }

  /** Each Ember node of the plan with its operators' rows and own times,
   *  one line per operator (for EMBER_DEBUG). */
  def operatorLines(plan: SparkPlan): Seq[String] = {
    val here = plan match {
      case e: EmberExec =>
        e.nodes.map { n =>
          def v(k: String) = e.metrics.get(s"$k.${n.source}").map(_.value).getOrElse(0L)
          f"${n.name.trim}%-28s (${n.id}) rows ${v("rows")}%10d  own ${v("time") / 1e6}%9.1f ms"
        }
      case _ => Nil
    }
    here ++ inside(plan).flatMap(operatorLines)
  }

  /** Exchanges and subqueries the plan reuses, AQE's reused stages
   *  included. Ember's nodes must let Spark find every reuse it finds in its
   *  own plan, or a query computes a shared subtree twice. */
  def reuses(plan: SparkPlan): Int = {
    val own = plan match {
      case _: ReusedExchangeExec | _: ReusedSubqueryExec => 1
      case _ => 0
    }
    own + inside(plan).map(reuses).sum
  }

  def of(plan: SparkPlan): Stats = {
    val own: Stats = plan match {
      case e: EmberExec => Stats(e.nodes.size, e.nodes.size, e.metrics("emberTime").value, opTimes(e))
      case _: AdaptiveSparkPlanExec | _: QueryStageExec | _: AQEShuffleReadExec |
           _: WholeStageCodegenExec | _: InputAdapter | _: ColumnarToRowExec |
           _: RowToColumnarExec | _: ReusedExchangeExec => Stats(0, 0)
      // Ember's exchanges are counted in their map side's Ember node; the
      // transitions out of them are not operators
      case _: EmberShuffleExchange | _: EmberBroadcastExchange | _: EmberColumnarToRowExec |
           _: EmberBroadcastToSparkExec => Stats(0, 0)
      case _ => Stats(0, 1)
    }
    inside(plan).map(of).foldLeft(own)(_ + _)
  }
}
