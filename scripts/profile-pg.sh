#!/usr/bin/env bash
# Where PostgreSQL's and herald's time goes in the standard closed-loop load (docs/benchmarks.md):
#
#   scripts/profile-pg.sh [--events N] [--herald PATH]
#
# Starts a throwaway durable PostgreSQL 15 (fsync and synchronous_commit on) with
# pg_stat_statements, `herald serve` on a fresh database with the embedded default channels, and
# `herald load` (N events x sms,wechat,app, 30 % resubmissions, 32 connections). Prints the CPU
# that herald and the PostgreSQL backends used from the first submission to the last provider
# call (per 1,000 tasks), and the statements by total execution time up to then; the load's own
# checks run after that and are not counted.
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
herald_pid=""
cleanup() {
  [ -n "$herald_pid" ] && kill "$herald_pid" 2>/dev/null || true
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
for _ in $(seq 1 100); do
  curl -sf "127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in clock ticks
backends_cpu() {
  local total=0
  for p in $(pgrep -f "postgres: .*herald_profile" || true); do
    total=$((total + $(cpu_of "$p" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
provider_calls() {
  curl -s "127.0.0.1:$port/metrics" | awk '/^herald_provider_calls_total/ {s += $2} END {printf "%d\n", s}'
}

psql "$url" -qc "SELECT pg_stat_statements_reset()" >/dev/null
herald_start=$(cpu_of "$herald_pid")
pg_start=$(backends_cpu)
expected=$((events * 3))
# Samples the CPU when the last task has had its provider call, before the load's checks. The
# poll is curl and awk only: a python3 start (a pyenv shim here) five times a second took a
# sixth of the machine's CPU away from herald and PostgreSQL.
(
  while [ "$(provider_calls)" -lt "$expected" ]; do
    [ -e "$work/load-ended" ] && exit 0 # the load gave up before every task was called
    sleep 0.2
  done
  echo "$(cpu_of "$herald_pid") $(backends_cpu)" >"$work/cpu-at-end"
  psql "$url" -Atc "SELECT calls, rows, round(total_exec_time::numeric, 1),
      left(regexp_replace(query, '\s+', ' ', 'g'), 100)
    FROM pg_stat_statements
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'herald_profile')
    ORDER BY total_exec_time DESC LIMIT 12" >"$work/statements"
) &
watcher=$!
"$herald" load --target "127.0.0.1:$port" --events "$events" --channels sms,wechat,app \
  --duplicate-ratio 0.3 --late-duplicates 0 --concurrency 32 --json >"$work/load.json" \
  2>"$work/load.log" || true
touch "$work/load-ended"
wait "$watcher"
[ -s "$work/cpu-at-end" ] || { echo "profile-pg: not every task was called; the load said:" >&2
  cat "$work/load.log" >&2; exit 1; }
read -r herald_end pg_end <"$work/cpu-at-end"
ticks=$(getconf CLK_TCK)
python3 - "$work/load.json" "$expected" "$ticks" "$((herald_end - herald_start))" \
  "$((pg_end - pg_start))" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))
tasks, ticks, herald, pg = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
per_k = lambda t: t / ticks / tasks * 1000
print(f"{tasks} tasks, delivered {load['delivery']['delivered_per_s']:,.0f}/s end to end")
print(f"CPU per 1,000 tasks: herald {per_k(herald):.3f} s, PostgreSQL backends {per_k(pg):.3f} s")
PY
echo "calls | rows | total ms | statement (up to the last provider call)"
cat "$work/statements"
