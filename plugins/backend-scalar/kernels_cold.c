/* SPDX-License-Identifier: MIT */
/* backend-scalar: kernels of the cold formats (i-quants, MXFP4, NVFP4).
 *
 * The dots and row decoders are plugins/ref's (ref/cold.h), shared with
 * codec-cold. No activation quantizers here: these formats consume Q8_0 and
 * Q8_K, whose quantizers the q8_0 and k-quants families register. */
#include "kernel_tables.h"
#include "ref/cold.h"

/* Like ANVIL_SCALAR_KERNEL, plus the row decoder (the codec's own). */
#define COLD_KERNEL(ident, wtype, atype, dot, dec)                           \
    static const anvil_kernel ident = { .struct_size = sizeof(anvil_kernel), \
                                        .weight_type = (wtype),              \
                                        .act_type = (atype),                 \
                                        .variant = "scalar",                 \
                                        .vec_dot = (dot),                    \
                                        .decode_row = (dec) }

COLD_KERNEL(k_iq2_xxs, ANVIL_TYPE_IQ2_XXS, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq2_xxs_q8_K, anvil_ref_decode_iq2_xxs);
COLD_KERNEL(k_iq2_xs, ANVIL_TYPE_IQ2_XS, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq2_xs_q8_K, anvil_ref_decode_iq2_xs);
COLD_KERNEL(k_iq3_xxs, ANVIL_TYPE_IQ3_XXS, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq3_xxs_q8_K, anvil_ref_decode_iq3_xxs);
COLD_KERNEL(k_iq1_s, ANVIL_TYPE_IQ1_S, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq1_s_q8_K, anvil_ref_decode_iq1_s);
COLD_KERNEL(k_iq4_nl, ANVIL_TYPE_IQ4_NL, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_iq4_nl_q8_0, anvil_ref_decode_iq4_nl);
COLD_KERNEL(k_iq3_s, ANVIL_TYPE_IQ3_S, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq3_s_q8_K, anvil_ref_decode_iq3_s);
COLD_KERNEL(k_iq2_s, ANVIL_TYPE_IQ2_S, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq2_s_q8_K, anvil_ref_decode_iq2_s);
COLD_KERNEL(k_iq4_xs, ANVIL_TYPE_IQ4_XS, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq4_xs_q8_K, anvil_ref_decode_iq4_xs);
COLD_KERNEL(k_iq1_m, ANVIL_TYPE_IQ1_M, ANVIL_TYPE_Q8_K, anvil_ref_vec_dot_iq1_m_q8_K, anvil_ref_decode_iq1_m);
COLD_KERNEL(k_mxfp4, ANVIL_TYPE_MXFP4, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_mxfp4_q8_0, anvil_ref_decode_mxfp4);
COLD_KERNEL(k_nvfp4, ANVIL_TYPE_NVFP4, ANVIL_TYPE_Q8_0, anvil_ref_vec_dot_nvfp4_q8_0, anvil_ref_decode_nvfp4);

const anvil_act_quantizer *const anvil_scalar_quantizers_cold[] = { NULL };

const anvil_kernel *const anvil_scalar_kernels_cold[] = {
    &k_iq2_xxs, &k_iq2_xs, &k_iq3_xxs, &k_iq1_s, &k_iq4_nl, &k_iq3_s,
    &k_iq2_s,   &k_iq4_xs, &k_iq1_m,   &k_mxfp4, &k_nvfp4,  NULL,
};
