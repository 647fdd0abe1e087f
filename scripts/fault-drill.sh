#!/usr/bin/env bash
# Fault drill: proves design.md §4 while herald is killed and a provider is unreachable.
#
#   scripts/fault-drill.sh [--db sqlite|postgresql] [--events N] [--kills K] [--outage-s S]
#                          [--fail-rate F] [--permanent-rate F] [--duplicate-ratio R]
#                          [--store-fail-rate F] [--status-queries] [--herald PATH] [--keep]
#
# Runs `herald sim-provider --dedupe-by-id` (failing at the given rates), `herald serve` with
# three webhook channels (sms -> app fallback) and `herald load`; meanwhile SIGKILLs herald
# K times at random moments and restarts it, then restarts it once with `wechat` pointed at a
# closed port for S seconds (retries, circuit opens, new tasks fail over) and once more with
# the right address. With --store-fail-rate, herald's own database writes fail at that rate
# (config `store.faults`; half of them after committing, as a lost answer). At the end `herald load` checks, from herald's API and the provider's
# record: every accepted task terminal, none lost, at most one effective delivery per
# provider request id, accounting adds up. The drill itself checks that ambiguous resends
# (summed over every herald process) stay within what could have been in flight at the kills.
# With --status-queries the provider does NOT deduplicate (no --dedupe-by-id) and every channel
# has a status_url (the provider's GET /status/{id}; the wechat outage closes only its send
# URL): a task found SENDING after a kill is resent only when the provider never got it, so
# "at most one effective delivery per request id" must hold without the provider's help. The
# drill then also reports how the ambiguous tasks were resolved (found/not_found/unknown).
# PostgreSQL: uses HERALD_TEST_POSTGRES_URL's server (scripts/with-postgres.sh provides one)
# and a fresh database on it. Exit 0 when every check passes.
set -euo pipefail

db=sqlite events=2000 kills=5 outage_s=4 fail_rate=0.2 permanent_rate=0.02 duplicate_ratio=0.3
store_fail_rate=0 status_queries=no
herald="${HERALD_BINARY:-$(cd "$(dirname "$0")/.." && pwd)/build/herald}"
keep=no
while [ $# -gt 0 ]; do
  case "$1" in
    --db) db=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --outage-s) outage_s=$2; shift 2 ;;
    --fail-rate) fail_rate=$2; shift 2 ;;
    --permanent-rate) permanent_rate=$2; shift 2 ;;
    --duplicate-ratio) duplicate_ratio=$2; shift 2 ;;
    --store-fail-rate) store_fail_rate=$2; shift 2 ;;
    --status-queries) status_queries=yes; shift ;;
    --herald) herald=$2; shift 2 ;;
    --keep) keep=yes; shift ;;
    *) echo "fault-drill: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$herald" ] || { echo "fault-drill: no herald binary at $herald (build first)" >&2; exit 2; }

work=$(mktemp -d /tmp/herald-drill.XXXXXX)
herald_pid="" sim_pid="" load_pid=""
cleanup() {
  for pid in $load_pid $herald_pid $sim_pid; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$db" = postgresql ] && [ -n "${drill_db:-}" ]; then
    psql "$HERALD_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $drill_db" >/dev/null 2>&1 || true
  fi
  if [ "$keep" = yes ]; then echo "fault-drill: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

say() { echo "fault-drill: $*" >&2; }

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
    drill_db="herald_drill_$$"
    psql "$HERALD_TEST_POSTGRES_URL" -qc "CREATE DATABASE $drill_db" >/dev/null
    db_url="${HERALD_TEST_POSTGRES_URL%/*}/$drill_db" ;;
  *) echo "fault-drill: --db must be sqlite or postgresql" >&2; exit 2 ;;
esac

# The provider: port 0, the bound port read from its first stdout line. It deduplicates by
# request id unless the drill is about asking it instead.
dedupe=--dedupe-by-id
[ "$status_queries" = yes ] && dedupe=""
"$herald" sim-provider --listen 127.0.0.1:0 --fail-rate "$fail_rate" \
  --permanent-rate "$permanent_rate" $dedupe --hold-ms 3000 >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!
for _ in $(seq 1 500); do
  provider_port=$(grep -o '"port":[0-9]*' "$work/sim.out" 2>/dev/null | head -n1 | cut -d: -f2 || true)
  [ -n "$provider_port" ] && break
  sleep 0.01
done
[ -n "${provider_port:-}" ] || { say "sim-provider did not start"; cat "$work/sim.log" >&2; exit 1; }
herald_port=$(free_port)
closed_port=$(free_port) # nothing listens there

# write_config FILE WECHAT_PORT
write_config() {
  local secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
  local common='"timeout_ms": 1000, "rate_per_sec": 4000, "burst": 400, "window": 64, "lease_ms": 2000,
      "retry": {"schedule_ms": [200, 400, 800, 1600], "max_attempts": 10},
      "circuit": {"failure_threshold": 20, "cool_down_ms": 2000}'
  if [ "$status_queries" = yes ]; then
    common="$common, \"status_url\": \"http://127.0.0.1:$provider_port/status\""
  fi
  cat >"$1" <<EOF
{
  "listen": "127.0.0.1:$herald_port",
  "database": "$db_url",
  "log_level": "warn",
  "sweep_interval_ms": 1000,
  "drain_timeout_ms": 5000,
  "store": {"faults": {"write_failure_rate": $store_fail_rate, "seed": $RANDOM}},
  "channels": [
    { "name": "sms", "type": "webhook", "url": "http://127.0.0.1:$provider_port/sms",
      "secret": "$secret", "fallback": "app", $common },
    { "name": "wechat", "type": "webhook", "url": "http://127.0.0.1:$2/wechat",
      "secret": "$secret", "fallback": "app", $common },
    { "name": "app", "type": "webhook", "url": "http://127.0.0.1:$provider_port/app",
      "secret": "$secret", $common }
  ]
}
EOF
}
write_config "$work/herald.json" "$provider_port"
write_config "$work/outage.json" "$closed_port"

runs=0
ambiguous_total=0 resolved_found=0 resolved_not_found=0 resolved_unknown=0
start_herald() { # CONFIG
  runs=$((runs + 1))
  "$herald" serve --config "$1" >>"$work/herald.log" 2>&1 &
  herald_pid=$!
  for _ in $(seq 1 1000); do
    curl -sf "http://127.0.0.1:$herald_port/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$herald_pid" 2>/dev/null || break
    sleep 0.01
  done
  say "herald did not come up"; tail -n 20 "$work/herald.log" >&2; exit 1
}
# Adds this process's ambiguous resends and resolutions (its metrics die with it) to the
# running totals.
collect_ambiguous() {
  local text n
  text=$(curl -sf "http://127.0.0.1:$herald_port/metrics" 2>/dev/null) || text=""
  sum() { printf '%s\n' "$text" | awk -v m="$1" 'index($0, m) == 1 {s += $2} END {print s + 0}'; }
  n=$(sum 'herald_ambiguous_resends_total')
  ambiguous_total=$((ambiguous_total + n))
  for outcome in found not_found unknown; do
    n=$(printf '%s\n' "$text" | awk -v o="outcome=\"$outcome\"" \
      '/^herald_ambiguous_resolved_total/ && index($0, o) {s += $2} END {print s + 0}')
    eval "resolved_$outcome=\$((resolved_$outcome + n))"
  done
}
stop_herald() { # SIGNAL
  collect_ambiguous
  kill "-$1" "$herald_pid" 2>/dev/null || true
  wait "$herald_pid" 2>/dev/null || true
  herald_pid=""
}

start_herald "$work/herald.json"
say "herald on :$herald_port ($db, store write failures $store_fail_rate), provider on" \
  ":$provider_port, work dir $work"

"$herald" load --target "127.0.0.1:$herald_port" --provider "127.0.0.1:$provider_port" \
  --events "$events" --channels sms,wechat,app --duplicate-ratio "$duplicate_ratio" \
  --late-duplicates 0.05 --concurrency 16 --drain-timeout-s 300 --json \
  >"$work/load.json" 2>"$work/load.log" &
load_pid=$!

for k in $(seq 1 "$kills"); do
  sleep "$(awk -v r=$RANDOM 'BEGIN {printf "%.2f", 0.5 + (r % 150) / 100}')"
  kill -0 "$load_pid" 2>/dev/null || break
  say "kill -9 #$k"
  stop_herald 9
  start_herald "$work/herald.json"
done

say "wechat unreachable for ${outage_s}s"
stop_herald 9
start_herald "$work/outage.json"
sleep "$outage_s"
stop_herald TERM
start_herald "$work/herald.json"

load_status=0
wait "$load_pid" || load_status=$?
load_pid=""
collect_ambiguous

# Tasks possibly in flight at one kill: every channel's window full.
in_flight_bound=$(( (kills + 1) * 3 * 64 ))
status=0
python3 - "$work/load.json" "$ambiguous_total" "$in_flight_bound" "$load_status" \
  "$resolved_found" "$resolved_not_found" "$resolved_unknown" "$status_queries" "$kills" <<'EOF' || status=$?
import json, sys
report = json.load(open(sys.argv[1]))
ambiguous, bound, load_status = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
found, not_found, unknown = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
if sys.argv[8] == "yes":
    print(f"  ambiguous SENDING tasks after {sys.argv[9]} kills + the outage: asked {found + not_found + unknown}: "
          f"found {found} (recorded, not resent), not_found {not_found}, unknown {unknown} (resent)")
for check in report["invariants"]:
    print(f"  {'PASS' if check['pass'] else 'FAIL'} {check['name']}: {check['detail']}")
ok_ambiguous = ambiguous <= bound
print(f"  {'PASS' if ok_ambiguous else 'FAIL'} ambiguous_resends_bounded: {ambiguous} resends "
      f"<= {bound} tasks that could be in flight at the kills")
ingest = report["ingest"]
print(f"  accepted {ingest['accepted']} POSTs, {report['counts']['accepted_tasks']} tasks; "
      f"states {report['states']}")
sys.exit(0 if report["pass"] and ok_ambiguous and load_status == 0 else 1)
EOF
[ $status -eq 0 ] && say "PASS ($runs herald processes)" || say "FAIL (work dir kept: see --keep)"
exit $status
