# experiment_daemon.sh: what the cosched experiment tests share (sourced after tap.sh, with root
# and build set): a temp dir and socket, the cleanup that stops the daemon and every run it
# started (only this test's: other tests' noise may be running beside it), `c` for the CLI on that
# socket, and checks that every job was released.
cosched=$build/client/cosched
tmp=$(mktemp -d)
sock=$tmp/coschedd.sock
daemon_pid=
# The processes of this test's runs, which outlive the daemon by design: each leads a process group
# of its own (the daemon's setsid), named in the daemon's state by its pid and its start time.
kill_runs() {
    local pid ticks
    jq -r '.runs[]? | select(.state == "running") | "\(.pid) \(.start_ticks)"' "$tmp"/state*/state.json 2>/dev/null |
        while read -r pid ticks; do
            # that very process, not a later one given its pid: field 22 of stat, after "pid (comm)"
            [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f20)" = "$ticks" ] || continue
            kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null
        done
}
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    kill_runs
    rm -rf "$tmp"
}
trap cleanup EXIT
c() { "$cosched" --socket "$sock" "$@"; }
jq_ok() { jq -e "$1" "$2" >/dev/null; }
nothing_left() { # no job registered, no run running
    c --json job list | jq -e '.jobs | length == 0' >/dev/null &&
        c --json run list | jq -e '[.runs[] | select(.state == "running")] | length == 0' >/dev/null
}
wait_nothing_left() { wait_for 60 nothing_left; }
