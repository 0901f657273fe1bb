/* SPDX-License-Identifier: MIT */
/*
 * SIMD encoders for the ternary and sub-2-bit formats TQ1_0 TQ2_0 Q1_0
 * Q2_0 and the micro-scaled FP4 formats MXFP4 and NVFP4 (see
 * simd_enc_common.h for how; plugins/ref/ternary_*.c and cold_fp4.c are the
 * references they reproduce). Lanes are elements: per element the work is
 * independent, and the per-block reduction is a maximum of magnitudes --
 * except Q1_0's mean, a sequential sum, which puts blocks in lanes.
 *
 * Defines EV_TABLE(small): NULL-terminated.
 */
#ifndef ANVIL_SIMD_ENC_SMALL_H
#define ANVIL_SIMD_ENC_SMALL_H

#include <float.h>

#include "simd_enc_common.h"

/* ---- TQ1_0 / TQ2_0: d = absmax, trit = lroundf(x / d) + 1 ----------------- */

/* Trits 0..2 of 1/d-scaled values. ggml's lroundf(v) + 1 for |v| <= 1 is
 * roundf + 1; when 1/d overflowed (d a tiny subnormal) every trit is 1, as
 * lroundf's answer for +-Inf and NaN (LONG_MIN) plus one, kept as int. */
EV_INLINE ev_i ev_trit(ev_f x, ev_f id) { return ev_iadd(ev_roundf(ev_mul(x, id)), ev_iset1(1)); }

static inline int ev_trit_scalar(float x, float id, int overflow) { return overflow ? 1 : (int)roundf(x * id) + 1; }

static void ev_blocks_tq2_0(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += ANVIL_QK_K, y += sizeof(anvil_block_tq2_0)) {
        const float d = ev_absmax(x, ANVIL_QK_K);
        const float idf = d != 0.0f ? 1.0f / d : 0.0f;
        ev_put_u16(y + offsetof(anvil_block_tq2_0, d), ev_fp16(d));
        uint8_t *qs = y + offsetof(anvil_block_tq2_0, qs);
        if (!(idf <= FLT_MAX)) {
            memset(qs, 0x55, ANVIL_QK_K / 4); /* every trit 1 */
            continue;
        }
        const ev_f id = ev_set1(idf);
        for (int j = 0; j < 2; ++j) {
            const float *xj = x + 128 * j;
            for (int m = 0; m < 32; m += EV_LANES) {
                const ev_i q =
                    ev_ior(ev_ior(ev_trit(ev_load(xj + m), id), ev_ishl(ev_trit(ev_load(xj + m + 32), id), 2)),
                           ev_ior(ev_ishl(ev_trit(ev_load(xj + m + 64), id), 4),
                                  ev_ishl(ev_trit(ev_load(xj + m + 96), id), 6)));
                ev_store_u8(qs + 32 * j + m, q);
            }
        }
    }
}

/* A byte of five trits: base 3, most significant first, then
 * ceil(q * 256 / 243) (q <= 242, so the float quotient truncates exactly). */
EV_INLINE ev_i ev_tq1_byte(const float *x, int stride, ev_f id) {
    ev_i q = ev_trit(ev_load(x), id);
    for (int t = 1; t < 5; ++t) {
        const ev_i q3 = ev_iadd(q, ev_ishl(q, 1));
        q = ev_iadd(q3, ev_trit(ev_load(x + t * stride), id));
    }
    return ev_cvtt(ev_div(ev_cvt(ev_iadd(ev_ishl(q, 8), ev_iset1(242))), ev_set1(243.0f)));
}

static void ev_blocks_tq1_0(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += ANVIL_QK_K, y += sizeof(anvil_block_tq1_0)) {
        const float d = ev_absmax(x, ANVIL_QK_K);
        const float idf = d != 0.0f ? 1.0f / d : 0.0f;
        const int overflow = !(idf <= FLT_MAX);
        ev_put_u16(y + offsetof(anvil_block_tq1_0, d), ev_fp16(d));
        uint8_t *qs = y + offsetof(anvil_block_tq1_0, qs);
        const ev_f id = ev_set1(overflow ? 0.0f : idf); /* 0: trit 1, as overflow's */
        for (int m = 0; m < 32; m += EV_LANES) ev_store_u8(qs + m, ev_tq1_byte(x + m, 32, id));
        for (int m = 0; m < 16; m += EV_LANES) ev_store_u8(qs + 32 + m, ev_tq1_byte(x + 160 + m, 16, id));
        uint8_t *qh = y + offsetof(anvil_block_tq1_0, qh);
        for (int m = 0; m < 4; ++m) {
            unsigned q = 0;
            for (int t = 0; t < 4; ++t) q = q * 3 + (unsigned)ev_trit_scalar(x[240 + m + 4 * t], idf, overflow);
            q *= 3;
            qh[m] = (uint8_t)((q * 256 + 242) / 243);
        }
    }
}

/* ---- Q1_0 / Q2_0 ------------------------------------------------------------ */

/* Q1_0: d = mean |x| over 128 elements, summed in element order (the f32
 * rounding of the sum is part of the bytes), so blocks go in lanes; a bit
 * per element, set for x >= 0 (-0 included). */
static void ev_blocks_q1_0(const float *x, uint8_t *y, size_t nb) {
    float xt[ANVIL_QK1_0 * EV_LANES] EV_ALIGN;
    for (size_t i = 0; i < nb; i += EV_LANES) {
        const int n = nb - i < (size_t)EV_LANES ? (int)(nb - i) : EV_LANES;
        ev_transpose(x + i * ANVIL_QK1_0, ANVIL_QK1_0, n, xt);
        ev_f sum = ev_set1(0.0f);
        for (int j = 0; j < ANVIL_QK1_0; ++j) sum = ev_add(sum, ev_abs(ev_load(xt + j * EV_LANES)));
        float d[EV_LANES];
        ev_store(d, ev_div(sum, ev_set1((float)ANVIL_QK1_0)));
        for (int b = 0; b < n; ++b) {
            const float *xb = x + (i + (size_t)b) * ANVIL_QK1_0;
            uint8_t *blk = y + (i + (size_t)b) * sizeof(anvil_block_q1_0);
            ev_put_u16(blk + offsetof(anvil_block_q1_0, d), ev_fp16(d[b]));
            uint8_t *qs = blk + offsetof(anvil_block_q1_0, qs);
            uint64_t bits = 0;
            for (int k = 0; k < ANVIL_QK1_0; k += EV_LANES) {
                bits |= (uint64_t)ev_mbits(ev_ge(ev_load(xb + k), ev_set1(0.0f))) << (k % 64);
                if ((k + EV_LANES) % 64 == 0) {
                    memcpy(qs + k / 64 * 8, &bits, sizeof bits); /* little-endian: element j is bit j */
                    bits = 0;
                }
            }
        }
    }
}

/* Q2_0: d = absmax, code = clamp((int)roundf(x / d) + 1, 0, 3), four per
 * byte from the low bits; a NaN or out-of-range quotient (1/d overflowed)
 * is x86-64's INT32_MIN, clamped to 0, as the reference's. */
static void ev_blocks_q2_0(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += ANVIL_QK2_0, y += sizeof(anvil_block_q2_0)) {
        const float d = ev_absmax(x, ANVIL_QK2_0);
        const ev_f id = ev_set1(d > 0.0f ? 1.0f / d : 0.0f);
        ev_put_u16(y + offsetof(anvil_block_q2_0, d), ev_fp16(d));
        int32_t c[ANVIL_QK2_0];
        for (int k = 0; k < ANVIL_QK2_0; k += EV_LANES) {
            ev_istore(c + k, ev_clamp(ev_iadd(ev_roundf(ev_mul(ev_load(x + k), id)), ev_iset1(1)), 0, 3));
        }
        uint8_t *qs = y + offsetof(anvil_block_q2_0, qs);
        for (int j = 0; j < ANVIL_QK2_0 / 4; ++j) {
            qs[j] = (uint8_t)(c[4 * j] | (c[4 * j + 1] << 2) | (c[4 * j + 2] << 4) | (c[4 * j + 3] << 6));
        }
    }
}

/* ---- MXFP4 / NVFP4: E2M1 codes against a shared scale ---------------------- */

/* The E2M1 magnitudes doubled (ggml's kvalues_mxfp4[0..7]; codes 8..15 are
 * their negatives). */
static const float ev_e2m1_x2[8] = { 0, 1, 2, 3, 4, 6, 8, 12 };

/* Code k of |x|'s magnitude, or its negative 8 + k where x < 0 (a zero
 * code stays 0: the reference's first minimum is the positive one). */
EV_INLINE ev_i ev_fp4_signed(ev_f x, ev_i k) {
    const ev_m neg = ev_mandnot(ev_lt(x, ev_set1(0.0f)), ev_ieq(k, ev_iset1(0)));
    return ev_iblend(neg, k, ev_iadd(k, ev_iset1(8)));
}

/* The reference's nearest code (16 distances |v * e - x|, first minimum)
 * for x in lanes: codes 8..15 (negative values) never strictly beat code 0
 * for x >= 0, nor codes 1..7 for x < 0 (their distance is at least |x|,
 * code 0's), and code 8+k's distance for x < 0 is exactly code k's for -x.
 * So the search runs over the 8 magnitudes of |x| and the sign picks the
 * half. p[k] = v[k] * e, as the reference computes it. */
EV_INLINE ev_i ev_fp4_code(ev_f x, const ev_f p[8]) {
    const ev_f ax = ev_abs(x);
    ev_f best = ax;
    ev_i k = ev_iset1(0);
    for (int c = 1; c < 8; ++c) {
        const ev_f dist = ev_abs(ev_sub(p[c], ax));
        const ev_m lt = ev_lt(dist, best);
        best = ev_blend(lt, best, dist);
        k = ev_iblend(lt, k, ev_iset1(c));
    }
    return ev_fp4_signed(x, k);
}

/* The same code without the running minimum. The distances to the 8
 * magnitudes p[0] < ... < p[7] (exact products, a gap of at least p[1]
 * between neighbours) fall, then rise: |p - ax| rounds monotonically on
 * each side of ax. Where 2 ulps of the largest magnitude in the block fit
 * in the smallest gap (amax <= p[1] * 2^21: ev_fp4_fast), the falling part
 * falls strictly, so the first minimum is at the number of steps where
 * the distance falls (strictly): one comparison with the previous
 * distance per candidate, no blends. */
EV_INLINE ev_i ev_fp4_code_falls(ev_f x, const ev_f p[8]) {
    const ev_f ax = ev_abs(x);
    ev_f prev = ax;
    ev_i k = ev_iset1(0);
    for (int c = 1; c < 8; ++c) {
        const ev_f dist = ev_abs(ev_sub(p[c], ax));
        k = ev_iinc(ev_lt(dist, prev), k);
        prev = dist;
    }
    return ev_fp4_signed(x, k);
}

EV_INLINE int ev_fp4_fast(float amax, float unit) { return amax <= unit * 0x1p21f; }

EV_INLINE void ev_fp4_products(float e, ev_f p[8]) {
    for (int c = 0; c < 8; ++c) p[c] = ev_set1(ev_e2m1_x2[c] * e);
}

/* ggml's shared exponent: (uint8_t)(floorf(log2f(amax)) - 2 + 127), the
 * conversion being x86-64's (low byte of the int32). floor(log2(amax)) is
 * the binary exponent of amax except where log2f's rounding decides it:
 * just below a power of two (log2f may round up to the integer) and for
 * subnormals; there libm's log2f is asked, as the reference does. */
static inline uint8_t ev_mxfp4_exponent(float amax) {
    if (!(amax > 0.0f)) return 0;
    uint32_t bits;
    memcpy(&bits, &amax, sizeof bits);
    const uint32_t biased = bits >> 23, mant = bits & 0x7fffffu;
    if (biased != 0 && mant < 0x7f0000u) return (uint8_t)((uint32_t)((int32_t)biased - 2) & 0xFFu);
    return (uint8_t)((uint32_t)(int32_t)(floorf(log2f(amax)) - 2.0f + 127.0f) & 0xFFu);
}

static void ev_blocks_mxfp4(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += ANVIL_QK_MXFP4, y += sizeof(anvil_block_mxfp4)) {
        const float amax = ev_absmax(x, ANVIL_QK_MXFP4);
        const uint8_t e = ev_mxfp4_exponent(amax);
        y[offsetof(anvil_block_mxfp4, e)] = e;
        ev_f p[8];
        const float unit = anvil_e8m0_to_fp32_half(e);
        ev_fp4_products(unit, p);
        ev_i c[32 / EV_LANES];
        if (ev_fp4_fast(amax, unit)) {
            for (int k = 0; k < 32 / EV_LANES; ++k) c[k] = ev_fp4_code_falls(ev_load(x + k * EV_LANES), p);
        } else {
            for (int k = 0; k < 32 / EV_LANES; ++k) c[k] = ev_fp4_code(ev_load(x + k * EV_LANES), p);
        }
        uint8_t *qs = y + offsetof(anvil_block_mxfp4, qs);
        for (int k = 0; k < 32 / EV_LANES / 2; ++k) {
            ev_store_u8(qs + k * EV_LANES, ev_ior(c[k], ev_ishl(c[k + 32 / EV_LANES / 2], 4)));
        }
    }
}

static void ev_blocks_nvfp4(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, y += sizeof(anvil_block_nvfp4)) {
        for (int sb = 0; sb < ANVIL_QK_NVFP4 / ANVIL_QK_NVFP4_SUB; ++sb, x += ANVIL_QK_NVFP4_SUB) {
            const float amax = ev_absmax(x, ANVIL_QK_NVFP4_SUB);
            const uint8_t ue = anvil_fp32_to_ue4m3(amax / 6.0f);
            y[offsetof(anvil_block_nvfp4, d) + sb] = ue;
            ev_f p[8];
            const float unit = anvil_ue4m3_to_fp32_half(ue);
            ev_fp4_products(unit, p);
            int32_t c[ANVIL_QK_NVFP4_SUB];
            if (ev_fp4_fast(amax, unit)) {
                for (int k = 0; k < ANVIL_QK_NVFP4_SUB; k += EV_LANES) {
                    ev_istore(c + k, ev_fp4_code_falls(ev_load(x + k), p));
                }
            } else {
                for (int k = 0; k < ANVIL_QK_NVFP4_SUB; k += EV_LANES)
                    ev_istore(c + k, ev_fp4_code(ev_load(x + k), p));
            }
            uint8_t *qs = y + offsetof(anvil_block_nvfp4, qs) + sb * (ANVIL_QK_NVFP4_SUB / 2);
            for (int j = 0; j < ANVIL_QK_NVFP4_SUB / 2; ++j)
                qs[j] = (uint8_t)(c[j] | (c[j + ANVIL_QK_NVFP4_SUB / 2] << 4));
        }
    }
}

EV_ENCODER(tq1_0, ANVIL_TYPE_TQ1_0, ANVIL_QK_K, sizeof(anvil_block_tq1_0), ev_blocks_tq1_0);
EV_ENCODER(tq2_0, ANVIL_TYPE_TQ2_0, ANVIL_QK_K, sizeof(anvil_block_tq2_0), ev_blocks_tq2_0);
EV_ENCODER(q1_0, ANVIL_TYPE_Q1_0, ANVIL_QK1_0, sizeof(anvil_block_q1_0), ev_blocks_q1_0);
EV_ENCODER(q2_0, ANVIL_TYPE_Q2_0, ANVIL_QK2_0, sizeof(anvil_block_q2_0), ev_blocks_q2_0);
EV_ENCODER(mxfp4, ANVIL_TYPE_MXFP4, ANVIL_QK_MXFP4, sizeof(anvil_block_mxfp4), ev_blocks_mxfp4);
EV_ENCODER(nvfp4, ANVIL_TYPE_NVFP4, ANVIL_QK_NVFP4, sizeof(anvil_block_nvfp4), ev_blocks_nvfp4);

const anvil_weight_encoder *const EV_TABLE(small)[] = {
    &ev_enc_tq1_0, &ev_enc_tq2_0, &ev_enc_q1_0, &ev_enc_q2_0, &ev_enc_mxfp4, &ev_enc_nvfp4, NULL,
};

#endif
