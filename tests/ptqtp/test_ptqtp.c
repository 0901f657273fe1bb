/* SPDX-License-Identifier: MIT */
/*
 * test_ptqtp: the PTQTP trit-plane codec plugin (plugins/codec-ptqtp).
 *
 *   format    the base-3 fraction bytes carry every five-digit number; the
 *             codec's decoder equals a decoder written here from the format
 *             header's text, on random bytes and scales (NaN/Inf included)
 *   golden    encode/decode/dot against tests/golden/ptqtp{2,3}.bin, pinned
 *             on x86-64; the same file checks aarch64 (qemu) byte for byte
 *   dots      the multiplication-free dot against a multiply-and-add dot of
 *             the decoded values: exact where every float operation is, and
 *             within 1e-5 of the terms' magnitude everywhere
 *   fit       exactly ternary blocks come back exactly; the search's error
 *             is the decoded error; never worse than zeros; SNR floors
 *   refusal   NaN/Inf refused naming the element, partial blocks refused;
 *             huge and tiny inputs stay finite
 *   threads   `anvil transcode --ptqtp K` writes the same bytes for 1, 2
 *             and 3 threads, and they are the codec's own bytes
 *   transcode --ptqtp K is --dtype ptqtpK; --tensor-type overrides win;
 *             --compare prints tq1_0 tq2_0 q2_K q3_K iq2_s beside it;
 *             bad K, a second matrix type, a missing plugin are refused
 *   host      `anvil codec list` and `inspect` show the types; anvil_matmul
 *             runs them; without the plugin a GGUF holding them is refused
 *             as "a codec plugin is missing"
 *
 *   test_ptqtp --write-golden   rewrites tests/golden/ptqtp{2,3}.bin
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/anvil.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/gguf.h"
#include "anvil/numeric.h"
#include "golden.h"
#include "inputs.h"
#include "ptqtp_ref.h"
#include "ptqtp_test.h"
#include "ref/q8_k.h"
#include "test_env.h"

#define N 256
#define MAX_ROW 2048
#define GOLDEN_ROW 256
#define GOLDEN_PER_KIND 3

typedef ptqtp_fmt kfmt;

static const kfmt FMT[2] = {
    { "ptqtp2", ANVIL_TYPE_PTQTP2, 2, anvil_ptqtp_encode2, anvil_ptqtp_decode2, anvil_ptqtp_vec_dot2_q8_K },
    { "ptqtp3", ANVIL_TYPE_PTQTP3, 3, anvil_ptqtp_encode3, anvil_ptqtp_decode3, anvil_ptqtp_vec_dot3_q8_K },
};

static size_t block_bytes(const kfmt *f) { return ANVIL_PTQTP_BLOCK_BYTES(f->k); }

/* ---- the format, from the header's text ------------------------------------ */

static void spec_decode(const uint8_t *blk, unsigned k, float *y) {
    float d[3];
    for (unsigned p = 0; p < k; ++p) {
        uint16_t h;
        memcpy(&h, blk + k * 52 + 2 * p, 2);
        d[p] = anvil_fp16_to_fp32(h);
    }
    for (unsigned i = 0; i < N; ++i) {
        float v = (float)ptqtp_spec_trit(blk, i) * d[0];
        for (unsigned p = 1; p < k; ++p) v = v + (float)ptqtp_spec_trit(blk + 52 * p, i) * d[p];
        y[i] = v;
    }
}

static void test_fraction_bytes(void) {
    /* every five-digit base-3 number, stored as ceil(U * 256 / 243), gives
     * its digits back as carries, most significant first */
    for (unsigned u = 0; u < 243; ++u) {
        const unsigned byte = (u * 256 + 242) / 243;
        CU_ASSERT_FATAL(byte < 256);
        unsigned rest = u;
        for (int j = 4; j >= 0; --j) {
            CU_ASSERT_EQUAL(ptqtp_spec_digit(byte, (unsigned)j), (int)(rest % 3));
            rest /= 3;
        }
    }
    /* pack and unpack through the codec: every trit where the header says */
    test_rng r;
    test_rng_seed(&r, 17);
    for (int rep = 0; rep < 200; ++rep) {
        int8_t t[3][N], back[3][N];
        anvil_half d[3] = { 0x3C00, 0xB800, 0x7BFF }, dback[3];
        for (unsigned p = 0; p < 3; ++p) {
            for (unsigned i = 0; i < N; ++i) t[p][i] = (int8_t)((int)(test_rng_u64(&r) % 3) - 1);
        }
        uint8_t blk[162];
        anvil_ptqtp_pack((const int8_t(*)[N])t, d, 3, blk);
        for (unsigned p = 0; p < 3; ++p) {
            for (unsigned i = 0; i < N; ++i) CU_ASSERT_EQUAL(ptqtp_spec_trit(blk + 52 * p, i), t[p][i]);
        }
        anvil_ptqtp_unpack(blk, 3, back, dback);
        CU_ASSERT_EQUAL(memcmp(t, back, sizeof t), 0);
        CU_ASSERT_EQUAL(memcmp(d, dback, sizeof d), 0);
    }
}

static uint16_t random_half(test_rng *r, int sane) {
    const uint64_t u = test_rng_u64(r);
    if (!sane) return (uint16_t)u; /* anything: NaN, Inf, subnormal */
    return (uint16_t)((u & 0x8000u) | ((3 + (u >> 20) % 16) << 10) | ((u >> 32) & 0x3ffu));
}

static void random_block(const kfmt *f, test_rng *r, int sane, uint8_t *blk) {
    for (size_t i = 0; i < block_bytes(f); ++i) blk[i] = (uint8_t)test_rng_u64(r);
    for (unsigned p = 0; p < f->k; ++p) {
        const uint16_t h = random_half(r, sane);
        memcpy(blk + ANVIL_PTQTP_SCALE_OFFSET(f->k, p), &h, 2);
    }
}

static void check_decode_spec(const kfmt *f) {
    ptqtp_check_decode_spec(f, 1000 + f->k, block_bytes(f), random_block, spec_decode);
}

static void test_decode_spec2(void) { check_decode_spec(&FMT[0]); }
static void test_decode_spec3(void) { check_decode_spec(&FMT[1]); }

/* ---- dots -------------------------------------------------------------------- */

static void check_dots(const kfmt *f) {
    enum { MAX_NB = 8 };
    test_rng r;
    test_rng_seed(&r, 2000 + f->k);
    uint8_t w[MAX_NB * 162], a[MAX_NB * 292];
    float wd[MAX_NB * N], ad[MAX_NB * N];
    size_t exact_bad = 0, bound_bad = 0, rows = 0;
    for (int rep = 0; rep < 3000; ++rep, ++rows) {
        const int exact = rep % 3 == 0;
        const size_t nb = 1 + test_rng_u64(&r) % MAX_NB, n = nb * N;
        for (size_t b = 0; b < nb; ++b) {
            uint8_t *blk = w + b * block_bytes(f);
            random_block(f, &r, 1, blk);
            if (exact) { /* +-1 and +-2 scales, codes -3..3, act scale 1: every float step exact */
                for (unsigned p = 0; p < f->k; ++p) {
                    const uint16_t h =
                        (uint16_t)((test_rng_u64(&r) & 1 ? 0x3C00 : 0x4000) | (test_rng_u64(&r) & 0x8000));
                    memcpy(blk + ANVIL_PTQTP_SCALE_OFFSET(f->k, p), &h, 2);
                }
                ptqtp_make_act(&r, 1.0f, 3, a + b * 292);
            } else if (rep % 3 == 1) {
                ptqtp_make_act(&r, (float)(1.0 + (double)(test_rng_u64(&r) % 1000) / 100.0) * 1e-3f, 127,
                               a + b * 292);
            } else {
                float x[N];
                test_input_fill(x, N, (test_input_kind)(rep % INPUT_KIND_COUNT), 55, (uint64_t)rep);
                anvil_ref_quantize_q8_K(x, a + b * 292, N);
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
        if (exact && (double)s != ref) {
            if (exact_bad++ == 0) fprintf(stderr, "\n%s exact: %.9g vs %.9g\n", f->name, (double)s, ref);
        }
        if (!(fabs((double)s - ref) <= 1e-5 * mag)) {
            if (bound_bad++ == 0) fprintf(stderr, "\n%s: %.9g vs %.9g (terms %.6g)\n", f->name, (double)s, ref, mag);
        }
    }
    printf("\n    %s: %zu rows, %zu exact-pass mismatches, %zu outside 1e-5", f->name, rows, exact_bad, bound_bad);
    CU_ASSERT_EQUAL(exact_bad, 0);
    CU_ASSERT_EQUAL(bound_bad, 0);
}

static void test_dots2(void) { check_dots(&FMT[0]); }
static void test_dots3(void) { check_dots(&FMT[1]); }

/* ---- golden -------------------------------------------------------------------- */

static void golden_act(float *act, uint8_t *act_q) { ptqtp_golden_act(9191, act, act_q, GOLDEN_ROW); }

static int write_golden(const kfmt *f) {
    golden_header h;
    memset(&h, 0, sizeof h);
    h.type_id = f->id;
    h.act_type = ANVIL_TYPE_Q8_K;
    h.row_len = GOLDEN_ROW;
    h.n_rows = INPUT_KIND_COUNT * GOLDEN_PER_KIND;
    h.row_bytes = (uint32_t)(GOLDEN_ROW / N * block_bytes(f));
    h.act_row_bytes = GOLDEN_ROW / N * 292;
    snprintf(h.type_name, sizeof h.type_name, "%s", f->name);
    float act[GOLDEN_ROW], x[GOLDEN_ROW], y[GOLDEN_ROW];
    uint8_t act_q[GOLDEN_ROW / N * 292], enc[GOLDEN_ROW / N * 162];
    golden_act(act, act_q);
    char rel[64];
    snprintf(rel, sizeof rel, "golden/%s.bin", f->name);
    FILE *fp = golden_write_begin(test_source_path(rel), &h, act, act_q);
    if (fp == NULL) return -1;
    int rc = 0;
    for (uint32_t i = 0; i < h.n_rows && rc == 0; ++i) {
        const test_input_kind kind = (test_input_kind)(i % INPUT_KIND_COUNT);
        test_input_fill(x, GOLDEN_ROW, kind, 7171, i / INPUT_KIND_COUNT);
        char msg[256];
        if (f->encode(x, enc, GOLDEN_ROW, msg, sizeof msg) != ANVIL_OK) return -1;
        f->decode(enc, y, GOLDEN_ROW);
        float dot = NAN;
        f->dot(GOLDEN_ROW, &dot, enc, act_q);
        rc = golden_write_record(fp, &h, (uint32_t)kind, GOLDEN_REC_ENCODED, x, enc, y, dot);
    }
    if (golden_write_end(fp) != 0) rc = -1;
    printf("%s: wrote %s (%u rows)\n", f->name, test_source_path(rel), h.n_rows);
    return rc;
}

static void check_golden(const kfmt *f) {
    char rel[64];
    snprintf(rel, sizeof rel, "golden/%s.bin", f->name);
    golden_file g;
    CU_ASSERT_FATAL(golden_load(test_source_path(rel), &g) == 0);
    CU_ASSERT_EQUAL(g.h.type_id, f->id);
    CU_ASSERT_EQUAL(g.h.act_type, ANVIL_TYPE_Q8_K);
    CU_ASSERT_STRING_EQUAL(g.h.type_name, f->name);
    CU_ASSERT_FATAL(g.h.row_len == GOLDEN_ROW);
    CU_ASSERT_FATAL(g.h.row_bytes == GOLDEN_ROW / N * block_bytes(f));
    CU_ASSERT_EQUAL(g.h.n_rows, INPUT_KIND_COUNT * GOLDEN_PER_KIND);
    float act[GOLDEN_ROW], y[GOLDEN_ROW];
    uint8_t act_q[GOLDEN_ROW / N * 292], enc[GOLDEN_ROW / N * 162];
    golden_act(act, act_q);
    CU_ASSERT(memcmp(act_q, g.act_q, sizeof act_q) == 0); /* the stored row is what we quantize */
    size_t enc_bad = 0, dec_bad = 0, dot_bad = 0;
    for (uint32_t i = 0; i < g.h.n_rows; ++i) {
        golden_record r;
        golden_record_at(&g, i, &r);
        char msg[256];
        CU_ASSERT_EQUAL(f->encode(r.in, enc, GOLDEN_ROW, msg, sizeof msg), ANVIL_OK);
        if (memcmp(enc, r.enc, g.h.row_bytes) != 0) {
            enc_bad++;
            fprintf(stderr, "\n%s golden record %u (%s): encode differs", f->name, i,
                    test_input_kind_name((test_input_kind)r.kind));
        }
        f->decode(r.enc, y, GOLDEN_ROW);
        if (memcmp(y, r.dec, sizeof y) != 0) dec_bad++;
        float s = NAN;
        f->dot(GOLDEN_ROW, &s, r.enc, g.act_q);
        if (!ptqtp_same_bits(s, r.dot)) dot_bad++;
    }
    printf("\n    %s: %u golden rows: %zu encode, %zu decode, %zu dot mismatches", f->name, g.h.n_rows, enc_bad,
           dec_bad, dot_bad);
    CU_ASSERT_EQUAL(enc_bad, 0);
    CU_ASSERT_EQUAL(dec_bad, 0);
    CU_ASSERT_EQUAL(dot_bad, 0);
    golden_free(&g);
}

static void test_golden2(void) { check_golden(&FMT[0]); }
static void test_golden3(void) { check_golden(&FMT[1]); }

/* ---- the fit ----------------------------------------------------------------- */

static void check_fit(const kfmt *f) {
    float x[N], y[N];
    uint8_t blk[162];
    size_t rows = 0, worse_than_search = 0, worse_than_zero = 0, steps = 0, starts = 0;
    double sig_llm = 0, err_llm = 0, sig_normal = 0, err_normal = 0;
    for (uint64_t row = 0; row < 40; ++row) {
        for (int kind = 0; kind < INPUT_KIND_COUNT; ++kind, ++rows) {
            test_input_fill(x, N, (test_input_kind)kind, 31337, row);
            anvil_ptqtp_fit_result fit;
            anvil_ptqtp_fit(x, f->k, &fit);
            steps += fit.steps;
            starts += fit.starts;
            anvil_ptqtp_pack((const int8_t(*)[N])fit.t, fit.d, f->k, blk);
            f->decode(blk, y, N);
            double sig = 0, err = 0;
            for (unsigned i = 0; i < N; ++i) {
                sig += (double)x[i] * x[i];
                err += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            }
            /* the weight-by-weight choice never loses to the search's segments */
            if (err > fit.sse + 1e-9 * sig + 1e-300) worse_than_search++;
            if (err > sig) worse_than_zero++;
            if (kind == INPUT_TERNARY || kind == INPUT_ZEROS) {
                /* {-s, 0, s}: zeros stay zeros, the rest within s's binary16 rounding */
                for (unsigned i = 0; i < N; ++i) {
                    CU_ASSERT(x[i] != 0.0f || y[i] == 0.0f);
                    CU_ASSERT(fabsf(y[i] - x[i]) <= fabsf(x[i]) * 0x1.0p-11f);
                }
            }
            if (kind == INPUT_LLM_LIKE) {
                sig_llm += sig;
                err_llm += err;
            } else if (kind == INPUT_NORMAL) {
                sig_normal += sig;
                err_normal += err;
            }
        }
    }
    const double llm = 10 * log10(sig_llm / err_llm), normal = 10 * log10(sig_normal / err_normal);
    printf("\n    %s: %zu blocks, %.1f starts and %.1f steps per block; SNR llm-like %.2f dB, N(0,1) %.2f dB",
           f->name, rows, (double)starts / rows, (double)steps / rows, llm, normal);
    CU_ASSERT_EQUAL(worse_than_search, 0);
    CU_ASSERT_EQUAL(worse_than_zero, 0);
    /* floors a few tenths under what this encoder measures (a regression
     * in the search shows here, not only in the goldens) */
    if (f->k == 2) {
        CU_ASSERT(normal >= 14.0);
        CU_ASSERT(llm >= 11.0);
    } else {
        CU_ASSERT(normal >= 22.0);
        CU_ASSERT(llm >= 19.0);
    }
}

static void test_fit2(void) { check_fit(&FMT[0]); }
static void test_fit3(void) { check_fit(&FMT[1]); }

/* Weights the binary16 scales cannot reach stay finite; blocks of zeros
 * and of subnormals decode to zeros or to finite values. */
static void test_extremes(void) {
    float x[N], y[N];
    uint8_t blk[162];
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
    uint8_t blk[3 * 162];
    test_input_fill(x, 3 * N, INPUT_NORMAL, 1, 0);
    char msg[256] = "";
    for (size_t f = 0; f < 2; ++f) {
        CU_ASSERT_EQUAL(FMT[f].encode(x, blk, N + 3, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "259 elements"));
        x[300] = NAN;
        CU_ASSERT_EQUAL(FMT[f].encode(x, blk, 3 * N, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 300 is NaN"));
        x[300] = -INFINITY;
        CU_ASSERT_EQUAL(FMT[f].encode(x, blk, 3 * N, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 300 is Inf"));
        x[300] = 0.5f;
    }
}

/* ---- through the host and the CLI --------------------------------------------- */

static char out[1 << 16];
static int sh_quiet; /* the command is expected to fail: do not echo it */

/* A command's exit code (its output in `out`, shown when it fails unless
 * the failure is expected). */
#define sh(...) sh_report(test_shell(out, sizeof out, __VA_ARGS__))
static int sh_report(int rc) {
    if (rc != 0 && !sh_quiet) fprintf(stderr, "\n%s\n(exit %d)\n", out, rc);
    return rc;
}

enum { TR = 37, TK = 1024 };

/* A small F32 model file: two matrices and a norm vector. */
static int write_f32_model(anvil_ctx *ctx, const char *path, const float *w) {
    anvil_error err;
    anvil_gguf_writer *gw = NULL;
    if (anvil_gguf_writer_new(&gw, ctx, &err) != ANVIL_OK) return -1;
    static float norm[TK];
    for (unsigned i = 0; i < TK; ++i) norm[i] = 1.0f + (float)i / TK;
    const uint64_t ne[2] = { TK, TR }, ne1[1] = { TK };
    int rc = anvil_gguf_writer_set_string(gw, "general.architecture", "llama", &err);
    if (rc == ANVIL_OK)
        rc = anvil_gguf_writer_add_tensor(gw, "blk.0.ffn_up.weight", ANVIL_TYPE_F32, 2, ne, w,
                                          sizeof(float) * TR * TK, &err);
    if (rc == ANVIL_OK)
        rc = anvil_gguf_writer_add_tensor(gw, "blk.0.attn_v.weight", ANVIL_TYPE_F32, 2, ne, w,
                                          sizeof(float) * TR * TK, &err);
    if (rc == ANVIL_OK)
        rc = anvil_gguf_writer_add_tensor(gw, "blk.0.ffn_norm.weight", ANVIL_TYPE_F32, 1, ne1, norm, sizeof norm,
                                          &err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(gw, path, &err);
    if (rc != ANVIL_OK) fprintf(stderr, "\nwrite_f32_model: %s\n", err.message);
    anvil_gguf_writer_free(gw);
    return rc;
}

static int file_bytes(const char *path, uint8_t **data, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) return -1;
    fseek(fp, 0, SEEK_END);
    const long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    *data = malloc((size_t)sz);
    *size = (size_t)sz;
    const size_t got = *data ? fread(*data, 1, (size_t)sz, fp) : 0;
    fclose(fp);
    return got == (size_t)sz ? 0 : -1;
}

static void test_threads(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    static float w[TR * TK];
    for (unsigned r = 0; r < TR; ++r) test_input_fill(w + r * TK, TK, (test_input_kind)(r % INPUT_KIND_COUNT), 99, r);
    char model[4200];
    snprintf(model, sizeof model, "%s/f32.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(write_f32_model(ctx, model, w), ANVIL_OK);
    for (size_t f = 0; f < 2; ++f) {
        const size_t rb = TK / N * block_bytes(&FMT[f]);
        static uint8_t want[TR * (TK / N) * 162];
        char msg[256];
        CU_ASSERT_EQUAL_FATAL(FMT[f].encode(w, want, TR * TK, msg, sizeof msg), ANVIL_OK);
        uint8_t *first = NULL;
        size_t first_size = 0;
        for (unsigned threads = 1; threads <= 3; ++threads) {
            char outp[4300];
            snprintf(outp, sizeof outp, "%s/%s-t%u.gguf", test_tmpdir(), FMT[f].name, threads);
            CU_ASSERT_EQUAL_FATAL(sh("'%s' transcode --from '%s' --out '%s' --ptqtp %u --threads %u --quiet 2>&1",
                                     ANVIL_CLI, model, outp, FMT[f].k, threads),
                                  0);
            uint8_t *data = NULL;
            size_t size = 0;
            CU_ASSERT_EQUAL_FATAL(file_bytes(outp, &data, &size), 0);
            if (first == NULL) {
                first = data;
                first_size = size;
                /* the matrix in the file is the codec's own encoding */
                anvil_gguf *g = NULL;
                CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, outp, ctx, 0, &err), ANVIL_OK);
                const anvil_gguf_tensor *t = anvil_gguf_find_tensor(g, "blk.0.ffn_up.weight");
                CU_ASSERT_PTR_NOT_NULL_FATAL(t);
                CU_ASSERT_EQUAL(t->type, FMT[f].id);
                CU_ASSERT_EQUAL(t->n_bytes, TR * rb);
                CU_ASSERT_EQUAL(memcmp(t->data, want, TR * rb), 0);
                anvil_gguf_close(g);
            } else {
                CU_ASSERT_EQUAL(size, first_size);
                CU_ASSERT(size == first_size && memcmp(data, first, size) == 0);
                free(data);
            }
        }
        free(first);
    }
    anvil_ctx_close(ctx);
}

/* --ptqtp K: the conservative policy with ptqtpK as the matrix type, the
 * same bytes as --dtype ptqtpK; --tensor-type rules still win; --compare
 * sets other formats' SNR beside it. */
static void test_transcode_cli(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    static float w[TR * TK];
    for (unsigned r = 0; r < TR; ++r) test_input_fill(w + r * TK, TK, INPUT_LLM_LIKE, 98, r);
    char model[4200], a[4300], b[4300];
    snprintf(model, sizeof model, "%s/f32b.gguf", test_tmpdir());
    snprintf(a, sizeof a, "%s/a.gguf", test_tmpdir());
    snprintf(b, sizeof b, "%s/b.gguf", test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(write_f32_model(ctx, model, w), ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(sh("'%s' transcode --from '%s' --out '%s' --ptqtp 3 --quiet 2>&1", ANVIL_CLI, model, a), 0);
    CU_ASSERT_EQUAL_FATAL(
        sh("'%s' transcode --from '%s' --out '%s' --dtype ptqtp3 --quiet 2>&1", ANVIL_CLI, model, b), 0);
    uint8_t *da = NULL, *db = NULL;
    size_t na = 0, nb = 0;
    CU_ASSERT_EQUAL_FATAL(file_bytes(a, &da, &na) | file_bytes(b, &db, &nb), 0);
    CU_ASSERT(na == nb && memcmp(da, db, na) == 0);
    free(da);
    free(db);

    /* an override keeps attn_v at q6_K; the report names the plugin's type */
    CU_ASSERT_EQUAL_FATAL(sh("'%s' transcode --from '%s' --out '%s' --ptqtp 2 --tensor-type 'attn_v=q6_K' "
                             "--compare 2>&1",
                             ANVIL_CLI, model, a),
                          0);
    const char *cmp = strstr(out, "compare: SNR dB");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cmp);
    CU_ASSERT_PTR_NOT_NULL(strstr(cmp, "tq1_0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(cmp, "iq2_s"));
    const char *up = strstr(cmp, "blk.0.ffn_up.weight"), *v = strstr(cmp, "blk.0.attn_v.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(up);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT(strncmp(up + 35, "ptqtp2", 6) == 0);
    CU_ASSERT(strncmp(v + 35, "q6_K", 4) == 0);
    /* the ptqtp2 row: its SNR, then five others, q3_K (4th) above q2_K (3rd) */
    double snr[6];
    CU_ASSERT_EQUAL_FATAL(
        sscanf(up + 44, "%lf %lf %lf %lf %lf %lf", &snr[0], &snr[1], &snr[2], &snr[3], &snr[4], &snr[5]), 6);
    CU_ASSERT(snr[0] > 10.0 && snr[0] < snr[4] && snr[0] > snr[3] && snr[0] > snr[1]);
    anvil_gguf *g = NULL;
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_open(&g, a, ctx, 0, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "blk.0.ffn_up.weight")->type, ANVIL_TYPE_PTQTP2);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "blk.0.attn_v.weight")->type, ANVIL_TYPE_Q6_K);
    CU_ASSERT_EQUAL(anvil_gguf_find_tensor(g, "blk.0.ffn_norm.weight")->type, ANVIL_TYPE_F32);
    anvil_gguf_close(g);
    CU_ASSERT_EQUAL(sh("'%s' transcode --from '%s' --out '%s' --ptqtp 2 --compare --json 2>&1", ANVIL_CLI, model, a),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"compare\":{\"types\":[{\"name\":\"tq1_0\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"results\":[{\"type\":\"tq1_0\",\"compared\":true,\"snr_db\":"));

    /* refusals: K, a second matrix type, the plugin missing */
    sh_quiet = 1;
    CU_ASSERT_EQUAL(sh("'%s' transcode --from '%s' --out '%s' --ptqtp 4 2>&1", ANVIL_CLI, model, a), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "K is 2 or 3"));
    CU_ASSERT_EQUAL(sh("'%s' transcode --from '%s' --out '%s' --ptqtp 2 --dtype q4_K 2>&1", ANVIL_CLI, model, a), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "give one"));
    CU_ASSERT_EQUAL(
        sh("'%s' transcode --from '%s' --out '%s' --ptqtp 2 --compare-with q4_K,nosuch 2>&1", ANVIL_CLI, model, a),
        2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "nosuch"));
    char noplug[4200];
    snprintf(noplug, sizeof noplug, "%s/noplug-tc.ini", test_tmpdir());
    FILE *fp = fopen(noplug, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fprintf(fp, "[plugins]\npath = %s\nload = codec-q8_0, codec-kquants, backend-scalar\n", ANVIL_PLUGIN_DIR);
    fclose(fp);
    CU_ASSERT_EQUAL(
        sh("'%s' --config '%s' transcode --from '%s' --out '%s' --ptqtp 2 2>&1", ANVIL_CLI, noplug, model, a), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "codec-ptqtp"));
    sh_quiet = 0;
    anvil_ctx_close(ctx);
}

static void test_host(void) {
    CU_ASSERT_EQUAL(sh("'%s' codec list 2>&1", ANVIL_CLI), 0);
    const char *l2 = strstr(out, "ptqtp2"), *l3 = strstr(out, "ptqtp3");
    CU_ASSERT_PTR_NOT_NULL_FATAL(l2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l3);
    CU_ASSERT_PTR_NOT_NULL(strstr(l2, "1024"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l2, "3.3750"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l3, "1025"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l3, "5.0625"));

    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    static float w[TR * TK], dec[TR * TK], x[2 * TK], y[2 * TR];
    static uint8_t blocks[TR * (TK / N) * 162];
    for (unsigned r = 0; r < TR; ++r) test_input_fill(w + r * TK, TK, INPUT_LLM_LIKE, 5, r);
    test_input_fill(x, 2 * TK, INPUT_NORMAL, 6, 0);
    for (size_t f = 0; f < 2; ++f) {
        const size_t bytes = TR * (TK / N) * block_bytes(&FMT[f]);
        CU_ASSERT_EQUAL_FATAL(anvil_encode(ctx, FMT[f].id, w, TR * TK, blocks, bytes, &err), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(anvil_decode(ctx, FMT[f].id, blocks, bytes, dec, TR * TK, &err), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(anvil_matmul(ctx, FMT[f].id, blocks, TR, TK, x, 2, y, &err), ANVIL_OK);
        for (unsigned i = 0; i < 2; ++i) {
            for (unsigned r = 0; r < TR; ++r) {
                double ref = 0, mag = 0;
                for (unsigned j = 0; j < TK; ++j) {
                    ref += (double)dec[r * TK + j] * x[i * TK + j];
                    mag += fabs((double)dec[r * TK + j] * x[i * TK + j]);
                }
                /* activations are quantized to Q8_K: 1/127 of their scale at worst */
                CU_ASSERT(fabs(y[i * TR + r] - ref) <= 0.02 * mag);
            }
        }
        /* a kernel runs it (no fallback) */
        int dispatched = 0;
        for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
            anvil_dispatch_report d;
            anvil_ctx_dispatch_report(ctx, i, &d);
            if (d.weight_type == FMT[f].id) dispatched = !d.fallback && d.backend != NULL;
        }
        CU_ASSERT_TRUE(dispatched);

        /* a GGUF holding the type: inspect names it; without the plugin it
         * is refused as a missing codec plugin, not as a corrupt file */
        char path[4200], noplug[4200];
        snprintf(path, sizeof path, "%s/%s.gguf", test_tmpdir(), FMT[f].name);
        anvil_gguf_writer *gw = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_new(&gw, ctx, &err), ANVIL_OK);
        const uint64_t ne[2] = { TK, TR };
        CU_ASSERT_EQUAL_FATAL(
            anvil_gguf_writer_add_tensor(gw, "blk.0.ffn_up.weight", FMT[f].id, 2, ne, blocks, bytes, &err), ANVIL_OK);
        CU_ASSERT_EQUAL_FATAL(anvil_gguf_writer_write_file(gw, path, &err), ANVIL_OK);
        anvil_gguf_writer_free(gw);
        CU_ASSERT_EQUAL(sh("'%s' inspect '%s' 2>&1", ANVIL_CLI, path), 0);
        const char *t = strstr(out, "blk.0.ffn_up.weight");
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_PTR_NOT_NULL(strstr(t, FMT[f].name));

        snprintf(noplug, sizeof noplug, "%s/noplug.ini", test_tmpdir());
        FILE *fp = fopen(noplug, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fprintf(fp, "[plugins]\npath = %s\nload = codec-q8_0, codec-kquants, backend-scalar\n", ANVIL_PLUGIN_DIR);
        fclose(fp);
        anvil_ctx *bare = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&bare, noplug, &err), ANVIL_OK);
        anvil_gguf *g = NULL;
        CU_ASSERT_EQUAL(anvil_gguf_open(&g, path, bare, 0, &err), ANVIL_E_GGUF_TENSOR_TYPE);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, FMT[f].id == 1024 ? "1024" : "1025"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "plugin is missing"));
        CU_ASSERT_PTR_NULL(strstr(err.message, "corrupt"));
        anvil_ctx_close(bare);
        sh_quiet = 1;
        CU_ASSERT_NOT_EQUAL(sh("'%s' --config '%s' inspect '%s' 2>&1", ANVIL_CLI, noplug, path), 0);
        sh_quiet = 0;
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "plugin is missing"));
    }
    anvil_ctx_close(ctx);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--write-golden") == 0) {
        return write_golden(&FMT[0]) == 0 && write_golden(&FMT[1]) == 0 ? 0 : 1;
    }
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("ptqtp", NULL, NULL);
    CU_add_test(s, "fraction bytes and the trit layout", test_fraction_bytes);
    CU_add_test(s, "ptqtp2 decode == the format's text", test_decode_spec2);
    CU_add_test(s, "ptqtp3 decode == the format's text", test_decode_spec3);
    CU_add_test(s, "ptqtp2 golden", test_golden2);
    CU_add_test(s, "ptqtp3 golden", test_golden3);
    CU_add_test(s, "ptqtp2 dot vs multiply-and-add", test_dots2);
    CU_add_test(s, "ptqtp3 dot vs multiply-and-add", test_dots3);
    CU_add_test(s, "ptqtp2 fit", test_fit2);
    CU_add_test(s, "ptqtp3 fit", test_fit3);
    CU_add_test(s, "extreme magnitudes stay finite", test_extremes);
    CU_add_test(s, "refusals", test_refusals);
    CU_pSuite h = CU_add_suite("ptqtp through the host", NULL, NULL);
    CU_add_test(h, "same bytes for 1, 2 and 3 threads", test_threads);
    CU_add_test(h, "transcode --ptqtp K, overrides, --compare", test_transcode_cli);
    CU_add_test(h, "codec list, inspect, matmul, missing plugin", test_host);
    const int rc = test_run_cunit();
    test_tmpdir_cleanup();
    return rc;
}
