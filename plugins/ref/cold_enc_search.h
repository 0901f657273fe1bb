/*
 * The scale sweep shared by the IQ3_XXS, IQ3_S and IQ2_S encoders (ggml's
 * quantize_row_iq3_xxs_impl / quantize_row_iq3_s_impl /
 * quantize_row_iq2_s_impl, inner part), and the helpers the lattice
 * encoders share. Private to cold_enc_*.c.
 */
#ifndef ANVIL_REF_COLD_ENC_SEARCH_H
#define ANVIL_REF_COLD_ENC_SEARCH_H

#include <stdint.h>
#include <string.h>

#include "ref/cold_enc_lattice.h"

/* How one format runs the sweep. For a group of n magnitudes xval (>= 0,
 * but one may be negative in IQ3_XXS) the trial scales are
 *     id = (2 max_q - 1 + is * step) / max,   is = -steps .. steps,
 * each element's code is nearest_int((id * x - 1) / 2) clamped to
 * [0, max_q - 1], off-grid points are snapped to their best candidate, and
 * the trial with the best weighted fit (sumqx^2 / sumq2, strictly better
 * wins) is kept. Then the points are re-rounded at the fitted scale (only
 * those that were off the grid, unless refine_all) and the scale refitted. */
typedef struct cold_sweep {
    const cold_lattice *lat;
    int n;             /* elements: 32 (IQ3) or 16 (IQ2_S) */
    int max_q;         /* ggml's kMaxQ: 8 (IQ3) or 3 (IQ2_S) */
    float step;        /* 0.2f (IQ3) or 0.1f (IQ2_S) */
    int steps;         /* 15 (IQ3_XXS) or 9 (IQ3_S, IQ2_S) */
    int start_on_grid; /* ggml's is_on_grid before any trial: 1, but 0 in IQ3_S */
    int refine_all;    /* IQ3_S re-rounds every point in the refinement */
} cold_sweep;

/* Runs the sweep. On ANVIL_OK, L[0..n) holds the level codes of on-grid
 * points and *scale the fitted scale (it may be negative or NaN; the caller
 * does what ggml does with that). ANVIL_E_UNSUPPORTED where ggml's search
 * fails its assertion (no candidate scores below FLT_MAX: the squared
 * errors overflowed). */
int anvil_cold_sweep(const cold_sweep *p, const float *xval, const float *weight, const float *waux,
                     float max, int8_t *L, float *scale);

/* Grid index of the code vector at L (dims codes), or -1 when off-grid. */
static inline int cold_grid_index(const cold_lattice *lat, const int8_t *L) {
    const int32_t v = lat->map[cold_lattice_key(lat, L)];
    return v >= 0 ? (int)v : -1;
}

/* ggml's MAX for floats, with its exact operand order: ((a) > (b) ? (a) : (b)). */
static inline float cold_max(float a, float b) { return a > b ? a : b; }

#endif
