/* SPDX-License-Identifier: MIT */
/* The AVX2 probe of plugins/ref (see cpu_probe.h). */
#include "ref/cpu_probe.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
int anvil_ref_has_avx2(void) {
    static int has = -1;
    int h = __atomic_load_n(&has, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&has, h, __ATOMIC_RELAXED);
    }
    return h;
}
#else
int anvil_ref_has_avx2(void) { return 0; }
#endif
