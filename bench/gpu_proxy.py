#!/usr/bin/env python3
"""gpu_proxy: how well a GPU's busy time tracks a real training's slowdown, and the guard holding
that training with nothing but the GPU to go on. Needs a GPU node with NVML (or a stand-in
library on LD_LIBRARY_PATH), root, and a trainer command (default: bench/gpu_trainer.py).

Part A (the proxy). The trainer runs on --trainer-cpus and reports nothing to cosched; a real
coschedd (guard off) reads its GPU's busy time, one window a second, as the guard would. Its
co-tenant, `cosched-noise stream` started through the daemon on --noise-cpus, runs in blocks of
--block seconds at the intensities given, in a mirrored order (0, a, 0, b, ..., b, 0, a, 0) so
that drift hits every intensity alike. Per block, the first --drop seconds are left out (the
noise's start and the window that straddles it); the true slowdown is the block's mean step time
against the two no-noise blocks beside it, the GPU's is b0 / b - 1 from the mean busy fraction of
the windows inside the block against those of the blocks beside it (docs/guard.md, the model).

Part B (the guard). coschedd starts again with the guard on; after --lead seconds alone (the
baseline) the noise runs continuously at full intensity for --hold seconds. Reported: the step
time over the last half of the noise against the lead-in, the noise's throughput against its
unguarded full-intensity blocks of Part A, the share over time and the time to settle.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def cpulist(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def sh(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


class Daemon:
    def __init__(self, a, tmp, guarded, topology, nvml, mix=False):
        self.a, self.sock = a, f"{tmp}/c{int(guarded)}.sock"
        cfg = f"{tmp}/c{int(guarded)}.yaml"
        with open(cfg, "w") as f:
            f.write(f"slowdown_budget: {a.budget}\nguard:\n  enabled: {'true' if guarded else 'false'}\n")
            if nvml:
                f.write(f"progress:\n  nvml_library: {nvml}\n")
        self.log = f"{tmp}/daemon{int(guarded)}.log"
        self.proc = subprocess.Popen([f"{a.build}/daemon/coschedd", "--foreground", "--config", cfg, "--socket",
                                      self.sock, "--state-dir", f"{tmp}/state{int(guarded)}", "--topology", topology],
                                     stderr=open(self.log, "w"))
        for _ in range(200):
            if os.path.exists(self.sock):
                break
            time.sleep(0.05)
        uid = str(os.getuid())
        self.call("job", "register", "--job", "t", "--uid", uid, "--role", "trainer", "--cpus", a.trainer_cpus,
                  "--external", "--progress", "gpu")
        cpus = cpulist(a.noise_cpus)
        halves = (cpus[:len(cpus) // 2], cpus[len(cpus) // 2:]) if mix else (cpus,)
        for job, part in zip(("n", "b"), halves):  # b may share n's cores (a 1-CPU test machine)
            self.call("job", "register", "--job", job, "--uid", uid, "--role", "cotenant", "--cpus",
                      ",".join(map(str, part)), *(["--share-cores"] if job == "b" else []))

    def call(self, *args):
        out = subprocess.run([f"{self.a.build}/client/cosched", "--socket", self.sock, "--json", *args],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def noise(self, intensity, seconds, job="n", mode="stream"):
        """One noise run per rank of the co-tenant (a run is bound to one rank's CPUs)."""
        ranks = len(self.call("job", "get", "--job", job)["ranks"])
        return [self.call("run", "start", "--job", job, "--rank", str(r), "--", f"{self.a.build}/noise/cosched-noise",
                          mode, "--threads", "0", "--intensity", str(intensity), "--duration", str(seconds),
                          "--report-every", "0.5")["stdout"] for r in range(ranks)]

    def stop(self):
        for job in ("n", "b", "t"):
            try:
                self.call("job", "release", "--job", job)
            except subprocess.CalledProcessError:
                pass
        time.sleep(0.5)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()


class Poller(threading.Thread):
    """The trainer's job every --poll seconds: each new GPU window's busy fraction and the guard."""

    def __init__(self, daemon, period):
        super().__init__(daemon=True)
        self.d, self.period, self.windows, self.shares, self.stopped = daemon, period, [], [], False
        self.progress = None

    def run(self):
        seen = 0
        while not self.stopped:
            try:
                stats = self.d.call("stats")
                job = self.d.call("job", "get", "--job", "t")
            except (subprocess.CalledProcessError, json.JSONDecodeError):
                time.sleep(self.period)
                continue
            now, p = time.time(), job.get("progress", {})
            self.progress = p
            if p.get("gpu_windows", 0) > seen and p.get("gpu_busy") is not None:
                seen = p["gpu_windows"]
                self.windows.append((now, p["gpu_busy"]))
            for j in stats.get("jobs", []):
                if j.get("job") == "t" and "guard" in j:
                    g = j["guard"]
                    self.shares.append((now, g.get("share"), g.get("judged"), j.get("budget")))
            time.sleep(self.period)


def steps(path):
    out = []
    try:
        for line in open(path):
            try:
                s = json.loads(line) if line.endswith("\n") else None
            except ValueError:
                continue
            if s and s.get("event") == "step":
                out.append(s)
    except OSError:
        pass
    return out


def step_time(path, t0, t1):
    """Mean step time of the steps that ended between t0 and t1 (None with fewer than 3)."""
    ts = [s["t_step"] for s in steps(path) if t0 <= s["time"] <= t1]
    return statistics.mean(ts) if len(ts) >= 3 else None


def busy(windows, t0, t1):
    bs = [b for (when, b) in windows if t0 <= when - 0.5 <= t1]  # a window is read up to a poll after it ends
    return statistics.mean(bs) if bs else None


def noise_rate(paths, t0, t1, key="bytes"):
    """Bytes (or ops) per second the noise runs moved between t0 and t1 (their progress lines' wall time)."""
    moved = 0.0
    for path in paths:
        try:
            for line in open(path):
                try:
                    l = json.loads(line)
                except ValueError:
                    continue
                if l.get("event") == "progress" and t0 <= l.get("time", 0) <= t1:
                    moved += l[key]
        except OSError:
            return None
    return moved / (t1 - t0)


def topology_for_gpu(a, tmp):
    """The 16-core, one-GPU node's XML with the bus id of this machine's GPU (PCI, never index)."""
    if a.topology:
        return a.topology
    bus = sh("nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader").split()[0].lower()
    bus = re.sub(r"^0*([0-9a-f]{4}:)", r"\1", bus)
    xml = open(f"{a.root}/tests/topologies/h100-1numa.xml").read().replace('"0000:18:00.0"', f'"{bus}"')
    path = f"{tmp}/node.xml"
    open(path, "w").write(xml)
    return path


def find_nvml():
    for d in ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"):
        if os.path.exists(f"{d}/libnvidia-ml.so.1"):
            return f"{d}/libnvidia-ml.so.1"
    return None


def wait_steps(path, n, limit):
    deadline = time.time() + limit
    while len(steps(path)) < n:
        if time.time() > deadline:
            raise SystemExit(f"the trainer made {len(steps(path))} steps in {limit} s; see {path}")
        time.sleep(1)


def part_a(a, d, train_out, log):
    poller = Poller(d, a.poll)
    poller.start()
    order = [0.0]
    for x in a.intensities + a.intensities[::-1]:
        order += [x, 0.0]
    blocks = []
    for x in order:
        t0 = time.time()
        path = d.noise(x, a.block) if x > 0 else None
        time.sleep(a.block + 0.3)
        blocks.append({"intensity": x, "t0": t0, "t1": time.time(), "noise": path})
    time.sleep(1.5)  # the last window read
    poller.stopped = True
    poller.join()
    rows = []
    for i, b in enumerate(blocks):
        lo, hi = b["t0"] + a.drop, b["t1"]
        b["step"], b["busy"] = step_time(train_out, lo, hi), busy(poller.windows, lo, hi)
        b["rate"] = noise_rate(b["noise"], lo, hi) if b["noise"] else None
    for i, b in enumerate(blocks):
        if b["intensity"] == 0:
            continue
        quiet = [blocks[j] for j in (i - 1, i + 1) if 0 <= j < len(blocks) and blocks[j]["intensity"] == 0]
        q_step = [q["step"] for q in quiet if q["step"]]
        q_busy = [q["busy"] for q in quiet if q["busy"]]
        if not (q_step and q_busy and b["step"] and b["busy"]):
            rows.append({"intensity": b["intensity"], "missing": True})
            continue
        rows.append({"intensity": b["intensity"], "step_alone": statistics.mean(q_step), "step": b["step"],
                     "busy_alone": statistics.mean(q_busy), "busy": b["busy"],
                     "slowdown": b["step"] / statistics.mean(q_step) - 1,
                     "gpu_slowdown": statistics.mean(q_busy) / b["busy"] - 1, "noise_rate": b["rate"]})
    log({"part": "A", "blocks": blocks, "rows": rows, "windows": poller.windows, "progress": poller.progress})
    return rows


def part_b(a, d, train_out, full_rate, log):
    poller = Poller(d, a.poll)
    poller.start()
    start = time.time()
    time.sleep(a.lead)
    noise_start = time.time()
    path = d.noise(1.0, a.hold + 5)
    time.sleep(a.hold)
    end = time.time()
    time.sleep(1.5)
    poller.stopped = True
    poller.join()
    settle = next((when - noise_start for (when, share, judged, budget) in poller.shares
                   if when > noise_start and share is not None and share < 1 and judged
                   and judged["ci95"][0] <= budget), None)
    half = noise_start + a.hold / 2
    alone = step_time(train_out, start + 3, noise_start)
    held = step_time(train_out, half, end)
    rate = noise_rate(path, half, end)
    res = {"step_alone": alone, "step_held": held, "slowdown": held / alone - 1 if alone and held else None,
           "busy_alone": busy(poller.windows, start + 3, noise_start), "busy_held": busy(poller.windows, half, end),
           "noise_rate": rate, "kept": rate / full_rate if rate and full_rate else None, "settle": settle,
           "final_share": poller.shares[-1][1] if poller.shares else None,
           "shares": [(round(w - noise_start, 2), s) for (w, s, _, _) in poller.shares]}
    log({"part": "B", **res, "windows": poller.windows, "status": d.call("status")})
    return res


def part_mix(a, d, train_out, log):
    """The guard (law 2) beside stream on half the noise CPUs and busy on the other half: which it
    finds guilty, and what each keeps of its first unguarded seconds."""
    poller = Poller(d, a.poll)
    poller.start()
    start = time.time()
    time.sleep(a.lead)
    noise_start = time.time()
    paths = {"n": d.noise(1.0, a.hold + 5, "n", "stream"), "b": d.noise(1.0, a.hold + 5, "b", "busy")}
    time.sleep(a.hold)
    end = time.time()
    stats = d.call("stats", "--job", "t")["jobs"][0]
    shares = {j: d.call("job", "get", "--job", j)["allowed_share"] for j in ("n", "b")}
    poller.stopped = True
    poller.join()
    half = noise_start + a.hold / 2
    early = (noise_start + 1, noise_start + 6)  # before the first judgement (8 windows)
    alone, held = step_time(train_out, start + 3, noise_start), step_time(train_out, half, end)
    res = {"verdicts": {c["job"]: c["verdict"] for c in stats["guard"]["attribution"]["cotenants"]},
           "probes": stats["guard"]["attribution"]["probes"], "shares": shares,
           "slowdown": held / alone - 1 if alone and held else None,
           "stream_kept": noise_rate(paths["n"], half, end) / max(noise_rate(paths["n"], *early), 1),
           "busy_kept": noise_rate(paths["b"], half, end, "ops") / max(noise_rate(paths["b"], *early, "ops"), 1)}
    log({"part": "mix", **res, "windows": poller.windows, "share_trace": poller.shares})
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--root", default=".")
    p.add_argument("--out", default=None, help="folder for the raw record (default: a temporary one)")
    p.add_argument("--trainer-cpus", default="0-5")
    p.add_argument("--noise-cpus", default="6-15")
    p.add_argument("--trainer", default=None, help="trainer command line; it gets --out FILE --duration S")
    p.add_argument("--topology", default=None, help="hwloc XML (default: h100-1numa.xml with this GPU's bus id)")
    p.add_argument("--intensities", default="1,0.5,0.25")
    p.add_argument("--block", type=float, default=9)
    p.add_argument("--drop", type=float, default=2.5)
    p.add_argument("--lead", type=float, default=30)
    p.add_argument("--hold", type=float, default=100)
    p.add_argument("--budget", type=float, default=0.05)
    p.add_argument("--poll", type=float, default=0.25)
    p.add_argument("--warmup-steps", type=int, default=60)
    p.add_argument("--skip-guard", action="store_true")
    p.add_argument("--mix", action="store_true",
                   help="only the guard beside stream (half the noise CPUs) and busy (the other half)")
    a = p.parse_args()
    a.build, a.root = os.path.abspath(a.build), os.path.abspath(a.root)
    a.intensities = [float(x) for x in a.intensities.split(",")]
    tmp = tempfile.mkdtemp(prefix="cosched-gpu-proxy-")
    out = a.out or tmp
    os.makedirs(out, exist_ok=True)
    record = open(f"{out}/gpu_proxy.jsonl", "w", buffering=1)
    log = lambda obj: record.write(json.dumps(obj) + "\n")
    topology, nvml = topology_for_gpu(a, tmp), find_nvml()
    print(f"topology {topology}, NVML {nvml or 'from the library path'}", flush=True)
    train_out = f"{out}/train.jsonl"
    total = 60 + len(a.intensities) * 4 * a.block + a.block + (0 if a.skip_guard else a.lead + a.hold + 30)
    if a.mix:
        total = 60 + a.lead + a.hold
    cmd = (a.trainer.split() if a.trainer else [sys.executable, f"{a.root}/bench/gpu_trainer.py"])
    trainer = subprocess.Popen(["taskset", "-c", a.trainer_cpus, *cmd, "--out", train_out, "--duration",
                                str(total + 120)], stderr=open(f"{out}/train.err", "w"))
    d = None
    try:
        wait_steps(train_out, a.warmup_steps, 240)
        if a.mix:
            d = Daemon(a, tmp, True, topology, nvml, mix=True)
            res = part_mix(a, d, train_out, log)
            d.stop()
            d = None
            print(f"\nMix: the guard beside stream and busy (budget {100 * a.budget:.0f} %): verdicts {res['verdicts']} "
                  f"after {res['probes']} probes, shares {res['shares']}, slowdown over the last {a.hold / 2:.0f} s "
                  f"{100 * (res['slowdown'] or 0):+.1f} %, kept of the first unguarded seconds: stream "
                  f"{100 * res['stream_kept']:.0f} %, busy {100 * res['busy_kept']:.0f} %")
            return 0
        d = Daemon(a, tmp, False, topology, nvml)
        time.sleep(4)
        gpu = d.call("job", "get", "--job", "t").get("progress", {})
        print("trainer's progress:", json.dumps(gpu), flush=True)
        rows = part_a(a, d, train_out, log)
        d.stop()
        d = None
        print(f"\nPart A: GPU busy against step time ({a.block:.0f} s blocks, first {a.drop} s dropped)")
        print(" intensity  step alone  step beside  slowdown  busy alone  busy beside  b0/b-1  noise GB/s")
        for r in rows:
            if r.get("missing"):
                print(f"  {r['intensity']:.2f}      (no data)")
                continue
            print(f"  {r['intensity']:.2f}      {1e3 * r['step_alone']:7.1f} ms  {1e3 * r['step']:7.1f} ms  "
                  f"{100 * r['slowdown']:+6.1f} %  {r['busy_alone']:9.3f}  {r['busy']:10.3f}  "
                  f"{100 * r['gpu_slowdown']:+6.1f} %  {(r['noise_rate'] or 0) / 1e9:8.2f}", flush=True)
        full = [r["noise_rate"] for r in rows if not r.get("missing") and r["intensity"] == 1.0 and r["noise_rate"]]
        if a.skip_guard:
            return 0
        d = Daemon(a, tmp, True, topology, nvml)
        res = part_b(a, d, train_out, statistics.mean(full) if full else None, log)
        d.stop()
        d = None
        print(f"\nPart B: the guard holding it on GPU busy time alone (budget {100 * a.budget:.0f} %)")
        fmt = lambda x, f: f % x if x is not None else "n/a"
        print(f"  step time alone {fmt(res['step_alone'] and 1e3 * res['step_alone'], '%.1f')} ms, held "
              f"{fmt(res['step_held'] and 1e3 * res['step_held'], '%.1f')} ms: slowdown "
              f"{fmt(res['slowdown'] and 100 * res['slowdown'], '%+.1f')} % (last {a.hold / 2:.0f} s of the noise)")
        print(f"  GPU busy alone {fmt(res['busy_alone'], '%.3f')}, held {fmt(res['busy_held'], '%.3f')}")
        print(f"  noise kept {fmt(res['kept'] and 100 * res['kept'], '%.0f')} % of its unguarded throughput, "
              f"settled after {fmt(res['settle'], '%.1f')} s, final share {fmt(res['final_share'], '%.2f')}")
        print("  share over time:", " ".join(f"{t:.0f}s:{s:.2f}" for (t, s) in res["shares"][::8] if s is not None))
        return 0
    finally:
        if d:
            d.stop()
        trainer.send_signal(signal.SIGTERM)
        try:
            trainer.wait(10)
        except subprocess.TimeoutExpired:
            trainer.kill()
        subprocess.run(["cp", "-r", tmp, f"{out}/run"], check=False)


if __name__ == "__main__":
    sys.exit(main())
