#!/usr/bin/env python3
"""trace_check: validate a file against the Trace Event Format (Google's "Trace Event Format"
document, JSON Object Format) as far as cosched writes it, then print a summary as JSON for the
test's own checks. Exit 1, naming the first event that breaks a rule, when the file is invalid.

Rules checked: a JSON object with a "traceEvents" array (and optional "displayTimeUnit" "ms" or
"ns", "otherData" object); every event an object with a string "name", a known "ph", integer
"pid" and "tid"; ts a number (microseconds) on every event but metadata; "X" a "dur" >= 0; "i"
a scope "s" of "g", "p" or "t"; "C" numeric args; "M" one of the metadata names with its args;
"args", where present, an object."""
import json
import sys

KNOWN_PH = set("BEXiIC" "bne" "sft" "PNOD" "M" "Rc" "(" ")")
METADATA = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
            "thread_sort_index": "sort_index", "process_labels": "labels"}


def fail(index, event, why):
    print(f"event {index} {json.dumps(event)[:200]}: {why}", file=sys.stderr)
    sys.exit(1)


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate(doc):
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(-1, doc if not isinstance(doc, dict) else {}, "not an object with a traceEvents array")
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        fail(-1, {}, "displayTimeUnit is neither ms nor ns")
    if not isinstance(doc.get("otherData", {}), dict):
        fail(-1, {}, "otherData is not an object")
    for i, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict):
            fail(i, e, "not an object")
        if not isinstance(e.get("name"), str):
            fail(i, e, "no string name")
        ph = e.get("ph")
        if ph not in KNOWN_PH:
            fail(i, e, f"unknown phase {ph!r}")
        for key in ("pid", "tid"):
            if not isinstance(e.get(key), int) or isinstance(e.get(key), bool):
                fail(i, e, f"{key} is not an integer")
        if "args" in e and not isinstance(e["args"], dict):
            fail(i, e, "args is not an object")
        if ph == "M":
            arg = METADATA.get(e["name"])
            if arg is None or arg not in e.get("args", {}):
                fail(i, e, "metadata without its name or argument")
            continue
        if not number(e.get("ts")):
            fail(i, e, "ts is not a number")
        if ph == "X" and not (number(e.get("dur")) and e["dur"] >= 0):
            fail(i, e, "complete event without a dur >= 0")
        if ph in "iI" and e.get("s", "t") not in ("g", "p", "t"):
            fail(i, e, "instant event with a scope other than g, p, t")
        if ph == "C" and not (e.get("args") and all(number(v) for v in e["args"].values())):
            fail(i, e, "counter without numeric args")


def summarize(doc):
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    slices = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                    if e["ph"] == "X" and names.get(e["pid"]) == "experiment")
    by_process = {}
    for e in events:
        if e["ph"] != "M":
            by_process.setdefault(names.get(e["pid"], str(e["pid"])), []).append(e)
    return {
        "processes": sorted(set(names.values())),
        "repetitions": [s[2] for s in slices],
        "slices": slices,
        "phases": {p: sorted({e["name"] for e in evs if e["ph"] == "X"}) for p, evs in by_process.items()},
        "repetitions_seen": {p: sorted({e.get("args", {}).get("repetition") for e in evs
                                        if e["ph"] in "Xi" and e.get("args", {}).get("repetition")})
                             for p, evs in by_process.items()},
        "instants": [e["name"] for e in events if e["ph"] == "i"],
        "counters": sorted({(names.get(e["pid"]), e["name"]) for e in events if e["ph"] == "C"}),
        "origin": doc.get("otherData", {}).get("time_origin_unix"),
    }


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    validate(doc)
    json.dump(summarize(doc), sys.stdout)


if __name__ == "__main__":
    main()
