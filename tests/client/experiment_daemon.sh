# experiment_daemon.sh: what the cosched experiment tests share (sourced after tap.sh, with root
# and build set): a temp dir and socket, the cleanup that stops the daemon and every run it
# started (runs outlive the daemon by design), `c` for the CLI on that socket, and checks that
# every job was released.
cosched=$build/client/cosched
tmp=$(mktemp -d)
sock=$tmp/coschedd.sock
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    pkill -9 -f "$build/(noise|trainer)/" 2>/dev/null # runs outlive the daemon by design
    rm -rf "$tmp"
}
trap cleanup EXIT
c() { "$cosched" --socket "$sock" "$@"; }
jq_ok() { jq -e "$1" "$2" >/dev/null; }
nothing_left() { # no job registered, no run running
    c --json job list | jq -e '.jobs | length == 0' >/dev/null &&
        c --json run list | jq -e '[.runs[] | select(.state == "running")] | length == 0' >/dev/null
}
wait_nothing_left() { for _ in $(seq 100); do nothing_left && return 0; sleep 0.1; done; return 1; }
