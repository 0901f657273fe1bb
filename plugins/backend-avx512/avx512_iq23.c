/* SPDX-License-Identifier: MIT */
/* backend-avx512: the IQ2/IQ3 lattice formats against Q8_K (IQ2_XXS,
 * IQ3_XXS, IQ2_XS, IQ2_S, IQ3_S), vec_dot and the row passes; rows decode
 * through the scalar referee's decoders (plugins/ref/cold_grid.c).
 *
 * Per zmm, 64 elements (two sub-blocks) of one row:
 *  - magnitudes: eight 8-byte codebook words read with scalar loads and
 *    inserted into the vector (simd_iq23.h), no gather;
 *  - signs: the 64 sign bits are a k-mask, and the activations are negated
 *    under it (vpsubb with mask) - the unsigned magnitudes stay u8;
 *  - vpmaddubsw (pairs <= 15748, exact) then vpmaddwd by the int16
 *    sub-scale of each 16 elements, into int32: the reference's
 *    sum_ib ls_ib * sumi_ib, exact, in any grouping.
 * The activations are loaded once per super-block for all R rows; each
 * row's int32 is reduced to one lane (avx512_reduce) and carried through
 * the reference's float steps, sumf += (fp16(d) * a.d) * (float)bsum, then
 * the format's final factor: bit-identical to plugins/ref. Both variants
 * run the same code (no vpdpbusd: the sub-scales ride on vpmaddwd).
 */
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "ref/cold.h"
#include "simd_iq23.h"

typedef void (*iq23_fetch_fn)(const uint8_t *blk, int ib, simd_iq23_sub *u);

/* Lane k (elements 16 k .. 16 k + 15) of a zmm: int16 k of the 64-bit
 * word in every 128-bit lane. */
AVX512_INLINE __m512i iq23_scale_ctrl(void) {
    return _mm512_set_epi64(0x0706070607060706, 0x0706070607060706, 0x0504050405040504, 0x0504050405040504,
                            0x0302030203020302, 0x0302030203020302, 0x0100010001000100, 0x0100010001000100);
}

/* acc + the weighted dot of sub-blocks u0 (low 256 bits) and u1 (high)
 * with activations qa. */
AVX512_INLINE __m512i iq23_part(__m512i acc, const simd_iq23_sub *u0, const simd_iq23_sub *u1, __m512i qa,
                                __m512i ctrl) {
    const __m512i g = _mm512_set_epi64((long long)u1->g[3], (long long)u1->g[2], (long long)u1->g[1],
                                       (long long)u1->g[0], (long long)u0->g[3], (long long)u0->g[2],
                                       (long long)u0->g[1], (long long)u0->g[0]);
    const __mmask64 neg = (__mmask64)((uint64_t)u0->signs | (uint64_t)u1->signs << 32);
    const __m512i ys = _mm512_mask_sub_epi8(qa, neg, _mm512_setzero_si512(), qa);
    const __m512i sc =
        _mm512_shuffle_epi8(_mm512_set1_epi64((long long)((uint64_t)u0->scales | (uint64_t)u1->scales << 32)), ctrl);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(g, ys), sc));
}

AVX512_INLINE void iq23_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf, iq23_fetch_fn fetch, const size_t bb, const float final) {
    const __m512i ctrl = iq23_scale_ctrl();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m512i qa[4];
        for (int h = 0; h < 4; ++h) qa[h] = avx512_load(a + SIMD_IQ23_Q8K_QS + 64 * h);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            __m512i s = _mm512_setzero_si512();
            for (int h = 0; h < 4; ++h) {
                simd_iq23_sub u0, u1;
                fetch(wr, 2 * h, &u0);
                fetch(wr, 2 * h + 1, &u1);
                s = iq23_part(s, &u0, &u1, qa[h], ctrl);
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(m, R))));
    }
    if (final != 1.0f) acc = _mm256_mul_ps(_mm256_set1_ps(final), acc);
    avx512_store_rows(y, acc, R);
}

#define IQ23_FORMAT(fmt, FMT)                                                                                      \
    AVX512_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                  simd_pf *pf) {                                                                   \
        iq23_rows(nb, w, ws, a, y, R, pf, simd_iq23_##fmt, sizeof(anvil_block_##fmt), SIMD_IQ23_FINAL_##FMT);      \
    }                                                                                                              \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                  \
    AVX512_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, fmt##_vec_dot, fmt##_gemv, fmt##_gemm,          \
                  anvil_ref_decode_##fmt);

IQ23_FORMAT(iq2_xxs, IQ2_XXS)
IQ23_FORMAT(iq3_xxs, IQ3_XXS)
IQ23_FORMAT(iq2_xs, IQ2_XS)
IQ23_FORMAT(iq2_s, IQ2_S)
IQ23_FORMAT(iq3_s, IQ3_S)

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_iq23)[] = {
    &kernel_iq2_xxs, &kernel_iq3_xxs, &kernel_iq2_xs, &kernel_iq2_s, &kernel_iq3_s, NULL,
};
