// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import scala.collection.mutable

import org.apache.arrow.c.{ArrowArrayStream, Data}
import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.execution.ember.{EmberBroadcastRelation, SparkInternals}
import org.apache.spark.sql.types.StructType

/**
 * Broadcast relations held in C once per executor (em_relation), shared by
 * every Ember task that reads the same broadcast: its rows cross into Arrow
 * once, and a hash join's table is built once over it (by the first task
 * asking, in C) instead of once per task. An entry is kept while tasks use
 * it and afterwards until the held relations pass the cache's size
 * (spark.ember.spark.broadcastCache, default 1 GiB); the least recently used
 * unused ones go first. Buffers come from an allocator of the executor's,
 * not a task's: the relation outlives the task that made it.
 */
object EmberBroadcasts {
  private final class Entry(val id: Long) {
    var handle = 0L
    var users = 0
    var bytes = 0L
    var failure: Throwable = _
  }

  private lazy val alloc: BufferAllocator =
    SparkInternals.arrowAllocator.newChildAllocator("ember broadcasts", 0, Long.MaxValue)
  private val entries = new java.util.LinkedHashMap[Long, Entry](16, 0.75f, true) // access order

  /** The relation of broadcast b for a task (released with release(b.id)). */
  def acquire(b: Broadcast[Any], schema: StructType, timeZone: String, batchRows: Int,
              limit: Long): Long = {
    val e = synchronized {
      val e = Option(entries.get(b.id)).getOrElse { val n = new Entry(b.id); entries.put(b.id, n); n }
      e.users += 1
      e
    }
    e.synchronized {
      if (e.handle == 0L && e.failure == null) {
        try b.value match {
          case r: EmberBroadcastRelation =>
            // Ember's own broadcast: its blocks straight into C
            e.handle = Native.lib.relationFromBlocks(r.blocks)
            e.bytes = Native.lib.relationBytes(e.handle)
          case other =>
          val rows = EmberInput.broadcastRows(other, schema.length)
          val reader = new RowsArrowReader(alloc, schema, timeZone, rows, batchRows, null, _ => ())
          val stream = ArrowArrayStream.allocateNew(alloc)
          try {
            Data.exportArrayStream(alloc, reader, stream)
            e.handle = Native.lib.relationCreate(stream.memoryAddress())
            e.bytes = Native.lib.relationBytes(e.handle)
          } finally {
            stream.close()
            reader.close()
          }
        } catch {
          case t: Throwable => e.failure = t
        }
      }
    }
    if (e.failure != null) {
      release(b.id, limit)
      throw e.failure
    }
    e.handle
  }

  def release(id: Long, limit: Long): Unit = synchronized {
    Option(entries.get(id)).foreach { e => e.users -= 1 }
    evict(limit)
  }

  private def evict(limit: Long): Unit = {
    var held = 0L
    entries.values().forEach(e => held += e.bytes)
    val it = entries.values().iterator()
    val drop = mutable.ArrayBuffer.empty[Entry]
    while (it.hasNext && held > limit) {
      val e = it.next()
      if (e.users == 0) {
        held -= e.bytes
        drop += e
        it.remove()
      }
    }
    drop.foreach(e => if (e.handle != 0L) Native.lib.relationDestroy(e.handle))
    // a failed entry is dropped when unused, so a later task tries again
    val failed = mutable.ArrayBuffer.empty[Long]
    entries.values().forEach(e => if (e.failure != null && e.users == 0) failed += e.id)
    failed.foreach(entries.remove)
  }

  /** Every unused relation dropped (the executor stops). */
  def clear(): Unit = synchronized { evict(-1L) }
}
