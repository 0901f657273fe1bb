/* SPDX-License-Identifier: MIT */
/* backend-scalar: the vector layer the shared weight encoders
 * (plugins/simd-common/simd_enc_*.h) are written against, on GCC/clang
 * generic vectors: 4 float lanes of 16 bytes, no intrinsics and no ISA
 * flags, so it builds for any target those compilers have (plain x86-64
 * SSE2, aarch64, and the rest). 16 bytes because every 64-bit target has
 * registers that wide or splits them cheaply; wider generic vectors are
 * scalarised on the baseline x86-64 build, and run slower.
 *
 * The contract of every ev_* operation (documented in simd_enc_common.h):
 * each float lane performs exactly the IEEE operation the scalar reference
 * performs (the build has -ffp-contract=off, so nothing fuses), so a lane
 * that follows the reference's sequence of operations rounds like it.
 * Selections are bit masks (and/andnot/or), never min/max, so NaN and
 * signed zeros pick what the reference's comparisons pick. The one
 * conversion C leaves undefined, float -> int32 out of range or NaN, is
 * given x86-64's answer (INT32_MIN, which ggml's bytes were made with)
 * explicitly: __builtin_convertvector only sees lanes that are in range.
 */
#ifndef ANVIL_PORTABLE_ENC_ISA_H
#define ANVIL_PORTABLE_ENC_ISA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "anvil/numeric.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define EV_LANES 4
#define EV_INLINE static inline __attribute__((always_inline))
#define EV_VARIANT "portable"
#define EV_TABLE(family) anvil_portable_encoders_##family

typedef float ev_f __attribute__((vector_size(16)));
typedef int32_t ev_i __attribute__((vector_size(16)));
typedef uint32_t ev_u __attribute__((vector_size(16)));
typedef uint64_t ev_q __attribute__((vector_size(16)));
typedef ev_i ev_m; /* lanes all-ones (true) or all-zeros */

EV_INLINE ev_f ev_load(const float *p) {
    ev_f v;
    memcpy(&v, p, sizeof v);
    return v;
}
EV_INLINE void ev_store(float *p, ev_f v) { memcpy(p, &v, sizeof v); }
EV_INLINE ev_f ev_set1(float v) { return (ev_f){ v, v, v, v }; }
EV_INLINE ev_f ev_add(ev_f a, ev_f b) { return a + b; }
EV_INLINE ev_f ev_sub(ev_f a, ev_f b) { return a - b; }
EV_INLINE ev_f ev_mul(ev_f a, ev_f b) { return a * b; }
EV_INLINE ev_f ev_div(ev_f a, ev_f b) { return a / b; }
/* Generic vectors have no square root: SSE2's sqrtps (IEEE, as sqrtf)
 * where the target has it, else lane by lane. The operands here are sums
 * of squares and weights, never negative. */
#if defined(__SSE2__)
EV_INLINE ev_f ev_sqrt(ev_f a) { return (ev_f)_mm_sqrt_ps((__m128)a); }
#else
EV_INLINE ev_f ev_sqrt(ev_f a) { return (ev_f){ sqrtf(a[0]), sqrtf(a[1]), sqrtf(a[2]), sqrtf(a[3]) }; }
#endif
/* Casts between vector types of one size reinterpret the bits. */
EV_INLINE ev_i ev_bits(ev_f a) { return (ev_i)a; }
EV_INLINE ev_f ev_from_bits(ev_i a) { return (ev_f)a; }
EV_INLINE ev_f ev_abs(ev_f a) { return (ev_f)((ev_i)a & 0x7fffffff); }
EV_INLINE ev_f ev_neg(ev_f a) { return (ev_f)((ev_i)a ^ (int32_t)0x80000000u); }

/* Comparisons as C evaluates them (GCC and clang give each lane the scalar
 * comparison): ordered; != is the negation of ==, true for NaN. */
EV_INLINE ev_m ev_lt(ev_f a, ev_f b) { return a < b; }
EV_INLINE ev_m ev_le(ev_f a, ev_f b) { return a <= b; }
EV_INLINE ev_m ev_gt(ev_f a, ev_f b) { return a > b; }
EV_INLINE ev_m ev_ge(ev_f a, ev_f b) { return a >= b; }
EV_INLINE ev_m ev_eq(ev_f a, ev_f b) { return a == b; }
EV_INLINE ev_m ev_ne(ev_f a, ev_f b) { return ~(a == b); }
EV_INLINE ev_m ev_mand(ev_m a, ev_m b) { return a & b; }
EV_INLINE ev_m ev_mor(ev_m a, ev_m b) { return a | b; }
EV_INLINE ev_m ev_mandnot(ev_m a, ev_m b) { return a & ~b; } /* a && !b */
/* Mask bits: SSE2's movmskps (one instruction, the sign bits of lanes
 * that are all-ones or all-zeros). Otherwise horizontal steps go through
 * 64-bit lanes (lane pairs), which every target moves to scalar registers
 * cheaply; lane extraction one by one is slow. */
#if defined(__SSE2__)
EV_INLINE int ev_many(ev_m a) { return _mm_movemask_ps((__m128)a) != 0; }
EV_INLINE unsigned ev_mbits(ev_m a) { return (unsigned)_mm_movemask_ps((__m128)a); }
#else
EV_INLINE int ev_many(ev_m a) {
    uint64_t h[2];
    memcpy(h, &a, sizeof h);
    return (h[0] | h[1]) != 0;
}
EV_INLINE unsigned ev_mbits(ev_m a) {
    ev_q w = (ev_q)(a & (ev_i){ 1, 2, 4, 8 });
    w |= w >> 32;
    return (unsigned)(w[0] | w[1]) & 15u;
}
#endif
/* m ? b : a, lane by lane. */
EV_INLINE ev_i ev_iblend(ev_m m, ev_i a, ev_i b) { return (a & ~m) | (b & m); }
/* a + 1 in the lanes of m (a true lane is all ones: -1). */
EV_INLINE ev_i ev_iinc(ev_m m, ev_i a) { return (ev_i)((ev_u)a - (ev_u)m); }
EV_INLINE ev_f ev_blend(ev_m m, ev_f a, ev_f b) { return (ev_f)ev_iblend(m, (ev_i)a, (ev_i)b); }
/* max(a, b) of values that are >= +0 and not NaN (magnitudes): any max
 * gives the same lanes. SSE2 is part of x86-64 itself (no ISA flag), and
 * its maxps is one instruction where compare-and-blend is four. */
/* a < b ? a : b and a > b ? a : b, lane by lane (NaN or equal lanes: b):
 * exactly SSE2's minps and maxps. */
#if defined(__SSE2__)
EV_INLINE ev_f ev_max_mag(ev_f a, ev_f b) { return (ev_f)_mm_max_ps((__m128)a, (__m128)b); }
EV_INLINE ev_f ev_min_lt(ev_f a, ev_f b) { return (ev_f)_mm_min_ps((__m128)a, (__m128)b); }
EV_INLINE ev_f ev_max_gt(ev_f a, ev_f b) { return (ev_f)_mm_max_ps((__m128)a, (__m128)b); }
EV_INLINE ev_f ev_fclamp(ev_f a, float lo, float hi) {
    return (ev_f)_mm_min_ps(_mm_max_ps((__m128)a, _mm_set1_ps(lo)), _mm_set1_ps(hi));
}
#else
EV_INLINE ev_f ev_max_mag(ev_f a, ev_f b) { return ev_blend(a < b, a, b); }
EV_INLINE ev_f ev_min_lt(ev_f a, ev_f b) { return ev_blend(a < b, b, a); }
EV_INLINE ev_f ev_max_gt(ev_f a, ev_f b) { return ev_blend(a > b, b, a); }
EV_INLINE ev_f ev_fclamp(ev_f a, float lo, float hi) { return ev_min_lt(ev_max_gt(a, ev_set1(lo)), ev_set1(hi)); }
#endif

/* Integers (int32 lanes; shifts of signed lanes are arithmetic, as C's on
 * GCC and clang). */
EV_INLINE ev_i ev_iset1(int v) { return (ev_i){ v, v, v, v }; }
EV_INLINE ev_i ev_iadd(ev_i a, ev_i b) { return (ev_i)((ev_u)a + (ev_u)b); } /* wraps, as the instructions */
EV_INLINE ev_i ev_isub(ev_i a, ev_i b) { return (ev_i)((ev_u)a - (ev_u)b); }
EV_INLINE ev_i ev_imin(ev_i a, ev_i b) { return ev_iblend(b < a, a, b); }
EV_INLINE ev_i ev_imax(ev_i a, ev_i b) { return ev_iblend(b > a, a, b); }
EV_INLINE ev_i ev_iand(ev_i a, ev_i b) { return a & b; }
EV_INLINE ev_i ev_ior(ev_i a, ev_i b) { return a | b; }
#define ev_ishl(a, n) ((ev_i)((ev_u)(a) << (n)))
#define ev_isra(a, n) ((a) >> (n))
#define ev_isrl(a, n) ((ev_i)((ev_u)(a) >> (n)))
/* Shift left by a count known only at run time. */
EV_INLINE ev_i ev_ishlv(ev_i a, int n) { return (ev_i)((ev_u)a << n); }
EV_INLINE ev_m ev_ieq(ev_i a, ev_i b) { return a == b; }
EV_INLINE ev_m ev_igt(ev_i a, ev_i b) { return a > b; }
EV_INLINE ev_i ev_iload(const int32_t *p) {
    ev_i v;
    memcpy(&v, p, sizeof v);
    return v;
}
EV_INLINE void ev_istore(int32_t *p, ev_i v) { memcpy(p, &v, sizeof v); }
/* int32 -> float (exact for the small codes used here). */
EV_INLINE ev_f ev_cvt(ev_i a) { return __builtin_convertvector(a, ev_f); }
/* float -> int32 by truncation, as x86-64's cast: NaN and values out of
 * int32 range give INT32_MIN. Lanes with |a| >= 2^31 or NaN are zeroed
 * before the conversion (which C leaves undefined for them) and given
 * INT32_MIN after; -2^31 itself is among them, and INT32_MIN is its value. */
#if defined(__SSE2__)
EV_INLINE ev_i ev_cvtt(ev_f a) { return (ev_i)_mm_cvttps_epi32((__m128)a); } /* the x86-64 answer itself */
#else
EV_INLINE ev_i ev_cvtt(ev_f a) {
    const ev_m ok = ev_abs(a) < ev_set1(2147483648.0f);
    const ev_i t = __builtin_convertvector((ev_f)((ev_i)a & ok), ev_i);
    return t | (~ok & INT32_MIN);
}
#endif

/* The low byte of each lane, 4 bytes (SSE2: masked to 0..255, so the
 * saturating packs are plain narrowing). Otherwise: in each 64-bit half, byte 0 and
 * byte 4 brought together (b0 | b1 << 8), then the two halves joined. */
#if defined(__SSE2__)
EV_INLINE void ev_store_u8(uint8_t *p, ev_i v) {
    const __m128i w = _mm_and_si128((__m128i)v, _mm_set1_epi32(0xff));
    const __m128i b = _mm_packus_epi16(_mm_packs_epi32(w, w), _mm_setzero_si128());
    const int r = _mm_cvtsi128_si32(b);
    memcpy(p, &r, sizeof r);
}
#else
EV_INLINE void ev_store_u8(uint8_t *p, ev_i v) {
    ev_q w = (ev_q)(v & 0xff);
    w |= w >> 24;
    const uint32_t r = (uint32_t)(w[0] & 0xffff) | (uint32_t)(w[1] << 16);
    memcpy(p, &r, sizeof r);
}
#endif

/* Largest lane of a vector of finite values (max is exact in any order; a
 * zero result may be either zero). */
EV_INLINE float ev_hmax(ev_f v) {
    const float a = v[0] > v[1] ? v[0] : v[1];
    const float b = v[2] > v[3] ? v[2] : v[3];
    return a > b ? a : b;
}

/* A 16-entry float table indexed per lane (index in 0..15). */
typedef struct {
    float t[16];
} ev_lut16;
EV_INLINE ev_lut16 ev_lut16_load(const float t[16]) {
    ev_lut16 r;
    memcpy(r.t, t, sizeof r.t);
    return r;
}
EV_INLINE ev_f ev_lut16_get(ev_lut16 t, ev_i idx) {
    return (ev_f){ t.t[idx[0] & 15], t.t[idx[1] & 15], t.t[idx[2] & 15], t.t[idx[3] & 15] };
}

/* binary32 -> binary16 of a value that is not NaN: round to nearest even. */
EV_INLINE uint16_t ev_fp16(float v) { return anvil_fp32_to_fp16(v); }

#endif
