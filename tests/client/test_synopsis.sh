#!/usr/bin/env bash
# test_synopsis: the man page's synopsis (docs/cosched.md) is the one cosched's table of commands
# prints, and each command's usage lines name exactly the options the table lets it take.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"

# The block between "## SYNOPSIS" and "## DESCRIPTION", without the blank lines around it.
man_synopsis() {
    awk '/^## SYNOPSIS/ {on = 1; next} /^## / {on = 0} on' "$root/docs/cosched.md" | sed -e '/./,$!d' |
        tac | sed -e '/./,$!d' | tac
}
same_synopsis() {
    diff -u <(man_synopsis) <("$cosched" __complete synopsis) || {
        echo "docs/cosched.md's SYNOPSIS differs from 'cosched __complete synopsis' (paste the latter)"
        return 1
    }
}
check "docs/cosched.md's synopsis is the table's" same_synopsis

# Options a path's usage lines name, and those the table gives it: the same, but for --help
# (every command's) and --json (taken anywhere).
words() { grep -o -- '--[a-z][a-z-]*' | grep -v -x -e --help -e --json | sort -u | xargs; }
names_its_options() {
    local named taken
    named=$("$cosched" __complete synopsis "$1" | words)
    taken=$("$cosched" __complete options $1 | words)
    [ "$named" = "$taken" ] || { echo "cosched $1: usage names '$named', the table takes '$taken'"; return 1; }
}
for command in $("$cosched" __complete commands); do
    subs=$("$cosched" __complete subcommands "$command")
    [ -z "$subs" ] && subs=-
    for sub in $subs; do
        path=$command
        [ "$sub" != - ] && path="$command $sub"
        check "cosched $path: its usage names the options it takes" names_its_options "$path"
    done
done
finish
