#!/usr/bin/env python3
"""gpu_guard: the guard on a GPU node judging an unmodified PyTorch job by the steps the injected
hook reports, against the same guard judging it by its GPU's busy time (the peer).

The trainer is bench/gpu_trainer.py (ResNet-50, no cosched import), started through coschedd's
`run start` for a trainer job on GPU 0, with libcosched/autoreport first on its PYTHONPATH (the
hook; COSCHED_JOB and COSCHED_SOCKET come from the run, as for any run). Its co-tenant is
`cosched-noise stream`, started through coschedd on the cores the plan leaves (policy cores).
Each arm is a fresh coschedd and a fresh trainer: --warmup-steps steps, --lead seconds alone
(the reference step time), then the noise at full intensity for --hold seconds. The arms, in
this order every round (ABC ABC ...): guard off; guard on with the hook's steps (--progress
steps); guard on with the GPU source (--progress gpu, the hook off with COSCHED_AUTOREPORT=0).

Check 1 (the hook against the trainer's own step log, from the arms where the hook runs): the
daemon's step count (`job get`) against the log's lines once the trainer has stopped, equal
within one (the first step only starts the hook's clock); and every --block seconds the median
of the daemon's stats window (its newest steps, `stats`) against the median of the same steps in
the log, within 2 % as the median over blocks.

Check 2, per arm, all from the trainer's own step log and the noise's own progress lines:
  settle   the time from noise start until the trainer's slowdown over the trailing
           --settle-window seconds (mean step time against the lead-in's) is within budget and
           stays so to the end; 0 when it never left the budget, none when it ends outside;
  slowdown over the last --last seconds of the noise;
  kept     the noise's throughput over those seconds against the guard-off arm's of that round.
Printed per round, then medians over the rounds and the steps arm's ratio to the GPU peer.

--cpu-dry-run runs the same flow on a machine without a GPU: the fake NVML of the build's tests
(its busy time follows the trainer's own step log: busy = --gpu-time / step time), the 2-core
test topology, the trainer on the CPU with --device cpu --tiny, and short durations. Its figures
say nothing of a GPU; it shows the flow runs through. Needs root (coschedd and its runs).
"""
import argparse
import bisect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import gpu_proxy as proxy

# (name, guard on, the trainer job's --progress, the hook injected)
ARMS = [("off", False, "steps", True), ("steps", True, "steps", True), ("gpu", True, "gpu", False)]
GPU_BUS_DRY = "0000:03:00.0"  # the GPU of tests/topologies/ci-2core-gpu.xml


class Node(proxy.Daemon):
    """One arm's coschedd: a trainer job on GPU 0, a co-tenant on the cores the plan leaves."""

    def __init__(self, a, tmp, arm, topology, nvml):
        name, guarded, progress, _ = arm
        self.a, self.sock = a, f"{tmp}/{name}.sock"
        cfg = f"{tmp}/{name}.yaml"
        with open(cfg, "w") as f:
            f.write(f"slowdown_budget: {a.budget}\nguard:\n  enabled: {'true' if guarded else 'false'}\n")
            if a.cpu_dry_run:  # the GPU source's baseline learned within the dry run's short hold
                f.write("  baseline_steps: 10\n")
            if nvml:
                f.write(f"progress:\n  nvml_library: {nvml}\n")
            if a.cpu_dry_run:
                f.write("  gpu_window: 0.5\n")
        env = dict(os.environ)
        if a.cpu_dry_run:
            env.update(LD_LIBRARY_PATH=f"{a.build}/tests/daemon/fakegpu", COSCHED_FAKE_GPU=a.fake_gpu)
        self.log = f"{tmp}/{name}.daemon.log"
        self.proc = subprocess.Popen([f"{a.build}/daemon/coschedd", "--foreground", "--config", cfg, "--socket",
                                      self.sock, "--state-dir", f"{tmp}/{name}.state", "--topology", topology],
                                     stderr=open(self.log, "w"), env=env)
        for _ in range(200):
            if os.path.exists(self.sock):
                break
            time.sleep(0.05)
        uid = str(os.getuid())
        self.call("job", "register", "--job", "t", "--uid", uid, "--role", "trainer", "--gpus", "0", "--policy",
                  "cores", "--cores-per-rank", str(a.trainer_cores), "--progress", progress)
        self.call("job", "register", "--job", "n", "--uid", uid, "--role", "cotenant", "--policy", "cores")

    def start_trainer(self, out, hook):
        """The trainer as a run of job t: the hook first on its PYTHONPATH, or switched off."""
        env = [f"PYTHONPATH={self.a.pythonpath}"]
        if not hook:
            env.append("COSCHED_AUTOREPORT=0")
        if os.environ.get("LD_LIBRARY_PATH") and not self.a.cpu_dry_run:  # a site's CUDA, kept
            env.append(f"LD_LIBRARY_PATH={os.environ['LD_LIBRARY_PATH']}")
        duration = 300 + self.a.lead + self.a.hold  # stopped by run stop long before
        argv = [self.a.python, f"{self.a.root}/bench/gpu_trainer.py", *self.a.trainer_args, "--out", out,
                "--duration", str(duration)]
        run = self.call("run", "start", "--job", "t", "--rank", "0", "--cwd", os.path.dirname(out),
                        *[x for e in env for x in ("--env", e)], "--", *argv)
        return run["id"]

    def stop_trainer(self, run_id):
        """SIGTERM to the trainer, then wait (at most a minute) until the daemon saw it end."""
        try:
            self.call("run", "stop", str(run_id))
        except subprocess.CalledProcessError:
            pass  # it ended already
        for _ in range(600):
            runs = self.call("run", "list", "--job", "t")["runs"]
            if all(r["state"] != "running" for r in runs if r["id"] == run_id):
                return
            time.sleep(0.1)
        raise SystemExit(f"the trainer (run {run_id}) did not stop within a minute")


class Poller(threading.Thread):
    """The trainer's stats entry every --poll seconds: (unix time, entry)."""

    def __init__(self, node, period):
        super().__init__(daemon=True)
        self.node, self.period, self.samples, self.stopped = node, period, [], False

    def run(self):
        while not self.stopped:
            try:
                entry = self.node.call("stats", "--job", "t")["jobs"][0]
                self.samples.append((time.time(), entry))
            except (subprocess.CalledProcessError, json.JSONDecodeError, IndexError, KeyError):
                pass
            time.sleep(self.period)


# --- figures from the trainer's step log (pure functions of it)


def mean_step(log, t0, t1):
    """Mean step time of the steps that ended between unix times t0 and t1 (None with fewer than 3)."""
    ts = [s["t_step"] for s in log if t0 <= s["time"] <= t1]
    return statistics.mean(ts) if len(ts) >= 3 else None


def settle_time(log, alone, noise_start, end, budget, window):
    """Seconds from noise_start until the slowdown over the trailing window (mean step time
    against alone) is within budget at every step end up to end: 0 when it never was over,
    None when the last one is over."""
    times = [s["time"] for s in log]
    sums = [0.0]
    for s in log:
        sums.append(sums[-1] + s["t_step"])
    last_over = None
    for i, s in enumerate(log):
        if not noise_start <= s["time"] <= end:
            continue
        lo = bisect.bisect_left(times, s["time"] - window)
        n = i + 1 - lo
        if n >= 3 and (sums[i + 1] - sums[lo]) / n / alone - 1 > budget:
            last_over = s["time"]
    if last_over is None:
        return 0.0
    if last_over >= max(s["time"] for s in log if s["time"] <= end):
        return None
    return last_over - noise_start


def block_deviations(log, samples, block):
    """Check 1's times: for samples --block seconds apart, the daemon's window median against the
    median of the same steps in the log. The daemon's report k is the time between the hook's
    steps k and k + 1, the log's line k + 1 (the first step only starts the hook's clock)."""
    out, last = [], None
    for when, e in samples:
        w, total = e.get("window") or {}, e.get("steps", 0)
        if not w.get("samples") or w.get("median_seconds") is None or (last and when - last < block):
            continue
        mine = [s["t_step"] for s in log[total + 1 - w["samples"]:total + 1]]
        if len(mine) != w["samples"]:
            continue
        last = when
        out.append(w["median_seconds"] / statistics.median(mine) - 1)
    return out


# --- one arm


def wait_steps(path, n, limit):
    deadline = time.time() + limit
    while len(proxy.steps(path)) < n:
        if time.time() > deadline:
            raise SystemExit(f"the trainer made {len(proxy.steps(path))} steps in {limit} s; see {path} and its run's "
                             f"stderr under the daemon's state folder")
        time.sleep(0.5)


def run_arm(a, tmp, round_no, arm, topology, nvml):
    name, guarded, progress, hook = arm
    folder = f"{tmp}/r{round_no}-{name}"
    os.makedirs(folder)
    os.chmod(folder, 0o755)
    out = f"{folder}/train.jsonl"
    if a.cpu_dry_run:  # the fake GPU is as busy as the trainer's own steps say
        with open(a.fake_gpu + ".new", "w") as f:
            f.write(f"gpu {GPU_BUS_DRY} steps {out} gpu_time {a.gpu_time}\n")
        os.replace(a.fake_gpu + ".new", a.fake_gpu)
    node = Node(a, folder, arm, topology, nvml)
    try:
        run_id = node.start_trainer(out, hook)
        wait_steps(out, a.warmup_steps, 300)
        p = node.call("job", "get", "--job", "t")["progress"]
        if hook and p.get("step_source") != "hook":
            raise SystemExit(f"arm {name}: the hook's steps do not arrive (progress: {json.dumps(p)}); "
                             f"PYTHONPATH={a.pythonpath}")
        poller = Poller(node, a.poll)
        poller.start()
        lead_start = time.time()
        time.sleep(a.lead)
        noise_start = time.time()
        noise = node.noise(1.0, a.hold + 5)
        time.sleep(a.hold)
        end = time.time()
        poller.stopped = True
        poller.join()
        node.stop_trainer(run_id)
        final = node.call("stats", "--job", "t")["jobs"][0]
        progress = node.call("job", "get", "--job", "t")["progress"]
    finally:
        node.stop()
    log = proxy.steps(out)
    alone = mean_step(log, lead_start + a.drop, noise_start)
    last = mean_step(log, end - a.last, end)
    guard = final.get("guard", {})
    return {"round": round_no, "arm": name, "steps_log": len(log), "steps_daemon": final["steps"],
            "step_source": progress.get("step_source"), "torch": progress.get("torch"),
            "source": progress.get("source"), "alone": alone,
            "slowdown": last / alone - 1 if alone and last else None,
            "settle": settle_time(log, alone, noise_start, end, a.budget, a.settle_window) if alone else None,
            "noise_rate": proxy.noise_rate(noise, end - a.last, end), "actions": guard.get("actions"),
            "share": guard.get("share"), "deviations": block_deviations(log, poller.samples, a.block) if hook else []}


# --- the report


def fmt(x, spec, scale=1.0, none="n/a"):
    return format(x * scale, spec) if x is not None else none


def fmt_settle(x):
    """A settle time; never (None or infinite in a median) when the trainer ended over budget."""
    return f"{x:.1f} s" if x is not None and x != float("inf") else "never"


def median_of(rows, key):
    if key == "settle":  # a round that never settled counts as the longest
        return statistics.median([float("inf") if r[key] is None else r[key] for r in rows]) if rows else None
    xs = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def check_1(rows):
    """Print the hook against the trainer's own log; True when both checks hold."""
    hooked = [r for r in rows if r["arm"] != "gpu"]
    ok = True
    print("\nCheck 1: the hook's steps against the trainer's own step log")
    for r in hooked:
        counts_ok = r["steps_log"] - 1 <= r["steps_daemon"] <= r["steps_log"]
        devs = [abs(d) for d in r["deviations"]]
        times_ok = bool(devs) and statistics.median(devs) <= 0.02
        ok = ok and counts_ok and times_ok
        print(f"  round {r['round']} {r['arm']:5}: steps {r['steps_daemon']} from the hook ({r['step_source']}, "
              f"torch {r['torch']}), {r['steps_log']} in the log: {'ok' if counts_ok else 'NOT within one'}; "
              f"window medians over {len(devs)} blocks: |deviation| median {fmt(devs and statistics.median(devs), '.2f', 100)} %, "
              f"max {fmt(devs and max(devs), '.2f', 100)} %: {'ok' if times_ok else 'NOT within 2 %'}")
    return ok


def check_2(a, rows):
    off = {r["round"]: r for r in rows if r["arm"] == "off"}
    for r in rows:
        base = off.get(r["round"], {}).get("noise_rate")
        r["kept"] = r["noise_rate"] / base if r["noise_rate"] is not None and base else None
    print(f"\nCheck 2: the guard (budget {100 * a.budget:.0f} %) beside stream on the cores left; settle: until the "
          f"slowdown over the trailing {a.settle_window:.0f} s stays within budget; slowdown and kept: the last "
          f"{a.last:.0f} s of {a.hold:.0f}")
    print("  round  arm    source  step alone    settle  slowdown  noise kept  final share  actions")
    for r in rows:
        acts = ",".join(f"{k} {v}" for k, v in (r["actions"] or {}).items() if v)
        print(f"  {r['round']:5}  {r['arm']:5}  {r['source'] or '-':6}  {fmt(r['alone'], '7.1f', 1e3)} ms  "
              f"{fmt_settle(r['settle']):>8}  {fmt(r['slowdown'], '+6.1f', 100)} %  "
              f"{fmt(r['kept'], '7.0f', 100)} %   {fmt(r['share'], '.2f', none='-'):>11}  {acts or '-'}")
    med = {name: {k: median_of([r for r in rows if r["arm"] == name], k) for k in ("settle", "slowdown", "kept")}
           for name, *_ in ARMS}
    print(f"  medians over {a.rounds} round(s):")
    for name, m in med.items():
        print(f"    {name:5}  settle {fmt_settle(m['settle'])}, slowdown {fmt(m['slowdown'], '+.1f', 100)} %, "
              f"noise kept {fmt(m['kept'], '.0f', 100)} %")
    s, g = med["steps"], med["gpu"]
    ratio = lambda x, y: f"{x / y:.2f}" if x is not None and y and y != float("inf") else "n/a"
    print(f"  steps / gpu peer: settle {ratio(s['settle'], g['settle'])}, slowdown "
          f"{ratio(s['slowdown'], g['slowdown'])}, noise kept {ratio(s['kept'], g['kept'])}")


# --- setup


def has_torch(python):
    return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0


def dry_run_defaults(a):
    """The 2-core test topology, the fake NVML, a tiny CPU trainer and short durations."""
    a.topology = a.topology or f"{a.root}/tests/topologies/ci-2core-gpu.xml"
    a.trainer_args = a.trainer_args or ["--device", "cpu", "--tiny", "--batch", "64", "--workers", "1", "--pool", "64"]
    a.trainer_cores = 1
    for key, value in dict(warmup_steps=20, lead=6, hold=30, last=20, settle_window=10, block=4, drop=1).items():
        if getattr(a, key) is None:
            setattr(a, key, value)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--build", default="build")
    p.add_argument("--root", default=".")
    p.add_argument("--out", default=None, help="folder for the raw record (default: a temporary one)")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the three arms (each about 7 min on a GPU)")
    p.add_argument("--budget", type=float, default=0.05)
    p.add_argument("--lead", type=float, default=None, help="seconds alone before the noise (default 15)")
    p.add_argument("--hold", type=float, default=None, help="seconds of noise (default 90)")
    p.add_argument("--last", type=float, default=None, help="the slowdown's and noise's seconds at the end (default 60)")
    p.add_argument("--settle-window", type=float, default=None, help="trailing seconds of settle (default 30)")
    p.add_argument("--block", type=float, default=None, help="seconds between check 1's samples (default 10)")
    p.add_argument("--drop", type=float, default=None, help="the lead-in's first seconds left out (default 2)")
    p.add_argument("--warmup-steps", type=int, default=None, help="steps before the lead-in (default 40)")
    p.add_argument("--poll", type=float, default=1.0)
    p.add_argument("--trainer-cores", type=int, default=6, help="the trainer rank's cores (its DataLoader's 5 workers)")
    p.add_argument("--topology", default=None, help="hwloc XML (default: h100-1numa.xml with this GPU's bus id)")
    p.add_argument("--python", default=None, help="the trainer's Python (default: this one, else /usr/bin/python3)")
    p.add_argument("--autoreport", default=None,
                   help="an installed autoreport folder (default: the source tree's, with its cosched module)")
    p.add_argument("--cpu-dry-run", action="store_true", help="the flow on a machine without a GPU (see above)")
    p.add_argument("--gpu-time", type=float, default=0.02, help="dry run: the fake GPU's seconds of work per step")
    p.add_argument("trainer_args", nargs="*", help="after --: the trainer's own options")
    a = p.parse_args()
    a.build, a.root = os.path.abspath(a.build), os.path.abspath(a.root)
    if a.cpu_dry_run:
        dry_run_defaults(a)
    for key, value in dict(warmup_steps=40, lead=15, hold=90, last=60, settle_window=30, block=10, drop=2).items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.last > a.hold:
        p.error(f"--last {a.last} is longer than the noise (--hold {a.hold})")
    a.python = a.python or next((x for x in (sys.executable, "/usr/bin/python3") if has_torch(x)), None)
    if not a.python:
        p.error("no Python with torch found: name one with --python")
    a.pythonpath = a.autoreport or f"{a.root}/libcosched/autoreport:{a.root}/libcosched/python"
    tmp = tempfile.mkdtemp(prefix="cosched-gpu-guard-")
    os.chmod(tmp, 0o755)
    out = a.out or tmp
    os.makedirs(out, exist_ok=True)
    a.fake_gpu = f"{tmp}/gpu.ctl"
    if a.cpu_dry_run:
        topology, nvml = a.topology, f"{a.build}/tests/daemon/fakegpu/libnvidia-ml.so.1"
        if not os.path.exists(nvml):
            p.error(f"{nvml} is not there: the dry run needs a build with the tests (meson -Dtests=true)")
    else:
        topology, nvml = proxy.topology_for_gpu(a, tmp), proxy.find_nvml()
    per_arm = 30 + a.lead + a.hold + 10
    print(f"topology {topology}, NVML {nvml or 'from the library path'}, trainer {a.python} with PYTHONPATH "
          f"{a.pythonpath}; {a.rounds} round(s) of 3 arms, about {a.rounds * 3 * per_arm / 60:.0f} min"
          f"{' (CPU dry run: the figures say nothing of a GPU)' if a.cpu_dry_run else ''}", flush=True)
    rows = []
    with open(f"{out}/gpu_guard.jsonl", "w", buffering=1) as record:
        for round_no in range(1, a.rounds + 1):
            for arm in ARMS:
                r = run_arm(a, tmp, round_no, arm, topology, nvml)
                record.write(json.dumps(r) + "\n")
                print(f"  round {round_no} {arm[0]}: {r['steps_log']} steps, slowdown {fmt(r['slowdown'], '+.1f', 100)} %, "
                      f"settle {fmt_settle(r['settle'])}", flush=True)
                rows.append(r)
    ok = check_1(rows)
    check_2(a, rows)
    if out != tmp:
        subprocess.run(["cp", "-r", tmp, f"{out}/run"], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nraw record: {out}/gpu_guard.jsonl")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
