"""Write a small GptOssForCausalLM Hugging Face checkpoint for the anvil convert tests of hf_gptoss.c: config.json
with the fields transformers (4.55, models/gpt_oss) saves, tensor names as its GptOss modules name them, tokenizer
files copied from a folder (the real gpt-oss tokenizer, or one cut by hf-oracle's shrink_tokenizer.py).

  --layout mxfp4  the release layout: mlp.experts.{gate_up,down}_proj_{blocks,scales} (U8; blocks [E, rows, in/32,
                  16], scales [E, rows, in/32], e8m0), quantization_config quant_method mxfp4, the rest --dtype
  --layout float  a dequantized (BF16) checkpoint: mlp.experts.gate_up_proj [E, H, 2*ff], down_proj [E, ff, H]
Both: gate_up_proj_bias [E, 2*ff], down_proj_bias [E, H], mlp.router.{weight,bias}, self_attn.{q,k,v,o}_proj with
biases, self_attn.sinks [heads], layer_types alternating sliding/full, yarn rope_scaling.
Weights are seeded random normals (std 0.02; norms 1 +- 0.1). No torch or transformers needed.
usage: make_gptoss.py OUTDIR --tok DIR [--layout mxfp4|float] [--dtype bf16|f16|f32] [--hidden 64] [--layers 2]
                      [--heads 4] [--kv 2] [--head-dim 16] [--experts 4] [--used 2] [--inter 64] [--pad 12]
                      [--shards N] [--seed S] [--drop NAME]... [--bad-shape NAME] [--unset KEY]...
--drop leaves a tensor out; --bad-shape writes NAME with its last dim halved; --unset removes a config.json key;
--pad: vocab_size = the tokenizer's ids + pad.
"""
import argparse, json, os, shutil
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--tok", required=True)
ap.add_argument("--layout", default="mxfp4", choices=["mxfp4", "float"])
ap.add_argument("--dtype", default="bf16")
for k, v in [("hidden", 64), ("layers", 2), ("heads", 4), ("kv", 2), ("head-dim", 16), ("experts", 4), ("used", 2),
             ("inter", 64), ("pad", 12), ("shards", 1), ("seed", 1)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--bad-shape", action="append", default=[])
ap.add_argument("--unset", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
H, hd, E, F = a.hidden, a.head_dim, a.experts, a.inter

for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(a.tok, f), os.path.join(a.out, f))
tj = json.load(open(os.path.join(a.tok, "tokenizer.json"), encoding="utf-8"))
n_ids = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])]) + 1
V = n_ids + a.pad
ids = {t["content"]: t["id"] for t in tj.get("added_tokens", [])}

dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
cfg = {"architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
       "eos_token_id": ids.get("<|return|>", 0), "experts_per_token": a.used, "head_dim": hd, "hidden_act": "silu",
       "hidden_size": H, "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": F,
       "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(a.layers)],
       "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": a.heads,
       "num_experts_per_tok": a.used, "num_hidden_layers": a.layers, "num_key_value_heads": a.kv,
       "num_local_experts": E, "output_router_logits": False, "pad_token_id": ids.get("<|endoftext|>", 0),
       "rms_norm_eps": 1e-05,
       "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                        "rope_type": "yarn", "truncate": False},
       "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
       "tie_word_embeddings": False, "transformers_version": "4.55.0", "use_cache": True, "vocab_size": V}
if a.layout == "mxfp4":
    cfg["quantization_config"] = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                             "model.embed_tokens", "lm_head"],
                                  "quant_method": "mxfp4"}
else:
    cfg["torch_dtype"] = dt
for k in a.unset:
    cfg.pop(k, None)
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2, sort_keys=True)

rng = np.random.default_rng(a.seed)
def rnd(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
def norm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
def u8(*shape, lo=0, hi=256): return rng.integers(lo, hi, size=shape, dtype=np.uint8)
W = {"model.embed_tokens.weight": rnd(V, H)}
for i in range(a.layers):
    p = f"model.layers.{i}."
    W[p + "input_layernorm.weight"] = norm(H)
    W[p + "post_attention_layernorm.weight"] = norm(H)
    W[p + "self_attn.q_proj.weight"], W[p + "self_attn.q_proj.bias"] = rnd(a.heads * hd, H), rnd(a.heads * hd)
    W[p + "self_attn.k_proj.weight"], W[p + "self_attn.k_proj.bias"] = rnd(a.kv * hd, H), rnd(a.kv * hd)
    W[p + "self_attn.v_proj.weight"], W[p + "self_attn.v_proj.bias"] = rnd(a.kv * hd, H), rnd(a.kv * hd)
    W[p + "self_attn.o_proj.weight"], W[p + "self_attn.o_proj.bias"] = rnd(H, a.heads * hd), rnd(H)
    W[p + "self_attn.sinks"] = rnd(a.heads)
    W[p + "mlp.router.weight"], W[p + "mlp.router.bias"] = rnd(E, H), rnd(E)
    q = p + "mlp.experts."
    W[q + "gate_up_proj_bias"], W[q + "down_proj_bias"] = rnd(E, 2 * F), rnd(E, H)
    if a.layout == "mxfp4":
        # e8m0 scales 2^-17 .. 2^-1: finite, small values
        W[q + "gate_up_proj_blocks"], W[q + "gate_up_proj_scales"] = u8(E, 2 * F, H // 32, 16), u8(E, 2 * F, H // 32, lo=110, hi=126)
        W[q + "down_proj_blocks"], W[q + "down_proj_scales"] = u8(E, H, F // 32, 16), u8(E, H, F // 32, lo=110, hi=126)
    else:
        W[q + "gate_up_proj"], W[q + "down_proj"] = rnd(E, H, 2 * F), rnd(E, F, H)
W["model.norm.weight"] = norm(H)
W["lm_head.weight"] = rnd(V, H)
for k in a.drop:
    del W[k]
for k in a.bad_shape:
    W[k] = W[k][..., : W[k].shape[-1] // 2].copy()

names = list(W)
total = st_write.write_shards(a.out, {k: (*st_write.encode(a.dtype, x), x.shape) for k, x in W.items()}, a.shards)
print(a.out, "GptOssForCausalLM", a.layout, "vocab", V, "tensors", len(names), "bytes", total)
