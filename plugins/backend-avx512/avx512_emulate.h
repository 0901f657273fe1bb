/* SPDX-License-Identifier: MIT */
/* backend-avx512, test build only: the AVX-512 intrinsics the kernels use,
 * on a CPU without AVX-512, through SIMDe (Debian's libsimde-dev), which
 * implements each intrinsic lane by lane in portable C.
 *
 * Why: the kernels' logic (lane layouts, reductions, shuffles, the order
 * of the float operations) must be checked on every machine that runs the
 * tests, including ones without AVX-512; the emulated plugin built from the
 * same kernel sources (backend-avx512-emu, never installed) is checked
 * against the scalar reference by tests/simd. It says nothing about
 * speed.
 *
 * SIMDe 0.7.4 lacks a few intrinsics; they are defined below from their
 * Intel definitions, lane by lane, on SIMDe's types. Keep them this plain:
 * a mistake here would make the emulated test disagree with the hardware.
 */
#ifndef ANVIL_AVX512_EMULATE_H
#define ANVIL_AVX512_EMULATE_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#include <stdint.h>
#include <string.h>

#ifndef __mmask16
#define __mmask16 simde__mmask16
#endif
#ifndef __mmask64
#define __mmask64 simde__mmask64
#endif

/* Lane-wise access through memory (memcpy: any alignment, no aliasing). */
#define EMU_LANES(T, name, v, n) \
    T name[n];                   \
    memcpy(name, &(v), sizeof name)

static inline int emu_mm512_reduce_add_epi32(__m512i v) {
    EMU_LANES(int32_t, l, v, 16);
    uint32_t s = 0; /* wraps like the instruction */
    for (int i = 0; i < 16; ++i) s += (uint32_t)l[i];
    return (int)s;
}
#define _mm512_reduce_add_epi32 emu_mm512_reduce_add_epi32

/* Max over 16 lanes; the kernels only pass finite values >= +0. */
static inline float emu_mm512_reduce_max_ps(__m512 v) {
    EMU_LANES(float, l, v, 16);
    float m = l[0];
    for (int i = 1; i < 16; ++i) m = l[i] > m ? l[i] : m;
    return m;
}
#define _mm512_reduce_max_ps emu_mm512_reduce_max_ps

/* vpmovdb: the low byte of each int32 lane (truncation). */
static inline __m128i emu_mm512_cvtepi32_epi8(__m512i v) {
    EMU_LANES(int32_t, l, v, 16);
    uint8_t b[16];
    for (int i = 0; i < 16; ++i) b[i] = (uint8_t)((uint32_t)l[i] & 0xFFu);
    __m128i r;
    memcpy(&r, b, sizeof r);
    return r;
}
#define _mm512_cvtepi32_epi8 emu_mm512_cvtepi32_epi8

/* vpmovzxbw: 32 bytes -> 32 uint16 lanes. */
static inline __m512i emu_mm512_cvtepu8_epi16(__m256i v) {
    EMU_LANES(uint8_t, l, v, 32);
    uint16_t w[32];
    for (int i = 0; i < 32; ++i) w[i] = l[i];
    __m512i r;
    memcpy(&r, w, sizeof r);
    return r;
}
#define _mm512_cvtepu8_epi16 emu_mm512_cvtepu8_epi16

/* vcvtph2ps on 16 halves: two 8-lane conversions (SIMDe has those). */
static inline __m512 emu_mm512_cvtph_ps(__m256i h) {
    const __m256 lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    const __m256 hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}
#define _mm512_cvtph_ps emu_mm512_cvtph_ps

/* vshufi64x2 selects whole 128-bit lanes exactly as vshufi32x4 does (they
 * differ only under a write mask, which the kernels do not use). */
#define _mm512_shuffle_i64x2(a, b, imm) _mm512_shuffle_i32x4((a), (b), (imm))

/* SIMDe 0.7.4 aliases _mm512_madd_epi16 to its 4-argument masked form. */
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16((a), (b))

/* vpsrad: arithmetic right shift; counts above 31 fill with the sign. */
static inline __m512i emu_mm512_srai_epi32(__m512i v, unsigned imm) {
    EMU_LANES(int32_t, l, v, 16);
    const unsigned n = imm > 31 ? 31 : imm;
    for (int i = 0; i < 16; ++i) l[i] = (int32_t)(l[i] >> n); /* gcc: arithmetic */
    __m512i r;
    memcpy(&r, l, sizeof r);
    return r;
}
#define _mm512_srai_epi32 emu_mm512_srai_epi32

/* vpshufd: within each 128-bit lane, int32 j = lane's int32 (imm >> 2j) & 3. */
static inline __m512i emu_mm512_shuffle_epi32(__m512i v, unsigned imm) {
    EMU_LANES(int32_t, l, v, 16);
    int32_t o[16];
    for (int i = 0; i < 16; ++i) o[i] = l[(i & ~3) + (int)((imm >> (2 * (i & 3))) & 3u)];
    __m512i r;
    memcpy(&r, o, sizeof r);
    return r;
}
#define _mm512_shuffle_epi32(v, imm) emu_mm512_shuffle_epi32((v), (unsigned)(imm))

/* vpmovsxbd: 16 int8 -> 16 int32. */
static inline __m512i emu_mm512_cvtepi8_epi32(__m128i v) {
    EMU_LANES(int8_t, l, v, 16);
    int32_t o[16];
    for (int i = 0; i < 16; ++i) o[i] = l[i];
    __m512i r;
    memcpy(&r, o, sizeof r);
    return r;
}
#define _mm512_cvtepi8_epi32 emu_mm512_cvtepi8_epi32

/* vcvtdq2ps: int32 -> float, rounding to nearest even (C's conversion in
 * the default rounding mode). */
static inline __m512 emu_mm512_cvtepi32_ps(__m512i v) {
    EMU_LANES(int32_t, l, v, 16);
    float o[16];
    for (int i = 0; i < 16; ++i) o[i] = (float)l[i];
    __m512 r;
    memcpy(&r, o, sizeof r);
    return r;
}
#define _mm512_cvtepi32_ps emu_mm512_cvtepi32_ps

/* vcvttps2dq: truncation; NaN and out-of-range lanes give INT32_MIN. */
static inline __m512i emu_mm512_cvttps_epi32(__m512 v) {
    EMU_LANES(float, l, v, 16);
    int32_t o[16];
    for (int i = 0; i < 16; ++i) o[i] = (l[i] >= -2147483648.0f && l[i] < 2147483648.0f) ? (int32_t)l[i] : INT32_MIN;
    __m512i r;
    memcpy(&r, o, sizeof r);
    return r;
}
#define _mm512_cvttps_epi32 emu_mm512_cvttps_epi32

#endif
