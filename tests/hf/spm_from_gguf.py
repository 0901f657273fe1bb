"""Rebuild a SentencePiece tokenizer.model from a vocab GGUF that llama.cpp's converter wrote from one (its
tokenizer.ggml.tokens / scores / token_type, the pieces in id order), e.g. llama.cpp's
models/ggml-vocab-llama-spm.gguf: Llama 2's 32000 pieces, the vocabulary Phi-3 ships. The ModelProto holds the
pieces (piece, score, type; NORMAL left implicit), a trainer_spec (model_type BPE, byte_fallback, unk/bos/eos ids 0/1/2) and an
identity normalizer_spec: enough for SentencePieceProcessor to load it and give back every piece, score and type.
usage: spm_from_gguf.py VOCAB.gguf OUT.model [N]   (N: the first N tokens; default all)
needs gguf-py (PYTHONPATH=LLAMA_SRC/gguf-py) and numpy.
"""
import struct, sys
import gguf

r = gguf.GGUFReader(sys.argv[1])
toks, scores, types = (r.fields["tokenizer.ggml." + k] for k in ("tokens", "scores", "token_type"))
n = int(sys.argv[3]) if len(sys.argv) > 3 else len(toks.data)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


out = bytearray()
for i in range(n):
    text = bytes(toks.parts[toks.data[i]])
    score = float(scores.parts[scores.data[i]][0])
    typ = int(types.parts[types.data[i]][0])
    msg = field(1, 2, text) + field(2, 5, struct.pack("<f", score))
    if typ != 1:
        msg += field(3, 0, varint(typ))
    out += field(1, 2, msg)
trainer = field(3, 0, varint(2)) + field(35, 0, varint(1)) + field(40, 0, varint(0)) + field(41, 0, varint(1)) + field(42, 0, varint(2))
out += field(2, 2, trainer)
out += field(3, 2, field(1, 2, b"identity"))
open(sys.argv[2], "wb").write(bytes(out))
print(sys.argv[2], n, "pieces")
