/* SPDX-License-Identifier: MIT */
/* backend-avx512: Q4_0, Q5_0 (against Q8_0) and Q4_1, Q5_1 (against Q8_1)
 * weights, and their row decoders.
 *
 * The codes are unsigned (0..15 or 0..31), so one u8 x s8 multiply-add
 * gives sum(q * a) exactly (31 * 127 * 4 per int32 lane); the symmetric
 * formats then subtract offset * sum(a), which depends on the activation
 * block only and is computed once for all R rows. Two blocks share a
 * vector, as in avx512_q8_0.c: block b in the low 256 bits, b + 1 in the
 * high ones; the reduction leaves block b's R sums in lanes 0..7 and
 * b + 1's in lanes 8..15, added to the accumulator one block after the
 * other. The float part repeats the reference's expressions
 * (plugins/ref/q8_0_family_dot.c):
 *     Q4_0  acc += (float)sumi * dw * da
 *     Q5_0  acc += (dw * da) * (float)sumi
 *     Q4_1, Q5_1  acc += (dw * da) * (float)sumi + mw * sa
 */
#include "avx512_common.h"
#include "avx512_kernels.h"

#define Q8_0_BYTES 34
#define Q8_1_BYTES 36
#define Q4_0_BYTES 18
#define Q4_1_BYTES 20
#define Q5_0_BYTES 22
#define Q5_1_BYTES 24

/* The 16 code bytes at p in 128-bit lanes 0 and 1, and those at q (two ==
 * 1) or zeros (two == 0: an odd last block) in lanes 2 and 3; then the low
 * nibbles in lanes 0 and 2 and the high ones in lanes 1 and 3: each
 * block's 32 codes in element order. */
AVX512_INLINE __m512i nibbles2(const uint8_t *p, const uint8_t *q, const int two) {
    const __m512i lo = _mm512_broadcast_i32x4(avx512_load128(p));
    const __m512i b = two ? _mm512_mask_blend_epi64(0xF0, lo, _mm512_broadcast_i32x4(avx512_load128(q)))
                          : _mm512_maskz_mov_epi64(0x0F, lo);
    return _mm512_and_si512(_mm512_srlv_epi64(b, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
}

/* Q5 codes of two blocks: nibbles plus 16 where the block's qh bit is set
 * (bit j of a block's qh is its element j, i.e. byte j of its half). */
AVX512_INLINE __m512i q5_codes2(const uint8_t *w, size_t qh_off, size_t qs_off, size_t bytes, const int two) {
    const uint64_t bits = (uint64_t)anvil_rd_u32(w + qh_off) |
                          (two ? (uint64_t)anvil_rd_u32(w + bytes + qh_off) << 32 : 0);
    const __m512i nib = nibbles2(w + qs_off, w + bytes + qs_off, two);
    return _mm512_mask_add_epi8(nib, (__mmask64)bits, nib, _mm512_set1_epi8(0x10));
}

/* The activation codes of two Q8_0 / Q8_1 blocks (qs at offset qs_off). */
AVX512_INLINE __m512i act2(const uint8_t *a, size_t qs_off, size_t bytes, const int two) {
    return two ? avx512_load2x256(a + qs_off, a + bytes + qs_off) : avx512_zext256(avx512_load256(a + qs_off));
}

/* Lanes 0..7: sum of the low 256 bits' 32 codes; lanes 8..15: the high
 * ones' (the layout of avx512_reduce_halves). Once per pair of blocks. */
AVX512_INLINE __m512i act_sums2(__m512i qa) {
    __m512i s = avx512_dpbusd(_mm512_setzero_si512(), _mm512_set1_epi8(1), qa);
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, AVX512_PERM(0x4E)));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, AVX512_PERM(0xB1)));
    return _mm512_add_epi32(s, _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
}

AVX512_INLINE __m256 lo_ps(__m512i s) { return _mm256_cvtepi32_ps(_mm512_castsi512_si256(s)); }
AVX512_INLINE __m256 hi_ps(__m512i s) { return _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(s, 1)); }

/* One pair of blocks (or, two == 0, the last single one) of Q4_0 (five ==
 * 0) or Q5_0 (five == 1). */
AVX512_INLINE __m256 q_0_step(__m256 acc, const uint8_t *w, size_t ws, const uint8_t *a, const int R, const int five,
                              const int two) {
    const size_t wb = five ? Q5_0_BYTES : Q4_0_BYTES;
    const __m512i qa = act2(a, 2, Q8_0_BYTES, two);
    __m512i m[8];
    AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
        const uint8_t *wr = w + (size_t)r * ws;
        const __m512i q = five ? q5_codes2(wr, 2, 6, wb, two) : nibbles2(wr + 2, wr + wb + 2, two);
        m[r] = avx512_dpbusd(_mm512_setzero_si512(), q, qa);
    }
    const __m512i off = _mm512_slli_epi32(act_sums2(qa), five ? 4 : 3);
    const __m512i s = _mm512_sub_epi32(avx512_reduce_halves(m, R), off);
    for (int k = 0; k < 1 + two; ++k) {
        const __m256 dw = simd_x86_halves(w + (size_t)k * wb, ws, R);
        const __m256 da = _mm256_set1_ps(avx512_half(a + (size_t)k * Q8_0_BYTES));
        const __m256 sumi = k ? hi_ps(s) : lo_ps(s);
        if (five) {
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(dw, da), sumi));
        } else {
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(sumi, dw), da));
        }
    }
    return acc;
}

AVX512_INLINE void q_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            const int five, simd_pf *pf) {
    const size_t wb = five ? Q5_0_BYTES : Q4_0_BYTES;
    __m256 acc = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * wb, a += 2 * Q8_0_BYTES) {
        simd_pf_block(pf, b / 2, 2 * wb, ws, R); /* pairs of blocks */
        acc = q_0_step(acc, w, ws, a, R, five, 1);
    }
    if (b < nb) acc = q_0_step(acc, w, ws, a, R, five, 0);
    avx512_store_rows(y, acc, R);
}

/* Q4_1 (five == 0) and Q5_1 (five == 1): d, m, then (Q5_1) qh, then qs. */
AVX512_INLINE __m256 q_1_step(__m256 acc, const uint8_t *w, size_t ws, const uint8_t *a, const int R, const int five,
                              const int two) {
    const size_t wb = five ? Q5_1_BYTES : Q4_1_BYTES;
    const __m512i qa = act2(a, 4, Q8_1_BYTES, two);
    __m512i m[8];
    AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
        const uint8_t *wr = w + (size_t)r * ws;
        const __m512i q = five ? q5_codes2(wr, 4, 8, wb, two) : nibbles2(wr + 4, wr + wb + 4, two);
        m[r] = avx512_dpbusd(_mm512_setzero_si512(), q, qa);
    }
    const __m512i s = avx512_reduce_halves(m, R);
    for (int k = 0; k < 1 + two; ++k) {
        const uint8_t *wk = w + (size_t)k * wb, *ak = a + (size_t)k * Q8_1_BYTES;
        const __m256 sumi = k ? hi_ps(s) : lo_ps(s);
        const __m256 scaled =
            _mm256_mul_ps(_mm256_mul_ps(simd_x86_halves(wk, ws, R), _mm256_set1_ps(avx512_half(ak))), sumi);
        const __m256 min_term = _mm256_mul_ps(simd_x86_halves(wk + 2, ws, R), _mm256_set1_ps(avx512_half(ak + 2)));
        acc = _mm256_add_ps(acc, _mm256_add_ps(scaled, min_term));
    }
    return acc;
}

AVX512_INLINE void q_1_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            const int five, simd_pf *pf) {
    const size_t wb = five ? Q5_1_BYTES : Q4_1_BYTES;
    __m256 acc = _mm256_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 2 * wb, a += 2 * Q8_1_BYTES) {
        simd_pf_block(pf, b / 2, 2 * wb, ws, R); /* pairs of blocks */
        acc = q_1_step(acc, w, ws, a, R, five, 1);
    }
    if (b < nb) acc = q_1_step(acc, w, ws, a, R, five, 0);
    avx512_store_rows(y, acc, R);
}

AVX512_INLINE void q4_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    q_0_rows(nb, w, ws, a, y, R, 0, pf);
}

AVX512_INLINE void q5_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    q_0_rows(nb, w, ws, a, y, R, 1, pf);
}

AVX512_INLINE void q4_1_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    q_1_rows(nb, w, ws, a, y, R, 0, pf);
}

AVX512_INLINE void q5_1_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    q_1_rows(nb, w, ws, a, y, R, 1, pf);
}

SIMD_DEFINE_ENTRY_POINTS(q4_0, 32, Q4_0_BYTES)
SIMD_DEFINE_ENTRY_POINTS(q4_1, 32, Q4_1_BYTES)
SIMD_DEFINE_ENTRY_POINTS(q5_0, 32, Q5_0_BYTES)
SIMD_DEFINE_ENTRY_POINTS(q5_1, 32, Q5_1_BYTES)

/* ---- decoders: the reference's float operations, 16 lanes at a time ------ */

/* One block: element j < 16 is the low nibble of qs[j], j >= 16 the high
 * nibble of qs[j - 16], plus 16 where bit j of qh is set (five); then
 * (float)(code - offset) * d, and + m when add_min: two roundings, as the
 * reference (no fused add). */
AVX512_INLINE void decode32(const uint8_t *qs, uint32_t qh, const int five, int offset, float d, const int add_min,
                            float m, float *dst) {
    const __m512 vd = _mm512_set1_ps(d), vm = _mm512_set1_ps(m);
    const __m512i nib = _mm512_set1_epi32(0x0F), sixteen = _mm512_set1_epi32(16);
    const __m512i bytes = _mm512_cvtepi8_epi32(avx512_load128(qs)); /* sign-extended: masked below */
    for (int k = 0; k < 2; ++k) {
        __m512i c = _mm512_and_si512(k ? _mm512_srli_epi32(bytes, 4) : bytes, nib);
        if (five) c = _mm512_mask_add_epi32(c, (__mmask16)(qh >> (16 * k)), c, sixteen);
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c, _mm512_set1_epi32(offset))), vd);
        if (add_min) v = _mm512_add_ps(v, vm);
        _mm512_storeu_ps(dst + 16 * k, v);
    }
}

static void q4_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q4_0_BYTES, dst += 32) {
        decode32(b + 2, 0, 0, 8, avx512_half(b), 0, 0.0f, dst);
    }
}

static void q4_1_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q4_1_BYTES, dst += 32) {
        decode32(b + 4, 0, 0, 0, avx512_half(b), 1, avx512_half(b + 2), dst);
    }
}

static void q5_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q5_0_BYTES, dst += 32) {
        decode32(b + 6, anvil_rd_u32(b + 2), 1, 16, avx512_half(b), 0, 0.0f, dst);
    }
}

static void q5_1_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q5_1_BYTES, dst += 32) {
        decode32(b + 8, anvil_rd_u32(b + 4), 1, 0, avx512_half(b), 1, avx512_half(b + 2), dst);
    }
}

AVX512_KERNEL(kernel_q4_0, ANVIL_TYPE_Q4_0, ANVIL_TYPE_Q8_0, q4_0_vec_dot, q4_0_gemv, q4_0_gemm, q4_0_decode);
AVX512_KERNEL(kernel_q4_1, ANVIL_TYPE_Q4_1, ANVIL_TYPE_Q8_1, q4_1_vec_dot, q4_1_gemv, q4_1_gemm, q4_1_decode);
AVX512_KERNEL(kernel_q5_0, ANVIL_TYPE_Q5_0, ANVIL_TYPE_Q8_0, q5_0_vec_dot, q5_0_gemv, q5_0_gemm, q5_0_decode);
AVX512_KERNEL(kernel_q5_1, ANVIL_TYPE_Q5_1, ANVIL_TYPE_Q8_1, q5_1_vec_dot, q5_1_gemv, q5_1_gemm, q5_1_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_q4_q5)[] = { &kernel_q4_0, &kernel_q4_1, &kernel_q5_0,
                                                                       &kernel_q5_1, NULL };
