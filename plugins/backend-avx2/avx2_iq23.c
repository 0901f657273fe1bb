/* SPDX-License-Identifier: MIT */
/* backend-avx2: the IQ2/IQ3 lattice formats against Q8_K (IQ2_XXS,
 * IQ3_XXS, IQ2_XS, IQ2_S, IQ3_S), vec_dot and the row passes; rows decode
 * through the scalar referee's decoders (plugins/ref/cold_grid.c).
 *
 * Per ymm, one 32-element sub-block of one row:
 *  - magnitudes: IQ2 (8-byte points): four codebook words read with
 *    scalar loads and inserted into the vector (simd_iq23.h); IQ3 (4-byte
 *    points): one vpgatherdd of the 8 indices (IQ3_S: 9-bit, the qh bit
 *    by vpsllvd), measured on Zen 4 at 1.3x (IQ3_XXS) and 1.45x (IQ3_S)
 *    the scalar inserts; a 4-qword vpgatherqq for IQ2 was 0.9x;
 *  - the sub-block loop is unrolled (constant lane picks; a runtime
 *    vpermd index cost IQ2_S 20 %);
 *  - signs and sub-scales, three ways (measured, 1 thread, 4096 x 4096,
 *    against ggml's haswell build on Zen 4; the vector ports are the
 *    bottleneck, so work moves to scalar loads where it can):
 *    IQ2_XS, IQ3_S: per row and super-block two ymm ("meta") hold every
 *    sub-block's sign bytes (IQ2_XS: ksigns computed, index | parity << 7
 *    by two vpshufb) and int16 sub-scales; per sub-block a vpermq and
 *    vpshufb, vpand, vpcmpeqb spread the 32 sign bits to a byte mask,
 *    applied to the activations (vpsignb by -1 / +1), so the magnitudes
 *    stay u8;
 *    IQ2_XXS, IQ3_XXS: the +-1 sign bytes of each 7-bit index from a
 *    128 x u64 table (four scalar loads, vpsignb direct) and the scale
 *    2 s + 1 by vpbroadcastw, no meta (0.98x -> 1.11x, 1.06x -> 1.22x);
 *    IQ2_S: the raw sign bits and the (lo, hi) scale pair of a sub-block
 *    each broadcast from memory (the pair from a per-row stack array), no
 *    vpermq (0.99x -> 1.02x);
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

typedef __m256i (*iq23_grid_fn)(const uint8_t *blk, int ib);
typedef void (*iq23_meta_fn)(const uint8_t *blk, __m256i meta[2]);

/* ---- signs and sub-scales of a super-block, in vectors ------------------------
 * meta(blk): qword ib % 4 of meta[ib / 4] = the 4 sign bytes of sub-block
 * ib (bytes 0..3, bit j of byte l: element 8 l + j negated), then the
 * int16 sub-scales of its elements 0..15 (bytes 4, 5) and 16..31 (6, 7). */

AVX2_INLINE __m256i iq23_set1(uint64_t v) { return _mm256_set1_epi64x((long long)v); }

/* x | parity(x) << 7 per byte (x < 128): ksigns[x], computed. */
AVX2_INLINE __m256i iq23_ksigns(__m256i x) {
    const __m256i ptab =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(0, (char)0x80, (char)0x80, 0, (char)0x80, 0, 0, (char)0x80,
                                                  (char)0x80, 0, 0, (char)0x80, 0, (char)0x80, (char)0x80, 0));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(ptab, _mm256_and_si256(x, m4)),
                                       _mm256_shuffle_epi8(ptab, _mm256_and_si256(_mm256_srli_epi16(x, 4), m4)));
    return _mm256_or_si256(x, p);
}

/* Sub-scales lo, hi (qword lanes, < 16) -> 2 lo + 1, 2 hi + 1 at words 2, 3. */
AVX2_INLINE __m256i iq23_scale_words(__m256i lo, __m256i hi) {
    const __m256i one = iq23_set1(1);
    const __m256i l = _mm256_or_si256(_mm256_slli_epi64(lo, 1), one),
                  h = _mm256_or_si256(_mm256_slli_epi64(hi, 1), one);
    return _mm256_or_si256(_mm256_slli_epi64(l, 32), _mm256_slli_epi64(h, 48));
}

/* Two 4-bit sub-scales per byte (IQ2_XS, IQ2_S): 4 bytes at p. */
AVX2_INLINE __m256i iq23_scales_nibble_pairs(const uint8_t *p) {
    const __m256i sc = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)anvil_rd_u32(p)));
    return iq23_scale_words(_mm256_and_si256(sc, iq23_set1(15)), _mm256_srli_epi64(sc, 4));
}

/* Raw sign bytes (IQ2_S, IQ3_S): 16 bytes at p. */
AVX2_INLINE __m256i iq23_raw_signs(const uint8_t *p) { return _mm256_cvtepu32_epi64(avx2_load128(p)); }

AVX2_INLINE void iq23_meta_iq2_xs(const uint8_t *blk, __m256i meta[2]) {
    const __m256i pack =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 2, 4, 6, -1, -1, -1, -1, 8, 10, 12, 14, -1, -1, -1, -1));
    for (int k = 0; k < 2; ++k) {
        /* sign index = u16 >> 9: the low byte of each word, gathered to bytes 0..3 of the qword */
        const __m256i idx = _mm256_srli_epi16(avx2_load(blk + offsetof(anvil_block_iq2_xs, qs) + 32 * k), 9);
        meta[k] = _mm256_or_si256(iq23_ksigns(_mm256_shuffle_epi8(idx, pack)),
                                  iq23_scales_nibble_pairs(blk + offsetof(anvil_block_iq2_xs, scales) + 4 * k));
    }
}

AVX2_INLINE void iq23_meta_iq3_s(const uint8_t *blk, __m256i meta[2]) {
    const __m256i all = iq23_set1(anvil_rd_u32(blk + offsetof(anvil_block_iq3_s, scales)));
    for (int k = 0; k < 2; ++k) {
        const __m256i sh = _mm256_set_epi64x(16 * k + 12, 16 * k + 8, 16 * k + 4, 16 * k);
        const __m256i sc = _mm256_and_si256(_mm256_srlv_epi64(all, sh), iq23_set1(15));
        meta[k] = _mm256_or_si256(iq23_raw_signs(blk + offsetof(anvil_block_iq3_s, signs) + 16 * k),
                                  iq23_scale_words(sc, sc));
    }
}

typedef struct iq23_consts {
    __m256i spread; /* lane k: sign bytes 2 k, 2 k + 1, each 8 times */
    __m256i bit;    /* byte j: 1 << (j % 8) */
    __m256i scale;  /* lane k: word 2 + k, 8 times */
    __m256i one;
} iq23_consts;

AVX2_INLINE iq23_consts iq23_make_consts(void) {
    iq23_consts c;
    c.spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    c.bit = iq23_set1(0x8040201008040201ULL);
    c.scale = _mm256_set_epi64x(0x0706070607060706, 0x0706070607060706, 0x0504050405040504, 0x0504050405040504);
    c.one = _mm256_set1_epi8(1);
    return c;
}

/* acc + the weighted dot of sub-block ib (magnitudes g, its meta qword
 * at index q of meta) with activations qa. */
AVX2_INLINE __m256i iq23_part(__m256i acc, __m256i gv, __m256i meta, int q, __m256i qa, const iq23_consts *c) {
    /* qword q to every lane (q is a constant once the sub-block loop is
     * unrolled; the switch keeps the immediate a constant for clang too) */
    __m256i mq;
    switch (q) {
    case 0: mq = _mm256_permute4x64_epi64(meta, 0x00); break;
    case 1: mq = _mm256_permute4x64_epi64(meta, 0x55); break;
    case 2: mq = _mm256_permute4x64_epi64(meta, 0xAA); break;
    default: mq = _mm256_permute4x64_epi64(meta, 0xFF); break;
    }
    const __m256i s = _mm256_shuffle_epi8(mq, c->spread);
    const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(s, c->bit), c->bit);
    const __m256i ys = _mm256_sign_epi8(qa, _mm256_or_si256(neg, c->one));
    const __m256i sc = _mm256_shuffle_epi8(mq, c->scale);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(gv, ys), sc));
}

AVX2_INLINE void iq23_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf, iq23_grid_fn grid, iq23_meta_fn metaf, const size_t bb, const float final) {
    const iq23_consts c = iq23_make_consts();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            __m256i meta[2];
            metaf(wr, meta);
            __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8 /* meta in registers, constant lane picks */
            for (int ib = 0; ib < 8; ++ib) {
                s = iq23_part(s, grid(wr, ib), meta[ib / 4], ib % 4, avx2_load(a + SIMD_IQ23_Q8K_QS + 32 * ib), &c);
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    if (final != 1.0f) acc = _mm256_mul_ps(_mm256_set1_ps(final), acc);
    avx2_store_rows(y, acc, R);
}

/* ---- IQ2_XXS / IQ3_XXS: signs by table, no meta vectors ----------------------
 * iq23_sign64[x]: the 8 sign bytes of 7-bit sign index x as vpsignb
 * multipliers, byte j = -1 where bit j of ksigns[x] = x | parity(x) << 7
 * is set, else +1 (a format constant; a wrong entry fails test_avx2's
 * bit-exact check against the referee). Per sub-block four scalar loads
 * and one scalar scale replace the vector meta's shuffles: the vector
 * ports are these kernels' bottleneck. */
#define IQ23_PAR7(x) (((x) ^ (x) >> 1 ^ (x) >> 2 ^ (x) >> 3 ^ (x) >> 4 ^ (x) >> 5 ^ (x) >> 6) & 1)
#define IQ23_SB(bit, j) ((bit) ? 0xFFULL << (8 * (j)) : 0x01ULL << (8 * (j)))
#define IQ23_S(x)                                                                                         \
    (IQ23_SB((x)&1, 0) | IQ23_SB((x) >> 1 & 1, 1) | IQ23_SB((x) >> 2 & 1, 2) | IQ23_SB((x) >> 3 & 1, 3) | \
     IQ23_SB((x) >> 4 & 1, 4) | IQ23_SB((x) >> 5 & 1, 5) | IQ23_SB((x) >> 6 & 1, 6) | IQ23_SB(IQ23_PAR7(x), 7))
#define IQ23_S4(x) IQ23_S(x), IQ23_S((x) + 1), IQ23_S((x) + 2), IQ23_S((x) + 3)
#define IQ23_S16(x) IQ23_S4(x), IQ23_S4((x) + 4), IQ23_S4((x) + 8), IQ23_S4((x) + 12)
static const uint64_t iq23_sign64[128] = { IQ23_S16(0),  IQ23_S16(16), IQ23_S16(32), IQ23_S16(48),
                                           IQ23_S16(64), IQ23_S16(80), IQ23_S16(96), IQ23_S16(112) };

/* acc + sub-block ib's weighted dot; aux: its u32 (4 sign indices, scale). */
AVX2_INLINE __m256i iq23_part_xxs(__m256i acc, __m256i gv, uint32_t aux, __m256i qa) {
    const __m256i sg = _mm256_set_epi64x((long long)iq23_sign64[(aux >> 21) & 127],
                                         (long long)iq23_sign64[(aux >> 14) & 127],
                                         (long long)iq23_sign64[(aux >> 7) & 127], (long long)iq23_sign64[aux & 127]);
    const __m256i sc = _mm256_set1_epi16((short)(2 * (aux >> 28) + 1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(gv, _mm256_sign_epi8(qa, sg)), sc));
}

typedef uint32_t (*iq23_aux_fn)(const uint8_t *blk, int ib);

AVX2_INLINE uint32_t iq23_aux_iq2_xxs(const uint8_t *blk, int ib) {
    return anvil_rd_u32(blk + offsetof(anvil_block_iq2_xxs, qs) + 8 * ib + 4);
}

AVX2_INLINE uint32_t iq23_aux_iq3_xxs(const uint8_t *blk, int ib) {
    return anvil_rd_u32(blk + offsetof(anvil_block_iq3_xxs, qs) + ANVIL_QK_K / 4 + 4 * ib);
}

AVX2_INLINE void iq23_rows_xxs(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                               simd_pf *pf, iq23_grid_fn grid, iq23_aux_fn auxf, const size_t bb, const float final) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int ib = 0; ib < 8; ++ib) {
                s = iq23_part_xxs(s, grid(wr, ib), auxf(wr, ib), avx2_load(a + SIMD_IQ23_Q8K_QS + 32 * ib));
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    acc = _mm256_mul_ps(_mm256_set1_ps(final), acc);
    avx2_store_rows(y, acc, R);
}

/* ---- magnitudes of sub-block ib, one ymm ------------------------------------ */

#define IQ23_GRID_WORDS(fmt)                                                                          \
    AVX2_INLINE __m256i iq23_grid_##fmt(const uint8_t *blk, int ib) {                                 \
        uint64_t g[4];                                                                                \
        simd_iq23_grid_##fmt(blk, ib, g);                                                             \
        return _mm256_set_epi64x((long long)g[3], (long long)g[2], (long long)g[1], (long long)g[0]); \
    }
IQ23_GRID_WORDS(iq2_xxs)
IQ23_GRID_WORDS(iq2_xs)
IQ23_GRID_WORDS(iq2_s)

/* IQ3_S: eight 4-byte lattice points, index q[k] | bit k of qh[ib] << 8
 * (< 512), one gather */
AVX2_INLINE __m256i iq23_grid_iq3_s(const uint8_t *blk, int ib) {
    const uint8_t *q = blk + offsetof(anvil_block_iq3_s, qs) + 8 * ib;
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)q));
    const __m256i qh = _mm256_set1_epi32(blk[offsetof(anvil_block_iq3_s, qh) + ib]);
    const __m256i hi =
        _mm256_and_si256(_mm256_sllv_epi32(qh, _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)), _mm256_set1_epi32(256));
    return _mm256_i32gather_epi32((const int *)(const void *)anvil_cold_iq3s_grid, _mm256_or_si256(lo, hi), 4);
}

/* IQ3_XXS: eight 4-byte lattice points, one gather of the 8 index bytes */
AVX2_INLINE __m256i iq23_grid_iq3_xxs(const uint8_t *blk, int ib) {
    const uint8_t *q = blk + offsetof(anvil_block_iq3_xxs, qs) + 8 * ib;
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)q));
    return _mm256_i32gather_epi32((const int *)(const void *)anvil_cold_iq3xxs_grid, idx, 4);
}

/* ---- IQ2_S: raw sign bits and sub-scales broadcast from memory -------------
 * Per row and super-block the 16 sub-scales 2 s + 1 are laid out once as
 * int16 (lo, hi) pairs in a stack array; per sub-block a vpbroadcastd of
 * its sign bits and one of its scale pair (loads, no shuffle uop) replace
 * the meta vector's vpermq. */
AVX2_INLINE void iq2_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const iq23_consts c = iq23_make_consts();
    /* lane 0: word 0 (scale of elements 0..15) 8 times; lane 1: word 1 */
    const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2,
                                          3, 2, 3, 2, 3, 2, 3);
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_iq2_s), a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, sizeof(anvil_block_iq2_s), ws, R);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const uint8_t *signs = wr + offsetof(anvil_block_iq2_s, qs) + ANVIL_QK_K / 8;
            /* word 2 ib: 2 (scales[ib] & 15) + 1, word 2 ib + 1: 2 (scales[ib] >> 4) + 1 */
            const __m128i sc8 =
                _mm_loadl_epi64((const __m128i *)(const void *)(wr + offsetof(anvil_block_iq2_s, scales)));
            const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(sc8, m4), _mm_and_si128(_mm_srli_epi16(sc8, 4), m4));
            uint32_t scales[8];
            const __m256i s16 =
                _mm256_add_epi16(_mm256_slli_epi16(_mm256_cvtepu8_epi16(nib), 1), _mm256_set1_epi16(1));
            _mm256_storeu_si256((__m256i *)(void *)scales, s16);
            __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int ib = 0; ib < 8; ++ib) {
                const __m256i sb =
                    _mm256_shuffle_epi8(_mm256_set1_epi32((int)anvil_rd_u32(signs + 4 * ib)), c.spread);
                const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(sb, c.bit), c.bit);
                const __m256i ys =
                    _mm256_sign_epi8(avx2_load(a + SIMD_IQ23_Q8K_QS + 32 * ib), _mm256_or_si256(neg, c.one));
                const __m256i sc = _mm256_shuffle_epi8(_mm256_set1_epi32((int)scales[ib]), pick);
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(iq23_grid_iq2_s(wr, ib), ys), sc));
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(m, R))));
    }
    acc = _mm256_mul_ps(_mm256_set1_ps(SIMD_IQ23_FINAL_IQ2_S), acc);
    avx2_store_rows(y, acc, R);
}

#define IQ23_FORMAT(fmt, FMT)                                                                                    \
    AVX2_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                simd_pf *pf) {                                                                   \
        iq23_rows(nb, w, ws, a, y, R, pf, iq23_grid_##fmt, iq23_meta_##fmt, sizeof(anvil_block_##fmt),           \
                  SIMD_IQ23_FINAL_##FMT);                                                                        \
    }                                                                                                            \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                \
    AVX2_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, "avx2", fmt##_vec_dot, fmt##_gemv, fmt##_gemm,  \
                anvil_ref_decode_##fmt);

#define IQ23_FORMAT_XXS(fmt, FMT)                                                                                \
    AVX2_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                simd_pf *pf) {                                                                   \
        iq23_rows_xxs(nb, w, ws, a, y, R, pf, iq23_grid_##fmt, iq23_aux_##fmt, sizeof(anvil_block_##fmt),        \
                      SIMD_IQ23_FINAL_##FMT);                                                                    \
    }                                                                                                            \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                \
    AVX2_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, "avx2", fmt##_vec_dot, fmt##_gemv, fmt##_gemm,  \
                anvil_ref_decode_##fmt);

IQ23_FORMAT_XXS(iq2_xxs, IQ2_XXS)
IQ23_FORMAT_XXS(iq3_xxs, IQ3_XXS)
IQ23_FORMAT(iq2_xs, IQ2_XS)
SIMD_DEFINE_ENTRY_POINTS(iq2_s, 256, sizeof(anvil_block_iq2_s))
AVX2_KERNEL(kernel_iq2_s, ANVIL_TYPE_IQ2_S, ANVIL_TYPE_Q8_K, "avx2", iq2_s_vec_dot, iq2_s_gemv, iq2_s_gemm,
            anvil_ref_decode_iq2_s);
IQ23_FORMAT(iq3_s, IQ3_S)

const anvil_kernel *const anvil_avx2_kernels_iq23[] = {
    &kernel_iq2_xxs, &kernel_iq3_xxs, &kernel_iq2_xs, &kernel_iq2_s, &kernel_iq3_s, NULL,
};
