// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.ember

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.DataSourceStrategy
import org.apache.spark.sql.sources.Filter

/** The few members Spark keeps package-private to `org.apache.spark.sql`
 *  that Ember's plugin needs; everything else of Ember lives in dev.ember. */
object SparkInternals {
  /** A scan's data filters as the data source filters Spark pushes to Parquet. */
  def pushedFilters(dataFilters: Seq[Expression]): Seq[Filter] =
    dataFilters.flatMap(DataSourceStrategy.translateFilter(_, supportNestedPredicatePushdown = true))
}
