#!/usr/bin/env bash
# Receipt run: every task of a load reaches a final state through receipts and reconciliation
# (docs/receipts.md), while the provider drops and duplicates receipts.
#
#   scripts/receipt-run.sh [--db sqlite|postgresql] [--events N] [--drop F] [--duplicate F]
#                          [--undelivered F] [--read F] [--window-ms N] [--receipt-concurrency N]
#                          [--herald PATH] [--keep]
#
# Runs `herald sim-provider --dedupe-by-id` posting signed receipts back to herald (dropping and
# duplicating the given shares, reordered), `herald serve` with three webhook channels (sms ->
# app fallback) that take receipts, have a receipt window and a status URL, and `herald load`,
# which waits until every task is final and checks: end states, UNDELIVERED failed over,
# GET /v1/stats adding up to what the messages show, and the usual invariants. Prints
# herald_reconciled_total next to the provider's count of requests left without any receipt.
# PostgreSQL: uses HERALD_TEST_POSTGRES_URL's server (scripts/with-postgres.sh provides one).
set -euo pipefail

db=sqlite events=2000 drop=0.1 duplicate=0.1 undelivered=0.02 read=0.2 window_ms=5000
# Connections the provider posts receipts on: herald answers each after its COMMIT, so too few
# make receipts queue at the provider and arrive after the window, where the reconciler asks
# for them instead (a real provider's callback fleet is wide).
receipt_concurrency=64
herald="${HERALD_BINARY:-$(cd "$(dirname "$0")/.." && pwd)/build/herald}"
keep=no
while [ $# -gt 0 ]; do
  case "$1" in
    --db) db=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --drop) drop=$2; shift 2 ;;
    --duplicate) duplicate=$2; shift 2 ;;
    --undelivered) undelivered=$2; shift 2 ;;
    --read) read=$2; shift 2 ;;
    --window-ms) window_ms=$2; shift 2 ;;
    --receipt-concurrency) receipt_concurrency=$2; shift 2 ;;
    --herald) herald=$2; shift 2 ;;
    --keep) keep=yes; shift ;;
    *) echo "receipt-run: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$herald" ] || { echo "receipt-run: no herald binary at $herald (build first)" >&2; exit 2; }

work=$(mktemp -d /tmp/herald-receipts.XXXXXX)
herald_pid="" sim_pid=""
cleanup() {
  for pid in $herald_pid $sim_pid; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$db" = postgresql ] && [ -n "${run_db:-}" ]; then
    psql "$HERALD_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $run_db" >/dev/null 2>&1 || true
  fi
  if [ "$keep" = yes ]; then echo "receipt-run: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
say() { echo "receipt-run: $*" >&2; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

case "$db" in
  sqlite) db_url="sqlite:$work/herald.db" ;;
  postgresql)
    if [ -z "${HERALD_TEST_POSTGRES_URL:-}" ]; then
      say "no PostgreSQL (run under scripts/with-postgres.sh or set HERALD_TEST_POSTGRES_URL)"
      [ -n "${CI:-}" ] && exit 1
      exit 77 # skipped
    fi
    run_db="herald_receipts_$$"
    psql "$HERALD_TEST_POSTGRES_URL" -qc "CREATE DATABASE $run_db" >/dev/null
    db_url="${HERALD_TEST_POSTGRES_URL%/*}/$run_db" ;;
  *) echo "receipt-run: --db must be sqlite or postgresql" >&2; exit 2 ;;
esac

herald_port=$(free_port)
provider_port=$(free_port)
send_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
receipt_secret="whsec_cmVjZWlwdC1zZWNyZXQtb2YtdGhlLXJ1bg=="

"$herald" sim-provider --listen "127.0.0.1:$provider_port" --dedupe-by-id \
  --receipt-to "http://127.0.0.1:$herald_port" --receipt-secret "$receipt_secret" \
  --receipt-concurrency "$receipt_concurrency" --receipt-delay-ms 50 --reorder-ms 200 --drop-receipts "$drop" \
  --duplicate-receipts "$duplicate" --undelivered-rate "$undelivered" --read-rate "$read" \
  >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!

channel() { # NAME [FALLBACK]
  local fallback=""
  [ -n "${2:-}" ] && fallback="\"fallback\": \"$2\","
  echo "{ \"name\": \"$1\", \"type\": \"webhook\", \"url\": \"http://127.0.0.1:$provider_port/$1\",
      \"secret\": \"$send_secret\", \"receipt_secret\": \"$receipt_secret\", $fallback
      \"status_url\": \"http://127.0.0.1:$provider_port/status\", \"receipt_window_ms\": $window_ms,
      \"rate_per_sec\": 20000, \"burst\": 2000, \"window\": 256, \"timeout_ms\": 2000, \"lease_ms\": 10000 }"
}
cat >"$work/herald.json" <<EOF
{
  "listen": "127.0.0.1:$herald_port",
  "database": "$db_url",
  "log_level": "warn",
  "receipts": {"reconcile_interval_ms": 1000, "reconcile_batch": 2000},
  "channels": [ $(channel sms app), $(channel wechat), $(channel app) ]
}
EOF
"$herald" serve --config "$work/herald.json" >"$work/herald.log" 2>&1 &
herald_pid=$!
for _ in $(seq 1 1000); do
  curl -sf "http://127.0.0.1:$herald_port/healthz" >/dev/null 2>&1 && break
  sleep 0.01
done
curl -sf "http://127.0.0.1:$herald_port/healthz" >/dev/null ||
  { say "herald did not come up"; tail -n 20 "$work/herald.log" >&2; exit 1; }
say "herald on :$herald_port ($db), provider on :$provider_port, work dir $work"

started=$(date +%s.%N)
status=0
"$herald" load --target "127.0.0.1:$herald_port" --provider "127.0.0.1:$provider_port" \
  --events "$events" --channels sms,wechat,app --receipt-channels sms,wechat,app \
  --fallbacks sms:app --duplicate-ratio 0.3 --late-duplicates 0.05 --concurrency 16 \
  --settle-s $(( window_ms / 1000 + 120 )) --drain-timeout-s 600 >"$work/load.txt" 2>"$work/load.log" ||
  status=$?
elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
cat "$work/load.txt"
metrics=$(curl -sf "http://127.0.0.1:$herald_port/metrics")
provider=$(curl -sf "http://127.0.0.1:$provider_port/stats")
python3 - "$metrics" "$provider" "$elapsed" <<'EOF'
import json, sys
metrics, provider, elapsed = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
def total(name, label=""):
    return sum(float(l.split()[-1]) for l in metrics.splitlines()
               if l.startswith(name) and label in l)
reconciled = total("herald_reconciled_total")
print(f"reconciled {reconciled:.0f} (unconfirmed {total('herald_reconciled_total', 'unconfirmed'):.0f})"
      f"; provider requests without any receipt {provider['requests']['without_receipt']}"
      f", receipts dropped {provider['receipts']['dropped']}"
      f", duplicated {provider['receipts']['duplicated']}; {elapsed} s in all")
EOF
[ $status -eq 0 ] && say PASS || say "FAIL (see $work with --keep)"
exit $status
