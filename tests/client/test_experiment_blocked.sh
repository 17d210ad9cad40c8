#!/usr/bin/env bash
# test_experiment_blocked: `cosched experiment` in its blocked design (the default) through a real
# coschedd on this machine's two cores (modelled as a one-GPU node): one trainer run per
# placement, the noise playing paired blocks from pattern files, the guarded configuration as one
# run with continuous noise, the sweep's rounds; --json; SIGINT and a trainer that dies; every job
# released. The structure of the output is checked, never its figures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/experiment_daemon.sh"
check "the daemon starts" start_experiment_daemon

# Table II with the guard, blocks of 1 s, a precision it cannot reach: it runs to --time.
out=$tmp/t2
c experiment --time 60 --block 1 --precision 0.001 --batch 8 --guard --seed 7 --out "$out" \
    --trace "$tmp/trace.json" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
check "a blocked experiment with the guard exits 0" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
check "each placement names its step time, its blocks and what is dropped after a change" bash -c \
    "grep -q '^exclusive (blocks): step .* ms, blocks of 1.00 s (the steps that begin in the first .* s after each change dropped); the lead-in saw [0-9]* switches of the host.s speed in [0-9.]* s' '$tmp/stderr' &&
     grep -q '^shared (blocks): step' '$tmp/stderr' && grep -q '^shared+noise+guard (continuous): .* without noise' '$tmp/stderr'"
check "the table says it is Table II's format from blocks, not separate runs" grep -q "Table II's format, not separate runs" \
    "$tmp/stdout"
# The precision reached is the widest interval's half width: none while a configuration has none.
check "summary.json: the blocked design, its time, precision target and seed, the precision reached" jq_ok \
    '.options.design == "blocks" and .options.time == 60 and .options.precision == 0.001 and .options.seed == 7 and
     .seconds > 0 and (.precision_reached | type) ==
     (if all(.configurations[] | select(.noise); .slowdown.ci95 != null) then "number" else "null" end)' \
    "$out/summary.json"
# How many pairs the time allows is the machine's; that each pair is one noisy and one quiet block
# of runs.csv, that a 95 % interval comes with 6 pairs or more (the fewest with a signed-rank
# interval; fewer give their range at its own level) and the block length, is the design's.
check "summary.json: both noisy placements measured from paired blocks, a block of each in runs.csv per pair" \
    python3 - "$out/summary.json" "$out/runs.csv" <<'PY'
import csv, json, sys
doc = json.load(open(sys.argv[1]))
rows = {}
for r in csv.DictReader(open(sys.argv[2])):
    rows[r["configuration"]] = rows.get(r["configuration"], 0) + 1
noisy = [c for c in doc["configurations"] if c["noise"] and not c["guard"]]
assert len(noisy) == 2, noisy
for c in noisy:
    d = c["slowdown"]
    assert d["method"].startswith("paired blocks"), d
    assert d["pairs"] == rows.get(c["name"], 0) == rows.get(d["against"], 0), (c["name"], d["pairs"], rows)
    assert "Hodges-Lehmann" in d["method"] and doc["options"]["estimator"] == "hodges-lehmann", d
    if d["pairs"] >= 6:
        assert d["ci95"][0] <= d["value"] <= d["ci95"][1] and 0.95 <= d["level"] < 1, d
    else:
        assert d["ci95"] is None and (d["pairs"] == 0 or d["level"] < 0.95), d
    b = c["blocks"]
    assert b["seconds"] == 1 and b["steps"] is None and b["host_switches"] >= 0 and b["host_dwell_seconds"] > 0, b
print("# pairs:", {c["name"]: c["slowdown"]["pairs"] for c in noisy})
print("# the lead-ins' switches of the host's speed:", {c["name"]: c["blocks"]["host_switches"] for c in noisy})
PY
# The noise kept: the guarded noise's throughput against the unguarded one's on the same placement,
# a ratio wherever that one moved bytes.
check "summary.json: the guarded run, against its own lead-in and lead-out, with settle time and noise kept" jq_ok \
    '.configurations[3].noise_mb_per_s as $free | .configurations[4] | .name == "shared+noise+guard"
     and (.slowdown.method | startswith("batch figures after the guard") and contains("rank-sum"))
     and .slowdown.batches >= 2
     and (.guard.settle_seconds == null or .guard.settle_seconds >= 0) and .guard.baseline_step_seconds > 0
     and if ($free // 0) > 0 then (.guard.noise_kept - .noise_mb_per_s / $free | fabs) < 1e-6 * (1 + .guard.noise_kept)
         else .guard.noise_kept == null end' "$out/summary.json"
# ... and the report says what summary.json does: the noise kept where it is known.
kept=$(jq -r '.configurations[4].guard.noise_kept != null' "$out/summary.json")
check "the report says how the guard was measured and how precise it all got" bash -c \
    "grep -q 'batches after the guard' '$tmp/stdout' &&
     test \$(grep -c 'noise throughput kept' '$tmp/stdout') -eq \$([ '$kept' = true ] && echo 1 || echo 0) &&
     grep -q '^Precision reached: +-\([0-9.]*\|inf\) points (target +-0.1) in [0-9]* s (--time 60)' '$tmp/stdout'"
check "the experiment ran until --time, as a precision it cannot reach asks" jq_ok \
    '.seconds >= .options.time' "$out/summary.json"
check "... and says for each placement how long the target would take at this step time" bash -c \
    "test \$(grep -c -e '+-0.1 points would take about .* of blocks (.* pairs) at this step time (--time auto)' \
        -e 'an interval needs 6 pairs: about .* of 1.00 s blocks' '$tmp/stdout') -eq 2 &&
     jq -e '[.configurations[] | select(.noise and (.guard | not)) | .slowdown |
             (.seconds_to_precision == null) == (.ci95 == null)] == [true, true]' '$out/summary.json' >/dev/null"
# The throughput is what the noise moved: 0 MB/s for a noise held by the guard, or one still
# touching its arrays, is a figure too; unknown (an empty field) is not.
check "runs.csv has a row per figure of summary.json, the noisy ones with the noise's throughput" \
    python3 - "$out/summary.json" "$out/runs.csv" <<'PY'
import csv, json, sys
doc = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == sum(len(c["seconds"]) for c in doc["configurations"]), len(rows)
for c in doc["configurations"]:
    mine = [r for r in rows if r["configuration"] == c["name"]]
    assert all(abs(float(r["seconds"]) - x) <= 1e-6 for r, x in zip(mine, c["seconds"])), c["name"]
    if not c["noise"]:
        assert all(r["noise_mb_per_s"] == "" for r in mine), c["name"]
        continue
    mbs = [float(r["noise_mb_per_s"]) for r in mine]  # an empty field fails here
    assert all(m >= 0 for m in mbs), (c["name"], mbs)
    if mine:
        assert abs(sum(mbs) / len(mbs) - c["noise_mb_per_s"]) <= 1e-3, c["name"]  # %.3f in the CSV
    if c["guard"]:
        assert len(set(mbs)) <= 1, mbs  # one window: the noise's throughput while guarded
PY
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
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/trace-check.err"
# Each long run's parts are on the trace as its runs left them: the trainer's phases where it ended
# cleanly (its trace written), the noise's where it printed a phase line (a run the daemon had to
# SIGKILL after its grace prints none).
c --json run list >"$tmp/t2-runs.json"
check "the trace is valid, a slice per long run, the trainer's phases and the noise's from each" python3 - \
    "$rc" "$tmp/trace-summary.json" "$tmp/t2-runs.json" <<'PY'
import json, sys
assert sys.argv[1] == "0", "trace_check.py failed"
summary, runs = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))["runs"]
labels = summary["repetitions"]
assert labels == ["exclusive (blocks)", "shared (blocks)", "shared+noise+guard (continuous)"], labels
def long_run(r):  # job exp-PID-SEQUENCE-ROLE: the SEQUENCE-th long run
    return labels[int(r["job"].split("-")[2])]
def phase_printed(path):
    return any(json.loads(l).get("event") == "phase" for l in open(path) if l.startswith("{"))
trainer = sorted(long_run(r) for r in runs if r["job"].endswith("-train") and r.get("exit_status") == 0)
noise = sorted({long_run(r) for r in runs if r["job"].endswith("-noise") and phase_printed(r["stdout"])})
seen = summary["repetitions_seen"]
assert seen.get("trainer rank 0", []) == trainer, (seen, trainer)
assert seen.get("noise worker 0", []) == noise, (seen, noise)
print("# long runs with the trainer's phases: %d, with the noise's: %d" % (len(trainer), len(noise)))
PY
check "every job is released and every run has ended" wait_nothing_left

# --time auto: each placement until its interval is within --precision (here +-50 points: 20
# pairs, the fewest called precise), within the ceiling; the blocks are the rule's, from time.
c experiment --time auto:120 --precision 0.5 --batch 8 --seed 5 --out "$tmp/auto" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
check "--time auto runs each placement until it is precise, and says so" bash -c \
    "test $rc -eq 0 && grep -q '^Precision reached: +-[0-9.]* points (target +-50.0) in [0-9]* s (--time auto, ceiling 120 s)' '$tmp/stdout' &&
     jq -e '.options.time_auto and .options.time == 120 and
            ([.configurations[] | select(.noise) | .slowdown | .pairs >= 20 and (.ci95[1] - .ci95[0]) / 2 <= 0.5] ==
             [true, true]) and ([.configurations[] | select(.noise) | .blocks | .seconds >= 0.2 and .steps >= 1] ==
             [true, true])' '$tmp/auto/summary.json' >/dev/null"
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
check "... and leaves no job registered, no run running" wait_nothing_left

# --json: summary.json's content on stdout, nothing else.
c experiment --json --time 15 --block 1 --batch 8 --out "$tmp/js" >"$tmp/stdout" 2>"$tmp/stderr"
check "--json prints summary.json's content and only that" bash -c \
    "test $? -eq 0 && jq -e --slurpfile f '$tmp/js/summary.json' '. == \$f[0]' '$tmp/stdout' >/dev/null"

# The sweep: the lowest, middle and highest settings in round 1, then a bisection on the curve.
c experiment --sweep intensity --time 30 --block 1 --batch 8 --seed 11 --out "$tmp/sweep" >"$tmp/stdout" 2>"$tmp/stderr"
check "a blocked sweep exits 0 with its 11 settings" bash -c \
    "test $? -eq 0 && test \$(grep -c '^intensity\|^no noise' '$tmp/stdout') -eq 11"
check "the first round plays intensity 0.1, 0.5 and 1.0 in a random order, later rounds 3 settings at most" python3 - \
    "$tmp/sweep/blocks" <<'PY'
import glob, sys, yaml
def played(path):
    doc = yaml.safe_load(open(path))
    assert doc["memory"]["full"] == {"intensity": 1} and len(doc["memory"]) == 10, doc["memory"]
    return [s.get("config") for s in doc["patterns"]["blocks"]["sequence"][1:] if s["mode"] == "memory"]
rounds = sorted(glob.glob(sys.argv[1] + "/*-round*-rank0.yaml"), key=lambda p: int(p.split("-round")[1].split("-")[0]))
first = played(rounds[0])
assert sorted(set(first)) == ["full", "i0100", "i0500"] and len(first) == 6, first
assert first != sorted(first), first
assert all(len(set(played(r))) <= 3 for r in rounds[1:]), [played(r) for r in rounds]
print("# %d rounds" % len(rounds))
PY
check "the sweep's answer is a setting, a bracket or none proven, as summary.json's curve says" python3 - \
    "$tmp/sweep" "$tmp/stdout" <<'PY'
import json, sys
sweep = json.load(open(sys.argv[1] + "/summary.json"))["sweep"]
out = open(sys.argv[2]).read()
curve = {c["setting"]: c for c in sweep["curve"]}
kind = sweep["answer"]["kind"]
if kind == "setting":
    s = sweep["answer"]["setting"]
    assert s == sweep["largest_within_budget"] and curve[s]["band"][1] <= 0.05, sweep
    assert "Largest setting within the 5.0 % budget: " + s + " (" in out, out
elif kind == "bracket":
    low, high = sweep["answer"]["bracket"]
    assert "Largest setting within the 5.0 % budget: between " + low + " and " + high in out, out
    assert low == "no noise" or curve[low]["band"][1] <= 0.05, sweep
else:
    assert kind == "none proven" and sweep["curve"][0]["band"][0] > 0.05, sweep
    assert "None proven within the 5.0 % budget in " in out, out
fits = [c["fit"] for c in sweep["curve"] if c["fit"] is not None]
assert fits == sorted(fits), fits
print("# answer: %s; pairs per setting %s" % (kind, [c["pairs"] for c in sweep["curve"]]))
print("# " + [l for l in out.splitlines() if l.startswith(("Largest", "None"))][0])
PY
check "the sweep's curve (sweep.dat) draws the fitted settings, as summary.json has them" python3 - "$tmp/sweep" <<'PY'
import json, sys
d = sys.argv[1]
curve = json.load(open(d + "/summary.json"))["sweep"]["curve"]
rows = [list(map(float, l.split())) for l in open(d + "/sweep.dat") if l[0].isdigit()]
want = [(c["fit"] * 100, c["pairs"]) for c in curve if c["fit"] is not None]
assert rows[0][1] == 0 and len(rows) == 1 + len(want), (rows, want)
assert all(abs(r[1] - w) < 0.01 and r[4] == p for r, (w, p) in zip(rows[1:], want)), (rows, want)
PY
check "after the sweep every job is released and every run has ended" wait_nothing_left

# SIGINT while the noise plays its blocks: the runs stop, the jobs are released, exit 1.
# The noise plays its blocks once the trainer's lead-in is done: 120 s at most (a minute is plenty
# on a loaded machine); a state that never comes fails here, and the experiment is ended all the same.
noise_playing() { c --json run list | jq -e '[.runs[] | select(.state == "running" and .argv[1] == "pattern")] | length == 1'; }
"$cosched" --socket "$sock" experiment --time 60 --block 1 --batch 8 --out "$tmp/int" >"$tmp/stdout" 2>"$tmp/stderr" &
exp_pid=$!
if wait_for 120 noise_playing; then
    kill -INT "$exp_pid"
    wait "$exp_pid"
    check "SIGINT ends a blocked experiment with exit 1, saying so" bash -c "test $? -eq 1 && grep -q 'interrupted' '$tmp/stderr'"
else
    kill -INT "$exp_pid"
    wait "$exp_pid"
    not_ok "SIGINT ends a blocked experiment with exit 1, saying so (its noise never played within 120 s)" \
        "$(cat "$tmp/stderr")"
fi
check "... and its jobs are released, its runs stopped" wait_nothing_left

# A trainer that dies under the experiment is said, with its output, not measured around.
trainer_pid() { c --json run list | jq -er '[.runs[] | select(.state == "running" and (.argv[0] | endswith("cosched-train")))][0].pid'; }
"$cosched" --socket "$sock" experiment --time 60 --block 1 --batch 8 --out "$tmp/die" >"$tmp/stdout" 2>"$tmp/stderr" &
exp_pid=$!
if wait_for 120 noise_playing && pid=$(trainer_pid); then
    kill -9 "$pid"
    wait "$exp_pid"
    check "a trainer killed mid-experiment ends it with exit 1, naming its output" bash -c \
        "test $? -eq 1 && grep -q 'the trainer ended before it was stopped' '$tmp/stderr' && grep -q 'runs/' '$tmp/stderr'"
else
    kill -INT "$exp_pid"
    wait "$exp_pid"
    not_ok "a trainer killed mid-experiment ends it with exit 1, naming its output (its noise never played within 120 s)" \
        "$(cat "$tmp/stderr")"
fi
check "... and its jobs are released, its runs stopped" wait_nothing_left

stop_daemon

# A node without GPUs (this machine as it is, no XML): the trainer on cores, said in the heading.
# The first daemon's configuration and environment, its own state.
start_daemon --state-dir "$tmp/state-cpu" || not_ok "the daemon starts on this machine as it is"
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
stop_daemon

"$cosched" experiment --dry-run --gpus none --topology "$root/tests/topologies/juwels-booster.xml" >"$tmp/stdout" 2>&1
check "--dry-run --gpus none on JUWELS Booster: the trainer on the first domain, the noise on the others" bash -c \
    "grep -q '^Placements on .*juwels-booster.xml (trainer: one rank on cores, no GPU):' '$tmp/stdout' &&
     grep -q '^  exclusive+noise  *trainer CPUs 0-5, noise CPUs 6-47, isolation numa' '$tmp/stdout'"
finish
