/*
 * SIMD encoders for the K-quants: Q2_K Q3_K Q4_K Q5_K Q6_K (see
 * simd_enc_common.h for how; plugins/ref/kquants_*.c and kquants_search.c
 * are the reference they reproduce, ggml's quantize_row_q*_K_ref).
 *
 * The cost is in the per-group scale searches (make_qkx2_quants,
 * make_qx_quants, make_q3_quants): tens of candidate grids, each a
 * sequential weighted sum over the group. Here each lane runs the search of
 * ONE group (a 32-element group of Q4_K/Q5_K, a 16-element group of the
 * others) from a transposed copy, so every lane's sums are the reference's
 * sums in the reference's order, its candidates tried in the reference's
 * order, its strict comparisons the reference's (ties keep the earlier
 * candidate). The per-super-block steps (6-bit/4-bit scale quantization,
 * fp16 scales) are scalar, with the reference's scale packing helpers
 * (plugins/ref/kquants_search.h, linked in); the requantization against the
 * stored scales runs across the elements of a group.
 *
 * A group whose requantization scale is 0 keeps its search codes: those are
 * recomputed from the winning candidate's grid (the grid's inverse scale
 * and offset, kept per lane) or, for Q3_K, whose search moves single codes,
 * read back from the lanes.
 *
 * Defines EV_TABLE(kquants): NULL-terminated.
 */
#ifndef ANVIL_SIMD_ENC_KQUANTS_H
#define ANVIL_SIMD_ENC_KQUANTS_H

#include "ref/kquants_search.h"
#include "simd_enc_common.h"

#define EV_KQ_EPS ANVIL_KQ_GROUP_EPS

static inline int ev_clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* ---- make_qkx2_quants, one group per lane ---------------------------------
 * Fit x ~ scale * L - neg_min, L in [0, nmax], weighted; codes of the
 * winner: clamp(nearest(iscale * (x - gmin)), 0, nmax). */
typedef struct ev_affine_fit {
    ev_f scale, neg_min, iscale, gmin;
} ev_affine_fit;

EV_INLINE ev_affine_fit ev_fit_affine(int n, int nmax, const float *xt, const float *wt, float rmin, float rdelta,
                                      int nstep, int use_mad) {
    const ev_f zero = ev_set1(0.0f);
    ev_f min = ev_load(xt), max = min;
    ev_f sum_w = ev_load(wt);
    ev_f sum_x = ev_mul(sum_w, min);
    for (int i = 1; i < n; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
        min = ev_blend(ev_lt(x, min), min, x);
        max = ev_blend(ev_gt(x, max), max, x);
        sum_w = ev_add(sum_w, w);
        sum_x = ev_add(sum_x, ev_mul(w, x));
    }
    min = ev_blend(ev_gt(min, zero), min, zero);
    const ev_m flat = ev_eq(max, min); /* the reference returns early: L = 0 */
    const ev_f flat_min = min;

    /* Candidate 0: nmax + 1 levels over [min, max]. */
    ev_f iscale = ev_div(ev_set1((float)nmax), ev_sub(max, min));
    ev_f scale = ev_div(ev_set1(1.0f), iscale);
    ev_f best = zero;
    for (int i = 0; i < n; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
        const ev_f fl = ev_cvt(ev_clamp(ev_nearest(ev_mul(iscale, ev_sub(x, min))), 0, nmax));
        ev_f diff = ev_sub(ev_add(ev_mul(scale, fl), min), x);
        diff = use_mad ? ev_abs(diff) : ev_mul(diff, diff);
        best = ev_add(best, ev_mul(w, diff));
    }
    ev_f g_iscale = iscale, g_min = min;

    /* Stretched grids, each solved in closed form; the offset moves when a
     * candidate wins, and the next grids start from it (per lane). */
    float lf[32 * EV_LANES] EV_ALIGN;
    for (int is = 0; is <= nstep; ++is) {
        const float num = rmin + rdelta * (float)is + (float)nmax;
        const ev_f isc = ev_div(ev_set1(num), ev_sub(max, min));
        ev_f sl = zero, sl2 = zero, sxl = zero;
        for (int i = 0; i < n; ++i) {
            const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
            const ev_f fl = ev_cvt(ev_clamp(ev_nearest(ev_mul(isc, ev_sub(x, min))), 0, nmax));
            ev_store(lf + i * EV_LANES, fl);
            const ev_f wl = ev_mul(w, fl);
            sl = ev_add(sl, wl);
            sl2 = ev_add(sl2, ev_mul(wl, fl));
            sxl = ev_add(sxl, ev_mul(wl, x));
        }
        const ev_f D = ev_sub(ev_mul(sum_w, sl2), ev_mul(sl, sl));
        const ev_m ok = ev_gt(D, zero);
        if (!ev_many(ok)) continue;
        ev_f this_scale = ev_div(ev_sub(ev_mul(sum_w, sxl), ev_mul(sum_x, sl)), D);
        ev_f this_min = ev_div(ev_sub(ev_mul(sl2, sum_x), ev_mul(sl, sxl)), D);
        const ev_m pos = ev_gt(this_min, zero);
        this_min = ev_blend(pos, this_min, zero);
        this_scale = ev_blend(pos, this_scale, ev_div(sxl, sl2));
        ev_f cur = zero;
        for (int i = 0; i < n; ++i) {
            const ev_f x = ev_load(xt + i * EV_LANES), w = ev_load(wt + i * EV_LANES);
            ev_f diff = ev_sub(ev_add(ev_mul(this_scale, ev_load(lf + i * EV_LANES)), this_min), x);
            diff = use_mad ? ev_abs(diff) : ev_mul(diff, diff);
            cur = ev_add(cur, ev_mul(w, diff));
        }
        const ev_m win = ev_mand(ok, ev_lt(cur, best));
        g_iscale = ev_blend(win, g_iscale, isc);
        g_min = ev_blend(win, g_min, min);
        best = ev_blend(win, best, cur);
        scale = ev_blend(win, scale, this_scale);
        min = ev_blend(win, min, this_min);
    }
    ev_affine_fit r;
    r.scale = ev_blend(flat, scale, zero);
    r.neg_min = ev_neg(ev_blend(flat, min, flat_min));
    r.iscale = ev_blend(flat, g_iscale, zero);
    r.gmin = ev_blend(flat, g_min, zero);
    return r;
}

/* Search codes of an affine group (for a group whose scale quantizes to 0). */
static void ev_affine_codes(const float *x, int n, int nmax, float iscale, float gmin, int32_t *L) {
    for (int i = 0; i < n; ++i) L[i] = ev_clamp_int(anvil_nearest_int(iscale * (x[i] - gmin)), 0, nmax);
}

/* Per-group fit results of a run of super-blocks, lanes stored out. */
#define EV_KQ_SB (EV_LANES >= 16 ? EV_LANES / 16 : 1) /* super-blocks per run (16 groups each at most) */
#define EV_KQ_MAXG (16 * EV_KQ_SB > EV_LANES ? 16 * EV_KQ_SB : EV_LANES)
typedef struct ev_group_fits {
    float scale[2 * EV_KQ_MAXG], neg_min[2 * EV_KQ_MAXG], iscale[2 * EV_KQ_MAXG], gmin[2 * EV_KQ_MAXG];
} ev_group_fits;

/* Fit ng groups of len elements (x: the groups one after the other) with
 * make_qkx2_quants. weights_mode 0: sqrt(mean x^2) + |x| (Q4_K/Q5_K),
 * 1: |x| (Q2_K). */
static void ev_fit_affine_groups(const float *x, int ng, int len, int nmax, float rmin, int nstep, int use_mad,
                                 int weights_mode, ev_group_fits *out) {
    float xt[32 * EV_LANES] EV_ALIGN, wt[32 * EV_LANES] EV_ALIGN;
    for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
        const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
        ev_transpose(x + (size_t)g0 * len, len, nl, xt);
        if (weights_mode == 0) {
            ev_f sum_x2 = ev_set1(0.0f);
            for (int i = 0; i < len; ++i) {
                const ev_f v = ev_load(xt + i * EV_LANES);
                sum_x2 = ev_add(sum_x2, ev_mul(v, v));
            }
            const ev_f av_x = ev_sqrt(ev_div(sum_x2, ev_set1((float)len)));
            for (int i = 0; i < len; ++i) ev_store(wt + i * EV_LANES, ev_add(av_x, ev_abs(ev_load(xt + i * EV_LANES))));
        } else {
            for (int i = 0; i < len; ++i) ev_store(wt + i * EV_LANES, ev_abs(ev_load(xt + i * EV_LANES)));
        }
        const ev_affine_fit f = ev_fit_affine(len, nmax, xt, wt, rmin, 0.1f, nstep, use_mad);
        ev_store(out->scale + g0, f.scale);
        ev_store(out->neg_min + g0, f.neg_min);
        ev_store(out->iscale + g0, f.iscale);
        ev_store(out->gmin + g0, f.gmin);
    }
}

/* ---- Q4_K / Q5_K ---------------------------------------------------------- */

/* One super-block of Q4_K/Q5_K from its 8 group fits: the 12 scale bytes,
 * d, dmin, and the 256 codes (0..nmax) against the stored scales. */
static void ev_affine_k4_finish(const float *x, int nmax, const ev_group_fits *f, int g0, uint8_t *scales,
                                uint8_t *d_out, uint8_t *dmin_out, int32_t L[ANVIL_QK_K]) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        if (f->scale[g0 + j] > max_scale) max_scale = f->scale[g0 + j];
        if (f->neg_min[g0 + j] > max_min) max_min = f->neg_min[g0 + j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; ++j) {
        const uint8_t s = (uint8_t)anvil_nearest_int(inv_scale * f->scale[g0 + j]);
        const uint8_t m = (uint8_t)anvil_nearest_int(inv_min * f->neg_min[g0 + j]);
        ls[j] = s < 63 ? s : 63;
        lm[j] = m < 63 ? m : 63;
    }
    anvil_kq_pack_scale_min_k4(scales, ls, lm);
    const anvil_half d = anvil_fp32_to_fp16(max_scale / 63.f), dmin = anvil_fp32_to_fp16(max_min / 63.f);
    ev_put_u16(d_out, d);
    ev_put_u16(dmin_out, dmin);
    const float d_all = anvil_fp16_to_fp32(d), dmin_all = anvil_fp16_to_fp32(dmin);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m; /* the stored scale and min, as the decoder reads them */
        anvil_kq_scale_min_k4(scales, j, &sc, &m);
        const float dj = d_all * (float)sc;
        if (dj == 0.0f) {
            ev_affine_codes(x + 32 * j, 32, nmax, f->iscale[g0 + j], f->gmin[g0 + j], L + 32 * j);
            continue;
        }
        const ev_f vd = ev_set1(dj), vdm = ev_set1(dmin_all * (float)m);
        for (int k = 0; k < 32; k += EV_LANES) {
            const ev_f v = ev_load(x + 32 * j + k);
            ev_istore(L + 32 * j + k, ev_clamp(ev_nearest(ev_div(ev_add(v, vdm), vd)), 0, nmax));
        }
    }
}

static void ev_blocks_affine_k4(const float *x, uint8_t *y, size_t nb, int q5) {
    const int nmax = q5 ? 31 : 15;
    const size_t bb = q5 ? sizeof(anvil_block_q5_K) : sizeof(anvil_block_q4_K);
    for (size_t i = 0; i < nb; i += EV_KQ_SB * 2) {
        const int nsb = nb - i < (size_t)EV_KQ_SB * 2 ? (int)(nb - i) : EV_KQ_SB * 2;
        ev_group_fits f;
        ev_fit_affine_groups(x + i * ANVIL_QK_K, 8 * nsb, 32, nmax, q5 ? -0.5f : -1.f, q5 ? 15 : 20, 0, 0, &f);
        for (int s = 0; s < nsb; ++s) {
            const float *xs = x + (i + (size_t)s) * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * bb;
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            if (q5) {
                ev_affine_k4_finish(xs, nmax, &f, 8 * s, blk + offsetof(anvil_block_q5_K, scales),
                                    blk + offsetof(anvil_block_q5_K, d), blk + offsetof(anvil_block_q5_K, dmin), L);
                uint8_t *ql = blk + offsetof(anvil_block_q5_K, qs);
                uint8_t *qh = blk + offsetof(anvil_block_q5_K, qh);
                const ev_i lo4 = ev_iset1(0xf);
                for (int l = 0; l < 32; l += EV_LANES) {
                    ev_i h = ev_iset1(0);
                    for (int n = 0; n < ANVIL_QK_K; n += 64) {
                        const ev_i a = ev_iload(L + n + l), b = ev_iload(L + n + 32 + l);
                        ev_store_u8(ql + n / 2 + l, ev_ior(ev_iand(a, lo4), ev_ishl(ev_iand(b, lo4), 4)));
                        h = ev_ior(h, ev_ior(ev_ishlv(ev_isrl(a, 4), n / 32), ev_ishlv(ev_isrl(b, 4), n / 32 + 1)));
                    }
                    ev_store_u8(qh + l, h);
                }
            } else {
                ev_affine_k4_finish(xs, nmax, &f, 8 * s, blk + offsetof(anvil_block_q4_K, scales),
                                    blk + offsetof(anvil_block_q4_K, d), blk + offsetof(anvil_block_q4_K, dmin), L);
                uint8_t *q = blk + offsetof(anvil_block_q4_K, qs);
                for (int n = 0; n < ANVIL_QK_K; n += 64) {
                    for (int l = 0; l < 32; l += EV_LANES) {
                        ev_store_u8(q + n / 2 + l, ev_ior(ev_iload(L + n + l), ev_ishl(ev_iload(L + n + 32 + l), 4)));
                    }
                }
            }
        }
    }
}

static void ev_blocks_q4_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_affine_k4(x, y, nb, 0); }
static void ev_blocks_q5_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_affine_k4(x, y, nb, 1); }

/* ---- Q2_K ------------------------------------------------------------------- */

/* Four codes per byte: element l, l+32, l+64, l+96 of each 128-half in bit
 * pairs 0, 2, 4, 6 (Q2_K's qs, Q3_K's low bits). */
EV_INLINE void ev_pack_2bit(const int32_t L[ANVIL_QK_K], uint8_t *qs) {
    for (int j = 0; j < ANVIL_QK_K; j += 128) {
        for (int l = 0; l < 32; l += EV_LANES) {
            const ev_i v = ev_ior(ev_ior(ev_iload(L + j + l), ev_ishl(ev_iload(L + j + l + 32), 2)),
                                  ev_ior(ev_ishl(ev_iload(L + j + l + 64), 4), ev_ishl(ev_iload(L + j + l + 96), 6)));
            ev_store_u8(qs + j / 4 + l, v);
        }
    }
}

static void ev_blocks_q2_K(const float *x, uint8_t *y, size_t nb) {
    const float q4scale = 15.f;
    for (size_t i = 0; i < nb; i += EV_KQ_SB) {
        const int nsb = nb - i < (size_t)EV_KQ_SB ? (int)(nb - i) : EV_KQ_SB;
        ev_group_fits f;
        ev_fit_affine_groups(x + i * ANVIL_QK_K, 16 * nsb, 16, 3, -0.5f, 15, 1, 1, &f);
        for (int s = 0; s < nsb; ++s) {
            const float *xs = x + (i + (size_t)s) * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_q2_K);
            uint8_t *scales = blk + offsetof(anvil_block_q2_K, scales);
            const int g0 = 16 * s;
            float max_scale = 0, max_min = 0;
            for (int j = 0; j < 16; ++j) {
                if (f.scale[g0 + j] > max_scale) max_scale = f.scale[g0 + j];
                if (f.neg_min[g0 + j] > max_min) max_min = f.neg_min[g0 + j];
            }
            anvil_half d, dmin;
            if (max_scale > 0) {
                const float iscale = q4scale / max_scale;
                for (int j = 0; j < 16; ++j) scales[j] = (uint8_t)anvil_nearest_int(iscale * f.scale[g0 + j]);
                d = anvil_fp32_to_fp16(max_scale / q4scale);
            } else {
                memset(scales, 0, 16);
                d = anvil_fp32_to_fp16(0.f);
            }
            if (max_min > 0) {
                const float iscale = q4scale / max_min;
                for (int j = 0; j < 16; ++j) {
                    const int l = anvil_nearest_int(iscale * f.neg_min[g0 + j]);
                    scales[j] |= (uint8_t)((unsigned)l << 4);
                }
                dmin = anvil_fp32_to_fp16(max_min / q4scale);
            } else {
                dmin = anvil_fp32_to_fp16(0.f);
            }
            ev_put_u16(blk + offsetof(anvil_block_q2_K, d), d);
            ev_put_u16(blk + offsetof(anvil_block_q2_K, dmin), dmin);
            const float d_all = anvil_fp16_to_fp32(d), dmin_all = anvil_fp16_to_fp32(dmin);
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            for (int j = 0; j < 16; ++j) {
                const float dj = d_all * (float)(scales[j] & 0xF);
                if (dj == 0.0f) {
                    ev_affine_codes(xs + 16 * j, 16, 3, f.iscale[g0 + j], f.gmin[g0 + j], L + 16 * j);
                    continue;
                }
                const ev_f vd = ev_set1(dj), vdm = ev_set1(dmin_all * (float)(scales[j] >> 4));
                for (int k = 0; k < 16; k += EV_LANES) {
                    const ev_f v = ev_load(xs + 16 * j + k);
                    ev_istore(L + 16 * j + k, ev_clamp(ev_nearest(ev_div(ev_add(v, vdm), vd)), 0, 3));
                }
            }
            ev_pack_2bit(L, blk + offsetof(anvil_block_q2_K, qs));
        }
    }
}

/* ---- make_qx_quants (rmse_type 1, no weights): Q6_K, one group per lane --- */

/* Returns the scale per lane; the winner's grid is iscale_out (codes
 * clamp(nearest(iscale * x), -nmax, nmax - 1) + nmax), and tiny lanes
 * (all below EV_KQ_EPS: scale 0, codes 0) are flagged in tiny_out. */
EV_INLINE ev_f ev_fit_symmetric(const float *xt, int nmax, ev_f *iscale_out, ev_m *tiny_out) {
    const ev_f zero = ev_set1(0.0f);
    ev_f amax, max;
    ev_lanes_absmax(xt, 16, &amax, &max);
    const ev_m tiny = ev_lt(amax, ev_set1(EV_KQ_EPS));
    ev_f w[16], wx[16];
    for (int i = 0; i < 16; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES);
        w[i] = ev_mul(x, x);
        wx[i] = ev_mul(w[i], x);
    }
    ev_f best_iscale = ev_div(ev_set1((float)(-nmax)), max);
    ev_f sumlx = zero, suml2 = zero;
    for (int i = 0; i < 16; ++i) {
        const ev_f fl = ev_cvt(ev_clamp(ev_nearest(ev_mul(best_iscale, ev_load(xt + i * EV_LANES))), -nmax, nmax - 1));
        sumlx = ev_add(sumlx, ev_mul(wx[i], fl));
        suml2 = ev_add(suml2, ev_mul(ev_mul(w[i], fl), fl));
    }
    ev_f scale = ev_blend(ev_ne(suml2, zero), zero, ev_div(sumlx, suml2));
    ev_f best = ev_mul(scale, sumlx);
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        const ev_f isc = ev_div(ev_set1(-((float)nmax + 0.1f * (float)is)), max);
        sumlx = suml2 = zero;
        for (int i = 0; i < 16; ++i) {
            const ev_f fl = ev_cvt(ev_clamp(ev_nearest(ev_mul(isc, ev_load(xt + i * EV_LANES))), -nmax, nmax - 1));
            sumlx = ev_add(sumlx, ev_mul(wx[i], fl));
            suml2 = ev_add(suml2, ev_mul(ev_mul(w[i], fl), fl));
        }
        const ev_m win = ev_mand(ev_gt(suml2, zero), ev_gt(ev_mul(sumlx, sumlx), ev_mul(best, suml2)));
        const ev_f s = ev_div(sumlx, suml2);
        scale = ev_blend(win, scale, s);
        best = ev_blend(win, best, ev_mul(s, sumlx));
        best_iscale = ev_blend(win, best_iscale, isc);
    }
    *iscale_out = best_iscale;
    *tiny_out = tiny;
    return ev_blend(tiny, scale, zero);
}

/* See kquants_q3_k.c: an int stored into int8_t, two's complement. */
static inline int ev_wrap_int8(int v) { return (int)((unsigned)v & 0xFFu) - (((unsigned)v & 0x80u) ? 256 : 0); }

static void ev_blocks_q6_K(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; i += EV_KQ_SB) {
        const int nsb = nb - i < (size_t)EV_KQ_SB ? (int)(nb - i) : EV_KQ_SB;
        const int ng = 16 * nsb;
        float scale[EV_KQ_MAXG], iscale[EV_KQ_MAXG];
        uint32_t tiny_bits[EV_KQ_MAXG / EV_LANES + 1];
        float xt[16 * EV_LANES] EV_ALIGN;
        for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
            const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
            ev_transpose(x + i * ANVIL_QK_K + (size_t)g0 * 16, 16, nl, xt);
            ev_f isc;
            ev_m tiny;
            ev_store(scale + g0, ev_fit_symmetric(xt, 32, &isc, &tiny));
            ev_store(iscale + g0, isc);
            tiny_bits[g0 / EV_LANES] = ev_mbits(tiny);
        }
        for (int s = 0; s < nsb; ++s) {
            const float *xs = x + (i + (size_t)s) * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_q6_K);
            const int g0 = 16 * s;
            float max_scale = 0, max_abs_scale = 0;
            for (int ib = 0; ib < 16; ++ib) {
                const float a = fabsf(scale[g0 + ib]);
                if (a > max_abs_scale) {
                    max_abs_scale = a;
                    max_scale = scale[g0 + ib];
                }
            }
            if (max_abs_scale < EV_KQ_EPS) {
                memset(blk, 0, sizeof(anvil_block_q6_K));
                ev_put_u16(blk + offsetof(anvil_block_q6_K, d), anvil_fp32_to_fp16(0.f));
                continue;
            }
            const float is = -128.f / max_scale;
            const anvil_half d = anvil_fp32_to_fp16(1 / is);
            ev_put_u16(blk + offsetof(anvil_block_q6_K, d), d);
            int8_t *scales = (int8_t *)(blk + offsetof(anvil_block_q6_K, scales));
            for (int ib = 0; ib < 16; ++ib) {
                const int v = anvil_nearest_int(is * scale[g0 + ib]);
                scales[ib] = (int8_t)ev_wrap_int8(v < 127 ? v : 127);
            }
            const float d_all = anvil_fp16_to_fp32(d);
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            for (int j = 0; j < 16; ++j) {
                const float dj = d_all * (float)scales[j];
                if (dj == 0.0f) {
                    const int g = g0 + j;
                    const int tiny = (tiny_bits[g / EV_LANES] >> (g % EV_LANES)) & 1;
                    for (int ii = 0; ii < 16; ++ii) {
                        L[16 * j + ii] =
                            tiny ? 0 : ev_clamp_int(anvil_nearest_int(iscale[g] * xs[16 * j + ii]), -32, 31) + 32;
                    }
                    continue;
                }
                const ev_f vd = ev_set1(dj);
                for (int k = 0; k < 16; k += EV_LANES) {
                    const ev_i l = ev_clamp(ev_nearest(ev_div(ev_load(xs + 16 * j + k), vd)), -32, 31);
                    ev_istore(L + 16 * j + k, ev_iadd(l, ev_iset1(32)));
                }
            }
            uint8_t *ql = blk + offsetof(anvil_block_q6_K, ql);
            uint8_t *qh = blk + offsetof(anvil_block_q6_K, qh);
            const ev_i lo4 = ev_iset1(0xF);
            for (int j = 0; j < ANVIL_QK_K; j += 128) {
                for (int l = 0; l < 32; l += EV_LANES) {
                    const ev_i c0 = ev_iload(L + j + l), c1 = ev_iload(L + j + l + 32);
                    const ev_i c2 = ev_iload(L + j + l + 64), c3 = ev_iload(L + j + l + 96);
                    ev_store_u8(ql + l, ev_ior(ev_iand(c0, lo4), ev_ishl(ev_iand(c2, lo4), 4)));
                    ev_store_u8(ql + l + 32, ev_ior(ev_iand(c1, lo4), ev_ishl(ev_iand(c3, lo4), 4)));
                    const ev_i h = ev_ior(ev_ior(ev_isra(c0, 4), ev_ishl(ev_isra(c1, 4), 2)),
                                          ev_ior(ev_ishl(ev_isra(c2, 4), 4), ev_ishl(ev_isra(c3, 4), 6)));
                    ev_store_u8(qh + l, h);
                }
                ql += 64;
                qh += 32;
            }
        }
    }
}

/* ---- make_q3_quants (do_rmse), one group per lane: Q3_K -------------------- */

/* Codes (0..2 nmax - 1) into lt (element i of lane l at lt[i * EV_LANES +
 * l]); returns the scale (0 for tiny lanes, whose codes are 0). */
EV_INLINE ev_f ev_fit_symmetric_refined(const float *xt, int nmax, int32_t *lt) {
    const ev_f zero = ev_set1(0.0f);
    ev_f amax, max;
    ev_lanes_absmax(xt, 16, &amax, &max);
    const ev_m tiny = ev_lt(amax, ev_set1(EV_KQ_EPS));
    const ev_f iscale = ev_div(ev_set1((float)(-nmax)), max);
    ev_f w[16], wx[16];
    ev_i L[16];
    ev_f sumlx = zero, suml2 = zero;
    for (int i = 0; i < 16; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES);
        w[i] = ev_mul(x, x);
        wx[i] = ev_mul(w[i], x);
        L[i] = ev_clamp(ev_nearest(ev_mul(iscale, x)), -nmax, nmax - 1);
        const ev_f fl = ev_cvt(L[i]);
        sumlx = ev_add(sumlx, ev_mul(wx[i], fl));
        suml2 = ev_add(suml2, ev_mul(ev_mul(w[i], fl), fl));
    }
    ev_m active = ev_eq(zero, zero); /* every lane */
    for (int itry = 0; itry < 5; ++itry) {
        ev_m changed = ev_ne(zero, zero); /* no lane */
        for (int i = 0; i < 16; ++i) {
            const ev_f x = ev_load(xt + i * EV_LANES);
            const ev_f li = ev_cvt(L[i]);
            const ev_f slx = ev_sub(sumlx, ev_mul(wx[i], li));
            const ev_m pos = ev_gt(slx, zero);
            if (!ev_many(pos)) continue;
            const ev_f sl2 = ev_sub(suml2, ev_mul(ev_mul(w[i], li), li));
            const ev_i new_l = ev_clamp(ev_nearest(ev_div(ev_mul(x, sl2), slx)), -nmax, nmax - 1);
            const ev_f fl = ev_cvt(new_l);
            const ev_f slx2 = ev_add(slx, ev_mul(wx[i], fl));
            const ev_f sl22 = ev_add(sl2, ev_mul(ev_mul(w[i], fl), fl));
            const ev_m better = ev_mand(ev_gt(sl22, zero), ev_gt(ev_mul(ev_mul(slx2, slx2), suml2),
                                                                 ev_mul(ev_mul(sumlx, sumlx), sl22)));
            const ev_m take = ev_mand(ev_mandnot(ev_mand(pos, active), ev_ieq(new_l, L[i])), better);
            L[i] = ev_iblend(take, L[i], new_l);
            sumlx = ev_blend(take, sumlx, slx2);
            suml2 = ev_blend(take, suml2, sl22);
            changed = ev_mor(changed, take);
        }
        active = ev_mand(active, changed);
        if (!ev_many(active)) break;
    }
    const ev_i zi = ev_iset1(0);
    for (int i = 0; i < 16; ++i) ev_istore(lt + i * EV_LANES, ev_iblend(tiny, ev_iadd(L[i], ev_iset1(nmax)), zi));
    const ev_f scale = ev_blend(ev_gt(suml2, zero), zero, ev_div(sumlx, suml2));
    return ev_blend(tiny, scale, zero);
}

static void ev_blocks_q3_K(const float *x, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; i += EV_KQ_SB) {
        const int nsb = nb - i < (size_t)EV_KQ_SB ? (int)(nb - i) : EV_KQ_SB;
        const int ng = 16 * nsb;
        float scale[EV_KQ_MAXG];
        int32_t lt[(EV_KQ_MAXG / EV_LANES + 1) * 16 * EV_LANES] EV_ALIGN;
        float xt[16 * EV_LANES] EV_ALIGN;
        for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
            const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
            ev_transpose(x + i * ANVIL_QK_K + (size_t)g0 * 16, 16, nl, xt);
            ev_store(scale + g0, ev_fit_symmetric_refined(xt, 4, lt + (g0 / EV_LANES) * 16 * EV_LANES));
        }
        for (int s = 0; s < nsb; ++s) {
            const float *xs = x + (i + (size_t)s) * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_q3_K);
            uint8_t *scales = blk + offsetof(anvil_block_q3_K, scales);
            const int g0 = 16 * s;
            float max_scale = 0, amax = 0;
            for (int j = 0; j < 16; ++j) {
                const float a = fabsf(scale[g0 + j]);
                if (a > amax) {
                    amax = a;
                    max_scale = scale[g0 + j];
                }
            }
            memset(scales, 0, 12);
            anvil_half d;
            if (max_scale != 0.0f) {
                const float iscale = -32.f / max_scale;
                for (int j = 0; j < 16; ++j) {
                    int l = ev_wrap_int8(anvil_nearest_int(iscale * scale[g0 + j]));
                    l = (l < -32 ? -32 : (l > 31 ? 31 : l)) + 32;
                    if (j < 8) {
                        scales[j] = (uint8_t)(l & 0xF);
                    } else {
                        scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                    }
                    l >>= 4;
                    scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
                }
                d = anvil_fp32_to_fp16(1 / iscale);
            } else {
                d = anvil_fp32_to_fp16(0.f);
            }
            ev_put_u16(blk + offsetof(anvil_block_q3_K, d), d);
            const float d_all = anvil_fp16_to_fp32(d);
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            for (int j = 0; j < 16; ++j) {
                const float dj = d_all * (float)anvil_kq_q3_scale(scales, j);
                if (dj == 0.0f) {
                    const int g = g0 + j;
                    const int32_t *src = lt + (g / EV_LANES) * 16 * EV_LANES + g % EV_LANES;
                    for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = src[ii * EV_LANES];
                    continue;
                }
                const ev_f vd = ev_set1(dj);
                for (int k = 0; k < 16; k += EV_LANES) {
                    const ev_i l = ev_clamp(ev_nearest(ev_div(ev_load(xs + 16 * j + k), vd)), -4, 3);
                    ev_istore(L + 16 * j + k, ev_iadd(l, ev_iset1(4)));
                }
            }
            /* Bit 2 of each code into hmask (element j: byte j % 32, bit
             * j / 32), the low two bits into qs. */
            uint8_t *hmask = blk + offsetof(anvil_block_q3_K, hmask);
            const ev_i three = ev_iset1(3);
            for (int l = 0; l < 32; l += EV_LANES) {
                ev_i h = ev_iset1(0);
                for (int k = 0; k < 8; ++k) h = ev_ior(h, ev_ishlv(ev_isrl(ev_iload(L + 32 * k + l), 2), k));
                ev_store_u8(hmask + l, h);
            }
            for (int j = 0; j < ANVIL_QK_K; j += EV_LANES) ev_istore(L + j, ev_iand(ev_iload(L + j), three));
            ev_pack_2bit(L, blk + offsetof(anvil_block_q3_K, qs));
        }
    }
}

EV_ENCODER(q2_K, ANVIL_TYPE_Q2_K, ANVIL_QK_K, sizeof(anvil_block_q2_K), ev_blocks_q2_K);
EV_ENCODER(q3_K, ANVIL_TYPE_Q3_K, ANVIL_QK_K, sizeof(anvil_block_q3_K), ev_blocks_q3_K);
EV_ENCODER(q4_K, ANVIL_TYPE_Q4_K, ANVIL_QK_K, sizeof(anvil_block_q4_K), ev_blocks_q4_K);
EV_ENCODER(q5_K, ANVIL_TYPE_Q5_K, ANVIL_QK_K, sizeof(anvil_block_q5_K), ev_blocks_q5_K);
EV_ENCODER(q6_K, ANVIL_TYPE_Q6_K, ANVIL_QK_K, sizeof(anvil_block_q6_K), ev_blocks_q6_K);

const anvil_weight_encoder *const EV_TABLE(kquants)[] = {
    &ev_enc_q2_K, &ev_enc_q3_K, &ev_enc_q4_K, &ev_enc_q5_K, &ev_enc_q6_K, NULL,
};

#endif
