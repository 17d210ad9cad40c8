#!/usr/bin/env bash
# test_golden: every cosched command's --help, usage errors, exit codes and output (--json and
# tables) on the test topologies, and the shape of the daemon's --json replies, against the
# recorded golden/expected-*.txt. Any change to what users or scripts see shows up here as a diff;
# a deliberate one is recorded with `test_golden.sh --update` and reviewed in the commit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
update=0
[ "${1:-}" = --update ] && update=1
unset COSCHED_TOPOLOGY COSCHED_SOCKET SLURM_JOB_ID SLURM_LOCALID CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES PYTHONPATH

# words LINE: the line's words into the array w, placeholders filled in.
words() {
    local line=${1//@T@/$root/tests/topologies}
    line=${line//@NOSOCK@/$tmp/nobody.sock}
    read -r -a w <<<"$line"
}
# The output with this checkout's and this run's paths made neutral.
neutral() { sed -e "s|$root|@ROOT@|g" -e "s|$tmp|@TMP@|g"; }
shape() { jq -r '[paths as $p | ($p | map(if type == "number" then "[]" else . end) | join(".")) + ": " + (getpath($p) | type)] | unique | .[]' 2>&1; }

# The GPU sampler's thread, started by the first GPU trainer, reports a moment later that it
# cannot load NVML (this machine has none): wait for that, so that every reply after shows it.
gpu_problem() { c --json guard | jq -e '.guard.problems | length > 0'; }
wait_gpu_problem() { wait_for 60 gpu_problem || echo "# the daemon did not report the GPU's problem within 60 s" >&2; }

# record CASES MODE: each case's exit code, stdout and stderr; MODE daemon runs @J / @H lines.
record() {
    local line kind
    while IFS= read -r line; do
        [[ $line == \#* ]] && continue
        if [ "$line" = @WAIT-GPU-PROBLEM ]; then wait_gpu_problem; continue; fi
        kind=H
        if [[ $line == @[JH]\ * ]]; then kind=${line:1:1}; line=${line:3}; fi
        words "$line"
        echo "### cosched $line"
        if [ "$2" = daemon ]; then
            "$cosched" --socket "$sock" "${w[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null
        else
            "$cosched" "${w[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null
        fi
        echo "exit $?"
        echo "--- stdout"
        if [ "$kind" = J ]; then shape <"$tmp/out"; else neutral <"$tmp/out"; fi
        echo "--- stderr"
        neutral <"$tmp/err"
    done <"$1"
}

compare() { # NAME ACTUAL EXPECTED
    if [ "$update" = 1 ]; then cp "$2" "$3"; ok "$1 (recorded)"; return; fi
    if diff -u "$3" "$2" >"$tmp/diff"; then ok "$1"
    else not_ok "$1" "output differs from $(basename "$3") (test_golden.sh --update records it):" "$(head -80 "$tmp/diff")"; fi
}

record "$here/golden/cases-offline.txt" offline >"$tmp/offline.txt"
compare "commands without a daemon: help, usage errors, topo, plan, slurm-conf, dry runs" \
    "$tmp/offline.txt" "$here/golden/expected-offline.txt"

# The step reporter's directory under the run's own path, not the build's prefix.
write_config "autoreport:
  dir: $tmp/autoreport"
start_daemon --topology "$topologies/ci-2core-gpu.xml" || not_ok "the daemon starts"
record "$here/golden/cases-daemon.txt" daemon >"$tmp/daemon.txt"
compare "commands through a daemon: replies' shapes and messages" "$tmp/daemon.txt" "$here/golden/expected-daemon.txt"
finish
