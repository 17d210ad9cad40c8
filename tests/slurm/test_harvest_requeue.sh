#!/bin/bash
# test_harvest_requeue: escalation and the harvest gate against a real slurmctld, on a two-node
# cluster (cn1, cn2: network namespaces, as test_two_nodes) running cosched slurm-conf's recipe,
# job_submit.lua included. On cn1 a GPU job that reports nothing, its GPU a stand-in NVML whose
# busy fraction falls with the CPU the harvest job beside it gets (busy = 0.9 / (1 + 5 x its
# CPUs)): even at the minimum share the trainer is 25 % slower, over its 5 % budget, so the guard
# holds the harvest job at the minimum. After guard.close_after cn1's coschedd takes the feature
# harvest from cn1 (no new harvest job starts there); after guard.requeue_after it requeues the
# harvest job through Slurm, cn1 excluded, and the job runs again on cn2 and ends. A harvest job
# submitted while cn2 is drained waits, cn1 closed to it, until the GPU job ends: then cn1 offers
# the feature again and the job starts there. Judged by states (Slurm's job and node records, the
# daemons' answers and logs), never by a time.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
. "$here/../daemon/gpu_daemon_lib.sh"
chmod 755 "$tmp"
need_slurm
need_cgroup_v1
if ! command -v nsenter >/dev/null || ! command -v ip >/dev/null; then
	skip_all "two nodes need ip and nsenter"
fi
cn2_pid=
stop_cn2() { # its jobs released first: held ones are let go
	[ -n "$cn2_pid" ] || return 0
	local job
	for job in $("$cosched" --socket "$tmp/cn2.sock" --json job list 2>/dev/null | py 'print(" ".join(j["job"] for j in d["jobs"]))' 2>/dev/null); do
		"$cosched" --socket "$tmp/cn2.sock" job release --job "$job" >/dev/null 2>&1
	done
	kill "$cn2_pid" 2>/dev/null
	wait "$cn2_pid" 2>/dev/null
}
at_exit slurm_cluster_stop
at_exit stop_cn2
cn_job_pids() { cat /sys/fs/cgroup/freezer/slurm_cn[12]/uid_*/job_*/step_*/cgroup.procs 2>/dev/null; }
kill_cn_job_pids() {
	local left
	mapfile -t left < <(cn_job_pids)
	[ ${#left[@]} -eq 0 ] || { kill -CONT "${left[@]}" && kill -9 "${left[@]}"; } 2>/dev/null
}
at_exit kill_cn_job_pids

# cn1's coschedd is the suite's own ($sock), with the stand-in GPU; cn2's a plain one.
sock=$tmp/cn1.sock
cosched_scripts "$tmp/\$SLURMD_NODENAME.sock"
set_gpu "gpu 0000:03:00.0 busy 0.9"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "slowdown_budget: 0.05
progress:
  gpu_window: 0.5
guard:
  pause_timeout: 30
  baseline_steps: 10
  requeue_after: 8
  requeue_partitions: [harvest]
  close_after: 4
  reopen_after: 0
  harvest_feature: harvest
  slurm_node: cn1
  slurm_conf: $tmp/slurm/slurm.conf" || { not_ok "cn1's coschedd starts"; finish; exit; }
printf 'runs:\n  keep_environment: [ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS]\n' >"$tmp/cn2.yaml"
"$coschedd" --foreground --socket "$tmp/cn2.sock" --state-dir "$tmp/state-cn2" --config "$tmp/cn2.yaml" \
	--topology "$topologies/ci-2core-gpu.xml" >"$tmp/cn2.log" 2>&1 &
cn2_pid=$!
c2() { "$cosched" --socket "$tmp/cn2.sock" "$@"; }
check "cn2's coschedd starts" wait_for 60 c2 status
SLURM_CLUSTER_RECIPE=1 SLURM_CLUSTER_RECIPE_OPTIONS="--grace 10" SLURM_CLUSTER_KILL_WAIT=5 \
	slurm_up "a two-node Slurm running cosched slurm-conf's recipe starts" slurm_cluster_start2 "$tmp/slurm" ||
	{ finish; exit; }

node_features() { scontrol -o show node "$1" | sed -n 's/.* AvailableFeatures=\([^ ]*\) .*/\1/p'; }
job_field() { scontrol -o show job "$1" | sed -n "s/.* $2=\([^ ]*\) .*/\1/p"; }
offered() { [ "$(node_features cn1)" = "$1" ] && [ "$(node_features cn2)" = "$2" ]; }
check "both nodes offer the feature harvest" offered harvest harvest

# The harvest job lands on cn1: cn2 drained until it runs. Run again (SLURM_RESTART_COUNT=1), it
# ends once $tmp/go2 exists.
scontrol update NodeName=cn2 State=DRAIN Reason=cosched-test
tr=$(sbatch --parsable -p gpu -w cn1 --gres=gpu:1 -c1 -o /dev/null --wrap "srun sleep 600")
co=$(sbatch --parsable -p harvest -c1 --requeue -o /dev/null --wrap \
	"[ \"\${SLURM_RESTART_COUNT:-0}\" -gt 0 ] && exec srun sh -c 'until [ -e $tmp/go2 ]; do sleep 0.2; done'
	srun $build/noise/cosched-noise stream --duration 600 --threads 1")
running_on() { [ "$(job_field "$1" JobState)" = RUNNING ] && [ "$(job_field "$1" NodeList)" = "$2" ]; }
both_on_cn1() { running_on "$tr" cn1 && running_on "$co" cn1; }
check "the GPU job and the harvest job run on cn1" wait_for 60 both_on_cn1
scontrol update NodeName=cn2 State=RESUME
set_gpu "gpu 0000:03:00.0 busy 0.9 k 5 cotenant /sys/fs/cgroup/freezer/slurm_cn1/uid_0/job_$co"

at_minimum() { c --json job get --job "$co" | py 'assert d["escalation"]["at_minimum_seconds"] > 0, d["escalation"]'; }
check "the guard holds the harvest job at the minimum share, the trainer still over budget" wait_for 180 at_minimum
gate() { c --json guard status | py "assert d['guard']['harvest_gate']['state'] == '$1', d['guard']['harvest_gate']"; }
check "after guard.close_after, cn1's harvest gate closes" wait_for 60 gate closed
check "and cn1 no longer offers the feature harvest (cn2 still does)" offered '(null)' harvest
closed_for() { c --json guard status | py "assert d['guard']['harvest_gate']['trainers'] == '$tr', d['guard']"; }
check "the gate names the trainer it closed for" closed_for
c guard status | grep '^harvest gate' | sed 's/^/# /'
restarted() { [ "$(job_field "$co" Restarts)" -ge 1 ]; }
check "after guard.requeue_after, slurmctld requeued the harvest job (Restarts=1)" wait_for 120 restarted
excluded() { [ "$(job_field "$co" ExcNodeList)" = cn1 ]; }
check "and keeps it off cn1 (ExcNodeList=cn1)" wait_for 30 excluded
check "it runs again, on cn2" wait_for 120 running_on "$co" cn2
registered_on_cn2() { c2 --json job get --job "$co" | py "assert d['role'] == 'cotenant'"; }
check "where cn2's prolog registered it as a co-tenant" wait_for 30 registered_on_cn2
touch "$tmp/go2"
ended_on_cn2() { [ "$(job_field "$co" JobState)" = COMPLETED ] && [ "$(job_field "$co" NodeList)" = cn2 ]; }
check "and ends there (COMPLETED)" wait_for 60 ended_on_cn2
logged() { grep -Eq "guard: co-tenant $co( \(released meanwhile\))?: requeued through Slurm.*(; cn1|, this node) excluded" "$tmp/daemon.log"; }
check "cn1's log says it was requeued, cn1 excluded" wait_for 30 logged

# While the trainer is there, cn1 takes no new harvest job: with cn2 drained, one waits.
scontrol update NodeName=cn2 State=DRAIN Reason=cosched-test
h2=$(sbatch --parsable -p harvest -c1 -o /dev/null --wrap "srun sleep 600")
waits() { [ "$(job_field "$h2" JobState)" = PENDING ] && job_field "$h2" Reason | grep -q 'ReqNodeNotAvail'; }
check "a new harvest job waits, cn1 closed to it and cn2 drained (Reason=ReqNodeNotAvail)" wait_for 60 waits
cpus_allocated() { scontrol -o show node "$1" | sed -n 's/.* CPUAlloc=\([0-9]*\) .*/\1/p'; }
check "though cn1 has a free core for it (1 of 2 CPUs allocated)" [ "$(cpus_allocated cn1)" = 1 ]
scancel "$tr"
check "once the GPU job has ended, the gate opens" wait_for 90 gate open
check "cn1 offers the feature harvest again" offered harvest harvest
check "and the waiting harvest job starts on cn1" wait_for 60 running_on "$h2" cn1
grep -E "harvest gate|guard: co-tenant $co" "$tmp/daemon.log" | grep -v " share " | tail -8 | sed "s/^/# /"
scancel "$h2" "$co" "$tr"
for j in "$h2" "$co" "$tr"; do slurm_wait_job "$j" 60 >/dev/null; done
scontrol update NodeName=cn2 State=RESUME

finish
