/* SPDX-License-Identifier: MIT */
/*
 * SIMD encoders for the flat 32-element family: Q8_0 Q8_1 Q4_0 Q4_1 Q5_0
 * Q5_1 (see simd_enc_common.h for how, and plugins/ref/q8_0_family.c for
 * the reference they reproduce). Without an importance matrix, lanes are
 * elements of one block: every per-element operation is independent, and
 * the per-block reductions are a maximum, a minimum and a first index,
 * which are exact in any order. With one (quantize_row_*_impl: weighted
 * searches over each block), blocks are in lanes as in the K-quants
 * (simd_enc_fits.h); Q8_0's matrix is ignored, as ggml's.
 *
 * Defines EV_TABLE(flat): NULL-terminated.
 */
#ifndef ANVIL_SIMD_ENC_FLAT_H
#define ANVIL_SIMD_ENC_FLAT_H

#include <float.h>

#include "simd_enc_fits.h"

#define EV_NV32 (32 / EV_LANES) /* vectors per 32-element block */

/* ---- Q8_0 / Q8_1: d = amax / 127, q = roundf(x / d) ---------------------- */

/* The 32 codes (int32, the signed value of the stored byte) of one block
 * into qs; returns d. When 1/d overflows x * id is +-Inf or NaN, whose
 * conversion stores 0, as the reference's. */
EV_INLINE float ev_q8_codes(const float *x, uint8_t *qs, ev_i q[EV_NV32]) {
    ev_f v[EV_NV32];
    ev_f m = ev_abs(v[0] = ev_load(x));
    for (int k = 1; k < EV_NV32; ++k) m = ev_max_mag(m, ev_abs(v[k] = ev_load(x + k * EV_LANES)));
    const float amax = ev_hmax(m);
    const float d = amax / 127.0f;
    const ev_f id = ev_set1(d != 0.0f ? 1.0f / d : 0.0f);
    for (int k = 0; k < EV_NV32; ++k) {
        q[k] = ev_roundf(ev_mul(v[k], id));
        ev_store_u8(qs + k * EV_LANES, q[k]);
    }
    return d;
}

static void ev_blocks_q8_0(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += 32, y += sizeof(anvil_block_q8_0)) {
        ev_i q[EV_NV32];
        const float d = ev_q8_codes(x, y + offsetof(anvil_block_q8_0, qs), q);
        ev_put_u16(y + offsetof(anvil_block_q8_0, d), ev_fp16(d));
    }
}

static void ev_blocks_q8_1(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += 32, y += sizeof(anvil_block_q8_1)) {
        ev_i q[EV_NV32];
        const float d = ev_q8_codes(x, y + offsetof(anvil_block_q8_1, qs), q);
        /* the sum of the stored (signed) bytes; exact in int32 */
        ev_i s = ev_sext8(q[0]);
        for (int k = 1; k < EV_NV32; ++k) s = ev_iadd(s, ev_sext8(q[k]));
        int32_t lanes[EV_LANES];
        ev_istore(lanes, s);
        int sum = 0;
        for (int l = 0; l < EV_LANES; ++l) sum += lanes[l];
        ev_put_u16(y + offsetof(anvil_block_q8_1, d), ev_fp16(d));
        ev_put_u16(y + offsetof(anvil_block_q8_1, s), ev_fp16((float)sum * d));
    }
}

/* ---- Q4_0 / Q5_0: d = max / -2^(b-1), codes trunc(x / d + 2^(b-1) + .5) - */

/* Codes (0..2^b - 1 for finite input; the reference's exact conversion in
 * every case: low byte of the truncation, read signed, capped at top, low
 * byte kept) of one block; returns d.
 *
 * The block's signed extremes give the reference's max (the first element
 * of largest magnitude) without a search unless +a and -a both reach it.
 * When a * |id| < 137 (a the largest magnitude; rounding is monotonic, so
 * every |x * id| is at most that), each t = x * id + offset lies in
 * (-128.5, 2^b + 0.5]: its truncation is already the signed low byte, and
 * min(trunc(t), top) = trunc(min(t, top + .5)) — one float minimum where the
 * general path needs a sign extension and an integer minimum. Only the low
 * byte of a code is ever stored, which both paths agree on. */
EV_INLINE float ev_symmetric_block(const float *x, float levels, float offset, int top, ev_i c[EV_NV32]) {
    ev_f v[EV_NV32];
    ev_f lo = v[0] = ev_load(x), hi = lo;
    for (int k = 1; k < EV_NV32; ++k) {
        v[k] = ev_load(x + k * EV_LANES);
        lo = ev_min_lt(v[k], lo);
        hi = ev_max_gt(v[k], hi);
    }
    /* exact in any order; the sign of a zero extreme is not used */
    const float min = -ev_hmax(ev_neg(lo)), max_v = ev_hmax(hi);
    float amax;
    float max;
    if (max_v > -min) {
        max = amax = max_v;
    } else if (-min > max_v) {
        max = min;
        amax = -min;
    } else if (max_v == 0.0f) {
        max = amax = 0.0f; /* all zeros: the reference's max stays +0 */
    } else {
        max = ev_first_absmax(x, 32, &amax); /* +a and -a: the first one */
    }
    const float d = max / levels;
    const float idf = d != 0.0f ? 1.0f / d : 0.0f;
    const ev_f id = ev_set1(idf);
    const ev_f off = ev_set1(offset);
    if (amax * fabsf(idf) < 137.0f) {
        const ev_f cap = ev_set1((float)top + 0.5f);
        for (int k = 0; k < EV_NV32; ++k) c[k] = ev_cvtt(ev_min_lt(ev_add(ev_mul(v[k], id), off), cap));
        return d;
    }
    for (int k = 0; k < EV_NV32; ++k) {
        const ev_i t = ev_cvtt(ev_add(ev_mul(v[k], id), off));
        c[k] = ev_iand(ev_imin(ev_sext8(t), ev_iset1(top)), ev_iset1(0xff));
    }
    return d;
}

/* Element j in the low nibble of byte j, element j + 16 in the high one. */
EV_INLINE void ev_pack_nibbles(const ev_i c[EV_NV32], uint8_t *qs) {
    for (int k = 0; k < EV_NV32 / 2; ++k) {
        ev_store_u8(qs + k * EV_LANES, ev_ior(c[k], ev_ishl(c[k + EV_NV32 / 2], 4)));
    }
}

/* Low nibbles as above; bit 4 of element j in bit j of the qh word. */
EV_INLINE void ev_pack_five_bits(const ev_i c[EV_NV32], uint8_t *qs, uint8_t *qh) {
    const ev_i lo4 = ev_iset1(0xf), bit4 = ev_iset1(16);
    uint32_t high = 0;
    for (int k = 0; k < EV_NV32; ++k) {
        high |= (uint32_t)ev_mbits(ev_ieq(ev_iand(c[k], bit4), bit4)) << (k * EV_LANES);
    }
    for (int k = 0; k < EV_NV32 / 2; ++k) {
        ev_store_u8(qs + k * EV_LANES, ev_ior(ev_iand(c[k], lo4), ev_ishl(ev_iand(c[k + EV_NV32 / 2], lo4), 4)));
    }
    memcpy(qh, &high, sizeof high);
}

static void ev_blocks_q4_0(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += 32, y += sizeof(anvil_block_q4_0)) {
        ev_i c[EV_NV32];
        const float d = ev_symmetric_block(x, -8.0f, 8.5f, 15, c);
        ev_put_u16(y + offsetof(anvil_block_q4_0, d), ev_fp16(d));
        ev_pack_nibbles(c, y + offsetof(anvil_block_q4_0, qs));
    }
}

static void ev_blocks_q5_0(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += 32, y += sizeof(anvil_block_q5_0)) {
        ev_i c[EV_NV32];
        const float d = ev_symmetric_block(x, -16.0f, 16.5f, 31, c);
        ev_put_u16(y + offsetof(anvil_block_q5_0, d), ev_fp16(d));
        ev_pack_five_bits(c, y + offsetof(anvil_block_q5_0, qs), y + offsetof(anvil_block_q5_0, qh));
    }
}

/* ---- Q4_1 / Q5_1: an affine map of [min, max] onto 0..2^b - 1 ---------- */

/* The first element (in order) numerically equal to v: only a zero has two
 * encodings, and the reference keeps the first one its strict comparison
 * met (`if (x < min) min = x` never replaces -0 by +0 or back). */
EV_INLINE float ev_first_equal_zero(const float *x) {
    const ev_f z = ev_set1(0.0f);
    for (int k = 0; k < 32; k += EV_LANES) {
        const unsigned hit = ev_mbits(ev_eq(ev_load(x + k), z));
        if (hit != 0) return x[k + __builtin_ctz(hit)];
    }
    return 0.0f; /* not reached */
}

EV_INLINE void ev_affine_block(const float *x, float steps, int cap, int signed_cast, float *d_out, float *min_out,
                               ev_i c[EV_NV32]) {
    ev_f v[EV_NV32];
    ev_f lo = v[0] = ev_load(x), hi = lo;
    for (int k = 1; k < EV_NV32; ++k) {
        v[k] = ev_load(x + k * EV_LANES);
        lo = ev_min_lt(v[k], lo); /* if (x < min) min = x */
        hi = ev_max_gt(v[k], hi); /* if (x > max) max = x */
    }
    /* exact in any order; a zero's sign is the first zero's (below) */
    float min = -ev_hmax(ev_neg(lo)), max = ev_hmax(hi);
    if (min == 0.0f) min = ev_first_equal_zero(x);
    if (max == 0.0f) max = ev_first_equal_zero(x);
    const float d = (max - min) / steps;
    const float idf = d != 0.0f ? 1.0f / d : 0.0f;
    const ev_f id = ev_set1(idf);
    const ev_f vmin = ev_set1(min), half = ev_set1(0.5f);
    /* Every x - min lies in [0, max - min] and the roundings are monotonic:
     * when (max - min) * id + .5 < 2^b, every truncation is a code already
     * (0..2^b - 1), which the conversions below leave as it is. */
    if ((max - min) * idf + 0.5f < steps + 1.0f) {
        for (int k = 0; k < EV_NV32; ++k) c[k] = ev_cvtt(ev_add(ev_mul(ev_sub(v[k], vmin), id), half));
        *d_out = d;
        *min_out = min;
        return;
    }
    for (int k = 0; k < EV_NV32; ++k) {
        const ev_i t = ev_cvtt(ev_add(ev_mul(ev_sub(v[k], vmin), id), half));
        ev_i q = signed_cast ? ev_sext8(t) : ev_iand(t, ev_iset1(0xff));
        if (cap >= 0) q = ev_imin(q, ev_iset1(cap));
        c[k] = ev_iand(q, ev_iset1(0xff));
    }
    *d_out = d;
    *min_out = min;
}

static void ev_blocks_q4_1(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += 32, y += sizeof(anvil_block_q4_1)) {
        ev_i c[EV_NV32];
        float d, min;
        ev_affine_block(x, 15.0f, 15, 1, &d, &min, c);
        ev_put_u16(y + offsetof(anvil_block_q4_1, d), ev_fp16(d));
        ev_put_u16(y + offsetof(anvil_block_q4_1, m), ev_fp16(min));
        ev_pack_nibbles(c, y + offsetof(anvil_block_q4_1, qs));
    }
}

static void ev_blocks_q5_1(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; ++i, x += 32, y += sizeof(anvil_block_q5_1)) {
        ev_i c[EV_NV32];
        float d, min;
        ev_affine_block(x, 31.0f, -1, 0, &d, &min, c);
        ev_put_u16(y + offsetof(anvil_block_q5_1, d), ev_fp16(d));
        ev_put_u16(y + offsetof(anvil_block_q5_1, m), ev_fp16(min));
        ev_pack_five_bits(c, y + offsetof(anvil_block_q5_1, qs), y + offsetof(anvil_block_q5_1, qh));
    }
}

/* ---- with an importance matrix: weighted searches, blocks in lanes ---------- */

/* quantize_row_<t>_impl: element weights qw * sqrt(sigma2 + x^2) (sigma2
 * the row's mean square), then make_qx_quants (symmetric: Q4_0 Q5_0) or
 * make_qkx3_quants (affine: Q4_1 Q5_1) per block; the search's codes are
 * stored as they are (no requantization). */
static void ev_wblocks_flat(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb, int nmax,
                            int affine, size_t bb, size_t off_m, size_t off_qh, size_t off_qs) {
    float xt[32 * EV_LANES] EV_ALIGN, qt[32 * EV_LANES] EV_ALIGN, wt[32 * EV_LANES] EV_ALIGN;
    for (size_t i = 0; i < nb; i += EV_LANES) {
        const int nl = nb - i < (size_t)EV_LANES ? (int)(nb - i) : EV_LANES;
        ev_transpose(x + i * 32, 32, nl, xt);
        ev_transpose(qw + i * 32, 32, nl, qt);
        (void)ev_lanes_importance(xt, qt, 32, ev_set1(sigma2), wt);
        float d[EV_LANES], m[EV_LANES], isc[EV_LANES], gmin[EV_LANES];
        unsigned tiny = 0;
        if (affine) {
            const ev_affine_fit f = ev_fit_affine(32, nmax, xt, wt, -0.9f, 0.05f, 36, 0);
            ev_store(d, f.scale);
            ev_store(m, ev_neg(f.neg_min));
            ev_store(isc, f.iscale);
            ev_store(gmin, f.gmin);
        } else {
            ev_f vi;
            ev_m vt;
            ev_store(d, ev_fit_symmetric(xt, wt, 32, nmax, &vi, &vt));
            ev_store(isc, vi);
            tiny = ev_mbits(vt);
        }
        for (int b = 0; b < nl; ++b) {
            const float *xb = x + (i + (size_t)b) * 32;
            uint8_t *blk = y + (i + (size_t)b) * bb;
            ev_i c[EV_NV32];
            for (int k = 0; k < EV_NV32; ++k) {
                const ev_f v = ev_load(xb + k * EV_LANES);
                if (affine) {
                    c[k] = ev_clamp(ev_nearest(ev_mul(ev_set1(isc[b]), ev_sub(v, ev_set1(gmin[b])))), 0, nmax);
                } else if ((tiny >> b) & 1u) {
                    c[k] = ev_iset1(0);
                } else {
                    c[k] = ev_iadd(ev_clamp(ev_nearest(ev_mul(ev_set1(isc[b]), v)), -nmax, nmax - 1), ev_iset1(nmax));
                }
            }
            ev_put_u16(blk, anvil_fp32_to_fp16(d[b])); /* d first in every block */
            if (affine) ev_put_u16(blk + off_m, anvil_fp32_to_fp16(m[b]));
            if (off_qh != 0) {
                ev_pack_five_bits(c, blk + off_qs, blk + off_qh);
            } else {
                ev_pack_nibbles(c, blk + off_qs);
            }
        }
    }
}

static void ev_wblocks_q4_0(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    ev_wblocks_flat(x, qw, sigma2, y, nb, 8, 0, sizeof(anvil_block_q4_0), 0, 0, offsetof(anvil_block_q4_0, qs));
}
static void ev_wblocks_q5_0(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    ev_wblocks_flat(x, qw, sigma2, y, nb, 16, 0, sizeof(anvil_block_q5_0), 0, offsetof(anvil_block_q5_0, qh),
                    offsetof(anvil_block_q5_0, qs));
}
static void ev_wblocks_q4_1(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    ev_wblocks_flat(x, qw, sigma2, y, nb, 15, 1, sizeof(anvil_block_q4_1), offsetof(anvil_block_q4_1, m), 0,
                    offsetof(anvil_block_q4_1, qs));
}
static void ev_wblocks_q5_1(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    ev_wblocks_flat(x, qw, sigma2, y, nb, 31, 1, sizeof(anvil_block_q5_1), offsetof(anvil_block_q5_1, m),
                    offsetof(anvil_block_q5_1, qh), offsetof(anvil_block_q5_1, qs));
}

EV_ENCODER(q8_0, ANVIL_TYPE_Q8_0, 32, sizeof(anvil_block_q8_0), ev_blocks_q8_0);
EV_ENCODER(q8_1, ANVIL_TYPE_Q8_1, 32, sizeof(anvil_block_q8_1), ev_blocks_q8_1);
EV_ENCODER_WEIGHTED(q4_0, ANVIL_TYPE_Q4_0, 32, sizeof(anvil_block_q4_0), ev_blocks_q4_0, ev_wblocks_q4_0, 1);
EV_ENCODER_WEIGHTED(q4_1, ANVIL_TYPE_Q4_1, 32, sizeof(anvil_block_q4_1), ev_blocks_q4_1, ev_wblocks_q4_1, 1);
EV_ENCODER_WEIGHTED(q5_0, ANVIL_TYPE_Q5_0, 32, sizeof(anvil_block_q5_0), ev_blocks_q5_0, ev_wblocks_q5_0, 1);
EV_ENCODER_WEIGHTED(q5_1, ANVIL_TYPE_Q5_1, 32, sizeof(anvil_block_q5_1), ev_blocks_q5_1, ev_wblocks_q5_1, 1);

const anvil_weight_encoder *const EV_TABLE(flat)[] = {
    &ev_enc_q8_0, &ev_enc_q8_1, &ev_enc_q4_0, &ev_enc_q4_1, &ev_enc_q5_0, &ev_enc_q5_1, NULL,
};

#endif
