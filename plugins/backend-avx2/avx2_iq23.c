/* SPDX-License-Identifier: MIT */
/* backend-avx2: the IQ2/IQ3 lattice formats against Q8_K (IQ2_XXS,
 * IQ3_XXS, IQ2_XS, IQ2_S, IQ3_S), vec_dot and the row passes; rows decode
 * through the scalar referee's decoders (plugins/ref/cold_grid.c).
 *
 * Per ymm, one 32-element sub-block of one row:
 *  - magnitudes: four 8-byte codebook words read with scalar loads and
 *    inserted into the vector (simd_iq23.h), no gather;
 *  - signs: the 32 sign bits spread to a byte mask (vpshufb, vpand,
 *    vpcmpeqb) and applied to the activations (vpsignb by -1 / +1), so
 *    the magnitudes stay u8;
 *  - vpmaddubsw (pairs <= 15748, exact) then vpmaddwd by the int16
 *    sub-scale of each 16 elements, into int32: the reference's
 *    sum_ib ls_ib * sumi_ib, exact, in any grouping.
 * Each row's int32 is reduced to one lane (avx2_reduce) and carried
 * through the reference's float steps, sumf += (fp16(d) * a.d) *
 * (float)bsum, then the format's final factor: bit-identical to
 * plugins/ref.
 */
#include "avx2_common.h"
#include "avx2_kernels.h"
#include "ref/cold.h"
#include "simd_iq23.h"

typedef void (*iq23_fetch_fn)(const uint8_t *blk, int ib, simd_iq23_sub *u);

typedef struct iq23_consts {
    __m256i spread; /* byte j <- byte j / 8 of the sign word */
    __m256i bit;    /* byte j: 1 << (j % 8) */
    __m256i sc;     /* words of the low lane <- word 0, high lane <- word 1 */
    __m256i one;
} iq23_consts;

AVX2_INLINE iq23_consts iq23_make_consts(void) {
    iq23_consts c;
    c.spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    c.bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    c.sc = _mm256_set_epi64x(0x0302030203020302, 0x0302030203020302, 0x0100010001000100, 0x0100010001000100);
    c.one = _mm256_set1_epi8(1);
    return c;
}

/* acc + the weighted dot of sub-block u with activations qa. */
AVX2_INLINE __m256i iq23_part(__m256i acc, const simd_iq23_sub *u, __m256i qa, const iq23_consts *c) {
    const __m256i g =
        _mm256_set_epi64x((long long)u->g[3], (long long)u->g[2], (long long)u->g[1], (long long)u->g[0]);
    const __m256i s = _mm256_shuffle_epi8(_mm256_set1_epi32((int)u->signs), c->spread);
    const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(s, c->bit), c->bit);
    const __m256i ys = _mm256_sign_epi8(qa, _mm256_or_si256(neg, c->one));
    const __m256i sc = _mm256_shuffle_epi8(_mm256_set1_epi32((int)u->scales), c->sc);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(g, ys), sc));
}

AVX2_INLINE void iq23_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf, iq23_fetch_fn fetch, const size_t bb, const float final) {
    const iq23_consts c = iq23_make_consts();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            __m256i s = _mm256_setzero_si256();
            for (int ib = 0; ib < 8; ++ib) {
                simd_iq23_sub u;
                fetch(wr, ib, &u);
                s = iq23_part(s, &u, avx2_load(a + SIMD_IQ23_Q8K_QS + 32 * ib), &c);
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    if (final != 1.0f) acc = _mm256_mul_ps(_mm256_set1_ps(final), acc);
    avx2_store_rows(y, acc, R);
}

#define IQ23_FORMAT(fmt, FMT)                                                                                    \
    AVX2_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                simd_pf *pf) {                                                                   \
        iq23_rows(nb, w, ws, a, y, R, pf, simd_iq23_##fmt, sizeof(anvil_block_##fmt), SIMD_IQ23_FINAL_##FMT);    \
    }                                                                                                            \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                \
    AVX2_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, "avx2", fmt##_vec_dot, fmt##_gemv, fmt##_gemm,  \
                anvil_ref_decode_##fmt);

IQ23_FORMAT(iq2_xxs, IQ2_XXS)
IQ23_FORMAT(iq3_xxs, IQ3_XXS)
IQ23_FORMAT(iq2_xs, IQ2_XS)
IQ23_FORMAT(iq2_s, IQ2_S)
IQ23_FORMAT(iq3_s, IQ3_S)

const anvil_kernel *const anvil_avx2_kernels_iq23[] = {
    &kernel_iq2_xxs, &kernel_iq3_xxs, &kernel_iq2_xs, &kernel_iq2_s, &kernel_iq3_s, NULL,
};
