/* SPDX-License-Identifier: MIT */
/*
 * Synthetic models per llama.cpp architecture for the quantize parity
 * family: the architecture's usual keys and tensor names (from the table
 * host/src/quantize/quantize_arch_table.h, generated from llama.cpp's source), tiny
 * shapes (rows of 256 values, 32 rows), F16 matrices and F32 vectors.
 */
#ifndef ANVIL_PARITY_QUANTIZE_ARCH_H
#define ANVIL_PARITY_QUANTIZE_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"

typedef struct qza_spec {
    const char *arch;       /* the keys' architecture, and general.architecture unless declared */
    const char *declared;   /* general.architecture when not arch, or NULL */
    const char *table_arch; /* whose keys and tensors (NULL: arch's; none when unknown) */
    uint32_t n_layer;       /* {arch}.block_count (0: the key is left out) */
    uint32_t n_head, n_head_kv;
    const char *drop_key;         /* a key to leave out ("%s" = arch), or NULL */
    const char *const *extra_u32; /* "key=value" u32 keys ("%s" = arch), NULL-ended, or NULL */
    const char *const *tensors;   /* tensor names ("%d": layer) instead of the table's, NULL-ended */
    int q6k_output;               /* output.weight stored as Q6_K; 2: with a NaN scale in block 1 */
    uint64_t seed;
} qza_spec;

/* Write the model; 0, or -1 with the reason printed. */
int qza_write_model(const char *path, const qza_spec *s, anvil_ctx *ctx);
/* The table: how many architectures, and the name of the i-th. */
size_t qza_arch_count(void);
const char *qza_arch_name(size_t i);

#endif
