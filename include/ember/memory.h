/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory pools and reference-counted buffers.
 *
 * A pool charges every allocation made through it to its own budget and to
 * every ancestor's, and remembers its peak. Exceeding a budget fails the
 * allocation with EM_ERR_OOM_BUDGET and a message naming the pool, so an
 * operator can spill or fail the task cleanly. Pools are thread-safe (atomic
 * counters); a NULL pool means "unaccounted" and is allowed everywhere.
 *
 * Buffers are 64-byte aligned, reference counted, and release their bytes to
 * the pool that allocated them. A column shares buffers by taking references,
 * which is how batches are exported to the Arrow C Data Interface zero-copy.
 */
#ifndef EM_MEMORY_H
#define EM_MEMORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ember/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EM_ALIGNMENT 64

typedef struct em_pool em_pool;

/* budget < 0 means unlimited. name is copied. parent may be NULL. */
em_pool *em_pool_create(const char *name, em_pool *parent, int64_t budget);
/* The pool must have nothing outstanding except in release builds, which tolerate it. */
void em_pool_destroy(em_pool *pool);
const char *em_pool_name(const em_pool *pool);
int64_t em_pool_used(const em_pool *pool);
int64_t em_pool_peak(const em_pool *pool);
int64_t em_pool_budget(const em_pool *pool);
/* The smallest budget of the pool and its ancestors (-1: none): what an
 * operator sizes its tables against when only the query has a budget. */
int64_t em_pool_limit(const em_pool *pool);
/* The least budget - used over the pool and its ancestors that have a
 * budget (INT64_MAX when none): what a task may still take when the query's
 * budget is shared by several. */
int64_t em_pool_headroom(const em_pool *pool);
void em_pool_set_budget(em_pool *pool, int64_t budget);
/* The highest used / budget over pool's ancestors that have a budget (0
 * when none): a task's operators spill when the query's pool, shared with
 * the other tasks, fills up, not only when their own pool does. */
double em_pool_ancestor_pressure(const em_pool *pool);

/*
 * A host's grant (the Spark plugin: Spark's TaskMemoryManager). A pool with a
 * grant function charges its use to the host as it grows: when a charge would
 * take the pool past what the host granted so far, grant(ctx, bytes) is asked
 * for at least the missing bytes rounded up to `chunk` and returns what it
 * granted (0 when the host has none to give); a charge still short of its
 * grant fails with EM_ERR_OOM_BUDGET naming the host. Grants are kept until
 * the pool is destroyed (the host takes them back with the task). The
 * function runs on the thread that charges the pool.
 */
typedef int64_t (*em_pool_grant_fn)(void *ctx, int64_t bytes);
/* host names the grantor in errors ("Spark's memory manager
 * (spark.memory.offHeap.size)"); a static string. */
void em_pool_set_grant(em_pool *pool, em_pool_grant_fn grant, void *ctx, int64_t chunk,
                       const char *host);
/* Bytes the host granted the pool so far. */
int64_t em_pool_granted(const em_pool *pool);
/* Hands back the grant the pool does not use now (the host asked for
 * memory); returns those bytes, which the host takes back. */
int64_t em_pool_return_slack(em_pool *pool);

/* Caps the freed large blocks kept for reuse (64 MiB by default, process
 * wide): they are resident but charged to no pool, so a process held to a
 * memory budget keeps few of them. */
void em_memory_set_cache_limit(int64_t bytes);

/* Charges without allocating (for memory obtained elsewhere). */
em_status em_pool_reserve(em_pool *pool, int64_t bytes, em_error *err) EM_MUST_CHECK;
void em_pool_release(em_pool *pool, int64_t bytes);

/* 64-byte aligned allocation of size bytes charged to pool. Returns NULL and
 * fills err on failure (budget or malloc). size 0 returns a valid pointer. */
void *em_pool_alloc(em_pool *pool, int64_t size, em_error *err);
void *em_pool_calloc(em_pool *pool, int64_t size, em_error *err);
/* Reallocation keeping the first min(old,new) bytes. */
void *em_pool_realloc(em_pool *pool, void *p, int64_t old_size, int64_t new_size, em_error *err);
void em_pool_free(em_pool *pool, void *p, int64_t size);

/* Test hook: make the n-th allocation from now on (1-based) fail with
 * EM_ERR_NOMEM, across all pools; 0 disables. Not thread-safe. */
void em_alloc_fail_after(int64_t n);
/* True when the failure armed by the last em_alloc_fail_after() has happened;
 * a fault-injection loop stops at the first n for which it stays false. */
bool em_alloc_fail_triggered(void);

typedef struct em_buffer {
    uint8_t *data;      /* owned unless release is set */
    int64_t size;       /* bytes in use */
    int64_t capacity;   /* bytes allocated */
    em_pool *pool;      /* borrowed; the pool charged for capacity */
    atomic_int refcount;
    /* For foreign memory (imported Arrow arrays): called instead of freeing data. */
    void (*release)(struct em_buffer *buf);
    void *private_data;
} em_buffer;

em_status em_buffer_create(em_pool *pool, int64_t capacity, em_buffer **out, em_error *err)
    EM_MUST_CHECK;
/* Wraps memory owned by someone else; release(buf) is called on the last unref. */
em_status em_buffer_wrap(void *data, int64_t size, void (*release)(em_buffer *), void *private_data,
                         em_buffer **out, em_error *err) EM_MUST_CHECK;
/* Grows capacity to at least min_capacity (geometric growth); keeps contents. */
em_status em_buffer_reserve(em_buffer *buf, int64_t min_capacity, em_error *err) EM_MUST_CHECK;
em_buffer *em_buffer_ref(em_buffer *buf);
void em_buffer_unref(em_buffer *buf); /* NULL allowed */

#ifdef __cplusplus
}
#endif
#endif
