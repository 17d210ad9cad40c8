#!/usr/bin/env bash
# stress: the tests that drive real processes, each run N times beside a CPU hog on every core
# (stress-ng --cpu 0), in the plain build and the ASan/UBSan one, with a pass count per test. A
# suite that passes here 10 of 10 does not depend on the machine's mood. Builds first, as
# tests/run.sh does (packaging/setup.sh --tests; build-asan/).
#
# Usage: tests/stress.sh [--repeat N] [--slurm-repeat M] [--jobs J] [--no-load] [--plain | --asan] [TEST...]
#   --repeat N        runs of each test (default 10)
#   --slurm-repeat M  runs of each Slurm test, minutes each (default 3)
#   --jobs J          tests run side by side (default 2; the Slurm ones wait for each other anyway)
#   --no-load         without the CPU hog
#   --plain, --asan   one build only (default: both)
#   TEST...           meson test names (default: every test of the suites that start processes:
#                     client, noise, trainer, daemon, libcosched, slurm)
# Prints "TEST  plain P/N  asan A/N" per test, each build's time, and a closing "N passed,
# N failed" over all runs; the logs stay in build*/meson-logs/stress*.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
repeat=10 slurm_repeat=3 jobs=2 load=1 builds="build build-asan" tests=()
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) repeat=${2:?--repeat needs a count}; shift ;;
    --slurm-repeat) slurm_repeat=${2:?--slurm-repeat needs a count}; shift ;;
    --jobs) jobs=${2:?--jobs needs a count}; shift ;;
    --no-load) load= ;;
    --plain) builds=build ;;
    --asan) builds=build-asan ;;
    -h | --help) sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "stress: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) tests+=("$1") ;;
    esac
    shift
done
case "$repeat$slurm_repeat$jobs" in *[!0-9]* | '') echo "stress: counts are whole numbers" >&2; exit 2 ;; esac

bash packaging/setup.sh --tests >/dev/null || { echo "stress: setup failed" >&2; exit 1; }
if [[ " $builds " == *" build-asan "* ]]; then
    [ -f build-asan/build.ninja ] ||
        meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
    meson compile -C build-asan >/dev/null || { echo "stress: the ASan/UBSan build failed" >&2; exit 1; }
fi
export ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# "SUITES NAME" of every test, then the ones asked for split into Slurm's and the others.
listing=$(meson test -C build --list 2>/dev/null | sed -nE 's/^cosched:([a-z+]+) \/ (.*)$/\1 \2/p')
if [ ${#tests[@]} -eq 0 ]; then
    mapfile -t tests < <(awk '$1 ~ /^(client|noise|trainer|daemon|libcosched|slurm)(\+|$)/ {print $2}' <<<"$listing")
fi
slurm=() others=()
for t in "${tests[@]}"; do
    grep -qx "[a-z+]* $t" <<<"$listing" || { echo "stress: no test named $t (meson test -C build --list)" >&2; exit 2; }
    if grep -qx "slurm $t" <<<"$listing"; then slurm+=("$t"); else others+=("$t"); fi
done

hog=
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null; hog=; }
trap stop_hog EXIT
if [ -n "$load" ]; then
    command -v stress-ng >/dev/null || { echo "stress: stress-ng is missing (apt-get install stress-ng)" >&2; exit 1; }
    stress-ng --cpu 0 --timeout 0 --quiet &
    hog=$!
fi

# meson's --repeat runs the whole list N times, J tests at a time; its JSON log has a line per run.
for b in $builds; do
    start=$SECONDS
    rm -f "$b"/meson-logs/stress*.json
    [ ${#others[@]} -gt 0 ] && meson test -C "$b" --no-rebuild --repeat "$repeat" --num-processes "$jobs" \
        --logbase stress "${others[@]}" >/dev/null 2>&1
    [ ${#slurm[@]} -gt 0 ] && meson test -C "$b" --no-rebuild --repeat "$slurm_repeat" --num-processes "$jobs" \
        --logbase stress-slurm "${slurm[@]}" >/dev/null 2>&1
    echo "== $b: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
done
stop_hog

python3 - "$builds" "$repeat" "$slurm_repeat" "${slurm[*]}" "${tests[@]}" <<'PY'
import json, os, sys
builds, repeat, slurm_repeat, slurm, tests = sys.argv[1].split(), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5:]
runs = {}  # (test, build) -> [passed, all]
for b in builds:
    for log in ("stress.json", "stress-slurm.json"):
        path = os.path.join(b, "meson-logs", log)
        if not os.path.exists(path):
            continue
        for line in open(path):
            r = json.loads(line)
            n = runs.setdefault((r["name"].split(" / ")[-1], b), [0, 0])  # "cosched:suite / name"
            n[0] += r["result"] == "OK"
            n[1] += 1
passed = failed = 0
for t in tests:
    cells = []
    for b in builds:
        want = slurm_repeat if t in slurm else repeat
        ok, ran = runs.get((t, b), [0, 0])
        passed, failed = passed + ok, failed + max(ran, want) - ok  # a run that never happened failed
        cells.append(f"{'plain' if b == 'build' else 'asan'} {ok}/{want}")
    print(f"{t:<34}  " + "  ".join(cells))
print(f"{passed} passed, {failed} failed")
sys.exit(failed != 0)
PY
