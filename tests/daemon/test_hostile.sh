#!/usr/bin/env bash
# test_hostile: coschedd against clients that misbehave on purpose (tests/daemon/hostile.py):
# one byte at a time, a 2^31 frame length, replies never read, connections up to the daemon's
# descriptor limit, a non-operator trying every change, control characters and 1 MiB values;
# one user's flood of connections, its 100 clients at once and its requests over the rate, on a
# daemon with small limits per user; and a symlink at the socket path, a second daemon on the
# socket or on the state directory, a topology file that crashes hwloc.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
chmod 755 "$tmp" # the stranger case connects as nobody
state=$tmp/state
ci_node=$topologies/ci-2core-gpu.xml
# client_timeout 60: no case waits on it (test_daemon.sh times clients out), and a loaded machine
# never drops a slow but well-behaved client of these cases
write_config 'client_timeout: 60'

# The daemon gets 64 descriptors, so that a test reaches the limit with few connections (started
# here, not by start_daemon: prlimit goes before it).
prlimit --nofile=64:64 "$coschedd" --foreground --socket "$sock" --state-dir "$state" --config "$tmp/coschedd.yaml" \
    --topology "$ci_node" >> "$tmp/daemon.log" 2>&1 &
daemon_pid=$!
wait_for 60 daemon_up_or_dead # as soon as it answers (or dies); an ASan daemon on a loaded machine may take long
check "the daemon answers" c status

c job register --job victim --uid 0 --role trainer --policy cores > /dev/null
c job register --job victim-cotenant --uid 0 --role cotenant --policy cores --cores 1 > /dev/null
HOSTILE_OUT=$tmp/odd.out tap_from python3 "$here/hostile.py" "$sock" "$daemon_pid" bytes huge unread control big
if command -v setpriv > /dev/null; then
    # the system's python3: nobody cannot reach a python in root's home
    tap_from setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$here/hostile.py" "$sock" "$daemon_pid" strangers
else
    skip "a stranger's changes are refused" "setpriv not installed (util-linux)"
fi
tap_from python3 "$here/hostile.py" "$sock" "$daemon_pid" fds
check "running out of descriptors was logged" grep -q 'cannot accept clients' "$tmp/daemon.log"
check "the registry kept both jobs through it all" bash -c \
    "'$cosched' --socket '$sock' --json job list | python3 -c 'import json,sys; j=json.load(sys.stdin); assert sorted(x[\"job\"] for x in j[\"jobs\"])==[\"victim\",\"victim-cotenant\"], j'"

# The limits per user, on a daemon of their own with the shell's descriptors: small limits, so that
# the flood's connections (1200) go past them without going past the descriptors.
if [ "$(id -u)" -eq 0 ]; then
    printf 'client_timeout: 600\nlimits:\n  connections_per_user: 16\n  waiting_per_user: 184\n  requests_per_second_per_user: 50\n' \
        > "$tmp/flood.yaml"
    "$coschedd" --foreground --socket "$tmp/flood.sock" --state-dir "$tmp/state-flood" --config "$tmp/flood.yaml" \
        --topology "$ci_node" >> "$tmp/flood.log" 2>&1 &
    flood_pid=$!
    at_exit 'kill -TERM $flood_pid 2>/dev/null'
    wait_for 60 "$cosched" --socket "$tmp/flood.sock" status
    HOSTILE_COSCHED=$cosched tap_from python3 "$here/hostile.py" "$tmp/flood.sock" "$flood_pid" flood waiting rate
    kill -TERM "$flood_pid"
    wait "$flood_pid"
    rc=$?
    check "the daemon of the limits stops cleanly (exit $rc)" test $rc -eq 0
    check "its first refusal was logged" grep -q 'refused a connection of uid 65534' "$tmp/flood.log"
else
    skip "one user's flood, its 100 clients and its rate" "the cases switch to uid 65534: run as root"
fi

# A symlink planted at the socket path: a daemon refuses it and leaves its target alone.
echo precious > "$tmp/target"
ln -s "$tmp/target" "$tmp/link.sock"
"$coschedd" --foreground --socket "$tmp/link.sock" --state-dir "$tmp/state2" --config "$tmp/coschedd.yaml" \
    --topology "$ci_node" > "$tmp/second.log" 2>&1
rc=$?
check "a daemon refuses a symlink at its socket path (exit $rc)" bash -c \
    "test $rc -ne 0 && grep -q 'is not a socket' '$tmp/second.log' && test \"\$(cat '$tmp/target')\" = precious && test -L '$tmp/link.sock'"

# A second daemon on the same socket, then on the same state directory: refused, the first serves on.
"$coschedd" --foreground --socket "$sock" --state-dir "$tmp/state3" --config "$tmp/coschedd.yaml" \
    --topology "$ci_node" > "$tmp/second.log" 2>&1
rc=$?
check "a second daemon on the same socket is refused (exit $rc)" bash -c \
    "test $rc -ne 0 && grep -q 'already listening' '$tmp/second.log'"
"$coschedd" --foreground --socket "$tmp/other.sock" --state-dir "$state" --config "$tmp/coschedd.yaml" \
    --topology "$ci_node" > "$tmp/second.log" 2>&1
rc=$?
check "a second daemon on the same state directory is refused, naming the first (exit $rc)" bash -c \
    "test $rc -ne 0 && grep -q 'another coschedd (pid $daemon_pid) uses the state directory' '$tmp/second.log'"
check "... and leaves no socket of its own" test ! -e "$tmp/other.sock"
check "the first daemon still serves, its jobs intact" bash -c "'$cosched' --socket '$sock' job get --job victim > /dev/null"
check "its state file is intact" python3 -c "import json; d=json.load(open('$state/state.json')); assert len(d['jobs']) == 2"

# A topology file hwloc 2.9 dies on (a root without its complete nodeset, found by tests/fuzz):
# the daemon refuses it, naming the file, instead of crashing.
"$coschedd" --foreground --socket "$tmp/other.sock" --state-dir "$tmp/state4" --config "$tmp/coschedd.yaml" \
    --topology "$root/tests/fuzz/corpus/topology/hwloc-crash-no-complete-nodeset.xml" > "$tmp/second.log" 2>&1
rc=$?
check "a daemon refuses a topology file hwloc crashes on, naming it (exit $rc)" bash -c \
    "test $rc -eq 1 && grep -q 'hwloc-crash-no-complete-nodeset.xml: hwloc crashes reading this file' '$tmp/second.log'"

stop_daemon
rc=$?
check "the daemon stops cleanly after all that (exit $rc)" test $rc -eq 0
if [ "$tap_failed" -gt 0 ]; then sed 's/^/# daemon: /' "$tmp/daemon.log" | tail -n 30; fi
finish
