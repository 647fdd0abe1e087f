#!/usr/bin/env bash
# The standard benchmark of docs/benchmarks.md: prints its table.
#
#   scripts/bench.sh [--events N] [--db sqlite|postgresql|both] [--herald PATH]
#                    [--sqlite-synchronous full|normal]
#
# For each database it starts `herald serve` on a fresh database (PostgreSQL: a throwaway
# cluster with fsync and synchronous_commit ON, started by scripts/with-postgres.sh) with the
# embedded default channels (simulated, succeed at once; SQLite with the embedded default
# sqlite.synchronous, full, unless --sqlite-synchronous names one), and runs `herald load` four times,
# each on a fresh database, each ending with the invariant checks (a row whose checks failed
# says FAIL and its figures must not be reported):
#   closed   N events x 3 channels, 30 % resubmissions, 32 keep-alive connections: accepted
#            POSTs/s and tasks/s, delivered tasks/s (provider calls until the last one)
#   batch    the same events through POST /v1/messages/batch, 1,000 per request
#   open     an open loop (--rate) at half the closed run's accepted POSTs/s: ingest latency
#            p50/p99/p999 measured from each request's scheduled time
# For PostgreSQL it adds, on the same cluster, pgbench inserting 1,000-row batches with
# INSERT ... ON CONFLICT DO NOTHING into a table with a primary key (what the database alone
# does on this machine, for context).
# Needs a built herald (scripts/test.sh builds one) and, for PostgreSQL, the postgresql package.
set -euo pipefail
cd "$(dirname "$0")/.."

events=20000 dbs=both sqlite_synchronous=""
herald="${HERALD_BINARY:-$PWD/build/herald}"
while [ $# -gt 0 ]; do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --db) dbs=$2; shift 2 ;;
    --herald) herald=$2; shift 2 ;;
    --sqlite-synchronous) sqlite_synchronous=$2; shift 2 ;;
    *) echo "bench: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$herald" ] || { echo "bench: no herald binary at $herald (build first)" >&2; exit 2; }
case "$dbs" in sqlite | postgresql | both) ;; *) echo "bench: --db sqlite|postgresql|both" >&2; exit 2 ;; esac
case "$sqlite_synchronous" in "" | full | normal) ;;
  *) echo "bench: --sqlite-synchronous full|normal" >&2; exit 2 ;; esac

if [ "$dbs" != sqlite ] && [ -z "${HERALD_TEST_POSTGRES_URL:-}" ]; then
  # Re-run this script inside a durable throwaway cluster.
  HERALD_PG_DURABLE=1 exec scripts/with-postgres.sh "$0" --events "$events" --db "$dbs" \
    --herald "$herald" ${sqlite_synchronous:+--sqlite-synchronous "$sqlite_synchronous"}
fi

work=$(mktemp -d /tmp/herald-bench.XXXXXX)
herald_pid=""
cleanup() {
  [ -n "$herald_pid" ] && kill -9 "$herald_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
say() { echo "bench: $*" >&2; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
field() { # field FILE python-expression-over-j
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"
}

# The embedded default configuration with another sqlite.synchronous, when one is asked for.
config_args=()
if [ -n "$sqlite_synchronous" ]; then
  sed 's/"synchronous": "full"/"synchronous": "'"$sqlite_synchronous"'"/' config/herald.json \
    >"$work/herald.json"
  grep -q "\"synchronous\": \"$sqlite_synchronous\"" "$work/herald.json" ||
    { echo "bench: config/herald.json names no sqlite.synchronous to replace" >&2; exit 2; }
  config_args=(--config "$work/herald.json")
fi

# Starts herald on a fresh database of kind $1; sets herald_pid and port.
start_herald() {
  local db_url
  if [ "$1" = sqlite ]; then
    rm -rf "$work/sqlite"
    mkdir -p "$work/sqlite"
    db_url="sqlite:$work/sqlite/herald.db"
  else
    psql "$HERALD_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS herald_bench" >/dev/null 2>&1
    psql "$HERALD_TEST_POSTGRES_URL" -qc "CREATE DATABASE herald_bench" >/dev/null
    db_url="${HERALD_TEST_POSTGRES_URL%/*}/herald_bench"
  fi
  port=$(free_port)
  "$herald" serve "${config_args[@]}" --listen "127.0.0.1:$port" --db "$db_url" --log-level warn \
    >"$work/serve.log" 2>&1 &
  herald_pid=$!
  for _ in $(seq 1 100); do
    curl -sf "127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  say "herald did not start:"
  cat "$work/serve.log" >&2
  exit 1
}

stop_herald() {
  kill "$herald_pid" 2>/dev/null || true
  wait "$herald_pid" 2>/dev/null || true
  herald_pid=""
}

# load NAME DB [load options...]: one run on a fresh database; its JSON report in $work/NAME.json
load() {
  local name=$1 db=$2
  shift 2
  start_herald "$db"
  say "$db $name: herald load --events $events $*"
  "$herald" load --target "127.0.0.1:$port" --events "$events" --channels sms,wechat,app \
    --duplicate-ratio 0.3 --late-duplicates 0 --json "$@" >"$work/$name.json" \
    2>"$work/$name.log" || true
  stop_herald
  [ -s "$work/$name.json" ] || { say "$name: no report"; cat "$work/$name.log" >&2; exit 1; }
}

pgbench_rows_per_s() {
  psql "$HERALD_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS herald_pgbench" >/dev/null 2>&1
  psql "$HERALD_TEST_POSTGRES_URL" -qc "CREATE DATABASE herald_pgbench" >/dev/null
  local url="${HERALD_TEST_POSTGRES_URL%/*}/herald_pgbench"
  psql "$url" -qc "CREATE TABLE rows (id TEXT COLLATE \"C\" PRIMARY KEY, body TEXT NOT NULL)"
  cat >"$work/insert.sql" <<'SQL'
INSERT INTO rows (id, body)
SELECT md5(random()::text || g::text), 'payload of a benchmark row'
FROM generate_series(1, 1000) AS g ON CONFLICT DO NOTHING;
SQL
  local tps
  tps=$(pgbench -n -c 2 -j 2 -T 10 -f "$work/insert.sql" "$url" 2>/dev/null |
    awk '/^tps/ {print $3; exit}')
  python3 -c "print(round(float('$tps') * 1000))"
}

rows=()
for db in sqlite postgresql; do
  [ "$dbs" = both ] || [ "$dbs" = "$db" ] || continue
  load closed "$db" --concurrency 32
  load batch "$db" --concurrency 4 --batch 1000
  half=$(field "$work/closed.json" "max(1, round(j['ingest']['accepted_per_s'] / 2))")
  load open "$db" --rate "$half" --concurrency 256
  context="-"
  [ "$db" = postgresql ] && context="$(pgbench_rows_per_s) rows/s"
  rows+=("$(python3 - "$work" "$db" "$context" <<'PY'
import json, sys
work, db, context = sys.argv[1:]
closed, batch, opn = (json.load(open(f"{work}/{n}.json")) for n in ("closed", "batch", "open"))
def ok(j): return "PASS" if j["pass"] else "FAIL"
lat = opn["ingest"]["latency_ms"]
print(f"| {db} | {closed['ingest']['accepted_per_s']:,.0f} | "
      f"{closed['ingest']['accepted_tasks_per_s']:,.0f} | {closed['delivery']['delivered_per_s']:,.0f} | "
      f"{batch['ingest']['accepted_tasks_per_s']:,.0f} | "
      f"{opn['mode']['rate']} POSTs/s: {lat['p50']} / {lat['p99']} / {lat['p999']} ms "
      f"({opn['ingest']['late_starts']} late starts) | {context} | "
      f"{ok(closed)} {ok(batch)} {ok(opn)} |")
PY
)")
done

echo
echo "herald $("$herald" --version 2>/dev/null | head -1), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, $(date -u +%F)"
echo "$events events x 3 channels, 30 % resubmissions; simulated channels;" \
  "SQLite synchronous=${sqlite_synchronous:-full (the default)}"
echo
echo "| database | accepted POSTs/s | accepted tasks/s | delivered tasks/s (end to end) | batch: accepted tasks/s | open loop at half load: p50 / p99 / p999 | pgbench INSERT … ON CONFLICT | checks (closed, batch, open) |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
