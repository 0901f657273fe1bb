/* SPDX-License-Identifier: MIT */
/* backend-avx2: Q2_K Q3_K Q4_K Q5_K Q6_K against Q8_K, and their row
 * decoders.
 *
 * Per super-block and row, the integer part is accumulated in int32 lanes
 * across all sub-blocks (scales applied with a 16-bit multiply-add), then
 * reduced to the reference's exact isum (and summs for the formats with a
 * min); only then does the float part run, once per super-block, as in
 * plugins/ref/kquants_*.c:
 *     Q4_K, Q5_K  sumf += d * (float)isum - dmin * (float)summs,
 *                 d = fp16(x.d) * y.d, dmin = fp16(x.dmin) * y.d
 *     Q2_K        sumf += dall * (float)isum - dmin * (float)summs,
 *                 dall = y.d * fp16(x.d), dmin = y.d * fp16(x.dmin)
 *     Q3_K, Q6_K  sumf += d * (float)isum, d = fp16(x.d) * y.d
 * Signed codes (Q3_K: -4..3, Q6_K: -32..31) are multiplied unsigned
 * (code + offset) and the offset comes back out through the Q8_K bsums:
 * sum_g sc_g * sum(q - o) a = sum_g sc_g * sum(q a) - o * sum_g sc_g * bsum_g,
 * both exact in int32. The R-row structure is described in avx2_common.h.
 */
#include "avx2_common.h"
#include "avx2_kernels.h"

#define Q8K_QS 4
#define Q8K_BSUMS 260
#define Q8K_BYTES 292

/* Broadcast of one 16-bit word (index `word`, 0..7) of each 128-bit lane. */
AVX2_INLINE __m256i word_mask(int lo_word, int hi_word) {
    const short lo = (short)((2 * lo_word) | ((2 * lo_word + 1) << 8));
    const short hi = (short)((2 * hi_word) | ((2 * hi_word + 1) << 8));
    return _mm256_set_m128i(_mm_set1_epi16(hi), _mm_set1_epi16(lo));
}

/* For 16 int16 group scales s16 = [s0..s7 | s8..s15] (16-element groups),
 * the multiplier of 32-element chunk c: [s_2c x 8 | s_2c+1 x 8]. */
AVX2_INLINE __m256i chunk_scales16(__m256i s16, const int c) {
    const __m256i base = c < 4 ? _mm256_permute2x128_si256(s16, s16, 0x00)
                               : _mm256_permute2x128_si256(s16, s16, 0x11);
    const int w = 2 * (c & 3);
    return _mm256_shuffle_epi8(base, word_mask(w, w + 1));
}

/* ---- Q4_K and Q5_K -------------------------------------------------------- */

/* The eight 6-bit scales and mins of a Q4_K/Q5_K super-block, as bytes
 * [sc0..sc7, m0..m7]. p is the block + 4; 16 bytes are read (the 12 scale
 * bytes and 4 that follow inside the block). Scale/min 0..3 are the low six
 * bits of bytes 0..3 / 4..7; scale/min 4..7 take their low nibble from
 * bytes 8..11 (low / high half) and their top two bits from bits 6-7 of
 * bytes 0..3 / 4..7. Eight vector operations instead of a dozen scalar ones
 * plus the moves into a vector. */
AVX2_INLINE __m128i k4_scale_bytes(const uint8_t *p) {
    const __m128i b = avx2_load128(p);
    const __m128i top = _mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7));
    const __m128i low =
        _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, 8, 9, 10, 11, -1, -1, -1, -1, 8, 9, 10, 11));
    const __m128i six = _mm_and_si128(_mm_srlv_epi32(top, _mm_setr_epi32(0, 2, 0, 2)),
                                      _mm_setr_epi32(0x3f3f3f3f, 0x30303030, 0x3f3f3f3f, 0x30303030));
    const __m128i nib = _mm_and_si128(_mm_srlv_epi32(low, _mm_setr_epi32(0, 0, 0, 4)), _mm_set1_epi8(0x0F));
    return _mm_or_si128(six, nib);
}

/* acc + one row's sub-blocks 2j (low nibbles, against alo) and 2j + 1
 * (high nibbles, against ahi). q: the row's 32 code bytes of slice j;
 * sc: its scale dwords for 2j, 2j + 1; for Q5_K the fifth bits come from
 * qh, 32 bytes before qs (group 2j at bit 2j, 2j + 1 at bit 2j + 1). */
AVX2_INLINE __m256i k4_step(__m256i acc, const uint8_t *q, __m256i alo, __m256i ahi, const int32_t *sc, const int j,
                            const int five) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i v = avx2_load_reg(q);
    __m256i lo = _mm256_and_si256(v, m4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (five) {
        const __m256i b4 = _mm256_set1_epi8(0x10);
        const __m256i qh = avx2_load_reg(q - 32 - 32 * j);
        const int sl = 4 - 2 * j, sh = 3 - 2 * j;
        const __m256i bl = sl >= 0 ? _mm256_slli_epi16(qh, sl) : _mm256_srli_epi16(qh, -sl);
        const __m256i bh = sh >= 0 ? _mm256_slli_epi16(qh, sh) : _mm256_srli_epi16(qh, -sh);
        lo = _mm256_or_si256(lo, _mm256_and_si256(bl, b4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(bh, b4));
    }
    const __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_set1_epi32(sc[0]));
    const __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, ahi), _mm256_set1_epi32(sc[1]));
    return avx2_opaque(_mm256_add_epi32(acc, _mm256_add_epi32(plo, phi)));
}

/* isum[r] for the n (1, 2 or 4) rows at q (their codes, stride ws):
 * each 64-element activation slice is loaded once for all n rows. */
AVX2_INLINE void k4_rows4(const uint8_t *q, size_t ws, const uint8_t *a, const int32_t (*scw)[8], __m256i *isum,
                          const int n, const int five) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        const __m256i alo = avx2_load(a + Q8K_QS + 64 * j), ahi = avx2_load(a + Q8K_QS + 64 * j + 32);
        const uint8_t *qj = q + 32 * j;
        s0 = k4_step(s0, qj, alo, ahi, scw[0] + 2 * j, j, five);
        if (n > 1) s1 = k4_step(s1, qj + ws, alo, ahi, scw[1] + 2 * j, j, five);
        if (n > 2) s2 = k4_step(s2, qj + 2 * ws, alo, ahi, scw[2] + 2 * j, j, five);
        if (n > 3) s3 = k4_step(s3, qj + 3 * ws, alo, ahi, scw[3] + 2 * j, j, five);
    }
    isum[0] = s0;
    if (n > 1) isum[1] = s1;
    if (n > 2) isum[2] = s2;
    if (n > 3) isum[3] = s3;
}

/* Q4_K (five = 0) and Q5_K (five = 1). Block layout: d, dmin, scales[12],
 * [qh[32] for Q5_K], qs[128].
 *
 * Loop order: per block, the scales of all R rows are decoded first; then
 * each 64-element slice of the activation (two 32-element sub-blocks) is
 * loaded once and run against all R rows, whose int32 accumulators stay in
 * registers. Each sub-block's scale is applied with one multiply-add by a
 * vector of it; those vectors are 32-bit broadcasts from a per-block table
 * (sc_j duplicated into both halves of a dword), a load rather than a
 * shuffle. Loads (the L1 data path, two vectors per cycle) and shuffles
 * were what bounded the row-at-a-time order. */
AVX2_INLINE void k4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                         const int five, simd_pf *pf) {
    const size_t wbytes = five ? 176 : 144;
    const size_t qs_off = five ? 48 : 16;
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += wbytes, a += Q8K_BYTES) {
        simd_pf_block(pf, b, wbytes, ws, R);
        /* Sums of the activation codes per 32-element group, from bsums. */
        const __m256i g32 = _mm256_madd_epi16(avx2_load(a + Q8K_BSUMS), _mm256_set1_epi16(1));
        const __m128i g16 = _mm_packs_epi32(_mm256_castsi256_si128(g32), _mm256_extracti128_si256(g32, 1));
        _Alignas(32) int32_t scw[8][8];
        __m128i msum[8];
        __m256i isum[8];
        for (int r = 0; r < R; ++r) {
            const __m128i sm = k4_scale_bytes(w + r * ws + 4);
            msum[r] = _mm_madd_epi16(_mm_unpackhi_epi8(sm, _mm_setzero_si128()), g16);
            _mm256_store_si256((__m256i *)scw[r], _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sm, sm)));
        }
        /* The table must be read back from memory (as 32-bit broadcasts);
         * without this, compilers forward the stored vectors and broadcast
         * from registers, a shuffle per use again. */
        __asm__("" : "+m"(scw));
        /* rows in fours: four accumulators, the two activation vectors and
         * the temporaries fit the sixteen registers without spilling */
        k4_rows4(w + qs_off, ws, a, scw, isum, R < 4 ? R : 4, five);
        if (R == 8) k4_rows4(w + 4 * ws + qs_off, ws, a, scw + 4, isum + 4, 4, five);
        const __m256 yd = _mm256_set1_ps(anvil_rd_f32(a));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), yd);
        const __m256 dmin = _mm256_mul_ps(simd_x86_halves(w + 2, ws, R), yd);
        const __m256 fi = _mm256_cvtepi32_ps(avx2_reduce(isum, R));
        const __m256 fm = _mm256_cvtepi32_ps(avx2_reduce128(msum, R));
        acc = _mm256_add_ps(acc, _mm256_sub_ps(_mm256_mul_ps(d, fi), _mm256_mul_ps(dmin, fm)));
    }
    avx2_store_rows(y, acc, R);
}

AVX2_INLINE void q4_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    k4_rows(nb, w, ws, a, y, R, 0, pf);
}

AVX2_INLINE void q5_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    k4_rows(nb, w, ws, a, y, R, 1, pf);
}

/* ---- Q6_K ------------------------------------------------------------------ */

/* The four 32-element chunks of one 128-element half of a Q6_K block, as
 * unsigned codes 0..63 (element order: chunk k = elements 32k..32k+31). */
AVX2_INLINE void q6_codes(const uint8_t *ql, const uint8_t *qh, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    const __m256i l0 = avx2_load_reg(ql), l1 = avx2_load_reg(ql + 32), h = avx2_load_reg(qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

/* Per row and block: the sixteen scales, sign-extended to int16, are
 * stored and read back per half as a 128-bit broadcast (a load, where a
 * lane permute takes a full shuffle slot); each 32-element chunk then
 * takes its two scales with one in-lane shuffle. The -32 offset enters
 * as the multiply-add of 32 * sc with the negated bsums (computed once
 * per block): |32 sc| <= 4096 and |bsum| <= 2032 keep it exact. */
AVX2_INLINE void q6_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += 210, a += Q8K_BYTES) {
        simd_pf_block(pf, b, 210, ws, R);
        const __m256i nbsums = _mm256_sub_epi16(_mm256_setzero_si256(), avx2_load(a + Q8K_BSUMS));
        __m256i isum[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            _Alignas(32) int16_t s16[16];
            const __m256i sc = _mm256_cvtepi8_epi16(avx2_load128(wr + 192));
            _mm256_store_si256((__m256i *)s16, sc);
            __asm__("" : "+m"(s16)); /* read back as broadcasts, not permutes */
            __m256i s = _mm256_madd_epi16(_mm256_slli_epi16(sc, 5), nbsums);
            for (int h = 0; h < 2; ++h) {
                __m256i q[4];
                q6_codes(wr + 64 * h, wr + 128 + 32 * h, q);
                const __m256i sl = avx2_load_lane(s16 + 8 * h);
                for (int k = 0; k < 4; ++k) {
                    const __m256i p = _mm256_maddubs_epi16(q[k], avx2_load(a + Q8K_QS + 32 * (4 * h + k)));
                    s = _mm256_add_epi32(s,
                                         _mm256_madd_epi16(p, _mm256_shuffle_epi8(sl, word_mask(2 * k, 2 * k + 1))));
                }
            }
            isum[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w + 208, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(isum, R))));
    }
    avx2_store_rows(y, acc, R);
}

/* ---- Q3_K and Q2_K: 2-bit planes (qs[32 h + l] bits 2k..2k+1 hold element
 * 128 h + 32 k + l), 16-element groups ------------------------------------- */

/* Q3_K's sixteen 6-bit scales, each minus 32, as int16 [s0..s7 | s8..s15]. */
AVX2_INLINE __m256i q3_scales(const uint8_t *p) {
    const uint32_t a0 = anvil_rd_u32(p), a1 = anvil_rd_u32(p + 4), t = anvil_rd_u32(p + 8);
    const uint32_t s0 = (a0 & 0x0f0f0f0fu) | ((t & 0x03030303u) << 4);
    const uint32_t s1 = (a1 & 0x0f0f0f0fu) | (((t >> 2) & 0x03030303u) << 4);
    const uint32_t s2 = ((a0 >> 4) & 0x0f0f0f0fu) | (((t >> 4) & 0x03030303u) << 4);
    const uint32_t s3 = ((a1 >> 4) & 0x0f0f0f0fu) | (((t >> 6) & 0x03030303u) << 4);
    const __m128i b = _mm_sub_epi8(_mm_set_epi32((int)s3, (int)s2, (int)s1, (int)s0), _mm_set1_epi8(32));
    return _mm256_cvtepi8_epi16(b);
}

AVX2_INLINE void q3_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    const __m256i m3 = _mm256_set1_epi8(3), b2 = _mm256_set1_epi8(4);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += 110, a += Q8K_BYTES) {
        simd_pf_block(pf, b, 110, ws, R);
        const __m256i bsums = avx2_load(a + Q8K_BSUMS);
        __m256i isum[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            const __m256i s16 = q3_scales(wr + 96);
            /* codes are q + 4 (0..7): take 4 * sum_g sc_g * bsum_g back out */
            __m256i s = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(s16, bsums), 2));
            const __m256i hm = avx2_load(wr);
            for (int h = 0; h < 2; ++h) {
                const __m256i qs = avx2_load(wr + 32 + 32 * h);
                for (int k = 0; k < 4; ++k) {
                    const int c = 4 * h + k, hb = 4 * h + k - 2; /* hmask bit c -> bit 2 */
                    const __m256i hi = hb <= 0 ? _mm256_slli_epi16(hm, -hb) : _mm256_srli_epi16(hm, hb);
                    const __m256i q =
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3), _mm256_and_si256(hi, b2));
                    const __m256i p = _mm256_maddubs_epi16(q, avx2_load(a + Q8K_QS + 32 * c));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, chunk_scales16(s16, c)));
                }
            }
            isum[r] = s;
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w + 108, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx2_reduce(isum, R))));
    }
    avx2_store_rows(y, acc, R);
}

AVX2_INLINE void q2_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += 84, a += Q8K_BYTES) {
        simd_pf_block(pf, b, 84, ws, R);
        const __m256i bsums = avx2_load(a + Q8K_BSUMS);
        __m256i isum[8], msum[8];
        for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + r * ws;
            const __m128i sc = avx2_load128(wr);
            const __m256i s16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc, m4));
            msum[r] = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m4)), bsums);
            __m256i s = _mm256_setzero_si256();
            for (int h = 0; h < 2; ++h) {
                const __m256i qs = avx2_load(wr + 16 + 32 * h);
                for (int k = 0; k < 4; ++k) {
                    const int c = 4 * h + k;
                    const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3);
                    const __m256i p = _mm256_maddubs_epi16(q, avx2_load(a + Q8K_QS + 32 * c));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, chunk_scales16(s16, c)));
                }
            }
            isum[r] = s;
        }
        const __m256 yd = _mm256_set1_ps(anvil_rd_f32(a));
        const __m256 dall = _mm256_mul_ps(yd, simd_x86_halves(w + 80, ws, R));
        const __m256 dmin = _mm256_mul_ps(yd, simd_x86_halves(w + 82, ws, R));
        const __m256 fi = _mm256_cvtepi32_ps(avx2_reduce(isum, R));
        const __m256 fm = _mm256_cvtepi32_ps(avx2_reduce(msum, R));
        acc = _mm256_add_ps(acc, _mm256_sub_ps(_mm256_mul_ps(dall, fi), _mm256_mul_ps(dmin, fm)));
    }
    avx2_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q2_K, 256, 84)
SIMD_DEFINE_ENTRY_POINTS(q3_K, 256, 110)
SIMD_DEFINE_ENTRY_POINTS(q4_K, 256, 144)
SIMD_DEFINE_ENTRY_POINTS(q5_K, 256, 176)
SIMD_DEFINE_ENTRY_POINTS(q6_K, 256, 210)

/* ---- decoders ---------------------------------------------------------------- */

/* dst[0..32) = ds * (float)q - ms for 32 unsigned codes (minus `offset`),
 * two roundings as the reference: ds * q first, then the subtraction (or
 * none when sub_min is 0). */
AVX2_INLINE void k_decode32(__m256i codes, int offset, __m256 ds, int sub_min, __m256 ms, float *dst) {
    const __m256i off = _mm256_set1_epi32(offset);
    for (int k = 0; k < 4; ++k) {
        const __m128i part = k < 2 ? _mm256_castsi256_si128(codes) : _mm256_extracti128_si256(codes, 1);
        const __m128i bytes = (k & 1) ? _mm_srli_si128(part, 8) : part;
        const __m256 q = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), off));
        __m256 v = _mm256_mul_ps(ds, q);
        if (sub_min) v = _mm256_sub_ps(v, ms);
        _mm256_storeu_ps(dst + 8 * k, v);
    }
}

/* Q4_K / Q5_K: per 32-group g, (d * sc_g) * q - (dmin * m_g). */
AVX2_INLINE void k4_decode(const void *src, float *dst, size_t n, const int five) {
    const uint8_t *b = src;
    const size_t wbytes = five ? 176 : 144, qs_off = five ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    for (size_t i = 0; i < n / 256; ++i, b += wbytes) {
        const float d = avx2_half(b), dmin = avx2_half(b + 2);
        uint8_t sm[16];
        _mm_storeu_si128((__m128i *)sm, k4_scale_bytes(b + 4));
        const __m256i qh = five ? avx2_load(b + 16) : _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j, dst += 64) {
            const __m256i q = avx2_load(b + qs_off + 32 * j);
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j), 4), b4));
                hi =
                    _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j + 1), 4), b4));
            }
            const float d1 = d * (float)sm[2 * j], m1 = dmin * (float)sm[8 + 2 * j];
            const float d2 = d * (float)sm[2 * j + 1], m2 = dmin * (float)sm[8 + 2 * j + 1];
            k_decode32(lo, 0, _mm256_set1_ps(d1), 1, _mm256_set1_ps(m1), dst);
            k_decode32(hi, 0, _mm256_set1_ps(d2), 1, _mm256_set1_ps(m2), dst + 32);
        }
    }
}

static void q4_K_decode(const void *src, float *dst, size_t n) { k4_decode(src, dst, n, 0); }
static void q5_K_decode(const void *src, float *dst, size_t n) { k4_decode(src, dst, n, 1); }

/* Q6_K: (d * sc_g) * (q - 32) per 16-element group. */
static void q6_K_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += 210) {
        const float d = avx2_half(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int h = 0; h < 2; ++h) {
            __m256i q[4];
            q6_codes(b + 64 * h, b + 128 + 32 * h, q);
            for (int k = 0; k < 4; ++k, dst += 32) {
                const int g = 8 * h + 2 * k;
                /* two 16-element groups per chunk: decode each half with its scale */
                float tmp[32];
                k_decode32(q[k], 32, _mm256_set1_ps(d * (float)sc[g]), 0, _mm256_setzero_ps(), tmp);
                memcpy(dst, tmp, 16 * sizeof(float));
                k_decode32(q[k], 32, _mm256_set1_ps(d * (float)sc[g + 1]), 0, _mm256_setzero_ps(), tmp);
                memcpy(dst + 16, tmp + 16, 16 * sizeof(float));
            }
        }
    }
}

/* Q3_K: (d * sc_g) * q with q in -4..3. */
static void q3_K_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i m3 = _mm256_set1_epi8(3), b2 = _mm256_set1_epi8(4);
    for (size_t i = 0; i < n / 256; ++i, b += 110) {
        const float d = avx2_half(b + 108);
        int16_t sc[16];
        _mm256_storeu_si256((__m256i *)sc, q3_scales(b + 96));
        const __m256i hm = avx2_load(b);
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = avx2_load(b + 32 + 32 * h);
            for (int k = 0; k < 4; ++k, dst += 32) {
                const int c = 4 * h + k;
                const __m256i hi = _mm256_slli_epi16(_mm256_srli_epi16(hm, c), 2);
                const __m256i q =
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3), _mm256_and_si256(hi, b2));
                float tmp[32];
                k_decode32(q, 4, _mm256_set1_ps(d * (float)sc[2 * c]), 0, _mm256_setzero_ps(), tmp);
                memcpy(dst, tmp, 16 * sizeof(float));
                k_decode32(q, 4, _mm256_set1_ps(d * (float)sc[2 * c + 1]), 0, _mm256_setzero_ps(), tmp);
                memcpy(dst + 16, tmp + 16, 16 * sizeof(float));
            }
        }
    }
}

/* Q2_K: (d * (sc & 15)) * q - (dmin * (sc >> 4)) per 16-element group. */
static void q2_K_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (size_t i = 0; i < n / 256; ++i, b += 84) {
        const float d = avx2_half(b + 80), dmin = avx2_half(b + 82);
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = avx2_load(b + 16 + 32 * h);
            for (int k = 0; k < 4; ++k, dst += 32) {
                const int g = 8 * h + 2 * k;
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3);
                float tmp[32];
                k_decode32(q, 0, _mm256_set1_ps(d * (float)(b[g] & 0xF)), 1,
                           _mm256_set1_ps(dmin * (float)(b[g] >> 4)), tmp);
                memcpy(dst, tmp, 16 * sizeof(float));
                k_decode32(q, 0, _mm256_set1_ps(d * (float)(b[g + 1] & 0xF)), 1,
                           _mm256_set1_ps(dmin * (float)(b[g + 1] >> 4)), tmp);
                memcpy(dst + 16, tmp + 16, 16 * sizeof(float));
            }
        }
    }
}

AVX2_KERNEL(kernel_q2_K, ANVIL_TYPE_Q2_K, ANVIL_TYPE_Q8_K, "avx2", q2_K_vec_dot, q2_K_gemv, q2_K_gemm, q2_K_decode);
AVX2_KERNEL(kernel_q3_K, ANVIL_TYPE_Q3_K, ANVIL_TYPE_Q8_K, "avx2", q3_K_vec_dot, q3_K_gemv, q3_K_gemm, q3_K_decode);
AVX2_KERNEL(kernel_q4_K, ANVIL_TYPE_Q4_K, ANVIL_TYPE_Q8_K, "avx2", q4_K_vec_dot, q4_K_gemv, q4_K_gemm, q4_K_decode);
AVX2_KERNEL(kernel_q5_K, ANVIL_TYPE_Q5_K, ANVIL_TYPE_Q8_K, "avx2", q5_K_vec_dot, q5_K_gemv, q5_K_gemm, q5_K_decode);
AVX2_KERNEL(kernel_q6_K, ANVIL_TYPE_Q6_K, ANVIL_TYPE_Q8_K, "avx2", q6_K_vec_dot, q6_K_gemv, q6_K_gemm, q6_K_decode);

const anvil_kernel *const anvil_avx2_kernels_kquants[] = { &kernel_q2_K, &kernel_q3_K, &kernel_q4_K,
                                                           &kernel_q5_K, &kernel_q6_K, NULL };
