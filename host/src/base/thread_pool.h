/* SPDX-License-Identifier: MIT */
/* Internal: a persistent pool of worker threads. */
#ifndef ANVIL_HOST_THREAD_POOL_H
#define ANVIL_HOST_THREAD_POOL_H

#include <stddef.h>

typedef struct anvil_pool anvil_pool;

/* A job: called once per task index in [0, n_tasks), from any thread. */
typedef void (*anvil_pool_fn)(void *arg, size_t task);

/* Start a pool of n_threads (the caller counts as one: n_threads - 1 workers
 * are created). NULL on failure. */
anvil_pool *anvil__pool_create(unsigned n_threads);
void anvil__pool_destroy(anvil_pool *pool);
unsigned anvil__pool_threads(const anvil_pool *pool);

/* Run fn over n_tasks tasks and return when all are done. The calling
 * thread works too. Calls are serialised: one job at a time per pool. */
void anvil__pool_run(anvil_pool *pool, size_t n_tasks, anvil_pool_fn fn, void *arg);

#endif
