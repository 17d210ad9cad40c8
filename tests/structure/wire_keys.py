#!/usr/bin/env python3
"""wire_keys: fails (TAP "not ok") when a JSON key of the control protocol or of the run output is
spelled as a string literal in client/, daemon/, libcosched/ or proto/ instead of by its name in
proto/wire.h, proto/wire_reply.h or proto/run_output.h: a key spelled twice drifts apart
unnoticed. Checked: the key argument of json_object_get / _set / _set_new / _del and the keys of
json_pack / json_unpack formats. A file whose JSON is a format of its own (a state file, a report,
a Chrome trace) may keep its keys: ALLOWED says which, and why."""
import json
import os
import re
import sys

root = os.environ.get("COSCHED_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
folders = ["client", "daemon", "libcosched", "proto"]
headers = ["proto/wire.h", "proto/wire_reply.h", "proto/run_output.h"]

ALL = None  # every key of the file
TRACE = {"name", "ph", "pid", "tid", "ts", "dur", "s", "args", "sort_index", "traceEvents", "otherData",
         "displayTimeUnit", "time_origin_unix", "tool", "repetition", "seconds", "noise_mbs"}
# file: (why, keys it may read literally, keys it may write literally)
ALLOWED = {
    "daemon/state.c": ("the daemon's state file, written and read by state.c alone", ALL, ALL),
    "client/experiment/experiment_report.c": ("cosched experiment's summary.json and report", ALL, ALL),
    "client/experiment/experiment_sweep.c": ("the sweep's object of summary.json (its curve and answer)", set(), ALL),
    "client/cmd_slurm_conf.c": ("slurm-conf's own --json output and the topology JSON of topology/json_out.c",
                                ALL, ALL),
    "client/slurm_check.c": ("slurm-conf --check's own --json output", set(), ALL),
    "client/cmd_experiment.c": ("the experiment's design JSON and the topology JSON (gpus)",
                                {"configurations", "gpus"},
                                {"name", "noise", "placement", "plan", "topology", "trainer", "design",
                                 "configurations", "settings"}),
    # the trace's events carry the run output's mode and rate_mbs and the share changes' share and by
    # as their own args, under the same words
    "client/experiment/experiment_trace.c": ("the Chrome trace file the experiment writes and merges",
                                             TRACE, TRACE | {"mode", "rate_mbs", "share", "by"}),
    "client/output.c": ("the hint cosched adds to an error it prints", set(), {"hint"}),
}

OBJECT_CALLS = {"json_object_get": "read", "json_object_set": "write", "json_object_set_new": "write",
                "json_object_del": "write", "json_object_set_nocheck": "write",
                "json_object_set_new_nocheck": "write"}
PACK_CALLS = {"json_pack": (0, "write"), "json_pack_ex": (2, "write"), "json_unpack": (1, "read"),
              "json_unpack_ex": (3, "read")}
call = re.compile(r"\b(" + "|".join(list(OBJECT_CALLS) + list(PACK_CALLS)) + r")\s*\(")
literal = re.compile(r'\s*(?:"(?:[^"\\]|\\.)*"\s*)+$', re.S)


def strip_comments(s):
    """Blank out comments, keeping offsets (and so line numbers) and string literals."""
    out, i, q = list(s), 0, None
    while i < len(s):
        c = s[i]
        if q:
            if c == "\\":
                i += 2
                continue
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif s.startswith("/*", i) or s.startswith("//", i):
            end = s.find("*/", i) + 2 if s[i + 1] == "*" else s.find("\n", i)
            for k in range(i, end):
                if out[k] != "\n":
                    out[k] = " "
            i = end
            continue
        i += 1
    return "".join(out)


def arguments(s, i):
    """Spans of the arguments of the call whose '(' is at s[i]."""
    depth, spans, start, q = 0, [], i + 1, None
    while True:
        c = s[i]
        if q:
            if c == "\\":
                i += 2
                continue
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                spans.append((start, i))
                return spans
        elif c == "," and depth == 1:
            spans.append((start, i))
            start = i + 1
        i += 1


def value(text):
    """The string a literal (or adjacent literals) spells, or None for anything else."""
    if not literal.match(text):
        return None
    return "".join(json.loads(m) for m in re.findall(r'"(?:[^"\\]|\\.)*"', text))


def pack_keys(fmt, unpack):
    """Offsets, among the arguments after the format, of the object keys (jansson's pack syntax)."""
    keys, n, stack, i, key_next = [], 0, [], 0, False
    while i < len(fmt):
        c = fmt[i]
        i += 1
        if c in " \t\n:,":
            continue
        if c in "{[":
            stack.append(c)
            key_next = c == "{"
            continue
        if c in "}]":
            stack.pop()
            key_next = bool(stack) and stack[-1] == "{"
            continue
        if key_next and c in "!*":
            continue
        if key_next:
            keys.append(n)
            n += 1
            if unpack and fmt[i:i + 1] == "?":
                i += 1
            key_next = False
            continue
        if c == "s" and fmt[i:i + 1] in ("#", "%"):
            n += 1
            i += 1
        while fmt[i:i + 1] in ("?", "*"):
            i += 1
        n += 0 if c == "n" else 1
        key_next = bool(stack) and stack[-1] == "{"
    return keys


def literal_keys(path):
    """(line, key, read|write) for every key spelled as a literal in a jansson call of the file."""
    with open(path, encoding="utf-8") as src:
        s = strip_comments(src.read())
    found = []
    for m in call.finditer(s):
        name = m.group(1)
        args = arguments(s, m.end() - 1)
        if name in OBJECT_CALLS:
            spans, kind = args[1:2], OBJECT_CALLS[name]
        else:
            at, kind = PACK_CALLS[name]
            fmt = value(s[args[at][0]:args[at][1]]) if len(args) > at else None
            rest = args[at + 1:]
            spans = [rest[k] for k in pack_keys(fmt, name.startswith("json_unpack")) if k < len(rest)] if fmt else []
        for a, b in spans:
            key = value(s[a:b])
            if key is not None:
                found.append((s.count("\n", 0, a) + 1 + (s[a:b].count("\n", 0, len(s[a:b]) - len(s[a:b].lstrip()))),
                              key, kind))
    return found


def allowed(rel, key, kind):
    entry = ALLOWED.get(rel)
    if not entry:
        return False
    keys = entry[1] if kind == "read" else entry[2]
    return keys is ALL or key in keys


n, failed = 0, 0


def report(ok, name, lines=()):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {name}")
    for line in lines:
        print(f"#   {line}")


used = set()
for folder in folders:
    bad, files = [], 0
    for dirpath, _, names in os.walk(os.path.join(root, folder)):
        for f in sorted(names):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            files += 1
            for line, key, kind in literal_keys(path):
                if allowed(rel, key, kind):
                    used.add(rel)
                else:
                    bad.append(f'{rel}:{line}: "{key}" ({kind}): name it from {", ".join(headers)}')
    report(not bad, f"{folder}/: every JSON key of the protocol and the run output named from proto/ ({files} files)",
           bad)

stale = [f"{rel}: {why}" for rel, (why, _, _) in ALLOWED.items() if rel not in used]
report(not stale, "every file allowed its own keys still spells some (else its entry goes)", stale)

twice = []
for h in headers:
    with open(os.path.join(root, h), encoding="utf-8") as src:
        names = re.findall(r'^#define\s+((?:WIRE|RUNOUT)_\w+)\s+"([^"]*)"', src.read(), re.M)
    seen = {}
    for name, key in names:
        if name.startswith(("WIRE_R_", "RUNOUT_")) and not name.startswith("RUNOUT_EVENT_"):
            if key in seen:
                twice.append(f'{h}: "{key}" is both {seen[key]} and {name}')
            seen[key] = name
report(not twice, "each reply and run-output key has one name in its header", twice)

print(f"1..{n}")
sys.exit(1 if failed else 0)
