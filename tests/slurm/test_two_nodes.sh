#!/bin/bash
# test_two_nodes: the study's Table III in miniature — two nodes (cn1, cn2: network namespaces,
# each with its own slurmd and coschedd), one slurmctld and munge key: a 2-node trainer job
# (cosched-train over Open MPI across the nodes) registered on both nodes by their prologs, a
# 2-node co-tenant job beside it, both released on both nodes by their epilogs.
. "${COSCHED_SOURCE_ROOT:?}/tests/trainer/tap.sh"
. "${COSCHED_SOURCE_ROOT:?}/tests/slurm/cluster.sh"
root=$COSCHED_SOURCE_ROOT
build=${COSCHED_BUILD_ROOT:?}
tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; slurm_cluster_stop; rm -rf "$tmp"' EXIT
if ! why=$(slurm_cluster_usable); then
	ok "# SKIP $why"
	finish
	exit
fi
if ! command -v nsenter >/dev/null || ! command -v ip >/dev/null || ! command -v mpirun >/dev/null; then
	ok "# SKIP two nodes need ip, nsenter and Open MPI"
	finish
	exit
fi
c() { "$build/client/cosched" --socket "$tmp/$1.sock" "${@:2}"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
# The settings file is shell: each node's scripts find their node's coschedd.
cat >"$tmp/conf" <<CONF
cosched=$build/client/cosched
socket=$tmp/\$SLURMD_NODENAME.sock
timeout=5
log_file=$tmp/slurm.log
CONF
for s in prolog epilog taskprolog; do
	printf '#!/bin/bash\nexport COSCHED_SLURM_CONF=%s\nexec %s "$@"\n' "$tmp/conf" "$root/packaging/slurm/$s" >"$tmp/$s"
	chmod 755 "$tmp/$s"
done
SLURM_CLUSTER_GPUS=1 SLURM_CLUSTER_PROLOG=$tmp/prolog SLURM_CLUSTER_EPILOG=$tmp/epilog \
	SLURM_CLUSTER_TASKPROLOG=$tmp/taskprolog slurm_cluster_start2 "$tmp/slurm" 2>"$tmp/err"
if [ $? != 0 ]; then
	not_ok "a two-node Slurm with cosched's scripts starts"
	sed 's/^/# /' "$tmp/err"
	slurm_cluster_logs
	finish
	exit
fi
ok "a two-node Slurm with cosched's scripts starts"
for node in cn1 cn2; do
	slurm_node_exec "$node" "$build/daemon/coschedd" --foreground --socket "$tmp/$node.sock" \
		--state-dir "$tmp/state-$node" --topology "$root/tests/topologies/ci-2core-gpu.xml" \
		>"$tmp/$node.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do c "$node" status >/dev/null 2>&1 && break; sleep 0.05; done
done
check "a coschedd answers on each node" bash -c "'$build/client/cosched' --socket '$tmp/cn1.sock' status >/dev/null &&
	'$build/client/cosched' --socket '$tmp/cn2.sock' status >/dev/null"

small="--model resnet8 --image-size 8 --data synthetic:256 --batch 8 --steps 30 --threads 1"
t=$(sbatch --parsable -N 2 -n 2 -c 1 --gres=gpu:1 -o "$tmp/t.out" \
	--wrap "for i in \$(seq 1200); do [ -e $tmp/go ] && break; sleep 0.1; done; srun --mpi=pmix $build/trainer/cosched-train $small")
co=$(sbatch --parsable -N 2 -n 2 -c 1 -o "$tmp/n.out" --wrap "srun sleep 60")
registered() { # registered NODE JOB ROLE
	c "$1" --json job get --job "$2" 2>/dev/null | json "assert d['role'] == '$3' and d['external']" 2>/dev/null
}
for _ in $(seq 300); do
	registered cn1 "$t" trainer && registered cn2 "$t" trainer && registered cn1 "$co" cotenant &&
		registered cn2 "$co" cotenant && break
	sleep 0.1
done
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
for node in cn1 cn2; do
	for _ in $(seq 50); do [ "$(c "$node" --json job list | json 'print(len(d["jobs"]))')" = 0 ] && break; sleep 0.1; done
	check "$node's epilog released both jobs" test "$(c "$node" --json job list | json 'print(len(d["jobs"]))')" = 0
done
sed 's/^/# log: /' "$tmp/slurm.log"
finish
