/* SPDX-License-Identifier: MIT */
/*
 * The forward pass's element-wise steps as ggml computes them:
 *  - RMSNorm: the sum of squares in double, scale = 1/sqrtf(mean + eps) in
 *    float, then times the weight (ggml_rms_norm, ggml_mul).
 *  - RoPE: ggml's rope cache: theta = pos, multiplied by
 *    powf(freq_base, -2/n_rot) per pair in float, divided by the pair's
 *    rope_freqs factor, times freq_scale; cosf/sinf; NORM rotates (2i, 2i+1),
 *    NEOX (i, i + n_rot/2); dimensions past n_rot are left as they are.
 *  - Attention per head and query: scores q.k in float, times 1/sqrt(hd),
 *    the causal mask (keys after the query left out), the softmax with its
 *    maximum in float and the sum of expf in double (ggml_soft_max_ext),
 *    then the weighted sum of V. GQA: query head h reads KV head
 *    h / (n_head / n_head_kv). Tasks: one per head and block of queries,
 *    on the context's threads; the result does not depend on their number.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "error.h"
#include "model_internal.h"

float mdl_round_f16(float x) { return anvil_fp16_to_fp32(anvil_fp32_to_fp16(x)); }

void mdl_rms_norm(const float *x, size_t n, size_t d, float eps, const float *w, float *out) {
    for (size_t i = 0; i < n; ++i) {
        const float *xi = x + i * d;
        float *yi = out + i * d;
        double sum = 0.0;
        for (size_t j = 0; j < d; ++j) sum += (double)(xi[j] * xi[j]);
        const float mean = (float)(sum / (double)d);
        const float scale = 1.0f / sqrtf(mean + eps);
        for (size_t j = 0; j < d; ++j) yi[j] = xi[j] * scale;
        if (w != NULL) {
            for (size_t j = 0; j < d; ++j) yi[j] *= w[j];
        }
    }
}

void mdl_rope(const anvil_model *m, float *x, size_t n, uint32_t n_heads) {
    const uint32_t hd = m->info.head_dim, nr = m->n_rot;
    const float theta_scale = powf(m->freq_base, -2.0f / (float)nr);
    float cache[2 * 1024];
    if (nr > 1024) return; /* refused at open (head_dim is checked) */
    for (size_t p = 0; p < n; ++p) {
        float theta = (float)p;
        for (uint32_t i0 = 0; i0 < nr; i0 += 2) {
            const float ff = m->rope_freqs ? m->rope_freqs[i0 / 2] : 1.0f;
            const float t = m->freq_scale * (theta / ff);
            cache[i0] = cosf(t);
            cache[i0 + 1] = sinf(t);
            theta *= theta_scale;
        }
        for (uint32_t h = 0; h < n_heads; ++h) {
            float *v = x + (p * n_heads + h) * hd;
            for (uint32_t i0 = 0; i0 < nr; i0 += 2) {
                const float c = cache[i0], s = cache[i0 + 1];
                const uint32_t a = m->rope_type == MDL_ROPE_NEOX ? i0 / 2 : i0;
                const uint32_t b = m->rope_type == MDL_ROPE_NEOX ? i0 / 2 + nr / 2 : i0 + 1;
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * c - x1 * s;
                v[b] = x0 * s + x1 * c;
            }
        }
    }
}

typedef struct attn_job {
    const anvil_model *m;
    const float *q, *k, *v;
    float *out;
    size_t n, block, n_blocks;
    int failed;
} attn_job;

static void attn_row(const attn_job *j, uint32_t h, size_t i, float *s) {
    const anvil_model_info *in = &j->m->info;
    const uint32_t hd = in->head_dim, hkv = h / (in->n_head / in->n_head_kv);
    const size_t qs = (size_t)in->n_head * hd, ks = (size_t)in->n_head_kv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const float *q = j->q + i * qs + (size_t)h * hd;
    float max = -INFINITY;
    for (size_t t = 0; t <= i; ++t) {
        const float *k = j->k + t * ks + (size_t)hkv * hd;
        float dot = 0.0f;
        for (uint32_t d = 0; d < hd; ++d) dot += q[d] * k[d];
        s[t] = dot * scale;
        if (s[t] > max) max = s[t];
    }
    double sum = 0.0;
    for (size_t t = 0; t <= i; ++t) {
        s[t] = expf(s[t] - max);
        sum += (double)s[t];
    }
    const float inv = (float)(1.0 / sum);
    float *o = j->out + i * qs + (size_t)h * hd;
    memset(o, 0, hd * sizeof *o);
    for (size_t t = 0; t <= i; ++t) {
        const float p = s[t] * inv;
        const float *v = j->v + t * ks + (size_t)hkv * hd;
        for (uint32_t d = 0; d < hd; ++d) o[d] += p * v[d];
    }
}

static void attn_task(void *arg, size_t task) {
    attn_job *j = arg;
    const uint32_t h = (uint32_t)(task / j->n_blocks);
    const size_t b = task % j->n_blocks;
    float *s = malloc(j->n * sizeof *s);
    if (s == NULL) {
        j->failed = 1;
        return;
    }
    const size_t i1 = (b + 1) * j->block < j->n ? (b + 1) * j->block : j->n;
    for (size_t i = b * j->block; i < i1; ++i) attn_row(j, h, i, s);
    free(s);
}

int mdl_attention(anvil_model *m, const float *q, const float *k, const float *v, size_t n, float *out,
                  anvil_error *err) {
    attn_job j = { .m = m, .q = q, .k = k, .v = v, .out = out, .n = n, .block = 32 };
    j.n_blocks = (n + j.block - 1) / j.block;
    int rc = anvil_ctx_run_tasks(m->ctx, (size_t)m->info.n_head * j.n_blocks, attn_task, &j);
    if (rc != ANVIL_OK) return anvil__error_set(err, rc, "attention: the thread pool failed");
    if (j.failed) return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for attention scores");
    return ANVIL_OK;
}
