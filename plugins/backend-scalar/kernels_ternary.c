/* SPDX-License-Identifier: MIT */
/* backend-scalar: ternary and sub-2-bit kernels (TQ1_0 TQ2_0 Q1_0 Q2_0).
 *
 * The table points at plugins/ref, the same code the codec-ternary plugin is
 * built from, so the referee and the reference are one implementation. The
 * dots are multiplication-free in their integer part (see ref/ternary.h).
 * No activation quantizers here: Q8_K and Q8_0 belong to their own families
 * (kernels_kquants.c, kernels_q8_0.c). */
#include "anvil/blocks.h"
#include "kernel_tables.h"
#include "ref/ternary.h"

ANVIL_SCALAR_KERNEL(kernel_tq1_0, ANVIL_TYPE_TQ1_0, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_tq1_0_q8_K);
ANVIL_SCALAR_KERNEL(kernel_tq2_0, ANVIL_TYPE_TQ2_0, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_tq2_0_q8_K);
ANVIL_SCALAR_KERNEL(kernel_q1_0, ANVIL_TYPE_Q1_0, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_q1_0_q8_0);
ANVIL_SCALAR_KERNEL(kernel_q2_0, ANVIL_TYPE_Q2_0, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_q2_0_q8_0);

const anvil_act_quantizer *const anvil_scalar_quantizers_ternary[] = { NULL };

const anvil_kernel *const anvil_scalar_kernels_ternary[] = {
    &kernel_tq1_0, &kernel_tq2_0, &kernel_q1_0, &kernel_q2_0, NULL,
};
