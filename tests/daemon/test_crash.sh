#!/usr/bin/env bash
# test_crash: kill -9 coschedd at random points of a busy workload (every request saves its
# state, and a preloaded shim makes each fsync 100 ms slower; odd rounds kill it while the shim
# holds a save between its temporary file and the rename, even rounds at a random time), ROUNDS
# times (COSCHED_CRASH_ROUNDS, default 5; the long version in docs/reliability.md runs 100).
# After each kill: state.json is whole JSON; after each restart: every acknowledged job is there
# and no released one is, the two long runs that outlived the daemon are adopted again (same pid,
# listed once), no unfinished save is left. The random kill times vary the points hit; a correct
# daemon passes at any of them.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
rounds=${COSCHED_CRASH_ROUNDS:-5}
state=$tmp/state
worker_pid=
# end_workload: the worker and the two long runs gone (they are in $tmp/runs, not in run*.json);
# with KEEP_TMP set, a copy of $tmp kept.
end_workload() {
    [ -n "$worker_pid" ] && kill -9 "$worker_pid" 2> /dev/null
    [ -f "$tmp/runs" ] && while read -r _ pid; do kill -9 "$pid" 2> /dev/null; done < "$tmp/runs"
    [ -n "${KEEP_TMP:-}" ] && cp -a "$tmp" "$tmp.kept" 2> /dev/null && echo "# kept $tmp.kept"
}
at_exit end_workload
# fsync made slow (slow_fsync.c), so that kills land mid-save too, not only between saves; and
# a save held mid-way on request ($hold), so that some kills land there for certain
hold=$tmp/hold
[ -f "${COSCHED_SLOW_FSYNC_SHIM:-}" ] && daemon_env=(LD_PRELOAD="$COSCHED_SLOW_FSYNC_SHIM" SLOW_FSYNC_MS=100
    SLOW_FSYNC_HOLD="$hold" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
start_crash_daemon() { start_daemon --topology "$topologies/ci-2core-gpu.xml"; }

start_crash_daemon
check "the daemon starts" kill -0 "$daemon_pid"
# runs bind for real: this machine's 2 cores are one for the runs, one for the workload's jobs
c job register --job keeper --uid 0 --role cotenant --policy cores --cores 1 > /dev/null
for _ in 1 2; do
    c --json run start --job keeper -- sleep 600 > "$tmp/run.json"
    json "$tmp/run.json" 'print(d["id"], d["pid"])' >> "$tmp/runs"
done
check "two long runs started" test "$(wc -l < "$tmp/runs")" -eq 2
python3 "$here/crash.py" work "$sock" "$tmp/journal" 2> "$tmp/worker.err" &
worker_pid=$!
check "the workload is under way (a registration acknowledged)" wait_for 60 grep -q '^reg ' "$tmp/journal"
acknowledged() { grep -cE '^(reg|rel) ' "$tmp/journal"; }
more_acknowledged_than() { [ "$(acknowledged)" -gt "$1" ]; }

survived=0 whole=0 midsave=0
for round in $(seq "$rounds"); do
    if [ $((round % 2)) -eq 1 ] && [ ${#daemon_env[@]} -gt 0 ]; then
        # odd rounds: once this daemon has acknowledged a change, in the middle of the next
        # save, its temporary file written and held in its fsync
        acked=$(acknowledged)
        wait_for 60 more_acknowledged_than "$acked"
        touch "$hold"
        wait_for 60 test -e "$hold.held"
    else
        sleep "0.$((RANDOM % 4 + 1))$((RANDOM % 10))" # even rounds: wherever the daemon is
    fi
    kill -9 "$daemon_pid"
    wait "$daemon_pid" 2> /dev/null
    kill -STOP "$worker_pid" # its view of what was acknowledged holds still while we look
    python3 -c "import json; json.load(open('$state/state.json'))" 2> /dev/null && whole=$((whole + 1))
    [ -e "$hold.held" ] && ls "$state"/.state.json.* > /dev/null 2>&1 && midsave=$((midsave + 1))
    rm -f "$hold" "$hold.held"
    if start_crash_daemon && python3 "$here/crash.py" check "$sock" "$tmp/journal" "$tmp/runs" > "$tmp/check.out" 2>&1 &&
        ! ls "$state"/.state.json.* > /dev/null 2>&1; then
        survived=$((survived + 1))
    else
        echo "# round $round:"; sed 's/^/#   /' "$tmp/check.out"
    fi
    kill -CONT "$worker_pid"
done
kill -9 "$worker_pid"; wait "$worker_pid" 2> /dev/null; worker_pid=
echo "# $(tail -n 1 "$tmp/check.out")"
check "state.json was whole JSON after each of $rounds kills ($whole)" test "$whole" -eq "$rounds"
check "after each restart nothing acknowledged was lost and the runs were adopted ($survived of $rounds)" \
    test "$survived" -eq "$rounds"
check "the jobs worked on meanwhile: registrations were acknowledged" test "$(grep -c '^reg ' "$tmp/journal")" -gt 0
if [ ${#daemon_env[@]} -gt 0 ]; then
    odd=$(((rounds + 1) / 2))
    check "each odd round's kill landed mid-save, leaving its temporary file ($midsave of $odd)" \
        test "$midsave" -eq "$odd"
fi
stop_daemon; rc=$?
check "the daemon stops cleanly at the end (exit $rc)" test $rc -eq 0
if [ "$tap_failed" -gt 0 ]; then tail -n 30 "$tmp/daemon.log" | sed 's/^/# daemon: /'; fi
finish
