/* SPDX-License-Identifier: MIT */
/* backend-neon: k-quant dots (Q2_K..Q6_K) against Q8_K. Compiled once per
 * variant.
 *
 * The integer part of a super-block (sum over sub-blocks of scale times
 * the sub-block's integer dot, and the min term from the activation's
 * bsums) is exact in any order, so it equals the reference's. The float
 * part repeats the reference's expression per super-block, in block order
 * (plugins/ref/kquants_q*_k.c): the result is the reference's to the bit. */
#include "neon_kernels.h"
#include "neon_unpack.h"
#include "neon_util.h"

#define Q8K_D offsetof(anvil_block_q8_K, d)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)
#define Q8K_BSUMS offsetof(anvil_block_q8_K, bsums)

/* sum_j bsums[j] * mins[j] over the 16 activation block sums. */
static inline int bsums_dot(const uint8_t *act, int16x8_t m0, int16x8_t m1) {
    const int16x8_t b0 = neon_ld_s16x8(act + Q8K_BSUMS);
    const int16x8_t b1 = neon_ld_s16x8(act + Q8K_BSUMS + 16);
    int32x4_t s = vmull_s16(vget_low_s16(b0), vget_low_s16(m0));
    s = vmlal_high_s16(s, b0, m0);
    s = vmlal_s16(s, vget_low_s16(b1), vget_low_s16(m1));
    s = vmlal_high_s16(s, b1, m1);
    return vaddvq_s32(s);
}

/* Eight per-32 mins, each repeated for the two 16-element bsums it spans. */
static inline void mins_pairs(const uint8_t mn[8], int16x8_t *m0, int16x8_t *m1) {
    const uint8x8_t v = vld1_u8(mn);
    const uint8x8x2_t z = vzip_u8(v, v);
    *m0 = vreinterpretq_s16_u16(vmovl_u8(z.val[0]));
    *m1 = vreinterpretq_s16_u16(vmovl_u8(z.val[1]));
}

void NEON_FN(anvil_neon_vec_dot_q2_K_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_q2_K), y += sizeof(anvil_block_q8_K)) {
        const uint8_t *sc = x + offsetof(anvil_block_q2_K, scales);
        const uint8x16_t scv = vld1q_u8(sc);
        const uint8x16_t mins = vshrq_n_u8(scv, 4);
        const int summs = bsums_dot(y, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins))),
                                    vreinterpretq_s16_u16(vmovl_high_u8(mins)));
        const uint8_t *q2 = x + offsetof(anvil_block_q2_K, qs);
        const uint8_t *q8 = y + Q8K_QS;
        int32x4_t isum = vdupq_n_s32(0);
        int is = 0;
        for (int half = 0; half < 2; ++half, q2 += 32) {
            const uint8x16_t q0 = vld1q_u8(q2), q1 = vld1q_u8(q2 + 16);
            for (int shift = 0; shift < 8; shift += 2, q8 += 32, is += 2) {
                const int8x16_t v0 = vreinterpretq_s8_u8(neon_shr_and(q0, shift, 3));
                const int8x16_t v1 = vreinterpretq_s8_u8(neon_shr_and(q1, shift, 3));
                const int32x4_t d0 = neon_dot16(vdupq_n_s32(0), v0, neon_ld_s8(q8));
                const int32x4_t d1 = neon_dot16(vdupq_n_s32(0), v1, neon_ld_s8(q8 + 16));
                isum = vmlaq_n_s32(isum, d0, sc[is] & 0xF);
                isum = vmlaq_n_s32(isum, d1, sc[is + 1] & 0xF);
            }
        }
        const float dall = anvil_rd_f32(y + Q8K_D) * neon_half(x + offsetof(anvil_block_q2_K, d));
        const float dmin = anvil_rd_f32(y + Q8K_D) * neon_half(x + offsetof(anvil_block_q2_K, dmin));
        sumf += dall * (float)vaddvq_s32(isum) - dmin * (float)summs;
    }
    *s = sumf;
}

void NEON_FN(anvil_neon_vec_dot_q3_K_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_q3_K), y += sizeof(anvil_block_q8_K)) {
        const uint8_t *scales = x + offsetof(anvil_block_q3_K, scales);
        const uint8_t *q8 = y + Q8K_QS;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            for (int j = 0; j < 4; ++j, q8 += 32) {
                const int g = 8 * h + 2 * j;
                int8x16_t c0, c1;
                q3_codes(x, h, j, &c0, &c1);
                isum = vmlaq_n_s32(isum, neon_dot16(vdupq_n_s32(0), c0, neon_ld_s8(q8)), q3_scale(scales, g));
                isum =
                    vmlaq_n_s32(isum, neon_dot16(vdupq_n_s32(0), c1, neon_ld_s8(q8 + 16)), q3_scale(scales, g + 1));
            }
        }
        const float d = neon_half(x + offsetof(anvil_block_q3_K, d)) * anvil_rd_f32(y + Q8K_D);
        sumf += d * (float)vaddvq_s32(isum);
    }
    *s = sumf;
}

void NEON_FN(anvil_neon_vec_dot_q4_K_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_q4_K), y += sizeof(anvil_block_q8_K)) {
        uint8_t sc[8], mn[8];
        neon_scale_min_k4(x + offsetof(anvil_block_q4_K, scales), sc, mn);
        int16x8_t m0, m1;
        mins_pairs(mn, &m0, &m1);
        const int summs = bsums_dot(y, m0, m1);
        const uint8_t *q4 = x + offsetof(anvil_block_q4_K, qs);
        const uint8_t *q8 = y + Q8K_QS;
        int32x4_t isum = vdupq_n_s32(0);
        for (int g = 0; g < 8; g += 2, q4 += 32, q8 += 64) {
            const uint8x16_t q0 = vld1q_u8(q4), q1 = vld1q_u8(q4 + 16);
            const int32x4_t lo = neon_dot32(vdupq_n_s32(0), neon_lo_nibbles(q0), neon_ld_s8(q8), neon_lo_nibbles(q1),
                                            neon_ld_s8(q8 + 16));
            const int32x4_t hi = neon_dot32(vdupq_n_s32(0), neon_hi_nibbles(q0), neon_ld_s8(q8 + 32),
                                            neon_hi_nibbles(q1), neon_ld_s8(q8 + 48));
            isum = vmlaq_n_s32(isum, lo, sc[g]);
            isum = vmlaq_n_s32(isum, hi, sc[g + 1]);
        }
        const float d = neon_half(x + offsetof(anvil_block_q4_K, d)) * anvil_rd_f32(y + Q8K_D);
        const float dmin = neon_half(x + offsetof(anvil_block_q4_K, dmin)) * anvil_rd_f32(y + Q8K_D);
        sumf += d * (float)vaddvq_s32(isum) - dmin * (float)summs;
    }
    *s = sumf;
}

void NEON_FN(anvil_neon_vec_dot_q5_K_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_q5_K), y += sizeof(anvil_block_q8_K)) {
        uint8_t sc[8], mn[8];
        neon_scale_min_k4(x + offsetof(anvil_block_q5_K, scales), sc, mn);
        int16x8_t m0, m1;
        mins_pairs(mn, &m0, &m1);
        const int summs = bsums_dot(y, m0, m1);
        const uint8_t *ql = x + offsetof(anvil_block_q5_K, qs);
        const uint8_t *qh = x + offsetof(anvil_block_q5_K, qh);
        const uint8_t *q8 = y + Q8K_QS;
        int32x4_t isum = vdupq_n_s32(0);
        for (int g = 0; g < 8; g += 2, ql += 32, q8 += 64) {
            int8x16_t c[4];
            q5k_codes(ql, qh, g, c);
            const int32x4_t lo = neon_dot32(vdupq_n_s32(0), c[0], neon_ld_s8(q8), c[1], neon_ld_s8(q8 + 16));
            const int32x4_t hi = neon_dot32(vdupq_n_s32(0), c[2], neon_ld_s8(q8 + 32), c[3], neon_ld_s8(q8 + 48));
            isum = vmlaq_n_s32(isum, lo, sc[g]);
            isum = vmlaq_n_s32(isum, hi, sc[g + 1]);
        }
        const float d = neon_half(x + offsetof(anvil_block_q5_K, d)) * anvil_rd_f32(y + Q8K_D);
        const float dmin = neon_half(x + offsetof(anvil_block_q5_K, dmin)) * anvil_rd_f32(y + Q8K_D);
        sumf += d * (float)vaddvq_s32(isum) - dmin * (float)summs;
    }
    *s = sumf;
}

void NEON_FN(anvil_neon_vec_dot_q6_K_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_q6_K), y += sizeof(anvil_block_q8_K)) {
        const int8_t *scales = (const int8_t *)(x + offsetof(anvil_block_q6_K, scales));
        const uint8_t *q8 = y + Q8K_QS;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            for (int k = 0; k < 4; ++k, q8 += 32) {
                const int g = 8 * h + 2 * k;
                int8x16_t c0, c1;
                q6k_codes(x, h, k, &c0, &c1);
                isum = vmlaq_n_s32(isum, neon_dot16(vdupq_n_s32(0), c0, neon_ld_s8(q8)), scales[g]);
                isum = vmlaq_n_s32(isum, neon_dot16(vdupq_n_s32(0), c1, neon_ld_s8(q8 + 16)), scales[g + 1]);
            }
        }
        const float d = neon_half(x + offsetof(anvil_block_q6_K, d)) * anvil_rd_f32(y + Q8K_D);
        sumf += d * (float)vaddvq_s32(isum);
    }
    *s = sumf;
}
