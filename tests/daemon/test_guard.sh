#!/usr/bin/env bash
# test_guard: the slowdown guard for real on this machine's two cores. cosched-train on CPU 0 and
# cosched-noise stream on CPU 1 share one memory controller, so the noise really slows training:
# the guard must throttle it back under the budget and keep it there. Then each knob this machine
# has (cgroup v1 cpu quota, the freezer, SIGSTOP) is driven with pinned shares and checked in
# /proc and the cgroup files, and throttles are undone on release, at shutdown and after kill -9.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"

# start_guard_daemon CONFIG_TEXT: a daemon on the two-core node with that configuration
start_guard_daemon() {
    write_config "$1"
    start_daemon --topology "$topologies/ci-2core-gpu.xml"
}
run_id() { json "$1" 'print(d["id"])'; }
stopped() { [ "$(proc_state "$1")" = T ]; }
not_stopped() { local s; s=$(proc_state "$1"); [ -n "$s" ] && [ "$s" != T ]; }
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(proc_state "$1")" = Z ]; }
# cgroup_dir PID CONTROLLER: the directory of PID's cgroup in that v1 hierarchy ("" if root)
cgroup_dir() { local p; p=$(awk -F: -v c="$2" '$2 ~ "(^|,)"c"(,|$)" {print $3}' "/proc/$1/cgroup"); [ "$p" != / ] && echo "/sys/fs/cgroup/$2$p"; }
cgroup2_dir() { local p; p=$(awk -F: '$1 == "0" {print $3}' "/proc/$1/cgroup"); [ -n "$p" ] && [ "$p" != / ] && echo "$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)$p"; }
frozen() { # frozen PID: its freezer cgroup (v1 or v2) says so
    local d
    d=$(cgroup_dir "$1" freezer) && [ -n "$d" ] && grep -qx FROZEN "$d/freezer.state" && return 0
    d=$(cgroup2_dir "$1") && [ -n "$d" ] && grep -qx 'frozen 1' "$d/cgroup.events"
}
thawed() { ! frozen "$1" && not_stopped "$1"; }

# The share the daemon reports for a co-tenant is the quota the kernel holds its process to (read
# twice around it: the guard may act in between).
consistent() { # consistent JOB PID
    local dir q1 q2 share
    dir=$(cgroup_dir "$2" cpu); q1=$(cat "$dir/cpu.cfs_quota_us")
    share=$(c --json job get --job "$1" | py 'print(d["allowed_share"])')
    q2=$(cat "$dir/cpu.cfs_quota_us")
    [ "$q1" = "$q2" ] && python3 -c "q=$q1; s=$share; assert (q == -1 and s == 1) or abs(q - s * 100000) <= 1000, (q, s)"
}

# --- the closed loop, with a trainer whose sensitivity is known: its step time grows by 20 % of
# the CPU the knobs allow a busy co-tenant (read from the kernel's files, tests/daemon/
# sensitive_trainer.py), so with a 5 % budget the guard must hold the co-tenant at about a quarter
# of a CPU, and the kernel's quota does the holding.
start_guard_daemon "slowdown_budget: 0.05"
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job n --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
c --json run start --job t -- python3 "$here/sensitive_trainer.py" --pidfile "$tmp/noise.pid" \
    --base 0.05 --sensitivity 0.2 >"$tmp/run-sens.json"
baseline_taken() { c --json stats --job t | py 'j=d["jobs"][0]; assert j["baseline"]["samples"] >= 20'; }
check "the trainer alone makes a baseline" wait_for 120 baseline_taken
c --json run start --job n -- "$noise" busy --duration 900 >"$tmp/run-noise.json"
npid=$(run_pid "$tmp/run-noise.json")
echo "$npid" >"$tmp/noise.pid"
throttled() { c --json stats --job t | py 'g=d["jobs"][0]["guard"]; assert g["actions"]["throttle"] >= 1 and g["share"] < 1'; }
check "a co-tenant that costs the trainer 20 % is throttled by the guard" wait_for 120 throttled
held() { c --json stats --job t | py 'j=d["jobs"][0]; g=j["guard"]; s=g["judged"]; assert g["phase"]=="watching" and g["share"] < 1 and s and s["ci95"][0] <= j["budget"]'; }
check "and the slowdown comes back under budget" wait_for 120 held
check "the kernel holds the co-tenant to the share the guard reports (its CFS quota)" wait_for 30 consistent n "$npid"
# "Under budget" can be seen while the guard is still on its way down: just after a decrease its
# window is new and its interval wide. It goes on until the model's slowdown is proven within the
# budget, which is a state to wait for, not a moment to catch.
share_at_most() { c --json job get --job n | py "assert d['allowed_share'] <= $1, d['allowed_share']"; }
check "at most 0.3 of a CPU (a 6 % slowdown): where the model keeps the trainer within budget" \
    wait_for 180 share_at_most 0.3
share=$(c --json job get --job n | py 'print(d["allowed_share"])')
echo "# the co-tenant's share: $share (the model: 0.25 keeps the trainer within 5 %)"
check "while it keeps working" works "$npid"
c --json job get --job n >"$tmp/n.json"
check "job get shows the co-tenant's allowed share and knob" \
    py 'assert d["allowed_share"] < 1 and d["knob"] == "cfs-quota"' <"$tmp/n.json"
check "and the guard's share changes with their times, the last one the share now" py '
c = d["share_changes"]
assert c and c[-1]["share"] == d["allowed_share"] and all(x["by"] == "guard" for x in c), c
assert [x["time"] for x in c] == sorted(x["time"] for x in c) and c[0]["time"] > 1.7e9, c' <"$tmp/n.json"
c metrics >"$tmp/metrics.txt"
check "metrics carry the allowed share" grep -qE '^cosched_cotenant_allowed_share\{jobid="n",knob="cfs-quota"\} 0(\.[0-9]+)?(e-[0-9]+)?$' "$tmp/metrics.txt"
check "and the guard's actions" grep -qE '^cosched_guard_actions_total\{jobid="t",action="throttle"\} [1-9]' "$tmp/metrics.txt"
check "promtool check metrics finds nothing to fix in them (trainer, co-tenant, guard, runs)" \
    promtool check metrics <"$tmp/metrics.txt"
check "each change is in the log" grep -qE 'guard: job t throttle: co-tenants. share 1\.00 -> 0\.[0-9]{2} \(slowdown \+' "$tmp/daemon.log"
check "with the co-tenant's side" grep -qE 'guard: co-tenant n share 1\.00 -> 0\.[0-9]{2} with cfs-quota$' "$tmp/daemon.log"
c job release --job n >/dev/null
check "releasing the co-tenant undoes its throttle and stops it" wait_for 30 gone "$npid"
c job release --job t >/dev/null
stop_daemon

# --- the real workloads: cosched-train beside cosched-noise stream on the other core. How much the
# noise slows training here depends on the machine (+0 to +14 % on the CI VM, run to run), so
# this checks what the guard does with what it measures, not the outcome.
start_guard_daemon "slowdown_budget: 0.05"
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job n --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
c --json run start --job t -- "$train" --model resnet20 --data synthetic:4096 --batch 32 --steps 1000000 \
    --threads 1 >"$tmp/run-train.json"
check "cosched-train alone makes a baseline" wait_for 240 baseline_taken
c --json run start --job n -- "$noise" stream --duration 900 >"$tmp/run-stream.json"
spid=$(run_pid "$tmp/run-stream.json")
judged() { c --json stats --job t | py 'g=d["jobs"][0]["guard"]; assert g["phase"]=="watching" and g["judged"] and d["jobs"][0]["steps_with_cotenant"] >= 20'; }
check "the guard judges its steps beside the stream noise" wait_for 240 judged
check "and the co-tenant's reported share is the quota the kernel holds it to" wait_for 30 consistent n "$spid"
c job release --job n >/dev/null
check "releasing it stops the stream" wait_for 30 gone "$spid"
c job release --job t >/dev/null
check "releasing the trainer stops it (SIGTERM: it ends after its step)" wait_for 60 gone "$(run_pid "$tmp/run-train.json")"
stop_daemon

# --- each knob, with pinned shares (no timing involved)
knob_session() { # knob_session KNOBS: a daemon allowed only those knobs, a co-tenant busy on CPU 1
    start_guard_daemon "guard:
  knobs: [$1]"
    c job register --job k --uid 65534 --role cotenant --policy l3 --cores 1 >/dev/null
    c --json run start --job k -- "$noise" busy --duration 900 >"$tmp/run-k.json"
    kpid=$(run_pid "$tmp/run-k.json")
}
share_is() { c --json job get --job k | py "assert abs(d['allowed_share'] - $1) < 1e-9 and d['knob'] == '$2'"; }

knob_session "cfs-quota, sigstop"
quota_dir=$(cgroup_dir "$kpid" cpu)
check "cfs-quota: the co-tenant's run is in a cgroup of its own" test -n "$quota_dir"
c guard set --job k --share 0.5 >/dev/null
check "cfs-quota: share 0.5 of one CPU is 50 ms of every 100 ms" \
    bash -c "test \$(cat '$quota_dir/cpu.cfs_quota_us') -eq \$((\$(cat '$quota_dir/cpu.cfs_period_us') / 2))"
check "and the job says so" share_is 0.5 cfs-quota
c guard set --job k --share 0 >/dev/null
check "cfs-quota: share 0 stops it (no quota is 0)" wait_for 30 stopped "$kpid"
c guard set --job k --share auto >/dev/null
check "cfs-quota: handed back to the guard (no trainer: share 1) it runs again" wait_for 30 not_stopped "$kpid"
check "with no quota" bash -c "test \$(cat '$quota_dir/cpu.cfs_quota_us') -eq -1"
changes_k() { c --json job get --job k | py 'assert [(x["share"], x["by"]) for x in d["share_changes"]] == [(0.5, "operator"), (0, "operator"), (1, "guard")], d["share_changes"]'; }
check "job get lists the three share changes, who made each" changes_k
c job release --job k >/dev/null
check "cfs-quota: release removes the cgroup" wait_for 30 test ! -d "$quota_dir"
stop_daemon

knob_session "freezer"
c guard set --job k --share 0 >/dev/null
check "freezer: share 0 freezes the co-tenant's cgroup" wait_for 30 frozen "$kpid"
check "freezer: the job names the knob" share_is 0 freezer
# A run started while the group is frozen: the daemon must not wait on a child that froze before
# exec (it would hang), and the run must end up held like the others.
timeout 10 "$cosched" --socket "$sock" --json run start --job k -- "$noise" busy --duration 900 >"$tmp/run-k2.json"
check "freezer: a run started while its co-tenant is frozen starts" test $? -eq 0
k2pid=$(run_pid "$tmp/run-k2.json")
check "and is frozen with the others" wait_for 30 frozen "$k2pid"
check "and the daemon still answers" c status
c run stop "$(run_id "$tmp/run-k2.json")" >/dev/null
# Frozen right after exec, it may not have set up its SIGTERM handler yet: ending by SIGTERM is
# as good as exiting 0 on it; only a SIGKILL (or no end) would mean the SIGTERM never arrived.
ended_clean() { c --json run list | py "r=[x for x in d['runs'] if x['id']==$1][0]; assert (r['state']=='exited' and r['exit_status']==0) or (r['state']=='killed' and r['signal']==15), r"; }
check "freezer: a frozen run told to stop gets its SIGTERM and ends on it (no SIGKILL)" \
    wait_for 30 ended_clean "$(run_id "$tmp/run-k2.json")"
stop_daemon
check "freezer: a daemon that stops resumes what it froze" wait_for 30 thawed "$kpid"
# The pin is kept across restarts: the co-tenant is frozen again, then handed back.
start_guard_daemon "guard:
  knobs: [freezer]"
check "freezer: after a restart the pinned share holds again" wait_for 30 frozen "$kpid"
c guard set --job k --share auto >/dev/null
check "freezer: handed back, it thaws" wait_for 30 thawed "$kpid"
# kill -9 while frozen, and restart with the guard off: nothing the dead daemon froze stays frozen.
c guard set --job k --share 0 >/dev/null
check "freezer: frozen again" wait_for 30 frozen "$kpid"
frozen_dir=$(cgroup_dir "$kpid" freezer || true); [ -n "$frozen_dir" ] || frozen_dir=$(cgroup2_dir "$kpid")
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
start_guard_daemon "guard:
  enabled: false"
check "freezer: a daemon restarted after kill -9, even with the guard off, thaws it" wait_for 30 thawed "$kpid"
check "and removes the group the dead daemon left" test ! -d "$frozen_dir"
c job release --job k >/dev/null
check "freezer: release ends the run" wait_for 30 gone "$kpid"
stop_daemon

knob_session "sigstop"
c guard set --job k --share 0 >/dev/null
check "sigstop: share 0 stops the co-tenant's processes" wait_for 30 stopped "$kpid"
check "as user nobody (the job's uid), still held" grep -qE '^Uid:[[:space:]]+65534' "/proc/$kpid/status"
# kill -9 while it is stopped, and forget the pin: the restarted daemon must not leave it stopped.
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
python3 - "$tmp/state/state.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for job in doc["jobs"]:
    job.pop("share_override", None)
json.dump(doc, open(sys.argv[1], "w"))
EOF
check "sigstop: the co-tenant is still stopped after the daemon died" stopped "$kpid"
start_guard_daemon "guard:
  knobs: [sigstop]"
check "sigstop: a daemon restarted after kill -9 resumes it" wait_for 30 not_stopped "$kpid"
c guard set --job k --share 0.5 >/dev/null
cycled() { local seen_stop=0 seen_run=0; for _ in $(seq 6000); do if stopped "$kpid"; then seen_stop=1; else seen_run=1; fi; [ $seen_stop -eq 1 ] && [ $seen_run -eq 1 ] && return 0; sleep 0.01; done; return 1; }
check "sigstop: share 0.5 duty-cycles it (seen both stopped and running)" cycled
c job release --job k >/dev/null
check "sigstop: release resumes and ends it" wait_for 30 gone "$kpid"
stop_daemon

# --- the cores knob allowed, but a run of the daemon's has one core per rank: nothing to narrow,
# so the quota holds it, and job get says why (the knob itself: test_external_cgroups.sh).
knob_session "cores, cfs-quota, sigstop"
c guard set --job k --share 0.5 >/dev/null
check "cores: a run on one core is held by the quota instead" share_is 0.5 cfs-quota
check "cores: and job get says why it is not narrowed" bash -c \
    "'$cosched' --socket '$sock' --json job get --job k | python3 -c 'import json,sys; h=json.load(sys.stdin)[\"hold\"]; assert h[\"cores_kept\"] == 1 and \"two CPUs\" in h[\"cores_note\"], h'"
c job release --job k >/dev/null
check "cores: release ends the run" wait_for 30 gone "$kpid"
stop_daemon

# --- work is never lost: a throttled stream still validates, a throttled ior still cleans up
knob_session "cfs-quota, sigstop"
c job release --job k >/dev/null
c job register --job w --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
c guard set --job w --share 0.3 >/dev/null
c --json run start --job w -- "$noise" stream --array-mb 16 --ntimes 5 >"$tmp/run-s.json"
sid=$(run_id "$tmp/run-s.json")
mkdir -p "$tmp/ior"
c --json run start --job w -- "$noise" ior --dir "$tmp/ior" --block 4M --segments 2 --duration 3 >"$tmp/run-i.json"
iid=$(run_id "$tmp/run-i.json")
ended_ok() { c --json run list --job w | py "r=[x for x in d['runs'] if x['id']==$1][0]; assert r['state']=='exited' and r['exit_status']==0, r"; }
check "a stream benchmark at share 0.3 finishes" wait_for 300 ended_ok "$sid"
sout=$(python3 -c "import json; print(json.load(open('$tmp/run-s.json'))['stdout'])")
check "and validates every kernel" bash -c "test \$(grep -c '\"validated\":true' '$sout') -eq 4"
check "an ior run at share 0.3 finishes" wait_for 300 ended_ok "$iid"
check "and leaves no file behind" bash -c "test -z \"\$(ls -A '$tmp/ior' 2>/dev/null)\""
c job release --job w >/dev/null
stop_daemon; rc=$?
check "the daemon exits cleanly after all that" test $rc -eq 0

finish
