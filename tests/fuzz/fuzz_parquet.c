/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the Parquet reader: the input bytes become a file (an
 * anonymous memfd, opened through /proc/self/fd so the reader's real open,
 * fstat and mmap path runs), which is opened, asked for every column's
 * statistics and chunk facts, and read fully in small batches. Any status
 * is fine; a crash, a sanitizer report or a leak is a bug. Files claiming
 * more than a million rows are only opened, not read, to keep runs short.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ember/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz_parquet", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            close(fd);
            return 0;
        }
        off += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    em_error err;
    em_pq_file *f;
    if (em_pq_file_open(path, &f, &err) == EM_OK) {
        const em_schema *s = em_pq_file_schema(f);
        for (int g = 0; g < em_pq_file_num_row_groups(f); g++)
            for (int c = 0; c < s->n_fields; c++) {
                em_pq_stats st;
                em_pq_chunk_info ci;
                em_status s1 = em_pq_file_stats(f, g, c, &st, &err);
                em_status s2 = em_pq_file_chunk_info(f, g, c, &ci, &err);
                (void)s1;
                (void)s2;
            }
        int64_t rows = em_pq_file_num_rows(f);
        /* the whole file, then its second half as a row range (pages passed
         * over by their headers alone) */
        for (int pass = 0; pass < 2 && rows <= 1000000; pass++) {
            em_pq_read_options o = {0};
            o.batch_rows = 100;
            if (pass == 1) {
                if (rows < 2)
                    break;
                o.row_start = rows / 2;
                o.row_end = rows;
            }
            em_pq_reader *r;
            if (em_pq_reader_open(f, &o, &r, &err) == EM_OK) {
                em_batch *b;
                while (em_pq_reader_next(r, &b, &err) == EM_OK) {
                }
                em_pq_reader_close(r);
            }
        }
        em_pq_file_close(f);
    }
    close(fd);
    return 0;
}
