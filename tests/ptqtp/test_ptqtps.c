/* SPDX-License-Identifier: MIT */
/*
 * test_ptqtps: the PTQTP-S formats ptqtp2s / ptqtp3s (anvil/formats/ptqtps.h,
 * plugins/codec-ptqtp/ptqtps.c).
 *
 *   format    the codec's decoder equals one written here from the header's
 *             text (digits by carries, v = sum 3^(K-1-k) t_k, m from the
 *             table d's sign bit names, y = (float)(m v) * |d|),
 *   golden    encode/decode/dot against tests/golden/ptqtp{2,3}s.bin (one
 *             row per input kind), bit for bit
 *   dots      the reference dot is the exact integer the header defines:
 *             equal to a double multiply-and-add of the decoded values when
 *             every float step is exact; anvil_matmul (the scalar backend's
 *             kernel) equals the reference dot bit for bit
 *   fit       exact levels come back exactly; the fit's error is the decoded
 *             error; SNR: ptqtp2s above q3_K on Gaussian rows and above
 *             ptqtp2 on llm-like rows; refusals; extremes stay finite
 *   threads   `anvil transcode --ptqtp 2s` writes the same bytes for 1 and
 *             3 threads
 *
 *   test_ptqtps --write-golden   rewrites tests/golden/ptqtp{2,3}s.bin
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/formats/ptqtps.h"
#include "anvil/gguf.h"
#include "anvil/numeric.h"
#include "golden.h"
#include "inputs.h"
#include "ptqtp_ref.h"
#include "ptqtp_test.h"
#include "ref/q8_k.h"
#include "test_env.h"

#define N 256
#define GOLDEN_ROW 256
#define MAXB 162
#define Q8K 292

typedef ptqtp_fmt kfmt;

static const kfmt FMT[2] = {
    { "ptqtp2s", ANVIL_TYPE_PTQTP2S, 2, anvil_ptqtps_encode2, anvil_ptqtps_decode2, anvil_ptqtps_vec_dot2_q8_K },
    { "ptqtp3s", ANVIL_TYPE_PTQTP3S, 3, anvil_ptqtps_encode3, anvil_ptqtps_decode3, anvil_ptqtps_vec_dot3_q8_K },
};

static size_t block_bytes(const kfmt *f) { return ANVIL_PTQTPS_BLOCK_BYTES(f->k); }

/* ---- the format, from the header's text ------------------------------------ */

static void spec_decode(const uint8_t *blk, unsigned k, float *y) {
    static const int mults[2][4] = { { 10, 12, 14, 16 }, { 1, 3, 7, 16 } };
    anvil_half h;
    memcpy(&h, blk + ANVIL_PTQTPS_D_OFFSET(k), 2);
    const float d = fabsf(anvil_fp16_to_fp32(h)); /* NaN stays NaN */
    const int wide = h >> 15;
    for (unsigned i = 0; i < N; ++i) {
        int v = 0;
        for (unsigned p = 0; p < k; ++p) v = 3 * v + ptqtp_spec_trit(blk + p * ANVIL_PTQTP_PLANE_BYTES, i);
        const unsigned j = i / 16, c = blk[ANVIL_PTQTPS_SC_OFFSET(k) + j / 4];
        const int m = mults[wide][(c >> (2 * (j % 4))) & 3u];
        y[i] = (float)(m * v) * d;
    }
}

static void random_block(const kfmt *f, test_rng *r, int sane, uint8_t *blk) {
    for (size_t i = 0; i < block_bytes(f); ++i) blk[i] = (uint8_t)test_rng_u64(r);
    if (sane) { /* a normal binary16 scale, either sign */
        const uint64_t u = test_rng_u64(r);
        const uint16_t h = (uint16_t)((u & 0x8000u) | ((3 + (u >> 20) % 16) << 10) | ((u >> 32) & 0x3ffu));
        memcpy(blk + ANVIL_PTQTPS_D_OFFSET(f->k), &h, 2);
    }
}

static void check_decode_spec(const kfmt *f) {
    ptqtp_check_decode_spec(f, 3000 + f->k, block_bytes(f), random_block, spec_decode);
}

static void test_decode_spec2(void) { check_decode_spec(&FMT[0]); }
static void test_decode_spec3(void) { check_decode_spec(&FMT[1]); }

/* ---- dots -------------------------------------------------------------------- */

/* Exact pass: d = +-1 or +-2 and activation scale 1, so the integer sum
 * and every float step are exact and the dot equals the double dot of the
 * decoded values; otherwise within 1e-5 of the terms' magnitude. */
static void check_dots(const kfmt *f) {
    enum { MAX_NB = 8 };
    test_rng r;
    test_rng_seed(&r, 4000 + f->k);
    uint8_t w[MAX_NB * MAXB], a[MAX_NB * Q8K];
    float wd[MAX_NB * N], ad[MAX_NB * N];
    size_t exact_bad = 0, bound_bad = 0;
    for (int rep = 0; rep < 2000; ++rep) {
        const int exact = rep % 2 == 0;
        const size_t nb = 1 + test_rng_u64(&r) % MAX_NB, n = nb * N;
        for (size_t b = 0; b < nb; ++b) {
            uint8_t *blk = w + b * block_bytes(f);
            random_block(f, &r, 1, blk);
            if (exact) {
                const uint16_t h = (uint16_t)((test_rng_u64(&r) & 1 ? 0x3C00 : 0x4000) | (test_rng_u64(&r) & 0x8000));
                memcpy(blk + ANVIL_PTQTPS_D_OFFSET(f->k), &h, 2);
                ptqtp_make_act(&r, 1.0f, 127, a + b * Q8K);
            } else {
                ptqtp_make_act(&r, (float)(1.0 + (double)(test_rng_u64(&r) % 1000) / 100.0) * 1e-3f, 127,
                               a + b * Q8K);
            }
        }
        f->decode(w, wd, n);
        anvil_ref_decode_q8_K(a, ad, n);
        double ref = 0, mag = 0;
        for (size_t i = 0; i < n; ++i) {
            ref += (double)wd[i] * ad[i];
            mag += fabs((double)wd[i] * ad[i]);
        }
        float s = NAN;
        f->dot(n, &s, w, a);
        if (exact && (double)s != ref && exact_bad++ == 0)
            fprintf(stderr, "\n%s exact: %.9g vs %.9g\n", f->name, (double)s, ref);
        if (!(fabs((double)s - ref) <= 1e-5 * mag) && bound_bad++ == 0) {
            fprintf(stderr, "\n%s: %.9g vs %.9g (terms %.6g)\n", f->name, (double)s, ref, mag);
        }
    }
    printf("\n    %s: 2000 rows, %zu exact-pass mismatches, %zu outside 1e-5", f->name, exact_bad, bound_bad);
    CU_ASSERT_EQUAL(exact_bad, 0);
    CU_ASSERT_EQUAL(bound_bad, 0);
}

static void test_dots2(void) { check_dots(&FMT[0]); }
static void test_dots3(void) { check_dots(&FMT[1]); }

/* ---- golden -------------------------------------------------------------------- */

static void golden_act(float *act, uint8_t *act_q) { ptqtp_golden_act(9292, act, act_q, GOLDEN_ROW); }

static void golden_path(const kfmt *f, char *rel, size_t size) { snprintf(rel, size, "golden/%s.bin", f->name); }

static int write_golden(const kfmt *f) {
    golden_header h;
    memset(&h, 0, sizeof h);
    h.type_id = f->id;
    h.act_type = ANVIL_TYPE_Q8_K;
    h.row_len = GOLDEN_ROW;
    h.n_rows = INPUT_KIND_COUNT;
    h.row_bytes = (uint32_t)(GOLDEN_ROW / N * block_bytes(f));
    h.act_row_bytes = GOLDEN_ROW / N * Q8K;
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);
    float act[GOLDEN_ROW], x[GOLDEN_ROW], y[GOLDEN_ROW];
    uint8_t act_q[GOLDEN_ROW / N * Q8K], enc[GOLDEN_ROW / N * MAXB];
    golden_act(act, act_q);
    char rel[64];
    golden_path(f, rel, sizeof rel);
    FILE *fp = golden_write_begin(test_source_path(rel), &h, act, act_q);
    if (fp == NULL) return -1;
    int rc = 0;
    for (uint32_t i = 0; i < h.n_rows && rc == 0; ++i) {
        test_input_fill(x, GOLDEN_ROW, (test_input_kind)i, 8181, 0);
        char msg[256];
        if (f->encode(x, enc, GOLDEN_ROW, msg, sizeof msg) != ANVIL_OK) rc = -1;
        f->decode(enc, y, GOLDEN_ROW);
        float dot = NAN;
        f->dot(GOLDEN_ROW, &dot, enc, act_q);
        if (rc == 0) rc = golden_write_record(fp, &h, i, GOLDEN_REC_ENCODED, x, enc, y, dot);
    }
    if (golden_write_end(fp) != 0) rc = -1;
    printf("%s: wrote %s (%u rows)\n", f->name, test_source_path(rel), h.n_rows);
    return rc;
}

static void check_golden(const kfmt *f) {
    char rel[64];
    golden_path(f, rel, sizeof rel);
    golden_file g;
    CU_ASSERT_FATAL(golden_load(test_source_path(rel), &g) == 0);
    CU_ASSERT_EQUAL(g.h.type_id, f->id);
    CU_ASSERT_STRING_EQUAL(g.h.type_name, f->name);
    CU_ASSERT_FATAL(g.h.row_len == GOLDEN_ROW && g.h.row_bytes == block_bytes(f));
    CU_ASSERT_EQUAL(g.h.n_rows, INPUT_KIND_COUNT);
    float act[GOLDEN_ROW], x[GOLDEN_ROW], y[GOLDEN_ROW];
    uint8_t act_q[GOLDEN_ROW / N * Q8K], enc[MAXB];
    golden_act(act, act_q);
    CU_ASSERT(memcmp(act_q, g.act_q, sizeof act_q) == 0);
    size_t in_bad = 0, enc_bad = 0, dec_bad = 0, dot_bad = 0;
    for (uint32_t i = 0; i < g.h.n_rows; ++i) {
        golden_record r;
        golden_record_at(&g, i, &r);
        test_input_fill(x, GOLDEN_ROW, (test_input_kind)i, 8181, 0);
        if (memcmp(x, r.in, sizeof x) != 0) in_bad++; /* the inputs are still what was pinned */
        char msg[256];
        CU_ASSERT_EQUAL(f->encode(r.in, enc, GOLDEN_ROW, msg, sizeof msg), ANVIL_OK);
        if (memcmp(enc, r.enc, g.h.row_bytes) != 0) {
            enc_bad++;
            fprintf(stderr, "\n%s golden record %u (%s): encode differs", f->name, i,
                    test_input_kind_name((test_input_kind)i));
        }
        f->decode(r.enc, y, GOLDEN_ROW);
        if (memcmp(y, r.dec, sizeof y) != 0) dec_bad++;
        float s = NAN;
        f->dot(GOLDEN_ROW, &s, r.enc, g.act_q);
        if (!ptqtp_same_bits(s, r.dot)) dot_bad++;
    }
    printf("\n    %s: %u golden rows: %zu input, %zu encode, %zu decode, %zu dot mismatches", f->name, g.h.n_rows,
           in_bad, enc_bad, dec_bad, dot_bad);
    CU_ASSERT_EQUAL(in_bad, 0);
    CU_ASSERT_EQUAL(enc_bad, 0);
    CU_ASSERT_EQUAL(dec_bad, 0);
    CU_ASSERT_EQUAL(dot_bad, 0);
    golden_free(&g);
}

static void test_golden2(void) { check_golden(&FMT[0]); }
static void test_golden3(void) { check_golden(&FMT[1]); }

/* ---- the fit ----------------------------------------------------------------- */

/* Blocks whose weights are exactly m v d come back exactly, with the fit's
 * error 0; on random rows the fit's reported error is the weighted error
 * of the decoded block and never above that of all zeros. */
static void check_fit(const kfmt *f) {
    test_rng r;
    test_rng_seed(&r, 5000 + f->k);
    const int lim = f->k == 2 ? 4 : 13;
    size_t exact_bad = 0;
    for (int rep = 0; rep < 200; ++rep) {
        float x[N], y[N];
        const float d = (float)(1 + rep % 5) * 0.0078125f;
        for (unsigned i = 0; i < N; ++i) {
            const int v = (int)(test_rng_u64(&r) % (unsigned)(2 * lim + 1)) - lim;
            x[i] = (float)(16 * v) * d; /* every sub-block uses the full multiplier */
        }
        for (unsigned j = 0; j < ANVIL_PTQTPS_NSUB; ++j) x[16 * j] = (float)(16 * lim) * d; /* step 16 d everywhere */
        uint8_t blk[MAXB];
        int8_t v[N];
        uint8_t code[ANVIL_PTQTPS_NSUB];
        anvil_half h;
        const double err = anvil_ptqtps_fit(x, f->k, v, code, &h, blk);
        f->decode(blk, y, N);
        if (err != 0.0 || memcmp(x, y, sizeof x) != 0) exact_bad++;
    }
    CU_ASSERT_EQUAL(exact_bad, 0);
}

static void test_fit2(void) { check_fit(&FMT[0]); }
static void test_fit3(void) { check_fit(&FMT[1]); }

static double snr_db(const float *x, const float *y, size_t n) {
    double s = 0, e = 0;
    for (size_t i = 0; i < n; ++i) {
        s += (double)x[i] * x[i];
        e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    }
    return 10.0 * log10(s / e);
}

/* SNR of `type` on n values through the host's encoder and decoder. */
static double host_snr(anvil_ctx *ctx, uint32_t type, const float *x, size_t n, size_t block_bytes_) {
    anvil_error err;
    const size_t bytes = n / N * block_bytes_;
    uint8_t *enc = malloc(bytes);
    float *y = malloc(n * sizeof *y);
    double snr = -1.0;
    if (enc != NULL && y != NULL && anvil_encode(ctx, type, x, n, enc, bytes, &err) == ANVIL_OK &&
        anvil_decode(ctx, type, enc, bytes, y, n, &err) == ANVIL_OK) {
        snr = snr_db(x, y, n);
    }
    free(enc);
    free(y);
    return snr;
}

/* The quality claim at q3_K's size, on fixed synthetic tensors (the trained
 * model's KL table is scripts/bench-ptqtp.sh's): on Gaussian rows ptqtp2s
 * (3.4375 bpw) is above q3_K (3.4375 bpw); on llm-like rows (heavy tails)
 * it is above ptqtp2, the format it replaces. */
static void test_quality(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    enum { ROWS = 64, ROW = 1024 };
    static float x[ROWS * ROW];
    for (unsigned r = 0; r < ROWS; ++r) test_input_fill(x + r * ROW, ROW, INPUT_NORMAL, 77, r);
    const double s2 = host_snr(ctx, ANVIL_TYPE_PTQTP2S, x, ROWS * ROW, 110);
    const double q3 = host_snr(ctx, ANVIL_TYPE_Q3_K, x, ROWS * ROW, 110);
    for (unsigned r = 0; r < ROWS; ++r) test_input_fill(x + r * ROW, ROW, INPUT_LLM_LIKE, 78, r);
    const double l2s = host_snr(ctx, ANVIL_TYPE_PTQTP2S, x, ROWS * ROW, 110);
    const double l2 = host_snr(ctx, ANVIL_TYPE_PTQTP2, x, ROWS * ROW, 108);
    const double lq3 = host_snr(ctx, ANVIL_TYPE_Q3_K, x, ROWS * ROW, 110);
    printf("\n    normal: ptqtp2s %.2f dB, q3_K %.2f dB; llm-like: ptqtp2s %.2f, ptqtp2 %.2f, q3_K %.2f dB", s2, q3,
           l2s, l2, lq3);
    CU_ASSERT(s2 > q3);
    CU_ASSERT(l2s > l2 + 1.0);
    anvil_ctx_close(ctx);
}

static void test_extremes(void) {
    float x[N], y[N];
    uint8_t blk[MAXB];
    const float mags[] = { 1e6f, 3e38f, 1e-30f, 1e-42f, 70000.0f };
    for (size_t f = 0; f < 2; ++f) {
        for (size_t m = 0; m < sizeof mags / sizeof mags[0]; ++m) {
            for (unsigned i = 0; i < N; ++i) x[i] = mags[m] * ((float)((int)(i % 7) - 3) / 3.0f);
            char msg[256];
            CU_ASSERT_EQUAL_FATAL(FMT[f].encode(x, blk, N, msg, sizeof msg), ANVIL_OK);
            FMT[f].decode(blk, y, N);
            for (unsigned i = 0; i < N; ++i) CU_ASSERT_FATAL(isfinite(y[i]));
            if (mags[m] == 70000.0f) CU_ASSERT(fabsf(y[0]) > 60000.0f); /* saturated, not lost */
        }
    }
}

static void test_refusals(void) {
    float x[3 * N];
    uint8_t blk[3 * MAXB];
    test_input_fill(x, 3 * N, INPUT_NORMAL, 1, 0);
    char msg[256] = "";
    for (size_t f = 0; f < 2; ++f) {
        CU_ASSERT_EQUAL(FMT[f].encode(x, blk, N + 3, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "259 elements"));
        x[300] = NAN;
        CU_ASSERT_EQUAL(FMT[f].encode(x, blk, 3 * N, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 300 is NaN"));
        x[300] = 0.5f;
    }
}

/* ---- through the host ----------------------------------------------------------- */

/* anvil_matmul (dispatched to a kernel, not a fallback) equals the
 * reference dot of the same Q8_K activations, bit for bit. */
static void test_matmul(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    enum { TR = 9, TK = 1024 };
    static float w[TR * TK], x[TK], y[TR];
    static uint8_t blocks[TR * (TK / N) * MAXB], aq[TK / N * Q8K];
    for (unsigned r = 0; r < TR; ++r) test_input_fill(w + r * TK, TK, INPUT_LLM_LIKE, 15, r);
    test_input_fill(x, TK, INPUT_NORMAL, 16, 0);
    anvil_ref_quantize_q8_K(x, aq, TK);
    for (size_t f = 0; f < 2; ++f) {
        const size_t row_bytes = TK / N * block_bytes(&FMT[f]), bytes = TR * row_bytes;
        CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, FMT[f].id, w, TR * TK, blocks, bytes, &err), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, FMT[f].id, blocks, TR, TK, x, 1, y, &err), ANVIL_OK);
        size_t bad = 0;
        for (unsigned r = 0; r < TR; ++r) {
            float s = NAN;
            FMT[f].dot(TK, &s, blocks + r * row_bytes, aq);
            if (!ptqtp_same_bits(s, y[r]) && bad++ == 0)
                fprintf(stderr, "\n%s row %u: %a vs %a\n", FMT[f].name, r, y[r], s);
        }
        CU_ASSERT_EQUAL(bad, 0);
        int dispatched = 0;
        for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
            anvil_dispatch_report d;
            anvil_ctx_dispatch_report(ctx, i, &d);
            if (d.weight_type == FMT[f].id) dispatched = !d.fallback && d.backend != NULL;
        }
        CU_ASSERT_TRUE(dispatched);
    }
    anvil_ctx_close(ctx);
}

static char out[1 << 16];

/* The CLI: --ptqtp 2s writes the same file for 1 and 3 threads. */
static void test_threads(void) {
    const char *model = test_shared_path("quality/tiny-code-llama.f16.gguf");
    if (model == NULL) {
        printf("\n    skipped: ../shared/testdata/quality is absent");
        return;
    }
    const char *tmp = test_tmpdir();
    for (unsigned t = 1; t <= 3; t += 2) {
        const int rc = test_shell(out, sizeof out,
                                  "'%s' transcode --quiet --no-quality --from '%s' --out '%s/t%u.gguf' "
                                  "--ptqtp 2s --threads %u 2>&1",
                                  ANVIL_CLI, model, tmp, t, t);
        if (rc != 0) fprintf(stderr, "\n%s\n", out);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
    }
    CU_ASSERT_EQUAL(test_shell(out, sizeof out, "cmp '%s/t1.gguf' '%s/t3.gguf' 2>&1", tmp, tmp), 0);
    CU_ASSERT_EQUAL(test_shell(out, sizeof out, "'%s' inspect '%s/t1.gguf' 2>&1 | grep -c ptqtp2s", ANVIL_CLI, tmp),
                    0);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--write-golden") == 0) {
        return write_golden(&FMT[0]) == 0 && write_golden(&FMT[1]) == 0 ? 0 : 1;
    }
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("ptqtps", NULL, NULL);
    CU_add_test(s, "ptqtp2s decode == the format's text", test_decode_spec2);
    CU_add_test(s, "ptqtp3s decode == the format's text", test_decode_spec3);
    CU_add_test(s, "ptqtp2s golden", test_golden2);
    CU_add_test(s, "ptqtp3s golden", test_golden3);
    CU_add_test(s, "ptqtp2s dot: exact integer", test_dots2);
    CU_add_test(s, "ptqtp3s dot: exact integer", test_dots3);
    CU_add_test(s, "ptqtp2s fit: exact levels come back", test_fit2);
    CU_add_test(s, "ptqtp3s fit: exact levels come back", test_fit3);
    CU_add_test(s, "extreme magnitudes stay finite", test_extremes);
    CU_add_test(s, "refusals", test_refusals);
    CU_pSuite h = CU_add_suite("ptqtps through the host", NULL, NULL);
    CU_add_test(h, "SNR: above q3_K (normal), above ptqtp2 (llm-like)", test_quality);
    CU_add_test(h, "matmul == reference dot, on a kernel", test_matmul);
    CU_add_test(h, "transcode --ptqtp 2s: same bytes for 1 and 3 threads", test_threads);
    const int rc = test_run_cunit();
    test_tmpdir_cleanup();
    return rc;
}
