/* SPDX-License-Identifier: MIT */
/*
 * A SIMD backend's weight encoders (ABI 1.1) against the reference
 * encoders (plugins/ref: the codecs' encode), byte for byte.
 *
 * Per format: >= `rows` rows (10,000 by default) cycling through every
 * input kind of tests/common/inputs.c, with row lengths from one block up
 * to 48 (32-element formats) or 12 (256-element) blocks, passed 1 to 3 rows
 * per call, from sources at any float offset into destinations at any byte
 * address. Every few rows the kind is reshaped into the cases that break
 * encoders: blocks scaled by 2^-130 (subnormal scales, reciprocals that
 * overflow), sign ties of the extreme value, values on a rounding half,
 * magnitudes near the top of the float range, runs of signed zeros,
 * magnitudes past the largest NVFP4 scale.
 * Plus: NaN/Inf refused with ANVIL_E_NONFINITE naming row and element, and
 * a row length that is not whole blocks refused.
 *
 * Encoders that take an importance matrix (ANVIL_ENCODER_WEIGHTED) are
 * checked the same way against the reference's weighted row encoders
 * (anvil_ref_encode_rows_*), over six kinds of matrix: all ones,
 * log-normal, heavy-tailed, a third zeros with whole zero groups, tiny and
 * subnormal, and a few columns so large that the searches' sums overflow.
 */
#include "simd_encoder_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/status.h"
#include "imatrix_kinds.h"
#include "inputs.h"
#include "ref/cold.h"
#include "ref/kquants.h"
#include "ref/q8_0_family.h"
#include "ref/ternary.h"
#include "anvil/formats/ptqtps.h"
#include "ptqtp_ref.h"

typedef struct enc_fmt {
    const char *name;
    uint32_t id;
    uint32_t be, bb;
    anvil_encode_fn ref;
    anvil_encode_rows_fn ref_rows; /* with an importance matrix, or NULL */
    unsigned rows_div;             /* rows / rows_div: > 1 where a block is a costly search */
} enc_fmt;

static const enc_fmt ENC_FORMATS[] = {
    { "q8_0", ANVIL_TYPE_Q8_0, 32, 34, anvil_ref_encode_q8_0, anvil_ref_encode_rows_q8_0, 1 },
    { "q8_1", ANVIL_TYPE_Q8_1, 32, 36, anvil_ref_encode_q8_1, NULL, 1 },
    { "q4_0", ANVIL_TYPE_Q4_0, 32, 18, anvil_ref_encode_q4_0, anvil_ref_encode_rows_q4_0, 1 },
    { "q4_1", ANVIL_TYPE_Q4_1, 32, 20, anvil_ref_encode_q4_1, anvil_ref_encode_rows_q4_1, 1 },
    { "q5_0", ANVIL_TYPE_Q5_0, 32, 22, anvil_ref_encode_q5_0, anvil_ref_encode_rows_q5_0, 1 },
    { "q5_1", ANVIL_TYPE_Q5_1, 32, 24, anvil_ref_encode_q5_1, anvil_ref_encode_rows_q5_1, 1 },
    { "q2_K", ANVIL_TYPE_Q2_K, 256, 84, anvil_ref_encode_q2_K, anvil_ref_encode_rows_q2_K, 1 },
    { "q3_K", ANVIL_TYPE_Q3_K, 256, 110, anvil_ref_encode_q3_K, anvil_ref_encode_rows_q3_K, 1 },
    { "q4_K", ANVIL_TYPE_Q4_K, 256, 144, anvil_ref_encode_q4_K, anvil_ref_encode_rows_q4_K, 1 },
    { "q5_K", ANVIL_TYPE_Q5_K, 256, 176, anvil_ref_encode_q5_K, anvil_ref_encode_rows_q5_K, 1 },
    { "q6_K", ANVIL_TYPE_Q6_K, 256, 210, anvil_ref_encode_q6_K, anvil_ref_encode_rows_q6_K, 1 },
    { "tq1_0", ANVIL_TYPE_TQ1_0, 256, 54, anvil_ref_encode_tq1_0, anvil_ref_encode_rows_tq1_0, 1 },
    { "tq2_0", ANVIL_TYPE_TQ2_0, 256, 66, anvil_ref_encode_tq2_0, anvil_ref_encode_rows_tq2_0, 1 },
    { "q1_0", ANVIL_TYPE_Q1_0, 128, 18, anvil_ref_encode_q1_0, anvil_ref_encode_rows_q1_0, 1 },
    { "q2_0", ANVIL_TYPE_Q2_0, 64, 18, anvil_ref_encode_q2_0, anvil_ref_encode_rows_q2_0, 1 },
    { "iq4_nl", ANVIL_TYPE_IQ4_NL, 32, 18, anvil_ref_encode_iq4_nl, anvil_ref_encode_rows_iq4_nl, 1 },
    { "iq4_xs", ANVIL_TYPE_IQ4_XS, 256, 136, anvil_ref_encode_iq4_xs, anvil_ref_encode_rows_iq4_xs, 1 },
    { "mxfp4", ANVIL_TYPE_MXFP4, 32, 17, anvil_ref_encode_mxfp4, NULL, 1 },
    { "nvfp4", ANVIL_TYPE_NVFP4, 64, 36, anvil_ref_encode_nvfp4, NULL, 1 },
    /* the codec-ptqtp fits (ptqtp_ref.h): 1/8 of the rows, still >= 1,000 by default */
    { "ptqtp2s", ANVIL_TYPE_PTQTP2S, 256, 110, anvil_ptqtps_encode2, NULL, 8 },
    { "ptqtp3s", ANVIL_TYPE_PTQTP3S, 256, 162, anvil_ptqtps_encode3, NULL, 8 },
};
#define N_ENC (sizeof ENC_FORMATS / sizeof ENC_FORMATS[0])
#define MAX_ENC_ELEMS (12 * 256) /* >= 48 * 32 */
#define MAX_CALL_ROWS 3

static const anvil_backend *const *g_enc_backend;
static const char *g_enc_variant = "";
static const char *g_enc_required = "";
static size_t g_enc_rows = 10000;

void sb_encoder_setup(const anvil_backend *const *backend, const char *variant, const char *required, size_t rows) {
    g_enc_backend = backend;
    g_enc_variant = variant;
    g_enc_required = required;
    g_enc_rows = rows;
}

static const anvil_weight_encoder *encoder_for(uint32_t type) {
    const anvil_backend *b = *g_enc_backend;
    for (size_t i = 0; b != NULL && i < b->n_encoders; ++i) {
        if (b->encoders[i]->type_id == type) return b->encoders[i];
    }
    return NULL;
}

/* The encoder for f, or NULL (reported; a failure when f is required). */
static const anvil_weight_encoder *need_encoder(const enc_fmt *f) {
    const anvil_weight_encoder *e = encoder_for(f->id);
    if (e != NULL) return e;
    char want[64], list[256];
    snprintf(want, sizeof want, " %s ", f->name);
    snprintf(list, sizeof list, " %s ", g_enc_required);
    if (g_enc_required[0] == '\0' || strstr(list, want) != NULL) {
        fprintf(stderr, "\nno encoder for %s, which the backend must have\n", f->name);
        CU_FAIL("required encoder missing");
    } else {
        printf("\n    %-7s no encoder here: the next backend's (or the codec's) runs", f->name);
    }
    return NULL;
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* One row of n values: an input kind, sometimes reshaped (see the top). */
static void make_row(float *x, size_t n, uint64_t row, uint32_t salt) {
    test_input_fill(x, n, (test_input_kind)(row % INPUT_KIND_COUNT), 0xE4C0u + salt, row);
    switch (row % 29) {
    case 3: /* subnormal blocks: 1/d overflows */
        for (size_t j = 0; j < n; ++j) x[j] *= 0x1p-130f;
        break;
    case 5: /* the extreme value present with both signs */
        for (size_t j = 0; j + 1 < n; j += 3) x[j] = -x[j + 1];
        break;
    case 7: /* values on, just below and just above a half, at scale 1 and 8 */
        for (size_t j = 0; j < n; ++j) {
            const float h = (float)(j % 15) + 0.5f;
            const int v = (int)(j / 15 + row) % 3;
            const float y = v == 0 ? h : (v == 1 ? nextafterf(h, 0.0f) : nextafterf(h, 100.0f));
            x[j] = (j / 7) % 2 ? -y : y;
        }
        for (size_t j = 0; j < n; j += 16) x[j] = (row & 1) ? -127.0f : 15.5f;
        break;
    case 11: /* near the top of the range: sums of squares overflow */
        for (size_t j = 0; j < n; ++j) x[j] *= 1e34f;
        break;
    case 13: /* signed zeros among values */
        for (size_t j = 0; j < n; ++j) {
            if ((j * 7 + row) % 5 < 3) x[j] = ((j + row) & 1) ? -0.0f : 0.0f;
        }
        break;
    case 17: /* whole groups of zeros next to large groups */
        for (size_t j = 0; j < n; ++j) {
            if ((j / 16) % 3 == 1) x[j] = 0.0f;
            else if ((j / 16) % 3 == 2) x[j] *= 1000.0f;
        }
        break;
    case 19: /* powers of two and near powers of two (MXFP4's exponent) */
        for (size_t j = 0; j < n; ++j) {
            const float p = ldexpf(1.0f, (int)((j + row) % 40) - 20);
            x[j] = (j % 3 == 0) ? p : (j % 3 == 1 ? nextafterf(p, 0.0f) : -nextafterf(p, 1e30f));
        }
        break;
    case 23: /* 2^30..2^37: NVFP4's scale saturates and the distances to its
                codes round to equal steps (a first minimum past a tie) */
        for (size_t j = 0; j < n; ++j) {
            const float m = ldexpf(1.0f + (float)((j + row) % 13) / 13.0f, 30 + (int)((j * 5 + row) % 8));
            x[j] = (j + row) % 3 == 0 ? -m : m;
        }
        break;
    default: break;
    }
}

/* The weighted path against the reference's weighted row encoder. */
static void check_weighted(const enc_fmt *f, const anvil_weight_encoder *e) {
    if (!(e->flags & ANVIL_ENCODER_WEIGHTED)) return;
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->ref_rows);
    const size_t max_nb = MAX_ENC_ELEMS / f->be < 48 ? MAX_ENC_ELEMS / f->be : 48;
    float *src = malloc(MAX_CALL_ROWS * MAX_ENC_ELEMS * sizeof(float));
    float *imx = malloc(MAX_ENC_ELEMS * sizeof(float));
    uint8_t *want = malloc(MAX_CALL_ROWS * MAX_ENC_ELEMS / 32 * 36 + 64);
    uint8_t *got = malloc(MAX_CALL_ROWS * MAX_ENC_ELEMS / 32 * 36 + 64);
    CU_ASSERT_FATAL(src && imx && want && got);
    uint64_t rng = 0x1A7A1Cu + f->id;
    size_t rows = 0, bad_rows = 0, per_kind_bad[TEST_IMX_KIND_COUNT] = { 0 };
    uint64_t row_id = 0;
    for (size_t call = 0; rows < g_enc_rows; ++call) {
        const size_t nb = 1 + rng_next(&rng) % max_nb;
        const size_t n = nb * f->be, rb = nb * f->bb;
        const size_t nrows = 1 + rng_next(&rng) % MAX_CALL_ROWS;
        const test_imatrix_kind kind = (test_imatrix_kind)(call % TEST_IMX_KIND_COUNT);
        test_imatrix_fill(imx, n, kind, call * 31 + f->id);
        for (size_t r = 0; r < nrows; ++r) make_row(src + r * n, n, row_id + r, f->id + 1000u);
        char msg[512];
        CU_ASSERT_EQUAL_FATAL(f->ref_rows(src, want, nrows, n, imx, msg, sizeof msg), ANVIL_OK);
        CU_ASSERT_EQUAL(e->encode_rows(src, got, nrows, n, imx, msg, sizeof msg), ANVIL_OK);
        for (size_t r = 0; r < nrows; ++r) {
            if (memcmp(want + r * rb, got + r * rb, rb) != 0) {
                per_kind_bad[kind]++;
                if (bad_rows++ < 3) {
                    size_t b = 0;
                    while (memcmp(want + r * rb + b * f->bb, got + r * rb + b * f->bb, f->bb) == 0) ++b;
                    fprintf(stderr, "\n%s %s weighted (%s): row %llu (kind %s, shape %llu, n=%zu): block %zu differs",
                            f->name, e->variant, test_imatrix_kind_name(kind), (unsigned long long)(row_id + r),
                            test_input_kind_name((test_input_kind)((row_id + r) % INPUT_KIND_COUNT)),
                            (unsigned long long)((row_id + r) % 29), n, b);
                }
            }
        }
        rows += nrows;
        row_id += nrows;
    }
    printf("\n    %-7s %-10s weighted: %zu rows, %zu byte mismatches", f->name, e->variant, rows, bad_rows);
    for (int k = 0; k < TEST_IMX_KIND_COUNT; ++k) {
        if (per_kind_bad[k]) printf(" (%s: %zu)", test_imatrix_kind_name((test_imatrix_kind)k), per_kind_bad[k]);
    }
    CU_ASSERT_EQUAL(bad_rows, 0);
    /* a non-finite weight is refused, naming its column (negative ones are
     * ggml's to take as given) */
    imx[3] = INFINITY;
    char msg[512] = "";
    CU_ASSERT_EQUAL(e->encode_rows(src, got, 1, f->be, imx, msg, sizeof msg), ANVIL_E_INVALID_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "column 3"));
    free(src);
    free(imx);
    free(want);
    free(got);
}

static void check_encoder(const enc_fmt *f) {
    const anvil_weight_encoder *e = need_encoder(f);
    if (e == NULL) return;
    CU_ASSERT_STRING_EQUAL(e->variant, g_enc_variant);
    check_weighted(f, e);
    const size_t max_nb = MAX_ENC_ELEMS / f->be < 48 ? MAX_ENC_ELEMS / f->be : 48;
    float *src_buf = malloc((MAX_CALL_ROWS * MAX_ENC_ELEMS + 16) * sizeof(float));
    uint8_t *want = aligned_alloc(64, MAX_CALL_ROWS * MAX_ENC_ELEMS / 32 * 36 + 64);
    uint8_t *got_buf = malloc(MAX_CALL_ROWS * MAX_ENC_ELEMS / 32 * 36 + 128);
    CU_ASSERT_FATAL(src_buf && want && got_buf);
    uint64_t rng = 0x5EED00u + f->id;
    size_t rows = 0, bad_rows = 0, calls = 0;
    uint64_t row_id = 0;
    const size_t want_rows = (g_enc_rows + f->rows_div - 1) / f->rows_div;
    while (rows < want_rows) {
        const size_t nb = 1 + rng_next(&rng) % max_nb;
        const size_t n = nb * f->be, rb = nb * f->bb;
        const size_t nrows = 1 + rng_next(&rng) % MAX_CALL_ROWS;
        float *src = src_buf + rng_next(&rng) % 16;   /* any float offset */
        uint8_t *got = got_buf + rng_next(&rng) % 64; /* any byte address */
        char msg[512];
        for (size_t r = 0; r < nrows; ++r) {
            make_row(src + r * n, n, row_id + r, f->id);
            CU_ASSERT_EQUAL_FATAL(f->ref(src + r * n, want + r * rb, n, msg, sizeof msg), ANVIL_OK);
        }
        memset(got, 0xCD, nrows * rb + 1);
        const int rc = e->encode_rows(src, got, nrows, n, NULL, msg, sizeof msg);
        CU_ASSERT_EQUAL(rc, ANVIL_OK);
        CU_ASSERT_EQUAL(got[nrows * rb], 0xCD); /* nothing written past the rows */
        for (size_t r = 0; r < nrows; ++r) {
            if (memcmp(want + r * rb, got + r * rb, rb) != 0) {
                if (bad_rows++ < 3) {
                    size_t b = 0;
                    while (memcmp(want + r * rb + b * f->bb, got + r * rb + b * f->bb, f->bb) == 0) ++b;
                    fprintf(stderr,
                            "\n%s %s: row %llu (kind %s, shape %llu, n=%zu): block %zu differs from the "
                            "reference",
                            f->name, e->variant, (unsigned long long)(row_id + r),
                            test_input_kind_name((test_input_kind)((row_id + r) % INPUT_KIND_COUNT)),
                            (unsigned long long)((row_id + r) % 29), n, b);
                }
            }
        }
        rows += nrows;
        row_id += nrows;
        calls++;
    }
    printf("\n    %-7s %-10s %zu rows in %zu calls, %zu byte mismatches", f->name, e->variant, rows, calls, bad_rows);
    CU_ASSERT_EQUAL(bad_rows, 0);

    /* NaN and Inf: refused, naming row and element */
    const size_t n = 2 * f->be;
    for (int k = 0; k < 3; ++k) {
        for (size_t r = 0; r < 3; ++r) make_row(src_buf + r * n, n, r, f->id);
        const size_t bad_row = (size_t)k, bad_el = (size_t)(k * 37 + 5) % n;
        src_buf[bad_row * n + bad_el] = k == 0 ? NAN : (k == 1 ? INFINITY : -INFINITY);
        char msg[512] = "";
        CU_ASSERT_EQUAL(e->encode_rows(src_buf, got_buf, 3, n, NULL, msg, sizeof msg), ANVIL_E_NONFINITE);
        char row_txt[48], el_txt[48];
        snprintf(row_txt, sizeof row_txt, "row %zu element %zu", bad_row, bad_el);
        snprintf(el_txt, sizeof el_txt, "is %s", k == 0 ? "NaN" : (k == 1 ? "+Inf" : "-Inf"));
        if (strstr(msg, row_txt) == NULL || strstr(msg, el_txt) == NULL) {
            fprintf(stderr, "\n%s: message '%s' lacks '%s' / '%s'\n", f->name, msg, row_txt, el_txt);
            CU_FAIL("non-finite message");
        }
    }
    char msg[512] = "";
    CU_ASSERT_EQUAL(e->encode_rows(src_buf, got_buf, 1, f->be + 1, NULL, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
    free(src_buf);
    free(want);
    free(got_buf);
}

static void test_encoders(void) {
    for (size_t i = 0; i < N_ENC; ++i) check_encoder(&ENC_FORMATS[i]);
}

void sb_add_encoder_tests(CU_pSuite s) { CU_add_test(s, "weight encoders == reference bytes", test_encoders); }
