/* SPDX-License-Identifier: MIT */
/* backend-avx2: Q8_0 weights against Q8_0 activations, and the Q8_0 row
 * decoder.
 *
 * Reference (plugins/ref/q8_0_family_dot.c): per 32-element block
 *     acc += (float)sumi * (dw * da)
 * with sumi the exact int8 x int8 dot. Here R rows share each activation
 * block; lane r of the float accumulator is row r. */
#include "avx2_common.h"
#include "avx2_kernels.h"

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

AVX2_KERNEL(kernel_q8_0, ANVIL_TYPE_Q8_0, ANVIL_TYPE_Q8_0, "avx2", q8_0_vec_dot, q8_0_gemv, q8_0_gemm, q8_0_decode);

const anvil_kernel *const anvil_avx2_kernels_q8_0[] = { &kernel_q8_0, NULL };
