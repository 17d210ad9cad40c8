#!/bin/bash
# test_harvest_requeue: escalation against a real slurmctld, on the cluster of cosched
# slurm-conf's recipe (as test_harvest). A GPU job that reports nothing, its GPU a stand-in NVML
# whose busy fraction falls with the CPU the harvest job beside it gets (busy = 0.9 / (1 + 5 x its
# CPUs)): even at the minimum share the trainer is 25 % slower, over its 5 % budget, so the guard
# holds the harvest job at the minimum; after guard.requeue_after it is requeued through Slurm and
# kept off this node (ExcNodeList). Judged by states: Slurm's Restarts and ExcNodeList, the job
# pending, the daemon's log; never a time.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
. "$here/../daemon/gpu_daemon_lib.sh"
chmod 755 "$tmp"
need_slurm
need_cgroup_v1
at_exit kill_job_pids
node=$(hostname -s)

set_gpu "gpu 0000:03:00.0 busy 0.9"
cosched_scripts "$sock"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "slowdown_budget: 0.05
progress:
  gpu_window: 0.5
guard:
  pause_timeout: 30
  baseline_steps: 10
  requeue_after: 5
  slurm_conf: $tmp/slurm/slurm.conf" || { not_ok "coschedd starts"; finish; exit; }
SLURM_CLUSTER_RECIPE=1 SLURM_CLUSTER_RECIPE_OPTIONS="--grace 10" SLURM_CLUSTER_KILL_WAIT=5 \
	slurm_up "a one-node Slurm running cosched slurm-conf's recipe starts" start_slurm || { finish; exit; }

tr=$(sbatch --parsable -p gpu --gres=gpu:1 -c1 -o /dev/null --wrap "srun sleep 600")
co=$(sbatch --parsable -p harvest -c1 --requeue -o /dev/null --wrap \
	"srun $build/noise/cosched-noise stream --duration 600 --threads 1")
set_gpu "gpu 0000:03:00.0 busy 0.9 k 5 cotenant /sys/fs/cgroup/freezer/slurm_$node/uid_0/job_$co"
at_minimum() { c --json job get --job "$co" | py 'assert d["escalation"]["at_minimum_seconds"] > 0, d["escalation"]'; }
check "the guard holds the harvest job at the minimum share, the trainer still over budget" wait_for 180 at_minimum
restarted() { scontrol -o show job "$co" | grep -q ' Restarts=1 '; }
check "after guard.requeue_after, slurmctld requeued it (Restarts=1)" wait_for 120 restarted
excluded() { scontrol -o show job "$co" | grep -Eq " ExcNodeList=([^ ]*,)?$node(,[^ ]*)? "; }
check "and keeps it off this node (ExcNodeList=$node)" wait_for 30 excluded
pending() { scontrol -o show job "$co" | grep -Eq 'JobState=PENDING '; }
check "so it waits in the queue instead of starting here again" wait_for 60 pending
# the outcome, logged with the job or, when its epilog released it meanwhile, after it
logged() { grep -Eq "guard: co-tenant $co( \(released meanwhile\))?: requeued through Slurm.*(; $node|, this node) excluded" "$tmp/daemon.log"; }
check "the daemon's log says so" wait_for 60 logged
grep -E "guard: co-tenant $co" "$tmp/daemon.log" | grep -v " share " | tail -4 | sed "s/^/# /"
released() { ! c --json job list | py 'assert "'"$co"'" in [j["job"] for j in d["jobs"]]'; }
check "its epilog released it from coschedd" wait_for 60 released
scancel "$co" "$tr"
for j in "$co" "$tr"; do slurm_wait_job "$j" 60 >/dev/null; done

finish
