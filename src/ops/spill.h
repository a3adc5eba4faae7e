/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spill files of the operators that outgrow their pool's budget (Sort's
 * sorted runs, HashAggregate's partitions): batches of one schema written
 * to a temporary file and read back in the order written.
 *
 * A spill is a file in $TMPDIR, or /tmp when that is unset, named
 * ember-spill-<pid>-<n> with n unique in the process, so tasks on several
 * threads never collide. It holds the columns' buffers as they are (see
 * spill.c); only the chunk being written or the batch last read is in
 * memory, charged to the given pool. The name is unlinked as soon as the
 * file is created: it lives only through the spill's descriptor (one per
 * spill, open until the spill is freed), so nothing is left behind however
 * the process ends.
 */
#ifndef EM_OPS_SPILL_H
#define EM_OPS_SPILL_H

#include "ember/column.h"

typedef struct em_spill em_spill;

/* Creates a new spill file for batches of `schema` (its types are copied;
 * batches read back name the columns c0, c1, ...) in folder dir (NULL or
 * empty: $TMPDIR, else /tmp). */
em_status em_spill_create(const em_schema *schema, const char *dir, em_pool *pool, em_spill **out,
                          em_error *err) EM_MUST_CHECK;
/* Appends b's logically present rows (its selection is honoured). */
em_status em_spill_write(em_spill *s, const em_batch *b, em_error *err) EM_MUST_CHECK;
/* Ends writing; *bytes (may be NULL) gets the file's size. */
em_status em_spill_finish(em_spill *s, int64_t *bytes, em_error *err) EM_MUST_CHECK;
/* The next batch of at most EM_BATCH_CAP rows, in write order, with the
 * schema's types; owned by the spill and valid until the next call or free.
 * EM_DONE at the end. The first call ends writing if that was not done. */
em_status em_spill_read(em_spill *s, em_batch **out, em_error *err) EM_MUST_CHECK;
/* Rows written so far. */
int64_t em_spill_rows(const em_spill *s);
/* Closes everything and removes the file. NULL allowed. */
void em_spill_free(em_spill *s);

#endif
