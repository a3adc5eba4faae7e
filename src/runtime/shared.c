/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Objects built once per query from a broadcast relation (see internal.h).
 *
 * The entry is created under the cache's lock by the first caller, which
 * then builds outside the lock so that other keys are not held up; callers
 * of the same entry wait on its condition variable. A waiter also wakes
 * every few milliseconds to notice a cancelled query: the builder may be a
 * long hash-table build that does not poll the flag, and a cancelled task
 * must not sit behind it. A failed build stays failed: every later caller
 * gets the builder's error (the query is failing anyway).
 *
 * Helping. The tasks waiting for an entry have nothing else to do, so the
 * builder may post work items (em_par.for_each) on the entry: waiters take
 * items one at a time, under the lock only to pick and to report, and the
 * builder takes them too, then waits until the last item taken by anyone
 * has returned before it goes on. A waiter that arrives after the items are
 * gone simply waits, as without helping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

typedef enum { SH_BUILDING, SH_READY, SH_FAILED } sh_state;

typedef struct sh_entry {
    const void *key;
    char *what;
    sh_state state;
    void *obj;
    void (*free_obj)(void *obj);
    em_pool *pool;
    em_status status;
    em_error err;
    pthread_cond_t cv;
    struct sh_entry *next;
    /* work posted by the builder for waiters (job_fn NULL: none) */
    em_par_fn job_fn;
    void *job_arg;
    int64_t job_n, job_next, job_done;
    em_status job_status;
    em_error job_err;
} sh_entry;

struct rt_shared {
    pthread_mutex_t mu;
    em_pool *parent;
    int width;
    sh_entry *entries;
    int64_t builds;
};

/* The em_par a builder gets: its entry in its cache. */
typedef struct sh_par {
    em_par par;
    rt_shared *c;
    sh_entry *e;
} sh_par;

/* Runs the entry's next item; called and returns with c->mu held. */
static void help_one(rt_shared *c, sh_entry *e) {
    int64_t i = e->job_next++;
    em_par_fn fn = e->job_fn;
    void *arg = e->job_arg;
    pthread_mutex_unlock(&c->mu);
    em_error ierr;
    memset(&ierr, 0, sizeof ierr);
    em_status s = fn(arg, i, &ierr);
    pthread_mutex_lock(&c->mu);
    e->job_done++;
    if (s != EM_OK && e->job_status == EM_OK) {
        e->job_status = s;
        e->job_err = ierr;
        /* the items nobody started are skipped: count them done */
        e->job_done += e->job_n - e->job_next;
        e->job_next = e->job_n;
    }
    if (e->job_done == e->job_n)
        pthread_cond_broadcast(&e->cv);
}

static em_status par_for_each(em_par *par, int64_t n, em_par_fn fn, void *arg, em_error *err) {
    sh_par *p = (sh_par *)par;
    rt_shared *c = p->c;
    sh_entry *e = p->e;
    pthread_mutex_lock(&c->mu);
    e->job_fn = fn;
    e->job_arg = arg;
    e->job_n = n;
    e->job_next = e->job_done = 0;
    e->job_status = EM_OK;
    pthread_cond_broadcast(&e->cv); /* wake the waiters: there is work */
    while (e->job_next < e->job_n)
        help_one(c, e);
    while (e->job_done < e->job_n)
        em_rt_cond_wait_ms(&e->cv, &c->mu, 20);
    em_status s = e->job_status;
    if (s != EM_OK)
        *err = e->job_err;
    e->job_fn = NULL;
    pthread_mutex_unlock(&c->mu);
    return s;
}

em_status em_rt_shared_create(em_pool *parent, int width, rt_shared **out, em_error *err) {
    rt_shared *c = calloc(1, sizeof *c);
    if (!c)
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory creating the broadcast cache");
    pthread_mutex_init(&c->mu, NULL);
    c->parent = parent;
    c->width = width > 0 ? width : 1;
    *out = c;
    return EM_OK;
}

static void entry_free(sh_entry *e) {
    if (e->obj && e->free_obj)
        e->free_obj(e->obj);
    em_pool_destroy(e->pool);
    pthread_cond_destroy(&e->cv);
    free(e->what);
    free(e);
}

em_status em_rt_shared_get(rt_shared *c, const void *key, const char *key_name, const char *what,
                        const em_batch_list *rel, rt_shared_build_fn build,
                        void (*free_obj)(void *obj), void *arg, volatile int *cancel, void **out,
                        bool *built, em_error *err) {
    *out = NULL;
    *built = false;
    pthread_mutex_lock(&c->mu);
    sh_entry *e = c->entries;
    while (e && !(e->key == key && strcmp(e->what, what) == 0))
        e = e->next;
    if (e) {
        while (e->state == SH_BUILDING && !(cancel && *cancel)) {
            if (e->job_fn && e->job_next < e->job_n)
                help_one(c, e);
            else
                em_rt_cond_wait_ms(&e->cv, &c->mu, 20);
        }
        em_status s = EM_OK;
        if (e->state == SH_READY)
            *out = e->obj;
        else if (e->state == SH_FAILED) {
            *err = e->err;
            s = e->status;
        } else
            s = EM_FAIL(err, EM_ERR_CANCELLED, "task cancelled waiting for %s", key_name);
        pthread_mutex_unlock(&c->mu);
        return s;
    }
    e = calloc(1, sizeof *e);
    char pool_name[160];
    snprintf(pool_name, sizeof pool_name, "%s (shared build)", key_name);
    if (e) {
        e->what = strdup(what);
        e->pool = em_pool_create(pool_name, c->parent, -1);
    }
    if (!e || !e->what || !e->pool) {
        if (e) {
            free(e->what);
            em_pool_destroy(e->pool);
            free(e);
        }
        pthread_mutex_unlock(&c->mu);
        return EM_FAIL(err, EM_ERR_NOMEM, "out of memory sharing %s", key_name);
    }
    pthread_cond_init(&e->cv, NULL);
    e->key = key;
    e->state = SH_BUILDING;
    e->next = c->entries;
    c->entries = e;
    c->builds++;
    pthread_mutex_unlock(&c->mu);
    *built = true;

    void *obj = NULL;
    em_error berr;
    memset(&berr, 0, sizeof berr);
    sh_par par = {{c->width, par_for_each}, c, e};
    em_status s = build(arg, rel, e->pool, c->width > 1 ? &par.par : NULL, &obj, &berr);

    pthread_mutex_lock(&c->mu);
    if (s == EM_OK) {
        e->obj = obj;
        e->free_obj = free_obj;
        e->state = SH_READY;
        *out = obj;
    } else {
        if (obj && free_obj)
            free_obj(obj);
        e->status = s;
        e->err = berr;
        if (!e->err.msg[0])
            snprintf(e->err.msg, sizeof e->err.msg, "%s", em_status_name(s));
        e->err.code = s;
        em_error_prefix(&e->err, "building over %s", key_name);
        e->state = SH_FAILED;
        *err = e->err;
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&c->mu);
    return s;
}

void em_rt_shared_release(rt_shared *c, const void *key) {
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    sh_entry **pp = &c->entries;
    while (*pp) {
        sh_entry *e = *pp;
        if (e->key == key && e->state != SH_BUILDING) {
            *pp = e->next;
            entry_free(e);
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

int64_t em_rt_shared_builds(rt_shared *c) {
    pthread_mutex_lock(&c->mu);
    int64_t n = c->builds;
    pthread_mutex_unlock(&c->mu);
    return n;
}

void em_rt_shared_destroy(rt_shared *c) {
    if (!c)
        return;
    while (c->entries) {
        sh_entry *e = c->entries;
        c->entries = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}
