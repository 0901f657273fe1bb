/* SPDX-License-Identifier: MIT */
/* backend-scalar: weight encoders (ABI 1.1) of the formats the shared
 * SIMD encoder sources do not cover -- the reference encoders of
 * plugins/ref, the very functions the codecs register. The others (the
 * q8_0 family, the K-quants, IQ4_NL/IQ4_XS, the ternary and FP4 formats)
 * are portable_encode.c's: the shared sources on generic vectors, byte
 * for byte the reference's, at vector speed on any CPU.
 *
 * Why a backend has encoders at all: encoders are dispatched like kernels
 * (per type: a [type.X] pin, then [backends] order), so "scalar" must be a
 * backend that HAS them. Otherwise `order = scalar, avx512` or
 * `[type.q4_K] backend = scalar` would skip to an ISA-specific encoder
 * instead of selecting the portable one (or the reference, here). Where
 * plugins/ref has a row encoder that takes importance weights
 * (anvil_ref_encode_rows_*) that one is offered, as ANVIL_ENCODER_WEIGHTED;
 * the others are the codec's `encode` row by row. */
#include <stdio.h>

#include "anvil/blocks.h"
#include "anvil/status.h"
#include "kernel_tables.h"
#include "ref/checks.h"
#include "ref/cold_enc_grid.h"
#include "ref/q8_k.h"

/* Row by row through a reference encoder, after the reference's checks of
 * the whole input (a refusal names row and element, as encode_rows'). */
static int rows_with(const char *name, anvil_encode_fn encode, size_t block_elems, size_t block_bytes,
                     const float *src, void *dst, size_t nrows, size_t n_per_row, char *msg, size_t msg_size) {
    if (n_per_row % block_elems != 0) return encode(src, dst, n_per_row, msg, msg_size); /* its refusal */
    const int rc = anvil_ref_check_finite(name, src, nrows * n_per_row, n_per_row, msg, msg_size);
    if (rc != ANVIL_OK) return rc;
    const size_t row_bytes = n_per_row / block_elems * block_bytes;
    for (size_t r = 0; r < nrows; ++r) {
        const int rr = encode(src + r * n_per_row, (char *)dst + r * row_bytes, n_per_row, msg, msg_size);
        if (rr != ANVIL_OK) return rr;
    }
    return ANVIL_OK;
}

#define SCALAR_ENCODER(name, TYPE, BLOCK, be)                                                                  \
    static int rows_##name(const float *src, void *dst, size_t nrows, size_t n_per_row, const float *imatrix,  \
                           char *msg, size_t msg_size) {                                                       \
        (void)imatrix; /* not ANVIL_ENCODER_WEIGHTED: always NULL */                                           \
        return rows_with(#name, anvil_ref_encode_##name, (be), sizeof(BLOCK), src, dst, nrows, n_per_row, msg, \
                         msg_size);                                                                            \
    }                                                                                                          \
    static const anvil_weight_encoder enc_##name = { .struct_size = sizeof(anvil_weight_encoder),              \
                                                     .type_id = (TYPE),                                        \
                                                     .variant = "scalar",                                      \
                                                     .encode_rows = rows_##name }

/* The reference row encoders that take importance weights. */
#define SCALAR_WEIGHTED(name, TYPE)                                                               \
    static const anvil_weight_encoder enc_##name = { .struct_size = sizeof(anvil_weight_encoder), \
                                                     .type_id = (TYPE),                           \
                                                     .flags = ANVIL_ENCODER_WEIGHTED,             \
                                                     .variant = "scalar",                         \
                                                     .encode_rows = anvil_ref_encode_rows_##name }

SCALAR_ENCODER(q8_K, ANVIL_TYPE_Q8_K, anvil_block_q8_K, ANVIL_QK_K);
SCALAR_WEIGHTED(iq3_xxs, ANVIL_TYPE_IQ3_XXS);
SCALAR_WEIGHTED(iq3_s, ANVIL_TYPE_IQ3_S);
SCALAR_WEIGHTED(iq2_s, ANVIL_TYPE_IQ2_S);
SCALAR_WEIGHTED(iq1_m, ANVIL_TYPE_IQ1_M);
/* ggml encodes these only with an importance matrix: offered for weighted
 * calls only (dispatch never picks them for unweighted ones). */
SCALAR_WEIGHTED(iq2_xxs, ANVIL_TYPE_IQ2_XXS);
SCALAR_WEIGHTED(iq2_xs, ANVIL_TYPE_IQ2_XS);
SCALAR_WEIGHTED(iq1_s, ANVIL_TYPE_IQ1_S);

const anvil_weight_encoder *const anvil_scalar_encoders[] = {
    &enc_q8_K, &enc_iq3_xxs, &enc_iq3_s, &enc_iq2_s, &enc_iq1_m, &enc_iq2_xxs, &enc_iq2_xs, &enc_iq1_s, NULL,
};
