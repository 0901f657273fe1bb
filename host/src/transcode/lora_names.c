/* SPDX-License-Identifier: MIT */
/*
 * HF module paths -> GGUF tensor names, for PEFT adapters. Two families:
 * llama ("model.layers.N.self_attn.q_proj") and gpt2
 * ("transformer.h.N.attn.c_attn"), with llama.cpp's GGUF names on the right.
 * A path neither map knows comes back unchanged, so that a base model with
 * that exact name still matches (and an adapter that fits no base fails
 * with the name it was looked up under).
 */
#include <stdio.h>
#include <string.h>

#include "anvil/transcode.h"

typedef struct name_map {
    const char *hf;
    const char *gguf;
} name_map;

/* Inside a layer ("blk.N." + ...). */
static const name_map layer_map[] = {
    /* llama family */
    { "self_attn.q_proj", "attn_q" },
    { "self_attn.k_proj", "attn_k" },
    { "self_attn.v_proj", "attn_v" },
    { "self_attn.o_proj", "attn_output" },
    { "mlp.gate_proj", "ffn_gate" },
    { "mlp.up_proj", "ffn_up" },
    { "mlp.down_proj", "ffn_down" },
    { "input_layernorm", "attn_norm" },
    { "post_attention_layernorm", "ffn_norm" },
    /* gpt2 family */
    { "attn.c_attn", "attn_qkv" },
    { "attn.c_proj", "attn_output" },
    { "mlp.c_fc", "ffn_up" },
    { "mlp.c_proj", "ffn_down" },
    { "ln_1", "attn_norm" },
    { "ln_2", "ffn_norm" },
};

/* Outside the layers. */
static const name_map top_map[] = {
    { "embed_tokens", "token_embd" },                                                     /* llama */
    { "norm", "output_norm" },        { "lm_head", "output" },   { "wte", "token_embd" }, /* gpt2 */
    { "wpe", "position_embd" },       { "ln_f", "output_norm" },
};

static const char *lookup(const name_map *m, size_t n, const char *hf) {
    for (size_t i = 0; i < n; ++i) {
        if (strcmp(m[i].hf, hf) == 0) return m[i].gguf;
    }
    return NULL;
}

static int put(char *buf, size_t size, const char *a, const char *b, const char *c) {
    const int n = snprintf(buf, size, "%s%s%s", a, b, c);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

ANVIL_API int anvil_lora_map_name(const char *hf_path, char *buf, size_t size) {
    if (hf_path == NULL || buf == NULL || size == 0) return -1;
    const char *p = hf_path;
    /* The base-model prefix HF puts in front of the layers. */
    if (strncmp(p, "model.", 6) == 0) {
        p += 6;
    } else if (strncmp(p, "transformer.", 12) == 0) {
        p += 12;
    }
    const char *rest = NULL;
    if (strncmp(p, "layers.", 7) == 0) {
        rest = p + 7;
    } else if (strncmp(p, "h.", 2) == 0) {
        rest = p + 2;
    }
    if (rest != NULL && rest[0] >= '0' && rest[0] <= '9') {
        const char *q = rest;
        while (*q >= '0' && *q <= '9') ++q;
        if (*q == '.' && q - rest <= 9) {
            char blk[32];
            snprintf(blk, sizeof blk, "blk.%.*s.", (int)(q - rest), rest);
            const char *mapped = lookup(layer_map, sizeof layer_map / sizeof layer_map[0], q + 1);
            return put(buf, size, blk, mapped ? mapped : q + 1, "");
        }
    }
    const char *mapped = lookup(top_map, sizeof top_map / sizeof top_map[0], p);
    if (mapped != NULL) return put(buf, size, mapped, "", "");
    return put(buf, size, hf_path, "", "");
}
