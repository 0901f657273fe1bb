"""Write a small mixture-of-experts Hugging Face checkpoint (config.json with the fields transformers' save_pretrained
writes for the class, safetensors shards + index, tokenizer files) for the anvil convert tests of hf_moe.c.

  qwen3moe        Qwen3MoeForCausalLM, transformers 4.5x: mlp.experts.E.{gate,up,down}_proj.weight, rope_theta
  qwen3moe-fused  Qwen3MoeForCausalLM, transformers 5: mlp.experts.gate_up_proj [E, 2*ff, H] and
                  mlp.experts.down_proj [E, H, ff] (no .weight), rope_parameters, "dtype"
  qwen2moe        Qwen2MoeForCausalLM: q/k/v biases, mlp.shared_expert.* and mlp.shared_expert_gate
  mixtral         MixtralForCausalLM: block_sparse_moe.gate and block_sparse_moe.experts.E.w{1,2,3}

Weights are seeded random normals (std 0.02; norms 1 +- 0.1). No torch or transformers needed.
usage: make_moe.py OUTDIR --arch A [--hidden 32] [--layers 1] [--heads 2] [--kv 1] [--head-dim 16] [--experts 4]
                   [--used 2] [--moe-inter 32] [--inter 64] [--shared-inter 48] --tok spm:FILE | tok:DIR
                   [--dtype bf16|f16|f32] [--tied] [--shards N] [--seed S] [--drop NAME]... [--dup NAME] [--unset KEY]...
--drop leaves a tensor out; --dup writes NAME into a second shard as well (shards >= 2); --unset removes a
config.json key.
"""
import argparse, json, os, shutil
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--arch", required=True, choices=["qwen3moe", "qwen3moe-fused", "qwen2moe", "mixtral"])
for k, v in [("hidden", 32), ("layers", 1), ("heads", 2), ("kv", 1), ("head-dim", 16), ("experts", 4), ("used", 2),
             ("moe-inter", 32), ("inter", 64), ("shared-inter", 48), ("shards", 1), ("seed", 1)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--tok", required=True)
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--dup")
ap.add_argument("--tied", action="store_true")
ap.add_argument("--unset", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
H, hd, E = a.hidden, a.head_dim, a.experts

# ---- tokenizer files
kind, path = a.tok.split(":", 1)
if kind == "spm":
    shutil.copy(path, os.path.join(a.out, "tokenizer.model"))
    import sentencepiece as spm
    V = spm.SentencePieceProcessor(model_file=path).get_piece_size()
    bos, eos = 1, 2
    json.dump({"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
               "unk_token": "<unk>", "model_max_length": 2048, "tokenizer_class": "LlamaTokenizer",
               "clean_up_tokenization_spaces": False, "legacy": False, "sp_model_kwargs": {}},
              open(os.path.join(a.out, "tokenizer_config.json"), "w"), indent=2)
else:
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(path, f), os.path.join(a.out, f))
    tj = json.load(open(os.path.join(path, "tokenizer.json")))
    V = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])]) + 1
    bos = eos = min(t["id"] for t in tj["added_tokens"])

# ---- config.json as save_pretrained writes it for each class
dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
common = {"attention_dropout": 0.0, "bos_token_id": bos, "eos_token_id": eos, "hidden_act": "silu", "hidden_size": H,
          "initializer_range": 0.02, "intermediate_size": a.inter, "max_position_embeddings": 4096,
          "num_attention_heads": a.heads, "num_hidden_layers": a.layers, "num_key_value_heads": a.kv,
          "output_router_logits": False, "tie_word_embeddings": a.tied, "use_cache": True, "vocab_size": V}
if a.arch.startswith("qwen3moe"):
    cfg = dict(common, architectures=["Qwen3MoeForCausalLM"], attention_bias=False, decoder_sparse_step=1,
               head_dim=hd, max_window_layers=a.layers, mlp_only_layers=[], model_type="qwen3_moe",
               moe_intermediate_size=a.moe_inter, norm_topk_prob=True, num_experts=E, num_experts_per_tok=a.used,
               rms_norm_eps=1e-06, router_aux_loss_coef=0.001, sliding_window=None, use_sliding_window=False)
    if a.arch == "qwen3moe":
        cfg.update(rope_scaling=None, rope_theta=1000000.0, torch_dtype=dt, transformers_version="4.51.0")
    else:
        cfg.update(dtype=dt, rope_parameters={"rope_theta": 1000000.0, "rope_type": "default"},
                   transformers_version="5.0.0")
elif a.arch == "qwen2moe":
    hd = H // a.heads
    cfg = dict(common, architectures=["Qwen2MoeForCausalLM"], decoder_sparse_step=1, max_window_layers=a.layers,
               mlp_only_layers=[], model_type="qwen2_moe", moe_intermediate_size=a.moe_inter, norm_topk_prob=False,
               num_experts=E, num_experts_per_tok=a.used, qkv_bias=True, rms_norm_eps=1e-06, rope_scaling=None,
               rope_theta=1000000.0, router_aux_loss_coef=0.001, shared_expert_intermediate_size=a.shared_inter,
               sliding_window=None, torch_dtype=dt, transformers_version="4.51.0", use_sliding_window=False)
else:
    cfg = dict(common, architectures=["MixtralForCausalLM"], head_dim=hd, model_type="mixtral",
               num_experts_per_tok=a.used, num_local_experts=E, rms_norm_eps=1e-05, rope_theta=1000000.0,
               router_jitter_noise=0.0, sliding_window=None, torch_dtype=dt, transformers_version="4.51.0",
               intermediate_size=a.moe_inter, router_aux_loss_coef=0.02)
for k in a.unset:
    cfg.pop(k, None)
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2, sort_keys=True)

# ---- weights, HF names and layout ([out, in])
rng = np.random.default_rng(a.seed)
def rnd(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
def norm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
W = {"model.embed_tokens.weight": rnd(V, H)}
F = a.moe_inter
for i in range(a.layers):
    p = f"model.layers.{i}."
    W[p + "input_layernorm.weight"] = norm(H)
    W[p + "post_attention_layernorm.weight"] = norm(H)
    W[p + "self_attn.q_proj.weight"] = rnd(a.heads * hd, H)
    W[p + "self_attn.k_proj.weight"] = rnd(a.kv * hd, H)
    W[p + "self_attn.v_proj.weight"] = rnd(a.kv * hd, H)
    W[p + "self_attn.o_proj.weight"] = rnd(H, a.heads * hd)
    if a.arch == "qwen2moe":
        for x, n in (("q", a.heads), ("k", a.kv), ("v", a.kv)):
            W[p + f"self_attn.{x}_proj.bias"] = rnd(n * hd)
        W[p + "mlp.shared_expert.gate_proj.weight"] = rnd(a.shared_inter, H)
        W[p + "mlp.shared_expert.up_proj.weight"] = rnd(a.shared_inter, H)
        W[p + "mlp.shared_expert.down_proj.weight"] = rnd(H, a.shared_inter)
        W[p + "mlp.shared_expert_gate.weight"] = rnd(1, H)
    if a.arch.startswith("qwen3moe"):
        W[p + "self_attn.q_norm.weight"] = norm(hd)
        W[p + "self_attn.k_norm.weight"] = norm(hd)
    if a.arch == "mixtral":
        W[p + "block_sparse_moe.gate.weight"] = rnd(E, H)
        for e in range(E):
            q = p + f"block_sparse_moe.experts.{e}."
            W[q + "w1.weight"], W[q + "w2.weight"], W[q + "w3.weight"] = rnd(F, H), rnd(H, F), rnd(F, H)
    elif a.arch == "qwen3moe-fused":
        W[p + "mlp.gate.weight"] = rnd(E, H)
        W[p + "mlp.experts.gate_up_proj"] = rnd(E, 2 * F, H)
        W[p + "mlp.experts.down_proj"] = rnd(E, H, F)
    else:
        W[p + "mlp.gate.weight"] = rnd(E, H)
        for e in range(E):
            q = p + f"mlp.experts.{e}."
            W[q + "gate_proj.weight"], W[q + "up_proj.weight"], W[q + "down_proj.weight"] = rnd(F, H), rnd(F, H), rnd(H, F)
W["model.norm.weight"] = norm(H)
if not a.tied:
    W["lm_head.weight"] = rnd(V, H)
for k in a.drop:
    del W[k]

names = list(W)
total = st_write.write_shards(a.out, {k: (*st_write.encode(a.dtype, x), x.shape) for k, x in W.items()}, a.shards, a.dup)
print(a.out, cfg["architectures"][0], "vocab", V, "tensors", len(names), "bytes", total)
