#!/usr/bin/env bash
# Runs scripts/fuzz-cluster-port.py against one herald node whose cluster port is TLS-wrapped
# (docs/security.md, "Sanitizer build and fuzzing the cluster port"):
#   scripts/fuzz-cluster-port.sh --herald BINARY [--seconds N] [--seed S]
# The node uses a database of its own on HERALD_TEST_POSTGRES_URL's server (scripts/
# with-postgres.sh provides one; without it the run is skipped, exit 77). Exits 0 when the
# node kept answering and its stderr holds no sanitizer report (build it with
# -DHERALD_SANITIZE=ON for those to exist), 1 otherwise; the node's log is printed on failure.
set -euo pipefail

herald=""
seconds=60
seed=$(date +%s)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --herald) herald=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "usage: $0 --herald BINARY [--seconds N] [--seed S]" >&2; exit 2 ;;
  esac
done
[[ -x "$herald" ]] || { echo "$0: --herald BINARY is required" >&2; exit 2; }
if [[ -z "${HERALD_TEST_POSTGRES_URL:-}" ]]; then
  echo "fuzz: no PostgreSQL (run under scripts/with-postgres.sh or set HERALD_TEST_POSTGRES_URL)"
  exit 77
fi

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-fuzz.XXXXXX")
database="herald_fuzz_$$"
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  psql "$HERALD_TEST_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

"$here/cluster-certs.sh" "$work/certs" n1 fuzz >/dev/null
psql "$HERALD_TEST_POSTGRES_URL" -qc "CREATE DATABASE $database" >/dev/null
http_port=$(free_port)
cluster_port=$(free_port)
cat >"$work/herald.json" <<JSON
{"channels": [{"name": "sms", "type": "simulated"}],
 "cluster": {"node_id": "n1", "listen": "127.0.0.1:$cluster_port", "peers": ["127.0.0.1:$(free_port)"],
             "tls": {"certificate": "$work/certs/n1.pem", "key": "$work/certs/n1.key",
                     "ca_file": "$work/certs/ca.pem"}}}
JSON
# CAF 0.17.6's own UBSan report (tests/sanitizers/ubsan.supp) is not a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS="suppressions=$here/../tests/sanitizers/ubsan.supp:${UBSAN_OPTIONS:-print_stacktrace=1}"
"$herald" serve --listen "127.0.0.1:$http_port" --db "${HERALD_TEST_POSTGRES_URL%/*}/$database" \
  --config "$work/herald.json" >"$work/herald.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$http_port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
status=0
python3 "$here/fuzz-cluster-port.py" --port "$cluster_port" --http-port "$http_port" \
  --certs "$work/certs" --pid "$pid" --seconds "$seconds" --seed "$seed" || status=1
peak=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "?")
kill "$pid" && wait "$pid" || true
pid=""
reports=$(grep -c -E 'AddressSanitizer|runtime error:|LeakSanitizer' "$work/herald.log" || true)
echo "fuzz: RSS ${rss_before} KiB before, ${peak} KiB at most; sanitizer reports: $reports"
if [[ $status -ne 0 || $reports -ne 0 ]]; then
  grep -E -A40 "AddressSanitizer|runtime error:" "$work/herald.log" | head -120 || tail -60 "$work/herald.log"
  exit 1
fi
