/* SPDX-License-Identifier: MIT */
/* Q8_K: the activation format of the 256-element formats (see q8_k.h).
 * Follows ggml's quantize_row_q8_K_ref and dequantize_row_q8_K operation
 * for operation; checked byte for byte by anvil-parity --family kquants. */
#include "ref/q8_k.h"

#include <math.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ref/checks.h"

void anvil_ref_quantize_q8_K(const float *x, void *dst, size_t n) {
    anvil_block_q8_K *y = dst;
    const size_t nb = n / ANVIL_QK_K;
    for (size_t i = 0; i < nb; ++i, x += ANVIL_QK_K) {
        /* The signed value of largest magnitude (first one on ties) sets the
         * scale so that it maps to exactly -127. */
        float max = 0.0f;
        float amax = 0.0f;
        for (int j = 0; j < ANVIL_QK_K; ++j) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            y[i].d = 0.0f;
            memset(y[i].qs, 0, sizeof y[i].qs);
            memset(y[i].bsums, 0, sizeof y[i].bsums);
            continue;
        }
        /* -127 (not -128) keeps every code symmetric, which the IQ2 SIMD
         * dots rely on. A max so small (|max| < ~3.7e-37) that this
         * overflows gives iscale = -Inf: every code then comes out 0 (NaN
         * and +-Inf both round to a multiple of 256 below) and d = -0/+0,
         * exactly as in ggml. */
        const float iscale = -127.0f / max;
        for (int j = 0; j < ANVIL_QK_K; ++j) {
            /* Only the top is clamped (as ggml); an out-of-range code keeps
             * its low byte, two's complement, without an implementation-
             * defined narrowing cast. */
            const int v = anvil_nearest_int(iscale * x[j]);
            const unsigned b = (unsigned)(v < 127 ? v : 127) & 0xFFu;
            y[i].qs[j] = (int8_t)((int)b - (b & 0x80u ? 256 : 0));
        }
        for (int j = 0; j < ANVIL_QK_K / 16; ++j) {
            int sum = 0;
            for (int k = 0; k < 16; ++k) {
                sum += y[i].qs[j * 16 + k];
            }
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

int anvil_ref_encode_q8_K(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    const int rc = anvil_ref_check_encode_input("q8_K", src, n, ANVIL_QK_K, msg, msg_size);
    if (rc != 0) {
        return rc;
    }
    anvil_ref_quantize_q8_K(src, dst, n);
    return 0;
}

void anvil_ref_decode_q8_K(const void *src, float *dst, size_t n) {
    const anvil_block_q8_K *x = src;
    const size_t nb = n / ANVIL_QK_K;
    for (size_t i = 0; i < nb; ++i) {
        for (int j = 0; j < ANVIL_QK_K; ++j) {
            *dst++ = x[i].d * (float)x[i].qs[j];
        }
    }
}
