#!/usr/bin/env bash
# bench/plan: whole-process time of `cosched plan` on the largest topology we have (DGX A100:
# 128 cores, 256 PUs, 8 GPUs) against `hwloc-calc` finding one GPU's local cpuset in the same
# file. Goal: the plan costs less than hwloc-calc loading the file twice. Interleaved, medians.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-41}
xml=tests/topologies/dgx-a100.xml
cosched=build/client/cosched
command -v hwloc-calc >/dev/null || { echo "bench/plan: needs hwloc-calc (apt-get install hwloc-nox)" >&2; exit 1; }
[ -x "$cosched" ] || bash packaging/setup.sh

now_us() { echo $(($(date +%s%N) / 1000)); }
time_us() { local t0; t0=$(now_us); "$@" >/dev/null; echo $(($(now_us) - t0)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# Both must work before they are timed.
"$cosched" plan --topology "$xml" --json >/dev/null
hwloc-calc -i "$xml" os=cuda0 >/dev/null

plan_t=() calc_t=()
for ((i = 0; i < runs; i++)); do
    plan_t+=("$(time_us "$cosched" plan --topology "$xml" --json)")
    calc_t+=("$(time_us hwloc-calc -i "$xml" os=cuda0)")
done
plan_med=$(printf '%s\n' "${plan_t[@]}" | median)
calc_med=$(printf '%s\n' "${calc_t[@]}" | median)
echo "topology: $xml (128 cores, 256 PUs, 8 NUMA domains, 8 GPUs); $runs interleaved runs each"
printf 'cosched plan --json (whole plan):     %8.0f us (median)\n' "$plan_med"
printf 'hwloc-calc os=cuda0 (one cpuset):     %8.0f us (median)\n' "$calc_med"
awk -v p="$plan_med" -v c="$calc_med" 'BEGIN {
    printf "ratio plan / hwloc-calc:              %8.2f (goal: < 2.00, i.e. less than loading the file twice)\n", p / c }'
