/* SPDX-License-Identifier: MIT */
/*
 * backend-avx512: AVX-512 kernels for x86-64 (Skylake-SP, Cascade Lake, Ice
 * Lake, Sapphire Rapids, Zen 4 and later): activation quantizers Q8_0 /
 * Q8_1 / Q8_K; vec_dot, multi-row GEMV, GEMM and row decode for the formats
 * in the kernel tables, codec-ptqtp's ptqtp2/ptqtp3 included (layout from
 * anvil/formats/ptqtp.h) (`anvil plugins` lists them; every other format
 * falls through to the next backend in the configured order); weight
 * encoders (ABI 1.1, avx512_encode.c) byte-identical to the codecs'.
 *
 * Needs AVX-512 F + BW + VL (and F16C, which every such CPU has). With
 * AVX512-VNNI the integer dots use vpdpbusd (variant "avx512-vnni"),
 * without it vpmaddubsw + vpmaddwd (variant "avx512"); both give the same
 * integers, so the same results. init() picks the variant from the host's
 * CPU features after ANVIL_CPU_MASK, so ANVIL_CPU_MASK=-avx512vnni selects
 * the plain path and -avx512f (or -avx512) skips the backend, with the
 * reason in `anvil plugins`.
 *
 * This file is compiled for baseline x86-64: it only reads the kernel
 * tables and never runs an AVX-512 instruction, so loading the plugin on
 * any x86-64 CPU is safe. Built with AVX512_EMULATED it becomes
 * backend-avx512-emu, the SIMDe test build (avx512_emulate.h), which
 * scores on any CPU and is never installed.
 *
 * Why one plugin per instruction set: the host scores, loads or skips a
 * backend as a unit from the CPU it probed, so everything that needs
 * AVX-512 F/BW/VL lives here and nothing else does.
 */
#include <stdio.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "avx512_kernels.h"
#include "ref/backend_init.h"
#include "ref/cpu_probe.h"


#if AVX512_EMULATED
#define PLUGIN_ID "backend-avx512-emu"
#define BACKEND_NAME "avx512-emu"
#else
#define PLUGIN_ID "backend-avx512"
#define BACKEND_NAME "avx512"
#endif

#if !AVX512_EMULATED
/* What the kernel files were compiled for. */
static const anvil_cpu_need required[] = {
    { ANVIL_CPU_AVX512F, "avx512f" }, { ANVIL_CPU_AVX512BW, "avx512bw" }, { ANVIL_CPU_AVX512VL, "avx512vl" },
    { ANVIL_CPU_F16C, "f16c" },       { ANVIL_CPU_BMI2, "bmi2" },
};
#endif

static int has_vnni(const anvil_cpu_info *cpu) { return cpu != NULL && (cpu->features & ANVIL_CPU_AVX512VNNI) != 0; }

#if !AVX512_EMULATED
static int has_bf16(const anvil_cpu_info *cpu) { return cpu != NULL && (cpu->features & ANVIL_CPU_AVX512BF16) != 0; }
#endif

static uint32_t avx512_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
#if AVX512_EMULATED
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "SIMDe emulation of the AVX-512 kernels (test build: correctness, not speed)");
    }
    (void)cpu;
    return 2;
#else
    if (cpu == NULL || cpu->arch != ANVIL_ARCH_X86_64) {
        if (why != NULL && why_size > 0) snprintf(why, why_size, "needs an x86-64 CPU");
        return 0;
    }
    char missing[64];
    if (anvil_cpu_lacks(cpu, required, sizeof required / sizeof required[0], missing, sizeof missing) > 0) {
        if (why != NULL && why_size > 0) {
            snprintf(why, why_size,
                     "needs avx512f avx512bw avx512vl f16c bmi2; this CPU (after ANVIL_CPU_MASK) lacks: %s", missing);
        }
        return 0;
    }
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "%s",
                 has_vnni(cpu) ? "avx512f/bw/vl + vnni: vpdpbusd kernels (variant avx512-vnni)"
                               : "avx512f/bw/vl without vnni: vpmaddubsw kernels (variant avx512)");
    }
    return 30;
#endif
}

static anvil_ref_backend_lists lists;

static anvil_backend backend = {
    .struct_size = sizeof(anvil_backend),
    .name = BACKEND_NAME,
    .description = "AVX-512 kernels (vpdpbusd with VNNI): 8-row GEMV, exact integer accumulation, "
                   "results equal to the scalar reference",
    .score = avx512_score,
};

static const anvil_backend *const backends[] = { &backend };

#define TABLES(sfx)                                                                                                  \
    {                                                                                                                \
        anvil_avx512_quantizers_##sfx, {                                                                             \
            anvil_avx512_kernels_q8_0_##sfx, anvil_avx512_kernels_kquants_##sfx, anvil_avx512_kernels_ternary_##sfx, \
                anvil_avx512_kernels_q4_q5_##sfx, anvil_avx512_kernels_cold_##sfx, anvil_avx512_kernels_ptqtp_##sfx, \
                anvil_avx512_kernels_lowbit_##sfx, anvil_avx512_kernels_iq1_##sfx, anvil_avx512_kernels_iq23_##sfx   \
        }                                                                                                            \
    }

static const struct {
    const anvil_act_quantizer *const *quantizers;
    const anvil_kernel *const *kernels[9];
} variants[2] = { TABLES(base), TABLES(vnni) };

static int avx512_init(const anvil_host_services *host, char *err, size_t err_size) {
    const anvil_cpu_info *cpu = NULL;
    if (ANVIL_HAS_FIELD(host, anvil_host_services, cpu)) cpu = host->cpu;
    anvil_ref_cpu_from_host(host);
    /* Without AVX-512 the backend scores 0 and is skipped; the plain tables
     * are filled anyway so the descriptor is well formed. */
    const int v = has_vnni(cpu) ? 1 : 0;
    /* Weight encoders: one build for both variants. */
    static const anvil_weight_encoder *const *const encoder_tables[] = {
        anvil_avx512_encoders_flat,  anvil_avx512_encoders_kquants, anvil_avx512_encoders_iq4,
        anvil_avx512_encoders_small, anvil_avx512_encoders_ptqtps,
    };
    /* F16 / BF16 (avx512_float.c, not in the SIMDe build): vdpbf16ps where
     * the CPU has AVX512_BF16, its emulation elsewhere; same results. */
    const anvil_kernel *const *kernels[ANVIL_REF_COUNT(variants[v].kernels) + 1];
    size_t nk = 0;
    for (size_t i = 0; i < ANVIL_REF_COUNT(variants[v].kernels); ++i) kernels[nk++] = variants[v].kernels[i];
#if !AVX512_EMULATED
    kernels[nk++] = has_bf16(cpu) ? anvil_avx512_kernels_float_bf16 : anvil_avx512_kernels_float_plain;
#endif
    const anvil_ref_backend_tables tables = {
        &variants[v].quantizers, 1, kernels, nk, encoder_tables, ANVIL_REF_COUNT(encoder_tables),
    };
    return anvil_ref_backend_fill(&backend, &lists, &tables, PLUGIN_ID, err, err_size);
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_BACKEND,
    .id = PLUGIN_ID,
    .version = "1.0.0",
    .license = "MIT",
    .description = "AVX-512 (F/BW/VL, VNNI when present) kernels for x86-64",
    .init = avx512_init,
    .n_backends = 1,
    .backends = backends,
};

ANVIL_PLUGIN_ENTRY(&desc)
