/* SPDX-License-Identifier: MIT */
/*
 * test_ternary: TQ1_0 TQ2_0 Q1_0 Q2_0 without ggml present.
 *
 *   golden      encode/decode/activation/dot against tests/golden/<type>.bin
 *               (written by anvil-parity from ggml itself)
 *   ternary     exactly-ternary rows {-s,0,+s} come back as {-1,0,+1}*f16(s);
 *               Q1_0 (sign only) keeps every sign with |w| = f16(mean |x|)
 *   refusal     NaN/Inf refused naming the index, partial blocks refused,
 *               nothing written on refusal
 *   quirks      ggml behaviours pinned by value, probed on the oracle: blocks
 *               whose 1/absmax overflows, ties, -0.0, the TQ1_0 byte layout
 *   bounds      round-trip error within half a step (+ f16 scale rounding)
 *   dots        the multiplication-free dots equal a plain multiply-and-add
 *               dot over decoded codes, bit for bit, on every byte pattern
 *   plugin      codec-ternary descriptor and backend-scalar's table
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
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"
#include "ref/ternary.h"
#include "test_env.h"

#define MAX_N 2048
#define DOT_REL_TOL 1e-5

typedef struct fmt {
    const char *name;
    uint32_t type;
    size_t block_elems;
    size_t block_bytes;
    size_t scale_offset;
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;
    uint32_t act_type;
    size_t act_block_elems;
    size_t act_block_bytes;
    anvil_quantize_fn act_quantize;
    anvil_decode_fn act_decode;
    int sign_only;
    anvil_encode_rows_fn encode_rows;
} fmt;

static const fmt formats[] = {
    { "tq1_0", ANVIL_TYPE_TQ1_0, 256, 54, offsetof(anvil_block_tq1_0, d), anvil_ref_encode_tq1_0,
      anvil_ref_decode_tq1_0, anvil_ref_vec_dot_tq1_0_q8_K, ANVIL_TYPE_Q8_K, 256, 292, anvil_ref_quantize_q8_K,
      anvil_ref_decode_q8_K, 0, anvil_ref_encode_rows_tq1_0 },
    { "tq2_0", ANVIL_TYPE_TQ2_0, 256, 66, offsetof(anvil_block_tq2_0, d), anvil_ref_encode_tq2_0,
      anvil_ref_decode_tq2_0, anvil_ref_vec_dot_tq2_0_q8_K, ANVIL_TYPE_Q8_K, 256, 292, anvil_ref_quantize_q8_K,
      anvil_ref_decode_q8_K, 0, anvil_ref_encode_rows_tq2_0 },
    { "q1_0", ANVIL_TYPE_Q1_0, 128, 18, offsetof(anvil_block_q1_0, d), anvil_ref_encode_q1_0, anvil_ref_decode_q1_0,
      anvil_ref_vec_dot_q1_0_q8_0, ANVIL_TYPE_Q8_0, 32, 34, anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0, 1,
      anvil_ref_encode_rows_q1_0 },
    { "q2_0", ANVIL_TYPE_Q2_0, 64, 18, offsetof(anvil_block_q2_0, d), anvil_ref_encode_q2_0, anvil_ref_decode_q2_0,
      anvil_ref_vec_dot_q2_0_q8_0, ANVIL_TYPE_Q8_0, 32, 34, anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0, 0,
      anvil_ref_encode_rows_q2_0 },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])
enum { F_TQ1_0, F_TQ2_0, F_Q1_0, F_Q2_0 };

static float x[MAX_N], dec[MAX_N], dec2[MAX_N], act[MAX_N];
static uint8_t enc[MAX_N], actq[MAX_N * 2];

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static float scale_of(const fmt *f, const uint8_t *blk) {
    anvil_half h;
    memcpy(&h, blk + f->scale_offset, sizeof h);
    return anvil_fp16_to_fp32(h);
}

static float f16_round(float v) { return anvil_fp16_to_fp32(anvil_fp32_to_fp16(v)); }

/* The size of what a dot accumulates: sum over weight blocks of |d_w| times
 * the activation mass under it. Two correct dots differing only in order
 * agree to a few ulps of this, not of a result that cancels to ~0. */
static double dot_magnitude(const fmt *f, const uint8_t *w, const void *a, size_t n) {
    static float ad[MAX_N];
    f->act_decode(a, ad, n);
    double m = 0.0;
    for (size_t b = 0; b < n / f->block_elems; ++b) {
        double sa = 0.0;
        for (size_t j = 0; j < f->block_elems; ++j) {
            sa += fabs((double)ad[b * f->block_elems + j]);
        }
        m += fabs((double)scale_of(f, w + b * f->block_bytes)) * sa;
    }
    return m;
}

/* ---- golden ------------------------------------------------------------ */

static void check_golden(const fmt *f) {
    char rel[64];
    snprintf(rel, sizeof rel, "golden/%s.bin", f->name);
    golden_file g;
    CU_ASSERT_FATAL(golden_load(test_source_path(rel), &g) == 0);
    CU_ASSERT_EQUAL(g.h.type_id, f->type);
    CU_ASSERT_EQUAL(g.h.act_type, f->act_type);
    CU_ASSERT_STRING_EQUAL(g.h.type_name, f->name);
    CU_ASSERT_EQUAL(g.h.row_len % f->block_elems, 0);
    CU_ASSERT_FATAL(g.h.row_len >= 256 && g.h.row_len <= MAX_N);
    const size_t n = g.h.row_len;
    CU_ASSERT_EQUAL(g.h.row_bytes, n / f->block_elems * f->block_bytes);
    CU_ASSERT_EQUAL(g.h.act_row_bytes, n / f->act_block_elems * f->act_block_bytes);
    CU_ASSERT(g.h.n_rows >= 48);

    /* the activation quantizer anvil uses gives ggml's bytes */
    memset(actq, 0x5A, g.h.act_row_bytes);
    f->act_quantize(g.act, actq, n);
    CU_ASSERT(memcmp(actq, g.act_q, g.h.act_row_bytes) == 0);

    size_t encoded = 0, enc_bad = 0, dec_bad = 0, dot_bad = 0;
    unsigned kinds = 0;
    for (uint32_t i = 0; i < g.h.n_rows; ++i) {
        golden_record r;
        golden_record_at(&g, i, &r);
        if (r.flags & GOLDEN_REC_ENCODED) {
            encoded++;
            kinds |= 1u << (r.kind & 31u);
            char msg[256];
            memset(enc, 0xA5, g.h.row_bytes);
            const int rc = f->encode(r.in, enc, n, msg, sizeof msg);
            if (rc != ANVIL_OK || memcmp(enc, r.enc, g.h.row_bytes) != 0) {
                enc_bad++;
                fprintf(stderr, "%s golden record %u (%s): encode differs\n", f->name, i,
                        test_input_kind_name((test_input_kind)r.kind));
            }
        }
        f->decode(r.enc, dec, n);
        for (size_t j = 0; j < n; ++j) {
            if (!same_bits(dec[j], r.dec[j])) {
                dec_bad++;
                fprintf(stderr, "%s golden record %u: element %zu decodes %a, ggml %a\n", f->name, i, j, dec[j],
                        r.dec[j]);
                break;
            }
        }
        /* the recorded dot is ggml's portable C (no FMA) build's, which
         * anvil equals bit for bit; the 1e-5 bound is the contract for any
         * other kernel */
        float s = NAN;
        f->dot(n, &s, r.enc, g.act_q);
        const double m = dot_magnitude(f, r.enc, g.act_q, n);
        const double big = fmax(fmax(fabs((double)s), fabs((double)r.dot)), m);
        const double e = big > 0.0 ? fabs((double)s - (double)r.dot) / big : 0.0;
        CU_ASSERT(same_bits(s, r.dot));
        if (!(e <= DOT_REL_TOL)) {
            dot_bad++;
            fprintf(stderr, "%s golden record %u: dot %.9g vs ggml %.9g (M %.6g)\n", f->name, i, (double)s,
                    (double)r.dot, m);
        }
    }
    CU_ASSERT(encoded >= 48);
    CU_ASSERT_EQUAL(kinds, (1u << INPUT_KIND_COUNT) - 1u); /* every input kind */
    CU_ASSERT_EQUAL(enc_bad, 0);
    CU_ASSERT_EQUAL(dec_bad, 0);
    CU_ASSERT_EQUAL(dot_bad, 0);
    golden_free(&g);
}

static void test_golden_tq1_0(void) { check_golden(&formats[F_TQ1_0]); }
static void test_golden_tq2_0(void) { check_golden(&formats[F_TQ2_0]); }
static void test_golden_q1_0(void) { check_golden(&formats[F_Q1_0]); }
static void test_golden_q2_0(void) { check_golden(&formats[F_Q2_0]); }

/* ---- exactly-ternary input --------------------------------------------- */

/* {-s, 0, +s} with s drawn across the f16 range: values that round in f16,
 * f16 subnormals, powers of two, the f16 maximum. */
static float pick_scale(test_rng *r, unsigned k) {
    static const float fixed[] = { 1.0f, 0.5f, 65504.0f, 3.0e-5f, 1.0e-7f, 0.1f, 1.0f / 3.0f, 2.0e4f, 7.0f, 6.1e-5f };
    if (k < sizeof fixed / sizeof fixed[0]) {
        return fixed[k];
    }
    return powf(2.0f, -20.0f + 35.0f * test_rng_uniform(r)) * (1.0f + test_rng_uniform(r));
}

static void test_ternary_exact(void) {
    test_rng r;
    test_rng_seed(&r, 10);
    size_t rows = 0, bad = 0;
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        if (f->sign_only) {
            continue;
        }
        for (unsigned k = 0; k < 200; ++k) {
            const size_t n = 512;
            const float s = pick_scale(&r, k);
            for (size_t j = 0; j < n; ++j) {
                const unsigned t = (unsigned)(test_rng_u64(&r) % 3);
                x[j] = t == 0 ? -s : (t == 1 ? 0.0f : s);
            }
            /* one +s per block, so every block's absmax is s */
            for (size_t b = 0; b < n; b += f->block_elems) {
                x[b] = s;
            }
            CU_ASSERT_FATAL(f->encode(x, enc, n, NULL, 0) == ANVIL_OK);
            f->decode(enc, dec, n);
            const float sh = f16_round(s);
            rows++;
            for (size_t j = 0; j < n; ++j) {
                const float want = x[j] > 0.0f ? sh : (x[j] < 0.0f ? -sh : 0.0f);
                if (!(dec[j] == want)) {
                    bad++;
                    fprintf(stderr, "%s: ternary s=%a element %zu: %a, want %a\n", f->name, s, j, dec[j], want);
                    break;
                }
            }
        }
    }
    CU_ASSERT_EQUAL(rows, 600);
    CU_ASSERT_EQUAL(bad, 0);

    /* also the shared generator's ternary rows (what parity and goldens use) */
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        if (f->sign_only) {
            continue;
        }
        for (uint64_t row = 0; row < 50; ++row) {
            test_input_fill(x, 1024, INPUT_TERNARY, 3, row);
            CU_ASSERT_FATAL(f->encode(x, enc, 1024, NULL, 0) == ANVIL_OK);
            f->decode(enc, dec, 1024);
            for (size_t b = 0; b < 1024; b += f->block_elems) {
                float s = 0.0f;
                for (size_t j = 0; j < f->block_elems; ++j) {
                    s = fmaxf(s, fabsf(x[b + j]));
                }
                const float sh = f16_round(s);
                for (size_t j = 0; j < f->block_elems; ++j) {
                    const float v = x[b + j];
                    CU_ASSERT(dec[b + j] == (v > 0.0f ? sh : (v < 0.0f ? -sh : 0.0f)));
                }
            }
        }
    }
}

/* Q1_0 has no zero: a {-s, +s} row keeps every sign and one magnitude per
 * block, f16(mean |x|), which is s exactly when s is a power of two. */
static void test_q1_0_signs(void) {
    const fmt *f = &formats[F_Q1_0];
    test_rng r;
    test_rng_seed(&r, 11);
    for (unsigned k = 0; k < 100; ++k) {
        const size_t n = 512;
        const float s = k < 20 ? ldexpf(1.0f, (int)k - 10) : pick_scale(&r, k);
        for (size_t j = 0; j < n; ++j) {
            x[j] = (test_rng_u64(&r) & 1) ? s : -s;
        }
        CU_ASSERT_FATAL(f->encode(x, enc, n, NULL, 0) == ANVIL_OK);
        f->decode(enc, dec, n);
        for (size_t j = 0; j < n; ++j) {
            const float mag = fabsf(dec[j - j % 128]);
            CU_ASSERT(dec[j] == (x[j] > 0.0f ? mag : -mag));
        }
        if (k < 20) {
            CU_ASSERT(fabsf(dec[0]) == f16_round(s));
        }
    }
    /* ternary input: zeros (and -0.0) decode as +d */
    test_input_fill(x, 512, INPUT_TERNARY, 5, 0);
    x[1] = -0.0f;
    CU_ASSERT_FATAL(f->encode(x, enc, 512, NULL, 0) == ANVIL_OK);
    f->decode(enc, dec, 512);
    for (size_t j = 0; j < 512; ++j) {
        CU_ASSERT(dec[j] == (x[j] >= 0.0f ? fabsf(dec[j]) : -fabsf(dec[j])));
    }
    CU_ASSERT(dec[1] > 0.0f);
}

/* ---- refusal ----------------------------------------------------------- */

static void test_refuses_nonfinite(void) {
    const float bad_values[3] = { NAN, INFINITY, -INFINITY };
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const size_t n = 3 * f->block_elems;
        const size_t at_list[4] = { 0, 1, f->block_elems + 5, n - 1 };
        for (int v = 0; v < 3; ++v) {
            for (int a = 0; a < 4; ++a) {
                test_input_fill(x, n, INPUT_NORMAL, 1, (uint64_t)a);
                x[at_list[a]] = bad_values[v];
                memset(enc, 0xCD, n);
                char msg[256] = "";
                CU_ASSERT_EQUAL(f->encode(x, enc, n, msg, sizeof msg), ANVIL_E_NONFINITE);
                char want[64];
                snprintf(want, sizeof want, "element %zu is %s", at_list[a],
                         v == 0 ? "NaN" : (v == 1 ? "+Inf" : "-Inf"));
                CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
                CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
                /* nothing written */
                size_t touched = 0;
                for (size_t j = 0; j < n / f->block_elems * f->block_bytes; ++j) {
                    touched += enc[j] != 0xCD;
                }
                CU_ASSERT_EQUAL(touched, 0);
                /* msg may be NULL */
                CU_ASSERT_EQUAL(f->encode(x, enc, n, NULL, 0), ANVIL_E_NONFINITE);
            }
        }
    }
}

static void test_refuses_bad_length(void) {
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        test_input_fill(x, 4 * f->block_elems, INPUT_NORMAL, 2, 0);
        const size_t lens[5] = { 1, 32, f->block_elems - 1, f->block_elems + 1, 3 * f->block_elems / 2 };
        for (int k = 0; k < 5; ++k) {
            if (lens[k] % f->block_elems == 0) {
                continue;
            }
            memset(enc, 0xCD, 64);
            char msg[256] = "";
            CU_ASSERT_EQUAL(f->encode(x, enc, lens[k], msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
            CU_ASSERT_EQUAL(enc[0], 0xCD);
        }
        /* zero elements is a whole number of blocks: nothing to do */
        CU_ASSERT_EQUAL(f->encode(x, enc, 0, NULL, 0), ANVIL_OK);
    }
}

/* ---- quirks pinned from the oracle -------------------------------------- */

/* A block whose absmax is below ~2.9e-39 has 1/absmax = Inf, so x * id is
 * +-Inf or NaN. ggml (x86-64) then writes the "zero" trit for TQ*, code 0
 * (-1) for Q2_0, and an f16 scale of 0. Bytes probed on ggml 3.22.1. */
static void test_tiny_blocks(void) {
    for (size_t j = 0; j < 256; ++j) {
        x[j] = j % 3 == 0 ? 2e-39f : (j % 3 == 1 ? 0.0f : -1e-39f);
    }
    CU_ASSERT_FATAL(anvil_ref_encode_tq1_0(x, enc, 256, NULL, 0) == ANVIL_OK);
    for (size_t j = 0; j < 48; ++j) {
        CU_ASSERT_EQUAL(enc[j], 0x80);
    }
    for (size_t j = 48; j < 52; ++j) {
        CU_ASSERT_EQUAL(enc[j], 0x7f);
    }
    CU_ASSERT(enc[52] == 0 && enc[53] == 0);

    CU_ASSERT_FATAL(anvil_ref_encode_tq2_0(x, enc, 256, NULL, 0) == ANVIL_OK);
    for (size_t j = 0; j < 64; ++j) {
        CU_ASSERT_EQUAL(enc[j], 0x55);
    }
    CU_ASSERT(enc[64] == 0 && enc[65] == 0);

    CU_ASSERT_FATAL(anvil_ref_encode_q2_0(x, enc, 64, NULL, 0) == ANVIL_OK);
    for (size_t j = 0; j < 18; ++j) {
        CU_ASSERT_EQUAL(enc[j], 0x00);
    }
    anvil_ref_decode_q2_0(enc, dec, 64);
    CU_ASSERT(dec[0] == 0.0f && signbit(dec[0])); /* (0 - 1) * +0 = -0 */

    /* Q1_0 takes no reciprocal: signs survive, the f16 mean is 0 */
    CU_ASSERT_FATAL(anvil_ref_encode_q1_0(x, enc, 128, NULL, 0) == ANVIL_OK);
    CU_ASSERT(enc[0] == 0 && enc[1] == 0);
    CU_ASSERT_EQUAL(enc[2], 0xDB); /* elements 0..7: +,+(0),-,+,+,-,+,+ -> bits 0,1,3,4,6,7 */
}

/* Ties round half away from zero (lroundf / roundf): a Q2_0 ramp probed on
 * the oracle, and the same ties in TQ2_0. */
static void test_ties(void) {
    for (int j = 0; j < 64; ++j) {
        x[j] = (float)(j - 32) / 32.0f;
    }
    x[5] = 0.5f;
    x[6] = -0.5f;
    x[7] = 0.49999997f;
    CU_ASSERT_FATAL(anvil_ref_encode_q2_0(x, enc, 64, NULL, 0) == ANVIL_OK);
    static const uint8_t want[18] = { 0x00, 0x3c, 0x00, 0x48, 0x00, 0x00, 0x54, 0x55, 0x55,
                                      0x55, 0x55, 0x55, 0x55, 0x55, 0xaa, 0xaa, 0xaa, 0xaa };
    CU_ASSERT(memcmp(enc, want, sizeof want) == 0);

    /* TQ2_0: amax 1, x = +-0.5 -> +-1, 0.49999997 -> 0 */
    memset(x, 0, 256 * sizeof x[0]);
    x[0] = 1.0f;
    x[32] = 0.5f;  /* byte 0, pair 1 */
    x[64] = -0.5f; /* byte 0, pair 2 */
    x[96] = 0.49999997f;
    CU_ASSERT_FATAL(anvil_ref_encode_tq2_0(x, enc, 256, NULL, 0) == ANVIL_OK);
    CU_ASSERT_EQUAL(enc[0], 2u | (2u << 2) | (0u << 4) | (1u << 6));
}

/* The TQ1_0 layout: trit t of byte m in the 32-byte group is element
 * 32*t + m, most significant first, stored as ceil(q * 256 / 243). */
static void test_tq1_0_layout(void) {
    memset(x, 0, 256 * sizeof x[0]);
    x[0] = 1.0f;    /* byte 0, trit 0: +1 (digit 2) */
    x[32] = -1.0f;  /* byte 0, trit 1: -1 (digit 0) */
    x[160] = 1.0f;  /* byte 32, trit 0 */
    x[240] = -1.0f; /* qh byte 0, trit 0 */
    x[255] = 1.0f;  /* qh byte 3, trit 3 */
    CU_ASSERT_FATAL(anvil_ref_encode_tq1_0(x, enc, 256, NULL, 0) == ANVIL_OK);
    /* byte 0: digits 2,0,1,1,1 = 2*81 + 0*27 + 9 + 3 + 1 = 175 */
    CU_ASSERT_EQUAL(enc[0], (175 * 256 + 242) / 243);
    /* byte 1: all zero trits: 121 */
    CU_ASSERT_EQUAL(enc[1], (121 * 256 + 242) / 243);
    /* byte 32: 2,1,1,1,1 = 162+27+9+3+1 = 202 */
    CU_ASSERT_EQUAL(enc[32], (202 * 256 + 242) / 243);
    /* qh byte 0: 0,1,1,1 then a zero digit: (0*27+9+3+1)*3 = 39 */
    CU_ASSERT_EQUAL(enc[48], (39 * 256 + 242) / 243);
    /* qh byte 3: 1,1,1,2 -> (27+9+3+2)*3 = 123 */
    CU_ASSERT_EQUAL(enc[51], (123 * 256 + 242) / 243);
    anvil_ref_decode_tq1_0(enc, dec, 256);
    for (size_t j = 0; j < 256; ++j) {
        CU_ASSERT(dec[j] == x[j]);
    }
}

/* Decoders are total and keep ggml's float semantics: (c - 1) * d, so a
 * zero code times a negative scale is -0.0 and times Inf is NaN. */
static void test_decode_any_scale(void) {
    anvil_block_tq2_0 b;
    memset(b.qs, 0x55, sizeof b.qs); /* all code 1: weight 0 */
    b.qs[0] = 0xE4;                  /* codes 0,1,2,3 */
    b.d = 0xC000;                    /* -2.0 */
    anvil_ref_decode_tq2_0(&b, dec, 256);
    CU_ASSERT(dec[0] == 2.0f);
    CU_ASSERT(dec[32] == 0.0f && signbit(dec[32]));
    CU_ASSERT(dec[64] == -2.0f);
    CU_ASSERT(dec[96] == -4.0f);
    b.d = 0x7C00; /* +Inf */
    anvil_ref_decode_tq2_0(&b, dec, 256);
    CU_ASSERT(isinf(dec[0]) && dec[0] < 0);
    CU_ASSERT(isnan(dec[1]));

    /* TQ1_0 bytes >= 243 are not produced by the encoder; ggml reads their
     * digits all the same: 255 -> trits 2,2,2,2,2 ... carries */
    anvil_block_tq1_0 t;
    memset(&t, 0, sizeof t);
    t.qs[0] = 255;
    t.d = 0x3C00; /* 1.0 */
    anvil_ref_decode_tq1_0(&t, dec, 256);
    unsigned q = 255;
    for (int k = 0; k < 5; ++k) {
        const unsigned w = q * 3;
        CU_ASSERT(dec[32 * k] == (float)((int)(w >> 8) - 1));
        q = w & 0xff;
    }
}

/* ---- bounds ------------------------------------------------------------ */

static void test_roundtrip_bounds(void) {
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        size_t bad = 0;
        for (int kind = 0; kind < (int)INPUT_KIND_COUNT; ++kind) {
            for (uint64_t row = 0; row < 8; ++row) {
                const size_t n = 1024;
                test_input_fill(x, n, (test_input_kind)kind, 77, row);
                CU_ASSERT_FATAL(f->encode(x, enc, n, NULL, 0) == ANVIL_OK);
                f->decode(enc, dec, n);
                for (size_t b = 0; b < n; b += f->block_elems) {
                    float amax = 0.0f;
                    double mean = 0.0;
                    for (size_t j = 0; j < f->block_elems; ++j) {
                        amax = fmaxf(amax, fabsf(x[b + j]));
                        mean += fabs((double)x[b + j]);
                    }
                    mean /= (double)f->block_elems;
                    for (size_t j = 0; j < f->block_elems; ++j) {
                        const float v = x[b + j], w = dec[b + j];
                        int ok;
                        if (f->sign_only) {
                            /* sign kept (also of a zero scale: -d is -0.0),
                             * |w| the block's f16 mean |x| */
                            ok = (signbit(w) == 0) == (v >= 0.0f) &&
                                 fabs(fabs((double)w) - mean) <= mean * 0x1p-10 + 0x1p-24;
                        } else if (amax < 0x1p-128f) {
                            ok = w == 0.0f; /* 1/absmax overflowed: all zero (ggml) */
                        } else {
                            /* half a step plus the f16 rounding of the scale */
                            ok = fabsf(w - v) <= amax * (0.5f + 0x1p-10f) + 0x1p-24f;
                        }
                        if (!ok) {
                            if (bad++ < 3) {
                                fprintf(stderr, "%s %s row %llu: x %g -> %g (amax %g)\n", f->name,
                                        test_input_kind_name((test_input_kind)kind), (unsigned long long)row, v, w,
                                        amax);
                            }
                        }
                    }
                }
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
    }
}

/* ---- dots -------------------------------------------------------------- */

/* A plain reference dot: codes read back by decoding a copy of each block
 * with its scale set to 1.0 (so the decoder yields c - 1 exactly), then
 * multiplied and summed in int, and scaled in float exactly as ggml's C
 * does. Independent of the kernels' bit-plane and select tricks, so it must
 * agree bit for bit. */
static float reference_dot(const fmt *f, const uint8_t *w, const void *a, size_t n) {
    uint8_t blk[80];
    float codes[256];
    float sumf = 0.0f;
    for (size_t b = 0; b < n / f->block_elems; ++b) {
        memcpy(blk, w + b * f->block_bytes, f->block_bytes);
        const anvil_half one = 0x3C00;
        memcpy(blk + f->scale_offset, &one, sizeof one);
        f->decode(blk, codes, f->block_elems);
        const float d0 = scale_of(f, w + b * f->block_bytes);
        if (f->act_type == ANVIL_TYPE_Q8_K) {
            const anvil_block_q8_K *y = (const anvil_block_q8_K *)a + b;
            int sum = 0;
            for (size_t j = 0; j < 256; ++j) {
                sum += (int)codes[j] * y->qs[j];
            }
            if (f->type == ANVIL_TYPE_TQ1_0) {
                sumf += (float)sum * (d0 * y->d);
            } else {
                sumf += (float)sum * (y->d * d0);
            }
        } else {
            const anvil_block_q8_0 *y = (const anvil_block_q8_0 *)a + b * (f->block_elems / 32);
            float sumi = 0.0f;
            for (size_t k = 0; k < f->block_elems / 32; ++k) {
                int s = 0;
                for (size_t j = 0; j < 32; ++j) {
                    s += (int)codes[k * 32 + j] * y[k].qs[j];
                }
                sumi += anvil_fp16_to_fp32(y[k].d) * (float)s;
            }
            sumf += d0 * sumi;
        }
    }
    return sumf;
}

static void test_dot_matches_reference(void) {
    test_rng r;
    test_rng_seed(&r, 12);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        size_t bad = 0, checked = 0;
        for (unsigned k = 0; k < 400; ++k) {
            const size_t nb = 1 + (size_t)(test_rng_u64(&r) % (1024 / f->block_elems));
            const size_t n = nb * f->block_elems;
            if (k % 2 == 0) {
                /* random bytes: TQ1_0 bytes >= 243, 2-bit code 3, any sign */
                for (size_t j = 0; j < nb * f->block_bytes; ++j) {
                    enc[j] = (uint8_t)test_rng_u64(&r);
                }
                for (size_t b = 0; b < nb; ++b) {
                    const anvil_half h =
                        (anvil_half)((test_rng_u64(&r) & 0x83FFu) | ((1u + test_rng_u64(&r) % 29u) << 10));
                    memcpy(enc + b * f->block_bytes + f->scale_offset, &h, sizeof h);
                }
            } else {
                test_input_fill(x, n, (test_input_kind)(k / 2 % INPUT_KIND_COUNT), 9, k);
                CU_ASSERT_FATAL(f->encode(x, enc, n, NULL, 0) == ANVIL_OK);
            }
            test_input_fill(act, n, (test_input_kind)((k * 7 + 1) % INPUT_KIND_COUNT), 8, k);
            f->act_quantize(act, actq, n);
            float s = NAN;
            f->dot(n, &s, enc, actq);
            const float want = reference_dot(f, enc, actq, n);
            checked++;
            if (!same_bits(s, want)) {
                if (bad++ < 3) {
                    fprintf(stderr, "%s dot n=%zu: %.9g, reference %.9g\n", f->name, n, s, want);
                }
            }
        }
        CU_ASSERT_EQUAL(checked, 400);
        CU_ASSERT_EQUAL(bad, 0);
    }
}

/* Unaligned buffers: blocks are byte-packed in files, so kernels and codecs
 * must not assume alignment. */
static void test_unaligned(void) {
    static uint8_t wbuf[MAX_N + 8], abuf[MAX_N * 2 + 8];
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const size_t n = 512;
        const size_t wbytes = n / f->block_elems * f->block_bytes;
        const size_t abytes = n / f->act_block_elems * f->act_block_bytes;
        test_input_fill(x, n, INPUT_NORMAL, 4, fi);
        test_input_fill(act, n, INPUT_LLM_LIKE, 4, fi);
        CU_ASSERT_FATAL(f->encode(x, enc, n, NULL, 0) == ANVIL_OK);
        CU_ASSERT_FATAL(f->encode(x, wbuf + 1, n, NULL, 0) == ANVIL_OK);
        CU_ASSERT(memcmp(enc, wbuf + 1, wbytes) == 0);
        f->act_quantize(act, actq, n);
        memcpy(abuf + 3, actq, abytes);
        float s1 = 0.0f, s2 = 1.0f;
        f->dot(n, &s1, enc, actq);
        f->dot(n, &s2, wbuf + 1, abuf + 3);
        CU_ASSERT(same_bits(s1, s2));
        f->decode(enc, dec, n);
        f->decode(wbuf + 1, dec2, n);
        CU_ASSERT(memcmp(dec, dec2, n * sizeof dec[0]) == 0);
    }
}

/* ---- plugin ------------------------------------------------------------ */

/* ---- importance-weighted row encoders ---------------------------------- */

/* ggml's quantize_tq1_0 .. quantize_q2_0 ignore the importance matrix: the
 * goldens (ggml_quantize_chunk with synthetic matrices) and the contract
 * check both hold the row encoders to that. */
static void test_imatrix_golden_and_contract(void) {
    size_t n = 0;
    const anvil_plugin_desc *d = anvil_plugin_entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_EQUAL(imatrix_plugin_check(d, test_source_path("golden/imatrix"), &n), 0);
    CU_ASSERT_EQUAL(n, 4);
}

static void test_codec_descriptor(void) {
    const anvil_plugin_desc *d = anvil_plugin_entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_FATAL(d != NULL);
    CU_ASSERT_PTR_NULL(anvil_plugin_entry(ANVIL_ABI_MAJOR + 1, 0));
    CU_ASSERT_EQUAL(d->struct_size, sizeof(anvil_plugin_desc));
    CU_ASSERT_EQUAL(d->kind, ANVIL_PLUGIN_CODEC);
    CU_ASSERT_STRING_EQUAL(d->id, "codec-ternary");
    CU_ASSERT_EQUAL(d->n_codecs, N_FORMATS);
    CU_ASSERT_EQUAL(d->n_backends, 0);
    for (size_t i = 0; i < d->n_codecs && i < N_FORMATS; ++i) {
        const anvil_codec *c = d->codecs[i];
        const fmt *f = &formats[i];
        CU_ASSERT_EQUAL(c->struct_size, sizeof(anvil_codec));
        CU_ASSERT_EQUAL(c->type_id, f->type);
        CU_ASSERT_STRING_EQUAL(c->name, f->name);
        CU_ASSERT_EQUAL(c->block_elems, f->block_elems);
        CU_ASSERT_EQUAL(c->block_bytes, f->block_bytes);
        CU_ASSERT_EQUAL(c->act_type, f->act_type);
        CU_ASSERT_EQUAL(c->flags, ANVIL_CODEC_IMATRIX_UNUSED); /* ggml ignores it */
        CU_ASSERT(c->encode_rows == f->encode_rows);
        CU_ASSERT(c->encode == f->encode);
        CU_ASSERT(c->decode == f->decode);
        CU_ASSERT_PTR_NULL(c->ref_vec_dot);
        CU_ASSERT_PTR_NULL(c->encode_note);
    }
}

static void test_kernel_table(void) {
    CU_ASSERT_PTR_NULL(anvil_scalar_quantizers_ternary[0]);
    size_t n = 0;
    while (anvil_scalar_kernels_ternary[n] != NULL) {
        ++n;
    }
    CU_ASSERT_EQUAL_FATAL(n, N_FORMATS);
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const anvil_kernel *k = anvil_scalar_kernels_ternary[i];
        CU_ASSERT_EQUAL(k->struct_size, sizeof(anvil_kernel));
        CU_ASSERT_EQUAL(k->weight_type, formats[i].type);
        CU_ASSERT_EQUAL(k->act_type, formats[i].act_type);
        CU_ASSERT(k->vec_dot == formats[i].dot);
    }
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 1;
    }
    CU_pSuite s = CU_add_suite("ternary family", NULL, NULL);
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        { "golden tq1_0", test_golden_tq1_0 },
        { "golden tq2_0", test_golden_tq2_0 },
        { "golden q1_0", test_golden_q1_0 },
        { "golden q2_0", test_golden_q2_0 },
        { "exactly-ternary rows round-trip", test_ternary_exact },
        { "q1_0 keeps signs", test_q1_0_signs },
        { "non-finite refused", test_refuses_nonfinite },
        { "bad length refused", test_refuses_bad_length },
        { "tiny blocks (1/absmax overflows)", test_tiny_blocks },
        { "ties round away from zero", test_ties },
        { "tq1_0 layout", test_tq1_0_layout },
        { "decode any scale", test_decode_any_scale },
        { "round-trip bounds", test_roundtrip_bounds },
        { "dots == plain reference dot", test_dot_matches_reference },
        { "unaligned buffers", test_unaligned },
        { "imatrix goldens and encode_rows contract", test_imatrix_golden_and_contract },
        { "codec descriptor", test_codec_descriptor },
        { "kernel table", test_kernel_table },
    };
    if (s == NULL) {
        CU_cleanup_registry();
        return 1;
    }
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            CU_cleanup_registry();
            return 1;
        }
    }
    return test_run_cunit();
}
