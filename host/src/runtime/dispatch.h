/* SPDX-License-Identifier: MIT */
/* Internal: the dispatch table a context embeds -- per weight type, which
 * backend's kernel, activation quantizer and encoders run (dispatch.c). Built
 * from a loaded registry and its config; knows nothing of the context. */
#ifndef ANVIL_HOST_DISPATCH_H
#define ANVIL_HOST_DISPATCH_H

#include <stddef.h>

#include "anvil/anvil.h"
#include "registry.h"

typedef struct dispatch_rec {
    uint32_t weight_type;
    uint32_t act_type;
    const codec_rec *codec;
    const codec_rec *act_codec; /* codec of act_type, when any */
    const anvil_kernel *kernel; /* NULL: fallback */
    anvil__rows_fn kernel_rows; /* the kernel's row runner (with kernel) */
    const backend_rec *backend;
    const anvil_act_quantizer *quantizer; /* NULL: act_codec->encode or f32 */
    const backend_rec *quantizer_backend;
    int fallback;
    int warned; /* fallback note logged once */
    char note[256];
    /* Weight encoders: who encodes this type without (encoder) and with
     * (weighted) an importance matrix. NULL: the codec's own encoder. */
    const anvil_weight_encoder *encoder;
    const backend_rec *encoder_backend;
    const anvil_weight_encoder *weighted;
    const backend_rec *weighted_backend;
    int weighted_drops_imatrix; /* ggml ignores the matrix: `encoder` runs */
    char encoder_note[192];
} dispatch_rec;

/* The built-in float weights F32, F16 and BF16 have no codec: their kernel,
 * against f32 activations (plugins/ref/float_dot.h), is chosen by the same
 * rule ([type.f32] / [type.f16] / [type.bf16] pin, then order and score). kernel NULL:
 * matmul's decode + f32 dot. */
typedef struct dispatch_float {
    uint32_t weight_type;
    const anvil_kernel *kernel;
    anvil__rows_fn kernel_rows;
    const backend_rec *backend;
} dispatch_float;

typedef struct anvil_dispatch_table {
    dispatch_rec *recs;
    size_t n;
    dispatch_float floats[3]; /* F16, BF16, F32 */
} anvil_dispatch_table;

/* Build the table for every codec reg holds ([backends] order and
 * [type.NAME] pins from reg->cfg); an error names a config line. */
int anvil__dispatch_build(anvil_dispatch_table *dt, const anvil_registry *reg, anvil_error *err);
void anvil__dispatch_free(anvil_dispatch_table *dt);
/* The record of a weight type, or NULL (dt may be NULL). */
const dispatch_rec *anvil__dispatch_table_find(const anvil_dispatch_table *dt, uint32_t weight_type);
/* The kernel record of F16 / BF16 / F32 weights, or NULL for another type. */
const dispatch_float *anvil__dispatch_table_float(const anvil_dispatch_table *dt, uint32_t weight_type);
/* anvil_ctx_find_kernel / anvil_ctx_find_encoder on a table. */
int anvil__dispatch_find_kernel(const anvil_dispatch_table *dt, const anvil_registry *reg, const char *backend,
                                uint32_t weight_type, const anvil_kernel **kernel,
                                const anvil_act_quantizer **quantizer, anvil_error *err);
int anvil__dispatch_find_encoder(const anvil_dispatch_table *dt, const anvil_registry *reg, const char *backend,
                                 uint32_t type, const anvil_weight_encoder **encoder, anvil_error *err);

#endif
