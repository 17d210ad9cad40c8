# netns.sh: hosts for a multi-node test cluster on one machine (sourced by cluster.sh): one
# network namespace per node, joined by veth pairs to a bridge in the root namespace.
#
# Subnet 10.213.N.0/24, N the first free one from a random start: the bridge (csbN, claimed
# atomically by creating it, so side-by-side tests take different N) is 10.213.N.1, node i
# is 10.213.N.(10+i) on its eth0. Namespaces are cosched-N-NODE; the root ends of the veths
# csvN-NODE. Processes enter a namespace with nsenter --net, not ip netns exec: the latter
# also remounts /sys, which hides /sys/fs/cgroup from slurmd and from daemons a test runs
# on a node.
#
#   _slurm_net_up DIR NODE...   make bridge, namespaces and links; records them in DIR/net
#   _slurm_net_down DIR         kill what runs in the namespaces, remove all that DIR/net names
#   slurm_node_addr NODE        the node's address
#   _slurm_net_bridge_addr      the root namespace's address on the bridge
#   slurm_node_exec NODE CMD... CMD inside NODE's namespace (inherits the caller's environment,
#                               plus SLURM_CLUSTER_NODE, _NODE_ADDR and _NODE_DIR)

_slurm_net_up() {
	local dir=$1 n='' start k node i=0
	shift
	start=$RANDOM
	for k in $(seq 0 253); do
		k=$(((start + k) % 254 + 1))
		[ -z "$(ip -4 -o addr show to "10.213.$k.0/24")" ] || continue
		[ -z "$(ip -4 route show "10.213.$k.0/24")" ] || continue
		ip link add "csb$k" type bridge 2>/dev/null && n=$k && break
	done
	if [ -z "$n" ]; then
		echo "no free subnet 10.213.N.0/24 for the cluster's bridge" >&2
		return 1
	fi
	echo "bridge csb$n 10.213.$n.1" >"$dir/net"
	SLURM_NET_DIR=$dir
	ip addr add "10.213.$n.1/24" dev "csb$n" && ip link set "csb$n" up || return 1
	for node in "$@"; do
		i=$((i + 1))
		echo "node $node cosched-$n-$node csv$n-$node 10.213.$n.$((10 + i))" >>"$dir/net"
		ip netns add "cosched-$n-$node" || return 1
		ip link add "csv$n-$node" type veth peer name "csp$n-$node" || return 1
		ip link set "csv$n-$node" master "csb$n" up || return 1
		ip link set "csp$n-$node" netns "cosched-$n-$node" || return 1
		ip -n "cosched-$n-$node" link set "csp$n-$node" name eth0 || return 1
		ip -n "cosched-$n-$node" addr add "10.213.$n.$((10 + i))/24" dev eth0 || return 1
		ip -n "cosched-$n-$node" link set eth0 up || return 1
		ip -n "cosched-$n-$node" link set lo up || return 1
	done
}

# Column C of NODE's line in the record: node NAME NAMESPACE VETH ADDRESS
_slurm_net_field() {
	awk -v node="$1" -v c="$2" '$1 == "node" && $2 == node { print $c }' \
		"${SLURM_NET_DIR:?no cluster network}/net"
}

slurm_node_addr() { _slurm_net_field "$1" 5; }
_slurm_net_bridge_addr() {
	awk '$1 == "bridge" { print $3 }' "${SLURM_NET_DIR:?no cluster network}/net"
}

slurm_node_exec() {
	local node=$1 ns
	shift
	ns=$(_slurm_net_field "$node" 3)
	if [ -z "$ns" ]; then
		echo "slurm_node_exec: no node $node in this cluster" >&2
		return 1
	fi
	SLURM_CLUSTER_NODE=$node SLURM_CLUSTER_NODE_ADDR=$(slurm_node_addr "$node") \
		SLURM_CLUSTER_NODE_DIR=$SLURM_NET_DIR/nodes/$node \
		nsenter --net="/run/netns/$ns" -- "$@"
}

# Tolerates a half-made network: every step is tried whatever the previous one did.
_slurm_net_down() {
	local dir=$1 kind name ns veth pids sig i
	[ -f "$dir/net" ] || return 0
	while read -r kind name ns veth _; do
		[ "$kind" = node ] || continue
		sig=TERM
		for i in $(seq 50); do
			pids=$(ip netns pids "$ns" 2>/dev/null)
			[ -n "$pids" ] || break
			[ "$i" -le 30 ] || sig=KILL
			# shellcheck disable=SC2086
			kill -s "$sig" $pids 2>/dev/null
			sleep 0.1
		done
		ip link del "$veth" 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done <"$dir/net"
	while read -r kind name _; do
		[ "$kind" = bridge ] && ip link del "$name" 2>/dev/null
	done <"$dir/net"
	rm -f "$dir/net"
	return 0
}
