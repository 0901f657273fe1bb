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
 * reference's order. */
#include "avx512_common.h"
#include "avx512_kernels.h"

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

AVX512_KERNEL(kernel_q8_0, ANVIL_TYPE_Q8_0, ANVIL_TYPE_Q8_0, q8_0_vec_dot, q8_0_gemv, q8_0_gemm, q8_0_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_q8_0)[] = { &kernel_q8_0, NULL };
