// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.{DataInputStream, DataOutputStream, EOFException, InputStream, OutputStream}
import java.nio.ByteBuffer

import scala.reflect.ClassTag

import org.apache.arrow.c.{ArrowArray, ArrowSchema, Data}
import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.{Partitioner, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.serializer.{DeserializationStream, SerializationStream, Serializer, SerializerInstance}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.ember.SparkInternals
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}

/** The map side's keys are reduce partitions already. */
final class EmberPartitionIdPassThrough(n: Int) extends Partitioner {
  override def numPartitions: Int = n
  override def getPartition(key: Any): Int = key.asInstanceOf[Int]
}

/** A block as C wrote it: a slice of the array C returned, and its rows. */
final case class EmberBlock(bytes: Array[Byte], offset: Int, length: Int, rows: Int)

/** Writes (partition, block) records as [int key][int length][bytes]; reads
 *  the blocks back as byte arrays. Records are self-contained, so Spark may
 *  move them (its serialized, sort-free shuffle path). A record is a block,
 *  not a row: the rows written are counted into `rowsWritten`. */
final class EmberBlockSerializer(dataSize: SQLMetric, rowsWritten: SQLMetric)
  extends Serializer with Serializable {
  override def supportsRelocationOfSerializedObjects: Boolean = true
  override def newInstance(): SerializerInstance = new SerializerInstance {
    override def serialize[T: ClassTag](t: T): ByteBuffer =
      throw new UnsupportedOperationException("Ember blocks are written as streams")
    override def deserialize[T: ClassTag](bytes: ByteBuffer): T =
      throw new UnsupportedOperationException("Ember blocks are read as streams")
    override def deserialize[T: ClassTag](bytes: ByteBuffer, loader: ClassLoader): T =
      deserialize(bytes)
    override def serializeStream(s: OutputStream): SerializationStream = new SerializationStream {
      private val out = new DataOutputStream(s)
      override def writeObject[T: ClassTag](t: T): SerializationStream = t match {
        case b: EmberBlock =>
          out.writeInt(b.length)
          out.write(b.bytes, b.offset, b.length)
          dataSize.add(b.length)
          rowsWritten.add(b.rows)
          this
        case k: Int => out.writeInt(k); this
        case other => throw new IllegalArgumentException(s"not an Ember block: ${other.getClass}")
      }
      override def writeKey[T: ClassTag](key: T): SerializationStream = writeObject(key)
      override def writeValue[T: ClassTag](value: T): SerializationStream = writeObject(value)
      override def flush(): Unit = out.flush()
      override def close(): Unit = out.close()
    }
    override def deserializeStream(s: InputStream): DeserializationStream = new DeserializationStream {
      private val in = new DataInputStream(s)
      private var wantKey = true
      override def readObject[T: ClassTag](): T = {
        val v: Any =
          if (wantKey) in.readInt()
          else {
            val len = in.readInt()
            val b = new Array[Byte](len)
            in.readFully(b)
            b
          }
        wantKey = !wantKey
        v.asInstanceOf[T]
      }
      override def readKey[T: ClassTag](): T = readObject[T]()
      override def readValue[T: ClassTag](): T = readObject[T]()
      override def asKeyValueIterator: Iterator[(Any, Any)] = new Iterator[(Any, Any)] {
        private var nextPair: (Any, Any) = _
        private var done = false
        override def hasNext: Boolean = {
          if (nextPair == null && !done) {
            try {
              val k = readKey[Any]()
              nextPair = (k, readValue[Any]())
            } catch { case _: EOFException => done = true; close() }
          }
          nextPair != null
        }
        override def next(): (Any, Any) = {
          if (!hasNext) throw new NoSuchElementException
          val p = nextPair
          nextPair = null
          p
        }
      }
      override def close(): Unit = in.close()
    }
  }
}

object EmberShuffle {
  /** Ember's batches as rows for a Spark operator: UnsafeRows, as Spark's row
   *  operators take them (a broadcast's collect, for one, casts every row),
   *  one reused row per task as Spark's own ColumnarToRowExec hands out. */
  def unsafeRows(batches: RDD[ColumnarBatch], schema: StructType): RDD[InternalRow] =
    batches.mapPartitions { it =>
      import scala.jdk.CollectionConverters._
      val project = UnsafeProjection.create(schema)
      it.flatMap(_.rowIterator().asScala.map(project))
    }

  /** The reduce side: each block decoded in C into Arrow, imported zero-copy. */
  def readBlocks(blocks: RDD[Array[Byte]]): RDD[ColumnarBatch] =
    blocks.mapPartitions { it =>
      val ctx = TaskContext.get()
      val alloc: BufferAllocator =
        SparkInternals.arrowAllocator.newChildAllocator("ember shuffle read", 0, Long.MaxValue)
      val reader = new BlockBatches(it.asInstanceOf[Iterator[Any]], alloc)
      ctx.addTaskCompletionListener[Unit](_ => reader.close())
      reader
    }

  /** Blocks (byte arrays) as ColumnarBatches; each batch's vectors stay
   *  valid until the next batch is asked for. */
  final class BlockBatches(blocks: Iterator[Any], alloc: BufferAllocator)
    extends Iterator[ColumnarBatch] {
    private var current: org.apache.arrow.vector.VectorSchemaRoot = _
    private var closed = false

    override def hasNext: Boolean = !closed && blocks.hasNext

    override def next(): ColumnarBatch = {
      val bytes = blocks.next().asInstanceOf[Array[Byte]]
      release()
      val array = ArrowArray.allocateNew(alloc)
      val schema = ArrowSchema.allocateNew(alloc)
      try {
        Native.lib.blockToArrow(bytes, array.memoryAddress(), schema.memoryAddress())
        current = Data.importVectorSchemaRoot(alloc, array, schema, null)
      } finally {
        array.close()
        schema.close()
      }
      val cols: Array[ColumnVector] = (0 until current.getFieldVectors.size).map { i =>
        new ArrowColumnVector(current.getVector(i)): ColumnVector
      }.toArray
      val b = new ColumnarBatch(cols)
      b.setNumRows(current.getRowCount)
      b
    }

    private def release(): Unit = if (current != null) { current.close(); current = null }

    def close(): Unit = if (!closed) {
      closed = true
      release()
      alloc.close()
    }
  }
}
