#!/usr/bin/env bash
# test_deb: the Debian packages as an admin meets them — dpkg-buildpackage -b -us -uc from a copy
# of this tree, lintian on the result (no error), apt-get install of the packages into this
# machine, the programs, the configuration, the units (systemd-analyze verify), the man pages,
# the library and the Python module as installed, then a purge that leaves nothing behind.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
packages="cosched cosched-tools libcosched0 libcosched-dev python3-cosched"
installed=
purge_installed() {
    # shellcheck disable=SC2086 # the package names split on purpose
    [ -n "$installed" ] && DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $packages >/dev/null 2>&1
}
at_exit purge_installed
for tool in dpkg-buildpackage dh lintian; do
    if ! command -v "$tool" >/dev/null; then
        skip_all "$tool is not installed (packaging/debian-deps.txt lists debhelper, lintian)"
    fi
done

# The tree as committed (and not ignored), without the build directories.
mkdir -p "$tmp/src"
if git -C "$root" rev-parse >/dev/null 2>&1; then
    git -C "$root" ls-files -co --exclude-standard | (cd "$root" && tar -cf - -T -) | tar -xf - -C "$tmp/src"
else
    tar -C "$root" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$tmp/src"
fi
(cd "$tmp/src" && dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1
check "dpkg-buildpackage -b -us -uc builds" bash -c "test $? -eq 0" || tail -20 "$tmp/build.log" | sed 's/^/# /'
for p in $packages; do
    check "... the package $p" bash -c "ls '$tmp'/${p}_*.deb >/dev/null"
done
check "cosched's dependencies are computed (shlibs): hwloc, libnuma, jansson, libyaml, libsystemd" bash -c \
    "deps=\$(dpkg-deb -f '$tmp'/cosched_*.deb Depends); for l in libhwloc libnuma libjansson libyaml libsystemd0; do
         grep -q \$l <<<\"\$deps\" || { echo \"no \$l in: \$deps\"; exit 1; }; done"
check "libcurl, loaded only to push metrics, is recommended" bash -c \
    "dpkg-deb -f '$tmp'/cosched_*.deb Recommends | grep -q libcurl4"
check "cosched does not depend on Open MPI or oneDNN (cosched-tools does)" bash -c \
    "! dpkg-deb -f '$tmp'/cosched_*.deb Depends | grep -Eq 'libmpi|libdnnl|openmpi' &&
     dpkg-deb -f '$tmp'/cosched-tools_*.deb Depends | grep -Eq 'libopenmpi|libmpi'"
# cosched and coschedd build with neither Open MPI nor oneDNN (-Dtrainer=disabled) and link
# neither (nor libcurl, which coschedd loads when it pushes metrics).
meson setup "$tmp/min" "$tmp/src" -Dtrainer=disabled -Dtests=false -Dman=disabled >"$tmp/min.log" 2>&1 &&
    meson compile -C "$tmp/min" client/cosched daemon/coschedd >>"$tmp/min.log" 2>&1
check "cosched and coschedd build with -Dtrainer=disabled" bash -c "test $? -eq 0" || tail -5 "$tmp/min.log" | sed 's/^/# /'
check "... linking no MPI, oneDNN or libcurl" bash -c \
    "test -x '$tmp/min/client/cosched' && ! ldd '$tmp/min/client/cosched' '$tmp/min/daemon/coschedd' | grep -Eq 'libmpi|libdnnl|libcurl'"
lintian --info "$tmp"/cosched_*.changes >"$tmp/lintian.txt" 2>&1
sed 's/^/# lintian: /' "$tmp/lintian.txt"
check "lintian finds no error" bash -c "! grep -q '^E:' '$tmp/lintian.txt'"

if [ "$(id -u)" -ne 0 ]; then
    skip_all "installing the packages needs root"
fi
if dpkg -s cosched >/dev/null 2>&1; then
    not_ok "this machine has no cosched package before the test" "$(dpkg -s cosched | head -3)"
    finish
    exit 1
fi
debs=()
for p in $packages; do debs+=("$(ls "$tmp"/${p}_*.deb)"); done
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debs[@]}" >"$tmp/install.log" 2>&1
rc=$?
installed=1
check "apt-get install of the packages" bash -c "test $rc -eq 0" || tail -20 "$tmp/install.log" | sed 's/^/# /'
check "cosched --version" bash -c "/usr/bin/cosched --version | grep -qx 'cosched 0[.0-9]*'"
check "coschedd is in /usr/sbin and says its version" bash -c "/usr/sbin/coschedd --version | grep -qx 'coschedd 0[.0-9]*'"
check "cosched-train and cosched-noise say theirs" bash -c \
    "/usr/bin/cosched-train --version | grep -q '^cosched-train ' && /usr/bin/cosched-noise --version | grep -q '^cosched-noise '"
check "coschedd --check-config /etc/cosched/coschedd.yaml" /usr/sbin/coschedd --check-config --config /etc/cosched/coschedd.yaml
check "the configuration files are conffiles" bash -c \
    "dpkg-query -W -f='\${Conffiles}' cosched | grep -q '/etc/cosched/coschedd.yaml' &&
     dpkg-query -W -f='\${Conffiles}' cosched | grep -q '/etc/cosched/slurm.conf'"
check "systemd-analyze verify on the installed units" systemd-analyze verify /lib/systemd/system/coschedd.service \
    /lib/systemd/system/coschedd.socket
check "coschedd.service starts /usr/sbin/coschedd" grep -qx 'ExecStart=/usr/sbin/coschedd --foreground' \
    /lib/systemd/system/coschedd.service
check "the units are enabled on install, not started (dh_installsystemd --no-start); an upgrade try-restarts" bash -c \
    "test -L /etc/systemd/system/multi-user.target.wants/coschedd.service &&
     test -L /etc/systemd/system/sockets.target.wants/coschedd.socket &&
     test -s /var/lib/dpkg/info/cosched.postinst && ! grep -qE 'deb-systemd-invoke +(start|restart)' /var/lib/dpkg/info/cosched.postinst &&
     grep -q 'try-restart coschedd.service' /var/lib/dpkg/info/cosched.postinst"
for page in man1/cosched.1 man8/coschedd.8 man5/coschedd.yaml.5 man1/cosched-noise.1 man1/cosched-train.1; do
    check "man -l /usr/share/man/$page.gz reads" bash -c \
        "man -l /usr/share/man/$page.gz 2>&1 | col -b | grep -qx NAME"
done
check "the Slurm scripts in /usr/lib/cosched/slurm" test -x /usr/lib/cosched/slurm/prolog
check "bash completion for cosched" test -s /usr/share/bash-completion/completions/cosched
check "the copyright file, the docs and the noise patterns" bash -c \
    "test -s /usr/share/doc/cosched/copyright && ls /usr/share/doc/cosched/coschedd.md* >/dev/null &&
     test -s /usr/share/doc/cosched/examples/patterns.yaml"
check "libcosched-dev: pkg-config finds libcosched" bash -c "pkg-config --modversion cosched | grep -q '^0'"
check "python3-cosched: the system's python3 imports cosched" /usr/bin/python3 -c "import cosched"

# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $packages >"$tmp/purge.log" 2>&1
rc=$?
installed=
check "apt-get purge removes them" bash -c "test $rc -eq 0 && ! dpkg -s cosched >/dev/null 2>&1"
check "... and leaves nothing behind: programs, units, configuration" bash -c \
    "! test -e /usr/sbin/coschedd && ! test -e /usr/bin/cosched && ! test -e /lib/systemd/system/coschedd.service &&
     ! test -e /etc/cosched && ! test -e /etc/systemd/system/multi-user.target.wants/coschedd.service"
finish
