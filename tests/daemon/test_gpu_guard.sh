#!/usr/bin/env bash
# test_gpu_guard: the guard judging a trainer that reports nothing by its GPU's busy time, through
# the stand-in NVML and ROCm SMI of tests/daemon/fakegpu (on LD_LIBRARY_PATH): its GPU is 0.9 busy
# alone and busy = 0.9 / (1 + 0.2 x the CPUs the knobs allow its co-tenant's busy processes, read
# from the kernel's files), so at a 5 % budget the guard must hold a busy co-tenant to a quarter
# of a CPU, and the kernel's quota does the holding. Then everything that can go wrong with a GPU library — lost, failing,
# absent, a GPU it does not know — must release the co-tenant, say why and leave nothing stopped;
# and the source of each job follows what it asked for, its partition and what it reports.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/gpu_daemon_lib.sh"
source_is() { c --json job get --job "$1" | py "p=d['progress']; assert p['source'] == '$2', p"; }

# --- the closed loop: a trainer that reports nothing, judged by its GPU
set_gpu "gpu 0000:03:00.0 busy 0.9 k 0.2 cotenant $tmp/noise.pid"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "slowdown_budget: 0.05
progress:
  gpu_retry: 1
guard:
  idle_release: 5"
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job n --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
check "a GPU job that reports nothing takes its progress from its GPU's busy time, through NVML" wait_for 30 source_is t gpu
c --json job get --job t >"$tmp/t.json"
check "job get says which GPU, by PCI bus id, and how busy" py '
g = d["progress"]["gpus"][0]
assert g["pci"] == "0000:03:00.0" and g["library"] == "nvml" and g["state"] in ("sampling", "starting"), g' <"$tmp/t.json"
c --json run start --job n -- "$noise" busy --duration 900 >"$tmp/run-n.json"
npid=$(run_pid "$tmp/run-n.json")
echo "$npid" >"$tmp/noise.pid"
held() { c --json stats --job t | py '
j = d["jobs"][0]; g = j["guard"]; s = g["judged"]
assert g["phase"] == "watching" and g["actions"]["throttle"] >= 1 and 0 < g["share"] < 1 and s and s["ci95"][0] <= j["budget"]'; }
check "the guard learns the GPU's baseline, throttles the co-tenant and holds the trainer within budget" wait_for 120 held
check "the kernel holds the co-tenant to the guard's share: its cgroup's CFS quota" wait_for 30 held_by_kernel n "$npid" 1
# Held can be seen while the guard is still on its way down (a new window's interval is wide): it
# goes on to where the model's slowdown is within budget, a state to wait for.
share_between() { c --json job get --job n | py "assert $1 <= d['allowed_share'] <= $2, d['allowed_share']"; }
check "about a quarter of a CPU, where the model keeps the trainer within budget (0.1 .. 0.4)" \
    wait_for 180 share_between 0.1 0.4
guard_share=$(c --json job get --job n | py 'print(d["allowed_share"])')
echo "# the co-tenant's share: $guard_share (the model: 0.25 keeps the trainer within 5 %)"
check "while it keeps working" works "$npid"
busy_again() { c --json job get --job t | py 'b = d["progress"]["gpu_busy"]; assert b >= 0.84, b'; }
check "its GPU is busy again (>= 0.84 of 0.9)" wait_for 30 busy_again
check "each action is logged in GPU windows" grep -qE "guard: job t throttle: .* [0-9]+ GPU windows\)" "$tmp/daemon.log"
check "stats says where the progress comes from" bash -c "'$cosched' --socket '$sock' stats --job t | grep -q 'progress from gpu (auto): the busy time of its GPUs'"
check "cosched guard too" bash -c "'$cosched' --socket '$sock' guard | grep -q 'trainer t: watching, .*progress from gpu'"
check "cosched status lists the GPU and how it is read" bash -c "'$cosched' --socket '$sock' status | grep -qE 'GPU 0 0000:03:00.0  sampling +sampled through nvml'"
c metrics >"$tmp/metrics.txt"
check "metrics: the trainer's source and its GPU's busy fraction" bash -c \
    "grep -q '^cosched_trainer_progress_source{jobid=\"t\",source=\"gpu\"} 1' '$tmp/metrics.txt' &&
     grep -qE '^cosched_trainer_gpu_busy_ratio\{jobid=\"t\"\} 0\.[0-9]+' '$tmp/metrics.txt' &&
     grep -q '^cosched_gpu_sampled{pci=\"0000:03:00.0\"} 1' '$tmp/metrics.txt'"
check "promtool finds nothing to fix in them" promtool check metrics <"$tmp/metrics.txt"

# --- the GPU is lost mid-throttle: said, and the co-tenant let go at once, nothing left held
set_gpu "gpu 0000:03:00.0 busy 0.9 k 0.2 cotenant $tmp/noise.pid state lost"
check "a lost GPU: the trainer has no source, and says why" wait_for 30 source_is t none
check "... in job get's reason" bash -c "'$cosched' --socket '$sock' --json job get --job t | grep -q 'GPU is lost'"
check "... a log line names the GPU" grep -qE "gpu 0 \(0000:03:00.0\): lost: .*GPU is lost" "$tmp/daemon.log"
check "... status lists it as a problem" bash -c "'$cosched' --socket '$sock' status | grep -q '^problem: .*GPU is lost'"
released() { c --json job get --job n | py 'assert d["allowed_share"] == 1, d["allowed_share"]'; }
check "... its co-tenant is released to share 1" wait_for 30 released
quota() { cat "$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print "/sys/fs/cgroup/cpu" $3}' "/proc/$npid/cgroup")/cpu.cfs_quota_us"; }
check "... without a quota" test "$(quota)" = -1
check "... and not stopped" bash -c "test \"\$(awk '{print \$3}' /proc/$npid/stat)\" != T"
set_gpu "gpu 0000:03:00.0 busy 0.9 k 0.2 cotenant $tmp/noise.pid"
check "found again, the GPU is the trainer's source once more (its baseline learned again)" wait_for 30 source_is t gpu
check "... and the change is logged" grep -q "guard: job t: progress from gpu, was none" "$tmp/daemon.log"

# --- readings that fail: no observation to judge, the co-tenant let go too
set_gpu "gpu 0000:03:00.0 busy 0.9 state error"
check "failing readings: the trainer has no source" wait_for 30 source_is t none
check "... its co-tenant is released" wait_for 30 released
set_gpu "gpu 0000:03:00.0 busy 0.9 state mig"
check "a MIG GPU (NVML reports no utilisation): said so" wait_for 30 bash -c \
    "'$cosched' --socket '$sock' --json job get --job t | grep -q 'MIG mode?'"

# --- a driver that hangs: the daemon keeps answering (the library is read on its own thread)
set_gpu "gpu 0000:03:00.0 busy 0.9 state hang"
check "a GPU library call that blocks for a minute ..." wait_for 30 test -e "$tmp/gpu.ctl.hanging"
check "... keeps neither requests nor the event loop waiting" "$cosched" --socket "$sock" --timeout 10 status
check "... nor the guard's tick (its trainer's source is still chosen)" "$cosched" --socket "$sock" --timeout 10 guard
stop_daemon
check "and a daemon that stops does not wait for the driver either: it exits cleanly" test $? = 0
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "slowdown_budget: 0.05
progress:
  gpu_retry: 1"

# --- the source a job asks for, and what reporting steps does
set_gpu "gpu 0000:03:00.0 busy 0.9"
wait_for 30 source_is t gpu
"$cosched" --socket "$sock" report --job t --step-time 0.05 >/dev/null
check "a GPU job that reports a step is judged by its steps from then on (auto)" source_is t steps
check "... and says so in the log" grep -q "guard: job t: progress from steps, was gpu" "$tmp/daemon.log"
c job release --job n >/dev/null
c job release --job t >/dev/null
c job register --job g --uid 0 --role trainer --policy l3 --cores-per-rank 1 --progress gpu >/dev/null
c --json report --job g --step-time 0.05 >"$tmp/report.json"
check "a job an operator gave --progress gpu keeps it; its reported steps are not judged" bash -c \
    "grep -q '\"judged\": false' '$tmp/report.json' && '$cosched' --socket '$sock' --json job get --job g | grep -q '\"source\": \"gpu\"'"
check "... and a baseline step time is refused for it" bash -c \
    "! '$cosched' --socket '$sock' report --job g --step-time 0.05 --baseline 2>'$tmp/err' && grep -q 'comes from gpu, not from steps' '$tmp/err'"
c job release --job g >/dev/null
c job register --job s --uid 0 --role trainer --policy l3 --cores-per-rank 1 --progress steps >/dev/null
check "--progress steps on a GPU job: steps only, even before any is reported" source_is s steps
c job release --job s >/dev/null
check "a progress source a co-tenant asks for is refused" bash -c \
    "! '$cosched' --socket '$sock' job register --job x --uid 0 --role cotenant --progress gpu 2>'$tmp/err' && grep -q 'a trainer' '$tmp/err'"
check "an unknown source is a usage error" bash -c \
    "'$cosched' --socket '$sock' job register --job x --uid 0 --role trainer --progress gpus 2>/dev/null; test \$? = 2"
stop_daemon

# --- instructions retired: this machine has no hardware PMU, so task-clock stands in for them
start_gpu_daemon ci-2core-gpu.xml "$fakegpu"
c job register --job m --uid 0 --role trainer --policy l3 --cores-per-rank 1 --progress pmu >/dev/null
pmu_line=$(c --json status | py 'print(d["guard"]["progress"]["pmu"])')
echo "# PMU here: $pmu_line"
reason_has() { c --json job get --job "$1" | py "assert '$2' in d['progress']['reason'], d['progress']['reason']"; }
if [[ $pmu_line == *"no hardware PMU"* ]]; then
    check "--progress pmu where there is no PMU: no source, and why" reason_has m "this machine offers no hardware PMU"
else
    check "--progress pmu where there is a PMU: counted" true
fi
c job release --job m >/dev/null
stop_daemon
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "progress:
  pmu_event: task-clock"
c job register --job m --uid 0 --role trainer --policy l3 --cores-per-rank 1 --progress pmu >/dev/null
check "--progress pmu before the job has processes: no source yet, and why" reason_has m "no processes of the job are known yet"
c --json run start --job m -- "$noise" busy --duration 900 >"$tmp/run-m.json"
check "once a run of it starts, its processes are counted" wait_for 30 source_is m pmu
check "... with the stand-in said as such" reason_has m "a stand-in for testing, not progress"
observed() { c --json stats --job m | py 'assert d["jobs"][0]["steps"] >= 3'; }
check "... and its counts reach the statistics once a second" wait_for 30 observed
c job release --job m >/dev/null
stop_daemon

# --- per partition, kept across restarts
set_gpu "gpu 0000:03:00.0 busy 0.9"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "progress:
  source: auto
  partitions:
    debug: none"
c job register --job p --uid 0 --role trainer --policy l3 --cores-per-rank 1 --partition debug >/dev/null
check "a job of a partition the site set to none has no source" source_is p none
check "... and says it was asked" bash -c "'$cosched' --socket '$sock' --json job get --job p | grep -q '\"requested\": \"none\"'"
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "progress:
  partitions:
    debug: gpu"
check "after a restart the job keeps what it was registered with" source_is p none
c job release --job p >/dev/null
stop_daemon
printf 'progress:\n  partitions:\n    bad name: gpu\n' >"$tmp/bad.yaml"
check "a partition name with a space in coschedd.yaml is refused, with the line" bash -c \
    "! '$build/daemon/coschedd' --check-config --config '$tmp/bad.yaml' 2>'$tmp/err' && grep -q 'bad.yaml:3:5: progress.partitions' '$tmp/err'"
printf 'progress:\n  source: gpus\n' >"$tmp/bad.yaml"
check "an unknown source in coschedd.yaml is refused" bash -c \
    "! '$build/daemon/coschedd' --check-config --config '$tmp/bad.yaml' 2>'$tmp/err' && grep -q 'not a progress source' '$tmp/err'"

# --- no NVML at all, and a GPU NVML does not know
start_gpu_daemon ci-2core-gpu.xml "$tmp/nowhere"
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
check "without libnvidia-ml.so.1 a GPU job has no source" wait_for 30 source_is t none
check "... and says the library cannot be loaded" wait_for 30 bash -c \
    "'$cosched' --socket '$sock' --json job get --job t | grep -q 'cannot load libnvidia-ml.so.1'"
check "... a log line says so too" wait_for 30 grep -qE "gpu 0 \(0000:03:00.0\): unavailable: cannot load libnvidia-ml.so.1" "$tmp/daemon.log"
c job release --job t >/dev/null
stop_daemon
set_gpu "gpu 0000:07:00.0 busy 0.9"
start_gpu_daemon dgx-a100.xml
c job register --job a --uid 0 --role trainer --gpus 0 >/dev/null
c job register --job b --uid 0 --role trainer --gpus 1,2 >/dev/null
check "on a DGX, a trainer on a GPU NVML knows is judged by it" wait_for 30 source_is a gpu
check "one on GPUs NVML does not know has no source" wait_for 30 source_is b none
check "... naming the GPU by PCI bus id" bash -c \
    "'$cosched' --socket '$sock' --json job get --job b | grep -q 'NVML has no GPU at PCI 0000:0f:00.0'"
c job release --job a >/dev/null
c job release --job b >/dev/null
stop_daemon

# --- a daemon that detaches itself (no --foreground, outside systemd) samples its GPUs too
set_gpu "gpu 0000:03:00.0 busy 0.9"
rm -f "$sock"
COSCHED_FAKE_GPU=$tmp/gpu.ctl LD_LIBRARY_PATH=$fakegpu "$build/daemon/coschedd" --config "$tmp/coschedd.yaml" \
    --socket "$sock" --state-dir "$tmp/state" --topology "$root/tests/topologies/ci-2core-gpu.xml" >>"$tmp/daemon.log" 2>&1
wait_for 30 c status
detached=$(c --json status | py 'print(d["pid"])')
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
check "a detached daemon reads its GPUs (its threads start after the fork)" wait_for 30 source_is t gpu
c job release --job t >/dev/null
kill -TERM "$detached"
gone_detached() { ! kill -0 "$detached" 2>/dev/null; }
check "... and stops on SIGTERM" wait_for 30 gone_detached

# --- AMD: ROCm SMI
set_gpu "gpu 0000:73:00.0 busy 0.5" "gpu 0000:13:00.0 busy 0.8"
start_gpu_daemon epyc-corona-hwloc1.xml
c job register --job r --uid 0 --role trainer --gpus 0 >/dev/null
amd() { c --json job get --job r | py '
p = d["progress"]; g = p["gpus"][0]
assert p["source"] == "gpu" and g["library"] == "rocm-smi" and g["pci"] == "0000:13:00.0" and p["gpu_busy"] == 0.8, p'; }
check "an AMD GPU is read through ROCm SMI, matched by its PCI bus id" wait_for 30 amd
c job release --job r >/dev/null
stop_daemon
finish
