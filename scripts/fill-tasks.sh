#!/usr/bin/env bash
# Writes a large backlog of unfinished tasks straight into a SQLite database, for measuring
# memory and recovery (docs/benchmarks.md, "Memory"): far faster than posting them.
#
#   scripts/fill-tasks.sh --db var/fill.db --messages 333334 [--state retry_wait|pending]
#                         [--due-in-s 3600] [--herald build/herald]
#
# Each message is an ORDER_SHIPPED event for its own user on sms, wechat and app (3 tasks), in
# the shape `herald serve` stores them: a message row with title, body, params and recipients,
# and one task row per channel. `--state retry_wait` (default) makes every task look like one
# that failed once retryably (attempts 1, one attempt row, next_attempt_at --due-in-s from now);
# `--state pending` makes them freshly accepted. Ids look like herald's (msg_/tsk_/hrq_ + hex)
# but are not keyed by the installation secret: the rows are for measuring, not for resubmitting.
# The schema is created by `herald migrate` first; the database must not exist yet.
set -euo pipefail
cd "$(dirname "$0")/.."

db=""
messages=100000
state=retry_wait
due_in_s=3600
herald=build/herald
while [ $# -gt 0 ]; do
  case "$1" in
  --db) db="$2"; shift 2 ;;
  --messages) messages="$2"; shift 2 ;;
  --state) state="$2"; shift 2 ;;
  --due-in-s) due_in_s="$2"; shift 2 ;;
  --herald) herald="$2"; shift 2 ;;
  *) echo "fill-tasks.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$db" ] || { echo "fill-tasks.sh: --db PATH is required" >&2; exit 2; }
[ ! -e "$db" ] || { echo "fill-tasks.sh: $db exists already" >&2; exit 2; }
case "$state" in
retry_wait) status=RETRY_WAIT attempts=1 ;;
pending) status=PENDING attempts=0 ;;
*) echo "fill-tasks.sh: --state must be retry_wait or pending" >&2; exit 2 ;;
esac
command -v sqlite3 >/dev/null || { echo "fill-tasks.sh: needs the sqlite3 command" >&2; exit 2; }

mkdir -p "$(dirname "$db")"
"$herald" migrate --db "sqlite:$db" >/dev/null

now_us=$(($(date +%s) * 1000000))
due_us=$((now_us + due_in_s * 1000000))
if [ "$state" = pending ]; then next=NULL; else next=$due_us; fi

# i numbers the messages; (i * 2654435761) mod 2^32 scatters the ids like a MAC would, so
# task-id order (recovery's paging order) is not insertion order.
sqlite3 "$db" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
BEGIN;
CREATE TEMP TABLE n AS
  WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $messages)
  SELECT i, printf('%08x%016x', (i * 2654435761) % 4294967296, i) AS h FROM c;
CREATE TEMP TABLE ch (name TEXT, recipient_prefix TEXT, k INTEGER);
INSERT INTO ch VALUES ('sms', '+86138', 1), ('wechat', 'oAbC', 2), ('app', 'device-token-', 3);
INSERT INTO messages (id, tenant, biz_type, biz_id, user_id, template_name, params_json,
                      recipients_json, title, body, category, priority, send_at, expire_at,
                      trace_id, created_at)
  SELECT 'msg_' || h, 'default', 'ORDER_SHIPPED', 'order-' || i, 'u-' || i, 'order_shipped',
         '{"order_no":"' || i || '"}',
         '{"app":"device-token-' || i || '","sms":"+86138' || printf('%08d', i) ||
           '","wechat":"oAbC' || i || '"}',
         'Your order has shipped', 'Order ' || i || ' is on its way.', 'transactional', 'normal',
         NULL, NULL, h || printf('%08x', i), $now_us
  FROM n;
INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, user_id, channel, recipient,
                   provider_request_id, status, priority, attempts, next_attempt_at, last_error,
                   created_at, updated_at)
  SELECT 'tsk_' || printf('%02x', ch.k) || substr(n.h, 3), 'msg_' || n.h, 'default',
         'ORDER_SHIPPED', 'order-' || n.i, 'u-' || n.i, ch.name,
         CASE ch.name WHEN 'sms' THEN '+86138' || printf('%08d', n.i)
                      ELSE ch.recipient_prefix || n.i END,
         'hrq_' || printf('%02x', ch.k) || substr(n.h, 3) || printf('%08x', n.i), '$status',
         'normal', $attempts, $next,
         CASE $attempts WHEN 0 THEN NULL ELSE 'simulated retryable failure' END,
         $now_us, $now_us
  FROM n CROSS JOIN ch;
INSERT INTO attempts (task_id, attempt_no, provider_request_id, outcome, detail, started_at,
                      finished_at)
  SELECT id, 1, provider_request_id, 'retryable', 'simulated retryable failure', $now_us, $now_us
  FROM tasks WHERE $attempts > 0;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
echo "fill-tasks.sh: $db holds $((messages * 3)) $status tasks ($messages messages)"
