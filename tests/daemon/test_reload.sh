#!/usr/bin/env bash
# test_reload: SIGHUP and the keys read only at start (docs/coschedd.yaml.md, "Reloading"): a
# reload that changes one says so, naming it, and keeps its running value; one that changes only
# reloadable keys applies them without a word. The real coschedd on a temp socket.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/gpu_daemon_lib.sh"

reloads() { grep -c 'configuration reloaded' "$tmp/daemon.log"; }
more_reloads_than() { [ "$(reloads)" -gt "$1" ]; }
# reload TEXT: the daemon's file becomes it, and the daemon has read it again (the log has one
# more "configuration reloaded" line than before).
reload() {
    local before
    before=$(reloads)
    write_config "$1"
    kill -HUP "$daemon_pid"
    wait_for 60 more_reloads_than "$before"
}
warnings() { grep -c 'effect at the next restart' "$tmp/daemon.log"; }
logged() { # PATTERN: a line of the daemon's log matches it (else its reload lines are shown)
    grep -q "$1" "$tmp/daemon.log" || { grep -e reload -e restart "$tmp/daemon.log"; false; }
}
status_has() { c --json status | py "g = d['guard']; assert $1, g"; }

# No GPU library; task-clock, since this machine may have no hardware PMU: CPU time stands in.
start_gpu_daemon ci-2core-gpu.xml "$tmp/nowhere" 'progress:
  pmu_event: task-clock
  gpu_window: 1' || not_ok "coschedd comes up"

# --- a key read only at start
check "a reload that changes progress.pmu_event is read" reload 'progress:
  pmu_event: instructions
  gpu_window: 1'
check "... with a warning that names it, and it alone" \
    logged 'reload: progress.pmu_event takes effect at the next restart$'
# Were instructions counted now, a machine without a hardware PMU could not count this run.
c job register --job m --uid 0 --role trainer --policy l3 --cores-per-rank 1 --progress pmu >/dev/null
c --json run start --job m -- "$noise" busy --duration 900 >"$tmp/run-m.json"
counted() { c --json stats --job m | py 'assert d["jobs"][0]["steps"] >= 3'; }
check "... and the running value stays: a run's CPU time is counted as task-clock" wait_for 60 counted
c run stop "$(py 'print(d["id"])' <"$tmp/run-m.json")" >/dev/null
c job release --job m >/dev/null

check "a reload that changes progress.gpu_window too is read" reload 'progress:
  pmu_event: instructions
  gpu_window: 2'
check "... and the warning names both, as the file spells them" logged \
    'reload: progress.gpu_window and progress.pmu_event take effect at the next restart$'
check "... the window stays at its running 1 s" status_has 'g["progress"]["gpu_window"] == 1'

# --- reloadable keys only (the keys read at start back at their running values)
before=$(warnings)
check "a reload that changes progress.source and slowdown_budget is read" reload 'progress:
  pmu_event: task-clock
  gpu_window: 1
  source: steps
slowdown_budget: 0.2'
check "... and applied" status_has 'g["progress"]["default"] == "steps" and g["slowdown_budget"] == 0.2'
check "... without a warning" test "$(warnings)" = "$before"

finish
