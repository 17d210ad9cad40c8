#!/usr/bin/env bash
# test_autoreport_run: an unmodified PyTorch training script (tests/libcosched/fashion_mnist_train.py,
# no cosched in it) started by `cosched run start` for a registered trainer, on a daemon whose
# autoreport.dir is the source tree's: its steps arrive through the injected hook, counted as the
# script counts them, and the guard judges it by them before its (stand-in) GPU's busy time, and
# holds a co-tenant that slows it. Then: the site's switch off gives the same run no hook; a
# script that prints its own step lines with the hook in it too is counted once.
#
#   test_autoreport_run.sh PYTHON   (an interpreter with torch: meson's python3, Debian's)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
. "$here/gpu_daemon_lib.sh"
python=${1:?usage: test_autoreport_run.sh PYTHON}
script=$root/tests/libcosched/fashion_mnist_train.py
reporter=$root/libcosched/autoreport
# Bounds on waiting: far above what a loaded 2-core machine takes (an ASan daemon beside
# stress-ng included); each wait ends as soon as its state is there.
WAIT_S=300

if ! "$python" -c 'import torch' 2>/dev/null; then
    skip "unmodified PyTorch jobs through the hook" "$python has no torch"
    finish
    exit 0
fi
if [ ! -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    skip "unmodified PyTorch jobs through the hook" "dataset-fashion-mnist is not installed"
    finish
    exit 0
fi
torch_version=$("$python" -c 'import torch; print(torch.__version__)')

# The hook finds cosched.py through the run's own PYTHONPATH (a source tree has no installed
# copy), which goes after the reporter's directory; nothing writes byte code into the tree; a
# report may wait as long as a loaded machine makes it.
run_env=(--env "PYTHONPATH=$root/libcosched/python" --env PYTHONDONTWRITEBYTECODE=1
    --env COSCHED_AUTOREPORT_TIMEOUT=60)
config() { # ENABLED: the daemon's autoreport settings, read again on SIGHUP
    printf 'autoreport:\n  enabled: %s\n  dir: %s\nguard:\n  idle_release: 3600\n' "$1" "$reporter"
}
# A busy stand-in GPU: the gpu source can judge the trainer too, so that `steps` has to win.
set_gpu "gpu 0000:03:00.0 busy 0.9"
start_gpu_daemon ci-2core-gpu.xml "$fakegpu" "$(config true)"

job() { c --json job get --job "$1"; }
steps_of() { c --json stats --job "$1" | py 'print(d["jobs"][0]["steps"])'; }
register_trainer() {
    c job release --job tr >/dev/null 2>&1
    c job register --job tr --uid "$(id -u)" --role trainer --policy l3 --cores-per-rank 1 >/dev/null 2>"$tmp/err" ||
        not_ok "register the trainer" "$(cat "$tmp/err")"
}
# start JOB NAME ARGS...: a run of JOB; its id in $tmp/NAME.id, its reply in $tmp/runNAME.json
start() {
    local job=$1 name=$2
    shift 2
    c --json run start --job "$job" "$@" >"$tmp/run$name.json" 2>"$tmp/err" ||
        { not_ok "start run $name" "$(cat "$tmp/err")"; return 1; }
    py 'print(d["id"])' <"$tmp/run$name.json" >"$tmp/$name.id"
}
run_field() { # NAME KEY: a key of run NAME in run list
    c --json run list | py "print([r for r in d['runs'] if r['id'] == $(cat "$tmp/$1.id")][0]['$2'])"
}
ended() { [ "$(run_field "$1" state)" != running ]; }
# finish_run NAME: wait for run NAME to end; its exit status 0, its last stdout line {"steps": N}
# gives N in $own
finish_run() {
    wait_for $WAIT_S ended "$1" || { not_ok "run $1 ends" "still running after $WAIT_S s"; return 1; }
    local out status
    out=$(run_field "$1" stdout)
    status=$(run_field "$1" exit_status)
    if [ "$status" != 0 ]; then
        not_ok "run $1 exits 0" "exit $status" "$(tail -5 "${out%.out}.err")"
        return 1
    fi
    own=$(tail -1 "$out" | py 'print(d["steps"])')
}
within_one() { [ "$2" -ge $(($1 - 1)) ] && [ "$2" -le "$1" ]; } # OWN COUNTED: the hook reports N-1 of N

# --- the count
register_trainer
check "the trainer gets the reporter from the site's settings" \
    bash -c "'$cosched' --socket '$sock' --json job get --job tr | jq -e '.autoreport == \"$reporter\"'"
start tr count "${run_env[@]}" -- "$python" "$script" --steps 60 --batch 64 && finish_run count
counted=$(steps_of tr)
check "the daemon counts the script's own 60 steps within one ($own by the script, $counted by coschedd)" \
    within_one "${own:-0}" "$counted"
job tr >"$tmp/job.json"
check "job get: the steps come from the hook, with the run's torch ($torch_version)" \
    jq -e ".progress.step_source == \"hook\" and .progress.torch == \"$torch_version\"" "$tmp/job.json"
check "... and judge it: steps before its GPU's busy time, which could be read" \
    jq -e '.progress.source == "steps" and .progress.requested == "auto" and .progress.gpu_windows > 0' "$tmp/job.json"
check "... in words too" bash -c \
    "'$cosched' --socket '$sock' job get --job tr | grep -q 'steps from the PyTorch hook (torch $torch_version)'"
check "the run's stderr has nothing from cosched" bash -c "! grep -q cosched '$(run_field count stdout | sed 's/\.out$/.err/')'"

# --- the guard holds a co-tenant that slows it
c job register --job co --uid "$(id -u)" --role cotenant --policy l3 --cores 1 >/dev/null 2>"$tmp/err" ||
    not_ok "register the co-tenant" "$(cat "$tmp/err")"
# The co-tenant stand-in touches a file while it runs; the script's data loading is slower while
# the file is fresh (its --contention model). Stopped or frozen by the guard, it touches nothing.
busy=$tmp/cotenant-busy
start co busy -- "$python" -c "import os, sys, time
open(sys.argv[1], 'a').close()
while True:
    os.utime(sys.argv[1])
    time.sleep(0.02)" "$busy"
start tr guarded "${run_env[@]}" -- "$python" "$script" --steps 100000 --contention "$busy" --contention-delay 0.1
held() { job co | jq -e '.allowed_share < 1 and ([.share_changes[] | select(.by == "guard" and .share < 1)] | length > 0)'; }
check "the guard, judging the hook's steps, holds the co-tenant that slows it (share below 1)" wait_for $WAIT_S held
c --json stats --job tr | jq '.jobs[0]' >"$tmp/stats.json"
check "... judging the trainer by its steps from the hook" \
    jq -e '.progress.source == "steps" and .progress.step_source == "hook"' "$tmp/stats.json"
check "... and its guard counts the throttle" jq -e '.guard.actions.throttle > 0' "$tmp/stats.json"
c run stop "$(cat "$tmp/guarded.id")" >/dev/null
c run stop "$(cat "$tmp/busy.id")" >/dev/null
wait_for $WAIT_S ended guarded
wait_for $WAIT_S ended busy
c job release --job co >/dev/null

# --- a program that reports its own steps, with the hook in it too: counted once
register_trainer
start tr lines "${run_env[@]}" -- "$python" "$script" --steps 60 --step-lines && finish_run lines
counted=$(steps_of tr)
check "a script printing its own step lines, with the hook too, is counted once ($own by the script, $counted by coschedd)" \
    within_one "${own:-0}" "$counted"
job tr >"$tmp/job.json"
check "... its own reports win: the hook's are left out and counted apart" \
    jq -e '.progress.step_source == "reported" and .progress.steps_hook_ignored >= 50' "$tmp/job.json"

# --- the site's switch off: the same script's run gets no hook
{ config false; printf 'runs:\n  keep_environment: [ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS]\n'; } >"$tmp/coschedd.yaml"
kill -HUP "$daemon_pid"
register_trainer
wait_for $WAIT_S bash -c "'$cosched' --socket '$sock' --json job get --job tr | jq -e '.autoreport == false'"
check "autoreport.enabled: false, reloaded: job get says off" \
    bash -c "'$cosched' --socket '$sock' --json job get --job tr | jq -e '.autoreport == false'"
start tr off "${run_env[@]}" -- "$python" -c "import os, sys; print(os.environ.get('PYTHONPATH', ''))"
finish_path() { wait_for $WAIT_S ended off && cat "$(run_field off stdout)"; }
check "... its run's PYTHONPATH is what the caller gave, no reporter in it" \
    test "$(finish_path)" = "$root/libcosched/python"
start tr offtrain "${run_env[@]}" -- "$python" "$script" --steps 60 && finish_run offtrain
job tr >"$tmp/job.json"
check "... and the script's 60 steps bring the job no step: it is judged by its GPU, as without the hook" \
    jq -e '.progress.step_source == null and .progress.torch == null and .progress.source == "gpu"' "$tmp/job.json"

finish
