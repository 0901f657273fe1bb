/* SPDX-License-Identifier: MIT */
/* backend-scalar: F32, F16 and BF16 weights against f32 activations, the
 * referee dots of plugins/ref/float_dot.h (its summation order is the
 * contract every SIMD kernel for these types meets bit for bit). */
#include "kernel_tables.h"
#include "ref/float_dot.h"

ANVIL_SCALAR_KERNEL(kernel_f32, ANVIL_TYPE_F32, ANVIL_TYPE_F32, anvil_ref_vec_dot_f32_f32);
ANVIL_SCALAR_KERNEL(kernel_f16, ANVIL_TYPE_F16, ANVIL_TYPE_F32, anvil_ref_vec_dot_f16_f32);
ANVIL_SCALAR_KERNEL(kernel_bf16, ANVIL_TYPE_BF16, ANVIL_TYPE_F32, anvil_ref_vec_dot_bf16_f32);

const anvil_kernel *const anvil_scalar_kernels_float[] = { &kernel_f32, &kernel_f16, &kernel_bf16, NULL };
