# cluster.sh: a private one-node Slurm cluster for tests (sourced, not run): its own munged
# with a fresh key and socket, slurmctld and slurmd on free ports, all state under one
# directory, nothing of the machine's /etc touched. Needs root (slurmd starts jobs as their
# users) and Debian's munge, slurmctld, slurmd and slurm-client.
#
#   slurm_cluster_usable            0 when it can run here, else prints why
#   slurm_cluster_start DIR         start it; exports SLURM_CONF; 0 once the node is idle
#   slurm_cluster_stop              stop what slurm_cluster_start started
#   slurm_cluster_logs              the daemons' logs, for a failing test's output

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

slurm_cluster_start() {
	SLURM_DIR=$1
	local host ports ctld_port slurmd_port i
	mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool"
	host=$(hostname -s)
	read -r ctld_port slurmd_port <<<"$(_slurm_free_ports)"
	dd if=/dev/urandom of="$SLURM_DIR/munge.key" bs=1024 count=1 status=none
	chmod 400 "$SLURM_DIR/munge.key"
	# --force: munged refuses a key or socket under a directory others may write, like /tmp
	PATH=$PATH:/usr/sbin munged --force --socket="$SLURM_DIR/munge.sock" \
		--key-file="$SLURM_DIR/munge.key" --pid-file="$SLURM_DIR/munged.pid" \
		--log-file="$SLURM_DIR/munged.log" --seed-file="$SLURM_DIR/munged.seed" || return 1
	cat >"$SLURM_DIR/slurm.conf" <<CONF
ClusterName=cosched-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
	export SLURM_CONF=$SLURM_DIR/slurm.conf
	PATH=$PATH:/usr/sbin slurmctld -f "$SLURM_CONF" -i || return 1
	PATH=$PATH:/usr/sbin slurmd -f "$SLURM_CONF" || return 1
	for i in $(seq 100); do
		[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && return 0
		sleep 0.2
	done
	echo "slurm node not idle after 20 s: $(sinfo -h -o %T 2>&1)" >&2
	return 1
}

slurm_cluster_stop() {
	[ -n "${SLURM_DIR:-}" ] || return 0
	local f pid i
	for f in slurmd slurmctld munged; do
		pid=$(cat "$SLURM_DIR/$f.pid" 2>/dev/null) || continue
		kill "$pid" 2>/dev/null || continue
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null
	done
	return 0
}

slurm_cluster_logs() {
	local f
	for f in munged slurmctld slurmd; do
		echo "# --- $f.log"
		sed 's/^/# /' "$SLURM_DIR/$f.log" 2>/dev/null | tail -20
	done
}
