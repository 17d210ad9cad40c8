#!/usr/bin/env bash
# test_experiment_hook: `cosched experiment --trainer CMD` in the blocked design, through a real
# coschedd on this machine's two cores (modelled as a one-GPU node): an unmodified PyTorch program
# (hook_trainer.py, no cosched import) whose steps come from cosched's step hook through its step
# log. Table II with the guarded configuration (judged by the daemon on the hook's reports) and a
# sweep run on it; a command that never steps fails within the lead-in, one that exits at once is
# said with its output; every job is released either way. Structure and states are checked, never
# a figure or a time.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
python=${COSCHED_TORCH_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch' 2>/dev/null; then
    skip "a PyTorch program as the blocked design's trainer" "no torch for $python"
    finish
    exit
fi
. "$here/experiment_daemon.sh"
# The hook from the source tree: it reports through the cosched module beside it
# (libcosched/python), with nothing on the trainer's PYTHONPATH but the hook's directory.
export COSCHED_AUTOREPORT_DIR=$root/libcosched/autoreport
unset PYTHONPATH
check "the daemon starts" start_experiment_daemon

trainer="$python $here/hook_trainer.py train"
# The guarded run's trainer, judged by the daemon on the steps its hook reports.
judged_by_hook() {
    local job
    job=$(c --json job list | jq -er '[.jobs[] | select(.role == "trainer" and .budget != null)][0].job') &&
        c --json job get --job "$job" | jq -e '.progress.source == "steps" and .progress.step_source == "hook"'
}
c experiment --trainer "$trainer" --guard --time 40 --block 1 --seed 3 --out "$tmp/t2" >"$tmp/stdout" 2>"$tmp/stderr" &
exp_pid=$!
if wait_for 120 judged_by_hook; then judged=yes; else judged=no; fi
wait "$exp_pid"
rc=$?
check "Table II with the guard and a PyTorch program as --trainer exits 0" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
check "the daemon judged the guarded trainer by the steps of its hook" test $judged = yes
check "the report names the command and says its steps come from the hook" grep -qF \
    "Trainer: $trainer (its steps from cosched's PyTorch hook), one rank on GPU 0; noise: memory" "$tmp/stdout"
check "summary.json names the command, steps from the hook, blocks for both placements and the guarded run" jq -e \
    --arg t "$trainer" '.options.trainer == $t and .options.trainer_steps == "hook" and .options.design == "blocks" and
     ([.configurations[] | select(.noise and (.guard | not)) | .slowdown.method | startswith("paired blocks")] ==
      [true, true]) and (.configurations[4].slowdown.method | startswith("batch figures after the guard"))' \
    "$tmp/t2/summary.json"
# One step log per long run (exclusive, shared, guarded), each past the lead-in's 24 steps: the
# steps the blocks were cut from.
check "each long run's steps came through a step log of the hook's step lines" "$python" - "$tmp/t2" <<'PY'
import glob, json, sys
logs = sorted(glob.glob(sys.argv[1] + "/exp-*-train-steps.jsonl"))
assert len(logs) == 3, logs
for path in logs:
    lines = [json.loads(l) for l in open(path)]
    assert len(lines) >= 24, (path, len(lines))
    assert all(l["event"] == "step" and l["rank"] == 0 and l["source"] == "hook" for l in lines), path
    assert [l["step"] for l in lines] == list(range(1, len(lines) + 1)), path
PY
check "after Table II every job is released and every run has ended" wait_nothing_left

# The sweep on the same program.
c experiment --trainer "$trainer" --sweep intensity --time 20 --block 1 --seed 5 --out "$tmp/sweep" >"$tmp/stdout" \
    2>"$tmp/stderr"
rc=$?
check "a sweep with a PyTorch program as --trainer exits 0 with its 11 settings" bash -c \
    "test $rc -eq 0 && test \$(grep -c '^intensity\|^no noise' '$tmp/stdout') -eq 11 &&
     jq -e '.options.trainer_steps == \"hook\"' '$tmp/sweep/summary.json' >/dev/null"
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
check "after the sweep every job is released and every run has ended" wait_nothing_left

# A PyTorch program that never steps: said within the lead-in (20 s with --time 20), and stopped.
c experiment --trainer "$python $here/hook_trainer.py no-steps" --time 20 --out "$tmp/none" >"$tmp/stdout" \
    2>"$tmp/stderr"
rc=$?
check "a command that never steps fails, saying so with its output's end" bash -c \
    "test $rc -ne 0 && grep -q 'no steps from the trainer command in the first 20 s: is it a PyTorch program that calls optimizer.step()?' '$tmp/stderr' &&
     grep -q 'COSCHED_AUTOREPORT=0' '$tmp/stderr' && grep -q '^  | not stepping$' '$tmp/stderr'"
check "... and leaves no job registered, no run running" wait_nothing_left

# A command that exits at once.
c experiment --trainer "echo starting; echo 'no such script' >&2; exit 3" --time 20 --out "$tmp/exit" >"$tmp/stdout" \
    2>"$tmp/stderr"
rc=$?
check "a command that exits at once fails, with its exit status and its output's end" bash -c \
    "test $rc -ne 0 && grep -q 'the trainer command ended before it was stopped (exited, exit status 3) after 0 steps' '$tmp/stderr' &&
     grep -q '^  | starting$' '$tmp/stderr' && grep -q '^  | no such script$' '$tmp/stderr'"
check "... and leaves no job registered, no run running" wait_nothing_left

# A hook whose reports never reach the daemon (a cosched module that fails to load): its step
# log still times the blocks, and the guarded run says that its guard was blind, never silent.
mkdir -p "$tmp/broken"
echo 'raise RuntimeError("a broken cosched module")' >"$tmp/broken/cosched.py"
PYTHONPATH=$tmp/broken c experiment --trainer "$trainer" --guard --time 30 --block 1 --seed 3 --out "$tmp/blind" \
    >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
check "a guard that cannot judge the trainer is said in the report, on stderr and in summary.json" bash -c \
    "test $rc -eq 0 && grep -q 'WARNING: the guard could not judge the trainer (the daemon has no progress of the trainer' '$tmp/stdout' &&
     grep -q 'warning: the guard cannot judge the trainer' '$tmp/stderr' &&
     jq -e '.configurations[] | select(.name == \"shared+noise+guard\") | .guard.blind | startswith(\"the daemon has no progress\")' '$tmp/blind/summary.json'"
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/stderr"
check "... and leaves no job registered, no run running" wait_nothing_left

# Without the hook's directory the experiment says so before it asks the daemon for anything.
COSCHED_AUTOREPORT_DIR=$tmp/nowhere c experiment --trainer "$trainer" --time 20 --out "$tmp/nohook" >"$tmp/stdout" \
    2>"$tmp/stderr"
rc=$?
check "without the hook's directory it fails, naming it" bash -c \
    "test $rc -ne 0 && grep -q 'cannot read cosched.s step hook $tmp/nowhere/sitecustomize.py' '$tmp/stderr'"
check "... and leaves no job registered, no run running" wait_nothing_left
finish
