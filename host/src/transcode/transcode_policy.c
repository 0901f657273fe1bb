/* SPDX-License-Identifier: MIT */
/*
 * Transcode policy: which tensors may change type, which type each one gets,
 * and which targets are allowed at all. The rules are in transcode.h; this
 * file is their one implementation.
 */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "transcode_internal.h"

uint32_t tc_effective_dims(const anvil_gguf_tensor *t) {
    uint32_t n = 1;
    for (uint32_t i = 0; i < ANVIL_GGUF_MAX_DIMS; ++i) {
        if (t->ne[i] != 1) n = i + 1;
    }
    return n;
}

static int ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int tc_is_matrix_weight(const anvil_gguf_tensor *t) {
    /* A name holding a NUL byte is compared as far as the NUL: such a name
     * can only end in ".weight" if its visible part does. */
    return tc_effective_dims(t) >= 2 && ends_with(t->name, ".weight") && strstr(t->name, "norm") == NULL;
}

int tc_is_float_type(uint32_t type) {
    return type == ANVIL_TYPE_F32 || type == ANVIL_TYPE_F16 || type == ANVIL_TYPE_BF16;
}

static int is_integer_or_f64(uint32_t type) {
    return type == ANVIL_TYPE_I8 || type == ANVIL_TYPE_I16 || type == ANVIL_TYPE_I32 || type == ANVIL_TYPE_I64 ||
           type == ANVIL_TYPE_F64;
}

int tc_check_target(anvil_ctx *ctx, uint32_t type, const char *option, anvil_error *err) {
    if (tc_is_float_type(type)) return ANVIL_OK;
    anvil_type_info info;
    anvil_error e;
    if (anvil_type_lookup(ctx, type, &info, &e) != ANVIL_OK) {
        return anvil__error_set(err, e.code, "%s: %s", option, e.message);
    }
    if (is_integer_or_f64(type)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "%s: %s is not a weight format; give a float type (f32, f16, bf16) "
                                "or a block format (q8_0, q4_K, ...)",
                                option, info.name);
    }
    const anvil_codec *c = anvil_ctx_codec(ctx, type);
    if (c == NULL) {
        return anvil__error_set(err, ANVIL_E_UNKNOWN_TYPE,
                                "%s: %s comes with the %s plugin, which is not loaded (add it to "
                                "[plugins] load in %s)",
                                option, info.name, info.family_plugin ? info.family_plugin : "?",
                                anvil_ctx_config_path(ctx));
    }
    if (c->flags & ANVIL_CODEC_ACTIVATION) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "%s: %s is an activation format (what ggml quantizes activations "
                                "into for its dot products); ggml has no kernels that read it as "
                                "weights, so a model stored in it would not run",
                                option, c->name);
    }
    if (c->encode == NULL && c->encode_rows == NULL) {
        return anvil__error_set(err, ANVIL_E_ENCODER_UNAVAILABLE,
                                "%s: %s cannot be written: %s. Pick a format with an encoder "
                                "(`anvil codec list` shows them)",
                                option, c->name, c->encode_note ? c->encode_note : "decode-only");
    }
    return ANVIL_OK;
}

/* The option that gives this matrix weight a type, if any (NO_TYPE). */
static int choose(anvil_transcode *t, const anvil_gguf_tensor *src, const char **rule, int *is_experts,
                  uint32_t *type, anvil_error *err) {
    *is_experts = 0;
    size_t k = 0;
    const int m = tc_match_rule(t, src->name, &k, err);
    if (m < 0) return ANVIL_E_INVALID_ARG;
    if (m == 1) {
        *rule = t->rules[k].label;
        *type = t->rules[k].type;
        return ANVIL_OK;
    }
    const anvil_transcode_options *o = &t->opts;
    *rule = NULL;
    *type = ANVIL_TRANSCODE_NO_TYPE;
    if (o->output_type != ANVIL_TRANSCODE_NO_TYPE && strcmp(src->name, "output.weight") == 0) {
        *rule = "--output-tensor-type";
        *type = o->output_type;
    } else if (o->token_embd_type != ANVIL_TRANSCODE_NO_TYPE && strcmp(src->name, "token_embd.weight") == 0) {
        *rule = "--token-embedding-type";
        *type = o->token_embd_type;
    } else if (o->experts_dtype != ANVIL_TRANSCODE_NO_TYPE && ends_with(src->name, "_exps.weight")) {
        *rule = "--experts-dtype";
        *is_experts = 1;
        *type = o->experts_dtype;
    } else if (o->dtype != ANVIL_TRANSCODE_NO_TYPE) {
        *rule = "--dtype";
        *type = o->dtype;
    }
    return ANVIL_OK;
}

/* A quantized type whose codec is loaded can be decoded to f32. */
static int decodable(anvil_ctx *ctx, uint32_t type) {
    return tc_is_float_type(type) || anvil_ctx_codec(ctx, type) != NULL;
}

int tc_decide(anvil_transcode *t, anvil_ctx *ctx, const anvil_gguf_tensor *src, anvil_transcode_tensor *item,
              anvil_error *err) {
    item->src = src;
    item->name = src->name;
    item->src_type = src->type;
    item->dst_type = src->type;
    item->want_type = ANVIL_TRANSCODE_NO_TYPE;
    item->fallback_from = ANVIL_TRANSCODE_NO_TYPE;
    item->rule = NULL;
    item->row_len = src->ne[0];
    item->n_rows = src->ne[0] > 0 ? src->n_elements / src->ne[0] : 0;
    item->src_bytes = src->n_bytes;
    if (!tc_is_matrix_weight(src)) {
        item->why = ANVIL_TRANSCODE_KEEP_POLICY;
        return ANVIL_OK;
    }
    int is_experts = 0;
    uint32_t want = ANVIL_TRANSCODE_NO_TYPE;
    const int rc = choose(t, src, &item->rule, &is_experts, &want, err);
    if (rc != ANVIL_OK) return rc;
    item->want_type = want;
    if (want == ANVIL_TRANSCODE_NO_TYPE) {
        item->why = ANVIL_TRANSCODE_KEEP_NO_RULE;
        return ANVIL_OK;
    }
    if (want == src->type) {
        item->why = ANVIL_TRANSCODE_KEEP_SAME;
        return ANVIL_OK;
    }
    if (!tc_is_float_type(src->type)) {
        if (is_integer_or_f64(src->type) || !decodable(ctx, src->type)) {
            item->why = ANVIL_TRANSCODE_KEEP_SOURCE;
            return ANVIL_OK;
        }
        /* Dequantizing to f16/f32 adds no quantization step; anything else
         * requantizes (refused by the plan unless allowed). */
        const int dequantize = want == ANVIL_TYPE_F16 || want == ANVIL_TYPE_F32;
        if (!dequantize && !is_experts && !t->opts.allow_requantize) {
            item->why = ANVIL_TRANSCODE_KEEP_QUANTIZED;
            return ANVIL_OK;
        }
    }
    anvil_type_info info;
    if (anvil_type_lookup(ctx, want, &info, NULL) != ANVIL_OK || info.block_elems == 0 ||
        src->ne[0] % info.block_elems != 0) {
        item->why = ANVIL_TRANSCODE_KEEP_ROWS;
        return ANVIL_OK;
    }
    item->why = ANVIL_TRANSCODE_CONVERT;
    item->dst_type = want;
    return ANVIL_OK;
}

ANVIL_API const char *anvil_transcode_why_string(anvil_transcode_why why) {
    switch (why) {
    case ANVIL_TRANSCODE_CONVERT: return "converted";
    case ANVIL_TRANSCODE_KEEP_POLICY: return "not a matrix weight";
    case ANVIL_TRANSCODE_KEEP_NO_RULE: return "no option gives it a type";
    case ANVIL_TRANSCODE_KEEP_SAME: return "already the target type";
    case ANVIL_TRANSCODE_KEEP_QUANTIZED: return "already quantized: requantizing needs --allow-requantize";
    case ANVIL_TRANSCODE_KEEP_ROWS: return "row length not a multiple of the target's block";
    case ANVIL_TRANSCODE_KEEP_SOURCE: return "its type cannot be decoded to f32";
    }
    return "?";
}

/* llama.cpp's loader guess (type with the most weights -> LLAMA_FTYPE),
 * with the numbering checked against the oracle's llama_ftype_name. */
ANVIL_API int anvil_transcode_file_type(uint32_t type) {
    switch (type) {
    case ANVIL_TYPE_F32: return 0;
    case ANVIL_TYPE_F16: return 1;
    case ANVIL_TYPE_Q4_0: return 2;
    case ANVIL_TYPE_Q4_1: return 3;
    case ANVIL_TYPE_Q8_0: return 7;
    case ANVIL_TYPE_Q5_0: return 8;
    case ANVIL_TYPE_Q5_1: return 9;
    case ANVIL_TYPE_Q2_K: return 10;
    case ANVIL_TYPE_Q3_K: return 12; /* Q3_K_M */
    case ANVIL_TYPE_Q4_K: return 15; /* Q4_K_M */
    case ANVIL_TYPE_Q5_K: return 17; /* Q5_K_M */
    case ANVIL_TYPE_Q6_K: return 18;
    case ANVIL_TYPE_IQ2_XXS: return 19;
    case ANVIL_TYPE_IQ2_XS: return 20;
    case ANVIL_TYPE_IQ3_XXS: return 23;
    case ANVIL_TYPE_IQ1_S: return 24;
    case ANVIL_TYPE_IQ4_NL: return 25;
    case ANVIL_TYPE_IQ3_S: return 26;
    case ANVIL_TYPE_IQ2_S: return 28;
    case ANVIL_TYPE_IQ4_XS: return 30;
    case ANVIL_TYPE_IQ1_M: return 31;
    case ANVIL_TYPE_BF16: return 32;
    case ANVIL_TYPE_TQ1_0: return 36;
    case ANVIL_TYPE_TQ2_0: return 37;
    case ANVIL_TYPE_MXFP4: return 38; /* MXFP4_MOE: llama.cpp's only MXFP4 file type */
    case ANVIL_TYPE_NVFP4: return 39;
    case ANVIL_TYPE_Q1_0: return 40;
    case ANVIL_TYPE_Q2_0: return 41;
    default: return -1;
    }
}
