# tap.sh: a few lines of TAP for shell tests (sourced). ok/not ok per check, plan at the end; and
# wait_for, the one way these tests wait for a state.
tap_n=0
tap_failed=0
tap_ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
tap_not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
# check NAME COMMAND...: passes when the command exits 0.
check() { local name=$1; shift; local out; if out=$("$@" 2>&1); then tap_ok "$name"; else tap_not_ok "$name" "$out"; fi; }
tap_done() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
# tap_skip NAME WHY: a check that cannot run here, with the reason.
tap_skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
# wait_for SECONDS COMMAND...: run the command (quietly) until it succeeds, then return 0 at once;
# 1 once SECONDS have passed without. The ceiling is far above what the state takes on a loaded
# machine: a test waits for the state, never for a time, and fails when the state never comes.
wait_for() {
    local until=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$until" ] || return 1
        sleep 0.1
    done
}
