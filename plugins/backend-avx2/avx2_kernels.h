/* SPDX-License-Identifier: MIT */
/* backend-avx2: the per-family tables the kernel files define (compiled for
 * AVX2) and backend_avx2.c joins (compiled for baseline x86-64: it only
 * reads these pointers, never calls through them). Each table is
 * NULL-terminated. */
#ifndef ANVIL_AVX2_KERNELS_H
#define ANVIL_AVX2_KERNELS_H

#include "anvil/backend.h"

extern const anvil_act_quantizer *const anvil_avx2_quantizers[];
extern const anvil_kernel *const anvil_avx2_kernels_q8_0[];
extern const anvil_kernel *const anvil_avx2_kernels_q4_q5[];
extern const anvil_kernel *const anvil_avx2_kernels_kquants[];
extern const anvil_kernel *const anvil_avx2_kernels_ternary[];
extern const anvil_kernel *const anvil_avx2_kernels_cold[];
extern const anvil_kernel *const anvil_avx2_kernels_ptqtp[];
extern const anvil_kernel *const anvil_avx2_kernels_ptqtps[];
extern const anvil_kernel *const anvil_avx2_kernels_lowbit[];
extern const anvil_kernel *const anvil_avx2_kernels_iq1[];
extern const anvil_kernel *const anvil_avx2_kernels_iq23[];
/* avx2_float.c: F16 / BF16 weights against f32 activations. */
extern const anvil_kernel *const anvil_avx2_kernels_float[];
/* avx2_encode.c: weight encoders (ABI 1.1) by format family. */
extern const anvil_weight_encoder *const anvil_avx2_encoders_flat[];
extern const anvil_weight_encoder *const anvil_avx2_encoders_kquants[];
extern const anvil_weight_encoder *const anvil_avx2_encoders_iq4[];
extern const anvil_weight_encoder *const anvil_avx2_encoders_small[];
extern const anvil_weight_encoder *const anvil_avx2_encoders_ptqtps[];

#endif
