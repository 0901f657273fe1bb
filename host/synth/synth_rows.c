/* SPDX-License-Identifier: MIT */
#include "synth_rows.h"

#include <math.h>

void synth_seed(synth_rng *r, uint64_t seed) { r->s = seed ^ UINT64_C(0x2545F4914F6CDD1D); }

uint64_t synth_u64(synth_rng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static float uniform(synth_rng *r) { return (float)(synth_u64(r) >> 40) * 0x1.0p-24f; }

float synth_normal(synth_rng *r) {
    float u1 = uniform(r), u2 = uniform(r);
    if (u1 < 1e-7f) u1 = 1e-7f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

void synth_llm_row(float *x, size_t n, uint64_t seed, size_t row) {
    synth_rng r;
    synth_seed(&r, seed * 1000003u + row);
    const float scale = 0.02f * (0.5f + uniform(&r));
    for (size_t i = 0; i < n; ++i) {
        float v = synth_normal(&r);
        if (uniform(&r) < 0.01f) v *= 6.0f;          /* heavy tail */
        if ((i * 2654435761u) % 251 == 7) v *= 8.0f; /* hot columns */
        x[i] = v * scale;
    }
}
