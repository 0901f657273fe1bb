/* SPDX-License-Identifier: MIT */
/* backend-avx512: IQ4_NL and MXFP4 (against Q8_0) and IQ4_XS (against Q8_K),
 * and their row decoders.
 *
 * All three map 4-bit codes through a 16-entry int8 table (one byte
 * shuffle per 64 codes), then need a signed-by-signed dot, done one of two
 * ways, both exact:
 *  - offset table: value + c (unsigned) times a, minus c * sum(a), the
 *    latter once per activation block for all R rows. MXFP4 (c = 12:
 *    u8 <= 24, so no vpmaddubsw pair saturates) in both variants, IQ4_NL
 *    (c = 128: u8 <= 241) with VNNI only, whose vpdpbusd never saturates.
 *  - sign from the code: |value| looked up, and the activation negated
 *    where the value is negative (IQ4_NL's codes 0..7), then u8 x s8:
 *    |value| <= 127 and |a| <= 127, so no pair saturates. IQ4_NL without
 *    VNNI, and IQ4_XS (whose pair sums are weighted by vpmaddwd).
 * Either way the integers are the reference's, in both variants.
 *   IQ4_NL  sumf += (da * dw) * (float)sumi              (as the reference)
 *   MXFP4   sumf += (da * e8m0_half(e)) * (float)sumi    (as the reference)
 *   IQ4_XS  the reference adds one float term per 32-element sub-block,
 *           (d * y.d * (ls - 32)) * sumi. As backend-avx2 (avx2_cold.c),
 *           the sub-block sums are weighted by their integer scales in
 *           int32 first (exact) and the float part runs once per
 *           super-block:
 *               sumf += (fp16(x.d) * y.d) * (float)sum_ib (ls_ib - 32) sumi_ib
 *           The integer parts are the reference's; only the float rounding
 *           order differs (within the ABI's 1e-5 of the term magnitude, not
 *           bit-identical to plugins/ref; the same value as backend-avx2's).
 *
 * IQ4_NL and MXFP4 take two 32-element blocks per vector as
 * avx512_q8_0.c does (block b low, b + 1 high; reduced into lanes 0..7
 * and 8..15, added in the reference's order).
 */
#include "avx512_common.h"
#include "avx512_kernels.h"

#define Q8_0_BYTES 34
#define Q8K_QS 4
#define Q8K_BYTES 292
#define IQ4_NL_BYTES 18
#define IQ4_XS_BYTES 136
#define MXFP4_BYTES 17

/* |kvalues_iq4nl|: -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38,
 * 53, 69, 89, 113 (negative below code 8). */
AVX512_INLINE __m512i iq4nl_abs_table(void) {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(127, 104, 83, 65, 49, 35, 22, 10, 1, 13, 25, 38, 53, 69, 89, 113));
}

#if AVX512_VNNI
/* kvalues_iq4nl + 128 (VNNI's offset table). */
AVX512_INLINE __m512i iq4nl_offset_table(void) {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141, (char)153,
                                                (char)166, (char)181, (char)197, (char)217, (char)241));
}
#endif

/* ggml's doubled E2M1 values (0, 1, 2, 3, 4, 6, 8, 12, then 0, -1, ...,
 * -12; the factor 1/2 lives in the scale) + 12. */
AVX512_INLINE __m512i mxfp4_offset_table(void) {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

/* Lanes 0..7: sum of the low 256 bits' 32 activation codes; lanes 8..15:
 * the high ones' (the layout of avx512_reduce_halves). Once per pair of
 * blocks. */
AVX512_INLINE __m512i act_sums2(__m512i qa) {
    __m512i s = avx512_dpbusd(_mm512_setzero_si512(), _mm512_set1_epi8(1), qa);
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, AVX512_PERM(0x4E)));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, AVX512_PERM(0xB1)));
    return _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* 2^(e - 128) exactly (anvil_e8m0_to_fp32_half), branch-free. */
AVX512_INLINE float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (UINT32_C(0x00200000) << e) : ((uint32_t)(e - 1) << 23);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* As in avx512_q4_q5.c: the 16 code bytes at p in 128-bit lanes 0 and 1,
 * those at q (two == 1) or zeros in lanes 2 and 3; low nibbles in lanes 0
 * and 2, high ones in 1 and 3: each block's 32 codes in element order. */
AVX512_INLINE __m512i nibbles2(const uint8_t *p, const uint8_t *q, const int two) {
    const __m512i lo = _mm512_broadcast_i32x4(avx512_load128(p));
    const __m512i b = two ? _mm512_mask_blend_epi64(0xF0, lo, _mm512_broadcast_i32x4(avx512_load128(q)))
                          : _mm512_maskz_mov_epi64(0x0F, lo);
    return _mm512_and_si512(_mm512_srlv_epi64(b, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
}

#if !AVX512_VNNI
/* acc + the signed dot of table values (|value| by code, negative where
 * neg is set) with activations qa. */
AVX512_INLINE __m512i signed_dot(__m512i acc, __m512i table, __m512i codes, __mmask64 neg, __m512i qa) {
    const __m512i ys = _mm512_mask_sub_epi8(qa, neg, _mm512_setzero_si512(), qa);
    return avx512_dpbusd(acc, _mm512_shuffle_epi8(table, codes), ys);
}
#endif

AVX512_INLINE __m256 lo_ps(__m512i s) { return _mm256_cvtepi32_ps(_mm512_castsi512_si256(s)); }
AVX512_INLINE __m256 hi_ps(__m512i s) { return _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(s, 1)); }

/* ---- IQ4_NL: d, qs[16] ------------------------------------------------------ */

AVX512_INLINE __m256 iq4_nl_step(__m256 acc, __m512i table, const uint8_t *w, size_t ws, const uint8_t *a,
                                 const int R, const int two) {
    const __m512i qa = two ? avx512_load2x256(a + 2, a + Q8_0_BYTES + 2) : avx512_zext256(avx512_load256(a + 2));
    __m512i m[8];
    AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
        const uint8_t *wr = w + (size_t)r * ws;
        const __m512i c = nibbles2(wr + 2, wr + IQ4_NL_BYTES + 2, two);
#if AVX512_VNNI
        m[r] = avx512_dpbusd(_mm512_setzero_si512(), _mm512_shuffle_epi8(table, c), qa);
#else
        const __mmask64 neg = _mm512_cmplt_epu8_mask(c, _mm512_set1_epi8(8)); /* codes 0..7 */
        m[r] = signed_dot(_mm512_setzero_si512(), table, c, neg, qa);
#endif
    }
#if AVX512_VNNI
    const __m512i s = _mm512_sub_epi32(avx512_reduce_halves(m, R), _mm512_slli_epi32(act_sums2(qa), 7));
#else
    const __m512i s = avx512_reduce_halves(m, R);
#endif
    for (int k = 0; k < 1 + two; ++k) {
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(avx512_half(a + (size_t)k * Q8_0_BYTES)),
                                       simd_x86_halves(w + (size_t)k * IQ4_NL_BYTES, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, k ? hi_ps(s) : lo_ps(s)));
    }
    return acc;
}

AVX512_INLINE void iq4_nl_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                               simd_pf *pf) {
#if AVX512_VNNI
    const __m512i table = iq4nl_offset_table();
#else
    const __m512i table = iq4nl_abs_table();
#endif
    __m256 acc = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * IQ4_NL_BYTES, a += 2 * Q8_0_BYTES) {
        simd_pf_block(pf, b / 2, 2 * IQ4_NL_BYTES, ws, R); /* pairs of blocks */
        acc = iq4_nl_step(acc, table, w, ws, a, R, 1);
    }
    if (b < nb) acc = iq4_nl_step(acc, table, w, ws, a, R, 0);
    avx512_store_rows(y, acc, R);
}

/* ---- MXFP4: e, qs[16] ------------------------------------------------------- */

AVX512_INLINE __m256 mxfp4_step(__m256 acc, __m512i table, const uint8_t *w, size_t ws, const uint8_t *a, const int R,
                                const int two) {
    const __m512i qa = two ? avx512_load2x256(a + 2, a + Q8_0_BYTES + 2) : avx512_zext256(avx512_load256(a + 2));
    __m512i m[8];
    AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
        const uint8_t *wr = w + (size_t)r * ws;
        const __m512i c = nibbles2(wr + 1, wr + MXFP4_BYTES + 1, two);
        m[r] = avx512_dpbusd(_mm512_setzero_si512(), _mm512_shuffle_epi8(table, c), qa);
    }
    const __m512i sa = act_sums2(qa); /* 12 sa = 8 sa + 4 sa */
    const __m512i s = _mm512_sub_epi32(avx512_reduce_halves(m, R),
                                       _mm512_add_epi32(_mm512_slli_epi32(sa, 3), _mm512_slli_epi32(sa, 2)));
    for (int k = 0; k < 1 + two; ++k) {
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(avx512_half(a + (size_t)k * Q8_0_BYTES)),
                                       simd_x86_e8m0_halves(w + (size_t)k * MXFP4_BYTES, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, k ? hi_ps(s) : lo_ps(s)));
    }
    return acc;
}

AVX512_INLINE void mxfp4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    const __m512i table = mxfp4_offset_table();
    __m256 acc = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * MXFP4_BYTES, a += 2 * Q8_0_BYTES) {
        simd_pf_block(pf, b / 2, 2 * MXFP4_BYTES, ws, R); /* pairs of blocks */
        acc = mxfp4_step(acc, table, w, ws, a, R, 1);
    }
    if (b < nb) acc = mxfp4_step(acc, table, w, ws, a, R, 0);
    avx512_store_rows(y, acc, R);
}

/* ---- IQ4_XS: d, scales_h (u16), scales_l[4], qs[128] ------------------------
 * A half super-block (sub-blocks 4h..4h+3, 64 code bytes) is one zmm whose
 * 128-bit lane k is sub-block 4h + k: its low nibbles are the sub-block's
 * elements 0..15, its high nibbles 16..31. The activations are loaded to
 * match (lane k: a[32 k .. 32 k + 16) for the low nibbles, a[32 k + 16 ..
 * 32 k + 32) for the high), once per block for all rows. The pair sums
 * (vpmaddubsw, <= 2 * 127 * 127 = 32258) are weighted by the sub-block's
 * scale ls - 32 in vpmaddwd (<= 32258 * 32 * 2 per int32 lane, and
 * 8 * 4 * that over a block: far below 2^31), which sums into int32. */

/* Words per 128-bit lane k: ls - 32 of sub-block k (first) and 4 + k
 * (second), where ls = scales_l nibble | two bits of scales_h << 4. */
AVX512_INLINE void iq4_xs_scales(const uint8_t *blk, __m512i *s0, __m512i *s1) {
    const uint32_t h = anvil_rd_u16(blk + 2), l = anvil_rd_u32(blk + 4);
    const __m256i lo =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)l), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                         _mm256_set1_epi32(0x0F));
    const __m256i hi = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32((int)(h << 4)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
        _mm256_set1_epi32(0x30));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, hi), _mm256_set1_epi32(32));
    /* eight int16 sub-scales, in every 128-bit lane */
    const __m512i w16 =
        _mm512_broadcast_i32x4(_mm_packs_epi32(_mm256_castsi256_si128(ls), _mm256_extracti128_si256(ls, 1)));
    /* lane k: word k (first), word 4 + k (second), repeated */
    *s0 = _mm512_shuffle_epi8(w16, _mm512_set_epi64(0x0706070607060706, 0x0706070607060706, 0x0504050405040504,
                                                    0x0504050405040504, 0x0302030203020302, 0x0302030203020302,
                                                    0x0100010001000100, 0x0100010001000100));
    *s1 = _mm512_shuffle_epi8(w16, _mm512_set_epi64(0x0F0E0F0E0F0E0F0E, 0x0F0E0F0E0F0E0F0E, 0x0D0C0D0C0D0C0D0C,
                                                    0x0D0C0D0C0D0C0D0C, 0x0B0A0B0A0B0A0B0A, 0x0B0A0B0A0B0A0B0A,
                                                    0x0908090809080908, 0x0908090809080908));
}

AVX512_INLINE __m512i iq4_xs_part(__m512i acc, __m512i table, __m512i c, __m512i qa, __m512i sc) {
    const __mmask64 neg = _mm512_cmplt_epu8_mask(c, _mm512_set1_epi8(8));
    const __m512i ys = _mm512_mask_sub_epi8(qa, neg, _mm512_setzero_si512(), qa);
    const __m512i p = _mm512_maddubs_epi16(_mm512_shuffle_epi8(table, c), ys);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, sc));
}

AVX512_INLINE void iq4_xs_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                               simd_pf *pf) {
    const __m512i table = iq4nl_abs_table(), m4 = _mm512_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ4_XS_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ4_XS_BYTES, ws, R);
        __m512i alo[2], ahi[2];
        for (int h = 0; h < 2; ++h) {
            const __m512i x0 = avx512_load(a + Q8K_QS + 128 * h), x1 = avx512_load(a + Q8K_QS + 128 * h + 64);
            alo[h] = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(2, 0, 2, 0));
            ahi[h] = _mm512_shuffle_i64x2(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));
        }
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            __m512i sc[2];
            iq4_xs_scales(wr, &sc[0], &sc[1]);
            __m512i s = _mm512_setzero_si512();
            for (int h = 0; h < 2; ++h) {
                const __m512i q = avx512_load(wr + 8 + 64 * h);
                s = iq4_xs_part(s, table, _mm512_and_si512(q, m4), alo[h], sc[h]);
                s = iq4_xs_part(s, table, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4), ahi[h], sc[h]);
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(m, R))));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq4_nl, 32, IQ4_NL_BYTES)
SIMD_DEFINE_ENTRY_POINTS(mxfp4, 32, MXFP4_BYTES)
SIMD_DEFINE_ENTRY_POINTS(iq4_xs, 256, IQ4_XS_BYTES)

/* ---- decoders ----------------------------------------------------------------
 * Table values as floats (exact), looked up per int32 lane (vpermps over
 * 16 entries), times the scale: d * (float)v (IEEE products commute bit
 * for bit). */

AVX512_INLINE __m512 iq4nl_float_table(void) {
    return _mm512_setr_ps(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

AVX512_INLINE __m512 mxfp4_float_table(void) {
    return _mm512_setr_ps(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}

/* 16 packed bytes at qs: y[j] = d * table[low nibble], y[16 + j] = d *
 * table[high nibble]. */
AVX512_INLINE void decode_table32(const uint8_t *qs, __m512 table, __m512 d, float *dst) {
    const __m512i bytes = _mm512_cvtepi8_epi32(avx512_load128(qs)); /* permutexvar reads the low 4 bits */
    _mm512_storeu_ps(dst, _mm512_mul_ps(d, _mm512_permutexvar_ps(bytes, table)));
    _mm512_storeu_ps(dst + 16, _mm512_mul_ps(d, _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table)));
}

static void iq4_nl_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m512 table = iq4nl_float_table();
    for (size_t i = 0; i < n / 32; ++i, b += IQ4_NL_BYTES, dst += 32) {
        decode_table32(b + 2, table, _mm512_set1_ps(avx512_half(b)), dst);
    }
}

static void iq4_xs_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m512 table = iq4nl_float_table();
    for (size_t i = 0; i < n / 256; ++i, b += IQ4_XS_BYTES) {
        const float d = avx512_half(b);
        const uint32_t h = anvil_rd_u16(b + 2);
        for (int ib = 0; ib < 8; ++ib, dst += 32) {
            const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (int)(((h >> (2 * ib)) & 3) << 4);
            const float dl = d * (float)(ls - 32);
            decode_table32(b + 8 + 16 * ib, table, _mm512_set1_ps(dl), dst);
        }
    }
}

static void mxfp4_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m512 table = mxfp4_float_table();
    for (size_t i = 0; i < n / 32; ++i, b += MXFP4_BYTES, dst += 32) {
        decode_table32(b + 1, table, _mm512_set1_ps(e8m0_half(b[0])), dst);
    }
}

AVX512_KERNEL(kernel_iq4_nl, ANVIL_TYPE_IQ4_NL, ANVIL_TYPE_Q8_0, iq4_nl_vec_dot, iq4_nl_gemv, iq4_nl_gemm,
              iq4_nl_decode);
AVX512_KERNEL(kernel_iq4_xs, ANVIL_TYPE_IQ4_XS, ANVIL_TYPE_Q8_K, iq4_xs_vec_dot, iq4_xs_gemv, iq4_xs_gemm,
              iq4_xs_decode);
AVX512_KERNEL(kernel_mxfp4, ANVIL_TYPE_MXFP4, ANVIL_TYPE_Q8_0, mxfp4_vec_dot, mxfp4_gemv, mxfp4_gemm, mxfp4_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_cold)[] = { &kernel_iq4_nl, &kernel_iq4_xs, &kernel_mxfp4,
                                                                      NULL };
