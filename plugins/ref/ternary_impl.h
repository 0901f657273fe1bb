/* SPDX-License-Identifier: MIT */
/* Private helpers of the ternary family's reference code (ternary_*.c).
 * Not part of any plugin interface. */
#ifndef ANVIL_REF_TERNARY_IMPL_H
#define ANVIL_REF_TERNARY_IMPL_H

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "anvil/numeric.h"
#include "ref/bytes.h"

/* Blocks are byte-packed in files (a TQ1_0 row is 54 bytes per block), so
 * every multi-byte field goes through ref/bytes.h: no alignment is assumed
 * of any buffer, weight or activation. */
/* ggml's TQ encoders turn a scaled weight into a trit with
 * `int xi = lroundf(v) + 1`. For finite v that is round-half-away plus one.
 * v is non-finite when a block's absmax is so small (below ~2.9e-39) that its
 * reciprocal overflows: then x * id is +-Inf, or NaN for a zero element. On
 * x86-64 (the oracle) lroundf answers LONG_MIN there, and LONG_MIN + 1 kept
 * as an int is 1: the "zero" trit. Spelling that out gives ggml's bytes on
 * every host. Only |v| <= ~1 is reachable with a finite scale; larger values
 * keep the low 32 bits, as the long-to-int conversion does. */
static inline int ternary_lround_plus1(float v) {
    if (v > -0x1p63f && v < 0x1p63f) { /* NaN fails both */
        const long long r = llroundf(v);
        return (int)(int32_t)(uint32_t)((unsigned long long)r + 1u);
    }
    return 1;
}

/* ggml's Q2_0 encoder: `int q = (int)roundf(v) + 1`, clamped to 0..3. The
 * cast of a NaN or out-of-range float is the x86-64 cvttss2si answer,
 * INT_MIN, so such weights (again only reachable through an overflowed
 * reciprocal) clamp to code 0. */
static inline int q2_0_code(float v) {
    const float r = roundf(v);
    int q = INT_MIN + 1;
    if (r >= -0x1p31f && r < 0x1p31f) {
        q = (int)r + 1;
    }
    return q < 0 ? 0 : (q > 3 ? 3 : q);
}

/* The trits of a base-3 "fraction" byte come out most significant first:
 * multiply by 3 (as q + 2q, no multiplier needed), the carry out of the low
 * byte is the trit and the low byte is what is left. Equal to ggml's
 * ((uint8_t)(b * 3^k) * 3) >> 8 for the k-th trit. */
static inline unsigned ternary_next_trit(unsigned *q) {
    const unsigned w = *q + (*q << 1);
    *q = w & 0xffu;
    return w >> 8;
}

#endif
