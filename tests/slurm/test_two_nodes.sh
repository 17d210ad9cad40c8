#!/bin/bash
# test_two_nodes: the study's Table III in miniature — two nodes (cn1, cn2: network namespaces,
# each with its own slurmd and coschedd), one slurmctld and munge key: a 2-node trainer job
# (cosched-train over Open MPI across the nodes) registered on both nodes by their prologs, a
# 2-node co-tenant job beside it, both released on both nodes by their epilogs.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
chmod 755 "$tmp"
need_slurm
if ! command -v nsenter >/dev/null || ! command -v ip >/dev/null || ! command -v mpirun >/dev/null; then
	skip_all "two nodes need ip, nsenter and Open MPI"
fi
pids=() # the nodes' coschedd, stopped before their cluster
stop_node_daemons() { kill "${pids[@]}" 2>/dev/null; }
at_exit slurm_cluster_stop
at_exit stop_node_daemons
c_on() { "$cosched" --socket "$tmp/$1.sock" "${@:2}"; } # c_on NODE ARGS...: the client on NODE's coschedd
# The settings file is shell: each node's scripts find their node's coschedd.
cosched_scripts "$tmp/\$SLURMD_NODENAME.sock"
SLURM_CLUSTER_GPUS=1 slurm_up "a two-node Slurm with cosched's scripts starts" slurm_cluster_start2 "$tmp/slurm" ||
	{ finish; exit; }
for node in cn1 cn2; do
	slurm_node_exec "$node" "$coschedd" --foreground --socket "$tmp/$node.sock" \
		--state-dir "$tmp/state-$node" --topology "$topologies/ci-2core-gpu.xml" \
		>"$tmp/$node.log" 2>&1 &
	pids+=($!)
	wait_for 60 c_on "$node" status
done
check "a coschedd answers on each node" bash -c "'$build/client/cosched' --socket '$tmp/cn1.sock' status >/dev/null &&
	'$build/client/cosched' --socket '$tmp/cn2.sock' status >/dev/null"

small="--model resnet8 --image-size 8 --data synthetic:256 --batch 8 --steps 30 --threads 1"
t=$(sbatch --parsable -N 2 -n 2 -c 1 --gres=gpu:1 -o "$tmp/t.out" \
	--wrap "for i in \$(seq 1200); do [ -e $tmp/go ] && break; sleep 0.1; done; srun --mpi=pmix $build/trainer/cosched-train $small")
co=$(sbatch --parsable -N 2 -n 2 -c 1 -o "$tmp/n.out" --wrap "srun sleep 60")
registered() { # registered NODE JOB ROLE
	c_on "$1" --json job get --job "$2" 2>/dev/null | py "assert d['role'] == '$3' and d['external']" 2>/dev/null
}
all_registered() {
	registered cn1 "$t" trainer && registered cn2 "$t" trainer && registered cn1 "$co" cotenant &&
		registered cn2 "$co" cotenant
}
wait_for 30 all_registered
for node in cn1 cn2; do
	check "$node's prolog registered the 2-node trainer job on its GPU" registered "$node" "$t" trainer
	check "$node's prolog registered the 2-node co-tenant job" registered "$node" "$co" cotenant
done
touch "$tmp/go" # registrations seen: the trainer may train (and end)
slurm_wait_job "$t" 180
check "the trainer trained across both nodes (two ranks, same parameters)" python3 -c "
import json, sys
lines = [json.loads(l) for l in open('$tmp/t.out') if l.startswith('{')]
h = [l['param_hash'] for l in lines if l['event'] == 'summary']
sys.exit(not (len(h) == 2 and h[0] == h[1]))"
scancel "$co"
slurm_wait_job "$co" 60
no_jobs_on() { test "$(c_on "$1" --json job list | py 'print(len(d["jobs"]))')" = 0; }
for node in cn1 cn2; do
	wait_for 60 no_jobs_on "$node"
	check "$node's epilog released both jobs" no_jobs_on "$node"
done
sed 's/^/# log: /' "$tmp/slurm.log"
finish
