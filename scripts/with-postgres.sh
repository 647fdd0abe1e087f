#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL 15 cluster:
#   scripts/with-postgres.sh <command...>
# The command sees HERALD_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:PORT/herald_test.
# The cluster lives in a temporary folder and is stopped and removed when this script exits,
# also when the command fails; the command's exit code is this script's exit code.
# If HERALD_TEST_POSTGRES_URL is already set, the command just runs against that server.
# Tests run the cluster with fsync off (it is thrown away); HERALD_PG_DURABLE=1 keeps fsync and
# synchronous_commit on, as benchmarks need (scripts/bench.sh).
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: $0 <command...>" >&2
  exit 2
fi

if [[ -n "${HERALD_TEST_POSTGRES_URL:-}" ]]; then
  exec "$@"
fi

pg_bin="${HERALD_PG_BIN:-/usr/lib/postgresql/15/bin}"
for tool in initdb pg_ctl psql; do
  if [[ ! -x "$pg_bin/$tool" && ! -x "$(command -v "$tool" || true)" ]]; then
    echo "$0: $pg_bin/$tool not found (install the postgresql package)" >&2
    exit 2
  fi
done
psql_bin="$pg_bin/psql"
[[ -x "$psql_bin" ]] || psql_bin="$(command -v psql)"

# The server refuses to run as root: as root, run the cluster as the postgres user.
if [[ $(id -u) -eq 0 ]]; then
  as_owner=(runuser -u postgres --)
  owner=postgres
else
  as_owner=()
  owner=$(id -un)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-pg.XXXXXX")
data="$work/data"
log="$work/server.log"
started=0

cleanup() {
  local rc=$?
  if [[ $started -eq 1 ]]; then
    "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ $(id -u) -eq 0 ]]; then
  chown "$owner" "$work"
fi

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

"${as_owner[@]}" "$pg_bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale \
  >"$work/initdb.log" 2>&1 || {
  cat "$work/initdb.log" >&2
  exit 1
}

# Another cluster (or a parallel run of this script) may take the port between the check and
# the start: try the next one when the server does not come up.
durability="-c fsync=off"
[[ "${HERALD_PG_DURABLE:-0}" == 1 ]] && durability="-c fsync=on -c synchronous_commit=on"
port=55432
for _ in $(seq 1 50); do
  if port_free "$port"; then
    if "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$log" -w -t 30 \
      -o "-p $port -k $work -c listen_addresses=127.0.0.1 $durability -c max_connections=200 ${HERALD_PG_OPTIONS:-}" \
      start >/dev/null 2>&1; then
      started=1
      break
    fi
  fi
  port=$((port + 1))
done
if [[ $started -ne 1 ]]; then
  echo "$0: could not start PostgreSQL; server log:" >&2
  cat "$log" >&2 2>/dev/null || true
  exit 1
fi

"$psql_bin" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
  -c "CREATE DATABASE herald_test" >/dev/null

export HERALD_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$port/herald_test"
echo "with-postgres: PostgreSQL 15 at $HERALD_TEST_POSTGRES_URL" >&2

set +e
"$@"
rc=$?
set -e
exit "$rc"
