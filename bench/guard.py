#!/usr/bin/env python3
"""guard: what the slowdown guard costs and keeps, measured side by side on this machine.

Each round runs the same experiment twice through a real coschedd, once with the guard off
(the peer: co-scheduling with placement only) and once with it on: cosched-train (ResNet-20,
batch 32, one thread) alone on CPU 0, then beside cosched-noise stream on CPU 1. Rounds
alternate the order (off/on, on/off, ...) so that drift of the machine hits both alike.

The Slurm-shaped case (bench/guard_slurm.py) runs beside it, interleaved the same way: a trainer
that reports nothing, judged by its GPU's busy time, and a co-tenant held in Slurm-shaped cgroups.
The mix case (--case mix, bench/guard_mix.py) puts stream, busy or both on one core (--share-cores)
beside the trainer and compares the guard off, one share for all (guard.law 1), attribution
(law 2) and the best fixed vector of shares found by a pinned-share sweep.

Per run: the trainer's median step time alone and beside the noise (slowdown) and the noise's
throughput, both over the same window (from --window seconds after the noise starts to its end),
and for the guarded run the time from the noise's start until the guard first judges the trainer
back within budget (settle). Figures are medians over the rounds.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import guard_slurm


def cosched(build, sock, *args):
    out = subprocess.run([f"{build}/client/cosched", "--socket", sock, "--json", *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def read_lines(path):
    with open(path) as f:
        for line in f:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                pass


def steps_between(trace, out_path, t0, t1):
    """t_step of the trainer's steps completed between unix times t0 and t1 (trace: (time, steps))."""
    def index_at(t):
        before = [s for (when, s) in trace if when <= t]
        return before[-1] if before else 0
    lo, hi = index_at(t0), index_at(t1)
    steps = [l["t_step"] for l in read_lines(out_path) if l.get("event") == "step"]
    return steps[lo:hi]


def noise_rate(out_path, t0, t1, key="bytes"):
    """Bytes (or ops) per second the noise reported moving between t0 and t1."""
    start, moved = None, 0.0
    for l in read_lines(out_path):
        if l.get("event") == "start":
            start = l["start"]
        elif l.get("event") == "progress" and start is not None and t0 <= start + l["elapsed"] <= t1:
            moved += l[key]
    return moved / (t1 - t0)


def start_daemon(args, prefix, guard_yaml):
    """A private coschedd on the 2-core topology, its guard configured by guard_yaml (lines under
    guard:): (temporary folder, socket, process), the socket there."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    sock = f"{tmp}/c.sock"
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(f"slowdown_budget: {args.budget}\nguard:\n{guard_yaml}")
    daemon = subprocess.Popen([f"{args.build}/daemon/coschedd", "--foreground", "--config", f"{tmp}/c.yaml",
                               "--socket", sock, "--state-dir", f"{tmp}/state", "--topology",
                               f"{args.root}/tests/topologies/ci-2core-gpu.xml"],
                              stderr=open(f"{tmp}/daemon.log", "w"))
    for _ in range(100):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return tmp, sock, daemon


def stop_daemon(args, tmp, sock, daemon, jobs):
    """Release the jobs (their runs stop), stop the daemon, remove what the run left."""
    for job in jobs:
        try:
            cosched(args.build, sock, "job", "release", "--job", job)
        except Exception:
            pass
    time.sleep(1)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait()
    subprocess.run(["pkill", "-9", "-f", tmp], check=False)
    subprocess.run(["rm", "-rf", tmp], check=False)


def one_run(args, guarded):
    tmp, sock, daemon = start_daemon(args, "cosched-bench-guard-", f"  enabled: {'true' if guarded else 'false'}\n")
    try:
        cosched(args.build, sock, "job", "register", "--job", "t", "--uid", str(os.getuid()), "--role", "trainer",
                "--policy", "l3", "--cores-per-rank", "1")
        cosched(args.build, sock, "job", "register", "--job", "n", "--uid", str(os.getuid()), "--role", "cotenant",
                "--policy", "l3", "--cores", "1")
        train = cosched(args.build, sock, "run", "start", "--job", "t", "--", f"{args.build}/trainer/cosched-train",
                        "--model", "resnet20", "--data", "synthetic:4096", "--batch", "32", "--steps", "1000000",
                        "--threads", "1")
        trace, shares = [], []

        def poll(until):
            while time.time() < until:
                stats = cosched(args.build, sock, "stats")
                now = time.time()
                for job in stats["jobs"]:
                    if job["job"] == "t":
                        trace.append((now, job["steps"]))
                        g = job["guard"]
                        shares.append((now, g["share"], g["judged"], job["budget"]))
                time.sleep(0.2)

        started = time.time()
        poll(started + args.alone)
        noise_start = time.time()
        noise = cosched(args.build, sock, "run", "start", "--job", "n", "--", f"{args.build}/noise/cosched-noise",
                        "stream", "--duration", str(args.noise + 10), "--report-every", "0.5")
        poll(noise_start + args.noise)
        end = time.time()
        settle = None
        for (when, share, judged, budget) in shares:
            if when > noise_start and share < 1 and judged and judged["ci95"][0] <= budget:
                settle = when - noise_start
                break
        window_start = noise_start + args.window
        alone = steps_between(trace, train["stdout"], started + 3, noise_start)
        beside = steps_between(trace, train["stdout"], window_start, end)
        final_share = shares[-1][1] if shares else 1.0
        return {
            "guarded": guarded,
            "slowdown": statistics.median(beside) / statistics.median(alone) - 1,
            "noise_rate": noise_rate(noise["stdout"], window_start, end),
            "settle": settle,
            "window_start": window_start - noise_start,
            "final_share": final_share,
            "steps": (len(alone), len(beside)),
        }
    finally:
        stop_daemon(args, tmp, sock, daemon, ("n", "t"))


def summarize(name, off, on, budget):
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    kept = [g["noise_rate"] / u["noise_rate"] for u, g in zip(off, on) if u["noise_rate"] > 0]
    settles = [g["settle"] for g in on if g["settle"] is not None]
    print(f"{name} (budget {100 * budget:.1f} %, {len(on)} interleaved rounds, medians):")
    print(f"  unguarded slowdown      {100 * med([x['slowdown'] for x in off]):+.1f} %")
    print(f"  guarded slowdown        {100 * med([x['slowdown'] for x in on]):+.1f} %")
    print(f"  noise throughput kept   {100 * med(kept):.0f} % of unguarded "
          f"({med([x['noise_rate'] for x in on]) / 1e9:.2f} of {med([x['noise_rate'] for x in off]) / 1e9:.2f} GB/s)")
    print(f"  time to settle          {med(settles):.1f} s ({len(settles)} of {len(on)} guarded runs settled)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--root", default=".")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--alone", type=float, default=12, help="seconds the trainer runs alone first")
    p.add_argument("--noise", type=float, default=60, help="seconds beside the noise")
    p.add_argument("--window", type=float, default=10,
                   help="seconds after the noise starts from which both runs are measured")
    p.add_argument("--budget", type=float, default=0.05)
    p.add_argument("--case", choices=["reporting", "slurm", "both", "mix", "duty"], default="both",
                   help="the trainer reporting its steps through coschedd, the Slurm-shaped case "
                        "(bench/guard_slurm.py), or both side by side; mix: stream and busy on one core "
                        "under the guard off, one share for all, attribution and the best fixed vector "
                        "(bench/guard_mix.py); duty: stream held at share 0.25 by the freezer with duty "
                        "periods of 20, 100 and 500 ms (what bursts cost)")
    p.add_argument("--mix-case", choices=["stream", "busy", "both", "all"], default="all",
                   help="with --case mix: stream alone, busy alone, both, or all three")
    args = p.parse_args()
    args.build, args.root = os.path.abspath(args.build), os.path.abspath(args.root)  # runs start in $HOME
    if args.case in ("mix", "duty"):
        import guard_mix  # here: it imports this module's helpers
        (guard_mix.main if args.case == "mix" else guard_mix.duty)(args)
        return 0
    cases = {"reporting": lambda guarded: one_run(args, guarded),
             "slurm": lambda guarded: guard_slurm.one_run(args, guarded, cosched, noise_rate)}
    if args.case != "both":
        cases = {args.case: cases[args.case]}
    why = guard_slurm.usable()
    if "slurm" in cases and why:
        print(f"the Slurm-shaped case is left out: {why}")
        del cases["slurm"]
    results = {(c, g): [] for c in cases for g in (False, True)}
    for r in range(args.rounds):
        order = [(c, g) for c in cases for g in (False, True)]
        order = order[r % len(order):] + order[:r % len(order)]  # rotated: drift hits all alike
        for case, guarded in order:
            res = cases[case](guarded)
            results[(case, guarded)].append(res)
            print(f"round {r + 1} {case:9} {'guarded  ' if guarded else 'unguarded'}: slowdown "
                  f"{100 * res['slowdown']:+.1f} %, noise {res['noise_rate'] / 1e9:.2f} GB/s, final share "
                  f"{res['final_share']:.2f}, settle {res['settle'] if res['settle'] is not None else float('nan'):.1f} s, "
                  f"steps alone/beside {res['steps'][0]}/{res['steps'][1]}", flush=True)
    print()
    names = {"reporting": "trainer reporting its steps, co-tenant a daemon run",
             "slurm": "Slurm-shaped: trainer reporting nothing (GPU busy time), co-tenant external in Slurm-shaped cgroups"}
    for case in cases:
        summarize(names[case], results[(case, False)], results[(case, True)], args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
