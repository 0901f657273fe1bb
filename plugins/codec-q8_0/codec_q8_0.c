/* SPDX-License-Identifier: MIT */
/*
 * codec-q8_0: ggml's flat 32-element block formats.
 *
 *   q4_0  4-bit codes, one fp16 scale           18 bytes / 32 weights
 *   q4_1  4-bit codes, fp16 scale and min       20 bytes
 *   q5_0  5-bit codes, one fp16 scale           22 bytes
 *   q5_1  5-bit codes, fp16 scale and min       24 bytes
 *   q8_0  8-bit codes, one fp16 scale           34 bytes
 *   q8_1  8-bit codes, fp16 scale and d*sum     36 bytes (activation format)
 *
 * Encoders match ggml's quantize_row_*_ref byte for byte, decoders its
 * dequantize_row_* bit for bit; both come from plugins/ref. The row encoders
 * give ggml_quantize_chunk's bytes: q4_0 .. q5_1 use an importance matrix,
 * q8_0 accepts and ignores it (as ggml), q8_1 (an activation format ggml
 * does not quantize in chunks) has none. The activation
 * format each dot consumes is ggml's vec_dot_type: the symmetric formats
 * pair with Q8_0, the ones with a min with Q8_1 (whose s field carries the
 * activation sum the min term needs). Kernels belong to backends, so
 * ref_vec_dot stays NULL here.
 *
 * Why these six in one plugin: one 32-element block with one f16 scale (and
 * a min or a sum for the _1 forms), Q8_0/Q8_1 activations, and one
 * reference source in ggml (the flat quantizers): they load, encode and
 * dispatch together, and the config names them as one family.
 */
#include <stddef.h>

#include "anvil/abi.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "ref/q8_0_family.h"

#define FAMILY "q8_0"

#define CODEC(ident, type, tname, block, act, fl, enc, dec, rows)          \
    static const anvil_codec ident = { .struct_size = sizeof(anvil_codec), \
                                       .type_id = (type),                  \
                                       .name = (tname),                    \
                                       .family = FAMILY,                   \
                                       .block_elems = 32,                  \
                                       .block_bytes = sizeof(block),       \
                                       .act_type = (act),                  \
                                       .flags = (fl),                      \
                                       .encode = (enc),                    \
                                       .decode = (dec),                    \
                                       .encode_rows = (rows) }

CODEC(codec_q4_0, ANVIL_TYPE_Q4_0, "q4_0", anvil_block_q4_0, ANVIL_TYPE_Q8_0, 0, anvil_ref_encode_q4_0,
      anvil_ref_decode_q4_0, anvil_ref_encode_rows_q4_0);
CODEC(codec_q4_1, ANVIL_TYPE_Q4_1, "q4_1", anvil_block_q4_1, ANVIL_TYPE_Q8_1, 0, anvil_ref_encode_q4_1,
      anvil_ref_decode_q4_1, anvil_ref_encode_rows_q4_1);
CODEC(codec_q5_0, ANVIL_TYPE_Q5_0, "q5_0", anvil_block_q5_0, ANVIL_TYPE_Q8_0, 0, anvil_ref_encode_q5_0,
      anvil_ref_decode_q5_0, anvil_ref_encode_rows_q5_0);
CODEC(codec_q5_1, ANVIL_TYPE_Q5_1, "q5_1", anvil_block_q5_1, ANVIL_TYPE_Q8_1, 0, anvil_ref_encode_q5_1,
      anvil_ref_decode_q5_1, anvil_ref_encode_rows_q5_1);
CODEC(codec_q8_0, ANVIL_TYPE_Q8_0, "q8_0", anvil_block_q8_0, ANVIL_TYPE_Q8_0, ANVIL_CODEC_IMATRIX_UNUSED,
      anvil_ref_encode_q8_0, anvil_ref_decode_q8_0, anvil_ref_encode_rows_q8_0);
/* Q8_1 is what Q4_1/Q5_1 dots consume. As a weight it has no dot in ggml;
 * act_type names itself and no backend offers a kernel, so the host's
 * decode + f32 fallback serves it. */
CODEC(codec_q8_1, ANVIL_TYPE_Q8_1, "q8_1", anvil_block_q8_1, ANVIL_TYPE_Q8_1, ANVIL_CODEC_ACTIVATION,
      anvil_ref_encode_q8_1, anvil_ref_decode_q8_1, NULL);

static const anvil_codec *const codecs[] = {
    &codec_q4_0, &codec_q4_1, &codec_q5_0, &codec_q5_1, &codec_q8_0, &codec_q8_1,
};

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_CODEC,
    .id = "codec-q8_0",
    .version = "1.0.0",
    .license = "MIT",
    .description = "ggml's 32-element block formats: q4_0 q4_1 q5_0 q5_1 q8_0 q8_1",
    .n_codecs = sizeof codecs / sizeof codecs[0],
    .codecs = codecs,
};

ANVIL_PLUGIN_ENTRY(&desc)
