#!/bin/bash
# test_srun: cosched-train launched by a real Slurm (a private one-node cluster: munged,
# slurmctld, slurmd) with srun --mpi=pmix, as a batch system starts it: both ranks train,
# keep the binding srun gave them, and end with the parameters an mpirun launch gives.
. "$(dirname "$0")/tap.sh"
. "${COSCHED_SOURCE_ROOT:?}/tests/slurm/cluster.sh"
tmp=$(mktemp -d)
trap 'slurm_cluster_stop; rm -rf "$tmp"' EXIT
if ! why=$(slurm_cluster_usable) || ! command -v mpirun >/dev/null; then
	ok "# SKIP ${why:-mpirun not installed}"
	finish
	exit
fi
if slurm_cluster_start "$tmp/slurm" 2>"$tmp/err"; then
	ok "a one-node Slurm cluster starts and its node is idle"
else
	not_ok "a one-node Slurm cluster starts and its node is idle"
	sed 's/^/# /' "$tmp/err"
	slurm_cluster_logs
	finish
	exit
fi

small="--model resnet8 --image-size 8 --data synthetic:256 --batch 8 --steps 4 --threads 1"
timeout 120 srun -n 2 --mpi=pmix --cpu-bind=cores "$TRAIN" $small >"$tmp/srun.out" 2>"$tmp/err"
rc=$?
check "srun -n 2 --mpi=pmix cosched-train exits 0" test $rc -eq 0
[ $rc -eq 0 ] || { sed 's/^/# /' "$tmp/err" | tail -20; slurm_cluster_logs; }
check "the start line counts 2 ranks" test "$(field "$tmp/srun.out" start ranks 2>/dev/null)" = 2
check "both ranks report their steps" python3 -c "
import json, sys
r = {l['rank'] for l in map(json.loads, open('$tmp/srun.out')) if l['event'] == 'step'}
sys.exit(r != {0, 1})"
hashes() { python3 -c '
import json, sys
print(" ".join(sorted(l["param_hash"] for l in map(json.loads, open(sys.argv[1]))
                      if l["event"] == "summary")))' "$1"; }
same_on_ranks() { local h; h=$(hashes "$1"); set -- $h; [ $# -eq 2 ] && [ "$1" = "$2" ]; }
check "parameters identical on both ranks" same_on_ranks "$tmp/srun.out"
# srun --cpu-bind=cores gives each rank one core; the trainer keeps it and reports it
if [ "$(nproc)" -ge 2 ]; then
	check "rank 0 keeps the one core srun bound it to" python3 -c "
import json, sys
c = [l['cpus'] for l in map(json.loads, open('$tmp/srun.out')) if l['event'] == 'start'][0]
sys.exit(not c.isdigit())"
fi
$MPIRUN -np 2 "$TRAIN" $small >"$tmp/mpirun.out" 2>"$tmp/err"
check "srun and mpirun launches end with the same parameters" \
	test "$(hashes "$tmp/srun.out")" = "$(hashes "$tmp/mpirun.out")"
finish
