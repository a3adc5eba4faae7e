// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.embertest

import org.apache.spark.{ErrorMessageFormat, SparkThrowable, SparkThrowableHelper}
import org.apache.spark.sql.{Column, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Cast
import org.apache.spark.sql.expressions.SparkUserDefinedFunction
import org.apache.spark.sql.types.StringType

/** The few Spark-private pieces SqlGolden needs, reached from Spark's package. */
object SqlGoldenInternals {
  /** A Spark error as the golden files print it (ErrorMessageFormat.MINIMAL: the JSON). */
  def errorMessage(e: Throwable with SparkThrowable): String =
    SparkThrowableHelper.getMessage(e, ErrorMessageFormat.MINIMAL)

  /** The Scala UDF Spark's udf/ tests run with: udf(x) is x cast to a string, through a
   *  Scala function that returns it as it is, cast back to x's type. */
  private class IdentityThroughString(name: String) extends SparkUserDefinedFunction(
      (input: Any) => if (input == null) null else input.toString,
      StringType, inputEncoders = Seq(None), name = Some(name)) {
    override def apply(exprs: Column*): Column = {
      require(exprs.length == 1, s"$name takes one argument")
      val e = exprs.head.expr
      Column(Cast(createScalaUDF(Cast(e, StringType) :: Nil), e.dataType))
    }
    override def withName(n: String): SparkUserDefinedFunction = new IdentityThroughString(n)
  }

  /** The Arrow field Spark reads a column of this type from. */
  def arrowField(name: String, dt: org.apache.spark.sql.types.DataType, tz: String): org.apache.arrow.vector.types.pojo.Field =
    org.apache.spark.sql.util.ArrowUtils.toArrowField(name, dt, nullable = true, tz, largeVarTypes = false)

  def registerScalaUdf(session: SparkSession, name: String): Unit =
    session.udf.register(name, new IdentityThroughString(name))
}
