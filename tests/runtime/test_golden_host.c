/* SPDX-License-Identifier: MIT */
/*
 * Every golden fixture (ggml's own outputs, committed under tests/golden/)
 * checked through the host API and the real plugins, as a user would call
 * them: encode byte for byte, decode bit for bit, the activation quantizer
 * byte for byte, and matmul within 1e-5 relative of ggml's vec_dot.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "golden.h"
#include "test_env.h"

static anvil_ctx *ctx;
static size_t files_checked;

static int first_byte_diff(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; ++i) {
        if (x[i] != y[i]) return (int)i;
    }
    return -1;
}

static void check_file(const char *path) {
    golden_file g;
    CU_ASSERT_EQUAL_FATAL(golden_load(path, &g), 0);
    const golden_header *h = &g.h;
    anvil_error err;
    const anvil_codec *c = anvil_ctx_codec(ctx, h->type_id);
    if (c == NULL) {
        fprintf(stderr, "\n%s: codec for %s not loaded\n", path, h->type_name);
        CU_FAIL("golden type has no loaded codec");
        golden_free(&g);
        return;
    }
    CU_ASSERT_STRING_EQUAL(c->name, h->type_name);
    unsigned char *enc = malloc(h->row_bytes + 64);
    float *dec = malloc(h->row_len * sizeof *dec);
    size_t enc_bad = 0, dec_bad = 0, dot_bad = 0, encoded = 0, dots = 0;
    double worst = 0;

    /* The activation quantizer (backend or codec) must reproduce ggml's bytes. */
    if (h->act_row_bytes > 0 && anvil_ctx_codec(ctx, h->act_type) != NULL &&
        anvil_ctx_codec(ctx, h->act_type)->encode != NULL) {
        unsigned char *aq = malloc(h->act_row_bytes);
        CU_ASSERT_EQUAL(anvil_encode(ctx, h->act_type, g.act, h->row_len, aq, h->act_row_bytes, &err), ANVIL_OK);
        int d = first_byte_diff(aq, g.act_q, h->act_row_bytes);
        if (d >= 0) fprintf(stderr, "\n%s: activation bytes differ at %d\n", h->type_name, d);
        CU_ASSERT_EQUAL(d, -1);
        free(aq);
    }

    for (size_t i = 0; i < h->n_rows; ++i) {
        golden_record r;
        golden_record_at(&g, i, &r);
        if (r.flags & GOLDEN_REC_ENCODED) {
            encoded++;
            int rc = anvil_encode(ctx, h->type_id, r.in, h->row_len, enc, h->row_bytes, &err);
            if (rc != ANVIL_OK || first_byte_diff(enc, r.enc, h->row_bytes) >= 0) {
                if (enc_bad++ == 0) {
                    fprintf(stderr, "\n%s row %zu (%u): encode %s\n", h->type_name, i, r.kind,
                            rc ? err.message : "bytes differ");
                }
            }
        }
        CU_ASSERT_EQUAL(anvil_decode(ctx, h->type_id, r.enc, h->row_bytes, dec, h->row_len, &err), ANVIL_OK);
        if (memcmp(dec, r.dec, h->row_len * sizeof *dec) != 0) {
            if (dec_bad++ == 0) fprintf(stderr, "\n%s row %zu: decode bits differ\n", h->type_name, i);
        }
        if (!isnan(r.dot) && !(c->flags & ANVIL_CODEC_ACTIVATION)) {
            float y = NAN;
            CU_ASSERT_EQUAL(anvil_matmul(ctx, h->type_id, r.enc, 1, h->row_len, g.act, 1, &y, &err), ANVIL_OK);
            double mag = 0;
            for (size_t j = 0; j < h->row_len; ++j) mag += fabs((double)r.dec[j] * g.act[j]);
            /* 1e-5 relative; where the sum cancels, relative to the size of
             * its terms (accumulation order differs between kernels). */
            const double diff = fabs((double)y - r.dot);
            const double scale = fmax(fmax(fabs((double)y), fabs((double)r.dot)), 0.1 * mag);
            const double tol = mag > 0 ? 1e-5 * scale : 1e-9;
            dots++;
            if (mag > 0 && diff / scale > worst) worst = diff / scale;
            if (!(diff <= tol) && dot_bad++ == 0) {
                fprintf(stderr, "\n%s row %zu: dot %.9g vs ggml %.9g\n", h->type_name, i, y, r.dot);
            }
        }
    }
    printf("\n  %-8s %3u rows x %4u: %zu encoded (%zu bad), decode bad %zu, %zu dots (%zu bad, worst rel %.2g)",
           h->type_name, h->n_rows, h->row_len, encoded, enc_bad, dec_bad, dots, dot_bad, worst);
    CU_ASSERT_EQUAL(enc_bad, 0);
    CU_ASSERT_EQUAL(dec_bad, 0);
    CU_ASSERT_EQUAL(dot_bad, 0);
    files_checked++;
    free(enc);
    free(dec);
    golden_free(&g);
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_all_goldens(void) {
    DIR *d = opendir(test_source_path("golden"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    for (size_t i = 0; i < n; ++i) {
        char rel[512];
        snprintf(rel, sizeof rel, "golden/%s", names[i]);
        check_file(test_source_path(rel));
        free(names[i]);
    }
    printf("\n");
    CU_ASSERT_TRUE(files_checked > 0);
}

static void test_encode_refusals(void) {
    anvil_error err;
    float x[64];
    for (int i = 0; i < 64; ++i) x[i] = (float)i;
    unsigned char buf[1024];
    x[37] = NAN;
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_Q8_0, x, 64, buf, sizeof buf, &err), ANVIL_E_NONFINITE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "37"));
    x[37] = 1.0f;
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_Q8_0, x, 40, buf, sizeof buf, &err), ANVIL_E_BLOCK_MISMATCH);
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_Q8_0, x, 64, buf, 10, &err), ANVIL_E_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(anvil_encode(ctx, 4, x, 64, buf, sizeof buf, &err), ANVIL_E_UNKNOWN_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "removed"));
    CU_ASSERT_EQUAL(anvil_encode(ctx, 1999, x, 64, buf, sizeof buf, &err), ANVIL_E_UNKNOWN_TYPE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "plugin is missing"));
    /* the host's own float types */
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_F16, x, 64, buf, sizeof buf, &err), ANVIL_OK);
    float back[64];
    CU_ASSERT_EQUAL(anvil_decode(ctx, ANVIL_TYPE_F16, buf, 128, back, 64, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(back[63], 63.0f);
    CU_ASSERT_EQUAL(anvil_encode(ctx, ANVIL_TYPE_BF16, x, 64, buf, sizeof buf, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_decode(ctx, ANVIL_TYPE_BF16, buf, 128, back, 64, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(back[5], 5.0f);
}

/* IQ2_XXS IQ2_XS IQ1_S encode only with an importance matrix (ggml's and
 * llama.cpp's rule): plain anvil_encode and anvil_encode_rows without one
 * name the missing matrix (not "no encoder"); with one they encode. */
static void test_encode_needs_imatrix(void) {
    static const uint32_t types[] = { ANVIL_TYPE_IQ2_XXS, ANVIL_TYPE_IQ2_XS, ANVIL_TYPE_IQ1_S };
    static float x[2 * 256], w[256];
    static unsigned char buf[2 * 256];
    for (int i = 0; i < 2 * 256; ++i) x[i] = sinf((float)i * 0.37f);
    for (int i = 0; i < 256; ++i) w[i] = 1.0f + (float)(i % 7);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; ++k) {
        anvil_error err;
        CU_ASSERT_EQUAL(anvil_encode(ctx, types[k], x, 512, buf, sizeof buf, &err), ANVIL_E_NEEDS_IMATRIX);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "missing importance matrix"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "--imatrix"));
        CU_ASSERT_EQUAL(anvil_encode_rows(ctx, types[k], x, 2, 256, NULL, buf, sizeof buf, &err),
                        ANVIL_E_NEEDS_IMATRIX);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "missing importance matrix"));
        CU_ASSERT_EQUAL(anvil_encode_rows(ctx, types[k], x, 2, 256, w, buf, sizeof buf, &err), ANVIL_OK);
        /* The block-count check still comes first. */
        CU_ASSERT_EQUAL(anvil_encode(ctx, types[k], x, 100, buf, sizeof buf, &err), ANVIL_E_BLOCK_MISMATCH);
    }
}

static void test_matmul_shapes(void) {
    /* m > 1 and several rows: each output equals the single-row result. */
    enum { K = 256, R = 5, M = 3 };
    float w[R * K], x[M * K], y[M * R], y1;
    unsigned char blocks[R * (K / 32) * 34];
    for (int i = 0; i < R * K; ++i) w[i] = sinf((float)i * 0.013f) * 2.0f;
    for (int i = 0; i < M * K; ++i) x[i] = cosf((float)i * 0.029f);
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, ANVIL_TYPE_Q8_0, w, R * K, blocks, sizeof blocks, &err), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, ANVIL_TYPE_Q8_0, blocks, R, K, x, M, y, &err), ANVIL_OK);
    for (int i = 0; i < M; ++i) {
        for (int r = 0; r < R; ++r) {
            CU_ASSERT_EQUAL(
                anvil_matmul(ctx, ANVIL_TYPE_Q8_0, blocks + r * (K / 32) * 34, 1, K, x + i * K, 1, &y1, &err),
                ANVIL_OK);
            CU_ASSERT_EQUAL(y[i * R + r], y1);
        }
    }
    CU_ASSERT_EQUAL(anvil_matmul(ctx, ANVIL_TYPE_Q8_0, blocks, R, 100, x, 1, y, &err), ANVIL_E_BLOCK_MISMATCH);
}

static int setup(void) {
    anvil_error err;
    if (anvil_ctx_open(&ctx, test_config_path(), &err) != ANVIL_OK) {
        fprintf(stderr, "cannot open %s: %s\n", test_config_path(), err.message);
        return 1;
    }
    return 0;
}

static int teardown(void) {
    anvil_ctx_close(ctx);
    return 0;
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("golden through the host", setup, teardown);
    CU_add_test(s, "every golden fixture", test_all_goldens);
    CU_add_test(s, "encode refusals", test_encode_refusals);
    CU_add_test(s, "no importance matrix: ANVIL_E_NEEDS_IMATRIX", test_encode_needs_imatrix);
    CU_add_test(s, "matmul shapes", test_matmul_shapes);
    return test_run_cunit();
}
