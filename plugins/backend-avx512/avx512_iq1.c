/* SPDX-License-Identifier: MIT */
/* backend-avx512: IQ1_S weights against Q8_K activations, and its row
 * decoder. Bit-identical to plugins/ref (cold_grid.c).
 *
 * IQ1_S (256 weights, 50 bytes: d, qs[32], qh[8]): per 8 weights an 11-bit
 * index into the {-1, 0, +1} lattice (anvil_cold_iq1s_grid), per 32 a
 * scale ls = 2s + 1 and the delta's sign. The reference's integers are
 *     sumi  = sum_ib ls_ib * sum_j a_j g_j
 *     sumi1 = sum_ib ls_ib * sign_ib * Q_ib    (Q_ib from the bsums)
 * computed here per row as: the grid values + 1 (unsigned 0..2) times a by
 * vpmaddubsw (pairs <= 508), weighted by ls in vpmaddwd (vpdpwssd with
 * VNNI) into int32 lanes, minus ls_ib * Q_ib (which the + 1 added), all
 * lanes then summed; sumi1 the same way from one vector of eight terms.
 * Exact in int32 (|sumi| <= 15 * 256 * 127). Then, as the reference,
 *     acc += (d * a.d) * ((float)sumi + IQ1S_DELTA * (float)sumi1).
 * The grid rows are fetched by scalar loads (eight per 64 weights): a
 * gather is slower on the CPUs this backend targets.
 */
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "ref/cold_tables.h"

#define Q8K_BYTES 292
#define Q8K_QS 4
#define Q8K_BSUMS 260
#define IQ1S_BYTES 50
#define IQ1S_QS 2
#define IQ1S_QH 34

AVX512_INLINE long long iq1s_row(unsigned idx) {
    uint64_t g;
    memcpy(&g, anvil_cold_iq1s_grid[idx], sizeof g);
    return (long long)g;
}

/* The grid values of sub-blocks 2p and 2p + 1 of the block at blk, + 1. */
AVX512_INLINE __m512i iq1s_grid64(const uint8_t *blk, int p) {
    const uint8_t *qs = blk + IQ1S_QS + 8 * p;
    const uint32_t h0 = anvil_rd_u16(blk + IQ1S_QH + 4 * p), h1 = anvil_rd_u16(blk + IQ1S_QH + 4 * p + 2);
    const __m512i g = _mm512_set_epi64(iq1s_row(qs[7] | ((h1 >> 1) & 0x700)), iq1s_row(qs[6] | ((h1 << 2) & 0x700)),
                                       iq1s_row(qs[5] | ((h1 << 5) & 0x700)), iq1s_row(qs[4] | ((h1 << 8) & 0x700)),
                                       iq1s_row(qs[3] | ((h0 >> 1) & 0x700)), iq1s_row(qs[2] | ((h0 << 2) & 0x700)),
                                       iq1s_row(qs[1] | ((h0 << 5) & 0x700)), iq1s_row(qs[0] | ((h0 << 8) & 0x700)));
    return _mm512_add_epi8(g, _mm512_set1_epi8(1));
}

AVX512_INLINE __m512i madd_acc(__m512i acc, __m512i pairs, __m512i ls) {
#if AVX512_VNNI
    return _mm512_dpwssd_epi32(acc, pairs, ls);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, ls));
#endif
}

AVX512_INLINE void iq1_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    const __m256 delta = _mm256_set1_ps(anvil_cold_iq1s_delta);
    __m512i sel[4];
    for (int p = 0; p < 4; ++p) {
        sel[p] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * p)), _mm256_set1_epi16((short)(2 * p + 1)), 1);
    }
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ1S_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ1S_BYTES, ws, R);
        __m512i qa[4];
        for (int p = 0; p < 4; ++p) qa[p] = avx512_load(a + Q8K_QS + 64 * p);
        /* Q_ib = bsums[2 ib] + bsums[2 ib + 1], ib = 0..7 */
        const __m256i q = _mm256_madd_epi16(avx512_load256(a + Q8K_BSUMS), _mm256_set1_epi16(1));
        __m512i m[8], m1[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m128i h = avx512_load128(wr + IQ1S_QH);
            const __m128i ls =
                _mm_add_epi16(_mm_and_si128(_mm_srli_epi16(h, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
            const __m512i ls_w = _mm512_castsi128_si512(ls);
            const __m256i lsq = _mm256_mullo_epi32(_mm256_cvtepu16_epi32(ls), q);
            __m512i s = _mm512_castsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), lsq));
            s = _mm512_inserti64x4(s, _mm256_setzero_si256(), 1);
            for (int p = 0; p < 4; ++p) {
                s = madd_acc(s, _mm512_maddubs_epi16(iq1s_grid64(wr, p), qa[p]),
                             _mm512_permutexvar_epi16(sel[p], ls_w));
            }
            m[r] = s;
            const __mmask8 neg = _mm_movepi16_mask(h);
            m1[r] = avx512_zext256(_mm256_mask_sub_epi32(lsq, neg, _mm256_setzero_si256(), lsq));
        }
        const __m256 sumi = _mm256_cvtepi32_ps(avx512_reduce(m, R));
        const __m256 sumi1 = _mm256_cvtepi32_ps(avx512_reduce(m1, R));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_add_ps(sumi, _mm256_mul_ps(delta, sumi1))));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq1_s, 256, IQ1S_BYTES)

/* y[j] = dl * ((float)g[j] + delta), dl = d * (float)(2s + 1), as the
 * reference decoder. */
static void iq1_s_decode(const void *src, float *dst, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / 256; ++i, blk += IQ1S_BYTES) {
        const float d = avx512_half(blk);
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t h = anvil_rd_u16(blk + IQ1S_QH + 2 * ib);
            const __m256 dl = _mm256_set1_ps(d * (float)(2 * ((h >> 12) & 7) + 1));
            const __m256 delta = _mm256_set1_ps((h & 0x8000) ? -anvil_cold_iq1s_delta : anvil_cold_iq1s_delta);
            for (int l = 0; l < 4; ++l, dst += 8) {
                const unsigned idx = blk[IQ1S_QS + 4 * ib + l] | (((h >> (3 * l)) & 7) << 8);
                const __m128i g = _mm_loadl_epi64((const __m128i *)anvil_cold_iq1s_grid[idx]);
                const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(g));
                _mm256_storeu_ps(dst, _mm256_mul_ps(dl, _mm256_add_ps(v, delta)));
            }
        }
    }
}

AVX512_KERNEL(kernel_iq1_s, ANVIL_TYPE_IQ1_S, ANVIL_TYPE_Q8_K, iq1_s_vec_dot, iq1_s_gemv, iq1_s_gemm, iq1_s_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_iq1)[] = { &kernel_iq1_s, NULL };
