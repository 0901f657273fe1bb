/* SPDX-License-Identifier: MIT */
/*
 * The IQ1 encoders' searches (ggml's quantize_row_iq1_s_impl and
 * quantize_row_iq1_m_impl): the exhaustive cut-point search over a sorted
 * group, and the grid-candidate search that snaps an off-grid code vector.
 * Private to cold_enc_*.c (and the tests).
 *
 * Each runs on a portable path (4-lane generic vectors on the build's
 * baseline) and, on x86-64 CPUs with AVX2 (checked once, at run time), on
 * an AVX2 path that computes the same floats with ggml's expressions and
 * summation order, eight fits or candidates side by side, and keeps ggml's
 * choice exactly: the first fit, in ggml's order, that is strictly better
 * than the best so far; the first candidate, in list order, with the
 * strictly smallest error. The `_isa` entries take allow_simd (0: the
 * portable path only) so that the tests can require the two to agree.
 */
#ifndef ANVIL_REF_COLD_ENC_IQ1_SEARCH_H
#define ANVIL_REF_COLD_ENC_IQ1_SEARCH_H

#include <stdint.h>

#include "ref/cold_enc_lattice.h"

/* The best split of a group: codes 0 below sorted position i1, 1 below
 * i2, 2 from i2; `variant` the delta signs (IQ1_S: 0 for +, 1 for -;
 * IQ1_M: k = 2 (first half -) + (second half -)), -1 when no split has a
 * positive sumq2; `scale` the fitted scale (scale0 when none). */
typedef struct cold_iq1_split {
    int i1, i2, variant;
    float scale;
} cold_iq1_split;

/* IQ1_S (32 elements): ggml's prefix sums sumx/sumw over the sorted order
 * idx (weight[i] x[i], weight[i]) and its three-term split sums
 * (S(i1) - S(0)) v0 + (S(i2) - S(i1)) v1 + (S(32) - S(i2)) v2 for both delta
 * signs (x_p, x_m), scanned in ggml's order (i1, i2, then + before -). */
void anvil_cold_iq1s_split_isa(const float *xb, const float *weight, const int *idx, const float x_p[3],
                               const float x_m[3], float scale0, cold_iq1_split *out, int allow_simd);

/* IQ1_M (16 elements): ggml's per-half prefix sums and its collapsed split
 * sums v2 T - P(i1) - P(i2), W v2^2 + Pw(i1) (v0^2 - v1^2) + Pw(i2) (v1^2 -
 * v2^2) per half, the halves added for the four sign variants, scanned in
 * ggml's order (i1, i2, then k). */
void anvil_cold_iq1m_split_isa(const float *xb, const float *weight, const int *idx, const float x_p[3],
                               const float x_m[3], float scale0, cold_iq1_split *out, int allow_simd);

static inline void anvil_cold_iq1s_split(const float *xb, const float *weight, const int *idx, const float x_p[3],
                                         const float x_m[3], float scale0, cold_iq1_split *out) {
    anvil_cold_iq1s_split_isa(xb, weight, idx, x_p, x_m, scale0, out, 1);
}

static inline void anvil_cold_iq1m_split(const float *xb, const float *weight, const int *idx, const float x_p[3],
                                         const float x_m[3], float scale0, cold_iq1_split *out) {
    anvil_cold_iq1m_split_isa(xb, weight, idx, x_p, x_m, scale0, out, 1);
}

/* ggml's iq1_find_best_neighbour2 over the candidate list cand (cand[0]
 * of them, then their grid indices) of the 3-level, 8-element lattice lat:
 * the grid index whose values scale * val[code] are closest to x in
 * w-weighted squared error (summed in element order), the first in list
 * order on ties; -1 when none scores below FLT_MAX (ggml asserts there).
 * The AVX2 path looks each element's three possible errors up by code
 * (vpermilps) for eight candidates at once; on aarch64 the NEON one
 * (TBL, ref/enc_neon.h) does, always selected. */
int anvil_cold_iq1_candidate_isa(const cold_lattice *lat, const uint16_t *cand, const float *x, const float *w,
                                 float scale, const float val[3], int allow_simd);

/* Stable ascending order of x[0..n) (see anvil_cold_stable_order), on the
 * selected path: n = 16 or 32 take eight elements' ranks at a time with
 * AVX2. */
void anvil_cold_stable_order_isa(const float *x, int n, int *idx, int allow_simd);

/* The end of ggml's IQ1 searches (IQ1_S, IQ1_M): the groups of 8 codes L
 * (groups of them) snapped to the IQ1 grid, index[k] getting group k's
 * grid index: a group on the grid keeps it, the others take the best
 * candidate at *scale with level values vals[k] (group k's delta sign);
 * if any moved, *scale is refitted over all groups and kept when the fit
 * is positive. ANVIL_E_UNSUPPORTED where no candidate scores (ggml then
 * scans the whole grid reading past the end of its input, and aborts). */
int anvil_cold_iq1_snap_isa(const cold_lattice *lat, const int8_t *L, int groups, const float *xb,
                            const float *weight, const float *const *vals, float *scale, int *index, int allow_simd);

static inline int anvil_cold_iq1_snap(const cold_lattice *lat, const int8_t *L, int groups, const float *xb,
                                      const float *weight, const float *const *vals, float *scale, int *index) {
    return anvil_cold_iq1_snap_isa(lat, L, groups, xb, weight, vals, scale, index, 1);
}

#endif
