/* SPDX-License-Identifier: MIT */
/* backend-neon: dots of TQ1_0, TQ2_0 (against Q8_K) and of the table
 * formats IQ4_NL, MXFP4 (against Q8_0) and IQ4_XS (against Q8_K). Compiled
 * once per variant.
 *
 * Integer parts are exact and equal to the references' (plugins/ref:
 * ternary_tq*.c, cold_nl.c, cold_fp4.c); the float parts repeat the
 * references' expressions in the same order, so the results are the
 * references' to the bit. */
#include "neon_kernels.h"
#include "neon_unpack.h"
#include "neon_util.h"

#define Q8K_D offsetof(anvil_block_q8_K, d)
#define Q8K_QS offsetof(anvil_block_q8_K, qs)
#define Q8K_BSUMS offsetof(anvil_block_q8_K, bsums)

void NEON_FN(anvil_neon_vec_dot_tq1_0_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_tq1_0), y += sizeof(anvil_block_q8_K)) {
        const uint8_t *q8 = y + Q8K_QS;
        int8x16_t v[16];
        tq1_0_values(x, v);
        int32x4_t acc = vdupq_n_s32(0);
        for (int t = 0; t < 5; ++t) {
            acc = neon_dot32(acc, v[2 * t], neon_ld_s8(q8 + 32 * t), v[2 * t + 1], neon_ld_s8(q8 + 32 * t + 16));
            acc = neon_dot16(acc, v[10 + t], neon_ld_s8(q8 + 160 + 16 * t));
        }
        acc = neon_dot16(acc, v[15], neon_ld_s8(q8 + 240));
        const int sum = vaddvq_s32(acc);
        sumf += (float)sum * (neon_half(x + offsetof(anvil_block_tq1_0, d)) * anvil_rd_f32(y + Q8K_D));
    }
    *s = sumf;
}

/* sum (c - 1) q8 = sum c q8 - sum q8, the last term from the bsums, as the
 * reference computes it (so even hand-made activations agree). */
void NEON_FN(anvil_neon_vec_dot_tq2_0_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_tq2_0), y += sizeof(anvil_block_q8_K)) {
        const uint8_t *qs = x + offsetof(anvil_block_tq2_0, qs);
        const uint8_t *q8 = y + Q8K_QS;
        int32x4_t acc = vdupq_n_s32(0);
        for (int j = 0; j < 64; j += 32) {
            const uint8x16_t q0 = vld1q_u8(qs + j), q1 = vld1q_u8(qs + j + 16);
            for (int l = 0; l < 4; ++l, q8 += 32) {
                acc = neon_dot32(acc, vreinterpretq_s8_u8(neon_shr_and(q0, 2 * l, 3)), neon_ld_s8(q8),
                                 vreinterpretq_s8_u8(neon_shr_and(q1, 2 * l, 3)), neon_ld_s8(q8 + 16));
            }
        }
        const int16x8_t b0 = neon_ld_s16x8(y + Q8K_BSUMS), b1 = neon_ld_s16x8(y + Q8K_BSUMS + 16);
        const int all = vaddlvq_s16(b0) + vaddlvq_s16(b1);
        const int sumi = vaddvq_s32(acc) - all;
        const float d = anvil_rd_f32(y + Q8K_D) * neon_half(x + offsetof(anvil_block_tq2_0, d));
        sumf += (float)sumi * d;
    }
    *s = sumf;
}

/* Integer dot of 16 bytes of 4-bit codes (low nibble: element j, high:
 * j + 16) mapped through `table`, with 32 int8 activations. */
static inline int table_dot32(int8x16_t table, const uint8_t *qs, const uint8_t *q8) {
    const uint8x16_t q = vld1q_u8(qs);
    const int8x16_t lo = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
    return vaddvq_s32(neon_dot32(vdupq_n_s32(0), lo, neon_ld_s8(q8), hi, neon_ld_s8(q8 + 16)));
}

void NEON_FN(anvil_neon_vec_dot_iq4_nl_q8_0)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const int8x16_t table = vld1q_s8(neon_iq4nl_values);
    float sumf = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, x += sizeof(anvil_block_iq4_nl), y += sizeof(anvil_block_q8_0)) {
        const float d = neon_half(y + offsetof(anvil_block_q8_0, d)) * neon_half(x + offsetof(anvil_block_iq4_nl, d));
        const int sumi = table_dot32(table, x + offsetof(anvil_block_iq4_nl, qs), y + offsetof(anvil_block_q8_0, qs));
        sumf += d * (float)sumi;
    }
    *s = sumf;
}

void NEON_FN(anvil_neon_vec_dot_iq4_xs_q8_K)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const int8x16_t table = vld1q_s8(neon_iq4nl_values);
    float sumf = 0.0f;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, x += sizeof(anvil_block_iq4_xs), y += sizeof(anvil_block_q8_K)) {
        const float d4d8 = neon_half(x + offsetof(anvil_block_iq4_xs, d)) * anvil_rd_f32(y + Q8K_D);
        const uint16_t sh = anvil_rd_u16(x + offsetof(anvil_block_iq4_xs, scales_h));
        const uint8_t *sl = x + offsetof(anvil_block_iq4_xs, scales_l);
        const uint8_t *qs = x + offsetof(anvil_block_iq4_xs, qs);
        const uint8_t *q8 = y + Q8K_QS;
        for (int ib = 0; ib < 8; ++ib, qs += 16, q8 += 32) {
            const int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
            const float dl = d4d8 * (float)(ls - 32);
            sumf += dl * (float)table_dot32(table, qs, q8);
        }
    }
    *s = sumf;
}

void NEON_FN(anvil_neon_vec_dot_mxfp4_q8_0)(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const int8x16_t table = vld1q_s8(neon_e2m1_x2_values);
    float sumf = 0.0f;
    for (size_t i = 0; i < n / 32; ++i, x += sizeof(anvil_block_mxfp4), y += sizeof(anvil_block_q8_0)) {
        const float d =
            neon_half(y + offsetof(anvil_block_q8_0, d)) * anvil_e8m0_to_fp32_half(x[offsetof(anvil_block_mxfp4, e)]);
        const int sumi = table_dot32(table, x + offsetof(anvil_block_mxfp4, qs), y + offsetof(anvil_block_q8_0, qs));
        sumf += d * (float)sumi;
    }
    *s = sumf;
}
