/*
 * ggml's lattice scale sweep (see cold_enc_search.h), step for step.
 *
 * The float expressions are written with ggml's association and with its
 * int/float conversions spelled out; -ffp-contract=off keeps them unfused.
 * Ties go ggml's way: a trial replaces the best one only when strictly
 * better, and a candidate point only when its error is strictly smaller, in
 * candidate-list order.
 */
#include "ref/cold_enc_search.h"

#include <float.h>

#include "anvil/numeric.h"
#include "anvil/status.h"

/* ggml's iq2_find_best_neighbour / iq3_find_best_neighbour: among the
 * candidates of an off-grid point, the one with the smallest weighted
 * squared error at `scale` (first on ties); its codes go to L. -1 when none
 * scores below FLT_MAX (ggml asserts there).
 *
 * A candidate's error is the sum over its elements, in element order, of
 * w (scale q - x)^2 with q its odd level: a function of (element, code)
 * only. With 3 codes (IQ2_S) and about 8 candidates of 8 elements, the 24
 * terms are computed once, each by ggml's expression, and summed per
 * candidate in ggml's order: the same floats, fewer operations. IQ3's 8
 * codes outnumber its candidates, so it computes them directly. */
static int best_candidate(const cold_lattice *lat, const uint16_t *cand, const float *xval,
                          const float *waux, float scale, int8_t *L) {
    const int dims = lat->dims;
    const int count = cand[0];
    float best_d2 = FLT_MAX;
    int best = -1;
    if (lat->levels == 3) {
        float err[8][3];
        for (int i = 0; i < dims; ++i) {
            for (int c = 0; c < 3; ++c) {
                const float diff = scale * (float)(2 * c + 1) - xval[i];
                err[i][c] = waux[i] * diff * diff;
            }
        }
        for (int j = 1; j <= count; ++j) {
            const uint8_t *code = lat->code + (size_t)cand[j] * (size_t)dims;
            float d2 = 0.0f;
            for (int i = 0; i < dims; ++i) {
                d2 += err[i][code[i]];
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = cand[j];
            }
        }
    } else {
        for (int j = 1; j <= count; ++j) {
            const float *pg = lat->odd + (size_t)cand[j] * (size_t)dims;
            float d2 = 0.0f;
            for (int i = 0; i < dims; ++i) {
                const float diff = scale * pg[i] - xval[i];
                d2 += waux[i] * diff * diff;
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = cand[j];
            }
        }
    }
    if (best >= 0) {
        const uint8_t *c = lat->code + (size_t)best * (size_t)dims;
        for (int i = 0; i < dims; ++i) {
            L[i] = (int8_t)c[i];
        }
    }
    return best;
}

/* Codes of one group at inverse scale id, clamped to [0, max_q - 1]. */
static void round_group(const float *xval, int dims, float id, int max_q, int8_t *L) {
    for (int i = 0; i < dims; ++i) {
        int l = anvil_nearest_int(0.5f * (id * xval[i] - 1.0f));
        l = l < max_q - 1 ? l : max_q - 1;
        L[i] = (int8_t)(l > 0 ? l : 0);
    }
}

/* Snap the group at L onto the grid (in place). 1: was on the grid, 0:
 * snapped, -1: no candidate (ggml aborts). */
static int snap_group(const cold_lattice *lat, const float *xval, const float *waux, float scale,
                      int8_t *L) {
    const int32_t v = lat->map[cold_lattice_key(lat, L)];
    if (v >= 0) {
        return 1;
    }
    return best_candidate(lat, lat->nb + (-(size_t)v - 1), xval, waux, scale, L) >= 0 ? 0 : -1;
}

/* sum w x q and sum w q q over the group, q = 2 l + 1, in element order. */
static void fit_sums(const float *xval, const float *weight, const int8_t *L, int n, float *sumqx,
                     float *sumq2) {
    float sx = 0.0f, s2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = (float)(2 * L[i] + 1);
        sx += w * xval[i] * q;
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

int anvil_cold_sweep(const cold_sweep *p, const float *xval, const float *weight, const float *waux,
                     float max, int8_t *L, float *scale_out) {
    const cold_lattice *lat = p->lat;
    const int dims = lat->dims;
    const int groups = p->n / dims;
    int8_t Laux[32];
    int on_grid[8], on_grid_aux[8];

    memset(L, 0, (size_t)p->n); /* the codes when no trial is accepted */
    float best = 0.0f;
    float scale = max / (float)(2 * p->max_q - 1);
    for (int k = 0; k < groups; ++k) {
        on_grid[k] = p->start_on_grid;
    }
    for (int is = -p->steps; is <= p->steps; ++is) {
        const float id = ((float)(2 * p->max_q - 1) + (float)is * p->step) / max;
        const float this_scale = 1.0f / id;
        for (int k = 0; k < groups; ++k) {
            int8_t *l = Laux + dims * k;
            round_group(xval + dims * k, dims, id, p->max_q, l);
            const int r = snap_group(lat, xval + dims * k, waux + dims * k, this_scale, l);
            if (r < 0) {
                return ANVIL_E_UNSUPPORTED;
            }
            on_grid_aux[k] = r;
        }
        float sumqx, sumq2;
        fit_sums(xval, weight, Laux, p->n, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, (size_t)p->n);
            for (int k = 0; k < groups; ++k) {
                on_grid[k] = on_grid_aux[k];
            }
        }
    }

    int off_grid = 0;
    for (int k = 0; k < groups; ++k) {
        off_grid += !on_grid[k];
    }
    if (off_grid > 0 && scale > 0) {
        const float id = 1.0f / scale;
        for (int k = 0; k < groups; ++k) {
            if (on_grid[k] && !p->refine_all) {
                continue;
            }
            int8_t *l = L + dims * k;
            round_group(xval + dims * k, dims, id, p->max_q, l);
            if (snap_group(lat, xval + dims * k, waux + dims * k, scale, l) < 0) {
                return ANVIL_E_UNSUPPORTED;
            }
        }
        float sumqx, sumq2;
        fit_sums(xval, weight, L, p->n, &sumqx, &sumq2);
        if (sumq2 > 0) {
            scale = sumqx / sumq2;
        }
    }
    *scale_out = scale;
    return ANVIL_OK;
}
