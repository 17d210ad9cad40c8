#!/bin/bash
# test_prolog: cosched's prolog, epilog and TaskProlog run as slurmd runs them (Slurm's variables
# only, no PATH) against a real coschedd, without Slurm: roles from SLURM_JOB_GPUS, the cpuset
# read from a job cgroup, retries, strict mode, and bad input — a malformed GPU list, a GPU the
# node does not have, an unreadable cgroup, a job id with other characters — logged, exit 0
# (1 when strict), nothing registered.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
start_daemon --topology "$topologies/ci-2core-gpu.xml"
settings() { # settings EXTRA-LINES...: the scripts' settings file
	printf 'cosched=%s\nsocket=%s\ntimeout=3\nlog_file=%s\ncgroup_roots=%s\n' "$build/client/cosched" "$sock" \
		"$tmp/log" "$tmp/cgroup/slurm" >"$tmp/conf"
	printf '%s\n' "$@" >>"$tmp/conf"
}
# slurm SCRIPT VAR=VALUE...: the script with only the given variables, as slurmd starts it
slurm() {
	local script=$1
	shift
	# (the sanitizer settings only matter to the ASan build of cosched)
	env -i COSCHED_SLURM_CONF="$tmp/conf" SLURMD_NODENAME=cn1 ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
		LSAN_OPTIONS="${LSAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" "$@" "$root/packaging/slurm/$script"
}
jobs_now() { c --json job list | python3 -c 'import json,sys; print(" ".join(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }

settings
slurm prolog SLURM_JOB_ID=11 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0
check "a job with SLURM_JOB_GPUS is registered as a trainer on that GPU" bash -c \
	"'$build/client/cosched' --socket '$sock' --json job get --job 11 | grep -q '\"role\": \"trainer\"'"
slurm prolog SLURM_JOB_ID=11 SLURM_JOB_UID=0 SLURM_JOB_GPUS=0 SLURM_JOB_PARTITION=gpu
check "a retried prolog exits 0 and keeps the one registration" test "$(jobs_now)" = 11
slurm prolog SLURM_JOB_ID=15 SLURM_JOB_UID=0 SLURM_JOB_PARTITION=gpu-a100
check "the prolog passes the job's partition (a trainer's default progress source follows it)" bash -c \
	"'$build/client/cosched' --socket '$sock' --json job get --job 15 | grep -q '\"partition\": \"gpu-a100\"'"
slurm epilog SLURM_JOB_ID=15
slurm prolog SLURM_JOB_ID=12 SLURM_JOB_UID=65534
check "a job without GPUs is registered as a co-tenant of its uid" bash -c \
	"'$build/client/cosched' --socket '$sock' --json job get --job 12 | grep -q '\"uid\": 65534'"
out=$(slurm taskprolog SLURM_JOB_ID=11 SLURM_LOCALID=0)
check "the TaskProlog prints the trainer's exports, unquoted" bash -c "grep -qx 'export OMP_PLACES={[01]}' <<<'$out' &&
	grep -qx 'export CUDA_VISIBLE_DEVICES=0' <<<'$out' && grep -qx 'export COSCHED_JOB=11' <<<'$out'"
reporter=$(c --json job get --job 11 | python3 -c 'import json,sys; print(json.load(sys.stdin)["autoreport"])')
out=$(slurm taskprolog SLURM_JOB_ID=11 SLURM_LOCALID=0 PYTHONPATH=/home/u/lib)
check "the TaskProlog puts the step reporter first on the task's own PYTHONPATH, written out" \
	grep -qx "export PYTHONPATH=$reporter:/home/u/lib" <<<"$out"
check "the TaskProlog prints nothing for a rank the job does not have, and exits 0" \
	test -z "$(slurm taskprolog SLURM_JOB_ID=11 SLURM_LOCALID=7)"
slurm epilog SLURM_JOB_ID=11
slurm epilog SLURM_JOB_ID=11
check "the epilog releases, and a second epilog exits 0 too" test $? = 0
check "... leaving only the other job" test "$(jobs_now)" = 12
slurm epilog SLURM_JOB_ID=12

# Slurm's GPU numbering mapped to cosched's (gpu_map "SLURM:COSCHED ...").
settings 'gpu_map="3:0 0:5"'
slurm prolog SLURM_JOB_ID=13 SLURM_JOB_UID=0 SLURM_JOB_GPUS=3
check "gpu_map turns Slurm's GPU 3 into cosched's GPU 0" bash -c \
	"'$build/client/cosched' --socket '$sock' --json job get --job 13 | grep -q '\"gpu\": 0'"
slurm epilog SLURM_JOB_ID=13

# The job's cpuset cgroup (cgroup v1 layout: ROOT/uid_UID/job_ID).
mkdir -p "$tmp/cgroup/slurm/uid_0/job_21"
echo 1 >"$tmp/cgroup/slurm/uid_0/job_21/cpuset.cpus"
settings placement=slurm
slurm prolog SLURM_JOB_ID=21 SLURM_JOB_UID=0
check "placement=slurm registers the job within its cgroup's CPUs" bash -c \
	"'$build/client/cosched' --socket '$sock' --json job get --job 21 | grep -q '\"allowed_cpus\": \"1\"'"
slurm epilog SLURM_JOB_ID=21

# Bad input: logged, exit 0 (1 when strict), nothing registered.
bad() { # bad DESCRIPTION LOG-PATTERN VAR=VALUE...
	local what=$1 pattern=$2
	shift 2
	slurm prolog "$@"
	local rc=$?
	check "$what: exit 0, logged, nothing registered" bash -c \
		"test $rc = 0 && grep -q -- '$pattern' '$tmp/log' && test -z \"\$('$build/client/cosched' --socket '$sock' --json job list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"jobs\"]) or \"\")')\""
}
settings
bad "a malformed SLURM_JOB_GPUS" "is not a GPU list" SLURM_JOB_ID=31 SLURM_JOB_UID=0 SLURM_JOB_GPUS='0;rm'
bad "a GPU the node does not have" "GPU 5 does not exist" SLURM_JOB_ID=32 SLURM_JOB_UID=0 SLURM_JOB_GPUS=5
bad "a job id with other characters" "is missing or not 1-63" SLURM_JOB_ID='3 3' SLURM_JOB_UID=0
bad "no uid" "is not a uid" SLURM_JOB_ID=34
settings placement=slurm
bad "an unreadable cgroup under placement=slurm" "cpuset cgroup under" SLURM_JOB_ID=35 SLURM_JOB_UID=0
settings strict=1
slurm prolog SLURM_JOB_ID=36 SLURM_JOB_UID=0 SLURM_JOB_GPUS=x
check "strict=1 makes a refusal exit 1" test $? = 1
stop_daemon
settings
slurm prolog SLURM_JOB_ID=37 SLURM_JOB_UID=0
check "coschedd down: the prolog exits 0 and logs why" bash -c "test $? = 0 && grep -q 'job 37: coschedd unreachable' '$tmp/log'"
settings strict=1
slurm prolog SLURM_JOB_ID=38 SLURM_JOB_UID=0
check "... exit 1 when strict" test $? = 1
slurm epilog SLURM_JOB_ID=38
check "the epilog exits 0 with coschedd down, logged" bash -c "test $? = 0 && grep -q 'epilog job 38: coschedd unreachable' '$tmp/log'"
sed 's/^/# log: /' "$tmp/log"
finish
