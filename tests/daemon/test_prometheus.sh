#!/usr/bin/env bash
# test_prometheus: the metrics with the real parts. coschedd writes its textfile, Debian's
# prometheus-node-exporter (textfile collector only) serves it, Debian's prometheus scrapes it
# every second and evaluates packaging/prometheus/cosched-rules.yml (a copy with 2 s `for:` and
# a 5 s limit on the textfile's age). A guard episode as in test_guard.sh (a trainer whose step
# time grows with the CPU a busy co-tenant gets) must show in the recorded figures: harvested
# core-seconds within 20 % of the co-tenant's CPU time by /proc, training seconds lost within 20 %
# of what the trainer's own step lines say it lost; the over-budget alert fires while the guard
# catches up, and CoschedDown fires once coschedd is stopped. All on loopback ports, torn down.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$here/../lib/common.sh"
for p in prometheus prometheus-node-exporter; do
    command -v "$p" >/dev/null || skip_all "the metrics through node_exporter and Prometheus: $p is not installed (Debian: $p)"
done
exporter_pid=
prom_pid=
stop_servers() { for p in $exporter_pid $prom_pid; do kill "$p" 2>/dev/null; done; }
at_exit stop_servers
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# query EXPR: the value of an instant query's one sample (fails when there is none)
query() { curl -sf --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
    py 'r=d["data"]["result"]; assert d["status"]=="success" and len(r)==1, r; print(r[0]["value"][1])'; }
firing() { curl -sf "http://127.0.0.1:$pport/api/v1/alerts" |
    py "assert any(a['labels']['alertname']=='$1' and a['state']=='firing' for a in d['data']['alerts'])"; }

mkdir -p "$tmp/textfile" "$tmp/state"
eport=$(free_port) pport=$(free_port)
write_config "slowdown_budget: 0.05
metrics:
  textfile: $tmp/textfile/coschedd.prom
  push_interval: 1"
start_daemon --topology "$topologies/ci-2core-gpu.xml"
check "coschedd starts and writes its textfile" wait_for 10 test -s "$tmp/textfile/coschedd.prom"
prometheus-node-exporter --web.listen-address="127.0.0.1:$eport" --collector.disable-defaults \
    --collector.textfile --collector.textfile.directory="$tmp/textfile" >"$tmp/exporter.log" 2>&1 &
exporter_pid=$!
check "node_exporter serves it" wait_for 20 bash -c "curl -sf http://127.0.0.1:$eport/metrics | grep -q '^cosched_up 1'"
sed -e 's/^\( *for:\).*/\1 2s/' -e 's/ > 300$/ > 5/' "$root/packaging/prometheus/cosched-rules.yml" >"$tmp/rules.yml"
cat >"$tmp/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [$tmp/rules.yml]
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$eport']
EOC
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
check "Prometheus scrapes node_exporter and loads the rules" wait_for 60 query 'cosched_up'

# --- the guard episode
c job register --job t --uid 0 --role trainer --policy l3 --cores-per-rank 1 >/dev/null
c job register --job n --uid 0 --role cotenant --policy l3 --cores 1 >/dev/null
c --json run start --job t -- python3 "$here/sensitive_trainer.py" --pidfile "$tmp/noise.pid" \
    --base 0.05 --sensitivity 0.2 >"$tmp/run-t.json"
baseline_taken() { c --json stats --job t | py 'j=d["jobs"][0]; assert j["baseline"]["samples"] >= 20'; }
check "the trainer alone makes a baseline" wait_for 120 baseline_taken
# Pinned at share 1 first, the co-tenant costs the trainer its 20 % until the over-budget alert has
# fired (a state, not a race with the guard); then the guard takes over and holds it.
c guard set --job n --share 1 >/dev/null
c --json run start --job n -- "$noise" busy --duration 900 >"$tmp/run-n.json"
npid=$(run_pid "$tmp/run-n.json")
echo "$npid" >"$tmp/noise.pid"
check "unheld, the co-tenant puts the trainer over budget: the alert fires" wait_for 120 firing CoschedTrainerOverBudget
c guard set --job n --share auto >/dev/null
held() { c --json stats --job t | py 'j=d["jobs"][0]; g=j["guard"]; s=g["judged"]; assert g["phase"]=="watching" and g["share"] < 1 and s and s["ci95"][0] <= j["budget"]'; }
check "the guard throttles the co-tenant and holds the trainer under budget" wait_for 120 held
# Enough CPU time for a tick's worth (what accounting counts once a second) to be small beside it.
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$npid/stat"; }
enough_cpu() { python3 -c "assert $(cpu_secs) >= 3"; }
check "the co-tenant has used 3 CPU seconds" wait_for 300 enough_cpu
cpu_proc=$(cpu_secs)
gone_n() { ! kill -0 "$1" 2>/dev/null || [ "$(proc_state "$1")" = Z ]; }
c job release --job n >/dev/null
check "released, the co-tenant ends" wait_for 30 gone_n "$npid"
# what the trainer lost by its own account: every step's time above its base, 0.05 s
tid=$(py 'print(d["id"])' <"$tmp/run-t.json")
lost_truth=$(cat "$tmp"/state/runs/*/"$tid.out" | python3 -c '
import json, sys
print(sum(max(0.0, json.loads(l)["t_step"] - 0.05) for l in sys.stdin if l.startswith("{")))')
c job release --job t >/dev/null
echo "# co-tenant CPU time by /proc: $cpu_proc s; trainer time lost by its step lines: $lost_truth s"

# --- what Prometheus recorded
# the counters no longer move: the last textfile has been scraped (at most a minute)
counters='sum(cosched_trainer_lost_seconds_total) + sum(cosched_cotenant_cpu_seconds_total)'
last=
for _ in $(seq 20); do
    now=$(query "$counters") && [ "$now" = "$last" ] && break
    last=$now; sleep 3
done
harvested=$(query 'cluster:cosched_cotenant_core_hours:increase1h * 3600')
lost=$(query 'cluster:cosched_trainer_lost_seconds:increase1h')
echo "# recorded: harvested $harvested core-seconds; training lost $lost s"
check "harvested core-seconds within 20 % of the co-tenant's CPU time by /proc" \
    python3 -c "h, p = $harvested, $cpu_proc; assert p > 0 and abs(h - p) <= 0.2 * p, (h, p)"
check "training seconds lost within 20 % of what the trainer's steps lost" \
    python3 -c "l, t = $lost, $lost_truth; assert t > 0 and abs(l - t) <= 0.2 * t, (l, t)"
check "the share of trainer time lost is recorded, between 0 and 1" \
    python3 -c "v = $(query 'cluster:cosched_trainer_lost:ratio_rate1h'); assert 0 < v < 1, v"

# --- coschedd stopped: its last textfile still says up; its age says it is down
stop_daemon
check "the dead daemon's last file still says cosched_up 1" grep -q '^cosched_up 1' "$tmp/textfile/coschedd.prom"
check "and CoschedDown fires from the file's age" wait_for 60 firing CoschedDown
finish
