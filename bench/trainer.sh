#!/bin/bash
# bench/trainer.sh: training throughput of cosched-train against PyTorch 1.13 (Debian
# python3-torch) on ResNet-20, batch 64, 2 threads, synthetic 32x32 data; interleaved A/B.
#
# Rules: both train the same network (CIFAR ResNet-20, projection shortcuts, BN, SGD with
# momentum and weight decay) at the same batch and thread count. Each round runs A then B;
# each run reports the median images/s of its steps after warm-up (cosched-train: step lines,
# which include batch assembly; PyTorch: forward+backward+step on one fixed batch). The figure
# is the median over rounds. GFLOP/s counts 3x the forward multiply-adds x2 of conv and fc
# per image (backward = 2x forward), the usual convention. Peak = cores x clock x FP32
# FLOP/cycle (set FLOPS_PER_CYCLE to override the guess). Not run by CI; installs nothing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
train=$build/trainer/cosched-train
rounds=${ROUNDS:-5}
steps=${STEPS:-30}
threads=${THREADS:-2}
batch=${BATCH:-64}
py=/usr/bin/python3

if [ ! -x "$train" ]; then
	echo "no $train: build first (meson setup build && meson compile -C build), or set BUILD" >&2
	exit 1
fi
if ! $py -c 'import torch' 2>/dev/null; then
	echo "PyTorch missing: apt-get install python3-torch" >&2
	exit 1
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# cosched-train vs PyTorch $($py -c 'import torch; print(torch.__version__)'): resnet20, batch $batch, $threads threads, $rounds rounds x $steps steps"
echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# NOTE: a shared machine gives noisy figures; compare the ratio, taken in the same rounds"
for r in $(seq "$rounds"); do
	"$train" --model resnet20 --data synthetic:$((batch * (steps + 2))) --batch "$batch" \
		--threads "$threads" --steps "$steps" --log-every 1 >"$tmp/c.out"
	$py - "$tmp/c.out" >>"$tmp/c.ips" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l["images_per_s"] for l in lines if l["event"] == "step"][3:]
s = lines[-1]
print(statistics.median(steps), s["peak_rss_mib"], lines[0]["fwd_gflop_per_image"])
PY
	$py "$here/trainer_torch.py" 20 "$batch" "$threads" "$steps" >"$tmp/t.out"
	awk '{ print $2, $4 }' "$tmp/t.out" >>"$tmp/t.ips"
	echo "round $r: cosched-train $(tail -1 "$tmp/c.ips" | cut -d' ' -f1) images/s, PyTorch $(tail -1 "$tmp/t.ips" | cut -d' ' -f1) images/s"
done
c=$(cut -d' ' -f1 "$tmp/c.ips" | median)
t=$(cut -d' ' -f1 "$tmp/t.ips" | median)
cm=$(cut -d' ' -f2 "$tmp/c.ips" | median)
tm=$(cut -d' ' -f2 "$tmp/t.ips" | median)
gf=$(head -1 "$tmp/c.ips" | cut -d' ' -f3)

# FP32 FLOP per cycle per core: 2 FMA pipes x lanes x 2. Intel AVX-512 servers and AMD Zen 5
# (recognised by avx512_vp2intersect) have 512-bit pipes; Zen 4 runs AVX-512 on 256-bit ones.
flags=$(grep -m1 '^flags' /proc/cpuinfo)
vendor=$(grep -m1 vendor_id /proc/cpuinfo | awk '{print $3}')
if [ -n "${FLOPS_PER_CYCLE:-}" ]; then fpc=$FLOPS_PER_CYCLE
elif [[ $flags == *avx512f* && ( $vendor == GenuineIntel || $flags == *avx512_vp2intersect* ) ]]; then fpc=64
elif [[ $flags == *avx2* && $flags == *fma* ]]; then fpc=32
else fpc=16; fi
# The clock: one bench/clock_probe per thread at once (all cores busy, as in training), the
# lowest; lscpu's figure (often the base clock in a VM) only where the probe cannot run.
mhz=0
if [ -x "$build/bench/clock_probe" ]; then
	for i in $(seq "$threads"); do "$build/bench/clock_probe" >"$tmp/mhz.$i" & done
	wait
	mhz=$(cat "$tmp"/mhz.* | sort -g | head -1)
	mhz=${mhz:-0}
	clock_src="measured under load by bench/clock_probe"
fi
if [ "${mhz%.*}" -le 0 ]; then
	mhz=$(lscpu | awk -F: '/CPU max MHz/ { gsub(/ /, "", $2); print $2 }')
	[ -n "$mhz" ] || mhz=$(grep -m1 'cpu MHz' /proc/cpuinfo | awk -F: '{ gsub(/ /, "", $2); print $2 }')
	clock_src="from lscpu / /proc/cpuinfo"
fi
# The ratio of each round (A and B side by side), and its median and range.
paste -d' ' "$tmp/c.ips" "$tmp/t.ips" | awk '{ print $1 / $4 }' >"$tmp/ratio"
rmed=$(median <"$tmp/ratio")
rmin=$(sort -g "$tmp/ratio" | head -1)
rmax=$(sort -g "$tmp/ratio" | tail -1)
peak=$(awk -v c="$threads" -v m="$mhz" -v f="$fpc" 'BEGIN { printf "%.1f", c * m / 1000 * f }')

awk -v c="$c" -v t="$t" -v cm="$cm" -v tm="$tm" -v gf="$gf" -v peak="$peak" -v fpc="$fpc" \
	-v mhz="$mhz" -v th="$threads" -v rmed="$rmed" -v rmin="$rmin" -v rmax="$rmax" -v src="$clock_src" 'BEGIN {
	printf "images/s (median of rounds): cosched-train %.1f, PyTorch %.1f, ratio %.2fx (goal >= 1.5x)\n", c, t, c / t
	printf "ratio per round: median %.2fx, range %.2f-%.2fx\n", rmed, rmin, rmax
	printf "GFLOP/s (3 x %.4f GFLOP per image): cosched-train %.1f, PyTorch %.1f\n", gf, c * 3 * gf, t * 3 * gf
	printf "peak %.1f GFLOP/s (%d cores x %.0f MHz %s x %d FLOP/cycle): cosched-train %.1f %%, PyTorch %.1f %%\n", peak, th, mhz, src, fpc, 100 * c * 3 * gf / peak, 100 * t * 3 * gf / peak
	printf "peak RSS MiB (median): cosched-train %.0f, PyTorch %.0f (incl. the Python interpreter and torch libraries), ratio %.2f\n", cm, tm, cm / tm
}'
