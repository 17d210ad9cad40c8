#!/bin/bash
# test_cli: cosched-noise as users and the daemon see it: help, refusals, JSON lines,
# STREAM byte counts by hand, binding reports, patterns end to end and SIGTERM.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/noise_lib.sh"

# --help everywhere
"$noise" --help > "$tmp/h" 2>&1 && grep -q "usage: cosched-noise MODE" "$tmp/h"; check "--help prints usage and exits 0" test $? -eq 0
for m in stream:array-size ior:max-bytes pingpong:window busy:intensity idle:duration pattern:config; do
    mode=${m%%:*} opt=${m#*:}
    "$noise" "$mode" --help > "$tmp/h" 2>&1 && grep -q -- "--$opt" "$tmp/h"
    check "$mode --help lists --$opt" test $? -eq 0
done

# refusals: exit != 0, a message naming the problem, nothing on stdout
"$noise" strem > "$tmp/o" 2> "$tmp/e"; rc=$?
check "unknown mode is refused" test $rc -ne 0 -a ! -s "$tmp/o"
check "unknown mode is named" grep -q "strem" "$tmp/e"
"$noise" stream --array-mb lots > "$tmp/o" 2> "$tmp/e"; rc=$?
check "bad value is refused naming the option" bash -c "test $rc -ne 0 && grep -q array-mb '$tmp/e' && test ! -s '$tmp/o'"
"$noise" stream --intensity 2 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "intensity above 1 is refused" bash -c "test $rc -ne 0 && grep -q intensity '$tmp/e'"
"$noise" busy > "$tmp/o" 2> "$tmp/e"; rc=$?
check "busy without --duration is refused" bash -c "test $rc -ne 0 && grep -q duration '$tmp/e'"
"$noise" busy --duration 0.1 --cpus 0-x > "$tmp/o" 2> "$tmp/e"; rc=$?
check "bad --cpus list is refused" bash -c "test $rc -ne 0 && grep -q -- '--cpus' '$tmp/e'"
"$noise" busy --duration 0.1 --mems 63 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "--mems on a missing NUMA domain is refused" bash -c "test $rc -ne 0 && grep -q 'numa 63' '$tmp/e'"

# STREAM benchmark on a tiny array: 4096 bytes = 512 doubles, 3 passes.
"$noise" stream --array-size 4096 --ntimes 3 --threads 2 > "$tmp/s" 2> "$tmp/e"; rc=$?
check "tiny stream benchmark exits 0" test $rc -eq 0
check "every output line is JSON" jqe . "$tmp/s"
check "four kernels reported and validated" test "$(jq -s '[.[] | select(.event=="result" and .validated==true)] | length' "$tmp/s")" = 4
# By hand: copy and scale move 2 x 8 x 512 = 8192 bytes per pass, add and triad 3 x 8 x 512 = 12288.
check "copy counts 8192 bytes per pass" jqe 'select(.kernel=="copy") | .bytes_per_pass == 8192' "$tmp/s"
check "triad counts 12288 bytes per pass" jqe 'select(.kernel=="triad") | .bytes_per_pass == 12288' "$tmp/s"
# All passes: (8192 + 8192 + 12288 + 12288) x 3 = 122880.
check "benchmark phase counts 122880 bytes" jqe 'select(.event=="phase") | .bytes == 122880' "$tmp/s"
check "first pass not counted" test "$(jq -r 'select(.kernel=="add") | .passes_counted' "$tmp/s")" = 2
check "labelled a STREAM variant" test "$(jq -r 'select(.kernel=="add") | .variant | test("STREAM variant")' "$tmp/s")" = true
# Passes shared out in 256 KiB shares: 8 MiB arrays give each of 2 threads 16 shares, the
# other can take; 3 threads on a 1 KiB part each (less than a share) and more threads than
# this machine has CPUs (the spinning barrier must yield). Every element must still be right.
"$noise" stream --array-size 8M --ntimes 4 --threads 2 > "$tmp/s2" 2> "$tmp/e"; rc=$?
check "shared passes validate (2 threads, 8 MiB)" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"result\" and .validated==true)] | length' '$tmp/s2') = 4"
"$noise" stream --array-size 3072 --ntimes 3 --threads $(( $(nproc) + 1 )) > "$tmp/s3" 2> "$tmp/e"; rc=$?
check "more threads than CPUs, parts under a share: validated" bash -c "test $rc -eq 0 && test \$(jq -s '[.[] | select(.event==\"result\" and .validated==true)] | length' '$tmp/s3') = 4"
isa=null
if grep -qw avx512f /proc/cpuinfo; then isa='"avx512f"'; elif grep -qw avx2 /proc/cpuinfo; then isa='"avx2"'; elif [ "$(uname -m)" = x86_64 ]; then isa='"sse2"'; fi
check "streaming stores of the widest vector this CPU has ($isa)" jqe "select(.event==\"result\") | .store_isa == $isa" "$tmp/s"
"$noise" stream --array-size 4096 --ntimes 3 --no-streaming-stores > "$tmp/s4" 2> "$tmp/e"
check "--no-streaming-stores reports none" jqe 'select(.event=="result") | .store_isa == null and .validated' "$tmp/s4"
# The documented schema (docs/noise-output.md): the daemon relies on these keys.
check "start line carries the documented keys" jqe 'select(.event=="start") | . as $l | .schema == 1 and (["mode","tool","version","config","start","pid","host","nranks","cpus","mems"] | all(. as $k | $l | has($k)))' "$tmp/s"
check "phase line carries the documented keys" jqe 'select(.event=="phase") | . as $l | ["mode","phase","config_name","config","start","duration","bytes","ops","rate_mbs","rate_mibs","ops_per_s","cpu_seconds"] | all(. as $k | $l | has($k))' "$tmp/s"
check "summary line carries the documented keys" jqe 'select(.event=="summary") | . as $l | ["mode","status","signal","error","phases","duration","bytes","ops","rate_mbs","cpus","mems","cpus_used","numa_used","memory_numa"] | all(. as $k | $l | has($k))' "$tmp/s"
check "summary line ends the output" test "$(tail -n 1 "$tmp/s" | jq -r '.event + ":" + .status')" = summary:done

# Binding: one CPU asked, one CPU used.
"$noise" stream --duration 0.3 --array-size 1M --cpus 0 > "$tmp/b" 2> "$tmp/e"
check "--cpus 0 runs on cpu 0 only" test "$(tail -n 1 "$tmp/b" | jq -r '.cpus + "/" + .cpus_used')" = 0/0
check "--cpus reports the NUMA domain used" test "$(tail -n 1 "$tmp/b" | jq -r '.numa_used')" != ""
if command -v taskset > /dev/null; then
    taskset -c 0 "$noise" busy --duration 0.2 > "$tmp/b" 2> "$tmp/e"
    check "an inherited binding (taskset) is kept" test "$(tail -n 1 "$tmp/b" | jq -r '.cpus_used')" = 0
else
    skip "an inherited binding (taskset) is kept" "no taskset"
fi

"$noise" stream --duration 0.2 --array-size 1M --mems 0 > "$tmp/b" 2> "$tmp/e"; rc=$?
check "--mems 0 binds memory and pages are found on numa 0" bash -c "test $rc -eq 0 && tail -n 1 '$tmp/b' | jq -e '.mems == \"0\" and .memory_numa == \"0\"' > /dev/null"

# --output
"$noise" idle --duration 0.1 --output "$tmp/out.jsonl" > "$tmp/o" 2> "$tmp/e"
check "--output writes there, not to stdout" bash -c "test ! -s '$tmp/o' && test \$(wc -l < '$tmp/out.jsonl') -eq 3"

# A reader that goes away (| head) gets no SIGPIPE death: the worker stops and exits 0.
"$noise" busy --duration 0.3 2> "$tmp/e" | head -n 1 > /dev/null
rc=${PIPESTATUS[0]}
check "a closed stdout stops the worker cleanly (exit $rc)" test $rc -eq 0

# Patterns end to end.
cat > "$tmp/p.yaml" << 'Y'
busy:
  half: {intensity: 0.5}
patterns:
  short:
    repeat: 2
    sequence:
      - {mode: busy, config: half, seconds: 0.2}
      - {mode: idle, seconds: 0.1}
  endless:
    repeat: forever
    sequence: [{mode: busy, seconds: 0.3}, {mode: idle, seconds: 0.3}]
Y
"$noise" pattern --config "$tmp/p.yaml" short > "$tmp/o" 2> "$tmp/e"; rc=$?
check "pattern runs" test $rc -eq 0
check "pattern phases are the expanded steps" test "$(jq -r -s 'map(select(.event=="phase") | "\(.step):\(.mode):\(.config_name)") | join(" ")' "$tmp/o")" = "0:busy:half 1:idle:null 2:busy:half 3:idle:null"
check "config set applied to the step" test "$(jq -r 'select(.step==0) | .config.intensity' "$tmp/o")" = 0.5
"$noise" pattern --config "$tmp/p.yaml" > "$tmp/o" 2> "$tmp/e"
check "pattern without NAME lists the patterns" test "$(tr '\n' ' ' < "$tmp/o")" = "short endless "
"$noise" pattern --config "$tmp/p.yaml" nosuch > "$tmp/o" 2> "$tmp/e"; rc=$?
check "unknown pattern is refused, listing the known ones" bash -c "test $rc -ne 0 && grep -q 'short endless' '$tmp/e'"
printf 'patterns:\n  x:\n    - {mode: busy, seconds: 1}\n    - {mode: idle, secs: 1}\n' > "$tmp/bad.yaml"
"$noise" pattern --config "$tmp/bad.yaml" x > "$tmp/o" 2> "$tmp/e"; rc=$?
check "bad pattern file refused before anything runs" bash -c "test $rc -ne 0 && test ! -s '$tmp/o'"
check "bad pattern file message names line and column" grep -q "bad.yaml:4:20: unknown key 'secs'" "$tmp/e"
# How many steps fit in the 0.8 s depends on the machine (test_pattern.c counts them on a fake
# clock); here: it ends, done, with whole steps in the pattern's order and no more than 0.8 s asked.
"$noise" pattern --config "$tmp/p.yaml" endless --duration 0.8 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "--duration ends a forever pattern" bash -c "test $rc -eq 0 && tail -n 1 '$tmp/o' | jq -e '.status==\"done\" and .phases >= 1' > /dev/null"
capped_in_order() {
    jq -e -s '[.[] | select(.event=="phase")] |
        all(.mode == (if .step % 2 == 0 then "busy" else "idle" end) and .config.duration <= 0.3) and
        (map(.config.duration) | add) <= 0.8 + 1e-9' "$1" > /dev/null
}
check "the capped pattern plays its steps in order, within the 0.8 s" capped_in_order "$tmp/o"

# SIGTERM and SIGINT: stop, summary, exit 0. The signal comes once the stream runs (its first
# progress line is out); each wait is bounded (a minute: "it hangs") and ends with its state.
for sig in TERM INT; do
    "$noise" stream --duration 60 --report-every 0.25 --array-size 8M > "$tmp/o" 2> "$tmp/e" &
    pid=$!
    wait_for 60 has_line "$tmp/o" '.event=="progress"' || not_ok "stream noise prints a progress line within 60 s"
    if ! stop_and_reap $pid $sig; then
        not_ok "SIG$sig stops stream noise" "still running 60 s after SIG$sig"
        continue
    fi
    check "SIG$sig stops stream noise with exit 0" test $rc -eq 0
    check "SIG$sig summary says stopped by SIG$sig" test "$(tail -n 1 "$tmp/o" | jq -r '.status + ":" + .signal')" = "stopped:SIG$sig"
done

"$noise" pattern --config "$tmp/p.yaml" endless > "$tmp/o" 2> "$tmp/e" &
pid=$!
wait_for 60 has_line "$tmp/o" '.event=="phase"' || not_ok "a forever pattern ends its first step within 60 s"
stop_and_reap $pid TERM || not_ok "SIGTERM stops a forever pattern" "still running 60 s after SIGTERM"
check "SIGTERM stops a forever pattern with exit 0 and a summary" bash -c "test $rc -eq 0 && tail -n 1 '$tmp/o' | jq -e '.status == \"stopped\" and .pattern == \"endless\"' > /dev/null"

# Consecutive memory steps of a pattern stream from the arrays the first one allocated: one
# allocation of three 64 MiB arrays (mmap'd, as glibc does for sizes this large), not one per step.
printf 'memory:\n  m: {array_mb: 64}\npatterns:\n  mm:\n    repeat: 3\n    sequence:\n      - {mode: memory, config: m, seconds: 0.2}\n      - {mode: idle, seconds: 0.05}\n' > "$tmp/mm.yaml"
# (LeakSanitizer cannot work under ptrace: no leak check for this one run)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -e trace=mmap -o "$tmp/mm.strace" "$noise" pattern --config "$tmp/mm.yaml" mm --report-every 0 > "$tmp/o" 2> "$tmp/e"; rc=$?
big=$(grep -cE 'mmap\(NULL, (6[7-9]|[7-9][0-9])[0-9]{6},' "$tmp/mm.strace")
check "a pattern's memory steps share one allocation of their arrays ($big large mmaps for 3 steps)" \
    bash -c "test $rc -eq 0 && test $big -eq 3 && test \$(jq -s 'map(select(.event == \"phase\" and .mode == \"stream\")) | length' '$tmp/o') -eq 3"

finish
