/* SPDX-License-Identifier: MIT */
/* The referee dots of F32, F16 and BF16 weights (contract: float_dot.h). */
#include "ref/float_dot.h"

#include <math.h>

#include "anvil/numeric.h"
#include "ref/bytes.h"

/* The fixed reduction tree of the 16 lanes. */
static float sum_lanes(const float s[16]) {
    float h[8], q[4];
    for (int j = 0; j < 8; ++j) h[j] = s[j] + s[j + 8];
    for (int j = 0; j < 4; ++j) q[j] = h[j] + h[j + 4];
    return (q[0] + q[2]) + (q[1] + q[3]);
}

void anvil_ref_vec_dot_f16_f32(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w;
    const float *av = a;
    float lane[16] = { 0 };
    const size_t padded = (n + 15) / 16 * 16;
    for (size_t i = 0; i < padded; ++i) {
        const float wi = i < n ? anvil_fp16_to_fp32(anvil_rd_u16(wb + 2 * i)) : 0.0f;
        const float ai = i < n ? av[i] : 0.0f;
        lane[i % 16] = fmaf(wi, ai, lane[i % 16]);
    }
    *s = sum_lanes(lane);
}

void anvil_ref_vec_dot_f32_f32(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w;
    const float *av = a;
    float lane[16] = { 0 };
    const size_t padded = (n + 15) / 16 * 16;
    for (size_t i = 0; i < padded; ++i) {
        const float wi = i < n ? anvil_rd_f32(wb + 4 * i) : 0.0f;
        const float ai = i < n ? av[i] : 0.0f;
        lane[i % 16] = fmaf(wi, ai, lane[i % 16]);
    }
    *s = sum_lanes(lane);
}

/* A bf16 subnormal reads as zero (keeping its sign). */
static float daz(uint16_t h) {
    return (h & 0x7f80u) == 0 ? anvil_bf16_to_fp32((uint16_t)(h & 0x8000u)) : anvil_bf16_to_fp32(h);
}

static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

uint16_t anvil_ref_bf16_act(float a) {
    if (fpclassify(a) == FP_SUBNORMAL) a = copysignf(0.0f, a);
    return anvil_fp32_to_bf16(a);
}

void anvil_ref_vec_dot_bf16_f32(size_t n, float *s, const void *w, const void *a) {
    const uint8_t *wb = w;
    const float *av = a;
    float lane[16] = { 0 };
    const size_t padded = (n + 31) / 32 * 32;
    for (size_t c = 0; c < padded; c += 32) {
        for (size_t j = 0; j < 16; ++j) {
            for (size_t odd = 2; odd-- > 0;) { /* 2j + 1, then 2j */
                const size_t i = c + 2 * j + odd;
                const uint16_t wi = i < n ? anvil_rd_u16(wb + 2 * i) : 0;
                const uint16_t ai = i < n ? anvil_ref_bf16_act(av[i]) : 0;
                lane[j] = ftz(fmaf(daz(wi), daz(ai), lane[j]));
            }
        }
    }
    *s = sum_lanes(lane);
}
