// SPDX-License-Identifier: Apache-2.0
package org.apache.spark.sql.embertest

import java.io.File

import org.apache.spark.SparkEnv
import org.apache.spark.shuffle.IndexShuffleBlockResolver

/** The shuffle files of this executor (the driver's, in local mode), as
 *  Spark's block manager keeps them. */
object ShuffleFiles {
  /** Data files (shuffle_<shuffle>_<map>_0.data) with their index files. */
  def dataFiles(): Seq[(File, File)] = {
    val resolver = SparkEnv.get.shuffleManager.shuffleBlockResolver.asInstanceOf[IndexShuffleBlockResolver]
    SparkEnv.get.blockManager.diskBlockManager.getAllFiles()
      .filter(f => f.getName.startsWith("shuffle_") && f.getName.endsWith(".data"))
      .map { d =>
        val parts = d.getName.stripSuffix(".data").split("_")
        d -> resolver.getIndexFile(parts(1).toInt, parts(2).toLong)
      }
  }
}

/** Waits until Spark's listeners have seen every event posted so far. */
object Listeners {
  def drain(sc: org.apache.spark.SparkContext): Unit = sc.listenerBus.waitUntilEmpty()
}
