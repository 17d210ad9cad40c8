#!/usr/bin/env bash
# run.sh: fuzz every parser with libFuzzer for a while — the long version of the corpus replay
# in the test suite (docs/reliability.md).
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60 s; all targets)
# Builds build-fuzz/ with clang (ASan + UBSan + libFuzzer coverage), starts each target from
# its seed corpus (tests/fuzz/corpus/NAME, copied into build-fuzz/corpus/NAME, where the
# inputs it finds are kept across runs) and prints per target: runs, coverage, corpus size,
# and the inputs that crashed (build-fuzz/findings/NAME/crash-*). Replay one with
#   build/tests/fuzz/fuzz_NAME FILE        (the gcc build, as the test suite does)
# Exit status: 0 when no target found a crash, leak, timeout or violated property.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request config pattern cpulist topology data reply)
command -v clang > /dev/null || { echo "run.sh: needs clang (apt-get install clang)" >&2; exit 2; }

if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang meson setup build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args=-fsanitize=fuzzer-no-link -Dtrainer=disabled -Dman=disabled -Dnoise_mpi=disabled \
        > build-fuzz.log 2>&1 || { echo "run.sh: meson setup failed (build-fuzz.log)" >&2; exit 2; }
fi
ninja -C build-fuzz "${targets[@]/#/tests/fuzz/fuzz_}" > build-fuzz.log 2>&1 ||
    { echo "run.sh: the build failed (build-fuzz.log)" >&2; exit 2; }

export COSCHED_SOURCE_ROOT=$PWD
# the suite's suppressions: leaks inside hwloc's own loading (tests/lsan.supp says which); they
# match only with the slow unwinder, as libhwloc has no frame pointers
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
status=0
printf '%-9s %10s %9s %8s %6s %s\n' target runs exec/s cov corpus findings
for t in "${targets[@]}"; do
    corpus=build-fuzz/corpus/$t findings=build-fuzz/findings/$t
    rm -rf "$findings" # what an earlier run found is in build-fuzz/fuzz_NAME.log of that run
    mkdir -p "$corpus" "$findings"
    cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2> /dev/null
    # the daemon's log lines would bury libFuzzer's: the target's stderr is closed (fd mask 2)
    mask=0
    [ "$t" = request ] && mask=2
    build-fuzz/tests/fuzz/fuzz_"$t" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -close_fd_mask=$mask -artifact_prefix="$findings"/ -print_final_stats=1 \
        > build-fuzz/fuzz_"$t".log 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/fuzz_"$t".log | grep -o '[0-9]*$')
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' build-fuzz/fuzz_"$t".log | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]*' build-fuzz/fuzz_"$t".log | tail -n 1 | grep -o '[0-9]*')
    size=$(ls "$corpus" | wc -l)
    found=$(ls "$findings" | wc -l)
    printf '%-9s %10s %9s %8s %6s %s\n' "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}" "$size" "$found"
    if [ $rc -ne 0 ] || [ "$found" -gt 0 ]; then
        status=1
        echo "  $t: exit $rc; see build-fuzz/fuzz_$t.log and $findings/" >&2
    fi
done
exit $status
