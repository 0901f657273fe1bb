/* SPDX-License-Identifier: MIT */
/* backend-neon: PTQTP trit planes (codec-ptqtp's ptqtp2/ptqtp3 and
 * ptqtp2s/ptqtp3s, layouts from the SDK's anvil/formats/ptqtp.h and
 * ptqtps.h), shared by the dots (one copy per variant) and the row
 * decoders (one copy). Static inline.
 *
 * A plane's bytes are TQ1_0's base-3 fractions. Biased (x ^ 0x80, once per
 * load), a byte's state s compares signed: trit +1 for s > 42 (x >= 171),
 * -1 for s < -42 (x <= 85); the next trit's state is 3 s mod 256. The
 * sixteen 16-byte state vectors of a plane, v covering elements 16 v ..
 * 16 v + 15: bytes 0..15 and 16..31 at level j (v = 2 j, 2 j + 1), bytes
 * 32..47 at level j (v = 10 + j), bytes 48..51 repeated with copy t at
 * level t (v = 15). */
#ifndef ANVIL_BACKEND_NEON_PTQTP_H
#define ANVIL_BACKEND_NEON_PTQTP_H

#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"
#include "neon_util.h"

static inline int8x16_t ptqtp_times3(int8x16_t x) { return vaddq_s8(x, vaddq_s8(x, x)); }

static inline void ptqtp_states(const uint8_t *p, int8x16_t s[16]) {
    const int8x16_t bias = vdupq_n_s8(-128);
    int8x16_t a0 = veorq_s8(vld1q_s8((const int8_t *)p), bias);
    int8x16_t a1 = veorq_s8(vld1q_s8((const int8_t *)p + 16), bias);
    int8x16_t b0 = veorq_s8(vld1q_s8((const int8_t *)p + 32), bias);
    for (int j = 0; j < 5; ++j) {
        s[2 * j] = a0;
        s[2 * j + 1] = a1;
        s[10 + j] = b0;
        a0 = ptqtp_times3(a0);
        a1 = ptqtp_times3(a1);
        b0 = ptqtp_times3(b0);
    }
    static const int8_t pow3[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    const int8x16_t h = veorq_s8(vreinterpretq_s8_u32(vdupq_n_u32(anvil_rd_u32(p + 48))), bias);
    s[15] = vmulq_s8(h, vld1q_s8(pow3)); /* 3^t s mod 256: the state at level t */
}

/* Masks (all ones) of the +1 and -1 trits of a state vector. */
static inline int8x16_t ptqtp_plus(int8x16_t s) { return vreinterpretq_s8_u8(vcgtq_s8(s, vdupq_n_s8(42))); }
static inline int8x16_t ptqtp_minus(int8x16_t s) { return vreinterpretq_s8_u8(vcltq_s8(s, vdupq_n_s8(-42))); }

/* ---- PTQTP-S (ptqtp2s, ptqtp3s: anvil/formats/ptqtps.h) ------------------------
 * The K planes of a block are the balanced-ternary digits of one level per
 * weight, plane 0 the most significant: L = 3 L + t plane by plane (one
 * multiply-accumulate per vector), -4..4 or -13..13, exact in int8. L[v]
 * holds sub-block v (elements 16 v .. 16 v + 15) in element order. */
static inline void ptqtps_levels(const uint8_t *b, const int K, int8x16_t L[16]) {
    const int8x16_t three = vdupq_n_s8(3);
    int8x16_t s[16];
    ptqtp_states(b, s);
    for (int v = 0; v < 16; ++v) L[v] = vsubq_s8(ptqtp_minus(s[v]), ptqtp_plus(s[v])); /* -1, 0, +1 */
    for (int k = 1; k < K; ++k) {
        ptqtp_states(b + k * ANVIL_PTQTP_PLANE_BYTES, s);
        for (int v = 0; v < 16; ++v) L[v] = vmlaq_s8(vsubq_s8(ptqtp_minus(s[v]), ptqtp_plus(s[v])), L[v], three);
    }
}

/* The 16 sub-block multipliers m (1..16) of a block, in sub-block order:
 * code j is bits 2 (j % 4) .. of sc[j / 4], looked up in the table the sign
 * bit of the block scale names. */
static inline uint8x16_t ptqtps_mults(const uint8_t *b, const int K) {
    static const uint8_t tables[2][16] = { { ANVIL_PTQTPS_MULTS_NARROW }, { ANVIL_PTQTPS_MULTS_WIDE } };
    static const uint8_t spread[16] = { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 };
    static const int8_t shift[16] = { 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6 };
    const uint8x16_t sc = vreinterpretq_u8_u32(vdupq_n_u32(anvil_rd_u32(b + ANVIL_PTQTPS_SC_OFFSET(K))));
    const uint8x16_t codes = vandq_u8(vshlq_u8(vqtbl1q_u8(sc, vld1q_u8(spread)), vld1q_s8(shift)), vdupq_n_u8(3));
    const int wide = anvil_rd_u16(b + ANVIL_PTQTPS_D_OFFSET(K)) >> 15;
    return vqtbl1q_u8(vld1q_u8(tables[wide]), codes);
}

/* The block scale d = |h| (the sign bit names the table). */
static inline float ptqtps_scale(const uint8_t *b, const int K) {
    return anvil_fp16_to_fp32((anvil_half)(anvil_rd_u16(b + ANVIL_PTQTPS_D_OFFSET(K)) & 0x7fffu));
}

#endif
