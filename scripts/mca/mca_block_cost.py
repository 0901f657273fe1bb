#!/usr/bin/env python3
"""Static throughput estimate of a kernel's block loop with llvm-mca.

    mca_block_cost.py OBJECT_OR_SO FUNCTION ROWS [--ggml]

Finds FUNCTION's loops in the disassembly (objdump), takes the smallest loop
that contains inner loops as the block loop and the inner ones as the
per-row loops, and prices them with llvm-mca's icelake-server model:
cycles per block = body + ROWS x inner. With --ggml (or when there is no
inner loop) the largest innermost loop is priced alone (ggml's vec_dot
runs one row, one block per iteration). FUNCTION#N picks the N-th symbol of
that name. A model, not a measurement: no memory, no branch effects. Used
where no AVX-512 CPU is at hand (scripts/mca/avx512-estimate.sh).
"""
import re
import os
import subprocess
import sys
import tempfile
def disasm(lib, func):
    syms = subprocess.run(['nm', '-S', '--defined-only', lib], capture_output=True, text=True).stdout
    if not syms.strip():
        syms = subprocess.run(['nm', '-D', '-S', '--defined-only', lib], capture_output=True, text=True).stdout
    nth = 0
    if '#' in func:
        func, nth = func.split('#')[0], int(func.split('#')[1])
    hits = []
    for l in syms.splitlines():
        p = l.split()
        if len(p) == 4 and p[3] == func:
            hits.append((int(p[0], 16), int(p[1], 16)))
    if not hits:
        sys.exit('no ' + func)
    hits.sort()
    start, size = hits[nth]
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', '--start-address=%#x' % start,
                          '--stop-address=%#x' % (start + size), lib], capture_output=True, text=True).stdout
    ins = []
    for l in out.splitlines():
        m = re.match(r'\s+([0-9a-f]+):\s+(.*)', l)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).split('#')[0].strip()))
    return ins
def loops(ins):
    res = []
    for i, (a, t) in enumerate(ins):
        m = re.match(r'(j\w+)\s+([0-9a-f]+)', t)
        if m and m.group(1) != 'jmp' or (m and m.group(1) == 'jmp'):
            if not m: continue
            tgt = int(m.group(2), 16)
            if tgt < a:
                j = [k for k, (b, _) in enumerate(ins) if b == tgt]
                if j:
                    body = ins[j[0]:i + 1]
                    # innermost: no other backward jump inside
                    res.append(body)
    return res

def innermost(ls):
    out=[]
    for b in ls:
        s,e=b[0][0],b[-1][0]
        if not any((c[0][0]>=s and c[-1][0]<=e) and (c[0][0],c[-1][0])!=(s,e) for c in ls):
            out.append(b)
    return out
def mca(body, cpu='icelake-server'):
    txt='\n'.join(t for a,t in body[:-1] if not re.match(r'j\w+\s',t))+'\n'
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'loop.s')
        with open(path, 'w') as f:
            f.write(txt)
        o=subprocess.run(['llvm-mca','-mcpu='+cpu,'-iterations=200',path],capture_output=True,text=True).stdout
    tc=int(re.search(r'Total Cycles:\s+(\d+)',o).group(1))
    return tc/200.0

lib, func, R = sys.argv[1], sys.argv[2], int(sys.argv[3])
ggml = '--ggml' in sys.argv[4:]
ins = disasm(lib, func)
ls = loops(ins)
inner = innermost(ls)
# the block loop: the smallest loop that strictly contains an inner loop
outer = [b for b in ls if b not in inner]
outer.sort(key=len)
if ggml or not outer:
    b = max(inner, key=len); print(func, 'single loop', len(b), '%.1f cycles/block' % mca(b)); sys.exit()
o = outer[0]; s, e = o[0][0], o[-1][0]
ins_in = [b for b in inner if b[0][0] >= s and b[-1][0] <= e]
inner_addrs = set(a for b in ins_in for a, _ in b)
rest = [x for x in o if x[0] not in inner_addrs]
c_rest = mca(rest + [(0, 'jmp 0')]) if len(rest) > 1 else 0
c_in = sum(mca(b) for b in ins_in)
print('%-14s outer %d instr (%.1f cyc) + %d inner loop(s) %d instr (%.1f cyc) x %d rows -> %.1f cycles per block for %d rows = %.2f per row-block' % (
      func, len(rest), c_rest, len(ins_in), sum(len(b) for b in ins_in), c_in, R, c_rest + R * c_in, R, (c_rest + R * c_in) / R))
