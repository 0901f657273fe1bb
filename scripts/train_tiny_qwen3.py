"""Train a small Qwen3-architecture language model on the CPU and save its state dict under Hugging Face
tensor names (Qwen3ForCausalLM), for ../shared/tools/hf-oracle/make_hf.py --arch qwen3 --weights.

The math is transformers' Qwen3 decoder layer: RMSNorm (eps 1e-6) before attention and MLP, q_proj/k_proj
outputs normalised per head by q_norm/k_norm (RMSNorm over head_dim) before rotate-half RoPE with base 1e6,
GQA attention with a causal mask, SwiGLU MLP, optional tied embeddings. ../shared/tools/train-tiny trains
the LLaMA shape; this one gives issue 40's measurements a model of another architecture that nobody tuned
--target-size on. Like train-tiny, the point is trained structure (outliers, per-layer differences, a real
output distribution), not a good language model.

usage: train_tiny_qwen3.py CORPUS.txt SPM.model OUT.pt --hidden 256 --inter 768 --layers 6 --heads 4 --kv 2
                           [--head-dim 64] [--tied] [--minutes 5] [--seq 256] [--batch 2] [--threads 1]
                           [--seed 0]
"""
import argparse
import math
import time

import sentencepiece as spm
import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("corpus")
ap.add_argument("spm")
ap.add_argument("out")
for k, v in dict(hidden=256, inter=768, layers=6, heads=4, kv=2, seq=256, batch=2, threads=1, seed=0).items():
    ap.add_argument("--" + k, type=int, default=v)
ap.add_argument("--head-dim", type=int, default=0, help="default hidden / heads")
ap.add_argument("--minutes", type=float, default=5)
ap.add_argument("--lr", type=float, default=3e-3)
ap.add_argument("--tied", action="store_true")
a = ap.parse_args()
torch.manual_seed(a.seed)
torch.set_num_threads(a.threads)
EPS, THETA = 1e-6, 1000000.0
hd = a.head_dim or a.hidden // a.heads
sp = spm.SentencePieceProcessor(model_file=a.spm)
V = sp.get_piece_size()
ids = []
for doc in open(a.corpus, encoding="utf-8").read().split("\n\n\n"):
    ids.append(1)
    ids += sp.encode(doc)
data = torch.tensor(ids, dtype=torch.long)
print(f"tokens {data.numel()}, vocab {V}, head_dim {hd}", flush=True)


def rotate(x, pos):
    """x [B, H, T, D]: rotate-half RoPE (transformers' convention), base THETA."""
    inv = 1.0 / (THETA ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    ang = torch.outer(pos.float(), inv)
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    half = hd // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(a.hidden), RMSNorm(a.hidden)
        self.q_proj = nn.Linear(a.hidden, a.heads * hd, bias=False)
        self.k_proj = nn.Linear(a.hidden, a.kv * hd, bias=False)
        self.v_proj = nn.Linear(a.hidden, a.kv * hd, bias=False)
        self.o_proj = nn.Linear(a.heads * hd, a.hidden, bias=False)
        self.q_norm, self.k_norm = RMSNorm(hd), RMSNorm(hd)
        self.gate_proj = nn.Linear(a.hidden, a.inter, bias=False)
        self.up_proj = nn.Linear(a.hidden, a.inter, bias=False)
        self.down_proj = nn.Linear(a.inter, a.hidden, bias=False)

    def forward(self, x, pos):
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_norm(self.q_proj(h).view(B, T, a.heads, hd)).transpose(1, 2)
        k = self.k_norm(self.k_proj(h).view(B, T, a.kv, hd)).transpose(1, 2)
        v = self.v_proj(h).view(B, T, a.kv, hd).transpose(1, 2)
        q, k = rotate(q, pos), rotate(k, pos)
        k = k.repeat_interleave(a.heads // a.kv, 1)
        v = v.repeat_interleave(a.heads // a.kv, 1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        x = x + self.o_proj((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, a.hidden)
        self.layers = nn.ModuleList([Layer() for _ in range(a.layers)])
        self.norm = RMSNorm(a.hidden)
        self.lm_head = nn.Linear(a.hidden, V, bias=False)
        for mod in self.modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                nn.init.normal_(mod.weight, std=0.02)
        if a.tied:
            self.lm_head.weight = self.embed.weight

    def forward(self, x):
        pos = torch.arange(x.shape[1])
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, pos)
        return self.lm_head(self.norm(h))


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1)
gen = torch.Generator().manual_seed(a.seed)
t0, step, budget = time.time(), 0, a.minutes * 60
while time.time() - t0 < budget:
    frac = (time.time() - t0) / budget
    lr = a.lr * min(1, (step + 1) / 50) * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
    for group in opt.param_groups:
        group["lr"] = lr
    starts = torch.randint(0, data.numel() - a.seq - 1, (a.batch,), generator=gen)
    x = torch.stack([data[i:i + a.seq + 1] for i in starts.tolist()])
    loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, V), x[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    step += 1
    if step % 50 == 0:
        print(f"step {step} {time.time() - t0:.0f}s loss {loss.item():.3f} lr {lr:.2e}", flush=True)
print(f"done {step} steps, {step * a.batch * a.seq / 1e6:.1f} M tokens, last loss {loss.item():.3f}", flush=True)
sd = {"model.embed_tokens.weight": model.embed.weight, "model.norm.weight": model.norm.weight}
if not a.tied:
    sd["lm_head.weight"] = model.lm_head.weight
for i, layer in enumerate(model.layers):
    p = f"model.layers.{i}."
    sd[p + "input_layernorm.weight"] = layer.input_layernorm.weight
    sd[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
    for n in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"):
        sd[p + "self_attn." + n + ".weight"] = getattr(layer, n).weight
    for n in ("gate_proj", "up_proj", "down_proj"):
        sd[p + "mlp." + n + ".weight"] = getattr(layer, n).weight
torch.save({k: v.detach().clone() for k, v in sd.items()}, a.out)
