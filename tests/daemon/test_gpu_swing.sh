#!/usr/bin/env bash
# test_gpu_swing: the guard fed by a GPU whose busy fraction swings as the H200's did at a constant
# speed (the fake NVML replays the series of fakegpu/swing.h, a value a second), at a level that
# falls with the co-tenant's share (busy = 0.6 / (1 + 0.15 x the CPUs its knobs allow a busy
# co-tenant): 15 % at share 1). The guard, judging GPU windows by their mean busy fraction (the
# default progress.gpu_judge), must throttle the co-tenant on that noise: states and log lines,
# never a time (docs/guard.md, "The GPU source, in time"; the time is test_gpu_source's to measure).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/gpu_daemon_lib.sh"
source_is() { c --json job get --job "$1" | py "p=d['progress']; assert p['source'] == '$2', p"; }

set_gpu "gpu 0000:03:00.0 busy 0.6 k 0.15 cotenant $tmp/noise.pid swing 7"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "slowdown_budget: 0.05
progress:
  gpu_retry: 1"
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job n --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
check "the trainer that reports nothing is judged by its GPU" wait_for 30 source_is t gpu
swings() { c --json job get --job t | py "print(d['progress']['gpu_busy'])" >>"$tmp/busy.txt"
    python3 -c "b = [float(x) for x in open('$tmp/busy.txt') if x.strip() not in ('', 'None')]; assert len(set(b)) >= 4 and max(b) - min(b) >= 0.05, b"; }
check "its busy fraction swings at a constant speed (the replayed series)" wait_for 60 swings
# a baseline of solo windows before the co-tenant starts
solo() { c --json stats --job t | py 'assert d["jobs"][0]["steps"] >= 25'; }
check "the trainer alone gives its baseline windows" wait_for 120 solo
c --json run start --job n -- "$noise" busy --duration 900 >"$tmp/run-n.json"
run_pid "$tmp/run-n.json" >"$tmp/noise.pid"
throttled() { c --json job get --job n | py 'assert d["allowed_share"] < 1, d["allowed_share"]'; }
check "the guard throttles the co-tenant on the swinging series" wait_for 240 throttled
check "... judged on GPU windows (the log says so)" grep -qE "guard: job t throttle: co-tenants' share 1.00 -> 0\.[0-9]+ .* [0-9]+ GPU windows\)" "$tmp/daemon.log"
check "... and the kernel holds it there: its CFS quota" wait_for 30 held_by_kernel n "$(cat "$tmp/noise.pid")" 1
echo "# share changes: $(c --json job get --job n | py 'print([(round(x["share"], 2), x["by"]) for x in d.get("share_changes", [])])')"
check "the daemon still answers" c status
stop_daemon
check "and stops cleanly" test $? = 0
printf 'progress:\n  gpu_judge: medians\n' >"$tmp/bad.yaml"
check "progress.gpu_judge other than mean or median is refused, with the line" bash -c \
    "! '$build/daemon/coschedd' --check-config --config '$tmp/bad.yaml' 2>'$tmp/err' && grep -q 'bad.yaml:2:14: progress.gpu_judge' '$tmp/err'"
finish
