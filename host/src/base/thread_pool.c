/* SPDX-License-Identifier: MIT */
/*
 * Persistent worker pool. Workers sleep on a condition variable between
 * jobs; a job hands out task indices through an atomic counter, so uneven
 * tasks balance themselves. Which thread runs a task never changes a result:
 * tasks write disjoint outputs.
 */
#include "thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct anvil_pool {
    unsigned n_threads;
    pthread_t *workers;
    pthread_mutex_t lock;     /* guards the job fields and generation */
    pthread_cond_t wake;      /* a new job (or shutdown) is posted */
    pthread_cond_t done;      /* the last worker finished the job */
    pthread_mutex_t run_lock; /* serialises anvil__pool_run callers */
    unsigned long generation;
    int shutdown;
    anvil_pool_fn fn;
    void *arg;
    size_t n_tasks;
    atomic_size_t next;
    unsigned active; /* workers still inside the current job */
};

static void drain(anvil_pool *p, anvil_pool_fn fn, void *arg, size_t n_tasks) {
    for (;;) {
        size_t t = atomic_fetch_add(&p->next, 1);
        if (t >= n_tasks) break;
        fn(arg, t);
    }
}

static void *worker(void *vp) {
    anvil_pool *p = vp;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->shutdown && p->generation == seen) pthread_cond_wait(&p->wake, &p->lock);
        if (p->shutdown) break;
        seen = p->generation;
        anvil_pool_fn fn = p->fn;
        void *arg = p->arg;
        size_t n = p->n_tasks;
        pthread_mutex_unlock(&p->lock);
        drain(p, fn, arg, n);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

anvil_pool *anvil__pool_create(unsigned n_threads) {
    if (n_threads == 0) n_threads = 1;
    anvil_pool *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->workers = calloc(n_threads, sizeof *p->workers);
    if (p->workers == NULL) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    p->n_threads = 1;
    for (unsigned i = 1; i < n_threads; ++i) {
        if (pthread_create(&p->workers[i], NULL, worker, p) != 0) break;
        p->n_threads++;
    }
    return p;
}

unsigned anvil__pool_threads(const anvil_pool *pool) { return pool ? pool->n_threads : 1; }

void anvil__pool_run(anvil_pool *p, size_t n_tasks, anvil_pool_fn fn, void *arg) {
    if (n_tasks == 0) return;
    if (p == NULL || p->n_threads == 1 || n_tasks == 1) {
        for (size_t t = 0; t < n_tasks; ++t) fn(arg, t);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    p->active = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    drain(p, fn, arg, n_tasks);

    pthread_mutex_lock(&p->lock);
    while (p->active > 0) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->run_lock);
}

void anvil__pool_destroy(anvil_pool *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&p->lock);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 1; i < p->n_threads; ++i) pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    free(p->workers);
    free(p);
}
