#!/usr/bin/env bash
# test_daemon: the real coschedd on a temp socket and state dir, driven by the real cosched:
# jobs on the JUWELS Booster XML, runs of cosched-noise and cosched-train bound on this machine,
# permissions, restart after kill -9, a corrupt state file, malformed frames, metrics push.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
juwels=$topologies/juwels-booster.xml
ci_node=$topologies/ci-2core-gpu.xml
chmod 755 "$tmp" # nobody must reach the socket
pushgw_pid=
notify_pid=
stop_stand_ins() { # the Pushgateway and the stand-in for systemd, where a check left them
    [ -z "$pushgw_pid" ] || kill "$pushgw_pid" 2>/dev/null
    [ -z "$notify_pid" ] || kill "$notify_pid" 2>/dev/null
}
at_exit stop_stand_ins
# fresh_state: the next daemon starts with no jobs and no runs.
fresh_state() { rm -rf "$tmp/state"; }

# --- configuration
printf 'policy: shared\nslowdown_budget: 0.1\n' >"$tmp/good.yaml"
check "--check-config accepts a valid file" "$coschedd" --check-config --config "$tmp/good.yaml"
printf 'policy: nearest\n' >"$tmp/bad.yaml"
"$coschedd" --check-config --config "$tmp/bad.yaml" >"$tmp/out" 2>&1
check "--check-config refuses a bad policy, naming line and column" grep -q 'bad.yaml:1:' "$tmp/out"
check "--check-config on a missing explicit file fails" bash -c "! '$coschedd' --check-config --config '$tmp/none.yaml'"
check "an unknown option is a usage error" bash -c "'$coschedd' --frobnicate; test \$? -eq 2"

# --- jobs on the JUWELS Booster node
start_daemon --topology "$juwels"
check "the daemon answers status" c status
c --json job register --job 101 --uid 0 --role trainer >"$tmp/reg.json"
check "a trainer job gets ranks on NUMA 3,1,7,5" json "$tmp/reg.json" \
    'assert [r["numa"] for r in d["ranks"]]==[3,1,7,5] and d["srun"].startswith("--cpu-bind=mask_cpu:0xfc0000,") and d["role"]=="trainer"'
check "under Slurm's list of the job's 4 GPUs, rank 2's environment keeps its own entry" bash -c \
    "CUDA_VISIBLE_DEVICES=4,5,6,7 '$cosched' --socket '$sock' env --job 101 --rank 2 | grep -qx 'export CUDA_VISIBLE_DEVICES=6'"
check "... and a list that is not one entry per GPU of the job stays as Slurm set it" bash -c \
    "! CUDA_VISIBLE_DEVICES=1 '$cosched' --socket '$sock' env --job 101 --rank 2 | grep -q CUDA_VISIBLE_DEVICES"
c --json job register --job 102 --uid 65534 --role cotenant --cores 24 >"$tmp/co.json"
check "a cotenant job lands on the other domains only" json "$tmp/co.json" \
    'assert sorted({r["numa"] for r in d["ranks"]})==[0,2,4,6] and len(d["ranks"])==24'
c job register --job 103 --uid 0 --role trainer --gpus 0 >"$tmp/out" 2>"$tmp/err"
check "a second trainer for the same GPU is refused with EBUSY" bash -c "test $? -eq 1 && grep -q 'EBUSY: GPU 0 is already used by job 101' '$tmp/err'"
c job register --job 104 --uid 0 --role cotenant --cores 1 >"$tmp/out" 2>"$tmp/err"
check "a cotenant that does not fit beside the others is refused with EBUSY" grep -q '^cosched: EBUSY' "$tmp/err"
c job register --job 105 --uid 0 --role cotenant --cores 100 >"$tmp/out" 2>"$tmp/err"
check "a request that never fits is EINVAL" grep -q '^cosched: EINVAL: job 105 cannot be placed on this node' "$tmp/err"
c --json job register --job 101 --uid 0 --role trainer >"$tmp/again.json"
check "registering the same job again returns its allocation (prolog retry)" json "$tmp/again.json" \
    'assert d["existing"] is True and [r["numa"] for r in d["ranks"]]==[3,1,7,5]'
c --json job list >"$tmp/list.json"
check "job list shows both jobs" json "$tmp/list.json" 'assert sorted(j["job"] for j in d["jobs"])==["101","102"]'

# --- who may do what
check "nobody may read the job list" setpriv --reuid=nobody --regid=nogroup --clear-groups "$cosched" --socket "$sock" job list
check "nobody may read stats and metrics" setpriv --reuid=nobody --regid=nogroup --clear-groups "$cosched" --socket "$sock" stats
setpriv --reuid=nobody --regid=nogroup --clear-groups "$cosched" --socket "$sock" job register --job 200 --uid 65534 --role cotenant >"$tmp/out" 2>"$tmp/err"
check "nobody gets EPERM on register" bash -c "test $? -eq 1 && grep -q '^cosched: EPERM' '$tmp/err'"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$cosched" --socket "$sock" job release --job 101 >"$tmp/out" 2>"$tmp/err"
check "nobody may not release another user's job" grep -q '^cosched: EPERM' "$tmp/err"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$cosched" --socket "$sock" report --job 102 --step-time 0.5 >"$tmp/out" 2>"$tmp/err"
check "a co-tenant's owner may not report steps for it (the table: a trainer's owner may)" \
    grep -q "^cosched: EPERM: uid 65534 may not report the steps of job 102: it is a co-tenant" "$tmp/err"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$cosched" --socket "$sock" job release --job 102 >"$tmp/out" 2>"$tmp/err"
check "a co-tenant's owner may not release it: that would lift its holds (docs/security.md)" \
    grep -q "^cosched: EPERM: uid 65534 may not release job 102: it is a co-tenant" "$tmp/err"
check "root may release it" c job release --job 102
c --json job release --job 102 >"$tmp/rel.json"
check "releasing twice is not an error" json "$tmp/rel.json" 'assert d["released"] is False'
check "releasing an unknown job is not an error" c job release --job nosuchjob

# --- malformed frames: each closes (or answers) that connection only
cat >"$tmp/frames.py" <<'EOF'
import fcntl, json, socket, struct, sys, termios, time
path = sys.argv[1]
def conn():  # a generous timeout: every wait below ends as soon as the daemon acts
    s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(path); return s
def unread(s):  # bytes s sent that the daemon has not read yet (SIOCOUTQ)
    return struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\0" * 4))[0]
def read_by_daemon(s):
    end = time.monotonic() + 60
    while unread(s) and time.monotonic() < end: time.sleep(0.01)
    return unread(s) == 0
def frame(obj_bytes): return struct.pack(">I", len(obj_bytes)) + obj_bytes
def reply(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk: return None
        head += chunk
    n = struct.unpack(">I", head)[0]; body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk: return None
        body += chunk
    return json.loads(body)
def closed(s):
    try:
        while True:
            if not s.recv(4096): return True
    except (ConnectionResetError, BrokenPipeError): return True
    except socket.timeout: return False
def ping_ok():
    s = conn(); s.sendall(frame(b'{"v":1,"method":"ping","params":{}}')); r = reply(s); return bool(r and r["ok"])
results = []
s = conn(); s.sendall(struct.pack(">I", 1 << 20)); r = reply(s)
results.append(("oversize length is refused and closed", r is not None and r["error"]["code"] == "EPROTO" and closed(s)))
s = conn(); s.sendall(struct.pack(">I", 0)); r = reply(s)
results.append(("zero length is refused and closed", r is not None and not r["ok"] and closed(s)))
s = conn(); s.sendall(frame(b'{"v":1,"method":')); r = reply(s)
results.append(("a frame that is not JSON is refused and closed", r is not None and r["error"]["code"] == "EPROTO" and closed(s)))
s = conn(); s.sendall(frame(b"[" * 100 + b"]" * 100)); r = reply(s)
results.append(("deep nesting is refused", r is not None and "deeper" in r["error"]["message"] and closed(s)))
s = conn(); s.sendall(frame(b'{"v":1,"method":"ping","method":"ping"}')); r = reply(s)
results.append(("duplicate keys are refused", r is not None and r["error"]["code"] == "EPROTO"))
s = conn(); s.sendall(frame(b'[1,2]')); r = reply(s)
results.append(("a frame that is not an object is refused", r is not None and not r["ok"]))
s = conn(); s.sendall(frame(b'{"v":1,"method":42}')); r = reply(s)
results.append(("a method of the wrong type is EINVAL, connection kept", r is not None and r["error"]["code"] == "EINVAL"))
s.sendall(frame(b'{"v":1,"method":"job.register","params":{"job":["x"],"uid":"root","role":1}}')); r = reply(s)
results.append(("wrong parameter types are EINVAL", r is not None and r["error"]["code"] == "EINVAL"))
s.sendall(frame(b'{"v":2,"method":"ping"}')); r = reply(s)
results.append(("another protocol version is EPROTO", r is not None and r["error"]["code"] == "EPROTO"))
s.sendall(frame(b'{"v":1,"method":"nosuch"}')); r = reply(s)
results.append(("an unknown method is EINVAL", r is not None and "unknown method" in r["error"]["message"]))
s.sendall(frame(b'{"v":1,"method":"plan","params":{"mem":"hbm"}}')); r = reply(s)
results.append(("plan takes mem hbm", r is not None and r["ok"] and "trainer" in r["result"]))
s.sendall(frame(b'{"v":1,"method":"plan","params":{"mem":"ddr"}}')); r = reply(s)
results.append(("plan refuses an unknown mem", r is not None and r["error"]["code"] == "EINVAL" and "'hbm'" in r["error"]["message"]))
s = conn(); s.sendall(struct.pack(">I", 100) + b'{"v":1')  # truncated: never completes
silent = conn()
results.append(("other clients are served while one is stuck mid-frame", read_by_daemon(s) and ping_ok()))
# client_timeout is 3 s here: closed() waits for the daemon to close them, up to the socket's 60 s
results.append(("a truncated frame times out and is closed", closed(s)))
results.append(("a silent client times out and is closed", closed(silent)))
results.append(("and new clients keep being served", ping_ok()))
two = frame(b'{"v":1,"method":"ping"}') * 2
s = conn(); s.sendall(two); results.append(("two requests in one write get two replies", reply(s)["ok"] and reply(s)["ok"]))
for name, passed in results:
    print(("ok" if passed else "not ok") + " - " + name)
EOF
stop_daemon
write_config 'client_timeout: 3'
start_daemon --topology "$juwels"
python3 "$tmp/frames.py" "$sock" >"$tmp/frames.out" 2>&1
while read -r line; do
    case "$line" in
        "ok - "*) ok "frames: ${line#ok - }" ;;
        "not ok - "*) not_ok "frames: ${line#not ok - }" ;;
        *) not_ok "frames script: $line" ;;
    esac
done <"$tmp/frames.out"
check "the daemon still answers after all that" c status
stop_daemon; rc=$?
check "SIGTERM saves and exits 0" test $rc -eq 0
check "the state file holds the trainer job, in its own schema" json "$tmp/state/state.json" \
    'assert d["format"]=="coschedd-state" and d["version"]==2 and [(j["id"], j["ranks"][0]["cpus"]) for j in d["jobs"]]==[("101","18-23")]'

# --- restart keeps jobs; a corrupt state file is moved aside
write_config ""
start_daemon --topology "$juwels"
c --json job list >"$tmp/list.json"
check "after a restart the job is still registered with its allocation" json "$tmp/list.json" \
    'assert [(j["job"],[r["numa"] for r in j["ranks"]]) for j in d["jobs"]]==[("101",[3,1,7,5])]'
stop_daemon
echo '{"version":1,"jobs":[' >"$tmp/state/state.json"
start_daemon --topology "$juwels"
check "a corrupt state file is moved aside" bash -c "ls '$tmp/state'/state.json.corrupt-* >/dev/null"
check "with a log line saying so" grep -q 'is unusable .* moved aside' "$tmp/daemon.log"
c --json job list >"$tmp/list.json"
check "and the daemon starts with no jobs" json "$tmp/list.json" 'assert d["jobs"]==[]'
stop_daemon

# --- runs on this machine: bound, followed, restarted
fresh_state
start_daemon --topology "$ci_node"
c job register --job t1 --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c --json job register --job n1 --uid 65534 --role cotenant --policy l3 --cores 1 >"$tmp/n1.json"
check "on the two-core node the cotenant gets the trainer's free L3 (CPU 1)" json "$tmp/n1.json" \
    'assert d["ranks"][0]["cpus"]==[1]'
c --json run start --job t1 -- "$train" --model resnet8 --data synthetic:512 --image-size 8 --batch 8 --steps 100000000 --threads 1 >"$tmp/run1.json"
tpid=$(run_pid "$tmp/run1.json")
check "cosched-train runs bound to the trainer rank's CPU" wait_for 60 grep -qx 'Cpus_allowed_list:[[:space:]]*0' "/proc/$tpid/status"
check "its memory is bound to the rank's domain" wait_for 60 grep -qx 'Mems_allowed_list:[[:space:]]*0' "/proc/$tpid/status"
steps_seen() { c --json stats --job t1 | py "assert d['jobs'][0]['steps'] >= $1"; }
check "its step times appear in stats" wait_for 60 steps_seen 5
c --json run start --job n1 -- "$noise" stream --duration 600 --array-mb 8 >"$tmp/run2.json"
npid=$(run_pid "$tmp/run2.json")
check "cosched-noise runs bound to the cotenant's CPU" wait_for 60 grep -qx 'Cpus_allowed_list:[[:space:]]*1' "/proc/$npid/status"
check "as user nobody (the job's uid)" wait_for 60 grep -qE '^Uid:[[:space:]]+65534' "/proc/$npid/status"
bw_seen() { c --json stats --job n1 | py "r=d['jobs'][0]['runs'][0]; assert r['rate_bytes_per_second'] > 0"; }
check "the noise run's bandwidth appears in stats" wait_for 60 bw_seen
cot_steps() { c --json stats --job t1 | py "assert d['jobs'][0]['steps_with_cotenant'] >= 5 and d['jobs'][0]['slowdown'] is not None"; }
check "steps beside the co-tenant are counted and a slowdown is computed" wait_for 60 cot_steps
c bind --job n1 -- grep Cpus_allowed_list /proc/self/status >"$tmp/bind.out" 2>&1
check "cosched bind execs the command on the rank's CPUs" grep -qx 'Cpus_allowed_list:[[:space:]]*1' "$tmp/bind.out"
c --json run start --job t1 -- sleep 300 >"$tmp/run3.json"
spid=$(run_pid "$tmp/run3.json")
c --json run start --job t1 --env COSCHED_TEST=yes -- sh -c 'echo "$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER $COSCHED_JOB $COSCHED_RANK $COSCHED_TEST"' >"$tmp/run4.json"
envrun=$(json "$tmp/run4.json" 'print(d["stdout"])')
check "a trainer rank's run sees its GPU, its job and rank, and the env given" wait_for 60 grep -qx '0 PCI_BUS_ID t1 0 yes' "$envrun"
c run start --job t1 -- /nonexistent/program >"$tmp/out" 2>"$tmp/err"
check "a command that cannot be executed is refused with the reason" grep -q "cannot execute '/nonexistent/program'" "$tmp/err"

# kill -9 the daemon and one of its runs; the other runs survive
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
kill -9 "$spid"
start_daemon --topology "$ci_node"
# it may still be dying as the daemon starts: then it is adopted and its pidfd ends it at once
dead_run_ended() { c --json run list | py "r=[x for x in d['runs'] if x['pid']==$spid][0]; assert r['state']!='running', r"; }
check "after kill -9 and restart the dead run is marked ended" wait_for 60 dead_run_ended
c --json run list >"$tmp/runs.json"
check "and the live trainer run is followed again" json "$tmp/runs.json" \
    "r=[x for x in d['runs'] if x['pid']==$tpid][0]; assert r['state']=='running', r"
c --json job list >"$tmp/list.json"
check "and the jobs are kept" json "$tmp/list.json" 'assert sorted(j["job"] for j in d["jobs"])==["n1","t1"]'
before=$(c --json stats --job t1 | py "print(d['jobs'][0]['runs'][-1]['steps'])")
more_steps() { c --json run list | py "r=[x for x in d['runs'] if x['pid']==$tpid][0]; assert r['steps'] > $before"; }
check "the restarted daemon keeps reading the trainer's progress" wait_for 60 more_steps
trun=$(json "$tmp/run1.json" 'print(d["id"])')
check "run stop ends a run" c run stop "$trun"
ended() { c --json run list | py "r=[x for x in d['runs'] if x['id']==$trun][0]; assert r['state']!='running'"; }
check "and it is reaped and recorded" wait_for 60 ended
check "a run that outlived a daemon restart ends as lost (status unknown)" json <(c --json run list) \
    "r=[x for x in d['runs'] if x['id']==$trun][0]; assert r['state']=='lost', r"
c --json run start --job t1 -- sleep 300 >"$tmp/run5.json"
srun_id=$(json "$tmp/run5.json" 'print(d["id"])')
c run stop "$srun_id" >/dev/null
sleep_ended() { c --json run list | py "r=[x for x in d['runs'] if x['id']==$srun_id][0]; assert r['state']=='killed' and r['signal']==15, r"; }
check "SIGTERM ends a run at once (runs do not inherit the daemon's blocked signals)" wait_for 60 sleep_ended
check "a run starts with no blocked signals" grep -qx 'SigBlk:[[:space:]]*0000000000000000' "/proc/$npid/status"
check "releasing a job stops its runs" c job release --job n1
gone() { ! kill -0 "$npid" 2>/dev/null; }
check "the noise process is gone" wait_for 60 gone
stop_daemon

# --- runs as their user: its passwd entry's environment, its home or --cwd, umask 077, output
# files only it (and root) can read; ended runs forgotten after runs.retention
fresh_state
write_config ""
echo '  retention: 0' >>"$tmp/coschedd.yaml" # a key of write_config's runs:, its last section
COSCHED_DAEMON_ONLY=secret start_daemon --topology "$ci_node"
c job register --job u0 --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job u1 --uid 65534 --role cotenant --policy l3 --cores 1 >/dev/null
c --json run start --job u1 --env ADDED=1 -- sh -c 'env; umask; pwd; id -u' >"$tmp/run-u1.json"
c --json run start --job u0 -- sh -c 'echo "$HOME"; pwd' >"$tmp/run-u0.json"
c --json run start --job u1 --cwd /tmp -- pwd >"$tmp/run-u1-cwd.json"
out_of() { json "$1" 'print(d["stdout"])'; }
uout=$(out_of "$tmp/run-u1.json")
all_ended() { c --json run list | py "assert all(r['state'] != 'running' for r in d['runs'])"; }
check "the runs end" wait_for 60 all_ended
check "a run of uid 65534 gets its passwd entry's environment and --env, nothing of the daemon's" python3 - "$uout" <<'PY'
import pwd, sys
env = dict(line.split("=", 1) for line in open(sys.argv[1]).read().splitlines() if "=" in line)
pw = pwd.getpwuid(65534)
assert (env["HOME"], env["USER"], env["LOGNAME"], env["SHELL"]) == (pw.pw_dir, pw.pw_name, pw.pw_name, pw.pw_shell), env
assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin" and env["ADDED"] == "1" and env["COSCHED_JOB"] == "u1", env
assert "COSCHED_DAEMON_ONLY" not in env, env
PY
check "... runs as uid 65534 with umask 077, from / when its home does not exist" bash -c \
    "grep -qx 0077 '$uout' && grep -qx 65534 '$uout' && { test -d ~nobody || grep -qx / '$uout'; }"
check "a root run starts in root's home, HOME=/root" diff <(printf '/root\n/root\n') "$(out_of "$tmp/run-u0.json")"
check "--cwd sets where a run starts" grep -qx /tmp "$(out_of "$tmp/run-u1-cwd.json")"
c run start --job u1 --cwd /root -- pwd >"$tmp/out" 2>"$tmp/err"
check "a --cwd the user cannot enter fails the run start, saying so" bash -c \
    "test $? -eq 1 && grep -q 'cannot change to the working directory /root as uid 65534' '$tmp/err'"
check "its output files are its user's and group root's, 0640, in runs/65534 (root's, 0711)" python3 -c "
import os, stat
f, d = os.stat('$uout'), os.stat(os.path.dirname('$uout'))
assert (f.st_uid, f.st_gid, stat.S_IMODE(f.st_mode)) == (65534, 0, 0o640), f
assert (d.st_uid, stat.S_IMODE(d.st_mode)) == (0, 0o711), d
assert os.path.dirname('$uout') == '$tmp/state/runs/65534'"
check "... which that user can read" setpriv --reuid=65534 --regid=65534 --clear-groups cat "$uout"
check "... but not plant anything beside them" bash -c \
    "! setpriv --reuid=65534 --regid=65534 --clear-groups ln -s /etc/passwd '$(dirname "$uout")/planted' 2>/dev/null"
check "... and another user cannot" bash -c "! setpriv --reuid=1 --regid=1 --clear-groups cat '$uout' 2>/dev/null"
# The same state under a daemon with a retention of 1 s (runs.retention 0 kept them so far).
stop_daemon
sed -i 's/retention: 0/retention: 1/' "$tmp/coschedd.yaml"
start_daemon --topology "$ci_node"
first=$(json "$tmp/run-u1.json" 'print(d["id"])')
expired() { ! test -e "$uout" && c --json run list | py "assert all(r['id'] != $first for r in d['runs'])"; }
check "after runs.retention an ended run is forgotten and its output removed" wait_for 60 expired
check "... saying so in the log" grep -q "run $first ended .* forgotten and its output removed (runs.retention 1 s)" "$tmp/daemon.log"
stop_daemon

# --- metrics reach a real Pushgateway
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pushgateway=${COSCHED_PUSHGATEWAY:-/usr/bin/prometheus-pushgateway}
"$pushgateway" --web.listen-address="127.0.0.1:$port" --persistence.file="" >"$tmp/pushgw.log" 2>&1 &
pushgw_pid=$!
check "prometheus-pushgateway starts" wait_for 60 curl -sf "http://127.0.0.1:$port/metrics"
fresh_state
write_config "$(printf 'metrics:\n  push_url: http://127.0.0.1:%s\n  push_interval: 1\n  textfile: %s/coschedd.prom' "$port" "$tmp")"
start_daemon --topology "$juwels"
c job register --job 300 --uid 0 --role trainer >/dev/null
pushed() { curl -sf "http://127.0.0.1:$port/metrics" | grep -q 'cosched_job_cpus{instance="[^"]*",job="coschedd",jobid="300",numa="3"'; }
check "the daemon's metrics reach the Pushgateway" wait_for 60 pushed
check "under job=coschedd and this host's instance" bash -c "curl -sf 'http://127.0.0.1:$port/metrics' | grep 'cosched_up' | grep -q 'instance=\"$(hostname)\"'"
check "and the textfile collector file is written" wait_for 60 grep -q '^cosched_up 1' "$tmp/coschedd.prom"
c metrics >"$tmp/metrics.txt"
check "cosched metrics prints the exposition text" grep -q '^# TYPE cosched_jobs gauge' "$tmp/metrics.txt"
check "with the version as cosched_build_info" grep -qx "cosched_build_info{version=\"$("$coschedd" --version | cut -d' ' -f2)\"} 1" "$tmp/metrics.txt"
check "and a job's id as the label jobid" grep -q '^cosched_job_cpus{jobid="300",role="trainer",numa="3"} 6$' "$tmp/metrics.txt"
check "promtool check metrics finds nothing to fix" promtool check metrics <"$tmp/metrics.txt"
kill "$pushgw_pid"; wait "$pushgw_pid" 2>/dev/null; pushgw_pid=
check "a dead Pushgateway does not slow the socket" c status
kill -HUP "$daemon_pid"
check "SIGHUP reloads the configuration" wait_for 60 grep -q 'configuration reloaded' "$tmp/daemon.log"
stop_daemon; rc=$?
check "SIGTERM still exits 0" test $rc -eq 0

# --- systemd: notifications and socket activation
# notify.py SOCKET LOG: systemd's end of NOTIFY_SOCKET; logs each message until STOPPING=1 (60 s at most)
cat >"$tmp/notify.py" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); s.settimeout(1)
seen = open(sys.argv[2], "a", buffering=1)
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        msg = s.recv(4096).decode()
    except socket.timeout:
        continue
    seen.write(msg + "\n")
    if "STOPPING=1" in msg.splitlines():
        break
EOF
fresh_state
write_config ""
python3 "$tmp/notify.py" "$tmp/notify.sock" "$tmp/notify.log" &
notify_pid=$!
check "the stand-in for systemd listens" wait_for 60 test -S "$tmp/notify.sock" # READY=1 may come before the first status
NOTIFY_SOCKET=$tmp/notify.sock WATCHDOG_USEC=2000000 start_daemon --topology "$juwels"
check "READY=1 is sent once the daemon serves" wait_for 60 grep -qx 'READY=1' "$tmp/notify.log"
check "STATUS= carries job and run counts" wait_for 60 grep -q '^STATUS=0 jobs, 0 runs running' "$tmp/notify.log"
check "WATCHDOG=1 comes from the loop" wait_for 60 grep -qx 'WATCHDOG=1' "$tmp/notify.log"
stop_daemon
check "STOPPING=1 at shutdown" wait_for 60 grep -qx 'STOPPING=1' "$tmp/notify.log"
kill "$notify_pid" 2>/dev/null # gone already, unless STOPPING=1 never came
wait "$notify_pid" 2>/dev/null
notify_pid=
if command -v systemd-socket-activate >/dev/null; then
    rm -f "$sock"
    systemd-socket-activate -l "$sock" "$coschedd" --foreground --state-dir "$tmp/state" --topology "$juwels" \
        --socket "$tmp/unused.sock" >>"$tmp/daemon.log" 2>&1 &
    daemon_pid=$!
    check "with socket activation the daemon serves the socket systemd passed" wait_for 60 c status
    check "and does not bind its own" test ! -e "$tmp/unused.sock"
    stop_daemon
else
    not_ok "systemd-socket-activate is missing (Debian package systemd)"
fi

# --- the client without a daemon
"$cosched" --socket "$tmp/nope.sock" status >"$tmp/out" 2>"$tmp/err"
check "an unreachable daemon is exit 3, naming the socket" bash -c "test $? -eq 3 && grep -q '$tmp/nope.sock' '$tmp/err'"

finish
