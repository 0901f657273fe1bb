#!/usr/bin/env python3
"""Writes host/src/hf/hf_arch_table.h: what convert_hf_to_gguf.py of a llama.cpp source tree registers, read
(never imported: no torch needed) from its conversion/*.py and gguf-py/gguf/{constants,tensor_mapping}.py:

  - every class name of TEXT_MODEL_MAP (conversion/__init__.py) with the Python class @ModelBase.register'ed
    for it and that class's gguf architecture (model_arch, through its bases);
  - TENSOR_NAMES (MODEL_TENSOR -> GGUF name, "{bid}" for the block), MODEL_TENSORS (which tensors each
    architecture has), TensorNameMap's mappings_cfg / block_mappings_cfg (checkpoint name -> MODEL_TENSOR)
    and arch_block_mappings_cfg (per-architecture overrides);
  - the "{arch}.*" hparam keys of Keys (constants.py), with their Python names.

  python3 tools/gen_hf_arch_table.py /work/oracle/llama.cpp > host/src/hf/hf_arch_table.h
"""
import ast, os, sys

root = sys.argv[1]
conv = os.path.join(root, "conversion")
gg = os.path.join(root, "gguf-py", "gguf")
parse = lambda p: ast.parse(open(p, encoding="utf-8").read(), p)


def attr_chain(n):
    parts = []
    while isinstance(n, ast.Attribute):
        parts.append(n.attr)
        n = n.value
    if isinstance(n, ast.Name):
        parts.append(n.id)
    return ".".join(reversed(parts))


def assigned(tree, name):
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(attr_chain(t) == name for t in targets):
                return n.value
    raise KeyError(name)


# ---- constants.py
const = parse(os.path.join(gg, "constants.py"))
arch_names = {attr_chain(k).split(".")[-1]: v.value for k, v in zip(*(lambda d: (d.keys, d.values))(assigned(const, "MODEL_ARCH_NAMES")))}
tensor_names = {attr_chain(k).split(".")[-1]: v.value for k, v in zip(*(lambda d: (d.keys, d.values))(assigned(const, "TENSOR_NAMES")))}
tensor_order = []
for c in const.body:
    if isinstance(c, ast.ClassDef) and c.name == "MODEL_TENSOR":
        tensor_order = [s.targets[0].id for s in c.body if isinstance(s, ast.Assign)]
tensor_order = [t for t in tensor_order if t in tensor_names]
tid = {t: i for i, t in enumerate(tensor_order)}
model_tensors = {}
d = assigned(const, "MODEL_TENSORS")
for k, v in zip(d.keys, d.values):
    model_tensors[attr_chain(k).split(".")[-1]] = [attr_chain(e).split(".")[-1] for e in v.elts]
keys = []
for c in const.body:
    if isinstance(c, ast.ClassDef) and c.name == "Keys":
        for sub in c.body:
            if isinstance(sub, ast.ClassDef):
                for s in sub.body:
                    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and "{arch}" in str(s.value.value):
                        keys.append((f"{sub.name}.{s.targets[0].id}", s.value.value))

# ---- tensor_mapping.py
tm = parse(os.path.join(gg, "tensor_mapping.py"))
def mapping(name):
    out = []
    d = assigned(tm, name)
    for k, v in zip(d.keys, d.values):
        t = attr_chain(k).split(".")[-1]
        out += [(s.value, t) for s in (v.elts if isinstance(v, ast.Tuple) else [v])]
    return out
maps = mapping("mappings_cfg")
block_maps = mapping("block_mappings_cfg")
arch_over = []
d = assigned(tm, "arch_block_mappings_cfg")
for k, v in zip(d.keys, d.values):
    a = attr_chain(k).split(".")[-1]
    for kk, vv in zip(v.keys, v.values):
        t = attr_chain(kk).split(".")[-1]
        arch_over += [(a, s.value, t) for s in (vv.elts if isinstance(vv, ast.Tuple) else [vv])]

# ---- conversion/: registered classes and their model_arch
init = parse(os.path.join(conv, "__init__.py"))
d = assigned(init, "TEXT_MODEL_MAP")
text_map = {k.value: v.value for k, v in zip(d.keys, d.values)}
classes, registered = {}, {}
for fn in sorted(os.listdir(conv)):
    if not fn.endswith(".py"):
        continue
    for c in parse(os.path.join(conv, fn)).body:
        if not isinstance(c, ast.ClassDef):
            continue
        arch = None
        for s in c.body:
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                t = s.targets[0] if isinstance(s, ast.Assign) else s.target
                if isinstance(t, ast.Name) and t.id == "model_arch" and s.value is not None:
                    arch = attr_chain(s.value).split(".")[-1]
        classes[c.name] = (arch, [attr_chain(b).split(".")[-1] for b in c.bases], fn[:-3])
        for dec in c.decorator_list:
            if isinstance(dec, ast.Call) and attr_chain(dec.func) == "ModelBase.register":
                for a in dec.args:
                    if isinstance(a, ast.Constant):
                        registered.setdefault(a.value, []).append(c.name)


def arch_of(cls, seen=()):
    if cls not in classes or cls in seen:
        return None
    a, bases, _ = classes[cls]
    if a is not None:
        return a
    for b in bases:
        r = arch_of(b, seen + (cls,))
        if r is not None:
            return r
    return None


rows, missing = [], []
for name in sorted(text_map):
    # the class registered under this name in the module TEXT_MODEL_MAP names (the last one wins)
    cands = [c for c in registered.get(name, []) if classes[c][2] == text_map[name]] or registered.get(name, [])
    py = cands[-1] if cands else None
    a = arch_of(py) if py else None
    if a is None or a not in arch_names:
        missing.append(name)
        continue
    rows.append((name, arch_names[a], py, text_map[name]))

# ---- output
q = lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
o = []
w = o.append
w("/* SPDX-License-Identifier: MIT */")
w("/* Generated by tools/gen_hf_arch_table.py from llama.cpp's conversion/ and gguf-py/: do not edit.")
w(" *")
w(f" * {len(rows)} of the {len(text_map)} TEXT_MODEL_MAP classes of convert_hf_to_gguf.py resolve to a gguf")
w(f" * architecture by name{'; not: ' + ', '.join(missing) if missing else ''}.")
w(" * Included by hf_table.c only. */")
w("#ifndef ANVIL_HOST_HF_ARCH_TABLE_H")
w("#define ANVIL_HOST_HF_ARCH_TABLE_H")
w("")
w("/* clang-format off */")
w(f"#define HF_TABLE_N_TEXT_CLASSES {len(text_map)}")
w(f"#define HF_TABLE_N_TENSORS {len(tensor_order)}")
w("")
w("/* TEXT_MODEL_MAP class -> (gguf architecture, Python class, conversion module), sorted by class. */")
w("static const hf_table_class k_hf_classes[] = {")
for r in rows:
    w(f"    {{ {q(r[0])}, {q(r[1])}, {q(r[2])}, {q(r[3])} }},")
w("};")
w("")
w("/* TENSOR_NAMES, in MODEL_TENSOR order (the ids below index this). */")
w("static const char *const k_hf_tensor_names[HF_TABLE_N_TENSORS] = {")
for t in tensor_order:
    w(f"    /* {tid[t]:4d} {t} */ {q(tensor_names[t])},")
w("};")
w("")
w("/* TensorNameMap: checkpoint name (\"{bid}\" = the block) -> MODEL_TENSOR id; block: from block_mappings_cfg. */")
w("static const hf_table_map k_hf_maps[] = {")
for s, t in maps:
    if t in tid:
        w(f"    {{ {q(s)}, {tid[t]}, 0 }},")
for s, t in block_maps:
    if t in tid:
        w(f"    {{ {q(s)}, {tid[t]}, 1 }},")
w("};")
w("")
w("/* arch_block_mappings_cfg: per-architecture block entries that replace the general ones. */")
w("static const hf_table_arch_map k_hf_arch_maps[] = {")
for a, s, t in arch_over:
    if t in tid and a in arch_names:
        w(f"    {{ {q(arch_names[a])}, {q(s)}, {tid[t]} }},")
w("};")
w("")
w("/* MODEL_TENSORS: the tensor ids each gguf architecture has (-1 ends each list). */")
w("static const short k_hf_arch_tensor_ids[] = {")
offs, at = [], 0
for a in model_tensors:
    if a not in arch_names:
        continue
    ids = [tid[t] for t in model_tensors[a] if t in tid]
    offs.append((arch_names[a], at))
    w(f"    /* {arch_names[a]} */ " + ", ".join(str(i) for i in ids) + ("," if ids else "") + " -1,")
    at += len(ids) + 1
w("};")
w("static const hf_table_arch_tensors k_hf_arch_tensors[] = {")
for a, off in offs:
    w(f"    {{ {q(a)}, {off} }},")
w("};")
w("")
w("/* Keys (constants.py): the per-architecture hparam keys. */")
w("static const hf_table_key k_hf_keys[] = {")
for n, k in keys:
    w(f"    {{ {q(n)}, {q(k)} }},")
w("};")
w("/* clang-format on */")
w("")
w("#endif")
print("\n".join(o))
print(f"{len(rows)} of {len(text_map)} classes; missing: {missing}", file=sys.stderr)
