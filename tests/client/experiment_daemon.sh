# experiment_daemon.sh: what the cosched experiment tests add to tests/lib/common.sh (sourced
# after it): their daemon, the cleanup that kills every run it started (only this test's: other
# tests' noise may be running beside it), and checks that every job was released.
# shellcheck shell=bash disable=SC2034,SC2154 # tmp, topologies, daemon_env: common.sh's

# start_experiment_daemon [GUARD_ENABLED]: a daemon on the two cores modelled as a one-GPU node.
# Runs get the sanitizer settings the daemon passes on (runs.keep_environment), and Open MPI leaks
# in MPI_Init what LeakSanitizer cannot attribute (tests/trainer/meson.build): no leak check for
# this daemon and its runs. The daemon's own leaks are checked by tests/daemon.
start_experiment_daemon() {
    write_config "stats:
  baseline_steps: 5
  window_steps: 5
guard:
  enabled: ${1:-true}"
    daemon_env=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
    start_daemon --topology "$topologies/ci-2core-gpu.xml"
}

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
# The daemon writes its state as it stops: stopped first (its jobs released), then its runs killed.
stop_then_kill_runs() {
    release_and_stop_daemon
    kill_runs
}
at_exit stop_then_kill_runs

jq_ok() { jq -e "$1" "$2" >/dev/null; }
nothing_left() { # no job registered, no run running
    c --json job list | jq -e '.jobs | length == 0' >/dev/null &&
        c --json run list | jq -e '[.runs[] | select(.state == "running")] | length == 0' >/dev/null
}
wait_nothing_left() { wait_for 60 nothing_left; }
