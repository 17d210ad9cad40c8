#!/usr/bin/env bash
# bench/autoreport_cost: what cosched's injected step reporter (libcosched/autoreport) costs a job
# that never asked for it — at every Python start, and at every optimizer step.
#
# 1. Start-up: `python3 -c pass` (byte-compiled, as installed) without the directory on PYTHONPATH, with it outside a job, and
#    with it in a job (COSCHED_JOB set: the post-import hook is installed). Interleaved runs,
#    medians of the wall time of each whole process; the differences in ms (target: < 5 ms).
# 2. Per step: a tiny model's SGD step (Linear 8x8, CPU, one thread) in a process without the
#    step hooks and in one with them attached the way the autoreport attaches them, the report
#    itself left out (a report's cost is the cosched module's: bench/report.sh). Interleaved
#    processes, medians of per-block means; the difference in µs per step. Then the hooks' own
#    calls alone (pre and post hook of one step, torch 2.x's way) in one process: less noise
#    than the difference of two processes on a shared machine.
#
# Usage: bench/autoreport_cost.sh   Knobs (environment):
#   PYTHON=/usr/bin/python3   the interpreter (Debian's has python3-torch; needed for part 2)
#   ROUNDS=31                 interleaved start-up runs of each kind
#   STEP_ROUNDS=7             interleaved step processes of each kind
#   STEPS=2000                steps per block (5 blocks per process, the first one skipped)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
export ROUNDS=${ROUNDS:-31} STEP_ROUNDS=${STEP_ROUNDS:-7} STEPS=${STEPS:-2000}
export AUTOREPORT=$PWD/libcosched/autoreport PYTHON_UNDER_TEST=$PYTHON
# As installed: byte-compiled (meson install does it), and no compiling at each start.
unset PYTHONDONTWRITEBYTECODE
"$PYTHON" -m compileall -q "$AUTOREPORT" >/dev/null

# The driver is pyenv's or any python3: it only starts processes and reads clocks.
exec "$PYTHON" - <<'EOF'
import os
import statistics
import subprocess
import sys
import time

python, autoreport = os.environ["PYTHON_UNDER_TEST"], os.environ["AUTOREPORT"]
rounds, step_rounds, steps = (int(os.environ[k]) for k in ("ROUNDS", "STEP_ROUNDS", "STEPS"))
base = {k: v for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "COSCHED_JOB", "SLURM_JOB_ID", "COSCHED_AUTOREPORT")}
starts = {
    "without": base,
    "outside a job": dict(base, PYTHONPATH=autoreport),
    "in a job": dict(base, PYTHONPATH=autoreport, COSCHED_JOB="bench"),
}


def wall(cmd, env):
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True)
    return time.perf_counter() - t


times = {k: [] for k in starts}
for _ in range(rounds):
    for kind, env in starts.items():
        times[kind].append(wall([python, "-c", "pass"], env))
plain = statistics.median(times["without"]) * 1e3
print("python3 -c pass, median of %d interleaved runs (%s):" % (rounds, python))
print("  without the autoreport  %7.2f ms" % plain)
for kind in ("outside a job", "in a job"):
    m = statistics.median(times[kind]) * 1e3
    print("  with it, %-14s %7.2f ms   (%+.2f ms)" % (kind, m, m - plain))

# Part 2: the same loop in two kinds of process; only the hooks differ.
STEP_LOOP = r'''
import os, sys, time
import torch
hooked = sys.argv[1] == "hooked"
if hooked:
    sys.path.insert(0, os.environ["AUTOREPORT"])
    import cosched_torchhook
    hooks = cosched_torchhook.attach(sys.modules["torch.optim.optimizer"])
    hooks._report = lambda seconds: None  # the bookkeeping, not the daemon's round trip
torch.set_num_threads(1)
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model(torch.randn(4, 8)).sum().backward()  # gradients once: the loop times step() alone
steps = int(sys.argv[2])
for block in range(5):
    t = time.perf_counter()
    for _ in range(steps):
        opt.step()
    if block:
        print((time.perf_counter() - t) / steps * 1e6)
'''
if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
    print("%s has no torch: the per-step cost is not measured" % python)
    sys.exit(0)
per_step = {"plain": [], "hooked": []}
env = dict(base, AUTOREPORT=autoreport)
for _ in range(step_rounds):
    for kind in per_step:
        out = subprocess.run([python, "-c", STEP_LOOP, kind, str(steps)], env=env, check=True,
                             capture_output=True, text=True).stdout
        per_step[kind] += [float(x) for x in out.split()]
p, h = statistics.median(per_step["plain"]), statistics.median(per_step["hooked"])
print("optimizer.step() of Linear(8, 8), SGD, median of %d blocks of %d steps:" % (len(per_step["plain"]), steps))
print("  without the hooks  %7.2f µs" % p)
print("  with the hooks     %7.2f µs   (%+.2f µs per step, the report to coschedd not included)" % (h, h - p))

HOOK_CALLS = r'''
import os, sys, time, types
sys.path.insert(0, os.environ["AUTOREPORT"])
import cosched_torchhook
torch2 = types.SimpleNamespace(register_optimizer_step_pre_hook=lambda hook: None,
                               register_optimizer_step_post_hook=lambda hook: None)
hooks = cosched_torchhook.attach(torch2)
hooks._report = lambda seconds: None
opt = object()
for block in range(10):
    t = time.perf_counter()
    for _ in range(100000):
        hooks.pre_hook(opt, (), {})
        hooks.post_hook(opt, (), {})
    print((time.perf_counter() - t) / 100000 * 1e6)
'''
out = subprocess.run([python, "-c", HOOK_CALLS], env=env, check=True, capture_output=True, text=True).stdout
calls = [float(x) for x in out.split()]
print("the hooks' own calls, pre and post of one step, median of %d blocks of 100000: %.2f µs"
      % (len(calls), statistics.median(calls)))
EOF
