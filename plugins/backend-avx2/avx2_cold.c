/* SPDX-License-Identifier: MIT */
/* backend-avx2: IQ4_NL and MXFP4 (against Q8_0) and IQ4_XS (against Q8_K),
 * and their row decoders.
 *
 * All three map 4-bit codes through a 16-entry int8 table (one byte
 * shuffle per 32 codes), then take a signed-by-signed dot.
 *   IQ4_NL  sumf += (da * dw) * (float)sumi              (as the reference)
 *   MXFP4   sumf += (da * e8m0_half(e)) * (float)sumi    (as the reference)
 *   IQ4_XS  the reference adds one float term per 32-element sub-block,
 *           (d * y.d * (ls - 32)) * sumi. Here the sub-block sums are
 *           weighted by their integer scales in int32 first (exact) and the
 *           float part runs once per super-block:
 *               sumf += (fp16(x.d) * y.d) * (float)sum_ib (ls_ib - 32) sumi_ib
 *           The integer parts are the reference's; only the float rounding
 *           order differs (the ABI's 1e-5 bound; this is the one kernel of
 *           the backend that is not bit-identical to plugins/ref).
 */
#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8_0_BYTES 34
#define Q8K_QS 4
#define Q8K_BYTES 292
#define IQ4_NL_BYTES 18
#define IQ4_XS_BYTES 136
#define MXFP4_BYTES 17

AVX2_INLINE __m256i iq4nl_table(void) {
    return _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}

/* ggml's doubled E2M1 values: 0, 1, 2, 3, 4, 6, 8, 12 and their negatives
 * (the factor 1/2 lives in the scale). */
AVX2_INLINE __m256i mxfp4_table(void) {
    return _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
}

/* 2^(e - 128) exactly (anvil_e8m0_to_fp32_half), branch-free. */
AVX2_INLINE float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (UINT32_C(0x00200000) << e) : ((uint32_t)(e - 1) << 23);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

AVX2_INLINE void iq4_nl_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    const __m256i table = iq4nl_table();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ4_NL_BYTES, a += Q8_0_BYTES) {
        simd_pf_block(pf, b, IQ4_NL_BYTES, ws, R);
        const __m256i qa = avx2_load(a + 2);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            m[r] = avx2_dot_s8s8(_mm256_shuffle_epi8(table, avx2_nibbles(w + r * ws + 2)), qa);
        }
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(avx2_half(a)), simd_x86_halves(w, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    avx2_store_rows(y, acc, R);
}

AVX2_INLINE void mxfp4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const __m256i table = mxfp4_table();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += MXFP4_BYTES, a += Q8_0_BYTES) {
        simd_pf_block(pf, b, MXFP4_BYTES, ws, R);
        const __m256i qa = avx2_load(a + 2);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            m[r] = avx2_dot_s8s8(_mm256_shuffle_epi8(table, avx2_nibbles(w + r * ws + 1)), qa);
        }
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(avx2_half(a)), simd_x86_e8m0_halves(w, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    avx2_store_rows(y, acc, R);
}

/* IQ4_XS sub-scales ls_ib - 32 (ib = 0..7) as int16 in both lanes:
 * [s0..s7 | s0..s7]. */
AVX2_INLINE __m256i iq4_xs_scales(const uint8_t *blk) {
    const uint32_t h = anvil_rd_u16(blk + 2), l = anvil_rd_u32(blk + 4);
    int16_t s[8];
    for (int ib = 0; ib < 8; ++ib) {
        s[ib] = (int16_t)((int)(((l >> (4 * ib)) & 0xF) | (((h >> (2 * ib)) & 3) << 4)) - 32);
    }
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)s));
}

AVX2_INLINE void iq4_xs_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    const __m256i table = iq4nl_table();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ4_XS_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ4_XS_BYTES, ws, R);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            const __m256i sc = iq4_xs_scales(wr);
            __m256i s = _mm256_setzero_si256();
            for (int ib = 0; ib < 8; ++ib) {
                const __m256i v = _mm256_shuffle_epi8(table, avx2_nibbles(wr + 8 + 16 * ib));
                const __m256i qa = avx2_load(a + Q8K_QS + 32 * ib);
                const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(qa, v));
                const short wsel = (short)((2 * ib) | ((2 * ib + 1) << 8));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_shuffle_epi8(sc, _mm256_set1_epi16(wsel))));
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq4_nl, 32, IQ4_NL_BYTES)
SIMD_DEFINE_ENTRY_POINTS(mxfp4, 32, MXFP4_BYTES)
SIMD_DEFINE_ENTRY_POINTS(iq4_xs, 256, IQ4_XS_BYTES)

/* ---- decoders ---------------------------------------------------------------- */

/* 32 int8 table values -> d * (float)v (IEEE products commute bit for bit). */
AVX2_INLINE void decode_values32(__m256i v, __m256 d, float *dst) {
    for (int k = 0; k < 4; ++k) {
        const __m128i part = k < 2 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1);
        const __m128i bytes = (k & 1) ? _mm_srli_si128(part, 8) : part;
        _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes))));
    }
}

static void iq4_nl_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i table = iq4nl_table();
    for (size_t i = 0; i < n / 32; ++i, b += IQ4_NL_BYTES, dst += 32) {
        decode_values32(_mm256_shuffle_epi8(table, avx2_nibbles(b + 2)), _mm256_set1_ps(avx2_half(b)), dst);
    }
}

static void iq4_xs_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i table = iq4nl_table();
    for (size_t i = 0; i < n / 256; ++i, b += IQ4_XS_BYTES) {
        const float d = avx2_half(b);
        int16_t s[16];
        _mm256_storeu_si256((__m256i *)s, iq4_xs_scales(b));
        for (int ib = 0; ib < 8; ++ib, dst += 32) {
            const float dl = d * (float)s[ib];
            decode_values32(_mm256_shuffle_epi8(table, avx2_nibbles(b + 8 + 16 * ib)), _mm256_set1_ps(dl), dst);
        }
    }
}

static void mxfp4_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i table = mxfp4_table();
    for (size_t i = 0; i < n / 32; ++i, b += MXFP4_BYTES, dst += 32) {
        decode_values32(_mm256_shuffle_epi8(table, avx2_nibbles(b + 1)), _mm256_set1_ps(e8m0_half(b[0])), dst);
    }
}

AVX2_KERNEL(kernel_iq4_nl, ANVIL_TYPE_IQ4_NL, ANVIL_TYPE_Q8_0, "avx2", iq4_nl_vec_dot, iq4_nl_gemv, iq4_nl_gemm,
            iq4_nl_decode);
AVX2_KERNEL(kernel_iq4_xs, ANVIL_TYPE_IQ4_XS, ANVIL_TYPE_Q8_K, "avx2", iq4_xs_vec_dot, iq4_xs_gemv, iq4_xs_gemm,
            iq4_xs_decode);
AVX2_KERNEL(kernel_mxfp4, ANVIL_TYPE_MXFP4, ANVIL_TYPE_Q8_0, "avx2", mxfp4_vec_dot, mxfp4_gemv, mxfp4_gemm,
            mxfp4_decode);

const anvil_kernel *const anvil_avx2_kernels_cold[] = { &kernel_iq4_nl, &kernel_iq4_xs, &kernel_mxfp4, NULL };
