/* SPDX-License-Identifier: MIT */
/*
 * llama-perplexity's statistics as the model layer computes them
 * (host/src/model/mdl_stats.c: what `anvil perplexity` and the quality
 * benchmark's anvil-kld both use) on hand-made distributions whose figures
 * are known in closed form: no oracle needed.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <string.h>

#include "model_internal.h"
#include "test_env.h"

#define NV 4

static void lsm(const float *logits, float *lp, int *top) { *top = mdl_log_softmax(logits, NV, lp); }

static void test_log_softmax(void) {
    const float l[NV] = { 1.0f, 3.0f, 3.0f, -2.0f };
    float lp[NV];
    int top;
    lsm(l, lp, &top);
    CU_ASSERT_EQUAL(top, 1); /* the first of two equal maxima */
    double z = exp(-2.0) + 1 + 1 + exp(-5.0);
    for (int i = 0; i < NV; ++i) CU_ASSERT_DOUBLE_EQUAL(lp[i], l[i] - 3.0 - log(z), 1e-6);
}

static void test_self_is_zero(void) {
    const float l[NV] = { 0.5f, -1.25f, 2.0f, 0.0f };
    float lp[NV];
    int top;
    lsm(l, lp, &top);
    mdl_acc a = { 0 };
    for (int k = 0; k < 20; ++k) CU_ASSERT_EQUAL(mdl_kld_position(&a, lp, top, lp, top, NV, k % NV), 0.0);
    anvil_ppl_result s;
    float v[20] = { 0 };
    mdl_summarize(&a, v, 20, &s);
    CU_ASSERT_EQUAL(s.kld, 0.0);
    CU_ASSERT_EQUAL(s.top1, 1.0);
    CU_ASSERT_EQUAL(s.ppl, s.ppl_base);
    CU_ASSERT_EQUAL(s.ln_ratio, 0.0);
}

/* KL(P || Q) = sum p log(p / q), p = softmax(0, 0, 0, 0), q = softmax(0, 0, 0, ln 3). */
static void test_known_kl(void) {
    const float lb[NV] = { 0, 0, 0, 0 }, lq[NV] = { 0, 0, 0, (float)log(3.0) };
    float pb[NV], pq[NV];
    int tb, tq;
    lsm(lb, pb, &tb);
    lsm(lq, pq, &tq);
    mdl_acc a = { 0 };
    const double kl = mdl_kld_position(&a, pb, tb, pq, tq, NV, 3);
    const double want = 3 * 0.25 * log(0.25 / (1.0 / 6.0)) + 0.25 * log(0.25 / 0.5);
    CU_ASSERT_DOUBLE_EQUAL(kl, want, 1e-6);
    CU_ASSERT_EQUAL(a.n_same_top, 0);                  /* base's first max is 0, q's is 3 */
    CU_ASSERT_DOUBLE_EQUAL(a.sum_nll, log(2.0), 1e-6); /* -log q(3) */
    CU_ASSERT_DOUBLE_EQUAL(a.sum_nll_base, log(4.0), 1e-6);
}

/* Base tokens with log p <= -16 do not count (perplexity.cpp). */
static void test_floor(void) {
    const float lb[NV] = { 0, -40, -40, -40 }, lq[NV] = { 0, 0, -40, -40 };
    float pb[NV], pq[NV];
    int tb, tq;
    lsm(lb, pb, &tb);
    lsm(lq, pq, &tq);
    mdl_acc a = { 0 };
    const double kl = mdl_kld_position(&a, pb, tb, pq, tq, NV, 0);
    CU_ASSERT_DOUBLE_EQUAL(kl, log(2.0), 1e-6); /* only token 0: 1 * (0 - log 1/2) */
    CU_ASSERT_EQUAL(a.n_same_top, 1);
}

/* Mean, uncertainty, median and percentiles as perplexity.cpp prints them. */
static void test_summary(void) {
    mdl_acc a = { 0 };
    float v[12];
    for (int i = 0; i < 12; ++i) {
        v[11 - i] = (float)(i + 1);
        a.sum_kld += i + 1;
        a.sum_kld2 += (double)(i + 1) * (i + 1);
        a.count++;
        a.n_same_top += i < 9;
    }
    anvil_ppl_result s;
    mdl_summarize(&a, v, 12, &s);
    CU_ASSERT_DOUBLE_EQUAL(s.kld, 6.5, 1e-12);
    /* population variance 143/12, over count - 1 = 11 */
    CU_ASSERT_DOUBLE_EQUAL(s.kld_unc, sqrt((650.0 / 12 - 42.25) / 11), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.kld_median, 6.5, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(s.kld_p99, 1 + 0.99 * 11, 1e-4);
    CU_ASSERT_DOUBLE_EQUAL(s.kld_max, 12, 0);
    CU_ASSERT_DOUBLE_EQUAL(s.top1, 0.75, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.top1_unc, sqrt(0.75 * 0.25 / 11), 1e-12);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("mdl_stats", NULL, NULL);
    CU_add_test(s, "log_softmax", test_log_softmax);
    CU_add_test(s, "self_is_zero", test_self_is_zero);
    CU_add_test(s, "known_kl", test_known_kl);
    CU_add_test(s, "floor", test_floor);
    CU_add_test(s, "summary", test_summary);
    return test_run_cunit();
}
