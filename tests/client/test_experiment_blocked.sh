#!/usr/bin/env bash
# test_experiment_blocked: `cosched experiment` in its blocked design (the default) through a real
# coschedd on this machine's two cores (modelled as a one-GPU node): one trainer run per
# placement, the noise playing paired blocks from pattern files, the guarded configuration as one
# run with continuous noise, the sweep's rounds; --json; SIGINT and a trainer that dies; every job
# released. The structure of the output is checked, never its figures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
root=${COSCHED_SOURCE_ROOT:?}
build=${COSCHED_BUILD_ROOT:?}
. "$here/experiment_daemon.sh"
# as in test_experiment.sh: sanitizer settings passed on to the runs, no leak check for them
printf 'stats:\n  baseline_steps: 5\n  window_steps: 5\nguard:\n  enabled: true\nruns:\n  keep_environment: [ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS]\n' \
    >"$tmp/coschedd.yaml"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$build/daemon/coschedd" --foreground --config \
    "$tmp/coschedd.yaml" --socket "$sock" --state-dir "$tmp/state" \
    --topology "$root/tests/topologies/ci-2core-gpu.xml" >>"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
check "the daemon starts" c status

# Table II with the guard, blocks of 1 s, a precision it cannot reach: it runs to --time.
out=$tmp/t2
c experiment --time 60 --block 1 --precision 0.001 --batch 8 --guard --seed 7 --out "$out" \
    --trace "$tmp/trace.json" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
check "a blocked experiment with the guard exits 0" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
check "each placement names its step time, its blocks and what is dropped after a change" bash -c \
    "grep -q '^exclusive (blocks): step .* ms, blocks of 1.00 s (the first .* s after each change dropped)' '$tmp/stderr' &&
     grep -q '^shared (blocks): step' '$tmp/stderr' && grep -q '^shared+noise+guard (continuous): .* without noise' '$tmp/stderr'"
check "the table says it is Table II's format from blocks, not separate runs" grep -q "Table II's format, not separate runs" \
    "$tmp/stdout"
check "summary.json: the blocked design, its time, precision target and seed" jq_ok \
    '.options.design == "blocks" and .options.time == 60 and .options.precision == 0.001 and .options.seed == 7 and
     .seconds > 0 and (.precision_reached | type) == "number"' "$out/summary.json"
check "summary.json: both noisy placements measured from 2 or more pairs, the estimate inside its interval" jq_ok \
    '[.configurations[] | select(.noise and (.guard | not)) | .slowdown |
      select(.method | startswith("paired blocks")) | select(.pairs >= 2 and .ci95[0] <= .value and .value <= .ci95[1])]
     | length == 2' "$out/summary.json"
check "summary.json: the guarded run, against its own lead-in and lead-out, with settle time and noise kept" jq_ok \
    '.configurations[4] | .name == "shared+noise+guard" and (.slowdown.method | startswith("batch medians after the guard"))
     and .slowdown.batches >= 2 and (.guard.settle_seconds == null or .guard.settle_seconds >= 0)
     and (.guard.noise_kept | type) == "number" and .guard.baseline_step_seconds > 0' "$out/summary.json"
check "the report says how the guard was measured and how precise it all got" bash -c \
    "grep -q 'batches after the guard' '$tmp/stdout' && grep -q 'noise throughput kept' '$tmp/stdout' &&
     grep -q '^Precision reached: +-[0-9.]* points (target +-0.1) in [0-9]* s (--time 60)' '$tmp/stdout'"
check "the experiment kept to --time (60 s; the last run's stop and the report take a few more)" jq_ok \
    '.seconds < 75' "$out/summary.json"
check "runs.csv has a row per kept block, the noisy ones with the noise's throughput" bash -c \
    "test \$(wc -l < '$out/runs.csv') -gt 8 && awk -F, 'NR > 1 && \$3 == 1 && !(\$7 > 0) { exit 1 }' '$out/runs.csv'"
round=$(ls "$out/blocks/"*-round*-rank0.yaml | head -1)
check "the noise's blocks are a pattern file: a discarded block, then quiet and noisy blocks in pairs" python3 - "$round" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
steps = doc["patterns"]["blocks"]["sequence"]
assert steps[0]["mode"] == "memory" and steps[0]["config"] == "full", steps[0]
blocks = steps[1:]
assert len(blocks) % 2 == 0 and len(blocks) >= 4, len(blocks)
for a, b in zip(blocks[::2], blocks[1::2]):
    assert sorted([a["mode"], b["mode"]]) == ["idle", "memory"], (a, b)
assert all(s["seconds"] == 1.0 for s in steps)
PY
python3 "$here/trace_check.py" "$tmp/trace.json" >"$tmp/trace-summary.json" 2>"$tmp/trace-check.err"
rc=$?
check "the trace is valid, a slice per long run, the trainer's phases and the noise's from each" bash -c \
    "test $rc -eq 0 && jq -e '.repetitions == [\"exclusive (blocks)\", \"shared (blocks)\", \"shared+noise+guard (continuous)\"]
     and (.repetitions_seen[\"trainer rank 0\"] | length == 3) and (.repetitions_seen[\"noise worker 0\"] | length == 3)' \
     '$tmp/trace-summary.json' >/dev/null"
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/trace-check.err"
check "every job is released and every run has ended" wait_nothing_left

# --json: summary.json's content on stdout, nothing else.
c experiment --json --time 15 --block 1 --batch 8 --out "$tmp/js" >"$tmp/stdout" 2>"$tmp/stderr"
check "--json prints summary.json's content and only that" bash -c \
    "test $? -eq 0 && jq -e --slurpfile f '$tmp/js/summary.json' '. == \$f[0]' '$tmp/stdout' >/dev/null"

# The sweep: every setting in round 1, then only the undecided ones.
c experiment --sweep intensity --time 30 --block 1 --batch 8 --seed 11 --out "$tmp/sweep" >"$tmp/stdout" 2>"$tmp/stderr"
check "a blocked sweep exits 0 with its 11 settings" bash -c \
    "test $? -eq 0 && test \$(grep -c '^intensity\|^no noise' '$tmp/stdout') -eq 11"
check "the first round's pattern gives each intensity its own config set, in a random order" python3 - \
    "$(ls "$tmp/sweep/blocks/"*-round*-rank0.yaml | head -1)" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
sets = doc["memory"]
assert sets["full"] == {"intensity": 1} and len(sets) == 10, sets
played = [s.get("config") for s in doc["patterns"]["blocks"]["sequence"][1:] if s["mode"] == "memory"]
assert sorted(set(played)) == sorted(sets), played
assert played[:9] != sorted(played[:9]), played
PY
check "the sweep's answer is proven or honestly absent, and summary.json agrees" bash -c "
    safe=\$(jq -r '.sweep.largest_within_budget // \"none\"' '$tmp/sweep/summary.json')
    if [ \"\$safe\" = none ]; then grep -q 'None proven within the 5.0 % budget in [0-9]* s' '$tmp/stdout'
    else grep -q \"Largest setting proven within the 5.0 % budget: \$safe\" '$tmp/stdout' &&
        jq -e --arg s \"\$safe\" '.configurations[] | select(.name == \$s) | .slowdown.ci95[1] <= 0.05' '$tmp/sweep/summary.json' >/dev/null; fi"
check "the sweep's curve (sweep.dat) draws the measured slowdowns, as summary.json has them" python3 - "$tmp/sweep" <<'PY'
import json, sys
d = sys.argv[1]
doc = json.load(open(d + "/summary.json"))
rows = [list(map(float, l.split())) for l in open(d + "/sweep.dat") if l[0].isdigit()]
want = [c["slowdown"]["value"] * 100 for c in doc["configurations"][1:]]
assert len(rows) == 11 and rows[0][1] == 0, rows
assert all(abs(r[1] - w) < 0.01 for r, w in zip(rows[1:], want)), (rows, want)
PY
check "after the sweep every job is released and every run has ended" wait_nothing_left

# SIGINT while the noise plays its blocks: the runs stop, the jobs are released, exit 1.
"$cosched" --socket "$sock" experiment --time 60 --block 1 --batch 8 --out "$tmp/int" >"$tmp/stdout" 2>"$tmp/stderr" &
exp_pid=$!
for _ in $(seq 300); do
    c --json run list | jq -e '[.runs[] | select(.state == "running" and .argv[1] == "pattern")] | length == 1' \
        >/dev/null 2>&1 && break
    sleep 0.1
done
kill -INT "$exp_pid"
wait "$exp_pid"
check "SIGINT ends a blocked experiment with exit 1, saying so" bash -c "test $? -eq 1 && grep -q 'interrupted' '$tmp/stderr'"
check "... and its jobs are released, its runs stopped" wait_nothing_left

# A trainer that dies under the experiment is said, with its output, not measured around.
"$cosched" --socket "$sock" experiment --time 60 --block 1 --batch 8 --out "$tmp/die" >"$tmp/stdout" 2>"$tmp/stderr" &
exp_pid=$!
for _ in $(seq 300); do
    pid=$(c --json run list | jq -r '[.runs[] | select(.state == "running" and (.argv[0] | endswith("cosched-train")))][0].pid // empty')
    [ -n "$pid" ] && c --json run list | jq -e '[.runs[] | select(.state == "running" and .argv[1] == "pattern")] | length == 1' >/dev/null && break
    sleep 0.1
done
kill -9 "$pid"
wait "$exp_pid"
check "a trainer killed mid-experiment ends it with exit 1, naming its output" bash -c \
    "test $? -eq 1 && grep -q 'the trainer ended before it was stopped' '$tmp/stderr' && grep -q 'runs/' '$tmp/stderr'"
check "... and its jobs are released, its runs stopped" wait_nothing_left

kill "$daemon_pid" && wait "$daemon_pid" 2>/dev/null
daemon_pid=

# A node without GPUs (this machine as it is, no XML): the trainer on cores, said in the heading.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$build/daemon/coschedd" --foreground --config \
    "$tmp/coschedd.yaml" --socket "$sock" --state-dir "$tmp/state-cpu" >>"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do c status >/dev/null 2>&1 && break; sleep 0.05; done
c experiment --time 15 --block 1 --batch 8 --out "$tmp/cpu" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
check "on a node without GPUs the trainer runs on cores, and the report says so" bash -c \
    "test $rc -eq 0 && grep -q '^Trainer: cosched-train, one rank on cores, no GPU; noise: memory' '$tmp/stdout' &&
     jq -e '.options.gpus == \"none\" and (.configurations | length == 4)' '$tmp/cpu/summary.json' >/dev/null"
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
c experiment --gpus 0 --time 15 --out "$tmp/gpu0" >"$tmp/stdout" 2>"$tmp/stderr"
check "... where --gpus 0 is refused by the daemon's plan, naming the missing GPU" bash -c \
    "test $? -ne 0 && grep -q 'GPU 0 does not exist' '$tmp/stderr'"
check "... and every job is released" wait_nothing_left
kill "$daemon_pid" && wait "$daemon_pid" 2>/dev/null
daemon_pid=

"$cosched" experiment --dry-run --gpus none --topology "$root/tests/topologies/juwels-booster.xml" >"$tmp/stdout" 2>&1
check "--dry-run --gpus none on JUWELS Booster: the trainer on the first domain, the noise on the others" bash -c \
    "grep -q '^Placements on .*juwels-booster.xml (trainer: one rank on cores, no GPU):' '$tmp/stdout' &&
     grep -q '^  exclusive+noise  *trainer CPUs 0-5, noise CPUs 6-47, isolation numa' '$tmp/stdout'"
tap_done
