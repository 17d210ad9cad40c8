#!/usr/bin/env python3
"""sensitive_trainer: a stand-in training job for the guard's end-to-end tests. Its step time grows
with the CPU the guard's knobs allow a co-tenant process, step = base x (1 + sensitivity x share),
where share is what the kernel's files allow it now: 0 while it is stopped, frozen or asleep
(/proc says anything but 'R' for each of its threads), else a CPU per running thread held to the
tightest CFS quota of its cpu cgroups and their parents (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max), averaged over the last half
second. The knobs are coschedd's for real; only the trainer's sensitivity is a model, and it reads
what the knobs allow rather than what a loaded test machine gives, so the loop's outcome does not
depend on the machine's load (tests/daemon/fakegpu/fake_gpu.h has the same model for the GPU).
Prints step lines as cosched-train does (docs/trainer-output.md).

Usage: sensitive_trainer.py --pidfile FILE [--base 0.05] [--sensitivity 0.2]
"""
import argparse
import json
import os
import sys
import time


def cpu_mounts():
    """Where v1's cpu hierarchy and v2 are mounted ("" where they are not)."""
    v1 = v2 = ""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            head, _, tail = line.partition(" - ")
            fields, rest = head.split(), tail.split()
            if len(fields) < 5 or len(rest) < 3:
                continue
            if rest[0] == "cgroup2" and not v2:
                v2 = fields[4]
            if rest[0] == "cgroup" and "cpu" in rest[2].split(",") and not v1:
                v1 = fields[4]
    return v1, v2


MOUNTS = cpu_mounts()


def read(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return None


def dir_quota(path, v2):
    """CPUs the quota of one cgroup directory allows; None without a quota."""
    if v2:
        words = read(os.path.join(path, "cpu.max"))
        quota, period = (words + [None, None])[:2] if words else (None, None)
    else:
        quota = (read(os.path.join(path, "cpu.cfs_quota_us")) or [None])[0]
        period = (read(os.path.join(path, "cpu.cfs_period_us")) or [None])[0]
    try:
        q, p = int(quota), int(period)
    except (TypeError, ValueError):
        return None
    return q / p if q > 0 and p > 0 else None


def running_threads(pid):
    """How many of the process's threads want to run ('R'); stopped, frozen, sleeping: none."""
    running = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                running += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            pass
    try:
        return min(running, len(os.sched_getaffinity(pid)))
    except OSError:
        return running


def allowed(pid):
    """The CPUs the knobs allow the process now: one per thread that wants to run, held to its
    tightest quota."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return 0.0
    limit = float(running_threads(pid))
    if limit == 0:
        return 0.0
    for line in lines:
        _, controllers, cgroup = line.split(":", 2)
        v2 = controllers == ""
        mount = MOUNTS[1] if v2 else MOUNTS[0] if "cpu" in controllers.split(",") else ""
        if not mount:
            continue
        path = mount + ("" if cgroup == "/" else cgroup)
        while True:
            q = dir_quota(path, v2)
            if q is not None:
                limit = min(limit, q)
            if len(path) <= len(mount):
                break
            path = os.path.dirname(path)
    return limit


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pidfile", required=True)
    p.add_argument("--base", type=float, default=0.05)
    p.add_argument("--sensitivity", type=float, default=0.2)
    args = p.parse_args()
    history = []  # (time, allowed CPUs) of the co-tenant, the last half second
    step = 0
    while True:
        pid = None
        try:
            with open(args.pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            pass
        now = time.monotonic()
        history.append((now, allowed(pid) if pid else 0.0))
        history = [(t, a) for (t, a) in history if now - t <= 0.5]
        share = sum(a for _, a in history) / len(history)
        t_step = args.base * (1 + args.sensitivity * min(max(share, 0.0), 1.0))
        time.sleep(t_step)
        print(json.dumps({"event": "step", "step": step, "t_step": t_step, "cotenant_share": share}), flush=True)
        step += 1


if __name__ == "__main__":
    sys.exit(main())
