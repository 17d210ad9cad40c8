# gpu_daemon_lib.sh: what the suites with the stand-in GPU libraries (in tests/daemon and
# tests/slurm) add to tests/lib/common.sh (sourced after it): the fake GPU's control file, a
# daemon started with it, and what the kernel holds a co-tenant to (its CFS quota, whether it gets
# CPU at all) — states, never rates measured over a few seconds of a loaded machine.
fakegpu=$build/tests/daemon/fakegpu

set_gpu() { printf '%s\n' "$@" >"$tmp/gpu.ctl.new" && mv "$tmp/gpu.ctl.new" "$tmp/gpu.ctl"; }

# start_gpu_daemon TOPOLOGY [LIBRARY_PATH] [CONFIG]: a daemon on tests/topologies/TOPOLOGY whose
# GPU libraries are found on LIBRARY_PATH (the stand-ins by default), with that configuration.
start_gpu_daemon() {
    write_config "${3:-}"
    local daemon_env=(COSCHED_FAKE_GPU="$tmp/gpu.ctl" LD_LIBRARY_PATH="${2-$fakegpu}") # this start's only
    start_daemon --topology "$topologies/$1"
}

# quota_of PID: the CPUs the CFS quota of its v1 cpu cgroup allows; -1 for none.
quota_of() {
    local dir
    dir=/sys/fs/cgroup/cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' "/proc/$1/cgroup")
    python3 -c "q = int(open('$dir/cpu.cfs_quota_us').read()); p = int(open('$dir/cpu.cfs_period_us').read()); print(-1 if q < 0 else q / p)"
}
# held_by_kernel JOB PID CPUS: its quota is the guard's share of its CPUs (the kernel holds it there).
held_by_kernel() {
    local share quota
    share=$(c --json job get --job "$1" | py 'print(d["allowed_share"])') && quota=$(quota_of "$2") &&
        python3 -c "s, q = $share, $quota; assert 0 < s < 1 and abs(q - s * $3) <= 0.011, (s, q)"
}
