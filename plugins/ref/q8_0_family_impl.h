/* SPDX-License-Identifier: MIT */
/* Private helpers of the q8_0 family's reference code (q8_0_family*.c).
 * Not part of any plugin interface. */
#ifndef ANVIL_REF_Q8_0_FAMILY_IMPL_H
#define ANVIL_REF_Q8_0_FAMILY_IMPL_H

#include <stdint.h>

#include "anvil/blocks.h"

/* Every format of the family has 32 elements per block. */
#define Q8_0_FAMILY_BLOCK 32
#define Q8_0_FAMILY_HALF (Q8_0_FAMILY_BLOCK / 2)

/* ggml turns a scaled float into a code with a plain C cast ((int8_t)f,
 * (uint8_t)f). On the x86-64 build that is ggml's reference, the cast
 * compiles to a truncating conversion to int32 (cvttss2si) whose low byte is
 * kept; NaN and out-of-range values convert to INT32_MIN, so their low byte
 * is 0. Those values are reachable with finite input: when a block's scale
 * is a tiny subnormal its reciprocal overflows to Inf, and x * id becomes
 * +-Inf or NaN (0 * Inf). The oracle encodes such blocks with code 0 (probed
 * on ggml 3.22.1). Emulating the conversion here makes anvil produce ggml's
 * bytes on every host, not only on x86. Returns the low byte, as an int in
 * 0..255. */
static inline int q8_0_family_cvt_low_byte(float v) {
    int32_t i;
    /* 2^31 is exact in binary32; NaN fails both comparisons. */
    if (v >= -2147483648.0f && v < 2147483648.0f) {
        i = (int32_t)v; /* truncation toward zero, as cvttss2si */
    } else {
        i = INT32_MIN;
    }
    return (int)((uint32_t)i & 0xffu);
}

/* The same conversion read as a signed byte, as ggml's (int8_t) cast. */
static inline int q8_0_family_cvt_i8(float v) {
    const int b = q8_0_family_cvt_low_byte(v);
    return b >= 128 ? b - 256 : b;
}

#endif
