#!/usr/bin/env python3
# The file-level call graph of host/ (host/src and the CLI, host/cli), read
# from the object files' symbols (nm): a file calls another when its object
# takes a symbol (function or data, `U` in nm) that the other's object
# defines. A knot is a strongly connected component of more than one file:
# files that reach each other, so none can be read, tested or moved without
# the others. host/ has none, and this check keeps it so (ctest host_calls,
# label layout).
#
#   scripts/host-calls.py BUILD_DIR        print the knots; exit 1 if any
#   scripts/host-calls.py BUILD_DIR -v     and the graph: file -> the files
#                                          whose symbols it takes
#
# BUILD_DIR is a configured and built CMake build folder (the objects of
# the anvil_<folder>_objs libraries and of anvil_cli). Needs python3 and nm
# (NM in the environment picks another).
import glob, os, re, subprocess, sys

if len(sys.argv) < 2 or sys.argv[1].startswith('-'):
    sys.exit('usage: scripts/host-calls.py BUILD_DIR [-v]')
build = sys.argv[1]
verbose = '-v' in sys.argv[2:]
nm = os.environ.get('NM', 'nm')

objs = sorted(glob.glob(os.path.join(build, 'host/CMakeFiles/anvil_*_objs.dir/**/*.o'), recursive=True) +
              glob.glob(os.path.join(build, 'host/CMakeFiles/anvil_cli.dir/**/*.o'), recursive=True))
if not objs:
    sys.exit('host-calls: no host objects under %s/host/CMakeFiles; build first '
             '(cmake --build %s --target anvil_internal anvil_cli)' % (build, build))


def source_of(o):
    """host/src/quantize/quantize_plan.c for .../anvil_quantize_objs.dir/src/quantize/quantize_plan.c.o"""
    rel = re.sub(r'^.*?\.dir/', '', o.replace(os.sep, '/'))
    return 'host/' + re.sub(r'\.o$', '', rel)


defs, undefs = {}, {}
for o in objs:
    name = source_of(o)
    r = subprocess.run([nm, o], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('host-calls: %s %s failed: %s' % (nm, o, r.stderr.strip()))
    undefs[name] = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'U':
            undefs[name].add(parts[1])
        elif len(parts) == 3 and parts[1] in 'TDRBCWV':
            defs[parts[2]] = name
graph = {n: sorted({defs[s] for s in u if s in defs and defs[s] != n}) for n, u in undefs.items()}
if verbose:
    for n in sorted(graph):
        print('%s: %s' % (n, ' '.join(graph[n])))

# Tarjan's strongly connected components, iterative.
index, low, stack, on, knots, counter = {}, {}, [], set(), [], 0
for root in sorted(graph):
    if root in index:
        continue
    work = [(root, 0)]
    while work:
        v, i = work.pop()
        if i == 0:
            index[v] = low[v] = counter
            counter += 1
            stack.append(v)
            on.add(v)
        recurse = False
        for j in range(i, len(graph[v])):
            w = graph[v][j]
            if w not in index:
                work.append((v, j + 1))
                work.append((w, 0))
                recurse = True
                break
            if w in on:
                low[v] = min(low[v], index[w])
        if recurse:
            continue
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                knots.append(sorted(comp))
        if work:
            parent = work[-1][0]
            low[parent] = min(low[parent], low[v])

files = sum(len(k) for k in knots)
print('host-calls: %d files, %d knots (%d files in knots)' % (len(graph), len(knots), files))
for k in knots:
    print('  knot of %d: %s' % (len(k), ' '.join(k)))
    for a in k:
        inside = [b for b in graph[a] if b in k]
        print('    %s -> %s' % (a, ' '.join(inside)))
if knots:
    print('host-calls: calls must go one way between files; move the shared piece below both', file=sys.stderr)
    sys.exit(1)
