/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The accelerator task semaphore (see internal.h).
 *
 * Fairness is by ticket, not by wake-up: a waiter may take a permit only
 * when fewer than `limit - holders` waiters hold an older ticket, so the
 * oldest tasks get the native side first whatever order the condition
 * variable wakes threads in (spark-rapids' GpuSemaphore likewise serves
 * tasks in priority order rather than leaving it to the lock). Waiters poll
 * the cancel flag every few milliseconds, because em_query_cancel may run
 * in a signal handler where it cannot signal a condition variable.
 */
#include <stdlib.h>
#include <time.h>

#include "runtime/internal.h"

void em_rt_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    while (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

void em_rt_sem_init(rt_sem *s, int limit) {
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->limit = limit;
    s->holders = 0;
    s->max_holders = 0;
    s->waiting = NULL;
    s->n_waiting = s->cap_waiting = 0;
}

void em_rt_sem_destroy(rt_sem *s) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->waiting);
    s->waiting = NULL;
}

/* Waiters holding an older ticket than t. */
static int older_waiters(const rt_sem *s, int64_t t) {
    int n = 0;
    for (int i = 0; i < s->n_waiting; i++)
        n += s->waiting[i] < t;
    return n;
}

static void remove_waiter(rt_sem *s, int64_t t) {
    for (int i = 0; i < s->n_waiting; i++)
        if (s->waiting[i] == t) {
            s->waiting[i] = s->waiting[--s->n_waiting];
            return;
        }
}

em_status em_rt_sem_acquire(rt_sem *s, int64_t ticket, volatile int *cancel, int *holders,
                         em_error *err) {
    pthread_mutex_lock(&s->mu);
    if (s->limit <= 0) {
        int h = ++s->holders;
        if (h > s->max_holders)
            s->max_holders = h;
        *holders = h;
        pthread_mutex_unlock(&s->mu);
        return EM_OK;
    }
    if (s->n_waiting == s->cap_waiting) {
        int nc = s->cap_waiting ? s->cap_waiting * 2 : 16;
        int64_t *nw = realloc(s->waiting, sizeof *nw * (size_t)nc);
        if (!nw) {
            pthread_mutex_unlock(&s->mu);
            return EM_FAIL(err, EM_ERR_NOMEM, "out of memory waiting for the task semaphore");
        }
        s->waiting = nw;
        s->cap_waiting = nc;
    }
    s->waiting[s->n_waiting++] = ticket;
    while (s->holders + older_waiters(s, ticket) >= s->limit) {
        if (cancel && *cancel) {
            remove_waiter(s, ticket);
            pthread_cond_broadcast(&s->cv); /* a younger waiter may now be first */
            pthread_mutex_unlock(&s->mu);
            return EM_FAIL(err, EM_ERR_CANCELLED, "task cancelled waiting for the task semaphore");
        }
        em_rt_cond_wait_ms(&s->cv, &s->mu, 10);
    }
    remove_waiter(s, ticket);
    int h = ++s->holders;
    if (h > s->max_holders)
        s->max_holders = h;
    *holders = h;
    /* with several permits free, the next ticket may go too */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return EM_OK;
}

void em_rt_sem_release(rt_sem *s) {
    pthread_mutex_lock(&s->mu);
    if (s->holders > 0)
        s->holders--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void em_rt_sem_wake(rt_sem *s) {
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
