/* SPDX-License-Identifier: MIT */
/* backend-avx512: the per-family tables the kernel files define (once per
 * variant: suffix _base or _vnni, see avx512_common.h) and backend_avx512.c
 * joins (compiled for baseline x86-64: it only reads these pointers, never
 * calls through them). Each table is NULL-terminated. */
#ifndef ANVIL_AVX512_KERNELS_H
#define ANVIL_AVX512_KERNELS_H

#include "anvil/backend.h"

#define AVX512_DECLARE_TABLES(sfx)                                           \
    extern const anvil_act_quantizer *const anvil_avx512_quantizers_##sfx[]; \
    extern const anvil_kernel *const anvil_avx512_kernels_q8_0_##sfx[];      \
    extern const anvil_kernel *const anvil_avx512_kernels_q4_q5_##sfx[];     \
    extern const anvil_kernel *const anvil_avx512_kernels_kquants_##sfx[];   \
    extern const anvil_kernel *const anvil_avx512_kernels_ternary_##sfx[];   \
    extern const anvil_kernel *const anvil_avx512_kernels_cold_##sfx[];      \
    extern const anvil_kernel *const anvil_avx512_kernels_ptqtp_##sfx[];     \
    extern const anvil_kernel *const anvil_avx512_kernels_lowbit_##sfx[];    \
    extern const anvil_kernel *const anvil_avx512_kernels_iq1_##sfx[];       \
    extern const anvil_kernel *const anvil_avx512_kernels_iq23_##sfx[];

AVX512_DECLARE_TABLES(base)
AVX512_DECLARE_TABLES(vnni)

/* avx512_float.c (built twice: with and without AVX512_BF16): F16 / BF16
 * weights against f32 activations. */
extern const anvil_kernel *const anvil_avx512_kernels_float_plain[];
extern const anvil_kernel *const anvil_avx512_kernels_float_bf16[];

/* avx512_encode.c (one build for both variants): weight encoders (ABI 1.1)
 * by format family. */
extern const anvil_weight_encoder *const anvil_avx512_encoders_flat[];
extern const anvil_weight_encoder *const anvil_avx512_encoders_kquants[];
extern const anvil_weight_encoder *const anvil_avx512_encoders_iq4[];
extern const anvil_weight_encoder *const anvil_avx512_encoders_small[];
extern const anvil_weight_encoder *const anvil_avx512_encoders_ptqtps[];

#endif
