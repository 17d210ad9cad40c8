#!/usr/bin/env bash
# run: set up (packages, build) and run every test three ways — a -Werror build, an ASan/UBSan
# build, and the unit tests under valgrind — then print "N passed, N failed" over all of them.
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
logs=()
status=0

run() { # NAME BUILD_DIR MESON_TEST_ARGS...
    local name=$1 dir=$2; shift 2
    echo "== $name"
    rm -f "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json
    meson test -C "$dir" --print-errorlogs --logbase "$name" "$@" || status=1
    # meson names the log NAME.json, or NAME-WRAPPER.json when a wrapper is used
    logs+=("$(ls "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json 2>/dev/null | grep -v junit | head -n 1)")
}

run plain build
if [ ! -f build-asan/build.ninja ]; then
    meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
if meson compile -C build-asan >/dev/null; then
    run sanitizers build-asan --no-suite packaging # it builds its own binaries, not the ASan ones
else
    echo "the ASan/UBSan build failed"; status=1
fi
run valgrind build --suite unit \
    --wrapper "valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --keep-debuginfo=yes --suppressions=$PWD/tests/valgrind.supp"

if ! read -r passed failed skipped < <(python3 tests/count-tap.py "${logs[@]}"); then
    passed=0 failed=1 skipped=0
fi
[ "${failed:-1}" -eq 0 ] || status=1
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
exit $status
