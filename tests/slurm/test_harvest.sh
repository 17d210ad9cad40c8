#!/bin/bash
# test_harvest: the harvest recipe on a real Slurm. The cluster runs what `cosched slurm-conf`
# prints for this machine's shape with one GPU (ci-2core-gpu.xml: core 0 the GPU's, core 1 the
# co-tenants'): partitions gpu and harvest, preemption by partition tier, MaxCPUsPerNode, memory
# defaults and reserve, ConstrainRAMSpace, cosched's prolog and epilog as links in prolog.d and
# epilog.d, beside a real coschedd. `slurm-conf --check` passes it, live and from saved scontrol
# outputs, and flags each fault planted in those. Then, judged by states, never by times: harvest
# jobs never hold more CPUs than MaxCPUsPerNode and never a GPU job's; a GPU job that needs the
# whole node preempts them, and a harvest job held at share 0 by the guard gets its SIGTERM and
# its grace time, is requeued and runs again to its end; a harvest job that outgrows its memory is
# killed in its own cgroup while the GPU job goes on.
# COSCHED_SAVE_SCONTROL=DIR keeps the saved outputs there (tests/client/scontrol-22.05 came from it).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
chmod 755 "$tmp"
need_slurm
need_cgroup_v1
at_exit kill_job_pids
node=$(hostname -s)
topology=$topologies/ci-2core-gpu.xml

write_config "slowdown_budget: 0.05
guard:
  slurm_conf: $tmp/slurm/slurm.conf"
cosched_scripts "$sock"
start_daemon --topology "$topology" || { not_ok "coschedd starts"; finish; exit; }
# a grace time of 10 s and KillWait 5 s: what the preempted job gets is the point, not how long
SLURM_CLUSTER_RECIPE=1 SLURM_CLUSTER_TOPOLOGY=$topology SLURM_CLUSTER_RECIPE_OPTIONS="--grace 10" SLURM_CLUSTER_KILL_WAIT=5 \
	slurm_up "a one-node Slurm running cosched slurm-conf's recipe starts" start_slurm || { finish; exit; }

# --- the recipe is what runs
"$cosched" slurm-conf --topology "$topology" --nodes "$node" --slurm-version 22.05 --grace 10 --json >"$tmp/recipe.json"
max_cpus=$(json "$tmp/recipe.json" 'print(d["split"]["harvest_max_cpus"])')
check "slurm.conf names no OverSubscribe" bash -c "! grep -qi oversubscribe '$tmp/slurm/slurm.conf'"
json "$tmp/recipe.json" 'print("\n".join(s["setting"] for s in d["settings"] if s["setting"].startswith("PartitionName=")))' \
	>"$tmp/partitions.want"
check "its partitions are the recipe's lines" bash -c "grep ^PartitionName= '$tmp/slurm/slurm.conf' | diff - '$tmp/partitions.want'"
check "harvest's MaxCPUsPerNode is the planner's co-tenant CPUs ($max_cpus), as slurmctld reads it" bash -c \
	"scontrol -o show partition harvest | grep -qw 'MaxCPUsPerNode=$max_cpus'"
check "cosched's prolog and epilog are links in prolog.d and epilog.d" bash -c \
	"[ -L '$tmp/slurm/prolog.d/50-cosched' ] && [ -L '$tmp/slurm/epilog.d/50-cosched' ] && grep -q '^Prolog=$tmp/slurm/prolog.d/\*' '$tmp/slurm/slurm.conf'"

# --- --check, live and from saved outputs
if "$cosched" slurm-conf --topology "$topology" --check >"$tmp/out" 2>"$tmp/err"; then ok "slurm-conf --check passes the live cluster"
else not_ok "slurm-conf --check passes the live cluster" "$(cat "$tmp/out" "$tmp/err")"; fi
"$cosched" slurm-conf --topology "$topology" --check --json >"$tmp/check.json" 2>&1
check "every point holds, the globbed prolog and epilog read as cosched's" json "$tmp/check.json" '
bad = [f for f in d["findings"] if f["status"] != "ok"]
assert not bad and {"prolog", "epilog", "taskprolog"} <= {f["point"] for f in d["findings"]}, bad'
saved=$tmp/saved
mkdir -p "$saved"
scontrol show config >"$saved/config" && scontrol -o show partition >"$saved/partitions" && scontrol -o show node >"$saved/nodes"
[ -z "${COSCHED_SAVE_SCONTROL:-}" ] || cp "$saved"/* "$COSCHED_SAVE_SCONTROL"/
check "slurm-conf --check --from the saved outputs exits 0" "$cosched" slurm-conf --topology "$topology" --check --from "$saved"

# plant FILE SED POINT: the saved outputs with FILE edited by SED fail --check on POINT, exit 1.
plant() {
	local name=$1 file=$2 edit=$3 point=$4
	rm -rf "$tmp/planted" && cp -r "$saved" "$tmp/planted" && sed -i "$edit" "$tmp/planted/$file"
	if cmp -s "$saved/$file" "$tmp/planted/$file"; then not_ok "$name" "the edit '$edit' changed nothing"; return; fi
	"$cosched" slurm-conf --topology "$topology" --check --from "$tmp/planted" --json >"$tmp/planted.json" 2>&1
	local rc=$?
	check "$name: exit 1, $point flagged" json "$tmp/planted.json" "
assert $rc == 1, $rc
bad = [f['point'] for f in d['findings'] if f['grave']]
assert bad == ['$point'], bad"
}
plant "OverSubscribe=YES on harvest" partitions '/^PartitionName=harvest/s/OverSubscribe=NO/OverSubscribe=YES:4/' oversubscribe
plant "no MaxCPUsPerNode on harvest" partitions '/^PartitionName=harvest/s/MaxCPUsPerNode=[0-9]*/MaxCPUsPerNode=UNLIMITED/' max-cpus
plant "MaxCPUsPerNode above the co-tenants' CPUs" partitions '/^PartitionName=harvest/s/MaxCPUsPerNode=[0-9]*/MaxCPUsPerNode=2/' max-cpus
plant "no memory default on harvest" partitions '/^PartitionName=harvest/s/ DefMemPerCPU=[0-9]*/ DefMemPerNode=UNLIMITED/' mem-default
plant "harvest not preemptible" partitions '/^PartitionName=harvest/s/PreemptMode=REQUEUE/PreemptMode=OFF/' preemption
plant "harvest on the GPU partition's tier" partitions '/^PartitionName=harvest/s/PriorityTier=1/PriorityTier=2/' preemption
plant "no preemption" config 's|^PreemptType .*|PreemptType             = preempt/none|' preemption
plant "no prolog" config 's|^Prolog .*|Prolog                  = (null)|' prolog
plant "no TaskProlog" config 's|^TaskProlog .*|TaskProlog              = (null)|' taskprolog
plant "proctrack/linuxproc" config 's|^ProctrackType .*|ProctrackType           = proctrack/linuxproc|' proctrack
plant "no ConstrainRAMSpace" config 's|^ConstrainRAMSpace .*|ConstrainRAMSpace       = no|' ram
plant "memory not consumable" config 's|^SelectTypeParameters .*|SelectTypeParameters    = CR_CORE|' memory
rm -rf "$tmp/planted" && cp -r "$saved" "$tmp/planted" && sed -i 's|^JobRequeue .*|JobRequeue              = 0|' "$tmp/planted/config"
"$cosched" slurm-conf --topology "$topology" --check --from "$tmp/planted" >"$tmp/out" 2>&1
check "JobRequeue=0 is flagged, but lets no co-tenant run unguarded: exit 0" bash -c \
	"[ $? = 0 ] && grep -q '^requeue  *contradicts  *JobRequeue=0' '$tmp/out'"
rm -rf "$tmp/planted" && cp -r "$saved" "$tmp/planted" && echo "garbage here" >>"$tmp/planted/partitions"
"$cosched" slurm-conf --topology "$topology" --check --from "$tmp/planted" >"$tmp/out" 2>"$tmp/err"
check "a garbled partitions file: exit 1, naming the file and line" bash -c \
	"[ $? = 1 ] && grep -q 'planted/partitions:3: not a line of scontrol -o' '$tmp/err' && [ ! -s '$tmp/out' ]"
rm -rf "$tmp/planted" && cp -r "$saved" "$tmp/planted" && rm "$tmp/planted/nodes"
"$cosched" slurm-conf --topology "$topology" --check --from "$tmp/planted" >"$tmp/out" 2>"$tmp/err"
check "a missing file: exit 1, naming it" bash -c "[ $? = 1 ] && grep -q 'cannot read .*planted/nodes: No such file' '$tmp/err'"
"$cosched" slurm-conf --topology "$topology" --check --from "$saved" --harvest-partition batch >"$tmp/out" 2>"$tmp/err"
check "a harvest partition the cluster lacks: exit 1, saying which" bash -c \
	"[ $? = 1 ] && grep -q 'no partition batch (the harvest partition)' '$tmp/err'"

# --- harvest jobs beside a GPU job: disjoint cores, never more than MaxCPUsPerNode
cpu_ids() { scontrol -d show job "$1" | sed -n 's/.* CPU_IDs=\([^ ]*\) .*/\1/p' | head -1; }
state() { slurm_job_state "$1"; }
gpu=$(sbatch --parsable -p gpu --gres=gpu:1 -c1 -o /dev/null --wrap "srun sleep 600")
h=()
for i in 1 2 3; do h+=("$(sbatch --parsable -p harvest -c1 -t 30 -o /dev/null --wrap "srun sleep 600")"); done
running_harvest() { local j n=0; for j in "${h[@]}"; do [ "$(state "$j")" = RUNNING ] && n=$((n + 1)); done; echo "$n"; }
one_each() { [ "$(state "$gpu")" = RUNNING ] && [ "$(running_harvest)" = 1 ]; }
check "the GPU job and one harvest job run" wait_for 60 one_each
pending_on_limit() { local j; for j in "${h[@]}"; do [ "$(state "$j")" = RUNNING ] ||
	scontrol -o show job "$j" | grep -Eq 'Reason=(Resources|PartitionConfig|PartitionNodeLimit|Priority)'; done; }
check "the other two wait, with a reason" wait_for 30 pending_on_limit
check "three queued harvest jobs hold $max_cpus CPU(s) of the node, no more" [ "$(running_harvest)" = "$max_cpus" ]
running=$(for j in "${h[@]}"; do [ "$(state "$j")" = RUNNING ] && echo "$j"; done)
disjoint() { local a b; a=$(cpu_ids "$gpu") b=$(cpu_ids "$running") && [ -n "$a" ] && [ -n "$b" ] &&
	python3 -c "
def ids(t): return {i for p in t.split(',') for i in range(int(p.split('-')[0]), int(p.split('-')[-1]) + 1)}
assert not ids('$a') & ids('$b')"; }
check "on cores disjoint from the GPU job's ($(cpu_ids "$gpu") and $(cpu_ids "$running"))" disjoint
registered() { c --json job get --job "$1" | py "assert d['role'] == '$2'"; }
both_registered() { registered "$gpu" trainer && registered "$running" cotenant; }
check "coschedd has the GPU job as a trainer and the harvest job as a co-tenant" both_registered
soft_limit() { cat "/sys/fs/cgroup/memory/slurm_$(hostname -s)/uid_0/job_$1/memory.soft_limit_in_bytes" 2>/dev/null; }
yields() { [ "$(soft_limit "$running")" = 0 ] && [ "$(soft_limit "$gpu")" != 0 ]; }
check "the harvest job yields its memory first (v1 memory.soft_limit_in_bytes 0), the GPU job does not" wait_for 30 yields
limit() { scontrol -o show job "$1" | sed -n 's/.* TimeLimit=\([^ ]*\) .*/\1/p'; }
extended() { scontrol update JobId="$running" TimeLimit=+1 && [ "$(limit "$running")" = 00:31:00 ]; }
check "Slurm takes the update guard.extend_time_limit makes: TimeLimit=+1 (30 min -> 31)" extended
features() { scontrol -o show job "$1" | sed -n 's/.* Features=\([^ ]*\) .*/\1/p'; }
check "job_submit.lua made each harvest job ask for the feature harvest, the GPU job for none" \
	bash -c "[ '$(features "${h[0]}")' = harvest ] && [ '$(features "${h[2]}")' = harvest ] && [ '$(features "$gpu")' = '(null)' ]"
scancel "$gpu" "${h[@]}"
for j in "$gpu" "${h[@]}"; do slurm_wait_job "$j" 60 >/dev/null; done

# --- a GPU job that needs the whole node preempts a held harvest job: SIGTERM, grace, requeue, rerun
# The harvest task notes SIGTERM and goes on, as a job that checkpoints and waits to be requeued does
# (one that ends itself on SIGTERM ends: Slurm requeues what the grace time's end kills); run again
# (SLURM_RESTART_COUNT=1), it ends at once.
cat >"$tmp/harvest.sh" <<EOF
#!/bin/bash
if [ "\${SLURM_RESTART_COUNT:-0}" -ge 1 ]; then echo rerun >>$tmp/harvest.log; exit 0; fi
srun bash -c "trap 'echo TERM >>$tmp/harvest.log' TERM; echo started >>$tmp/harvest.log; while :; do sleep 0.2; done"
EOF
chmod 755 "$tmp/harvest.sh"
hv=$(sbatch --parsable -p harvest -c1 --requeue -o /dev/null "$tmp/harvest.sh")
task_pid() { pgrep -f "trap 'echo TERM >>$tmp/harvest.log' TERM" | head -1; }
started() { grep -q started "$tmp/harvest.log" 2>/dev/null && [ -n "$(task_pid)" ]; }
check "a harvest job runs" wait_for 60 started
c guard set --job "$hv" --share 0 >/dev/null
stopped() { [ "$(proc_state "$(task_pid)")" = T ]; }
check "the guard holds it at share 0: its task is stopped" wait_for 30 stopped
cpus=$(scontrol -o show node "$node" | grep -o 'CPUTot=[0-9]*' | cut -d= -f2)
big=$(sbatch --parsable -p gpu --gres=gpu:1 -c "$cpus" -o /dev/null --wrap "srun sleep 600")
got_term() { grep -q TERM "$tmp/harvest.log" 2>/dev/null; }
check "a GPU job asking for all $cpus CPUs preempts it: the held task gets its SIGTERM and acts on it" wait_for 90 got_term
check "the GPU job runs" wait_for 90 bash -c "[ \"\$(scontrol -o show job $big | grep -o 'JobState=[A-Z]*')\" = JobState=RUNNING ]"
requeued() { scontrol -o show job "$hv" | grep -q ' Restarts=1 '; }
check "the harvest job is requeued, not lost (Restarts=1)" wait_for 60 requeued
scancel "$big"
rerun() { grep -q rerun "$tmp/harvest.log" 2>/dev/null; }
check "once the GPU job is gone, the requeued job runs again" wait_for 120 rerun
check "and ends" slurm_wait_job "$hv" 60
check "COMPLETED" bash -c "scontrol -o show job $hv | grep -q 'JobState=COMPLETED'"
grep -h "preempt\|requeue\|$hv" "$tmp/slurm/slurmctld.log" | tail -5 | sed 's/^/# /'

# --- a harvest job that outgrows its memory dies in its own cgroup; the GPU job goes on
gpu=$(sbatch --parsable -p gpu --gres=gpu:1 -c1 -o /dev/null --wrap "srun sleep 600")
per_cpu=$(json "$tmp/recipe.json" 'print(d["split"]["def_mem_per_cpu"])')
oom=$(sbatch --parsable -p harvest -c1 -o "$tmp/oom.out" --wrap \
	"srun python3 -c 'b = bytearray(); [b.extend(bytes(1 << 20)) for _ in range($per_cpu * 2)]; print(\"survived\")'")
check "a harvest job allocating twice its $per_cpu MiB is killed" slurm_wait_job "$oom" 120
# Slurm 22.05 marks the step OUT_OF_MEMORY and the job FAILED (its batch script's srun failed)
check "by its cgroup's out-of-memory killer, not having survived" bash -c \
	"scontrol -o show job $oom | grep -Eq 'JobState=(FAILED|OUT_OF_MEMORY)' && grep -q 'oom-kill event' '$tmp/oom.out' &&
	! grep -q survived '$tmp/oom.out' || { scontrol -o show job $oom; cat '$tmp/oom.out'; false; }"
check "the GPU job goes on" bash -c "scontrol -o show job $gpu | grep -q 'JobState=RUNNING'"
scancel "$gpu"
slurm_wait_job "$gpu" 60 >/dev/null

finish
