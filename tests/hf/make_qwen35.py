"""Write a small Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM Hugging Face checkpoint (config.json with the
fields of Qwen3.5's text config as the checkpoints carry them, safetensors shards + index, tokenizer files) for
the anvil convert tests of hf_qwen35.c.

Layers follow layer_types (or full_attention_interval): a linear-attention layer holds
linear_attn.{in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,out_proj}.weight, linear_attn.conv1d.weight
[conv_dim, 1, kernel], linear_attn.{A_log,dt_bias} and linear_attn.norm.weight; a full-attention layer
self_attn.q_proj (output-gated: 2 x heads x head_dim rows), k_proj, v_proj, o_proj, q_norm, k_norm. Every
layer has input_layernorm, post_attention_layernorm and a dense mlp.{gate,up,down}_proj, or with --moe
mlp.gate (router), the experts (per-expert mlp.experts.E.{gate,up,down}_proj.weight, or with --fused the
transformers 5 layout mlp.experts.gate_up_proj / down_proj), mlp.shared_expert.* and mlp.shared_expert_gate.
--vlm writes the published layout instead: Qwen3_5(Moe)ForConditionalGeneration with the text config under
text_config (--set/--unset change it), a vision_config, model.language_model.* names and a few
model.visual.* tensors. --mtp N adds the multi-token-prediction block as Qwen3.5 ships it: mtp.fc, mtp.pre_fc_norm_embedding,
mtp.pre_fc_norm_hidden, mtp.norm and mtp.layers.0..N-1 (full-attention layers), mtp_num_hidden_layers N
(--mtp-key 0 leaves the key out). Norms are stored centred on zero (Qwen3.5's RMSNorm is 1 + weight), except
linear_attn.norm (around 1). A_log is F32 (--a-log-dtype same: in the checkpoint's dtype).

--next writes Qwen3NextForCausalLM instead (the Qwen3-Next hybrid, as Qwen/Qwen3-Next-80B-A3B ships it):
config.json with Qwen3NextConfig's fields (rope_theta and partial_rotary_factor at the top level,
rope_scaling null, decoder_sparse_step, mlp_only_layers, no layer_types unless --layer-types, no
mtp_num_hidden_layers), every layer MoE (per-expert weights, shared expert and its gate) unless listed
in --dense-layers (mlp_only_layers), the linear attention's fused linear_attn.in_proj_qkvz ([q, k, v, z]
per key-head group) and in_proj_ba in place of in_proj_qkv / in_proj_z / in_proj_b / in_proj_a, and
Qwen3's tokenizer with its own pre-tokenizer (qwen2).

The tokenizer: Qwen3's byte-level BPE (--tok, a Qwen tokenizer.json) cut to its first --vocab ids, its added
tokens renumbered after them, and the pre-tokenizer regex replaced by Qwen3.5's (\\p{M} joined to letters);
NFC normalizer as Qwen ships it. rope_parameters as Qwen3.5's (interleaved MRoPE, partial_rotary_factor 0.25)
with --mrope as mrope_section: llama.cpp needs 2 x its sum <= head_dim x partial_rotary_factor (Qwen3.5:
[11, 11, 10] of 256 x 0.25).

Weights are seeded random normals (std 0.02). No torch or transformers needed.
usage: make_qwen35.py OUTDIR --tok DIR [--vocab 384] [--hidden 64] [--layers 4] [--heads 4] [--kv-heads 2]
       [--head-dim 32] [--lk-heads 2] [--lv-heads 4] [--lk-dim 16] [--lv-dim 16] [--kernel 4] [--inter 96]
       [--moe] [--fused] [--experts 4] [--used 2] [--moe-inter 32] [--shared-inter 48] [--mtp 1] [--mtp-key 1]
       [--dtype bf16|f16|f32] [--mrope 2,1,1] [--a-log-dtype f32|same] [--tied] [--vlm] [--shards N] [--seed S]
       [--drop NAME]... [--dup NAME] [--unset KEY]... [--set K=JSON]... [--next [--layer-types]
       [--dense-layers 1,2]]
"""
import argparse, json, os
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--tok", required=True)
for k, v in [("vocab", 384), ("hidden", 64), ("layers", 4), ("heads", 4), ("kv-heads", 2), ("head-dim", 32),
             ("lk-heads", 2), ("lv-heads", 4), ("lk-dim", 16), ("lv-dim", 16), ("kernel", 4), ("inter", 96),
             ("experts", 4), ("used", 2), ("moe-inter", 32), ("shared-inter", 48), ("mtp", 1), ("mtp-key", 1),
             ("shards", 1), ("seed", 1), ("interval", 4)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--mrope", default="2,1,1")
ap.add_argument("--a-log-dtype", default="f32")
ap.add_argument("--moe", action="store_true")
ap.add_argument("--fused", action="store_true")
ap.add_argument("--tied", action="store_true")
ap.add_argument("--vlm", action="store_true")
ap.add_argument("--next", action="store_true")
ap.add_argument("--layer-types", action="store_true")
ap.add_argument("--dense-layers", default="")
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--dup")
ap.add_argument("--unset", action="append", default=[])
ap.add_argument("--set", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)

# ---- tokenizer files
QWEN35_RE = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
             "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
tj = json.load(open(os.path.join(a.tok, "tokenizer.json"), encoding="utf-8"))
n = a.vocab
vocab = {k: v for k, v in tj["model"]["vocab"].items() if v < n}
merges = []
for m in tj["model"]["merges"]:
    x, y = m.split(" ", 1) if isinstance(m, str) else m
    if x in vocab and y in vocab and (x + y) in vocab:
        merges.append(m)
tj["model"]["vocab"] = vocab
tj["model"]["merges"] = merges
if not a.next:
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN35_RE
added = tj["added_tokens"]
for i, t in enumerate(added):
    t["id"] = n + i
json.dump(tj, open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False,
          separators=(",", ":"))
ids = {t["content"]: t["id"] for t in added}
tc = {"add_bos_token": False, "add_prefix_space": False,
      "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in added},
      "bos_token": None, "chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
      "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
      "model_max_length": 262144, "pad_token": "<|endoftext|>", "split_special_tokens": False,
      "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}
json.dump(tc, open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8"), ensure_ascii=False, indent=2)
V = n + len(added)

# ---- config.json: Qwen3.5's text config, flat, as Qwen3_5ForCausalLM saves it
dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
H, NH, KV, HD = a.hidden, a.heads, a.kv_heads, a.head_dim
LK, LV, DK, DV = a.lk_heads, a.lv_heads, a.lk_dim, a.lv_dim
types = ["full_attention" if (i + 1) % a.interval == 0 else "linear_attention" for i in range(a.layers)]
cfg = {"architectures": ["Qwen3_5MoeForCausalLM" if a.moe else "Qwen3_5ForCausalLM"], "attention_bias": False,
       "attention_dropout": 0.0, "attn_output_gate": True, "bos_token_id": None, "dtype": dt,
       "eos_token_id": ids["<|im_end|>"], "full_attention_interval": a.interval, "head_dim": HD,
       "hidden_act": "silu", "hidden_size": H, "initializer_range": 0.02, "intermediate_size": a.inter,
       "layer_types": types, "linear_conv_kernel_dim": a.kernel, "linear_key_head_dim": DK,
       "linear_num_key_heads": LK, "linear_num_value_heads": LV, "linear_value_head_dim": DV,
       "mamba_ssm_dtype": "float32", "max_position_embeddings": 262144,
       "model_type": "qwen3_5_moe_text" if a.moe else "qwen3_5_text", "mtp_num_hidden_layers": a.mtp,
       "mtp_use_dedicated_embeddings": False, "num_attention_heads": NH, "num_hidden_layers": a.layers,
       "num_key_value_heads": KV, "pad_token_id": None, "rms_norm_eps": 1e-06,
       "rope_parameters": {"mrope_interleaved": True, "mrope_section": [int(x) for x in a.mrope.split(",")], "partial_rotary_factor": 0.25,
                           "rope_theta": 10000000, "rope_type": "default"},
       "tie_word_embeddings": a.tied, "transformers_version": "4.57.0.dev0", "use_cache": True, "vocab_size": V}
if a.moe:
    del cfg["intermediate_size"]
    cfg.update({"moe_intermediate_size": a.moe_inter, "num_experts": a.experts, "num_experts_per_tok": a.used,
                "output_router_logits": False, "router_aux_loss_coef": 0.001,
                "shared_expert_intermediate_size": a.shared_inter})
if not a.mtp_key:
    del cfg["mtp_num_hidden_layers"]
dense_layers = {int(x) for x in a.dense_layers.split(",") if x}
if a.next:  # Qwen3NextConfig as save_pretrained writes it
    cfg = {"architectures": ["Qwen3NextForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": None, "decoder_sparse_step": 1, "dtype": dt, "eos_token_id": ids["<|im_end|>"],
           "full_attention_interval": a.interval, "head_dim": HD, "hidden_act": "silu", "hidden_size": H,
           "initializer_range": 0.02, "intermediate_size": a.inter, "linear_conv_kernel_dim": a.kernel,
           "linear_key_head_dim": DK, "linear_num_key_heads": LK, "linear_num_value_heads": LV,
           "linear_value_head_dim": DV, "max_position_embeddings": 262144, "mlp_only_layers": sorted(dense_layers),
           "model_type": "qwen3_next", "moe_intermediate_size": a.moe_inter, "norm_topk_prob": True,
           "num_attention_heads": NH, "num_experts": a.experts, "num_experts_per_tok": a.used,
           "num_hidden_layers": a.layers, "num_key_value_heads": KV, "output_router_logits": False,
           "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000000,
           "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": a.shared_inter,
           "tie_word_embeddings": a.tied, "transformers_version": "4.57.0.dev0", "use_cache": True,
           "use_sliding_window": False, "vocab_size": V}
    if a.layer_types:
        cfg["layer_types"] = types
    a.moe = True
for k in a.unset:
    cfg.pop(k, None)
for kv in a.set:
    k, v = kv.split("=", 1)
    cfg[k] = json.loads(v)
if a.vlm:   # the published layout: Qwen3_5(Moe)ForConditionalGeneration with the text config nested
    arch = cfg.pop("architectures")[0].replace("ForCausalLM", "ForConditionalGeneration")
    cfg = {"architectures": [arch], "image_token_id": V - 3, "model_type": cfg["model_type"][:-5],
           "text_config": cfg, "tie_word_embeddings": a.tied, "transformers_version": "4.57.0.dev0",
           "video_token_id": V - 2, "vision_config": {"deepstack_visual_indexes": [], "depth": 1, "hidden_act":
           "gelu_pytorch_tanh", "hidden_size": 16, "in_channels": 3, "intermediate_size": 32,
           "model_type": "qwen3_5", "num_heads": 2, "out_hidden_size": H, "patch_size": 16,
           "spatial_merge_size": 2, "temporal_patch_size": 2}, "vision_end_token_id": V - 4,
           "vision_start_token_id": V - 5}
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2, sort_keys=True)

# ---- weights, HF names and layout ([out, in])
rng = np.random.default_rng(a.seed)
def rnd(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
def cnorm(n): return (0.1 * rng.standard_normal(n)).astype(np.float32)      # 1 + weight
def unorm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
W, f32_names = {"model.embed_tokens.weight": rnd(V, H)}, set()
def mlp(p):
    if not a.moe or (a.next and p.startswith("model.layers.") and int(p.split(".")[2]) in dense_layers):
        W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = rnd(a.inter, H), rnd(a.inter, H)
        W[p + "mlp.down_proj.weight"] = rnd(H, a.inter)
        return
    E, F, S = a.experts, a.moe_inter, a.shared_inter
    W[p + "mlp.gate.weight"] = rnd(E, H)
    if a.fused:
        W[p + "mlp.experts.gate_up_proj"] = rnd(E, 2 * F, H)
        W[p + "mlp.experts.down_proj"] = rnd(E, H, F)
    else:
        for e in range(E):
            q = p + f"mlp.experts.{e}."
            W[q + "gate_proj.weight"], W[q + "up_proj.weight"] = rnd(F, H), rnd(F, H)
            W[q + "down_proj.weight"] = rnd(H, F)
    W[p + "mlp.shared_expert.gate_proj.weight"] = rnd(S, H)
    W[p + "mlp.shared_expert.up_proj.weight"] = rnd(S, H)
    W[p + "mlp.shared_expert.down_proj.weight"] = rnd(H, S)
    W[p + "mlp.shared_expert_gate.weight"] = rnd(1, H)
def full_attn(p):
    W[p + "self_attn.q_proj.weight"] = rnd(2 * NH * HD, H)
    W[p + "self_attn.k_proj.weight"], W[p + "self_attn.v_proj.weight"] = rnd(KV * HD, H), rnd(KV * HD, H)
    W[p + "self_attn.o_proj.weight"] = rnd(H, NH * HD)
    W[p + "self_attn.q_norm.weight"], W[p + "self_attn.k_norm.weight"] = cnorm(HD), cnorm(HD)
def layer(p, linear):
    W[p + "input_layernorm.weight"], W[p + "post_attention_layernorm.weight"] = cnorm(H), cnorm(H)
    if linear:
        q = p + "linear_attn."
        conv_dim = 2 * LK * DK + LV * DV
        if a.next:  # [q, k, v, z] and [b, a] per key-head group, fused
            W[q + "in_proj_qkvz.weight"] = rnd(LK * (2 * DK + 2 * (LV // LK) * DV), H)
            W[q + "in_proj_ba.weight"] = rnd(2 * LV, H)
        else:
            W[q + "in_proj_qkv.weight"] = rnd(conv_dim, H)
            W[q + "in_proj_z.weight"] = rnd(LV * DV, H)
            W[q + "in_proj_b.weight"], W[q + "in_proj_a.weight"] = rnd(LV, H), rnd(LV, H)
        W[q + "conv1d.weight"] = (rng.standard_normal((conv_dim, 1, a.kernel)) * 0.3).astype(np.float32)
        W[q + "A_log"] = np.log(rng.uniform(1, 16, LV)).astype(np.float32)
        W[q + "dt_bias"] = (rng.standard_normal(LV) * 0.5).astype(np.float32)
        W[q + "norm.weight"] = unorm(DV)
        W[q + "out_proj.weight"] = rnd(H, LV * DV)
        if a.a_log_dtype == "f32":
            f32_names.add(q + "A_log")
    else:
        full_attn(p)
    mlp(p)
for i in range(a.layers):
    layer(f"model.layers.{i}.", types[i] == "linear_attention")
W["model.norm.weight"] = cnorm(H)
if not a.tied:
    W["lm_head.weight"] = rnd(V, H)
for i in range(a.mtp):
    layer(f"mtp.layers.{i}.", False)
if a.mtp:
    W["mtp.fc.weight"] = rnd(H, 2 * H)
    W["mtp.pre_fc_norm_embedding.weight"], W["mtp.pre_fc_norm_hidden.weight"] = cnorm(H), cnorm(H)
    W["mtp.norm.weight"] = cnorm(H)

if a.vlm:   # model.language_model.*, a few vision tensors (the converter drops them)
    W = {("model.language_model." + k[6:] if k.startswith("model.") else k): x for k, x in W.items()}
    f32_names = {("model.language_model." + k[6:] if k.startswith("model.") else k) for k in f32_names}
    W["model.visual.blocks.0.attn.qkv.weight"], W["model.visual.blocks.0.norm1.weight"] = rnd(48, 16), cnorm(16)
    W["model.visual.merger.linear_fc1.weight"] = rnd(64, 64)

def wire(k, x):
    return st_write.encode("f32" if k in f32_names else a.dtype, x)

out = {k: wire(k, x) for k, x in W.items()}
shapes = {k: list(W[k].shape) for k in W}
for k in a.drop:
    del out[k]

names = list(out)
total = st_write.write_shards(a.out, {k: (*out[k], shapes[k]) for k in out}, a.shards, a.dup)
print(a.out, cfg["architectures"][0], "vocab", V, "tensors", len(names), "bytes", total)
