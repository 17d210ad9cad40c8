#!/usr/bin/env bash
# daemon: the real coschedd for the libcosched tests — a temp socket and state dir, client_timeout
# 1 s so that idle connections are closed under the tests, one trainer job registered.
#
#   daemon.sh run PROGRAM [ARGS...]  start the daemon, register the job, run PROGRAM with
#                                    COSCHED_SOCKET, COSCHED_JOB, COSCHED_TEST_DIR and
#                                    COSCHED_TEST_DAEMON (this script) set; exit with its status
#   daemon.sh exec                   become coschedd on COSCHED_TEST_DIR's socket and state: a
#                                    test restarts the daemon as its own child this way, so that
#                                    it can kill and reap it
# The current daemon's pid is in $COSCHED_TEST_DIR/daemon.pid.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${COSCHED_BUILD_ROOT:?}
root=${COSCHED_SOURCE_ROOT:?}
coschedd=$build/daemon/coschedd
cosched=$build/client/cosched

daemon_exec() {
    local dir=${COSCHED_TEST_DIR:?}
    echo "$BASHPID" >"$dir/daemon.pid" # the subshell that execs coschedd below
    exec "$coschedd" --foreground --socket "$dir/coschedd.sock" --state-dir "$dir/state" \
        --config "$dir/coschedd.yaml" --topology "$root/tests/topologies/ci-2core-gpu.xml" \
        </dev/null >>"$dir/daemon.log" 2>&1
}

stop_current() {
    local pid
    pid=$(cat "$dir/daemon.pid" 2>/dev/null) || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait
}

run() {

    dir=$(mktemp -d) # global: the EXIT trap needs it after run returns
    export COSCHED_TEST_DIR=$dir COSCHED_TEST_DAEMON=$here/daemon.sh
    export COSCHED_SOCKET=$dir/coschedd.sock COSCHED_JOB=libtest
    # The test may have started a later daemon; whichever is current goes, and nothing else: with
    # SIGTERM, so that it removes its guard's cgroup subtree (a killed one leaves it), SIGKILL
    # after 10 s.
    trap 'stop_current; rm -rf "$dir"' EXIT
    printf 'client_timeout: 1\n' >"$dir/coschedd.yaml"
    daemon_exec &
    local up=
    for _ in $(seq 200); do
        "$cosched" status >/dev/null 2>&1 && up=1 && break
        sleep 0.05
    done
    if [ -z "$up" ]; then
        echo "Bail out! coschedd did not come up"; sed 's/^/# /' "$dir/daemon.log"
        return 1
    fi
    if ! "$cosched" job register --job "$COSCHED_JOB" --uid "$(id -u)" --role trainer --policy l3 \
        --cores-per-rank 1 >"$dir/register.out" 2>&1; then
        echo "Bail out! cannot register the trainer job"; sed 's/^/# /' "$dir/register.out"
        return 1
    fi
    "$@"
}

case "${1:-}" in
run) shift; run "$@" ;;
exec) daemon_exec ;;
*) echo "usage: daemon.sh run PROGRAM [ARGS...] | daemon.sh exec" >&2; exit 2 ;;
esac
