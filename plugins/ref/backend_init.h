/* SPDX-License-Identifier: MIT */
/* A backend's init, shared by backend-scalar, -avx2, -avx512 and -neon:
 * join the per-family NULL-terminated tables of activation quantizers,
 * kernels and weight encoders into the lists the backend descriptor hands
 * the host. */
#ifndef ANVIL_REF_BACKEND_INIT_H
#define ANVIL_REF_BACKEND_INIT_H

#include <stddef.h>

#include "anvil/backend.h"

/* Entries one backend may list of each kind. */
#define ANVIL_REF_BACKEND_MAX 128

/* Storage for the joined lists (a backend keeps one, static). */
typedef struct anvil_ref_backend_lists {
    const anvil_act_quantizer *quantizers[ANVIL_REF_BACKEND_MAX];
    const anvil_kernel *kernels[ANVIL_REF_BACKEND_MAX];
    const anvil_weight_encoder *encoders[ANVIL_REF_BACKEND_MAX];
} anvil_ref_backend_lists;

/* The per-family tables to join, in order: n_X tables at X. A kind with no
 * tables (NULL, 0) leaves the descriptor's list of that kind as it is. */
typedef struct anvil_ref_backend_tables {
    const anvil_act_quantizer *const *const *quantizers;
    size_t n_quantizers;
    const anvil_kernel *const *const *kernels;
    size_t n_kernels;
    const anvil_weight_encoder *const *const *encoders;
    size_t n_encoders;
} anvil_ref_backend_tables;

#define ANVIL_REF_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Join t into lists and point b's n_X/X at them. ANVIL_OK, or
 * ANVIL_E_INTERNAL with "PLUGIN_ID: kernel table overflow ..." in err when
 * a kind has more than ANVIL_REF_BACKEND_MAX entries (b is then unchanged). */
int anvil_ref_backend_fill(anvil_backend *b, anvil_ref_backend_lists *lists, const anvil_ref_backend_tables *t,
                           const char *plugin_id, char *err, size_t err_size);

#endif
