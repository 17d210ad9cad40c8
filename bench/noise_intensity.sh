#!/bin/bash
# bench/noise_intensity.sh: the CPU time busy noise gets and asks for at each --intensity, on this
# machine as it is. A figure, never a test: what the duty cycle buys depends on what else runs
# (tests/noise/test_clock.c checks the duty cycle itself, exactly, on a fake clock).
#
# Usage: bench/noise_intensity.sh [BUILD_DIR]   (default build). Knobs (environment):
#   ROUNDS=3        interleaved rounds; every figure is the median over them
#   SECONDS_EACH=2  length of each run
#   PERIOD=0.1      --period of the duty cycle
# Per intensity: CPU seconds the process got (cpu_seconds), on a CPU (run_seconds) and waiting
# for one (runqueue_seconds, from /proc/thread-self/schedstat); "asked" is run + runqueue, the
# time the thread wanted a CPU. On an idle machine both ratios to intensity 1.0 sit at the
# intensity; under load "got" drifts up (a thread waking from its idle part is favoured) and
# "asked" drifts up too (each wake-up waits longer for a CPU).
set -u
BUILD=${1:-build}
NOISE=$BUILD/noise/cosched-noise
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-2}
PERIOD=${PERIOD:-0.1}
INTENSITIES="1.0 0.5 0.2"

die() { echo "bench/noise_intensity.sh: $*" >&2; exit 1; }
[ -x "$NOISE" ] || die "$NOISE not found: meson setup $BUILD && meson compile -C $BUILD"
command -v jq > /dev/null || die "jq is missing: apt-get install jq"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
med() { [ -s "$T/$1" ] && median < "$T/$1" || echo nan; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

echo "# cosched-noise --intensity bench: $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# busy, 1 thread, ${SECONDS_EACH} s per run, period ${PERIOD} s, $ROUNDS interleaved rounds, medians"
for ((r = 0; r < ROUNDS; r++)); do
    # Interleaved, so that a burst of load from elsewhere hits every intensity alike.
    for i in $INTENSITIES; do
        "$NOISE" busy --threads 1 --duration "$SECONDS_EACH" --intensity "$i" --period "$PERIOD" --report-every 0 \
            > "$T/out.json" || die "cosched-noise busy --intensity $i failed"
        jq -r 'select(.event=="phase") | "\(.cpu_seconds) \(.run_seconds) \(.runqueue_seconds)"' "$T/out.json" |
            while read -r cpu run wait; do
                echo "$cpu" >> "$T/got_$i"
                awk -v a="$run" -v b="$wait" 'BEGIN { print a + b }' >> "$T/asked_$i"
            done
    done
done

printf '%-10s %10s %10s %12s %12s\n' intensity got_s asked_s got/full asked/full
full_got=$(med got_1.0) full_asked=$(med asked_1.0)
for i in $INTENSITIES; do
    got=$(med "got_$i") asked=$(med "asked_$i")
    printf '%-10s %10.3f %10.3f %12s %12s\n' "$i" "$got" "$asked" "$(ratio "$got" "$full_got")" "$(ratio "$asked" "$full_asked")"
done
