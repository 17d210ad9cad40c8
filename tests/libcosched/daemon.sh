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
build=${COSCHED_BUILD_ROOT:?}
root=${COSCHED_SOURCE_ROOT:?}
coschedd=$build/daemon/coschedd
cosched=$build/client/cosched
# Bounds for a daemon to come up or go, far above what an ASan build on a loaded 2-core
# machine takes; every wait ends as soon as the state is reached.
WAIT_S=60

daemon_exec() {
    local dir=${COSCHED_TEST_DIR:?}
    local config=${1:-$dir/coschedd.yaml}
    echo "$BASHPID" >"$dir/daemon.pid" # the subshell that execs coschedd below
    exec "$coschedd" --foreground --socket "$dir/coschedd.sock" --state-dir "$dir/state" \
        --config "$config" --topology "$root/tests/topologies/ci-2core-gpu.xml" \
        </dev/null >>"$dir/daemon.log" 2>&1
}

stop_current() {
    local pid
    pid=$(cat "$dir/daemon.pid" 2>/dev/null) || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    local end=$((SECONDS + WAIT_S))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait
}

run() {
    dir=$(mktemp -d) # global: the EXIT trap needs it after run returns
    export COSCHED_TEST_DIR=$dir COSCHED_TEST_DAEMON=$here/daemon.sh
    export COSCHED_SOCKET=$dir/coschedd.sock COSCHED_JOB=libtest
    # The test may have started a later daemon; whichever is current goes, and nothing else: with
    # SIGTERM, so that it removes its guard's cgroup subtree (a killed one leaves it), SIGKILL
    # after WAIT_S.
    trap 'stop_current; rm -rf "$dir"' EXIT
    # A rank that goes quiet keeps its job's series of steps for guard.idle_release: an hour here,
    # so that no stall of a loaded machine hands test_autoreport's series to the other rank.
    printf 'client_timeout: 60\nguard:\n  idle_release: 3600\n' >"$dir/coschedd.yaml"
    printf 'client_timeout: 1\n' >"$dir/idle-close.yaml"
    daemon_exec &
    local up= end=$((SECONDS + WAIT_S))
    while [ $SECONDS -lt $end ]; do
        "$cosched" --timeout $WAIT_S status >/dev/null 2>&1 && up=1 && break
        sleep 0.05
    done
    if [ -z "$up" ]; then
        echo "Bail out! coschedd did not come up within $WAIT_S s"; sed 's/^/# /' "$dir/daemon.log"
        return 1
    fi
    if ! "$cosched" --timeout $WAIT_S job register --job "$COSCHED_JOB" --uid "$(id -u)" --role trainer \
        --policy l3 --cores-per-rank 1 >"$dir/register.out" 2>&1; then
        echo "Bail out! cannot register the trainer job"; sed 's/^/# /' "$dir/register.out"
        return 1
    fi
    "$@"
}

case "${1:-}" in
run) shift; run "$@" ;;
exec) shift; daemon_exec "$@" ;;
*) echo "usage: daemon.sh run PROGRAM [ARGS...] | daemon.sh exec [CONFIG]" >&2; exit 2 ;;
esac
