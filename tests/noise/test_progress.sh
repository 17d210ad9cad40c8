#!/bin/bash
# test_progress: noise prints "progress" lines every --report-every seconds with the bytes
# and ops since the previous line, whose sum never exceeds the phase line's totals; 0 turns
# them off, bad values are refused. No count of lines in a time decides anything: a run goes
# until it has printed a line and is then stopped, and its lines must be consistent (on the
# grid, adding up); test_progress_poll.c checks the exact lines on synthetic times.
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
# Lines fall due on a grid from the phase start: each line is at or past its grid point, no two in
# one interval of EVERY seconds, and the rate is the bytes over the time since the line before.
# (EVERY a binary fraction, so grid points are exact.)
on_the_grid() { # FILE EVERY
    jq -e -s --argjson r "$2" '[.[] | select(.event=="progress")] as $l | ($l | length) > 0 and
        ([$l[] | .elapsed / $r | floor] as $k | $k[0] >= 1 and all(range(1; $k | length); $k[.] > $k[. - 1])) and
        all(range($l | length); . as $i | ($l[$i].elapsed - (if $i == 0 then 0 else $l[$i - 1].elapsed end)) as $dt
            | ($l[$i].rate_mbs - $l[$i].bytes / $dt / 1e6 | fabs) <= 1e-6 * ($l[$i].rate_mbs + 1))' "$1" > /dev/null
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Noise for up to a minute, stopped (SIGTERM) once a progress line with work in it is out: the
# state the checks need, reached as soon as the machine allows.
until_progress() { # OUT ARGS...
    local out=$1; shift
    "$NOISE" "$@" --duration 60 > "$out" 2> "$T/e" &
    local pid=$!
    wait_until has_line "$out" '.event=="progress" and .ops > 0' ||
        fail "$1 prints a progress line with work in it within $WAIT_S s"
    stop_and_reap $pid TERM || fail "SIGTERM stops $1 within $WAIT_S s"
}

"$NOISE" stream --help > "$T/h" 2>&1
check "--help lists --report-every" grep -q -- "--report-every" "$T/h"

until_progress "$T/s" stream --report-every 0.5 --array-size 4M --threads 2
check "stream noise with --report-every 0.5 exits 0 when stopped" test $rc -eq 0
check "progress lines carry the documented keys" jqe 'select(.event=="progress") | . as $l | ["event","mode","phase","elapsed","time","bytes","rate_mbs","ops"] | all(. as $k | $l | has($k))' "$T/s"
check "progress lines name the mode and phase" jqe 'select(.event=="progress") | .mode == "stream" and .phase == "noise"' "$T/s"
check "stream progress lines move bytes with their passes" jqs '[.[] | select(.event=="progress")] | any(.bytes > 0 and .rate_mbs > 0) and all((.bytes > 0) == (.ops > 0))' "$T/s"
check "time is the wall clock's, from the phase's start on" jqs '(map(select(.event=="phase"))[0].start) as $s | [.[] | select(.event=="progress") | .time] | . == sort and .[0] > $s' "$T/s"
check "progress lines fall on the 0.5 s grid, one per interval at most, rates over their interval" on_the_grid "$T/s" 0.5
check "progress bytes and ops sum to at most the phase totals" sums_within_phase "$T/s"
check "progress lines come before the phase line" jqs '(map(.event) | rindex("progress")) < (map(.event) | index("phase"))' "$T/s"
check "the phase line records report_every" jqe 'select(.event=="phase") | .config.report_every == 0.5' "$T/s"

"$NOISE" stream --duration 1.2 --report-every 0 --array-size 4M --threads 2 > "$T/o" 2> "$T/e"; rc=$?
check "--report-every 0 prints no progress line" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$T/o') -eq 0 && grep -q '\"event\":\"phase\"' '$T/o'"

until_progress "$T/o" busy --threads 1
check "as noise, progress lines are on by default (1 s)" bash -c "test $rc -eq 0 && jq -e -s '[.[] | select(.event==\"phase\")][0].config.report_every == 1' '$T/o' > /dev/null"
check "default progress lines fall on the 1 s grid" on_the_grid "$T/o" 1

"$NOISE" stream --array-size 64k --ntimes 3 --report-every 0.1 > "$T/o" 2> "$T/e"; rc=$?
check "a measured benchmark prints no progress line" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$T/o') -eq 0"
check "a measured benchmark records report_every 0" jqe 'select(.event=="phase") | .config.report_every == 0' "$T/o"

for bad in 0.05 -1 3601 x ""; do
    "$NOISE" busy --duration 1 --report-every "$bad" > "$T/o" 2> "$T/e"; rc=$?
    check "--report-every '$bad' is refused with exit 2 naming it" bash -c "test $rc -eq 2 && grep -q report-every '$T/e' && test ! -s '$T/o'"
done

until_progress "$T/b" busy --report-every 0.5 --threads 1
check "busy noise with --report-every 0.5 exits 0 when stopped" test $rc -eq 0
check "busy progress counts spin units, no bytes" jqe 'select(.event=="progress") | .mode == "busy" and .bytes == 0 and .ops >= 0' "$T/b"
check "busy progress lines fall on the 0.5 s grid" on_the_grid "$T/b" 0.5
check "busy progress ops sum to at most the phase ops" sums_within_phase "$T/b"

mkdir -p "$T/dir"
until_progress "$T/i" ior --dir "$T/dir" --report-every 0.5 --block 2M --transfer 256k --threads 2 --max-bytes 4M
check "ior noise with --report-every 0.5 exits 0 when stopped" test $rc -eq 0
check "ior progress counts bytes in whole transfers" jqe 'select(.event=="progress") | .mode == "ior" and .bytes == .ops * 262144' "$T/i"
check "ior progress lines fall on the 0.5 s grid" on_the_grid "$T/i" 0.5
check "ior progress bytes sum to at most the phase bytes" sums_within_phase "$T/i"

# Patterns: a config set may set it; lines carry the step, idle steps report too. The steps
# repeat until a busy and an idle one have each printed a line.
cat > "$T/p.yaml" << 'Y'
busy:
  chatty: {report_every: 0.25}
patterns:
  p:
    repeat: forever
    sequence:
      - {mode: busy, config: chatty, seconds: 2}
      - {mode: idle, seconds: 2}
Y
both_steps_reported() { has_line "$1" '.event=="progress" and .mode=="busy"' && has_line "$1" '.event=="progress" and .mode=="idle"'; }
"$NOISE" pattern --config "$T/p.yaml" p --report-every 0.5 --threads 1 > "$T/p" 2> "$T/e" &
pid=$!
wait_until both_steps_reported "$T/p"
check "a busy and an idle step both print progress lines" both_steps_reported "$T/p"
stop_and_reap $pid TERM
check "a pattern with progress runs, and stops on SIGTERM with exit 0" test $rc -eq 0
check "a config set's report_every applies to its step, the command line's to the others" jqe 'select(.event=="phase") | .config.report_every == (if .mode == "busy" then 0.25 else 0.5 end)' "$T/p"
check "progress lines carry the step of their phase line" jqs '[.[] | select(.event=="phase") | {(.step | tostring): .mode}] | add as $m | [.[] | select(.event=="progress")] | all($m[.step | tostring] == .mode)' "$T/p"
check "idle steps report too, with no bytes" jqe 'select(.event=="progress" and .mode=="idle") | .step % 2 == 1 and .bytes == 0' "$T/p"

# SIGTERM while reporting: the reporter does not keep the worker alive.
"$NOISE" stream --duration 60 --report-every 0.25 --array-size 4M > "$T/o" 2> "$T/e" &
pid=$!
wait_until has_line "$T/o" '.event=="progress"' || fail "a progress line within $WAIT_S s"
stop_and_reap $pid TERM
check "SIGTERM stops a reporting run with exit 0 and a summary" bash -c "test $rc -eq 0 && tail -n 1 '$T/o' | jq -e '.status == \"stopped\"' > /dev/null"
check "after SIGTERM the increments still sum to at most the phase total" sums_within_phase "$T/o"

done_testing
