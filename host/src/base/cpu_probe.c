/* SPDX-License-Identifier: MIT */
/*
 * The one CPU probe. Run once per process; the result (after
 * ANVIL_CPU_MASK) is what every plugin sees.
 *
 * x86-64: cpuid for the instruction sets, XGETBV/XCR0 for the register state
 * the OS saves: AVX needs XMM|YMM state, AVX-512 additionally opmask and the
 * upper ZMM halves. A CPU that lists AVX-512 under an OS that does not enable
 * it has no AVX-512 here.
 * aarch64 Linux: HWCAP/HWCAP2 from the auxiliary vector.
 */
#include "cpu_probe.h"

#include "anvil/anvil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

static anvil_cpu_info cpu;
static char mask_warnings[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static uint64_t read_xcr0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static uint64_t probe_x86(void) {
    uint32_t a, b, c, d;
    uint64_t f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        return 0;
    }
    const int osxsave = (c >> 27) & 1;
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const int avx_state = (xcr0 & 0x6) == 0x6;   /* XMM | YMM */
    const int zmm_state = (xcr0 & 0xE6) == 0xE6; /* + opmask, ZMM_Hi256, Hi16_ZMM */

    if ((c >> 20) & 1) f |= ANVIL_CPU_SSE42;
    if (avx_state) {
        if ((c >> 28) & 1) f |= ANVIL_CPU_AVX;
        if ((c >> 12) & 1) f |= ANVIL_CPU_FMA;
        if ((c >> 29) & 1) f |= ANVIL_CPU_F16C;
    }
    uint32_t max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        if ((b >> 8) & 1) f |= ANVIL_CPU_BMI2;
        if (avx_state && ((b >> 5) & 1)) f |= ANVIL_CPU_AVX2;
        if (zmm_state) {
            if ((b >> 16) & 1) f |= ANVIL_CPU_AVX512F;
            if ((b >> 17) & 1) f |= ANVIL_CPU_AVX512DQ;
            if ((b >> 30) & 1) f |= ANVIL_CPU_AVX512BW;
            if ((b >> 31) & 1) f |= ANVIL_CPU_AVX512VL;
            if ((c >> 1) & 1) f |= ANVIL_CPU_AVX512VBMI;
            if ((c >> 11) & 1) f |= ANVIL_CPU_AVX512VNNI;
        }
        uint32_t a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        (void)b1;
        (void)c1;
        (void)d1;
        if (avx_state && ((a1 >> 4) & 1)) f |= ANVIL_CPU_AVXVNNI;
        if (zmm_state && ((a1 >> 5) & 1)) f |= ANVIL_CPU_AVX512BF16;
    }
    return f;
}
#endif

#if defined(__aarch64__) && defined(__linux__)
static uint64_t probe_arm(void) {
    const unsigned long hw = getauxval(AT_HWCAP);
    const unsigned long hw2 = getauxval(AT_HWCAP2);
    uint64_t f = 0;
    /* Bit positions from the Linux arm64 uapi (asm/hwcap.h). */
    if (hw & (1UL << 1)) f |= ANVIL_CPU_ASIMD;
    if (hw & (1UL << 10)) f |= ANVIL_CPU_ASIMDHP;
    if (hw & (1UL << 20)) f |= ANVIL_CPU_ASIMDDP;
    if (hw & (1UL << 22)) f |= ANVIL_CPU_SVE;
    if (hw2 & (1UL << 13)) f |= ANVIL_CPU_I8MM;
    if (hw2 & (1UL << 14)) f |= ANVIL_CPU_BF16;
    return f;
}
#endif

typedef struct feature_name {
    const char *name;
    uint64_t bits;
} feature_name;

#define AVX512_ALL                                                                                             \
    (ANVIL_CPU_AVX512F | ANVIL_CPU_AVX512BW | ANVIL_CPU_AVX512VL | ANVIL_CPU_AVX512DQ | ANVIL_CPU_AVX512VNNI | \
     ANVIL_CPU_AVX512BF16 | ANVIL_CPU_AVX512VBMI)

static const feature_name features[] = {
    { "sse4.2", ANVIL_CPU_SSE42 },
    { "avx", ANVIL_CPU_AVX },
    { "avx2", ANVIL_CPU_AVX2 },
    { "fma", ANVIL_CPU_FMA },
    { "f16c", ANVIL_CPU_F16C },
    { "bmi2", ANVIL_CPU_BMI2 },
    { "avx512f", ANVIL_CPU_AVX512F },
    { "avx512bw", ANVIL_CPU_AVX512BW },
    { "avx512vl", ANVIL_CPU_AVX512VL },
    { "avx512dq", ANVIL_CPU_AVX512DQ },
    { "avx512vnni", ANVIL_CPU_AVX512VNNI },
    { "avx512bf16", ANVIL_CPU_AVX512BF16 },
    { "avx512vbmi", ANVIL_CPU_AVX512VBMI },
    { "avxvnni", ANVIL_CPU_AVXVNNI },
    { "asimd", ANVIL_CPU_ASIMD },
    { "asimddp", ANVIL_CPU_ASIMDDP },
    { "i8mm", ANVIL_CPU_I8MM },
    { "asimdhp", ANVIL_CPU_ASIMDHP },
    { "sve", ANVIL_CPU_SVE },
    { "bf16", ANVIL_CPU_BF16 },
};

/* Group names accepted by ANVIL_CPU_MASK besides the single features. */
static const feature_name groups[] = {
    { "avx512", AVX512_ALL },
    { "dotprod", ANVIL_CPU_ASIMDDP },
    { "neon", ANVIL_CPU_ASIMD | ANVIL_CPU_ASIMDDP | ANVIL_CPU_I8MM | ANVIL_CPU_ASIMDHP },
    { "simd", UINT64_MAX },
};

static uint64_t lookup(const char *name) {
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i) {
        if (strcasecmp(groups[i].name, name) == 0) return groups[i].bits;
    }
    for (size_t i = 0; i < sizeof features / sizeof features[0]; ++i) {
        if (strcasecmp(features[i].name, name) == 0) return features[i].bits;
    }
    return 0;
}

/* ANVIL_CPU_MASK="-avx512,-avx512vnni,-dotprod": each "-name" hides a
 * feature (or group) so fallback paths can be exercised on capable CPUs. */
static uint64_t apply_mask(uint64_t f, const char *spec) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
        const char *name = tok[0] == '-' ? tok + 1 : tok;
        const uint64_t bits = lookup(name);
        if (bits == 0 || tok[0] != '-') {
            size_t len = strlen(mask_warnings);
            snprintf(mask_warnings + len, sizeof mask_warnings - len,
                     "%sANVIL_CPU_MASK: ignored '%s' (use -<feature>, e.g. -avx512)", len ? "; " : "", tok);
            continue;
        }
        f &= ~bits;
    }
    return f;
}

static void probe_once(void) {
    memset(&cpu, 0, sizeof cpu);
    cpu.struct_size = sizeof cpu;
#if defined(__x86_64__)
    cpu.arch = ANVIL_ARCH_X86_64;
    cpu.features_raw = probe_x86();
#elif defined(__aarch64__) && defined(__linux__)
    cpu.arch = ANVIL_ARCH_AARCH64;
    cpu.features_raw = probe_arm();
#else
    cpu.arch = ANVIL_ARCH_OTHER;
#endif
    cpu.features = cpu.features_raw;
    const char *mask = getenv("ANVIL_CPU_MASK");
    if (mask != NULL && *mask != '\0') {
        cpu.features = apply_mask(cpu.features, mask);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu.n_cpus = n > 0 ? (uint32_t)n : 1;
}

const anvil_cpu_info *anvil__cpu_probe(void) {
    pthread_once(&once, probe_once);
    return &cpu;
}

const char *anvil__cpu_mask_warnings(void) {
    anvil__cpu_probe();
    return mask_warnings;
}

size_t anvil__cpu_feature_string(uint64_t f, char *buf, size_t size) {
    size_t len = 0;
    if (size > 0) buf[0] = '\0';
    for (size_t i = 0; i < sizeof features / sizeof features[0]; ++i) {
        if (f & features[i].bits) {
            int w = snprintf(buf + len, size > len ? size - len : 0, "%s%s", len ? " " : "", features[i].name);
            if (w > 0) len += (size_t)w;
            if (len >= size) {
                len = size ? size - 1 : 0;
                break;
            }
        }
    }
    return len;
}

const char *anvil__cpu_arch_name(uint32_t arch) {
    switch (arch) {
    case ANVIL_ARCH_X86_64: return "x86_64";
    case ANVIL_ARCH_AARCH64: return "aarch64";
    default: return "other";
    }
}

ANVIL_API size_t anvil_cpu_features_string(uint64_t features, char *buf, size_t size) {
    return anvil__cpu_feature_string(features, buf, size);
}

ANVIL_API const char *anvil_cpu_arch_string(uint32_t arch) { return anvil__cpu_arch_name(arch); }
