/* SPDX-License-Identifier: MIT */
/* backend-avx512: Q2_K Q3_K Q4_K Q5_K Q6_K against Q8_K, and their row
 * decoders.
 *
 * Per super-block and row, the integer part is accumulated in the int32
 * lanes of one zmm across all sub-blocks (a whole 256-element super-block
 * of a row is four zmm of codes), then reduced, R rows at once, to the
 * reference's exact isum (and summs for the formats with a min); only then
 * does the float part run, once per super-block, as in
 * plugins/ref/kquants_q*_k.c (and backend-avx2, whose float sequence this
 * copies):
 *     Q4_K, Q5_K  sumf += d * (float)isum - dmin * (float)summs,
 *                 d = fp16(x.d) * y.d, dmin = fp16(x.dmin) * y.d
 *     Q2_K        sumf += dall * (float)isum - dmin * (float)summs,
 *                 dall = y.d * fp16(x.d), dmin = y.d * fp16(x.dmin)
 *     Q3_K, Q6_K  sumf += d * (float)isum, d = fp16(x.d) * y.d
 * Signed codes (Q3_K: -4..3, Q6_K: -32..31) are multiplied unsigned
 * (code + offset) and the offset comes back out through the Q8_K bsums:
 * sum_g sc_g * sum(q - o) a = sum_g sc_g * sum(q a) - o * sum_g sc_g * bsum_g,
 * both exact in int32.
 *
 * The sub-block scales (kq_dot4): every format is brought to four code
 * vectors X0..X3 (unsigned, 0..63) and four activation vectors A0..A3 such
 * that each 128-bit lane of Xi holds 16 codes of ONE scale group (16 or 32
 * elements). With VNNI, vpdpbusd gives per-4-byte int32 dots (|.| <= 4 *
 * 63 * 128 = 32256), two such vectors are packed to int16 without
 * saturation (vpackssdw, per 128-bit lane: 4 words of Xi then 4 of Xi+1)
 * and one vpmaddwd by the matching scale words applies both vectors'
 * scales: two multiply-adds per row and super-block. Without VNNI,
 * vpmaddubsw pairs (|.| <= 2 * 63 * 128 = 16128) go straight into
 * vpmaddwd by the scale words, one per vector. The scale-word vectors are
 * one vpermw each from the row's scales as int16 (index tables below).
 * Every product and sum is exact, so both variants give the same ints.
 */
#include "avx512_common.h"
#include "avx512_kernels.h"

#define Q8K_QS 4
#define Q8K_BSUMS 260
#define Q8K_BYTES 292

/* ---- scale application ------------------------------------------------------ */

/* Index tables for vpermw: which scale word each int16 lane of a scale
 * vector takes. g(i, j) = the scale group of 128-bit lane j of code
 * vector Xi. VNNI: table t covers the packed pair (X2t, X2t+1): lane j
 * words [g(2t, j) x4, g(2t+1, j) x4]. Base: table i covers Xi: lane j
 * words [g(i, j) x8]. */
#define KQ_W4(x) x, x, x, x
#define KQ_P(a, b) KQ_W4(a), KQ_W4(b)
#define KQ_B(a) KQ_W4(a), KQ_W4(a)
#if AVX512_VNNI
#define KQ_NIDX 2
/* Q4_K/Q5_K: X0 = [sb0 | sb2], X1 = [sb1 | sb3], X2 = [sb4 | sb6], X3 = [sb5 | sb7]
 * (256-bit halves, 32-element sub-blocks) */
static const int16_t k4_idx[2][32] __attribute__((aligned(64))) = {
    { KQ_P(0, 1), KQ_P(0, 1), KQ_P(2, 3), KQ_P(2, 3) },
    { KQ_P(4, 5), KQ_P(4, 5), KQ_P(6, 7), KQ_P(6, 7) },
};
/* Q6_K: Xi = elements 64 i .. 64 i + 63, lane j = group 4 i + j */
static const int16_t q6_idx[2][32] __attribute__((aligned(64))) = {
    { KQ_P(0, 4), KQ_P(1, 5), KQ_P(2, 6), KQ_P(3, 7) },
    { KQ_P(8, 12), KQ_P(9, 13), KQ_P(10, 14), KQ_P(11, 15) },
};
/* Q2_K/Q3_K: Xk = [chunk k | chunk 4 + k] (32-element chunks of the 2-bit
 * planes), lane j = group 2 k + (j & 1) + 8 (j >> 1) */
static const int16_t q23_idx[2][32] __attribute__((aligned(64))) = {
    { KQ_P(0, 2), KQ_P(1, 3), KQ_P(8, 10), KQ_P(9, 11) },
    { KQ_P(4, 6), KQ_P(5, 7), KQ_P(12, 14), KQ_P(13, 15) },
};
#else
#define KQ_NIDX 4
static const int16_t k4_idx[4][32] __attribute__((aligned(64))) = {
    { KQ_B(0), KQ_B(0), KQ_B(2), KQ_B(2) },
    { KQ_B(1), KQ_B(1), KQ_B(3), KQ_B(3) },
    { KQ_B(4), KQ_B(4), KQ_B(6), KQ_B(6) },
    { KQ_B(5), KQ_B(5), KQ_B(7), KQ_B(7) },
};
static const int16_t q6_idx[4][32] __attribute__((aligned(64))) = {
    { KQ_B(0), KQ_B(1), KQ_B(2), KQ_B(3) },
    { KQ_B(4), KQ_B(5), KQ_B(6), KQ_B(7) },
    { KQ_B(8), KQ_B(9), KQ_B(10), KQ_B(11) },
    { KQ_B(12), KQ_B(13), KQ_B(14), KQ_B(15) },
};
static const int16_t q23_idx[4][32] __attribute__((aligned(64))) = {
    { KQ_B(0), KQ_B(1), KQ_B(8), KQ_B(9) },
    { KQ_B(2), KQ_B(3), KQ_B(10), KQ_B(11) },
    { KQ_B(4), KQ_B(5), KQ_B(12), KQ_B(13) },
    { KQ_B(6), KQ_B(7), KQ_B(14), KQ_B(15) },
};
#endif

/* acc + sum over i, lanes of sc(group) * (Xi . Ai) per group; sw: the
 * row's scales as int16 words (indexed by idx). See the file comment. */
AVX512_INLINE __m512i kq_dot4(__m512i acc, const __m512i x[4], const __m512i a[4], __m512i sw,
                              const __m512i idx[KQ_NIDX]) {
#if AVX512_VNNI
    const __m512i z = _mm512_setzero_si512();
    const __m512i p01 = _mm512_packs_epi32(avx512_dpbusd(z, x[0], a[0]), avx512_dpbusd(z, x[1], a[1]));
    const __m512i p23 = _mm512_packs_epi32(avx512_dpbusd(z, x[2], a[2]), avx512_dpbusd(z, x[3], a[3]));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p01, _mm512_permutexvar_epi16(idx[0], sw)));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p23, _mm512_permutexvar_epi16(idx[1], sw)));
#else
    for (int i = 0; i < 4; ++i) {
        const __m512i p = _mm512_maddubs_epi16(x[i], a[i]);
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(idx[i], sw)));
    }
    return acc;
#endif
}

AVX512_INLINE void kq_load_idx(const int16_t (*t)[32], __m512i idx[KQ_NIDX], int add) {
    for (int i = 0; i < KQ_NIDX; ++i) idx[i] = _mm512_add_epi16(avx512_load(t[i]), _mm512_set1_epi16((short)add));
}

/* For ms[0] (rows 0..3, one per 128-bit lane) and ms[1] (rows 4..7):
 * lane r of the result = the sum of the four int32 of row r's lane. */
AVX512_INLINE __m256i kq_lane_sums(const __m512i ms[2], const int R) {
    const __m512i b = R > 4 ? ms[1] : _mm512_setzero_si512();
    /* per lane j: [a0+a1, b0+b1, a2+a3, b2+b3], then [a, b, a, b] */
    const __m512i t = AVX512_FOLD(ms[0], b, 0xAAAA, 0xB1);
    const __m512i u = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, AVX512_PERM(0x4E)));
    const __m512i v =
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), u);
    return _mm512_castsi512_si256(v);
}

/* 16 bytes at p + r * ws in 128-bit lane r, r < n (the other lanes zero). */
AVX512_INLINE __m512i kq_lanes4(const uint8_t *p, size_t ws, const int n) {
    __m512i v = _mm512_inserti32x4(_mm512_setzero_si512(), avx512_load128(p), 0);
    if (n > 1) v = _mm512_inserti32x4(v, avx512_load128(p + ws), 1);
    if (n > 2) {
        v = _mm512_inserti32x4(v, avx512_load128(p + 2 * ws), 2);
        v = _mm512_inserti32x4(v, avx512_load128(p + 3 * ws), 3);
    }
    return v;
}

/* The eight 32-element chunks c0..c7 of the activation in the 2-bit-plane
 * order: b[k] = [c_k | c_4+k]. */
AVX512_INLINE void kq_act_planes(const uint8_t *a, __m512i b[4]) {
    const __m512i a0 = avx512_load(a + Q8K_QS), a1 = avx512_load(a + Q8K_QS + 64);
    const __m512i a2 = avx512_load(a + Q8K_QS + 128), a3 = avx512_load(a + Q8K_QS + 192);
    b[0] = _mm512_shuffle_i64x2(a0, a2, _MM_SHUFFLE(1, 0, 1, 0));
    b[1] = _mm512_shuffle_i64x2(a0, a2, _MM_SHUFFLE(3, 2, 3, 2));
    b[2] = _mm512_shuffle_i64x2(a1, a3, _MM_SHUFFLE(1, 0, 1, 0));
    b[3] = _mm512_shuffle_i64x2(a1, a3, _MM_SHUFFLE(3, 2, 3, 2));
}

/* 32 bytes at p in both 256-bit halves, the upper half shifted right by
 * `hi_shift` bits per 16-bit word (bytes keep their own bits in the
 * positions the callers mask). */
AVX512_INLINE __m512i kq_dup_shift(const uint8_t *p, const int hi_shift) {
    const __m512i v = _mm512_broadcast_i64x4(avx512_load256(p));
    const __m512i cnt = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16((short)hi_shift), 1);
    return _mm512_srlv_epi16(v, cnt);
}

/* ---- Q4_K and Q5_K -------------------------------------------------------- */

/* The eight 6-bit scales and mins of four Q4_K/Q5_K super-blocks (rows
 * r < n at p + r * ws, p = block + 4), as bytes [sc0..sc7, m0..m7] in
 * 128-bit lane r; 16 bytes are read per row (the 12 scale bytes and 4 that
 * follow inside the block). Scale/min 0..3 are the low six bits of bytes
 * 0..3 / 4..7; scale/min 4..7 take their low nibble from bytes 8..11 (low /
 * high half) and their top two bits from bits 6-7 of bytes 0..3 / 4..7. */
AVX512_INLINE __m512i k4_scales4(const uint8_t *p, size_t ws, const int n) {
    const __m512i b = kq_lanes4(p, ws, n);
    const __m512i top =
        _mm512_shuffle_epi8(b, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7)));
    const __m512i low = _mm512_shuffle_epi8(
        b, _mm512_broadcast_i32x4(_mm_setr_epi8(-1, -1, -1, -1, 8, 9, 10, 11, -1, -1, -1, -1, 8, 9, 10, 11)));
    const __m512i six =
        _mm512_and_si512(_mm512_srlv_epi32(top, _mm512_broadcast_i32x4(_mm_setr_epi32(0, 2, 0, 2))),
                         _mm512_broadcast_i32x4(_mm_setr_epi32(0x3f3f3f3f, 0x30303030, 0x3f3f3f3f, 0x30303030)));
    const __m512i nib = _mm512_and_si512(_mm512_srlv_epi32(low, _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0, 0, 4))),
                                         _mm512_set1_epi8(0x0F));
    return _mm512_or_si512(six, nib);
}

/* Q4_K (five = 0) and Q5_K (five = 1). Block layout: d, dmin, scales[12],
 * [qh[32] for Q5_K], qs[128]. Code slice j (32 bytes) holds sub-block 2j
 * in its low nibbles and 2j + 1 in its high ones, so one zmm of codes (two
 * slices) gives X0 = [sb0 | sb2] and X1 = [sb1 | sb3]; the activation is
 * rearranged to match once per block for all R rows. Q5_K's fifth bits:
 * sub-block s has its bit in qh[l] at bit s; qh is read into both halves,
 * the upper one shifted right by 2, so one shift per vector brings bits
 * (0, 2), (1, 3), (4, 6), (5, 7) to bit 4.
 *
 * The scales of four rows are decoded in one zmm (a row per 128-bit lane):
 * the min term (bsums summed per 32-group, times the mins) is one
 * vpmaddwd there, and kq_lane_sums reduces it for all rows at once. */
AVX512_INLINE void k4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           const int five, simd_pf *pf) {
    const size_t wbytes = five ? 176 : 144;
    const size_t qs_off = five ? 48 : 16;
    const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
    __m512i idx[4][KQ_NIDX];
    for (int r = 0; r < (R < 4 ? R : 4); ++r) kq_load_idx(k4_idx, idx[r], 8 * r); /* row r's words in lane r */
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += wbytes, a += Q8K_BYTES) {
        simd_pf_block(pf, b, wbytes, ws, R);
        __m512i A[4];
        {
            const __m512i a0 = avx512_load(a + Q8K_QS), a1 = avx512_load(a + Q8K_QS + 64);
            const __m512i a2 = avx512_load(a + Q8K_QS + 128), a3 = avx512_load(a + Q8K_QS + 192);
            A[0] = _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(1, 0, 1, 0)); /* elements 0..31 | 64..95 */
            A[1] = _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(3, 2, 3, 2)); /* 32..63 | 96..127 */
            A[2] = _mm512_shuffle_i64x2(a2, a3, _MM_SHUFFLE(1, 0, 1, 0));
            A[3] = _mm512_shuffle_i64x2(a2, a3, _MM_SHUFFLE(3, 2, 3, 2));
        }
        /* sums of the activation codes per 32-group (|.| <= 4064), as words */
        const __m256i g32 = _mm256_madd_epi16(avx512_load256(a + Q8K_BSUMS), _mm256_set1_epi16(1));
        const __m512i g16 =
            _mm512_broadcast_i32x4(_mm_packs_epi32(_mm256_castsi256_si128(g32), _mm256_extracti128_si256(g32, 1)));
        __m512i sw[2], ms[2];
        for (int h = 0; h < (R > 4 ? 2 : 1); ++h) {
            const __m512i sm = k4_scales4(w + 4 * (size_t)h * ws + 4, ws, R < 4 ? R : 4);
            sw[h] = _mm512_unpacklo_epi8(sm, _mm512_setzero_si512()); /* lane r: sc0..sc7 as words */
            ms[h] = _mm512_madd_epi16(_mm512_unpackhi_epi8(sm, _mm512_setzero_si512()), g16);
        }
        __m512i isum[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m512i v0 = avx512_load(wr + qs_off), v1 = avx512_load(wr + qs_off + 64);
            __m512i X[4];
            X[0] = _mm512_and_si512(v0, m4);
            X[1] = _mm512_and_si512(_mm512_srli_epi16(v0, 4), m4);
            X[2] = _mm512_and_si512(v1, m4);
            X[3] = _mm512_and_si512(_mm512_srli_epi16(v1, 4), m4);
            if (five) {
                const __m512i hx = kq_dup_shift(wr + 16, 2);
                X[0] = _mm512_or_si512(X[0], _mm512_and_si512(_mm512_slli_epi16(hx, 4), b4));
                X[1] = _mm512_or_si512(X[1], _mm512_and_si512(_mm512_slli_epi16(hx, 3), b4));
                X[2] = _mm512_or_si512(X[2], _mm512_and_si512(hx, b4));
                X[3] = _mm512_or_si512(X[3], _mm512_and_si512(_mm512_srli_epi16(hx, 1), b4));
            }
            isum[r] = kq_dot4(_mm512_setzero_si512(), X, A, sw[r >> 2], idx[r & 3]);
        }
        const __m256 yd = _mm256_set1_ps(anvil_rd_f32(a));
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w, ws, R), yd);
        const __m256 dmin = _mm256_mul_ps(simd_x86_halves(w + 2, ws, R), yd);
        const __m256 fi = _mm256_cvtepi32_ps(avx512_reduce(isum, R));
        const __m256 fm = _mm256_cvtepi32_ps(kq_lane_sums(ms, R));
        acc = _mm256_add_ps(acc, _mm256_sub_ps(_mm256_mul_ps(d, fi), _mm256_mul_ps(dmin, fm)));
    }
    avx512_store_rows(y, acc, R);
}

AVX512_INLINE void q4_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    k4_rows(nb, w, ws, a, y, R, 0, pf);
}

AVX512_INLINE void q5_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    k4_rows(nb, w, ws, a, y, R, 1, pf);
}

/* ---- Q6_K ------------------------------------------------------------------ */

/* The 256 unsigned codes (0..63) of a Q6_K block in element order, X[i] =
 * elements 64 i .. 64 i + 63. Half h (128 elements) has ql[64 h ..] (chunk
 * k's low nibble in byte l + 32 (k & 1), low half for k < 2) and qh[32 h ..]
 * (chunk k's top bits at bit 2 k): with qh in both 256-bit halves, the
 * upper one shifted right by 2, X[2h] = [c0 | c1] takes bits (0-1, 2-3)
 * and X[2h + 1] = [c2 | c3] bits (4-5, 6-7). */
AVX512_INLINE void q6_codes(const uint8_t *b, __m512i X[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
        const __m512i l = avx512_load(b + 64 * h);
        const __m512i hb = kq_dup_shift(b + 128 + 32 * h, 2);
        X[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
        X[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(hb, m30));
    }
}

/* Block: ql[128], qh[64], scales[16] (int8), d. The -32 offset enters as
 * the multiply-add of 32 * sc with the negated bsums: |32 sc| <= 4096 and
 * |bsum| <= 2032 keep it exact. */
AVX512_INLINE void q6_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    __m512i idx[KQ_NIDX];
    kq_load_idx(q6_idx, idx, 0);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += 210, a += Q8K_BYTES) {
        simd_pf_block(pf, b, 210, ws, R);
        const __m256i nbsums = _mm256_sub_epi16(_mm256_setzero_si256(), avx512_load256(a + Q8K_BSUMS));
        __m512i A[4];
        for (int i = 0; i < 4; ++i) A[i] = avx512_load(a + Q8K_QS + 64 * i);
        __m512i isum[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m256i sc = _mm256_cvtepi8_epi16(avx512_load128(wr + 192));
            const __m512i off = avx512_zext256(_mm256_madd_epi16(_mm256_slli_epi16(sc, 5), nbsums));
            __m512i X[4];
            q6_codes(wr, X);
            isum[r] = kq_dot4(off, X, A, _mm512_castsi256_si512(sc), idx);
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w + 208, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(isum, R))));
    }
    avx512_store_rows(y, acc, R);
}

/* ---- Q3_K and Q2_K: 2-bit planes (qs[32 h + l] bits 2k..2k+1 hold element
 * 128 h + 32 k + l), 16-element groups. One zmm of qs (both halves) gives
 * X[k] = [chunk k | chunk 4 + k] with one shift and mask. ------------------ */

/* Q3_K's sixteen 6-bit scales, each minus 32, as int16 [s0..s15]. p is
 * the block + 96 (scales[12]); the 16 bytes read start 2 before it, so
 * they stay inside the block (qs before, d after). Scale j takes its low
 * nibble from byte j % 8 (low nibble for j < 8, high one above) and its
 * top two bits from byte 8 + j % 4 at bits 2 (j / 4): a few vector
 * operations instead of a dozen scalar ones plus the moves into a vector. */
AVX512_INLINE __m256i q3_scales(const uint8_t *p) {
    const __m128i v = avx512_load128(p - 2);
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
    const __m128i t =
        _mm_shuffle_epi8(v, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13));
    const __m128i lo = _mm_and_si128(_mm_srlv_epi64(a, _mm_set_epi64x(4, 0)), _mm_set1_epi8(0x0F));
    const __m128i hi =
        _mm_and_si128(_mm_slli_epi32(_mm_srlv_epi32(t, _mm_setr_epi32(0, 2, 4, 6)), 4), _mm_set1_epi8(0x30));
    return _mm256_cvtepi8_epi16(_mm_sub_epi8(_mm_or_si128(lo, hi), _mm_set1_epi8(32)));
}

/* The 256 Q3_K codes + 4 (0..7) of the block at b, in plane order. hmask:
 * element 128 h + 32 k + l has its third bit in hmask[l] at bit 4 h + k;
 * with hmask in both halves, the upper one shifted right by 4, chunk k's
 * bit is at bit k of both halves. */
AVX512_INLINE void q3_codes(const uint8_t *b, __m512i X[4]) {
    const __m512i m3 = _mm512_set1_epi8(3), b2 = _mm512_set1_epi8(4);
    const __m512i hx = kq_dup_shift(b, 4);
    const __m512i qs = avx512_load(b + 32);
    X[0] = _mm512_or_si512(_mm512_and_si512(qs, m3), _mm512_and_si512(_mm512_slli_epi16(hx, 2), b2));
    X[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qs, 2), m3),
                           _mm512_and_si512(_mm512_slli_epi16(hx, 1), b2));
    X[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qs, 4), m3), _mm512_and_si512(hx, b2));
    X[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qs, 6), m3),
                           _mm512_and_si512(_mm512_srli_epi16(hx, 1), b2));
}

/* Block: hmask[32], qs[64], scales[12], d. Codes are q + 4: take
 * 4 * sum_g sc_g * bsum_g back out (|4 bsum| <= 8128, |sc| <= 32). */
AVX512_INLINE void q3_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    __m512i idx[KQ_NIDX];
    kq_load_idx(q23_idx, idx, 0);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += 110, a += Q8K_BYTES) {
        simd_pf_block(pf, b, 110, ws, R);
        const __m256i nbsums4 =
            _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(avx512_load256(a + Q8K_BSUMS), 2));
        __m512i A[4];
        kq_act_planes(a, A);
        __m512i isum[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m256i sc = q3_scales(wr + 96);
            const __m512i off = avx512_zext256(_mm256_madd_epi16(sc, nbsums4));
            __m512i X[4];
            q3_codes(wr, X);
            isum[r] = kq_dot4(off, X, A, _mm512_castsi256_si512(sc), idx);
        }
        const __m256 d = _mm256_mul_ps(simd_x86_halves(w + 108, ws, R), _mm256_set1_ps(anvil_rd_f32(a)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, _mm256_cvtepi32_ps(avx512_reduce(isum, R))));
    }
    avx512_store_rows(y, acc, R);
}

/* The 256 Q2_K codes (0..3) of the block at b, in plane order. */
AVX512_INLINE void q2_codes(const uint8_t *b, __m512i X[4]) {
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m512i qs = avx512_load(b + 16);
    X[0] = _mm512_and_si512(qs, m3);
    X[1] = _mm512_and_si512(_mm512_srli_epi16(qs, 2), m3);
    X[2] = _mm512_and_si512(_mm512_srli_epi16(qs, 4), m3);
    X[3] = _mm512_and_si512(_mm512_srli_epi16(qs, 6), m3);
}

/* Block: scales[16] (sc | m << 4), qs[64], d, dmin. The mins of four rows
 * are taken in one zmm (a row per 128-bit lane) against the bsums, and
 * kq_lane_sums reduces them for all rows at once. */
AVX512_INLINE void q2_K_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                             simd_pf *pf) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i idx[KQ_NIDX];
    kq_load_idx(q23_idx, idx, 0);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b, w += 84, a += Q8K_BYTES) {
        simd_pf_block(pf, b, 84, ws, R);
        __m512i A[4];
        kq_act_planes(a, A);
        const __m512i blo = _mm512_broadcast_i32x4(avx512_load128(a + Q8K_BSUMS));
        const __m512i bhi = _mm512_broadcast_i32x4(avx512_load128(a + Q8K_BSUMS + 16));
        __m512i ms[2];
        for (int h = 0; h < (R > 4 ? 2 : 1); ++h) {
            const __m512i s4 = kq_lanes4(w + 4 * (size_t)h * ws, ws, R < 4 ? R : 4);
            const __m512i m = _mm512_and_si512(_mm512_srli_epi16(s4, 4), m4);
            ms[h] = _mm512_add_epi32(_mm512_madd_epi16(_mm512_unpacklo_epi8(m, _mm512_setzero_si512()), blo),
                                     _mm512_madd_epi16(_mm512_unpackhi_epi8(m, _mm512_setzero_si512()), bhi));
        }
        __m512i isum[8];
        AVX512_FOR_ROWS for (int r = 0; r < R; ++r) {
            const uint8_t *wr = w + (size_t)r * ws;
            const __m256i sc = _mm256_cvtepu8_epi16(_mm_and_si128(avx512_load128(wr), _mm_set1_epi8(0x0F)));
            __m512i X[4];
            q2_codes(wr, X);
            isum[r] = kq_dot4(_mm512_setzero_si512(), X, A, _mm512_castsi256_si512(sc), idx);
        }
        const __m256 yd = _mm256_set1_ps(anvil_rd_f32(a));
        const __m256 dall = _mm256_mul_ps(yd, simd_x86_halves(w + 80, ws, R));
        const __m256 dmin = _mm256_mul_ps(yd, simd_x86_halves(w + 82, ws, R));
        const __m256 fi = _mm256_cvtepi32_ps(avx512_reduce(isum, R));
        const __m256 fm = _mm256_cvtepi32_ps(kq_lane_sums(ms, R));
        acc = _mm256_add_ps(acc, _mm256_sub_ps(_mm256_mul_ps(dall, fi), _mm256_mul_ps(dmin, fm)));
    }
    avx512_store_rows(y, acc, R);
}

SIMD_DEFINE_ENTRY_POINTS(q2_K, 256, 84)
SIMD_DEFINE_ENTRY_POINTS(q3_K, 256, 110)
SIMD_DEFINE_ENTRY_POINTS(q4_K, 256, 144)
SIMD_DEFINE_ENTRY_POINTS(q5_K, 256, 176)
SIMD_DEFINE_ENTRY_POINTS(q6_K, 256, 210)

/* ---- decoders ---------------------------------------------------------------- */

/* dst[0..16) = ds * (float)(q - offset) [- ms] for the 16 codes at q, two
 * roundings as the reference: the product first, then the subtraction (or
 * none when sub_min is 0). Codes are 0..63, so a signed widening is exact. */
AVX512_INLINE void kq_decode16(const uint8_t *q, int offset, float ds, const int sub_min, float ms, float *dst) {
    const __m512i c = _mm512_sub_epi32(_mm512_cvtepi8_epi32(avx512_load128(q)), _mm512_set1_epi32(offset));
    __m512 v = _mm512_mul_ps(_mm512_set1_ps(ds), _mm512_cvtepi32_ps(c));
    if (sub_min) v = _mm512_sub_ps(v, _mm512_set1_ps(ms));
    _mm512_storeu_ps(dst, v);
}

/* Q4_K / Q5_K: per 32-group g, (d * sc_g) * q - (dmin * m_g). */
AVX512_INLINE void k4_decode(const void *src, float *dst, size_t n, const int five) {
    const uint8_t *b = src;
    const size_t wbytes = five ? 176 : 144, qs_off = five ? 48 : 16;
    const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
    for (size_t i = 0; i < n / 256; ++i, b += wbytes, dst += 256) {
        const float d = avx512_half(b), dmin = avx512_half(b + 2);
        uint8_t sm[64];
        _mm512_storeu_si512(sm, k4_scales4(b + 4, 0, 1));
        uint8_t q[256];
        for (int j = 0; j < 2; ++j) { /* sub-blocks 4j .. 4j + 3 */
            const __m512i v = avx512_load(b + qs_off + 64 * j);
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (five) {
                const __m512i h0 = kq_dup_shift(b + 16, 2);
                const __m512i hx = j ? _mm512_srli_epi16(h0, 4) : h0; /* bits 4j, 4j + 2 to bits 0, 2 */
                lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(hx, 4), b4));
                hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_slli_epi16(hx, 3), b4));
            }
            /* lo = [sb 4j | sb 4j + 2], hi = [sb 4j + 1 | sb 4j + 3] */
            _mm256_storeu_si256((__m256i *)(q + 128 * j), _mm512_castsi512_si256(lo));
            _mm256_storeu_si256((__m256i *)(q + 128 * j + 32), _mm512_castsi512_si256(hi));
            _mm256_storeu_si256((__m256i *)(q + 128 * j + 64), _mm512_extracti64x4_epi64(lo, 1));
            _mm256_storeu_si256((__m256i *)(q + 128 * j + 96), _mm512_extracti64x4_epi64(hi, 1));
        }
        for (int g = 0; g < 8; ++g) {
            const float dg = d * (float)sm[g], mg = dmin * (float)sm[8 + g];
            kq_decode16(q + 32 * g, 0, dg, 1, mg, dst + 32 * g);
            kq_decode16(q + 32 * g + 16, 0, dg, 1, mg, dst + 32 * g + 16);
        }
    }
}

static void q4_K_decode(const void *src, float *dst, size_t n) { k4_decode(src, dst, n, 0); }
static void q5_K_decode(const void *src, float *dst, size_t n) { k4_decode(src, dst, n, 1); }

/* Q6_K: (d * sc_g) * (q - 32) per 16-element group. */
static void q6_K_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += 210, dst += 256) {
        const float d = avx512_half(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        __m512i X[4];
        q6_codes(b, X);
        uint8_t q[256];
        for (int k = 0; k < 4; ++k) _mm512_storeu_si512(q + 64 * k, X[k]);
        for (int g = 0; g < 16; ++g) kq_decode16(q + 16 * g, 32, d * (float)sc[g], 0, 0.0f, dst + 16 * g);
    }
}

/* Stores plane-order code vectors (X[k] = [chunk k | chunk 4 + k]) in
 * element order. */
AVX512_INLINE void kq_store_planes(const __m512i X[4], uint8_t q[256]) {
    for (int k = 0; k < 4; ++k) {
        _mm256_storeu_si256((__m256i *)(q + 32 * k), _mm512_castsi512_si256(X[k]));
        _mm256_storeu_si256((__m256i *)(q + 128 + 32 * k), _mm512_extracti64x4_epi64(X[k], 1));
    }
}

/* Q3_K: (d * sc_g) * q with q in -4..3. */
static void q3_K_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += 110, dst += 256) {
        const float d = avx512_half(b + 108);
        int16_t sc[16];
        _mm256_storeu_si256((__m256i *)sc, q3_scales(b + 96));
        __m512i X[4];
        q3_codes(b, X);
        uint8_t q[256];
        kq_store_planes(X, q);
        for (int g = 0; g < 16; ++g) kq_decode16(q + 16 * g, 4, d * (float)sc[g], 0, 0.0f, dst + 16 * g);
    }
}

/* Q2_K: (d * (sc & 15)) * q - (dmin * (sc >> 4)) per 16-element group. */
static void q2_K_decode(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 256; ++i, b += 84, dst += 256) {
        const float d = avx512_half(b + 80), dmin = avx512_half(b + 82);
        __m512i X[4];
        q2_codes(b, X);
        uint8_t q[256];
        kq_store_planes(X, q);
        for (int g = 0; g < 16; ++g) {
            kq_decode16(q + 16 * g, 0, d * (float)(b[g] & 0xF), 1, dmin * (float)(b[g] >> 4), dst + 16 * g);
        }
    }
}

AVX512_KERNEL(kernel_q2_K, ANVIL_TYPE_Q2_K, ANVIL_TYPE_Q8_K, q2_K_vec_dot, q2_K_gemv, q2_K_gemm, q2_K_decode);
AVX512_KERNEL(kernel_q3_K, ANVIL_TYPE_Q3_K, ANVIL_TYPE_Q8_K, q3_K_vec_dot, q3_K_gemv, q3_K_gemm, q3_K_decode);
AVX512_KERNEL(kernel_q4_K, ANVIL_TYPE_Q4_K, ANVIL_TYPE_Q8_K, q4_K_vec_dot, q4_K_gemv, q4_K_gemm, q4_K_decode);
AVX512_KERNEL(kernel_q5_K, ANVIL_TYPE_Q5_K, ANVIL_TYPE_Q8_K, q5_K_vec_dot, q5_K_gemv, q5_K_gemm, q5_K_decode);
AVX512_KERNEL(kernel_q6_K, ANVIL_TYPE_Q6_K, ANVIL_TYPE_Q8_K, q6_K_vec_dot, q6_K_gemv, q6_K_gemm, q6_K_decode);

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_kquants)[] = { &kernel_q4_K, &kernel_q6_K, &kernel_q5_K,
                                                                         &kernel_q2_K, &kernel_q3_K, NULL };
