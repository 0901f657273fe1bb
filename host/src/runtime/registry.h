/* SPDX-License-Identifier: MIT */
/* Internal: the registry a context embeds -- the plugins it loaded, their
 * codecs and backends as normalised copies (registry.c) -- and the type
 * lookups beside it (type_lookup.c). It knows the config and the CPU it was
 * loaded for, never the context. */
#ifndef ANVIL_HOST_REGISTRY_H
#define ANVIL_HOST_REGISTRY_H

#include <stddef.h>

#include "anvil/anvil.h"
#include "config.h"
#include "kernel_rows.h"

#define ANVIL_REASON_MAX 512

/* A plugin file loaded in this process, shared by every context that uses
 * it (registry.c): dlopen'ed and init'ed once, before its first user;
 * deinit'ed and closed once, after its last. */
typedef struct plugin_lib plugin_lib;

typedef struct plugin_rec {
    char *name; /* as named in the config */
    char *path; /* resolved .so, or NULL */
    int line;   /* config line that names it (0: found by scanning) */
    int status; /* ANVIL_OK when loaded */
    char reason[ANVIL_REASON_MAX];
    char trust_note[ANVIL_REASON_MAX]; /* loaded although untrusted (allow_insecure) */
    int optional;
    plugin_lib *lib;              /* the shared load while this context uses it */
    void *handle;                 /* lib's dlopen handle while loaded */
    const anvil_plugin_desc *raw; /* the plugin's own descriptor */
    anvil_plugin_desc desc;       /* normalised copy: fields past struct_size are zero */
} plugin_rec;

typedef struct codec_rec {
    anvil_codec codec; /* normalised copy */
    size_t plugin;
} codec_rec;

typedef struct backend_rec {
    anvil_backend backend; /* normalised copy */
    size_t plugin;
    uint32_t score;
    char why[256];
    anvil_kernel *kernels;       /* normalised copies */
    anvil__rows_fn *kernel_rows; /* per kernel: how matmul runs it (kernel_rows.h) */
    size_t n_kernels;
    anvil_act_quantizer *quantizers;
    size_t n_quantizers;
    anvil_weight_encoder *encoders; /* normalised copies (ABI 1.1) */
    size_t n_encoders;
} backend_rec;

typedef struct anvil_registry {
    const anvil_config *cfg;   /* what to load, from where, how trusting (the context's) */
    const anvil_cpu_info *cpu; /* what backends score themselves against */
    plugin_rec *plugins;
    size_t n_plugins;
    codec_rec *codecs;
    size_t n_codecs;
    backend_rec *backends;
    size_t n_backends;
} anvil_registry;

/* registry.c. reg->cfg and reg->cpu set, the rest zero, before load. */
int anvil__registry_load(anvil_registry *reg, int keep_going, anvil_error *err);
void anvil__registry_unload(anvil_registry *reg);
/* Lookups: NULL when absent (reg may be NULL: no plugins). */
const codec_rec *anvil__registry_find_codec(const anvil_registry *reg, uint32_t type_id);
/* Plugin id of the plugin that registered the codec for type id. */
const char *anvil__registry_codec_plugin(const anvil_registry *reg, uint32_t type_id);
/* Loaded codec by name (case-insensitive). */
const anvil_codec *anvil__registry_codec_by_name(const anvil_registry *reg, const char *name);
/* Loaded backend by name (case-insensitive), usable here or not. */
const backend_rec *anvil__registry_backend_by_name(const anvil_registry *reg, const char *name);

/* type_lookup.c: anvil_type_lookup / anvil_type_from_name on a registry
 * (NULL: built-in types only). */
int anvil__type_lookup_in(const anvil_registry *reg, uint32_t id, anvil_type_info *out, anvil_error *err);
int anvil__type_from_name_in(const anvil_registry *reg, const char *name, uint32_t *id, anvil_error *err);
/* anvil_type_name on a registry. */
const char *anvil__type_name_in(const anvil_registry *reg, uint32_t id);

#endif
