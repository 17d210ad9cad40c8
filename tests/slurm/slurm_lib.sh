# slurm_lib.sh: what the suites with a private Slurm add to tests/lib/common.sh (sourced after it):
# cluster.sh's functions, the skip where Slurm cannot run, a start that ends the suite when it
# fails, cosched's scripts as slurmd runs them, and the processes of this node's jobs.
# shellcheck shell=bash disable=SC2154 # root, tmp, sock and cosched are common.sh's
# shellcheck source=cluster.sh
. "$root/tests/slurm/cluster.sh"

# need_slurm: skip_all unless a private Slurm can run here.
need_slurm() {
    local why
    why=$(slurm_cluster_usable) || skip_all "$why"
}
# need_cgroup_v1: skip_all unless it can confine jobs as SLURM_CLUSTER_CGROUP=1 asks.
need_cgroup_v1() {
    if [ ! -d /sys/fs/cgroup/freezer ] || [ ! -d /sys/fs/cgroup/cpu ]; then
        skip_all "Slurm's cgroup v1 confinement needs the v1 freezer and cpu hierarchies at /sys/fs/cgroup"
    fi
}

# slurm_up NAME START...: START (start_slurm, slurm_cluster_start2 DIR) passes as NAME; else NAME
# fails with its reason and the daemons' logs, and slurm_up returns 1.
slurm_up() {
    local name=$1
    shift
    if "$@" 2>"$tmp/err"; then
        ok "$name"
        return 0
    fi
    not_ok "$name" "$(cat "$tmp/err")"
    slurm_cluster_logs
    return 1
}

# cosched_scripts SOCKET: cosched's prolog, epilog and TaskProlog (packaging/slurm) as installed,
# $tmp/prolog, epilog and taskprolog, for the coschedd on SOCKET (the settings file is shell: it
# may name $SLURMD_NODENAME), logging to $tmp/slurm.log; the clusters started next run them.
cosched_scripts() {
    local s
    cat >"$tmp/slurm.conf.cosched" <<CONF
cosched=$cosched
socket=$1
timeout=5
log_file=$tmp/slurm.log
CONF
    for s in prolog epilog taskprolog; do
        printf '#!/bin/bash\nexport COSCHED_SLURM_CONF=%s\nexec %s "$@"\n' "$tmp/slurm.conf.cosched" \
            "$root/packaging/slurm/$s" >"$tmp/$s"
        chmod 755 "$tmp/$s"
    done
    export SLURM_CLUSTER_PROLOG=$tmp/prolog SLURM_CLUSTER_EPILOG=$tmp/epilog SLURM_CLUSTER_TASKPROLOG=$tmp/taskprolog
}

# job_pids: the processes of this cluster's jobs, those in the cgroups Slurm made for them here.
job_pids() { cat /sys/fs/cgroup/freezer/slurm_"$(hostname -s)"/uid_*/job_*/step_*/cgroup.procs 2>/dev/null; }
# kill_job_pids: none of them outlives the test, a stopped one included (an at_exit hook).
kill_job_pids() {
    local left
    mapfile -t left < <(job_pids)
    [ ${#left[@]} -eq 0 ] || { kill -CONT "${left[@]}" && kill -9 "${left[@]}"; } 2>/dev/null
}

# released JOB: coschedd holds no job JOB.
released() { c --json job list | py 'assert "'"$1"'" not in [j["job"] for j in d["jobs"]]'; }
