#!/usr/bin/env bash
# setup: install the Debian packages listed in packaging/debian-deps.txt (when missing) and
# build cosched into build/. Safe to run again; run as root on a fresh Debian bookworm machine.
# Usage: packaging/setup.sh [--tests | --bench]
#   (none: what the build and the demo need, built without the tests; --tests: the tests' packages
#    too, built with them; --bench: also the peers the benchmarks compare with)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
case $mode in
demo) packages=$(sed -e '/^# --- tests only/,$d' -e 's/#.*//' packaging/debian-deps.txt | xargs) ;;
--tests) packages=$(sed -e '/^# --- bench only/,$d' -e 's/#.*//' packaging/debian-deps.txt | xargs) ;;
--bench) packages=$(sed -e 's/#.*//' packaging/debian-deps.txt | xargs) ;;
*) echo "usage: packaging/setup.sh [--tests | --bench]" >&2; exit 2 ;;
esac
missing=()
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    # The tests' services (munge, Slurm, Prometheus, the Pushgateway) are installed for their
    # programs only: none is started by the install (a policy-rc.d while it runs) or left enabled
    # afterwards. The tests start private instances with their own configs. A service the
    # machine had before is not touched.
    own_policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        own_policy=1
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    wants() { { ls /etc/systemd/system/*.wants 2>/dev/null || true; } | { grep -E '\.(service|socket|timer)$' || true; } | sort -u; }
    before=$(wants)
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    # Whatever the install enabled (recommended packages too: prometheus-node-exporter), disabled.
    for unit in $(comm -13 <(echo "$before") <(wants)); do
        systemctl disable --quiet "$unit" 2>/dev/null || deb-systemd-helper disable "$unit" 2>/dev/null || true
    done
    if [ -n "$own_policy" ]; then
        rm -f /usr/sbin/policy-rc.d
        trap - EXIT
    fi
fi

# The demo's build leaves the tests out (no cmocka); the tests' build turns them on in the same
# build/, which a demo's setup then keeps.
with_tests=false
[ "$mode" != demo ] && with_tests=true
if [ ! -f build/build.ninja ]; then
    meson setup build -Dwerror=true -Dtests=$with_tests >/dev/null
elif [ "$with_tests" = true ]; then
    meson configure build -Dtests=true >/dev/null
fi
meson compile -C build >/dev/null
echo "setup: built into build/ (cosched is build/client/cosched)"
