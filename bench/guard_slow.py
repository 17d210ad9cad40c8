#!/usr/bin/env python3
"""guard_slow: the guard on a real job with slow steps, as issue 43 tried it.

An unmodified PyTorch script (bench/torch_slow.py, about 135 ms a step on one thread) runs on
CPU 0 under a private coschedd that times it through the injected optimizer hook; two co-tenants
share CPU 1, cosched-noise stream (memory-bound) and busy (compute-bound), each registered with
the daemon. The trainer runs alone first (--alone), then beside both pinned at share 1
(--pinned: what the noise costs unguarded), then both are handed to the guard (--guarded).

The trainer's own step log is the truth: its alone median (the first --alone seconds, the
first 5 s left out), its slowdown pinned, and its slowdown over the guard's last --last seconds,
each against that alone median, with a 95 % interval from 10 batch medians. Then the co-tenants
are released and the trainer runs alone again (--after): on a VM the host's own speed drifts by a
few per cent in minutes, and the last minute against the alone medians before and after together
tells that drift from the co-tenants' cost. The guard's view
(its share, judged slowdown and baseline, polled every second) and the daemon's log are kept in
--out, so that where its baseline came from can be read afterwards.

    bench/guard_slow.py [--rounds N] [--alone 30] [--pinned 40] [--guarded 150] [--last 60]
                        [--after 30] [--budget 0.05] [--out DIR] [--build build]
"""
import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cosched(args, sock, *argv):
    out = subprocess.run([f"{args.build}/client/cosched", "--socket", sock, "--json", *argv], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


def start_daemon(args, tmp):
    sock = f"{tmp}/c.sock"
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(f"slowdown_budget: {args.budget}\nautoreport:\n  dir: {ROOT}/libcosched/autoreport\n"
                f"guard:\n  enabled: true\n")
    daemon = subprocess.Popen([f"{args.build}/daemon/coschedd", "--foreground", "--config", f"{tmp}/c.yaml",
                               "--socket", sock, "--state-dir", f"{tmp}/state", "--topology",
                               f"{ROOT}/tests/topologies/ci-2core-gpu.xml"], stderr=open(f"{tmp}/daemon.log", "w"))
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return sock, daemon


def read_log(path):
    steps = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                steps.append((float(parts[0]), float(parts[1])))
    return steps


def between(steps, t0, t1):
    return [s for end, s in steps if t0 <= end - s and end <= t1]


def batch_interval(base, xs, batches=10):
    """95 % interval of median(xs) / base - 1 from the medians of consecutive batches (t, 9 df)."""
    n = len(xs) // batches
    if n < 2:
        return (math.nan, math.nan)
    ratios = [statistics.median(xs[i * n:(i + 1) * n]) / base - 1 for i in range(batches)]
    m, half = statistics.mean(ratios), 2.262 * statistics.stdev(ratios) / math.sqrt(batches)
    return (m - half, m + half)


def one_round(args, r):
    tmp = tempfile.mkdtemp(prefix="cosched-guard-slow-")
    sock, daemon = start_daemon(args, tmp)
    log = f"{tmp}/steps.log"
    polls = []
    try:
        uid = str(os.getuid())
        cosched(args, sock, "job", "register", "--job", "t", "--uid", uid, "--role", "trainer", "--policy", "l3",
                "--cores-per-rank", "1")
        for i, job in enumerate(("stream", "busy")):
            cosched(args, sock, "job", "register", "--job", job, "--uid", uid, "--role", "cotenant", "--policy",
                    "l3", "--cores", "1", *(["--share-cores"] if i else []))
        cosched(args, sock, "run", "start", "--job", "t", "--", "/usr/bin/python3", f"{ROOT}/bench/torch_slow.py",
                "--log", log)

        def poll(until):
            while time.time() < until:
                for job in (cosched(args, sock, "stats") or {}).get("jobs", []):
                    if job["job"] == "t":
                        polls.append({"time": time.time(), "guard": job.get("guard"), "steps": job.get("steps"),
                                      "baseline": job.get("baseline")})
                time.sleep(1)

        started = time.time()
        poll(started + args.alone)
        noise_start = time.time()
        for job in ("stream", "busy"):
            cosched(args, sock, "guard", "set", "--job", job, "--share", "1")
            cosched(args, sock, "run", "start", "--job", job, "--", f"{args.build}/noise/cosched-noise", job,
                    "--duration", str(args.pinned + args.guarded + 30), "--report-every", "1")
        poll(noise_start + args.pinned)
        handed = time.time()
        for job in ("stream", "busy"):
            cosched(args, sock, "guard", "set", "--job", job, "--share", "auto")
        poll(handed + args.guarded)
        end = time.time()
        guard = polls[-1].get("guard") or {}
        for job in ("stream", "busy"):
            cosched(args, sock, "job", "release", "--job", job)
        poll(end + args.after)
        steps = read_log(log)
        alone = between(steps, started + 5, noise_start)
        after = between(steps, end + 2, end + args.after)
        pinned = between(steps, noise_start + 2, handed)
        last = between(steps, end - args.last, end)
        base = statistics.median(alone)
        both = statistics.median(alone + after)
        res = {"alone_ms": 1e3 * base, "after_ms": 1e3 * statistics.median(after),
               "pinned": statistics.median(pinned) / base - 1, "last": statistics.median(last) / base - 1,
               "last_both": statistics.median(last) / both - 1, "last_interval": batch_interval(base, last)}
        res["guard_end"] = {k: guard.get(k) for k in ("share", "judged", "baseline_age_seconds", "phase")}
        return res
    finally:
        for job in ("stream", "busy", "t"):
            try:
                cosched(args, sock, "job", "release", "--job", job)
            except Exception:
                pass
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        subprocess.run(["pkill", "-9", "-f", "torch_slow.py --log " + tmp], check=False)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            for name in ("daemon.log", "steps.log"):
                if os.path.exists(f"{tmp}/{name}"):
                    shutil.copy(f"{tmp}/{name}", f"{args.out}/round{r}-{name}")
            with open(f"{args.out}/round{r}-polls.json", "w") as f:
                json.dump(polls, f)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--alone", type=float, default=30)
    p.add_argument("--pinned", type=float, default=40)
    p.add_argument("--guarded", type=float, default=150)
    p.add_argument("--last", type=float, default=60)
    p.add_argument("--after", type=float, default=30, help="seconds alone again after the co-tenants are released")
    p.add_argument("--budget", type=float, default=0.05)
    p.add_argument("--out", help="keep each round's daemon log, step log and polls here")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    results = []
    for r in range(1, args.rounds + 1):
        res = one_round(args, r)
        results.append(res)
        lo, hi = res["last_interval"]
        print(f"round {r}: alone {res['alone_ms']:.1f} ms before, {res['after_ms']:.1f} ms after; pinned at share 1 "
              f"{100 * res['pinned']:+.1f} %; guarded, last {args.last:.0f} s {100 * res['last']:+.1f} % "
              f"[{100 * lo:+.1f}, {100 * hi:+.1f}] against the alone median before "
              f"({'within' if res['last'] <= args.budget else 'over'} the {100 * args.budget:.0f} % budget), "
              f"{100 * res['last_both']:+.1f} % against before and after; guard at the end: "
              f"{json.dumps(res['guard_end'])}", flush=True)
    if len(results) > 1:
        print(f"median over {len(results)} rounds: pinned {100 * statistics.median(x['pinned'] for x in results):+.1f} "
              f"%, guarded last {args.last:.0f} s {100 * statistics.median(x['last'] for x in results):+.1f} % "
              f"({sum(x['last'] <= args.budget for x in results)} of {len(results)} within budget against the alone "
              f"median before; {sum(x['last_both'] <= args.budget for x in results)} against before and after)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
