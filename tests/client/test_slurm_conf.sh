#!/usr/bin/env bash
# test_slurm_conf: `cosched slurm-conf` checked against Slurm and hwloc themselves — the NodeName
# line against slurmd -C, each GPU's Cores= against hwloc-calc's logical cores of its NUMA domain —
# and its harvest recipe against the planner's split; --check on scontrol outputs saved from the
# test cluster (tests/client/scontrol-22.05, made by tests/slurm/test_harvest.sh), as they are and
# with faults planted. test_harvest runs the recipe and --check on a real Slurm.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/cli_lib.sh"
juwels=$topologies/juwels-booster.xml
slurmd=$(command -v slurmd || echo /usr/sbin/slurmd)
unset COSCHED_TOPOLOGY HWLOC_XMLFILE

# --- JUWELS Booster: 2 x 24 cores, SMT2 (PU c+48 is core c's sibling), A100s on NUMA 3, 1, 7, 5
expect_rc "slurm-conf on the JUWELS Booster XML succeeds" 0 slurm-conf --topology "$juwels" --slurm-version 22.05
check "the NodeName line has the file's host, 2 x 24 x 2 CPUs, 512 GiB and 4 GPUs, then what the system keeps" grep -qx \
    'NodeName=jwb0001 CPUs=96 Boards=1 SocketsPerBoard=2 CoresPerSocket=24 ThreadsPerCore=2 RealMemory=524288 Gres=gpu:4 MemSpecLimit=16384 CpuSpecList=82,83 Features=harvest' "$tmp/out"
check "one gres.conf line per GPU, in PCI order, with its domain's Slurm core ids" python3 -c "
lines = [l for l in open('$tmp/out').read().splitlines() if l.startswith('Name=')]
want = ['Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia%d Cores=%s' % g
        for g in enumerate(['18-23', '6-11', '42-47', '30-35'])]
assert lines == want, lines"
check "every other line is a comment, blank or a setting, so each section can be pasted into its file" python3 -c "
import re
bad = [l for l in open('$tmp/out').read().splitlines() if l and not l.startswith('#') and not re.match(r'[A-Za-z]+=\S', l)
       and l != 'guard:' and not re.match(r'  [a-z_]+: \S', l)]  # coschedd.yaml's guard: section
assert not bad, bad"
check "the comments state both numbering rules" bash -c "grep -q '^# Cores= are Slurm.s core ids: logical core indexes' '$tmp/out' &&
    grep -q '^# GPUs are in PCI bus id order' '$tmp/out' && grep -q 'minor number' '$tmp/out'"
check "the comment over a GPU shows its OS CPUs, which differ from its core ids" grep -qx \
    '# GPU0 0000:03:00.0 on NUMA 3 (CPUs 18-23,66-71)' "$tmp/out"
settings='GresTypes=gpu SelectType=select/cons_tres SelectTypeParameters=CR_Core_Memory
    TaskPlugin=task/cgroup,task/affinity ProctrackType=proctrack/cgroup PreemptType=preempt/partition_prio
    PreemptMode=REQUEUE JobRequeue=1 Prolog=/etc/slurm/prolog.d/* Epilog=/etc/slurm/epilog.d/*
    TaskProlog=/usr/lib/cosched/slurm/taskprolog PrologFlags=Alloc,Contain PrologEpilogTimeout=30
    ConstrainCores=yes ConstrainDevices=yes ConstrainRAMSpace=yes ConstrainSwapSpace=yes'
check "every setting is there, as a line, with why" bash -c "for s in \$(echo '$settings'); do
    grep -Fq \"\$s \" '$tmp/out' && grep -F \"\$s \" '$tmp/out' | grep -q ' # [A-Za-z]' || { echo \"missing \$s\"; exit 1; }; done"
check "and what is for jobs or for the shell is a comment" bash -c "grep -q '^# --partition=gpu --gres-flags=enforce-binding' '$tmp/out' &&
    grep -q '^#   ln -sf /usr/lib/cosched/slurm/prolog /etc/slurm/prolog.d/50-cosched' '$tmp/out' && ! grep -v '^#' '$tmp/out' | cut -d'#' -f1 | grep -qi oversubscribe"

expect_rc "slurm-conf --json on JUWELS Booster" 0 slurm-conf --topology "$juwels" --slurm-version 22.05 --json
check "JSON has the node, the version, the partitions, the split, gres and settings" out_json '
assert list(d) == ["node_name","node_line","slurm_version","version_from","gpu_partition","harvest_partition","split",
                   "no_harvest","gres","settings"], list(d)
assert d["node_name"] == "jwb0001" and d["node_line"].endswith(" Gres=gpu:4 MemSpecLimit=16384 CpuSpecList=82,83 Features=harvest")
assert d["slurm_version"] == "22.05" and d["version_from"] == "--slurm-version" and d["no_harvest"] is None'
check "JSON gres: GPU i on NUMA [3,1,7,5][i] with its file, cores, PCI id and line" out_json '
g = d["gres"]
assert [x["numa"] for x in g] == [[3],[1],[7],[5]] and [x["gpu"] for x in g] == [0,1,2,3], g
assert [x["cores"] for x in g] == ["18-23","6-11","42-47","30-35"]
assert g[0]["file"] == "/dev/nvidia0" and g[0]["pci"] == "0000:03:00.0" and g[0]["type"] == "nvidia_a100-sxm4-40gb"
assert g[3]["line"] == "Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia3 Cores=30-35"'
check "JSON settings name each file and say why" out_json '
s = d["settings"]; assert all(x["file"] and x["setting"] and x["why"] for x in s)
assert {"file": "cgroup.conf", "setting": "ConstrainDevices=yes", "comment": False} in [
    {k: x[k] for k in ("file", "setting", "comment")} for x in s], s
r = [x for x in s if x["setting"].startswith("RestrictedCoresPerGPU=")]
assert len(r) == 1 and r[0]["comment"] and "24.05" in r[0]["why"], r'
"$cosched" --json slurm-conf --topology "$juwels" --slurm-version 22.05 >"$tmp/global.json" 2>&1
check "the global --json gives the same document" cmp -s "$tmp/out" "$tmp/global.json"
COSCHED_TOPOLOGY=$juwels "$cosched" slurm-conf --json >"$tmp/out" 2>"$tmp/err"
check "COSCHED_TOPOLOGY selects the XML file" out_json 'assert d["node_name"] == "jwb0001"'

# --- The harvest recipe against the planner: MaxCPUsPerNode is the CPUs (threads included) of the
# cores `cosched plan` leaves to co-tenants, less the core given to the system when there are 4 or
# more; RestrictedCoresPerGPU the cores of a GPU's rank, in the line from Slurm 24.05 only.
for f in juwels-booster.xml h100-1numa.xml ci-2core-gpu.xml dgx-a100.xml; do
    "$cosched" slurm-conf --topology "$topologies/$f" --slurm-version 24.05 --json >"$tmp/out" 2>"$tmp/err"
    "$cosched" plan --topology "$topologies/$f" --json >"$tmp/plan.json" 2>"$tmp/err"
    check "$f: MaxCPUsPerNode and RestrictedCoresPerGPU are the planner's co-tenant and GPU cores" python3 -c "
import json, re
d, p = json.load(open('$tmp/out')), json.load(open('$tmp/plan.json'))
threads = int(re.search(r'ThreadsPerCore=(\\d+)', d['node_line']).group(1))
cotenant_cores = len(p['noise'])  # one noise rank per core the plan leaves
spec = threads if cotenant_cores >= 4 else 0
s = d['split']
assert s['cotenant_cores'] == cotenant_cores and s['harvest_max_cpus'] == cotenant_cores * threads - spec, (s, cotenant_cores)
assert s['restricted_cores_per_gpu'] == min(len(r['cpus']) for r in p['trainer']), s
harvest = [x['setting'] for x in d['settings'] if x['setting'].startswith('PartitionName=harvest ')]
assert len(harvest) == 1 and ' MaxCPUsPerNode=%d ' % s['harvest_max_cpus'] in harvest[0], harvest
assert ' RestrictedCoresPerGPU=%d' % s['restricted_cores_per_gpu'] in d['node_line'], d['node_line']
print('# %s: %d co-tenant cores x %d threads - %d: MaxCPUsPerNode=%d, RestrictedCoresPerGPU=%d' % (
    '$f', cotenant_cores, threads, spec, s['harvest_max_cpus'], s['restricted_cores_per_gpu']))"
    check "$f: memory adds up: the system's, the harvest side's per CPU, the GPU jobs' per GPU" python3 -c "
import json
d = json.load(open('$tmp/out')); s = d['split']
real = int(d['node_line'].split('RealMemory=')[1].split()[0])
spec_cpus = len(s['spec_cpus'].split(',')) if s['spec_cpus'] else 0
jobs = s['def_mem_per_cpu'] * (s['cpus'] - spec_cpus)
assert s['mem_spec_mib'] + jobs <= real and real - s['mem_spec_mib'] - jobs < s['cpus'], (s, real)
assert s['harvest_max_mem'] == s['def_mem_per_cpu'] * s['harvest_max_cpus']
gpus = len(d['gres'])
assert s['harvest_max_mem'] + s['def_mem_per_gpu'] * gpus <= real - s['mem_spec_mib']
part = {x['setting'].split()[0]: x['setting'] for x in d['settings'] if x['setting'].startswith('PartitionName=')}
assert 'DefMemPerGPU=' in part['PartitionName=gpu'] and 'DefMemPerCPU' not in part['PartitionName=gpu']
assert 'DefMemPerCPU=' in part['PartitionName=harvest'] and 'DefMemPerGPU' not in part['PartitionName=harvest']"
done
expect_rc "slurm-conf for Slurm 22.05 on the one-domain H100 node" 0 slurm-conf --topology "$topologies/h100-1numa.xml" --slurm-version 22.05
check "RestrictedCoresPerGPU is a comment there, not in the NodeName line" bash -c "! grep '^NodeName=' '$tmp/out' | grep -q Restricted &&
    grep -q '^#   RestrictedCoresPerGPU=8: Slurm 24.05 and later' '$tmp/out'"
check "the harvest partition: tier 1, requeued with 120 s of grace, at most 7 of 16 CPUs" grep -qx \
    'PartitionName=harvest Nodes=gpu-h100 PriorityTier=1 PreemptMode=REQUEUE GraceTime=120 MaxCPUsPerNode=7 DefMemPerCPU=8465 MaxMemPerNode=59255 State=UP' "$tmp/out"
check "the GPU partition: tier 2, never preempted, memory per GPU" grep -qx \
    'PartitionName=gpu Nodes=gpu-h100 PriorityTier=2 PreemptMode=OFF DefMemPerGPU=67721 State=UP' "$tmp/out"
expect_rc "the choices: partition names, node list, grace time, memory reserve" 0 slurm-conf --topology "$topologies/h100-1numa.xml" \
    --gpu-partition booster --harvest-partition idle --nodes 'jwb[0001-0936]' --grace 300 --mem-spec 8192
check "are in the lines" bash -c "grep -q '^PartitionName=booster Nodes=jwb\[0001-0936\] ' '$tmp/out' &&
    grep -q '^PartitionName=idle Nodes=jwb\[0001-0936\] .* GraceTime=300 ' '$tmp/out' && grep -q ' MemSpecLimit=8192 ' '$tmp/out'"
expect_rc "two partitions of one name are a usage error" 2 slurm-conf --topology "$juwels" --gpu-partition x --harvest-partition x
expect_rc "a version that is not one is a usage error" 2 slurm-conf --topology "$juwels" --slurm-version latest
check "that names the form" grep -q "such as 22.05 or 24.11.5, not 'latest'" "$tmp/err"
expect_rc "--grace must be a whole number of seconds" 2 slurm-conf --topology "$juwels" --grace -1
expect_rc "--from without --check is a usage error" 2 slurm-conf --topology "$juwels" --from "$tmp"
expect_rc "a memory reserve of the whole node exits 1" 1 slurm-conf --topology "$juwels" --mem-spec 524288
check "saying so" grep -q 'leaves nothing of the node' "$tmp/err"
expect_rc "a node exported inside a job's cgroup still gets its node and gres lines" 0 slurm-conf --topology "$topologies/juwels-booster-numa-cgroup.xml"
check "and says why it gets no harvest partition" bash -c "grep -q '^# No harvest partition: the planner cannot split this node' '$tmp/out' &&
    ! grep -q '^PartitionName=' '$tmp/out'"

# --- --check on scontrol outputs saved from the test cluster (ci-2core-gpu.xml's recipe, Slurm 22.05)
saved=$here/scontrol-22.05
ci=$topologies/ci-2core-gpu.xml
expect_rc "--check --from the saved outputs of a cluster running the recipe passes" 0 slurm-conf --topology "$ci" --check --from "$saved"
check "each point ok, the prolog globs a note (saved outputs cannot show the files)" bash -c "
    [ \"\$(grep -c '  ok  ' '$tmp/out')\" -ge 15 ] && grep -q '^prolog  *note ' '$tmp/out' &&
    grep -q '^0 of 2[0-9] points not as the recipe; 0 let' '$tmp/out'"
expect_rc "--check --json" 0 slurm-conf --topology "$ci" --check --from "$saved" --json
check "has the findings and their count" out_json 'assert d["grave"] == 0 and d["slurm_version"] == "22.05" and len(d["findings"]) >= 18'
cp -r "$saved" "$tmp/planted"
sed -i '/^PartitionName=harvest/s/OverSubscribe=NO/OverSubscribe=FORCE:4/' "$tmp/planted/partitions"
expect_rc "OverSubscribe planted on the harvest partition: exit 1" 1 slurm-conf --topology "$ci" --check --from "$tmp/planted"
check "flagged as letting a co-tenant run unguarded" grep -q '^oversubscribe  *contradicts (!)  *partition harvest has OverSubscribe=FORCE:4' "$tmp/out"
rm -rf "$tmp/planted" && cp -r "$saved" "$tmp/planted"
sed -i 's|^JobSubmitPlugins .*|JobSubmitPlugins        = (null)|' "$tmp/planted/config"
sed -i 's/AvailableFeatures=harvest ActiveFeatures=harvest/AvailableFeatures=(null) ActiveFeatures=(null)/' "$tmp/planted/nodes"
expect_rc "no job_submit/lua and a node without the harvest feature: flagged, but not grave (exit 0)" 0 \
    slurm-conf --topology "$ci" --check --from "$tmp/planted"
check "the gate's two points are missing, saying what it costs" bash -c "
    grep -q '^gate-submit  *missing  *JobSubmitPlugins=(null): harvest jobs ask for no node feature' '$tmp/out' &&
    grep -q \"^gate-feature  *missing  *1 node(s) (vm) of harvest without feature 'harvest'\" '$tmp/out' &&
    grep -q '^2 of 2[0-9] points not as the recipe; 0 let' '$tmp/out'"
rm -rf "$tmp/planted" && cp -r "$saved" "$tmp/planted"
python3 -c "print('NodeName=vm ' + ' '.join('K%d=v' % i for i in range(600)))" >>"$tmp/planted/nodes"
expect_rc "a node line of 600 Key=value words: exit 1" 1 slurm-conf --topology "$ci" --check --from "$tmp/planted"
check "saying so, not 'out of memory'" grep -q "planted/nodes:2: more than 512 Key=value words in one line" "$tmp/err"
expect_rc "a directory without the outputs exits 1" 1 slurm-conf --topology "$ci" --check --from "$tmp/nope"
check "naming the file it needs" grep -q "cannot read $tmp/nope/config" "$tmp/err"

# --- Cores= against hwloc-calc: the logical indexes of the cores in each GPU's domain, over the whole
# node (--disallowed: Slurm counts cores outside the cgroup too). Memory-only domains (HBM, CXL: no
# core's home, topo --json says which) are left out: hwloc gives them the CPUs of their package.
gpu_files='juwels-booster.xml 2socket-3plus1.xml juwels-booster-cgroup.xml juwels-booster-numa-cgroup.xml spr-hbm-cxl.xml dgx-a100.xml
    epyc-corona-hwloc1.xml coral-butte-hwloc1.xml
    shared/24em64t-2n6c2t-pci.xml shared/power8gpudistances.xml shared/eas-tioga.xml shared/coral-lassen.xml
    shared/g4dnmetal.xml shared/epyc-corona-p2.xml'
if command -v hwloc-calc >/dev/null; then
    for f in $gpu_files; do
        "$cosched" slurm-conf --topology "$topologies/$f" --json >"$tmp/out" 2>"$tmp/err"
        "$cosched" topo --topology "$topologies/$f" --json >"$tmp/topo.json" 2>"$tmp/err"
        check "$f: each GPU's Cores= are hwloc-calc's logical cores of its NUMA domain" python3 -c "
import json, subprocess
def expand(text):
    out = set()
    for part in filter(None, text.split(',')):
        a, _, b = part.partition('-')
        out.update(range(int(a), int(b or a) + 1))
    return out
d = json.load(open('$tmp/out'))
memory_only = {n['os_index'] for n in json.load(open('$tmp/topo.json'))['numa'] if n['memory_only']}
assert d['gres'], 'no GPUs'
for g in d['gres']:
    want = set()
    for n in set(g['numa']) - memory_only:
        got = subprocess.run(['hwloc-calc', '--input', '$topologies/$f', '--disallowed', '--pi', '--intersect', 'core',
                              '--lo', 'numa:%d' % n], capture_output=True, text=True, check=True).stdout.strip()
        want |= expand(got)
    assert expand(g['cores']) == want, (g['gpu'], g['cores'], sorted(want))"
    done
else
    skip "Cores= against hwloc-calc" "hwloc-calc not installed (apt-get install hwloc-nox)"
fi

# --- NUMA nodes a cgroup leaves out of cpuset.mems (and NUMA 3 out of cpuset.cpus) describe the node
# all the same: gres.conf is for the node, not for the job that exported it.
numa_cgroup=$topologies/juwels-booster-numa-cgroup.xml
expect_rc "slurm-conf on JUWELS Booster exported with NUMA 1 and 3 disallowed" 0 slurm-conf --topology "$numa_cgroup"
check "GPU0 on disallowed NUMA 3 keeps its CPUs and Cores=" bash -c "grep -qx '# GPU0 0000:03:00.0 on NUMA 3 (CPUs 18-23,66-71)' '$tmp/out' &&
    grep -qx 'Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia0 Cores=18-23' '$tmp/out'"
check "and the gres.conf lines are those of the whole node" bash -c "diff <(grep '^Name=' '$tmp/out') \
    <('$cosched' slurm-conf --topology '$juwels' | grep '^Name=')"
# HBM and CXL memory-only nodes: no GPU is counted twice, Cores= are the plain domains' cores.
expect_rc "slurm-conf on a node with HBM and CXL memory-only NUMA nodes" 0 slurm-conf --topology "$topologies/spr-hbm-cxl.xml"
check "its GPUs get the cores of NUMA 0 and 2 only (hwloc: cuda0 local to NUMA 0, HBM 4, CXL 8)" bash -c "
    grep -qx '# GPU0 0000:18:00.0 on NUMA 0,4,8 (CPUs 0-3,16-19)' '$tmp/out' && grep -q 'File=/dev/nvidia0 Cores=0-3\$' '$tmp/out' &&
    grep -q 'File=/dev/nvidia1 Cores=8-11\$' '$tmp/out'"
check "and the NodeName line counts 2 x 8 cores x 2 and every node's memory" grep -q \
    '^NodeName=spr-hbm CPUs=32 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=458752 Gres=gpu:2' "$tmp/out"

# --- SMT where a core's PUs are not its index: Cores= must not be OS CPU numbers.
expect_rc "slurm-conf on a 2 x 6-core SMT node whose siblings interleave" 0 slurm-conf --topology "$topologies/shared/24em64t-2n6c2t-pci.xml"
check "GPU0 on socket 0 (CPUs 0,2,...,22) gets cores 0-5" bash -c "grep -qx '# GPU0 0000:06:00.0 on NUMA 0 (CPUs 0,2,4,6,8,10,12,14,16,18,20,22)' '$tmp/out' &&
    grep -qx 'Name=gpu File=/dev/nvidia0 Cores=0-5' '$tmp/out'"
check "GPU1 on socket 1 (CPUs 1,3,...,23) gets cores 6-11" grep -qx 'Name=gpu File=/dev/nvidia1 Cores=6-11' "$tmp/out"
check "no Type= where hwloc knows no model" bash -c "! grep -q 'Type=' <(grep '^Name=' '$tmp/out')"
expect_rc "slurm-conf on a POWER8 node (core c is CPUs 8c and 8c+1)" 0 slurm-conf --topology "$topologies/shared/power8gpudistances.xml"
check "its GPUs get cores 0-3 and 4-7, its host name shortened" bash -c "grep -q '^NodeName=drac-12 CPUs=16 ' '$tmp/out' &&
    [ \"\$(grep -c 'Cores=0-3\$' '$tmp/out')\" = 2 ] && [ \"\$(grep -c 'Cores=4-7\$' '$tmp/out')\" = 2 ]"

# --- AMD GPUs: DRM render nodes.
expect_rc "slurm-conf on AMD MI50s seen through DRM only" 0 slurm-conf --topology "$topologies/epyc-corona-hwloc1.xml"
check "their files are the render nodes hwloc saw" bash -c "[ \"\$(grep -o 'File=[^ ]*' '$tmp/out' | tr '\n' ' ')\" = \\
    'File=/dev/dri/renderD128 File=/dev/dri/renderD129 File=/dev/dri/renderD130 File=/dev/dri/renderD131 ' ]"
expect_rc "slurm-conf on Tioga (RSMI)" 0 slurm-conf --topology "$topologies/shared/eas-tioga.xml"
check "GPU N is renderD<128+N>, typed as rsmi names it" grep -qx \
    'Name=gpu Type=amd_instinct_mi200_(mcm)_oam_lc_mba_hpe_c2 File=/dev/dri/renderD135 Cores=32-47' "$tmp/out"

# --- A node without GPUs: no gres lines, no Gres= field; no HostName: the NODE placeholder.
if lstopo-no-graphics -i "pack:2 numa:2 core:4 pu:2" --of xml "$tmp/nogpu.xml" 2>/dev/null; then
    expect_rc "slurm-conf on a node without GPUs" 0 slurm-conf --topology "$tmp/nogpu.xml"
    check "its NodeName line has no Gres= and names the node NODE" grep -qx \
        'NodeName=NODE CPUs=32 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=4096' "$tmp/out"
    check "and there is no gres.conf line" bash -c "! grep -q '^Name=' '$tmp/out' && grep -q '^# gres.conf: no GPUs' '$tmp/out'"
    expect_rc "slurm-conf --json on a node without GPUs" 0 slurm-conf --topology "$tmp/nogpu.xml" --json
    check "has an empty gres list" out_json 'assert d["gres"] == [] and "Gres=" not in d["node_line"]'
else
    skip "a node without GPUs" "lstopo-no-graphics not installed (apt-get install hwloc-nox)"
fi
expect_rc "a node whose packages do not divide its cores (16amd64) still gets slurmd's line" 0 slurm-conf --topology "$topologies/shared/16amd64-8n2c-cpusets.xml"
check "with a warning that names the uneven counts" grep -q 'warning: 10 cores are not a multiple of 6 sockets' "$tmp/err"

# --- slurmd -C itself: on every file (HWLOC_XMLFILE makes slurmd read it) and on this machine.
if [ -x "$slurmd" ]; then
    for f in "$topologies"/*.xml "$topologies"/shared/*.xml; do
        name=${f#"$topologies"/}
        want=$(HWLOC_XMLFILE=$f "$slurmd" -C 2>/dev/null | head -n 1 | grep -o 'CPUs=.*ThreadsPerCore=[0-9]*')
        got=$("$cosched" slurm-conf --topology "$f" 2>/dev/null | grep '^NodeName=' | grep -o 'CPUs=.*ThreadsPerCore=[0-9]*')
        if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "$name: CPUs to ThreadsPerCore as slurmd -C counts them"
        else not_ok "$name: CPUs to ThreadsPerCore as slurmd -C counts them" "slurmd: $want" "cosched: $got"; fi
    done
    want=$("$slurmd" -C 2>/dev/null | head -n 1)
    expect_rc "slurm-conf on this machine succeeds" 0 slurm-conf
    got=$(grep '^NodeName=' "$tmp/out" | sed 's/ Gres=gpu:[0-9]*$//')
    if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "this machine's NodeName line is slurmd -C's: $want"
    else not_ok "this machine's NodeName line is slurmd -C's" "slurmd -C: $want" "cosched:   $got"; fi
else
    skip "NodeName lines against slurmd -C" "slurmd not installed (apt-get install slurmd)"
fi

# --- Bad input and usage.
expect_rc "a missing topology file exits 1" 1 slurm-conf --topology "$tmp/nope.xml"
check "naming the file, printing nothing on stdout" bash -c "grep -q 'cannot read topology file $tmp/nope.xml' '$tmp/err' && [ ! -s '$tmp/out' ]"
echo "garbage" >"$tmp/bad.xml"
expect_rc "a file that is not XML exits 1" 1 slurm-conf --topology "$tmp/bad.xml"
check "saying it is not an hwloc XML topology" grep -q 'is not an hwloc XML topology' "$tmp/err"
head -c 3000 "$juwels" >"$tmp/truncated.xml"
expect_rc "a truncated XML file exits 1" 1 slurm-conf --topology "$tmp/truncated.xml"
check "with a one-line message and no output" bash -c "[ \"\$(wc -l <'$tmp/err')\" -eq 1 ] && [ ! -s '$tmp/out' ]"
expect_rc "with --json too" 1 slurm-conf --topology "$tmp/truncated.xml" --json
check "where the error is JSON on stdout, nothing on stderr" bash -c \
    "jq -e '.error.code == \"EFAIL\" and (.error.message | length > 0)' '$tmp/out' >/dev/null && [ ! -s '$tmp/err' ]"
expect_rc "an unknown option is a usage error" 2 slurm-conf --cores
expect_rc "--topology without a file is a usage error" 2 slurm-conf --topology
expect_rc "an extra argument is a usage error" 2 slurm-conf "$juwels"
check "that suggests --help" grep -q "Try 'cosched slurm-conf --help'" "$tmp/err"
expect_rc "cosched slurm-conf --help" 0 slurm-conf --help
check "documents the options and both numberings" bash -c "for w in --topology --json 'logical core indexes' \
    'PCI bus id order' 'minor number' 'renderD<128+N>' 'slurmd -C'; do grep -qF -- \"\$w\" '$tmp/out' || { echo \"no \$w\"; exit 1; }; done"
expect_rc "cosched --help lists slurm-conf" 0 --help
check "with its summary" grep -q '^  slurm-conf ' "$tmp/out"

finish
