#!/usr/bin/env python3
"""unique_names: fails (TAP "not ok") when two files of the tree answer to one name, so that an
#include, a grep or a debugger's file name could mean either. Checked:
  1. every header's include guard is made of its path (GUARD_RULE below), and its #define
     repeats its #ifndef;
  2. no two headers share a guard: the one included second would compile to nothing;
  3. no two .c files, and no two .h files, of the source folders (SOURCE_FOLDERS) share a
     basename, main.c excepted (ALLOWED_TWICE says why).
The guard's rule leaves out the folder words it likes, so a file moved into a subfolder keeps
its guard; check 2 is what keeps two of them apart."""
import itertools
import os
import re
import subprocess
import sys

root = os.environ.get("COSCHED_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GUARD_RULE = ("COSCHED_, then none, some or all of its folders' words in order, then its name, then _H "
              "(a word is the folder's name or its prefix: trainer/ TRAIN, tests/ TEST; "
              "COSCHED_COSCHED_ is written COSCHED_)")
PREFIXES = {"trainer": "TRAIN", "tests": "TEST"}

# Check 3's folders: the programs' and libraries' code. tests/ is left out (its files are named
# after what they test).
SOURCE_FOLDERS = ["client", "daemon", "libcosched", "noise", "proto", "topology", "trainer"]
ALLOWED_TWICE = {
    "main.c": "each program's entry point (cosched, coschedd, cosched-noise, cosched-train), named by its folder",
}

ifndef = re.compile(r"^\s*#\s*ifndef\s+(\w+)", re.M)
define = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)


def tracked_files():
    """Paths from the root of the tracked files of a clone; without git (a source tarball),
    what lies outside dot-folders and build folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
        paths = [p for p in out.stdout.decode().split("\0") if p]
        return sorted(p for p in paths if os.path.isfile(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")
                       and not os.path.exists(os.path.join(dirpath, d, "meson-private"))]
            paths += [os.path.relpath(os.path.join(dirpath, f), root) for f in files]
        return sorted(paths)


def word(s):
    return re.sub(r"[^A-Za-z0-9]", "_", s).upper()


def guards_of(path):
    """Every guard GUARD_RULE allows for the header at `path`."""
    folders, name = path.split("/")[:-1], path.split("/")[-1][:-2]
    choices = [[None, word(f)] + ([PREFIXES[f]] if f in PREFIXES else []) for f in folders]
    allowed = set()
    for pick in itertools.product(*choices):
        parts = ["COSCHED"] + [w for w in pick if w] + [word(name), "H"]
        allowed.add("_".join(parts).replace("COSCHED_COSCHED_", "COSCHED_"))
    return allowed


def full_guard(path):
    """The guard with every folder's word, the one to suggest."""
    folders, name = path.split("/")[:-1], path.split("/")[-1][:-2]
    words = ["COSCHED"] + [PREFIXES.get(f, word(f)) for f in folders] + [word(name), "H"]
    return "_".join(words).replace("COSCHED_COSCHED_", "COSCHED_")


def guard(path):
    """(the #ifndef's name, the #define's after it), None where the file has none."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        text = f.read()
    m = ifndef.search(text)
    if not m:
        return None, None
    d = define.search(text, m.end())
    return m.group(1), d.group(1) if d else None


def report(n, ok, name, lines=()):
    print(f"{'ok' if ok else 'not ok'} {n} - {name}")
    for line in lines:
        print(f"#   {line}")


def main():
    files = tracked_files()
    headers = [p for p in files if p.endswith(".h")]
    if not headers:
        report(1, False, f"headers are found under {root}")
        print("1..1")
        return 1
    failed = 0

    # 1. each guard names its file
    owners, bad = {}, []
    for h in headers:
        name, defined = guard(h)
        if name is None:
            bad.append(f"{h}: no #ifndef guard")
            continue
        owners.setdefault(name, []).append(h)
        if name not in guards_of(h):
            bad.append(f"{h}: guard {name}, want one like {full_guard(h)}")
        if defined != name:
            bad.append(f"{h}: #ifndef {name} is followed by #define {defined}")
    report(1, not bad, f"the include guards of {len(headers)} headers are made of their paths", bad
           + ([f"the rule: {GUARD_RULE}"] if bad else []))
    failed += bool(bad)

    # 2. no guard twice
    shared = [f"{g}: {', '.join(paths)}" for g, paths in sorted(owners.items()) if len(paths) > 1]
    report(2, not shared, "no two headers share an include guard", shared
           + (["give each a word of its folder (COSCHED_NOISE_CLOCK_H)"] if shared else []))
    failed += bool(shared)

    # 3. no basename twice in the source folders
    sources = [p for p in files if p.split("/")[0] in SOURCE_FOLDERS and p.endswith((".c", ".h"))]
    by_name = {}
    for p in sources:
        by_name.setdefault(os.path.basename(p), []).append(p)
    twice = [f"{b}: {', '.join(paths)}" for b, paths in sorted(by_name.items())
             if len(paths) > 1 and b not in ALLOWED_TWICE]
    folders = ", ".join(f + "/" for f in SOURCE_FOLDERS)
    aside = ", ".join(ALLOWED_TWICE)
    report(3, not twice, f"no two of the {len(sources)} C files of {folders} share a name ({aside} aside)", twice
           + (["give one of them its folder's word (noise/clock.c became noise/noise_clock.c)"] if twice else []))
    failed += bool(twice)

    print("1..3")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
