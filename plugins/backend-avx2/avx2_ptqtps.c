/* SPDX-License-Identifier: MIT */
/* backend-avx2: PTQTP-S trit planes with sub-block scales (ptqtp2s,
 * ptqtp3s) against Q8_K, and their row decoders. The types are
 * codec-ptqtp's; their layout comes from the SDK's anvil/formats/ptqtps.h,
 * the only thing this backend knows of them. Results are the reference's
 * (codec-ptqtp's ptqtps.c) to the bit.
 *
 * Mat-vec through simd-common's simd_trit_act.h: the activation row is
 * rearranged once per call so that lane m of level j holds the code of
 * byte m's trit j (zero where a byte has no such trit). A plane's 52 bytes
 * are then two vectors (bytes 0..31; bytes 32..47 and 48..51 beside
 * zeros), and a level is one multiply by 3 of each (bytewise, mod 256).
 * In every 16-byte lane of such a vector, at each level, all the trits
 * belong to ONE sub-block:
 *     bytes  0..15 at level j: sub-block 2 j      bytes 32..47: 10 + j
 *     bytes 16..31 at level j: sub-block 2 j + 1  bytes 48..51: 15
 * Per vector and level, for each weight row:
 *  - the planes' trits t_k (biased states, two signed compares, as
 *    avx2_trit_planes.h) make the level v = 3 t_0 + t_1 (K = 2) or
 *    9 t_0 + 3 t_1 + t_2 (K = 3), the products 3 t and 9 t as vpsignb of
 *    the constant by t: v in -13..13, no multiplication;
 *  - vpmaddubsw of |q| (once per block for all rows) by v with q's sign
 *    (vpsignb) sums pairs v q exactly in int16 (|v q| <= 13 * 128);
 *  - vpmaddwd by the lane's multiplier m (a 16-bit vector of the two
 *    sub-blocks' m, from a table indexed by their two codes and the
 *    scale's sign bit: no shuffle) sums them into int32 lanes.
 * The block's lanes hold sum_j m_j sum v q, the reference's exact integer
 * s (|s| < 2^23); the R rows' lanes are reduced together, and the float
 * part is the reference's in each row's lane:
 *     sum = sum + ((float)s * d) * d_a,    d = |h| (sign bit cleared)
 *
 * Decoder: the planes' trits in element order (avx2_trit_planes.h), the
 * levels v, and per sub-block (one 16-byte lane) y = (float)(m v) * d,
 * m v exact in int16.
 */
#include "anvil/formats/ptqtps.h"
#include "avx2_common.h"
#include "avx2_kernels.h"
#include "avx2_trit_planes.h"
#include "simd_trit_act.h"

#define PLANE ANVIL_PTQTP_PLANE_BYTES

/* m of code c in table t (0 narrow, 1 wide), as a constant expression. */
#define MULT_PICK(c, m0, m1, m2, m3) ((c) == 0 ? (m0) : (c) == 1 ? (m1) : (c) == 2 ? (m2) : (m3))
#define MULT_LIST(c, list) MULT_PICK(c, list)
#define MULT(t, c) ((t) ? MULT_LIST(c, ANVIL_PTQTPS_MULTS_WIDE) : MULT_LIST(c, ANVIL_PTQTPS_MULTS_NARROW))

/* pair_mults[t][lo | hi << 2]: eight words of m[lo], then eight of m[hi]
 * (the two 16-byte lanes of a vector, two sub-blocks). */
#define W8(x) x, x, x, x, x, x, x, x
#define PAIR(t, i) { W8(MULT(t, (i) & 3)), W8(MULT(t, (i) >> 2)) }
#define PAIRS(t)                                                                                            \
    {                                                                                                       \
        PAIR(t, 0), PAIR(t, 1), PAIR(t, 2), PAIR(t, 3), PAIR(t, 4), PAIR(t, 5), PAIR(t, 6), PAIR(t, 7),     \
            PAIR(t, 8), PAIR(t, 9), PAIR(t, 10), PAIR(t, 11), PAIR(t, 12), PAIR(t, 13), PAIR(t, 14), PAIR(t, 15) \
    }
static const int16_t pair_mults[2][16][16] __attribute__((aligned(32))) = { PAIRS(0), PAIRS(1) };
static const int16_t mults[2][4] = { { ANVIL_PTQTPS_MULTS_NARROW }, { ANVIL_PTQTPS_MULTS_WIDE } };

/* The level v of K planes' trits t[0..K-1] (most significant first). */
AVX2_INLINE __m256i levels(const __m256i *t, const int K) {
    const __m256i three = _mm256_set1_epi8(3);
    if (K == 2) return _mm256_add_epi8(_mm256_sign_epi8(three, t[0]), t[1]);
    const __m256i nine = _mm256_set1_epi8(9);
    return _mm256_add_epi8(_mm256_add_epi8(_mm256_sign_epi8(nine, t[0]), _mm256_sign_epi8(three, t[1])), t[2]);
}

/* Plane bytes 0..31 (h = 0) or 32..51 beside zeros (h = 1), biased. */
AVX2_INLINE __m256i plane_half(const uint8_t *p, const int h) {
    const __m256i x = h == 0 ? avx2_load(p)
                             : _mm256_inserti128_si256(_mm256_castsi128_si256(avx2_load128(p + 32)),
                                                       _mm_cvtsi32_si128((int)anvil_rd_u32(p + 48)), 1);
    return _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80));
}

/* One row's block w against the prepared activations A (aq: |q| of
 * A->q[j][32 h ..], at aq + 32 (5 h + j)): sum_j m_j sum v q spread over
 * eight int32 lanes. */
AVX2_INLINE __m256i row_dot(const uint8_t *w, const uint8_t *aq, const simd_trit_act *A, const int K) {
    const uint32_t field = anvil_rd_u32(w + ANVIL_PTQTPS_SC_OFFSET(K));
    /* byte offsets into pair_mults: vector j of half 0 pairs codes 2j,
     * 2j+1 (bits 4j..4j+3 of field); of half 1, code 10 + j with code 15 */
    const uint8_t *pm = (const uint8_t *)pair_mults[w[ANVIL_PTQTPS_D_OFFSET(K) + 1] >> 7];
    const uint8_t *pm15 = pm + ((field >> 23) & 0x180u);
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
        __m256i s[3];
        for (int k = 0; k < K; ++k) s[k] = plane_half(w + k * PLANE, h);
#pragma GCC unroll 5
        for (int j = 0; j < 5; ++j) {
            __m256i t[3];
            for (int k = 0; k < K; ++k) {
                if (j > 0) s[k] = trit_times3(s[k]);
                t[k] = trit_values(s[k]);
            }
            const __m256i q = avx2_load(A->q[j] + 32 * h);
            const __m256i p = _mm256_maddubs_epi16(avx2_load(aq + 32 * (5 * h + j)), _mm256_sign_epi8(levels(t, K), q));
            const uint8_t *mj = h == 0 ? pm + (j < 2 ? (field << (5 - 4 * j)) & 0x1E0u : (field >> (4 * j - 5)) & 0x1E0u)
                                       : pm15 + ((field >> (15 + 2 * j)) & 0x60u);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, avx2_load(mj)));
        }
    }
    return acc;
}

AVX2_INLINE void ptqtps_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *act, float *y, const int R,
                             simd_pf *pf, const int K) {
    const size_t bb = (size_t)ANVIL_PTQTPS_BLOCK_BYTES(K);
    const simd_trit_act *A = (const simd_trit_act *)act;
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 acc = A->carry ? avx2_load_rows(y, R) : _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, ++A) {
        simd_pf_block(pf, b, bb, ws, R);
        _Alignas(32) uint8_t aq[10 * 32];
        for (int h = 0; h < 2; ++h) {
            for (int j = 0; j < 5; ++j) {
                _mm256_store_si256((__m256i *)(aq + 32 * (5 * h + j)), _mm256_abs_epi8(avx2_load(A->q[j] + 32 * h)));
            }
        }
        __m256i m[8];
        for (int r = 0; r < R; ++r) m[r] = avx2_opaque(row_dot(w + (size_t)r * ws, aq, A, K));
        /* |fp32(h)| = fp32(h & 0x7fff), NaN and Inf included */
        const __m256 d = _mm256_and_ps(simd_x86_halves(w + ANVIL_PTQTPS_D_OFFSET(K), ws, R), magnitude);
        const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(avx2_reduce(m, R)), d);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(part, _mm256_set1_ps(A->d)));
    }
    avx2_store_rows(y, acc, R);
}

AVX2_INLINE void ptqtp2s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    ptqtps_rows(nb, w, ws, a, y, R, pf, 2);
}

AVX2_INLINE void ptqtp3s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    ptqtps_rows(nb, w, ws, a, y, R, pf, 3);
}

SIMD_DEFINE_TRIT_ENTRY_POINTS(ptqtp2s, ANVIL_PTQTPS_BLOCK_BYTES(2))
SIMD_DEFINE_TRIT_ENTRY_POINTS(ptqtp3s, ANVIL_PTQTPS_BLOCK_BYTES(3))

/* ---- decoders: y = (float)(m v) * d, as the reference ------------------------ */

/* The 16 int16 m v of one sub-block (16 levels v) -> 16 floats at dst. */
AVX2_INLINE void decode_sub(__m128i v, int m, __m256 d, float *dst) {
    const __m256i mv = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(v), _mm256_set1_epi16((short)m));
    const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(mv));
    const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(mv, 1));
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), d));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), d));
}

AVX2_INLINE void ptqtps_decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += ANVIL_PTQTPS_BLOCK_BYTES(K), dst += 256) {
        __m256i s[3][8];
        for (int k = 0; k < K; ++k) trit_plane_states(b + k * PLANE, s[k]);
        const uint32_t field = anvil_rd_u32(b + ANVIL_PTQTPS_SC_OFFSET(K));
        const uint16_t h = anvil_rd_u16(b + ANVIL_PTQTPS_D_OFFSET(K));
        const int16_t *mt = mults[h >> 15];
        const __m256 d = _mm256_set1_ps(_cvtsh_ss((unsigned short)(h & 0x7fffu)));
        for (int v = 0; v < 8; ++v) {
            __m256i t[3];
            for (int k = 0; k < K; ++k) t[k] = trit_values(s[k][v]);
            const __m256i lv = levels(t, K);
            decode_sub(_mm256_castsi256_si128(lv), mt[(field >> (4 * v)) & 3u], d, dst + 32 * v);
            decode_sub(_mm256_extracti128_si256(lv, 1), mt[(field >> (4 * v + 2)) & 3u], d, dst + 32 * v + 16);
        }
    }
}

static void ptqtp2s_decode(const void *src, float *dst, size_t n) { ptqtps_decode(src, dst, n, 2); }
static void ptqtp3s_decode(const void *src, float *dst, size_t n) { ptqtps_decode(src, dst, n, 3); }

AVX2_KERNEL(kernel_ptqtp2s, ANVIL_TYPE_PTQTP2S, ANVIL_TYPE_Q8_K, "avx2", ptqtp2s_vec_dot, ptqtp2s_gemv, ptqtp2s_gemm,
            ptqtp2s_decode);
AVX2_KERNEL(kernel_ptqtp3s, ANVIL_TYPE_PTQTP3S, ANVIL_TYPE_Q8_K, "avx2", ptqtp3s_vec_dot, ptqtp3s_gemv, ptqtp3s_gemm,
            ptqtp3s_decode);

const anvil_kernel *const anvil_avx2_kernels_ptqtps[] = { &kernel_ptqtp2s, &kernel_ptqtp3s, NULL };
