#!/usr/bin/env bash
# Fault drill: proves design.md §4 while herald is killed and a provider is unreachable.
#
#   scripts/fault-drill.sh [--db sqlite|postgresql] [--events N] [--kills K] [--outage-s S]
#                          [--fail-rate F] [--permanent-rate F] [--duplicate-ratio R]
#                          [--store-fail-rate F] [--status-queries] [--cluster N]
#                          [--timeout-rate F] [--unanswered-questions] [--herald PATH] [--keep]
#
# Runs `herald sim-provider --dedupe-by-id` (failing at the given rates), `herald serve` with
# three webhook channels (sms -> app fallback) and `herald load`; meanwhile SIGKILLs herald
# K times at random moments and restarts it, then restarts it once with `wechat` pointed at a
# closed port for S seconds (retries, circuit opens, new tasks fail over) and once more with
# the right address (--outage-s 0: no outage). With --store-fail-rate, herald's own database
# writes fail at that rate (config `store.faults`; half of them after committing, as a lost
# answer). At the end `herald load` checks, from herald's API and the provider's record: every
# accepted task terminal, none lost, at most one effective delivery per provider request id,
# accounting adds up. The drill itself checks that ambiguous resends (summed over every herald
# process) stay within what could have been in flight at the kills, plus the tasks herald
# logged as marked SENDING too late to be called (channel.lease_expired_before_call: never
# sent, but taken again as SENDING, so counted ambiguous).
# With --status-queries the provider does NOT deduplicate (no --dedupe-by-id) and every channel
# has a status_url (the provider's GET /status/{id}; the wechat outage closes only its send
# URL): a task found SENDING after a kill is resent only when the provider never got it, so
# "at most one effective delivery per request id" must hold without the provider's help. The
# drill then also reports how the ambiguous tasks were resolved (found/not_found/unknown).
# With --timeout-rate F that share of the provider's calls is processed but never answered (a
# timed-out call herald asks about). With --unanswered-questions (implies --status-queries) the
# provider answers status queries only after the channels' timeout_ms, so no question gets an
# answer: each is asked again after a backoff (status_questions: 3 questions, 300 ms, 600 ms
# apart) and then the task ends UNCONFIRMED, never resent. The drill checks that questions were
# asked again (herald_status_questions_unanswered_total{then="asked_again"} > 0), that some tasks
# ended UNCONFIRMED that way, and that no ambiguous task was resent at all.
# With --cluster N (PostgreSQL only) the drill runs N herald nodes on loopback sharing the one
# database, each with a `cluster` block (docs/cluster.md) naming the others as peers
# (heartbeat 200 ms, timeout 1000 ms; channel leases 3000 ms) and talking over mutual TLS with
# certificates of scripts/cluster-certs.sh; `herald load` spreads its
# requests over all N. Each kill SIGKILLs a random node; the drill then measures how long until
# every surviving node's GET /v1/cluster shows exactly the survivors as members owning all 256
# partitions (it must be within timeout_ms + lease_ms + 2 s), restarts the node with the same
# config and measures how long until it answers and then until every node shows all N again
# (within 30 s). The outage restarts every node in turn. It also reports the member losses the
# nodes logged (a "silent" one of a live node means heartbeats came too late).
# PostgreSQL: uses HERALD_TEST_POSTGRES_URL's server (scripts/with-postgres.sh provides one)
# and a fresh database on it. Exit 0 when every check passes.
set -euo pipefail

db=sqlite events=2000 kills=5 outage_s=4 fail_rate=0.2 permanent_rate=0.02 duplicate_ratio=0.3
store_fail_rate=0 status_queries=no cluster=0 timeout_rate=0 unanswered=no
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
    --timeout-rate) timeout_rate=$2; shift 2 ;;
    --unanswered-questions) unanswered=yes status_queries=yes; shift ;;
    --cluster) cluster=$2; shift 2 ;;
    --herald) herald=$2; shift 2 ;;
    --keep) keep=yes; shift ;;
    *) echo "fault-drill: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$herald" ] || { echo "fault-drill: no herald binary at $herald (build first)" >&2; exit 2; }
if [ "$cluster" != 0 ]; then
  case "$cluster" in [2-9]) ;; *) echo "fault-drill: --cluster wants 2 to 9 nodes" >&2; exit 2 ;; esac
  [ "$db" = postgresql ] || { echo "fault-drill: --cluster needs --db postgresql" >&2; exit 2; }
fi
nodes=$(( cluster > 0 ? cluster : 1 ))
in_cluster="" # "yes" with --cluster
[ "$cluster" = 0 ] || in_cluster=yes

work=$(mktemp -d /tmp/herald-drill.XXXXXX)
herald_pids=() sim_pid="" load_pid=""
cleanup() {
  { # (bash may report a killed job while reaping it: not news here)
    for pid in $load_pid "${herald_pids[@]}" $sim_pid; do kill -9 "$pid" || true; done
    wait || true
  } 2>/dev/null
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
status_latency_ms=0
[ "$unanswered" = yes ] && status_latency_ms=1500 # the channels' timeout_ms is 1000
"$herald" sim-provider --listen 127.0.0.1:0 --fail-rate "$fail_rate" \
  --timeout-rate "$timeout_rate" --status-latency-ms "$status_latency_ms" \
  --permanent-rate "$permanent_rate" $dedupe --hold-ms 3000 >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!
for _ in $(seq 1 500); do
  provider_port=$(grep -o '"port":[0-9]*' "$work/sim.out" 2>/dev/null | head -n1 | cut -d: -f2 || true)
  [ -n "$provider_port" ] && break
  sleep 0.01
done
[ -n "${provider_port:-}" ] || { say "sim-provider did not start"; cat "$work/sim.log" >&2; exit 1; }
# Node i (1..nodes) answers HTTP on herald_ports[i] and, in a cluster, publishes its cluster
# actor on cluster_ports[i] as node "n<i>".
herald_ports=() cluster_ports=()
for i in $(seq 1 "$nodes"); do
  herald_ports[i]=$(free_port)
  cluster_ports[i]=$(free_port)
done
herald_port=${herald_ports[1]}
closed_port=$(free_port) # nothing listens there
lease_ms=2000 cluster_heartbeat_ms=200 cluster_timeout_ms=1000
[ "$cluster" = 0 ] || lease_ms=3000 # a node taking over a killed one's partitions works harder

# The nodes talk over mutual TLS, as a cluster off loopback must (docs/cluster.md).
if [ "$cluster" != 0 ]; then
  "$(dirname "$0")/cluster-certs.sh" "$work/certs" $(seq -f 'n%g' 1 "$nodes") >/dev/null
fi

# The `cluster` block of node $1 (nothing without --cluster).
cluster_block() {
  [ "$cluster" = 0 ] && return 0
  local peers="" j certs="$work/certs"
  for j in $(seq 1 "$nodes"); do
    [ "$j" = "$1" ] && continue
    peers="$peers${peers:+, }\"127.0.0.1:${cluster_ports[j]}\""
  done
  printf '"cluster": {"node_id": "n%s", "listen": "127.0.0.1:%s", "peers": [%s], "heartbeat_ms": %s, "timeout_ms": %s, "tls": {"certificate": "%s/n%s.pem", "key": "%s/n%s.key", "ca_file": "%s/ca.pem"}},' \
    "$1" "${cluster_ports[$1]}" "$peers" "$cluster_heartbeat_ms" "$cluster_timeout_ms" \
    "$certs" "$1" "$certs" "$1" "$certs"
}

# node_file KIND NODE: the config (KIND herald or outage) or log (KIND herald.log) of a node;
# one herald keeps the names it always had.
node_file() {
  if [ "$cluster" = 0 ]; then echo "$work/$1"; else echo "$work/${1%%.*}-n$2${1#"${1%%.*}"}"; fi
}

# write_config FILE WECHAT_PORT NODE
write_config() {
  local secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
  local common='"timeout_ms": 1000, "rate_per_sec": 4000, "burst": 400, "window": 64,
      "retry": {"schedule_ms": [200, 400, 800, 1600], "max_attempts": 10},
      "circuit": {"failure_threshold": 20, "cool_down_ms": 2000}'
  common="$common, \"lease_ms\": $lease_ms"
  if [ "$status_queries" = yes ]; then
    common="$common, \"status_url\": \"http://127.0.0.1:$provider_port/status\""
  fi
  if [ "$unanswered" = yes ]; then
    common="$common, \"status_questions\": {\"schedule_ms\": [300, 600], \"max\": 3}"
  fi
  cat >"$1" <<EOF
{
  "listen": "127.0.0.1:${herald_ports[$3]}",
  "database": "$db_url",
  $(cluster_block "$3")
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
for i in $(seq 1 "$nodes"); do
  write_config "$(node_file herald.json "$i")" "$provider_port" "$i"
  write_config "$(node_file outage.json "$i")" "$closed_port" "$i"
done

runs=0
ambiguous_total=0 resolved_found=0 resolved_not_found=0 resolved_unknown=0
asked_again_total=0 questions_unconfirmed_total=0
launch_herald() { # NODE CONFIG-KIND (herald or outage)
  local config log
  config=$(node_file "$2.json" "$1")
  log=$(node_file herald.log "$1")
  runs=$((runs + 1))
  "$herald" serve --config "$config" >>"$log" 2>&1 &
  herald_pids[$1]=$!
}
await_herald() { # NODE: until it answers /healthz
  for _ in $(seq 1 1000); do
    curl -sf "http://127.0.0.1:${herald_ports[$1]}/healthz" >/dev/null 2>&1 && return 0
    kill -0 "${herald_pids[$1]}" 2>/dev/null || break
    sleep 0.01
  done
  say "herald${in_cluster:+ node n$1} did not come up"
  tail -n 20 "$(node_file herald.log "$1")" >&2
  exit 1
}
start_herald() { # NODE CONFIG-KIND
  launch_herald "$@"
  await_herald "$1"
}
# Adds node $1's ambiguous resends and resolutions (its metrics die with it) to the running
# totals.
collect_ambiguous() {
  local text n
  text=$(curl -sf "http://127.0.0.1:${herald_ports[$1]}/metrics" 2>/dev/null) || text=""
  sum() { printf '%s\n' "$text" | awk -v m="$1" 'index($0, m) == 1 {s += $2} END {print s + 0}'; }
  n=$(sum 'herald_ambiguous_resends_total')
  ambiguous_total=$((ambiguous_total + n))
  for outcome in found not_found unknown; do
    n=$(printf '%s\n' "$text" | awk -v o="outcome=\"$outcome\"" \
      '/^herald_ambiguous_resolved_total/ && index($0, o) {s += $2} END {print s + 0}')
    eval "resolved_$outcome=\$((resolved_$outcome + n))"
  done
  n=$(printf '%s\n' "$text" | awk '/^herald_status_questions_unanswered_total/ && /then="asked_again"/ {s += $2} END {print s + 0}')
  asked_again_total=$((asked_again_total + n))
  n=$(printf '%s\n' "$text" | awk '/^herald_status_questions_unanswered_total/ && /then="unconfirmed"/ {s += $2} END {print s + 0}')
  questions_unconfirmed_total=$((questions_unconfirmed_total + n))
}
stop_herald() { # NODE SIGNAL
  collect_ambiguous "$1"
  kill "-$2" "${herald_pids[$1]}" 2>/dev/null || true
  reap_herald "$1"
}
reap_herald() { # NODE
  wait "${herald_pids[$1]}" 2>/dev/null || true
  herald_pids[$1]=""
}

# wait_for_members START BOUND_MS NODE...: waits until the GET /v1/cluster of every NODE shows
# exactly those NODEs as members, owning all 256 partitions between them, each view the same,
# and prints the milliseconds it took. START says from when, so that the poller's own start is
# never in a figure:
#   kill:PID              SIGKILLs PID (once the poller runs) and counts from that;
#   up:SECONDS:NODE...    the NODEs were launched at SECONDS (since the epoch): waits until each
#                         answers /healthz, prints the milliseconds from SECONDS until then
#                         first, and counts from then.
# Fails (exit 1, the last views on stderr) when it took longer than BOUND_MS.
wait_for_members() {
  local start=$1 bound=$2
  shift 2
  local ports=() ids=() n
  if [ "${start#up:}" != "$start" ]; then # up:SECONDS:NODE... -> up:SECONDS:PORT...
    local launched=${start#up:} up=()
    for n in ${launched#*:}; do up+=("${herald_ports[n]}"); done
    start="up:${launched%%:*}:${up[*]}"
  fi
  for n in "$@"; do ports+=("${herald_ports[n]}"); ids+=("n$n"); done
  python3 - "$start" "$bound" "$(IFS=,; echo "${ids[*]}")" "${ports[@]}" <<'EOF'
import json, os, signal, sys, time, urllib.request
start, bound_ms, expected = sys.argv[1], float(sys.argv[2]), set(sys.argv[3].split(","))
ports = sys.argv[4:]
if start.startswith("kill:"):
    os.kill(int(start[5:]), signal.SIGKILL)
    since = time.time()
else:
    launched, up = start[3:].split(":", 1)
    for port in up.split():
        while time.time() - float(launched) < 30:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                    break
            except Exception:
                time.sleep(0.01)
    since = time.time()
    print(f"{(since - float(launched)) * 1000:.0f}", end=" ")
views = {}
while True:
    agreed = True
    for port in ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/cluster", timeout=5) as r:
                view = json.load(r)
            owned = {m["node_id"]: m["partitions_owned"] for m in view["members"]}
        except Exception as e:
            view, owned = str(e), None
        views[port] = view
        agreed = agreed and owned is not None and set(owned) == expected and \
            view["partitions"] == 256 and sum(owned.values()) == 256
        if agreed and port != ports[0]:
            agreed = owned == {m["node_id"]: m["partitions_owned"] for m in views[ports[0]]["members"]}
    elapsed_ms = (time.time() - since) * 1000
    if agreed:
        print(f"{elapsed_ms:.0f}")
        sys.exit(0)
    if elapsed_ms > bound_ms:
        print(f"{elapsed_ms:.0f}")
        for port, view in views.items():
            print(f"fault-drill: :{port} GET /v1/cluster: {json.dumps(view)}", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.02)
EOF
}

# The kills' membership figures: one line a kill ("n2 TAKEOVER_MS UP_MS REJOIN_MS"), checked at
# the end.
takeover_bound_ms=$((cluster_timeout_ms + lease_ms + 2000)) rejoin_bound_ms=30000
membership_failures=0
: >"$work/membership.txt"

targets=""
launched=$(date +%s.%N)
for i in $(seq 1 "$nodes"); do
  launch_herald "$i" herald # all at once: peers may start in any order
  targets="$targets${targets:+,}127.0.0.1:${herald_ports[i]}"
done
all_nodes=$(seq -s " " 1 "$nodes")
if [ "$cluster" != 0 ]; then
  # shellcheck disable=SC2086 # one word a node
  formed=$(wait_for_members "up:$launched:$all_nodes" "$rejoin_bound_ms" $all_nodes) || {
    say "the $nodes nodes did not form one cluster within $rejoin_bound_ms ms"; exit 1; }
fi
for i in $all_nodes; do await_herald "$i"; done
if [ "$cluster" = 0 ]; then
  say "herald on :$herald_port ($db, store write failures $store_fail_rate), provider on" \
    ":$provider_port, work dir $work"
else
  say "$nodes herald nodes on $targets ($db, store write failures $store_fail_rate): all" \
    "answering after ${formed% *} ms, one cluster ${formed#* } ms later; provider on" \
    ":$provider_port, work dir $work"
fi

"$herald" load --target "$targets" --provider "127.0.0.1:$provider_port" \
  --events "$events" --channels sms,wechat,app --duplicate-ratio "$duplicate_ratio" \
  --late-duplicates 0.05 --concurrency 16 --drain-timeout-s 300 --json \
  >"$work/load.json" 2>"$work/load.log" &
load_pid=$!

# kill_node NODE: SIGKILLs it and restarts it with its config; in a cluster first measures the
# survivors' takeover of its partitions, afterwards its rejoin.
kill_node() {
  local node=$1 survivors=() n takeover_ms rejoined restarted_at
  if [ "$cluster" = 0 ]; then
    stop_herald "$node" 9
    start_herald "$node" herald
    return 0
  fi
  for n in $(seq 1 "$nodes"); do [ "$n" = "$node" ] || survivors+=("$n"); done
  collect_ambiguous "$node"
  if ! takeover_ms=$(wait_for_members "kill:${herald_pids[node]}" "$takeover_bound_ms" \
    "${survivors[@]}"); then
    membership_failures=$((membership_failures + 1))
  fi
  reap_herald "$node"
  restarted_at=$(date +%s.%N)
  launch_herald "$node" herald
  # shellcheck disable=SC2046 # one word a node
  if ! rejoined=$(wait_for_members "up:$restarted_at:$node" "$rejoin_bound_ms" $(seq 1 "$nodes"))
  then
    membership_failures=$((membership_failures + 1))
  fi
  await_herald "$node"
  say "n$node killed: survivors owned all 256 partitions after $takeover_ms ms; restarted," \
    "answering after ${rejoined% *} ms, all $nodes members again ${rejoined#* } ms later"
  echo "n$node $takeover_ms $rejoined" >>"$work/membership.txt"
}

for k in $(seq 1 "$kills"); do
  sleep "$(awk -v r=$RANDOM 'BEGIN {printf "%.2f", 0.5 + (r % 150) / 100}')"
  kill -0 "$load_pid" 2>/dev/null || break
  node=$(( RANDOM % nodes + 1 ))
  say "kill -9 #$k${in_cluster:+ (n$node)}"
  kill_node "$node"
done

if [ "$outage_s" != 0 ]; then
  say "wechat unreachable for ${outage_s}s"
  for i in $(seq 1 "$nodes"); do
    stop_herald "$i" 9
    start_herald "$i" outage
  done
  sleep "$outage_s"
  for i in $(seq 1 "$nodes"); do
    stop_herald "$i" TERM
    start_herald "$i" herald
  done
fi

load_status=0
wait "$load_pid" || load_status=$?
load_pid=""
for i in $(seq 1 "$nodes"); do collect_ambiguous "$i"; done

# Member losses the nodes logged: "connection closed" (a killed node, seen by each other node)
# or "silent" (a node not heard for timeout_ms: were it alive, its partitions moved for nothing).
logs=()
for i in $all_nodes; do logs+=("$(node_file herald.log "$i")"); done
logged() { cat "${logs[@]}" | grep "\"event\":\"$1\"" | grep -c "$2" || true; } # EVENT TEXT
member_lost_closed=$(logged cluster.member_lost '"connection closed"')
member_lost_silent=$(logged cluster.member_lost '"silent"')

# Tasks possibly in flight at one kill: every channel's window full (on the one node killed);
# a task holds its place in the window until its result is committed.
# A task whose SENDING mark committed after its lease ran out was not called; whoever takes it
# next finds it SENDING and counts an ambiguous resend too.
outage_kills=$(( outage_s == 0 ? 0 : nodes ))
in_flight_at_kills=$(( (kills + outage_kills) * 3 * 64 ))
lease_expired_before_call=$(logged channel.lease_expired_before_call task_id)
in_flight_bound=$(( in_flight_at_kills + lease_expired_before_call ))
status=0
python3 - "$work/load.json" "$ambiguous_total" "$in_flight_bound" "$load_status" \
  "$resolved_found" "$resolved_not_found" "$resolved_unknown" "$status_queries" "$kills" \
  "$work/membership.txt" "$membership_failures" "$takeover_bound_ms" "$rejoin_bound_ms" \
  "$cluster" "$member_lost_closed" "$member_lost_silent" "$in_flight_at_kills" \
  "$lease_expired_before_call" "$unanswered" "$asked_again_total" \
  "$questions_unconfirmed_total" <<'EOF' || status=$?
import json, sys
report = json.load(open(sys.argv[1]))
ok_membership = True
if sys.argv[14] != "0":
    kills = [line.split() for line in open(sys.argv[10]) if line.strip()]
    figures = lambda column: "/".join(k[column] for k in kills) or "-"
    ok_membership = int(sys.argv[11]) == 0
    print(f"  {'PASS' if ok_membership else 'FAIL'} partitions_taken_over: {len(kills)} kills of "
          f"{', '.join(k[0] for k in kills) or 'no node'}; survivors owned all 256 partitions "
          f"{figures(1)} ms after the kill (bound {sys.argv[12]} ms); restarted, the node answered "
          f"after {figures(2)} ms and all were members again {figures(3)} ms later (bound "
          f"{sys.argv[13]} ms)")
    print(f"  member losses logged: {sys.argv[15]} on a closed connection (a kill, seen by each "
          f"other node), {sys.argv[16]} silent (a node not heard for timeout_ms: spurious when it "
          f"was alive)")
    if "targets" in report:
        print("  load per node: " + ", ".join(
            f"{t['target']} {t['exchanges']} exchanges ({t['connection_errors']} unanswered)"
            for t in report["targets"]))
ambiguous, bound, load_status = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
found, not_found, unknown = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
if sys.argv[8] == "yes":
    print(f"  ambiguous SENDING tasks after {sys.argv[9]} kills + the outage: asked {found + not_found + unknown}: "
          f"found {found} (recorded, not resent), not_found {not_found} (resent), unknown {unknown} "
          f"(asked again, or UNCONFIRMED once the questions ran out; never resent)")
for check in report["invariants"]:
    print(f"  {'PASS' if check['pass'] else 'FAIL'} {check['name']}: {check['detail']}")
ok_ambiguous = ambiguous <= bound
print(f"  {'PASS' if ok_ambiguous else 'FAIL'} ambiguous_resends_bounded: {ambiguous} resends "
      f"<= {bound}: {sys.argv[17]} tasks that could be in flight at the kills + {sys.argv[18]} "
      f"marked SENDING whose lease ran out before their call")
if sys.argv[19] == "yes":
    asked_again, gave_up = int(sys.argv[20]), int(sys.argv[21])
    unconfirmed = report["states"].get("UNCONFIRMED", 0)
    checks = [
        ("questions_asked_again", asked_again > 0,
         f"{asked_again} unanswered status questions asked again after a backoff"),
        ("exhausted_questions_unconfirmed", gave_up > 0 and unconfirmed > 0,
         f"{gave_up} tasks' questions used up, {unconfirmed} tasks UNCONFIRMED"),
        ("unanswered_never_resent", ambiguous == 0,
         f"{ambiguous} ambiguous resends (none may go: no question was answered 'not found')"),
    ]
    for name, passed, detail in checks:
        print(f"  {'PASS' if passed else 'FAIL'} {name}: {detail}")
        ok_ambiguous = ok_ambiguous and passed
ingest = report["ingest"]
print(f"  accepted {ingest['accepted']} POSTs, {report['counts']['accepted_tasks']} tasks; "
      f"states {report['states']}")
sys.exit(0 if report["pass"] and ok_ambiguous and ok_membership and load_status == 0 else 1)
EOF
if [ $status -eq 0 ]; then
  say "PASS ($runs herald processes${in_cluster:+, $nodes nodes})"
else
  say "FAIL (work dir kept: see --keep)"
fi
exit $status
