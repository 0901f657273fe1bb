"""Make block-scaled FP8 checkpoints from a BF16 one (Python standard library only).

usage: make_fp8.py SRC_DIR OUT_DIR

Writes OUT_DIR/fp8 (config.json with quantization_config fp8, weight_block_size [32, 32]; every 2-D
self_attn/mlp weight as F8_E4M3 plus an F32 "<name>_scale_inv" of power-of-two block scales),
OUT_DIR/deq (the same model in BF16 holding exactly the dequantized values: an E4M3 value times a power of
two has at most 4 significant bits, so BF16 holds it exactly) and OUT_DIR/noscale (fp8 with one scale
left out). `anvil convert` of fp8 and of deq must give the same tensors.
"""
import bisect, json, math, os, shutil, struct, sys

src, out = sys.argv[1], sys.argv[2]
BLOCK = 32

def read_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    data = b[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in hdr.items() if k != "__metadata__"}

def write_st(path, tensors):
    hdr, blobs, off = {}, [], 0
    for k in sorted(tensors):
        dt, shape, raw = tensors[k]
        hdr[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h); f.write(b"".join(blobs))

# the 127 positive finite E4M3FN values by code (0x00..0x7E)
E4M3 = [(m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7) for e in range(16) for m in range(8)][:127]

def to_e4m3(x):
    a = abs(x)
    i = bisect.bisect_left(E4M3, a)
    code = min((c for c in (i - 1, i) if 0 <= c < 127), key=lambda c: abs(E4M3[c] - a))
    return code | (0x80 if x < 0 and code != 0 else 0), math.copysign(E4M3[code], x) if code else 0.0

tensors = read_st(os.path.join(src, "model.safetensors"))
fp8, deq = {}, {}
for name, (dt, shape, raw) in tensors.items():
    quant = len(shape) == 2 and (".self_attn." in name or ".mlp." in name or ".linear_attn." in name) and dt == "BF16"
    if not quant:
        fp8[name] = deq[name] = (dt, shape, raw)
        continue
    rows, cols = shape
    vals = list(struct.unpack("<%df" % (len(raw) // 2), b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2))))
    sr, sc = -(-rows // BLOCK), -(-cols // BLOCK)
    scales = [0.0] * (sr * sc)
    for br in range(sr):
        for bc in range(sc):
            m = max(abs(vals[r * cols + c]) for r in range(br * BLOCK, min(rows, br * BLOCK + BLOCK))
                    for c in range(bc * BLOCK, min(cols, bc * BLOCK + BLOCK)))
            scales[br * sc + bc] = 2.0 ** math.ceil(math.log2(m / 448)) if m > 0 else 1.0
    codes, dq = bytearray(rows * cols), bytearray(rows * cols * 2)
    for r in range(rows):
        for c in range(cols):
            s = scales[(r // BLOCK) * sc + c // BLOCK]
            code, v = to_e4m3(vals[r * cols + c] / s)
            codes[r * cols + c] = code
            dq[(r * cols + c) * 2:(r * cols + c) * 2 + 2] = struct.pack("<f", v * s)[2:]
    fp8[name] = ("F8_E4M3", shape, bytes(codes))
    fp8[name + "_scale_inv"] = ("F32", [sr, sc], struct.pack("<%df" % len(scales), *scales))
    deq[name] = ("BF16", shape, bytes(dq))

cfg = json.load(open(os.path.join(src, "config.json")))
for d, t in (("fp8", fp8), ("deq", deq), ("noscale", fp8)):
    os.makedirs(os.path.join(out, d), exist_ok=True)
    for f in os.listdir(src):
        if f not in ("model.safetensors", "config.json") and not f.endswith(".gguf"):
            shutil.copy(os.path.join(src, f), os.path.join(out, d, f))
    c = dict(cfg)
    if d != "deq":
        c["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                    "weight_block_size": [BLOCK, BLOCK]}
    json.dump(c, open(os.path.join(out, d, "config.json"), "w"), indent=2)
    if d == "noscale":
        t = {k: v for k, v in t.items() if k != "model.layers.1.mlp.up_proj.weight_scale_inv"}
    write_st(os.path.join(out, d, "model.safetensors"), t)
