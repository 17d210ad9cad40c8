# tap.sh: tiny TAP helpers shared by the end-to-end scripts of the trainer and tests/slurm (sourced).
# ok NAME / not_ok NAME / check NAME CMD...; finish prints the plan and sets the exit code.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
finish() {
	echo "1..$n"
	[ "$failed" -eq 0 ]
}
TRAIN=${COSCHED_BUILD_ROOT:?}/trainer/cosched-train
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
# JSON field of the last line of event EV in file F
field() { python3 -c '
import json, sys
ev, key = sys.argv[2], sys.argv[3]
v = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
v = [x for x in v if x.get("event") == ev]
print(v[-1][key])' "$@"; }
