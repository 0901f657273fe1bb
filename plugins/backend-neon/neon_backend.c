/* SPDX-License-Identifier: MIT */
/*
 * backend-neon: Advanced SIMD kernels for aarch64.
 *
 * The plugin scores itself from the CPU features the host probed (HWCAP):
 * Advanced SIMD (asimd) is required; the dot-product extension (asimddp,
 * sdot) and the int8 matrix multiply (i8mm, smmla) raise the score and
 * select faster kernels. init() picks one variant for the whole table from
 * host->cpu (never from the CPU itself, so ANVIL_CPU_MASK=-dotprod really
 * selects the plain path), and every kernel says which one it is in its
 * `variant` string, which `anvil plugins` prints:
 *   neon          ARMv8.0: widening multiplies (smull/sadalp)
 *   neon-dotprod  sdot
 *   neon-i8mm     sdot, and smmla in the packed GEMMs (Q8_0, Q4_K)
 *
 * Every kernel agrees with backend-scalar: integer parts exactly, floats to
 * the bit (same expressions in the same order), quantizers byte for byte,
 * row decoders bit for bit. tests/neon checks all of it under both paths.
 * Weight encoders (ABI 1.1, neon_encode.c: the shared SIMD encoder sources)
 * give the reference encoders' bytes; one copy serves every variant.
 *
 * Why one plugin per instruction set: the host scores, loads or skips a
 * backend as a unit from the CPU it probed, so everything that needs
 * Advanced SIMD lives here and nothing else does.
 */
#include <stdio.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"
#include "neon_kernels.h"
#include "ref/cold.h"    /* the referee's decoders of the lattice and FP4 formats */
#include "ref/ternary.h" /* and of Q1_0, Q2_0 */
#include "ref/backend_init.h"

/* ---- what the CPU offers ---------------------------------------------------- */

enum neon_level { LEVEL_NONE = 0, LEVEL_BASE = 1, LEVEL_DOTPROD = 2, LEVEL_I8MM = 3 };

static enum neon_level level_of(const anvil_cpu_info *cpu) {
    if (cpu == NULL || cpu->arch != ANVIL_ARCH_AARCH64 || !(cpu->features & ANVIL_CPU_ASIMD)) {
        return LEVEL_NONE;
    }
    if (!(cpu->features & ANVIL_CPU_ASIMDDP)) {
        return LEVEL_BASE;
    }
    return (cpu->features & ANVIL_CPU_I8MM) ? LEVEL_I8MM : LEVEL_DOTPROD;
}

static uint32_t neon_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    const enum neon_level level = level_of(cpu);
    const char *text;
    switch (level) {
    case LEVEL_BASE: text = "asimd without asimddp: widening-multiply kernels (variant neon)"; break;
    case LEVEL_DOTPROD:
        text = "asimd + asimddp: sdot kernels (variant neon-dotprod); no i8mm, packed GEMMs use sdot";
        break;
    case LEVEL_I8MM:
        text = "asimd + asimddp + i8mm: sdot kernels (neon-dotprod), smmla packed GEMMs (neon-i8mm)";
        break;
    default:
        text = (cpu != NULL && cpu->arch != ANVIL_ARCH_AARCH64)
                   ? "not an aarch64 CPU"
                   : "needs Advanced SIMD (asimd), which this CPU does not report";
        break;
    }
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "%s", text);
    }
    /* Above backend-scalar (1); the order in the config decides anyway. */
    return level == LEVEL_NONE ? 0 : 10u * (uint32_t)level;
}

/* ---- kernel tables ------------------------------------------------------------ */

/* One row of the table: the plain-NEON and sdot dots of a format, its row
 * decoder, and (where one pays: ptqtp2s/3s unpack their planes once for
 * every activation row) the GEMMs. */
typedef struct neon_format {
    uint32_t weight_type;
    uint32_t act_type;
    anvil_vec_dot_fn dot_base;
    anvil_vec_dot_fn dot_dp;
    anvil_decode_row_fn decode_row;
    anvil_gemm_fn gemm_base; /* NULL: the host loops over vec_dot */
    anvil_gemm_fn gemm_dp;
    anvil_gemv_fn gemv_base; /* NULL: the host loops over vec_dot */
    anvil_gemv_fn gemv_dp;
} neon_format;

#define FORMAT(W, A, w, a)                                                                                      \
    {                                                                                                           \
        ANVIL_TYPE_##W, ANVIL_TYPE_##A, anvil_neon_vec_dot_##w##_##a##_base, anvil_neon_vec_dot_##w##_##a##_dp, \
            anvil_neon_decode_##w, NULL, NULL, NULL, NULL                                                       \
    }
#define FORMAT_GEMM(W, A, w, a)                                                                                 \
    {                                                                                                           \
        ANVIL_TYPE_##W, ANVIL_TYPE_##A, anvil_neon_vec_dot_##w##_##a##_base, anvil_neon_vec_dot_##w##_##a##_dp, \
            anvil_neon_decode_##w, anvil_neon_gemm_##w##_##a##_base, anvil_neon_gemm_##w##_##a##_dp, NULL, NULL \
    }
/* vec_dot, gemv and gemm from one row kernel (neon_rows.h); rows decode
 * through the referee's decoder. */
#define FORMAT_ROWS(W, A, w, a)                                                                                 \
    {                                                                                                           \
        ANVIL_TYPE_##W, ANVIL_TYPE_##A, anvil_neon_vec_dot_##w##_##a##_base, anvil_neon_vec_dot_##w##_##a##_dp, \
            anvil_ref_decode_##w, anvil_neon_gemm_##w##_##a##_base, anvil_neon_gemm_##w##_##a##_dp,             \
            anvil_neon_gemv_##w##_##a##_base, anvil_neon_gemv_##w##_##a##_dp                                    \
    }

static const neon_format formats[] = {
    FORMAT(Q4_0, Q8_0, q4_0, q8_0),
    FORMAT(Q4_1, Q8_1, q4_1, q8_1),
    FORMAT(Q5_0, Q8_0, q5_0, q8_0),
    FORMAT(Q5_1, Q8_1, q5_1, q8_1),
    FORMAT(Q8_0, Q8_0, q8_0, q8_0),
    FORMAT(Q2_K, Q8_K, q2_K, q8_K),
    FORMAT(Q3_K, Q8_K, q3_K, q8_K),
    FORMAT(Q4_K, Q8_K, q4_K, q8_K),
    FORMAT(Q5_K, Q8_K, q5_K, q8_K),
    FORMAT(Q6_K, Q8_K, q6_K, q8_K),
    FORMAT(TQ1_0, Q8_K, tq1_0, q8_K),
    FORMAT(TQ2_0, Q8_K, tq2_0, q8_K),
    FORMAT(IQ4_NL, Q8_0, iq4_nl, q8_0),
    FORMAT(IQ4_XS, Q8_K, iq4_xs, q8_K),
    FORMAT(MXFP4, Q8_0, mxfp4, q8_0),
    /* codec-ptqtp's trit planes: a plugin's types, layouts from anvil/formats/ptqtp.h, ptqtps.h */
    FORMAT(PTQTP2, Q8_K, ptqtp2, q8_K),
    FORMAT(PTQTP3, Q8_K, ptqtp3, q8_K),
    FORMAT_GEMM(PTQTP2S, Q8_K, ptqtp2s, q8_K),
    FORMAT_GEMM(PTQTP3S, Q8_K, ptqtp3s, q8_K),
    /* issue 39: the lattice i-quants */
    FORMAT_ROWS(IQ2_XXS, Q8_K, iq2_xxs, q8_K),
    FORMAT_ROWS(IQ2_XS, Q8_K, iq2_xs, q8_K),
    FORMAT_ROWS(IQ3_XXS, Q8_K, iq3_xxs, q8_K),
    FORMAT_ROWS(IQ3_S, Q8_K, iq3_s, q8_K),
    FORMAT_ROWS(IQ2_S, Q8_K, iq2_s, q8_K),
    FORMAT_ROWS(IQ1_S, Q8_K, iq1_s, q8_K),
    FORMAT_ROWS(IQ1_M, Q8_K, iq1_m, q8_K),
    /* and the FP4 / 1- and 2-bit formats against Q8_0 */
    FORMAT_ROWS(NVFP4, Q8_0, nvfp4, q8_0),
    FORMAT_ROWS(Q1_0, Q8_0, q1_0, q8_0),
    FORMAT_ROWS(Q2_0, Q8_0, q2_0, q8_0),
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

/* The packed-RHS layouts, per variant. */
typedef struct neon_packed_entry {
    uint32_t weight_type;
    anvil_packed_size_fn packed_size;
    anvil_pack_fn pack;
    anvil_gemm_packed_fn gemm[3]; /* base, dp, i8mm */
} neon_packed_entry;

static const neon_packed_entry packed[] = {
    { ANVIL_TYPE_Q8_0,
      anvil_neon_packed_size_q8_0,
      anvil_neon_pack_q8_0,
      { anvil_neon_gemm_packed_q8_0_base, anvil_neon_gemm_packed_q8_0_dp, anvil_neon_gemm_packed_q8_0_i8mm } },
    { ANVIL_TYPE_Q4_K,
      anvil_neon_packed_size_q4_K,
      anvil_neon_pack_q4_K,
      { anvil_neon_gemm_packed_q4_K_base, anvil_neon_gemm_packed_q4_K_dp, anvil_neon_gemm_packed_q4_K_i8mm } },
};

static const anvil_act_quantizer quant_q8_0 = { .struct_size = sizeof(anvil_act_quantizer),
                                                .act_type = ANVIL_TYPE_Q8_0,
                                                .variant = "neon",
                                                .quantize = anvil_neon_quantize_q8_0 };
static const anvil_act_quantizer quant_q8_1 = { .struct_size = sizeof(anvil_act_quantizer),
                                                .act_type = ANVIL_TYPE_Q8_1,
                                                .variant = "neon",
                                                .quantize = anvil_neon_quantize_q8_1 };
static const anvil_act_quantizer quant_q8_K = { .struct_size = sizeof(anvil_act_quantizer),
                                                .act_type = ANVIL_TYPE_Q8_K,
                                                .variant = "neon",
                                                .quantize = anvil_neon_quantize_q8_K };

static const anvil_act_quantizer *const quantizers[] = { &quant_q8_0, &quant_q8_1, &quant_q8_K };

/* Filled by init() for the chosen variant. */
static anvil_kernel kernels[N_FORMATS];
static const anvil_kernel *kernel_ptrs[N_FORMATS];

/* Weight encoders: one copy for every variant, joined at init(). */
static anvil_ref_backend_lists lists;

static anvil_backend backend = {
    .struct_size = sizeof(anvil_backend),
    .name = "neon",
    .description = "Advanced SIMD kernels for aarch64 (plain, sdot, smmla)",
    .score = neon_score,
    .n_quantizers = sizeof quantizers / sizeof quantizers[0],
    .quantizers = quantizers,
};

static const anvil_backend *const backends[] = { &backend };

static void fill_tables(enum neon_level level) {
    const int dp = level >= LEVEL_DOTPROD;
    const int gemm_index = level == LEVEL_I8MM ? 2 : dp ? 1 : 0;
    const char *variant = dp ? "neon-dotprod" : "neon";
    for (size_t i = 0; i < N_FORMATS; ++i) {
        const neon_format *f = &formats[i];
        anvil_kernel *k = &kernels[i];
        *k = (anvil_kernel){
            .struct_size = sizeof(anvil_kernel),
            .weight_type = f->weight_type,
            .act_type = f->act_type,
            .variant = variant,
            .vec_dot = dp ? f->dot_dp : f->dot_base,
            .gemm = dp ? f->gemm_dp : f->gemm_base,
            .gemv = dp ? f->gemv_dp : f->gemv_base,
            .decode_row = f->decode_row,
        };
        for (size_t p = 0; p < sizeof packed / sizeof packed[0]; ++p) {
            if (packed[p].weight_type == f->weight_type) {
                k->pack_rows = ANVIL_NEON_PACK_ROWS;
                k->packed_size = packed[p].packed_size;
                k->pack = packed[p].pack;
                k->gemm_packed = packed[p].gemm[gemm_index];
                if (level == LEVEL_I8MM) {
                    k->variant = "neon-i8mm";
                }
            }
        }
        kernel_ptrs[i] = k;
    }
    backend.n_kernels = N_FORMATS;
    backend.kernels = kernel_ptrs;
}

static int neon_init(const anvil_host_services *host, char *err, size_t err_size) {
    const anvil_cpu_info *cpu = NULL;
    if (ANVIL_HAS_FIELD(host, anvil_host_services, cpu)) {
        cpu = host->cpu;
    }
    /* Without asimd the backend scores 0 and is skipped; the plain tables
     * are filled anyway so the descriptor is well formed. */
    const enum neon_level level = level_of(cpu);
    fill_tables(level == LEVEL_NONE ? LEVEL_BASE : level);
    static const anvil_weight_encoder *const *const encoder_tables[] = {
        anvil_neon_encoders_flat,  anvil_neon_encoders_kquants, anvil_neon_encoders_iq4,
        anvil_neon_encoders_small, anvil_neon_encoders_ptqtps,
    };
    /* quantizers: the static list; kernels: fill_tables */
    static const anvil_ref_backend_tables tables = {
        .encoders = encoder_tables,
        .n_encoders = ANVIL_REF_COUNT(encoder_tables),
    };
    return anvil_ref_backend_fill(&backend, &lists, &tables, "backend-neon", err, err_size);
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_BACKEND,
    .id = "backend-neon",
    .version = "1.0.0",
    .license = "MIT",
    .description = "Advanced SIMD (NEON) kernels for aarch64: dotprod and i8mm when present",
    .init = neon_init,
    .n_backends = 1,
    .backends = backends,
};

ANVIL_PLUGIN_ENTRY(&desc)
