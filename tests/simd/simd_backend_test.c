/* SPDX-License-Identifier: MIT */
/*
 * A SIMD backend plugin against the scalar reference (plugins/ref, the code
 * backend-scalar is built from). One source, built once per backend
 * (tests/simd), which selects it with:
 *
 *   SB_KIND         SB_AVX2, SB_AVX512 (the shipped plugin) or SB_AVX512_EMU
 *                   (the same kernel sources through SIMDe, for CPUs
 *                   without AVX-512: plugins/backend-avx512/avx512_emulate.h)
 *   SB_PLUGIN_PATH  the .so under test; SB_PLUGIN_ID, SB_BACKEND its names
 *   SB_REQUIRED     formats that must have a kernel ("" for all listed);
 *   SB_OPTIONAL     formats that may fall back even so (default none);
 *                   any other listed format without one is reported as
 *                   falling back to the next backend
 *
 *  - activation quantizers Q8_0 / Q8_1 / Q8_K: byte-identical, >= 10,000 rows
 *    each over every input kind (ties, subnormal blocks whose 1/d overflows,
 *    zeros, outliers ...);
 *  - decode_row: bit-identical on >= 10,000 rows of random bytes per format
 *    (NaN/Inf/subnormal scales included);
 *  - dots: >= 10,000 rows per format in GEMV calls of 1..19 rows with padded
 *    strides, rows and activations at odd byte offsets, row lengths from 1 to
 *    48 (32-element) or 12 (256-element) blocks. Each row's vec_dot must be
 *    bit-identical to its GEMV and GEMM value (a row never depends on its
 *    neighbours); every value must be within 1e-5 of the magnitude of its
 *    terms of the reference; the kernels documented bit-identical (all but
 *    IQ4_XS) must equal it bit for bit. An "exact" pass with power-of-two
 *    scales and small activation codes makes every float operation exact,
 *    so there the result IS the integer part: all kernels, IQ4_XS included,
 *    must equal the reference exactly;
 *  - weight encoders (ABI 1.1): byte-identical to the reference encoders on
 *    >= 10,000 rows per format (simd_encoder_test.c);
 *  - every instruction-set variant the plugin offers and this CPU runs
 *    (AVX-512: with and without VNNI; emulated: both), each selected the way
 *    the host selects it, through the CPU features given to init();
 *  - the plugin's score: 0 with the missing feature named;
 *  - through the host: `ANVIL_CPU_MASK=-<isa> anvil plugins` shows the
 *    backend skipped with the reason, and anvil_matmul gives the same
 *    results with the mask (backend-scalar) as without.
 *
 * The kernels are called through the plugin itself (dlopen + entry + init),
 * exactly as the host would, so the artifact under test is the built .so.
 * SB_ROWS_ENV (ANVIL_AVX2_TEST_ROWS, ...) overrides the 10,000 rows.
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "anvil/anvil.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"
#include "anvil/numeric.h"
#include "inputs.h"
#include "simd_encoder_test.h"
#include "ref/cold.h"
#include "ref/cold_enc_grid.h"
#include "ref/kquants.h"
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"
#include "ref/ternary.h"
#include "ptqtp_ref.h"
#include "test_env.h"

#define SB_AVX2 1
#define SB_AVX512 2
#define SB_AVX512_EMU 3

#define AVX2_NEEDED (ANVIL_CPU_AVX | ANVIL_CPU_AVX2 | ANVIL_CPU_FMA | ANVIL_CPU_F16C | ANVIL_CPU_BMI2)
#define AVX512_NEEDED (ANVIL_CPU_AVX512F | ANVIL_CPU_AVX512BW | ANVIL_CPU_AVX512VL | ANVIL_CPU_F16C | ANVIL_CPU_BMI2)
#if SB_KIND == SB_AVX2
#define SB_NEEDED AVX2_NEEDED
#define SB_MASK "-avx2"
#elif SB_KIND == SB_AVX512
#define SB_NEEDED AVX512_NEEDED
#define SB_MASK "-avx512"
#else
#define SB_NEEDED 0 /* emulated: runs anywhere */
#endif
#define MAX_BLOCKS_32 48
#define MAX_BLOCKS_256 12
#define MAX_ELEMS (MAX_BLOCKS_256 * 256) /* >= MAX_BLOCKS_32 * 32 */
#define MAX_ROW_BYTES 3648               /* >= 12 Q8_K blocks, a multiple of 64 */
#define LONG_N (256 * 64)
#define LONG_ROWS 19 /* passes of 8, 8, 2, 1 */
#define MAX_GEMV_ROWS 19
#define MAX_GEMM_M 5

#ifndef SB_OPTIONAL
#define SB_OPTIONAL ""
#endif

/* ---- formats ---------------------------------------------------------------- */

typedef struct act_fmt {
    uint32_t id;
    uint32_t be, bb;
    void (*quantize)(const float *, void *, size_t);
    void (*decode)(const void *, float *, size_t);
} act_fmt;

static const act_fmt ACT_Q8_0 = { ANVIL_TYPE_Q8_0, 32, 34, anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0 };
static const act_fmt ACT_Q8_1 = { ANVIL_TYPE_Q8_1, 32, 36, anvil_ref_quantize_q8_1, anvil_ref_decode_q8_1 };
static const act_fmt ACT_Q8_K = { ANVIL_TYPE_Q8_K, 256, 292, anvil_ref_quantize_q8_K, anvil_ref_decode_q8_K };

typedef struct wfmt {
    const char *name;
    uint32_t id;
    const act_fmt *act;
    uint32_t be, bb;
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;
    int bit_exact;          /* documented bit-identical to the reference */
    int halves[2];          /* byte offsets of fp16 scale fields (-1: none) */
    int e8m0;               /* byte offset of an E8M0 scale, or -1 */
    int codes_lo, codes_hi; /* code bytes of the formats with a min (else 0, 0) */
    int half3;              /* byte offset of a third fp16 scale (ptqtp3), or 0: none */
} wfmt;

/* IQ1_S's reference encoder is row-wise and needs an importance matrix:
 * uniform weights. */
static int encode_iq1_s(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    static float ones[256 * 64];
    if (ones[0] == 0.0f)
        for (size_t j = 0; j < sizeof ones / sizeof ones[0]; ++j) ones[j] = 1.0f;
    if (n > sizeof ones / sizeof ones[0]) return ANVIL_E_INVALID_ARG;
    return anvil_ref_encode_rows_iq1_s(src, dst, 1, n, ones, msg, msg_size);
}

/* IQ2_XXS and IQ2_XS: the reference encoder with fixed importance weights
 * (ggml has no unweighted encoder for them). */
static float g_iq2_imatrix[MAX_ELEMS > LONG_N ? MAX_ELEMS : LONG_N];

static const float *iq2_imatrix(size_t n) {
    for (size_t j = 0; j < n; ++j) g_iq2_imatrix[j] = 1.0f + (float)(j % 7) * 0.25f;
    return g_iq2_imatrix;
}

static int encode_iq2_xxs_w(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    return anvil_ref_encode_rows_iq2_xxs(src, dst, 1, n, iq2_imatrix(n), msg, msg_size);
}

static int encode_iq2_xs_w(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    return anvil_ref_encode_rows_iq2_xs(src, dst, 1, n, iq2_imatrix(n), msg, msg_size);
}

static const wfmt FORMATS[] = {
    { "q8_0",
      ANVIL_TYPE_Q8_0,
      &ACT_Q8_0,
      32,
      34,
      anvil_ref_encode_q8_0,
      anvil_ref_decode_q8_0,
      anvil_ref_vec_dot_q8_0_q8_0,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "q4_0",
      ANVIL_TYPE_Q4_0,
      &ACT_Q8_0,
      32,
      18,
      anvil_ref_encode_q4_0,
      anvil_ref_decode_q4_0,
      anvil_ref_vec_dot_q4_0_q8_0,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "q4_1",
      ANVIL_TYPE_Q4_1,
      &ACT_Q8_1,
      32,
      20,
      anvil_ref_encode_q4_1,
      anvil_ref_decode_q4_1,
      anvil_ref_vec_dot_q4_1_q8_1,
      1,
      { 0, 2 },
      -1,
      4,
      20,
      0 },
    { "q5_0",
      ANVIL_TYPE_Q5_0,
      &ACT_Q8_0,
      32,
      22,
      anvil_ref_encode_q5_0,
      anvil_ref_decode_q5_0,
      anvil_ref_vec_dot_q5_0_q8_0,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "q5_1",
      ANVIL_TYPE_Q5_1,
      &ACT_Q8_1,
      32,
      24,
      anvil_ref_encode_q5_1,
      anvil_ref_decode_q5_1,
      anvil_ref_vec_dot_q5_1_q8_1,
      1,
      { 0, 2 },
      -1,
      4,
      24,
      0 },
    { "q2_K",
      ANVIL_TYPE_Q2_K,
      &ACT_Q8_K,
      256,
      84,
      anvil_ref_encode_q2_K,
      anvil_ref_decode_q2_K,
      anvil_ref_vec_dot_q2_K_q8_K,
      1,
      { 80, 82 },
      -1,
      16,
      80,
      0 },
    { "q3_K",
      ANVIL_TYPE_Q3_K,
      &ACT_Q8_K,
      256,
      110,
      anvil_ref_encode_q3_K,
      anvil_ref_decode_q3_K,
      anvil_ref_vec_dot_q3_K_q8_K,
      1,
      { 108, -1 },
      -1,
      0,
      0,
      0 },
    { "q4_K",
      ANVIL_TYPE_Q4_K,
      &ACT_Q8_K,
      256,
      144,
      anvil_ref_encode_q4_K,
      anvil_ref_decode_q4_K,
      anvil_ref_vec_dot_q4_K_q8_K,
      1,
      { 0, 2 },
      -1,
      16,
      144,
      0 },
    { "q5_K",
      ANVIL_TYPE_Q5_K,
      &ACT_Q8_K,
      256,
      176,
      anvil_ref_encode_q5_K,
      anvil_ref_decode_q5_K,
      anvil_ref_vec_dot_q5_K_q8_K,
      1,
      { 0, 2 },
      -1,
      16,
      176,
      0 },
    { "q6_K",
      ANVIL_TYPE_Q6_K,
      &ACT_Q8_K,
      256,
      210,
      anvil_ref_encode_q6_K,
      anvil_ref_decode_q6_K,
      anvil_ref_vec_dot_q6_K_q8_K,
      1,
      { 208, -1 },
      -1,
      0,
      0,
      0 },
    { "tq1_0",
      ANVIL_TYPE_TQ1_0,
      &ACT_Q8_K,
      256,
      54,
      anvil_ref_encode_tq1_0,
      anvil_ref_decode_tq1_0,
      anvil_ref_vec_dot_tq1_0_q8_K,
      1,
      { 52, -1 },
      -1,
      0,
      0,
      0 },
    { "tq2_0",
      ANVIL_TYPE_TQ2_0,
      &ACT_Q8_K,
      256,
      66,
      anvil_ref_encode_tq2_0,
      anvil_ref_decode_tq2_0,
      anvil_ref_vec_dot_tq2_0_q8_K,
      1,
      { 64, -1 },
      -1,
      0,
      0,
      0 },
    { "iq4_nl",
      ANVIL_TYPE_IQ4_NL,
      &ACT_Q8_0,
      32,
      18,
      anvil_ref_encode_iq4_nl,
      anvil_ref_decode_iq4_nl,
      anvil_ref_vec_dot_iq4_nl_q8_0,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "iq4_xs",
      ANVIL_TYPE_IQ4_XS,
      &ACT_Q8_K,
      256,
      136,
      anvil_ref_encode_iq4_xs,
      anvil_ref_decode_iq4_xs,
      anvil_ref_vec_dot_iq4_xs_q8_K,
      0,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "mxfp4",
      ANVIL_TYPE_MXFP4,
      &ACT_Q8_0,
      32,
      17,
      anvil_ref_encode_mxfp4,
      anvil_ref_decode_mxfp4,
      anvil_ref_vec_dot_mxfp4_q8_0,
      1,
      { -1, -1 },
      0,
      0,
      0,
      0 },
    /* codec-ptqtp's trit planes (a plugin's types, layout in the SDK) */
    { "ptqtp2",
      ANVIL_TYPE_PTQTP2,
      &ACT_Q8_K,
      256,
      108,
      anvil_ptqtp_encode2,
      anvil_ptqtp_decode2,
      anvil_ptqtp_vec_dot2_q8_K,
      1,
      { 104, 106 },
      -1,
      0,
      0,
      0 },
    { "ptqtp3",
      ANVIL_TYPE_PTQTP3,
      &ACT_Q8_K,
      256,
      162,
      anvil_ptqtp_encode3,
      anvil_ptqtp_decode3,
      anvil_ptqtp_vec_dot3_q8_K,
      1,
      { 156, 158 },
      -1,
      0,
      0,
      160 },
    /* PTQTP-S (anvil/formats/ptqtps.h): the scale's sign bit names the table */
    { "ptqtp2s",
      ANVIL_TYPE_PTQTP2S,
      &ACT_Q8_K,
      256,
      ANVIL_PTQTPS_BLOCK_BYTES(2),
      anvil_ptqtps_encode2,
      anvil_ptqtps_decode2,
      anvil_ptqtps_vec_dot2_q8_K,
      1,
      { ANVIL_PTQTPS_D_OFFSET(2), -1 },
      -1,
      0,
      0,
      0 },
    { "ptqtp3s",
      ANVIL_TYPE_PTQTP3S,
      &ACT_Q8_K,
      256,
      ANVIL_PTQTPS_BLOCK_BYTES(3),
      anvil_ptqtps_encode3,
      anvil_ptqtps_decode3,
      anvil_ptqtps_vec_dot3_q8_K,
      1,
      { ANVIL_PTQTPS_D_OFFSET(3), -1 },
      -1,
      0,
      0,
      0 }, /* issue 39: the low-bit formats (helper simd-lowbit) */
    { "q1_0",
      ANVIL_TYPE_Q1_0,
      &ACT_Q8_0,
      128,
      18,
      anvil_ref_encode_q1_0,
      anvil_ref_decode_q1_0,
      anvil_ref_vec_dot_q1_0_q8_0,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "q2_0",
      ANVIL_TYPE_Q2_0,
      &ACT_Q8_0,
      64,
      18,
      anvil_ref_encode_q2_0,
      anvil_ref_decode_q2_0,
      anvil_ref_vec_dot_q2_0_q8_0,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "nvfp4",
      ANVIL_TYPE_NVFP4,
      &ACT_Q8_0,
      64,
      36,
      anvil_ref_encode_nvfp4,
      anvil_ref_decode_nvfp4,
      anvil_ref_vec_dot_nvfp4_q8_0,
      1,
      { -1, -1 },
      -1,
      0,
      0,
      0 },
    { "iq1_s",
      ANVIL_TYPE_IQ1_S,
      &ACT_Q8_K,
      256,
      50,
      encode_iq1_s,
      anvil_ref_decode_iq1_s,
      anvil_ref_vec_dot_iq1_s_q8_K,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "iq1_m",
      ANVIL_TYPE_IQ1_M,
      &ACT_Q8_K,
      256,
      56,
      anvil_ref_encode_iq1_m,
      anvil_ref_decode_iq1_m,
      anvil_ref_vec_dot_iq1_m_q8_K,
      1,
      { -1, -1 },
      -1,
      0,
      0,
      0 },
    /* the IQ2/IQ3 lattice formats (ggml encodes IQ2_XXS and IQ2_XS only with
     * an importance matrix: encode_iq2_*_w) */
    { "iq2_xxs",
      ANVIL_TYPE_IQ2_XXS,
      &ACT_Q8_K,
      256,
      sizeof(anvil_block_iq2_xxs),
      encode_iq2_xxs_w,
      anvil_ref_decode_iq2_xxs,
      anvil_ref_vec_dot_iq2_xxs_q8_K,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "iq3_xxs",
      ANVIL_TYPE_IQ3_XXS,
      &ACT_Q8_K,
      256,
      sizeof(anvil_block_iq3_xxs),
      anvil_ref_encode_iq3_xxs,
      anvil_ref_decode_iq3_xxs,
      anvil_ref_vec_dot_iq3_xxs_q8_K,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "iq2_xs",
      ANVIL_TYPE_IQ2_XS,
      &ACT_Q8_K,
      256,
      sizeof(anvil_block_iq2_xs),
      encode_iq2_xs_w,
      anvil_ref_decode_iq2_xs,
      anvil_ref_vec_dot_iq2_xs_q8_K,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "iq2_s",
      ANVIL_TYPE_IQ2_S,
      &ACT_Q8_K,
      256,
      sizeof(anvil_block_iq2_s),
      anvil_ref_encode_iq2_s,
      anvil_ref_decode_iq2_s,
      anvil_ref_vec_dot_iq2_s_q8_K,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
    { "iq3_s",
      ANVIL_TYPE_IQ3_S,
      &ACT_Q8_K,
      256,
      sizeof(anvil_block_iq3_s),
      anvil_ref_encode_iq3_s,
      anvil_ref_decode_iq3_s,
      anvil_ref_vec_dot_iq3_s_q8_K,
      1,
      { 0, -1 },
      -1,
      0,
      0,
      0 },
};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

/* ---- the plugin, loaded as the host loads it ---------------------------------- */

static anvil_cpu_info g_cpu; /* the host's probe, unmasked features */
static int g_runnable;       /* the kernels can run on this CPU */
static void *g_plugin;
static const anvil_plugin_desc *g_desc;
static const anvil_backend *g_backend;
static const char *g_variant = SB_BACKEND; /* the kernels' variant string expected now */
static size_t g_rows = 10000;

static const anvil_kernel *kernel_for(uint32_t wtype) {
    for (size_t i = 0; g_backend != NULL && i < g_backend->n_kernels; ++i) {
        if (g_backend->kernels[i]->weight_type == wtype) return g_backend->kernels[i];
    }
    return NULL;
}

static const anvil_act_quantizer *quantizer_for(uint32_t atype) {
    for (size_t i = 0; g_backend != NULL && i < g_backend->n_quantizers; ++i) {
        if (g_backend->quantizers[i]->act_type == atype) return g_backend->quantizers[i];
    }
    return NULL;
}

static void host_log(void *ctx, int level, const char *plugin, const char *msg) {
    (void)ctx;
    (void)level;
    fprintf(stderr, "[%s] %s\n", plugin, msg);
}

static int load_plugin(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", SB_PLUGIN_PATH);
    g_plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g_plugin == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(g_plugin, ANVIL_PLUGIN_ENTRY_SYMBOL);
    const anvil_plugin_desc *desc = entry ? entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) : NULL;
    if (desc == NULL || desc->n_backends != 1) {
        fprintf(stderr, "%s: no backend descriptor\n", path);
        return -1;
    }
    g_desc = desc;
    static anvil_host_services services;
    services.struct_size = sizeof services;
    services.abi_major = ANVIL_ABI_MAJOR;
    services.abi_minor = ANVIL_ABI_MINOR;
    services.cpu = &g_cpu;
    services.log = host_log;
    char err[256] = "";
    if (desc->init != NULL && desc->init(&services, err, sizeof err) != ANVIL_OK) {
        fprintf(stderr, "%s: init failed: %s\n", path, err);
        return -1;
    }
    g_backend = desc->backends[0];
    return 0;
}

/* Whether the backend has a kernel for f. A format in SB_REQUIRED (or any
 * format when SB_REQUIRED is "") must; the others may fall back to the
 * next backend, which is reported once. */
static int has_kernel(const wfmt *f) {
    if (kernel_for(f->id) != NULL) return 1;
    char want[64];
    snprintf(want, sizeof want, " %s ", f->name);
    char list[256];
    snprintf(list, sizeof list, " %s ", SB_OPTIONAL);
    if (strstr(list, want) != NULL) return 0; /* may fall back (SB_OPTIONAL) */
    snprintf(list, sizeof list, " %s ", SB_REQUIRED);
    if (SB_REQUIRED[0] == '\0' || strstr(list, want) != NULL) {
        fprintf(stderr, "\n%s: no kernel for %s, which it must have\n", SB_PLUGIN_ID, f->name);
        CU_FAIL("required kernel missing");
    }
    return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static uint16_t half_bits(float f) { return anvil_fp32_to_fp16(f); }

static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

static size_t uniform_below(test_rng *r, size_t n) { return (size_t)(test_rng_u64(r) % n); }

/* A "sane" fp16 scale: +-2^-12 .. 2^3 with a random mantissa. */
static uint16_t sane_half(test_rng *r) {
    const uint16_t exp = (uint16_t)(3 + uniform_below(r, 16)); /* biased 3..18 */
    return (uint16_t)((test_rng_u64(r) & 0x8000u) | (exp << 10) | (test_rng_u64(r) & 0x3ffu));
}

enum row_mode { ROW_ENCODED, ROW_RANDOM_SANE, ROW_RANDOM_RAW, ROW_EXACT };

/* One weight row of nb blocks. */
static void make_weight_row(const wfmt *f, int mode, test_rng *r, size_t nb, uint64_t row, uint8_t *dst) {
    const size_t n = nb * f->be;
    if (mode == ROW_ENCODED) {
        float x[MAX_ELEMS];
        test_input_fill(x, n, (test_input_kind)(row % INPUT_KIND_COUNT), 0xA5A5u + f->id, row);
        char msg[256];
        /* the reference encoders write through block structs: aligned
         * scratch, then copy to the (odd) destination */
        static uint8_t enc[MAX_ROW_BYTES] __attribute__((aligned(64)));
        if (f->encode(x, enc, n, msg, sizeof msg) == ANVIL_OK) {
            memcpy(dst, enc, nb * f->bb);
            return;
        }
        mode = ROW_RANDOM_SANE; /* not encodable (cannot happen with finite input) */
    }
    for (size_t i = 0; i < nb * f->bb; ++i) dst[i] = (uint8_t)test_rng_u64(r);
    if (mode == ROW_RANDOM_RAW) return;
    /* exact mode: +-1 scales keep every product and sum an exact integer */
    static const uint16_t pow2[] = { 0x3C00, 0xBC00 };
    for (size_t b = 0; b < nb; ++b) {
        uint8_t *blk = dst + b * f->bb;
        for (int h = 0; h < 3; ++h) {
            const int at = h < 2 ? f->halves[h] : (f->half3 > 0 ? f->half3 : -1);
            if (at < 0) continue;
            put_u16(blk + at, mode == ROW_EXACT ? pow2[uniform_below(r, 2)] : sane_half(r));
        }
        if (f->e8m0 >= 0)
            blk[f->e8m0] = (uint8_t)(mode == ROW_EXACT ? 128 + uniform_below(r, 2) : 110 + uniform_below(r, 36));
    }
}

/* Activation blocks with small codes (-3..3) and scale 1: every float
 * operation of every dot is exact on them. Written by definition. */
static void make_exact_act(const act_fmt *a, test_rng *r, size_t n, uint8_t *dst) {
    for (size_t b = 0; b < n / a->be; ++b) {
        uint8_t *blk = dst + b * a->bb;
        int8_t q[256];
        int sum = 0;
        for (uint32_t j = 0; j < a->be; ++j) {
            q[j] = (int8_t)((int)uniform_below(r, 7) - 3);
            sum += q[j];
        }
        if (a->id == ANVIL_TYPE_Q8_K) {
            const float one = 1.0f;
            memcpy(blk, &one, 4);
            memcpy(blk + 4, q, 256);
            for (int g = 0; g < 16; ++g) {
                int16_t s = 0;
                for (int j = 0; j < 16; ++j) s = (int16_t)(s + q[16 * g + j]);
                memcpy(blk + 260 + 2 * g, &s, 2);
            }
        } else if (a->id == ANVIL_TYPE_Q8_1) {
            put_u16(blk, half_bits(1.0f));
            put_u16(blk + 2, half_bits((float)sum));
            memcpy(blk + 4, q, 32);
        } else {
            put_u16(blk, half_bits(1.0f));
            memcpy(blk + 2, q, 32);
        }
    }
}

static int same_float(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    return ua == ub;
}

/* sum |w_j| |a_j| + 2 sum |off_j| |a_j| >= the sum of |terms| of the dot
 * (off_j = the decoded weight with its code zeroed: the min part). */
static double term_magnitude(const wfmt *f, const uint8_t *w, const uint8_t *act, size_t n) {
    static float wd[LONG_N], ad[LONG_N], od[LONG_N];
    static uint8_t zeroed[LONG_N / 32 * 36] __attribute__((aligned(64)));
    const size_t nb = n / f->be;
    memcpy(zeroed, w, nb * f->bb);
    f->decode(zeroed, wd, n);
    f->act->decode(act, ad, n);
    double mag = 0;
    for (size_t j = 0; j < n; ++j) mag += fabs((double)wd[j] * ad[j]);
    if (f->codes_hi > 0) {
        for (size_t b = 0; b < nb; ++b)
            memset(zeroed + b * f->bb + f->codes_lo, 0, (size_t)(f->codes_hi - f->codes_lo));
        f->decode(zeroed, od, n);
        for (size_t j = 0; j < n; ++j) mag += 2.0 * fabs((double)od[j] * ad[j]);
    }
    return mag;
}

/* ---- activation quantizers ---------------------------------------------------- */

static void check_quantizer(const act_fmt *a) {
    const anvil_act_quantizer *q = quantizer_for(a->id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_STRING_EQUAL(q->variant, g_variant);
    static float x[16 * 256];
    static uint8_t want[16 * 292] __attribute__((aligned(64)));
    static uint8_t got_buf[16 * 292 + 64];
    test_rng r;
    test_rng_seed(&r, 0xC0FFEEu + a->id);
    size_t rows = 0, bad = 0;
    const size_t max_blocks = a->be == 256 ? 16 : 64;
    for (uint64_t row = 0; rows < g_rows; ++row, ++rows) {
        const size_t n = (1 + uniform_below(&r, max_blocks)) * a->be;
        test_input_fill(x, n, (test_input_kind)(row % INPUT_KIND_COUNT), 0x5EEDu + a->id, row);
        if (row % 7 == 3) {
            /* blocks so small that 1/d overflows (d subnormal), and sign ties */
            for (size_t j = 0; j < n; ++j) x[j] *= 0x1p-130f;
        } else if (row % 11 == 5) {
            for (size_t j = 0; j < n; j += 3) x[j] = -x[j + 1 < n ? j + 1 : j];
        } else if (row % 13 == 7) {
            /* scale exactly 1 (Q8_0/Q8_1: amax 127; Q8_K: max -127), then
             * values on, just below and just above a half: the rounding
             * rule itself (half away from zero, or Q8_K's half to even) */
            for (size_t j = 0; j < n; ++j) {
                const float h = (float)(j % 120) + 0.5f;
                const int v = (int)(j / 120 + row) % 3;
                const float y = v == 0 ? h : (v == 1 ? nextafterf(h, 0.0f) : nextafterf(h, 200.0f));
                x[j] = (j / 7) % 2 ? -y : y;
            }
            for (size_t j = 0; j < n; j += a->be) x[j] = -127.0f;
        }
        uint8_t *got = got_buf + 1 + uniform_below(&r, 63); /* any byte address */
        a->quantize(x, want, n);
        q->quantize(x, got, n);
        if (memcmp(want, got, n / a->be * a->bb) != 0) {
            if (bad++ == 0)
                fprintf(stderr, "\nact %u: row %llu (n=%zu) differs from the reference\n", a->id,
                        (unsigned long long)row, n);
        }
    }
    printf("\n    act type %u: %zu rows, %zu byte mismatches", a->id, rows, bad);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_quantize_q8_0(void) { check_quantizer(&ACT_Q8_0); }
static void test_quantize_q8_1(void) { check_quantizer(&ACT_Q8_1); }
static void test_quantize_q8_K(void) { check_quantizer(&ACT_Q8_K); }

/* ---- decode_row ---------------------------------------------------------------- */

static void test_decode_rows(void) {
    static uint8_t w_buf[MAX_ROW_BYTES + 64];
    static uint8_t w_al[MAX_ROW_BYTES] __attribute__((aligned(64)));
    static float want[MAX_ELEMS], got_buf[MAX_ELEMS + 16];
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const wfmt *f = &FORMATS[fi];
        if (!has_kernel(f)) {
            printf("\n    %-7s no kernel here: falls back to the next backend", f->name);
            continue;
        }
        const anvil_kernel *k = kernel_for(f->id);
        CU_ASSERT_STRING_EQUAL(k->variant, g_variant);
        CU_ASSERT_PTR_NOT_NULL_FATAL(k->decode_row);
        test_rng r;
        test_rng_seed(&r, 0xDEC0DEu + f->id);
        size_t bad = 0, rows = 0, nan_payload = 0;
        for (uint64_t row = 0; rows < g_rows; ++row, ++rows) {
            const size_t nb = 1 + uniform_below(&r, f->be == 256 ? 4 : 16);
            const size_t n = nb * f->be;
            const int mode = row % 3 == 0 ? ROW_ENCODED : (row % 3 == 1 ? ROW_RANDOM_RAW : ROW_RANDOM_SANE);
            uint8_t *w = w_buf + 1 + uniform_below(&r, 63);
            make_weight_row(f, mode, &r, nb, row, w_al);
            memcpy(w, w_al, nb * f->bb);
            float *got = got_buf + uniform_below(&r, 8); /* unaligned 32-byte stores */
            f->decode(w_al, want, n);
            k->decode_row(w, got, n);
            if (memcmp(want, got, n * sizeof(float)) != 0) {
                /* Bits must match, except the payload of a NaN made from two
                 * NaN operands (a block whose d and min are both NaN): C
                 * leaves that operand order to the compiler, and gcc and
                 * clang differ even when compiling the reference itself. */
                size_t j = 0;
                for (; j < n; ++j) {
                    if (memcmp(&want[j], &got[j], 4) == 0) continue;
                    if (isnan(want[j]) && isnan(got[j])) {
                        nan_payload++;
                        continue;
                    }
                    break;
                }
                if (j < n && bad++ == 0) {
                    fprintf(stderr, "\n%s decode: row %llu element %zu: %a vs reference %a\n", f->name,
                            (unsigned long long)row, j, (double)got[j], (double)want[j]);
                }
            }
        }
        printf("\n    %-7s decode: %zu rows, %zu bit mismatches (%zu NaN-payload-only)", f->name, rows, bad,
               nan_payload);
        CU_ASSERT_EQUAL(bad, 0);
    }
}

/* ---- dots: vec_dot, gemv, gemm against the reference ----------------------------- */

typedef struct dot_stats {
    size_t rows, not_exact, out_of_bound, group_dependent, gemm_mismatch;
    double worst; /* largest |diff| / magnitude */
} dot_stats;

static void check_dots(const wfmt *f, int exact_pass, dot_stats *st) {
    const anvil_kernel *k = kernel_for(f->id);
    const anvil_act_quantizer *q = quantizer_for(f->act->id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k->gemv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k->gemm);
    const size_t max_row = MAX_ROW_BYTES + 48;
    uint8_t *w_buf = malloc(MAX_GEMV_ROWS * max_row + 64);
    uint8_t *a_buf = malloc(MAX_GEMM_M * (MAX_ROW_BYTES + 40) * 2 + 64);
    uint8_t *w_al = aligned_alloc(64, MAX_ROW_BYTES);
    uint8_t *a_al = aligned_alloc(64, MAX_GEMM_M * MAX_ROW_BYTES * 2);
    float *x = malloc(MAX_ELEMS * sizeof(float));
    CU_ASSERT_FATAL(w_buf && a_buf && w_al && a_al && x);
    test_rng r;
    test_rng_seed(&r, (exact_pass ? 0xE7AC7u : 0xD07u) + f->id);
    const size_t max_nb = f->be == 256 ? (exact_pass ? 2 : MAX_BLOCKS_256) : MAX_BLOCKS_32 * 32 / f->be;
    const size_t target = exact_pass ? g_rows / 4 + 1 : g_rows;
    uint64_t row_id = 0;
    while (st->rows < target) {
        const size_t nb = 1 + uniform_below(&r, max_nb);
        const size_t n = nb * f->be;
        const size_t row_bytes = nb * f->bb;
        const size_t act_bytes = n / f->act->be * f->act->bb;
        const size_t nrows = 1 + uniform_below(&r, MAX_GEMV_ROWS);
        const size_t ws = row_bytes + uniform_below(&r, 40);
        const size_t m = 1 + uniform_below(&r, MAX_GEMM_M);
        const size_t as = act_bytes + uniform_below(&r, 40);
        uint8_t *w = w_buf + 1 + uniform_below(&r, 63);
        uint8_t *a = a_buf + 1 + uniform_below(&r, 63);
        /* activations: quantized by the backend (checked against the
         * reference quantizer too), or exact blocks */
        for (size_t i = 0; i < m; ++i) {
            uint8_t *ai = a + i * as;
            if (exact_pass) {
                make_exact_act(f->act, &r, n, ai);
            } else {
                test_input_fill(x, n, (test_input_kind)((row_id + 5 * i) % INPUT_KIND_COUNT), 0xACu + i, row_id);
                q->quantize(x, ai, n);
                f->act->quantize(x, a_al, n);
                CU_ASSERT_EQUAL(memcmp(a_al, ai, act_bytes), 0);
            }
        }
        for (size_t rr = 0; rr < nrows; ++rr) {
            const int mode = exact_pass ? ROW_EXACT
                                        : (int)((row_id + rr) % 4 == 3 ? ROW_RANDOM_RAW : (row_id + rr) % 3);
            make_weight_row(f, mode, &r, nb, row_id + rr, w + rr * ws);
        }
        float y[MAX_GEMV_ROWS], ymm[MAX_GEMM_M * (MAX_GEMV_ROWS + 3)];
        k->gemv(n, nrows, y, w, ws, a);
        const size_t ys = nrows + uniform_below(&r, 4);
        k->gemm(n, nrows, m, ymm, ys, w, ws, a, as);
        for (size_t rr = 0; rr < nrows; ++rr, ++st->rows) {
            const uint8_t *wr = w + rr * ws;
            float v = 0;
            k->vec_dot(n, &v, wr, a);
            if (!same_float(v, y[rr])) st->group_dependent++;
            memcpy(w_al, wr, row_bytes);
            memcpy(a_al, a, act_bytes);
            float ref = 0;
            f->dot(n, &ref, w_al, a_al);
            if (!same_float(v, ref) && (f->bit_exact || exact_pass)) {
                if (st->not_exact++ == 0) {
                    fprintf(stderr, "\n%s%s: row %llu (n=%zu): %a vs reference %a\n", f->name,
                            exact_pass ? " exact" : "", (unsigned long long)(row_id + rr), n, (double)v, (double)ref);
                }
            }
            const double mag = term_magnitude(f, w_al, a_al, n);
            if (isnan(ref) || isnan(v) || isinf(ref) || !isfinite(mag)) {
                if (!same_float(v, ref) && !(isnan(v) && isnan(ref))) st->out_of_bound++;
            } else {
                const double diff = fabs((double)v - (double)ref);
                if (diff > 1e-5 * mag) {
                    if (st->out_of_bound++ == 0) {
                        fprintf(stderr, "\n%s: row %llu: %.9g vs %.9g, diff %.3g > 1e-5 * %.3g\n", f->name,
                                (unsigned long long)(row_id + rr), (double)v, (double)ref, diff, mag);
                    }
                } else if (mag > 0 && diff / mag > st->worst) {
                    st->worst = diff / mag;
                }
            }
            /* every activation row of the GEMM, against vec_dot */
            for (size_t i = 0; i < m; ++i) {
                float vi = 0;
                k->vec_dot(n, &vi, wr, a + i * as);
                if (!same_float(vi, ymm[i * ys + rr])) st->gemm_mismatch++;
            }
        }
        row_id += nrows;
    }
    free(w_buf);
    free(a_buf);
    free(w_al);
    free(a_al);
    free(x);
}

static void test_dots(void) {
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const wfmt *f = &FORMATS[fi];
        if (!has_kernel(f)) continue;
        dot_stats st = { 0 }, ex = { 0 };
        check_dots(f, 0, &st);
        check_dots(f, 1, &ex);
        printf("\n    %-7s %zu rows: %zu outside 1e-5 (worst %.2g), %zu not bit-identical%s; gemv/gemm vs vec_dot "
               "%zu/%zu; exact pass %zu rows, %zu integer mismatches",
               f->name, st.rows, st.out_of_bound, st.worst, st.not_exact, f->bit_exact ? "" : " (not required)",
               st.group_dependent, st.gemm_mismatch, ex.rows, ex.not_exact);
        CU_ASSERT_EQUAL(st.out_of_bound, 0);
        CU_ASSERT_EQUAL(st.not_exact, 0);
        CU_ASSERT_EQUAL(st.group_dependent, 0);
        CU_ASSERT_EQUAL(st.gemm_mismatch, 0);
        CU_ASSERT_EQUAL(ex.not_exact, 0);
        CU_ASSERT_EQUAL(ex.out_of_bound, 0);
        CU_ASSERT_EQUAL(ex.group_dependent + ex.gemm_mismatch, 0);
    }
}

/* GEMM tile edges: every m from 1 to GT_MAX_M against row counts around
 * multiples of 8 and 16 (the tiled kernels' register tiles: 16 weight
 * rows x 8 activation rows for AVX-512 Q8_0, 8 x 4 for AVX2), odd
 * strides, rows of random bytes (Q8_0 codes -128 included; sane or raw
 * scales) and activations with codes at +-127: each (row, activation row)
 * result bit-identical to vec_dot, and to the reference where the format
 * is bit-exact. With fewer rows asked for (SB_ROWS_ENV below 2000: the
 * valgrind run), m in 1, 2, 7, 8, 9, 17 only. Last, one long GEMM
 * (GT_CHUNK_M activation rows of MAX_ELEMS elements x 17 rows): more than
 * one chunk of activation rows in the tiled kernels (AVX-512 Q8_0: 64
 * rows a chunk at that length, AVX2: 72). */
#define GT_MAX_M 19
#define GT_CHUNK_M 80
static void test_gemm_tiles(void) {
    static const size_t row_counts[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 33 };
    const size_t max_rows = 33, n_counts = sizeof row_counts / sizeof row_counts[0];
    float *x = malloc(MAX_ELEMS * sizeof(float));
    uint8_t *w = malloc(max_rows * (MAX_ROW_BYTES + 40) + 64);
    uint8_t *a = malloc(GT_CHUNK_M * (MAX_ROW_BYTES + 40) * 2 + 64);
    float *y = malloc(GT_CHUNK_M * (max_rows + 3) * sizeof(float));
    uint8_t *w_al = aligned_alloc(64, MAX_ROW_BYTES);
    uint8_t *a_al = aligned_alloc(64, MAX_ROW_BYTES * 2);
    CU_ASSERT_FATAL(x && w && a && y && w_al && a_al);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const wfmt *f = &FORMATS[fi];
        if (!has_kernel(f)) continue;
        const anvil_kernel *k = kernel_for(f->id);
        const anvil_act_quantizer *q = quantizer_for(f->act->id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        test_rng r;
        test_rng_seed(&r, 0x6E77u + f->id);
        size_t checked = 0, mismatch = 0, not_ref = 0;
        for (size_t ci = 0; ci <= GT_MAX_M * n_counts; ++ci) {
            const int chunked = ci == GT_MAX_M * n_counts;
            const size_t m = chunked ? GT_CHUNK_M : 1 + ci / n_counts, ri = chunked ? 8 : ci % n_counts;
            if (g_rows < 2000 && !chunked && m != 1 && m != 2 && m != 7 && m != 8 && m != 9 && m != 17) continue;
            {
                const size_t nrows = row_counts[ri];
                const size_t nb = chunked ? MAX_ELEMS / f->be : 1 + uniform_below(&r, f->be == 256 ? 3 : 12);
                const size_t n = nb * f->be, row_bytes = nb * f->bb;
                const size_t act_bytes = n / f->act->be * f->act->bb;
                const size_t ws = row_bytes + uniform_below(&r, 40), as = act_bytes + uniform_below(&r, 40);
                const size_t ys = nrows + uniform_below(&r, 4);
                for (size_t rr = 0; rr < nrows; ++rr)
                    make_weight_row(f, (rr + m) % 2 ? ROW_RANDOM_RAW : ROW_RANDOM_SANE, &r, nb, rr + 100 * m,
                                    w + rr * ws);
                for (size_t i = 0; i < m; ++i) {
                    test_input_fill(x, n, (test_input_kind)((i + m) % INPUT_KIND_COUNT), 0x7Eu + i, m * 64 + ri);
                    if ((i + ri) % 3 == 0) {
                        for (size_t e = 0; e < n; ++e) x[e] = (e + i) % 2 ? 1.0f : -1.0f; /* codes +-127 */
                    }
                    q->quantize(x, a + i * as, n);
                }
                for (size_t i = 0; i < m * ys; ++i) y[i] = NAN;
                k->gemm(n, nrows, m, y, ys, w, ws, a, as);
                for (size_t rr = 0; rr < nrows; ++rr) {
                    for (size_t i = 0; i < m; ++i, ++checked) {
                        float v = 0, ref = 0;
                        k->vec_dot(n, &v, w + rr * ws, a + i * as);
                        if (!same_float(v, y[i * ys + rr])) {
                            if (mismatch++ == 0) {
                                fprintf(stderr,
                                        "\n%s gemm: m=%zu nrows=%zu n=%zu row %zu act %zu: %a vs vec_dot %a\n",
                                        f->name, m, nrows, n, rr, i, (double)y[i * ys + rr], (double)v);
                            }
                        }
                        if (f->bit_exact) {
                            memcpy(w_al, w + rr * ws, row_bytes);
                            memcpy(a_al, a + i * as, act_bytes);
                            f->dot(n, &ref, w_al, a_al);
                            if (!same_float(ref, y[i * ys + rr])) not_ref++;
                        }
                    }
                }
            }
        }
        printf("\n    %-7s gemm m<=%d x %zu row counts, and m=%d: %zu results, %zu differ from vec_dot, %zu from "
               "the reference",
               f->name, GT_MAX_M, n_counts, GT_CHUNK_M, checked, mismatch, not_ref);
        CU_ASSERT(checked > 0);
        CU_ASSERT_EQUAL(mismatch, 0);
        CU_ASSERT_EQUAL(not_ref, 0);
    }
    free(x);
    free(w);
    free(a);
    free(y);
    free(w_al);
    free(a_al);
}

/* Rows longer than any the random pass makes, through GEMV and vec_dot:
 * LONG_ROWS of them (passes of 8, 8, 2, 1 rows), at a stride a little
 * over the row length, so the backend's per-row software prefetch (for
 * passes of 20 KB and more) and its run into the next pass are exercised
 * along with the linear one. Prefetching cannot change a result; this
 * checks that the passes still agree with the reference. */
static void test_long_rows(void) {
    const size_t n = LONG_N;
    const size_t max_ws = n / 32 * 36 + 40;
    float *x = malloc(n * sizeof(float));
    uint8_t *w = aligned_alloc(64, (LONG_ROWS * max_ws + 63) / 64 * 64);
    uint8_t *a = aligned_alloc(64, n / 256 * 292 + n / 32 * 36);
    CU_ASSERT_FATAL(x && w && a);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const wfmt *f = &FORMATS[fi];
        if (!has_kernel(f)) continue;
        const anvil_kernel *k = kernel_for(f->id);
        const size_t rb = n / f->be * f->bb, ws = rb + 40;
        char msg[256];
        /* three encoded rows, repeated (encoding is the slow part) */
        for (size_t r = 0; r < LONG_ROWS; ++r) {
            if (r < 3) {
                test_input_fill(x, n, INPUT_LLM_LIKE, 77, r);
                CU_ASSERT_EQUAL_FATAL(f->encode(x, w + r * ws, n, msg, sizeof msg), ANVIL_OK);
            } else {
                memcpy(w + r * ws, w + (r % 3) * ws, rb);
            }
            memset(w + r * ws + rb, 0xA5, ws - rb); /* the gap between rows is not data */
        }
        test_input_fill(x, n, INPUT_NORMAL, 78, 0);
        quantizer_for(f->act->id)->quantize(x, a, n);
        float y[LONG_ROWS];
        k->gemv(n, LONG_ROWS, y, w, ws, a);
        for (size_t r = 0; r < LONG_ROWS; ++r) {
            float ref = 0;
            f->dot(n, &ref, w + r * ws, a);
            const double mag = term_magnitude(f, w + r * ws, a, n) + 1e-30;
            CU_ASSERT(fabs((double)y[r] - ref) <= 1e-5 * mag);
            if (f->bit_exact) CU_ASSERT(same_float(y[r], ref));
            float v = 0;
            k->vec_dot(n, &v, w + r * ws, a);
            CU_ASSERT(same_float(v, y[r]));
        }
    }
    free(x);
    free(w);
    free(a);
}

/* ---- score --------------------------------------------------------------------- */

static void test_score(void) {
    char why[256];
    anvil_cpu_info cpu = g_cpu;
#if SB_KIND == SB_AVX2
    const uint64_t all = AVX2_NEEDED | ANVIL_CPU_SSE42;
    const uint64_t bits[] = { ANVIL_CPU_AVX2, ANVIL_CPU_FMA, ANVIL_CPU_F16C, ANVIL_CPU_BMI2 };
    const char *names[] = { "avx2", "fma", "f16c", "bmi2" };
#else
    const uint64_t all = AVX2_NEEDED | AVX512_NEEDED | ANVIL_CPU_SSE42 | ANVIL_CPU_AVX512VNNI;
    const uint64_t bits[] = { ANVIL_CPU_AVX512F, ANVIL_CPU_AVX512BW, ANVIL_CPU_AVX512VL, ANVIL_CPU_BMI2 };
    const char *names[] = { "avx512f", "avx512bw", "avx512vl", "bmi2" };
#endif
    cpu.arch = ANVIL_ARCH_X86_64;
    cpu.features = all;
    CU_ASSERT(g_backend->score(&cpu, why, sizeof why) > 0);
#if SB_KIND == SB_AVX512_EMU
    /* the emulation scores on any CPU, with a reason that says so */
    cpu.features = 0;
    CU_ASSERT(g_backend->score(&cpu, why, sizeof why) > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "SIMDe"));
    (void)bits;
    (void)names;
#else
#if SB_KIND == SB_AVX512
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "variant avx512-vnni"));
    cpu.features = all & ~ANVIL_CPU_AVX512VNNI;
    CU_ASSERT(g_backend->score(&cpu, why, sizeof why) > 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "variant avx512)"));
#endif
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; ++i) {
        cpu.features = all & ~bits[i];
        CU_ASSERT_EQUAL(g_backend->score(&cpu, why, sizeof why), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, names[i]));
    }
    cpu.arch = ANVIL_ARCH_AARCH64;
    cpu.features = ~UINT64_C(0);
    CU_ASSERT_EQUAL(g_backend->score(&cpu, why, sizeof why), 0);
#endif
}

/* ---- through the host: CLI and anvil_matmul with and without the mask ------------- */

static char g_config[4096];

static void write_config(void) {
    snprintf(g_config, sizeof g_config, "%s/%s.ini", test_tmpdir(), SB_BACKEND);
    FILE *fp = fopen(g_config, "w");
    if (fp == NULL) return;
    fprintf(
        fp,
        "[plugins]\npath = %s\nload = codec-q8_0, codec-kquants, codec-ternary, codec-cold, codec-ptqtp, backend-scalar%s%s\n"
        "[backends]\norder = %s%sscalar\n",
        ANVIL_PLUGIN_DIR, SB_KIND == SB_AVX512_EMU ? "" : ", ", SB_KIND == SB_AVX512_EMU ? "" : SB_PLUGIN_ID,
        /* The emulated build is not an installed plugin: the host-side
             * config names only what it loads (an order naming a backend
             * nobody provides is a config error). */
        SB_KIND == SB_AVX512_EMU ? "" : SB_BACKEND, SB_KIND == SB_AVX512_EMU ? "" : ", ");
    fclose(fp);
}

#ifdef SB_MASK
/* The `anvil plugins` line of this backend, with or without a CPU mask. */
static void plugins_line(const char *mask, char *line_out, size_t size) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ANVIL_CPU_MASK=%s '%s' --config '%s' plugins 2>&1", mask, ANVIL_CLI, g_config);
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static char out[1 << 16];
    const size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    CU_ASSERT_EQUAL(pclose(p), 0);
    const char *line = strstr(out, "(" SB_PLUGIN_ID ")");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    const char *eol = strchr(line, '\n');
    snprintf(line_out, size, "%.*s", (int)(eol ? eol - line : (long)strlen(line)), line);
}

static void test_cli_mask(void) {
    char line[512];
    plugins_line(SB_MASK, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "SKIPPED"));
#if SB_KIND == SB_AVX2
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "lacks: avx2"));
#else
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "lacks: avx512f avx512bw avx512vl"));
#endif
    /* without the mask: used where the CPU has what it needs, else skipped
     * with the reason */
    plugins_line("", line, sizeof line);
    if (g_runnable) {
        CU_ASSERT_PTR_NULL(strstr(line, "SKIPPED"));
    } else {
        CU_ASSERT_PTR_NOT_NULL(strstr(line, "SKIPPED"));
        CU_ASSERT_PTR_NOT_NULL(strstr(line, "lacks:"));
    }
#if SB_KIND == SB_AVX512
    if (g_runnable && (g_cpu.features_raw & ANVIL_CPU_AVX512VNNI)) {
        plugins_line("-avx512vnni", line, sizeof line);
        CU_ASSERT_PTR_NOT_NULL(strstr(line, "variant avx512)"));
    }
#endif
}
#endif

#define MM_ROWS 37
#define MM_K 1024
#define MM_M 3

/* anvil_matmul over every format (deterministic data); writes the outputs
 * and the dispatched backend names to `path`. Returns 0 on success. */
static int matmul_dump(const char *config, const char *path) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, config, &err) != ANVIL_OK) {
        fprintf(stderr, "matmul_dump: %s\n", err.message);
        return 1;
    }
    FILE *fp = fopen(path, "wb");
    float *x = malloc(MM_M * MM_K * sizeof(float)), *wf = malloc(MM_K * sizeof(float));
    uint8_t *w = malloc(MM_ROWS * MM_K / 32 * 36);
    int rc = fp && x && wf && w ? 0 : 1;
    for (size_t fi = 0; rc == 0 && fi < N_FORMATS; ++fi) {
        const wfmt *f = &FORMATS[fi];
        const size_t rb = MM_K / f->be * f->bb;
        for (size_t r = 0; r < MM_ROWS; ++r) {
            test_input_fill(wf, MM_K, (test_input_kind)(r % INPUT_KIND_COUNT), 31, r);
            /* the formats that need an importance matrix: the test's encoder */
            char msg[256];
            if (anvil_encode(ctx, f->id, wf, MM_K, w + r * rb, rb, &err) != ANVIL_OK &&
                f->encode(wf, w + r * rb, MM_K, msg, sizeof msg) != ANVIL_OK)
                rc = 1;
        }
        for (size_t i = 0; i < MM_M; ++i) test_input_fill(x + i * MM_K, MM_K, INPUT_LLM_LIKE, 32, i);
        float y[MM_M * MM_ROWS];
        if (rc == 0 && anvil_matmul(ctx, f->id, w, MM_ROWS, MM_K, x, MM_M, y, &err) != ANVIL_OK) {
            fprintf(stderr, "matmul_dump %s: %s\n", f->name, err.message);
            rc = 1;
        }
        const char *backend = "";
        for (size_t d = 0; d < anvil_ctx_dispatch_count(ctx); ++d) {
            anvil_dispatch_report rep;
            if (anvil_ctx_dispatch_report(ctx, d, &rep) == ANVIL_OK && rep.weight_type == f->id && rep.backend) {
                backend = rep.backend;
            }
        }
        char name[16] = "";
        snprintf(name, sizeof name, "%s", backend);
        fwrite(name, 1, sizeof name, fp);
        fwrite(y, sizeof(float), MM_M * MM_ROWS, fp);
    }
    if (fp) fclose(fp);
    free(x);
    free(wf);
    free(w);
    anvil_ctx_close(ctx);
    return rc;
}

#ifdef SB_MASK
static void test_matmul_mask(void) {
    char masked[4096], plain[4096];
    snprintf(masked, sizeof masked, "%s/masked.bin", test_tmpdir());
    snprintf(plain, sizeof plain, "%s/plain.bin", test_tmpdir());
    /* ANVIL_CPU_MASK is read once per process: the masked run is a child. */
    char cmd[16384];
    char self[4096];
    const ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    CU_ASSERT_FATAL(sl > 0);
    self[sl] = '\0';
    snprintf(cmd, sizeof cmd, "ANVIL_CPU_MASK=%s '%s' --matmul-dump '%s' '%s'", SB_MASK, self, g_config, masked);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "ANVIL_CPU_MASK= '%s' --matmul-dump '%s' '%s'", self, g_config, plain);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    FILE *fm = fopen(masked, "rb"), *fp = fopen(plain, "rb");
    CU_ASSERT_FATAL(fm != NULL && fp != NULL);
    size_t worst_fmt = 0;
    double worst = 0;
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        char bm[16], bp[16];
        float ym[MM_M * MM_ROWS], yp[MM_M * MM_ROWS];
        CU_ASSERT_FATAL(fread(bm, 1, 16, fm) == 16 && fread(ym, sizeof(float), MM_M * MM_ROWS, fm) == MM_M * MM_ROWS);
        CU_ASSERT_FATAL(fread(bp, 1, 16, fp) == 16 && fread(yp, sizeof(float), MM_M * MM_ROWS, fp) == MM_M * MM_ROWS);
        CU_ASSERT_STRING_EQUAL(bm, "scalar");
        CU_ASSERT_STRING_EQUAL(bp, kernel_for(FORMATS[fi].id) != NULL ? SB_BACKEND : "scalar");
        for (size_t i = 0; i < MM_M * MM_ROWS; ++i) {
            /* bit-identical by design (IQ4_XS: within 1e-5 of |y|, its
             * terms here do not cancel) */
            const double d = fabs((double)ym[i] - yp[i]), s = fabs((double)ym[i]) + 1e-30;
            if (FORMATS[fi].bit_exact) {
                CU_ASSERT(same_float(ym[i], yp[i]));
            } else {
                CU_ASSERT(d <= 1e-5 * s);
            }
            if (d / s > worst) {
                worst = d / s;
                worst_fmt = fi;
            }
        }
    }
    printf("\n    masked (scalar) vs " SB_BACKEND " through anvil_matmul: largest relative difference %.2g (%s)",
           worst, FORMATS[worst_fmt].name);
    fclose(fm);
    fclose(fp);
}

#endif

/* ---- main ------------------------------------------------------------------------ */

/* Re-initialise the plugin with the CPU features of one variant, as the
 * host would on such a CPU. */
static int select_variant(uint64_t features, const char *variant) {
    g_cpu.features = features;
    char err[256] = "";
    static anvil_host_services services;
    services.struct_size = sizeof services;
    services.abi_major = ANVIL_ABI_MAJOR;
    services.abi_minor = ANVIL_ABI_MINOR;
    services.cpu = &g_cpu;
    services.log = host_log;
    if (g_desc->init != NULL && g_desc->init(&services, err, sizeof err) != ANVIL_OK) {
        fprintf(stderr, "%s: init failed: %s\n", SB_PLUGIN_ID, err);
        return 1;
    }
    g_backend = g_desc->backends[0];
    g_variant = variant;
    return 0;
}

static uint64_t g_features_plain, g_features_vnni;
static int suite_plain(void) { return select_variant(g_features_plain, SB_VARIANT_PLAIN); }
static int suite_vnni(void) { return select_variant(g_features_vnni, SB_VARIANT_VNNI); }

static void add_kernel_tests(const char *name, CU_InitializeFunc init, int encoders) {
    CU_pSuite s = CU_add_suite(name, init, NULL);
    /* one encoder build serves every kernel variant: checked once */
    if (encoders) sb_add_encoder_tests(s);
    CU_add_test(s, "Q8_0 quantizer == reference bytes", test_quantize_q8_0);
    CU_add_test(s, "Q8_1 quantizer == reference bytes", test_quantize_q8_1);
    CU_add_test(s, "Q8_K quantizer == reference bytes", test_quantize_q8_K);
    CU_add_test(s, "decode_row == reference bits", test_decode_rows);
    CU_add_test(s, "vec_dot/gemv/gemm vs reference", test_dots);
    CU_add_test(s, "long rows", test_long_rows);
    CU_add_test(s, "gemm tile edges vs vec_dot", test_gemm_tiles);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--matmul-dump") == 0) return matmul_dump(argv[2], argv[3]);
    const char *rows = getenv(SB_ROWS_ENV);
    if (rows != NULL && atoi(rows) > 0) g_rows = (size_t)atoi(rows);

    /* The host's CPU probe, before any mask, decides whether the kernels can
     * run here at all. */
    write_config();
    anvil_ctx *ctx = NULL;
    anvil_error err;
    if (anvil_ctx_open(&ctx, g_config, &err) != ANVIL_OK) {
        fprintf(stderr, "test %s: cannot open %s: %s\n", SB_BACKEND, g_config, err.message);
        return 1;
    }
    g_cpu = *anvil_ctx_cpu(ctx);
    anvil_ctx_close(ctx);
    g_runnable = SB_KIND == SB_AVX512_EMU ||
                 (g_cpu.arch == ANVIL_ARCH_X86_64 && (g_cpu.features_raw & SB_NEEDED) == SB_NEEDED);
    g_cpu.features = g_cpu.features_raw;
    if (load_plugin() != 0) return 1;

    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite(SB_BACKEND, NULL, NULL);
    CU_add_test(s, "score: 0 with the missing feature named", test_score);
#ifdef SB_MASK
    CU_add_test(s, "ANVIL_CPU_MASK=" SB_MASK ": anvil plugins says why", test_cli_mask);
#endif
    /* The variants to check: the emulation runs both everywhere; the real
     * plugin those this CPU can execute. */
    g_features_plain = g_cpu.features_raw & ~(uint64_t)ANVIL_CPU_AVX512VNNI;
    g_features_vnni = g_cpu.features_raw | ANVIL_CPU_AVX512VNNI;
    const int have_vnni = SB_KIND == SB_AVX512_EMU || (g_cpu.features_raw & ANVIL_CPU_AVX512VNNI) != 0;
    if (!g_runnable) {
        printf("%s: kernels SKIPPED: this CPU lacks what %s needs (score and CLI checks still run)%s\n", SB_BACKEND,
               SB_PLUGIN_ID,
               SB_KIND == SB_AVX512 ? "; test_avx512_emu checks the same kernel sources through SIMDe" : "");
    } else {
        sb_encoder_setup(&g_backend, SB_ENC_VARIANT, SB_REQUIRED, g_rows);
        add_kernel_tests(SB_VARIANT_PLAIN, suite_plain, 1);
        if (SB_KIND != SB_AVX2 && have_vnni) add_kernel_tests(SB_VARIANT_VNNI, suite_vnni, 0);
#ifdef SB_MASK
        CU_pSuite h = CU_add_suite("through the host", NULL, NULL);
        CU_add_test(h, "ANVIL_CPU_MASK=" SB_MASK ": anvil_matmul identical", test_matmul_mask);
#endif
    }
    const int rc = test_run_cunit();
    test_tmpdir_cleanup();
    return rc;
}
