"""Write a small Phi3ForCausalLM Hugging Face checkpoint (config.json with the fields transformers' save_pretrained
writes for Phi3Config, safetensors shards + index, Phi-3's tokenizer files) for the anvil convert tests of
host/src/hf/hf_phi3.c.

  --rope plain      Phi-3-mini-4k style: rope_scaling null, sliding_window 2047 (transformers 4.4x)
  --rope longrope   Phi-3/3.5-mini-128k style: rope_scaling {long_factor, short_factor, type: longrope},
                    max_position_embeddings 131072, original_max_position_embeddings 4096
  --rope v5         transformers 5 / Phi-4-mini style: rope_parameters {rope_type longrope, rope_theta,
                    long/short factors, partial_rotary_factor}, "dtype", sliding_window null
Tensors as transformers' Phi3 names them: self_attn.qkv_proj [(heads + 2 kv) * head_dim, H] and
mlp.gate_up_proj [2 * ff, H] fused. Tokenizer: SentencePiece tokenizer.model (--spm FILE), config.json's
vocab_size padded past it (--pad N), Phi-3's added tokens <|endoftext|> <|assistant|> ... <|user|> after the
pieces in tokenizer.json (added_tokens, also <unk> <s> </s>), tokenizer_config.json (added_tokens_decoder,
LlamaTokenizer, a chat template) and added_tokens.json. Weights are seeded random normals (std 0.02; norms
1 +- 0.1). No torch or transformers needed.
usage: make_phi3.py OUTDIR --spm FILE [--rope plain|longrope|v5] [--hidden 32] [--layers 1] [--heads 2] [--kv 1]
                    [--inter 64] [--pad 13] [--partial 1.0] [--dtype bf16|f16|f32] [--tied] [--shards N] [--seed S]
                    [--drop NAME]... [--unset KEY]... [--tok-class NAME]
"""
import argparse, json, os, shutil
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--spm", required=True)
ap.add_argument("--rope", default="plain", choices=["plain", "longrope", "v5"])
for k, v in [("hidden", 32), ("layers", 1), ("heads", 2), ("kv", 1), ("inter", 64), ("pad", 13), ("shards", 1),
             ("seed", 1)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--partial", type=float, default=1.0)
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--tied", action="store_true")
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--unset", action="append", default=[])
ap.add_argument("--tok-class", default="LlamaTokenizer")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
H, hd = a.hidden, a.hidden // a.heads

# ---- tokenizer files (Phi-3's layout)
shutil.copy(a.spm, os.path.join(a.out, "tokenizer.model"))
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file=a.spm)
NP = sp.get_piece_size()
ADDED = ["<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>", "<|placeholder3|>",
         "<|placeholder4|>", "<|system|>", "<|end|>", "<|placeholder5|>", "<|placeholder6|>", "<|user|>"]
V = NP + len(ADDED) + a.pad
# special in tokenizer.json: the placeholders are not (tokenizer.json is applied last by the converter)
tj_added = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i in range(3)]
for k, t in enumerate(ADDED):
    tj_added.append({"id": NP + k, "content": t, "single_word": False, "lstrip": False, "rstrip": t != "<|endoftext|>",
                     "normalized": False, "special": "placeholder" not in t})
tok_json = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": tj_added,
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                                {"type": "Replace", "pattern": {"String": " "},
                                                                 "content": "\u2581"}]},
            "pre_tokenizer": None,
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
            "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
                                                          "content": " "}, {"type": "ByteFallback"},
                                                         {"type": "Fuse"}, {"type": "Strip", "content": " ",
                                                                              "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": {sp.id_to_piece(i): i for i in range(min(NP, 64))}, "merges": []}}
json.dump(tok_json, open(os.path.join(a.out, "tokenizer.json"), "w"), indent=2, ensure_ascii=False)
decoder = {str(i): {"content": sp.id_to_piece(i), "lstrip": False, "normalized": False, "rstrip": False,
                    "single_word": False, "special": True} for i in range(3)}
for k, t in enumerate(ADDED):
    decoder[str(NP + k)] = {"content": t, "lstrip": False, "normalized": False, "rstrip": t != "<|endoftext|>",
                            "single_word": False, "special": t != "<|placeholder6|>"}
tcfg = {"add_bos_token": False, "add_eos_token": False, "added_tokens_decoder": decoder, "bos_token": "<s>",
        "chat_template": "{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + "
                         "'<|end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}",
        "clean_up_tokenization_spaces": False, "eos_token": "<|endoftext|>", "legacy": False,
        "model_max_length": 4096, "pad_token": "<|endoftext|>", "padding_side": "left", "sp_model_kwargs": {},
        "tokenizer_class": a.tok_class, "unk_token": "<unk>", "use_default_system_prompt": False}
if a.tok_class == "-":
    del tcfg["tokenizer_class"]
json.dump(tcfg, open(os.path.join(a.out, "tokenizer_config.json"), "w"), indent=2)
added = {t: NP + k for k, t in enumerate(ADDED)}
added["<|beyond|>"] = V + 5   # past vocab_size: the converter skips it
json.dump(added, open(os.path.join(a.out, "added_tokens.json"), "w"), indent=2)

# ---- config.json as save_pretrained writes Phi3Config
dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
rope_dims = int(a.partial * H) // a.heads
rng = np.random.default_rng(a.seed)
longf = [round(float(x), 6) for x in 1.0 + 3.0 * rng.random(rope_dims // 2)]
shortf = [round(float(x), 6) for x in 1.0 + 0.1 * rng.random(rope_dims // 2)]
cfg = {"architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 1,
       "embd_pdrop": 0.0, "eos_token_id": NP, "hidden_act": "silu", "hidden_size": H, "initializer_range": 0.02,
       "intermediate_size": a.inter, "max_position_embeddings": 4096, "model_type": "phi3",
       "num_attention_heads": a.heads, "num_hidden_layers": a.layers, "num_key_value_heads": a.kv,
       "original_max_position_embeddings": 4096, "pad_token_id": NP, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
       "tie_word_embeddings": a.tied, "use_cache": True, "vocab_size": V}
if a.rope == "plain":
    cfg.update(rope_scaling=None, rope_theta=10000.0, sliding_window=2047, torch_dtype=dt,
               transformers_version="4.40.2")
elif a.rope == "longrope":
    cfg.update(max_position_embeddings=131072, partial_rotary_factor=a.partial,
               rope_scaling={"long_factor": longf, "short_factor": shortf, "type": "longrope"}, rope_theta=10000.0,
               sliding_window=262144, torch_dtype=dt, transformers_version="4.45.0")
else:
    cfg.update(max_position_embeddings=131072, dtype=dt, sliding_window=None, transformers_version="5.0.0",
               rope_parameters={"long_factor": longf, "short_factor": shortf, "original_max_position_embeddings": 4096,
                                "partial_rotary_factor": a.partial, "rope_theta": 10000.0, "rope_type": "longrope"})
    del cfg["original_max_position_embeddings"]
for k in a.unset:
    cfg.pop(k, None)
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2, sort_keys=True)

# ---- weights, HF names and layout ([out, in])
def rnd(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
def norm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
W = {"model.embed_tokens.weight": rnd(V, H)}
for i in range(a.layers):
    p = f"model.layers.{i}."
    W[p + "input_layernorm.weight"] = norm(H)
    W[p + "self_attn.qkv_proj.weight"] = rnd((a.heads + 2 * a.kv) * hd, H)
    W[p + "self_attn.o_proj.weight"] = rnd(H, a.heads * hd)
    W[p + "post_attention_layernorm.weight"] = norm(H)
    W[p + "mlp.gate_up_proj.weight"] = rnd(2 * a.inter, H)
    W[p + "mlp.down_proj.weight"] = rnd(H, a.inter)
W["model.norm.weight"] = norm(H)
if not a.tied:
    W["lm_head.weight"] = rnd(V, H)
for k in a.drop:
    del W[k]

names = list(W)
total = st_write.write_shards(a.out, {k: (*st_write.encode(a.dtype, x), x.shape) for k, x in W.items()}, a.shards)
print(a.out, "Phi3ForCausalLM", a.rope, "vocab", V, "tensors", len(names), "bytes", total)
