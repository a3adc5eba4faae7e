// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.{DataInputStream, EOFException, InputStream, OutputStream}
import java.nio.{ByteBuffer, ByteOrder}

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

/** Ember's shuffle records: [int32 partition][int32 rows][int32 length]
 *  [block], little-endian, as C writes them into a map task's data file
 *  (EmberShuffleWriteProcessor) and as this serializer writes them when
 *  Spark's own shuffle writer does (another shuffle manager). Reading gives
 *  (partition, block bytes). Records are self-contained, so Spark may move
 *  them (its serialized, sort-free shuffle path) and fetch runs of them in
 *  one go. A record is a block, not a row: the rows are counted into
 *  `rowsWritten`. */
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
      private val header = ByteBuffer.allocate(EmberShuffle.RecordHeader).order(ByteOrder.LITTLE_ENDIAN)
      private var partition = -1
      override def writeObject[T: ClassTag](t: T): SerializationStream = t match {
        case b: EmberBlock =>
          header.clear()
          header.putInt(partition).putInt(b.rows).putInt(b.length)
          s.write(header.array())
          s.write(b.bytes, b.offset, b.length)
          dataSize.add(EmberShuffle.RecordHeader + b.length)
          rowsWritten.add(b.rows)
          this
        case k: Int => partition = k; this
        case other => throw new IllegalArgumentException(s"not an Ember block: ${other.getClass}")
      }
      override def writeKey[T: ClassTag](key: T): SerializationStream = writeObject(key)
      override def writeValue[T: ClassTag](value: T): SerializationStream = writeObject(value)
      override def flush(): Unit = s.flush()
      override def close(): Unit = s.close()
    }
    override def deserializeStream(s: InputStream): DeserializationStream = new DeserializationStream {
      private val in = new DataInputStream(s)
      private val header = new Array[Byte](EmberShuffle.RecordHeader)
      private val view = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN)
      private var block: Array[Byte] = _

      /** The next record's partition, its block kept for readValue; EOF at the end. */
      private def readRecord(): Int = {
        val first = in.read()
        if (first < 0) throw new EOFException // the end, between records
        header(0) = first.toByte
        try {
          in.readFully(header, 1, header.length - 1)
          val len = view.getInt(8)
          if (len < 0) throw new java.io.IOException(s"Ember shuffle record of $len bytes: corrupt stream")
          block = new Array[Byte](len)
          in.readFully(block)
        } catch {
          case _: EOFException => throw new java.io.IOException("Ember shuffle stream ends inside a record")
        }
        view.getInt(0)
      }
      override def readObject[T: ClassTag](): T = readKey[T]()
      override def readKey[T: ClassTag](): T = Integer.valueOf(readRecord()).asInstanceOf[T]
      override def readValue[T: ClassTag](): T = {
        val b = block
        block = null
        b.asInstanceOf[T]
      }
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
  /** Bytes of a record's header: partition, rows, block length. */
  val RecordHeader = 12

  /** Ember's batches as rows for a Spark operator: UnsafeRows, as Spark's row
   *  operators take them (a broadcast's collect, for one, casts every row),
   *  one reused row per task as Spark's own ColumnarToRowExec hands out. */
  def unsafeRows(batches: RDD[ColumnarBatch], schema: StructType): RDD[InternalRow] =
    batches.mapPartitions { it =>
      import scala.jdk.CollectionConverters._
      val project = UnsafeProjection.create(schema)
      it.flatMap(_.rowIterator().asScala.map(project))
    }

  /** The reduce side: each block decoded in C into Arrow, imported zero-copy
   *  (an Ember node reading it takes the blocks themselves, EmberBlockBatches). */
  def readBlocks(blocks: RDD[Array[Byte]]): RDD[ColumnarBatch] = new EmberBlockBatches(blocks)

  /** Rows of a block, from its header (include/ember/chunk.h: "EMSB",
   *  columns, a type word per column, then the chunk header "EMSP", columns,
   *  int64 rows), without decoding it. */
  def blockRows(block: Array[Byte]): Long = {
    val b = ByteBuffer.wrap(block).order(ByteOrder.nativeOrder())
    b.getLong(16 + 4 * b.getInt(4))
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

/** Blocks of an Ember shuffle's reduce side as ColumnarBatches for Spark's
 *  operators; an Ember node pulls `blocks` directly instead (EmberRDD). */
final class EmberBlockBatches(val blocks: RDD[Array[Byte]]) extends RDD[ColumnarBatch](blocks) {
  override protected def getPartitions: Array[org.apache.spark.Partition] = blocks.partitions

  override def compute(split: org.apache.spark.Partition, ctx: TaskContext): Iterator[ColumnarBatch] = {
    val alloc: BufferAllocator =
      SparkInternals.arrowAllocator.newChildAllocator("ember shuffle read", 0, Long.MaxValue)
    val reader = new EmberShuffle.BlockBatches(blocks.iterator(split, ctx).asInstanceOf[Iterator[Any]], alloc)
    ctx.addTaskCompletionListener[Unit](_ => reader.close())
    reader
  }
}

/**
 * Shuffle blocks for an Ember task's input stream (Native.blockStream), read
 * by C on the task's thread. As SparkArrowReader does for Arrow batches, a
 * kill is noticed between blocks and Spark's own failures are recorded
 * before C sees them, so that the task fails with Spark's exception.
 */
final class EmberBlockSource(blocks: Iterator[Array[Byte]], ctx: TaskContext,
                             failed: Throwable => Unit, counted: Long => Unit) {
  /** The next block, or null at the end. */
  def next(): Array[Byte] =
    try {
      if (ctx != null && ctx.isInterrupted())
        throw new org.apache.spark.TaskKilledException(SparkInternals.killReason(ctx))
      if (!blocks.hasNext) null
      else {
        val b = blocks.next()
        counted(EmberShuffle.blockRows(b))
        b
      }
    } catch {
      case t: Throwable =>
        failed(t)
        throw t
    }
}
