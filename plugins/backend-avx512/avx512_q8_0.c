/* SPDX-License-Identifier: MIT */
/* backend-avx512: Q8_0 weights against Q8_0 activations, and the Q8_0 row
 * decoder.
 *
 * Reference (plugins/ref/q8_0_family_dot.c): per 32-element block
 *     acc += (float)sumi * (dw * da)
 * with sumi the exact int8 x int8 dot. Two blocks share a vector (a row's
 * blocks b and b + 1 in the low and high 256 bits); the reduction leaves
 * block b's R sums in lanes 0..7 and block b + 1's in lanes 8..15, which
 * are added into the accumulator one block after the other, in the
 * reference's order.
 *
 * GEMM (m > 1): a tiled kernel, Q8T_R = 16 weight rows x up to Q8T_C = 8
 * activation rows per register tile. The 16 rows' blocks are first
 * repacked (once per gemm call and row group) so that vector j of a block
 * holds bytes 4j..4j+3 of every row, one row per int32 lane; 4 activation
 * bytes broadcast against it feed all 16 rows, and each lane ends the
 * block holding its row's exact integer dot, no reduction needed.
 *  - VNNI: the codes stored as unsigned w + 128, one vpdpbusd per step,
 *        sum (w + 128) a - 128 sum a = sum w a
 *    (the accumulator starts at -128 sum a, from a per-call pass over the
 *    activations; |terms| < 2^21, exact).
 *  - base: |w| times a with w's sign (vpmaddubsw + vpmaddwd), as the gemv.
 * The float part is the reference's acc += (float)sumi * (dw * da) per
 * lane, block after block, so every result is bit-identical to the
 * reference and to the gemv. 4096 x 4096, 1 thread, Gelem/s, gemv passes
 * -> tiles: VNNI m = 8 24 -> 95, m = 64 12 -> 100-160; without VNNI
 * m = 8 22 -> 51, m = 64 11 -> 33. */
#include <stdlib.h>

#include "avx512_common.h"
#include "avx512_kernels.h"
#include "simd_q8_tiles.h"

#define Q8_0_BYTES 34

AVX512_INLINE void q8_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * Q8_0_BYTES, a += 2 * Q8_0_BYTES) {
        simd_pf_block(pf, b / 2, 2 * Q8_0_BYTES, ws, R); /* pairs of blocks */
        const __m512i qa = avx512_load2x256(a + 2, a + Q8_0_BYTES + 2);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            m[r] = avx512_dpbssd(_mm512_setzero_si512(), avx512_load2x256(wr + 2, wr + Q8_0_BYTES + 2), qa);
        }
        const __m512i s = avx512_reduce_halves(m, R);
        const __m256 d0 = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(avx512_half(a)));
        const __m256 d1 =
            _mm256_mul_ps(simd_x86_halves(w + Q8_0_BYTES, ws, R), _mm256_set1_ps(avx512_half(a + Q8_0_BYTES)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm512_castsi512_si256(s)), d0));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(s, 1)), d1));
    }
    if (b < nb) { /* an odd last block: the high halves are zero */
        const __m512i qa = avx512_zext256(avx512_load256(a + 2));
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            m[r] = avx512_dpbssd(_mm512_setzero_si512(), avx512_zext256(avx512_load256(w + (size_t)r * ws + 2)), qa);
        }
        const __m512i s = avx512_reduce_halves(m, R);
        const __m256 d0 = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(avx512_half(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm512_castsi512_si256(s)), d0));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q8_0, 32, Q8_0_BYTES)

#define Q8T_R 16 /* weight rows per tile: one per int32 lane */
#define Q8T_C 8  /* activation rows per register tile */

/* One block of 16 rows, repacked: q[j] lane r = bytes 4j..4j+3 of row r's
 * codes (VNNI: each + 128, XOR 0x80); d lane r = row r's scale. */
typedef struct {
    __m512i q[8];
    __m512 d;
} q8t_block;

/* Q8T_C activation rows' block b, repacked (once per gemm call): the
 * codes of row c at q[c], its scale at d[c], -128 x the sum of its codes
 * at corr[c] (rows past m: zero). */
typedef struct {
    int8_t q[Q8T_C][32];
    float d[Q8T_C];
    int32_t corr[Q8T_C];
} q8t_act;

/* vpermt2d indices of the 16 x 8 dword transpose (three rounds: 2 rows x
 * 8 dwords -> 4 x 4 -> 8 x 2 -> 16 x 1 per vector, two outputs each). */
static const int32_t Q8T_IDX[6][16] __attribute__((aligned(64))) = {
    { 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27 },
    { 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31 },
    { 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29 },
    { 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31 },
    { 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30 },
    { 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31 },
};

/* Repack nb blocks of `rows` (1..16) rows at w (stride ws); the missing
 * rows repeat the last one (computed, never stored). */
static void q8t_pack(size_t nb, const uint8_t *w, size_t ws, size_t rows, q8t_block *dst) {
    const uint8_t *p[Q8T_R];
    for (size_t r = 0; r < Q8T_R; ++r) p[r] = w + (r < rows ? r : rows - 1) * ws;
    __m512i idx[6];
    for (int i = 0; i < 6; ++i) idx[i] = _mm512_load_si512(Q8T_IDX[i]);
#if AVX512_VNNI
    const __m512i flip = _mm512_set1_epi8((char)0x80);
#else
    const __m512i flip = _mm512_setzero_si512();
#endif
    for (size_t b = 0; b < nb; ++b, ++dst) {
        const size_t o = b * Q8_0_BYTES;
        __m512i x[8], y[8];
        for (int i = 0; i < 8; ++i) x[i] = avx512_load2x256(p[2 * i] + o + 2, p[2 * i + 1] + o + 2);
        /* round 1: rows 4g..4g+3 x dwords 4q..4q+3 in y[2g + q] */
        for (int g = 0; g < 4; ++g) {
            y[2 * g] = _mm512_permutex2var_epi32(x[2 * g], idx[0], x[2 * g + 1]);
            y[2 * g + 1] = _mm512_permutex2var_epi32(x[2 * g], idx[1], x[2 * g + 1]);
        }
        /* round 2: rows 8h..8h+7 x dwords 4q + 2t, +1 in x[4h + 2q + t] */
        for (int h = 0; h < 2; ++h) {
            for (int q = 0; q < 2; ++q) {
                const __m512i lo = y[4 * h + q], hi = y[4 * h + 2 + q];
                x[4 * h + 2 * q] = _mm512_permutex2var_epi32(lo, idx[2], hi);
                x[4 * h + 2 * q + 1] = _mm512_permutex2var_epi32(lo, idx[3], hi);
            }
        }
        /* round 3: rows 0..15 x dword j = 4q + 2t + s */
        for (int qt = 0; qt < 4; ++qt) {
            dst->q[2 * qt] = _mm512_xor_si512(_mm512_permutex2var_epi32(x[qt], idx[4], x[4 + qt]), flip);
            dst->q[2 * qt + 1] = _mm512_xor_si512(_mm512_permutex2var_epi32(x[qt], idx[5], x[4 + qt]), flip);
        }
        uint16_t h[Q8T_R];
        for (int r = 0; r < Q8T_R; ++r) h[r] = anvil_rd_u16(p[r] + o);
        dst->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
    }
}

/* y[c * ys + r] for r < R, c < C: the packed rows against the packed
 * activation rows pa (nb blocks). */
AVX512_INLINE void q8t_tile(size_t nb, const q8t_block *wp, const q8t_act *pa, float *y, size_t ys, size_t R,
                            const int C) {
    __m512 acc[Q8T_C];
    AVX512_FOR_ROWS for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; ++b, ++wp, ++pa) {
        __m512i s[Q8T_C];
#if AVX512_VNNI
        AVX512_FOR_ROWS for (int c = 0; c < C; ++c) s[c] = _mm512_set1_epi32(pa->corr[c]);
        AVX512_FOR_ROWS for (int j = 0; j < 8; ++j) {
            const __m512i wj = _mm512_load_si512(&wp->q[j]);
            AVX512_FOR_ROWS for (int c = 0; c < C; ++c) {
                const __m512i aj = _mm512_set1_epi32((int)anvil_rd_u32((const uint8_t *)pa->q[c] + 4 * j));
                s[c] = _mm512_dpbusd_epi32(s[c], wj, aj);
            }
        }
#else
        AVX512_FOR_ROWS for (int c = 0; c < C; ++c) s[c] = _mm512_setzero_si512();
        AVX512_FOR_ROWS for (int j = 0; j < 8; ++j) {
            const __m512i wj = _mm512_load_si512(&wp->q[j]);
            const __mmask64 neg = _mm512_movepi8_mask(wj);
            const __m512i uj = _mm512_abs_epi8(wj);
            AVX512_FOR_ROWS for (int c = 0; c < C; ++c) {
                const __m512i aj = _mm512_set1_epi32((int)anvil_rd_u32((const uint8_t *)pa->q[c] + 4 * j));
                const __m512i sj = _mm512_mask_sub_epi8(aj, neg, _mm512_setzero_si512(), aj);
                s[c] = _mm512_add_epi32(s[c], _mm512_madd_epi16(_mm512_maddubs_epi16(uj, sj), _mm512_set1_epi16(1)));
            }
        }
#endif
        const __m512 dw = wp->d;
        AVX512_FOR_ROWS for (int c = 0; c < C; ++c) {
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(pa->d[c]));
            acc[c] = _mm512_add_ps(acc[c], _mm512_mul_ps(_mm512_cvtepi32_ps(s[c]), d));
        }
    }
    for (int c = 0; c < C; ++c) {
        if (R == Q8T_R) {
            _mm512_storeu_ps(y + (size_t)c * ys, acc[c]);
        } else {
            float v[Q8T_R];
            _mm512_storeu_ps(v, acc[c]);
            memcpy(y + (size_t)c * ys, v, R * sizeof(float));
        }
    }
}

static void q8t_tile_any(size_t nb, const q8t_block *wp, const q8t_act *pa, float *y, size_t ys, size_t R, int C) {
    switch (C) {
    case 1: q8t_tile(nb, wp, pa, y, ys, R, 1); break;
    case 2: q8t_tile(nb, wp, pa, y, ys, R, 2); break;
    case 3: q8t_tile(nb, wp, pa, y, ys, R, 3); break;
    case 4: q8t_tile(nb, wp, pa, y, ys, R, 4); break;
    case 5: q8t_tile(nb, wp, pa, y, ys, R, 5); break;
    case 6: q8t_tile(nb, wp, pa, y, ys, R, 6); break;
    case 7: q8t_tile(nb, wp, pa, y, ys, R, 7); break;
    default: q8t_tile(nb, wp, pa, y, ys, R, Q8T_C); break;
    }
}

/* Repack the m activation rows at a (stride as): tile t, block b at
 * pa[t * nb + b]. */
static void q8t_prep(size_t nb, size_t m, const uint8_t *a, size_t as, q8t_act *pa) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (size_t t = 0; t < m; t += Q8T_C) {
        const size_t C = m - t < Q8T_C ? m - t : Q8T_C;
        for (size_t b = 0; b < nb; ++b, ++pa) {
            memset(pa, 0, sizeof *pa);
            for (size_t c = 0; c < C; ++c) {
                const uint8_t *ab = a + (t + c) * as + b * Q8_0_BYTES;
                const __m256i q = avx512_load256(ab + 2);
                _mm256_storeu_si256((__m256i *)pa->q[c], q);
                /* sum of (code + 128) per 8 bytes, then all four */
                const __m256i u = _mm256_sad_epu8(_mm256_xor_si256(q, flip), _mm256_setzero_si256());
                const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
                const int32_t sum = (int32_t)(_mm_cvtsi128_si32(h) + _mm_extract_epi32(h, 2)) - 32 * 128;
                pa->d[c] = avx512_half(ab);
                pa->corr[c] = -128 * sum;
            }
        }
    }
}

/* The chunked driver (simd_q8_tiles.h): from m = 2, chunks of at least
 * 8 tiles (64 activation rows). */
SIMD_DEFINE_Q8T_GEMM(2, 8)

/* dst[j] = (float)q[j] * d, as the reference decoder. */
static void q8_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q8_0_BYTES, dst += 32) {
        const __m512 d = _mm512_set1_ps(avx512_half(b));
        for (int k = 0; k < 2; ++k) {
            const __m512i q = _mm512_cvtepi8_epi32(avx512_load128(b + 2 + 16 * k));
            _mm512_storeu_ps(dst + 16 * k, _mm512_mul_ps(_mm512_cvtepi32_ps(q), d));
        }
    }
}

AVX512_KERNEL(kernel_q8_0, ANVIL_TYPE_Q8_0, ANVIL_TYPE_Q8_0, q8_0_vec_dot, q8_0_gemv, q8_0_gemm_tiled, q8_0_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_q8_0)[] = { &kernel_q8_0, NULL };
