# tap.sh: the few TAP helpers the noise shell tests share (sourced, not run).
# ok NAME / fail NAME WHY / check NAME COMMAND...; done_testing prints the plan at the end.
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name" "failed: $*"; fi; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
done_testing() { echo "1..$n"; exit 0; }

# Waits for a state, never for a time: a bound far above what a loaded machine needs, and each
# wait returns as soon as its state is reached.
WAIT_S=60
# wait_until COMMAND...: 0 as soon as COMMAND succeeds, 1 when WAIT_S pass first.
wait_until() {
    local end=$((SECONDS + WAIT_S))
    until "$@"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.05
    done
}
# has_line FILE JQ-CONDITION: FILE holds an output line for which the condition is true.
has_line() { [ -s "$1" ] && jq -e -s "any(.[]; $2)" "$1" > /dev/null 2>&1; }
gone() { ! kill -0 "$1" 2> /dev/null; }
# stop_and_reap PID SIGNAL: send SIGNAL, wait for the exit; its status in $rc, or 1 (after a
# SIGKILL, with rc 137) when it is still running WAIT_S later.
stop_and_reap() {
    kill -"$2" "$1" 2> /dev/null
    if ! wait_until gone "$1"; then
        kill -KILL "$1" 2> /dev/null
        wait "$1"
        rc=137
        return 1
    fi
    wait "$1"; rc=$?
}
