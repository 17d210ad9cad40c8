# tap.sh: the few TAP helpers the noise shell tests share (sourced, not run).
# ok NAME / fail NAME WHY / check NAME COMMAND...; done_testing prints the plan at the end.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name" "failed: $*"; fi; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
done_testing() { echo "1..$n"; exit 0; }
