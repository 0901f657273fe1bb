/* SPDX-License-Identifier: MIT */
/* Scale searches shared by the K-quant encoders (see kquants_search.h).
 *
 * Every float expression below is written in the order ggml evaluates it,
 * with the int -> float conversions made visible: changing the association
 * of a product or the strictness of a comparison is a parity bug, not a
 * style choice. */
#include "ref/kquants_search.h"

#include <math.h>
#include <string.h>

#include "anvil/numeric.h"
#include "ref/cpu_probe.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KQ_AVX2 1
#include <immintrin.h>
#else
#define KQ_AVX2 0
#endif
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include "ref/enc_neon.h" /* aarch64: qp_trials in NEON, always on */
#endif

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* The signed value of largest magnitude; the first one wins a tie. */
static float signed_absmax(int n, const float *x, float *amax_out) {
    float max = 0.0f;
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    *amax_out = amax;
    return max;
}

float anvil_kq_fit_affine(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *neg_min,
                          uint8_t *Laux, float rmin, float rdelta, int nstep, int use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) {
            min = x[i];
        }
        if (x[i] > max) {
            max = x[i];
        }
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    /* The offset only ever lowers the grid: a group of positives still
     * starts at zero. */
    if (min > 0) {
        min = 0;
    }
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }

    /* Candidate 0: nmax + 1 levels spread evenly over [min, max]. */
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = anvil_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)clamp_int(l, 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *neg_min = -min;
        return scale;
    }

    /* Stretched grids: round with a slightly different step, then solve the
     * weighted least-squares (scale, min) for that rounding in closed form. */
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = anvil_nearest_int(iscale * (x[i] - min));
            l = clamp_int(l, 0, nmax);
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            const float fl = (float)l;
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                /* A positive offset is not representable: refit through 0. */
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/* ggml's make_qx_quants with rmse_type 1: w = qw[i], or x[i]^2 without
 * importance weights. */
static float symmetric_weight(const float *x, const float *qw, int i) { return qw != NULL ? qw[i] : x[i] * x[i]; }

float anvil_kq_fit_symmetric(int n, int nmax, const float *x, int8_t *L, const float *qw) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < ANVIL_KQ_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    /* The extreme value lands exactly on code -nmax. */
    float iscale = (float)(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(anvil_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = symmetric_weight(x, qw, i);
        const float fl = (float)l;
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) {
            continue;
        }
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(anvil_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = symmetric_weight(x, qw, i);
            const float fl = (float)l;
            sumlx += w * x[i] * fl;
            suml2 += w * fl * fl;
        }
        /* Better fit <=> larger sumlx^2 / suml2, compared without dividing. */
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = clamp_int(anvil_nearest_int(iscale * x[i]), -nmax, nmax - 1);
                L[i] = (int8_t)(l + nmax);
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* make_qp_quants' trial grids is = -4..-1, 1..4 (lane t: is = t - 4, then
 * t - 3): each one's weighted squared error, summed in element order. */
#define QP_TRIALS 8

static void qp_trials(int n, int nmax, const float *x, const float *qw, const float *iscale, const float *scale,
                      float *mse) {
    for (int t = 0; t < QP_TRIALS; ++t) {
        float e = 0;
        for (int i = 0; i < n; ++i) {
            int l = anvil_nearest_int(iscale[t] * x[i]);
            l = l < nmax ? l : nmax;
            const float diff = x[i] - scale[t] * (float)l;
            e += qw[i] * diff * diff;
        }
        mse[t] = e;
    }
}

#if KQ_AVX2
/* The same, the eight trials in the lanes of one vector: each lane
 * performs the scalar loop's operations (nearest_int's magic-number
 * rounding, the clamp, the error term), in element order. */
__attribute__((target("avx2"))) static void qp_trials_avx2(int n, int nmax, const float *x, const float *qw,
                                                           const float *iscale, const float *scale, float *mse) {
    const __m256 vi = _mm256_loadu_ps(iscale), vs = _mm256_loadu_ps(scale);
    const __m256 magic = _mm256_set1_ps(12582912.f);
    const __m256i mant = _mm256_set1_epi32(0x007fffff), half = _mm256_set1_epi32(0x00400000);
    const __m256i top = _mm256_set1_epi32(nmax);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n; ++i) {
        const __m256 xi = _mm256_set1_ps(x[i]);
        const __m256 r = _mm256_add_ps(_mm256_mul_ps(vi, xi), magic);
        __m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(r), mant), half);
        l = _mm256_min_epi32(l, top);
        const __m256 diff = _mm256_sub_ps(xi, _mm256_mul_ps(vs, _mm256_cvtepi32_ps(l)));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(qw[i]), diff), diff));
    }
    _mm256_storeu_ps(mse, acc);
}

#endif

static float fit_positive(int n, int nmax, const float *x, uint8_t *L, const float *qw, int simd) {
    float max = 0;
    for (int i = 0; i < n; ++i) {
        max = max > x[i] ? max : x[i];
    }
    if (max < ANVIL_KQ_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)nmax / max;
    /* Codes are stored in uint8_t as ggml stores them: no lower clamp, a
     * negative code wraps (conversion to unsigned is modular). */
    for (int i = 0; i < n; ++i) {
        L[i] = (uint8_t)anvil_nearest_int(iscale * x[i]);
    }
    /* Pick the best of nine grids (nmax + 0.1 k levels, k = -4..4) by
     * weighted squared error; the first one wins ties. */
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * (float)L[i];
        best_mse += qw[i] * diff * diff;
    }
    float iscale_t[QP_TRIALS], scale_t[QP_TRIALS], mse[QP_TRIALS];
    for (int t = 0; t < QP_TRIALS; ++t) {
        const int is = t < QP_TRIALS / 2 ? t - 4 : t - 3;
        iscale_t[t] = (0.1f * (float)is + (float)nmax) / max;
        scale_t[t] = 1 / iscale_t[t];
    }
#if KQ_AVX2
    if (simd && anvil_ref_has_avx2()) {
        qp_trials_avx2(n, nmax, x, qw, iscale_t, scale_t, mse);
    } else
#endif
#if defined(ANVIL_ENC_NEON)
        if (simd) {
        anvil_enc_neon_qp_trials(n, nmax, x, qw, iscale_t, scale_t, mse);
    } else
#endif
    {
        (void)simd;
        qp_trials(n, nmax, x, qw, iscale_t, scale_t, mse);
    }
    for (int t = 0; t < QP_TRIALS; ++t) {
        if (mse[t] < best_mse) {
            best_mse = mse[t];
            iscale = iscale_t[t];
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = anvil_nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = (uint8_t)l;
        const float w = qw[i];
        const float fl = (float)l;
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    /* Then move single codes while that improves the least-squares fit.
     * The sums without element i use the stored (uint8_t) code, as ggml. */
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = qw[i];
            const float li = (float)L[i];
            float slx = sumlx - w * x[i] * li;
            float sl2 = suml2 - w * li * li;
            if (slx > 0 && sl2 > 0) {
                int new_l = anvil_nearest_int(x[i] * sl2 / slx);
                new_l = new_l < nmax ? new_l : nmax;
                if (new_l != L[i]) {
                    const float fl = (float)new_l;
                    slx += w * x[i] * fl;
                    sl2 += w * fl * fl;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l; /* modular, as ggml's store */
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) {
            break;
        }
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float anvil_kq_fit_positive(int n, int nmax, const float *x, uint8_t *L, const float *qw) {
    return fit_positive(n, nmax, x, L, qw, 1);
}

float anvil_kq_fit_positive_isa(int n, int nmax, const float *x, uint8_t *L, const float *qw, int simd) {
    return fit_positive(n, nmax, x, L, qw, simd);
}

float anvil_kq_fit_symmetric_refined(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < ANVIL_KQ_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = (float)(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(anvil_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        const float fl = (float)l;
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const float li = (float)L[i];
            /* The sums without element i: the best code for it alone. */
            float slx = sumlx - w * x[i] * li;
            if (slx > 0) {
                float sl2 = suml2 - w * li * li;
                int new_l = anvil_nearest_int(x[i] * sl2 / slx);
                new_l = clamp_int(new_l, -nmax, nmax - 1);
                if (new_l != L[i]) {
                    const float fl = (float)new_l;
                    slx += w * x[i] * fl;
                    sl2 += w * fl * fl;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) {
            break;
        }
    }
    for (int i = 0; i < n; ++i) {
        L[i] = (int8_t)(L[i] + nmax);
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float anvil_kq_sum_squares(const float *x, size_t n) {
    float sum = 0;
    for (size_t i = 0; i < n; ++i) {
        sum += x[i] * x[i];
    }
    return sum;
}

float anvil_kq_importance(int n, const float *x, const float *qw, float sigma2, float *weights) {
    for (int i = 0; i < n; ++i) {
        weights[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
    }
    float sum = 0;
    for (int i = 0; i < n; ++i) {
        sum += weights[i];
    }
    return sum;
}

void anvil_kq_pack_scale_min_k4(uint8_t packed[ANVIL_K_SCALE_SIZE], const uint8_t ls[8], const uint8_t lm[8]) {
    for (int j = 0; j < 4; ++j) {
        packed[j] = ls[j];
        packed[j + 4] = lm[j];
    }
    for (int j = 4; j < 8; ++j) {
        packed[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
        packed[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
        packed[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
}

void anvil_kq_scale_min_k4(const uint8_t packed[ANVIL_K_SCALE_SIZE], int j, uint8_t *scale, uint8_t *min) {
    if (j < 4) {
        *scale = packed[j] & 63;
        *min = packed[j + 4] & 63;
    } else {
        *scale = (uint8_t)((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
        *min = (uint8_t)((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

int anvil_kq_q3_scale(const uint8_t packed[ANVIL_K_SCALE_SIZE], int j) {
    const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

/* quantize_row_q4_K_ref / q5_K_ref: each 32-element sub-block fitted on
 * its own (weights: the sub-block's rms plus |x|), sub-scales and sub-mins
 * quantized to 6 bits against the largest of each. */
static void k4_scales_plain(const float *x, const anvil_kq_k4_format *f, uint8_t L[ANVIL_QK_K],
                            uint8_t scales[ANVIL_K_SCALE_SIZE], anvil_half *d_out, anvil_half *dmin_out) {
    float sub_scale[ANVIL_QK_K / 32];
    float sub_min[ANVIL_QK_K / 32];
    float weights[32];
    uint8_t Laux[32];

    /* Scales are positive once the min is taken out, so 0 is a safe start. */
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < ANVIL_QK_K / 32; ++j) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) {
            sum_x2 += xs[l] * xs[l];
        }
        /* Weight each element by the sub-block's rms plus its own size, so
         * large values are fitted more closely without ignoring the rest. */
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) {
            weights[l] = av_x + fabsf(xs[l]);
        }
        sub_scale[j] =
            anvil_kq_fit_affine(32, f->nmax, xs, weights, L + 32 * j, &sub_min[j], Laux, f->rmin, 0.1f, f->nstep, 0);
        if (sub_scale[j] > max_scale) {
            max_scale = sub_scale[j];
        }
        if (sub_min[j] > max_min) {
            max_min = sub_min[j];
        }
    }

    /* 6-bit sub-scales and sub-mins relative to the largest of each. The
     * uint8_t conversion before the clamp is ggml's: a negative code wraps
     * and then saturates at 63. */
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < ANVIL_QK_K / 32; ++j) {
        const uint8_t s = (uint8_t)anvil_nearest_int(inv_scale * sub_scale[j]);
        const uint8_t m = (uint8_t)anvil_nearest_int(inv_min * sub_min[j]);
        ls[j] = s < 63 ? s : 63;
        lm[j] = m < 63 ? m : 63;
    }
    anvil_kq_pack_scale_min_k4(scales, ls, lm);
    *d_out = anvil_fp32_to_fp16(max_scale / 63.f);
    *dmin_out = anvil_fp32_to_fp16(max_min / 63.f);
}

/* quantize_row_q4_K_impl / q5_K_impl with importance weights: element
 * weights qw * sqrt(sigma2 + x^2) with sigma2 = 2 mean(x^2) over the whole
 * super-block, a finer grid search per sub-block, then the 6-bit sub-scales
 * and sub-mins fitted by anvil_kq_fit_positive, weighted by each sub-block's
 * total weight. */
static void k4_scales_weighted(const float *x, const float *qw, const anvil_kq_k4_format *f, uint8_t L[ANVIL_QK_K],
                               uint8_t scales[ANVIL_K_SCALE_SIZE], anvil_half *d_out, anvil_half *dmin_out) {
    float sub_scale[ANVIL_QK_K / 32];
    float sub_min[ANVIL_QK_K / 32];
    float sw[ANVIL_QK_K / 32];
    float weights[32];
    uint8_t Laux[32];

    const float sigma2 = 2 * anvil_kq_sum_squares(x, ANVIL_QK_K) / ANVIL_QK_K;
    for (int j = 0; j < ANVIL_QK_K / 32; ++j) {
        const float *xs = x + 32 * j;
        sw[j] = anvil_kq_importance(32, xs, qw + 32 * j, sigma2, weights);
        sub_scale[j] =
            anvil_kq_fit_affine(32, f->nmax, xs, weights, L + 32 * j, &sub_min[j], Laux, -0.9f, 0.05f, 36, 0);
    }
    uint8_t ls[8], lm[8];
    const float d_block = anvil_kq_fit_positive(ANVIL_QK_K / 32, 63, sub_scale, ls, sw);
    const float m_block = anvil_kq_fit_positive(ANVIL_QK_K / 32, 63, sub_min, lm, sw);
    if (f->clamp_weighted) {
        for (int j = 0; j < ANVIL_QK_K / 32; ++j) {
            ls[j] = ls[j] < 63 ? ls[j] : 63;
            lm[j] = lm[j] < 63 ? lm[j] : 63;
        }
    }
    anvil_kq_pack_scale_min_k4(scales, ls, lm);
    *d_out = anvil_fp32_to_fp16(d_block);
    *dmin_out = anvil_fp32_to_fp16(m_block);
}

void anvil_kq_encode_affine_k4(const float *x, const float *qw, const anvil_kq_k4_format *f, uint8_t L[ANVIL_QK_K],
                               uint8_t scales[ANVIL_K_SCALE_SIZE], anvil_half *d_out, anvil_half *dmin_out) {
    if (qw != NULL) {
        k4_scales_weighted(x, qw, f, L, scales, d_out, dmin_out);
    } else {
        k4_scales_plain(x, f, L, scales, d_out, dmin_out);
    }

    /* Requantize against the scales the decoder will actually use. A
     * sub-block whose scale rounds to 0 keeps the search's codes. */
    const float d_all = anvil_fp16_to_fp32(*d_out);
    const float dmin_all = anvil_fp16_to_fp32(*dmin_out);
    for (int j = 0; j < ANVIL_QK_K / 32; ++j) {
        uint8_t sc, m;
        anvil_kq_scale_min_k4(scales, j, &sc, &m);
        const float d = d_all * (float)sc;
        if (d == 0.0f) {
            continue;
        }
        const float dm = dmin_all * (float)m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = anvil_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)clamp_int(l, 0, f->nmax);
        }
    }
}
