/* SPDX-License-Identifier: MIT */
/* The scale searches and scale packings the K-quant encoders share (and
 * the flat family's importance-weighted encoders: ggml's quantize_q4_0 ..
 * quantize_q5_1 reuse make_qx_quants and make_qkx3_quants).
 *
 * Each search is a port, operation for operation, of the ggml routine named
 * in its comment: the same step counts, the same weights, the same order of
 * float operations, the same strict comparisons (so ties keep the earlier
 * candidate), rounding through anvil_nearest_int. A reordered sum or a <=
 * where ggml has < changes a byte somewhere; the parity program is the judge.
 * Compiled with -ffp-contract=off so no multiply-add is fused. */
#ifndef ANVIL_REF_KQUANTS_SEARCH_H
#define ANVIL_REF_KQUANTS_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/blocks.h"

/* Below this magnitude a group counts as all zero (ggml's GROUP_MAX_EPS). */
#define ANVIL_KQ_GROUP_EPS 1e-15f

/* Asymmetric fit x ~ scale * L - m with L in [0, nmax] (ggml's
 * make_qkx2_quants, and make_qkx3_quants with weights: the two differ only
 * in `max == min` against `max <= min`, the same test for finite input). Starts from the min..max grid, then tries nstep + 1
 * stretched grids (nmax + rmin + rdelta * k levels over the range), solves
 * the weighted least-squares scale and offset for each candidate rounding
 * and keeps it when its weighted error (|e| when use_mad, else e^2) is
 * strictly smaller. Writes the codes to L (Laux is scratch of n bytes),
 * the non-negative offset m to *neg_min, returns the scale. */
float anvil_kq_fit_affine(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *neg_min,
                          uint8_t *Laux, float rmin, float rdelta, int nstep, int use_mad);

/* Symmetric fit x ~ scale * (L - nmax) with L in [0, 2 nmax), weighted by
 * qw (the importance of each element) or, when qw is NULL, by x^2: ggml's
 * make_qx_quants with rmse_type 1. The max-magnitude grid and 18 perturbed
 * grids (nmax + 0.1 k, k = -9..9, k != 0), keeping the best least-squares
 * fit. Returns the scale; an all-zero group gives 0 and L = 0 (not nmax). */
float anvil_kq_fit_symmetric(int n, int nmax, const float *x, int8_t *L, const float *qw);

/* Fit of non-negative values x ~ scale * L with L <= nmax, weighted by qw
 * (ggml's make_qp_quants, which the weighted K-quant encoders use for their
 * sub-block scales): the best of nine grids by weighted squared error, then
 * up to 5 passes moving single codes while the least-squares fit improves.
 * L is stored as ggml stores it (a negative code, from a negative x, wraps
 * modulo 256). Returns the scale; all x below the group epsilon give 0. */
float anvil_kq_fit_positive(int n, int nmax, const float *x, uint8_t *L, const float *qw);

/* anvil_kq_fit_positive with its eight trial grids scored on the path the
 * CPU selects at run time (simd 1: AVX2 where the CPU has it, NEON on
 * aarch64, each trial in a lane, the same floats) or the portable one (0):
 * for the tests that check the two agree. anvil_kq_fit_positive is
 * simd 1. */
float anvil_kq_fit_positive_isa(int n, int nmax, const float *x, uint8_t *L, const float *qw, int simd);

/* Symmetric fit refined code by code (ggml's make_q3_quants with do_rmse):
 * start from the max-magnitude grid, then up to 5 passes that move single
 * codes whenever that improves the x^2-weighted least-squares fit. L ends in
 * [0, 2 nmax) (offset by nmax). Returns the least-squares scale. */
float anvil_kq_fit_symmetric_refined(int n, int nmax, const float *x, int8_t *L);

/* Sum of x[i]^2 in element order (ggml's sigma2 numerator). */
float anvil_kq_sum_squares(const float *x, size_t n);

/* The element weights of ggml's importance-weighted encoders:
 * weights[i] = qw[i] * sqrt(sigma2 + x[i]^2) for i < n (sigma2 a mean
 * square, of the super-block or the row, times 1 or 2 by format). Returns
 * their sum, in element order (a group's total weight). */
float anvil_kq_importance(int n, const float *x, const float *qw, float sigma2, float *weights);

/* Q4_K/Q5_K: eight 6-bit scales and eight 6-bit mins in 12 bytes. Bytes 0-3
 * hold scales 0-3, bytes 4-7 mins 0-3 (low 6 bits each); bytes 8-11 hold the
 * low nibbles of scale and min 4-7, whose top two bits ride in bits 6-7 of
 * bytes 0-3 (scales) and 4-7 (mins). */
void anvil_kq_pack_scale_min_k4(uint8_t packed[ANVIL_K_SCALE_SIZE], const uint8_t ls[8], const uint8_t lm[8]);
void anvil_kq_scale_min_k4(const uint8_t packed[ANVIL_K_SCALE_SIZE], int j, uint8_t *scale, uint8_t *min);

/* Q3_K: sixteen 6-bit scales (stored + 32) in 12 bytes. Low nibbles of
 * scales 0-7 in the low halves of bytes 0-7, of scales 8-15 in the high
 * halves; the top two bits of scale j in byte 8 + j % 4 at bit 2 (j / 4).
 * Returns the signed scale, -32..31. */
int anvil_kq_q3_scale(const uint8_t packed[ANVIL_K_SCALE_SIZE], int j);

/* ggml's constants for one of the two formats anvil_kq_encode_affine_k4
 * serves. */
typedef struct anvil_kq_k4_format {
    int nmax;           /* largest code: 15 (Q4_K), 31 (Q5_K) */
    float rmin;         /* quantize_row_*_ref's grid search: first stretch ... */
    int nstep;          /* ... and number of steps of 0.1 */
    int clamp_weighted; /* the weighted path caps the 6-bit codes at 63 (Q5_K) */
} anvil_kq_k4_format;

/* The part Q4_K and Q5_K share (ggml's quantize_row_q4_K_ref/_impl and
 * quantize_row_q5_K_ref/_impl differ only in the constants above and the
 * final bit packing). Without importance weights (qw NULL): fit each
 * 32-element sub-block with anvil_kq_fit_affine (weights sqrt(mean x^2) +
 * |x|) and quantize the sub-scales and sub-mins to 6 bits against the
 * largest of each. With qw (the block's 256 importance weights): ggml's
 * weighted search (see kquants_search.c). Then, either way, requantize every
 * element against the scales as the decoder will see them. Fills L[256]
 * (codes in [0, nmax]), the 12 packed scale bytes, d and dmin. */
void anvil_kq_encode_affine_k4(const float *x, const float *qw, const anvil_kq_k4_format *f, uint8_t L[ANVIL_QK_K],
                               uint8_t scales[ANVIL_K_SCALE_SIZE], anvil_half *d, anvil_half *dmin);

#endif
