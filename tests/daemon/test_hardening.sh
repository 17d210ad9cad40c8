#!/usr/bin/env bash
# test_hardening: the service's sandbox (packaging/coschedd.service.in) keeps its exposure score
# (systemd-analyze security --offline) at or below its recorded ceiling, and a daemon held to the unit's own
# capability bounding set with no new privileges (setpriv, as systemd would start it) still does
# its work: a run as a user, bound, its output the user's, a cgroup quota set by the guard, and
# an expired run's files removed. The system call filter and mount options need systemd as PID 1
# to apply and are not exercised here (coschedd(8), SYSTEMD).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
unit=$build/coschedd.service
chmod 755 "$tmp"

# The exposure of the unit against its recorded ceiling (coschedd(8), SYSTEMD: 3.8; Debian
# bookworm's chrony.service: 3.7, printed for comparison when its unit is here).
ceiling=3.8
if command -v systemd-analyze >/dev/null; then
    exposure=$(systemd-analyze security --offline=true "$unit" 2>/dev/null |
        sed -n 's/.*exposure level for coschedd.service: \([0-9.]*\).*/\1/p')
    chrony=$( [ -f /lib/systemd/system/chrony.service ] && systemd-analyze security --offline=true \
        /lib/systemd/system/chrony.service 2>/dev/null | sed -n 's/.*exposure level for chrony.service: \([0-9.]*\).*/\1/p')
    echo "# coschedd.service exposure $exposure (ceiling $ceiling); chrony.service ${chrony:-3.7 (Debian bookworm)}"
    check "coschedd.service's exposure ($exposure) is at or below its ceiling ($ceiling)" \
        python3 -c "import sys; sys.exit(not (0 < float('$exposure') <= float('$ceiling')))"
else
    skip "coschedd.service's exposure is at or below its ceiling" "systemd-analyze is not installed"
fi

# The unit's capabilities, as setpriv names them: CAP_SETUID ... -> +setuid,...
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr ' ' '\n' | sed 's/^CAP_//' | tr 'A-Z' 'a-z' | sed 's/^/+/' | paste -sd, -)
check "the unit names its capabilities" test -n "$caps"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    skip_all "starting coschedd with the unit's bounding set needs root and setpriv"
fi
write_config 'guard:
  knobs: [cpu.max, cfs-quota, sigstop]'
echo '  retention: 0' >>"$tmp/coschedd.yaml" # a key of write_config's runs:, its last section
# start_confined: coschedd as systemd would start it from the unit (not by start_daemon: setpriv
# goes before it).
start_confined() {
    setpriv --bounding-set "-all,$caps" --no-new-privs -- "$coschedd" --foreground --config "$tmp/coschedd.yaml" \
        --socket "$sock" --state-dir "$tmp/state" --topology "$topologies/ci-2core-gpu.xml" >>"$tmp/daemon.log" 2>&1 &
    daemon_pid=$!
}
start_confined
wait_for 60 daemon_up_or_dead
check "coschedd starts with only the unit's capabilities and no new privileges" c status
check "... and has exactly those" bash -c "grep -q '^NoNewPrivs:[[:space:]]*1' /proc/$daemon_pid/status &&
    test \"\$(grep '^CapBnd' /proc/$daemon_pid/status)\" = \"\$(setpriv --bounding-set '-all,$caps' grep '^CapBnd' /proc/self/status)\""
c job register --job k --uid 65534 --role cotenant --policy l3 --cores 1 >/dev/null
c --json run start --job k -- sh -c 'id -u; grep Cpus_allowed_list /proc/self/status; exec sleep 300' >"$tmp/run.json"
out=$(json "$tmp/run.json" 'print(d["stdout"])')
pid=$(run_pid "$tmp/run.json")
check "a run as uid 65534 starts and says where it runs" wait_for 60 grep -q '^Cpus_allowed_list' "$out"
check "... as uid 65534" grep -qx 65534 "$out"
planned=$(c --json job get --job k | py "print(','.join(map(str, d['ranks'][0]['cpus'])))")
check "... bound to its rank's CPU ($planned)" grep -qE "^Cpus_allowed_list:[[:space:]]*$planned\$" "$out"
check "... its output the user's to read" setpriv --reuid=65534 --regid=65534 --clear-groups cat "$out"
c guard set --job k --share 0.5 >/dev/null
quota() { # v1 cpu.cfs_quota_us or v2 cpu.max at half the period
    local d p q per
    p=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' "/proc/$pid/cgroup")
    d=/sys/fs/cgroup/cpu$p
    if [ -n "$p" ] && [ -f "$d/cpu.cfs_quota_us" ]; then
        [ "$(cat "$d/cpu.cfs_quota_us")" -eq $(($(cat "$d/cpu.cfs_period_us") / 2)) ]
    else
        p=$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup")
        read -r q per <"/sys/fs/cgroup$p/cpu.max" && [ "$q" -eq $((per / 2)) ]
    fi
}
share_set() { c --json job get --job k | py "assert d['allowed_share'] == 0.5 and d['knob'], d"; }
check "the guard's knob holds the run at share 0.5" share_set
knob=$(c --json job get --job k | py "print(d['knob'])")
if [ "$knob" = cfs-quota ] || [ "$knob" = cpu.max ]; then
    check "... through a cgroup quota it could write ($knob)" wait_for 60 quota
else
    skip "... through a cgroup quota it could write" "no cgroup cpu controller here: the knob is $knob"
fi
c job release --job k >/dev/null
gone() { ! kill -0 "$pid" 2>/dev/null; }
check "releasing the job stops the run (CAP_KILL across users)" wait_for 60 gone
# The same state under a retention of 1 s: the ended run's files, the user's in a 0700
# directory of the user's, are removed by the daemon.
stop_daemon 2>/dev/null
sed -i 's/retention: 0/retention: 1/' "$tmp/coschedd.yaml"
start_confined
check "an expired run's files are removed from the user's directory" wait_for 60 test ! -e "$out"
finish
