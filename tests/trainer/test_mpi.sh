#!/bin/bash
# test_mpi: cosched-train under mpirun with 2 ranks: identical parameters on every rank for
# both allreduce kinds and fusion settings, 1 rank = 2 ranks for a fixed global batch, resume, a
# failed allreduce said before the abort, and a SIGTERM to one rank (raised in it mid-step, or
# sent to its pid) stopping both after the same step.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/trainer_lib.sh"
command -v mpirun >/dev/null || skip_all "mpirun not installed (apt-get install openmpi-bin)"
small="--model resnet8 --image-size 8 --data synthetic:256 --threads 1"

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
# ranks DIR [VAR=VALUE...] ARGS...: cosched-train under mpirun with 2 ranks, each writing its
# own stdout, stderr and pid (DIR/out.RANK, err.RANK, pid.RANK) instead of through mpirun: no
# line is lost when MPI_Abort tears the run down, and a signal can go to one rank by its pid.
# The VAR=VALUE settings are for the trainer only (LD_PRELOAD would load the shim into bash). A
# run that outlives 120 s (ranks that never agree to stop wait for ever) is ended: exit 124.
ranks() {
	local dir=$1
	shift
	mkdir -p "$dir"
	timeout -k 10 120 $MPIRUN -np 2 bash -c 'd=$0 r=$OMPI_COMM_WORLD_RANK; echo $$ >"$d/pid.$r"
		exec env "$@" >"$d/out.$r" 2>"$d/err.$r"' "$dir" "$@"
}
# steps DIR: per rank, its summary's step count and its step lines' steps, as JSON
steps() { python3 - "$1" <<'PY'
import json, sys
out = {}
for r in (0, 1):
    lines = [json.loads(l) for l in open("%s/out.%d" % (sys.argv[1], r)) if l.startswith("{")]
    out[r] = {"summary_steps": [l["steps"] for l in lines if l["event"] == "summary"],
              "steps": [l["step"] for l in lines if l["event"] == "step"]}
print(json.dumps(out))
PY
}
# stopped_together DIR LOW [HIGH]: both ranks summarized the same step count n, LOW <= n <= HIGH,
# each after printing steps 0 .. n-1; what each rank printed goes to the log when not.
stopped_together() {
	python3 - "$(steps "$1")" "$2" "${3:-999999}" <<'PY' || { sed 's/^/# /' "$1"/err.*; false; }
import json, sys
s, low, high = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
n = s["0"]["summary_steps"]
ok = len(n) == 1 and low <= n[0] <= high and all(
    s[r]["summary_steps"] == n and s[r]["steps"] == list(range(n[0])) for r in ("0", "1"))
if not ok:
    print("# summaries and steps per rank:", json.dumps({r: {"summary": s[r]["summary_steps"],
          "steps": "%s .. %s" % (s[r]["steps"][:1], s[r]["steps"][-1:])} for r in s}))
sys.exit(not ok)
PY
}
# A gradient allreduce that fails mid-run (mpi_fault.c makes rank 1's third one fail) ends
# the run with the failing rank's message printed before MPI_Abort, not lost.
FAULT=${COSCHED_MPI_FAULT_SHIM:-}
# the shim is loaded ahead of an ASan runtime; that order is what LD_PRELOAD means
fault_env=(LD_PRELOAD="$FAULT" MPI_FAULT_RANK=1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
fused="--allreduce mpi --fusion-mb 1000" # one float allreduce per step: call k is step k-1's
if [ -n "$FAULT" ] && [ -f "$FAULT" ]; then
	ranks "$tmp/fault" "${fault_env[@]}" MPI_FAULT_CALL=3 "$TRAIN" $small --batch 8 --steps 6 $fused
	rc=$?
	check "a failed gradient allreduce ends the run with a non-zero exit (rc $rc)" test $rc -ne 0
	check "the failing rank's message is printed before the abort" \
		grep -q "cosched-train: rank 1: gradient allreduce failed at step 2" "$tmp/fault/err.1"
	check "the steps before the failure were reported, by both ranks, and none after" python3 -c "
import json, sys
s = json.loads(sys.argv[1])
sys.exit(not all(s[r]['steps'] == [0, 1] and s[r]['summary_steps'] == [] for r in s))" "$(steps "$tmp/fault")"
	# SIGTERM raised on rank 1 in the middle of its 4th step (its 4th gradient allreduce): both
	# ranks finish that step and stop after it, 4 steps each. The run waits for the signal: its
	# step count is far beyond what it reaches.
	ranks "$tmp/raised" "${fault_env[@]}" MPI_FAULT_CALL=4 MPI_FAULT_SIGNAL=15 \
		"$TRAIN" $small --batch 8 --steps 1000000 $fused
	rc=$?
	check "SIGTERM on one of two ranks mid-step ends the run with exit 0 (rc $rc)" test $rc -eq 0
	check "... both ranks stop after exactly that step, with their summaries" stopped_together "$tmp/raised" 4 4
else
	skip "a failed gradient allreduce, and SIGTERM raised on one rank mid-step" \
		"the mpi_fault shim was not built (COSCHED_MPI_FAULT_SHIM unset)"
fi
# SIGTERM from outside to one rank, by its pid, once that rank has reported step 9: both end
# after the same step, cleanly (summary lines, exit 0), step 9 or later.
before=$(date +%s.%N)
ranks "$tmp/term" "$TRAIN" $small --batch 8 --steps 1000000 &
mpi_pid=$!
reached=1
for _ in $(seq 1200); do # up to 120 s; on as soon as rank 1 is there
	grep -q '"event":"step","step":9,' "$tmp/term/out.1" 2>/dev/null && { reached=0; break; }
	kill -0 "$mpi_pid" 2>/dev/null || break
	sleep 0.1
done
if [ $reached -eq 0 ]; then
	ok "rank 1 reports step 9 of an open-ended run"
	kill -TERM "$(cat "$tmp/term/pid.1")"
	wait "$mpi_pid"
	rc=$?
else
	not_ok "rank 1 reports step 9 of an open-ended run (not within 120 s, or the run ended)"
	sed 's/^/# /' "$tmp"/term/err.*
	cat "$tmp"/term/pid.* 2>/dev/null | xargs -r kill -KILL # the ranks; then mpirun ends
	wait "$mpi_pid"
	rc=killed
fi
after=$(date +%s.%N)
check "SIGTERM to one of two ranks ends the run with exit 0 (rc $rc)" test "$rc" = 0
check "... both ranks stop after the same step, with their summaries" stopped_together "$tmp/term" 10
check "... and every step line carries the wall clock of its end" python3 -c "
import json, sys
before, after = float(sys.argv[1]), float(sys.argv[2])
steps = [json.loads(l) for l in open('$tmp/term/out.0') if '\"event\":\"step\"' in l]
t = [s['time'] for s in steps]
sys.exit(not (t and all(b >= a for a, b in zip(t, t[1:])) and before <= t[0] and t[-1] <= after))" "$before" "$after"
finish
