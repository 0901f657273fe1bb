/* SPDX-License-Identifier: MIT */
#include "inputs.h"

#include <math.h>
#include <string.h>

static const char *const names[INPUT_KIND_COUNT] = {
    "ramp",   "alternating", "all-equal",      "zeros",         "near-zero", "denormals", "wide-range", "outlier",
    "normal", "llm-like",    "single-nonzero", "straddle-zero", "ternary",   "uniform",   "small-ints", "half-steps",
};

const char *test_input_kind_name(test_input_kind k) { return (unsigned)k < INPUT_KIND_COUNT ? names[k] : "?"; }

void test_rng_seed(test_rng *r, uint64_t seed) { r->s = seed ^ UINT64_C(0x9E3779B97F4A7C15); }

uint64_t test_rng_u64(test_rng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

float test_rng_uniform(test_rng *r) { return (float)(test_rng_u64(r) >> 40) * 0x1.0p-24f; }

float test_rng_normal(test_rng *r) {
    float u1 = test_rng_uniform(r);
    float u2 = test_rng_uniform(r);
    if (u1 < 1e-7f) {
        u1 = 1e-7f;
    }
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}

void test_input_fill(float *x, size_t n, test_input_kind kind, uint64_t seed, uint64_t row) {
    test_rng r;
    test_rng_seed(&r, seed * UINT64_C(1000003) + row * UINT64_C(7919) + (uint64_t)kind);
    const float sign = (row & 1) ? -1.0f : 1.0f;
    switch (kind) {
    case INPUT_RAMP: {
        const float span = 0.01f + 10.0f * test_rng_uniform(&r);
        for (size_t i = 0; i < n; ++i) {
            x[i] = sign * span * ((float)i / (float)(n > 1 ? n - 1 : 1) * 2.0f - 1.0f);
        }
        break;
    }
    case INPUT_ALTERNATING:
        for (size_t i = 0; i < n; ++i) {
            const float a = 0.5f + test_rng_uniform(&r);
            x[i] = (i & 1) ? -a : a;
        }
        break;
    case INPUT_ALL_EQUAL: {
        const float v = sign * (0.001f + 4.0f * test_rng_uniform(&r));
        for (size_t i = 0; i < n; ++i) {
            x[i] = v;
        }
        break;
    }
    case INPUT_ZEROS:
        for (size_t i = 0; i < n; ++i) {
            x[i] = (i % 7 == 3) ? -0.0f : 0.0f;
        }
        break;
    case INPUT_NEAR_ZERO:
        for (size_t i = 0; i < n; ++i) {
            x[i] = test_rng_normal(&r) * 1e-7f * (1.0f + 9.0f * test_rng_uniform(&r));
        }
        break;
    case INPUT_DENORMALS:
        for (size_t i = 0; i < n; ++i) {
            /* mix of subnormals (< 1.18e-38) and the smallest normals */
            const float u = test_rng_uniform(&r);
            const float m = (u < 0.7f) ? 1e-39f : 1e-37f;
            x[i] = (test_rng_uniform(&r) < 0.5f ? -m : m) * (1.0f + 10.0f * test_rng_uniform(&r));
        }
        break;
    case INPUT_WIDE_RANGE:
        for (size_t i = 0; i < n; ++i) {
            const float e = -6.0f + 10.0f * test_rng_uniform(&r);
            x[i] = (test_rng_uniform(&r) < 0.5f ? -1.0f : 1.0f) * powf(10.0f, e);
        }
        break;
    case INPUT_OUTLIER:
        for (size_t i = 0; i < n; ++i) {
            x[i] = test_rng_normal(&r) * 0.05f;
        }
        for (size_t b = 0; b < n; b += 32) {
            const size_t j = b + (size_t)(test_rng_u64(&r) % 32);
            if (j < n) {
                x[j] = (test_rng_uniform(&r) < 0.5f ? -1.0f : 1.0f) * (50.0f + 1000.0f * test_rng_uniform(&r));
            }
        }
        break;
    case INPUT_NORMAL:
        for (size_t i = 0; i < n; ++i) {
            x[i] = test_rng_normal(&r);
        }
        break;
    case INPUT_LLM_LIKE: {
        const float row_scale = powf(10.0f, -3.0f + 3.0f * test_rng_uniform(&r));
        for (size_t i = 0; i < n; ++i) {
            float v = test_rng_normal(&r);
            /* heavy tail: occasionally scale up (Student-t like) */
            if (test_rng_uniform(&r) < 0.02f) {
                v *= 8.0f;
            }
            /* a few "hot" channels, fixed per row */
            if ((i * 2654435761u + row) % 97 == 0) {
                v *= 20.0f;
            }
            x[i] = v * row_scale;
        }
        break;
    }
    case INPUT_SINGLE_NONZERO:
        memset(x, 0, n * sizeof *x);
        for (size_t b = 0; b < n; b += 32) {
            const size_t j = b + (size_t)(test_rng_u64(&r) % 32);
            if (j < n) {
                x[j] = sign * (0.01f + 5.0f * test_rng_uniform(&r));
            }
        }
        break;
    case INPUT_STRADDLE_ZERO:
        for (size_t i = 0; i < n; ++i) {
            x[i] = (test_rng_uniform(&r) - 0.5f) * 0.02f + ((i % 5 == 0) ? 0.001f : 0.0f);
        }
        break;
    case INPUT_TERNARY: {
        const float s = 0.01f + 2.0f * test_rng_uniform(&r);
        for (size_t i = 0; i < n; ++i) {
            const uint64_t t = test_rng_u64(&r) % 3;
            x[i] = t == 0 ? -s : (t == 1 ? 0.0f : s);
        }
        break;
    }
    case INPUT_UNIFORM:
        for (size_t i = 0; i < n; ++i) {
            x[i] = test_rng_uniform(&r) * 2.0f - 1.0f;
        }
        break;
    case INPUT_SMALL_INTS:
        for (size_t i = 0; i < n; ++i) {
            x[i] = (float)((int)(test_rng_u64(&r) % 17) - 8);
        }
        break;
    case INPUT_HALF_STEPS:
        for (size_t i = 0; i < n; ++i) {
            x[i] = 0.5f * (float)((int)(test_rng_u64(&r) % 33) - 16);
        }
        break;
    default: memset(x, 0, n * sizeof *x); break;
    }
}
