#!/bin/bash
# test_progress: noise prints "progress" lines every --report-every seconds with the bytes
# and ops since the previous line, whose sum never exceeds the phase line's totals; 0 turns
# them off, bad values are refused. No count of lines in a time decides anything: a run goes
# until it has printed a line and is then stopped, and its lines must be consistent (on the
# grid, adding up); test_progress_poll.c checks the exact lines on synthetic times.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/noise_lib.sh"
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

# Noise for up to a minute, stopped (SIGTERM) once a progress line with work in it is out: the
# state the checks need, reached as soon as the machine allows.
until_progress() { # OUT ARGS...
    local out=$1; shift
    "$noise" "$@" --duration 60 > "$out" 2> "$tmp/e" &
    local pid=$!
    wait_for 60 has_line "$out" '.event=="progress" and .ops > 0' ||
        not_ok "$1 prints a progress line with work in it within 60 s"
    stop_and_reap $pid TERM || not_ok "SIGTERM stops $1 within 60 s"
}

"$noise" stream --help > "$tmp/h" 2>&1
check "--help lists --report-every" grep -q -- "--report-every" "$tmp/h"

until_progress "$tmp/s" stream --report-every 0.5 --array-size 4M --threads 2
check "stream noise with --report-every 0.5 exits 0 when stopped" test $rc -eq 0
check "progress lines carry the documented keys" jqe 'select(.event=="progress") | . as $l | ["event","mode","phase","elapsed","time","bytes","rate_mbs","ops"] | all(. as $k | $l | has($k))' "$tmp/s"
check "progress lines name the mode and phase" jqe 'select(.event=="progress") | .mode == "stream" and .phase == "noise"' "$tmp/s"
check "stream progress lines move bytes with their passes" jqs '[.[] | select(.event=="progress")] | any(.bytes > 0 and .rate_mbs > 0) and all((.bytes > 0) == (.ops > 0))' "$tmp/s"
check "time is the wall clock's, from the phase's start on" jqs '(map(select(.event=="phase"))[0].start) as $s | [.[] | select(.event=="progress") | .time] | . == sort and .[0] > $s' "$tmp/s"
check "progress lines fall on the 0.5 s grid, one per interval at most, rates over their interval" on_the_grid "$tmp/s" 0.5
check "progress bytes and ops sum to at most the phase totals" sums_within_phase "$tmp/s"
check "progress lines come before the phase line" jqs '(map(.event) | rindex("progress")) < (map(.event) | index("phase"))' "$tmp/s"
check "the phase line records report_every" jqe 'select(.event=="phase") | .config.report_every == 0.5' "$tmp/s"

"$noise" stream --duration 1.2 --report-every 0 --array-size 4M --threads 2 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "--report-every 0 prints no progress line" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$tmp/o') -eq 0 && grep -q '\"event\":\"phase\"' '$tmp/o'"

until_progress "$tmp/o" busy --threads 1
check "as noise, progress lines are on by default (1 s)" bash -c "test $rc -eq 0 && jq -e -s '[.[] | select(.event==\"phase\")][0].config.report_every == 1' '$tmp/o' > /dev/null"
check "default progress lines fall on the 1 s grid" on_the_grid "$tmp/o" 1

"$noise" stream --array-size 64k --ntimes 3 --report-every 0.1 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "a measured benchmark prints no progress line" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"progress\")] | length' '$tmp/o') -eq 0"
check "a measured benchmark records report_every 0" jqe 'select(.event=="phase") | .config.report_every == 0' "$tmp/o"

for bad in 0.05 -1 3601 x ""; do
    "$noise" busy --duration 1 --report-every "$bad" > "$tmp/o" 2> "$tmp/e"; rc=$?
    check "--report-every '$bad' is refused with exit 2 naming it" bash -c "test $rc -eq 2 && grep -q report-every '$tmp/e' && test ! -s '$tmp/o'"
done

until_progress "$tmp/b" busy --report-every 0.5 --threads 1
check "busy noise with --report-every 0.5 exits 0 when stopped" test $rc -eq 0
check "busy progress counts spin units, no bytes" jqe 'select(.event=="progress") | .mode == "busy" and .bytes == 0 and .ops >= 0' "$tmp/b"
check "busy progress lines fall on the 0.5 s grid" on_the_grid "$tmp/b" 0.5
check "busy progress ops sum to at most the phase ops" sums_within_phase "$tmp/b"

mkdir -p "$tmp/dir"
until_progress "$tmp/i" ior --dir "$tmp/dir" --report-every 0.5 --block 2M --transfer 256k --threads 2 --max-bytes 4M
check "ior noise with --report-every 0.5 exits 0 when stopped" test $rc -eq 0
check "ior progress counts bytes in whole transfers" jqe 'select(.event=="progress") | .mode == "ior" and .bytes == .ops * 262144' "$tmp/i"
check "ior progress lines fall on the 0.5 s grid" on_the_grid "$tmp/i" 0.5
check "ior progress bytes sum to at most the phase bytes" sums_within_phase "$tmp/i"

# Patterns: a config set may set it; lines carry the step, idle steps report too. The steps
# repeat until a busy and an idle one have each printed a line.
cat > "$tmp/p.yaml" << 'Y'
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
"$noise" pattern --config "$tmp/p.yaml" p --report-every 0.5 --threads 1 > "$tmp/p" 2> "$tmp/e" &
pid=$!
wait_for 60 both_steps_reported "$tmp/p"
check "a busy and an idle step both print progress lines" both_steps_reported "$tmp/p"
stop_and_reap $pid TERM
check "a pattern with progress runs, and stops on SIGTERM with exit 0" test $rc -eq 0
check "a config set's report_every applies to its step, the command line's to the others" jqe 'select(.event=="phase") | .config.report_every == (if .mode == "busy" then 0.25 else 0.5 end)' "$tmp/p"
check "progress lines carry the step of their phase line" jqs '[.[] | select(.event=="phase") | {(.step | tostring): .mode}] | add as $m | [.[] | select(.event=="progress")] | all($m[.step | tostring] == .mode)' "$tmp/p"
check "idle steps report too, with no bytes" jqe 'select(.event=="progress" and .mode=="idle") | .step % 2 == 1 and .bytes == 0' "$tmp/p"

# SIGTERM while reporting: the reporter does not keep the worker alive.
"$noise" stream --duration 60 --report-every 0.25 --array-size 4M > "$tmp/o" 2> "$tmp/e" &
pid=$!
wait_for 60 has_line "$tmp/o" '.event=="progress"' || not_ok "a progress line within 60 s"
stop_and_reap $pid TERM
check "SIGTERM stops a reporting run with exit 0 and a summary" bash -c "test $rc -eq 0 && tail -n 1 '$tmp/o' | jq -e '.status == \"stopped\"' > /dev/null"
check "after SIGTERM the increments still sum to at most the phase total" sums_within_phase "$tmp/o"

finish
