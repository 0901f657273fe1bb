/* SPDX-License-Identifier: MIT */
/* backend-avx2: Q4_0, Q5_0 (against Q8_0) and Q4_1, Q5_1 (against Q8_1)
 * weights, and their row decoders.
 *
 * The codes are unsigned (0..15 or 0..31), so one u8 x s8 multiply-add
 * gives sum(q * a); the symmetric formats then subtract offset * sum(a),
 * which depends on the activation block only and is computed once for all
 * R rows. The float part repeats the reference's expressions
 * (plugins/ref/q8_0_family_dot.c):
 *     Q4_0  acc += (float)sumi * dw * da
 *     Q5_0  acc += (dw * da) * (float)sumi
 *     Q4_1, Q5_1  acc += (dw * da) * (float)sumi + mw * sa
 */
#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8_0_BYTES 34
#define Q8_1_BYTES 36
#define Q4_0_BYTES 18
#define Q4_1_BYTES 20
#define Q5_0_BYTES 22
#define Q5_1_BYTES 24

/* sum(a) over a block's 32 activation codes, broadcast to every lane. */
AVX2_INLINE __m256i act_sum(__m256i qa) {
    const __m256i s = avx2_dot_u8s8(_mm256_set1_epi8(1), qa);
    return _mm256_set1_epi32(avx2_hsum_i32(s));
}

/* The 32 five-bit codes of a Q5 block: nibbles at qs, fifth bits in qh. */
AVX2_INLINE __m256i q5_codes(const uint8_t *qs, const uint8_t *qh) {
    return _mm256_or_si256(avx2_nibbles(qs), avx2_bit4_from_bits(anvil_rd_u32(qh)));
}

AVX2_INLINE void q4_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q4_0_BYTES, a += Q8_0_BYTES) {
        simd_pf_block(pf, b, Q4_0_BYTES, ws, R);
        const __m256i qa = avx2_load(a + 2);
        __m256i m[8];
        for (int r = 0; r < R; ++r) m[r] = avx2_dot_u8s8(avx2_nibbles(w + r * ws + 2), qa);
        const __m256i sumi = _mm256_sub_epi32(avx2_reduce(m, R), _mm256_slli_epi32(act_sum(qa), 3));
        const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(sumi), simd_x86_halves(w, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(t, _mm256_set1_ps(avx2_half(a))));
    }
    avx2_store_rows(y, acc, R);
}

AVX2_INLINE void q5_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += Q5_0_BYTES, a += Q8_0_BYTES) {
        simd_pf_block(pf, b, Q5_0_BYTES, ws, R);
        const __m256i qa = avx2_load(a + 2);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            m[r] = avx2_dot_u8s8(q5_codes(wr + 6, wr + 2), qa);
        }
        const __m256i sumi = _mm256_sub_epi32(avx2_reduce(m, R), _mm256_slli_epi32(act_sum(qa), 4));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(avx2_half(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sumi)));
    }
    avx2_store_rows(y, acc, R);
}

/* Q4_1 (five = 0) and Q5_1 (five = 1): codes at qs_off, fifth bits at 4. */
AVX2_INLINE void q_1_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                          const int five, simd_pf *pf) {
    const size_t wbytes = five ? Q5_1_BYTES : Q4_1_BYTES;
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += wbytes, a += Q8_1_BYTES) {
        simd_pf_block(pf, b, wbytes, ws, R);
        const __m256i qa = avx2_load(a + 4);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            const __m256i q = five ? q5_codes(wr + 8, wr + 4) : avx2_nibbles(wr + 4);
            m[r] = avx2_dot_u8s8(q, qa);
        }
        const __m256 sumi = _mm256_cvtepi32_ps(avx2_reduce(m, R));
        const __m256 scaled =
            _mm256_mul_ps(_mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(avx2_half(a))), sumi);
        const __m256 min_term = _mm256_mul_ps(simd_x86_halves(w + 2, ws, R), _mm256_set1_ps(avx2_half(a + 2)));
        acc = _mm256_add_ps(acc, _mm256_add_ps(scaled, min_term));
    }
    avx2_store_rows(y, acc, R);
}

AVX2_INLINE void q4_1_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    q_1_rows(nb, w, ws, a, y, R, 0, pf);
}

AVX2_INLINE void q5_1_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    q_1_rows(nb, w, ws, a, y, R, 1, pf);
}

SIMD_DEFINE_ENTRY_POINTS(q4_0, 32, Q4_0_BYTES)
SIMD_DEFINE_ENTRY_POINTS(q4_1, 32, Q4_1_BYTES)
SIMD_DEFINE_ENTRY_POINTS(q5_0, 32, Q5_0_BYTES)
SIMD_DEFINE_ENTRY_POINTS(q5_1, 32, Q5_1_BYTES)

/* ---- decoders: the reference's float operations, 8 lanes at a time ------ */

/* codes (32 bytes, element order) -> (float)(code - offset) * d, and
 * + m when add_min: two roundings, as the reference (no fused add). */
AVX2_INLINE void decode32(__m256i codes, int offset, float d, int add_min, float m, float *dst) {
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    const __m256i off = _mm256_set1_epi32(offset);
    for (int k = 0; k < 4; ++k) {
        const __m128i part = k < 2 ? _mm256_castsi256_si128(codes) : _mm256_extracti128_si256(codes, 1);
        const __m128i bytes = (k & 1) ? _mm_srli_si128(part, 8) : part;
        const __m256i c = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), off);
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(c), vd);
        if (add_min) v = _mm256_add_ps(v, vm);
        _mm256_storeu_ps(dst + 8 * k, v);
    }
}

static void q4_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q4_0_BYTES, dst += 32) {
        decode32(avx2_nibbles(b + 2), 8, avx2_half(b), 0, 0.0f, dst);
    }
}

static void q4_1_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q4_1_BYTES, dst += 32) {
        decode32(avx2_nibbles(b + 4), 0, avx2_half(b), 1, avx2_half(b + 2), dst);
    }
}

static void q5_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q5_0_BYTES, dst += 32) {
        decode32(q5_codes(b + 6, b + 2), 16, avx2_half(b), 0, 0.0f, dst);
    }
}

static void q5_1_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += Q5_1_BYTES, dst += 32) {
        decode32(q5_codes(b + 8, b + 4), 0, avx2_half(b), 1, avx2_half(b + 2), dst);
    }
}

AVX2_KERNEL(kernel_q4_0, ANVIL_TYPE_Q4_0, ANVIL_TYPE_Q8_0, "avx2", q4_0_vec_dot, q4_0_gemv, q4_0_gemm, q4_0_decode);
AVX2_KERNEL(kernel_q4_1, ANVIL_TYPE_Q4_1, ANVIL_TYPE_Q8_1, "avx2", q4_1_vec_dot, q4_1_gemv, q4_1_gemm, q4_1_decode);
AVX2_KERNEL(kernel_q5_0, ANVIL_TYPE_Q5_0, ANVIL_TYPE_Q8_0, "avx2", q5_0_vec_dot, q5_0_gemv, q5_0_gemm, q5_0_decode);
AVX2_KERNEL(kernel_q5_1, ANVIL_TYPE_Q5_1, ANVIL_TYPE_Q8_1, "avx2", q5_1_vec_dot, q5_1_gemv, q5_1_gemm, q5_1_decode);

const anvil_kernel *const anvil_avx2_kernels_q4_q5[] = { &kernel_q4_0, &kernel_q4_1, &kernel_q5_0, &kernel_q5_1,
                                                         NULL };
