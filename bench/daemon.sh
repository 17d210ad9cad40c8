#!/usr/bin/env bash
# bench/daemon: coschedd's control socket — `stats` latency p50/p99 from 1 and 32 concurrent
# clients and requests/s (bench/daemon_load), the daemon's CPU while idle with 4 runs reporting
# every 100 ms, its RSS; and the whole-command round trip of `cosched stats` beside `chronyc
# tracking` against a local chronyd, the familiar peer of a control socket. Interleaved, medians.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bench/daemon_load ] || bash packaging/setup.sh --tests
command -v chronyd >/dev/null || { echo "bench/daemon: needs chrony (apt-get install chrony)" >&2; exit 1; }
seconds=${SECONDS_PER_RUN:-3}
idle_seconds=${IDLE_SECONDS:-30}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
daemon_pid= chrony_pid=
cleanup() {
    set +e # runs outlive the daemon by design: stop them first, then the daemons
    pkill -f "$tmp/ticker" 2>/dev/null
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
    [ -n "$chrony_pid" ] && kill "$chrony_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

sock=$tmp/coschedd.sock
build/daemon/coschedd --foreground --socket "$sock" --state-dir "$tmp/state" \
    --topology tests/topologies/ci-2core-gpu.xml 2>"$tmp/coschedd.log" &
daemon_pid=$!
c() { build/client/cosched --socket "$sock" "$@"; }
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
# A realistic state to answer about: a trainer and a co-tenant job.
c job register --job bench-train --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job bench-noise --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null

echo "== request latency and throughput (stats, $rounds rounds of ${seconds} s, medians)"
for clients in 1 32; do
    p50=() p99=() rps=()
    for ((r = 0; r < rounds; r++)); do
        line=$(build/bench/daemon_load "$sock" stats "$clients" "$seconds")
        p50+=("$(echo "$line" | field p50_us)") p99+=("$(echo "$line" | field p99_us)") rps+=("$(echo "$line" | field req_per_s)")
    done
    printf '%2d client(s): p50 %7.1f us   p99 %7.1f us   %8.0f requests/s\n' "$clients" \
        "$(printf '%s\n' "${p50[@]}" | median)" "$(printf '%s\n' "${p99[@]}" | median)" "$(printf '%s\n' "${rps[@]}" | median)"
done

echo "== whole command round trip: cosched stats vs chronyc tracking (local chronyd), interleaved"
mkdir -p "$tmp/chrony"; chmod 700 "$tmp/chrony" # chronyd refuses a socket directory others can read
cat >"$tmp/chrony/chrony.conf" <<CONF
driftfile $tmp/chrony/drift
pidfile $tmp/chrony/chronyd.pid
bindcmdaddress $tmp/chrony/chronyd.sock
cmdport 0
port 0
CONF
# -x: do not touch the system clock; -d: foreground. chronyc reaches it through the Unix socket.
chronyd -x -d -u root -f "$tmp/chrony/chrony.conf" >"$tmp/chrony/log" 2>&1 &
chrony_pid=$!
sleep 1
now_us() { echo $(($(date +%s%N) / 1000)); }
ours=() theirs=()
for ((i = 0; i < 41; i++)); do
    t0=$(now_us); c stats >/dev/null; ours+=($(($(now_us) - t0)))
    t0=$(now_us); chronyc -h "$tmp/chrony/chronyd.sock" tracking >/dev/null 2>&1 || true; theirs+=($(($(now_us) - t0)))
done
chronyc -h "$tmp/chrony/chronyd.sock" tracking >/dev/null 2>&1 && chrony_ok=yes || chrony_ok="no (chronyc failed: timing is of a failed request)"
a=$(printf '%s\n' "${ours[@]}" | median) b=$(printf '%s\n' "${theirs[@]}" | median)
printf 'cosched stats:     %8.0f us (median of 41)\nchronyc tracking:  %8.0f us (median of 41; answered: %s)\nratio:             %8.2f\n' \
    "$a" "$b" "$chrony_ok" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')"

echo "== idle cost: 4 runs reporting a step every 100 ms for ${idle_seconds} s"
cat >"$tmp/ticker" <<'SH'
#!/bin/sh
while :; do echo '{"event":"step","t_step":0.1}'; sleep 0.1; done
SH
chmod +x "$tmp/ticker"
for _ in 1 2 3 4; do c run start --job bench-train -- "$tmp/ticker" >/dev/null; done
# CPU time in nanoseconds from schedstat (all threads), finer than the 10 ms ticks of /proc/PID/stat.
cpu_ns() { cat /proc/"$daemon_pid"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }
sleep 1
t0=$(cpu_ns)
sleep "$idle_seconds"
t1=$(cpu_ns)
awk -v d=$((t1 - t0)) -v s="$idle_seconds" 'BEGIN {
    cpu = d / 1e9; printf "daemon CPU: %.4f s in %d s = %.1f s per hour = %.3f %% of a core (goal < 0.1 %%)\n", cpu, s, cpu * 3600 / s, 100 * cpu / s }'
steps=$(c --json stats --job bench-train | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['steps'])")
echo "steps the daemon read from the 4 runs: $steps"
grep VmRSS "/proc/$daemon_pid/status" | awk '{printf "daemon RSS: %.1f MiB (goal < 10 MiB)\n", $2 / 1024}'
echo "(2-core machine shared with other work: figures are noisy; goals: p99 < 200 us at 1 client, >= 20000 requests/s)"
