#!/usr/bin/env bash
# bench/load: coschedd under 32 and 256 concurrent clients, each sending REQUESTS mixed requests
# (bench/load_mix.c: reads, step reports, and for 32 of them an operator's register/release),
# while 4 runs report a step every 100 ms through their output. Prints per load: requests,
# errors, latency p50/p99/p99.9/max, requests/s, and the daemon's descriptors and RSS before,
# right after and 2 s after: what it holds must not grow with the load. No peer: the figures
# are the record of docs/reliability.md.  Usage: bench/load.sh [REQUESTS_PER_CLIENT (2000)]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bench/load_mix ] || bash packaging/setup.sh --tests
requests=${1:-2000}
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
    set +e
    pkill -f "$tmp/ticker" 2> /dev/null
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2> /dev/null
    wait 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/coschedd.sock
build/daemon/coschedd --foreground --socket "$sock" --state-dir "$tmp/state" \
    --topology tests/topologies/juwels-booster.xml 2> "$tmp/coschedd.log" &
daemon_pid=$!
c() { build/client/cosched --socket "$sock" "$@"; }
for _ in $(seq 100); do c status > /dev/null 2>&1 && break; sleep 0.05; done
# The JUWELS Booster node's 48 cores to place on; the runs are held to this machine's CPUs 0 and 1.
c job register --job load-train --uid 0 --role trainer --gpus 0 --cpus 0 --cores-per-rank 1 > /dev/null
c job register --job load-keeper --uid 0 --role cotenant --policy cores --cpus 1 > /dev/null
printf '#!/bin/sh\nwhile :; do echo '"'"'{"event":"step","t_step":0.1}'"'"'; sleep 0.1; done\n' > "$tmp/ticker"
chmod +x "$tmp/ticker"
for job in load-train load-train load-keeper load-keeper; do c run start --job "$job" -- "$tmp/ticker" > /dev/null; done
fds() { ls /proc/"$daemon_pid"/fd | wc -l; }
rss() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$daemon_pid"/status; }
sleep 1
echo "== coschedd under load: $requests mixed requests per client (machine: $(nproc) cores)"
# 256 twice (LOAD_CLIENTS sets the rounds): what the first leaves must be the allocator's high-water
# mark, not growth
for clients in ${LOAD_CLIENTS:-32 256 256}; do
    fd0=$(fds) rss0=$(rss)
    line=$(build/bench/load_mix "$sock" "$clients" "$requests" load-train load-keeper) || true
    fd1=$(fds) rss1=$(rss)
    sleep 2
    fd2=$(fds) rss2=$(rss)
    echo "$line"
    printf '  descriptors %s -> %s -> %s (2 s later); RSS %s -> %s -> %s MiB\n' "$fd0" "$fd1" "$fd2" "$rss0" "$rss1" "$rss2"
done
steps=$(c --json stats --job load-train | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['steps'])")
echo "steps the trainer job counted meanwhile (its runs' output and the reports): $steps"
c status > /dev/null && echo "the daemon still answers; its log's errors and warnings:"
grep -i -E 'error|warning' "$tmp/coschedd.log" | sed 's/^/  /' || echo "  none"
