/* SPDX-License-Identifier: MIT */
/*
 * test_cold: the cold formats (IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS
 * IQ3_S IQ4_NL IQ4_XS MXFP4 NVFP4) without ggml.
 *
 *  tables    the committed codebooks have the structure their formats imply
 *  numeric   E8M0 / UE4M3 / E2M1 helpers of anvil/numeric.h, exhaustively
 *  golden    decode, encode, activation quantizer and dot against the ggml
 *            outputs committed in tests/golden/<type>.bin; importance-
 *            weighted encode_rows against tests/golden/imatrix/<type>.bin,
 *            with the encode_rows contract of tests/common/golden_imatrix.h
 *            (no importance matrix for IQ2_XXS IQ2_XS IQ1_S, bad weights,
 *            NaN naming row and element, lengths, the weights matter)
 *  rows      encode_rows beyond that: many rows = rows one by one, zero
 *            and infinite weights, -Inf, overflow
 *  encode    refusals (NaN/Inf, bad length), determinism, error bounds
 *  decode    totality on random bytes, any alignment
 *  dot       the dot equals the dot of the decoded rows
 *  plugin    codec-cold's descriptor and backend-scalar's cold kernel table
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <float.h>
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
#include "ref/cold.h"
#include "ref/cold_enc_grid.h"
#include "ref/cold_tables.h"
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"
#include "test_env.h"

#define MAX_ELEMS 4096

typedef struct fmt {
    const char *name;
    int type;
    size_t block_elems, block_bytes;
    anvil_encode_fn encode; /* NULL: only with an importance matrix */
    anvil_encode_rows_fn encode_rows;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;
    int act_type;
    size_t act_block_elems, act_block_bytes;
    void (*act_quantize)(const float *, void *, size_t);
    anvil_decode_fn act_decode;
    size_t scale_offset; /* binary16 scale; NO_SCALE: none or special */
    uint32_t flags;      /* expected codec flags */
} fmt;

#define NO_SCALE ((size_t)-1)
#define Q8K ANVIL_TYPE_Q8_K, ANVIL_QK_K, sizeof(anvil_block_q8_K), anvil_ref_quantize_q8_K, anvil_ref_decode_q8_K
#define Q80 ANVIL_TYPE_Q8_0, ANVIL_QK8_0, sizeof(anvil_block_q8_0), anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0

static const fmt formats[] = {
    { "iq2_xxs", ANVIL_TYPE_IQ2_XXS, ANVIL_QK_K, sizeof(anvil_block_iq2_xxs), NULL, anvil_ref_encode_rows_iq2_xxs,
      anvil_ref_decode_iq2_xxs, anvil_ref_vec_dot_iq2_xxs_q8_K, Q8K, offsetof(anvil_block_iq2_xxs, d),
      ANVIL_CODEC_NEEDS_IMATRIX },
    { "iq2_xs", ANVIL_TYPE_IQ2_XS, ANVIL_QK_K, sizeof(anvil_block_iq2_xs), NULL, anvil_ref_encode_rows_iq2_xs,
      anvil_ref_decode_iq2_xs, anvil_ref_vec_dot_iq2_xs_q8_K, Q8K, offsetof(anvil_block_iq2_xs, d),
      ANVIL_CODEC_NEEDS_IMATRIX },
    { "iq3_xxs", ANVIL_TYPE_IQ3_XXS, ANVIL_QK_K, sizeof(anvil_block_iq3_xxs), anvil_ref_encode_iq3_xxs,
      anvil_ref_encode_rows_iq3_xxs, anvil_ref_decode_iq3_xxs, anvil_ref_vec_dot_iq3_xxs_q8_K, Q8K,
      offsetof(anvil_block_iq3_xxs, d), 0 },
    { "iq1_s", ANVIL_TYPE_IQ1_S, ANVIL_QK_K, sizeof(anvil_block_iq1_s), NULL, anvil_ref_encode_rows_iq1_s,
      anvil_ref_decode_iq1_s, anvil_ref_vec_dot_iq1_s_q8_K, Q8K, offsetof(anvil_block_iq1_s, d),
      ANVIL_CODEC_NEEDS_IMATRIX },
    { "iq4_nl", ANVIL_TYPE_IQ4_NL, ANVIL_QK4_NL, sizeof(anvil_block_iq4_nl), anvil_ref_encode_iq4_nl,
      anvil_ref_encode_rows_iq4_nl, anvil_ref_decode_iq4_nl, anvil_ref_vec_dot_iq4_nl_q8_0, Q80,
      offsetof(anvil_block_iq4_nl, d), 0 },
    { "iq3_s", ANVIL_TYPE_IQ3_S, ANVIL_QK_K, sizeof(anvil_block_iq3_s), anvil_ref_encode_iq3_s,
      anvil_ref_encode_rows_iq3_s, anvil_ref_decode_iq3_s, anvil_ref_vec_dot_iq3_s_q8_K, Q8K,
      offsetof(anvil_block_iq3_s, d), 0 },
    { "iq2_s", ANVIL_TYPE_IQ2_S, ANVIL_QK_K, sizeof(anvil_block_iq2_s), anvil_ref_encode_iq2_s,
      anvil_ref_encode_rows_iq2_s, anvil_ref_decode_iq2_s, anvil_ref_vec_dot_iq2_s_q8_K, Q8K,
      offsetof(anvil_block_iq2_s, d), 0 },
    { "iq4_xs", ANVIL_TYPE_IQ4_XS, ANVIL_QK_K, sizeof(anvil_block_iq4_xs), anvil_ref_encode_iq4_xs,
      anvil_ref_encode_rows_iq4_xs, anvil_ref_decode_iq4_xs, anvil_ref_vec_dot_iq4_xs_q8_K, Q8K,
      offsetof(anvil_block_iq4_xs, d), 0 },
    { "iq1_m", ANVIL_TYPE_IQ1_M, ANVIL_QK_K, sizeof(anvil_block_iq1_m), anvil_ref_encode_iq1_m,
      anvil_ref_encode_rows_iq1_m, anvil_ref_decode_iq1_m, anvil_ref_vec_dot_iq1_m_q8_K, Q8K, NO_SCALE, 0 },
    { "mxfp4", ANVIL_TYPE_MXFP4, ANVIL_QK_MXFP4, sizeof(anvil_block_mxfp4), anvil_ref_encode_mxfp4,
      anvil_ref_encode_rows_mxfp4, anvil_ref_decode_mxfp4, anvil_ref_vec_dot_mxfp4_q8_0, Q80, NO_SCALE,
      ANVIL_CODEC_IMATRIX_UNUSED },
    { "nvfp4", ANVIL_TYPE_NVFP4, ANVIL_QK_NVFP4, sizeof(anvil_block_nvfp4), anvil_ref_encode_nvfp4,
      anvil_ref_encode_rows_nvfp4, anvil_ref_decode_nvfp4, anvil_ref_vec_dot_nvfp4_q8_0, Q80, NO_SCALE,
      ANVIL_CODEC_IMATRIX_UNUSED },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void random_bytes(test_rng *r, uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        p[i] = (uint8_t)(test_rng_u64(r) >> 56);
    }
}

/* Binary16 scales with exponent 31 (Inf/NaN) -> exponent 15. */
static void make_scales_finite(const fmt *f, uint8_t *p, size_t nb) {
    for (size_t i = 0; i < nb; ++i) {
        uint8_t *b = p + i * f->block_bytes;
        uint8_t *hi = NULL;
        if (f->type == ANVIL_TYPE_IQ1_M) {
            /* binary16 nibble k = top nibble of u16 word k; its exponent
             * (bits 10..14) spans words 2 and 3. */
            uint8_t *sc = b + offsetof(anvil_block_iq1_m, scales);
            const unsigned h = (unsigned)((sc[5] >> 4) << 8 | (sc[7] >> 4) << 12);
            if ((h & 0x7c00) == 0x7c00) {
                sc[7] &= (uint8_t)~0x40; /* binary16 bit 14 */
            }
        } else if (f->scale_offset != NO_SCALE) {
            hi = b + f->scale_offset + 1;
        }
        if (hi != NULL && (*hi & 0x7c) == 0x7c) {
            *hi &= (uint8_t)~0x40;
        }
    }
}

/* sum |w_i a_i| of the decoded rows, in double: the scale a dot's rounding
 * error is measured against. */
static double term_magnitude(const fmt *f, const void *w, const void *a, size_t n, double *exact) {
    static float wd[MAX_ELEMS], ad[MAX_ELEMS];
    f->decode(w, wd, n);
    f->act_decode(a, ad, n);
    double mag = 0.0, sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        mag += fabs((double)wd[i] * (double)ad[i]);
        sum += (double)wd[i] * (double)ad[i];
    }
    if (exact != NULL) {
        *exact = sum;
    }
    return mag;
}

/* ---- tables -------------------------------------------------------------- */

static int in_set(int v, const int *set, int n) {
    for (int i = 0; i < n; ++i) {
        if (v == set[i]) {
            return 1;
        }
    }
    return 0;
}

static void check_u8_grid(const uint8_t *g, int entries, int width, const int *levels, int n_levels) {
    int bad_values = 0, duplicates = 0;
    for (int e = 0; e < entries; ++e) {
        for (int j = 0; j < width; ++j) {
            bad_values += !in_set(g[e * width + j], levels, n_levels);
        }
        for (int k = 0; k < e; ++k) {
            duplicates += memcmp(g + e * width, g + k * width, (size_t)width) == 0;
        }
    }
    CU_ASSERT_EQUAL(bad_values, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
}

static void test_tables_grids(void) {
    static const int iq2[] = { 8, 25, 43 };
    static const int iq3xxs[] = { 4, 12, 20, 28, 36, 44, 52, 62 };
    static const int iq3s[] = { 1, 3, 5, 7, 9, 11, 13, 15 };
    check_u8_grid(&anvil_cold_iq2xxs_grid[0][0], 256, 8, iq2, 3);
    check_u8_grid(&anvil_cold_iq2xs_grid[0][0], 512, 8, iq2, 3);
    check_u8_grid(&anvil_cold_iq2s_grid[0][0], 1024, 8, iq2, 3);
    check_u8_grid(&anvil_cold_iq3xxs_grid[0][0], 256, 4, iq3xxs, 8);
    check_u8_grid(&anvil_cold_iq3s_grid[0][0], 512, 4, iq3s, 8);
    /* Spot values of each grid (first and last entries), as ggml decodes
     * them: a sign that the table is the right grid, not merely a valid one. */
    CU_ASSERT_EQUAL(anvil_cold_iq2xxs_grid[0][0], 8);
    CU_ASSERT_EQUAL(anvil_cold_iq2xxs_grid[1][0], 43);
    CU_ASSERT_EQUAL(anvil_cold_iq3s_grid[0][0], 1);
    CU_ASSERT_EQUAL(anvil_cold_iq3s_grid[511][3], 15);
    int bad = 0, duplicates = 0, zeros = 0;
    for (int e = 0; e < 2048; ++e) {
        for (int j = 0; j < 8; ++j) {
            const int v = anvil_cold_iq1s_grid[e][j];
            bad += v < -1 || v > 1;
            zeros += v == 0;
        }
        for (int k = 0; k < e; ++k) {
            duplicates += memcmp(anvil_cold_iq1s_grid[e], anvil_cold_iq1s_grid[k], 8) == 0;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
    CU_ASSERT(zeros > 0);
    /* Entry 2047 is all +1, entry 0 all -1. */
    for (int j = 0; j < 8; ++j) {
        CU_ASSERT_EQUAL(anvil_cold_iq1s_grid[0][j], -1);
        CU_ASSERT_EQUAL(anvil_cold_iq1s_grid[2047][j], 1);
    }
}

static void test_tables_signs_levels(void) {
    for (int j = 0; j < 8; ++j) {
        CU_ASSERT_EQUAL(anvil_cold_kmask[j], 1u << j);
    }
    /* 7 stored signs, the 8th restores even parity. */
    for (int i = 0; i < 128; ++i) {
        int parity = 0;
        for (int j = 0; j < 8; ++j) {
            parity ^= (anvil_cold_ksigns[i] >> j) & 1;
        }
        CU_ASSERT_EQUAL(anvil_cold_ksigns[i] & 0x7f, i);
        CU_ASSERT_EQUAL(parity, 0);
    }
    CU_ASSERT_EQUAL(anvil_cold_iq4nl_values[0], -127);
    CU_ASSERT_EQUAL(anvil_cold_iq4nl_values[15], 113);
    for (int j = 1; j < 16; ++j) {
        CU_ASSERT(anvil_cold_iq4nl_values[j] > anvil_cold_iq4nl_values[j - 1]);
    }
    for (int j = 0; j < 16; ++j) {
        CU_ASSERT_EQUAL(anvil_cold_e2m1_x2_values[j], anvil_e2m1_to_int_x2((uint8_t)j));
    }
    CU_ASSERT(anvil_cold_iq1s_delta == 0.125f);
    CU_ASSERT(anvil_cold_iq1m_delta == 0.125f);
}

/* ---- numeric helpers ----------------------------------------------------- */

static void test_numeric_e8m0(void) {
    for (int e = 0; e < 256; ++e) {
        const float full = anvil_e8m0_to_fp32((uint8_t)e);
        const float half = anvil_e8m0_to_fp32_half((uint8_t)e);
        CU_ASSERT(half == ldexpf(1.0f, e - 128));
        if (e < 255) {
            CU_ASSERT(full == ldexpf(1.0f, e - 127));
            CU_ASSERT(full == 2.0f * half);
        } else {
            CU_ASSERT(isinf(full)); /* as ggml: no NaN special case */
        }
    }
}

static void test_numeric_ue4m3(void) {
    for (int c = 0; c < 256; ++c) {
        const int e = (c >> 3) & 0xF, m = c & 7;
        float want;
        if (c == 0 || c == 0x7F) {
            want = 0.0f;
        } else if (e == 0) {
            want = ldexpf((float)m, -9) * 0.5f;
        } else {
            want = ldexpf(1.0f + (float)m / 8.0f, e - 7) * 0.5f;
        }
        CU_ASSERT(same_bits(anvil_ue4m3_to_fp32_half((uint8_t)c), want));
    }
    CU_ASSERT(anvil_ue4m3_to_fp32_half(0x7E) == 224.0f); /* 448 / 2 */
    CU_ASSERT(anvil_ue4m3_to_fp32_half(0x38) == 0.5f);   /* 1.0 / 2 */
    /* Encoding: every normal code below exponent 15 round-trips. */
    for (int c = 1; c < 0x78; ++c) {
        CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(2.0f * anvil_ue4m3_to_fp32_half((uint8_t)c)), c);
    }
    /* ggml's quirk, reproduced: any value >= 256 becomes 0x7E (448). */
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(256.0f), 0x7E);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(300.0f), 0x7E);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(1e30f), 0x7E);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(INFINITY), 0x7E);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(0.0f), 0);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(-1.0f), 0);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(NAN), 0);
    /* Subnormal range: round half up on x * 512, below 1 -> 0. */
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(ldexpf(1.0f, -9)), 1);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(ldexpf(0.5f, -9)), 1);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(ldexpf(0.49f, -9)), 0);
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(ldexpf(2.5f, -9)), 3);
    /* Normal range: half-up on the 4th mantissa bit, carry into exponent. */
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(1.0625f), 0x39);         /* 1 + 1/16 -> 1.125 */
    CU_ASSERT_EQUAL(anvil_fp32_to_ue4m3(1.9375f), (8 << 3) | 0); /* -> 2.0 */
}

static void test_numeric_e2m1(void) {
    static const int want[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };
    for (int c = 0; c < 16; ++c) {
        CU_ASSERT_EQUAL(anvil_e2m1_to_int_x2((uint8_t)c), want[c]);
        CU_ASSERT(anvil_e2m1_to_fp32((uint8_t)c) == 0.5f * (float)want[c]);
    }
    CU_ASSERT(signbit(anvil_e2m1_to_fp32(8)));
    CU_ASSERT(!signbit(anvil_e2m1_to_fp32(0)));
    CU_ASSERT(anvil_e2m1_to_fp32(7) == 6.0f);
}

/* ---- golden fixtures ------------------------------------------------------ */

static void test_golden(void) {
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        char rel[64];
        snprintf(rel, sizeof rel, "golden/%s.bin", f->name);
        golden_file g;
        const int loaded = golden_load(test_source_path(rel), &g);
        CU_ASSERT_EQUAL_FATAL(loaded, 0);
        CU_ASSERT_EQUAL(g.h.type_id, (uint32_t)f->type);
        CU_ASSERT_EQUAL(g.h.act_type, (uint32_t)f->act_type);
        CU_ASSERT_STRING_EQUAL(g.h.type_name, f->name);
        CU_ASSERT(g.h.n_rows >= 16);
        const size_t n = g.h.row_len;
        CU_ASSERT_FATAL(n > 0 && n <= MAX_ELEMS && n % f->block_elems == 0 && n % f->act_block_elems == 0);
        CU_ASSERT_EQUAL_FATAL(g.h.row_bytes, n / f->block_elems * f->block_bytes);
        const size_t act_bytes = n / f->act_block_elems * f->act_block_bytes;
        CU_ASSERT_EQUAL_FATAL(g.h.act_row_bytes, act_bytes);

        /* Activation quantizer == ggml's, byte for byte. */
        static uint8_t act_q[MAX_ELEMS * 2];
        memset(act_q, 0, act_bytes);
        f->act_quantize(g.act, act_q, n);
        CU_ASSERT_EQUAL(memcmp(act_q, g.act_q, act_bytes), 0);

        size_t dec_bad = 0, enc_bad = 0, enc_rows = 0, dot_bad = 0;
        static float y[MAX_ELEMS];
        static uint8_t enc[MAX_ELEMS];
        unsigned kinds = 0;
        for (size_t i = 0; i < g.h.n_rows; ++i) {
            golden_record r;
            golden_record_at(&g, i, &r);
            kinds |= 1u << (r.kind % 32);
            f->decode(r.enc, y, n);
            for (size_t j = 0; j < n; ++j) {
                if (!same_bits(y[j], r.dec[j])) {
                    dec_bad++;
                    break;
                }
            }
            if (f->encode != NULL) {
                CU_ASSERT(r.flags & GOLDEN_REC_ENCODED);
                char msg[256];
                CU_ASSERT_EQUAL(f->encode(r.in, enc, n, msg, sizeof msg), ANVIL_OK);
                enc_rows++;
                enc_bad += memcmp(enc, r.enc, g.h.row_bytes) != 0;
            } else {
                CU_ASSERT_EQUAL(r.flags & GOLDEN_REC_ENCODED, 0u); /* decode-only */
            }
            float s = 0.0f;
            f->dot(n, &s, r.enc, g.act_q);
            const double mag = term_magnitude(f, r.enc, g.act_q, n, NULL);
            const double m = fmax(fmax(fabs((double)s), fabs((double)r.dot)), mag);
            if (isnan(s) || isnan(r.dot)) {
                dot_bad += !(isnan(s) && isnan(r.dot)); /* Inf * 0 in both, or a bug */
            } else {
                dot_bad += !(fabs((double)s - (double)r.dot) <= 1e-5 * m);
            }
        }
        CU_ASSERT_EQUAL(dec_bad, 0);
        CU_ASSERT_EQUAL(enc_bad, 0);
        CU_ASSERT_EQUAL(dot_bad, 0);
        CU_ASSERT_EQUAL(kinds, (1u << INPUT_KIND_COUNT) - 1);
        if (f->encode != NULL) {
            CU_ASSERT_EQUAL(enc_rows, g.h.n_rows);
        }
        if (dec_bad || enc_bad || dot_bad) {
            fprintf(stderr, "%s golden: %zu decode, %zu encode, %zu dot mismatches\n", f->name, dec_bad, enc_bad,
                    dot_bad);
        }
        golden_free(&g);
    }
}

/* ---- importance-weighted fixtures, encode_rows ----------------------------- */

static const anvil_plugin_desc *cold_plugin(void) {
    void *h = dlopen(ANVIL_COLD_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", ANVIL_COLD_PLUGIN_PATH, dlerror());
        return NULL;
    }
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(h, ANVIL_PLUGIN_ENTRY_SYMBOL);
    /* deliberately not dlclose'd while descriptors may be referenced */
    return entry != NULL ? entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) : NULL;
}

/* ggml's bytes with importance matrices (tests/golden/imatrix/<type>.bin,
 * written by anvil-parity --family cold --write-golden), through the
 * plugin's encode_rows and the reference's, and the encode_rows contract
 * (tests/common/golden_imatrix.h) of all eleven codecs. */
static void test_golden_imatrix(void) {
    size_t n_codecs = 0;
    CU_ASSERT_EQUAL(imatrix_plugin_check(cold_plugin(), test_source_path("golden/imatrix"), &n_codecs), 0);
    CU_ASSERT_EQUAL(n_codecs, N_FORMATS);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        char rel[64];
        snprintf(rel, sizeof rel, "golden/imatrix/%s.bin", f->name);
        size_t checked = 0;
        CU_ASSERT_EQUAL(golden_imx_check(test_source_path(rel), (uint32_t)f->type, f->encode_rows, &checked), 0);
        CU_ASSERT_EQUAL(checked, 32);
    }
}

/* What the contract leaves out: several weighted rows at once are the rows
 * one by one; zero weights are fine, infinite ones are not; -Inf input;
 * no rows; a size that overflows. */
static void test_encode_rows_checks(void) {
    enum { ROWS = 3 };
    static float x[ROWS * MAX_ELEMS], qw[MAX_ELEMS];
    static uint8_t a[ROWS * MAX_ELEMS], b[ROWS * MAX_ELEMS];
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const size_t n = f->block_elems < 256 ? 8 * f->block_elems : 2 * f->block_elems;
        const size_t row_bytes = n / f->block_elems * f->block_bytes;
        for (size_t r = 0; r < ROWS; ++r) {
            test_input_fill(x + r * n, n, INPUT_LLM_LIKE, 5, r);
        }
        for (size_t j = 0; j < n; ++j) {
            qw[j] = 0.5f + (float)(j % 7);
        }
        char msg[512] = "";
        CU_ASSERT_EQUAL(f->encode_rows(x, a, ROWS, n, qw, msg, sizeof msg), ANVIL_OK);
        for (size_t r = 0; r < ROWS; ++r) {
            CU_ASSERT_EQUAL(f->encode_rows(x + r * n, b, 1, n, qw, msg, sizeof msg), ANVIL_OK);
            CU_ASSERT_EQUAL(memcmp(a + r * row_bytes, b, row_bytes), 0);
        }
        memset(qw, 0, n * sizeof *qw);
        CU_ASSERT_EQUAL(f->encode_rows(x, a, ROWS, n, qw, msg, sizeof msg), ANVIL_OK);
        qw[n - 2] = INFINITY;
        CU_ASSERT_EQUAL(f->encode_rows(x, a, ROWS, n, qw, msg, sizeof msg), ANVIL_E_INVALID_ARG);
        char want[64];
        snprintf(want, sizeof want, "column %zu", n - 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
        qw[n - 2] = 1.0f;
        x[2 * n + n - 1] = -INFINITY;
        CU_ASSERT_EQUAL(f->encode_rows(x, a, ROWS, n, qw, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "-Inf"));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
        CU_ASSERT_EQUAL(f->encode_rows(x, a, ROWS, n, qw, NULL, 0), ANVIL_E_NONFINITE); /* no message buffer */
        x[2 * n + n - 1] = 0.0f;
        CU_ASSERT_EQUAL(f->encode_rows(x, a, 0, n, qw, msg, sizeof msg), ANVIL_OK); /* nothing to do */
        CU_ASSERT_EQUAL(f->encode_rows(x, a, SIZE_MAX / 2, n, qw, msg, sizeof msg), ANVIL_E_OVERFLOW);
    }
}

/* ---- encoders ------------------------------------------------------------ */

static void test_encode_refusals(void) {
    static float x[MAX_ELEMS];
    static uint8_t dst[MAX_ELEMS * 2];
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        if (f->encode == NULL) {
            continue;
        }
        const size_t n = 4 * f->block_elems;
        test_input_fill(x, n, INPUT_NORMAL, 1, fi);
        char msg[256] = "";
        CU_ASSERT_EQUAL(f->encode(x, dst, n, msg, sizeof msg), ANVIL_OK);

        x[37] = NAN;
        CU_ASSERT_EQUAL(f->encode(x, dst, n, msg, sizeof msg), ANVIL_E_NONFINITE);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 37"));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "NaN"));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
        x[37] = 0.5f;
        x[n - 1] = -INFINITY;
        CU_ASSERT_EQUAL(f->encode(x, dst, n, msg, sizeof msg), ANVIL_E_NONFINITE);
        char want[64];
        snprintf(want, sizeof want, "element %zu", n - 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
        CU_ASSERT_EQUAL(f->encode(x, dst, n, NULL, 0), ANVIL_E_NONFINITE); /* no message buffer */
        x[n - 1] = 0.0f;

        CU_ASSERT_EQUAL(f->encode(x, dst, n - 1, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
        CU_ASSERT_EQUAL(f->encode(x, dst, f->block_elems / 2, msg, sizeof msg), ANVIL_E_BLOCK_MISMATCH);
        CU_ASSERT_EQUAL(f->encode(x, dst, 0, msg, sizeof msg), ANVIL_OK); /* nothing to do */
    }
}

/* Relative RMS error of encode -> decode on N(0,1) rows, deterministic
 * output, and exact zeros from all-zero input. The bounds are loose upper
 * limits for each format's bit budget as ggml encodes it without an
 * importance matrix (weights x^2 favour the large values): 4.25-4.5 bpw
 * 0.15-0.20; IQ3_S (3.44 bpw) measures 0.165, IQ3_XXS (3.06) 0.214, IQ2_S
 * (2.56) 0.261, IQ1_M (1.75) 0.590. */
static double quality_bound(int type) {
    switch (type) {
    case ANVIL_TYPE_MXFP4: return 0.20;
    case ANVIL_TYPE_IQ3_S: return 0.19;
    case ANVIL_TYPE_IQ3_XXS: return 0.24;
    case ANVIL_TYPE_IQ2_S: return 0.29;
    case ANVIL_TYPE_IQ1_M: return 0.65;
    default: return 0.15;
    }
}

static void test_encode_quality(void) {
    static float x[MAX_ELEMS], y[MAX_ELEMS];
    static uint8_t a[MAX_ELEMS * 2], b[MAX_ELEMS * 2];
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        if (f->encode == NULL) {
            continue;
        }
        const size_t n = 2048;
        double err = 0.0, ref = 0.0;
        for (uint64_t row = 0; row < 8; ++row) {
            test_input_fill(x, n, INPUT_NORMAL, 3, row);
            CU_ASSERT_EQUAL(f->encode(x, a, n, NULL, 0), ANVIL_OK);
            CU_ASSERT_EQUAL(f->encode(x, b, n, NULL, 0), ANVIL_OK);
            CU_ASSERT_EQUAL(memcmp(a, b, n / f->block_elems * f->block_bytes), 0);
            f->decode(a, y, n);
            for (size_t j = 0; j < n; ++j) {
                err += ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
                ref += (double)x[j] * x[j];
            }
        }
        const double rel = sqrt(err / ref);
        const double bound = quality_bound(f->type);
        if (!(rel < bound)) {
            fprintf(stderr, "%s: relative RMS error %.4f (bound %.2f)\n", f->name, rel, bound);
        }
        CU_ASSERT(rel < bound);
        CU_ASSERT(rel > 0.001); /* a <= 4.5-bit code cannot be this exact: the check is live */

        for (size_t j = 0; j < n; ++j) {
            x[j] = (j % 3 == 0) ? -0.0f : 0.0f;
        }
        CU_ASSERT_EQUAL(f->encode(x, a, n, NULL, 0), ANVIL_OK);
        f->decode(a, y, n);
        size_t nonzero = 0;
        for (size_t j = 0; j < n; ++j) {
            nonzero += y[j] != 0.0f;
        }
        CU_ASSERT_EQUAL(nonzero, 0);
    }
}

/* Known encodings, worked by hand from the formats' definitions. */
static void test_encode_known(void) {
    float x[64];
    uint8_t blk[64];
    /* IQ4_NL on values whose squares overflow: the weighted sums are Inf,
     * the fitted scale Inf / Inf = NaN, and ggml's level search, every
     * comparison with NaN failing, picks the top level 15 for every
     * element (as anvil-parity's huge-value rows confirm). */
    for (int j = 0; j < 32; ++j) {
        x[j] = (j % 3 ? 1e30f : -2e30f);
    }
    CU_ASSERT_EQUAL(anvil_ref_encode_iq4_nl(x, blk, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT(isnan(anvil_fp16_to_fp32((anvil_half)(blk[0] | blk[1] << 8))));
    for (int j = 2; j < 18; ++j) {
        CU_ASSERT_EQUAL(blk[j], 0xFF);
    }
    /* MXFP4: amax 6 -> exponent floor(log2 6) - 2 = 0 -> e = 127, half
     * scale 0.5, so code k decodes to doubled(k) / 2 = E2M1 value itself. */
    static const float e2m1[16] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6 };
    for (int j = 0; j < 32; ++j) {
        x[j] = e2m1[j % 16];
    }
    CU_ASSERT_EQUAL(anvil_ref_encode_mxfp4(x, blk, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(blk[0], 127);
    for (int j = 0; j < 16; ++j) {
        /* -0 (code 8) ties with +0 (code 0): the lower code wins. */
        const int lo = j == 8 ? 0 : j;
        CU_ASSERT_EQUAL(blk[1 + j], (uint8_t)(lo | (lo << 4)));
    }
    /* NVFP4: amax 6 -> scale 1.0 = UE4M3 0x38, half scale 0.5. */
    for (int j = 0; j < 64; ++j) {
        x[j] = e2m1[j % 16];
    }
    CU_ASSERT_EQUAL(anvil_ref_encode_nvfp4(x, blk, 64, NULL, 0), ANVIL_OK);
    for (int s = 0; s < 4; ++s) {
        CU_ASSERT_EQUAL(blk[s], 0x38);
    }
    /* Sub-block 0 holds e2m1[0..15]: byte j pairs element j with j + 8. */
    for (int j = 0; j < 8; ++j) {
        const int hi = j == 0 ? 0 : j + 8; /* -0 codes as +0 */
        CU_ASSERT_EQUAL(blk[4 + j], (uint8_t)(j | (hi << 4)));
    }
    /* IQ4_NL: an all-zero block gets d = 0 and every code 8 (level +1). */
    memset(x, 0, sizeof x);
    CU_ASSERT_EQUAL(anvil_ref_encode_iq4_nl(x, blk, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(blk[0], 0);
    CU_ASSERT_EQUAL(blk[1], 0);
    for (int j = 0; j < 16; ++j) {
        CU_ASSERT_EQUAL(blk[2 + j], 0x88);
    }
    /* IQ4_XS: all near-zero -> d = -0 (binary16 0x8000), sub-scales 0 (-32). */
    static float z[ANVIL_QK_K];
    static uint8_t xs[sizeof(anvil_block_iq4_xs)];
    for (int j = 0; j < ANVIL_QK_K; ++j) {
        z[j] = 1e-20f;
    }
    CU_ASSERT_EQUAL(anvil_ref_encode_iq4_xs(z, xs, ANVIL_QK_K, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(xs[0], 0x00);
    CU_ASSERT_EQUAL(xs[1], 0x80);
}

/* ---- decoders ------------------------------------------------------------ */

/* Random bytes of every kind, NaN/Inf scales included, decode without
 * touching anything outside the tables (ASan checks that), the same at any
 * alignment, and finite whenever the scales are (MXFP4's E8M0 can reach
 * 2^127 * 6, which overflows: only bytes <= 250 are required finite). */
static void test_decode_total(void) {
    static uint8_t raw[64 * 160 + 8];
    static float y[64 * ANVIL_QK_K], y2[64 * ANVIL_QK_K];
    test_rng r;
    test_rng_seed(&r, 12345);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const size_t nb = 64;
        const size_t n = nb * f->block_elems, bytes = nb * f->block_bytes;
        size_t misaligned_diff = 0, nonfinite = 0;
        for (int round = 0; round < 50; ++round) {
            random_bytes(&r, raw + 1, bytes);
            f->decode(raw + 1, y, n); /* odd address: multi-byte fields misaligned */
            memmove(raw, raw + 1, bytes);
            f->decode(raw, y2, n);
            for (size_t j = 0; j < n; ++j) {
                misaligned_diff += !same_bits(y[j], y2[j]);
            }
            make_scales_finite(f, raw, nb);
            if (f->type == ANVIL_TYPE_MXFP4) {
                for (size_t b = 0; b < nb; ++b) {
                    raw[b * f->block_bytes] %= 251;
                }
            }
            f->decode(raw, y, n);
            for (size_t j = 0; j < n; ++j) {
                nonfinite += !isfinite(y[j]);
            }
        }
        CU_ASSERT_EQUAL(misaligned_diff, 0);
        CU_ASSERT_EQUAL(nonfinite, 0);
    }
}

/* Decoding the all-zero block: each format's zero scale gives zeros; and a
 * hand-built block decodes to its definition. */
static void test_decode_known(void) {
    float y[ANVIL_QK_K];
    /* IQ4_NL, d = 2.0 (0x4000), codes 0..15 low / 15..0 high. */
    uint8_t nl[sizeof(anvil_block_iq4_nl)] = { 0x00, 0x40 };
    for (int j = 0; j < 16; ++j) {
        nl[2 + j] = (uint8_t)(j | ((15 - j) << 4));
    }
    anvil_ref_decode_iq4_nl(nl, y, 32);
    for (int j = 0; j < 16; ++j) {
        CU_ASSERT(y[j] == 2.0f * anvil_cold_iq4nl_values[j]);
        CU_ASSERT(y[j + 16] == 2.0f * anvil_cold_iq4nl_values[15 - j]);
    }
    /* IQ2_XXS, d = 1, sub-scale 3 -> 1 * 3.5 / 4 = 0.875 per unit; grid
     * entry 1 = {43, 8, ...}; sign index 1 -> ksigns 129: elements 0 and 7
     * negative. */
    uint8_t xx[sizeof(anvil_block_iq2_xxs)];
    memset(xx, 0, sizeof xx);
    xx[1] = 0x3C;
    xx[2] = 1;                             /* group 0 -> entry 1 */
    const uint32_t meta = (3u << 28) | 1u; /* sub-scale 3, group 0 sign index 1 */
    memcpy(xx + 2 + 4, &meta, 4);
    anvil_ref_decode_iq2_xxs(xx, y, ANVIL_QK_K);
    CU_ASSERT(y[0] == -37.625f); /* 0.875 * 43, negated */
    CU_ASSERT(y[1] == 7.0f);     /* 0.875 * 8 */
    CU_ASSERT(y[7] == -7.0f);
    CU_ASSERT(y[8] == 7.0f); /* group 1: entry 0, no signs */
    /* MXFP4, e = 130 (half scale 4): code 0xF (-12 doubled) -> -48. */
    uint8_t mx[sizeof(anvil_block_mxfp4)];
    mx[0] = 130;
    memset(mx + 1, 0xF1, 16);
    anvil_ref_decode_mxfp4(mx, y, 32);
    CU_ASSERT(y[0] == 4.0f);
    CU_ASSERT(y[16] == -48.0f);
    /* All-zero blocks decode to (+-)0 in every format: a zero scale (MXFP4:
     * e = 0 is 2^-128, but code 0 is 0). */
    static uint8_t zero[sizeof(anvil_block_iq4_xs) * 2];
    memset(zero, 0, sizeof zero);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const size_t n = f->block_elems == ANVIL_QK_K ? f->block_elems : 2 * f->block_elems;
        f->decode(zero, y, n);
        size_t nonzero = 0;
        for (size_t j = 0; j < n; ++j) {
            nonzero += y[j] != 0.0f;
        }
        CU_ASSERT_EQUAL(nonzero, 0);
    }
}

/* ---- dots ---------------------------------------------------------------- */

/* dot(w, a) against the double-precision dot of the decoded rows, on random
 * weight blocks (finite scales) and quantized random activations. The
 * scalar kernel rescales integer sums per block in binary32; its error is a
 * few ulps of the accumulated magnitude. */
static void test_dot_matches_decode(void) {
    static uint8_t w[MAX_ELEMS];
    static float act[1024];
    static uint8_t aq[4096];
    test_rng r;
    test_rng_seed(&r, 99);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const size_t n = 1024;
        size_t bad = 0;
        double worst = 0.0;
        for (int round = 0; round < 40; ++round) {
            const size_t nb = n / f->block_elems;
            random_bytes(&r, w, nb * f->block_bytes);
            make_scales_finite(f, w, nb);
            if (f->type == ANVIL_TYPE_MXFP4) {
                for (size_t b = 0; b < nb; ++b) {
                    w[b * f->block_bytes] = (uint8_t)(100 + w[b * f->block_bytes] % 50);
                }
            }
            test_input_fill(act, n, (test_input_kind)(round % INPUT_KIND_COUNT), 5, (uint64_t)round);
            memset(aq, 0, sizeof aq);
            f->act_quantize(act, aq, n);
            float s = 0.0f;
            f->dot(n, &s, w, aq);
            double exact = 0.0;
            const double mag = term_magnitude(f, w, aq, n, &exact);
            const double err = fabs((double)s - exact) / fmax(mag, 1e-30);
            worst = fmax(worst, err);
            bad += !(err <= 1e-5);
        }
        if (bad) {
            fprintf(stderr, "%s: dot vs decoded rows: worst %.3g\n", f->name, worst);
        }
        CU_ASSERT_EQUAL(bad, 0);
    }
}

/* ---- plugin -------------------------------------------------------------- */

static const fmt *fmt_by_type(uint32_t type) {
    for (size_t i = 0; i < N_FORMATS; ++i) {
        if ((uint32_t)formats[i].type == type) {
            return &formats[i];
        }
    }
    return NULL;
}

static void test_plugin_descriptor(void) {
    void *h = dlopen(ANVIL_COLD_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", ANVIL_COLD_PLUGIN_PATH, dlerror());
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(h, ANVIL_PLUGIN_ENTRY_SYMBOL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(entry);
    CU_ASSERT_PTR_NULL(entry(ANVIL_ABI_MAJOR + 1, 0));
    const anvil_plugin_desc *d = entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL(d->struct_size, sizeof(anvil_plugin_desc));
    CU_ASSERT_EQUAL(d->kind, ANVIL_PLUGIN_CODEC);
    CU_ASSERT_STRING_EQUAL(d->id, "codec-cold");
    CU_ASSERT_EQUAL_FATAL(d->n_codecs, N_FORMATS);
    unsigned seen = 0;
    for (size_t i = 0; i < d->n_codecs; ++i) {
        const anvil_codec *c = d->codecs[i];
        CU_ASSERT_EQUAL(c->struct_size, sizeof(anvil_codec));
        const fmt *f = fmt_by_type(c->type_id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        seen |= 1u << (size_t)(f - formats);
        CU_ASSERT_STRING_EQUAL(c->name, f->name);
        CU_ASSERT_EQUAL(c->block_elems, f->block_elems);
        CU_ASSERT_EQUAL(c->block_bytes, f->block_bytes);
        CU_ASSERT_EQUAL(c->act_type, (uint32_t)f->act_type);
        CU_ASSERT_EQUAL(c->flags, f->flags);
        CU_ASSERT_PTR_NOT_NULL(c->decode);
        CU_ASSERT_PTR_NULL(c->ref_vec_dot);
        /* Every format encodes row-wise, with or without weights. */
        CU_ASSERT_PTR_NOT_NULL_FATAL(c->encode_rows);
        if (f->encode != NULL) {
            CU_ASSERT_PTR_NOT_NULL(c->encode);
            CU_ASSERT_PTR_NULL(c->encode_note);
        } else {
            /* No unweighted encoder (every format ggml encodes without an
             * imatrix has one): encode is a refusal naming the missing
             * matrix, and the note says why. */
            CU_ASSERT_PTR_NOT_NULL_FATAL(c->encode);
            CU_ASSERT_PTR_NOT_NULL_FATAL(c->encode_note);
            CU_ASSERT(f->flags & ANVIL_CODEC_NEEDS_IMATRIX);
            CU_ASSERT_STRING_EQUAL(c->encode_note, "needs an importance matrix (ggml encodes it only with one)");
            static float z[ANVIL_QK_K];
            static uint8_t out[ANVIL_QK_K];
            char m[512] = "";
            CU_ASSERT_EQUAL(c->encode(z, out, ANVIL_QK_K, m, sizeof m), ANVIL_E_NEEDS_IMATRIX);
            CU_ASSERT_PTR_NOT_NULL(strstr(m, c->name));
            CU_ASSERT_PTR_NOT_NULL(strstr(m, "--imatrix"));
            CU_ASSERT_EQUAL(c->encode(z, out, ANVIL_QK_K, NULL, 0), ANVIL_E_NEEDS_IMATRIX);
        }
        {
            /* The plugin's encode_rows is the reference's, weighted. */
            static float x[2 * ANVIL_QK_K], qw[ANVIL_QK_K];
            static uint8_t e1[2 * ANVIL_QK_K], e2[2 * ANVIL_QK_K];
            const size_t n = ANVIL_QK_K;
            test_input_fill(x, 2 * n, INPUT_NORMAL, 9, c->type_id);
            for (size_t j = 0; j < n; ++j) {
                qw[j] = 0.25f + (float)(j % 5);
            }
            CU_ASSERT_EQUAL(c->encode_rows(x, e1, 2, n, qw, NULL, 0), ANVIL_OK);
            CU_ASSERT_EQUAL(f->encode_rows(x, e2, 2, n, qw, NULL, 0), ANVIL_OK);
            CU_ASSERT_EQUAL(memcmp(e1, e2, 2 * n / f->block_elems * f->block_bytes), 0);
        }
        /* The plugin's functions behave as the reference (its own copy of
         * anvil_ref): decode one random block both ways. */
        uint8_t blk[160];
        float y1[ANVIL_QK_NVFP4 > ANVIL_QK_K ? ANVIL_QK_NVFP4 : ANVIL_QK_K], y2[ANVIL_QK_K];
        test_rng r;
        test_rng_seed(&r, c->type_id);
        random_bytes(&r, blk, f->block_bytes);
        make_scales_finite(f, blk, 1);
        c->decode(blk, y1, f->block_elems);
        f->decode(blk, y2, f->block_elems);
        CU_ASSERT_EQUAL(memcmp(y1, y2, f->block_elems * sizeof(float)), 0);
    }
    CU_ASSERT_EQUAL(seen, (1u << N_FORMATS) - 1);
    /* deliberately not dlclose'd while descriptors may be referenced */
}

static void test_scalar_kernels(void) {
    unsigned seen = 0;
    size_t count = 0;
    for (const anvil_kernel *const *k = anvil_scalar_kernels_cold; *k != NULL; ++k, ++count) {
        const fmt *f = fmt_by_type((*k)->weight_type);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        seen |= 1u << (size_t)(f - formats);
        CU_ASSERT_EQUAL((*k)->struct_size, sizeof(anvil_kernel));
        CU_ASSERT_EQUAL((*k)->act_type, (uint32_t)f->act_type);
        CU_ASSERT_PTR_EQUAL((*k)->vec_dot, f->dot);
        CU_ASSERT_PTR_EQUAL((*k)->decode_row, f->decode);
    }
    CU_ASSERT_EQUAL(count, N_FORMATS);
    CU_ASSERT_EQUAL(seen, (1u << N_FORMATS) - 1);
    CU_ASSERT_PTR_NULL(anvil_scalar_quantizers_cold[0]);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 1;
    }
    CU_pSuite s = CU_add_suite("cold", NULL, NULL);
    CU_add_test(s, "tables: lattice grids", test_tables_grids);
    CU_add_test(s, "tables: signs, levels, deltas", test_tables_signs_levels);
    CU_add_test(s, "numeric: e8m0", test_numeric_e8m0);
    CU_add_test(s, "numeric: ue4m3", test_numeric_ue4m3);
    CU_add_test(s, "numeric: e2m1", test_numeric_e2m1);
    CU_add_test(s, "golden: decode, encode, act, dot", test_golden);
    CU_add_test(s, "golden: importance-weighted encode_rows, encode_rows contract", test_golden_imatrix);
    CU_add_test(s, "encode_rows: many rows, zero/Inf weights, -Inf, overflow", test_encode_rows_checks);
    CU_add_test(s, "encode: refusals", test_encode_refusals);
    CU_add_test(s, "encode: determinism and error bounds", test_encode_quality);
    CU_add_test(s, "encode: known blocks", test_encode_known);
    CU_add_test(s, "decode: total on random bytes, any alignment", test_decode_total);
    CU_add_test(s, "decode: known blocks", test_decode_known);
    CU_add_test(s, "dot: equals dot of decoded rows", test_dot_matches_decode);
    CU_add_test(s, "plugin: codec-cold descriptor", test_plugin_descriptor);
    CU_add_test(s, "plugin: backend-scalar cold kernels", test_scalar_kernels);
    return test_run_cunit();
}
