/* SPDX-License-Identifier: MIT */
/*
 * backend-neon against the referee (plugins/ref, the code backend-scalar
 * runs), for every kernel and every variant this CPU can execute.
 *
 * The plugin is loaded the way the host loads it (dlopen + entry symbol)
 * and initialised once per variant with a CPU description that offers just
 * that variant's features, so one run checks:
 *   neon          plain Advanced SIMD (always)
 *   neon-dotprod  sdot                  (when the CPU has asimddp)
 *   neon-i8mm     smmla packed GEMMs    (when it also has i8mm)
 * Under `qemu-aarch64 -cpu max` all three run; under `-cpu cortex-a53`
 * only the first (the others would be illegal instructions there).
 *
 * Per format and variant, >= ANVIL_NEON_ROWS (default 10,000) random rows
 * of random length, weights and activations at odd addresses:
 *   - activation quantizers: bytes identical to the reference quantizer;
 *   - row decoders: bits identical to the codec's decoder;
 *   - vec_dot: within the contract (1e-5 of the magnitude of the terms) of
 *     the reference dot, and (what this backend promises beyond that) bit
 *     for bit equal to it;
 *   - packed GEMMs (Q8_0, Q4_K): equal to the plain vec_dot for every
 *     output, whatever rows a call covers;
 *   - plain GEMMs (ptqtp2s, ptqtp3s): equal to vec_dot and to the
 *     reference for every output, rows longer than a prepared chunk too.
 * Finally the host itself: the registry loads backend-neon from the
 * default config, dispatches to it with the variant the CPU implies, and a
 * packed matmul through the host agrees with the reference.
 */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/anvil.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"
#include "cpu_probe.h"
#include "inputs.h"
#include "ref/cold.h"
#include "ref/cold_enc_grid.h"
#include "ref/kquants.h"
#include "ref/q8_0_family.h"
#include "ref/q8_k.h"
#include "ref/ternary.h"
#include "ptqtp_ref.h"
#include "simd_encoder_test.h"
#include "test_env.h"

/* ---- formats ---------------------------------------------------------------- */

typedef struct act_fmt {
    uint32_t type;
    const char *name;
    size_t be, bb;
    void (*quantize)(const float *, void *, size_t);
    void (*decode)(const void *, float *, size_t);
} act_fmt;

static const act_fmt acts[] = {
    { ANVIL_TYPE_Q8_0, "q8_0", 32, sizeof(anvil_block_q8_0), anvil_ref_quantize_q8_0, anvil_ref_decode_q8_0 },
    { ANVIL_TYPE_Q8_1, "q8_1", 32, sizeof(anvil_block_q8_1), anvil_ref_quantize_q8_1, anvil_ref_decode_q8_1 },
    { ANVIL_TYPE_Q8_K, "q8_K", 256, sizeof(anvil_block_q8_K), anvil_ref_quantize_q8_K, anvil_ref_decode_q8_K },
};
#define N_ACTS (sizeof acts / sizeof acts[0])

typedef struct fmt {
    const char *name;
    uint32_t type;
    const act_fmt *act;
    size_t be, bb;
    size_t max_blocks; /* a row has 1..max_blocks blocks */
    anvil_encode_fn encode;
    anvil_decode_fn decode;
    anvil_vec_dot_fn dot;
} fmt;

#define A80 (&acts[0])
#define A81 (&acts[1])
#define A8K (&acts[2])
#define F(name, T, act, be, blk, maxb, w, a)                                                                        \
    {                                                                                                               \
        name, ANVIL_TYPE_##T, act, be, sizeof(anvil_block_##blk), maxb, anvil_ref_encode_##w, anvil_ref_decode_##w, \
            anvil_ref_vec_dot_##w##_##a                                                                             \
    }

/* Encoders of the formats whose reference encoder wants an importance
 * matrix (ggml has no unweighted IQ2_XXS, IQ2_XS, IQ1_S): fixed weights. */
static float g_imatrix[4 * 256];

static const float *imatrix(size_t n, float step) {
    for (size_t j = 0; j < n; ++j) g_imatrix[j] = 1.0f + (float)(j % 7) * step;
    return g_imatrix;
}

static int encode_iq2_xxs_w(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    if (n > sizeof g_imatrix / sizeof g_imatrix[0]) return ANVIL_E_INVALID_ARG;
    return anvil_ref_encode_rows_iq2_xxs(src, dst, 1, n, imatrix(n, 0.25f), msg, msg_size);
}

static int encode_iq2_xs_w(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    if (n > sizeof g_imatrix / sizeof g_imatrix[0]) return ANVIL_E_INVALID_ARG;
    return anvil_ref_encode_rows_iq2_xs(src, dst, 1, n, imatrix(n, 0.25f), msg, msg_size);
}

static int encode_iq1_s_w(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    if (n > sizeof g_imatrix / sizeof g_imatrix[0]) return ANVIL_E_INVALID_ARG;
    return anvil_ref_encode_rows_iq1_s(src, dst, 1, n, imatrix(n, 0.0f), msg, msg_size);
}

#define FW(name, T, act, be, blk, maxb, enc, w, a)                                                 \
    {                                                                                              \
        name, ANVIL_TYPE_##T, act, be, sizeof(anvil_block_##blk), maxb, enc, anvil_ref_decode_##w, \
            anvil_ref_vec_dot_##w##_##a                                                            \
    }

static const fmt formats[] = {
    F("q4_0", Q4_0, A80, 32, q4_0, 24, q4_0, q8_0),
    F("q4_1", Q4_1, A81, 32, q4_1, 24, q4_1, q8_1),
    F("q5_0", Q5_0, A80, 32, q5_0, 24, q5_0, q8_0),
    F("q5_1", Q5_1, A81, 32, q5_1, 24, q5_1, q8_1),
    F("q8_0", Q8_0, A80, 32, q8_0, 24, q8_0, q8_0),
    F("q2_K", Q2_K, A8K, 256, q2_K, 3, q2_K, q8_K),
    F("q3_K", Q3_K, A8K, 256, q3_K, 3, q3_K, q8_K),
    F("q4_K", Q4_K, A8K, 256, q4_K, 3, q4_K, q8_K),
    F("q5_K", Q5_K, A8K, 256, q5_K, 3, q5_K, q8_K),
    F("q6_K", Q6_K, A8K, 256, q6_K, 3, q6_K, q8_K),
    F("tq1_0", TQ1_0, A8K, 256, tq1_0, 3, tq1_0, q8_K),
    F("tq2_0", TQ2_0, A8K, 256, tq2_0, 3, tq2_0, q8_K),
    F("iq4_nl", IQ4_NL, A80, 32, iq4_nl, 24, iq4_nl, q8_0),
    F("iq4_xs", IQ4_XS, A8K, 256, iq4_xs, 3, iq4_xs, q8_K),
    F("mxfp4", MXFP4, A80, 32, mxfp4, 24, mxfp4, q8_0),
    /* codec-ptqtp's trit planes (a plugin's types, layout in the SDK) */
    { "ptqtp2", ANVIL_TYPE_PTQTP2, A8K, 256, ANVIL_PTQTP_BLOCK_BYTES(2), 3, anvil_ptqtp_encode2, anvil_ptqtp_decode2,
      anvil_ptqtp_vec_dot2_q8_K },
    { "ptqtp3", ANVIL_TYPE_PTQTP3, A8K, 256, ANVIL_PTQTP_BLOCK_BYTES(3), 3, anvil_ptqtp_encode3, anvil_ptqtp_decode3,
      anvil_ptqtp_vec_dot3_q8_K },
    /* and their revision with sub-block scales (anvil/formats/ptqtps.h) */
    { "ptqtp2s", ANVIL_TYPE_PTQTP2S, A8K, 256, ANVIL_PTQTPS_BLOCK_BYTES(2), 3, anvil_ptqtps_encode2,
      anvil_ptqtps_decode2, anvil_ptqtps_vec_dot2_q8_K },
    { "ptqtp3s", ANVIL_TYPE_PTQTP3S, A8K, 256, ANVIL_PTQTPS_BLOCK_BYTES(3), 3, anvil_ptqtps_encode3,
      anvil_ptqtps_decode3, anvil_ptqtps_vec_dot3_q8_K },
    /* issue 39: vec_dot, gemv and gemm from one row kernel (has_rows) */
    FW("iq2_xxs", IQ2_XXS, A8K, 256, iq2_xxs, 3, encode_iq2_xxs_w, iq2_xxs, q8_K),
    FW("iq2_xs", IQ2_XS, A8K, 256, iq2_xs, 3, encode_iq2_xs_w, iq2_xs, q8_K),
    F("iq3_xxs", IQ3_XXS, A8K, 256, iq3_xxs, 3, iq3_xxs, q8_K),
    F("iq3_s", IQ3_S, A8K, 256, iq3_s, 3, iq3_s, q8_K),
    F("iq2_s", IQ2_S, A8K, 256, iq2_s, 3, iq2_s, q8_K),
    FW("iq1_s", IQ1_S, A8K, 256, iq1_s, 3, encode_iq1_s_w, iq1_s, q8_K),
    F("iq1_m", IQ1_M, A8K, 256, iq1_m, 3, iq1_m, q8_K),
    F("nvfp4", NVFP4, A80, 64, nvfp4, 12, nvfp4, q8_0),
    F("q1_0", Q1_0, A80, 128, q1_0, 6, q1_0, q8_0),
    F("q2_0", Q2_0, A80, 64, q2_0, 12, q2_0, q8_0),
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* ---- the plugin, one variant at a time ---------------------------------------------- */

typedef struct level {
    const char *name;
    uint64_t features;
    const char *variant;        /* of the plain kernels */
    const char *packed_variant; /* of Q8_0 / Q4_K, which carry the packed GEMMs */
} level;

static const level levels[] = {
    { "neon", ANVIL_CPU_ASIMD, "neon", "neon" },
    { "neon-dotprod", ANVIL_CPU_ASIMD | ANVIL_CPU_ASIMDDP, "neon-dotprod", "neon-dotprod" },
    { "neon-i8mm", ANVIL_CPU_ASIMD | ANVIL_CPU_ASIMDDP | ANVIL_CPU_I8MM, "neon-dotprod", "neon-i8mm" },
};
#define N_LEVELS (sizeof levels / sizeof levels[0])

static void *plugin;
static const anvil_plugin_desc *desc;
static uint64_t cpu_raw; /* what this CPU has (HWCAP, before any mask) */
static size_t rows_per_format = 10000;

static int level_runs_here(const level *l) { return (cpu_raw & l->features) == l->features; }

/* Whether level l runs on this CPU; says so when it does not. */
static int level_runs_here_or_say(size_t l) {
    if (level_runs_here(&levels[l])) return 1;
    printf("\n  %s: not run (this CPU lacks it)", levels[l].name);
    return 0;
}

/* Level l is the previous level's variant (neon-i8mm after neon-dotprod:
 * they differ only in the packed GEMMs). */
static int same_variant_as_previous(size_t l) {
    return l > 0 && strcmp(levels[l].variant, levels[l - 1].variant) == 0;
}

/* init() the plugin as the host would on a CPU with exactly these
 * features; returns its one backend, or NULL when init fails. */
static const anvil_backend *try_init_as(uint32_t arch, uint64_t features) {
    anvil_cpu_info cpu;
    memset(&cpu, 0, sizeof cpu);
    cpu.struct_size = sizeof cpu;
    cpu.arch = arch;
    cpu.features = cpu.features_raw = features;
    cpu.n_cpus = 1;
    anvil_host_services host = test_host_services();
    host.cpu = &cpu;
    char err[256] = "";
    if (desc->init(&host, err, sizeof err) != ANVIL_OK || desc->n_backends != 1) return NULL;
    return desc->backends[0];
}

static const anvil_backend *init_as(uint32_t arch, uint64_t features) {
    const anvil_backend *b = try_init_as(arch, features);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    return b;
}

static const anvil_kernel *kernel_for(const anvil_backend *b, uint32_t type) {
    for (size_t i = 0; i < b->n_kernels; ++i) {
        if (b->kernels[i]->weight_type == type) return b->kernels[i];
    }
    return NULL;
}

static const anvil_act_quantizer *quantizer_for(const anvil_backend *b, uint32_t type) {
    for (size_t i = 0; i < b->n_quantizers; ++i) {
        if (b->quantizers[i]->act_type == type) return b->quantizers[i];
    }
    return NULL;
}

/* dlopen the plugin and take its descriptor (each suite loads it, and its
 * clean-up unloads it). Returns 0 or 1. */
static int load_plugin(void) {
    const char *rows = getenv("ANVIL_NEON_ROWS");
    if (rows != NULL && atoi(rows) > 0) rows_per_format = (size_t)atoi(rows);
    cpu_raw = anvil__cpu_probe()->features_raw;
    char path[4096];
    snprintf(path, sizeof path, "%s/backend-neon.so", ANVIL_PLUGIN_DIR);
    plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return 1;
    }
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(plugin, ANVIL_PLUGIN_ENTRY_SYMBOL);
    desc = entry ? entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) : NULL;
    return desc == NULL;
}

static int suite_init(void) {
    if (load_plugin() != 0) return 1;
    char feats[256];
    anvil__cpu_feature_string(cpu_raw, feats, sizeof feats);
    printf("\n  cpu features: %s\n  variants run here:", feats);
    for (size_t l = 0; l < N_LEVELS; ++l)
        printf(" %s%s", levels[l].name, level_runs_here(&levels[l]) ? "" : "(skipped)");
    printf("\n  rows per format and variant: %zu\n", rows_per_format);
    return 0;
}

static int suite_clean(void) {
    if (desc != NULL && desc->deinit != NULL) desc->deinit();
    if (plugin != NULL) dlclose(plugin);
    return 0;
}

/* ---- random rows -------------------------------------------------------------------- */

/* Weight blocks: 5 in 8 from a pool encoded from real inputs (every input
 * kind), 3 in 8 random bytes (every bit pattern, NaN/Inf scales too: the
 * kernels must still agree). */
typedef struct pool {
    uint8_t *blocks;
    size_t n;
} pool;

static pool pools[N_FORMATS];

static const pool *pool_for(size_t fi) {
    pool *p = &pools[fi];
    if (p->blocks != NULL) return p;
    const fmt *f = &formats[fi];
    const size_t per_kind = f->be == 32 ? 8 : 2;
    p->n = per_kind * INPUT_KIND_COUNT;
    p->blocks = malloc(p->n * f->bb);
    float *x = malloc(per_kind * f->be * sizeof *x);
    for (int k = 0; k < INPUT_KIND_COUNT; ++k) {
        test_input_fill(x, per_kind * f->be, (test_input_kind)k, 77, (uint64_t)k);
        char msg[256];
        CU_ASSERT_EQUAL(f->encode(x, p->blocks + (size_t)k * per_kind * f->bb, per_kind * f->be, msg, sizeof msg),
                        ANVIL_OK);
    }
    free(x);
    return p;
}

static void random_weights(test_rng *rng, size_t fi, uint8_t *dst, size_t nb) {
    const fmt *f = &formats[fi];
    const pool *p = pool_for(fi);
    for (size_t b = 0; b < nb; ++b, dst += f->bb) {
        if (test_rng_u64(rng) % 8 < 5) {
            memcpy(dst, p->blocks + (test_rng_u64(rng) % p->n) * f->bb, f->bb);
        } else {
            for (size_t j = 0; j < f->bb; ++j) dst[j] = (uint8_t)test_rng_u64(rng);
        }
    }
}

static void random_floats(test_rng *rng, float *x, size_t n) {
    test_input_fill(x, n, (test_input_kind)(test_rng_u64(rng) % INPUT_KIND_COUNT), test_rng_u64(rng), 0);
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Bit-identical, except that any NaN equals any NaN: when two NaNs meet in
 * a sum, which payload survives depends on the operand order the compiler
 * chose for a commutative add. */
static int same_value(float a, float b) { return same_bits(a, b) || (isnan(a) && isnan(b)); }

/* The formats whose vec_dot, gemv and gemm come from one row kernel. */
static int has_rows(uint32_t type) {
    switch (type) {
    case ANVIL_TYPE_IQ2_XXS:
    case ANVIL_TYPE_IQ2_XS:
    case ANVIL_TYPE_IQ3_XXS:
    case ANVIL_TYPE_IQ3_S:
    case ANVIL_TYPE_IQ2_S:
    case ANVIL_TYPE_IQ1_S:
    case ANVIL_TYPE_IQ1_M:
    case ANVIL_TYPE_NVFP4:
    case ANVIL_TYPE_Q1_0:
    case ANVIL_TYPE_Q2_0: return 1;
    default: return 0;
    }
}

/* The formats whose kernels carry a plain GEMM. */
static int has_gemm(uint32_t type) {
    return type == ANVIL_TYPE_PTQTP2S || type == ANVIL_TYPE_PTQTP3S || has_rows(type);
}

/* ---- the tests ---------------------------------------------------------------------- */

static void test_score_and_selection(void) {
    char why[256];
    const anvil_backend *b = init_as(ANVIL_ARCH_AARCH64, ANVIL_CPU_ASIMD);
    CU_ASSERT_STRING_EQUAL(b->name, "neon");

    anvil_cpu_info cpu;
    memset(&cpu, 0, sizeof cpu);
    cpu.struct_size = sizeof cpu;
    cpu.arch = ANVIL_ARCH_X86_64;
    cpu.features = ANVIL_CPU_AVX2;
    CU_ASSERT_EQUAL(b->score(&cpu, why, sizeof why), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "aarch64"));
    cpu.arch = ANVIL_ARCH_AARCH64;
    cpu.features = 0;
    CU_ASSERT_EQUAL(b->score(&cpu, why, sizeof why), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "asimd"));

    uint32_t prev = 1; /* backend-scalar's score */
    for (size_t l = 0; l < N_LEVELS; ++l) {
        cpu.features = levels[l].features;
        const uint32_t s = b->score(&cpu, why, sizeof why);
        CU_ASSERT(s > prev);
        prev = s;
        CU_ASSERT_PTR_NOT_NULL(strstr(why, levels[l].variant));
        /* init picks the variant from the CPU it is given, nothing else */
        b = init_as(ANVIL_ARCH_AARCH64, levels[l].features);
        CU_ASSERT_EQUAL(b->n_kernels, N_FORMATS);
        CU_ASSERT_EQUAL(b->n_quantizers, N_ACTS);
        for (size_t i = 0; i < N_FORMATS; ++i) {
            const anvil_kernel *k = kernel_for(b, formats[i].type);
            CU_ASSERT_PTR_NOT_NULL_FATAL(k);
            CU_ASSERT_EQUAL(k->act_type, formats[i].act->type);
            CU_ASSERT_PTR_NOT_NULL(k->vec_dot);
            CU_ASSERT_PTR_NOT_NULL(k->decode_row);
            const int packs = formats[i].type == ANVIL_TYPE_Q8_0 || formats[i].type == ANVIL_TYPE_Q4_K;
            CU_ASSERT_STRING_EQUAL(k->variant, packs ? levels[l].packed_variant : levels[l].variant);
            CU_ASSERT_EQUAL(k->pack != NULL, packs);
            CU_ASSERT_EQUAL(k->pack_rows, packs ? 4u : 0u);
            CU_ASSERT_EQUAL(k->gemm != NULL, has_gemm(formats[i].type));
            CU_ASSERT_EQUAL(k->gemv != NULL, has_rows(formats[i].type));
        }
    }
    /* The plain and the sdot tables really are different code. */
    const anvil_vec_dot_fn plain =
        kernel_for(init_as(ANVIL_ARCH_AARCH64, levels[0].features), ANVIL_TYPE_Q4_K)->vec_dot;
    const anvil_vec_dot_fn dp = kernel_for(init_as(ANVIL_ARCH_AARCH64, levels[1].features), ANVIL_TYPE_Q4_K)->vec_dot;
    CU_ASSERT_PTR_NOT_EQUAL(plain, dp);
}

static void test_quantizers(void) {
    const anvil_backend *b = init_as(ANVIL_ARCH_AARCH64, ANVIL_CPU_ASIMD);
    test_rng rng;
    test_rng_seed(&rng, 1234);
    for (size_t ai = 0; ai < N_ACTS; ++ai) {
        const act_fmt *af = &acts[ai];
        const anvil_act_quantizer *q = quantizer_for(b, af->type);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        const size_t max_blocks = af->be == 32 ? 24 : 3;
        float *xbuf = malloc((max_blocks * af->be + 4) * sizeof(float));
        uint8_t *want = malloc(max_blocks * af->bb);
        uint8_t *got = malloc(max_blocks * af->bb + 16);
        size_t bad = 0, blocks = 0;
        for (size_t r = 0; r < rows_per_format; ++r) {
            const size_t nb = 1 + test_rng_u64(&rng) % max_blocks;
            const size_t n = nb * af->be;
            float *x = xbuf + 1 + test_rng_u64(&rng) % 3; /* not 16-byte aligned */
            random_floats(&rng, x, n);
            af->quantize(x, want, n);
            uint8_t *dst = got + 1 + test_rng_u64(&rng) % 15; /* odd addresses */
            q->quantize(x, dst, n);
            blocks += nb;
            if (memcmp(dst, want, nb * af->bb) != 0 && bad++ == 0) {
                fprintf(stderr, "\n  %s quantizer: row %zu differs from the reference\n", af->name, r);
            }
        }
        printf("\n  quantize %-5s %zu rows (%zu blocks): %zu differ", af->name, rows_per_format, blocks, bad);
        CU_ASSERT_EQUAL(bad, 0);
        free(xbuf);
        free(want);
        free(got);
    }
}

/* Decoded rows compare bit for bit. PTQTP's decode is a sum of per-plane
 * products, y = t0*d0 + t1*d1: with two NaN scales (random blocks have them)
 * both operands of a commutative add are NaN, and which payload survives is
 * the compiler's choice of operand order in the scalar reference, not a
 * property of the format. There, and only there, any NaN equals any NaN. */
static int same_row(const fmt *f, const float *got, const float *want, size_t n) {
    if (memcmp(got, want, n * sizeof(float)) == 0) return 1;
    if (f->type != ANVIL_TYPE_PTQTP2 && f->type != ANVIL_TYPE_PTQTP3) return 0;
    for (size_t i = 0; i < n; ++i) {
        if (!same_value(got[i], want[i])) return 0;
    }
    return 1;
}

static void test_decoders(void) {
    const anvil_backend *b = init_as(ANVIL_ARCH_AARCH64, ANVIL_CPU_ASIMD);
    test_rng rng;
    test_rng_seed(&rng, 99);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *f = &formats[fi];
        const anvil_kernel *k = kernel_for(b, f->type);
        CU_ASSERT_PTR_NOT_NULL_FATAL(k);
        uint8_t *wa = malloc(f->max_blocks * f->bb), *wbuf = malloc(f->max_blocks * f->bb + 16);
        float *want = malloc(f->max_blocks * f->be * sizeof(float));
        float *got = malloc((f->max_blocks * f->be + 4) * sizeof(float));
        size_t bad = 0;
        for (size_t r = 0; r < rows_per_format; ++r) {
            const size_t nb = 1 + test_rng_u64(&rng) % f->max_blocks;
            random_weights(&rng, fi, wa, nb);
            f->decode(wa, want, nb * f->be); /* the reference reads aligned blocks */
            uint8_t *w = wbuf + 1 + test_rng_u64(&rng) % 15;
            memcpy(w, wa, nb * f->bb);
            float *dst = got + 1 + test_rng_u64(&rng) % 3;
            k->decode_row(w, dst, nb * f->be);
            if (!same_row(f, dst, want, nb * f->be) && bad++ == 0) {
                fprintf(stderr, "\n  %s decode_row: row %zu differs in its bits\n", f->name, r);
            }
        }
        printf("\n  decode %-7s %zu rows: %zu not bit-identical", f->name, rows_per_format, bad);
        CU_ASSERT_EQUAL(bad, 0);
        free(wa);
        free(wbuf);
        free(want);
        free(got);
    }
}

/* Contract check of one dot: within 1e-5 of the magnitude of the terms
 * (bounded here by sum |w_j a_j| over the decoded rows); a non-finite
 * reference must be matched bit for bit. */
static int within_contract(float got, float want, double mag) {
    if (!isfinite(want)) return same_bits(got, want) || (isnan(got) && isnan(want));
    const double scale = fmax(fabs((double)want), mag);
    return fabs((double)got - (double)want) <= 1e-5 * scale;
}

static double magnitude(const fmt *f, const uint8_t *w, const uint8_t *a, size_t n, float *wd, float *ad) {
    f->decode(w, wd, n);
    f->act->decode(a, ad, n);
    double m = 0;
    for (size_t j = 0; j < n; ++j) m += fabs((double)wd[j] * (double)ad[j]);
    return m;
}

static void test_dots(void) {
    for (size_t l = 0; l < N_LEVELS; ++l) {
        if (!level_runs_here_or_say(l)) continue;
        if (same_variant_as_previous(l)) {
            /* neon-i8mm differs from neon-dotprod only in the packed GEMMs:
             * its vec_dots must be the very functions checked above. */
            const anvil_backend *prev = init_as(ANVIL_ARCH_AARCH64, levels[l - 1].features);
            anvil_vec_dot_fn before[N_FORMATS];
            for (size_t fi = 0; fi < N_FORMATS; ++fi) before[fi] = kernel_for(prev, formats[fi].type)->vec_dot;
            const anvil_backend *cur = init_as(ANVIL_ARCH_AARCH64, levels[l].features);
            for (size_t fi = 0; fi < N_FORMATS; ++fi) {
                CU_ASSERT(kernel_for(cur, formats[fi].type)->vec_dot == before[fi]);
            }
            printf("\n  vec_dot %s: the %s functions (checked above)", levels[l].name, levels[l - 1].name);
            continue;
        }
        const anvil_backend *b = init_as(ANVIL_ARCH_AARCH64, levels[l].features);
        test_rng rng;
        test_rng_seed(&rng, 4242 + l);
        for (size_t fi = 0; fi < N_FORMATS; ++fi) {
            const fmt *f = &formats[fi];
            const anvil_kernel *k = kernel_for(b, f->type);
            CU_ASSERT_PTR_NOT_NULL_FATAL(k);
            const size_t max_n = f->max_blocks * f->be;
            const size_t max_abytes = max_n / f->act->be * f->act->bb;
            uint8_t *wa = malloc(f->max_blocks * f->bb), *wbuf = malloc(f->max_blocks * f->bb + 16);
            uint8_t *aa = malloc(max_abytes), *abuf = malloc(max_abytes + 16);
            float *x = malloc(max_n * sizeof *x), *wd = malloc(max_n * sizeof *wd), *ad = malloc(max_n * sizeof *ad);
            size_t over = 0, identical = 0, finite = 0, blocks = 0;
            for (size_t r = 0; r < rows_per_format; ++r) {
                const size_t nb = 1 + test_rng_u64(&rng) % f->max_blocks;
                const size_t n = nb * f->be;
                const size_t abytes = n / f->act->be * f->act->bb;
                random_weights(&rng, fi, wa, nb);
                random_floats(&rng, x, n);
                f->act->quantize(x, aa, n);
                /* The kernel reads copies at odd addresses. */
                uint8_t *w = wbuf + 1 + test_rng_u64(&rng) % 15;
                uint8_t *a = abuf + 1 + test_rng_u64(&rng) % 15;
                memcpy(w, wa, nb * f->bb);
                memcpy(a, aa, abytes);
                float want = 0, got = 0;
                f->dot(n, &want, wa, aa);
                k->vec_dot(n, &got, w, a);
                blocks += nb;
                finite += isfinite(want) != 0;
                identical += same_value(got, want);
                if (!within_contract(got, want, magnitude(f, wa, aa, n, wd, ad)) && over++ == 0) {
                    fprintf(stderr, "\n  %s %s row %zu: %.9g, reference %.9g\n", f->name, levels[l].name, r, got,
                            want);
                }
            }
            printf(
                "\n  vec_dot %-7s %-12s %zu rows (%zu blocks, %zu finite): %zu over the bound, %zu bit-identical (NaN = NaN)",
                f->name, levels[l].name, rows_per_format, blocks, finite, over, identical);
            CU_ASSERT_EQUAL(over, 0);
            CU_ASSERT_EQUAL(identical, rows_per_format);
            free(wa);
            free(wbuf);
            free(aa);
            free(abuf);
            free(x);
            free(wd);
            free(ad);
        }
    }
}

/* Packed GEMM vs vec_dot: random shapes, strides with slack, activations at
 * odd addresses, and the rows split into random [r0, r1) ranges (whole
 * groups, the last one ragged) as the host's threads would split them. */
static void check_packed(size_t l, size_t fi) {
    const fmt *f = &formats[fi];
    const anvil_backend *b = init_as(ANVIL_ARCH_AARCH64, levels[l].features);
    const anvil_kernel *k = kernel_for(b, f->type);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k->gemm_packed);
    test_rng rng;
    test_rng_seed(&rng, 777 + 31 * l + fi);
    const size_t max_rows = 13, max_m = 5, max_nb = f->be == 32 ? 12 : 3;
    const size_t row_bytes_max = max_nb * f->bb + 8;
    const size_t abytes_max = max_nb * f->be / f->act->be * f->act->bb + 8;
    uint8_t *w = malloc(max_rows * row_bytes_max);
    uint8_t *abuf = malloc(max_m * abytes_max + 16);
    uint8_t *wtmp = malloc(max_nb * f->bb), *atmp = malloc(abytes_max);
    float *x = malloc(max_nb * f->be * sizeof *x);
    float *y = malloc(max_m * (max_rows + 3) * sizeof *y), *y2 = malloc(max_m * (max_rows + 3) * sizeof *y2);
    size_t outputs = 0, differ = 0, split_differ = 0, ref_over = 0, trials = 0;
    while (outputs < rows_per_format) {
        ++trials;
        const size_t nrows = 1 + test_rng_u64(&rng) % max_rows;
        const size_t m = 1 + test_rng_u64(&rng) % max_m;
        const size_t nb = 1 + test_rng_u64(&rng) % max_nb;
        const size_t n = nb * f->be;
        const size_t w_stride = nb * f->bb + test_rng_u64(&rng) % 8;
        const size_t abytes = n / f->act->be * f->act->bb;
        const size_t a_stride = abytes + test_rng_u64(&rng) % 8;
        const size_t y_stride = nrows + test_rng_u64(&rng) % 3;
        for (size_t r = 0; r < nrows; ++r) random_weights(&rng, fi, w + r * w_stride, nb);
        uint8_t *a = abuf + 1 + test_rng_u64(&rng) % 15;
        for (size_t i = 0; i < m; ++i) {
            random_floats(&rng, x, n);
            f->act->quantize(x, atmp, n);
            memcpy(a + i * a_stride, atmp, abytes);
        }
        const size_t size = k->packed_size(n, nrows);
        CU_ASSERT_FATAL(size > 0);
        void *packed = malloc(size);
        CU_ASSERT_EQUAL_FATAL(k->pack(w, w_stride, n, nrows, packed, size), ANVIL_OK);
        for (size_t j = 0; j < m * y_stride; ++j) y[j] = y2[j] = NAN;
        k->gemm_packed(n, nrows, 0, nrows, m, y, y_stride, packed, a, a_stride);
        /* The same rows in pieces of whole groups. */
        for (size_t r0 = 0; r0 < nrows;) {
            size_t r1 = r0 + 4 * (1 + test_rng_u64(&rng) % 3);
            if (r1 > nrows) r1 = nrows;
            k->gemm_packed(n, nrows, r0, r1, m, y2, y_stride, packed, a, a_stride);
            r0 = r1;
        }
        for (size_t i = 0; i < m; ++i) {
            for (size_t r = 0; r < nrows; ++r) {
                float plain = 0, want = 0;
                k->vec_dot(n, &plain, w + r * w_stride, a + i * a_stride);
                memcpy(wtmp, w + r * w_stride, nb * f->bb); /* the reference reads aligned blocks */
                memcpy(atmp, a + i * a_stride, abytes);
                f->dot(n, &want, wtmp, atmp);
                const float got = y[i * y_stride + r];
                outputs++;
                if (!same_value(got, plain) && differ++ == 0) {
                    fprintf(stderr, "\n  %s %s packed: row %zu act %zu: %.9g, vec_dot %.9g\n", f->name,
                            levels[l].name, r, i, got, plain);
                }
                split_differ += !same_value(y2[i * y_stride + r], got);
                ref_over += !same_value(got, want); /* vec_dot is the reference's, bit for bit */
            }
            for (size_t r = nrows; r < y_stride; ++r) CU_ASSERT(isnan(y[i * y_stride + r])); /* no stray stores */
        }
        free(packed);
    }
    printf("\n  packed %-5s %-12s %zu outputs (%zu shapes): %zu differ from vec_dot, %zu differ when split, "
           "%zu not the reference's bits",
           f->name, levels[l].name, outputs, trials, differ, split_differ, ref_over);
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT_EQUAL(split_differ, 0);
    CU_ASSERT_EQUAL(ref_over, 0);
    /* Shapes that cannot be packed, and a buffer too small. */
    CU_ASSERT_EQUAL(k->packed_size(0, 4), 0);
    CU_ASSERT_EQUAL(k->packed_size(f->be + 1, 4), 0);
    CU_ASSERT_EQUAL(k->packed_size(f->be, 0), 0);
    CU_ASSERT_EQUAL(k->packed_size(f->be, 5), k->packed_size(f->be, 8));
    uint8_t small[8];
    CU_ASSERT(k->pack(w, f->bb, f->be, 1, small, sizeof small) < 0);
    free(w);
    free(abuf);
    free(wtmp);
    free(atmp);
    free(x);
    free(y);
    free(y2);
}

static void test_packed(void) {
    for (size_t l = 0; l < N_LEVELS; ++l) {
        if (!level_runs_here_or_say(l)) continue;
        for (size_t fi = 0; fi < N_FORMATS; ++fi) {
            if (formats[fi].type == ANVIL_TYPE_Q8_0 || formats[fi].type == ANVIL_TYPE_Q4_K) check_packed(l, fi);
        }
    }
}

/* Plain GEMM vs vec_dot and the reference: random shapes up to 11 blocks
 * a row (the kernel prepares 8 at a time), strides with slack, weights and
 * activations at odd addresses; nothing is stored past row nrows. */
static void check_gemm(size_t l, size_t fi) {
    const fmt *f = &formats[fi];
    const anvil_kernel *k = kernel_for(init_as(ANVIL_ARCH_AARCH64, levels[l].features), f->type);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k->gemm);
    test_rng rng;
    test_rng_seed(&rng, 919 + 31 * l + fi);
    const size_t max_rows = 7, max_m = 6, max_nb = 11;
    const size_t row_bytes_max = max_nb * f->bb + 8, abytes_max = max_nb * f->be / f->act->be * f->act->bb + 8;
    uint8_t *wbuf = malloc(max_rows * row_bytes_max + 16), *abuf = malloc(max_m * abytes_max + 16);
    uint8_t *wtmp = malloc(max_nb * f->bb), *atmp = malloc(abytes_max);
    float *x = malloc(max_nb * f->be * sizeof *x), *y = malloc(max_m * (max_rows + 3) * sizeof *y);
    size_t outputs = 0, differ = 0, ref_differ = 0, trials = 0, long_rows = 0, gemv_differ = 0;
    while (outputs < rows_per_format / 2) {
        ++trials;
        const size_t nrows = 1 + test_rng_u64(&rng) % max_rows, m = 1 + test_rng_u64(&rng) % max_m;
        const size_t nb = 1 + test_rng_u64(&rng) % max_nb, n = nb * f->be;
        const size_t w_stride = nb * f->bb + test_rng_u64(&rng) % 8, abytes = n / f->act->be * f->act->bb;
        const size_t a_stride = abytes + test_rng_u64(&rng) % 8, y_stride = nrows + test_rng_u64(&rng) % 3;
        uint8_t *w = wbuf + 1 + test_rng_u64(&rng) % 15, *a = abuf + 1 + test_rng_u64(&rng) % 15;
        for (size_t r = 0; r < nrows; ++r) {
            random_weights(&rng, fi, wtmp, nb);
            memcpy(w + r * w_stride, wtmp, nb * f->bb);
        }
        for (size_t i = 0; i < m; ++i) {
            random_floats(&rng, x, n);
            f->act->quantize(x, atmp, n);
            memcpy(a + i * a_stride, atmp, abytes);
        }
        for (size_t j = 0; j < m * y_stride; ++j) y[j] = NAN;
        if (k->gemv != NULL) {
            /* gemv of each activation row first: the rows a GEMM call must reproduce */
            for (size_t i = 0; i < m; ++i) k->gemv(n, nrows, y + i * y_stride, w, w_stride, a + i * a_stride);
            for (size_t i = 0; i < m; ++i) {
                for (size_t r = 0; r < nrows; ++r) {
                    float plain = 0;
                    k->vec_dot(n, &plain, w + r * w_stride, a + i * a_stride);
                    gemv_differ += !same_value(y[i * y_stride + r], plain);
                }
                for (size_t r = nrows; r < y_stride; ++r) CU_ASSERT(isnan(y[i * y_stride + r]));
            }
            for (size_t j = 0; j < m * y_stride; ++j) y[j] = NAN;
        }
        k->gemm(n, nrows, m, y, y_stride, w, w_stride, a, a_stride);
        long_rows += nb > 8;
        for (size_t i = 0; i < m; ++i) {
            for (size_t r = 0; r < nrows; ++r) {
                float plain = 0, want = 0;
                k->vec_dot(n, &plain, w + r * w_stride, a + i * a_stride);
                memcpy(wtmp, w + r * w_stride, nb * f->bb); /* the reference reads aligned blocks */
                memcpy(atmp, a + i * a_stride, abytes);
                f->dot(n, &want, wtmp, atmp);
                const float got = y[i * y_stride + r];
                outputs++;
                if (!same_value(got, plain) && differ++ == 0) {
                    fprintf(stderr, "\n  %s %s gemm: row %zu act %zu: %.9g, vec_dot %.9g\n", f->name, levels[l].name,
                            r, i, got, plain);
                }
                ref_differ += !same_value(got, want);
            }
            for (size_t r = nrows; r < y_stride; ++r) CU_ASSERT(isnan(y[i * y_stride + r])); /* no stray stores */
        }
    }
    printf("\n  gemm %-7s %-12s %zu outputs (%zu shapes, %zu of > 8 blocks): %zu differ from vec_dot, "
           "%zu not the reference's bits",
           f->name, levels[l].name, outputs, trials, long_rows, differ, ref_differ);
    if (k->gemv != NULL) printf(", gemv: %zu differ from vec_dot", gemv_differ);
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT_EQUAL(ref_differ, 0);
    CU_ASSERT_EQUAL(gemv_differ, 0);
    CU_ASSERT(long_rows > 0);
    free(wbuf);
    free(abuf);
    free(wtmp);
    free(atmp);
    free(x);
    free(y);
}

static void test_gemm(void) {
    for (size_t l = 0; l < N_LEVELS; ++l) {
        if (!level_runs_here_or_say(l)) continue;
        for (size_t fi = 0; fi < N_FORMATS; ++fi) {
            if (!has_gemm(formats[fi].type)) continue;
            if (same_variant_as_previous(l)) {
                /* neon-i8mm: the neon-dotprod GEMMs, checked above */
                CU_ASSERT(kernel_for(init_as(ANVIL_ARCH_AARCH64, levels[l].features), formats[fi].type)->gemm ==
                          kernel_for(init_as(ANVIL_ARCH_AARCH64, levels[l - 1].features), formats[fi].type)->gemm);
                continue;
            }
            check_gemm(l, fi);
        }
    }
}

/* The host: the default config loads backend-neon next to backend-scalar,
 * dispatches to it with the variant this CPU implies, and a packed matmul
 * (Q8_0, Q4_K) or a plain one through the GEMM (ptqtp2s, ptqtp3s) on the
 * host's thread pool matches the reference. */
static void test_through_host(void) {
    anvil_ctx *ctx = NULL;
    anvil_error err;
    CU_ASSERT_EQUAL_FATAL(anvil_ctx_open(&ctx, test_config_path(), &err), ANVIL_OK);
    const uint64_t f = anvil_ctx_cpu(ctx)->features;
    const char *expect = (f & ANVIL_CPU_ASIMDDP) ? ((f & ANVIL_CPU_I8MM) ? "neon-i8mm" : "neon-dotprod") : "neon";
    const char *expect_plain = (f & ANVIL_CPU_ASIMDDP) ? "neon-dotprod" : "neon";
    int found = 0;
    for (size_t i = 0; i < anvil_ctx_backend_count(ctx); ++i) {
        anvil_backend_report br;
        anvil_ctx_backend_report(ctx, i, &br);
        if (strcmp(br.name, "neon") == 0) {
            found = 1;
            CU_ASSERT(br.score > 1);
            printf("\n  host: backend neon (%s) score %u: %s", br.plugin, br.score, br.why);
        }
    }
    CU_ASSERT_TRUE(found);
    size_t dispatched = 0;
    for (size_t i = 0; i < anvil_ctx_dispatch_count(ctx); ++i) {
        anvil_dispatch_report d;
        anvil_ctx_dispatch_report(ctx, i, &d);
        for (size_t fi = 0; fi < N_FORMATS; ++fi) {
            if (formats[fi].type != d.weight_type) continue;
            const int packs = d.weight_type == ANVIL_TYPE_Q8_0 || d.weight_type == ANVIL_TYPE_Q4_K;
            CU_ASSERT_PTR_NOT_NULL_FATAL(d.backend);
            CU_ASSERT_STRING_EQUAL(d.backend, "neon");
            CU_ASSERT_STRING_EQUAL(d.variant, packs ? expect : expect_plain);
            CU_ASSERT_PTR_NOT_NULL(d.quantizer_backend);
            if (d.quantizer_backend != NULL) CU_ASSERT_STRING_EQUAL(d.quantizer_backend, "neon");
            dispatched++;
        }
    }
    printf("\n  host: %zu formats dispatched to neon (variant %s, packed %s)", dispatched, expect_plain, expect);
    CU_ASSERT_EQUAL(dispatched, N_FORMATS);

    /* A packed matmul through the host, against the reference dots. */
    test_rng rng;
    test_rng_seed(&rng, 5);
    for (size_t fi = 0; fi < N_FORMATS; ++fi) {
        const fmt *fm = &formats[fi];
        const int packs = fm->type == ANVIL_TYPE_Q8_0 || fm->type == ANVIL_TYPE_Q4_K;
        if (!packs && !has_gemm(fm->type)) continue;
        const size_t rows = 37, m = 3, n = fm->be == 32 ? 320 : 512;
        const size_t row_bytes = n / fm->be * fm->bb, abytes = n / fm->act->be * fm->act->bb;
        uint8_t *w = malloc(rows * row_bytes);
        float *x = malloc(m * n * sizeof *x), *y = malloc(m * rows * sizeof *y);
        uint8_t *aq = malloc(abytes);
        for (size_t r = 0; r < rows; ++r) {
            float *tmp = malloc(n * sizeof *tmp);
            test_input_fill(tmp, n, INPUT_LLM_LIKE, 3, r);
            char msg[128];
            CU_ASSERT_EQUAL(fm->encode(tmp, w + r * row_bytes, n, msg, sizeof msg), ANVIL_OK);
            free(tmp);
        }
        for (size_t i = 0; i < m; ++i) test_input_fill(x + i * n, n, INPUT_NORMAL, 4, i);
        anvil_weights *pw = NULL;
        CU_ASSERT_EQUAL_FATAL(anvil_weights_prepare(ctx, fm->type, w, rows, n,
                                                    packs ? ANVIL_WEIGHTS_PACK : ANVIL_WEIGHTS_TRANSIENT, &pw, &err),
                              ANVIL_OK);
        CU_ASSERT_EQUAL(anvil_weights_packed(pw), packs);
        CU_ASSERT_EQUAL(anvil_matmul_prepared(ctx, pw, x, m, y, &err), ANVIL_OK);
        size_t bad = 0;
        for (size_t i = 0; i < m; ++i) {
            fm->act->quantize(x + i * n, aq, n);
            for (size_t r = 0; r < rows; ++r) {
                float want = 0;
                fm->dot(n, &want, w + r * row_bytes, aq);
                bad += !same_value(y[i * rows + r], want);
            }
        }
        printf("\n  host %s matmul %s: %zu x %zu x %zu, %zu outputs differ from the reference",
               packs ? "packed" : "gemm", fm->name, m, rows, n, bad);
        CU_ASSERT_EQUAL(bad, 0);
        anvil_weights_free(pw);
        free(w);
        free(x);
        free(y);
        free(aq);
    }
    anvil_ctx_close(ctx);
}

/* Weight encoders (ABI 1.1): one copy for every variant, checked once
 * against the reference encoders (tests/simd/simd_encoder_test.c).
 * Rows per format: ANVIL_NEON_ENC_ROWS, default a tenth of the kernels'
 * (1,000, with and without an importance matrix): the shared encoder
 * sources get their 10,000 rows per format on x86-64 (test_avx2,
 * test_avx512, test_avx512_emu); here, under qemu, the reference encoders
 * themselves are the slow part (2,000 rows: ~4 minutes per CPU model). */
static const anvil_backend *enc_backend;

static int encoder_suite_init(void) {
    if (load_plugin() != 0 || (enc_backend = try_init_as(ANVIL_ARCH_AARCH64, ANVIL_CPU_ASIMD)) == NULL) return 1;
    const char *env = getenv("ANVIL_NEON_ENC_ROWS");
    const size_t rows = env != NULL && atoi(env) > 0 ? (size_t)atoi(env) : (rows_per_format + 9) / 10;
    sb_encoder_setup(&enc_backend, "neon", "", rows);
    return 0;
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("backend-neon vs the reference", suite_init, suite_clean);
    CU_add_test(s, "score and variant selection from the CPU info", test_score_and_selection);
    CU_add_test(s, "activation quantizers: bytes identical", test_quantizers);
    CU_add_test(s, "row decoders: bits identical", test_decoders);
    CU_add_test(s, "vec_dot: every format, every variant this CPU runs", test_dots);
    CU_add_test(s, "packed GEMMs (Q8_0, Q4_K) vs vec_dot", test_packed);
    CU_add_test(s, "plain GEMMs (ptqtp2s, ptqtp3s) vs vec_dot and the reference", test_gemm);
    CU_add_test(s, "through the host: registry, dispatch, packed and GEMM matmuls", test_through_host);
    sb_add_encoder_tests(
        CU_add_suite("backend-neon weight encoders vs the reference", encoder_suite_init, suite_clean));
    const int rc = test_run_cunit();
    for (size_t i = 0; i < N_FORMATS; ++i) free(pools[i].blocks);
    return rc;
}
