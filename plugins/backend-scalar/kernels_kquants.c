/* SPDX-License-Identifier: MIT */
/* backend-scalar: k-quants kernels. The Q8_K activation quantizer and the
 * five Q2_K..Q6_K x Q8_K dots, all from plugins/ref (the same code the
 * codec plugin's encoders sit next to). */
#include "anvil/blocks.h"
#include "kernel_tables.h"
#include "ref/kquants.h"
#include "ref/q8_k.h"

ANVIL_SCALAR_QUANTIZER(quant_q8_K, ANVIL_TYPE_Q8_K, anvil_ref_quantize_q8_K);

ANVIL_SCALAR_KERNEL(dot_q2_K, ANVIL_TYPE_Q2_K, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_q2_K_q8_K);
ANVIL_SCALAR_KERNEL(dot_q3_K, ANVIL_TYPE_Q3_K, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_q3_K_q8_K);
ANVIL_SCALAR_KERNEL(dot_q4_K, ANVIL_TYPE_Q4_K, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_q4_K_q8_K);
ANVIL_SCALAR_KERNEL(dot_q5_K, ANVIL_TYPE_Q5_K, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_q5_K_q8_K);
ANVIL_SCALAR_KERNEL(dot_q6_K, ANVIL_TYPE_Q6_K, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_q6_K_q8_K);

const anvil_act_quantizer *const anvil_scalar_quantizers_kquants[] = { &quant_q8_K, NULL };
const anvil_kernel *const anvil_scalar_kernels_kquants[] = {
    &dot_q2_K, &dot_q3_K, &dot_q4_K, &dot_q5_K, &dot_q6_K, NULL,
};
