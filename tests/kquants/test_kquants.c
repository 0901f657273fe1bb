/* SPDX-License-Identifier: MIT */
/*
 * Offline suite of the k-quants (Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K).
 *
 * Parity without ggml: the golden fixtures in tests/golden hold ggml's
 * encodings, decodings and dots of rows of every input kind; anvil's
 * reference code must reproduce the bytes and bits exactly and the dots
 * within 1e-5 (kq_dot_scale.h). Then the edge cases: refusals (NaN/Inf,
 * lengths that are not whole super-blocks), round-trip error bounds,
 * Q8_K's structure, decoders on arbitrary bytes, and the plugin descriptor
 * and kernel table as the host will see them.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/numeric.h"
#include "anvil/status.h"
#include "golden.h"
#include "golden_imatrix.h"
#include "inputs.h"
#include "kernel_tables.h"
#include "kq_dot_scale.h"
#include "ref/kquants.h"
#include "ref/q8_k.h"
#include "test_env.h"

#define MAX_BLOCKS 16
#define MAX_ELEMS (MAX_BLOCKS * ANVIL_QK_K)

typedef struct fmt {
    const char *name;
    uint32_t type_id;
    size_t block_bytes;
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;             /* NULL for Q8_K */
    double max_rms_rel;               /* round trip on N(0,1) rows: rms error / rms */
    double max_err_amax;              /* round trip on N(0,1), U(-1,1): max error / block max */
    anvil_encode_rows_fn encode_rows; /* NULL for Q8_K */
} fmt;

/* Bounds from measurement (200 rows of 4096, worst case) plus ~15% margin:
 * tight enough that a wrong grid search or scale packing trips them. */
static const fmt formats[] = {
    { "q2_K", ANVIL_TYPE_Q2_K, sizeof(anvil_block_q2_K), anvil_ref_encode_q2_K, anvil_ref_decode_q2_K,
      anvil_ref_vec_dot_q2_K_q8_K, 0.36, 0.50, anvil_ref_encode_rows_q2_K },
    { "q3_K", ANVIL_TYPE_Q3_K, sizeof(anvil_block_q3_K), anvil_ref_encode_q3_K, anvil_ref_decode_q3_K,
      anvil_ref_vec_dot_q3_K_q8_K, 0.19, 0.30, anvil_ref_encode_rows_q3_K },
    { "q4_K", ANVIL_TYPE_Q4_K, sizeof(anvil_block_q4_K), anvil_ref_encode_q4_K, anvil_ref_decode_q4_K,
      anvil_ref_vec_dot_q4_K_q8_K, 0.09, 0.13, anvil_ref_encode_rows_q4_K },
    { "q5_K", ANVIL_TYPE_Q5_K, sizeof(anvil_block_q5_K), anvil_ref_encode_q5_K, anvil_ref_decode_q5_K,
      anvil_ref_vec_dot_q5_K_q8_K, 0.045, 0.075, anvil_ref_encode_rows_q5_K },
    { "q6_K", ANVIL_TYPE_Q6_K, sizeof(anvil_block_q6_K), anvil_ref_encode_q6_K, anvil_ref_decode_q6_K,
      anvil_ref_vec_dot_q6_K_q8_K, 0.022, 0.025, anvil_ref_encode_rows_q6_K },
    { "q8_K", ANVIL_TYPE_Q8_K, sizeof(anvil_block_q8_K), anvil_ref_encode_q8_K, anvil_ref_decode_q8_K, NULL, 0.009,
      0.004, NULL },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static float xbuf[MAX_ELEMS], ybuf[MAX_ELEMS], abuf[MAX_ELEMS];
static uint8_t wbuf[MAX_BLOCKS * sizeof(anvil_block_q8_K)];
static anvil_block_q8_K qbuf[MAX_BLOCKS];

/* ---- golden fixtures -------------------------------------------------- */

static void check_golden(const fmt *f) {
    char rel[64];
    snprintf(rel, sizeof rel, "golden/%s.bin", f->name);
    golden_file g;
    if (golden_load(test_source_path(rel), &g) != 0) {
        CU_FAIL_FATAL("golden fixture missing or malformed (regenerate with anvil-parity "
                      "--family kquants --write-golden tests/golden)");
        return;
    }
    CU_ASSERT_EQUAL(g.h.type_id, f->type_id);
    CU_ASSERT_EQUAL(g.h.act_type, ANVIL_TYPE_Q8_K);
    CU_ASSERT_EQUAL(g.h.row_bytes, f->block_bytes * (g.h.row_len / ANVIL_QK_K));
    CU_ASSERT_EQUAL(g.h.act_row_bytes, sizeof(anvil_block_q8_K) * (g.h.row_len / ANVIL_QK_K));
    CU_ASSERT_STRING_EQUAL(g.h.type_name, f->name);
    CU_ASSERT(g.h.n_rows >= 48);
    CU_ASSERT(g.h.row_len % ANVIL_QK_K == 0 && g.h.row_len <= MAX_ELEMS);
    if (g.h.row_len % ANVIL_QK_K != 0 || g.h.row_len > MAX_ELEMS) {
        golden_free(&g);
        return;
    }
    const size_t n = g.h.row_len;
    const size_t nblocks = n / ANVIL_QK_K;

    /* The shared activation row: anvil's Q8_K quantizer == ggml's bytes. */
    anvil_ref_quantize_q8_K(g.act, qbuf, n);
    CU_ASSERT_EQUAL(memcmp(qbuf, g.act_q, g.h.act_row_bytes), 0);

    int kinds_seen[INPUT_KIND_COUNT] = { 0 };
    size_t enc_bad = 0, dec_bad = 0, dot_bad = 0, encoded = 0;
    for (size_t r = 0; r < g.h.n_rows; ++r) {
        golden_record rec;
        golden_record_at(&g, r, &rec);
        if (rec.kind < INPUT_KIND_COUNT) {
            kinds_seen[rec.kind] = 1;
        }
        if (rec.flags & GOLDEN_REC_ENCODED) {
            encoded++;
            char msg[256];
            memset(wbuf, 0xA5, g.h.row_bytes);
            const int rc = f->encode(rec.in, wbuf, n, msg, sizeof msg);
            if (rc != ANVIL_OK || memcmp(wbuf, rec.enc, g.h.row_bytes) != 0) {
                if (enc_bad++ == 0) {
                    fprintf(stderr, "\n  %s golden row %zu (%s): encode differs from ggml\n", f->name, r,
                            test_input_kind_name((test_input_kind)rec.kind));
                }
            }
        }
        f->decode(rec.enc, ybuf, n);
        if (memcmp(ybuf, rec.dec, n * sizeof(float)) != 0) {
            if (dec_bad++ == 0) {
                fprintf(stderr, "\n  %s golden row %zu: decode differs from ggml\n", f->name, r);
            }
        }
        if (f->dot != NULL) {
            float s = NAN;
            f->dot(n, &s, rec.enc, g.act_q);
            const double S = kq_dot_term_scale(f->type_id, rec.enc, g.act_q, nblocks);
            if (!kq_dot_close(s, rec.dot, S, 1e-5)) {
                if (dot_bad++ == 0) {
                    fprintf(stderr, "\n  %s golden row %zu: dot %.9g, ggml %.9g\n", f->name, r, s, rec.dot);
                }
            }
        } else {
            CU_ASSERT(isnan(rec.dot));
        }
    }
    CU_ASSERT_EQUAL(enc_bad, 0);
    CU_ASSERT_EQUAL(dec_bad, 0);
    CU_ASSERT_EQUAL(dot_bad, 0);
    CU_ASSERT_EQUAL(encoded, g.h.n_rows);
    for (int k = 0; k < INPUT_KIND_COUNT; ++k) {
        CU_ASSERT(kinds_seen[k]);
    }
    golden_free(&g);
}

static void test_golden_q2_K(void) { check_golden(&formats[0]); }
static void test_golden_q3_K(void) { check_golden(&formats[1]); }
static void test_golden_q4_K(void) { check_golden(&formats[2]); }
static void test_golden_q5_K(void) { check_golden(&formats[3]); }
static void test_golden_q6_K(void) { check_golden(&formats[4]); }
static void test_golden_q8_K(void) { check_golden(&formats[5]); }

/* ---- refusals ------------------------------------------------------- */

static void check_nonfinite(const fmt *f, size_t n, size_t bad_at, float bad, const char *word) {
    for (size_t i = 0; i < n; ++i) {
        xbuf[i] = 0.25f * (float)((int)(i % 13) - 6);
    }
    xbuf[bad_at] = bad;
    memset(wbuf, 0x5A, sizeof wbuf);
    char msg[256] = "";
    const int rc = f->encode(xbuf, wbuf, n, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, ANVIL_E_NONFINITE);
    char want[64];
    snprintf(want, sizeof want, "element %zu", bad_at);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, word));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
    /* Refused before anything is written. */
    size_t untouched = 0;
    for (size_t i = 0; i < sizeof wbuf; ++i) {
        untouched += wbuf[i] == 0x5A;
    }
    CU_ASSERT_EQUAL(untouched, sizeof wbuf);
}

static void test_refuse_nonfinite(void) {
    for (size_t i = 0; i < N_FORMATS; ++i) {
        check_nonfinite(&formats[i], 512, 300, NAN, "NaN");
        check_nonfinite(&formats[i], 256, 0, INFINITY, "+Inf");
        check_nonfinite(&formats[i], 1024, 1023, -INFINITY, "-Inf");
        /* The first bad index is the one named. */
        for (size_t j = 0; j < 768; ++j) {
            xbuf[j] = 1.0f;
        }
        xbuf[700] = NAN;
        xbuf[513] = INFINITY;
        char msg[256] = "";
        CU_ASSERT_EQUAL(formats[i].encode(xbuf, wbuf, 768, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 513"));
    }
}

static void test_refuse_length(void) {
    static const size_t bad_lengths[] = { 1, 32, 255, 257, 384, 4095 };
    for (size_t i = 0; i < N_FORMATS; ++i) {
        for (size_t j = 0; j < sizeof bad_lengths / sizeof bad_lengths[0]; ++j) {
            memset(xbuf, 0, sizeof xbuf);
            memset(wbuf, 0x5A, sizeof wbuf);
            char msg[256] = "";
            const int rc = formats[i].encode(xbuf, wbuf, bad_lengths[j], msg, sizeof msg);
            CU_ASSERT_EQUAL(rc, ANVIL_E_BLOCK_MISMATCH);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "256"));
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, formats[i].name));
            CU_ASSERT_EQUAL(wbuf[0], 0x5A);
        }
        /* A length check comes first: a short row with a NaN is a length
         * error, and a NULL message buffer is tolerated. */
        xbuf[0] = NAN;
        CU_ASSERT_EQUAL(formats[i].encode(xbuf, wbuf, 100, NULL, 0), ANVIL_E_BLOCK_MISMATCH);
        CU_ASSERT_EQUAL(formats[i].encode(xbuf, wbuf, 256, NULL, 0), ANVIL_E_NONFINITE);
        /* Zero elements: nothing to do, nothing written. */
        wbuf[0] = 0x5A;
        CU_ASSERT_EQUAL(formats[i].encode(xbuf, wbuf, 0, NULL, 0), ANVIL_OK);
        CU_ASSERT_EQUAL(wbuf[0], 0x5A);
    }
}

/* ---- round trips ---------------------------------------------------- */

static void test_round_trip_bounds(void) {
    const size_t n = MAX_ELEMS;
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const fmt *f = &formats[i];
        double worst_rms = 0, worst_max = 0;
        for (uint64_t r = 0; r < 24; ++r) {
            const test_input_kind kind = (r & 1) ? INPUT_UNIFORM : INPUT_NORMAL;
            test_input_fill(xbuf, n, kind, 77, r);
            CU_ASSERT_EQUAL_FATAL(f->encode(xbuf, wbuf, n, NULL, 0), ANVIL_OK);
            f->decode(wbuf, ybuf, n);
            double se = 0, sx = 0;
            for (size_t b = 0; b < n / ANVIL_QK_K; ++b) {
                double amax = 0, emax = 0;
                for (size_t j = b * ANVIL_QK_K; j < (b + 1) * ANVIL_QK_K; ++j) {
                    const double e = (double)xbuf[j] - (double)ybuf[j];
                    se += e * e;
                    sx += (double)xbuf[j] * xbuf[j];
                    amax = fmax(amax, fabs((double)xbuf[j]));
                    emax = fmax(emax, fabs(e));
                }
                worst_max = fmax(worst_max, emax / amax);
            }
            if (kind == INPUT_NORMAL) {
                worst_rms = fmax(worst_rms, sqrt(se / sx));
            }
        }
        if (worst_rms > f->max_rms_rel || worst_max > f->max_err_amax) {
            fprintf(stderr, "\n  %s round trip: rms %.4f (bound %.4f), max/amax %.4f (bound %.4f)\n", f->name,
                    worst_rms, f->max_rms_rel, worst_max, f->max_err_amax);
        }
        CU_ASSERT(worst_rms <= f->max_rms_rel);
        CU_ASSERT(worst_max <= f->max_err_amax);
        CU_ASSERT(worst_rms > 0); /* a lossy format that lost nothing is suspicious */
    }
}

/* Inputs that break grid searches: each must encode, decode to finite
 * values, and the degenerate ones exactly. */
static void test_degenerate_blocks(void) {
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const fmt *f = &formats[i];
        /* All zeros (and -0): decode to exact zeros. */
        test_input_fill(xbuf, 512, INPUT_ZEROS, 1, 0);
        CU_ASSERT_EQUAL(f->encode(xbuf, wbuf, 512, NULL, 0), ANVIL_OK);
        f->decode(wbuf, ybuf, 512);
        size_t zeros = 0;
        for (size_t j = 0; j < 512; ++j) {
            zeros += ybuf[j] == 0.0f;
        }
        CU_ASSERT_EQUAL(zeros, 512);

        /* Every kind: finite output, and all-equal rows come back close. */
        for (int k = 0; k < INPUT_KIND_COUNT; ++k) {
            test_input_fill(xbuf, 1024, (test_input_kind)k, 5, (uint64_t)k);
            CU_ASSERT_EQUAL(f->encode(xbuf, wbuf, 1024, NULL, 0), ANVIL_OK);
            f->decode(wbuf, ybuf, 1024);
            size_t finite = 0;
            double emax = 0, amax = 0;
            for (size_t j = 0; j < 1024; ++j) {
                finite += isfinite(ybuf[j]) != 0;
                emax = fmax(emax, fabs((double)xbuf[j] - ybuf[j]));
                amax = fmax(amax, fabs((double)xbuf[j]));
            }
            CU_ASSERT_EQUAL(finite, 1024);
            if (k == INPUT_ALL_EQUAL) {
                CU_ASSERT(emax <= f->max_err_amax * amax);
            }
        }
    }
}

/* ---- Q8_K ----------------------------------------------------------- */

static void test_q8_K_structure(void) {
    /* bsums are the sums of each 16 codes; the signed max maps to -127. */
    for (uint64_t r = 0; r < 32; ++r) {
        test_input_fill(xbuf, 1024, (test_input_kind)(r % INPUT_KIND_COUNT), 9, r);
        anvil_ref_quantize_q8_K(xbuf, qbuf, 1024);
        for (size_t b = 0; b < 4; ++b) {
            size_t sums_ok = 0;
            for (int g = 0; g < 16; ++g) {
                int s = 0;
                for (int l = 0; l < 16; ++l) {
                    s += qbuf[b].qs[16 * g + l];
                }
                sums_ok += s == qbuf[b].bsums[g];
            }
            CU_ASSERT_EQUAL(sums_ok, 16);
            size_t arg = 0;
            float amax = 0;
            for (size_t j = 0; j < 256; ++j) {
                if (fabsf(xbuf[256 * b + j]) > amax) {
                    amax = fabsf(xbuf[256 * b + j]);
                    arg = j;
                }
            }
            if (amax > 1e-30f) {
                CU_ASSERT_EQUAL(qbuf[b].qs[arg], -127);
            }
        }
    }
    /* An all-zero block: d = 0, codes 0, and bsums zeroed (ggml leaves them
     * unwritten; anvil writes every byte). */
    memset(xbuf, 0, 256 * sizeof(float));
    memset(qbuf, 0x5A, sizeof qbuf[0]);
    anvil_ref_quantize_q8_K(xbuf, qbuf, 256);
    static const anvil_block_q8_K zero;
    CU_ASSERT_EQUAL(memcmp(&qbuf[0], &zero, sizeof zero), 0);
    /* A max so small that -127/max overflows: all codes 0, no trap. */
    for (size_t j = 0; j < 256; ++j) {
        xbuf[j] = (j % 3 == 0) ? 1e-39f : -2e-40f;
    }
    anvil_ref_quantize_q8_K(xbuf, qbuf, 256);
    size_t z = 0;
    for (size_t j = 0; j < 256; ++j) {
        z += qbuf[0].qs[j] == 0;
    }
    CU_ASSERT_EQUAL(z, 256);
    CU_ASSERT(qbuf[0].d == 0.0f);
    /* The encoder and the quantizer agree on finite input. */
    test_input_fill(xbuf, 2048, INPUT_LLM_LIKE, 3, 1);
    anvil_ref_quantize_q8_K(xbuf, qbuf, 2048);
    CU_ASSERT_EQUAL(anvil_ref_encode_q8_K(xbuf, wbuf, 2048, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(wbuf, qbuf, 8 * sizeof(anvil_block_q8_K)), 0);
}

/* ---- dots ----------------------------------------------------------- */

/* The dot equals sum(decode(w) * decode(a)) computed in double, within
 * 1e-5 of the term scale (and exactly 0 against a zero activation). */
static void test_dot_matches_decoded(void) {
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const fmt *f = &formats[i];
        if (f->dot == NULL) {
            continue;
        }
        size_t bad = 0;
        for (uint64_t r = 0; r < 64; ++r) {
            const size_t nb = 1 + r % MAX_BLOCKS;
            const size_t n = nb * ANVIL_QK_K;
            test_input_fill(xbuf, n, (test_input_kind)(r % INPUT_KIND_COUNT), 21, r);
            test_input_fill(abuf, n, (test_input_kind)((r * 5 + 3) % INPUT_KIND_COUNT), 22, r);
            CU_ASSERT_EQUAL_FATAL(f->encode(xbuf, wbuf, n, NULL, 0), ANVIL_OK);
            anvil_ref_quantize_q8_K(abuf, qbuf, n);
            f->decode(wbuf, ybuf, n);
            anvil_ref_decode_q8_K(qbuf, abuf, n);
            double ref = 0;
            for (size_t j = 0; j < n; ++j) {
                ref += (double)ybuf[j] * (double)abuf[j];
            }
            float s = NAN;
            f->dot(n, &s, wbuf, qbuf);
            const double S = kq_dot_term_scale(f->type_id, wbuf, qbuf, nb);
            const double tol = 1e-5 * fmax(S, fabs(ref));
            if (!(fabs((double)s - ref) <= tol)) {
                if (bad++ == 0) {
                    fprintf(stderr, "\n  %s dot row %llu: %.9g, decoded %.9g (S %.3g)\n", f->name,
                            (unsigned long long)r, s, ref, S);
                }
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* Zero activations give exactly 0. */
        test_input_fill(xbuf, 512, INPUT_NORMAL, 1, 1);
        CU_ASSERT_EQUAL(f->encode(xbuf, wbuf, 512, NULL, 0), ANVIL_OK);
        memset(abuf, 0, 512 * sizeof(float));
        anvil_ref_quantize_q8_K(abuf, qbuf, 512);
        float s = NAN;
        f->dot(512, &s, wbuf, qbuf);
        CU_ASSERT(s == 0.0f);
    }
}

/* ---- decoders on arbitrary bytes ------------------------------------ */

static void test_decode_any_bytes(void) {
    test_rng rng;
    test_rng_seed(&rng, 1234);
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const fmt *f = &formats[i];
        for (int r = 0; r < 50; ++r) {
            const size_t nb = 1 + (size_t)r % MAX_BLOCKS;
            for (size_t j = 0; j < nb * f->block_bytes; ++j) {
                wbuf[j] = (uint8_t)(test_rng_u64(&rng) >> 56);
            }
            /* Keep the scales finite: then so is every decoded value. */
            for (size_t b = 0; b < nb; ++b) {
                uint8_t *blk = wbuf + b * f->block_bytes;
                if (f->type_id == ANVIL_TYPE_Q8_K) {
                    const float d = 0.5f;
                    memcpy(blk, &d, sizeof d);
                } else {
                    /* f16 fields: clear one exponent bit so none is Inf/NaN. */
                    size_t offs[2] = { 0, 0 };
                    int k = 0;
                    switch (f->type_id) {
                    case ANVIL_TYPE_Q2_K:
                        offs[k++] = offsetof(anvil_block_q2_K, d);
                        offs[k++] = offsetof(anvil_block_q2_K, dmin);
                        break;
                    case ANVIL_TYPE_Q3_K: offs[k++] = offsetof(anvil_block_q3_K, d); break;
                    case ANVIL_TYPE_Q4_K:
                        offs[k++] = offsetof(anvil_block_q4_K, d);
                        offs[k++] = offsetof(anvil_block_q4_K, dmin);
                        break;
                    case ANVIL_TYPE_Q5_K:
                        offs[k++] = offsetof(anvil_block_q5_K, d);
                        offs[k++] = offsetof(anvil_block_q5_K, dmin);
                        break;
                    default: offs[k++] = offsetof(anvil_block_q6_K, d); break;
                    }
                    for (int m = 0; m < k; ++m) {
                        blk[offs[m] + 1] &= 0xBF;
                    }
                }
            }
            f->decode(wbuf, ybuf, nb * ANVIL_QK_K);
            size_t finite = 0;
            for (size_t j = 0; j < nb * ANVIL_QK_K; ++j) {
                finite += isfinite(ybuf[j]) != 0;
            }
            CU_ASSERT_EQUAL(finite, nb * ANVIL_QK_K);
        }
    }
}

/* ---- importance-weighted row encoders --------------------------------- */

/* ggml_quantize_chunk's bytes with synthetic importance matrices (and a few
 * rows without), from tests/golden/imatrix, plus the encode_rows contract. */
static void test_imatrix_golden_and_contract(void) {
    size_t n = 0;
    const anvil_plugin_desc *d = anvil_plugin_entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_EQUAL(imatrix_plugin_check(d, test_source_path("golden/imatrix"), &n), 0);
    CU_ASSERT_EQUAL(n, 5);
}

/* ---- plugin descriptor and kernel table ----------------------------- */

static void test_plugin_descriptor(void) {
    const anvil_plugin_desc *d = anvil_plugin_entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_PTR_NULL(anvil_plugin_entry(ANVIL_ABI_MAJOR + 1, 0));
    CU_ASSERT_STRING_EQUAL(d->id, "codec-kquants");
    CU_ASSERT_EQUAL(d->kind, ANVIL_PLUGIN_CODEC);
    CU_ASSERT_EQUAL(d->struct_size, sizeof(anvil_plugin_desc));
    CU_ASSERT_EQUAL(d->n_backends, 0);
    CU_ASSERT_EQUAL_FATAL(d->n_codecs, N_FORMATS);
    for (size_t i = 0; i < d->n_codecs; ++i) {
        const anvil_codec *c = d->codecs[i];
        const fmt *f = &formats[i];
        CU_ASSERT_EQUAL(c->struct_size, sizeof(anvil_codec));
        CU_ASSERT_EQUAL(c->type_id, f->type_id);
        CU_ASSERT_STRING_EQUAL(c->name, f->name);
        CU_ASSERT_EQUAL(c->block_elems, ANVIL_QK_K);
        CU_ASSERT_EQUAL(c->block_bytes, f->block_bytes);
        CU_ASSERT_EQUAL(c->act_type, ANVIL_TYPE_Q8_K);
        CU_ASSERT_EQUAL(c->flags, f->type_id == ANVIL_TYPE_Q8_K ? ANVIL_CODEC_ACTIVATION : 0u);
        CU_ASSERT(c->encode_rows == f->encode_rows);
        CU_ASSERT(c->encode == f->encode);
        CU_ASSERT(c->decode == f->decode);
        CU_ASSERT_PTR_NULL(c->ref_vec_dot);
    }
    /* backend-scalar's table for this family. */
    size_t nq = 0, nk = 0;
    for (; anvil_scalar_quantizers_kquants[nq] != NULL; ++nq) {
        CU_ASSERT_EQUAL(anvil_scalar_quantizers_kquants[nq]->act_type, ANVIL_TYPE_Q8_K);
        CU_ASSERT(anvil_scalar_quantizers_kquants[nq]->quantize == anvil_ref_quantize_q8_K);
    }
    CU_ASSERT_EQUAL(nq, 1);
    for (; anvil_scalar_kernels_kquants[nk] != NULL; ++nk) {
        const anvil_kernel *k = anvil_scalar_kernels_kquants[nk];
        CU_ASSERT_EQUAL(k->weight_type, formats[nk].type_id);
        CU_ASSERT_EQUAL(k->act_type, ANVIL_TYPE_Q8_K);
        CU_ASSERT(k->vec_dot == formats[nk].dot);
    }
    CU_ASSERT_EQUAL(nk, 5);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 1;
    }
    CU_pSuite golden = CU_add_suite("kquants golden (ggml parity offline)", NULL, NULL);
    CU_pSuite edge = CU_add_suite("kquants edge cases", NULL, NULL);
    if (golden == NULL || edge == NULL) {
        CU_cleanup_registry();
        return 1;
    }
    CU_add_test(golden, "q2_K golden", test_golden_q2_K);
    CU_add_test(golden, "q3_K golden", test_golden_q3_K);
    CU_add_test(golden, "q4_K golden", test_golden_q4_K);
    CU_add_test(golden, "q5_K golden", test_golden_q5_K);
    CU_add_test(golden, "q6_K golden", test_golden_q6_K);
    CU_add_test(golden, "q8_K golden", test_golden_q8_K);
    CU_add_test(edge, "non-finite refused with index", test_refuse_nonfinite);
    CU_add_test(edge, "bad length refused", test_refuse_length);
    CU_add_test(edge, "round-trip error bounds", test_round_trip_bounds);
    CU_add_test(edge, "degenerate blocks", test_degenerate_blocks);
    CU_add_test(edge, "q8_K structure", test_q8_K_structure);
    CU_add_test(edge, "dot == decoded dot", test_dot_matches_decoded);
    CU_add_test(edge, "decoders total on any bytes", test_decode_any_bytes);
    CU_add_test(golden, "imatrix goldens and encode_rows contract", test_imatrix_golden_and_contract);
    CU_add_test(edge, "plugin descriptor and kernel table", test_plugin_descriptor);
    return test_run_cunit();
}
