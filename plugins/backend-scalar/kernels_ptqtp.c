/* SPDX-License-Identifier: MIT */
/* backend-scalar: PTQTP trit-plane kernels (ptqtp2, ptqtp3, ptqtp2s, ptqtp3s
 * against Q8_K).
 *
 * The types are a plugin's (codec-ptqtp), not ggml's: this backend knows
 * them through their published layout (anvil/formats/ptqtp.h) and points
 * at the plugin's own reference dots (its static library, plugins/
 * codec-ptqtp/ptqtp_ref.h), so the referee and the reference are one
 * implementation. A kernel for a type whose codec is not loaded is never
 * dispatched. */
#include "anvil/blocks.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"
#include "kernel_tables.h"
#include "ptqtp_ref.h"

ANVIL_SCALAR_KERNEL(kernel_ptqtp2, ANVIL_TYPE_PTQTP2, ANVIL_TYPE_Q8_K, anvil_ptqtp_vec_dot2_q8_K);
ANVIL_SCALAR_KERNEL(kernel_ptqtp3, ANVIL_TYPE_PTQTP3, ANVIL_TYPE_Q8_K, anvil_ptqtp_vec_dot3_q8_K);
ANVIL_SCALAR_KERNEL(kernel_ptqtp2s, ANVIL_TYPE_PTQTP2S, ANVIL_TYPE_Q8_K, anvil_ptqtps_vec_dot2_q8_K);
ANVIL_SCALAR_KERNEL(kernel_ptqtp3s, ANVIL_TYPE_PTQTP3S, ANVIL_TYPE_Q8_K, anvil_ptqtps_vec_dot3_q8_K);

const anvil_act_quantizer *const anvil_scalar_quantizers_ptqtp[] = { NULL };

const anvil_kernel *const anvil_scalar_kernels_ptqtp[] = { &kernel_ptqtp2, &kernel_ptqtp3, &kernel_ptqtp2s,
                                                           &kernel_ptqtp3s, NULL };
