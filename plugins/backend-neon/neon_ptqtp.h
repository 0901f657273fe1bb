/* SPDX-License-Identifier: MIT */
/* backend-neon: PTQTP trit planes (codec-ptqtp's ptqtp2/ptqtp3, layout from
 * the SDK's anvil/formats/ptqtp.h), shared by the dots (one copy per
 * variant) and the row decoders (one copy). Static inline.
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

#endif
