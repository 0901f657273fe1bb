/* SPDX-License-Identifier: MIT */
/* backend-avx2: TQ2_0 and TQ1_0 (ternary weights) against Q8_K, and their
 * row decoders.
 *
 * A ternary weight is c - 1 with c in {0, 1, 2} (TQ2_0 also decodes c = 3,
 * which the encoder never writes), so
 *     sum (c - 1) a = sum c a - sum a
 * where sum c a is an unsigned-by-signed multiply-add and sum a is the sum of
 * the Q8_K bsums, computed once per block for all R rows. Every product pair
 * is at most 2 * 3 * 127, so the eight 32-element chunks of a block can be
 * summed in int16 (<= 6096) before the one widening multiply-add per block.
 * Float part, as plugins/ref/ternary_tq*.c:
 *     TQ2_0  sumf += (float)sumi * (y.d * fp16(x.d))
 *     TQ1_0  sumf += (float)sumi * (fp16(x.d) * y.d)
 */
#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8K_QS 4
#define Q8K_BSUMS 260
#define Q8K_BYTES 292
#define TQ2_0_BYTES 66
#define TQ1_0_BYTES 54

/* sum of a block's 256 activation codes (from its bsums), in every lane. */
AVX2_INLINE __m256i q8k_total(const uint8_t *a) {
    const __m256i s = _mm256_madd_epi16(avx2_load(a + Q8K_BSUMS), _mm256_set1_epi16(1));
    return _mm256_set1_epi32(avx2_hsum_i32(s));
}

/* Planes 0 and 2 of a TQ2_0 byte come out as c (mask 0x03 of q and of
 * q >> 4), planes 1 and 3 as 4c (mask 0x0C, in place): one shift per 32
 * bytes. The two families are summed in their own int16 accumulators (at
 * most 4 * 2 * 3 * 127 = 3048 and 4 * 2 * 12 * 127 = 12192) and the second
 * is divided back exactly (every word is a multiple of 4) once per block. */
AVX2_INLINE void tq2_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const __m256i m3 = _mm256_set1_epi8(0x03), mc = _mm256_set1_epi8(0x0C);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += TQ2_0_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, TQ2_0_BYTES, ws, R);
        const uint8_t *qa = a + Q8K_QS;
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            __m256i p1 = _mm256_setzero_si256(), p4 = _mm256_setzero_si256();
            for (int h = 0; h < 2; ++h) {
                const __m256i q = avx2_load_reg(wr + 32 * h), q4 = _mm256_srli_epi16(q, 4);
                const uint8_t *ah = qa + 128 * h;
                p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(_mm256_and_si256(q, m3), avx2_load(ah)));
                p4 = _mm256_add_epi16(p4, _mm256_maddubs_epi16(_mm256_and_si256(q, mc), avx2_load(ah + 32)));
                p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(_mm256_and_si256(q4, m3), avx2_load(ah + 64)));
                p4 = _mm256_add_epi16(p4, _mm256_maddubs_epi16(_mm256_and_si256(q4, mc), avx2_load(ah + 96)));
            }
            m[r] = _mm256_madd_epi16(_mm256_add_epi16(p1, _mm256_srai_epi16(p4, 2)), _mm256_set1_epi16(1));
        }
        const __m256i sumi = _mm256_sub_epi32(avx2_reduce(m, R), q8k_total(a));
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(anvil_rd_f32(a)), simd_x86_halves(w + 64, ws, R));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(sumi), d));
    }
    avx2_store_rows(y, acc, R);
}

/* ---- TQ1_0 ------------------------------------------------------------------
 * Five trits per byte as a base-3 fraction of 256: with q_0 the byte and
 * q_{t+1} = 3 q_t mod 256, trit t is floor(3 q_t / 256), i.e. 0 for
 * q_t <= 85, 1 for 86..170, 2 for 171..255. Element order (ggml's):
 * qs[0..31] elements 32 t + m, qs[32..47] 160 + 16 t + m, qh[0..3]
 * 240 + 4 t + m. */

AVX2_INLINE __m256i times3(__m256i x) { return _mm256_add_epi8(x, _mm256_add_epi8(x, x)); }

/* The codes 0, 1, 2 of biased states (x ^ 0x80: unsigned order, signed
 * compare; the bias survives x -> 3x mod 256, as 3 * 128 = 128 mod 256, so
 * it is applied once per load, not per level). */
AVX2_INLINE __m256i trits(__m256i xs) {
    const __m256i gt85 = _mm256_cmpgt_epi8(xs, _mm256_set1_epi8(85 - 128));
    const __m256i gt170 = _mm256_cmpgt_epi8(xs, _mm256_set1_epi8(170 - 128));
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(gt85, gt170));
}

AVX2_INLINE __m256i biased(__m256i x) { return _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80)); }

/* The eight 32-trit vectors of a TQ1_0 block, in element order. */
AVX2_INLINE void tq1_0_trits(const uint8_t *blk, __m256i t[8]) {
    __m256i q = biased(avx2_load(blk));
    for (int k = 0; k < 5; ++k) {
        t[k] = trits(q);
        q = times3(q);
    }
    /* qs[32..47]: low lane trit 2k, high lane trit 2k + 1 (16 elements each) */
    const __m256i b = biased(_mm256_broadcastsi128_si256(avx2_load128(blk + 32)));
    __m256i v = _mm256_blend_epi32(b, times3(b), 0xF0);
    t[5] = trits(v);
    v = times3(times3(v));
    t[6] = trits(v);
    v = times3(times3(v));
    /* qh: byte 4 t + m holds qh[m] times 3^t */
    const __m256i c0 = biased(_mm256_set1_epi32((int)anvil_rd_u32(blk + 48)));
    const __m256i c1 = times3(c0), c2 = times3(c1), c3 = times3(c2);
    const __m256i c = _mm256_blend_epi32(_mm256_blend_epi32(c0, c1, 0x22), _mm256_blend_epi32(c2, c3, 0x88), 0xCC);
    t[7] = trits(_mm256_blend_epi32(v, c, 0xF0));
}

AVX2_INLINE void tq1_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += TQ1_0_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, TQ1_0_BYTES, ws, R);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            __m256i t[8];
            tq1_0_trits(w + r * ws, t);
            __m256i s16 = _mm256_setzero_si256();
            for (int k = 0; k < 8; ++k) {
                s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(t[k], avx2_load(a + Q8K_QS + 32 * k)));
            }
            m[r] = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
        }
        const __m256i sumi = _mm256_sub_epi32(avx2_reduce(m, R), q8k_total(a));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w + 52, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(sumi), d));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS_R4(tq2_0, 256, TQ2_0_BYTES) /* out of cache: see simd_row_passes.h */
SIMD_DEFINE_ENTRY_POINTS(tq1_0, 256, TQ1_0_BYTES)

/* ---- decoders: (float)(c - 1) * d ------------------------------------------ */

AVX2_INLINE void decode_codes32(__m256i codes, __m256 d, float *dst) {
    for (int k = 0; k < 4; ++k) {
        const __m128i part = k < 2 ? _mm256_castsi256_si128(codes) : _mm256_extracti128_si256(codes, 1);
        const __m128i bytes = (k & 1) ? _mm_srli_si128(part, 8) : part;
        const __m256i c = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), _mm256_set1_epi32(1));
        _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(c), d));
    }
}

static void tq2_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (size_t i = 0; i < n / 256; ++i, b += TQ2_0_BYTES) {
        const __m256 d = _mm256_set1_ps(avx2_half(b + 64));
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = avx2_load(b + 32 * h);
            for (int l = 0; l < 4; ++l, dst += 32) {
                decode_codes32(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * l), m3), d, dst);
            }
        }
    }
}

static void tq1_0_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += TQ1_0_BYTES) {
        const __m256 d = _mm256_set1_ps(avx2_half(b + 52));
        __m256i t[8];
        tq1_0_trits(b, t);
        for (int k = 0; k < 8; ++k, dst += 32) decode_codes32(t[k], d, dst);
    }
}

AVX2_KERNEL(kernel_tq1_0, ANVIL_TYPE_TQ1_0, ANVIL_TYPE_Q8_K, "avx2", tq1_0_vec_dot, tq1_0_gemv, tq1_0_gemm,
            tq1_0_decode);
AVX2_KERNEL(kernel_tq2_0, ANVIL_TYPE_TQ2_0, ANVIL_TYPE_Q8_K, "avx2", tq2_0_vec_dot, tq2_0_gemv, tq2_0_gemm,
            tq2_0_decode);

const anvil_kernel *const anvil_avx2_kernels_ternary[] = { &kernel_tq1_0, &kernel_tq2_0, NULL };
