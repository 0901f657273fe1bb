/* SPDX-License-Identifier: MIT */
/*
 * The statistics of llama-perplexity (llama.cpp's tools/perplexity/perplexity.cpp in the
 * oracle's release), per scored position and at the end:
 *  - perplexity: log-softmax with the maximum logit in float and the sum of
 *    expf(l - max) in double; nll = -(l_tok - max - log(sum)) in double.
 *  - --kl-divergence: KL(P_base || P) summed over the tokens with
 *    log p_base > -16, each term in float, accumulated in double; "same
 *    top" when the first argmaxes agree; the means with their
 *    uncertainties sqrt(var / (count - 1)) when count > 10; median and
 *    percentiles linear between the two nearest ranks.
 * One deviation, on purpose: llama.cpp keeps the base's log-probabilities
 * as 16-bit steps; here they stay float (a model against itself is 0).
 */
#include <math.h>
#include <stdlib.h>

#include "model_internal.h"

#define LOG_P_FLOOR (-16.0f)

int mdl_log_softmax(const float *logits, int n, float *out) {
    float max = logits[0];
    int top = 0;
    for (int i = 1; i < n; ++i) {
        if (logits[i] > max) {
            max = logits[i];
            top = i;
        }
    }
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += expf(logits[i] - max);
    const float lse = (float)log(sum);
    for (int i = 0; i < n; ++i) out[i] = (logits[i] - max) - lse;
    return top;
}

double mdl_nll(const float *logits, int n, int tok) {
    float max = logits[0];
    for (int i = 1; i < n; ++i) max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += expf(logits[i] - max);
    return -((double)(logits[tok] - max) - log(sum));
}

double mdl_kld_position(mdl_acc *a, const float *lp_base, int top_base, const float *lp, int top, int n, int tok) {
    const float nll = -lp[tok], nll_base = -lp_base[tok];
    a->sum_nll += nll;
    a->sum_nll2 += (double)nll * nll;
    a->sum_nll_base += nll_base;
    a->sum_nll_base2 += (double)nll_base * nll_base;
    a->sum_nll_nll_base += (double)nll * nll_base;
    double kl = 0.0;
    for (int i = 0; i < n; ++i) {
        const float lb = lp_base[i];
        if (lb > LOG_P_FLOOR) kl += expf(lb) * (lb - lp[i]);
    }
    a->sum_kld += kl;
    a->sum_kld2 += kl * kl;
    ++a->count;
    if (top_base == top) ++a->n_same_top;
    const float p_diff = expf(-nll) - expf(-nll_base);
    const double d2 = (double)p_diff * p_diff;
    a->sum_p_diff += p_diff;
    a->sum_p_diff2 += d2;
    a->sum_p_diff4 += d2 * d2;
    if (fabs(p_diff) > a->max_p_diff) a->max_p_diff = fabs(p_diff);
    return kl;
}

static void mean_unc(double sum, double sum2, uint64_t count, double *mean, double *unc) {
    *mean = 0.0;
    *unc = 0.0;
    if (count < 1) return;
    const double f = sum / (double)count, df = sum2 / (double)count - f * f;
    *mean = f;
    *unc = df > 0 && count > 10 ? sqrt(df / (double)(count - 1)) : 0.0;
}

static int cmp_float(const void *x, const void *y) {
    const float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

static double percentile(const float *v, size_t n, float fraction) {
    if (fraction <= 0) return v[0];
    if (fraction >= 1) return v[n - 1];
    float p = fraction * (float)(n - 1);
    const size_t ip = (size_t)p;
    p -= (float)ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n ? ip + 1 : n - 1];
}

void mdl_summarize(const mdl_acc *a, float *kld_values, size_t n_values, anvil_ppl_result *r) {
    double lp, lpu, lb, lbu;
    mean_unc(a->sum_nll, a->sum_nll2, a->count, &lp, &lpu);
    mean_unc(a->sum_nll_base, a->sum_nll_base2, a->count, &lb, &lbu);
    r->count = a->count;
    r->ppl = exp(lp);
    r->ppl_unc = r->ppl * lpu;
    r->ppl_base = exp(lb);
    r->ppl_base_unc = r->ppl_base * lbu;
    r->ppl_ratio = r->ppl_base > 0 ? r->ppl / r->ppl_base : 0.0;
    double cov = 0.0;
    if (a->count >= 10) {
        const double c = (double)a->count;
        cov = (a->sum_nll_nll_base / c - (a->sum_nll / c) * (a->sum_nll_base / c)) / (c - 1);
    }
    r->ln_ratio = lp - lb;
    const double r2 = lpu * lpu + lbu * lbu - 2.0 * cov;
    r->ln_ratio_unc = r2 > 0 ? sqrt(r2) : 0.0;
    mean_unc(a->sum_kld, a->sum_kld2, a->count, &r->kld, &r->kld_unc);
    double mse, mse_unc;
    mean_unc(a->sum_p_diff2, a->sum_p_diff4, a->count, &mse, &mse_unc);
    r->rms_dp = sqrt(mse);
    r->rms_dp_unc = r->rms_dp > 0 ? 0.5 / r->rms_dp * mse_unc : 0.0;
    r->max_dp = a->max_p_diff;
    if (a->count > 0) {
        r->top1 = (double)a->n_same_top / (double)a->count;
        r->top1_unc = a->count > 1 ? sqrt(r->top1 * (1 - r->top1) / (double)(a->count - 1)) : 0.0;
    }
    if (kld_values != NULL && n_values > 0) {
        qsort(kld_values, n_values, sizeof *kld_values, cmp_float);
        const size_t h = n_values / 2;
        r->kld_median = n_values % 2 == 0 ? 0.5f * (kld_values[h] + kld_values[h - 1]) : kld_values[h];
        r->kld_p90 = percentile(kld_values, n_values, 0.90f);
        r->kld_p99 = percentile(kld_values, n_values, 0.99f);
        r->kld_p999 = percentile(kld_values, n_values, 0.999f);
        r->kld_max = kld_values[n_values - 1];
        r->kld_min = kld_values[0];
    }
}
