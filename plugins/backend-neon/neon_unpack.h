/* SPDX-License-Identifier: MIT */
/* backend-neon: code unpacking shared by the row decoders and the dots.
 * Static inline: each variant's copy is compiled with its own flags. */
#ifndef ANVIL_BACKEND_NEON_UNPACK_H
#define ANVIL_BACKEND_NEON_UNPACK_H

#include "neon_util.h"

/* Q3_K scale j (-32..31) from its 12 packed bytes (layout in ref/kquants). */
static inline int q3_scale(const uint8_t *packed, int j) {
    const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

/* The 32 signed codes (-4..3) of elements 128 h + 32 j + 0..31 of a Q3_K
 * block: two low bits from qs at bit 2 j, the third from hmask at bit
 * 4 h + j (clear means subtract 4). */
static inline void q3_codes(const uint8_t *blk, int h, int j, int8x16_t *c0, int8x16_t *c1) {
    const uint8_t *qs = blk + offsetof(anvil_block_q3_K, qs) + 32 * h;
    const uint8_t *hm = blk + offsetof(anvil_block_q3_K, hmask);
    const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + j)));
    const uint8x16_t four = vdupq_n_u8(4);
    const uint8x16_t low0 = neon_shr_and(vld1q_u8(qs), 2 * j, 3);
    const uint8x16_t low1 = neon_shr_and(vld1q_u8(qs + 16), 2 * j, 3);
    const uint8x16_t sub0 = vbicq_u8(four, vtstq_u8(vld1q_u8(hm), bit));
    const uint8x16_t sub1 = vbicq_u8(four, vtstq_u8(vld1q_u8(hm + 16), bit));
    *c0 = vsubq_s8(vreinterpretq_s8_u8(low0), vreinterpretq_s8_u8(sub0));
    *c1 = vsubq_s8(vreinterpretq_s8_u8(low1), vreinterpretq_s8_u8(sub1));
}

/* Q5_K codes of the 64 elements sharing ql[0..31]: low group (nibble | bit
 * g of qh << 4) and high group (high nibble | bit g + 1 of qh << 4). */
static inline void q5k_codes(const uint8_t *ql, const uint8_t *qh, int g, int8x16_t c[4]) {
    const uint8x16_t q0 = vld1q_u8(ql), q1 = vld1q_u8(ql + 16);
    const uint8x16_t h0 = vld1q_u8(qh), h1 = vld1q_u8(qh + 16);
    const uint8x16_t sixteen = vdupq_n_u8(0x10);
    const uint8x16_t u1 = vdupq_n_u8((uint8_t)(1u << g)), u2 = vdupq_n_u8((uint8_t)(2u << g));
    c[0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q0, vdupq_n_u8(0x0F)), vandq_u8(vtstq_u8(h0, u1), sixteen)));
    c[1] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q1, vdupq_n_u8(0x0F)), vandq_u8(vtstq_u8(h1, u1), sixteen)));
    c[2] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q0, 4), vandq_u8(vtstq_u8(h0, u2), sixteen)));
    c[3] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q1, 4), vandq_u8(vtstq_u8(h1, u2), sixteen)));
}

/* Q6_K codes (-32..31) of elements 128 h + 32 k + 0..31: four bits from ql
 * (bytes 32 (k & 1) on, nibble k >> 1), two from qh at bit 2 k. */
static inline void q6k_codes(const uint8_t *blk, int h, int k, int8x16_t *c0, int8x16_t *c1) {
    const uint8_t *ql = blk + offsetof(anvil_block_q6_K, ql) + 64 * h + 32 * (k & 1);
    const uint8_t *qh = blk + offsetof(anvil_block_q6_K, qh) + 32 * h;
    const int lo_shift = 4 * (k >> 1);
    const uint8x16_t l0 = neon_shr_and(vld1q_u8(ql), lo_shift, 0xF);
    const uint8x16_t l1 = neon_shr_and(vld1q_u8(ql + 16), lo_shift, 0xF);
    const uint8x16_t h0 = vshlq_n_u8(neon_shr_and(vld1q_u8(qh), 2 * k, 3), 4);
    const uint8x16_t h1 = vshlq_n_u8(neon_shr_and(vld1q_u8(qh + 16), 2 * k, 3), 4);
    const int8x16_t off = vdupq_n_s8(32);
    *c0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l0, h0)), off);
    *c1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l1, h1)), off);
}

/* Trit k of each byte, as 0..2: the carry out of (uint8_t)(b * 3^k) * 3. */
static inline uint8x16_t trits(uint8x16_t b, uint8_t pow3) {
    const uint8x16_t q = vmulq_u8(b, vdupq_n_u8(pow3));
    const uint8x8_t three = vdup_n_u8(3);
    return vcombine_u8(vshrn_n_u16(vmull_u8(vget_low_u8(q), three), 8),
                       vshrn_n_u16(vmull_high_u8(q, vdupq_n_u8(3)), 8));
}

static const uint8_t neon_pow3[5] = { 1, 3, 9, 27, 81 };

/* The 256 TQ1_0 weights (-1, 0, +1) of one block, in element order:
 * qs[0..31] carry five trits each (elements 32 t + m), qs[32..47] five each
 * (160 + 16 t + m), qh[0..3] four each (240 + 4 t + m). */
static inline void tq1_0_values(const uint8_t *blk, int8x16_t v[16]) {
    const uint8_t *qs = blk + offsetof(anvil_block_tq1_0, qs);
    const uint8_t *qh = blk + offsetof(anvil_block_tq1_0, qh);
    const int8x16_t one = vdupq_n_s8(1);
    const uint8x16_t a0 = vld1q_u8(qs), a1 = vld1q_u8(qs + 16), b0 = vld1q_u8(qs + 32);
    for (int t = 0; t < 5; ++t) {
        v[2 * t] = vsubq_s8(vreinterpretq_s8_u8(trits(a0, neon_pow3[t])), one);
        v[2 * t + 1] = vsubq_s8(vreinterpretq_s8_u8(trits(a1, neon_pow3[t])), one);
        v[10 + t] = vsubq_s8(vreinterpretq_s8_u8(trits(b0, neon_pow3[t])), one);
    }
    /* qh: the four bytes repeated, each copy multiplied by its own 3^t. */
    static const uint8_t mul[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    const uint8x16_t h = vreinterpretq_u8_u32(vdupq_n_u32(anvil_rd_u32(qh)));
    const uint8x16_t q = vmulq_u8(h, vld1q_u8(mul));
    v[15] = vsubq_s8(vreinterpretq_s8_u8(trits(q, 1)), one);
}

/* ggml's kvalues_iq4nl: the non-linear 4-bit grid. */
static const int8_t neon_iq4nl_values[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};
/* E2M1 (FP4) doubled to integers, as ggml's kvalues_mxfp4. */
static const int8_t neon_e2m1_x2_values[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

#endif
