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
 * run the same code (no vpdpbusd: the sub-scales ride on vpmaddwd), but
 * IQ2_S, whose own row pass (below) adds them with vpdpwssd under VNNI.
 */
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "ref/cold.h"
#include "simd_iq23.h"

/* Zero extensions SIMDe 0.7.4 lacks (emulated build): lane by lane, from
 * their Intel definitions. */
#if AVX512_EMULATED
#define IQ23_MASK32 simde__mmask32
static inline __m512i iq23_cvtepu32_epi64(__m256i v) {
    uint32_t in[8];
    uint64_t out[8];
    memcpy(in, &v, sizeof in);
    for (int i = 0; i < 8; ++i) out[i] = in[i];
    return _mm512_loadu_si512(out);
}
static inline __m512i iq23_cvtepu8_epi64(__m128i v) {
    uint8_t in[16];
    uint64_t out[8];
    memcpy(in, &v, sizeof in);
    for (int i = 0; i < 8; ++i) out[i] = in[i];
    return _mm512_loadu_si512(out);
}
#else
#define IQ23_MASK32 __mmask32
#define iq23_cvtepu32_epi64 _mm512_cvtepu32_epi64
#define iq23_cvtepu8_epi64 _mm512_cvtepu8_epi64
#endif

typedef void (*iq23_grid_fn)(const uint8_t *blk, const uint16_t *idx, int ib, uint64_t g[4]);
typedef __m512i (*iq23_meta_fn)(const uint8_t *blk);
typedef void (*iq23_index_fn)(const uint8_t *blk, uint16_t idx[64]);

/* ---- lattice indices ------------------------------------------------------------
 * IQ3_S takes a bit of qh into each index: computed for a whole
 * super-block in vectors, stored, and read back by the scalar codebook
 * loads. IQ2_S builds four at a time by BMI2 pdep (iq23_grid_iq2_s); the
 * other formats read theirs from the block. */

AVX512_INLINE void iq23_index_none(const uint8_t *blk, uint16_t idx[64]) {
    (void)blk;
    (void)idx;
}

/* IQ3_S: index i = qs[i] | bit i of the 64-bit qh << 8. */
AVX512_INLINE void iq23_index_iq3_s(const uint8_t *blk, uint16_t idx[64]) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq3_s, qs);
    uint64_t qh;
    memcpy(&qh, blk + offsetof(anvil_block_iq3_s, qh), sizeof qh);
    const __m512i bit8 = _mm512_set1_epi16(256);
    for (int k = 0; k < 2; ++k) {
        const __m512i q = _mm512_cvtepu8_epi16(avx512_load256(qs + 32 * k));
        _mm512_storeu_si512(idx + 32 * k,
                            _mm512_mask_mov_epi16(q, (IQ23_MASK32)(qh >> (32 * k)), _mm512_or_si512(q, bit8)));
    }
}

/* IQ2_S: index 4 ib + l = qs[4 ib + l] | ((qh[ib] >> 2 l) & 3) << 8, read
 * per sub-block by iq23_grid_iq2_s (BMI2 pdep: four 16-bit indices in one
 * word), nothing precomputed. */
#define iq23_index_iq2_s iq23_index_none

AVX512_INLINE void iq23_grid_iq2_xxs(const uint8_t *blk, const uint16_t *idx, int ib, uint64_t g[4]) {
    (void)idx;
    simd_iq23_grid_iq2_xxs(blk, ib, g);
}
AVX512_INLINE void iq23_grid_iq3_xxs(const uint8_t *blk, const uint16_t *idx, int ib, uint64_t g[4]) {
    (void)idx;
    simd_iq23_grid_iq3_xxs(blk, ib, g);
}
AVX512_INLINE void iq23_grid_iq2_xs(const uint8_t *blk, const uint16_t *idx, int ib, uint64_t g[4]) {
    (void)idx;
    simd_iq23_grid_iq2_xs(blk, ib, g);
}
AVX512_INLINE void iq23_grid_iq2_s(const uint8_t *blk, const uint16_t *idx, int ib, uint64_t g[4]) {
    (void)idx;
#if defined(__BMI2__)
    const uint64_t i4 =
        _pdep_u64(anvil_rd_u32(blk + offsetof(anvil_block_iq2_s, qs) + 4 * ib), 0x00ff00ff00ff00ffULL) |
        _pdep_u64(blk[offsetof(anvil_block_iq2_s, qh) + ib], 0x0300030003000300ULL);
    for (int l = 0; l < 4; ++l) g[l] = simd_iq23_word8(anvil_cold_iq2s_grid[(i4 >> (16 * l)) & 0xffff]);
#else
    simd_iq23_grid_iq2_s(blk, ib, g);
#endif
}
AVX512_INLINE void iq23_grid_iq3_s(const uint8_t *blk, const uint16_t *idx, int ib, uint64_t g[4]) {
    (void)blk;
    simd_iq23_grid_iq3_s_idx(idx, ib, g);
}
#define iq23_index_iq2_xxs iq23_index_none
#define iq23_index_iq3_xxs iq23_index_none
#define iq23_index_iq2_xs iq23_index_none

/* ---- signs and sub-scales of a super-block, in vectors ------------------------
 * meta(blk): qword ib = the 4 sign bytes of sub-block ib (bytes 0..3, bit j
 * of byte l: element 8 l + j negated), then the int16 sub-scales of its
 * elements 0..15 (bytes 4, 5) and 16..31 (bytes 6, 7). */

AVX512_INLINE __m512i iq23_set1(uint64_t v) { return _mm512_set1_epi64((long long)v); }

/* x | parity(x) << 7 per byte (x < 128): ksigns[x], computed. */
AVX512_INLINE __m512i iq23_ksigns(__m512i x) {
    const __m512i ptab =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, (char)0x80, (char)0x80, 0, (char)0x80, 0, 0, (char)0x80, (char)0x80,
                                             0, 0, (char)0x80, 0, (char)0x80, (char)0x80, 0));
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i p = _mm512_xor_si512(_mm512_shuffle_epi8(ptab, _mm512_and_si512(x, m4)),
                                       _mm512_shuffle_epi8(ptab, _mm512_and_si512(_mm512_srli_epi16(x, 4), m4)));
    return _mm512_or_si512(x, p);
}

/* Sub-scales lo, hi (qword lanes, < 16) -> 2 lo + 1, 2 hi + 1 at words 2, 3. */
AVX512_INLINE __m512i iq23_scale_words(__m512i lo, __m512i hi) {
    const __m512i one = iq23_set1(1);
    const __m512i l = _mm512_or_si512(_mm512_slli_epi64(lo, 1), one),
                  h = _mm512_or_si512(_mm512_slli_epi64(hi, 1), one);
    return _mm512_or_si512(_mm512_slli_epi64(l, 32), _mm512_slli_epi64(h, 48));
}

/* From the IQ2_XXS / IQ3_XXS u32 (four 7-bit sign indices, 4-bit scale) in
 * the low half of qword ib. */
AVX512_INLINE __m512i iq23_meta_xxs(__m512i m) {
    const __m512i x =
        _mm512_or_si512(_mm512_or_si512(_mm512_and_si512(m, iq23_set1(0x7F)),
                                        _mm512_and_si512(_mm512_slli_epi64(m, 1), iq23_set1(0x7F00))),
                        _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi64(m, 2), iq23_set1(0x7F0000)),
                                        _mm512_and_si512(_mm512_slli_epi64(m, 3), iq23_set1(0x7F000000))));
    const __m512i s = _mm512_srli_epi64(m, 28);
    return _mm512_or_si512(iq23_ksigns(x), iq23_scale_words(s, s));
}

/* Two 4-bit sub-scales per byte (IQ2_XS, IQ2_S): 8 bytes at p. */
AVX512_INLINE __m512i iq23_scales_nibble_pairs(const uint8_t *p) {
    const __m512i sc = iq23_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)p));
    return iq23_scale_words(_mm512_and_si512(sc, iq23_set1(15)), _mm512_srli_epi64(sc, 4));
}

/* Raw sign bytes (IQ2_S, IQ3_S): 32 bytes at p. */
AVX512_INLINE __m512i iq23_raw_signs(const uint8_t *p) { return iq23_cvtepu32_epi64(avx512_load256(p)); }

AVX512_INLINE __m512i iq23_meta_iq2_xxs(const uint8_t *blk) {
    return iq23_meta_xxs(_mm512_srli_epi64(avx512_load(blk + offsetof(anvil_block_iq2_xxs, qs)), 32));
}

AVX512_INLINE __m512i iq23_meta_iq3_xxs(const uint8_t *blk) {
    return iq23_meta_xxs(
        iq23_cvtepu32_epi64(avx512_load256(blk + offsetof(anvil_block_iq3_xxs, qs) + ANVIL_QK_K / 4)));
}

AVX512_INLINE __m512i iq23_meta_iq2_xs(const uint8_t *blk) {
    /* sign index = u16 >> 9: the low byte of each word, gathered to bytes 0..3 of the qword */
    const __m512i idx = _mm512_srli_epi16(avx512_load(blk + offsetof(anvil_block_iq2_xs, qs)), 9);
    const __m512i packed = _mm512_shuffle_epi8(
        idx, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, -1, -1, -1, -1, 8, 10, 12, 14, -1, -1, -1, -1)));
    return _mm512_or_si512(iq23_ksigns(packed), iq23_scales_nibble_pairs(blk + offsetof(anvil_block_iq2_xs, scales)));
}

AVX512_INLINE __m512i iq23_meta_iq3_s(const uint8_t *blk) {
    const __m512i sc =
        _mm512_and_si512(_mm512_srlv_epi64(iq23_set1(anvil_rd_u32(blk + offsetof(anvil_block_iq3_s, scales))),
                                           _mm512_set_epi64(28, 24, 20, 16, 12, 8, 4, 0)),
                         iq23_set1(15));
    return _mm512_or_si512(iq23_raw_signs(blk + offsetof(anvil_block_iq3_s, signs)), iq23_scale_words(sc, sc));
}

typedef struct iq23_consts {
    __m512i spread; /* 128-bit lane k: sign byte k % 2 * 2 + (0, 1), each 8 times */
    __m512i bit;    /* byte j: 1 << (j % 8) */
    __m512i scale;  /* 128-bit lane k: word 2 + k % 2, 8 times */
} iq23_consts;

AVX512_INLINE iq23_consts iq23_make_consts(void) {
    iq23_consts c;
    c.spread = _mm512_set_epi64(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0, 0x0303030303030303,
                                0x0202020202020202, 0x0101010101010101, 0);
    c.bit = iq23_set1(0x8040201008040201ULL);
    c.scale = _mm512_set_epi64(0x0706070607060706, 0x0706070607060706, 0x0504050405040504, 0x0504050405040504,
                               0x0706070607060706, 0x0706070607060706, 0x0504050405040504, 0x0504050405040504);
    return c;
}

/* acc + the weighted dot of sub-blocks 2h (low 256 bits) and 2h + 1 (high)
 * with activations qa; meta as above. */
AVX512_INLINE __m512i iq23_part(__m512i acc, const uint64_t *g0, const uint64_t *g1, __m512i meta, int h, __m512i qa,
                                const iq23_consts *c) {
    const __m512i g = _mm512_set_epi64((long long)g1[3], (long long)g1[2], (long long)g1[1], (long long)g1[0],
                                       (long long)g0[3], (long long)g0[2], (long long)g0[1], (long long)g0[0]);
    const __m512i mh = _mm512_permutexvar_epi64(
        _mm512_set_epi64(2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h, 2 * h, 2 * h, 2 * h), meta);
    const __mmask64 neg = _mm512_test_epi8_mask(_mm512_shuffle_epi8(mh, c->spread), c->bit);
    const __m512i ys = _mm512_mask_sub_epi8(qa, neg, _mm512_setzero_si512(), qa);
    const __m512i sc = _mm512_shuffle_epi8(mh, c->scale);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(g, ys), sc));
}

AVX512_INLINE void iq23_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf, iq23_grid_fn grid, iq23_meta_fn metaf, iq23_index_fn indexf,
                             const size_t bb, const float final) {
    const iq23_consts c = iq23_make_consts();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m512i qa[4];
        for (int h = 0; h < 4; ++h) qa[h] = avx512_load(a + SIMD_IQ23_Q8K_QS + 64 * h);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m512i meta = metaf(wr);
            uint16_t idx[64] __attribute__((aligned(64)));
            indexf(wr, idx);
            __m512i s = _mm512_setzero_si512();
            for (int h = 0; h < 4; ++h) {
                uint64_t g0[4], g1[4];
                grid(wr, idx, 2 * h, g0);
                grid(wr, idx, 2 * h + 1, g1);
                s = iq23_part(s, g0, g1, meta, h, qa[h], &c);
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
        iq23_rows(nb, w, ws, a, y, R, pf, iq23_grid_##fmt, iq23_meta_##fmt, iq23_index_##fmt,                      \
                  sizeof(anvil_block_##fmt), SIMD_IQ23_FINAL_##FMT);                                               \
    }                                                                                                              \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                  \
    AVX512_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, fmt##_vec_dot, fmt##_gemv, fmt##_gemm,          \
                  anvil_ref_decode_##fmt);

IQ23_FORMAT(iq2_xs, IQ2_XS)

/* ---- IQ2_XXS, IQ3_XXS, IQ3_S: gathers, k-mask signs, scalar meta ----------------
 * Per zmm part h (sub-blocks 2h, 2h + 1) the vector ports see only: one
 * gather of the magnitudes (IQ3: 16 4-byte points by vpgatherdd, IQ3_S's
 * ninth index bit merged under the qh k-mask; IQ2_XXS: 8 8-byte points by
 * vpgatherqq), the sign k-mask (IQ3_S: raw sign bytes; the XXS formats:
 * ksigns of the four 7-bit indices computed in scalar registers, x |
 * parity(x) << 7 per byte by pdep and a byte-wise fold), one masked
 * vpsubb, and the two sub-scales broadcast per 256-bit half. */

#if AVX512_EMULATED
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

/* Sign mask of two XXS sub-blocks from their u32 meta words: byte l of
 * a0 (a1: byte 4 + l) = ksigns[7-bit field l] = x | parity(x) << 7. */
AVX512_INLINE __mmask64 iq23_xxs_signs(uint32_t a0, uint32_t a1) {
    const uint64_t x = iq23_spread7(a0) | iq23_spread7(a1) << 32;
    uint64_t t = x ^ (x >> 4); /* per byte: bits of the byte above land in 4..7, unused below */
    t ^= t >> 2;
    t ^= t >> 1;
    return (__mmask64)(x | (t & 0x0101010101010101ULL) << 7);
}

/* int16 scale s0 in the low 256 bits, s1 in the high. */
AVX512_INLINE __m512i iq23_scale_pair(uint32_t s0, uint32_t s1) {
    return _mm512_inserti64x4(_mm512_set1_epi16((short)s0), _mm256_set1_epi16((short)s1), 1);
}

typedef struct iq23_part_in {
    __m512i g;
    __mmask64 neg;
    __m512i sc;
} iq23_part_in;

AVX512_INLINE iq23_part_in iq23g_iq3_xxs(const uint8_t *blk, int h) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq3_xxs, qs);
    const uint64_t aux = iq23_rd_u64(qs + ANVIL_QK_K / 4 + 8 * h);
    const uint32_t a0 = (uint32_t)aux, a1 = (uint32_t)(aux >> 32);
    iq23_part_in p;
    p.g = iq23_gather32(anvil_cold_iq3xxs_grid, _mm512_cvtepu8_epi32(avx512_load128(qs + 16 * h)));
    p.neg = iq23_xxs_signs(a0, a1);
    p.sc = iq23_scale_pair(2 * (a0 >> 28) + 1, 2 * (a1 >> 28) + 1);
    return p;
}

AVX512_INLINE iq23_part_in iq23g_iq2_xxs(const uint8_t *blk, int h) {
    const uint8_t *qs = blk + offsetof(anvil_block_iq2_xxs, qs) + 16 * h;
    const uint64_t lo = iq23_rd_u64(qs), hi = iq23_rd_u64(qs + 8);
    const uint32_t a0 = (uint32_t)(lo >> 32), a1 = (uint32_t)(hi >> 32);
    iq23_part_in p;
    p.g = iq23_gather64(anvil_cold_iq2xxs_grid,
                        _mm512_cvtepu8_epi64(_mm_cvtsi64_si128((long long)((lo & 0xffffffffULL) | hi << 32))));
    p.neg = iq23_xxs_signs(a0, a1);
    p.sc = iq23_scale_pair(2 * (a0 >> 28) + 1, 2 * (a1 >> 28) + 1);
    return p;
}

AVX512_INLINE iq23_part_in iq23g_iq3_s(const uint8_t *blk, int h) {
    const __m512i lo = _mm512_cvtepu8_epi32(avx512_load128(blk + offsetof(anvil_block_iq3_s, qs) + 16 * h));
    const __mmask16 qh = (__mmask16)anvil_rd_u16(blk + offsetof(anvil_block_iq3_s, qh) + 2 * h);
    const uint32_t sc = blk[offsetof(anvil_block_iq3_s, scales) + h];
    iq23_part_in p;
    p.g = iq23_gather32(anvil_cold_iq3s_grid, _mm512_mask_or_epi32(lo, qh, lo, _mm512_set1_epi32(256)));
    p.neg = (__mmask64)iq23_rd_u64(blk + offsetof(anvil_block_iq3_s, signs) + 8 * h);
    p.sc = iq23_scale_pair(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1);
    return p;
}

AVX512_INLINE __m512i iq23g_madd_acc(__m512i acc, __m512i pairs, __m512i ls) {
#if AVX512_VNNI
    return _mm512_dpwssd_epi32(acc, pairs, ls);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, ls));
#endif
}

typedef iq23_part_in (*iq23g_part_fn)(const uint8_t *blk, int h);

AVX512_INLINE void iq23g_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf, iq23g_part_fn part, const size_t bb, const float final) {
    const __m512i zero = _mm512_setzero_si512();
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
                const iq23_part_in p = part(wr, h);
                const __m512i ys = _mm512_mask_sub_epi8(qa[h], p.neg, zero, qa[h]);
                s = iq23g_madd_acc(s, _mm512_maddubs_epi16(p.g, ys), p.sc);
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(m, R))));
    }
    if (final != 1.0f) acc = _mm256_mul_ps(_mm256_set1_ps(final), acc);
    avx512_store_rows(y, acc, R);
}

#define IQ23G_FORMAT(fmt, FMT)                                                                                     \
    AVX512_INLINE void fmt##_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R, \
                                  simd_pf *pf) {                                                                   \
        iq23g_rows(nb, w, ws, a, y, R, pf, iq23g_##fmt, sizeof(anvil_block_##fmt), SIMD_IQ23_FINAL_##FMT);         \
    }                                                                                                              \
    SIMD_DEFINE_ENTRY_POINTS(fmt, 256, sizeof(anvil_block_##fmt))                                                  \
    AVX512_KERNEL(kernel_##fmt, ANVIL_TYPE_##FMT, ANVIL_TYPE_Q8_K, fmt##_vec_dot, fmt##_gemv, fmt##_gemm,          \
                  anvil_ref_decode_##fmt);

IQ23G_FORMAT(iq2_xxs, IQ2_XXS)
IQ23G_FORMAT(iq3_xxs, IQ3_XXS)
IQ23G_FORMAT(iq3_s, IQ3_S)

/* ---- IQ2_S: its own row pass ------------------------------------------------------
 * The sign bits of elements 64h .. 64h + 63 are the 8 raw sign bytes at
 * qs + 32 + 8h, bit j of byte l for element 8l + j: a k-mask as loaded. The
 * 16 sub-scales (2 per sub-block: elements 0..15, 16..31) become, once per
 * row, words 0..7 (low nibbles) and 8..15 (high nibbles) of one vector, and
 * vpermw puts each 128-bit lane's own at its words (lane j of part h: group
 * 4h + j of 16 elements). With VNNI, vpdpwssd adds them in. */

AVX512_INLINE __m512i iq2s_madd_acc(__m512i acc, __m512i pairs, __m512i ls) {
#if AVX512_VNNI
    return _mm512_dpwssd_epi32(acc, pairs, ls);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, ls));
#endif
}

AVX512_INLINE void iq2_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    const size_t bb = sizeof(anvil_block_iq2_s);
    /* lane j of part h: group g = 4h + j, word (g % 2) * 8 + g / 2 */
    __m512i sel[4];
    for (int h = 0; h < 4; ++h) {
        short ix[4];
        for (int j = 0; j < 4; ++j) ix[j] = (short)(((4 * h + j) % 2) * 8 + (4 * h + j) / 2);
        sel[h] = _mm512_inserti64x4(
            _mm512_castsi256_si512(
                _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(ix[0])), _mm_set1_epi16(ix[1]), 1)),
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(ix[2])), _mm_set1_epi16(ix[3]), 1), 1);
    }
    const __m512i zero = _mm512_setzero_si512();
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += bb, a += SIMD_IQ23_Q8K_BYTES) {
        simd_pf_block(pf, b, bb, ws, R);
        __m512i qa[4];
        for (int h = 0; h < 4; ++h) qa[h] = avx512_load(a + SIMD_IQ23_Q8K_QS + 64 * h);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m128i sc =
                _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(wr + offsetof(anvil_block_iq2_s, scales))));
            const __m128i m4 = _mm_set1_epi16(15);
            const __m256i nib =
                _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(sc, m4)), _mm_srli_epi16(sc, 4), 1);
            const __m512i ls =
                _mm512_castsi256_si512(_mm256_add_epi16(_mm256_add_epi16(nib, nib), _mm256_set1_epi16(1)));
            const uint8_t *signs = wr + offsetof(anvil_block_iq2_s, qs) + ANVIL_QK_K / 8;
            __m512i s = _mm512_setzero_si512();
            for (int h = 0; h < 4; ++h) {
                uint64_t g0[4], g1[4];
                iq23_grid_iq2_s(wr, NULL, 2 * h, g0);
                iq23_grid_iq2_s(wr, NULL, 2 * h + 1, g1);
                const __m512i g = _mm512_set_epi64((long long)g1[3], (long long)g1[2], (long long)g1[1],
                                                   (long long)g1[0], (long long)g0[3], (long long)g0[2],
                                                   (long long)g0[1], (long long)g0[0]);
                uint64_t sb;
                memcpy(&sb, signs + 8 * h, sizeof sb);
                const __mmask64 neg = (__mmask64)sb;
                const __m512i ys = _mm512_mask_sub_epi8(qa[h], neg, zero, qa[h]);
                s = iq2s_madd_acc(s, _mm512_maddubs_epi16(g, ys), _mm512_permutexvar_epi16(sel[h], ls));
            }
            m[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a + SIMD_IQ23_Q8K_D)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(m, R))));
    }
    acc = _mm256_mul_ps(_mm256_set1_ps(SIMD_IQ23_FINAL_IQ2_S), acc);
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq2_s, 256, sizeof(anvil_block_iq2_s))
AVX512_KERNEL(kernel_iq2_s, ANVIL_TYPE_IQ2_S, ANVIL_TYPE_Q8_K, iq2_s_vec_dot, iq2_s_gemv, iq2_s_gemm,
              anvil_ref_decode_iq2_s);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_iq23)[] = {
    &kernel_iq2_xxs, &kernel_iq3_xxs, &kernel_iq2_xs, &kernel_iq2_s, &kernel_iq3_s, NULL,
};
