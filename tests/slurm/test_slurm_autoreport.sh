#!/bin/bash
# test_slurm_autoreport: an unmodified PyTorch job (no cosched import) as Slurm runs it, judged by
# its optimizer steps through the step reporter the TaskProlog puts first on its PYTHONPATH
# (autoreport in coschedd.yaml, docs/slurm.md). A real one-node Slurm (cgroup v1 confinement, a
# gres GPU whose NVML is the stand-in of tests/daemon/fakegpu) runs cosched's prolog, epilog and
# TaskProlog beside a real coschedd. The trainer's steps follow a model, not this machine's CPU:
# a step sleeps 40 ms, 60 ms when the file 'busy' exists, which the co-tenant (a plain sbatch job
# in a CPU loop) makes again whenever it runs and the trainer removes. So the guard must hold the
# co-tenant. With autoreport.enabled false (a reload) the same job gets no reporter. Checked are
# states (the daemon's replies and log, the task's environment), never a rate.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
. "$here/../daemon/gpu_daemon_lib.sh"
chmod 755 "$tmp"
autoreport=$root/libcosched/autoreport # the source tree's, as autoreport.dir
need_slurm
need_cgroup_v1
/usr/bin/python3 -c 'import torch' 2>/dev/null || skip_all "no torch for /usr/bin/python3 (Debian's python3-torch)"
# the trainers' loops end; none of the jobs' processes outlives the test
end_trainers() { touch "$tmp/stop.on" "$tmp/stop.off" "$tmp/exit"; }
at_exit kill_job_pids
at_exit end_trainers
config() { # config true|false: coschedd.yaml with the site switch so
	write_config "slowdown_budget: 0.05
guard:
  pause_timeout: 30
  baseline_steps: 10
  slurm_conf: $tmp/slurm/slurm.conf
autoreport:
  enabled: $1
  dir: $autoreport"
}
set_gpu "gpu 0000:03:00.0 busy 0.9"
daemon_env=(COSCHED_FAKE_GPU="$tmp/gpu.ctl" LD_LIBRARY_PATH="$fakegpu")
config true
start_daemon --topology "$topologies/ci-2core-gpu.xml" || { not_ok "coschedd starts"; finish; exit; }

cosched_scripts "$sock"
SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_GPUS=1 slurm_up \
	"a one-node Slurm with cgroup confinement, a GPU gres and cosched's scripts starts" start_slurm || { finish; exit; }

# The training script: plain PyTorch, nothing of cosched. Its own count of steps goes to
# steps.TAG; once stop.TAG exists it writes done.TAG and waits to be ended.
cat >"$tmp/train.py" <<'PY'
import os, sys, time
import torch
here, tag = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
model = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 16), torch.randn(32, 4)

def write(name, text):
    with open(os.path.join(here, name + ".new"), "w") as f:
        f.write(text)
    os.replace(os.path.join(here, name + ".new"), os.path.join(here, name))

steps = 0
while not os.path.exists(os.path.join(here, "stop." + tag)):
    try:  # the co-tenant's mark: the slowdown of the model
        os.unlink(os.path.join(here, "busy"))
        time.sleep(0.06)
    except FileNotFoundError:
        time.sleep(0.04)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    steps += 1
    write("steps." + tag, str(steps))
write("done." + tag, str(steps))
while not os.path.exists(os.path.join(here, "exit")):
    time.sleep(0.1)
PY
# The co-tenant: a CPU loop that makes the trainer's 'busy' file whenever it runs.
cat >"$tmp/cotenant.py" <<'PY'
import sys
while True:
    open(sys.argv[1], "w").close()
PY
# The job's own PYTHONPATH holds the source tree's cosched module, which an installed reporter
# finds by itself; the TaskProlog puts the reporter before it.
trainer_job() { # trainer_job TAG: sbatch a trainer on the GPU, its task's PYTHONPATH kept in pythonpath.TAG
	sbatch --parsable -n1 -c1 --gres=gpu:1 -o "$tmp/train.$1.out" \
		--export=ALL,PYTHONPATH="$root/libcosched/python",PYTHONDONTWRITEBYTECODE=1 \
		--wrap "srun bash -c 'printenv PYTHONPATH >$tmp/pythonpath.$1; exec /usr/bin/python3 $tmp/train.py $tmp $1'"
}
own_steps() { cat "$tmp/steps.$1" 2>/dev/null || echo 0; }
at_least() { [ "$(own_steps "$1")" -ge "$2" ]; }

tr=$(trainer_job on)
registered() { c --json job get --job "$1" | py 'assert d["role"] == "'"$2"'"'; }
check "the GPU job is registered as a trainer by the prolog" wait_for 60 registered "$tr" trainer
gets_reporter() { c --json job get --job "$1" | py 'assert d.get("autoreport") == "'"$autoreport"'", d.get("autoreport")'; }
check "job get says it gets the step reporter, from autoreport.dir" gets_reporter "$tr"
wait_for 120 test -s "$tmp/pythonpath.on"
check "the TaskProlog put the reporter first on the task's PYTHONPATH, the job's own after it" \
	test "$(cat "$tmp/pythonpath.on" 2>/dev/null)" = "$autoreport:$root/libcosched/python"
by_hook() { c --json job get --job "$tr" | py '
p = d["progress"]
assert p["source"] == "steps" and p["step_source"] == "hook" and p["torch"].startswith("1.13"), p'; }
check "the unmodified script is judged by its steps from the PyTorch hook (torch 1.13)" wait_for 120 by_hook
c --json job get --job "$tr" | py 'print("# progress:", json.dumps(d["progress"]["step_source"]), d["progress"]["torch"], d["progress"]["reason"])'
daemon_steps() { c --json stats --job "$tr" | py 'print(d["jobs"][0]["steps"])'; }
counted() { [ "$(daemon_steps)" -ge 20 ]; }
check "coschedd counts its steps" wait_for 60 counted
watching() { c --json stats --job "$tr" | py 'assert d["jobs"][0]["guard"]["phase"] == "idle"'; }
check "alone, its guard is idle" watching

co=$(sbatch --parsable -n1 -c1 -o /dev/null --wrap "srun /usr/bin/python3 $tmp/cotenant.py $tmp/busy")
held_in_slurm() { c --json job get --job "$co" | py 'assert d["role"] == "cotenant" and d["hold"]["where"] == "slurm", d["hold"]'; }
check "the co-tenant is held in the cgroups Slurm made for it" wait_for 60 held_in_slurm
throttled() { c --json stats --job "$tr" | py 'g = d["jobs"][0]["guard"]; assert g["actions"]["throttle"] >= 1 and g["share"] < 1, g'; }
check "the co-tenant slows the trainer's steps by half: the guard throttles it" wait_for 120 throttled
logged() { grep -q "guard: job $tr throttle: co-tenants' share" "$tmp/daemon.log"; }
check "... and logs the throttle" logged
cut() { c --json job get --job "$co" | py 'assert d["allowed_share"] < 1 and d["hold"]["where"] == "slurm", d'; }
check "job get says the co-tenant's share is cut, held where Slurm put it" cut
grep -E "guard: job $tr" "$tmp/daemon.log" | head -8 | sed 's/^/# /'

# The count: the script's own against coschedd's, within one (the first step starts the clock).
touch "$tmp/stop.on"
wait_for 60 test -s "$tmp/done.on"
own=$(cat "$tmp/done.on" 2>/dev/null || echo 0)
caught_up() { [ "$(daemon_steps)" -ge $((own - 1)) ]; }
wait_for 30 caught_up
within_one() { local n; n=$(daemon_steps) && [ "$own" -gt 0 ] && [ "$n" -ge $((own - 1)) ] && [ "$n" -le "$own" ]; }
check "coschedd counted the script's $own steps, within one ($(daemon_steps))" within_one
touch "$tmp/exit"
scancel "$co" "$tr"
both_end() { slurm_wait_job "$co" 120 && slurm_wait_job "$tr" 120; }
check "both jobs end on scancel" both_end
both_released() { wait_for 30 released "$co" && wait_for 30 released "$tr"; }
check "the epilogs release both" both_released
rm -f "$tmp/exit" "$tmp/busy"

# The site's switch off, by a reload: the same job gets no reporter, and so no steps.
config false
kill -HUP "$daemon_pid"
reloaded() { grep -q "configuration reloaded from" "$tmp/daemon.log"; }
check "coschedd reloads its configuration (autoreport.enabled: false)" wait_for 30 reloaded
tr=$(trainer_job off)
check "the same GPU job is registered as a trainer" wait_for 60 registered "$tr" trainer
no_reporter() { c --json job get --job "$tr" | py 'assert d.get("autoreport") in (None, False), d.get("autoreport")'; }
check "job get says it gets no step reporter" no_reporter
wait_for 120 test -s "$tmp/pythonpath.off"
check "the TaskProlog left the task's PYTHONPATH as the job had it" \
	test "$(cat "$tmp/pythonpath.off" 2>/dev/null)" = "$root/libcosched/python"
check "the script trains (30 steps of its own)" wait_for 120 at_least off 30
# (stats' "steps" would count the GPU's windows now: the source says it)
no_steps() { c --json job get --job "$tr" | py '
p = d["progress"]
assert p["step_source"] is None and p["source"] == "gpu", p'; }
check "... and coschedd has no step of it, no hook: it is judged by its GPU" no_steps
touch "$tmp/stop.off" "$tmp/exit"
scancel "$tr"
slurm_wait_job "$tr" 120
check "its epilog releases it" wait_for 30 released "$tr"
stop_daemon
check "coschedd exits cleanly after the jobs are gone" test $? = 0
[ "$tap_failed" = 0 ] || { sed 's/^/# daemon: /' "$tmp/daemon.log" | tail -60; sed 's/^/# slurm: /' "$tmp/slurm.log" 2>/dev/null | tail -20; }
finish
