#!/usr/bin/env python3
"""include_cycles: fails (TAP "not ok") when the modules of cosched's core include each other in
a circle. A module is a .c file and its .h (runs.c + runs.h is "runs"; a component's
X_internal.h, shared by its X_*.c files, belongs to X); module A depends on B when
A's .c or .h includes B's header. Folders checked: daemon/ (with its subfolders), topology/,
proto/, libcosched/. A circle means neither module can be understood, or tested, without the
other: the dependency must point one way (a callback, or the shared part in a module of its own).
Each folder's figures follow as TAP comments: its modules, the layers they make (a module's layer
is one above the highest it includes) and the include edges, file by file and with each subfolder
taken as one module (docs/structure.md keeps daemon/'s before and after its folders)."""
import os
import re
import sys

root = os.environ.get("COSCHED_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
folders = ["daemon", "topology", "proto", "libcosched"]
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(folder):
    """{module name: [paths of its .c and .h]} for one folder tree."""
    found = {}
    for dirpath, _, files in os.walk(os.path.join(root, folder)):
        for f in files:
            if f.endswith((".c", ".h")):
                name = f[:-2].removesuffix("_internal")
                found.setdefault(f"{folder}:{name}", []).append(os.path.join(dirpath, f))
    return found


def graph(found):
    by_header = {os.path.basename(p): m for m, paths in found.items() for p in paths if p.endswith(".h")}
    edges = {m: set() for m in found}
    for m, paths in found.items():
        for p in paths:
            with open(p, encoding="utf-8") as src:
                for h in include.findall(src.read()):
                    target = by_header.get(os.path.basename(h))
                    if target and target != m:
                        edges[m].add(target)
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layers(edges):
    """How many layers an acyclic graph makes: a module includes only modules below its own."""
    depth = {}

    def of(v):
        if v not in depth:
            depth[v] = 0
            depth[v] = 1 + max((of(w) for w in edges[v]), default=0)
        return depth[v]

    return max((of(v) for v in edges), default=0)


def by_subfolder(folder, found, edges):
    """The same graph with each subfolder of folder one module."""
    def outer(m):
        sub = os.path.relpath(os.path.dirname(found[m][0]), os.path.join(root, folder))
        return m if sub == "." else f"{folder}:{sub.split(os.sep)[0]}/"

    return merge(edges, outer)


def merge(edges, outer):
    """The graph with the modules outer gives one name taken as one module."""
    merged = {outer(m): set() for m in edges}
    for m, targets in edges.items():
        merged[outer(m)] |= {outer(t) for t in targets} - {outer(m)}
    return merged


def condensed(edges):
    """The graph with each circle one module, so that it has layers."""
    circle_of = {m: " + ".join(c) for c in cycles(edges) for m in c}
    return merge(edges, lambda m: circle_of.get(m, m))


def figures(label, edges, kind="include"):
    layered = layers(condensed(edges))
    return f"{label}: {len(edges)} modules on {layered} layers, {sum(map(len, edges.values()))} {kind} edges"


def print_circles(circles, edges):
    """Each circle's modules, and the edges of each that stay inside it, as TAP comments."""
    for comp in circles:
        members = set(comp)
        print("#   " + ", ".join(m.split(":")[1] for m in comp))
        for m in comp:
            inside = sorted(t.split(":")[1] for t in edges[m] & members)
            print(f"#     {m.split(':')[1]} -> {', '.join(inside)}")


def main():
    failed = 0
    for i, folder in enumerate(folders, 1):
        found = modules(folder)
        edges = graph(found)
        circles = cycles(edges)
        if circles:
            failed += 1
            print(f"not ok {i} - {folder}/: modules include each other in a circle")
            print_circles(circles, edges)
        else:
            print(f"ok {i} - {folder}/: no include circle among its {len(found)} modules")
            print("# " + figures("files", edges))
            merged = by_subfolder(folder, found, edges)
            if len(merged) != len(edges):
                around = "; ".join(", ".join(c) for c in cycles(merged))
                print("# " + figures("subfolders as one", merged) + (f" (circles: {around})" if around else ""))
    print(f"1..{len(folders)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
