/* SPDX-License-Identifier: MIT */
/* backend-avx512: the IQ2/IQ3 lattice formats against Q8_K (IQ2_XXS,
 * IQ3_XXS, IQ2_XS, IQ2_S, IQ3_S), vec_dot and the row passes; rows decode
 * through the scalar referee's decoders (plugins/ref/cold_grid.c).
 *
 * Per zmm "part" h, 64 elements (sub-blocks 2h, 2h + 1) of one row, the
 * vector ports see only (measured on a Xeon, Sapphire Rapids, against
 * ggml's zen4 variant: the earlier scalar codebook inserts and in-vector
 * sign/scale shuffles kept port 5 busy, 0.78 - 0.97x):
 *  - magnitudes: one gather from the referee's codebook (ref/cold_tables.h):
 *    IQ3 16 4-byte points by vpgatherdd (IQ3_S: the ninth index bit merged
 *    under the qh k-mask), IQ2 8 8-byte points by vpgatherqq (IQ2_XS: the
 *    9-bit field of each u16; IQ2_S: the two qh bits by vpsrlvq and
 *    vpternlogq);
 *  - signs: a 64-bit k-mask, the activations negated under it (masked
 *    vpsubb; the magnitudes stay u8): IQ2_S, IQ3_S the raw sign bytes;
 *    IQ2_XXS, IQ3_XXS, IQ2_XS ksigns[x] = x | parity(x) << 7 of the 7-bit
 *    sign indices computed in scalar registers (pdep/pext and a byte-wise
 *    xor fold), no table;
 *  - sub-scales 2 s + 1 as int16: all of a super-block's in one vector
 *    per row (a few shifts, once), each part's picked by one vpermw: one
 *    per 256-bit half (IQ2_XXS, IQ3_XXS, IQ3_S) or per 128-bit lane
 *    (IQ2_XS, IQ2_S);
 *  - vpmaddubsw (pairs <= 15748, exact) then vpmaddwd (VNNI: vpdpwssd) by
 *    the sub-scales, into int32: the reference's sum_ib ls_ib * sumi_ib,
 *    exact, in any grouping.
 * The activations are loaded once per super-block for all R rows; each
 * row's int32 is reduced to one lane (avx512_reduce) and carried through
 * the reference's float steps, sumf += (fp16(d) * a.d) * (float)bsum, then
 * the format's final factor: bit-identical to plugins/ref.
 */
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "ref/cold.h"
#include "simd_iq23.h"

/* ---- what SIMDe 0.7.4 lacks (emulated build): lane by lane ---------------------- */
#if AVX512_EMULATED
#define IQ23_ZEXT(name, TI, TO, n)                    \
    static inline __m512i name(__m128i v) {           \
        TI in[16 / sizeof(TI)];                       \
        TO out[n];                                    \
        memcpy(in, &v, sizeof in);                    \
        for (int i = 0; i < (n); ++i) out[i] = in[i]; \
        return _mm512_loadu_si512(out);               \
    }
IQ23_ZEXT(iq23_cvtepu8_epi32, uint8_t, uint32_t, 16)
IQ23_ZEXT(iq23_cvtepu8_epi64, uint8_t, uint64_t, 8)
IQ23_ZEXT(iq23_cvtepu16_epi64, uint16_t, uint64_t, 8)
AVX512_INLINE __m512i iq23_gather32(const void *tab, __m512i idx) {
    uint32_t ix[16], out[16];
    memcpy(ix, &idx, sizeof ix);
    for (int i = 0; i < 16; ++i) memcpy(&out[i], (const uint8_t *)tab + 4 * (size_t)ix[i], 4);
    return _mm512_loadu_si512(out);
}
AVX512_INLINE __m512i iq23_gather64(const void *tab, __m512i idx) {
    uint64_t ix[8], out[8];
    memcpy(ix, &idx, sizeof ix);
    for (int i = 0; i < 8; ++i) memcpy(&out[i], (const uint8_t *)tab + 8 * (size_t)ix[i], 8);
    return _mm512_loadu_si512(out);
}
#else
#define iq23_cvtepu8_epi32 _mm512_cvtepu8_epi32
#define iq23_cvtepu8_epi64 _mm512_cvtepu8_epi64
#define iq23_cvtepu16_epi64 _mm512_cvtepu16_epi64
AVX512_INLINE __m512i iq23_gather32(const void *tab, __m512i idx) { return _mm512_i32gather_epi32(idx, tab, 4); }
AVX512_INLINE __m512i iq23_gather64(const void *tab, __m512i idx) { return _mm512_i64gather_epi64(idx, tab, 8); }
#endif

AVX512_INLINE uint64_t iq23_rd_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The 7-bit fields of bits 0..27 of v, one per byte (bytes 0..3). */
AVX512_INLINE uint64_t iq23_spread7(uint32_t v) {
#if defined(__BMI2__)
    return _pdep_u64(v, 0x7f7f7f7fULL);
#else
    return (uint64_t)(v & 127) | (uint64_t)(v >> 7 & 127) << 8 | (uint64_t)(v >> 14 & 127) << 16 |
           (uint64_t)(v >> 21 & 127) << 24;
#endif
}

/* ksigns of eight 7-bit sign indices, one per byte of x: x | parity(x) << 7
 * per byte, as a k-mask. */
AVX512_INLINE __mmask64 iq23_ksigns8(uint64_t x) {
    uint64_t t = x ^ (x >> 4); /* per byte: bits of the byte above land in 4..7, unused below */
    t ^= t >> 2;
    t ^= t >> 1;
    return (__mmask64)(x | (t & 0x0101010101010101ULL) << 7);
}

/* Sign mask of two XXS sub-blocks from their u32 meta words (four 7-bit
 * sign indices each): bytes 0..3 from a0, 4..7 from a1. */
AVX512_INLINE __mmask64 iq23_xxs_signs(uint32_t a0, uint32_t a1) {
    return iq23_ksigns8(iq23_spread7(a0) | iq23_spread7(a1) << 32);
}

typedef struct iq23_part_in {
    __m512i g;
    __mmask64 neg;
} iq23_part_in;

AVX512_INLINE iq23_part_in iq23g_iq3_xxs(const uint8_t *blk, int h) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq3_xxs, qs);
    const uint64_t aux = iq23_rd_u64(qs + ANVIL_QK_K / 4 + 8 * h);
    const uint32_t a0 = (uint32_t)aux, a1 = (uint32_t)(aux >> 32);
    iq23_part_in p;
    p.g = iq23_gather32(anvil_cold_iq3xxs_grid, iq23_cvtepu8_epi32(avx512_load128(qs + 16 * h)));
    p.neg = iq23_xxs_signs(a0, a1);
    return p;
}

AVX512_INLINE iq23_part_in iq23g_iq2_xxs(const uint8_t *blk, int h) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq2_xxs, qs) + 16 * h;
    const uint64_t lo = iq23_rd_u64(qs), hi = iq23_rd_u64(qs + 8);
    const uint32_t a0 = (uint32_t)(lo >> 32), a1 = (uint32_t)(hi >> 32);
    iq23_part_in p;
    p.g = iq23_gather64(anvil_cold_iq2xxs_grid,
                        iq23_cvtepu8_epi64(_mm_cvtsi64_si128((long long)((lo & 0xffffffffULL) | hi << 32))));
    p.neg = iq23_xxs_signs(a0, a1);
    return p;
}

AVX512_INLINE iq23_part_in iq23g_iq3_s(const uint8_t *blk, int h) {
    const __m512i lo = iq23_cvtepu8_epi32(avx512_load128(blk + offsetof(anvil_block_iq3_s, qs) + 16 * h));
    const __mmask16 qh = (__mmask16)anvil_rd_u16(blk + offsetof(anvil_block_iq3_s, qh) + 2 * h);
    iq23_part_in p;
    p.g = iq23_gather32(anvil_cold_iq3s_grid, _mm512_mask_or_epi32(lo, qh, lo, _mm512_set1_epi32(256)));
    p.neg = (__mmask64)iq23_rd_u64(blk + offsetof(anvil_block_iq3_s, signs) + 8 * h);
    return p;
}

/* The 7-bit sign index (bits 9..15) of each of four u16 at v, packed. */
AVX512_INLINE uint32_t iq23_sign_fields(uint64_t v) {
#if defined(__BMI2__)
    return (uint32_t)_pext_u64(v, 0xfe00fe00fe00fe00ULL);
#else
    return (uint32_t)((v >> 9 & 127) | (v >> 25 & 127) << 7 | (v >> 41 & 127) << 14 | (v >> 57 & 127) << 21);
#endif
}

AVX512_INLINE iq23_part_in iq23g_iq2_xs(const uint8_t *blk, int h) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq2_xs, qs) + 16 * h;
    const uint64_t lo = iq23_rd_u64(qs), hi = iq23_rd_u64(qs + 8);
    iq23_part_in p;
    p.g = iq23_gather64(anvil_cold_iq2xs_grid,
                        _mm512_and_si512(iq23_cvtepu16_epi64(avx512_load128(qs)), _mm512_set1_epi64(511)));
    p.neg = iq23_ksigns8(iq23_spread7(iq23_sign_fields(lo)) | iq23_spread7(iq23_sign_fields(hi)) << 32);
    return p;
}

/* IQ2_S: index k of part h = qs[8h + k] | ((qh16 >> 2k) & 3) << 8, qh16 the
 * qh bytes of sub-blocks 2h, 2h + 1. */
AVX512_INLINE iq23_part_in iq23g_iq2_s(const uint8_t *blk, int h) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq2_s, qs);
    const uint32_t qh = anvil_rd_u16(blk + offsetof(anvil_block_iq2_s, qh) + 2 * h);
    const __m512i lo = iq23_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(qs + 8 * h)));
    const __m512i hb =
        _mm512_srlv_epi64(_mm512_set1_epi64((long long)(qh << 8)), _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0));
    iq23_part_in p;
    /* lo | (hb & 0x300) */
    p.g = iq23_gather64(anvil_cold_iq2s_grid, _mm512_ternarylogic_epi64(lo, hb, _mm512_set1_epi64(0x300), 0xF8));
    p.neg = (__mmask64)iq23_rd_u64(qs + ANVIL_QK_K / 8 + 8 * h);
    return p;
}

/* ---- sub-scales: once per row and super-block, int16 2 s + 1 in words -----------
 * Each part picks its own by one vpermw (sel below): the sub-scale of
 * sub-block ib at word IQ23_SC_DW * ib (XXS: in the dword / qword that
 * held it), or, per 16-element group g (IQ2_XS, IQ2_S), at word g. */
#define IQ23_SC_HALF2 2 /* sub-block ib: word 2 ib, one per 256-bit half */
#define IQ23_SC_HALF4 4 /* sub-block ib: word 4 ib, one per 256-bit half */
#define IQ23_SC_LANES 0 /* group g: word g, one per 128-bit lane */

AVX512_INLINE __m512i iq23_odd16(__m512i s) { /* 2 s + 1 per word (s < 16) */
    return _mm512_or_si512(_mm512_add_epi16(s, s), _mm512_set1_epi16(1));
}

AVX512_INLINE __m512i iq23_scales_iq3_xxs(const uint8_t *blk) {
    const __m256i m = avx512_load256(blk + offsetof(anvil_block_iq3_xxs, qs) + ANVIL_QK_K / 4);
    return iq23_odd16(_mm512_castsi256_si512(_mm256_srli_epi32(m, 28)));
}

AVX512_INLINE __m512i iq23_scales_iq2_xxs(const uint8_t *blk) {
    return iq23_odd16(_mm512_srli_epi64(avx512_load(blk + offsetof(anvil_block_iq2_xxs, qs)), 60));
}

AVX512_INLINE __m512i iq23_scales_iq3_s(const uint8_t *blk) {
    const __m256i v = _mm256_set1_epi32((int)anvil_rd_u32(blk + offsetof(anvil_block_iq3_s, scales)));
    const __m256i n =
        _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)), _mm256_set1_epi32(15));
    return iq23_odd16(_mm512_castsi256_si512(n));
}

/* Byte ib of p: the nibbles of groups 2 ib (low), 2 ib + 1 (high). */
AVX512_INLINE __m512i iq23_scales_nibbles(const uint8_t *p) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)p);
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i g = _mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16(b, 4), m4));
    return iq23_odd16(_mm512_castsi256_si512(_mm256_cvtepu8_epi16(g)));
}

AVX512_INLINE __m512i iq23_scales_iq2_xs(const uint8_t *blk) {
    return iq23_scales_nibbles(blk + offsetof(anvil_block_iq2_xs, scales));
}

AVX512_INLINE __m512i iq23_scales_iq2_s(const uint8_t *blk) {
    return iq23_scales_nibbles(blk + offsetof(anvil_block_iq2_s, scales));
}

/* vpermw index of part h: 128-bit lane j takes word w(h, j) 8 times. */
AVX512_INLINE __m512i iq23_scale_sel(int kind, int h) {
    short ix[4];
    for (int j = 0; j < 4; ++j) ix[j] = (short)(kind == IQ23_SC_LANES ? 4 * h + j : kind * (2 * h + j / 2));
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(ix[0])), _mm_set1_epi16(ix[1]), 1)),
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(ix[2])), _mm_set1_epi16(ix[3]), 1), 1);
}

AVX512_INLINE __m512i iq23g_madd_acc(__m512i acc, __m512i pairs, __m512i ls) {
#if AVX512_VNNI
    return _mm512_dpwssd_epi32(acc, pairs, ls);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, ls));
#endif
}

typedef iq23_part_in (*iq23g_part_fn)(const uint8_t *blk, int h);
typedef __m512i (*iq23g_scales_fn)(const uint8_t *blk);

AVX512_INLINE void iq23g_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf, iq23g_part_fn part, iq23g_scales_fn scales, const int kind,
                              const size_t bb, const float final) {
    const __m512i zero = _mm512_setzero_si512();
    __m512i sel[4];
    for (int h = 0; h < 4; ++h) sel[h] = iq23_scale_sel(kind, h);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m512i qa[4];
        for (int h = 0; h < 4; ++h) qa[h] = avx512_load(a + SIMD_IQ23_Q8K_QS + 64 * h);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m512i sc = scales(wr);
            __m512i s = _mm512_setzero_si512();
            for (int h = 0; h < 4; ++h) {
                const iq23_part_in p = part(wr, h);
                const __m512i ys = _mm512_mask_sub_epi8(qa[h], p.neg, zero, qa[h]);
                s = iq23g_madd_acc(s, _mm512_maddubs_epi16(p.g, ys), _mm512_permutexvar_epi16(sel[h], sc));
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(m, R))));
    }
    if (final != 1.0f) acc = _mm256_mul_ps(_mm256_set1_ps(final), acc);
    avx512_store_rows(y, acc, R);
}

#define IQ23G_FORMAT(fmt, FMT, kind)                                                                               \
    AVX512_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                  simd_pf *pf) {                                                                   \
        iq23g_rows(nb, w, ws, a, y, R, pf, iq23g_##fmt, iq23_scales_##fmt, kind, sizeof(anvil_block_##fmt),        \
                   SIMD_IQ23_FINAL_##FMT);                                                                         \
    }                                                                                                              \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                  \
    AVX512_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, fmt##_vec_dot, fmt##_gemv, fmt##_gemm,          \
                  anvil_ref_decode_##fmt);

IQ23G_FORMAT(iq2_xxs, IQ2_XXS, IQ23_SC_HALF4)
IQ23G_FORMAT(iq3_xxs, IQ3_XXS, IQ23_SC_HALF2)
IQ23G_FORMAT(iq2_xs, IQ2_XS, IQ23_SC_LANES)
IQ23G_FORMAT(iq2_s, IQ2_S, IQ23_SC_LANES)
IQ23G_FORMAT(iq3_s, IQ3_S, IQ23_SC_HALF2)

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_iq23)[] = {
    &kernel_iq2_xxs, &kernel_iq3_xxs, &kernel_iq2_xs, &kernel_iq2_s, &kernel_iq3_s, NULL,
};
