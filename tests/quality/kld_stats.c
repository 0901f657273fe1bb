/* SPDX-License-Identifier: MIT */
/* The statistics of llama-perplexity --kl-divergence (see kld_stats.h). */
#include "kld_stats.h"

#include <math.h>
#include <stdlib.h>

int kld_log_softmax(const float *logits, int n, float *out) {
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

double kld_position(kld_acc *a, const float *lp_base, int top_base, const float *lp_q, int top_q, int n, int tok) {
    const float nll = -lp_q[tok];
    const float nll_base = -lp_base[tok];
    a->sum_nll += nll;
    a->sum_nll2 += (double)nll * nll;
    a->sum_nll_base += nll_base;
    a->sum_nll_base2 += (double)nll_base * nll_base;
    a->sum_nll_nll_base += (double)nll * nll_base;
    double kl = 0.0;
    for (int i = 0; i < n; ++i) {
        const float lb = lp_base[i];
        if (lb > KLD_LOG_P_FLOOR) kl += expf(lb) * (lb - lp_q[i]);
    }
    a->sum_kld += kl;
    a->sum_kld2 += kl * kl;
    ++a->count;
    if (top_base == top_q) ++a->n_same_top;
    const float p_diff = expf(-nll) - expf(-nll_base);
    const double d2 = (double)p_diff * p_diff;
    a->sum_p_diff += p_diff;
    a->sum_p_diff2 += d2;
    a->sum_p_diff4 += d2 * d2;
    if (fabs(p_diff) > a->max_p_diff) a->max_p_diff = fabs(p_diff);
    return kl;
}

void kld_acc_merge(kld_acc *a, const kld_acc *b) {
    a->sum_nll += b->sum_nll;
    a->sum_nll2 += b->sum_nll2;
    a->sum_nll_base += b->sum_nll_base;
    a->sum_nll_base2 += b->sum_nll_base2;
    a->sum_nll_nll_base += b->sum_nll_nll_base;
    a->sum_kld += b->sum_kld;
    a->sum_kld2 += b->sum_kld2;
    a->sum_p_diff += b->sum_p_diff;
    a->sum_p_diff2 += b->sum_p_diff2;
    a->sum_p_diff4 += b->sum_p_diff4;
    if (b->max_p_diff > a->max_p_diff) a->max_p_diff = b->max_p_diff;
    a->n_same_top += b->n_same_top;
    a->count += b->count;
}

/* perplexity.cpp's mean_and_uncertainty. */
static void mean_unc(double sum, double sum2, uint64_t count, double *mean, double *unc) {
    *mean = 0.0;
    *unc = 0.0;
    if (count < 1) return;
    const double f = sum / (double)count;
    const double df = sum2 / (double)count - f * f;
    *mean = f;
    *unc = df > 0 && count > 10 ? sqrt(df / (double)(count - 1)) : 0.0;
}

static int cmp_float(const void *x, const void *y) {
    const float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

/* perplexity.cpp's percentile: linear between the two nearest ranks. */
static double percentile(const float *v, size_t n, float fraction) {
    if (fraction <= 0) return v[0];
    if (fraction >= 1) return v[n - 1];
    float p = fraction * (float)(n - 1);
    const size_t ip = (size_t)p;
    p -= (float)ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n ? ip + 1 : n - 1];
}

void kld_summarize(const kld_acc *a, float *kld_values, size_t n_values, kld_summary *s) {
    *s = (kld_summary){ .count = a->count };
    double lp, lpu, lb, lbu;
    mean_unc(a->sum_nll, a->sum_nll2, a->count, &lp, &lpu);
    mean_unc(a->sum_nll_base, a->sum_nll_base2, a->count, &lb, &lbu);
    s->ppl = exp(lp);
    s->ppl_unc = s->ppl * lpu;
    s->ppl_base = exp(lb);
    s->ppl_base_unc = s->ppl_base * lbu;
    double cov = 0.0;
    if (a->count >= 10) {
        const double c = (double)a->count;
        cov = (a->sum_nll_nll_base / c - (a->sum_nll / c) * (a->sum_nll_base / c)) / (c - 1);
    }
    s->ln_ratio = lp - lb;
    const double r2 = lpu * lpu + lbu * lbu - 2.0 * cov;
    s->ln_ratio_unc = r2 > 0 ? sqrt(r2) : 0.0;
    mean_unc(a->sum_kld, a->sum_kld2, a->count, &s->kld, &s->kld_unc);
    double mse, mse_unc;
    mean_unc(a->sum_p_diff2, a->sum_p_diff4, a->count, &mse, &mse_unc);
    s->rms_dp = sqrt(mse);
    s->rms_dp_unc = s->rms_dp > 0 ? 0.5 / s->rms_dp * mse_unc : 0.0;
    if (a->count > 0) {
        s->top1 = (double)a->n_same_top / (double)a->count;
        s->top1_unc = a->count > 1 ? sqrt(s->top1 * (1 - s->top1) / (double)(a->count - 1)) : 0.0;
    }
    if (kld_values != NULL && n_values > 0) {
        qsort(kld_values, n_values, sizeof *kld_values, cmp_float);
        const size_t h = n_values / 2;
        s->kld_median = n_values % 2 == 0 ? 0.5f * (kld_values[h] + kld_values[h - 1]) : kld_values[h];
        s->kld_p90 = percentile(kld_values, n_values, 0.90f);
        s->kld_p99 = percentile(kld_values, n_values, 0.99f);
        s->kld_p999 = percentile(kld_values, n_values, 0.999f);
        s->kld_max = kld_values[n_values - 1];
    }
}
