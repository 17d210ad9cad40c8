#!/bin/bash
# test_slurm: cosched's prolog, epilog and TaskProlog (packaging/slurm) in a real one-node Slurm
# with cgroup confinement and a GPU gres, beside a real coschedd: a trainer job and a co-tenant
# sbatch job registered and released (one by scancel), the TaskProlog's exports in the task,
# the co-tenant at work in stats, `cosched bind` inside and outside the task's cpuset, jobs
# that still run while coschedd is down, and the job script of docs/slurm.md as written.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/slurm_lib.sh"
chmod 755 "$tmp"
need_slurm
start_daemon --topology "$topologies/ci-2core-gpu.xml" || { not_ok "coschedd starts"; finish; exit; }
cosched_scripts "$sock"
SLURM_CLUSTER_CGROUP=1 SLURM_CLUSTER_GPUS=1 \
	slurm_up "a one-node Slurm with cgroup confinement and cosched's scripts starts" start_slurm || { finish; exit; }

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
both_registered() { c --json job list | py "assert {'$a', '$b'} <= {x['job'] for x in d['jobs']}"; }
wait_for 30 both_registered
c --json job list >"$tmp/jobs.json"
check "the prolog registered the GPU job as a trainer on GPU 0, external" json "$tmp/jobs.json" "
j={x['job']: x for x in d['jobs']}['$a']
assert j['role']=='trainer' and j['ranks'][0]['gpu']==0 and j['external']"
check "the prolog registered the job without GPUs as a co-tenant" json "$tmp/jobs.json" "
j={x['job']: x for x in d['jobs']}['$b']
assert j['role']=='cotenant' and j['external']"
check "their planned CPUs are disjoint" json "$tmp/jobs.json" "
j={x['job']: x for x in d['jobs']}
a=set(sum((r['cpus'] for r in j['$a']['ranks']), [])); b=set(sum((r['cpus'] for r in j['$b']['ranks']), []))
assert a and b and not a & b"
# Once the tasks run, their TaskProlog has planned each job within the cpuset Slurm gave it.
tasks_run() { grep -q '^cpus=' "$tmp/a.out" && grep -q '^cpus=' "$tmp/b.out"; }
wait_for 30 tasks_run
c --json job list >"$tmp/jobs2.json"
for job in "$a" "$b"; do
	f=$tmp/$([ "$job" = "$a" ] && echo a || echo b).out
	task=$(sed -n 's/^cpus=\([0-9,-]*\) .*/\1/p' "$f")
	check "job $job is planned within its Slurm cpuset ($task), on it" json "$tmp/jobs2.json" "
j={x['job']: x for x in d['jobs']}['$job']
cpus=set(sum((r['cpus'] for r in j['ranks']), []))
assert j['allowed_cpus'] == '$task' and cpus == {int('$task')}, (j['allowed_cpus'], cpus)"
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
no_jobs() { test "$(c --json job list | py 'print(len(d["jobs"]))')" = 0; }
wait_for 5 no_jobs
check "the epilogs released both jobs, the cancelled one too" no_jobs
sed 's/^/# a.out: /' "$tmp/a.out"
check "the TaskProlog's exports reached the trainer's task" grep -q "job=$a places={[01]} socket=$sock" "$tmp/a.out"
check "the prolog logged each registration" bash -c "test \$(grep -c 'prolog job .*: registered' '$tmp/slurm.log') = 2"

# coschedd down: jobs still run, the prolog says why.
stop_daemon
d=$(sbatch --parsable -n1 -c1 -o "$tmp/d.out" --wrap "echo ran; srun $tmp/task.sh 0 bind")
wait_for 30 grep -q "prolog job $d:" "$tmp/slurm.log"
start_daemon --topology "$topologies/ci-2core-gpu.xml" # the task waits for it, then binds as an unregistered job would not
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
