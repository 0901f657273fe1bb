/* SPDX-License-Identifier: MIT */
#include "imatrix_kinds.h"

#include <math.h>
#include <string.h>

#include "inputs.h"

static const char *const names[TEST_IMX_KIND_COUNT] = { "ones",  "log-normal", "heavy-tailed",
                                                        "zeros", "tiny",       "extreme" };

const char *test_imatrix_kind_name(test_imatrix_kind k) { return (unsigned)k < TEST_IMX_KIND_COUNT ? names[k] : "?"; }

void test_imatrix_fill(float *w, size_t n, test_imatrix_kind kind, uint64_t seed) {
    test_rng r;
    test_rng_seed(&r, seed);
    for (size_t j = 0; j < n; ++j) {
        const float ln = expf(1.5f * test_rng_normal(&r));
        const float u = test_rng_uniform(&r);
        switch (kind) {
        case TEST_IMX_ONES: w[j] = 1.0f; break;
        case TEST_IMX_LOGNORMAL: w[j] = ln; break;
        case TEST_IMX_HEAVY: w[j] = u < 0.025f ? ln * powf(10.0f, 3.0f + 5.0f * test_rng_uniform(&r)) : ln; break;
        case TEST_IMX_ZEROS: w[j] = u < 0.33f ? 0.0f : ln; break;
        case TEST_IMX_TINY: w[j] = powf(10.0f, -30.0f - 15.0f * u); break;
        case TEST_IMX_EXTREME:
            w[j] = u < 0.025f ? fminf(3e38f, ln * powf(10.0f, 3.0f + 35.0f * test_rng_uniform(&r))) : ln;
            break;
        default: w[j] = 0.0f; break;
        }
    }
    if (kind == TEST_IMX_ZEROS) {
        for (size_t g = 0; g + 16 <= n; g += 16) {
            if (test_rng_uniform(&r) < 0.2f) memset(w + g, 0, 16 * sizeof *w);
        }
    }
}
