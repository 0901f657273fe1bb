/* SPDX-License-Identifier: MIT */
/*
 * The scale sweep's body (see cold_enc_search.h), written once for two
 * widths: cold_enc_search.c includes this file once per width, with
 * SWEEP_FN the name of the function to define and SWEEP_W the number of
 * trials per vector (4: the portable path's 16-byte generic vectors; 8:
 * the AVX2 path's 32-byte ones). Trial t runs in lane t % W of vector
 * t / W; each lane performs ggml's one-trial computation, operation for
 * operation, so the width changes nothing but the speed. Private to
 * cold_enc_search.c, which defines MAX_TRIALS, PICK_I32, best_in_lanes,
 * snap_group and fit_sums before including it; includes nothing.
 *
 * The function takes the shape as constants (n elements in groups of dims
 * codes of `levels` levels), so that each instance is specialised. The
 * trials are independent until the best is chosen, so they run side by
 * side: each element's codes of every trial, the groups' keys, the snaps
 * of the off-grid groups (one group of one trial at a time), and the fit
 * sums, each lane summing in element order as ggml's one trial does. Then
 * the best trial is chosen in trial order with ggml's test.
 */
static inline __attribute__((always_inline)) int SWEEP_FN(const cold_sweep *p, int n, int dims, int levels,
                                                          const float *xval, const float *weight, const float *waux,
                                                          float max, float scale0, int8_t *L, float *scale_out,
                                                          int wide) {
    typedef float vf __attribute__((vector_size(4 * SWEEP_W)));
    typedef int32_t vi __attribute__((vector_size(4 * SWEEP_W)));
    const cold_lattice *lat = p->lat;
    const int groups = n / dims;
    const int trials = 2 * p->steps + 1;
    const int vecs = (trials + SWEEP_W - 1) / SWEEP_W;
    float this_scale[MAX_TRIALS];
    vf id[MAX_TRIALS / SWEEP_W];
    vi lane;
    for (int c = 0; c < SWEEP_W; ++c) {
        lane[c] = c;
    }
    for (int v = 0; v < vecs; ++v) {
        /* trial t = W v + lane; lanes past the last trial repeat it
         * (computed, never used); each lane is ggml's one-trial
         * (2 max_q - 1 + is step) / max, and its reciprocal */
        const vi t = lane + SWEEP_W * v;
        const vi last = (vi){ 0 } + (trials - 1);
        const vi is = PICK_I32(t < last, t, last) - p->steps;
        const vf idt = ((float)(2 * p->max_q - 1) + __builtin_convertvector(is, vf) * p->step) / max;
        id[v] = idt;
        const vf sc = 1.0f / idt;
        memcpy(this_scale + SWEEP_W * v, &sc, sizeof sc);
    }
    vi code[32][MAX_TRIALS / SWEEP_W]; /* code[i][v]: element i's code in trials W v .. W v + W - 1 */
    /* ggml's nearest_int(0.5 (id x - 1)) (anvil_nearest_int's trick, bit
     * for bit), clamped to [0, max_q - 1] */
    const vi zero = { 0 };
    const vi top = zero + (p->max_q - 1);
    for (int i = 0; i < n; ++i) {
        for (int v = 0; v < vecs; ++v) {
            const vf r = 0.5f * (id[v] * xval[i] - 1.0f) + 12582912.f;
            vi l = ((vi)r & 0x007fffff) - 0x00400000;
            l = PICK_I32(l < top, l, top);
            code[i][v] = PICK_I32(l > zero, l, zero);
        }
    }
    uint8_t on_grid_aux[MAX_TRIALS][8];
    for (int k = 0; k < groups; ++k) {
        /* the trials whose group k is off the grid, listed first (no
         * branch per trial), then snapped one after another */
        int off_t[MAX_TRIALS];
        int32_t off_m[MAX_TRIALS];
        int n_off = 0;
        for (int v = 0; v < vecs; ++v) {
            vi key = code[dims * k + dims - 1][v];
            for (int i = dims - 2; i >= 0; --i) {
                key = key * levels + code[dims * k + i][v];
            }
            for (int c = 0; c < SWEEP_W && SWEEP_W * v + c < trials; ++c) {
                const int t = SWEEP_W * v + c;
                const int32_t m = lat->map[key[c]];
                on_grid_aux[t][k] = m >= 0;
                off_t[n_off] = t;
                off_m[n_off] = m;
                n_off += m < 0;
            }
        }
        for (int o = 0; o < n_off; ++o) {
            const unsigned t = (unsigned)off_t[o];
            int8_t l[8];
            const int g = best_in_lanes(lat, dims, cold_candidates(lat, off_m[o]), xval + dims * k, waux + dims * k,
                                        this_scale[t], l, levels, wide);
            if (g < 0) {
                return ANVIL_E_UNSUPPORTED;
            }
            for (int i = 0; i < dims; ++i) {
                /* code[e] is one row of trials: lane t % W of vector t / W */
                ((int32_t *)(void *)code[dims * k + i])[t] = l[i];
            }
        }
    }
    vf sumqx[MAX_TRIALS / SWEEP_W], sumq2[MAX_TRIALS / SWEEP_W];
    for (int v = 0; v < vecs; ++v) {
        vf sx = { 0 }, s2 = { 0 };
        for (int i = 0; i < n; ++i) {
            const float w = weight[i];
            const vf q = __builtin_convertvector(2 * code[i][v] + 1, vf);
            sx += w * xval[i] * q;
            s2 += w * q * q;
        }
        sumqx[v] = sx;
        sumq2[v] = s2;
    }

    float best = 0.0f;
    float scale = scale0;
    const int best_t = cold_fit_scan((const float *)sumqx, (const float *)sumq2, trials, &best, &scale);
    int on_grid[8];
    for (int k = 0; k < groups; ++k) {
        on_grid[k] = best_t >= 0 ? on_grid_aux[best_t][k] : p->start_on_grid;
    }
    for (int i = 0; i < n; ++i) {
        /* the codes when no trial is accepted: 0 */
        L[i] = best_t >= 0 ? (int8_t)code[i][best_t / SWEEP_W][best_t % SWEEP_W] : 0;
    }

    int off_grid = 0;
    for (int k = 0; k < groups; ++k) {
        off_grid += !on_grid[k];
    }
    if ((off_grid > 0 || p->refine == COLD_REFINE_ALWAYS) && scale > 0) {
        const float idf = 1.0f / scale;
        for (int k = 0; k < groups; ++k) {
            if (on_grid[k] && p->refine == COLD_REFINE_OFF_GRID) {
                continue;
            }
            int8_t *l = L + dims * k;
            for (int i = 0; i < dims; ++i) {
                const int c = anvil_nearest_int(0.5f * (idf * xval[dims * k + i] - 1.0f));
                l[i] = (int8_t)(c < p->max_q - 1 ? (c > 0 ? c : 0) : p->max_q - 1);
            }
            if (snap_group(lat, dims, xval + dims * k, waux + dims * k, scale, l, wide) < 0) {
                return ANVIL_E_UNSUPPORTED;
            }
        }
        float sx, s2;
        fit_sums(xval, weight, L, n, &sx, &s2);
        if (s2 > 0) {
            scale = sx / s2;
        }
    }
    *scale_out = scale;
    return ANVIL_OK;
}
