/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A map task's whole output as one file, each reduce partition's records
 * contiguous and the partitions in order: the layout of Spark's shuffle data
 * file, whose index (the partitions' lengths) the host writes beside it. C
 * writes the file itself so that the blocks reach the disk once, with no
 * copy into the JVM, no sort there and no second compression over blocks
 * that are already compact.
 *
 * Blocks come from em_task_map_next in two phases. While input is read, a
 * partition's block is given whenever it fills, in no partition order:
 * those go to a scratch file (unnamed, so nothing is left behind whatever
 * happens to the process), remembered as pieces per partition. Once the
 * input is exhausted, each partition's rest comes once, in partition order:
 * before writing partition p's rest the scratch pieces of every partition up
 * to p are copied in (in the kernel, copy_file_range), so a small task whose
 * blocks all come at the end never touches the scratch file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember/task.h"
#include "ember/value_text.h"
#include "runtime/internal.h"

/* Scratch bytes gathered in memory before one write. */
#define SCRATCH_WRITE_BYTES ((size_t)1 << 20)

typedef struct map_piece {
    int64_t off, len;
    int32_t next; /* the partition's next piece, -1 at the end */
} map_piece;

typedef struct map_file {
    const char *path;
    int fd, scratch_fd;
    int64_t scratch_len;
    map_piece *pieces;
    int32_t n_pieces, cap_pieces;
    int32_t *head, *tail; /* per partition: its first and last piece, -1 when none */
    int np;
    int next_p;      /* partitions before it are complete in the file */
    int64_t *lengths;
    int64_t rows;
} map_file;

static em_status write_all(int fd, const void *p, size_t n, const char *what, const char *path,
                           em_error *err) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return EM_FAIL(err, EM_ERR_IO, "shuffle file '%s': %s write failed: %s", path, what,
                           k < 0 ? strerror(errno) : "no progress");
        c += k;
        n -= (size_t)k;
    }
    return EM_OK;
}

static em_status scratch_open(map_file *mf, em_error *err) {
    /* beside the data file: the same file system, so copy_file_range stays in it */
    char dir[4096];
    const char *slash = strrchr(mf->path, '/');
    size_t n = slash ? (size_t)(slash - mf->path) : 0;
    if (n >= sizeof dir)
        return EM_FAIL(err, EM_ERR_INVALID, "shuffle file '%s': path too long", mf->path);
    if (slash)
        memcpy(dir, mf->path, n ? n : 1);
    else
        dir[0] = '.';
    dir[n ? n : 1] = '\0';
#ifdef O_TMPFILE
    mf->scratch_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (mf->scratch_fd < 0) {
        /* a file system without unnamed files: a named one, removed at once */
        char tmpl[4096 + 32];
        snprintf(tmpl, sizeof tmpl, "%s/ember-map-scratch-XXXXXX", dir);
        mf->scratch_fd = mkostemp(tmpl, O_CLOEXEC);
        if (mf->scratch_fd >= 0)
            unlink(tmpl);
    }
    if (mf->scratch_fd < 0)
        return EM_FAIL(err, EM_ERR_IO, "shuffle file '%s': cannot create a scratch file in '%s': %s",
                       mf->path, dir, strerror(errno));
    return EM_OK;
}

/* Appends the records of rec[0, n) to the scratch file, each a piece of its partition. */
static em_status to_scratch(map_file *mf, const uint8_t *rec, size_t n, em_error *err) {
    if (n == 0)
        return EM_OK;
    if (mf->scratch_fd < 0)
        EM_TRY(scratch_open(mf, err));
    EM_TRY(write_all(mf->scratch_fd, rec, n, "scratch", mf->path, err));
    for (size_t at = 0; at < n;) {
        int32_t h[3];
        memcpy(h, rec + at, sizeof h);
        int64_t len = (int64_t)sizeof h + h[2];
        int p = h[0];
        int32_t t = mf->tail[p];
        if (t >= 0 && mf->pieces[t].off + mf->pieces[t].len == mf->scratch_len) {
            mf->pieces[t].len += len; /* follows the partition's last piece: one copy */
        } else {
            if (mf->n_pieces == mf->cap_pieces) {
                int32_t cap = mf->cap_pieces ? 2 * mf->cap_pieces : 64;
                map_piece *np = realloc(mf->pieces, sizeof *np * (size_t)cap);
                if (!np)
                    return EM_FAIL(err, EM_ERR_NOMEM, "out of memory writing shuffle file '%s'",
                                   mf->path);
                mf->pieces = np;
                mf->cap_pieces = cap;
            }
            int32_t i = mf->n_pieces++;
            mf->pieces[i] = (map_piece){mf->scratch_len, len, -1};
            if (t >= 0)
                mf->pieces[t].next = i;
            else
                mf->head[p] = i;
            mf->tail[p] = i;
        }
        mf->scratch_len += len;
        at += (size_t)len;
    }
    return EM_OK;
}

static em_status copy_range(map_file *mf, int64_t off, int64_t len, em_error *err) {
    while (len > 0) {
        loff_t in = off;
        ssize_t k = copy_file_range(mf->scratch_fd, &in, mf->fd, NULL, (size_t)len, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k > 0) {
            off += k;
            len -= k;
            continue;
        }
        if (k == 0 || (errno != ENOSYS && errno != EXDEV && errno != EINVAL &&
                       errno != EOPNOTSUPP))
            return EM_FAIL(err, EM_ERR_IO, "shuffle file '%s': copy from scratch failed: %s",
                           mf->path, k < 0 ? strerror(errno) : "no progress");
        /* no in-kernel copy here: through a buffer */
        char buf[1 << 16];
        size_t want = len < (int64_t)sizeof buf ? (size_t)len : sizeof buf;
        ssize_t r = pread(mf->scratch_fd, buf, want, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return EM_FAIL(err, EM_ERR_IO, "shuffle file '%s': scratch read failed: %s", mf->path,
                           r < 0 ? strerror(errno) : "short file");
        EM_TRY(write_all(mf->fd, buf, (size_t)r, "data", mf->path, err));
        off += r;
        len -= r;
    }
    return EM_OK;
}

/* Completes partitions [next_p, upto) in the file from their scratch pieces. */
static em_status complete_before(map_file *mf, int upto, em_error *err) {
    for (; mf->next_p < upto; mf->next_p++)
        for (int32_t i = mf->head[mf->next_p]; i >= 0; i = mf->pieces[i].next) {
            EM_TRY(copy_range(mf, mf->pieces[i].off, mf->pieces[i].len, err));
            mf->lengths[mf->next_p] += mf->pieces[i].len;
        }
    return EM_OK;
}

/* Counts the records of rec[0, n) (each partition's rows and bytes), checking
 * their framing: a record that does not fit is C's own bug, caught here
 * rather than written. */
static em_status count_records(map_file *mf, const uint8_t *rec, size_t n, int min_p,
                               em_error *err) {
    for (size_t at = 0; at < n;) {
        int32_t h[3];
        if (n - at < sizeof h)
            return EM_FAIL(err, EM_ERR_INTERNAL, "shuffle file '%s': a torn record", mf->path);
        memcpy(h, rec + at, sizeof h);
        if (h[0] < min_p || h[0] >= mf->np || h[2] < 0 || (size_t)h[2] > n - at - sizeof h)
            return EM_FAIL(err, EM_ERR_INTERNAL,
                           "shuffle file '%s': a record of partition %d (of %d), %d bytes, "
                           "out of place",
                           mf->path, h[0], mf->np, h[2]);
        mf->rows += h[1];
        at += sizeof h + (size_t)h[2];
    }
    return EM_OK;
}

/* The records of the end, one per partition and in partition order, go to the file. */
static em_status to_file(map_file *mf, const uint8_t *rec, size_t n, em_error *err) {
    for (size_t at = 0; at < n;) {
        int32_t h[3];
        memcpy(h, rec + at, sizeof h);
        size_t len = sizeof h + (size_t)h[2];
        EM_TRY(complete_before(mf, h[0] + 1, err)); /* this partition's scratch pieces first */
        EM_TRY(write_all(mf->fd, rec + at, len, "data", mf->path, err));
        mf->lengths[h[0]] += (int64_t)len;
        at += len;
    }
    return EM_OK;
}

static em_status map_file_run(map_file *mf, em_task *t, em_error *err) {
    em_strbuf sb;
    em_strbuf_init(&sb);
    em_status s = EM_OK;
    while (s == EM_OK) {
        size_t before = sb.len;
        /* a target of one byte: each call stops after the step that gave
         * blocks, so a call's blocks are all of one phase */
        s = em_task_map_next(t, &sb, 1, err);
        if (s == EM_DONE) {
            s = to_scratch(mf, (const uint8_t *)sb.data, sb.len, err);
            if (s == EM_OK)
                s = complete_before(mf, mf->np, err);
            break;
        }
        if (s != EM_OK)
            break;
        bool flushing = em_rt_task_map_flushing(t);
        s = count_records(mf, (const uint8_t *)sb.data + before, sb.len - before,
                          flushing ? mf->next_p : 0, err);
        if (s != EM_OK)
            break;
        if (!flushing) {
            if (sb.len >= SCRATCH_WRITE_BYTES) {
                s = to_scratch(mf, (const uint8_t *)sb.data, sb.len, err);
                em_strbuf_clear(&sb);
            }
            continue;
        }
        s = to_scratch(mf, (const uint8_t *)sb.data, before, err);
        if (s == EM_OK)
            s = to_file(mf, (const uint8_t *)sb.data + before, sb.len - before, err);
        em_strbuf_clear(&sb);
    }
    em_strbuf_reset(&sb);
    return s;
}

em_status em_task_map_write(em_task *t, const char *path, int64_t *lengths, int64_t *rows,
                            em_error *err) {
    int np = em_task_map_partitions(t);
    if (np <= 0)
        return EM_FAIL(err, EM_ERR_INVALID, "shuffle file '%s': not the map side of an exchange",
                       path);
    memset(lengths, 0, sizeof *lengths * (size_t)np);
    *rows = 0;
    map_file mf = {.path = path, .fd = -1, .scratch_fd = -1, .np = np, .lengths = lengths};
    mf.head = malloc(sizeof *mf.head * (size_t)np);
    mf.tail = malloc(sizeof *mf.tail * (size_t)np);
    em_status s = EM_OK;
    if (!mf.head || !mf.tail)
        s = EM_FAIL(err, EM_ERR_NOMEM, "out of memory writing shuffle file '%s'", path);
    for (int p = 0; s == EM_OK && p < np; p++)
        mf.head[p] = mf.tail[p] = -1;
    if (s == EM_OK) {
        mf.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (mf.fd < 0)
            s = EM_FAIL(err, EM_ERR_IO, "shuffle file '%s': cannot create: %s", path,
                        strerror(errno));
    }
    if (s == EM_OK)
        s = map_file_run(&mf, t, err);
    if (mf.fd >= 0 && close(mf.fd) != 0 && s == EM_OK)
        s = EM_FAIL(err, EM_ERR_IO, "shuffle file '%s': close failed: %s", path, strerror(errno));
    if (mf.scratch_fd >= 0)
        close(mf.scratch_fd);
    if (s != EM_OK && mf.fd >= 0)
        unlink(path); /* nothing half-written */
    *rows = mf.rows;
    free(mf.pieces);
    free(mf.head);
    free(mf.tail);
    return s;
}
