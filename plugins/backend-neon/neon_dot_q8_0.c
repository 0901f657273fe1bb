/* SPDX-License-Identifier: MIT */
/* backend-neon: dots of the flat 32-element family (Q4_0 Q4_1 Q5_0 Q5_1
 * Q8_0) against Q8_0 / Q8_1 activations. Compiled once per variant.
 *
 * Per block the integer dot is exact (sdot, or widening multiplies), so it
 * equals the reference's; the float part then repeats the reference's
 * expression for the block, in block order (plugins/ref/q8_0_family_dot.c),
 * so the result is the reference's to the bit. */
#include "neon_kernels.h"
#include "neon_util.h"

#define Q80 sizeof(anvil_block_q8_0)
#define Q81 sizeof(anvil_block_q8_1)

void NEON_FN(anvil_neon_vec_dot_q8_0_q8_0)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, wb += Q80, ab += Q80) {
        const uint8_t *qw = wb + offsetof(anvil_block_q8_0, qs);
        const uint8_t *qa = ab + offsetof(anvil_block_q8_0, qs);
        const int32x4_t d =
            neon_dot32(vdupq_n_s32(0), neon_ld_s8(qw), neon_ld_s8(qa), neon_ld_s8(qw + 16), neon_ld_s8(qa + 16));
        const int sumi = vaddvq_s32(d);
        const float dw = neon_half(wb + offsetof(anvil_block_q8_0, d));
        const float da = neon_half(ab + offsetof(anvil_block_q8_0, d));
        acc += (float)sumi * (dw * da);
    }
    *s = acc;
}

void NEON_FN(anvil_neon_vec_dot_q4_0_q8_0)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    const int8x16_t eight = vdupq_n_s8(8);
    float acc = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, wb += sizeof(anvil_block_q4_0), ab += Q80) {
        const uint8x16_t q = vld1q_u8(wb + offsetof(anvil_block_q4_0, qs));
        const uint8_t *qa = ab + offsetof(anvil_block_q8_0, qs);
        const int32x4_t d = neon_dot32(vdupq_n_s32(0), vsubq_s8(neon_lo_nibbles(q), eight), neon_ld_s8(qa),
                                       vsubq_s8(neon_hi_nibbles(q), eight), neon_ld_s8(qa + 16));
        const int sumi = vaddvq_s32(d);
        const float dw = neon_half(wb + offsetof(anvil_block_q4_0, d));
        const float da = neon_half(ab + offsetof(anvil_block_q8_0, d));
        acc += (float)sumi * dw * da;
    }
    *s = acc;
}

void NEON_FN(anvil_neon_vec_dot_q4_1_q8_1)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, wb += sizeof(anvil_block_q4_1), ab += Q81) {
        const uint8x16_t q = vld1q_u8(wb + offsetof(anvil_block_q4_1, qs));
        const uint8_t *qa = ab + offsetof(anvil_block_q8_1, qs);
        const int32x4_t d =
            neon_dot32(vdupq_n_s32(0), neon_lo_nibbles(q), neon_ld_s8(qa), neon_hi_nibbles(q), neon_ld_s8(qa + 16));
        const int sumi = vaddvq_s32(d);
        const float dw = neon_half(wb + offsetof(anvil_block_q4_1, d));
        const float mw = neon_half(wb + offsetof(anvil_block_q4_1, m));
        const float da = neon_half(ab + offsetof(anvil_block_q8_1, d));
        const float sa = neon_half(ab + offsetof(anvil_block_q8_1, s));
        const float scaled = (dw * da) * (float)sumi;
        const float min_term = mw * sa;
        acc += scaled + min_term;
    }
    *s = acc;
}

/* The 32 five-bit codes of a Q5 block, minus `offset`. */
static inline void five_bit(const uint8_t *qs, uint32_t qh, int8_t offset, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t q = vld1q_u8(qs);
    const uint8x16_t sixteen = vdupq_n_u8(0x10);
    const uint8x16_t hb_lo = vandq_u8(neon_bits_to_mask16(qh), sixteen);
    const uint8x16_t hb_hi = vandq_u8(neon_bits_to_mask16(qh >> 16), sixteen);
    const int8x16_t off = vdupq_n_s8(offset);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(0x0F)), hb_lo)), off);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), hb_hi)), off);
}

void NEON_FN(anvil_neon_vec_dot_q5_0_q8_0)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, wb += sizeof(anvil_block_q5_0), ab += Q80) {
        int8x16_t lo, hi;
        five_bit(wb + offsetof(anvil_block_q5_0, qs), anvil_rd_u32(wb + offsetof(anvil_block_q5_0, qh)), 16, &lo,
                 &hi);
        const uint8_t *qa = ab + offsetof(anvil_block_q8_0, qs);
        const int sumi = vaddvq_s32(neon_dot32(vdupq_n_s32(0), lo, neon_ld_s8(qa), hi, neon_ld_s8(qa + 16)));
        const float dw = neon_half(wb + offsetof(anvil_block_q5_0, d));
        const float da = neon_half(ab + offsetof(anvil_block_q8_0, d));
        acc += (dw * da) * (float)sumi;
    }
    *s = acc;
}

void NEON_FN(anvil_neon_vec_dot_q5_1_q8_1)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w, *ab = a;
    float acc = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, wb += sizeof(anvil_block_q5_1), ab += Q81) {
        int8x16_t lo, hi;
        five_bit(wb + offsetof(anvil_block_q5_1, qs), anvil_rd_u32(wb + offsetof(anvil_block_q5_1, qh)), 0, &lo, &hi);
        const uint8_t *qa = ab + offsetof(anvil_block_q8_1, qs);
        const int sumi = vaddvq_s32(neon_dot32(vdupq_n_s32(0), lo, neon_ld_s8(qa), hi, neon_ld_s8(qa + 16)));
        const float dw = neon_half(wb + offsetof(anvil_block_q5_1, d));
        const float mw = neon_half(wb + offsetof(anvil_block_q5_1, m));
        const float da = neon_half(ab + offsetof(anvil_block_q8_1, d));
        const float sa = neon_half(ab + offsetof(anvil_block_q8_1, s));
        const float scaled = (dw * da) * (float)sumi;
        const float min_term = mw * sa;
        acc += scaled + min_term;
    }
    *s = acc;
}
