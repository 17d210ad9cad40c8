#!/bin/bash
# test_pingpong: ping-pong under mpirun -np 2 (OSU-style sizes, latency and bandwidth),
# pair noise that ends on both ranks, the Linktest-like all-pairs sweep, and a clear
# refusal without mpirun.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/noise_lib.sh"
# Open MPI keeps some allocations to exit; that is its business, not a leak of ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
# Root needs these, and 2 ranks on a loaded 2-core machine need --oversubscribe.
MPIRUN="mpirun --allow-run-as-root --oversubscribe"

if ! command -v mpirun > /dev/null; then
    skip "pingpong tests" "mpirun not installed (apt-get install openmpi-bin)"
    finish
    exit
fi

timeout 120 $MPIRUN -np 2 "$noise" pingpong --max-size 64k --iterations 20 --warmup 2 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "pingpong benchmark under mpirun -np 2 exits 0" test $rc -eq 0
# Sizes 0, 1, 2, 4, ..., 65536: 18 sizes, reported once per pair by the lower rank.
check "18 message sizes reported" test "$(jq -s '[.[] | select(.event=="result")] | length' "$tmp/o")" = 18
check "sizes run from 0 B to 64 KiB" test "$(jq -s -c '[.[] | select(.event=="result") | .size] | [first, last]' "$tmp/o")" = "[0,65536]"
check "every size has a positive latency" jqe 'select(.event=="result") | .latency_us > 0 and .pair == [0,1]' "$tmp/o"
check "bandwidth with a window of 64 for sizes above 0" jqe 'select(.event=="result" and .size > 0) | .bandwidth_mbs > 0 and .window == 64' "$tmp/o"
check "both ranks print a summary" test "$(jq -s '[.[] | select(.event=="summary" and .status=="done")] | length' "$tmp/o")" = 2

timeout 120 $MPIRUN -np 2 "$noise" pingpong --duration 1 --size 64k --intensity 0.5 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "pingpong noise ends on both ranks" bash -c "test $rc -eq 0 && test \$(grep -c '\"event\":\"summary\"' '$tmp/o') -eq 2"
check "both ranks counted the same exchanges" test "$(jq -s '[.[] | select(.event=="phase") | .ops] | unique | length' "$tmp/o")" = 1

# Progress lines: the pair runs until each rank has printed one (a state, not a count in a time),
# then SIGTERM to mpirun, which passes it on to both ranks.
$MPIRUN -np 2 "$noise" pingpong --duration 60 --size 64k --intensity 0.5 --report-every 0.25 > "$tmp/o" 2> "$tmp/e" &
pid=$!
each_rank_reported() { has_line "$tmp/o" '.event=="progress" and .rank==0' && has_line "$tmp/o" '.event=="progress" and .rank==1'; }
check "each rank prints its own progress lines" wait_for 60 each_rank_reported
stop_and_reap $pid TERM || not_ok "SIGTERM stops pingpong noise under mpirun" "still running 60 s after SIGTERM"
check "SIGTERM stops both ranks with a summary" test "$(jq -s -c '[.[] | select(.event=="summary") | .status] | sort' "$tmp/o")" = '["stopped","stopped"]'
check "progress lines carry a rank of the pair" jqe 'select(.event=="progress") | .rank == 0 or .rank == 1' "$tmp/o"
check "pingpong progress moves bytes in whole exchanges" jqe 'select(.event=="progress") | .mode == "pingpong" and .phase == "noise" and .bytes == .ops * 131072' "$tmp/o"
per_rank_sums() {
    jq -e -s '. as $all | [0, 1] | all(. as $r | [$all[] | select(.rank == $r)]
              | ([.[] | select(.event=="progress") | .bytes] | add) <= ([.[] | select(.event=="phase")][0].bytes))' "$1" > /dev/null
}
check "per rank, progress bytes sum to at most the phase bytes" per_rank_sums "$tmp/o"

timeout 120 $MPIRUN -np 3 "$noise" pingpong --allpairs --size 1k --iterations 10 --warmup 2 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "allpairs with 3 ranks exits 0" test $rc -eq 0
check "allpairs measures each of the 3 pairs once" test "$(jq -s -c '[.[] | select(.test=="allpairs") | .pair] | sort' "$tmp/o")" = "[[0,1],[0,2],[1,2]]"

printf 'network:\n  small: {size: 4k}\npatterns:\n  p: [{mode: network, config: small, seconds: 0.3}, {mode: idle, seconds: 0.2}, {mode: network, seconds: 0.3}]\n' > "$tmp/p.yaml"
timeout 120 $MPIRUN -np 2 "$noise" pattern --config "$tmp/p.yaml" p > "$tmp/o" 2> "$tmp/e"; rc=$?
check "a network pattern runs under mpirun" test $rc -eq 0
check "each rank plays all three steps" test "$(jq -s '[.[] | select(.event=="phase")] | length' "$tmp/o")" = 6

OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 "$noise" pingpong > "$tmp/o" 2> "$tmp/e"; rc=$?
check "pingpong without mpirun is refused, pointing at mpirun" bash -c "test $rc -ne 0 && grep -q mpirun '$tmp/e'"

finish
