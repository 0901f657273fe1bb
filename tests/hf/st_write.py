"""st_write: what the checkpoint generators (make_*.py) share.

encode(dtype, x): a float32 array as the safetensors dtype named by
  dtype ("f32", "f16" or "bf16": rounded to nearest even, as torch's
  .to(bfloat16)); a uint8 array stays U8. Returns (dtype name, bytes).
write_shards(out, tensors, shards, dup=None): tensors maps a name to
  (dtype name, bytes, shape); written in insertion order split into
  `shards` files (model.safetensors, or model-0000K-of-0000N.safetensors
  with the index transformers writes), each file's tensors sorted by
  name; dup names a tensor written a second time, into a shard that does
  not hold it yet (a hostile case). Returns the total data bytes.
fp8_blocks(out, W, B, rng, quant): each 2-D weight k of W for which
  quant(k) holds stored as F8_E4M3 (round to nearest, saturating) with an
  F32 <k without .weight>.weight_scale_inv of ceil(rows/B) x ceil(cols/B)
  (partial edge blocks), DeepSeek-V3's release layout; other tensors are
  left to the caller. Fills out (name -> (dtype, bytes)) and returns
  {scale name: shape}.
"""
import json, os, struct
import numpy as np


def bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def encode(dtype, x):
    if x.dtype == np.uint8: return "U8", x.tobytes()
    if dtype == "f32": return "F32", x.astype("<f4").tobytes()
    if dtype == "f16": return "F16", x.astype("<f2").tobytes()
    return "BF16", bf16(x).tobytes()


def write_shards(out, tensors, shards, dup=None):
    names = list(tensors)
    per = (len(names) + shards - 1) // shards
    parts = [names[i:i + per] for i in range(0, len(names), per)]
    if dup:
        next(p for p in parts if dup not in p).append(dup)
    weight_map, total = {}, 0
    for pi, part in enumerate(parts):
        fn = "model.safetensors" if len(parts) == 1 else f"model-{pi + 1:05d}-of-{len(parts):05d}.safetensors"
        hdr, blobs, off = {}, [], 0
        for k in sorted(part):
            d, b, shape = tensors[k]
            hdr[k] = {"dtype": d, "shape": list(shape), "data_offsets": [off, off + len(b)]}
            blobs.append(b); off += len(b); weight_map[k] = fn
        hdr["__metadata__"] = {"format": "pt"}
        hj = json.dumps(hdr, separators=(",", ":")).encode()
        hj += b" " * ((8 - len(hj) % 8) % 8)
        with open(os.path.join(out, fn), "wb") as f:
            f.write(struct.pack("<Q", len(hj))); f.write(hj)
            for b in blobs: f.write(b)
        total += off
    if len(parts) > 1:
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    return total


# E4M3FN: the 127 non-negative finite values by code 0x00..0x7E
_E4M3 = np.array([(m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
                  for e in range(16) for m in range(8)][:127], dtype=np.float64)


def to_e4m3(x):
    ax = np.abs(x.astype(np.float64))
    i = np.clip(np.searchsorted(_E4M3, ax), 1, 126)
    lo, hi = _E4M3[i - 1], _E4M3[i]
    code = np.where(ax - lo <= hi - ax, i - 1, i)
    code = np.where(ax > _E4M3[126], 126, code)
    return (code | np.where((x < 0) & (code != 0), 0x80, 0)).astype(np.uint8)


def fp8_blocks(out, W, B, rng, quant):
    shapes = {}
    for k, x in W.items():
        if x.ndim != 2 or not quant(k):
            continue
        r, c = x.shape
        sr, sc = -(-r // B), -(-c // B)
        s = (0.0013 + 0.00041 * rng.random((sr, sc))).astype(np.float32)   # not powers of two
        full = np.repeat(np.repeat(s, B, 0), B, 1)[:r, :c]
        out[k] = ("F8_E4M3", to_e4m3(x / full).tobytes())
        name = k[:-len(".weight")] + ".weight_scale_inv"
        out[name] = ("F32", s.astype("<f4").tobytes())
        shapes[name] = [sr, sc]
    return shapes
