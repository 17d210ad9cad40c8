#!/bin/bash
# test_mpi: cosched-train under mpirun with 2 ranks: identical parameters on every rank for
# both allreduce kinds and fusion settings, 1 rank = 2 ranks for a fixed global batch, resume,
# and a SIGTERM to one rank stopping both at the same step.
. "$(dirname "$0")/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v mpirun >/dev/null; then
	ok "# SKIP mpirun not installed (apt-get install openmpi-bin)"
	finish
	exit
fi
small="--model resnet8 --image-size 8 --data synthetic:256 --threads 1"
hashes() { python3 -c '
import json, sys
print(" ".join(sorted(l["param_hash"] for l in map(json.loads, open(sys.argv[1]))
                      if l["event"] == "summary")))' "$1"; }
same_on_ranks() { local h; h=$(hashes "$1"); set -- $h; [ $# -eq 2 ] && [ "$1" = "$2" ]; }

for kind in mpi ring; do
	$MPIRUN -np 2 "$TRAIN" $small --batch 8 --steps 6 --allreduce $kind >"$tmp/$kind.out" 2>"$tmp/err"
	check "2 ranks, --allreduce $kind: exit 0" test $? -eq 0
	check "2 ranks, --allreduce $kind: parameters identical on both ranks" same_on_ranks "$tmp/$kind.out"
	check "2 ranks, --allreduce $kind: both ranks report their steps" python3 -c "
import json, sys
r = {l['rank'] for l in map(json.loads, open('$tmp/$kind.out')) if l['event'] == 'step'}
sys.exit(r != {0, 1})"
done
check "ring and MPI_Allreduce give the same parameters (2 ranks: a+b either way)" \
	test "$(hashes "$tmp/mpi.out")" = "$(hashes "$tmp/ring.out")"
$MPIRUN -np 2 "$TRAIN" $small --batch 8 --steps 6 --allreduce ring --fusion-mb 0 >"$tmp/unfused.out" 2>"$tmp/err"
check "unfused (one allreduce per tensor) equals fused" \
	test "$(hashes "$tmp/unfused.out")" = "$(hashes "$tmp/ring.out")"

# 1 rank x 16 against 2 ranks x 8 on a model without batch-norm: the same global batch, and
# the same rate once linear scaling is undone (lr 0.1 x 1 rank = 0.05 x 2 ranks)
nobn="--model resnet8 --image-size 8 --data synthetic:256 --threads 1 --batchnorm off --steps 3"
"$TRAIN" $nobn --batch 16 --lr 0 --checkpoint "$tmp/p0" >/dev/null 2>"$tmp/err"
"$TRAIN" $nobn --batch 16 --lr 0.1 --checkpoint "$tmp/p1" >/dev/null 2>"$tmp/err"
$MPIRUN -np 2 "$TRAIN" $nobn --batch 8 --lr 0.05 --checkpoint "$tmp/p2" >/dev/null 2>"$tmp/err"
check "1 rank and 2 ranks make the same update for a fixed global batch" python3 - "$tmp" <<'PY'
import struct, sys
def params(p):
    b = open(p, "rb").read()
    n = struct.unpack_from("<Q", b, 40)[0]
    return struct.unpack_from("<%df" % n, b, 104)
p0, p1, p2 = (params(sys.argv[1] + "/" + f) for f in ("p0", "p1", "p2"))
update = max(abs(a - b) for a, b in zip(p1, p0))
diff = max(abs(a - b) for a, b in zip(p1, p2))
print("# largest update %.3g, largest 1-vs-2-rank difference %.3g" % (update, diff))
assert update > 1e-3 and diff < 1e-3 * update
PY

before=$(date +%s.%N)
$MPIRUN -np 2 "$TRAIN" $small --batch 8 --steps 3 --trace "$tmp/trace.json" >/dev/null 2>"$tmp/err"
after=$(date +%s.%N)
check "2 ranks: one trace file with a process per rank, its origin by the wall clock" python3 - "$tmp/trace.json" \
	"$before" "$after" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
x = [e for e in trace["traceEvents"] if e["ph"] == "X"]
assert {e["pid"] for e in x} == {0, 1}
origin = trace["otherData"]["time_origin_unix"]
before, after = float(sys.argv[2]), float(sys.argv[3])
assert before <= origin <= after, (before, origin, after)
assert all(origin + e["ts"] / 1e6 <= after for e in x)
for r in (0, 1):
    steps = {e["args"]["step"] for e in x if e["pid"] == r and e["name"] == "allreduce"}
    assert steps == {0, 1, 2}, steps
PY

common="$small --batch 8 --steps 6 --allreduce ring"
$MPIRUN -np 2 "$TRAIN" $common --checkpoint "$tmp/ck" --stop-after 2 >/dev/null 2>"$tmp/err"
$MPIRUN -np 2 "$TRAIN" $common --resume "$tmp/ck" >"$tmp/resumed.out" 2>"$tmp/err"
check "2 ranks: resumed run ends with the parameters of the uninterrupted run" \
	test "$(hashes "$tmp/resumed.out")" = "$(hashes "$tmp/ring.out")"
# A gradient allreduce that fails mid-run (mpi_fault.c makes rank 1's third one fail) ends
# the run with the failing rank's message printed before MPI_Abort, not lost.
FAULT=${COSCHED_MPI_FAULT_SHIM:-}
if [ -n "$FAULT" ] && [ -f "$FAULT" ]; then
	$MPIRUN -np 2 -x LD_PRELOAD="$FAULT" -x MPI_FAULT_RANK=1 -x MPI_FAULT_CALL=3 \
		-x ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$TRAIN" $small --batch 8 --steps 6 --allreduce mpi --fusion-mb 1000 \
		>"$tmp/fault.out" 2>"$tmp/fault.err"
	rc=$?
	check "a failed gradient allreduce ends the run with a non-zero exit (rc $rc)" test $rc -ne 0
	check "the failing rank's message is printed before the abort" \
		grep -q "cosched-train: rank 1: gradient allreduce failed at step 2" "$tmp/fault.err"
	check "the steps before the failure were reported" python3 -c "
import json, sys
lines = [json.loads(l) for l in open('$tmp/fault.out') if l.startswith('{')]
steps = {l['step'] for l in lines if l['event'] == 'step'}
sys.exit(not {0, 1} <= steps)"
else
	ok "# SKIP the mpi_fault shim was not built (COSCHED_MPI_FAULT_SHIM unset)"
fi
# SIGTERM to one rank: both end after the same step, cleanly (summary lines, exit 0). The run
# waits for the signal: its step count is far beyond what it reaches.
$MPIRUN -np 2 "$TRAIN" $small --batch 8 --steps 1000000 --seed 4242 >"$tmp/term.out" 2>"$tmp/term.err" &
mpi_pid=$!
for _ in $(seq 300); do
	[ "$(grep -c '"event":"step"' "$tmp/term.out" 2>/dev/null)" -ge 10 ] && break
	sleep 0.1
done
kill -TERM "$(pgrep -f -- '--seed 4242' | grep -v "^$mpi_pid\$" | while read -r p; do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = cosched-train ] && echo "$p"; done | tail -1)"
wait "$mpi_pid"
rc=$?
check "SIGTERM to one of two ranks ends the run with exit 0 (rc $rc)" test $rc -eq 0
check "... both ranks stop after the same step, with their summaries" python3 -c "
import json, sys
lines = [json.loads(l) for l in open('$tmp/term.out') if l.startswith('{')]
steps = {l['rank']: l['steps'] for l in lines if l['event'] == 'summary'}
last = {l['rank']: l['step'] for l in lines if l['event'] == 'step'}
sys.exit(not (len(steps) == 2 and steps[0] == steps[1] and 10 <= steps[0] < 1000000 and last[0] == last[1] == steps[0] - 1))"
check "... and every step line carries the wall clock of its end" python3 -c "
import json, sys
steps = [json.loads(l) for l in open('$tmp/term.out') if '\"event\":\"step\"' in l]
t = [s['time'] for s in steps if s['rank'] == 0]
sys.exit(not (t and all(b >= a for a, b in zip(t, t[1:])) and abs(t[-1] - __import__('time').time()) < 600))"
finish
