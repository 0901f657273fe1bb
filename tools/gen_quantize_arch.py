#!/usr/bin/env python3
"""Writes host/src/quantize/quantize_arch_table.h: llama.cpp's architecture facts that
decide llama_model_quantize before its per-tensor rules run, read from the
oracle's source tree (src/llama-arch.cpp, src/llama-model.cpp,
src/models/*.cpp, src/models/models.h, src/llama-hparams.h).

Per architecture name: whether llama_model_create makes a model for it, the
keys its load_arch_hparams reads unconditionally as required (with the GGUF
type the loader insists on), and the tensor names its load_arch_tensors
creates (for the parity sweep's synthetic models).

  python3 tools/gen_quantize_arch.py LLAMA_CPP_SRC [OUT]

LLAMA_CPP_SRC: llama.cpp's source tree (the oracle's: /work/oracle/llama.cpp or
build/oracle/llama.cpp after `make oracle`). OUT: the header to write, by
default host/src/quantize/quantize_arch_table.h of this checkout; '-' writes
to stdout. The header says it is generated ("do not edit") in its first lines:
scripts/check-format.sh leaves such files as their generator wrote them.
"""
import os, re, sys

if len(sys.argv) not in (2, 3):
    sys.exit('usage: tools/gen_quantize_arch.py LLAMA_CPP_SRC [OUT]')
root = sys.argv[1]
out_path = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', 'host', 'src', 'quantize', 'quantize_arch_table.h')
lines = []
def emit(s=''):
    lines.append(s)
src = lambda p: open(os.path.join(root, p)).read()
arch_cpp = src('src/llama-arch.cpp')
model_cpp = src('src/llama-model.cpp')
models_h = src('src/models/models.h')
hparams_h = src('src/llama-hparams.h')

def table(name):
    m = re.search(r'%s\s*=\s*\{(.*?)\n\};' % name, arch_cpp, re.S)
    return dict(re.findall(r'\{\s*(\w+)\s*,\s*"([^"]*)"\s*\}', m.group(1)))

arch_names = table('LLM_ARCH_NAMES')   # enum -> name, in enum order below
kv_names = table('LLM_KV_NAMES')
tensor_names = table('LLM_TENSOR_NAMES')
arch_order = re.findall(r'\{\s*(LLM_ARCH_\w+)\s*,\s*"', re.search(r'LLM_ARCH_NAMES\s*=\s*\{(.*?)\n\};', arch_cpp, re.S).group(1))

# llama_model_mapping: arch -> class
body = re.search(r'static llama_model \* llama_model_mapping\(.*?\n\}\n', model_cpp, re.S).group(0)
arch_class = {}
pending = []
for line in body.splitlines():
    for a in re.findall(r'case (LLM_ARCH_\w+):', line):
        pending.append(a)
    m = re.search(r'return new (\w+)\(', line)
    if m:
        for a in pending:
            arch_class[a] = m.group(1)
        pending = []

bases = dict(re.findall(r'struct (llama_model_\w+)\s*:\s*public (llama_model_\w+)', models_h))

def find_fn(cls, fn):
    pat = re.compile(r'void %s::%s\([^)]*\)\s*\{' % (cls, fn))
    for f in sorted(os.listdir(os.path.join(root, 'src/models'))):
        if not f.endswith('.cpp'):
            continue
        text = src('src/models/' + f)
        m = pat.search(text)
        if m:
            i = m.end(); depth = 1
            while depth:
                depth += {'{': 1, '}': -1}.get(text[i], 0); i += 1
            return text[m.end():i - 1]
    if cls in bases:
        return find_fn(bases[cls], fn)
    return ''

cxx_types = {}
for text in (hparams_h, models_h):
    for t, n in re.findall(r'^\s*(?:std::array<\s*)?([\w:]+)[\w<>, :]*?\s+(\w+)\s*(?:=[^;]*)?;', text, re.M):
        cxx_types.setdefault(n, t)

def gguf_type(expr, body, fn_name, rest):
    if fn_name in ('get_key_or_arr',):
        # a scalar (its type letter follows) or an array of the layer count / of another count
        return ('A' if 'n_layer' in rest else 'R') + gguf_type(expr, body, 'get_key', rest)
    if fn_name == 'get_arr':
        return 'a'
    if fn_name == 'get_arr_n':
        return 'a'
    name = re.sub(r'\[.*', '', expr.strip()).split('.')[-1].split('->')[-1]
    m = re.search(r'([\w:]+)\s+%s\s*(?:=|;|\{)' % re.escape(name), body)
    t = m.group(1) if m else cxx_types.get(name, 'uint32_t')
    return {'float': 'f', 'bool': 'b', 'std::string': 's', 'int32_t': 'i', 'int': 'i', 'double': 'd',
            'uint64_t': 'U', 'uint8_t': 'u8'}.get(t, 'u')

def call_args(body, start):
    """The argument list of the call whose '(' is at start, split at top-level commas."""
    depth, i, args, cur = 0, start, [], ''
    while i < len(body):
        ch = body[i]
        if ch == '(':
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch == ')':
            depth -= 1
            if depth == 0:
                args.append(cur.strip())
                return args
        if ch == ',' and depth == 1:
            args.append(cur.strip()); cur = ''
        else:
            cur += ch
        i += 1
    return args

def required_keys(body):
    keys = []
    call = re.compile(r'ml\.(get_key_or_arr|get_key|get_arr_n|get_arr)\(')
    for m in call.finditer(body):
        pre = body[:m.start()]
        depth = pre.count('{') - pre.count('}')
        line = pre[pre.rfind('\n') + 1:]
        if depth != 0 or re.search(r'\bif\b|\|\||&&|\?|=', line):
            continue
        args = call_args(body, m.end() - 1)
        if len(args) < 2 or not args[0].startswith('LLM_KV_'):
            continue
        rest = ', '.join(args[2:])
        if any(a.endswith('false') for a in args[2:]):
            continue
        fmt = kv_names.get(args[0])
        if fmt is None:
            continue
        keys.append((gguf_type(args[1], body, m.group(1), rest), fmt))
    return keys

def tensors(body):
    out = []
    if 'create_tensor_qkv(' in body:
        out += ['blk.%d.attn_q.weight', 'blk.%d.attn_k.weight', 'blk.%d.attn_v.weight']
    for t in re.findall(r'tn\(\s*(LLM_TENSOR_\w+)\s*,\s*"(\w+)"', body):
        fmt = tensor_names.get(t[0])
        if fmt is None:
            continue
        name = fmt + '.' + t[1]
        if name not in out:
            out.append(name)
    return out

def cstr(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'

emit('/* SPDX-License-Identifier: MIT */')
emit('/* Generated by tools/gen_quantize_arch.py from llama.cpp\'s source (the oracle\'s');
emit(' * release): do not edit. Per architecture name, in llama.cpp\'s table order:');
emit(' * whether llama_model_create makes a model for it, the keys its');
emit(' * load_arch_hparams requires (first character: the GGUF type the loader insists');
emit(' * on: u u32, i i32, U u64, f f32, d f64, b bool, s string, a array, A a u32 or an');
emit(' * array of one per layer, R a scalar or an array of any length; after A or R');
emit(' * the scalar\'s type letter), and the tensor names its load_arch_tensors makes. */');
emit('#ifndef ANVIL_HOST_QUANTIZE_ARCH_TABLE_H')
emit('#define ANVIL_HOST_QUANTIZE_ARCH_TABLE_H')
emit('')
emit('/* One line per architecture, as the generator writes it (not formatted). */')
emit('/* clang-format off */')
emit('')
emit('typedef struct qz_arch_row {')
emit('    const char *name;')
emit('    int supported;              /* llama_model_create makes a model */')
emit('    const char *const *keys;    /* required keys ("%s" is the name), NULL-ended */')
emit('    const char *const *tensors; /* usual tensor names ("%d": layer), NULL-ended */')
emit('} qz_arch_row;')
emit('')
rows = []
for a in arch_order:
    if a == 'LLM_ARCH_UNKNOWN':
        continue
    name = arch_names[a]
    cls = arch_class.get(a)
    ident = re.sub(r'\W', '_', name)
    keys = required_keys(find_fn(cls, 'load_arch_hparams')) if cls else []
    tens = tensors(find_fn(cls, 'load_arch_tensors')) if cls else []
    emit('static const char *const qz_keys_%s[] = { %s };' % (ident, ', '.join([cstr(t + f) for t, f in keys] + ['NULL'])))
    emit('static const char *const qz_tensors_%s[] = { %s };' % (ident, ', '.join([cstr(t) for t in tens] + ['NULL'])))
    rows.append('    { %s, %d, qz_keys_%s, qz_tensors_%s },' % (cstr(name), 1 if cls else 0, ident, ident))
emit('')
emit('static const qz_arch_row qz_arch_rows[] = {')
emit('\n'.join(rows))
emit('};')
emit('')
emit('#endif')

text = '\n'.join(lines) + '\n'
if out_path == '-':
    sys.stdout.write(text)
else:
    with open(out_path, 'w') as f:
        f.write(text)
