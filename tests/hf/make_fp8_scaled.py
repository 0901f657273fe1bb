"""Give float weights of an FP8 checkpoint a *_scale_inv too (Python standard library only).

usage: make_fp8_scaled.py FP8_DIR OUT_DIR

FP8_DIR is make_fp8.py's fp8 folder (quantization_config fp8, weight_block_size [32, 32]). OUT_DIR gets the
same model where model.embed_tokens.weight (BF16) has an F32 block scale "model.embed_tokens.weight_scale_inv"
and lm_head.weight (BF16) one of its own, with values that are not powers of two, so the float32 products
round: convert_hf_to_gguf.py's dequant_simple multiplies every weight that has a scale, whatever its dtype,
and anvil must write the same bytes (the hf parity family, tests/hf/fp8).
"""
import json, os, shutil, struct, sys

src, out = sys.argv[1], sys.argv[2]
BLOCK = 32
os.makedirs(out, exist_ok=True)
for f in os.listdir(src):
    if f != "model.safetensors":
        shutil.copy(os.path.join(src, f), os.path.join(out, f))

b = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n])
data = b[8 + n:]
tensors = {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
           for k, v in hdr.items() if k != "__metadata__"}

rows, cols = tensors["model.embed_tokens.weight"][1]
sr, sc = -(-rows // BLOCK), -(-cols // BLOCK)
vals = [1.1 + 0.37 * i for i in range(sr * sc)]
tensors["model.embed_tokens.weight_scale_inv"] = ("F32", [sr, sc], struct.pack("<%df" % len(vals), *vals))
vals = [0.3 + 0.11 * i for i in range(sr * sc)]
tensors["lm_head.weight_scale_inv"] = ("F32", [sr, sc], struct.pack("<%df" % len(vals), *vals))

h, blobs, off = {}, [], 0
for k in sorted(tensors):
    dt, shape, raw = tensors[k]
    h[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
hj = json.dumps(h, separators=(",", ":")).encode()
hj += b" " * ((8 - len(hj) % 8) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(hj)))
    f.write(hj)
    f.write(b"".join(blobs))
