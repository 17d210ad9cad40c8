#!/usr/bin/env bash
# experiment_blocks: the block length the rule chooses from time (the noise's transient and four
# whole steps, experiment_block_size.h) against fixed blocks of --block seconds (1 s: the 40 steps
# of 25 ms the blocked design played before issue 36; 2.6 s: the 20 steps of a 130 ms PyTorch
# script the rule before issue 43 played), side by side on this machine through one daemon,
# interleaved, the order alternating per round. Table II without the guard (or, with --sweep, the
# intensity sweep) in --time seconds each, with cosched-train or --trainer CMD (an unmodified
# PyTorch program; bench/torch_slow.py is one with slow steps). Prints per run the block length,
# pairs and slowdowns with their 95 % intervals (the sweep: its answer), then per arm the medians
# over runs: half width, pairs, and each placement's slowdown. Slowdowns that agree between the
# arms say the shorter blocks lose none of the noise's effect to its transient after a change.
# Usage: bench/experiment_blocks.sh [--rounds N] [--time S] [--block S] [--sweep] [--trainer CMD]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 time=40 block=1.0 sweep=''
trainer=()
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2 && shift 2 ;;
    --time) time=$2 && shift 2 ;;
    --block) block=$2 && shift 2 ;;
    --sweep) sweep="--sweep intensity" && shift ;;
    --trainer) trainer=(--trainer "$2") && shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | cut -c3- && exit 0 ;;
    *) echo "experiment_blocks.sh: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
done
bash packaging/setup.sh >/dev/null
# a --trainer command's steps come from the hook; from a source tree, this one
export COSCHED_AUTOREPORT_DIR=${COSCHED_AUTOREPORT_DIR:-$PWD/libcosched/autoreport}
# shellcheck source=bench/experiment_daemon.sh
. bench/experiment_daemon.sh

for round in $(seq "$rounds"); do
    if [ $((round % 2)) -eq 1 ]; then order="lead-in fixed"; else order="fixed lead-in"; fi
    for arm in $order; do
        echo "round $round: $arm ..." >&2
        args=()
        [ "$arm" = fixed ] && args=(--block "$block")
        # shellcheck disable=SC2086 # $sweep is two words or none
        c experiment $sweep --time "$time" --budget 0.05 "${trainer[@]}" "${args[@]}" --out "$tmp/$arm-$round" \
            >/dev/null 2>"$tmp/$arm-$round.err" || { cat "$tmp/$arm-$round.err" >&2 && exit 1; }
    done
done

python3 - "$tmp" "$rounds" "$block" <<'PY'
import json, statistics, sys
tmp, rounds, block = sys.argv[1], int(sys.argv[2]), sys.argv[3]
arms = {"lead-in": "blocks from time", "fixed": f"fixed {block} s blocks"}
half, pairs, value, answers = ({a: {} for a in arms} for _ in range(4))
for arm in arms:
    for r in range(1, rounds + 1):
        doc = json.load(open(f"{tmp}/{arm}-{r}/summary.json"))
        parts = []
        for c in doc["configurations"]:
            s = c.get("slowdown")
            if not s or c["guard"]:
                continue
            parts.append(f"{c['name']} {100 * s['value']:+.1f} %" + (
                f" [{100 * s['ci95'][0]:+.1f}, {100 * s['ci95'][1]:+.1f}]" if s["ci95"] else " (no interval)")
                + f" {s['pairs']} pairs of {c['blocks']['seconds']:.2f} s")
            if s["ci95"]:
                half[arm].setdefault(c["name"], []).append(50 * (s["ci95"][1] - s["ci95"][0]))
            pairs[arm].setdefault(c["name"], []).append(s["pairs"])
            value[arm].setdefault(c["name"], []).append(100 * s["value"])
        sweep = doc.get("sweep")
        if sweep:
            a = sweep["answer"]
            answers[arm].setdefault("sweep", []).append(a["kind"])
            parts = [f"sweep: {json.dumps(a)}"]
        print(f"{arm:8} round {r}: " + "; ".join(parts))
print()
for arm, name in arms.items():
    for place in sorted(value[arm]):
        h = half[arm].get(place, [])
        print(f"{name:26} {place:16} median slowdown {statistics.median(value[arm][place]):+5.1f} %, "
              f"half width {statistics.median(h) if h else float('inf'):4.1f} points, "
              f"{statistics.median(pairs[arm][place]):.0f} pairs (medians over {len(value[arm][place])} runs)")
    if "sweep" in answers[arm]:
        kinds = answers[arm]["sweep"]
        print(f"{name:26} sweep answers: " + ", ".join(f"{k} {kinds.count(k)}" for k in sorted(set(kinds))))
PY
