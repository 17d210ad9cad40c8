#!/bin/bash
# test_progress: noise prints "progress" lines every --report-every seconds with the bytes
# and ops since the previous line, whose sum never exceeds the phase line's totals; 0 turns
# them off, bad values are refused. Counts of lines are loose: the test VM is loaded.
set -u
NOISE=${1:?usage: test_progress.sh PATH-TO-cosched-noise}
. "$(dirname "$0")/tap.sh"
# Every line the filter selects must be true, and there must be one at least.
jqe() { jq -e -s "[.[] | $1] | length > 0 and all" "$2" > /dev/null; }
# The filter, on the array of all lines, must be true.
jqs() { jq -e -s "$1" "$2" > /dev/null; }
count() { jq -s "[.[] | select(.event==\"$1\")] | length" "$2"; }
# The rule of docs/noise-output.md: increments add up to at most the phase total.
sums_within_phase() {
    jq -e -s '([.[] | select(.event=="progress")] | [(map(.bytes) | add), (map(.ops) | add)]) as [$b, $o]
              | [.[] | select(.event=="phase")][0] | $b <= .bytes and $o <= .ops' "$1" > /dev/null
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$NOISE" stream --help > "$T/h" 2>&1
check "--help lists --report-every" grep -q -- "--report-every" "$T/h"

# stream: 2.5 s at 0.5 s is 4 lines when the reporting thread is never late.
"$NOISE" stream --duration 2.5 --report-every 0.5 --array-size 4M --threads 2 > "$T/s" 2> "$T/e"; rc=$?
check "stream noise with --report-every 0.5 exits 0" test $rc -eq 0
got=$(count progress "$T/s")
check "stream prints at least 3 progress lines in 2.5 s ($got)" test "$got" -ge 3
check "progress lines carry the documented keys" jqe 'select(.event=="progress") | . as $l | ["event","mode","phase","elapsed","time","bytes","rate_mbs","ops"] | all(. as $k | $l | has($k))' "$T/s"
check "progress lines name the mode and phase" jqe 'select(.event=="progress") | .mode == "stream" and .phase == "noise"' "$T/s"
check "stream progress lines move bytes" jqe 'select(.event=="progress") | .bytes > 0 and .ops > 0 and .rate_mbs > 0' "$T/s"
check "time is the wall clock's, from the phase's start on" jqs '(map(select(.event=="phase"))[0].start) as $s | [.[] | select(.event=="progress") | .time] | . == sort and .[0] > $s and .[-1] < $s + 2.5' "$T/s"
check "elapsed grows from line to line" jqs '[.[] | select(.event=="progress") | .elapsed] | . == sort and (.[0] > 0) and (.[-1] < 2.5)' "$T/s"
check "progress bytes and ops sum to at most the phase totals" sums_within_phase "$T/s"
check "progress lines come before the phase line" jqs '(map(.event) | rindex("progress")) < (map(.event) | index("phase"))' "$T/s"
check "the phase line records report_every" jqe 'select(.event=="phase") | .config.report_every == 0.5' "$T/s"

"$NOISE" stream --duration 1.2 --report-every 0 --array-size 4M --threads 2 > "$T/o" 2> "$T/e"; rc=$?
check "--report-every 0 prints no progress line" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$T/o') -eq 0 && grep -q '\"event\":\"phase\"' '$T/o'"

"$NOISE" busy --duration 2.2 --threads 1 > "$T/o" 2> "$T/e"; rc=$?
check "as noise, progress lines are on by default (1 s)" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$T/o') -ge 1"

"$NOISE" stream --array-size 64k --ntimes 3 --report-every 0.1 > "$T/o" 2> "$T/e"; rc=$?
check "a measured benchmark prints no progress line" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$T/o') -eq 0"
check "a measured benchmark records report_every 0" jqe 'select(.event=="phase") | .config.report_every == 0' "$T/o"

for bad in 0.05 -1 3601 x ""; do
    "$NOISE" busy --duration 1 --report-every "$bad" > "$T/o" 2> "$T/e"; rc=$?
    check "--report-every '$bad' is refused with exit 2 naming it" bash -c "test $rc -eq 2 && grep -q report-every '$T/e' && test ! -s '$T/o'"
done

"$NOISE" busy --duration 2.5 --report-every 0.5 --threads 1 > "$T/b" 2> "$T/e"; rc=$?
got=$(count progress "$T/b")
check "busy prints at least 2 progress lines in 2.5 s ($got)" bash -c "test $rc -eq 0 && test $got -ge 2"
check "busy progress counts spin units, no bytes" jqe 'select(.event=="progress") | .mode == "busy" and .bytes == 0 and .ops > 0' "$T/b"
check "busy progress ops sum to at most the phase ops" sums_within_phase "$T/b"

mkdir -p "$T/dir"
"$NOISE" ior --dir "$T/dir" --duration 2.5 --report-every 0.5 --block 2M --transfer 256k --threads 2 --max-bytes 4M \
    > "$T/i" 2> "$T/e"; rc=$?
got=$(count progress "$T/i")
check "ior prints at least 2 progress lines in 2.5 s ($got)" bash -c "test $rc -eq 0 && test $got -ge 2"
check "ior progress counts bytes in whole transfers" jqe 'select(.event=="progress") | .mode == "ior" and .bytes == .ops * 262144' "$T/i"
check "ior progress bytes sum to at most the phase bytes" sums_within_phase "$T/i"

# Patterns: a config set may set it; lines carry the step, idle steps report too.
cat > "$T/p.yaml" << 'Y'
busy:
  chatty: {report_every: 0.3}
patterns:
  p:
    - {mode: busy, config: chatty, seconds: 1.5}
    - {mode: idle, seconds: 1.5}
Y
"$NOISE" pattern --config "$T/p.yaml" p --report-every 0.5 --threads 1 > "$T/p" 2> "$T/e"; rc=$?
check "a pattern with progress runs" test $rc -eq 0
check "a config set's report_every applies to its step" bash -c "test \$(jq -s '[.[] | select(.event==\"progress\" and .step==0)] | length' '$T/p') -ge 2"
check "idle steps report too, with the step index" jqe 'select(.event=="progress" and .mode=="idle") | .step == 1 and .bytes == 0' "$T/p"

# SIGTERM while reporting: the reporter does not keep the worker alive.
"$NOISE" stream --duration 60 --report-every 0.2 --array-size 4M > "$T/o" 2> "$T/e" &
pid=$!
for _ in $(seq 100); do grep -q '"event":"progress"' "$T/o" 2> /dev/null && break; sleep 0.1; done
kill -TERM $pid 2> /dev/null
for _ in $(seq 100); do kill -0 $pid 2> /dev/null || break; sleep 0.1; done
kill -0 $pid 2> /dev/null && kill -KILL $pid
wait $pid; rc=$?
check "SIGTERM stops a reporting run with exit 0 and a summary" bash -c "test $rc -eq 0 && tail -n 1 '$T/o' | jq -e '.status == \"stopped\"' > /dev/null"
check "after SIGTERM the increments still sum to at most the phase total" sums_within_phase "$T/o"

done_testing
