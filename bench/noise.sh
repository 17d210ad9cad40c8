#!/bin/bash
# bench/noise.sh: cosched-noise side by side with the tools people quote: likwid-bench and
# stress-ng --stream for memory, fio for I/O; ping-pong figures printed for IMB PingPong.
#
# Usage: bench/noise.sh [BUILD_DIR]   (default build). Knobs (environment):
#   ROUNDS=5      interleaved rounds; every figure is the median over them
#   ARRAY=        bytes per STREAM array (default: what cosched-noise picks, 4x the L3)
#   DIR=/tmp      directory for the ior/fio files (SIZE bytes each, removed afterwards)
#   SIZE=256M     ior block / fio size
# Installs nothing: a missing peer is skipped with the apt-get line that brings it.
set -u
BUILD=${1:-build}
NOISE=$BUILD/noise/cosched-noise
ROUNDS=${ROUNDS:-5}
DIR=${DIR:-/tmp}
SIZE=${SIZE:-256M}
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2"

die() { echo "bench/noise.sh: $*" >&2; exit 1; }
[ -x "$NOISE" ] || die "$NOISE not found: meson setup $BUILD && meson compile -C $BUILD"
command -v jq > /dev/null || die "jq is missing: apt-get install jq"
have() {
    if command -v "$1" > /dev/null; then return 0; fi
    echo "# skipping $1: apt-get install $2"
    return 1
}
HAVE_LIKWID=0 HAVE_STRESS=0 HAVE_FIO=0 HAVE_MPI=0
have likwid-bench likwid && HAVE_LIKWID=1
have stress-ng stress-ng && HAVE_STRESS=1
have fio fio && HAVE_FIO=1
have mpirun "openmpi-bin libopenmpi-dev" && HAVE_MPI=1

T=$(mktemp -d)
trap 'rm -rf "$T" "$DIR"/cosched-bench-fio.*' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
add() { echo "$2" >> "$T/$1"; }   # add SERIES VALUE
med() { [ -s "$T/$1" ] && median < "$T/$1" || echo nan; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

# Same array size for everyone: ours per array; likwid takes the whole working set (3 arrays
# for the STREAM triad, 2 for copy) in kB; stress-ng sizes its arrays from its L3 setting.
if [ -z "${ARRAY:-}" ]; then
    ARRAY=$("$NOISE" stream --ntimes 2 --array-size 1M > /dev/null && "$NOISE" stream --duration 0.01 | jq -r 'select(.event=="phase") | .config.array_bytes')
    [ "$ARRAY" = 0 ] && ARRAY=$((128 << 20))
fi
ARRAY_BYTES=$(numfmt --from=iec "$ARRAY" 2> /dev/null || echo "$ARRAY")
# Ask for the size stress-ng would pick itself, so its arrays match ours when it uses 4x L3.
L3_FOR_STRESS=$((ARRAY_BYTES / 4 / 1024))K
AVX=avx
FIRST_CPU=$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')
grep -q avx512f /proc/cpuinfo && AVX=avx512

echo "# cosched-noise bench: $(date -u +%FT%TZ), $(nproc) CPUs, $ROUNDS interleaved rounds, medians"
echo "# STREAM arrays: $ARRAY_BYTES bytes each, 2 threads; likwid kernels *_$AVX and *_mem_$AVX (streaming stores)"
echo "# This machine is shared and small: expect noisy figures."

# One function per contender; each round runs them all, the order reversed every other
# round so that none always runs right after the same neighbour.
run_ours_stream() {
    "$NOISE" stream --threads 2 --array-size "$ARRAY_BYTES" --ntimes 20 > "$T/ours.json" || die "cosched-noise stream failed"
    for k in copy triad; do
        add "ours_${k}_best" "$(jq -r "select(.kernel==\"$k\") | .best_mbs" "$T/ours.json")"
        add "ours_${k}_avg" "$(jq -r "select(.kernel==\"$k\") | .avg_mbs" "$T/ours.json")"
    done
}
run_likwid() {
    [ $HAVE_LIKWID = 1 ] || return 0
    for k in stream_$AVX stream_mem_$AVX copy_$AVX copy_mem_$AVX; do
        arrays=3
        [ "${k#copy}" != "$k" ] && arrays=2
        v=$(likwid-bench -t "$k" -i 40 -w "S0:$((ARRAY_BYTES * arrays / 1000))kB:2" 2>/dev/null | awk '/^MByte\/s/ {print $2}')
        [ -n "$v" ] && add "likwid_$k" "$v"
    done
}
run_stress() {
    [ $HAVE_STRESS = 1 ] || return 0
    # Sum over both instances of read + write MB/s, the way STREAM counts bytes.
    v=$(stress-ng --stream 2 --stream-l3-size "$L3_FOR_STRESS" -t 8 --metrics 2>&1 |
        awk '/memory rate: .* MB read\/sec/ { for (i = 1; i <= NF; i++) if ($i == "rate:") s += $(i+1) + $(i+4) } END { if (s) print s }')
    [ -n "$v" ] && add stress_stream "$v"
}
# I/O: one task, one file, sequential 1 MiB transfers, fsync before close, page cache
# dropped before reading (fio's default invalidate=1, our --invalidate).
ior_once() { # ior_once SERIES [extra options]
    local series=$1; shift
    "$NOISE" ior --dir "$DIR" --threads 1 --block "$SIZE" --transfer 1M --fsync --max-bytes "$SIZE" "$@" > "$T/ior.json" ||
        die "cosched-noise ior failed"
    add "${series}_write" "$(jq -r 'select(.phase=="write") | .bw_mibs' "$T/ior.json")"
    add "${series}_read" "$(jq -r 'select(.phase=="read") | .bw_mibs' "$T/ior.json")"
}
# As IOR (blocks allocated as they are written), and with --preallocate (allocated ahead,
# untimed), which is what fio does by default.
run_ours_ior() { ior_once ours_ior; }
run_ours_ior_prealloc() { ior_once ours_ior_prealloc --preallocate; }
# fio as it comes (it preallocates the file with fallocate before the clock starts) and with
# --fallocate=none, which is what IOR and we do: blocks are allocated as the data is written.
fio_once() { # fio_once SUFFIX [extra fio options]
    local suffix=$1; shift
    [ $HAVE_FIO = 1 ] || return 0
    f=$DIR/cosched-bench-fio.$$
    # Pinned like our single task, which runs on the first CPU it is given: an unpinned fio
    # escapes to whichever core is idle on a busy machine, ours by design does not.
    # Two invocations, not two jobs in one: given a read job, fio lays its file out (writes it
    # whole) before any job starts, so its write job would overwrite allocated blocks while ours
    # writes a fresh file. Apart, fio's write job starts on a fresh file as ours does.
    taskset -c "$FIRST_CPU" fio --output-format=json --ioengine=psync --bs=1M --size="$SIZE" --filename="$f" "$@" \
        --name=write --rw=write --end_fsync=1 > "$T/fio-write.json" 2> /dev/null
    taskset -c "$FIRST_CPU" fio --output-format=json --ioengine=psync --bs=1M --size="$SIZE" --filename="$f" "$@" \
        --name=read --rw=read > "$T/fio-read.json" 2> /dev/null
    rm -f "$f"
    # Bytes over the job's own runtime (which holds the final fsync), in MiB/s like ours.
    add "fio${suffix}_write" "$(jq -r '.jobs[] | select(.jobname=="write") | .write.io_bytes / (.job_runtime / 1000) / 1048576' "$T/fio-write.json")"
    add "fio${suffix}_read" "$(jq -r '.jobs[] | select(.jobname=="read") | .read.io_bytes / (.job_runtime / 1000) / 1048576' "$T/fio-read.json")"
}
run_fio() { fio_once ""; }
run_fio_noprealloc() { fio_once _noprealloc --fallocate=none; }
in_turn() { # in_turn ROUND A B ...: run A B ... on odd rounds, ... B A on even ones
    local r=$1; shift
    if [ $((r % 2)) = 1 ]; then for f in "$@"; do $f; done; else for ((i = $#; i >= 1; i--)); do ${!i}; done; fi
}
for r in $(seq "$ROUNDS"); do
    echo "# memory round $r/$ROUNDS" >&2
    in_turn "$r" run_ours_stream run_likwid run_stress
done
# The disk is the noisiest part of a shared VM: twice the rounds, they are short.
for r in $(seq $((2 * ROUNDS - 1))); do
    echo "# io round $r/$((2 * ROUNDS - 1))" >&2
    in_turn "$r" run_ours_ior run_ours_ior_prealloc run_fio run_fio_noprealloc
done

if [ $HAVE_MPI = 1 ]; then
    for r in $(seq 3); do
        $MPIRUN "$NOISE" pingpong --min-size 8 --max-size 8 --iterations 10000 --warmup 1000 2> /dev/null > "$T/pp.json"
        add pp_lat8 "$(jq -r 'select(.event=="result") | .latency_us' "$T/pp.json")"
        $MPIRUN "$NOISE" pingpong --min-size 4M --max-size 4M --iterations 50 --warmup 5 2> /dev/null > "$T/pp.json"
        add pp_bw4m "$(jq -r 'select(.event=="result") | .bandwidth_mbs' "$T/pp.json")"
        add pp_lat4m "$(jq -r 'select(.event=="result") | .latency_us' "$T/pp.json")"
    done
fi

line() { printf "%-44s %12s %s\n" "$1" "$2" "${3:-}"; }
echo
echo "## stream (MB/s, decimal, STREAM byte counting)"
for k in copy triad; do
    lk=stream
    [ $k = copy ] && lk=copy
    ob=$(med "ours_${k}_best") oa=$(med "ours_${k}_avg")
    line "cosched-noise $k best" "$ob"
    line "cosched-noise $k average" "$oa"
    best_peer=nan best_name=""
    for p in "likwid_${lk}_$AVX" "likwid_${lk}_mem_$AVX" stress_stream; do
        v=$(med "$p")
        [ "$v" = nan ] && continue
        line "  $p" "$v" "ours best/peer $(ratio "$ob" "$v"), ours average/peer $(ratio "$oa" "$v")"
        if [ "$best_peer" = nan ] || awk -v a="$v" -v b="$best_peer" 'BEGIN {exit !(a > b)}'; then best_peer=$v best_name=$p; fi
    done
    [ -n "$best_name" ] && line "  best peer for $k: $best_name" "$best_peer" \
        "ours best/peer $(ratio "$ob" "$best_peer"), ours average/peer $(ratio "$oa" "$best_peer") (goal >= 1)"
done
echo "# likwid-bench and stress-ng report an average over their run: compare with our average."
echo "# stress-ng mixes all four kernels in one figure."
echo
echo "## ior vs fio (MiB/s, $SIZE, 1 MiB transfers, fsync, buffered; medians of $((2 * ROUNDS - 1)))"
# Like against like: blocks allocated while writing (IOR; fio --fallocate=none), and
# allocated ahead outside the timed window (ours --preallocate; fio as it comes).
for p in write read; do
    o=$(med "ours_ior_$p") op=$(med "ours_ior_prealloc_$p") f=$(med "fio_$p") fn=$(med "fio_noprealloc_$p")
    line "cosched-noise ior $p" "$o"
    line "  fio --fallocate=none $p" "$fn" "ours/fio $(ratio "$o" "$fn") (goal >= 0.95)"
    line "cosched-noise ior --preallocate $p" "$op"
    line "  fio $p (preallocates)" "$f" "ours/fio $(ratio "$op" "$f") (goal >= 0.95)"
done
echo "# both drop the file from the page cache before reading; one task pinned to cpu $FIRST_CPU, no O_DIRECT."
echo
echo "## pingpong, 2 ranks on this node (Open MPI shared memory), medians of 3"
line "latency 8 B (us)" "$(med pp_lat8)"
line "latency 4 MiB (us)" "$(med pp_lat4m)"
line "bandwidth 4 MiB, window 64 (MB/s)" "$(med pp_bw4m)"
echo "# to be compared with IMB-MPI1 PingPong (not packaged in Debian)."
