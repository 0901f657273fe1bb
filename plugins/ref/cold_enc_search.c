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
#include <math.h>

#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/checks.h"

/* ggml's iq2_find_best_neighbour / iq1_find_best_neighbour2 (see the
 * header). A candidate's error is the sum over its elements, in element
 * order, of w (scale val[code] - x)^2: a function of (element, code) only.
 * With 3 codes and about 8 (IQ2) to 73 (IQ1) candidates of 8 elements, the
 * 24 terms are computed once, each by ggml's expression, and summed per
 * candidate in ggml's order: the same floats, fewer operations. */
int anvil_cold_best_candidate3(const cold_lattice *lat, const uint16_t *cand, const float *x,
                               const float *w, float scale, const float val[3], int8_t *L) {
    float err[8][3];
    for (int i = 0; i < 8; ++i) {
        for (int c = 0; c < 3; ++c) {
            const float diff = scale * val[c] - x[i];
            err[i][c] = w[i] * diff * diff;
        }
    }
    const int count = cand[0];
    float best_d2 = FLT_MAX;
    int best = -1;
    int j = 1;
    /* Eight candidates at a time: lane k sums candidate j+k's terms in
     * element order, as the scalar loop below does (the same additions,
     * eight independent chains instead of one), then the lanes are
     * compared in candidate order. */
    typedef float cand_v8 __attribute__((vector_size(32)));
    for (; j + 8 <= count + 1; j += 8) {
        const uint8_t *code[8];
        for (int k = 0; k < 8; ++k) {
            code[k] = lat->code + (size_t)cand[j + k] * 8;
        }
        cand_v8 d2 = { 0 };
        for (int i = 0; i < 8; ++i) {
            const cand_v8 e = { err[i][code[0][i]], err[i][code[1][i]], err[i][code[2][i]], err[i][code[3][i]],
                                err[i][code[4][i]], err[i][code[5][i]], err[i][code[6][i]], err[i][code[7][i]] };
            d2 += e;
        }
        for (int k = 0; k < 8; ++k) {
            if (d2[k] < best_d2) {
                best_d2 = d2[k];
                best = cand[j + k];
            }
        }
    }
    for (; j <= count; ++j) {
        const uint8_t *code = lat->code + (size_t)cand[j] * 8;
        float d2 = 0.0f;
        for (int i = 0; i < 8; ++i) {
            d2 += err[i][code[i]];
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = cand[j];
        }
    }
    if (best >= 0 && L != NULL) {
        const uint8_t *c = lat->code + (size_t)best * 8;
        for (int i = 0; i < 8; ++i) {
            L[i] = (int8_t)c[i];
        }
    }
    return best;
}

/* ggml's iq3_find_best_neighbour: as above on the 8-level IQ3 lattices,
 * whose codes outnumber their candidates, so the errors are computed
 * directly from the odd levels 2l + 1. */
static int best_candidate8(const cold_lattice *lat, const uint16_t *cand, const float *xval,
                           const float *waux, float scale, int8_t *L) {
    const int dims = lat->dims;
    const int count = cand[0];
    float best_d2 = FLT_MAX;
    int best = -1;
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
    static const float odd3[3] = { 1.0f, 3.0f, 5.0f };
    const int32_t v = lat->map[cold_lattice_key(lat, L)];
    if (v >= 0) {
        return 1;
    }
    const uint16_t *cand = cold_candidates(lat, v);
    const int best = lat->levels == 3 ? anvil_cold_best_candidate3(lat, cand, xval, waux, scale, odd3, L)
                                      : best_candidate8(lat, cand, xval, waux, scale, L);
    return best >= 0 ? 0 : -1;
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
                     float max, float scale0, int8_t *L, float *scale_out) {
    const cold_lattice *lat = p->lat;
    const int dims = lat->dims;
    const int groups = p->n / dims;
    int8_t Laux[32];
    int on_grid[8], on_grid_aux[8];

    memset(L, 0, (size_t)p->n); /* the codes when no trial is accepted */
    float best = 0.0f;
    float scale = scale0;
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
    if ((off_grid > 0 || p->refine == COLD_REFINE_ALWAYS) && scale > 0) {
        const float id = 1.0f / scale;
        for (int k = 0; k < groups; ++k) {
            if (on_grid[k] && p->refine == COLD_REFINE_OFF_GRID) {
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

void anvil_cold_stable_order(const float *x, int n, int *idx) {
    /* Insertion sort, moving an element left only past strictly greater
     * ones: equal values keep their index order. */
    for (int j = 0; j < n; ++j) {
        int m = j;
        while (m > 0 && x[idx[m - 1]] > x[j]) {
            idx[m] = idx[m - 1];
            m--;
        }
        idx[m] = j;
    }
}

uint8_t anvil_cold_split_signs(const float *x, float *xval) {
    uint8_t s = 0;
    for (int i = 0; i < 8; ++i) {
        if (x[i] >= 0) {
            xval[i] = x[i];
        } else {
            xval[i] = -x[i];
            s |= (uint8_t)(1u << i);
        }
    }
    return s;
}

uint8_t anvil_cold_split_signs_even(const float *x, const float *weight, float *xval) {
    uint8_t s = anvil_cold_split_signs(x, xval);
    int nflip = 0;
    for (int i = 0; i < 8; ++i) {
        nflip += (s >> i) & 1;
    }
    if (nflip % 2) {
        int imin = 0;
        float min = weight[0] * x[0] * x[0];
        for (int i = 1; i < 8; ++i) {
            const float ax = weight[i] * x[i] * x[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= (uint8_t)(1u << imin);
    }
    return s & 127;
}

int anvil_cold_lattice_ready(const char *name, char *msg, size_t msg_size) {
    const int rc = anvil_ref_cold_lattice_init();
    if (rc != ANVIL_OK) {
        anvil_ref_message(msg, msg_size, "%s: the lattice search tables failed their self-check", name);
    }
    return rc;
}

int anvil_cold_refuse_overflow(const char *name, size_t ibl, int group, int ib, const float *xb,
                               const char *ggml_does, char *msg, size_t msg_size) {
    float amax = 0.0f;
    for (int i = 0; i < group; ++i) {
        amax = fabsf(xb[i]) > amax ? fabsf(xb[i]) : amax;
    }
    const size_t first = ibl * 256 + (size_t)group * (size_t)ib;
    anvil_ref_message(msg, msg_size,
                      "%s: block %zu (elements %zu..%zu, largest magnitude %g): the lattice search's "
                      "squared errors overflow float at this magnitude (and these weights), where ggml "
                      "%s; no byte-exact encoding exists (scale the tensor down before quantizing)",
                      name, ibl, first, first + (size_t)group - 1, (double)amax, ggml_does);
    return ANVIL_E_UNSUPPORTED;
}

float anvil_cold_group_setup(const float *xb, const float *weight, int n, int even, float *waux,
                             float *xval, uint8_t *signs) {
    for (int i = 0; i < n; ++i) {
        waux[i] = sqrtf(weight[i]);
    }
    for (int k = 0; k < n / 8; ++k) {
        signs[k] = even ? anvil_cold_split_signs_even(xb + 8 * k, weight + 8 * k, xval + 8 * k)
                        : anvil_cold_split_signs(xb + 8 * k, xval + 8 * k);
    }
    float max = xval[0];
    for (int i = 1; i < n; ++i) {
        max = cold_max(max, xval[i]);
    }
    return max;
}

int anvil_cold_sweep_group(const cold_sweep *p, const float *xval, const float *weight, const float *waux,
                           float max, float scale0, uint8_t *signs, uint8_t sign_mask, int *idx,
                           float *scale) {
    int8_t L[32];
    if (anvil_cold_sweep(p, xval, weight, waux, max, scale0, L, scale) != ANVIL_OK) {
        return ANVIL_E_UNSUPPORTED;
    }
    if (*scale < 0) {
        /* ggml: "should never happen"; flips the stored signs. */
        *scale = -*scale;
        for (int k = 0; k < p->n / 8; ++k) {
            signs[k] = (uint8_t)(~signs[k] & sign_mask);
        }
    }
    const int dims = p->lat->dims;
    for (int k = 0; k < p->n / dims; ++k) {
        /* Off the grid only where the sweep left L unrounded: a NaN scale,
         * which ggml refuses either way. */
        idx[k] = cold_grid_index(p->lat, L + dims * k);
        if (idx[k] < 0) {
            return ANVIL_E_UNSUPPORTED;
        }
    }
    return *scale >= 0 ? ANVIL_OK : ANVIL_E_UNSUPPORTED;
}

int anvil_cold_iq1_snap(const cold_lattice *lat, const int8_t *L, int groups, const float *xb,
                        const float *weight, const float *const *vals, float *scale, int *index) {
    int all_on_grid = 1;
    for (int k = 0; k < groups; ++k) {
        const int32_t v = lat->map[cold_lattice_key(lat, L + 8 * k)];
        if (v >= 0) {
            index[k] = (int)v;
            continue;
        }
        all_on_grid = 0;
        index[k] = anvil_cold_best_candidate3(lat, cold_candidates(lat, v), xb + 8 * k, weight + 8 * k, *scale,
                                              vals[k], NULL);
        if (index[k] < 0) {
            return ANVIL_E_UNSUPPORTED;
        }
    }
    if (!all_on_grid) {
        float sumqx = 0.0f, sumq2 = 0.0f;
        for (int k = 0; k < groups; ++k) {
            const uint8_t *c = lat->code + (size_t)index[k] * 8;
            for (int j = 0; j < 8; ++j) {
                const float w = weight[8 * k + j];
                const float q = vals[k][c[j]];
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
        if (sumqx > 0 && sumq2 > 0) {
            *scale = sumqx / sumq2;
        }
    }
    return ANVIL_OK;
}
