#!/usr/bin/env bash
# stress: the tests that drive real processes, each run N times in a row beside a CPU hog on every
# core (stress-ng --cpu 0), in the plain build and the ASan/UBSan one, with a pass count per test.
# A suite that passes here 10 of 10 does not depend on the machine's mood. Builds first, as
# tests/run.sh does (packaging/setup.sh --tests; build-asan/).
#
# Usage: tests/stress.sh [--repeat N] [--slurm-repeat M] [--no-load] [--plain | --asan] [TEST...]
#   --repeat N        runs of each test (default 10)
#   --slurm-repeat M  runs of each Slurm test, minutes each (default 3)
#   --no-load         without the CPU hog
#   --plain, --asan   one build only (default: both)
#   TEST...           meson test names (default: every test of the suites that start processes:
#                     client, noise, trainer, daemon, libcosched, slurm)
# Prints "TEST  plain P/N  asan A/N" per test and a closing "N passed, N failed" over all runs;
# a failed run's log is kept under build*/meson-logs/stress-TEST-I.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
repeat=10 slurm_repeat=3 load=1 builds="build build-asan" tests=()
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) repeat=${2:?--repeat needs a count}; shift ;;
    --slurm-repeat) slurm_repeat=${2:?--slurm-repeat needs a count}; shift ;;
    --no-load) load= ;;
    --plain) builds=build ;;
    --asan) builds=build-asan ;;
    -h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "stress: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) tests+=("$1") ;;
    esac
    shift
done
case "$repeat$slurm_repeat" in *[!0-9]*) echo "stress: counts are whole numbers" >&2; exit 2 ;; esac

bash packaging/setup.sh --tests >/dev/null || { echo "stress: setup failed" >&2; exit 1; }
if [[ " $builds " == *" build-asan "* ]]; then
    [ -f build-asan/build.ninja ] ||
        meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
    meson compile -C build-asan >/dev/null || { echo "stress: the ASan/UBSan build failed" >&2; exit 1; }
fi
export ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [ ${#tests[@]} -eq 0 ]; then
    mapfile -t tests < <(meson test -C build --list 2>/dev/null |
        sed -nE 's/^cosched:([a-z+]+) \/ (.*)$/\1 \2/p' |
        awk '$1 ~ /^(client|noise|trainer|daemon|libcosched|slurm)(\+|$)/ {print $2}')
fi

hog=
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null; hog=; }
trap stop_hog EXIT
if [ -n "$load" ]; then
    command -v stress-ng >/dev/null || { echo "stress: stress-ng is missing (apt-get install stress-ng)" >&2; exit 1; }
    stress-ng --cpu 0 --timeout 0 --quiet &
    hog=$!
fi

passed=0 failed=0
declare -A count
for t in "${tests[@]}"; do
    runs=$repeat
    meson test -C build --list 2>/dev/null | grep -qE "^cosched:slurm / $t\$" && runs=$slurm_repeat
    for b in $builds; do
        ok=0
        for i in $(seq "$runs"); do
            start=$SECONDS
            if meson test -C "$b" --no-rebuild --logbase "stress-$t-$i" "$t" >/dev/null 2>&1; then
                ok=$((ok + 1)) passed=$((passed + 1))
                rm -f "$b/meson-logs/stress-$t-$i".*
            else
                failed=$((failed + 1))
                echo "# $t ($b) run $i failed after $((SECONDS - start)) s: $b/meson-logs/stress-$t-$i.txt" >&2
            fi
        done
        count[$t.$b]="$ok/$runs"
    done
    printf '%-34s' "$t"
    for b in $builds; do printf '  %s %s' "$([ "$b" = build ] && echo plain || echo asan)" "${count[$t.$b]}"; done
    printf '\n'
done
stop_hog
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
