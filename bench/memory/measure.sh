#!/usr/bin/env bash
# Starts `herald serve` on an existing database and reports its memory over time
# (docs/benchmarks.md, "Memory"):
#
#   bench/memory/measure.sh --db var/fill.db [--config bench/memory/retry-wait.json]
#                           [--minutes 10] [--every-s 10] [--listen 127.0.0.1:18480]
#                           [--kill-after] [--herald build/herald]
#
# Prints, from the moment herald was started: when /healthz first answered 200, when a new
# POST /v1/messages first got 202, when the start-up recovery pass finished (its
# `dispatcher.recovered` log line), and every --every-s seconds VmRSS, VmHWM, the retry queue
# depth and the provider calls so far. Herald runs at log level info with its log in
# <db>.herald.log. --kill-after ends it with SIGKILL (leaving the tasks unfinished for a
# restart measurement), else with SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/../.."

db=""
config=bench/memory/retry-wait.json
minutes=10
every_s=10
listen=127.0.0.1:18480
kill_after=0
herald=build/herald
while [ $# -gt 0 ]; do
  case "$1" in
  --db) db="$2"; shift 2 ;;
  --config) config="$2"; shift 2 ;;
  --minutes) minutes="$2"; shift 2 ;;
  --every-s) every_s="$2"; shift 2 ;;
  --listen) listen="$2"; shift 2 ;;
  --kill-after) kill_after=1; shift ;;
  --herald) herald="$2"; shift 2 ;;
  *) echo "measure.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$db" ] || { echo "measure.sh: --db PATH is required" >&2; exit 2; }

log="$db.herald.log"
cfg=$(mktemp)
trap 'rm -f "$cfg"' EXIT
sed 's/"log_level": *"[a-z]*"/"log_level": "info"/' "$config" >"$cfg"

ms() { echo $(( ($(date +%s%N) - start_ns) / 1000000 )); }
status_of() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
metric_sum() {
  curl -s --max-time 2 "http://$listen/metrics" |
    awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { printf "%d", s }'
}

start_ns=$(date +%s%N)
"$herald" serve --config "$cfg" --db "sqlite:$db" --listen "$listen" 2>"$log" &
pid=$!

until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$listen/healthz")" = 200 ]; do
  kill -0 "$pid" 2>/dev/null || { echo "measure.sh: herald exited; see $log" >&2; exit 1; }
  sleep 0.02
done
echo "healthz_ms $(ms)"
body='{"biz_type":"ORDER_SHIPPED","biz_id":"measure-'$start_ns'","user_id":"u-measure",
       "to":{"sms":"+8613800000000","wechat":"oMeasure","app":"device-measure"},
       "template":"order_shipped","params":{"order_no":"1"}}'
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Content-Type: application/json' \
             -d "$body" "http://$listen/v1/messages")" = 202 ]; do
  sleep 0.02
done
echo "post_202_ms $(ms)"

recovered=""
deadline=$(( $(date +%s) + minutes * 60 ))
echo "t_s rss_mib hwm_mib retry_queue_depth provider_calls"
while :; do
  if [ -z "$recovered" ] && grep -q '"dispatcher.recovered".*"channel":"\*"' "$log" 2>/dev/null; then
    recovered=$(ms)
    echo "recovered_ms $recovered ($(grep -o '"dispatcher.recovered".*"channel":"\*"' "$log" | head -1))"
  fi
  echo "$(( $(ms) / 1000 )) $(( $(status_of VmRSS) / 1024 )) $(( $(status_of VmHWM) / 1024 ))" \
       "$(metric_sum herald_retry_queue_depth) $(metric_sum herald_provider_calls_total)"
  [ "$(date +%s)" -lt "$deadline" ] || break
  sleep "$every_s"
done
if [ "$kill_after" = 1 ]; then
  kill -KILL "$pid"
else
  kill -TERM "$pid"
fi
wait "$pid" 2>/dev/null || true
