/* SPDX-License-Identifier: MIT */
/*
 * test_hf_qwen35: the pieces of Qwen3.5's conversion (host/src/hf/hf_qwen35.c)
 * that the byte comparisons reach only through a few values:
 *  - hf_torch_expf against torch.exp (PyTorch 1.13, the oracle's converter)
 *    bit for bit: values where glibc's correctly rounded expf differs by one
 *    ulp (so a plain expf fails here), the ends of its range (a subnormal,
 *    overflow to inf, the cut-offs at -104 and 100), 0, -0, 1, ln 2;
 *  - the generated TensorNameMap for qwen35 / qwen35moe: the gated
 *    delta-net tensors (A_log without a suffix), the output-gated
 *    attention, the MTP layer's names, the MoE and shared-expert tensors.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hf_internal.h"
#include "hf_table.h"

static int fails = 0, checks = 0;

/* { input bits, torch.exp's bits } */
static const uint32_t k_exp[][2] = {
    { 0xc0803442u, 0x3c95166eu }, { 0x403ac46cu, 0x419411bcu }, { 0x3f965b5cu, 0x404f2bdcu },
    { 0x401b5e50u, 0x41354fe8u }, { 0xbff83994u, 0x3e134320u }, { 0xc078d4b9u, 0x3ca7d38cu },
    { 0x40914ce0u, 0x42bb801eu }, { 0xc03b64e5u, 0x3d5b2516u }, { 0xc0934ca0u, 0x3c242dceu },
    { 0xc0666d5du, 0x3cdfbda6u }, { 0x00000000u, 0x3f800000u }, { 0x80000000u, 0x3f800000u },
    { 0x3f800000u, 0x402df854u }, { 0xc2cfcccdu, 0x00000001u }, { 0x42c7cccdu, 0x7f800000u },
    { 0xc2d10000u, 0x00000000u }, { 0x42c90000u, 0x7f800000u }, { 0x3f317218u, 0x40000000u },
    { 0xc2af0000u, 0x006cb2bcu }, { 0x42b16666u, 0x7f7a37fcu },
};

static void want_name(const char *arch, const char *hf, const char *gguf) {
    char out[128];
    const int rc = hf_table_map_tensor(arch, hf, 5, out, sizeof out);
    ++checks;
    if (gguf == NULL ? rc == 0 : (rc != 0 || strcmp(out, gguf) != 0)) {
        printf("FAIL: %s %s -> %s, want %s\n", arch, hf, rc == 0 ? out : "(none)", gguf ? gguf : "(none)");
        ++fails;
    }
}

int main(void) {
    for (size_t i = 0; i < sizeof k_exp / sizeof k_exp[0]; ++i) {
        float x, got;
        uint32_t bits;
        memcpy(&x, &k_exp[i][0], sizeof x);
        got = hf_torch_expf(x);
        memcpy(&bits, &got, sizeof bits);
        ++checks;
        if (bits != k_exp[i][1]) {
            printf("FAIL: exp(%a) = 0x%08x, torch.exp gives 0x%08x\n", (double)x, bits, k_exp[i][1]);
            ++fails;
        }
    }
    static const char *const archs[] = { "qwen35", "qwen35moe" };
    for (int k = 0; k < 2; ++k) {
        const char *a = archs[k];
        want_name(a, "model.layers.0.linear_attn.in_proj_qkv.weight", "blk.0.attn_qkv.weight");
        want_name(a, "model.layers.0.linear_attn.in_proj_z.weight", "blk.0.attn_gate.weight");
        want_name(a, "model.layers.0.linear_attn.in_proj_b.weight", "blk.0.ssm_beta.weight");
        want_name(a, "model.layers.0.linear_attn.in_proj_a.weight", "blk.0.ssm_alpha.weight");
        want_name(a, "model.layers.0.linear_attn.conv1d.weight", "blk.0.ssm_conv1d.weight");
        want_name(a, "model.layers.0.linear_attn.A_log", "blk.0.ssm_a");
        want_name(a, "model.layers.0.linear_attn.dt_proj.bias", "blk.0.ssm_dt.bias");
        want_name(a, "model.layers.0.linear_attn.norm.weight", "blk.0.ssm_norm.weight");
        want_name(a, "model.layers.0.linear_attn.out_proj.weight", "blk.0.ssm_out.weight");
        want_name(a, "model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight");
        want_name(a, "model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight");
        want_name(a, "model.layers.3.post_attention_layernorm.weight", "blk.3.post_attention_norm.weight");
        want_name(a, "model.layers.4.eh_proj.weight", "blk.4.nextn.eh_proj.weight");
        want_name(a, "model.layers.4.enorm.weight", "blk.4.nextn.enorm.weight");
        want_name(a, "model.layers.4.hnorm.weight", "blk.4.nextn.hnorm.weight");
        want_name(a, "model.layers.4.shared_head.norm.weight", "blk.4.nextn.shared_head_norm.weight");
        want_name(a, "model.layers.0.linear_attn.dt_bias", NULL); /* renamed to dt_proj.bias first */
    }
    want_name("qwen35", "model.layers.0.mlp.gate_proj.weight", "blk.0.ffn_gate.weight");
    want_name("qwen35", "model.layers.0.mlp.shared_expert_gate.weight", NULL);
    want_name("qwen35moe", "model.layers.0.mlp.gate.weight", "blk.0.ffn_gate_inp.weight");
    want_name("qwen35moe", "model.layers.0.mlp.shared_expert_gate.weight", "blk.0.ffn_gate_inp_shexp.weight");
    want_name("qwen35moe", "model.layers.0.mlp.shared_expert.down_proj.weight", "blk.0.ffn_down_shexp.weight");
    want_name("qwen35moe", "model.layers.0.mlp.experts.up_proj.weight", "blk.0.ffn_up_exps.weight");
    printf("checks: %d, failures: %d\n", checks, fails);
    return fails != 0;
}
