#!/usr/bin/env python3
# The file-level call graph of host/src, read from the layer objects' symbols
# (nm): file -> the files whose functions it calls (with -v), and every cycle
# (a strongly connected component of more than one file).
# Usage: scripts/host-calls.py BUILD_DIR [-v]
import subprocess, glob, os, sys
build = sys.argv[1]
objs = [o for o in glob.glob(build + '/host/CMakeFiles/anvil_*_objs.dir/**/*.o', recursive=True)]
defs, undefs = {}, {}
for o in objs:
    name = os.path.basename(o)[:-4]
    out = subprocess.run(['nm', o], capture_output=True, text=True).stdout
    undefs[name] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'U':
            undefs[name].add(parts[1])
        elif len(parts) == 3 and parts[1] in 'TDRBC':
            defs[parts[2]] = name
graph = {n: sorted({defs[s] for s in u if s in defs and defs[s] != n}) for n, u in undefs.items()}
if '-v' in sys.argv:
    for n in sorted(graph): print(f'{n}: {" ".join(graph[n])}')
# Tarjan
idx, low, st, on, res, c = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in graph[v]:
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: res.append(sorted(comp))
for v in sorted(graph):
    if v not in idx: sc(v)
print('cycles:', len(res))
for r in res:
    print('  ' + ' <-> '.join(r) + '   edges: ' + '; '.join(f'{a}->{b}' for a in r for b in graph[a] if b in r))
