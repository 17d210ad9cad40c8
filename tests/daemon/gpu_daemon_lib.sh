# gpu_daemon_lib.sh: what the daemon tests with the stand-in GPU libraries share (sourced after
# `set -u` by test_gpu_guard.sh and test_attribution.sh): a temp dir removed at exit with every run
# it recorded (run*.json) killed, the client, JSON reads, retries, the fake GPU's control file, a
# daemon started with it, and what the kernel holds a co-tenant to (its CFS quota, whether it gets
# CPU at all) — states, never rates measured over a few seconds of a loaded machine. Expects
# nothing; sets tmp, sock, daemon_pid and the paths below.
root=${COSCHED_SOURCE_ROOT:?}
build=${COSCHED_BUILD_ROOT:?}
cosched=$build/client/cosched
noise=$build/noise/cosched-noise
fakegpu=$build/tests/daemon/fakegpu
tmp=$(mktemp -d)
sock=$tmp/coschedd.sock
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null
    for f in "$tmp"/run*.json; do
        [ -f "$f" ] || continue
        pid=$(python3 -c "import json; print(json.load(open('$f'))['pid'])" 2>/dev/null)
        [ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

c() { "$cosched" --socket "$sock" "$@"; }
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
wait_for() { # wait_for SECONDS COMMAND...: retry until it succeeds
    local tries=$(($1 * 10)); shift
    for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}
set_gpu() { printf '%s\n' "$@" >"$tmp/gpu.ctl.new" && mv "$tmp/gpu.ctl.new" "$tmp/gpu.ctl"; }
write_config() { # write_config TEXT: the daemon's file, with runs given the sanitizers' settings
    printf '%s\nruns:\n  keep_environment: [ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS]\n' "$1" >"$tmp/coschedd.yaml"
}
start_daemon() { # start_daemon TOPOLOGY [LIBRARY_PATH] [CONFIG]: a daemon with the fake GPU libraries
    write_config "${3:-}"
    rm -f "$sock"
    COSCHED_FAKE_GPU=$tmp/gpu.ctl LD_LIBRARY_PATH=${2-$fakegpu} "$build/daemon/coschedd" --foreground \
        --config "$tmp/coschedd.yaml" --socket "$sock" --state-dir "$tmp/state" --topology "$root/tests/topologies/$1" \
        >>"$tmp/daemon.log" 2>&1 &
    daemon_pid=$!
    wait_for 60 c status || { echo "# coschedd did not come up:"; sed 's/^/#   /' "$tmp/daemon.log"; return 1; }
}
stop_daemon() { kill -TERM "$daemon_pid"; wait "$daemon_pid"; local rc=$?; daemon_pid=; return $rc; }
run_pid() { python3 -c "import json; print(json.load(open('$1'))['pid'])"; }
proc_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
works() { # works PID: it gets CPU, however little (its CPU time grows; waits up to a minute)
    local before; before=$(cpu_ticks "$1")
    wait_for 60 bash -c "[ \"\$(awk '{print \$14 + \$15}' /proc/$1/stat)\" -gt $before ]"
}
quota_of() { # quota_of PID: the CPUs the CFS quota of its v1 cpu cgroup allows; -1 for none
    local dir; dir=/sys/fs/cgroup/cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' "/proc/$1/cgroup")
    python3 -c "q = int(open('$dir/cpu.cfs_quota_us').read()); p = int(open('$dir/cpu.cfs_period_us').read()); print(-1 if q < 0 else q / p)"
}
held_by_kernel() { # held_by_kernel JOB PID CPUS: its quota is the guard's share of its CPUs (the kernel holds it there)
    local share quota
    share=$(c --json job get --job "$1" | py 'print(d["allowed_share"])') && quota=$(quota_of "$2") &&
        python3 -c "s, q = $share, $quota; assert 0 < s < 1 and abs(q - s * $3) <= 0.011, (s, q)"
}
