/* SPDX-License-Identifier: MIT */
/*
 * SIMD encoders for the non-linear 4-bit formats IQ4_NL and IQ4_XS, without
 * and with an importance matrix (see simd_enc_common.h for how;
 * plugins/ref/cold_nl.c is the reference they reproduce:
 * ggml_quantize_chunk).
 *
 * The cost is ggml's scale search per 32-element block: a first guess and
 * 15 trial scales, each a pass over the block that maps every element to
 * its nearest level and sums x^2-weighted products in order. Each lane runs
 * the whole search of one block from a transposed copy; the nearest level
 * is the reference's branch-free binary search (2x against the integer
 * midpoints of neighbouring levels), with the levels and midpoints in
 * 16-entry lane tables.
 *
 * Defines EV_TABLE(iq4): NULL-terminated.
 */
#ifndef ANVIL_SIMD_ENC_IQ4_H
#define ANVIL_SIMD_ENC_IQ4_H

#include "simd_enc_common.h"

/* ggml's kvalues_iq4nl, and 2x's thresholds: entry j (1..15) is
 * values[j - 1] + values[j] (entry 0 is never read). */
static const float ev_iq4_levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
static const float ev_iq4_mid2[16] = { 0, -231, -187, -148, -114, -84, -57, -32, -9, 14, 38, 63, 91, 122, 158, 202 };

/* The level index nearest to x (at a midpoint the upper one). Each step
 * moves up unless 2x < the midpoint sum, as the reference's !(2x < sum):
 * NaN (a scale whose weighted sums overflowed) walks to the top level, 15,
 * as in ggml's search, where every comparison fails. */
EV_INLINE ev_i ev_iq4_index(ev_f x, ev_lut16 mid2) {
    const ev_f x2 = ev_add(x, x);
    ev_i k = ev_iblend(ev_lt(x2, ev_set1(ev_iq4_mid2[8])), ev_iset1(8), ev_iset1(0));
    for (int step = 4; step > 0; step >>= 1) {
        const ev_i j = ev_iadd(k, ev_iset1(step));
        k = ev_iblend(ev_lt(x2, ev_lut16_get(mid2, j)), j, k);
    }
    return k;
}

/* The weighted sums of one trial scale 1/id over a block per lane: sum w q
 * x and sum w q q, q the level nearest to id x, in element order; w is x^2,
 * or wt (transposed) with an importance matrix. */
EV_INLINE void ev_iq4_sums(const float *xt, const float *wt, ev_f id, ev_lut16 levels, ev_lut16 mid2, ev_f *sumqx,
                           ev_f *sumq2) {
    ev_f sx = ev_set1(0.0f), s2 = sx;
    for (int j = 0; j < 32; ++j) {
        const ev_f x = ev_load(xt + j * EV_LANES);
        const ev_f q = ev_lut16_get(levels, ev_iq4_index(ev_mul(id, x), mid2));
        const ev_f wq = ev_mul(wt != NULL ? ev_load(wt + j * EV_LANES) : ev_mul(x, x), q);
        sx = ev_add(sx, ev_mul(wq, x));
        s2 = ev_add(s2, ev_mul(wq, q));
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* One block's scale per lane (xt: 32 elements per lane): the reference's
 * first guess and trials -7..7, keeping strictly better fits. */
EV_INLINE ev_f ev_iq4_scale(const float *xt, const float *wt, ev_lut16 levels, ev_lut16 mid2) {
    const ev_f zero = ev_set1(0.0f);
    ev_f amax, max;
    ev_lanes_absmax(xt, 32, &amax, &max);
    const ev_m tiny = ev_lt(amax, ev_set1(1e-15f));
    ev_f d = ev_div(ev_neg(max), ev_set1(ev_iq4_levels[0]));
    ev_f id = ev_div(ev_set1(1.0f), d);
    ev_f sumqx, sumq2;
    ev_iq4_sums(xt, wt, id, levels, mid2, &sumqx, &sumq2);
    d = ev_blend(ev_gt(sumq2, zero), zero, ev_div(sumqx, sumq2));
    ev_f best = ev_mul(d, sumqx);
    for (int itry = -7; itry <= 7; ++itry) {
        id = ev_div(ev_set1((float)(itry + (int)ev_iq4_levels[0])), max);
        ev_iq4_sums(xt, wt, id, levels, mid2, &sumqx, &sumq2);
        const ev_m win = ev_mand(ev_gt(sumq2, zero), ev_gt(ev_mul(sumqx, sumqx), ev_mul(best, sumq2)));
        const ev_f nd = ev_div(sumqx, sumq2);
        d = ev_blend(win, d, nd);
        best = ev_blend(win, best, ev_mul(nd, sumqx));
    }
    return ev_blend(tiny, d, zero);
}

/* Scales of ng consecutive 32-element blocks; with importance weights qw
 * (the blocks' columns) the element weights are qw sqrt(sigma2 + x^2),
 * sigma2 twice the mean square of each block's super-block (sigma2_sb, one
 * per 8 blocks: IQ4_XS) or of the block itself (sigma2_sb NULL: IQ4_NL),
 * summed in element order and scaled by 2/n as ggml's. */
static void ev_iq4_scales(const float *x, const float *qw, const float *sigma2_sb, int ng, float *scales) {
    const ev_lut16 levels = ev_lut16_load(ev_iq4_levels), mid2 = ev_lut16_load(ev_iq4_mid2);
    float xt[32 * EV_LANES] EV_ALIGN, qt[32 * EV_LANES] EV_ALIGN, wt[32 * EV_LANES] EV_ALIGN;
    for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
        const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
        ev_transpose(x + (size_t)g0 * 32, 32, nl, xt);
        if (qw != NULL) {
            ev_f sigma2;
            if (sigma2_sb != NULL) {
                float s2[EV_LANES];
                for (int l = 0; l < EV_LANES; ++l) s2[l] = l < nl ? sigma2_sb[(g0 + l) / 8] : 0.0f;
                sigma2 = ev_load(s2);
            } else {
                ev_f sum = ev_set1(0.0f);
                for (int j = 0; j < 32; ++j) {
                    const ev_f v = ev_load(xt + j * EV_LANES);
                    sum = ev_add(sum, ev_mul(v, v));
                }
                sigma2 = ev_mul(sum, ev_set1(2.f / 32.0f));
            }
            ev_transpose(qw + (size_t)g0 * 32, 32, nl, qt);
            (void)ev_lanes_importance(xt, qt, 32, sigma2, wt);
        }
        ev_store(scales + g0, ev_iq4_scale(xt, qw != NULL ? wt : NULL, levels, mid2));
    }
}

/* Codes of one 32-element block against 1/d, packed: element j in the low
 * nibble of byte j, j + 16 in the high one. */
EV_INLINE void ev_iq4_pack32(const float *x, float id, uint8_t *qs, ev_lut16 mid2) {
    const ev_f vid = ev_set1(id);
    ev_i c[32 / EV_LANES];
    for (int k = 0; k < 32 / EV_LANES; ++k) c[k] = ev_iq4_index(ev_mul(vid, ev_load(x + k * EV_LANES)), mid2);
    for (int k = 0; k < 32 / EV_LANES / 2; ++k) {
        ev_store_u8(qs + k * EV_LANES, ev_ior(c[k], ev_ishl(c[k + 32 / EV_LANES / 2], 4)));
    }
}

#define EV_IQ4_RUN (EV_LANES > 8 ? EV_LANES : 8) /* blocks searched per run: whole IQ4_XS super-blocks */

static void ev_blocks_iq4_nl_any(const float *x, const float *qw, uint8_t *y, size_t nb) {
    const ev_lut16 mid2 = ev_lut16_load(ev_iq4_mid2);
    for (size_t i = 0; i < nb; i += EV_LANES) {
        const int n = nb - i < (size_t)EV_LANES ? (int)(nb - i) : EV_LANES;
        float scales[EV_LANES];
        ev_iq4_scales(x + i * 32, qw != NULL ? qw + i * 32 : NULL, NULL, n, scales);
        for (int b = 0; b < n; ++b) {
            uint8_t *blk = y + (i + (size_t)b) * sizeof(anvil_block_iq4_nl);
            const float d = scales[b];
            ev_put_u16(blk + offsetof(anvil_block_iq4_nl, d), anvil_fp32_to_fp16(d));
            ev_iq4_pack32(x + (i + (size_t)b) * 32, d != 0.0f ? 1.0f / d : 0.0f,
                          blk + offsetof(anvil_block_iq4_nl, qs), mid2);
        }
    }
}

static void ev_blocks_iq4_xs_any(const float *x, const float *qw, uint8_t *y, size_t nb) {
    const ev_lut16 mid2 = ev_lut16_load(ev_iq4_mid2);
    const size_t per_run = EV_IQ4_RUN / 8; /* super-blocks */
    for (size_t i = 0; i < nb; i += per_run) {
        const int nsb = nb - i < per_run ? (int)(nb - i) : (int)per_run;
        float scales[EV_IQ4_RUN], sigma2[EV_IQ4_RUN / 8] = { 0 };
        if (qw != NULL) {
            for (int s = 0; s < nsb; ++s) {
                sigma2[s] =
                    anvil_kq_sum_squares(x + (i + (size_t)s) * ANVIL_QK_K, ANVIL_QK_K) * (2.f / (float)ANVIL_QK_K);
            }
        }
        ev_iq4_scales(x + i * ANVIL_QK_K, qw != NULL ? qw + i * ANVIL_QK_K : NULL, sigma2, 8 * nsb, scales);
        for (int s = 0; s < nsb; ++s) {
            const float *xs = x + (i + (size_t)s) * ANVIL_QK_K;
            const float *sc = scales + 8 * s;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_iq4_xs);
            float amax_scale = 0.0f, max_scale = 0.0f;
            for (int ib = 0; ib < 8; ++ib) {
                const float a = fabsf(sc[ib]);
                if (a > amax_scale) {
                    amax_scale = a;
                    max_scale = sc[ib];
                }
            }
            const float d = -max_scale / 32.0f;
            ev_put_u16(blk + offsetof(anvil_block_iq4_xs, d), anvil_fp32_to_fp16(d));
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            uint16_t scales_h = 0;
            uint8_t *scales_l = blk + offsetof(anvil_block_iq4_xs, scales_l);
            for (int ib = 0; ib < 8; ++ib) {
                int l = anvil_nearest_int(id * sc[ib]);
                l = l < -32 ? -32 : (l > 31 ? 31 : l);
                const float dl = d * (float)l;
                ev_iq4_pack32(xs + 32 * ib, dl != 0.0f ? 1.0f / dl : 0.0f,
                              blk + offsetof(anvil_block_iq4_xs, qs) + 16 * ib, mid2);
                l += 32;
                if (ib % 2 == 0) {
                    scales_l[ib / 2] = (uint8_t)(l & 0xf);
                } else {
                    scales_l[ib / 2] |= (uint8_t)((l & 0xf) << 4);
                }
                scales_h |= (uint16_t)((l >> 4) << (2 * ib));
            }
            ev_put_u16(blk + offsetof(anvil_block_iq4_xs, scales_h), scales_h);
        }
    }
}

static void ev_blocks_iq4_nl(const float *x, uint8_t *y, size_t nb) { ev_blocks_iq4_nl_any(x, NULL, y, nb); }
static void ev_blocks_iq4_xs(const float *x, uint8_t *y, size_t nb) { ev_blocks_iq4_xs_any(x, NULL, y, nb); }
static void ev_wblocks_iq4_nl(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_iq4_nl_any(x, qw, y, nb);
}
static void ev_wblocks_iq4_xs(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_iq4_xs_any(x, qw, y, nb);
}

EV_ENCODER_WEIGHTED(iq4_nl, ANVIL_TYPE_IQ4_NL, ANVIL_QK4_NL, sizeof(anvil_block_iq4_nl), ev_blocks_iq4_nl,
                    ev_wblocks_iq4_nl, 0);
EV_ENCODER_WEIGHTED(iq4_xs, ANVIL_TYPE_IQ4_XS, ANVIL_QK_K, sizeof(anvil_block_iq4_xs), ev_blocks_iq4_xs,
                    ev_wblocks_iq4_xs, 0);

const anvil_weight_encoder *const EV_TABLE(iq4)[] = { &ev_enc_iq4_nl, &ev_enc_iq4_xs, NULL };

#endif
