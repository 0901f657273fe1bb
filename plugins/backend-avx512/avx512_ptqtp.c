/* SPDX-License-Identifier: MIT */
/* backend-avx512: PTQTP trit planes (ptqtp2, ptqtp3, and PTQTP-S's ptqtp2s,
 * ptqtp3s) against Q8_K, and their row decoders. The types are
 * codec-ptqtp's; their layout comes from the SDK's anvil/formats/ptqtp.h
 * and ptqtps.h, the only things this backend knows of them.
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
#include "anvil/formats/ptqtps.h"
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

/* fmt_rows (the entry points' R-row kernel) as impl with K planes, and the
 * entry points from it. */
#define PTQTP_ENTRY_POINTS(fmt, impl, K, bytes) \
    SIMD_DEFINE_ROWS_K(fmt, impl, K)            \
    SIMD_DEFINE_TRIT_ENTRY_POINTS(fmt, bytes)

PTQTP_ENTRY_POINTS(ptqtp2, ptqtp_rows, 2, ANVIL_PTQTP_BLOCK_BYTES(2))
PTQTP_ENTRY_POINTS(ptqtp3, ptqtp_rows, 3, ANVIL_PTQTP_BLOCK_BYTES(3))

/* ---- PTQTP-S: the K planes are the balanced-ternary digits of one level -----
 *
 * Per level j of the 52-byte groups (the states s of every plane, as in
 * trit_group_dot), digit d = [s >= 86] + [s >= 171] (floor(3 s / 256)),
 * and u = sum_k 3^(K-1-k) d_k in 0..8 (K = 2) or 0..26 (K = 3): the
 * weight's level plus 4 (or 13). 16-byte lane L of level j is one
 * 16-weight sub-block (ptqtps.h's order: L = 0 -> 2j, 1 -> 2j+1,
 * 2 -> 10+j, 3 -> 15), so vpmaddubsw(u, q) (pairs <= 2 * 26 * 128, no
 * saturation) meets the sub-blocks' multipliers m, spread per lane, in one
 * vpmaddwd / vpdpwssd. The bias: sum v q = sum u q - c sum q per
 * sub-block, from the prepared sub-sums. All exact int32; the float part
 * is the reference's, per row: sum = sum + ((float)s * d) * d_a. */

/* The sixteen sub-blocks' multipliers (int16) of the block at p. */
AVX512_INLINE __m256i ptqtps_mults(const uint8_t *p, const int K) {
    /* words 0..7 the codes' low 16 bits, 8..15 the high ones */
    const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                            3, 2, 3, 2, 3, 2, 3);
    const __m256i shifts = _mm256_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i field =
        _mm256_shuffle_epi8(_mm256_set1_epi32((int)anvil_rd_u32(p + ANVIL_PTQTPS_SC_OFFSET(K))), spread);
    const int wide = anvil_rd_u16(p + ANVIL_PTQTPS_D_OFFSET(K)) >> 15;
    const __m256i code = _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi16(field, shifts), _mm256_set1_epi16(3)),
                                         _mm256_set1_epi16((short)(4 * wide)));
    static const int16_t table[16] = { ANVIL_PTQTPS_MULTS_NARROW, ANVIL_PTQTPS_MULTS_WIDE };
    return _mm256_permutexvar_epi16(code, avx512_load256(table));
}

/* Level j's word index into the multipliers: 128-bit lane L -> sub-block. */
AVX512_INLINE __m512i ptqtps_level_index(int j) {
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)(2 * j))),
                                                       _mm_set1_epi16((short)(2 * j + 1)), 1)),
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)(10 + j))), _mm_set1_epi16(15), 1), 1);
}

/* The block at p (K planes) against A, as sixteen int32 lanes whose total
 * is the block's exact integer s. */
AVX512_INLINE __m512i ptqtps_block_dot(const uint8_t *p, __m256i csub, const __m512i Q[5], const int K) {
    const __m256i mults = ptqtps_mults(p, K);
    const __m512i m512 = avx512_zext256(mults);
    __m512i s[3];
    for (int k = 0; k < K; ++k) s[k] = trit_group_load(p + k * PLANE);
    const __m512i lo = _mm512_set1_epi8(86), hi = _mm512_set1_epi8((char)171);
    /* the bias first: sum_j m_j * (-c * codes of sub-block j) */
    __m512i acc = avx512_zext256(_mm256_madd_epi16(mults, csub));
    for (int j = 0; j < 5; ++j) {
        __m512i u = _mm512_setzero_si512();
        for (int k = 0; k < K; ++k) {
            const __m512i wk = _mm512_set1_epi8((char)(K - 1 - k == 2 ? 9 : K - 1 - k == 1 ? 3 : 1));
            u = _mm512_mask_add_epi8(u, _mm512_cmpge_epu8_mask(s[k], lo), u, wk);
            u = _mm512_mask_add_epi8(u, _mm512_cmpge_epu8_mask(s[k], hi), u, wk);
            if (j < 4) s[k] = trit_x3(s[k]);
        }
        const __m512i pairs = _mm512_maddubs_epi16(u, Q[j]);
        const __m512i mj = _mm512_permutexvar_epi16(ptqtps_level_index(j), m512);
#if AVX512_VNNI
        acc = _mm512_dpwssd_epi32(acc, pairs, mj);
#else
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, mj));
#endif
    }
    return acc;
}

AVX512_INLINE void ptqtps_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *act, float *y, const int R,
                               simd_pf *pf, const int K) {
    const size_t bb = (size_t)ANVIL_PTQTPS_BLOCK_BYTES(K);
    const simd_trit_act *A = (const simd_trit_act *)act;
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)); /* the sign bit names the table */
    __m256 acc = A->carry ? avx512_load_rows(y, R) : _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, ++A) {
        simd_pf_block(pf, b, bb, ws, R);
        __m512i Q[5];
        for (int j = 0; j < 5; ++j) Q[j] = avx512_load(A->q[j]);
        /* -c times the codes' sub-block sums (|13 * 16 * 128| < 2^15) */
        const __m256i csub = _mm256_mullo_epi16(_mm256_loadu_si256((const __m256i *)A->sub_sums),
                                                _mm256_set1_epi16((short)(K == 2 ? -4 : -13)));
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) m[r] = ptqtps_block_dot(w + (size_t)r * ws, csub, Q, K);
        const __m256 d = _mm256_and_ps(simd_x86_halves(w + ANVIL_PTQTPS_D_OFFSET(K), ws, R), magnitude);
        const __m256 blk = _mm256_mul_ps(_mm256_cvtepi32_ps(avx512_reduce(m, R)), d);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(blk, _mm256_set1_ps(A->d)));
    }
    avx512_store_rows(y, acc, R);
}

PTQTP_ENTRY_POINTS(ptqtp2s, ptqtps_rows, 2, ANVIL_PTQTPS_BLOCK_BYTES(2))
PTQTP_ENTRY_POINTS(ptqtp3s, ptqtps_rows, 3, ANVIL_PTQTPS_BLOCK_BYTES(3))

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

/* PTQTP-S: v = sum_k 3^(K-1-k) t_k (bytes, |v| <= 13), y = (float)(m v) * d,
 * with (float)(m v) = (float)v * (float)m exactly (|m v| <= 208). Element
 * order: 128-bit lane j of t[.][v] is sub-block 4 v + j. */
/* |h| (the sign bit names the table), NaN payloads kept. */
AVX512_INLINE float ptqtps_scale(const uint8_t *p) {
    const uint16_t h = (uint16_t)(anvil_rd_u16(p) & 0x7fffu);
    uint8_t b[2];
    memcpy(b, &h, sizeof b);
    return avx512_half(b);
}

AVX512_INLINE void ptqtps_decode(const void *src, float *dst, size_t n, const int K) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += ANVIL_PTQTPS_BLOCK_BYTES(K), dst += 256) {
        __m512i lv[4] = { _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                          _mm512_setzero_si512() };
        for (int k = 0; k < K; ++k) {
            __m512i z[4];
            plane_states(b + k * PLANE, z);
            for (int v = 0; v < 4; ++v)
                lv[v] = _mm512_add_epi8(trit_x3(lv[v]), trit_group_times(z[v], _mm512_set1_epi8(1)));
        }
        int16_t m[16];
        _mm256_storeu_si256((__m256i *)m, ptqtps_mults(b, K));
        const __m512 d = _mm512_set1_ps(ptqtps_scale(b + ANVIL_PTQTPS_D_OFFSET(K)));
        for (int v = 0; v < 4; ++v) {
            for (int j = 0; j < 4; ++j) {
                const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lane128(lv[v], j)));
                _mm512_storeu_ps(dst + 64 * v + 16 * j,
                                 _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps((float)m[4 * v + j])), d));
            }
        }
    }
}

static void ptqtp2s_decode(const void *src, float *dst, size_t n) { ptqtps_decode(src, dst, n, 2); }
static void ptqtp3s_decode(const void *src, float *dst, size_t n) { ptqtps_decode(src, dst, n, 3); }

static void ptqtp2_decode(const void *src, float *dst, size_t n) { ptqtp_decode(src, dst, n, 2); }
static void ptqtp3_decode(const void *src, float *dst, size_t n) { ptqtp_decode(src, dst, n, 3); }

AVX512_KERNEL(kernel_ptqtp2, ANVIL_TYPE_PTQTP2, ANVIL_TYPE_Q8_K, ptqtp2_vec_dot, ptqtp2_gemv, ptqtp2_gemm,
              ptqtp2_decode);
AVX512_KERNEL(kernel_ptqtp3, ANVIL_TYPE_PTQTP3, ANVIL_TYPE_Q8_K, ptqtp3_vec_dot, ptqtp3_gemv, ptqtp3_gemm,
              ptqtp3_decode);

AVX512_KERNEL(kernel_ptqtp2s, ANVIL_TYPE_PTQTP2S, ANVIL_TYPE_Q8_K, ptqtp2s_vec_dot, ptqtp2s_gemv, ptqtp2s_gemm,
              ptqtp2s_decode);
AVX512_KERNEL(kernel_ptqtp3s, ANVIL_TYPE_PTQTP3S, ANVIL_TYPE_Q8_K, ptqtp3s_vec_dot, ptqtp3s_gemv, ptqtp3s_gemm,
              ptqtp3s_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_ptqtp)[] = { &kernel_ptqtp2, &kernel_ptqtp3,
                                                                       &kernel_ptqtp2s, &kernel_ptqtp3s, NULL };
