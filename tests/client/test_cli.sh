#!/usr/bin/env bash
# test_cli: `cosched topo` and `cosched plan` as a user and a job script run them: output,
# JSON schema, srun specs, exit codes (0 ok, 1 cannot be met / unreadable, 2 usage).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
root=${COSCHED_SOURCE_ROOT:?}
cosched=${COSCHED_BUILD_ROOT:?}/client/cosched
juwels=$root/tests/topologies/juwels-booster.xml
tioga=$root/tests/topologies/shared/eas-tioga.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME EXPECTED_RC ARGS...: stdout in $tmp/out, stderr in $tmp/err.
expect_rc() {
    local name=$1 want=$2; shift 2
    "$cosched" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then tap_ok "$name"; else tap_not_ok "$name" "exit $rc, wanted $want" "$(cat "$tmp/err")"; fi
}
json() { python3 -c "import json,sys; d=json.load(open('$tmp/out')); $1"; }

expect_rc "topo on the JUWELS Booster XML succeeds" 0 topo --topology "$juwels" --json
check "topo --json shows GPU i on NUMA [3,1,7,5][i]" json \
    'assert [g["numa"] for g in d["gpus"]] == [[3],[1],[7],[5]], d["gpus"]'
check "topo --json has the documented top-level keys" json \
    'assert all(k in d for k in ("packages","cores","pus","numa","gpus","nics")); assert (d["packages"],d["cores"],d["pus"]) == (2,48,96)'
check "topo --json lists each domain's L3 groups and memory" json \
    'n=d["numa"][3]; assert n["os_index"]==3 and n["l3"]==[[18,19,20,66,67,68],[21,22,23,69,70,71]] and n["memory_bytes"]==64<<30 and n["gpus"]==[0] and n["nics"]==["mlx5_0"], n'
check "topo --json gives each NIC its domain" json \
    'assert [(x["name"],x["numa"]) for x in d["nics"]] == [("mlx5_0",[3]),("mlx5_1",[1]),("mlx5_2",[7]),("mlx5_3",[5])]'

expect_rc "topo table on the JUWELS Booster XML" 0 topo --topology "$juwels"
check "the table shows GPU0 on NUMA 3 with its CPUs" grep -Eq '^GPU0 +cuda0 +0000:03:00.0 +NVIDIA +3 +18-23,66-71$' "$tmp/out"
check "the table shows NUMA 3's L3 groups and devices" grep -Eq '^3 +0 +6 +64.0 GiB +18-23,66-71 +18-20,66-68 \| 21-23,69-71 +GPU0,NIC0$' "$tmp/out"

COSCHED_TOPOLOGY=$juwels "$cosched" topo --json >"$tmp/out" 2>"$tmp/err"
check "COSCHED_TOPOLOGY selects the XML file" json 'assert len(d["gpus"]) == 4'
expect_rc "topo on this machine succeeds" 0 topo
expect_rc "topo --json on this machine succeeds" 0 topo --json
check "this machine's JSON parses" json 'assert d["source"] == "this machine" and len(d["numa"]) >= 1'

expect_rc "plan --json on JUWELS Booster" 0 plan --topology "$juwels" --json
check "plan JSON places trainer ranks on NUMA 3,1,7,5 and noise on 0,2,4,6" json \
    'assert [r["numa"] for r in d["trainer"]] == [3,1,7,5]; assert sorted({r["numa"] for r in d["noise"]}) == [0,2,4,6]; assert len(d["noise"]) == 24'
check "plan JSON carries policy, srun specs and warnings" json \
    'assert d["policy"]=="exclusive" and d["srun"]["trainer"].startswith("--cpu-bind=mask_cpu:0xfc0000,") and d["srun"]["noise"].startswith("--cpu-bind=map_cpu:0,1,2") and d["warnings"]==[]'
check "plan JSON trainer ranks name GPU, cpus and mems" json \
    'r=d["trainer"][0]; assert (r["rank"],r["gpu"],r["cpus"],r["mems"])==(0,0,[18,19,20,21,22,23],[3]), r'

expect_rc "plan --format srun prints two pasteable specs" 0 plan --topology "$juwels" --format srun
check "srun output is exactly the trainer and the noise spec" python3 -c "
lines = open('$tmp/out').read().splitlines()
assert lines == ['--cpu-bind=mask_cpu:0xfc0000,0xfc0,0xfc0000000000,0xfc0000000',
                 '--cpu-bind=map_cpu:0,1,2,3,4,5,12,13,14,15,16,17,24,25,26,27,28,29,36,37,38,39,40,41'], lines"

expect_rc "plan --format list" 0 plan --topology "$juwels" --policy shared --format list
check "list output has ROLE RANK CPUS MEMS lines" grep -qx 'trainer 0 12-14,18-20 2-3' "$tmp/out"
check "list output has one line per rank" test "$(wc -l <"$tmp/out")" -eq 28

expect_rc "plan table" 0 plan --topology "$juwels" --policy l3 --cores-per-rank 3
check "the table names policy and rank counts" grep -q 'policy l3, 4 trainer ranks x 3 CPUs, 36 noise ranks' "$tmp/out"

check "the table states the isolation and what it keeps apart" grep -qx 'isolation: l3 — co-tenants share no L3 with the trainer, but share the memory bandwidth of its NUMA domains' "$tmp/out"

expect_rc "plan --json states the isolation" 0 plan --topology "$juwels" --json
check "as \"isolation\": \"numa\" for exclusive on JUWELS Booster" json 'assert d["isolation"]=="numa" and list(d)[:2]==["policy","isolation"], d'
expect_rc "plan --policy shared --json" 0 plan --topology "$juwels" --policy shared --json
check "shared claims no isolation" json 'assert d["isolation"]=="none"'
expect_rc "plan --policy cores" 0 plan --topology "$juwels" --policy cores --json
check "cores gives each rank half its domain and co-tenants the rest" json \
    'assert d["policy"]=="cores" and [len(r["cpus"]) for r in d["trainer"]]==[3]*4 and len(d["noise"])==36 and d["isolation"]=="l3", (d["isolation"], len(d["noise"]))'
expect_rc "plan --policy cores --cores-per-rank 2" 0 plan --topology "$juwels" --policy cores --cores-per-rank 2 --json
check "co-tenants under a trainer L3 make it isolation cores" json 'assert d["isolation"]=="cores" and len(d["noise"])==40'

expect_rc "the default plan on Tioga (every domain and L3 holds a GPU)" 0 plan --topology "$tioga"
check "leaves co-tenants half of every domain" grep -q 'policy exclusive, 8 trainer ranks x 4 CPUs, 32 noise ranks' "$tmp/out"
check "and says they share memory bandwidth and L3" grep -qx 'isolation: cores — co-tenants share memory bandwidth and L3 with the trainer: use the guard' "$tmp/out"
check "with a warning that exclusive fell back" grep -q 'warning: no NUMA domain or L3 is free of trainer cores: policy exclusive falls back to isolation cores' "$tmp/err"
check "each rank on the L3 of its GPU" grep -Eq '^trainer +1 +1 +3 +56-59 ' "$tmp/out"

expect_rc "a plan that does not fit exits 1" 1 plan --topology "$juwels" --cores-per-rank 7
check "and says what does not fit on one line" grep -qx 'cosched: cannot plan on .*: cannot give 7 cores to each of 1 trainer rank on numa 1 (GPU 1): it has 6 free cores' "$tmp/err"
check "and prints no plan" test ! -s "$tmp/out"
expect_rc "with --json too" 1 plan --topology "$juwels" --cores-per-rank 7 --json
check "where the error is the JSON on stdout, no plan" json \
    "assert list(d) == ['error'] and 'cannot give 7 cores' in d['error']['message'] and d['error']['code'] == 'EFAIL'"
expect_rc "an unknown GPU exits 1" 1 plan --topology "$juwels" --gpus 0,4
check "naming the GPU" grep -q 'GPU 4 does not exist' "$tmp/err"
expect_rc "too many noise ranks exit 1" 1 plan --topology "$juwels" --noise-ranks 25
check "naming the level and suggesting --policy cores" grep -q "which keeps noise off the trainer's NUMA domains and L3s (numa 0,2,4,6); --policy cores lets noise use every core" "$tmp/err"
expect_rc "--gpus none plans noise only" 0 plan --topology "$juwels" --gpus none --json
check "on every core" json 'assert d["trainer"]==[] and len(d["noise"])==48 and d["srun"]["trainer"] is None'

expect_rc "a missing topology file exits 1" 1 topo --topology "$tmp/nope.xml"
check "naming the file" grep -q "cannot read topology file $tmp/nope.xml" "$tmp/err"
echo "garbage" >"$tmp/bad.xml"
expect_rc "a file that is not XML exits 1" 1 plan --topology "$tmp/bad.xml"
head -c 3000 "$juwels" >"$tmp/truncated.xml"
expect_rc "a truncated XML file exits 1" 1 topo --topology "$tmp/truncated.xml"
check "with a one-line message" test "$(wc -l <"$tmp/err")" -eq 1

expect_rc "an unknown policy is a usage error" 2 plan --policy nearest
check "listing the policies" grep -q "unknown policy 'nearest' (exclusive, shared, l3 or cores)" "$tmp/err"
expect_rc "a bad number is a usage error" 2 plan --cores-per-rank two
check "naming the option" grep -q -- "--cores-per-rank needs a whole number" "$tmp/err"
expect_rc "a bad GPU list is a usage error" 2 plan --gpus 1-
expect_rc "an unknown option is a usage error" 2 topo --frobnicate
expect_rc "an unknown command is a usage error" 2 frobnicate
expect_rc "no command is a usage error" 2
expect_rc "cosched --help" 0 --help
check "lists the commands" grep -q 'plan' "$tmp/out"
expect_rc "cosched plan --help" 0 plan --help
check "documents every option" bash -c "for o in --topology --policy --gpus --ranks-per-gpu --cores-per-rank --noise-ranks --smt --json --format; do grep -q -- \"\$o\" '$tmp/out' || exit 1; done"
check "documents every policy with its fallback" bash -c "grep -q '^ *exclusive (default): ' '$tmp/out' && grep -q '^ *cores: co-tenants on any core' '$tmp/out' && grep -q '(falls back to l3 when' '$tmp/out'"
check "documents the default cores per rank" grep -q 'at most 8,' "$tmp/out"
check "and the isolation levels" grep -q 'numa, l3, cores or none' "$tmp/out"
expect_rc "cosched topo --help" 0 topo --help
expect_rc "cosched --version" 0 --version
build=${COSCHED_BUILD_ROOT:?}
for program in daemon/coschedd trainer/cosched-train noise/cosched-noise client/cosched; do
    check "$(basename "$program") --version prints its name and the project's version" bash -c \
        "'$build/$program' --version | grep -qx '$(basename "$program") [0-9][0-9.]*'"
done

# A mistyped command or subcommand: a suggestion, not the whole help.
expect_rc "a mistyped command is a usage error" 2 experimnt
check "... that suggests the command meant" grep -qx "Did you mean 'experiment'? Run 'cosched --help' for the commands." "$tmp/err"
expect_rc "a slip two commands are as near to" 2 stauts
check "... suggests both" grep -q "Did you mean 'status' or 'stats'?" "$tmp/err"
expect_rc "a mistyped subcommand is a usage error" 2 job regster
check "... that suggests the subcommand meant" grep -q "unknown subcommand 'regster': did you mean 'register'?" "$tmp/err"

# --json before or after the command, errors in JSON too; an unreachable daemon named with a hint.
nosock=$tmp/none.sock
expect_rc "with no daemon, status exits 3" 3 --socket "$nosock" status
check "... naming the socket, and how to check the service" bash -c "grep -q 'cannot reach coschedd at $nosock' '$tmp/err' &&
    grep -q \"systemctl status coschedd\" '$tmp/err'"
for placement in "--json status" "status --json"; do
    # shellcheck disable=SC2086 # the words split on purpose
    expect_rc "'cosched --socket S $placement' exits 3" 3 --socket "$nosock" $placement
    check "... with the error as JSON on stdout" json \
        "e=d['error']; assert e['code']=='EUNREACHABLE' and '$nosock' in e['message'] and 'systemctl' in e['hint'], e"
done
expect_rc "a usage error with --json after the command" 2 plan --policy nearest --json
check "... is JSON too, with its code" json "assert d['error']['code']=='EUSAGE' and 'nearest' in d['error']['message']"
expect_rc "--json after the command asks for JSON output" 0 topo --topology "$juwels" --json
check "... which it is" json 'assert len(d["gpus"]) == 4'
expect_rc "--json after -- belongs to the command line, not to cosched" 3 --socket "$nosock" run start --job x -- echo --json
check "... so the error is text" grep -q "^cosched: cannot reach coschedd" "$tmp/err"

# --- Hybrid CPUs: topo shows hwloc's CPU kinds as hwloc-calc reads them, plan puts trainer ranks on
# the fastest kind and noise on the others first.
for f in alderlake-gpu.xml hybrid-2gpu.xml; do
    hybrid=$root/tests/topologies/$f
    expect_rc "topo on $f (hwloc cpukinds) succeeds" 0 topo --topology "$hybrid" --json
    cp "$tmp/out" "$tmp/topo.json"
    if command -v hwloc-calc >/dev/null; then
        check "$f: each kind's CPUs are hwloc-calc --cpukind N's, the fast one IntelCore" python3 -c "
import json, subprocess
d = json.load(open('$tmp/out'))
assert [k['core_type'] for k in d['cpukinds']] == ['IntelAtom', 'IntelCore'], d['cpukinds']
for k in d['cpukinds']:
    got = subprocess.run(['hwloc-calc', '--input', '$hybrid', '--cpukind', str(k['index']), 'all', '-I', 'pu', '--po'],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert k['cpus'] == [int(x) for x in got.split(',')], (k, got)
    assert k['efficiency'] == k['index'], k"
    else
        tap_skip "$f: kinds against hwloc-calc" "hwloc-calc not installed (apt-get install hwloc-nox)"
    fi
    expect_rc "topo table on $f" 0 topo --topology "$hybrid"
    check "... lists the kinds, fastest first" bash -c "grep -A2 '^KIND  EFFICIENCY  CORE TYPE' '$tmp/out' | sed 1d | awk '{print \$3}' | tr '\n' ' ' | grep -qx 'IntelCore IntelAtom '"
    expect_rc "plan on $f" 0 plan --topology "$hybrid" --json
    check "... gives every trainer rank fast cores only and noise slow cores only" python3 -c "
import json
d = json.load(open('$tmp/out'))
fast = set(max(json.load(open('$tmp/topo.json'))['cpukinds'], key=lambda k: k['efficiency'])['cpus'])
assert d['trainer'] and all(set(r['cpus']) <= fast for r in d['trainer']), d['trainer']
assert d['noise'] and all(not set(r['cpus']) & fast for r in d['noise']), d['noise']"
done

tap_done
