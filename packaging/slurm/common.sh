# common.sh: what cosched's prolog, epilog and taskprolog share — their configuration, their log
# and the checks on what Slurm hands them. Sourced; calls no Slurm command.
# shellcheck disable=SC2034,SC2154 # the settings are read, and $script set, by the scripts that source it

# Slurm gives prologs no PATH of their own.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
cosched=/usr/bin/cosched
socket=/run/coschedd/coschedd.sock
timeout=10
strict=0
placement=auto
cgroup_roots="/sys/fs/cgroup/cpuset/slurm /sys/fs/cgroup/cpuset/slurm_${SLURMD_NODENAME:-} /sys/fs/cgroup/system.slice/slurmstepd.scope /sys/fs/cgroup/unified/system.slice/slurmstepd.scope"
gpu_map=
policy=
log_file=
# shellcheck disable=SC1090
conf=${COSCHED_SLURM_CONF:-/etc/cosched/slurm.conf}
if [ -r "$conf" ]; then
	. "$conf"
fi

# log MESSAGE: one line to syslog and to log_file, naming the script and the job.
log() {
	local line="$script job ${SLURM_JOB_ID:-?}: $*"
	logger -t cosched-slurm -- "$line" 2>/dev/null
	if [ -n "$log_file" ]; then
		echo "$(date '+%Y-%m-%dT%H:%M:%S') $line" >>"$log_file" 2>/dev/null
	fi
}

# give_up MESSAGE: log it and end the script: 0 (the job runs unplaced), or 1 when strict.
give_up() {
	log "$*"
	if [ "$strict" = 1 ]; then
		exit 1
	fi
	exit 0
}

# The job id as coschedd accepts it: 1-63 of letters, digits, '.', '_', '-'.
job_id_ok() {
	[[ ${SLURM_JOB_ID:-} =~ ^[A-Za-z0-9._-]{1,63}$ ]]
}

# call ARGS...: cosched with the configured socket and timeout; its stderr is kept in $reply.
call() {
	reply=$(timeout "$((timeout + 2))" "$cosched" --socket "$socket" --timeout "$timeout" "$@" 2>&1 >/dev/null)
}
