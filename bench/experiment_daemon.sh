# shellcheck shell=bash
# experiment_daemon: sourced by the scripts that run `cosched experiment` on this machine (demo.sh,
# experiment_design.sh, experiment_blocks.sh): a private coschedd on a temp socket with the
# experiment's settings, this machine modelled as a one-GPU node (tests/topologies/ci-2core-gpu.xml),
# c() to talk to it, and a cleanup on exit that stops it and every run it started (runs outlive
# the daemon by design; none may outlive the script). Run from the repository root.
cosched=$PWD/build/client/cosched
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
    set +e
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    pkill -f "$tmp/" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
printf 'stats:\n  baseline_steps: 8\n  window_steps: 8\nslowdown_budget: 0.05\n' >"$tmp/coschedd.yaml"
build/daemon/coschedd --foreground --config "$tmp/coschedd.yaml" --socket "$tmp/coschedd.sock" \
    --state-dir "$tmp/state" --topology tests/topologies/ci-2core-gpu.xml 2>"$tmp/coschedd.log" &
daemon_pid=$!
c() { "$cosched" --socket "$tmp/coschedd.sock" "$@"; }
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
