#!/usr/bin/env bash
# bench/report: step reports per second from one training process to coschedd — through
# libcosched (bench/report_load, one connection), through the Python module (one Reporter),
# and the peer, one `cosched report` process per step — all against the same real daemon.
# Interleaved rounds, medians; also the daemon's CPU per report (schedstat, all threads).
#
# Usage: bench/report.sh [BUILD_DIR]   (default build). Knobs (environment):
#   ROUNDS=5             interleaved rounds; every figure is the median over them
#   SECONDS_PER_RUN=3    length of each run, whole seconds
#   PYTHON=python3       the interpreter for the module (standard library only)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${ROUNDS:-5}
seconds=${SECONDS_PER_RUN:-3}
PYTHON=${PYTHON:-python3}
for f in daemon/coschedd client/cosched bench/report_load; do
    [ -x "$BUILD/$f" ] || { echo "bench/report: $BUILD/$f not found: meson compile -C $BUILD" >&2; exit 1; }
done
tmp=$(mktemp -d)
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
add() { echo "$2" >>"$tmp/$1"; } # add SERIES VALUE
med() { median <"$tmp/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.1f", a / b }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

export COSCHED_SOCKET=$tmp/coschedd.sock COSCHED_JOB=bench-report
"$BUILD/daemon/coschedd" --foreground --socket "$COSCHED_SOCKET" --state-dir "$tmp/state" \
    --topology tests/topologies/ci-2core-gpu.xml 2>"$tmp/coschedd.log" &
daemon_pid=$!
c() { "$BUILD/client/cosched" "$@"; }
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
c job register --job "$COSCHED_JOB" --uid "$(id -u)" --role trainer --policy l3 --cores-per-rank 1 >/dev/null

# The daemon's CPU time in nanoseconds, finer than the 10 ms ticks of /proc/PID/stat.
daemon_cpu_ns() { cat /proc/"$daemon_pid"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }
steps() { c --json stats --job "$COSCHED_JOB" | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['steps'])"; }

# measure SERIES COMMAND...: the command prints reports= and reports_per_s=; the daemon's
# count must grow by as many reports (plus the untimed first one), or the figure is void.
measure() {
    local series=$1; shift
    local s0 cpu0 cpu1 line n
    s0=$(steps) cpu0=$(daemon_cpu_ns)
    line=$("$@")
    cpu1=$(daemon_cpu_ns)
    n=$(echo "$line" | field reports)
    local counted=$(($(steps) - s0))
    if [ "$counted" -lt "$n" ]; then
        echo "bench/report: $series claims $n reports, the daemon counted $counted" >&2; exit 1
    fi
    add "$series" "$(echo "$line" | field reports_per_s)"
    add "${series}_cpu" "$(awk -v d=$((cpu1 - cpu0)) -v n="$n" 'BEGIN {printf "%.2f", d / 1000 / n}')"
}
# The peer: what a PyTorch loop can do today, one `cosched report` process per step.
cli_load() {
    # Time in integer microseconds from bash itself: a `date` or `awk` per step would add a
    # second process to the peer's cost.
    local n=0 t0 t end
    c report --job "$COSCHED_JOB" --step-time 0.1 # untimed, like the first report of the others
    t0=${EPOCHREALTIME/./}
    end=$((t0 + seconds * 1000000))
    while :; do
        c report --job "$COSCHED_JOB" --step-time 0.1
        n=$((n + 1))
        t=${EPOCHREALTIME/./}
        [ "$t" -ge "$end" ] && break
    done
    awk -v n="$n" -v us=$((t - t0)) 'BEGIN {printf "reports=%d seconds=%.3f reports_per_s=%.0f\n", n, us / 1e6, n / (us / 1e6)}'
}
run_c() { measure c "$BUILD/bench/report_load" "$seconds"; }
run_py() { measure py env PYTHONPATH=libcosched/python "$PYTHON" bench/report_load.py "$seconds"; }
run_cli() { measure cli cli_load; }
in_turn() { # in_turn ROUND A B ...: run A B ... on odd rounds, ... B A on even ones
    local r=$1; shift
    if [ $((r % 2)) = 1 ]; then for f in "$@"; do $f; done; else for ((i = $#; i >= 1; i--)); do ${!i}; done; fi
}
echo "# bench/report: $(date -u +%FT%TZ), $(nproc) CPUs, $ROUNDS interleaved rounds of ${seconds} s, medians"
for r in $(seq "$ROUNDS"); do
    echo "# round $r/$ROUNDS" >&2
    in_turn "$r" run_c run_py run_cli
    # Each round's own ratio: rounds see different machine noise, their spread shows how much.
    last() { tail -n 1 "$tmp/$1"; }
    add c_ratio "$(ratio "$(last c)" "$(last cli)")"
    add py_ratio "$(ratio "$(last py)" "$(last cli)")"
done

line() { printf "%-40s %8.0f reports/s  %6.1f us daemon CPU/report  %s\n" "$1" "$2" "$3" "$4"; }
range() { sort -g "$tmp/$1" | sed -n '1p;$p' | paste -sd- -; }
line "libcosched (C, one connection)" "$(med c)" "$(med c_cpu)" "x$(printf %.1f "$(med c_ratio)") the peer (rounds: $(range c_ratio))"
line "cosched module (Python, one connection)" "$(med py)" "$(med py_cpu)" "x$(printf %.1f "$(med py_ratio)") the peer (rounds: $(range py_ratio))"
line "peer: cosched report, a process a step" "$(med cli)" "$(med cli_cpu)" "x1.0"
echo "# the daemon's CPU per report includes accepting a connection for each cosched report process."
echo "# 2-core machine shared with other work: figures are noisy."
