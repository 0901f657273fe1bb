/* SPDX-License-Identifier: MIT */
/* float_rows.c: f16/bf16/f32 rows to f32 (F16C/AVX2 or NEON where the CPU
 * has them) bit-identical to anvil_decode, with the index of the first
 * NaN/Inf, at any alignment and length; the quality report's error sums. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/numeric.h"
#include "float_rows.h"
#include "tc_test.h"

static int is_nonfinite(float v) {
    uint32_t b;
    memcpy(&b, &v, 4);
    return (b & UINT32_C(0x7f800000)) == UINT32_C(0x7f800000);
}

/* Every 16-bit pattern, converted from byte offset `skew` (1: odd
 * addresses) in pieces of awkward lengths. */
static void check_all_halves(uint32_t type, size_t skew) {
    const size_t n = 65536;
    uint8_t *raw = malloc(2 * n + 8);
    float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    CU_ASSERT_FATAL(raw != NULL && got != NULL && want != NULL);
    for (size_t i = 0; i < n; ++i) {
        const uint16_t h = (uint16_t)i;
        memcpy(raw + skew + 2 * i, &h, 2);
    }
    CU_ASSERT_FATAL(anvil_decode(NULL, type, raw + skew, 2 * n, want, n, NULL) == ANVIL_OK);
    size_t mismatches = 0, at = 0;
    const size_t lens[] = { 1, 15, 16, 17, 1023, 1024, 1025, 3000 };
    for (size_t k = 0; at < n; k = (k + 1) % 8) {
        const size_t len = lens[k] < n - at ? lens[k] : n - at;
        const size_t bad = anvil__float_load(type, raw + skew + 2 * at, got + at, len);
        size_t first = len;
        for (size_t i = 0; i < len && first == len; ++i) {
            if (is_nonfinite(want[at + i])) first = i;
        }
        CU_ASSERT_EQUAL(bad, first);
        CU_ASSERT_EQUAL(anvil_float_find_nonfinite_raw(type, raw + skew + 2 * at, len), first);
        at += len;
    }
    for (size_t i = 0; i < n; ++i) {
        if (is_nonfinite(want[i]) && want[i] != want[i]) {
            mismatches += got[i] == got[i]; /* a NaN stays a NaN */
        } else {
            mismatches += memcmp(&got[i], &want[i], 4) != 0;
        }
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    free(raw);
    free(got);
    free(want);
}

static void test_f16(void) {
    check_all_halves(ANVIL_TYPE_F16, 0);
    check_all_halves(ANVIL_TYPE_F16, 1);
}

static void test_bf16(void) {
    check_all_halves(ANVIL_TYPE_BF16, 0);
    check_all_halves(ANVIL_TYPE_BF16, 1);
}

/* The first bad value wins wherever it lies; all n are still converted. */
static void test_first_nonfinite(void) {
    const size_t n = 5000;
    uint16_t *h = malloc(n * 2);
    float *x = malloc(n * 4), *ref = malloc(n * 4);
    CU_ASSERT_FATAL(h != NULL && x != NULL && ref != NULL);
    const size_t spots[] = { 0, 15, 16, 1023, 1024, 2047, 4999 };
    for (size_t s = 0; s < sizeof spots / sizeof spots[0]; ++s) {
        for (size_t i = 0; i < n; ++i) h[i] = anvil_fp32_to_fp16((float)((int)(i % 97) - 48) / 16.0f);
        h[spots[s]] = 0x7c00;                               /* +inf */
        if (spots[s] + 700 < n) h[spots[s] + 700] = 0x7e00; /* a later NaN */
        CU_ASSERT_EQUAL(anvil__float_load(ANVIL_TYPE_F16, h, x, n), spots[s]);
        CU_ASSERT(anvil_decode(NULL, ANVIL_TYPE_F16, h, n * 2, ref, n, NULL) == ANVIL_OK);
        CU_ASSERT(memcmp(x, ref, n * 4) == 0 || spots[s] + 700 < n); /* NaN bits may differ; inf may not */
        CU_ASSERT(memcmp(&x[n - 1], &ref[n - 1], 4) == 0);
    }
    float *f = malloc(n * 4);
    CU_ASSERT_FATAL(f != NULL);
    for (size_t i = 0; i < n; ++i) f[i] = (float)i;
    CU_ASSERT_EQUAL(anvil__float_load(ANVIL_TYPE_F32, f, x, n), n);
    f[3333] = -INFINITY;
    CU_ASSERT_EQUAL(anvil__float_load(ANVIL_TYPE_F32, f, x, n), 3333);
    CU_ASSERT_EQUAL(anvil__float_find_nonfinite(x, n), 3333);
    CU_ASSERT_EQUAL(anvil_float_find_nonfinite_raw(ANVIL_TYPE_F32, f, n), 3333);
    CU_ASSERT_EQUAL(anvil_float_find_nonfinite_raw(ANVIL_TYPE_F32, f, 3333), 3333);
    CU_ASSERT(memcmp(f, x, n * 4) == 0);
    free(f);
    free(h);
    free(x);
    free(ref);
}

/* The sums of a plain double loop, and the largest |x - y| in float. */
static void double_sums(const float *x, const float *y, size_t n, double *se, double *sg, double *mx) {
    *se = *sg = *mx = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = (double)x[i] - y[i];
        *se += d * d;
        *sg += (double)x[i] * x[i];
        const float ad = fabsf(x[i] - y[i]);
        *mx = ad > *mx ? ad : *mx;
    }
}

/* The SIMD path and the portable one give the same bits. */
static void assert_paths_agree(const float *x, const float *y, size_t n) {
    double a[3], b[3];
    anvil__float_error_sums_path(x, y, n, 1, &a[0], &a[1], &a[2]);
    anvil__float_error_sums_path(x, y, n, 0, &b[0], &b[1], &b[2]);
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
}

static uint64_t lcg(uint64_t *r) {
    *r = *r * 6364136223846793005u + 1442695040888963407u;
    return *r >> 11;
}

/* The error sums against a plain double loop: float lanes flushed to double
 * per block of 1024 keep the relative error below 66 * 2^-24 (4e-6); max
 * exact; the tail (n not a multiple of 1024) counted. */
static void test_error_sums(void) {
    const size_t n = 10007;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    CU_ASSERT_FATAL(x != NULL && y != NULL);
    uint64_t r = 42;
    for (size_t i = 0; i < n; ++i) {
        x[i] = (float)((double)lcg(&r) / 9007199254740992.0 * 8.0 - 4.0);
        y[i] = x[i] + (float)((int)(r % 201) - 100) / 1024.0f;
    }
    y[n - 1] = x[n - 1] + 5.0f; /* the largest error sits in the tail */
    double se, sg, mx;
    double_sums(x, y, n, &se, &sg, &mx);
    double a, b, c;
    anvil_float_error_sums(x, y, n, &a, &b, &c);
    CU_ASSERT_DOUBLE_EQUAL(a, se, 4e-6 * se);
    CU_ASSERT_DOUBLE_EQUAL(b, sg, 4e-6 * sg);
    CU_ASSERT(a != se || b != sg); /* the float lanes did the work (a double loop would match closer) */
    CU_ASSERT_EQUAL(c, mx);
    CU_ASSERT(c >= 4.99);
    assert_paths_agree(x, y, n);
    y[5000] = x[5000] + 6.0f; /* the largest error in a block */
    anvil_float_error_sums(x, y, n, &a, &b, &c);
    CU_ASSERT(c >= 5.99);
    anvil_float_error_sums(x, y, 5, &a, &b, &c); /* tail only */
    CU_ASSERT(a > 0 && b > 0 && c > 0);
    free(x);
    free(y);
}

/* Where float would overflow or underflow, the block is summed in double:
 * the figures stay those of the double loop (to its own rounding). */
static void test_error_sums_extremes(void) {
    const size_t n = 4096 + 100;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    CU_ASSERT_FATAL(x != NULL && y != NULL);
    static const float scale[] = { 1e-30f, 1e-42f, 1e25f, 3e38f };
    for (size_t t = 0; t < sizeof scale / sizeof scale[0]; ++t) {
        uint64_t r = 7 + t;
        for (size_t i = 0; i < n; ++i) {
            const float u = (float)((double)lcg(&r) / 9007199254740992.0 - 0.5);
            x[i] = u * scale[t];
            y[i] = x[i] * 0.75f;
        }
        double se, sg, mx, a, b, c;
        double_sums(x, y, n, &se, &sg, &mx);
        anvil_float_error_sums(x, y, n, &a, &b, &c);
        CU_ASSERT(se > 0 && sg > 0 && isfinite(se) && isfinite(sg));
        CU_ASSERT_DOUBLE_EQUAL(a, se, 1e-12 * se);
        CU_ASSERT_DOUBLE_EQUAL(b, sg, 1e-12 * sg);
        CU_ASSERT_EQUAL(c, mx);
        assert_paths_agree(x, y, n);
    }
    /* Exact decodes (zero error) and all-zero blocks. */
    for (size_t i = 0; i < n; ++i) y[i] = x[i] = (float)(i % 7) - 3.0f;
    memset(x, 0, 1024 * sizeof *x);
    memset(y, 0, 1024 * sizeof *y);
    double a, b, c, se, sg, mx;
    double_sums(x, y, n, &se, &sg, &mx);
    anvil_float_error_sums(x, y, n, &a, &b, &c);
    CU_ASSERT(a == 0 && c == 0 && b == sg);
    assert_paths_agree(x, y, n);
    /* A NaN decode makes the error NaN; max_abs ignores it. */
    y[3000] = NAN;
    anvil_float_error_sums(x, y, n, &a, &b, &c);
    CU_ASSERT(isnan(a) && b == sg && c == 0);
    assert_paths_agree(x, y, n);
    free(x);
    free(y);
}

void tc_add_float_rows_tests(void) {
    CU_pSuite s = CU_add_suite("float_rows", NULL, NULL);
    CU_add_test(s, "every f16 converts like anvil_decode, any alignment", test_f16);
    CU_add_test(s, "every bf16 converts like anvil_decode, any alignment", test_bf16);
    CU_add_test(s, "the first NaN/Inf is found, the rest still converted", test_first_nonfinite);
    CU_add_test(s, "error sums: a plain double loop's to 4e-6, every path the same bits", test_error_sums);
    CU_add_test(s, "error sums: float overflow/underflow summed in double, NaN, exact", test_error_sums_extremes);
}
