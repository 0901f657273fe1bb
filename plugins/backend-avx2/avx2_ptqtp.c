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
 * Trits: a plane's bytes are TQ1_0's base-3 fractions. Biased (x ^ 0x80,
 * once per load), a byte's state s makes the signed comparisons direct:
 * trit +1 for s > 42 (x >= 171), -1 for s < -42 (x <= 85); the next
 * trit's state is 3 s mod 256 (3x mod 256, biased: 3(s + 128) - 128 = 3s
 * + 256). The eight 32-trit vectors of a plane, in element order, as in
 * avx2_ternary.c's TQ1_0: five levels of qs[0..31], then qs[32..47] with
 * levels 2t and 2t+1 in the two lanes, then its last level beside qh.
 *
 * Float part, the reference's (codec-ptqtp's ptqtp_planes.c) in each row's
 * lane: acc = s0 * d0; acc = acc + s1 * d1 (+ s2 * d2); sum = sum + acc * da,
 * so every result is the reference's to the bit.
 */
#include "anvil/formats/ptqtp.h"
#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8K_QS 4
#define Q8K_BYTES 292
#define PLANE ANVIL_PTQTP_PLANE_BYTES

AVX2_INLINE __m256i times3(__m256i x) { return _mm256_add_epi8(x, _mm256_add_epi8(x, x)); }
AVX2_INLINE __m256i times9(__m256i x) { return times3(times3(x)); }

/* The eight state vectors of a plane, biased; vector v covers elements
 * 32 v .. 32 v + 31. */
AVX2_INLINE void plane_states(const uint8_t *p, __m256i s[8]) {
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    __m256i q = _mm256_xor_si256(avx2_load(p), bias);
    for (int k = 0; k < 5; ++k) {
        s[k] = q;
        q = times3(q);
    }
    /* bytes 32..47: low lane level 2t, high lane level 2t + 1 */
    const __m256i b = _mm256_xor_si256(avx2_load_lane(p + 32), bias);
    __m256i v = _mm256_blend_epi32(b, times3(b), 0xF0);
    s[5] = v;
    v = times9(v);
    s[6] = v;
    v = times9(v);
    /* bytes 48..51: dword t of the high lane holds them at level t */
    const __m256i c0 = _mm256_xor_si256(_mm256_set1_epi32((int)anvil_rd_u32(p + 48)), bias);
    const __m256i c1 = times3(c0), c2 = times3(c1), c3 = times3(c2);
    const __m256i c = _mm256_blend_epi32(_mm256_blend_epi32(c0, c1, 0x22), _mm256_blend_epi32(c2, c3, 0x88), 0xCC);
    s[7] = _mm256_blend_epi32(v, c, 0xF0);
}

/* The trits of a state vector as int8 -1 / 0 / +1. */
AVX2_INLINE __m256i trits(__m256i s) {
    const __m256i plus = _mm256_cmpgt_epi8(s, _mm256_set1_epi8(42));
    const __m256i minus = _mm256_cmpgt_epi8(_mm256_set1_epi8(-42), s);
    return _mm256_sub_epi8(minus, plus); /* masks are -1: -1 - 0 = -1, 0 - (-1) = +1 */
}

/* sum over a plane of t * q, as eight int32 lanes. */
AVX2_INLINE __m256i plane_dot(const uint8_t *p, const uint8_t *qa) {
    __m256i s[8];
    plane_states(p, s);
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i acc = _mm256_setzero_si256();
    for (int v = 0; v < 8; ++v) {
        const __m256i tq = _mm256_sign_epi8(avx2_load(qa + 32 * v), trits(s[v]));
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

AVX2_INLINE void ptqtp2_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    ptqtp_rows(nb, w, ws, a, y, R, pf, 2);
}

AVX2_INLINE void ptqtp3_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    ptqtp_rows(nb, w, ws, a, y, R, pf, 3);
}

SIMD_DEFINE_ENTRY_POINTS(ptqtp2, 256, ANVIL_PTQTP_BLOCK_BYTES(2))
SIMD_DEFINE_ENTRY_POINTS(ptqtp3, 256, ANVIL_PTQTP_BLOCK_BYTES(3))

/* ---- decoders: y = t0 * d0, y = y + t1 * d1 (...), as the reference --------- */

AVX2_INLINE void ptqtp_decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += ANVIL_PTQTP_BLOCK_BYTES(K), dst += 256) {
        __m256i t[3][8];
        __m256 d[3];
        for (int k = 0; k < K; ++k) {
            __m256i s[8];
            plane_states(b + k * PLANE, s);
            for (int v = 0; v < 8; ++v) t[k][v] = trits(s[v]);
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
