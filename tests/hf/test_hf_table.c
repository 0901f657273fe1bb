/* SPDX-License-Identifier: MIT */
/*
 * test_hf_table: the generated registry of convert_hf_to_gguf.py
 * (host/src/hf/hf_arch_table.h) gives the facts anvil convert's own
 * tables hold for the classes it converts: each class's gguf architecture,
 * and TensorNameMap's GGUF name for each checkpoint tensor the MoE and
 * dense classes ship (the names of the committed pairs), and none for a
 * tensor the architecture lacks.
 */
#include <stdio.h>
#include <string.h>

#include "hf_table.h"

static int fails = 0, checks = 0;

static void want_class(const char *cls, const char *arch) {
    const hf_table_class *c = hf_table_class_find(cls);
    ++checks;
    if (c == NULL || strcmp(c->gguf_arch, arch) != 0) {
        printf("FAIL: %s -> %s, want %s\n", cls, c ? c->gguf_arch : "(none)", arch);
        ++fails;
    }
}

static void want_name(const char *arch, const char *hf, const char *gguf) {
    char out[128];
    const int rc = hf_table_map_tensor(arch, hf, 4, out, sizeof out);
    ++checks;
    if (gguf == NULL ? rc == 0 : (rc != 0 || strcmp(out, gguf) != 0)) {
        printf("FAIL: %s %s -> %s, want %s\n", arch, hf, rc == 0 ? out : "(none)", gguf ? gguf : "(none)");
        ++fails;
    }
}

int main(void) {
    size_t registered = 0;
    const size_t named = hf_table_class_count(&registered);
    printf("registry: %zu of %zu TEXT_MODEL_MAP classes name a gguf architecture\n", named, registered);
    ++checks;
    if (registered < 250 || named + 5 < registered) {
        printf("FAIL: the table covers %zu of %zu classes\n", named, registered);
        ++fails;
    }
    want_class("LlamaForCausalLM", "llama");
    want_class("MistralForCausalLM", "llama");
    want_class("MixtralForCausalLM", "llama");
    want_class("Qwen2ForCausalLM", "qwen2");
    want_class("Qwen3ForCausalLM", "qwen3");
    want_class("Qwen2MoeForCausalLM", "qwen2moe");
    want_class("Qwen3MoeForCausalLM", "qwen3moe");
    want_class("Gemma3ForCausalLM", "gemma3");
    want_class("GptOssForCausalLM", "gpt-oss");
    want_class("DeepseekV3ForCausalLM", "deepseek2");
    ++checks;
    if (hf_table_class_find("GPT9000ForCausalLM") != NULL) {
        printf("FAIL: an unknown class found\n");
        ++fails;
    }
    want_name("qwen3moe", "model.embed_tokens.weight", "token_embd.weight");
    want_name("qwen3moe", "lm_head.weight", "output.weight");
    want_name("qwen3moe", "model.norm.weight", "output_norm.weight");
    want_name("qwen3moe", "model.layers.2.self_attn.q_norm.weight", "blk.2.attn_q_norm.weight");
    want_name("qwen3moe", "model.layers.0.mlp.gate.weight", "blk.0.ffn_gate_inp.weight");
    want_name("qwen3moe", "model.layers.1.mlp.experts.gate_proj.weight", "blk.1.ffn_gate_exps.weight");
    want_name("qwen3moe", "model.layers.1.mlp.experts.up_proj.weight", "blk.1.ffn_up_exps.weight");
    want_name("qwen3moe", "model.layers.1.mlp.experts.down_proj.weight", "blk.1.ffn_down_exps.weight");
    want_name("qwen3moe", "model.layers.0.mlp.shared_expert_gate.weight", NULL);
    want_name("qwen3moe", "model.layers.9.self_attn.q_proj.weight", NULL); /* past n_blocks */
    want_name("qwen2moe", "model.layers.3.self_attn.k_proj.bias", "blk.3.attn_k.bias");
    want_name("qwen2moe", "model.layers.3.mlp.shared_expert_gate.weight", "blk.3.ffn_gate_inp_shexp.weight");
    want_name("qwen2moe", "model.layers.3.mlp.shared_expert.down_proj.weight", "blk.3.ffn_down_shexp.weight");
    want_name("llama", "model.layers.0.block_sparse_moe.gate.weight", "blk.0.ffn_gate_inp.weight");
    want_name("llama", "layers.0.feed_forward.experts.w1.weight", "blk.0.ffn_gate_exps.weight");
    want_name("llama", "layers.0.feed_forward.experts.w2.weight", "blk.0.ffn_down_exps.weight");
    want_name("llama", "layers.0.feed_forward.experts.w3.weight", "blk.0.ffn_up_exps.weight");
    want_name("llama", "model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight");
    want_name("qwen3", "model.layers.0.mlp.gate_proj.weight", "blk.0.ffn_gate.weight");
    want_name("no-such-arch", "lm_head.weight", NULL);
    printf("checks: %d, failures: %d\n", checks, fails);
    return fails != 0;
}
