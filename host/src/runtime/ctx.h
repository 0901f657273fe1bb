/* SPDX-License-Identifier: MIT */
/* Internal: what a context holds -- its config, the registry and the
 * dispatch table (each owning its state, registry.h, dispatch.h), the
 * thread pool -- and the lookups that go through a context. */
#ifndef ANVIL_HOST_CTX_H
#define ANVIL_HOST_CTX_H

#include <pthread.h>
#include <stddef.h>

#include "anvil/anvil.h"
#include "config.h"
#include "dispatch.h"
#include "registry.h"

struct anvil_ctx {
    int refs;
    anvil_config cfg;
    const anvil_cpu_info *cpu;
    anvil_registry reg;            /* plugins, codecs, backends (registry.c) */
    anvil_dispatch_table dispatch; /* per weight type (dispatch.c) */
    unsigned threads;              /* guarded by lock */
    struct anvil_pool *pool;       /* workers (matmul), created on first use */
    unsigned pool_users;           /* matmuls running on it (guarded by lock) */
    pthread_mutex_t lock;
    char insecure_why[4200]; /* text behind anvil_config_report.insecure_why */
};

/* ctx.c: the dispatch record of a weight type in this context, or NULL. */
const dispatch_rec *anvil__dispatch_find(const anvil_ctx *ctx, uint32_t weight_type);
/* type_lookup.c: the codec of a type, or an error saying which plugin to load. */
int anvil__codec_for(const anvil_ctx *ctx, uint32_t type, const anvil_codec **out, anvil_error *err);
/* ctx.c: the context's worker pool at its current thread count, held until
 * released; NULL when the context runs on one thread. */
struct anvil_pool *anvil__ctx_pool_acquire(anvil_ctx *ctx);
void anvil__ctx_pool_release(anvil_ctx *ctx, struct anvil_pool *pool);

#endif
