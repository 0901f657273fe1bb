/* SPDX-License-Identifier: MIT */
/* backend-avx512: IQ1_S and IQ1_M weights against Q8_K activations, and
 * their row decoders. Bit-identical to plugins/ref (cold_grid.c).
 *
 * IQ1_S (256 weights, 50 bytes: d, qs[32], qh[8]): per 8 weights an 11-bit
 * index into the {-1, 0, +1} lattice (anvil_cold_iq1s_grid), per 32 a
 * scale ls = 2s + 1 and the delta's sign. The reference's integers are
 *     sumi  = sum_ib ls_ib * sum_j a_j g_j
 *     sumi1 = sum_ib ls_ib * sign_ib * Q_ib    (Q_ib from the bsums)
 * Both deltas are 1/8 (anvil_cold_iq1s_delta, _iq1m_delta), and
 * float(T) / 8 == (float)sumi + (1/8) (float)sumi1 exactly for the integer
 * T = 8 sumi + sumi1 (|T| < 2^24: both sides are T / 8 rounded once), so
 * one integer per row is computed:
 *     T = sum_ib ls_ib * (sum_j a_j 8 (g_j + 1) + (sign_ib - 8) Q_ib)
 * with 8 (g + 1) (unsigned 0, 8, 16: one vpshufb of the grid bytes) times
 * a by vpmaddubsw (pairs <= 4064), weighted by ls in vpmaddwd (vpdpwssd
 * with VNNI); the per-row term (sign_ib - 8) ls_ib Q_ib starts the sum.
 * Exact in int32. Then, as the reference,
 *     acc += (d * a.d) * (float(T) * 0.125f).
 * The grid rows are fetched by scalar loads (eight per 64 weights), their
 * 11-bit indices built four at a time by BMI2 pdep (the plugin requires
 * BMI2): a gather, or indices built in vectors and read back from memory,
 * measured slower on Zen 5; the scalar side (index extraction) is what
 * bounds these kernels.
 *
 * IQ1_M (256 weights, 56 bytes: qs[32], qh[16], scales[8], the fp16 d
 * spread over the scales' top nibbles, one pext): the same lattice, a
 * scale per 16 weights (one 128-bit lane of vpmaddubsw pairs: vpmaddwd
 * weights each lane by its own ls) and a delta sign s_l = +-1 per 8. With
 * T = 8 sumi1 + sumi2 (sumi1 = sum_k ls_k * lat_k, sumi2 = sum_k ls_k *
 * sum_l s_l S8_l; k: 16 weights, l: 8), every weight enters as
 *     u = 8 g + s + 9 = 8 (g + 1) + (s > 0 ? 2 : 0)    (0 .. 18)
 * (vpshufb, then + 2 under the k-mask of clear sign bits), and
 *     T = sum_k ls_k * (sum_j a_j u_j - 9 bsums_k);
 *     acc += (d * a.d) * (float(T) * 0.125f), exactly the reference's
 * (float)sumi1 + IQ1M_DELTA * (float)sumi2 as for IQ1_S.
 */
#include "avx512_common.h"
#include "avx512_kernels.h"
#include "ref/cold_tables.h"

#define Q8K_BYTES 292
#define Q8K_QS 4
#define Q8K_BSUMS 260
#define IQ1S_BYTES 50
#define IQ1S_QS 2
#define IQ1S_QH 34

AVX512_INLINE long long iq1s_row(unsigned idx) {
    uint64_t g;
    memcpy(&g, anvil_cold_iq1s_grid[idx], sizeof g);
    return (long long)g;
}

/* Eight grid rows (bytes -1, 0, 1): entry i of lattice index word i of i0
 * (i < 4), of i1 (i >= 4). */
AVX512_INLINE __m512i iq1_grid8(uint64_t i0, uint64_t i1) {
    const __m512i g = _mm512_set_epi64(iq1s_row((unsigned)(i1 >> 48)), iq1s_row((unsigned)(i1 >> 32) & 0xffff),
                                       iq1s_row((unsigned)(i1 >> 16) & 0xffff), iq1s_row((unsigned)i1 & 0xffff),
                                       iq1s_row((unsigned)(i0 >> 48)), iq1s_row((unsigned)(i0 >> 32) & 0xffff),
                                       iq1s_row((unsigned)(i0 >> 16) & 0xffff), iq1s_row((unsigned)i0 & 0xffff));
    return g;
}

/* 8 (g + 1) per byte of grid values g: vpshufb maps -1 (top bit set) to 0. */
AVX512_INLINE __m512i iq1_times8(__m512i g) {
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_setr_epi8(8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                               g);
}

/* Four 11-bit lattice indices as 16-bit words: byte l of q | field l of h
 * << 8; field l is h bits 3l .. 3l + 2 (IQ1_S), or 4l .. 4l + 2 (IQ1_M,
 * whose h comes with bit 4l + 3 cleared). BMI2 pdep, else shifts. */
AVX512_INLINE uint64_t iq1_index4(uint32_t q, uint32_t h, int iq1m) {
#if defined(__BMI2__)
    return _pdep_u64(q, 0x00ff00ff00ff00ffULL) |
           (iq1m ? _pdep_u64(h, 0x0f000f000f000f00ULL) : _pdep_u64(h, 0x0700070007000700ULL));
#else
    uint64_t r = 0;
    for (int l = 0; l < 4; ++l) {
        const uint64_t f = iq1m ? (h >> (4 * l)) & 7 : (h >> (3 * l)) & 7;
        r |= (((q >> (8 * l)) & 0xff) | f << 8) << (16 * l);
    }
    return r;
#endif
}

/* The grid values of sub-blocks 2p and 2p + 1 of the block at blk. */
AVX512_INLINE __m512i iq1s_grid64(const uint8_t *blk, int p) {
    const uint8_t *qs = blk + IQ1S_QS + 8 * p;
    return iq1_grid8(iq1_index4(anvil_rd_u32(qs), anvil_rd_u16(blk + IQ1S_QH + 4 * p), 0),
                     iq1_index4(anvil_rd_u32(qs + 4), anvil_rd_u16(blk + IQ1S_QH + 4 * p + 2), 0));
}

AVX512_INLINE __m512i madd_acc(__m512i acc, __m512i pairs, __m512i ls) {
#if AVX512_VNNI
    return _mm512_dpwssd_epi32(acc, pairs, ls);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, ls));
#endif
}

AVX512_INLINE void iq1_s_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    __m512i sel[4];
    for (int p = 0; p < 4; ++p) {
        sel[p] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * p)), _mm256_set1_epi16((short)(2 * p + 1)), 1);
    }
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ1S_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ1S_BYTES, ws, R);
        __m512i qa[4];
        for (int p = 0; p < 4; ++p) qa[p] = avx512_load(a + Q8K_QS + 64 * p);
        /* Q_ib = bsums[2 ib] + bsums[2 ib + 1], ib = 0..7 */
        const __m256i q = _mm256_madd_epi16(avx512_load256(a + Q8K_BSUMS), _mm256_set1_epi16(1));
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m128i h = avx512_load128(wr + IQ1S_QH);
            const __m128i ls =
                _mm_add_epi16(_mm_and_si128(_mm_srli_epi16(h, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
            const __m512i ls_w = _mm512_castsi128_si512(ls);
            const __m256i lsq = _mm256_mullo_epi32(_mm256_cvtepu16_epi32(ls), q);
            /* ls_ib Q_ib (sign_ib - 8): the delta part, minus the 8 (g + 1) offset's */
            const __m256i sq =
                _mm256_sign_epi32(lsq, _mm256_or_si256(_mm256_cvtepi16_epi32(h), _mm256_set1_epi32(1)));
            __m512i s = avx512_zext256(_mm256_sub_epi32(sq, _mm256_slli_epi32(lsq, 3)));
            for (int p = 0; p < 4; ++p) {
                s = madd_acc(s, _mm512_maddubs_epi16(iq1_times8(iq1s_grid64(wr, p)), qa[p]),
                             _mm512_permutexvar_epi16(sel[p], ls_w));
            }
            m[r] = s;
        }
        /* T = 8 sumi + sumi1, and (float)T / 8 == (float)sumi + delta (float)sumi1 exactly (delta = 1/8,
         * |T| < 2^24) */
        const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(avx512_reduce(m, R)), _mm256_set1_ps(0.125f));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, t));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq1_s, 256, IQ1S_BYTES)

/* y[j] = dl * ((float)g[j] + delta), dl = d * (float)(2s + 1), as the
 * reference decoder. */
static void iq1_s_decode(const void *src, float *dst, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / 256; ++i, blk += IQ1S_BYTES) {
        const float d = avx512_half(blk);
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

AVX512_KERNEL(kernel_iq1_s, ANVIL_TYPE_IQ1_S, ANVIL_TYPE_Q8_K, iq1_s_vec_dot, iq1_s_gemv, iq1_s_gemm, iq1_s_decode);

/* ---- IQ1_M ------------------------------------------------------------------ */

#define IQ1M_BYTES 56
#define IQ1M_QH 32
#define IQ1M_SCALES 48

/* The block's binary16 d, from the top nibbles of the four scale words. */
AVX512_INLINE uint16_t iq1m_d_bits(const uint8_t *blk) {
    uint64_t sc;
    memcpy(&sc, blk + IQ1M_SCALES, sizeof sc);
#if defined(__BMI2__)
    return (uint16_t)_pext_u64(sc, 0xf000f000f000f000ULL);
#else
    return (uint16_t)(((sc >> 12) & 0x000f) | ((sc >> 24) & 0x00f0) | ((sc >> 36) & 0x0f00) | ((sc >> 48) & 0xf000));
#endif
}

/* Lane r: d of row r (r < R), as f32 (exact). */
AVX512_INLINE __m256 iq1m_halves(const uint8_t *p, size_t stride, const int R) {
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

/* Grid values of weights 64p..64p+63 (x: the four qh bytes 4p..4p+3). */
AVX512_INLINE __m512i iq1m_grid64(const uint8_t *blk, int p, uint32_t x) {
    const uint8_t *qs = blk + 8 * p;
    const uint32_t f = x & 0x77777777u; /* the index fields, without the sign bits */
    return iq1_grid8(iq1_index4(anvil_rd_u32(qs), f, 1), iq1_index4(anvil_rd_u32(qs + 4), f >> 16, 1));
}

/* ls_k = 2 * field + 1 for the 16 groups of 16 weights (words). */
AVX512_INLINE __m256i iq1m_ls(const uint8_t *blk) {
    const __m256i sc = _mm256_broadcastq_epi64(_mm_loadl_epi64((const __m128i *)(blk + IQ1M_SCALES)));
    const __m256i words = _mm256_shuffle_epi8(sc, _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4,
                                                                   5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7));
    const __m256i f = _mm256_srlv_epi16(words, _mm256_setr_epi16(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9));
    return _mm256_add_epi16(_mm256_slli_epi16(_mm256_and_si256(f, _mm256_set1_epi16(7)), 1), _mm256_set1_epi16(1));
}

AVX512_INLINE void iq1_m_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                              simd_pf *pf) {
    const __m512i lane = _mm512_set_epi64(0x0303030303030303, 0x0303030303030303, 0x0202020202020202,
                                          0x0202020202020202, 0x0101010101010101, 0x0101010101010101, 0, 0);
    const __m512i sign_bit =
        _mm512_broadcast_i32x4(_mm_set_epi64x((long long)0x8080808080808080ULL, 0x0808080808080808));
    const __m512i two = _mm512_set1_epi8(2);
    /* words of 128-bit lane j: 4p + j (the group of 16 weights) */
    const __m512i lane_j = _mm512_set_epi64(0x0003000300030003, 0x0003000300030003, 0x0002000200020002,
                                            0x0002000200020002, 0x0001000100010001, 0x0001000100010001, 0, 0);
    __m512i sel[4];
    for (int p = 0; p < 4; ++p) sel[p] = _mm512_add_epi16(_mm512_set1_epi16((short)(4 * p)), lane_j);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += IQ1M_BYTES, a += Q8K_BYTES) {
        simd_pf_block(pf, b, IQ1M_BYTES, ws, R);
        __m512i qa[4];
        for (int p = 0; p < 4; ++p) qa[p] = avx512_load(a + Q8K_QS + 64 * p);
        const __m256i bsums = avx512_load256(a + Q8K_BSUMS);
        __m512i m[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m256i ls = iq1m_ls(wr);
            const __m512i ls_w = _mm512_castsi256_si512(ls);
            /* - 9 sum_k ls_k bsums_k: the offset of u = 8 g + sign + 9 */
            const __m256i lsq = _mm256_madd_epi16(ls, bsums);
            __m512i s = avx512_zext256(
                _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(_mm256_slli_epi32(lsq, 3), lsq)));
            for (int p = 0; p < 4; ++p) {
                const uint32_t x = anvil_rd_u32(wr + IQ1M_QH + 4 * p);
                const __m512i lsp = _mm512_permutexvar_epi16(sel[p], ls_w);
                const __mmask64 pos =
                    (__mmask64)~_mm512_test_epi8_mask(_mm512_shuffle_epi8(_mm512_set1_epi32((int)x), lane), sign_bit);
                const __m512i t = iq1_times8(iq1m_grid64(wr, p, x));
                s = madd_acc(s, _mm512_maddubs_epi16(_mm512_mask_add_epi8(t, pos, t, two), qa[p]), lsp);
            }
            m[r] = s;
        }
        /* T = 8 sumi1 + sumi2: (float)T / 8 == (float)sumi1 + delta (float)sumi2 exactly (delta = 1/8,
         * |T| < 2^24) */
        const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(avx512_reduce(m, R)), _mm256_set1_ps(0.125f));
        const __m256 d = _mm256_mul_ps(iq1m_halves(w, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, t));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(iq1_m, 256, IQ1M_BYTES)

/* y[j] = dl * ((float)g[j] + delta), dl per 16 weights, as the reference. */
static void iq1_m_decode(const void *src, float *dst, size_t n) {
    const uint8_t *blk = src;
    for (size_t i = 0; i < n / 256; ++i, blk += IQ1M_BYTES) {
        const float d = anvil_fp16_to_fp32(iq1m_d_bits(blk));
        for (int ib = 0; ib < 8; ++ib) {
            const int sub = anvil_rd_u16(blk + IQ1M_SCALES + 2 * (ib / 2)) >> (6 * (ib % 2));
            const float dl[2] = { d * (float)(2 * (sub & 7) + 1), d * (float)(2 * ((sub >> 3) & 7) + 1) };
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int nib = (blk[IQ1M_QH + 2 * ib + l / 2] >> (4 * (l % 2))) & 0xf;
                const __m128i g =
                    _mm_loadl_epi64((const __m128i *)anvil_cold_iq1s_grid[blk[4 * ib + l] | ((nib & 7) << 8)]);
                const __m256 delta = _mm256_set1_ps((nib & 8) ? -anvil_cold_iq1m_delta : anvil_cold_iq1m_delta);
                const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(g));
                _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_set1_ps(dl[l / 2]), _mm256_add_ps(v, delta)));
            }
        }
    }
}

AVX512_KERNEL(kernel_iq1_m, ANVIL_TYPE_IQ1_M, ANVIL_TYPE_Q8_K, iq1_m_vec_dot, iq1_m_gemv, iq1_m_gemm, iq1_m_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_iq1)[] = { &kernel_iq1_s, &kernel_iq1_m, NULL };
