#!/usr/bin/env bash
# test_cli: `cosched topo` and `cosched plan` as a user and a job script run them: output,
# JSON schema, srun specs, exit codes (0 ok, 1 cannot be met / unreadable, 2 usage).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/cli_lib.sh"
juwels=$root/tests/topologies/juwels-booster.xml
tioga=$root/tests/topologies/shared/eas-tioga.xml

expect_rc "topo on the JUWELS Booster XML succeeds" 0 topo --topology "$juwels" --json
check "topo --json shows GPU i on NUMA [3,1,7,5][i]" out_json \
    'assert [g["numa"] for g in d["gpus"]] == [[3],[1],[7],[5]], d["gpus"]'
check "topo --json has the documented top-level keys" out_json \
    'assert all(k in d for k in ("packages","cores","pus","numa","gpus","nics")); assert (d["packages"],d["cores"],d["pus"]) == (2,48,96)'
check "topo --json lists each domain's L3 groups and memory" out_json \
    'n=d["numa"][3]; assert n["os_index"]==3 and n["l3"]==[[18,19,20,66,67,68],[21,22,23,69,70,71]] and n["memory_bytes"]==64<<30 and n["gpus"]==[0] and n["nics"]==["mlx5_0"], n'
check "topo --json gives each NIC its domain" out_json \
    'assert [(x["name"],x["numa"]) for x in d["nics"]] == [("mlx5_0",[3]),("mlx5_1",[1]),("mlx5_2",[7]),("mlx5_3",[5])]'

expect_rc "topo table on the JUWELS Booster XML" 0 topo --topology "$juwels"
check "the table shows GPU0 on NUMA 3 with its CPUs" grep -Eq '^GPU0 +cuda0 +0000:03:00.0 +NVIDIA +3 +18-23,66-71$' "$tmp/out"
check "the table shows NUMA 3's L3 groups and devices" grep -Eq '^3 +0 +6 +64.0 GiB +18-23,66-71 +18-20,66-68 \| 21-23,69-71 +GPU0,NIC0$' "$tmp/out"

# Every column of both tables is as wide as its widest cell, on every test file: no cell runs
# into the next (DGX A100's and Lassen's L3 groups and Ulna's package 3612 did).
columns_apart() {
    python3 - "$tmp/out" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
for i, head in enumerate(lines):
    if not (head.startswith("DEVICE ") or head.startswith("NUMA ")):
        continue
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", head)]
    for row in lines[i + 1:]:
        if not row:
            break
        for a, b in zip(starts, starts[1:]):
            assert row[b - 2:b] == "  " and row[b] != " ", (head, row)
PY
}
together=
for f in "$root"/tests/topologies/*.xml "$root"/tests/topologies/shared/*.xml; do
    "$cosched" topo --topology "$f" >"$tmp/out" 2>/dev/null || continue
    columns_apart 2>/dev/null || together="$together ${f#"$root"/tests/topologies/}"
done
check "topo's columns are two spaces apart on every test file" test -z "$together"
if lstopo-no-graphics -i "numa:1 pack:2 core:2 pu:1" --of xml "$tmp/span.xml" 2>/dev/null; then
    expect_rc "topo on a domain attached above two packages" 0 topo --topology "$tmp/span.xml"
    want=$(hwloc-calc -i "$tmp/span.xml" numa:0 -I package --po)
    check "shows every package of the domain, as hwloc-calc finds them ($want)" python3 -c "
import sys
row = [l for l in open('$tmp/out') if l.startswith('0 ')][0].split()
pkgs = set()
for part in row[1].split(','):
    lo, _, hi = part.partition('-')
    pkgs |= set(range(int(lo), int(hi or lo) + 1))
assert pkgs == {int(x) for x in '$want'.split(',')}, (row, '$want')"
    lstopo-no-graphics -i "pack:1 core:1 pu:1" --of xml "$tmp/one.xml"
    expect_rc "topo on a one-core node" 0 topo --topology "$tmp/one.xml"
    check "counts in the singular" grep -q ': 1 package, 1 core, 1 PU (1 allowed), 1 NUMA domain, 0 GPUs, 0 NICs$' "$tmp/out"
else
    skip "a domain above two packages and a one-core node" "lstopo-no-graphics not installed (apt-get install hwloc-nox)"
fi

COSCHED_TOPOLOGY=$juwels "$cosched" topo --json >"$tmp/out" 2>"$tmp/err"
check "COSCHED_TOPOLOGY selects the XML file" out_json 'assert len(d["gpus"]) == 4'
expect_rc "topo on this machine succeeds" 0 topo
expect_rc "topo --json on this machine succeeds" 0 topo --json
check "this machine's JSON parses" out_json 'assert d["source"] == "this machine" and len(d["numa"]) >= 1'

expect_rc "plan --json on JUWELS Booster" 0 plan --topology "$juwels" --json
check "plan JSON places trainer ranks on NUMA 3,1,7,5 and noise on 0,2,4,6" out_json \
    'assert [r["numa"] for r in d["trainer"]] == [3,1,7,5]; assert sorted({r["numa"] for r in d["noise"]}) == [0,2,4,6]; assert len(d["noise"]) == 24'
check "plan JSON carries policy, srun specs and warnings" out_json \
    'assert d["policy"]=="exclusive" and d["srun"]["trainer"].startswith("--cpu-bind=mask_cpu:0xfc0000,") and d["srun"]["noise"].startswith("--cpu-bind=map_cpu:0,1,2") and d["warnings"]==[]'
check "plan JSON trainer ranks name GPU, cpus and mems" out_json \
    'r=d["trainer"][0]; assert (r["rank"],r["gpu"],r["cpus"],r["mems"])==(0,0,[18,19,20,21,22,23],[3]), r'

# --- NUMA nodes a cgroup's cpuset.mems leaves out (1 and 3; NUMA 3's CPUs are out of cpuset.cpus too).
numa_cgroup=$root/tests/topologies/juwels-booster-numa-cgroup.xml
expect_rc "topo on a node exported with NUMA 1 and 3 disallowed" 0 topo --topology "$numa_cgroup" --json
check "every domain is there; 1 and 3 with their memory not allowed" out_json '
n = {x["os_index"]: x for x in d["numa"]}
assert sorted(n) == list(range(8)) and [i for i in n if not n[i]["memory_allowed"]] == [1, 3]
assert n[1]["cpus"] == list(range(6, 12)) + list(range(54, 60)) and n[1]["mems"] == [0, 2], n[1]
assert n[3]["cores"] == 0 and n[3]["cpus"] == [] and n[3]["gpus"] == [0] and n[3]["nics"] == ["mlx5_0"]'
check "GPU0 and mlx5_0 stay local to NUMA 3" out_json \
    'assert d["gpus"][0]["numa"] == [3] and d["nics"][0]["numa"] == [3]'
expect_rc "its table" 0 topo --topology "$numa_cgroup"
check "shows GPU0 on NUMA 3 and says whose memory is not allowed" bash -c "
    grep -Eq '^GPU0 +cuda0 +0000:03:00.0 +NVIDIA +3 +-$' '$tmp/out' &&
    grep -qx '  NUMA 1: ranks on its allowed CPUs bind their memory to NUMA 0,2' '$tmp/out' &&
    grep -qx '  NUMA 3: no allowed CPUs either' '$tmp/out'"
expect_rc "plan with all GPUs refuses GPU0, naming its domain" 1 plan --topology "$numa_cgroup"
check "as numa 3, not (none)" grep -q 'GPU 0 (cuda0) is local to numa 3, which has no free cores' "$tmp/err"
expect_rc "plan --gpus 1-3 --json plans NUMA 1's allowed CPUs" 0 plan --topology "$numa_cgroup" --gpus 1-3 --json
check "GPU1's rank runs on NUMA 1 with memory on 0,2; no rank binds 1 or 3, none uses NUMA 3's CPUs" out_json '
r = d["trainer"][0]
assert (r["gpu"], r["numa"], r["cpus"], r["mems"]) == (1, 1, list(range(6, 12)), [0, 2]), r
for x in d["trainer"] + d["noise"]:
    assert not {1, 3} & set(x["mems"]) and not set(range(18, 24)) & set(x["cpus"]), x
assert any("numa 1" in w and "cpuset.mems" in w for w in d["warnings"]), d["warnings"]'

# --- Memory-only NUMA nodes: HBM beside each domain (4-7), CXL memory under socket 0 (8).
spr=$root/tests/topologies/spr-hbm-cxl.xml
expect_rc "topo on a node with HBM and CXL memory" 0 topo --topology "$spr" --json
check "memory-only domains keep the CPUs hwloc gives them, with their kind" out_json '
n = {x["os_index"]: x for x in d["numa"]}
assert [i for i in n if n[i]["memory_only"]] == [4, 5, 6, 7, 8]
assert (n[4]["kind"], n[4]["cores"], n[4]["local_cpus"]) == ("HBM", 0, [0, 1, 2, 3, 16, 17, 18, 19]), n[4]
assert (n[8]["kind"], n[8]["local_cpus"]) == ("DRAM", list(range(8)) + list(range(16, 24))), n[8]
assert n[0]["hbm"] == [4] and n[0]["kind"] is None and n[0]["cores"] == 4 and n[0]["mems"] == [0]'
expect_rc "its table" 0 topo --topology "$spr"
check "lists the memory-only domains with kind, memory and local CPUs" bash -c "
    grep -Eq '^4 +HBM +16.0 GiB +0-3,16-19 +0$' '$tmp/out' && grep -Eq '^8 +DRAM +128.0 GiB +0-7,16-23 +0-1$' '$tmp/out'"
expect_rc "plan --json on it" 0 plan --topology "$spr" --json
check "binds every rank to its own domain's plain memory" out_json '
assert [r["mems"] for r in d["trainer"]] == [[0], [2]], d["trainer"]
assert all(len(r["mems"]) == 1 and r["mems"][0] < 4 for r in d["noise"]), d["noise"]'
expect_rc "plan --mem hbm --json" 0 plan --topology "$spr" --mem hbm --json
check "adds each trainer rank's own HBM, never CXL, never to noise" out_json '
assert [r["mems"] for r in d["trainer"]] == [[0, 4], [2, 6]], d["trainer"]
assert all(len(r["mems"]) == 1 and r["mems"][0] < 4 for r in d["noise"]) and d["warnings"] == []'
expect_rc "plan --mem hbm where there is none" 0 plan --topology "$juwels" --mem hbm --json
check "keeps the plain binding and warns" out_json '
assert d["trainer"][0]["mems"] == [3] and any("--mem hbm" in w for w in d["warnings"]), d["warnings"]'
expect_rc "plan --mem with an unknown binding is a usage error" 2 plan --topology "$spr" --mem ddr
check "naming the two it knows" grep -q "unknown memory binding 'ddr' (local or hbm)" "$tmp/err"

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
check "as \"isolation\": \"numa\" for exclusive on JUWELS Booster" out_json 'assert d["isolation"]=="numa" and list(d)[:2]==["policy","isolation"], d'
expect_rc "plan --policy shared --json" 0 plan --topology "$juwels" --policy shared --json
check "shared claims what holds: l3, its halves are whole L3s on JUWELS Booster" out_json 'assert d["isolation"]=="l3"'
three1=$root/tests/topologies/2socket-3plus1.xml
expect_rc "plan --policy shared on two sockets with GPUs 3 + 1" 0 plan --topology "$three1" --policy shared --format list
check "gives each rank 2 cores and memory of its GPU's domain only" grep -qz \
    'trainer 0 0-1 0.trainer 1 2-3 0.trainer 2 4-5 0.trainer 3 16-17 1.noise 0 8 0' "$tmp/out"
# hwloc-calc says which package each GPU and each rank's CPUs are on: the same, for every rank.
same_package=1
while read -r role rank cpus mems; do
    [ "$role" = trainer ] || continue
    gpu_pkg=$(hwloc-calc -i "$three1" "os=cuda$rank" -I package)
    cpu_pkg=$(hwloc-calc -i "$three1" -p pu:${cpus//,/ pu:} -I package) # one pu: per range
    [ "$gpu_pkg" = "$cpu_pkg" ] || same_package=0
done <"$tmp/out"
check "on its GPU's package, as hwloc-calc finds both" test "$same_package" = 1
expect_rc "plan --policy shared --json there" 0 plan --topology "$three1" --policy shared --json
check "states isolation cores (one L3 per socket)" out_json 'assert d["isolation"]=="cores" and d["warnings"]==[], d'
expect_rc "--cores-per-rank 4 does not fit socket 0's half" 0 plan --topology "$three1" --policy shared --cores-per-rank 4
check "and warns that ranks 1 and 2 spill onto socket 1, naming the size that fits" grep -q \
    "trainer rank 2 (GPU 2) also runs on numa 1, in another package than its GPU: .*--cores-per-rank 2 keeps" "$tmp/err"
expect_rc "plan --policy cores" 0 plan --topology "$juwels" --policy cores --json
check "cores gives each rank half its domain and co-tenants the rest" out_json \
    'assert d["policy"]=="cores" and [len(r["cpus"]) for r in d["trainer"]]==[3]*4 and len(d["noise"])==36 and d["isolation"]=="l3", (d["isolation"], len(d["noise"]))'
expect_rc "plan --policy cores --cores-per-rank 2" 0 plan --topology "$juwels" --policy cores --cores-per-rank 2 --json
check "co-tenants under a trainer L3 make it isolation cores" out_json 'assert d["isolation"]=="cores" and len(d["noise"])==40'

expect_rc "the default plan on Tioga (every domain and L3 holds a GPU)" 0 plan --topology "$tioga"
check "leaves co-tenants half of every domain" grep -q 'policy exclusive, 8 trainer ranks x 4 CPUs, 32 noise ranks' "$tmp/out"
check "and says they share memory bandwidth and L3" grep -qx 'isolation: cores — co-tenants share memory bandwidth and L3 with the trainer: use the guard' "$tmp/out"
check "with a warning that exclusive fell back" grep -q 'warning: no NUMA domain or L3 is free of trainer cores: policy exclusive falls back to isolation cores' "$tmp/err"
check "each rank on the L3 of its GPU" grep -Eq '^trainer +1 +1 +3 +56-59 ' "$tmp/out"

expect_rc "a plan that does not fit exits 1" 1 plan --topology "$juwels" --cores-per-rank 7
check "and says what does not fit on one line" grep -qx 'cosched: cannot plan on .*: cannot give 7 cores to each of 1 trainer rank on numa 1 (GPU 1): it has 6 free cores' "$tmp/err"
check "and prints no plan" test ! -s "$tmp/out"
expect_rc "with --json too" 1 plan --topology "$juwels" --cores-per-rank 7 --json
check "where the error is the JSON on stdout, no plan" out_json \
    "assert list(d) == ['error'] and 'cannot give 7 cores' in d['error']['message'] and d['error']['code'] == 'EFAIL'"
expect_rc "an unknown GPU exits 1" 1 plan --topology "$juwels" --gpus 0,4
check "naming the GPU" grep -q 'GPU 4 does not exist' "$tmp/err"
expect_rc "too many noise ranks exit 1" 1 plan --topology "$juwels" --noise-ranks 25
check "naming the level and suggesting --policy cores" grep -q "which keeps noise off the trainer's NUMA domains and L3s (numa 0,2,4,6); --policy cores lets noise use every core" "$tmp/err"
expect_rc "--gpus none plans noise only" 0 plan --topology "$juwels" --gpus none --json
check "on every core" out_json 'assert d["trainer"]==[] and len(d["noise"])==48 and d["srun"]["trainer"] is None'

# hwloc 3 writes XML format 3.0, which Debian's hwloc 2.9 refuses; the same node with that header.
sed 's/<topology version="2.0">/<topology version="3.0">/' "$juwels" >"$tmp/v3.xml"
expect_rc "an hwloc 3.0 export is refused with exit 1" 1 topo --topology "$tmp/v3.xml"
check "saying what the file is, what this hwloc reads and how to export a readable one" grep -Eq \
    "is hwloc XML format 3\.0 \(written by hwloc 3 or later\); this hwloc \(2\.[0-9.]+\) reads formats 1\.x to 2\.x: export the topology again with \`lstopo --export-xml-flags v2 FILE\.xml\`" "$tmp/err"
(hwloc-calc --input "$tmp/v3.xml" --number-of core all; true) >"$tmp/calc" 2>&1
check "as hwloc 2's own hwloc-calc does, without the advice" grep -q 'cannot import XML version 3.0 > 2' "$tmp/calc"

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
    check "... with the error as JSON on stdout" out_json \
        "e=d['error']; assert e['code']=='EUNREACHABLE' and '$nosock' in e['message'] and 'systemctl' in e['hint'], e"
done
expect_rc "a usage error with --json after the command" 2 plan --policy nearest --json
check "... is JSON too, with its code" out_json "assert d['error']['code']=='EUSAGE' and 'nearest' in d['error']['message']"
expect_rc "--json after the command asks for JSON output" 0 topo --topology "$juwels" --json
check "... which it is" out_json 'assert len(d["gpus"]) == 4'
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
        skip "$f: kinds against hwloc-calc" "hwloc-calc not installed (apt-get install hwloc-nox)"
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

finish
