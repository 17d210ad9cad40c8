#!/bin/bash
# test_slurm_guard: the guard for jobs exactly as Slurm runs them, with no change to the job
# scripts. A real one-node Slurm (cgroup v1 confinement, proctrack/cgroup) runs cosched's prolog,
# epilog and TaskProlog beside a real coschedd; a GPU job runs a trainer that reports nothing
# (`sleep`), its GPU a stand-in NVML (tests/daemon/fakegpu) whose busy fraction falls as the
# co-tenant's processes really use CPU: busy = 0.9 / (1 + 0.2 x their CPUs), so with a 5 % budget
# the guard must hold the co-tenant to about a quarter of a CPU. The co-tenant is a plain sbatch
# job running `cosched-noise stream`, held in the cgroups Slurm made for it. Then: Slurm's
# suspend is left alone, kill -9 of coschedd and a restart leave nothing stopped, scancel ends a
# held job at once without draining the node, and the epilogs undo everything.
. "${COSCHED_SOURCE_ROOT:?}/tests/trainer/tap.sh"
. "${COSCHED_SOURCE_ROOT:?}/tests/slurm/cluster.sh"
root=$COSCHED_SOURCE_ROOT
build=${COSCHED_BUILD_ROOT:?}
tmp=$(mktemp -d)
chmod 755 "$tmp"
daemon_pid=
cleanup() {
	[ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null
	# nothing this test stopped may outlive it, whatever failed
	pkill -CONT -f "$build/noise/cosched-noise" 2>/dev/null
	slurm_cluster_stop
	pkill -9 -f "$build/noise/cosched-noise" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! why=$(slurm_cluster_usable); then
	ok "# SKIP $why"
	finish
	exit
fi
if [ ! -d /sys/fs/cgroup/freezer ] || [ ! -d /sys/fs/cgroup/cpu ]; then
	ok "# SKIP Slurm's cgroup v1 confinement needs the v1 freezer and cpu hierarchies at /sys/fs/cgroup"
	finish
	exit
fi
sock=$tmp/coschedd.sock
node=$(hostname -s)
c() { "$build/client/cosched" --socket "$sock" "$@"; }
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
wait_for() { # wait_for SECONDS COMMAND...: retry until it succeeds
	local tries=$(($1 * 10))
	shift
	for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	return 1
}
start_daemon() {
	rm -f "$sock"
	COSCHED_FAKE_GPU=$tmp/gpu.ctl LD_LIBRARY_PATH=$build/tests/daemon/fakegpu \
		"$build/daemon/coschedd" --foreground --config "$tmp/coschedd.yaml" --socket "$sock" \
		--state-dir "$tmp/state" --topology "$root/tests/topologies/ci-2core-gpu.xml" >>"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	wait_for 10 c status
}
printf 'slowdown_budget: 0.05\nguard:\n  pause_timeout: 30\n' >"$tmp/coschedd.yaml"
# The stand-in NVML reads its control file whenever it changes: replaced whole, never half-written.
set_gpu() { echo "$1" >"$tmp/gpu.ctl.new" && mv "$tmp/gpu.ctl.new" "$tmp/gpu.ctl"; }
set_gpu "gpu 0000:03:00.0 busy 0.9"

cat >"$tmp/slurm.conf.cosched" <<CONF
cosched=$build/client/cosched
socket=$sock
timeout=5
log_file=$tmp/slurm.log
CONF
for s in prolog epilog taskprolog; do
	printf '#!/bin/bash\nexport COSCHED_SLURM_CONF=%s\nexec %s "$@"\n' "$tmp/slurm.conf.cosched" \
		"$root/packaging/slurm/$s" >"$tmp/$s"
	chmod 755 "$tmp/$s"
done
start_daemon || { not_ok "coschedd starts"; sed 's/^/# /' "$tmp/daemon.log"; finish; exit; }
SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_GPUS=1 SLURM_CLUSTER_PROLOG=$tmp/prolog SLURM_CLUSTER_EPILOG=$tmp/epilog \
	SLURM_CLUSTER_TASKPROLOG=$tmp/taskprolog slurm_cluster_start "$tmp/slurm" 2>"$tmp/err"
if [ $? != 0 ]; then
	not_ok "a one-node Slurm with cgroup confinement and cosched's scripts starts"
	sed 's/^/# /' "$tmp/err"
	slurm_cluster_logs
	finish
	exit
fi
ok "a one-node Slurm with cgroup confinement and cosched's scripts starts"

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

# CPU seconds per second the co-tenant's processes get, over SECONDS, from its cgroup and /proc.
cpu_share() {
	python3 - "$freezer" "$1" <<'EOF'
import os, sys, time
root, seconds = sys.argv[1], float(sys.argv[2])
def pids():
    out = set()
    for d, _, _ in os.walk(root):
        try:
            out |= {int(x) for x in open(os.path.join(d, "cgroup.procs")).read().split()}
        except OSError:
            pass
    return out
def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return None
before = {p: cpu(p) for p in pids()}
time.sleep(seconds)
used = sum(cpu(p) - c for p, c in before.items() if c is not None and cpu(p) is not None)
print(f"{used / seconds:.3f}")
EOF
}
watching() { c --json stats --job "$tr" | py 'g=d["jobs"][0]["guard"]; assert g["phase"] == "watching"'; }
check "the guard took its baseline from the GPU, the co-tenant paused meanwhile" wait_for 90 watching
throttled() { c --json stats --job "$tr" | py 'g=d["jobs"][0]["guard"]; assert g["actions"]["throttle"] >= 1 and g["share"] < 1'; }
check "the co-tenant costs the trainer 20 %: the guard throttles it" wait_for 60 throttled
held() { c --json stats --job "$tr" | py '
j=d["jobs"][0]; g=j["guard"]; s=g["judged"]
assert g["phase"] == "watching" and g["share"] < 1 and s and s["ci95"][0] <= j["budget"]'; }
check "and the trainer's slowdown comes back within budget" wait_for 90 held
share=$(cpu_share 10)
echo "# the co-tenant's CPU seconds per second over 10 s, held: $share"
check "the co-tenant's CPU time per second, read from its cgroup's processes, drops to its share (<= 0.35)" \
	python3 -c "assert $share <= 0.35, $share"
check "while it keeps working (>= 0.05)" python3 -c "assert $share >= 0.05, $share"
busy() { c --json job get --job "$tr" | py 'assert d["progress"]["gpu_busy"] >= 0.84, d["progress"]["gpu_busy"]'; }
check "the trainer's GPU busy fraction recovers (>= 0.84 of 0.9)" wait_for 30 busy
grep -E "guard: (job $tr|co-tenant $co)" "$tmp/daemon.log" | sed 's/^/# /' | head -20

# Slurm suspends the co-tenant: it stays suspended whatever the guard does, and resumes with Slurm.
c guard set --job "$co" --share 0 >/dev/null
stopped_by_cosched() { c --json job get --job "$co" | py 'assert d["allowed_share"] == 0'; }
wait_for 10 stopped_by_cosched
scontrol suspend "$co"
suspended_seen() { grep -q "co-tenant $co: Slurm suspended it" "$tmp/daemon.log"; }
check "coschedd sees Slurm suspend the co-tenant" wait_for 15 suspended_seen
c guard set --job "$co" --share 1 >/dev/null
share=$(cpu_share 3)
check "a job suspended with scontrol suspend stays suspended while coschedd lets go of it ($share)" \
	python3 -c "assert $share <= 0.02, $share"
c guard set --job "$co" --share 0 >/dev/null
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
start_daemon
share=$(cpu_share 3)
check "... and across a kill -9 of coschedd and a restart ($share)" python3 -c "assert $share <= 0.02, $share"
check "... its step still frozen by Slurm" grep -qx FROZEN "$freezer/step_0/freezer.state"
scontrol resume "$co"
c guard set --job "$co" --share 1 >/dev/null # pinned: the restarted guard would pause it to learn
share=$(cpu_share 3)
check "scontrol resume lets it work again ($share)" python3 -c "assert $share >= 0.05, $share"

# kill -9 mid-throttle: the restarted coschedd continues exactly what it stopped.
c guard set --job "$co" --share 0 >/dev/null
stopped() {
	for p in $(cat "$freezer"/step_0/cgroup.procs); do
		[ "$(awk '{print $3}' /proc/"$p"/stat)" = T ] && return 0
	done
	return 1
}
check "pinned to share 0, the co-tenant's processes are stopped (SIGSTOP, not Slurm's freezer)" wait_for 10 stopped
check "... its step not frozen" grep -qx THAWED "$freezer/step_0/freezer.state"
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
daemon_pid=
check "coschedd killed with -9 leaves them stopped" stopped
# Restarted with the guard off, it throttles nothing itself: what it finds stopped is the old one's.
cp "$tmp/coschedd.yaml" "$tmp/coschedd.yaml.on"
printf 'guard:\n  enabled: false\n' >"$tmp/coschedd.yaml"
start_daemon
not_stopped() { ! stopped; }
check "the restarted coschedd continues exactly what its killed predecessor stopped (its journal)" not_stopped
kill "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
mv "$tmp/coschedd.yaml.on" "$tmp/coschedd.yaml"
start_daemon
check "... and, guard on again, holds the co-tenant again where Slurm put it, at its pinned share" wait_for 10 stopped

# A signal for a held co-tenant (scancel --signal, a time limit's --signal): it is let go to act on it.
c guard set --job "$co" --share 0 >/dev/null
wait_for 10 stopped
scancel --signal=TERM "$co"
slurm_wait_job "$co" 60
check "a SIGTERM sent to a co-tenant held at share 0 reaches it: let go, it stops on it (its summary says so)" \
	grep -q '"event":"summary".*"signal":"SIGTERM"' "$tmp/noise.out"
check "... and the log says why it was let go" grep -q "co-tenant $co: a signal waits on a process the guard held" \
	"$tmp/daemon.log"
released() { c --json job list | py 'assert "'"$1"'" not in [j["job"] for j in d["jobs"]]'; }
check "the epilog released it" wait_for 30 released "$co"
subtree=$(c --json status | py 'print([k["detail"] for k in d["guard"]["knobs"] if k["name"] == "cfs-quota"][0].split(" at ")[1])')
check "... and cosched's cpu group for it is gone" test ! -d "$subtree/$co"

# scancel of a held co-tenant: it ends at once (not after KillWait, 30 s); the node is not drained.
co=$(sbatch --parsable -n1 -c1 -o /dev/null --wrap "srun $build/noise/cosched-noise stream --duration 600 --threads 1")
freezer=/sys/fs/cgroup/freezer/slurm_$node/uid_0/job_$co
wait_for 60 held_in_slurm
c guard set --job "$co" --share 0 >/dev/null
check "a second co-tenant is held at share 0, its processes stopped" wait_for 20 stopped
t0=$(date +%s.%N)
scancel "$co"
check "scancel ends it (it leaves the queue)" slurm_wait_job "$co" 60
echo "# scancel of the held co-tenant took $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s (KillWait: 30 s)"
check "... and the node is not drained" bash -c "sinfo -h -N -o %T | grep -qvE 'drain|down'"
check "... and its epilog released it" wait_for 30 released "$co"
scancel "$tr"
slurm_wait_job "$tr" 60
check "the trainer's epilog released it too" wait_for 30 bash -c \
	"'$build/client/cosched' --socket '$sock' --json job list | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"jobs\"]))'"
none_stopped() {
	local p
	for p in $(pgrep -f "$build/noise/cosched-noise"); do
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && return 1
	done
	return 0
}
check "no co-tenant process is left stopped" none_stopped
kill -TERM "$daemon_pid"
wait "$daemon_pid"
check "coschedd exits cleanly, leaving no cgroup of its own behind" bash -c \
	"test $? = 0 && ! test -d '$subtree'"
daemon_pid=
[ "$failed" = 0 ] || sed 's/^/# daemon: /' "$tmp/daemon.log"
finish
