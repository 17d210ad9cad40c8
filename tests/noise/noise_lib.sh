# noise_lib.sh: what the cosched-noise suites add to tests/lib/common.sh (sourced after it): the
# noise's JSON lines read with jq, and a worker stopped by a signal.
# shellcheck shell=bash disable=SC2034 # rc: for the suite that calls stop_and_reap

# jqe FILTER FILE: every line the filter selects is true, and there is one at least.
jqe() { jq -e -s "[.[] | $1] | length > 0 and all" "$2" >/dev/null; }
# has_line FILE JQ-CONDITION: FILE holds an output line for which the condition is true.
has_line() { [ -s "$1" ] && jq -e -s "any(.[]; $2)" "$1" >/dev/null 2>&1; }
gone() { ! kill -0 "$1" 2>/dev/null; }
# stop_and_reap PID SIGNAL: send SIGNAL, wait for the exit; its status in $rc, or 1 (after a
# SIGKILL, with rc 137) when it is still running a minute later.
stop_and_reap() {
    kill -"$2" "$1" 2>/dev/null
    if ! wait_for 60 gone "$1"; then
        kill -KILL "$1" 2>/dev/null
        wait "$1"
        rc=137
        return 1
    fi
    wait "$1"
    rc=$?
}
