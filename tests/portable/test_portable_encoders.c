/* SPDX-License-Identifier: MIT */
/* backend-scalar's portable weight encoders (variant "portable": the
 * shared SIMD encoder sources on GCC/clang generic vectors) against the
 * reference encoders of plugins/ref, byte for byte, with and without an
 * importance matrix (tests/simd/simd_encoder_test.c): every format
 * the shared sources cover must be there. */
#include <CUnit/Basic.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "simd_encoder_test.h"
#include "test_env.h"

#ifndef PORTABLE_ENC_ROWS
#define PORTABLE_ENC_ROWS 10000
#endif

static void *plugin;
static const anvil_backend *backend;

static int suite_init(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/backend-scalar.so", ANVIL_PLUGIN_DIR);
    plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return 1;
    }
    anvil_plugin_entry_fn entry = (anvil_plugin_entry_fn)dlsym(plugin, ANVIL_PLUGIN_ENTRY_SYMBOL);
    const anvil_plugin_desc *desc = entry ? entry(ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR) : NULL;
    anvil_host_services host = test_host_services();
    char err[256] = "";
    if (desc == NULL || desc->n_backends != 1 || desc->init(&host, err, sizeof err) != ANVIL_OK) {
        fprintf(stderr, "backend-scalar: no descriptor or init failed: %s\n", err);
        return 1;
    }
    backend = desc->backends[0];
    const char *env = getenv("ANVIL_PORTABLE_ENC_ROWS");
    sb_encoder_setup(&backend, "portable", "", env != NULL && atoi(env) > 0 ? (size_t)atoi(env) : PORTABLE_ENC_ROWS);
    return 0;
}

static int suite_clean(void) {
    if (plugin != NULL) dlclose(plugin);
    plugin = NULL;
    return 0;
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    sb_add_encoder_tests(
        CU_add_suite("backend-scalar portable weight encoders vs the reference", suite_init, suite_clean));
    return test_run_cunit();
}
