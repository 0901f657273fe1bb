/* SPDX-License-Identifier: MIT */
/* backend-avx2: Q1_0, Q2_0 and NVFP4 weights against Q8_0 activations, and
 * their row decoders. Bit-identical to plugins/ref (ternary_q1_0.c,
 * ternary_q2_0.c, cold_fp4.c), as backend-avx512's avx512_lowbit.c: the
 * integers are the reference's, and lane r of a float vector carries row r
 * through the reference's float operations in its order.
 *
 *   Q1_0 (128 weights: d, 16 bytes of sign bits; four Q8_0 blocks)
 *       Per 32 elements the bits become bytes 1 (set) or 0; u8 x s8 gives
 *       pos, doubled once per block for all rows, minus the activation
 *       block's sum (once for all rows): the reference's pos + pos - all.
 *       Then
 *           t = 0; t += da_k * (float)sumi_k (k = 0..3); acc += d * t.
 *   Q2_0 (64 weights: d, 16 bytes of 2-bit codes; two Q8_0 blocks)
 *       Per 32 elements (8 code bytes) u64 word g of the vector holds the
 *       codes at bit 2g of each byte (elements 4i + g); the activations are
 *       permuted to match once per block for all rows (an exact integer sum
 *       does not depend on the order of its terms). Code times a minus
 *       sum(a) is (c - 1) * a summed. t = 0; t += da_0 * (float)sumi_0;
 *       t += da_1 * (float)sumi_1; acc += d * t.
 *   NVFP4 (64 weights: four UE4M3 scales, 32 bytes of E2M1 codes)
 *       Per Q8_0 block, 128-bit half k of a row's vector is sub-block
 *       2h + k in element order, through ggml's doubled E2M1 table + 12
 *       (u8 <= 24: no vpmaddubsw pair saturates), 12 * sum(a) taken off per
 *       sub-block. acc += (dy_{j/2} * d_j) * (float)sumi_j, j = 0..3.
 */
#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8_0_BYTES 34
#define Q1_0_BYTES 18
#define Q2_0_BYTES 18
#define NVFP4_BYTES 36

/* Every int32 lane: the sum of the 32 int8 codes of qa. */
AVX2_INLINE __m256i act_sum(__m256i qa) {
    __m256i s = avx2_dot_u8s8(_mm256_set1_epi8(1), qa);
    s = _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0x4E));
    s = _mm256_add_epi32(s, _mm256_shuffle_epi32(s, 0xB1));
    return _mm256_add_epi32(s, _mm256_permute2x128_si256(s, s, 0x01));
}

/* t + da * (float)sumi, da the scale of the Q8_0 block at a. */
AVX2_INLINE __m256 add_block(__m256 t, __m256i sumi, const uint8_t *a) {
    return _mm256_add_ps(t, _mm256_mul_ps(_mm256_set1_ps(avx2_half(a)), _mm256_cvtepi32_ps(sumi)));
}

/* ---- Q1_0 ------------------------------------------------------------------- */

/* 32 bits -> 32 bytes: byte j is 1 when bit j is set, else 0 (vpminub of
 * the isolated bit and 1: one instruction fewer than vpcmpeqb + vpand to
 * 2; the factor 2 is applied once per block to the rows' sums). */
AVX2_INLINE __m256i bits_to_one(uint32_t bits) {
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                            0x0101010101010101, 0x0000000000000000));
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_min_epu8(_mm256_and_si256(spread, sel), _mm256_set1_epi8(1));
}

/* Lane r (r < R) = the sum of the 16 int16 words of m[r], as int32; exact
 * while every partial sum of a row's words fits int16 (Q1_0: a word is a
 * vpmaddubsw pair of {0, 1} x int8, |w| <= 256, 16 of them <= 4096). At
 * R = 8 a vphaddw tree (7) replaces 8 vpmaddwd and the int32 tree: Q1_0
 * 0.90x -> 0.99x of ggml-haswell (1 thread, 4096 x 4096, Zen 4); taking
 * sum(a) off inside the tree (3 more vphaddw) instead of act_sum was 2 %
 * slower. */
AVX2_INLINE __m256i reduce_words(const __m256i *m, const int R) {
    if (R < 8) {
        __m256i v[4];
        for (int r = 0; r < R; ++r) v[r] = _mm256_madd_epi16(m[r], _mm256_set1_epi16(1));
        return avx2_reduce(v, R);
    }
    const __m256i g0 = _mm256_hadd_epi16(_mm256_hadd_epi16(m[0], m[1]), _mm256_hadd_epi16(m[2], m[3]));
    const __m256i g1 = _mm256_hadd_epi16(_mm256_hadd_epi16(m[4], m[5]), _mm256_hadd_epi16(m[6], m[7]));
    /* word r of each half: row r's words of that half */
    const __m256i f = _mm256_hadd_epi16(g0, g1);
    return _mm256_cvtepi16_epi32(_mm_add_epi16(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1)));
}

AVX2_INLINE void q1_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q1_0_BYTES) {
        simd_pf_block(pf, b, Q1_0_BYTES, ws, R);
        __m256 t = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k, a += Q8_0_BYTES) {
            const __m256i qa = avx2_load(a + 2);
            __m256i m[8];
            for (int r = 0; r < R; ++r) {
                m[r] = _mm256_maddubs_epi16(bits_to_one(anvil_rd_u32(w + (size_t)r * ws + 2 + 4 * k)), qa);
            }
            t = add_block(t, _mm256_sub_epi32(_mm256_slli_epi32(reduce_words(m, R), 1), act_sum(qa)), a);
        }
        acc = _mm256_add_ps(acc, _mm256_mul_ps(simd_x86_halves(w, ws, R), t));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q1_0, 128, Q1_0_BYTES)

/* dst[j] = bit j ? d : -d, as the reference decoder. */
static void q1_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    for (size_t i = 0; i < n / 128; ++i, b += Q1_0_BYTES) {
        const __m256 d = _mm256_set1_ps(avx2_half(b));
        const __m256 neg_d = _mm256_set1_ps(-avx2_half(b));
        for (int k = 0; k < 16; ++k, dst += 8) {
            const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(b[2 + k]), sel), sel);
            _mm256_storeu_ps(dst, _mm256_blendv_ps(neg_d, d, _mm256_castsi256_ps(set)));
        }
    }
}

AVX2_KERNEL(kernel_q1_0, ANVIL_TYPE_Q1_0, ANVIL_TYPE_Q8_0, "avx2", q1_0_vec_dot, q1_0_gemv, q1_0_gemm, q1_0_decode);

/* ---- Q2_0 ------------------------------------------------------------------- */

/* A Q8_0 block's codes in q2_0_codes' order: word g, byte i = element
 * 4i + g. */
AVX2_INLINE __m256i q2_0_act(__m256i qa) {
    const __m256i p = _mm256_shuffle_epi8(
        qa, _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

AVX2_INLINE __m256i q2_0_codes(const uint8_t *qs) {
    uint64_t bytes;
    memcpy(&bytes, qs, sizeof bytes);
    const __m256i q = _mm256_set1_epi64x((long long)bytes);
    return _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 2, 4, 6)), _mm256_set1_epi8(3));
}

AVX2_INLINE void q2_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q2_0_BYTES) {
        simd_pf_block(pf, b, Q2_0_BYTES, ws, R);
        __m256 t = _mm256_setzero_ps();
        for (int k = 0; k < 2; ++k, a += Q8_0_BYTES) {
            const __m256i qa = avx2_load(a + 2);
            const __m256i qp = q2_0_act(qa);
            __m256i m[8];
            for (int r = 0; r < R; ++r) m[r] = avx2_dot_u8s8(q2_0_codes(w + (size_t)r * ws + 2 + 8 * k), qp);
            t = add_block(t, _mm256_sub_epi32(avx2_reduce(m, R), act_sum(qa)), a);
        }
        acc = _mm256_add_ps(acc, _mm256_mul_ps(simd_x86_halves(w, ws, R), t));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q2_0, 64, Q2_0_BYTES)

/* dst[j] = (float)(c_j - 1) * d, as the reference decoder. */
static void q2_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    for (size_t i = 0; i < n / 64; ++i, b += Q2_0_BYTES) {
        const __m256 d = _mm256_set1_ps(avx2_half(b));
        for (int k = 0; k < 8; ++k, dst += 8) {
            const __m256i c = _mm256_and_si256(
                _mm256_srlv_epi32(_mm256_set1_epi32(anvil_rd_u16(b + 2 + 2 * k)), shifts), _mm256_set1_epi32(3));
            const __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(c, _mm256_set1_epi32(1)));
            _mm256_storeu_ps(dst, _mm256_mul_ps(v, d));
        }
    }
}

AVX2_KERNEL(kernel_q2_0, ANVIL_TYPE_Q2_0, ANVIL_TYPE_Q8_0, "avx2", q2_0_vec_dot, q2_0_gemv, q2_0_gemm, q2_0_decode);

/* ---- NVFP4 ------------------------------------------------------------------ */

/* UE4M3 bytes (int32 lanes, 0..255) as anvil_ue4m3_to_fp32_half: the sign
 * bit ignored, 0x7F zero, exponent field 0 as m * 2^-10. */
AVX2_INLINE __m256 ue4m3_half(__m256i x) {
    const __m256i e = _mm256_and_si256(_mm256_srli_epi32(x, 3), _mm256_set1_epi32(15));
    const __m256i m = _mm256_and_si256(x, _mm256_set1_epi32(7));
    const __m256i norm =
        _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(119)), 23), _mm256_slli_epi32(m, 20));
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(0x1.0p-10f));
    const __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(norm), sub,
                                      _mm256_castsi256_ps(_mm256_cmpeq_epi32(e, _mm256_setzero_si256())));
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, _mm256_set1_epi32(0x7F))), v);
}

/* Lane r: the four scale bytes of row r (r < R; the other lanes 0). */
AVX2_INLINE __m256i nvfp4_scale_words(const uint8_t *p, size_t stride, const int R) {
    __m128i lo = _mm_cvtsi32_si128((int)anvil_rd_u32(p));
    __m128i hi = _mm_setzero_si128();
    if (R > 1) lo = _mm_insert_epi32(lo, (int)anvil_rd_u32(p + stride), 1);
    if (R > 2) {
        lo = _mm_insert_epi32(lo, (int)anvil_rd_u32(p + 2 * stride), 2);
        lo = _mm_insert_epi32(lo, (int)anvil_rd_u32(p + 3 * stride), 3);
    }
    if (R > 4) {
        hi = _mm_cvtsi32_si128((int)anvil_rd_u32(p + 4 * stride));
        hi = _mm_insert_epi32(hi, (int)anvil_rd_u32(p + 5 * stride), 1);
        hi = _mm_insert_epi32(hi, (int)anvil_rd_u32(p + 6 * stride), 2);
        hi = _mm_insert_epi32(hi, (int)anvil_rd_u32(p + 7 * stride), 3);
    }
    return _mm256_set_m128i(hi, lo);
}

/* Two sub-blocks' 16 code bytes -> 32 table bytes, half k = sub-block k in
 * element order (low nibbles, then high). */
AVX2_INLINE __m256i nvfp4_codes(const uint8_t *qs, __m256i table) {
    const __m256i q = _mm256_permute4x64_epi64(_mm256_castsi128_si256(avx2_load128(qs)), 0x50);
    const __m256i c = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 4, 0, 4)), _mm256_set1_epi8(0x0F));
    return _mm256_shuffle_epi8(table, c);
}

/* For m[0..R-1]: the first result holds in lane r the sum of the low half
 * (128 bits) of m[r], the second the high half's. Exact. */
AVX2_INLINE void halves_by_row(const __m256i *m, const int R, __m256i sub, __m256i *s0, __m256i *s1) {
    const __m256i z = _mm256_setzero_si256();
    const __m256i t01 = AVX2_FOLD(m[0], R > 1 ? m[1] : z, 0xAA, 0xB1);
    const __m256i t23 = R > 2 ? AVX2_FOLD(m[2], m[3], 0xAA, 0xB1) : z;
    const __m256i u0 = _mm256_sub_epi32(AVX2_FOLD(t01, t23, 0xCC, 0x4E), sub);
    __m256i u1 = z;
    if (R > 4) {
        const __m256i t45 = AVX2_FOLD(m[4], m[5], 0xAA, 0xB1);
        const __m256i t67 = AVX2_FOLD(m[6], m[7], 0xAA, 0xB1);
        u1 = AVX2_FOLD(t45, t67, 0xCC, 0x4E);
    }
    u1 = _mm256_sub_epi32(u1, sub);
    *s0 = _mm256_permute2x128_si256(u0, u1, 0x20);
    *s1 = _mm256_permute2x128_si256(u0, u1, 0x31);
}

AVX2_INLINE void nvfp4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
    const __m256i byte = _mm256_set1_epi32(0xFF);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += NVFP4_BYTES) {
        simd_pf_block(pf, b, NVFP4_BYTES, ws, R);
        const __m256i sw = nvfp4_scale_words(w, ws, R);
        for (int k = 0; k < 2; ++k, a += Q8_0_BYTES) {
            const __m256i qa = avx2_load(a + 2);
            __m256i m[8];
            for (int r = 0; r < R; ++r) m[r] = avx2_dot_u8s8(nvfp4_codes(w + (size_t)r * ws + 4 + 16 * k, table), qa);
            /* 12 times each half's activation sum, in every lane of the half */
            __m256i sa = avx2_dot_u8s8(_mm256_set1_epi8(1), qa);
            sa = _mm256_add_epi32(sa, _mm256_shuffle_epi32(sa, 0x4E));
            sa = _mm256_add_epi32(sa, _mm256_shuffle_epi32(sa, 0xB1));
            sa = _mm256_add_epi32(_mm256_slli_epi32(sa, 3), _mm256_slli_epi32(sa, 2));
            __m256i s0, s1;
            halves_by_row(m, R, sa, &s0, &s1);
            const __m256 dy = _mm256_set1_ps(avx2_half(a));
            const __m256 d0 = _mm256_mul_ps(dy, ue4m3_half(_mm256_and_si256(_mm256_srli_epi32(sw, 16 * k), byte)));
            const __m256 d1 =
                _mm256_mul_ps(dy, ue4m3_half(_mm256_and_si256(_mm256_srli_epi32(sw, 16 * k + 8), byte)));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(d0, _mm256_cvtepi32_ps(s0)));
            acc = _mm256_add_ps(acc, _mm256_mul_ps(d1, _mm256_cvtepi32_ps(s1)));
        }
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(nvfp4, 64, NVFP4_BYTES)

/* y[j] = (float)value(code j) * d per sub-block, as the reference decoder. */
static void nvfp4_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m128i table = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    for (size_t i = 0; i < n / 64; ++i, b += NVFP4_BYTES) {
        for (int sb = 0; sb < 4; ++sb, dst += 16) {
            const __m256 d = _mm256_set1_ps(anvil_ue4m3_to_fp32_half(b[sb]));
            const __m128i q = _mm_loadl_epi64((const __m128i *)(b + 4 + 8 * sb));
            const __m128i c = _mm_and_si128(_mm_unpacklo_epi64(q, _mm_srli_epi16(q, 4)), _mm_set1_epi8(0x0F));
            const __m128i v = _mm_shuffle_epi8(table, c);
            _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), d));
            _mm256_storeu_ps(dst + 8,
                             _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(v, v))), d));
        }
    }
}

AVX2_KERNEL(kernel_nvfp4, ANVIL_TYPE_NVFP4, ANVIL_TYPE_Q8_0, "avx2", nvfp4_vec_dot, nvfp4_gemv, nvfp4_gemm,
            nvfp4_decode);

const anvil_kernel *const anvil_avx2_kernels_lowbit[] = { &kernel_q1_0, &kernel_q2_0, &kernel_nvfp4, NULL };
