/* SPDX-License-Identifier: MIT */
/* backend-neon: fast row decoders, bit-identical to the codecs' decoders
 * (plugins/ref), which are ggml's dequantize_row_*.
 *
 * Each element gets exactly the reference's float operations: the integer
 * code converted to float (exact), one multiply by the same scale the
 * reference computes (scalar, same expression), and for the affine formats
 * one add or subtract. Only the unpacking of codes is vectorized. */
#include "neon_kernels.h"
#include "neon_unpack.h"
#include "neon_util.h"

/* ---- the flat 32-element family ---------------------------------------------- */

void anvil_neon_decode_q4_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const int8x16_t eight = vdupq_n_s8(8);
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_q4_0), dst += 32) {
        const float d = neon_half(b + offsetof(anvil_block_q4_0, d));
        const uint8x16_t q = vld1q_u8(b + offsetof(anvil_block_q4_0, qs));
        neon_store_scaled(dst, vsubq_s8(neon_lo_nibbles(q), eight), d);
        neon_store_scaled(dst + 16, vsubq_s8(neon_hi_nibbles(q), eight), d);
    }
}

void anvil_neon_decode_q4_1(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_q4_1), dst += 32) {
        const float d = neon_half(b + offsetof(anvil_block_q4_1, d));
        const float m = neon_half(b + offsetof(anvil_block_q4_1, m));
        const uint8x16_t q = vld1q_u8(b + offsetof(anvil_block_q4_1, qs));
        neon_store_scaled_add(dst, neon_lo_nibbles(q), d, m);
        neon_store_scaled_add(dst + 16, neon_hi_nibbles(q), d, m);
    }
}

/* The 32 five-bit codes of a Q5 block: nibbles from qs, bit 4 of element j
 * from bit j of qh. */
static inline void five_bit_codes(const uint8_t *qs, uint32_t qh, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t q = vld1q_u8(qs);
    const uint8x16_t sixteen = vdupq_n_u8(0x10);
    const uint8x16_t hb_lo = vandq_u8(neon_bits_to_mask16(qh), sixteen);
    const uint8x16_t hb_hi = vandq_u8(neon_bits_to_mask16(qh >> 16), sixteen);
    *lo = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(0x0F)), hb_lo));
    *hi = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), hb_hi));
}

void anvil_neon_decode_q5_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const int8x16_t sixteen = vdupq_n_s8(16);
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_q5_0), dst += 32) {
        const float d = neon_half(b + offsetof(anvil_block_q5_0, d));
        int8x16_t lo, hi;
        five_bit_codes(b + offsetof(anvil_block_q5_0, qs), anvil_rd_u32(b + offsetof(anvil_block_q5_0, qh)), &lo,
                       &hi);
        neon_store_scaled(dst, vsubq_s8(lo, sixteen), d);
        neon_store_scaled(dst + 16, vsubq_s8(hi, sixteen), d);
    }
}

void anvil_neon_decode_q5_1(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_q5_1), dst += 32) {
        const float d = neon_half(b + offsetof(anvil_block_q5_1, d));
        const float m = neon_half(b + offsetof(anvil_block_q5_1, m));
        int8x16_t lo, hi;
        five_bit_codes(b + offsetof(anvil_block_q5_1, qs), anvil_rd_u32(b + offsetof(anvil_block_q5_1, qh)), &lo,
                       &hi);
        neon_store_scaled_add(dst, lo, d, m);
        neon_store_scaled_add(dst + 16, hi, d, m);
    }
}

void anvil_neon_decode_q8_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_q8_0), dst += 32) {
        const float d = neon_half(b + offsetof(anvil_block_q8_0, d));
        const uint8_t *qs = b + offsetof(anvil_block_q8_0, qs);
        neon_store_scaled(dst, neon_ld_s8(qs), d);
        neon_store_scaled(dst + 16, neon_ld_s8(qs + 16), d);
    }
}

/* ---- k-quants --------------------------------------------------------------- */

void anvil_neon_decode_q2_K(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_q2_K)) {
        const float d = neon_half(b + offsetof(anvil_block_q2_K, d));
        const float min = neon_half(b + offsetof(anvil_block_q2_K, dmin));
        const uint8_t *sc = b + offsetof(anvil_block_q2_K, scales);
        const uint8_t *q = b + offsetof(anvil_block_q2_K, qs);
        int is = 0;
        for (int half = 0; half < 2; ++half, q += 32) {
            const uint8x16_t q0 = vld1q_u8(q), q1 = vld1q_u8(q + 16);
            for (int shift = 0; shift < 8; shift += 2) {
                const float dl0 = d * (float)(sc[is] & 0xF), ml0 = min * (float)(sc[is] >> 4);
                const float dl1 = d * (float)(sc[is + 1] & 0xF), ml1 = min * (float)(sc[is + 1] >> 4);
                is += 2;
                neon_store_scaled_sub(dst, vreinterpretq_s8_u8(neon_shr_and(q0, shift, 3)), dl0, ml0);
                neon_store_scaled_sub(dst + 16, vreinterpretq_s8_u8(neon_shr_and(q1, shift, 3)), dl1, ml1);
                dst += 32;
            }
        }
    }
}

void anvil_neon_decode_q3_K(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_q3_K)) {
        const float d_all = neon_half(b + offsetof(anvil_block_q3_K, d));
        const uint8_t *scales = b + offsetof(anvil_block_q3_K, scales);
        for (int h = 0; h < 2; ++h) {
            for (int j = 0; j < 4; ++j, dst += 32) {
                const int g = 8 * h + 2 * j;
                int8x16_t c0, c1;
                q3_codes(b, h, j, &c0, &c1);
                neon_store_scaled(dst, c0, d_all * (float)q3_scale(scales, g));
                neon_store_scaled(dst + 16, c1, d_all * (float)q3_scale(scales, g + 1));
            }
        }
    }
}

void anvil_neon_decode_q4_K(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_q4_K)) {
        const float d = neon_half(b + offsetof(anvil_block_q4_K, d));
        const float min = neon_half(b + offsetof(anvil_block_q4_K, dmin));
        uint8_t sc[8], mn[8];
        neon_scale_min_k4(b + offsetof(anvil_block_q4_K, scales), sc, mn);
        const uint8_t *q = b + offsetof(anvil_block_q4_K, qs);
        for (int g = 0; g < 8; g += 2, q += 32, dst += 64) {
            const float d1 = d * (float)sc[g], m1 = min * (float)mn[g];
            const float d2 = d * (float)sc[g + 1], m2 = min * (float)mn[g + 1];
            const uint8x16_t q0 = vld1q_u8(q), q1 = vld1q_u8(q + 16);
            neon_store_scaled_sub(dst, neon_lo_nibbles(q0), d1, m1);
            neon_store_scaled_sub(dst + 16, neon_lo_nibbles(q1), d1, m1);
            neon_store_scaled_sub(dst + 32, neon_hi_nibbles(q0), d2, m2);
            neon_store_scaled_sub(dst + 48, neon_hi_nibbles(q1), d2, m2);
        }
    }
}

void anvil_neon_decode_q5_K(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_q5_K)) {
        const float d = neon_half(b + offsetof(anvil_block_q5_K, d));
        const float min = neon_half(b + offsetof(anvil_block_q5_K, dmin));
        uint8_t sc[8], mn[8];
        neon_scale_min_k4(b + offsetof(anvil_block_q5_K, scales), sc, mn);
        const uint8_t *ql = b + offsetof(anvil_block_q5_K, qs);
        const uint8_t *qh = b + offsetof(anvil_block_q5_K, qh);
        for (int g = 0; g < 8; g += 2, ql += 32, dst += 64) {
            const float d1 = d * (float)sc[g], m1 = min * (float)mn[g];
            const float d2 = d * (float)sc[g + 1], m2 = min * (float)mn[g + 1];
            int8x16_t c[4];
            q5k_codes(ql, qh, g, c);
            neon_store_scaled_sub(dst, c[0], d1, m1);
            neon_store_scaled_sub(dst + 16, c[1], d1, m1);
            neon_store_scaled_sub(dst + 32, c[2], d2, m2);
            neon_store_scaled_sub(dst + 48, c[3], d2, m2);
        }
    }
}

void anvil_neon_decode_q6_K(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_q6_K)) {
        const float d = neon_half(b + offsetof(anvil_block_q6_K, d));
        const int8_t *scales = (const int8_t *)(b + offsetof(anvil_block_q6_K, scales));
        for (int h = 0; h < 2; ++h) {
            for (int k = 0; k < 4; ++k, dst += 32) {
                const int g = 8 * h + 2 * k;
                int8x16_t c0, c1;
                q6k_codes(b, h, k, &c0, &c1);
                /* (d * sc) * q, as the reference rounds it */
                neon_store_scaled(dst, c0, d * (float)scales[g]);
                neon_store_scaled(dst + 16, c1, d * (float)scales[g + 1]);
            }
        }
    }
}

/* ---- ternary ---------------------------------------------------------------- */

void anvil_neon_decode_tq1_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_tq1_0), dst += ANVIL_QK_K) {
        const float d = neon_half(b + offsetof(anvil_block_tq1_0, d));
        int8x16_t v[16];
        tq1_0_values(b, v);
        /* v[] order: group 0 (t = 0..4, two halves), group 1, group 2. */
        for (int t = 0; t < 5; ++t) {
            neon_store_scaled(dst + 32 * t, v[2 * t], d);
            neon_store_scaled(dst + 32 * t + 16, v[2 * t + 1], d);
            neon_store_scaled(dst + 160 + 16 * t, v[10 + t], d);
        }
        neon_store_scaled(dst + 240, v[15], d);
    }
}

void anvil_neon_decode_tq2_0(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const int8x16_t one = vdupq_n_s8(1);
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_tq2_0)) {
        const float d = neon_half(b + offsetof(anvil_block_tq2_0, d));
        const uint8_t *qs = b + offsetof(anvil_block_tq2_0, qs);
        for (int j = 0; j < 64; j += 32) {
            const uint8x16_t q0 = vld1q_u8(qs + j), q1 = vld1q_u8(qs + j + 16);
            for (int l = 0; l < 4; ++l, dst += 32) {
                neon_store_scaled(dst, vsubq_s8(vreinterpretq_s8_u8(neon_shr_and(q0, 2 * l, 3)), one), d);
                neon_store_scaled(dst + 16, vsubq_s8(vreinterpretq_s8_u8(neon_shr_and(q1, 2 * l, 3)), one), d);
            }
        }
    }
}

/* ---- IQ4_NL, IQ4_XS, MXFP4: 4-bit codes through a 16-entry table ------------------ */

void anvil_neon_decode_iq4_nl(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const int8x16_t table = vld1q_s8(neon_iq4nl_values);
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_iq4_nl), dst += 32) {
        const float d = neon_half(b + offsetof(anvil_block_iq4_nl, d));
        const uint8x16_t q = vld1q_u8(b + offsetof(anvil_block_iq4_nl, qs));
        neon_store_scaled(dst, vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F))), d);
        neon_store_scaled(dst + 16, vqtbl1q_s8(table, vshrq_n_u8(q, 4)), d);
    }
}

void anvil_neon_decode_iq4_xs(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const int8x16_t table = vld1q_s8(neon_iq4nl_values);
    for (size_t i = 0; i < n / ANVIL_QK_K; ++i, b += sizeof(anvil_block_iq4_xs)) {
        const float d = neon_half(b + offsetof(anvil_block_iq4_xs, d));
        const uint16_t sh = anvil_rd_u16(b + offsetof(anvil_block_iq4_xs, scales_h));
        const uint8_t *sl = b + offsetof(anvil_block_iq4_xs, scales_l);
        const uint8_t *qs = b + offsetof(anvil_block_iq4_xs, qs);
        for (int ib = 0; ib < 8; ++ib, qs += 16, dst += 32) {
            const int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
            const float dl = d * (float)(ls - 32);
            const uint8x16_t q = vld1q_u8(qs);
            neon_store_scaled(dst, vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F))), dl);
            neon_store_scaled(dst + 16, vqtbl1q_s8(table, vshrq_n_u8(q, 4)), dl);
        }
    }
}

void anvil_neon_decode_mxfp4(const void *src, float *dst, size_t n) {
    const uint8_t *b = src;
    const int8x16_t table = vld1q_s8(neon_e2m1_x2_values);
    for (size_t i = 0; i < n / 32; ++i, b += sizeof(anvil_block_mxfp4), dst += 32) {
        const float d = anvil_e8m0_to_fp32_half(b[offsetof(anvil_block_mxfp4, e)]);
        const uint8x16_t q = vld1q_u8(b + offsetof(anvil_block_mxfp4, qs));
        neon_store_scaled(dst, vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F))), d);
        neon_store_scaled(dst + 16, vqtbl1q_s8(table, vshrq_n_u8(q, 4)), d);
    }
}
