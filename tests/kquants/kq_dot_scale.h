/* SPDX-License-Identifier: MIT */
/*
 * The scale a k-quant dot product's float error is measured against, shared
 * by the parity program and the offline suite.
 *
 * Every kernel, ggml's SIMD ones included, splits a weight into an
 * unsigned-code part (d sc u, u >= 0) and an offset part (-dmin m, or d sc
 * times -4 for Q3_K and -32 for Q6_K), sums each against the activations
 * and combines them in f32. When those partial sums are large and cancel,
 * the result is only known to ~1e-7 of their size, whatever the order of
 * accumulation. So "within 1e-5 relative" means relative to
 *     S = sum_j |a_j| (|w_j - w0_j| + |w0_j|)
 * (w0: the block decoded with every code bit zeroed, i.e. the offset part
 * alone), or to |dot| when that is larger. Without cancellation S ~ |dot|.
 */
#ifndef ANVIL_TEST_KQ_DOT_SCALE_H
#define ANVIL_TEST_KQ_DOT_SCALE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "ref/kquants.h"
#include "ref/q8_k.h"

#define KQ_SCALE_MAX_BLOCKS 16

/* Byte ranges of a block that hold code bits; zeroed, every code becomes
 * the format's lowest one. Returns how many (0: not a weight format). */
static inline int kq_code_spans(uint32_t type_id, size_t off[2], size_t len[2], size_t *block_bytes,
                                void (**decode)(const void *, float *, size_t)) {
#define KQ_SPAN(i, T, field) (off[i] = offsetof(T, field), len[i] = sizeof(((T *)0)->field))
    switch (type_id) {
    case ANVIL_TYPE_Q2_K:
        KQ_SPAN(0, anvil_block_q2_K, qs);
        *block_bytes = sizeof(anvil_block_q2_K);
        *decode = anvil_ref_decode_q2_K;
        return 1;
    case ANVIL_TYPE_Q3_K:
        KQ_SPAN(0, anvil_block_q3_K, hmask);
        KQ_SPAN(1, anvil_block_q3_K, qs);
        *block_bytes = sizeof(anvil_block_q3_K);
        *decode = anvil_ref_decode_q3_K;
        return 2;
    case ANVIL_TYPE_Q4_K:
        KQ_SPAN(0, anvil_block_q4_K, qs);
        *block_bytes = sizeof(anvil_block_q4_K);
        *decode = anvil_ref_decode_q4_K;
        return 1;
    case ANVIL_TYPE_Q5_K:
        KQ_SPAN(0, anvil_block_q5_K, qh);
        KQ_SPAN(1, anvil_block_q5_K, qs);
        *block_bytes = sizeof(anvil_block_q5_K);
        *decode = anvil_ref_decode_q5_K;
        return 2;
    case ANVIL_TYPE_Q6_K:
        KQ_SPAN(0, anvil_block_q6_K, ql);
        KQ_SPAN(1, anvil_block_q6_K, qh);
        *block_bytes = sizeof(anvil_block_q6_K);
        *decode = anvil_ref_decode_q6_K;
        return 2;
    default: return 0;
    }
#undef KQ_SPAN
}

/* S for nblocks (<= 16) weight blocks w of type_id against Q8_K blocks a;
 * -1 for a type that is not a k-quant weight format. */
static inline double kq_dot_term_scale(uint32_t type_id, const void *w, const void *a, size_t nblocks) {
    static float wd[KQ_SCALE_MAX_BLOCKS * ANVIL_QK_K], w0[KQ_SCALE_MAX_BLOCKS * ANVIL_QK_K];
    static float ad[KQ_SCALE_MAX_BLOCKS * ANVIL_QK_K];
    static uint8_t tmp[KQ_SCALE_MAX_BLOCKS * sizeof(anvil_block_q6_K) * 2];
    size_t off[2], len[2], bb = 0;
    void (*decode)(const void *, float *, size_t) = NULL;
    const int nsp = kq_code_spans(type_id, off, len, &bb, &decode);
    if (nsp == 0 || nblocks > KQ_SCALE_MAX_BLOCKS) {
        return -1.0;
    }
    const size_t n = nblocks * ANVIL_QK_K;
    memcpy(tmp, w, nblocks * bb);
    for (size_t i = 0; i < nblocks; ++i) {
        for (int k = 0; k < nsp; ++k) {
            memset(tmp + i * bb + off[k], 0, len[k]);
        }
    }
    anvil_ref_decode_q8_K(a, ad, n);
    decode(w, wd, n);
    decode(tmp, w0, n);
    double sum = 0;
    for (size_t j = 0; j < n; ++j) {
        const double lo = (double)w0[j];
        sum += fabs((double)ad[j]) * (fabs((double)wd[j] - lo) + fabs(lo));
    }
    return sum;
}

/* The dot check: |a - b| <= rel_tol * max(|a|, |b|, S). */
static inline int kq_dot_close(float a, float b, double scale, double rel_tol) {
    if (!isfinite(a) || !isfinite(b)) {
        return memcmp(&a, &b, sizeof a) == 0;
    }
    double m = fmax(fabs((double)a), fabs((double)b));
    if (scale > m) {
        m = scale;
    }
    return fabs((double)a - (double)b) <= rel_tol * m;
}

#endif
