// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import org.apache.spark.memory.{MemoryConsumer, MemoryMode, TaskMemoryManager}

/**
 * A task's native memory as Spark's TaskMemoryManager sees it (off-heap).
 * Ember's task pool asks acquire() for grants as it grows (in chunks, from
 * C, on the task's thread); a refused grant fails the allocation in C,
 * where an operator that can spill spills and another fails the task with
 * an out-of-memory error naming its pool. When another consumer of the task
 * needs memory, Spark asks this one to spill: it gives back the part of its
 * grants the native side does not use now. Everything returns to Spark when
 * the task ends. Only with spark.memory.offHeap.enabled: without an
 * off-heap pool Spark has nothing to grant, and Ember's memory stays
 * unaccounted, as before.
 */
final class EmberMemoryConsumer(tmm: TaskMemoryManager)
  extends MemoryConsumer(tmm, tmm.pageSizeBytes(), MemoryMode.OFF_HEAP) {
  @volatile var task: Long = 0L
  private var held = 0L

  /** Called from C: at least `bytes` more, or less when Spark has less. */
  def acquire(bytes: Long): Long = synchronized {
    val got = acquireMemory(bytes)
    held += got
    got
  }

  override def spill(size: Long, trigger: MemoryConsumer): Long = synchronized {
    if (trigger eq this) return 0L
    val t = task
    val slack = if (t != 0L) Native.lib.taskReleaseSlack(t) else 0L
    val back = math.min(slack, held)
    if (back > 0) {
      freeMemory(back)
      held -= back
    }
    back
  }

  def releaseAll(): Unit = synchronized {
    if (held > 0) freeMemory(held)
    held = 0
  }
}

object EmberMemory {
  /** Grants are asked in chunks this large, so C calls into Spark rarely. */
  val GrantChunk: Long = 8L << 20
}
