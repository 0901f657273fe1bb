/* SPDX-License-Identifier: MIT */
/*
 * codec-ternary: ggml's ternary and sub-2-bit block formats.
 *
 *   tq1_0  256 trits, 5 per byte (base 3), f16 absmax   54 bytes / 256 weights
 *   tq2_0  256 trits as 2-bit codes, f16 absmax         66 bytes / 256 weights
 *   q1_0   128 sign bits, f16 mean |x|                  18 bytes / 128 weights
 *   q2_0   64 2-bit codes {-1,0,+1,+2}, f16 absmax      18 bytes /  64 weights
 *
 * Encoders match ggml's quantize_row_*_ref byte for byte, decoders its
 * dequantize_row_* bit for bit; both come from plugins/ref. The row encoders
 * are ggml_quantize_chunk's: they accept an importance matrix and, as ggml,
 * ignore it (ANVIL_CODEC_IMATRIX_UNUSED). The activation
 * format each dot consumes is ggml's vec_dot_type: Q8_K for the 256-element
 * TQ formats, Q8_0 for Q1_0 and Q2_0 (one weight block spans four or two
 * Q8_0 blocks). Kernels belong to backends, so ref_vec_dot stays NULL here.
 *
 * Why one plugin: all four store weights in at most two bits with one f16
 * scale per block and no per-group scale search; they serve the ternary /
 * 1-2 bit models (BitNet-style) a deployment enables or drops together.
 */
#include <stddef.h>

#include "anvil/abi.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "ref/ternary.h"

#define FAMILY "ternary"

#define CODEC(ident, type, tname, elems, block, act, enc, dec, rows)        \
    static const anvil_codec ident = { .struct_size = sizeof(anvil_codec),  \
                                       .type_id = (type),                   \
                                       .name = (tname),                     \
                                       .family = FAMILY,                    \
                                       .block_elems = (elems),              \
                                       .block_bytes = sizeof(block),        \
                                       .act_type = (act),                   \
                                       .flags = ANVIL_CODEC_IMATRIX_UNUSED, \
                                       .encode = (enc),                     \
                                       .decode = (dec),                     \
                                       .encode_rows = (rows) }

CODEC(codec_tq1_0, ANVIL_TYPE_TQ1_0, "tq1_0", ANVIL_QK_K, anvil_block_tq1_0, ANVIL_TYPE_Q8_K, anvil_ref_encode_tq1_0,
      anvil_ref_decode_tq1_0, anvil_ref_encode_rows_tq1_0);
CODEC(codec_tq2_0, ANVIL_TYPE_TQ2_0, "tq2_0", ANVIL_QK_K, anvil_block_tq2_0, ANVIL_TYPE_Q8_K, anvil_ref_encode_tq2_0,
      anvil_ref_decode_tq2_0, anvil_ref_encode_rows_tq2_0);
CODEC(codec_q1_0, ANVIL_TYPE_Q1_0, "q1_0", ANVIL_QK1_0, anvil_block_q1_0, ANVIL_TYPE_Q8_0, anvil_ref_encode_q1_0,
      anvil_ref_decode_q1_0, anvil_ref_encode_rows_q1_0);
CODEC(codec_q2_0, ANVIL_TYPE_Q2_0, "q2_0", ANVIL_QK2_0, anvil_block_q2_0, ANVIL_TYPE_Q8_0, anvil_ref_encode_q2_0,
      anvil_ref_decode_q2_0, anvil_ref_encode_rows_q2_0);

static const anvil_codec *const codecs[] = {
    &codec_tq1_0,
    &codec_tq2_0,
    &codec_q1_0,
    &codec_q2_0,
};

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_CODEC,
    .id = "codec-ternary",
    .version = "1.0.0",
    .license = "MIT",
    .description = "ggml's ternary and sub-2-bit formats: tq1_0 tq2_0 q1_0 q2_0",
    .n_codecs = sizeof codecs / sizeof codecs[0],
    .codecs = codecs,
};

ANVIL_PLUGIN_ENTRY(&desc)
