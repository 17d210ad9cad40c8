#!/usr/bin/env bash
# test_stats_plot: a trainer's recent history through a real coschedd on a temp socket — reported
# steps in `stats --json`'s history (every step counted, times in order), a co-tenant's pinned
# share and its return to the guard among its share changes, `stats --plot` writing a PNG, and
# each way --plot refuses. No figure and no timing is asserted.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
jq_ok() { jq -e "$1" "$2" >/dev/null; }

write_config 'stats:
  baseline_steps: 3
  window_steps: 3
guard:
  enabled: true'
check "the daemon starts" start_daemon --topology "$topologies/juwels-booster.xml"

c stats --plot "$tmp/none.png" >/dev/null 2>"$tmp/err"
rc=$?
check "--plot with no trainer registered exits 1 and says so" bash -c \
    "test $rc -eq 1 && grep -q 'no trainer is registered' '$tmp/err'"

c job register --job t --uid 0 --role trainer --policy l3 --gpus 0 --cores-per-rank 1 >/dev/null
c job register --job n --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
c stats --job t --plot "$tmp/early.png" >/dev/null 2>"$tmp/err"
rc=$?
check "--plot before any step exits 1: no history yet" bash -c \
    "test $rc -eq 1 && grep -q 'job t has no history yet' '$tmp/err' && test ! -e '$tmp/early.png'"

for s in 0.10 0.11 0.10 0.12 0.10; do c report --job t --step-time $s >/dev/null; done
c guard set --job n --share 0.5 >/dev/null
for s in 0.13 0.12 0.14; do c report --job t --step-time $s >/dev/null; done
c guard set --job n --share auto >/dev/null
for s in 0.11 0.10; do c report --job t --step-time $s >/dev/null; done

c --json stats >"$tmp/plain.json"
check "stats without history: true has no history key (the default reply keeps its shape)" jq_ok \
    '[.jobs[] | has("history")] | any | not' "$tmp/plain.json"

# The daemon's reply with history: true, asked as any client of the protocol would (one frame each
# way: a 4-byte big-endian length, then the JSON).
ask() {
    python3 - "$sock" "$1" <<'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
body = sys.argv[2].encode()
s.sendall(struct.pack(">I", len(body)) + body)
def exact(n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise SystemExit("the daemon closed the connection")
        b += chunk
    return b
n = struct.unpack(">I", exact(4))[0]
print(exact(n).decode())
PY
}
ask '{"v": 1, "method": "stats", "params": {"job": "t", "history": true}}' >"$tmp/history.json"
check "history: every reported step counted once, in samples oldest first" jq_ok \
    '.ok and (.result.jobs[0].history as $h | ($h.samples | length) >= 1 and ($h.samples | length) <= $h.max_samples
     and ([$h.samples[].steps] | add) == 10)' "$tmp/history.json"
check "history: times are Unix seconds and increase from sample to sample" jq_ok \
    '[.result.jobs[0].history.samples[].time] | (.[0] > 1e9) and ([range(1; length) as $i | .[$i] > .[$i - 1]] | all)' \
    "$tmp/history.json"
check "history: each sample has its step time, budget and the guard's share; the baseline once 3 solo steps came" jq_ok \
    '.result.jobs[0].history.samples | all(.step_seconds > 0 and .budget > 0 and .share >= 0 and .share <= 1 and
     (.slowdown == null or (.slowdown | type) == "number")) and (last.baseline_seconds > 0)' "$tmp/history.json"
ask '{"v": 1, "method": "stats", "params": {"history": true}}' >"$tmp/nojob.json"
check "history without a job is refused (EINVAL): one trainer at a time" jq_ok \
    '(.ok | not) and .error.code == "EINVAL" and (.error.message | test("needs .job."))' "$tmp/nojob.json"
c --json stats --job n >"$tmp/cotenant.json"
check "the co-tenant's share changes: pinned to 0.5 by an operator, then the guard's again" jq_ok \
    '.jobs[0].share_changes | (map(select(.by == "operator" and .share == 0.5)) | length >= 1) and
     (last.by == "guard")' "$tmp/cotenant.json"

c stats --job n --plot "$tmp/n.png" >/dev/null 2>"$tmp/err"
rc=$?
check "--plot on a co-tenant exits 1: only a trainer has a history" bash -c \
    "test $rc -eq 1 && grep -q 'job n is a co-tenant' '$tmp/err'"
c stats --job nosuch --plot "$tmp/x.png" >/dev/null 2>"$tmp/err"
rc=$?
check "--plot on no such job exits 1 and names it" bash -c "test $rc -eq 1 && grep -q 'no job nosuch' '$tmp/err'"
c stats --plot "$tmp/x.png" --watch >/dev/null 2>"$tmp/err"
check "--plot with --watch is a usage error" test $? -eq 2
PATH=/nonexistent c stats --job t --plot "$tmp/x.png" >/dev/null 2>"$tmp/err"
rc=$?
check "--plot without gnuplot exits 1 and names the package" bash -c \
    "test $rc -eq 1 && grep -q 'gnuplot-nox' '$tmp/err' && test ! -e '$tmp/x.png'"

if command -v gnuplot >/dev/null && gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
    c stats --plot "$tmp/only.png" >/dev/null 2>"$tmp/err"
    rc=$?
    check "--plot without --job draws the only trainer: a PNG" bash -c \
        "test $rc -eq 0 && test -s '$tmp/only.png' && head -c 8 '$tmp/only.png' | od -An -tx1 | tr -d ' \n' |
         grep -qx '89504e470d0a1a0a'" 
    [ $rc -eq 0 ] || sed 's/^/# /' "$tmp/err"
    c stats --job t --plot "$tmp/no/such/dir.png" >/dev/null 2>"$tmp/err"
    rc=$?
    check "--plot into a directory that does not exist exits 1 and names the file" bash -c \
        "test $rc -eq 1 && grep -q 'cannot write $tmp/no/such/dir.png' '$tmp/err'"
else
    skip "--plot without --job draws the only trainer: a PNG" "no gnuplot with pngcairo here (Debian: gnuplot-nox)"
    skip "--plot into a directory that does not exist exits 1 and names the file" "no gnuplot here"
fi

c job register --job t2 --uid 0 --role trainer --policy l3 --gpus 1 --cores-per-rank 1 >/dev/null
c stats --plot "$tmp/x.png" >/dev/null 2>"$tmp/err"
rc=$?
check "--plot without --job among two trainers is a usage error naming them" bash -c \
    "test $rc -eq 2 && grep -Eq 'name it with --job \(trainers: (t, t2|t2, t)\)' '$tmp/err'"
[ $rc -eq 2 ] || sed 's/^/# /' "$tmp/err"
c job release --job t2 >/dev/null

c job release --job n >/dev/null
c job release --job t >/dev/null
check "every job is released" bash -c "'$cosched' --socket '$sock' --json job list | jq -e '.jobs | length == 0'"
stop_daemon
finish
