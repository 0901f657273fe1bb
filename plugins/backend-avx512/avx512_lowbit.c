/* SPDX-License-Identifier: MIT */
/* backend-avx512: Q1_0, Q2_0 and NVFP4 weights against Q8_0 activations,
 * and their row decoders. Bit-identical to plugins/ref (ternary_q1_0.c,
 * ternary_q2_0.c, cold_fp4.c): every integer below is the reference's, and
 * lane r of a float vector carries row r through the reference's float
 * operations in its order.
 *
 *   Q1_0 (128 weights: d, 16 bytes of sign bits; four Q8_0 blocks)
 *       The 64 sign bits of half a block are an AVX-512 byte mask as they
 *       lie in memory (bit j of the little-endian u64 = element j). With
 *       2 where the bit is set, 0 elsewhere, vpdpbusd gives 2 * pos; minus
 *       the activation block's sum (once for all rows) it is the
 *       reference's pos + pos - all, per 32-element block. Then
 *           t = 0; t += da_k * (float)sumi_k (k = 0..3); acc += d * t.
 *   Q2_0 (64 weights: d, 16 bytes of 2-bit codes; two Q8_0 blocks)
 *       Code c times a minus sum(a) is (c - 1) * a summed. The codes are
 *       spread by shifts of whole u64 words (128-bit lane 2h + g holds code
 *       bits 4g + {0, 2} of bytes 8h..8h+7) and the activations, once per
 *       block for all rows, are permuted to match (a dot does not care about
 *       the order of its terms; the reference's integers are exact sums).
 *       Then t = 0; t += da_0 * (float)sumi_0; t += da_1 * (float)sumi_1;
 *       acc += d * t.
 *   NVFP4 (64 weights: four UE4M3 scales, 32 bytes of E2M1 codes, each
 *       16-element sub-block against half a Q8_0 block)
 *       128-bit lane j of a row's vector is sub-block j in element order
 *       (low nibbles, then high), mapped through ggml's doubled E2M1 table
 *       + 12 (unsigned, <= 24: no vpmaddubsw pair saturates) and 12 times
 *       the sub-block's activation sum taken off again. The UE4M3 scales
 *       of all rows are decoded in two vectors (anvil_ue4m3_to_fp32_half,
 *       branch-free), and per sub-block j = 0..3
 *           acc += (dy_{j/2} * d_j) * (float)sumi_j      (as the reference).
 */
#include "avx512_common.h"
#include "avx512_kernels.h"

#define Q8_0_BYTES 34
#define Q1_0_BYTES 18
#define Q2_0_BYTES 18
#define NVFP4_BYTES 36

AVX512_INLINE __m256 lo_ps(__m512i s) { return _mm256_cvtepi32_ps(_mm512_castsi512_si256(s)); }
AVX512_INLINE __m256 hi_ps(__m512i s) { return _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(s, 1)); }

/* Lanes 0..7: the sum of the 32 int8 codes in the low 256 bits of qa;
 * lanes 8..15: the high ones' (the layout of avx512_reduce_halves). */
AVX512_INLINE __m512i act_sums2(__m512i qa) {
    __m512i s = avx512_dpbusd(_mm512_setzero_si512(), _mm512_set1_epi8(1), qa);
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, AVX512_PERM(0x4E)));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, AVX512_PERM(0xB1)));
    return _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* t + da * (float)s, lanes 0..7 of s (first) then 8..15 (second), the
 * scales of the two Q8_0 blocks at a. */
AVX512_INLINE __m256 add_pair(__m256 t, __m512i s, const uint8_t *a) {
    t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_set1_ps(avx512_half(a)), lo_ps(s)));
    return _mm256_add_ps(t, _mm256_mul_ps(_mm256_set1_ps(avx512_half(a + Q8_0_BYTES)), hi_ps(s)));
}

/* ---- Q1_0 ------------------------------------------------------------------- */

AVX512_INLINE void q1_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    const __m512i two = _mm512_set1_epi8(2);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q1_0_BYTES, a += 4 * Q8_0_BYTES) {
        simd_pf_block(pf, b, Q1_0_BYTES, ws, R);
        __m256 t = _mm256_setzero_ps();
        for (int h = 0; h < 2; ++h) {
            const uint8_t *ah = a + (size_t)(2 * h) * Q8_0_BYTES;
            const __m512i qa = avx512_load2x256(ah + 2, ah + Q8_0_BYTES + 2);
            __m512i m[8];
            AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
                uint64_t bits;
                memcpy(&bits, w + (size_t)r * ws + 2 + 8 * h, sizeof bits);
                m[r] = avx512_dpbusd(_mm512_setzero_si512(), _mm512_maskz_mov_epi8((__mmask64)bits, two), qa);
            }
            t = add_pair(t, _mm512_sub_epi32(avx512_reduce_halves(m, R), act_sums2(qa)), ah);
        }
        acc = _mm256_add_ps(acc, _mm256_mul_ps(simd_x86_halves(w, ws, R), t));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q1_0, 128, Q1_0_BYTES)

/* dst[j] = bit j ? d : -d, as the reference decoder. */
static void q1_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 128; ++i, b += Q1_0_BYTES) {
        const __m512 d = _mm512_set1_ps(avx512_half(b));
        const __m512 neg_d = _mm512_set1_ps(-avx512_half(b));
        for (int k = 0; k < 8; ++k, dst += 16) {
            const __mmask16 bits = (__mmask16)anvil_rd_u16(b + 2 + 2 * k);
            _mm512_storeu_ps(dst, _mm512_mask_blend_ps(bits, neg_d, d));
        }
    }
}

AVX512_KERNEL(kernel_q1_0, ANVIL_TYPE_Q1_0, ANVIL_TYPE_Q8_0, q1_0_vec_dot, q1_0_gemv, q1_0_gemm, q1_0_decode);

/* ---- Q2_0 ------------------------------------------------------------------- */

/* The two Q8_0 blocks' codes (block 0 low, 1 high) in the order of the
 * weight vector below: 128-bit lane 2h + g holds elements 32h + 4i + 2g
 * (i = 0..7), then 32h + 4i + 2g + 1. */
AVX512_INLINE __m512i q2_0_act(__m512i qa) {
    /* per 16 elements: 0, 4, 8, 12, then 1, 5, 9, 13, ... (dwords d0..d3) */
    const __m512i p = _mm512_shuffle_epi8(
        qa, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)));
    const __m512i x = _mm512_shuffle_i64x2(p, p, _MM_SHUFFLE(2, 2, 0, 0)); /* elements 0..15 of each block */
    const __m512i z = _mm512_shuffle_i64x2(p, p, _MM_SHUFFLE(3, 3, 1, 1)); /* 16..31 */
    return _mm512_mask_blend_epi64(0xCC, _mm512_unpacklo_epi32(x, z), _mm512_unpackhi_epi32(x, z));
}

/* A row's 64 codes (unsigned 0..3) in q2_0_act's order. */
AVX512_INLINE __m512i q2_0_codes(const uint8_t *qs) {
    const __m512i q = _mm512_castsi128_si512(avx512_load128(qs));
    const __m512i spread = _mm512_permutexvar_epi64(_mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0), q);
    return _mm512_and_si512(_mm512_srlv_epi64(spread, _mm512_set_epi64(6, 4, 2, 0, 6, 4, 2, 0)), _mm512_set1_epi8(3));
}

AVX512_INLINE void q2_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q2_0_BYTES, a += 2 * Q8_0_BYTES) {
        simd_pf_block(pf, b, Q2_0_BYTES, ws, R);
        const __m512i qa = avx512_load2x256(a + 2, a + Q8_0_BYTES + 2);
        const __m512i qp = q2_0_act(qa);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            m[r] = avx512_dpbusd(_mm512_setzero_si512(), q2_0_codes(w + (size_t)r * ws + 2), qp);
        }
        const __m256 t =
            add_pair(_mm256_setzero_ps(), _mm512_sub_epi32(avx512_reduce_halves(m, R), act_sums2(qa)), a);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(simd_x86_halves(w, ws, R), t));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q2_0, 64, Q2_0_BYTES)

/* dst[j] = (float)(c_j - 1) * d, as the reference decoder. */
static void q2_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (size_t i = 0; i < n / 64; ++i, b += Q2_0_BYTES) {
        const __m512 d = _mm512_set1_ps(avx512_half(b));
        for (int k = 0; k < 4; ++k, dst += 16) {
            const __m512i c = _mm512_and_si512(
                _mm512_srlv_epi32(_mm512_set1_epi32((int)anvil_rd_u32(b + 2 + 4 * k)), shifts), _mm512_set1_epi32(3));
            const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(c, _mm512_set1_epi32(1)));
            _mm512_storeu_ps(dst, _mm512_mul_ps(v, d));
        }
    }
}

AVX512_KERNEL(kernel_q2_0, ANVIL_TYPE_Q2_0, ANVIL_TYPE_Q8_0, q2_0_vec_dot, q2_0_gemv, q2_0_gemm, q2_0_decode);

/* ---- NVFP4 ------------------------------------------------------------------ */

/* UE4M3 bytes (int32 lanes, 0..255) as anvil_ue4m3_to_fp32_half: the sign
 * bit ignored, 0x7F zero, exponent field 0 as m * 2^-10. */
AVX512_INLINE __m512 ue4m3_half(__m512i x) {
    const __m512i e = _mm512_and_si512(_mm512_srli_epi32(x, 3), _mm512_set1_epi32(15));
    const __m512i m = _mm512_and_si512(x, _mm512_set1_epi32(7));
    const __m512i norm =
        _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(119)), 23), _mm512_slli_epi32(m, 20));
    const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(0x1.0p-10f));
    const __m512 v =
        _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()), _mm512_castsi512_ps(norm), sub);
    return _mm512_mask_mov_ps(v, _mm512_cmpeq_epi32_mask(x, _mm512_set1_epi32(0x7F)), _mm512_setzero_ps());
}

/* Lane r: the four scale bytes of row r (r < R; the other lanes 0). */
AVX512_INLINE __m256i nvfp4_scale_words(const uint8_t *p, size_t stride, const int R) {
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
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* A row's 64 codes, lane j = sub-block j in element order, through the
 * doubled E2M1 table + 12. */
AVX512_INLINE __m512i nvfp4_codes(const uint8_t *qs, __m512i table) {
    const __m512i q = _mm512_castsi256_si512(avx512_load256(qs));
    const __m512i spread = _mm512_permutexvar_epi64(_mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0), q);
    const __m512i c =
        _mm512_and_si512(_mm512_srlv_epi64(spread, _mm512_set_epi64(4, 0, 4, 0, 4, 0, 4, 0)), _mm512_set1_epi8(0x0F));
    return _mm512_shuffle_epi8(table, c);
}

/* [lane j of u0, lane j of u1, lane j + 1 of u0, lane j + 1 of u1]: sub-
 * blocks j (low 256 bits) and j + 1, rows 0..7 each. */
#define NVFP4_SUBS(u0, u1, j)                                                                       \
    _mm512_shuffle_i64x2(_mm512_shuffle_i64x2((u0), (u1), _MM_SHUFFLE((j) + 1, (j), (j) + 1, (j))), \
                         _mm512_shuffle_i64x2((u0), (u1), _MM_SHUFFLE((j) + 1, (j), (j) + 1, (j))), \
                         _MM_SHUFFLE(3, 1, 2, 0))

AVX512_INLINE void nvfp4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    const __m512i table =
        _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
    const __m512i sh01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
    const __m512i sh23 = _mm512_add_epi32(sh01, _mm512_set1_epi32(16));
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += NVFP4_BYTES, a += 2 * Q8_0_BYTES) {
        simd_pf_block(pf, b, NVFP4_BYTES, ws, R);
        const __m512i qa = avx512_load2x256(a + 2, a + Q8_0_BYTES + 2);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            m[r] = avx512_dpbusd(_mm512_setzero_si512(), nvfp4_codes(w + (size_t)r * ws + 4, table), qa);
        }
        __m512i u0, u1;
        avx512_fold_rows(m, R, &u0, &u1);
        /* 12 times each sub-block's activation sum, in every lane of its 128 bits */
        __m512i sa = avx512_dpbusd(_mm512_setzero_si512(), _mm512_set1_epi8(1), qa);
        sa = _mm512_add_epi32(sa, _mm512_shuffle_epi32(sa, AVX512_PERM(0x4E)));
        sa = _mm512_add_epi32(sa, _mm512_shuffle_epi32(sa, AVX512_PERM(0xB1)));
        sa = _mm512_add_epi32(_mm512_slli_epi32(sa, 3), _mm512_slli_epi32(sa, 2));
        u0 = _mm512_sub_epi32(u0, sa);
        u1 = _mm512_sub_epi32(u1, sa);
        const __m512i sw = _mm512_broadcast_i64x4(nvfp4_scale_words(w, ws, R));
        const __m512i byte = _mm512_set1_epi32(0xFF);
        const __m512 d01 = _mm512_mul_ps(_mm512_set1_ps(avx512_half(a)),
                                         ue4m3_half(_mm512_and_si512(_mm512_srlv_epi32(sw, sh01), byte)));
        const __m512 d23 = _mm512_mul_ps(_mm512_set1_ps(avx512_half(a + Q8_0_BYTES)),
                                         ue4m3_half(_mm512_and_si512(_mm512_srlv_epi32(sw, sh23), byte)));
        const __m512 p01 = _mm512_mul_ps(d01, _mm512_cvtepi32_ps(NVFP4_SUBS(u0, u1, 0)));
        const __m512 p23 = _mm512_mul_ps(d23, _mm512_cvtepi32_ps(NVFP4_SUBS(u0, u1, 2)));
        acc = _mm256_add_ps(acc, _mm512_castps512_ps256(p01));
        acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p01), 1)));
        acc = _mm256_add_ps(acc, _mm512_castps512_ps256(p23));
        acc = _mm256_add_ps(acc, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p23), 1)));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(nvfp4, 64, NVFP4_BYTES)

/* y[j] = (float)value(code j) * d per sub-block, as the reference decoder. */
static void nvfp4_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m128i table = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    for (size_t i = 0; i < n / 64; ++i, b += NVFP4_BYTES) {
        for (int sb = 0; sb < 4; ++sb, dst += 16) {
            const __m512 d = _mm512_set1_ps(anvil_ue4m3_to_fp32_half(b[sb]));
            const __m128i q = _mm_loadl_epi64((const __m128i *)(b + 4 + 8 * sb));
            const __m128i c = _mm_and_si128(_mm_unpacklo_epi64(q, _mm_srli_epi16(q, 4)), _mm_set1_epi8(0x0F));
            const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_shuffle_epi8(table, c)));
            _mm512_storeu_ps(dst, _mm512_mul_ps(v, d));
        }
    }
}

AVX512_KERNEL(kernel_nvfp4, ANVIL_TYPE_NVFP4, ANVIL_TYPE_Q8_0, nvfp4_vec_dot, nvfp4_gemv, nvfp4_gemm, nvfp4_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_lowbit)[] = { &kernel_q1_0, &kernel_q2_0, &kernel_nvfp4,
                                                                        NULL };
