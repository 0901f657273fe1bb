/* SPDX-License-Identifier: MIT */
/*
 * backend-avx512: F32, F16 and BF16 weights against f32 activations -- vec_dot,
 * 8-row GEMV and a blocked GEMM (4 weight rows x 6 activation rows per
 * register tile, the weights of a tile read once for 24 activation rows
 * held in L2).
 *
 * Contract: BIT-IDENTICAL to the referee plugins/ref/float_dot.h, whose
 * summation order is one 16-lane vector accumulator per (weight row,
 * activation row) pair and a fixed reduction tree; a result never depends
 * on the tile, the row count or the thread that computed it.
 *  - F16: vcvtph2ps + vfmadd231ps on the activations as given.
 *  - F32: vfmadd231ps (the same in both compilations).
 *  - BF16 with AVX512_BF16 (built with -mavx512bf16, variant
 *    "avx512-bf16"): activations rounded by vcvtne2ps2bf16, then
 *    vdpbf16ps -- the referee states that instruction's order and its
 *    DAZ/FTZ (odd element of a pair first).
 *  - BF16 without it (variant "avx512"): the same arithmetic emulated,
 *    two FMAs per pair with explicit DAZ on the inputs and FTZ on each
 *    result.
 * Compiled twice (CMakeLists.txt: FLOAT_BF16 = 0 / 1, symbols suffixed
 * _plain / _bf16); backend_avx512.c picks the table from the CPU features.
 * Not part of the SIMDe build (backend-avx512-emu): there F16/BF16 fall
 * through to the next backend.
 */
#include <immintrin.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>

#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "avx512_kernels.h"

#if FLOAT_BF16
#define FLOAT_SYM(name) name##_bf16
#define FLOAT_VARIANT "avx512-bf16"
#else
#define FLOAT_SYM(name) name##_plain
#define FLOAT_VARIANT "avx512"
#endif

#define FINLINE static inline __attribute__((always_inline))
#define F_TILE_R 4   /* weight rows per GEMM tile */
#define F_TILE_C 6   /* activation rows per GEMM tile */
#define F_BLOCK_C 24 /* activation rows a weight tile is reused for */
#define F_GEMV_R 8
/* Register tiles: every loop over r and c unrolled, so the accumulators
 * stay in registers (rolled, gcc keeps them on the stack). */
#define F_UNROLL _Pragma("GCC unroll 8")

/* The referee's reduction tree: (q0 + q2) + (q1 + q3) of q = h.lo + h.hi,
 * h = v.lo256 + v.hi256. */
FINLINE float f_sum(__m512 v) {
    const __m256 h =
        _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

/* ---- F16 ------------------------------------------------------------------ */

FINLINE __m512 f16_w(const uint8_t *p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

/* y[c * ys + r] = dot(row r of w, activation row c) for r < R, c < C. */
FINLINE void f16_tile(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,
                      const int R, const int C) {
    __m512 acc[F_GEMV_R][F_TILE_C];
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 av[F_TILE_C];
        F_UNROLL for (int c = 0; c < C; ++c) av[c] = _mm512_loadu_ps(a + (size_t)c * as + i);
        F_UNROLL for (int r = 0; r < R; ++r) {
            const __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + (size_t)r * ws + 2 * i)));
            F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, av[c], acc[r][c]);
        }
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 av[F_TILE_C];
        F_UNROLL for (int c = 0; c < C; ++c) av[c] = _mm512_maskz_loadu_ps(m, a + (size_t)c * as + i);
        F_UNROLL for (int r = 0; r < R; ++r) {
            const __m512 wv = f16_w(w + (size_t)r * ws + 2 * i, m);
            F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, av[c], acc[r][c]);
        }
    }
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c)
        y[(size_t)c * ys + r] = f_sum(acc[r][c]);
}

/* ---- F32: F16's lanes, the weights loaded as they are --------------------- */

FINLINE void f32_tile(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,
                      const int R, const int C) {
    __m512 acc[F_GEMV_R][F_TILE_C];
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 av[F_TILE_C];
        F_UNROLL for (int c = 0; c < C; ++c) av[c] = _mm512_loadu_ps(a + (size_t)c * as + i);
        F_UNROLL for (int r = 0; r < R; ++r) {
            const __m512 wv = _mm512_loadu_ps(w + (size_t)r * ws + 4 * i);
            F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, av[c], acc[r][c]);
        }
    }
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 av[F_TILE_C];
        F_UNROLL for (int c = 0; c < C; ++c) av[c] = _mm512_maskz_loadu_ps(m, a + (size_t)c * as + i);
        F_UNROLL for (int r = 0; r < R; ++r) {
            const __m512 wv = _mm512_maskz_loadu_ps(m, w + (size_t)r * ws + 4 * i);
            F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, av[c], acc[r][c]);
        }
    }
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c)
        y[(size_t)c * ys + r] = f_sum(acc[r][c]);
}

/* ---- BF16 ----------------------------------------------------------------- */

#if FLOAT_BF16
typedef __m512bh bf_act; /* 32 rounded activations, pair order */

FINLINE bf_act bf_act_load(const float *a, __mmask32 m) {
    const __m512 lo = _mm512_maskz_loadu_ps((__mmask16)m, a);
    const __m512 hi = _mm512_maskz_loadu_ps((__mmask16)(m >> 16), a + 16);
    return _mm512_cvtne2ps_pbh(hi, lo);
}

FINLINE __m512 bf_step(__m512 acc, const uint8_t *w, __mmask32 m, bf_act a) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_maskz_loadu_epi16(m, w), a);
}
#else
typedef struct {
    __m512 odd, even;
} bf_act;

/* DAZ on bf16 values held in f32 lanes: a zero exponent reads as +-0. */
FINLINE __m512 bf_daz(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 sub = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
    return _mm512_castsi512_ps(_mm512_mask_and_epi32(u, sub, u, _mm512_set1_epi32((int)0x80000000u)));
}

/* FTZ: a subnormal result becomes +-0 (|v| < FLT_MIN: zero stays zero). */
FINLINE __m512 bf_ftz(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    const __m512 mag = _mm512_castsi512_ps(_mm512_andnot_si512(sign, u));
    const __mmask16 tiny = _mm512_cmp_ps_mask(mag, _mm512_set1_ps(0x1p-126f), _CMP_LT_OQ);
    return _mm512_castsi512_ps(_mm512_mask_and_epi32(u, tiny, u, sign));
}

/* f32 -> bf16 as the referee (anvil_ref_bf16_act), held in f32 lanes. */
FINLINE __m512i bf_round(__m512 x) {
    const __m512i u = _mm512_castps_si512(bf_daz(x)); /* f32 subnormal: the same exponent test */
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __m512i q = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
    const __m512i v = _mm512_mask_mov_epi32(r, nan, q);
    return _mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u));
}

FINLINE bf_act bf_act_load(const float *a, __mmask32 m) {
    const __m512i lo = bf_round(_mm512_maskz_loadu_ps((__mmask16)m, a));
    const __m512i hi = bf_round(_mm512_maskz_loadu_ps((__mmask16)(m >> 16), a + 16));
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    bf_act r;
    r.even = _mm512_castsi512_ps(_mm512_permutex2var_epi32(lo, ie, hi));
    r.odd = _mm512_castsi512_ps(_mm512_permutex2var_epi32(lo, io, hi));
    return r;
}

FINLINE __m512 bf_step(__m512 acc, const uint8_t *w, __mmask32 m, bf_act a) {
    const __m512i x = _mm512_maskz_loadu_epi16(m, w);
    const __m512 wo = bf_daz(_mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u))));
    const __m512 we = bf_daz(_mm512_castsi512_ps(_mm512_slli_epi32(x, 16)));
    acc = bf_ftz(_mm512_fmadd_ps(wo, a.odd, acc));
    return bf_ftz(_mm512_fmadd_ps(we, a.even, acc));
}
#endif

FINLINE void bf16_step(const uint8_t *w, size_t ws, const float *a, size_t as, __m512 acc[][F_TILE_C], __mmask32 m,
                       const int R, const int C) {
    bf_act av[F_TILE_C];
    F_UNROLL for (int c = 0; c < C; ++c) av[c] = bf_act_load(a + (size_t)c * as, m);
    F_UNROLL for (int r = 0; r < R; ++r) {
        F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = bf_step(acc[r][c], w + (size_t)r * ws, m, av[c]);
    }
}

#if FLOAT_BF16
/* The GEMM's activations, converted once per block of F_BLOCK_C rows instead
 * of once per weight tile: row c of the block is ceil(n / 32) vectors of 32
 * rounded values in pair order, the tail lanes zero (as the masked load of
 * bf_act_load leaves them), so the tile below reads them as they are and
 * every dot product is the same instruction sequence on the same values. */
FINLINE void bf16_tile_pre(size_t n, const uint8_t *w, size_t ws, const bf_act *a, size_t as, float *y, size_t ys,
                           const int R, const int C) {
    __m512 acc[F_GEMV_R][F_TILE_C];
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    size_t i = 0, v = 0;
    for (; i + 32 <= n; i += 32, ++v) {
        F_UNROLL for (int r = 0; r < R; ++r) {
            const __m512bh wv = (__m512bh)_mm512_loadu_si512(w + (size_t)r * ws + 2 * i);
            F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv, a[(size_t)c * as + v]);
        }
    }
    if (i < n) {
        const __mmask32 m = (__mmask32)((1u << (n - i)) - 1);
        F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c)
            acc[r][c] = bf_step(acc[r][c], w + (size_t)r * ws + 2 * i, m, a[(size_t)c * as + v]);
    }
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c)
        y[(size_t)c * ys + r] = f_sum(acc[r][c]);
}
#endif

FINLINE void bf16_tile(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,
                       const int R, const int C) {
    __m512 acc[F_GEMV_R][F_TILE_C];
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) bf16_step(w + 2 * i, ws, a + i, as, acc, (__mmask32)0xffffffffu, R, C);
    if (i < n) bf16_step(w + 2 * i, ws, a + i, as, acc, (__mmask32)((1u << (n - i)) - 1), R, C);
    F_UNROLL for (int r = 0; r < R; ++r) F_UNROLL for (int c = 0; c < C; ++c)
        y[(size_t)c * ys + r] = f_sum(acc[r][c]);
}

/* ---- entry points, one set per weight type ---------------------------------- */

#define TILE_CASES(tile, R)                                    \
    switch (C) {                                               \
    case 1: tile(n, w, ws, a, as, y, ys, R, 1); break;         \
    case 2: tile(n, w, ws, a, as, y, ys, R, 2); break;         \
    case 3: tile(n, w, ws, a, as, y, ys, R, 3); break;         \
    case 4: tile(n, w, ws, a, as, y, ys, R, 4); break;         \
    case 5: tile(n, w, ws, a, as, y, ys, R, 5); break;         \
    default: tile(n, w, ws, a, as, y, ys, R, F_TILE_C); break; \
    }

/* One block of activation rows [c0, c1) against every weight row: 4-row
 * tiles, then single rows; any(a_c, as_c, ...) takes the block's row c as
 * A_ROW(c) with stride AS. */
#define FLOAT_GEMM_BLOCK(any, A_ROW, AS)                                           \
    for (size_t r = 0; r < nrows; r += F_TILE_R) {                                 \
        const int R = nrows - r >= F_TILE_R ? F_TILE_R : 1;                        \
        const size_t r_end = R == F_TILE_R ? r + F_TILE_R : nrows;                 \
        for (size_t rr = r; rr < r_end; rr += (size_t)R) {                         \
            for (size_t c = c0; c < c1; c += F_TILE_C) {                           \
                const int C = c1 - c >= F_TILE_C ? F_TILE_C : (int)(c1 - c);       \
                any(n, wb + rr * ws, ws, A_ROW(c), AS, y + c * ys + rr, ys, R, C); \
            }                                                                      \
        }                                                                          \
        if (R == 1) break;                                                         \
    }

#define FLOAT_KERNELS(fmt, tile)                                                                                  \
    static void fmt##_any(size_t n, const uint8_t *w, size_t ws, const float *a, size_t as, float *y, size_t ys,  \
                          int R, int C) {                                                                         \
        if (R == F_TILE_R) {                                                                                      \
            TILE_CASES(tile, F_TILE_R)                                                                            \
        } else {                                                                                                  \
            TILE_CASES(tile, 1)                                                                                   \
        }                                                                                                         \
    }                                                                                                             \
    static void fmt##_vec_dot(size_t n, float *s, const void *w, const void *a) {                                 \
        tile(n, (const uint8_t *)w, 0, (const float *)a, 0, s, 0, 1, 1);                                          \
    }                                                                                                             \
    static void fmt##_gemv(size_t n, size_t nrows, float *y, const void *w, size_t ws, const void *a) {           \
        const uint8_t *wb = w;                                                                                    \
        size_t r = 0;                                                                                             \
        for (; r + F_GEMV_R <= nrows; r += F_GEMV_R)                                                              \
            tile(n, wb + r * ws, ws, (const float *)a, 0, y + r, 0, F_GEMV_R, 1);                                 \
        for (; r < nrows; ++r) tile(n, wb + r * ws, ws, (const float *)a, 0, y + r, 0, 1, 1);                     \
    }                                                                                                             \
    static void fmt##_gemm_tiles(size_t n, size_t nrows, size_t m, float *y, size_t ys, const void *w, size_t ws, \
                                 const void *a, size_t as) {                                                      \
        const uint8_t *wb = w;                                                                                    \
        const size_t af = as / sizeof(float);                                                                     \
        for (size_t c0 = 0; c0 < m; c0 += F_BLOCK_C) {                                                            \
            const size_t c1 = m - c0 < F_BLOCK_C ? m : c0 + F_BLOCK_C;                                            \
            FLOAT_GEMM_BLOCK(fmt##_any, FLOAT_A_ROW, af)                                                          \
        }                                                                                                         \
    }
#define FLOAT_A_ROW(c) ((const float *)a + (c)*af)

FLOAT_KERNELS(f32, f32_tile)
FLOAT_KERNELS(f16, f16_tile)
FLOAT_KERNELS(bf16, bf16_tile)
#define f32_gemm f32_gemm_tiles
#define f16_gemm f16_gemm_tiles

#if FLOAT_BF16
static void bf16_pre_any(size_t n, const uint8_t *w, size_t ws, const bf_act *a, size_t as, float *y, size_t ys,
                         int R, int C) {
    if (R == F_TILE_R) {
        TILE_CASES(bf16_tile_pre, F_TILE_R)
    } else {
        TILE_CASES(bf16_tile_pre, 1)
    }
}

/* The tiles of bf16_gemm_tiles with the activations converted once per
 * block (bf16_tile_pre); without memory for that, bf16_gemm_tiles. */
static void bf16_gemm(size_t n, size_t nrows, size_t m, float *y, size_t ys, const void *w, size_t ws, const void *a,
                      size_t as) {
    const size_t nv = n / 32 + (n % 32 != 0);
    bf_act *buf = nv <= SIZE_MAX / (F_BLOCK_C * sizeof(bf_act)) && nv > 0
                      ? aligned_alloc(sizeof(bf_act), F_BLOCK_C * nv * sizeof(bf_act))
                      : NULL;
    if (buf == NULL) {
        bf16_gemm_tiles(n, nrows, m, y, ys, w, ws, a, as);
        return;
    }
    const uint8_t *wb = w;
    const size_t af = as / sizeof(float);
    for (size_t c0 = 0; c0 < m; c0 += F_BLOCK_C) {
        const size_t c1 = m - c0 < F_BLOCK_C ? m : c0 + F_BLOCK_C;
        for (size_t c = c0; c < c1; ++c) {
            const float *ac = (const float *)a + c * af;
            for (size_t v = 0; v < nv; ++v) {
                const size_t left = n - 32 * v;
                const __mmask32 mk = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1);
                buf[(c - c0) * nv + v] = bf_act_load(ac + 32 * v, mk);
            }
        }
#define BF_PRE_ROW(c) (buf + ((c)-c0) * nv)
        FLOAT_GEMM_BLOCK(bf16_pre_any, BF_PRE_ROW, nv)
#undef BF_PRE_ROW
    }
    free(buf);
}
#else
#define bf16_gemm bf16_gemm_tiles
#endif

#define FLOAT_KERNEL(ident, wtype, fmt)                                      \
    static const anvil_kernel ident = { .struct_size = sizeof(anvil_kernel), \
                                        .weight_type = (wtype),              \
                                        .act_type = ANVIL_TYPE_F32,          \
                                        .variant = FLOAT_VARIANT,            \
                                        .vec_dot = fmt##_vec_dot,            \
                                        .gemv = fmt##_gemv,                  \
                                        .gemm = fmt##_gemm }

FLOAT_KERNEL(kernel_f32, ANVIL_TYPE_F32, f32);
FLOAT_KERNEL(kernel_f16, ANVIL_TYPE_F16, f16);
FLOAT_KERNEL(kernel_bf16, ANVIL_TYPE_BF16, bf16);

const anvil_kernel *const FLOAT_SYM(anvil_avx512_kernels_float)[] = { &kernel_f32, &kernel_f16, &kernel_bf16, NULL };
