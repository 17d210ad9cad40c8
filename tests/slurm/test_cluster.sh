#!/bin/bash
# test_cluster: the private Slurm clusters of cluster.sh give tests what a GPU cluster's nodes
# have: jobs confined to their cores by cgroups, prologs, GPUs as gres, two nodes for MPI.
# The checks also pin down what Slurm 22.05 shows a prolog (the header of cluster.sh).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
need_slurm
at_exit slurm_cluster_stop

# The prolog records, per node and job, its environment and what it finds of the job's
# cpuset. Slurm runs it with Slurm's variables only, so it sets its own PATH.
cat >"$tmp/prolog" <<EOF
#!/bin/bash
PATH=/usr/sbin:/usr/bin:/sbin:/bin
out=$tmp/prolog.\$SLURMD_NODENAME.\$SLURM_JOB_ID
env >"\$out.env"
cg=/sys/fs/cgroup/cpuset/slurm_\$SLURMD_NODENAME/uid_\$SLURM_JOB_UID/job_\$SLURM_JOB_ID
if [ -d "\$cg" ]; then echo "present \$(cat "\$cg/cpuset.cpus")"; else echo absent; fi >"\$out.cpuset"
scontrol -d show job "\$SLURM_JOB_ID" | sed -n 's/.* CPU_IDs=\([^ ]*\) .*/\1/p' >"\$out.cpu_ids"
exit 0
EOF
cat >"$tmp/epilog" <<EOF
#!/bin/bash
/usr/bin/env >$tmp/epilog.\$SLURMD_NODENAME.\$SLURM_JOB_ID.env
exit 0
EOF
cat >"$tmp/taskprolog" <<'EOF'
#!/bin/bash
echo "export COSCHED_TASKPROLOG=ran-for-$SLURM_JOB_ID"
EOF
# meet NAME OTHER: a batch job that records where it runs, then waits (60 s at most) until job
# OTHER runs too. Each job sees the other's file only once the other runs, and runs itself
# until it has seen it: when both meet, they ran at the same time.
cat >"$tmp/meet" <<EOF
#!/bin/bash
cg=/sys/fs/cgroup/cpuset/slurm_\$SLURMD_NODENAME/uid_\$(id -u)/job_\$SLURM_JOB_ID
{
	echo "cpus \$(sed -n 's/^Cpus_allowed_list:\s*//p' /proc/self/status)"
	echo "cgroup \$(sed -n 's/^[0-9]*:cpuset://p' /proc/self/cgroup)"
	echo "job_cpuset \$(cat "\$cg/cpuset.cpus")"
	echo "gpus \$CUDA_VISIBLE_DEVICES"
	echo "taskprolog \$COSCHED_TASKPROLOG"
	echo "overlap_step_cpus \$(srun --overlap -n 1 sed -n 's/^Cpus_allowed_list:\s*//p' /proc/self/status)"
} >$tmp/\$1.out
touch $tmp/\$1.running
for i in \$(seq 300); do
	[ -e $tmp/\$2.running ] && echo met >>$tmp/\$1.out && exit 0
	sleep 0.2
done
exit 1
EOF
chmod +x "$tmp/prolog" "$tmp/epilog" "$tmp/taskprolog" "$tmp/meet"

# --- one node: cgroup confinement, prolog, epilog, task prolog, 2 GPUs without devices
# slurmd gets a variable of its own, to see whether the prolog inherits slurmd's environment.
# A failed start: its reason and the daemons' logs, and no further checks on that cluster.
if SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_GPUS=2 SLURM_CLUSTER_PROLOG=$tmp/prolog \
	SLURM_CLUSTER_EPILOG=$tmp/epilog SLURM_CLUSTER_TASKPROLOG=$tmp/taskprolog COSCHED_TEST_SLURMD_ONLY=1 \
	slurm_up "a one-node cluster with cgroup confinement, prolog and 2 gres/gpu starts, its node idle" \
	slurm_cluster_start "$tmp/one"; then
	node=$(hostname -s)
	# value of KEY in file F of lines "KEY VALUE"
	val() { sed -n "s/^$2 //p" "$tmp/$1"; }
	a=$(sbatch --parsable -n 1 -c 1 --gres=gpu:1 -o "$tmp/a.log" "$tmp/meet" a b)
	b=$(sbatch --parsable -n 1 -c 1 --gres=gpu:1 -o "$tmp/b.log" "$tmp/meet" b a)
	slurm_wait_job "$a" 90 && slurm_wait_job "$b" 90
	check "two 1-CPU jobs from two sbatch both complete" \
		test "$(slurm_job_state "$a") $(slurm_job_state "$b")" = "COMPLETED COMPLETED"
	check "the two jobs ran at the same time" \
		test "$(tail -1 "$tmp/a.out") $(tail -1 "$tmp/b.out")" = "met met"
	check "a 1-CPU job's task sees one CPU (Cpus_allowed_list)" \
		test "$(val a.out cpus | grep -cE '^[0-9]+$')" = 1
	check "the two jobs ran on disjoint CPUs" \
		test "$(printf '%s\n' "$(val a.out cpus)" "$(val b.out cpus)" | sort -u | wc -l)" = 2
	check "the job's cpuset is /sys/fs/cgroup/cpuset/slurm_$node/uid_0/job_<id>, with its CPU" \
		test "$(val a.out job_cpuset)" = "$(val a.out cpus)"
	check "the batch script runs in its step_batch below it" \
		test "$(val a.out cgroup)" = "/slurm_$node/uid_0/job_$a/step_batch"
	check "srun --overlap runs a step in the job, on the job's CPU" \
		test "$(val a.out overlap_step_cpus)" = "$(val a.out cpus)"
	check "the prolog runs before the job's cpuset exists (PrologFlags=Alloc,Contain)" \
		test "$(cat "$tmp/prolog.$node.$a.cpuset")" = absent
	check "the prolog finds the job's CPUs in scontrol -d show job (CPU_IDs)" \
		test "$(cat "$tmp/prolog.$node.$a.cpu_ids")" = "$(val a.out cpus)"
	check "the prolog gets Slurm's variables (SLURM_JOB_ID, SLURM_JOB_UID, SLURMD_NODENAME)" \
		test "$(grep -cxE "SLURM_JOB_ID=$a|SLURM_JOB_UID=0|SLURMD_NODENAME=$node" \
			"$tmp/prolog.$node.$a.env")" = 3
	check "the prolog gets none of slurmd's environment, not even PATH" \
		test -z "$(grep -E '^(COSCHED_TEST_SLURMD_ONLY|PATH|HOME)=' "$tmp/prolog.$node.$a.env")"
	check "the task prolog's exports reach the job" \
		test "$(val a.out taskprolog)" = "ran-for-$a"
	check "the epilog runs when the job ends" grep -qx "SLURM_JOB_ID=$a" "$tmp/epilog.$node.$a.env"
	gpus_of() { sed -n 's/^SLURM_JOB_GPUS=//p' "$tmp/prolog.$node.$1.env"; }
	check "the prolog sees SLURM_JOB_GPUS, one GPU index per 1-GPU job, the two jobs apart" \
		test "$(printf '%s\n' "$(gpus_of "$a")" "$(gpus_of "$b")" | sort | tr '\n' ' ')" = "0 1 "
	check "the task's CUDA_VISIBLE_DEVICES is the prolog's SLURM_JOB_GPUS" \
		test "$(val a.out gpus) $(val b.out gpus)" = "$(gpus_of "$a") $(gpus_of "$b")"
	c=$(sbatch --parsable -n 1 --gres=gpu:2 -o "$tmp/c.log" --wrap 'echo "gpus $CUDA_VISIBLE_DEVICES"')
	slurm_wait_job "$c" 60
	check "a 2-GPU job: SLURM_JOB_GPUS=0,1 in the prolog, CUDA_VISIBLE_DEVICES=0,1 in the task" \
		test "$(gpus_of "$c") $(val c.log gpus)" = "0,1 0,1"
	d=$(sbatch --parsable -n 1 -o /dev/null --wrap 'sleep 300')
	running() { [ "$(slurm_job_state "$1")" = RUNNING ]; }
	wait_for 60 running "$d"
	scancel "$d"
	slurm_wait_job "$d" 60
	check "scancel ends a running job (CANCELLED)" test "$(slurm_job_state "$d")" = CANCELLED
	echo "# a job's cpuset: /sys/fs/cgroup/cpuset/slurm_$node/uid_0/job_$a/step_batch," \
		"cpus $(val a.out job_cpuset)"
fi
slurm_cluster_stop

# --- two nodes, cn1 and cn2, each in a network namespace
if ! command -v nsenter >/dev/null || ! command -v ip >/dev/null; then
	skip "a two-node cluster" "two nodes need ip (iproute2) and nsenter (util-linux)"
	finish
	exit
fi
if slurm_up "a two-node cluster (cn1, cn2 in network namespaces) starts, both nodes idle" \
	slurm_cluster_start2 "$tmp/two"; then
	e=$(sbatch --parsable -N 2 -n 2 -o "$tmp/e.log" --wrap 'srun bash -c "echo \$SLURMD_NODENAME"')
	slurm_wait_job "$e" 60
	check "sbatch -N 2 -n 2 runs one task on each node" \
		test "$(sort "$tmp/e.log" | tr '\n' ' ')" = "cn1 cn2 "
	check "slurm_node_exec runs in the node's namespace, with the node's address" \
		test "$(slurm_node_exec cn2 sh -c 'echo $SLURM_CLUSTER_NODE $SLURM_CLUSTER_NODE_ADDR \
			$(ip -4 -o addr show dev eth0 | grep -c " $SLURM_CLUSTER_NODE_ADDR/")')" \
		= "cn2 $(slurm_node_addr cn2) 1"
	check "slurm_node_exec keeps /sys/fs/cgroup (nsenter, not ip netns exec)" \
		slurm_node_exec cn1 test -d /sys/fs/cgroup/cpuset
	if command -v mpirun >/dev/null && [ -x "$train" ]; then
		check "srun --mpi=pmix places rank 0 on cn1, rank 1 on cn2" \
			test "$(timeout 60 srun -N 2 -n 2 --mpi=pmix bash -c 'echo $PMIX_RANK $SLURMD_NODENAME' |
				sort | tr '\n' ' ')" = "0 cn1 1 cn2 "
		small="--model resnet8 --image-size 8 --data synthetic:256 --batch 8 --steps 4 --threads 1"
		timeout 120 srun -N 2 -n 2 --mpi=pmix "$train" $small >"$tmp/two.out" 2>"$tmp/err"
		rc=$?
		check "srun -N 2 -n 2 --mpi=pmix cosched-train exits 0 (Open MPI over the bridge)" test $rc -eq 0
		[ $rc -eq 0 ] || { sed 's/^/# /' "$tmp/err" | tail -20; slurm_cluster_logs; }
		check "both ranks report their steps" python3 -c "
import json, sys
r = {l['rank'] for l in map(json.loads, open('$tmp/two.out')) if l['event'] == 'step'}
sys.exit(r != {0, 1})"
		check "parameters identical on both ranks" python3 -c "
import json, sys
h = [l['param_hash'] for l in map(json.loads, open('$tmp/two.out')) if l['event'] == 'summary']
sys.exit(len(h) != 2 or h[0] != h[1])"
	else
		skip "srun --mpi=pmix across nodes" "Open MPI across nodes: no mpirun or no $train"
	fi
fi
net=$(cat "$tmp/two/net" 2>/dev/null)
slurm_cluster_stop
gone() {
	local kind name ns veth
	while read -r kind name ns veth _; do
		[ "$kind" = bridge ] && ip link show "$name" >/dev/null 2>&1 && return 1
		[ "$kind" = node ] && { ip netns list | grep -qw "$ns" || ip link show "$veth" >/dev/null 2>&1; } &&
			return 1
	done <<<"$net"
	[ -n "$net" ]
}
check "slurm_cluster_stop removes the namespaces, veths and bridge" gone
finish
