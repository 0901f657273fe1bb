#!/usr/bin/env python3
"""Write a 2.2 GB F16 llama GGUF in TinyLlama-1.1B's shape, for benchmarks.

The issues' speed goals name "the 2.2 GB test model", which is not in
../shared/testdata. This is its stand-in: TinyLlama-1.1B's hyperparameters
(22 layers, hidden 2048, feed-forward 5632, 32 query / 4 KV heads of 64,
rope base 10000, context 2048, RMS eps 1e-5) and the 32000-token llama
SentencePiece vocabulary copied from ../shared/testdata/ggml-vocab-llama-spm.gguf,
so the file has the real model's tensor shapes, size and tokenizer. The
weights are seeded Gaussian noise (std 0.02, norms 1): good for throughput
and wall-time figures, meaningless for quality. Written with llama.cpp's own
gguf-py writer, so llama.cpp loads it.

  /usr/bin/python3 scripts/make_tinyllama_shape.py OUT.gguf [--layers N] [--seed S]
Needs numpy and gguf-py (GGUF_PY, default build/oracle/llama.cpp/gguf-py).
"""
import argparse
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--vocab", default=os.path.join(os.path.dirname(__file__), "../../shared/testdata/ggml-vocab-llama-spm.gguf"))
    ap.add_argument("--gguf-py", default=os.environ.get("GGUF_PY", os.path.join(os.path.dirname(__file__), "../build/oracle/llama.cpp/gguf-py")))
    a = ap.parse_args()
    sys.path.insert(0, a.gguf_py)
    import gguf

    n_embd, n_ff, n_head, n_kv, n_vocab = 2048, 5632, 32, 4, 32000
    head_dim = n_embd // n_head
    src = gguf.GGUFReader(a.vocab)
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("TinyLlama-1.1B-shape")
    w.add_block_count(a.layers)
    w.add_context_length(2048)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_vocab_size(n_vocab)
    w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    f = src.fields
    w.add_token_list([bytes(f["tokenizer.ggml.tokens"].parts[i]) for i in f["tokenizer.ggml.tokens"].data])
    w.add_token_scores([float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data])
    w.add_token_types([int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    rng = np.random.default_rng(a.seed)

    def mat(rows, cols):  # numpy shape (rows, cols) = GGUF ne (cols, rows)
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    w.add_tensor("token_embd.weight", mat(n_vocab, n_embd))
    for i in range(a.layers):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", ones(n_embd))
        w.add_tensor(b + "attn_q.weight", mat(n_embd, n_embd))
        w.add_tensor(b + "attn_k.weight", mat(n_kv * head_dim, n_embd))
        w.add_tensor(b + "attn_v.weight", mat(n_kv * head_dim, n_embd))
        w.add_tensor(b + "attn_output.weight", mat(n_embd, n_embd))
        w.add_tensor(b + "ffn_norm.weight", ones(n_embd))
        w.add_tensor(b + "ffn_gate.weight", mat(n_ff, n_embd))
        w.add_tensor(b + "ffn_up.weight", mat(n_ff, n_embd))
        w.add_tensor(b + "ffn_down.weight", mat(n_embd, n_ff))
    w.add_tensor("output_norm.weight", ones(n_embd))
    w.add_tensor("output.weight", mat(n_vocab, n_embd))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


if __name__ == "__main__":
    main()
