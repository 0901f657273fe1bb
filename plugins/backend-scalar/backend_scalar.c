/* SPDX-License-Identifier: MIT */
/*
 * backend-scalar: portable C kernels, the referee every SIMD backend is
 * checked against. It runs on any CPU, so it always scores 1 (the lowest
 * usable score): any usable SIMD backend that has a kernel is preferred by
 * the order in the config, and this one catches the rest. It also offers
 * a weight encoder for every format the codecs encode: the shared SIMD
 * encoder sources on portable generic vectors (portable_encode.c) where
 * they cover the format, the reference encoder elsewhere (encoders.c), so
 * that a pin or an order naming "scalar" selects an encoder here too.
 *
 * Why one plugin: the portable kernels and encoders of every format, built
 * from the same plugins/ref sources the codecs use, so one plugin is the
 * referee for all of them and the fallback on any CPU.
 */
#include <stdio.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "kernel_tables.h"
#include "ref/backend_init.h"
#include "ref/cpu_probe.h"

static anvil_ref_backend_lists lists;

static uint32_t scalar_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    (void)cpu;
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "portable C, runs on any CPU");
    }
    return 1;
}

static anvil_backend backend = {
    .struct_size = sizeof(anvil_backend),
    .name = "scalar",
    .description = "portable C reference kernels (the referee)",
    .score = scalar_score,
};

static const anvil_backend *const backends[] = { &backend };

static int scalar_init(const anvil_host_services *host, char *err, size_t err_size) {
    anvil_ref_cpu_from_host(host);
    static const anvil_act_quantizer *const *const quantizer_tables[] = {
        anvil_scalar_quantizers_q8_0, anvil_scalar_quantizers_kquants, anvil_scalar_quantizers_ternary,
        anvil_scalar_quantizers_cold, anvil_scalar_quantizers_ptqtp,
    };
    static const anvil_kernel *const *const kernel_tables[] = {
        anvil_scalar_kernels_q8_0, anvil_scalar_kernels_kquants, anvil_scalar_kernels_ternary,
        anvil_scalar_kernels_cold, anvil_scalar_kernels_ptqtp,   anvil_scalar_kernels_float,
    };
    static const anvil_weight_encoder *const *const encoder_tables[] = {
        anvil_portable_encoders_flat,  anvil_portable_encoders_kquants, anvil_portable_encoders_iq4,
        anvil_portable_encoders_small, anvil_portable_encoders_ptqtps,  anvil_scalar_encoders,
    };
    static const anvil_ref_backend_tables tables = {
        quantizer_tables, ANVIL_REF_COUNT(quantizer_tables), kernel_tables, ANVIL_REF_COUNT(kernel_tables),
        encoder_tables,   ANVIL_REF_COUNT(encoder_tables),
    };
    return anvil_ref_backend_fill(&backend, &lists, &tables, "backend-scalar", err, err_size);
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_BACKEND,
    .id = "backend-scalar",
    .version = "1.0.0",
    .license = "MIT",
    .description = "portable C kernels for every built-in format and the published ptqtp formats",
    .init = scalar_init,
    .n_backends = 1,
    .backends = backends,
};

ANVIL_PLUGIN_ENTRY(&desc)
