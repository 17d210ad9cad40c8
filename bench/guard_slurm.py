"""guard_slurm: the Slurm-shaped case of bench/guard.py — the guard with nothing but what a cluster
gives it. The trainer (cosched-train on CPU 0) is started outside coschedd and reports nothing:
its progress reaches the guard only as its GPU's busy time, through the stand-in NVML of
tests/daemon/fakegpu, on the model's own premise (G seconds of GPU work per step, so
busy = G / its real step time; G is 0.9 of its step time alone). The co-tenant
(cosched-noise stream on CPU 1) runs in cgroup v1 cpuset and freezer trees laid out as Slurm's
(job_<id>/step_0), and `cosched job confine`, called from inside them as the TaskProlog calls it,
has it held there. What this measures is the guard's plumbing and law with an indirect, 1 s
source and an external co-tenant, on real interference; not how a real GPU's busy time tracks a
real training (docs/guard.md says so). Needs root and the v1 cpuset and freezer hierarchies."""
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

V1 = "/sys/fs/cgroup"


def usable():
    """None when this case can run here, else why not."""
    if os.geteuid() != 0:
        return "it needs root (cgroups)"
    for h in ("cpuset", "freezer"):
        if not os.path.isdir(f"{V1}/{h}"):
            return f"there is no cgroup v1 {h} hierarchy at {V1}/{h}"
    return None


def _cpuset(path, cpu):
    """A v1 cpuset on the way down to path: every CPU above job_<id>, cpu from there."""
    d, cpus = f"{V1}/cpuset", open(f"{V1}/cpuset/cpuset.cpus").read().strip()
    mems = open(f"{V1}/cpuset/cpuset.mems").read().strip().split(",")[0].split("-")[0]
    for part in path.split("/"):
        d = f"{d}/{part}"
        if part.startswith("job_"):
            cpus = str(cpu)
        os.makedirs(d, exist_ok=True)
        open(f"{d}/cpuset.cpus", "w").write(cpus)
        open(f"{d}/cpuset.mems", "w").write(mems)


def _remove(top, root_procs):
    """Processes back to the hierarchy's root, the tree removed deepest first."""
    for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
        try:
            for pid in open(f"{d}/cgroup.procs").read().split():
                try:
                    open(root_procs, "w").write(pid)
                except OSError:
                    pass
        except OSError:
            pass
        try:
            os.rmdir(d)
        except OSError:
            pass


def _step_times(path):
    out = []
    try:
        for line in open(path):
            if line.endswith("\n") and '"event":"step"' in line:
                out.append(json.loads(line)["t_step"])
    except (OSError, ValueError):
        pass
    return out


def _in_job(cgroup_procs, argv, **popen):
    """argv started inside the job's cgroups, as slurmstepd starts a task."""
    script = 'for f in "${@:2:$1}"; do echo $$ >"$f" || exit 99; done; shift $(($1 + 1)); exec "$@"'
    return subprocess.Popen(["bash", "-c", script, "_", str(len(cgroup_procs)), *cgroup_procs, *argv], **popen)


def one_run(args, guarded, cosched, noise_rate):
    """One Slurm-shaped run: the figures bench/guard.py reports for each case."""
    tmp = tempfile.mkdtemp(prefix="cosched-bench-slurm-")
    sock, ctl = f"{tmp}/c.sock", f"{tmp}/gpu.ctl"
    prefix = f"cosched-bench-slurm-{os.getpid()}"
    job = f"{prefix}/uid_0/job_7"
    procs = [f"{V1}/cpuset/{job}/step_0/cgroup.procs", f"{V1}/freezer/{job}/step_0/cgroup.procs"]

    def set_gpu(line):
        open(ctl + ".new", "w").write(line + "\n")
        os.rename(ctl + ".new", ctl)

    set_gpu("gpu 0000:03:00.0 busy 0.9")
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(f"slowdown_budget: {args.budget}\nguard:\n  enabled: {'true' if guarded else 'false'}\n")
    env = dict(os.environ, COSCHED_FAKE_GPU=ctl, LD_LIBRARY_PATH=f"{args.build}/tests/daemon/fakegpu")
    daemon = subprocess.Popen([f"{args.build}/daemon/coschedd", "--foreground", "--config", f"{tmp}/c.yaml",
                               "--socket", sock, "--state-dir", f"{tmp}/state", "--topology",
                               f"{args.root}/tests/topologies/ci-2core-gpu.xml"],
                              env=env, stderr=open(f"{tmp}/daemon.log", "w"))
    trainer = noise = None
    try:
        _cpuset(f"{job}/step_0", 1)
        os.makedirs(f"{V1}/freezer/{job}/step_0", exist_ok=True)
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        uid = str(os.getuid())
        cosched(args.build, sock, "job", "register", "--job", "t", "--uid", uid, "--role", "trainer", "--cpus", "0",
                "--external", "--progress", "gpu")
        cosched(args.build, sock, "job", "register", "--job", "7", "--uid", uid, "--role", "cotenant", "--cpus", "1",
                "--external")
        trainer = subprocess.Popen(["taskset", "-c", "0", f"{args.build}/trainer/cosched-train", "--model", "resnet20",
                                    "--data", "synthetic:4096", "--batch", "32", "--steps", "1000000", "--threads", "1"],
                                   stdout=open(f"{tmp}/train.out", "w"), stderr=subprocess.DEVNULL)
        trace, shares = [], []

        def poll(until):
            while time.time() < until:
                trace.append((time.time(), len(_step_times(f"{tmp}/train.out"))))
                for j in cosched(args.build, sock, "stats")["jobs"]:
                    if j["job"] == "t":
                        g = j["guard"]
                        shares.append((time.time(), g["share"], g["judged"], j["budget"]))
                time.sleep(0.2)

        started = time.time()
        poll(started + 8)
        gpu_time = 0.9 * statistics.median(_step_times(f"{tmp}/train.out")[-40:])
        set_gpu(f"gpu 0000:03:00.0 steps {tmp}/train.out gpu_time {gpu_time:.6f}")
        poll(started + max(args.alone, 35))  # a whole baseline (20 windows) on the model
        noise_start = time.time()
        noise = _in_job(procs, [f"{args.build}/noise/cosched-noise", "stream", "--duration", str(args.noise + 10),
                                "--report-every", "0.5"], stdout=open(f"{tmp}/noise.out", "w"))
        time.sleep(0.2)
        _in_job(procs, [f"{args.build}/client/cosched", "--socket", sock, "job", "confine", "--job", "7"],
                stdout=subprocess.DEVNULL).wait()
        poll(noise_start + args.noise)
        end = time.time()

        def steps_between(t0, t1):
            def index_at(t):
                before = [n for (when, n) in trace if when <= t]
                return before[-1] if before else 0
            return _step_times(f"{tmp}/train.out")[index_at(t0):index_at(t1)]

        settle = next((when - noise_start for (when, share, judged, budget) in shares
                       if when > noise_start and share < 1 and judged and judged["ci95"][0] <= budget), None)
        window_start = noise_start + args.window
        alone = steps_between(started + 10, noise_start)
        beside = steps_between(window_start, end)
        return {
            "guarded": guarded,
            "slowdown": statistics.median(beside) / statistics.median(alone) - 1,
            "noise_rate": noise_rate(f"{tmp}/noise.out", window_start, end),
            "settle": settle,
            "final_share": shares[-1][1] if shares else 1.0,
            "steps": (len(alone), len(beside)),
        }
    finally:
        for p in (trainer, noise):
            if p:
                p.kill()
                p.wait()
        try:
            cosched(args.build, sock, "job", "release", "--job", "7")
            cosched(args.build, sock, "job", "release", "--job", "t")
        except Exception:
            pass
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        _remove(f"{V1}/freezer/{prefix}", f"{V1}/freezer/cgroup.procs")
        _remove(f"{V1}/cpuset/{prefix}", f"{V1}/cpuset/cgroup.procs")
        shutil.rmtree(tmp, ignore_errors=True)
