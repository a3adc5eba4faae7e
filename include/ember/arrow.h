/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Arrow C Data Interface and C Stream Interface (the ABI-stable structs
 * every Arrow implementation shares, declared here from the Arrow
 * specification), and conversion between them and Ember's batches.
 *
 * A batch travels as a struct array ("+s") with one child per column. Type
 * formats: void "n", boolean "b", tinyint "c", smallint "s", int "i",
 * bigint "l", float "f", double "g", decimal(p,s) "d:p,s" (128-bit), string
 * "u", binary "z", date "tdD", timestamp "tsu:UTC", timestamp_ntz "tsu:".
 *
 * Ownership. Export is zero-copy: the exported array holds references on the
 * column buffers, so the batch may be destroyed right after exporting; the
 * consumer's call to release() drops them (each release callback runs at
 * most once and marks its struct released, moved-out children are honoured).
 * Import moves the ArrowArray into the batch (its release is set to NULL on
 * success; on failure the caller keeps it) and wraps its buffers without
 * copying; the producer's release() runs when the last Ember buffer that
 * views it is dropped. Arrays with a non-zero offset, or string offsets not
 * starting at 0, are copied instead so Ember's columns keep their
 * offset-free layout. Layouts Ember does not use are converted on import
 * (copied): timestamps in seconds, milliseconds or nanoseconds ("tss:",
 * "tsm:", "tsn:", nanoseconds floored to microseconds), dates in
 * milliseconds ("tdm"), large strings/binary ("U", "Z") and string/binary
 * views ("vu", "vz", as Polars and DuckDB may produce). Imported input is validated (formats,
 * buffer counts, lengths, string offsets) and rejected with EM_ERR_INVALID or EM_ERR_UNSUPPORTED
 * naming the column; nothing is left half-built.
 */
#ifndef EM_ARROW_H
#define EM_ARROW_H

#include <stdint.h>

#include "ember/column.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
    /* Array type description */
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;

    /* Release callback */
    void (*release)(struct ArrowSchema *);
    /* Opaque producer-specific data */
    void *private_data;
};

struct ArrowArray {
    /* Array data description */
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;

    /* Release callback */
    void (*release)(struct ArrowArray *);
    /* Opaque producer-specific data */
    void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
    /* Callbacks providing stream functionality */
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);

    /* Release callback */
    void (*release)(struct ArrowArrayStream *);
    /* Opaque producer-specific data */
    void *private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

/* The Arrow format string of t into buf (at least 16 bytes); returns buf. */
const char *em_arrow_format(em_type t, char *buf, size_t cap);
/* Parses a format string Ember can hold: the list above, "d:p,s,128", the
 * converted layouts above, and timestamps with any time zone (instants, so
 * TIMESTAMP; no zone means TIMESTAMP_NTZ). */
em_status em_arrow_parse_format(const char *format, em_type *out, em_error *err) EM_MUST_CHECK;

/* Exports schema as a "+s" ArrowSchema with one nullable-flagged child per field. */
em_status em_arrow_export_schema(const em_schema *schema, struct ArrowSchema *out,
                                 em_error *err) EM_MUST_CHECK;
/* Exports the logically present rows of b (a selection is applied to a copy
 * first) as a struct array; b itself is not modified. */
em_status em_arrow_export_batch(const em_batch *b, struct ArrowArray *out,
                                em_error *err) EM_MUST_CHECK;
/* Exports one column as a plain array of its type (no struct wrapper). */
em_status em_arrow_export_column(const em_column *c, struct ArrowArray *out,
                                 em_error *err) EM_MUST_CHECK;

/* Reads a "+s" schema into out (field names copied, nullability from flags). */
em_status em_arrow_import_schema(const struct ArrowSchema *schema, em_schema *out,
                                 em_error *err) EM_MUST_CHECK;
/* Imports a struct array described by schema (borrowed) into a new batch
 * whose memory is charged to pool; moves array on success (see above). */
em_status em_arrow_import_batch(struct ArrowArray *array, const struct ArrowSchema *schema,
                                em_pool *pool, em_batch **out, em_error *err) EM_MUST_CHECK;

/* The errno an ArrowArrayStream callback returns for a failed status: ENOMEM,
 * EINVAL (bad input, parse, bind or type errors), ENOSYS (unsupported),
 * ECANCELED, else EIO. */
int em_arrow_errno(em_status s);

/* A source of batches for a stream: returns EM_OK and a batch the stream
 * then owns, EM_DONE at the end, or an error. */
typedef em_status (*em_batch_source_fn)(void *ctx, em_batch **out, em_error *err);

/* Makes an ArrowArrayStream of schema (copied) that pulls batches from
 * next(ctx). release_ctx(ctx), when not NULL, runs when the stream is
 * released, also if it is released before the end. get_next errors map to
 * errno values as em_arrow_errno does, with get_last_error giving the
 * Ember message; the end is a released (release == NULL) array. */
em_status em_arrow_stream_from_batches(const em_schema *schema, em_batch_source_fn next,
                                       void (*release_ctx)(void *ctx), void *ctx,
                                       struct ArrowArrayStream *out, em_error *err) EM_MUST_CHECK;
/* Pulls the next array from any stream and imports it as a batch described by
 * schema (the stream's, as from get_schema). Returns EM_DONE at the end, or
 * EM_ERR_IO with the stream's last error message. */
em_status em_arrow_stream_next_batch(struct ArrowArrayStream *stream,
                                     const struct ArrowSchema *schema, em_pool *pool,
                                     em_batch **out, em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
