// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.ipc.ArrowReader
import org.apache.arrow.vector.types.pojo.Schema
import org.apache.spark.TaskContext
import org.apache.spark.TaskKilledException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.arrow.ArrowWriter
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.execution.ember.{SparkInternals, SparkShims}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}

/**
 * What Spark hands Ember as an Arrow stream, read on Ember's task thread
 * through the C Stream Interface (Data.exportArrayStream). A kill is noticed
 * between batches; Spark's own failures (a fetch failure above all) must
 * reach Spark as they are, not as Ember's error, so they are recorded before
 * C sees them.
 */
sealed abstract class SparkArrowReader(alloc: BufferAllocator, schema: StructType, timeZone: String,
                                       ctx: TaskContext, failed: Throwable => Unit)
  extends ArrowReader(alloc) {
  /** Fills the schema root with the next batch; false at the end. */
  protected def fill(): Boolean

  override protected def readSchema(): Schema = SparkShims.get.toArrowSchema(schema, timeZone)

  override def loadNextBatch(): Boolean =
    try {
      if (ctx != null && ctx.isInterrupted())
        throw new TaskKilledException(SparkInternals.killReason(ctx))
      fill()
    } catch {
      case t: Throwable =>
        failed(t)
        throw t
    }

  override def bytesRead(): Long = 0L
  override protected def closeReadSource(): Unit = ()
}

/**
 * Spark's rows as an Arrow stream: each batch of up to batchRows rows is
 * written by Spark's own ArrowWriter into fresh buffers (the last batch's are
 * released, not reused: Ember may still hold them, and releases its
 * references when it is done with them).
 */
final class RowsArrowReader(alloc: BufferAllocator, schema: StructType, timeZone: String,
                            rows: Iterator[InternalRow], batchRows: Int, ctx: TaskContext,
                            failed: Throwable => Unit)
  extends SparkArrowReader(alloc, schema, timeZone, ctx, failed) {
  private var writer: ArrowWriter = _

  override protected def fill(): Boolean = {
    val root = getVectorSchemaRoot
    if (writer == null) writer = ArrowWriter.create(root)
    root.clear()
    writer.reset()
    var n = 0
    while (n < batchRows && rows.hasNext) {
      writer.write(rows.next())
      n += 1
    }
    writer.finish()
    n > 0
  }
}

/**
 * Spark ColumnarBatches as an Arrow stream. Batches of Arrow vectors (an
 * Ember shuffle's reduce side, another plugin's output) move into the
 * stream's vectors without copying (each batch's vectors are fresh: their
 * buffers' ownership is transferred); other batches are written row by row
 * as RowsArrowReader does.
 */
final class BatchesArrowReader(alloc: BufferAllocator, schema: StructType, timeZone: String,
                               batches: Iterator[ColumnarBatch], ctx: TaskContext,
                               failed: Throwable => Unit, counted: Int => Unit)
  extends SparkArrowReader(alloc, schema, timeZone, ctx, failed) {
  private var writer: ArrowWriter = _

  private def arrowVectors(b: ColumnarBatch): Option[Seq[org.apache.arrow.vector.ValueVector]] = {
    val vs = (0 until b.numCols).map(b.column)
    if (vs.forall(_.isInstanceOf[ArrowColumnVector]))
      Some(vs.map(_.asInstanceOf[ArrowColumnVector].getValueVector))
    else None
  }

  override protected def fill(): Boolean = {
    if (!batches.hasNext) return false
    val b = batches.next()
    val root = getVectorSchemaRoot
    root.clear()
    counted(b.numRows)
    arrowVectors(b) match {
      case Some(vs) if vs.size == root.getFieldVectors.size =>
        vs.zipWithIndex.foreach { case (v, i) =>
          v.makeTransferPair(root.getVector(i)).transfer()
        }
        root.setRowCount(b.numRows)
      case _ =>
        import scala.jdk.CollectionConverters._
        if (writer == null) writer = ArrowWriter.create(root)
        writer.reset()
        b.rowIterator().asScala.foreach(writer.write)
        writer.finish()
    }
    true
  }
}

/** Ember's output stream as Spark ColumnarBatches over the imported Arrow
 *  vectors (zero-copy; each batch valid until the next is loaded). */
final class ArrowBatchIterator(reader: ArrowReader, onEnd: () => Unit)
  extends Iterator[ColumnarBatch] {
  private var pending = false
  private var finished = false
  private var batch: ColumnarBatch = _

  override def hasNext: Boolean = {
    if (!pending && !finished) {
      if (reader.loadNextBatch()) {
        val root = reader.getVectorSchemaRoot
        if (batch == null) {
          val cols: Array[ColumnVector] =
            root.getFieldVectors.toArray(new Array[org.apache.arrow.vector.FieldVector](0))
              .map(v => new ArrowColumnVector(v): ColumnVector)
          batch = new ColumnarBatch(cols)
        }
        batch.setNumRows(root.getRowCount)
        pending = true
      } else {
        finished = true
        onEnd()
      }
    }
    pending
  }

  override def next(): ColumnarBatch = {
    if (!hasNext) throw new NoSuchElementException("end of Ember's output")
    pending = false
    batch
  }
}
