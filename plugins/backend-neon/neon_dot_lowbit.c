/* SPDX-License-Identifier: MIT */
/* backend-neon: Q1_0, Q2_0 and NVFP4 weights against Q8_0 activations:
 * vec_dot, gemv and gemm (neon_rows.h), compiled once per variant. Rows
 * decode through the referee's decoders. Bit-identical to plugins/ref
 * (ternary_q1_0.c, ternary_q2_0.c, cold_fp4.c): the integers are the
 * referee's, and each row goes through the referee's float operations in
 * its order.
 *
 *   Q1_0 (128 weights: fp16 d, 16 bytes of bits; four Q8_0 blocks)
 *       Per 32 elements (4 bit bytes) two tbl spread the bytes 8 times
 *       each, cmtst against 1, 2, .., 128 makes a mask, bsl picks +1 / -1:
 *       the dot is the referee's pos + pos - all. Then
 *           t = 0; t += da_k * (float)sumi_k (k = 0..3); acc += d * t.
 *   Q2_0 (64 weights: fp16 d, 16 bytes of 2-bit codes; two Q8_0 blocks)
 *       Per 32 elements (8 code bytes, element 4 i + g at bits 2 g of byte
 *       i) the bytes are loaded twice over a q register pair and shifted
 *       by 0, 2 | 4, 6 and masked: plane g holds elements 4 i + g. The
 *       activations are permuted to match once per block for all rows
 *       (tbl over the 32 bytes), and sum(a) taken off once per block: the
 *       referee's lo + hi + hi - all. t as Q1_0, acc += d * t.
 *   NVFP4 (64 weights: four UE4M3 scales, 32 bytes of E2M1 codes)
 *       Per Q8_0 block 16 code bytes through the referee's doubled E2M1
 *       table (tbl): the low nibbles are elements 0..7 of sub-blocks 2k and
 *       2k + 1, the high ones elements 8..15; the activations are paired to
 *       match once per block. The two sub-block sums come out of one pair
 *       of dots. acc += (dy * d_j) * (float)sumi_j, j = 0..3 in order.
 */
#include "neon_kernels.h"
#include "neon_rows.h"
#include "ref/cold_tables.h"

#define Q8_0_BYTES sizeof(anvil_block_q8_0)
#define Q8_0_QS offsetof(anvil_block_q8_0, qs)

/* ---- Q1_0 --------------------------------------------------------------------------- */

typedef struct q1_consts {
    uint8x16_t spread[4][2]; /* act block k, half h: bytes 4k + 2h, 4k + 2h + 1, each 8 times */
    uint8x16_t bit;          /* byte j: 1 << (j % 8) */
    int8x16_t one, minus_one;
} q1_consts;

SIMD_INLINE q1_consts q1_make_consts(void) {
    q1_consts c;
    for (int k = 0; k < 4; ++k) {
        for (int h = 0; h < 2; ++h) {
            const uint8_t b = (uint8_t)(4 * k + 2 * h);
            c.spread[k][h] = vcombine_u8(vdup_n_u8(b), vdup_n_u8((uint8_t)(b + 1)));
        }
    }
    c.bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ULL));
    c.one = vdupq_n_s8(1);
    c.minus_one = vdupq_n_s8(-1);
    return c;
}

/* bits ? +1 : -1 for the 16 elements the spread picks. */
SIMD_INLINE int8x16_t q1_signs(uint8x16_t bits, uint8x16_t spread, const q1_consts *c) {
    return vbslq_s8(vtstq_u8(vqtbl1q_u8(bits, spread), c->bit), c->one, c->minus_one);
}

SIMD_INLINE void q1_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    const q1_consts c = q1_make_consts();
    float acc[8] = { 0 };
    for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_q1_0)) {
        simd_pf_block(pf, b, sizeof(anvil_block_q1_0), ws, R);
        float t[8] = { 0 };
        uint8x16_t bits[8];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) bits[r] = vld1q_u8(w + (size_t)r * ws + offsetof(anvil_block_q1_0, qs));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k, a += Q8_0_BYTES) {
            const int8x16_t a0 = neon_ld_s8(a + Q8_0_QS), a1 = neon_ld_s8(a + Q8_0_QS + 16);
            const float da = neon_half(a + offsetof(anvil_block_q8_0, d));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const int32x4_t s = neon_dot32(vdupq_n_s32(0), q1_signs(bits[r], c.spread[k][0], &c), a0,
                                               q1_signs(bits[r], c.spread[k][1], &c), a1);
                t[r] += da * (float)vaddvq_s32(s);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] += neon_half(w + (size_t)r * ws + offsetof(anvil_block_q1_0, d)) * t[r];
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r] = acc[r];
}

NEON_ROWS_EXPORT(q1_0, q8_0, 128, sizeof(anvil_block_q1_0))

/* ---- Q2_0 --------------------------------------------------------------------------- */

SIMD_INLINE void q2_0_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                           simd_pf *pf) {
    /* plane pair 01: bytes 0..7 elements 4 i, bytes 8..15 elements 4 i + 1; pair 23 likewise */
    static const uint8_t perm01[16] = { 0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29 };
    static const uint8_t perm23[16] = { 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31 };
    const uint8x16_t p01 = vld1q_u8(perm01), p23 = vld1q_u8(perm23);
    const int8x16_t sh01 = vcombine_s8(vdup_n_s8(0), vdup_n_s8(-2)), sh23 = vcombine_s8(vdup_n_s8(-4), vdup_n_s8(-6));
    const uint8x16_t three = vdupq_n_u8(3);
    float acc[8] = { 0 };
    for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_q2_0)) {
        simd_pf_block(pf, b, sizeof(anvil_block_q2_0), ws, R);
        float t[8] = { 0 };
#pragma GCC unroll 2
        for (int k = 0; k < 2; ++k, a += Q8_0_BYTES) {
            int8x16x2_t av;
            av.val[0] = neon_ld_s8(a + Q8_0_QS);
            av.val[1] = neon_ld_s8(a + Q8_0_QS + 16);
            const int8x16_t a01 = vqtbl2q_s8(av, p01), a23 = vqtbl2q_s8(av, p23);
            const int32_t all = vaddlvq_s8(av.val[0]) + vaddlvq_s8(av.val[1]);
            const float da = neon_half(a + offsetof(anvil_block_q8_0, d));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                uint64_t codes;
                memcpy(&codes, w + (size_t)r * ws + offsetof(anvil_block_q2_0, qs) + 8 * k, sizeof codes);
                const uint8x16_t q = vreinterpretq_u8_u64(vdupq_n_u64(codes));
                const int8x16_t c01 = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q, sh01), three));
                const int8x16_t c23 = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q, sh23), three));
                const int32_t sumi = vaddvq_s32(neon_dot32(vdupq_n_s32(0), c01, a01, c23, a23)) - all;
                t[r] += da * (float)sumi;
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] += neon_half(w + (size_t)r * ws + offsetof(anvil_block_q2_0, d)) * t[r];
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r] = acc[r];
}

NEON_ROWS_EXPORT(q2_0, q8_0, 64, sizeof(anvil_block_q2_0))

/* ---- NVFP4 -------------------------------------------------------------------------- */

/* anvil_ue4m3_to_fp32_half(x) for every byte x, as a table: the sign bit
 * ignored, 0x7F zero, e = x >> 3 & 15, m = x & 7: e = 0 gives m 2^-10,
 * else (1 + m / 8) 2^(e - 8); both are (e ? (8 + m) << e : 2 m) 2^-11,
 * exact in binary32. A wrong entry fails tests/neon (random blocks carry
 * every scale byte). */
#define UE_E(x) (((x) >> 3) & 15)
#define UE_M(x) ((x)&7)
#define UE(x) ((x) == 0x7F ? 0.0f : (float)(UE_E(x) ? (8 + UE_M(x)) << UE_E(x) : 2 * UE_M(x)) * 0x1.0p-11f)
#define UE4(x) UE(x), UE((x) + 1), UE((x) + 2), UE((x) + 3)
#define UE16(x) UE4(x), UE4((x) + 4), UE4((x) + 8), UE4((x) + 12)
#define UE64(x) UE16(x), UE16((x) + 16), UE16((x) + 32), UE16((x) + 48)
static const float ue4m3_half[256] = { UE64(0), UE64(64), UE64(128), UE64(192) };

/* Lane 0: the dot of bytes 0..7 of w0, w1 with a0, a1; lane 1: bytes 8..15.
 * Plain NEON: smull of each half, widened pairwise, so the halves stay
 * apart; sdot: lanes 0, 1 hold bytes 0..7, lanes 2, 3 bytes 8..15. */
SIMD_INLINE int32x2_t nvfp4_halves(int8x16_t w0, int8x16_t a0, int8x16_t w1, int8x16_t a1) {
#if NEON_VARIANT >= 1
    const int32x4_t s = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, a0), w1, a1);
    return vget_low_s32(vpaddq_s32(s, s));
#else
    const int32x4_t lo = vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(a0))),
                                     vmull_s8(vget_low_s8(w1), vget_low_s8(a1)));
    const int32x4_t hi = vpadalq_s16(vpaddlq_s16(vmull_high_s8(w0, a0)), vmull_high_s8(w1, a1));
    const int32x4_t p = vpaddq_s32(lo, hi);
    return vget_low_s32(vpaddq_s32(p, p));
#endif
}

SIMD_INLINE void nvfp4_rows(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y, const int R,
                            simd_pf *pf) {
    const int8x16_t table = vld1q_s8(anvil_cold_e2m1_x2_values);
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    float acc[8] = { 0 };
    for (size_t b = 0; b < nb; ++b, w += sizeof(anvil_block_nvfp4)) {
        simd_pf_block(pf, b, sizeof(anvil_block_nvfp4), ws, R);
#pragma GCC unroll 2
        for (int k = 0; k < 2; ++k, a += Q8_0_BYTES) {
            const int8x16_t x0 = neon_ld_s8(a + Q8_0_QS), x1 = neon_ld_s8(a + Q8_0_QS + 16);
            /* low nibbles: elements 0..7 of the two sub-blocks, high: 8..15 */
            const int8x16_t alo = vcombine_s8(vget_low_s8(x0), vget_low_s8(x1));
            const int8x16_t ahi = vcombine_s8(vget_high_s8(x0), vget_high_s8(x1));
            const float dy = neon_half(a + offsetof(anvil_block_q8_0, d));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t *wr = w + (size_t)r * ws;
                const uint8x16_t q = vld1q_u8(wr + offsetof(anvil_block_nvfp4, qs) + 16 * k);
                const int32x2_t s =
                    nvfp4_halves(vqtbl1q_s8(table, vandq_u8(q, m4)), alo, vqtbl1q_s8(table, vshrq_n_u8(q, 4)), ahi);
                const uint8_t *sc = wr + offsetof(anvil_block_nvfp4, d) + 2 * k;
                acc[r] += dy * ue4m3_half[sc[0]] * (float)vget_lane_s32(s, 0);
                acc[r] += dy * ue4m3_half[sc[1]] * (float)vget_lane_s32(s, 1);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[r] = acc[r];
}

NEON_ROWS_EXPORT(nvfp4, q8_0, 64, sizeof(anvil_block_nvfp4))
