/* SPDX-License-Identifier: MIT */
/* backend-avx2: IQ1_S and IQ1_M weights against Q8_K activations, and
 * their row decoders. Bit-identical to plugins/ref (cold_grid.c), computed as
 * backend-avx512's avx512_iq1.c (see there for the integers):
 *     sumi  = sum_ib ls_ib * sum_j a_j g_j
 *     sumi1 = sum_ib ls_ib * sign_ib * Q_ib    (Q_ib from the bsums)
 * per 32 weights the grid values + 1 (0..2) times a by vpmaddubsw (pairs
 * <= 508), weighted by ls in vpmaddwd, minus ls_ib * Q_ib (which the + 1
 * added); then, as the reference,
 *     acc += (d * a.d) * ((float)sumi + IQ1S_DELTA * (float)sumi1).
 * The grid rows are fetched by scalar loads (four per 32 weights).
 *
 * IQ1_M (see avx512_iq1.c for the integers): per 32 weights (sub-block
 * ib) one ymm, whose two 128-bit lanes are the groups 2 ib and 2 ib + 1
 * of 16 weights with their own ls (vpmaddwd by a vector holding ls_2ib in
 * the low lane, ls_2ib+1 in the high one). The delta (1/8) is folded into
 * one integer T = 8 sumi1 + sumi2: each weight enters as the unsigned
 *     u = 8 (g + 1) + (delta sign clear ? 2 : 0)    (= 8 g + s + 9)
 * (one vpshufb of the grid bytes plus 8 where the sign is clear, see
 * iq1m_u32), minus
 * 9 sum_k ls_k bsums_k; float(T) / 8 is the reference's
 * (float)sumi1 + IQ1M_DELTA * (float)sumi2 exactly (|T| < 2^24), so
 *     acc += (d * a.d) * (float(T) * 0.125f).
 * The four 11-bit grid indices per 32 weights are built by two BMI2 pdep
 * (the plugin requires BMI2), d from the scales by one pext: IQ1_M 0.90x ->
 * 0.94x of ggml's zen4 variant (1 thread, 4096 x 4096, Emerald Rapids);
 * the sign offsets by one pdep + vpshufb + vpandn folded into the u
 * lookup (two vector instructions fewer per 32 weights): 0.94x -> 1.02x.
 */
#include "avx2_common.h"
#include "avx2_kernels.h"
#include "ref/cold_tables.h"

#define Q8K_BYTES 292
#define Q8K_QS 4
#define Q8K_BSUMS 260
#define IQ1S_BYTES 50
#define IQ1S_QS 2
#define IQ1S_QH 34

AVX2_INLINE long long iq1s_row(unsigned idx) {
    uint64_t g;
    memcpy(&g, anvil_cold_iq1s_grid[idx], sizeof g);
    return (long long)g;
}

/* The grid values of sub-block ib of the block at blk, + 1. */
AVX2_INLINE __m256i iq1s_grid32(const uint8_t *blk, int ib) {
    const uint8_t *qs = blk + IQ1S_QS + 4 * ib;
    const uint32_t h = anvil_rd_u16(blk + IQ1S_QH + 2 * ib);
    const __m256i g = _mm256_set_epi64x(iq1s_row(qs[3] | ((h >> 1) & 0x700)), iq1s_row(qs[2] | ((h << 2) & 0x700)),
                                        iq1s_row(qs[1] | ((h << 5) & 0x700)), iq1s_row(qs[0] | ((h << 8) & 0x700)));
    return _mm256_add_epi8(g, _mm256_set1_epi8(1));
}

AVX2_INLINE void iq1_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const __m256 delta = _mm256_set1_ps(anvil_cold_iq1s_delta);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ1S_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ1S_BYTES, ws, R);
        /* Q_ib = bsums[2 ib] + bsums[2 ib + 1], ib = 0..7 */
        const __m256i q = _mm256_madd_epi16(avx2_load(a + Q8K_BSUMS), _mm256_set1_epi16(1));
        __m256i m[8], m1[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m128i h = avx2_load128(wr + IQ1S_QH);
            const __m256i ls = _mm256_cvtepu16_epi32(
                _mm_add_epi16(_mm_and_si128(_mm_srli_epi16(h, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1)));
            const __m256i ls_w = _mm256_or_si256(ls, _mm256_slli_epi32(ls, 16)); /* ls in both words */
            const __m256i lsq = _mm256_mullo_epi32(ls, q);
            __m256i s = _mm256_sub_epi32(_mm256_setzero_si256(), lsq);
            for (int ib = 0; ib < 8; ++ib) {
                const __m256i pairs = _mm256_maddubs_epi16(iq1s_grid32(wr, ib), avx2_load(a + Q8K_QS + 32 * ib));
                s = _mm256_add_epi32(
                    s, _mm256_madd_epi16(pairs, _mm256_permutevar8x32_epi32(ls_w, _mm256_set1_epi32(ib))));
            }
            m[r] = s;
            /* the delta's sign (bit 15 of qh), never zero */
            m1[r] = _mm256_sign_epi32(lsq, _mm256_or_si256(_mm256_cvtepi16_epi32(h), _mm256_set1_epi32(1)));
        }
        const __m256 sumi = _mm256_cvtepi32_ps(avx2_reduce(m, R));
        const __m256 sumi1 = _mm256_cvtepi32_ps(avx2_reduce(m1, R));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_add_ps(sumi, _mm256_mul_ps(delta, sumi1))));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq1_s, 256, IQ1S_BYTES)

/* y[j] = dl * ((float)g[j] + delta), dl = d * (float)(2s + 1), as the
 * reference decoder. */
static void iq1_s_decode(const void *src, float *dst, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / 256; ++i, blk += IQ1S_BYTES) {
        const float d = avx2_half(blk);
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t h = anvil_rd_u16(blk + IQ1S_QH + 2 * ib);
            const __m256 dl = _mm256_set1_ps(d * (float)(2 * ((h >> 12) & 7) + 1));
            const __m256 delta = _mm256_set1_ps((h & 0x8000) ? -anvil_cold_iq1s_delta : anvil_cold_iq1s_delta);
            for (int l = 0; l < 4; ++l, dst += 8) {
                const unsigned idx = blk[IQ1S_QS + 4 * ib + l] | (((h >> (3 * l)) & 7) << 8);
                const __m128i g = _mm_loadl_epi64((const __m128i *)anvil_cold_iq1s_grid[idx]);
                const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(g));
                _mm256_storeu_ps(dst, _mm256_mul_ps(dl, _mm256_add_ps(v, delta)));
            }
        }
    }
}

AVX2_KERNEL(kernel_iq1_s, ANVIL_TYPE_IQ1_S, ANVIL_TYPE_Q8_K, "avx2", iq1_s_vec_dot, iq1_s_gemv, iq1_s_gemm,
            iq1_s_decode);

/* ---- IQ1_M ------------------------------------------------------------------ */

#define IQ1M_BYTES 56
#define IQ1M_QH 32
#define IQ1M_SCALES 48

/* The block's binary16 d, from the top nibbles of the four scale words. */
AVX2_INLINE uint16_t iq1m_d_bits(const uint8_t *blk) {
    uint64_t sc;
    memcpy(&sc, blk + IQ1M_SCALES, sizeof sc);
#if defined(__BMI2__)
    return (uint16_t)_pext_u64(sc, 0xf000f000f000f000ULL);
#else
    return (uint16_t)(((sc >> 12) & 0x000f) | ((sc >> 24) & 0x00f0) | ((sc >> 36) & 0x0f00) | ((sc >> 48) & 0xf000));
#endif
}

/* Lane r: d of row r (r < R), as f32 (exact). */
AVX2_INLINE __m256 iq1m_halves(const uint8_t *p, size_t stride, const int R) {
    __m128i h = _mm_cvtsi32_si128(iq1m_d_bits(p));
    if (R > 1) h = _mm_insert_epi16(h, iq1m_d_bits(p + stride), 1);
    if (R > 2) {
        h = _mm_insert_epi16(h, iq1m_d_bits(p + 2 * stride), 2);
        h = _mm_insert_epi16(h, iq1m_d_bits(p + 3 * stride), 3);
    }
    if (R > 4) {
        h = _mm_insert_epi16(h, iq1m_d_bits(p + 4 * stride), 4);
        h = _mm_insert_epi16(h, iq1m_d_bits(p + 5 * stride), 5);
        h = _mm_insert_epi16(h, iq1m_d_bits(p + 6 * stride), 6);
        h = _mm_insert_epi16(h, iq1m_d_bits(p + 7 * stride), 7);
    }
    return _mm256_cvtph_ps(h);
}

/* Four 11-bit lattice indices as 16-bit words: byte l of q | bits 4l ..
 * 4l + 2 of x << 8 (BMI2 pdep, else shifts). */
AVX2_INLINE uint64_t iq1m_index4(uint32_t q, uint32_t x) {
#if defined(__BMI2__)
    return _pdep_u64(q, 0x00ff00ff00ff00ffULL) | _pdep_u64(x & 0x7777u, 0x0f000f000f000f00ULL);
#else
    uint64_t r = 0;
    for (int l = 0; l < 4; ++l) r |= (uint64_t)(((q >> (8 * l)) & 0xff) | ((x >> (4 * l)) & 7) << 8) << (16 * l);
    return r;
#endif
}

/* u = 8 (g + 1) + (sign clear ? 2 : 0) of the grid values g of sub-block
 * ib (x: its two qh bytes). The sign bit of group l of 8 weights, bit
 * 4 l + 3 of x, goes to bit 3 of byte l of z (pdep of the nibbles), is
 * spread over the group's bytes and inverted: s = 8 where clear, else 0;
 * then one vpshufb of g + s (bytes 0xff -> top bit set -> 0, 0, 1; or 7,
 * 8, 9 where clear) gives u. */
AVX2_INLINE __m256i iq1m_u32(const uint8_t *blk, int ib, uint32_t x) {
    const uint64_t i = iq1m_index4(anvil_rd_u32(blk + 4 * ib), x);
    const __m256i g = _mm256_set_epi64x(iq1s_row((unsigned)(i >> 48)), iq1s_row((unsigned)(i >> 32) & 0xffff),
                                        iq1s_row((unsigned)(i >> 16) & 0xffff), iq1s_row((unsigned)i & 0xffff));
#if defined(__BMI2__)
    const uint32_t z = _pdep_u32(x, 0x0f0f0f0fu);
#else
    const uint32_t z = (x & 0xf) | ((x & 0xf0) << 4) | ((x & 0xf00) << 8) | ((x & 0xf000) << 12);
#endif
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                                            3, 3, 3, 3, 3, 3, 3);
    const __m256i s =
        _mm256_andnot_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)z), spread), _mm256_set1_epi8(8));
    const __m256i t = _mm256_setr_epi8(8, 16, 0, 0, 0, 0, 0, 2, 10, 18, 0, 0, 0, 0, 0, 0, 8, 16, 0, 0, 0, 0, 0, 2, 10,
                                       18, 0, 0, 0, 0, 0, 0);
    return _mm256_shuffle_epi8(t, _mm256_add_epi8(g, s));
}

/* Dword k of the result: ls_(8 half + k) = 2 * field + 1 in both words. */
AVX2_INLINE __m256i iq1m_ls_pairs(const uint8_t *blk, int half) {
    const __m256i sc = _mm256_set1_epi32((int)anvil_rd_u32(blk + IQ1M_SCALES + 4 * half));
    const __m256i f =
        _mm256_and_si256(_mm256_srlv_epi32(sc, _mm256_setr_epi32(0, 3, 6, 9, 16, 19, 22, 25)), _mm256_set1_epi32(7));
    const __m256i ls = _mm256_add_epi32(_mm256_slli_epi32(f, 1), _mm256_set1_epi32(1));
    return _mm256_or_si256(ls, _mm256_slli_epi32(ls, 16));
}

AVX2_INLINE void iq1_m_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ1M_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ1M_BYTES, ws, R);
        const __m256i bsums = avx2_load(a + Q8K_BSUMS);
        __m256i m[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m256i lp[2] = { iq1m_ls_pairs(wr, 0), iq1m_ls_pairs(wr, 1) };
            /* word k = ls_k, k = 0..15 */
            const __m256i mask16 = _mm256_set1_epi32(0xffff);
            const __m256i ls16 = _mm256_permute4x64_epi64(
                _mm256_packus_epi32(_mm256_and_si256(lp[0], mask16), _mm256_and_si256(lp[1], mask16)), 0xD8);
            /* - 9 sum_k ls_k bsums_k: the offset of u = 8 g + sign + 9 = 8 (g + 1) + (sign ? 0 : 2) */
            const __m256i lsq = _mm256_madd_epi16(ls16, bsums);
            __m256i s = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(_mm256_slli_epi32(lsq, 3), lsq));
#pragma GCC unroll 8 /* constant vpermd indices */
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t x = anvil_rd_u16(wr + IQ1M_QH + 2 * ib);
                const int k = (2 * ib) % 8;
                const __m256i lsp = _mm256_permutevar8x32_epi32(
                    lp[ib / 4], _mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1));
                const __m256i u = iq1m_u32(wr, ib, x);
                s = _mm256_add_epi32(
                    s, _mm256_madd_epi16(_mm256_maddubs_epi16(u, avx2_load(a + Q8K_QS + 32 * ib)), lsp));
            }
            m[r] = s;
        }
        /* T = 8 sumi1 + sumi2: (float)T / 8 == (float)sumi1 + delta (float)sumi2 exactly (delta = 1/8,
         * |T| < 2^24) */
        const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(avx2_reduce(m, R)), _mm256_set1_ps(0.125f));
        const __m256 d = _mm256_mul_ps(iq1m_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, t));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq1_m, 256, IQ1M_BYTES)

/* y[j] = dl * ((float)g[j] + delta), dl per 16 weights, as the reference. */
static void iq1_m_decode(const void *src, float *dst, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / 256; ++i, blk += IQ1M_BYTES) {
        const float d = _cvtsh_ss(iq1m_d_bits(blk));
        for (int ib = 0; ib < 8; ++ib) {
            const int sub = anvil_rd_u16(blk + IQ1M_SCALES + 2 * (ib / 2)) >> (6 * (ib % 2));
            const float dl[2] = { d * (float)(2 * (sub & 7) + 1), d * (float)(2 * ((sub >> 3) & 7) + 1) };
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int nib = (blk[IQ1M_QH + 2 * ib + l / 2] >> (4 * (l % 2))) & 0xf;
                const __m128i g =
                    _mm_loadl_epi64((const __m128i *)anvil_cold_iq1s_grid[blk[4 * ib + l] | ((nib & 7) << 8)]);
                const __m256 dd = _mm256_set1_ps((nib & 8) ? -anvil_cold_iq1m_delta : anvil_cold_iq1m_delta);
                const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(g));
                _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_set1_ps(dl[l / 2]), _mm256_add_ps(v, dd)));
            }
        }
    }
}

AVX2_KERNEL(kernel_iq1_m, ANVIL_TYPE_IQ1_M, ANVIL_TYPE_Q8_K, "avx2", iq1_m_vec_dot, iq1_m_gemv, iq1_m_gemm,
            iq1_m_decode);

const anvil_kernel *const anvil_avx2_kernels_iq1[] = { &kernel_iq1_s, &kernel_iq1_m, NULL };
