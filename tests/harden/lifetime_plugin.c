/* SPDX-License-Identifier: MIT */
/*
 * A plugin whose deinit really tears down what init built: the codec, the
 * backend, its kernel and a lookup table the kernel and decoder read are all
 * malloc'd in init and freed in deinit. Used after deinit, it counts a
 * violation (and would read freed memory). It counts its init and deinit
 * calls, readable through lifetime_plugin_counts().
 *
 *   codec  lt_i8 (type id 1041): 32 int8 codes + an f32 scale per block
 *   backend "lifetime": vec_dot of lt_i8 against f32 activations
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/abi.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"

#include "lifetime_plugin.h"

#define LT_BLOCK 32
#define LT_TYPE 1041

typedef struct {
    float d;
    int8_t q[LT_BLOCK];
} lt_block;

static atomic_int inits, deinits, violations, live;
static float *lut; /* code -> value, built by init */
static anvil_codec *codec;
static anvil_kernel *kernel;
static anvil_backend *backend;
static const anvil_codec *codec_list[1];
static const anvil_backend *backend_list[1];
static const anvil_kernel *kernel_list[1];

ANVIL_PLUGIN_EXPORT void lifetime_plugin_counts(int *n_init, int *n_deinit, int *n_violations) {
    *n_init = atomic_load(&inits);
    *n_deinit = atomic_load(&deinits);
    *n_violations = atomic_load(&violations);
}

static int usable(void) {
    if (!atomic_load(&live)) {
        atomic_fetch_add(&violations, 1);
        return 0;
    }
    return 1;
}

static int lt_encode(const float *src, void *dst, size_t n, char *msg, size_t msg_size) {
    if (n % LT_BLOCK != 0) {
        snprintf(msg, msg_size, "lt_i8: %zu is not a multiple of %d", n, LT_BLOCK);
        return ANVIL_E_BLOCK_MISMATCH;
    }
    if (!usable()) {
        snprintf(msg, msg_size, "lt_i8: used after deinit");
        return ANVIL_E_INTERNAL;
    }
    lt_block *b = dst;
    for (size_t i = 0; i < n / LT_BLOCK; ++i) {
        float amax = 0;
        for (int j = 0; j < LT_BLOCK; ++j) amax = fmaxf(amax, fabsf(src[i * LT_BLOCK + j]));
        b[i].d = amax / 127.0f;
        const float id = amax > 0 ? 127.0f / amax : 0.0f;
        for (int j = 0; j < LT_BLOCK; ++j) b[i].q[j] = (int8_t)lrintf(src[i * LT_BLOCK + j] * id);
    }
    return ANVIL_OK;
}

static void lt_decode(const void *src, float *dst, size_t n) {
    if (!usable()) {
        memset(dst, 0, n * sizeof *dst);
        return;
    }
    const lt_block *b = src;
    for (size_t i = 0; i < n / LT_BLOCK; ++i) {
        for (int j = 0; j < LT_BLOCK; ++j) dst[i * LT_BLOCK + j] = b[i].d * lut[(uint8_t)b[i].q[j]];
    }
}

static void lt_dot(size_t n, float *s, const void *w, const void *a) {
    if (!usable()) {
        *s = NAN;
        return;
    }
    const lt_block *b = w;
    const float *x = a;
    double sum = 0;
    for (size_t i = 0; i < n / LT_BLOCK; ++i) {
        double bs = 0;
        for (int j = 0; j < LT_BLOCK; ++j) bs += (double)lut[(uint8_t)b[i].q[j]] * x[i * LT_BLOCK + j];
        sum += bs * b[i].d;
    }
    *s = (float)sum;
}

static uint32_t lt_score(const anvil_cpu_info *cpu, char *why, size_t why_size) {
    (void)cpu;
    snprintf(why, why_size, "lifetime test backend");
    return 7;
}

static void teardown(void) {
    free(lut);
    free(codec);
    free(kernel);
    free(backend);
    lut = NULL;
    codec = NULL;
    kernel = NULL;
    backend = NULL;
}

static int lt_init(const anvil_host_services *host, char *err, size_t err_size) {
    (void)host;
    atomic_fetch_add(&inits, 1);
    lut = malloc(256 * sizeof *lut);
    codec = calloc(1, sizeof *codec);
    kernel = calloc(1, sizeof *kernel);
    backend = calloc(1, sizeof *backend);
    if (lut == NULL || codec == NULL || kernel == NULL || backend == NULL) {
        teardown();
        snprintf(err, err_size, "out of memory");
        return ANVIL_E_NOMEM;
    }
    for (int i = 0; i < 256; ++i) lut[i] = (float)(int8_t)i;
    *codec = (anvil_codec){
        .struct_size = sizeof(anvil_codec),
        .type_id = LT_TYPE,
        .name = "lt_i8",
        .family = "lifetime",
        .block_elems = LT_BLOCK,
        .block_bytes = sizeof(lt_block),
        .act_type = ANVIL_TYPE_F32,
        .encode = lt_encode,
        .decode = lt_decode,
        .ref_vec_dot = lt_dot,
    };
    *kernel = (anvil_kernel){
        .struct_size = sizeof(anvil_kernel),
        .weight_type = LT_TYPE,
        .act_type = ANVIL_TYPE_F32,
        .variant = "lifetime",
        .vec_dot = lt_dot,
    };
    kernel_list[0] = kernel;
    *backend = (anvil_backend){
        .struct_size = sizeof(anvil_backend),
        .name = "lifetime",
        .description = "frees its tables in deinit",
        .score = lt_score,
        .n_kernels = 1,
        .kernels = kernel_list,
    };
    codec_list[0] = codec;
    backend_list[0] = backend;
    atomic_store(&live, 1);
    return ANVIL_OK;
}

static void lt_deinit(void) {
    atomic_fetch_add(&deinits, 1);
    atomic_store(&live, 0);
    codec_list[0] = NULL;
    backend_list[0] = NULL;
    kernel_list[0] = NULL;
    teardown();
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_MIXED,
    .id = "lifetime-plugin",
    .version = "1.0.0",
    .license = "MIT",
    .description = "tears its tables down in deinit",
    .init = lt_init,
    .deinit = lt_deinit,
    .n_codecs = 1,
    .codecs = codec_list,
    .n_backends = 1,
    .backends = backend_list,
};

ANVIL_PLUGIN_ENTRY(&desc)
