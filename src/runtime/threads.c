/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker threads of one query. A job is n independent tasks; workers
 * take the next index of the oldest job that still has one, under the lock,
 * and run it outside the lock, so tasks of uneven length balance themselves
 * and a stage with fewer tasks than threads leaves the other threads to the
 * stages running beside it. The submitting thread only submits and waits: a
 * task never submits work, so the pool cannot deadlock on itself.
 *
 * Invariants: a job is on the list from submit until em_rt_threads_wait hands
 * it back; `next` only grows; a job is finished when `finished` reaches n,
 * which the worker that completes its last task signals.
 */
#include <stdlib.h>

#include "runtime/internal.h"

struct rt_threads {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work;
    pthread_cond_t done;
    rt_job *jobs; /* submitted, not yet handed back; oldest first */
    bool stop;
};

static rt_job *job_with_work(rt_threads *t) {
    for (rt_job *j = t->jobs; j; j = j->link)
        if (j->next < j->n)
            return j;
    return NULL;
}

static void *worker(void *p) {
    rt_threads *t = p;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        rt_job *j;
        while (!t->stop && !(j = job_with_work(t)))
            pthread_cond_wait(&t->work, &t->mu);
        if (t->stop)
            break;
        int i = j->next++;
        pthread_mutex_unlock(&t->mu);
        j->fn(j->arg, i);
        pthread_mutex_lock(&t->mu);
        if (++j->finished == j->n)
            pthread_cond_broadcast(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

em_status em_rt_threads_create(int n_threads, rt_threads **out, em_error *err) {
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
            em_rt_threads_destroy(t);
            return EM_FAIL(err, EM_ERR_INTERNAL, "cannot start worker thread %d of %d", i + 1,
                           n_threads);
        }
        t->n_threads++;
    }
    *out = t;
    return EM_OK;
}

void em_rt_threads_submit(rt_threads *t, rt_job *job) {
    job->next = 0;
    job->finished = 0;
    job->link = NULL;
    pthread_mutex_lock(&t->mu);
    rt_job **tail = &t->jobs;
    while (*tail)
        tail = &(*tail)->link;
    *tail = job;
    pthread_cond_broadcast(&t->work);
    pthread_mutex_unlock(&t->mu);
}

rt_job *em_rt_threads_wait(rt_threads *t) {
    pthread_mutex_lock(&t->mu);
    rt_job *found = NULL;
    while (t->jobs && !found) {
        for (rt_job **pj = &t->jobs; *pj; pj = &(*pj)->link)
            if ((*pj)->finished >= (*pj)->n) {
                found = *pj;
                *pj = found->link;
                break;
            }
        if (!found)
            pthread_cond_wait(&t->done, &t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return found;
}

void em_rt_threads_run(rt_threads *t, void (*fn)(void *arg, int i), void *arg, int n) {
    if (n <= 0)
        return;
    rt_job job = {fn, arg, n, 0, 0, NULL};
    em_rt_threads_submit(t, &job);
    while (em_rt_threads_wait(t) != &job) {
    }
}

void em_rt_threads_destroy(rt_threads *t) {
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
