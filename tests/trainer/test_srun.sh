#!/bin/bash
# test_srun: cosched-train launched by a real Slurm (a private one-node cluster: munged,
# slurmctld, slurmd) with srun --mpi=pmix, as a batch system starts it: both ranks train,
# keep the binding srun gave them, and end with the parameters an mpirun launch gives.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/trainer_lib.sh"
. "$here/../slurm/slurm_lib.sh"
need_slurm
command -v mpirun >/dev/null || skip_all "mpirun not installed"
slurm_up "a one-node Slurm cluster starts and its node is idle" start_slurm || { finish; exit; }

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
