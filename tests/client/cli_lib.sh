# cli_lib.sh: what the suites that run cosched without a daemon (test_cli.sh, test_slurm_conf.sh)
# add to tests/lib/common.sh (sourced after it): a command's exit code as a check, and its output.
# shellcheck shell=bash disable=SC2154 # cosched, tmp: common.sh's

# expect_rc NAME EXPECTED_RC ARGS...: cosched ARGS exits EXPECTED_RC; stdout in $tmp/out, stderr
# in $tmp/err.
expect_rc() {
    local name=$1 want=$2
    shift 2
    "$cosched" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then ok "$name"; else not_ok "$name" "exit $rc, wanted $want" "$(cat "$tmp/err")"; fi
}
# out_json EXPR: EXPR on the last command's JSON output as d (json, on $tmp/out).
out_json() { json "$tmp/out" "$1"; }
