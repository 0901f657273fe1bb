/* SPDX-License-Identifier: MIT */
/* backend-avx512: one 52-byte base-3 trit group (a TQ1_0 block's trits, a
 * PTQTP plane) against activations prepared by simd-common's
 * simd_trit_act.h, shared by avx512_ternary.c and avx512_ptqtp.c.
 *
 * The group is one load; its five trit levels are five multiplies by 3
 * (bytewise, mod 256) of the same vector, level j against Q[j].
 *
 * VNNI: no trit is formed. With s_j the level-j states, 3 s_j = 256 d_j +
 * s_{j+1} exactly (d_j the base-3 digit, trit d_j - 1), so
 *     sum t q = (3 sum_j s_j Q_j - sum_j s_{j+1} Q_j) / 256 - sum q
 * -- ten vpdpbusd of the raw states (u8) against the activations (s8),
 * int32 lanes far from overflow (5 * 4 * 255 * 127 per lane), the division
 * exact (every element's term is a multiple of 256).
 *
 * Without VNNI (vpmaddubsw would saturate on 255 * 127 pairs): the states
 * biased (x ^ 0x80, so the next is still 3 s mod 256) compare signed, trit
 * +1 for s > 42, -1 for s < -42; the codes are kept under the first mask
 * and negated under the second (exact: Q8_K codes lie in [-127, 127]) and
 * widened by vpmaddubsw against ones (5 * 2 * 127 per int16 lane) and one
 * vpmaddwd. Either way the sums are exact integers.
 */
#ifndef ANVIL_AVX512_TRIT_GROUP_H
#define ANVIL_AVX512_TRIT_GROUP_H

#include "avx512_common.h"
#include "simd_trit_act.h"

#define TRIT_GROUP_BYTES 52

AVX512_INLINE __m512i trit_x3(__m512i x) { return _mm512_add_epi8(x, _mm512_add_epi8(x, x)); }

/* The 52 bytes at p in lanes 0..51, zeros above (never reads past them). */
AVX512_INLINE __m512i trit_group_load(const uint8_t *p) {
#if AVX512_EMULATED
    uint8_t t[64] = { 0 };
    memcpy(t, p, TRIT_GROUP_BYTES);
    return avx512_load(t);
#else
    return _mm512_maskz_loadu_epi8(0x000FFFFFFFFFFFFFull, p);
#endif
}

/* The codes of act times the trits of biased state s: kept (+1), negated (-1), 0. */
AVX512_INLINE __m512i trit_group_times(__m512i s, __m512i act) {
    const __mmask64 plus = _mm512_cmpgt_epi8_mask(s, _mm512_set1_epi8(42));
    const __mmask64 minus = _mm512_cmplt_epi8_mask(s, _mm512_set1_epi8(-42));
    return _mm512_mask_sub_epi8(_mm512_maskz_mov_epi8(plus, act), minus, _mm512_setzero_si512(), act);
}

/* The group at p against the prepared activations Q[5], as sixteen int32
 * lanes: with VNNI 256 (sum d q), else sum t q (see the top). */
AVX512_INLINE __m512i trit_group_dot(const uint8_t *p, const __m512i Q[5]) {
#if AVX512_VNNI
    __m512i s = trit_group_load(p), a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    for (int j = 0; j < 5; ++j) {
        a = _mm512_dpbusd_epi32(a, s, Q[j]);
        s = trit_x3(s);
        b = _mm512_dpbusd_epi32(b, s, Q[j]);
    }
    /* 3 a by vpmulld: one operation where two adds were (the kernel is
     * bound by its count of vector operations; +2-4 % measured) */
    return _mm512_sub_epi32(_mm512_mullo_epi32(a, _mm512_set1_epi32(3)), b);
#else
    __m512i s = _mm512_xor_si512(trit_group_load(p), _mm512_set1_epi8((char)0x80));
    __m512i acc = _mm512_maddubs_epi16(_mm512_set1_epi8(1), trit_group_times(s, Q[0]));
    for (int j = 1; j < 5; ++j) {
        s = trit_x3(s);
        acc = _mm512_add_epi16(acc, _mm512_maddubs_epi16(_mm512_set1_epi8(1), trit_group_times(s, Q[j])));
    }
    return _mm512_madd_epi16(acc, _mm512_set1_epi16(1));
#endif
}

/* The exact sums of the R rows' group dots, from trit_group_dot's lanes. */
AVX512_INLINE __m256i trit_group_sums(const __m512i *m, const int R, const simd_trit_act *A) {
    const __m256i v = avx512_reduce(m, R);
#if AVX512_VNNI
    return _mm256_sub_epi32(_mm256_srai_epi32(v, 8), _mm256_set1_epi32(A->total));
#else
    (void)A;
    return v;
#endif
}

#endif
