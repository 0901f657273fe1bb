/* SPDX-License-Identifier: MIT */
/*
 * Quantized matmul: y[i, r] = x[i, :] . W[r, :].
 *
 * Each activation row is quantized once into W's activation format; then the
 * weight rows are split into tasks on the context's thread pool. A task runs
 * the dispatched kernel over its rows: the packed GEMM when the weights were
 * packed, else GEMM for several activation rows, else GEMV, else vec_dot per
 * row (one runner per kernel, chosen when the registry loads it:
 * kernel_rows.h). Kernels compute every output row independently of how rows are
 * grouped, so the result does not depend on the thread count. Without a
 * kernel: the codec's reference dot, or decode + f32 dot. F32, F16 and BF16
 * weights (no codec) run a backend's (F32|F16|BF16, F32) kernel on the f32
 * activations as given (dispatch.h: dispatch_float), or decode + f32 dot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "ctx.h"
#include "error.h"
#include "log.h"
#include "thread_pool.h"

struct anvil_weights {
    anvil_ctx *ctx; /* retained */
    uint32_t type;
    const void *data;
    size_t n_rows, k, row_bytes;
    unsigned flags;
    const anvil_codec *codec; /* NULL for f32/f16/bf16 */
    const dispatch_rec *d;
    const dispatch_float *f; /* F32 / F16 / BF16 weights' kernel, or NULL */
    void *packed;            /* backend's packed copy, or NULL */
};

typedef struct geometry {
    uint32_t be, bb;
    const char *name;
} geometry;

static int geometry_of(const anvil_ctx *ctx, uint32_t type, geometry *g, anvil_error *err) {
    anvil_type_info t;
    int rc = anvil_type_lookup(ctx, type, &t, err);
    if (rc != ANVIL_OK) return rc;
    g->be = t.block_elems;
    g->bb = t.block_bytes;
    g->name = t.name;
    return ANVIL_OK;
}

/* The geometry of a type whose codec (when it has one) the dispatch record
 * already holds: the built-in table for ggml's ids (what anvil_type_lookup
 * answers for them), the codec for third-party ids; no registry walk. */
static int geometry_from(uint32_t type, const codec_rec *c, geometry *g, anvil_error *err) {
    if (type < ANVIL_TYPE_THIRD_PARTY_FIRST || c == NULL) {
        anvil_type_info t;
        int rc = anvil_type_builtin(type, &t, err);
        if (rc != ANVIL_OK) return rc;
        g->be = t.block_elems;
        g->bb = t.block_bytes;
        g->name = t.name;
    } else {
        g->be = c->codec.block_elems;
        g->bb = c->codec.block_bytes;
        g->name = c->codec.name;
    }
    return ANVIL_OK;
}

static int checked_bytes(const geometry *g, size_t k, size_t *out, anvil_error *err) {
    if (k % g->be != 0) {
        return anvil__error_set(err, ANVIL_E_BLOCK_MISMATCH,
                                "%s: row length %zu is not a whole number of %u-element blocks", g->name, k, g->be);
    }
    if (k / g->be > SIZE_MAX / g->bb) return anvil__error_set(err, ANVIL_E_OVERFLOW, "%s: row too long", g->name);
    *out = k / g->be * g->bb;
    return ANVIL_OK;
}

/* ---- prepared weights --------------------------------------------------- */

ANVIL_API int anvil_weights_prepare(anvil_ctx *ctx, uint32_t type, const void *data, size_t n_rows, size_t k,
                                    unsigned flags, anvil_weights **out, anvil_error *err) {
    anvil__error_clear(err);
    if (out == NULL || ctx == NULL)
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_weights_prepare: NULL argument");
    *out = NULL;
    if (data == NULL && n_rows > 0) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "weights: NULL data");
    /* One look-up: a loaded codec has a dispatch record, which holds the
     * codec, the kernel and the activation format. */
    const int is_float = type == ANVIL_TYPE_F32 || type == ANVIL_TYPE_F16 || type == ANVIL_TYPE_BF16;
    const dispatch_rec *d = is_float ? NULL : anvil__dispatch_find(ctx, type);
    const anvil_codec *codec = d != NULL ? &d->codec->codec : NULL;
    geometry g;
    int rc = d != NULL || is_float ? geometry_from(type, d ? d->codec : NULL, &g, err)
                                   : geometry_of(ctx, type, &g, err);
    if (rc != ANVIL_OK) return rc;
    size_t row_bytes = 0;
    rc = checked_bytes(&g, k, &row_bytes, err);
    if (rc != ANVIL_OK) return rc;
    if (n_rows > 0 && row_bytes > SIZE_MAX / n_rows)
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "weights too large");
    if (!is_float && d == NULL) {
        /* No codec loaded for it: the message says which plugin to load. */
        rc = anvil__codec_for(ctx, type, &codec, err);
        if (rc != ANVIL_OK) return rc;
        return anvil__error_set(err, ANVIL_E_INTERNAL, "%s: no dispatch record", codec->name);
    }
    anvil_weights *w = calloc(1, sizeof *w);
    if (w == NULL) return anvil__nomem(err);
    w->ctx = anvil_ctx_retain(ctx);
    w->type = type;
    w->data = data;
    w->n_rows = n_rows;
    w->k = k;
    w->row_bytes = row_bytes;
    w->flags = flags;
    w->codec = codec;
    w->d = d;
    w->f = anvil__dispatch_table_float(&ctx->dispatch, type);
    if (w->f != NULL && w->f->kernel == NULL) w->f = NULL;
    if ((flags & ANVIL_WEIGHTS_PACK) && d != NULL && d->kernel != NULL && d->kernel->pack != NULL && n_rows > 0) {
        const size_t size = d->kernel->packed_size(k, n_rows);
        if (size > 0) {
            w->packed = malloc(size);
            if (w->packed == NULL) {
                anvil_weights_free(w);
                return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for a %zu-byte packed copy", size);
            }
            rc = d->kernel->pack(data, row_bytes, k, n_rows, w->packed, size);
            if (rc != ANVIL_OK) {
                anvil_weights_free(w);
                return anvil__error_set(err, rc < 0 ? rc : ANVIL_E_INTERNAL, "%s: backend '%s' failed to pack",
                                        codec->name, d->backend->backend.name);
            }
        }
    }
    *out = w;
    return ANVIL_OK;
}

ANVIL_API void anvil_weights_free(anvil_weights *w) {
    if (w == NULL) return;
    free(w->packed);
    anvil_ctx_close(w->ctx);
    free(w);
}

ANVIL_API int anvil_weights_packed(const anvil_weights *w) { return w != NULL && w->packed != NULL; }

/* ---- the work ----------------------------------------------------------- */

typedef struct job {
    const anvil_weights *w;
    anvil__rows_fn rows;   /* the kernel's runner, the packed GEMM or the reference dot */
    anvil__rows_call call; /* its operands */
    const float *x;
    size_t m;
    float *y;
    size_t rows_per_task;
    int decode;      /* decode + f32 dot */
    float **scratch; /* per-task decode rows (decode path) */
} job;

/* Dot of two f32 rows with a double accumulator: the fallback path favours
 * accuracy and determinism over speed. */
static float dot_f32(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += (double)a[i] * (double)b[i];
    return (float)s;
}

static void decode_row(const anvil_weights *w, const void *src, float *dst) {
    if (w->codec != NULL) {
        w->codec->decode(src, dst, w->k);
        return;
    }
    const unsigned char *s = src;
    for (size_t i = 0; i < w->k; ++i) {
        if (w->type == ANVIL_TYPE_F32) {
            memcpy(&dst[i], s + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = w->type == ANVIL_TYPE_F16 ? anvil_fp16_to_fp32(h) : anvil_bf16_to_fp32(h);
        }
    }
}

static void run_task(void *arg, size_t task) {
    job *j = arg;
    const anvil_weights *w = j->w;
    const size_t r0 = task * j->rows_per_task;
    size_t r1 = r0 + j->rows_per_task;
    if (r1 > w->n_rows) r1 = w->n_rows;
    if (j->decode) {
        const size_t n = w->n_rows;
        float *row = j->scratch[task];
        for (size_t r = r0; r < r1; ++r) {
            decode_row(w, (const char *)w->data + r * w->row_bytes, row);
            for (size_t i = 0; i < j->m; ++i) j->y[i * n + r] = dot_f32(row, j->x + i * w->k, w->k);
        }
        return;
    }
    j->rows(&j->call, r0, r1);
}

/* Backend quantizers only: the codec's encoder (which can refuse a row)
 * runs on the calling thread, row by row, to say which row it refused. */
typedef struct quant_job {
    const anvil_act_quantizer *quantizer;
    const float *x;
    size_t k;
    void *act;
    size_t act_bytes;
} quant_job;

static void quantize_task(void *arg, size_t i) {
    quant_job *q = arg;
    q->quantizer->quantize(q->x + i * q->k, (char *)q->act + i * q->act_bytes, q->k);
}

static int matmul_on(anvil_ctx *ctx, anvil_pool *pool, const anvil_weights *w, const float *x, size_t m, float *y,
                     anvil_error *err);

ANVIL_API int anvil_matmul_prepared(anvil_ctx *ctx, const anvil_weights *w, const float *x, size_t m, float *y,
                                    anvil_error *err) {
    anvil__error_clear(err);
    if (ctx == NULL || w == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_matmul: NULL argument");
    if ((x == NULL && m > 0) || (y == NULL && m > 0 && w->n_rows > 0)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_matmul: NULL buffer");
    }
    if (w->n_rows == 0 || m == 0) return ANVIL_OK;
    if (m > SIZE_MAX / w->n_rows || m > SIZE_MAX / (w->k ? w->k : 1)) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "matmul: %zu x %zu output overflows", m, w->n_rows);
    }
    anvil_pool *pool = anvil__ctx_pool_acquire(ctx);
    const int rc = matmul_on(ctx, pool, w, x, m, y, err);
    anvil__ctx_pool_release(ctx, pool);
    return rc;
}

static int matmul_on(anvil_ctx *ctx, anvil_pool *pool, const anvil_weights *w, const float *x, size_t m, float *y,
                     anvil_error *err) {
    const dispatch_rec *d = w->d;
    const unsigned threads = pool ? anvil__pool_threads(pool) : 1;

    job j = { .w = w, .x = x, .m = m, .y = y };
    j.call = (anvil__rows_call){ .k = w->k,
                                 .n = w->n_rows,
                                 .m = m,
                                 .y = y,
                                 .w = w->data,
                                 .row_bytes = w->row_bytes,
                                 .act = x,
                                 .act_bytes = w->k * sizeof(float) };
    void *act_buf = NULL;
    if (w->f != NULL) {
        j.rows = w->f->kernel_rows;
        j.call.vec_dot = w->f->kernel->vec_dot;
        j.call.gemv = w->f->kernel->gemv;
        j.call.gemm = w->f->kernel->gemm;
    } else if (d == NULL || (d->fallback && w->codec->ref_vec_dot == NULL)) {
        j.decode = 1;
        if (d != NULL) {
            pthread_mutex_lock(&ctx->lock);
            if (!d->warned) {
                ((dispatch_rec *)d)->warned = 1;
                anvil__log(ANVIL_LOG_INFO, NULL, "%s: %s", w->codec->name, d->note);
            }
            pthread_mutex_unlock(&ctx->lock);
        }
    } else {
        if (w->packed != NULL) {
            j.rows = anvil__rows_packed;
            j.call.gemm_packed = d->kernel->gemm_packed;
            j.call.packed = w->packed;
        } else if (d->kernel != NULL) {
            j.rows = d->kernel_rows;
            j.call.vec_dot = d->kernel->vec_dot;
            j.call.gemv = d->kernel->gemv;
            j.call.gemm = d->kernel->gemm;
        } else {
            j.rows = anvil__rows_vec_dot;
            j.call.vec_dot = w->codec->ref_vec_dot;
        }
        if (d->act_type != ANVIL_TYPE_F32) {
            geometry ag;
            int rc = geometry_from(d->act_type, d->act_codec, &ag, err);
            if (rc == ANVIL_OK) rc = checked_bytes(&ag, w->k, &j.call.act_bytes, err);
            if (rc != ANVIL_OK) {
                anvil__error_prefix(err, "%s activations", w->codec->name);
                return rc;
            }
            if (d->quantizer == NULL && (d->act_codec == NULL || d->act_codec->codec.encode == NULL)) {
                return anvil__error_set(err, ANVIL_E_NO_KERNEL, "%s: nothing quantizes activations to %s",
                                        w->codec->name, ag.name);
            }
            const size_t act_bytes = j.call.act_bytes;
            if (m > SIZE_MAX / act_bytes) return anvil__error_set(err, ANVIL_E_OVERFLOW, "activations overflow");
            act_buf = malloc(m * act_bytes);
            if (act_buf == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for activations");
            if (d->quantizer == NULL) {
                /* The codec's encoder refuses NaN/Inf: say which row. */
                for (size_t i = 0; i < m; ++i) {
                    char msg[512] = "";
                    int rc2 = d->act_codec->codec.encode(x + i * w->k, (char *)act_buf + i * act_bytes, w->k, msg,
                                                         sizeof msg);
                    if (rc2 != ANVIL_OK) {
                        free(act_buf);
                        return anvil__error_set(err, rc2, "%s activations, row %zu: %s", w->codec->name, i, msg);
                    }
                }
            } else {
                quant_job q = { d->quantizer, x, w->k, act_buf, act_bytes };
                anvil__pool_run(pool, m, quantize_task, &q);
            }
            j.call.act = act_buf;
        }
    }

    /* Split rows: ~4 tasks per thread for balance, whole packed groups. */
    size_t per = (w->n_rows + 4 * (size_t)threads - 1) / (4 * (size_t)threads);
    if (per < 16) per = 16;
    if (w->packed != NULL && d->kernel->pack_rows > 1) {
        const size_t g = d->kernel->pack_rows;
        per = (per + g - 1) / g * g;
    }
    j.rows_per_task = per;
    const size_t n_tasks = (w->n_rows + per - 1) / per;
    if (j.decode) {
        j.scratch = calloc(n_tasks, sizeof *j.scratch);
        int ok = j.scratch != NULL;
        for (size_t t = 0; ok && t < n_tasks; ++t)
            ok = (j.scratch[t] = malloc((w->k ? w->k : 1) * sizeof(float))) != NULL;
        if (!ok) {
            for (size_t t = 0; j.scratch && t < n_tasks; ++t) free(j.scratch[t]);
            free(j.scratch);
            free(act_buf);
            return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for decode rows");
        }
    }
    anvil__pool_run(pool, n_tasks, run_task, &j);
    if (j.scratch != NULL) {
        for (size_t t = 0; t < n_tasks; ++t) free(j.scratch[t]);
        free(j.scratch);
    }
    free(act_buf);
    return ANVIL_OK;
}

ANVIL_API int anvil_matmul(anvil_ctx *ctx, uint32_t type, const void *w, size_t n_rows, size_t k, const float *x,
                           size_t m, float *y, anvil_error *err) {
    anvil_weights *pw = NULL;
    int rc = anvil_weights_prepare(ctx, type, w, n_rows, k, ANVIL_WEIGHTS_TRANSIENT, &pw, err);
    if (rc != ANVIL_OK) return rc;
    rc = anvil_matmul_prepared(ctx, pw, x, m, y, err);
    anvil_weights_free(pw);
    return rc;
}
