#!/usr/bin/env python3
"""sensitive_trainer: a stand-in training job for the guard's end-to-end test. Its step time grows
with the CPU time a co-tenant process really gets, step = base x (1 + sensitivity x share), where
share is that process's CPU use over the last half second read from /proc. The guard's knobs act
on the co-tenant for real (the kernel enforces the quota); only the trainer's sensitivity is a
model, so the loop's outcome does not hang on how noisy the test machine is. Prints step lines as
cosched-train does (docs/trainer-output.md).

Usage: sensitive_trainer.py --pidfile FILE [--base 0.05] [--sensitivity 0.2]
"""
import argparse
import json
import os
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of a process, in seconds; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, IndexError, ValueError):
        return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pidfile", required=True)
    p.add_argument("--base", type=float, default=0.05)
    p.add_argument("--sensitivity", type=float, default=0.2)
    args = p.parse_args()
    history = []  # (time, cpu seconds) of the co-tenant, the last half second
    step = 0
    while True:
        pid = None
        try:
            with open(args.pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            pass
        now, used = time.monotonic(), cpu_seconds(pid) if pid else None
        if used is None:
            history.clear()
        else:
            history.append((now, used))
            history = [(t, c) for (t, c) in history if now - t <= 0.5] or history[-1:]
        share = 0.0
        if len(history) >= 2 and history[-1][0] > history[0][0]:
            share = (history[-1][1] - history[0][1]) / (history[-1][0] - history[0][0])
        t_step = args.base * (1 + args.sensitivity * min(max(share, 0.0), 1.0))
        time.sleep(t_step)
        print(json.dumps({"event": "step", "step": step, "t_step": t_step, "cotenant_share": share}), flush=True)
        step += 1


if __name__ == "__main__":
    sys.exit(main())
