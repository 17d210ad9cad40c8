#!/usr/bin/env bash
# test_autoreport_inject: where the injected step reporter's directory goes on PYTHONPATH — the
# lines `cosched env` prints for the Slurm TaskProlog and the environment of `cosched run start`'s
# runs — and the switches that keep it away: autoreport.enabled, autoreport.partitions, job
# register --autoreport, a reload, co-tenants. The real coschedd on a temp socket; no torch needed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
topology=$topologies/juwels-booster.xml # four GPUs: a trainer on each
dir=$tmp/autoreport # any absolute path: nothing here imports from it
unset PYTHONPATH SLURM_JOB_ID SLURM_LOCALID CUDA_VISIBLE_DEVICES COSCHED_SOCKET

# A daemon on $topology with $tmp/coschedd.yaml (written here: its runs keep PYTHONPATH too).
start_inject_daemon() { start_daemon --topology "$topology" || not_ok "coschedd comes up"; }
# The PYTHONPATH line `cosched env` prints for job $1 (nothing when there is none), with the
# task's own PYTHONPATH $2 (unset when absent).
env_line() {
    if [ $# -ge 2 ]; then PYTHONPATH=$2 c env --job "$1"; else c env --job "$1"; fi | grep '^export PYTHONPATH=' || true
}
# run_path JOB [--env NAME=VALUE]...: the PYTHONPATH a run of JOB sees ("<unset>" when none)
run_path() {
    local job=$1 id out
    shift
    id=$(c --json run start --job "$job" "$@" -- sh -c 'echo "${PYTHONPATH-<unset>}"' | jq -r .id) || return 1
    wait_for 60 bash -c "'$cosched' --socket '$sock' --json run list --job $job |
        jq -e '.runs[] | select(.id == $id) | .state != \"running\"'" || return 1
    out=$(c --json run list --job "$job" | jq -r ".runs[] | select(.id == $id) | .stdout")
    cat "$out"
}
reload() { # CONFIG: copy it over the daemon's and wait until job $2's autoreport says $3
    cp "$1" "$tmp/coschedd.yaml"
    kill -HUP "$daemon_pid"
    wait_for 60 bash -c "'$cosched' --socket '$sock' --json job get --job $2 | jq -e '.autoreport == $3'"
}

# Runs get none of the daemon's environment but these (the sanitizers' for an ASan build).
keep='runs:
  keep_environment: [PYTHONPATH, ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS]'
printf 'autoreport:\n  dir: %s\n  partitions: {cpu: false, gpu: true}\n%s\n' "$dir" "$keep" >"$tmp/coschedd.yaml"
cp "$tmp/coschedd.yaml" "$tmp/on.yaml"
start_inject_daemon
c job register --job t1 --uid "$(id -u)" --role trainer --gpus 0 --cores-per-rank 1 --partition gpu \
    >/dev/null 2>"$tmp/err" || not_ok "register a trainer" "$(cat "$tmp/err")"

# --- cosched env, as the TaskProlog prints it
check "job get says the trainer gets the reporter, and where it is" \
    bash -c "'$cosched' --socket '$sock' --json job get --job t1 | jq -e '.autoreport == \"$dir\"'"
check "... and in words" bash -c "'$cosched' --socket '$sock' job get --job t1 | grep -qx 'autoreport: $dir'"
check "a task without PYTHONPATH gets the directory alone" test "$(env_line t1)" = "export PYTHONPATH=$dir"
check "a task's own PYTHONPATH goes after it, written out (slurmstepd does not expand)" \
    test "$(env_line t1 /home/u/lib:/opt/x)" = "export PYTHONPATH=$dir:/home/u/lib:/opt/x"
check "an empty PYTHONPATH counts as none" test "$(env_line t1 '')" = "export PYTHONPATH=$dir"
check "the directory first already is not added twice" \
    test "$(env_line t1 "$dir:/home/u/lib")" = "export PYTHONPATH=$dir:/home/u/lib"
check "a longer directory that only starts like it is not taken for it" \
    test "$(env_line t1 "${dir}2")" = "export PYTHONPATH=$dir:${dir}2"
check "--format sh quotes the same value" bash -c \
    "PYTHONPATH=/a '$cosched' --socket '$sock' env --job t1 --format sh | grep -qx \"export PYTHONPATH='$dir:/a'\""
check "--json carries it" bash -c \
    "PYTHONPATH=/a '$cosched' --socket '$sock' --json env --job t1 | jq -e '.PYTHONPATH == \"$dir:/a\"'"
check "a PYTHONPATH with a newline (it would end the TaskProlog's line) is left alone, without the reporter" \
    test -z "$(env_line t1 "$(printf '/a\nexport X=1')")"

# --- the partition's default, the job's own say, co-tenants
c job register --job t2 --uid "$(id -u)" --role trainer --gpus 1 --cores-per-rank 1 --partition cpu \
    >/dev/null 2>"$tmp/err" || not_ok "register a trainer of partition cpu" "$(cat "$tmp/err")"
check "a trainer of a partition listed false gets nothing" test -z "$(env_line t2 /a)"
check "... job get says so" bash -c "'$cosched' --socket '$sock' --json job get --job t2 | jq -e '.autoreport == false'"
c job release --job t2 >/dev/null
c job register --job t2 --uid "$(id -u)" --role trainer --gpus 1 --cores-per-rank 1 --partition cpu \
    --autoreport on >/dev/null 2>"$tmp/err" || not_ok "register it with --autoreport on" "$(cat "$tmp/err")"
check "--autoreport on beats the partition's default" test "$(env_line t2)" = "export PYTHONPATH=$dir"
c job release --job t2 >/dev/null
c job register --job t2 --uid "$(id -u)" --role trainer --gpus 1 --cores-per-rank 1 --partition gpu \
    --autoreport off >/dev/null 2>"$tmp/err" || not_ok "register it with --autoreport off" "$(cat "$tmp/err")"
check "--autoreport off beats the partition's default" test -z "$(env_line t2)"
c job release --job t2 >/dev/null
c job register --job co --uid "$(id -u)" --role cotenant --cores 1 >/dev/null 2>"$tmp/err" ||
    not_ok "register a co-tenant" "$(cat "$tmp/err")"
check "a co-tenant never gets it" test -z "$(env_line co)"
check "... and its job object has no autoreport" \
    bash -c "'$cosched' --socket '$sock' --json job get --job co | jq -e 'has(\"autoreport\") | not'"
c job register --job co2 --uid "$(id -u)" --role cotenant --cores 1 --autoreport on >/dev/null 2>"$tmp/err"
check "... EINVAL: autoreport is a trainer's" grep -q "EINVAL: autoreport is a trainer's" "$tmp/err"
check "--autoreport takes only on or off" bash -c \
    "'$cosched' --socket '$sock' job register --job x --uid 0 --role trainer --autoreport yes 2>&1; test \$? -eq 2"

# --- the site's switch, read again on SIGHUP
printf 'autoreport:\n  enabled: false\n  dir: %s\n' "$dir" >"$tmp/off.yaml"
check "autoreport.enabled: false, reloaded, turns it off for a job already registered" reload "$tmp/off.yaml" t1 false
check "... and cosched env prints no PYTHONPATH" test -z "$(env_line t1 /a)"
c job register --job t3 --uid "$(id -u)" --role trainer --gpus 2 --cores-per-rank 1 --autoreport on \
    >/dev/null 2>"$tmp/err" || not_ok "register a trainer with --autoreport on" "$(cat "$tmp/err")"
check "... even for a job registered with --autoreport on (the one line the site needs)" test -z "$(env_line t3)"
check "turned on again by a reload" reload "$tmp/on.yaml" t1 "\"$dir\""
check "... a job's own --autoreport on is kept" test "$(env_line t3)" = "export PYTHONPATH=$dir"
c job release --job t3 >/dev/null

# --- a job's own say survives a restart
c job register --job t4 --uid "$(id -u)" --role trainer --gpus 3 --cores-per-rank 1 --autoreport off \
    >/dev/null 2>"$tmp/err" || not_ok "register a trainer with --autoreport off" "$(cat "$tmp/err")"
stop_daemon
start_inject_daemon
check "after a restart, --autoreport off still holds" \
    bash -c "'$cosched' --socket '$sock' --json job get --job t4 | jq -e '.autoreport == false'"
check "... and cosched env prints no PYTHONPATH for it" test -z "$(env_line t4)"
check "... and the site's default still reaches the others" test "$(env_line t1)" = "export PYTHONPATH=$dir"

# --- cosched run start: runs bind to their rank's CPUs, so on this machine's two cores
stop_daemon
rm -rf "$tmp/state"
topology=$root/tests/topologies/ci-2core-gpu.xml
PYTHONPATH=/site/lib start_inject_daemon
c job register --job tr --uid "$(id -u)" --role trainer --policy l3 --cores-per-rank 1 >/dev/null 2>"$tmp/err" ||
    not_ok "register a trainer on the GPU" "$(cat "$tmp/err")"
c job register --job co --uid "$(id -u)" --role cotenant --policy l3 >/dev/null 2>"$tmp/err" ||
    not_ok "register a co-tenant beside it" "$(cat "$tmp/err")"
check "a trainer's run gets the directory, then the daemon's PYTHONPATH that runs.keep_environment kept" \
    test "$(run_path tr)" = "$dir:/site/lib"
check "the caller's PYTHONPATH (--env) replaces the kept one, after the directory" \
    test "$(run_path tr --env PYTHONPATH=/home/u/lib)" = "$dir:/home/u/lib"
check "... not added twice when the caller put it first" test "$(run_path tr --env PYTHONPATH="$dir:/b")" = "$dir:/b"
check "a co-tenant's run never gets it: its PYTHONPATH stays as it was" test "$(run_path co)" = "/site/lib"
check "... and as the caller gave it" test "$(run_path co --env PYTHONPATH=/a)" = "/a"
stop_daemon
start_inject_daemon
check "a daemon with no PYTHONPATH of its own gives a trainer's run the directory alone" test "$(run_path tr)" = "$dir"
check "with autoreport.enabled: false a trainer's run keeps what it had" reload "$tmp/off.yaml" tr false
check "... unset" test "$(run_path tr)" = "<unset>"
check "... or as the caller gave it" test "$(run_path tr --env PYTHONPATH=/a)" = "/a"

finish
