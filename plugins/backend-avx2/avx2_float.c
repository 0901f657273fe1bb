/* SPDX-License-Identifier: MIT */
/*
 * backend-avx2: F32, F16 and BF16 weights against f32 activations -- vec_dot,
 * 4-row GEMV and a blocked GEMM (3 weight rows x 2 activation rows per
 * register tile, the weights of a tile read once for 24 activation rows).
 *
 * Contract: BIT-IDENTICAL to the referee plugins/ref/float_dot.h (16 lanes
 * per dot, a fixed reduction tree). Here a 16-lane accumulator is two
 * 8-lane ones: lanes 0..7 take elements 16t + 0..7, lanes 8..15 take
 * 16t + 8..15 (F16); for BF16, chunk elements 0..15 and 16..31 (the pairs
 * of lanes 0..7 and 8..15).
 *  - F16: vcvtph2ps + vfmadd231ps on the activations as given.
 *  - F32: vfmadd231ps, the lanes as F16's.
 *  - BF16: vdpbf16ps's arithmetic emulated (no AVX2 instruction has it):
 *    activations rounded to bf16, per pair the odd element's FMA then the
 *    even one's, DAZ on the inputs and FTZ on each result, as the referee.
 * A row's last partial chunk is copied into a zero-padded buffer (the
 * referee pads with zeros).
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "avx2_kernels.h"

#define FINLINE static inline __attribute__((always_inline))
#define F_TILE_R 3
#define F_TILE_C 2
#define F_BLOCK_C 24
#define F_GEMV_R 4

/* The referee's reduction tree over lanes (lo 0..7, hi 8..15). */
FINLINE float f_sum(__m256 lo, __m256 hi) {
    const __m256 h = _mm256_add_ps(lo, hi);
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

/* ---- F16: 16-element steps ------------------------------------------------ */

FINLINE __m256 f16_load(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* One 16-element step at w (R rows, stride ws) and a (C rows, stride as). */
FINLINE void f16_step(const uint8_t *w, size_t ws, const float *a, size_t as, __m256 acc[][F_TILE_C][2], const int R,
                      const int C) {
    for (int h = 0; h < 2; ++h) {
        __m256 av[F_TILE_C];
        for (int c = 0; c < C; ++c) av[c] = _mm256_loadu_ps(a + (size_t)c * as + 8 * h);
        for (int r = 0; r < R; ++r) {
            const __m256 wv = f16_load(w + (size_t)r * ws + 16 * h);
            for (int c = 0; c < C; ++c) acc[r][c][h] = _mm256_fmadd_ps(wv, av[c], acc[r][c][h]);
        }
    }
}

FINLINE void f16_tile(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,
                      const int R, const int C) {
    __m256 acc[F_GEMV_R][F_TILE_C][2];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) f16_step(w + 2 * i, ws, a + i, as, acc, R, C);
    if (i < n) {
        uint8_t wt[F_GEMV_R][32] = { { 0 } };
        float at[F_TILE_C][16] = { { 0 } };
        for (int r = 0; r < R; ++r) memcpy(wt[r], w + (size_t)r * ws + 2 * i, 2 * (n - i));
        for (int c = 0; c < C; ++c) memcpy(at[c], a + (size_t)c * as + i, sizeof(float) * (n - i));
        f16_step(&wt[0][0], 32, &at[0][0], 16, acc, R, C);
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) y[(size_t)c * ys + r] = f_sum(acc[r][c][0], acc[r][c][1]);
}

/* ---- F32: 16-element steps, the lanes of F16 ---------------------------- */

FINLINE void f32_step(const uint8_t *w, size_t ws, const float *a, size_t as, __m256 acc[][F_TILE_C][2], const int R,
                      const int C) {
    for (int h = 0; h < 2; ++h) {
        __m256 av[F_TILE_C];
        for (int c = 0; c < C; ++c) av[c] = _mm256_loadu_ps(a + (size_t)c * as + 8 * h);
        for (int r = 0; r < R; ++r) {
            const __m256 wv = _mm256_loadu_ps((const float *)(const void *)(w + (size_t)r * ws + 32 * h));
            for (int c = 0; c < C; ++c) acc[r][c][h] = _mm256_fmadd_ps(wv, av[c], acc[r][c][h]);
        }
    }
}

FINLINE void f32_tile(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,
                      const int R, const int C) {
    __m256 acc[F_GEMV_R][F_TILE_C][2];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) f32_step(w + 4 * i, ws, a + i, as, acc, R, C);
    if (i < n) {
        uint8_t wt[F_GEMV_R][64] = { { 0 } };
        float at[F_TILE_C][16] = { { 0 } };
        for (int r = 0; r < R; ++r) memcpy(wt[r], w + (size_t)r * ws + 4 * i, 4 * (n - i));
        for (int c = 0; c < C; ++c) memcpy(at[c], a + (size_t)c * as + i, sizeof(float) * (n - i));
        f32_step(&wt[0][0], 64, &at[0][0], 16, acc, R, C);
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) y[(size_t)c * ys + r] = f_sum(acc[r][c][0], acc[r][c][1]);
}

/* ---- BF16: 32-element steps ----------------------------------------------- */

FINLINE __m256 bf_daz(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i e = _mm256_and_si256(u, _mm256_set1_epi32(0x7f800000));
    const __m256i sub = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
    const __m256i s = _mm256_and_si256(u, _mm256_set1_epi32((int)0x80000000u));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(u, s, sub));
}

FINLINE __m256 bf_ftz(__m256 v) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    const __m256 tiny = _mm256_cmp_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
    return _mm256_blendv_ps(v, _mm256_and_ps(v, sign), tiny);
}

/* f32 -> bf16 as the referee (anvil_ref_bf16_act), held in f32 lanes. */
FINLINE __m256i bf_round(__m256 x) {
    const __m256i u = _mm256_castps_si256(bf_daz(x));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    return _mm256_and_si256(_mm256_blendv_epi8(r, q, nan), _mm256_set1_epi32((int)0xffff0000u));
}

typedef struct {
    __m256 odd[2], even[2]; /* per half of the chunk */
} bf_act;

/* 16 activations -> their even and odd elements, rounded. */
FINLINE void bf_pairs(const float *a, __m256 *even, __m256 *odd) {
    const __m256 lo = _mm256_castsi256_ps(bf_round(_mm256_loadu_ps(a)));
    const __m256 hi = _mm256_castsi256_ps(bf_round(_mm256_loadu_ps(a + 8)));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}

FINLINE void bf_step(const uint8_t *w, size_t ws, const float *a, size_t as, __m256 acc[][F_TILE_C][2], const int R,
                     const int C) {
    for (int h = 0; h < 2; ++h) {
        __m256 ae[F_TILE_C], ao[F_TILE_C];
        for (int c = 0; c < C; ++c) bf_pairs(a + (size_t)c * as + 16 * h, &ae[c], &ao[c]);
        for (int r = 0; r < R; ++r) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(w + (size_t)r * ws + 32 * h));
            const __m256 wo = bf_daz(_mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u))));
            const __m256 we = bf_daz(_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)));
            for (int c = 0; c < C; ++c) {
                const __m256 t = bf_ftz(_mm256_fmadd_ps(wo, ao[c], acc[r][c][h]));
                acc[r][c][h] = bf_ftz(_mm256_fmadd_ps(we, ae[c], t));
            }
        }
    }
}

FINLINE void bf16_tile(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,
                       const int R, const int C) {
    __m256 acc[F_GEMV_R][F_TILE_C][2];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) bf_step(w + 2 * i, ws, a + i, as, acc, R, C);
    if (i < n) {
        uint8_t wt[F_GEMV_R][64] = { { 0 } };
        float at[F_TILE_C][32] = { { 0 } };
        for (int r = 0; r < R; ++r) memcpy(wt[r], w + (size_t)r * ws + 2 * i, 2 * (n - i));
        for (int c = 0; c < C; ++c) memcpy(at[c], a + (size_t)c * as + i, sizeof(float) * (n - i));
        bf_step(&wt[0][0], 64, &at[0][0], 32, acc, R, C);
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) y[(size_t)c * ys + r] = f_sum(acc[r][c][0], acc[r][c][1]);
}

/* ---- entry points --------------------------------------------------------- */

#define FLOAT_KERNELS(fmt, tile)                                                                            \
    static void fmt##_vec_dot(size_t n, float *s, const void *w, const void *a) {                           \
        tile(n, (const uint8_t *)w, 0, (const float *)a, 0, s, 0, 1, 1);                                    \
    }                                                                                                       \
    static void fmt##_gemv(size_t n, size_t nrows, float *y, const void *w, size_t ws, const void *a) {     \
        const uint8_t *wb = w;                                                                              \
        size_t r = 0;                                                                                       \
        for (; r + F_GEMV_R <= nrows; r += F_GEMV_R)                                                        \
            tile(n, wb + r * ws, ws, (const float *)a, 0, y + r, 0, F_GEMV_R, 1);                           \
        for (; r < nrows; ++r) tile(n, wb + r * ws, ws, (const float *)a, 0, y + r, 0, 1, 1);               \
    }                                                                                                       \
    static void fmt##_gemm(size_t n, size_t nrows, size_t m, float *y, size_t ys, const void *w, size_t ws, \
                           const void *a, size_t as) {                                                      \
        const uint8_t *wb = w;                                                                              \
        const size_t af = as / sizeof(float);                                                               \
        const float *af32 = a;                                                                              \
        for (size_t c0 = 0; c0 < m; c0 += F_BLOCK_C) {                                                      \
            const size_t c1 = m - c0 < F_BLOCK_C ? m : c0 + F_BLOCK_C;                                      \
            size_t r = 0;                                                                                   \
            for (; r + F_TILE_R <= nrows; r += F_TILE_R) {                                                  \
                size_t c = c0;                                                                              \
                for (; c + F_TILE_C <= c1; c += F_TILE_C)                                                   \
                    tile(n, wb + r * ws, ws, af32 + c * af, af, y + c * ys + r, ys, F_TILE_R, F_TILE_C);    \
                if (c < c1) tile(n, wb + r * ws, ws, af32 + c * af, af, y + c * ys + r, ys, F_TILE_R, 1);   \
            }                                                                                               \
            for (; r < nrows; ++r) {                                                                        \
                size_t c = c0;                                                                              \
                for (; c + F_TILE_C <= c1; c += F_TILE_C)                                                   \
                    tile(n, wb + r * ws, ws, af32 + c * af, af, y + c * ys + r, ys, 1, F_TILE_C);           \
                if (c < c1) tile(n, wb + r * ws, ws, af32 + c * af, af, y + c * ys + r, ys, 1, 1);          \
            }                                                                                               \
        }                                                                                                   \
    }

FLOAT_KERNELS(f32, f32_tile)
FLOAT_KERNELS(f16, f16_tile)
FLOAT_KERNELS(bf16, bf16_tile)

#define FLOAT_KERNEL(ident, wtype, fmt)                                      \
    static const anvil_kernel ident = { .struct_size = sizeof(anvil_kernel), \
                                        .weight_type = (wtype),              \
                                        .act_type = ANVIL_TYPE_F32,          \
                                        .variant = "avx2",                   \
                                        .vec_dot = fmt##_vec_dot,            \
                                        .gemv = fmt##_gemv,                  \
                                        .gemm = fmt##_gemm }

FLOAT_KERNEL(kernel_f32, ANVIL_TYPE_F32, f32);
FLOAT_KERNEL(kernel_f16, ANVIL_TYPE_F16, f16);
FLOAT_KERNEL(kernel_bf16, ANVIL_TYPE_BF16, bf16);

const anvil_kernel *const anvil_avx2_kernels_float[] = { &kernel_f32, &kernel_f16, &kernel_bf16, NULL };
