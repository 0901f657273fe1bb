/* SPDX-License-Identifier: MIT */
/*
 * backend-avx2: AVX2 + FMA + F16C (+ BMI2) kernels for x86-64 (Haswell, Zen and
 * later): activation quantizers Q8_0 / Q8_1 / Q8_K; vec_dot, multi-row GEMV,
 * GEMM and row decode for Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K
 * TQ1_0 TQ2_0 IQ4_NL IQ4_XS MXFP4, and codec-ptqtp's ptqtp2/ptqtp3 and
 * ptqtp2s/ptqtp3s (layouts from anvil/formats/ptqtp.h, ptqtps.h); weight encoders (ABI 1.1) for the flat
 * family, the K-quants, TQ1_0 TQ2_0 Q1_0 Q2_0 IQ4_NL IQ4_XS MXFP4 NVFP4,
 * byte-identical to the codecs'. Every other format falls through to the
 * next backend in the configured order (backend-scalar).
 *
 * This file is compiled for baseline x86-64: it only reads the kernel
 * tables (data) and decides from the host's CPU features whether they may
 * run. It never runs cpuid itself, so ANVIL_CPU_MASK=-avx2 (or -fma,
 * -f16c, -bmi2) makes the backend score 0 and the host skip it, with the
 * reason. The kernel files are also built with -mbmi2 (IQ1_M's lattice
 * indices by pdep/pext, and whatever BMI2 the compiler picks elsewhere), so
 * the score requires BMI2 too: Intel Haswell and later and AMD Excavator
 * and Zen have both; a CPU with AVX2 but not BMI2 skips this backend.
 *
 * Why one plugin per instruction set: the host scores, loads or skips a
 * backend as a unit from the CPU it probed, so everything that needs AVX2 +
 * FMA + F16C + BMI2 lives here and nothing else does.
 */
#include <stdio.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "avx2_kernels.h"
#include "ref/backend_init.h"
#include "ref/cpu_probe.h"

/* What the kernel files were compiled for (-mavx2 -mfma -mf16c -mbmi2). */
static const anvil_cpu_need required[] = {
    { ANVIL_CPU_AVX, "avx" },   { ANVIL_CPU_AVX2, "avx2" }, { ANVIL_CPU_FMA, "fma" },
    { ANVIL_CPU_F16C, "f16c" }, { ANVIL_CPU_BMI2, "bmi2" },
};

static anvil_ref_backend_lists lists;

static uint32_t avx2_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    if (cpu == NULL || cpu->arch != ANVIL_ARCH_X86_64) {
        if (why != NULL && why_size > 0) snprintf(why, why_size, "needs an x86-64 CPU");
        return 0;
    }
    char missing[64];
    if (anvil_cpu_lacks(cpu, required, sizeof required / sizeof required[0], missing, sizeof missing) > 0) {
        if (why != NULL && why_size > 0) {
            snprintf(why, why_size, "needs avx avx2 fma f16c bmi2; this CPU (after ANVIL_CPU_MASK) lacks: %s",
                     missing);
        }
        return 0;
    }
    if (why != NULL && why_size > 0) snprintf(why, why_size, "avx2 fma f16c bmi2 present");
    return 20;
}

static anvil_backend backend = {
    .struct_size = sizeof(anvil_backend),
    .name = "avx2",
    .description =
        "AVX2/FMA/F16C kernels: 8-row GEMV, exact integer accumulation, results equal to the scalar reference",
    .score = avx2_score,
};

static const anvil_backend *const backends[] = { &backend };

static int avx2_init(const anvil_host_services *host, char *err, size_t err_size) {
    anvil_ref_cpu_from_host(host); /* the encoders' searches; the score reads the CPU features */
    static const anvil_act_quantizer *const *const quantizer_tables[] = { anvil_avx2_quantizers };
    static const anvil_kernel *const *const kernel_tables[] = {
        anvil_avx2_kernels_q8_0, anvil_avx2_kernels_q4_q5, anvil_avx2_kernels_kquants, anvil_avx2_kernels_ternary,
        anvil_avx2_kernels_cold, anvil_avx2_kernels_ptqtp, anvil_avx2_kernels_ptqtps,  anvil_avx2_kernels_lowbit,
        anvil_avx2_kernels_iq1,  anvil_avx2_kernels_iq23,  anvil_avx2_kernels_float,
    };
    static const anvil_weight_encoder *const *const encoder_tables[] = {
        anvil_avx2_encoders_flat,  anvil_avx2_encoders_kquants, anvil_avx2_encoders_iq4,
        anvil_avx2_encoders_small, anvil_avx2_encoders_ptqtps,
    };
    static const anvil_ref_backend_tables tables = {
        quantizer_tables, ANVIL_REF_COUNT(quantizer_tables), kernel_tables, ANVIL_REF_COUNT(kernel_tables),
        encoder_tables,   ANVIL_REF_COUNT(encoder_tables),
    };
    return anvil_ref_backend_fill(&backend, &lists, &tables, "backend-avx2", err, err_size);
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_BACKEND,
    .id = "backend-avx2",
    .version = "1.0.0",
    .license = "MIT",
    .description = "AVX2/FMA/F16C kernels for x86-64",
    .init = avx2_init,
    .n_backends = 1,
    .backends = backends,
};

ANVIL_PLUGIN_ENTRY(&desc)
