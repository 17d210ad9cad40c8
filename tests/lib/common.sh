# common.sh: what every shell suite of cosched shares (sourced, never run), as chrony's
# test/system/test.common is for its system tests. A suite sources it first, then says what it
# checks; nothing here depends on the suite but the variables it documents.
#
#   TAP        ok NAME · not_ok NAME [DETAIL...] · skip NAME WHY · check NAME COMMAND...
#              skip_all WHY (the suite cannot run here: one skipped result, exit 0)
#              finish (the plan; returns 1 when a check failed: end a suite with it)
#   waiting    wait_for SECONDS COMMAND... (for a state, never for a time)
#   reading    py EXPR (JSON on stdin as d) · json FILE EXPR · run_pid FILE · proc_state PID
#              cpu_ticks PID
#   a daemon   c ARGS... (the client on $sock) · write_config TEXT · start_daemon ARGS...
#              stop_daemon · release_jobs · release_and_stop_daemon
#   Slurm      start_slurm (a private one-node Slurm, or skip_all; tests/slurm/cluster.sh)
#   cleanup    at_exit COMMAND (the suite's own, run first, last registered first); then the
#              jobs released, the daemon stopped, every run recorded in $tmp/run*.json killed,
#              the private Slurm stopped, $tmp removed — whatever failed before.
#
# Sets root, build, the programs' paths, tmp (a fresh directory), sock and daemon_pid.
# shellcheck shell=bash disable=SC2034 # the paths are for the suites that source it
root=${COSCHED_SOURCE_ROOT:?}
build=${COSCHED_BUILD_ROOT:?}
coschedd=$build/daemon/coschedd
cosched=$build/client/cosched
noise=$build/noise/cosched-noise
train=$build/trainer/cosched-train
topologies=$root/tests/topologies
tmp=$(mktemp -d)
sock=$tmp/coschedd.sock
daemon_pid=
daemon_env=() # VAR=value words the daemon starts with (a stand-in library's settings)

# --- TAP

tap_n=0
tap_failed=0
ok() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1"
}
not_ok() {
    tap_n=$((tap_n + 1))
    tap_failed=$((tap_failed + 1))
    echo "not ok $tap_n - $1"
    shift
    local line
    for line in "$@"; do
        printf '%s\n' "$line" | sed 's/^/# /'
    done
}
skip() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1 # SKIP $2"
}
# check NAME COMMAND...: passes when COMMAND exits 0, and returns as it did (`check ... || more`).
# It runs in this shell (a function may set what later checks read); what it prints is shown
# when it fails, and otherwise only its lines that are TAP comments already ("# loss 0.42": a
# figure the suite wants in its log).
check() {
    local name=$1
    shift
    if "$@" >"$tmp/.check.out" 2>&1; then
        ok "$name"
        grep '^# ' "$tmp/.check.out" || true
    else
        not_ok "$name" "failed: $*" "$(tail -n 40 "$tmp/.check.out")"
        return 1
    fi
}
# tap_from COMMAND...: COMMAND's "ok - " and "not ok - " lines (a Python helper's cases) as this
# test's checks, its other lines as comments, and a check that it ran to its end (exit 0).
tap_from() {
    local line rc
    "$@" >"$tmp/.tap_from.out" 2>&1
    rc=$?
    while IFS= read -r line; do
        case "$line" in
            "ok - "*) ok "${line#ok - }" ;;
            "not ok - "*) not_ok "${line#not ok - }" ;;
            *) echo "# $line" ;;
        esac
    done <"$tmp/.tap_from.out"
    [ $rc -eq 0 ] || not_ok "$*: ran to its end (exit $rc)"
}
finish() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}
skip_all() {
    ok "# SKIP $1"
    finish
    exit 0
}

# --- waiting: a ceiling far above what the state takes on a loaded machine (an ASan daemon
# beside stress-ng included); each wait returns as soon as its state is reached.

# wait_for SECONDS COMMAND...: 0 as soon as COMMAND succeeds (run quietly), 1 when SECONDS pass.
wait_for() {
    local until=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$until" ] || return 1
        sleep 0.1
    done
}

# --- reading replies and /proc

py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
run_pid() { json "$1" 'print(d["pid"])'; }
proc_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; } # R, S, T, Z, ...
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
ticks_above() { [ "$(cpu_ticks "$1")" -gt "$2" ]; }
# works PID: it gets CPU, however little (its CPU time grows; waits up to a minute).
works() {
    local before
    before=$(cpu_ticks "$1") && wait_for 60 ticks_above "$1" "$before"
}

# --- a private coschedd on $sock, its state in $tmp/state, its log in $tmp/daemon.log

c() { "$cosched" --socket "$sock" "$@"; }

# write_config TEXT: $tmp/coschedd.yaml, with the sanitizers' settings passed on to runs (runs
# get none of the daemon's environment but what keep_environment names).
write_config() {
    printf '%s\nruns:\n  keep_environment: [ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS]\n' "$1" >"$tmp/coschedd.yaml"
}

# start_daemon ARGS...: coschedd in the foreground (a background job of the suite) with
# $daemon_env, $tmp/coschedd.yaml unless ARGS has a --config (written empty when missing);
# 0 once it answers, else its log is shown.
start_daemon() {
    local config=(--config "$tmp/coschedd.yaml")
    case " $* " in *" --config "*) config=() ;; esac
    [ ${#config[@]} -eq 0 ] || [ -f "$tmp/coschedd.yaml" ] || write_config ""
    rm -f "$sock"
    env ${daemon_env[@]+"${daemon_env[@]}"} "$coschedd" --foreground --socket "$sock" --state-dir "$tmp/state" \
        ${config[@]+"${config[@]}"} "$@" >>"$tmp/daemon.log" 2>&1 &
    daemon_pid=$!
    wait_for 60 daemon_up_or_dead && c status >/dev/null 2>&1 && return 0
    echo "# coschedd did not come up:"
    sed 's/^/#   /' "$tmp/daemon.log"
    return 1
}
daemon_up_or_dead() { c status || ! kill -0 "$daemon_pid"; }
daemon_gone() { ! kill -0 "$daemon_pid"; }

# stop_daemon: SIGTERM, and its exit status.
stop_daemon() {
    kill -TERM "$daemon_pid"
    wait "$daemon_pid"
    local rc=$?
    daemon_pid=
    return $rc
}

# release_jobs: every job the daemon holds released, so that what it throttles is let go before
# it stops (runs outlive a stopped coschedd by design, held ones too).
release_jobs() {
    local job
    for job in $(c --json job list 2>/dev/null | py 'print(" ".join(str(j["job"]) for j in d["jobs"]))' 2>/dev/null); do
        c job release --job "$job" >/dev/null 2>&1
    done
}

# release_and_stop_daemon: a daemon still up has its jobs released, then gets SIGTERM; one that
# hangs on its way out is killed after 30 s (waited for here: a sleep of a background reaper would
# outlive the suite, holding its output open).
release_and_stop_daemon() {
    [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null || return 0
    release_jobs
    kill -TERM "$daemon_pid" 2>/dev/null
    wait_for 30 daemon_gone || kill -9 "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
    daemon_pid=
}

# --- a private Slurm (tests/slurm/cluster.sh; its SLURM_CLUSTER_* settings apply)

# start_slurm: a one-node cluster in $tmp/slurm (cluster.sh sourced, slurm_cluster_usable passed:
# tests/slurm/slurm_lib.sh), stopped by the cleanup after the daemon.
slurm_started=
start_slurm() {
    slurm_started=1
    slurm_cluster_start "$tmp/slurm"
}

# --- cleanup

exit_hooks=()
at_exit() { exit_hooks=("$1" ${exit_hooks[@]+"${exit_hooks[@]}"}); }

common_cleanup() {
    local hook f pid
    for hook in ${exit_hooks[@]+"${exit_hooks[@]}"}; do
        eval "$hook"
    done
    release_and_stop_daemon
    for f in "$tmp"/run*.json; do # none may outlive the test, a stopped one included
        [ -f "$f" ] || continue
        pid=$(run_pid "$f" 2>/dev/null)
        [ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    done
    [ -z "$slurm_started" ] || slurm_cluster_stop
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap common_cleanup EXIT
