#!/usr/bin/env python3
"""granflow's modules import each other without loops (issue 32): the graph of src/<module>/
folders, an edge for every #include of another module's header (the public headers of
include/granflow/ belong to the module that implements them), has no cycle; and the public
headers include only public headers. Prints the order of the modules from the bottom up.

    tests/module_graph.py SOURCE_DIR
"""
import os
import re
import sys

src_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
src = os.path.join(src_dir, "src")
pub_dir = os.path.join(src_dir, "include", "granflow")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/([a-z_0-9]+)\.h"', re.M)

modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
# The module of each public header: the folder holding its implementation (<name>.c).
public = {}
for h in os.listdir(pub_dir):
    name = h[:-2]
    homes = [m for m in modules if os.path.exists(os.path.join(src, m, name + ".c"))]
    if len(homes) != 1:
        sys.exit(f"include/granflow/{h}: no single module implements it ({homes})")
    public[name] = homes[0]

edges = {m: {} for m in modules}
problems = []
for m in modules:
    for f in sorted(os.listdir(os.path.join(src, m))):
        text = open(os.path.join(src, m, f), encoding="utf-8").read()
        for folder, name in INCLUDE.findall(text):
            target = public.get(name) if folder == "granflow" else folder
            if target is None:
                problems.append(f"src/{m}/{f} includes granflow/{name}.h, not a public header")
            elif target not in edges:
                problems.append(f"src/{m}/{f} includes {folder}/{name}.h of no module")
            elif target != m:
                edges[m].setdefault(target, []).append(f"src/{m}/{f} -> {folder}/{name}.h")
for h in os.listdir(pub_dir):
    text = open(os.path.join(pub_dir, h), encoding="utf-8").read()
    for folder, name in INCLUDE.findall(text):
        if folder != "granflow":
            problems.append(f"include/granflow/{h} includes the internal {folder}/{name}.h")

# Depth-first search for a cycle; the post-order gives the modules from the bottom up.
state, order, cycle = {}, [], []


def visit(m, path):
    state[m] = 1
    for t in sorted(edges[m]):
        if state.get(t) == 1 and not cycle:
            cycle.extend(path[path.index(t):] + [t])
        elif t not in state:
            visit(t, path + [t])
    state[m] = 2
    order.append(m)


for m in modules:
    if m not in state:
        visit(m, [m])
if cycle:
    lines = [f"  {a} -> {b}: {edges[a][b][0]}" for a, b in zip(cycle, cycle[1:])]
    problems.append("an import loop: " + " -> ".join(cycle) + "\n" + "\n".join(lines))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("modules from the bottom up: " + ", ".join(order))
