#!/usr/bin/env bash
# demo: the main job of the README's Quick start. Installs and builds what is missing, shows this
# machine's topology, plans a JUWELS Booster node the two ways the study compared, then runs the
# study's experiment on this machine through the daemon (cosched experiment in its blocked design:
# Table II with the guard, then the intensity sweep), printing the tables and where the plots are.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh
cosched=$PWD/build/client/cosched
juwels=tests/topologies/juwels-booster.xml
table_time=${DEMO_TIME:-180}       # seconds for Table II with the guard
sweep_time=${DEMO_SWEEP_TIME:-90}  # seconds for the sweep

echo; echo "### This machine, as the planner sees it"
"$cosched" topo

echo; echo "### A JUWELS Booster node: 4 A100 on NUMA 3, 1, 7, 5"
"$cosched" topo --topology "$juwels"

echo; echo "### The study's 'exclusive' mapping (training slowed by 1.8 % under memory noise)"
"$cosched" plan --topology "$juwels" --policy exclusive

echo; echo "### The study's 'shared' mapping (training slowed by 75 % on average under the same noise)"
"$cosched" plan --topology "$juwels" --policy shared --format list

echo; echo "### The experiment's placements there (cosched experiment --dry-run), one rank on GPU 0"
"$cosched" experiment --dry-run --guard --topology "$juwels"

echo; echo "### What a job script pastes (first line: trainer srun, second: noise srun)"
"$cosched" plan --topology "$juwels" --format srun

# The experiment: this machine's cores, modelled as a node with one GPU on NUMA 0 and one core
# per L3 (tests/topologies/ci-2core-gpu.xml), so the trainer goes on core 0 and a co-tenant on
# core 1. The daemon runs unprivileged on a temp socket (experiment_daemon.sh); results go to
# build/demo/.
# shellcheck source=bench/experiment_daemon.sh
. bench/experiment_daemon.sh
out=build/demo
rm -rf "$out" && mkdir -p "$out"

echo; echo "### The study's Table II on this machine in ${table_time} s, guard included"
echo "(cosched experiment: one trainer run per placement, STREAM noise in paired blocks of a few steps; the guard's"
echo "run with the noise on throughout, measured once the guard has settled)"
c experiment --time "$table_time" --guard --budget 0.05 --out "$out/experiment" --trace "$out/experiment/trace.json"

echo; echo "### How much memory noise fits within a 5 % budget here: the intensity sweep in ${sweep_time} s"
c experiment --sweep intensity --time "$sweep_time" --budget 0.05 --out "$out/sweep"

echo
echo "Two cores behind one memory controller (on a VM, whatever the host does besides): placement"
echo "cannot separate trainer and noise here, so exclusive and shared are the same CPUs and the"
echo "guard holds the noise to the share the trainer tolerates within its budget (docs/guard.md). On"
echo "a multi-domain node the exclusive plan keeps the noise off the trainer's NUMA domain and L3"
echo "altogether: cosched experiment --dry-run --topology $juwels."
echo "Plots: $out/experiment/runs.png (box plot), $out/sweep/sweep.png (slowdown curve);"
echo "trace of the experiment (Perfetto, chrome://tracing): $out/experiment/trace.json."
