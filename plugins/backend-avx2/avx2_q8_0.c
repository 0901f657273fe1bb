/* SPDX-License-Identifier: MIT */
/* backend-avx2: Q8_0 weights against Q8_0 activations, and the Q8_0 row
 * decoder.
 *
 * Reference (plugins/ref/q8_0_family_dot.c): per 32-element block
 *     acc += (float)sumi * (dw * da)
 * with sumi the exact int8 x int8 dot. Here R rows share each activation
 * block; lane r of the float accumulator is row r.
 *
 * GEMM (m > 1): a tiled kernel, Q8T_R = 8 weight rows x up to Q8T_C = 4
 * activation rows per register tile. The 8 rows' blocks are repacked once
 * per gemm call and row group, so that vector j of a block holds bytes
 * 4j..4j+3 of every row, one row per int32 lane (|w| and w); 4 activation
 * bytes broadcast against it (vpsignb by w, vpmaddubsw, vpmaddwd) feed all
 * 8 rows, and each lane ends the block holding its row's exact integer
 * dot, no reduction needed. The float part is the reference's
 * acc += (float)sumi * (dw * da) per lane, block after block: every result
 * is bit-identical to the reference and to the gemv. 4096 x 4096, 1
 * thread, Gelem/s, gemv passes -> tiles: m = 8 20-27 -> 33-34, m = 64
 * 9-26 -> 21-25. */
#include <stdlib.h>

#include "avx2_common.h"
#include "avx2_kernels.h"
#include "simd_q8_tiles.h"

#define Q8_0_BYTES 34

AVX2_INLINE void q8_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q8_0_BYTES, a += Q8_0_BYTES) {
        simd_pf_block(pf, b, Q8_0_BYTES, ws, R);
        const __m256i qa = avx2_load(a + 2);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            m[r] = avx2_dot_s8s8(avx2_load(w + r * ws + 2), qa);
        }
        const __m256 sumi = _mm256_cvtepi32_ps(avx2_reduce(m, R));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(avx2_half(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(sumi, d));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q8_0, 32, Q8_0_BYTES)

#define Q8T_R 8 /* weight rows per tile: one per int32 lane */
#define Q8T_C 4 /* activation rows per register tile */

/* One block of 8 rows, repacked: lane r of u[j] / s[j] = bytes 4j..4j+3
 * of row r's codes, as |w| / w; d lane r = row r's scale. */
typedef struct {
    __m256i u[8], s[8];
    __m256 d;
} q8t_block;

/* Q8T_C activation rows' block b: codes of row c at q[c], its scale at
 * d[c] (rows past m: zero). */
typedef struct {
    int8_t q[Q8T_C][32];
    float d[Q8T_C];
} q8t_act;

/* Repack nb blocks of `rows` (1..8) rows at w (stride ws); the missing
 * rows repeat the last one (computed, never stored). An 8 x 8 dword
 * transpose per block. */
static void q8t_pack(size_t nb, const uint8_t *w, size_t ws, size_t rows, q8t_block *dst) {
    const uint8_t *p[Q8T_R];
    for (size_t r = 0; r < Q8T_R; ++r) p[r] = w + (r < rows ? r : rows - 1) * ws;
    for (size_t b = 0; b < nb; ++b, ++dst) {
        const size_t o = b * Q8_0_BYTES;
        __m256i x[8], t[8];
        for (int r = 0; r < 8; ++r) x[r] = avx2_load(p[r] + o + 2);
        for (int i = 0; i < 4; ++i) { /* rows 2i, 2i+1 interleaved by dword */
            t[2 * i] = _mm256_unpacklo_epi32(x[2 * i], x[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_epi32(x[2 * i], x[2 * i + 1]);
        }
        for (int i = 0; i < 2; ++i) { /* rows 4i..4i+3 by dword, per 128-bit lane */
            for (int h = 0; h < 2; ++h) {
                x[4 * i + 2 * h] = _mm256_unpacklo_epi64(t[4 * i + h], t[4 * i + 2 + h]);
                x[4 * i + 2 * h + 1] = _mm256_unpackhi_epi64(t[4 * i + h], t[4 * i + 2 + h]);
            }
        }
        /* x[4i + k] lane l (l < 4: dword k, l >= 4: dword 4 + k) of rows
         * 4i + (l & 3); join the two row quads per dword */
        for (int k = 0; k < 4; ++k) {
            const __m256i lo = _mm256_permute2x128_si256(x[k], x[4 + k], 0x20);
            const __m256i hi = _mm256_permute2x128_si256(x[k], x[4 + k], 0x31);
            dst->s[k] = lo;
            dst->s[4 + k] = hi;
            dst->u[k] = _mm256_sign_epi8(lo, lo);
            dst->u[4 + k] = _mm256_sign_epi8(hi, hi);
        }
        uint16_t h[Q8T_R];
        for (int r = 0; r < Q8T_R; ++r) h[r] = anvil_rd_u16(p[r] + o);
        dst->d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
    }
}

/* y[c * ys + r] for r < R, c < C: the packed rows against the packed
 * activation rows pa (nb blocks). */
AVX2_INLINE void q8t_tile(size_t nb, const q8t_block *wp, const q8t_act *pa, float *y, size_t ys, size_t R,
                          const int C) {
    __m256 acc[Q8T_C];
    for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (size_t b = 0; b < nb; ++b, ++wp, ++pa) {
        __m256i s[Q8T_C];
        for (int c = 0; c < C; ++c) s[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            const __m256i uj = _mm256_load_si256(&wp->u[j]), sj = _mm256_load_si256(&wp->s[j]);
            for (int c = 0; c < C; ++c) {
                const __m256i aj = _mm256_set1_epi32((int)anvil_rd_u32((const uint8_t *)pa->q[c] + 4 * j));
                const __m256i p = _mm256_maddubs_epi16(uj, _mm256_sign_epi8(aj, sj));
                s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(p, ones));
            }
        }
        const __m256 dw = wp->d;
        for (int c = 0; c < C; ++c) {
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(pa->d[c]));
            acc[c] = _mm256_add_ps(acc[c], _mm256_mul_ps(_mm256_cvtepi32_ps(s[c]), d));
        }
    }
    for (int c = 0; c < C; ++c) {
        if (R == Q8T_R) {
            _mm256_storeu_ps(y + (size_t)c * ys, acc[c]);
        } else {
            float v[Q8T_R];
            _mm256_storeu_ps(v, acc[c]);
            memcpy(y + (size_t)c * ys, v, R * sizeof(float));
        }
    }
}

static void q8t_tile_any(size_t nb, const q8t_block *wp, const q8t_act *pa, float *y, size_t ys, size_t R, int C) {
    switch (C) {
    case 1: q8t_tile(nb, wp, pa, y, ys, R, 1); break;
    case 2: q8t_tile(nb, wp, pa, y, ys, R, 2); break;
    case 3: q8t_tile(nb, wp, pa, y, ys, R, 3); break;
    default: q8t_tile(nb, wp, pa, y, ys, R, Q8T_C); break;
    }
}

/* Repack the m activation rows at a (stride as): tile t, block b at
 * pa[t * nb + b]. */
static void q8t_prep(size_t nb, size_t m, const uint8_t *a, size_t as, q8t_act *pa) {
    for (size_t t = 0; t < m; t += Q8T_C) {
        const size_t C = m - t < Q8T_C ? m - t : Q8T_C;
        for (size_t b = 0; b < nb; ++b, ++pa) {
            memset(pa, 0, sizeof *pa);
            for (size_t c = 0; c < C; ++c) {
                const uint8_t *ab = a + (t + c) * as + b * Q8_0_BYTES;
                memcpy(pa->q[c], ab + 2, 32);
                pa->d[c] = avx2_half(ab);
            }
        }
    }
}

/* The chunked driver (simd_q8_tiles.h). From m = 4: below it the
 * repacking costs more than it saves (4096 x 4096, m = 2: 16 against
 * 26 Gelem/s); chunks of at least 16 tiles (64 activation rows). */
SIMD_DEFINE_Q8T_GEMM(4, 16)

/* dst[j] = (float)q[j] * d, as the reference decoder. */
static void q8_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q8_0_BYTES, dst += 32) {
        const __m256 d = _mm256_set1_ps(avx2_half(b));
        for (int k = 0; k < 4; ++k) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 + 8 * k)));
            _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}

AVX2_KERNEL(kernel_q8_0, ANVIL_TYPE_Q8_0, ANVIL_TYPE_Q8_0, "avx2", q8_0_vec_dot, q8_0_gemv, q8_0_gemm_tiled,
            q8_0_decode);

const anvil_kernel *const anvil_avx2_kernels_q8_0[] = { &kernel_q8_0, NULL };
