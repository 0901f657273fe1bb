/* SPDX-License-Identifier: MIT */
/* backend-scalar: the flat 32-element family (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0).
 *
 * The table points at plugins/ref, the same code the codec-q8_0 plugin is
 * built from, so the referee and the reference are one implementation.
 * Q8_1 weights have no kernel: ggml has no q8_1 x q8_1 dot either (Q8_1 is
 * an activation format), and the host falls back to decode + f32 dot. */
#include "anvil/blocks.h"
#include "kernel_tables.h"
#include "ref/q8_0_family.h"

ANVIL_SCALAR_QUANTIZER(quantize_q8_0, ANVIL_TYPE_Q8_0, anvil_ref_quantize_q8_0);
ANVIL_SCALAR_QUANTIZER(quantize_q8_1, ANVIL_TYPE_Q8_1, anvil_ref_quantize_q8_1);

ANVIL_SCALAR_KERNEL(kernel_q4_0, ANVIL_TYPE_Q4_0, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_q4_0_q8_0);
ANVIL_SCALAR_KERNEL(kernel_q4_1, ANVIL_TYPE_Q4_1, ANVIL_TYPE_Q8_1, anvil_ref_vec_dot_q4_1_q8_1);
ANVIL_SCALAR_KERNEL(kernel_q5_0, ANVIL_TYPE_Q5_0, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_q5_0_q8_0);
ANVIL_SCALAR_KERNEL(kernel_q5_1, ANVIL_TYPE_Q5_1, ANVIL_TYPE_Q8_1, anvil_ref_vec_dot_q5_1_q8_1);
ANVIL_SCALAR_KERNEL(kernel_q8_0, ANVIL_TYPE_Q8_0, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_q8_0_q8_0);

const anvil_act_quantizer *const anvil_scalar_quantizers_q8_0[] = {
    &quantize_q8_0,
    &quantize_q8_1,
    NULL,
};

const anvil_kernel *const anvil_scalar_kernels_q8_0[] = {
    &kernel_q4_0, &kernel_q4_1, &kernel_q5_0, &kernel_q5_1, &kernel_q8_0, NULL,
};
