/* SPDX-License-Identifier: MIT */
/* Per-family kernel tables of backend-scalar. Each family's file (one per
 * codec family) defines its two NULL-terminated arrays; backend_scalar.c
 * joins them. The kernels themselves live in plugins/ref, shared with the
 * codecs, so the referee and the reference cannot drift apart. */
#ifndef ANVIL_BACKEND_SCALAR_TABLES_H
#define ANVIL_BACKEND_SCALAR_TABLES_H

#include "anvil/backend.h"
#include "anvil/blocks.h"

extern const anvil_act_quantizer *const anvil_scalar_quantizers_q8_0[];
extern const anvil_kernel *const anvil_scalar_kernels_q8_0[];
extern const anvil_act_quantizer *const anvil_scalar_quantizers_kquants[];
extern const anvil_kernel *const anvil_scalar_kernels_kquants[];
extern const anvil_act_quantizer *const anvil_scalar_quantizers_ternary[];
extern const anvil_kernel *const anvil_scalar_kernels_ternary[];
extern const anvil_act_quantizer *const anvil_scalar_quantizers_cold[];
extern const anvil_kernel *const anvil_scalar_kernels_cold[];
extern const anvil_act_quantizer *const anvil_scalar_quantizers_ptqtp[];
extern const anvil_kernel *const anvil_scalar_kernels_ptqtp[];
/* kernels_float.c: F16 / BF16 weights against f32 activations (no quantizer). */
extern const anvil_kernel *const anvil_scalar_kernels_float[];
/* encoders.c: the reference weight encoders of the formats the shared
 * SIMD sources do not cover, row-wise (ABI 1.1). */
extern const anvil_weight_encoder *const anvil_scalar_encoders[];
/* portable_encode.c: the shared SIMD encoders on generic vectors. */
extern const anvil_weight_encoder *const anvil_portable_encoders_flat[];
extern const anvil_weight_encoder *const anvil_portable_encoders_kquants[];
extern const anvil_weight_encoder *const anvil_portable_encoders_iq4[];
extern const anvil_weight_encoder *const anvil_portable_encoders_small[];
extern const anvil_weight_encoder *const anvil_portable_encoders_ptqtps[];

/* Helpers to declare a table entry tersely. */
#define ANVIL_SCALAR_KERNEL(ident, wtype, atype, dot)                        \
    static const anvil_kernel ident = { .struct_size = sizeof(anvil_kernel), \
                                        .weight_type = (wtype),              \
                                        .act_type = (atype),                 \
                                        .variant = "scalar",                 \
                                        .vec_dot = (dot) }
#define ANVIL_SCALAR_QUANTIZER(ident, atype, fn)                                                               \
    static const anvil_act_quantizer ident = {                                                                 \
        .struct_size = sizeof(anvil_act_quantizer), .act_type = (atype), .variant = "scalar", .quantize = (fn) \
    }

#endif
