/* SPDX-License-Identifier: MIT */
/* backend-avx2: the trits of one 52-byte PTQTP plane (TQ1_0's base-3
 * packing, anvil/formats/ptqtp.h) in element order, shared by the PTQTP
 * (avx2_ptqtp.c) and PTQTP-S (avx2_ptqtps.c) kernels and decoders.
 *
 * Biased (x ^ 0x80, once per load), a byte's state s makes the signed
 * comparisons direct: trit +1 for s > 42 (x >= 171), -1 for s < -42
 * (x <= 85); the next trit's state is 3 s mod 256 (3x mod 256, biased:
 * 3(s + 128) - 128 = 3s + 256). The eight 32-trit vectors of a plane, in
 * element order, as in avx2_ternary.c's TQ1_0: five levels of qs[0..31],
 * then qs[32..47] with levels 2t and 2t+1 in the two lanes, then its last
 * level beside qh. Vector v covers elements 32 v .. 32 v + 31.
 */
#ifndef ANVIL_AVX2_TRIT_PLANES_H
#define ANVIL_AVX2_TRIT_PLANES_H

#include "avx2_common.h"

AVX2_INLINE __m256i trit_times3(__m256i x) { return _mm256_add_epi8(x, _mm256_add_epi8(x, x)); }
AVX2_INLINE __m256i trit_times9(__m256i x) { return trit_times3(trit_times3(x)); }

/* The eight state vectors of the plane at p, biased, in element order. */
AVX2_INLINE void trit_plane_states(const uint8_t *p, __m256i s[8]) {
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    __m256i q = _mm256_xor_si256(avx2_load(p), bias);
    for (int k = 0; k < 5; ++k) {
        s[k] = q;
        q = trit_times3(q);
    }
    /* bytes 32..47: low lane level 2t, high lane level 2t + 1 */
    const __m256i b = _mm256_xor_si256(avx2_load_lane(p + 32), bias);
    __m256i v = _mm256_blend_epi32(b, trit_times3(b), 0xF0);
    s[5] = v;
    v = trit_times9(v);
    s[6] = v;
    v = trit_times9(v);
    /* bytes 48..51: dword t of the high lane holds them at level t */
    const __m256i c0 = _mm256_xor_si256(_mm256_set1_epi32((int)anvil_rd_u32(p + 48)), bias);
    const __m256i c1 = trit_times3(c0), c2 = trit_times3(c1), c3 = trit_times3(c2);
    const __m256i c = _mm256_blend_epi32(_mm256_blend_epi32(c0, c1, 0x22), _mm256_blend_epi32(c2, c3, 0x88), 0xCC);
    s[7] = _mm256_blend_epi32(v, c, 0xF0);
}

/* The trits of a biased state vector as int8 -1 / 0 / +1. */
AVX2_INLINE __m256i trit_values(__m256i s) {
    const __m256i plus = _mm256_cmpgt_epi8(s, _mm256_set1_epi8(42));
    const __m256i minus = _mm256_cmpgt_epi8(_mm256_set1_epi8(-42), s);
    return _mm256_sub_epi8(minus, plus); /* masks are -1: -1 - 0 = -1, 0 - (-1) = +1 */
}

#endif
