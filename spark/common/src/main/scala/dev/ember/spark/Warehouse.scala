// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File

import org.apache.spark.sql.SparkSession

/**
 * Registers a warehouse folder's tables in a session: every sub-folder of
 * DIR holding Parquet files (directly or under Hive-style key=value
 * partition folders) becomes a table of its name, read by Spark's own
 * Parquet source, which discovers the partition columns.
 */
object Warehouse {
  def tables(dir: File): Seq[File] = {
    val kids = Option(dir.listFiles()).getOrElse(Array.empty[File])
    kids.filter(f => f.isDirectory && !hidden(f.getName) && holdsParquet(f)).sortBy(_.getName).toSeq
  }

  def register(spark: SparkSession, dir: File): Seq[String] = {
    if (!dir.isDirectory)
      throw new IllegalArgumentException(s"warehouse folder $dir does not exist")
    tables(dir).map { t =>
      spark.read.parquet(t.getAbsolutePath).createOrReplaceTempView(t.getName)
      t.getName
    }
  }

  private def hidden(name: String) = name.startsWith(".") || name.startsWith("_")

  private def holdsParquet(d: File): Boolean =
    Option(d.listFiles()).getOrElse(Array.empty[File]).exists { f =>
      if (f.isDirectory) !hidden(f.getName) && f.getName.contains('=') && holdsParquet(f)
      else !hidden(f.getName) && f.length() > 0
    }
}
