#!/bin/bash
# test_slurm: cosched's prolog, epilog and TaskProlog (packaging/slurm) in a real one-node Slurm
# with cgroup confinement and a GPU gres, beside a real coschedd: a trainer job and a co-tenant
# sbatch job registered and released (one by scancel), the TaskProlog's exports in the task,
# the co-tenant at work in stats, `cosched bind` inside and outside the task's cpuset, jobs
# that still run while coschedd is down, and the job script of docs/slurm.md as written.
. "${COSCHED_SOURCE_ROOT:?}/tests/trainer/tap.sh"
. "${COSCHED_SOURCE_ROOT:?}/tests/slurm/cluster.sh"
root=$COSCHED_SOURCE_ROOT
build=${COSCHED_BUILD_ROOT:?}
tmp=$(mktemp -d)
chmod 755 "$tmp"
daemon_pid=
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid"; slurm_cluster_stop; rm -rf "$tmp"' EXIT
if ! why=$(slurm_cluster_usable); then
	ok "# SKIP $why"
	finish
	exit
fi
sock=$tmp/coschedd.sock
c() { "$build/client/cosched" --socket "$sock" "$@"; }
start_daemon() {
	"$build/daemon/coschedd" --foreground --socket "$sock" --state-dir "$tmp/state" \
		--topology "$root/tests/topologies/ci-2core-gpu.xml" >>"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 100); do c status >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

# The scripts as installed, with this test's settings.
cat >"$tmp/slurm.conf.cosched" <<CONF
cosched=$build/client/cosched
socket=$sock
timeout=5
log_file=$tmp/slurm.log
CONF
for s in prolog epilog taskprolog; do
	printf '#!/bin/bash\nexport COSCHED_SLURM_CONF=%s\nexec %s "$@"\n' "$tmp/slurm.conf.cosched" \
		"$root/packaging/slurm/$s" >"$tmp/$s"
	chmod 755 "$tmp/$s"
done
start_daemon || { not_ok "coschedd starts"; finish; exit; }
SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_GPUS=1 SLURM_CLUSTER_PROLOG=$tmp/prolog SLURM_CLUSTER_EPILOG=$tmp/epilog \
	SLURM_CLUSTER_TASKPROLOG=$tmp/taskprolog slurm_cluster_start "$tmp/slurm" 2>"$tmp/err"
if [ $? != 0 ]; then
	not_ok "a one-node Slurm with cgroup confinement and cosched's scripts starts"
	sed 's/^/# /' "$tmp/err"
	slurm_cluster_logs
	finish
	exit
fi
ok "a one-node Slurm with cgroup confinement and cosched's scripts starts"

# A task: its CPUs, what the TaskProlog exported, and cosched bind inside and outside its cpuset.
cat >"$tmp/task.sh" <<EOF
#!/bin/bash
mine=\$(awk '/Cpus_allowed_list/ {print \$2}' /proc/self/status)
echo "cpus=\$mine job=\${COSCHED_JOB:-} places=\${OMP_PLACES:-} socket=\${COSCHED_SOCKET:-}"
other=\$(( mine == 0 ? 1 : 0 ))
c() { "$build/client/cosched" --socket "$sock" "\$@"; }
sleep "\${1:-0}"
[ "\${2:-}" = bind ] || exit 0
for _ in \$(seq 300); do c status >/dev/null 2>&1 && break; sleep 0.1; done
c job register --job in-\$SLURM_JOB_ID --uid 0 --role cotenant --cpus \$mine >/dev/null
c job register --job out-\$SLURM_JOB_ID --uid 0 --role cotenant --cpus \$other >/dev/null
echo "bind-in=\$(c bind --job in-\$SLURM_JOB_ID --rank 0 -- awk '/Cpus_allowed_list/ {print \$2}' /proc/self/status)"
c bind --job out-\$SLURM_JOB_ID --rank 0 -- true 2>"$tmp/bind-out.\$SLURM_JOB_ID"
echo "bind-out=\$?"
c job release --job in-\$SLURM_JOB_ID >/dev/null; c job release --job out-\$SLURM_JOB_ID >/dev/null
EOF
chmod 755 "$tmp/task.sh"
a=$(sbatch --parsable -n1 -c1 --gres=gpu:1 -o "$tmp/a.out" --wrap "srun $tmp/task.sh 8")
b=$(sbatch --parsable -n1 -c1 -o "$tmp/b.out" --wrap "srun $tmp/task.sh 60")
# Registered once both prologs are through (a job may count as running while its prolog runs).
for _ in $(seq 300); do
	c --json job list >"$tmp/jobs.json" 2>/dev/null &&
		json "assert {'$a', '$b'} <= {x['job'] for x in d['jobs']}" <"$tmp/jobs.json" 2>/dev/null && break
	sleep 0.1
done
c --json job list >"$tmp/jobs.json"
check "the prolog registered the GPU job as a trainer on GPU 0, external" json "
j={x['job']: x for x in d['jobs']}['$a']
assert j['role']=='trainer' and j['ranks'][0]['gpu']==0 and j['external']" <"$tmp/jobs.json"
check "the prolog registered the job without GPUs as a co-tenant" json "
j={x['job']: x for x in d['jobs']}['$b']
assert j['role']=='cotenant' and j['external']" <"$tmp/jobs.json"
check "their planned CPUs are disjoint" json "
j={x['job']: x for x in d['jobs']}
a=set(sum((r['cpus'] for r in j['$a']['ranks']), [])); b=set(sum((r['cpus'] for r in j['$b']['ranks']), []))
assert a and b and not a & b" <"$tmp/jobs.json"
# Once the tasks run, their TaskProlog has planned each job within the cpuset Slurm gave it.
for _ in $(seq 300); do
	grep -q '^cpus=' "$tmp/a.out" 2>/dev/null && grep -q '^cpus=' "$tmp/b.out" 2>/dev/null && break
	sleep 0.1
done
c --json job list >"$tmp/jobs2.json"
for job in "$a" "$b"; do
	f=$tmp/$([ "$job" = "$a" ] && echo a || echo b).out
	task=$(sed -n 's/^cpus=\([0-9,-]*\) .*/\1/p' "$f")
	check "job $job is planned within its Slurm cpuset ($task), on it" json "
j={x['job']: x for x in d['jobs']}['$job']
cpus=set(sum((r['cpus'] for r in j['ranks']), []))
assert j['allowed_cpus'] == '$task' and cpus == {int('$task')}, (j['allowed_cpus'], cpus)" <"$tmp/jobs2.json"
done
check "the TaskProlog's OpenMP places are the task's own CPU" bash -c \
	"grep -q \"^cpus=\$(sed -n 's/^cpus=\([01]\) .*/\1/p' '$tmp/a.out') job=$a places={\$(sed -n 's/^cpus=\([01]\) .*/\1/p' '$tmp/a.out')}\" '$tmp/a.out'"
check "stats shows the Slurm co-tenant at work while it runs" bash -c \
	"'$build/client/cosched' --socket '$sock' stats | grep -q 'co-tenant running: yes'"
check "the metric says the co-tenant is at work" bash -c \
	"'$build/client/cosched' --socket '$sock' metrics | grep -q 'cosched_cotenant_active{jobid=\"$b\"} 1'"
scancel "$b"
slurm_wait_job "$a" 60
slurm_wait_job "$b" 60
for _ in $(seq 50); do [ "$(c --json job list | json 'print(len(d["jobs"]))')" = 0 ] && break; sleep 0.1; done
check "the epilogs released both jobs, the cancelled one too" test "$(c --json job list | json 'print(len(d["jobs"]))')" = 0
sed 's/^/# a.out: /' "$tmp/a.out"
check "the TaskProlog's exports reached the trainer's task" grep -q "job=$a places={[01]} socket=$sock" "$tmp/a.out"
check "the prolog logged each registration" bash -c "test \$(grep -c 'prolog job .*: registered' '$tmp/slurm.log') = 2"

# coschedd down: jobs still run, the prolog says why.
kill "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
daemon_pid=
d=$(sbatch --parsable -n1 -c1 -o "$tmp/d.out" --wrap "echo ran; srun $tmp/task.sh 0 bind")
for _ in $(seq 300); do grep -q "prolog job $d:" "$tmp/slurm.log" && break; sleep 0.1; done
start_daemon # the task waits for it, then binds as an unregistered job would not
slurm_wait_job "$d" 60
check "with coschedd down a job still runs" grep -qx ran "$tmp/d.out"
sed 's/^/# d.out: /' "$tmp/d.out"
mine=$(sed -n 's/^cpus=\([01]\) .*/\1/p' "$tmp/d.out")
check "cosched bind inside the task's cpuset binds there" test -n "$mine" -a "bind-in=$mine" = "$(grep '^bind-in=' "$tmp/d.out")"
check "cosched bind outside the task's cpuset is refused with exit status 1" grep -qx 'bind-out=1' "$tmp/d.out"
check "... and says which CPUs the task may use" grep -q 'but this task may only use CPUs' "$tmp/bind-out.$d"

check "... and the prolog logs why it did not register it" grep -q "prolog job $d: coschedd unreachable" "$tmp/slurm.log"
check "... and its epilog, coschedd back, releases the unknown job without error" grep -q "epilog job $d: released" "$tmp/slurm.log"

# The job script of docs/slurm.md, as written (cosched places; the trainer needs a GPU node).
sed -n '/^<!-- recipe/,/^<!-- end recipe/p' "$root/docs/slurm.md" | sed '1,2d;$d' | sed '$d' >"$tmp/recipe.sh"
r=$(PATH=$build/client:$build/trainer:$build/noise:$PATH COSCHED_TOPOLOGY=$root/tests/topologies/ci-2core-gpu.xml \
	sbatch --parsable --export=ALL -o "$tmp/recipe.out" "$tmp/recipe.sh")
slurm_wait_job "$r" 180
check "the documented job script runs: both steps end well" test "$(slurm_job_state "$r")" = COMPLETED
check "... the trainer trained" grep -q '"summary"' "$tmp/recipe.out"
[ "$(slurm_job_state "$r")" = COMPLETED ] || sed 's/^/# recipe: /' "$tmp/recipe.out" | tail -20
sed 's/^/# log: /' "$tmp/slurm.log"
finish
