#!/usr/bin/env bash
# test_rules: packaging/prometheus/cosched-rules.yml is valid for promtool, and every rule passes
# its unit tests in cosched-rules.test.yml (each recording rule and each alert has one).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
dir=$root/packaging/prometheus
if ! command -v promtool >/dev/null; then
    skip "promtool check rules" "promtool is not installed (Debian: prometheus)"
    finish; exit
fi
check "promtool check rules accepts cosched-rules.yml" promtool check rules "$dir/cosched-rules.yml"
check "promtool test rules passes every unit test" bash -c "cd '$dir' && promtool test rules cosched-rules.test.yml"
rules_in() { grep -oE '^ *- (record|alert): *[^ ]+' "$1" | awk '{print $3}' | sort -u; }
untested=$(comm -23 <(rules_in "$dir/cosched-rules.yml") \
    <(grep -oE '(expr|alertname): *[^ ]+' "$dir/cosched-rules.test.yml" | awk '{print $2}' | sort -u))
check "every rule has a unit test" test -z "$untested"
[ -n "$untested" ] && echo "# without a test: $untested"
finish
