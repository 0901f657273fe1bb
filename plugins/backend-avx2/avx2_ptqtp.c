/* SPDX-License-Identifier: MIT */
/* backend-avx2: PTQTP trit planes (ptqtp2, ptqtp3) against Q8_K, and their
 * row decoders. The types are codec-ptqtp's; their layout comes from the
 * SDK's anvil/formats/ptqtp.h, the only thing this backend knows of them.
 *
 * Multiplication-free: a plane's integer dot is the activation codes added
 * where its trit is +1 and subtracted where it is -1. vpsignb does exactly
 * that per byte (exact: Q8_K codes lie in [-127, 127]), vpmaddubsw against
 * ones widens pairs to int16 (an add; at most 8 * 2 * 127 = 2032 per lane
 * and block), one vpmaddwd per plane and block widens to int32.
 *
 * Trits: avx2_trit_planes.h (the eight element-order vectors of a plane).
 *
 * Float part, the reference's (codec-ptqtp's ptqtp_planes.c) in each row's
 * lane: acc = s0 * d0; acc = acc + s1 * d1 (+ s2 * d2); sum = sum + acc * da,
 * so every result is the reference's to the bit.
 */
#include "anvil/formats/ptqtp.h"
#include "avx2_common.h"
#include "avx2_kernels.h"
#include "avx2_trit_planes.h"

#define Q8K_QS 4
#define Q8K_BYTES 292
#define PLANE ANVIL_PTQTP_PLANE_BYTES

/* sum over a plane of t * q, as eight int32 lanes. */
AVX2_INLINE __m256i plane_dot(const uint8_t *p, const uint8_t *qa) {
    __m256i s[8];
    trit_plane_states(p, s);
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i acc = _mm256_setzero_si256();
    for (int v = 0; v < 8; ++v) {
        const __m256i tq = _mm256_sign_epi8(avx2_load(qa + 32 * v), trit_values(s[v]));
        acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(ones, tq));
    }
    return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
}

AVX2_INLINE void ptqtp_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf, const int K) {
    const size_t bb = (size_t)ANVIL_PTQTP_BLOCK_BYTES(K);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m256 blk = _mm256_setzero_ps();
        for (int k = 0; k < K; ++k) {
            __m256i m[8];
            for (int r = 0; r < R; ++r) m[r] = avx2_opaque(plane_dot(w + r * ws + k * PLANE, a + Q8K_QS));
            const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(avx2_reduce(m, R)),
                                              simd_x86_halves(w + ANVIL_PTQTP_SCALE_OFFSET(K, k), ws, R));
            blk = k == 0 ? part : _mm256_add_ps(blk, part);
        }
        acc = _mm256_add_ps(acc, _mm256_mul_ps(blk, _mm256_set1_ps(anvil_rd_f32(a))));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS_K(ptqtp2, ptqtp_rows, 2, ANVIL_PTQTP_BLOCK_BYTES(2))
SIMD_DEFINE_ENTRY_POINTS_K(ptqtp3, ptqtp_rows, 3, ANVIL_PTQTP_BLOCK_BYTES(3))

/* ---- decoders: y = t0 * d0, y = y + t1 * d1 (...), as the reference --------- */

AVX2_INLINE void ptqtp_decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += ANVIL_PTQTP_BLOCK_BYTES(K), dst += 256) {
        __m256i t[3][8];
        __m256 d[3];
        for (int k = 0; k < K; ++k) {
            __m256i s[8];
            trit_plane_states(b + k * PLANE, s);
            for (int v = 0; v < 8; ++v) t[k][v] = trit_values(s[v]);
            d[k] = _mm256_set1_ps(avx2_half(b + ANVIL_PTQTP_SCALE_OFFSET(K, k)));
        }
        for (int v = 0; v < 8; ++v) {
            for (int part = 0; part < 4; ++part) {
                __m256 y = _mm256_setzero_ps();
                for (int k = 0; k < K; ++k) {
                    const __m128i half = part < 2 ? _mm256_castsi256_si128(t[k][v])
                                                  : _mm256_extracti128_si256(t[k][v], 1);
                    const __m128i bytes = (part & 1) ? _mm_srli_si128(half, 8) : half;
                    const __m256 tk = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), d[k]);
                    y = k == 0 ? tk : _mm256_add_ps(y, tk);
                }
                _mm256_storeu_ps(dst + 32 * v + 8 * part, y);
            }
        }
    }
}

static void ptqtp2_decode(const void *src, float *dst, size_t n) { ptqtp_decode(src, dst, n, 2); }
static void ptqtp3_decode(const void *src, float *dst, size_t n) { ptqtp_decode(src, dst, n, 3); }

AVX2_KERNEL(kernel_ptqtp2, ANVIL_TYPE_PTQTP2, ANVIL_TYPE_Q8_K, "avx2", ptqtp2_vec_dot, ptqtp2_gemv, ptqtp2_gemm,
            ptqtp2_decode);
AVX2_KERNEL(kernel_ptqtp3, ANVIL_TYPE_PTQTP3, ANVIL_TYPE_Q8_K, "avx2", ptqtp3_vec_dot, ptqtp3_gemv, ptqtp3_gemm,
            ptqtp3_decode);

const anvil_kernel *const anvil_avx2_kernels_ptqtp[] = { &kernel_ptqtp2, &kernel_ptqtp3, NULL };
