#!/usr/bin/env bash
# gpu_source: how soon the guard holds a trainer judged by its GPU's busy time within budget, the
# way GPU windows were judged before (medians of 1/b, as steps: progress.gpu_judge median) beside
# the way they are now (mean busy fractions: mean), on the H200's replayed swing (0.47 .. 0.74 per
# 1 s window at a constant speed; tests/daemon/fakegpu/swing.h) with a co-tenant costing 15 % at
# share 1, in proportion to its share. The figures come from the guard's own state machine under a
# fake clock (tests/daemon/test_gpu_source.c, 20 seeds of ten simulated minutes): time to within
# budget is from the noise's start until every 30 s window from then on has a true mean slowdown
# within the budget (5 %). Runs in a second; needs a build (BUILD, default ./build).
set -eu
build=${BUILD:-build}
bin=$build/tests/daemon/test_daemon_gpu_source
[ -x "$bin" ] || { echo "gpu_source: no $bin: build first (meson setup $build && ninja -C $build)" >&2; exit 1; }
out=$("$bin" 2>&1) || { echo "$out" >&2; exit 1; }
echo "the guard on the H200's replayed GPU swing, 20 seeds (old law = GPU windows judged as steps):"
grep '^# ' <<<"$out" | sed 's/^# /  /'
