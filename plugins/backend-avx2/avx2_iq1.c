/* SPDX-License-Identifier: MIT */
/* backend-avx2: IQ1_S weights against Q8_K activations, and its row
 * decoder. Bit-identical to plugins/ref (cold_grid.c), computed as
 * backend-avx512's avx512_iq1.c (see there for the integers):
 *     sumi  = sum_ib ls_ib * sum_j a_j g_j
 *     sumi1 = sum_ib ls_ib * sign_ib * Q_ib    (Q_ib from the bsums)
 * per 32 weights the grid values + 1 (0..2) times a by vpmaddubsw (pairs
 * <= 508), weighted by ls in vpmaddwd, minus ls_ib * Q_ib (which the + 1
 * added); then, as the reference,
 *     acc += (d * a.d) * ((float)sumi + IQ1S_DELTA * (float)sumi1).
 * The grid rows are fetched by scalar loads (four per 32 weights).
 */
#include "avx2_common.h"
#include "avx2_kernels.h"
#include "ref/cold_tables.h"

#define Q8K_BYTES 292
#define Q8K_QS 4
#define Q8K_BSUMS 260
#define IQ1S_BYTES 50
#define IQ1S_QS 2
#define IQ1S_QH 34

AVX2_INLINE long long iq1s_row(unsigned idx) {
    uint64_t g;
    memcpy(&g, anvil_cold_iq1s_grid[idx], sizeof g);
    return (long long)g;
}

/* The grid values of sub-block ib of the block at blk, + 1. */
AVX2_INLINE __m256i iq1s_grid32(const uint8_t *blk, int ib) {
    const uint8_t *qs = blk + IQ1S_QS + 4 * ib;
    const uint32_t h = anvil_rd_u16(blk + IQ1S_QH + 2 * ib);
    const __m256i g = _mm256_set_epi64x(iq1s_row(qs[3] | ((h >> 1) & 0x700)), iq1s_row(qs[2] | ((h << 2) & 0x700)),
                                        iq1s_row(qs[1] | ((h << 5) & 0x700)), iq1s_row(qs[0] | ((h << 8) & 0x700)));
    return _mm256_add_epi8(g, _mm256_set1_epi8(1));
}

AVX2_INLINE void iq1_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const __m256 delta = _mm256_set1_ps(anvil_cold_iq1s_delta);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ1S_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ1S_BYTES, ws, R);
        /* Q_ib = bsums[2 ib] + bsums[2 ib + 1], ib = 0..7 */
        const __m256i q = _mm256_madd_epi16(avx2_load(a + Q8K_BSUMS), _mm256_set1_epi16(1));
        __m256i m[8], m1[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m128i h = avx2_load128(wr + IQ1S_QH);
            const __m256i ls = _mm256_cvtepu16_epi32(
                _mm_add_epi16(_mm_and_si128(_mm_srli_epi16(h, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1)));
            const __m256i ls_w = _mm256_or_si256(ls, _mm256_slli_epi32(ls, 16)); /* ls in both words */
            const __m256i lsq = _mm256_mullo_epi32(ls, q);
            __m256i s = _mm256_sub_epi32(_mm256_setzero_si256(), lsq);
            for (int ib = 0; ib < 8; ++ib) {
                const __m256i pairs = _mm256_maddubs_epi16(iq1s_grid32(wr, ib), avx2_load(a + Q8K_QS + 32 * ib));
                s = _mm256_add_epi32(
                    s, _mm256_madd_epi16(pairs, _mm256_permutevar8x32_epi32(ls_w, _mm256_set1_epi32(ib))));
            }
            m[r] = s;
            /* the delta's sign (bit 15 of qh), never zero */
            m1[r] = _mm256_sign_epi32(lsq, _mm256_or_si256(_mm256_cvtepi16_epi32(h), _mm256_set1_epi32(1)));
        }
        const __m256 sumi = _mm256_cvtepi32_ps(avx2_reduce(m, R));
        const __m256 sumi1 = _mm256_cvtepi32_ps(avx2_reduce(m1, R));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_add_ps(sumi, _mm256_mul_ps(delta, sumi1))));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq1_s, 256, IQ1S_BYTES)

/* y[j] = dl * ((float)g[j] + delta), dl = d * (float)(2s + 1), as the
 * reference decoder. */
static void iq1_s_decode(const void *src, float *dst, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / 256; ++i, blk += IQ1S_BYTES) {
        const float d = avx2_half(blk);
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

AVX2_KERNEL(kernel_iq1_s, ANVIL_TYPE_IQ1_S, ANVIL_TYPE_Q8_K, "avx2", iq1_s_vec_dot, iq1_s_gemv, iq1_s_gemm,
            iq1_s_decode);

const anvil_kernel *const anvil_avx2_kernels_iq1[] = { &kernel_iq1_s, NULL };
