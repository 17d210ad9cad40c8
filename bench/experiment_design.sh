#!/usr/bin/env bash
# experiment_design: the blocked design of `cosched experiment` against the run design it
# replaced as the default (the study's: a run per repetition, compared by total time), side by
# side on this machine through one daemon, interleaved: per round the old demo's run-design
# Table II (5 repetitions of 32 steps, guard included) and the blocked Table II in 75 s, each
# with its wall time. Prints per design and round the slowdowns with their 95 % intervals, then
# the medians over rounds of the intervals' half widths and wall times, and their ratio. Then the
# old estimator of the blocked design (Student's t on the pairs' mean log ratio) and the new one
# (Hodges-Lehmann with the Wilcoxon signed-rank interval) side by side on the same blocks (the
# k-th noisy row of runs.csv and the k-th quiet row of its placement are a pair): per estimator
# the median half width over the noisy placements and rounds where both give an interval (the
# t interval needs 2 pairs, the signed-rank one 6), and the block time it needed to
# come within --precision (0.02) on 6 pairs or more; with each placement's block length and the
# switches of the host's speed its lead-in saw.
# Usage: bench/experiment_design.sh [ROUNDS] (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh >/dev/null
rounds=${1:-2}
# shellcheck source=bench/experiment_daemon.sh
. bench/experiment_daemon.sh

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

python3 - "$tmp" "$rounds" <<'PY'
# The estimators of the blocked design on the same pairs; the signed-rank interval as
# client/experiment/experiment_robust.c computes it (exact to 25 pairs, normal above), checked
# against summary.json's own figure.
import csv, json, math, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])

def t975(df):
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
    return table.get(df, 1.96 + 2.4 / df + 2.9 / df**2)  # within 0.002 from 11 on

def t_interval(x):
    n = len(x)
    if n < 2:
        return None
    m = statistics.mean(x)
    h = t975(n - 1) * statistics.stdev(x) / math.sqrt(n)
    return m - h, m + h

def signed_rank_tail(n, t):
    if n > 25:
        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return 0.5 * math.erfc(-((t + 0.5 - mean) / sd) / math.sqrt(2))
    ways = [1] + [0] * (n * (n + 1) // 2)
    for i in range(1, n + 1):
        for s in range(i * (i + 1) // 2, i - 1, -1):
            ways[s] += ways[s - i]
    return sum(ways[: t + 1]) / 2 ** n

def hl_interval(x):
    n = len(x)
    walsh = sorted((x[i] + x[j]) / 2 for i in range(n) for j in range(i, n))
    k = 1
    while k < len(walsh) // 2 and signed_rank_tail(n, k) <= 0.025:
        k += 1
    if signed_rank_tail(n, k - 1) > 0.025:
        return None
    return walsh[k - 1], walsh[len(walsh) - k]

def hl_estimate(x):
    return statistics.median((x[i] + x[j]) / 2 for i in range(len(x)) for j in range(i, len(x)))

estimators = {"t (old)": t_interval, "Hodges-Lehmann (new)": hl_interval}
half = {e: [] for e in estimators}
needed = {e: [] for e in estimators}
print(f"\n{'placement':16} {'round':>5} {'pairs':>5} {'block s':>7} {'switches':>8}  "
      + "  ".join(f"{e:>28}" for e in estimators))
for r in range(1, rounds + 1):
    doc = json.load(open(f"{tmp}/blocks-{r}/summary.json"))
    rows = list(csv.DictReader(open(f"{tmp}/blocks-{r}/runs.csv")))
    for c in doc["configurations"]:
        s = c.get("slowdown")
        if not c["noise"] or c["guard"] or not s:
            continue
        noisy = [float(x["step_median_seconds"]) for x in rows if x["configuration"] == c["name"]]
        quiet = [float(x["step_median_seconds"]) for x in rows if x["configuration"] == s["against"]]
        ratios = [math.log(a / b) for a, b in zip(noisy, quiet)]
        if ratios and abs(math.expm1(hl_estimate(ratios)) - s["value"]) > 1e-3:
            print(f"# {c['name']}: summary.json's {s['value']} is not the pairs' Hodges-Lehmann", file=sys.stderr)
        block_s = c["blocks"]["seconds"]
        parts = []
        both = all(interval(ratios) for interval in estimators.values())
        for name, interval in estimators.items():
            ci = interval(ratios)
            if ci:
                lo, hi = math.expm1(ci[0]), math.expm1(ci[1])
                if both:  # the medians compare the same placements
                    half[name].append((hi - lo) / 2)
                parts.append(f"[{100 * lo:+6.1f}, {100 * hi:+6.1f}] +-{50 * (hi - lo):4.1f}")
            else:
                parts.append(f"{'(no interval)':>28}")
            # the block time until this estimator was first within +-2 points on 6 pairs or more
            reached = next((k for k in range(6, len(ratios) + 1) if (ci := interval(ratios[:k]))
                            and (math.expm1(ci[1]) - math.expm1(ci[0])) / 2 <= 0.02), None)
            needed[name].append(2 * block_s * reached if reached else math.inf)
        switches = c["blocks"]["host_switches"]
        print(f"{c['name']:16} {r:5d} {len(ratios):5d} {block_s:7.2f} {switches:8d}  " + "  ".join(f"{p:>28}" for p in parts))
print()
for name in estimators:
    mh = statistics.median(half[name]) if half[name] else math.inf
    mt = statistics.median(needed[name]) if needed[name] else math.inf
    print(f"{name:22} median half width {100 * mh:.1f} points over the {len(half[name])} placements both "
          "gave an interval; "
          f"median block time to +-2 points {mt:.0f} s" + (" (inf: not reached)" if math.isinf(mt) else ""))
PY
