#!/usr/bin/env python3
"""noise_transient: how long after a noise starts or stops a trainer's steps show it, per noise kind.

The blocked design of `cosched experiment` drops the steps that begin within a block's first
moments, because they may still see the previous setting; issue 43 asked that this be measured
rather than a fixed three steps. Here bench/step_probe (a memory-bound "step" of about 3 ms over a
64 MiB working set) runs on CPU 0 while cosched-noise plays a pattern on CPU 1 that switches its
kind on and off every --block seconds, timed by the noise's own phase lines, as the experiment
plays its blocks. Around every switch the probe's steps are binned by when they began (--bin),
each as the share of the way from the old level to the new (the median steps of the 0.5 s before
the switch and of the block's last 0.4 s), the median per bin (smoothed over three) over the switches where the noise had an
effect of 3 % or more (on the project's VM memory noise hurts in spells); the
transient is the first bin after which every bin stays within a quarter of the gap of the new
level. A kind with fewer than three such switches has no measurable effect, and no transient.

    bench/noise_transient.py [--kinds memory,cpu,io,network] [--pairs 12] [--block 1.5]
                             [--bin 0.01] [--build build] [--json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = {"memory": "memory", "cpu": "busy", "io": "io", "network": "network"}


def pattern(kind, pairs, block):
    mode = MODES[kind]
    lines = [f"{mode}:", "  full: {intensity: 1}", "patterns:", "  blocks:", "    repeat: 1", "    sequence:",
             f"      - {{mode: {mode}, config: full, seconds: 1.0}}"]  # a new process's first touch
    for _ in range(pairs):
        lines.append("      - {mode: idle, seconds: %.3f}" % block)
        lines.append(f"      - {{mode: {mode}, config: full, seconds: {block:.3f}}}")
    lines.append("      - {mode: idle, seconds: %.3f}" % block)
    return "\n".join(lines) + "\n"


def noise_argv(args, kind, path, tmp):
    argv = [f"{args.build}/noise/cosched-noise", "pattern", "--config", path, "blocks", "--report-every", "0"]
    if kind == "io":
        argv += ["--dir", tmp, "--max-bytes", "256M"]
    if kind == "network":
        argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2", "--mca", "btl",
                "self,tcp", "--mca", "btl_tcp_if_include", "lo", "taskset", "-c", "1"] + argv
    else:
        argv = ["taskset", "-c", "1"] + argv
    return argv


def switches(noise_out):
    """(time, on) of every switch after the first block, from the noise's phase lines (rank 0's)."""
    phases = []
    for line in noise_out.splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        if d.get("event") == "phase" and d.get("rank", 0) == 0:
            phases.append((d["start"], d.get("mode") != "idle"))
    phases.sort()
    return [(start, on) for start, on in phases[2:]]  # after the first touch and the first idle block


def measure(args, kind):
    tmp = tempfile.mkdtemp(prefix="cosched-transient-")
    try:
        path = f"{tmp}/blocks.yaml"
        with open(path, "w") as f:
            f.write(pattern(kind, args.pairs, args.block))
        seconds = 1 + (2 * args.pairs + 1) * args.block + 2
        with open(f"{tmp}/steps.txt", "w") as steps_file:  # a file: a pipe left unread would stall the probe
            probe = subprocess.Popen(["taskset", "-c", "0", f"{args.build}/bench/step_probe", str(seconds), "64",
                                      "300000"], stdout=steps_file, stderr=subprocess.DEVNULL)
            noise = subprocess.run(noise_argv(args, kind, path, tmp), capture_output=True, text=True)
            probe.wait()
        with open(f"{tmp}/steps.txt") as f:
            out = f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    steps = [(float(a) - float(b), float(b)) for a, b in (line.split() for line in out.splitlines())]
    return {"on": transient(args, steps, switches(noise.stdout), True),
            "off": transient(args, steps, switches(noise.stdout), False)}


def transient(args, steps, all_switches, on):
    """The transient of the switches one way (on: idle to noise), over those where the noise had an
    effect of 3 % or more, and three standard errors of the level before (on this VM memory noise
    hurts in spells; a switch in a harmless one has no transient to see)."""
    bins, effects, used = {}, [], 0
    for at, direction in all_switches:
        if direction != on:
            continue
        before = [s for t, s in steps if at - 0.5 <= t < at]
        after = [s for t, s in steps if at + args.block - 0.4 <= t < at + args.block - 0.05]
        if len(before) < 10 or len(after) < 10:
            continue
        old, new = statistics.median(before), statistics.median(after)
        effects.append(new / old - 1)
        if abs(new / old - 1) < max(0.03, 3 * statistics.pstdev(before) / old / len(before) ** 0.5):
            continue  # no effect in this switch: a harmless spell, or a kind that does not reach the probe
        used += 1
        for t, s in steps:
            if at <= t < at + args.block - 0.4:
                bins.setdefault(int((t - at) / args.bin), []).append((s - old) / (new - old))
    if not effects:
        return {"effect": None, "settle_s": None, "switches": 0, "why": "no switch measured"}
    effect = statistics.median(effects)
    if used < 3:
        return {"effect": effect, "settle_s": None, "switches": used,
                "why": f"{used} of {len(effects)} switches had an effect of 3 % or more"}
    # each bin's median share of the way, smoothed over three bins: one slow step is no transient
    shares = {k: statistics.median(v) for k, v in bins.items()}
    smooth = {k: statistics.median(shares.get(j, shares[k]) for j in (k - 1, k, k + 1)) for k in shares}
    settle = max([(k + 1) * args.bin for k, m in smooth.items() if abs(m - 1) > 0.25], default=0.0)
    return {"effect": effect, "settle_s": settle, "switches": used, "of": len(effects)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default="memory,cpu,io,network")
    p.add_argument("--pairs", type=int, default=12)
    p.add_argument("--block", type=float, default=1.5)
    p.add_argument("--bin", type=float, default=0.01)
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    results = {kind: measure(args, kind) for kind in args.kinds.split(",")}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"the probe (64 MiB, about 3 ms a step) beside each noise switched on and off every {args.block} s, "
          f"{args.pairs} pairs, {1000 * args.bin:.0f} ms bins:")
    for kind, r in results.items():
        for name in ("on", "off"):
            x = r[name]
            if x["settle_s"] is None:
                print(f"  {kind:8} {name:3}: no transient measured: {x['why']}")
            else:
                print(f"  {kind:8} {name:3}: effect {100 * x['effect']:+6.1f} % (median of {x['of']} switches), "
                      f"settled {1000 * x['settle_s']:4.0f} ms after the switch (the {x['switches']} with an effect)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
