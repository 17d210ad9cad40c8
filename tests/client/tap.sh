# tap.sh: a few lines of TAP for shell tests (sourced). ok/not ok per check, plan at the end.
tap_n=0
tap_failed=0
tap_ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
tap_not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
# check NAME COMMAND...: passes when the command exits 0.
check() { local name=$1; shift; local out; if out=$("$@" 2>&1); then tap_ok "$name"; else tap_not_ok "$name" "$out"; fi; }
tap_done() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
# tap_skip NAME WHY: a check that cannot run here, with the reason.
tap_skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
