/* SPDX-License-Identifier: MIT */
/*
 * The statistics of `llama-perplexity --kl-divergence`, on logits in
 * memory: per scored position the base model's log-probabilities against
 * the quantized model's logits; at the end the means with their
 * uncertainties as perplexity.cpp computes them.
 *
 * Contract (as llama.cpp's tools/perplexity/perplexity.cpp, of the oracle's release):
 *  - log-softmax: the maximum logit in float, the sum of expf(l - max) in
 *    double, its log rounded to float; log p_i = (l_i - max) - lse, float.
 *  - KL(P_base || P_q) at a position: the sum over the tokens with
 *    log p_base > -16 of expf(log p_base) * (log p_base - log p_q), each
 *    term in float, accumulated in double.
 *  - "same top": the first index of the largest logit agrees.
 *  - mean and uncertainty: mean, sqrt(var / (count - 1)) when count > 10.
 * One deviation, on purpose: llama.cpp stores the base log-probabilities as
 * 16-bit steps of (max - min) / 65535 (about 1e-4 nats); here they stay
 * float, so a model against itself scores exactly 0 and top-1 exactly 1.
 * The difference to llama.cpp's figure is well below 1e-5 of mean KLD.
 */
#ifndef ANVIL_TESTS_KLD_STATS_H
#define ANVIL_TESTS_KLD_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Log-probabilities below this are left out of the KL sum (perplexity.cpp). */
#define KLD_LOG_P_FLOOR (-16.0f)

typedef struct kld_acc {
    double sum_nll, sum_nll2;           /* quantized model: -log p_q(next) */
    double sum_nll_base, sum_nll_base2; /* base model */
    double sum_nll_nll_base;
    double sum_kld, sum_kld2;
    double sum_p_diff, sum_p_diff2, sum_p_diff4; /* p_q(next) - p_base(next) */
    double max_p_diff;
    uint64_t n_same_top, count;
} kld_acc;

typedef struct kld_summary {
    uint64_t count;
    double ppl, ppl_unc, ppl_base, ppl_base_unc;
    double ln_ratio, ln_ratio_unc; /* ln(PPL(Q) / PPL(base)) */
    double kld, kld_unc, kld_median, kld_p90, kld_p99, kld_p999, kld_max;
    double top1, top1_unc;     /* fraction, not percent */
    double rms_dp, rms_dp_unc; /* RMS of p_q(next) - p_base(next), fraction */
} kld_summary;

/* log-softmax of n logits into out; returns the first index of the largest. */
int kld_log_softmax(const float *logits, int n, float *out);

/* One scored position. lp_base: the base's log-probabilities (from
 * kld_log_softmax), top_base its first argmax; lp_q: the same for the
 * quantized model; tok: the token that follows. Adds to a and returns the
 * position's KL divergence. */
double kld_position(kld_acc *a, const float *lp_base, int top_base, const float *lp_q, int top_q, int n, int tok);

/* Add b's sums to a (in a fixed order of calls the result is deterministic). */
void kld_acc_merge(kld_acc *a, const kld_acc *b);

/* The figures. kld_values (count of them) are sorted in place for the
 * percentiles; NULL leaves the percentiles 0. */
void kld_summarize(const kld_acc *a, float *kld_values, size_t n_values, kld_summary *s);

#endif
