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
 *    K is transposed once per call (per KV head: dimension-major) so that
 *    the scores of many keys are computed side by side, for 4 queries per
 *    pass over K and V; both sums run in a fixed order (over d for q.k,
 *    over t for the V sum) of exactly rounded fmaf steps, so the result is
 *    the same on every CPU tier (base, AVX2, AVX-512F).
 *  - mdl_round_f16_rows: F16 round trips, F16C where the CPU has it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/numeric.h"
#include "cpu_probe.h"
#include "error.h"
#include "model_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTN_X86 1
#else
#define ATTN_X86 0
#endif

float mdl_round_f16(float x) { return anvil_fp16_to_fp32(anvil_fp32_to_fp16(x)); }

#if ATTN_X86
#include <immintrin.h>
/* F16C rounds to nearest even as anvil_fp32_to_fp16 does; a NaN stays a
 * NaN (its payload may differ; it is a NaN either way after the round trip). */
__attribute__((target("avx,f16c"))) static size_t round_f16_f16c(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    return i;
}
#endif

void mdl_round_f16_rows(const float *x, float *y, size_t n) {
    size_t i = 0;
#if ATTN_X86
    if (anvil__cpu_probe()->features & ANVIL_CPU_F16C) i = round_f16_f16c(x, y, n);
#endif
    for (; i < n; ++i) y[i] = mdl_round_f16(x[i]);
}

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

#define ATTN_G 4 /* queries per group: K and V are read once for the group */

typedef struct attn_job {
    const anvil_model *m;
    const float *q, *k, *v;
    float *kt; /* K per KV head transposed: [n_head_kv][head_dim][np], zero past n */
    float *out;
    size_t n, np, block, n_blocks;
    void (*scores)(const float *const *q, const float *kt, size_t np, uint32_t hd, size_t nk, float *const *s);
    void (*wsum)(const float *const *p, const size_t *nk, const float *v, size_t ks, uint32_t hd, float *const *o);
    int failed;
} attn_job;

/* The two loops of attention for ATTN_G queries at a time, each sum in a
 * fixed order (q.k over d, the weighted V over t, one fmaf a step), with
 * independent lanes the compiler vectorizes: scores for 32 (then 16) keys
 * of every query of the group, the V sum for 32 (then 16, then 1)
 * dimensions. fmaf is exactly rounded, so the tiers below (the same
 * source compiled for wider vectors) give the same bits, and a query's
 * result does not depend on the group it is in. Scores are computed up to
 * the group's longest row (16 keys rounded up; the extra ones are never
 * read); the V sum of each query stops at its own last key. */
#define ATTN_SCORES(W)                                                                \
    for (; t0 + (W) <= nk; t0 += (W)) {                                               \
        float acc[ATTN_G][W];                                                         \
        memset(acc, 0, sizeof acc);                                                   \
        for (uint32_t d = 0; d < hd; ++d) {                                           \
            const float *kd = kt + d * np + t0;                                       \
            for (int g = 0; g < ATTN_G; ++g) {                                        \
                const float qd = q[g][d];                                             \
                for (int l = 0; l < (W); ++l) acc[g][l] = fmaf(qd, kd[l], acc[g][l]); \
            }                                                                         \
        }                                                                             \
        for (int g = 0; g < ATTN_G; ++g) memcpy(s[g] + t0, acc[g], sizeof acc[g]);    \
    }
#define ATTN_WSUM(W)                                                                  \
    for (; d0 + (W) <= hd; d0 += (W)) {                                               \
        float acc[ATTN_G][W];                                                         \
        memset(acc, 0, sizeof acc);                                                   \
        size_t t = 0;                                                                 \
        for (; t < n0; ++t) {                                                         \
            const float *vt = v + t * ks + d0;                                        \
            for (int g = 0; g < ATTN_G; ++g) {                                        \
                const float pt = p[g][t];                                             \
                for (int l = 0; l < (W); ++l) acc[g][l] = fmaf(pt, vt[l], acc[g][l]); \
            }                                                                         \
        }                                                                             \
        for (; t < n1; ++t) {                                                         \
            const float *vt = v + t * ks + d0;                                        \
            for (int g = 0; g < ATTN_G; ++g) {                                        \
                if (t >= nk[g]) continue;                                             \
                const float pt = p[g][t];                                             \
                for (int l = 0; l < (W); ++l) acc[g][l] = fmaf(pt, vt[l], acc[g][l]); \
            }                                                                         \
        }                                                                             \
        for (int g = 0; g < ATTN_G; ++g) memcpy(o[g] + d0, acc[g], sizeof acc[g]);    \
    }
#define ATTN_KERNELS(SUFFIX, ATTR)                                                                                  \
    ATTR static void scores_##SUFFIX(const float *const *q, const float *kt, size_t np, uint32_t hd, size_t nk,     \
                                     float *const *s) {                                                             \
        size_t t0 = 0;                                                                                              \
        nk = (nk + 15) / 16 * 16;                                                                                   \
        ATTN_SCORES(32)                                                                                             \
        ATTN_SCORES(16)                                                                                             \
    }                                                                                                               \
    ATTR static void wsum_##SUFFIX(const float *const *p, const size_t *nk, const float *v, size_t ks, uint32_t hd, \
                                   float *const *o) {                                                               \
        size_t n0 = nk[0], n1 = nk[0];                                                                              \
        for (int g = 1; g < ATTN_G; ++g) {                                                                          \
            n0 = nk[g] < n0 ? nk[g] : n0;                                                                           \
            n1 = nk[g] > n1 ? nk[g] : n1;                                                                           \
        }                                                                                                           \
        uint32_t d0 = 0;                                                                                            \
        ATTN_WSUM(32)                                                                                               \
        ATTN_WSUM(16)                                                                                               \
        ATTN_WSUM(1)                                                                                                \
    }

ATTN_KERNELS(base, )
#if ATTN_X86
ATTN_KERNELS(avx2, __attribute__((target("avx2,fma"))))
ATTN_KERNELS(avx512, __attribute__((target("avx512f,fma"))))
#endif

/* Softmax of one query's scores s[0..nk) in place: times 1/sqrt(hd), the
 * maximum in float, expf, the sum in double, then divided by it. */
static void softmax_row(float *s, size_t nk, float scale) {
    /* the maximum in 16 lanes (it vectorizes; a maximum has one value
     * whatever the order, NaN left out as by the scalar compare) */
    float lane[16];
    for (int l = 0; l < 16; ++l) lane[l] = -INFINITY;
    size_t t = 0;
    for (; t + 16 <= nk; t += 16) {
        for (int l = 0; l < 16; ++l) {
            const float x = s[t + l] * scale;
            s[t + l] = x;
            lane[l] = x > lane[l] ? x : lane[l];
        }
    }
    for (; t < nk; ++t) {
        s[t] *= scale;
        lane[0] = s[t] > lane[0] ? s[t] : lane[0];
    }
    float max = lane[0];
    for (int l = 1; l < 16; ++l) max = lane[l] > max ? lane[l] : max;
    double sum = 0.0;
    for (t = 0; t < nk; ++t) {
        s[t] = expf(s[t] - max);
        sum += (double)s[t];
    }
    const float inv = (float)(1.0 / sum);
    for (t = 0; t < nk; ++t) s[t] *= inv;
}

/* Queries [i0, i1) (at most ATTN_G) of head h; a group of fewer repeats its
 * last query into the spare row of s and out_spare. */
static void attn_group(const attn_job *j, uint32_t h, size_t i0, size_t i1, float *s, float *out_spare) {
    const anvil_model_info *in = &j->m->info;
    const uint32_t hd = in->head_dim, hkv = h / (in->n_head / in->n_head_kv);
    const size_t qs = (size_t)in->n_head * hd, ks = (size_t)in->n_head_kv * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const float *qg[ATTN_G];
    float *sg[ATTN_G], *og[ATTN_G];
    size_t nk[ATTN_G];
    for (size_t g = 0; g < ATTN_G; ++g) {
        const size_t i = i0 + g < i1 ? i0 + g : i1 - 1;
        qg[g] = j->q + i * qs + (size_t)h * hd;
        sg[g] = s + (i0 + g < i1 ? g : ATTN_G) * j->np;
        og[g] = i0 + g < i1 ? j->out + i * qs + (size_t)h * hd : out_spare;
        nk[g] = i + 1;
    }
    j->scores(qg, j->kt + (size_t)hkv * hd * j->np, j->np, hd, i1, sg);
    for (size_t g = 0; g < ATTN_G; ++g) {
        if (i0 + g < i1) softmax_row(sg[g], nk[g], scale);
    }
    if (i1 - i0 < ATTN_G) memcpy(sg[ATTN_G - 1], sg[i1 - i0 - 1], nk[ATTN_G - 1] * sizeof *s);
    j->wsum((const float *const *)sg, nk, j->v + (size_t)hkv * hd, ks, hd, og);
}

static void attn_task(void *arg, size_t task) {
    attn_job *j = arg;
    const uint32_t h = (uint32_t)(task / j->n_blocks);
    const size_t b = task % j->n_blocks;
    /* ATTN_G + 1 score rows, then a spare output row */
    float *s = malloc(((ATTN_G + 1) * j->np + j->m->info.head_dim) * sizeof *s);
    if (s == NULL) {
        j->failed = 1;
        return;
    }
    const size_t i1 = (b + 1) * j->block < j->n ? (b + 1) * j->block : j->n;
    for (size_t i = b * j->block; i < i1; i += ATTN_G) {
        attn_group(j, h, i, i + ATTN_G < i1 ? i + ATTN_G : i1, s, s + (ATTN_G + 1) * j->np);
    }
    free(s);
}

int mdl_attention(anvil_model *m, const float *q, const float *k, const float *v, size_t n, float *out,
                  anvil_error *err) {
    const anvil_model_info *in = &m->info;
    const size_t hd = in->head_dim, nkv = in->n_head_kv, ks = nkv * hd;
    attn_job j = { .m = m, .q = q, .k = k, .v = v, .out = out, .n = n, .block = 32 };
    j.np = (n + 63) / 64 * 64;
    j.n_blocks = (n + j.block - 1) / j.block;
    if (j.np < n || (ks != 0 && j.np > SIZE_MAX / sizeof(float) / ks)) {
        return anvil__error_set(err, ANVIL_E_OVERFLOW, "attention: keys of %zu tokens overflow", n);
    }
    j.kt = calloc(j.np * ks + 1, sizeof *j.kt);
    if (j.kt == NULL) return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for attention keys");
    for (size_t t = 0; t < n; ++t) {
        for (size_t c = 0; c < ks; ++c) j.kt[c * j.np + t] = k[t * ks + c];
    }
    j.scores = scores_base;
    j.wsum = wsum_base;
#if ATTN_X86
    const uint64_t f = anvil__cpu_probe()->features;
    if ((f & ANVIL_CPU_AVX512F) && (f & ANVIL_CPU_FMA)) {
        j.scores = scores_avx512;
        j.wsum = wsum_avx512;
    } else if ((f & ANVIL_CPU_AVX2) && (f & ANVIL_CPU_FMA)) {
        j.scores = scores_avx2;
        j.wsum = wsum_avx2;
    }
#endif
    int rc = anvil_ctx_run_tasks(m->ctx, (size_t)in->n_head * j.n_blocks, attn_task, &j);
    free(j.kt);
    if (rc != ANVIL_OK) return anvil__error_set(err, rc, "attention: the thread pool failed");
    if (j.failed) return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory for attention scores");
    return ANVIL_OK;
}
