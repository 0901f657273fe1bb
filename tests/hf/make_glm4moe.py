"""Write a small Glm4MoeForCausalLM Hugging Face checkpoint (config.json with the fields transformers'
Glm4MoeConfig.save_pretrained writes, safetensors shards + index, tokenizer files) for the anvil convert
tests of hf_glm4moe.c.

Tensors as GLM-4.5 ships them: self_attn.{q,k,v}_proj with biases (attention_bias), o_proj without,
self_attn.{q,k}_norm with --qk-norm (use_qk_norm), the first --dense layers with a dense
mlp.{gate,up,down}_proj, the others with mlp.gate (router), mlp.gate.e_score_correction_bias,
mlp.experts.E.{gate,up,down}_proj and mlp.shared_experts.*; --mtp adds the multi-token-prediction layer
model.layers.<num_hidden_layers> (enorm, hnorm, eh_proj, shared_head.{norm,head}, embed_tokens and a whole
MoE layer) with num_nextn_predict_layers 1, as GLM-4.5 and GLM-4.5-Air hold it.

The tokenizer: GLM-4.5's tokenizer.json is a byte-level BPE with Llama 3's pre-tokenizer (Split on the
Llama 3 regex, ByteLevel without regex, no normalizer) and GLM's added tokens (<|endoftext|>, [MASK],
[gMASK], [sMASK], <sop>, <eop>, the role tokens, <think>, the tool-call tokens). No GLM tokenizer package is
on npm, so this one takes the vocabulary and merges of --tok (a Llama 3 tokenizer.json: the pre-tokenizer
definition is the same) cut to its first --vocab ids, drops its added tokens and appends GLM's, with a
tokenizer_config.json as GLM-4.5's (eos and pad <|endoftext|>, no bos). vocab_size is the tokenizer's size
plus --pad.

Weights are seeded random normals (std 0.02; norms 1 +- 0.1). No torch or transformers needed.
--fp8 B: every 2-D self_attn/mlp weight but the router (also the MTP layer's eh_proj) as F8_E4M3 with an
F32 <name>_scale_inv of B x B blocks (partial edge blocks where a dimension is no multiple of B),
quantization_config fp8 with weight_block_size [B, B], as the block-scaled FP8 releases.
usage: make_glm4moe.py OUTDIR --tok DIR [--vocab 384] [--pad 3] [--hidden 64] [--layers 2] [--dense 1]
       [--heads 4] [--kv-heads 2] [--head-dim 16] [--experts 4] [--used 2] [--shared 1] [--moe-inter 32]
       [--inter 96] [--dtype bf16|f16|f32] [--qk-norm] [--mtp] [--tied] [--shards N] [--seed S]
       [--fp8 B] [--drop NAME]... [--dup NAME] [--unset KEY]... [--set K=JSON]...
"""
import argparse, json, os
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--tok", required=True)
for k, v in [("vocab", 384), ("pad", 3), ("hidden", 64), ("layers", 2), ("dense", 1), ("heads", 4),
             ("kv-heads", 2), ("head-dim", 16), ("experts", 4), ("used", 2), ("shared", 1), ("moe-inter", 32),
             ("inter", 96), ("shards", 1), ("seed", 1), ("fp8", 0)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--qk-norm", action="store_true")
ap.add_argument("--mtp", action="store_true")
ap.add_argument("--tied", action="store_true")
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--dup")
ap.add_argument("--unset", action="append", default=[])
ap.add_argument("--set", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)

# ---- tokenizer files
GLM_ADDED = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
             "<|assistant|>", "<|observation|>", "<|begin_of_image|>", "<|end_of_image|>", "<|begin_of_video|>",
             "<|end_of_video|>", "<|begin_of_audio|>", "<|end_of_audio|>", "<|begin_of_transcription|>",
             "<|end_of_transcription|>", "<|code_prefix|>", "<|code_middle|>", "<|code_suffix|>", "/nothink",
             "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
             "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"]
NOT_SPECIAL = {"/nothink", "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>",
               "</tool_response>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"}
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
tj["normalizer"] = None
tj["added_tokens"] = [{"id": n + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                       "normalized": False, "special": c not in NOT_SPECIAL} for i, c in enumerate(GLM_ADDED)]
json.dump(tj, open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False,
          separators=(",", ":"))
tc = {"added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tj["added_tokens"]},
      "additional_special_tokens": [c for c in GLM_ADDED[1:21]],
      "chat_template": "[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{% endfor %}"
                       "{% if add_generation_prompt %}<|assistant|>{% endif %}",
      "clean_up_tokenization_spaces": False, "do_lower_case": False, "eos_token": "<|endoftext|>",
      "extra_special_tokens": {}, "model_input_names": ["input_ids", "attention_mask"],
      "model_max_length": 128000, "pad_token": "<|endoftext|>", "padding_side": "left", "remove_space": False,
      "tokenizer_class": "PreTrainedTokenizerFast"}
json.dump(tc, open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8"), ensure_ascii=False, indent=2)
ids = {c: n + i for i, c in enumerate(GLM_ADDED)}
V = n + len(GLM_ADDED) + a.pad

# ---- config.json as Glm4MoeConfig.save_pretrained writes it
dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
H, NH, KV, HD, E = a.hidden, a.heads, a.kv_heads, a.head_dim, a.experts
cfg = {"architectures": ["Glm4MoeForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
       "eos_token_id": [ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]],
       "first_k_dense_replace": a.dense, "head_dim": HD, "hidden_act": "silu", "hidden_size": H,
       "initializer_range": 0.02, "intermediate_size": a.inter, "max_position_embeddings": 131072,
       "model_type": "glm4_moe", "moe_intermediate_size": a.moe_inter, "n_group": 1, "n_routed_experts": E,
       "n_shared_experts": a.shared, "norm_topk_prob": True, "num_attention_heads": NH,
       "num_experts_per_tok": a.used, "num_hidden_layers": a.layers, "num_key_value_heads": KV,
       "num_nextn_predict_layers": 1 if a.mtp else 0, "pad_token_id": ids["<|endoftext|>"],
       "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000,
       "routed_scaling_factor": 2.5, "tie_word_embeddings": a.tied, "topk_group": 1, "torch_dtype": dt,
       "transformers_version": "4.57.1", "use_cache": True, "use_qk_norm": a.qk_norm, "vocab_size": V}
if a.fp8:
    cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                  "weight_block_size": [a.fp8, a.fp8]}
for k in a.unset:
    cfg.pop(k, None)
for kv in a.set:
    k, v = kv.split("=", 1)
    cfg[k] = json.loads(v)
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2, sort_keys=True)

# ---- weights, HF names and layout ([out, in])
rng = np.random.default_rng(a.seed)
def rnd(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
def norm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
W = {"model.embed_tokens.weight": rnd(V, H)}
def layer(i, moe):
    p = f"model.layers.{i}."
    W[p + "input_layernorm.weight"] = norm(H)
    W[p + "post_attention_layernorm.weight"] = norm(H)
    W[p + "self_attn.q_proj.weight"], W[p + "self_attn.q_proj.bias"] = rnd(NH * HD, H), rnd(NH * HD)
    W[p + "self_attn.k_proj.weight"], W[p + "self_attn.k_proj.bias"] = rnd(KV * HD, H), rnd(KV * HD)
    W[p + "self_attn.v_proj.weight"], W[p + "self_attn.v_proj.bias"] = rnd(KV * HD, H), rnd(KV * HD)
    W[p + "self_attn.o_proj.weight"] = rnd(H, NH * HD)
    if a.qk_norm:
        W[p + "self_attn.q_norm.weight"], W[p + "self_attn.k_norm.weight"] = norm(HD), norm(HD)
    if not moe:
        W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = rnd(a.inter, H), rnd(a.inter, H)
        W[p + "mlp.down_proj.weight"] = rnd(H, a.inter)
        return
    F, S = a.moe_inter, a.moe_inter * a.shared
    W[p + "mlp.gate.weight"] = rnd(E, H)
    W[p + "mlp.gate.e_score_correction_bias"] = rnd(E)
    for e in range(E):
        q = p + f"mlp.experts.{e}."
        W[q + "gate_proj.weight"], W[q + "up_proj.weight"], W[q + "down_proj.weight"] = rnd(F, H), rnd(F, H), rnd(H, F)
    if a.shared:
        W[p + "mlp.shared_experts.gate_proj.weight"] = rnd(S, H)
        W[p + "mlp.shared_experts.up_proj.weight"] = rnd(S, H)
        W[p + "mlp.shared_experts.down_proj.weight"] = rnd(H, S)
for i in range(a.layers):
    layer(i, i >= a.dense)
if a.mtp:
    i = a.layers
    p = f"model.layers.{i}."
    layer(i, True)
    W[p + "embed_tokens.weight"] = rnd(V, H)
    W[p + "enorm.weight"], W[p + "hnorm.weight"] = norm(H), norm(H)
    W[p + "eh_proj.weight"] = rnd(H, 2 * H)
    W[p + "shared_head.norm.weight"] = norm(H)
    W[p + "shared_head.head.weight"] = rnd(V, H)
W["model.norm.weight"] = norm(H)
if not a.tied:
    W["lm_head.weight"] = rnd(V, H)

out = {k: st_write.encode(a.dtype, x) for k, x in W.items()}
shapes = {k: list(W[k].shape) for k in W}
if a.fp8:
    shapes.update(st_write.fp8_blocks(out, W, a.fp8, rng, lambda k: (".self_attn." in k or ".mlp." in k or
                                      k.endswith(".eh_proj.weight")) and not k.endswith("mlp.gate.weight")))
for k in a.drop:
    del out[k]

names = list(out)
total = st_write.write_shards(a.out, {k: (*out[k], shapes[k]) for k in out}, a.shards, a.dup)
print(a.out, "Glm4MoeForCausalLM vocab", V, "tensors", len(names), "bytes", total)
