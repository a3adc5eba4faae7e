/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for shuffle blocks (include/ember/chunk.h): any bytes either
 * read as a batch or fail with EM_ERR_CORRUPT and a message; a block read
 * must write back to the same bytes (the layout has one spelling per batch).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ember/chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    em_batch *b = NULL;
    em_error err;
    memset(&err, 0, sizeof err);
    em_status s = em_block_read(data, (int64_t)size, NULL, &b, "fuzz", &err);
    if (s != EM_OK) {
        if (s != EM_ERR_CORRUPT && s != EM_ERR_NOMEM)
            abort();
        if (err.msg[0] == '\0' || b)
            abort();
        return 0;
    }
    int32_t *sel = malloc(sizeof *sel * (size_t)(b->n_rows + 1));
    if (sel) {
        for (int64_t i = 0; i < b->n_rows; i++)
            sel[i] = (int32_t)i;
        em_strbuf out;
        em_strbuf_init(&out);
        /* bits past a column's rows (a bitmap's padding) may differ from
         * the input's, and the writer narrows values as far as they allow,
         * which an input need not have: a block read back never grows */
        if (em_block_append(b, sel, b->n_rows, &out, &err) == EM_OK && out.len > size)
            abort();
        em_strbuf_reset(&out);
        free(sel);
    }
    em_batch_destroy(b);
    return 0;
}
