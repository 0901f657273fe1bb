/* SPDX-License-Identifier: MIT */
/*
 * SIMD encoders for the K-quants: Q2_K Q3_K Q4_K Q5_K Q6_K, without and
 * with an importance matrix (see simd_enc_common.h for how;
 * plugins/ref/kquants_*.c and kquants_search.c are the reference they
 * reproduce, ggml's quantize_row_q*_K_ref and quantize_row_q*_K_impl).
 *
 * The cost is in the per-group scale searches (make_qkx2_quants,
 * make_qkx3_quants, make_qx_quants, make_q3_quants; simd_enc_fits.h): tens
 * of candidate grids, each a
 * sequential weighted sum over the group. Here each lane runs the search of
 * ONE group (a 32-element group of Q4_K/Q5_K, a 16-element group of the
 * others) from a transposed copy, so every lane's sums are the reference's
 * sums in the reference's order, its candidates tried in the reference's
 * order, its strict comparisons the reference's (ties keep the earlier
 * candidate). The per-super-block steps (6-bit/4-bit scale quantization,
 * the weighted paths' fits of the 8 or 16 scales themselves, the sequential
 * mean square, fp16 scales) are scalar, through the reference's own helpers
 * (plugins/ref/kquants_search.h, linked in); the requantization against
 * the stored scales runs across the elements of a group.
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
#include "simd_enc_fits.h"

/* Per-group fit results of a run of super-blocks, lanes stored out. */
#define EV_KQ_SB (EV_LANES >= 16 ? EV_LANES / 16 : 1) /* super-blocks per run (16 groups each at most) */
#define EV_KQ_MAXG (32 * EV_KQ_SB > EV_LANES ? 32 * EV_KQ_SB : EV_LANES)
typedef struct ev_group_fits {
    float scale[EV_KQ_MAXG], neg_min[EV_KQ_MAXG], iscale[EV_KQ_MAXG], gmin[EV_KQ_MAXG];
    float sw[EV_KQ_MAXG];                     /* a group's total importance (weighted paths) */
    uint32_t tiny[EV_KQ_MAXG / EV_LANES + 1]; /* symmetric fits: groups below the epsilon */
} ev_group_fits;

/* How a run's groups are weighted. */
typedef enum ev_weights {
    EV_W_RMS_ABS,   /* sqrt(mean x^2) + |x| (Q4_K/Q5_K without a matrix) */
    EV_W_ABS,       /* |x| (Q2_K without a matrix) */
    EV_W_SQUARE,    /* x^2 (make_qx_quants without a matrix) */
    EV_W_IMATRIX,   /* the importance weights as given (Q6_K with a matrix) */
    EV_W_IMPORTANCE /* qw * sqrt(sigma2 + x^2), sigma2 per super-block; sums into sw */
} ev_weights;

/* The transposed weights of the groups in lanes (xt: their elements; qw:
 * the importance weights of the first group's columns, the others after
 * it; sigma2: per super-block of gps groups, for EV_W_IMPORTANCE). */
EV_INLINE void ev_group_weights(ev_weights mode, const float *xt, const float *qw, const float *sigma2, int gps,
                                int g0, int nl, int len, float *wt, ev_group_fits *out) {
    if (mode == EV_W_RMS_ABS) {
        ev_f sum_x2 = ev_set1(0.0f);
        for (int i = 0; i < len; ++i) {
            const ev_f v = ev_load(xt + i * EV_LANES);
            sum_x2 = ev_add(sum_x2, ev_mul(v, v));
        }
        const ev_f av_x = ev_sqrt(ev_div(sum_x2, ev_set1((float)len)));
        for (int i = 0; i < len; ++i) ev_store(wt + i * EV_LANES, ev_add(av_x, ev_abs(ev_load(xt + i * EV_LANES))));
    } else if (mode == EV_W_ABS) {
        for (int i = 0; i < len; ++i) ev_store(wt + i * EV_LANES, ev_abs(ev_load(xt + i * EV_LANES)));
    } else if (mode == EV_W_IMATRIX || mode == EV_W_IMPORTANCE) {
        float qt[32 * EV_LANES] EV_ALIGN;
        ev_transpose(qw + (size_t)g0 * len, len, nl, qt);
        if (mode == EV_W_IMATRIX) {
            memcpy(wt, qt, sizeof(float) * (size_t)len * EV_LANES);
        } else {
            float s2[EV_LANES];
            for (int l = 0; l < EV_LANES; ++l) s2[l] = l < nl ? sigma2[(g0 + l) / gps] : 0.0f;
            ev_store(out->sw + g0, ev_lanes_importance(xt, qt, len, ev_load(s2), wt));
        }
    }
}

/* Fit ng groups of len elements (x: the groups one after the other) with
 * make_qkx2_quants / make_qkx3_quants (rmin, rdelta, nstep: the grid). */
static void ev_fit_affine_groups(const float *x, const float *qw, const float *sigma2, int gps, int ng, int len,
                                 int nmax, float rmin, float rdelta, int nstep, int use_mad, ev_weights mode,
                                 ev_group_fits *out) {
    float xt[32 * EV_LANES] EV_ALIGN, wt[32 * EV_LANES] EV_ALIGN;
    for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
        const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
        ev_transpose(x + (size_t)g0 * len, len, nl, xt);
        ev_group_weights(mode, xt, qw, sigma2, gps, g0, nl, len, wt, out);
        const ev_affine_fit f = ev_fit_affine(len, nmax, xt, wt, rmin, rdelta, nstep, use_mad);
        ev_store(out->scale + g0, f.scale);
        ev_store(out->neg_min + g0, f.neg_min);
        ev_store(out->iscale + g0, f.iscale);
        ev_store(out->gmin + g0, f.gmin);
    }
}

/* Fit ng groups of 16 with make_qx_quants (weights: EV_W_SQUARE,
 * EV_W_IMATRIX or EV_W_IMPORTANCE). */
static void ev_fit_symmetric_groups(const float *x, const float *qw, const float *sigma2, int ng, int nmax,
                                    ev_weights mode, ev_group_fits *out) {
    float xt[16 * EV_LANES] EV_ALIGN, wt[16 * EV_LANES] EV_ALIGN;
    for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
        const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
        ev_transpose(x + (size_t)g0 * 16, 16, nl, xt);
        ev_group_weights(mode, xt, qw, sigma2, 16, g0, nl, 16, wt, out);
        ev_f isc;
        ev_m tiny;
        ev_store(out->scale + g0, ev_fit_symmetric(xt, mode == EV_W_SQUARE ? NULL : wt, 16, nmax, &isc, &tiny));
        ev_store(out->iscale + g0, isc);
        out->tiny[g0 / EV_LANES] = ev_mbits(tiny);
    }
}

static int ev_tiny(const ev_group_fits *f, int g) { return (int)((f->tiny[g / EV_LANES] >> (g % EV_LANES)) & 1u); }

/* The super-blocks' mean squares (times factor) for the weighted paths. */
static void ev_superblock_sigma2(const float *x, int nsb, float factor, float *sigma2) {
    for (int s = 0; s < nsb; ++s) {
        sigma2[s] = factor * anvil_kq_sum_squares(x + (size_t)s * ANVIL_QK_K, ANVIL_QK_K) / ANVIL_QK_K;
    }
}

/* ---- Q4_K / Q5_K ---------------------------------------------------------- */

/* 6-bit sub-scales and sub-mins of one super-block (groups g0..g0+7) and
 * its fp16 d, dmin: relative to the largest of each (quantize_row_*_ref),
 * or, weighted, fitted by make_qp_quants with the groups' total weights
 * (quantize_row_*_impl; Q5_K caps the codes at 63 there). */
static void ev_k4_scales(const ev_group_fits *f, int g0, int weighted, int clamp_weighted, uint8_t *scales,
                         anvil_half *d, anvil_half *dmin) {
    uint8_t ls[8], lm[8];
    if (weighted) {
        const float d_block = anvil_kq_fit_positive(8, 63, f->scale + g0, ls, f->sw + g0);
        const float m_block = anvil_kq_fit_positive(8, 63, f->neg_min + g0, lm, f->sw + g0);
        if (clamp_weighted) {
            for (int j = 0; j < 8; ++j) {
                ls[j] = ls[j] < 63 ? ls[j] : 63;
                lm[j] = lm[j] < 63 ? lm[j] : 63;
            }
        }
        anvil_kq_pack_scale_min_k4(scales, ls, lm);
        *d = anvil_fp32_to_fp16(d_block);
        *dmin = anvil_fp32_to_fp16(m_block);
        return;
    }
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        if (f->scale[g0 + j] > max_scale) max_scale = f->scale[g0 + j];
        if (f->neg_min[g0 + j] > max_min) max_min = f->neg_min[g0 + j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
        const uint8_t sc = (uint8_t)anvil_nearest_int(inv_scale * f->scale[g0 + j]);
        const uint8_t m = (uint8_t)anvil_nearest_int(inv_min * f->neg_min[g0 + j]);
        ls[j] = sc < 63 ? sc : 63;
        lm[j] = m < 63 ? m : 63;
    }
    anvil_kq_pack_scale_min_k4(scales, ls, lm);
    *d = anvil_fp32_to_fp16(max_scale / 63.f);
    *dmin = anvil_fp32_to_fp16(max_min / 63.f);
}

/* The 256 codes (0..nmax) against the stored scales; a group whose scale
 * is 0 keeps its search codes. */
static void ev_k4_requantize(const float *x, int nmax, const ev_group_fits *f, int g0, const uint8_t *scales,
                             anvil_half d, anvil_half dmin, int32_t L[ANVIL_QK_K]) {
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

static void ev_blocks_affine_k4(const float *x, const float *qw, uint8_t *y, size_t nb, int q5) {
    const int nmax = q5 ? 31 : 15;
    const size_t bb = q5 ? sizeof(anvil_block_q5_K) : sizeof(anvil_block_q4_K);
    const size_t off_scales = q5 ? offsetof(anvil_block_q5_K, scales) : offsetof(anvil_block_q4_K, scales);
    const size_t off_d = q5 ? offsetof(anvil_block_q5_K, d) : offsetof(anvil_block_q4_K, d);
    const size_t off_dmin = q5 ? offsetof(anvil_block_q5_K, dmin) : offsetof(anvil_block_q4_K, dmin);
    for (size_t i = 0; i < nb; i += EV_KQ_SB * 2) {
        const int nsb = nb - i < (size_t)EV_KQ_SB * 2 ? (int)(nb - i) : EV_KQ_SB * 2;
        const float *xr = x + i * ANVIL_QK_K;
        ev_group_fits f;
        if (qw != NULL) {
            float sigma2[EV_KQ_SB * 2];
            ev_superblock_sigma2(xr, nsb, 2.0f, sigma2);
            ev_fit_affine_groups(xr, qw + i * ANVIL_QK_K, sigma2, 8, 8 * nsb, 32, nmax, -0.9f, 0.05f, 36, 0,
                                 EV_W_IMPORTANCE, &f);
        } else {
            ev_fit_affine_groups(xr, NULL, NULL, 8, 8 * nsb, 32, nmax, q5 ? -0.5f : -1.f, 0.1f, q5 ? 15 : 20, 0,
                                 EV_W_RMS_ABS, &f);
        }
        for (int s = 0; s < nsb; ++s) {
            const float *xs = xr + (size_t)s * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * bb;
            anvil_half d, dmin;
            ev_k4_scales(&f, 8 * s, qw != NULL, q5, blk + off_scales, &d, &dmin);
            ev_put_u16(blk + off_d, d);
            ev_put_u16(blk + off_dmin, dmin);
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            ev_k4_requantize(xs, nmax, &f, 8 * s, blk + off_scales, d, dmin, L);
            if (q5) {
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

static void ev_blocks_q4_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_affine_k4(x, NULL, y, nb, 0); }
static void ev_blocks_q5_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_affine_k4(x, NULL, y, nb, 1); }
static void ev_wblocks_q4_K(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_affine_k4(x, qw, y, nb, 0);
}
static void ev_wblocks_q5_K(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_affine_k4(x, qw, y, nb, 1);
}

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

/* 4-bit sub-scales and sub-mins of one super-block, relative to the largest
 * of each (quantize_row_q2_K_ref: stored as ggml stores them, no clamp) or,
 * weighted, fitted by make_qp_quants (quantize_row_q2_K_impl). */
static void ev_q2_scales(const ev_group_fits *f, int g0, int weighted, uint8_t *scales, anvil_half *d,
                         anvil_half *dmin) {
    const float q4scale = 15.f;
    if (weighted) {
        uint8_t ls[16], lm[16];
        const float dm = anvil_kq_fit_positive(16, 15, f->scale + g0, ls, f->sw + g0);
        const float mm = anvil_kq_fit_positive(16, 15, f->neg_min + g0, lm, f->sw + g0);
        *d = anvil_fp32_to_fp16(dm);
        *dmin = anvil_fp32_to_fp16(mm);
        for (int j = 0; j < 16; ++j) scales[j] = (uint8_t)(ls[j] | (lm[j] << 4));
        return;
    }
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
        if (f->scale[g0 + j] > max_scale) max_scale = f->scale[g0 + j];
        if (f->neg_min[g0 + j] > max_min) max_min = f->neg_min[g0 + j];
    }
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < 16; ++j) scales[j] = (uint8_t)anvil_nearest_int(iscale * f->scale[g0 + j]);
        *d = anvil_fp32_to_fp16(max_scale / q4scale);
    } else {
        memset(scales, 0, 16);
        *d = anvil_fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < 16; ++j) {
            const int l = anvil_nearest_int(iscale * f->neg_min[g0 + j]);
            scales[j] |= (uint8_t)((unsigned)l << 4);
        }
        *dmin = anvil_fp32_to_fp16(max_min / q4scale);
    } else {
        *dmin = anvil_fp32_to_fp16(0.f);
    }
}

static void ev_blocks_q2_K_any(const float *x, const float *qw, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; i += EV_KQ_SB) {
        const int nsb = nb - i < (size_t)EV_KQ_SB ? (int)(nb - i) : EV_KQ_SB;
        const float *xr = x + i * ANVIL_QK_K;
        ev_group_fits f;
        if (qw != NULL) {
            float sigma2[EV_KQ_SB];
            ev_superblock_sigma2(xr, nsb, 1.0f, sigma2);
            ev_fit_affine_groups(xr, qw + i * ANVIL_QK_K, sigma2, 16, 16 * nsb, 16, 3, -0.9f, 0.05f, 36, 0,
                                 EV_W_IMPORTANCE, &f);
        } else {
            ev_fit_affine_groups(xr, NULL, NULL, 16, 16 * nsb, 16, 3, -0.5f, 0.1f, 15, 1, EV_W_ABS, &f);
        }
        for (int s = 0; s < nsb; ++s) {
            const float *xs = xr + (size_t)s * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_q2_K);
            uint8_t *scales = blk + offsetof(anvil_block_q2_K, scales);
            const int g0 = 16 * s;
            anvil_half d, dmin;
            ev_q2_scales(&f, g0, qw != NULL, scales, &d, &dmin);
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

static void ev_blocks_q2_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_q2_K_any(x, NULL, y, nb); }
static void ev_wblocks_q2_K(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_q2_K_any(x, qw, y, nb);
}

/* ---- Q6_K ------------------------------------------------------------------- */

/* A symmetric group of 16 against its stored scale d: codes
 * clamp(nearest(x / d), -nmax, nmax - 1) + nmax (Q6_K, Q3_K). */
EV_INLINE void ev_requantize16(const float *x, float d, int nmax, int32_t *L) {
    const ev_f vd = ev_set1(d);
    for (int k = 0; k < 16; k += EV_LANES) {
        const ev_i l = ev_clamp(ev_nearest(ev_div(ev_load(x + k), vd)), -nmax, nmax - 1);
        ev_istore(L + k, ev_iadd(l, ev_iset1(nmax)));
    }
}

/* See kquants_q3_k.c: an int stored into int8_t, two's complement. */
static inline int ev_wrap_int8(int v) { return (int)((unsigned)v & 0xFFu) - (((unsigned)v & 0x80u) ? 256 : 0); }

/* quantize_row_q6_K_ref and (weights: the importance matrix itself)
 * quantize_row_q6_K_impl differ only in the group fits' weights. */
static void ev_blocks_q6_K_any(const float *x, const float *qw, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; i += EV_KQ_SB) {
        const int nsb = nb - i < (size_t)EV_KQ_SB ? (int)(nb - i) : EV_KQ_SB;
        const float *xr = x + i * ANVIL_QK_K;
        ev_group_fits f;
        ev_fit_symmetric_groups(xr, qw ? qw + i * ANVIL_QK_K : NULL, NULL, 16 * nsb, 32,
                                qw ? EV_W_IMATRIX : EV_W_SQUARE, &f);
        for (int s = 0; s < nsb; ++s) {
            const float *xs = xr + (size_t)s * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_q6_K);
            const int g0 = 16 * s;
            float max_scale = 0, max_abs_scale = 0;
            for (int ib = 0; ib < 16; ++ib) {
                const float a = fabsf(f.scale[g0 + ib]);
                if (a > max_abs_scale) {
                    max_abs_scale = a;
                    max_scale = f.scale[g0 + ib];
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
                const int v = anvil_nearest_int(is * f.scale[g0 + ib]);
                scales[ib] = (int8_t)ev_wrap_int8(v < 127 ? v : 127);
            }
            const float d_all = anvil_fp16_to_fp32(d);
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            for (int j = 0; j < 16; ++j) {
                const float dj = d_all * (float)scales[j];
                if (dj == 0.0f) {
                    ev_symmetric_codes(xs + 16 * j, 16, 32, f.iscale[g0 + j], ev_tiny(&f, g0 + j), L + 16 * j);
                    continue;
                }
                ev_requantize16(xs + 16 * j, dj, 32, L + 16 * j);
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

static void ev_blocks_q6_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_q6_K_any(x, NULL, y, nb); }
static void ev_wblocks_q6_K(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_q6_K_any(x, qw, y, nb);
}

/* ---- make_q3_quants (do_rmse), one group per lane: Q3_K -------------------- */

/* Codes (0..2 nmax - 1) into lt (element i of lane l at lt[i * EV_LANES +
 * l]); returns the scale (0 for tiny lanes, whose codes are 0).
 *
 * The refinement passes are sequential per lane (a taken code moves the
 * sums the next element starts from), but a code rarely moves: the
 * per-element terms w x L and w L L are kept per element (the reference
 * recomputes the same products), and the sums are only touched behind a
 * branch when some lane has a new code, so the next element does not wait
 * for a blend of sums that did not change. */
EV_INLINE ev_f ev_fit_symmetric_refined(const float *xt, int nmax, int32_t *lt) {
    const ev_f zero = ev_set1(0.0f);
    const float lo = (float)-nmax, hi = (float)(nmax - 1);
    ev_f amax, max;
    ev_lanes_absmax(xt, 16, &amax, &max);
    const ev_m tiny = ev_lt(amax, ev_set1(EV_KQ_EPS));
    const ev_f iscale = ev_div(ev_set1((float)(-nmax)), max);
    ev_f w[16], wx[16], fl[16], wxl[16], wll[16];
    ev_f sumlx = zero, suml2 = zero;
    for (int i = 0; i < 16; ++i) {
        const ev_f x = ev_load(xt + i * EV_LANES);
        w[i] = ev_mul(x, x);
        wx[i] = ev_mul(w[i], x);
        fl[i] = ev_nearest_clamped_f(ev_mul(iscale, x), lo, hi);
        wxl[i] = ev_mul(wx[i], fl[i]);
        wll[i] = ev_mul(ev_mul(w[i], fl[i]), fl[i]);
        sumlx = ev_add(sumlx, wxl[i]);
        suml2 = ev_add(suml2, wll[i]);
    }
    ev_m active = ev_eq(zero, zero); /* every lane */
    for (int itry = 0; itry < 5; ++itry) {
        ev_m changed = ev_ne(zero, zero); /* no lane */
        for (int i = 0; i < 16; ++i) {
            const ev_f slx = ev_sub(sumlx, wxl[i]);
            const ev_f sl2 = ev_sub(suml2, wll[i]);
            const ev_f nfl = ev_nearest_clamped_f(ev_div(ev_mul(ev_load(xt + i * EV_LANES), sl2), slx), lo, hi);
            /* lanes where the reference tries the new code: slx > 0 and it differs */
            const ev_m moved = ev_mandnot(ev_mand(ev_gt(slx, zero), active), ev_eq(nfl, fl[i]));
            if (!ev_many(moved)) continue;
            const ev_f nwxl = ev_mul(wx[i], nfl);
            const ev_f nwll = ev_mul(ev_mul(w[i], nfl), nfl);
            const ev_f slx2 = ev_add(slx, nwxl);
            const ev_f sl22 = ev_add(sl2, nwll);
            const ev_m better = ev_mand(ev_gt(sl22, zero),
                                        ev_gt(ev_mul(ev_mul(slx2, slx2), suml2), ev_mul(ev_mul(sumlx, sumlx), sl22)));
            const ev_m take = ev_mand(moved, better);
            fl[i] = ev_blend(take, fl[i], nfl);
            wxl[i] = ev_blend(take, wxl[i], nwxl);
            wll[i] = ev_blend(take, wll[i], nwll);
            sumlx = ev_blend(take, sumlx, slx2);
            suml2 = ev_blend(take, suml2, sl22);
            changed = ev_mor(changed, take);
        }
        active = ev_mand(active, changed);
        if (!ev_many(active)) break;
    }
    const ev_i zi = ev_iset1(0), off = ev_iset1(nmax);
    for (int i = 0; i < 16; ++i) ev_istore(lt + i * EV_LANES, ev_iblend(tiny, ev_iadd(ev_cvtt(fl[i]), off), zi));
    const ev_f scale = ev_blend(ev_gt(suml2, zero), zero, ev_div(sumlx, suml2));
    return ev_blend(tiny, scale, zero);
}

/* Q3_K's 6-bit scale code l (0..63, the scale + 32) of group j: low nibble
 * in byte j (j < 8) or the high half of byte j - 8, top two bits in byte
 * 8 + j % 4 at bit 2 (j / 4); the bytes start zeroed. */
static void ev_q3_put_scale(uint8_t *scales, int j, int l) {
    if (j < 8) {
        scales[j] = (uint8_t)(l & 0xF);
    } else {
        scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
    }
    l >>= 4;
    scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
}

static void ev_blocks_q3_K_any(const float *x, const float *qw, uint8_t *y, size_t nb) {
    for (size_t i = 0; i < nb; i += EV_KQ_SB) {
        const int nsb = nb - i < (size_t)EV_KQ_SB ? (int)(nb - i) : EV_KQ_SB;
        const int ng = 16 * nsb;
        const float *xr = x + i * ANVIL_QK_K;
        ev_group_fits f;
        int32_t lt[(EV_KQ_MAXG / EV_LANES + 1) * 16 * EV_LANES] EV_ALIGN;
        if (qw != NULL) {
            float sigma2[EV_KQ_SB];
            ev_superblock_sigma2(xr, nsb, 2.0f, sigma2);
            ev_fit_symmetric_groups(xr, qw + i * ANVIL_QK_K, sigma2, ng, 4, EV_W_IMPORTANCE, &f);
        } else {
            float xt[16 * EV_LANES] EV_ALIGN;
            for (int g0 = 0; g0 < ng; g0 += EV_LANES) {
                const int nl = ng - g0 < EV_LANES ? ng - g0 : EV_LANES;
                ev_transpose(xr + (size_t)g0 * 16, 16, nl, xt);
                ev_store(f.scale + g0, ev_fit_symmetric_refined(xt, 4, lt + (g0 / EV_LANES) * 16 * EV_LANES));
            }
        }
        for (int s = 0; s < nsb; ++s) {
            const float *xs = xr + (size_t)s * ANVIL_QK_K;
            uint8_t *blk = y + (i + (size_t)s) * sizeof(anvil_block_q3_K);
            uint8_t *scales = blk + offsetof(anvil_block_q3_K, scales);
            const int g0 = 16 * s;
            memset(scales, 0, 12);
            anvil_half d;
            if (qw != NULL) {
                /* the group scales fitted by make_qx_quants, weighted by the groups' total weights */
                int8_t ls[16];
                const float d_block = anvil_kq_fit_symmetric(16, 32, f.scale + g0, ls, f.sw + g0);
                for (int j = 0; j < 16; ++j) ev_q3_put_scale(scales, j, ls[j]);
                d = anvil_fp32_to_fp16(d_block);
            } else {
                float max_scale = 0, amax = 0;
                for (int j = 0; j < 16; ++j) {
                    const float a = fabsf(f.scale[g0 + j]);
                    if (a > amax) {
                        amax = a;
                        max_scale = f.scale[g0 + j];
                    }
                }
                if (max_scale != 0.0f) {
                    const float iscale = -32.f / max_scale;
                    for (int j = 0; j < 16; ++j) {
                        const int l = ev_wrap_int8(anvil_nearest_int(iscale * f.scale[g0 + j]));
                        ev_q3_put_scale(scales, j, (l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
                    }
                    d = anvil_fp32_to_fp16(1 / iscale);
                } else {
                    d = anvil_fp32_to_fp16(0.f);
                }
            }
            ev_put_u16(blk + offsetof(anvil_block_q3_K, d), d);
            const float d_all = anvil_fp16_to_fp32(d);
            int32_t L[ANVIL_QK_K] EV_ALIGN;
            for (int j = 0; j < 16; ++j) {
                const float dj = d_all * (float)anvil_kq_q3_scale(scales, j);
                if (dj == 0.0f) {
                    const int g = g0 + j;
                    if (qw != NULL) {
                        ev_symmetric_codes(xs + 16 * j, 16, 4, f.iscale[g], ev_tiny(&f, g), L + 16 * j);
                    } else {
                        const int32_t *src = lt + (g / EV_LANES) * 16 * EV_LANES + g % EV_LANES;
                        for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = src[ii * EV_LANES];
                    }
                    continue;
                }
                ev_requantize16(xs + 16 * j, dj, 4, L + 16 * j);
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

static void ev_blocks_q3_K(const float *x, uint8_t *y, size_t nb) { ev_blocks_q3_K_any(x, NULL, y, nb); }
static void ev_wblocks_q3_K(const float *x, const float *qw, float sigma2, uint8_t *y, size_t nb) {
    (void)sigma2;
    ev_blocks_q3_K_any(x, qw, y, nb);
}

EV_ENCODER_WEIGHTED(q2_K, ANVIL_TYPE_Q2_K, ANVIL_QK_K, sizeof(anvil_block_q2_K), ev_blocks_q2_K, ev_wblocks_q2_K, 0);
EV_ENCODER_WEIGHTED(q3_K, ANVIL_TYPE_Q3_K, ANVIL_QK_K, sizeof(anvil_block_q3_K), ev_blocks_q3_K, ev_wblocks_q3_K, 0);
EV_ENCODER_WEIGHTED(q4_K, ANVIL_TYPE_Q4_K, ANVIL_QK_K, sizeof(anvil_block_q4_K), ev_blocks_q4_K, ev_wblocks_q4_K, 0);
EV_ENCODER_WEIGHTED(q5_K, ANVIL_TYPE_Q5_K, ANVIL_QK_K, sizeof(anvil_block_q5_K), ev_blocks_q5_K, ev_wblocks_q5_K, 0);
EV_ENCODER_WEIGHTED(q6_K, ANVIL_TYPE_Q6_K, ANVIL_QK_K, sizeof(anvil_block_q6_K), ev_blocks_q6_K, ev_wblocks_q6_K, 0);

const anvil_weight_encoder *const EV_TABLE(kquants)[] = {
    &ev_enc_q2_K, &ev_enc_q3_K, &ev_enc_q4_K, &ev_enc_q5_K, &ev_enc_q6_K, NULL,
};

#endif
