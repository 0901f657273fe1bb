/* SPDX-License-Identifier: MIT */
/* The CPU probe of plugins/ref (see cpu_probe.h). */
#include "ref/cpu_probe.h"

#include <stddef.h>

/* What the host hides (ANVIL_CPU_AVX2 / ANVIL_CPU_AVX512F bits), set by
 * anvil_ref_cpu_from_host before any encoder runs. */
static uint64_t hidden;

void anvil_ref_cpu_from_host(const anvil_host_services *host) {
    if (!ANVIL_HAS_FIELD(host, anvil_host_services, cpu) || host->cpu == NULL ||
        !ANVIL_HAS_FIELD(host->cpu, anvil_cpu_info, features) || host->cpu->arch != ANVIL_ARCH_X86_64) {
        return;
    }
    const uint64_t wanted = ANVIL_CPU_AVX2 | ANVIL_CPU_AVX512F;
    __atomic_store_n(&hidden, wanted & ~host->cpu->features, __ATOMIC_RELAXED);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* 1 or 0 once probed, -1 before */
static int probe(int *cache, int avx512) {
    int h = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = (avx512 ? __builtin_cpu_supports("avx512f") : __builtin_cpu_supports("avx2")) ? 1 : 0;
        __atomic_store_n(cache, h, __ATOMIC_RELAXED);
    }
    return h;
}

int anvil_ref_has_avx2(void) {
    static int has = -1;
    return probe(&has, 0) && !(__atomic_load_n(&hidden, __ATOMIC_RELAXED) & ANVIL_CPU_AVX2);
}

int anvil_ref_has_avx512(void) {
    static int has = -1;
    return probe(&has, 1) && !(__atomic_load_n(&hidden, __ATOMIC_RELAXED) & ANVIL_CPU_AVX512F);
}
#else
int anvil_ref_has_avx2(void) { return 0; }
int anvil_ref_has_avx512(void) { return 0; }
#endif
