/* SPDX-License-Identifier: MIT */
/*
 * codec-kquants: ggml's 256-element super-block formats.
 *
 * Q2_K .. Q6_K are weight formats whose dot products consume Q8_K
 * activations; Q8_K is that activation format (f32 scale, 256 int8 codes,
 * sixteen 16-element partial sums), flagged as such. Every encoder is
 * byte-identical to ggml's quantize_row_*_ref, every row encoder to
 * ggml_quantize_chunk with or without an importance matrix (which all five
 * weight formats use), every decoder bit-identical to dequantize_row_*.
 * Q8_K is not a ggml_quantize_chunk format: no row encoder. Kernels belong
 * to backends: ref_vec_dot stays NULL.
 *
 * Why one plugin: the five weight formats share the 256-element super-block,
 * 6-bit sub-block scales, the same least-squares scale search and the Q8_K
 * activation format, which is defined here with them.
 */
#include "anvil/abi.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "ref/kquants.h"
#include "ref/cpu_probe.h"
#include "ref/q8_k.h"

#define KQ_CODEC(ident, type, nm, blk, flg, enc, dec, rows) \
    static const anvil_codec ident = {                      \
        .struct_size = sizeof(anvil_codec),                 \
        .type_id = (type),                                  \
        .name = (nm),                                       \
        .family = "k-quants",                               \
        .block_elems = ANVIL_QK_K,                          \
        .block_bytes = sizeof(blk),                         \
        .act_type = ANVIL_TYPE_Q8_K,                        \
        .flags = (flg),                                     \
        .encode = (enc),                                    \
        .decode = (dec),                                    \
        .encode_rows = (rows),                              \
    }

KQ_CODEC(codec_q2_K, ANVIL_TYPE_Q2_K, "q2_K", anvil_block_q2_K, 0, anvil_ref_encode_q2_K, anvil_ref_decode_q2_K,
         anvil_ref_encode_rows_q2_K);
KQ_CODEC(codec_q3_K, ANVIL_TYPE_Q3_K, "q3_K", anvil_block_q3_K, 0, anvil_ref_encode_q3_K, anvil_ref_decode_q3_K,
         anvil_ref_encode_rows_q3_K);
KQ_CODEC(codec_q4_K, ANVIL_TYPE_Q4_K, "q4_K", anvil_block_q4_K, 0, anvil_ref_encode_q4_K, anvil_ref_decode_q4_K,
         anvil_ref_encode_rows_q4_K);
KQ_CODEC(codec_q5_K, ANVIL_TYPE_Q5_K, "q5_K", anvil_block_q5_K, 0, anvil_ref_encode_q5_K, anvil_ref_decode_q5_K,
         anvil_ref_encode_rows_q5_K);
KQ_CODEC(codec_q6_K, ANVIL_TYPE_Q6_K, "q6_K", anvil_block_q6_K, 0, anvil_ref_encode_q6_K, anvil_ref_decode_q6_K,
         anvil_ref_encode_rows_q6_K);
KQ_CODEC(codec_q8_K, ANVIL_TYPE_Q8_K, "q8_K", anvil_block_q8_K, ANVIL_CODEC_ACTIVATION, anvil_ref_encode_q8_K,
         anvil_ref_decode_q8_K, NULL);

static const anvil_codec *const codecs[] = {
    &codec_q2_K, &codec_q3_K, &codec_q4_K, &codec_q5_K, &codec_q6_K, &codec_q8_K,
};

/* The encoders' searches use AVX2 only where the host's CPU features
 * (ANVIL_CPU_MASK applied) have it. */
static int kquants_init(const anvil_host_services *host, char *err, size_t err_size) {
    (void)err;
    (void)err_size;
    anvil_ref_cpu_from_host(host);
    return ANVIL_OK;
}

static const anvil_plugin_desc desc = {
    .struct_size = sizeof(anvil_plugin_desc),
    .abi_major = ANVIL_ABI_MAJOR,
    .abi_minor = ANVIL_ABI_MINOR,
    .kind = ANVIL_PLUGIN_CODEC,
    .id = "codec-kquants",
    .version = "1.0.0",
    .license = "MIT",
    .description = "k-quants: Q2_K Q3_K Q4_K Q5_K Q6_K and the Q8_K activation format",
    .n_codecs = sizeof codecs / sizeof codecs[0],
    .codecs = codecs,
    .init = kquants_init,
};

ANVIL_PLUGIN_ENTRY(&desc)
