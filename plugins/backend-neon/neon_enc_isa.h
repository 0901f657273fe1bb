/* SPDX-License-Identifier: MIT */
/* backend-neon: the vector layer the shared weight encoders
 * (plugins/simd-common/simd_enc_*.h) are written against, on aarch64
 * Advanced SIMD (4 float lanes; masks are all-ones/all-zeros lanes).
 *
 * The contract of every ev_* operation (documented in simd_enc_common.h):
 * each float lane performs exactly the IEEE operation the scalar reference
 * performs (the build has -ffp-contract=off, so no fmla is formed), so a
 * lane that follows the reference's sequence of operations rounds like it.
 * Two aarch64 conversions differ from x86-64's, whose results ggml's bytes
 * were made with (and plugins/ref reproduces on every host): fcvtzs
 * saturates where cvttps2dq answers INT32_MIN (NaN, out of range), so
 * ev_cvtt puts INT32_MIN there; and the float table lookup is a byte
 * shuffle (tbl) of the table's bytes.
 */
#ifndef ANVIL_NEON_ENC_ISA_H
#define ANVIL_NEON_ENC_ISA_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "anvil/numeric.h"

#define EV_LANES 4
#define EV_INLINE static inline __attribute__((always_inline))
#define EV_VARIANT "neon"
#define EV_TABLE(family) anvil_neon_encoders_##family

typedef float32x4_t ev_f;
typedef int32x4_t ev_i;
typedef uint32x4_t ev_m;

EV_INLINE ev_f ev_load(const float *p) { return vld1q_f32(p); }
EV_INLINE void ev_store(float *p, ev_f v) { vst1q_f32(p, v); }
EV_INLINE ev_f ev_set1(float v) { return vdupq_n_f32(v); }
EV_INLINE ev_f ev_add(ev_f a, ev_f b) { return vaddq_f32(a, b); }
EV_INLINE ev_f ev_sub(ev_f a, ev_f b) { return vsubq_f32(a, b); }
EV_INLINE ev_f ev_mul(ev_f a, ev_f b) { return vmulq_f32(a, b); }
EV_INLINE ev_f ev_div(ev_f a, ev_f b) { return vdivq_f32(a, b); }
EV_INLINE ev_f ev_sqrt(ev_f a) { return vsqrtq_f32(a); }
EV_INLINE ev_i ev_bits(ev_f a) { return vreinterpretq_s32_f32(a); }
EV_INLINE ev_f ev_from_bits(ev_i a) { return vreinterpretq_f32_s32(a); }
EV_INLINE ev_f ev_abs(ev_f a) { return vabsq_f32(a); }
EV_INLINE ev_f ev_neg(ev_f a) { return vnegq_f32(a); }

/* Comparisons as C evaluates them: ordered, except != (true for NaN). */
EV_INLINE ev_m ev_lt(ev_f a, ev_f b) { return vcltq_f32(a, b); }
EV_INLINE ev_m ev_le(ev_f a, ev_f b) { return vcleq_f32(a, b); }
EV_INLINE ev_m ev_gt(ev_f a, ev_f b) { return vcgtq_f32(a, b); }
EV_INLINE ev_m ev_ge(ev_f a, ev_f b) { return vcgeq_f32(a, b); }
EV_INLINE ev_m ev_eq(ev_f a, ev_f b) { return vceqq_f32(a, b); }
EV_INLINE ev_m ev_ne(ev_f a, ev_f b) { return vmvnq_u32(vceqq_f32(a, b)); }
EV_INLINE ev_m ev_mand(ev_m a, ev_m b) { return vandq_u32(a, b); }
EV_INLINE ev_m ev_mor(ev_m a, ev_m b) { return vorrq_u32(a, b); }
EV_INLINE ev_m ev_mandnot(ev_m a, ev_m b) { return vbicq_u32(a, b); } /* a && !b */
EV_INLINE int ev_many(ev_m a) { return vmaxvq_u32(a) != 0; }
EV_INLINE unsigned ev_mbits(ev_m a) {
    static const uint32_t weights[4] = { 1, 2, 4, 8 };
    return vaddvq_u32(vandq_u32(a, vld1q_u32(weights)));
}
/* m ? b : a, lane by lane. */
EV_INLINE ev_f ev_blend(ev_m m, ev_f a, ev_f b) { return vbslq_f32(m, b, a); }
/* max(a, b) of values that are >= +0 and not NaN (magnitudes). */
EV_INLINE ev_f ev_max_mag(ev_f a, ev_f b) { return vmaxq_f32(a, b); }
/* a < b ? a : b and a > b ? a : b, lane by lane (NaN or equal lanes: b). */
EV_INLINE ev_f ev_min_lt(ev_f a, ev_f b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
EV_INLINE ev_f ev_max_gt(ev_f a, ev_f b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
/* min(max(a, lo), hi) in lanes that are not NaN (NaN lanes: unspecified). */
EV_INLINE ev_f ev_fclamp(ev_f a, float lo, float hi) {
    return vminq_f32(vmaxq_f32(a, vdupq_n_f32(lo)), vdupq_n_f32(hi));
}

/* Integers (int32 lanes). */
EV_INLINE ev_i ev_iset1(int v) { return vdupq_n_s32(v); }
EV_INLINE ev_i ev_iadd(ev_i a, ev_i b) { return vaddq_s32(a, b); }
EV_INLINE ev_i ev_isub(ev_i a, ev_i b) { return vsubq_s32(a, b); }
EV_INLINE ev_i ev_imin(ev_i a, ev_i b) { return vminq_s32(a, b); }
EV_INLINE ev_i ev_imax(ev_i a, ev_i b) { return vmaxq_s32(a, b); }
EV_INLINE ev_i ev_iand(ev_i a, ev_i b) { return vandq_s32(a, b); }
EV_INLINE ev_i ev_ior(ev_i a, ev_i b) { return vorrq_s32(a, b); }
#define ev_ishl(a, n) vshlq_n_s32((a), (n))
#define ev_isra(a, n) vshrq_n_s32((a), (n))
#define ev_isrl(a, n) vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(a), (n)))
/* Shift left by a count known only at run time. */
EV_INLINE ev_i ev_ishlv(ev_i a, int n) { return vshlq_s32(a, vdupq_n_s32(n)); }
EV_INLINE ev_m ev_ieq(ev_i a, ev_i b) { return vceqq_s32(a, b); }
EV_INLINE ev_m ev_igt(ev_i a, ev_i b) { return vcgtq_s32(a, b); }
EV_INLINE ev_i ev_iblend(ev_m m, ev_i a, ev_i b) { return vbslq_s32(m, b, a); }
/* a + 1 in the lanes of m (a true lane is all ones: -1). */
EV_INLINE ev_i ev_iinc(ev_m m, ev_i a) { return vsubq_s32(a, vreinterpretq_s32_u32(m)); }
EV_INLINE ev_i ev_iload(const int32_t *p) { return vld1q_s32(p); }
EV_INLINE void ev_istore(int32_t *p, ev_i v) { vst1q_s32(p, v); }
/* int32 -> float (exact for the small codes used here). */
EV_INLINE ev_f ev_cvt(ev_i a) { return vcvtq_f32_s32(a); }
/* float -> int32 by truncation, as x86-64's cast: NaN and values out of
 * int32 range give INT32_MIN (fcvtzs would saturate instead). */
EV_INLINE ev_i ev_cvtt(ev_f a) {
    const ev_m ok = vandq_u32(vcgeq_f32(a, vdupq_n_f32(-2147483648.0f)), vcltq_f32(a, vdupq_n_f32(2147483648.0f)));
    return vbslq_s32(ok, vcvtq_s32_f32(a), vdupq_n_s32(INT32_MIN));
}

/* The low byte of each lane, 4 bytes. */
EV_INLINE void ev_store_u8(uint8_t *p, ev_i v) {
    const uint16x4_t h = vmovn_u32(vreinterpretq_u32_s32(v));
    const uint8x8_t b = vmovn_u16(vcombine_u16(h, h));
    const uint32_t w = vget_lane_u32(vreinterpret_u32_u8(b), 0);
    memcpy(p, &w, sizeof w);
}

/* Largest lane of a vector of finite values (max is exact in any order; a
 * zero result may be either zero). */
EV_INLINE float ev_hmax(ev_f v) { return vmaxvq_f32(v); }

/* A 16-entry float table indexed per lane (index in 0..15): the bytes of
 * entry k are bytes 4k..4k+3 of the table. */
typedef uint8x16x4_t ev_lut16;
EV_INLINE ev_lut16 ev_lut16_load(const float t[16]) { return vld1q_u8_x4((const uint8_t *)t); }
EV_INLINE ev_f ev_lut16_get(ev_lut16 t, ev_i idx) {
    const uint32x4_t b = vaddq_u32(vmulq_n_u32(vreinterpretq_u32_s32(idx), 0x04040404u), vdupq_n_u32(0x03020100u));
    return vreinterpretq_f32_u8(vqtbl4q_u8(t, vreinterpretq_u8_u32(b)));
}

/* binary32 -> binary16 of a value that is not NaN: round to nearest even. */
EV_INLINE uint16_t ev_fp16(float v) { return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(v))), 0); }

#endif
