#!/usr/bin/env bash
# test_access: docs/security.md's permission table, proven against a running daemon. Every method
# is called as root, an operator, a trainer's owner, a co-tenant's owner and another user (uids
# the test makes up: SO_PEERCRED is all the daemon goes by), each answer checked against the
# table read from the page, and each refusal checked to change nothing (tests/daemon/
# access_matrix.py). Then private_jobs: redact and hide, switched by SIGHUP; and the bar's case
# through the CLI: a co-tenant's owner cannot release it, and it stays registered.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
chmod 755 "$tmp" # the made-up users connect to the socket in it
if [ "$(id -u)" -ne 0 ]; then
    skip_all "the made-up users need root to become them"
fi
config() { write_config "operators:
  uids: [65530]
private_jobs: $1
client_timeout: 60"; }
config redact
start_daemon --topology "$topologies/ci-2core-gpu.xml" || { not_ok "the daemon starts"; finish; }
matrix() { tap_from /usr/bin/python3 "$here/access_matrix.py" "$sock" "$root/docs/security.md" "$1"; }
matrix matrix
matrix private-redact

# The bar's case, as a user would meet it: the CLI, as the co-tenant's owner.
setpriv --reuid=65532 --regid=65532 --clear-groups "$cosched" --socket "$sock" job release --job c1 \
    >"$tmp/release.out" 2>&1
rc=$?
check "a co-tenant's owner's job release is refused (exit $rc): $(head -n 1 "$tmp/release.out" | cut -c 1-200)" \
    bash -c "test $rc -ne 0 && grep -q 'EPERM.*may not release job c1: it is a co-tenant' '$tmp/release.out'"
check "... and the co-tenant is still registered" c job get --job c1

# hide, by a reload: others' jobs read as absent.
config hide
kill -HUP "$daemon_pid"
hidden() { setpriv --reuid=65533 --regid=65533 --clear-groups "$cosched" --socket "$sock" --json job list |
    py 'assert d["jobs"] == []'; }
check "SIGHUP turns private_jobs to hide" wait_for 30 hidden
matrix private-hide

release_and_stop_daemon
finish
