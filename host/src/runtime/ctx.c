/* SPDX-License-Identifier: MIT */
/* Context lifecycle and the reports `anvil plugins` prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu_probe.h"
#include "ctx.h"
#include "error.h"
#include "log.h"
#include "registry.h"
#include "thread_pool.h"
#include "trust.h"

static int open_impl(anvil_ctx **out, const char *config_path, int keep_going, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_ctx_open: out is NULL");
    *out = NULL;
    char path[4096];
    const char *source = "from --config";
    if (config_path == NULL || *config_path == '\0') {
        if (anvil__config_default_path(path, sizeof path, &source) != 0) {
            return anvil__error_set(err, ANVIL_E_IO, "%s; pass --config FILE or set ANVIL_CONFIG", path);
        }
    } else {
        snprintf(path, sizeof path, "%s", config_path);
    }
    anvil_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) return anvil__nomem(err);
    ctx->refs = 1;
    pthread_mutex_init(&ctx->lock, NULL);
    int rc = anvil__config_load(path, &ctx->cfg, err);
    if (rc != ANVIL_OK) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return rc;
    }
    ctx->cfg.source = source;
    snprintf(ctx->insecure_why, sizeof ctx->insecure_why, "[plugins] allow_insecure = yes at %s:%d", ctx->cfg.path,
             ctx->cfg.allow_insecure_line);
    ctx->cpu = anvil__cpu_probe();
    const char *mw = anvil__cpu_mask_warnings();
    if (mw[0] != '\0') anvil__log(ANVIL_LOG_WARN, NULL, "%s", mw);
    ctx->reg.cfg = &ctx->cfg;
    ctx->reg.cpu = ctx->cpu;
    rc = anvil__registry_load(&ctx->reg, keep_going, err);
    if (rc == ANVIL_OK) rc = anvil__dispatch_build(&ctx->dispatch, &ctx->reg, err);
    if (rc != ANVIL_OK) {
        anvil_ctx_close(ctx);
        return rc;
    }
    ctx->threads = ctx->cfg.threads ? ctx->cfg.threads : ctx->cpu->n_cpus;
    *out = ctx;
    return ANVIL_OK;
}

ANVIL_API int anvil_ctx_open(anvil_ctx **out, const char *config_path, anvil_error *err) {
    return open_impl(out, config_path, 0, err);
}

ANVIL_API int anvil_ctx_open_ex(anvil_ctx **out, const char *config_path, unsigned flags, anvil_error *err) {
    return open_impl(out, config_path, (flags & ANVIL_CTX_KEEP_GOING) != 0, err);
}

ANVIL_API anvil_ctx *anvil_ctx_retain(anvil_ctx *ctx) {
    if (ctx != NULL) {
        pthread_mutex_lock(&ctx->lock);
        ctx->refs++;
        pthread_mutex_unlock(&ctx->lock);
    }
    return ctx;
}

ANVIL_API void anvil_ctx_close(anvil_ctx *ctx) {
    if (ctx == NULL) return;
    pthread_mutex_lock(&ctx->lock);
    const int left = --ctx->refs;
    pthread_mutex_unlock(&ctx->lock);
    if (left > 0) return;
    anvil__pool_destroy(ctx->pool);
    anvil__dispatch_free(&ctx->dispatch);
    anvil__registry_unload(&ctx->reg);
    anvil__config_free(&ctx->cfg);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

/* ---- the thread pool the context owns, created on first use ------------- */

/* Matmuls on one context may run from many threads: each holds the pool
 * while it runs (anvil__pool_run serialises jobs), and a new thread count
 * (anvil_ctx_set_threads) replaces the pool only once nobody holds it. */
anvil_pool *anvil__ctx_pool_acquire(anvil_ctx *ctx) {
    pthread_mutex_lock(&ctx->lock);
    if (ctx->pool != NULL && ctx->pool_users == 0 && anvil__pool_threads(ctx->pool) != ctx->threads) {
        anvil__pool_destroy(ctx->pool);
        ctx->pool = NULL;
    }
    if (ctx->pool == NULL && ctx->threads > 1) ctx->pool = anvil__pool_create(ctx->threads);
    anvil_pool *p = ctx->pool;
    if (p != NULL) ctx->pool_users++;
    pthread_mutex_unlock(&ctx->lock);
    return p;
}

void anvil__ctx_pool_release(anvil_ctx *ctx, anvil_pool *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&ctx->lock);
    ctx->pool_users--;
    pthread_mutex_unlock(&ctx->lock);
}

ANVIL_API int anvil_ctx_run_tasks(anvil_ctx *ctx, size_t n_tasks, anvil_task_fn fn, void *arg) {
    if (ctx == NULL || fn == NULL) return ANVIL_E_INVALID_ARG;
    anvil_pool *pool = anvil__ctx_pool_acquire(ctx);
    if (pool != NULL) {
        anvil__pool_run(pool, n_tasks, fn, arg);
        anvil__ctx_pool_release(ctx, pool);
    } else { /* one thread (or no pool could start): the caller runs them */
        for (size_t t = 0; t < n_tasks; ++t) fn(arg, t);
    }
    return ANVIL_OK;
}

ANVIL_API const anvil_cpu_info *anvil_ctx_cpu(const anvil_ctx *ctx) { return ctx ? ctx->cpu : anvil__cpu_probe(); }

ANVIL_API const char *anvil_ctx_config_path(const anvil_ctx *ctx) { return ctx ? ctx->cfg.path : NULL; }

ANVIL_API unsigned anvil_ctx_threads(const anvil_ctx *ctx) {
    if (ctx == NULL) return 1;
    anvil_ctx *c = (anvil_ctx *)ctx; /* the lock is not part of the context's value */
    pthread_mutex_lock(&c->lock);
    const unsigned n = c->threads;
    pthread_mutex_unlock(&c->lock);
    return n;
}

ANVIL_API void anvil_ctx_set_threads(anvil_ctx *ctx, unsigned threads) {
    if (ctx == NULL) return;
    pthread_mutex_lock(&ctx->lock);
    ctx->threads = threads ? threads : ctx->cpu->n_cpus;
    pthread_mutex_unlock(&ctx->lock);
}

ANVIL_API const anvil_codec *anvil_ctx_codec(const anvil_ctx *ctx, uint32_t type_id) {
    const codec_rec *c = anvil__registry_find_codec(ctx ? &ctx->reg : NULL, type_id);
    return c ? &c->codec : NULL;
}

ANVIL_API size_t anvil_ctx_plugin_count(const anvil_ctx *ctx) { return ctx ? ctx->reg.n_plugins : 0; }

ANVIL_API int anvil_ctx_plugin_report(const anvil_ctx *ctx, size_t i, anvil_plugin_report *out) {
    if (ctx == NULL || out == NULL || i >= ctx->reg.n_plugins) return ANVIL_E_INVALID_ARG;
    const plugin_rec *p = &ctx->reg.plugins[i];
    out->name = p->name;
    out->path = p->path;
    out->status = p->status;
    out->reason = p->status != ANVIL_OK ? p->reason : NULL;
    out->desc = (p->status == ANVIL_OK && p->lib != NULL) ? &p->desc : NULL;
    out->optional = p->optional;
    out->config_line = p->line;
    out->trust_note = p->trust_note[0] != '\0' ? p->trust_note : NULL;
    return ANVIL_OK;
}

ANVIL_API int anvil_ctx_config_report(const anvil_ctx *ctx, anvil_config_report *out) {
    if (ctx == NULL || out == NULL) return ANVIL_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->path = ctx->cfg.path;
    out->source = ctx->cfg.source;
    if (ctx->cfg.insecure_env) {
        out->insecure = 1;
        out->insecure_why = ANVIL_INSECURE_ENV " is set in the environment";
    } else if (ctx->cfg.allow_insecure) {
        out->insecure = 1;
        out->insecure_why = ctx->insecure_why;
    }
    out->config_note = ctx->cfg.trust_note[0] != '\0' ? ctx->cfg.trust_note : NULL;
    return ANVIL_OK;
}

ANVIL_API size_t anvil_ctx_backend_count(const anvil_ctx *ctx) { return ctx ? ctx->reg.n_backends : 0; }

ANVIL_API int anvil_ctx_backend_report(const anvil_ctx *ctx, size_t i, anvil_backend_report *out) {
    if (ctx == NULL || out == NULL || i >= ctx->reg.n_backends) return ANVIL_E_INVALID_ARG;
    const backend_rec *b = &ctx->reg.backends[i];
    out->name = b->backend.name;
    out->plugin = ctx->reg.plugins[b->plugin].desc.id;
    out->score = b->score;
    out->why = b->why;
    out->backend = &b->backend;
    out->n_kernels = b->n_kernels;
    out->kernels = b->kernels;
    out->n_quantizers = b->n_quantizers;
    out->quantizers = b->quantizers;
    return ANVIL_OK;
}

ANVIL_API size_t anvil_ctx_dispatch_count(const anvil_ctx *ctx) { return ctx ? ctx->dispatch.n : 0; }

ANVIL_API int anvil_ctx_dispatch_report(const anvil_ctx *ctx, size_t i, anvil_dispatch_report *out) {
    if (ctx == NULL || out == NULL || i >= ctx->dispatch.n) return ANVIL_E_INVALID_ARG;
    const dispatch_rec *d = &ctx->dispatch.recs[i];
    out->weight_type = d->weight_type;
    out->act_type = d->act_type;
    out->backend = d->backend ? d->backend->backend.name : NULL;
    out->variant = d->kernel ? d->kernel->variant : NULL;
    out->quantizer_backend = d->quantizer_backend ? d->quantizer_backend->backend.name
                                                  : (d->act_type == ANVIL_TYPE_F32 ? "none (f32)" : "codec");
    out->fallback = d->fallback;
    out->note = d->note;
    return ANVIL_OK;
}

ANVIL_API int anvil_ctx_encoder_report(const anvil_ctx *ctx, size_t i, anvil_encoder_report *out) {
    if (ctx == NULL || out == NULL || i >= ctx->dispatch.n) return ANVIL_E_INVALID_ARG;
    const dispatch_rec *d = &ctx->dispatch.recs[i];
    out->type_id = d->weight_type;
    out->backend = d->encoder_backend ? d->encoder_backend->backend.name : NULL;
    out->variant = d->encoder ? d->encoder->variant : NULL;
    out->weighted_backend = d->weighted_backend ? d->weighted_backend->backend.name : NULL;
    out->note = d->encoder_note;
    return ANVIL_OK;
}

ANVIL_API int anvil_ctx_backend_encoders(const anvil_ctx *ctx, size_t i, const anvil_weight_encoder **encoders,
                                         size_t *n) {
    if (ctx == NULL || encoders == NULL || n == NULL || i >= ctx->reg.n_backends) return ANVIL_E_INVALID_ARG;
    *encoders = ctx->reg.backends[i].encoders;
    *n = ctx->reg.backends[i].n_encoders;
    return ANVIL_OK;
}

const dispatch_rec *anvil__dispatch_find(const anvil_ctx *ctx, uint32_t weight_type) {
    return anvil__dispatch_table_find(ctx ? &ctx->dispatch : NULL, weight_type);
}

ANVIL_API int anvil_ctx_find_kernel(const anvil_ctx *ctx, const char *backend, uint32_t weight_type,
                                    const anvil_kernel **kernel, const anvil_act_quantizer **quantizer,
                                    anvil_error *err) {
    return anvil__dispatch_find_kernel(ctx ? &ctx->dispatch : NULL, ctx ? &ctx->reg : NULL, backend, weight_type,
                                       kernel, quantizer, err);
}

ANVIL_API int anvil_ctx_find_encoder(const anvil_ctx *ctx, const char *backend, uint32_t type,
                                     const anvil_weight_encoder **encoder, anvil_error *err) {
    return anvil__dispatch_find_encoder(ctx ? &ctx->dispatch : NULL, ctx ? &ctx->reg : NULL, backend, type, encoder,
                                        err);
}
