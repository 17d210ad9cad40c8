#!/usr/bin/env bash
# experiment_design: the blocked design of `cosched experiment` against the run design it
# replaced as the default (the study's: a run per repetition, compared by total time), side by
# side on this machine through one daemon, interleaved: per round the old demo's run-design
# Table II (5 repetitions of 32 steps, guard included) and the blocked Table II in 75 s, each
# with its wall time. Prints per design and round the slowdowns with their 95 % intervals, then
# the medians over rounds of the intervals' half widths and wall times, and their ratio.
# Usage: bench/experiment_design.sh [ROUNDS] (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh >/dev/null
rounds=${1:-2}
cosched=$PWD/build/client/cosched
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
    set +e
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    pkill -f "$tmp/" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
printf 'stats:\n  baseline_steps: 8\n  window_steps: 8\nslowdown_budget: 0.05\n' >"$tmp/coschedd.yaml"
build/daemon/coschedd --foreground --config "$tmp/coschedd.yaml" --socket "$tmp/coschedd.sock" \
    --state-dir "$tmp/state" --topology tests/topologies/ci-2core-gpu.xml 2>"$tmp/coschedd.log" &
daemon_pid=$!
c() { "$cosched" --socket "$tmp/coschedd.sock" "$@"; }
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done

run() { # DESIGN ROUND: one Table II with the guard; its summary.json and wall time
    local out=$tmp/$1-$2 start end
    start=$(date +%s.%N)
    if [ "$1" = runs ]; then
        c experiment --design runs --reps 5 --steps 32 --guard --budget 0.05 --out "$out" >/dev/null 2>"$out.err"
    else
        c experiment --time 75 --guard --budget 0.05 --out "$out" >/dev/null 2>"$out.err"
    fi
    end=$(date +%s.%N)
    python3 -c "print($end - $start)" >"$out.seconds"
}
for round in $(seq "$rounds"); do
    # alternate which goes first, so that a trend in the machine favours neither
    if [ $((round % 2)) -eq 1 ]; then order="runs blocks"; else order="blocks runs"; fi
    for design in $order; do
        echo "round $round: $design ..." >&2
        run "$design" "$round"
    done
done

python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
half = {"runs": [], "blocks": []}
secs = {"runs": [], "blocks": []}
print(f"{'design':8} {'round':>5} {'wall s':>7}  slowdown [95 % interval] per noisy configuration")
for design in ("runs", "blocks"):
    for r in range(1, rounds + 1):
        doc = json.load(open(f"{tmp}/{design}-{r}/summary.json"))
        wall = float(open(f"{tmp}/{design}-{r}.seconds").read())
        secs[design].append(wall)
        parts = []
        for c in doc["configurations"]:
            s = c.get("slowdown")
            if not s:
                continue
            if s["ci95"]:
                lo, hi = s["ci95"]
                half[design].append((hi - lo) / 2)
                parts.append(f"{c['name']} {100 * s['value']:+.1f} % [{100 * lo:+.1f}, {100 * hi:+.1f}]")
            else:
                parts.append(f"{c['name']} {100 * s['value']:+.1f} % (no interval)")
            if isinstance(c.get("guard"), dict):
                g = c["guard"]
                kept = g["noise_kept"]
                parts[-1] += f" kept {100 * kept:.0f} %" if kept is not None else ""
        print(f"{design:8} {r:5d} {wall:7.1f}  " + "; ".join(parts))
mh = {d: statistics.median(v) for d, v in half.items() if v}
ms = {d: statistics.median(v) for d, v in secs.items()}
print()
for d in ("runs", "blocks"):
    print(f"{d:8} median half width {100 * mh[d]:.1f} points over {len(half[d])} intervals, "
          f"median wall time {ms[d]:.0f} s")
print(f"blocked / runs: half width x{mh['blocks'] / mh['runs']:.2f}, wall time x{ms['blocks'] / ms['runs']:.2f}")
PY
