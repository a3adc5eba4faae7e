// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.arrow.c.{ArrowArrayStream, ArrowSchema, Data}
import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.{OneToOneDependency, Partition, SparkContext, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.ember.{SparkInternals, SparkShims}
import org.apache.spark.sql.vectorized.ColumnarBatch

private case class EmberPartition(index: Int, parents: Seq[Partition], splitsJson: String)
  extends Partition

/**
 * The tasks of an Ember node. Task p: the fragment (parsed once per task
 * in C), the splits of its scans for partition p, partition p of each
 * stream input and every broadcast whole, each input exported to C as an
 * Arrow C stream C pulls from (on this thread), and the output imported as
 * ColumnarBatches. A native error arrives as an EmberException thrown from
 * the pull, failing the Spark task with Ember's message. Everything native
 * is released when the task completes, whether it succeeded, failed or was
 * killed (TaskCancelWatcher cancels a killed task's native side).
 */
class EmberRDD(
    sc: SparkContext,
    spec: String,
    numParts: Int,
    inputs: Seq[EmberInput],
    splitsJson: Array[String],
    timeZone: String,
    batchRows: Int,
    metrics: EmberMetrics,
    offHeap: Boolean,
    mapSide: Boolean,
    broadcastCache: Long)
  extends RDD[Any](sc, EmberRDD.dependencies(inputs)) {

  private val streamRdds: Seq[RDD[Any]] = inputs.collect { case s: StreamInput => s.rdd }

  override protected def getPartitions: Array[Partition] =
    Array.tabulate(numParts)(i => EmberPartition(i, streamRdds.map(_.partitions(i)), splitsJson(i)))

  override def compute(split: Partition, ctx: TaskContext): Iterator[Any] = {
    val part = split.asInstanceOf[EmberPartition]
    val lib = Native.lib
    val alloc: BufferAllocator =
      SparkInternals.arrowAllocator.newChildAllocator(s"ember task ${ctx.taskAttemptId()}", 0, Long.MaxValue)
    val run = new EmberTaskRun(lib, alloc)
    run.broadcastCache = broadcastCache
    try start(run, lib, part, ctx)
    catch {
      case t: Throwable =>
        run.close(metrics)
        throw t
    }
  }

  private def start(run: EmberTaskRun, lib: Native, part: EmberPartition,
                    ctx: TaskContext): Iterator[Any] = {
    val alloc = run.alloc
    run.fragment = lib.fragmentCreate(spec)
    var streamNo = 0
    val failed = (t: Throwable) => if (run.inputFailure == null) run.inputFailure = t
    val streams = Array.fill(inputs.size)(0L)
    val relations = Array.fill(inputs.size)(0L)
    inputs.zipWithIndex.foreach { case (in, i) =>
      val reader = in match {
        case StreamInput(rdd, schema, _) if rdd.isInstanceOf[EmberBlockBatches] =>
          // Ember's own shuffle: its blocks straight to C
          val it = rdd.asInstanceOf[EmberBlockBatches].blocks.iterator(part.parents(streamNo), ctx)
          streamNo += 1
          val source = new EmberBlockSource(it, ctx, failed, n => run.inputRows += n)
          val stream = ArrowArrayStream.allocateNew(alloc)
          run.inputStreams += stream
          val arrowSchema = ArrowSchema.allocateNew(alloc)
          try {
            Data.exportSchema(alloc, SparkShims.get.toArrowSchema(schema, timeZone), null, arrowSchema)
            lib.blockStream(source, arrowSchema.memoryAddress(), stream.memoryAddress())
          } finally arrowSchema.close()
          streams(i) = stream.memoryAddress()
          null
        case s: StreamInput if s.columnar =>
          val it = s.rdd.iterator(part.parents(streamNo), ctx).asInstanceOf[Iterator[ColumnarBatch]]
          streamNo += 1
          new BatchesArrowReader(alloc, s.schema, timeZone, it, ctx, failed,
            n => run.inputRows += n)
        case s: StreamInput =>
          val it = s.rdd.iterator(part.parents(streamNo), ctx).asInstanceOf[Iterator[InternalRow]]
          streamNo += 1
          new RowsArrowReader(alloc, s.schema, timeZone, it.map { r => run.inputRows += 1; r },
            batchRows, ctx, failed)
        case b: BroadcastInput =>
          relations(i) = EmberBroadcasts.acquire(b.value, b.schema, timeZone, batchRows, broadcastCache)
          run.broadcasts += b.value.id
          null
      }
      if (reader != null) {
        val stream = ArrowArrayStream.allocateNew(alloc)
        run.inputStreams += stream
        run.readers += reader
        Data.exportArrayStream(alloc, reader, stream)
        streams(i) = stream.memoryAddress()
      }
    }
    // registered after the inputs' iterators (Spark runs completion listeners
    // last registered first): the native task, which may hold an input's
    // Arrow buffers, is released before the inputs close their allocators
    ctx.addTaskCompletionListener[Unit](_ => run.close(metrics))
    val out = if (mapSide) null else ArrowArrayStream.allocateNew(alloc)
    run.output = out
    if (offHeap) run.memory = new EmberMemoryConsumer(SparkInternals.taskMemoryManager(ctx))
    val t0 = System.nanoTime()
    run.task = lib.taskCreate(run.fragment, part.index, numParts, part.splitsJson,
      streams, relations, if (out == null) 0L else out.memoryAddress(), localDir, -1L, run.memory,
      EmberMemory.GrantChunk)
    if (run.memory != null) run.memory.task = run.task
    run.elapsed += System.nanoTime() - t0
    TaskCancelWatcher.register(run, ctx)
    if (mapSide) return mapBlocks(lib, run)
    val reader = Data.importArrayStream(alloc, out)
    run.outReader = reader
    val batches = new ArrowBatchIterator(reader, () => run.finish(metrics))
    new Iterator[ColumnarBatch] {
      override def hasNext: Boolean = {
        val t = System.nanoTime()
        try batches.hasNext
        catch { case e: java.io.IOException => throw run.failure(e) }
        finally run.elapsed += System.nanoTime() - t
      }
      override def next(): ColumnarBatch = {
        val b = batches.next()
        metrics.add("numOutputRows", b.numRows())
        metrics.add("numOutputBatches", 1)
        b
      }
    }
  }

  private def mapBlocks(lib: Native, run: EmberTaskRun): Iterator[Any] =
    new EmberMapOutput(lib, run, metrics)

  private def localDir: String =
    Option(System.getenv("SPARK_LOCAL_DIRS")).flatMap(_.split(",").headOption)
      .getOrElse(SparkShims.get.localDir(org.apache.spark.SparkEnv.get.conf))
}

object EmberRDD {
  def dependencies(inputs: Seq[EmberInput]): Seq[org.apache.spark.Dependency[_]] =
    inputs.collect { case s: StreamInput => new OneToOneDependency(s.rdd) }
}

/**
 * A map task's output: (reduce partition, block) records parsed from the
 * packed arrays C returns ([int32 partition][int32 rows][int32 length]
 * [block]...), or the whole output written by C into a shuffle data file
 * (writeFile), whichever the caller asks for first.
 */
final class EmberMapOutput(lib: Native, run: EmberTaskRun, metrics: EmberMetrics)
  extends Iterator[Any] {
  private var buf: Array[Byte] = _
  private var at = 0
  private var done = false
  private val order = java.nio.ByteOrder.nativeOrder()

  override def hasNext: Boolean = {
    while (!done && (buf == null || at >= buf.length)) {
      val t = System.nanoTime()
      buf = try lib.taskMapNext(run.task)
            catch { case e: EmberException => throw run.mapFailure(e) }
            finally run.elapsed += System.nanoTime() - t
      at = 0
      if (buf == null) {
        done = true
        run.finish(metrics)
      }
    }
    !done
  }

  override def next(): Any = {
    if (!hasNext) throw new NoSuchElementException("end of Ember's map output")
    val bb = java.nio.ByteBuffer.wrap(buf, at, 12).order(order)
    val p = bb.getInt()
    val rows = bb.getInt()
    val len = bb.getInt()
    val block = EmberBlock(buf, at + 12, len, rows)
    at += 12 + len
    metrics.add("numOutputBatches", 1)
    metrics.add("numOutputRows", rows)
    (p, block)
  }

  /** The whole output into a new file at path (removed again on failure):
   *  each reduce partition's bytes, the rows written and their size as
   *  Spark's UnsafeRows (the data size AQE plans by). */
  def writeFile(path: String): (Array[Long], Long, Long) = {
    if (buf != null || done) throw new IllegalStateException("Ember's map output is being read")
    val t = System.nanoTime()
    val r = try lib.taskMapWrite(run.task, path)
            catch { case e: EmberException => throw run.mapFailure(e) }
            finally run.elapsed += System.nanoTime() - t
    done = true
    run.finish(metrics)
    val rows = r(r.length - 2)
    metrics.add("numOutputRows", rows)
    (java.util.Arrays.copyOf(r, r.length - 2), rows, r(r.length - 1))
  }
}

/** The native state of one task, closed exactly once. */
final class EmberTaskRun(lib: Native, val alloc: BufferAllocator) extends Logging {
  var fragment = 0L
  @volatile var task = 0L
  var memory: EmberMemoryConsumer = _
  var output: ArrowArrayStream = _
  var outReader: org.apache.arrow.vector.ipc.ArrowReader = _
  val inputStreams = scala.collection.mutable.ArrayBuffer.empty[ArrowArrayStream]
  val readers = scala.collection.mutable.ArrayBuffer.empty[org.apache.arrow.vector.ipc.ArrowReader]
  val broadcasts = scala.collection.mutable.ArrayBuffer.empty[Long] // held relations' ids
  var broadcastCache = 0L
  var inputRows = 0L
  @volatile var inputFailure: Throwable = _
  var elapsed = 0L
  private var reported = false
  private var closed = false

  /** A map task's failure: Spark's own (from an input) as it is. */
  def mapFailure(e: EmberException): Throwable = if (inputFailure != null) inputFailure else asSpark(e)

  /** Spark's own exception (its class, error class and message parameters)
   *  when C knows the error as one Spark raises (em_spark_error), else e. */
  def asSpark(e: Throwable): Throwable = {
    val form = try lib.sparkError(String.valueOf(e.getMessage)) catch { case _: Exception => null }
    if (form == null) return e
    val j = new ObjectMapper().readTree(form)
    val params = j.get("messageParameters").fields().asScala.map(f => f.getKey -> f.getValue.asText()).toMap
    j.get("exception").asText() match {
      case "org.apache.spark.SparkArithmeticException" =>
        val s = SparkShims.get.arithmeticException(j.get("errorClass").asText(), params)
        s.initCause(e) // Ember's message, with where the error arose
        s
      case _ => e
    }
  }

  /** The error an output pull met: Ember's message when it came from C. */
  def failure(e: java.io.IOException): Throwable = {
    if (inputFailure != null) return inputFailure
    val root = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).toSeq.last
    root match {
      case k: org.apache.spark.TaskKilledException => k
      case _ => asSpark(new EmberException(s"Ember task failed: ${e.getMessage}", e))
    }
  }

  /** At the end of the output: the task's metrics into the node's. */
  def finish(metrics: EmberMetrics): Unit = synchronized {
    if (reported || task == 0L) return
    reported = true
    try {
      val m = new ObjectMapper().readTree(lib.taskMetrics(task))
      metrics.add("peakMemory", m.get("peakNative").asLong() + m.get("peakRow").asLong())
      metrics.add("grantedMemory", m.get("granted").asLong())
      m.get("ops").elements().asScala.foreach { op =>
        val src = op.get("source").asInt()
        metrics.add(s"rows.$src", op.get("rows").asLong())
        metrics.add(s"time.$src", op.get("selfNs").asLong())
        metrics.add("spillSize", op.get("spillBytes").asLong())
      }
      metrics.add("emberTime", elapsed)
      metrics.add("numInputRows", inputRows)
    } catch {
      case e: Exception => logWarning(s"Ember: task metrics not read: ${e.getMessage}")
    }
  }

  def close(metrics: EmberMetrics): Unit = {
    TaskCancelWatcher.unregister(this)
    synchronized {
      if (closed) return
      closed = true
      def quietly(f: => Unit): Unit = try f catch { case e: Exception => logWarning(s"Ember: ${e.getMessage}") }
      if (!reported && task != 0L) quietly(finish(metrics))
      quietly(if (outReader != null) outReader.close())
      quietly(if (output != null) output.close())
      if (memory != null) memory.task = 0L
      if (task != 0L) { val t = task; task = 0L; lib.taskDestroy(t) }
      broadcasts.foreach(id => quietly(EmberBroadcasts.release(id, broadcastCache)))
      if (memory != null) quietly(memory.releaseAll())
      if (fragment != 0L) { lib.fragmentDestroy(fragment); fragment = 0L }
      inputStreams.foreach(s => quietly(s.close()))
      readers.foreach(r => quietly(r.close()))
      quietly(alloc.close())
    }
  }

  /** From the watcher thread: stop the native side of a killed task. */
  def cancel(): Unit = synchronized {
    if (!closed && task != 0L) lib.taskCancel(task)
  }
}

/** Polls running Ember tasks for Spark's kill flag and cancels their native
 *  side, which polls its own flag between batches: a task reading only
 *  files never calls back into the JVM where Spark could interrupt it. */
object TaskCancelWatcher {
  private val running = new ConcurrentHashMap[EmberTaskRun, TaskContext]()
  @volatile private var thread: Thread = _

  def register(run: EmberTaskRun, ctx: TaskContext): Unit = {
    running.put(run, ctx)
    start()
  }
  def unregister(run: EmberTaskRun): Unit = running.remove(run)

  def start(): Unit = if (thread == null) synchronized {
    if (thread == null) {
      val t = new Thread("ember-cancel-watcher") {
        override def run(): Unit = while (!isInterrupted) {
          running.forEach((r, c) => if (c.isInterrupted()) r.cancel())
          try Thread.sleep(50) catch { case _: InterruptedException => return }
        }
      }
      t.setDaemon(true)
      t.start()
      thread = t
    }
  }

  def stop(): Unit = synchronized {
    if (thread != null) { thread.interrupt(); thread = null }
  }
}
