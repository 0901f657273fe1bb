/* SPDX-License-Identifier: MIT */
/* backend-avx512: PTQTP trit planes (ptqtp2, ptqtp3) against Q8_K, and their
 * row decoders. The types are codec-ptqtp's; their layout comes from the
 * SDK's anvil/formats/ptqtp.h, the only thing this backend knows of them.
 *
 * Mat-vec through simd-common's simd_trit_act.h (the activation row in the
 * planes' byte order, once per call) and avx512_trit_group.h (a plane's
 * exact integer dot: multiplication-free in the trits, see there).
 *
 * Float part, the reference's (codec-ptqtp's ptqtp_planes.c) in each row's
 * lane: acc = s0 * d0; acc = acc + s1 * d1 (+ s2 * d2); sum = sum + acc * da,
 * so every result is the reference's to the bit.
 */
#include "anvil/formats/ptqtp.h"
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "avx512_trit_group.h"

#define PLANE ANVIL_PTQTP_PLANE_BYTES

AVX512_INLINE __m512i times3(__m512i x) { return _mm512_add_epi8(x, _mm512_add_epi8(x, x)); }
AVX512_INLINE __m512i times9(__m512i x) { return times3(times3(x)); }

AVX512_INLINE void ptqtp_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *act, float *y, const int R,
                              simd_pf *pf, const int K) {
    const size_t bb = (size_t)ANVIL_PTQTP_BLOCK_BYTES(K);
    const simd_trit_act *A = (const simd_trit_act *)act;
    __m256 acc = A->carry ? avx512_load_rows(y, R) : _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, ++A) {
        simd_pf_block(pf, b, bb, ws, R);
        __m512i Q[5];
        for (int j = 0; j < 5; ++j) Q[j] = avx512_load(A->q[j]);
        __m256 blk = _mm256_setzero_ps();
        for (int k = 0; k < K; ++k) {
            __m512i m[8];
            AVX512_FOR_ROWS for (int r = 0; r < R; ++r) m[r] = trit_group_dot(w + (size_t)r * ws + k * PLANE, Q);
            const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(trit_group_sums(m, R, A)),
                                              simd_x86_halves(w + ANVIL_PTQTP_SCALE_OFFSET(K, k), ws, R));
            blk = k == 0 ? part : _mm256_add_ps(blk, part);
        }
        acc = _mm256_add_ps(acc, _mm256_mul_ps(blk, _mm256_set1_ps(A->d)));
    }
    avx512_store_rows(y, acc, R);
}

AVX512_INLINE void ptqtp2_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                               simd_pf *pf) {
    ptqtp_rows(nb, w, ws, a, y, R, pf, 2);
}

AVX512_INLINE void ptqtp3_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                               simd_pf *pf) {
    ptqtp_rows(nb, w, ws, a, y, R, pf, 3);
}

SIMD_DEFINE_TRIT_ENTRY_POINTS(ptqtp2, ANVIL_PTQTP_BLOCK_BYTES(2))
SIMD_DEFINE_TRIT_ENTRY_POINTS(ptqtp3, ANVIL_PTQTP_BLOCK_BYTES(3))

/* ---- decoders: y = t0 * d0, y = y + t1 * d1 (...), as the reference ---------
 * The states in element order ---------------------------------
 * The four zmm of biased states of a plane, element order (as
 * avx512_ternary.c builds TQ1_0's trits):
 *   z0 = [q, 3q]             (q = bytes 0..31: levels 0, 1)
 *   z1 = [9q, 27q]           (levels 2, 3)
 *   z2 = [81q | p, 3p]       (level 4; p = bytes 32..47: levels 0, 1)
 *   z3 = [9p, 27p, 81p, h]   (p's levels 2..4; h: dword t = bytes 48..51 at level t) */
AVX512_INLINE void plane_states(const uint8_t *p, __m512i z[4]) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const __m512i b = _mm512_xor_si512(_mm512_broadcast_i64x4(avx512_load256(p)), bias);
    z[0] = _mm512_mask_blend_epi64(0xF0, b, times3(b));
    z[1] = times9(z[0]);
    const __m512i q2 = times9(z[1]);
    const __m512i f0 =
        _mm512_xor_si512(_mm512_mask_blend_epi32(0xF000, _mm512_broadcast_i32x4(avx512_load128(p + 32)),
                                                 _mm512_set1_epi32((int)anvil_rd_u32(p + 48))),
                         bias);
    const __m512i g = _mm512_mask_blend_epi32(0xA0F0, f0, times3(f0)); /* [p, 3p, p, (h, 3h, h, 3h)] */
    const __m512i g9 = times9(g), g81 = times9(g9);
    z[2] = _mm512_shuffle_i64x2(q2, g, _MM_SHUFFLE(1, 0, 1, 0));
    z[3] = _mm512_mask_blend_epi32(0x3000, _mm512_mask_blend_epi32(0x0F00, g9, g81), g);
}


/* Bytes 16 j .. 16 j + 15 of v (j a constant after inlining). */
AVX512_INLINE __m128i lane128(__m512i v, int j) {
    switch (j) { /* the lane index must be an immediate */
    case 0: return _mm512_extracti32x4_epi32(v, 0);
    case 1: return _mm512_extracti32x4_epi32(v, 1);
    case 2: return _mm512_extracti32x4_epi32(v, 2);
    default: return _mm512_extracti32x4_epi32(v, 3);
    }
}

AVX512_INLINE void ptqtp_decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += ANVIL_PTQTP_BLOCK_BYTES(K), dst += 256) {
        __m512i t[3][4];
        __m512 d[3];
        for (int k = 0; k < K; ++k) {
            __m512i z[4];
            plane_states(b + k * PLANE, z);
            for (int v = 0; v < 4; ++v)
                t[k][v] = trit_group_times(z[v], _mm512_set1_epi8(1)); /* the trits themselves */
            d[k] = _mm512_set1_ps(avx512_half(b + ANVIL_PTQTP_SCALE_OFFSET(K, k)));
        }
        for (int v = 0; v < 4; ++v) {
            for (int j = 0; j < 4; ++j) {
                __m512 y = _mm512_setzero_ps();
                for (int k = 0; k < K; ++k) {
                    const __m512 tk =
                        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lane128(t[k][v], j))), d[k]);
                    y = k == 0 ? tk : _mm512_add_ps(y, tk);
                }
                _mm512_storeu_ps(dst + 64 * v + 16 * j, y);
            }
        }
    }
}

static void ptqtp2_decode(const void *src, float *dst, size_t n) { ptqtp_decode(src, dst, n, 2); }
static void ptqtp3_decode(const void *src, float *dst, size_t n) { ptqtp_decode(src, dst, n, 3); }

AVX512_KERNEL(kernel_ptqtp2, ANVIL_TYPE_PTQTP2, ANVIL_TYPE_Q8_K, ptqtp2_vec_dot, ptqtp2_gemv, ptqtp2_gemm,
              ptqtp2_decode);
AVX512_KERNEL(kernel_ptqtp3, ANVIL_TYPE_PTQTP3, ANVIL_TYPE_Q8_K, ptqtp3_vec_dot, ptqtp3_gemv, ptqtp3_gemm,
              ptqtp3_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_ptqtp)[] = { &kernel_ptqtp2, &kernel_ptqtp3, NULL };
