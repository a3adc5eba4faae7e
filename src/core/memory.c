/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory pools and reference-counted buffers.
 *
 * Accounting. A pool holds atomic `used` and `peak` counters and a budget.
 * Charging n bytes to a pool adds n to the pool and to every ancestor, from
 * the leaf upwards; if any level would exceed its budget, the levels already
 * charged are rolled back and the charge fails with EM_ERR_OOM_BUDGET naming
 * the pool whose budget was hit. Because each level is updated with a single
 * atomic add and checked afterwards, two racing charges can both see a level
 * over budget and both fail — never both succeed past it — which is the safe
 * direction. Peaks are raised with a compare-and-swap loop after a charge
 * succeeds, to the total each level reached right after this charge's own
 * add; that total passed the level's budget check, so a peak never exceeds
 * a budget even while other threads' failing charges come and go.
 *
 * Allocation. Every byte the core hands out comes from sys_alloc: 64-byte
 * aligned (posix_memalign) so SIMD loops and Arrow consumers can rely on it,
 * and passing through the fault-injection counter set by
 * em_alloc_fail_after(), which lets tests fail the n-th allocation and prove
 * every EM_ERR_NOMEM path releases what it took. Sizes are charged before the
 * system allocation and refunded if it fails.
 *
 * Large blocks (EM_LARGE_BLOCK and up) are mapped pages of their own, kept
 * in a registry: growing one (em_pool_realloc) moves its pages with mremap
 * instead of copying its bytes into fresh ones, which a doubling hash table
 * or aggregation state would otherwise pay in copies and page faults on
 * every growth. The registry, not the size a caller passes, tells a mapped
 * block from a heap one when it is freed. Freed mappings, 64 MiB of them at
 * most, wait for the next large allocations rather than going back to the
 * system, so the next task's buffers need no fresh pages.
 *
 * Buffers. An em_buffer is a header plus bytes; the header's atomic refcount
 * lets columns and exported Arrow arrays share bytes. Owned buffers return
 * their capacity to the pool on the last unref; wrapped (foreign) buffers
 * call their release callback instead and are never grown.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "ember/memory.h"

struct em_pool {
    char *name;
    em_pool *parent;
    _Atomic int64_t used;
    _Atomic int64_t peak;
    _Atomic int64_t budget; /* < 0: unlimited */
    /* the host's grant (em_pool_set_grant): asked on the charging thread,
     * serialized by grant_lock so two charges do not both ask for the same bytes */
    em_pool_grant_fn grant;
    void *grant_ctx;
    int64_t grant_chunk;
    const char *grant_host; /* static */
    _Atomic int64_t granted;
    atomic_flag grant_lock;
};

/* Fault injection: counts down on every allocation; the allocation that
 * brings it from 1 to 0 fails. 0 means disarmed. */
static _Atomic int64_t fail_countdown;
static atomic_bool fail_fired;

void em_alloc_fail_after(int64_t n) {
    atomic_store(&fail_countdown, n > 0 ? n : 0);
    atomic_store(&fail_fired, false);
}

bool em_alloc_fail_triggered(void) { return atomic_load(&fail_fired); }

static bool inject_failure(void) {
    int64_t c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (c <= 0)
        return false;
    if (atomic_fetch_sub(&fail_countdown, 1) == 1) {
        atomic_store(&fail_fired, true);
        return true;
    }
    return false;
}

#define EM_LARGE_BLOCK ((int64_t)2 << 20)

/* The mapped blocks now live, and their mapped lengths. Few (a handful per
 * task), so a locked array is enough. */
static pthread_mutex_t large_lock = PTHREAD_MUTEX_INITIALIZER;
static struct large_block {
    void *p;
    size_t len;
} *large;
static size_t n_large, cap_large;

static size_t page_round(int64_t size) {
    size_t page = 4096;
    return ((size_t)size + page - 1) & ~(page - 1);
}

/* Index of p in the registry, or -1; large_lock held. */
static ptrdiff_t large_find(const void *p) {
    for (size_t i = 0; i < n_large; i++)
        if (large[i].p == p)
            return (ptrdiff_t)i;
    return -1;
}

static bool large_add(void *p, size_t len) {
    if (n_large == cap_large) {
        size_t cap = cap_large ? 2 * cap_large : 64;
        struct large_block *nl = realloc(large, cap * sizeof *nl);
        if (!nl)
            return false;
        large = nl;
        cap_large = cap;
    }
    large[n_large++] = (struct large_block){p, len};
    return true;
}

/* Freed mappings kept for the next large allocations, LARGE_CACHE bytes at
 * most (charged to no pool): one task's scan buffers, hash tables and
 * states are about as large as the previous task's, and a fresh page costs
 * a fault on first touch (a tenth of a join-heavy query's time). */
#define LARGE_CACHE ((size_t)64 << 20)
#define LARGE_CACHE_SLOTS 16
static struct large_block cached[LARGE_CACHE_SLOTS];
static size_t n_cached, cached_bytes, cache_limit = LARGE_CACHE;

void em_memory_set_cache_limit(int64_t bytes) {
    struct large_block drop[LARGE_CACHE_SLOTS];
    size_t n_drop = 0;
    pthread_mutex_lock(&large_lock);
    cache_limit = bytes < 0 ? 0 : (size_t)bytes;
    while (n_cached > 0 && cached_bytes > cache_limit) {
        drop[n_drop++] = cached[--n_cached];
        cached_bytes -= drop[n_drop - 1].len;
    }
    pthread_mutex_unlock(&large_lock);
    for (size_t i = 0; i < n_drop; i++)
        munmap(drop[i].p, drop[i].len);
}

/* A cached mapping of at least len bytes (the smallest such, if it is not
 * more than twice len), or NULL; large_lock held. *got is its length. */
static void *cache_take(size_t len, size_t *got) {
    size_t best = n_cached;
    for (size_t i = 0; i < n_cached; i++)
        if (cached[i].len >= len && cached[i].len <= 2 * len &&
            (best == n_cached || cached[i].len < cached[best].len))
            best = i;
    if (best == n_cached)
        return NULL;
    void *p = cached[best].p;
    *got = cached[best].len;
    cached_bytes -= cached[best].len;
    cached[best] = cached[--n_cached];
    return p;
}

static void *large_alloc(int64_t size) {
    size_t len = page_round(size), got = 0;
    pthread_mutex_lock(&large_lock);
    void *p = cache_take(len, &got);
    if (p && !large_add(p, got)) {
        munmap(p, got);
        p = NULL;
    }
    pthread_mutex_unlock(&large_lock);
    if (p)
        return p;
    /* a fresh mapping: the system call outside the lock */
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    pthread_mutex_lock(&large_lock);
    bool ok = large_add(p, len);
    pthread_mutex_unlock(&large_lock);
    if (!ok) {
        munmap(p, len);
        return NULL;
    }
    return p;
}

static void *sys_alloc(int64_t size) {
    if (size < 0 || inject_failure())
        return NULL;
    if (size >= EM_LARGE_BLOCK)
        return large_alloc(size);
    void *p = NULL;
    if (posix_memalign(&p, EM_ALIGNMENT, size > 0 ? (size_t)size : 1) != 0)
        return NULL;
    return p;
}

static void sys_free(void *p) {
    /* mapped blocks start on a page: most heap blocks need no look-up */
    if (((uintptr_t)p & 4095) != 0) {
        free(p);
        return;
    }
    pthread_mutex_lock(&large_lock);
    ptrdiff_t i = large_find(p);
    size_t len = 0;
    bool kept = false;
    if (i >= 0) {
        len = large[i].len;
        large[i] = large[--n_large];
        kept = n_cached < LARGE_CACHE_SLOTS && cached_bytes + len <= cache_limit;
        if (kept) {
            cached[n_cached++] = (struct large_block){p, len};
            cached_bytes += len;
        }
    }
    pthread_mutex_unlock(&large_lock);
    if (i < 0)
        free(p);
    else if (!kept)
        munmap(p, len);
}

/* Grows or shrinks mapped block p to at least size bytes in place or by
 * moving its pages; NULL (p untouched) when p is not mapped or the system
 * refuses. */
static void *large_resize(void *p, int64_t size) {
    size_t len = page_round(size);
    pthread_mutex_lock(&large_lock);
    ptrdiff_t i = large_find(p);
    void *q = NULL;
    if (i >= 0) {
        q = mremap(p, large[i].len, len, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) {
            q = NULL;
        } else {
            large[i].p = q;
            large[i].len = len;
        }
    }
    pthread_mutex_unlock(&large_lock);
    return q;
}

em_pool *em_pool_create(const char *name, em_pool *parent, int64_t budget) {
    em_pool *p = sys_alloc(sizeof *p);
    if (!p)
        return NULL;
    if (!name)
        name = "pool";
    size_t n = strlen(name);
    p->name = sys_alloc((int64_t)n + 1);
    if (!p->name) {
        free(p);
        return NULL;
    }
    memcpy(p->name, name, n + 1);
    p->parent = parent;
    atomic_init(&p->used, 0);
    atomic_init(&p->peak, 0);
    atomic_init(&p->budget, budget);
    p->grant = NULL;
    p->grant_ctx = NULL;
    p->grant_chunk = 0;
    p->grant_host = NULL;
    atomic_init(&p->granted, 0);
    atomic_flag_clear(&p->grant_lock);
    return p;
}

void em_pool_set_grant(em_pool *pool, em_pool_grant_fn grant, void *ctx, int64_t chunk,
                       const char *host) {
    if (!pool)
        return;
    pool->grant_host = host ? host : "the host's memory manager";
    pool->grant = grant;
    pool->grant_ctx = ctx;
    pool->grant_chunk = chunk > 0 ? chunk : 1;
}

int64_t em_pool_granted(const em_pool *pool) { return pool ? atomic_load(&pool->granted) : 0; }

int64_t em_pool_return_slack(em_pool *pool) {
    if (!pool || !pool->grant)
        return 0;
    while (atomic_flag_test_and_set(&pool->grant_lock)) {
    }
    int64_t slack = atomic_load(&pool->granted) - atomic_load(&pool->used);
    if (slack > 0)
        atomic_fetch_sub(&pool->granted, slack);
    atomic_flag_clear(&pool->grant_lock);
    return slack > 0 ? slack : 0;
}

/* Asks the host for enough to cover `now` bytes in use; true when covered. */
static bool grant_cover(em_pool *p, int64_t now) {
    while (atomic_flag_test_and_set(&p->grant_lock)) {
    }
    int64_t have = atomic_load(&p->granted);
    if (now > have) {
        int64_t want = now - have;
        want = (want + p->grant_chunk - 1) / p->grant_chunk * p->grant_chunk;
        int64_t got = p->grant(p->grant_ctx, want);
        if (got > 0)
            have = atomic_fetch_add(&p->granted, got) + got;
    }
    atomic_flag_clear(&p->grant_lock);
    return now <= have;
}

void em_pool_destroy(em_pool *pool) {
    if (!pool)
        return;
    /* Whatever is still charged (tolerated leaks) must not stay charged to
     * the ancestors, which outlive this pool. */
    int64_t left = atomic_load(&pool->used);
    if (left != 0 && pool->parent)
        em_pool_release(pool->parent, left);
    free(pool->name);
    free(pool);
}

const char *em_pool_name(const em_pool *pool) { return pool ? pool->name : "(unaccounted)"; }
int64_t em_pool_used(const em_pool *pool) { return pool ? atomic_load(&pool->used) : 0; }
int64_t em_pool_peak(const em_pool *pool) { return pool ? atomic_load(&pool->peak) : 0; }
double em_pool_ancestor_pressure(const em_pool *pool) {
    double worst = 0;
    for (const em_pool *p = pool ? pool->parent : NULL; p; p = p->parent) {
        int64_t b = atomic_load(&p->budget);
        if (b > 0) {
            double f = (double)atomic_load(&p->used) / (double)b;
            worst = f > worst ? f : worst;
        }
    }
    return worst;
}

int64_t em_pool_budget(const em_pool *pool) { return pool ? atomic_load(&pool->budget) : -1; }

int64_t em_pool_headroom(const em_pool *pool) {
    int64_t room = INT64_MAX;
    for (const em_pool *p = pool; p; p = p->parent) {
        int64_t b = atomic_load(&p->budget);
        int64_t left = b >= 0 ? b - atomic_load(&p->used) : INT64_MAX;
        if (left < room)
            room = left;
    }
    return room;
}

int64_t em_pool_limit(const em_pool *pool) {
    int64_t limit = -1;
    for (const em_pool *p = pool; p; p = p->parent) {
        int64_t b = atomic_load(&p->budget);
        if (b >= 0 && (limit < 0 || b < limit))
            limit = b;
    }
    return limit;
}
void em_pool_set_budget(em_pool *pool, int64_t budget) {
    if (pool)
        atomic_store(&pool->budget, budget);
}

static void raise_peak(em_pool *p, int64_t v) {
    int64_t cur = atomic_load(&p->peak);
    while (v > cur && !atomic_compare_exchange_weak(&p->peak, &cur, v)) {
    }
}

em_status em_pool_reserve(em_pool *pool, int64_t bytes, em_error *err) {
    if (bytes < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "negative reservation of %lld bytes", (long long)bytes);
    if (!pool || bytes == 0)
        return EM_OK;
    /* The level's total right after our own add: within budget when we pass
     * it, so it is a safe peak even if other threads' charges come and go. */
    int64_t after[16];
    int depth = 0;
    for (em_pool *p = pool; p; p = p->parent, depth++) {
        int64_t now = atomic_fetch_add(&p->used, bytes) + bytes;
        int64_t budget = atomic_load(&p->budget);
        if (p->grant && now > atomic_load(&p->granted) && !grant_cover(p, now)) {
            for (em_pool *q = pool; q != p->parent; q = q->parent)
                atomic_fetch_sub(&q->used, bytes);
            return EM_FAIL(err, EM_ERR_OOM_BUDGET,
                           "out of memory in pool '%s': %s granted %lld bytes, %lld needed (%lld "
                           "requested)",
                           p->name, p->grant_host, (long long)atomic_load(&p->granted),
                           (long long)now, (long long)bytes);
        }
        if (budget >= 0 && now > budget) {
            for (em_pool *q = pool; q != p->parent; q = q->parent)
                atomic_fetch_sub(&q->used, bytes);
            if (p == pool)
                return EM_FAIL(err, EM_ERR_OOM_BUDGET,
                               "out of memory in pool '%s': %lld bytes requested, %lld in use, "
                               "budget %lld (peak %lld)",
                               p->name, (long long)bytes, (long long)(now - bytes),
                               (long long)budget, (long long)atomic_load(&p->peak));
            return EM_FAIL(err, EM_ERR_OOM_BUDGET,
                           "out of memory in pool '%s' (charging %lld bytes for '%s'): %lld in "
                           "use, budget %lld (peak %lld)",
                           p->name, (long long)bytes, pool->name, (long long)(now - bytes),
                           (long long)budget, (long long)atomic_load(&p->peak));
        }
        if (depth < 16)
            after[depth] = now;
    }
    depth = 0;
    for (em_pool *p = pool; p; p = p->parent, depth++)
        raise_peak(p, depth < 16 ? after[depth] : atomic_load(&p->used));
    return EM_OK;
}

void em_pool_release(em_pool *pool, int64_t bytes) {
    if (bytes <= 0)
        return;
    for (em_pool *p = pool; p; p = p->parent)
        atomic_fetch_sub(&p->used, bytes);
}

void *em_pool_alloc(em_pool *pool, int64_t size, em_error *err) {
    if (size < 0) {
        EM_FAIL(err, EM_ERR_INVALID, "negative allocation size %lld", (long long)size);
        return NULL;
    }
    if (em_pool_reserve(pool, size, err) != EM_OK)
        return NULL;
    void *p = sys_alloc(size);
    if (!p) {
        em_pool_release(pool, size);
        EM_FAIL(err, EM_ERR_NOMEM, "out of memory allocating %lld bytes in pool '%s'",
                (long long)size, em_pool_name(pool));
    }
    return p;
}

void *em_pool_calloc(em_pool *pool, int64_t size, em_error *err) {
    void *p = em_pool_alloc(pool, size, err);
    if (p)
        memset(p, 0, (size_t)size);
    return p;
}

void *em_pool_realloc(em_pool *pool, void *p, int64_t old_size, int64_t new_size, em_error *err) {
    if (p && old_size >= EM_LARGE_BLOCK && new_size >= EM_LARGE_BLOCK) {
        int64_t more = new_size - old_size;
        if (more > 0 && em_pool_reserve(pool, more, err) != EM_OK)
            return NULL;
        if (inject_failure()) {
            if (more > 0)
                em_pool_release(pool, more);
            EM_FAIL(err, EM_ERR_NOMEM, "out of memory growing a block to %lld bytes in pool '%s'",
                    (long long)new_size, em_pool_name(pool));
            return NULL;
        }
        void *q = large_resize(p, new_size);
        if (q) {
            if (more < 0)
                em_pool_release(pool, -more);
            return q;
        }
        if (more > 0)
            em_pool_release(pool, more);
        /* not a mapped block after all, or no room to move it: copy it */
    }
    void *q = em_pool_alloc(pool, new_size, err);
    if (!q)
        return NULL;
    if (p) {
        int64_t keep = old_size < new_size ? old_size : new_size;
        if (keep > 0)
            memcpy(q, p, (size_t)keep);
        em_pool_free(pool, p, old_size);
    }
    return q;
}

void em_pool_free(em_pool *pool, void *p, int64_t size) {
    if (!p)
        return;
    sys_free(p);
    em_pool_release(pool, size);
}

em_status em_buffer_create(em_pool *pool, int64_t capacity, em_buffer **out, em_error *err) {
    *out = NULL;
    em_buffer *b = em_pool_alloc(NULL, sizeof *b, err);
    if (!b)
        return err ? err->code : EM_ERR_NOMEM;
    b->data = em_pool_alloc(pool, capacity, err);
    if (!b->data) {
        em_pool_free(NULL, b, 0);
        return err ? err->code : EM_ERR_NOMEM;
    }
    b->size = 0;
    b->capacity = capacity;
    b->pool = pool;
    atomic_init(&b->refcount, 1);
    b->release = NULL;
    b->private_data = NULL;
    *out = b;
    return EM_OK;
}

em_status em_buffer_wrap(void *data, int64_t size, void (*release)(em_buffer *), void *private_data,
                         em_buffer **out, em_error *err) {
    *out = NULL;
    em_buffer *b = em_pool_alloc(NULL, sizeof *b, err);
    if (!b)
        return err ? err->code : EM_ERR_NOMEM;
    b->data = data;
    b->size = size;
    b->capacity = size;
    b->pool = NULL;
    atomic_init(&b->refcount, 1);
    b->release = release;
    b->private_data = private_data;
    *out = b;
    return EM_OK;
}

em_status em_buffer_reserve(em_buffer *buf, int64_t min_capacity, em_error *err) {
    if (min_capacity <= buf->capacity)
        return EM_OK;
    if (buf->release)
        return EM_FAIL(err, EM_ERR_INVALID, "cannot grow a buffer that wraps foreign memory");
    /* Grow by half again, so repeated appends cost amortized O(1) copies. */
    int64_t cap = buf->capacity < 64 ? 64 : buf->capacity;
    while (cap < min_capacity)
        cap = cap <= INT64_MAX / 2 ? cap + cap / 2 : min_capacity;
    uint8_t *d = em_pool_realloc(buf->pool, buf->data, buf->capacity, cap, err);
    if (!d)
        return err ? err->code : EM_ERR_NOMEM;
    buf->data = d;
    buf->capacity = cap;
    return EM_OK;
}

em_buffer *em_buffer_ref(em_buffer *buf) {
    if (buf)
        atomic_fetch_add_explicit(&buf->refcount, 1, memory_order_relaxed);
    return buf;
}

void em_buffer_unref(em_buffer *buf) {
    if (!buf)
        return;
    if (atomic_fetch_sub_explicit(&buf->refcount, 1, memory_order_acq_rel) != 1)
        return;
    if (buf->release)
        buf->release(buf);
    else
        em_pool_free(buf->pool, buf->data, buf->capacity);
    em_pool_free(NULL, buf, 0);
}
