/* SPDX-License-Identifier: MIT */
/* Private helpers of the cold formats' reference code (cold_*.c). Not part
 * of any plugin interface.
 *
 * Blocks are read through byte pointers and memcpy, never by dereferencing a
 * block struct: a row handed to a decoder may sit at any address (a view
 * into a mapped file, a record in a fixture), and the multi-byte fields of
 * several formats would then be misaligned. Field positions come from the
 * SDK's block structs (offsetof), so the layout is still defined once. */
#ifndef ANVIL_REF_COLD_IMPL_H
#define ANVIL_REF_COLD_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "ref/bytes.h"
#include "ref/cold_tables.h"

/* v negated when element j's bit is set in `signs`. ggml's source writes
 * v * (bit ? -1.f : 1.f); its optimized build compiles that to a flip of
 * the sign bit, which differs from a true multiplication only for NaN (a
 * multiplication keeps the NaN's sign). Flipping the bit explicitly gives
 * ggml's bits for every input at any optimization level (probed: with NaN
 * scales, a -O0 multiply disagrees with ggml, the flip does not). */
static inline float cold_apply_sign(float v, uint8_t signs, int j) {
    const uint32_t flip = (signs & anvil_cold_kmask[j]) ? UINT32_C(0x80000000) : 0;
    return anvil_f32_from_bits(anvil_f32_to_bits(v) ^ flip);
}

static inline int cold_sign_i(uint8_t signs, int j) { return (signs & anvil_cold_kmask[j]) ? -1 : 1; }

/* ggml's importance weights of the i-quants and IQ4:
 * qw[i] * sqrtf(sigma2 + x[i]^2), sigma2 a per-format multiple of the
 * block's mean square; qw the importance matrix's entries for x's columns. */
static inline void cold_imatrix_weights(const float *qw, const float *x, int n, float sigma2, float *w) {
    for (int i = 0; i < n; ++i) {
        w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
    }
}

/* A group's weights: qw sqrt(sigma2 + x^2) with importance weights qw, else
 * ggml's default x^2 (IQ3, IQ1_M, IQ4). */
static inline void cold_group_weights(const float *x, const float *qw, int n, float sigma2, float *w) {
    if (qw != NULL) {
        cold_imatrix_weights(qw, x, n, sigma2, w);
    } else {
        for (int i = 0; i < n; ++i) {
            w[i] = x[i] * x[i];
        }
    }
}

/* Activation blocks, by field offset. */
#define COLD_Q8K_D offsetof(anvil_block_q8_K, d)
#define COLD_Q8K_QS offsetof(anvil_block_q8_K, qs)
#define COLD_Q8K_BSUMS offsetof(anvil_block_q8_K, bsums)
#define COLD_Q80_D offsetof(anvil_block_q8_0, d)
#define COLD_Q80_QS offsetof(anvil_block_q8_0, qs)

#endif
