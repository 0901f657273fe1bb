/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — plugin ABI: entry symbol, version negotiation, the plugin
 * descriptor and the services the host hands to plugins.
 *
 * Rules (see sdk/ABI.md for the full contract):
 *  - Every struct crossing the boundary starts with `struct_size`. Within one
 *    ABI major, structs grow only by appending fields; a reader uses a field
 *    only when it lies inside the writer's struct_size (ANVIL_HAS_FIELD).
 *  - `reserved` slots are zero. A later minor may append fields after them.
 *  - The host calls anvil_plugin_entry(major, minor) once. A plugin returns
 *    NULL when it cannot serve that major, otherwise a descriptor that stays
 *    valid until the library is unloaded.
 */
#ifndef ANVIL_ABI_H
#define ANVIL_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ANVIL_ABI_MAJOR 1
#define ANVIL_ABI_MINOR 1

#define ANVIL_PLUGIN_ENTRY_SYMBOL "anvil_plugin_entry"

#if defined(_WIN32)
#define ANVIL_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ANVIL_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* True when `field` of *p lies entirely inside p->struct_size. */
#define ANVIL_HAS_FIELD(p, type, field) \
    ((p) != NULL && (size_t)(p)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* ---- CPU features, probed once by the host ------------------------------ */

enum anvil_cpu_arch { ANVIL_ARCH_OTHER = 0, ANVIL_ARCH_X86_64 = 1, ANVIL_ARCH_AARCH64 = 2 };

/* x86-64. An AVX/AVX-512 bit is set only when the OS enables the register
 * state (XGETBV/XCR0), not merely when cpuid lists the instructions. */
#define ANVIL_CPU_SSE42 (UINT64_C(1) << 0)
#define ANVIL_CPU_AVX (UINT64_C(1) << 1)
#define ANVIL_CPU_AVX2 (UINT64_C(1) << 2)
#define ANVIL_CPU_FMA (UINT64_C(1) << 3)
#define ANVIL_CPU_F16C (UINT64_C(1) << 4)
#define ANVIL_CPU_BMI2 (UINT64_C(1) << 5)
#define ANVIL_CPU_AVX512F (UINT64_C(1) << 6)
#define ANVIL_CPU_AVX512BW (UINT64_C(1) << 7)
#define ANVIL_CPU_AVX512VL (UINT64_C(1) << 8)
#define ANVIL_CPU_AVX512DQ (UINT64_C(1) << 9)
#define ANVIL_CPU_AVX512VNNI (UINT64_C(1) << 10)
#define ANVIL_CPU_AVX512BF16 (UINT64_C(1) << 11)
#define ANVIL_CPU_AVX512VBMI (UINT64_C(1) << 12)
#define ANVIL_CPU_AVXVNNI (UINT64_C(1) << 13)
/* aarch64 (Linux HWCAP / HWCAP2) */
#define ANVIL_CPU_ASIMD (UINT64_C(1) << 32)
#define ANVIL_CPU_ASIMDDP (UINT64_C(1) << 33) /* sdot/udot */
#define ANVIL_CPU_I8MM (UINT64_C(1) << 34)    /* smmla */
#define ANVIL_CPU_ASIMDHP (UINT64_C(1) << 35) /* fp16 arithmetic */
#define ANVIL_CPU_SVE (UINT64_C(1) << 36)
#define ANVIL_CPU_BF16 (UINT64_C(1) << 37)

typedef struct anvil_cpu_info {
    uint32_t struct_size;
    uint32_t arch;         /* enum anvil_cpu_arch */
    uint64_t features;     /* ANVIL_CPU_* bits, after ANVIL_CPU_MASK */
    uint64_t features_raw; /* before ANVIL_CPU_MASK (for display) */
    uint32_t n_cpus;       /* online CPUs */
    uint32_t reserved0;
    uint64_t reserved[6];
} anvil_cpu_info;

/* ---- host services ------------------------------------------------------ */

enum anvil_log_level { ANVIL_LOG_ERROR = 0, ANVIL_LOG_WARN = 1, ANVIL_LOG_INFO = 2, ANVIL_LOG_DEBUG = 3 };

typedef struct anvil_host_services {
    uint32_t struct_size;
    uint32_t abi_major; /* the host's ABI version */
    uint32_t abi_minor;
    uint32_t reserved0;
    const anvil_cpu_info *cpu; /* valid until the plugin's deinit returns */
    /* Log a line on behalf of `plugin_id`. Safe from any thread, but never
     * from inside a kernel (kernels do not call back into the host). */
    void (*log)(void *host_ctx, int level, const char *plugin_id, const char *message);
    void *host_ctx;
    void *reserved[6];
} anvil_host_services;

/* ---- plugin descriptor -------------------------------------------------- */

enum anvil_plugin_kind { ANVIL_PLUGIN_CODEC = 1, ANVIL_PLUGIN_BACKEND = 2, ANVIL_PLUGIN_MIXED = 3 };

struct anvil_codec;
struct anvil_backend;

typedef struct anvil_plugin_desc {
    uint32_t struct_size;
    uint32_t abi_major;      /* ANVIL_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;      /* ANVIL_ABI_MINOR the plugin was built with */
    uint32_t kind;           /* enum anvil_plugin_kind */
    const char *id;          /* e.g. "codec-q8_0"; unique among plugins */
    const char *version;     /* plugin's own version, e.g. "1.0.0" */
    const char *license;     /* SPDX identifier */
    const char *description; /* one line */
    /* Optional. Called once per process, after the descriptor is accepted
     * and before any codec or backend is read (however many host contexts
     * load the file); may fill in tables that depend on the CPU. Idempotent.
     * Returns ANVIL_OK or a negative status with `err` set. */
    int (*init)(const anvil_host_services *host, char *err, size_t err_size);
    /* Optional. Called once before unload, after the last context using the
     * plugin is closed and everything the plugin made is gone. Idempotent. */
    void (*deinit)(void);
    size_t n_codecs;
    const struct anvil_codec *const *codecs;
    size_t n_backends;
    const struct anvil_backend *const *backends;
    void *reserved[8];
} anvil_plugin_desc;

typedef const anvil_plugin_desc *(*anvil_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);

/* Every plugin defines exactly this function (with ANVIL_PLUGIN_EXPORT). */
ANVIL_PLUGIN_EXPORT const anvil_plugin_desc *anvil_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);

/* The usual entry: serve the SDK's major with one static descriptor,
 * decline any other. `ANVIL_PLUGIN_ENTRY(&desc)` at file scope defines it. */
#define ANVIL_PLUGIN_ENTRY(desc_ptr)                                                           \
    ANVIL_PLUGIN_EXPORT const anvil_plugin_desc *anvil_plugin_entry(uint32_t host_abi_major,   \
                                                                    uint32_t host_abi_minor) { \
        (void)host_abi_minor;                                                                  \
        return host_abi_major == ANVIL_ABI_MAJOR ? (desc_ptr) : NULL;                          \
    }

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_ABI_H */
