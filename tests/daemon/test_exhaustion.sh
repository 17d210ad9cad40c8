#!/usr/bin/env bash
# test_exhaustion: coschedd and cosched-noise when resources run out. The state directory on a
# small tmpfs that fills: the daemon keeps serving, says so in status and metrics, keeps the last
# good state.json, and saves again once there is room. The Pushgateway down, then hanging: the
# socket keeps answering. cosched-noise ior on a nearly full file system refuses before writing,
# and one that fills while it runs does not make it grow or leave files. Needs root (mount).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
server_pid=
mounted=()
# the hanging Pushgateway gone, the file systems unmounted (lazily: the daemon, stopped after
# this, may still hold the state directory's)
end_exhaustion() {
    [ -n "$server_pid" ] && kill -9 "$server_pid" 2> /dev/null
    for m in ${mounted[@]+"${mounted[@]}"}; do umount -l "$m" 2> /dev/null; done
}
at_exit end_exhaustion
field() { c --json status | py "print($1)"; }
start_juwels_daemon() { start_daemon --topology "$topologies/juwels-booster.xml"; }

# The state directory is the small file system itself (the daemon's $tmp/state).
mkdir -p "$tmp/state" "$tmp/fs"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=1m tmpfs "$tmp/state" 2> /dev/null; then
    skip "state directory on a full file system" "needs root to mount a small tmpfs"
else
    mounted+=("$tmp/state")
    start_juwels_daemon
    c job register --job before-full --uid 0 --role cotenant --cores 1 > /dev/null
    # fill what is left (tmpfs counts pages: a filler of all free bytes takes the rest)
    fallocate -l "$(($(stat -f -c '%a*%S' "$tmp/state")))" "$tmp/state/filler" 2> /dev/null ||
        dd if=/dev/zero of="$tmp/state/filler" bs=4k 2> /dev/null
    c job register --job while-full --uid 0 --role cotenant --cores 1 > "$tmp/out" 2>&1
    check "a change on a full disk is still answered" grep -q 'job while-full' "$tmp/out"
    check "status counts the failed save" test "$(field 'd["state"]["save_errors"]')" -ge 1
    check "status says why" test "$(field 'd["state"]["last_error"]')" = "No space left on device"
    check "metrics count it" bash -c "'$cosched' --socket '$sock' metrics | grep -Eq '^cosched_state_save_errors_total [1-9]'"
    check "the last good state.json is kept whole (it has the job from before)" python3 -c "
import json; d = json.load(open('$tmp/state/state.json'))
assert [j['id'] for j in d['jobs']] == ['before-full'], d['jobs']"
    check "no temporary file is left on the full disk" bash -c "! ls '$tmp/state'/.state.json.* 2> /dev/null"
    for i in 1 2 3 4 5; do c job get --job before-full > /dev/null || break; done
    check "reads keep being served" c job get --job while-full
    rm -f "$tmp/state/filler"
    c job register --job after-full --uid 0 --role cotenant --cores 1 > /dev/null
    check "with room again the next change saves everything" python3 -c "
import json; d = json.load(open('$tmp/state/state.json'))
assert sorted(j['id'] for j in d['jobs']) == ['after-full', 'before-full', 'while-full'], d['jobs']"
    check "status clears the error" test "$(field 'd["state"]["last_error"]')" = "None"
    stop_daemon
    check "the daemon stops cleanly" test $? -eq 0
fi

# The Pushgateway refusing connections, then one that accepts and never answers.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
umount "$tmp/state" 2> /dev/null; mounted=()
write_config "$(printf 'metrics:\n  push_url: http://127.0.0.1:%s\n  push_interval: 0.2' "$port")"
start_juwels_daemon
failed_push() { c metrics | grep -Eq '^cosched_pushes_total\{result="failed"\} [1-9]'; }
check "the failed pushes are counted" wait_for 60 failed_push
check "with the Pushgateway down the socket answers" c status
stop_daemon
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
held = []
while True:
    c, _ = s.accept(); held.append(c)  # read nothing, answer nothing
' "$port" &
server_pid=$!
start_juwels_daemon
ok_pings=0
for _ in $(seq 50); do c status > /dev/null 2>&1 && ok_pings=$((ok_pings + 1)); sleep 0.05; done
check "with the Pushgateway hanging every request is answered ($ok_pings of 50)" test "$ok_pings" -eq 50
stop_daemon
check "the daemon stops cleanly with a push hanging" test $? -eq 0
kill "$server_pid"; wait "$server_pid" 2> /dev/null; server_pid=

# cosched-noise ior: refuses a nearly full file system; one filling up meanwhile does not grow it.
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=300m tmpfs "$tmp/fs" 2> /dev/null; then
    skip "ior on a nearly full file system" "needs root to mount a tmpfs"
else
    mounted+=("$tmp/fs")
    fallocate -l 120m "$tmp/fs/filler" # 180 MiB left: under ior's reserve of 256 MiB
    "$noise" ior --dir "$tmp/fs" --block 2M --transfer 512k --threads 2 > "$tmp/o" 2> "$tmp/e"
    rc=$?
    check "ior refuses a nearly full file system, naming what is free (exit $rc)" bash -c \
        "test $rc -ne 0 && grep -q 'free; it keeps' '$tmp/e'"
    check "... and writes nothing" test "$(ls "$tmp/fs")" = filler
    rm -f "$tmp/fs/filler"
    # Its files (2 tasks x 2 MiB) are written in full once its reports add up to their size
    # written and read back; then the rest of the disk is taken; it must go on rewriting its own
    # files, not grow them (ENOSPC would end it with an error), until stopped.
    "$noise" ior --dir "$tmp/fs" --duration 600 --report-every 0.2 --block 2M --transfer 512k --threads 2 \
        --max-bytes 8M > "$tmp/o" 2> "$tmp/e" &
    pid=$!
    reports() { # SKIP: "COUNT BYTES": its complete progress lines and the bytes in all but the first SKIP
        python3 -c "
import json
p = [json.loads(l) for l in open('$tmp/o') if l.endswith('\n') and '\"progress\"' in l]
print(len(p), int(sum(x['bytes'] for x in p[$1:])))"
    }
    written_in_full() { read -r _ bytes < <(reports 0) && [ "$bytes" -ge $((8 << 20)) ]; }
    written_since() { read -r _ bytes < <(reports "$1") && [ "$bytes" -gt 0 ] || ! kill -0 "$pid"; }
    check "ior writes its files in full" wait_for 60 written_in_full
    fallocate -l "$(($(stat -f -c '%a*%S' "$tmp/fs")))" "$tmp/fs/filler" # the rest, taken by someone else
    check "... and the disk is full" test "$(stat -f -c '%a' "$tmp/fs")" -eq 0
    read -r n _ < <(reports 0)
    # reports past the next one cover time after the fill only
    wait_for 60 written_since $((n + 1))
    read -r _ bytes < <(reports $((n + 1)))
    check "ior goes on rewriting its own files on the full disk ($bytes bytes after the fill)" test "$bytes" -gt 0
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    check "stopped, it ends (exit $rc) with its summary and no error" \
        python3 -c "import json; s=[json.loads(l) for l in open('$tmp/o')][-1]; assert s['event']=='summary' and s['status']=='stopped' and s['error'] is None, s"
    check "... having kept to its own files, now removed" test "$(ls "$tmp/fs")" = filler
fi
if [ "$tap_failed" -gt 0 ]; then tail -n 20 "$tmp/daemon.log" | sed 's/^/# daemon: /'; fi
finish
