#!/bin/bash
# test_slurm_guard: the guard for jobs exactly as Slurm runs them, with no change to the job
# scripts. A real one-node Slurm (cgroup v1 confinement, proctrack/cgroup) runs cosched's prolog,
# epilog and TaskProlog beside a real coschedd; a GPU job runs a trainer that reports nothing
# (`sleep`), its GPU a stand-in NVML (tests/daemon/fakegpu) whose busy fraction falls as the knobs
# allow the co-tenant's busy processes CPU: busy = 0.9 / (1 + 0.2 x their CPUs, read from the
# kernel's files), so with a 5 % budget the guard must hold the co-tenant to about a quarter of a
# CPU. The co-tenant is a plain sbatch job running `cosched-noise stream`, held in the cgroups
# Slurm made for it. Then: Slurm's suspend is left alone, kill -9 of coschedd and a restart leave
# nothing stopped; a held job Slurm cancels is let go of entirely — no pause, no quota — until it
# has acted on the signal (a checkpoint of 2 CPU seconds, with a CPU hog beside it), for at most
# Slurm's KillWait (read from slurm.conf) and a margin, while `scancel --signal=USR1` every 100 ms
# gains a held job no more than 2 points of a CPU (only an ending job is let go whole); scancel
# ends a held job at once without draining the node, and the epilogs undo everything. What is
# checked is state (the kernel's files, /proc, the daemon's replies and log), and CPU time read
# from the kernel against an upper bound, never a rate that a loaded machine could fail.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
. "$here/../daemon/gpu_daemon_lib.sh"
chmod 755 "$tmp"
need_slurm
need_cgroup_v1
node=$(hostname -s)
# nothing this test stopped may outlive it, whatever failed; nothing of other tests is touched
hog_pids=
kill_hogs() { [ -z "$hog_pids" ] || kill $hog_pids 2>/dev/null; }
at_exit kill_job_pids
at_exit kill_hogs
# GPU windows of half a second and a baseline of ten: the same law, in half the time.
guard_config="slowdown_budget: 0.05
progress:
  gpu_window: 0.5
guard:
  pause_timeout: 30
  baseline_steps: 10
  slurm_conf: $tmp/slurm/slurm.conf"
start_guard_daemon() { start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "$guard_config"; } # stand-in NVML
set_gpu "gpu 0000:03:00.0 busy 0.9"

cosched_scripts "$sock"
start_guard_daemon || { not_ok "coschedd starts"; finish; exit; }
SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_GPUS=1 SLURM_CLUSTER_KILL_WAIT=60 \
	slurm_up "a one-node Slurm with cgroup confinement and cosched's scripts starts" start_slurm || { finish; exit; }

# The trainer: a GPU job that reports nothing. The co-tenant: cosched-noise stream, as any user would run it.
tr=$(sbatch --parsable -n1 -c1 --gres=gpu:1 -o /dev/null --wrap "srun sleep 600")
co=$(sbatch --parsable -n1 -c1 -o /dev/null --wrap "srun -o $tmp/noise.out $build/noise/cosched-noise stream --duration 600 --threads 1")
freezer=/sys/fs/cgroup/freezer/slurm_$node/uid_0/job_$co
set_gpu "gpu 0000:03:00.0 busy 0.9 k 0.2 cotenant $freezer"
held_in_slurm() { c --json job get --job "$co" | py 'assert d["hold"]["where"] == "slurm", d["hold"]'; }
check "the TaskProlog's job confine has the co-tenant held in the cgroups Slurm made for it" wait_for 60 held_in_slurm
c --json job get --job "$tr" >"$tmp/t.json"
check "the GPU job is a trainer whose progress comes from its GPU's busy time, through NVML" py '
p = d["progress"]
assert d["role"] == "trainer" and p["source"] == "gpu" and p["gpus"][0]["library"] == "nvml", p' <"$tmp/t.json"
c --json job get --job "$co" >"$tmp/n.json"
check "the co-tenant's knob is the CFS quota on a group of cosched's in the cpu hierarchy" \
	py 'assert d["knob"] == "cfs-quota" and d["hold"]["cgroup"].endswith("/job_'"$co"'"), d' <"$tmp/n.json"

watching() { c --json stats --job "$tr" | py 'g=d["jobs"][0]["guard"]; assert g["phase"] == "watching"'; }
check "the guard took its baseline from the GPU, the co-tenant paused meanwhile" wait_for 90 watching
throttled() { c --json stats --job "$tr" | py 'g=d["jobs"][0]["guard"]; assert g["actions"]["throttle"] >= 1 and g["share"] < 1'; }
check "the co-tenant costs the trainer 20 %: the guard throttles it" wait_for 60 throttled
held() { c --json stats --job "$tr" | py '
j=d["jobs"][0]; g=j["guard"]; s=g["judged"]
assert g["phase"] == "watching" and g["share"] < 1 and s and s["ci95"][0] <= j["budget"]'; }
check "and the trainer's slowdown comes back within budget" wait_for 90 held
# What the kernel holds the co-tenant to: the CFS quota of cosched's cpu group for it, which its
# task joined (Slurm's task/cgroup keeps no cpu hierarchy), and its processes' states.
noise_pid() { for p in $(cat "$freezer"/step_0/cgroup.procs 2>/dev/null); do echo "$p"; return; done; return 1; }
quota_is_share() { local p; p=$(noise_pid) && held_by_kernel "$co" "$p" 1; }
check "the kernel holds the co-tenant to the guard's share: the CFS quota of its cpu group" wait_for 30 quota_is_share
echo "# the co-tenant's share: $(c --json job get --job "$co" | py 'print(d["allowed_share"])') (the model: 0.25 keeps the trainer within 5 %)"
noise_works() { local p; p=$(noise_pid) && works "$p"; } # it gets CPU, however little
check "while it keeps working" noise_works
busy() { c --json job get --job "$tr" | py 'assert d["progress"]["gpu_busy"] >= 0.84, d["progress"]["gpu_busy"]'; }
check "the trainer's GPU busy fraction recovers (>= 0.84 of 0.9)" wait_for 30 busy
grep -E "guard: (job $tr|co-tenant $co)" "$tmp/daemon.log" | sed 's/^/# /' | head -20

# Slurm suspends the co-tenant: it stays suspended whatever the guard does, and resumes with Slurm.
c guard set --job "$co" --share 0 >/dev/null
stopped_by_cosched() { c --json job get --job "$co" | py 'assert d["allowed_share"] == 0'; }
wait_for 30 stopped_by_cosched
scontrol suspend "$co"
suspended_seen() { grep -q "co-tenant $co: Slurm suspended it" "$tmp/daemon.log"; }
check "coschedd sees Slurm suspend the co-tenant" wait_for 30 suspended_seen
c guard set --job "$co" --share 1 >/dev/null
step_frozen() { grep -qx FROZEN "$freezer/step_0/freezer.state"; }
no_cpu() { # Slurm's freezer holds the step: its process is frozen ('D') and gets no CPU at all
	local p before
	wait_for 30 step_frozen && p=$(noise_pid) && [ "$(proc_state "$p")" = D ] &&
		before=$(cpu_ticks "$p") && sleep 0.5 && [ "$(cpu_ticks "$p")" = "$before" ]
}
check "a job suspended with scontrol suspend stays suspended while coschedd lets go of it" no_cpu
c guard set --job "$co" --share 0 >/dev/null
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
start_guard_daemon
check "... and across a kill -9 of coschedd and a restart" no_cpu
check "... its step still frozen by Slurm" grep -qx FROZEN "$freezer/step_0/freezer.state"
scontrol resume "$co"
c guard set --job "$co" --share 1 >/dev/null # pinned: the restarted guard would pause it to learn
step_thawed() { grep -qx THAWED "$freezer/step_0/freezer.state"; }
resumed_works() { wait_for 30 step_thawed && noise_works; }
check "scontrol resume lets it work again" resumed_works

# kill -9 mid-throttle: the restarted coschedd continues exactly what it stopped.
c guard set --job "$co" --share 0 >/dev/null
stopped() {
	for p in $(cat "$freezer"/step_0/cgroup.procs); do
		[ "$(proc_state "$p")" = T ] && return 0
	done
	return 1
}
check "pinned to share 0, the co-tenant's processes are stopped (SIGSTOP, not Slurm's freezer)" wait_for 30 stopped
check "... its step not frozen" grep -qx THAWED "$freezer/step_0/freezer.state"
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
daemon_pid=
check "coschedd killed with -9 leaves them stopped" stopped
# Restarted with the guard off, it throttles nothing itself: what it finds stopped is the old one's.
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" 'guard:
  enabled: false'
not_stopped() { ! stopped; }
check "the restarted coschedd continues exactly what its killed predecessor stopped (its journal)" not_stopped
stop_daemon
start_guard_daemon
check "... and, guard on again, holds the co-tenant again where Slurm put it, at its pinned share" wait_for 30 stopped

# scancel --signal=TERM of a held co-tenant (a time limit's --signal, a user's): Slurm shows it
# RUNNING, so the signal is only let through to it (issue 45): its handler runs at its share.
c guard set --job "$co" --share 0 >/dev/null
wait_for 30 stopped
scancel --signal=TERM "$co"
let_through() { grep -q "co-tenant $co: a signal waits on process [0-9]*: let through to it, still held" "$tmp/daemon.log"; }
check "scancel --signal=TERM of a co-tenant held at share 0 is let through to it, not let go whole" wait_for 30 let_through
held_still() { sleep 3 && stopped && squeue -h -j "$co" | grep -q .; }
check "... it stays held meanwhile: its handler waits for its share (0)" held_still
c guard set --job "$co" --share 1 >/dev/null
check "at share 1 it acts on it and ends" slurm_wait_job "$co" 120
check "... which acted on it: it stopped on it (its summary says so)" \
	grep -q '"event":"summary".*"signal":"SIGTERM"' "$tmp/noise.out"
check "the epilog released it" wait_for 30 released "$co"
subtree=$(c --json status | py 'print([k["detail"] for k in d["guard"]["knobs"] if k["name"] == "cfs-quota"][0].split(" at ")[1])')
check "... and cosched's cpu group for it is gone" test ! -d "$subtree/$co"

# A co-tenant Slurm cancels that needs CPU to act on its signal — a checkpoint of 2 CPU seconds,
# with a CPU hog on both cores beside it — gets all of it: while it acts, nothing of it is held (no
# pause, no quota). At 1 % of a CPU, what a share-0 hold leaves, the checkpoint would take 200 s.
cat >"$tmp/checkpointer.py" <<'PY'
import os, signal, sys, time
here = sys.argv[1]
def checkpoint(sig, frame):
    open(os.path.join(here, "term-received"), "w").close()
    while not os.path.exists(os.path.join(here, "go")):  # the test looks at the holds first
        time.sleep(0.05)
    start = time.process_time()
    while time.process_time() - start < 2.0:
        pass
    open(os.path.join(here, "checkpoint-done"), "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, checkpoint)
while True:  # busy, as a co-tenant the guard must hold
    pass
PY
# held_cotenant COMMAND STARTS HELD [READY]: an sbatch job srun COMMAND, the co-tenant $co (its
# freezer group $freezer); STARTS passes once its step runs (and the file READY exists: its
# handlers are set), HELD once, pinned at share 0, it is stopped.
held_cotenant() {
	co=$(sbatch --parsable -n1 -c1 -o /dev/null --wrap "srun $1")
	freezer=/sys/fs/cgroup/freezer/slurm_$node/uid_0/job_$co
	wait_for 60 held_in_slurm
	check "$2" wait_for 90 noise_pid
	[ -z "${4:-}" ] || wait_for 60 test -e "$4"
	c guard set --job "$co" --share 0 >/dev/null
	check "$3" wait_for 30 stopped
}
# scancel --signal=USR1, every 100 ms for 10 s, of a held co-tenant that catches it: Slurm shows it
# RUNNING, so it is only let through (its handler runs at its share), never let go whole; what it
# gains is read from the kernel (utime + stime of its process).
cat >"$tmp/usr1.py" <<'PY'
import os, signal, sys
signal.signal(signal.SIGUSR1, lambda sig, frame: None)
open(os.path.join(sys.argv[1], "usr1-handler-set"), "w").close()
while True:  # busy, as a co-tenant the guard must hold
    pass
PY
held_cotenant "/usr/bin/python3 $tmp/usr1.py $tmp" "... a co-tenant that catches SIGUSR1 starts" \
	"... and is held at share 0, its processes stopped" "$tmp/usr1-handler-set"
p=$(noise_pid)
before=$(cpu_ticks "$p")
t0=$(date +%s.%N)
end=$((SECONDS + 10))
while [ "$SECONDS" -lt "$end" ]; do
	scancel --signal=USR1 "$co"
	sleep 0.1
done
gained=$(python3 -c "import os; print(($(cpu_ticks "$p") - $before) / os.sysconf('SC_CLK_TCK'))")
took=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
echo "# scancel --signal=USR1 every 100 ms for $took s: the co-tenant gained $gained CPU s"
check "scancel --signal=USR1 every 100 ms gains a co-tenant held at share 0 at most 2 points of a CPU ($gained CPU s in $took s)" \
	python3 -c "assert $gained <= 0.02 * $took"
lets_go() { c --json job get --job "$co" | py 'l = d["hold"]["lets_go"]; print(l["whole"], l["delivery"])'; }
never_whole() { read -r whole delivery <<<"$(lets_go)" && [ "$whole" = 0 ] && [ "$delivery" -ge 1 ] && [ "$delivery" -le 2 ]; }
check "... let through to its handler, never let go whole: Slurm shows it RUNNING ($(lets_go))" never_whole
check "... and still stopped" stopped
scancel "$co"
check "cancelled after that, it ends at once (no window: its SIGTERM, unhandled, ends it)" slurm_wait_job "$co" 60
check "... its epilog released it" wait_for 30 released "$co"

held_cotenant "/usr/bin/python3 $tmp/checkpointer.py $tmp" \
	"... its step starts (a baseline pause may hold its srun a while)" \
	"a checkpointing co-tenant is held at share 0, its processes stopped"
for _ in 1 2; do bash -c 'while :; do :; done' & hog_pids="$hog_pids $!"; done
scancel "$co"
check "cancelled, it gets to its handler" wait_for 60 test -e "$tmp/term-received"
let_go_logged() { grep -q "co-tenant $co: .*: let go, nothing held" "$tmp/daemon.log"; }
check "... let go, the log says so" wait_for 30 let_go_logged
nothing_held() {
	local p
	p=$(noise_pid) && [ "$(proc_state "$p")" != T ] && [ "$(quota_of "$p")" = -1 ]
}
check "... nothing of it held while it acts: not stopped, no CFS quota" nothing_held
check "... and job get says it is let go" bash -c "'$build/client/cosched' --socket '$sock' --json job get --job $co | grep -q '\"let_go\": \"'"
touch "$tmp/go"
check "its 2 CPU seconds of checkpoint are done, beside the hog" wait_for 120 test -e "$tmp/checkpoint-done"
check "and it ends" slurm_wait_job "$co" 120
kill $hog_pids 2>/dev/null
wait $hog_pids 2>/dev/null
hog_pids=
check "its epilog released it" wait_for 30 released "$co"

# scancel of a held co-tenant: Slurm continues it (SIGCONT) and sends SIGTERM, and shows it
# COMPLETING; cosched lets go of it and it ends at once, not after KillWait (60 s); the node is
# not drained.
held_cotenant "$noise stream --duration 600 --threads 1" "... its step starts" \
	"a second co-tenant is held at share 0, its processes stopped"
t0=$(date +%s.%N)
scancel "$co"
check "scancel ends it (it leaves the queue)" slurm_wait_job "$co" 120
echo "# scancel of the held co-tenant took $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s (KillWait: 60 s)"
check "... let go as soon as Slurm showed it ending, not left to act on SIGTERM at 1 % of a CPU" let_go_logged
check "... and the log says why it was let go (Slurm shows it ending), and for how long at most" \
	grep -qE "co-tenant $co: .*, and Slurm shows it [A-Z_]+: let go, nothing held, until those processes are gone or for 70 s \(Slurm's KillWait 60 s in $tmp/slurm/slurm.conf \+ 10 s\)" \
	"$tmp/daemon.log"
check "... and the node is not drained" bash -c "sinfo -h -N -o %T | grep -qvE 'drain|down'"
check "... and its epilog released it" wait_for 30 released "$co"
scancel "$tr"
slurm_wait_job "$tr" 60
check "the trainer's epilog released it too" wait_for 30 bash -c \
	"'$build/client/cosched' --socket '$sock' --json job list | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"jobs\"]))'"
none_stopped() {
	local p
	for p in $(job_pids) $(pgrep -f "$tmp/checkpointer.py"); do
		[ "$(proc_state "$p")" = T ] && return 1
	done
	return 0
}
check "no co-tenant process is left stopped" none_stopped
stop_daemon
check "coschedd exits cleanly, leaving no cgroup of its own behind" bash -c \
	"test $? = 0 && ! test -d '$subtree'"
check "and no co-tenant process stopped after its stop either" none_stopped
[ "$tap_failed" = 0 ] || sed 's/^/# daemon: /' "$tmp/daemon.log"
finish
