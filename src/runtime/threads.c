/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker threads of one query. A job is n independent tasks; workers
 * take the next index under the lock and run it outside the lock, so tasks of
 * uneven length balance themselves. The submitting thread only waits: a task
 * never submits work, so the pool cannot deadlock on itself.
 *
 * Invariants: at most one job at a time (the runtime runs stages one after
 * another); `next` only grows within a job; the job is over when `finished`
 * reaches n, which the last finishing worker signals.
 */
#include <stdlib.h>

#include "runtime/internal.h"

struct rt_threads {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work;
    pthread_cond_t done;
    void (*fn)(void *arg, int i);
    void *arg;
    int n, next, finished;
    bool stop;
};

static void *worker(void *p) {
    rt_threads *t = p;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->stop && t->next >= t->n)
            pthread_cond_wait(&t->work, &t->mu);
        if (t->stop)
            break;
        int i = t->next++;
        void (*fn)(void *, int) = t->fn;
        void *arg = t->arg;
        pthread_mutex_unlock(&t->mu);
        fn(arg, i);
        pthread_mutex_lock(&t->mu);
        if (++t->finished == t->n)
            pthread_cond_signal(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

em_status rt_threads_create(int n_threads, rt_threads **out, em_error *err) {
    *out = NULL;
    if (n_threads < 1)
        n_threads = 1;
    rt_threads *t = calloc(1, sizeof *t);
    if (!t || !(t->threads = calloc((size_t)n_threads, sizeof *t->threads))) {
        free(t);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating worker threads");
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->work, NULL);
    pthread_cond_init(&t->done, NULL);
    for (int i = 0; i < n_threads; i++) {
        if (pthread_create(&t->threads[i], NULL, worker, t) != 0) {
            rt_threads_destroy(t);
            return EM_FAIL(err, EM_ERR_INTERNAL, "cannot start worker thread %d of %d", i + 1,
                           n_threads);
        }
        t->n_threads++;
    }
    *out = t;
    return EM_OK;
}

void rt_threads_run(rt_threads *t, void (*fn)(void *arg, int i), void *arg, int n) {
    if (n <= 0)
        return;
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->arg = arg;
    t->finished = 0;
    t->next = 0;
    t->n = n;
    pthread_cond_broadcast(&t->work);
    while (t->finished < t->n)
        pthread_cond_wait(&t->done, &t->mu);
    t->n = 0;
    t->next = 0;
    pthread_mutex_unlock(&t->mu);
}

void rt_threads_destroy(rt_threads *t) {
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_broadcast(&t->work);
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < t->n_threads; i++)
        pthread_join(t->threads[i], NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->work);
    pthread_cond_destroy(&t->done);
    free(t->threads);
    free(t);
}
