#!/usr/bin/env bash
# Where PostgreSQL's and herald's time goes in the standard closed-loop load (docs/benchmarks.md):
#
#   scripts/profile-pg.sh [--events N] [--herald PATH]
#
# Starts a throwaway durable PostgreSQL 15 (fsync and synchronous_commit on) with
# pg_stat_statements, `herald serve` on a fresh database with the embedded default channels, and
# `herald load` (N events x sms,wechat,app, 30 % resubmissions, 32 connections). Prints the CPU
# that herald, the PostgreSQL backends of its sessions and the load generator used from the
# first submission to the last provider call (per 1,000 tasks), the whole machine's busy and
# idle time over the same span (so what the three share is visible), and the statements by
# total execution time up to then; the load's own checks run after that and are not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

events=20000
herald="${HERALD_BINARY:-$PWD/build/herald}"
while [ $# -gt 0 ]; do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --herald) herald=$2; shift 2 ;;
    *) echo "profile-pg: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$herald" ] || { echo "profile-pg: no herald binary at $herald (build first)" >&2; exit 2; }

if [ -z "${HERALD_TEST_POSTGRES_URL:-}" ]; then
  HERALD_PG_DURABLE=1 HERALD_PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements" \
    exec scripts/with-postgres.sh "$0" --events "$events" --herald "$herald"
fi

work=$(mktemp -d /tmp/herald-profile.XXXXXX)
herald_pid="" load_pid="" watcher=""
cleanup() {
  for pid in $herald_pid $load_pid $watcher; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

psql "$HERALD_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS herald_profile" >/dev/null 2>&1
psql "$HERALD_TEST_POSTGRES_URL" -qc "CREATE DATABASE herald_profile" >/dev/null
url="${HERALD_TEST_POSTGRES_URL%/*}/herald_profile"
psql "$url" -qc "CREATE EXTENSION pg_stat_statements" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$herald" serve --listen "127.0.0.1:$port" --db "$url" --log-level warn >"$work/serve.log" 2>&1 &
herald_pid=$!
healthy=""
for _ in $(seq 1 100); do
  curl -sf "127.0.0.1:$port/healthz" >/dev/null 2>&1 && { healthy=1; break; }
  sleep 0.1
done
[ -n "$healthy" ] || { echo "profile-pg: herald did not answer /healthz; it said:" >&2
  cat "$work/serve.log" >&2; exit 1; }

psql "$url" -qc "SELECT pg_stat_statements_reset()" >/dev/null
expected=$((events * 3))
# One long-lived watcher samples the CPU before the load and again at the last provider call,
# before the load's checks, polling /metrics over one keep-alive connection: a poll that started
# curl and awk five times a second took a tenth of the machine from what it measured.
python3 - "$work" "$port" "$herald_pid" "$expected" <<'PY' &
import http.client, os, re, sys, time
work, port, herald_pid, expected = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])

def stat(pid):  # the fields after the command name
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()

def ticks(pid):  # user + system
    fields = stat(pid)
    return int(fields[11]) + int(fields[12])

def sessions():  # herald's connections: "postgres: <user> herald_profile <client> <state>"
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            title = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            if re.match(r"postgres: \S+ herald_profile ", title):
                found[pid] = ticks(pid)
        except OSError:
            pass
    return found

def machine():  # busy (user, nice, system, irq, softirq), idle (idle, iowait)
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return f[0] + f[1] + f[2] + f[5] + f[6], f[3] + f[4]

def calls(conn):
    conn.request("GET", "/metrics")
    body = conn.getresponse().read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
               if line.startswith("herald_provider_calls_total"))

start_herald, start_sessions, start_machine = ticks(herald_pid), sessions(), machine()
open(f"{work}/ready", "w").close()
while not os.path.exists(f"{work}/load-pid"):  # written whole (renamed into place)
    time.sleep(0.01)
load_pid = open(f"{work}/load-pid").read().strip()
load_started = stat(load_pid)[19]  # so a reused pid is not taken for the load

def load_running():
    try:
        return stat(load_pid)[19] == load_started and stat(load_pid)[0] != "Z"
    except OSError:
        return False

conn = None
while True:
    try:
        conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        if calls(conn) >= expected:
            break
    except (OSError, http.client.HTTPException):
        conn = None  # herald closed the connection: open another
    if not load_running():
        sys.exit(0)  # the load ended before every task was called
    time.sleep(0.2)
herald_cpu, end_sessions, end_machine = ticks(herald_pid) - start_herald, sessions(), machine()
pg_cpu = sum(t - start_sessions.get(pid, 0) for pid, t in end_sessions.items())
try:
    load_cpu = ticks(load_pid)
except OSError:
    load_cpu = -1  # ended the moment the last call was counted
busy, idle = (e - s for s, e in zip(start_machine, end_machine))
open(f"{work}/cpu-at-end", "w").write(f"{herald_cpu} {pg_cpu} {load_cpu} {busy} {idle}\n")
PY
watcher=$!
while [ ! -e "$work/ready" ]; do
  kill -0 "$watcher" 2>/dev/null || { echo "profile-pg: the CPU watcher failed" >&2; exit 1; }
  sleep 0.01
done
"$herald" load --target "127.0.0.1:$port" --events "$events" --channels sms,wechat,app \
  --duplicate-ratio 0.3 --late-duplicates 0 --concurrency 32 --json >"$work/load.json" \
  2>"$work/load.log" &
load_pid=$!
echo "$load_pid" >"$work/load-pid.part" && mv "$work/load-pid.part" "$work/load-pid"
wait "$watcher" || true
watcher=""
if [ -s "$work/cpu-at-end" ]; then
  psql "$url" -Atc "SELECT calls, rows, round(total_exec_time::numeric, 1),
      left(regexp_replace(query, '\s+', ' ', 'g'), 100)
    FROM pg_stat_statements
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'herald_profile')
    ORDER BY total_exec_time DESC LIMIT 12" >"$work/statements"
fi
wait "$load_pid" || true
load_pid=""
[ -s "$work/cpu-at-end" ] || { echo "profile-pg: not every task was called; the load said:" >&2
  cat "$work/load.log" >&2; exit 1; }
read -r herald_cpu pg_cpu load_cpu busy idle <"$work/cpu-at-end"
ticks=$(getconf CLK_TCK)
python3 - "$work/load.json" "$expected" "$ticks" "$herald_cpu" "$pg_cpu" "$load_cpu" "$busy" \
  "$idle" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))
tasks, ticks = int(sys.argv[2]), int(sys.argv[3])
herald, pg, loader, busy, idle = (int(a) for a in sys.argv[4:9])
per_k = lambda t: t / ticks / tasks * 1000
print(f"{tasks} tasks, delivered {load['delivery']['delivered_per_s']:,.0f}/s end to end")
loader_text = f"{per_k(loader):.3f} s" if loader >= 0 else "n/a"
print(f"CPU per 1,000 tasks: herald {per_k(herald):.3f} s, PostgreSQL backends {per_k(pg):.3f} s, "
      f"load generator {loader_text}; whole machine {per_k(busy):.3f} s busy, "
      f"{per_k(idle):.3f} s idle")
PY
echo "calls | rows | total ms | statement (up to the last provider call)"
cat "$work/statements"
