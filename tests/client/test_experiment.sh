#!/usr/bin/env bash
# test_experiment: `cosched experiment --design runs` (the study's design: a run per repetition)
# through a real coschedd on this machine's two cores (modelled as a one-GPU node): the four
# configurations interleaved, Table II and the slowdowns
# printed and written, every job released and every run ended; --trainer, --guard, --dry-run on
# the JUWELS Booster file, and refusals of bad input. Figures are not asserted, only their shape.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/experiment_daemon.sh"

check "the daemon starts" start_experiment_daemon true
out=$tmp/out
c experiment --design runs --reps 2 --warmup 1 --steps 4 --batch 8 --out "$out" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
check "an experiment of 2 repetitions exits 0" test $rc -eq 0
check "the configurations interleave after one warm-up" test "$(grep -o '^[a-z].*:.*\.\.\.' "$tmp/stderr" | sed 's/ \.\.\.//' | xargs)" = \
    "repetition 1/2: exclusive repetition 1/2: exclusive+noise repetition 1/2: shared repetition 1/2: shared+noise repetition 2/2: exclusive repetition 2/2: exclusive+noise repetition 2/2: shared repetition 2/2: shared+noise"
check "the warm-up is announced as discarded" grep -q 'warm-up 1/1 (exclusive, discarded)' "$tmp/stderr"
check "the closing line names the plot files" grep -q 'runs.png, runs.svg' "$tmp/stdout"
check "the table has a column per configuration and MIN, Average, Std. dev. rows" bash -c \
    "grep -q 'exclusive  *exclusive+noise  *shared  *shared+noise' '$tmp/stdout' && grep -q '^MIN ' '$tmp/stdout' && grep -q '^Average ' '$tmp/stdout' && grep -q '^Std. dev. ' '$tmp/stdout'"
check "table.txt is what was printed, less the closing 'Written:' lines" cmp "$out/table.txt" <(head -n -2 "$tmp/stdout")
check "runs.csv has a header and 8 repetitions" test "$(wc -l <"$out/runs.csv")" -eq 9
check "every repetition took time" awk -F, 'NR > 1 && !($6 > 0) { exit 1 }' "$out/runs.csv"
check "the noisy repetitions moved memory, the quiet ones had no noise" awk -F, \
    'NR > 1 && (($3 == 1) != ($7 > 0)) { exit 1 }' "$out/runs.csv"
check "summary.json: both noisy configurations have a slowdown against their baseline with an interval" jq_ok \
    '[.configurations[] | select(.noise) | .slowdown | select(.ci95[0] <= .value and .value <= .ci95[1])] | length == 2' \
    "$out/summary.json"
check "summary.json: the baselines are the same placement without noise" jq_ok \
    '[.configurations[] | select(.noise) | [.policy, .slowdown.against]] == [["exclusive","exclusive"],["shared","shared"]]' \
    "$out/summary.json"
check "summary.json: MIN <= average <= max, and the trainer's shares add up to about 1" jq_ok \
    'all(.configurations[]; .summary.min <= .summary.mean and .summary.mean <= .summary.max and (.trainer_shares | .compute + .comm + .data) > 0.95)' \
    "$out/summary.json"
check "runs.png is a PNG drawn by gnuplot" bash -c "head -c 8 '$out/runs.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
check "runs.svg is well-formed SVG with a label per configuration" python3 -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse('$out/runs.svg').getroot()
assert root.tag.endswith('svg'), root.tag
text = ' '.join(t.text or '' for t in root.iter() if t.tag.endswith('tspan'))
missing = [c for c in ('exclusive', 'exclusive+noise', 'shared', 'shared+noise') if c not in text]
assert not missing, missing"
check "the plot's data holds every repetition, a block per configuration" test "$(grep -c '^[0-9]' "$out/runs.dat")" -eq 8
check "on two cores the placements differ in name only, and the report says so" grep -q 'differ here in name only' "$tmp/stdout"
check "every job is released and every run has ended" nothing_left

# --noise io with a relative --out: the noise writes where the experiment's output is, whatever
# the daemon's working directory.
(cd "$tmp" && c experiment --design runs --reps 1 --warmup 0 --steps 3 --batch 8 --noise io --out rel >"$tmp/stdout" 2>"$tmp/stderr")
check "--noise io into a relative --out moves bytes beside the trainer" bash -c "test $? -eq 0 && jq -e \
    '[.configurations[] | select(.noise) | .noise_mb_per_s > 0] == [true, true]' '$tmp/rel/summary.json' >/dev/null"
check "... and leaves no noise file behind" bash -c "test -z \"\$(find '$tmp/rel' -type f ! -name 'runs.*' ! -name '*.txt' ! -name '*.json' ! -name 'plot.gp')\""

# --noise network: a pair of MPI ranks per noise core, ping-pong over TCP on loopback.
c experiment --design runs --reps 1 --warmup 0 --steps 3 --batch 8 --noise network --out "$tmp/net" >"$tmp/stdout" 2>"$tmp/stderr"
check "--noise network moves bytes between MPI ranks beside the trainer" bash -c "test $? -eq 0 && jq -e \
    '[.configurations[] | select(.noise) | .noise_mb_per_s > 0] == [true, true]' '$tmp/net/summary.json' >/dev/null"
check "... as mpirun -np 2 cosched-noise pingpong over TCP on loopback" bash -c "c() { '$cosched' --socket '$sock' \"\$@\"; };
    c --json run list | jq -e '[.runs[] | select(.argv | index(\"pingpong\")) | .argv | index(\"btl_tcp_if_include\") != null
    and index(\"-np\") != null] | length == 2 and all' >/dev/null"
check "... and leaves no job and no run behind" nothing_left

# --trainer: any command, timed by its run; a failing one stops the experiment with its output named.
c experiment --design runs --reps 1 --warmup 0 --trainer "sleep 0.3; echo \$COSCHED_JOB >>'$tmp/trainer-ran'" --out "$tmp/sleep" \
    >"$tmp/stdout" 2>"$tmp/stderr"
check "--trainer runs the given command in the trainer's job, once per repetition, and times it" bash -c \
    "test $? -eq 0 && test \$(grep -c -- '-train\$' '$tmp/trainer-ran') -eq 4 && awk -F, 'NR > 1 && !(\$6 > 0) { exit 1 }' '$tmp/sleep/runs.csv'"
check "... whose profile is unknown, not zero" jq_ok 'all(.configurations[]; .trainer_shares == null)' "$tmp/sleep/summary.json"
c experiment --design runs --reps 1 --warmup 0 --trainer 'exit 3' --out "$tmp/fail" >"$tmp/stdout" 2>"$tmp/stderr"
check "a trainer that fails stops the experiment (exit 1) and names its output" bash -c \
    "test $? -eq 1 && grep -q 'did not exit 0' '$tmp/stderr' && grep -q 'runs/' '$tmp/stderr'"
check "... and leaves no job and no run behind" nothing_left

# Noise that ends before the trainer did not cover its run: an error, not a quiet figure.
c experiment --design runs --reps 1 --warmup 0 --steps 40 --noise "$root/noise/examples/patterns.yaml:no_such_pattern" \
    --out "$tmp/nonoise" >"$tmp/stdout" 2>"$tmp/stderr"
check "noise that fails stops the experiment (exit 1), naming the noise's output" bash -c \
    "test $? -eq 1 && grep -q 'noise rank 0 ended before the trainer' '$tmp/stderr'"
check "... and leaves no job and no run behind" nothing_left

# SIGINT while the trainer runs: the experiment stops its runs, releases its jobs, exits 1.
"$cosched" --socket "$sock" experiment --design runs --reps 1 --warmup 0 --trainer 'sleep 60' --out "$tmp/int" \
    >"$tmp/stdout" 2>"$tmp/stderr" &
exp_pid=$!
trainer_sleeps() { c --json run list | jq -e '[.runs[] | select(.state == "running" and .argv[2] == "sleep 60")] | length == 1'; }
if wait_for 60 trainer_sleeps; then
    kill -INT "$exp_pid"
    wait "$exp_pid"
    check "SIGINT ends the experiment with exit 1, saying so" bash -c "test $? -eq 1 && grep -q 'interrupted by signal 2' '$tmp/stderr'"
else
    kill -INT "$exp_pid"
    wait "$exp_pid"
    not_ok "SIGINT ends the experiment with exit 1, saying so (its trainer did not start within 60 s)" "$(cat "$tmp/stderr")"
fi
check "... and its job is released, its run stopped" wait_nothing_left

# --guard adds the guarded configuration, its baseline the shared placement's solo steps.
# With --trace, the whole experiment on one timeline.
log_mark=$(wc -l <"$tmp/daemon.log")
c experiment --design runs --reps 1 --warmup 0 --steps 4 --batch 8 --guard --budget 0.1 --out "$tmp/guard" \
    --trace "$tmp/trace.json" >"$tmp/stdout" 2>"$tmp/stderr"
check "--guard adds shared+noise+guard, compared with shared" bash -c "test $? -eq 0 && jq -e \
    '.configurations[4] | .name == \"shared+noise+guard\" and .guard and .slowdown.against == \"shared\"' '$tmp/guard/summary.json'"
check "--trace names the trace it wrote" grep -q "^Trace: $tmp/trace.json" "$tmp/stdout"
python3 "$here/trace_check.py" "$tmp/trace.json" >"$tmp/trace-summary.json" 2>"$tmp/trace-check.err"
check "the trace is valid Trace Event Format (tests/client/trace_check.py)" bash -c "test $? -eq 0" ||
    sed 's/^/# /' "$tmp/trace-check.err"
check "a process for the experiment, each trainer rank, each noise worker and the guard" jq_ok \
    '.processes == ["coschedd guard", "experiment", "noise worker 0", "trainer rank 0"]' "$tmp/trace-summary.json"
check "a slice per repetition, in the order they ran" jq_ok '.repetitions == ["exclusive #1", "exclusive+noise #1",
    "shared #1", "shared+noise #1", "shared+noise+guard #1"]' "$tmp/trace-summary.json"
check "the trainer's phases, from every repetition" jq_ok '(.phases["trainer rank 0"] | contains(["allreduce",
    "backward", "data", "forward", "update"])) and (.repetitions_seen["trainer rank 0"] | length == 5)' \
    "$tmp/trace-summary.json"
check "the noise worker's phases from the three noisy repetitions, and its bandwidth" jq_ok \
    '.phases["noise worker 0"] == ["noise"] and (.repetitions_seen["noise worker 0"] | length == 3) and
     (.counters | index([["noise worker 0", "bandwidth"]]) != null)' "$tmp/trace-summary.json"
# Each trainer ran after the previous repetition's trainer ended and before the next one's
# started: its phases, moved from its own clock's origin, must lie in that gap.
check "each repetition's trainer phases lie between its neighbours' slices" python3 - "$tmp/trace.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
slices = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events if e["ph"] == "X" and e["pid"] == 1)
for i, (start, end, name) in enumerate(slices):
    lo = slices[i - 1][1] if i else float("-inf")
    hi = slices[i + 1][0] if i + 1 < len(slices) else float("inf")
    mine = [e for e in events if e["ph"] == "X" and e["pid"] == 100 and e["args"]["repetition"] == name]
    assert mine and all(lo <= e["ts"] and e["ts"] + e["dur"] <= hi for e in mine), name
PY
# The experiment reads a repetition's share changes from the daemon once its runs have ended; the
# daemon's log goes on until the job is released. So the trace holds the log's first changes, in
# order, and none the log lacks.
tail -n +"$((log_mark + 1))" "$tmp/daemon.log" | sed -n 's/.*guard: co-tenant exp-[0-9]*-[0-9]*-noise \(share [0-9.]* -> [0-9.]*\).*/\1/p' \
    >"$tmp/share-changes.txt"
check "an instant event for each share change the daemon made ($(wc -l <"$tmp/share-changes.txt") logged), and the share as a counter" \
    python3 - "$tmp/trace-summary.json" "$tmp/share-changes.txt" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
logged = open(sys.argv[2]).read().split("\n")[:-1]
instants = summary["instants"]
assert instants == logged[:len(instants)], (instants, logged)
assert ["coschedd guard", "co-tenant share"] in summary["counters"], summary["counters"]
PY
engine=${COSCHED_TRACE_ENGINE:-$root/build/npm/node_modules/@paulirish/trace_engine}
if [ -f "$engine/analyze-trace.mjs" ]; then
    node "$here/trace_load.mjs" "$engine" "$tmp/trace.json" >"$tmp/trace-engine.json" 2>"$tmp/trace-engine.err"
    check "Chrome DevTools' trace engine loads it: its four processes, its time span" bash -c "test $? -eq 0 && jq -e \
        --slurpfile s '$tmp/trace-summary.json' '.processes == \$s[0].processes and .bounds.min <= \$s[0].slices[0][0]
        and .bounds.max >= \$s[0].slices[-1][1]' '$tmp/trace-engine.json' >/dev/null" || sed 's/^/# /' "$tmp/trace-engine.err"
else
    ok "# SKIP Chrome DevTools' trace engine is not installed (tests/run.sh installs it from npm)"
fi
stop_daemon
start_experiment_daemon false || not_ok "the daemon starts with its guard off"
c experiment --design runs --guard --out "$tmp/noguard" >"$tmp/stdout" 2>"$tmp/stderr"
check "--guard is refused when the daemon's guard is off, before any run" bash -c \
    "test $? -eq 1 && grep -q 'guard is off' '$tmp/stderr' && ! test -e '$tmp/noguard/runs.csv'"
stop_daemon
c experiment --design runs --reps 1 --warmup 0 --out "$tmp/down" >"$tmp/stdout" 2>"$tmp/stderr"
check "with coschedd down: exit 3, naming the socket" bash -c "test $? -eq 3 && grep -q '$sock' '$tmp/stderr'"

# --sweep intensity: no noise, then duty cycles 0.1 .. 1.0 passed to the noise; the answer named.
start_experiment_daemon true || not_ok "the daemon starts again"
c experiment --design runs --sweep intensity --reps 2 --warmup 0 --steps 3 --batch 8 --out "$tmp/sweep" >"$tmp/stdout" 2>"$tmp/stderr"
check "--sweep intensity exits 0 with 11 settings of 2 repetitions" bash -c \
    "test $? -eq 0 && test \$(grep -c '^intensity\|^no noise' '$tmp/stdout') -eq 11 && test \$(wc -l < '$tmp/sweep/runs.csv') -eq 23"
check "each noise run got its setting's --intensity" bash -c "c() { '$cosched' --socket '$sock' \"\$@\"; }; c --json run list |
    jq -e '[.runs[] | select(.argv[1] == \"stream\") | .argv[-1]] | unique == [\"0.100\",\"0.200\",\"0.300\",\"0.400\",\"0.500\",\"0.600\",\"0.700\",\"0.800\",\"0.900\",\"86400\"]' >/dev/null"
check "the sweep names its largest setting within the budget, or says there is none" bash -c \
    "grep -q 'Largest setting within the 5.0 % budget: \(between \)\?\(intensity\|no noise\)\|None proven within the 5.0 % budget' '$tmp/stdout' &&
     jq -e '.sweep.kind == \"intensity\" and (.sweep.largest_within_budget == null or (.sweep.largest_within_budget | startswith(\"intensity \")))' '$tmp/sweep/summary.json' >/dev/null"
check "the sweep's curve is drawn (sweep.png, sweep.svg) from 11 points" bash -c \
    "test -s '$tmp/sweep/sweep.png' && test -s '$tmp/sweep/sweep.svg' && test \$(grep -c '^[0-9]' '$tmp/sweep/sweep.dat') -eq 11"
check "after the sweep every job is released and every run has ended" nothing_left
stop_daemon

# --dry-run on the JUWELS Booster file: the study's two mappings, GPU 0 on NUMA 3 (CPUs 18-23).
"$cosched" experiment --dry-run --topology "$root/tests/topologies/juwels-booster.xml" >"$tmp/stdout" 2>&1
check "--dry-run: exclusive keeps the noise off the GPU's NUMA domain" grep -q \
    '^  exclusive+noise  *trainer CPUs 18-23, noise CPUs 0-17,24-47, isolation numa' "$tmp/stdout"
check "--dry-run: shared splits every domain, its halves whole L3s" grep -q '^  shared+noise  .*isolation l3' "$tmp/stdout"

"$cosched" experiment --dry-run --sweep threads --topology "$root/tests/topologies/juwels-booster.xml" >"$tmp/stdout" 2>&1
check "--dry-run --sweep threads: the shared placement's 24 noise cores in 15 settings after no noise" bash -c \
    "grep -q '^Settings (in blocks, each paired with no noise): no noise, 1 thread, 3 threads, .*, 22 threads, 24 threads\$' '$tmp/stdout'"

for bad in "--reps 0" "--steps x" "--noise disk" "--budget -1" "--topology x.xml" "stray" \
    "--sweep power" "--placement l3" "--sweep intensity --guard" "--dry-run --trace t.json"; do
    # shellcheck disable=SC2086 # the options split on purpose
    "$cosched" experiment $bad >/dev/null 2>"$tmp/stderr"
    check "'experiment $bad' is a usage error (exit 2) with a message" bash -c "test $? -eq 2 && test -s '$tmp/stderr'"
done
"$cosched" experiment --design runs --noise "$tmp/none.yaml:p" >/dev/null 2>"$tmp/stderr"
check "a pattern file that cannot be read is refused, named" bash -c "test $? -eq 1 && grep -q none.yaml '$tmp/stderr'"
"$cosched" experiment --out "$tmp/tr" --trace "$tmp/no/such/dir/t.json" >/dev/null 2>"$tmp/stderr"
check "a --trace that cannot be written is refused before any run, named" bash -c \
    "test $? -eq 1 && grep -q 'cannot write --trace $tmp/no/such/dir/t.json' '$tmp/stderr' && ! test -e '$tmp/tr/runs.csv'"
check "--help describes the method" bash -c "'$cosched' experiment --help | grep -q \"Welch's t\""
finish
