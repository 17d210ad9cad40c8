#!/bin/bash
# test_slurm_hostile: docs/security.md's bar, as a hostile user meets it on a real Slurm. A fresh
# unprivileged uid (nobody, 65534) runs a co-tenant job: a CPU hog that handles SIGUSR1, held by
# root at share 0 in the cgroups Slurm made for it (one-node cluster, cgroup v1, proctrack/cgroup).
# From inside its own job it tries `cosched job release` (refused, the hold stays); from outside
# the job's cgroups it sends its hog SIGUSR1 every 100 ms for 10 s (the hog gains at most 2 points
# of a CPU over its share, by the kernel's counters); it holds 1200 connections to the daemon
# while root's prolog registers a new job within PrologEpilogTimeout; with private_jobs: redact
# it sees no other user's uid or argv. scancel then ends its job through the hold.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
chmod 755 "$tmp"
need_slurm
need_cgroup_v1
node=$(hostname -s)
flood_pid=
stop_flood() { [ -z "$flood_pid" ] || kill "$flood_pid" 2>/dev/null; }
at_exit kill_job_pids
at_exit stop_flood

write_config "private_jobs: redact
guard:
  slurm_conf: $tmp/slurm/slurm.conf"
cosched_scripts "$sock"
start_daemon || { not_ok "coschedd starts"; finish; exit; }
SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_KILL_WAIT=30 \
	slurm_up "a one-node Slurm with cgroup confinement and cosched's scripts starts" start_slurm || { finish; exit; }

# The hostile user, with a directory of its own.
mkdir -p "$tmp/nobody" && chown 65534:65534 "$tmp/nobody"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cat >"$tmp/nobody/hog.py" <<'EOF'
import signal
signal.signal(signal.SIGUSR1, lambda *a: None)  # its own timers' signal, say
while True:
    pass
EOF
co=$(cd "$tmp/nobody" && as_nobody sbatch --parsable -n1 -c1 -o /dev/null --chdir "$tmp/nobody" \
	--wrap "srun /usr/bin/python3 $tmp/nobody/hog.py")
check "nobody submits a co-tenant job ($co)" test -n "$co"
freezer=/sys/fs/cgroup/freezer/slurm_$node/uid_65534/job_$co
hog_pid() { for p in $(cat "$freezer"/step_0/cgroup.procs 2>/dev/null); do echo "$p"; return; done; return 1; }
held_in_slurm() { c --json job get --job "$co" | py 'assert d["hold"]["where"] == "slurm", d["hold"]'; }
check "its TaskProlog's job confine, as nobody, has it held in Slurm's cgroups" wait_for 60 held_in_slurm
c guard set --job "$co" --share 0 >/dev/null
hog=$(hog_pid)
stopped() { [ "$(proc_state "$hog")" = T ]; }
check "root pins it at share 0: its hog (pid $hog) is stopped" wait_for 30 stopped

# 1. Its owner cannot lift the hold from inside its own job.
as_nobody srun --jobid="$co" --overlap -n1 "$cosched" --socket "$sock" job release --job "$co" \
	</dev/null >"$tmp/nobody/release.out" 2>&1
rc=$?
check "cosched job release from inside its own job is refused (exit $rc): $(head -n 1 "$tmp/nobody/release.out" | cut -c 1-200)" \
	bash -c "test $rc -ne 0 && grep -q 'EPERM.*may not release job $co: it is a co-tenant' '$tmp/nobody/release.out'"
still_held() { c --json job get --job "$co" | py '
assert d["hold"]["where"] == "slurm" and d["allowed_share"] == 0, (d["hold"], d["allowed_share"])'; }
check "... and the hold stays: registered, in Slurm's cgroups, at share 0" still_held
check "... its hog still stopped" stopped

# 2. SIGUSR1 every 100 ms for 10 s from a process of its owner outside the job's cgroups.
before=$(cpu_ticks "$hog")
start=$(date +%s.%N)
as_nobody bash -c "for _ in \$(seq 100); do kill -USR1 $hog; sleep 0.1; done"
wall=$(python3 -c "import time; print(time.time() - $start)")
after=$(cpu_ticks "$hog")
hz=$(getconf CLK_TCK)
gained=$(python3 -c "print(($after - $before) / $hz)")
echo "# SIGUSR1 x100 over ${wall%.*} s: the hog gained $gained CPU-seconds (share 0; 2 points of a CPU: $(python3 -c "print(round(0.02 * $wall, 2))"))"
check "SIGUSR1 every 100 ms from outside its cgroups gains it at most 2 points of a CPU over its share ($gained s in ${wall%.*} s)" \
	python3 -c "assert $gained <= 0.02 * $wall + 2.0 / $hz"
c --json job get --job "$co" >"$tmp/co.json"
check "the signals got let-goes bounded to their delivery, counted, and no whole let-go" py '
n = d["hold"]["lets_go"]
assert n["whole"] == 0 and 1 <= n["delivery"] <= 100, n' <"$tmp/co.json"
check "... and it is held again: stopped" wait_for 30 stopped

# 3. 1200 connections held by that uid while root's prolog registers a new job.
cat >"$tmp/nobody/flood.py" <<'EOF'
import socket, sys, time
held = []
for _ in range(1200):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
        held.append(s)
    except OSError:
        pass
open(sys.argv[2], "w").write("%d\n" % len(held))
time.sleep(300)  # killed long before, when the test goes on
EOF
refused() { c metrics | awk '/^cosched_client_limit_total\{limit="connections"\}/ {print $2}'; }
refused_before=$(refused)
# setpriv execs python: $! is the flood itself, which holds no pipe of this test's
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$tmp/nobody/flood.py" "$sock" \
	"$tmp/nobody/flooding" </dev/null >/dev/null 2>&1 &
flood_pid=$!
check "nobody opens 1200 connections to the daemon" wait_for 60 test -s "$tmp/nobody/flooding"
other=$(sbatch --parsable -n1 -c1 -o /dev/null --wrap "srun sleep 300")
registered() { c --json job get --job "$other" >/dev/null; }
check "meanwhile root's prolog registers job $other within PrologEpilogTimeout (30 s)" wait_for 30 registered
check "... and the prolog's log says so" wait_for 30 grep -q "prolog job $other: registered" "$tmp/slurm.log"
refused_after=$(refused)
check "the daemon refused the connections past nobody's share and counted them (${refused_before:-0} -> ${refused_after:-0})" \
	test "$((${refused_after:-0} - ${refused_before:-0}))" -ge 900
stop_flood
wait "$flood_pid" 2>/dev/null
flood_pid=
nobody_served() { as_nobody "$cosched" --socket "$sock" status >/dev/null 2>&1; }
check "once its flood is gone, nobody is served again" wait_for 60 nobody_served

# 4. private_jobs: redact. nobody sees its own job whole, root's without uid or argv.
as_nobody "$cosched" --socket "$sock" --json job list >"$tmp/nobody/list.json"
check "with private_jobs: redact, nobody's job list shows root's job without uid" py '
others = [j for j in d["jobs"] if j["job"] == "'"$other"'"]
assert others and "uid" not in others[0], others' <"$tmp/nobody/list.json"
check "... and its own with it" py '
mine = [j for j in d["jobs"] if j["job"] == "'"$co"'"]
assert mine and mine[0]["uid"] == 65534, mine' <"$tmp/nobody/list.json"
as_nobody "$cosched" --socket "$sock" job list >"$tmp/nobody/list.txt" 2>&1
check "... and the CLI's text says root's is private" grep -q "^job $other: cotenant, uid private" "$tmp/nobody/list.txt"

# scancel ends the held job through its hold (Slurm cancelled it: a whole let-go); the epilogs
# release both.
scancel "$co" "$other"
check "scancel ends the held co-tenant; its epilog releases it" wait_for 90 released "$co"
check "... and the other job's" wait_for 90 released "$other"
grep -E "guard: co-tenant $co" "$tmp/daemon.log" | sed 's/^/# /' | tail -8
release_and_stop_daemon
finish
