#!/bin/bash
# test_cli: cosched-train end to end on one rank: --help, refused flags and files, JSON lines,
# learning on synthetic data and Fashion-MNIST, trace, and resume equal to an uninterrupted run.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/trainer_lib.sh"
small="--model resnet8 --image-size 8 --batch 16 --threads 2"

check "--help exits 0 and names the flags" bash -c "'$TRAIN' --help | grep -q -- --allreduce"

refused() { # refused NAME PATTERN ARGS...: exit code not 0 and stderr matching PATTERN
	local name=$1 pat=$2
	shift 2
	if "$TRAIN" "$@" >"$tmp/out" 2>"$tmp/err"; then
		not_ok "$name (exit 0)"
	elif grep -q -- "$pat" "$tmp/err"; then
		ok "$name"
	else
		not_ok "$name (stderr: $(head -c 200 "$tmp/err"))"
		fi
}
refused "--batch 0 refused, naming its range" "--batch: 0 is out of range 1..65536" --batch 0
refused "--batch abc refused, naming its range" "--batch: abc is not a whole number (range 1..65536)" --batch abc
refused "--batch 1e3 is not a whole number" "--batch: 1e3 is not a whole number" --batch 1e3
refused "--lr x refused, naming its range" "--lr: x is not a number (range 0..100)" --lr x
refused "--lr 200 refused, naming its range" "--lr: 200 is out of range 0..100" --lr 200
refused "--label-smoothing 1 refused, naming its range" "--label-smoothing: 1 is out of range 0..0.999" \
	--label-smoothing 1
refused "--seed -1 refused, naming its range" "--seed: -1 is out of range 0..2147483647" --seed -1
refused "a count beyond a long is out of range" "--steps: 99999999999999999999 is out of range 1..1000000000" \
	--steps 99999999999999999999
refused "an abbreviated flag is named in full" "--image-size: 4 is out of range 8..1024" --image 4
refused "--batchnorm maybe refused" "--batchnorm maybe: expected on or off" --batchnorm maybe
refused "unknown flag refused" "unknown option" --frobnicate
refused "missing value refused" "needs a value" --model
refused "unknown model refused" "unknown model 'vgg16'" --model vgg16 --data synthetic:64
refused "unknown backend refused" "expected onednn or ref" --backend cuda
refused "unknown allreduce refused" "expected mpi or ring" --allreduce tree
refused "unknown schedule refused" "expected step, cosine" --schedule linear
refused "--checkpoint-every alone refused" "needs --checkpoint" --checkpoint-every 5
refused "missing dataset directory refused" "cannot open" --data cifar10:$tmp/none
refused "too few samples for a batch refused" "fewer than one global batch" $small --data synthetic:8
refused "bad cpu list refused" "--cpus" $small --data synthetic:64 --cpus 0-x

"$TRAIN" $small --data synthetic:64 --steps 1 --cpus 0 >"$tmp/bind.out" 2>"$tmp/err"
check "--cpus 0 binds to CPU 0 and reports it; an explicit --threads 2 is kept" python3 -c "
import json, sys
s = json.loads(open('$tmp/bind.out').readline())
sys.exit(not (s['cpus'] == '0' and s['threads'] == 2))"
"$TRAIN" --model resnet8 --image-size 8 --batch 16 --data synthetic:64 --steps 1 --cpus 0 \
	--mems 0 >"$tmp/bind1.out" 2>"$tmp/err"
check "--cpus 0 --mems 0: threads default to the bound CPUs" python3 -c "
import json, sys
s = json.loads(open('$tmp/bind1.out').readline())
sys.exit(not (s['cpus'] == '0' and s['mems'] == '0' and s['threads'] == 1))"

"$TRAIN" gen-data --format cifar10 --samples 64 --test-samples 32 "$tmp/c10" 2>"$tmp/err"
check "gen-data writes a CIFAR-10 directory" test -s "$tmp/c10/data_batch_1.bin"
refused "gen-data --format png refused, naming the formats" "--format png: expected cifar10, cifar100 or fashion-mnist" \
	gen-data --format png "$tmp/x"
refused "gen-data --samples 0 refused, naming its range" "--samples: 0 is out of range 1..1000000" \
	gen-data --format cifar10 --samples 0 "$tmp/x"
refused "gen-data --seed abc refused, naming its range" "--seed: abc is not a whole number (range 0..2147483647)" \
	gen-data --format cifar10 --seed abc "$tmp/x"
refused "gen-data refuses an unknown option" "gen-data: unknown option or missing value: --frobnicate" gen-data --frobnicate
head -c 10000 "$tmp/c10/data_batch_1.bin" >"$tmp/cut.bin" && mv "$tmp/cut.bin" "$tmp/c10/data_batch_1.bin"
refused "truncated CIFAR file refused" "truncated" $small --data cifar10:$tmp/c10

"$TRAIN" gen-data --format cifar100 --samples 64 --test-samples 32 "$tmp/c100" 2>"$tmp/err"
"$TRAIN" --model resnet8 --batch 16 --threads 2 --data cifar100:$tmp/c100 --steps 2 \
	>"$tmp/c100.out" 2>"$tmp/err"
check "trains on a generated CIFAR-100 file (100 classes)" \
	python3 -c "import json,sys; l=[json.loads(x) for x in open('$tmp/c100.out')]; sys.exit(not (l[0]['event']=='start' and l[-1]['event']=='summary' and 3.5 < l[1]['loss'] < 6))"

# learning on synthetic data, with the JSON schema of every line checked on the way
"$TRAIN" $small --data synthetic:640 --classes 4 --epochs 3 --schedule cosine --lr 0.05 \
	--trace "$tmp/trace.json" >"$tmp/syn.out" 2>"$tmp/err"
check "run on synthetic data exits 0" test $? -eq 0
check "every stdout line is JSON with the documented fields" python3 - "$tmp/syn.out" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
need = {"step": {"step", "epoch", "rank", "t_data", "t_fwd", "t_bwd", "t_comm", "t_update",
                 "t_step", "loss", "images_per_s"},
        "epoch": {"epoch", "val_loss", "val_accuracy"},
        "summary": {"share_compute", "share_comm", "share_data", "images_per_s", "param_hash"},
        "start": {"model", "ranks", "threads", "cpus", "mems"}}
kinds = [l["event"] for l in lines]
assert kinds[0] == "start" and kinds[-1] == "summary" and kinds.count("epoch") == 3, kinds
for l in lines:
    missing = need[l["event"]] - set(l)
    assert not missing, (l["event"], missing)
PY
check "loss falls and validation accuracy rises above chance on synthetic data" python3 - "$tmp/syn.out" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l["loss"] for l in lines if l["event"] == "step"]
first, last = sum(steps[:5]) / 5, sum(steps[-5:]) / 5
acc = [l["val_accuracy"] for l in lines if l["event"] == "epoch"][-1]
print("# loss %.3f -> %.3f, accuracy %.3f (chance 0.25)" % (first, last, acc))
assert last < 0.7 * first and acc > 0.45
PY
check "--trace writes Chrome trace events, one lane per phase" python3 - "$tmp/trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in t if e["ph"] == "X"]
names = {e["name"] for e in x}
assert {"data", "forward", "backward", "allreduce", "update", "validation"} <= names, names
assert all(e["pid"] == 0 and e["dur"] >= 0 for e in x)
assert len({e["tid"] for e in x}) == len(names)
PY

# resume: 8 steps straight against 3 steps, a checkpoint, and the other 5 resumed
common="$small --data synthetic:256 --steps 8 --schedule cosine"
"$TRAIN" $common >"$tmp/full.out" 2>"$tmp/err"
"$TRAIN" $common --checkpoint "$tmp/ck" --stop-after 3 >"$tmp/part1.out" 2>"$tmp/err"
"$TRAIN" $common --resume "$tmp/ck" >"$tmp/part2.out" 2>"$tmp/err"
check "resumed run ends with the parameters of the uninterrupted run" \
	test "$(field "$tmp/full.out" summary param_hash)" = "$(field "$tmp/part2.out" summary param_hash)"
check "resumed run repeats the losses of the uninterrupted run" python3 - "$tmp/full.out" "$tmp/part2.out" <<'PY'
import json, sys
def losses(p): return {l["step"]: l["loss"] for l in map(json.loads, open(p)) if l["event"] == "step"}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert sorted(b) == list(range(3, 8)), sorted(b)
assert all(a[s] == b[s] for s in b), (a, b)
PY
refused "resume with another batch refused" "batch 16" --model resnet8 --image-size 8 --batch 8 \
	--data synthetic:256 --steps 8 --resume "$tmp/ck"
refused "resume of another model refused" "checkpoint of resnet8" --model resnet20 --image-size 8 \
	--batch 16 --data synthetic:256 --resume "$tmp/ck"
head -c 2000 "$tmp/ck" >"$tmp/ck.cut"
refused "truncated checkpoint refused" "truncated checkpoint" $common --resume "$tmp/ck.cut"

fm=/usr/share/datasets/fashion-mnist
if [ -r $fm/train-images-idx3-ubyte.gz ]; then
	"$TRAIN" --model resnet8 --batch 32 --threads 2 --data fashion-mnist:$fm --max-samples 1024 \
		--epochs 2 --schedule cosine --lr 0.05 >"$tmp/fm.out" 2>"$tmp/err"
	acc=$(field "$tmp/fm.out" summary val_accuracy)
	echo "# Fashion-MNIST slice: validation accuracy $acc (chance 0.1)"
	check "validation accuracy above chance on a Fashion-MNIST slice" \
		python3 -c "import sys; sys.exit(not $acc > 0.4)"
else
	skip "validation accuracy above chance on a Fashion-MNIST slice" \
		"Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)"
fi
# An open-ended run (cosched experiment stops it with SIGTERM) with --trace: the trace buffer is
# capped, not sized by --steps (10^8 steps once asked for 22 GB). Under a 4 GB address-space
# limit it runs; an ASan build reserves more than that for its shadow memory and cannot be asked.
if ldd "$TRAIN" | grep -q libasan; then
	skip "an open-ended run with --trace fits a 4 GB address space (the trace buffer is capped)" \
		"the address-space limit does not apply to an ASan build"
else
	(ulimit -v 4000000; "$TRAIN" --model resnet8 --image-size 8 --data synthetic:256 --threads 1 --batch 8 \
		--steps 100000000 --stop-after 3 --trace "$tmp/open.json" >"$tmp/open.out" 2>"$tmp/err")
	check "an open-ended run with --trace fits a 4 GB address space (the trace buffer is capped)" \
		bash -c "test $? -eq 0 && test -s '$tmp/open.json'"
fi
# A run of one rank told to stop (coschedd's run stop, cosched experiment) ends after the step
# under way, with its summary, as one of several ranks does (test_mpi.sh): a trainer that did not
# would be ended by coschedd's SIGKILL after its grace, without summary or trace, and outlive a
# test that stops the daemon first.
"$TRAIN" --model resnet8 --image-size 8 --data synthetic:256 --threads 1 --batch 8 \
	--steps 100000000 >"$tmp/term.out" 2>"$tmp/err" &
tpid=$!
if wait_for 60 grep -q '"event":"step","step":3,' "$tmp/term.out"; then
	kill -TERM "$tpid"
	ended() { ! kill -0 "$tpid"; }
	check "a single rank told to stop with SIGTERM ends" wait_for 60 ended
	kill -9 "$tpid" 2>/dev/null
	wait "$tpid"
	rc=$?
	steps=$(field "$tmp/term.out" summary steps 2>/dev/null)
	check "... on its own, exit status 0, with its summary (${steps:-no} steps)" \
		bash -c "test $rc -eq 0 && test '${steps:-0}' -ge 4"
else
	kill -9 "$tpid" 2>/dev/null
	not_ok "a single rank told to stop with SIGTERM ends (it never reached step 3)"
fi
finish
