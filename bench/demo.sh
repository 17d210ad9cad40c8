#!/usr/bin/env bash
# demo: the main job of the README's Quick start. Installs and builds what is missing, shows this
# machine's topology, plans a JUWELS Booster node the two ways the study compared, then runs a
# small experiment through the daemon: training alone, then beside STREAM noise (the slowdown it
# causes), then with the slowdown guard holding the noise back to what the budget allows.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh
cosched=$PWD/build/client/cosched
juwels=tests/topologies/juwels-booster.xml
baseline_seconds=${DEMO_BASELINE_SECONDS:-10}
noise_seconds=${DEMO_NOISE_SECONDS:-15}
guard_seconds=${DEMO_GUARD_SECONDS:-25}

echo; echo "### This machine, as the planner sees it"
"$cosched" topo

echo; echo "### A JUWELS Booster node: 4 A100 on NUMA 3, 1, 7, 5"
"$cosched" topo --topology "$juwels"

echo; echo "### The study's 'exclusive' mapping (training slowed by 1.8 % under memory noise)"
"$cosched" plan --topology "$juwels" --policy exclusive

echo; echo "### The study's 'shared' mapping (training slowed by 75 % on average under the same noise)"
"$cosched" plan --topology "$juwels" --policy shared --format list

echo; echo "### What a job script pastes (first line: trainer srun, second: noise srun)"
"$cosched" plan --topology "$juwels" --format srun

# The experiment: this machine's cores, modelled as a node with one GPU on NUMA 0 and one core
# per L3 (tests/topologies/ci-2core-gpu.xml), so the l3 policy puts the trainer on core 0 and a
# co-tenant on core 1. The daemon runs unprivileged on a temp socket.
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
    set +e
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    pkill -f "$tmp/" 2>/dev/null # runs outlive the daemon by design; none may outlive the demo
    rm -rf "$tmp"
}
trap cleanup EXIT
printf 'stats:\n  baseline_steps: 20\n  window_steps: 20\nslowdown_budget: 0.05\n' >"$tmp/coschedd.yaml"
c() { "$cosched" --socket "$tmp/coschedd.sock" "$@"; }
echo; echo "### Experiment: coschedd on $tmp, trainer on CPU 0, memory noise on CPU 1"
build/daemon/coschedd --foreground --config "$tmp/coschedd.yaml" --socket "$tmp/coschedd.sock" \
    --state-dir "$tmp/state" --topology tests/topologies/ci-2core-gpu.xml 2>"$tmp/coschedd.log" &
daemon_pid=$!
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
c job register --job demo-train --uid "$(id -u)" --role trainer --policy l3 --cores-per-rank 1
c job register --job demo-noise --uid "$(id -u)" --role cotenant --policy l3 --cores 1
c run start --job demo-train -- "$PWD/build/trainer/cosched-train" --model resnet20 --data synthetic:4096 \
    --batch 32 --steps 1000000 --threads 1
echo "training alone for ${baseline_seconds} s ..."
sleep "$baseline_seconds"
# First without the guard (the co-tenant's share pinned at 1), then with it. The noise outlasts
# both phases, so stats sees it running; releasing the job stops it.
c guard set --job demo-noise --share 1 >/dev/null
c run start --job demo-noise -- "$PWD/build/noise/cosched-noise" stream --duration $((noise_seconds + guard_seconds + 60))
echo "training beside STREAM noise, guard held off, for ${noise_seconds} s ..."
sleep "$noise_seconds"
echo
c stats --job demo-train
echo
echo "### The slowdown guard: budget 5 %, the co-tenant's share handed to it"
c guard set --job demo-noise --share auto
echo "training beside the guarded noise for ${guard_seconds} s ..."
sleep "$guard_seconds"
echo
c stats
echo
grep 'guard:' "$tmp/coschedd.log" | sed 's/^[^ ]* coschedd: /  /' | head -n 20
c job release --job demo-noise >/dev/null
c job release --job demo-train >/dev/null
# Releasing stops the jobs' runs (SIGTERM, SIGKILL after 5 s): wait for that before leaving.
for _ in $(seq 100); do
    c --json run list | python3 -c "import json,sys; sys.exit(any(r['state']=='running' for r in json.load(sys.stdin)['runs']))" && break
    sleep 0.1
done
echo
echo "The slowdowns above are this machine's, with their 95 % intervals: two cores behind one memory"
echo "controller (on a VM, whatever the host does besides). Placement cannot separate them, so the"
echo "guard holds the noise to the share the trainer tolerates within its budget (docs/guard.md). On a"
echo "multi-domain node the exclusive plan keeps the noise off the trainer's NUMA domain and L3"
echo "altogether; compare plans with cosched plan."
