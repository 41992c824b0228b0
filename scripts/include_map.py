#!/usr/bin/env python3
"""The include structure of experiments/ in figures, for reviews of its layout.

    scripts/include_map.py [ROOT]     ROOT: a checkout (default: this one)

A room is a file's stem (experiments/run/trainer.h and .cc are one room); room A points at room B
when a file of A includes a header of B. Prints the .cc/.h files per folder, the two-way ties (A
points at B and B at A), the rooms in include circles, and the levels of the include graph (the
longest chain of rooms, each including the next).
"""
import collections, os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
base = os.path.join(root, 'experiments')
inc = re.compile(r'^\s*#\s*include\s*"experiments/([^"]+)\.(?:h|cc)"', re.M)
edges, per_folder = collections.defaultdict(set), collections.Counter()
for d, _, files in os.walk(base):
    for f in files:
        if not f.endswith(('.h', '.cc')):
            continue
        rel = os.path.relpath(os.path.join(d, f), base)
        folder = os.path.dirname(rel) or '(top level)'
        per_folder[folder] += 1
        room = os.path.splitext(rel)[0]
        edges[room]
        for target in inc.findall(open(os.path.join(d, f), encoding='utf-8', errors='replace').read()):
            if target != room:
                edges[room].add(target)

print('files (.h, .cc) per folder of experiments/:')
for folder, n in sorted(per_folder.items()):
    print(f'  {folder:14} {n}')
ties = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, ())})
print(f'two-way ties: {len(ties)}' + ''.join(f'\n  {a} <-> {b}' for a, b in ties))

# Strongly connected components (Tarjan), then the longest chain over their condensation.
index, low, stack, on, comp, n = {}, {}, [], set(), {}, [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        while True:
            w = stack.pop(); on.discard(w); comp[w] = v
            if w == v:
                break
sys.setrecursionlimit(10000)
for v in list(edges):
    if v not in index:
        visit(v)
members = collections.defaultdict(list)
for v, c in comp.items():
    members[c].append(v)
circles = [sorted(m) for m in members.values() if len(m) > 1]
print(f'include circles: {len(circles)}' + ''.join(f'\n  {" -> ".join(m)}' for m in circles))
level = {}
def depth(c):
    if c not in level:
        level[c] = 0
        level[c] = 1 + max((depth(comp[w]) for v in members[c] for w in edges.get(v, ()) if comp.get(w, w) != c
                            and w in comp), default=0)
    return level[c]
print(f'levels: {max(depth(c) for c in members)}')
