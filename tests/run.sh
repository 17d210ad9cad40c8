#!/usr/bin/env bash
# run: set up (packages, build) and run every test three ways — a -Werror build, an ASan/UBSan
# build, and the unit tests under valgrind — then print "N passed, N failed" over all of them,
# and each pass's time. tests/stress.sh runs the suites again and again beside a CPU hog.
set -uo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh --tests || { echo "0 passed, 1 failed"; exit 1; }

# Tests: the Chrome DevTools Performance panel's trace engine (npm) loads the trace that
# `cosched experiment --trace` writes (tests/client/test_experiment.sh). Optional: without
# npm or its registry that one check is skipped, and says so. Not in setup.sh: the demo needs
# no npm.
engine=build/npm/node_modules/@paulirish/trace_engine
if [ ! -f "$engine/analyze-trace.mjs" ]; then
    if ! command -v npm >/dev/null && [ "$(id -u)" -eq 0 ]; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; } >/dev/null 2>&1 || true
    fi
    if ! { command -v npm >/dev/null &&
        npm install --prefix build/npm --no-audit --no-fund --loglevel=error @paulirish/trace_engine@0.0.65 >/dev/null 2>&1; }; then
        echo "setup: could not install the npm package @paulirish/trace_engine; the trace test will skip loading with it" >&2
    fi
fi
export COSCHED_TRACE_ENGINE=$PWD/$engine

export ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0

# One pass: meson test in BUILD_DIR with the given arguments, its time said at its end, its exit
# status in BUILD_DIR/meson-logs/NAME.status (passes run side by side: no shared variables).
pass() { # NAME BUILD_DIR MESON_TEST_ARGS...
    local name=$1 dir=$2 start=$SECONDS rc=0; shift 2
    echo "== $name"
    rm -f "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json
    meson test -C "$dir" --print-errorlogs --logbase "$name" "$@" || rc=1
    echo "== $name took $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
    echo "$rc" >"$dir/meson-logs/$name.status"
}
# Its TAP log: meson names it NAME.json, or NAME-WRAPPER.json when a wrapper is used.
# (ls fails on the name that is not there, and pipefail would carry that into the caller's status)
pass_log() { ls "$2/meson-logs/$1".json "$2/meson-logs/$1"-*.json 2>/dev/null | grep -v junit | head -n 1 || true; }

# The ASan/UBSan build compiles while the plain pass runs (its tests wait on the daemon and the
# GPU stand-in much of the time), and the valgrind pass runs beside the sanitizers' pass; the
# latter's output is shown after it, whole.
asan_build() {
    if [ ! -f build-asan/build.ninja ]; then
        meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null || return 1
    fi
    nice meson compile -C build-asan >build/meson-logs/asan-build.out 2>&1
}
started=$SECONDS
asan_build & asan_builder=$!
pass plain build
asan_ok=1
wait "$asan_builder" || { echo "the ASan/UBSan build failed:"; tail -n 30 build/meson-logs/asan-build.out; asan_ok=; }
pass valgrind build --suite unit \
    --wrapper "valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --keep-debuginfo=yes --suppressions=$PWD/tests/valgrind.supp" \
    >build/meson-logs/valgrind-pass.out 2>&1 &
valgrind_pass=$!
[ -n "$asan_ok" ] && pass sanitizers build-asan --no-suite packaging # it builds its own binaries, not the ASan ones
wait "$valgrind_pass"
cat build/meson-logs/valgrind-pass.out
echo "== all passes took $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"

logs=("$(pass_log plain build)" "$(pass_log valgrind build)")
if [ -n "$asan_ok" ]; then
    logs+=("$(pass_log sanitizers build-asan)")
else
    status=1
fi
for f in build/meson-logs/plain.status build/meson-logs/valgrind.status ${asan_ok:+build-asan/meson-logs/sanitizers.status}; do
    [ "$(cat "$f" 2>/dev/null)" = 0 ] || status=1
done

if ! read -r passed failed skipped < <(python3 tests/count-tap.py "${logs[@]}"); then
    passed=0 failed=1 skipped=0
fi
[ "${failed:-1}" -eq 0 ] || status=1
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
exit $status
