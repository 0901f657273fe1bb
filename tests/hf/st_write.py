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
