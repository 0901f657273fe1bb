/* SPDX-License-Identifier: MIT */
/*
 * test_q8_0: the flat 32-element family (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1)
 * without ggml present.
 *
 *   golden      encode/decode/activation/dot against tests/golden/<type>.bin
 *               (written by anvil-parity from ggml itself)
 *   refusal     NaN/Inf refused naming the index, partial blocks refused,
 *               nothing written on refusal
 *   quirks      ggml behaviours pinned by value (subnormal scales, -0.0,
 *               the top-code cap), probed on the oracle
 *   bounds      round-trip error within each format's step
 *   layout      unaligned buffers, Q8_1's s field and definition decode
 *   plugin      codec-q8_0 descriptor and backend-scalar's table
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
#include "test_env.h"

#define QK 32
#define MAX_N 4096

typedef void (*quantize_fn)(const float *x, void *dst, size_t n);

typedef struct fmt {
    const char *name;
    uint32_t type;
    size_t block_bytes;
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    uint32_t act_type;
    size_t act_block_bytes;
    quantize_fn act_quantize;
    anvil_vec_dot_fn dot;
    int has_min;                      /* q4_1, q5_1 */
    int code_bits;                    /* 4, 5, 8 */
    anvil_encode_rows_fn encode_rows; /* NULL: q8_1, an activation format */
    uint32_t flags;                   /* the codec's ANVIL_CODEC_* flags */
} fmt;

static const fmt formats[] = {
    { "q4_0", ANVIL_TYPE_Q4_0, 18, anvil_ref_encode_q4_0, anvil_ref_decode_q4_0, ANVIL_TYPE_Q8_0, 34,
      anvil_ref_quantize_q8_0, anvil_ref_vec_dot_q4_0_q8_0, 0, 4, anvil_ref_encode_rows_q4_0, 0 },
    { "q4_1", ANVIL_TYPE_Q4_1, 20, anvil_ref_encode_q4_1, anvil_ref_decode_q4_1, ANVIL_TYPE_Q8_1, 36,
      anvil_ref_quantize_q8_1, anvil_ref_vec_dot_q4_1_q8_1, 1, 4, anvil_ref_encode_rows_q4_1, 0 },
    { "q5_0", ANVIL_TYPE_Q5_0, 22, anvil_ref_encode_q5_0, anvil_ref_decode_q5_0, ANVIL_TYPE_Q8_0, 34,
      anvil_ref_quantize_q8_0, anvil_ref_vec_dot_q5_0_q8_0, 0, 5, anvil_ref_encode_rows_q5_0, 0 },
    { "q5_1", ANVIL_TYPE_Q5_1, 24, anvil_ref_encode_q5_1, anvil_ref_decode_q5_1, ANVIL_TYPE_Q8_1, 36,
      anvil_ref_quantize_q8_1, anvil_ref_vec_dot_q5_1_q8_1, 1, 5, anvil_ref_encode_rows_q5_1, 0 },
    { "q8_0", ANVIL_TYPE_Q8_0, 34, anvil_ref_encode_q8_0, anvil_ref_decode_q8_0, ANVIL_TYPE_Q8_0, 34,
      anvil_ref_quantize_q8_0, anvil_ref_vec_dot_q8_0_q8_0, 0, 8, anvil_ref_encode_rows_q8_0,
      ANVIL_CODEC_IMATRIX_UNUSED },
    { "q8_1", ANVIL_TYPE_Q8_1, 36, anvil_ref_encode_q8_1, anvil_ref_decode_q8_1, ANVIL_TYPE_Q8_1, 36,
      anvil_ref_quantize_q8_1, NULL, 0, 8, NULL, ANVIL_CODEC_ACTIVATION },
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static float half_at(const uint8_t *p) {
    anvil_half h;
    memcpy(&h, p, sizeof h);
    return anvil_fp16_to_fp32(h);
}

static uint16_t u16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return h;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Integer code j of a weight block (offset removed for the _0 formats). */
static int weight_code(const fmt *f, const uint8_t *b, int j) {
    if (f->code_bits == 8) {
        return ((const int8_t *)b)[f->block_bytes - QK + (size_t)j];
    }
    const size_t head = f->has_min ? 4 : 2;
    uint32_t qh = 0;
    if (f->code_bits == 5) {
        memcpy(&qh, b + head, 4);
    }
    const uint8_t *qs = b + head + (f->code_bits == 5 ? 4 : 0);
    int v = j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
    v |= (int)(((qh >> j) & 1u) << 4);
    return f->has_min ? v : v - (1 << (f->code_bits - 1));
}

/* What a dot accumulates, in magnitude: two correct kernels may differ by
 * a few ulps of this (accumulation order), whatever the result is. */
static float term_magnitude(const fmt *f, const uint8_t *w, const uint8_t *a, size_t nb) {
    float sum = 0.0f;
    for (size_t i = 0; i < nb; ++i, w += f->block_bytes, a += f->act_block_bytes) {
        const int8_t *qa = (const int8_t *)(a + f->act_block_bytes - QK);
        long acc = 0;
        for (int j = 0; j < QK; ++j) {
            acc += labs((long)weight_code(f, w, j) * qa[j]);
        }
        sum += fabsf(half_at(w) * half_at(a)) * (float)acc;
        if (f->has_min) {
            sum += fabsf(half_at(w + 2) * half_at(a + 2));
        }
    }
    return sum;
}

/* The dot computed exactly (double) from the codes and fp16 fields: what a
 * float kernel approximates to within accumulation rounding. */
static double exact_dot(const fmt *f, const uint8_t *w, const uint8_t *a, size_t nb) {
    double sum = 0.0;
    for (size_t i = 0; i < nb; ++i, w += f->block_bytes, a += f->act_block_bytes) {
        const int8_t *qa = (const int8_t *)(a + f->act_block_bytes - QK);
        long sumi = 0;
        for (int j = 0; j < QK; ++j) {
            sumi += (long)weight_code(f, w, j) * qa[j];
        }
        sum += (double)half_at(w) * (double)half_at(a) * (double)sumi;
        if (f->has_min) {
            sum += (double)half_at(w + 2) * (double)half_at(a + 2);
        }
    }
    return sum;
}

/* ---- golden ------------------------------------------------------------- */

static void check_golden(const fmt *f) {
    char rel[64];
    snprintf(rel, sizeof rel, "golden/%s.bin", f->name);
    golden_file g;
    const int loaded = golden_load(test_source_path(rel), &g);
    CU_ASSERT_EQUAL_FATAL(loaded, 0);
    CU_ASSERT_EQUAL(g.h.type_id, f->type);
    CU_ASSERT_EQUAL(g.h.act_type, f->act_type);
    CU_ASSERT_STRING_EQUAL(g.h.type_name, f->name);
    CU_ASSERT_EQUAL(g.h.row_len % QK, 0);
    CU_ASSERT_FATAL(g.h.row_len > 0 && g.h.row_len <= MAX_N);
    const size_t n = g.h.row_len, nb = n / QK;
    CU_ASSERT_EQUAL(g.h.row_bytes, nb * f->block_bytes);
    CU_ASSERT_EQUAL(g.h.act_row_bytes, nb * f->act_block_bytes);
    CU_ASSERT(g.h.n_rows >= 40);

    /* the activation quantizer reproduces ggml's activation bytes */
    static uint8_t act_q[MAX_N / QK * 36];
    f->act_quantize(g.act, act_q, n);
    CU_ASSERT_EQUAL(memcmp(act_q, g.act_q, g.h.act_row_bytes), 0);

    static uint8_t enc[MAX_N / QK * 36];
    static float dec[MAX_N];
    size_t encoded = 0, enc_bad = 0, dec_bad = 0, dot_bad = 0, dots = 0;
    unsigned kinds_seen = 0;
    float worst = 0.0f;
    for (uint32_t i = 0; i < g.h.n_rows; ++i) {
        golden_record r;
        golden_record_at(&g, i, &r);
        if (r.flags & GOLDEN_REC_ENCODED) {
            char msg[256];
            encoded++;
            kinds_seen |= 1u << (r.kind % 32);
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
                fprintf(stderr, "%s golden record %u: decode[%zu] %a != %a\n", f->name, i, j, (double)dec[j],
                        (double)r.dec[j]);
                break;
            }
        }
        if (f->dot != NULL) {
            CU_ASSERT(!isnan(r.dot));
            float s = 0.0f;
            f->dot(n, &s, r.enc, g.act_q);
            const float scale = fmaxf(fmaxf(fabsf(s), fabsf(r.dot)), term_magnitude(f, r.enc, g.act_q, nb));
            const float e = scale > 0.0f ? fabsf(s - r.dot) / scale : 0.0f;
            worst = fmaxf(worst, e);
            dots++;
            /* tighter: ours against the exact value, within the rounding of
             * a float accumulation over nb blocks (a wrong integer sum in
             * one block is far outside this) */
            const double exact = exact_dot(f, r.enc, g.act_q, nb);
            if (!(fabs((double)s - exact) <= (double)(nb + 2) * 0x1p-23 * (double)scale)) {
                dot_bad++;
                fprintf(stderr, "%s golden record %u: dot %.9g vs exact %.9g\n", f->name, i, (double)s, exact);
            }
            if (!(e <= 1e-5f)) {
                dot_bad++;
                fprintf(stderr, "%s golden record %u: dot %.9g vs ggml %.9g\n", f->name, i, (double)s, (double)r.dot);
            }
        } else {
            CU_ASSERT(isnan(r.dot)); /* ggml has no dot for this weight type */
        }
    }
    CU_ASSERT(encoded >= 32);
    CU_ASSERT_EQUAL(kinds_seen, (1u << INPUT_KIND_COUNT) - 1); /* every input kind */
    CU_ASSERT_EQUAL(enc_bad, 0);
    CU_ASSERT_EQUAL(dec_bad, 0);
    CU_ASSERT_EQUAL(dot_bad, 0);
    CU_ASSERT_EQUAL(dots, f->dot != NULL ? g.h.n_rows : 0);
    CU_ASSERT(worst <= 1e-5f);
    golden_free(&g);
}

static void test_golden_q4_0(void) { check_golden(&formats[0]); }
static void test_golden_q4_1(void) { check_golden(&formats[1]); }
static void test_golden_q5_0(void) { check_golden(&formats[2]); }
static void test_golden_q5_1(void) { check_golden(&formats[3]); }
static void test_golden_q8_0(void) { check_golden(&formats[4]); }
static void test_golden_q8_1(void) { check_golden(&formats[5]); }

/* ---- refusal ------------------------------------------------------------ */

static void check_refuses_nonfinite(const fmt *f, size_t n, size_t bad_at, float bad, const char *word) {
    float *x = malloc(n * sizeof *x);
    uint8_t *dst = malloc(n / QK * f->block_bytes);
    CU_ASSERT_FATAL(x != NULL && dst != NULL);
    test_input_fill(x, n, INPUT_NORMAL, 5, bad_at);
    x[bad_at] = bad;
    memset(dst, 0xEE, n / QK * f->block_bytes);
    char msg[256] = "";
    const int rc = f->encode(x, dst, n, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, ANVIL_E_NONFINITE);
    char needle[64];
    snprintf(needle, sizeof needle, "element %zu ", bad_at);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, needle));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, word));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, f->name));
    /* refused before anything was written */
    size_t touched = 0;
    for (size_t i = 0; i < n / QK * f->block_bytes; ++i) {
        touched += dst[i] != 0xEE;
    }
    CU_ASSERT_EQUAL(touched, 0);
    free(x);
    free(dst);
}

static void test_refuse_nonfinite(void) {
    for (size_t k = 0; k < N_FORMATS; ++k) {
        const fmt *f = &formats[k];
        check_refuses_nonfinite(f, 256, 0, NAN, "NaN");
        check_refuses_nonfinite(f, 256, 77, INFINITY, "+Inf");
        check_refuses_nonfinite(f, 256, 255, -INFINITY, "-Inf");
        check_refuses_nonfinite(f, 32, 31, -NAN, "NaN");
    }
    /* the FIRST bad index is named when there are several */
    float x[64] = { 0 };
    x[40] = NAN;
    x[9] = INFINITY;
    uint8_t dst[2 * 36];
    char msg[256] = "";
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_1(x, dst, 64, msg, sizeof msg), ANVIL_E_NONFINITE);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "element 9 "));
}

static void test_refuse_partial_blocks(void) {
    float x[96];
    test_input_fill(x, 96, INPUT_NORMAL, 3, 0);
    uint8_t dst[3 * 36 + 36];
    const size_t bad_lengths[] = { 1, 31, 33, 63, 95 };
    for (size_t k = 0; k < N_FORMATS; ++k) {
        for (size_t i = 0; i < sizeof bad_lengths / sizeof bad_lengths[0]; ++i) {
            char msg[256] = "";
            memset(dst, 0xEE, sizeof dst);
            const int rc = formats[k].encode(x, dst, bad_lengths[i], msg, sizeof msg);
            CU_ASSERT_EQUAL(rc, ANVIL_E_BLOCK_MISMATCH);
            CU_ASSERT_PTR_NOT_NULL(strstr(msg, "32"));
            CU_ASSERT_EQUAL(dst[0], 0xEE);
        }
        /* an empty row is a whole number of blocks: nothing to do */
        char msg[64];
        CU_ASSERT_EQUAL(formats[k].encode(x, dst, 0, msg, sizeof msg), ANVIL_OK);
        /* a NULL message buffer is tolerated */
        CU_ASSERT_EQUAL(formats[k].encode(x, dst, 33, NULL, 0), ANVIL_E_BLOCK_MISMATCH);
    }
}

/* ---- ggml quirks, pinned by value (probed on ggml 3.22.1) ---------------- */

static void test_quirk_subnormal_scale(void) {
    /* amax ~2e-39: d is a subnormal whose reciprocal overflows to Inf, so
     * x*id is +-Inf or NaN; ggml's cast turns those into code 0, giving
     * all-zero blocks (fp16(d) is 0 as well). */
    float x[32];
    for (int j = 0; j < 32; ++j) {
        x[j] = (j % 3 == 0) ? 0.0f : ((j & 1) ? 1e-39f : -2e-39f);
    }
    uint8_t b[36];
    static const uint8_t zeros[36];
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(b, zeros, 18), 0);
    CU_ASSERT_EQUAL(anvil_ref_encode_q5_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(b, zeros, 22), 0);
    CU_ASSERT_EQUAL(anvil_ref_encode_q8_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(b, zeros, 34), 0);
    CU_ASSERT_EQUAL(anvil_ref_encode_q8_1(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(memcmp(b, zeros, 36), 0);
    /* Q4_1/Q5_1 keep the min: fp16(-2e-39) is -0.0 (0x8000) */
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_1(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b), 0x0000);
    CU_ASSERT_EQUAL(u16_at(b + 2), 0x8000);
    CU_ASSERT_EQUAL(memcmp(b + 4, zeros, 16), 0);
    CU_ASSERT_EQUAL(anvil_ref_encode_q5_1(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b + 2), 0x8000);
    CU_ASSERT_EQUAL(memcmp(b + 4, zeros, 20), 0);
}

static void test_quirk_scale_underflows_to_zero(void) {
    /* amax = the smallest subnormal: d = max / -16 rounds to +0, id = 0, so
     * every code is trunc(16.5) = 16: low nibbles 0, every qh bit set. */
    float x[32] = { 0 };
    x[7] = -0x1p-149f;
    x[9] = 0x1p-149f;
    uint8_t b[22];
    CU_ASSERT_EQUAL(anvil_ref_encode_q5_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b), 0x0000);
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    CU_ASSERT_EQUAL(qh, 0xffffffffu);
    for (int j = 0; j < 16; ++j) {
        CU_ASSERT_EQUAL(b[6 + j], 0x00);
    }
    /* Q4_0: code trunc(8.5) = 8 everywhere */
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_0(x, b, 32, NULL, 0), ANVIL_OK);
    for (int j = 0; j < 16; ++j) {
        CU_ASSERT_EQUAL(b[2 + j], 0x88);
    }
}

static void test_quirk_zero_blocks(void) {
    float x[32] = { 0 };
    uint8_t b[36];
    /* max stays +0.0, so d = 0 / -8 = -0.0: fp16 0x8000, codes 8 */
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b), 0x8000);
    CU_ASSERT_EQUAL(b[2], 0x88);
    CU_ASSERT_EQUAL(b[17], 0x88);
    /* min/max keep the FIRST zero's sign: a leading -0.0 makes m = -0.0
     * and d = (0 - -0) / 15 = +0 */
    x[0] = -0.0f;
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_1(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b), 0x0000);
    CU_ASSERT_EQUAL(u16_at(b + 2), 0x8000);
    CU_ASSERT_EQUAL(b[4], 0x00);
    /* Q8_0: amax 0 -> d 0, codes 0 */
    CU_ASSERT_EQUAL(anvil_ref_encode_q8_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b), 0x0000);
    CU_ASSERT_EQUAL(b[2], 0);
}

static void test_quirk_top_code_cap(void) {
    /* Q4_0 maps the signed max to code 0 (value -8 d). The other extreme
     * x = -max has x/d = 8 -> trunc(16.5) = 16, capped to 15 (value 7 d). */
    float x[32] = { 0 };
    x[0] = 1.0f;  /* max: d = -1/8 */
    x[1] = -1.0f; /* would be code 16 */
    uint8_t b[18];
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(u16_at(b), anvil_fp32_to_fp16(-0.125f));
    CU_ASSERT_EQUAL(b[2] & 0x0f, 0);  /* element 0 */
    CU_ASSERT_EQUAL(b[3] & 0x0f, 15); /* element 1 */
    float y[32];
    anvil_ref_decode_q4_0(b, y, 32);
    CU_ASSERT(same_bits(y[0], 1.0f));
    CU_ASSERT(same_bits(y[1], -0.875f));
    /* ties: codes truncate x/d + 8.5, i.e. round half up */
    x[2] = 0.0625f;  /* x/d = -0.5 -> 8.0 -> code 8 */
    x[3] = -0.0625f; /* x/d = 0.5 -> 9.0 -> code 9 */
    CU_ASSERT_EQUAL(anvil_ref_encode_q4_0(x, b, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL(b[4] & 0x0f, 8);
    CU_ASSERT_EQUAL(b[5] & 0x0f, 9);
    /* Q8_0 rounds half away from zero (roundf) */
    float z[32] = { 0 };
    z[0] = 127.0f; /* d = 1 */
    z[1] = 2.5f;
    z[2] = -2.5f;
    uint8_t q[34];
    CU_ASSERT_EQUAL(anvil_ref_encode_q8_0(z, q, 32, NULL, 0), ANVIL_OK);
    CU_ASSERT_EQUAL((int8_t)q[3], 3);
    CU_ASSERT_EQUAL((int8_t)q[4], -3);
}

/* ---- bounds ------------------------------------------------------------- */

/* Worst reconstruction error for one block, from the format's step: half a
 * step for rounding (a full step where Q4_0/Q5_0 cap the top code), plus
 * the fp16 rounding of d (and m) spread over the code range. */
static float block_error_bound(const fmt *f, const float *x) {
    float amax = 0.0f, mn = x[0], mx = x[0];
    for (int j = 0; j < QK; ++j) {
        amax = fmaxf(amax, fabsf(x[j]));
        mn = fminf(mn, x[j]);
        mx = fmaxf(mx, x[j]);
    }
    const float fp16_rel = 0x1p-11f;
    switch (f->type) {
    case ANVIL_TYPE_Q4_0: return amax / 8.0f * (1.0f + 8.0f * fp16_rel) * 1.001f;
    case ANVIL_TYPE_Q5_0: return amax / 16.0f * (1.0f + 16.0f * fp16_rel) * 1.001f;
    case ANVIL_TYPE_Q4_1: {
        const float d = (mx - mn) / 15.0f;
        return d * (0.5f + 15.0f * fp16_rel) * 1.001f + fabsf(mn) * fp16_rel * 1.001f;
    }
    case ANVIL_TYPE_Q5_1: {
        const float d = (mx - mn) / 31.0f;
        return d * (0.5f + 31.0f * fp16_rel) * 1.001f + fabsf(mn) * fp16_rel * 1.001f;
    }
    default: return amax / 127.0f * (0.5f + 127.0f * fp16_rel) * 1.001f;
    }
}

static void test_round_trip_bounds(void) {
    static float x[1024], y[1024];
    static uint8_t b[1024 / QK * 36];
    const test_input_kind kinds[] = { INPUT_NORMAL,      INPUT_UNIFORM,    INPUT_RAMP,      INPUT_OUTLIER,
                                      INPUT_ALTERNATING, INPUT_SMALL_INTS, INPUT_HALF_STEPS };
    for (size_t k = 0; k < N_FORMATS; ++k) {
        const fmt *f = &formats[k];
        size_t violations = 0;
        float worst_ratio = 0.0f;
        for (size_t t = 0; t < sizeof kinds / sizeof kinds[0]; ++t) {
            for (uint64_t row = 0; row < 8; ++row) {
                test_input_fill(x, 1024, kinds[t], 11, row);
                CU_ASSERT_EQUAL(f->encode(x, b, 1024, NULL, 0), ANVIL_OK);
                f->decode(b, y, 1024);
                for (size_t blk = 0; blk < 1024 / QK; ++blk) {
                    const float bound = block_error_bound(f, x + blk * QK);
                    for (int j = 0; j < QK; ++j) {
                        const float e = fabsf(y[blk * QK + (size_t)j] - x[blk * QK + (size_t)j]);
                        if (bound > 0.0f) {
                            worst_ratio = fmaxf(worst_ratio, e / bound);
                        }
                        violations += !(e <= bound);
                    }
                }
            }
        }
        if (violations != 0) {
            fprintf(stderr, "%s: %zu elements beyond the error bound (worst %.3f x bound)\n", f->name, violations,
                    (double)worst_ratio);
        }
        CU_ASSERT_EQUAL(violations, 0);
        CU_ASSERT(worst_ratio > 0.2f); /* the bound is not vacuous */
    }
}

/* The dot agrees with decode-then-dot in f32 (double accumulation), within
 * the term magnitude: the integer parts are exact. */
static void test_dot_matches_decoded(void) {
    static float w[2048], a[2048], wd[2048], ad[2048];
    static uint8_t wb[2048 / QK * 36], ab[2048 / QK * 36];
    for (size_t k = 0; k < N_FORMATS; ++k) {
        const fmt *f = &formats[k];
        if (f->dot == NULL) {
            continue;
        }
        for (uint64_t row = 0; row < 16; ++row) {
            const size_t n = 32 * (1 + row * 4);
            test_input_fill(w, n, (test_input_kind)(row % INPUT_KIND_COUNT), 21, row);
            test_input_fill(a, n, INPUT_LLM_LIKE, 22, row);
            CU_ASSERT_EQUAL(f->encode(w, wb, n, NULL, 0), ANVIL_OK);
            f->act_quantize(a, ab, n);
            f->decode(wb, wd, n);
            (f->act_block_bytes == 34 ? anvil_ref_decode_q8_0 : anvil_ref_decode_q8_1)(ab, ad, n);
            double ref = 0.0;
            for (size_t j = 0; j < n; ++j) {
                ref += (double)wd[j] * (double)ad[j];
            }
            float s = 0.0f;
            f->dot(n, &s, wb, ab);
            /* the _1 formats use s = fp16(d * sum q), not the exact sum:
             * allow that rounding on the min term */
            const float scale = fmaxf(term_magnitude(f, wb, ab, n / QK), fabsf((float)ref));
            const float tol = f->has_min ? 2e-3f : 1e-5f;
            CU_ASSERT(fabs((double)s - ref) <= tol * (double)scale + 1e-30);
        }
    }
}

/* ---- layout ------------------------------------------------------------- */

static void test_unaligned_buffers(void) {
    static float x[256], y1[256], y2[256];
    static uint8_t aligned[256 / QK * 36 + 8], shifted[256 / QK * 36 + 8];
    test_input_fill(x, 256, INPUT_LLM_LIKE, 8, 1);
    for (size_t k = 0; k < N_FORMATS; ++k) {
        const fmt *f = &formats[k];
        const size_t bytes = 256 / QK * f->block_bytes;
        CU_ASSERT_EQUAL(f->encode(x, aligned, 256, NULL, 0), ANVIL_OK);
        CU_ASSERT_EQUAL(f->encode(x, shifted + 1, 256, NULL, 0), ANVIL_OK);
        CU_ASSERT_EQUAL(memcmp(aligned, shifted + 1, bytes), 0);
        f->decode(aligned, y1, 256);
        f->decode(shifted + 1, y2, 256);
        CU_ASSERT_EQUAL(memcmp(y1, y2, sizeof y1), 0);
        if (f->dot != NULL) {
            static uint8_t act[256 / QK * 36 + 8];
            float s1, s2;
            f->act_quantize(x, act + 1, 256);
            f->dot(256, &s1, aligned, act + 1);
            f->dot(256, &s2, shifted + 1, act + 1);
            CU_ASSERT(same_bits(s1, s2));
        }
    }
}

static void test_q8_1_definition(void) {
    static float x[512], y[512];
    static uint8_t b[512 / QK * 36];
    for (uint64_t row = 0; row < INPUT_KIND_COUNT; ++row) {
        test_input_fill(x, 512, (test_input_kind)row, 31, row);
        anvil_ref_quantize_q8_1(x, b, 512);
        anvil_ref_decode_q8_1(b, y, 512);
        size_t bad = 0;
        for (size_t i = 0; i < 512 / QK; ++i) {
            const uint8_t *blk = b + i * 36;
            const float d = half_at(blk);
            int sum = 0;
            for (int j = 0; j < QK; ++j) {
                const int8_t q = (int8_t)blk[4 + j];
                sum += q;
                bad += !same_bits(y[i * QK + (size_t)j], (float)q * d);
            }
            /* s = fp16(sum(q) * d32), where d32 = amax / 127 is the f32 scale
             * BEFORE its own fp16 rounding (so s survives when d underflows
             * to 0 in fp16, and overflows to Inf when sum * d32 > 65504) */
            float amax = 0.0f;
            for (int j = 0; j < QK; ++j) {
                amax = fmaxf(amax, fabsf(x[i * QK + (size_t)j]));
            }
            const float d32 = amax / 127.0f;
            if (u16_at(blk + 2) != anvil_fp32_to_fp16((float)sum * d32)) {
                bad++;
                fprintf(stderr, "kind %s block %zu: s %g, sum*d32 %g\n", test_input_kind_name((test_input_kind)row),
                        i, (double)half_at(blk + 2), (double)((float)sum * d32));
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* the activation quantizer and the codec encoder are one thing */
        static uint8_t e[512 / QK * 36];
        CU_ASSERT_EQUAL(anvil_ref_encode_q8_1(x, e, 512, NULL, 0), ANVIL_OK);
        CU_ASSERT_EQUAL(memcmp(b, e, sizeof e), 0);
        anvil_ref_quantize_q8_0(x, b, 512);
        CU_ASSERT_EQUAL(anvil_ref_encode_q8_0(x, e, 512, NULL, 0), ANVIL_OK);
        CU_ASSERT_EQUAL(memcmp(b, e, 512 / QK * 34), 0);
    }
}

static void test_decoders_total(void) {
    /* any bytes decode, including NaN/Inf scales; the codes of a finite
     * scale decode to finite values */
    static uint8_t b[64 * 36];
    static float y[64 * QK];
    test_rng r;
    test_rng_seed(&r, 99);
    for (size_t i = 0; i < sizeof b; ++i) {
        b[i] = (uint8_t)(test_rng_u64(&r) >> 56);
    }
    for (size_t k = 0; k < N_FORMATS; ++k) {
        const fmt *f = &formats[k];
        f->decode(b, y, 64 * QK);
        size_t finite_expected = 0, finite_got = 0;
        for (size_t i = 0; i < 64; ++i) {
            const uint8_t *blk = b + i * f->block_bytes;
            const int finite_scale = isfinite(half_at(blk)) && (!f->has_min || isfinite(half_at(blk + 2)));
            if (finite_scale) {
                finite_expected += QK;
                for (int j = 0; j < QK; ++j) {
                    finite_got += isfinite(y[i * QK + (size_t)j]) != 0;
                }
            }
        }
        CU_ASSERT(finite_expected > 0);
        CU_ASSERT_EQUAL(finite_got, finite_expected);
    }
}

/* ---- plugin ------------------------------------------------------------- */

/* ---- importance-weighted row encoders ---------------------------------- */

/* ggml_quantize_chunk's bytes with synthetic importance matrices (and a few
 * rows without), from tests/golden/imatrix, plus the encode_rows contract. */
static void test_imatrix_golden_and_contract(void) {
    size_t n = 0;
    const anvil_plugin_desc *d = anvil_plugin_entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_EQUAL(imatrix_plugin_check(d, test_source_path("golden/imatrix"), &n), 0);
    CU_ASSERT_EQUAL(n, 5);
}

static void test_codec_descriptor(void) {
    CU_ASSERT_PTR_NULL(anvil_plugin_entry(ANVIL_ABI_MAJOR + 1, 0));
    const anvil_plugin_desc *d = anvil_plugin_entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL(d->struct_size, sizeof(anvil_plugin_desc));
    CU_ASSERT_EQUAL(d->abi_major, ANVIL_ABI_MAJOR);
    CU_ASSERT_EQUAL(d->kind, ANVIL_PLUGIN_CODEC);
    CU_ASSERT_STRING_EQUAL(d->id, "codec-q8_0");
    CU_ASSERT_EQUAL_FATAL(d->n_codecs, N_FORMATS);
    CU_ASSERT_EQUAL(d->n_backends, 0);
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const anvil_codec *c = d->codecs[i];
        const fmt *f = &formats[i];
        CU_ASSERT_EQUAL(c->struct_size, sizeof(anvil_codec));
        CU_ASSERT_EQUAL(c->type_id, f->type);
        CU_ASSERT_STRING_EQUAL(c->name, f->name);
        CU_ASSERT_EQUAL(c->block_elems, 32);
        CU_ASSERT_EQUAL(c->block_bytes, f->block_bytes);
        CU_ASSERT_EQUAL(c->act_type, f->act_type);
        CU_ASSERT_EQUAL(c->flags, f->flags);
        CU_ASSERT(c->encode_rows == f->encode_rows);
        CU_ASSERT(c->encode == f->encode);
        CU_ASSERT(c->decode == f->decode);
        CU_ASSERT_PTR_NULL(c->ref_vec_dot);
        CU_ASSERT_PTR_NULL(c->encode_note);
        for (size_t r = 0; r < 6; ++r) {
            CU_ASSERT_PTR_NULL(c->reserved[r]);
        }
    }
}

static void test_scalar_tables(void) {
    size_t nq = 0, nk = 0;
    int have_q8_0 = 0, have_q8_1 = 0;
    for (; anvil_scalar_quantizers_q8_0[nq] != NULL; ++nq) {
        const anvil_act_quantizer *q = anvil_scalar_quantizers_q8_0[nq];
        CU_ASSERT_EQUAL(q->struct_size, sizeof(anvil_act_quantizer));
        if (q->act_type == ANVIL_TYPE_Q8_0) {
            have_q8_0 = q->quantize == anvil_ref_quantize_q8_0;
        } else if (q->act_type == ANVIL_TYPE_Q8_1) {
            have_q8_1 = q->quantize == anvil_ref_quantize_q8_1;
        }
    }
    CU_ASSERT_EQUAL(nq, 2);
    CU_ASSERT(have_q8_0 && have_q8_1);
    for (; anvil_scalar_kernels_q8_0[nk] != NULL; ++nk) {
        const anvil_kernel *k = anvil_scalar_kernels_q8_0[nk];
        CU_ASSERT_EQUAL(k->struct_size, sizeof(anvil_kernel));
        int found = 0;
        for (size_t i = 0; i < N_FORMATS; ++i) {
            if (formats[i].type == k->weight_type) {
                found = 1;
                CU_ASSERT_EQUAL(k->act_type, formats[i].act_type);
                CU_ASSERT(k->vec_dot == formats[i].dot);
            }
        }
        CU_ASSERT(found);
        CU_ASSERT(k->weight_type != ANVIL_TYPE_Q8_1);
    }
    CU_ASSERT_EQUAL(nk, 5);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) {
        return 2;
    }
    CU_pSuite s = CU_add_suite("q8_0 family", NULL, NULL);
    if (s == NULL) {
        return 2;
    }
    const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        { "golden q4_0", test_golden_q4_0 },
        { "golden q4_1", test_golden_q4_1 },
        { "golden q5_0", test_golden_q5_0 },
        { "golden q5_1", test_golden_q5_1 },
        { "golden q8_0", test_golden_q8_0 },
        { "golden q8_1", test_golden_q8_1 },
        { "refuses NaN/Inf naming the index", test_refuse_nonfinite },
        { "refuses partial blocks", test_refuse_partial_blocks },
        { "quirk: subnormal scale -> code 0", test_quirk_subnormal_scale },
        { "quirk: scale underflows to zero", test_quirk_scale_underflows_to_zero },
        { "quirk: zero blocks and -0.0", test_quirk_zero_blocks },
        { "quirk: top-code cap and ties", test_quirk_top_code_cap },
        { "round-trip error bounds", test_round_trip_bounds },
        { "dot matches decode-then-dot", test_dot_matches_decoded },
        { "unaligned buffers", test_unaligned_buffers },
        { "q8_1 by definition, s field", test_q8_1_definition },
        { "decoders are total", test_decoders_total },
        { "imatrix goldens and encode_rows contract", test_imatrix_golden_and_contract },
        { "codec-q8_0 descriptor", test_codec_descriptor },
        { "backend-scalar q8_0 tables", test_scalar_tables },
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return 2;
        }
    }
    return test_run_cunit();
}
