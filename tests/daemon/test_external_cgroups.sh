#!/usr/bin/env bash
# test_external_cgroups: a co-tenant that someone else started, held where it is — in cgroup
# trees laid out as Slurm lays them out, made in this machine's real hierarchies (cgroup v1
# cpuset and freezer, the v2 unified one), its process put there the way slurmstepd puts a task,
# and `cosched job confine` called from inside them as the TaskProlog calls it. What Slurm would
# do is done by hand: freeze a step (scontrol suspend), remove the cgroups (the job ended). The
# kernel does the holding: SIGSTOP under v1, cgroup.freeze of the task leaf under v2. What is
# checked is what the kernel's files and /proc say (a quota, a state, no CPU time at all while
# frozen), never a share of CPU measured over a few seconds of a machine that may be loaded.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source-path=SCRIPTDIR
. "$here/gpu_daemon_lib.sh"
v1=/sys/fs/cgroup
v2=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
if [ "$(id -u)" != 0 ] || [ ! -d $v1/cpuset ] || [ ! -d $v1/freezer ] || [ -z "$v2" ] || [ ! -e "$v2/cgroup.procs" ]; then
    skip_all "co-tenants held in Slurm-shaped cgroups: needs root, cgroup v1 cpuset and freezer and a cgroup2 mount"
fi
prefix=cosched-test-slurm-$$
pids=()
# Every process back to the roots, the trees removed deepest first.
remove_tree() {
    local top=$1 procs=$2 d p
    [ -d "$top" ] || return 0
    for d in $(find "$top" -depth -type d); do
        for p in $(cat "$d/cgroup.procs" 2>/dev/null); do echo "$p" >"$procs" 2>/dev/null; done
        [ -e "$d/cgroup.freeze" ] && echo 0 >"$d/cgroup.freeze" 2>/dev/null
        [ -e "$d/freezer.state" ] && echo THAWED >"$d/freezer.state" 2>/dev/null
    done
    find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null
}
remove_trees() { # the test's processes gone (stopped ones too), its trees with them
    local p
    for p in ${pids[@]+"${pids[@]}"}; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
    remove_tree "$v1/freezer/$prefix" "$v1/freezer/cgroup.procs"
    remove_tree "$v1/cpuset/$prefix" "$v1/cpuset/cgroup.procs"
    remove_tree "$v2/$prefix" "$v2/cgroup.procs"
}
at_exit remove_trees

still() { # still PID: once it is frozen or stopped, it gets no CPU at all (its CPU time stays put)
    local before; before=$(cpu_ticks "$1"); sleep 0.5; [ "$(cpu_ticks "$1")" = "$before" ]
}
toggles() { # toggles FILE: cosched writes 1 and 0 into it in turn (a duty cycle), seen twice each
    python3 - "$1" <<'PY'
import sys, time
seen, last, end = [], None, time.monotonic() + 60
while time.monotonic() < end and len(seen) < 4:
    v = open(sys.argv[1]).read().strip()
    if v != last:
        seen.append(v)
        last = v
    time.sleep(0.005)
sys.exit(0 if len(seen) >= 4 else 1)
PY
}
stopped() { [ "$(proc_state "$1")" = T ]; }
cpu=1
mems=$(cat $v1/cpuset/cpuset.mems)
mems=${mems%%[-,]*}
# cpuset_dir DIR: a v1 cpuset cgroup on the way down to DIR: every CPU above job_<id>, $cpu from there.
cpuset_dir() {
    local d=$v1/cpuset part cpus
    cpus=$(cat $v1/cpuset/cpuset.cpus)
    for part in $(echo "${1#"$v1"/cpuset/}" | tr / ' '); do
        d=$d/$part
        [ "${part#job_}" != "$part" ] && cpus=$cpu
        mkdir -p "$d"
        echo "$cpus" >"$d/cpuset.cpus"
        echo "$mems" >"$d/cpuset.mems"
    done
}
# in_cgroups CGROUP_PROCS_FILES... -- CMD: this (sub)shell becomes CMD in those cgroups, as slurmstepd
# puts a task there: run it in the background or in ( ).
in_cgroups() {
    local files=()
    while [ "$1" != -- ]; do files+=("$1"); shift; done
    shift
    exec bash -c 'for f in "${@:2:$1}"; do echo $$ >"$f" || exit 99; done; shift $(($1 + 1)); exec "$@"' _ "${#files[@]}" "${files[@]}" "$@"
}

set_gpu "gpu 0000:03:00.0 busy 0.9"
# A stand-in scontrol: `scontrol -o show job ID` says the state in $tmp/jobstate.
printf '#!/bin/sh\necho "JobId=$4 JobName=cotenant JobState=$(cat %s/jobstate) Reason=None"\n' "$tmp" >"$tmp/scontrol"
chmod 755 "$tmp/scontrol"
echo RUNNING >"$tmp/jobstate"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" 'slowdown_budget: 0.05
guard:
  pause_timeout: 30
  scontrol: '"$tmp/scontrol"'
progress:
  pmu_event: task-clock' || exit 1
c job register --job t --uid 0 --role trainer --cpus 0 --external >/dev/null

# --- cgroup v1, as proctrack/cgroup and task/cgroup make it (no jobacct_gather: no cpu directory)
job=$prefix/uid_0/job_77
cpuset_dir "$v1/cpuset/$job/step_0"
mkdir -p "$v1/freezer/$job/step_0"
c job register --job 77 --uid 0 --role cotenant --cpus 1 --external >/dev/null
in_cgroups "$v1/cpuset/$job/step_0/cgroup.procs" "$v1/freezer/$job/step_0/cgroup.procs" -- \
    "$noise" busy --duration 900 >/dev/null &
npid=$!
pids+=("$npid")
set_gpu "gpu 0000:03:00.0 busy 0.9 k 0.2 cotenant $v1/freezer/$job"
(in_cgroups "$v1/cpuset/$job/step_0/cgroup.procs" "$v1/freezer/$job/step_0/cgroup.procs" -- \
    "$cosched" --socket "$sock" job confine --job 77 >/dev/null)
c --json job get --job 77 >"$tmp/77.json"
check "v1: job confine from inside the job's cgroups has it held there" py '
h = d["hold"]
assert h["where"] == "slurm" and h["cgroup"].endswith("/freezer/'"$prefix"'/uid_0/job_77") and d["knob"] == "cfs-quota", d' <"$tmp/77.json"
check "v1: job get tells its escalation through Slurm (none: guard.requeue_after is 0)" py '
e = d["escalation"]
assert e["step"] == "none" and e["requeues"] == 0 and e.get("detail") is None, e' <"$tmp/77.json"
in_our_cpu_group() { grep -qE "^[0-9]+:cpu:/cosched-[0-9a-f]+/77$" "/proc/$npid/cgroup"; }
check "v1: its task was moved to a cpu group of cosched's (Slurm's task/cgroup has none)" wait_for 30 in_our_cpu_group
our_cpu_group=$v1/cpu$(awk -F: '$2 == "cpu" {print $3}' "/proc/$npid/cgroup")
check "v1: and stays in Slurm's freezer and cpuset cgroups" bash -c \
    "grep -q ':freezer:/$job/step_0\$' /proc/$npid/cgroup && grep -q ':cpuset:/$job/step_0\$' /proc/$npid/cgroup"
held() { c --json stats --job t | py '
j = d["jobs"][0]; g = j["guard"]; s = g["judged"]
assert g["phase"] == "watching" and 0 < g["share"] < 1 and s and s["ci95"][0] <= j["budget"]'; }
check "v1: the guard holds the trainer within budget" wait_for 120 held
check "v1: through the CFS quota on that group (the guard's share of its CPU)" wait_for 30 held_by_kernel 77 "$npid" 1
c guard set --job 77 --share 0 >/dev/null
check "v1: share 0 stops it with SIGSTOP" wait_for 30 stopped "$npid"
echo FROZEN >"$v1/freezer/$job/step_0/freezer.state" # scontrol suspend
suspended() { grep -q "co-tenant 77: Slurm suspended it" "$tmp/daemon.log"; }
check "v1: a step frozen as Slurm suspends is seen" wait_for 30 suspended
not_stopped_by_us() { [ "$(proc_state "$npid")" != T ]; }
check "v1: what cosched stopped is continued (Slurm's freeze holds it)" wait_for 30 not_stopped_by_us
step_frozen() { grep -qx FROZEN "$v1/freezer/$job/step_0/freezer.state"; }
frozen_still() { wait_for 30 step_frozen && still "$npid"; }
check "v1: and it stays suspended (frozen by Slurm, it gets no CPU)" frozen_still
echo THAWED >"$v1/freezer/$job/step_0/freezer.state" # scontrol resume
check "v1: resumed by Slurm, it is held again at its share" wait_for 30 stopped "$npid"
c guard set --job 77 --share auto >/dev/null
kill -9 "$npid"
wait "$npid" 2>/dev/null
remove_tree "$v1/freezer/$prefix" "$v1/freezer/cgroup.procs"
gone() { grep -q "co-tenant 77: its cgroup .* is gone: let go" "$tmp/daemon.log"; }
check "v1: the job's cgroups gone, it is let go with a log line" wait_for 30 gone
check "... and status says so" bash -c "'$cosched' --socket '$sock' status | grep -q '^problem: co-tenant 77: not held: its cgroup'"
check "... and cosched's cpu group for it is gone" test ! -d "$our_cpu_group"
c job release --job 77 >/dev/null
remove_tree "$v1/cpuset/$prefix" "$v1/cpuset/cgroup.procs"

# --- signals (issue 45): the co-tenant's owner, uid 65534, signals its job held at share 0 from
# outside the job's cgroups, every 100 ms for 10 s. Only an ending job (Slurm's word: the
# stand-in scontrol) is let go whole; any other signal is let through and the hold kept. What it
# gained is read from the kernel (utime + stime), an upper bound a loaded machine only lowers.
chmod 755 "$tmp"
mkdir "$tmp/owner" && chown 65534 "$tmp/owner" # where the co-tenant says its handlers are set
cat >"$tmp/cotenant.py" <<'PY'
import os, signal, sys, time
here = sys.argv[1]
def on_signal(sig, frame):  # a checkpointing job's handler; it ends only when its job does
    if sig == signal.SIGTERM and os.path.exists(os.path.join(here, "ending")):
        start = time.process_time()  # a checkpoint of half a CPU second: 50 s at share 0
        while time.process_time() - start < 0.5:
            pass
        sys.exit(0)
signal.signal(signal.SIGUSR1, on_signal)
signal.signal(signal.SIGTERM, on_signal)
open(os.path.join(here, "handlers-set"), "w").close()
while True:  # busy, as a co-tenant the guard must hold
    pass
PY
# /usr/bin/python3 for uid 65534: not a shim under root's home, which it cannot read.
as_owner() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
job=$prefix/uid_65534/job_81
cpuset_dir "$v1/cpuset/$job/step_0"
mkdir -p "$v1/freezer/$job/step_0"
c job register --job 81 --uid 65534 --role cotenant --cpus 1 --external >/dev/null
in_cgroups "$v1/cpuset/$job/step_0/cgroup.procs" "$v1/freezer/$job/step_0/cgroup.procs" -- \
    setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 "$tmp/cotenant.py" "$tmp/owner" &
npid=$!
pids+=("$npid")
wait_for 30 test -e "$tmp/owner/handlers-set" # held before, it would die of the first SIGUSR1
(in_cgroups "$v1/cpuset/$job/step_0/cgroup.procs" "$v1/freezer/$job/step_0/cgroup.procs" -- \
    "$cosched" --socket "$sock" job confine --job 81 >/dev/null)
c guard set --job 81 --share 0 >/dev/null
held_at_zero() { wait_for 30 stopped "$npid" && [ "$(quota_of "$npid")" = 0.01 ]; }
check "signals: a co-tenant of uid 65534 pinned at share 0 is stopped, its quota at the minimum" held_at_zero
# flood SIG: SIG every 100 ms for 10 s from a process of uid 65534 in the test's own cgroups;
# sets gained (CPU seconds the co-tenant got meanwhile) and took (seconds).
flood() {
    local before t0
    before=$(cpu_ticks "$npid")
    t0=$(date +%s.%N)
    as_owner /usr/bin/python3 -c '
import os, signal, sys, time
pid, sig, end = int(sys.argv[1]), getattr(signal, sys.argv[2]), time.monotonic() + 10
while time.monotonic() < end:
    os.kill(pid, sig)
    time.sleep(0.1)' "$npid" "SIG$1"
    gained=$(python3 -c "import os; print(($(cpu_ticks "$npid" || echo -1) - $before) / os.sysconf('SC_CLK_TCK'))")
    took=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
    echo "# SIG$1 every 100 ms for ${took} s from its owner: the co-tenant gained ${gained} CPU s"
}
within_two_points() { python3 -c "g, s = $gained, $took; assert g <= 0.02 * s, (g, s)"; } # share 0 + 2 points
lets_go() { c --json job get --job 81 | py 'l = d["hold"]["lets_go"]; print(l["whole"], l["delivery"])'; }
lets_go_are() { # WHOLE MIN_DELIVERY MAX_DELIVERY
    local whole delivery
    read -r whole delivery <<<"$(lets_go)"
    [ "$whole" = "$1" ] && [ "$delivery" -ge "$2" ] && [ "$delivery" -le "$3" ]
}
flood USR1
check "signals: SIGUSR1 every 100 ms gains it at most 2 points of a CPU over its share 0 ($gained CPU s in $took s)" within_two_points
check "... let through once (its handler, set up, waits for its share), never let go whole ($(lets_go))" lets_go_are 0 1 2
check "... and still stopped" stopped "$npid"
flood TERM
check "signals: SIGTERM every 100 ms to its own handler gains it at most 2 points ($gained CPU s in $took s)" within_two_points
check "... at most one let-through per 10 s, never whole ($(lets_go))" lets_go_are 0 1 4
flood CONT
check "signals: SIGCONT every 100 ms by its owner gains it at most 2 points ($gained CPU s in $took s)" within_two_points
stopped_again() { wait_for 10 stopped "$npid" && lets_go_are 0 1 4; }
check "... it is stopped again, and never let go whole ($(lets_go))" stopped_again
check "... each let-through in the log" grep -q "co-tenant 81: .*: let through to it, still held at share 0.00" "$tmp/daemon.log"
# Slurm cancels it: scancel sends SIGCONT and SIGTERM; Slurm shows it CANCELLED.
echo CANCELLED >"$tmp/jobstate"
touch "$tmp/owner/ending"
kill -CONT "$npid"
kill -TERM "$npid"
gone81() { ! kill -0 "$npid" 2>/dev/null || [ "$(proc_state "$npid")" = Z ]; }
check "signals: cancelled (Slurm shows it CANCELLED), it is let go whole and acts on its SIGTERM" wait_for 15 gone81
check "... the log says why" grep -q "co-tenant 81: .*, and Slurm shows it CANCELLED: let go, nothing held" "$tmp/daemon.log"
check "... counted ($(lets_go))" lets_go_are 1 1 5
wait "$npid" 2>/dev/null
c job release --job 81 >/dev/null
remove_tree "$v1/freezer/$prefix" "$v1/freezer/cgroup.procs"
remove_tree "$v1/cpuset/$prefix" "$v1/cpuset/cgroup.procs"

# --- cgroup v2, as cgroup/v2 makes it: the task in step_0/user/task_0, slurmstepd's place beside
mkdir -p "$v2/$prefix"
if [ ! -e "$v2/$prefix/cgroup.freeze" ]; then
    skip "v2: co-tenants frozen in their task cgroups" "the cgroup2 mount has no cgroup.freeze (a kernel before 5.2)"
else
    scope=$v2/$prefix/system.slice/slurmstepd.scope
    job2=$scope/job_78
    mkdir -p "$job2/step_0/user/task_0" "$job2/step_0/slurm"
    cpuset_dir "$v1/cpuset/$prefix/uid_0/job_78/step_0" # where confine reads the job's CPUs on this hybrid host
    c job register --job 78 --uid 0 --role cotenant --cpus 1 --external >/dev/null
    in_cgroups "$job2/step_0/user/task_0/cgroup.procs" "$v1/cpuset/$prefix/uid_0/job_78/step_0/cgroup.procs" -- \
        "$noise" busy --duration 900 >/dev/null &
    npid=$!
    pids+=("$npid")
    (in_cgroups "$job2/step_0/user/task_0/cgroup.procs" "$v1/cpuset/$prefix/uid_0/job_78/step_0/cgroup.procs" -- \
        "$cosched" --socket "$sock" job confine --job 78 >/dev/null)
    c --json job get --job 78 >"$tmp/78.json"
    check "v2: job confine has it held in its v2 job cgroup, by freezing (this cgroup2 has no cpu controller)" py '
h = d["hold"]
assert h["where"] == "slurm" and h["cgroup"].endswith("/slurmstepd.scope/job_78") and d["knob"] == "freezer", d' <"$tmp/78.json"
    task_frozen() { grep -qx "frozen 1" "$job2/step_0/user/task_0/cgroup.events"; }
    c guard set --job 78 --share 0 >/dev/null
    check "v2: share 0 freezes its task leaf for real (cgroup.events)" wait_for 30 task_frozen
    check "v2: never the step's user cgroup, which is Slurm's to freeze" grep -qx 0 "$job2/step_0/user/cgroup.freeze"
    check "v2: nor slurmstepd's place" grep -qx "frozen 0" "$job2/step_0/slurm/cgroup.events"
    check "v2: frozen, it does not run" still "$npid"
    echo 1 >"$job2/step_0/user/cgroup.freeze" # scontrol suspend
    suspended78() { grep -q "co-tenant 78: Slurm suspended it" "$tmp/daemon.log"; }
    check "v2: Slurm's freeze of step_0/user is seen" wait_for 30 suspended78
    ours_thawed() { grep -qx 0 "$job2/step_0/user/task_0/cgroup.freeze"; }
    check "v2: cosched lets go of its own freeze" wait_for 30 ours_thawed
    user_frozen() { grep -qx "frozen 1" "$job2/step_0/user/cgroup.events"; }
    user_frozen_still() { wait_for 30 user_frozen && still "$npid"; }
    check "v2: and the task stays suspended under Slurm's" user_frozen_still
    echo 0 >"$job2/step_0/user/cgroup.freeze" # scontrol resume
    check "v2: resumed by Slurm, cosched freezes it again at its share" wait_for 30 task_frozen
    c guard set --job 78 --share 0.5 >/dev/null
    check "v2: share 0.5 duty-cycles the task leaf: frozen and thawed in turn" toggles "$job2/step_0/user/task_0/cgroup.freeze"
    c job release --job 78 >/dev/null
    check "v2: release thaws it" bash -c "grep -qx 'frozen 0' '$job2/step_0/user/task_0/cgroup.events' && grep -qx 0 '$job2/step_0/user/task_0/cgroup.freeze'"
    # A CPU trainer under cgroup/v2 judged by what its processes do (task-clock stands in for
    # instructions: this machine has no hardware PMU), counted on its job cgroup.
    c job release --job t >/dev/null
    job3=$scope/job_79
    mkdir -p "$job3/step_0/user/task_0" "$job3/step_0/slurm"
    cpu=0 cpuset_dir "$v1/cpuset/$prefix/uid_0/job_79/step_0"
    c job register --job 79 --uid 0 --role trainer --cpus 0 --external --progress pmu >/dev/null
    in_cgroups "$job3/step_0/user/task_0/cgroup.procs" "$v1/cpuset/$prefix/uid_0/job_79/step_0/cgroup.procs" -- \
        "$noise" busy --duration 900 >/dev/null &
    pids+=("$!")
    (in_cgroups "$job3/step_0/user/task_0/cgroup.procs" "$v1/cpuset/$prefix/uid_0/job_79/step_0/cgroup.procs" -- \
        "$cosched" --socket "$sock" job confine --job 79 >/dev/null)
    pmu_source() { c --json job get --job 79 | py 'p = d["progress"]; assert p["source"] == "pmu", p'; }
    check "v2: a trainer picked for the PMU is counted on its job cgroup once confine found it" wait_for 30 pmu_source
    observed() { c --json stats --job 79 | py 'assert d["jobs"][0]["steps"] >= 3'; }
    check "v2: ... its counts reach the statistics once a second" wait_for 30 observed
    c job release --job 79 >/dev/null
fi
c job release --job t >/dev/null
stop_daemon
check "the daemon exits cleanly" test $? = 0

# --- the cores knob on a Slurm job of two CPUs: every thread of its task on one of them, at full
# speed, then each thread's own CPUs back (cosched-noise pins each worker to one CPU): when the
# share returns to 1, and from the journal after kill -9.
start_cores_daemon() { # start_cores_daemon KNOBS: no GPU library settings
    write_config "guard:
  knobs: [$1]"
    start_daemon --topology "$topologies/ci-2core-gpu.xml"
}
threads_cpus() { for f in /proc/"$1"/task/*/status; do sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$f"; done | sort | paste -sd' '; }
on_cpus() { [ "$(threads_cpus "$1")" = "$2" ]; }
start_cores_daemon "cores, cfs-quota, sigstop"
check "cores: a daemon allowed the cores knob starts" test $? = 0
job=$prefix/uid_0/job_80
cpu=0-1 cpuset_dir "$v1/cpuset/$job/step_0"
mkdir -p "$v1/freezer/$job/step_0"
c job register --job 80 --uid 0 --role cotenant --cpus 0-1 --external >/dev/null
in_cgroups "$v1/cpuset/$job/step_0/cgroup.procs" "$v1/freezer/$job/step_0/cgroup.procs" -- \
    "$noise" busy --threads 2 --duration 900 >/dev/null &
npid=$!
pids+=("$npid")
pinned() { on_cpus "$npid" "0 0 0-1 1 1" || on_cpus "$npid" "0 0-1 1"; } # workers pinned, main (and its helper) on both
check "cores: the task's workers are pinned one per CPU" wait_for 30 pinned
(in_cgroups "$v1/cpuset/$job/step_0/cgroup.procs" "$v1/freezer/$job/step_0/cgroup.procs" -- \
    "$cosched" --socket "$sock" job confine --job 80 >/dev/null)
before=$(threads_cpus "$npid")
c guard set --job 80 --share 0.5 >/dev/null
all_on_0() { [ "$(threads_cpus "$npid" | tr ' ' '\n' | sort -u)" = 0 ]; }
check "cores: share 0.5 puts every thread of the Slurm task on CPU 0" wait_for 30 all_on_0
check "cores: job get says it keeps half its cores" bash -c \
    "'$cosched' --socket '$sock' --json job get --job 80 | python3 -c 'import json,sys; h=json.load(sys.stdin)[\"hold\"]; assert h[\"where\"] == \"slurm\" and h[\"cores_kept\"] == 0.5, h'"
check "cores: not stopped: one core at full speed is the share" bash -c "test \"\$(awk '{print \$3}' /proc/$npid/stat)\" != T"
c guard set --job 80 --share auto >/dev/null
check "cores: at share 1 each thread has its own CPUs back ($before)" wait_for 30 on_cpus "$npid" "$before"
c guard set --job 80 --share 0.5 >/dev/null
check "cores: narrowed again" wait_for 30 all_on_0
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
check "cores: still narrowed after the daemon died" all_on_0
start_cores_daemon "cfs-quota, sigstop"
check "cores: a daemon restarted after kill -9, with the cores knob not allowed, gives each thread its own back" \
    wait_for 30 on_cpus "$npid" "$before"
c job release --job 80 >/dev/null
stop_daemon
check "cores: the daemon exits cleanly" test $? = 0
remove_tree "$v1/cpuset/$prefix" "$v1/cpuset/cgroup.procs"
[ "$tap_failed" = 0 ] || sed 's/^/# daemon: /' "$tmp/daemon.log" | tail -40
finish
