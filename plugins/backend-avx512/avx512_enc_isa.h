/* SPDX-License-Identifier: MIT */
/* backend-avx512: the vector layer the shared weight encoders
 * (plugins/simd-common/simd_enc_*.h) are written against, on AVX-512
 * F/BW/VL (16 float lanes, k-mask registers). Compiled once, not per VNNI
 * variant: no encoder uses an integer dot. With AVX512_EMULATED the same
 * intrinsics come from SIMDe (avx512_emulate.h), for the test build.
 *
 * The contract of every ev_* operation (documented in simd_enc_common.h):
 * each float lane performs exactly the IEEE operation the scalar reference
 * performs (no fused multiply-add: the build has -ffp-contract=off, and no
 * operation here fuses), so a lane that follows the reference's sequence
 * of operations rounds like it. Selections are spelled as compare + blend,
 * never min/max instructions, whose operand order compilers may swap.
 * Only F/BW/VL instructions: float bitwise operations go through the
 * integer domain (the AVX512DQ forms are not required by the backend).
 */
#ifndef ANVIL_AVX512_ENC_ISA_H
#define ANVIL_AVX512_ENC_ISA_H

#include <stdint.h>
#include <string.h>

#if AVX512_EMULATED
#include "avx512_emulate.h"
#else
#include <immintrin.h>
#endif

#include "anvil/numeric.h"

#define EV_LANES 16
#define EV_INLINE static inline __attribute__((always_inline))
#if AVX512_EMULATED
#define EV_VARIANT "avx512-emu"
#else
#define EV_VARIANT "avx512"
#endif
#define EV_TABLE(family) anvil_avx512_encoders_##family

typedef __m512 ev_f;
typedef __m512i ev_i;
typedef __mmask16 ev_m;

EV_INLINE ev_f ev_load(const float *p) { return _mm512_loadu_ps(p); }
EV_INLINE void ev_store(float *p, ev_f v) { _mm512_storeu_ps(p, v); }
EV_INLINE ev_f ev_set1(float v) { return _mm512_set1_ps(v); }
EV_INLINE ev_f ev_add(ev_f a, ev_f b) { return _mm512_add_ps(a, b); }
EV_INLINE ev_f ev_sub(ev_f a, ev_f b) { return _mm512_sub_ps(a, b); }
EV_INLINE ev_f ev_mul(ev_f a, ev_f b) { return _mm512_mul_ps(a, b); }
EV_INLINE ev_f ev_div(ev_f a, ev_f b) { return _mm512_div_ps(a, b); }
EV_INLINE ev_f ev_sqrt(ev_f a) { return _mm512_sqrt_ps(a); }
EV_INLINE ev_i ev_bits(ev_f a) { return _mm512_castps_si512(a); }
EV_INLINE ev_f ev_from_bits(ev_i a) { return _mm512_castsi512_ps(a); }
EV_INLINE ev_f ev_abs(ev_f a) { return ev_from_bits(_mm512_and_si512(ev_bits(a), _mm512_set1_epi32(0x7fffffff))); }
EV_INLINE ev_f ev_neg(ev_f a) {
    return ev_from_bits(_mm512_xor_si512(ev_bits(a), _mm512_set1_epi32((int)0x80000000u)));
}

/* Comparisons as C evaluates them: ordered, except != (true for NaN). */
EV_INLINE ev_m ev_lt(ev_f a, ev_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
EV_INLINE ev_m ev_le(ev_f a, ev_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
EV_INLINE ev_m ev_gt(ev_f a, ev_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
EV_INLINE ev_m ev_ge(ev_f a, ev_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
EV_INLINE ev_m ev_eq(ev_f a, ev_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
EV_INLINE ev_m ev_ne(ev_f a, ev_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
EV_INLINE ev_m ev_mand(ev_m a, ev_m b) { return (ev_m)(a & b); }
EV_INLINE ev_m ev_mor(ev_m a, ev_m b) { return (ev_m)(a | b); }
EV_INLINE ev_m ev_mandnot(ev_m a, ev_m b) { return (ev_m)(a & (ev_m)~b); } /* a && !b */
EV_INLINE int ev_many(ev_m a) { return a != 0; }
EV_INLINE unsigned ev_mbits(ev_m a) { return (unsigned)a; }
/* m ? b : a, lane by lane. */
EV_INLINE ev_f ev_blend(ev_m m, ev_f a, ev_f b) { return _mm512_mask_blend_ps(m, a, b); }
/* max(a, b) of values that are >= +0 and not NaN (magnitudes): there the
 * instruction's operand order cannot matter. */
EV_INLINE ev_f ev_max_mag(ev_f a, ev_f b) { return _mm512_max_ps(a, b); }
/* a < b ? a : b and a > b ? a : b, lane by lane (NaN or equal lanes: b). */
EV_INLINE ev_f ev_min_lt(ev_f a, ev_f b) { return _mm512_min_ps(a, b); }
EV_INLINE ev_f ev_max_gt(ev_f a, ev_f b) { return _mm512_max_ps(a, b); }
/* min(max(a, lo), hi) in lanes that are not NaN (NaN lanes: unspecified). */
EV_INLINE ev_f ev_fclamp(ev_f a, float lo, float hi) {
    return _mm512_min_ps(_mm512_max_ps(a, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
}

/* Integers (int32 lanes). */
EV_INLINE ev_i ev_iset1(int v) { return _mm512_set1_epi32(v); }
EV_INLINE ev_i ev_iadd(ev_i a, ev_i b) { return _mm512_add_epi32(a, b); }
EV_INLINE ev_i ev_isub(ev_i a, ev_i b) { return _mm512_sub_epi32(a, b); }
EV_INLINE ev_i ev_imin(ev_i a, ev_i b) { return _mm512_min_epi32(a, b); }
EV_INLINE ev_i ev_imax(ev_i a, ev_i b) { return _mm512_max_epi32(a, b); }
EV_INLINE ev_i ev_iand(ev_i a, ev_i b) { return _mm512_and_si512(a, b); }
EV_INLINE ev_i ev_ior(ev_i a, ev_i b) { return _mm512_or_si512(a, b); }
#define ev_ishl(a, n) _mm512_slli_epi32((a), (n))
#define ev_isra(a, n) _mm512_srai_epi32((a), (n))
#define ev_isrl(a, n) _mm512_srli_epi32((a), (n))
/* Shift left by a count known only at run time. */
EV_INLINE ev_i ev_ishlv(ev_i a, int n) { return _mm512_sll_epi32(a, _mm_cvtsi32_si128(n)); }
EV_INLINE ev_m ev_ieq(ev_i a, ev_i b) { return _mm512_cmpeq_epi32_mask(a, b); }
EV_INLINE ev_m ev_igt(ev_i a, ev_i b) { return _mm512_cmpgt_epi32_mask(a, b); }
EV_INLINE ev_i ev_iblend(ev_m m, ev_i a, ev_i b) { return _mm512_mask_blend_epi32(m, a, b); }
/* a + 1 in the lanes of m. */
EV_INLINE ev_i ev_iinc(ev_m m, ev_i a) { return _mm512_mask_add_epi32(a, m, a, _mm512_set1_epi32(1)); }
EV_INLINE ev_i ev_iload(const int32_t *p) { return _mm512_loadu_si512(p); }
EV_INLINE void ev_istore(int32_t *p, ev_i v) { _mm512_storeu_si512(p, v); }
/* int32 -> float (exact for the small codes used here). */
EV_INLINE ev_f ev_cvt(ev_i a) { return _mm512_cvtepi32_ps(a); }
/* float -> int32 by truncation, as C's cast on x86-64: NaN and values out
 * of int32 range give INT32_MIN (cvttss2si). */
EV_INLINE ev_i ev_cvtt(ev_f a) { return _mm512_cvttps_epi32(a); }

/* The low byte of each lane (vpmovdb), 16 bytes. */
EV_INLINE void ev_store_u8(uint8_t *p, ev_i v) { _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(v)); }

/* Largest lane of a vector of finite values (max is exact in any order; a
 * zero result may be either zero). */
EV_INLINE float ev_hmax(ev_f v) { return _mm512_reduce_max_ps(v); }

/* A 16-entry float table indexed per lane (index in 0..15). */
typedef ev_f ev_lut16;
EV_INLINE ev_lut16 ev_lut16_load(const float t[16]) { return _mm512_loadu_ps(t); }
EV_INLINE ev_f ev_lut16_get(ev_lut16 t, ev_i idx) { return _mm512_permutexvar_ps(idx, t); }

/* binary32 -> binary16 of a value that is not NaN: round to nearest even,
 * as anvil_fp32_to_fp16 (which differs only in NaN payloads). */
EV_INLINE uint16_t ev_fp16(float v) {
#if AVX512_EMULATED
    return anvil_fp32_to_fp16(v);
#else
    return (uint16_t)_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
#endif
}

#endif
