#!/usr/bin/env python3
"""link_cycles: fails (TAP "not ok") when the modules of daemon/ call each other in a circle, each
subfolder taken as one module and each file at the top as one. Module A uses B when A's object file
needs a symbol B's defines (nm); this is the graph of calls and shared data, which shows the
circles the include graph hides (a function declared in one header and defined in another file, a
callback named instead of passed). A module is a .c file and its .h, as in include_cycles.py, whose
graph code this test shares. The object files are the build's (COSCHED_BUILD_ROOT, its
compile_commands.json says which source each comes from); without them the test is skipped.
The figures follow as TAP comments: modules, layers (a circle taken as one module) and symbol
edges, with each subfolder one module and file by file; a circle file by file inside a subfolder
is reported there, not failed (docs/structure.md keeps the figures)."""
import json
import os
import shutil
import subprocess
import sys

from include_cycles import by_subfolder, cycles, figures, modules, print_circles

folder = "daemon"


def objects(build):
    """[(object path, source path)] of folder's .c files as the build compiles them, or a reason
    why they cannot be read."""
    commands = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(commands):
        return None, f"no {commands}"
    with open(commands, encoding="utf-8") as f:
        entries = json.load(f)
    # The daemon's own targets; tests/ compiles some of its files again into the unit tests.
    found = [(os.path.join(build, e["output"]), os.path.realpath(os.path.join(e["directory"], e["file"])))
             for e in entries if e["output"].startswith(folder + "/")]
    missing = [o for o, _ in found if not os.path.isfile(o)]
    if not found or missing:
        return None, f"{len(missing)} of {len(found)} object files of {folder}/ not built"
    return found, None


def symbols(obj):
    """(symbols obj defines, symbols it needs from elsewhere), its global ones only."""
    out = subprocess.run(["nm", "-P", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        name, kind = line.split()[:2]
        # U: undefined; w, v: weak and undefined here
        (needed if kind in ("U", "w", "v") else defined).add(name)
    return defined, needed


def graph(found, objs):
    """{module: modules whose symbols it uses} over the modules that have an object file."""
    module_of = {os.path.realpath(p): m for m, paths in found.items() for p in paths}
    home, needs = {}, {}
    for obj, source in objs:
        m = module_of[source]
        defined, needed = symbols(obj)
        home.update(dict.fromkeys(defined, m))
        needs.setdefault(m, set()).update(needed)
    return {m: {home[s] for s in needed if s in home} - {m} for m, needed in needs.items()}


def report(label, edges, circles):
    """The graph's figures, and its circles with the edges inside them, as TAP comments."""
    print(f"# {figures(label, edges, 'symbol')}, {len(circles)} circle{'' if len(circles) == 1 else 's'}")
    print_circles(circles, edges)


def main():
    build = os.environ.get("COSCHED_BUILD_ROOT")
    objs, why = objects(build) if build else (None, "COSCHED_BUILD_ROOT not set")
    if not why and not shutil.which("nm"):
        why = "no nm on PATH"
    if why:
        print(f"1..0 # SKIP {why}")
        return 0
    found = modules(folder)
    edges = graph(found, objs)
    merged = by_subfolder(folder, found, edges)
    circles = cycles(merged)
    if circles:
        print(f"not ok 1 - {folder}/: modules call each other in a circle (each subfolder one module)")
    else:
        print(f"ok 1 - {folder}/: no symbol circle among its {len(merged)} modules (each subfolder one module)")
    report("subfolders as one", merged, circles)
    report("files", edges, cycles(edges))
    print("1..1")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
