#!/usr/bin/env bash
# daemon: the real coschedd for the libcosched tests — a temp socket and state dir, one trainer
# job registered, and client_timeout 60 s, so that no pause of a loaded machine closes a test's
# connection under it; the idle-close tests restart it on idle-close.yaml (client_timeout 1 s).
#
#   daemon.sh run PROGRAM [ARGS...]  start the daemon, register the job, run PROGRAM with
#                                    COSCHED_SOCKET, COSCHED_JOB, COSCHED_TEST_DIR and
#                                    COSCHED_TEST_DAEMON (this script) set; exit with its status
#   daemon.sh exec [CONFIG]          become coschedd on COSCHED_TEST_DIR's socket and state with
#                                    CONFIG (default coschedd.yaml there): a test restarts the
#                                    daemon as its own child this way, so that it can kill and
#                                    reap it
# The current daemon's pid is in $COSCHED_TEST_DIR/daemon.pid.
set -u
here=$(cd "$(dirname "$0")" && pwd)

daemon_exec() {
    local dir=${COSCHED_TEST_DIR:?}
    local config=${1:-$dir/coschedd.yaml}
    echo "$BASHPID" >"$dir/daemon.pid" # the subshell that execs coschedd below
    exec "${COSCHED_BUILD_ROOT:?}/daemon/coschedd" --foreground --socket "$dir/coschedd.sock" --state-dir "$dir/state" \
        --config "$config" --topology "${COSCHED_SOURCE_ROOT:?}/tests/topologies/ci-2core-gpu.xml" \
        </dev/null >>"$dir/daemon.log" 2>&1
}

# The rest runs with tests/lib/common.sh (sourced for run only: exec must leave no temp
# directory behind). Bounds for a daemon to come up or go are 60 s, far above what an ASan build
# on a loaded 2-core machine takes; every wait ends as soon as the state is reached.

# stop_current: the test may have started a later daemon; whichever is current goes, and nothing
# else: with SIGTERM, so that it removes its guard's cgroup subtree (a killed one leaves it),
# SIGKILL after a minute.
stop_current() {
    local pid
    pid=$(cat "$tmp/daemon.pid" 2>/dev/null) || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    wait_for 60 not_running "$pid"
    kill -9 "$pid" 2>/dev/null
    wait
}
not_running() { ! kill -0 "$1" 2>/dev/null; }

run() {
    export COSCHED_TEST_DIR=$tmp COSCHED_TEST_DAEMON=$here/daemon.sh
    export COSCHED_SOCKET=$sock COSCHED_JOB=libtest
    at_exit stop_current
    # A rank that goes quiet keeps its job's series of steps for guard.idle_release: an hour here,
    # so that no stall of a loaded machine hands test_autoreport's series to the other rank.
    printf 'client_timeout: 60\nguard:\n  idle_release: 3600\n' >"$tmp/coschedd.yaml"
    printf 'client_timeout: 1\n' >"$tmp/idle-close.yaml"
    daemon_exec &
    if ! wait_for 60 c --timeout 60 status; then
        echo "Bail out! coschedd did not come up within 60 s"; sed 's/^/# /' "$tmp/daemon.log"
        return 1
    fi
    if ! c --timeout 60 job register --job "$COSCHED_JOB" --uid "$(id -u)" --role trainer \
        --policy l3 --cores-per-rank 1 >"$tmp/register.out" 2>&1; then
        echo "Bail out! cannot register the trainer job"; sed 's/^/# /' "$tmp/register.out"
        return 1
    fi
    "$@"
}

case "${1:-}" in
run)
    shift
    # shellcheck source-path=SCRIPTDIR source=../lib/common.sh
    . "$here/../lib/common.sh"
    run "$@"
    ;;
exec) shift; daemon_exec "$@" ;;
*) echo "usage: daemon.sh run PROGRAM [ARGS...] | daemon.sh exec [CONFIG]" >&2; exit 2 ;;
esac
