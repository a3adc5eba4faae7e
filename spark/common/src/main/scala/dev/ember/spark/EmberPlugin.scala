// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.util.{Map => JMap}

import scala.jdk.CollectionConverters._

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.execution.ember.{SparkInternals, SparkShims}

/**
 * spark.plugins=dev.ember.spark.EmberPlugin. The driver part adds Ember's
 * session extensions to spark.sql.extensions (read when a session is built,
 * after the plugin starts) and loads the native library so a missing or
 * broken one fails at start-up; the executor part loads it in each executor.
 */
class EmberPlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new EmberDriverPlugin
  override def executorPlugin(): ExecutorPlugin = new EmberExecutorPlugin
}

object EmberPlugin {
  val ExtensionsClass = classOf[EmberExtensions].getName

  /** None when the jar carries shims for the running Spark's line (or the
   *  check is off), else why the plugin refuses to start. */
  def versionRefusal(running: String, checkEnabled: Boolean): Option[String] = {
    if (!checkEnabled || SparkShims.providerFor(running).nonEmpty) None
    else Some(s"Ember's plugin supports Spark ${SparkShims.supportedLines.map(_ + ".x").mkString(", ")}; " +
      s"this is Spark $running. Set spark.ember.spark.versionCheck=false to try anyway.")
  }
}

class EmberDriverPlugin extends DriverPlugin with Logging {
  override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
    EmberPlugin.versionRefusal(sc.version, sc.getConf.getBoolean("spark.ember.spark.versionCheck", true))
      .foreach(why => throw new IllegalStateException(why))
    val key = "spark.sql.extensions"
    val now = sc.getConf.getOption(key).map(_.split(",").map(_.trim).filter(_.nonEmpty).toSeq)
      .getOrElse(Nil)
    if (!now.contains(EmberPlugin.ExtensionsClass))
      SparkInternals.setConf(sc, key, (now :+ EmberPlugin.ExtensionsClass).mkString(","))
    val lib = Native.load(sc.getConf.getOption("spark.ember.native.libraryPath"))
    logInfo(s"Ember ${lib.version()} plugged into Spark ${sc.version}")
    Map.empty[String, String].asJava
  }
}

class EmberExecutorPlugin extends ExecutorPlugin with Logging {
  override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
    Native.load(ctx.conf.getOption("spark.ember.native.libraryPath"))
    TaskCancelWatcher.start()
  }
  override def shutdown(): Unit = {
    TaskCancelWatcher.stop()
    EmberBroadcasts.clear()
  }
}

/** Installed through spark.sql.extensions. */
class EmberExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    ext.injectColumnar(session => new EmberColumnarRule(session))
    ext.injectQueryStagePrepRule(session => new EmberStagePrepRule(session))
  }
}
