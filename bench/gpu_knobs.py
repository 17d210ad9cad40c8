#!/usr/bin/env python3
"""gpu_knobs: which knob holds memory-bandwidth noise back at the least cost to a real training.

Beside a trainer (default: bench/gpu_trainer.py on --trainer-cpus; it reports nothing), the
noise (`cosched-noise stream` on --noise-cpus, one thread per CPU) runs in blocks of --block
seconds, each block held to the same --share by a different knob, set here directly on a cgroup
v2 group (no daemon: this measures knobs, not the guard):
  full        no knob (the unguarded peer)
  cpu.max     CFS quota: share x CPUs x 100 ms per 100 ms period (what coschedd's cpu.max writes)
  freezer     cgroup.freeze duty cycle: thawed share x --duty, frozen the rest (coschedd's freezer)
  cores       the spatial knob: the same threads confined to round(share x CPUs) of the CPUs
              (their affinity, as a cpuset would), so fewer cores at full speed
Blocks go in a mirrored order with a no-noise block between any two, so drift hits each alike;
the first --drop seconds of a block are left out. Per knob: the trainer's slowdown against the
no-noise blocks beside it, the noise's throughput as a share of the full blocks', the CPU time
the noise got, and the cost per unit of work kept (slowdown / kept).
Needs root, cgroup v2 with the cpu controller, and a GPU for the default trainer.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

from gpu_proxy import cpulist, noise_rate, step_time, steps  # one reading of the runs' lines

CG = os.environ.get("COSCHED_CGROUP2", "/sys/fs/cgroup")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Freezer(threading.Thread):
    def __init__(self, group, share, period):
        super().__init__(daemon=True)
        self.group, self.share, self.period, self.stopped = group, share, period, False

    def run(self):
        while not self.stopped:
            write(f"{self.group}/cgroup.freeze", "0")
            time.sleep(self.share * self.period)
            if self.stopped:
                break
            write(f"{self.group}/cgroup.freeze", "1")
            time.sleep((1 - self.share) * self.period)
        write(f"{self.group}/cgroup.freeze", "0")


def block(a, knob, out_dir, i):
    """One noise block under knob; returns its raw figures."""
    cpus = cpulist(a.noise_cpus)
    group = None
    if knob in ("cpu.max", "freezer"):
        group = f"{CG}/cosched-knobs-{os.getpid()}-{i}"
        os.mkdir(group)
        if knob == "cpu.max":
            write(f"{group}/cpu.max", f"{round(a.share * len(cpus) * 100000)} 100000")
    allowed = cpus[:max(1, round(a.share * len(cpus)))] if knob == "cores" else cpus
    path = f"{out_dir}/noise-{i}-{knob}.jsonl"
    script = (f'echo $$ > {group}/cgroup.procs && ' if group else "") + 'exec "$@"'
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(["sh", "-c", script, "_", "taskset", "-c", ",".join(map(str, allowed)),
                             f"{a.build}/noise/cosched-noise", "stream", "--threads", str(len(cpus)), "--duration",
                             str(a.block), "--report-every", "0.5"], stdout=open(path, "w"))
    freezer = Freezer(group, a.share, a.duty) if knob == "freezer" else None
    if freezer:
        freezer.start()
    t0 = time.time()
    proc.wait()
    t1 = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if freezer:
        freezer.stopped = True
        freezer.join()
    if group:
        os.rmdir(group)
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"knob": knob, "t0": t0, "t1": t1, "noise": path, "cpus_used": used / (t1 - t0)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--root", default=".")
    p.add_argument("--out", required=True)
    p.add_argument("--trainer-cpus", default="0-5")
    p.add_argument("--noise-cpus", default="6-15")
    p.add_argument("--trainer", default=None)
    p.add_argument("--share", type=float, default=0.3)
    p.add_argument("--duty", type=float, default=0.1, help="freezer duty period, s (coschedd's duty_period)")
    p.add_argument("--block", type=float, default=12)
    p.add_argument("--drop", type=float, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--knobs", default="full,cpu.max,freezer,cores")
    p.add_argument("--warmup-steps", type=int, default=60)
    a = p.parse_args()
    a.build, a.root = os.path.abspath(a.build), os.path.abspath(a.root)
    os.makedirs(a.out, exist_ok=True)
    knobs = a.knobs.split(",")
    if "cpu.max" in knobs and "cpu" not in open(f"{CG}/cgroup.subtree_control").read().split():
        write(f"{CG}/cgroup.subtree_control", "+cpu")
    train_out = f"{a.out}/train.jsonl"
    order = []
    for r in range(a.rounds):
        order += knobs if r % 2 == 0 else knobs[::-1]
    cmd = a.trainer.split() if a.trainer else [sys.executable, f"{a.root}/bench/gpu_trainer.py"]
    total = 60 + (2 * len(order) + 1) * (a.block + 1)
    trainer = subprocess.Popen(["taskset", "-c", a.trainer_cpus, *cmd, "--out", train_out, "--duration",
                                str(total + 60)], stderr=open(f"{a.out}/train.err", "w"))
    try:
        deadline = time.time() + 240
        while not os.path.exists(train_out) or len(steps(train_out)) < a.warmup_steps:
            if time.time() > deadline or trainer.poll() is not None:
                raise SystemExit(f"the trainer did not start; see {a.out}/train.err")
            time.sleep(1)
        blocks = []
        for i, knob in enumerate(order):
            t0 = time.time()
            time.sleep(a.block)
            blocks.append({"knob": "quiet", "t0": t0, "t1": time.time()})
            blocks.append(block(a, knob, a.out, i))
        t0 = time.time()
        time.sleep(a.block)
        blocks.append({"knob": "quiet", "t0": t0, "t1": time.time()})
        for b in blocks:
            b["step"] = step_time(train_out, b["t0"] + a.drop, b["t1"])
            if b["knob"] != "quiet":
                b["rate"] = noise_rate([b["noise"]], b["t0"] + a.drop, b["t1"])
        per = {k: [] for k in knobs}
        for i, b in enumerate(blocks):
            if b["knob"] == "quiet":
                continue
            quiet = [blocks[j]["step"] for j in (i - 1, i + 1) if blocks[j]["step"]]
            b["slowdown"] = b["step"] / statistics.mean(quiet) - 1
            per[b["knob"]].append(b)
        with open(f"{a.out}/gpu_knobs.json", "w") as f:
            json.dump(blocks, f)
        full = statistics.mean(b["rate"] for b in per.get("full", [])) if per.get("full") else None
        print(f"share {a.share}, {a.block:.0f} s blocks (first {a.drop:.0f} s dropped), {a.rounds} rounds, means:")
        print(" knob      slowdown   noise GB/s   kept   CPUs used   slowdown per work kept")
        for k in knobs:
            bs = per[k]
            s = statistics.mean(b["slowdown"] for b in bs)
            r = statistics.mean(b["rate"] for b in bs)
            kept = r / full if full else float("nan")
            print(f" {k:8} {100 * s:+7.1f} %  {r / 1e9:9.2f}  {100 * kept:5.0f} %  "
                  f"{statistics.mean(b['cpus_used'] for b in bs):8.2f}   {s / kept if kept > 0 else float('nan'):+.3f}"
                  f"   (blocks: {', '.join('%+.1f' % (100 * b['slowdown']) for b in bs)})")
        return 0
    finally:
        trainer.terminate()
        try:
            trainer.wait(10)
        except subprocess.TimeoutExpired:
            trainer.kill()


if __name__ == "__main__":
    sys.exit(main())
