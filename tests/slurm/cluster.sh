# cluster.sh: private Slurm clusters for tests (sourced, not run): its own munged with a
# fresh key and socket, slurmctld and slurmd on free ports, all state under one directory,
# nothing of the machine's /etc touched. Needs root (slurmd starts jobs as their users) and
# Debian's munge, slurmctld, slurmd and slurm-client; two nodes also need iproute2 and nsenter.
#
#   slurm_cluster_usable            0 when it can run here, else prints why
#   slurm_cluster_start DIR         one node, this host; exports SLURM_CONF; 0 once it is idle
#   slurm_cluster_start2 DIR        two nodes, cn1 and cn2, each slurmd in its own network
#                                   namespace (netns.sh), slurmctld in the root one
#   slurm_cluster_stop              cancel the jobs, stop the daemons, remove the namespaces;
#                                   also after a start that failed half-way
#   slurm_cluster_logs              the daemons' logs, for a failing test's output
#   slurm_node_exec NODE CMD...     CMD in NODE's namespace (two-node cluster; netns.sh)
#   slurm_job_state JOBID           PENDING, RUNNING, COMPLETED, FAILED, ... (scontrol's word)
#   slurm_wait_job JOBID [TIMEOUT]  0 once the job has left the queue, 1 after TIMEOUT s (60)
#
# Options, read from the environment by both starts:
#   SLURM_CLUSTER_CGROUP=1      confine jobs with cgroup v1 (mounted at /sys/fs/cgroup):
#                               task/cgroup,task/affinity, proctrack/cgroup, and a cgroup.conf
#                               with CgroupPlugin=cgroup/v1 and ConstrainCores=yes, no more
#   SLURM_CLUSTER_PROLOG=PATH   Prolog=PATH; with any of the three: PrologFlags=Alloc,Contain
#   SLURM_CLUSTER_EPILOG=PATH   Epilog=PATH                      and PrologEpilogTimeout=30
#   SLURM_CLUSTER_TASKPROLOG=PATH  TaskProlog=PATH
#   SLURM_CLUSTER_KILL_WAIT=S   KillWait=S (Slurm's default: 30)
#   SLURM_CLUSTER_RECIPE=1      run `cosched slurm-conf`'s recipe for SLURM_CLUSTER_TOPOLOGY (default
#                               ci-2core-gpu.xml, this machine's shape with one GPU): its settings,
#                               memory reserve, cgroup.conf, the partitions gpu and harvest on every
#                               node (no partition test), the prologs as links in DIR/prolog.d and
#                               DIR/epilog.d, DIR/job_submit.lua loading packaging/slurm's, every
#                               node with the harvest partition's feature; implies
#                               SLURM_CLUSTER_CGROUP=1 and the topology's GPUs, and sets
#                               cred_expire low so that a requeued job starts again soon;
#                               SLURM_CLUSTER_RECIPE_OPTIONS: more options of slurm-conf (--grace 10)
#   SLURM_CLUSTER_GPUS=N        N gres/gpu per node (gres.conf: AutoDetect=off, File=) on
#                               DIR/gpu/nvidia0..N-1, character devices 195:N as NVIDIA's (no
#                               driver here owns that major, so ConstrainDevices denying a job the
#                               GPUs it was not given denies nothing else; 1:3 would be /dev/null):
#                               slurmd refuses plain files ("not a valid character or block device")
#
# What Slurm 22.05 (Debian) does with these, checked by tests/slurm/test_cluster.sh:
#   a job's cpuset     /sys/fs/cgroup/cpuset/slurm_<node>/uid_<uid>/job_<id>, the steps below it
#                      (step_extern, step_batch, step_0, ...); Debian builds multiple-slurmd,
#                      hence the node name, so the two nodes here have hierarchies of their own
#                      (freezer likewise, for proctrack/cgroup). Emptied dirs slurm_<node> stay.
#   in the Prolog      the job's cpuset does not exist yet, not even with Alloc,Contain and the
#                      prolog waiting: slurmd makes it (with step_extern) once the prolog returns.
#                      The prolog learns the job's CPUs from `scontrol -d show job` (CPU_IDs).
#                      By the Epilog it is gone again.
#   Prolog environment Slurm's variables only (SLURM_JOB_ID, SLURM_JOB_UID, SLURMD_NODENAME,
#                      SLURM_CONF, SLURM_JOB_GPUS, ...): nothing of slurmd's environment, no PATH.
#   SLURM_JOB_GPUS     the gres indexes, comma-separated: "0", "1", "0,1"; the prolog also gets
#                      GPU_DEVICE_ORDINAL, the task CUDA_VISIBLE_DEVICES with the same value.
#   Contain without cgroups: slurmctld -i warns on stderr that pam_slurm_adopt would need
#                      proctrack/cgroup; jobs run all the same.
#
# Job ids start at FirstJobId, derived from slurmctld's port: clusters running side by side
# do not share a job id, and so not a cgroup slurm_<node>/uid_<uid>/job_<id> either.

. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

slurm_cluster_usable() {
	local tool
	for tool in munged slurmctld slurmd srun sinfo; do
		if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
			echo "$tool not installed (apt-get install munge slurmctld slurmd slurm-client)"
			return 1
		fi
	done
	if [ "$(id -u)" != 0 ]; then
		echo "slurmd must run as root"
		return 1
	fi
}

# Two free TCP ports, from the kernel: tests may run side by side.
_slurm_free_ports() {
	python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'
}

_slurm_munged_start() {
	dd if=/dev/urandom of="$SLURM_DIR/munge.key" bs=1024 count=1 status=none
	chmod 400 "$SLURM_DIR/munge.key"
	# --force: munged refuses a key or socket under a directory others may write, like /tmp
	PATH=$PATH:/usr/sbin munged --force --socket="$SLURM_DIR/munge.sock" \
		--key-file="$SLURM_DIR/munge.key" --pid-file="$SLURM_DIR/munged.pid" \
		--log-file="$SLURM_DIR/munged.log" --seed-file="$SLURM_DIR/munged.seed"
}

# The machine's sockets, cores and threads, as slurmd -C sees them: task/cgroup maps a job's
# cores onto CPUs by this layout, and every node of a test cluster is this machine.
_slurm_node_layout() {
	PATH=$PATH:/usr/sbin slurmd -C | head -1 | tr ' ' '\n' |
		grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' '
}

# The recipe's lines for the nodes given, from `cosched slurm-conf --json`: "global", "node",
# "partition" and "cgroup" lines, one per line, each prefixed by its kind and a space. cosched's
# hooks are the test's own (SLURM_CLUSTER_PROLOG, ...): the globs name DIR/prolog.d and epilog.d.
_slurm_recipe_lines() {
	local nodes=$1
	"${SLURM_CLUSTER_COSCHED:-$cosched}" slurm-conf --topology "${SLURM_CLUSTER_TOPOLOGY:-$topologies/ci-2core-gpu.xml}" \
		--nodes "$nodes" --slurm-version "$(PATH=$PATH:/usr/sbin slurmd -V)" ${SLURM_CLUSTER_RECIPE_OPTIONS:-} --json | SLURM_DIR=$SLURM_DIR python3 -c '
import json, os, sys
d = json.load(sys.stdin)
hooks = {"Prolog": os.environ.get("SLURM_CLUSTER_PROLOG"), "Epilog": os.environ.get("SLURM_CLUSTER_EPILOG"),
         "TaskProlog": os.environ.get("SLURM_CLUSTER_TASKPROLOG")}
kind = {"slurm.conf": "global", "cgroup.conf": "cgroup"}
for s in d["settings"]:
    line, key = s["setting"], s["setting"].split("=")[0]
    if s["comment"] or s["file"] not in kind:
        continue
    if key in hooks:
        if not hooks[key]:
            continue
        if key != "TaskProlog":
            line = "%s=%s/%s.d/*" % (key, os.environ["SLURM_DIR"], key.lower())
        else:
            line = "TaskProlog=" + hooks[key]
    if key in ("PrologFlags", "PrologEpilogTimeout") and not any(hooks.values()):
        continue
    if key.startswith("PartitionName"):
        print("partition", line)
    elif key in ("MemSpecLimit", "CpuSpecList", "RestrictedCoresPerGPU", "Features"):
        print("node", line)
    else:
        print(kind[s["file"]], line)
print("node", "RealMemory=%s" % d["node_line"].split("RealMemory=")[1].split()[0])
print("gpus", len(d["gres"]))
print("harvest", d["harvest_partition"])'
}

# The prolog and epilog of a recipe cluster: links in DIR/prolog.d and DIR/epilog.d, as the recipe
# tells a site to make them; its job_submit.lua (JobSubmitPlugins=lua reads it beside slurm.conf)
# loads the source tree's for the harvest partition HARVEST.
_slurm_recipe_hooks() {
	local kind path harvest=$1 lua
	lua=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../packaging/slurm" && pwd)/job_submit.lua
	printf 'cosched_harvest_partition = "%s"\nreturn dofile("%s")\n' "$harvest" "$lua" >"$SLURM_DIR/job_submit.lua"
	for kind in prolog epilog; do
		mkdir -p "$SLURM_DIR/$kind.d"
		path=${SLURM_CLUSTER_PROLOG:-}
		[ "$kind" = epilog ] && path=${SLURM_CLUSTER_EPILOG:-}
		[ -z "$path" ] || ln -sf "$path" "$SLURM_DIR/$kind.d/50-cosched"
	done
}

# slurm.conf, cgroup.conf and gres.conf for slurmctld at CTLD_ADDR and the given node lines
# (NAME ADDR ...). Per node, everything lives under DIR/nodes/NAME (slurmd expands %n), the
# TmpFS too: there the PMIx plugin makes spmix_appdir_<uid>_<job>.<step>, which two nodes
# sharing /tmp would both claim, failing the step ("File exists").
_slurm_conf() {
	local ctld_addr=$1 ctld_port slurmd_port node addr layout gres="" i recipe="" names="" cgroup=${SLURM_CLUSTER_CGROUP:-0}
	local gpus=${SLURM_CLUSTER_GPUS:-0} extra=""
	shift
	read -r ctld_port slurmd_port <<<"$(_slurm_free_ports)"
	layout=$(_slurm_node_layout)
	if [ "${SLURM_CLUSTER_RECIPE:-0}" = 1 ]; then
		for ((i = 1; i <= $#; i += 2)); do names+=${names:+,}${!i}; done
		recipe=$(_slurm_recipe_lines "$names") || return 1
		cgroup=1
		gpus=$(sed -n 's/^gpus //p' <<<"$recipe")
		gpus=${gpus:-0}
		extra=$(sed -n 's/^node //p' <<<"$recipe" | tr '\n' ' ')
	fi
	cat >"$SLURM_DIR/slurm.conf" <<CONF
ClusterName=cosched-test
SlurmctldHost=$(hostname -s)($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
FirstJobId=$((ctld_port % 60000 * 1000 + 1))
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge.sock${recipe:+,cred_expire=10}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/nodes/%n/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/nodes/%n/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/nodes/%n/slurmd.log
TmpFS=$SLURM_DIR/nodes/%n/tmp
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
CONF
	[ -z "${SLURM_CLUSTER_KILL_WAIT:-}" ] || echo "KillWait=$SLURM_CLUSTER_KILL_WAIT" >>"$SLURM_DIR/slurm.conf"
	if [ -n "$recipe" ]; then
		sed -n 's/^global //p' <<<"$recipe" >>"$SLURM_DIR/slurm.conf"
		_slurm_recipe_hooks "$(sed -n 's/^harvest //p' <<<"$recipe")"
	else
		printf 'SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n' >>"$SLURM_DIR/slurm.conf"
	fi
	if [ "$cgroup" = 1 ]; then
		[ -n "$recipe" ] || cat >>"$SLURM_DIR/slurm.conf" <<CONF
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
CONF
		cat >"$SLURM_DIR/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CONF
		if [ -n "$recipe" ]; then
			sed -n 's/^cgroup //p' <<<"$recipe" >>"$SLURM_DIR/cgroup.conf"
		else
			echo "ConstrainCores=yes" >>"$SLURM_DIR/cgroup.conf"
		fi
	else
		cat >>"$SLURM_DIR/slurm.conf" <<CONF
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
CONF
	fi
	if [ -z "$recipe" ] && [ -n "${SLURM_CLUSTER_PROLOG:-}${SLURM_CLUSTER_EPILOG:-}${SLURM_CLUSTER_TASKPROLOG:-}" ]; then
		{
			echo "PrologFlags=Alloc,Contain"
			echo "PrologEpilogTimeout=30"
			[ -z "${SLURM_CLUSTER_PROLOG:-}" ] || echo "Prolog=$SLURM_CLUSTER_PROLOG"
			[ -z "${SLURM_CLUSTER_EPILOG:-}" ] || echo "Epilog=$SLURM_CLUSTER_EPILOG"
			[ -z "${SLURM_CLUSTER_TASKPROLOG:-}" ] || echo "TaskProlog=$SLURM_CLUSTER_TASKPROLOG"
		} >>"$SLURM_DIR/slurm.conf"
	fi
	if [ "$gpus" -gt 0 ]; then
		mkdir -p "$SLURM_DIR/gpu"
		for i in $(seq 0 $((gpus - 1))); do
			mknod "$SLURM_DIR/gpu/nvidia$i" c 195 "$i" || return 1
		done
		[ -n "$recipe" ] || echo "GresTypes=gpu" >>"$SLURM_DIR/slurm.conf"
		cat >"$SLURM_DIR/gres.conf" <<CONF
AutoDetect=off
Name=gpu File=$SLURM_DIR/gpu/nvidia[0-$((gpus - 1))]
CONF
		gres="Gres=gpu:$gpus"
	fi
	while [ $# -gt 0 ]; do
		node=$1 addr=$2
		shift 2
		mkdir -p "$SLURM_DIR/nodes/$node/spool" "$SLURM_DIR/nodes/$node/tmp"
		echo "NodeName=$node NodeAddr=$addr $layout$gres $extra State=UNKNOWN" >>"$SLURM_DIR/slurm.conf"
	done
	if [ -n "$recipe" ]; then
		sed -n 's/^partition //p' <<<"$recipe" >>"$SLURM_DIR/slurm.conf"
	else
		echo "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP" \
			>>"$SLURM_DIR/slurm.conf"
	fi
}

# 0 once all N nodes are idle, waiting at most 60 s (a loaded machine registers slowly).
_slurm_wait_idle() {
	local n=$1 i
	for i in $(seq 300); do
		# a node in two partitions has two lines
		[ "$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u | grep -c ' idle$')" = "$n" ] && return 0
		sleep 0.2
	done
	echo "slurm nodes not idle after 60 s: $(sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' ')" >&2
	return 1
}

# One private cluster at a time on a machine: the cgroups Slurm makes (slurm_<node>/...) are named
# after this host, so tests that start one wait for each other here (meson runs them side by side
# with the rest). The lock is the test's until it exits, across the clusters it starts.
_slurm_lock() {
	[ -n "${_slurm_lock_fd:-}" ] && return 0 # held already (a second cluster of the same test)
	exec {_slurm_lock_fd}>>/tmp/cosched-test-slurm.lock || return 1
	flock "$_slurm_lock_fd"
}

slurm_cluster_start() {
	SLURM_DIR=$1
	local host
	_slurm_lock || return 1
	mkdir -p "$SLURM_DIR/state"
	host=$(hostname -s)
	_slurm_munged_start || return 1
	_slurm_conf 127.0.0.1 "$host" 127.0.0.1 || return 1
	export SLURM_CONF=$SLURM_DIR/slurm.conf
	PATH=$PATH:/usr/sbin slurmctld -f "$SLURM_CONF" -i || return 1
	PATH=$PATH:/usr/sbin slurmd -f "$SLURM_CONF" || return 1
	_slurm_wait_idle 1
}

# Open MPI needs no settings across the two nodes: in a node's namespace only lo and eth0
# exist, btl/tcp leaves out lo by default and so connects over the bridge, and btl/vader
# finds no peer on its node (srun's PMIx tells each rank its node's peers).
slurm_cluster_start2() {
	SLURM_DIR=$1
	local node
	_slurm_lock || return 1
	mkdir -p "$SLURM_DIR/state"
	_slurm_net_up "$SLURM_DIR" cn1 cn2 || return 1
	_slurm_munged_start || return 1
	_slurm_conf "$(_slurm_net_bridge_addr)" \
		cn1 "$(slurm_node_addr cn1)" cn2 "$(slurm_node_addr cn2)" || return 1
	export SLURM_CONF=$SLURM_DIR/slurm.conf
	PATH=$PATH:/usr/sbin slurmctld -f "$SLURM_CONF" -i || return 1
	for node in cn1 cn2; do
		PATH=$PATH:/usr/sbin slurm_node_exec "$node" slurmd -N "$node" -f "$SLURM_CONF" || return 1
	done
	_slurm_wait_idle 2
}

_slurm_any_alive() {
	local pid
	for pid in "$@"; do
		kill -0 "$pid" 2>/dev/null && return 0
	done
	return 1
}

slurm_cluster_stop() {
	[ -n "${SLURM_DIR:-}" ] || return 0
	local pids pid i jobs
	jobs=$(squeue -h -o %i 2>/dev/null)
	if [ -n "$jobs" ]; then
		# shellcheck disable=SC2086
		scancel $jobs 2>/dev/null
		for i in $(seq 50); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	# all at once: each daemon takes about 2 s to end
	pids=$(cat "$SLURM_DIR"/nodes/*/slurmd.pid "$SLURM_DIR/slurmctld.pid" "$SLURM_DIR/munged.pid" \
		2>/dev/null)
	for pid in $pids; do
		kill "$pid" 2>/dev/null
	done
	for i in $(seq 50); do
		# shellcheck disable=SC2086
		_slurm_any_alive $pids || break
		sleep 0.1
	done
	for pid in $pids; do
		kill -9 "$pid" 2>/dev/null
	done
	_slurm_net_down "$SLURM_DIR"
	# a second stop finds nothing to stop, not pids that may be someone else's by now
	rm -f "$SLURM_DIR"/nodes/*/slurmd.pid "$SLURM_DIR/slurmctld.pid" "$SLURM_DIR/munged.pid"
	return 0
}

slurm_cluster_logs() {
	local f
	for f in "$SLURM_DIR/munged.log" "$SLURM_DIR/slurmctld.log" "$SLURM_DIR"/nodes/*/slurmd.log; do
		echo "# --- ${f#"$SLURM_DIR"/}"
		sed 's/^/# /' "$f" 2>/dev/null | tail -20
	done
}

slurm_job_state() {
	scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p'
}

# A job has left the queue once it is in none of the states that hold its nodes.
slurm_wait_job() {
	local job=$1 timeout=${2:-60} i
	for i in $(seq $((timeout * 5))); do
		case $(slurm_job_state "$job") in
		PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | STOPPED | SIGNALING | STAGE_OUT |\
			REQUEUED | RESIZING) ;;
		*) return 0 ;;
		esac
		sleep 0.2
	done
	echo "job $job still $(slurm_job_state "$job") after $timeout s" >&2
	return 1
}
