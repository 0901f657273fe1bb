/* SPDX-License-Identifier: MIT */
/*
 * codec-cold: eleven codecs, one family:
 *   i-quants   IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS
 *   FP4        MXFP4 NVFP4
 *
 * Every format decodes bit-identically to ggml and encodes byte-identically
 * to ggml_quantize_chunk (what llama-quantize writes), with an importance
 * matrix through encode_rows, without one through encode and encode_rows.
 * IQ2_XXS IQ2_XS IQ1_S are the exception ggml makes: it quantizes them only
 * with an importance matrix, so they are flagged ANVIL_CODEC_NEEDS_IMATRIX
 * and encode only through encode_rows with one (there is no imatrix-free
 * output to match). Their `encode` is a refusal: ANVIL_E_NEEDS_IMATRIX with
 * llama.cpp's reason, so that anvil_encode says what is missing instead of
 * "no encoder" (encode_rows without a matrix answers the same). MXFP4
 * and NVFP4 take an importance matrix and, as ggml, ignore it
 * (ANVIL_CODEC_IMATRIX_UNUSED).
 *
 * The codebooks are static tables (plugins/ref/cold_tables.c). The lattice
 * encoders also need search tables derived from them (for every off-grid
 * code vector, its candidate grid points); those are built once per
 * process, thread-safely, by the first lattice encoder that runs
 * (anvil_cold_lattice_ready; plugins/ref/cold_enc_lattice.c; static
 * storage, so there is nothing to free at deinit). The init hook below
 * checks the codebooks they come from, but does not build them: that costs
 * ~35 ms, which every anvil process paid at load, mostly for formats it
 * never encodes. The implementations live in plugins/ref, shared with
 * backend-scalar's kernels.
 *
 * Why one plugin, and why "cold": these decode through codebooks, grids or
 * fixed value tables (hundreds of KiB of tables and the search code their
 * encoders need). Kept apart from the hot flat and K-quant families, a
 * deployment that never reads them does not load their tables.
 */
#include <stdio.h>

#include "anvil/abi.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "ref/cold.h"
#include "ref/cold_enc_grid.h"
#include "ref/cpu_probe.h"

#define NOTE_IMATRIX "needs an importance matrix (ggml encodes it only with one)"

/* The plain encode of a format that needs an importance matrix: the row
 * encoder's own refusal (block-count check, then ANVIL_E_NEEDS_IMATRIX and
 * its message), so both entry points say the same thing. */
#define NEEDS_IMATRIX_ENCODE(t)                                                                      \
    static int refuse_plain_##t(const float *src, void *dst, size_t n, char *msg, size_t msg_size) { \
        return anvil_ref_encode_rows_##t(src, dst, 1, n, NULL, msg, msg_size);                       \
    }
NEEDS_IMATRIX_ENCODE(iq2_xxs)
NEEDS_IMATRIX_ENCODE(iq2_xs)
NEEDS_IMATRIX_ENCODE(iq1_s)

#define COLD_CODEC(ident, type, name_, blk, elems, act, flags_, enc, rows, dec, note) \
    static const anvil_codec ident = {                                                \
        .struct_size = sizeof(anvil_codec),                                           \
        .type_id = (type),                                                            \
        .name = (name_),                                                              \
        .family = "cold",                                                             \
        .block_elems = (elems),                                                       \
        .block_bytes = sizeof(blk),                                                   \
        .act_type = (act),                                                            \
        .flags = (flags_),                                                            \
        .encode = (enc),                                                              \
        .decode = (dec),                                                              \
        .ref_vec_dot = NULL,                                                          \
        .encode_note = (note),                                                        \
        .encode_rows = (rows),                                                        \
    }

COLD_CODEC(c_iq2_xxs, ANVIL_TYPE_IQ2_XXS, "iq2_xxs", anvil_block_iq2_xxs, ANVIL_QK_K, ANVIL_TYPE_Q8_K,
           ANVIL_CODEC_NEEDS_IMATRIX, refuse_plain_iq2_xxs, anvil_ref_encode_rows_iq2_xxs, anvil_ref_decode_iq2_xxs,
           NOTE_IMATRIX);
COLD_CODEC(c_iq2_xs, ANVIL_TYPE_IQ2_XS, "iq2_xs", anvil_block_iq2_xs, ANVIL_QK_K, ANVIL_TYPE_Q8_K,
           ANVIL_CODEC_NEEDS_IMATRIX, refuse_plain_iq2_xs, anvil_ref_encode_rows_iq2_xs, anvil_ref_decode_iq2_xs,
           NOTE_IMATRIX);
COLD_CODEC(c_iq3_xxs, ANVIL_TYPE_IQ3_XXS, "iq3_xxs", anvil_block_iq3_xxs, ANVIL_QK_K, ANVIL_TYPE_Q8_K, 0,
           anvil_ref_encode_iq3_xxs, anvil_ref_encode_rows_iq3_xxs, anvil_ref_decode_iq3_xxs, NULL);
COLD_CODEC(c_iq1_s, ANVIL_TYPE_IQ1_S, "iq1_s", anvil_block_iq1_s, ANVIL_QK_K, ANVIL_TYPE_Q8_K,
           ANVIL_CODEC_NEEDS_IMATRIX, refuse_plain_iq1_s, anvil_ref_encode_rows_iq1_s, anvil_ref_decode_iq1_s,
           NOTE_IMATRIX);
COLD_CODEC(c_iq4_nl, ANVIL_TYPE_IQ4_NL, "iq4_nl", anvil_block_iq4_nl, ANVIL_QK4_NL, ANVIL_TYPE_Q8_0, 0,
           anvil_ref_encode_iq4_nl, anvil_ref_encode_rows_iq4_nl, anvil_ref_decode_iq4_nl, NULL);
COLD_CODEC(c_iq3_s, ANVIL_TYPE_IQ3_S, "iq3_s", anvil_block_iq3_s, ANVIL_QK_K, ANVIL_TYPE_Q8_K, 0,
           anvil_ref_encode_iq3_s, anvil_ref_encode_rows_iq3_s, anvil_ref_decode_iq3_s, NULL);
COLD_CODEC(c_iq2_s, ANVIL_TYPE_IQ2_S, "iq2_s", anvil_block_iq2_s, ANVIL_QK_K, ANVIL_TYPE_Q8_K, 0,
           anvil_ref_encode_iq2_s, anvil_ref_encode_rows_iq2_s, anvil_ref_decode_iq2_s, NULL);
COLD_CODEC(c_iq4_xs, ANVIL_TYPE_IQ4_XS, "iq4_xs", anvil_block_iq4_xs, ANVIL_QK_K, ANVIL_TYPE_Q8_K, 0,
           anvil_ref_encode_iq4_xs, anvil_ref_encode_rows_iq4_xs, anvil_ref_decode_iq4_xs, NULL);
COLD_CODEC(c_iq1_m, ANVIL_TYPE_IQ1_M, "iq1_m", anvil_block_iq1_m, ANVIL_QK_K, ANVIL_TYPE_Q8_K, 0,
           anvil_ref_encode_iq1_m, anvil_ref_encode_rows_iq1_m, anvil_ref_decode_iq1_m, NULL);
COLD_CODEC(c_mxfp4, ANVIL_TYPE_MXFP4, "mxfp4", anvil_block_mxfp4, ANVIL_QK_MXFP4, ANVIL_TYPE_Q8_0,
           ANVIL_CODEC_IMATRIX_UNUSED, anvil_ref_encode_mxfp4, anvil_ref_encode_rows_mxfp4, anvil_ref_decode_mxfp4,
           NULL);
COLD_CODEC(c_nvfp4, ANVIL_TYPE_NVFP4, "nvfp4", anvil_block_nvfp4, ANVIL_QK_NVFP4, ANVIL_TYPE_Q8_0,
           ANVIL_CODEC_IMATRIX_UNUSED, anvil_ref_encode_nvfp4, anvil_ref_encode_rows_nvfp4, anvil_ref_decode_nvfp4,
           NULL);

/* In type-id order. */
static const anvil_codec *const codecs[] = {
    &c_iq2_xxs, &c_iq2_xs, &c_iq3_xxs, &c_iq1_s, &c_iq4_nl, &c_iq3_s,
    &c_iq2_s,   &c_iq4_xs, &c_iq1_m,   &c_mxfp4, &c_nvfp4,
};

/* Checks the codebooks the lattice search tables are built from (the
 * tables themselves are built on first use; see above). */
static int cold_init(const anvil_host_services *host, char *err, size_t err_size) {
    anvil_ref_cpu_from_host(host);
    const int rc = anvil_ref_cold_codebook_check();
    if (rc != ANVIL_OK && err != NULL && err_size > 0) {
        snprintf(err, err_size,
                 "codec-cold: the i-quant codebooks failed their self-check "
                 "(plugins/ref/cold_tables.c is corrupt); reinstall the plugin");
    }
    return rc;
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_CODEC,
    .id = "codec-cold",
    .version = "1.1.0",
    .license = "MIT",
    .description = "i-quants, MXFP4 and NVFP4: bit-exact decode and byte-exact encode (with or "
                   "without an importance matrix) for all eleven; IQ2_XXS IQ2_XS IQ1_S need one",
    .init = cold_init,
    .n_codecs = sizeof codecs / sizeof codecs[0],
    .codecs = codecs,
};

ANVIL_PLUGIN_ENTRY(&desc)
