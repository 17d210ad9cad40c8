#!/usr/bin/env bash
# test_completion: packaging/cosched.bash-completion completes what cosched itself says it takes
# (commands, subcommands, options and values, read from its table: cosched __complete) and job
# ids from a real daemon.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
# shellcheck source=/dev/null
. "$root/packaging/cosched.bash-completion"
PATH=$build/client:$PATH
complete_words() { # complete_words WORD...: what <TAB> after the last word offers
    COMP_WORDS=(cosched "$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _cosched
    printf '%s\n' "${COMPREPLY[@]}" | sort | xargs
}
offers() { # offers EXPECTED WORD...: the completion is exactly EXPECTED
    local want=$1 got
    shift
    got=$(complete_words "$@")
    [ "$got" = "$want" ] || { echo "cosched $* <TAB>: got '$got', wanted '$want'"; return 1; }
}

check "complete -F _cosched cosched is set" bash -c ". '$root/packaging/cosched.bash-completion'; complete -p cosched | grep -q _cosched"
commands=$(cosched --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}' | sort | xargs)
check "every command cosched --help lists, and help" offers "$(printf '%s\n' $commands help | sort | xargs)" ""
check "a prefix narrows them (st: stats, status)" offers "stats status" st
check "job's subcommands" offers "confine get list register release" job ""
check "guard's subcommands, [status] included" offers "set status" guard ""
check "run's subcommands" offers "list start stop" run ""
check "a subcommand's own options" offers "--cores --cores-per-rank --cpus" job register --c
check "job register --p: its policy, partition and progress source" offers "--partition --policy --progress" job register --p
check "the progress sources" offers "auto gpu none pmu steps" job register --progress ""
policies=$(cosched plan --help | grep -E '^ {22}[a-z0-9]+( \(default\))?:' | awk '{sub(/:.*/, "", $1); print $1}' | sort | xargs)
check "the policies plan --help lists" offers "$policies" plan --policy ""
check "run start's options, with --json and --help" offers "--cwd --env --help --job --json --rank" run start --
check "a command's options (experiment --tr)" offers "--trace --trainer" experiment --tr
check "global options before the command" offers "--help --json --socket --timeout --version" --
check "nothing after --: the command line is the user's" offers "" run start --job x -- ech
# Job ids from a real daemon on its socket (--socket given on the line).
start_daemon --topology "$topologies/ci-2core-gpu.xml" || not_ok "the daemon starts"
c job register --job train-7 --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job noise-7 --uid 0 --role cotenant --policy l3 >/dev/null
check "--job offers the daemon's job ids" offers "noise-7 train-7" --socket "$sock" job get --job ""
check "... narrowed by a prefix" offers "train-7" --socket "$sock" run start --job t
check "with no daemon, --job offers nothing, quietly" offers "" --socket "$tmp/none.sock" job get --job ""
finish
