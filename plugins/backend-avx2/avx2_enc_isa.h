/* SPDX-License-Identifier: MIT */
/* backend-avx2: the vector layer the shared weight encoders
 * (plugins/simd-common/simd_enc_*.h) are written against, on AVX2 + F16C
 * (8 float lanes; masks are all-ones/all-zeros lanes of a vector).
 *
 * The contract of every ev_* operation (documented in simd_enc_common.h):
 * each float lane performs exactly the IEEE operation the scalar reference
 * performs (the build has -ffp-contract=off and nothing here fuses), so a
 * lane that follows the reference's sequence of operations rounds like it.
 * Selections are compare + blend, never min/max instructions, whose operand
 * order compilers may swap.
 */
#ifndef ANVIL_AVX2_ENC_ISA_H
#define ANVIL_AVX2_ENC_ISA_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "anvil/numeric.h"

#define EV_LANES 8
#define EV_INLINE static inline __attribute__((always_inline))
#define EV_VARIANT "avx2"
#define EV_TABLE(family) anvil_avx2_encoders_##family

typedef __m256 ev_f;
typedef __m256i ev_i;
typedef __m256 ev_m;

EV_INLINE ev_f ev_load(const float *p) { return _mm256_loadu_ps(p); }
EV_INLINE void ev_store(float *p, ev_f v) { _mm256_storeu_ps(p, v); }
EV_INLINE ev_f ev_set1(float v) { return _mm256_set1_ps(v); }
EV_INLINE ev_f ev_add(ev_f a, ev_f b) { return _mm256_add_ps(a, b); }
EV_INLINE ev_f ev_sub(ev_f a, ev_f b) { return _mm256_sub_ps(a, b); }
EV_INLINE ev_f ev_mul(ev_f a, ev_f b) { return _mm256_mul_ps(a, b); }
EV_INLINE ev_f ev_div(ev_f a, ev_f b) { return _mm256_div_ps(a, b); }
EV_INLINE ev_f ev_sqrt(ev_f a) { return _mm256_sqrt_ps(a); }
EV_INLINE ev_i ev_bits(ev_f a) { return _mm256_castps_si256(a); }
EV_INLINE ev_f ev_from_bits(ev_i a) { return _mm256_castsi256_ps(a); }
EV_INLINE ev_f ev_abs(ev_f a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
EV_INLINE ev_f ev_neg(ev_f a) { return _mm256_xor_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u))); }

/* Comparisons as C evaluates them: ordered, except != (true for NaN). */
EV_INLINE ev_m ev_lt(ev_f a, ev_f b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
EV_INLINE ev_m ev_le(ev_f a, ev_f b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
EV_INLINE ev_m ev_gt(ev_f a, ev_f b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
EV_INLINE ev_m ev_ge(ev_f a, ev_f b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
EV_INLINE ev_m ev_eq(ev_f a, ev_f b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
EV_INLINE ev_m ev_ne(ev_f a, ev_f b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
EV_INLINE ev_m ev_mand(ev_m a, ev_m b) { return _mm256_and_ps(a, b); }
EV_INLINE ev_m ev_mor(ev_m a, ev_m b) { return _mm256_or_ps(a, b); }
EV_INLINE ev_m ev_mandnot(ev_m a, ev_m b) { return _mm256_andnot_ps(b, a); } /* a && !b */
EV_INLINE int ev_many(ev_m a) { return _mm256_movemask_ps(a) != 0; }
EV_INLINE unsigned ev_mbits(ev_m a) { return (unsigned)_mm256_movemask_ps(a); }
/* m ? b : a, lane by lane. */
EV_INLINE ev_f ev_blend(ev_m m, ev_f a, ev_f b) { return _mm256_blendv_ps(a, b, m); }
/* max(a, b) of values that are >= +0 and not NaN (magnitudes): there the
 * instruction's operand order cannot matter. */
EV_INLINE ev_f ev_max_mag(ev_f a, ev_f b) { return _mm256_max_ps(a, b); }
/* a < b ? a : b and a > b ? a : b, lane by lane (NaN or equal lanes: b). */
EV_INLINE ev_f ev_min_lt(ev_f a, ev_f b) { return _mm256_min_ps(a, b); }
EV_INLINE ev_f ev_max_gt(ev_f a, ev_f b) { return _mm256_max_ps(a, b); }
/* min(max(a, lo), hi) in lanes that are not NaN (NaN lanes: unspecified). */
EV_INLINE ev_f ev_fclamp(ev_f a, float lo, float hi) {
    return _mm256_min_ps(_mm256_max_ps(a, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
}

/* Integers (int32 lanes). */
EV_INLINE ev_i ev_iset1(int v) { return _mm256_set1_epi32(v); }
EV_INLINE ev_i ev_iadd(ev_i a, ev_i b) { return _mm256_add_epi32(a, b); }
EV_INLINE ev_i ev_isub(ev_i a, ev_i b) { return _mm256_sub_epi32(a, b); }
EV_INLINE ev_i ev_imin(ev_i a, ev_i b) { return _mm256_min_epi32(a, b); }
EV_INLINE ev_i ev_imax(ev_i a, ev_i b) { return _mm256_max_epi32(a, b); }
EV_INLINE ev_i ev_iand(ev_i a, ev_i b) { return _mm256_and_si256(a, b); }
EV_INLINE ev_i ev_ior(ev_i a, ev_i b) { return _mm256_or_si256(a, b); }
#define ev_ishl(a, n) _mm256_slli_epi32((a), (n))
#define ev_isra(a, n) _mm256_srai_epi32((a), (n))
#define ev_isrl(a, n) _mm256_srli_epi32((a), (n))
/* Shift left by a count known only at run time. */
EV_INLINE ev_i ev_ishlv(ev_i a, int n) { return _mm256_sll_epi32(a, _mm_cvtsi32_si128(n)); }
EV_INLINE ev_m ev_ieq(ev_i a, ev_i b) { return _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)); }
EV_INLINE ev_m ev_igt(ev_i a, ev_i b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); }
EV_INLINE ev_i ev_iblend(ev_m m, ev_i a, ev_i b) {
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), m));
}
/* a + 1 in the lanes of m (a true lane is all ones: -1). */
EV_INLINE ev_i ev_iinc(ev_m m, ev_i a) { return _mm256_sub_epi32(a, _mm256_castps_si256(m)); }
EV_INLINE ev_i ev_iload(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
EV_INLINE void ev_istore(int32_t *p, ev_i v) { _mm256_storeu_si256((__m256i *)p, v); }
/* int32 -> float (exact for the small codes used here). */
EV_INLINE ev_f ev_cvt(ev_i a) { return _mm256_cvtepi32_ps(a); }
/* float -> int32 by truncation, as C's cast on x86-64: NaN and values out
 * of int32 range give INT32_MIN (cvttss2si). */
EV_INLINE ev_i ev_cvtt(ev_f a) { return _mm256_cvttps_epi32(a); }

/* The low byte of each lane, 8 bytes. */
EV_INLINE void ev_store_u8(uint8_t *p, ev_i v) {
    const __m256i b = _mm256_and_si256(v, _mm256_set1_epi32(0xff));
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(w, w));
}

/* Largest lane of a vector of finite values (max is exact in any order; a
 * zero result may be either zero). */
EV_INLINE float ev_hmax(ev_f v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* A 16-entry float table indexed per lane (index in 0..15). */
typedef struct {
    __m256 lo, hi;
} ev_lut16;
EV_INLINE ev_lut16 ev_lut16_load(const float t[16]) {
    ev_lut16 r = { _mm256_loadu_ps(t), _mm256_loadu_ps(t + 8) };
    return r;
}
EV_INLINE ev_f ev_lut16_get(ev_lut16 t, ev_i idx) {
    const __m256 lo = _mm256_permutevar8x32_ps(t.lo, idx);
    const __m256 hi = _mm256_permutevar8x32_ps(t.hi, idx);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}

/* binary32 -> binary16 of a value that is not NaN: round to nearest even,
 * as anvil_fp32_to_fp16 (which differs only in NaN payloads). */
EV_INLINE uint16_t ev_fp16(float v) { return (uint16_t)_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); }

#endif
