/* SPDX-License-Identifier: MIT */
/* backend-avx2: PTQTP-S trit planes with sub-block scales (ptqtp2s,
 * ptqtp3s) against Q8_K, and their row decoders. The types are
 * codec-ptqtp's; their layout comes from the SDK's anvil/formats/ptqtps.h,
 * the only thing this backend knows of them. Results are the reference's
 * (codec-ptqtp's ptqtps.c) to the bit.
 *
 * Mat-vec on the Q8_K codes as they are: a plane's trits are eight 32-trit
 * vectors in element order (avx2_trit_planes.h's layout): five levels of
 * bytes 0..31, bytes 32..47 with two levels a vector (9 x as x + 8 x, a
 * shift), and their last level beside bytes 48..51's four levels (built
 * as 16-bit products 3^t x, their low bytes). Vector v covers elements
 * 32 v .. 32 v + 31, so its two 16-byte lanes are sub-blocks 2 v and
 * 2 v + 1. (simd_trit_act.h's byte-order activations would need ten
 * vectors a plane, five of them 12 bytes short: 4 - 5 % slower.) Per
 * vector, for each weight row:
 *  - the planes' trits t_k (biased states, two signed compares, as
 *    avx2_trit_planes.h; for K = 3's first two planes, two saturating
 *    subtractions of the plain states, see trit_signs) make the level v = 3 t_0 + t_1 (K = 2) or
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
 * (About 143 vector operations a row and block for K = 2, 12 a vector;
 * in cache the kernel is bound by their count: one fewer a vector is
 * about 6 % faster.)
 *
 * Decoder: the planes' trits in element order (avx2_trit_planes.h), the
 * levels v, and per sub-block (one 16-byte lane) y = (float)(m v) * d,
 * m v exact in int16.
 */
#include "anvil/formats/ptqtps.h"
#include "avx2_common.h"
#include "avx2_kernels.h"
#include "avx2_trit_planes.h"

#define PLANE ANVIL_PTQTP_PLANE_BYTES
#define Q8K_QS 4
#define Q8K_BYTES 292

/* m of code c in table t (0 narrow, 1 wide), as a constant expression. */
#define MULT_PICK(c, m0, m1, m2, m3) ((c) == 0 ? (m0) : (c) == 1 ? (m1) : (c) == 2 ? (m2) : (m3))
#define MULT_LIST(c, list) MULT_PICK(c, list)
#define MULT(t, c) ((t) ? MULT_LIST(c, ANVIL_PTQTPS_MULTS_WIDE) : MULT_LIST(c, ANVIL_PTQTPS_MULTS_NARROW))

/* pair_mults[t][lo | hi << 2]: eight words of m[lo], then eight of m[hi]
 * (the two 16-byte lanes of a vector, two sub-blocks). */
#define W8(x) x, x, x, x, x, x, x, x
#define PAIR(t, i) \
    { W8(MULT(t, (i)&3)), W8(MULT(t, (i) >> 2)) }
#define PAIRS(t)                                                                                                    \
    {                                                                                                               \
        PAIR(t, 0), PAIR(t, 1), PAIR(t, 2), PAIR(t, 3), PAIR(t, 4), PAIR(t, 5), PAIR(t, 6), PAIR(t, 7), PAIR(t, 8), \
            PAIR(t, 9), PAIR(t, 10), PAIR(t, 11), PAIR(t, 12), PAIR(t, 13), PAIR(t, 14), PAIR(t, 15)                \
    }
static const int16_t pair_mults[2][16][16] __attribute__((aligned(32))) = { PAIRS(0), PAIRS(1) };
static const int16_t mults[2][4] = { { ANVIL_PTQTPS_MULTS_NARROW }, { ANVIL_PTQTPS_MULTS_WIDE } };

/* The level v of K planes' trits (most significant first): t[K-1] the
 * last plane's trits, t[k < K-1] any bytes whose signs are plane k's
 * trits (vpsignb only reads the sign). */
AVX2_INLINE __m256i levels(const __m256i *t, const int K) {
    const __m256i three = _mm256_set1_epi8(3);
    if (K == 2) return _mm256_add_epi8(_mm256_sign_epi8(three, t[0]), t[1]);
    const __m256i nine = _mm256_set1_epi8(9);
    return _mm256_add_epi8(_mm256_add_epi8(_mm256_sign_epi8(nine, t[0]), _mm256_sign_epi8(three, t[1])), t[2]);
}

/* x biased (x ^ 0x80: the signed compares of trit_values) when asked. */
AVX2_INLINE __m256i bias_if(__m256i x, const int on) {
    return on ? _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80)) : x;
}

/* Of unbiased states x, bytes whose sign is the trit: x - 170 (> 0) for
 * x >= 171, x - 86 (< 0) for x <= 85, else 0 -- two saturating
 * subtractions, no bias. K = 3's first two planes take these (one
 * operation fewer a load, 2 % faster); for K = 2's first plane it
 * measured 1 % slower, so there all planes are biased. */
AVX2_INLINE __m256i trit_signs(__m256i x) {
    return _mm256_sub_epi8(_mm256_subs_epu8(x, _mm256_set1_epi8((char)170)),
                           _mm256_subs_epu8(_mm256_set1_epi8(86), x));
}

/* Whether plane k of K keeps biased states (trit_values) or plain ones
 * (trit_signs). */
AVX2_INLINE int biased(int k, const int K) { return K == 2 || k == K - 1; }

/* 9 x mod 256, bytewise (x + 8 x; the shift's carries into the next
 * byte masked off). Keeps the bias: 9 * 128 = 128 mod 256. */
AVX2_INLINE __m256i times9(__m256i x) {
    return _mm256_add_epi8(x, _mm256_and_si256(_mm256_slli_epi16(x, 3), _mm256_set1_epi8((char)0xF8)));
}

/* Bytes 48..51 of the plane at p at levels 0..3 (dword t: 3^t x mod
 * 256), biased when `on`, in the HIGH lane. The bytes broadcast,
 * vpmaddubsw by (3^t, 0) or (0, 3^t) makes word 4 t + i the product of
 * byte (0, 2, 1, 3)[i] (exact: 255 * 27 < 2^15); the low bytes, gathered. */
AVX2_INLINE __m256i tail_levels(const uint8_t *p, const int on) {
    const __m256i pow3 = _mm256_setr_epi8(1, 0, 1, 0, 0, 1, 0, 1, 3, 0, 3, 0, 0, 3, 0, 3, /* */
                                          9, 0, 9, 0, 0, 9, 0, 9, 27, 0, 27, 0, 0, 27, 0, 27);
    const __m256i low = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 2, 6, 8, 12, 10, 14, /* */
                                         -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 2, 6, 8, 12, 10, 14);
    const __m256i x = _mm256_castps_si256(_mm256_set1_ps(anvil_rd_f32(p + 48))); /* the bytes' bits */
    const __m256i b = _mm256_shuffle_epi8(_mm256_maddubs_epi16(x, pow3), low);   /* qwords 1, 3 */
    return bias_if(_mm256_permute4x64_epi64(b, 0xD0), on);
}

/* Vector v's dot of one row: levels from the planes' trits t, times the
 * codes (|q| at aq, q at qa), per sub-block times m (multipliers at pm). */
AVX2_INLINE __m256i vector_dot(const __m256i *t, const uint8_t *qa, const uint8_t *aq, const uint8_t *pm,
                               const int K) {
    const __m256i p = _mm256_maddubs_epi16(avx2_load(aq), _mm256_sign_epi8(levels(t, K), avx2_load(qa)));
    return _mm256_madd_epi16(p, avx2_load(pm));
}

/* One row's block w against the Q8_K codes qa (aq: their |q|): sum_j m_j
 * sum v q spread over eight int32 lanes. Vector v covers elements 32 v ..
 * 32 v + 31 (avx2_trit_planes.h's order): sub-blocks 2 v and 2 v + 1,
 * whose codes are bits 4 v .. 4 v + 3 of the code field. */
AVX2_INLINE __m256i row_dot(const uint8_t *w, const uint8_t *aq, const uint8_t *qa, const int K) {
    const uint32_t field = anvil_rd_u32(w + ANVIL_PTQTPS_SC_OFFSET(K));
    const uint8_t *pm = (const uint8_t *)pair_mults[w[ANVIL_PTQTPS_D_OFFSET(K) + 1] >> 7];
    __m256i acc = _mm256_setzero_si256(), s[3], t[3];
    /* bytes 0..31: levels 0..4 */
    for (int k = 0; k < K; ++k) s[k] = bias_if(avx2_load(w + k * PLANE), biased(k, K));
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
        if (v == 5) { /* bytes 32..47: levels 0, 1 (lanes), 2, 3, 4 beside bytes 48..51's levels */
            for (int k = 0; k < K; ++k) {
                const __m256i b = bias_if(avx2_load_lane(w + k * PLANE + 32), biased(k, K));
                s[k] = _mm256_blend_epi32(b, trit_times3(b), 0xF0);
            }
        }
        for (int k = 0; k < K; ++k) {
            if (v > 0 && v < 5) s[k] = trit_times3(s[k]);
            if (v > 5) s[k] = times9(s[k]);
            const __m256i x = v < 7 ? s[k] : _mm256_blend_epi32(s[k], tail_levels(w + k * PLANE, biased(k, K)), 0xF0);
            t[k] = biased(k, K) ? trit_values(x) : trit_signs(x);
        }
        /* table row (codes 2v, 2v+1) * 32 bytes */
        const uint32_t off = v < 2 ? (field << (5 - 4 * v)) & 0x1E0u : (field >> (4 * v - 5)) & 0x1E0u;
        acc = _mm256_add_epi32(acc, vector_dot(t, qa + 32 * v, aq + 32 * v, pm + off, K));
    }
    return acc;
}

AVX2_INLINE void ptqtps_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf, const int K) {
    const size_t bb = (size_t)ANVIL_PTQTPS_BLOCK_BYTES(K);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        const uint8_t *qa = a + Q8K_QS;
        _Alignas(32) uint8_t aq[8 * 32];
        for (int v = 0; v < 8; ++v)
            _mm256_store_si256((__m256i *)(aq + 32 * v), _mm256_abs_epi8(avx2_load(qa + 32 * v)));
        __m256i m[8];
#pragma GCC unroll 2 /* two rows interleaved: 1 % faster than one, 8 slower */
        for (int r = 0; r < R; ++r) m[r] = avx2_opaque(row_dot(w + (size_t)r * ws, aq, qa, K));
        /* |fp32(h)| = fp32(h & 0x7fff), NaN and Inf included */
        const __m256 d = _mm256_and_ps(simd_x86_halves(w + ANVIL_PTQTPS_D_OFFSET(K), ws, R), magnitude);
        const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(avx2_reduce(m, R)), d);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(part, _mm256_set1_ps(anvil_rd_f32(a))));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS_K(ptqtp2s, ptqtps_rows, 2, ANVIL_PTQTPS_BLOCK_BYTES(2))
SIMD_DEFINE_ENTRY_POINTS_K(ptqtp3s, ptqtps_rows, 3, ANVIL_PTQTPS_BLOCK_BYTES(3))

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
