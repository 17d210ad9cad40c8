#!/usr/bin/env bash
# guard-history.sh: redraws guard-history.png (docs/guard.md) from a real guard episode on two
# cores (as root, for the cfs-quota knob): the sensitive trainer of tests/daemon/ beside a busy
# co-tenant, the guard throttling it, an operator pinning it unthrottled for 15 s, the guard again.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd); build=${COSCHED_BUILD_ROOT:-$root/build}
cosched=$build/client/cosched; tmp=$(mktemp -d); sock=$tmp/s
c() { "$cosched" --socket "$sock" "$@"; }
printf 'slowdown_budget: 0.05\n' >"$tmp/coschedd.yaml"
"$build/daemon/coschedd" --foreground --config "$tmp/coschedd.yaml" --socket "$sock" --state-dir "$tmp/state" \
    --topology "$root/tests/topologies/ci-2core-gpu.xml" >>"$tmp/daemon.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
c job register --job train-1 --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job noise-1 --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
c --json run start --job train-1 -- python3 "$root/tests/daemon/sensitive_trainer.py" --pidfile "$tmp/noise.pid" \
    --base 0.05 --sensitivity 0.2 >"$tmp/run-t.json"
sleep 15
c --json run start --job noise-1 -- "$build/noise/cosched-noise" busy --duration 900 >"$tmp/run-n.json"
python3 -c "import json; print(json.load(open('$tmp/run-n.json'))['pid'])" >"$tmp/noise.pid"
sleep 45
c guard set --job noise-1 --share 1 >/dev/null
sleep 15
c guard set --job noise-1 --share auto >/dev/null
sleep 30
c stats --job train-1 --plot "$root/docs/images/guard-history.png"; echo "plot: exit $?"
c guard set --job noise-1 --share 1 >/dev/null
for f in "$tmp"/run-*.json; do c run stop "$(python3 -c "import json; print(json.load(open('$f'))['id'])")" >/dev/null; done
sleep 1
c job release --job noise-1 >/dev/null; c job release --job train-1 >/dev/null
kill "$dpid"; wait "$dpid"
rm -rf "$tmp"
